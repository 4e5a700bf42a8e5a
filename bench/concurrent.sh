#!/bin/sh
# 1, 8 and 32 Trials at once: the wall time of a batch (all started together,
# waited for) side by side in one hyperfine run, and the failures: Trials
# whose outcome.json is missing or not "completed", counted over every batch.
# Each Trial: the shell Harness, a session `sleep 0.2`, its own output folder,
# all on one repository. For comparison, in the same hyperfine run: 32 of the
# bare bwrap commands that --dry-run prints for such a Trial, at once (what
# the sandboxes cost without trialbox).
#
#   bench/concurrent.sh     (CONC_RUNS=10)
#
# Needs hyperfine.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need hyperfine hyperfine
need_trialbox
scratch
mkdir "$W/repo"
runs=${CONC_RUNS:-10}

# batch N: start N Trials, wait for all. (The measured command.)
cat >"$W/batch.sh" <<EOF
#!/bin/sh
i=0
while [ "\$i" -lt "\$1" ]; do
        "$TB" run $ROOT_SESSION -q --harness shell --repo "$W/repo" --output-dir "$W/c\$1/\$i" -- -c 'sleep 0.2' >/dev/null 2>>"$W/c\$1.stderr" &
        i=\$((i + 1))
done
wait
EOF
# tally N: count the last batch's Trials that did not complete, then clear it. (--prepare, and once at the end.)
cat >"$W/tally.sh" <<EOF
#!/bin/sh
if [ -d "$W/c\$1" ]; then
        done=\$(cat "$W"/c\$1/*/outcome.json 2>/dev/null | grep -c '"outcome":"completed"' || true)
        echo \$((\$1 - done)) >>"$W/fail.\$1"
        echo \$1 >>"$W/batches.\$1"
fi
rm -rf "$W/c\$1"
EOF
# bare N: N bare bwrap commands (the --dry-run line, one shared home) at once.
bare_line "$W/bare-line.sh" -q --harness shell --repo "$W/repo" --output-dir "$W/bare" -- -c 'sleep 0.2'
mkdir -p "$W/bare/home"
cat >"$W/bare.sh" <<EOF
#!/bin/sh
i=0
while [ "\$i" -lt "\$1" ]; do
        sh "$W/bare-line.sh" >/dev/null &
        i=\$((i + 1))
done
wait
EOF
chmod +x "$W/batch.sh" "$W/tally.sh" "$W/bare.sh"

say "concurrency: 1, 8, 32 Trials at once, $runs batches each (+1 warm-up)"
hyperfine --warmup 1 --runs "$runs" --export-csv "$W/h.csv" \
        --prepare "$W/tally.sh 1" -n "1 Trial" "$W/batch.sh 1" \
        --prepare "$W/tally.sh 8" -n "8 Trials" "$W/batch.sh 8" \
        --prepare "$W/tally.sh 32" -n "32 Trials" "$W/batch.sh 32" \
        --prepare true -n "32 bare bwrap" "$W/bare.sh 32" >&2
for n in 1 8 32; do "$W/tally.sh" "$n"; done

m1=$(hf_median "$W/h.csv" "1 Trial")
for n in 1 8 32; do
        label="$n Trials"
        [ "$n" = 1 ] && label="1 Trial"
        m=$(hf_median "$W/h.csv" "$label")
        fails=$(awk '{ s += $1 } END { print s + 0 }' "$W/fail.$n")
        total=$(awk '{ s += $1 } END { print s + 0 }' "$W/batches.$n")
        if [ "$n" = 32 ]; then
                target="no failure"
                v=$([ "$fails" = 0 ] && echo met || echo "not met")
        else
                target="" v=""
        fi
        row concurrency "$label at once: batch wall time, median (ratio to 1); failures" \
                "$m ms ($(ratio "$m" "$m1")×); $fails failed of $total" "$target" "$v"
        if [ "$fails" != 0 ]; then
                note "concurrency: $n at once: stderr of the failed Trials: $(sort "$W/c$n.stderr" | uniq -c | head -n 3 | tr '\n|' '  ')"
        fi
done
b32=$(hf_median "$W/h.csv" "32 bare bwrap")
m32=$(hf_median "$W/h.csv" "32 Trials")
row concurrency "32 bare bwrap commands (the --dry-run line) at once, median (32 Trials / this)" \
        "$b32 ms ($(ratio "$m32" "$b32")×)" "" ""
method "concurrency: one hyperfine run (--warmup 1 --runs $runs) of three batches: N (1, 8, 32) \`trialbox run -q --harness shell --repo R --output-dir O_i -- -c 'sleep 0.2'\` started in the background at once, then \`wait\`; medians, ratio to the 1-Trial batch ($(nproc) cores here); and 32 copies of the \`--dry-run\` line of such a Trial (\`env -i … bwrap … -- /sandbox/harness/shell -c 'sleep 0.2' 3>/dev/null\`, $bare_line_words) at once. Failures: Trials of every timed and warm-up batch whose outcome.json is missing or not completed."
