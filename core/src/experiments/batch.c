#define _GNU_SOURCE
#include "experiments/batch.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/env.h"
#include "base/log.h"
#include "model/outcome.h"
#include "experiments/plan.h"
#include "experiments/report.h"
#include "sandbox/session_user.h"
#include "experiments/slurm.h"
#include "model/limits.h"

extern char **environ;

/* Harnesses whose Trials wait on one shared lock (grok's Trials home): at most
 * one of them runs at a time, so none holds a slot while it waits. */
static const char *const one_at_a_time[] = { "grok" };

/* T_ELSEWHERE: running in a Slurm task still in the queue (not ours to wait for). */
enum trial_state { T_PENDING, T_RUNNING, T_DONE, T_ELSEWHERE };

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
};

struct batch {
        const struct batch_options *opt;
        struct plan plan;
        struct btrial *t; /* one per plan line, in plan order */
        size_t n, next;   /* next: no PENDING Trial before it */
        int self_fd;      /* /proc/self/exe, opened once: every Trial runs this same binary */
        int epfd, sfd, tfd, results_fd, plan_fd;
        sigset_t old_mask;
        unsigned used;    /* job slots held */
        bool serial_busy; /* a one_at_a_time Trial is running */
        size_t running, done, completed, failed, voids, done_here; /* done_here: ended in this run */
        long long start_ms;
        int stopping;     /* the signal that asked the batch to stop, or 0 */
        bool tty;         /* stderr is a terminal: the live progress line */
        char *results_path;
        /* Slurm */
        bool gather;        /* judge every Trial from disk, run nothing, retry nothing */
        long long job_id;   /* the array waited for, or 0 */
};

enum { EV_SIGNAL = 1, EV_TIMER, EV_PIDFD };
#define EV(kind, ix) (((unsigned long long)(kind) << 32) | (unsigned long long)(ix))

/* ---- small helpers ---- */

static bool is_serial(const struct plan_trial *p)
{
        for (size_t i = 0; i < TB_ARRAY_SIZE(one_at_a_time); i++)
                if (strcmp(p->harness, one_at_a_time[i]) == 0)
                        return true;
        return false;
}

static char *attempt_dir(const char *out, unsigned n) { return xasprintf("%s.attempt-%u", out, n); }

/* How many attempts were moved aside: OUTPUT_DIR.attempt-1 … -N. */
static unsigned count_asides(const char *out)
{
        unsigned n = 0;
        for (;;) {
                _cleanup_free_ char *d = attempt_dir(out, n + 1);
                struct stat st;
                if (lstat(d, &st) < 0)
                        return n;
                n++;
        }
}

/* A record the session could not have planted, read without following links. */
static json_object *read_record(const char *dir, const char *name)
{
        _cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20))
                return NULL;
        _cleanup_free_ char *text = xmalloc((size_t)st.st_size + 1);
        ssize_t len = read(fd, text, (size_t)st.st_size);
        if (len < 0)
                return NULL;
        text[len] = '\0';
        json_object *j = json_tokener_parse(text);
        if (j && !json_object_is_type(j, json_type_object)) {
                json_object_put(j);
                return NULL;
        }
        return j;
}

