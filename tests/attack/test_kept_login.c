/* Grok's shared login: every Grok Trial uses one Trials home holding the
 * host's only Grok login, bound read-write into the session. A session that
 * removes that login, or leaves something else in its place, must not void
 * every later Grok Trial nor lose the login: trialbox keeps the last good
 * copy where no session reaches it and puts it back; a newer valid login a
 * session wrote (a refreshed token) wins and is kept. The real bwrap, the
 * grok plugin, and tests/fakes/fake-grok as the Harness. */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tb_test.h"

#define LOGIN "{\"access_token\": \"grok-original\", \"refresh_token\": \"r1\"}"

struct grok {
        struct fixture f;
        char *env;   /* XDG_STATE_HOME=... */
        char *home;  /* the Trials home */
        char *login; /* its auth.json */
        char *kept;  /* trialbox's copy */
};

static void grok_new(struct grok *g)
{
        fixture_new(&g->f);
        _cleanup_free_ char *state = path_in(g->f.dir, "state");
        g->home = path_in(state, "trialbox/trials/grok");
        g->login = path_in(g->home, "auth.json");
        g->kept = path_in(state, "trialbox/trials/grok.kept/auth.json");
        ck_assert_int_eq(mkdir_p(g->home, 0700), 0);
        write_text(g->login, LOGIN, 0600);
        g->env = xasprintf("XDG_STATE_HOME=%s", state);
}

static void grok_free(struct grok *g)
{
        free(g->env);
        free(g->home);
        free(g->login);
        free(g->kept);
        fixture_free(&g->f);
}

/* One Grok Trial whose session does `action` (fake-grok's LOGIN) to its
 * login; each Trial in an output folder of its own. */
static void grok_trial(struct grok *g, struct proc_result *r, const char *action)
{
        fixture_next_out(&g->f);
        tb_run(r, "grok", &g->f, ENV(g->env), EXTRA("--harness-bin", FAKE("fake-grok"), "--", "times", "0", action));
}

static void assert_holds(const char *path, const char *want)
{
        struct stat st;
        ck_assert_msg(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "'%s' is not a regular file", path);
        _cleanup_free_ char *got = read_text(path);
        ck_assert_msg(got && strcmp(got, want) == 0, "'%s' holds '%.200s', not '%s'", path, got ? got : "", want);
}

/* The next Trial runs with `want` as its login, and cannot see the kept copy. */
static void assert_next_trial_has(struct grok *g, const char *want)
{
        struct proc_result r;
        grok_trial(g, &r, "show");
        ck_assert_msg(r.status == 0, "the next Grok Trial did not complete (%d): %s", r.status, r.err);
        _cleanup_free_ char *line = xasprintf("login: %s", want);
        assert_line(r.out, line);
        assert_line(r.out, "kept: hidden");
        proc_result_free(&r);
}

static void assert_kept(const struct grok *g, const char *want)
{
        assert_holds(g->kept, want);
        assert_mode(g->kept, 0600);
        _cleanup_free_ char *dir = path_dirname(g->kept);
        assert_mode(dir, 0700);
}

START_TEST(a_session_that_deletes_the_grok_login_does_not_void_the_next_trial)
{
        struct grok g;
        struct proc_result r;
        grok_new(&g);
        grok_trial(&g, &r, "delete");
        ck_assert_msg(r.status == 0, "%s", r.err);
        _cleanup_free_ char *said = xasprintf("the login '%s' was missing after the session; put back the copy kept in '%s'",
                                              g.login, g.kept);
        ck_assert_msg(strstr(r.err, said), "no warning '%s' in: %s", said, r.err);
        proc_result_free(&r);
        assert_holds(g.login, LOGIN);
        assert_kept(&g, LOGIN);
        assert_next_trial_has(&g, LOGIN);
        assert_kept(&g, LOGIN);
        grok_free(&g);
}
END_TEST

START_TEST(a_session_that_makes_the_grok_login_a_fifo_does_not_block_or_void_the_next_trial)
{
        struct grok g;
        struct proc_result r;
        grok_new(&g);
        long long t0 = now_ms();
        grok_trial(&g, &r, "fifo");
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_int_lt(now_ms() - t0, 20000); /* never waited on the FIFO */
        proc_result_free(&r);
        assert_holds(g.login, LOGIN);
        assert_kept(&g, LOGIN);
        assert_next_trial_has(&g, LOGIN);
        grok_free(&g);
}
END_TEST

START_TEST(a_newer_valid_login_the_session_wrote_wins_and_is_kept)
{
        static const char newer[] = "{\"access_token\": \"grok-refreshed\", \"refresh_token\": \"r2\"}";
        struct grok g;
        struct proc_result r;
        grok_new(&g);
        _cleanup_free_ char *action = xasprintf("refresh:%s", newer);
        grok_trial(&g, &r, action);
        ck_assert_msg(r.status == 0, "%s", r.err);
        proc_result_free(&r);
        assert_holds(g.login, newer);
        assert_kept(&g, newer);
        /* Then a session that deletes it: the refreshed one comes back. */
        grok_trial(&g, &r, "delete");
        ck_assert_msg(r.status == 0, "%s", r.err);
        proc_result_free(&r);
        assert_next_trial_has(&g, newer);
        assert_kept(&g, newer);
        grok_free(&g);
}
END_TEST

