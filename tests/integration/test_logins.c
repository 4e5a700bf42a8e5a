/* The six Harnesses' logins, with the real bwrap and fake Harnesses that
 * behave like the real CLIs: Codex renaming its login, Grok sharing one
 * Trials home, OpenCode reading its key from a variable. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "tb_test.h"
#include "base/util.h"



/* The Credentials file of a test, holding every Harness's secrets. */
static char *all_credentials(const struct fixture *f)
{
        char *p = path_in(f->dir, "credentials.json");
        write_text(p,
                   "{\"claude\": {\"setup_token\": \"sk-ant-oat-tbtest-claude\"},"
                   " \"opencode\": {\"api_key\": \"sk-tbtest-opencode\", \"provider\": \"anthropic\"}}",
                   0600);
        return p;
}

/* Run fake-codex in a Trial, checking the host login while it runs. */
static void codex_rewrites_its_login(bool in_place, bool host_link)
{
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *codex_home = path_in(f.dir, "codex-home");
        _cleanup_free_ char *auth = path_in(codex_home, "auth.json");
        _cleanup_free_ char *real = path_in(f.dir, "elsewhere/real-auth.json");
        mkdir_p(codex_home, 0700);
        if (host_link) {
                write_in(f.dir, "elsewhere/real-auth.json", "old-login", 0600);
                ck_assert_int_eq(symlink(real, auth), 0);
        } else {
                write_text(auth, "old-login", 0600);
        }
        _cleanup_free_ char *env_home = xasprintf("CODEX_HOME=%s", codex_home);
        char *argv[64];
        tb_argv(argv, 64, "codex", &f,
                EXTRA("--harness-bin", FAKE("fake-codex"), "--", in_place ? "--in-place" : "new-login",
                      in_place ? "new-login" : "refreshed-login", in_place ? "refreshed-login" : NULL));
        _cleanup_free_ char *outp = path_in(f.dir, "stdout"), *errp = path_in(f.dir, "stderr");
        pid_t pid = spawn_argv(tb_env(ENV(env_home)), argv, outp, errp);

        const char *target = host_link ? real : auth;
        _cleanup_free_ char *saved1 = path_in(f.repo, "SAVED-1"), *go1 = path_in(f.repo, "GO-1");
        _cleanup_free_ char *saved2 = path_in(f.repo, "SAVED-2"), *go2 = path_in(f.repo, "GO-2");
        ck_assert_msg(wait_for_file(saved1, 20000), "fake-codex never saved: %s", read_text(errp));
        /* The session is still running: the host file has the login already. */
        for (int i = 0; i < 200; i++) {
                char *now = read_text(target);
                bool done = now && strcmp(now, "new-login") == 0;
                free(now);
                if (done)
                        break;
                usleep(5000);
        }
        ck_assert_int_eq(kill(pid, 0), 0);
        assert_file_holds(target, "new-login");
        ck_assert_int_eq(mode_of(target), 0600);
        write_text(go1, "", 0644);
        ck_assert(wait_for_file(saved2, 20000));
        for (int i = 0; i < 200; i++) {
                char *now = read_text(target);
                bool done = now && strcmp(now, "refreshed-login") == 0;
                free(now);
                if (done)
                        break;
                usleep(5000);
        }
        assert_file_holds(target, "refreshed-login");
        write_text(go2, "", 0644);
        ck_assert_int_eq(wait_status(pid), 0);

        assert_outcome(&f, "outcome", "completed");
        ck_assert_int_eq(mode_of(target), 0600);
        if (host_link) { /* still a link, to the same file */
                struct stat st;
                ck_assert_int_eq(lstat(auth, &st), 0);
                ck_assert(S_ISLNK(st.st_mode));
        }
        /* Nothing of the private copy is left. */
        _cleanup_free_ char *copy = path_in(f.out, "home/.codex/auth.json");
        ck_assert_int_ne(access(copy, F_OK), 0);
        _cleanup_free_ char *grep = xasprintf("! grep -rq login '%s'", f.out);
        ck_assert_msg(host_can(grep), "a copy of the login is left in the output folder");
        fixture_free(&f);
}

START_TEST(a_login_renamed_in_the_sandbox_reaches_the_host_file_while_the_session_runs)
{
        codex_rewrites_its_login(false, false);
}
END_TEST

START_TEST(a_login_rewritten_in_place_reaches_the_host_file)
{
        codex_rewrites_its_login(true, false);
}
END_TEST

START_TEST(a_host_login_that_is_a_link_is_updated_at_its_target)
{
        codex_rewrites_its_login(false, true);
}
END_TEST

/* The login is looked for after bwrap was started (its options not yet
 * known: supervisor_start_early): the void Trial ends that bwrap, which ran
 * nothing, and leaves no process behind (this test's process is a
 * subreaper: an orphan of trialbox's would come to it). */
