# Shared by the bench/ scripts (sourced, POSIX sh). Each script prints its
# figures on stdout as markdown table rows
#   | area | figure | value | target | verdict |
# and one "method: …" line per figure group ("note: …" for remarks);
# hyperfine's own report and progress go to stderr. bench/report.sh collects
# them into docs/performance.md.
#
# Environment:
#   BUILD   the build folder (default: ./build of this checkout); a relative
#           path is taken from the folder you ran the script in
#   RUNS    hyperfine runs per command (default 30), WARMUP (default 3)
#   KEEP=1  keep the scratch folder (its path is printed on stderr)

set -eu
bench_caller_pwd=$PWD
bench_root=$(cd "$(dirname "$0")/.." && pwd)
case ${BUILD:-} in
"") BUILD="$bench_root/build" ;;
/*) ;;
*) BUILD="$bench_caller_pwd/$BUILD" ;;
esac
TB="$BUILD/core/trialbox"
PLUGINS="$BUILD/plugins"
RUNS=${RUNS:-30}
WARMUP=${WARMUP:-3}
cd "$bench_root"

# As root a Trial needs a session user (--user NAME, the repository's owner) or
# --root-session. The benches run their Trials with --root-session when root:
# the session then runs as root, as the bare --dry-run line does (that line has
# no user switch: trialbox switches the user itself before it execs bwrap).
# ROOT_SESSION is the option (empty when not root), ROOT_SESSION_JSON the same
# for a plan line ('"root_session":true,' or empty). Used unquoted on purpose.
# shellcheck disable=SC2034 # used by the scripts that source this file
if [ "$(id -u)" = 0 ]; then
        ROOT_SESSION=--root-session
        ROOT_SESSION_JSON='"root_session":true,'
else
        ROOT_SESSION=""
        ROOT_SESSION_JSON=""
fi

say() { echo "bench: $*" >&2; }
die() {
        say "$*"
        exit 2
}

# need COMMAND PACKAGE: fail with the install line when COMMAND is missing.
need() {
        command -v "$1" >/dev/null 2>&1 || die "needs $1: apt-get install -y $2"
}

need_trialbox() {
        [ -x "$TB" ] || die "no trialbox at $TB: build first (./scripts/setup, or set BUILD=folder)"
        [ -e "$PLUGINS/shell.so" ] || die "no plugins in $PLUGINS"
        export TRIALBOX_PLUGIN_PATH="$PLUGINS"
}

# bench_driver NAME: build bench/NAME.c's driver, $BUILD/bench/NAME (CMake,
# against the core's libraries, bench/CMakeLists.txt); BUILD is configured
# with -DTRIALBOX_BENCH=ON first when it is not yet (made when missing). Built
# on every run, as make does: a changed driver or core is rebuilt.
bench_driver() {
        need cmake cmake
        if ! grep -qx 'TRIALBOX_BENCH:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
                say "configuring $BUILD with -DTRIALBOX_BENCH=ON"
                cmake -S "$bench_root" -B "$BUILD" -DTRIALBOX_BENCH=ON >/dev/null ||
                        die "cannot configure $BUILD with -DTRIALBOX_BENCH=ON"
        fi
        cmake --build "$BUILD" --target "$1" -j"$(nproc)" >/dev/null ||
                die "cannot build bench/$1.c: cmake --build $BUILD --target $1"
        [ -x "$BUILD/bench/$1" ] || die "no $BUILD/bench/$1 after building it"
}

# sibling_build DIR LOG "TARGET..." OPTION...: configure DIR from this
# checkout as a build beside BUILD (BUILD's build type, no tests, and the
# -DNAME=VALUE OPTIONs) and build TARGETs in it; cmake's output into LOG.
# Fails as cmake does: the caller says what then.
sibling_build() {
        sb_dir=$1 sb_log=$2 sb_targets=$3
        shift 3
        need cmake cmake
        sb_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
        cmake -S "$bench_root" -B "$sb_dir" -DCMAKE_BUILD_TYPE="${sb_type:-RelWithDebInfo}" -DTRIALBOX_TESTS=OFF "$@" \
                >"$sb_log" 2>&1 || return
        # shellcheck disable=SC2086 # the targets' words
        cmake --build "$sb_dir" --target $sb_targets -j"$(nproc)" >>"$sb_log" 2>&1
}

# A scratch folder under /tmp (not in the repository: the output folder of a
# Trial must not be inside the repository it runs on), removed at exit.
scratch() {
        scratch_in /tmp
        W=$scratch_made
}

# scratch_in FOLDER: one more scratch folder, made under FOLDER, its path in
# $scratch_made; removed at exit with the others (unless KEEP=1).
bench_scratch_dirs=""
bench_cleanup() {
        [ "${KEEP:-0}" = 1 ] && return 0
        for d in $bench_scratch_dirs; do
                rm -rf "$d"
        done
}
scratch_in() {
        scratch_made=$(mktemp -d "$1/trialbox-bench.XXXXXX") || die "cannot make a scratch folder in $1"
        bench_scratch_dirs="$bench_scratch_dirs $scratch_made"
        [ "${KEEP:-0}" != 1 ] || say "scratch folder kept: $scratch_made"
        trap bench_cleanup EXIT
        trap 'exit 129' HUP INT TERM PIPE # so that the EXIT trap runs
}

# The filesystem type of FOLDER (tmpfs, ext4, ...).
fs_type() { df -T "$1" 2>/dev/null | awk 'NR == 2 { print $2 }'; }

# A tmpfs folder for the figures the issue asks on tmpfs (TMPFS_DIR, by
# default /dev/shm) and one on disk (DISK_DIR, by default bench/.cache of
# this checkout): made by scratch_tmpfs and scratch_disk into $T and $D.
scratch_tmpfs() {
        scratch_in "${TMPFS_DIR:-/dev/shm}"
        T=$scratch_made
        [ "$(fs_type "$T")" = tmpfs ] || say "warning: $T is on $(fs_type "$T"), not tmpfs (set TMPFS_DIR)"
}
scratch_disk() {
        mkdir -p "$bench_root/bench/.cache"
        scratch_in "${DISK_DIR:-$bench_root/bench/.cache}"
        D=$scratch_made
        [ "$(fs_type "$D")" != tmpfs ] || say "warning: $D is on tmpfs, not a disk (set DISK_DIR)"
}

# hf_rounds OUT ROUNDS RUNS HYPERFINE-ARGS...: the same hyperfine series,
# without a shell (-N), run ROUNDS times (each with RUNS / ROUNDS runs of
# every command, one warm-up run each), so that the commands alternate
# round by round and a slow spell of the machine falls on all of them
# alike; every run's time is kept in OUT, one "NAME<TAB>SECONDS" line each.
hf_rounds() {
        hf_out=$1 hf_n=$2 hf_runs=$3
        shift 3
        hf_per=$(((hf_runs + hf_n - 1) / hf_n))
        [ "$hf_per" -ge 2 ] || hf_per=2
        : >"$hf_out"
        hf_i=0
        while [ "$hf_i" -lt "$hf_n" ]; do
                say "round $((hf_i + 1)) of $hf_n"
                hyperfine -N --warmup 1 --runs "$hf_per" --export-json "$hf_out.json" "$@" >&2 ||
                        die "hyperfine failed (round $((hf_i + 1)))"
                jq -r '.results[] | .command as $c | .times[] | "\($c)\t\(.)"' "$hf_out.json" >>"$hf_out"
                hf_i=$((hf_i + 1))
        done
        rm -f "$hf_out.json"
}

# The median of the numbers on stdin, one a line, with 3 decimals (the mean
# of the middle two when they are even); fails when there are none.
median3() {
        sort -g | awk '{ v[NR] = $1 } END { if (!NR) exit 1; printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The median (and the fastest) of NAME's runs in an hf_rounds file, in ms.
pool_median() { # FILE NAME
        awk -F'\t' -v n="$2" '$1 == n { print $2 * 1000 }' "$1" | median3
}
pool_min() { # FILE NAME
        awk -F'\t' -v n="$2" '$1 == n { print $2 * 1000 }' "$1" | sort -g | awk 'NR == 1 { printf "%.3f", $1 } END { if (!NR) exit 1 }'
}
pool_count() { # FILE NAME
        awk -F'\t' -v n="$2" '$1 == n { k++ } END { print k + 0 }' "$1"
}

# a - b with 3 decimals.
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
# The same with its sign always written: +0.250, -0.125.
signed_minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.3f", a - b }'; }

# floor_line FILE DRY-RUN-LINE-FILE: the --dry-run line (without --seccomp,
# see bare_line) as the floor driver's arguments: its `env -i` and its
# `3>/dev/null` dropped (the floor makes the environment of the NAME=VALUE
# words and opens fd 3 itself), so that hyperfine runs it without a shell.
floor_line() {
        sed -e 's/^env -i //' -e 's| 3>/dev/null$||' "$2" >"$1"
        ! grep -q -e '3>' -e '^env ' "$1" || die "could not make the --dry-run line the floor's arguments"
}

# noop_floor_args: in the scratch folder $T (scratch_tmpfs), the repository
# $T/repo and the floor's arguments $T/floor.args for a no-op Trial
# (--harness shell --harness-bin /bin/true): bare_line's line ($T/bare.sh)
# as floor_line makes it, against the home $T/bare/home, made here. The
# floor's line of bench/noop-trial.sh, bench/phases.sh, bench/early-start.sh.
noop_floor_args() {
        mkdir -p "$T/repo"
        bare_line "$T/bare.sh" --harness shell --harness-bin /bin/true --repo "$T/repo" --output-dir "$T/bare"
        mkdir -p "$T/bare/home"
        floor_line "$T/floor.args" "$T/bare.sh"
}

# floor_beside_trial: for the scripts that time the floor beside (or in
# place of) a no-op Trial, each run from its spawn (bench/phases.sh,
# bench/early-start.sh): trialbox checked, the floor and stamp drivers built
# ($FLOOR, $STAMP), a tmpfs scratch folder $T with noop_floor_args's files.
floor_beside_trial() {
        need_trialbox
        bench_driver floor
        bench_driver stamp
        FLOOR="$BUILD/bench/floor"
        STAMP="$BUILD/bench/stamp"
        scratch_tmpfs
        noop_floor_args
}

# bare_line FILE RUN-ARGS...: the bwrap line that `trialbox run RUN-ARGS
# --dry-run` prints (with $ROOT_SESSION), made runnable alone, into FILE: its
# `--seccomp N` names the fd of the seccomp filter, which only a running
# trialbox holds, so it is dropped: the bare line runs WITHOUT the seccomp
# filter. The caller makes the home the line names (OUTPUT-DIR/home).
bare_line() {
        bare_line_file=$1
        shift
        # shellcheck disable=SC2086 # ROOT_SESSION: an option or nothing
        "$TB" run $ROOT_SESSION --dry-run "$@" >"$bare_line_file" ||
                die "trialbox run --dry-run $* failed"
        sed -i 's/ --seccomp [0-9][0-9]*//' "$bare_line_file"
        ! grep -q -- '--seccomp' "$bare_line_file" || die "could not drop --seccomp from the --dry-run line"
}
# The words for method texts.
# shellcheck disable=SC2034 # used by the scripts that source this file
bare_line_words="without the seccomp filter (its \`--seccomp FD\` names an fd only a running trialbox holds)$([ -n "$ROOT_SESSION" ] && echo "; as root the Trials run with \`--root-session\`, as the bare line, which has no user switch, runs as root")"

# The median of the command named NAME in a hyperfine CSV export, in ms.
# (Names must not contain commas or quotes.)
hf_median() { # CSV NAME
        awk -F, -v n="$2" 'NR > 1 && $1 == n { printf "%.3f", $4 * 1000; found = 1 } END { exit !found }' "$1"
}

# The fastest run of NAME, in ms (less sensitive than the median to other work on the machine).
hf_min() { # CSV NAME
        awk -F, -v n="$2" 'NR > 1 && $1 == n { printf "%.3f", $7 * 1000; found = 1 } END { exit !found }' "$1"
}

# a / b with 2 decimals; "n/a" when either is missing.
ratio() {
        awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.2f", a / b }'
}

# Is A <= B (numbers)? Prints "met" or "not met".
verdict_le() {
        awk -v a="$1" -v b="$2" 'BEGIN { print (a != "" && a != "n/a" && a + 0 <= b + 0) ? "met" : "not met" }'
}

row() { # area figure value target verdict
        printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "$5"
}
method() { printf 'method: %s\n' "$*"; }
note() { printf 'note: %s\n' "$*"; }
