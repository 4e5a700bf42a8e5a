#!/bin/sh
# trialbox's own work before it execs bwrap: `trialbox run --dry-run` does all
# of it (parse, load the one plugin, resolve the toolchains, run the plugin's
# hooks, render the bwrap line) and runs nothing. Counted in instructions by
# callgrind (the whole process, the dynamic loader included) with 1, 7 and 70
# plugins in the plugin folder (`run --harness shell` loads shell.so and no
# other, so the count must stay flat), and timed in wall time against
# /bin/true (the cost of starting any process), run by run in a random order
# (bench/interleave.c, built here).
#
#   bench/own-work.sh              (BUILD=folder, OWN_ROUNDS=400: runs of each)
#
# Needs valgrind (apt-get install -y valgrind) and cmake.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need valgrind valgrind
need callgrind_annotate valgrind
need_trialbox
scratch
mkdir "$W/repo"

# Plugin folders: shell.so alone; with the 6 other compiled plugins; with 69
# others (the real ones plus renamed copies of them and of the manifest: a
# renamed copy declares another name than its file's and would be refused if
# loaded, but nothing loads it).
others=""
for f in "$PLUGINS"/*.so "$PLUGINS"/*.json; do
        [ -e "$f" ] || continue
        [ "$(basename "$f")" = shell.so ] && continue
        others="$others $f"
done
make_folder() { # DIR COUNT-OF-OTHERS
        mkdir -m 0700 "$1"
        cp "$PLUGINS/shell.so" "$1/"
        n=0 k=0
        while [ "$n" -lt "$2" ]; do
                for f in $others; do
                        [ "$n" -lt "$2" ] || break
                        b=$(basename "$f")
                        ext=${b##*.}
                        if [ "$k" = 0 ]; then
                                [ "$ext" = so ] || continue # the 6: compiled plugins only
                                cp "$f" "$1/$b"
                        else
                                cp "$f" "$1/${b%.*}-copy$k.$ext"
                        fi
                        n=$((n + 1))
                done
                k=$((k + 1))
        done
}
make_folder "$W/p1" 0
make_folder "$W/p7" 6
make_folder "$W/p70" 69

dry() { # the dry run's command line
        echo "$TB run $ROOT_SESSION --harness shell --harness-bin /bin/true --repo $W/repo --output-dir $W/never --dry-run"
}

# callgrind N → "INSTRUCTIONS MAIN-INCLUSIVE" of a dry run with the folder of N plugins.
callgrind() {
        [ "$(ls "$W/p$1" | wc -l)" = "$1" ] || die "plugin folder p$1 holds $(ls "$W/p$1" | wc -l) files, not $1"
        # shellcheck disable=SC2046 # dry prints words to split
        TRIALBOX_PLUGIN_PATH="$W/p$1" valgrind --tool=callgrind --callgrind-out-file="$W/cg.$1" \
                $(dry) >"$W/dry.$1" 2>"$W/cg.$1.err" || die "callgrind run failed: $(tail -n 3 "$W/cg.$1.err")"
        grep -q 'bwrap .* -- ' "$W/dry.$1" || die "--dry-run printed no bwrap line with $1 plugins"
        ir=$(sed -n 's/^summary: *//p' "$W/cg.$1")
        # trialbox's own code: main() inclusive (needs the symbols, present unless stripped).
        main=$(callgrind_annotate --inclusive=yes "$W/cg.$1" 2>/dev/null |
                awk '/:main \[/ { gsub(",", "", $1); print $1; exit }')
        echo "$ir ${main:-}"
}

say "own work: callgrind, 1/7/70 plugins"
c1=$(callgrind 1)
c7=$(callgrind 7)
c70=$(callgrind 70)
ir1=${c1%% *} main1=${c1#* }
ir7=${c7%% *} main7=${c7#* }
ir70=${c70%% *} main70=${c70#* }

# Run by run, in a new random order each round (bench/interleave.c): the
# figure is a difference of two commands of about a millisecond, and with
# hyperfine's rounds (each command's runs one after another) a command's
# place in the round moved its median by up to 0.19 ms (the same dry run
# in four places, 120 runs each in 6 rounds). Own work is the median of the
# rounds' differences, dry run minus /bin/true, each pair run in the same
# round.
own_rounds=${OWN_ROUNDS:-400}
bench_driver interleave
say "own work: --dry-run with 1/7/70 plugins against /bin/true, $own_rounds rounds in random order"
"$BUILD/bench/interleave" "$own_rounds" 5 \
        dry-run-1 "env TRIALBOX_PLUGIN_PATH=$W/p1 $(dry)" \
        dry-run-7 "env TRIALBOX_PLUGIN_PATH=$W/p7 $(dry)" \
        dry-run-70 "env TRIALBOX_PLUGIN_PATH=$W/p70 $(dry)" \
        env-true "env TRIALBOX_PLUGIN_PATH=$W/p1 /bin/true" >"$W/h.tsv" || die "bench/interleave failed"
d1=$(pool_median "$W/h.tsv" dry-run-1)
d7=$(pool_median "$W/h.tsv" dry-run-7)
d70=$(pool_median "$W/h.tsv" dry-run-70)
t=$(pool_median "$W/h.tsv" env-true)
# The median of dry-run-1 − env-true over the rounds (both run in each).
own=$(awk -F'\t' '$1 == "dry-run-1" { d[$3] = $2 } $1 == "env-true" { e[$3] = $2 }
        END { for (r in d) if (r in e) print (d[r] - e[r]) * 1000 }' "$W/h.tsv" | median3) ||
        die "no rounds with both a dry run and /bin/true"
flat=$(ratio "$ir70" "$ir1")

fmt() { # 1234567 → 1,234,567
        if [ -z "$1" ]; then echo "n/a"; else echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; fi
}
row "own work" "instructions, whole \`run --dry-run\` process, 1 / 7 / 70 plugins" \
        "$(fmt "$ir1") / $(fmt "$ir7") / $(fmt "$ir70")" "flat in the plugins" \
        "$(verdict_le "$flat" 1.01) (70 / 1 = ${flat}×)"
row "own work" "of which main() and below (trialbox's code, not the loader), 1 / 7 / 70 plugins" \
        "$(fmt "${main1:-}") / $(fmt "${main7:-}") / $(fmt "${main70:-}")" "" ""
row "own work" "\`run --dry-run\` wall time, median, 1 / 7 / 70 plugins" "$d1 / $d7 / $d70 ms" "" ""
row "own work" "\`/bin/true\` wall time, median (any process's start)" "$t ms" "" ""
row "own work" "own work in wall time: dry-run (1 plugin) − /bin/true" "$own ms" "< 1 ms" "$(verdict_le "$own" 0.999)"
method "own work: \`valgrind --tool=callgrind trialbox run --harness shell --harness-bin /bin/true --repo R --output-dir O --dry-run\` with TRIALBOX_PLUGIN_PATH a folder of 1 (shell.so), 7 (+ the 6 other compiled plugins) or 70 files (+ renamed copies of the plugins and of gemini.json); instructions (Ir) of the whole process, and main() inclusive from callgrind_annotate. Wall time: bench/interleave.c, $own_rounds rounds (OWN_ROUNDS; 5 more first, not kept), each running the same three dry runs and \`/bin/true\`, each started through env(1), once, in an order shuffled anew, from just before the fork to just after the wait; medians over all the runs, and own work as the median over the rounds of a round's dry run (1 plugin) minus its \`/bin/true\` (hyperfine's rounds, each command's runs one after another, moved the same dry run's median by up to 0.19 ms with its place in the round)."
