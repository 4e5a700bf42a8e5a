#!/bin/sh
# A lever not built, measured: would starting bwrap before the launcher's
# own work hide that work? bwrap reads `--args FD` (its options, NUL-ended,
# from a pipe) before it makes anything of the sandbox, so a launcher could
# fork its keeper and start `bwrap --args FD -- COMMAND` first, do its work
# meanwhile, and send the options once it is done: bwrap's start (the
# keeper's fork, bwrap's exec and loader) would then overlap that work.
# The floor (bench/floor.c, on bench/noop-trial.sh's bwrap line) models it:
# --work US spins US microseconds before the fork (late, as trialbox does
# today), or with --early after the fork, before the options are sent. Per
# amount of work (EARLY_WORK, default "0 700 1400 2100" µs; trialbox's
# own work before its fork is about 1.4 ms, bench/phases.sh), EARLY_RUNS
# (default 100) runs of each, late and early alternating, each timed from
# its spawn to its reaping by bench/stamp.c; medians.
#
#   bench/early-start.sh       (EARLY_RUNS=100, EARLY_WORK="0 700 1400 2100")
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need python3 python3
floor_beside_trial
grep -q -- ' -- ' "$T/floor.args" || die "the --dry-run line has no -- before its command: --early needs one"
works=${EARLY_WORK:-0 700 1400 2100}
n=${EARLY_RUNS:-100} # with 60, one run's differences read up to 0.4 ms from the next's
say "early start: $n runs of the floor, late and early, for each of $works µs of work"
i=0
while [ "$i" -lt "$n" ]; do
        for w in $works; do
                # shellcheck disable=SC2046 # the line's words
                "$STAMP" "$T/late-$w-$i" "$FLOOR" --work "$w" $(cat "$T/floor.args") ||
                        die "the floor failed: $(head -c 300 "$T/late-$w-$i")"
                # shellcheck disable=SC2046 # the line's words
                "$STAMP" "$T/early-$w-$i" "$FLOOR" --work "$w" --early $(cat "$T/floor.args") ||
                        die "the floor --early failed: $(head -c 300 "$T/early-$w-$i")"
        done
        i=$((i + 1))
done
python3 - "$T" "$works" <<'PY'
import collections, glob, statistics, sys
T, works = sys.argv[1], [int(w) for w in sys.argv[2].split()]
at = collections.defaultdict(list)
for f in glob.glob(T + "/late-*") + glob.glob(T + "/early-*"):
    how, w, _ = f.rsplit("/", 1)[1].split("-")
    d = {l.split()[2]: int(l.split()[3]) for l in open(f) if l.startswith("PHASE 0 ")}
    if "spawn" in d and "reaped" in d:
        at[(how, int(w))].append((d["reaped"] - d["spawn"]) / 1000)
for w in works:
    late, early = statistics.median(at[("late", w)]), statistics.median(at[("early", w)])
    print("| early start | %.1f ms of launcher work: bwrap started after it / before it (--args), medians from the spawn | %.3f / %.3f ms (%+.3f ms) |  |  |"
          % (w / 1000, late, early, early - late))
PY
method "early start: the lever trialbox takes (supervisor_start_early: docs/sandbox.md), measured on the floor: bench/floor.c on bench/noop-trial.sh's bwrap line ($bare_line_words), with --work US (a spin on the CPU standing for the launcher's work) before the keeper's fork, or with --early after it, while the keeper's bwrap, started as \`bwrap --args FD -- COMMAND\`, waits for its options on the pipe FD; $n runs of each, alternating, each from its spawn to its reaping (bench/stamp.c), on tmpfs; medians. A negative difference is what starting bwrap first saves a launcher with that much work after its fork (trialbox's, from the keeper's start to its options sent: see start-up phases), on this machine's $(nproc) CPUs."
