/* The batch runner's own parts, shared by its files and by nothing else:
 *   batch_scheduler.c the scheduler: settles each Trial from its folder, starts
 *                    what fits, waits (epoll: signals, pidfds, the progress timer)
 *   batch_records.c  the records batch reads and writes: outcome.json and
 *                    launcher.json in a Trial's folder, PLAN.results.jsonl
 *   batch_progress.c the live progress line and the finished lines
 *   batch_slurm.c    the Slurm driver: one job array for the plan
 * Everything here is experiments/batch.h's batch_run() underneath. */
#ifndef TB_BATCH_INTERNAL_H
#define TB_BATCH_INTERNAL_H

#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "experiments/batch.h"
#include "base/error.h"
#include "base/strv.h"
#include "experiments/plan.h"
#include "model/outcome.h"

struct report;
struct tb_error;
struct batch_harness;

/* T_ELSEWHERE: running in a Slurm task still in the queue (not ours to wait for). */
enum trial_state { T_PENDING, T_RUNNING, T_DONE, T_ELSEWHERE };
/* A Trial's grade: none to give (no grader, not run, or its grade.json is
 * final), wanted (to start, after its backoff), running, or given. */
enum grade_state { G_NONE, G_WANTED, G_RUNNING, G_FINAL };

struct btrial {
        const struct plan_trial *p;
        enum trial_state state;
        unsigned attempt;   /* the attempt in OUTPUT_DIR (running or last), 0: none yet */
        pid_t pid;          /* our child, or the adopted launcher */
        int pidfd;          /* an adopted launcher (not our child); -1 */
        long long due_ms;   /* PENDING: not before */
        int kind;           /* DONE: enum outcome_kind */
        unsigned slots;     /* RUNNING: the job slots it holds */
        bool noted;         /* its finished line was shown (Slurm: while waiting) */
        /* What it cannot share with a Trial running at once: its Harness's
         * exclusive resource (plugin.h), and "repo:PATH" for a repository
         * other lines name too (plan.h); NULL when none. */
        const char *exclusive[2];
        /* Its grader (batch_grade.c), when the plan line has one. */
        enum grade_state gstate;
        pid_t gpid;         /* G_RUNNING: the `trialbox grade` child */
        unsigned gtries;    /* grades started by this batch */
        long long gdue_ms;  /* G_WANTED: not before */
        int gstatus;        /* G_FINAL: enum grade_status, or -1 when it has none */
};

struct batch {
        const struct batch_options *opt;
        struct plan plan;
        struct btrial *t; /* one per plan line, in plan order */
        size_t n, next;   /* next: no PENDING Trial before it */
        int self_fd;      /* /proc/self/exe, opened once: the binary a Trial or a grade execs (batch_fork_trialbox) */
        size_t anon_base; /* the batch's anonymous memory when it began (batch_fork_trialbox) */
        int epfd, sfd, tfd, results_fd, plan_fd;
        sigset_t old_mask;
        unsigned used;    /* job slots held */
        struct strv held; /* the exclusive resources running Trials hold */
        struct strv exclusive; /* per Harness: "NAME=RESOURCE" ("NAME=" for none) */
        struct strv repo_keys; /* the "repo:PATH" resources, one per shared repository */
        size_t running, done, completed, failed, voids, unrecorded, done_here; /* done_here: ended in this run */
        long long start_ms;
        int stopping;     /* the signal that asked the batch to stop, or 0 */
        bool tty;         /* stderr is a terminal: the live progress line */
        char *results_path;
        /* Graders: what they gave (batch_grade.c) */
        size_t graded, passed, grade_errors, grade_voids, grading; /* grading: graders running */
        bool any_grader;    /* some plan line has one: the progress line shows the grades */
        /* Slurm */
        bool gather;        /* judge every Trial from disk, run nothing, retry nothing */
        long long job_id;   /* the array waited for, or 0 */
        /* batch_check.c: the Harnesses' plugins, loaded once */
        struct batch_harness *harnesses;
        size_t n_harnesses, cap_harnesses;
};

enum { EV_SIGNAL = 1, EV_TIMER, EV_PIDFD };
#define EV(kind, ix) (((unsigned long long)(kind) << 32) | (unsigned long long)(ix))

