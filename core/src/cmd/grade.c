/* `trialbox grade`: its command line, then trial/grade.h's trial_grade. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/env.h"
#include "base/log.h"
#include "cmd/cli.h"
#include "cmd/exit.h"
#include "cmd/options.h"
#include "network/netpolicy.h"
#include "trial/grade.h"
#include "trial/session_env.h"

/* --env may be given this many times. */
#define GRADE_MAX_ENV 64

struct grade_args {
        struct grade_options g;
        const char *network, *layer, *files, *env_file;
        char *env[GRADE_MAX_ENV + 1];
        size_t n_env;
        int v, q;
        bool kill_after;
};

static int take_limit(const struct cli_command *cmd, const struct cli_option *o, const char *value, void *args)
{
        struct grade_args *a = args;
        struct tb_error err = { 0 };
        char name[64];
        if (trial_limits_set(&a->g.run.limits, cli_option_name(o, name, sizeof name), value, &err) < 0)
                return cli_usage_error(cmd->name, "%s", err.msg);
        if (strcmp(o->name, "kill-after") == 0)
                a->kill_after = true;
        return 0;
}

static int take_allow_host(const struct cli_command *cmd, const struct cli_option *o, const char *value, void *args)
{
        struct grade_args *a = args;
        (void)o;
        if (a->g.run.n_allow_hosts == TRIAL_MAX_ALLOW_HOSTS)
                return cli_usage_error(cmd->name, "--allow-host is given more than %d times", TRIAL_MAX_ALLOW_HOSTS);
        a->g.run.allow_hosts[a->g.run.n_allow_hosts++] = value;
        return 0;
}

/* NAME=VALUE: a name `run --env-file` would take (trial/session_env.h).
 * The value is in argv, where other users can read it: for a secret,
 * --env-file. */
static int take_env(const struct cli_command *cmd, const struct cli_option *o, const char *value, void *args)
{
        struct grade_args *a = args;
        (void)o;
        const char *eq = strchr(value, '=');
        char name[256];
        size_t n = eq ? (size_t)(eq - value) : 0;
        if (!eq || n == 0 || n >= sizeof name)
                return cli_usage_error(cmd->name, "--env: not NAME=VALUE; give a variable's name, '=', its value");
        memcpy(name, value, n);
        name[n] = '\0';
        struct tb_error err = { 0 };
        if (session_env_name_check(name, &err) < 0)
                return cli_usage_error(cmd->name, "--env: %s", err.msg);
        if (a->n_env == GRADE_MAX_ENV)
                return cli_usage_error(cmd->name, "--env is given more than %d times", GRADE_MAX_ENV);
        a->env[a->n_env++] = (char *)value;
        return 0;
}

#define OPT(field) offsetof(struct grade_args, g.run.field)
#define STRING_ONCE(long_name, meta, off, text)                                                               \
        {                                                                                                     \
                .kind = CLI_STRING, .name = (long_name), .metavar = (meta), .flags = CLI_ONCE | CLI_NONEMPTY, \
                .offset = (off), .help = (text)                                                               \
        }
#define LIMIT(long_name, meta, text)                                                                             \
        {                                                                                                        \
                .kind = CLI_CALL, .name = (long_name), .metavar = (meta), .flags = CLI_ONCE, .call = take_limit, \
                .help = (text)                                                                                   \
        }

