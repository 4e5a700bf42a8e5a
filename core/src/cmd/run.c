/* `trialbox run`: its command line, then trial/trial.h's trial_run. */
#include <stddef.h>
#include <string.h>

#include "base/env.h"
#include "base/log.h"
#include "cmd/cli.h"
#include "cmd/exit.h"
#include "cmd/options.h"
#include "network/netpolicy.h"
#include "trial/trial.h"

/* What the parse loop fills: the Trial's options and what is checked once
 * every option is read. */
struct run_args {
        struct trial_options opt;
        const char *network;
        int v, q;
        bool kill_after;
};

/* --timeout, --kill-after, --memory, --pids, --cpus: trial_limits_set() reads them. */
static int take_limit(const struct cli_command *cmd, const struct cli_option *o, const char *value, void *args)
{
        struct run_args *a = args;
        struct tb_error err = { 0 };
        char name[64];
        if (trial_limits_set(&a->opt.limits, cli_option_name(o, name, sizeof name), value, &err) < 0)
                return cli_usage_error(cmd->name, "%s", err.msg);
        if (strcmp(o->name, "kill-after") == 0)
                a->kill_after = true;
        return 0;
}

static int take_allow_host(const struct cli_command *cmd, const struct cli_option *o, const char *value, void *args)
{
        struct run_args *a = args;
        (void)o;
        if (a->opt.n_allow_hosts == TRIAL_MAX_ALLOW_HOSTS)
                return cli_usage_error(cmd->name, "--allow-host is given more than %d times", TRIAL_MAX_ALLOW_HOSTS);
        a->opt.allow_hosts[a->opt.n_allow_hosts++] = value;
        return 0;
}

#define OPT(field) offsetof(struct run_args, opt.field)
#define STRING_ONCE(long_name, meta, field, text)                                                                 \
        { .kind = CLI_STRING, .name = (long_name), .metavar = (meta), .flags = CLI_ONCE | CLI_NONEMPTY,          \
          .offset = OPT(field), .help = (text) }
#define LIMIT(long_name, meta, text)                                                                              \
        { .kind = CLI_CALL, .name = (long_name), .metavar = (meta), .flags = CLI_ONCE, .call = take_limit,      \
          .help = (text) }

