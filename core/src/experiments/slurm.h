/* Slurm: what `trialbox batch PLAN --slurm` needs to run a plan as one job
 * array (one task per plan line, each `trialbox batch PLAN --index I` on its
 * node), to wait for it, and what a Trial records of the job it runs in.
 *
 * Everything goes through Slurm's own clients (sbatch, squeue, scancel,
 * scontrol), run with fork/exec and never through a shell; plan data never
 * reaches a shell either: the job's one shell line (sbatch --wrap) holds only
 * the trialbox binary, the plan's path and the batch's own flags, each quoted.
 * The plan's folders must be on a filesystem every node sees, at the same
 * path, and trialbox installed at the same path on every node.
 *
 * Functions return 0 or a negative errno and fill `err`; none prints.
 *
 * `trialbox batch PLAN --slurm` with them:
 *   struct slurm_array_request req = { .trialbox = "/proc/self/exe" resolved, .plan = realpath(PLAN),
 *           .tasks = lines, .max_running = jobs, .log_dir = made beside the plan,
 *           .slurm_args = --slurm-args, .task_args = { "--retries", "K", NULL } };
 *   for each Trial: slurm_limits_add(&req.limits, timeout_s, memory_bytes, cpus);
 *   slurm_submit(&req, environ, &id, &err);          -EINVAL: a bad --slurm-args (exit 2)
 *   record id beside the plan (for --no-wait and a later resume), then
 *   slurm_array_wait(id, environ, tick, ctx, &err);  tick: progress from the outcome.json
 *           files; on SIGINT/SIGTERM slurm_array_cancel(id, SIGTERM, …) once and keep waiting
 *   gather PLAN.results.jsonl from each Trial's outcome.json; a Trial with none (its task never
 *   ran trialbox: node failure, time limit, trialbox missing on the node) is void, with
 *   slurm_jobcomp_path + slurm_jobcomp_find for how its task ended where the cluster keeps it.
 *   Each task (`--index I`) records slurm_ids_from_env(environ) in its Outcome. */
#ifndef TB_SLURM_H
#define TB_SLURM_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "base/strv.h"
#include "model/job.h"

/* ---- the job array ---- */

/* The limits one array task asks Slurm for (one array has one set of
 * limits): the largest over the plan's Trials; a timeout or memory limit
 * that one Trial lacks is asked for by none (-1), or it would be killed by
 * another Trial's limit; CPUs are the most any Trial asks (unset: 1).
 * Zero-initialise, then slurm_limits_add each Trial. 0 or -1: not asked. */
struct slurm_limits {
        long long timeout_s;    /* a Trial's longest attempt: its --timeout and --kill-after, seconds */
        long long memory_bytes; /* --memory */
        double cpus;            /* --cpus */
        /* Each task runs its Trial up to 1 + retries times (the task's
         * --retries), backoff_ms before the second attempt, doubled each
         * time up to 60 s (the batch's backoff): its --time covers them all. */
        unsigned retries;
        long long backoff_ms;
};
/* Widen `l` to cover a Trial asking for these (0: that limit is not set). */
void slurm_limits_add(struct slurm_limits *l, long long timeout_s, long long memory_bytes, double cpus);
/* What one task may take, in seconds, for --time: (1 + retries) attempts of
 * timeout_s, the backoff between them, and SLURM_TIME_MARGIN_S; -1 when no
 * timeout is asked. */
long long slurm_time_limit_s(const struct slurm_limits *l);

/* What Slurm gets on top of a Trial's own limits: trialbox's start, the
 * Outcome, the kill after a timeout (--time); trialbox and bwrap themselves
 * (--mem). */
#define SLURM_TIME_MARGIN_S 120
#define SLURM_MEMORY_MARGIN_BYTES (64LL << 20)

struct slurm_array_request {
        const char *trialbox;  /* absolute path of the trialbox binary (the same on every node) */
        const char *plan;      /* absolute path of the plan */
        size_t tasks;          /* plan lines: the array is 0..tasks-1 (at least 1) */
        unsigned max_running;  /* "%MAX" from --jobs; 0: no limit */
        const char *log_dir;   /* each task's stdout and stderr: LOG_DIR/slurm-%A_%a.out (made by the caller) */
        const char *slurm_args; /* --slurm-args as given, or NULL (split by slurm_args_split) */
        char *const *task_args; /* more flags for each task's `trialbox batch` (e.g. "--retries", "3"); NULL-terminated, or NULL */
        struct slurm_limits limits;
};

/* Split --slurm-args into words as a shell would, without a shell: words
 * separated by blanks; '…' keeps everything, "…" keeps everything but \" \\
 * \$ \`, a backslash outside quotes keeps the next character. Nothing is
 * expanded ($, `, *, ~ stay as they are). Appends to `out`; -EINVAL for an
 * unclosed quote or a trailing backslash. */
