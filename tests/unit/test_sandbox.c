/* The sandbox spec and its bwrap command line, and the toolchain binds:
 * plain data, inspected without running anything. */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cpus.h"
#include "base/macro.h"
#include "base/path.h"
#include "base/strv.h"
#include "sandbox/host_sockets.h"
#include "sandbox/secret_places.h"
#include "sandbox/spec.h"
#include "sandbox/toolchain.h"
#include "tb_test.h"

START_TEST(the_command_line_has_the_isolation_flags_the_ops_in_order_and_the_command_last)
{
        struct sandbox_spec s = { 0 };
        struct strv a = { 0 };
        sandbox_add(&s, SANDBOX_RO_BIND, "/usr", "/usr");
        sandbox_add(&s, SANDBOX_PROC, NULL, "/proc");
        sandbox_add(&s, SANDBOX_BIND, "/work/repo", "/work/repo");
        s.chdir = strdup("/work/repo");
        strv_add(&s.command, "/sandbox/harness/x");
        strv_add(&s.command, "--flag");
        sandbox_argv(&s, "/usr/bin/bwrap", &a);

        ck_assert_str_eq(a.v[0], "/usr/bin/bwrap");
        ck_assert_int_ge(strv_find(&a, "--unshare-pid"), 1);
        ck_assert_int_ge(strv_find(&a, "--die-with-parent"), 1);
        ck_assert_int_ge(strv_find(&a, "--new-session"), 1);
        ck_assert_int_ge(strv_find(&a, "--unshare-ipc"), 1);
        int cap = strv_find(&a, "--cap-drop");
        ck_assert_int_ge(cap, 1);
        ck_assert_str_eq(a.v[cap + 1], "ALL");
        int usr = strv_find_triple(&a, "--ro-bind", "/usr", "/usr");
        int repo = strv_find_triple(&a, "--bind", "/work/repo", "/work/repo");
        ck_assert_int_gt(usr, 0);
        ck_assert_int_gt(repo, usr);
        ck_assert_int_gt(strv_find(&a, "--proc"), usr);
        int chdir = strv_find(&a, "--chdir");
        ck_assert_str_eq(a.v[chdir + 1], "/work/repo");
        int st = strv_find(&a, "--json-status-fd");
        ck_assert_str_eq(a.v[st + 1], "3");
        int dd = strv_find(&a, "--");
        ck_assert_int_gt(dd, st);
        ck_assert_str_eq(a.v[dd + 1], "/sandbox/harness/x");
        ck_assert_str_eq(a.v[dd + 2], "--flag");
        ck_assert_uint_eq(a.n, (size_t)dd + 3);
        strv_done(&a);
        sandbox_spec_done(&s);
}
END_TEST

START_TEST(secrets_are_in_the_environment_never_in_argv_and_redacted_when_printed)
{
        struct sandbox_spec s = { 0 };
        struct strv a = { 0 }, e = { 0 };
        sandbox_setenv(&s, "PATH", "/usr/bin", false);
        sandbox_setenv(&s, "API_KEY", "sk-very-secret-123", true);
        strv_add(&s.command, "/bin/true");
        sandbox_argv(&s, "bwrap", &a);
        for (size_t i = 0; i < a.n; i++)
                assert_lacks(a.v[i], "sk-very-secret-123");
        sandbox_envp(&s, &e);
        ck_assert(strv_contains(&e, "API_KEY=sk-very-secret-123"));
        char *line = sandbox_render(&s, "bwrap");
        assert_lacks(line, "sk-very-secret-123");
        assert_contains(line, "'API_KEY=<redacted>'");
        assert_contains(line, "PATH=/usr/bin");
        free(line);
        strv_done(&a);
        strv_done(&e);
        sandbox_spec_done(&s);
}
END_TEST

START_TEST(a_variable_set_twice_keeps_the_last_value_and_stays_secret)
{
        struct sandbox_spec s = { 0 };
        sandbox_setenv(&s, "K", "secret", true);
        sandbox_setenv(&s, "K", "other", false);
        ck_assert_str_eq(sandbox_getenv(&s, "K"), "other");
        ck_assert_uint_eq(s.n_env, 1);
        ck_assert(s.env[0].secret);
        ck_assert(!sandbox_env_name_valid("1X"));
        ck_assert(!sandbox_env_name_valid("A=B"));
        ck_assert(!sandbox_env_name_valid(""));
        ck_assert(sandbox_env_name_valid("CLAUDE_CODE_OAUTH_TOKEN"));
        sandbox_spec_done(&s);
}
END_TEST

START_TEST(the_printed_line_quotes_what_a_shell_would_split)
{
        struct sandbox_spec s = { 0 };
        strv_add(&s.command, "/bin/sh");
        strv_add(&s.command, "-c");
        strv_add(&s.command, "echo 'it''s' $HOME");
        sandbox_add(&s, SANDBOX_BIND, "/a dir", "/a dir");
        char *line = sandbox_render(&s, "bwrap");
        assert_contains(line, "--bind '/a dir' '/a dir'");
        assert_contains(line, "'echo '\\''it'\\'''\\''s'\\'' $HOME'");
        assert_contains(line, " 3>/dev/null");
        free(line);
        sandbox_spec_done(&s);
}
END_TEST

START_TEST(covers_means_a_folder_bound_onto_itself_that_contains_the_path)
{
        struct sandbox_spec s = { 0 };
        sandbox_add(&s, SANDBOX_RO_BIND, "/usr", "/usr");
        sandbox_add(&s, SANDBOX_RO_BIND, "/opt/real", "/opt/link");
        ck_assert(sandbox_covers(&s, "/usr/local/bin"));
        ck_assert(sandbox_covers(&s, "/usr"));
        ck_assert(!sandbox_covers(&s, "/usrx"));
        ck_assert(!sandbox_covers(&s, "/opt/link/bin"));
        sandbox_spec_done(&s);
}
END_TEST

START_TEST(the_system_folders_are_read_only_and_a_linked_resolv_conf_brings_its_target)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char target[512], link[512];
        snprintf(target, sizeof target, "%s/stub-resolv.conf", dir);
        snprintf(link, sizeof link, "%s/resolv.conf", dir);
        write_text(target, "nameserver 127.0.0.53\n", 0644);
        ck_assert_int_eq(symlink(target, link), 0);

        struct sandbox_spec s = { 0 };
        struct strv a = { 0 };
        toolchain_add_system(&s, link);
        sandbox_argv(&s, "bwrap", &a);
        ck_assert_int_gt(strv_find_triple(&a, "--ro-bind", "/usr", "/usr"), 0);
        ck_assert_int_gt(strv_find_triple(&a, "--ro-bind", "/etc", "/etc"), 0);
        ck_assert_int_gt(strv_find_triple(&a, "--ro-bind", target, target), 0);
        ck_assert_int_lt(strv_find_triple(&a, "--bind", "/usr", "/usr"), 0);
        ck_assert_int_gt(strv_find(&a, "--proc"), 0);
        ck_assert_int_gt(strv_find(&a, "--dev"), 0);
        ck_assert_int_gt(strv_find(&a, "--tmpfs"), 0);
        strv_done(&a);
        sandbox_spec_done(&s);

        /* A plain file brings nothing more. */
        struct sandbox_spec s2 = { 0 };
        toolchain_add_system(&s2, target);
        ck_assert_ptr_null(sandbox_find(&s2, target));
        sandbox_spec_done(&s2);
}
END_TEST

