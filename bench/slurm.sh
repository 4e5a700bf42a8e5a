#!/bin/sh
# Slurm on the single-node test cluster (tests/fixtures/slurm-cluster): how long the
# cluster takes to start and to run its first job, and the wall time of an
# N-task array (submit to the last task gone from squeue) of bare bwrap
# no-op lines through `sbatch --wrap`, against the same plan through
# `trialbox batch PLAN --slurm` (submit, squeue polling every second, gathering).
#
#   bench/slurm.sh     (SLURM_TASKS=16, SLURM_RUNS=3; root; starts the cluster
#                       unless it runs, and stops it again if it started it)
#
# Needs root and slurmctld slurmd slurm-client munge (tests/fixtures/slurm-cluster).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || die "needs root (it starts a Slurm cluster)"
need sbatch slurm-client
need slurmctld slurmctld
need bwrap bubblewrap
tasks=${SLURM_TASKS:-16}
runs=${SLURM_RUNS:-3}
cluster="$bench_root/tests/fixtures/slurm-cluster"
eval "$("$cluster" env)"
export SLURM_CONF
scratch
chmod 0755 "$W"

# ms since the epoch
now() { date +%s%3N; }
# wait_gone ID: until squeue no longer lists the job (polled every 0.1 s, so
# the figure is the array's, not a poll interval's).
wait_gone() {
        while [ -n "$(squeue -h -r -j "$1" -o %i 2>/dev/null)" ]; do sleep 0.1; done
}
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }

started=0
if "$cluster" status >/dev/null 2>&1; then
        say "using the running cluster ($SLURM_CONF); not timing its start"
else
        # Start to idle, then start to the first job's end.
        say "starting the cluster"
        t0=$(now)
        "$cluster" start 2>/dev/null
        t1=$(now)
        id=$(sbatch --parsable --chdir="$W" --output=/dev/null --wrap true)
        wait_gone "$id"
        t2=$(now)
        started=1
        trap '"$cluster" stop >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
        row slurm "cluster start (munged, slurmctld, slurmd) until the node is idle" "$((t1 - t0)) ms" "" ""
        row slurm "cluster start until its first job (\`sbatch --wrap true\`) has ended" "$((t2 - t0)) ms" "about 3 s" \
                "$(verdict_le "$((t2 - t0))" 3500)"
fi

# The bare line: the --dry-run bwrap command of a shell Trial running `true`
# when trialbox is built, else a minimal sandbox of the same shape.
mkdir -p "$W/repo" "$W/logs"
if [ -x "$TB" ] && [ -e "$PLUGINS/shell.so" ]; then
        export TRIALBOX_PLUGIN_PATH="$PLUGINS"
        bare_line "$W/bare-line.sh" -q --harness shell --repo "$W/repo" --output-dir "$W/bare" -- -c true
        mkdir -p "$W/bare/home"
        bare="the \`--dry-run\` line of a shell Trial running \`true\`, $bare_line_words"
else
        echo "exec bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-pid --die-with-parent true" >"$W/bare-line.sh"
        bare="\`bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-pid true\` (trialbox not built)"
fi
chmod -R a+rX "$W"

say "$tasks-task arrays of bare bwrap lines, $runs runs"
: >"$W/bare.ms"
i=0
while [ "$i" -lt "$runs" ]; do
        t0=$(now)
        id=$(sbatch --parsable --array=0-$((tasks - 1)) --chdir="$W" --output="$W/logs/%A_%a.out" \
                --wrap "sh '$W/bare-line.sh'")
        wait_gone "$id"
        echo $(($(now) - t0)) >>"$W/bare.ms"
        i=$((i + 1))
done
bad=$(grep -l . "$W"/logs/*.out 2>/dev/null | wc -l)
bare_ms=$(median <"$W/bare.ms")
row slurm "$tasks-task array of bare bwrap lines (\`sbatch --wrap\`), submit to gone, median" \
        "$bare_ms ms (runs: $(tr '\n' ' ' <"$W/bare.ms"| sed 's/ $//'))" "" ""
first=$(grep -l . "$W"/logs/*.out 2>/dev/null | head -n 1)
[ "$bad" = 0 ] || note "slurm: $bad bare tasks printed something, e.g.: $(head -c 200 "$first" | tr '\n|' '  ')"

# The same through trialbox: one plan line per task, `trialbox batch PLAN --slurm`.
if [ -x "$TB" ] && "$TB" batch --help 2>&1 | grep -q -- '--slurm'; then
        say "$tasks-task arrays through trialbox batch --slurm, $runs runs"
        : >"$W/tb.ms"
        i=0
        while [ "$i" -lt "$runs" ]; do
                plan="$W/plan$i/plan.jsonl"
                mkdir -p "$W/plan$i"
                j=0
                while [ "$j" -lt "$tasks" ]; do
                        printf '{"id":"t%d",%s"harness":"shell","repo":"%s","output_dir":"%s","args":["-c","true"]}\n' \
                                "$j" "$ROOT_SESSION_JSON" "$W/repo" "$W/plan$i/t$j" >>"$plan"
                        j=$((j + 1))
                done
                chmod -R a+rwX "$W/plan$i"
                t0=$(now)
                "$TB" batch "$plan" --slurm -q >/dev/null 2>>"$W/tb.stderr" || true
                echo $(($(now) - t0)) >>"$W/tb.ms"
                ok=$(grep -c '"outcome":"completed"' "$W/plan$i/plan.results.jsonl" 2>/dev/null || true)
                [ "${ok:-0}" = "$tasks" ] ||
                        note "slurm: run $i of the trialbox array completed ${ok:-0} of $tasks Trials: $(tail -n 1 "$W/tb.stderr" | tr '|' ' ')"
                i=$((i + 1))
        done
        tb_ms=$(median <"$W/tb.ms")
        row slurm "$tasks-Trial plan through \`trialbox batch --slurm\` (shell Trials running \`true\`), median" \
                "$tb_ms ms ($(ratio "$tb_ms" "$bare_ms")× the bare array)" "" ""
else
        row slurm "$tasks-Trial plan through \`trialbox batch --slurm\`" \
                "pending: this trialbox has no \`batch --slurm\` yet" "" ""
fi
method "slurm: the single-node cluster of tests/fixtures/slurm-cluster ($(nproc) CPUs, proctrack/linuxproc, batch_sched_delay=0); start times from \`tests/fixtures/slurm-cluster start\` (returns when sinfo says idle) and to the end of one \`sbatch --wrap true\`; arrays: \`sbatch --parsable --array=0-$((tasks - 1)) --wrap LINE\` with LINE $bare, timed from submit until \`squeue -h -r -j ID\` is empty (polled every 0.1 s), median of $runs; the trialbox row is \`trialbox batch PLAN --slurm -q\` on the same number of shell Trials (its own squeue poll is 1 s)."
[ "$started" = 1 ] || note "slurm: the cluster was already running; its start was not timed"