START_TEST(codex_without_a_login_is_void_before_any_session)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
        _cleanup_free_ char *env_home = xasprintf("CODEX_HOME=%s/nowhere", f.dir);
        _cleanup_free_ char *ran = path_in(f.repo, "SAVED-1");
        tb_run(&r, "codex", &f, ENV(env_home, "TRIALBOX_BWRAP=" FAKE("bwrap-logs-start")),
               EXTRA("--harness-bin", FAKE("fake-codex"), "--", "a", f.dir));
        assert_void(&f, &r, "session_unavailable", "no Codex login at");
        assert_outcome_has(&f, "detail", "codex login");
        ck_assert_int_ne(access(ran, F_OK), 0);
        /* Whether bwrap got as far as its first line before it was killed
         * is the scheduler's to say: when it did, it was started early. */
        _cleanup_free_ char *line = read_text_in(f.dir, "bwrap-started");
        ck_assert_msg(!line || (strstr(line, " --args ") && !strstr(line, f.repo)),
                      "bwrap was not started before the login was looked for: %s", line);
        usleep(200000);
        int st;
        pid_t left = waitpid(-1, &st, WNOHANG);
        ck_assert_msg(left < 0 && errno == ECHILD, "a process (%d) outlived the void Trial", (int)left);
        proc_result_free(&r);

        /* The same fake bwrap in a Trial that runs: always started, and
         * early (its options through --args, no bind on its own line). */
        struct fixture g;
        fixture_new(&g);
        tb_run(&r, "shell", &g, ENV("TRIALBOX_BWRAP=" FAKE("bwrap-logs-start")), EXTRA("--", "-c", "true", g.dir));
        ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
        _cleanup_free_ char *ran_line = read_text_in(g.dir, "bwrap-started");
        ck_assert_msg(ran_line && strstr(ran_line, " --args ") &&
                              strstr(ran_line, " -- /sandbox/harness/shell -c true ") && !strstr(ran_line, g.repo),
                      "bwrap was not started before its options: %s", ran_line ? ran_line : "(never)");
        proc_result_free(&r);
        fixture_free(&g);
        fixture_free(&f);
}
END_TEST

/* bwrap is started before the plugin is loaded, with an empty filter fd
 * on its line: the program written into it afterwards is the plugin's.
 * Codex runs its own sandbox (nested user namespaces: the filter lets
 * unshare(CLONE_NEWUSER) through); the shell Harness does not (refused).
 * Both Trials start bwrap early (its line has --args). */
START_TEST(the_filter_bwrap_reads_is_the_one_its_plugin_asks_for)
{
        struct fixture f, g;
        struct proc_result r;
        fixture_new(&f);
        _cleanup_free_ char *codex_home = path_in(f.dir, "codex-home");
        write_in(codex_home, "auth.json", "a-login", 0600);
        _cleanup_free_ char *env_home = xasprintf("CODEX_HOME=%s", codex_home);
        tb_run(&r, "codex", &f, ENV(env_home, "TRIALBOX_BWRAP=" FAKE("bwrap-logs-start")),
               EXTRA("--harness-bin", "/bin/sh", "--", "-c",
                     "unshare -U true && echo made >userns; unshare -U true || echo refused >userns; : ", f.dir));
        ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
        _cleanup_free_ char *codex_line = read_text_in(f.dir, "bwrap-started");
        ck_assert_msg(codex_line && strstr(codex_line, " --args ") && strstr(codex_line, " -- /sandbox/harness/codex "),
                      "the codex Trial's bwrap was not started early: %s", codex_line);
        _cleanup_free_ char *made = read_text_in(f.repo, "userns");
        ck_assert_msg(made && strcmp(made, "made\n") == 0, "codex's session could not make a user namespace: %s",
                      made ? made : "(nothing written)");
        proc_result_free(&r);

        fixture_new(&g);
        tb_run(&r, "shell", &g, ENV("TRIALBOX_BWRAP=" FAKE("bwrap-logs-start")),
               EXTRA("--", "-c",
                     "unshare -U true && echo made >userns; unshare -U true || echo refused >userns; : ", g.dir));
        ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
        _cleanup_free_ char *shell_line = read_text_in(g.dir, "bwrap-started");
        ck_assert_msg(shell_line && strstr(shell_line, " --args "), "the shell Trial's bwrap was not started early: %s",
                      shell_line);
        _cleanup_free_ char *refused = read_text_in(g.repo, "userns");
        ck_assert_msg(refused && strcmp(refused, "refused\n") == 0, "the shell session made a user namespace: %s",
                      refused ? refused : "(nothing written)");
        proc_result_free(&r);

        /* A Harness without a plugin is a usage error found after bwrap
         * started: that bwrap is ended, and nothing outlives trialbox (this
         * process is a subreaper). */
        struct fixture h;
        fixture_new(&h);
        ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
        tb_run(&r, "nosuch", &h, ENV("TRIALBOX_BWRAP=" FAKE("bwrap-logs-start")), EXTRA("--", h.dir));
        ck_assert_msg(r.status == 2, "status %d: %s", r.status, r.err);
        assert_contains(r.err, "no plugin for harness 'nosuch'");
        usleep(200000);
        int st;
        pid_t left = waitpid(-1, &st, WNOHANG);
        ck_assert_msg(left < 0 && errno == ECHILD, "a process (%d) outlived the usage error", (int)left);
        proc_result_free(&r);
        /* A request its checks refuse (the output folder holds a Trial),
         * found while bwrap's keeper may wait for it (supervisor_prestart):
         * that keeper ends too, and nothing outlives trialbox. */
        struct fixture k;
        fixture_new(&k);
        _cleanup_free_ char *held = path_in(k.out, "home");
        ck_assert_int_eq(mkdir_p(held, 0700), 0);
        tb_run(&r, "shell", &k, NULL, EXTRA("--", "-c", "true"));
        ck_assert_msg(r.status == 2, "status %d: %s", r.status, r.err);
        assert_contains(r.err, "already holds a Trial");
        usleep(200000);
        left = waitpid(-1, &st, WNOHANG);
        ck_assert_msg(left < 0 && errno == ECHILD, "a process (%d) outlived the refused request", (int)left);
        proc_result_free(&r);
        fixture_free(&k);
        fixture_free(&f);
        fixture_free(&g);
        fixture_free(&h);
}
END_TEST

