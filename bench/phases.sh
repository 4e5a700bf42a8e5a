#!/bin/sh
# Where a no-op Trial's time goes, in order: a build of its own with
# -DTRIALBOX_PHASES=ON (PHASES_BUILD, default BUILD-phases; configured and
# built by this script, the same build type as BUILD), whose TB_PHASE()
# marks (core/src/base/phase.h) print a CLOCK_MONOTONIC timestamp to stderr
# at each step: trialbox's main(), its checks, the toolchains, the
# repository guard opened, the masks, the fork of the keeper (the guard's
# snapshot and the records while bwrap starts), the keeper's start of
# bwrap's process, bwrap's exec, bwrap's two status lines (the sandbox
# made; the session ended), the keeper's end, the guard's check and the
# final record. Over PHASES_RUNS (default 60) no-op Trials
# (`run --harness shell --harness-bin /bin/true`, a new output folder each)
# on tmpfs (TMPFS_DIR, default /dev/shm): the median time of each mark from
# main(), and the median step from the mark before it. Each mark is one
# write(2): the whole is a few microseconds slower than a build without them.
#
#   bench/phases.sh        (PHASES_RUNS=60, PHASES_BUILD=folder)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need cmake cmake
need python3 python3
PB=${PHASES_BUILD:-$BUILD-phases}
type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
say "phases: configuring and building $PB (-DTRIALBOX_PHASES=ON)"
cmake -S "$bench_root" -B "$PB" -DCMAKE_BUILD_TYPE="${type:-RelWithDebInfo}" -DTRIALBOX_PHASES=ON \
        -DTRIALBOX_TESTS=OFF >/dev/null || die "cannot configure $PB"
cmake --build "$PB" --target trialbox shell -j"$(nproc)" >/dev/null || die "cannot build $PB"
scratch_tmpfs
mkdir "$T/repo"
n=${PHASES_RUNS:-60}
say "phases: $n no-op Trials"
i=0
while [ "$i" -lt "$n" ]; do
        TRIALBOX_PLUGIN_PATH="$PB/plugins" "$PB/core/trialbox" run $ROOT_SESSION -q --harness shell \
                --harness-bin /bin/true --repo "$T/repo" --output-dir "$T/o$i" 2>"$T/p$i" >/dev/null ||
                die "no-op Trial $i failed: $(head -c 300 "$T/p$i")"
        rm -rf "$T/o$i"
        i=$((i + 1))
done
python3 - "$T" "$n" <<'PY'
import collections, glob, statistics, sys
what = {
    "main": "trialbox's main()",
    "run": "the options read; the host's sockets listed from here, in a thread",
    "validated": "the request checked (repository, output folder)",
    "loaded": "the plugin loaded, the output folder made",
    "setup": "the Outcome begun, the Harness binary and bwrap found",
    "tc_system": "the system folders bound",
    "tc_tools": "the toolchains and PATH folders resolved and bound",
    "guard_open": "the repository guard opened (what its .git is)",
    "spec": "the spec built",
    "hooks": "the plugin's hooks (preflight, login, env)",
    "thread_start": "(the listing thread, when a CPU was idle and it began before the masks) it runs",
    "sockets_here": "(the listing thread) this network namespace's sockets listed",
    "sockets_others": "(the listing thread, as root) every other namespace's listed",
    "identity": "the git identity written to the fresh home",
    "prepared": "the home handed over, the seccomp filter ready",
    "masked_secrets": "the secret places masked",
    "masked_sockets": "the host's sockets masked (the listing joined)",
    "finish_spec": "unreachable binds dropped, limits prepared",
    "cgroup": "the Trial's cgroup made (with limits)",
    "guard_snapshot": "(while bwrap starts) the repository guard's snapshot",
    "records": "(while bwrap starts) the final record reserved, the running record written",
    "sv_fds": "the supervisor's pipes and fds",
    "sv_sources": "its signal and timer sources",
    "forked": "the keeper forked (trialbox's side)",
    "keeper_start": "the keeper runs (its fds closed)",
    "keeper_forked": "bwrap's process started (the keeper resumes once it has exec'd)",
    "bwrap_signals": "bwrap's process: signals reset",
    "bwrap_confined": "its keyring and filter fd ready",
    "exec_read": "bwrap exec'd (seen by trialbox)",
    "status_line": "bwrap made the sandbox (its child-pid line)",
    "status_line#2": "the session ended (bwrap's exit-code line)",
    "loop_end": "the keeper gone, the session's end read",
    "session": "the supervisor done",
    "after_session": "the guard's check and the logins written back",
    "executed": "the Trial's work done",
    "final_record": "the final record written",
    "exit": "main() returns",
}
T, n = sys.argv[1], int(sys.argv[2])
at = collections.defaultdict(list)
runs = 0
for f in glob.glob(T + "/p*"):
    rows = [l.split() for l in open(f) if l.startswith("PHASE ")]
    if not rows:
        continue
    runs += 1
    t0 = int(rows[0][3])
    seen = collections.Counter()
    for r in rows:
        seen[r[2]] += 1
        key = r[2] + ("#%d" % seen[r[2]] if seen[r[2]] > 1 else "")
        at[key].append(int(r[3]) - t0)
if "exit" not in at:
    print("| start-up phases | no marks: is %s built with -DTRIALBOX_PHASES=ON? | | | |" % T)
    sys.exit(0)
order = sorted(at, key=lambda k: statistics.median(at[k]))
prev = 0
for k in order:
    m = statistics.median(at[k])
    # A mark not every Trial passes (the listing thread's) says in how many it was.
    some = "" if len(at[k]) >= runs else " (in %d of %d Trials)" % (len(at[k]), runs)
    print("| start-up phases | %s: %s%s | %.3f ms (+%.3f) |  |  |" % (k, what.get(k, k), some, m / 1000, (m - prev) / 1000))
    prev = m
PY
method "start-up phases: the marks of a build with -DTRIALBOX_PHASES=ON (core/src/base/phase.h; configured by bench/phases.sh in BUILD-phases), one write(2) of a CLOCK_MONOTONIC timestamp each, in the trialbox process and in the keeper and bwrap's process before its exec; $n no-op Trials (\`run --harness shell --harness-bin /bin/true\`, $ROOT_SESSION) on tmpfs, each mark's median time from main() and, in brackets, the step from the mark before it (medians of different runs: the steps need not add up). What comes before main() (the loader) and after its return is not in it: see own work. The listing thread starts only when /proc/loadavg shows fewer tasks running than CPUs (base/cpus.h), which a task the launcher or the kernel still runs can prevent: a mark some Trials did not pass says in how many it was."
