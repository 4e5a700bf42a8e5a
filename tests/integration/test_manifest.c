/* Harness manifests: parsed, refused with the file and the field when bad,
 * and turned into the same vtable a compiled plugin exports (libffi closures). */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/host.h"
#include "plugin/manifest.h"
#include "plugin/loader.h"
#include "tb_test.h"

static const char good[] = "{\"name\": \"demo\", \"summary\": \"a demo\", \"default_binary\": \"/bin/true\","
                           " \"env\": {\"DEMO_NO_UPDATE\": \"1\"},"
                           " \"home_files\": {\".demo/config\": \"update=false\\n\"},"
                           " \"logins\": [{\"host\": \"~/.demo/login\", \"sandbox\": \"~/.demo/login\","
                           " \"mode\": \"synced\", \"required\": true}],"
                           " \"credentials\": [{\"key\": \"api_key\", \"env\": \"DEMO_API_KEY\"}],"
                           " \"how\": \"run demo login\"}";

START_TEST(a_manifest_becomes_the_same_vtable_a_plugin_exports)
{
        struct manifest *m;
        struct tb_error err = { 0 };
        ck_assert_int_eq(manifest_parse(good, strlen(good), "/x/demo.json", "demo", &m, &err), 0);
        const struct tb_harness *h = manifest_harness(m);
        ck_assert_uint_eq(h->abi_version, TB_PLUGIN_ABI_VERSION);
        ck_assert_uint_eq(h->size, sizeof(struct tb_harness));
        ck_assert_str_eq(h->name, "demo");
        ck_assert_str_eq(h->default_binary, "/bin/true");
        ck_assert_ptr_nonnull(h->preflight);
        ck_assert_ptr_nonnull(h->prepare_login);
        ck_assert_ptr_nonnull(h->env);

        /* Called like any plugin's hook: the closure reaches the manifest. */
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        struct sandbox_spec spec = { 0 };
        struct tb_host host = { .harness = "demo", .spec = &spec, .sandboxed = true, .host_home = dir,
                                .session_home = dir, .checking = true, .credentials_path = "/nonexistent.json" };
        ck_assert_int_eq(host_call(&host, h->preflight), -ECANCELED);
        assert_contains(host.void_detail, "no login at '");
        assert_contains(host.void_detail, "/.demo/login'; run demo login");
        host_done(&host);

        char p[1100];
        snprintf(p, sizeof p, "%s/.demo", dir);
        mkdir(p, 0700);
        snprintf(p, sizeof p, "%s/.demo/login", dir);
        write_text(p, "L", 0600);
        struct tb_host ok = { .harness = "demo", .spec = &spec, .sandboxed = true, .host_home = dir,
                              .session_home = dir, .checking = true, .credentials_path = "/nonexistent.json" };
        ck_assert_int_eq(host_call(&ok, h->preflight), 0);
        ck_assert_int_eq(host_call(&ok, h->env), 0);
        ck_assert_str_eq(sandbox_getenv(&spec, "DEMO_NO_UPDATE"), "1");
        ck_assert_ptr_null(sandbox_getenv(&spec, "DEMO_API_KEY"));
        host_done(&ok);
        sandbox_spec_done(&spec);
        manifest_free(m);
}
END_TEST

static void refused(const char *text, const char *says)
{
        struct manifest *m = NULL;
        struct tb_error err = { 0 };
        int r = manifest_parse(text, strlen(text), "/plugins/demo.json", "demo", &m, &err);
        ck_assert_msg(r < 0, "accepted: %s", text);
        ck_assert_ptr_null(m);
        ck_assert_msg(strstr(err.msg, "manifest '/plugins/demo.json'") != NULL, "no file in: %s", err.msg);
        ck_assert_msg(strstr(err.msg, says) != NULL, "'%s' not in: %s", says, err.msg);
}

