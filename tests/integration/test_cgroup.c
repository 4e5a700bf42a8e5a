/* A Trial's cgroup on this machine's real cgroups: limits hold (pids, memory,
 * cpu quota), usage is counted (cpu, peak memory, OOM kills, refused forks),
 * everything in it can be killed, and it is removed after. As root here
 * (hybrid host: cgroup v1 controllers, a controller-less v2); as `nobody`
 * (the _unprivileged run) there is no writable cgroup and the probe must say
 * so with the fix. */
#define _GNU_SOURCE
#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "limits/cgroup.h"
#include "tb_test.h"

#define MIB (1024LL * 1024)

static bool root(void)
{
        if (geteuid() == 0)
                return true;
        fprintf(stderr, "skipped: making cgroups needs root here\n");
        return false;
}

static char name_buf[64];
static const char *unique_name(void)
{
        static int made;
        snprintf(name_buf, sizeof name_buf, "test-%d-%ld-%d", (int)getpid(), (long)time(NULL), made++);
        return name_buf;
}

static char self_path[PATH_MAX];

/* Static, so a forked child that _exits still reaches it (valgrind). */
static struct cgroup *volatile live_cg;

static struct cgroup *make(struct trial_limits *l, struct cgroup_probe *p)
{
        struct tb_error err = { 0 };
        struct cgroup *cg = NULL;
        ck_assert_msg(cgroup_probe(l, p) != CGROUP_NONE, "no mechanism as root: %s", p->reason);
        ck_assert_msg(cgroup_create(p, l, unique_name(), &cg, &err) == 0, "%s", err.msg);
        live_cg = cg;
        return cg;
}

/* Destroy, and prove every folder it made is gone. */
static void destroy_and_check_gone(struct cgroup *cg, const struct cgroup_probe *p, const char *name)
{
        struct tb_error err = { 0 };
        ck_assert_msg(cgroup_destroy(cg, &err) == 0, "%s", err.msg);
        for (int c = 0; c < CG_N; c++) {
                if (!p->parent[c][0])
                        continue;
                char path[PATH_MAX + 128];
                snprintf(path, sizeof path, "%s/trialbox-%s", p->parent[c], name);
                struct stat st;
                ck_assert_msg(stat(path, &st) < 0 && errno == ENOENT, "'%s' is left behind", path);
        }
}

/* A Trial's cgroup made for a test: the probe, the cgroup and its name. */
struct made {
        struct cgroup_probe p;
        struct cgroup *cg;
        char name[64];
};

/* Make one with these limits (LIMIT_UNSET: none); returns m->cg. */
static struct cgroup *make_with(struct made *m, long long pids, long long memory_bytes, long long cpus_milli)
{
        struct trial_limits l;
        trial_limits_init(&l);
        l.pids = pids;
        l.memory_bytes = memory_bytes;
        l.cpus_milli = cpus_milli;
        m->cg = make(&l, &m->p);
        snprintf(m->name, sizeof m->name, "%s", name_buf);
        return m->cg;
}

/* Start `fn` in a child that joins the cgroup first (as the keeper will). */
static pid_t start_in(struct cgroup *cg, void (*fn)(int), int arg)
{
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (cgroup_attach_self(cg) < 0)
                        _exit(99);
                fn(arg);
                _exit(0);
        }
        return pid;
}

static void touch_mib(int mib)
{
        size_t n = (size_t)mib * MIB;
        char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                _exit(98);
        for (size_t i = 0; i < n; i += 4096)
                p[i] = 1;
}

static void fork_loop(int fd)
{
        int refused = 0;
        for (int i = 0; i < 200; i++) {
                pid_t c = fork();
                if (c == 0) {
                        pause();
                        _exit(0);
                }
                if (c < 0)
                        refused++;
        }
        if (write(fd, &refused, sizeof refused) != sizeof refused)
                _exit(97);
        pause();
}

static void burn(void)
{
        struct timespec t;
        volatile unsigned long spin = 0;
        do {
                for (int i = 0; i < 100000; i++)
                        spin = spin + 1;
                clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        } while (t.tv_sec < 1);
}

/* This test program again, burning: a new process image, so that nothing
 * of the test's (or valgrind's) own work is counted. */
static void burn_one_cpu_second(int unused)
{
        execl(self_path, "test_cgroup", "--burn-one-cpu-second", (char *)NULL);
        _exit(96);
}

