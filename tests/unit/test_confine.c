/* The session's confinement (confine.h): the seccomp filter as bwrap gets
 * it, loaded here for real in a child; the keyring; the fds the keeper
 * passes on; the spec's flags and TMPDIR. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/confine.h"
#include "sandbox/confine_bpf.h"
#include "tb_test.h"

static void confined_argv(bool nested, bool userns, const char *home, struct sandbox_spec *s, struct strv *a)
{
        struct tb_error err = { 0 };
        const struct confine_options co = { .nested_userns = nested, .bwrap_userns = userns };
        sandbox_add(s, SANDBOX_PROC, NULL, "/proc");
        sandbox_add(s, SANDBOX_TMPFS, NULL, "/tmp");
        strv_add(&s->command, "/bin/true");
        ck_assert_int_eq(confine_spec(s, &co, home, &err), 0);
        sandbox_argv(s, "bwrap", a);
}

START_TEST(the_filter_comes_first_and_nested_user_namespaces_are_disabled_where_bwrap_makes_one)
{
        struct sandbox_spec s = { 0 };
        struct strv a = { 0 };
        confined_argv(false, true, "/tmp/t/out/home", &s, &a);
        ck_assert_str_eq(a.v[1], "--seccomp");
        ck_assert_int_eq(atoi(a.v[2]), s.seccomp_fd);
        ck_assert_int_gt(s.seccomp_fd, SANDBOX_STATUS_FD + 1);
        ck_assert_int_gt(strv_find(&a, "--unshare-user"), 0);
        ck_assert_int_gt(strv_find(&a, "--disable-userns"), 0);
        /* With a user namespace, /proc/sys is left to the kernel. */
        ck_assert_int_lt(strv_find_triple(&a, "--ro-bind", "/proc/sys", "/proc/sys"), 0);
        strv_done(&a);
        sandbox_spec_done(&s);

        /* A Harness with a sandbox of its own keeps them. */
        confined_argv(true, true, "/tmp/t/out/home", &s, &a);
        ck_assert_int_lt(strv_find(&a, "--disable-userns"), 0);
        ck_assert_str_eq(a.v[1], "--seccomp");
        strv_done(&a);
        sandbox_spec_done(&s);

        /* Root: no user namespace to disable (the filter does it); /proc/sys covered. */
        confined_argv(false, false, "/tmp/t/out/home", &s, &a);
        ck_assert_int_lt(strv_find(&a, "--disable-userns"), 0);
        ck_assert_int_gt(strv_find_triple(&a, "--ro-bind", "/proc/sys", "/proc/sys"), strv_find(&a, "--proc"));
        strv_done(&a);
        sandbox_spec_done(&s);
}
END_TEST

START_TEST(the_tmpdir_is_a_private_tmpfs_and_never_a_prefix_of_the_home)
{
        static const char *const homes[] = {
                "/tmp/t/out/home", "/home/u/out/home", "/sandbox/tmp/out/home", "/sandbox/tmpx/home", "/tmp",
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(homes); i++) {
                const char *tmp = confine_tmpdir(homes[i]);
                ck_assert_msg(!path_is_under(homes[i], tmp), "TMPDIR '%s' is a prefix of the home '%s'", tmp, homes[i]);
        }
        ck_assert_str_eq(confine_tmpdir("/tmp/t/out/home"), CONFINE_TMPDIR);

        struct sandbox_spec s = { 0 };
        struct strv a = { 0 };
        confined_argv(false, true, "/tmp/t/out/home", &s, &a);
        ck_assert_str_eq(sandbox_getenv(&s, "TMPDIR"), CONFINE_TMPDIR);
        ck_assert_ptr_nonnull(sandbox_find(&s, CONFINE_TMPDIR));
        ck_assert_int_eq(sandbox_find(&s, CONFINE_TMPDIR)->kind, SANDBOX_TMPFS);
        strv_done(&a);
        sandbox_spec_done(&s);
}
END_TEST

/* Load the filter into a child and report what `call` returned there:
 * 0, or the errno. */