START_TEST(path_folders_and_version_manager_homes_are_bound_read_only_with_their_variables)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char p[1024];
        /* A rustup layout: cargo a link to rustup in ~/.cargo/bin, and ~/.rustup. */
        snprintf(p, sizeof p, "%s/home/.cargo/bin", dir);
        mkdir_p(p, 0755);
        snprintf(p, sizeof p, "%s/home/.rustup/toolchains", dir);
        mkdir_p(p, 0755);
        snprintf(p, sizeof p, "%s/home/.cargo/bin/rustup", dir);
        write_text(p, "#!/bin/sh\n", 0755);
        char cargo[1024];
        snprintf(cargo, sizeof cargo, "%s/home/.cargo/bin/cargo", dir);
        ck_assert_int_eq(symlink("rustup", cargo), 0);
        /* A pyenv layout: a shim script in ~/.pyenv/shims. */
        snprintf(p, sizeof p, "%s/home/.pyenv/shims", dir);
        mkdir_p(p, 0755);
        snprintf(p, sizeof p, "%s/home/.pyenv/shims/python3", dir);
        write_text(p, "#!/bin/sh\n", 0755);
        /* A tool folder of the user's. */
        snprintf(p, sizeof p, "%s/tools/bin", dir);
        mkdir_p(p, 0755);

        char home[600], path[3000];
        snprintf(home, sizeof home, "%s/home", dir);
        snprintf(path, sizeof path, "%s/home/.cargo/bin:%s/home/.pyenv/shims:%s/tools/bin:/usr/bin:/bin", dir, dir,
                 dir);
        struct toolchain_host th = { .path = path, .home = home };
        struct sandbox_spec s = { 0 };
        toolchain_add_system(&s, "/nonexistent");
        toolchain_add_tools(&s, &th);

        char want[1024];
        snprintf(want, sizeof want, "%s/home/.cargo/bin", dir);
        const struct sandbox_op *op = sandbox_find(&s, want);
        ck_assert_ptr_nonnull(op);
        ck_assert_int_eq(op->kind, SANDBOX_RO_BIND);
        snprintf(want, sizeof want, "%s/home/.cargo", dir);
        ck_assert_ptr_null(sandbox_find(&s, want));
        ck_assert_str_eq(sandbox_getenv(&s, "CARGO_HOME"), want);
        snprintf(want, sizeof want, "%s/home/.rustup", dir);
        ck_assert_ptr_nonnull(sandbox_find(&s, want));
        ck_assert_str_eq(sandbox_getenv(&s, "RUSTUP_HOME"), want);
        snprintf(want, sizeof want, "%s/home/.pyenv", dir);
        ck_assert_ptr_nonnull(sandbox_find(&s, want));
        ck_assert_str_eq(sandbox_getenv(&s, "PYENV_ROOT"), want);
        snprintf(want, sizeof want, "%s/tools/bin", dir);
        op = sandbox_find(&s, want);
        ck_assert_ptr_nonnull(op);
        ck_assert_int_eq(op->kind, SANDBOX_RO_BIND);
        /* Inside an already bound folder: not bound again; the home itself never. */
        snprintf(want, sizeof want, "%s/home/.pyenv/shims", dir);
        ck_assert_ptr_null(sandbox_find(&s, want));
        ck_assert_ptr_null(sandbox_find(&s, home));
        ck_assert_ptr_null(sandbox_find(&s, "/usr/bin"));
        for (size_t i = 0; i < s.n_ops; i++)
                ck_assert_int_ne(s.ops[i].kind, SANDBOX_BIND);
        sandbox_spec_done(&s);
}
END_TEST

START_TEST(the_home_of_a_tool_is_above_its_bin_folder)
{
        char *h = toolchain_home_of("/root/.nvm/versions/node/v20.1.0/bin/node");
        ck_assert_str_eq(h, "/root/.nvm/versions/node/v20.1.0");
        free(h);
        h = toolchain_home_of("/opt/tool/libexec/tool");
        ck_assert_str_eq(h, "/opt/tool/libexec");
        free(h);
}
END_TEST

START_TEST(an_npm_launcher_runs_through_a_link_with_its_package_tree_bound)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char p[1024], bin[1024], real[1024], tree[1024];
        snprintf(p, sizeof p, "%s/proj/node_modules/agent/bin", dir);
        mkdir_p(p, 0755);
        snprintf(p, sizeof p, "%s/proj/node_modules/.bin", dir);
        mkdir_p(p, 0755);
        snprintf(real, sizeof real, "%s/proj/node_modules/agent/bin/agent.js", dir);
        write_text(real, "#!/usr/bin/env node\nrequire('../lib/main.js')\n", 0755);
        snprintf(bin, sizeof bin, "%s/proj/node_modules/.bin/agent", dir);
        ck_assert_int_eq(symlink("../agent/bin/agent.js", bin), 0);
        snprintf(tree, sizeof tree, "%s/proj/node_modules", dir);

        struct toolchain_host th = { .path = "/usr/bin:/bin", .home = "/nonexistent" };
        struct sandbox_spec s = { 0 };
        sandbox_setenv(&s, "PATH", "/usr/bin:/bin", false);
        char *run = toolchain_add_harness(&s, "agent", bin, &th);
        ck_assert_str_eq(run, SANDBOX_HARNESS_DIR "/agent");
        const struct sandbox_op *op = sandbox_find(&s, SANDBOX_HARNESS_DIR "/agent");
        ck_assert_int_eq(op->kind, SANDBOX_SYMLINK);
        ck_assert_str_eq(op->src, real);
        op = sandbox_find(&s, tree);
        ck_assert_ptr_nonnull(op);
        ck_assert_int_eq(op->kind, SANDBOX_RO_BIND);
        free(run);
        sandbox_spec_done(&s);

        /* A native binary is bound read-only at the harness path itself. */
        struct sandbox_spec s2 = { 0 };
        run = toolchain_add_harness(&s2, "native", "/bin/true", &th);
        op = sandbox_find(&s2, SANDBOX_HARNESS_DIR "/native");
        ck_assert_int_eq(op->kind, SANDBOX_RO_BIND);
        char *truth = realpath("/bin/true", NULL);
        ck_assert_str_eq(op->src, truth);
        free(truth);
        free(run);
        sandbox_spec_done(&s2);
}
END_TEST

START_TEST(an_nvm_launcher_brings_the_node_beside_it_onto_the_session_path)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char p[1024], bin[1024], node[1024], vdir[1024];
        snprintf(vdir, sizeof vdir, "%s/.nvm/versions/node/v20.9.0", dir);
        snprintf(p, sizeof p, "%s/lib/node_modules/agent/bin", vdir);
        mkdir_p(p, 0755);
        snprintf(p, sizeof p, "%s/bin", vdir);
        mkdir_p(p, 0755);
        snprintf(node, sizeof node, "%s/bin/node", vdir);
        write_text(node, "#!/bin/sh\nexec /usr/bin/node \"$@\"\n", 0755);
        snprintf(p, sizeof p, "%s/lib/node_modules/agent/bin/agent.js", vdir);
        write_text(p, "#!/usr/bin/env node\n", 0755);
        snprintf(bin, sizeof bin, "%s/bin/agent", vdir);
        ck_assert_int_eq(symlink("../lib/node_modules/agent/bin/agent.js", bin), 0);

        struct toolchain_host th = { .path = "/usr/bin:/bin", .home = "/nonexistent" };
        struct sandbox_spec s = { 0 };
        sandbox_setenv(&s, "PATH", "/usr/bin:/bin", false);
        free(toolchain_add_harness(&s, "agent", bin, &th));
        const struct sandbox_op *op = sandbox_find(&s, vdir);
        ck_assert_ptr_nonnull(op);
        ck_assert_int_eq(op->kind, SANDBOX_RO_BIND);
        char want[2048];
        snprintf(want, sizeof want, "%s/bin:/usr/bin:/bin", vdir);
        ck_assert_str_eq(sandbox_getenv(&s, "PATH"), want);
        sandbox_spec_done(&s);
}
END_TEST

