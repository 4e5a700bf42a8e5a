#!/bin/sh
# Start-up: the wall time of a no-op Trial (--harness shell --harness-bin
# /bin/true, a new output folder each run) side by side with
#   - the bare bwrap command that --dry-run prints for it (started by the
#     floor driver's --exec: one small exec before bwrap's, no shell);
#   - the floor (bench/floor.c): a launcher that forks a subreaper keeper,
#     which starts the same bwrap line and reaps everything: the least a
#     launcher that keeps a sandbox can do;
#   - the same Trial with its repository and output folder on a disk;
#   - the same Trial from a build that links json-c, libffi and libseccomp
#     the other way than BUILD (BUILD static, the default: shared,
#     -DTRIALBOX_STATIC_DEPS=OFF, built here in OTHER_BUILD, default
#     BUILD-shared; BUILD shared: statically, ON, default BUILD-static;
#     OTHER=0: not), a diagnostic row;
#   - /bin/true unsandboxed, and the peers a user would pick instead when they
#     are installed: firejail and Anthropic's sandbox-runtime (srt).
# Repository, output folders and the bare line's home on tmpfs (TMPFS_DIR,
# default /dev/shm), but for the disk rows (DISK_DIR, default bench/.cache).
# The targets' three (bare bwrap, the floor, the Trial) run by run, in a new
# random order each round (bench/interleave.c, INTERLEAVE_ROUNDS, default
# 600). hyperfine runs each command's runs of a round one after another, and
# there a command's place moved its median (the floor in two places of one
# series: 7.194 and 7.337 ms; the Trial: 8.244 and 8.126 ms, 1.15x and
# 1.11x the floor beside it), and so does what ran just before it (in 600
# rounds of the three in a random order, by a driver that did not yet wait
# for what a command left running: a Trial after a Trial 6.614 ms, after
# the floor 6.896, after bare bwrap 6.871; the floor after itself 5.632,
# after the others 5.747 and 5.788): each more than the target's margin,
# and a series of one command's runs gives each its own best case.
# bench/interleave.c is a subreaper and waits, untimed, for what a command
# left running: a bare bwrap's sandbox (its pid 1) outlives it by some
# 0.3 ms while its namespaces are torn down, and a Trial right after it
# read 7.522 ms against 6.797 after the floor (300 rounds each), its
# listing of the host's sockets finding that dying sandbox's namespace.
# All but srt also in one hyperfine series without a shell, run in ROUNDS
# rounds so that the commands alternate (lib.sh: hf_rounds), for the other
# rows; medians over every run.
#
#   bench/noop-trial.sh            (BUILD=folder, RUNS=200 per command, ROUNDS=20,
#                                   INTERLEAVE_ROUNDS=600,
#                                   OTHER_BUILD=folder or OTHER=0)
#
# Needs hyperfine and jq (apt-get install -y hyperfine jq); builds the floor
# driver ($BUILD/bench/floor, -DTRIALBOX_BENCH=ON). Optional peers:
#   firejail   apt-get install -y firejail
#   srt        npm package @anthropic-ai/sandbox-runtime (needs ripgrep and
#              socat: apt-get install -y ripgrep socat); installed by this
#              script into bench/.cache/srt when npm is there (SRT_INSTALL=0:
#              not), or set SRT=path. It runs after the series, in one of
#              its own (SRT_RUNS=20).
#   libeatmydata (apt-get install -y eatmydata): adds a diagnostic pair, the
#              disk Trial with fsync(2) made a no-op (LD_PRELOAD) and without,
#              both started through env(1), which shows what writing the
#              records durably costs.
# A no-op Trial takes a few ms, so many runs are cheap: with 60 in 6 rounds,
# Trial / floor read from 1.20x to 1.32x across runs of builds less than
# 0.3 ms apart; with 200 in 20 rounds (about 100 s in all), two runs of one
# build read 1.23x and 1.25x.
RUNS=${RUNS:-200}
ROUNDS=${ROUNDS:-20}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need hyperfine hyperfine
need jq jq
need_trialbox
bench_driver floor
bench_driver interleave
FLOOR="$BUILD/bench/floor"
scratch_tmpfs
scratch_disk
W=$T
mkdir "$T/repo" "$T/peer-home" "$D/repo"