static int under_filter(bool nested, long (*call)(void))
{
        int fd = -1;
        struct tb_error err = { 0 };
        ck_assert_int_eq(confine_filter_fd(nested, &fd, &err), 0);
        struct stat st;
        ck_assert_int_eq(fstat(fd, &st), 0);
        char *buf = malloc((size_t)st.st_size);
        ck_assert_int_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
        close(fd);
        pid_t pid = fork();
        if (pid == 0) {
                struct sock_fprog prog = { .len = (unsigned short)(st.st_size / 8), .filter = (void *)buf };
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                        _exit(255);
                _exit(call() < 0 ? errno : 0);
        }
        free(buf);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        ck_assert_int_ne(WEXITSTATUS(status), 255);
        return WEXITSTATUS(status);
}

static bool can_load_filters(const char *test)
{
        if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &(unsigned){ SECCOMP_RET_ERRNO }) == 0)
                return true;
        fprintf(stderr, "%s: skipped: seccomp(2) is not available (under valgrind?)\n", test);
        return false;
}

static long call_keyctl(void) { return syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0); }
static long call_unshare_user(void) { return unshare(CLONE_NEWUSER); }
static long call_mount_api(void) { return syscall(SYS_fsopen, "tmpfs", 0); }
static long call_getppid(void) { return getppid() > 0 ? 0 : -1; }

START_TEST(the_exported_filter_denies_when_loaded_and_lets_the_rest_through)
{
        if (!can_load_filters("the_exported_filter_denies_when_loaded_and_lets_the_rest_through"))
                return;
        ck_assert_int_eq(under_filter(false, call_keyctl), ENOSYS);
        ck_assert_int_eq(under_filter(false, call_unshare_user), EPERM);
        ck_assert_int_eq(under_filter(false, call_mount_api), ENOSYS);
        ck_assert_int_eq(under_filter(false, call_getppid), 0);
        /* Nested: keys still denied; user namespaces and the mount API are not the filter's to refuse. */
        ck_assert_int_eq(under_filter(true, call_keyctl), ENOSYS);
        ck_assert_int_ne(under_filter(true, call_unshare_user), EPERM);
        ck_assert_int_ne(under_filter(true, call_mount_api), ENOSYS);
}
END_TEST

#if defined(__x86_64__)
/* A call through the 32-bit ABI (int $0x80), as a 32-bit program in the
 * session makes it: its own syscall numbers, which the filter meets in a
 * part of its own. -1 with errno, as a libc wrapper. */
static long ia32_call(long nr, long a, long b)
{
        long r;
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(nr), "b"(a), "c"(b) : "memory", "r8", "r9", "r10", "r11");
        if (r < 0 && r > -4096) {
                errno = (int)-r;
                return -1;
        }
        return r;
}
/* The i386 numbers (arch/x86/entry/syscalls/syscall_32.tbl). */
static long call_keyctl_ia32(void) { return ia32_call(288, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING); }
static long call_unshare_user_ia32(void) { return ia32_call(310, CLONE_NEWUSER, 0); }
static long call_getppid_ia32(void) { return ia32_call(64, 0, 0) > 0 ? 0 : -1; }

START_TEST(a_32_bit_call_meets_the_same_rules)
{
        if (!can_load_filters("a_32_bit_call_meets_the_same_rules"))
                return;
        if (call_getppid_ia32() < 0) {
                fprintf(stderr, "a_32_bit_call_meets_the_same_rules: skipped: this kernel runs no 32-bit calls\n");
                return;
        }
        ck_assert_int_eq(under_filter(false, call_keyctl_ia32), ENOSYS);
        ck_assert_int_eq(under_filter(false, call_unshare_user_ia32), EPERM);
        ck_assert_int_eq(under_filter(false, call_getppid_ia32), 0);
        ck_assert_int_eq(under_filter(true, call_keyctl_ia32), ENOSYS);
        ck_assert_int_ne(under_filter(true, call_unshare_user_ia32), EPERM);
}
END_TEST
#endif

static long close_if_made(long fd)
{
        if (fd >= 0)
                close((int)fd);
        return fd;
}

