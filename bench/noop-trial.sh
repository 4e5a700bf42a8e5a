#!/bin/sh
# Start-up: the wall time of a no-op Trial (--harness shell --harness-bin
# /bin/true, a new output folder each run) side by side, in one hyperfine run,
# with the bare bwrap command that --dry-run prints for it, /bin/true
# unsandboxed, and the peers a user would pick instead when they are installed:
# firejail and Anthropic's sandbox-runtime (srt). Medians and ratios to bare bwrap.
#
#   bench/noop-trial.sh            (BUILD=folder, RUNS=50, WARMUP=3)
#
# Needs hyperfine (apt-get install -y hyperfine). Optional peers:
#   firejail   apt-get install -y firejail
#   srt        npm package @anthropic-ai/sandbox-runtime (needs ripgrep and
#              socat: apt-get install -y ripgrep socat); installed by this
#              script into bench/.cache/srt when npm is there, or set SRT=path.
#   libeatmydata (apt-get install -y eatmydata): adds a diagnostic row, the
#              same Trial with fsync(2) made a no-op (LD_PRELOAD), which shows
#              what writing outcome.json durably costs.
RUNS=${RUNS:-50} # a no-op Trial takes ~15 ms: 50 runs are cheap and steady the medians
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need hyperfine hyperfine
need_trialbox
scratch
mkdir "$W/repo" "$W/peer-home"

# The bare command: what --dry-run prints, without --seccomp N (see bare_line),
# run against a home made beforehand.
bare_line "$W/bare.sh" --harness shell --harness-bin /bin/true --repo "$W/repo" --output-dir "$W/bare"
mkdir -p "$W/bare/home"

trial="$TB run $ROOT_SESSION -q --harness shell --harness-bin /bin/true --repo $W/repo --output-dir $W/out"
set -- \
        --prepare "rm -rf $W/out" -n trialbox "$trial" \
        --prepare true -n bare-bwrap "$(cat "$W/bare.sh")" \
        --prepare true -n true-unsandboxed /bin/true

# As root: the same Trial as a session user (--user nobody, the default way a
# root Trial runs), a diagnostic row: the user switch and the user namespace
# bwrap then makes, which the bare line (run as root) does not pay.
user_trial=""
if [ -n "$ROOT_SESSION" ] && id nobody >/dev/null 2>&1; then
        mkdir "$W/repo-nobody"
        chown nobody "$W/repo-nobody"
        chmod 0755 "$W"
        user_trial="$TB run -q --user nobody --harness shell --harness-bin /bin/true --repo $W/repo-nobody --output-dir $W/out-user"
        if $user_trial >"$W/user.err" 2>&1; then
                set -- "$@" --prepare "rm -rf $W/out-user" -n trialbox-user "$user_trial"
        else
                user_fail=$(head -c 300 "$W/user.err" | tr '\n|' '  ')
        fi
        rm -rf "$W/out-user"
fi

