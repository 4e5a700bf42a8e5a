#!/bin/sh
# Peak memory of the trialbox process itself while a session runs. A session
# `sleep 1` runs while an outside loop samples VmHWM (the process's own peak
# resident set) in /proc/PID/status of trialbox every 20 ms; VmHWM only grows,
# so the last sample before trialbox exits is its peak up to the end of the
# session. `/usr/bin/time -v` is run too, for comparison: its "Maximum resident
# set size" is the largest of trialbox and every child it waited for (bwrap),
# not trialbox's own.
# Two Harnesses: shell (no login) and codex (a synced login: a private copy
# watched with inotify, the heaviest path of the core).
#
#   bench/memory.sh                (BUILD=folder; MEM_RUNS=3 per Harness)
#
# Needs GNU time (apt-get install -y time).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need_trialbox
[ -x /usr/bin/time ] || die "needs /usr/bin/time: apt-get install -y time"
scratch
mkdir "$W/repo" "$W/codex-home"
printf '{"tokens": {"access_token": "bench-not-a-secret"}}\n' >"$W/codex-home/auth.json"
chmod 600 "$W/codex-home/auth.json"
runs=${MEM_RUNS:-3}

peak_kib() { # HARNESS N → prints VmHWM in KiB, sampled
        if [ "$1" = codex ]; then
                CODEX_HOME="$W/codex-home" "$TB" run $ROOT_SESSION -q --harness codex --harness-bin /bin/sh \
                        --repo "$W/repo" --output-dir "$W/o-$1-$2" -- -c 'sleep 1' &
        else
                "$TB" run $ROOT_SESSION -q --harness shell --repo "$W/repo" --output-dir "$W/o-$1-$2" -- -c 'sleep 1' &
        fi
        pid=$!
        hwm=""
        while [ -r "/proc/$pid/status" ]; do
                v=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
                [ -n "$v" ] && hwm=$v
                sleep 0.02
        done
        wait "$pid" || die "the $1 Trial failed (see $W/o-$1-$2/outcome.json)"
        grep -q '"outcome":"completed"' "$W/o-$1-$2/outcome.json" || die "the $1 Trial did not complete"
        echo "$hwm"
}

samples() { # HARNESS → the VmHWM of each Trial, KiB
        i=0
        while [ "$i" -lt "$runs" ]; do
                v=$(peak_kib "$1" "$i") || exit 1
                printf ' %s' "$v"
                i=$((i + 1))
        done
}
maximum() { echo "$1" | tr ' ' '\n' | awk 'NF && $1 > m { m = $1 } END { print m }'; }

say "memory: VmHWM of trialbox, $runs Trials per Harness"
all_shell=$(samples shell)
all_codex=$(samples codex)
max_shell=$(maximum "$all_shell")
max_codex=$(maximum "$all_codex")
/usr/bin/time -v "$TB" run $ROOT_SESSION -q --harness shell --repo "$W/repo" --output-dir "$W/o-time" -- -c 'sleep 1' 2>"$W/time.txt" ||
        die "the /usr/bin/time Trial failed"
tree=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$W/time.txt")

mib() { awk -v k="$1" 'BEGIN { printf "%.2f MiB (%d KiB)", k / 1024, k }'; }
row memory "trialbox's peak RSS (VmHWM), shell Trial, max of $runs" "$(mib "$max_shell")" "< 4 MiB" \
        "$(verdict_le "$max_shell" 4095)"
row memory "trialbox's peak RSS (VmHWM), codex Trial (synced login), max of $runs" "$(mib "$max_codex")" "< 4 MiB" \
        "$(verdict_le "$max_codex" 4095)"
row memory "\`/usr/bin/time -v\` max RSS (largest of trialbox and bwrap), shell Trial" "$(mib "$tree")" "" ""
note "memory: VmHWM samples (KiB): shell$all_shell; codex$all_codex."
method "memory: \`trialbox run -q --harness shell --repo R --output-dir O -- -c 'sleep 1'\` (and the same with \`--harness codex --harness-bin /bin/sh\`, CODEX_HOME a folder with an auth.json) started in the background; a loop reads VmHWM from /proc/PID/status of the trialbox process every 20 ms until it exits; the last value is its peak. Max over $runs Trials each. Once more under \`/usr/bin/time -v\`."
