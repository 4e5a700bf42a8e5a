#!/bin/sh
# The Grok Trials-home wipe (trials_home_wipe: openat/unlinkat walk with
# O_NOFOLLOW, keeping auth.json and .lock) against `rm -rf` of the same tree,
# side by side in one hyperfine run per size. The tree is made anew before
# each run (hyperfine --prepare): auth.json, .lock and N files of 64 bytes,
# 100 per subfolder. bench/wipe-bench.c is a small driver linked with the
# core's logins/ and base/ libraries (bench/CMakeLists.txt).
#
# Sizes: 10,000 and 100,000 files on a tmpfs (/dev/shm): the walk's own cost,
# the same unlinkat calls as rm -rf, no disk in the way. On a disk both wait
# for the same file system, and making the trees there takes much longer than
# the runs themselves (seconds per 10,000 files on a busy shared disk), so:
#   WIPE_DISK=1       adds 10,000 files on the disk of /tmp (where a real
#                     Trials home under ~/.local/state lives), fresh in the page cache;
#   WIPE_DISK_SYNC=1  adds the same after a sync (written out, as an old Trials home is).
#
#   bench/wipe.sh      (WIPE_TMPFS=/dev/shm; WIPE_RUNS=20, WIPE_RUNS_BIG=10, WIPE_RUNS_DISK=10)
#
# Needs hyperfine, and what the build needs (./scripts/setup): the driver is
# built in BUILD with -DTRIALBOX_BENCH=ON, configured so when it is not.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need hyperfine hyperfine
bench_driver wipe-bench
scratch
tmpfs_root=${WIPE_TMPFS:-/dev/shm}
[ -d "$tmpfs_root" ] && [ -w "$tmpfs_root" ] || die "no writable tmpfs at $tmpfs_root (set WIPE_TMPFS)"
T=$(mktemp -d "$tmpfs_root/trialbox-wipe.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then say "tmpfs folder kept: $T"; else trap 'rm -rf "$W" "$T"' EXIT; fi

wb="$BUILD/bench/wipe-bench"

# Sanity: the wipe leaves auth.json and .lock, nothing else.
"$wb" make "$T/check" 1000 && "$wb" wipe "$T/check"
[ "$("$wb" count "$T/check")" = 2 ] || die "the wipe left $("$wb" count "$T/check") entries, not 2"

bench_pair() { # LABEL DIR N RUNS SYNC(0/1)
        prep="rm -rf $2 && $wb make $2 $3"
        [ "$5" = 1 ] && prep="$prep && sync"
        say "wipe: $1, $4 runs each"
        csv="$W/wipe-$3-$5-$(printf %s "$2" | tr -c "a-z0-9" _).csv"
        hyperfine --warmup 1 --runs "$4" --export-csv "$csv" \
                --prepare "$prep" -n wipe "$wb wipe $2" \
                --prepare "$prep" -n rm-rf "rm -rf $2" >&2
        w=$(hf_median "$csv" wipe)
        r=$(hf_median "$csv" rm-rf)
        q=$(ratio "$w" "$r")
        # "No slower": within 5% of rm -rf (the spread of one hyperfine run).
        row wipe "$1: wipe / rm -rf (medians $w / $r ms)" "$q×" "≤ 1.00× (±5%)" "$(verdict_le "$q" 1.05)"
}
bench_pair "10,000 files, tmpfs" "$T/tree" 10000 "${WIPE_RUNS:-20}" 0
bench_pair "100,000 files, tmpfs" "$T/tree" 100000 "${WIPE_RUNS_BIG:-10}" 0
if [ "${WIPE_DISK:-0}" = 1 ]; then
        bench_pair "10,000 files, disk (/tmp)" "$W/tree" 10000 "${WIPE_RUNS_DISK:-10}" 0
fi
if [ "${WIPE_DISK_SYNC:-0}" = 1 ]; then
        bench_pair "10,000 files, disk (/tmp), synced" "$W/tree" 10000 "${WIPE_RUNS_SYNC:-5}" 1
fi
method "wipe: bench/wipe-bench.c calls trials_home_wipe(DIR, {auth.json, .lock}) from core/src/logins/trials_home.c (built by CMake with the build's flags: -O2 in RelWithDebInfo); against \`rm -rf DIR\`. One hyperfine run per size (--warmup 1), each run on a tree made anew by --prepare: auth.json, .lock and N files of 64 bytes, 100 per subfolder; on $tmpfs_root (tmpfs)$([ "${WIPE_DISK:-0}${WIPE_DISK_SYNC:-0}" != 00 ] && echo ", and on /tmp's disk ($(df -T /tmp | awk 'NR == 2 { print $2 }'))")$([ "${WIPE_DISK_SYNC:-0}" = 1 ] && echo ", also with a sync after making it"). Both make the same unlinkat calls, one per file and folder (strace -c); rm -rf also opens, stats and closes each folder a few times more (fts). Medians; verdict met when within 5% of rm -rf or faster."
