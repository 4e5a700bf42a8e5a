/* The floor of a Trial's start-up (bench/noop-trial.sh): the least a
 * launcher that keeps a sandbox can do. It forks a keeper, a child
 * subreaper, which forks and execs the bwrap command line it is given and
 * reaps every process that comes to it; the floor ends with bwrap's
 * status. No output folder, no record, no seccomp filter, no plugin, no
 * repository guard: what trialbox does beyond this is its own work.
 *
 *   floor [--exec | --marks] [--work US] [--early] [NAME=VALUE...] PROGRAM [ARGS...]
 *
 * The environment is exactly the NAME=VALUE words (as `env -i` takes
 * them), so the `--dry-run` line runs unchanged once its `env -i` is
 * dropped. fd 3 (the line's `--json-status-fd 3`) is /dev/null when it is
 * not open. With --exec, PROGRAM is executed in place, with no keeper:
 * the bare bwrap line, started by as small a program as can be (the same
 * one exec before bwrap's as the floor pays, without coreutils' env(1)).
 * With --marks (bench/phases.sh), the floor prints on stderr the marks a
 * build of trialbox with -DTRIALBOX_PHASES=ON prints at the same steps, in
 * the same form (core/src/base/phase.c): "main", "forked", a
 * "status_line" for each line bwrap writes on fd 3 (then a pipe the floor
 * reads, as trialbox reads its status pipe) and "loop_end" once the keeper
 * is reaped.
 *
 * Two more options model a launcher that has work of its own before the
 * sandbox may start (bench/early-start.sh): --work US spins on the CPU for
 * US microseconds, as that work would; --early (with a line whose bwrap
 * options end at `--`) forks the keeper first, which starts `bwrap --args
 * FD -- COMMAND...` at once, and sends bwrap's options through the pipe FD
 * only once the work is done: bwrap's start (the fork, its exec, its
 * loader) overlaps the launcher's work, as bwrap reads its --args before
 * it makes anything of the sandbox. libc only (and core/src/base/phase.c
 * and clock.c, which are). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h" /* now_us */
#include "base/phase.h" /* built with TRIALBOX_PHASES (bench/CMakeLists.txt) */

static bool marks;

/* A mark with --marks, written as trialbox's own are (base/phase.c). */
static void mark(const char *name)
{
        if (marks)
                TB_PHASE(name);
}

