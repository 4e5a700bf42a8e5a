#!/bin/sh
# The batch runner (`trialbox batch`):
#  - throughput: 200 no-op Trials (`shell`, session `true`) with --jobs 2,
#    against GNU parallel -j2 running the same 200 bare bwrap command lines
#    (the --dry-run line of such a Trial), side by side in one hyperfine
#    series run in rounds, so that the two alternate (lib.sh: hf_rounds);
#  - the batch's own memory: its peak RSS over plans of 1,000 and 10,000
#    Trials that are all final already (each folder holds a completed
#    outcome.json), so only the batch itself is measured: plan, resume scan,
#    plan.results.jsonl and the summary. The growth per plan line is the figure
#    that must stay at the size of a Trial's record.
#
#   bench/batch.sh     (BATCH_RUNS=8 BATCH_ROUNDS=4 BATCH_MEM_RUNS=3 BATCH_PARTS="throughput memory")
#
# BATCH_PARTS names the parts to run (default both): BATCH_PARTS=memory
# measures the memory alone. BATCH_RUNS: runs of each command in all, over
# BATCH_ROUNDS rounds. BATCH_MEM_RUNS: how many times each plan's peak
# RSS is measured (its median is the figure).
#
# Needs hyperfine, jq and GNU parallel (throughput), and GNU time (memory).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
parts=${BATCH_PARTS:-throughput memory}
part() { case " $parts " in *" $1 "*) return 0 ;; *) return 1 ;; esac }
part throughput || part memory || die "BATCH_PARTS='$parts' names no part: use throughput, memory or both"
if part throughput; then
        need hyperfine hyperfine
        need jq jq
        need parallel parallel
fi
if part memory; then
        [ -x /usr/bin/time ] || die "needs GNU time: apt-get install -y time"
fi
need_trialbox
scratch
runs=${BATCH_RUNS:-8}
rounds=${BATCH_ROUNDS:-4}
mem_runs=${BATCH_MEM_RUNS:-3}
n=200

throughput() {
        mkdir "$W/repo"

        # Each line its own repository: lines that share one run one after the other.
        i=0
        while [ "$i" -lt "$n" ]; do
                mkdir -p "$W/repos/t$i"
                printf '{"id":"t%d",%s"harness":"shell","repo":"repos/t%d","output_dir":"out/t%d","args":["-c","true"]}\n' "$i" "$ROOT_SESSION_JSON" "$i" "$i"
                i=$((i + 1))
        done >"$W/plan.jsonl"
        bare_line "$W/bare-line.sh" -q --harness shell --repo "$W/repo" --output-dir "$W/bare" -- -c true
        mkdir -p "$W/bare/home"
        i=0
        while [ "$i" -lt "$n" ]; do
                cat "$W/bare-line.sh"
                i=$((i + 1))
        done >"$W/bare-lines"

        say "batch: $n no-op Trials, --jobs 2, against parallel -j2 over $n bare bwrap lines; $runs runs each in $rounds rounds"
        # sync before each run: the write-back of what the last one left
        # (200 output folders removed) otherwise falls into the next runs.
        hf_rounds "$W/runs" "$rounds" "$runs" \
                --prepare "sh -c 'rm -rf $W/out $W/plan.results.jsonl; sync'" -n batch "$TB batch $W/plan.jsonl --jobs 2 -q" \
                --prepare "sync" -n parallel "parallel -j2 -a $W/bare-lines"
        completed=$(grep -c '"outcome":"completed"' "$W/plan.results.jsonl" || true)
        mb=$(pool_median "$W/runs" batch)
        mp=$(pool_median "$W/runs" parallel)
        all=$(pool_count "$W/runs" batch)
        r=$(ratio "$mb" "$mp")
        row batch "$n no-op Trials, --jobs 2: batch wall time, median (ratio to parallel -j2 over the bare bwrap lines)" \
                "$mb ms vs $mp ms (${r}×); $completed of $n completed" "≤ 1.15×" "$(verdict_le "$r" 1.15)"
        per=$(awk -v m="$mb" -v n="$n" 'BEGIN { printf "%.1f", m / n }')
        row batch "wall time per Trial at --jobs 2 (batch median / $n)" "$per ms" "" ""
        method "batch: one hyperfine series without a shell (-N) in $rounds rounds (one warm-up run of each command per round), so that the two commands alternate, $all runs of each in all, medians over all of them: \`trialbox batch PLAN --jobs 2 -q\` over $n lines \`{\"harness\":\"shell\",\"args\":[\"-c\",\"true\"],…}\` (output folders removed before each run, then \`sync\`, untimed; \`sync\` before each parallel run too: without it, the write-back of the removed folders fell into the runs that followed, and the ratio read 1.07× to 1.47× in six series minutes apart, two builds; with it, 1.17× to 1.22×), and \`parallel -j2 -a LINES\` over $n copies of that Trial's \`--dry-run\` line (one shared home), $bare_line_words; $(nproc) cores here."
}

