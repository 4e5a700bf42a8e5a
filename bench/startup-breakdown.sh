#!/bin/sh
# Where a no-op Trial's time goes beyond the bare bwrap command's: the
# syscalls only trialbox makes, timed by strace -T over many no-op Trials
# (the trialbox process only, not bwrap: -f is not used), per Trial:
#   - writing outcome.json durably: fdatasync of the file (its folder is not synced);
#   - making the output folder and the fresh home (mkdir);
#   - fork (clone) of trialbox before it execs bwrap;
# and how many syscalls the trialbox process makes in all (strace -c).
# strace -T adds a little to each call it times; these calls cost far more
# than that, so their durations stand. Compare with the start-up rows of
# bench/noop-trial.sh (and its libeatmydata row, fsync made a no-op).
#
#   bench/startup-breakdown.sh     (BREAKDOWN_RUNS=25)
#
# Needs strace (apt-get install -y strace).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need strace strace
need_trialbox
scratch
mkdir "$W/repo"
n=${BREAKDOWN_RUNS:-25}

say "start-up breakdown: $n no-op Trials under strace -T"
i=0
while [ "$i" -lt "$n" ]; do
        strace -T -e trace=fsync,fdatasync,mkdir,mkdirat,clone,clone3,fork,vfork -o "$W/st.$i" \
                "$TB" run $ROOT_SESSION -q --harness shell --harness-bin /bin/true --repo "$W/repo" --output-dir "$W/o$i" ||
                die "no-op Trial $i failed under strace"
        i=$((i + 1))
done
strace -c -o "$W/count" "$TB" run $ROOT_SESSION -q --harness shell --harness-bin /bin/true --repo "$W/repo" --output-dir "$W/oc" ||
        die "no-op Trial failed under strace -c"

# Per Trial: the sum of each kind's durations (ms); the first fsync is the
# file's (written before the rename), the second its folder's.
for f in "$W"/st.*; do
        awk '
                { d = $0; sub(/.*</, "", d); sub(/>.*/, "", d); if (d !~ /^[0-9.]+$/) next
                  name = $0; sub(/\(.*/, "", name) }
                name ~ /sync/ { k++; if (k == 1) file += d; else dir += d }
                name ~ /mkdir/ { mk += d; nmk++ }
                name ~ /clone|fork/ { cl += d }
                END { printf "%.3f %.3f %.3f %d %.3f\n", file * 1000, dir * 1000, mk * 1000, nmk, cl * 1000 }' "$f"
done >"$W/per-trial"
col_median() { # COLUMN
        awk -v c="$1" '{ print $c }' "$W/per-trial" | sort -n | awk '{ v[NR] = $1 } END { m = v[int((NR + 1) / 2)]; print m }'
}
fsf=$(col_median 1)
fsd=$(col_median 2)
mk=$(col_median 3)
nmk=$(col_median 4)
cl=$(col_median 5)
total=$(awk '$NF == "total" { print $(NF - 2) }' "$W/count")
statlike=$(awk '$NF == "newfstatat" || $NF == "readlink" || $NF == "stat" || $NF == "lstat" || $NF == "access" { s += $4 } END { print s + 0 }' "$W/count")

row "start-up breakdown" "sync of outcome.json: fdatasync of the file + fsync of its folder (none now), median per Trial" \
        "$(awk -v a="$fsf" -v b="$fsd" 'BEGIN { printf "%.2f ms (%.2f + %.2f)", a + b, a, b }')" "" ""
row "start-up breakdown" "mkdir of the output folder and the fresh home ($nmk calls), median per Trial" "$mk ms" "" ""
row "start-up breakdown" "fork of trialbox before it execs bwrap, median" "$cl ms" "" ""
row "start-up breakdown" "syscalls of the trialbox process in a no-op Trial (of which stat/readlink/access: path lookups)" \
        "$total ($statlike)" "" ""
method "start-up breakdown: $n no-op Trials (\`trialbox run -q --harness shell --harness-bin /bin/true\`), each under \`strace -T -e trace=fsync,mkdir,clone,…\` (the trialbox process only); per Trial the sum of each kind's durations, then the median over the Trials. One more under \`strace -c\` for the count of syscalls."
