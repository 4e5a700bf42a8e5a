/* PATH folders in the user's home, and tools on PATH that are links into
 * their packages. A folder on PATH inside the home (~/.local/bin) is not
 * bound whole: only what the session may run, so a token file beside the
 * tools stays out. A tool that is a link into its package (npm's
 * node_modules/.bin, pipx's ~/.local/bin) runs: its package is bound.
 * A fake home under the test's folder is trialbox's HOME; checked with
 * --dry-run, then in a real Trial. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tb_test.h"

struct layout {
        struct fixture f;
        char *home;     /* the fake host home */
        char *bin;      /* its ~/.local/bin, on PATH */
        char *proj_bin; /* a project's node_modules/.bin outside the home, on PATH */
        char *env_home, *env_path;
};

static void link_in(const char *dir, const char *rel, const char *target)
{
        _cleanup_free_ char *p = path_in(dir, rel);
        ck_assert_int_eq(symlink(target, p), 0);
}

static void layout_new(struct layout *l)
{
        fixture_new(&l->f);
        l->home = fixture_keep(&l->f, path_in(l->f.dir, "home"));
        l->bin = fixture_keep(&l->f, path_in(l->home, ".local/bin"));
        /* ~/.local/bin: a tool, a script, a token and notes that are no tools. */
        write_in(l->bin, "hello", "#!/bin/sh\necho hello-ran\n", 0755);
        write_in(l->bin, "helper.sh", "#!/bin/sh\necho helper-ran\n", 0755);
        write_in(l->bin, "deploy-token", "TOKEN-ghp-secret\n", 0644);
        write_in(l->bin, "notes.txt", "private notes\n", 0600);
        /* An npm package installed under the home (npm's prefix in
         * ~/.npm-global), its dependency hoisted beside it, and its bin
         * linked from ~/.local/bin. */
        _cleanup_free_ char *nm = path_in(l->home, ".npm-global/lib/node_modules");
        write_in(nm, "fakepkg/package.json", "{\"name\": \"fakepkg\", \"bin\": {\"npmtool\": \"bin/cli.js\"}}\n", 0644);
        write_in(nm, "fakepkg/bin/cli.js",
            "#!/usr/bin/env node\nconst dep = require('fakedep');\nconst lib = require('../lib/lib.js');\n"
            "console.log('npmtool-ran ' + dep.word + ' ' + lib.word);\n",
            0755);
        write_in(nm, "fakepkg/lib/lib.js", "module.exports = { word: 'lib-loaded' };\n", 0644);
        write_in(nm, "fakedep/package.json", "{\"name\": \"fakedep\", \"main\": \"index.js\"}\n", 0644);
        write_in(nm, "fakedep/index.js", "module.exports = { word: 'dep-loaded' };\n", 0644);
        link_in(l->bin, "npmtool", "../../.npm-global/lib/node_modules/fakepkg/bin/cli.js");
        /* A pipx venv: its tool linked from ~/.local/bin, a secret beside the venvs. */
        _cleanup_free_ char *pipx = path_in(l->home, ".local/share/pipx");
        write_in(pipx, "venvs/fakevenv/pyvenv.cfg", "home = /usr/bin\n", 0644);
        write_in(pipx, "venvs/fakevenv/lib/data.txt", "venv-data", 0644);
        write_in(pipx, "venvs/fakevenv/bin/venvtool",
            "#!/bin/sh\nd=$(dirname \"$(readlink -f \"$0\")\")\necho \"venvtool-ran $(cat \"$d/../lib/data.txt\")\"\n",
            0755);
        write_in(pipx, "beside-secret", "pipx-beside-secret\n", 0600);
        link_in(l->bin, "venvtool", "../share/pipx/venvs/fakevenv/bin/venvtool");
        /* A link into a secret place: never followed. */
        write_in(l->home, ".ssh/agent-tool", "#!/bin/sh\necho ssh-tool-ran\n", 0755);
        _cleanup_free_ char *ssh_tool = path_in(l->home, ".ssh/agent-tool");
        link_in(l->bin, "sshtool", ssh_tool);
        /* A project outside the home with its own node_modules/.bin. */
        _cleanup_free_ char *proj = path_in(l->f.dir, "proj/node_modules");
        write_in(proj, "projpkg/package.json", "{\"name\": \"projpkg\"}\n", 0644);
        write_in(proj, "projpkg/dist/cli.js",
            "#!/usr/bin/env node\nconsole.log('projtool-ran ' + require('projdep').word);\n", 0755);
        write_in(proj, "projdep/package.json", "{\"name\": \"projdep\", \"main\": \"index.js\"}\n", 0644);
        write_in(proj, "projdep/index.js", "module.exports = { word: 'projdep-loaded' };\n", 0644);
        l->proj_bin = fixture_keep(&l->f, path_in(proj, ".bin"));
        ck_assert_int_eq(mkdir_p(l->proj_bin, 0755), 0);
        link_in(l->proj_bin, "projtool", "../projpkg/dist/cli.js");

        l->env_home = fixture_keep(&l->f, xasprintf("HOME=%s", l->home));
        l->env_path = fixture_keep(&l->f, xasprintf("PATH=%s:%s:/usr/bin:/bin", l->bin, l->proj_bin));
}

