/* The one way to start a child (base/spawn.h): captures, statuses, fds,
 * signals, process groups, exec by fd, a function in the child. And the
 * child that shares this memory (base/shared_child.h): the keeper's way. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/shared_child.h"
#include "base/spawn.h"
#include "tb_test.h"

START_TEST(stdout_and_stderr_are_captured_apart_with_the_exit_status)
{
        char *argv[] = { "/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL };
        struct spawn s = { .argv = argv, .std_in = SPAWN_DEV_NULL, .std_out = SPAWN_CAPTURE, .std_err = SPAWN_CAPTURE };
        struct tb_error err = { 0 };
        ck_assert_int_eq(spawn_run(&s, &err), 0);
        ck_assert_str_eq(s.out.buf, "out\n");
        ck_assert_str_eq(s.err.buf, "err\n");
        ck_assert_int_eq(s.status, 3);
        ck_assert(!s.out.truncated);
        spawn_done(&s);
}
END_TEST

START_TEST(stderr_can_go_where_stdout_goes)
{
        char *argv[] = { "/bin/sh", "-c", "echo one; echo two >&2", NULL };
        struct spawn s = { .argv = argv, .std_out = SPAWN_CAPTURE, .std_err = SPAWN_TO_STDOUT };
        ck_assert_int_eq(spawn_run(&s, NULL), 0);
        ck_assert_str_eq(s.out.buf, "one\ntwo\n");
        ck_assert_ptr_null(s.err.buf == NULL || *s.err.buf == '\0' ? NULL : s.err.buf);
        spawn_done(&s);
}
END_TEST

START_TEST(a_child_killed_by_a_signal_has_status_128_plus_the_signal)
{
        char *argv[] = { "/bin/sh", "-c", "kill -TERM $$", NULL };
        struct spawn s = { .argv = argv };
        ck_assert_int_eq(spawn_run(&s, NULL), 0);
        ck_assert_int_eq(s.status, 128 + SIGTERM);
        spawn_done(&s);
}
END_TEST

START_TEST(a_capture_keeps_its_bound_and_reads_the_rest_so_the_child_ends)
{
        char *argv[] = { "/bin/sh", "-c", "head -c 1000000 /dev/zero; echo done >&2", NULL };
        struct spawn s = { .argv = argv, .std_out = SPAWN_CAPTURE, .std_err = SPAWN_CAPTURE, .capture_max = 100 };
        ck_assert_int_eq(spawn_run(&s, NULL), 0);
        ck_assert_uint_eq(s.out.len, 100);
        ck_assert(s.out.truncated);
        ck_assert_str_eq(s.err.buf, "done\n");
        ck_assert_int_eq(s.status, 0);
        spawn_done(&s);
}
END_TEST

START_TEST(a_program_that_cannot_be_run_is_an_error_of_spawn_start)
{
        char *argv[] = { "/nonexistent/program", NULL };
        struct spawn s = { .argv = argv, .std_out = SPAWN_CAPTURE };
        struct tb_error err = { 0 };
        ck_assert_int_eq(spawn_run(&s, &err), -ENOENT);
        ck_assert_msg(strstr(err.msg, "cannot run '/nonexistent/program'"), "%s", err.msg);
        spawn_done(&s);
        char *name[] = { "no-such-program-anywhere", NULL };
        struct spawn p = { .argv = name };
        ck_assert_int_eq(spawn_run(&p, NULL), -ENOENT);
        spawn_done(&p);
}
END_TEST

static int blocks_sigterm_only(void *ctx)
{
        (void)ctx;
        sigset_t now;
        sigprocmask(SIG_SETMASK, NULL, &now);
        struct sigaction sa;
        sigaction(SIGINT, NULL, &sa);
        return sigismember(&now, SIGTERM) && !sigismember(&now, SIGINT) && sa.sa_handler == SIG_DFL ? 0 : 1;
}

/* A background shell starts trialbox with SIGINT and SIGQUIT ignored; a
 * caller may block signals it reads from a signalfd: neither reaches a child. */
