/* The host services plugins get: the Credentials scope, files in the fresh
 * home, the Trials-home lock and wipe. */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/env.h"
#include "plugin/host.h"
#include "tb_test.h"
#include "logins/trials_home.h"
#include "base/cleanup.h"
#include "base/macro.h"
#include "base/error.h"
#include "base/alloc.h"
#include "base/path.h"

static char *creds_file(const char *dir)
{
        char *p = xasprintf("%s/credentials.json", dir);
        write_text(p,
                   "{\"claude\": {\"setup_token\": \"tok-claude\"}, \"codex\": {\"note\": \"n\"},"
                   " \"opencode\": {\"api_key\": \"key-opencode\"}}",
                   0600);
        return p;
}

START_TEST(a_plugin_reads_only_its_own_section_of_the_credentials)
{
        char *dir = tmpdir_new();
        _cleanup_free_ char *path = creds_file(dir);
        const struct tb_host_services *svc = host_services();
        struct tb_host codex = { .harness = "codex", .credentials_path = path, .checking = true };
        ck_assert_ptr_null(svc->credential(&codex, "setup_token"));
        ck_assert_ptr_null(svc->credential(&codex, "claude.setup_token"));
        ck_assert_ptr_null(svc->credential(&codex, "api_key"));
        ck_assert_ptr_null(svc->credential(&codex, "../claude/setup_token"));
        ck_assert_str_eq(svc->credential(&codex, "note"), "n");
        host_done(&codex);
        struct tb_host claude = { .harness = "claude", .credentials_path = path, .checking = true };
        ck_assert_str_eq(svc->credential(&claude, "setup_token"), "tok-claude");
        host_done(&claude);
        tmpdir_remove(dir);
        free(dir);
}
END_TEST

START_TEST(a_malformed_credentials_file_voids_with_its_error)
{
        char *dir = tmpdir_new();
        _cleanup_free_ char *path = xasprintf("%s/credentials.json", dir);
        write_text(path, "{\"claude\": {\"setup_token\": 42}}", 0600);
        struct tb_host h = { .harness = "claude", .credentials_path = path };
        ck_assert_ptr_null(host_services()->require_credential(&h, "setup_token", "how"));
        ck_assert(h.voided);
        assert_contains(h.void_detail, "'claude.setup_token' must be a string");
        assert_contains(h.void_detail, path);
        host_done(&h);
        tmpdir_remove(dir);
        free(dir);
}
END_TEST