START_TEST(an_op_inserted_goes_before_the_one_at_its_index)
{
        struct sandbox_spec s = { 0 };
        sandbox_add(&s, SANDBOX_RO_BIND, "/a", "/a");
        sandbox_add(&s, SANDBOX_RO_BIND, "/c", "/c");
        sandbox_insert(&s, 1, SANDBOX_TMPFS, NULL, "/b");
        sandbox_insert(&s, 99, SANDBOX_DIR, NULL, "/d");
        sandbox_insert(&s, 0, SANDBOX_DIR, NULL, "/0");
        const char *const want[] = { "/0", "/a", "/b", "/c", "/d" };
        ck_assert_uint_eq(s.n_ops, TB_ARRAY_SIZE(want));
        for (size_t i = 0; i < TB_ARRAY_SIZE(want); i++)
                ck_assert_str_eq(s.ops[i].dest, want[i]);
        ck_assert_ptr_null(s.ops[2].src);
        sandbox_spec_done(&s);
}
END_TEST

/* A host home with tools where users keep them and a secret in each usual
 * place, all under a temp folder. */
struct fake_home {
        char *dir, *home;
};

static void mk(const struct fake_home *h, const char *rel, const char *text)
{
        char *p = xasprintf("%s/%s", h->home, rel);
        if (text) {
                char *d = path_dirname(p);
                ck_assert_int_eq(mkdir_p(d, 0700), 0);
                free(d);
                write_text(p, text, 0755);
        } else {
                ck_assert_int_eq(mkdir_p(p, 0700), 0);
        }
        free(p);
}

static void fake_home_new(struct fake_home *h)
{
        h->dir = tmpdir_new();
        h->home = xasprintf("%s/home", h->dir);
        mk(h, "bin/mytool", "#!/bin/sh\n");
        mk(h, ".local/bin/localtool", "#!/bin/sh\n");
        mk(h, ".local/share/keyrings/login.keyring", "k");
        mk(h, ".cargo/bin/rustup", "#!/bin/sh\n");
        char *cargo = xasprintf("%s/.cargo/bin/cargo", h->home);
        ck_assert_int_eq(symlink("rustup", cargo), 0);
        free(cargo);
        mk(h, ".cargo/registry/cache", NULL);
        mk(h, ".cargo/credentials.toml", "[registry]\ntoken = \"x\"\n");
        mk(h, ".cargo/config.toml", "[registry]\ntoken = \"x\"\n");
        mk(h, ".rustup/toolchains", NULL);
        mk(h, ".ssh/id_rsa", "k");
        mk(h, ".npmrc", "//registry.npmjs.org/:_authToken=x\n");
        mk(h, ".config/gcloud/credentials.db", "k");
}

static void fake_home_free(struct fake_home *h)
{
        tmpdir_remove(h->dir);
        free(h->dir);
        free(h->home);
}

static char *at(const struct fake_home *h, const char *rel) { return xasprintf("%s/%s", h->home, rel); }

static bool binds_src(const struct sandbox_spec *s, const char *src)
{
        for (size_t i = 0; i < s->n_ops; i++)
                if ((s->ops[i].kind == SANDBOX_RO_BIND || s->ops[i].kind == SANDBOX_BIND) && s->ops[i].src &&
                    strcmp(s->ops[i].src, src) == 0)
                        return true;
        return false;
}

START_TEST(tools_in_the_home_bind_their_own_folder_or_file_never_the_home_or_a_top_level_folder)
{
        struct fake_home h;
        fake_home_new(&h);
        char *path = xasprintf("%s/bin:%s/.local/bin:%s/.cargo/bin:%s:/usr/bin:/bin", h.home, h.home, h.home, h.home);
        char *localtool = at(&h, ".local/bin/localtool");
        /* A named tool whose folder is not on the PATH: its file alone. */
        struct toolchain_host th = { .path = "/usr/bin:/bin", .home = h.home, .tools = localtool };
        struct sandbox_spec s = { 0 };
        toolchain_add_tools(&s, &th);
        ck_assert_msg(binds_src(&s, localtool), "the named tool's own file is not bound");
        sandbox_spec_done(&s);

        th.path = path;
        th.tools = "mytool localtool";
        toolchain_add_tools(&s, &th);
        /* A PATH folder inside the home is never bound whole (bin, .local/bin):
         * only its tools, each on its own. */
        const char *const never[] = { "", ".local", ".cargo", ".config", ".ssh", ".cargo/credentials.toml",
                                      ".cargo/config.toml", ".local/share", "bin", ".local/bin" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(never); i++) {
                char *p = i == 0 ? xstrdup(h.home) : at(&h, never[i]);
                ck_assert_msg(!binds_src(&s, p), "'%s' is bound", p);
                free(p);
        }
        ck_assert_msg(!binds_src(&s, h.dir), "a folder above the home is bound");
        const char *const bound[] = { "bin/mytool", ".local/bin/localtool", ".cargo/bin", ".cargo/registry", ".rustup" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bound); i++) {
                char *p = at(&h, bound[i]);
                const struct sandbox_op *op = sandbox_find(&s, p);
                ck_assert_msg(op && op->kind == SANDBOX_RO_BIND && strcmp(op->src, p) == 0, "'%s' is not bound read-only",
                              p);
                free(p);
        }
        sandbox_spec_done(&s);
        free(localtool);
        free(path);
        fake_home_free(&h);
}
END_TEST

static const struct sandbox_op *home_op(const struct sandbox_spec *s, const struct fake_home *h, const char *rel)
{
        _cleanup_free_ char *p = at(h, rel);
        return sandbox_find(s, p);
}

static void mk_link(const struct fake_home *h, const char *rel, const char *target)
{
        _cleanup_free_ char *p = at(h, rel);
        ck_assert_int_eq(symlink(target, p), 0);
}

/* `rel` is a link in the sandbox to the home's `target_rel`. */
static void assert_link(const struct sandbox_spec *s, const struct fake_home *h, const char *rel, const char *target_rel)
{
        const struct sandbox_op *op = home_op(s, h, rel);
        _cleanup_free_ char *target = at(h, target_rel);
        ck_assert_msg(op && op->kind == SANDBOX_SYMLINK && strcmp(op->src, target) == 0, "'%s' is not a link to '%s'",
                      rel, target);
}

/* `rel` is bound read-only onto itself. */
static void assert_ro(const struct sandbox_spec *s, const struct fake_home *h, const char *rel)
{
        const struct sandbox_op *op = home_op(s, h, rel);
        _cleanup_free_ char *p = at(h, rel);
        ck_assert_msg(op && op->kind == SANDBOX_RO_BIND && strcmp(op->src, p) == 0, "'%s' is not bound read-only", rel);
}

/* A home with PATH folders of every kind (a_path_folder_in_the_home_...):
 * the PATH, malloc'd; *proj_out: the outside project's node_modules. */
