#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "logins/credentials.h"
#include "cmd/cli.h"
#include "base/env.h"
#include "tb_test.h"

/* Planted in every malformed file: no message may ever contain it. */
#define SECRET "s3cr3t-PLANTED-value"

static char *tmpdir; /* a test's own folder */
static char *path;   /* tmpdir/credentials.json */

static void setup(void)
{
        tmpdir = tmpdir_new();
        path = path_in(tmpdir, "credentials.json");
}

static void teardown(void)
{
        tmpdir_remove(tmpdir);
        free(tmpdir);
        free(path);
        tmpdir = path = NULL;
}

static char *slurp(const char *p)
{
        char *s = read_file(p, 1 << 20, NULL);
        ck_assert_ptr_nonnull(s);
        return s;
}

/* Load `text` from the test file, expect -EINVAL, check the message names
 * the file and leaks no planted secret, and return the message. */
static struct tb_error load_bad(const char *text, size_t len)
{
        struct tb_error err = { 0 };
        struct credentials *c = NULL;
        write_bytes(path, text, len, 0600);
        ck_assert_int_eq(credentials_load(path, &c, &err), -EINVAL);
        ck_assert_ptr_null(c);
        ck_assert_int_eq(err.code, -EINVAL);
        assert_contains(err.msg, path);
        assert_lacks(err.msg, SECRET);
        ck_assert_ptr_null(strchr(err.msg, '\n'));
        return err;
}

static char *expected(const char *fmt_after_path)
{
        return xasprintf("credentials '%s': %s", path, fmt_after_path);
}

/* ---- loading ---- */

START_TEST(a_missing_file_is_empty_credentials)
{
        struct tb_error err = { 0 };
        _cleanup_credentials_ struct credentials *c = NULL;
        _cleanup_(strv_done) struct strv names = { 0 };

        ck_assert_int_eq(credentials_load(path, &c, &err), 0);
        ck_assert_ptr_nonnull(c);
        credentials_names(c, &names);
        ck_assert_uint_eq(names.n, 0);
        ck_assert(!credentials_loose_mode(c));
        ck_assert_ptr_null(credentials_get(c, "claude", "setup_token"));
}
END_TEST

START_TEST(a_well_formed_file_gives_each_value)
{
        struct tb_error err = { 0 };
        _cleanup_credentials_ struct credentials *c = NULL;
        _cleanup_(strv_done) struct strv names = { 0 };

        write_text(path, "{\"claude\": {\"setup_token\": \"tok\"},\n"
                         " \"opencode\": {\"api_key\": \"k\\u00e9y\", \"provider\": \"anthropic\"}}\n", 0600);
        ck_assert_int_eq(credentials_load(path, &c, &err), 0);
        ck_assert_str_eq(credentials_get(c, "claude", "setup_token"), "tok");
        ck_assert_str_eq(credentials_get(c, "opencode", "api_key"), "k\xc3\xa9y");
        ck_assert_str_eq(credentials_get(c, "opencode", "provider"), "anthropic");
        ck_assert_ptr_null(credentials_get(c, "claude", "api_key"));
        ck_assert_ptr_null(credentials_get(c, "grok", "setup_token"));
        ck_assert(!credentials_loose_mode(c));
        credentials_names(c, &names);
        ck_assert_uint_eq(names.n, 3);
        ck_assert_str_eq(names.v[0], "claude.setup_token");
        ck_assert_str_eq(names.v[1], "opencode.api_key");
        ck_assert_str_eq(names.v[2], "opencode.provider");
}
END_TEST

START_TEST(invalid_json_is_reported_with_the_file_line_and_column)
{
        static const char text[] = "{\n"
                                   "  \"claude\": {\n"
                                   "    \"setup_token\": \"" SECRET "\"\n"
                                   "    \"other\": \"x\"\n"
                                   "  }\n"
                                   "}\n";
        struct tb_error err = load_bad(text, sizeof text - 1);
        _cleanup_free_ char *want =
                expected("invalid JSON at line 4, column 5: object value separator ',' expected; fix or remove the file");
        ck_assert_str_eq(err.msg, want);
}
END_TEST

START_TEST(a_truncated_file_is_invalid_json_at_its_end)
{
        static const char text[] = "{\"claude\": {\"setup_token\": \"" SECRET;
        struct tb_error err = load_bad(text, sizeof text - 1);
        _cleanup_free_ char *want = xasprintf("credentials '%s': invalid JSON at line 1, column %zu: unexpected end "
                                              "of data; fix or remove the file",
                                              path, sizeof text);
        ck_assert_str_eq(err.msg, want);
}
END_TEST

START_TEST(an_empty_file_is_invalid_json)
{
        struct tb_error err = load_bad("", 0);
        _cleanup_free_ char *want =
                expected("invalid JSON at line 1, column 1: unexpected end of data; fix or remove the file");
        ck_assert_str_eq(err.msg, want);
}
END_TEST

START_TEST(a_top_level_array_is_refused)
{
        static const char text[] = "[\"" SECRET "\"]\n";
        struct tb_error err = load_bad(text, sizeof text - 1);
        _cleanup_free_ char *want = expected("the top level must be a JSON object; fix or remove the file");
        ck_assert_str_eq(err.msg, want);
}
END_TEST

