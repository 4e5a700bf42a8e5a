#!/bin/sh
# The cost of limits: a no-op Trial (--harness shell --harness-bin /bin/true)
# with --memory --pids --cpus against the same Trial without, side by side in
# one hyperfine series. The difference is the Trial's cgroup: the probe, its
# creation with the limits written, the keeper joining it, the kernel's
# accounting of what bwrap and the session do inside it, the usage read and
# its removal (under 2 ms). Needs root or a delegated cgroup
# (see `trialbox check`'s limits line); elsewhere it says why and stops.
#
# The two commands alternate, in rounds (lib.sh: hf_rounds): a slow spell
# of the machine falls on both alike instead of on one of the two medians.
#
#   bench/limits.sh            (BUILD=folder, RUNS=240 of each, ROUNDS=24)
RUNS=${RUNS:-240}
ROUNDS=${ROUNDS:-24}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need hyperfine hyperfine
need_trialbox
scratch
mkdir "$W/repo"

base="$TB run $ROOT_SESSION -q --harness shell --harness-bin /bin/true --repo $W/repo --output-dir $W/out"
limited="$base --memory 512M --pids 256 --cpus 1"
if ! $limited >"$W/probe.err" 2>&1; then
        row limits "no-op Trial with --memory --pids --cpus" "cannot run here: $(head -c 300 "$W/probe.err" | tr '\n|' '  ')" "" ""
        exit 0
fi
rm -rf "$W/out"
mechanism=$("$TB" check --json 2>/dev/null | tr '{' '\n' | sed -n 's/.*"check":"limits".*"detail":"\([^"]*\)".*/\1/p')

say "limits: hyperfine, $RUNS runs of each command in $ROUNDS rounds"
hf_rounds "$W/runs" "$ROUNDS" "$RUNS" \
        --prepare "rm -rf $W/out" -n no-limits "$base" \
        --prepare "rm -rf $W/out" -n limits "$limited"

t0=$(pool_median "$W/runs" no-limits)
t1=$(pool_median "$W/runs" limits)
d=$(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
m0=$(pool_min "$W/runs" no-limits)
m1=$(pool_min "$W/runs" limits)
dmin=$(awk -v a="$m1" -v b="$m0" 'BEGIN { printf "%.2f", a - b }')
row limits "no-op Trial without limits, median" "$t0 ms" "" ""
row limits "no-op Trial with --memory --pids --cpus, median" "$t1 ms" "" ""
row limits "cost of the Trial's cgroup, medians (and fastest runs)" "$d ms ($dmin ms)" "< 2 ms" "$(verdict_le "$d" 2)"
method "limits: one hyperfine series without a shell (-N), in $ROUNDS rounds (one warm-up run of each command per round) so that the two commands alternate, $(pool_count "$W/runs" limits) runs of each in all (a new output folder each run), of \`trialbox run -q --harness shell --harness-bin /bin/true --repo R --output-dir O\` and the same with \`--memory 512M --pids 256 --cpus 1\` (mechanism here: ${mechanism:-?}). The difference of the medians is the cost of the probe, the cgroup's creation with its limits, the keeper joining it, the kernel's accounting of what bwrap and the session do inside it (a memory cgroup's charges), reading its usage and removing it. Both Trials start bwrap early (docs/sandbox.md): the cgroup is made before it."
