#!/bin/sh
# Two builds of trialbox side by side: how much a change saves. Each build is
# a build folder (or a copy of one: core/trialbox and plugins/*.so). In one
# hyperfine series without a shell, in rounds so that A and B alternate
# (lib.sh: hf_rounds):
#   - a no-op Trial (--harness shell --harness-bin /bin/true, a new output
#     folder each run) on tmpfs (TMPFS_DIR, default /dev/shm) and on a disk
#     (DISK_DIR, default bench/.cache);
#   - `run --dry-run` of the same Trial (trialbox's own work before bwrap).
# Prints the medians, B − A and B / A, and checks that both builds print the
# same --dry-run line (but for their folders).
#
#   bench/ab.sh BUILD_A BUILD_B     (AB_RUNS=60 per command, AB_ROUNDS=6;
#                                    AB_SKIP="disk dry": leave those out;
#                                    AB_RUN_ARGS="--memory 512M --pids 256
#                                    --cpus 1": more `run` options, for every
#                                    command of both builds; AB_REPO=DIR: a
#                                    copy of DIR, a git repository, is the
#                                    Trials' repository instead of an empty
#                                    folder)
#
# Used to measure each start-up change of docs/performance.md's notes: check
# out the commit before it, build it in one folder, the change in another.
# Needs hyperfine and jq.
[ $# = 2 ] || {
        echo "usage: bench/ab.sh BUILD_A BUILD_B" >&2
        exit 2
}
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need hyperfine hyperfine
need jq jq
for b in "$A" "$B"; do
        [ -x "$b/core/trialbox" ] && [ -e "$b/plugins/shell.so" ] || die "no trialbox and plugins in $b"
done
scratch_tmpfs
scratch_disk
if [ -n "${AB_REPO:-}" ]; then
        [ -d "$AB_REPO" ] || die "AB_REPO: no folder '$AB_REPO'"
        cp -a "$AB_REPO" "$T/repo" && cp -a "$AB_REPO" "$D/repo" || die "cannot copy '$AB_REPO'"
else
        mkdir "$T/repo" "$D/repo"
fi
skip=${AB_SKIP:-}

tb() { # BUILD FOLDER OUT [--dry-run]
        echo "env TRIALBOX_PLUGIN_PATH=$1/plugins $1/core/trialbox run $ROOT_SESSION -q --harness shell --harness-bin /bin/true --repo $2/repo --output-dir $2/$3 ${AB_RUN_ARGS:-} ${4:-}"
}
# The same line from both (their plugin folders aside).
$(tb "$A" "$T" same --dry-run) >"$T/dry.a" || die "A: --dry-run failed"
$(tb "$B" "$T" same --dry-run) >"$T/dry.b" || die "B: --dry-run failed"
if cmp -s "$T/dry.a" "$T/dry.b"; then
        same="identical --dry-run lines"
else
        same="the --dry-run lines differ: $(diff "$T/dry.a" "$T/dry.b" | head -c 400 | tr '\n|' '  ')"
fi

set -- \
        --prepare "rm -rf $T/out-a" -n tmpfs-a "$(tb "$A" "$T" out-a)" \
        --prepare "rm -rf $T/out-b" -n tmpfs-b "$(tb "$B" "$T" out-b)"
case " $skip " in *" disk "*) ;; *)
        set -- "$@" \
                --prepare "rm -rf $D/out-a" -n disk-a "$(tb "$A" "$D" out-a)" \
                --prepare "rm -rf $D/out-b" -n disk-b "$(tb "$B" "$D" out-b)"
        ;;
esac
case " $skip " in *" dry "*) ;; *)
        set -- "$@" \
                --prepare true -n dry-a "$(tb "$A" "$T" never --dry-run)" \
                --prepare true -n dry-b "$(tb "$B" "$T" never --dry-run)"
        ;;
esac
hf_rounds "$T/runs" "${AB_ROUNDS:-6}" "${AB_RUNS:-60}" "$@"

echo "A: $A"
echo "B: $B"
[ -z "${AB_RUN_ARGS:-}" ] || echo "run options of every command: $AB_RUN_ARGS"
[ -z "${AB_REPO:-}" ] || echo "the repository: a copy of $AB_REPO ($(find "$T/repo" | wc -l) entries)"
echo "$same; $(pool_count "$T/runs" tmpfs-a) runs of each, medians (fastest runs in brackets)"
printf '%-22s %10s %10s %10s %8s\n' figure A B "B - A" "B / A"
for k in tmpfs disk dry; do
        a=$(pool_median "$T/runs" "$k-a" 2>/dev/null) || continue
        b=$(pool_median "$T/runs" "$k-b")
        label=$(case $k in tmpfs) echo "no-op Trial, tmpfs" ;; disk) echo "no-op Trial, disk" ;; dry) echo "run --dry-run" ;; esac)
        printf '%-22s %10s %10s %10s %8s\n' "$label" "$a" "$b" "$(minus "$b" "$a")" "$(ratio "$b" "$a")"
        printf '%-22s %10s %10s %10s\n' "  (fastest)" "($(pool_min "$T/runs" "$k-a"))" "($(pool_min "$T/runs" "$k-b"))" \
                "($(minus "$(pool_min "$T/runs" "$k-b")" "$(pool_min "$T/runs" "$k-a")"))"
done
