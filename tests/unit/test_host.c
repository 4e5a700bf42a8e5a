/* The host services plugins get: the Credentials scope, files in the fresh
 * home, the Trials-home lock and wipe, the kept login. */
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
        _cleanup_tmpdir_ char *dir = tmpdir_new();
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
}
END_TEST

START_TEST(a_malformed_credentials_file_voids_with_its_error)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *path = xasprintf("%s/credentials.json", dir);
        write_text(path, "{\"claude\": {\"setup_token\": 42}}", 0600);
        struct tb_host h = { .harness = "claude", .credentials_path = path };
        ck_assert_ptr_null(host_services()->require_credential(&h, "setup_token", "how"));
        ck_assert(h.voided);
        assert_contains(h.void_detail, "'claude.setup_token' must be a string");
        assert_contains(h.void_detail, path);
        host_done(&h);
}
END_TEST

START_TEST(home_files_are_written_0600_only_in_the_fresh_home)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
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
}
END_TEST

START_TEST(the_wipe_keeps_only_the_named_regular_files_and_follows_no_link)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
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
}
END_TEST

START_TEST(the_lock_waits_then_times_out_and_is_had_once_free)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
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

/* What a valid login is: each row, then whether it is one (NULL) or what it is instead. */
static const struct {
        const char *data;
        size_t len; /* 0: strlen */
        enum kept_format format;
        size_t max;
        const char *why;
} login_rows[] = {
        { "{\"access_token\": \"t\"}", 0, KEPT_JSON_OBJECT, 100, NULL },
        { " \n{}\r\n\t", 0, KEPT_JSON_OBJECT, 100, NULL },
        { "", 0, KEPT_JSON_OBJECT, 100, "empty" },
        { "", 0, KEPT_ANY, 100, "empty" },
        { "   ", 0, KEPT_JSON_OBJECT, 100, "not a JSON object" },
        { "{\"half", 0, KEPT_JSON_OBJECT, 100, "not a JSON object" },
        { "[\"a\"]", 0, KEPT_JSON_OBJECT, 100, "not a JSON object" },
        { "\"token\"", 0, KEPT_JSON_OBJECT, 100, "not a JSON object" },
        { "{} {}", 0, KEPT_JSON_OBJECT, 100, "not a JSON object" },
        { "{}x", 0, KEPT_JSON_OBJECT, 100, "not a JSON object" },
        { "{}\0", 3, KEPT_JSON_OBJECT, 100, "not a JSON object (a NUL byte)" },
        { "{\"a\": \"0123456789\"}", 0, KEPT_JSON_OBJECT, 10, "larger than a login" },
        { "any token", 0, KEPT_ANY, 100, NULL },
        { "any token", 0, KEPT_ANY, 4, "larger than a login" },
};

START_TEST(a_valid_login_is_a_json_object_within_its_size)
{
        const char *d = login_rows[_i].data;
        size_t len = login_rows[_i].len ? login_rows[_i].len : strlen(d);
        const char *why = kept_login_invalid(d, len, login_rows[_i].format, login_rows[_i].max);
        if (!login_rows[_i].why)
                ck_assert_msg(!why, "'%s' is a valid login, not %s", d, why);
        else
                ck_assert_msg(why && strcmp(why, login_rows[_i].why) == 0, "'%s': '%s', not '%s'", d, why ? why : "valid",
                              login_rows[_i].why);
}
END_TEST

START_TEST(keep_login_is_a_service_of_abi_1_3_and_refuses_bad_arguments)
{
        const struct tb_host_services *svc = host_services();
        ck_assert(TB_HOST_HAS(svc, keep_login));
        ck_assert_uint_ge(TB_PLUGIN_ABI_MINOR_OF(svc->abi_version), 3);
        struct tb_host h = { .harness = "grok", .checking = true };
        ck_assert_int_eq(svc->keep_login(&h, "relative/auth.json", TB_LOGIN_JSON_OBJECT, 0), -EINVAL);
        ck_assert_int_eq(svc->keep_login(&h, NULL, TB_LOGIN_ANY, 0), -EINVAL);
        ck_assert_int_eq(svc->keep_login(&h, "/x/auth.json", 7, 0), -EINVAL);
        /* `check` changes nothing. */
        ck_assert_int_eq(svc->keep_login(&h, "/nonexistent/trials/grok/auth.json", TB_LOGIN_JSON_OBJECT, 0), 0);
        host_done(&h);
}
END_TEST

START_TEST(a_kept_login_is_kept_and_put_back_through_the_fds_taken_first)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *home = path_in(dir, "trials/h"), *login = path_in(home, "auth.json");
        _cleanup_free_ char *kept = path_in(dir, "trials/h.kept/auth.json");
        ck_assert_int_eq(mkdir_p(home, 0700), 0);
        write_text(login, "{\"v\": 1}", 0600);
        struct kept_login k = KEPT_LOGIN_INIT;
        struct tb_error err = { 0 };
        const char *restored = "unset";
        ck_assert_int_eq(kept_login_open(&k, login, KEPT_JSON_OBJECT, 0, &restored, &err), 0);
        ck_assert_ptr_null(restored);
        _cleanup_free_ char *got = read_text(kept);
        ck_assert_str_eq(got, "{\"v\": 1}");
        /* The home moved away and another put in its place: the fds taken
         * before still reach the first one, nothing is written to the new. */
        _cleanup_free_ char *moved = path_in(dir, "trials/moved");
        ck_assert_int_eq(rename(home, moved), 0);
        ck_assert_int_eq(mkdir(home, 0700), 0);
        _cleanup_free_ char *moved_login = path_in(moved, "auth.json");
        ck_assert_int_eq(unlink(moved_login), 0);
        ck_assert_int_eq(kept_login_sync(&k, &restored, &err), 0);
        ck_assert_str_eq(restored, "missing");
        free(got);
        got = read_text(moved_login);
        ck_assert_str_eq(got, "{\"v\": 1}");
        ck_assert_int_ne(access(login, F_OK), 0);
        kept_login_done(&k);
        ck_assert_int_eq(k.dir_fd, -1);
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
        tcase_add_loop_test(tc, a_valid_login_is_a_json_object_within_its_size, 0, (int)TB_ARRAY_SIZE(login_rows));
        tcase_add_test(tc, keep_login_is_a_service_of_abi_1_3_and_refuses_bad_arguments);
        tcase_add_test(tc, a_kept_login_is_kept_and_put_back_through_the_fds_taken_first);
}
