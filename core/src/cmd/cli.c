#define _GNU_SOURCE
#include "cmd/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "experiments/batch.h"
#include "logins/credentials.h"
#include "base/env.h"
#include "base/log.h"
#include "model/outcome.h"
#include "experiments/report.h"
#include "trial/trial.h"
#include <trialbox/plugin.h>

#ifndef TB_VERSION
#error "TB_VERSION must be defined by the build"
#endif

static const char usage_text[] =
        "usage: trialbox run --harness NAME --repo DIR --output-dir DIR [--harness-bin PATH]\n"
        "                    [--skills DIR] [--credentials FILE] [--no-sandbox] [--dry-run]\n"
        "                    [--timeout DURATION [--kill-after DURATION]] [--memory SIZE] [--pids N]\n"
        "                    [--cpus N] [--network host|none|allow] [--allow-host PATTERN]...\n"
        "                    [--user NAME|UID | --root-session] [--json] [-v|-q] -- [SESSION ARGS...]\n"
        "       trialbox batch PLAN [--jobs N] [--retries K] [--json] [-q] [--index I]\n"
        "       trialbox report RESULTS [--json|--csv]\n"
        "       trialbox harnesses [--json]\n"
        "       trialbox check [--harness NAME] [--json]\n"
        "       trialbox credentials [--credentials FILE] set KEY | unset KEY | list\n"
        "       trialbox --help | --version\n"
        "\n"
        "Runs one Trial: a session of an agent CLI (a Harness) on a prepared repository,\n"
        "inside a bubblewrap sandbox, with the Harness's login and nothing else of the\n"
        "host's private state; writes OUTPUT_DIR/outcome.json.\n"
        "\n"
        "run options:\n"
        "  --harness NAME        the Harness (its plugin NAME.so; see 'trialbox harnesses')\n"
        "  --repo DIR            the prepared repository, read-write, the session's folder\n"
        "  --output-dir DIR      a new folder for this Trial (fresh home, outcome.json)\n"
        "  --harness-bin PATH    the Harness binary (default: the plugin's, on PATH)\n"
        "  --skills DIR          a skills folder, read-only at its own path\n"
        "  --credentials FILE    the Credentials file (default ~/.config/trialbox/credentials.json)\n"
        "  --no-sandbox          run unsandboxed, in the real home (also TRIALBOX_NO_SANDBOX=1)\n"
        "  --dry-run             print the bwrap command line (secrets redacted); run nothing\n"
        "  --network MODE        allow: only the Harness's endpoints and --allow-host, through\n"
        "                        trialbox's proxy (HTTP_PROXY...), recorded in network.jsonl;\n"
        "                        none: loopback only; host: the host's network (explicit only).\n"
        "                        Default: allow if the Harness declares endpoints, else none\n"
        "  --allow-host PATTERN  also allow host[:port], *.domain[:port], an IP or [IPv6];\n"
        "                        a host loopback port by name: 127.0.0.1:8000, localhost:8000\n"
        "                        (repeatable; implies --network allow)\n"
        "  --json                print the Outcome as one JSON line on stdout at the end\n"
        "  --user NAME|UID       as root: run the session (and bwrap) as this user, who must\n"
        "                        be able to write the repository (default: its owner)\n"
        "  --root-session        as root: accept a root session (throwaway machines only)\n"
        "  -v, --verbose         say what is done (twice: more); -q, --quiet: errors only\n"
        "\n"
        "limits (a limit that cannot be enforced here makes the Trial void; see 'trialbox check'):\n"
        "  --timeout DURATION    wall clock from the session's start (90, 90s, 30m, 2h); then\n"
        "                        SIGTERM to every process of the session, failed/timeout, exit 124\n"
        "  --kill-after DURATION SIGKILL whatever is left this long after the SIGTERM (default 10s)\n"
        "  --memory SIZE         memory of the session, tmpfs pages included (512M, 4G; powers of 1024)\n"
        "  --pids N              at most N processes and threads\n"
        "  --cpus N              CPU time of N CPUs (1.5: one and a half)\n"
        "\n"
        "exit status: the session's own for completed and failed Trials (128+N for signal N),\n"
        "124 for a timeout, 125 for a void Trial, 126 when trialbox itself failed, 2 for usage errors.\n";

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        log_error("%s; see 'trialbox %s--help'", msg ? msg : "usage error", cmd);
        return TB_EXIT_USAGE;
}
#define usage_error cli_usage_error