START_TEST(a_section_that_is_not_an_object_is_named)
{
        static const char text[] = "{\"opencode\": {\"api_key\": \"x\"}, \"claude\": \"" SECRET "\"}";
        struct tb_error err = load_bad(text, sizeof text - 1);
        _cleanup_free_ char *want = expected("'claude' must be an object of strings; fix the file");
        ck_assert_str_eq(err.msg, want);
}
END_TEST

START_TEST(a_non_string_value_is_named_by_its_key_path)
{
        static const char text[] = "{\"claude\": {\"setup_token\": [\"" SECRET "\"]}}";
        struct tb_error err = load_bad(text, sizeof text - 1);
        _cleanup_free_ char *want = expected("'claude.setup_token' must be a string; fix the file");
        ck_assert_str_eq(err.msg, want);

        /* A number is not quoted back either. */
        static const char num[] = "{\"opencode\": {\"api_key\": 73570113}}";
        err = load_bad(num, sizeof num - 1);
        assert_lacks(err.msg, "73570113");
        assert_contains(err.msg, "'opencode.api_key' must be a string");
}
END_TEST

START_TEST(trailing_garbage_after_the_object_is_refused)
{
        static const char text[] = "{\"claude\": {\"setup_token\": \"" SECRET "\"}}\n  " SECRET "\n";
        struct tb_error err = load_bad(text, sizeof text - 1);
        _cleanup_free_ char *want = expected("invalid JSON at line 2, column 3: unexpected data after the top-level "
                                             "object; fix or remove the file");
        ck_assert_str_eq(err.msg, want);

        static const char two[] = "{} {}";
        err = load_bad(two, sizeof two - 1);
        assert_contains(err.msg, "line 1, column 4: unexpected data after the top-level object");
}
END_TEST

START_TEST(a_value_with_a_nul_escape_is_refused)
{
        static const char text[] = "{\"claude\": {\"setup_token\": \"" SECRET "\\u0000x\"}}";
        struct tb_error err = load_bad(text, sizeof text - 1);
        assert_contains(err.msg, "'claude.setup_token' contains a NUL character");
}
END_TEST

START_TEST(a_raw_nul_byte_in_the_file_is_invalid_json)
{
        static const char text[] = "{\"claude\": {\"setup_token\": \"" SECRET "\0x\"}}";
        struct tb_error err = load_bad(text, sizeof text - 1);
        assert_contains(err.msg, "invalid JSON at line 1, column ");
}
END_TEST

START_TEST(a_bad_name_in_the_file_is_refused)
{
        static const char text[] = "{\"Claude\": {\"setup_token\": \"" SECRET "\"}}";
        struct tb_error err = load_bad(text, sizeof text - 1);
        assert_contains(err.msg, "section name 'Claude' is invalid");

        static const char key[] = "{\"claude\": {\"setup token\": \"" SECRET "\"}}";
        err = load_bad(key, sizeof key - 1);
        assert_contains(err.msg, "key name 'claude.setup token' is invalid");
}
END_TEST

START_TEST(a_group_readable_file_loads_and_is_flagged_loose)
{
        static const char text[] = "{\"claude\": {\"setup_token\": \"tok\"}}";
        struct tb_error err = { 0 };
        _cleanup_credentials_ struct credentials *c = NULL;

        write_bytes(path, text, sizeof text - 1, 0640);
        ck_assert_int_eq(credentials_load(path, &c, &err), 0);
        ck_assert(credentials_loose_mode(c));
        ck_assert_str_eq(credentials_get(c, "claude", "setup_token"), "tok");
        credentials_free(c);
        c = NULL;

        write_bytes(path, text, sizeof text - 1, 0600);
        ck_assert_int_eq(credentials_load(path, &c, &err), 0);
        ck_assert(!credentials_loose_mode(c));
}
END_TEST

START_TEST(a_symlink_as_the_file_to_load_is_refused)
{
        _cleanup_free_ char *real = xasprintf("%s/real.json", tmpdir);
        struct tb_error err = { 0 };
        struct credentials *c = NULL;

        write_text(real, "{}", 0600);
        ck_assert_int_eq(symlink(real, path), 0);
        ck_assert_int_eq(credentials_load(path, &c, &err), -ELOOP);
        ck_assert_ptr_null(c);
        assert_contains(err.msg, "is a symbolic link");
        assert_contains(err.msg, path);
}
END_TEST

START_TEST(a_folder_or_a_fifo_as_the_file_is_refused)
{
        struct tb_error err = { 0 };
        struct credentials *c = NULL;

        ck_assert_int_eq(mkdir(path, 0700), 0);
        ck_assert_int_eq(credentials_load(path, &c, &err), -EISDIR);
        assert_contains(err.msg, "is a folder");
        ck_assert_int_eq(rmdir(path), 0);

        /* Must not block waiting for a writer. */
        ck_assert_int_eq(mkfifo(path, 0600), 0);
        ck_assert_int_eq(credentials_load(path, &c, &err), -EINVAL);
        assert_contains(err.msg, "is not a regular file");
        ck_assert_ptr_null(c);
}
END_TEST