static char *path_tools_home(struct fake_home *hp, char **proj_out)
{
        struct fake_home h = *hp;
        mk(&h, ".local/bin/token", "secret");
        _cleanup_free_ char *token = at(&h, ".local/bin/token");
        ck_assert_int_eq(chmod(token, 0600), 0);
        mk(&h, ".local/bin/sub/inner", "#!/bin/sh\n");
        mk_link(&h, ".local/bin/same", "localtool");
        /* npm: the tree with its hoisted dependencies; a venv; a plain folder. */
        mk(&h, ".npm/lib/node_modules/pkg/package.json", "{}");
        mk(&h, ".npm/lib/node_modules/pkg/dist/cli.js", "#!/usr/bin/env node\n");
        mk_link(&h, ".local/bin/cli", "../../.npm/lib/node_modules/pkg/dist/cli.js");
        mk(&h, ".local/share/pipx/venvs/v/pyvenv.cfg", "x");
        mk(&h, ".local/share/pipx/venvs/v/bin/v", "#!/bin/sh\n");
        mk_link(&h, ".local/bin/v", "../share/pipx/venvs/v/bin/v");
        mk(&h, "opt/tool/run.sh", "#!/bin/sh\n");
        mk_link(&h, ".local/bin/run", "../../opt/tool/run.sh");
        /* Too broad a folder (a top-level one): the target file alone. */
        mk(&h, "scripts/x.sh", "#!/bin/sh\n");
        mk_link(&h, ".local/bin/x", "../../scripts/x.sh");
        /* Never: into a secret place, dangling, to a folder, to a file that is no tool. */
        mk(&h, ".ssh/tool", "#!/bin/sh\n");
        mk_link(&h, ".local/bin/sshtool", "../../.ssh/tool");
        mk_link(&h, ".local/bin/dangling", "../nowhere");
        mk_link(&h, ".local/bin/dirlink", "../share");
        mk_link(&h, ".local/bin/tokenlink", "token");
        /* A PATH folder inside a secret place: nothing of it. */
        mk(&h, ".codex/bin/codex-helper", "#!/bin/sh\n");
        /* A folder outside the home: bound whole, its links' npm tree too. */
        char *proj = xasprintf("%s/proj/node_modules", h.dir);
        _cleanup_free_ char *proj_bin = xasprintf("%s/.bin", proj);
        _cleanup_free_ char *proj_link = xasprintf("%s/.bin/pcli", proj);
        ck_assert_int_eq(mkdir_p(proj_bin, 0755), 0);
        write_in(proj, "pkg/cli.js", "#!/usr/bin/env node\n", 0755);
        ck_assert_int_eq(symlink("../pkg/cli.js", proj_link), 0);

        *proj_out = proj;
        return xasprintf("%s/.local/bin:%s/.codex/bin:%s:/usr/bin:/bin", h.home, h.home, proj_bin);
}

START_TEST(a_path_folder_in_the_home_binds_each_tool_and_what_its_links_point_into)
{
        struct fake_home h;
        fake_home_new(&h);
        _cleanup_free_ char *proj = NULL;
        _cleanup_free_ char *path = path_tools_home(&h, &proj);
        _cleanup_free_ char *proj_link = xasprintf("%s/.bin/pcli", proj);
        struct toolchain_host th = { .path = path, .home = h.home };
        struct sandbox_spec s = { 0 };
        toolchain_add_system(&s, "/nonexistent");
        toolchain_add_tools(&s, &th);
        toolchain_mask_secrets(&s, &th);

        ck_assert_ptr_null(home_op(&s, &h, ".local/bin"));
        assert_ro(&s, &h, ".local/bin/localtool");
        assert_link(&s, &h, ".local/bin/same", ".local/bin/localtool");
        assert_link(&s, &h, ".local/bin/cli", ".npm/lib/node_modules/pkg/dist/cli.js");
        assert_ro(&s, &h, ".npm/lib/node_modules");
        assert_link(&s, &h, ".local/bin/v", ".local/share/pipx/venvs/v/bin/v");
        assert_ro(&s, &h, ".local/share/pipx/venvs/v");
        assert_link(&s, &h, ".local/bin/run", "opt/tool/run.sh");
        assert_ro(&s, &h, "opt/tool");
        assert_link(&s, &h, ".local/bin/x", "scripts/x.sh");
        assert_ro(&s, &h, "scripts/x.sh");
        ck_assert_ptr_null(home_op(&s, &h, "scripts"));
        const char *const never[] = { ".local/bin/token", ".local/bin/sub", ".local/bin/sub/inner", ".local/bin/sshtool",
                                      ".ssh/tool", ".local/bin/dangling", ".local/bin/dirlink", ".local/bin/tokenlink",
                                      ".codex/bin", ".codex/bin/codex-helper", ".local/share/pipx", ".local/share" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(never); i++) {
                _cleanup_free_ char *p = at(&h, never[i]);
                ck_assert_msg(!home_op(&s, &h, never[i]) && !binds_src(&s, p), "'%s' is in the sandbox", never[i]);
        }
        const struct sandbox_op *op = sandbox_find(&s, proj);
        ck_assert_msg(op && op->kind == SANDBOX_RO_BIND, "the outside project's node_modules is not bound");
        ck_assert_ptr_null(sandbox_find(&s, proj_link)); /* inside it already */
        for (size_t i = 0; i < s.n_ops; i++)
                ck_assert_int_ne(s.ops[i].kind, SANDBOX_BIND);
        sandbox_spec_done(&s);
        fake_home_free(&h);
}
END_TEST

/* The toolchain pass with its realpath memo and a PATH that says each
 * folder twice builds the spec a plain pass over the PATH builds. */
START_TEST(a_memo_and_a_path_folder_said_twice_change_nothing_of_the_binds)
{
        struct fake_home h;
        fake_home_new(&h);
        _cleanup_free_ char *proj = NULL;
        _cleanup_free_ char *path = path_tools_home(&h, &proj);
        _cleanup_free_ char *twice = xasprintf("%s:%s:%s/.local/bin", path, path, h.home);
        struct path_memo memo = { 0 };
        const struct toolchain_host plain = { .path = path, .home = h.home };
        const struct toolchain_host fast = { .path = twice, .home = h.home, .memo = &memo };
        struct sandbox_spec a = { 0 }, b = { 0 };
        toolchain_add_system(&a, "/nonexistent");
        toolchain_add_tools(&a, &plain);
        toolchain_mask_secrets(&a, &plain);
        toolchain_add_system(&b, "/nonexistent");
        toolchain_add_tools(&b, &fast);
        toolchain_mask_secrets(&b, &fast);
        ck_assert_uint_gt(memo.n, 0);
        _cleanup_free_ char *la = sandbox_render(&a, "bwrap"), *lb = sandbox_render(&b, "bwrap");
        ck_assert_str_eq(la, lb);
        path_memo_done(&memo);
        sandbox_spec_done(&a);
        sandbox_spec_done(&b);
        fake_home_free(&h);
}
END_TEST

START_TEST(a_cargo_config_is_bound_only_when_it_names_no_registry_token)
{
        struct fake_home h;
        fake_home_new(&h);
        char *path = xasprintf("%s/.cargo/bin:/usr/bin", h.home);
        char *config = at(&h, ".cargo/config.toml");
        struct toolchain_host th = { .path = path, .home = h.home };
        struct sandbox_spec s = { 0 };
        toolchain_add_tools(&s, &th);
        ck_assert(secret_file_has_token(config));
        ck_assert(!binds_src(&s, config));
        sandbox_spec_done(&s);

        write_text(config, "[source.crates-io]\nreplace-with = \"vendored\"\n", 0644);
        ck_assert(!secret_file_has_token(config));
        toolchain_add_tools(&s, &th);
        ck_assert_msg(binds_src(&s, config), "a config.toml without a token is not bound");
        sandbox_spec_done(&s);
        free(config);
        free(path);
        fake_home_free(&h);
}
END_TEST