/* The option the parser stopped at, as the user wrote it. */
static const char *bad_option(char **argv, int optind_now)
{
        const char *a = optind_now > 0 ? argv[optind_now - 1] : NULL;
        return a ? a : "?";
}

/* "--name" (or "-c") of the option whose value is `val`. */
static const char *option_name(const struct option *longopts, int val, char *buf, size_t n)
{
        for (const struct option *o = longopts; o->name; o++)
                if (o->val == val) {
                        snprintf(buf, n, "--%s", o->name);
                        return buf;
                }
        snprintf(buf, n, "-%c", val > 0 && val < 128 ? val : '?');
        return buf;
}

enum { OPT_HARNESS = 256, OPT_REPO, OPT_OUTPUT, OPT_BIN, OPT_SKILLS, OPT_CREDS, OPT_NO_SANDBOX, OPT_DRY, OPT_JSON,
       OPT_NETWORK, OPT_ALLOW_HOST, OPT_USER, OPT_ROOT_SESSION };
/* The limits (issue 11): their own block of values, parsed by trial_limits_set(). */
enum { OPT_TIMEOUT = 512, OPT_KILL_AFTER, OPT_MEMORY, OPT_PIDS, OPT_CPUS };

static int parse_verbosity(int *verbosity, int v, int q, const char *cmd)
{
        if (v && q)
                return usage_error(cmd, "-v and -q cannot be used together");
        *verbosity = q ? 0 : 1 + v;
        return 0;
}

static int no_sandbox_from_env(const struct tb_env *env, bool *out)
{
        const char *e = env->no_sandbox;
        if (!e || !*e || strcmp(e, "0") == 0)
                return 0;
        if (strcmp(e, "1") == 0) {
                *out = true;
                return 0;
        }
        log_error("TRIALBOX_NO_SANDBOX is '%s'; set it to 1 (unsandboxed) or 0, or unset it", e);
        return TB_EXIT_USAGE;
}

/* --network and --allow-host (issue 12): --allow-host alone implies allow;
 * with host or none it is a usage error. Each pattern is checked here. */
static int parse_network(struct trial_options *opt, const char *network)
{
        opt->network = opt->n_allow_hosts ? TRIAL_NETWORK_ALLOW : TRIAL_NETWORK_DEFAULT;
        if (network && trial_network_parse(network, &opt->network) < 0)
                return usage_error("run ", "--network is '%s'; use host, none or allow", network);
        if (opt->n_allow_hosts && opt->network != TRIAL_NETWORK_ALLOW)
                return usage_error("run ", "--allow-host needs --network allow, not '%s'",
                                   trial_network_name(opt->network));
        for (size_t i = 0; i < opt->n_allow_hosts; i++) {
                _cleanup_(netpolicy_freep) struct netpolicy *np = netpolicy_new();
                struct tb_error err = { 0 };
                if (netpolicy_add(np, opt->allow_hosts[i], &err) < 0)
                        return usage_error("run ", "%s", err.msg);
        }
        return 0;
}

/* Where the value of a string option of `run` goes (each given at most
 * once, never empty), or NULL for the other options. */
static const char **run_string_slot(struct trial_options *opt, int c, const char **network)
{
        switch (c) {
        case OPT_HARNESS:
                return &opt->harness;
        case OPT_REPO:
                return &opt->repo;
        case OPT_OUTPUT:
                return &opt->output_dir;
        case OPT_BIN:
                return &opt->harness_bin;
        case OPT_SKILLS:
                return &opt->skills;
        case OPT_CREDS:
                return &opt->credentials;
        case OPT_USER:
                return &opt->user;
        case OPT_NETWORK:
                return network;
        default:
                return NULL;
        }
}

/* What `run` needs once every option is read. 0, or TB_EXIT_USAGE (said). */
static int check_run_options(const struct trial_options *opt, bool kill_after_given)
{
        if (!opt->harness)
                return usage_error("run ", "--harness is required (one of 'trialbox harnesses')");
        if (!opt->repo)
                return usage_error("run ", "--repo is required (the prepared repository's folder)");
        if (!opt->output_dir)
                return usage_error("run ", "--output-dir is required (a new folder for this Trial)");
        if (kill_after_given && opt->limits.timeout_ms == LIMIT_UNSET)
                return usage_error("run ", "--kill-after needs --timeout (the grace after the deadline's SIGTERM)");
        return 0;
}

