/* Driver for bench/filter.sh: what the session's seccomp filter costs, laid
 * out as trialbox builds it (a binary tree of the syscall numbers) and as
 * the same rules along a chain of compares (libseccomp's default layout),
 * beside no filter at all:
 *
 *   filter-bench RUNS CALLS
 *
 *  - load: a child forked, the filter loaded in it as bwrap loads it
 *    (PR_SET_NO_NEW_PRIVS, then seccomp(SECCOMP_SET_MODE_FILTER)), the child
 *    gone: from the fork to the reap, the three kinds alternating, RUNS of
 *    each; the median. When the kernel loads a filter it also runs it once
 *    for every syscall number of each architecture (its cache of the calls
 *    always allowed), so the layout counts here;
 *  - calls: CALLS calls in a child under each filter: openat of /dev/null
 *    with its close (openat's rule looks at its flags and mode: the kernel
 *    runs the filter on every one) and getppid (allowed whatever its
 *    arguments: the kernel's cache answers); the fastest of 5 passes, in ns
 *    per call.
 *
 * Prints "key value" lines. Built with -DTRIALBOX_BENCH=ON
 * (bench/CMakeLists.txt), linked with the core's sandbox/ library. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/confine_rules.h"

enum kind { NONE, TREE, CHAIN, KINDS };
static const char *const kind_name[KINDS] = { "none", "tree", "chain" };

struct prog {
        unsigned char *bytes;
        size_t len;
};

static long long now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
        long long x = *(const long long *)a, y = *(const long long *)b;
        return (x > y) - (x < y);
}

/* The filter for a session without nested user namespaces, in `layout`. */
static int compile(enum confine_layout layout, struct prog *p)
{
        const char *step = "";
        int fd = memfd_create("filter-bench", MFD_CLOEXEC);
        if (fd < 0 || confine_rules_export(false, layout, fd, &step) < 0) {
                fprintf(stderr, "filter-bench: compiling the filter: %s\n", step);
                return -1;
        }
        off_t len = lseek(fd, 0, SEEK_END);
        p->bytes = malloc((size_t)len);
        if (!p->bytes || pread(fd, p->bytes, (size_t)len, 0) != len) {
                close(fd);
                return -1;
        }
        p->len = (size_t)len;
        close(fd);
        return 0;
}

static int load(const struct prog *p)
{
        if (!p->len)
                return 0;
        struct sock_fprog f = { .len = (unsigned short)(p->len / 8), .filter = (struct sock_filter *)p->bytes };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &f) < 0)
                return -1;
        return 0;
}

/* One fork, load, exit and reap: its wall time in ns, or -1. */
static long long load_once(const struct prog *p)
{
        long long t0 = now_ns();
        pid_t pid = fork();
        if (pid == 0)
                _exit(load(p) < 0 ? 1 : 0);
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                return -1;
        return now_ns() - t0;
}

/* In a child under `p`: the fastest of 5 passes of `calls` openat+close
 * and getppid calls, in ns per call, written to `out`. */
static int calls_under(const struct prog *p, long calls, double out[2])
{
        int pipefd[2];
        if (pipe(pipefd) < 0)
                return -1;
        pid_t pid = fork();
        if (pid == 0) {
                close(pipefd[0]);
                double best[2] = { 1e18, 1e18 };
                if (load(p) < 0)
                        _exit(1);
                for (int pass = 0; pass < 5; pass++) {
                        long long t0 = now_ns();
                        for (long i = 0; i < calls; i++)
                                close(openat(AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC));
                        long long t1 = now_ns();
                        for (long i = 0; i < calls; i++)
                                syscall(SYS_getppid);
                        long long t2 = now_ns();
                        if ((double)(t1 - t0) < best[0])
                                best[0] = (double)(t1 - t0);
                        if ((double)(t2 - t1) < best[1])
                                best[1] = (double)(t2 - t1);
                }
                best[0] /= (double)calls;
                best[1] /= (double)calls;
                _exit(write(pipefd[1], best, sizeof best) == (ssize_t)sizeof best ? 0 : 1);
        }
        close(pipefd[1]);
        ssize_t n = pid < 0 ? -1 : read(pipefd[0], out, 2 * sizeof *out);
        close(pipefd[0]);
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
            n != (ssize_t)(2 * sizeof *out))
                return -1;
        return 0;
}

int main(int argc, char **argv)
{
        if (argc != 3 || atoi(argv[1]) < 1 || atol(argv[2]) < 1) {
                fprintf(stderr, "usage: filter-bench RUNS CALLS\n");
                return 2;
        }
        const int runs = atoi(argv[1]);
        const long calls = atol(argv[2]);
        struct prog progs[KINDS] = { { 0 } };
        if (compile(CONFINE_TREE, &progs[TREE]) < 0 || compile(CONFINE_CHAIN, &progs[CHAIN]) < 0)
                return 1;
        long long *t[KINDS];
        for (int k = 0; k < KINDS; k++)
                if (!(t[k] = calloc((size_t)runs, sizeof *t[k])))
                        return 1;
        for (int i = 0; i < runs; i++)
                for (int k = 0; k < KINDS; k++)
                        if ((t[k][i] = load_once(&progs[k])) < 0) {
                                fprintf(stderr, "filter-bench: a child could not load the %s filter\n", kind_name[k]);
                                return 1;
                        }
        printf("instructions_tree %zu\ninstructions_chain %zu\n", progs[TREE].len / 8, progs[CHAIN].len / 8);
        for (int k = 0; k < KINDS; k++) {
                qsort(t[k], (size_t)runs, sizeof *t[k], by_value);
                printf("load_%s_us %.1f\n", kind_name[k], (double)t[k][runs / 2] / 1000.0);
        }
        for (int k = 0; k < KINDS; k++) {
                double ns[2];
                if (calls_under(&progs[k], calls, ns) < 0) {
                        fprintf(stderr, "filter-bench: the calls under the %s filter failed\n", kind_name[k]);
                        return 1;
                }
                printf("openat_%s_ns %.0f\ngetppid_%s_ns %.0f\n", kind_name[k], ns[0], kind_name[k], ns[1]);
        }
        for (int k = 0; k < KINDS; k++) {
                free(t[k]);
                free(progs[k].bytes);
        }
        return 0;
}
