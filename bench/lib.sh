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

# A scratch folder under /tmp (not in the repository: the output folder of a
# Trial must not be inside the repository it runs on), removed at exit.
scratch() {
        W=$(mktemp -d /tmp/trialbox-bench.XXXXXX)
        if [ "${KEEP:-0}" = 1 ]; then
                say "scratch folder kept: $W"
        else
                trap 'rm -rf "$W"' EXIT
        fi
        trap 'exit 129' HUP INT TERM PIPE # so that the EXIT trap runs
}

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