int cli_parse_run(int argc, char **argv, struct trial_options *out)
{
        static const struct option longopts[] = {
                { "harness", required_argument, NULL, OPT_HARNESS },
                { "repo", required_argument, NULL, OPT_REPO },
                { "output-dir", required_argument, NULL, OPT_OUTPUT },
                { "harness-bin", required_argument, NULL, OPT_BIN },
                { "skills", required_argument, NULL, OPT_SKILLS },
                { "credentials", required_argument, NULL, OPT_CREDS },
                { "no-sandbox", no_argument, NULL, OPT_NO_SANDBOX },
                { "dry-run", no_argument, NULL, OPT_DRY },
                { "json", no_argument, NULL, OPT_JSON },
                { "user", required_argument, NULL, OPT_USER },
                { "root-session", no_argument, NULL, OPT_ROOT_SESSION },
                { "verbose", no_argument, NULL, 'v' },
                { "quiet", no_argument, NULL, 'q' },
                { "help", no_argument, NULL, 'h' },
                { "timeout", required_argument, NULL, OPT_TIMEOUT },
                { "kill-after", required_argument, NULL, OPT_KILL_AFTER },
                { "memory", required_argument, NULL, OPT_MEMORY },
                { "pids", required_argument, NULL, OPT_PIDS },
                { "cpus", required_argument, NULL, OPT_CPUS },
                /* Network (issue 12). */
                { "network", required_argument, NULL, OPT_NETWORK },
                { "allow-host", required_argument, NULL, OPT_ALLOW_HOST },
                { NULL, 0, NULL, 0 },
        };
        struct trial_options opt = { 0 };
        const char *network = NULL;
        int c, v = 0, q = 0;
        char name[64];
        unsigned limits_given = 0;

        trial_limits_init(&opt.limits);
        *out = opt;

        opterr = 0;
        optind = 0; /* a full reset: the parser may run more than once */
        while ((c = getopt_long(argc, argv, "+:vqh", longopts, NULL)) != -1) {
                const char **slot = run_string_slot(&opt, c, &network);
                switch (c) {
                case OPT_HARNESS:
                case OPT_REPO:
                case OPT_OUTPUT:
                case OPT_BIN:
                case OPT_SKILLS:
                case OPT_CREDS:
                case OPT_USER:
                case OPT_NETWORK:
                        break;
                case OPT_NO_SANDBOX:
                        opt.no_sandbox = true;
                        break;
                case OPT_DRY:
                        opt.dry_run = true;
                        break;
                case OPT_JSON:
                        opt.json = true;
                        break;
                case OPT_ROOT_SESSION:
                        opt.root_session = true;
                        break;
                case 'v':
                        v++;
                        break;
                case 'q':
                        q++;
                        break;
                case 'h':
                        fputs(usage_text, stdout);
                        return 1;
                case OPT_TIMEOUT:
                case OPT_KILL_AFTER:
                case OPT_MEMORY:
                case OPT_PIDS:
                case OPT_CPUS: {
                        struct tb_error lerr = { 0 };
                        option_name(longopts, c, name, sizeof name);
                        if (limits_given & (1U << (c - OPT_TIMEOUT)))
                                return usage_error("run ", "option '%s' given twice", name);
                        limits_given |= 1U << (c - OPT_TIMEOUT);
                        if (trial_limits_set(&opt.limits, name, optarg, &lerr) < 0)
                                return usage_error("run ", "%s", lerr.msg);
                        break;
                }
                case OPT_ALLOW_HOST:
                        if (opt.n_allow_hosts == TRIAL_MAX_ALLOW_HOSTS)
                                return usage_error("run ", "--allow-host is given more than %d times",
                                                   TRIAL_MAX_ALLOW_HOSTS);
                        opt.allow_hosts[opt.n_allow_hosts++] = optarg;
                        break;
                case ':':
                        return usage_error("run ", "option '%s' needs a value",
                                           option_name(longopts, optopt, name, sizeof name));
                default:
                        if (optopt >= OPT_HARNESS && optopt < OPT_TIMEOUT)
                                return usage_error("run ", "option '%s' takes no value: '%s'",
                                                   option_name(longopts, optopt, name, sizeof name),
                                                   bad_option(argv, optind));
                        if (optopt && optopt < 256)
                                return usage_error("run ", "unknown option '-%c'", optopt);
                        return usage_error("run ", "unknown option '%s'", bad_option(argv, optind));
                }
                if (slot) {
                        if (*slot)
                                return usage_error("run ", "option '%s' given twice",
                                                   option_name(longopts, c, name, sizeof name));
                        if (!optarg[0])
                                return usage_error("run ", "option '%s' needs a non-empty value",
                                                   option_name(longopts, c, name, sizeof name));
                        *slot = optarg;
                }
        }
        if (optind < argc && strcmp(argv[optind - 1], "--") != 0)
                return usage_error("run ", "unexpected argument '%s' (session arguments go after '--')", argv[optind]);
        if (parse_verbosity(&opt.verbosity, v, q, "run ") != 0 ||
            check_run_options(&opt, limits_given & (1U << (OPT_KILL_AFTER - OPT_TIMEOUT))) != 0 ||
            parse_network(&opt, network) != 0)
                return TB_EXIT_USAGE;
        opt.session_args = argv + optind;
        *out = opt;
        return 0;
}