# The bare command: what --dry-run prints, without --seccomp N (see
# bare_line), run against a home made beforehand, by the floor's --exec; the
# floor runs the same line.
noop_floor_args
# shellcheck disable=SC2046 # the line's words
"$FLOOR" --exec $(cat "$T/floor.args") || die "the bare line failed: $FLOOR --exec $(cat "$T/floor.args")"
# shellcheck disable=SC2046 # the line's words
"$FLOOR" $(cat "$T/floor.args") || die "the floor failed: $FLOOR $(cat "$T/floor.args")"

trial="$TB run $ROOT_SESSION -q --harness shell --harness-bin /bin/true --repo $T/repo --output-dir $T/out"
disk_trial="$TB run $ROOT_SESSION -q --harness shell --harness-bin /bin/true --repo $D/repo --output-dir $D/out"
set -- \
        --prepare true -n bare-bwrap "$FLOOR --exec $(cat "$T/floor.args")" \
        --prepare true -n floor "$FLOOR $(cat "$T/floor.args")" \
        --prepare "rm -rf $T/out" -n trialbox "$trial" \
        --prepare "rm -rf $D/out" -n trialbox-disk "$disk_trial" \
        --prepare true -n true-unsandboxed /bin/true

# The same Trial from a build that links json-c, libffi and libseccomp the
# other way than BUILD (TRIALBOX_STATIC_DEPS: BUILD static, as a build from
# source is by default, beside one shared, -DTRIALBOX_STATIC_DEPS=OFF, as
# distribution packages are; BUILD shared, beside one static, ON; in
# OTHER_BUILD, default BUILD-shared or BUILD-static, configured and built
# here with BUILD's build type; its trialbox loads BUILD's plugins, as the
# Trial above does): a diagnostic row, what the option saves at each start
# (docs/hacking.md). OTHER=0: not.
other_trial=""
if [ "${OTHER:-1}" = 1 ]; then
        if ldd "$TB" 2>/dev/null | grep -q 'libjson-c'; then
                other_deps=ON other_name=static
                other_what="linked statically (TRIALBOX_STATIC_DEPS=ON), median (minus BUILD's, shared; ratio to the floor)"
        else
                other_deps=OFF other_name=shared
                other_what="shared (TRIALBOX_STATIC_DEPS=OFF, as distribution packages link them), median (minus BUILD's, static; ratio to the floor)"
        fi
        SB=${OTHER_BUILD:-$BUILD-$other_name}
        say "configuring and building $SB (-DTRIALBOX_STATIC_DEPS=$other_deps)"
        if sibling_build "$SB" "$T/other.err" trialbox -DTRIALBOX_STATIC_DEPS=$other_deps; then
                other_trial="$SB/core/trialbox run $ROOT_SESSION -q --harness shell --harness-bin /bin/true --repo $T/repo --output-dir $T/out-other"
                set -- "$@" --prepare "rm -rf $T/out-other" -n trialbox-other "$other_trial"
        else
                other_fail=$(grep -m1 -e 'Error' -e 'error' "$T/other.err" | head -c 300 | tr '|' ' ')
        fi
fi

# As root: the same Trial as a session user (--user nobody, the default way a
# root Trial runs), a diagnostic row: the user switch and the user namespace
# bwrap then makes, which the bare line (run as root) does not pay.
user_trial=""
if [ -n "$ROOT_SESSION" ] && id nobody >/dev/null 2>&1; then
        mkdir "$T/repo-nobody"
        chown nobody "$T/repo-nobody"
        chmod 0755 "$T"
        user_trial="$TB run -q --user nobody --harness shell --harness-bin /bin/true --repo $T/repo-nobody --output-dir $T/out-user"
        if $user_trial >"$T/user.err" 2>&1; then
                set -- "$@" --prepare "rm -rf $T/out-user" -n trialbox-user "$user_trial"
        else
                user_fail=$(head -c 300 "$T/user.err" | tr '\n|' '  ')
        fi
        rm -rf "$T/out-user"
fi

