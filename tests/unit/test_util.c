/* The core's shared helpers: the one escaping function, the secure reader,
 * the growth macro, the environment read once. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdint.h>
#include <sys/wait.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/cpus.h"
#include "base/env.h"
#include "base/io.h"
#include "base/log.h"
#include "tb_test.h"
#include "base/sha256.h"
#include "base/util.h"

START_TEST(str_escape_shows_controls_escape_sequences_and_broken_utf8_and_keeps_text)
{
        static const struct text_case cases[] = {
                { "plain 'path'/x y", "plain 'path'/x y" },
                { "a\nb\tc\r", "a\\x0ab\\x09c\\x0d" },
                { "\033[2J\033]0;title\007", "\\x1b[2J\\x1b]0;title\\x07" },
                { "del\x7f", "del\\x7f" },
                { "c1 csi \xc2\x9b" "31m", "c1 csi \\xc2\\x9b31m" },
                { "lone \x9b byte", "lone \\x9b byte" },
                { "cut \xe2\x82", "cut \\xe2\\x82" },
                { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82" },
                { "overlong \xc0\xaf", "overlong \\xc0\\xaf" },
                { "", "" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                _cleanup_free_ char *got = str_escape(cases[i].in);
                ck_assert_msg(strcmp(got, cases[i].want) == 0, "case %zu: '%s', not '%s'", i, got, cases[i].want);
        }
}
END_TEST

START_TEST(read_file_secure_reads_a_regular_file_whole_and_refuses_links_fifos_folders_and_big_files)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *file = xasprintf("%s/f", dir), *link = xasprintf("%s/l", dir);
        _cleanup_free_ char *fifo = xasprintf("%s/p", dir);
        int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_eq(write(fd, "a\0b\n", 4), 4);
        close(fd);
        ck_assert_int_eq(symlink(file, link), 0);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);

        char *buf = NULL;
        size_t len = 0;
        struct stat st;
        ck_assert_int_eq(read_file_secure(file, 4, &buf, &len, &st), 0);
        ck_assert_uint_eq(len, 4);
        ck_assert(memcmp(buf, "a\0b\n", 5) == 0);
        ck_assert(S_ISREG(st.st_mode));
        erase_and_free(buf);
        ck_assert_int_eq(read_file_secure(file, 3, &buf, &len, NULL), -EFBIG);
        ck_assert_int_eq(read_file_secure(link, 100, &buf, &len, NULL), -ELOOP);
        ck_assert_int_eq(read_file_secure(fifo, 100, &buf, &len, NULL), -EINVAL);
        ck_assert_int_eq(read_file_secure(dir, 100, &buf, &len, NULL), -EISDIR);
        _cleanup_free_ char *none = xasprintf("%s/none", dir);
        ck_assert_int_eq(read_file_secure(none, 100, &buf, &len, NULL), -ENOENT);
        erase_and_free(NULL);
}
END_TEST

START_TEST(read_file_at_reads_a_regular_file_in_a_folder_and_refuses_links_fifos_and_big_files)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        write_in(dir, "f", "one\ntwo\n", 0640);
        _cleanup_free_ char *file = xasprintf("%s/f", dir), *link = xasprintf("%s/l", dir);
        _cleanup_free_ char *fifo = xasprintf("%s/p", dir);
        ck_assert_int_eq(symlink(file, link), 0);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dfd, 0);

        size_t len = 0;
        struct stat st;
        _cleanup_free_ char *text = read_file_at(dfd, "f", 8, &len, &st);
        ck_assert_str_eq(text, "one\ntwo\n");
        ck_assert_uint_eq(len, 8);
        ck_assert_uint_eq(st.st_mode & 07777, 0640);
        errno = 0;
        ck_assert_ptr_null(read_file_at(dfd, "f", 7, NULL, NULL));
        ck_assert_int_eq(errno, EFBIG);
        ck_assert_ptr_null(read_file_at(dfd, "l", 100, NULL, NULL));
        ck_assert_int_eq(errno, ELOOP);
        ck_assert_ptr_null(read_file_at(dfd, "p", 100, NULL, NULL));
        ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* A path's folder, whatever the path: a name without a folder is in ".",
 * never in "/" (a plan named "plan.jsonl" keeps its files beside it). */