START_TEST(too_broad_means_the_home_a_folder_above_it_a_top_level_folder_or_an_xdg_base)
{
        struct toolchain_host th = { .home = "/home/u", .state_home = "/var/state/u", .config_home = "relative" };
        static const struct {
                const char *p;
                bool broad;
        } rows[] = {
                { "/", true },
                { "/home", true },
                { "/home/u", true },
                { "/home/u/.local", true },
                { "/home/u/.cargo", true },
                { "/home/u/bin", true },
                { "/home/u/.local/share", true },
                { "/home/u/.local/state", true },
                { "/var/state/u", true },
                { "/home/u/relative", true }, /* a top-level folder anyway */
                { "/home/u/.local/pipx/venvs/black", false },
                { "/home/u/.nvm/versions/node/v22.1.0", false },
                { "/home/u/.local/share/x", false },
                { "/usr", false },
                { "/opt/tool", false },
                { "/home/v", false },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(rows); i++)
                ck_assert_msg(toolchain_too_broad(&th, rows[i].p) == rows[i].broad, "'%s': want %s", rows[i].p,
                              rows[i].broad ? "too broad" : "fine");
        /* No home (or "/" as home): only "/" is too broad. */
        struct toolchain_host none = { .home = NULL }, root = { .home = "/" };
        ck_assert(toolchain_too_broad(&none, "/"));
        ck_assert(!toolchain_too_broad(&none, "/home/u"));
        ck_assert(!toolchain_too_broad(&root, "/opt"));
}
END_TEST

/* Index of the op at `dest`, at or after `from`, or -1. */
static int op_at(const struct sandbox_spec *s, const char *dest, size_t from)
{
        for (size_t i = from; i < s->n_ops; i++)
                if (strcmp(s->ops[i].dest, dest) == 0)
                        return (int)i;
        return -1;
}

START_TEST(every_secret_place_a_bind_exposes_is_masked_right_after_that_bind)
{
        struct fake_home h;
        fake_home_new(&h);
        const struct secret_homes sh = { .home = h.home };
        struct strv places = { 0 };
        secret_places_list(&sh, &places);
        ck_assert_uint_ge(places.n, 25);
        /* Every place exists: a folder for .ssh and the Trials home, a file for the rest. */
        char *grok = at(&h, ".local/state/trialbox/trials/grok");
        ck_assert_int_eq(mkdir_p(grok, 0700), 0);
        for (size_t i = 0; i < places.n; i++) {
                struct stat st;
                if (stat(places.v[i], &st) == 0)
                        continue;
                char *d = path_dirname(places.v[i]);
                ck_assert_int_eq(mkdir_p(d, 0700), 0);
                free(d);
                write_text(places.v[i], "token = \"x\"\n", 0600);
        }
        /* The home bound whole (say a PATH folder), and again elsewhere; then a
         * plugin's bind inside a place (Grok's Trials home). */
        struct sandbox_spec s = { 0 };
        sandbox_add(&s, SANDBOX_RO_BIND, "/usr", "/usr");
        sandbox_add(&s, SANDBOX_RO_BIND, h.home, h.home);
        sandbox_add(&s, SANDBOX_RO_BIND, h.home, "/mnt/home");
        sandbox_add(&s, SANDBOX_BIND, grok, grok);
        secret_places_mask(&s, &sh);

        int home_bind = op_at(&s, h.home, 0), other = op_at(&s, "/mnt/home", 0), grok_bind = op_at(&s, grok, 0);
        ck_assert_int_eq(home_bind, 1);
        ck_assert_int_lt(home_bind, other);
        ck_assert_int_lt(other, grok_bind);
        size_t masked = 0;
        for (size_t i = 0; i < places.n; i++) {
                struct stat st;
                ck_assert_int_eq(stat(places.v[i], &st), 0);
                char *elsewhere = xasprintf("/mnt/home%s", places.v[i] + strlen(h.home));
                int a = op_at(&s, places.v[i], (size_t)home_bind + 1), b = op_at(&s, elsewhere, (size_t)other + 1);
                ck_assert_msg(a > home_bind && a < other, "'%s' is not masked after the home's bind", places.v[i]);
                ck_assert_msg(b > other && b < grok_bind, "'%s' is not masked after the second bind", elsewhere);
                for (int k = 0; k < 2; k++) {
                        const struct sandbox_op *op = &s.ops[k ? b : a];
                        if (S_ISDIR(st.st_mode))
                                ck_assert_int_eq(op->kind, SANDBOX_TMPFS);
                        else
                                ck_assert(op->kind == SANDBOX_RO_BIND && strcmp(op->src, "/dev/null") == 0);
                }
                masked++;
                free(elsewhere);
        }
        ck_assert_uint_eq(masked, places.n);
        /* Two binds, one mask each per place; nothing else added. */
        ck_assert_uint_eq(s.n_ops, 4 + 2 * places.n);
        sandbox_spec_done(&s);

        /* Bound nowhere: nothing masked. A place that does not exist: not masked. */
        sandbox_add(&s, SANDBOX_RO_BIND, "/usr", "/usr");
        sandbox_add(&s, SANDBOX_BIND, grok, grok);
        secret_places_mask(&s, &sh);
        ck_assert_uint_eq(s.n_ops, 2);
        sandbox_spec_done(&s);
        char *ssh = at(&h, ".ssh");
        tmpdir_remove(ssh);
        sandbox_add(&s, SANDBOX_RO_BIND, h.home, h.home);
        secret_places_mask(&s, &sh);
        ck_assert_int_lt(op_at(&s, ssh, 0), 0);
        ck_assert_uint_eq(s.n_ops, places.n);
        sandbox_spec_done(&s);
        free(ssh);
        free(grok);
        strv_done(&places);
        fake_home_free(&h);
}
END_TEST

START_TEST(a_cargo_config_without_a_token_is_not_a_secret_and_extra_places_are)
{
        struct fake_home h;
        fake_home_new(&h);
        char *config = at(&h, ".cargo/config.toml"), *custom = at(&h, "work/vault"), *abs = xasprintf("%s/abs", h.dir);
        char *extra = xasprintf("work/vault:%s", abs);
        mk(&h, "work/vault", NULL);
        write_text(abs, "k", 0600);
        const struct secret_homes sh = { .home = h.home, .extra = extra };
        struct sandbox_spec s = { 0 };
        sandbox_add(&s, SANDBOX_RO_BIND, h.dir, h.dir);
        secret_places_mask(&s, &sh);
        ck_assert_int_gt(op_at(&s, config, 0), 0);
        ck_assert_int_eq(s.ops[op_at(&s, custom, 0)].kind, SANDBOX_TMPFS);
        ck_assert_str_eq(s.ops[op_at(&s, abs, 0)].src, "/dev/null");
        sandbox_spec_done(&s);

        write_text(config, "[source.crates-io]\nreplace-with = \"vendored\"\n", 0644);
        sandbox_add(&s, SANDBOX_RO_BIND, h.dir, h.dir);
        secret_places_mask(&s, &sh);
        ck_assert_int_lt(op_at(&s, config, 0), 0);
        char *creds = at(&h, ".cargo/credentials.toml");
        ck_assert_int_gt(op_at(&s, creds, 0), 0);
        sandbox_spec_done(&s);
        free(creds);
        free(extra);
        free(abs);
        free(custom);
        free(config);
        fake_home_free(&h);
}
END_TEST

START_TEST(a_place_inside_another_is_masked_with_it_and_an_xdg_override_is_masked_too)
{
        struct fake_home h;
        fake_home_new(&h);
        char *xdg = xasprintf("%s/xdg-config", h.dir), *muse = xasprintf("%s/muse/auth.json", xdg);
        char *d = path_dirname(muse);
        ck_assert_int_eq(mkdir_p(d, 0700), 0);
        write_text(muse, "k", 0600);
        /* ~/.ssh given again at run time, and a file inside it. */
        const struct secret_homes sh = { .home = h.home, .config_home = xdg, .extra = ".ssh/id_rsa:.ssh" };
        struct sandbox_spec s = { 0 };
        sandbox_add(&s, SANDBOX_RO_BIND, h.dir, h.dir);
        secret_places_mask(&s, &sh);
        char *ssh = at(&h, ".ssh"), *id = at(&h, ".ssh/id_rsa"), *gcloud = at(&h, ".config/gcloud");
        ck_assert_int_gt(op_at(&s, ssh, 0), 0);
        ck_assert_int_lt(op_at(&s, id, 0), 0);
        ck_assert_int_gt(op_at(&s, d, 0), 0);
        ck_assert_int_gt(op_at(&s, gcloud, 0), 0);
        /* Each mask once. */
        ck_assert_int_lt(op_at(&s, ssh, (size_t)op_at(&s, ssh, 0) + 1), 0);
        sandbox_spec_done(&s);
        free(gcloud);
        free(id);
        free(ssh);
        free(d);
        free(muse);
        free(xdg);
        fake_home_free(&h);
}
END_TEST

