/* `trialbox batch`: its command line, then experiments/batch.h's batch_run. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/env.h"
#include "cmd/cli.h"
#include "cmd/exit.h"
#include "cmd/options.h"
#include "experiments/batch.h"

struct batch_args {
        long jobs, retries, index;
        bool jobs_given, json, slurm, no_wait, grade_only, check, rerun_changed;
        const char *slurm_args;
        int v, q, verbosity;
};

static int parse_count(const struct cli_command *cmd, const char *what, const char *text, long min, long max,
                       long *out)
{
        char *end;
        errno = 0;
        long v = strtol(text, &end, 10);
        if (errno || end == text || *end || v < min || v > max)
                return cli_usage_error(cmd->name, "%s '%s' is not a whole number from %ld to %ld", what, text,
                                       min, max);
        *out = v;
        return 0;
}

static int take_jobs(const struct cli_command *cmd, const struct cli_option *o, const char *value, void *args)
{
        struct batch_args *a = args;
        (void)o;
        a->jobs_given = true;
        return parse_count(cmd, "--jobs", value, 1, 4096, &a->jobs);
}

static int take_retries(const struct cli_command *cmd, const struct cli_option *o, const char *value, void *args)
{
        (void)o;
        return parse_count(cmd, "--retries", value, 0, 100, &((struct batch_args *)args)->retries);
}

static int take_index(const struct cli_command *cmd, const struct cli_option *o, const char *value, void *args)
{
        (void)o;
        return parse_count(cmd, "--index", value, 0, INT_MAX, &((struct batch_args *)args)->index);
}

static const struct cli_option batch_options[] = {
        { .kind = CLI_CALL, .name = "jobs", .metavar = "N", .call = take_jobs,
          .help = "Trials at once (default: the CPUs; with --slurm: array tasks\n"
                  "at once, no limit when not given)" },
        { .kind = CLI_CALL, .name = "retries", .metavar = "K", .call = take_retries,
          .help = "run a void Trial again up to K times (default 2)" },
        { .kind = CLI_CALL, .name = "index", .metavar = "I", .call = take_index,
          .help = "run only Trial I (0-based), here: what a Slurm array task does" },
        { .kind = CLI_FLAG, .name = "slurm", .offset = offsetof(struct batch_args, slurm),
          .help = "submit the plan as one Slurm job array, save its id in\n"
                  "PLAN.slurm-job, wait, and gather" },
        { .kind = CLI_STRING, .name = "slurm-args", .metavar = "ARGS", .offset = offsetof(struct batch_args, slurm_args),
          .help = "more arguments for sbatch (with --slurm)" },
        { .kind = CLI_FLAG, .name = "no-wait", .offset = offsetof(struct batch_args, no_wait),
          .help = "return once the array is submitted; 'trialbox batch PLAN'\n"
                  "gathers later (with --slurm)" },
        { .kind = CLI_FLAG, .name = "grade-only", .offset = offsetof(struct batch_args, grade_only),
          .help = "run no Trial: grade again every Trial that ran (the plan's\n"
                  "graders), and write PLAN.results.jsonl" },
        { .kind = CLI_FLAG, .name = "check", .offset = offsetof(struct batch_args, check),
          .help = "check every line (its Harness, binary, repo_from revision,\n"
                  "login or key) and run nothing" },
        { .kind = CLI_FLAG, .name = "rerun-changed", .offset = offsetof(struct batch_args, rerun_changed),
          .help = "run again a finished Trial whose plan line or Harness binary\n"
                  "changed since it ran (without it: said, exit 2)" },
        { .kind = CLI_FLAG, .name = "json", .offset = offsetof(struct batch_args, json),
          .help = "print the summary as JSON" },
        { .kind = CLI_COUNT, .name = "verbose", .short_name = 'v', .offset = offsetof(struct batch_args, v),
          .help = "say what is done (twice: more)" },
        { .kind = CLI_COUNT, .name = "quiet", .short_name = 'q', .offset = offsetof(struct batch_args, q),
          .help = "only the summary and errors" },
        { .kind = CLI_HELP, .name = "help", .short_name = 'h' },
};

static const struct cli_status batch_statuses[] = {
        { "0", "every Trial completed or failed (--no-wait: the array was submitted)" },
        { "1", "some Trial, or some Trial's grade, stayed void" },
        { "2", "a usage error, a bad plan, a line that cannot run, or a changed finished Trial: nothing run" },
        { "126", "the batch itself failed" },
        { "128+N", "interrupted by signal N" },
};

const struct cli_usage cmd_batch_usage = {
        .synopsis = "trialbox batch PLAN [--jobs N] [--retries K] [--index I] "
                    "[--slurm [--slurm-args ARGS] [--no-wait]] [--grade-only] [--check] [--rerun-changed] "
                    "[--json] [-v|-q]",
        .description = "Runs every Trial of PLAN (JSON Lines, one Trial per line) as a 'trialbox run',\n"
                       "up to --jobs at once, void ones again up to --retries times; writes\n"
                       "PLAN.results.jsonl beside PLAN (plan.jsonl: plan.results.jsonl) and prints the\n"
                       "summary. Run the same command again to resume. With --slurm, the plan's\n"
                       "folders and trialbox must be at the same paths on every node.\n",
        .options = batch_options,
        .n_options = TB_ARRAY_SIZE(batch_options),
        .statuses = batch_statuses,
        .n_statuses = TB_ARRAY_SIZE(batch_statuses),
};

/* What batch_run needs once every option is read. 0, or TB_EXIT_USAGE (said). */
static int check_batch_args(const struct cli_command *cmd, struct batch_args *a, int n_args)
{
        if (!a->slurm && (a->slurm_args || a->no_wait))
                return cli_usage_error(cmd->name, "--slurm-args and --no-wait go with --slurm");
        if (a->slurm && a->grade_only)
                return cli_usage_error(cmd->name, "--grade-only grades on this machine; it does not go with --slurm");
        if (a->slurm && a->index >= 0)
                return cli_usage_error(cmd->name,
                                       "--index runs one Trial on this machine; it does not go with --slurm");
        if (a->grade_only && a->rerun_changed)
                return cli_usage_error(cmd->name, "--grade-only runs no Trial; it does not go with --rerun-changed");
        if (a->check && (a->slurm || a->index >= 0 || a->rerun_changed || a->grade_only))
                return cli_usage_error(cmd->name, "--check runs nothing; it goes with no other batch option");
        if (cli_verbosity(cmd, a->v, a->q, &a->verbosity) != 0)
                return TB_EXIT_USAGE;
        if (n_args != 1)
                return cli_usage_error(cmd->name, "batch needs one PLAN (a JSON Lines file, one Trial per line)");
        return 0;
}

