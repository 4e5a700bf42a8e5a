/* `trialbox batch PLAN`: an Experiment on this machine. Each Trial of the
 * plan (plan.h) is exactly one `trialbox run` of this same binary; up to
 * --jobs run at once, void ones run again (--retries, with backoff), and
 * the batch can be interrupted and run again at any moment.
 *
 * The folders (all decided from what is on disk, so a resumed batch needs
 * no state of its own):
 *   OUTPUT_DIR              the Trial's latest attempt, `run`'s output folder,
 *                           plus trialbox.log (the run's stdout and stderr) and
 *                           launcher.json (the run's pid, start time and boot,
 *                           written before it starts: how a resumed batch
 *                           knows a launcher is still alive, or lost)
 *   OUTPUT_DIR.attempt-N    attempt N, moved aside when it was void and ran
 *                           again (a lost launcher is recorded there first as
 *                           void/launcher_lost)
 *   OUTPUT_DIR.repo         the clone of repo_from for the latest attempt
 *                           (OUTPUT_DIR.attempt-N.repo for attempt N)
 *   PLAN.results.jsonl      one line per Trial (see batch_result_line), beside
 *                           the plan: plan.jsonl's are plan.results.jsonl
 *
 * A Trial is final when OUTPUT_DIR/outcome.json is completed or failed, or
 * void with no retries left (1 + --retries attempts, not counting those the
 * operator interrupted); a final Trial never runs again, but one whose plan
 * line (its fingerprint) or Harness binary changed since, with
 * --rerun-changed (without it, the batch says so and runs nothing). Before
 * anything runs, the lines that will run are checked (batch_check.c): a
 * mistake that would make a Trial void every time is said, and nothing runs. A `running` record (or a launcher.json without outcome.json)
 * whose launcher is alive is waited for, not started again. */
#ifndef TB_BATCH_H
#define TB_BATCH_H

#include <stdbool.h>

struct tb_env;

/* Exit statuses of `batch` besides 0 (every Trial completed or failed),
 * TB_EXIT_USAGE (a bad plan or flags) and TB_EXIT_ERROR (the batch itself
 * failed: e.g. the results cannot be written, or another batch holds the plan). */
#define TB_BATCH_EXIT_VOID 1 /* some Trial stayed void, did not run, or is unrecorded (its session ran but
                              * trialbox could not write its final Outcome: never run again) */
/* Interrupted by SIGINT/SIGTERM/SIGHUP: 128 + the signal, after the running
 * Trials ended and the results were written. */

#define BATCH_BACKOFF_DEFAULT_MS 1000LL /* before attempt 2; doubled each time */
#define BATCH_BACKOFF_MAX_MS 60000LL

struct batch_options {
        const char *plan;
        unsigned jobs;         /* slots at once; >= 1 */
        unsigned retries;      /* attempts after a void one */
        bool json;             /* the summary as JSON on stdout */
        int verbosity;         /* 0: only the summary */
        long index;            /* >= 0: run only this Trial (0-based), as a Slurm array task; -1: all */
        const char *plugin_path; /* tb_env's: where the Harnesses' plugins are (their exclusive resources) */
        long long backoff_ms;  /* TRIALBOX_BATCH_BACKOFF_MS, or the default */
        const struct tb_env *env; /* the host environment (PATH for the Harness binaries, the plugins'
                                   * preflight in checking mode); NULL: no login checks */
        bool check;            /* --check: check every line, run nothing */
        bool rerun_changed;    /* --rerun-changed: run again a finished Trial whose line or binary changed */
        /* Slurm: see "Slurm" below. */
        char **environ;        /* tb_env's environment: Slurm's clients, a task's job ids; NULL: this process's */
        bool slurm;            /* --slurm: submit the plan as one job array, wait, gather */
        const char *slurm_args; /* --slurm-args, or NULL */
        bool no_wait;          /* --no-wait: return once the array is submitted */
        unsigned slurm_max_running; /* --jobs when given ("%MAX"); 0: no limit */
        bool grade_only;       /* --grade-only: run no Trial; grade again every one that ran */
        /* `trialbox ARGS…` (the command layer's main): each Trial's
         * `trialbox run …` (and each `trialbox grade …`) is handed to it in
         * a fork of the batch, with no exec, while the plan has not grown
         * the batch's memory by more than 1 MiB (batch_internal.h's
         * batch_fork_trialbox); NULL: each one execs the batch's binary. */
        int (*trial_main)(int argc, char **argv);
};

/* Slurm: `--slurm` submits one array (one task per plan line, each
 * `trialbox batch PLAN --index I --retries K` on its node), saves its id in
 * PLAN.slurm-job, polls squeue showing the same progress (from the Trials'
 * outcome.json), then gathers the results and the summary as a local
 * batch does. A later `trialbox batch PLAN` (with or without --slurm) while
 * PLAN.slurm-job exists waits for that job if it is still queued, then
 * gathers; it runs nothing on this machine. `--slurm` again with the job gone
 * submits a new array when some Trial has no final Outcome (the tasks of
 * final ones end at once). A `running` record with Slurm ids is judged by its
 * task in squeue, never by its pid (another node's). */
#define BATCH_SLURM_JOB_SUFFIX ".slurm-job"
/* The batch's results: PLAN.results.jsonl, PLAN's ".jsonl" replaced. */
#define BATCH_RESULTS_SUFFIX ".results.jsonl"
#define BATCH_SLURM_LOG_DIR "slurm-logs" /* beside the plan: each task's stdout and stderr */

/* Run the batch; prints progress (stderr) and the summary (stdout); returns
 * the exit status. */
int batch_run(const struct batch_options *opt);

#endif