START_TEST(path_dirname_gives_the_folder_of_absolute_relative_and_bare_names)
{
        static const char *const cases[][2] = {
                { "/a/b", "/a" },       { "/a", "/" },    { "/", "/" },          { "/a/b/", "/a" },
                { "//a", "/" },         { "/a//b", "/a" }, { "plan.jsonl", "." }, { "plan.jsonl/", "." },
                { "exp/plan.jsonl", "exp" }, { "a/b/c", "a/b" }, { "./p", "." },   { "", "." },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                _cleanup_free_ char *d = path_dirname(cases[i][0]);
                ck_assert_msg(strcmp(d, cases[i][1]) == 0, "path_dirname('%s') is '%s', not '%s'", cases[i][0], d,
                              cases[i][1]);
        }
}
END_TEST

/* The joins print what "%s/%s" would; xasprintf as printf, short or long
 * (a string past its stack buffer is formatted again, whole). */
START_TEST(paths_are_joined_and_strings_formatted_as_printf_would)
{
        const char *const pairs[][3] = { { "/a", "b", "/a/b" }, { "/", "a", "//a" }, { "", "a", "/a" },
                                         { "a", "", "a/" } };
        for (size_t i = 0; i < TB_ARRAY_SIZE(pairs); i++) {
                _cleanup_free_ char *j = path_join(pairs[i][0], pairs[i][1]);
                ck_assert_str_eq(j, pairs[i][2]);
        }
        _cleanup_free_ char *n = path_join_n("/usr/bin:/bin", 8, "git"), *d = xstrndup("abcdef", 3);
        ck_assert_str_eq(n, "/usr/bin/git");
        ck_assert_str_eq(d, "abc");
        _cleanup_free_ char *whole = xstrndup("ab", 10);
        ck_assert_str_eq(whole, "ab");
        for (size_t len = 250; len < 262; len++) { /* around the stack buffer's 256 bytes */
                _cleanup_free_ char *long_name = xmalloc(len + 1);
                memset(long_name, 'x', len);
                long_name[len] = '\0';
                _cleanup_free_ char *f = xasprintf("%s/%d", long_name, 42);
                ck_assert_uint_eq(strlen(f), len + 3);
                ck_assert(strncmp(f, long_name, len) == 0 && strcmp(f + len, "/42") == 0);
        }
        _cleanup_free_ char *big = xmalloc(5001);
        memset(big, 'y', 5000);
        big[5000] = '\0';
        _cleanup_free_ char *f = xasprintf("<%s>", big);
        ck_assert_uint_eq(strlen(f), 5002);
        ck_assert(f[0] == '<' && f[5001] == '>' && f[2500] == 'y');
}
END_TEST

/* A --dry-run word: as it is when a shell would read it so, else in
 * single quotes; either way /bin/sh reads back the very bytes. */
START_TEST(a_word_is_quoted_for_the_shell_only_when_it_needs_it)
{
        const char *const plain[] = { "bwrap", "--ro-bind", "/usr/lib/x86_64-linux-gnu", "HOME=/home/u",
                                      "a,b+c@d%e:f", "Z9_" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(plain); i++) {
                struct strbuf sb = { 0 };
                strbuf_add_quoted(&sb, plain[i]);
                ck_assert_str_eq(sb.s, plain[i]);
                free(sb.s);
        }
        const char *const quoted[] = { "", "a b", "it's", "$HOME", "a;b", "*", "~", "caf\xc3\xa9", "x\ty",
                                       "'", "a\nb", "!x", "[a]", "{a,b}", "a\\b", "#c" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(quoted); i++) {
                struct strbuf sb = { 0 };
                strbuf_add_quoted(&sb, quoted[i]);
                ck_assert_msg(sb.s[0] == '\'', "'%s' came out unquoted: %s", quoted[i], sb.s);
                _cleanup_free_ char *script = xasprintf("printf %%s %s", sb.s);
                free(sb.s);
                FILE *f = popen(script, "r");
                ck_assert_ptr_nonnull(f);
                char back[64] = { 0 };
                size_t n = fread(back, 1, sizeof back - 1, f);
                ck_assert_int_eq(pclose(f), 0);
                ck_assert_msg(n == strlen(quoted[i]) && memcmp(back, quoted[i], n) == 0, "'%s' read back as '%s'",
                              quoted[i], back);
        }
}
END_TEST

/* Fork `n` children that spin (as many as CPUs); true once the kernel
 * counts them all running, this process too (/proc/loadavg). */
