/* The Slurm driver of a batch: one job array for the plan
 * (experiments/batch.h "Slurm", experiments/batch_internal.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/path.h"
#include "base/str.h"
#include "base/strv.h"
#include "experiments/batch_internal.h"
#include <limits.h>
#include <sys/signalfd.h>
#include "experiments/slurm.h"
#include "model/limits.h"
#include "model/outcome.h"

/* ---- Slurm: one job array for the plan (batch.h "Slurm") ---- */

/* A launcher record (`running` outcome.json or launcher.json) with Slurm ids:
 * its pid and boot are another node's, so it is judged by its task in the
 * queue. 0: no Slurm ids (judge it by its pid); 1: its task is still queued
 * or running (or squeue cannot say now); -1: its task is gone, the launcher
 * lost (*why says so). */
int batch_slurm_launcher(struct batch *b, const struct btrial *t, json_object *launcher, char **why)
{
        json_object *v;
        if (!json_object_object_get_ex(launcher, "slurm_job_id", &v) || !json_object_is_type(v, json_type_int) ||
            json_object_get_int64(v) <= 0)
                return 0;
        long long job = json_object_get_int64(v), task = -1;
        if (json_object_object_get_ex(launcher, "slurm_array_task_id", &v) && json_object_is_type(v, json_type_int))
                task = json_object_get_int64(v);
        char *const *env = batch_environ(b);
        struct slurm_ids self = slurm_ids_from_env(env);
        if (self.job_id == job && self.array_task_id == task) {
                /* The same plain job or allocation (no array task): a batch run
                 * again in it, its launchers this node's, judged by their pid. */
                if (task < 0)
                        return 0;
                /* This very array task ran it before: it was requeued. */
                *why = xasprintf("its Slurm task %lld_%lld was requeued", job, task);
                return -1;
        }
        struct slurm_array_state st;
        struct tb_error err = { 0 };
        int r = task >= 0 ? slurm_task_poll(job, task, env, &st, &err) : slurm_array_poll(job, env, &st, &err);
        if (r == 0 && st.gone) {
                *why = xasprintf("its Slurm task %lld_%lld is gone from the queue", job, task);
                return -1;
        }
        _cleanup_free_ char *id = str_escape(t->p->id);
        if (r < 0)
                log_warn("%s: cannot ask Slurm about task %lld_%lld: %s; it counts as still running", id, job, task,
                         err.msg);
        else
                log_warn("%s: still running in Slurm task %lld_%lld; run the batch again once it ended", id, job,
                         task);
        return 1;
}

/* PLAN.slurm-job beside the plan, whatever the folder the plan was named from. */
static char *slurm_job_path(const struct batch *b) { return xasprintf("%s%s", b->plan.file, BATCH_SLURM_JOB_SUFFIX); }
/* The same as the user named the plan, for messages. */
static char *slurm_job_shown(const struct batch *b) { return xasprintf("%s%s", b->opt->plan, BATCH_SLURM_JOB_SUFFIX); }

/* The job id saved beside the plan: > 0, 0 when none is saved, -1 when the file is not one. */
static long long slurm_job_read(const char *path)
{
        _cleanup_free_ char *text = read_file(path, 64, NULL);
        if (!text)
                return 0;
        char *end;
        errno = 0;
        long long id = strtoll(text, &end, 10);
        return errno || end == text || id <= 0 || (*end && *end != '\n') ? -1 : id;
}

bool batch_slurm_mode(const struct batch *b)
{
        if (b->opt->index >= 0)
                return false;
        if (b->opt->slurm)
                return true;
        _cleanup_free_ char *path = slurm_job_path(b);
        struct stat st;
        return lstat(path, &st) == 0;
}

/* Count what the Trials' folders say now (progress while the array runs): a
 * Trial is done once its outcome.json is final and no attempt is left. */