static const char *record_kind(json_object *j)
{
        json_object *v;
        return j && json_object_object_get_ex(j, "outcome", &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : NULL;
}

static int kind_from_name(const char *s)
{
        if (s && strcmp(s, "completed") == 0)
                return OUTCOME_COMPLETED;
        if (s && strcmp(s, "failed") == 0)
                return OUTCOME_FAILED;
        return OUTCOME_VOID;
}

static char *json_text(json_object *j)
{
        return xstrdup(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* The start time of a process in clock ticks after boot (/proc/PID/stat field 22), or -1. */
static long long start_ticks(pid_t pid)
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
static char *log_tail(const char *out)
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

static int write_json_at(const char *dir, const char *name, json_object *j)
{
        _cleanup_close_ int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dirfd < 0)
                return -errno;
        _cleanup_free_ char *text = json_text(j);
        _cleanup_free_ char *line = xasprintf("%s\n", text);
        return write_file_atomic_at_flags(dirfd, name, line, strlen(line), 0644, WRITE_SYNC_FILE);
}

/* Before the launcher runs: its pid, start and boot, in the running record's
 * form (outcome_launcher_lost reads it). */
static char *const *batch_environ(const struct batch *b)
{
        return b->opt->environ ? b->opt->environ : environ;
}

static int write_launcher(const struct batch *b, const char *out, pid_t pid)
{
        char boot[40] = "";
        outcome_boot_id(boot, sizeof boot, NULL);
        json_object *j = json_object_new_object();
        json_object_object_add(j, "outcome", json_object_new_string("running"));
        json_object_object_add(j, "pid", json_object_new_int64(pid));
        json_object_object_add(j, "pid_start", json_object_new_int64(start_ticks(pid)));
        json_object_object_add(j, "boot_id", json_object_new_string(boot));
        json_object_object_add(j, "started_at_unix_ms", json_object_new_int64(outcome_realtime_ms()));
        /* In a Slurm task: its ids, by which a resumed batch judges it (the pid is this node's). */
        struct slurm_ids ids = slurm_ids_from_env(batch_environ(b));
        if (ids.job_id > 0) {
                json_object_object_add(j, "slurm_job_id", json_object_new_int64(ids.job_id));
                json_object_object_add(j, "slurm_array_task_id",
                                       ids.array_task_id >= 0 ? json_object_new_int64(ids.array_task_id) : NULL);
        }
        int r = write_json_at(out, "launcher.json", j);
        json_object_put(j);
        return r;
}

/* The launcher ended, or is gone, without a final Outcome: record it as
 * void/launcher_lost in the attempt's folder (keeping the running record's
 * fields). Returns the new record. */
static json_object *record_lost(const struct btrial *t, json_object *running, const char *why)
{
        json_object *j = running ? running : json_object_new_object();
        _cleanup_free_ char *tail = log_tail(t->p->output_dir);
        _cleanup_free_ char *detail = xasprintf("%s without a final outcome (its log's last line: %s); the batch runs "
                                                "it again while retries are left",
                                                why, tail);
        json_object_object_add(j, "harness", json_object_new_string(t->p->harness));
        json_object_object_add(j, "outcome", json_object_new_string("void"));
        json_object_object_add(j, "cause", json_object_new_string("launcher_lost"));
        json_object_object_add(j, "detail", json_object_new_string(detail));
        json_object_object_add(j, "exit_code", NULL);
        json_object_object_add(j, "signal", NULL);
        write_json_at(t->p->output_dir, "outcome.json", j);
        return j;
}

/* ---- results.jsonl ---- */

/* One results line: id, attempts, output_dir, repo (the clone, with
 * repo_from), then the Outcome's own fields as outcome.json has them
 * (`outcome` null for a Trial that never ran). malloc'd, with its newline. */
static char *result_line(const struct btrial *t, json_object *record)
{
        json_object *j = json_object_new_object();
        json_object_object_add(j, "id", json_object_new_string(t->p->id));
        json_object_object_add(j, "attempts", json_object_new_int64(t->attempt));
        json_object_object_add(j, "output_dir", json_object_new_string(t->p->output_dir));
        if (t->p->repo_from) {
                _cleanup_free_ char *clone = plan_clone_dir(t->p->output_dir);
                json_object_object_add(j, "repo", json_object_new_string(clone));
        }
        if (record) {
                json_object_object_foreach(record, key, v) {
                        if (!json_object_object_get_ex(j, key, NULL))
                                json_object_object_add(j, key, json_object_get(v));
                }
        } else {
                json_object_object_add(j, "harness", json_object_new_string(t->p->harness));
                json_object_object_add(j, "outcome", NULL);
        }
        _cleanup_free_ char *text = json_text(j);
        json_object_put(j);
        return xasprintf("%s\n", text);
}

static void results_append(struct batch *b, const char *line)
{
        if (b->results_fd < 0)
                return;
        /* One write per line with O_APPEND: a reader (or a killed batch) sees whole lines. */
        size_t len = strlen(line);
        if (write(b->results_fd, line, len) != (ssize_t)len)
                log_error("appending to '%s': %s", b->results_path, strerror(errno));
}

/* Rewrite results.jsonl whole, in plan order, from the Trials' folders
 * (temporary file, fsync, rename), and count every line into `rep`. */
static int results_rewrite(struct batch *b, struct report *rep, struct tb_error *err)
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
                json_object *rec = t->state == T_DONE ? read_record(t->p->output_dir, "outcome.json") : NULL;
                _cleanup_free_ char *line = result_line(t, rec);
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

/* ---- progress ---- */

static void fmt_secs(long long ms, char *buf, size_t n)
{
        long long s = ms / 1000;
        if (s >= 3600)
                snprintf(buf, n, "%lldh%02lldm", s / 3600, s / 60 % 60);
        else if (s >= 60)
                snprintf(buf, n, "%lldm%02llds", s / 60, s % 60);
        else
                snprintf(buf, n, "%llds", s);
}

static size_t total(const struct batch *b) { return b->opt->index >= 0 ? 1 : b->n; }

static void progress_line(struct batch *b)
{
        if (!b->tty || b->opt->verbosity < 1)
                return;
        long long elapsed = now_ms() - b->start_ms;
        char el[32], eta[32] = "-";
        fmt_secs(elapsed, el, sizeof el);
        size_t left = total(b) - b->done;
        if (b->done_here > 0 && left > 0)
                fmt_secs(elapsed * (long long)left / (long long)b->done_here, eta, sizeof eta);
        fprintf(stderr, "\r\033[K[%zu/%zu] completed %zu, failed %zu, void %zu; running %zu; %s elapsed, eta %s",
                b->done, total(b), b->completed, b->failed, b->voids, b->running, el, eta);
        fflush(stderr);
}

static void progress_end(struct batch *b)
{
        if (b->tty && b->opt->verbosity >= 1)
                fputs("\r\033[K", stderr);
}

static void note_finished(struct batch *b, struct btrial *t, json_object *rec)
{
        if (b->tty || b->opt->verbosity < 1 || t->noted)
                return;
        t->noted = true;
        json_object *c = NULL, *d = NULL;
        json_object_object_get_ex(rec, "cause", &c);
        json_object_object_get_ex(rec, "duration_ms", &d);
        _cleanup_free_ char *id = str_escape((t->p->id));
        log_error("[%zu/%zu] %s: %s%s%s%s, attempt %u, %lld ms", b->done, total(b), id,
                outcome_kind_name((enum outcome_kind)t->kind), c && json_object_get_string(c) ? " (" : "",
                c && json_object_get_string(c) ? json_object_get_string(c) : "",
                c && json_object_get_string(c) ? ")" : "", t->attempt, d ? (long long)json_object_get_int64(d) : -1LL);
}

/* ---- deciding a Trial from its folder ---- */

static void release(struct batch *b, struct btrial *t)
{
        if (t->state != T_RUNNING)
                return;
        b->running--;
        b->used -= t->slots;
        if (is_serial(t->p))
                b->serial_busy = false;
        if (t->pidfd >= 0) {
                epoll_ctl(b->epfd, EPOLL_CTL_DEL, t->pidfd, NULL);
                tb_closep(&t->pidfd);
        }
        t->pid = 0;
}

static void set_running(struct batch *b, struct btrial *t)
{
        t->state = T_RUNNING;
        t->slots = t->p->slots < b->opt->jobs ? t->p->slots : b->opt->jobs;
        b->used += t->slots;
        b->running++;
        if (is_serial(t->p))
                b->serial_busy = true;
}

/* A launcher found alive on disk (`path`: its record): wait for it through a
 * pidfd. The pidfd is opened first and the record checked after, so the
 * process waited for is the one checked (not a later owner of its pid).
 * 1: adopted; 0: the launcher is gone; -1: cannot tell (a read or pidfd
 * error), which the caller must take as still running, never as lost. */
static int adopt(struct batch *b, struct btrial *t, size_t ix, json_object *record, const char *path)
{
        json_object *v;
        if (!json_object_object_get_ex(record, "pid", &v) || json_object_get_int64(v) <= 0 ||
            json_object_get_int64(v) > INT_MAX)
                return 0;
        pid_t pid = (pid_t)json_object_get_int64(v);
        int fd = pidfd_open(pid, 0);
        if (fd < 0)
                return errno == ESRCH ? 0 : -1;
        int lost = outcome_launcher_lost(path);
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EV(EV_PIDFD, ix) };
        if (lost != 0 || epoll_ctl(b->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
                close(fd);
                return lost > 0 ? 0 : -1;
        }
        t->pid = pid;
        t->pidfd = fd;
        set_running(b, t);
        return 1;
}

static void mark_done(struct batch *b, struct btrial *t, int kind, json_object *rec)
{
        t->state = T_DONE;
        t->kind = kind;
        b->done++;
        b->completed += kind == OUTCOME_COMPLETED;
        b->failed += kind == OUTCOME_FAILED;
        b->voids += kind == OUTCOME_VOID;
        note_finished(b, t, rec);
        _cleanup_free_ char *line = result_line(t, rec);
        results_append(b, line);
}

/* Move a void attempt aside (with its clone) so the next one gets OUTPUT_DIR. */
static int move_aside(const struct btrial *t, unsigned attempt)
{
        _cleanup_free_ char *to = attempt_dir(t->p->output_dir, attempt);
        if (renameat2(AT_FDCWD, t->p->output_dir, AT_FDCWD, to, RENAME_NOREPLACE) < 0)
                return -errno;
        if (t->p->repo_from) {
                _cleanup_free_ char *clone = plan_clone_dir(t->p->output_dir);
                _cleanup_free_ char *clone_to = plan_clone_dir(to);
                if (renameat2(AT_FDCWD, clone, AT_FDCWD, clone_to, RENAME_NOREPLACE) < 0 && errno != ENOENT)
                        return -errno;
        }
        return 0;
}

static long long backoff(const struct batch *b, unsigned attempt)
{
        long long ms = b->opt->backoff_ms;
        for (unsigned i = 1; i < attempt && ms < BATCH_BACKOFF_MAX_MS; i++)
                ms *= 2;
        return ms < BATCH_BACKOFF_MAX_MS ? ms : BATCH_BACKOFF_MAX_MS;
}

static char *lost_why(int exit_status)
{
        if (exit_status < 0)
                return xstrdup("its launcher was lost (gone, or another boot)");
        if (WIFSIGNALED(exit_status))
                return xasprintf("trialbox run was killed by signal %d", WTERMSIG(exit_status));
        return xasprintf("trialbox run exited with status %d", WEXITSTATUS(exit_status));
}

static int slurm_launcher(struct batch *b, const struct btrial *t, json_object *launcher, char **why);

enum found { FOUND_NOTHING, FOUND_RUNNING, FOUND_RECORD, FOUND_ELSEWHERE };

/* What OUTPUT_DIR says of its attempt: nothing started yet; a launcher still
 * alive (adopted: waited for); or a record in *rec (a lost launcher's written
 * as void/launcher_lost first). `exit_status`: our child's wait status when
 * it just ended, else -1. */
static enum found read_attempt(struct batch *b, struct btrial *t, size_t ix, int exit_status, json_object **rec)
{
        const char *out = t->p->output_dir;
        *rec = read_record(out, "outcome.json");
        const char *kind = record_kind(*rec);
        if (kind && strcmp(kind, "running") != 0)
                return FOUND_RECORD;
        if (!kind) {
                json_object_put(*rec);
                *rec = NULL;
        }
        /* The launcher's record: the running one, or ours from before it ran. */
        json_object *launcher = kind ? *rec : exit_status < 0 ? read_record(out, "launcher.json") : NULL;
        if (!launcher && exit_status < 0)
                return FOUND_NOTHING;
        _cleanup_free_ char *path = xasprintf("%s/%s", out, kind ? "outcome.json" : "launcher.json");
        _cleanup_free_ char *slurm_why = NULL;
        int in_slurm = launcher && exit_status < 0 ? slurm_launcher(b, t, launcher, &slurm_why) : 0;
        if (in_slurm > 0) {
                if (launcher != *rec)
                        json_object_put(launcher);
                json_object_put(*rec);
                *rec = NULL;
                return FOUND_ELSEWHERE;
        }
        int adopted = launcher && exit_status < 0 && in_slurm == 0 ? adopt(b, t, ix, launcher, path) : 0;
        if (adopted != 0) {
                if (adopted < 0) { /* cannot tell: never run it twice */
                        _cleanup_free_ char *id = str_escape(t->p->id);
                        log_warn("%s: cannot tell whether its launcher (%s) still runs; it counts as running", id,
                                 path);
                }
                if (launcher != *rec)
                        json_object_put(launcher);
                json_object_put(*rec);
                *rec = NULL;
                return adopted > 0 ? FOUND_RUNNING : FOUND_ELSEWHERE;
        }
        if (launcher != *rec)
                json_object_put(launcher);
        _cleanup_free_ char *why = slurm_why ? steal_pointer(&slurm_why) : lost_why(exit_status);
        *rec = record_lost(t, *rec, why);
        return FOUND_RECORD;
}

/* A void attempt with retries left: move it aside, run again after the backoff. */
static int retry(struct batch *b, struct btrial *t, size_t ix, bool at_start)
{
        _cleanup_free_ char *id = str_escape((t->p->id));
        int r = move_aside(t, t->attempt);
        if (r < 0) {
                log_error("%s: cannot move the void attempt '%s' aside: %s; it stays void", id,
                        t->p->output_dir, strerror(-r));
                return r;
        }
        long long wait = at_start ? 0 : backoff(b, t->attempt);
        if (!b->tty && b->opt->verbosity >= 1 && !at_start)
                log_error("%s: void, attempt %u of %u; again in %lld ms", id, t->attempt,
                        1 + b->opt->retries, wait);
        t->state = T_PENDING;
        t->due_ms = now_ms() + wait;
        if (ix < b->next)
                b->next = ix;
        return 0;
}

/* Decide what a Trial is from its folders: final (DONE), running somewhere
 * (adopted), or to run (PENDING, a void attempt moved aside). */
static void settle(struct batch *b, struct btrial *t, size_t ix, int exit_status, bool at_start)
{
        unsigned attempt = count_asides(t->p->output_dir) + 1;
        json_object *rec = NULL;
        enum found found = read_attempt(b, t, ix, exit_status, &rec);
        t->attempt = found == FOUND_NOTHING ? attempt - 1 : attempt;
        if (found == FOUND_NOTHING) {
                t->state = T_PENDING;
                t->due_ms = 0;
                return;
        }
        if (found == FOUND_RUNNING)
                return;
        if (found == FOUND_ELSEWHERE) {
                t->state = T_ELSEWHERE;
                return;
        }
        int kind = kind_from_name(record_kind(rec));
        bool again = kind == OUTCOME_VOID && attempt < 1 + b->opt->retries && !b->stopping && !b->gather;
        if (!again || retry(b, t, ix, at_start) < 0)
                mark_done(b, t, kind, rec);
        json_object_put(rec);
}

/* ---- starting a Trial ---- */

static int run_git(char *const argv[])
{
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                execvp("git", argv);
                log_error("cannot run git: %s; install git", strerror(errno));
                _exit(127);
        }
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* Started as root with a Trial `user`: the clone becomes that user's (as
 * `run` wants the repository writable by the session's user), through
 * fds, never following a link the clone holds. 0 or a negative errno. */
static int clone_to_user(const struct plan_trial *p, const char *clone)
{
        if (geteuid() != 0 || !p->user)
                return 0;
        _cleanup_close_ int fd = open(clone, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        struct session_user u = { 0 };
        struct tb_error err = { 0 };
        int r = session_user_resolve(p->user, false, 0, &st, &u, &err);
        if (r == 0 && u.drop)
                r = session_user_chown_tree(fd, &u);
        session_user_done(&u);
        return r;
}

/* In the child: a fresh clone of repo_from at its revision, or a void Outcome. */
static void clone_or_void(const struct plan_trial *p, const char *clone)
{
        struct stat st;
        int r = lstat(clone, &st) == 0 ? -EEXIST : 0;
        if (r == 0) {
                char *argv[] = { "git", "clone", "--quiet", "--no-hardlinks", p->repo_rev ? "--no-checkout" : "--",
                                 p->repo_from, (char *)clone, NULL };
                r = run_git(argv);
        }
        if (r == 0 && p->repo_rev) {
                char *argv[] = { "git", "-C", (char *)clone, "checkout", "--quiet", "--detach", p->repo_rev, "--", NULL };
                r = run_git(argv);
        }
        if (r == 0)
                r = clone_to_user(p, clone);
        if (r == 0)
                return;
        struct outcome o = { .harness = p->harness, .exit_code = -1 };
        outcome_start(&o);
        _cleanup_free_ char *tail = log_tail(p->output_dir);
        _cleanup_free_ char *d =
                r == -EEXIST ? xasprintf("the clone folder '%s' already exists; move it away", clone)
                             : xasprintf("cannot clone '%s'%s%s into '%s': %s", p->repo_from, p->repo_rev ? " at " : "",
                                         p->repo_rev ? p->repo_rev : "", clone, tail);
        outcome_set_void(&o, CAUSE_SESSION_UNAVAILABLE, d);
        outcome_end(&o);
        outcome_write(&o, p->output_dir, NULL);
        _exit(TB_EXIT_VOID);
}

static void child(const struct batch *b, const struct plan_trial *p, int go, int log_fd, char **argv)
{
        setpgid(0, 0); /* a terminal's ^C reaches the batch only; it forwards once */
        sigprocmask(SIG_SETMASK, &b->old_mask, NULL);
        char c;
        ssize_t n;
        do
                n = read(go, &c, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1) /* the batch died before it recorded us */
                _exit(127);
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
                _exit(127);
        if (p->repo_from) {
                _cleanup_free_ char *clone = plan_clone_dir(p->output_dir);
                clone_or_void(p, clone);
        }
        execveat(b->self_fd, "", argv, environ, AT_EMPTY_PATH);
        log_error("cannot run trialbox itself: %s", strerror(errno));
        _exit(127);
}

static int start(struct batch *b, struct btrial *t, size_t ix, struct tb_error *err)
{
        const struct plan_trial *p = t->p;
        _cleanup_free_ char *parent = path_dirname(p->output_dir);
        int r = mkdir_p(parent, 0755);
        if (r == 0 && mkdir(p->output_dir, 0755) < 0 && errno != EEXIST)
                r = -errno;
        if (r < 0)
                return tb_fail(err, r, "cannot create the output folder '%s': %s", p->output_dir, strerror(-r));
        _cleanup_free_ char *log = xasprintf("%s/trialbox.log", p->output_dir);
        _cleanup_close_ int log_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        int go[2];
        if (log_fd < 0 || pipe2(go, O_CLOEXEC) < 0)
                return tb_fail(err, -errno, "cannot start Trial '%s': '%s': %s", p->id, log, strerror(errno));
        _cleanup_free_ char *clone = plan_clone_dir(p->output_dir);
        struct strv argv = { 0 };
        strv_add(&argv, "trialbox");
        plan_trial_run_args(p, p->repo ? p->repo : clone, &argv);
        pid_t pid = fork();
        if (pid == 0) {
                close(go[1]);
                child(b, p, go[0], log_fd, argv.v);
        }
        strv_done(&argv);
        close(go[0]);
        if (pid < 0) {
                close(go[1]);
                return tb_fail(err, -errno, "cannot start Trial '%s': fork: %s", p->id, strerror(errno));
        }
        r = write_launcher(b, p->output_dir, pid);
        if (r == 0 && write(go[1], "g", 1) != 1)
                r = -errno;
        close(go[1]);
        t->pid = pid;
        t->pidfd = -1;
        t->attempt++;
        set_running(b, t);
        if (r < 0) /* the child exits without running: settled as lost when it is reaped */
                return tb_fail(err, r, "cannot record the launcher of Trial '%s' in '%s': %s", p->id, p->output_dir,
                               strerror(-r));
        return 0;
}

/* Start what fits; returns the ms until a Trial waiting for its backoff is due (-1: none). */
static long long schedule(struct batch *b)
{
        long long now = now_ms(), wait = -1;
        while (b->next < b->n && b->t[b->next].state != T_PENDING)
                b->next++;
        for (size_t i = b->next; i < b->n && !b->stopping && b->used < b->opt->jobs; i++) {
                struct btrial *t = &b->t[i];
                if (t->state != T_PENDING || (b->opt->index >= 0 && (long)i != b->opt->index))
                        continue;
                if (t->due_ms > now) {
                        if (wait < 0 || t->due_ms - now < wait)
                                wait = t->due_ms - now;
                        continue;
                }
                unsigned need = t->p->slots < b->opt->jobs ? t->p->slots : b->opt->jobs;
                if (need > b->opt->jobs - b->used || (is_serial(t->p) && b->serial_busy))
                        continue;
                struct tb_error err = { 0 };
                if (start(b, t, i, &err) < 0) {
                        log_error("%s", err.msg);
                        if (t->state == T_PENDING) /* nothing started: it stays unrun, and void */
                                mark_done(b, t, OUTCOME_VOID, NULL);
                }
        }
        return wait;
}

/* ---- the event loop: each fd to its handler ---- */

static struct btrial *find_pid(struct batch *b, pid_t pid, size_t *ix)
{
        for (size_t i = 0; i < b->n; i++)
                if (b->t[i].state == T_RUNNING && b->t[i].pid == pid && b->t[i].pidfd < 0) {
                        *ix = i;
                        return &b->t[i];
                }
        return NULL;
}

static void forward(struct batch *b, int sig)
{
        for (size_t i = 0; i < b->n; i++)
                if (b->t[i].state == T_RUNNING && b->t[i].pid > 0)
                        kill(b->t[i].pid, sig);
}

static void on_signal(struct batch *b)
{
        struct signalfd_siginfo si;
        while (read(b->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                int sig = (int)si.ssi_signo;
                if (sig != SIGCHLD) {
                        if (!b->stopping)
                                b->stopping = sig;
                        forward(b, sig);
                        continue;
                }
                int st;
                pid_t pid;
                while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
                        size_t ix;
                        struct btrial *t = find_pid(b, pid, &ix);
                        if (!t)
                                continue;
                        release(b, t);
                        settle(b, t, ix, st, false);
                        b->done_here += t->state == T_DONE;
                        progress_line(b);
                }
        }
}

static void on_pidfd(struct batch *b, size_t ix)
{
        struct btrial *t = &b->t[ix];
        release(b, t);
        settle(b, t, ix, -1, false);
        b->done_here += t->state == T_DONE;
        progress_line(b);
}

static void on_timer(struct batch *b)
{
        unsigned long long ticks;
        if (read(b->tfd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
                return;
        progress_line(b);
}

static int loop(struct batch *b, struct tb_error *err)
{
        for (;;) {
                long long wait = schedule(b);
                bool pending = false;
                for (size_t i = b->next; i < b->n && !pending; i++)
                        pending = b->t[i].state == T_PENDING && (b->opt->index < 0 || (long)i == b->opt->index);
                if (b->running == 0 && (b->stopping || !pending))
                        return 0;
                progress_line(b);
                struct epoll_event ev[16];
                int k = epoll_wait(b->epfd, ev, 16, wait > INT_MAX ? INT_MAX : (int)wait);
                if (k < 0 && errno != EINTR)
                        return tb_fail(err, -errno, "epoll_wait: %s", strerror(errno));
                for (int i = 0; i < k; i++) {
                        unsigned kind = (unsigned)(ev[i].data.u64 >> 32);
                        size_t ix = (size_t)(ev[i].data.u64 & 0xffffffffu);
                        if (kind == EV_SIGNAL)
                                on_signal(b);
                        else if (kind == EV_TIMER)
                                on_timer(b);
                        else if (kind == EV_PIDFD && b->t[ix].state == T_RUNNING && b->t[ix].pidfd >= 0)
                                on_pidfd(b, ix);
                }
        }
}

/* ---- setting up and ending ---- */

static int setup_fds(struct batch *b, struct tb_error *err)
{
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, &b->old_mask) < 0)
                return tb_fail(err, -errno, "blocking signals: %s", strerror(errno));
        b->self_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        b->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        b->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (b->self_fd < 0 || b->sfd < 0 || b->epfd < 0)
                return tb_fail(err, -errno, "setting up the batch: %s", strerror(errno));
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EV(EV_SIGNAL, 0) };
        if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, b->sfd, &ev) < 0)
                return tb_fail(err, -errno, "setting up the batch: %s", strerror(errno));
        if (b->tty && b->opt->verbosity >= 1) {
                b->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
                struct itimerspec its = { .it_interval = { 1, 0 }, .it_value = { 1, 0 } };
                ev.data.u64 = EV(EV_TIMER, 0);
                if (b->tfd < 0 || timerfd_settime(b->tfd, 0, &its, NULL) < 0 ||
                    epoll_ctl(b->epfd, EPOLL_CTL_ADD, b->tfd, &ev) < 0)
                        return tb_fail(err, -errno, "setting up the progress timer: %s", strerror(errno));
        }
        return 0;
}

