/* A batch's graders (experiments/batch_internal.h): a Trial of a plan line
 * with a `grade` gets one `trialbox grade` (trial/grade.h) once it has
 * completed or failed, before any other Trial takes its shared
 * repository. A void grade runs again (up to --retries more times, with
 * the Trials' backoff), without the Trial; a resumed batch grades what has
 * no grade yet or a void one; --grade-only grades again every Trial that
 * ran. The grade's record is OUTPUT_DIR/grade.json; its log
 * OUTPUT_DIR/grade.log. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/spawn.h"
#include "base/str.h"
#include "experiments/batch_internal.h"
#include "model/grade.h"

#define GRADE_LOG "grade.log"

/* The grade.json on disk, its status, or -1 when there is none. */
static int grade_on_disk(const struct btrial *t, json_object **rec)
{
        *rec = batch_read_record(t->p->output_dir, "grade.json");
        json_object *s = NULL;
        enum grade_status st;
        if (*rec && json_object_object_get_ex(*rec, "status", &s) && json_object_is_type(s, json_type_string) &&
            grade_status_parse(json_object_get_string(s), &st) == 0)
                return (int)st;
        return *rec ? GRADE_ERROR : -1;
}

/* Count a final grade. */
static void count(struct batch *b, int status)
{
        b->graded += status == GRADE_PASSED || status == GRADE_FAILED;
        b->passed += status == GRADE_PASSED;
        b->grade_errors += status == GRADE_ERROR;
        b->grade_voids += status == GRADE_VOID;
}

/* A shared repository is held from the Trial's end until its grade is
 * given: the grader sees it as the Trial left it. */
static void hold_repo(struct batch *b, const struct btrial *t)
{
        if (t->exclusive[1])
                strv_add(&b->held, t->exclusive[1]);
}

static void release_repo(struct batch *b, const struct btrial *t)
{
        for (size_t i = 0; t->exclusive[1] && i < b->held.n; i++)
                if (strcmp(b->held.v[i], t->exclusive[1]) == 0) {
                        free(b->held.v[i]);
                        b->held.v[i] = b->held.v[--b->held.n];
                        b->held.v[b->held.n] = NULL;
                        return;
                }
}

bool batch_grade_queue(struct batch *b, struct btrial *t, int kind)
{
        if (!t->p->more->grade || (kind != OUTCOME_COMPLETED && kind != OUTCOME_FAILED))
                return false;
        if (b->gather && !b->opt->grade_only)
                return false; /* graded where the Trial ran (a Slurm task) */
        json_object *rec = NULL;
        int st = grade_on_disk(t, &rec);
        json_object_put(rec);
        if (!b->opt->grade_only && st >= 0 && st != GRADE_VOID) {
                t->gstate = G_FINAL;
                t->gstatus = st;
                count(b, st);
                return false;
        }
        t->gstate = G_WANTED;
        t->gdue_ms = 0;
        hold_repo(b, t);
        return true;
}

bool batch_grade_pending(const struct batch *b)
{
        for (size_t i = 0; i < b->n; i++)
                if ((b->t[i].gstate == G_WANTED && !b->stopping) || b->t[i].gstate == G_RUNNING)
                        return true;
        return false;
}

bool batch_grade_void_left(const struct batch *b)
{
        for (size_t i = 0; i < b->n; i++)
                if ((b->opt->index < 0 || (long)i == b->opt->index) &&
                    (b->t[i].gstate == G_WANTED || (b->t[i].gstate == G_FINAL && b->t[i].gstatus == GRADE_VOID)))
                        return true;
        return false;
}

void batch_grade_forward(struct batch *b, int sig)
{
        for (size_t i = 0; i < b->n; i++)
                if (b->t[i].gstate == G_RUNNING && b->t[i].gpid > 0)
                        kill(b->t[i].gpid, sig);
}

/* Start `t`'s grader: `trialbox grade`, in a fork of the batch, its output
 * in OUTPUT_DIR/grade.log. */
static int start(struct batch *b, struct btrial *t, struct tb_error *err)
{
        const struct plan_trial *p = t->p;
        _cleanup_free_ char *log = xasprintf("%s/%s", p->output_dir, GRADE_LOG);
        _cleanup_close_ int log_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (log_fd < 0)
                return tb_fail(err, -errno, "cannot grade Trial '%s': '%s': %s", p->id, log, strerror(errno));
        _cleanup_close_ int env_fd = batch_env_pipe(&p->more->grade->env);
        if (env_fd < -1)
                return tb_fail(err, env_fd, "cannot grade Trial '%s': its grader's env: %s", p->id, strerror(-env_fd));
        _cleanup_free_ char *clone = plan_clone_dir(p->output_dir);
        _cleanup_strv_ struct strv argv = { 0 };
        _cleanup_strv_ struct strv envp = { 0 };
        strv_add(&argv, "trialbox");
        plan_grade_args(p->more->grade, p->output_dir, p->repo ? p->repo : clone, BATCH_ENV_FILE, &argv);
        batch_child_env(b->opt->jobs, &envp);
        struct batch_fork f = { .argv = argv.v, .envp = envp.v, .log_fd = log_fd, .env_fd = env_fd, .keep_fd = -1 };
        pid_t pid;
        int r = batch_fork_trialbox(b, &f, &pid, err);
        if (r < 0)
                return r;
        t->gpid = pid;
        t->gstate = G_RUNNING;
        t->gtries++;
        t->slots = p->more->grade->slots < b->opt->jobs ? p->more->grade->slots : b->opt->jobs;
        b->used += t->slots;
        b->running++;
        b->grading++;
        const char *ex = batch_harness_exclusive(b, p->more->grade->harness);
        if (ex)
                strv_add(&b->held, ex);
        return 0;
}