START_TEST(a_file_over_one_mib_is_refused)
{
        size_t n = CREDENTIALS_MAX_SIZE + 1;
        _cleanup_free_ char *big = xmalloc(n);
        struct tb_error err = { 0 };
        struct credentials *c = NULL;

        memset(big, ' ', n);
        big[0] = '{';
        big[n - 1] = '}';
        write_bytes(path, big, n, 0600);
        ck_assert_int_eq(credentials_load(path, &c, &err), -EFBIG);
        assert_contains(err.msg, "larger than 1 MiB");

        /* Exactly the limit is fine. */
        big[n - 2] = '}';
        write_bytes(path, big, n - 1, 0600);
        ck_assert_int_eq(credentials_load(path, &c, &err), 0);
        credentials_free(c);
}
END_TEST

/* ---- changing and saving ---- */

START_TEST(set_then_names_round_trips_through_the_file)
{
        struct tb_error err = { 0 };
        _cleanup_credentials_ struct credentials *c = credentials_new();
        _cleanup_credentials_ struct credentials *back = NULL;
        _cleanup_(strv_done) struct strv names = { 0 };

        ck_assert_int_eq(credentials_set(c, "opencode", "provider", "anthropic"), 0);
        ck_assert_int_eq(credentials_set(c, "claude", "setup_token", "old"), 0);
        ck_assert_int_eq(credentials_set(c, "opencode", "api_key", "k1"), 0);
        ck_assert_int_eq(credentials_set(c, "claude", "setup_token", "new"), 0);
        ck_assert_int_eq(credentials_save(c, path, &err), 0);

        ck_assert_int_eq(credentials_load(path, &back, &err), 0);
        credentials_names(back, &names);
        ck_assert_uint_eq(names.n, 3);
        ck_assert_str_eq(names.v[0], "claude.setup_token");
        ck_assert_str_eq(names.v[1], "opencode.api_key");
        ck_assert_str_eq(names.v[2], "opencode.provider");
        ck_assert_str_eq(credentials_get(back, "claude", "setup_token"), "new");
        ck_assert_str_eq(credentials_get(back, "opencode", "api_key"), "k1");
        ck_assert_str_eq(credentials_get(back, "opencode", "provider"), "anthropic");
}
END_TEST

START_TEST(values_needing_escapes_survive_a_save)
{
        static const char odd[] = "q\"b\\s/n\nr\rt\tc\x01\x1f" "d\x7f" "e\xc3\xa9 snow\xe2\x98\x83 end";
        struct tb_error err = { 0 };
        _cleanup_credentials_ struct credentials *c = credentials_new();
        _cleanup_credentials_ struct credentials *back = NULL;

        ck_assert_int_eq(credentials_set(c, "opencode", "api_key", odd), 0);
        ck_assert_int_eq(credentials_save(c, path, &err), 0);
        ck_assert_int_eq(credentials_load(path, &back, &err), 0);
        ck_assert_str_eq(credentials_get(back, "opencode", "api_key"), odd);

        /* The file is plain pretty JSON, one line per value. */
        _cleanup_free_ char *text = slurp(path);
        ck_assert_str_eq(text, "{\n"
                               "  \"opencode\": {\n"
                               "    \"api_key\": \"q\\\"b\\\\s/n\\nr\\rt\\tc\\u0001\\u001fd\\u007fe\xc3\xa9 "
                               "snow\xe2\x98\x83 end\"\n"
                               "  }\n"
                               "}\n");
}
END_TEST

START_TEST(set_refuses_bad_names_empty_values_and_invalid_utf8)
{
        _cleanup_credentials_ struct credentials *c = credentials_new();
        _cleanup_(strv_done) struct strv names = { 0 };

        ck_assert_int_eq(credentials_set(c, "Claude", "setup_token", "x"), -EINVAL);
        ck_assert_int_eq(credentials_set(c, "claude", "setup.token", "x"), -EINVAL);
        ck_assert_int_eq(credentials_set(c, "", "k", "x"), -EINVAL);
        ck_assert_int_eq(credentials_set(c, "claude", "setup_token", ""), -EINVAL);
        ck_assert_int_eq(credentials_set(c, "claude", "setup_token", "a\xff"), -EINVAL);
        ck_assert_int_eq(credentials_set(c, "claude", "setup_token", "\xed\xa0\x80"), -EINVAL); /* a surrogate */
        ck_assert_int_eq(credentials_set(c, "claude", "setup_token", "\xc0\xaf"), -EINVAL);     /* overlong */
        credentials_names(c, &names);
        ck_assert_uint_eq(names.n, 0);
}
END_TEST