static bool spin_every_cpu(pid_t *spin, int n)
{
        for (int i = 0; i < n; i++) {
                spin[i] = fork();
                ck_assert_int_ge(spin[i], 0);
                if (spin[i] == 0)
                        for (;;) {
                        }
        }
        int running = 0;
        for (int tries = 0; tries < 500 && running <= n; tries++) {
                _cleanup_free_ char *load = read_text("/proc/loadavg");
                const char *p = load;
                for (int field = 0; field < 3 && p; field++)
                        p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
                running = p ? atoi(p) : 0;
                if (running <= n)
                        usleep(2000);
        }
        return running > n;
}

/* Let this process use only the CPU it runs on. */
static void pin_to_this_cpu(void)
{
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu(), &one);
        ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
}

static void stop_spinning(const pid_t *spin, int n)
{
        for (int i = 0; i < n; i++) {
                kill(spin[i], SIGKILL);
                waitpid(spin[i], NULL, 0);
        }
}

/* Another CPU looks idle only when fewer tasks run than the CPUs this
 * process may use: never with one CPU, never with every CPU busy (as many
 * spinning children as CPUs); when it says one is, `others` is every CPU
 * but this thread's. */
START_TEST(another_cpu_is_idle_only_when_fewer_tasks_run_than_cpus)
{
        cpu_set_t all;
        ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
        int n = CPU_COUNT(&all);
        cpu_set_t got_all, got_others;
        if (cpus_other_idle(&got_all, &got_others)) {
                ck_assert(CPU_EQUAL(&got_all, &all));
                ck_assert_int_eq(CPU_COUNT(&got_others), n - 1);
                ck_assert(CPU_ISSET(sched_getcpu(), &got_all));
        }
        pin_to_this_cpu();
        ck_assert(!cpus_other_idle(&got_all, &got_others));
        ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);
        if (n < 2)
                return;
        pid_t spin[CPU_SETSIZE];
        bool counted = spin_every_cpu(spin, n);
        bool idle = counted ? cpus_other_idle(&got_all, &got_others) : true;
        stop_spinning(spin, n);
        ck_assert_msg(counted, "the kernel never counted %d spinning children running", n);
        ck_assert(!idle);
}
END_TEST

/* Another CPU is free for a helper whenever the process may use two or
 * more, even with every CPU busy this moment; once told its CPUs are busy
 * (TRIALBOX_CPUS_BUSY=1), only when one looks idle, as cpus_other_idle. */
START_TEST(another_cpu_is_free_whatever_runs_unless_told_the_cpus_are_busy)
{
        cpu_set_t all, got_all, got_others;
        ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
        int n = CPU_COUNT(&all);
        ck_assert_int_eq(cpus_count(), n);
        cpus_set_busy(false);
        ck_assert(cpus_other_free(&got_all, &got_others) == (n >= 2));
        pin_to_this_cpu();
        ck_assert_int_eq(cpus_count(), 1);
        ck_assert(!cpus_other_free(&got_all, &got_others));
        ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);
        if (n < 2)
                return;
        pid_t spin[CPU_SETSIZE];
        bool counted = spin_every_cpu(spin, n);
        bool free_when_not_told = cpus_other_free(&got_all, &got_others);
        bool all_right = CPU_EQUAL(&got_all, &all) && CPU_COUNT(&got_others) == n - 1;
        cpus_set_busy(true);
        bool free_when_told = cpus_other_free(&got_all, &got_others);
        cpus_set_busy(false);
        stop_spinning(spin, n);
        ck_assert_msg(counted, "the kernel never counted %d spinning children running", n);
        ck_assert(free_when_not_told && all_right);
        ck_assert(!free_when_told);
}
END_TEST

/* PATH as execvp reads it: the first folder with an executable regular
 * file of that name; empty and relative entries skipped; a folder named
 * twice answers as it did the first time. */
