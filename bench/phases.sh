#!/bin/sh
# Where a no-op Trial's time goes, in order: a build of its own with
# -DTRIALBOX_PHASES=ON (PHASES_BUILD, default BUILD-phases; configured and
# built by this script, the same build type as BUILD), whose TB_PHASE()
# marks (core/src/base/phase.h) print a CLOCK_MONOTONIC timestamp to stderr
# at each step: trialbox's main(), its checks, the toolchains, the
# repository guard opened, the masks, the keeper's start (the guard's
# snapshot and the records while bwrap starts), the keeper's start of
# bwrap's process, bwrap's exec, bwrap's two status lines (the sandbox
# made; the session ended), the keeper's end, the guard's check and the
# final record. Over PHASES_RUNS (default 60) no-op Trials
# (`run --harness shell --harness-bin /bin/true`, a new output folder each)
# on tmpfs (TMPFS_DIR, default /dev/shm): the median time of each mark from
# main(), and the median step from the mark before it. Each mark is one
# write(2): the whole is a few microseconds slower than a build without them.
# Then the gap to the floor: each Trial follows a run of bench/floor.c
# --marks on the same bwrap line (bench/noop-trial.sh's floor), which marks
# the same steps (main(), the keeper forked, bwrap's status lines, the keeper
# reaped); both are started by bench/stamp.c, which marks the spawn and the
# reaping, so the exec, the loader and the exit are in: per step, the
# medians from the spawn, and how much it adds to trialbox's time beyond
# the floor's.
#
#   bench/phases.sh        (PHASES_RUNS=60, PHASES_BUILD=folder)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need python3 python3
PB=${PHASES_BUILD:-$BUILD-phases}
say "phases: configuring and building $PB (-DTRIALBOX_PHASES=ON)"
sibling_build "$PB" /dev/null "trialbox shell" -DTRIALBOX_PHASES=ON ||
        die "cannot configure or build $PB: cmake -S . -B $PB -DTRIALBOX_PHASES=ON"
# The floor (bench/floor.c, as bench/noop-trial.sh runs it) on the same
# bwrap line, with the same marks (--marks), side by side.
floor_beside_trial
n=${PHASES_RUNS:-60}
say "phases: $n no-op Trials and $n runs of the floor, alternating"
i=0
while [ "$i" -lt "$n" ]; do
        # shellcheck disable=SC2046 # the line's words
        "$STAMP" "$T/f$i" "$FLOOR" --marks $(cat "$T/floor.args") || die "the floor failed: $(head -c 300 "$T/f$i")"
        TRIALBOX_PLUGIN_PATH="$PB/plugins" "$STAMP" "$T/p$i" "$PB/core/trialbox" run $ROOT_SESSION -q --harness shell \
                --harness-bin /bin/true --repo "$T/repo" --output-dir "$T/o$i" ||
                die "no-op Trial $i failed: $(head -c 300 "$T/p$i")"
        rm -rf "$T/o$i"
        i=$((i + 1))