static void slurm_scan(struct batch *b)
{
        for (size_t i = 0; i < b->n; i++) {
                struct btrial *t = &b->t[i];
                if (t->state == T_DONE)
                        continue;
                json_object *rec = batch_read_record(t->p->output_dir, "outcome.json");
                const char *k = batch_record_kind(rec);
                if (k && strcmp(k, "running") != 0) {
                        int kind = batch_kind_from_name(k);
                        unsigned asides = batch_count_asides(t->p->output_dir), attempt = asides + 1;
                        /* Void for good: its retries used, and not the operator's interruption. */
                        bool spent = !batch_record_interrupted(rec) &&
                                     1 + batch_count_retried(t->p->output_dir, asides) >= 1 + b->opt->retries;
                        if (kind != OUTCOME_VOID || spent) {
                                t->attempt = attempt;
                                batch_mark_done(b, t, kind, rec);
                                b->done_here++;
                        }
                }
                json_object_put(rec);
        }
}

/* Forget what the scans counted: the gathering settles every Trial again. */
static void slurm_scan_reset(struct batch *b)
{
        for (size_t i = 0; i < b->n; i++)
                b->t[i].state = T_PENDING;
        b->done = b->completed = b->failed = b->voids = b->unrecorded = b->running = 0;
}

/* After every squeue poll: a signal cancels the array (once; its running
 * Trials get SIGTERM and record their Outcomes, and the wait goes on), then
 * the progress. */