static long call_vsock(void) { return close_if_made(socket(AF_VSOCK, SOCK_STREAM, 0)); }
static long call_packet_pair(void) { return socketpair(AF_PACKET, SOCK_RAW, 0, (int[2]){ 0 }); }
static long call_unix(void) { return close_if_made(socket(AF_UNIX, SOCK_STREAM, 0)); }
static long call_unix_pair(void)
{
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
                return -1;
        close(sv[0]);
        close(sv[1]);
        return 0;
}
static long call_route(void) { return close_if_made(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)); }
static long call_sock_diag(void) { return close_if_made(socket(AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG)); }
/* AF_UNIX with garbage above the int: refused rather than guessed at. */
static long call_unix_high(void) { return close_if_made(syscall(SYS_socket, (1UL << 32) | AF_UNIX, SOCK_STREAM, 0)); }
static long call_chmod_setuid(void) { return chmod("/nonexistent/trialbox", 04755); }
static long call_chmod_plain(void) { return chmod("/nonexistent/trialbox", 0755); }
static long call_fchmodat_setgid(void) { return fchmodat(AT_FDCWD, "/nonexistent/trialbox", 02755, 0); }
static long call_fchmodat2_setuid(void) { return syscall(452 /* fchmodat2 */, AT_FDCWD, "/nonexistent/trialbox", 04755, 0); }
static long call_fchmod_setuid(void) { return fchmod(-1, 04755); }
static long call_open_create_setuid(void) { return syscall(SYS_openat, AT_FDCWD, "/nonexistent/t", O_CREAT | O_WRONLY, 04755); }
static long call_open_tmpfile_setgid(void) { return syscall(SYS_openat, AT_FDCWD, "/nonexistent", O_TMPFILE | O_WRONLY, 02755); }
/* Without O_CREAT the kernel ignores the mode: so does the filter. */
static long call_open_no_create(void) { return syscall(SYS_openat, AT_FDCWD, "/nonexistent/t", O_RDONLY, 04755); }
static long call_mkdir_setgid(void) { return mkdir("/nonexistent/t", 02755); }
static long call_mknod_setuid(void) { return mknod("/nonexistent/t", S_IFREG | 04755, 0); }
static long call_openat2(void) { return syscall(437 /* openat2 */, AT_FDCWD, "/nonexistent/t", NULL, 0); }

START_TEST(the_filter_allows_only_the_socket_families_a_session_needs)
{
        if (!can_load_filters("the_filter_allows_only_the_socket_families_a_session_needs"))
                return;
        for (int nested = 0; nested <= 1; nested++) {
                ck_assert_int_eq(under_filter(nested, call_vsock), EAFNOSUPPORT);
                ck_assert_int_eq(under_filter(nested, call_packet_pair), EAFNOSUPPORT);
                ck_assert_int_eq(under_filter(nested, call_sock_diag), EAFNOSUPPORT);
                ck_assert_int_eq(under_filter(nested, call_unix_high), EAFNOSUPPORT);
                ck_assert_int_eq(under_filter(nested, call_unix), 0);
                ck_assert_int_eq(under_filter(nested, call_unix_pair), 0);
                ck_assert_int_eq(under_filter(nested, call_route), 0);
        }
}
END_TEST

START_TEST(the_filter_refuses_setuid_and_setgid_modes_and_nothing_else)
{
        if (!can_load_filters("the_filter_refuses_setuid_and_setgid_modes_and_nothing_else"))
                return;
        ck_assert_int_eq(under_filter(false, call_chmod_setuid), EPERM);
        ck_assert_int_eq(under_filter(false, call_fchmodat_setgid), EPERM);
        ck_assert_int_eq(under_filter(false, call_fchmodat2_setuid), EPERM);
        ck_assert_int_eq(under_filter(false, call_fchmod_setuid), EPERM);
        ck_assert_int_eq(under_filter(false, call_open_create_setuid), EPERM);
        ck_assert_int_eq(under_filter(false, call_open_tmpfile_setgid), EPERM);
        ck_assert_int_eq(under_filter(false, call_mkdir_setgid), EPERM);
        ck_assert_int_eq(under_filter(false, call_mknod_setuid), EPERM);
        ck_assert_int_eq(under_filter(true, call_chmod_setuid), EPERM);
        ck_assert_int_eq(under_filter(false, call_openat2), ENOSYS);
        /* The same calls without those bits reach the kernel (no such file). */
        ck_assert_int_eq(under_filter(false, call_chmod_plain), ENOENT);
        ck_assert_int_eq(under_filter(false, call_open_no_create), ENOENT);
}
END_TEST