/* One batch per plan at a time (the lock is the plan file's); a Slurm task
 * (--index) runs one Trial and takes none. */
static int lock_plan(struct batch *b, struct tb_error *err)
{
        if (b->opt->index >= 0)
                return 0;
        b->plan_fd = open(b->opt->plan, O_RDONLY | O_CLOEXEC);
        if (b->plan_fd < 0)
                return tb_fail(err, -errno, "cannot open the plan '%s': %s", b->opt->plan, strerror(errno));
        if (flock(b->plan_fd, LOCK_EX | LOCK_NB) < 0)
                return tb_fail(err, -errno, "another batch is running the plan '%s'; wait for it to end", b->opt->plan);
        return 0;
}

/* Settle every Trial from its folder, writing the results known so far. */
static int begin(struct batch *b, struct tb_error *err)
{
        b->n = b->plan.n;
        if (!b->t) {
                b->t = xcalloc(b->n, sizeof *b->t);
                for (size_t i = 0; i < b->n; i++)
                        b->t[i] = (struct btrial){ .p = &b->plan.v[i], .pidfd = -1 };
        }
        if (b->opt->index >= 0) {
                settle(b, &b->t[b->opt->index], (size_t)b->opt->index, -1, true);
                return 0;
        }
        _cleanup_free_ char *tmp = xasprintf("%s.tmp-%d", b->results_path, (int)getpid());
        b->results_fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (b->results_fd < 0)
                return tb_fail(err, -errno, "cannot write '%s': %s; fix the plan folder's permissions", tmp,
                               strerror(errno));
        for (size_t i = 0; i < b->n; i++)
                settle(b, &b->t[i], i, -1, true);
        if (fdatasync(b->results_fd) < 0 || rename(tmp, b->results_path) < 0) {
                int r = -errno;
                unlink(tmp);
                return tb_fail(err, r, "cannot write '%s': %s", b->results_path, strerror(-r));
        }
        return 0;
}