START_TEST(a_child_gets_default_dispositions_and_an_empty_mask)
{
        signal(SIGINT, SIG_IGN);
        signal(SIGQUIT, SIG_IGN);
        sigset_t block;
        sigemptyset(&block);
        sigaddset(&block, SIGTERM);
        sigprocmask(SIG_BLOCK, &block, NULL);
        char *argv[] = { "/bin/sh", "-c", "grep -E '^Sig(Ign|Blk)' /proc/self/status", NULL };
        struct spawn s = { .argv = argv, .std_out = SPAWN_CAPTURE };
        ck_assert_int_eq(spawn_run(&s, NULL), 0);
        /* sh itself ignores nothing it was not given ignored (it is not interactive). */
        ck_assert_msg(has_line(s.out.buf, "SigIgn:\t0000000000000000"), "%s", s.out.buf);
        ck_assert_msg(has_line(s.out.buf, "SigBlk:\t0000000000000000"), "%s", s.out.buf);
        spawn_done(&s);
        /* Unless the caller gives a mask (seen in the child itself: a shell may change its own). */
        struct spawn m = { .child_fn = blocks_sigterm_only, .sigmask = &block };
        ck_assert_int_eq(spawn_run(&m, NULL), 0);
        ck_assert_int_eq(m.status, 0);
        spawn_done(&m);
}
END_TEST

START_TEST(extra_fds_and_stdin_are_placed_and_the_cwd_set)
{
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        ck_assert_int_eq(write(p[1], "in\n", 3), 3);
        close(p[1]);
        int extra[2];
        ck_assert_int_eq(pipe2(extra, O_CLOEXEC), 0);
        char *argv[] = { "/bin/sh", "-c", "read x; echo \"$x $(pwd)\"; echo five >&5", NULL };
        const int fds[] = { extra[1] }, targets[] = { 5 };
        struct spawn s = { .argv = argv, .std_in = SPAWN_FD, .std_in_fd = p[0], .std_out = SPAWN_CAPTURE,
                           .fds = fds, .fd_targets = targets, .n_fds = 1, .cwd = "/" };
        ck_assert_int_eq(spawn_run(&s, NULL), 0);
        ck_assert_str_eq(s.out.buf, "in /\n");
        close(extra[1]);
        char buf[16] = { 0 };
        ck_assert_int_eq(read(extra[0], buf, sizeof buf - 1), 5);
        ck_assert_str_eq(buf, "five\n");
        close(extra[0]);
        close(p[0]);
        spawn_done(&s);
}
END_TEST

static int in_own_group(void *ctx)
{
        (void)ctx;
        return getpgrp() == getpid() ? 7 : 8;
}

START_TEST(a_function_runs_in_the_child_and_its_return_is_the_status)
{
        struct spawn s = { .child_fn = in_own_group, .flags = SPAWN_NEW_PGROUP };
        ck_assert_int_eq(spawn_run(&s, NULL), 0);
        ck_assert_int_eq(s.status, 7);
        spawn_done(&s);
        struct spawn t = { .child_fn = in_own_group };
        ck_assert_int_eq(spawn_run(&t, NULL), 0);
        ck_assert_int_eq(t.status, 8);
        spawn_done(&t);
}
END_TEST