START_TEST(the_keeper_passes_on_only_the_filter_fd_the_command_line_names_first)
{
        ck_assert_int_eq(confine_argv_fd((char *[]){ "bwrap", "--seccomp", "7", "--", "x", NULL }), 7);
        ck_assert_int_eq(confine_argv_fd((char *[]){ "bwrap", "--unshare-pid", "--seccomp", "7", NULL }), -1);
        /* After the supervisor's --block-fd pair, and only there. */
        ck_assert_int_eq(confine_argv_fd((char *[]){ "bwrap", "--block-fd", "4", "--seccomp", "7", NULL }), 7);
        ck_assert_int_eq(confine_argv_fd((char *[]){ "bwrap", "--seccomp", "7", "--block-fd", "4", NULL }), 7);
        ck_assert_int_eq(confine_argv_fd((char *[]){ "bwrap", "--block-fd", "4", "--unshare-pid", "--seccomp", "7", NULL }), -1);
        ck_assert_int_eq(confine_argv_fd((char *[]){ "bwrap", "--seccomp", "7x", NULL }), -1);
        ck_assert_int_eq(confine_argv_fd((char *[]){ "bwrap", "--seccomp", NULL }), -1);
        ck_assert_int_eq(confine_argv_fd((char *[]){ "bwrap", NULL }), -1);
        /* A bwrap started early: its options' fd, right after the filter's pair, and only there. */
        ck_assert_int_eq(confine_argv_args_fd((char *[]){ "bwrap", "--block-fd", "4", "--seccomp", "7", "--args", "8",
                                                          "--", "x", NULL }),
                         8);
        ck_assert_int_eq(confine_argv_args_fd((char *[]){ "bwrap", "--seccomp", "7", "--args", "8", NULL }), 8);
        ck_assert_int_eq(confine_argv_args_fd((char *[]){ "bwrap", "--args", "8", "--seccomp", "7", NULL }), -1);
        ck_assert_int_eq(confine_argv_args_fd((char *[]){ "bwrap", "--seccomp", "7", "--", "--args", "8", NULL }), -1);
        ck_assert_int_eq(confine_argv_args_fd((char *[]){ "bwrap", "--seccomp", "7", "--args", "8x", NULL }), -1);

        pid_t pid = fork();
        if (pid == 0) {
                int a = open("/dev/null", O_RDONLY), b = open("/dev/null", O_RDONLY), c = open("/dev/null", O_RDONLY);
                char num[16];
                snprintf(num, sizeof num, "%d", b);
                char num_c[16];
                snprintf(num_c, sizeof num_c, "%d", c);
                int d = open("/dev/null", O_RDONLY);
                confine_close_fds(a, (char *[]){ "bwrap", "--seccomp", num, "--args", num_c, NULL });
                bool ok = fcntl(a, F_GETFD) < 0 && fcntl(b, F_GETFD) >= 0 && fcntl(c, F_GETFD) >= 0 &&
                          fcntl(d, F_GETFD) < 0;
                _exit(ok ? 0 : 1);
        }
        ck_assert_int_eq(wait_status(pid), 0);
}
END_TEST