eatmydata=""
for f in /usr/lib/*/libeatmydata.so /usr/lib/libeatmydata.so; do
        [ -e "$f" ] && eatmydata=$f && break
done
if [ -n "$eatmydata" ]; then
        set -- "$@" --prepare "rm -rf $D/out" -n trialbox-disk-env "env $disk_trial" \
                --prepare "rm -rf $D/out" -n trialbox-disk-no-fsync "env LD_PRELOAD=$eatmydata $disk_trial"
fi

# firejail, configured like the Trial: its own mount and pid namespaces
# (always), a private home, the repository read-write, the rest of / read-only,
# a private /tmp. As root, firejail runs (it warns about /var/run/utmp without
# --quiet); --noprofile: no default profile, as trialbox applies no seccomp.
firejail_cmd=""
if command -v firejail >/dev/null 2>&1; then
        firejail_cmd="firejail --quiet --noprofile --private=$W/peer-home --whitelist=$W/repo --read-only=/ --read-write=$W/repo --private-tmp /bin/true"
        if $firejail_cmd >"$W/firejail.err" 2>&1; then
                set -- "$@" --prepare true -n firejail "$firejail_cmd"
        else
                firejail_fail=$(head -c 300 "$W/firejail.err" | tr '\n|' '  ')
        fi
fi

# srt: its defaults are a bwrap with no network (its proxies on the host), a
# read-only /, write access only where allowed: the repository; the real home
# hidden (denyRead ~), as a Trial hides it.
srt=${SRT:-}
if [ -z "$srt" ] && [ -x "$bench_root/bench/.cache/srt/node_modules/.bin/srt" ]; then
        srt="$bench_root/bench/.cache/srt/node_modules/.bin/srt"
fi
if [ -z "$srt" ] && [ "${SRT_INSTALL:-1}" = 1 ] && command -v npm >/dev/null 2>&1; then
        say "installing @anthropic-ai/sandbox-runtime into bench/.cache/srt (npm)"
        if npm install --silent --no-audit --no-fund --prefix "$bench_root/bench/.cache/srt" \
                "@anthropic-ai/sandbox-runtime@${SRT_VERSION:-latest}" >&2; then
                srt="$bench_root/bench/.cache/srt/node_modules/.bin/srt"
        fi
fi
srt_cmd=""
if [ -n "$srt" ]; then
        srt_version=$("$srt" --version 2>/dev/null || echo "?")
        printf '{"filesystem": {"denyRead": ["~"], "allowWrite": ["%s"], "denyWrite": []},\n "network": {"allowedDomains": [], "deniedDomains": []}}\n' \
                "$W/repo" >"$W/srt.json"
        srt_cmd="$srt --settings $W/srt.json /bin/true"
        if ! $srt_cmd >"$W/srt.err" 2>&1; then
                srt_fail=$(head -c 300 "$W/srt.err" | tr '\n|' '  ')
        fi
fi

say "start-up: hyperfine, $ROUNDS rounds, $RUNS runs of each command in all"
hf_rounds "$T/runs" "$ROUNDS" "$RUNS" "$@"
# srt after the series, in a series of its own: a run takes some 0.4 s, so
# in the series it took most of its time (80 of 100 s at 200 runs), for a
# figure compared at 50x.
SRT_RUNS=${SRT_RUNS:-20}
if [ -n "$srt_cmd" ] && [ -z "${srt_fail:-}" ]; then
        say "start-up: srt, $SRT_RUNS runs"
        hf_rounds "$T/srt.runs" 2 "$SRT_RUNS" --prepare true -n srt "$srt_cmd"
fi
runs=$(pool_count "$T/runs" trialbox)

# The targets' three, run by run in a new random order each round, each
# Trial a new output folder ({n}: the round's number), removed after.
IL_ROUNDS=${INTERLEAVE_ROUNDS:-600}
say "start-up: bare bwrap, the floor and the Trial, $IL_ROUNDS rounds in a random order each (bench/interleave)"
mkdir "$T/il"
# shellcheck disable=SC2046 # the line's words
"$BUILD/bench/interleave" "$IL_ROUNDS" 5 \
        bare-bwrap "$FLOOR --exec $(cat "$T/floor.args")" \
        floor "$FLOOR $(cat "$T/floor.args")" \
        trialbox "$TB run $ROOT_SESSION -q --harness shell --harness-bin /bin/true --repo $T/repo --output-dir $T/il/{n}" \
        >"$T/il.runs" || die "bench/interleave failed"
rm -rf "$T/il"
bare=$(pool_median "$T/il.runs" bare-bwrap)
fl=$(pool_median "$T/il.runs" floor)
t=$(pool_median "$T/il.runs" trialbox)
# The hyperfine series' own, for the rows judged beside its other commands.
hf_fl=$(pool_median "$T/runs" floor)
hf_t=$(pool_median "$T/runs" trialbox)
hf_bare=$(pool_median "$T/runs" bare-bwrap)
td=$(pool_median "$T/runs" trialbox-disk)
r_floor=$(ratio "$t" "$fl")
rmin_floor=$(ratio "$(pool_min "$T/il.runs" trialbox)" "$(pool_min "$T/il.runs" floor)")
row start-up "no-op Trial, tmpfs, median" "$t ms" "" ""
row start-up "the floor (bench/floor.c: a subreaper keeper that runs the bare line), median" "$fl ms" "" ""
row start-up "bare bwrap (its --dry-run line), median" "$bare ms" "" ""
row start-up "no-op Trial / the floor, tmpfs, medians (and of the fastest runs)" "$r_floor× ($rmin_floor×)" "≤ 1.15×" "$(verdict_le "$r_floor" 1.15)"
row start-up "the floor / bare bwrap, medians (what keeping a sandbox costs at least)" "$(ratio "$fl" "$bare")×" "" ""
r=$(ratio "$t" "$bare")
v=$(verdict_le "$r" 1.10)
[ "$v" = met ] && [ "$(verdict_le "$r" 1.05)" = met ] && v="met (ideal ≤ 1.05× too)"
rmin=$(ratio "$(pool_min "$T/il.runs" trialbox)" "$(pool_min "$T/il.runs" bare-bwrap)")
row start-up "no-op Trial / bare bwrap, medians (and of the fastest runs)" "$r× ($rmin×)" "≤ 1.10× (ideally 1.05×)" "$v"
row start-up "diagnostic: the same three in the hyperfine series (each command's runs of a round one after another): Trial / floor (Trial, floor, bare bwrap, medians)" \
        "$(ratio "$hf_t" "$hf_fl")× ($hf_t / $hf_fl / $hf_bare ms)" "" ""
row start-up "no-op Trial on disk ($(fs_type "$D")), median (ratio to the floor; to the tmpfs Trial; both in the hyperfine series)" \
        "$td ms ($(ratio "$td" "$hf_fl")×; $(signed_minus "$td" "$hf_t") ms)" "" ""
tu=$(pool_median "$T/runs" true-unsandboxed)
row start-up "/bin/true unsandboxed, median (ratio to bare bwrap)" "$tu ms ($(ratio "$tu" "$hf_bare")×)" "" ""
if [ -n "$user_trial" ] && [ -z "${user_fail:-}" ]; then
        tn=$(pool_median "$T/runs" trialbox-user)
        row start-up "diagnostic: no-op Trial as a session user (--user nobody), median (ratio to bare bwrap)" \
                "$tn ms ($(ratio "$tn" "$hf_bare")×)" "" ""
elif [ -n "$user_trial" ]; then
        row start-up "diagnostic: no-op Trial as --user nobody" "could not run: ${user_fail}" "" ""
fi
if [ -n "$other_trial" ]; then
        tst=$(pool_median "$T/runs" trialbox-other)
        row start-up "diagnostic: no-op Trial, json-c, libffi and libseccomp $other_what" \
                "$tst ms ($(signed_minus "$tst" "$hf_t") ms; $(ratio "$tst" "$hf_fl")×)" "" ""
elif [ -n "${other_fail:-}" ]; then
        row start-up "diagnostic: no-op Trial, TRIALBOX_STATIC_DEPS=$other_deps" "could not build: ${other_fail}" "" ""
fi
if [ -n "$eatmydata" ]; then
        te=$(pool_median "$T/runs" trialbox-disk-env)
        nf=$(pool_median "$T/runs" trialbox-disk-no-fsync)
        row start-up "diagnostic: disk Trial through env(1), with and without fsync (libeatmydata), medians" \
                "$te / $nf ms (the syncs: $(minus "$te" "$nf") ms)" "" ""
        note "start-up: on disk a no-op Trial syncs its two records (the \`running\` one and the final one: fdatasync before each rename, so that outcome.json is whole or absent after a crash, never empty); made a no-op with libeatmydata they cost $(minus "$te" "$nf") ms here. See start-up breakdown for each sync's own time."
fi
if [ -n "$firejail_cmd" ] && [ -z "${firejail_fail:-}" ]; then
        f=$(pool_median "$T/runs" firejail)
        row start-up "firejail $(firejail --version | sed -n '1s/.*version //p'), median (ratio to bare bwrap)" "$f ms ($(ratio "$f" "$hf_bare")×)" "" ""
elif [ -n "$firejail_cmd" ]; then
        row start-up "firejail" "could not run: ${firejail_fail}" "" ""
else
        row start-up "firejail" "not installed (apt-get install -y firejail)" "" ""
fi
if [ -n "$srt_cmd" ] && [ -z "${srt_fail:-}" ]; then
        s=$(pool_median "$T/srt.runs" srt)
        row start-up "srt $srt_version, median (ratio to bare bwrap)" "$s ms ($(ratio "$s" "$hf_bare")×)" "" ""
elif [ -n "$srt_cmd" ]; then
        row start-up "srt $srt_version" "could not run: ${srt_fail}" "" ""
else
        row start-up "srt" "not installed (npm and @anthropic-ai/sandbox-runtime needed)" "" ""
fi
method "start-up: the targets (no-op Trial / the floor, / bare bwrap) and the three rows before them: bench/interleave.c, $IL_ROUNDS rounds (INTERLEAVE_ROUNDS; 5 more first, not kept), each running bare bwrap, the floor and the Trial once, in an order shuffled anew, from just before the fork to just after the wait (then, untimed, whatever the command left running is waited for: a bare bwrap's sandbox outlives it while its namespaces are torn down), each Trial a new output folder; medians over all the runs (hyperfine runs each command's runs of a round one after another, and a command's place in the round moved its median by more than the target's margin: see the diagnostic row). The rest: one hyperfine series without a shell (-N), run in $ROUNDS rounds of $((RUNS / ROUNDS)) runs of each command (one warm-up run each per round) so that the commands alternate, $runs runs of each in all; medians over all of them. Repository, output folders and the bare line's home on $(fs_type "$T") (${TMPFS_DIR:-/dev/shm}); the disk rows on $(fs_type "$D") (${DISK_DIR:-bench/.cache}). Commands: \`trialbox run -q --harness shell --harness-bin /bin/true --repo R --output-dir O\` with a new O each run (--prepare 'rm -rf O'), and the same on the disk; the bare line: the \`env -i … bwrap …\` line that \`--dry-run\` prints for it, $bare_line_words, run against a home made beforehand by \`floor --exec NAME=VALUE… bwrap …\` (bench/floor.c: the environment of the line's words, fd 3 /dev/null, bwrap executed in place: the same one small exec before bwrap's that the floor pays, and no env(1) or shell); the floor: \`floor NAME=VALUE… bwrap …\`, which forks a keeper (PR_SET_CHILD_SUBREAPER) that forks and executes the same line and reaps every process that comes to it, and ends with bwrap's status;$([ -n "$other_trial" ] && echo " the tmpfs Trial from a build configured with \`-DTRIALBOX_STATIC_DEPS=$other_deps\` (in $SB, BUILD's build type; BUILD's plugins);")$([ -n "$user_trial" ] && echo " the tmpfs Trial with \`--user nobody\` (a repository owned by nobody) instead of \`--root-session\`;") \`/bin/true\`$([ -n "$eatmydata" ] && echo "; the disk Trial started by \`env\` and by \`env LD_PRELOAD=libeatmydata.so\` (fsync made a no-op)")$([ -n "$firejail_cmd" ] && echo "; \`firejail --quiet --noprofile --private=H --whitelist=R --read-only=/ --read-write=R --private-tmp /bin/true\` (mount and pid namespaces, private home, repository read-write, / read-only, private /tmp; run as $(id -un))")$([ -n "$srt_cmd" ] && echo "; \`srt --settings S /bin/true\` with S = {filesystem: {denyRead: [~], allowWrite: [R]}, network: {allowedDomains: []}} (bwrap with / read-only, no network but its host proxies, seccomp), after the series in one of its own, $SRT_RUNS runs in 2 rounds (SRT_RUNS: a run takes some 0.4 s)"). The target is the issue's: a no-op Trial at most 1.15× the floor on tmpfs, with every guarantee kept (the keeper, the records, the seccomp filter, the repository guard's snapshot)."
