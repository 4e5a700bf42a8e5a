/* The one reader and the one atomic writer with flags (base/fileio.h), and
 * the EINTR loops under them (base/io.h). */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/fileio.h"
#include "base/io.h"
#include "tb_test.h"

START_TEST(read_beneath_follows_no_link_on_the_way_and_never_leaves_the_folder)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        write_in(dir, "a/b/f", "inside", 0600);
        write_in(dir, "outside", "out", 0600);
        _cleanup_free_ char *link = xasprintf("%s/a/l", dir);
        _cleanup_free_ char *b = xasprintf("%s/a/b", dir);
        ck_assert_int_eq(symlink(b, link), 0);
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int afd = openat(dfd, "a", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(afd, 0);

        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        ck_assert_int_eq(read_full_file_at(afd, "b/f", 100, READ_BENEATH | READ_REGULAR, &text, &len, NULL), 0);
        ck_assert_str_eq(text, "inside");
        ck_assert_uint_eq(len, 6);
        char *none = NULL;
        /* A link on the way, and a way out of the folder: refused, both. */
        ck_assert_int_lt(read_full_file_at(afd, "l/f", 100, READ_BENEATH, &none, NULL, NULL), 0);
        ck_assert_int_lt(read_full_file_at(afd, "../outside", 100, READ_BENEATH, &none, NULL, NULL), 0);
        ck_assert_ptr_null(none);
        /* Without the flag, the same paths are read. */
        _cleanup_free_ char *through = NULL;
        ck_assert_int_eq(read_full_file_at(afd, "l/f", 100, 0, &through, NULL, NULL), 0);
        ck_assert_str_eq(through, "inside");
}
END_TEST

/* In `dir`: "f" holding "0123456789", and "p" a FIFO. The folder, open. */
static int file_and_fifo(const char *dir)
{
        write_in(dir, "f", "0123456789", 0600);
        _cleanup_free_ char *fifo = xasprintf("%s/p", dir);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dfd, 0);
        return dfd;
}

START_TEST(read_regular_refuses_folders_and_fifos_and_a_big_file_before_reading_it)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_close_ int dfd = file_and_fifo(dir);
        char *out = NULL;
        struct stat st;
        ck_assert_int_eq(read_full_file_at(dfd, ".", 100, READ_REGULAR, &out, NULL, NULL), -EISDIR);
        ck_assert_int_eq(read_full_file_at(dfd, "p", 100, READ_REGULAR | READ_NONBLOCK, &out, NULL, NULL), -EINVAL);
        ck_assert_int_eq(read_full_file_at(dfd, "f", 9, READ_REGULAR, &out, NULL, &st), -EFBIG);
        ck_assert_int_eq(read_full_file_at(dfd, "f", 9, 0, &out, NULL, NULL), -EFBIG);
        ck_assert_ptr_null(out);
        ck_assert_int_eq(read_full_file_at(dfd, "f", 10, READ_REGULAR | READ_SECURE, &out, NULL, &st), 0);
        ck_assert_str_eq(out, "0123456789");
        ck_assert_int_eq(st.st_size, 10);
        erase_and_free(out);
}
END_TEST

/* READ_PREFIX: the first `max` bytes of a longer file, all of a shorter
 * one, none with `max` 0 (but the file must still open, as a regular file
 * with READ_REGULAR); from a pipe too, past any one read. */
START_TEST(read_prefix_reads_the_first_bytes_and_refuses_no_longer_file)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_close_ int dfd = file_and_fifo(dir);
        const int flags = READ_NOFOLLOW | READ_REGULAR | READ_NONBLOCK | READ_PREFIX;
        const struct {
                size_t max;
                const char *want;
        } cases[] = { { 4, "0123" }, { 10, "0123456789" }, { 100, "0123456789" }, { 0, "" } };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                _cleanup_free_ char *out = NULL;
                size_t len = 99;
                ck_assert_int_eq(read_full_file_at(dfd, "f", cases[i].max, flags, &out, &len, NULL), 0);
                ck_assert_str_eq(out, cases[i].want);
                ck_assert_uint_eq(len, strlen(cases[i].want));
        }
        char *none = NULL;
        ck_assert_int_eq(read_full_file_at(dfd, "p", 0, flags, &none, NULL, NULL), -EINVAL);
        ck_assert_int_eq(read_full_file_at(dfd, "missing", 0, flags, &none, NULL, NULL), -ENOENT);
        ck_assert_ptr_null(none);
        int p[2];
        ck_assert_int_eq(pipe(p), 0);
        ck_assert_int_eq(write(p[1], "ab", 2), 2);
        ck_assert_int_eq(write(p[1], "cdef", 4), 4);
        close(p[1]);
        _cleanup_free_ char *head = NULL;
        size_t len = 0;
        ck_assert_int_eq(read_full_fd(p[0], 3, READ_PREFIX, &head, &len, NULL), 0);
        close(p[0]);
        ck_assert_str_eq(head, "abc");
        ck_assert_uint_eq(len, 3);
}
END_TEST