/* ---- batch_scheduler.c ---- */
/* Record `t` final (`kind`: enum outcome_kind, `rec` its record or NULL),
 * count it, show it, append its results line. */
void batch_mark_done(struct batch *b, struct btrial *t, int kind, json_object *rec);
/* One btrial per plan line (once): PENDING, with its Harness's exclusive
 * resource. */
void batch_trials_init(struct batch *b);
/* Settle every Trial from its folder, writing the results known so far. */
int batch_begin(struct batch *b, struct tb_error *err);
/* Rewrite PLAN.results.jsonl, print the summary; the batch's exit status. */
int batch_finish(struct batch *b, struct tb_error *err);

/* Move a void attempt (or a finished one to run again) aside, with its
 * clone, as OUTPUT_DIR.attempt-`attempt`, so the next one gets OUTPUT_DIR.
 * 0 or a negative errno. */
int batch_move_aside(const struct btrial *t, unsigned attempt);

/* ---- batch_check.c ---- */
/* A line's Harness binary as the batch finds it now (on tb_env's PATH). */
struct batch_binary {
        char *wanted;        /* harness_bin, or its plugin's default binary; NULL: the plugin cannot be loaded */
        char *path;          /* where it is found, or NULL: not there */
        long long size, mtime_ns; /* -1 when not there */
};
void batch_binary_find(struct batch *b, const struct plan_trial *p, struct batch_binary *out);
void batch_binary_done(struct batch_binary *bin);
/* launcher.json's and the results' `harness_binary`: {"path", "size",
 * "mtime_ns", "version"} (version null: no plugin hook says one). */
json_object *batch_binary_json(const struct batch_binary *bin);
/* Is `t`'s Harness binary not there now (a void that can never succeed:
 * not retried)? *why says so (malloc'd). */
bool batch_binary_gone(struct batch *b, const struct btrial *t, char **why);
/* `batch --check`: every line checked (its Harness's plugin, its binary,
 * its skills folder, its repo_from revision, its login or key through the
 * plugin's preflight in checking mode), each problem one line
 * "PLAN:LINE: field 'F': what"; 0, or TB_EXIT_USAGE. Runs nothing. */
int batch_check_only(struct batch *b);
/* The start of a batch: the finished Trials whose line (its fingerprint)
 * or Harness binary (path, size, mtime) changed since they ran, each one
 * line, and the lines that will run checked as batch_check_only does.
 * Anything found: TB_EXIT_USAGE, nothing run or moved (but with
 * --rerun-changed, changed Trials are not a problem: they are moved aside
 * to run again). 0 otherwise. */
int batch_check_start(struct batch *b);
/* The plugins loaded for the checks, released. */
void batch_check_done(struct batch *b);

/* ---- batch_records.c ---- */
/* OUTPUT_DIR.attempt-N, malloc'd. */
char *batch_attempt_dir(const char *out, unsigned n);
/* How many attempts were moved aside: OUTPUT_DIR.attempt-1 … -N. */
unsigned batch_count_asides(const char *out);
/* The JSON object in `dir`/`name`, read without following links nor blocking
 * on a FIFO, a regular file of at most 1 MiB, into *rec: 0; -ENOENT when
 * there is none; another negative errno when there is one that cannot be
 * read (-EACCES, -EIO, a link, not a regular file, -EBADMSG: not a JSON
 * object), *why saying so (malloc'd). Such a record is never taken for
 * none: the batch does not run a Trial again on that guess. */
int batch_load_record(const char *dir, const char *name, json_object **rec, char **why);
/* The same, NULL for none and for one that cannot be read: for what only
 * shows or counts (progress, results). */
json_object *batch_read_record(const char *dir, const char *name);
/* A record's "outcome" string, or NULL. */
const char *batch_record_kind(json_object *j);
/* A Trial whose session ran but whose final Outcome trialbox could not
 * write: final (never run again: the agent's result may not be repeated),
 * counted apart. Beside enum outcome_kind's values. */
