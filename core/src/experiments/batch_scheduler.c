#define _GNU_SOURCE
#include "experiments/batch_internal.h"
#include "plugin/loader.h"

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
#include "trial/session_env.h"
#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/cpus.h"
#include "base/error.h"
#include "base/io.h"
#include "base/macro.h"
#include "base/path.h"
#include "base/spawn.h"
#include "base/str.h"
#include "base/strv.h"

extern char **environ;

/* ---- small helpers ---- */

/* Is a resource `t` cannot share (its Harness's `exclusive`, its shared
 * repository) held by a running Trial? Such Trials wait for it without
 * holding a slot. */
static bool exclusive_busy(const struct batch *b, const struct btrial *t)
{
        for (size_t k = 0; k < TB_ARRAY_SIZE(t->exclusive); k++)
                if (t->exclusive[k] && strv_contains(&b->held, t->exclusive[k]))
                        return true;
        return false;
}

static void exclusive_release(struct batch *b, const struct btrial *t)
{
        for (size_t k = 0; k < TB_ARRAY_SIZE(t->exclusive); k++)
                for (size_t i = 0; t->exclusive[k] && i < b->held.n; i++)
                        if (strcmp(b->held.v[i], t->exclusive[k]) == 0) {
                                free(b->held.v[i]);
                                b->held.v[i] = b->held.v[--b->held.n];
                                b->held.v[b->held.n] = NULL;
                                break;
                        }
}

/* ---- deciding a Trial from its folder ---- */

