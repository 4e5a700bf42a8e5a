# bash completion for trialbox
# (tests/unit/test_help.c checks its commands and options against trialbox's table)
_trialbox_harnesses()
{
        trialbox harnesses 2>/dev/null | awk '{print $1}'
}

_trialbox()
{
        local cur prev cmd
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        cmd=${COMP_WORDS[1]}
        if [ "$COMP_CWORD" -eq 1 ]; then
                COMPREPLY=($(compgen -W "run plan batch grade report harnesses check credentials help --help --version" -- "$cur"))
                return
        fi
        case "$prev" in
        --harness)
                COMPREPLY=($(compgen -W "$(_trialbox_harnesses)" -- "$cur"))
                return ;;
        --repo|--output-dir|--skills|--trial-dir|--files)
                COMPREPLY=($(compgen -d -- "$cur"))
                return ;;
        --network)
                COMPREPLY=($(compgen -W "host none allow" -- "$cur"))
                return ;;
        --layer)
                COMPREPLY=($(compgen -W "auto bwrap-overlay overlayfs copy" -- "$cur"))
                return ;;
        --allow-host|--user|--slurm-args|--env)
                return ;;
        --harness-bin|--credentials|--prices|--html|-o|--output|--env-file)
                COMPREPLY=($(compgen -f -- "$cur"))
                return ;;
        --by)
                COMPREPLY=($(compgen -W "harness arm task arm,task" -- "$cur"))
                return ;;
        --timeout|--kill-after|--memory|--pids|--cpus|--jobs|--retries|--index)
                return ;; # a value of the user's: nothing to offer
        esac
        case "$cmd" in
        run)
                COMPREPLY=($(compgen -W "--harness --repo --output-dir --harness-bin --skills --credentials
                        --no-sandbox --dry-run --json -v -q --help --timeout --kill-after --memory --pids
                        --cpus --network --allow-host --no-harness-endpoints --env-file --user --root-session
                        --keep-control-files --" -- "$cur")) ;;
        plan)
                COMPREPLY=($(compgen -f -W "-o --output --help" -- "$cur")) ;;
        grade)
                COMPREPLY=($(compgen -W "--trial-dir --repo --harness --files --harness-bin --credentials --env --env-file
                        --network --allow-host --layer --user --root-session --json -v -q --help --timeout
                        --kill-after --memory --pids --cpus --" -- "$cur")) ;;
        batch)
                COMPREPLY=($(compgen -f -W "--jobs --retries --index --slurm --slurm-args --no-wait --grade-only
                        --check --rerun-changed --json -v -q --help" -- "$cur")) ;;
        report)
                COMPREPLY=($(compgen -f -W "--by --prices --html --json --csv --help" -- "$cur")) ;;
        harnesses)
                COMPREPLY=($(compgen -W "--json -v -q --help" -- "$cur")) ;;
        check)
                COMPREPLY=($(compgen -W "--harness --json -v -q --help" -- "$cur")) ;;
        credentials)
                COMPREPLY=($(compgen -W "set unset list --credentials --help" -- "$cur")) ;;
        help)
                COMPREPLY=($(compgen -W "run plan batch grade report harnesses check credentials help --help" -- "$cur")) ;;
        esac
}
complete -F _trialbox trialbox