/* ---- the host's unix sockets (host_sockets.h) ---- */

/* A socket bound and listening at `path` (an fd the caller closes). */
static int listening_at(const char *path)
{
        struct sockaddr_un sun = { .sun_family = AF_UNIX };
        snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof sun), 0);
        ck_assert_int_eq(listen(fd, 1), 0);
        return fd;
}

static bool op_is(const struct sandbox_op *op, enum sandbox_op_kind kind, const char *src, const char *dest)
{
        return op->kind == kind && (!src || (op->src && strcmp(op->src, src) == 0)) && strcmp(op->dest, dest) == 0;
}

START_TEST(the_kernel_lists_a_host_socket_with_its_file)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *path = path_in(dir, "listed.sock");
        int fd = listening_at(path);
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        struct host_socket *v = NULL;
        int n = host_sockets_list(&v);
        ck_assert_int_ge(n, 1);
        bool found = false;
        for (int i = 0; i < n; i++)
                found |= strcmp(v[i].path, path) == 0 && v[i].dev == st.st_dev && v[i].ino == (uint32_t)st.st_ino;
        ck_assert_msg(found, "'%s' is not in the kernel's list of %d sockets", path, n);
        host_sockets_free(v, (size_t)n);
        close(fd);
}
END_TEST

/* A listener bound at `path` in a network namespace of its own (a child,
 * until killed). Its pid. */
static pid_t listening_elsewhere(const char *path)
{
        int ready[2];
        ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
        pid_t other = fork();
        ck_assert_int_ge(other, 0);
        if (other == 0) {
                if (unshare(CLONE_NEWNET) < 0)
                        _exit(1);
                int fd = listening_at(path);
                (void)!write(ready[1], "x", 1);
                pause();
                close(fd);
                _exit(0);
        }
        close(ready[1]);
        char c;
        ck_assert_int_eq(read(ready[0], &c, 1), 1);
        close(ready[0]);
        return other;
}

/* As root, a socket bound in another network namespace is listed, and
 * trialbox is back in its own namespace after asking there. */
START_TEST(as_root_another_namespaces_socket_is_listed_and_trialbox_stays_in_its_own)
{
        if (geteuid() != 0) {
                skip_note("as_root_another_namespaces_socket_…", "not root: other namespaces are not asked");
                return;
        }
        struct stat before, after, st;
        ck_assert_int_eq(stat("/proc/thread-self/ns/net", &before), 0);
        _cleanup_free_ char *dir = tmpdir_new();
        _cleanup_free_ char *path = path_in(dir, "elsewhere.sock");
        pid_t other = listening_elsewhere(path);
        ck_assert_int_eq(stat(path, &st), 0);
        struct host_socket *v = NULL;
        int n = host_sockets_list(&v);
        ck_assert_int_eq(stat("/proc/thread-self/ns/net", &after), 0);
        kill(other, SIGKILL);
        waitpid(other, NULL, 0);
        ck_assert(before.st_dev == after.st_dev && before.st_ino == after.st_ino);
        ck_assert_int_ge(n, 1);
        bool found = false;
        for (int i = 0; i < n; i++)
                found |= strcmp(v[i].path, path) == 0 && v[i].ino == (uint32_t)st.st_ino;
        ck_assert_msg(found, "'%s', bound in another network namespace, is not in the list of %d sockets", path, n);
        host_sockets_free(v, (size_t)n);
        tmpdir_remove(dir);
}
END_TEST

/* A Trial whose bwrap started early masks in two passes (trial.c): this
 * namespace's sockets before bwrap's options are sent, the other
 * namespaces' after, while bwrap sets the sandbox up; a mask the second
 * pass adds means bwrap starts again with it. So: the first pass masks
 * this namespace's socket and not the other's; the second masks the
 * other's only (the first's not again), and a pass after it adds nothing. */
START_TEST(as_root_the_other_namespaces_pass_masks_what_this_ones_did_not)
{
        if (geteuid() != 0) {
                skip_note("as_root_the_other_namespaces_pass_…", "not root: other namespaces are not asked");
                return;
        }
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *here = path_in(dir, "here.sock"), *there = path_in(dir, "there.sock");
        int fd = listening_at(here);
        pid_t other = listening_elsewhere(there);
        ck_assert(host_sockets_lists_others());
        struct sandbox_spec s = { 0 };
        sandbox_add(&s, SANDBOX_TMPFS, NULL, "/usr");
        sandbox_add(&s, SANDBOX_RO_BIND, dir, dir);
        sandbox_add(&s, SANDBOX_TMPFS, NULL, "/tmp/other");
        struct host_sockets_report rep;
        host_sockets_mask(&s, NULL, HOST_SOCKETS_HERE, &rep);
        ck_assert(!rep.no_list);
        size_t after_here = s.n_ops;
        bool here_masked = false, there_masked = false;
        for (size_t i = 0; i < s.n_ops; i++) {
                here_masked |= op_is(&s.ops[i], SANDBOX_RO_BIND, "/dev/null", here);
                there_masked |= op_is(&s.ops[i], SANDBOX_RO_BIND, "/dev/null", there);
        }
        ck_assert(here_masked && !there_masked);
        host_sockets_mask(&s, NULL, HOST_SOCKETS_OTHERS, &rep);
        kill(other, SIGKILL);
        waitpid(other, NULL, 0);
        size_t n_here = 0, n_there = 0;
        for (size_t i = 0; i < s.n_ops; i++) {
                n_here += op_is(&s.ops[i], SANDBOX_RO_BIND, "/dev/null", here);
                if (op_is(&s.ops[i], SANDBOX_RO_BIND, "/dev/null", there)) {
                        n_there++;
                        ck_assert(i > 1); /* after the bind that shows it */
                }
        }
        ck_assert_uint_eq(n_here, 1);
        ck_assert_uint_eq(n_there, 1);
        ck_assert_uint_ge(rep.masked, 1);
        ck_assert_uint_eq(s.n_ops, after_here + rep.masked);
        /* Once more: nothing new (the walk of a socket not at its path,
         * if another process has one, finds only what is masked). */
        size_t before = s.n_ops;
        struct host_sockets_report again;
        host_sockets_mask(&s, NULL, HOST_SOCKETS_ALL, &again);
        ck_assert_uint_eq(again.masked, 0);
        ck_assert_uint_eq(s.n_ops, before);
        sandbox_spec_done(&s);
        close(fd);
}
END_TEST

/* The kernel's threads, which the listing of other namespaces skips: each
 * one the kernel flags as its own (PF_KTHREAD in its stat), sorted, never
 * this process nor init; and where pid 2 is kthreadd (not in a pid
 * namespace), some are found. */
static unsigned stat_flags(pid_t pid)
{
        char path[64], buf[4096];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return 0; /* gone since it was listed */
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        unsigned flags = 0;
        const char *paren = strrchr(buf, ')');
        ck_assert_ptr_nonnull(paren);
        ck_assert_int_eq(sscanf(paren + 1, " %*c %*d %*d %*d %*d %*d %u", &flags), 1);
        return flags;
}