/* Running (a zombie waiting for its reaper is not). */
static bool alive(pid_t pid)
{
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        char *stat = read_text(path);
        const char *end = stat ? strrchr(stat, ')') : NULL;
        bool running = end && end[1] == ' ' && end[2] != 'Z' && end[2] != 'X';
        free(stat);
        return running;
}

/* Wait until the cgroup holds at least `want` processes; how many it holds. */
static int wait_for_pids(struct cgroup *cg, int want, pid_t **pids)
{
        int n = 0;
        *pids = NULL;
        for (int i = 0; i < 5000 && (n = cgroup_pids(cg, pids)) < want; i++) {
                free(*pids);
                *pids = NULL;
                usleep(1000);
        }
        return n;
}

static void sleepers(int unused)
{
        char *argv[] = { "/bin/sh", "-c", "sleep 1000 & sleep 1000 & (sleep 1000 &); exec sleep 1000", NULL };
        execv(argv[0], argv);
}

START_TEST(as_root_the_probe_finds_a_mechanism_for_every_limit)
{
        if (!root())
                return;
        struct cgroup_probe p;
        enum cgroup_mechanism m = cgroup_probe(NULL, &p);
        ck_assert_msg(m != CGROUP_NONE, "%s", p.reason);
        char line[2048];
        cgroup_probe_summary(&p, line, sizeof line);
        fprintf(stderr, "limits: %s\n", line);
        assert_contains(line, "memory");
        if (m == CGROUP_V1)
                ck_assert(p.parent[CG_MEMORY][0] && p.parent[CG_PIDS][0] && p.parent[CG_CPU][0]);
}
END_TEST

START_TEST(without_a_writable_cgroup_the_probe_says_none_and_the_fix)
{
        if (geteuid() == 0) {
                fprintf(stderr, "skipped: root can write cgroups here (the _unprivileged run checks this)\n");
                return;
        }
        struct cgroup_probe p;
        struct trial_limits l;
        trial_limits_init(&l);
        l.memory_bytes = 100 * MIB;
        ck_assert_int_eq(cgroup_probe(&l, &p), CGROUP_NONE);
        ck_assert_msg(strstr(p.reason, "cannot enforce --memory here"), "%s", p.reason);
        ck_assert_msg(strstr(p.reason, "systemd-run --user --scope -p Delegate=yes"), "%s", p.reason);
        ck_assert_msg(strstr(p.reason, "as root"), "%s", p.reason);
        ck_assert_ptr_null(strchr(p.reason, '\n'));
        char line[2048];
        cgroup_probe_summary(&p, line, sizeof line);
        ck_assert_msg(str_has_prefix(line, "none: cannot enforce --memory"), "%s", line);
        struct cgroup *cg = (struct cgroup *)&p;
        struct tb_error err = { 0 };
        ck_assert_int_eq(cgroup_create(&p, &l, "x", &cg, &err), -EOPNOTSUPP);
        ck_assert_ptr_null(cg);
        assert_contains(err.msg, "Delegate=yes");
}
END_TEST