static void release(struct batch *b, struct btrial *t)
{
        if (t->state != T_RUNNING)
                return;
        b->running--;
        b->used -= t->slots;
        exclusive_release(b, t);
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
        for (size_t k = 0; k < TB_ARRAY_SIZE(t->exclusive); k++)
                if (t->exclusive[k])
                        strv_add(&b->held, t->exclusive[k]);
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

void batch_mark_done(struct batch *b, struct btrial *t, int kind, json_object *rec)
{
        t->state = T_DONE;
        t->kind = kind;
        b->done++;
        b->completed += kind == OUTCOME_COMPLETED;
        b->failed += kind == OUTCOME_FAILED;
        b->voids += kind == OUTCOME_VOID;
        b->unrecorded += kind == BATCH_KIND_UNRECORDED;
        batch_note_finished(b, t, rec);
        if (batch_grade_queue(b, t, kind))
                return; /* its results line comes with its grade */
        _cleanup_free_ char *line = batch_result_line(t, rec);
        batch_results_append(b, line);
}

int batch_move_aside(const struct btrial *t, unsigned attempt)
{
        _cleanup_free_ char *to = batch_attempt_dir(t->p->output_dir, attempt);
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

/* Did our launcher refuse its line (a usage error: it ran nothing)? */
static bool refused(int exit_status)
{
        return exit_status >= 0 && WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == TB_EXIT_USAGE;
}

static char *lost_why(int exit_status)
{
        if (exit_status < 0)
                return xstrdup("its launcher was lost (gone, or another boot)");
        if (WIFSIGNALED(exit_status))
                return xasprintf("trialbox run was killed by signal %d", WTERMSIG(exit_status));
        return xasprintf("trialbox run exited with status %d", WEXITSTATUS(exit_status));
}


enum found { FOUND_NOTHING, FOUND_RUNNING, FOUND_RECORD, FOUND_ELSEWHERE, FOUND_UNREADABLE };

/* A record in OUTPUT_DIR that is there but cannot be read: said, and the
 * Trial is not run (it may have run already: never again on a guess). */
static enum found unreadable(const struct btrial *t, const char *name, const char *why)
{
        _cleanup_free_ char *id = str_escape(t->p->id);
        log_error("%s: cannot read '%s/%s': %s; the Trial is not run (it may have run already): fix or remove the "
                  "file, then run the batch again",
                  id, t->p->output_dir, name, why);
        return FOUND_UNREADABLE;
}

/* OUTPUT_DIR/outcome.json into *rec, and its kind (NULL: none). Returns
 * FOUND_NOTHING to go on, or what was found when that settles it: a record
 * that cannot be read, one another process wrote (set aside: the Trial
 * runs), a final one. */
static enum found read_outcome(struct btrial *t, json_object **rec, const char **kind)
{
        const char *out = t->p->output_dir;
        _cleanup_free_ char *why = NULL;
        int r = batch_load_record(out, "outcome.json", rec, &why);
        if (r < 0 && r != -ENOENT)
                return unreadable(t, "outcome.json", why);
        *kind = batch_record_kind(*rec);
        if (r == 0 && !*kind) {
                json_object_put(*rec);
                *rec = NULL;
                return unreadable(t, "outcome.json", "it has no \"outcome\"");
        }
        int ours = *kind ? batch_record_ours(out, *rec, &why) : 1;
        if (ours < 0) {
                json_object_put(*rec);
                *rec = NULL;
                return unreadable(t, "launcher.json", why);
        }
        if (!ours) {
                /* Not written by a run this batch started: never taken. */
                _cleanup_free_ char *id = str_escape(t->p->id);
                log_warn("%s: '%s/outcome.json' was not written by a run this batch started (no matching "
                         "launcher_nonce); it is kept as outcome.json.foreign and the Trial runs",
                         id, out);
                batch_set_aside_foreign(out);
                json_object_put(*rec);
                *rec = batch_record_lost(t, NULL, "its outcome.json was not written by a run this batch started", false);
                return FOUND_RECORD;
        }
        return *kind && strcmp(*kind, "running") != 0 ? FOUND_RECORD : FOUND_NOTHING;
}

/* What OUTPUT_DIR says of its attempt: nothing started yet; a launcher still
 * alive (adopted: waited for); or a record in *rec (a lost launcher's written
 * as void/launcher_lost first). `exit_status`: our child's wait status when
 * it just ended, else -1. */
static enum found read_attempt(struct batch *b, struct btrial *t, size_t ix, int exit_status, json_object **rec)
{
        const char *out = t->p->output_dir;
        _cleanup_free_ char *why = NULL;
        const char *kind = NULL;
        enum found found = read_outcome(t, rec, &kind);
        if (found != FOUND_NOTHING)
                return found;
        int r;
        if (!kind) {
                json_object_put(*rec);
                *rec = NULL;
        }
        /* The launcher's record: the running one, or ours from before it ran. */
        json_object *launcher = kind ? *rec : NULL;
        if (!kind && exit_status < 0 && (r = batch_load_record(out, "launcher.json", &launcher, &why)) < 0 &&
            r != -ENOENT)
                return unreadable(t, "launcher.json", why);
        if (!launcher && exit_status < 0)
                return FOUND_NOTHING;
        _cleanup_free_ char *path = xasprintf("%s/%s", out, kind ? "outcome.json" : "launcher.json");
        _cleanup_free_ char *slurm_why = NULL;
        int in_slurm = launcher && exit_status < 0 ? batch_slurm_launcher(b, t, launcher, &slurm_why) : 0;
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
        if (kind && exit_status >= 0 && WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == TB_EXIT_ERROR) {
                /* It ran the session and said it could not write the end of it:
                 * its own state, never a void run again. */
                *rec = batch_record_unrecorded(t, *rec);
                return FOUND_RECORD;
        }
        if (exit_status >= 0 && b->stopping) {
                /* Our launcher, which we forwarded the operator's signal to,
                 * ended without its final Outcome: interrupted, not lost. */
                *rec = batch_record_interrupted_launcher(t, *rec, b->stopping);
                return FOUND_RECORD;
        }
        _cleanup_free_ char *lost = slurm_why ? TAKE_PTR(slurm_why) : lost_why(exit_status);
        *rec = batch_record_lost(t, *rec, lost, refused(exit_status));
        return FOUND_RECORD;
}

/* A void attempt with retries left: move it aside, run again after the backoff. */
static int retry(struct batch *b, struct btrial *t, size_t ix, bool at_start)
{
        _cleanup_free_ char *id = str_escape((t->p->id));
        int r = batch_move_aside(t, t->attempt);
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

/* Does a void attempt run again? One the operator interrupted does when
 * the batch starts (a resume), whatever its retries: interruptions are not
 * counted against them. Any other while retries are left (an interrupted
 * one too, while this batch runs: its run was signalled by someone else,
 * and counting it keeps that from looping), unless it can never succeed
 * (its Harness binary is not there: no backoff can bring it). `asides` is
 * the number of attempts before it. */
static bool void_again(struct batch *b, const struct btrial *t, json_object *rec, unsigned asides, bool at_start)
{
        if (b->stopping || b->gather)
                return false;
        bool interrupted = batch_record_interrupted(rec);
        if (interrupted && at_start)
                return true;
        const char *out = t->p->output_dir;
        unsigned used = 1 + batch_count_retried(out, asides) + (interrupted ? batch_count_interrupted(out, asides) : 0);
        if (used >= 1 + b->opt->retries)
                return false;
        _cleanup_free_ char *why = NULL;
        if (batch_binary_gone(b, t, &why)) {
                _cleanup_free_ char *id = str_escape(t->p->id);
                log_error("%s: void, and %s: it is not run again", id, why);
                return false;
        }
        return true;
}

/* Decide what a Trial is from its folders: final (DONE), running somewhere
 * (adopted), or to run (PENDING, a void attempt moved aside). */
static void settle(struct batch *b, struct btrial *t, size_t ix, int exit_status, bool at_start)
{
        unsigned asides = batch_count_asides(t->p->output_dir), attempt = asides + 1;
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
        if (found == FOUND_UNREADABLE) { /* not run: its line says outcome null */
                batch_mark_done(b, t, OUTCOME_VOID, NULL);
                return;
        }
        if (found == FOUND_ELSEWHERE) {
                t->state = T_ELSEWHERE;
                return;
        }
        int kind = batch_kind_from_name(batch_record_kind(rec));
        bool again = kind == OUTCOME_VOID && void_again(b, t, rec, asides, at_start);
        if (!again || retry(b, t, ix, at_start) < 0)
                batch_mark_done(b, t, kind, rec);
        json_object_put(rec);
}

/* ---- starting a Trial ---- */

static int run_git(char *const argv[])
{
        struct spawn s = { .argv = argv };
        int r = spawn_run(&s, NULL);
        spawn_done(&s);
        if (r < 0) {
                log_error("cannot run git: %s; install git", strerror(-r));
                return r;
        }
        return s.status == 0 ? 0 : -EIO;
}

/* Started as root with a Trial `user`: the clone becomes that user's (as
 * `run` wants the repository writable by the session's user), through
 * fds, never following a link the clone holds. 0 or a negative errno. */
static int clone_to_user(const struct plan_trial *p, const char *clone)
{
        if (geteuid() != 0 || !p->more->user)
                return 0;
        _cleanup_close_ int fd = open(clone, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        struct session_user u = { 0 };
        struct tb_error err = { 0 };
        int r = session_user_resolve(p->more->user, false, 0, &st, &u, &err);
        if (r == 0 && u.drop)
                r = session_user_chown_tree(fd, &u);
        session_user_done(&u);
        return r;
}

/* In the child: a fresh clone of repo_from at its revision, or a void
 * Outcome (echoing the launcher's `nonce`). */
static void clone_or_void(const struct plan_trial *p, const char *clone, const char *nonce)
{
        struct stat st;
        int r = lstat(clone, &st) == 0 ? -EEXIST : 0;
        if (r == 0) {
                const char *rev = p->more->repo_rev;
                char *argv[] = { "git", "clone", "--quiet", "--no-hardlinks", rev ? "--no-checkout" : "--",
                                 p->repo_from, (char *)clone, NULL };
                r = run_git(argv);
        }
        if (r == 0 && p->more->repo_rev) {
                char *argv[] = { "git", "-C", (char *)clone, "checkout", "--quiet", "--detach", p->more->repo_rev,
                                 "--", NULL };
                r = run_git(argv);
        }
        if (r == 0)
                r = clone_to_user(p, clone);
        if (r == 0)
                return;
        struct outcome o = { .harness = p->harness, .exit_code = -1 };
        outcome_start(&o);
        outcome_set_nonce(&o, nonce);
        _cleanup_free_ char *tail = batch_log_tail(p->output_dir);
        _cleanup_free_ char *d =
                r == -EEXIST ? xasprintf("the clone folder '%s' already exists; move it away", clone)
                             : xasprintf("cannot clone '%s'%s%s into '%s': %s", p->repo_from,
                                         p->more->repo_rev ? " at " : "", p->more->repo_rev ? p->more->repo_rev : "",
                                         clone, tail);
        outcome_set_void(&o, CAUSE_SESSION_UNAVAILABLE, d);
        outcome_end(&o);
        outcome_write(&o, p->output_dir, NULL);
        _exit(TB_EXIT_VOID);
}

struct forked {
        const struct batch_fork *f;
        int (*main)(int argc, char **argv); /* NULL: the child execs trialbox */
        int exec_fd;                        /* what it execs then (the batch's self_fd) */
};

/* In the batch's child (spawn.c's child() has reset the signals and the
 * mask, made the process group and placed stdio and the env fd): every
 * other fd of the batch's closed (but the binary to exec; the write end of
 * the pipe `before` waits on among them: its EOF says the batch died),
 * `before`, then become `trialbox ARGS…`: by the exec that follows (main
 * NULL), or here, as an exec'd binary would start. Its exit status (0:
 * exec). */
static int forked_child(void *ctx)
{
        const struct forked *c = ctx;
        const struct batch_fork *f = c->f;
        log_forked();
        const int keep[] = { f->env_fd >= 0 ? BATCH_ENV_FD : -1, f->keep_fd, c->main ? -1 : c->exec_fd };
        close_fds_except(STDERR_FILENO + 1, keep, TB_ARRAY_SIZE(keep));
        if (f->before) {
                int code = f->before(f->ctx, f->keep_fd);
                if (f->keep_fd >= 0)
                        close(f->keep_fd);
                if (code != 0)
                        return code;
        }
        if (!c->main)
                return 0;
        environ = f->envp;
        int argc = 0;
        while (f->argv[argc])
                argc++;
        int status = c->main(argc, f->argv);
        fflush(NULL);
        log_end();
        return status;
}

/* The batch's own anonymous memory (what a fork of it starts with:
 * resident, not a file's), in bytes; SIZE_MAX when it cannot be read. */
static size_t anon_bytes(void)
{
        char buf[128];
        unsigned long size, resident, shared;
        _cleanup_close_ int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read_retry(fd, buf, sizeof buf - 1) : -1;
        if (n <= 0)
                return SIZE_MAX;
        buf[n] = '\0';
        if (sscanf(buf, "%lu %lu %lu", &size, &resident, &shared) != 3 || shared > resident)
                return SIZE_MAX;
        return (resident - shared) * (size_t)sysconf(_SC_PAGESIZE);
}

int batch_fork_trialbox(struct batch *b, const struct batch_fork *f, pid_t *pid, struct tb_error *err)
{
        /* The fork goes on as trialbox with no exec while the batch's own
         * memory has grown little since it began: a session's rusage peak
         * counts trialbox's memory (the keeper shares it, and bwrap's
         * process starts in it), and a fork of a batch holding a plan of
         * many lines would bring that plan's pages (about 0.45 KiB a line)
         * into every Trial's peak. */
        size_t anon = anon_bytes();
        bool here = anon != SIZE_MAX && b->anon_base != SIZE_MAX && anon <= b->anon_base + BATCH_FORK_MAX_ANON;
        struct forked c = { .f = f, .main = here ? b->opt->trial_main : NULL, .exec_fd = b->self_fd };
        struct spawn s = { .argv = here ? NULL : f->argv,
                           .envp = here ? NULL : f->envp,
                           .flags = SPAWN_NEW_PGROUP | (here ? 0 : SPAWN_EXEC_FD),
                           .exec_fd = b->self_fd,
                           .sigmask = &b->old_mask,
                           .std_in = SPAWN_DEV_NULL,
                           .std_out = SPAWN_FD,
                           .std_out_fd = f->log_fd,
                           .std_err = SPAWN_FD,
                           .std_err_fd = f->log_fd,
                           .child_fn = forked_child,
                           .ctx = &c };
        const int env_target = BATCH_ENV_FD;
        if (f->env_fd >= 0) {
                s.fds = &f->env_fd;
                s.fd_targets = &env_target;
                s.n_fds = 1;
        }
        fflush(NULL); /* what stdio holds is written once, by the batch */
        int r = spawn_start(&s, err);
        *pid = s.pid;
        spawn_done(&s);
        return r;
}

/* What the launcher does in its child before it becomes `trialbox run`. */
struct launch {
        const struct plan_trial *p;
        const char *nonce; /* the attempt's token, for a void record written before the run */
};

/* In the launcher's child (its own process group, so that a terminal's ^C
 * reaches the batch only, which forwards it once; stdio on the Trial's
 * log), before it runs the Trial: wait on `go_r` until the batch has
 * recorded it, then clone what the Trial runs in. 0, or the exit status
 * to end with. */
static int launch_child(void *ctx, int go_r)
{
        const struct launch *l = ctx;
        char c;
        if (read_retry(go_r, &c, 1) != 1) /* the batch died before it recorded us */
                return 127;
        if (l->p->shared_repo) {
                /* Other lines name this repository: one Trial in it at a time,
                 * also across the tasks of a Slurm array (the batch's own
                 * scheduling covers one batch only). The lock is the run's
                 * until it exits: it holds the fd (not close-on-exec). */
                int fd = open(l->p->shared_repo, O_RDONLY | O_DIRECTORY);
                if (fd >= 0 && RETRY_EINTR(flock(fd, LOCK_EX)) < 0)
                        close(fd);
        }
        if (l->p->repo_from) {
                _cleanup_free_ char *clone = plan_clone_dir(l->p->output_dir);
                clone_or_void(l->p, clone, l->nonce);
        }
        return 0;
}

static int start(struct batch *b, struct btrial *t, size_t ix, struct tb_error *err)
{
        const struct plan_trial *p = t->p;
        _cleanup_free_ char *parent = path_dirname(p->output_dir);
        int r = mkdir_p(parent, 0755);
        /* 0700, as `run` makes it (which opens it to 0711 when its session
         * runs as another user); what is in it is the runner's alone. */
        if (r == 0 && mkdir(p->output_dir, 0700) < 0 && errno != EEXIST)
                r = -errno;
        if (r < 0)
                return tb_fail(err, r, "cannot create the output folder '%s': %s", p->output_dir, strerror(-r));
        _cleanup_free_ char *log = xasprintf("%s/trialbox.log", p->output_dir);
        _cleanup_close_ int log_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        int go[2];
        if (log_fd < 0 || pipe2(go, O_CLOEXEC) < 0)
                return tb_fail(err, -errno, "cannot start Trial '%s': '%s': %s", p->id, log, strerror(errno));
        _cleanup_close_ int env_fd = batch_env_pipe(&p->more->env);
        if (env_fd < -1) {
                close(go[0]);
                close(go[1]);
                return tb_fail(err, env_fd, "cannot start Trial '%s': its env: %s", p->id, strerror(-env_fd));
        }
        _cleanup_free_ char *clone = plan_clone_dir(p->output_dir);
        struct strv argv = { 0 };
        strv_add(&argv, "trialbox");
        plan_trial_run_args(p, p->repo ? p->repo : clone, BATCH_ENV_FILE, &argv);
        /* This attempt's token: its run echoes it in outcome.json, so that
         * no record another process planted is ever taken for it. */
        char nonce[OUTCOME_NONCE_LEN + 1];
        batch_nonce(nonce);
        _cleanup_strv_ struct strv envp = { 0 };
        batch_child_env(b->opt->jobs, &envp);
        strv_addf(&envp, "TRIALBOX_RECORD_NONCE=%s", nonce);
        struct launch l = { .p = p, .nonce = nonce };
        struct batch_fork f = { .argv = argv.v,
                                .envp = envp.v,
                                .log_fd = log_fd,
                                .env_fd = env_fd,
                                .keep_fd = go[0],
                                .before = launch_child,
                                .ctx = &l };
        struct tb_error serr = { 0 };
        pid_t pid;
        int sr = batch_fork_trialbox(b, &f, &pid, &serr);
        strv_done(&argv);
        close(go[0]);
        if (sr < 0) {
                close(go[1]);
                return tb_fail(err, sr, "cannot start Trial '%s': fork: %s", p->id, strerror(-sr));
        }
        r = batch_write_launcher(b, t, pid, nonce);
        if (r == 0)
                r = loop_write(go[1], "g", 1);
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

int batch_env_pipe(const struct strv *env)
{
        if (env->n == 0)
                return -1;
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        _cleanup_(erase_and_freep) char *json = session_env_to_json(env);
        int r = loop_write(fds[1], json, strlen(json));
        close(fds[1]);
        if (r < 0) {
                close(fds[0]);
                return r;
        }
        return fds[0];
}

void batch_child_env(unsigned jobs, struct strv *envp)
{
        const bool busy = jobs >= (unsigned)cpus_count();
        for (char **e = environ; e && *e; e++)
                if (!str_has_prefix(*e, "TRIALBOX_RECORD_NONCE=") &&
                    !(busy && str_has_prefix(*e, "TRIALBOX_CPUS_BUSY=")))
                        strv_add(envp, *e);
        if (busy)
                strv_add(envp, "TRIALBOX_CPUS_BUSY=1");
}

/* Start what fits, graders first; returns the ms until a Trial or a grader
 * waiting for its backoff is due (-1: none). */
static long long schedule(struct batch *b)
{
        long long now = now_ms(), wait = batch_grade_schedule(b);
        while (b->next < b->n && b->t[b->next].state != T_PENDING)
                b->next++;
        for (size_t i = b->next; i < b->n && !b->stopping && !b->opt->grade_only && b->used < b->opt->jobs; i++) {
                struct btrial *t = &b->t[i];
                if (t->state != T_PENDING || (b->opt->index >= 0 && (long)i != b->opt->index))
                        continue;
                if (t->due_ms > now) {
                        if (wait < 0 || t->due_ms - now < wait)
                                wait = t->due_ms - now;
                        continue;
                }
                unsigned need = t->p->slots < b->opt->jobs ? t->p->slots : b->opt->jobs;
                if (need > b->opt->jobs - b->used || exclusive_busy(b, t))
                        continue;
                struct tb_error err = { 0 };
                if (start(b, t, i, &err) < 0) {
                        log_error("%s", err.msg);
                        if (t->state == T_PENDING) /* nothing started: it stays unrun, and void */
                                batch_mark_done(b, t, OUTCOME_VOID, NULL);
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

/* The operator's signal to every running launcher: to the process group
 * of one we started (it leads its own: whatever it runs before it is
 * `trialbox run`, a clone, gets it too; `run` itself holds it for its
 * session), to the process of one we adopted. */
static void forward(struct batch *b, int sig)
{
        for (size_t i = 0; i < b->n; i++)
                if (b->t[i].state == T_RUNNING && b->t[i].pid > 0)
                        kill(b->t[i].pidfd < 0 ? -b->t[i].pid : b->t[i].pid, sig);
        batch_grade_forward(b, sig);
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
                        if (!t) {
                                if (batch_grade_reaped(b, pid, st))
                                        batch_progress_line(b);
                                continue;
                        }
                        release(b, t);
                        settle(b, t, ix, st, false);
                        b->done_here += t->state == T_DONE;
                        batch_progress_line(b);
                }
        }
}

static void on_pidfd(struct batch *b, size_t ix)
{
        struct btrial *t = &b->t[ix];
        release(b, t);
        settle(b, t, ix, -1, false);
        b->done_here += t->state == T_DONE;
        batch_progress_line(b);
}

static void on_timer(struct batch *b)
{
        unsigned long long ticks;
        if (read(b->tfd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
                return;
        batch_progress_line(b);
}

static int loop(struct batch *b, struct tb_error *err)
{
        for (;;) {
                long long wait = schedule(b);
                bool pending = batch_grade_pending(b);
                for (size_t i = b->next; i < b->n && !pending && !b->opt->grade_only; i++)
                        pending = b->t[i].state == T_PENDING && (b->opt->index < 0 || (long)i == b->opt->index);
                if (b->running == 0 && (b->stopping || !pending))
                        return 0;
                batch_progress_line(b);
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
        b->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        b->epfd = epoll_create1(EPOLL_CLOEXEC);
        b->self_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
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

/* Results an earlier trialbox wrote as results.jsonl become this plan's
 * (a Slurm task, --index, writes none). */
static int adopt_old_results(struct batch *b, struct tb_error *err)
{
        int r = b->opt->index >= 0 ? 0 : batch_results_adopt_old(b);
        if (r < 0)
                return tb_fail(err, r, "cannot rename '%s/%s' to '%s': %s", b->plan.dir, BATCH_RESULTS_OLD_NAME,
                               b->results_path, strerror(-r));
        return 0;
}

/* The resource `harness` declares exclusive (its plugin's, ABI 1.2), or
 * NULL: asked of each Harness once. A plugin that cannot be loaded declares
 * none (its Trials void in `run`, saying why). */
const char *batch_harness_exclusive(struct batch *b, const char *harness)
{
        size_t n = strlen(harness);
        for (size_t i = 0; i < b->exclusive.n; i++)
                if (strncmp(b->exclusive.v[i], harness, n) == 0 && b->exclusive.v[i][n] == '=')
                        return b->exclusive.v[i][n + 1] ? b->exclusive.v[i] + n + 1 : NULL;
        struct plugin p;
        struct tb_error err = { 0 };
        bool loaded = plugin_load(b->opt->plugin_path, harness, &p, &err) == 0;
        strv_addf(&b->exclusive, "%s=%s", harness, loaded && p.exclusive ? p.exclusive : "");
        if (loaded)
                plugin_unload(&p);
        return batch_harness_exclusive(b, harness);
}

/* "repo:PATH" for a shared repository, kept once in b->repo_keys. */
static const char *repo_key(struct batch *b, const char *shared)
{
        if (!shared)
                return NULL;
        _cleanup_free_ char *key = xasprintf("repo:%s", shared);
        for (size_t i = 0; i < b->repo_keys.n; i++)
                if (strcmp(b->repo_keys.v[i], key) == 0)
                        return b->repo_keys.v[i];
        strv_add(&b->repo_keys, key);
        return b->repo_keys.v[b->repo_keys.n - 1];
}

void batch_trials_init(struct batch *b)
{
        if (b->t)
                return;
        b->n = b->plan.n;
        /* Keys are pointers into the vectors: make them all before taking any. */
        for (size_t i = 0; i < b->n; i++) {
                batch_harness_exclusive(b, b->plan.v[i].harness);
                repo_key(b, b->plan.v[i].shared_repo);
        }
        b->t = xcalloc(b->n, sizeof *b->t);
        for (size_t i = 0; i < b->n; i++)
                b->any_grader = b->any_grader || b->plan.v[i].more->grade;
        for (size_t i = 0; i < b->n; i++)
                b->t[i] = (struct btrial){ .p = &b->plan.v[i], .pidfd = -1, .gstatus = -1,
                                           .exclusive = { batch_harness_exclusive(b, b->plan.v[i].harness),
                                                          repo_key(b, b->plan.v[i].shared_repo) } };
        for (size_t i = 0; i < b->plan.notes.n; i++)
                log_notice("%s", b->plan.notes.v[i]);
}

/* Settle every Trial from its folder, writing the results known so far. */
int batch_begin(struct batch *b, struct tb_error *err)
{
        batch_trials_init(b);
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

int batch_finish(struct batch *b, struct tb_error *err)
{
        batch_progress_end(b);
        struct report *rep = report_new();
        int r = batch_results_rewrite(b, rep, err);
        if (r == 0)
                report_print(rep, b->opt->json ? REPORT_JSON : REPORT_TEXT, stdout);
        report_free(rep);
        if (r < 0)
                return TB_EXIT_ERROR;
        if (b->stopping)
                return 128 + b->stopping;
        if (batch_grade_void_left(b))
                return TB_BATCH_EXIT_VOID;
        for (size_t i = 0; i < b->n; i++)
                if ((b->opt->index < 0 || (long)i == b->opt->index) &&
                    (b->t[i].state != T_DONE || b->t[i].kind == OUTCOME_VOID ||
                     b->t[i].kind == BATCH_KIND_UNRECORDED))
                        return TB_BATCH_EXIT_VOID;
        return 0;
}

int batch_run(const struct batch_options *opt)
{
        struct batch b = { .opt = opt,
                           .self_fd = -1,
                           .epfd = -1,
                           .sfd = -1,
                           .tfd = -1,
                           .results_fd = -1,
                           .plan_fd = -1,
                           .start_ms = now_ms(),
                           .tty = isatty(2),
                           .anon_base = anon_bytes() };
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
        b.results_path = batch_results_path(b.plan.file);
        b.gather = opt->grade_only; /* judge every Trial from disk; run none */
        if (opt->check) {
                status = batch_check_only(&b);
        } else if (lock_plan(&b, &err) == 0 && adopt_old_results(&b, &err) == 0 && setup_fds(&b, &err) == 0) {
                /* The lines that will run, checked first (--grade-only runs none). */
                if (opt->index < 0 && !opt->grade_only && batch_check_start(&b) != 0)
                        status = TB_EXIT_USAGE;
                else if (batch_slurm_mode(&b))
                        status = batch_slurm_run(&b, &err);
                else if (batch_begin(&b, &err) == 0 && loop(&b, &err) == 0)
                        status = batch_finish(&b, &err);
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
        batch_check_done(&b);
        strv_done(&b.held);
        strv_done(&b.exclusive);
        strv_done(&b.repo_keys);
        free(b.results_path);
        plan_done(&b.plan);
        return status;
}