START_TEST(a_muse_login_under_an_overridden_config_home_is_found_and_handed_over)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        _cleanup_free_ char *cfg = path_in(f.dir, "my-config");
        write_in(cfg, "muse/auth.json", "muse-login", 0600);
        write_in(cfg, "muse/auth.json.lock", "", 0600);
        _cleanup_free_ char *env_cfg = xasprintf("XDG_CONFIG_HOME=%s", cfg);
        _cleanup_free_ char *lock = path_in(cfg, "muse/auth.json.lock");
        tb_run(&r, "muse", &f, ENV(env_cfg),
               EXTRA("--harness-bin", "/bin/sh", "--", "-c",
                     "cat \"$XDG_CONFIG_HOME/muse/auth.json\"; echo; echo \"$MUSE_NO_AUTO_UPDATE\"; "
                     "echo held-by-session > \"$XDG_CONFIG_HOME/muse/auth.json.lock\""));
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_str_eq(r.out, "muse-login\n1\n");
        /* The lock is the host's own file: what the session wrote is there. */
        assert_file_holds(lock, "held-by-session\n");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(agy_gets_its_token_file_and_self_update_off_with_true)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        _cleanup_free_ char *home = path_in(f.dir, "host-home");
        write_in(home, ".gemini/antigravity-cli/antigravity-oauth-token", "agy-token", 0600);
        _cleanup_free_ char *env_home = xasprintf("HOME=%s", home);
        tb_run(&r, "agy", &f, ENV(env_home),
               EXTRA("--harness-bin", "/bin/sh", "--", "-c",
                     "cat \"$HOME/.gemini/antigravity-cli/antigravity-oauth-token\"; echo; "
                     "echo \"$AGY_CLI_DISABLE_AUTO_UPDATE\""));
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_str_eq(r.out, "agy-token\ntrue\n");
        proc_result_free(&r);
        fixture_free(&f);

        fixture_new(&f);
        tb_run(&r, "agy", &f, ENV("HOME=/nonexistent"), EXTRA("--harness-bin", "/bin/true"));
        assert_void(&f, &r, "session_unavailable", NULL);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(claude_gets_its_token_as_a_variable_and_is_void_without_one)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        _cleanup_free_ char *creds = all_credentials(&f);
        tb_run(&r, "claude", &f, NULL,
               EXTRA("--credentials", creds, "--harness-bin", "/bin/sh", "--", "-c",
                     "echo \"$CLAUDE_CODE_OAUTH_TOKEN\" \"$DISABLE_AUTOUPDATER\""));
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_str_eq(r.out, "sk-ant-oat-tbtest-claude 1\n");
        proc_result_free(&r);
        fixture_free(&f);

        fixture_new(&f);
        _cleanup_free_ char *empty = path_in(f.dir, "empty.json");
        write_text(empty, "{}", 0600);
        tb_run(&r, "claude", &f, NULL, EXTRA("--credentials", empty, "--harness-bin", "/bin/true"));
        assert_void(&f, &r, "session_unavailable", "no claude.setup_token in the Credentials");
        assert_outcome_has(&f, "detail", "trialbox credentials set claude.setup_token");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(opencode_reads_its_key_from_a_variable_its_config_names)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        _cleanup_free_ char *creds = all_credentials(&f);
        _cleanup_free_ char *config = xasprintf("%s/home/.config/opencode/opencode.json", f.out);
        tb_run(&r, "opencode", &f, NULL,
               EXTRA("--credentials", creds, "--harness-bin", FAKE("print-env"), "--", config));
        ck_assert_msg(r.status == 0, "%s", r.err);
        assert_contains(r.out, "\nANTHROPIC_API_KEY=sk-tbtest-opencode\n");
        assert_contains(r.out, "\"apiKey\": \"{env:ANTHROPIC_API_KEY}\"");
        assert_contains(r.out, "\"anthropic\"");
        assert_contains(r.out, "OPENCODE_DISABLE_AUTOUPDATE=1");
        /* The key is on no file of the output folder. */
        _cleanup_free_ char *grep = xasprintf("! grep -rq sk-tbtest-opencode '%s'", f.out);
        ck_assert(host_can(grep));
        proc_result_free(&r);
        fixture_free(&f);

        fixture_new(&f);
        _cleanup_free_ char *empty = path_in(f.dir, "empty.json");
        _cleanup_free_ char *ran = path_in(f.repo, "RAN");
        write_text(empty, "{\"claude\": {\"setup_token\": \"x\"}}", 0600);
        tb_run(&r, "opencode", &f, NULL,
               EXTRA("--credentials", empty, "--harness-bin", "/bin/sh", "--", "-c", "touch RAN"));
        assert_void(&f, &r, "session_unavailable", NULL);
        ck_assert_int_ne(access(ran, F_OK), 0);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(a_codex_session_holds_no_other_harness_secret)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        _cleanup_free_ char *creds = all_credentials(&f);
        _cleanup_free_ char *codex_home = path_in(f.dir, "codex-home");
        write_in(codex_home, "auth.json", "codex-login", 0600);
        _cleanup_free_ char *env_home = xasprintf("CODEX_HOME=%s", codex_home);
        tb_run(&r, "codex", &f, ENV(env_home, "ANTHROPIC_API_KEY=sk-host-anthropic"),
               EXTRA("--credentials", creds, "--harness-bin", FAKE("print-env")));
        ck_assert_msg(r.status == 0, "%s", r.err);
        assert_lacks(r.out, "sk-ant-oat-tbtest-claude");
        assert_lacks(r.out, "sk-tbtest-opencode");
        assert_lacks(r.out, "sk-host-anthropic");
        assert_lacks(r.out, "CLAUDE_CODE_OAUTH_TOKEN");
        _cleanup_free_ char *want = xasprintf("CODEX_HOME=%s/home/.codex\n", f.out);
        assert_contains(r.out, want);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* A Grok Trials home under a state folder of the test's. */