int slurm_args_split(const char *s, struct strv *out, struct tb_error *err);

/* The sbatch argv (argv[0] "sbatch", to be looked up on PATH) for `req`:
 *   sbatch --job-name=trialbox-batch --output=LOG/slurm-%A_%a.out
 *          [--time=M] [--mem=NM] [--cpus-per-task=C]   each unless in --slurm-args
 *          [--slurm-args words…]
 *          --parsable --array=0-(N-1)[%MAX]
 *          --wrap="exec 'TRIALBOX' batch 'PLAN' --index \"$SLURM_ARRAY_TASK_ID\" [task_args…]"
 * --time is slurm_time_limit_s() in minutes, rounded up, --mem the
 * memory plus SLURM_MEMORY_MARGIN_BYTES in MiB, --cpus-per-task ceil(cpus).
 * --slurm-args may override the job name and output, not --array, --wrap,
 * --parsable or --wait (-EINVAL: they are trialbox's own). */
int slurm_sbatch_argv(const struct slurm_array_request *req, struct strv *argv, struct tb_error *err);

/* Submit the array (sbatch, with `envp`: sbatch passes it on to the tasks)
 * and return its job id in *job_id. sbatch's own message on failure; -ENOENT
 * when sbatch is not installed. */
int slurm_submit(const struct slurm_array_request *req, char *const envp[], long long *job_id,
                 struct tb_error *err);

/* Where the array is, from one `squeue -h -r -j ID -o '%i %T'`. */
struct slurm_array_state {
        size_t pending;  /* PENDING (incl. not yet split off the array record) */
        size_t running;  /* RUNNING, CONFIGURING, COMPLETING */
        size_t other;    /* SUSPENDED, REQUEUED, …: still there */
        bool gone;       /* nothing left in the queue: every task ended */
};
/* Ask squeue once. A job id the controller has forgotten is gone. -EAGAIN
 * when squeue could not ask (controller unreachable: try again). */
int slurm_array_poll(long long job_id, char *const envp[], struct slurm_array_state *st, struct tb_error *err);

/* The same for one task of the array ("1234_5"): for resume, a Trial whose
 * outcome.json says `running` with Slurm ids is alive while its task is
 * still in the queue (its pid and boot id are another node's: do not judge
 * it by them); gone means the launcher is lost. */
int slurm_task_poll(long long job_id, long long task, char *const envp[], struct slurm_array_state *st,
                    struct tb_error *err);

/* Called after every poll of slurm_array_wait (and at once when a signal
 * interrupts its sleep): show progress, look at a signal flag. Non-zero
 * stops the wait, which returns that value. */
typedef int (*slurm_tick_fn)(const struct slurm_array_state *st, void *userdata);

/* Poll every second (squeue, not `sbatch --wait`, whose backoff reaches
 * 32 s) until the array is gone: 0. Tolerates the controller being
 * unreachable for SLURM_POLL_PATIENCE_S seconds in a row, then -EAGAIN. */
#define SLURM_POLL_PATIENCE_S 120
int slurm_array_wait(long long job_id, char *const envp[], slurm_tick_fn tick, void *userdata,
                     struct tb_error *err);

/* Stop the array: its pending tasks are cancelled, its running ones get
 * `sig` (SIGTERM: each `trialbox batch --index` stops its Trial and writes
 * the Outcome), through scancel. */
int slurm_array_cancel(long long job_id, int sig, char *const envp[], struct tb_error *err);

/* ---- how a task ended, after the controller forgot it (no slurmdbd) ---- */

struct slurm_task_end {
        char state[32];  /* COMPLETED, FAILED, TIMEOUT, CANCELLED, NODE_FAIL, OUT_OF_MEMORY, … */
        int exit_code;   /* the task's exit status */
        int signal;      /* the signal that ended it, or 0 */
};
/* The cluster's jobcomp/filetxt file (`scontrol show config`: JobCompLoc
 * when JobCompType is jobcomp/filetxt), malloc'd in *path; -ENOENT when the
 * cluster keeps none. */
int slurm_jobcomp_path(char *const envp[], char **path, struct tb_error *err);
/* Parse one jobcomp/filetxt line; true when it is task `task` of array
 * `job_id` (or job `job_id` itself when task is -1), filling *end. */
bool slurm_jobcomp_line_match(const char *line, long long job_id, long long task, struct slurm_task_end *end);
/* Find the last record of that task in the jobcomp file `path`: 0, or
 * -ENOENT when it has none (yet). */
int slurm_jobcomp_find(const char *path, long long job_id, long long task, struct slurm_task_end *end,
                       struct tb_error *err);

#endif