START_TEST(a_program_can_be_run_by_its_fd)
{
        _cleanup_close_ int fd = open("/bin/sh", O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        char *argv[] = { "sh", "-c", "echo by fd", NULL };
        struct spawn s = { .argv = argv, .flags = SPAWN_EXEC_FD, .exec_fd = fd, .std_out = SPAWN_CAPTURE };
        ck_assert_int_eq(spawn_run(&s, NULL), 0);
        ck_assert_str_eq(s.out.buf, "by fd\n");
        spawn_done(&s);
}
END_TEST

/* What a shared child did, in the memory it shares with the test. */
struct shared_seen {
        int go;          /* set by the test once its errno is set */
        pid_t ppid;      /* the child's getppid() */
        int child_errno; /* its errno after a call that failed */
        int done;
};

static int in_shared_memory(void *arg)
{
        struct shared_seen *s = arg;
        while (!__atomic_load_n(&s->go, __ATOMIC_ACQUIRE))
                sched_yield();
        s->ppid = getppid();
        errno = 0;
        (void)close(-1);
        s->child_errno = errno;
        __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
        return 5;
}

START_TEST(a_shared_child_writes_this_memory_but_not_this_threads_errno)
{
        if (!shared_child_shares_memory()) /* valgrind: a fork, nothing is shared */
                return;
        struct shared_seen s = { 0 };
        struct shared_child c;
        ck_assert_int_eq(shared_child_start(&c, in_shared_memory, &s, NULL, 0, 0), 0);
        pid_t pid = shared_child_pid(&c);
        ck_assert_int_gt(pid, 0);
        errno = ENOTRECOVERABLE; /* the child's close(-1) comes after: EBADF in its own errno */
        __atomic_store_n(&s.go, 1, __ATOMIC_RELEASE);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_int_eq(errno, ENOTRECOVERABLE);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 5);
        ck_assert_int_eq(__atomic_load_n(&s.done, __ATOMIC_ACQUIRE), 1);
        ck_assert_int_eq(s.child_errno, EBADF);
        ck_assert_int_eq(s.ppid, getpid());
        shared_child_done(&c);
}
END_TEST

/* Ends with 0 if its parent-death signal (SIGKILL) never came while it
 * slept, and it was this test's process's child. */
static int outlives_nothing(void *arg)
{
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != *(pid_t *)arg)
                return 2;
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        return 0;
}

/* Run fn(arg) in a shared child to its end: its wait status. */
static int shared_child_status(int (*fn)(void *), void *arg, const cpu_set_t *cpus)
{
        struct shared_child c;
        ck_assert_int_eq(shared_child_start(&c, fn, arg, cpus, 0, 0), 0);
        pid_t pid = shared_child_pid(&c);
        ck_assert_int_gt(pid, 0);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        shared_child_done(&c);
        shared_child_done(&c); /* again: nothing */
        return st;
}

START_TEST(a_shared_childs_holder_lives_as_long_as_it)
{
        pid_t self = getpid();
        int st = shared_child_status(outlives_nothing, &self, NULL);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status %#x", st);
}
END_TEST