#define BATCH_KIND_UNRECORDED (OUTCOME_VOID + 1)
/* "completed", "failed", "unrecorded" as their kinds; anything else is void. */
int batch_kind_from_name(const char *s);
/* The last non-empty line of OUTPUT_DIR/trialbox.log, escaped, malloc'd. */
char *batch_log_tail(const char *out);
/* The environment Slurm's clients and a task's job ids come from. */
char *const *batch_environ(const struct batch *b);
/* launcher.json in `t`'s OUTPUT_DIR for the child `pid`, before it runs,
 * with the attempt's `nonce`, the line's fingerprint (`plan_fingerprint`)
 * and its Harness binary (`harness_binary`, batch_binary_json): what it
 * ran, for a later batch to tell that the line or the binary changed. */
int batch_write_launcher(struct batch *b, const struct btrial *t, pid_t pid, const char *nonce);
/* A fresh token (OUTCOME_NONCE_LEN hex digits, getrandom). */
void batch_nonce(char nonce[OUTCOME_NONCE_LEN + 1]);
/* Was `rec` (read from `out`/outcome.json) written by a run this batch
 * started: its launcher_nonce the one launcher.json holds? 1 or 0; a
 * negative errno (*why says it, malloc'd) when launcher.json is there but
 * cannot be read: cannot tell. */
int batch_record_ours(const char *out, json_object *rec, char **why);
/* Rename `out`/outcome.json to outcome.json.foreign (for review). */
void batch_set_aside_foreign(const char *out);
/* Record a launcher that ended without a final Outcome as void/launcher_lost
 * (keeping `running`'s fields; `running` may be NULL); the new record. */
json_object *batch_record_lost(const struct btrial *t, json_object *running, const char *why, bool refused);
/* A launcher the batch forwarded the operator's signal `sig` to ended
 * without a final Outcome (before its session ran: e.g. while it cloned):
 * recorded void/interrupted, like a run that got the signal (keeping
 * `running`'s fields; may be NULL); the new record. */
json_object *batch_record_interrupted_launcher(const struct btrial *t, json_object *running, int sig);
/* Does `rec` say void/interrupted (the operator's signal: run again, not
 * counted against --retries)? */
bool batch_record_interrupted(json_object *rec);
/* Of the attempts OUTPUT_DIR.attempt-1 … -asides, those void/interrupted. */
unsigned batch_count_interrupted(const char *out, unsigned asides);
/* Of them, those that count against --retries: void, not interrupted (a
 * finished attempt moved aside to run again with a changed line does not). */
unsigned batch_count_retried(const char *out, unsigned asides);
/* The launcher ran the session (its record says `running`) but exited
 * with TB_EXIT_ERROR, its final Outcome unwritten: record it as
 * "unrecorded" in `out` (keeping the running record's fields); the new
 * record. */
json_object *batch_record_unrecorded(const struct btrial *t, json_object *running);
/* The results of the plan `plan_file`: PLAN.results.jsonl beside it, its
 * ".jsonl" replaced ("exp/plan.jsonl" gives "exp/plan.results.jsonl";
 * "exp/plan" gives "exp/plan.results.jsonl"); malloc'd. */
char *batch_results_path(const char *plan_file);
/* The name an earlier trialbox gave every plan's results, in the plan's folder. */
#define BATCH_RESULTS_OLD_NAME "results.jsonl"
/* When b->results_path is missing and the plan's folder holds results.jsonl
 * that are this plan's (its first lines the plan's Trials, in order, with
 * their ids and output folders: what a batch writes), rename it to
 * b->results_path. 1: renamed; 0: nothing to do; a negative errno. */
int batch_results_adopt_old(const struct batch *b);
/* One results line for `t` (its record may be NULL), with its newline. */
char *batch_result_line(const struct btrial *t, json_object *record);
void batch_results_append(struct batch *b, const char *line);
/* The results rewritten whole in plan order; every line counted into `rep`. */
int batch_results_rewrite(struct batch *b, struct report *rep, struct tb_error *err);

/* ---- batch_grade.c ---- */
/* `t` is final with `kind` (enum outcome_kind): does it get a grade now?
 * Then it is G_WANTED (its shared repository held until it is given: no
 * Trial runs there before) and true is returned: its results line waits
 * for the grade. Otherwise a grade already on disk is counted. */