static char *grok_state(const struct fixture *f, char **env, bool with_login)
{
        char *state = path_in(f->dir, "state");
        char *home = path_in(state, "trialbox/trials/grok");
        mkdir_p(home, 0700);
        if (with_login)
                write_in(home, "auth.json", "grok-login", 0600);
        *env = xasprintf("XDG_STATE_HOME=%s", state);
        free(state);
        return home;
}

START_TEST(the_grok_trials_home_holds_only_login_and_lock_when_a_session_starts)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        _cleanup_free_ char *env = NULL;
        _cleanup_free_ char *home = grok_state(&f, &env, true);
        /* Left by an earlier Trial: state, a folder, and links pointing out. */
        write_in(home, "history.jsonl", "old session", 0600);
        write_in(home, "cache/deep/x", "old cache", 0600);
        _cleanup_free_ char *target = path_in(f.dir, "outside-secret");
        _cleanup_free_ char *target_dir = path_in(f.dir, "outside-dir");
        write_text(target, "do not touch", 0600);
        write_in(target_dir, "keep-me", "keep", 0600);
        _cleanup_free_ char *link = path_in(home, "planted-link");
        _cleanup_free_ char *dlink = path_in(home, "planted-dir-link");
        ck_assert_int_eq(symlink(target, link), 0);
        ck_assert_int_eq(symlink(target_dir, dlink), 0);

        tb_run(&r, "grok", &f, ENV(env),
               EXTRA("--harness-bin", FAKE("fake-grok"), "--", "times", "0"));
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_str_eq(r.out, "home: .lock auth.json \n");
        assert_file_holds(target, "do not touch");
        _cleanup_free_ char *kept = path_in(target_dir, "keep-me");
        assert_file_holds(kept, "keep");
        struct stat st;
        ck_assert_int_ne(lstat(link, &st), 0);
        ck_assert_int_ne(lstat(dlink, &st), 0);
        /* What the session left stays until the next Grok Trial wipes it. */
        _cleanup_free_ char *left = path_in(home, "cache/session");
        ck_assert_int_eq(access(left, F_OK), 0);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(two_grok_trials_started_together_never_overlap)
{
        struct fixture a, b;
        fixture_new(&a);
        b = a;
        b.dir = tmpdir_new();
        snprintf(b.repo, sizeof b.repo, "%s/repo", b.dir);
        snprintf(b.out, sizeof b.out, "%s/out", b.dir);
        mkdir(b.repo, 0755);
        _cleanup_free_ char *env = NULL;
        free(grok_state(&a, &env, true));
        char *argv_a[64], *argv_b[64];
        tb_argv(argv_a, 64, "grok", &a, EXTRA("--harness-bin", FAKE("fake-grok"), "--", "times", "0.4"));
        tb_argv(argv_b, 64, "grok", &b, EXTRA("--harness-bin", FAKE("fake-grok"), "--", "times", "0.4"));
        _cleanup_free_ char *oa = path_in(a.dir, "o"), *ob = path_in(b.dir, "o");
        pid_t pa = spawn_argv(tb_env(ENV(env)), argv_a, oa, oa);
        pid_t pb = spawn_argv(tb_env(ENV(env)), argv_b, ob, ob);
        ck_assert_int_eq(wait_status(pa), 0);
        ck_assert_int_eq(wait_status(pb), 0);
        _cleanup_free_ char *ta = path_in(a.repo, "times"), *tb_ = path_in(b.repo, "times");
        char *sa = read_text(ta), *sb = read_text(tb_);
        ck_assert(sa && sb);
        long long a0, a1, b0, b1;
        ck_assert_int_eq(sscanf(sa, "%lld %lld", &a0, &a1), 2);
        ck_assert_int_eq(sscanf(sb, "%lld %lld", &b0, &b1), 2);
        ck_assert_msg(a1 <= b0 || b1 <= a0, "the Grok sessions overlapped: [%lld,%lld] [%lld,%lld]", a0, a1, b0, b1);
        free(sa);
        free(sb);
        fixture_free(&b);
        fixture_free(&a);
}
END_TEST