START_TEST(a_program_is_found_on_path_in_its_first_folder_whatever_path_repeats)
{
        _cleanup_free_ char *dir = tmpdir_new();
        _cleanup_free_ char *a = path_in(dir, "a"), *b = path_in(dir, "b"), *c = path_in(dir, "c");
        ck_assert_int_eq(mkdir(a, 0755), 0);
        ck_assert_int_eq(mkdir(b, 0755), 0);
        ck_assert_int_eq(mkdir(c, 0755), 0);
        _cleanup_free_ char *a_tool = path_in(a, "tool"), *b_plain = path_in(b, "tool"), *c_tool = path_in(c, "tool");
        _cleanup_free_ char *c_other = path_in(c, "other"), *b_dir = path_in(b, "other");
        write_text(a_tool, "#!/bin/sh\n", 0755);
        write_text(b_plain, "not executable", 0644);
        write_text(c_tool, "#!/bin/sh\n", 0755);
        write_text(c_other, "#!/bin/sh\n", 0755);
        ck_assert_int_eq(mkdir(b_dir, 0755), 0); /* a folder is not a program */
        _cleanup_free_ char *path = xasprintf("%s:%s::rel:%s:%s:%s", b, b, b, a, c);
        _cleanup_free_ char *found = find_on_path("tool", path);
        ck_assert_str_eq(found, a_tool);
        _cleanup_free_ char *other = find_on_path("other", path);
        ck_assert_str_eq(other, c_other);
        _cleanup_free_ char *again = xasprintf("%s:%s:%s", c, a, c);
        _cleanup_free_ char *first = find_on_path("tool", again);
        ck_assert_str_eq(first, c_tool);
        ck_assert_ptr_null(find_on_path("missing", path));
        ck_assert_ptr_null(find_on_path("tool", ""));
        tmpdir_remove(dir);
}
END_TEST

/* The memo answers `p` as realpath(3) does: the same path, or none and the
 * same errno. */
static void assert_memo_as_realpath(struct path_memo *memo, const char *p)
{
        errno = 0;
        char *want = realpath(p, NULL);
        int want_err = want ? 0 : errno;
        errno = 0;
        char *got = path_memo_realpath(memo, p);
        int got_err = got ? 0 : errno;
        ck_assert_msg((!want && !got) || (want && got && strcmp(want, got) == 0),
                      "'%s': realpath says '%s', the memo '%s'", p, want ? want : "(none)", got ? got : "(none)");
        ck_assert_int_eq(got_err, want_err);
        free(want);
        free(got);
}

START_TEST(the_realpath_memo_answers_as_realpath_each_time_asked)
{
        _cleanup_free_ char *dir = tmpdir_new();
        _cleanup_free_ char *file = path_in(dir, "d/f"), *d = path_in(dir, "d");
        ck_assert_int_eq(mkdir(d, 0755), 0);
        write_text(file, "x", 0644);
        _cleanup_free_ char *link = path_in(dir, "l"), *loop = path_in(dir, "loop");
        ck_assert_int_eq(symlink("d/f", link), 0);
        ck_assert_int_eq(symlink("loop", loop), 0);
        /* Links to a folder (relative, absolute, through another link,
         * with ".." in them), and one to nothing. */
        _cleanup_free_ char *ld = path_in(dir, "ld"), *abs = path_in(dir, "abs"), *l2 = path_in(dir, "l2");
        _cleanup_free_ char *up = path_in(dir, "d/up"), *dangling = path_in(dir, "dangling");
        ck_assert_int_eq(symlink("d", ld), 0);
        ck_assert_int_eq(symlink(d, abs), 0);
        ck_assert_int_eq(symlink("ld", l2), 0);
        ck_assert_int_eq(symlink("../ld/./f", up), 0);
        ck_assert_int_eq(symlink("nowhere/x", dangling), 0);
        const char *const rel[] = { "d/f", "l", "d", "d/", "d/./f", "d/../d/f", "l/", "missing", "d/missing/x",
                                    "d/f/x", "loop", "", "ld", "ld/f", "ld/../d/f", "ld/./f", "abs/f", "abs/../l",
                                    "l2/f", "l2/", "d/up", "d/up/", "d/f/.", "d/f/..", "l/..", "dangling",
                                    "loop/x", "d//f", "ld/missing" };
        struct path_memo memo = { 0 };
        for (int round = 0; round < 2; round++) /* the second time from the memo */
                for (size_t i = 0; i < TB_ARRAY_SIZE(rel); i++) {
                        _cleanup_free_ char *p = rel[i][0] ? path_in(dir, rel[i]) : xstrdup("");
                        assert_memo_as_realpath(&memo, p);
                }
        ck_assert_uint_eq(memo.n, TB_ARRAY_SIZE(rel)); /* each asked of the file system once */
        /* Enough paths that the memo's index grows several times over. */
        for (int round = 0; round < 2; round++)
                for (int i = 0; i < 300; i++) {
                        _cleanup_free_ char *p = xasprintf("%s/%s%d", dir, i % 3 ? "d/n" : "ld/", i);
                        if (round == 0 && i % 5 == 0)
                                write_text(p, "x", 0644);
                        errno = 0;
                        char *want = realpath(p, NULL);
                        int want_err = want ? 0 : errno;
                        char *got = path_memo_realpath(&memo, p);
                        ck_assert_int_eq(got ? 0 : errno, want_err);
                        ck_assert((!want && !got) || (want && got && strcmp(want, got) == 0));
                        free(want);
                        free(got);
                }
        ck_assert_uint_eq(memo.n, TB_ARRAY_SIZE(rel) + 300);
        path_memo_done(&memo);
        ck_assert_uint_eq(memo.n, 0);
        tmpdir_remove(dir);
}
END_TEST

