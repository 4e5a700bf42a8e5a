/* Who a session runs as: the rules of session_user_resolve() as a table,
 * and the switch and the handing over of a tree, where root can try them. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/session_user.h"
#include "tb_test.h"
#include "base/util.h"

START_TEST(the_session_user_follows_the_rules_for_root_and_for_others)
{
        static const struct {
                const char *name, *want;
                bool root_session;
                uid_t euid, repo_uid;
                int r;         /* 0 or the negative errno */
                bool drop;
                uid_t uid;     /* when r == 0 */
                const char *says; /* in the message, when r < 0 */
        } cases[] = {
                { "root, a repository owned by nobody", NULL, false, 0, 65534, 0, true, 65534, NULL },
                { "root, --user nobody", "nobody", false, 0, 0, 0, true, 65534, NULL },
                { "root, --user 65534", "65534", false, 0, 0, 0, true, 65534, NULL },
                { "root, --user 4242 (no such user: its number)", "4242", false, 0, 0, 0, true, 4242, NULL },
                { "root, --root-session", NULL, true, 0, 0, 0, false, 0, NULL },
                { "root, a root-owned repository", NULL, false, 0, 0, -EPERM, false, 0, "--root-session" },
                { "root, --user root", "root", false, 0, 0, -EPERM, false, 0, "--root-session" },
                { "root, --user 0", "0", false, 0, 0, -EPERM, false, 0, "--root-session" },
                { "root, both", "nobody", true, 0, 0, -EINVAL, false, 0, "exclude each other" },
                { "root, --user no-such-name", "no-such-name-tb", false, 0, 0, -ESRCH, false, 0, "no user here" },
                { "nobody, nothing given", NULL, false, 65534, 0, 0, false, 65534, NULL },
                { "nobody, --root-session (a no-op)", NULL, true, 65534, 0, 0, false, 65534, NULL },
                { "nobody, --user nobody (itself)", "nobody", false, 65534, 0, 0, false, 65534, NULL },
                { "nobody, --user root", "root", false, 65534, 0, -EPERM, false, 0, "only root" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                struct stat st = { .st_uid = cases[i].repo_uid, .st_gid = cases[i].repo_uid };
                struct session_user u;
                struct tb_error err = { 0 };
                int r = session_user_resolve(cases[i].want, cases[i].root_session, cases[i].euid, &st, &u, &err);
                ck_assert_msg(r == cases[i].r, "%s: %d, not %d (%s)", cases[i].name, r, cases[i].r, err.msg);
                if (r == 0) {
                        ck_assert_msg(u.drop == cases[i].drop && u.uid == cases[i].uid, "%s: drop %d uid %u",
                                      cases[i].name, u.drop, (unsigned)u.uid);
                        ck_assert_msg(u.name && u.why, "%s: no name or reason", cases[i].name);
                } else {
                        ck_assert_msg(strstr(err.msg, cases[i].says) && !strchr(err.msg, '\n'), "%s: says '%s'",
                                      cases[i].name, err.msg);
                }
                session_user_done(&u);
        }
}
END_TEST

/* As root: the tree under a folder becomes the user's, links not followed;
 * the user can then reach it, and a switched child cannot get root back. */
START_TEST(a_tree_is_handed_over_without_following_links_and_access_is_checked_as_the_user)
{
        if (geteuid() != 0)
                return;
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *home = path_in(dir, "home"), *outside = path_in(dir, "outside");
        ck_assert(mkdir(home, 0700) == 0);
        write_text(outside, "root's\n", 0600);
        write_in(home, ".config/tool/login.json", "{}\n", 0600);
        _cleanup_free_ char *link = path_in(home, "link");
        ck_assert(symlink(outside, link) == 0);
        struct session_user u = { .drop = true, .uid = 65534, .gid = 65534 };
        _cleanup_free_ char *login = path_in(home, ".config/tool/login.json");
        ck_assert(!session_user_can(&u, login, R_OK));
        int fd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_eq(session_user_chown_tree(fd, &u), 0);
        close(fd);
        struct stat st;
        ck_assert(stat(login, &st) == 0 && st.st_uid == 65534);
        ck_assert(lstat(link, &st) == 0 && st.st_uid == 65534);
        ck_assert(stat(outside, &st) == 0 && st.st_uid == 0); /* the link's target stays root's */
        ck_assert(session_user_can(&u, login, R_OK | W_OK));
        ck_assert(!session_user_can(&u, outside, R_OK));
        bool ok[2];
        char *paths[] = { login, outside };
        session_user_can_all(&u, paths, 2, R_OK, ok);
        ck_assert(ok[0] && !ok[1]);
}
END_TEST