static int cmd_run(const struct tb_env *env, int argc, char **argv)
{
        struct trial_options opt;
        int r = cli_parse_run(argc, argv, &opt);
        if (r == 1)
                return 0;
        if (r == 0)
                r = no_sandbox_from_env(env, &opt.no_sandbox);
        if (r != 0)
                return r;
        log_set_verbosity(opt.verbosity);
        return trial_run(&opt, env);
}

/* `harnesses` and `check` share their small option set. */
static int cmd_simple(const struct tb_env *env, int argc, char **argv, bool is_check)
{
        static const struct option longopts[] = {
                { "harness", required_argument, NULL, OPT_HARNESS },
                { "json", no_argument, NULL, OPT_JSON },
                { "verbose", no_argument, NULL, 'v' },
                { "quiet", no_argument, NULL, 'q' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        const char *cmd = is_check ? "check " : "harnesses ";
        const char *harness = NULL;
        int c, json = 0, v = 0, q = 0, verbosity = 1;
        char name[64];

        opterr = 0;
        optind = 0;
        while ((c = getopt_long(argc, argv, "+:vqh", longopts, NULL)) != -1) {
                switch (c) {
                case OPT_HARNESS:
                        if (!is_check)
                                return usage_error(cmd, "unknown option '--harness'");
                        harness = optarg;
                        break;
                case OPT_JSON:
                        json = 1;
                        break;
                case 'v':
                        v++;
                        break;
                case 'q':
                        q++;
                        break;
                case 'h':
                        fputs(usage_text, stdout);
                        return 0;
                case ':':
                        return usage_error(cmd, "option '%s' needs a value",
                                           option_name(longopts, optopt, name, sizeof name));
                default:
                        return usage_error(cmd, "unknown option '%s'", bad_option(argv, optind));
                }
        }
        if (optind < argc)
                return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
        if (parse_verbosity(&verbosity, v, q, cmd) != 0)
                return TB_EXIT_USAGE;
        log_set_verbosity(verbosity);
        return is_check ? check_main(env, harness, json) : harnesses_main(env, json);
}

static int cli_dispatch(const struct tb_env *env, int argc, char **argv)
{
        if (argc < 2) {
                fputs(usage_text, stderr);
                return TB_EXIT_USAGE;
        }
        const char *cmd = argv[1];
        if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
                fputs(usage_text, stdout);
                return 0;
        }
        if (strcmp(cmd, "--version") == 0) {
                printf("trialbox %s (plugin ABI %d.%d)\n", TB_VERSION, TB_PLUGIN_ABI_MAJOR,
                       TB_PLUGIN_ABI_MINOR);
                return 0;
        }
        if (strcmp(cmd, "run") == 0)
                return cmd_run(env, argc - 1, argv + 1);
        if (strcmp(cmd, "batch") == 0)
                return batch_main(env, argc - 1, argv + 1);
        if (strcmp(cmd, "report") == 0)
                return report_main(env, argc - 1, argv + 1);
        if (strcmp(cmd, "harnesses") == 0)
                return cmd_simple(env, argc - 1, argv + 1, false);
        if (strcmp(cmd, "check") == 0)
                return cmd_simple(env, argc - 1, argv + 1, true);
        if (strcmp(cmd, "credentials") == 0)
                return credentials_main(env, argc - 1, argv + 1, NULL);
        log_error("unknown command '%s'; see 'trialbox --help'", cmd);
        return TB_EXIT_USAGE;
}

int cli_main(int argc, char **argv)
{
        struct tb_env env;
        tb_env_init(&env);
        int status = cli_dispatch(&env, argc, argv);
        tb_env_done(&env);
        return status;
}