/* End as `status` says: the same signal, or the same exit code. */
static void __attribute__((noreturn)) end_like(int status)
{
        if (WIFSIGNALED(status)) {
                signal(WTERMSIG(status), SIG_DFL);
                raise(WTERMSIG(status));
        }
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

/* --work: spin for `us` microseconds. */
static void work(long us)
{
        long long end = now_us() + us;
        while (now_us() < end) {
        }
}

/* --early: bwrap's options prog[1..] up to `--` into one buffer, each
 * ended by a NUL, as --args FD reads them; *cmd set to the `--`. */
static char *early_options(char **prog, size_t *len, char ***cmd)
{
        char **dd = prog + 1;
        while (*dd && strcmp(*dd, "--") != 0)
                dd++;
        *cmd = dd;
        if (!*dd)
                return NULL;
        *len = 0;
        for (char **a = prog + 1; a < dd; a++)
                *len += strlen(*a) + 1;
        char *buf = malloc(*len ? *len : 1), *q = buf;
        for (char **a = prog + 1; buf && a < dd; a++) {
                size_t l = strlen(*a) + 1;
                memcpy(q, *a, l);
                q += l;
        }
        return buf;
}

/* The keeper: a subreaper that starts the program and reaps everything. */
static void __attribute__((noreturn)) keeper(char **argv, char **envp)
{
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                _exit(127);
        pid_t child = fork();
        if (child < 0)
                _exit(127);
        if (child == 0) {
                execve(argv[0], argv, envp);
                _exit(127);
        }
        int status = 0, st;
        pid_t p;
        while ((p = wait(&st)) > 0 || (p < 0 && errno == EINTR))
                if (p == child)
                        status = st;
        end_like(status);
}

/* After the keeper's fork: read bwrap's status lines (with --marks), reap
 * the keeper, end as it ended. */
static int wait_keeper(pid_t k, int status_r)
{
        if (status_r >= 0) {
                close(3); /* bwrap's (and the keeper's) alone: EOF once they are gone */
                char buf[4096];
                ssize_t n;
                while ((n = read(status_r, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
                        for (ssize_t j = 0; j < n; j++)
                                if (buf[j] == '\n')
                                        mark("status_line");
        }
        int st;
        while (waitpid(k, &st, 0) < 0)
                if (errno != EINTR)
                        return 127;
        mark("loop_end");
        end_like(st);
}

int main(int argc, char **argv)
{
        int i = 1;
        bool exec_only = i < argc && strcmp(argv[i], "--exec") == 0;
        marks = i < argc && strcmp(argv[i], "--marks") == 0;
        if (exec_only || marks)
                i++;
        mark("main");
        long work_us = 0;
        bool early = false;
        for (;;) {
                if (i + 1 < argc && strcmp(argv[i], "--work") == 0) {
                        work_us = strtol(argv[i + 1], NULL, 10);
                        i += 2;
                } else if (i < argc && strcmp(argv[i], "--early") == 0) {
                        early = true;
                        i++;
                } else {
                        break;
                }
        }
        char **envp = argv + i;
        while (i < argc && strchr(argv[i], '=') && argv[i][0] != '/')
                i++;
        if (i == argc) {
                fprintf(stderr, "usage: floor [--exec | --marks] [--work US] [--early] [NAME=VALUE...] PROGRAM [ARGS...]\n");
                return 2;
        }
        char **prog = argv + i;
        /* The environment ends where the program starts. */
        char **env = calloc((size_t)(prog - envp) + 1, sizeof *env);
        if (!env)
                return 127;
        memcpy(env, envp, (size_t)(prog - envp) * sizeof *env);
        /* With marks, fd 3 is a pipe whose lines are read below. */
        int status_r = -1;
        if (marks) {
                /* The read end above fd 3 (pipe() may give it fd 3 itself). */
                int p[2];
                if (pipe(p) < 0 || (status_r = fcntl(p[0], F_DUPFD_CLOEXEC, 4)) < 0)
                        return 127;
                close(p[0]);
                if (p[1] != 3 && (dup2(p[1], 3) < 0 || close(p[1]) < 0))
                        return 127;
        } else if (fcntl(3, F_GETFD) < 0) {
                int fd = open("/dev/null", O_WRONLY);
                if (fd >= 0 && fd != 3) {
                        dup2(fd, 3);
                        close(fd);
                }
        }
        if (exec_only) {
                execve(prog[0], prog, env);
                perror(prog[0]);
                return 127;
        }
        if (!early) {
                work(work_us);
                pid_t k = fork();
                if (k < 0)
                        return 127;
                if (k == 0)
                        keeper(prog, env);
                mark("forked");
                return wait_keeper(k, status_r);
        }
        /* --early: bwrap reads its options from a pipe (its read end, not
         * close-on-exec, above fd 3) once the work is done. */
        size_t len;
        char **cmd;
        char *options = early_options(prog, &len, &cmd);
        if (!options) {
                fprintf(stderr, "floor: --early needs a line whose options end at --\n");
                return 127;
        }
        int p[2];
        if (pipe(p) < 0) {
                perror("floor: pipe");
                return 127;
        }
        int args_r = fcntl(p[0], F_DUPFD, 4), args_w = fcntl(p[1], F_DUPFD_CLOEXEC, 4);
        close(p[0]);
        close(p[1]);
        if (args_r < 0 || args_w < 0)
                return 127;
        char fd_word[16];
        snprintf(fd_word, sizeof fd_word, "%d", args_r);
        size_t n_cmd = 0;
        while (cmd[n_cmd])
                n_cmd++;
        char **bwrap_argv = calloc(n_cmd + 4, sizeof *bwrap_argv);
        if (!bwrap_argv)
                return 127;
        bwrap_argv[0] = prog[0];
        bwrap_argv[1] = "--args";
        bwrap_argv[2] = fd_word;
        memcpy(bwrap_argv + 3, cmd, n_cmd * sizeof *cmd);
        pid_t k = fork();
        if (k < 0)
                return 127;
        if (k == 0) {
                close(args_w); /* else bwrap never reads the end of its options */
                keeper(bwrap_argv, env);
        }
        mark("forked");
        close(args_r);
        signal(SIGPIPE, SIG_IGN); /* here only: the keeper and bwrap keep the default */
        work(work_us);
        for (size_t off = 0; off < len;) {
                ssize_t n = write(args_w, options + off, len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        break; /* bwrap is gone: its status says why */
                off += (size_t)n;
        }
        close(args_w);
        return wait_keeper(k, status_r);
}
