/* `trialbox batch`: its command line, then experiments/batch.h's batch_run. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/env.h"
#include "cmd/cli.h"
#include "experiments/batch.h"
#include "model/outcome.h"

/* ---- the command line ---- */

static const char batch_usage[] =
        "usage: trialbox batch PLAN [--jobs N] [--retries K] [--json] [-q|-v] [--index I]\n"
        "                           [--slurm [--slurm-args ARGS] [--no-wait]]\n"
        "runs every Trial of PLAN (JSON Lines, one Trial per line) as a 'trialbox run',\n"
        "up to --jobs at once (default: the CPUs), void ones again up to --retries times\n"
        "(default 2); writes results.jsonl beside PLAN and prints the summary.\n"
        "Run the same command again to resume. --index I runs only Trial I (0-based).\n"
        "--slurm submits the plan as one Slurm job array (at most --jobs tasks at once when\n"
        "given; --slurm-args for sbatch), saves its id in PLAN.slurm-job, waits and gathers;\n"
        "--no-wait returns after submitting and 'trialbox batch PLAN' gathers later. The\n"
        "plan's folders and trialbox must be at the same paths on every node.\n"
        "exit status: 0 every Trial completed or failed, 1 some stayed void, 2 a bad plan,\n"
        "128+N interrupted by signal N, 126 the batch itself failed.\n";


static int parse_count(const char *opt, const char *text, long min, long max, long *out)
{
        char *end;
        errno = 0;
        long v = strtol(text, &end, 10);
        if (errno || end == text || *end || v < min || v > max)
                return cli_usage_error("batch ", "%s '%s' is not a whole number from %ld to %ld", opt, text, min, max);
        *out = v;
        return 0;
}

enum { O_JOBS = 256, O_RETRIES, O_JSON, O_SLURM, O_SLURM_ARGS, O_NO_WAIT, O_INDEX };

int batch_main(const struct tb_env *env, int argc, char **argv)
{
        static const struct option longopts[] = {
                { "jobs", required_argument, NULL, O_JOBS },   { "retries", required_argument, NULL, O_RETRIES },
                { "json", no_argument, NULL, O_JSON },         { "slurm", no_argument, NULL, O_SLURM },
                { "slurm-args", required_argument, NULL, O_SLURM_ARGS },
                { "no-wait", no_argument, NULL, O_NO_WAIT },   { "index", required_argument, NULL, O_INDEX },
                { "quiet", no_argument, NULL, 'q' },           { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },            { NULL, 0, NULL, 0 },
        };
        long nproc = sysconf(_SC_NPROCESSORS_ONLN), jobs = nproc > 0 ? nproc : 1, retries = 2, index = -1;
        bool json = false, slurm = false, no_wait = false, jobs_given = false;
        const char *slurm_args = NULL;
        int c, v = 0, q = 0;
        opterr = 0;
        optind = 0;
        while ((c = getopt_long(argc, argv, ":qvh", longopts, NULL)) != -1) {
                int r = 0;
                switch (c) {
                case O_JOBS:
                        r = parse_count("--jobs", optarg, 1, 4096, &jobs);
                        jobs_given = true;
                        break;
                case O_RETRIES:
                        r = parse_count("--retries", optarg, 0, 100, &retries);
                        break;
                case O_INDEX:
                        r = parse_count("--index", optarg, 0, INT_MAX, &index);
                        break;
                case O_JSON:
                        json = true;
                        break;
                case O_SLURM:
                        slurm = true;
                        break;
                case O_SLURM_ARGS:
                        slurm_args = optarg;
                        break;
                case O_NO_WAIT:
                        no_wait = true;
                        break;
                case 'q':
                        q++;
                        break;
                case 'v':
                        v++;
                        break;
                case 'h':
                        fputs(batch_usage, stdout);
                        return 0;
                case ':':
                        return cli_usage_error("batch ", "option '%s' needs a value", argv[optind - 1]);
                default:
                        return cli_usage_error("batch ", "unknown option '%s'", argv[optind - 1]);
                }
                if (r)
                        return r;
        }
        if (!slurm && (slurm_args || no_wait))
                return cli_usage_error("batch ", "--slurm-args and --no-wait go with --slurm");
        if (slurm && index >= 0)
                return cli_usage_error("batch ", "--index runs one Trial on this machine; it does not go with --slurm");
        if (v && q)
                return cli_usage_error("batch ", "-v and -q cannot be used together");
        if (argc - optind != 1)
                return cli_usage_error("batch ", "batch needs one PLAN (a JSON Lines file, one Trial per line)");
        long long backoff_ms = BATCH_BACKOFF_DEFAULT_MS;
        const char *e = env->batch_backoff_ms;
        if (e && *e) {
                long ms = 0;
                if (parse_count("TRIALBOX_BATCH_BACKOFF_MS", e, 0, 3600000, &ms))
                        return TB_EXIT_USAGE;
                backoff_ms = ms;
        }
        struct batch_options opt = { .plan = argv[optind], .jobs = (unsigned)jobs, .retries = (unsigned)retries,
                                     .json = json, .verbosity = q ? 0 : 1 + v, .index = index,
                                     .backoff_ms = backoff_ms };
        opt.environ = env->environ;
        opt.plugin_path = env->plugin_path;
        opt.slurm = slurm;
        opt.slurm_args = slurm_args;
        opt.no_wait = no_wait;
        opt.slurm_max_running = slurm && jobs_given ? (unsigned)jobs : 0;
        return batch_run(&opt);
}
