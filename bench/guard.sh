#!/bin/sh
# The repository guard's cost as the worktree grows: a no-op Trial
# (--harness shell --harness-bin /bin/true, a new output folder each run) on
# an empty repository and on repositories of 100,000 and 1,000,000 files, side
# by side in one hyperfine series (rounds, lib.sh: hf_rounds), all on tmpfs.
# The guard snapshots .git's control files and walks the worktree before the
# session, and walks it again after (gitguard/): what a file more costs is
# the difference from the empty repository.
#
# Each repository: `git init`, then N empty files, 100 per folder
# (dNNNNN/fNN), added and committed (its index holds N entries); the empty
# one has one empty commit. Empty files: a million of them fit a tmpfs in
# about 1 GB (no data pages); what the guard does per file does not depend
# on its size.
#
#   bench/guard.sh       (BUILD=folder, GUARD_RUNS=12 per Trial, GUARD_ROUNDS=3,
#                         GUARD_BIG=1000000: 0 leaves the million out)
#
# Needs hyperfine, jq and git.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need hyperfine hyperfine
need jq jq
need git git
need_trialbox
scratch_tmpfs
runs=${GUARD_RUNS:-12}
rounds=${GUARD_ROUNDS:-3}
big=${GUARD_BIG:-1000000}
export HOME="$T" GIT_CONFIG_NOSYSTEM=1 # the repositories' git: nothing of the host's config

# make_repo DIR N: a committed repository of N empty files, 100 per folder.
make_repo() {
        git init -q "$1" || die "git init $1 failed"
        if [ "$2" -gt 0 ]; then
                (cd "$1" &&
                        awk -v n="$2" 'BEGIN { for (d = 0; d * 100 < n; d++) printf "d%05d\n", d }' | xargs mkdir &&
                        awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "d%05d/f%02d\n", i / 100, i % 100 }' |
                        xargs touch && git add -A) || die "cannot make the $2 files of $1"
        fi
        git -C "$1" -c user.name=bench -c user.email=bench@localhost commit -q --allow-empty -m files ||
                die "git commit in $1 failed"
        [ "$(find "$1" -path "$1/.git" -prune -o -type f -print | wc -l)" = "$2" ] || die "$1 does not hold $2 files"
}

# make_history DIR: a repository with history, as a working one has: 40
# commits, each changing the same 100 files (10 folders of 10), so that its
# .git holds thousands of loose objects in up to 256 objects/XX/ folders
# (what the guard walks of a git folder, before and after the session).
make_history() {
        git init -q "$1" || die "git init $1 failed"
        (cd "$1" && c=1 && while [ "$c" -le 40 ]; do
                awk -v c="$c" 'BEGIN { for (i = 0; i < 100; i++) { d = sprintf("d%02d", i / 10); system("mkdir -p " d);
                        printf "commit %d file %d\n", c, i > (d "/f" (i % 10)) } }' &&
                        git add -A && git -c user.name=bench -c user.email=bench@localhost commit -q -m "c$c" || exit 1
                c=$((c + 1))
        done) || die "cannot make the history of $1"
}

sizes="0 100000"
[ "$big" = 0 ] || sizes="$sizes $big"
say "guard: making a repository with history (40 commits of 100 files)"
make_history "$T/repo-history"
history_entries=$(find "$T/repo-history/.git" | wc -l)
history_objects=$(find "$T/repo-history/.git/objects" -type f | wc -l)
trial="$TB run $ROOT_SESSION -q --harness shell --harness-bin /bin/true --repo $T/repo-history --output-dir $T/out-history"
$trial || die "a no-op Trial on the repository with history failed (see $T/out-history/outcome.json)"
grep -q '"repo_guard":{"status":"restored"' "$T/out-history/outcome.json" ||
        die "the guard did not restore the repository with history: $(cat "$T/out-history/outcome.json")"
rm -rf "$T/out-history"
set -- --prepare "rm -rf $T/out-history" -n "history" "$trial"
for n in $sizes; do
        say "guard: making a repository of $n files"
        make_repo "$T/repo-$n" "$n"
        trial="$TB run $ROOT_SESSION -q --harness shell --harness-bin /bin/true --repo $T/repo-$n --output-dir $T/out-$n"
        $trial || die "a no-op Trial on the $n-file repository failed (see $T/out-$n/outcome.json)"
        grep -q '"repo_guard":{"status":"restored"' "$T/out-$n/outcome.json" ||
                die "the guard did not restore the $n-file repository: $(cat "$T/out-$n/outcome.json")"
        rm -rf "$T/out-$n"
        set -- "$@" --prepare "rm -rf $T/out-$n" -n "files-$n" "$trial"
done

say "guard: hyperfine, $rounds rounds, $runs runs of each Trial in all"
hf_rounds "$T/runs" "$rounds" "$runs" "$@"

fmt() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }
t0=$(pool_median "$T/runs" files-0)
row "repository guard" "no-op Trial, empty repository (one empty commit), tmpfs, median" "$t0 ms" "" ""
th=$(pool_median "$T/runs" history)
row "repository guard" "no-op Trial, repository with history ($history_objects loose objects, $(fmt "$history_entries") entries in .git), median (more than the empty one)" \
        "$th ms ($(signed_minus "$th" "$t0") ms)" "" ""
for n in $sizes; do
        [ "$n" != 0 ] || continue
        t=$(pool_median "$T/runs" "files-$n")
        d=$(minus "$t" "$t0")
        per=$(awk -v d="$d" -v n="$n" 'BEGIN { printf "%.2f", d * 1000 / n }')
        if [ "$n" = 100000 ]; then
                row "repository guard" "no-op Trial, $(fmt "$n")-file repository, median (more than the empty one; per file)" \
                        "$t ms (+$d ms; $per µs)" "≤ +150 ms" "$(verdict_le "$d" 150)"
        else
                row "repository guard" "no-op Trial, $(fmt "$n")-file repository, median (more than the empty one; per file)" \
                        "$t ms (+$d ms; $per µs)" "a figure: how the cost grows" "met (measured)"
        fi
done
method "repository guard: one hyperfine series without a shell (-N), in $rounds rounds ($(pool_count "$T/runs" files-0) runs of each Trial in all; medians), of \`trialbox run -q --harness shell --harness-bin /bin/true --repo R --output-dir O\` (a new O each run) where R is, on $(fs_type "$T") (${TMPFS_DIR:-/dev/shm}), a git repository with one empty commit, or one of $(for n in $sizes; do [ "$n" = 0 ] || fmt "$n"; done | paste -sd/ -) empty files, 100 per folder, added and committed, or one with history (40 commits, each changing the same 100 files in 10 folders: loose objects, as a working repository has between two \`git gc\`); each Trial checked to end with the guard's status \`restored\`. The difference from the empty repository is what the guard does per file (its walks of the worktree before and after the session, the index kept as data)."