# The memory of the batch alone: plans whose Trials are all final, each
# record the batch's own (its launcher.json's nonce echoed), each line its
# own repository.
final_plan() { # N DIR
        seq 0 $(($1 - 1)) | sed "s|^|$2/out/t|" | xargs mkdir -p
        seq 0 $(($1 - 1)) | sed "s|^|$2/repos/t|" | xargs mkdir -p
        awk -v n="$1" -v d="$2" -v root="$ROOT_SESSION_JSON" 'BEGIN {
                pad = sprintf("%2000s", ""); gsub(/ /, "x", pad)
                nonce = "0123456789abcdef0123456789abcdef"
                for (i = 0; i < n; i++) {
                        printf "{\"id\":\"t%d\",%s\"harness\":\"shell\",\"repo\":\"repos/t%d\",\"output_dir\":\"out/t%d\",\"args\":[\"-c\",\"true\"]}\n", i, root, i, i > (d "/plan.jsonl")
                        f = d "/out/t" i "/launcher.json"
                        printf "{\"outcome\":\"running\",\"nonce\":\"%s\"}\n", nonce > f
                        close(f)
                        f = d "/out/t" i "/outcome.json"
                        printf "{\"harness\":\"shell\",\"outcome\":\"completed\",\"cause\":null,\"detail\":\"%s\",\"exit_code\":0,\"signal\":null,\"sandboxed\":true,\"duration_ms\":%d,\"launcher_nonce\":\"%s\",\"usage\":{\"cpu_user_ms\":1,\"cpu_system_ms\":2,\"peak_memory_bytes\":1048576}}\n", pad, 20 + i % 50, nonce > f
                        close(f)
                }
        }'
}

# The median of the numbers in FILE, one a line.
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { if (!NR) exit 1; print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

memory() {
        for k in 1000 10000; do
                final_plan "$k" "$W/m$k"
                : >"$W/rss$k"
                i=0
                while [ "$i" -lt "$mem_runs" ]; do
                        # Each run as the first: no results of an earlier one to read.
                        rm -f "$W/m$k/plan.results.jsonl"
                        /usr/bin/time -f %M -a -o "$W/rss$k" "$TB" batch "$W/m$k/plan.jsonl" -q >/dev/null
                        lines=$(wc -l <"$W/m$k/plan.results.jsonl")
                        [ "$lines" = "$k" ] || die "the $k-line plan gave $lines results lines"
                        kept=$(grep -c '"outcome":"completed"' "$W/m$k/plan.results.jsonl" || true)
                        [ "$kept" = "$k" ] || die "the $k-line plan kept $kept of its $k completed records: it ran Trials again"
                        i=$((i + 1))
                done
                say "batch memory, $k lines: peak RSS $(tr '\n' ' ' <"$W/rss$k")KiB"
        done
        r1=$(median "$W/rss1000")
        r10=$(median "$W/rss10000")
        growth=$(awk -v a="$r1" -v b="$r10" 'BEGIN { printf "%.0f", (b - a) * 1024 / 9000 }')
        out_bytes=$(wc -c <"$W/m10000/out/t0/outcome.json")
        plan_bytes=$(awk -v s="$(wc -c <"$W/m10000/plan.jsonl")" 'BEGIN { printf "%.0f", s / 10000 }')
        row batch "batch peak RSS, a plan of 1,000 / 10,000 final Trials" "$r1 KiB / $r10 KiB" "" ""
        row batch "growth per plan line (10,000 − 1,000, per line); a plan line / an outcome.json here" \
                "$growth B; $plan_bytes B / $out_bytes B" "< 1 KiB, not the Outcome's size" "$(verdict_le "$growth" 1023)"
        method "batch memory: the median of $mem_runs runs of GNU time's maximum RSS of \`trialbox batch PLAN -q\` over plans of 1,000 and 10,000 \`shell\` Trials whose folders already hold a completed outcome.json (the batch reads each, writes plan.results.jsonl and the summary, and runs nothing); each outcome.json carries a 2,000-byte detail, so a batch that kept Outcomes would grow by more than that per line; growth = the difference / 9,000, which is the Trial's parsed plan record (struct, id, harness, paths, args) and its state."
}

part throughput && throughput
part memory && memory
exit 0