START_TEST(the_kernels_threads_are_told_apart_from_processes)
{
        pid_t *v = NULL;
        size_t n = host_sockets_kernel_threads(&v);
        bool kthreadd = (stat_flags(2) & 0x00200000u) != 0;
        if (!kthreadd) {
                ck_assert_uint_eq(n, 0);
                skip_note("the_kernels_threads_…", "pid 2 is not kthreadd here (a pid namespace)");
                return;
        }
        ck_assert_uint_gt(n, 1);
        for (size_t i = 0; i < n; i++) {
                ck_assert_int_ne(v[i], getpid());
                ck_assert_int_ne(v[i], 1);
                if (i > 0)
                        ck_assert_int_lt(v[i - 1], v[i]);
                unsigned flags = stat_flags(v[i]);
                ck_assert_msg(flags == 0 || (flags & 0x00200000u), "pid %d is listed but is not a kernel thread",
                              (int)v[i]);
        }
        free(v);
}
END_TEST

/* Both ways of listing: now, and by the thread started early (the one a
 * Trial uses), which must find a socket bound before it started. */
START_TEST(a_host_socket_is_masked_after_every_bind_that_shows_it_and_only_there)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *sub = path_in(dir, "sub"), *path = path_in(dir, "sub/d.sock");
        ck_assert_int_eq(mkdir(sub, 0755), 0);
        int fd = listening_at(path);
        _cleanup_free_ char *elsewhere = xasprintf("/sandbox/x%s", sub);
        _cleanup_free_ char *seen = xasprintf("%s/d.sock", elsewhere);
        /* The third time, a socket moved from where it was bound (in a
         * folder no bind shows) sends the mask walking the bound folders. */
        _cleanup_tmpdir_ char *other = tmpdir_new();
        _cleanup_free_ char *bound_at = path_in(other, "a.sock"), *moved_to = path_in(other, "b.sock");
        int moved = -1;
        for (int early = 0; early < 3; early++) {
                if (early == 2) {
                        moved = listening_at(bound_at);
                        ck_assert_int_eq(rename(bound_at, moved_to), 0);
                }
                struct host_sockets_early *listing = early ? host_sockets_start_thread() : NULL;
                ck_assert(!early || listing);
                struct sandbox_spec s = { 0 };
                /* A tmpfs first, not /usr: a walk there (whenever any
                 * process on the machine has a socket not at its path) takes
                 * seconds. */
                sandbox_add(&s, SANDBOX_TMPFS, NULL, "/usr");
                sandbox_add(&s, SANDBOX_RO_BIND, dir, dir);
                sandbox_add(&s, SANDBOX_TMPFS, NULL, "/tmp/other");
                sandbox_add(&s, SANDBOX_BIND, sub, elsewhere);
                struct host_sockets_report rep;
                host_sockets_mask(&s, listing, HOST_SOCKETS_ALL, &rep);
                ck_assert(!rep.no_list);
                ck_assert(early < 2 || rep.walked);
                if (!rep.walked) {
                        ck_assert_uint_eq(rep.masked, 2);
                        ck_assert_uint_eq(s.n_ops, 6);
                        ck_assert(op_is(&s.ops[1], SANDBOX_RO_BIND, dir, dir));
                        ck_assert(op_is(&s.ops[2], SANDBOX_RO_BIND, "/dev/null", path));
                        ck_assert(op_is(&s.ops[4], SANDBOX_BIND, sub, elsewhere));
                        ck_assert(op_is(&s.ops[5], SANDBOX_RO_BIND, "/dev/null", seen));
                } else {
                        /* Another process's socket not at its path (one a
                         * test beside this one bound, then moved or removed)
                         * sent the mask walking the bound folders on its file
                         * system: it finds this socket, masked already after
                         * each bind that shows it, and masks nothing twice
                         * nor anything else. */
                        size_t at_dir = s.n_ops, at_sub = s.n_ops, masks = 0;
                        for (size_t i = 0; i < s.n_ops; i++) {
                                const struct sandbox_op *op = &s.ops[i];
                                if (op_is(op, SANDBOX_RO_BIND, dir, dir))
                                        at_dir = i;
                                else if (op_is(op, SANDBOX_BIND, sub, elsewhere))
                                        at_sub = i;
                                else if (op_is(op, SANDBOX_RO_BIND, "/dev/null", path))
                                        ck_assert(i > at_dir && at_sub == s.n_ops && ++masks);
                                else if (op_is(op, SANDBOX_RO_BIND, "/dev/null", seen))
                                        ck_assert(i > at_sub && ++masks);
                                else
                                        ck_assert(op_is(op, SANDBOX_TMPFS, NULL, "/usr") ||
                                                  op_is(op, SANDBOX_TMPFS, NULL, "/tmp/other"));
                        }
                        ck_assert_uint_eq(masks, 2);
                        ck_assert_uint_eq(rep.masked, masks);
                }
                host_sockets_early_free(listing);
                sandbox_spec_done(&s);
        }
        close(moved);
        close(fd);
}
END_TEST

/* A walk (here: a socket moved from where it was bound) stops at 256
 * folders deep and covers the folder below with a tmpfs; a second pass
 * over the same spec adds that cover no more than a /dev/null one. */
START_TEST(a_walk_covers_a_folder_too_deep_with_a_tmpfs_once)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        struct strbuf deep = { 0 };
        strbuf_add(&deep, dir);
        for (int i = 0; i < 258; i++) {
                strbuf_add(&deep, "/d");
                ck_assert_int_eq(mkdir(deep.s, 0755), 0);
        }
        _cleanup_free_ char *bound_at = path_in(dir, "a.sock"), *moved_to = path_in(dir, "b.sock");
        int moved = listening_at(bound_at);
        ck_assert_int_eq(rename(bound_at, moved_to), 0);
        /* The folder 257 below the bind's: where the walk stops. */
        deep.len = strlen(dir) + 257 * 2;
        deep.s[deep.len] = '\0';
        struct sandbox_spec s = { 0 };
        sandbox_add(&s, SANDBOX_TMPFS, NULL, "/usr");
        sandbox_add(&s, SANDBOX_RO_BIND, dir, dir);
        struct host_sockets_report rep;
        host_sockets_mask(&s, NULL, HOST_SOCKETS_ALL, &rep);
        ck_assert(rep.walked);
        size_t covers = 0;
        for (size_t i = 0; i < s.n_ops; i++)
                covers += op_is(&s.ops[i], SANDBOX_TMPFS, NULL, deep.s);
        ck_assert_uint_eq(covers, 1);
        size_t before = s.n_ops;
        host_sockets_mask(&s, NULL, HOST_SOCKETS_ALL, &rep);
        ck_assert_uint_eq(rep.masked, 0);
        ck_assert_uint_eq(s.n_ops, before);
        sandbox_spec_done(&s);
        close(moved);
        free(deep.s);
}
END_TEST

/* Pin this thread to the CPU it is on (trialbox may then use one); its
 * CPUs before, into *all. */
static void pin_here(cpu_set_t *all)
{
        cpu_set_t one;
        ck_assert_int_eq(sched_getaffinity(0, sizeof *all, all), 0);
        CPU_ZERO(&one);
        int here = sched_getcpu();
        ck_assert_int_ge(here, 0);
        CPU_SET(here, &one);
        ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
}

/* On one CPU (here: trialbox may use one), no thread is started: it
 * would only wait its turn; the mask lists the sockets itself. */
START_TEST(no_listing_thread_is_started_on_one_cpu)
{
        cpu_set_t all;
        pin_here(&all);
        struct host_sockets_early *listing = host_sockets_start();
        ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);
        ck_assert_ptr_null(listing);
}
END_TEST

/* Not root, the list is this network namespace's alone (no other is
 * asked): made in line, cheaper than a thread's start; whatever the CPUs. */
