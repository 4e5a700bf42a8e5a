/* The records a batch reads and writes: a Trial's outcome.json and
 * launcher.json, and PLAN.results.jsonl (experiments/batch_internal.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/str.h"
#include "experiments/batch_internal.h"
#include "experiments/report.h"
#include "model/job.h"
#include "model/outcome.h"

extern char **environ;

char *batch_attempt_dir(const char *out, unsigned n) { return xasprintf("%s.attempt-%u", out, n); }

/* How many attempts were moved aside: OUTPUT_DIR.attempt-1 … -N. */
unsigned batch_count_asides(const char *out)
{
        unsigned n = 0;
        for (;;) {
                _cleanup_free_ char *d = batch_attempt_dir(out, n + 1);
                struct stat st;
                if (lstat(d, &st) < 0)
                        return n;
                n++;
        }
}

int batch_load_record(const char *dir, const char *name, json_object **rec, char **why)
{
        *rec = NULL;
        _cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
        _cleanup_free_ char *text = NULL;
        int r = read_full_file_at(AT_FDCWD, path, 1 << 20, READ_NOFOLLOW | READ_REGULAR | READ_NONBLOCK, &text, NULL,
                                  NULL);
        if (r == -ENOENT)
                return r;
        if (r < 0) {
                *why = xstrdup(r == -ELOOP ? "it is a symbolic link" : r == -EINVAL ? "it is not a regular file"
                                                                        : strerror(-r));
                return r;
        }
        json_tokener *tok = json_tokener_new();
        json_object *j = json_tokener_parse_ex(tok, text, (int)strlen(text));
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        json_tokener_free(tok);
        if (!j || jerr != json_tokener_success || !json_object_is_type(j, json_type_object)) {
                *why = xasprintf("not a JSON object (%s)", j && jerr == json_tokener_success ? "another JSON value"
                                                           : json_tokener_error_desc(jerr));
                json_object_put(j);
                return -EBADMSG;
        }
        *rec = j;
        return 0;
}

/* A record the session could not have planted, read without following links. */
json_object *batch_read_record(const char *dir, const char *name)
{
        json_object *j = NULL;
        _cleanup_free_ char *why = NULL;
        batch_load_record(dir, name, &j, &why);
        return j;
}