/* Does the --dry-run line hold " OP SRC DEST" (each path as given)? */
static bool has_op(const char *line, const char *op, const char *src, const char *dest)
{
        _cleanup_free_ char *want = xasprintf(" %s %s %s ", op, src, dest);
        return strstr(line, want) != NULL;
}

#define assert_op(line, op, src, dest) \
        ck_assert_msg(has_op(line, op, src, dest), "no '%s %s %s' in: %s", op, src, dest, line)
#define assert_no_op(line, op, src, dest) \
        ck_assert_msg(!has_op(line, op, src, dest), "'%s %s %s' in: %s", op, src, dest, line)

START_TEST(a_path_folder_in_the_home_is_bound_tool_by_tool_and_linked_tools_bring_their_package)
{
        struct layout l;
        layout_new(&l);
        struct proc_result r;
        tb_shell(&r, &l.f, ENV(l.env_home, l.env_path), EXTRA("--dry-run", "--", "-c", "true"));
        ck_assert_msg(r.status == 0, "%s", r.err);
        const char *line = r.out;
        /* Not the folder whole; nothing of it that is no tool. */
        assert_no_op(line, "--ro-bind", l.bin, l.bin);
        ck_assert_msg(!strstr(line, "deploy-token") && !strstr(line, "notes.txt"), "a non-tool is bound: %s", line);
        /* The tools, each on its own. */
        _cleanup_free_ char *hello = path_in(l.bin, "hello"), *helper = path_in(l.bin, "helper.sh");
        assert_op(line, "--ro-bind", hello, hello);
        assert_op(line, "--ro-bind", helper, helper);
        /* A link into an npm package: the link, and the tree with its dependencies. */
        _cleanup_free_ char *nm = path_in(l.home, ".npm-global/lib/node_modules");
        _cleanup_free_ char *cli = path_in(nm, "fakepkg/bin/cli.js"), *npmtool = path_in(l.bin, "npmtool");
        assert_op(line, "--symlink", cli, npmtool);
        assert_op(line, "--ro-bind", nm, nm);
        /* A link into a venv: the venv, not what is beside it. */
        _cleanup_free_ char *venv = path_in(l.home, ".local/share/pipx/venvs/fakevenv");
        _cleanup_free_ char *venvbin = path_in(venv, "bin/venvtool"), *venvtool = path_in(l.bin, "venvtool");
        assert_op(line, "--symlink", venvbin, venvtool);
        assert_op(line, "--ro-bind", venv, venv);
        _cleanup_free_ char *pipx = path_in(l.home, ".local/share/pipx");
        assert_no_op(line, "--ro-bind", pipx, pipx);
        /* A link into a secret place: neither the link nor its target. */
        ck_assert_msg(!strstr(line, "sshtool") && !strstr(line, "agent-tool"), "the secret tool is bound: %s", line);
        /* A PATH folder outside the home: whole, and its links' npm tree. */
        _cleanup_free_ char *proj_nm = path_dirname(l.proj_bin);
        assert_op(line, "--ro-bind", proj_nm, proj_nm);
        /* Never the home or a top-level folder of it. */
        _cleanup_free_ char *local = path_in(l.home, ".local");
        assert_no_op(line, "--ro-bind", l.home, l.home);
        assert_no_op(line, "--ro-bind", local, local);
        proc_result_free(&r);
        fixture_free(&l.f);
}
END_TEST

START_TEST(in_a_trial_the_linked_tools_run_and_the_token_beside_them_cannot_be_read)
{
        struct layout l;
        layout_new(&l);
        struct proc_result r;
        _cleanup_free_ char *script = xasprintf(
                "hello; helper.sh; npmtool; venvtool; projtool; "
                "cat '%s/deploy-token' && echo token-READ || echo token-hidden; "
                "test -e '%s/notes.txt' && echo notes-seen || echo notes-hidden; "
                "cat '%s/.local/share/pipx/beside-secret' 2>/dev/null && echo beside-READ || echo beside-hidden; "
                "sshtool 2>/dev/null || echo sshtool-missing",
                l.bin, l.bin, l.home);
        tb_shell(&r, &l.f, ENV(l.env_home, l.env_path), EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0, "status %d: %s\n%s", r.status, r.out, r.err);
        assert_line(r.out, "hello-ran");
        assert_line(r.out, "helper-ran");
        assert_line(r.out, "npmtool-ran dep-loaded lib-loaded");
        assert_line(r.out, "venvtool-ran venv-data");
        assert_line(r.out, "projtool-ran projdep-loaded");
        assert_line(r.out, "token-hidden");
        assert_line(r.out, "notes-hidden");
        assert_line(r.out, "beside-hidden");
        assert_line(r.out, "sshtool-missing");
        ck_assert_ptr_null(strstr(r.out, "TOKEN-ghp-secret"));
        ck_assert_ptr_null(strstr(r.out, "ssh-tool-ran"));
        proc_result_free(&r);
        fixture_free(&l.f);
}
END_TEST

TB_SUITE("path_tools", 0)
{
        tcase_add_test(tc, a_path_folder_in_the_home_is_bound_tool_by_tool_and_linked_tools_bring_their_package);
        tcase_add_test(tc, in_a_trial_the_linked_tools_run_and_the_token_beside_them_cannot_be_read);
}