static int finish(struct batch *b, struct tb_error *err)
{
        progress_end(b);
        struct report *rep = report_new();
        int r = results_rewrite(b, rep, err);
        if (r == 0)
                report_print(rep, b->opt->json ? REPORT_JSON : REPORT_TEXT, stdout);
        report_free(rep);
        if (r < 0)
                return TB_EXIT_ERROR;
        if (b->stopping)
                return 128 + b->stopping;
        for (size_t i = 0; i < b->n; i++)
                if ((b->opt->index < 0 || (long)i == b->opt->index) &&
                    (b->t[i].state != T_DONE || b->t[i].kind == OUTCOME_VOID))
                        return TB_BATCH_EXIT_VOID;
        return 0;
}

/* ---- Slurm: one job array for the plan (batch.h "Slurm") ---- */

/* A launcher record (`running` outcome.json or launcher.json) with Slurm ids:
 * its pid and boot are another node's, so it is judged by its task in the
 * queue. 0: no Slurm ids (judge it by its pid); 1: its task is still queued
 * or running (or squeue cannot say now); -1: its task is gone, the launcher
 * lost (*why says so). */
static int slurm_launcher(struct batch *b, const struct btrial *t, json_object *launcher, char **why)
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

static char *slurm_job_path(const struct batch *b) { return xasprintf("%s%s", b->opt->plan, BATCH_SLURM_JOB_SUFFIX); }

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