/* path_memo_list(): with the folders listed first, the memo answers as
 * realpath(3) for names there, links, names not there and paths through
 * them; what it answers of a listed folder comes from the listing (a name
 * made after it is not there for this memo), but for a folder too big to
 * list, which is asked name by name as before. */
START_TEST(a_listed_folder_answers_as_realpath_from_its_listing)
{
        _cleanup_free_ char *dir = tmpdir_new();
        _cleanup_free_ char *d = path_in(dir, "d"), *file = path_in(dir, "d/f");
        ck_assert_int_eq(mkdir(d, 0755), 0);
        write_text(file, "x", 0644);
        _cleanup_free_ char *link = path_in(dir, "l"), *ld = path_in(dir, "ld"), *dangling = path_in(dir, "dangling");
        ck_assert_int_eq(symlink("d/f", link), 0);
        ck_assert_int_eq(symlink("d", ld), 0);
        ck_assert_int_eq(symlink("nowhere/x", dangling), 0);
        const char *const rel[] = { "d",           "d/f",   "l",          "ld",       "ld/f", "missing", "d/missing",
                                    "d/missing/x", "d/f/x", "ld/missing", "dangling", "l/",   "d/../l",  "ld/../d/f" };
        struct path_memo memo = { 0 };
        path_memo_list(&memo, dir);
        _cleanup_free_ char *via_link = path_in(dir, "ld");
        path_memo_list(&memo, via_link); /* d, through its link */
        ck_assert_uint_eq(memo.n_listed, 2);
        for (int round = 0; round < 2; round++)
                for (size_t i = 0; i < TB_ARRAY_SIZE(rel); i++) {
                        _cleanup_free_ char *p = path_in(dir, rel[i]);
                        assert_memo_as_realpath(&memo, p);
                }
        /* Made after the listing: this memo's pass does not see it. */
        _cleanup_free_ char *late = path_in(dir, "d/late");
        write_text(late, "x", 0644);
        errno = 0;
        ck_assert_ptr_null(path_memo_realpath(&memo, late));
        ck_assert_int_eq(errno, ENOENT);
        path_memo_done(&memo);
        ck_assert_uint_eq(memo.n_listed, 0);

        /* A folder of more than PATH_MEMO_LIST_MAX entries is not listed. */
        _cleanup_free_ char *big = path_in(dir, "big");
        ck_assert_int_eq(mkdir(big, 0755), 0);
        for (int i = 0; i <= PATH_MEMO_LIST_MAX; i++) {
                _cleanup_free_ char *p = xasprintf("%s/%d", big, i);
                write_text(p, "", 0644);
        }
        struct path_memo other = { 0 };
        path_memo_list(&other, big);
        ck_assert_uint_eq(other.n_listed, 0);
        _cleanup_free_ char *later = xasprintf("%s/later", big);
        write_text(later, "x", 0644);
        char *found = path_memo_realpath(&other, later);
        ck_assert_str_eq(found, later);
        free(found);
        path_memo_done(&other);
        tmpdir_remove(dir);
}
END_TEST

/* close_fds_except(): in a child with fds 3 to 12 open (and one high
 * above them), keeping 9, 4 and -1 (any order, a negative one ignored)
 * from 4 on leaves 3 (below `from`), 4 and 9, and closes the others. Exits
 * 0 when so. */