/* What a child that switches to `u` for good gets from access(2): the
 * reference for the checks trialbox makes in its own process. */
static bool child_can(const struct session_user *u, const char *path,
                      int mode) {
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    char c = session_user_switch(u) == 0 && access(path, mode) == 0 ? 'y' : 'n';
    _exit(write(p[1], &c, 1) == 1 ? 0 : 1);
  }
  close(p[1]);
  char c = 0;
  ck_assert_int_eq(read(p[0], &c, 1), 1);
  close(p[0]);
  waitpid(pid, NULL, 0);
  return c == 'y';
}

START_TEST(
    access_checked_in_trialboxs_process_is_the_switched_childs_and_leaves_its_ids_as_they_were) {
  if (geteuid() != 0)
    return;
  /* trialbox's own groups hold one the session must not have. */
  gid_t mine[] = {0, 4242};
  ck_assert_int_eq(setgroups(2, mine), 0);
  char *dir = tmpdir_new();
  ck_assert_int_eq(chmod(dir, 0755), 0);
  static const struct {
    const char *name;
    mode_t mode;
    uid_t uid;
    gid_t gid;
  } files[] = {
      {"root-0600", 0600, 0, 0},
      {"root-0644", 0644, 0, 0},
      {"root-0000", 0000, 0, 0},
      {"root-0755", 0755, 0, 0},
      {"group-4242-0660", 0660, 0, 4242},
      {"group-nogroup-0660", 0660, 0, 65534},
      {"nobody-0600", 0600, 65534, 65534},
      {"nobody-0000", 0000, 65534, 65534},
      {"closed/inside-0644", 0644, 0, 0},
      {"passable/inside-0644", 0644, 0, 0},
  };
  _cleanup_free_ char *closed = path_in(dir, "closed"),
                      *passable = path_in(dir, "passable");
  ck_assert_int_eq(mkdir(closed, 0700), 0);
  ck_assert_int_eq(mkdir(passable, 0711), 0);
  char *paths[TB_ARRAY_SIZE(files) + 1];
  for (size_t i = 0; i < TB_ARRAY_SIZE(files); i++) {
    paths[i] = path_in(dir, files[i].name);
    write_text(paths[i], "x\n", 0600);
    ck_assert_int_eq(chown(paths[i], files[i].uid, files[i].gid), 0);
    ck_assert_int_eq(chmod(paths[i], files[i].mode), 0);
  }
  paths[TB_ARRAY_SIZE(files)] = path_in(dir, "missing");
  const size_t n = TB_ARRAY_SIZE(paths);
  const struct session_user u = {.drop = true, .uid = 65534, .gid = 65534};
  const int modes[] = {F_OK, R_OK, W_OK, X_OK, R_OK | W_OK};
  int differ = 0, allowed = 0;
  for (size_t m = 0; m < TB_ARRAY_SIZE(modes); m++) {
    bool ok[TB_ARRAY_SIZE(paths)];
    session_user_can_all(&u, paths, n, modes[m], ok);
    for (size_t i = 0; i < n; i++) {
      bool want = child_can(&u, paths[i], modes[m]);
      allowed += want;
      if (ok[i] != want) {
        differ++;
        fprintf(stderr, "%s, mode %d: %d here, %d in a child\n", paths[i],
                modes[m], ok[i], want);
      }
      ck_assert(session_user_can(&u, paths[i], modes[m]) == want);
    }
  }
  ck_assert_int_eq(differ, 0);
  ck_assert_int_gt(allowed,
                   0); /* not all refused: the table tells both ways apart */
  /* trialbox is itself again: filesystem ids and groups. */
  ck_assert_int_eq(setfsuid((uid_t)-1), 0);
  ck_assert_int_eq(setfsgid((gid_t)-1), 0);
  gid_t now[8];
  ck_assert_int_eq(getgroups(8, now), 2);
  ck_assert(now[0] == 0 && now[1] == 4242);
  ck_assert_int_eq(access(paths[2], R_OK),
                   0); /* root-0000: root's capabilities are back */
  for (size_t i = 0; i < n; i++)
    free(paths[i]);
  tmpdir_remove(dir);
  free(dir);
}
END_TEST

TB_SUITE("session_user", 0)
{
        tcase_add_test(tc, the_session_user_follows_the_rules_for_root_and_for_others);
        tcase_add_test(tc, a_tree_is_handed_over_without_following_links_and_access_is_checked_as_the_user);
        tcase_add_test(tc, access_checked_in_trialboxs_process_is_the_switched_childs_and_leaves_its_ids_as_they_were);
}