static bool slurm_mode(const struct batch *b)
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
                json_object *rec = read_record(t->p->output_dir, "outcome.json");
                const char *k = record_kind(rec);
                if (k && strcmp(k, "running") != 0) {
                        int kind = kind_from_name(k);
                        unsigned attempt = count_asides(t->p->output_dir) + 1;
                        if (kind != OUTCOME_VOID || attempt >= 1 + b->opt->retries) {
                                t->attempt = attempt;
                                mark_done(b, t, kind, rec);
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
        b->done = b->completed = b->failed = b->voids = b->running = 0;
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
                progress_end(b);
                log_notice("cancelling job %lld (signal %d): its running Trials stop and record their Outcomes",
                           b->job_id, sig);
                struct tb_error err = { 0 };
                if (slurm_array_cancel(b->job_id, SIGTERM, batch_environ(b), &err) < 0)
                        log_error("%s", err.msg);
        }
        b->running = st->running;
        slurm_scan(b);
        progress_line(b);
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
        _cleanup_free_ char *plan = realpath(b->opt->plan, NULL);
        if (!plan)
                return tb_fail(err, -errno, "cannot resolve the plan '%s': %s", b->opt->plan, strerror(errno));
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
        for (size_t i = 0; i < b->n; i++) {
                const struct plan_trial *p = &b->plan.v[i];
                long long ms = 0, bytes = 0, milli = 0;
                if (p->timeout && limits_parse_duration("--timeout", p->timeout, false, &ms, err) < 0)
                        return -EINVAL;
                if (p->memory && limits_parse_size("--memory", p->memory, &bytes, err) < 0)
                        return -EINVAL;
                if (p->cpus && limits_parse_cpus("--cpus", p->cpus, &milli, err) < 0)
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
        r = dirfd < 0 ? -errno : write_file_atomic_at_flags(dirfd, name, line, strlen(line), 0644, WRITE_SYNC_FILE);
        if (r < 0) /* the array runs regardless: say its id, so it can be waited for or cancelled */
                return tb_fail(err, r, "job %lld was submitted but its id cannot be saved in '%s': %s; cancel it "
                               "(scancel %lld) or save the id there yourself",
                               b->job_id, path, strerror(-r), b->job_id);
        log_notice("submitted job array %lld (%zu tasks); its id is in '%s'", b->job_id, b->n, path);
        return 0;
}

/* `batch PLAN --slurm`, or a batch resumed while PLAN.slurm-job exists:
 * wait for the saved job while it is queued, else submit (--slurm, when some
 * Trial has no final Outcome); then gather. Returns the exit status. */
static int slurm_run(struct batch *b, struct tb_error *err)
{
        char *const *env = batch_environ(b);
        _cleanup_free_ char *job_path = slurm_job_path(b);
        long long saved = slurm_job_read(job_path);
        b->n = b->plan.n;
        b->t = xcalloc(b->n, sizeof *b->t);
        for (size_t i = 0; i < b->n; i++)
                b->t[i] = (struct btrial){ .p = &b->plan.v[i], .pidfd = -1 };
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
                log_warn("'%s' does not hold a job id; remove it", job_path);
        if (saved > 0) {
                struct slurm_array_state st;
                struct tb_error perr = { 0 };
                int r = slurm_array_poll(saved, env, &st, &perr);
                if (r == -EAGAIN || (r == 0 && !st.gone)) {
                        b->job_id = saved;
                        log_notice("job %lld (saved in '%s') is still in the queue: waiting for it", saved, job_path);
                } else if (r < 0) {
                        log_warn("cannot ask Slurm about job %lld (saved in '%s'): %s; gathering what its Trials "
                                 "recorded", saved, job_path, perr.msg);
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
                progress_end(b);
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
        if (begin(b, err) < 0)
                return TB_EXIT_ERROR;
        return finish(b, err);
}

int batch_run(const struct batch_options *opt)
{
        struct batch b = { .opt = opt, .self_fd = -1, .epfd = -1, .sfd = -1, .tfd = -1, .results_fd = -1,
                           .plan_fd = -1, .start_ms = now_ms(), .tty = isatty(2) };
        struct tb_error err = { 0 };
        int status = TB_EXIT_ERROR;
        if (plan_load(opt->plan, &b.plan, &err) < 0) {
                log_error("%s", err.msg);
                return TB_EXIT_USAGE;
        }
        if (opt->index >= 0 && (size_t)opt->index >= b.plan.n) {
                log_error("--index %ld is past the plan's last Trial (%zu Trials, 0 to %zu)",
                        opt->index, b.plan.n, b.plan.n - 1);
                plan_done(&b.plan);
                return TB_EXIT_USAGE;
        }
        b.results_path = xasprintf("%s/results.jsonl", b.plan.dir);
        if (lock_plan(&b, &err) == 0 && setup_fds(&b, &err) == 0) {
                if (slurm_mode(&b))
                        status = slurm_run(&b, &err);
                else if (begin(&b, &err) == 0 && loop(&b, &err) == 0)
                        status = finish(&b, &err);
        }
        if (err.msg[0])
                log_error("%s", err.msg);
        sigprocmask(SIG_SETMASK, &b.old_mask, NULL);
        for (size_t i = 0; i < b.n; i++)
                tb_closep(&b.t[i].pidfd);
        int fds[] = { b.self_fd, b.epfd, b.sfd, b.tfd, b.results_fd, b.plan_fd };
        for (size_t i = 0; i < TB_ARRAY_SIZE(fds); i++)
                tb_closep(&fds[i]);
        free(b.t);
        free(b.results_path);
        plan_done(&b.plan);
        return status;
}