START_TEST(a_fresh_session_keyring_hides_the_one_before)
{
        pid_t pid = fork();
        if (pid == 0) {
                if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "trialbox-test") < 0)
                        _exit(errno == ENOSYS ? 0 : 2); /* no keyrings: nothing to hide */
                long before = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
                long key = syscall(SYS_add_key, "user", "trialbox-test-key", "s", 1, KEY_SPEC_SESSION_KEYRING);
                if (before < 0 || key < 0 || confine_exec_prepare((char *[]){ "bwrap", NULL }) < 0)
                        _exit(3);
                long after = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
                long found = syscall(SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_SESSION_KEYRING, "user", "trialbox-test-key", 0);
                _exit(after != before && found < 0 && errno == ENOKEY ? 0 : 1);
        }
        ck_assert_int_eq(wait_status(pid), 0);
}
END_TEST

START_TEST(check_says_the_filter_and_the_keyring_are_in_effect_here)
{
        struct confine_status st;
        struct tb_error err = { 0 };
        if (!can_load_filters("check_says_the_filter_and_the_keyring_are_in_effect_here"))
                return;
        ck_assert_int_eq(confine_check(&st, &err), 0);
        ck_assert(st.filter);
        ck_assert_int_gt(st.filter_len, 20);
        ck_assert(st.keyrings); /* this test machine's kernel has them */
}
END_TEST

/* The whole BPF program in `fd` (closed), malloc'd; its length in *len. */
static unsigned char *program_of(int fd, size_t *len)
{
        struct stat st;
        ck_assert_int_eq(fstat(fd, &st), 0);
        *len = (size_t)st.st_size;
        unsigned char *buf = malloc(*len + 1);
        ck_assert_int_eq(pread(fd, buf, *len, 0), (ssize_t)*len);
        close(fd);
        return buf;
}

START_TEST(the_filter_built_in_is_the_one_the_rules_compile_to_here)
{
        /* Built on this machine (the tests run where they are built): the
         * key is this system's, so the built program is the one used. */
        if (confine_bpf_built.key.arch != 0)
                ck_assert(confine_filter_built_in());
        for (int nested = 0; nested <= 1; nested++) {
                int a = -1, b = -1;
                struct tb_error err = { 0 };
                ck_assert_int_eq(confine_filter_fd(nested, &a, &err), 0);
                ck_assert_int_eq(confine_filter_compile_fd(nested, &b, &err), 0);
                size_t la, lb;
                unsigned char *pa = program_of(a, &la), *pb = program_of(b, &lb);
                ck_assert_uint_gt(la, 20 * 8);
                ck_assert_uint_eq(la % 8, 0);
                ck_assert_uint_eq(la, lb);
                ck_assert(memcmp(pa, pb, la) == 0);
                if (confine_bpf_built.key.arch != 0)
                        ck_assert_uint_eq(la, confine_bpf_built.len[nested]);
                free(pa);
                free(pb);
        }
        /* The two differ: the nested one lets user namespaces and mounts be. */
        if (confine_bpf_built.key.arch != 0)
                ck_assert(confine_bpf_built.len[0] != confine_bpf_built.len[1] ||
                          memcmp(confine_bpf_built.prog[0], confine_bpf_built.prog[1], confine_bpf_built.len[0]) != 0);
}
END_TEST

TB_SUITE("confine", 0)
{
        tcase_add_test(tc, the_filter_comes_first_and_nested_user_namespaces_are_disabled_where_bwrap_makes_one);
        tcase_add_test(tc, the_tmpdir_is_a_private_tmpfs_and_never_a_prefix_of_the_home);
        tcase_add_test(tc, the_exported_filter_denies_when_loaded_and_lets_the_rest_through);
#if defined(__x86_64__)
        tcase_add_test(tc, a_32_bit_call_meets_the_same_rules);
#endif
        tcase_add_test(tc, the_filter_allows_only_the_socket_families_a_session_needs);
        tcase_add_test(tc, the_filter_refuses_setuid_and_setgid_modes_and_nothing_else);
        tcase_add_test(tc, the_keeper_passes_on_only_the_filter_fd_the_command_line_names_first);
        tcase_add_test(tc, a_fresh_session_keyring_hides_the_one_before);
        tcase_add_test(tc, check_says_the_filter_and_the_keyring_are_in_effect_here);
        tcase_add_test(tc, the_filter_built_in_is_the_one_the_rules_compile_to_here);
}
