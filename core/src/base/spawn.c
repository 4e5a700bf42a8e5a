#define _GNU_SOURCE
#include "base/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/io.h"
#include "base/macro.h"

void spawn_reset_signals(const sigset_t *mask)
{
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        sigemptyset(&dfl.sa_mask);
        for (int sig = 1; sig < NSIG; sig++)
                (void)sigaction(sig, &dfl, NULL); /* SIGKILL, SIGSTOP and libc's own refuse: fine */
        sigset_t empty;
        sigemptyset(&empty);
        sigprocmask(SIG_SETMASK, mask ? mask : &empty, NULL);
}

/* ---- in the child ---- */

/* Where the child's fd `target` comes from: an fd of trialbox's, or -1 to
 * leave it as it is. `null` is /dev/null, open in the child. */
static int io_source(const struct spawn *s, int target, int null, const int pipe_w[3])
{
        enum spawn_io io = target == 0 ? s->std_in : target == 1 ? s->std_out : s->std_err;
        int fd = target == 0 ? s->std_in_fd : target == 1 ? s->std_out_fd : s->std_err_fd;
        switch (io) {
        case SPAWN_DEV_NULL:
                return null;
        case SPAWN_FD:
                return fd;
        case SPAWN_CAPTURE:
                return pipe_w[target];
        case SPAWN_TO_STDOUT:
                return s->std_out == SPAWN_INHERIT ? STDOUT_FILENO : io_source(s, 1, null, pipe_w);
        case SPAWN_INHERIT:
        default:
                return -1;
        }
}

/* Move every source to its target, whatever numbers they had (one may sit
 * where another must go): first all above them, then into place. dup2
 * leaves the targets without close-on-exec. */
static int place_fds(int *src, const int *target, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (src[i] >= 0 && (src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 64)) < 0)
                        return -1;
        for (size_t i = 0; i < n; i++)
                if (src[i] >= 0 && dup2(src[i], target[i]) < 0)
                        return -1;
        return 0;
}

static int child_fds(const struct spawn *s, const int pipe_w[3])
{
        int null = -1;
        if (s->std_in == SPAWN_DEV_NULL || s->std_out == SPAWN_DEV_NULL || s->std_err == SPAWN_DEV_NULL)
                if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
                        return -1;
        enum { MAX = 3 + 64 };
        int src[MAX], target[MAX];
        size_t n = 0;
        for (int t = 0; t < 3; t++) {
                src[n] = io_source(s, t, null, pipe_w);
                target[n++] = t;
        }
        for (size_t i = 0; i < s->n_fds && n < MAX; i++) {
                src[n] = s->fds[i];
                target[n++] = s->fd_targets[i];
        }
        if (s->n_fds > MAX - 3) {
                errno = EMFILE;
                return -1;
        }
        return place_fds(src, target, n);
}

static void __attribute__((noreturn)) child(const struct spawn *s, const int pipe_w[3], int exec_err_w)
{
        spawn_reset_signals(s->sigmask);
        if (exec_err_w >= 0) /* out of the way of the targets */
                exec_err_w = fcntl(exec_err_w, F_DUPFD_CLOEXEC, 64);
        if ((s->flags & SPAWN_NEW_PGROUP) && setpgid(0, 0) < 0)
                goto fail;
        if (child_fds(s, pipe_w) < 0)
                goto fail;
        if (s->cwd && chdir(s->cwd) < 0)
                goto fail;
        if (s->child_fn) {
                int code = s->child_fn(s->ctx);
                if (!s->argv || code != 0)
                        _exit(code & 0xff);
        }
        char *const *envp = s->envp ? s->envp : environ;
        if (s->flags & SPAWN_EXEC_FD)
                execveat(s->exec_fd, "", s->argv, envp, AT_EMPTY_PATH);
        else if (s->path || strchr(s->argv[0], '/'))
                execve(s->path ? s->path : s->argv[0], s->argv, envp);
        else
                execvpe(s->argv[0], s->argv, envp);
fail:;
        int e = errno;
        if (exec_err_w >= 0)
                (void)loop_write(exec_err_w, &e, sizeof e);
        else
                dprintf(STDERR_FILENO, "trialbox: cannot run '%s': %s\n", s->argv ? s->argv[0] : "a child",
                        strerror(e));
        _exit(127);
}

/* ---- in trialbox ---- */

static void close_all(int *fds, size_t n)
{
        for (size_t i = 0; i < n; i++)
                tb_closep(&fds[i]);
}