static const struct cli_option run_options[] = {
        { .kind = CLI_HEADING, .help = "options:" },
        STRING_ONCE("harness", "NAME", harness, "the Harness (its plugin NAME.so; see 'trialbox harnesses')"),
        STRING_ONCE("repo", "DIR", repo, "the prepared repository, read-write, the session's folder"),
        STRING_ONCE("output-dir", "DIR", output_dir, "a new folder for this Trial (fresh home, outcome.json)"),
        STRING_ONCE("harness-bin", "PATH", harness_bin, "the Harness binary (default: the plugin's, on PATH)"),
        STRING_ONCE("skills", "DIR", skills, "a skills folder, read-only at its own path"),
        STRING_ONCE("credentials", "FILE", credentials,
                    "the Credentials file (default ~/.config/trialbox/credentials.json)"),
        { .kind = CLI_FLAG, .name = "no-sandbox", .offset = OPT(no_sandbox),
          .help = "run unsandboxed, in the real home (also TRIALBOX_NO_SANDBOX=1)" },
        { .kind = CLI_FLAG, .name = "dry-run", .offset = OPT(dry_run),
          .help = "print the bwrap command line (secrets redacted); run nothing" },
        { .kind = CLI_STRING, .name = "network", .metavar = "MODE", .flags = CLI_ONCE | CLI_NONEMPTY,
          .offset = offsetof(struct run_args, network),
          .help = "allow: only the Harness's endpoints and --allow-host, through\n"
                  "trialbox's proxy (HTTP_PROXY...), recorded in network.jsonl;\n"
                  "none: loopback only; host: the host's network (explicit only).\n"
                  "Default: allow if the Harness declares endpoints, else none" },
        { .kind = CLI_CALL, .name = "allow-host", .metavar = "PATTERN", .call = take_allow_host,
          .help = "also allow host[:port], *.domain[:port], an IP or [IPv6];\n"
                  "a host loopback port by name: 127.0.0.1:8000, localhost:8000\n"
                  "(repeatable; implies --network allow)" },
        { .kind = CLI_FLAG, .name = "no-harness-endpoints", .offset = OPT(no_harness_endpoints),
          .help = "under allow, not the Harness's own endpoints: only --allow-host\n"
                  "(implies --network allow)" },
        STRING_ONCE("env-file", "FILE", env_file,
                    "the session's own variables: one JSON object {\"NAME\": \"value\"}\n"
                    "(not HOME, PATH, TRIALBOX_*, ...; values redacted by --dry-run)"),
        { .kind = CLI_FLAG, .name = "json", .offset = OPT(json),
          .help = "print the Outcome as one JSON line on stdout at the end" },
        STRING_ONCE("user", "NAME|UID", user, "as root: run the session (and bwrap) as this user, who must\n"
                                              "be able to write the repository (default: its owner)"),
        { .kind = CLI_FLAG, .name = "root-session", .offset = OPT(root_session),
          .help = "as root: accept a root session (throwaway machines only)" },
        { .kind = CLI_FLAG, .name = "keep-control-files", .offset = OPT(keep_control_files),
          .help = "keep other tools' control files the session changed (listed\n"
                  "either way; by default they are put back)" },
        { .kind = CLI_COUNT, .name = "verbose", .short_name = 'v', .offset = offsetof(struct run_args, v),
          .help = "say what is done (twice: more)" },
        { .kind = CLI_COUNT, .name = "quiet", .short_name = 'q', .offset = offsetof(struct run_args, q),
          .help = "errors only" },
        { .kind = CLI_HELP, .name = "help", .short_name = 'h' },
        { .kind = CLI_HEADING,
          .help = "limits (a limit that cannot be enforced here makes the Trial void; see 'trialbox check'):" },
        LIMIT("timeout", "DURATION", "wall clock from the session's start (90, 90s, 30m, 2h); then\n"
                                     "SIGTERM to every process of the session, failed/timeout, exit 124"),
        LIMIT("kill-after", "DURATION", "SIGKILL whatever is left this long after the SIGTERM (default 10s)"),
        LIMIT("memory", "SIZE", "memory of the session, tmpfs pages included (512M, 4G; powers of 1024)"),
        LIMIT("pids", "N", "at most N processes and threads"),
        LIMIT("cpus", "N", "CPU time of N CPUs (1.5: one and a half)"),
};

static const struct cli_status run_statuses[] = {
        { "N", "the session's own, for a completed or failed Trial (128+N: killed by signal N)" },
        { "123", "the session ran, but its repository's .git was quarantined" },
        { "124", "the session ran past --timeout (failed/timeout)" },
        { "125", "the Trial is void: outcome.json says why" },
        { "128+N", "the operator's signal N (SIGINT, SIGTERM, SIGHUP) stopped it (void/interrupted)" },
        { "126", "trialbox itself failed, or the repository guard could not finish" },
        { "2", "a usage error: nothing run, nothing written" },
};

const struct cli_usage cmd_run_usage = {
        .synopsis = "trialbox run --harness NAME --repo DIR --output-dir DIR [--harness-bin PATH] [--skills DIR] "
                    "[--credentials FILE] [--no-sandbox] [--dry-run] [--network host|none|allow] "
                    "[--allow-host PATTERN]... [--no-harness-endpoints] [--env-file FILE] [--json] [-v|-q] "
                    "[--timeout DURATION [--kill-after DURATION]] "
                    "[--memory SIZE] [--pids N] [--cpus N] [--user NAME|UID | --root-session] "
                    "[--keep-control-files] -- "
                    "[SESSION ARGS...]",
        .description = "Runs one Trial: a session of an agent CLI (a Harness) on a prepared repository,\n"
                       "inside a bubblewrap sandbox, with the Harness's login and nothing else of the\n"
                       "host's private state; writes OUTPUT_DIR/outcome.json.\n",
        .stop_at_argument = true,
        .options = run_options,
        .n_options = TB_ARRAY_SIZE(run_options),
        .statuses = run_statuses,
        .n_statuses = TB_ARRAY_SIZE(run_statuses),
};

