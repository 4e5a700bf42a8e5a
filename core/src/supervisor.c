#define _GNU_SOURCE
#include "supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

#include "keeper.h"
#include "sandbox.h"

int supervisor_parse_status(const char *line, long *child_pid, int *exit_code)
{
        json_object *j = json_tokener_parse(line);
        if (!j || !json_object_is_type(j, json_type_object)) {
                json_object_put(j);
                return -EINVAL;
        }
        json_object *v;
        if (json_object_object_get_ex(j, "child-pid", &v) && json_object_is_type(v, json_type_int))
                *child_pid = (long)json_object_get_int64(v);
        if (json_object_object_get_ex(j, "exit-code", &v) && json_object_is_type(v, json_type_int))
                *exit_code = json_object_get_int(v);
        json_object_put(j);
        return 0;
}

/* Lines read from a pipe, split on '\n'. */
struct line_reader {
        char buf[8192];
        size_t len;
};

/* Read what is there; call `line` for each complete line. Returns false at EOF or error. */
static bool read_lines(int fd, struct line_reader *lr, void (*line)(char *l, void *ud), void *ud)
{
        ssize_t n = read(fd, lr->buf + lr->len, sizeof lr->buf - 1 - lr->len);
        if (n < 0)
                return errno == EINTR || errno == EAGAIN;
        if (n == 0) {
                if (lr->len) {
                        lr->buf[lr->len] = '\0';
                        line(lr->buf, ud);
                        lr->len = 0;
                }
                return false;
        }
        lr->len += (size_t)n;
        char *start = lr->buf, *nl;
        while ((nl = memchr(start, '\n', lr->len - (size_t)(start - lr->buf)))) {
                *nl = '\0';
                line(start, ud);
                start = nl + 1;
        }
        lr->len -= (size_t)(start - lr->buf);
        memmove(lr->buf, start, lr->len);
        if (lr->len == sizeof lr->buf - 1) { /* a line too long to be bwrap's: pass it on */
                lr->buf[lr->len] = '\0';
                line(lr->buf, ud);
                lr->len = 0;
        }
        return true;
}

/* A source of events: an fd and the handler it is given to when ready. */
struct supervisor;
enum source_life {
        WHILE_RUNNING, /* watched until the session is reaped */
        ALWAYS,        /* watched as long as the loop runs */
        TO_EOF,        /* read to its end: the loop waits for it */
};
struct source {
        int fd;
        enum source_life life;
        bool ended;
        /* Called with poll's revents; returns false once the fd is at its end. */
        bool (*handle)(struct supervisor *sv, struct source *src, short revents);
        void *ctx;
};

/* Room for the sources of today (signals, kill timer, bwrap's status and
 * stderr) and those to come (deadline, cgroup events, relayed streams), and
 * the caller's watches. */
#define SUPERVISOR_MAX_SOURCES 32
/* Once the session is reaped, how long to wait for its pipes' last bytes. */
#define SUPERVISOR_LINGER_MS 100

struct supervisor {
        const struct supervisor_run *run;
        sigset_t old_mask;
        bool masked; /* old_mask holds the mask to restore */
        pid_t pid; /* the direct child: the session, or bwrap's keeper */
        bool reaped;
        int sfd, timer, exec_r;
        int status_p[2], err_p[2];
        struct line_reader status_lines, err_lines;
        struct source sources[SUPERVISOR_MAX_SOURCES];
        size_t n_sources;
        struct supervisor_seen seen;
};

static void on_status(char *l, void *ud)
{
        struct supervisor_seen *seen = ud;
        if (*l)
                supervisor_parse_status(l, &seen->child_pid, &seen->exit_code);
}

static void on_stderr(char *l, void *ud)
{
        struct supervisor_seen *seen = ud;
        /* Relay the session's stderr as it comes; keep bwrap's own message
         * for the Outcome when the sandbox does not come up. */
        size_t n = strlen(l);
        l[n] = '\n';
        for (size_t off = 0; off <= n;) {
                ssize_t w = write(STDERR_FILENO, l + off, n + 1 - off);
                if (w <= 0 && errno != EINTR)
                        break;
                if (w > 0)
                        off += (size_t)w;
        }
        l[n] = '\0';
        if (str_has_prefix(l, "bwrap: "))
                snprintf(seen->bwrap_msg, sizeof seen->bwrap_msg, "%s", l);
}