START_TEST(unset_removes_the_key_and_drops_an_emptied_section)
{
        struct tb_error err = { 0 };
        _cleanup_credentials_ struct credentials *c = credentials_new();
        _cleanup_credentials_ struct credentials *back = NULL;
        _cleanup_(strv_done) struct strv names = { 0 };

        ck_assert_int_eq(credentials_set(c, "claude", "setup_token", "t"), 0);
        ck_assert_int_eq(credentials_set(c, "opencode", "api_key", "k"), 0);
        ck_assert_int_eq(credentials_set(c, "opencode", "provider", "p"), 0);

        ck_assert_int_eq(credentials_unset(c, "opencode", "api_key"), 0);
        ck_assert_ptr_null(credentials_get(c, "opencode", "api_key"));
        ck_assert_str_eq(credentials_get(c, "opencode", "provider"), "p");
        ck_assert_int_eq(credentials_unset(c, "opencode", "api_key"), -ENOENT);
        ck_assert_int_eq(credentials_unset(c, "grok", "x"), -ENOENT);

        ck_assert_int_eq(credentials_unset(c, "claude", "setup_token"), 0);
        ck_assert_int_eq(credentials_save(c, path, &err), 0);
        _cleanup_free_ char *text = slurp(path);
        assert_lacks(text, "claude");

        ck_assert_int_eq(credentials_unset(c, "opencode", "provider"), 0);
        ck_assert_int_eq(credentials_save(c, path, &err), 0);
        _cleanup_free_ char *empty = slurp(path);
        ck_assert_str_eq(empty, "{}\n");
        ck_assert_int_eq(credentials_load(path, &back, &err), 0);
        credentials_names(back, &names);
        ck_assert_uint_eq(names.n, 0);
}
END_TEST

START_TEST(a_saved_file_is_mode_0600_even_with_umask_0)
{
        struct tb_error err = { 0 };
        _cleanup_credentials_ struct credentials *c = credentials_new();

        ck_assert_int_eq(credentials_set(c, "claude", "setup_token", "t"), 0);
        mode_t old = umask(0);
        int r = credentials_save(c, path, &err);
        umask(old);
        ck_assert_int_eq(r, 0);
        ck_assert_uint_eq(mode_of(path), 0600);
}
END_TEST

START_TEST(resaving_over_a_0644_file_makes_it_0600)
{
        struct tb_error err = { 0 };
        _cleanup_credentials_ struct credentials *c = credentials_new();
        _cleanup_credentials_ struct credentials *back = NULL;

        write_bytes(path, "{}", 2, 0644);
        ck_assert_uint_eq(mode_of(path), 0644);
        ck_assert_int_eq(credentials_set(c, "claude", "setup_token", "t"), 0);
        ck_assert_int_eq(credentials_save(c, path, &err), 0);
        ck_assert_uint_eq(mode_of(path), 0600);
        ck_assert_int_eq(credentials_load(path, &back, &err), 0);
        ck_assert(!credentials_loose_mode(back));
        ck_assert_str_eq(credentials_get(back, "claude", "setup_token"), "t");
}
END_TEST

START_TEST(saving_into_a_missing_folder_creates_it_0700)
{
        struct tb_error err = { 0 };
        _cleanup_credentials_ struct credentials *c = credentials_new();
        _cleanup_free_ char *outer = xasprintf("%s/config", tmpdir);
        _cleanup_free_ char *inner = xasprintf("%s/config/trialbox", tmpdir);
        _cleanup_free_ char *file = xasprintf("%s/config/trialbox/credentials.json", tmpdir);

        ck_assert_int_eq(credentials_set(c, "claude", "setup_token", "t"), 0);
        mode_t old = umask(0);
        int r = credentials_save(c, file, &err);
        umask(old);
        ck_assert_int_eq(r, 0);
        ck_assert_uint_eq(mode_of(outer), 0700);
        ck_assert_uint_eq(mode_of(inner), 0700);
        ck_assert_uint_eq(mode_of(file), 0600);
}
END_TEST

START_TEST(a_symlink_as_the_save_target_is_refused)
{
        _cleanup_free_ char *real = xasprintf("%s/real.json", tmpdir);
        struct tb_error err = { 0 };
        _cleanup_credentials_ struct credentials *c = credentials_new();
        struct stat st;

        write_text(real, "{}", 0600);
        ck_assert_int_eq(symlink(real, path), 0);
        ck_assert_int_eq(credentials_set(c, "claude", "setup_token", "t"), 0);
        ck_assert_int_eq(credentials_save(c, path, &err), -ELOOP);
        _cleanup_free_ char *want = xasprintf("credentials '%s' is a symbolic link; trialbox does not write through "
                                              "it: replace it with the file itself or give --credentials FILE",
                                              path);
        ck_assert_str_eq(err.msg, want);
        /* Neither the link nor its target changed. */
        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert(S_ISLNK(st.st_mode));
        _cleanup_free_ char *text = slurp(real);
        ck_assert_str_eq(text, "{}");
}
END_TEST

START_TEST(bad_keys_are_rejected)
{
        static const char *const bad[] = { "nodot", ".x", "a.", "A B.c", "a.b.c", "Claude.x", "a.b c", "",
                                           ".", "a..b", "a/b.c", "a.b\n" };
        char *section = NULL, *key = NULL;

        for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++) {
                ck_assert_msg(credentials_parse_key(bad[i], &section, &key) == -EINVAL, "'%s' was accepted", bad[i]);
                ck_assert_ptr_null(section);
                ck_assert_ptr_null(key);
        }
        ck_assert_int_eq(credentials_parse_key("claude.setup_token", &section, &key), 0);
        ck_assert_str_eq(section, "claude");
        ck_assert_str_eq(key, "setup_token");
        free(section);
        free(key);
        ck_assert_int_eq(credentials_parse_key("open-code_2.API-key_9", &section, &key), 0);
        ck_assert_str_eq(section, "open-code_2");
        ck_assert_str_eq(key, "API-key_9");
        free(section);
        free(key);
}
END_TEST