static int sleeps_a_moment(void *arg)
{
        (void)arg;
        struct timespec ts = { 0, 300 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        return 0;
}

/* The OOM killer never picks a child in a vfork (the kernel's in_vfork()):
 * were it picked, every process that shares its memory would be killed
 * with it, this one too. */
START_TEST(a_shared_child_is_never_the_oom_killers_victim)
{
        _cleanup_free_ char *own_score = read_text("/proc/self/oom_score");
        ck_assert_ptr_nonnull(own_score);
        /* valgrind: a fork there, a victim like any process; a score of 0
         * here (oom_score_adj -1000, never a victim) is its child's too. */
        if (!shared_child_shares_memory() || strcmp(own_score, "0\n") == 0)
                return;
        struct shared_child c;
        ck_assert_int_eq(shared_child_start(&c, sleeps_a_moment, NULL, NULL, 0, 0), 0);
        pid_t pid = shared_child_pid(&c);
        ck_assert_int_gt(pid, 0);
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/oom_score", (int)pid);
        _cleanup_free_ char *child_score = read_text(path);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        shared_child_done(&c);
        ck_assert_ptr_nonnull(child_score);
        ck_assert_str_eq(child_score, "0\n"); /* never chosen, where this process could be */
}
END_TEST

static int on_the_cpus_given(void *arg)
{
        cpu_set_t got;
        return sched_getaffinity(0, sizeof got, &got) == 0 && CPU_EQUAL(&got, (cpu_set_t *)arg) ? 0 : 1;
}

START_TEST(a_shared_child_starts_on_the_cpus_given)
{
        cpu_set_t all, one;
        ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
        CPU_ZERO(&one);
        for (int i = CPU_SETSIZE - 1; i >= 0; i--)
                if (CPU_ISSET(i, &all)) { /* the last this process may use */
                        CPU_SET(i, &one);
                        break;
                }
        int st = shared_child_status(on_the_cpus_given, &one, &one);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ran on other CPUs (status %#x)", st);
        cpu_set_t after;
        ck_assert_int_eq(sched_getaffinity(0, sizeof after, &after), 0);
        ck_assert(CPU_EQUAL(&after, &all)); /* this thread's own are not changed */
}
END_TEST

/* The spare stack, when there is one: its top page written by the child
 * (a clone of its own would run there). 3 when there is none. */
static int writes_the_spare_stack(void *arg)
{
        char *top = ((const struct shared_child *)arg)->spare_top;
        if (!top)
                return 3;
        memset(top - 4096, 0x5a, 4096);
        return 0;
}

/* The protection of the page at `p` in /proc/self/maps ("rw-p", "---p"),
 * or "" when none maps it. */
static void protection_at(const void *p, char out[5])
{
        out[0] = '\0';
        FILE *f = fopen("/proc/self/maps", "r");
        ck_assert_ptr_nonnull(f);
        unsigned long lo, hi;
        char prot[5];
        while (fscanf(f, "%lx-%lx %4s%*[^\n]", &lo, &hi, prot) == 3)
                if ((unsigned long)p >= lo && (unsigned long)p < hi) {
                        memcpy(out, prot, 5);
                        break;
                }
        fclose(f);
}

START_TEST(a_shared_childs_spare_stack_is_mapped_beside_its_own_between_guard_pages)
{
        struct shared_child c;
        ck_assert_int_eq(shared_child_start(&c, writes_the_spare_stack, &c, NULL, 100000, 0), 0);
        ck_assert_ptr_nonnull(c.spare_top);
        pid_t pid = shared_child_pid(&c);
        ck_assert_int_gt(pid, 0);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* it found its top, and wrote there */
        const size_t page = (size_t)sysconf(_SC_PAGESIZE);
        char prot[5];
        protection_at(c.spare_top, prot); /* the guard between the spare and the child's stack */
        ck_assert_str_eq(prot, "---p");
        protection_at(c.spare_top - page, prot);
        ck_assert_str_eq(prot, "rw-p");
        /* Rounded up to pages: 100000 bytes are 25 of 4 KiB; below them, the first guard. */
        const size_t spare = (100000 + page - 1) / page * page;
        protection_at(c.spare_top - spare, prot);
        ck_assert_str_eq(prot, "rw-p");
        protection_at(c.spare_top - spare - page, prot);
        ck_assert_str_eq(prot, "---p");
        ck_assert_ptr_eq(c.spare_top - spare - page, c.stack.base);
        shared_child_done(&c);
        struct shared_child none;
        ck_assert_int_eq(shared_child_start(&none, writes_the_spare_stack, &none, NULL, 0, 0), 0);
        ck_assert_ptr_null(none.spare_top);
        pid = shared_child_pid(&none);
        ck_assert_int_gt(pid, 0);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3);
        shared_child_done(&none);
}
END_TEST

TB_SUITE("spawn", 0)
{
        tcase_add_test(tc, stdout_and_stderr_are_captured_apart_with_the_exit_status);
        tcase_add_test(tc, stderr_can_go_where_stdout_goes);
        tcase_add_test(tc, a_child_killed_by_a_signal_has_status_128_plus_the_signal);
        tcase_add_test(tc, a_capture_keeps_its_bound_and_reads_the_rest_so_the_child_ends);
        tcase_add_test(tc, a_program_that_cannot_be_run_is_an_error_of_spawn_start);
        tcase_add_test(tc, a_child_gets_default_dispositions_and_an_empty_mask);
        tcase_add_test(tc, extra_fds_and_stdin_are_placed_and_the_cwd_set);
        tcase_add_test(tc, a_function_runs_in_the_child_and_its_return_is_the_status);
        tcase_add_test(tc, a_program_can_be_run_by_its_fd);
        tcase_add_test(tc, a_shared_child_writes_this_memory_but_not_this_threads_errno);
        tcase_add_test(tc, a_shared_childs_holder_lives_as_long_as_it);
        tcase_add_test(tc, a_shared_child_starts_on_the_cpus_given);
        tcase_add_test(tc, a_shared_child_is_never_the_oom_killers_victim);
        tcase_add_test(tc, a_shared_childs_spare_stack_is_mapped_beside_its_own_between_guard_pages);
}