static void __attribute__((noreturn)) closer(void)
{
        for (int fd = 3; fd <= 12; fd++)
                if (dup2(STDERR_FILENO, fd) != fd)
                        _exit(10);
        if (dup2(STDERR_FILENO, 300) != 300)
                _exit(11);
        const int keep[] = { 9, 4, -1 };
        close_fds_except(4, keep, sizeof keep / sizeof keep[0]);
        for (int fd = 3; fd <= 12; fd++) {
                bool open = fcntl(fd, F_GETFD) >= 0, want = fd == 3 || fd == 4 || fd == 9;
                if (open != want)
                        _exit(20 + fd);
        }
        _exit(fcntl(300, F_GETFD) < 0 ? 0 : 12);
}

START_TEST(close_fds_except_closes_all_but_the_fds_kept_and_those_below_from)
{
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                closer();
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with %d (20+N: fd N wrong)", st);
}
END_TEST

/* In a process whose stderr is a pipe nobody reads (so the logger holds
 * what it cannot write) and whose verbosity is 0: the body of the test. A
 * fork of it that goes on without an exec (as `batch` runs a Trial) moves
 * its stderr to `file`, calls log_forked(), logs and ends with log_end():
 * the file holds the child's lines alone (with the default verbosity),
 * nothing the parent held. Exits 0 when so. */
static void __attribute__((noreturn)) forked_logger(const char *file)
{
        int p[2];
        if (pipe(p) < 0 || dup2(p[1], STDERR_FILENO) < 0)
                _exit(10);
        (void)fcntl(p[1], F_SETPIPE_SZ, 4096);
        log_set_verbosity(0);
        for (int i = 0; i < 200; i++) /* far more than the pipe takes */
                log_error("the parent's line %d, held for a reader that never comes", i);
        pid_t c = fork();
        if (c == 0) {
                log_forked();
                int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
                if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
                        _exit(11);
                close(fd);
                close(p[0]);
                close(p[1]);
                log_warn("the child's warning");
                log_error("the child's error");
                log_end();
                _exit(0);
        }
        int st;
        if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st))
                _exit(12);
        _exit(WEXITSTATUS(st));
}

START_TEST(a_fork_that_goes_on_without_an_exec_logs_none_of_what_its_parent_held)
{
        char dir[] = "/tmp/tb-log-XXXXXX", file[64];
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(file, sizeof file, "%s/stderr", dir); /* no heap: the forks _exit (valgrind's leak check) */
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                forked_logger(file);
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the logger process ended with %d", st);
        _cleanup_free_ char *got = read_text(file);
        ck_assert_str_eq(got, "trialbox: warning: the child's warning\ntrialbox: the child's error\n");
        unlink(file);
        rmdir(dir);
}
END_TEST