static void set_env(const char *name, const char *value)
{
        if (value)
                setenv(name, value, 1);
        else
                unsetenv(name);
}

/* The default path as the command finds it: the environment read now. */
static int default_path(char **out)
{
        struct tb_env env;
        tb_env_init(&env);
        int r = credentials_default_path(&env, out);
        tb_env_done(&env);
        return r;
}

/* `trialbox credentials` as cli_main runs it. */
static int credentials_command(int argc, char **argv, const char *override)
{
        struct tb_env env;
        tb_env_init(&env);
        int status = credentials_main(&env, argc, argv, override);
        tb_env_done(&env);
        return status;
}

START_TEST(the_default_path_follows_xdg_config_home_then_home)
{
        _cleanup_free_ char *old_xdg = getenv("XDG_CONFIG_HOME") ? xstrdup(getenv("XDG_CONFIG_HOME")) : NULL;
        _cleanup_free_ char *old_home = getenv("HOME") ? xstrdup(getenv("HOME")) : NULL;
        _cleanup_free_ char *a = NULL, *b = NULL, *d = NULL;

        set_env("XDG_CONFIG_HOME", "/xdg/conf/");
        set_env("HOME", "/home/someone");
        ck_assert_int_eq(default_path(&a), 0);
        /* A relative XDG_CONFIG_HOME is ignored, as the XDG spec says. */
        set_env("XDG_CONFIG_HOME", "relative/conf");
        ck_assert_int_eq(default_path(&b), 0);
        set_env("XDG_CONFIG_HOME", "");
        ck_assert_int_eq(default_path(&d), 0);
        set_env("XDG_CONFIG_HOME", old_xdg);
        set_env("HOME", old_home);

        ck_assert_str_eq(a, "/xdg/conf/trialbox/credentials.json");
        ck_assert_str_eq(b, "/home/someone/.config/trialbox/credentials.json");
        ck_assert_str_eq(d, "/home/someone/.config/trialbox/credentials.json");
}
END_TEST

/* ---- `trialbox credentials` ---- */


/* Run credentials_main in a child with `in` (len bytes) on its stdin, a
 * pipe, and its stdout and stderr captured. */
