#!/bin/sh
# The wall time of a no-op Trial (--harness shell --harness-bin /bin/true)
# against the bare bwrap command that --dry-run prints for it, side by side
# in one hyperfine run (interleaving is hyperfine's: each command N times),
# reported as medians and their ratio. Needs hyperfine (apt-get install hyperfine).
set -eu
cd "$(dirname "$0")/.."
runs=${RUNS:-20}
tb="$PWD/build/core/trialbox"
[ -x "$tb" ] || { echo "bench: build first (./scripts/setup)" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "bench: install hyperfine (apt-get install hyperfine)" >&2; exit 2; }
export TRIALBOX_PLUGIN_PATH="$PWD/build/plugins"

w=$(mktemp -d /tmp/trialbox-bench.XXXXXX)
trap 'rm -rf "$w"' EXIT
mkdir "$w/repo"
# The bare command: what --dry-run prints, run against a home made beforehand.
"$tb" run --harness shell --harness-bin /bin/true --repo "$w/repo" --output-dir "$w/bare" --dry-run > "$w/bare.sh"
mkdir -p "$w/bare/home"

hyperfine --warmup 3 --runs "$runs" --export-json "$w/h.json" \
        --prepare "rm -rf $w/out" \
        -n trialbox "$tb run -q --harness shell --harness-bin /bin/true --repo $w/repo --output-dir $w/out" \
        --prepare "true" \
        -n bare-bwrap "$(cat "$w/bare.sh")" >/dev/null

# Medians in ms, in the order of the commands above.
medians=$(grep -o '"median": *[0-9.e+-]*' "$w/h.json" | sed 's/.*: *//')
t=$(echo "$medians" | sed -n 1p | awk '{printf "%.3f", $1 * 1000}')
b=$(echo "$medians" | sed -n 2p | awk '{printf "%.3f", $1 * 1000}')
echo "no-op Trial, median of $runs runs each: trialbox ${t} ms, bare bwrap ${b} ms, ratio $(awk -v t="$t" -v b="$b" 'BEGIN{printf "%.3f", t/b}')"