done
python3 - "$T" "$n" <<'PY'
import collections, glob, statistics, sys
what = {
    "main": "trialbox's main()",
    "run": "the options read",
    "validated": "the request checked (repository, output folder); bwrap started early from here",
    "loaded": "the plugin loaded (its filter written for bwrap started early), the output folder made; then, with bwrap not started early, the host's sockets listed in a thread when a CPU is left",
    "setup": "the Outcome begun, the Harness binary (and bwrap, when not started early) found",
    "tc_system": "the system folders bound",
    "tc_tools": "the toolchains and PATH folders resolved and bound",
    "guard_open": "the repository guard opened (what its .git is)",
    "spec": "the spec built",
    "hooks": "the plugin's hooks (preflight, login, env)",
    "thread_start": "(the listing thread, when it began before the masks) it runs",
    "sockets_here": "this network namespace's sockets listed (with bwrap started early, by the masks themselves; else by the listing thread when it began first)",
    "sockets_others": "(as root) every other network namespace's sockets listed (with bwrap started early: after its options, while it sets the sandbox up)",
    "masked_others": "(bwrap started early, as root; while bwrap starts) their masks added (none here: else bwrap would be started again)",
    "identity": "the git identity written to the fresh home (for a session of trialbox's own user: while bwrap starts, before the guard's snapshot)",
    "prepared": "the home handed over, the seccomp filter ready",
    "masked_secrets": "the secret places masked",
    "masked_sockets": "the host's sockets masked (the listing joined)",
    "finish_spec": "unreachable binds dropped, limits prepared",
    "cgroup": "the Trial's cgroup made (with limits, when bwrap starts late; with bwrap started early it is made before the keeper starts)",
    "guard_snapshot": "(while bwrap starts) the repository guard's snapshot",
    "records": "(while bwrap starts) the final record reserved, the running record written",
    "sv_fds": "the supervisor's pipes and fds (with bwrap started early: right after the checks)",
    "sv_sources": "its signal and timer sources",
    "forked": "the keeper started (trialbox's side: the thread that clones it made; with bwrap started early, right after the checks, before the plugin; with its keeper prestarted, the gate opened and the keeper's copy of the fd table taken)",
    "options": "(bwrap started early) its CPUs given back and its options sent",
    "cloned": "(after the guard's snapshot and the records) the keeper seen cloned",
    "keeper_start": "the keeper runs (its fds closed; a prestarted one: past its gate)",
    "keeper_forked": "bwrap's process exec'd (the keeper resumes then, but runs once it has a CPU: on bwrap's, bound to it for the start, often only when bwrap first blocks)",
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

def keyed(rows):
    """Each mark's name, numbered from its second time on (status_line#2), and its time."""
    seen = collections.Counter()
    for r in rows:
        seen[r[2]] += 1
        yield r[2] + ("#%d" % seen[r[2]] if seen[r[2]] > 1 else ""), int(r[3])

at = collections.defaultdict(list)
runs = 0
for f in glob.glob(T + "/p*"):
    rows = [l.split() for l in open(f) if l.startswith("PHASE ") and not l.startswith("PHASE 0 ")]
    if not rows:
        continue
    runs += 1
    t0 = int(rows[0][3])
    for key, t in keyed(rows):
        at[key].append(t - t0)
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

# Side by side with the floor: each mark both pass, from the spawn (stamp's
# marks, pid 0), so that the exec, the loader and the exit are in.
def from_spawn(prefix):
    at = collections.defaultdict(list)
    for f in glob.glob(T + "/" + prefix + "*"):
        rows = [l.split() for l in open(f) if l.startswith("PHASE ")]
        t0 = [int(r[3]) for r in rows if r[1] == "0" and r[2] == "spawn"]
        if not t0:
            continue
        for key, t in keyed(rows):
            at[key].append(t - t0[0])
    return {k: statistics.median(v) / 1000 for k, v in at.items()}
fl, tb = from_spawn("f"), from_spawn("p")
steps = [
    ("main", "main() reached: the exec and the loader"),
    ("forked", "the keeper started (the floor: forked): the launcher's work before it (trialbox's: the checks and bwrap found; bwrap is started before the plugin and the spec)"),
    ("status_line", "bwrap's child-pid line: the keeper's start, bwrap's exec, (trialbox's, meanwhile: the plugin, the spec, the hooks, the masks, bwrap's options sent) the sandbox's namespaces"),
    ("status_line#2", "bwrap's exit-code line: the mounts, the session (trialbox's under its seccomp filter), its end"),
    ("loop_end", "the keeper reaped: bwrap's exit, the keeper's"),
    ("reaped", "the launcher reaped: (trialbox's) the guard's check, the logins, the final record, its exit"),
]
if all(k in fl and k in tb for k, _ in steps):
    pf = pt = 0.0
    for k, text in steps:
        print("| start-up gap | %s (floor / trialbox, from the spawn) | %.3f / %.3f ms (steps +%.3f / +%.3f; gap %+.3f ms) |  |  |"
              % (text, fl[k], tb[k], fl[k] - pf, tb[k] - pt, (tb[k] - pt) - (fl[k] - pf)))
        pf, pt = fl[k], tb[k]
    print("| start-up gap | spawn to reaped, trialbox / floor, medians | %.2f× (%+.3f ms) |  |  |" % (tb["reaped"] / fl["reaped"], tb["reaped"] - fl["reaped"]))
else:
    print("| start-up gap | no marks from the floor (bench/floor.c --marks) or from the phases build | | | |")
PY
method "start-up phases: the marks of a build with -DTRIALBOX_PHASES=ON (core/src/base/phase.h; configured by bench/phases.sh in BUILD-phases), one write(2) of a CLOCK_MONOTONIC timestamp each, in the trialbox process and in the keeper and bwrap's process before its exec; $n no-op Trials (\`run --harness shell --harness-bin /bin/true\`, $ROOT_SESSION) on tmpfs, each mark's median time from main() and, in brackets, the step from the mark before it (medians of different runs: the steps need not add up). What comes before main() (the loader) and after its return is not in it: see own work. With bwrap started early (these Trials: a session of trialbox's own user) no listing thread is started: this namespace's sockets are listed in line, the other namespaces' after bwrap's options are sent; a mark some Trials did not pass says in how many it was."
method "start-up gap: the same $n no-op Trials, each after a run of the floor (bench/floor.c --marks: the bwrap line of bench/noop-trial.sh's floor, \`--dry-run\`'s without the seccomp filter, $ROOT_SESSION; its marks in the same form at the same steps: main(), the keeper forked, each line bwrap writes on its status fd, which the floor then reads through a pipe, and the keeper reaped), both started by bench/stamp.c, which marks the spawn (before its fork) and the reaping (after its wait); each mark's median time from the spawn, floor / trialbox, the step from the mark before, and how much the step adds to the gap (medians of different runs: the steps need not add up). trialbox's build has its ~30 marks (a write(2) each), the floor its 6. The gap's steps say where trialbox's time beyond the floor's goes; the targets are judged on start-up's rows, without marks."