int spawn_start(struct spawn *s, struct tb_error *err)
{
        const char *name = s->argv ? s->argv[0] : "a child";
        int pipe_w[3] = { -1, -1, -1 }, exec_err[2] = { -1, -1 };
        s->pid = -1;
        s->started = true;
        s->out = s->err = (struct spawn_capture){ 0 };
        for (int t = 0; t < 3; t++)
                s->pipes[t] = -1;
        for (int t = 1; t < 3; t++) {
                enum spawn_io io = t == 1 ? s->std_out : s->std_err;
                int p[2];
                if (io != SPAWN_CAPTURE)
                        continue;
                if (pipe2(p, O_CLOEXEC) < 0) {
                        int e = -errno;
                        close_all(pipe_w, 3);
                        close_all(s->pipes, 3);
                        return tb_fail(err, e, "running '%s': pipe: %s", name, strerror(-e));
                }
                s->pipes[t] = p[0];
                pipe_w[t] = p[1];
        }
        if (!s->child_fn && pipe2(exec_err, O_CLOEXEC) < 0) {
                int e = -errno;
                close_all(pipe_w, 3);
                close_all(s->pipes, 3);
                return tb_fail(err, e, "running '%s': pipe: %s", name, strerror(-e));
        }
        s->pid = fork();
        if (s->pid == 0)
                child(s, pipe_w, exec_err[1]);
        int e = -errno;
        close_all(pipe_w, 3);
        tb_closep(&exec_err[1]);
        if (s->pid < 0) {
                tb_closep(&exec_err[0]);
                close_all(s->pipes, 3);
                return tb_fail(err, e, "running '%s': fork: %s", name, strerror(-e));
        }
        if (s->flags & SPAWN_NEW_PGROUP)
                setpgid(s->pid, s->pid); /* as the child does: whichever runs first */
        if (exec_err[0] < 0)
                return 0;
        int child_errno = 0;
        ssize_t n = read_retry(exec_err[0], &child_errno, sizeof child_errno);
        tb_closep(&exec_err[0]);
        if (n != (ssize_t)sizeof child_errno)
                return 0; /* exec'd */
        close_all(s->pipes, 3);
        (void)wait_child(s->pid, &s->wait_status, 0);
        s->pid = -1;
        return tb_fail(err, -child_errno, "cannot run '%s': %s", name, strerror(child_errno));
}

/* Read every capture to its end, keeping capture_max bytes of each. */
static void read_captures(struct spawn *s)
{
        size_t max = s->capture_max ? s->capture_max : SPAWN_CAPTURE_MAX;
        struct spawn_capture *cap[3] = { NULL, &s->out, &s->err };
        struct pollfd p[3];
        for (int t = 0; t < 3; t++)
                p[t] = (struct pollfd){ .fd = s->pipes[t], .events = POLLIN };
        while (p[1].fd >= 0 || p[2].fd >= 0) {
                if (poll(p, 3, -1) < 0 && errno != EINTR)
                        break;
                for (int t = 1; t < 3; t++) {
                        if (p[t].fd < 0 || !p[t].revents)
                                continue;
                        char buf[4096];
                        ssize_t n = read_retry(p[t].fd, buf, sizeof buf);
                        if (n <= 0) {
                                tb_closep(&s->pipes[t]);
                                p[t].fd = -1;
                                continue;
                        }
                        size_t take = (size_t)n;
                        if (take > max - cap[t]->len) {
                                take = max - cap[t]->len;
                                cap[t]->truncated = true;
                        }
                        cap[t]->buf = xrealloc(cap[t]->buf, cap[t]->len + take + 1);
                        memcpy(cap[t]->buf + cap[t]->len, buf, take);
                        cap[t]->len += take;
                        cap[t]->buf[cap[t]->len] = '\0';
                }
        }
        for (int t = 1; t < 3; t++)
                if (!cap[t]->buf)
                        cap[t]->buf = xstrdup("");
}

int spawn_wait(struct spawn *s, struct tb_error *err)
{
        const char *name = s->argv ? s->argv[0] : "a child";
        read_captures(s);
        close_all(s->pipes, 3);
        if (s->pid <= 0)
                return tb_fail(err, -ECHILD, "waiting for '%s': it was not started", name);
        pid_t r = wait_child(s->pid, &s->wait_status, 0);
        if (r < 0) /* a SIGCHLD handler of the caller's reaped it: say so rather than guess */
                return tb_fail(err, r, "waiting for '%s': %s", name, strerror((int)-r));
        s->pid = -1;
        s->status = exit_status_of(s->wait_status);
        return 0;
}

int spawn_run(struct spawn *s, struct tb_error *err)
{
        int r = spawn_start(s, err);
        return r < 0 ? r : spawn_wait(s, err);
}

void spawn_done(struct spawn *s)
{
        free(s->out.buf);
        free(s->err.buf);
        s->out = s->err = (struct spawn_capture){ 0 };
        if (s->started)
                close_all(s->pipes, 3);
}