START_TEST(a_bad_manifest_is_refused_naming_the_file_and_the_field)
{
        refused("{\"name\": \"demo\",\n \"default_binary\": }", "invalid JSON at line 2, column");
        refused("[1, 2]", "the top level must be a JSON object");
        refused("{\"default_binary\": \"x\"}", "field 'name' is missing");
        refused("{\"name\": \"other\", \"default_binary\": \"x\"}", "'name' is 'other', not the file's name 'demo'");
        refused("{\"name\": \"demo\"}", "field 'default_binary' is missing");
        refused("{\"name\": \"demo\", \"default_binary\": 3}", "field 'default_binary' must be a string");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"colour\": 1}", "field 'colour' is not a manifest field");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"env\": {\"A B\": \"1\"}}", "field 'env.A B'");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"env\": {\"A\": 1}}", "field 'env.A' must be a string");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"logins\": {}}", "field 'logins' must be an array");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"logins\": [{\"host\": \"~/a\", \"sandbox\": \"~/a\","
                " \"mode\": \"copy\"}]}",
                "field 'logins[0].mode' must be \"synced\" or \"in_place\"");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"logins\": [{\"host\": \"~/a\", \"sandbox\": \"/etc/a\","
                " \"mode\": \"synced\"}]}",
                "field 'logins[0].sandbox' must start with ~/");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"logins\": [{\"host\": \"~/../a\", \"sandbox\": \"~/a\","
                " \"mode\": \"synced\"}]}",
                "field 'logins[0].host'");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"credentials\": [{\"key\": \"claude.setup_token\","
                " \"env\": \"X\"}]}",
                "field 'credentials[0].key'");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"credentials\": [{\"key\": \"k\", \"env\": \"1X\"}]}",
                "field 'credentials[0].env' is not a variable name");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"require_any\": \"yes\"}",
                "field 'require_any' must be true or false");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"home_files\": {\"../x\": \"y\"}}",
                "field 'home_files.../x' must be a relative path");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\"} trailing", "invalid JSON at line 1, column 41");
}
END_TEST

START_TEST(manifests_are_found_like_plugins_and_trusted_like_them)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char p[1100], so[1100];
        snprintf(p, sizeof p, "%s/demo.json", dir);
        write_text(p, good, 0644);
        struct plugin pl;
        struct tb_error err = { 0 };
        ck_assert_int_eq(plugin_load(dir, "demo", &pl, &err), 0);
        ck_assert_ptr_nonnull(pl.manifest);
        ck_assert_ptr_null(pl.dl);
        ck_assert_str_eq(pl.harness->name, "demo");
        plugin_unload(&pl);

        chmod(p, 0666);
        ck_assert_int_eq(plugin_load(dir, "demo", &pl, &err), -EPERM);
        assert_contains(err.msg, "writable by others");
        chmod(p, 0644);

        snprintf(so, sizeof so, "%s/demo.so", dir);
        write_text(so, "x", 0644);
        ck_assert_int_eq(plugin_load(dir, "demo", &pl, &err), -EEXIST);
        assert_contains(err.msg, "remove one");
}
END_TEST

START_TEST(the_gemini_manifest_ships_and_loads)
{
        struct plugin pl;
        struct tb_error err = { 0 };
        ck_assert_msg(plugin_load(PLUGIN_BUILD_DIR, "gemini", &pl, &err) == 0, "%s", err.msg);
        ck_assert_ptr_nonnull(pl.manifest);
        ck_assert_str_eq(pl.harness->default_binary, "gemini");
        plugin_unload(&pl);
}
END_TEST

START_TEST(a_gemini_trial_gets_its_key_or_its_synced_login_and_is_void_with_neither)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        char creds[1100], home[1100], env_home[1200], p[1300];
        snprintf(creds, sizeof creds, "%s/credentials.json", f.dir);
        write_text(creds, "{\"gemini\": {\"api_key\": \"AIza-tbtest\"}, \"claude\": {\"setup_token\": \"nope\"}}", 0600);
        snprintf(home, sizeof home, "%s/host-home", f.dir);
        mkdir(home, 0700);
        snprintf(env_home, sizeof env_home, "HOME=%s", home);
        char settings[1200];
        snprintf(settings, sizeof settings, "%s/home/.gemini/settings.json", f.out);
        tb_run(&r, "gemini", &f, ENV(env_home),
               EXTRA("--credentials", creds, "--harness-bin", FAKE("print-env"), "--", settings));
        ck_assert_msg(r.status == 0, "%s", r.err);
        assert_contains(r.out, "\nGEMINI_API_KEY=AIza-tbtest\n");
        assert_lacks(r.out, "nope");
        assert_contains(r.out, "\"disableAutoUpdate\": true");
        proc_result_free(&r);
        fixture_free(&f);

        /* The OAuth login alone, synced: a rewrite in the session reaches the host. */
        fixture_new(&f);
        snprintf(home, sizeof home, "%s/host-home", f.dir);
        snprintf(p, sizeof p, "%s/.gemini", home);
        mkdir_p(p, 0700);
        snprintf(p, sizeof p, "%s/.gemini/oauth_creds.json", home);
        write_text(p, "{\"refresh_token\": \"old\"}", 0600);
        snprintf(env_home, sizeof env_home, "HOME=%s", home);
        tb_run(&r, "gemini", &f, ENV(env_home),
               EXTRA("--credentials", "/nonexistent/credentials.json", "--harness-bin", "/bin/sh", "--", "-c",
                     "cd \"$HOME/.gemini\" && printf '{\"refresh_token\": \"new\"}' > .tmp && mv .tmp oauth_creds.json"));
        ck_assert_msg(r.status == 0, "%s", r.err);
        char *now = read_text(p);
        ck_assert_str_eq(now, "{\"refresh_token\": \"new\"}");
        free(now);
        proc_result_free(&r);
        fixture_free(&f);

        fixture_new(&f);
        tb_run(&r, "gemini", &f, ENV("HOME=/nonexistent"),
               EXTRA("--credentials", "/nonexistent/credentials.json", "--harness-bin", "/bin/true"));
        assert_void(&f, &r, "session_unavailable", "no login and no key for gemini");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(a_manifest_names_its_exclusive_resource_as_a_plugin_does)
{
        static const char with[] = "{\"name\": \"demo\", \"default_binary\": \"/bin/true\", "
                                   "\"exclusive\": \"demo-home\"}";
        struct manifest *m;
        struct tb_error err = { 0 };
        ck_assert_int_eq(manifest_parse(with, strlen(with), "/x/demo.json", "demo", &m, &err), 0);
        ck_assert_str_eq(manifest_harness(m)->exclusive, "demo-home");
        manifest_free(m);
        ck_assert_int_eq(manifest_parse(good, strlen(good), "/x/demo.json", "demo", &m, &err), 0);
        ck_assert_ptr_null(manifest_harness(m)->exclusive);
        manifest_free(m);
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"exclusive\": \"Demo Home\"}",
                "field 'exclusive' must be 1 to 64 characters of [a-z0-9._-]");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"exclusive\": 3}", "field 'exclusive'");
}
END_TEST