/* A grader may start: due, in the batch's share, its Harness's resource free. */
static bool may_start(struct batch *b, const struct btrial *t, long long now)
{
        unsigned need = t->p->more->grade->slots < b->opt->jobs ? t->p->more->grade->slots : b->opt->jobs;
        const char *ex = batch_harness_exclusive(b, t->p->more->grade->harness);
        return t->gdue_ms <= now && need <= b->opt->jobs - b->used && !(ex && strv_contains(&b->held, ex));
}

/* The grade given: counted, noted, its results line written. */
static void give(struct batch *b, struct btrial *t, int status, json_object *grade)
{
        t->gstate = G_FINAL;
        t->gstatus = status;
        count(b, status);
        release_repo(b, t);
        batch_note_graded(b, t, grade);
        json_object *rec = batch_read_record(t->p->output_dir, "outcome.json");
        _cleanup_free_ char *line = batch_result_line(t, rec);
        json_object_put(rec);
        batch_results_append(b, line);
}

long long batch_grade_schedule(struct batch *b)
{
        long long now = now_ms(), wait = -1;
        for (size_t i = 0; i < b->n && !b->stopping; i++) {
                struct btrial *t = &b->t[i];
                if (t->gstate != G_WANTED || (b->opt->index >= 0 && (long)i != b->opt->index))
                        continue;
                if (t->gdue_ms > now && (wait < 0 || t->gdue_ms - now < wait))
                        wait = t->gdue_ms - now;
                if (!may_start(b, t, now))
                        continue;
                struct tb_error err = { 0 };
                if (start(b, t, &err) < 0) {
                        log_error("%s", err.msg);
                        give(b, t, GRADE_VOID, NULL);
                }
        }
        return wait;
}

/* A grader that left no grade.json (killed, or trialbox failed): its grade
 * is void, written by the batch, the log's last line its detail. */
static json_object *record_lost(const struct btrial *t, int status)
{
        _cleanup_free_ char *tail = xstrdup("no log");
        _cleanup_free_ char *path = xasprintf("%s/%s", t->p->output_dir, GRADE_LOG);
        _cleanup_free_ char *text = read_file(path, 1 << 20, NULL);
        if (text) {
                size_t n = strlen(text);
                while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
                        text[--n] = '\0';
                const char *last = strrchr(text, '\n');
                free(tail);
                tail = str_escape(last ? last + 1 : text);
                if (strlen(tail) > 300)
                        tail[300] = '\0';
        }
        struct grade g = { .exit_code = -1, .duration_ms = -1, .harness = t->p->more->grade->harness };
        char detail[512];
        snprintf(detail, sizeof detail, "trialbox grade ended (%s %d) without a grade (its log's last line: %s)",
                 WIFSIGNALED(status) ? "signal" : "status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), tail);
        grade_set_void(&g, "launcher_lost", detail);
        _cleanup_close_ int dfd = open(t->p->output_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd >= 0)
                grade_write_at(&g, dfd, "grade.json", NULL);
        return grade_to_json(&g);
}

bool batch_grade_reaped(struct batch *b, pid_t pid, int status)
{
        struct btrial *t = NULL;
        for (size_t i = 0; i < b->n && !t; i++)
                if (b->t[i].gstate == G_RUNNING && b->t[i].gpid == pid)
                        t = &b->t[i];
        if (!t)
                return false;
        b->running--;
        b->grading--;
        b->used -= t->slots;
        const char *ex = batch_harness_exclusive(b, t->p->more->grade->harness);
        for (size_t i = 0; ex && i < b->held.n; i++)
                if (strcmp(b->held.v[i], ex) == 0) {
                        free(b->held.v[i]);
                        b->held.v[i] = b->held.v[--b->held.n];
                        b->held.v[b->held.n] = NULL;
                        break;
                }
        t->gpid = 0;
        json_object *rec = NULL;
        int st = grade_on_disk(t, &rec);
        if (st < 0) {
                json_object_put(rec);
                rec = record_lost(t, status);
                st = GRADE_VOID;
        }
        if (st == GRADE_VOID && t->gtries < 1 + b->opt->retries && !b->stopping) {
                long long wait = b->opt->backoff_ms;
                for (unsigned k = 1; k < t->gtries && wait < BATCH_BACKOFF_MAX_MS; k++)
                        wait *= 2;
                t->gstate = G_WANTED;
                t->gdue_ms = now_ms() + (wait < BATCH_BACKOFF_MAX_MS ? wait : BATCH_BACKOFF_MAX_MS);
                if (!b->tty && b->opt->verbosity >= 1) {
                        _cleanup_free_ char *id = str_escape(t->p->id);
                        log_error("%s: grade void, attempt %u of %u; again in %lld ms", id, t->gtries,
                                  1 + b->opt->retries, t->gdue_ms - now_ms());
                }
        } else {
                give(b, t, st, rec);
        }
        json_object_put(rec);
        return true;
}
