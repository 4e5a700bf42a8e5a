/* The time a command takes from its spawn to its reaping, for bench/phases.sh:
 * what comes before main() (the exec, the loader) and after its return (the
 * exit) is not in the command's own marks.
 *
 *   stamp FILE PROGRAM [ARGS...]
 *
 * Runs PROGRAM with stdin and stdout on /dev/null and stderr on FILE (made
 * or truncated, 0600), its environment and other fds as stamp's own; once
 * it is reaped, appends to FILE the marks "spawn" (taken just before the
 * fork) and "reaped" (just after the wait) in the form
 * core/src/base/phase.c writes, with pid 0: "PHASE 0 spawn µs". Exits with
 * PROGRAM's status (128 + the signal when it was killed). libc only (and
 * core/src/base/clock.c, which is). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h" /* now_us (bench/CMakeLists.txt compiles it in) */

int main(int argc, char **argv)
{
        if (argc < 3) {
                fprintf(stderr, "usage: stamp FILE PROGRAM [ARGS...]\n");
                return 2;
        }
        int out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (out < 0 || null < 0) {
                perror(argv[1]);
                return 2;
        }
        long long spawn = now_us();
        pid_t pid = fork();
        if (pid < 0) {
                perror("fork");
                return 2;
        }
        if (pid == 0) {
                if (dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(out, 2) < 0)
                        _exit(127);
                execv(argv[2], argv + 2);
                _exit(127);
        }
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return 2;
        long long reaped = now_us();
        dprintf(out, "PHASE 0 spawn %lld\nPHASE 0 reaped %lld\n", spawn, reaped);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