/* SHA-256 against FIPS 180-4's examples, and across its block edges. */
START_TEST(sha256_gives_the_standard_digests)
{
        static const struct text_case cases[] = {
                { "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
                { "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
                { "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
                { "The quick brown fox jumps over the lazy dog",
                  "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592" },
        };
        char hex[SHA256_HEX_LEN + 1];
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                sha256_hex(cases[i].in, strlen(cases[i].in), hex);
                ck_assert_msg(strcmp(hex, cases[i].want) == 0, "sha256('%s') is %s", cases[i].in, hex);
        }
        /* A million 'a's: many blocks. */
        char *a = xmalloc(1000000);
        memset(a, 'a', 1000000);
        sha256_hex(a, 1000000, hex);
        ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
        free(a);
}
END_TEST

START_TEST(greedy_realloc_makes_room_for_what_is_asked_and_keeps_the_contents)
{
        int *v = NULL;
        size_t cap = 0;
        for (int i = 0; i < 1000; i++) {
                GREEDY_REALLOC(v, cap, (size_t)i + 1);
                ck_assert_uint_ge(cap, (size_t)i + 1);
                v[i] = i;
        }
        for (int i = 0; i < 1000; i++)
                ck_assert_int_eq(v[i], i);
        size_t before = cap;
        GREEDY_REALLOC(v, cap, 10);
        ck_assert_uint_eq(cap, before);
        free(v);
}
END_TEST

START_TEST(an_arena_gives_zeroed_aligned_room_that_keeps_its_contents_until_done)
{
        struct arena a = { 0 };
        char *s[3000];
        long long *n[3000];
        for (int i = 0; i < 3000; i++) {
                _cleanup_free_ char *text = xasprintf("line %d", i);
                s[i] = arena_strdup(&a, text);
                n[i] = arena_alloc(&a, 3 * sizeof(long long), _Alignof(long long));
                ck_assert_uint_eq((uintptr_t)n[i] % _Alignof(long long), 0);
                ck_assert(n[i][0] == 0 && n[i][1] == 0 && n[i][2] == 0);
                n[i][0] = n[i][2] = i;
        }
        /* Larger than a block's share: a block of its own, the others kept. */
        char *big = arena_alloc(&a, 100000, 1);
        for (size_t i = 0; i < 100000; i++)
                ck_assert_int_eq(big[i], 0);
        memset(big, 'x', 100000);
        char *after = arena_strdup(&a, "after the big one");
        for (int i = 0; i < 3000; i++) {
                _cleanup_free_ char *want = xasprintf("line %d", i);
                ck_assert_str_eq(s[i], want);
                ck_assert(n[i][0] == i && n[i][1] == 0 && n[i][2] == i);
        }
        ck_assert_str_eq(after, "after the big one");
        ck_assert_str_eq(arena_strdup(&a, ""), "");
        arena_done(&a);
        ck_assert_ptr_null(a.blocks);
        /* Empty, and reusable. */
        ck_assert_str_eq(arena_strdup(&a, "again"), "again");
        arena_done(&a);
        arena_done(&a);
}
END_TEST

/* One home, however HOME is set: `check` and `run` look for logins in the same one. */
START_TEST(the_environment_has_one_home_home_when_absolute_else_the_password_databases)
{
        struct passwd *pw = getpwuid(getuid());
        ck_assert_ptr_nonnull(pw);
        _cleanup_free_ char *pw_home = xstrdup(pw->pw_dir);
        _cleanup_free_ char *old = getenv("HOME") ? xstrdup(getenv("HOME")) : NULL;
        static const char *const homes[] = { "/some/home", NULL, "", "relative/home" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(homes); i++) {
                if (homes[i])
                        setenv("HOME", homes[i], 1);
                else
                        unsetenv("HOME");
                struct tb_env env;
                tb_env_init(&env);
                ck_assert_str_eq(env.home, i == 0 ? "/some/home" : pw_home);
                tb_env_done(&env);
        }
        if (old)
                setenv("HOME", old, 1);
        setenv("PATH", "", 1);
        setenv("TB_TEST_VAR", "x=y", 1);
        struct tb_env env;
        tb_env_init(&env);
        ck_assert_str_eq(env.path, TB_DEFAULT_PATH);
        ck_assert_str_eq(tb_env_get(&env, "TB_TEST_VAR"), "x=y");
        ck_assert_ptr_null(tb_env_get(&env, "TB_TEST"));
        tb_env_done(&env);
}
END_TEST

TB_SUITE("util", 0)
{
        tcase_add_test(tc, str_escape_shows_controls_escape_sequences_and_broken_utf8_and_keeps_text);
        tcase_add_test(tc, read_file_secure_reads_a_regular_file_whole_and_refuses_links_fifos_folders_and_big_files);
        tcase_add_test(tc, read_file_at_reads_a_regular_file_in_a_folder_and_refuses_links_fifos_and_big_files);
        tcase_add_test(tc, greedy_realloc_makes_room_for_what_is_asked_and_keeps_the_contents);
        tcase_add_test(tc, an_arena_gives_zeroed_aligned_room_that_keeps_its_contents_until_done);
        tcase_add_test(tc, path_dirname_gives_the_folder_of_absolute_relative_and_bare_names);
        tcase_add_test(tc, paths_are_joined_and_strings_formatted_as_printf_would);
        tcase_add_test(tc, a_word_is_quoted_for_the_shell_only_when_it_needs_it);
        tcase_add_test(tc, another_cpu_is_idle_only_when_fewer_tasks_run_than_cpus);
        tcase_add_test(tc, another_cpu_is_free_whatever_runs_unless_told_the_cpus_are_busy);
        tcase_add_test(tc, a_program_is_found_on_path_in_its_first_folder_whatever_path_repeats);
        tcase_add_test(tc, the_realpath_memo_answers_as_realpath_each_time_asked);
        tcase_add_test(tc, a_listed_folder_answers_as_realpath_from_its_listing);
        tcase_add_test(tc, sha256_gives_the_standard_digests);
        tcase_add_test(tc, a_fork_that_goes_on_without_an_exec_logs_none_of_what_its_parent_held);
        tcase_add_test(tc, close_fds_except_closes_all_but_the_fds_kept_and_those_below_from);
        tcase_add_test(tc, the_environment_has_one_home_home_when_absolute_else_the_password_databases);
}