/* TRIALBOX_BATCH_BACKOFF_MS, or the default. */
static int backoff_from_env(const struct cli_command *cmd, const struct tb_env *env, long long *out)
{
        const char *e = env->batch_backoff_ms;
        long ms = 0;
        *out = BATCH_BACKOFF_DEFAULT_MS;
        if (!e || !*e)
                return 0;
        if (parse_count(cmd, "TRIALBOX_BATCH_BACKOFF_MS", e, 0, 3600000, &ms) != 0)
                return TB_EXIT_USAGE;
        *out = ms;
        return 0;
}

int cmd_batch(const struct cli_command *self, const struct tb_env *env, int argc, char **argv)
{
        long nproc = sysconf(_SC_NPROCESSORS_ONLN);
        struct batch_args a = { .jobs = nproc > 0 ? nproc : 1, .retries = 2, .index = -1 };
        long long backoff_ms;
        int first = 0, r = cli_parse(self, argc, argv, &a, &first);
        if (r != 0)
                return r == CLI_HELP_SHOWN ? 0 : r;
        if (check_batch_args(self, &a, argc - first) != 0 || backoff_from_env(self, env, &backoff_ms) != 0 ||
            cli_cpus_busy_from_env(env) != 0)
                return TB_EXIT_USAGE;
        struct batch_options opt = {
                .plan = argv[first],
                .jobs = (unsigned)a.jobs,
                .retries = (unsigned)a.retries,
                .json = a.json,
                .verbosity = a.verbosity,
                .index = a.index,
                .backoff_ms = backoff_ms,
                .environ = env->environ,
                .plugin_path = env->plugin_path,
                .env = env,
                .check = a.check,
                .rerun_changed = a.rerun_changed,
                .slurm = a.slurm,
                .slurm_args = a.slurm_args,
                .no_wait = a.no_wait,
                .slurm_max_running = a.slurm && a.jobs_given ? (unsigned)a.jobs : 0,
                .grade_only = a.grade_only,
                .trial_main = cli_main,
        };
        return batch_run(&opt);
}
