/* The table of commands and the dispatch: `trialbox COMMAND ARGS...`,
 * `trialbox --help`, `trialbox --version`, `trialbox help [COMMAND]`. */
#include "cmd/cli.h"

#include <string.h>

#include "base/cpus.h"
#include "base/env.h"
#include "base/util.h"
#include "cmd/exit.h"
#include "cmd/help.h"
#include "cmd/options.h"
#include <trialbox/plugin.h>

#ifndef TB_VERSION
#error "TB_VERSION must be defined by the build"
#endif

const struct cli_command cli_commands[] = {
        { "run", cmd_run, "run one Trial: a Harness's session in the sandbox", &cmd_run_usage },
        { "plan", cmd_plan, "expand an Experiment (arms × tasks × repetitions) into a plan", &cmd_plan_usage },
        { "batch", cmd_batch, "run a plan of Trials, here or as a Slurm job array; resumable", &cmd_batch_usage },
        { "grade", cmd_grade, "grade a Trial that ran: a grader in its own sandbox, on a throwaway layer",
          &cmd_grade_usage },
        { "report", cmd_report, "print the Experiment's answer from a batch's results", &cmd_report_usage },
        { "harnesses", cmd_harnesses, "list the Harnesses' plugins and whether each is ready", &cmd_harnesses_usage },
        { "check", cmd_check, "can a Trial start here? bwrap, namespaces, limits, logins; the fix", &cmd_check_usage },
        { "credentials", cmd_credentials, "set, unset or list the Harnesses' keys", &cmd_credentials_usage },
        { "help", cmd_help, "print this help, or a command's", &cmd_help_usage },
};
const size_t cli_n_commands = TB_ARRAY_SIZE(cli_commands);

static const char description[] =
        "Runs one Trial: a session of an agent CLI (a Harness) on a prepared repository,\n"
        "inside a bubblewrap sandbox, with the Harness's login and nothing else of the\n"
        "host's private state; writes OUTPUT_DIR/outcome.json.\n";

const struct cli_command *cli_command_find(const char *name)
{
        for (size_t i = 0; i < cli_n_commands; i++)
                if (strcmp(cli_commands[i].name, name) == 0)
                        return &cli_commands[i];
        return NULL;
}

void cli_print_usage(FILE *out)
{
        cli_help_print_all(cli_commands, cli_n_commands, CLI_GLOBAL_SYNOPSIS, description, out);
}

/* ---- `trialbox help [COMMAND]` ---- */

static const struct cli_option help_options[] = {
        { .kind = CLI_HELP, .name = "help", .short_name = 'h' },
};
static const struct cli_status help_statuses[] = {
        { "0", "the help was printed" },
        { "2", "a usage error: no such command" },
};
const struct cli_usage cmd_help_usage = {
        .synopsis = "trialbox help [COMMAND]",
        .description = "prints what 'trialbox --help' prints, or what 'trialbox COMMAND --help' does.\n",
        .stop_at_argument = true,
        .options = help_options,
        .n_options = TB_ARRAY_SIZE(help_options),
        .statuses = help_statuses,
        .n_statuses = TB_ARRAY_SIZE(help_statuses),
};

int cmd_help(const struct cli_command *self, const struct tb_env *env, int argc, char **argv)
{
        (void)env;
        int first = 0, r = cli_parse(self, argc, argv, NULL, &first);
        if (r != 0)
                return r == CLI_HELP_SHOWN ? 0 : r;
        if (argc - first > 1)
                return cli_usage_error(self->name, "unexpected argument '%s'", argv[first + 1]);
        if (first == argc) {
                cli_print_usage(stdout);
                return 0;
        }
        const struct cli_command *cmd = cli_command_find(argv[first]);
        if (!cmd)
                return cli_usage_error(NULL, "unknown command '%s'", argv[first]);
        cli_help_print(cmd, stdout);
        return 0;
}

/* ---- the dispatch ---- */

static int cli_dispatch(const struct tb_env *env, int argc, char **argv)
{
        if (argc < 2) {
                cli_print_usage(stderr);
                return TB_EXIT_USAGE;
        }
        const char *name = argv[1];
        if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
                cli_print_usage(stdout);
                return 0;
        }
        if (strcmp(name, "--version") == 0) {
                printf("trialbox %s (plugin ABI %d.%d)\n", TB_VERSION, TB_PLUGIN_ABI_MAJOR, TB_PLUGIN_ABI_MINOR);
                return 0;
        }
        const struct cli_command *cmd = cli_command_find(name);
        if (!cmd)
                return cli_usage_error(NULL, "unknown command '%s'", name);
        return cmd->main(cmd, env, argc - 1, argv + 1);
}

int cli_cpus_busy_from_env(const struct tb_env *env)
{
        const char *e = env->cpus_busy;
        bool busy = e && strcmp(e, "1") == 0;
        if (!busy && e && *e && strcmp(e, "0") != 0)
                return cli_fail(TB_EXIT_USAGE,
                                "TRIALBOX_CPUS_BUSY is '%s'; set it to 1 (every CPU is busy with work like this) or 0, "
                                "or unset it",
                                e);
        cpus_set_busy(busy);
        return 0;
}

int cli_main(int argc, char **argv)
{
        struct tb_env env;
        tb_env_init(&env);
        int status = cli_dispatch(&env, argc, argv);
        tb_env_done(&env);
        return status;
}