START_TEST(a_manifest_declares_its_endpoints_and_one_without_has_no_hook)
{
        static const char with[] = "{\"name\": \"demo\", \"default_binary\": \"/bin/true\", \"endpoints\": ["
                                   "{\"host\": \"api.demo.test:443\", \"required\": true},"
                                   " {\"host\": \"*.telemetry.demo.test\"}]}";
        struct manifest *m;
        struct tb_error err = { 0 };
        ck_assert_int_eq(manifest_parse(with, strlen(with), "/x/demo.json", "demo", &m, &err), 0);
        const struct tb_harness *h = manifest_harness(m);
        ck_assert_ptr_nonnull(h->endpoints);
        ck_assert_uint_eq(h->flags, 0);
        struct tb_host host = { .harness = "demo", .checking = true };
        ck_assert_int_eq(host_call(&host, h->endpoints), 0);
        assert_endpoints(&host, { "api.demo.test:443", true }, { "*.telemetry.demo.test", false });
        host_done(&host);
        manifest_free(m);

        ck_assert_int_eq(manifest_parse(good, strlen(good), "/x/demo.json", "demo", &m, &err), 0);
        ck_assert_ptr_null(manifest_harness(m)->endpoints);
        manifest_free(m);

        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"endpoints\": {}}", "field 'endpoints' must be an array");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"endpoints\": [{\"host\": \"*\"}]}",
                "field 'endpoints[0].host' must be host[:port]");
        refused("{\"name\": \"demo\", \"default_binary\": \"x\", \"endpoints\": [{\"host\": \"a.test\", \"required\": 1}]}",
                "field 'endpoints[0].required' must be true or false");

        /* The shipped gemini manifest declares its API. */
        struct plugin pl;
        ck_assert_msg(plugin_load(PLUGIN_BUILD_DIR, "gemini", &pl, &err) == 0, "%s", err.msg);
        struct tb_host g = { .harness = "gemini", .checking = true };
        ck_assert_int_eq(host_call(&g, pl.endpoints), 0);
        size_t n;
        const struct host_endpoint *e = host_endpoints(&g, &n);
        ck_assert_uint_ge(n, 1);
        ck_assert_str_eq(e[0].pattern, "generativelanguage.googleapis.com:443");
        ck_assert(e[0].required);
        host_done(&g);
        plugin_unload(&pl);
}
END_TEST

TB_SUITE("manifest", 60)
{
        tcase_add_test(tc, a_manifest_becomes_the_same_vtable_a_plugin_exports);
        tcase_add_test(tc, a_bad_manifest_is_refused_naming_the_file_and_the_field);
        tcase_add_test(tc, manifests_are_found_like_plugins_and_trusted_like_them);
        tcase_add_test(tc, the_gemini_manifest_ships_and_loads);
        tcase_add_test(tc, a_manifest_declares_its_endpoints_and_one_without_has_no_hook);
        tcase_add_test(tc, a_manifest_names_its_exclusive_resource_as_a_plugin_does);
        tcase_add_test(tc, a_gemini_trial_gets_its_key_or_its_synced_login_and_is_void_with_neither);
}