const char *batch_record_kind(json_object *j)
{
        json_object *v;
        return j && json_object_object_get_ex(j, "outcome", &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : NULL;
}

int batch_kind_from_name(const char *s)
{
        if (s && strcmp(s, "completed") == 0)
                return OUTCOME_COMPLETED;
        if (s && strcmp(s, "failed") == 0)
                return OUTCOME_FAILED;
        if (s && strcmp(s, "unrecorded") == 0)
                return BATCH_KIND_UNRECORDED;
        return OUTCOME_VOID;
}

static char *batch_json_text(json_object *j)
{
        return xstrdup(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* The start time of a process in clock ticks after boot (/proc/PID/stat field 22), or -1. */
static long long batch_start_ticks(pid_t pid)
{
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        _cleanup_free_ char *stat = read_file(path, 4096, NULL);
        const char *p = stat ? strrchr(stat, ')') : NULL;
        for (int field = 2; field < 22 && p; field++)
                p = strchr(p + 1, ' ');
        return p ? strtoll(p + 1, NULL, 10) : -1;
}

/* The last non-empty line of trialbox.log, for a detail; malloc'd. */
char *batch_log_tail(const char *out)
{
        _cleanup_free_ char *path = xasprintf("%s/trialbox.log", out);
        _cleanup_free_ char *text = read_file(path, 1 << 20, NULL);
        if (!text)
                return xstrdup("no log");
        size_t n = strlen(text);
        while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
                text[--n] = '\0';
        const char *last = strrchr(text, '\n');
        char *s = xstrdup(last ? last + 1 : text);
        if (strlen(s) > 300)
                s[300] = '\0';
        char *shown = str_escape(s);
        free(s);
        return shown;
}


/* ---- records the batch writes ---- */

static int batch_write_json_at(const char *dir, const char *name, json_object *j)
{
        _cleanup_close_ int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dirfd < 0)
                return -errno;
        _cleanup_free_ char *text = batch_json_text(j);
        _cleanup_free_ char *line = xasprintf("%s\n", text);
        /* outcome.json as `run` writes it; launcher.json is the runner's own. */
        return write_file_atomic_at(dirfd, name, line, strlen(line), strcmp(name, "outcome.json") == 0 ? 0644 : 0600,
                                    WRITE_SYNC_FILE);
}

char *const *batch_environ(const struct batch *b)
{
        return b->opt->environ ? b->opt->environ : environ;
}

/* Before the launcher runs: its pid, start and boot, in the running record's
 * form (outcome_launcher_lost reads it). */
void batch_nonce(char nonce[OUTCOME_NONCE_LEN + 1])
{
        unsigned char raw[OUTCOME_NONCE_LEN / 2];
        size_t got = 0;
        while (got < sizeof raw) {
                ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        abort(); /* the kernel's random source: nothing to fall back to */
                got += (size_t)n;
        }
        for (size_t i = 0; i < sizeof raw; i++)
                snprintf(nonce + 2 * i, 3, "%02x", raw[i]);
}

static const char *string_field(json_object *j, const char *key)
{
        json_object *v;
        return j && json_object_object_get_ex(j, key, &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : NULL;
}

int batch_record_ours(const char *out, json_object *rec, char **why)
{
        json_object *launcher = NULL;
        int r = batch_load_record(out, "launcher.json", &launcher, why);
        if (r < 0 && r != -ENOENT)
                return r;
        const char *want = string_field(launcher, "nonce"), *got = string_field(rec, "launcher_nonce");
        bool ours = want && got && strlen(want) == OUTCOME_NONCE_LEN && strcmp(want, got) == 0;
        json_object_put(launcher);
        return ours;
}

void batch_set_aside_foreign(const char *out)
{
        _cleanup_free_ char *from = xasprintf("%s/outcome.json", out);
        _cleanup_free_ char *to = xasprintf("%s/outcome.json.foreign", out);
        if (rename(from, to) < 0) {
        }
}

int batch_write_launcher(struct batch *b, const struct btrial *t, pid_t pid, const char *nonce)
{
        const char *out = t->p->output_dir;
        char boot[40] = "";
        outcome_boot_id(boot, sizeof boot, NULL);
        json_object *j = json_object_new_object();
        json_object_object_add(j, "outcome", json_object_new_string("running"));
        json_object_object_add(j, "pid", json_object_new_int64(pid));
        json_object_object_add(j, "pid_start", json_object_new_int64(batch_start_ticks(pid)));
        json_object_object_add(j, "boot_id", json_object_new_string(boot));
        json_object_object_add(j, "started_at_unix_ms", json_object_new_int64(outcome_realtime_ms()));
        json_object_object_add(j, "nonce", json_object_new_string(nonce));
        /* What it runs: a later batch tells from these that it changed. */
        json_object_object_add(j, "plan_fingerprint", json_object_new_string(t->p->fingerprint));
        struct batch_binary bin;
        batch_binary_find(b, t->p, &bin);
        json_object_object_add(j, "harness_binary", batch_binary_json(&bin));
        batch_binary_done(&bin);
        /* In a Slurm task: its ids, by which a resumed batch judges it (the pid is this node's). */
        struct slurm_ids ids = slurm_ids_from_env(batch_environ(b));
        if (ids.job_id > 0) {
                json_object_object_add(j, "slurm_job_id", json_object_new_int64(ids.job_id));
                json_object_object_add(j, "slurm_array_task_id",
                                       ids.array_task_id >= 0 ? json_object_new_int64(ids.array_task_id) : NULL);
        }
        int r = batch_write_json_at(out, "launcher.json", j);
        json_object_put(j);
        return r;
}

/* The attempts moved aside whose record says void/interrupted: they do
 * not count against --retries (the operator stopped them, not a fault). */
unsigned batch_count_interrupted(const char *out, unsigned asides)
{
        unsigned n = 0;
        for (unsigned i = 1; i <= asides; i++) {
                _cleanup_free_ char *d = batch_attempt_dir(out, i);
                json_object *rec = batch_read_record(d, "outcome.json");
                n += batch_record_interrupted(rec);
                json_object_put(rec);
        }
        return n;
}

unsigned batch_count_retried(const char *out, unsigned asides)
{
        unsigned n = 0;
        for (unsigned i = 1; i <= asides; i++) {
                _cleanup_free_ char *d = batch_attempt_dir(out, i);
                json_object *rec = batch_read_record(d, "outcome.json");
                const char *kind = batch_record_kind(rec);
                /* A record that cannot be read counts: never more attempts on a guess. */
                n += !kind || (strcmp(kind, "void") == 0 && !batch_record_interrupted(rec));
                json_object_put(rec);
        }
        return n;
}

bool batch_record_interrupted(json_object *rec)
{
        const char *kind = batch_record_kind(rec), *cause = string_field(rec, "cause");
        return kind && strcmp(kind, "void") == 0 && cause && strcmp(cause, "interrupted") == 0;
}

/* `running` (or a new record with this attempt's token, from
 * launcher.json) made void with `cause` and `detail`, written in the
 * attempt's folder; the record. */
static json_object *record_void(const struct btrial *t, json_object *running, const char *cause, const char *detail)
{
        json_object *j = running ? running : json_object_new_object();
        if (!running) { /* the batch's own record of its attempt: its token, from launcher.json */
                json_object *launcher = batch_read_record(t->p->output_dir, "launcher.json");
                const char *nonce = string_field(launcher, "nonce");
                json_object_object_add(j, "launcher_nonce", nonce ? json_object_new_string(nonce) : NULL);
                json_object_put(launcher);
        }
        json_object_object_add(j, "harness", json_object_new_string(t->p->harness));
        json_object_object_add(j, "outcome", json_object_new_string("void"));
        json_object_object_add(j, "cause", json_object_new_string(cause));
        json_object_object_add(j, "detail", json_object_new_string(detail));
        json_object_object_add(j, "exit_code", NULL);
        json_object_object_add(j, "signal", NULL);
        batch_write_json_at(t->p->output_dir, "outcome.json", j);
        return j;
}

json_object *batch_record_interrupted_launcher(const struct btrial *t, json_object *running, int sig)
{
        _cleanup_free_ char *tail = batch_log_tail(t->p->output_dir);
        _cleanup_free_ char *detail = xasprintf("the operator's SIG%s reached the batch, which forwarded it to this "
                                                "Trial's launcher; it ended before its session ran (its log's last "
                                                "line: %s): no fault of the agent; the batch runs it again",
                                                sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", tail);
        return record_void(t, running, "interrupted", detail);
}

/* The launcher ended, or is gone, without a final Outcome: record it as
 * void/launcher_lost in the attempt's folder (keeping the running record's
 * fields). Returns the new record. */
json_object *batch_record_lost(const struct btrial *t, json_object *running, const char *why, bool refused)
{
        _cleanup_free_ char *tail = batch_log_tail(t->p->output_dir);
        _cleanup_free_ char *detail =
                refused ? xasprintf("trialbox run refused the line and ran nothing (exit status 2; its log's last line: "
                                    "%s); the batch runs it again, in a fresh folder, while retries are left",
                                    tail)
                        : xasprintf("%s without a final outcome (its log's last line: %s); the batch runs it again "
                                    "while retries are left",
                                    why, tail);
        return record_void(t, running, "launcher_lost", detail);
}

json_object *batch_record_unrecorded(const struct btrial *t, json_object *running)
{
        json_object *j = running;
        _cleanup_free_ char *tail = batch_log_tail(t->p->output_dir);
        _cleanup_free_ char *detail = xasprintf("the session ran, but trialbox could not write its final Outcome (its "
                                                "log's last line: %s); it is not run again",
                                                tail);
        json_object_object_add(j, "harness", json_object_new_string(t->p->harness));
        json_object_object_add(j, "outcome", json_object_new_string("unrecorded"));
        json_object_object_add(j, "cause", NULL);
        json_object_object_add(j, "detail", json_object_new_string(detail));
        json_object_object_add(j, "exit_code", NULL);
        json_object_object_add(j, "signal", NULL);
        batch_write_json_at(t->p->output_dir, "outcome.json", j);
        return j;
}

/* ---- PLAN.results.jsonl ---- */

char *batch_results_path(const char *plan_file)
{
        size_t n = strlen(plan_file);
        if (n > 6 && strcmp(plan_file + n - 6, ".jsonl") == 0 && plan_file[n - 7] != '/')
                n -= 6;
        return xasprintf("%.*s%s", (int)n, plan_file, BATCH_RESULTS_SUFFIX);
}

/* Is `path` the results of `plan` as a batch wrote them: its first lines
 * one per Trial, in plan order, with each Trial's id and output folder? */
static bool results_of_plan(const char *path, const struct plan *plan)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *line = NULL;
        size_t cap = 0, i = 0;
        while (f && i < plan->n && getline(&line, &cap, f) >= 0) {
                json_object *j = json_tokener_parse(line);
                bool same = j && strcmp(string_field(j, "id") ? string_field(j, "id") : "", plan->v[i].id) == 0 &&
                            strcmp(string_field(j, "output_dir") ? string_field(j, "output_dir") : "",
                                   plan->v[i].output_dir) == 0;
                json_object_put(j);
                if (!same)
                        return false;
                i++;
        }
        return plan->n > 0 && i == plan->n;
}

int batch_results_adopt_old(const struct batch *b)
{
        struct stat st;
        if (lstat(b->results_path, &st) == 0 || errno != ENOENT)
                return 0;
        _cleanup_free_ char *old = xasprintf("%s/%s", b->plan.dir, BATCH_RESULTS_OLD_NAME);
        if (lstat(old, &st) < 0 || !S_ISREG(st.st_mode) || !results_of_plan(old, &b->plan))
                return 0;
        if (rename(old, b->results_path) < 0)
                return -errno;
        log_notice("'%s' holds this plan's results (an earlier trialbox named them so): renamed '%s'", old,
                   b->results_path);
        return 1;
}


/* What the attempt ran, from its launcher.json: the line's fingerprint and
 * the Harness binary (null when an earlier trialbox did not record them). */
static void result_line_what_ran(const struct btrial *t, json_object *j)
{
        json_object *launcher = batch_read_record(t->p->output_dir, "launcher.json"), *v = NULL;
        const char *fingerprint = string_field(launcher, "plan_fingerprint");
        json_object_object_add(j, "plan_fingerprint", fingerprint ? json_object_new_string(fingerprint) : NULL);
        if (launcher)
                json_object_object_get_ex(launcher, "harness_binary", &v);
        json_object_object_add(j, "harness_binary", v ? json_object_get(v) : NULL);
        json_object_put(launcher);
}

/* An Experiment's fields of the plan line, as the plan gave them. */
static void add_experiment(json_object *j, const struct plan_trial *p)
{
        if (p->more->task)
                json_object_object_add(j, "task", json_object_new_string(p->more->task));
        if (p->more->arm)
                json_object_object_add(j, "arm", json_object_new_string(p->more->arm));
        if (p->more->labels)
                json_object_object_add(j, "labels", json_tokener_parse(p->more->labels));
}

/* The grade (OUTPUT_DIR/grade.json) of a line with a grader: null while
 * there is none. */
static void add_grade(json_object *j, const struct btrial *t)
{
        if (t->p->more->grade && !json_object_object_get_ex(j, "grade", NULL))
                json_object_object_add(j, "grade", batch_read_record(t->p->output_dir, "grade.json"));
}

/* One results line: id, task, arm and labels (an Experiment's), attempts,
 * output_dir, repo (the clone, with repo_from), then the Outcome's own
 * fields as outcome.json has them (`outcome` null for a Trial that never
 * ran), and its `grade` when it has a grader. malloc'd, with its newline. */
char *batch_result_line(const struct btrial *t, json_object *record)
{
        json_object *j = json_object_new_object();
        json_object_object_add(j, "id", json_object_new_string(t->p->id));
        add_experiment(j, t->p);
        json_object_object_add(j, "attempts", json_object_new_int64(t->attempt));
        json_object_object_add(j, "output_dir", json_object_new_string(t->p->output_dir));
        if (t->p->repo_from) {
                _cleanup_free_ char *clone = plan_clone_dir(t->p->output_dir);
                json_object_object_add(j, "repo", json_object_new_string(clone));
        }
        if (record) {
                result_line_what_ran(t, j);
                json_object_object_foreach(record, key, v) {
                        if (!json_object_object_get_ex(j, key, NULL))
                                json_object_object_add(j, key, json_object_get(v));
                }
        } else {
                json_object_object_add(j, "harness", json_object_new_string(t->p->harness));
                json_object_object_add(j, "outcome", NULL);
        }
        add_grade(j, t);
        _cleanup_free_ char *text = batch_json_text(j);
        json_object_put(j);
        return xasprintf("%s\n", text);
}

void batch_results_append(struct batch *b, const char *line)
{
        if (b->results_fd < 0)
                return;
        /* One write per line with O_APPEND: a reader (or a killed batch) sees whole lines. */
        size_t len = strlen(line);
        if (write(b->results_fd, line, len) != (ssize_t)len)
                log_error("appending to '%s': %s", b->results_path, strerror(errno));
}

/* Rewrite PLAN.results.jsonl whole, in plan order, from the Trials' folders
 * (temporary file, fsync, rename), and count every line into `rep`. */
int batch_results_rewrite(struct batch *b, struct report *rep, struct tb_error *err)
{
        _cleanup_free_ char *tmp = NULL;
        FILE *f = NULL;
        if (b->opt->index < 0) {
                tmp = xasprintf("%s.tmp-%d", b->results_path, (int)getpid());
                int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0 || !(f = fdopen(fd, "w"))) {
                        if (fd >= 0)
                                close(fd);
                        return tb_fail(err, -errno, "cannot write '%s': %s; fix the plan folder's permissions", tmp,
                                       strerror(errno));
                }
        }
        for (size_t i = 0; i < b->n; i++) {
                const struct btrial *t = &b->t[i];
                if (b->opt->index >= 0 && (long)i != b->opt->index)
                        continue;
                json_object *rec = t->state == T_DONE ? batch_read_record(t->p->output_dir, "outcome.json") : NULL;
                _cleanup_free_ char *line = batch_result_line(t, rec);
                json_object_put(rec);
                report_add_line(rep, line, NULL);
                if (f)
                        fputs(line, f);
        }
        if (!f)
                return 0;
        int r = fflush(f) == 0 && fdatasync(fileno(f)) == 0 ? 0 : -errno;
        fclose(f);
        if (r == 0 && rename(tmp, b->results_path) < 0)
                r = -errno;
        if (r < 0) {
                unlink(tmp);
                return tb_fail(err, r, "cannot write '%s': %s; free space or fix the folder's permissions",
                               b->results_path, strerror(-r));
        }
        return 0;
}
