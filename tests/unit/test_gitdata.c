/* What the repository guard takes for git's data (gitguard/gitdata.h), and
 * the tree walker it reads hostile trees with (base/tree.h): names and
 * values git accepts, and garbage it must refuse; a chain of folders far
 * deeper than the fds the walk may hold; modes a session changed. */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tb_test.h"
#include "base/tree.h"
#include "base/util.h"
#include "gitguard/gitdata.h"

static const char oid[] = "0123456789abcdef0123456789abcdef01234567";

START_TEST(refnames_are_taken_as_git_check_ref_format_takes_them)
{
        static const struct {
                const char *name;
                bool ok;
        } rows[] = {
                { "refs/heads/main", true },        { "refs/heads/feature/x-1", true },
                { "refs/tags/v1.0", true },         { "refs/remotes/origin/HEAD", true },
                { "refs/heads/a.lock", false },     { "refs/heads/../x", false },
                { "refs/heads/.hidden", false },    { "refs/heads/a..b", false },
                { "refs/heads/a b", false },        { "refs/heads/a~1", false },
                { "refs/heads/a^", false },         { "refs/heads/a:b", false },
                { "refs/heads/a?", false },         { "refs/heads/a*", false },
                { "refs/heads/a[", false },         { "refs/heads/a\\b", false },
                { "refs/heads/a@{1}", false },      { "refs/heads/", false },
                { "refs/heads/x.", false },         { "refs//x", false },
                { "heads/main", false },            { "refs/heads/\x01", false },
                { "", false },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(rows); i++)
                ck_assert_msg(gitdata_refname_valid(rows[i].name) == rows[i].ok, "'%s' should be %s", rows[i].name,
                              rows[i].ok ? "valid" : "refused");
}
END_TEST

START_TEST(ref_values_are_an_object_id_or_a_symbolic_ref)
{
        _cleanup_free_ char *plain = xasprintf("%s\n", oid);
        _cleanup_free_ char *sha256 = xasprintf("%s%s\n", oid, "0123456789abcdef01234567");
        _cleanup_free_ char *two = xasprintf("%s\n%s\n", oid, oid);
        _cleanup_free_ char *no_nl = xstrdup(oid);
        const struct {
                const char *v;
                bool ok;
        } rows[] = {
                { plain, true },  { sha256, true }, { "ref: refs/heads/main\n", true },
                { two, false },   { no_nl, false }, { "ref: refs/heads/../../config\n", false },
                { "ref: /etc/passwd\n", false },    { "ABCDEF0123456789abcdef0123456789abcdef01\n", false },
                { "garbage\n", false },             { "\n", false },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(rows); i++)
                ck_assert_msg(gitdata_ref_value_valid(rows[i].v, strlen(rows[i].v)) == rows[i].ok, "'%s'", rows[i].v);
}
END_TEST

START_TEST(packed_refs_are_whole_lines_of_refs_and_peeled_tags)
{
        _cleanup_free_ char *good = xasprintf("# pack-refs with: peeled fully-peeled sorted \n%s refs/heads/main\n"
                                              "%s refs/tags/v1\n^%s\n",
                                              oid, oid, oid);
        ck_assert(gitdata_packed_refs_valid(good, strlen(good)));
        _cleanup_free_ char *peel_first = xasprintf("^%s\n", oid);
        _cleanup_free_ char *bad_name = xasprintf("%s refs/heads/a..b\n", oid);
        _cleanup_free_ char *header_late = xasprintf("%s refs/heads/a\n# pack-refs with: peeled\n", oid);
        const char *bad[] = { peel_first, bad_name, header_late, "garbage\n", "\0x" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++)
                ck_assert_msg(!gitdata_packed_refs_valid(bad[i], i == 4 ? 2 : strlen(bad[i])), "accepted: %s", bad[i]);
        ck_assert(gitdata_packed_refs_valid("", 0));
}
END_TEST

START_TEST(objects_and_entries_of_a_git_folder_are_sorted_into_data_and_control)
{
        ck_assert(gitdata_object_name_valid(NULL, "ab", true));
        ck_assert(gitdata_object_name_valid(NULL, "pack", true));
        ck_assert(!gitdata_object_name_valid(NULL, "tmp_obj_x", false));
        ck_assert(gitdata_object_name_valid("ab", "cdef0123456789abcdef0123456789abcdef01", false));
        ck_assert(!gitdata_object_name_valid("ab", "cdef", false));
        _cleanup_free_ char *pack = xasprintf("pack-%s.pack", oid);
        _cleanup_free_ char *evil = xasprintf("pack-%s.sh", oid);
        ck_assert(gitdata_object_name_valid("pack", pack, false));
        ck_assert(!gitdata_object_name_valid("pack", evil, false));
        ck_assert(!gitdata_object_name_valid("info", "alternates", false));
        ck_assert(gitdata_object_name_valid("info", "packs", false));
        ck_assert_int_eq(gitdata_kind("config", false), GITDATA_CONTROL);
        ck_assert_int_eq(gitdata_kind("hooks", false), GITDATA_CONTROL);
        ck_assert_int_eq(gitdata_kind("rebase-merge", false), GITDATA_CONTROL);
        ck_assert_int_eq(gitdata_kind("HEAD", false), GITDATA_HEAD);
        ck_assert_int_eq(gitdata_kind("refs", false), GITDATA_REFS);
        ck_assert_int_eq(gitdata_kind("refs", true), GITDATA_CONTROL);
        ck_assert_int_eq(gitdata_kind("index", true), GITDATA_INDEX);
        ck_assert_int_eq(gitdata_kind("ORIG_HEAD", false), GITDATA_PSEUDO_REF);
        ck_assert_int_eq(gitdata_kind("COMMIT_EDITMSG", false), GITDATA_TEXT);
        ck_assert_int_eq(gitdata_kind("modules", false), GITDATA_MODULES);
        _cleanup_free_ char *fetch = xasprintf("%s\t\tbranch 'main' of /x\n", oid);
        ck_assert(gitdata_pseudo_ref_valid(fetch, strlen(fetch)));
        ck_assert(!gitdata_pseudo_ref_valid("exec rm -rf /\n", 14));
}
END_TEST

