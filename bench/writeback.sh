#!/bin/sh
# Login write-back latency: a codex Trial whose Harness (bench/writeback.c,
# mode `harness`) renames a new auth.json over $CODEX_HOME/auth.json N times,
# as Codex saves a refreshed login, each stamped with a sequence number and the
# time; on the host, the same program (mode `watch`) watches the host login
# file with inotify and records, for each sequence number that reaches it, the
# time it was seen minus the stamp. Median and p99 over the renames.
# A sequence number never seen was overtaken by the next rename before it
# was written back (the host file skips straight to the newer login).
#
#   bench/writeback.sh     (WB_RENAMES=500, WB_INTERVAL_MS=10)
#
# Needs the build (BUILD): the driver is built there with -DTRIALBOX_BENCH=ON
# (bench/CMakeLists.txt), configured so when it is not.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need_trialbox
bench_driver writeback
wb="$BUILD/bench/writeback"
scratch
n=${WB_RENAMES:-500}
gap=${WB_INTERVAL_MS:-10}
mkdir "$W/repo" "$W/codex-home"
printf '{"bench_seq": 0, "bench_ns": 0}\n' >"$W/codex-home/auth.json"
chmod 600 "$W/codex-home/auth.json"

say "write-back: $n renames, one every $gap ms"
"$wb" watch "$W/codex-home/auth.json" "$n" $((n * gap / 1000 + 60)) >"$W/watch.out" &
watcher=$!
i=0
until grep -q ready "$W/watch.out" 2>/dev/null; do
        i=$((i + 1))
        [ "$i" -lt 500 ] || die "the watcher did not start"
        sleep 0.01
done
status=0
CODEX_HOME="$W/codex-home" "$TB" run $ROOT_SESSION -q --harness codex --harness-bin "$wb" \
        --repo "$W/repo" --output-dir "$W/out" -- harness "$n" "$gap" || status=$?
wait "$watcher" || true
[ "$status" = 0 ] || die "the codex Trial ended with status $status: $(cat "$W/out/outcome.json" 2>/dev/null)"
cat "$W/watch.out" >&2

seen=$(awk '$1 == "seen" { print $2 }' "$W/watch.out")
med=$(awk '$1 == "median_ms" { print $2 }' "$W/watch.out")
p99=$(awk '$1 == "p99_ms" { print $2 }' "$W/watch.out")
max=$(awk '$1 == "max_ms" { print $2 }' "$W/watch.out")
final=$(sed -n 's/^{"bench_seq": \([0-9]*\),.*/\1/p' "$W/codex-home/auth.json")
row write-back "rename in the session → host file updated, median" "$med ms" "" ""
row write-back "same, p99 (max)" "$p99 ms ($max ms)" "p99 < 50 ms" "$(verdict_le "$p99" 49.999)"
row write-back "renames seen on the host (the rest overtaken by a newer one)" "$seen of $n; last: $final" \
        "the last one always" "$([ "$final" = "$n" ] && echo met || echo "not met")"
method "write-back: \`CODEX_HOME=H trialbox run --harness codex --harness-bin writeback --repo R --output-dir O -- harness $n $gap\`: bench/writeback.c, inside the session, writes \$CODEX_HOME/.auth-PID and renames it over \$CODEX_HOME/auth.json $n times, $gap ms apart, each stamped with its sequence number and clock_gettime(CLOCK_REALTIME); on the host the same program watches H/auth.json's folder with inotify (IN_MOVED_TO, IN_CLOSE_WRITE), reads the file at each event and records now − stamp for each new sequence number. Median and p99 (nearest rank) over those seen."