/* --network, --allow-host and --no-harness-endpoints: the last two alone
 * imply allow; with host or none they are a usage error. Each pattern is
 * checked here. */
static int check_network(const struct cli_command *cmd, struct trial_options *opt, const char *network)
{
        bool allow_only = opt->n_allow_hosts || opt->no_harness_endpoints;
        opt->network = allow_only ? TRIAL_NETWORK_ALLOW : TRIAL_NETWORK_DEFAULT;
        if (network && trial_network_parse(network, &opt->network) < 0)
                return cli_usage_error(cmd->name, "--network is '%s'; use host, none or allow", network);
        if (allow_only && opt->network != TRIAL_NETWORK_ALLOW)
                return cli_usage_error(cmd->name, "%s needs --network allow, not '%s'",
                                       opt->n_allow_hosts ? "--allow-host" : "--no-harness-endpoints",
                                       trial_network_name(opt->network));
        for (size_t i = 0; i < opt->n_allow_hosts; i++) {
                _cleanup_(netpolicy_freep) struct netpolicy *np = netpolicy_new();
                struct tb_error err = { 0 };
                if (netpolicy_add(np, opt->allow_hosts[i], &err) < 0)
                        return cli_usage_error(cmd->name, "%s", err.msg);
        }
        return 0;
}

/* What `run` needs once every option is read. 0, or TB_EXIT_USAGE (said). */
static int check_required(const struct cli_command *cmd, const struct run_args *a)
{
        if (!a->opt.harness)
                return cli_usage_error(cmd->name, "--harness is required (one of 'trialbox harnesses')");
        if (!a->opt.repo)
                return cli_usage_error(cmd->name, "--repo is required (the prepared repository's folder)");
        if (!a->opt.output_dir)
                return cli_usage_error(cmd->name, "--output-dir is required (a new folder for this Trial)");
        if (a->kill_after && a->opt.limits.timeout_ms == LIMIT_UNSET)
                return cli_usage_error(cmd->name,
                                       "--kill-after needs --timeout (the grace after the deadline's SIGTERM)");
        return 0;
}

int cli_parse_run(int argc, char **argv, struct trial_options *out)
{
        const struct cli_command *cmd = cli_command_find("run");
        struct run_args a = { 0 };
        int first = 0;

        trial_limits_init(&a.opt.limits);
        *out = a.opt;
        int r = cli_parse(cmd, argc, argv, &a, &first);
        if (r != 0)
                return r;
        if (first < argc && strcmp(argv[first - 1], "--") != 0)
                return cli_usage_error(cmd->name, "unexpected argument '%s' (session arguments go after '--')",
                                       argv[first]);
        if (cli_verbosity(cmd, a.v, a.q, &a.opt.verbosity) != 0 || check_required(cmd, &a) != 0 ||
            check_network(cmd, &a.opt, a.network) != 0)
                return TB_EXIT_USAGE;
        a.opt.session_args = argv + first;
        *out = a.opt;
        return 0;
}

/* TRIALBOX_NO_SANDBOX: unset, empty or 0, or 1 (unsandboxed). */
static int no_sandbox_from_env(const struct tb_env *env, bool *out)
{
        const char *e = env->no_sandbox;
        if (!e || !*e || strcmp(e, "0") == 0)
                return 0;
        if (strcmp(e, "1") == 0) {
                *out = true;
                return 0;
        }
        return cli_fail(TB_EXIT_USAGE, "TRIALBOX_NO_SANDBOX is '%s'; set it to 1 (unsandboxed) or 0, or unset it", e);
}

int cmd_run(const struct cli_command *self, const struct tb_env *env, int argc, char **argv)
{
        (void)self;
        struct trial_options opt;
        int r = cli_parse_run(argc, argv, &opt);
        if (r == CLI_HELP_SHOWN)
                return 0;
        if (r == 0)
                r = no_sandbox_from_env(env, &opt.no_sandbox);
        if (r == 0)
                r = cli_cpus_busy_from_env(env);
        if (r != 0)
                return r;
        log_set_verbosity(opt.verbosity);
        return trial_run(&opt, env);
}