START_TEST(read_full_fd_reads_a_pipe_to_its_end_past_any_one_read)
{
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        static char big[100000];
        memset(big, 'x', sizeof big);
        pid_t pid = fork();
        if (pid == 0) {
                close(p[0]);
                _exit(loop_write(p[1], big, sizeof big) == 0 ? 0 : 1);
        }
        close(p[1]);
        char *out = NULL;
        size_t len = 0;
        ck_assert_int_eq(read_full_fd(p[0], sizeof big, 0, &out, &len, NULL), 0);
        ck_assert_uint_eq(len, sizeof big);
        ck_assert(memcmp(out, big, len) == 0);
        free(out);
        close(p[0]);
        int st;
        ck_assert_int_eq(wait_child(pid, &st, 0), pid);
        ck_assert_int_eq(exit_status_of(st), 0);
}
END_TEST

START_TEST(the_atomic_writer_keeps_the_mode_when_asked_and_replaces_a_link_without_following_it)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        write_in(dir, "kept", "old", 0640);
        write_in(dir, "target", "target", 0600);
        _cleanup_free_ char *link = xasprintf("%s/link", dir), *target = xasprintf("%s/target", dir);
        ck_assert_int_eq(symlink(target, link), 0);
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        ck_assert_int_eq(write_file_atomic_at(dfd, "kept", "new", 3, 0600, WRITE_KEEP_MODE | WRITE_SYNC_FILE), 0);
        _cleanup_free_ char *kept = xasprintf("%s/kept", dir);
        ck_assert_uint_eq(mode_of(kept), 0640);
        _cleanup_free_ char *text = read_text(kept);
        ck_assert_str_eq(text, "new");

        ck_assert_int_eq(write_file_atomic_at(dfd, "fresh", "x", 1, 0604, WRITE_KEEP_MODE), 0);
        _cleanup_free_ char *fresh = xasprintf("%s/fresh", dir);
        ck_assert_uint_eq(mode_of(fresh), 0604);

        ck_assert_int_eq(write_file_atomic_at(dfd, "link", "replaced", 8, 0600, WRITE_SYNC_FILE | WRITE_SYNC_DIR), 0);
        struct stat st;
        ck_assert_int_eq(lstat(link, &st), 0);
        ck_assert(S_ISREG(st.st_mode));
        _cleanup_free_ char *still = read_text(target);
        ck_assert_str_eq(still, "target");
}
END_TEST

START_TEST(the_atomic_writer_gives_the_file_to_the_folders_owner_when_asked)
{
        if (skip_unless_root(__func__, "needs root"))
                return;
        struct passwd *nobody = getpwnam("nobody");
        ck_assert_ptr_nonnull(nobody);
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        ck_assert_int_eq(chown(dir, nobody->pw_uid, nobody->pw_gid), 0);
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_eq(write_file_atomic_at(dfd, "theirs", "x", 1, 0600, WRITE_DIR_OWNER), 0);
        ck_assert_int_eq(write_file_atomic_at(dfd, "ours", "x", 1, 0600, 0), 0);
        struct stat st;
        ck_assert_int_eq(fstatat(dfd, "theirs", &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_uint_eq(st.st_uid, nobody->pw_uid);
        ck_assert_int_eq(fstatat(dfd, "ours", &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_uint_eq(st.st_uid, 0);
}
END_TEST

START_TEST(loop_read_reads_until_the_count_or_the_end)
{
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        ck_assert_int_eq(loop_write(p[1], "abc", 3), 0);
        ck_assert_int_eq(loop_write(p[1], "def", 3), 0);
        close(p[1]);
        char buf[16] = { 0 };
        ck_assert_int_eq(loop_read(p[0], buf, 4), 4);
        ck_assert_int_eq(loop_read(p[0], buf + 4, 10), 2);
        ck_assert_str_eq(buf, "abcdef");
        ck_assert_int_eq(loop_read(p[0], buf, 10), 0);
        close(p[0]);
        ck_assert_int_eq(loop_write(-1, "x", 1), -EBADF);
        ck_assert_int_eq(wait_child(getpid(), NULL, WNOHANG), -ECHILD);
}
END_TEST

TB_SUITE("fileio", 0)
{
        tcase_add_test(tc, read_beneath_follows_no_link_on_the_way_and_never_leaves_the_folder);
        tcase_add_test(tc, read_regular_refuses_folders_and_fifos_and_a_big_file_before_reading_it);
        tcase_add_test(tc, read_prefix_reads_the_first_bytes_and_refuses_no_longer_file);
        tcase_add_test(tc, read_full_fd_reads_a_pipe_to_its_end_past_any_one_read);
        tcase_add_test(tc, the_atomic_writer_keeps_the_mode_when_asked_and_replaces_a_link_without_following_it);
        tcase_add_test(tc, the_atomic_writer_gives_the_file_to_the_folders_owner_when_asked);
        tcase_add_test(tc, loop_read_reads_until_the_count_or_the_end);
}
