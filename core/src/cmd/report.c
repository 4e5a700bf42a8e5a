/* `trialbox report`: its command line, then experiments/report.h. */
#include <stddef.h>

#include "base/env.h"
#include "cmd/cli.h"
#include "cmd/exit.h"
#include "cmd/options.h"
#include "experiments/report.h"

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

#define STRING_ONCE(long_name, meta, field, text)                                                                 \
        { .kind = CLI_STRING, .name = (long_name), .metavar = (meta), .flags = CLI_ONCE | CLI_NONEMPTY,          \
          .offset = offsetof(struct report_args, field), .help = (text) }

static const struct cli_option report_options[] = {
        STRING_ONCE("by", "KEYS", by,
                    "group by harness (the default), arm, task, a label\n"
                    "(labels.NAME or NAME), or several: arm,task"),
        STRING_ONCE("prices", "FILE", prices,
                    "USD per million tokens per model, for each group's\n"
                    "cost: {\"gpt-5\": {\"input\": 1.25, \"output\": 10}}"),
        STRING_ONCE("html", "FILE", html, "also write the answer as one HTML page"),
        { .kind = CLI_CALL, .name = "json", .call = take_format, .help = "the answer as one JSON object" },
        { .kind = CLI_CALL, .name = "csv", .call = take_format, .help = "the answer as CSV, a line per group" },
        { .kind = CLI_HELP, .name = "help", .short_name = 'h' },
};

static const struct cli_status report_statuses[] = {
        { "0", "the answer was printed" },
        { "2", "a usage error, bad RESULTS or prices, or a --by key no line has" },
        { "126", "the --html page cannot be written" },
};

const struct cli_usage cmd_report_usage = {
        .synopsis = "trialbox report RESULTS [--by KEYS] [--prices FILE] [--html FILE] [--json|--csv]",
        .description = "Prints the answer of a batch's results (PLAN.results.jsonl) per group of\n"
                       "Trials: the Trials by outcome, the causes of voids and failures, durations,\n"
                       "CPU time, peak memory; when they were graded, the pass rate with its Wilson\n"
                       "95% interval, the mean score, pass@k and, by arm, each arm's paired difference\n"
                       "against the first; tokens and cost.\n",
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
                return cli_usage_error(self->name, "report needs one RESULTS file (a batch's PLAN.results.jsonl)");
        a.results = argv[first];
        r = report_run(&a, stdout, &err);
        return r != 0 ? cli_fail(r, "%s", err.msg) : 0;
}