START_TEST(a_fork_loop_under_pids_64_never_has_more_than_64_processes)
{
        if (!root())
                return;
        struct made m;
        struct cgroup *cg = make_with(&m, 64, LIMIT_UNSET, LIMIT_UNSET);
        int fds[2];
        ck_assert_int_eq(pipe(fds), 0);
        pid_t pid = start_in(cg, fork_loop, fds[1]);
        int refused = -1;
        ck_assert_int_eq(read(fds[0], &refused, sizeof refused), sizeof refused);
        ck_assert_int_gt(refused, 0);

        pid_t *pids = NULL;
        int n = cgroup_pids(cg, &pids);
        free(pids);
        ck_assert_int_eq(n, 64);
        /* The kernel's own high-water mark, where it keeps one: never above. */
        char peak[PATH_MAX + 128];
        snprintf(peak, sizeof peak, "%s/trialbox-%s/pids.peak", m.p.parent[m.p.mechanism == CGROUP_V2 ? 0 : CG_PIDS], m.name);
        char *text = read_text(peak);
        if (text)
                ck_assert_int_le(atoi(text), 64);
        free(text);
        struct trial_usage u;
        trial_usage_init(&u);
        cgroup_usage(cg, &u);
        ck_assert_int_ge(u.pids_refused, refused);

        struct tb_error err = { 0 };
        ck_assert_msg(cgroup_kill_all(cg, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(cgroup_pids(cg, &pids), 0);
        free(pids);
        ck_assert_int_eq(wait_status(pid), 128 + SIGKILL);
        close(fds[0]);
        close(fds[1]);
        destroy_and_check_gone(cg, &m.p, m.name);
}
END_TEST

START_TEST(a_300_mib_allocation_under_memory_100m_is_oom_killed_and_counted)
{
        if (!root())
                return;
        struct made m;
        struct cgroup *cg = make_with(&m, LIMIT_UNSET, 100 * MIB, LIMIT_UNSET);
        int oom_fd = cgroup_oom_fd(cg);
        ck_assert_int_ge(oom_fd, 0);
        pid_t pid = start_in(cg, touch_mib, 300);
        ck_assert_int_eq(wait_status(pid), 128 + SIGKILL);
        /* The event source fired (the wait only guards against a hang). */
        struct pollfd pfd = { .fd = oom_fd, .events = POLLIN };
        ck_assert_int_eq(poll(&pfd, 1, 30000), 1);
        ck_assert_int_ge(cgroup_oom_event(cg), 1);
        struct trial_usage u;
        trial_usage_init(&u);
        cgroup_usage(cg, &u);
        ck_assert_int_ge(u.oom_kills, 1);
        ck_assert_int_eq(u.source, USAGE_CGROUP);
        ck_assert_int_le(u.peak_memory_bytes, 101 * MIB);
        destroy_and_check_gone(cg, &m.p, m.name);
}
END_TEST

START_TEST(a_300_mib_allocation_without_a_memory_limit_shows_a_peak_of_at_least_300_mib)
{
        if (!root())
                return;
        struct made m;
        /* some limit, so a cgroup is made; memory joined for usage only */
        struct cgroup *cg = make_with(&m, 1000, LIMIT_UNSET, LIMIT_UNSET);
        pid_t pid = start_in(cg, touch_mib, 300);
        ck_assert_int_eq(wait_status(pid), 0);
        struct trial_usage u;
        trial_usage_init(&u);
        cgroup_usage(cg, &u);
        ck_assert_int_eq(u.source, USAGE_CGROUP);
        ck_assert_msg(u.peak_memory_bytes >= 300 * MIB, "peak %lld", u.peak_memory_bytes);
        ck_assert_msg(u.peak_memory_bytes < 360 * MIB, "peak %lld", u.peak_memory_bytes);
        ck_assert_int_eq(u.oom_kills, 0);
        ck_assert_int_eq(u.pids_refused, 0);
        destroy_and_check_gone(cg, &m.p, m.name);
}
END_TEST

START_TEST(a_cpu_bound_second_shows_as_about_1000_ms)
{
        if (!root())
                return;
        struct made m;
        struct cgroup *cg = make_with(&m, LIMIT_UNSET, LIMIT_UNSET, 1500);
        pid_t pid = start_in(cg, burn_one_cpu_second, 0);
        int status;
        struct rusage ru;
        ck_assert_int_eq(wait4(pid, &status, 0, &ru), pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        struct trial_usage u;
        trial_usage_init(&u);
        cgroup_usage(cg, &u);
        trial_usage_fill_from_rusage(&u, &ru); /* only where the cgroup did not know */
        long long total = u.cpu_user_ms + u.cpu_system_ms;
        fprintf(stderr, "a cpu-bound second: user %lld ms, system %lld ms\n", u.cpu_user_ms, u.cpu_system_ms);
        ck_assert_msg(total >= 800 && total <= 1200, "cpu %lld ms", total);
        /* The quota as written: 1.5 CPUs of a 100 ms period. */
        char quota[PATH_MAX + 128];
        if (m.p.mechanism == CGROUP_V1) {
                snprintf(quota, sizeof quota, "%s/trialbox-%s/cpu.cfs_quota_us", m.p.parent[CG_CPU], m.name);
                char *q = read_text(quota);
                ck_assert_str_eq(q, "150000\n");
                free(q);
        } else {
                snprintf(quota, sizeof quota, "%s/trialbox-%s/cpu.max", m.p.parent[0], m.name);
                char *q = read_text(quota);
                ck_assert_str_eq(q, "150000 100000\n");
                free(q);
        }
        destroy_and_check_gone(cg, &m.p, m.name);
}
END_TEST

/* The child joins with its whole process in every folder of the cgroup
 * (v1 joins through `tasks`, which moves the calling thread: a child after
 * fork has no other), and what it starts after is inside with it. */
START_TEST(a_joined_child_and_what_it_starts_are_in_every_folder)
{
        if (!root())
                return;
        struct made m;
        struct cgroup *cg = make_with(&m, 64, 64 * MIB, 1000);
        pid_t pid = start_in(cg, sleepers, 0);
        pid_t *pids = NULL;
        ck_assert_int_ge(wait_for_pids(cg, 4, &pids), 4);
        free(pids);
        char want[32];
        snprintf(want, sizeof want, "%d", (int)pid);
        for (int c = 0; c < (m.p.mechanism == CGROUP_V2 ? 1 : CG_N); c++) {
                if (!m.p.parent[c][0])
                        continue;
                char path[PATH_MAX + 128];
                snprintf(path, sizeof path, "%s/trialbox-%s/cgroup.procs", m.p.parent[c], m.name);
                char *procs = read_text(path);
                ck_assert_msg(procs && has_line(procs, want), "process %s is not in '%s'", want, path);
                ck_assert_msg(count_lines(procs) >= 4, "'%s' holds %s", path, procs);
                free(procs);
        }
        destroy_and_check_gone(cg, &m.p, m.name);
        ck_assert_int_eq(wait_status(pid), 128 + SIGKILL);
}
END_TEST

START_TEST(kill_all_leaves_nothing_of_a_process_tree)
{
        if (!root())
                return;
        struct made m;
        struct cgroup *cg = make_with(&m, 64, LIMIT_UNSET, LIMIT_UNSET);
        pid_t pid = start_in(cg, sleepers, 0);
        pid_t *pids = NULL;
        /* Until the shell started its four sleepers (detached one included). */
        int n = wait_for_pids(cg, 4, &pids);
        ck_assert_int_ge(n, 4);
        struct tb_error err = { 0 };
        ck_assert_msg(cgroup_kill_all(cg, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(wait_status(pid), 128 + SIGKILL);
        for (int i = 0; i < n; i++)
                ck_assert_msg(!alive(pids[i]), "process %d is still running", (int)pids[i]);
        free(pids);
        ck_assert_int_eq(cgroup_pids(cg, &pids), 0);
        free(pids);
        destroy_and_check_gone(cg, &m.p, m.name);
}
END_TEST

START_TEST(a_destroyed_cgroup_takes_its_processes_with_it)
{
        if (!root())
                return;
        struct made m;
        struct cgroup *cg = make_with(&m, LIMIT_UNSET, 64 * MIB, LIMIT_UNSET);
        pid_t pid = start_in(cg, sleepers, 0);
        pid_t *pids = NULL;
        ck_assert_int_ge(wait_for_pids(cg, 4, &pids), 4);
        destroy_and_check_gone(cg, &m.p, m.name);
        for (int i = 0; i < 4; i++)
                ck_assert_msg(!alive(pids[i]), "process %d is still running", (int)pids[i]);
        free(pids);
        ck_assert_int_eq(wait_status(pid), 128 + SIGKILL);
}
END_TEST

/* The v2 mechanics on this host's controller-less v2 hierarchy (the
 * controllers are all v1's here): join, cgroup.kill, cpu.stat, removal. */
/* A folder that cannot be removed (a cgroup made inside it) is named in the
 * error; the others are removed all the same. */
START_TEST(a_folder_that_cannot_be_removed_is_named_and_the_others_go)
{
        if (!root())
                return;
        struct made m;
        make_with(&m, 64, LIMIT_UNSET, LIMIT_UNSET);
        int held = m.p.mechanism == CGROUP_V2 ? 0 : CG_PIDS;
        char dir[PATH_MAX + 128], sub[PATH_MAX + 160];
        snprintf(dir, sizeof dir, "%s/trialbox-%s", m.p.parent[held], m.name);
        snprintf(sub, sizeof sub, "%s/held", dir);
        ck_assert_int_eq(mkdir(sub, 0755), 0);
        struct tb_error err = { 0 };
        ck_assert_int_eq(cgroup_destroy(m.cg, &err), -EBUSY);
        assert_contains(err.msg, dir);
        assert_contains(err.msg, "is left behind");
        ck_assert_int_eq(rmdir(sub), 0);
        ck_assert_int_eq(rmdir(dir), 0);
        for (int c = 0; c < CG_N; c++) {
                if (c == held || !m.p.parent[c][0] || strcmp(m.p.parent[c], m.p.parent[held]) == 0)
                        continue;
                snprintf(dir, sizeof dir, "%s/trialbox-%s", m.p.parent[c], m.name);
                ck_assert_msg(!exists(dir), "'%s' is left behind", dir);
        }
}
END_TEST

START_TEST(a_v2_cgroup_without_controllers_still_holds_counts_and_kills)
{
        if (!root())
                return;
        struct trial_limits l;
        struct cgroup_probe p;
        trial_limits_init(&l); /* no controller needed */
        if (cgroup_probe(&l, &p) != CGROUP_V2) {
                fprintf(stderr, "skipped: no writable cgroup v2 here (%s)\n", p.reason);
                return;
        }
        struct tb_error err = { 0 };
        struct cgroup *cg = NULL;
        ck_assert_msg(cgroup_create(&p, &l, unique_name(), &cg, &err) == 0, "%s", err.msg);
        live_cg = cg;
        char name[64];
        snprintf(name, sizeof name, "%s", name_buf);
        ck_assert_int_ge(cgroup_v2_dirfd(cg), 0);
        pid_t burner = start_in(cg, burn_one_cpu_second, 0);
        ck_assert_int_eq(wait_status(burner), 0);
        struct trial_usage u;
        trial_usage_init(&u);
        cgroup_usage(cg, &u);
        ck_assert_msg(u.cpu_user_ms + u.cpu_system_ms >= 800 && u.cpu_user_ms + u.cpu_system_ms <= 1200,
                      "cpu %lld + %lld ms", u.cpu_user_ms, u.cpu_system_ms);

        pid_t pid = start_in(cg, sleepers, 0);
        pid_t *pids = NULL;
        int n = wait_for_pids(cg, 4, &pids);
        free(pids);
        ck_assert_int_ge(n, 4);
        ck_assert_msg(cgroup_kill_all(cg, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(cgroup_pids(cg, &pids), 0);
        free(pids);
        ck_assert_int_eq(wait_status(pid), 128 + SIGKILL);
        destroy_and_check_gone(cg, &p, name);
}
END_TEST

START_TEST(a_bad_name_or_an_existing_cgroup_is_refused_and_nothing_is_left)
{
        if (!root())
                return;
        struct trial_limits l;
        struct cgroup_probe p;
        struct tb_error err = { 0 };
        struct cgroup *cg = NULL, *again = NULL;
        trial_limits_init(&l);
        l.pids = 10;
        ck_assert_int_ne(cgroup_probe(&l, &p), CGROUP_NONE);
        ck_assert_int_eq(cgroup_create(&p, &l, "../escape", &cg, &err), -EINVAL);
        ck_assert_int_eq(cgroup_create(&p, &l, "", &cg, &err), -EINVAL);
        cg = make(&l, &p);
        char name[64];
        snprintf(name, sizeof name, "%s", name_buf);
        ck_assert_int_eq(cgroup_create(&p, &l, name, &again, &err), -EEXIST);
        assert_contains(err.msg, "exists already");
        ck_assert_ptr_null(again);
        destroy_and_check_gone(cg, &p, name);
        ck_assert_int_eq(cgroup_destroy(NULL, &err), 0);
}
END_TEST

static void add_tests(Suite *s, TCase *tc)
{
        tcase_add_test(tc, as_root_the_probe_finds_a_mechanism_for_every_limit);
        tcase_add_test(tc, without_a_writable_cgroup_the_probe_says_none_and_the_fix);
        tcase_add_test(tc, a_fork_loop_under_pids_64_never_has_more_than_64_processes);
        tcase_add_test(tc, a_300_mib_allocation_under_memory_100m_is_oom_killed_and_counted);
        tcase_add_test(tc, a_300_mib_allocation_without_a_memory_limit_shows_a_peak_of_at_least_300_mib);
        tcase_add_test(tc, a_cpu_bound_second_shows_as_about_1000_ms);
        tcase_add_test(tc, a_joined_child_and_what_it_starts_are_in_every_folder);
        tcase_add_test(tc, kill_all_leaves_nothing_of_a_process_tree);
        tcase_add_test(tc, a_destroyed_cgroup_takes_its_processes_with_it);
        tcase_add_test(tc, a_folder_that_cannot_be_removed_is_named_and_the_others_go);
        tcase_add_test(tc, a_v2_cgroup_without_controllers_still_holds_counts_and_kills);
        tcase_add_test(tc, a_bad_name_or_an_existing_cgroup_is_refused_and_nothing_is_left);
}

int main(int argc, char **argv)
{
        if (argc == 2 && strcmp(argv[1], "--burn-one-cpu-second") == 0) {
                burn();
                return 0;
        }
        /* Not /proc/self/exe: under valgrind that is valgrind. */
        if (!realpath(argv[0], self_path))
                return 1;
        return tb_run_tests("cgroup", 0, add_tests);
}