static const struct cli_option grade_options[] = {
        { .kind = CLI_HEADING, .help = "options:" },
        STRING_ONCE("trial-dir", "DIR", offsetof(struct grade_args, g.trial_dir),
                    "the graded Trial's output folder: grade/ and grade.json go in it"),
        STRING_ONCE("repo", "DIR", OPT(repo), "the graded Trial's repository, as its session left it"),
        STRING_ONCE("harness", "NAME", OPT(harness), "the grader's Harness (shell for a test command)"),
        STRING_ONCE("files", "DIR", offsetof(struct grade_args, files),
                    "the grader's own files (hidden tests, a rubric), read-only\n"
                    "at /grader; no Trial's session sees them"),
        STRING_ONCE("harness-bin", "PATH", OPT(harness_bin), "the grader's binary (default: the plugin's, on PATH)"),
        STRING_ONCE("credentials", "FILE", OPT(credentials),
                    "the Credentials file (default ~/.config/trialbox/credentials.json)"),
        { .kind = CLI_CALL,
          .name = "env",
          .metavar = "NAME=VALUE",
          .call = take_env,
          .help = "set a variable in the grader's session (repeatable; the value\n"
                  "is in trialbox's argv: a secret goes in --env-file)" },
        STRING_ONCE("env-file", "FILE", offsetof(struct grade_args, env_file),
                    "the grader's own variables: one JSON object {\"NAME\": \"value\"}\n"
                    "(as run's --env-file: values are secrets, never printed)"),
        { .kind = CLI_STRING,
          .name = "network",
          .metavar = "MODE",
          .flags = CLI_ONCE | CLI_NONEMPTY,
          .offset = offsetof(struct grade_args, network),
          .help = "none (default): loopback only; allow: the Harness's endpoints\n"
                  "and --allow-host; host: the host's network" },
        { .kind = CLI_CALL,
          .name = "allow-host",
          .metavar = "PATTERN",
          .call = take_allow_host,
          .help = "also allow host[:port], *.domain[:port], an IP or [IPv6]\n"
                  "(repeatable; implies --network allow)" },
        STRING_ONCE("layer", "LAYER", offsetof(struct grade_args, layer),
                    "how the repository is made writable and thrown away: auto\n"
                    "(default: the first that works of bwrap-overlay, overlayfs,\n"
                    "copy), bwrap-overlay, overlayfs or copy"),
        STRING_ONCE("user", "NAME|UID", OPT(user),
                    "as root: run the grader as this user (default: the\n"
                    "repository's owner)"),
        { .kind = CLI_FLAG,
          .name = "root-session",
          .offset = OPT(root_session),
          .help = "as root: accept a root grader (throwaway machines only)" },
        { .kind = CLI_FLAG,
          .name = "json",
          .offset = offsetof(struct grade_args, g.json),
          .help = "print grade.json as one JSON line on stdout at the end" },
        { .kind = CLI_COUNT,
          .name = "verbose",
          .short_name = 'v',
          .offset = offsetof(struct grade_args, v),
          .help = "say what is done (twice: more)" },
        { .kind = CLI_COUNT,
          .name = "quiet",
          .short_name = 'q',
          .offset = offsetof(struct grade_args, q),
          .help = "errors only" },
        { .kind = CLI_HELP, .name = "help", .short_name = 'h' },
        { .kind = CLI_HEADING, .help = "limits (the grader's own; its layer holds at most --memory):" },
        LIMIT("timeout", "DURATION", "wall clock from the grader's start; then error/timeout"),
        LIMIT("kill-after", "DURATION", "SIGKILL whatever is left this long after the SIGTERM (default 10s)"),
        LIMIT("memory", "SIZE", "memory of the grader, its layer's and /tmp's pages included"),
        LIMIT("pids", "N", "at most N processes and threads"),
        LIMIT("cpus", "N", "CPU time of N CPUs"),
};

static const struct cli_status grade_statuses[] = {
        { "0", "passed" },
        { "1", "failed" },
        { "3", "error: the grader ran and gave no verdict (grade.json says why)" },
        { "125", "void: the grader could not run; grade again" },
        { "126", "trialbox itself failed: grade.json cannot be written" },
        { "2", "a usage error, or the Trial did not complete or fail: nothing graded" },
};

const struct cli_usage cmd_grade_usage = {
        .synopsis = "trialbox grade --trial-dir DIR --repo DIR --harness NAME [--files DIR] [--harness-bin PATH] "
                    "[--credentials FILE] [--env NAME=VALUE]... [--env-file FILE] [--network none|allow|host] "
                    "[--allow-host PATTERN]... [--layer auto|bwrap-overlay|overlayfs|copy] "
                    "[--user NAME|UID | --root-session] [--json] [-v|-q] "
                    "[--timeout DURATION [--kill-after DURATION]] [--memory SIZE] [--pids N] [--cpus N] -- "
                    "[GRADER ARGS...]",
        .description = "Grades a Trial that ran: runs a grader (any Harness: a test command through\n"
                       "'shell', a model with a rubric) in its own sandbox, on the Trial's final\n"
                       "repository behind a copy-on-write layer that is thrown away, with its own\n"
                       "files at /grader; writes DIR/grade.json. Exit 0: passed, or a verdict file\n"
                       "it writes to $TRIALBOX_GRADE_FILE.\n",
        .stop_at_argument = true,
        .options = grade_options,
        .n_options = TB_ARRAY_SIZE(grade_options),
        .statuses = grade_statuses,
        .n_statuses = TB_ARRAY_SIZE(grade_statuses),
};