eatmydata=""
for f in /usr/lib/*/libeatmydata.so /usr/lib/libeatmydata.so; do
        [ -e "$f" ] && eatmydata=$f && break
done
if [ -n "$eatmydata" ]; then
        set -- "$@" --prepare "rm -rf $W/out" -n trialbox-no-fsync "LD_PRELOAD=$eatmydata $trial"
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
if [ -z "$srt" ] && command -v npm >/dev/null 2>&1; then
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
        if $srt_cmd >"$W/srt.err" 2>&1; then
                set -- "$@" --prepare true -n srt "$srt_cmd"
        else
                srt_fail=$(head -c 300 "$W/srt.err" | tr '\n|' '  ')
        fi
fi

say "start-up: hyperfine, $RUNS runs of each command"
hyperfine --warmup "$WARMUP" --runs "$RUNS" --export-csv "$W/h.csv" "$@" >&2

bare=$(hf_median "$W/h.csv" bare-bwrap)
t=$(hf_median "$W/h.csv" trialbox)
r=$(ratio "$t" "$bare")
v=$(verdict_le "$r" 1.10)
[ "$v" = met ] && [ "$(verdict_le "$r" 1.05)" = met ] && v="met (ideal ≤ 1.05× too)"
row start-up "no-op Trial, median" "$t ms" "" ""
row start-up "bare bwrap (its --dry-run line), median" "$bare ms" "" ""
rmin=$(ratio "$(hf_min "$W/h.csv" trialbox)" "$(hf_min "$W/h.csv" bare-bwrap)")
row start-up "no-op Trial / bare bwrap, medians (and of the fastest runs)" "$r× ($rmin×)" "≤ 1.10× (ideally 1.05×)" "$v"
tu=$(hf_median "$W/h.csv" true-unsandboxed)
row start-up "/bin/true unsandboxed, median (ratio to bare bwrap)" "$tu ms ($(ratio "$tu" "$bare")×)" "" ""
if [ -n "$user_trial" ] && [ -z "${user_fail:-}" ]; then
        tn=$(hf_median "$W/h.csv" trialbox-user)
        row start-up "diagnostic: no-op Trial as a session user (--user nobody), median (ratio)" \
                "$tn ms ($(ratio "$tn" "$bare")×)" "" ""
elif [ -n "$user_trial" ]; then
        row start-up "diagnostic: no-op Trial as --user nobody" "could not run: ${user_fail}" "" ""
fi
if [ -n "$eatmydata" ]; then
        nf=$(hf_median "$W/h.csv" trialbox-no-fsync)
        row start-up "diagnostic: no-op Trial with fsync a no-op (libeatmydata), median (ratio)" \
                "$nf ms ($(ratio "$nf" "$bare")×)" "" ""
        echo "note: start-up: with fsync made a no-op a no-op Trial is $(ratio "$nf" "$bare")× the bare bwrap command, against $r× with it: the difference is the fdatasync of outcome.json before its rename, kept on purpose (after a crash outcome.json is whole or absent, never empty). The rest of the gap is trialbox's own process (see own work) and its supervision of bwrap: the keeper's fork, the status and stderr pipes, writing the Outcome; the bare line pays an exec of env(1) that trialbox does not."
fi
if [ -n "$firejail_cmd" ] && [ -z "${firejail_fail:-}" ]; then
        f=$(hf_median "$W/h.csv" firejail)
        row start-up "firejail $(firejail --version | sed -n '1s/.*version //p'), median (ratio)" "$f ms ($(ratio "$f" "$bare")×)" "" ""
elif [ -n "$firejail_cmd" ]; then
        row start-up "firejail" "could not run: ${firejail_fail}" "" ""
else
        row start-up "firejail" "not installed (apt-get install -y firejail)" "" ""
fi
if [ -n "$srt_cmd" ] && [ -z "${srt_fail:-}" ]; then
        s=$(hf_median "$W/h.csv" srt)
        row start-up "srt $srt_version, median (ratio)" "$s ms ($(ratio "$s" "$bare")×)" "" ""
elif [ -n "$srt_cmd" ]; then
        row start-up "srt $srt_version" "could not run: ${srt_fail}" "" ""
else
        row start-up "srt" "not installed (npm and @anthropic-ai/sandbox-runtime needed)" "" ""
fi
method "start-up: one hyperfine run (--warmup $WARMUP --runs $RUNS, through its shell, whose start it subtracts) of: \`trialbox run -q --harness shell --harness-bin /bin/true --repo R --output-dir O\` with a new O each run (--prepare 'rm -rf O'); the \`env -i … bwrap … 3>/dev/null\` line that \`--dry-run\` prints for it, run against a home made beforehand, $bare_line_words;$([ -n "$user_trial" ] && echo " the same Trial with \`--user nobody\` (a repository owned by nobody) instead of \`--root-session\`;") \`/bin/true\`$([ -n "$eatmydata" ] && echo "; the same Trial with \`LD_PRELOAD=libeatmydata.so\` (fsync made a no-op)")$([ -n "$firejail_cmd" ] && echo "; \`firejail --quiet --noprofile --private=H --whitelist=R --read-only=/ --read-write=R --private-tmp /bin/true\` (mount and pid namespaces, private home, repository read-write, / read-only, private /tmp; run as $(id -un))")$([ -n "$srt_cmd" ] && echo "; \`srt --settings S /bin/true\` with S = {filesystem: {denyRead: [~], allowWrite: [R]}, network: {allowedDomains: []}} (bwrap with / read-only, no network but its host proxies, seccomp)"). Medians; ratios are to the bare bwrap median."