struct count {
        size_t dirs, files, deepest;
};

static int count_pre(struct tree_dir *d, void *ctx)
{
        struct count *c = ctx;
        c->dirs++;
        if (d->depth > c->deepest)
                c->deepest = d->depth;
        for (size_t i = 0; i < d->n; i++)
                c->files += d->v[i].type != DT_DIR;
        return 0;
}

/* A chain DEPTH folders deep below `root`, made with *at calls (no path is long). */
static void make_chain(const char *root, size_t depth)
{
        int fd = open(root, O_RDONLY | O_DIRECTORY);
        ck_assert_int_ge(fd, 0);
        for (size_t i = 0; i < depth; i++) {
                ck_assert_int_eq(mkdirat(fd, "d", 0755), 0);
                int next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
                ck_assert_int_ge(next, 0);
                close(fd);
                fd = next;
        }
        int f = openat(fd, "leaf", O_WRONLY | O_CREAT, 0644);
        ck_assert_int_ge(f, 0);
        close(f);
        ck_assert_int_eq(symlinkat("/etc", fd, "link"), 0);
        close(fd);
}

START_TEST(the_walk_goes_deeper_than_the_fds_it_may_hold_and_never_follows_a_link)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        const size_t depth = 3 * TREE_MAX_OPEN + 7;
        make_chain(dir, depth);
        int fd = open(dir, O_RDONLY | O_DIRECTORY);
        struct count c = { 0 };
        const struct tree_ops ops = { .pre = count_pre };
        ck_assert_int_eq(tree_walk(fd, &ops, &c), 0);
        ck_assert_uint_eq(c.deepest, depth);
        ck_assert_uint_eq(c.dirs, depth + 1);
        ck_assert_uint_eq(c.files, 2); /* the leaf and the link, which is not entered */
        /* Removing it works the same way, whatever its depth. */
        ck_assert_int_eq(tree_remove_at(fd, "d"), 0);
        ck_assert_int_ne(faccessat(fd, "d", F_OK, AT_SYMLINK_NOFOLLOW), 0);
        close(fd);
}
END_TEST

START_TEST(folders_a_session_left_unreadable_are_walked_and_removed)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *a = path_in(dir, "a");
        write_in(dir, "a/b/c/file", "x", 0644);
        _cleanup_free_ char *b = path_in(dir, "a/b");
        ck_assert_int_eq(chmod(b, 0), 0);
        ck_assert_int_eq(chmod(a, 0500), 0);
        int fd = open(dir, O_RDONLY | O_DIRECTORY);
        struct count c = { 0 };
        const struct tree_ops ops = { .pre = count_pre, .flags = TREE_FIX_MODES };
        ck_assert_int_eq(tree_walk(fd, &ops, &c), 0);
        ck_assert_uint_eq(c.files, 1);
        ck_assert_int_eq(tree_remove_at(fd, "a"), 0);
        ck_assert_int_ne(access(a, F_OK), 0);
        close(fd);
}
END_TEST

START_TEST(a_copy_keeps_files_and_links_and_leaves_setuid_bits_out)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        write_in(dir, "src/x/f", "hello", 0755);
        _cleanup_free_ char *f = path_in(dir, "src/x/f");
        ck_assert_int_eq(chmod(f, 04755), 0);
        _cleanup_free_ char *l = path_in(dir, "src/x/l");
        ck_assert_int_eq(symlink("/etc/passwd", l), 0);
        _cleanup_free_ char *fifo = path_in(dir, "src/fifo");
        ck_assert_int_eq(mkfifo(fifo, 0644), 0);
        int fd = open(dir, O_RDONLY | O_DIRECTORY);
        size_t skipped = 0;
        ck_assert_int_eq(tree_copy_at(fd, "src", fd, "dst", 16, &skipped), 0);
        ck_assert_uint_eq(skipped, 1);
        _cleanup_free_ char *cf = path_in(dir, "dst/x/f");
        _cleanup_free_ char *text = read_text(cf);
        ck_assert_str_eq(text, "hello");
        assert_mode(cf, 0755);
        char target[64] = "";
        _cleanup_free_ char *cl = path_in(dir, "dst/x/l");
        ck_assert_int_gt(readlink(cl, target, sizeof target - 1), 0);
        ck_assert_str_eq(target, "/etc/passwd");
        close(fd);
}
END_TEST

TB_SUITE("gitdata", 0)
{
        tcase_add_test(tc, refnames_are_taken_as_git_check_ref_format_takes_them);
        tcase_add_test(tc, ref_values_are_an_object_id_or_a_symbolic_ref);
        tcase_add_test(tc, packed_refs_are_whole_lines_of_refs_and_peeled_tags);
        tcase_add_test(tc, objects_and_entries_of_a_git_folder_are_sorted_into_data_and_control);
        tcase_add_test(tc, the_walk_goes_deeper_than_the_fds_it_may_hold_and_never_follows_a_link);
        tcase_add_test(tc, folders_a_session_left_unreadable_are_walked_and_removed);
        tcase_add_test(tc, a_copy_keeps_files_and_links_and_leaves_setuid_bits_out);
}