static struct proc_result run_cmd(const char *in, size_t len, const char *override, const char *a1, const char *a2,
                          const char *a3)
{
        char *argv[] = { "credentials", (char *)a1, (char *)a2, (char *)a3, NULL };
        int argc = 1 + (a1 != NULL) + (a1 && a2) + (a1 && a2 && a3);
        int pin[2], pout[2], perr[2];
        struct proc_result r = { 0 };

        ck_assert_int_eq(pipe2(pin, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(pout, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(perr, O_CLOEXEC), 0);
        fflush(NULL);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                dup2(pin[0], STDIN_FILENO);
                dup2(pout[1], STDOUT_FILENO);
                dup2(perr[1], STDERR_FILENO);
                /* No exec follows: close the other ends by hand, or stdin never ends. */
                close(pin[1]);
                close(pout[0]);
                close(perr[0]);
                int status = credentials_command(argc, argv, override);
                fflush(stdout);
                fflush(stderr);
                _exit(status);
        }
        close(pin[0]);
        close(pout[1]);
        close(perr[1]);
        /* A child that fails early never reads its stdin: EPIPE, not a dead test. */
        void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
        if (len > 0) {
                ssize_t w = write(pin[1], in, len);
                ck_assert(w == (ssize_t)len || (w < 0 && errno == EPIPE));
        }
        signal(SIGPIPE, old_pipe);
        close(pin[1]);
        r.out = read_fd(pout[0]);
        r.err = read_fd(perr[0]);
        close(pout[0]);
        close(perr[0]);
        int ws;
        ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
        ck_assert(WIFEXITED(ws));
        r.status = WEXITSTATUS(ws);
        return r;
}


static const char *get_from(const char *p, const char *section, const char *key, struct credentials **keep)
{
        struct tb_error err = { 0 };
        ck_assert_int_eq(credentials_load(p, keep, &err), 0);
        return credentials_get(*keep, section, key);
}

START_TEST(set_reads_the_value_from_stdin_and_drops_one_trailing_newline)
{
        _cleanup_credentials_ struct credentials *c1 = NULL, *c2 = NULL, *c3 = NULL;
        _cleanup_(proc_result_free) struct proc_result a = run_cmd(SECRET "\r\n", strlen(SECRET) + 2, path, "set",
                                                   "claude.setup_token", NULL);
        ck_assert_int_eq(a.status, 0);
        ck_assert_str_eq(a.out, "");
        assert_lacks(a.err, SECRET);
        ck_assert_str_eq(get_from(path, "claude", "setup_token", &c1), SECRET);
        ck_assert_uint_eq(mode_of(path), 0600);

        /* Only one newline goes; no newline at all is fine. */
        _cleanup_(proc_result_free) struct proc_result b = run_cmd("two\n\n", 5, path, "set", "opencode.api_key", NULL);
        ck_assert_int_eq(b.status, 0);
        ck_assert_str_eq(get_from(path, "opencode", "api_key", &c2), "two\n");
        _cleanup_(proc_result_free) struct proc_result d = run_cmd("bare", 4, path, "set", "opencode.provider", NULL);
        ck_assert_int_eq(d.status, 0);
        ck_assert_str_eq(get_from(path, "opencode", "provider", &c3), "bare");
        ck_assert_str_eq(credentials_get(c3, "claude", "setup_token"), SECRET);
}
END_TEST

START_TEST(set_never_takes_the_value_from_argv)
{
        _cleanup_(proc_result_free) struct proc_result r = run_cmd(NULL, 0, path, "set", "claude.setup_token", SECRET);
        ck_assert_int_eq(r.status, 2);
        ck_assert_str_eq(r.err, "trialbox: 'set' takes only a KEY: the value is read from stdin, never from the "
                                "command line; see 'trialbox credentials --help'\n");
        assert_lacks(r.err, SECRET);
        ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(set_refuses_an_empty_value_or_one_with_a_nul_byte)
{
        _cleanup_(proc_result_free) struct proc_result e = run_cmd("\n", 1, path, "set", "claude.setup_token", NULL);
        ck_assert_int_eq(e.status, 2);
        ck_assert_str_eq(e.err, "trialbox: the value on stdin is empty; pipe the secret in, e.g. 'trialbox "
                                "credentials set claude.setup_token < FILE'; see 'trialbox credentials --help'\n");

        _cleanup_(proc_result_free) struct proc_result n = run_cmd("ab\0cd\n", 6, path, "set", "claude.setup_token", NULL);
        ck_assert_int_eq(n.status, 2);
        ck_assert_str_eq(n.err, "trialbox: the value on stdin contains a NUL byte; a credential must be text; "
                                "see 'trialbox credentials --help'\n");

        _cleanup_(proc_result_free) struct proc_result u = run_cmd("a\xff\n", 3, path, "set", "claude.setup_token", NULL);
        ck_assert_int_eq(u.status, 2);
        assert_contains(u.err, "not UTF-8 text");
        ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(list_prints_the_names_and_never_the_values)
{
        _cleanup_(proc_result_free) struct proc_result a = run_cmd(SECRET, strlen(SECRET), path, "set", "opencode.api_key", NULL);
        _cleanup_(proc_result_free) struct proc_result b = run_cmd(SECRET "2\n", strlen(SECRET) + 2, path, "set",
                                                   "claude.setup_token", NULL);
        ck_assert_int_eq(a.status, 0);
        ck_assert_int_eq(b.status, 0);

        _cleanup_(proc_result_free) struct proc_result l = run_cmd(NULL, 0, path, "list", NULL, NULL);
        ck_assert_int_eq(l.status, 0);
        ck_assert_str_eq(l.out, "claude.setup_token\nopencode.api_key\n");
        ck_assert_str_eq(l.err, "");
        assert_lacks(l.out, SECRET);
}
END_TEST

START_TEST(list_of_a_missing_file_prints_nothing)
{
        _cleanup_(proc_result_free) struct proc_result l = run_cmd(NULL, 0, path, "list", NULL, NULL);
        ck_assert_int_eq(l.status, 0);
        ck_assert_str_eq(l.out, "");
        ck_assert_str_eq(l.err, "");
        ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(list_warns_about_a_file_readable_by_others)
{
        static const char text[] = "{\"claude\": {\"setup_token\": \"" SECRET "\"}}";
        write_bytes(path, text, sizeof text - 1, 0644);
        _cleanup_(proc_result_free) struct proc_result l = run_cmd(NULL, 0, path, "list", NULL, NULL);
        ck_assert_int_eq(l.status, 0);
        ck_assert_str_eq(l.out, "claude.setup_token\n");
        _cleanup_free_ char *want =
                xasprintf("trialbox: warning: credentials '%s' is readable by others; run: chmod 600 '%s'\n", path, path);
        ck_assert_str_eq(l.err, want);
}
END_TEST

START_TEST(unset_removes_a_key_and_an_absent_key_fails)
{
        _cleanup_credentials_ struct credentials *c = NULL;
        _cleanup_(proc_result_free) struct proc_result a = run_cmd("t", 1, path, "set", "claude.setup_token", NULL);
        _cleanup_(proc_result_free) struct proc_result b = run_cmd("k", 1, path, "set", "opencode.api_key", NULL);
        ck_assert_int_eq(a.status + b.status, 0);

        _cleanup_(proc_result_free) struct proc_result u = run_cmd(NULL, 0, path, "unset", "claude.setup_token", NULL);
        ck_assert_int_eq(u.status, 0);
        ck_assert_ptr_null(get_from(path, "claude", "setup_token", &c));
        ck_assert_str_eq(credentials_get(c, "opencode", "api_key"), "k");

        _cleanup_(proc_result_free) struct proc_result again = run_cmd(NULL, 0, path, "unset", "claude.setup_token", NULL);
        ck_assert_int_eq(again.status, 1);
        _cleanup_free_ char *want = xasprintf("trialbox: 'claude.setup_token' is not in credentials '%s'; see "
                                              "'trialbox credentials list'\n",
                                              path);
        ck_assert_str_eq(again.err, want);
}
END_TEST

START_TEST(a_bad_key_is_a_usage_error_naming_the_key)
{
        static const char *const bad[] = { "nodot", ".x", "a.", "A B.c" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++) {
                _cleanup_(proc_result_free) struct proc_result r = run_cmd("v", 1, path, "set", bad[i], NULL);
                ck_assert_int_eq(r.status, 2);
                _cleanup_free_ char *head = xasprintf("trialbox: '%s' is not a valid KEY: use SECTION.KEY", bad[i]);
                ck_assert_msg(str_has_prefix(r.err, head), "stderr was: %s", r.err);
                ck_assert(strstr(r.err, "; see 'trialbox credentials --help'\n") != NULL);
                ck_assert_uint_eq(count_lines(r.err), 1);
        }
        ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(usage_errors_exit_2_with_one_line)
{
        _cleanup_(proc_result_free) struct proc_result none = run_cmd(NULL, 0, path, NULL, NULL, NULL);
        ck_assert_int_eq(none.status, 2);
        ck_assert_str_eq(none.err, "trialbox: 'credentials' needs a command: set KEY, unset KEY or list; see "
                                   "'trialbox credentials --help'\n");
        _cleanup_(proc_result_free) struct proc_result unknown = run_cmd(NULL, 0, path, "show", NULL, NULL);
        ck_assert_int_eq(unknown.status, 2);
        assert_contains(unknown.err, "unknown credentials command 'show'");
        _cleanup_(proc_result_free) struct proc_result extra = run_cmd(NULL, 0, path, "list", "x", NULL);
        ck_assert_int_eq(extra.status, 2);
        _cleanup_(proc_result_free) struct proc_result nokey = run_cmd(NULL, 0, path, "unset", NULL, NULL);
        ck_assert_int_eq(nokey.status, 2);
        assert_contains(nokey.err, "'unset' needs a KEY");
        _cleanup_(proc_result_free) struct proc_result opt = run_cmd(NULL, 0, path, "list", "--bogus", NULL);
        ck_assert_int_eq(opt.status, 2);
        assert_contains(opt.err, "unknown option '--bogus'");
        struct proc_result *all[] = { &none, &unknown, &extra, &nokey, &opt };
        for (size_t i = 0; i < TB_ARRAY_SIZE(all); i++) {
                ck_assert_uint_eq(count_lines(all[i]->err), 1);
                ck_assert_str_eq(all[i]->out, "");
        }

        _cleanup_(proc_result_free) struct proc_result help = run_cmd(NULL, 0, path, "--help", NULL, NULL);
        ck_assert_int_eq(help.status, 0);
        ck_assert(str_has_prefix(help.out, "usage: trialbox credentials [--credentials FILE] set KEY"));
}
END_TEST

START_TEST(a_broken_file_fails_with_one_line_and_is_left_alone)
{
        static const char text[] = "{\"claude\": \"" SECRET "\"}";
        write_text(path, text, 0600);
        _cleanup_(proc_result_free) struct proc_result r = run_cmd("new", 3, path, "set", "claude.setup_token", NULL);
        ck_assert_int_eq(r.status, 1);
        _cleanup_free_ char *want =
                xasprintf("trialbox: credentials '%s': 'claude' must be an object of strings; fix the file\n", path);
        ck_assert_str_eq(r.err, want);
        _cleanup_free_ char *after = slurp(path);
        ck_assert_str_eq(after, text);
}
END_TEST

START_TEST(the_default_file_is_used_without_an_override)
{
        _cleanup_free_ char *old_xdg = getenv("XDG_CONFIG_HOME") ? xstrdup(getenv("XDG_CONFIG_HOME")) : NULL;
        _cleanup_free_ char *want = xasprintf("%s/trialbox/credentials.json", tmpdir);
        _cleanup_credentials_ struct credentials *c = NULL;

        setenv("XDG_CONFIG_HOME", tmpdir, 1);
        struct proc_result r = run_cmd("tok", 3, NULL, "set", "claude.setup_token", NULL);
        set_env("XDG_CONFIG_HOME", old_xdg);
        ck_assert_int_eq(r.status, 0);
        proc_result_free(&r);
        ck_assert_str_eq(get_from(want, "claude", "setup_token", &c), "tok");
        ck_assert_uint_eq(mode_of(want), 0600);
}
END_TEST

/* Read from the pty master until `needle` shows up (or EOF/EIO); append to sb. */
static bool pty_read_until(int master, struct strbuf *sb, const char *needle)
{
        char buf[512];
        for (;;) {
                if (needle && sb->s && strstr(sb->s, needle))
                        return true;
                struct pollfd p = { .fd = master, .events = POLLIN };
                if (poll(&p, 1, 3000) <= 0)
                        return false;
                ssize_t n = read(master, buf, sizeof buf - 1);
                if (n <= 0)
                        return needle == NULL;
                buf[n] = '\0';
                strbuf_add(sb, buf);
        }
}

START_TEST(a_value_typed_at_a_terminal_is_not_echoed)
{
        int master, slave;
        struct strbuf sb = { 0 };
        _cleanup_credentials_ struct credentials *c = NULL;

        ck_assert_int_eq(openpty(&master, &slave, NULL, NULL, NULL), 0);
        fflush(NULL);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
                close(master);
                dup2(slave, STDIN_FILENO);
                dup2(slave, STDERR_FILENO);
                dup2(null, STDOUT_FILENO);
                char *argv[] = { "credentials", "set", "claude.setup_token", NULL };
                int status = credentials_command(3, argv, path);
                fflush(NULL);
                _exit(status);
        }
        close(slave);
        strbuf_add(&sb, "");
        ck_assert(pty_read_until(master, &sb, "value for claude.setup_token (not echoed): "));
        ck_assert_int_eq(write(master, "typed-" SECRET "\n", strlen(SECRET) + 7), (ssize_t)strlen(SECRET) + 7);
        pty_read_until(master, &sb, NULL);
        close(master);
        int ws;
        ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
        ck_assert(WIFEXITED(ws));
        ck_assert_int_eq(WEXITSTATUS(ws), 0);
        ck_assert_msg(strstr(sb.s, SECRET) == NULL, "the terminal showed: %s", sb.s);
        assert_contains(sb.s, "saved 'claude.setup_token'");
        free(sb.s);
        ck_assert_str_eq(get_from(path, "claude", "setup_token", &c), "typed-" SECRET);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("credentials");
        TCase *load = tb_tcase(s, "load", 20);
        TCase *save = tb_tcase(s, "save", 20);
        TCase *cmd = tb_tcase(s, "command", 20);
        TCase *all[] = { load, save, cmd };

        for (size_t i = 0; i < TB_ARRAY_SIZE(all); i++)
                tcase_add_checked_fixture(all[i], setup, teardown);
        tcase_add_test(load, a_missing_file_is_empty_credentials);
        tcase_add_test(load, a_well_formed_file_gives_each_value);
        tcase_add_test(load, invalid_json_is_reported_with_the_file_line_and_column);
        tcase_add_test(load, a_truncated_file_is_invalid_json_at_its_end);
        tcase_add_test(load, an_empty_file_is_invalid_json);
        tcase_add_test(load, a_top_level_array_is_refused);
        tcase_add_test(load, a_section_that_is_not_an_object_is_named);
        tcase_add_test(load, a_non_string_value_is_named_by_its_key_path);
        tcase_add_test(load, trailing_garbage_after_the_object_is_refused);
        tcase_add_test(load, a_value_with_a_nul_escape_is_refused);
        tcase_add_test(load, a_raw_nul_byte_in_the_file_is_invalid_json);
        tcase_add_test(load, a_bad_name_in_the_file_is_refused);
        tcase_add_test(load, a_group_readable_file_loads_and_is_flagged_loose);
        tcase_add_test(load, a_symlink_as_the_file_to_load_is_refused);
        tcase_add_test(load, a_folder_or_a_fifo_as_the_file_is_refused);
        tcase_add_test(load, a_file_over_one_mib_is_refused);
        tcase_add_test(load, the_default_path_follows_xdg_config_home_then_home);

        tcase_add_test(save, set_then_names_round_trips_through_the_file);
        tcase_add_test(save, values_needing_escapes_survive_a_save);
        tcase_add_test(save, set_refuses_bad_names_empty_values_and_invalid_utf8);
        tcase_add_test(save, unset_removes_the_key_and_drops_an_emptied_section);
        tcase_add_test(save, a_saved_file_is_mode_0600_even_with_umask_0);
        tcase_add_test(save, resaving_over_a_0644_file_makes_it_0600);
        tcase_add_test(save, saving_into_a_missing_folder_creates_it_0700);
        tcase_add_test(save, a_symlink_as_the_save_target_is_refused);
        tcase_add_test(save, bad_keys_are_rejected);

        tcase_add_test(cmd, set_reads_the_value_from_stdin_and_drops_one_trailing_newline);
        tcase_add_test(cmd, set_never_takes_the_value_from_argv);
        tcase_add_test(cmd, set_refuses_an_empty_value_or_one_with_a_nul_byte);
        tcase_add_test(cmd, list_prints_the_names_and_never_the_values);
        tcase_add_test(cmd, list_of_a_missing_file_prints_nothing);
        tcase_add_test(cmd, list_warns_about_a_file_readable_by_others);
        tcase_add_test(cmd, unset_removes_a_key_and_an_absent_key_fails);
        tcase_add_test(cmd, a_bad_key_is_a_usage_error_naming_the_key);
        tcase_add_test(cmd, usage_errors_exit_2_with_one_line);
        tcase_add_test(cmd, a_broken_file_fails_with_one_line_and_is_left_alone);
        tcase_add_test(cmd, the_default_file_is_used_without_an_override);
        tcase_add_test(cmd, a_value_typed_at_a_terminal_is_not_echoed);
        return run_suite(s);
}