static int slurm_tick(const struct slurm_array_state *st, void *userdata)
{
        struct batch *b = userdata;
        struct signalfd_siginfo si;
        while (read(b->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                int sig = (int)si.ssi_signo;
                if (sig == SIGCHLD || b->stopping)
                        continue;
                b->stopping = sig;
                batch_progress_end(b);
                log_notice("cancelling job %lld (signal %d): its running Trials stop and record their Outcomes",
                           b->job_id, sig);
                struct tb_error err = { 0 };
                if (slurm_array_cancel(b->job_id, SIGTERM, batch_environ(b), &err) < 0)
                        log_error("%s", err.msg);
        }
        b->running = st->running;
        slurm_scan(b);
        batch_progress_line(b);
        return 0;
}

/* Submit the plan as one array and save its id beside the plan. -EINVAL: a
 * bad --slurm-args. */
static int slurm_submit_plan(struct batch *b, struct tb_error *err)
{
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n < 0)
                return tb_fail(err, -errno, "cannot find the trialbox binary (/proc/self/exe): %s", strerror(errno));
        self[n] = '\0';
        const char *plan = b->plan.file;
        _cleanup_free_ char *logs = xasprintf("%s/%s", b->plan.dir, BATCH_SLURM_LOG_DIR);
        if (mkdir(logs, 0755) < 0 && errno != EEXIST)
                return tb_fail(err, -errno, "cannot create '%s': %s; fix the plan folder's permissions", logs,
                               strerror(errno));
        char retries[16];
        snprintf(retries, sizeof retries, "%u", b->opt->retries);
        char *task_args[] = { "--retries", retries, NULL };
        struct slurm_array_request req = { .trialbox = self, .plan = plan, .tasks = b->n,
                                           .max_running = b->opt->slurm_max_running, .log_dir = logs,
                                           .slurm_args = b->opt->slurm_args, .task_args = task_args };
        req.limits.retries = b->opt->retries;
        req.limits.backoff_ms = b->opt->backoff_ms;
        for (size_t i = 0; i < b->n; i++) {
                const struct plan_trial *p = &b->plan.v[i];
                long long ms = 0, bytes = 0, milli = 0, grace = LIMITS_DEFAULT_KILL_AFTER_MS;
                if (p->more->timeout && limits_parse_duration("--timeout", p->more->timeout, false, &ms, err) < 0)
                        return -EINVAL;
                if (p->more->kill_after &&
                    limits_parse_duration("--kill-after", p->more->kill_after, true, &grace, err) < 0)
                        return -EINVAL;
                if (ms > 0) /* an attempt may run its timeout and the grace after it */
                        ms += grace;
                if (p->more->memory && limits_parse_size("--memory", p->more->memory, &bytes, err) < 0)
                        return -EINVAL;
                if (p->more->cpus && limits_parse_cpus("--cpus", p->more->cpus, &milli, err) < 0)
                        return -EINVAL;
                slurm_limits_add(&req.limits, (ms + 999) / 1000, bytes, (double)milli / 1000.0);
        }
        int r = slurm_submit(&req, batch_environ(b), &b->job_id, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *path = slurm_job_path(b);
        _cleanup_free_ char *dir = path_dirname(path);
        _cleanup_close_ int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char line[32];
        snprintf(line, sizeof line, "%lld\n", b->job_id);
        const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        r = dirfd < 0 ? -errno : write_file_atomic_at(dirfd, name, line, strlen(line), 0644, WRITE_SYNC_FILE);
        if (r < 0) /* the array runs regardless: say its id, so it can be waited for or cancelled */
                return tb_fail(err, r, "job %lld was submitted but its id cannot be saved in '%s': %s; cancel it "
                               "(scancel %lld) or save the id there yourself",
                               b->job_id, path, strerror(-r), b->job_id);
        _cleanup_free_ char *shown = slurm_job_shown(b);
        log_notice("submitted job array %lld (%zu tasks); its id is in '%s'", b->job_id, b->n, shown);
        return 0;
}

/* `batch PLAN --slurm`, or a batch resumed while PLAN.slurm-job exists:
 * wait for the saved job while it is queued, else submit (--slurm, when some
 * Trial has no final Outcome); then gather. Returns the exit status. */
int batch_slurm_run(struct batch *b, struct tb_error *err)
{
        char *const *env = batch_environ(b);
        _cleanup_free_ char *job_path = slurm_job_path(b), *shown = slurm_job_shown(b);
        long long saved = slurm_job_read(job_path);
        batch_trials_init(b);
        if (b->opt->slurm) { /* --slurm-args are checked as the plan is, whether or not they are used */
                struct strv argv = { 0 };
                struct slurm_array_request check = { .trialbox = "/", .plan = "/", .tasks = b->n, .log_dir = "/",
                                                     .slurm_args = b->opt->slurm_args };
                int r = slurm_sbatch_argv(&check, &argv, err);
                strv_done(&argv);
                if (r < 0)
                        return TB_EXIT_USAGE;
        }
        if (saved < 0)
                log_warn("'%s' does not hold a job id; remove it", shown);
        if (saved > 0) {
                struct slurm_array_state st;
                struct tb_error perr = { 0 };
                int r = slurm_array_poll(saved, env, &st, &perr);
                if (r == -EAGAIN || (r == 0 && !st.gone)) {
                        b->job_id = saved;
                        log_notice("job %lld (saved in '%s') is still in the queue: waiting for it", saved, shown);
                } else if (r < 0) {
                        log_warn("cannot ask Slurm about job %lld (saved in '%s'): %s; gathering what its Trials "
                                 "recorded", saved, shown, perr.msg);
                }
        }
        if (!b->job_id && b->opt->slurm) {
                slurm_scan(b);
                bool left = b->done < b->n;
                slurm_scan_reset(b);
                if (!left) {
                        log_notice("every Trial of '%s' has a final Outcome: nothing to submit", b->opt->plan);
                } else {
                        int r = slurm_submit_plan(b, err);
                        if (r < 0)
                                return r == -EINVAL ? TB_EXIT_USAGE : TB_EXIT_ERROR;
                }
        }
        if (b->job_id && b->opt->no_wait) {
                printf("%lld\n", b->job_id);
                return 0;
        }
        if (b->job_id) {
                b->start_ms = now_ms();
                int r = slurm_array_wait(b->job_id, env, slurm_tick, b, err);
                batch_progress_end(b);
                if (r < 0) {
                        char why[sizeof err->msg];
                        snprintf(why, sizeof why, "%s", err->msg);
                        tb_fail(err, r, "%s; run the same command again to wait for job %lld and gather", why,
                                b->job_id);
                        return TB_EXIT_ERROR;
                }
        }
        slurm_scan_reset(b);
        b->gather = true;
        if (batch_begin(b, err) < 0)
                return TB_EXIT_ERROR;
        return batch_finish(b, err);
}