START_TEST(no_listing_thread_is_started_unless_root)
{
        cpu_set_t all, others;
        if (geteuid() != 0) {
                ck_assert_ptr_null(host_sockets_start());
                return;
        }
        if (!cpus_others(&all, &others) || !cpus_other_free(&all, &others))
                return; /* no thread as root either: nothing to tell apart */
        ck_assert_int_eq(seteuid(65534), 0);
        struct host_sockets_early *listing = host_sockets_start();
        ck_assert_int_eq(seteuid(0), 0);
        ck_assert_ptr_null(listing);
        listing = host_sockets_start();
        ck_assert_ptr_nonnull(listing);
        host_sockets_early_free(listing);
}
END_TEST

/* A thread that has not begun when the mask needs the list (its CPU
 * busy: here this process may use one CPU, which this thread holds) is
 * not waited for: the mask lists the sockets in line and the thread, when
 * it runs, does nothing. Both ways the socket is masked, once; the thread
 * is joined when the listing is freed. The thread cannot begin before the
 * mask unless the kernel preempts this thread for it at once, so most of
 * the tries must be in line (one suffices here; not under valgrind, whose
 * scheduler runs a new thread first); with the claim removed, the mask
 * always waits for the thread, and none is. */
START_TEST(a_listing_thread_that_has_not_begun_is_not_waited_for)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *path = path_in(dir, "d.sock");
        int fd = listening_at(path);
        cpu_set_t all;
        pin_here(&all);
        int in_line = 0;
        for (int i = 0; i < 20; i++) {
                struct host_sockets_early *listing = host_sockets_start_thread();
                ck_assert_ptr_nonnull(listing);
                struct sandbox_spec s = { 0 };
                sandbox_add(&s, SANDBOX_RO_BIND, dir, dir);
                struct host_sockets_report rep;
                host_sockets_mask(&s, listing, HOST_SOCKETS_ALL, &rep);
                in_line += rep.in_line;
                if (!rep.walked) {
                        ck_assert_uint_eq(rep.masked, 1);
                        ck_assert_uint_eq(s.n_ops, 2);
                        ck_assert(op_is(&s.ops[1], SANDBOX_RO_BIND, "/dev/null", path));
                }
                host_sockets_early_free(listing);
                sandbox_spec_done(&s);
        }
        ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);
        close(fd);
        /* Valgrind runs one thread at a time and gives a new one its turn
         * at once: there the thread always begins first. */
        const char *preload = getenv("LD_PRELOAD");
        if (preload && strstr(preload, "vgpreload")) {
                skip_note(__func__, "under valgrind the thread always begins first: in line never happens");
                return;
        }
        ck_assert_int_gt(in_line, 0);
}
END_TEST

/* The early thread's list dropped unused (a Trial void before its spec
 * is done): joined and freed, nothing left (ASan's leak check); and,
 * as root, the thread's visits to other namespaces leave the main thread
 * in its own, with its signal mask as it was. */
START_TEST(an_early_listing_dropped_unused_leaves_no_thread_and_the_main_thread_as_it_was)
{
        struct stat before, after;
        ck_assert_int_eq(stat("/proc/thread-self/ns/net", &before), 0);
        sigset_t mask_before, mask_after;
        ck_assert_int_eq(pthread_sigmask(SIG_SETMASK, NULL, &mask_before), 0);
        struct host_sockets_early *listing = host_sockets_start_thread();
        ck_assert_ptr_nonnull(listing);
        host_sockets_early_free(listing);
        host_sockets_early_free(NULL);
        ck_assert_int_eq(pthread_sigmask(SIG_SETMASK, NULL, &mask_after), 0);
        ck_assert_int_eq(stat("/proc/thread-self/ns/net", &after), 0);
        ck_assert(before.st_dev == after.st_dev && before.st_ino == after.st_ino);
        for (int sig = 1; sig < NSIG; sig++)
                ck_assert_int_eq(sigismember(&mask_before, sig), sigismember(&mask_after, sig));
        /* One thread again: the listing's was joined. pthread_join returns
         * once the thread's tid is cleared, which the kernel does on its way
         * out, a moment before the task leaves the process's count: a joined
         * thread is gone within that moment, a leaked one never. */
        int threads = 0;
        for (int tries = 0; tries < 2000; tries++) {
                FILE *f = fopen("/proc/self/status", "re");
                ck_assert_ptr_nonnull(f);
                char line[256];
                while (fgets(line, sizeof line, f))
                        sscanf(line, "Threads: %d", &threads);
                fclose(f);
                if (threads == 1)
                        break;
                usleep(1000);
        }
        ck_assert_int_eq(threads, 1);
}
END_TEST

TB_SUITE("sandbox", 0)
{
        tcase_add_test(tc, the_command_line_has_the_isolation_flags_the_ops_in_order_and_the_command_last);
        tcase_add_test(tc, secrets_are_in_the_environment_never_in_argv_and_redacted_when_printed);
        tcase_add_test(tc, a_variable_set_twice_keeps_the_last_value_and_stays_secret);
        tcase_add_test(tc, the_printed_line_quotes_what_a_shell_would_split);
        tcase_add_test(tc, covers_means_a_folder_bound_onto_itself_that_contains_the_path);
        tcase_add_test(tc, an_op_inserted_goes_before_the_one_at_its_index);
        tc = tb_tcase(s, "toolchain", 0);
        tcase_add_test(tc, the_system_folders_are_read_only_and_a_linked_resolv_conf_brings_its_target);
        tcase_add_test(tc, path_folders_and_version_manager_homes_are_bound_read_only_with_their_variables);
        tcase_add_test(tc, the_home_of_a_tool_is_above_its_bin_folder);
        tcase_add_test(tc, an_npm_launcher_runs_through_a_link_with_its_package_tree_bound);
        tcase_add_test(tc, an_nvm_launcher_brings_the_node_beside_it_onto_the_session_path);
        tcase_add_test(tc, tools_in_the_home_bind_their_own_folder_or_file_never_the_home_or_a_top_level_folder);
        tcase_add_test(tc, a_path_folder_in_the_home_binds_each_tool_and_what_its_links_point_into);
        tcase_add_test(tc, a_memo_and_a_path_folder_said_twice_change_nothing_of_the_binds);
        tcase_add_test(tc, a_cargo_config_is_bound_only_when_it_names_no_registry_token);
        tcase_add_test(tc, too_broad_means_the_home_a_folder_above_it_a_top_level_folder_or_an_xdg_base);
        tc = tb_tcase(s, "secret places", 0);
        tcase_add_test(tc, every_secret_place_a_bind_exposes_is_masked_right_after_that_bind);
        tcase_add_test(tc, a_cargo_config_without_a_token_is_not_a_secret_and_extra_places_are);
        tcase_add_test(tc, a_place_inside_another_is_masked_with_it_and_an_xdg_override_is_masked_too);
        tc = tb_tcase(s, "host sockets", 0);
        tcase_add_test(tc, the_kernel_lists_a_host_socket_with_its_file);
        tcase_add_test(tc, as_root_another_namespaces_socket_is_listed_and_trialbox_stays_in_its_own);
        tcase_add_test(tc, as_root_the_other_namespaces_pass_masks_what_this_ones_did_not);
        tcase_add_test(tc, the_kernels_threads_are_told_apart_from_processes);
        tcase_add_test(tc, a_host_socket_is_masked_after_every_bind_that_shows_it_and_only_there);
        tcase_add_test(tc, a_walk_covers_a_folder_too_deep_with_a_tmpfs_once);
        tcase_add_test(tc, an_early_listing_dropped_unused_leaves_no_thread_and_the_main_thread_as_it_was);
        tcase_add_test(tc, no_listing_thread_is_started_on_one_cpu);
        tcase_add_test(tc, no_listing_thread_is_started_unless_root);
        tcase_add_test(tc, a_listing_thread_that_has_not_begun_is_not_waited_for);
}