START_TEST(home_files_are_written_0600_only_in_the_fresh_home)
{
        char *dir = tmpdir_new();
        struct sandbox_spec spec = { 0 };
        struct tb_host h = { .harness = "x", .spec = &spec, .sandboxed = true, .session_home = dir };
        const struct tb_host_services *svc = host_services();
        ck_assert_int_eq(svc->write_home_file(&h, ".config/x/config.json", "{}\n"), 0);
        _cleanup_free_ char *p = xasprintf("%s/.config/x/config.json", dir);
        struct stat st;
        ck_assert_int_eq(stat(p, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0600);
        ck_assert_int_eq(svc->write_home_file(&h, "../escape", "x"), -EINVAL);
        ck_assert_int_eq(svc->write_home_file(&h, "/etc/passwd", "x"), -EINVAL);
        h.sandboxed = false;
        ck_assert_int_eq(svc->write_home_file(&h, "y", "x"), -EPERM);
        /* Logins must land inside the session home. */
        h.sandboxed = true;
        ck_assert_int_eq(svc->login_in_place(&h, "/etc/hostname", "/etc/hostname"), -EINVAL);
        host_done(&h);
        sandbox_spec_done(&spec);
        tmpdir_remove(dir);
        free(dir);
}
END_TEST

START_TEST(the_wipe_keeps_only_the_named_regular_files_and_follows_no_link)
{
        char *dir = tmpdir_new();
        _cleanup_free_ char *home = xasprintf("%s/home", dir), *outside = xasprintf("%s/outside", dir);
        mkdir_p(home, 0700);
        mkdir_p(outside, 0700);
        _cleanup_free_ char *secret = xasprintf("%s/secret", outside);
        write_text(secret, "s", 0600);
        char p[2048];
        snprintf(p, sizeof p, "%s/auth.json", home);
        write_text(p, "login", 0600);
        snprintf(p, sizeof p, "%s/a/b/c", home);
        mkdir_p(p, 0700);
        snprintf(p, sizeof p, "%s/a/b/c/f", home);
        write_text(p, "x", 0600);
        snprintf(p, sizeof p, "%s/link-out", home);
        ck_assert_int_eq(symlink(outside, p), 0);
        snprintf(p, sizeof p, "%s/a/link-secret", home);
        ck_assert_int_eq(symlink(secret, p), 0);
        /* A kept name that is a link is not kept. */
        snprintf(p, sizeof p, "%s/.lock", home);
        ck_assert_int_eq(symlink(secret, p), 0);

        struct tb_error err = { 0 };
        const char *const keep[] = { "auth.json", ".lock", NULL };
        ck_assert_int_eq(trials_home_wipe(home, keep, &err), 0);
        struct proc_result r;
        run_argv(&r, NULL, (char *[]){ "/bin/ls", "-A", home, NULL });
        ck_assert_str_eq(r.out, "auth.json\n");
        proc_result_free(&r);
        char *s = read_text(secret);
        ck_assert_str_eq(s, "s");
        free(s);

        /* The Trials home itself must not be a link. */
        _cleanup_free_ char *lhome = xasprintf("%s/lhome", dir);
        ck_assert_int_eq(symlink(outside, lhome), 0);
        ck_assert_int_lt(trials_home_wipe(lhome, keep, &err), 0);
        ck_assert_int_eq(access(secret, F_OK), 0);
        tmpdir_remove(dir);
        free(dir);
}
END_TEST

START_TEST(the_lock_waits_then_times_out_and_is_had_once_free)
{
        char *dir = tmpdir_new();
        _cleanup_free_ char *lock = xasprintf("%s/.lock", dir);
        struct tb_error err = { 0 };
        int held = -1, fd = -1;
        ck_assert_int_eq(trials_home_lock(lock, 0, &held, &err), 0);
        /* A second open file description cannot have it while the first holds it. */
        ck_assert_int_eq(trials_home_lock(lock, 100, &fd, &err), -ETIMEDOUT);
        assert_contains(err.msg, "held by another Trial");
        close(held);
        ck_assert_int_eq(trials_home_lock(lock, 100, &fd, &err), 0);
        close(fd);
        tmpdir_remove(dir);
        free(dir);
}
END_TEST

START_TEST(a_home_dir_is_the_variable_when_absolute_else_a_folder_under_the_host_home)
{
        const struct tb_host_services *svc = host_services();
        ck_assert(TB_HOST_HAS(svc, home_dir_from_env));
        /* The services read the host environment trialbox read once (env.h). */
        char var[64] = "TB_TEST_HOME_VAR=/srv/state/";
        char *environ_[] = { var, NULL };
        struct tb_env env = { .environ = environ_ };
        struct tb_host h = { .harness = "x", .checking = true, .host_home = "/home/u", .env = &env };
        ck_assert_str_eq(svc->home_dir_from_env(&h, "TB_TEST_HOME_VAR", ".local/state"), "/srv/state");
        /* Relative, empty or unset: the folder under the home. */
        snprintf(var, sizeof var, "TB_TEST_HOME_VAR=state");
        ck_assert_str_eq(svc->home_dir_from_env(&h, "TB_TEST_HOME_VAR", ".local/state"), "/home/u/.local/state");
        snprintf(var, sizeof var, "TB_TEST_HOME_VAR=");
        ck_assert_str_eq(svc->home_dir_from_env(&h, "TB_TEST_HOME_VAR", ".codex"), "/home/u/.codex");
        environ_[0] = NULL;
        const char *first = svc->home_dir_from_env(&h, "TB_TEST_HOME_VAR", ".config");
        ck_assert_str_eq(first, "/home/u/.config");
        ck_assert_str_eq(svc->home_dir_from_env(&h, NULL, ""), "/home/u");
        /* A home of "/" gives no double slash. */
        h.host_home = "/";
        ck_assert_str_eq(svc->home_dir_from_env(&h, "TB_TEST_HOME_VAR", ".codex"), "/.codex");
        /* Never outside the home. */
        ck_assert_ptr_null(svc->home_dir_from_env(&h, "TB_TEST_HOME_VAR", "/etc"));
        ck_assert_ptr_null(svc->home_dir_from_env(&h, "TB_TEST_HOME_VAR", ".."));
        ck_assert_ptr_null(svc->home_dir_from_env(&h, "TB_TEST_HOME_VAR", "a/../../b"));
        ck_assert_ptr_null(svc->home_dir_from_env(&h, "TB_TEST_HOME_VAR", NULL));
        ck_assert_str_eq(svc->home_dir_from_env(&h, "TB_TEST_HOME_VAR", "..x/y"), "/..x/y");
        /* Each string lives until host_free (valgrind sees them freed). */
        ck_assert_str_eq(first, "/home/u/.config");
        host_done(&h);
}
END_TEST

START_TEST(endpoints_are_checked_stored_once_and_required_wins)
{
        const struct tb_host_services *svc = host_services();
        ck_assert(TB_HOST_HAS(svc, add_endpoint));
        struct tb_host h = { .harness = "x", .checking = true };
        ck_assert_int_eq(svc->add_endpoint(&h, "API.Example.COM.:443", TB_ENDPOINT_OPTIONAL), 0);
        ck_assert_int_eq(svc->add_endpoint(&h, "api.example.com:443", TB_ENDPOINT_REQUIRED), 0);
        ck_assert_int_eq(svc->add_endpoint(&h, "api.example.com:443", TB_ENDPOINT_OPTIONAL), 0);
        ck_assert_int_eq(svc->add_endpoint(&h, "*.cdn.example.com", TB_ENDPOINT_OPTIONAL), 0);
        ck_assert_int_eq(svc->add_endpoint(&h, "192.0.2.7:8080", TB_ENDPOINT_REQUIRED), 0);
        ck_assert_int_eq(svc->add_endpoint(&h, "[2001:db8::1]:443", TB_ENDPOINT_REQUIRED), 0);
        const char *const bad[] = { "",          "*",          "*.com",          "example.com:0",
                                    "example.com:65536", "example.com:", "exa mple.com", "-x.example.com",
                                    "a..b",      "[zz::1]:80", "[::1]x",         "example.com:44a",
                                    "http://example.com" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++)
                ck_assert_msg(svc->add_endpoint(&h, bad[i], TB_ENDPOINT_REQUIRED) == -EINVAL, "accepted '%s'", bad[i]);
        ck_assert_int_eq(svc->add_endpoint(&h, NULL, TB_ENDPOINT_REQUIRED), -EINVAL);
        ck_assert_int_eq(svc->add_endpoint(&h, "ok.example.com", 0), -EINVAL);
        ck_assert_int_eq(svc->add_endpoint(&h, "ok.example.com", TB_ENDPOINT_REQUIRED | TB_ENDPOINT_OPTIONAL), -EINVAL);

        assert_endpoints(&h, { "api.example.com:443", true }, { "*.cdn.example.com", false },
                         { "192.0.2.7:8080", true }, { "[2001:db8::1]:443", true });
        host_done(&h);
}
END_TEST

TB_SUITE("host", 0)
{
        tcase_add_test(tc, a_plugin_reads_only_its_own_section_of_the_credentials);
        tcase_add_test(tc, a_malformed_credentials_file_voids_with_its_error);
        tcase_add_test(tc, home_files_are_written_0600_only_in_the_fresh_home);
        tcase_add_test(tc, the_wipe_keeps_only_the_named_regular_files_and_follows_no_link);
        tcase_add_test(tc, the_lock_waits_then_times_out_and_is_had_once_free);
        tcase_add_test(tc, a_home_dir_is_the_variable_when_absolute_else_a_folder_under_the_host_home);
        tcase_add_test(tc, endpoints_are_checked_stored_once_and_required_wins);
}
