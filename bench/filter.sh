#!/bin/sh
# The session's seccomp filter: what loading it costs a process (bwrap loads
# it in the sandbox's first process, on every Trial's path to its session),
# and what it adds to a call, laid out as trialbox builds it (a binary tree
# of the syscall numbers) and as the same rules along a chain of compares
# (libseccomp's default layout, what trialbox built before), beside no
# filter. bench/filter-bench.c is the driver, linked with the core's
# sandbox/ library (bench/CMakeLists.txt).
#
#   bench/filter.sh     (FILTER_RUNS=600 loads of each, FILTER_CALLS=200000 calls per pass)
#
# Needs what the build needs (./scripts/setup): the driver is built in BUILD
# with -DTRIALBOX_BENCH=ON, configured so when it is not.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
bench_driver filter-bench
scratch
runs=${FILTER_RUNS:-600}
calls=${FILTER_CALLS:-200000}
say "filter: $runs loads of each filter, $calls calls per pass"
"$BUILD/bench/filter-bench" "$runs" "$calls" >"$W/figures" || die "filter-bench failed"
cat "$W/figures" >&2
f() { awk -v k="$1" '$1 == k { print $2 }' "$W/figures"; }
over() { awk -v a="$1" -v b="$2" 'BEGIN { printf "+%.0f", a - b }'; }
none=$(f load_none_us)
row "seccomp filter" "loading it in a fresh process, more than no filter, median: tree (trialbox's) / chain (the same rules)" \
        "$(over "$(f load_tree_us)" "$none") / $(over "$(f load_chain_us)" "$none") µs" "" ""
row "seccomp filter" "its size, tree / chain" "$(f instructions_tree) / $(f instructions_chain) instructions" "" ""
row "seccomp filter" "openat and close under it, per call: none / tree / chain" \
        "$(f openat_none_ns) / $(f openat_tree_ns) / $(f openat_chain_ns) ns" "" ""
row "seccomp filter" "getppid under it (answered by the kernel's cache), per call: none / tree / chain" \
        "$(f getppid_none_ns) / $(f getppid_tree_ns) / $(f getppid_chain_ns) ns" "" ""
method "seccomp filter: bench/filter-bench.c compiles the rules (sandbox/confine_rules.c, a session without nested user namespaces) twice with libseccomp: as a binary tree (SCMP_FLTATR_CTL_OPTIMIZE 2, what trialbox builds) and as a chain (the default layout). Load: a child is forked, loads the filter as bwrap does (PR_SET_NO_NEW_PRIVS, seccomp(SECCOMP_SET_MODE_FILTER)) and exits; fork to reap, no filter / tree / chain alternating, $runs runs of each, medians. Loading a filter, the kernel also runs it once for every syscall number of each architecture, to cache the calls it always allows: along a chain that walks every rule. Calls: in a child under each filter, $calls openat+close and $calls getppid calls, the fastest of 5 passes. openat's rule looks at its flags, so the kernel runs the filter on every one; getppid is cached."