START_TEST(grok_is_void_without_a_login_or_when_its_lock_is_held_too_long)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        _cleanup_free_ char *env = NULL;
        free(grok_state(&f, &env, false));
        tb_run(&r, "grok", &f, ENV(env), EXTRA("--harness-bin", FAKE("fake-grok"), "--", "times", "0"));
        assert_void(&f, &r, "session_unavailable", "no Grok login in the Trials home");
        proc_result_free(&r);
        fixture_free(&f);

        fixture_new(&f);
        free(env);
        free(grok_state(&f, &env, true));
        _cleanup_free_ char *h2 = path_in(f.dir, "state/trialbox/trials/grok");
        _cleanup_free_ char *lock = path_in(h2, ".lock");
        int fd = open(lock, O_RDWR | O_CREAT, 0600);
        ck_assert_int_eq(flock(fd, LOCK_EX), 0);
        _cleanup_free_ char *ran = path_in(f.repo, "times");
        tb_run(&r, "grok", &f, ENV(env, "TRIALBOX_GROK_WAIT=0.3"),
               EXTRA("--harness-bin", FAKE("fake-grok"), "--", "times", "0"));
        assert_void(&f, &r, "session_unavailable", "stayed busy for 0.3 s");
        ck_assert_int_ne(access(ran, F_OK), 0);
        close(fd);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(check_says_where_each_login_was_looked_for_and_how_to_provide_it)
{
        struct proc_result r;
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *creds = all_credentials(&f);
        _cleanup_free_ char *env_creds = xasprintf("XDG_CONFIG_HOME=%s/cfg", f.dir);
        _cleanup_free_ char *cfgdir = path_in(f.dir, "cfg/trialbox");
        mkdir_p(cfgdir, 0700);
        _cleanup_free_ char *mv = xasprintf("cp '%s' '%s/credentials.json'", creds, cfgdir);
        ck_assert(host_can(mv));
        run_argv(&r, tb_env(ENV(env_creds, "HOME=/nonexistent")), (char *[]){ TRIALBOX_BIN, "check", "--harness", "codex", NULL });
        ck_assert_int_eq(r.status, 1);
        assert_contains(r.out, "FAIL login");
        assert_contains(r.out, "no Codex login at '/nonexistent/.codex/auth.json'; run 'codex login'");
        proc_result_free(&r);
        run_argv(&r, tb_env(ENV(env_creds)), (char *[]){ TRIALBOX_BIN, "harnesses", "--json", NULL });
        ck_assert_int_eq(r.status, 0);
        assert_contains(r.out, "claude.setup_token: in '");
        assert_contains(r.out, "(present)");
        assert_lacks(r.out, "sk-ant-oat-tbtest-claude");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* The lines `harnesses -v` prints for one Harness: its line and the
 * indented ones under it. malloc'd. */
static char *harness_block(const char *out, const char *name)
{
        _cleanup_free_ char *head = xasprintf("\n%s ", name);
        _cleanup_free_ char *nl_out = xasprintf("\n%s", out);
        const char *start = strstr(nl_out, head);
        ck_assert_msg(start != NULL, "no line for '%s' in: %s", name, out);
        const char *end = start + 1;
        while ((end = strchr(end, '\n')) != NULL && end[1] == ' ')
                end++;
        return end ? strndup(start + 1, (size_t)(end - start - 1)) : xstrdup(start + 1);
}

START_TEST(harnesses_v_lists_each_harness_endpoints_required_or_optional)
{
        struct proc_result r;
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *cfgdir = path_in(f.dir, "cfg/trialbox");
        mkdir_p(cfgdir, 0700);
        _cleanup_free_ char *creds = path_in(f.dir, "cfg/trialbox/credentials.json");
        /* OpenCode's endpoints follow its provider in the Credentials. */
        write_text(creds, "{\"opencode\": {\"api_key\": \"sk-tbtest-opencode\", \"provider\": \"openai\"}}", 0600);
        _cleanup_free_ char *env_creds = xasprintf("XDG_CONFIG_HOME=%s/cfg", f.dir);
        run_argv(&r, tb_env(ENV(env_creds)), (char *[]){ TRIALBOX_BIN, "harnesses", "-v", NULL });
        ck_assert_int_eq(r.status, 0);

        _cleanup_free_ char *codex = harness_block(r.out, "codex");
        assert_contains(codex, "endpoint: api.openai.com:443 (required: allowed under --network allow)");
        assert_contains(codex, "endpoint: chatgpt.com:443 (required: allowed under --network allow)");
        assert_contains(codex, "endpoint: auth.openai.com:443 (required: allowed under --network allow)");
        assert_contains(codex, "endpoint: ab.chatgpt.com:443 (optional: denied under --network allow unless --allow-host)");
        assert_contains(codex, "keeps nested user namespaces");
        _cleanup_free_ char *claude = harness_block(r.out, "claude");
        assert_contains(claude, "endpoint: api.anthropic.com:443 (required: allowed under --network allow)");
        assert_contains(claude, "keeps nested user namespaces");
        _cleanup_free_ char *opencode = harness_block(r.out, "opencode");
        assert_contains(opencode, "endpoint: api.openai.com:443 (required: allowed under --network allow)");
        assert_lacks(opencode, "api.anthropic.com");
        assert_contains(opencode, "endpoint: models.opencode.ai:443 (required: allowed under --network allow)");
        assert_contains(opencode, "endpoint: registry.npmjs.org:443 (optional: denied under --network allow unless --allow-host)");
        assert_contains(opencode, "endpoint: github.com:443 (optional: denied under --network allow unless --allow-host)");
        assert_lacks(opencode, "nested user namespaces");
        _cleanup_free_ char *muse = harness_block(r.out, "muse");
        assert_contains(muse, "endpoints: none declared");
        proc_result_free(&r);

        /* Without -v, none of it; with --json, always. */
        run_argv(&r, tb_env(ENV(env_creds)), (char *[]){ TRIALBOX_BIN, "harnesses", NULL });
        assert_lacks(r.out, "endpoint");
        proc_result_free(&r);
        run_argv(&r, tb_env(ENV(env_creds)), (char *[]){ TRIALBOX_BIN, "harnesses", "--json", NULL });
        assert_contains(r.out, "{\"host\":\"api.openai.com:443\",\"required\":true}");
        assert_contains(r.out, "{\"host\":\"ab.chatgpt.com:443\",\"required\":false}");
        assert_contains(r.out, "\"needs_userns\":true");
        proc_result_free(&r);

        /* A provider whose host is not known: said, and the rest still declared. */
        write_text(creds, "{\"opencode\": {\"api_key\": \"k\", \"provider\": \"my-gateway\"}}", 0600);
        run_argv(&r, tb_env(ENV(env_creds)), (char *[]){ TRIALBOX_BIN, "harnesses", "-v", NULL });
        _cleanup_free_ char *unknown = harness_block(r.out, "opencode");
        assert_contains(unknown, "the API host of provider 'my-gateway' is not known");
        assert_contains(unknown, "endpoint: models.opencode.ai:443 (required: allowed under --network allow)");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* With HOME unset, `check` and `run` look for a login in one home, the
 * password database's (`check` once looked in "//.codex"). */
START_TEST(check_and_run_look_for_a_login_in_the_same_home_when_home_is_unset)
{
        struct proc_result r;
        struct fixture f;
        fixture_new(&f);
        struct passwd *pw = getpwuid(getuid());
        ck_assert_ptr_nonnull(pw);
        _cleanup_free_ char *want = xasprintf("'%s/.codex/auth.json'", pw->pw_dir);
        _cleanup_free_ char *env_cfg = xasprintf("XDG_CONFIG_HOME=%s/cfg", f.dir);
        run_argv(&r, tb_env(ENV(env_cfg, "HOME", "CODEX_HOME")),
                 (char *[]){ TRIALBOX_BIN, "check", "--harness", "codex", NULL });
        ck_assert_msg(strstr(r.out, want) != NULL, "check did not look at %s:\n%s", want, r.out);
        proc_result_free(&r);
        tb_run(&r, "codex", &f, ENV(env_cfg, "HOME", "CODEX_HOME"), EXTRA("--dry-run", "-v", "--harness-bin", "/bin/true"));
        ck_assert_msg(strstr(r.err, want) != NULL, "run did not look at %s:\n%s", want, r.err);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST


/* A Grok session leaves a folder it made unreadable (and unwritable, one
 * inside another), a link and a FIFO in the Trials home: the next Grok
 * Trial still runs, in a home holding only the login and the lock. */
START_TEST(a_grok_session_leaving_an_unreadable_folder_a_link_and_a_fifo_voids_no_later_trial)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        _cleanup_free_ char *env = NULL;
        _cleanup_free_ char *home = grok_state(&f, &env, true);
        tb_run(&r, "grok", &f, ENV(env),
               EXTRA("--harness-bin", "/bin/sh", "--", "-c",
                     "cd \"$GROK_HOME\" && mkdir -p shut/deep ro && echo x > shut/deep/f && echo y > ro/f && "
                     "chmod 000 shut/deep && chmod 000 shut && chmod 500 ro && ln -s /etc planted-link && "
                     "mkfifo fifo && echo left"));
        ck_assert_msg(r.status == 0 && strstr(r.out, "left"), "the session could not leave its traps: %s", r.err);
        proc_result_free(&r);

        struct fixture g = f;
        snprintf(g.out, sizeof g.out, "%s/out-2", f.dir);
        tb_run(&r, "grok", &g, ENV(env), EXTRA("--harness-bin", FAKE("fake-grok"), "--", "times", "0"));
        ck_assert_msg(r.status == 0, "the next Grok Trial did not run: %s", r.err);
        ck_assert_str_eq(r.out, "home: .lock auth.json \n");
        _cleanup_free_ char *login = path_in(home, "auth.json");
        assert_file_holds(login, "grok-login");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* ---- one login, many concurrent Trials ---- */

static char *codex_token(const char *tag)
{
        return xasprintf("{\"tokens\": {\"refresh_token\": \"%s\", \"access_token\": \"at-%s\"}}", tag, tag);
}

/* The host login, read as any host reader would: one whole login, old or
 * new, and valid JSON. */
static void assert_host_login_whole(const char *path, const char *old, const char *new_, unsigned long *reads)
{
        char *now = read_text(path);
        ck_assert_msg(now != NULL, "the host login is missing");
        ck_assert_msg(strcmp(now, old) == 0 || strcmp(now, new_) == 0, "the host login is partial: '%s'", now);
        json_object *o = json_tokener_parse(now);
        ck_assert_msg(o != NULL, "the host login is not JSON: '%s'", now);
        json_object_put(o);
        free(now);
        (*reads)++;
}

static int cmp_ll(const void *a, const void *b)
{
        long long x = *(const long long *)a, y = *(const long long *)b;
        return (x > y) - (x < y);
}

/* `n` Codex Trials on one host login; the first refreshes it while the
 * others watch their own copies. Every other copy gets the new login while
 * its session runs; the host login is whole at every read. Prints the
 * latencies (refresh in one session to the new login seen in another). */
static void codex_trials_share_one_login(size_t n)
{
        struct fixture f[8];
        ck_assert(n <= TB_ARRAY_SIZE(f));
        fixture_new(&f[0]);
        for (size_t i = 1; i < n; i++) {
                f[i] = f[0];
                f[i].dir = tmpdir_new();
                snprintf(f[i].repo, sizeof f[i].repo, "%s/repo", f[i].dir);
                snprintf(f[i].out, sizeof f[i].out, "%s/out", f[i].dir);
                ck_assert_int_eq(mkdir(f[i].repo, 0755), 0);
        }
        _cleanup_free_ char *mark = marker("rt");
        _cleanup_free_ char *old_tag = xasprintf("%s-old", mark), *new_tag = xasprintf("%s-new", mark);
        _cleanup_free_ char *old = codex_token(old_tag), *new_ = codex_token(new_tag);
        _cleanup_free_ char *codex_home = path_in(f[0].dir, "codex-home");
        _cleanup_free_ char *auth = path_in(codex_home, "auth.json");
        ck_assert_int_eq(mkdir(codex_home, 0700), 0);
        write_text(auth, old, 0600);
        _cleanup_free_ char *env_home = xasprintf("CODEX_HOME=%s", codex_home);

        pid_t pid[8];
        for (size_t i = 0; i < n; i++) {
                char *argv[64];
                if (i == 0)
                        tb_argv(argv, 64, "codex", &f[i], EXTRA("--harness-bin", FAKE("fake-codex"), "--", "--refresh", new_));
                else
                        tb_argv(argv, 64, "codex", &f[i], EXTRA("--harness-bin", FAKE("fake-codex"), "--", "--watch", "120"));
                _cleanup_free_ char *o = path_in(f[i].dir, "stdout"), *e = path_in(f[i].dir, "stderr");
                pid[i] = spawn_argv(tb_env(ENV(env_home)), argv, o, e);
        }
        unsigned long reads = 0;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *ready = path_in(f[i].repo, "READY");
                _cleanup_free_ char *e = path_in(f[i].dir, "stderr");
                ck_assert_msg(wait_for_file(ready, 60000), "Trial %zu never started: %s", i, read_text(e));
        }
        _cleanup_free_ char *go = path_in(f[0].repo, "GO");
        write_text(go, "", 0644);
        /* Read the host login as fast as we can until every other session saw the new one. */
        size_t seen = 0;
        long long deadline = now_ms() + 60000;
        while (seen < n - 1 && now_ms() < deadline) {
                assert_host_login_whole(auth, old, new_, &reads);
                seen = 0;
                for (size_t i = 1; i < n; i++) {
                        _cleanup_free_ char *s = path_in(f[i].repo, "SEEN");
                        seen += access(s, F_OK) == 0;
                }
                usleep(1000);
        }
        ck_assert_msg(seen == n - 1, "only %zu of %zu other sessions saw the new login", seen, n - 1);
        _cleanup_free_ char *done = path_in(f[0].repo, "DONE");
        write_text(done, "", 0644);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *e = path_in(f[i].dir, "stderr");
                int st = wait_status(pid[i]);
                ck_assert_msg(st == 0, "Trial %zu ended with %d: %s", i, st, read_text(e));
        }
        assert_host_login_whole(auth, old, new_, &reads);
        assert_file_holds(auth, new_);
        ck_assert_int_eq(mode_of(auth), 0600);

        _cleanup_free_ char *refreshed = path_in(f[0].repo, "REFRESHED");
        char *t0s = read_text(refreshed);
        ck_assert_ptr_nonnull(t0s);
        long long t0 = atoll(t0s);
        free(t0s);
        struct stat hst;
        ck_assert_int_eq(stat(auth, &hst), 0);
        long long host_written = (long long)hst.st_mtim.tv_sec * 1000000000LL + hst.st_mtim.tv_nsec;
        long long lat[8], copy_lat[8];
        for (size_t i = 1; i < n; i++) {
                _cleanup_free_ char *s = path_in(f[i].repo, "SEEN");
                char *line = read_text(s);
                ck_assert_ptr_nonnull(line);
                long long t_seen = 0, t_copy = 0;
                int off = 0;
                ck_assert_msg(sscanf(line, "%lld %lld %n", &t_seen, &t_copy, &off) == 2, "SEEN: '%s'", line);
                ck_assert_msg(strncmp(line + off, new_, strlen(new_)) == 0, "Trial %zu saw '%s', not the new login", i,
                              line + off);
                lat[i - 1] = t_seen - t0;
                copy_lat[i - 1] = t_copy - host_written;
                free(line);
                /* The copy the session watched is gone with the Trial. */
                _cleanup_free_ char *copy = path_in(f[i].out, "home/.codex/auth.json");
                ck_assert_int_ne(access(copy, F_OK), 0);
        }
        qsort(lat, n - 1, sizeof lat[0], cmp_ll);
        qsort(copy_lat, n - 1, sizeof copy_lat[0], cmp_ll);
        fprintf(stderr,
                "%zu Codex Trials on one login: refresh to the host login written: %.1f ms; host login to every other "
                "copy written: min %.1f, median %.1f, max %.1f ms; refresh to seen by every other session (polling "
                "every 10 ms): min %.1f, median %.1f, max %.1f ms; %lu whole reads of the host login\n",
                n, (double)(host_written - t0) / 1e6, (double)copy_lat[0] / 1e6, (double)copy_lat[(n - 1) / 2] / 1e6,
                (double)copy_lat[n - 2] / 1e6, (double)lat[0] / 1e6, (double)lat[(n - 1) / 2] / 1e6,
                (double)lat[n - 2] / 1e6, reads);
        for (size_t i = 1; i < n; i++)
                fixture_free(&f[i]);
        fixture_free(&f[0]);
}

START_TEST(a_refresh_in_one_of_two_codex_trials_reaches_the_other_while_it_runs)
{
        codex_trials_share_one_login(2);
}
END_TEST

START_TEST(a_refresh_in_one_of_eight_codex_trials_reaches_all_others_while_they_run)
{
        codex_trials_share_one_login(8);
}
END_TEST

TB_SUITE("logins", 180)
{
        tcase_add_test(tc, a_login_renamed_in_the_sandbox_reaches_the_host_file_while_the_session_runs);
        tcase_add_test(tc, a_login_rewritten_in_place_reaches_the_host_file);
        tcase_add_test(tc, a_host_login_that_is_a_link_is_updated_at_its_target);
        tcase_add_test(tc, codex_without_a_login_is_void_before_any_session);
        tcase_add_test(tc, the_filter_bwrap_reads_is_the_one_its_plugin_asks_for);
        tcase_add_test(tc, a_muse_login_under_an_overridden_config_home_is_found_and_handed_over);
        tcase_add_test(tc, agy_gets_its_token_file_and_self_update_off_with_true);
        tcase_add_test(tc, claude_gets_its_token_as_a_variable_and_is_void_without_one);
        tcase_add_test(tc, opencode_reads_its_key_from_a_variable_its_config_names);
        tcase_add_test(tc, a_codex_session_holds_no_other_harness_secret);
        tcase_add_test(tc, the_grok_trials_home_holds_only_login_and_lock_when_a_session_starts);
        tcase_add_test(tc, two_grok_trials_started_together_never_overlap);
        tcase_add_test(tc, grok_is_void_without_a_login_or_when_its_lock_is_held_too_long);
        tcase_add_test(tc, check_says_where_each_login_was_looked_for_and_how_to_provide_it);
        tcase_add_test(tc, harnesses_v_lists_each_harness_endpoints_required_or_optional);
        tcase_add_test(tc, check_and_run_look_for_a_login_in_the_same_home_when_home_is_unset);
        tcase_add_test(tc, a_grok_session_leaving_an_unreadable_folder_a_link_and_a_fifo_voids_no_later_trial);
        tcase_add_test(tc, a_refresh_in_one_of_two_codex_trials_reaches_the_other_while_it_runs);
        tcase_add_test(tc, a_refresh_in_one_of_eight_codex_trials_reaches_all_others_while_they_run);
}
