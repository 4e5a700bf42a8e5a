/* The floor of a Trial's start-up (bench/noop-trial.sh): the least a
 * launcher that keeps a sandbox can do. It forks a keeper, a child
 * subreaper, which forks and execs the bwrap command line it is given and
 * reaps every process that comes to it; the floor ends with bwrap's
 * status. No output folder, no record, no seccomp filter, no plugin, no
 * repository guard: what trialbox does beyond this is its own work.
 *
 *   floor [--exec | --marks] [NAME=VALUE...] PROGRAM [ARGS...]
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
 * is reaped. libc only (and core/src/base/phase.c, which is). */
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

int main(int argc, char **argv)
{
        int i = 1;
        bool exec_only = i < argc && strcmp(argv[i], "--exec") == 0;
        marks = i < argc && strcmp(argv[i], "--marks") == 0;
        if (exec_only || marks)
                i++;
        mark("main");
        char **envp = argv + i;
        while (i < argc && strchr(argv[i], '=') && argv[i][0] != '/')
                i++;
        if (i == argc) {
                fprintf(stderr, "usage: floor [--exec] [NAME=VALUE...] PROGRAM [ARGS...]\n");
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
        pid_t k = fork();
        if (k < 0)
                return 127;
        if (k == 0)
                keeper(prog, env);
        mark("forked");
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
