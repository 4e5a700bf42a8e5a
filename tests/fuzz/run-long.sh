#!/bin/bash
# Run every fuzz target for a while and summarise, for docs/reliability.md.
#
#   tests/fuzz/run-long.sh [-b BUILD_DIR] [-w WORK_DIR] [-j JOBS] [MINUTES [TARGET...]]
#
# MINUTES per target (default 5); TARGETs among credentials, manifest,
# supervisor_status, cli_run, term_filter, lines, tokens_codex, tokens_claude
# (default all). BUILD_DIR is a build configured with CC=clang -DTRIALBOX_FUZZ=ON
# -DTRIALBOX_SANITIZE=ON (default: build-fuzz); the targets are looked for in
# BUILD_DIR/tests/fuzz. WORK_DIR (default BUILD_DIR/fuzz-long) holds a writable corpus per target, seeded from
# tests/fuzz/corpus/<target> and kept between runs so they build on each
# other, the libFuzzer logs, and any crash/leak/timeout inputs (artifacts/).
# JOBS targets run at once (default 1: each libFuzzer process uses one core).
#
# Per target it prints the CPU seconds used, the executions and exec/s from
# libFuzzer's final stats (-print_final_stats=1), the corpus size and whether
# anything was found; then one markdown table of all of it. The exit status
# is 1 when any target found something, 2 for a usage error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=build-fuzz
work=
jobs=1
usage() { echo "usage: $0 [-b BUILD_DIR] [-w WORK_DIR] [-j JOBS] [MINUTES [TARGET...]]" >&2; exit 2; }
while getopts "b:w:j:h" opt; do
        case $opt in
        b) build=$OPTARG ;;
        w) work=$OPTARG ;;
        j) jobs=$OPTARG ;;
        *) usage ;;
        esac
done
shift $((OPTIND - 1))
minutes=${1:-5}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(credentials manifest supervisor_status cli_run term_filter lines tokens_codex tokens_claude)
[[ $minutes =~ ^[0-9]+$ && $minutes -gt 0 ]] || { echo "$0: MINUTES must be a whole number above 0, not '$minutes'" >&2; usage; }
[[ $jobs =~ ^[0-9]+$ && $jobs -gt 0 ]] || { echo "$0: JOBS must be a whole number above 0, not '$jobs'" >&2; usage; }
work=${work:-$build/fuzz-long}
for t in "${targets[@]}"; do
        [ -x "$build/tests/fuzz/fuzz_$t" ] || {
                echo "$0: no '$build/tests/fuzz/fuzz_$t'; build with CC=clang -DTRIALBOX_FUZZ=ON -DTRIALBOX_SANITIZE=ON, or give -b BUILD_DIR" >&2
                exit 2
        }
        [ -d "$here/corpus/$t" ] || { echo "$0: no seed corpus '$here/corpus/$t'" >&2; exit 2; }
done
mkdir -p "$work/artifacts"
work=$(cd "$work" && pwd)

# "1m2.500s" (bash's `times`) -> seconds
to_seconds() { awk -v t="$1" 'BEGIN { split(t, a, /[ms]/); printf "%.1f", a[1] * 60 + a[2] }'; }

# One target, in the background when JOBS > 1: everything goes to files under $work.
run_one() {
        local t=$1 bin=$build/tests/fuzz/fuzz_$1 corpus=$work/corpus/$1 dict=()
        mkdir -p "$corpus"
        cp -n "$here/corpus/$t"/* "$corpus/" 2>/dev/null || true
        [ -f "$here/$t.dict" ] && dict=(-dict="$here/$t.dict")
        rm -f "$work/artifacts/$t-"*
        # A subshell of its own, so `times` counts this fuzzer's CPU alone.
        (
                set +e
                "$bin" -max_total_time=$((minutes * 60)) -timeout=10 -print_final_stats=1 \
                        -artifact_prefix="$work/artifacts/$t-" "${dict[@]}" "$corpus" >"$work/$t.log" 2>&1
                echo $? >"$work/$t.rc"
                times >"$work/$t.times" # line 2: the children's user and system time
        )
}

echo "fuzzing ${targets[*]}: $minutes min each, $jobs at a time; logs and corpora in '$work'"
running=0
for t in "${targets[@]}"; do
        echo "  $(date +%H:%M:%S) start $t"
        if [ "$jobs" -gt 1 ]; then
                run_one "$t" &
                running=$((running + 1))
                if [ $running -ge "$jobs" ]; then
                        wait -n || true
                        running=$((running - 1))
                fi
        else
                run_one "$t"
        fi
done
wait

final_stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -n 1; }
rows=()
found=0
for t in "${targets[@]}"; do
        log=$work/$t.log
        rc=$(cat "$work/$t.rc")
        user_sys=$(sed -n 2p "$work/$t.times")
        cpu=$(awk -v u="$(to_seconds "${user_sys% *}")" -v s="$(to_seconds "${user_sys#* }")" 'BEGIN { printf "%.0f", u + s }')
        execs=$(final_stat number_of_executed_units "$log")
        rate=$(final_stat average_exec_per_sec "$log")
        cov=$(sed -n 's/.*\(DONE\|INITED\|NEW\|REDUCE\|pulse\) *cov: \([0-9]*\).*/\2/p' "$log" | tail -n 1)
        files=$(find "$work/corpus/$t" -type f | wc -l)
        kib=$(find "$work/corpus/$t" -type f -printf '%s\n' | awk '{ n += $1 } END { printf "%.1f", n / 1024 }')
        arts=$(find "$work/artifacts" -name "$t-*" -type f -printf '%f ' | sed 's/ $//')
        if [ "$rc" = 0 ] && [ -z "$arts" ]; then
                result="nothing found"
        else
                found=1
                kind=$(grep -o -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer): [a-z -]+' "$log" |
                        sed -E 's/ (on|after|at|in) .*//; s/ +$//' || true)
                [ -n "$kind" ] || kind=$(grep -o -m1 -E 'runtime error: .*|broken promise: .*' "$log" || true)
                result="FOUND (exit $rc): ${kind:-see log}; ${arts:-no artifact}"
        fi
        echo
        echo "$t: CPU ${cpu} s, ${execs:-?} executions (${rate:-?}/s), corpus $files files / $kib KiB, ${cov:-?} edges"
        echo "  $result"
        echo "  log: $log"
        rows+=("| $t | $minutes | $cpu | ${execs:-?} | ${rate:-?} | $files ($kib KiB) | ${cov:-?} | $result |")
done

echo
echo "Fuzzing, $(date -u +%Y-%m-%d), $(clang --version 2>/dev/null | head -n 1 || echo clang), libFuzzer with the build's sanitizers, $minutes min per target:"
echo
echo "| target | minutes | CPU s | executions | exec/s | corpus | edges | result |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
printf '%s\n' "${rows[@]}"
exit $found