/* --network (default none for a grader) and --allow-host, as run checks them. */
static int check_network(const struct cli_command *cmd, struct trial_options *opt, const char *network)
{
        opt->network = opt->n_allow_hosts ? TRIAL_NETWORK_ALLOW : TRIAL_NETWORK_NONE;
        if (network && trial_network_parse(network, &opt->network) < 0)
                return cli_usage_error(cmd->name, "--network is '%s'; use none, allow or host", network);
        if (opt->n_allow_hosts && opt->network != TRIAL_NETWORK_ALLOW)
                return cli_usage_error(cmd->name, "--allow-host needs --network allow, not '%s'",
                                       trial_network_name(opt->network));
        for (size_t i = 0; i < opt->n_allow_hosts; i++) {
                _cleanup_(netpolicy_freep) struct netpolicy *np = netpolicy_new();
                struct tb_error err = { 0 };
                if (netpolicy_add(np, opt->allow_hosts[i], &err) < 0)
                        return cli_usage_error(cmd->name, "%s", err.msg);
        }
        return 0;
}

/* The grader's files: an existing folder, taken by its real path. */
static int check_files(const struct cli_command *cmd, struct grade_args *a, char **real)
{
        struct stat st;
        if (!a->files)
                return 0;
        if (stat(a->files, &st) < 0 || !S_ISDIR(st.st_mode))
                return cli_usage_error(cmd->name, "--files '%s' is not a folder; pass the grader's own folder",
                                       a->files);
        *real = realpath(a->files, NULL);
        if (!*real)
                return cli_usage_error(cmd->name, "--files '%s': %s", a->files, strerror(errno));
        a->g.grader.files = *real;
        return 0;
}

static int check_required(const struct cli_command *cmd, struct grade_args *a)
{
        if (!a->g.trial_dir)
                return cli_usage_error(cmd->name, "--trial-dir is required (the graded Trial's output folder)");
        if (!a->g.run.repo)
                return cli_usage_error(cmd->name, "--repo is required (the graded Trial's repository)");
        if (!a->g.run.harness)
                return cli_usage_error(cmd->name, "--harness is required (the grader's Harness)");
        if (a->kill_after && a->g.run.limits.timeout_ms == LIMIT_UNSET)
                return cli_usage_error(cmd->name, "--kill-after needs --timeout");
        if (a->layer && cow_layer_parse(a->layer, &a->g.grader.layer) < 0)
                return cli_usage_error(cmd->name, "--layer is '%s'; use auto, bwrap-overlay, overlayfs or copy",
                                       a->layer);
        return check_network(cmd, &a->g.run, a->network);
}

int cmd_grade(const struct cli_command *self, const struct tb_env *env, int argc, char **argv)
{
        struct grade_args a = { .g = { .grader = TRIAL_GRADER_INIT } };
        int first = 0;
        trial_limits_init(&a.g.run.limits);
        int r = cli_parse(self, argc, argv, &a, &first);
        if (r != 0)
                return r == CLI_HELP_SHOWN ? 0 : r;
        if (first < argc && strcmp(argv[first - 1], "--") != 0)
                return cli_usage_error(self->name, "unexpected argument '%s' (the grader's arguments go after '--')",
                                       argv[first]);
        _cleanup_free_ char *files = NULL;
        if (cli_verbosity(self, a.v, a.q, &a.g.run.verbosity) != 0 || check_required(self, &a) != 0 ||
            check_files(self, &a, &files) != 0 || cli_cpus_busy_from_env(env) != 0)
                return TB_EXIT_USAGE;
        /* Read here, once (it may be a pipe), so that a bad one is a usage
         * error with nothing graded; its values are erased at the end. */
        struct strv secrets = { 0 };
        struct tb_error err = { 0 };
        if (a.env_file && session_env_read(a.env_file, &secrets, &err) < 0) {
                cli_usage_error(self->name, "%s", err.msg);
                session_env_done(&secrets);
                return TB_EXIT_USAGE;
        }
        a.g.run.session_args = argv + first;
        a.g.run.session_env = secrets.v;
        a.g.grader.env = a.env;
        log_set_verbosity(a.g.run.verbosity);
        r = trial_grade(&a.g, env);
        session_env_done(&secrets);
        return r;
}
