/* `trialbox report`: its command line, then experiments/report.h. */
#include <stddef.h>

#include "base/env.h"
#include "cmd/cli.h"
#include "cmd/exit.h"
#include "cmd/options.h"
#include "experiments/report.h"

struct report_args {
        enum report_format format;
};

/* --json or --csv: one of them, once. */
static int take_format(const struct cli_command *cmd, const struct cli_option *o, const char *value, void *args)
{
        struct report_args *a = args;
        (void)value;
        if (a->format != REPORT_TEXT)
                return cli_usage_error(cmd->name, "--json and --csv cannot be used together");
        a->format = o->name[0] == 'j' ? REPORT_JSON : REPORT_CSV;
        return 0;
}

static const struct cli_option report_options[] = {
        { .kind = CLI_CALL, .name = "json", .call = take_format, .help = "the summary as one JSON object" },
        { .kind = CLI_CALL, .name = "csv", .call = take_format, .help = "the summary as CSV, a line per Harness" },
        { .kind = CLI_HELP, .name = "help", .short_name = 'h' },
};

static const struct cli_status report_statuses[] = {
        { "0", "the summary was printed" },
        { "2", "a usage error, or RESULTS cannot be read" },
};

const struct cli_usage cmd_report_usage = {
        .synopsis = "trialbox report RESULTS [--json|--csv]",
        .description = "Prints the summary of a batch's results.jsonl again: per Harness the Trials by\n"
                       "outcome, the causes of voids and failures, durations, CPU time, peak memory.\n",
        .options = report_options,
        .n_options = TB_ARRAY_SIZE(report_options),
        .statuses = report_statuses,
        .n_statuses = TB_ARRAY_SIZE(report_statuses),
};

int cmd_report(const struct cli_command *self, const struct tb_env *env, int argc, char **argv)
{
        struct report_args a = { .format = REPORT_TEXT };
        struct tb_error err = { 0 };
        int first = 0, r = cli_parse(self, argc, argv, &a, &first);
        (void)env;
        if (r != 0)
                return r == CLI_HELP_SHOWN ? 0 : r;
        if (argc - first != 1)
                return cli_usage_error(self->name, "report needs one RESULTS file (a batch's results.jsonl)");
        struct report *rep = report_new();
        r = report_read(rep, argv[first], &err);
        if (r == 0)
                report_print(rep, a.format, stdout);
        report_free(rep);
        return r < 0 ? cli_fail(TB_EXIT_USAGE, "%s", err.msg) : 0;
}