/* What a session may leave in the login's place that is no login. */
static const char *const not_logins[] = { "empty", "garbage", "array", "huge", "dir", "link", "locked" };

START_TEST(whatever_else_the_session_leaves_in_its_place_the_kept_login_comes_back)
{
        const char *action = not_logins[_i];
        struct grok g;
        struct proc_result r;
        grok_new(&g);
        grok_trial(&g, &r, action);
        ck_assert_msg(r.status == 0, "%s: %s", action, r.err);
        proc_result_free(&r);
        assert_holds(g.login, LOGIN);
        assert_mode(g.login, 0600);
        assert_mode(g.home, 0700);
        assert_kept(&g, LOGIN);
        assert_next_trial_has(&g, LOGIN);
        grok_free(&g);
}
END_TEST

START_TEST(a_login_broken_before_the_trial_is_put_back_from_the_kept_copy)
{
        /* Left broken by something trialbox did not see (a crash, a host
         * program): the kept copy serves the next Trial. */
        struct grok g;
        struct proc_result r;
        grok_new(&g);
        grok_trial(&g, &r, "");
        ck_assert_msg(r.status == 0, "%s", r.err);
        proc_result_free(&r);
        write_text(g.login, "{\"half", 0600);
        assert_next_trial_has(&g, LOGIN);
        assert_holds(g.login, LOGIN);
        grok_free(&g);
}
END_TEST

START_TEST(as_root_the_login_put_back_belongs_to_the_trials_homes_owner)
{
        /* Started as root, the session runs as another user, who owns the
         * Trials home: the login trialbox puts back must be theirs to read. */
        if (skip_unless_root(__func__, "not root"))
                return;
        struct passwd *pw = getpwnam("nobody");
        ck_assert_ptr_nonnull(pw);
        struct grok g;
        struct proc_result r;
        grok_new(&g);
        _cleanup_free_ char *state = path_in(g.f.dir, "state");
        _cleanup_free_ char *chown_cmd = xasprintf("chown -R nobody '%s' '%s'", state, g.f.repo);
        ck_assert(host_can(chown_cmd));
        fixture_next_out(&g.f);
        char *argv[] = { TRIALBOX_BIN, "run", "--harness", "grok", "--repo", g.f.repo, "--output-dir", g.f.out,
                         "--user", "nobody", "--harness-bin", FAKE("fake-grok"), "--", "times", "0", "delete", NULL };
        run_argv(&r, tb_env(ENV(g.env)), argv);
        ck_assert_msg(r.status == 0, "%s", r.err);
        proc_result_free(&r);
        assert_holds(g.login, LOGIN);
        struct stat st;
        ck_assert_int_eq(lstat(g.login, &st), 0);
        ck_assert_uint_eq(st.st_uid, pw->pw_uid);
        assert_mode(g.login, 0600);
        /* The kept copy stays trialbox's own. */
        ck_assert_int_eq(lstat(g.kept, &st), 0);
        ck_assert_uint_eq(st.st_uid, 0);
        grok_free(&g);
}
END_TEST

/* A session may leave the shared Trials home a chain of folders as deep as
 * it likes (more than the fds a process may hold, one of them unreadable):
 * the next Trial's wipe takes it all the same (it walked recursively, one
 * fd a level, and failed). */
START_TEST(a_folder_chain_deeper_than_the_fd_limit_in_the_trials_home_is_wiped)
{
        struct grok g;
        grok_new(&g);
        int fd = open(g.home, O_RDONLY | O_DIRECTORY);
        ck_assert_int_ge(fd, 0);
        for (int i = 0; i < 3000; i++) {
                ck_assert_int_eq(mkdirat(fd, "d", 0755), 0);
                int next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
                ck_assert_int_ge(next, 0);
                if (i == 1500)
                        ck_assert_int_eq(fchmod(fd, 0), 0);
                close(fd);
                fd = next;
        }
        close(fd);
        /* The usual soft limit of open files (this machine's may be higher). */
        struct rlimit nofile;
        ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &nofile), 0);
        nofile.rlim_cur = nofile.rlim_max < 1024 ? nofile.rlim_max : 1024;
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &nofile), 0);
        assert_next_trial_has(&g, LOGIN);
        _cleanup_free_ char *chain = path_in(g.home, "d");
        ck_assert_msg(access(chain, F_OK) != 0, "the chain is still in the Trials home");
        grok_free(&g);
}
END_TEST

TB_SUITE("kept_login", 0)
{
        tcase_add_test(tc, a_session_that_deletes_the_grok_login_does_not_void_the_next_trial);
        tcase_add_test(tc, a_session_that_makes_the_grok_login_a_fifo_does_not_block_or_void_the_next_trial);
        tcase_add_test(tc, a_newer_valid_login_the_session_wrote_wins_and_is_kept);
        tcase_add_loop_test(tc, whatever_else_the_session_leaves_in_its_place_the_kept_login_comes_back, 0,
                            (int)TB_ARRAY_SIZE(not_logins));
        tcase_add_test(tc, a_login_broken_before_the_trial_is_put_back_from_the_kept_copy);
        tcase_add_test(tc, as_root_the_login_put_back_belongs_to_the_trials_homes_owner);
        tcase_add_test(tc, a_folder_chain_deeper_than_the_fd_limit_in_the_trials_home_is_wiped);
}
