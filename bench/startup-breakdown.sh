#!/bin/sh
# Where a no-op Trial's time goes beyond the bare bwrap command's: the
# syscalls only trialbox makes, timed by strace -T over many no-op Trials
# (the trialbox process only, not bwrap: -f is not used), per Trial:
#   - writing the records durably: the fdatasync of the `running` record and
#     of the final one, each before its rename (the folder is not synced), and
#     how many syncs of any kind a Trial makes (the records need two);
#   - making the output folder and the fresh home (mkdir);
#   - the forks and clones of trialbox's main thread (the keeper's holder
#     thread, the listing thread, any helper's);
# and how many syscalls the trialbox process makes in all (strace -c).
# strace -T adds a little to each call it times; these calls cost far more
# than that, so their durations stand. Compare with the start-up rows of
# bench/noop-trial.sh (and its libeatmydata row, fsync made a no-op). On a
# disk (DISK_DIR, default bench/.cache): on tmpfs a sync costs nothing.
#
#   bench/startup-breakdown.sh     (BREAKDOWN_RUNS=25)
#
# Needs strace (apt-get install -y strace).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need strace strace
need_trialbox
scratch_disk
W=$D
mkdir "$W/repo"
n=${BREAKDOWN_RUNS:-25}

say "start-up breakdown: $n no-op Trials under strace -T"
i=0
while [ "$i" -lt "$n" ]; do
        strace -T -e trace=fsync,fdatasync,sync,syncfs,sync_file_range,msync,mkdir,mkdirat,clone,clone3,fork,vfork -o "$W/st.$i" \
                "$TB" run $ROOT_SESSION -q --harness shell --harness-bin /bin/true --repo "$W/repo" --output-dir "$W/o$i" ||
                die "no-op Trial $i failed under strace"
        i=$((i + 1))
done
strace -c -o "$W/count" "$TB" run $ROOT_SESSION -q --harness shell --harness-bin /bin/true --repo "$W/repo" --output-dir "$W/oc" ||
        die "no-op Trial failed under strace -c"

# Per Trial: the first sync is the `running` record's, the last the final
# record's (when there are two); how many syncs in all.
for f in "$W"/st.*; do
        awk '
                { d = $0; sub(/.*</, "", d); sub(/>.*/, "", d); if (d !~ /^[0-9.]+$/) next
                  name = $0; sub(/\(.*/, "", name) }
                name ~ /sync/ { ns++; if (ns == 1) first = d; last = d }
                name ~ /mkdir/ { mk += d; nmk++ }
                name ~ /clone|fork/ { cl += d; ncl++ }
                END { printf "%.3f %.3f %d %.3f %d %.3f %d\n", first * 1000, (ns > 1 ? last : 0) * 1000, ns, mk * 1000, nmk, cl * 1000, ncl }' "$f"
done >"$W/per-trial"
col_median() { # COLUMN
        awk -v c="$1" '{ print $c }' "$W/per-trial" | sort -n | awk '{ v[NR] = $1 } END { m = v[int((NR + 1) / 2)]; print m }'
}
fs_run=$(col_median 1)
fs_final=$(col_median 2)
nsync=$(col_median 3)
nsync_max=$(awk '{ print $3 }' "$W/per-trial" | sort -n | tail -n 1)
mk=$(col_median 4)
nmk=$(col_median 5)
cl=$(col_median 6)
ncl=$(col_median 7)
total=$(awk '$NF == "total" { print $(NF - 2) }' "$W/count")
statlike=$(awk '$NF == "newfstatat" || $NF == "readlink" || $NF == "stat" || $NF == "lstat" || $NF == "access" { s += $4 } END { print s + 0 }' "$W/count")

row "start-up breakdown" "syncs a no-op Trial makes on disk ($(fs_type "$W")), median (most)" "$nsync ($nsync_max)" \
        "2: the two records', no more" "$(verdict_le "$nsync_max" 2)"
row "start-up breakdown" "fdatasync of the \`running\` record / of the final record, median per Trial" \
        "$fs_run / $fs_final ms" "" ""
row "start-up breakdown" "mkdir of the output folder and the fresh home ($nmk calls), median per Trial" "$mk ms" "" ""
row "start-up breakdown" "forks and clones of trialbox's main thread ($ncl: the threads that list the host's sockets and hold the keeper, any helper's), median per Trial" "$cl ms" "" ""
row "start-up breakdown" "syscalls of the trialbox process in a no-op Trial (of which stat/readlink/access: path lookups)" \
        "$total ($statlike)" "" ""
method "start-up breakdown: $n no-op Trials (\`trialbox run -q --harness shell --harness-bin /bin/true\`), with repository and output folder on $(fs_type "$W") (${DISK_DIR:-bench/.cache}), each under \`strace -T -e trace=fsync,fdatasync,sync_file_range,…,mkdir,clone,…\` (the trialbox process only); per Trial the syncs (the first is the \`running\` record's, the last the final record's), the sum of each other kind's durations, then the median over the Trials. One more under \`strace -c\` for the count of syscalls."