/* Mark every fd from `from` on close-on-exec, but `keep` (itself cloexec). */
static void close_inherited_fds(int from, int keep)
{
        if (close_range((unsigned)from, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
                return;
        /* Older kernels: walk the open fds. */
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        while (d && (e = readdir(d))) {
                int fd = atoi(e->d_name);
                if (fd >= from && fd != keep && fd != dirfd(d))
                        fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
        if (d)
                closedir(d);
}

/* In the child: put the fds where the program expects them and exec it
 * (bwrap: through its keeper). */
static void __attribute__((noreturn)) exec_child(const struct supervisor_run *run, const sigset_t *old,
                                                 pid_t trialbox, int status_w, int err_w, int exec_err_w)
{
        int e;
        if (run->bwrap) {
                if (dup2(err_w, STDERR_FILENO) < 0)
                        goto fail;
                if (status_w == SANDBOX_STATUS_FD) {
                        if (fcntl(status_w, F_SETFD, 0) < 0)
                                goto fail;
                } else if (dup2(status_w, SANDBOX_STATUS_FD) < 0) {
                        goto fail;
                }
                /* Only what bwrap needs crosses: no fd trialbox inherited
                 * from whoever started it (bwrap passes them all on). */
                keeper_run(run->argv, run->envp, trialbox, old, exec_err_w);
        }
        sigprocmask(SIG_SETMASK, old, NULL);
        /* Its own process group, so a forwarded signal reaches its children too. */
        if (setpgid(0, 0) < 0)
                goto fail;
        if (run->cwd && chdir(run->cwd) < 0)
                goto fail;
        close_inherited_fds(STDERR_FILENO + 1, exec_err_w);
        execve(run->argv[0], run->argv, run->envp);
fail:
        e = errno;
        if (write(exec_err_w, &e, sizeof e) < 0) {
        }
        _exit(127);
}

void supervisor_result(const struct supervisor_seen *seen, struct session_result *res)
{
        memset(res, 0, sizeof *res);
        if (seen->exec_errno) {
                res->started = false;
                res->void_cause = seen->bwrap ? CAUSE_SANDBOX_UNAVAILABLE : CAUSE_SESSION_UNAVAILABLE;
                snprintf(res->detail, sizeof res->detail, "cannot execute '%s': %s", seen->program,
                         strerror(seen->exec_errno));
        } else if (!seen->bwrap) {
                res->started = true;
                if (WIFSIGNALED(seen->wait_status))
                        res->signal = WTERMSIG(seen->wait_status);
                else
                        res->exit_code = WEXITSTATUS(seen->wait_status);
        } else if (seen->exit_code >= 0) {
                /* bwrap reports a session killed by signal N as 128+N, as a shell does. */
                res->started = true;
                if (seen->exit_code > 128 && seen->exit_code < 128 + 65)
                        res->signal = seen->exit_code - 128;
                else
                        res->exit_code = seen->exit_code;
        } else if (seen->killed && seen->child_pid > 0) {
                res->started = true;
                res->signal = SIGKILL;
        } else {
                /* bwrap reports the child pid before it sets up the mounts:
                 * only an exit code shows that the session itself ran. */
                res->started = false;
                res->void_cause = CAUSE_SANDBOX_UNAVAILABLE;
                if (seen->bwrap_msg[0])
                        snprintf(res->detail, sizeof res->detail, "%s", seen->bwrap_msg);
                else if (WIFSIGNALED(seen->wait_status))
                        snprintf(res->detail, sizeof res->detail,
                                 "bwrap was killed by signal %d before the session started",
                                 WTERMSIG(seen->wait_status));
                else
                        snprintf(res->detail, sizeof res->detail,
                                 "bwrap exited with status %d before the session started",
                                 WEXITSTATUS(seen->wait_status));
        }
        if (seen->forwarded && res->started && res->signal == 0 && res->exit_code == 128 + seen->forwarded)
                res->signal = seen->forwarded;
}

/* The one place that decides which process receives a signal meant for the
 * session: unsandboxed, the session's own process group; once bwrap has
 * reported its child, the session's process group (SIGKILL: the sandbox's
 * pid 1, and the namespace dies with it); before that, the keeper, which
 * stops bwrap (SIGKILL: it kills everything under it). */
static void signal_session(struct supervisor *sv, int sig)
{
        pid_t child = (pid_t)sv->seen.child_pid;
        if (!sv->run->bwrap)
                kill(-sv->pid, sig);
        else if (child > 0)
                kill(sig == SIGKILL ? child : -child, sig);
        else
                kill(sv->pid, sig == SIGKILL ? KEEPER_KILL_ALL : sig);
}

/* Arm the kill timer to fire after `ms` (0: at once). */
static void arm_kill_timer(struct supervisor *sv, long long ms)
{
        struct itimerspec its = { .it_value = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 } };
        if (ms <= 0)
                its.it_value.tv_nsec = 1; /* zero would disarm it */
        timerfd_settime(sv->timer, 0, &its, NULL);
}

static void reap(struct supervisor *sv)
{
        if (!sv->reaped && waitpid(sv->pid, &sv->seen.wait_status, WNOHANG) == sv->pid)
                sv->reaped = true;
}

/* A signal for trialbox: forward the first, hurry the end on the second. */
static void handle_signal(struct supervisor *sv, int sig)
{
        if (sig == SIGCHLD) {
                reap(sv);
                return;
        }
        if (sv->reaped)
                return;
        if (sv->seen.forwarded) { /* asked twice: no more waiting */
                arm_kill_timer(sv, 0);
                return;
        }
        sv->seen.forwarded = sig;
        arm_kill_timer(sv, SUPERVISOR_KILL_GRACE_MS);
        signal_session(sv, sig);
}

static bool on_signalfd(struct supervisor *sv, struct source *src, short revents)
{
        struct signalfd_siginfo si;
        if (revents & POLLIN)
                while (read(src->fd, &si, sizeof si) == (ssize_t)sizeof si)
                        handle_signal(sv, (int)si.ssi_signo);
        return true;
}

/* The grace after a forwarded signal is over: end all of the session. */
static bool on_kill_timer(struct supervisor *sv, struct source *src, short revents)
{
        uint64_t expirations;
        if (!(revents & POLLIN) || read(src->fd, &expirations, sizeof expirations) != (ssize_t)sizeof expirations)
                return true;
        if (!sv->reaped && !sv->seen.killed) {
                sv->seen.killed = true;
                signal_session(sv, SIGKILL);
        }
        return true;
}

static bool on_status_fd(struct supervisor *sv, struct source *src, short revents)
{
        (void)revents;
        return read_lines(src->fd, &sv->status_lines, on_status, &sv->seen);
}

static bool on_bwrap_stderr(struct supervisor *sv, struct source *src, short revents)
{
        (void)revents;
        return read_lines(src->fd, &sv->err_lines, on_stderr, &sv->seen);
}

static bool on_watch(struct supervisor *sv, struct source *src, short revents)
{
        (void)sv;
        const struct supervisor_watch *w = src->ctx;
        if (revents & POLLIN)
                w->ready(w->ctx);
        return true;
}

static int add_source(struct supervisor *sv, int fd, enum source_life life,
                      bool (*handle)(struct supervisor *, struct source *, short), void *ctx, struct tb_error *err)
{
        if (sv->n_sources == SUPERVISOR_MAX_SOURCES)
                return tb_fail(err, -E2BIG, "the supervisor watches at most %d fds", SUPERVISOR_MAX_SOURCES);
        sv->sources[sv->n_sources++] = (struct source){ .fd = fd, .life = life, .handle = handle, .ctx = ctx };
        return 0;
}

static bool source_watched(const struct supervisor *sv, const struct source *src)
{
        return !src->ended && !(src->life == WHILE_RUNNING && sv->reaped);
}

static bool draining(const struct supervisor *sv)
{
        for (size_t i = 0; i < sv->n_sources; i++)
                if (sv->sources[i].life == TO_EOF && !sv->sources[i].ended)
                        return true;
        return false;
}

/* Block the signals the loop takes from its signalfd; make the pipes, fork
 * and exec; wait for the exec's outcome. */
static int supervisor_start(struct supervisor *sv, const struct supervisor_run *run, struct tb_error *err)
{
        int exec_p[2] = { -1, -1 };
        sigset_t mask;

        *sv = (struct supervisor){
                .run = run,
                .sfd = -1,
                .timer = -1,
                .exec_r = -1,
                .status_p = { -1, -1 },
                .err_p = { -1, -1 },
                .seen = { .bwrap = run->bwrap, .program = run->argv[0], .exit_code = -1 },
        };
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        if (sigprocmask(SIG_BLOCK, &mask, &sv->old_mask) < 0)
                return tb_fail(err, -errno, "blocking signals: %s", strerror(errno));
        sv->masked = true;
        sv->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        sv->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (sv->sfd < 0 || sv->timer < 0 || pipe2(exec_p, O_CLOEXEC) < 0 ||
            (run->bwrap && (pipe2(sv->status_p, O_CLOEXEC) < 0 || pipe2(sv->err_p, O_CLOEXEC) < 0)))
                return tb_fail(err, -errno, "setting up the supervisor: %s", strerror(errno));
        sv->exec_r = exec_p[0];

        int r = add_source(sv, sv->sfd, ALWAYS, on_signalfd, NULL, err);
        if (r == 0)
                r = add_source(sv, sv->timer, WHILE_RUNNING, on_kill_timer, NULL, err);
        if (r == 0 && run->bwrap)
                r = add_source(sv, sv->status_p[0], TO_EOF, on_status_fd, NULL, err);
        if (r == 0 && run->bwrap)
                r = add_source(sv, sv->err_p[0], TO_EOF, on_bwrap_stderr, NULL, err);
        for (size_t i = 0; r == 0 && i < run->n_watches; i++)
                r = add_source(sv, run->watches[i].fd, WHILE_RUNNING, on_watch, &run->watches[i], err);
        if (r < 0) {
                tb_closep(&exec_p[1]);
                return r;
        }

        pid_t self = getpid();
        sv->pid = fork();
        if (sv->pid < 0) {
                tb_closep(&exec_p[1]);
                return tb_fail(err, -errno, "fork: %s", strerror(errno));
        }
        if (sv->pid == 0)
                exec_child(run, &sv->old_mask, self, sv->status_p[1], sv->err_p[1], exec_p[1]);
        tb_closep(&sv->status_p[1]);
        tb_closep(&sv->err_p[1]);
        tb_closep(&exec_p[1]);

        ssize_t n;
        do
                n = read(sv->exec_r, &sv->seen.exec_errno, sizeof sv->seen.exec_errno);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof sv->seen.exec_errno)
                sv->seen.exec_errno = 0;
        return 0;
}

/* Until the session is reaped and bwrap's pipes are at their end, hand each
 * ready source to its handler. */
static int supervisor_loop(struct supervisor *sv, struct tb_error *err)
{
        while (!sv->reaped || draining(sv)) {
                struct pollfd pfd[SUPERVISOR_MAX_SOURCES];
                for (size_t i = 0; i < sv->n_sources; i++)
                        pfd[i] = (struct pollfd){ .fd = source_watched(sv, &sv->sources[i]) ? sv->sources[i].fd : -1,
                                                  .events = POLLIN };
                int k = poll(pfd, sv->n_sources, sv->reaped ? SUPERVISOR_LINGER_MS : -1);
                if (k < 0 && errno != EINTR)
                        return tb_fail(err, -errno, "poll: %s", strerror(errno));
                if (k == 0) /* the session is gone; something still holds its pipes */
                        break;
                for (size_t i = 0; k > 0 && i < sv->n_sources; i++)
                        if (pfd[i].fd >= 0 && pfd[i].revents)
                                sv->sources[i].ended = !sv->sources[i].handle(sv, &sv->sources[i], pfd[i].revents);
                reap(sv);
        }
        return 0;
}

static void supervisor_done(struct supervisor *sv)
{
        for (int i = 0; i < 2; i++) {
                tb_closep(&sv->status_p[i]);
                tb_closep(&sv->err_p[i]);
        }
        tb_closep(&sv->exec_r);
        tb_closep(&sv->timer);
        tb_closep(&sv->sfd);
        if (sv->masked)
                sigprocmask(SIG_SETMASK, &sv->old_mask, NULL);
}

int supervisor_run(const struct supervisor_run *run, struct session_result *res, struct tb_error *err)
{
        struct supervisor sv;

        memset(res, 0, sizeof *res);
        int r = supervisor_start(&sv, run, err);
        if (r < 0) {
                supervisor_done(&sv);
                return r;
        }
        r = supervisor_loop(&sv, err);
        for (size_t i = 0; i < run->n_watches; i++)
                if (run->watches[i].finish)
                        run->watches[i].finish(run->watches[i].ctx);
        if (r < 0 && !sv.reaped) {
                kill(sv.pid, SIGKILL);
                waitpid(sv.pid, &sv.seen.wait_status, 0);
        }
        if (r == 0)
                supervisor_result(&sv.seen, res);
        supervisor_done(&sv);
        return r;
}