bool batch_grade_queue(struct batch *b, struct btrial *t, int kind);
/* Start the graders that are due and fit (before any Trial: a grade
 * holds a shared repository); returns the ms until one waiting for its
 * backoff is due (-1: none). */
long long batch_grade_schedule(struct batch *b);
/* A reaped child: a grader's? Then its grade is settled (again, or
 * final) and true is returned. */
bool batch_grade_reaped(struct batch *b, pid_t pid, int status);
/* Is some grade still wanted or running? */
bool batch_grade_pending(const struct batch *b);
/* Forward `sig` to every running grader. */
void batch_grade_forward(struct batch *b, int sig);
/* Did some grade stay void (the batch's exit status says so)? */
bool batch_grade_void_left(const struct batch *b);

/* ---- batch_scheduler.c (for batch_grade.c) ---- */
/* The resource the Harness `harness` cannot share (its plugin's), or NULL. */
const char *batch_harness_exclusive(struct batch *b, const char *harness);
/* The environment a child of the batch gets: the batch's own, without a
 * Trial's token; TRIALBOX_CPUS_BUSY=1 in it when the batch runs `jobs` at
 * once on as many CPUs as it may use or fewer (base/cpus.h: every CPU has
 * a Trial, none is free for a Trial's helper thread). */
void batch_child_env(unsigned jobs, struct strv *envp);
/* Where a launcher or a grader finds its `env` (--env-file /dev/fd/N): the
 * read end of a pipe holding the JSON, whole (it fits: session_env.h), its
 * write end closed. No value is ever in an argv, nor on disk. */
#define BATCH_ENV_FD 3
#define BATCH_ENV_FILE "/dev/fd/3"
/* That pipe's read end for `env`, -1 when it is empty, or -errno. */
int batch_env_pipe(const struct strv *env);
/* Start `trialbox ARGS…` (argv[0] "trialbox", envp its environment) as the
 * batch's child: while the batch's anonymous memory is at most
 * BATCH_FORK_MAX_ANON more than when it began (a plan of up to some 2,000
 * lines), a fork that hands argv to opt->trial_main, with no exec (an exec
 * and a load of trialbox fewer for each Trial and each grade;
 * docs/performance.md, "batch"); beyond, a fork that execs the batch's
 * binary (self_fd), so that no Trial's rusage peak carries the plan's
 * memory (the keeper shares trialbox's). Either way the child
 * starts as the exec'd binary would: every signal's default and the mask
 * the batch had, in a process group of its own, stdin /dev/null, stdout
 * and stderr on `log_fd`, `env_fd` (>= 0) at BATCH_ENV_FD, every other fd
 * of the batch's closed, nothing the batch held for its stderr. `before`
 * (NULL: none) runs first in it, given `ctx` and `keep_fd` (an fd of the
 * batch's it may still read; closed after it); a nonzero return ends the
 * child with that status. The child's pid in *pid. */
#define BATCH_FORK_MAX_ANON ((size_t)1 << 20)
struct batch_fork {
        char **argv, **envp;
        int log_fd, env_fd, keep_fd;
        int (*before)(void *ctx, int keep_fd);
        void *ctx;
};
int batch_fork_trialbox(struct batch *b, const struct batch_fork *f, pid_t *pid, struct tb_error *err);

/* ---- batch_progress.c ---- */
size_t batch_total(const struct batch *b);
void batch_progress_line(struct batch *b);
void batch_progress_end(struct batch *b);
void batch_note_finished(struct batch *b, struct btrial *t, json_object *rec);
/* The line a given grade is noted with (not on a terminal). */
void batch_note_graded(struct batch *b, struct btrial *t, json_object *grade);

/* ---- batch_slurm.c ---- */
/* A launcher record with Slurm ids: 0 none (judge it by its pid), 1 its task
 * is still queued or running (or squeue cannot say), -1 its task is gone
 * (*why says so, malloc'd). */
int batch_slurm_launcher(struct batch *b, const struct btrial *t, json_object *launcher, char **why);
/* Does this batch run through Slurm (--slurm, or PLAN.slurm-job exists)? */
bool batch_slurm_mode(const struct batch *b);
/* Submit or wait for the array, then gather; the exit status. */
int batch_slurm_run(struct batch *b, struct tb_error *err);

#endif
