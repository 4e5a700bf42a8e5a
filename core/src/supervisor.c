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
#include <sys/signalfd.h>
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

struct state {
        long child_pid;     /* the sandbox's first process (host pid), or 0 */
        int exit_code;      /* from bwrap's status, or -1 */
        char bwrap_msg[512];/* the last "bwrap: ..." line */
};

static void on_status(char *l, void *ud)
{
        struct state *s = ud;
        if (*l)
                supervisor_parse_status(l, &s->child_pid, &s->exit_code);
}

static void on_stderr(char *l, void *ud)
{
        struct state *s = ud;
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
                snprintf(s->bwrap_msg, sizeof s->bwrap_msg, "%s", l);
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

int supervisor_run(const struct supervisor_run *run, struct session_result *res, struct tb_error *err)
{
        struct state s = { .exit_code = -1 };
        struct line_reader status_lr = { 0 }, err_lr = { 0 };
        int status_p[2] = { -1, -1 }, err_p[2] = { -1, -1 }, exec_p[2] = { -1, -1 };
        _cleanup_close_ int sfd = -1;
        sigset_t mask, old;
        int r = 0;

        memset(res, 0, sizeof *res);
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        if (sigprocmask(SIG_BLOCK, &mask, &old) < 0)
                return tb_fail(err, -errno, "blocking signals: %s", strerror(errno));
        sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0 || pipe2(exec_p, O_CLOEXEC) < 0 ||
            (run->bwrap && (pipe2(status_p, O_CLOEXEC) < 0 || pipe2(err_p, O_CLOEXEC) < 0))) {
                r = tb_fail(err, -errno, "setting up the supervisor: %s", strerror(errno));
                goto out;
        }

        pid_t self = getpid();
        pid_t pid = fork();
        if (pid < 0) {
                r = tb_fail(err, -errno, "fork: %s", strerror(errno));
                goto out;
        }
        if (pid == 0)
                exec_child(run, &old, self, status_p[1], err_p[1], exec_p[1]);

        tb_closep(&status_p[1]);
        tb_closep(&err_p[1]);
        tb_closep(&exec_p[1]);

        int exec_errno = 0;
        ssize_t n;
        do
                n = read(exec_p[0], &exec_errno, sizeof exec_errno);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof exec_errno)
                exec_errno = 0;

        int forwarded = 0, wstatus = 0;
        bool reaped = false, killed = false;
        /* bwrap's status and stderr pipes, read until their end. */
        bool status_open = run->bwrap;
        bool err_open = status_open;
        long long kill_at = -1;

        while (!reaped || status_open || err_open) {
                struct pollfd pfd[3 + 16];
                size_t np = 0;
                pfd[np++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
                pfd[np++] = (struct pollfd){ .fd = status_open ? status_p[0] : -1, .events = POLLIN };
                pfd[np++] = (struct pollfd){ .fd = err_open ? err_p[0] : -1, .events = POLLIN };
                for (size_t i = 0; i < run->n_watches && np < TB_ARRAY_SIZE(pfd); i++)
                        pfd[np++] = (struct pollfd){ .fd = reaped ? -1 : run->watches[i].fd, .events = POLLIN };

                int timeout = -1;
                if (kill_at >= 0 && !reaped) {
                        long long left = kill_at - now_ms();
                        timeout = left > 0 ? (int)left : 0;
                }
                int k = poll(pfd, np, reaped ? 100 : timeout);
                if (k < 0 && errno != EINTR) {
                        r = tb_fail(err, -errno, "poll: %s", strerror(errno));
                        break;
                }
                if (k == 0 && reaped) /* the session is gone; something still holds its pipes */
                        break;

                if (kill_at >= 0 && !reaped && now_ms() >= kill_at && !killed) {
                        /* The session ignored the forwarded signal: end all of it. */
                        killed = true;
                        if (!run->bwrap)
                                kill(-pid, SIGKILL);
                        else if (s.child_pid > 0)
                                kill((pid_t)s.child_pid, SIGKILL); /* its pid 1: the namespace dies with it */
                        else
                                kill(pid, KEEPER_KILL_ALL);
                }
                if (pfd[0].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                                int sig = (int)si.ssi_signo;
                                if (sig == SIGCHLD) {
                                        if (!reaped && waitpid(pid, &wstatus, WNOHANG) == pid)
                                                reaped = true;
                                        continue;
                                }
                                if (reaped)
                                        continue;
                                if (forwarded) { /* asked twice: no more waiting */
                                        kill_at = now_ms();
                                        continue;
                                }
                                forwarded = sig;
                                kill_at = now_ms() + SUPERVISOR_KILL_GRACE_MS;
                                if (!run->bwrap)
                                        kill(-pid, sig);
                                else if (s.child_pid > 0)
                                        kill(-(pid_t)s.child_pid, sig); /* the session's process group */
                                else
                                        kill(pid, sig); /* still setting up: the keeper stops bwrap */
                        }
                }
                if (status_open && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)))
                        status_open = read_lines(status_p[0], &status_lr, on_status, &s);
                if (err_open && (pfd[2].revents & (POLLIN | POLLHUP | POLLERR)))
                        err_open = read_lines(err_p[0], &err_lr, on_stderr, &s);
                for (size_t i = 3; i < np; i++)
                        if (pfd[i].revents & POLLIN)
                                run->watches[i - 3].ready(run->watches[i - 3].ctx);
                if (!reaped && waitpid(pid, &wstatus, WNOHANG) == pid)
                        reaped = true;
        }
        for (size_t i = 0; i < run->n_watches; i++)
                if (run->watches[i].finish)
                        run->watches[i].finish(run->watches[i].ctx);
        if (r < 0) {
                if (!reaped) {
                        kill(pid, SIGKILL);
                        waitpid(pid, &wstatus, 0);
                }
                goto out;
        }

        if (exec_errno) {
                res->started = false;
                res->void_cause = run->bwrap ? CAUSE_SANDBOX_UNAVAILABLE : CAUSE_SESSION_UNAVAILABLE;
                snprintf(res->detail, sizeof res->detail, "cannot execute '%s': %s", run->argv[0],
                         strerror(exec_errno));
        } else if (!run->bwrap) {
                res->started = true;
                if (WIFSIGNALED(wstatus))
                        res->signal = WTERMSIG(wstatus);
                else
                        res->exit_code = WEXITSTATUS(wstatus);
        } else if (s.exit_code >= 0) {
                /* bwrap reports a session killed by signal N as 128+N, as a shell does. */
                res->started = true;
                if (s.exit_code > 128 && s.exit_code < 128 + 65)
                        res->signal = s.exit_code - 128;
                else
                        res->exit_code = s.exit_code;
        } else if (killed && s.child_pid > 0) {
                res->started = true;
                res->signal = SIGKILL;
        } else {
                /* bwrap reports the child pid before it sets up the mounts:
                 * only an exit code shows that the session itself ran. */
                res->started = false;
                res->void_cause = CAUSE_SANDBOX_UNAVAILABLE;
                if (s.bwrap_msg[0])
                        snprintf(res->detail, sizeof res->detail, "%s", s.bwrap_msg);
                else if (WIFSIGNALED(wstatus))
                        snprintf(res->detail, sizeof res->detail,
                                 "bwrap was killed by signal %d before the session started", WTERMSIG(wstatus));
                else
                        snprintf(res->detail, sizeof res->detail,
                                 "bwrap exited with status %d before the session started", WEXITSTATUS(wstatus));
        }
        if (forwarded && res->started && res->signal == 0 && res->exit_code == 128 + forwarded)
                res->signal = forwarded;
out:
        for (int i = 0; i < 2; i++) {
                tb_closep(&status_p[i]);
                tb_closep(&err_p[i]);
                tb_closep(&exec_p[i]);
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        return r;
}
