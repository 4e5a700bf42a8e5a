#!/bin/sh
# A grader's copy-on-write layer on a large repository: what each layer
# (overlayfs, copy, and bwrap-overlay when a bubblewrap 0.11 is named) adds
# to a grade, measured as `trialbox grade -- -c true` on a repository of
# N files (default 100,000) against the same on a repository of one file;
# for the copy, its set-up and tear-down as trialbox logs them; and a
# grader's first `git status` through each layer against the same on the
# host. Also says which layer `auto` picks here.
#
#   bench/grade-layers.sh   (FILES=100000, RUNS=10; OVERLAY_BWRAP=/path/to/bwrap-0.11)
#
# The repository is made with git fast-import (python3) in a folder under
# /tmp (GRADE_BENCH_DIR to choose another filesystem).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need hyperfine hyperfine
need python3 python3
need git git
need_trialbox
scratch
FILES=${FILES:-100000}
RUNS=${GRADE_RUNS:-10}
if [ -n "${GRADE_BENCH_DIR:-}" ]; then
        rmdir "$W"
        W=$(mktemp -d "$GRADE_BENCH_DIR/trialbox-grade-bench.XXXXXX")
        [ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$W"' EXIT
fi

# make_repo DIR N: N files of one commit, 100 per folder, checked out, index fresh.
make_repo() {
        mkdir -p "$1" && git -C "$1" init -q
        python3 - "$2" <<'PY' | git -C "$1" fast-import --quiet
import sys
n = int(sys.argv[1]); w = sys.stdout.buffer.write
for i in range(n):
    data = (f"file {i}\n" + "x" * (i % 100) + "\n").encode()
    w(b"blob\nmark :%d\ndata %d\n" % (i + 1, len(data))); w(data); w(b"\n")
w(b"commit refs/heads/main\ncommitter B <b@b> 1700000000 +0000\ndata 4\nbig\n")
for i in range(n):
    d1, rest = divmod(i, 1000); d2, f = divmod(rest, 100)
    w(b"M 100644 :%d d%04d/s%02d/f%03d.txt\n" % (i + 1, d1, d2, f))
w(b"\n")
PY
        git -C "$1" symbolic-ref HEAD refs/heads/main
        git -C "$1" reset -q --hard main
        git -C "$1" status --short >/dev/null
}

say "making a repository of $FILES files in $W/big (a minute or two)"
make_repo "$W/big" "$FILES"
make_repo "$W/small" 1
for r in big small; do
        # shellcheck disable=SC2086 # ROOT_SESSION is empty or one option
        "$TB" run --harness shell --repo "$W/$r" --output-dir "$W/$r.trial" $ROOT_SESSION -q -- -c true ||
                die "the Trial on $r failed"
done

# grade_cmd REPO LAYER SCRIPT [ENV]: one `trialbox grade` line for hyperfine.
grade_cmd() {
        echo "${4:+$4 }$TB grade --trial-dir $W/$1.trial --repo $W/$1 --harness shell --layer $2 $ROOT_SESSION -q -- -c '$3'"
}

layers="overlayfs copy"
[ -n "${OVERLAY_BWRAP:-}" ] && layers="$layers bwrap-overlay"
auto=$("$TB" grade --trial-dir "$W/small.trial" --repo "$W/small" --harness shell $ROOT_SESSION --json -q -- -c true |
        python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["layer"])')
echo "| grade layer | auto picks here | $auto |  |  |"

for layer in $layers; do
        envp=""
        [ "$layer" = bwrap-overlay ] && envp="TRIALBOX_BWRAP=$OVERLAY_BWRAP"
        json="$W/$layer.json"
        hyperfine --style basic --runs "$RUNS" --warmup 1 --export-json "$json" \
                "$(grade_cmd small "$layer" true "$envp")" "$(grade_cmd big "$layer" true "$envp")" >&2
        python3 - "$json" "$layer" "$FILES" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
small, big = r[0]["median"] * 1e3, r[1]["median"] * 1e3
print(f"| grade layer | {sys.argv[2]}: no-op grade, {int(sys.argv[3]):,} files / 1 file, medians | "
      f"{big:.1f} / {small:.1f} ms (+{big - small:.1f} ms) |  |  |")
PY
done
echo "method: hyperfine, $RUNS runs after a warm-up, 'trialbox grade --layer L -- -c true' of a Trial on a repository of $FILES files and of 1 file; the difference is what the layer costs per grade"

# The copy's own set-up and tear-down, as trialbox times them (-v).
for i in 1 2 3; do
        "$TB" grade --trial-dir "$W/big.trial" --repo "$W/big" --harness shell --layer copy $ROOT_SESSION -v -- -c true 2>&1 |
                sed -n "s/.*copy of .* in \([0-9]*\) ms.*/setup \1/p; s/.*copy removed in \([0-9]*\) ms.*/teardown \1/p"
done >"$W/copy.txt"
python3 - "$W/copy.txt" "$FILES" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for kind in ("setup", "teardown"):
    v = [int(x[1]) for x in rows if x[0] == kind]
    if v:
        print(f"| grade layer | copy: {kind.replace('setup', 'set-up').replace('teardown', 'tear-down')} of "
              f"{int(sys.argv[2]):,} files, median of {len(v)} (min) | {statistics.median(v):.0f} ms ({min(v)} ms) |  |  |")
PY
echo "method: trialbox grade -v logs the copy (tree_clone_at: FICLONE where the filesystem can, else copy_file_range) and its removal (tree_remove_at); 3 grades"

# A grader's first walk: git status through each layer, against the host.
status='git status --short | wc -l >/dev/null'
json="$W/status.json"
set -- "sh -c 'cd $W/big && $status'"
for layer in $layers; do
        envp=""
        [ "$layer" = bwrap-overlay ] && envp="TRIALBOX_BWRAP=$OVERLAY_BWRAP"
        set -- "$@" "$(grade_cmd big "$layer" "$status" "$envp")"
done
hyperfine --style basic --runs "$RUNS" --warmup 1 --export-json "$json" "$@" >&2
python3 - "$json" "$layers" "$FILES" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
names = ["the host, no sandbox"] + sys.argv[2].split()
for name, x in zip(names, r):
    print(f"| grade layer | git status of {int(sys.argv[3]):,} files: {name}, median | {x['median'] * 1e3:.1f} ms |  |  |")
PY
echo "method: a grader running 'git status --short' in the Trial's repository through each layer (the whole grade), against git status on the host; the first walk of a fresh overlay looks every file up in both layers"
