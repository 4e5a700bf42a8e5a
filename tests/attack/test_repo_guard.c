/* The repository guard, end to end, as an attacker would try it: the real
 * trialbox, the real bwrap and the real git. A session plants everything
 * that makes git run a program or read another config, in every shape the
 * guard's earlier designs missed (HEAD removed or replaced, quarantine names
 * taken, deep trees, permissions changed, a worktree top that looks bare,
 * `.git` files pointing anywhere); afterwards the host's own git status,
 * diff, log, commit and submodule status run none of it, the session's
 * commits are kept, and outcome.json says what the guard did. A control runs
 * the same attack without trialbox and shows it fires. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "tb_test.h"
#include "base/util.h"
#include "gitguard/snapshot.h"

#define tb(r, f, env, extra) tb_run((r), "shell", (f), (env), (extra))

/* A fixture for a test of git's control files, its repository made a git
 * repository with one commit when `with_repo`. git is required: without it
 * these tests would prove nothing, so they fail rather than pass. */
static void git_fixture(struct fixture *f, bool with_repo)
{
        ck_assert_msg(host_can("command -v git >/dev/null"), "git is not installed: apt-get install -y git");
        fixture_new(f);
        if (with_repo)
                git_repo_new(f->repo);
}

/* The names in `dir` that start with `prefix`, space-separated (malloc'd, "" for none). */
static char *files_with_prefix(const char *dir, const char *prefix)
{
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        DIR *d = opendir(dir);
        for (struct dirent *e; d && (e = readdir(d));)
                if (str_has_prefix(e->d_name, prefix))
                        strbuf_addf(&sb, "%s ", e->d_name);
        if (d)
                closedir(d);
        return sb.s;
}

/* What the host's user does next in the repository: status, diff, log,
 * commit, submodule status (and the same in what looks like a repository
 * below it). Failures are fine; running the session's code is not. */
static const char host_commands[] =
        "cd \"$0\"; git status; git status --short; git diff; git diff HEAD~1; git log -p | cat; git log --stat; "
        "echo three >> tracked; git add -A; " GIT " commit -q -m host; git submodule status; "
        "for d in sub emb wt inner deep bare; do [ -d \"$d\" ] && (cd \"$d\" && git status; git log -1); done; "
        "git gc -q --auto; exit 0";

/* Run the host's commands in the fixture's repository; assert that none of
 * the session's markers (DIR/PWNED-*) appeared. */
static void assert_host_runs_nothing(const struct fixture *f)
{
        struct proc_result r;
        run_argv(&r, NULL, (char *[]){ "/bin/sh", "-c", (char *)host_commands, (char *)f->repo, NULL });
        _cleanup_free_ char *ran = files_with_prefix(f->dir, "PWNED");
        ck_assert_msg(strcmp(ran, "") == 0, "the host's git ran the session's code (%s):\n%s", ran, r.err);
        proc_result_free(&r);
}

/* outcome.json parsed (json_object_put it). (asserts) */
static json_object *outcome_json(const struct fixture *f)
{
        _cleanup_free_ char *path = path_in(f->out, "outcome.json");
        _cleanup_free_ char *text = read_text(path);
        ck_assert_msg(text, "no outcome.json in %s", f->out);
        json_object *j = json_tokener_parse(text);
        ck_assert_msg(j, "outcome.json does not parse: %s", text);
        return j;
}

/* The repo_guard object's `status`. */
static void assert_guard_status(const struct fixture *f, const char *want)
{
        json_object *j = outcome_json(f), *g, *s;
        ck_assert_msg(json_object_object_get_ex(j, "repo_guard", &g) && g &&
                              json_object_object_get_ex(g, "status", &s),
                      "no repo_guard.status in %s", json_object_to_json_string(j));
        ck_assert_msg(strcmp(json_object_get_string(s), want) == 0, "repo_guard.status is %s, not %s: %s",
                      json_object_get_string(s), want, json_object_to_json_string(g));
        json_object_put(j);
}

/* Does guard.jsonl have a line whose "action" is `action` and whose "path"
 * ends with `path_end`? */
static bool guard_logged(const struct fixture *f, const char *action, const char *path_end)
{
        _cleanup_free_ char *log = path_in(f->out, "guard.jsonl");
        _cleanup_free_ char *text = read_text(log);
        bool found = false;
        char *save = NULL;
        for (char *line = text ? strtok_r(text, "\n", &save) : NULL; line && !found;
             line = strtok_r(NULL, "\n", &save)) {
                json_object *j = json_tokener_parse(line), *a, *p;
                if (j && json_object_object_get_ex(j, "action", &a) && json_object_object_get_ex(j, "path", &p) &&
                    strcmp(json_object_get_string(a), action) == 0) {
                        const char *s = json_object_get_string(p);
                        size_t n = strlen(s), k = strlen(path_end);
                        found = n >= k && strcmp(s + n - k, path_end) == 0;
                }
                json_object_put(j);
        }
        return found;
}

#define assert_logged(f, action, path)                                                                     \
        ck_assert_msg(guard_logged((f), (action), (path)), "guard.jsonl has no %s of '%s'", (action), (path))

/* Everything a session can write that git on the host would run or follow.
 * Markers go to `%1$s` (the fixture's folder: inside the session it is the
 * sandbox's own /tmp, so only the host can leave them there). The session's
 * own git work comes first; then its plants; last, its own .git in place
 * of the repository's, which it moves away. */
static const char attack[] =
        "M=%1$s/PWNED; R=$PWD\n"
        "cat > evil.cfg <<EOF\n"
        "[core]\n\tfsmonitor = touch $M-fsmonitor; false\n\tpager = touch $M-pager; cat\n"
        "\thooksPath = $R/h\n\tsshCommand = touch $M-ssh\n\teditor = touch $M-editor\n"
        "[diff]\n\texternal = $R/h/ext\n[filter \"x\"]\n\tclean = touch $M-filter; cat\n\tsmudge = cat\n"
        "[include]\n\tpath = $R/inc.cfg\n[includeIf \"gitdir:/\"]\n\tpath = $R/inc.cfg\n"
        "[extensions]\n\tworktreeConfig = true\n[alias]\n\tstatus = !touch $M-alias\n"
        "EOF\n"
        "printf '[core]\\n\\tfsmonitor = touch %%s; false\\n' \"$M-include\" > inc.cfg\n"
        "mkdir -p h; for x in pre-commit post-commit post-checkout reference-transaction post-index-change "
        "pre-auto-gc ext; do printf '#!/bin/sh\\ntouch %%s\\n' \"$M-hook-$x\" > h/$x; chmod +x h/$x; done\n"
        "echo '* filter=x' > .gitattributes\n"
        /* The session's own work. */
        GIT " commit -q --allow-empty -m in-session && echo SESSION-COMMIT-OK\n"
        GIT " branch side && " GIT " checkout -q side && " GIT " commit -q --allow-empty -m on-side && "
        GIT " rebase -q main && echo SESSION-REBASE-OK\n"
        GIT " checkout -q main && " GIT " branch -q other && echo SESSION-BRANCH-OK\n"
        GIT " tag t1 && echo SESSION-TAG-OK\n"
        "echo two >> tracked && " GIT " stash -q && " GIT " stash pop -q && echo SESSION-STASH-OK\n"
        GIT " checkout -q -- tracked\n"
        /* A submodule whose git directory is under .git/modules, and an
         * embedded repository: the host's `git status` enters both. */
        "mkdir -p .git/modules && git init -q --separate-git-dir \"$R/.git/modules/sub\" sub && "
        "(cd sub && " GIT " commit -q --allow-empty -m s) && cat evil.cfg >> .git/modules/sub/config && "
        "mkdir -p .git/modules/sub/hooks && cp h/post-checkout .git/modules/sub/hooks/ && "
        GIT " add sub 2>/dev/null && " GIT " commit -q -m sub && echo SESSION-SUBMODULE-OK\n"
        "git init -q emb && (cd emb && " GIT " commit -q --allow-empty -m e && cat ../evil.cfg >> .git/config) && "
        GIT " add emb 2>/dev/null && " GIT " commit -q -m emb && echo SESSION-EMBEDDED-OK\n"
        "touch sub/dirty emb/dirty\n"
        "mkdir -p twospace && printf 'gitdir:  ../.git/modules/sub\\n' > twospace/.git\n"
        /* Under .git/modules: a link to a git directory of the session's,
         * and a git directory whose HEAD is a link. */
        "mkdir -p evilmod && cp -r .git/HEAD .git/refs .git/objects evilmod/ && cp evil.cfg evilmod/config && "
        "ln -s \"$R/evilmod\" .git/modules/evil\n"
        "mkdir -p .git/modules/lh/refs .git/modules/lh/objects && ln -s refs/heads/main .git/modules/lh/HEAD && "
        "cp evil.cfg .git/modules/lh/config\n"
        /* The git directory's own control files. */
        "cat evil.cfg >> .git/config && git config core.fsmonitor \"touch $M-git-config; false\" && "
        "cp evil.cfg .git/config.worktree && echo SESSION-CONFIG-CHANGED\n"
        "for x in pre-commit post-commit post-checkout reference-transaction; do cp h/$x .git/hooks/$x; done\n"
        "mkdir -p .git/info && echo '* filter=x' > .git/info/attributes\n"
        "mkdir -p .git/objects/info && echo \"$R/alt\" > .git/objects/info/alternates\n"
        /* Data that is not: a ref to a name git refuses, a packed-refs of garbage, a rebase todo with exec. */
        "echo 'ref: refs/heads/../../config' > .git/refs/heads/bad && echo garbage >> .git/packed-refs && "
        "mkdir -p .git/rebase-merge && echo \"exec touch $M-rebase\" > .git/rebase-merge/git-rebase-todo\n"
        /* A worktree entry of its own and a .git file naming it. */
        "mkdir -p .git/worktrees/evil wt && echo \"$R/wt/.git\" > .git/worktrees/evil/gitdir && "
        "echo ../../../evil-gd > .git/worktrees/evil/commondir && cp .git/HEAD .git/worktrees/evil/ && "
        "echo \"gitdir: $R/.git/worktrees/evil\" > wt/.git\n"
        "mkdir evil-gd && cp -r .git/HEAD .git/refs .git/objects evil-gd/ && cp evil.cfg evil-gd/config && "
        "echo \"$R/evil-gd\" > .git/commondir && echo SESSION-COMMONDIR-PLANTED\n"
        /* Last, in the test run only (the control needs a repository to attack):
         * the repository's .git moved away, one of the session's in its place. */
        "[ -n \"$CONTROL\" ] || { mv .git .git-away && mkdir .git && cp -r .git-away/HEAD .git-away/refs "
        ".git-away/objects .git/ && cp evil.cfg .git/config && echo SESSION-DOTGIT-REPLACED; }\n"
        "exit 0\n";

START_TEST(nothing_a_session_writes_into_git_runs_on_the_host)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        /* A worktree of the host's inside the repository stays usable. */
        sh_ok("cd '%s' && git worktree add -q inner -b inner-branch", f.repo);
        _cleanup_free_ char *script = xasprintf(attack, f.dir);
        tb(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0, "the Trial failed (%d): %s", r.status, r.err);
        const char *ok[] = { "SESSION-COMMIT-OK",      "SESSION-REBASE-OK",         "SESSION-BRANCH-OK",
                             "SESSION-TAG-OK",         "SESSION-STASH-OK",          "SESSION-SUBMODULE-OK",
                             "SESSION-EMBEDDED-OK",    "SESSION-CONFIG-CHANGED",    "SESSION-COMMONDIR-PLANTED",
                             "SESSION-DOTGIT-REPLACED" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(ok); i++)
                ck_assert_msg(strstr(r.out, ok[i]), "no %s in the session's output: %s\n%s", ok[i], r.out, r.err);
        proc_result_free(&r);
        assert_guard_status(&f, "restored");
        /* What it planted went to the quarantine, and the record says so. */
        const char *moved[] = { ".git/config",        ".git/config.worktree", ".git/commondir",
                                ".git/hooks",         ".git/info",            ".git/objects/info/alternates",
                                ".git/modules/sub",   ".git/modules/evil",
                                ".git/modules/lh",    ".git/worktrees/evil",  "emb/.git",
                                "wt/.git",            "twospace/.git",        "evil-gd",
                                "evilmod",            ".git/refs/heads/bad",  ".git/packed-refs",
                                ".git/rebase-merge",  ".git" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(moved); i++)
                assert_logged(&f, "moved", moved[i]);
        _cleanup_free_ char *inner = path_in(f.repo, "inner/.git");
        ck_assert_msg(access(inner, F_OK) == 0, "the host's own worktree lost its .git");
        /* The session's commits are on the host, in the repository's own .git. */
        sh_ok("cd '%s' && git log --format=%%s main | grep -qx emb && git log --format=%%s side | grep -qx on-side && "
              "git tag | grep -qx t1",
              f.repo);
        assert_host_runs_nothing(&f);
        sh_ok("cd '%s' && git log -1 --format=%%s | grep -qx host", f.repo);
        fixture_free(&f);
}
END_TEST

/* The control: the same attack by a plain shell, no trialbox, and the same
 * host commands. Its code does run then, so "nothing ran" above is
 * trialbox's doing, not an attack that cannot fire. */
START_TEST(without_trialbox_the_same_attack_does_run_on_the_host)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        sh_ok("cd '%s' && git worktree add -q inner -b inner-branch", f.repo);
        _cleanup_free_ char *script = xasprintf(attack, f.dir);
        _cleanup_free_ char *cd_script = xasprintf("cd '%s' && CONTROL=1; %s", f.repo, script);
        run_argv(&r, NULL, (char *[]){ "/bin/sh", "-c", cd_script, NULL });
        proc_result_free(&r);
        run_argv(&r, NULL, (char *[]){ "/bin/sh", "-c", (char *)host_commands, f.repo, NULL });
        _cleanup_free_ char *ran = files_with_prefix(f.dir, "PWNED");
        const char *fired[] = { "PWNED-include", "PWNED-filter", "PWNED-hook-ext", "PWNED-hook-pre-commit",
                                "PWNED-hook-post-commit" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(fired); i++)
                ck_assert_msg(strstr(ran, fired[i]), "the attack's %s did not fire without trialbox (ran: %s)",
                              fired[i], ran);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* The attacks on HEAD and the top of the worktree, each with its control:
 *  0 HEAD removed, the worktree's top made a bare repository with a config:
 *    git then takes the top for the git directory and runs that config;
 *  1 HEAD replaced by a link to the session's file;
 *  2 HEAD replaced by garbage, and the same top-level config;
 *  3 the top given HEAD, objects/ and refs/ with .git left whole. */
static const char *const head_attacks[] = {
        "rm .git/HEAD",
        "printf 'ref: refs/heads/main\\n' > myhead && rm .git/HEAD && ln -s ../myhead .git/HEAD",
        "echo 'not a ref at all' > .git/HEAD",
        "true",
};

START_TEST(head_removed_replaced_or_garbage_and_a_top_that_looks_bare_run_nothing)
{
        for (int control = 0; control < 2; control++) {
                struct fixture f;
                struct proc_result r;
                git_fixture(&f, true);
                _cleanup_free_ char *script = xasprintf(
                        "%s; mkdir -p objects refs/heads && cp -r .git/objects/. objects/ && "
                        "cp .git/refs/heads/main refs/heads/ && printf 'ref: refs/heads/main\\n' > HEAD && "
                        "printf '[core]\\n\\trepositoryformatversion = 0\\n\\tworktree = %s\\n\\tfsmonitor = touch %s/PWNED-top; false\\n' "
                        "> config && echo PLANTED",
                        head_attacks[_i], f.repo, f.dir);
                if (control) {
                        _cleanup_free_ char *cd = xasprintf("cd '%s' && %s", f.repo, script);
                        run_argv(&r, NULL, (char *[]){ "/bin/sh", "-c", cd, NULL });
                } else {
                        tb(&r, &f, NULL, EXTRA("--", "-c", script));
                }
                ck_assert_msg(strstr(r.out, "PLANTED"), "%s%s", r.out, r.err);
                proc_result_free(&r);
                if (control) {
                        /* Without trialbox, attacks 0 and 3 fire (git takes the top
                         * for a bare repository, or .git's HEAD is broken). */
                        run_argv(&r, NULL, (char *[]){ "/bin/sh", "-c", (char *)host_commands, f.repo, NULL });
                        _cleanup_free_ char *ran = files_with_prefix(f.dir, "PWNED");
                        if (_i == 0)
                                ck_assert_msg(strstr(ran, "PWNED-top"), "the control did not fire: %s", r.err);
                        proc_result_free(&r);
                } else {
                        assert_host_runs_nothing(&f);
                        assert_guard_status(&f, "restored");
                        /* HEAD is the repository's again, and its history there;
                         * the top's HEAD is in the quarantine. */
                        sh_ok("cd '%s' && git symbolic-ref HEAD | grep -qx refs/heads/main && git log --format=%%s | "
                              "grep -qx base",
                              f.repo);
                        if (_i < 3)
                                assert_logged(&f, "restored", ".git/HEAD");
                        assert_logged(&f, "moved", "HEAD");
                        _cleanup_free_ char *top_head = path_in(f.repo, "HEAD");
                        ck_assert_int_ne(access(top_head, F_OK), 0);
                }
                fixture_free(&f);
        }
}
END_TEST

/* The earlier guard renamed a planted .git to .git.trialbox-quarantine-N
 * beside it, N up to 999: a session that made all 999 names kept its
 * embedded repository. Names in the quarantine are trialbox's own. */
START_TEST(quarantine_names_the_session_takes_first_change_nothing)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        _cleanup_free_ char *script =
                xasprintf("for i in $(seq 1 999); do touch emb/.git.trialbox-quarantine-$i 2>/dev/null || "
                          "{ mkdir -p emb; touch emb/.git.trialbox-quarantine-$i; }; done; "
                          "mkdir -p ../out/quarantine 2>/dev/null; "
                          "git init -q emb && (cd emb && " GIT " commit -q --allow-empty -m e && "
                          "printf '[core]\\n\\tfsmonitor = touch %s/PWNED-emb; false\\n' >> .git/config) && "
                          GIT " add emb 2>/dev/null && " GIT " commit -q -m emb && echo PLANTED",
                          f.dir);
        tb(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0 && strstr(r.out, "PLANTED"), "%s%s", r.out, r.err);
        proc_result_free(&r);
        assert_host_runs_nothing(&f);
        assert_logged(&f, "moved", "emb/.git");
        _cleanup_free_ char *dotgit = path_in(f.repo, "emb/.git");
        ck_assert_msg(access(dotgit, F_OK) < 0, "the embedded repository's .git is still there");
        fixture_free(&f);
}
END_TEST

/* An embedded repository deeper than any walk limit (the earlier one
 * stopped at 64 levels; the walk holds at most 128 folder fds), and a
 * folder in a git directory's shape as deep. */
START_TEST(an_embedded_repository_at_any_depth_is_moved_out)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        _cleanup_free_ char *script = xasprintf(
                "d=deep; for i in $(seq 1 300); do d=$d/d; done; mkdir -p $d && git init -q $d && "
                "(cd $d && " GIT " commit -q --allow-empty -m deep) && " GIT " add $d && " GIT " commit -q -m deep && "
                "printf '[core]\\n\\tfsmonitor = touch %s/PWNED-deep; false\\n' >> $d/.git/config && touch $d/dirty && "
                "b=deep/b; for i in $(seq 1 200); do b=$b/b; done; mkdir -p $b/objects $b/refs && "
                "printf 'ref: refs/heads/main\\n' > $b/HEAD && echo PLANTED",
                f.dir);
        tb(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0 && strstr(r.out, "PLANTED"), "%s%s", r.out, r.err);
        proc_result_free(&r);
        assert_host_runs_nothing(&f);
        assert_guard_status(&f, "restored");
        assert_logged(&f, "moved", "d/d/d/.git");
        assert_logged(&f, "moved", "b/b/b");
        /* Walk the whole deep chain on the host: no .git left in it. */
        sh_ok("cd '%s' && test -z \"$(find deep -name .git -o -name HEAD)\"", f.repo);
        fixture_free(&f);
}
END_TEST

/* The session changes permissions so that an undo would fail: .git read
 * only, a folder of hooks and a folder holding an embedded repository
 * unreadable. Run as the repository's owner (the unprivileged run of this
 * suite), trialbox gives the modes back first. */
START_TEST(permissions_the_session_changed_do_not_stop_the_guard)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        _cleanup_free_ char *script = xasprintf(
                "M=%s/PWNED; printf '#!/bin/sh\\ntouch %%s\\n' \"$M-hook\" > .git/hooks/post-commit; "
                "chmod +x .git/hooks/post-commit; chmod 000 .git/hooks; "
                "mkdir -p evil/refs evil/objects; cp -r .git/objects/. evil/objects/; cp -r .git/refs/. evil/refs/; "
                "cp .git/HEAD evil/; printf '[core]\\n\\tfsmonitor = touch %%s; false\\n' \"$M-evil\" > evil/config; "
                "echo \"$PWD/evil\" > .git/commondir; "
                "mkdir -p locked; git init -q locked/emb; (cd locked/emb && " GIT " commit -q --allow-empty -m e); "
                GIT " add locked/emb; " GIT " commit -q -m emb; "
                "printf '[core]\\n\\tfsmonitor = touch %%s; false\\n' \"$M-emb\" >> locked/emb/.git/config; "
                "chmod 000 locked; chmod 555 .git; echo PLANTED",
                f.dir);
        tb(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0 && strstr(r.out, "PLANTED"), "%s%s", r.out, r.err);
        proc_result_free(&r);
        assert_host_runs_nothing(&f);
        assert_guard_status(&f, "restored");
        assert_logged(&f, "moved", ".git/commondir");
        assert_logged(&f, "moved", ".git/hooks");
        assert_logged(&f, "moved", "locked/emb/.git");
        fixture_free(&f);
}
END_TEST

/* `.git` files pointing anywhere (a system folder, the repository's own
 * .git, a git directory of the session's, through a link), and a `.git`
 * link: each is moved out; none is followed by the host's git. */
START_TEST(git_files_pointing_anywhere_are_moved_out)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        _cleanup_free_ char *script = xasprintf(
                "mkdir -p s1 s2 s3 s4 evil/refs evil/objects && cp .git/HEAD evil/ && "
                "printf '[core]\\n\\tfsmonitor = touch %s/PWNED-evil; false\\n' > evil/config && "
                "echo 'gitdir: /etc' > s1/.git && echo 'gitdir: ../.git' > s2/.git && echo 'gitdir: ../evil' > "
                "s3/.git && ln -s ../evil s4/.git && echo PLANTED",
                f.dir);
        tb(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0 && strstr(r.out, "PLANTED"), "%s%s", r.out, r.err);
        proc_result_free(&r);
        assert_host_runs_nothing(&f);
        const char *moved[] = { "s1/.git", "s2/.git", "s3/.git", "s4/.git", "evil" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(moved); i++)
                assert_logged(&f, "moved", moved[i]);
        struct proc_result h;
        run_argv(&h, NULL,
                 (char *[]){ "/bin/sh", "-c", "for d in s1 s2 s3 s4; do (cd \"$0/$d\" && git status); done; exit 0",
                             f.repo, NULL });
        proc_result_free(&h);
        fixture_free(&f);
}
END_TEST

/* The walk after the session does not enter a worktree leaf the session
 * left as it was, unless git could read something there: a `.git` file
 * (its bytes change without its folder's change time: written in place)
 * or a git directory's shape (HEAD with commondir). Here the host has
 * three such leaves; the session rewrites the `.git` file in place and a
 * plain file beside the shape. The `.git` file goes (its bytes are not the
 * host's), the shape goes (as it always did), the plain leaf's files stay
 * the session's (data). Fails when every unchanged leaf is skipped. */
START_TEST(an_unchanged_leaf_is_still_looked_into_where_git_would_read)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        sh_ok("set -e; cd '%s'; mkdir plain gitfile shape; echo a > plain/a; echo b > plain/b; "
              "echo 'gitdir: ../.git/modules/m' > gitfile/.git; echo 'ref: refs/heads/main' > shape/HEAD; "
              "echo ../.git > shape/commondir",
              f.repo);
        tb(&r, &f, NULL,
           EXTRA("--", "-c",
                 "echo changed > plain/a && echo 'gitdir: /etc' > gitfile/.git && echo x > shape/commondir && "
                 "echo DONE"));
        ck_assert_msg(r.status == 0 && strstr(r.out, "DONE"), "%s%s", r.out, r.err);
        proc_result_free(&r);
        assert_guard_status(&f, "restored");
        assert_logged(&f, "moved", "gitfile/.git");
        assert_logged(&f, "moved", "shape");
        ck_assert_msg(!guard_logged(&f, "moved", "plain/a") && !guard_logged(&f, "moved", "plain"),
                      "the plain leaf was moved");
        _cleanup_free_ char *a = path_in(f.repo, "plain/a"), *gitfile = path_in(f.repo, "gitfile/.git");
        _cleanup_free_ char *text = read_text(a);
        ck_assert_str_eq(text, "changed\n");
        ck_assert_int_ne(access(gitfile, F_OK), 0);
        assert_host_runs_nothing(&f);
        fixture_free(&f);
}
END_TEST

/* The index is data: kept when git would read it as an index (its "DIRC"
 * header; only the header is read, whatever the index's size), else moved
 * out. The session stages a file (kept: the host's git sees it staged),
 * writes garbage over the index, or leaves only part of a header. */
START_TEST(the_index_is_kept_when_it_reads_as_one)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        const char *scripts[] = {
                "echo new > staged && " GIT " add staged && echo DONE",
                "printf 'not an index at all' > .git/index && echo DONE",
                "printf 'DIRC' > .git/index && echo DONE",
        };
        tb(&r, &f, NULL, EXTRA("--", "-c", scripts[_i]));
        ck_assert_msg(r.status == 0 && strstr(r.out, "DONE"), "%s%s", r.out, r.err);
        proc_result_free(&r);
        assert_guard_status(&f, "restored");
        if (_i == 0) {
                ck_assert_msg(!guard_logged(&f, "moved", ".git/index"), "a valid index was moved");
                sh_ok("cd '%s' && git diff --cached --name-only | grep -qx staged", f.repo);
        } else {
                assert_logged(&f, "moved", ".git/index");
                sh_ok("cd '%s' && git status --porcelain >/dev/null", f.repo);
        }
        fixture_free(&f);
}
END_TEST

/* Fail closed: a control file trialbox kept only by its identity (larger
 * than the snapshot keeps whole) that the session changed cannot be put
 * back. The whole .git goes to the quarantine, the repository is left
 * without one, the record and the exit status (123) say so. */
START_TEST(a_change_the_guard_cannot_undo_quarantines_the_whole_git_folder)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        sh_ok("cd '%s' && head -c 2000000 /dev/zero | tr '\\0' x > .git/info/big", f.repo);
        tb(&r, &f, NULL, EXTRA("--", "-c", "echo y >> .git/info/big && " GIT " commit -q --allow-empty -m s && echo CHANGED"));
        ck_assert_msg(strstr(r.out, "CHANGED"), "%s%s", r.out, r.err);
        ck_assert_msg(r.status == 123, "exit status %d, not 123: %s", r.status, r.err);
        ck_assert_msg(strstr(r.err, "quarantine"), "%s", r.err);
        proc_result_free(&r);
        assert_guard_status(&f, "quarantined");
        assert_outcome(&f, "outcome", "completed");
        _cleanup_free_ char *detail = outcome_field(f.out, "detail");
        ck_assert_msg(detail && strstr(detail, "quarantined"), "the detail does not say it: %s", detail);
        _cleanup_free_ char *dotgit = path_in(f.repo, ".git");
        ck_assert_msg(access(dotgit, F_OK) < 0, "the repository still has a .git");
        assert_logged(&f, "moved", ".git");
        _cleanup_free_ char *q = path_in(f.out, "quarantine");
        _cleanup_free_ char *names = files_with_prefix(q, "0");
        ck_assert_msg(strstr(names, "-.git"), "the .git is not in the quarantine: %s", names);
        fixture_free(&f);
}
END_TEST

/* Other tools' control files: made, changed, removed; listed in the
 * Outcome, put back, the session's version in the quarantine. */
START_TEST(other_tools_control_files_are_listed_and_put_back)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        sh_ok("set -e; cd '%s'; mkdir .vscode; echo '{}' > .vscode/tasks.json; echo 'export A=1' > .envrc", f.repo);
        tb(&r, &f, NULL,
           EXTRA("--", "-c",
                 "mkdir -p .claude && echo '{\"hooks\":{\"Stop\":[]}}' > .claude/settings.local.json && "
                 "echo '{\"tasks\":[{\"runOptions\":{\"runOn\":\"folderOpen\"}}]}' > .vscode/tasks.json && "
                 "rm .envrc && echo '{\"mcpServers\":{}}' > .mcp.json && echo DONE"));
        ck_assert_msg(r.status == 0 && strstr(r.out, "DONE"), "%s%s", r.out, r.err);
        proc_result_free(&r);
        json_object *j = outcome_json(&f), *cf;
        ck_assert(json_object_object_get_ex(j, "control_files", &cf) && json_object_is_type(cf, json_type_array));
        const char *want[][2] = { { ".claude/settings.local.json", "new" }, { ".vscode/tasks.json", "changed" },
                                  { ".envrc", "removed" }, { ".mcp.json", "new" } };
        for (size_t i = 0; i < TB_ARRAY_SIZE(want); i++) {
                bool found = false;
                for (size_t k = 0; k < json_object_array_length(cf); k++) {
                        json_object *e = json_object_array_get_idx(cf, k), *p, *c;
                        json_object_object_get_ex(e, "path", &p);
                        json_object_object_get_ex(e, "change", &c);
                        found = found || (strcmp(json_object_get_string(p), want[i][0]) == 0 &&
                                          strcmp(json_object_get_string(c), want[i][1]) == 0);
                }
                ck_assert_msg(found, "control_files lacks %s %s: %s", want[i][0], want[i][1],
                              json_object_to_json_string(cf));
        }
        json_object_put(j);
        /* Put back: what was there is there again, what was new is gone. */
        _cleanup_free_ char *tasks = path_in(f.repo, ".vscode/tasks.json");
        _cleanup_free_ char *text = read_text(tasks);
        ck_assert_str_eq(text, "{}\n");
        _cleanup_free_ char *envrc = path_in(f.repo, ".envrc");
        ck_assert_int_eq(access(envrc, F_OK), 0);
        _cleanup_free_ char *claude = path_in(f.repo, ".claude/settings.local.json");
        ck_assert_int_ne(access(claude, F_OK), 0);
        fixture_free(&f);
}
END_TEST

/* --keep-control-files: the same changes are listed, and stay. */
START_TEST(keep_control_files_lists_the_changes_and_keeps_them)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        tb(&r, &f, NULL,
           EXTRA("--keep-control-files", "--", "-c", "mkdir -p .claude && echo '{}' > .claude/settings.json && echo DONE"));
        ck_assert_msg(r.status == 0 && strstr(r.out, "DONE"), "%s%s", r.out, r.err);
        proc_result_free(&r);
        json_object *j = outcome_json(&f), *cf;
        ck_assert(json_object_object_get_ex(j, "control_files", &cf));
        const char *text = json_object_to_json_string_ext(cf, JSON_C_TO_STRING_NOSLASHESCAPE);
        ck_assert_msg(strstr(text, ".claude/settings.json") && strstr(text, "\"kept\":true"), "%s", text);
        json_object_put(j);
        _cleanup_free_ char *kept = path_in(f.repo, ".claude/settings.json");
        ck_assert_int_eq(access(kept, F_OK), 0);
        fixture_free(&f);
}
END_TEST

/* Links and FIFOs the session leaves are listed; setuid and setgid bits
 * that appear while it runs are cleared in the repository, the home and the
 * output. The session's own chmod 4755 is refused by the seccomp filter
 * (confine.h): the bits are set from the host side while the session waits,
 * as a way round the filter would set them, and the guard is the layer
 * behind it. */
START_TEST(new_links_and_fifos_are_listed_and_setuid_bits_cleared)
{
        struct fixture f;
        git_fixture(&f, true);
        sh_ok("cd '%s' && ln -s tracked old-link", f.repo);
        pid_t pid = tb_shell_start(&f,
                                   EXTRA("--", "-c",
                                         "ln -s /etc/shadow new-link && mkfifo a-fifo && cp /bin/true suid && "
                                         "cp /bin/true \"$HOME/sgid\" && { chmod 4755 suid 2>/dev/null || "
                                         "echo REFUSED; } && touch ready && "
                                         "while [ ! -e go ]; do sleep 0.05; done && rm go ready && echo DONE"),
                                   "ready", false);
        _cleanup_free_ char *suid = path_in(f.repo, "suid");
        _cleanup_free_ char *sgid = path_in(f.out, "home/sgid");
        ck_assert_int_eq(chmod(suid, 04755), 0);
        ck_assert_int_eq(chmod(sgid, 02755), 0);
        _cleanup_free_ char *go = path_in(f.repo, "go");
        write_text(go, "", 0644);
        ck_assert_int_eq(wait_status(pid), 0);
        _cleanup_free_ char *out = read_text_in(f.dir, "stdout");
        ck_assert_msg(out && strstr(out, "DONE") && strstr(out, "REFUSED"), "%s", out ? out : "");
        json_object *j = outcome_json(&f), *sf;
        ck_assert(json_object_object_get_ex(j, "special_files", &sf) && json_object_is_type(sf, json_type_array));
        const char *text = json_object_to_json_string_ext(sf, JSON_C_TO_STRING_NOSLASHESCAPE);
        ck_assert_msg(strstr(text, "new-link") && strstr(text, "/etc/shadow") && strstr(text, "a-fifo"), "%s", text);
        ck_assert_msg(!strstr(text, "old-link"), "a link from before the session is listed: %s", text);
        json_object_put(j);
        assert_mode(suid, 0755);
        assert_mode(sgid, 0755);
        assert_logged(&f, "setuid_cleared", "suid");
        assert_logged(&f, "setuid_cleared", "home/sgid");
        fixture_free(&f);
}
END_TEST

/* The sweep of .git after the session does not enter a folder the session
 * left as it was (most of objects/): a folder it changed is entered, under
 * a parent it did not change. Here objects/XX/ of an existing object gets
 * a new (well-named) object file, whose setuid bit is set from the host
 * while the session waits, as in the test above: it is cleared. */
START_TEST(a_setuid_bit_in_a_git_folder_the_session_changed_is_cleared_under_one_it_did_not)
{
        struct fixture f;
        git_fixture(&f, true);
        _cleanup_free_ char *objects = path_in(f.repo, ".git/objects");
        char xx[3] = "";
        DIR *d = opendir(objects);
        for (struct dirent *e; d && (e = readdir(d)) && !xx[0];)
                if (strlen(e->d_name) == 2 && strspn(e->d_name, "0123456789abcdef") == 2)
                        memcpy(xx, e->d_name, 3);
        if (d)
                closedir(d);
        ck_assert_msg(xx[0], "no loose object folder in '%s'", objects);
        const char *name = "00000000000000000000000000000000000000"; /* 38 hex: a SHA-1 object's */
        _cleanup_free_ char *script = xasprintf("cp /bin/true .git/objects/%s/%s && touch ready && "
                                                "while [ ! -e go ]; do sleep 0.05; done && rm go ready && echo DONE",
                                                xx, name);
        pid_t pid = tb_shell_start(&f, EXTRA("--", "-c", script), "ready", false);
        _cleanup_free_ char *rel = xasprintf(".git/objects/%s/%s", xx, name);
        _cleanup_free_ char *obj = path_in(f.repo, rel);
        ck_assert_int_eq(chmod(obj, 04755), 0);
        _cleanup_free_ char *go = path_in(f.repo, "go");
        write_text(go, "", 0644);
        ck_assert_int_eq(wait_status(pid), 0);
        assert_mode(obj, 0755);
        assert_logged(&f, "setuid_cleared", rel);
        fixture_free(&f);
}
END_TEST

/* Does the file system of `path` count a folder's subfolders in its link
 * count (tmpfs, ext2/3/4, XFS)? Then the guard notes an objects/XX/ folder
 * without a folder in it by its identity alone (gitguard/scan.c). */
static bool nlink_exact(const char *path)
{
        struct statfs fs;
        ck_assert_int_eq(statfs(path, &fs), 0);
        return fs.f_type == TMPFS_MAGIC || fs.f_type == EXT4_SUPER_MAGIC || fs.f_type == XFS_SUPER_MAGIC;
}

/* The rebuild does not look into an objects/XX/ folder the session left as
 * it was: one it changed is checked entry by entry, under an objects/ it
 * did not change. The session puts a file git would not read as an object
 * into one existing objects/XX/ and a folder into another (no name at all
 * is data there): both go to the quarantine, and every object the host had
 * is still read. What the host itself left in a folder the session did not
 * touch: a file stays as the host left it, where the file system's link
 * counts tell a folder without folders (the walk before the session did
 * not list it); a folder in it goes (a folder with a folder in it is
 * always looked into: the session may have changed what is below), as
 * does the file where link counts tell nothing (that folder was listed,
 * and held more than loose objects' files). */
START_TEST(what_a_session_adds_to_an_existing_object_folder_is_moved_out)
{
        struct fixture f;
        git_fixture(&f, true);
        sh_ok("cd '%s' && for i in 1 2 3 4 5 6; do echo $i > f$i; done && git add . && "
              "git -c user.name=h -c user.email=h@h commit -qm more",
              f.repo);
        _cleanup_free_ char *objects = path_in(f.repo, ".git/objects");
        char xx[3][3] = { "", "", "" };
        int found = 0;
        DIR *d = opendir(objects);
        for (struct dirent *e; d && (e = readdir(d)) && found < 3;)
                if (strlen(e->d_name) == 2 && strspn(e->d_name, "0123456789abcdef") == 2)
                        memcpy(xx[found++], e->d_name, 3);
        if (d)
                closedir(d);
        ck_assert_msg(found == 3, "fewer than three loose object folders in '%s'", objects);
        bool folder = _i == 1;
        _cleanup_free_ char *host_junk = xasprintf(".git/objects/%s/host-junk", xx[2]);
        _cleanup_free_ char *host_junk_path = path_in(f.repo, host_junk);
        if (folder)
                ck_assert_int_eq(mkdir(host_junk_path, 0755), 0);
        else
                write_text(host_junk_path, "junk", 0644);
        _cleanup_free_ char *script = xasprintf("echo junk > .git/objects/%s/not-an-object && "
                                                "mkdir .git/objects/%s/sub && echo DONE",
                                                xx[0], xx[1]);
        struct proc_result r;
        tb(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0 && strstr(r.out, "DONE"), "%s%s", r.out, r.err);
        proc_result_free(&r);
        assert_guard_status(&f, "restored");
        _cleanup_free_ char *junk = xasprintf(".git/objects/%s/not-an-object", xx[0]);
        _cleanup_free_ char *sub = xasprintf(".git/objects/%s/sub", xx[1]);
        assert_logged(&f, "moved", junk);
        assert_logged(&f, "moved", sub);
        _cleanup_free_ char *junk_path = path_in(f.repo, junk), *sub_path = path_in(f.repo, sub);
        ck_assert_int_ne(access(junk_path, F_OK), 0);
        ck_assert_int_ne(access(sub_path, F_OK), 0);
        if (!folder && nlink_exact(objects)) {
                ck_assert_msg(!guard_logged(&f, "moved", host_junk), "the host's '%s' was moved", host_junk);
                ck_assert_int_eq(access(host_junk_path, F_OK), 0);
        } else {
                assert_logged(&f, "moved", host_junk);
                ck_assert_int_ne(access(host_junk_path, F_OK), 0);
        }
        sh_ok("cd '%s' && git fsck --no-dangling --no-progress && git log --format=%%s | grep -qx more", f.repo);
        fixture_free(&f);
}
END_TEST

/* The host's own config names worktree paths: husky's hooks folder (there,
 * or not yet), a shared config included from the worktree. Whatever the
 * session makes of them is put back, and listed as the host's. */
START_TEST(hooks_and_configs_the_host_config_names_in_the_worktree_stay_the_hosts)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        sh_ok("set -e; cd '%s'; mkdir .husky; printf '#!/bin/sh\\ntrue\\n' > .husky/pre-commit; chmod +x "
              ".husky/pre-commit; echo '[user]' > shared.cfg; git config core.hooksPath .husky; "
              "git config include.path ../shared.cfg; git config includeIf.gitdir:/.path ../later.cfg",
              f.repo);
        _cleanup_free_ char *script = xasprintf(
                "M=%1$s/PWNED\n"
                "printf '#!/bin/sh\\ntouch %%s\\n' \"$M-husky\" > .husky/pre-commit\n"
                "printf '[core]\\n\\tfsmonitor = touch %%s; false\\n' \"$M-shared\" >> shared.cfg\n"
                "printf '[core]\\n\\tfsmonitor = touch %%s; false\\n' \"$M-later\" > later.cfg && echo PLANTED\n",
                f.dir);
        tb(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0 && strstr(r.out, "PLANTED"), "%s%s", r.out, r.err);
        proc_result_free(&r);
        json_object *j = outcome_json(&f), *cf;
        ck_assert(json_object_object_get_ex(j, "control_files", &cf));
        const char *text = json_object_to_json_string_ext(cf, JSON_C_TO_STRING_NOSLASHESCAPE);
        ck_assert_msg(strstr(text, ".husky") && strstr(text, "shared.cfg") && strstr(text, "later.cfg") &&
                              strstr(text, "\"host_config\":true"),
                      "%s", text);
        json_object_put(j);
        assert_host_runs_nothing(&f);
        fixture_free(&f);
}
END_TEST

/* A hooks folder the host made a link into the worktree: the folder it
 * names is the host's. */
START_TEST(a_hooks_link_into_the_worktree_stays_the_hosts)
{
        struct fixture f;
        struct proc_result r;
        char link[1100], target[1100];
        git_fixture(&f, true);
        sh_ok("set -e; cd '%s'; mkdir githooks; printf '#!/bin/sh\\ntrue\\n' > githooks/pre-commit; "
              "chmod +x githooks/pre-commit; rm -rf .git/hooks; ln -s ../githooks .git/hooks",
              f.repo);
        _cleanup_free_ char *script = xasprintf(
                "M=%1$s/PWNED\n"
                "printf '#!/bin/sh\\ntouch %%s\\n' \"$M-target\" > githooks/pre-commit\n"
                "rm .git/hooks && mkdir .git/hooks && printf '#!/bin/sh\\ntouch %%s\\n' \"$M-hook\" > "
                ".git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo REPLACED\n",
                f.dir);
        tb(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0 && strstr(r.out, "REPLACED"), "%s%s", r.out, r.err);
        proc_result_free(&r);
        snprintf(link, sizeof link, "%s/.git/hooks", f.repo);
        ssize_t n = readlink(link, target, sizeof target - 1);
        ck_assert_int_gt(n, 0);
        target[n] = '\0';
        ck_assert_str_eq(target, "../githooks");
        assert_host_runs_nothing(&f);
        fixture_free(&f);
}
END_TEST

/* A hooks folder the host's config names below a folder of the worktree
 * (tools/hooks, there or not yet): the session moves tools away and makes a
 * tools/hooks of its own; the host's path is put back. */
START_TEST(a_folder_above_a_hooks_folder_the_host_names_is_put_back)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        sh_ok("set -e; cd '%s'; mkdir -p tools; %s git config core.hooksPath tools/hooks", f.repo,
              _i == 0 ? "mkdir tools/hooks; printf '#!/bin/sh\\ntrue\\n' > tools/hooks/pre-commit; "
                        "chmod +x tools/hooks/pre-commit;"
                      : "");
        _cleanup_free_ char *script =
                xasprintf("mv tools tools-away && mkdir -p tools/hooks && printf '#!/bin/sh\\ntouch "
                          "%%s\\n' '%s/PWNED-moved' > tools/hooks/pre-commit && chmod +x tools/hooks/pre-commit && "
                          "echo DONE",
                          f.dir);
        tb(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0 && strstr(r.out, "DONE"), "%s%s", r.out, r.err);
        proc_result_free(&r);
        assert_host_runs_nothing(&f);
        fixture_free(&f);
}
END_TEST

START_TEST(a_git_folder_made_by_the_session_in_a_plain_folder_is_moved_out)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, false);
        tb(&r, &f, NULL,
           EXTRA("--", "-c", "git init -q && git config core.fsmonitor 'touch /x; false' && echo SESSION-INIT-OK"));
        ck_assert_msg(r.status == 0 && strstr(r.out, "SESSION-INIT-OK"), "%s%s", r.out, r.err);
        _cleanup_free_ char *dotgit = path_in(f.repo, ".git");
        ck_assert_int_ne(access(dotgit, F_OK), 0);
        assert_logged(&f, "moved", ".git");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* The Trial's repository is a linked worktree: its common git directory
 * (outside the repository, bound read-write) is rebuilt too; the session's
 * commits stay. */
START_TEST(a_linked_worktree_gets_its_common_directory_rebuilt)
{
        struct fixture f;
        struct proc_result r;
        ck_assert_msg(host_can("command -v git >/dev/null"), "git is not installed");
        fixture_new(&f);
        _cleanup_free_ char *main_repo = path_in(f.dir, "main");
        sh_ok("set -e; mkdir '%1$s'; cd '%1$s'; git init -q -b main; echo one > tracked; git add tracked; "
              GIT " commit -q -m base; rmdir '%2$s'; git worktree add -q '%2$s' -b wt",
              main_repo, f.repo);
        _cleanup_free_ char *script = xasprintf(
                "C=$(git rev-parse --git-common-dir); G=$(git rev-parse --git-dir); "
                "printf '[core]\\n\\tfsmonitor = touch %1$s/PWNED-common; false\\n' >> $C/config && "
                "printf '[core]\\n\\tfsmonitor = touch %1$s/PWNED-private; false\\n' > $G/config.worktree && "
                "printf '#!/bin/sh\\ntouch %1$s/PWNED-hook\\n' > $C/hooks/post-commit && chmod +x $C/hooks/post-commit && "
                GIT " commit -q --allow-empty -m in-worktree && echo PLANTED",
                f.dir);
        tb(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0 && strstr(r.out, "PLANTED"), "%s%s", r.out, r.err);
        proc_result_free(&r);
        assert_guard_status(&f, "restored");
        assert_logged(&f, "moved", "/config");
        assert_logged(&f, "moved", "/config.worktree");
        sh_ok("cd '%s' && git log -1 --format=%%s | grep -qx in-worktree", f.repo);
        assert_host_runs_nothing(&f);
        struct proc_result h;
        run_argv(&h, NULL, (char *[]){ "/bin/sh", "-c", (char *)host_commands, main_repo, NULL });
        _cleanup_free_ char *ran = files_with_prefix(f.dir, "PWNED");
        ck_assert_msg(strcmp(ran, "") == 0, "the main repository ran the session's code: %s", ran);
        proc_result_free(&h);
        fixture_free(&f);
}
END_TEST

/* A `.git` file planted in the repository, as a previous session could:
 * its gitdir's `commondir` names `common`. With `forged`, every proof is
 * there too: the gitdir is common/worktrees/x, names the repository back,
 * and `common` looks like a git directory. */
static void plant_dotgit(const struct fixture *f, const char *common, bool forged)
{
        char g[1100];
        if (forged) {
                snprintf(g, sizeof g, "%s/worktrees/x", common);
                sh_ok("set -e; mkdir -p '%s/objects' '%s/refs'; echo 'ref: refs/heads/main' > '%s/HEAD'", common, common,
                      common);
        } else {
                snprintf(g, sizeof g, "%s/fake-gitdir", f->dir);
        }
        sh_ok("set -e; mkdir -p '%s'; echo '%s' > '%s/commondir'; echo '%s/.git' > '%s/gitdir'; "
              "echo 'gitdir: %s' > '%s/.git'",
              g, common, g, f->repo, g, g, f->repo);
}

/* Does the dry-run line bind `path` read-write? */
static bool binds_rw(const char *line, const char *path)
{
        char want[1200];
        snprintf(want, sizeof want, "--bind %s %s ", path, path);
        return strstr(line, want) != NULL;
}

START_TEST(a_planted_git_file_never_binds_a_host_folder)
{
        struct fixture f;
        struct proc_result r;
        const char *home = getenv("HOME");
        ck_assert_ptr_nonnull(home);
        char parent[1100];
        const char *targets[] = { "/etc", "/usr", home, "/" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(targets); i++) {
                fixture_new(&f);
                plant_dotgit(&f, targets[i], false);
                tb(&r, &f, NULL, EXTRA("--dry-run", "--", "-c", "true"));
                ck_assert_msg(r.status == 0, "%s", r.err);
                ck_assert_msg(!binds_rw(r.out, targets[i]), "'%s' is bound read-write: %s", targets[i], r.out);
                ck_assert_ptr_nonnull(strstr(r.err, "not bound"));
                proc_result_free(&r);
                fixture_free(&f);
        }
        /* A parent of the repository, with every proof forged. */
        fixture_new(&f);
        snprintf(parent, sizeof parent, "%s", f.dir);
        plant_dotgit(&f, parent, true);
        tb(&r, &f, NULL, EXTRA("--dry-run", "--", "-c", "true"));
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_msg(!binds_rw(r.out, parent), "the parent '%s' is bound read-write: %s", parent, r.out);
        ck_assert_msg(strstr(r.err, "not bound") && strstr(r.err, "a parent of"), "%s", r.err);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* trialbox under `timeout`: a hang fails the test instead of blocking it. */
static void tb_timed(struct proc_result *r, const struct fixture *f, const char *const extra[])
{
        char *argv[64] = { "/usr/bin/timeout", "-s", "KILL", "30" };
        tb_argv(argv + 4, 60, "shell", f, extra);
        run_argv(r, tb_env(NULL), argv);
}

START_TEST(a_fifo_as_git_file_or_commondir_hangs_nothing)
{
        struct fixture f;
        struct proc_result r;
        char g[1100];
        for (int where = 0; where < 2; where++)
                for (int dry = 0; dry < 2; dry++) {
                        fixture_new(&f);
                        snprintf(g, sizeof g, "%s/gd", f.dir);
                        if (where == 0)
                                sh_ok("mkfifo '%s/.git'", f.repo);
                        else
                                sh_ok("set -e; mkdir '%s'; mkfifo '%s/commondir' '%s/gitdir'; echo 'gitdir: %s' > "
                                      "'%s/.git'",
                                      g, g, g, g, f.repo);
                        if (dry)
                                tb_timed(&r, &f, EXTRA("--dry-run", "--", "-c", "true"));
                        else
                                tb_timed(&r, &f, EXTRA("--", "-c", "echo SESSION-RAN"));
                        ck_assert_msg(r.status == 0, "fifo as %s, %s: status %d: %s", where ? "commondir" : ".git",
                                      dry ? "dry-run" : "run", r.status, r.err);
                        if (!dry)
                                ck_assert_ptr_nonnull(strstr(r.out, "SESSION-RAN"));
                        proc_result_free(&r);
                        fixture_free(&f);
                }
}
END_TEST

START_TEST(the_session_commits_as_the_host_user_and_sees_no_other_host_git_config)
{
        struct fixture f;
        struct proc_result r;
        char home[1100], env_home[1200], gitconfig[1200];
        git_fixture(&f, true);
        snprintf(home, sizeof home, "%s/host-home", f.dir);
        ck_assert_int_eq(mkdir(home, 0755), 0);
        snprintf(gitconfig, sizeof gitconfig, "%s/.gitconfig", home);
        static const char identity[] = "[user]\n\tname = Host \\\"Q\\\" Person\n\temail = host@example.com\n";
        static const char rest[] = "[credential]\n\thelper = store --file /never\n[core]\n\tpager = less -SECRETPAGER\n";
        _cleanup_free_ char *text = NULL;
        if (_i == 0) { /* the plain syntax trialbox reads itself */
                text = xasprintf("%s%s", identity, rest);
        } else if (_i == 1) { /* an include: git reads it */
                write_in(home, "identity.inc", identity, 0644);
                text = xasprintf("[include]\n\tpath = identity.inc\n%s", rest);
        } else { /* both files: XDG's first, ~/.gitconfig's user.name wins */
                write_in(home, ".config/git/config", "[user]\n\tname = Overridden\n\temail = host@example.com\n",
                         0644);
                text = xasprintf("[user]\n\tname = \"Host \\\"Q\\\" Person\"\n%s", rest);
        }
        write_text(gitconfig, text, 0644);
        snprintf(env_home, sizeof env_home, "HOME=%s", home);
        tb(&r, &f, ENV(env_home),
           EXTRA("--", "-c",
                 "git commit -q --allow-empty -m as-host && git config --get credential.helper; "
                 "git config --get core.pager; cat \"$HOME/.gitconfig\""));
        ck_assert_msg(r.status == 0, "the commit failed: %s%s", r.out, r.err);
        ck_assert_ptr_null(strstr(r.out, "never"));
        ck_assert_ptr_null(strstr(r.out, "SECRETPAGER"));
        ck_assert_ptr_null(strstr(r.out, "credential"));
        sh_ok("cd '%s' && git log -1 --format='%%an <%%ae>|%%cn' | grep -qx 'Host \"Q\" Person <host@example.com>|Host "
              "\"Q\" Person'",
              f.repo);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* A .git that is a link: git follows it to a config the session could
 * change and trialbox could not restore. The Trial is void, nothing ran. */
START_TEST(a_git_link_at_the_top_of_the_repository_makes_the_trial_void)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        sh_ok("cd '%s' && mv .git real-git && ln -s real-git .git", f.repo);
        tb(&r, &f, NULL, EXTRA("--", "-c", "touch SESSION-RAN"));
        ck_assert_msg(r.status == 125, "status %d: %s", r.status, r.err);
        ck_assert_msg(strstr(r.err, ".git' is a link"), "%s", r.err);
        _cleanup_free_ char *ran = path_in(f.repo, "SESSION-RAN");
        ck_assert_msg(access(ran, F_OK) < 0, "the session ran");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* A git directory with more control entries than the snapshot keeps: the
 * snapshot is taken while bwrap sets the sandbox up, and its failure ends
 * the sandbox before the session's byte. The Trial is void with the
 * reason, nothing ran, the guard restored nothing from a partial snapshot. */
START_TEST(a_git_folder_past_the_snapshots_bounds_makes_the_trial_void_before_the_session)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        sh_ok("mkdir '%s/.git/many' && cd '%s/.git/many' && seq %zu | xargs touch", f.repo, f.repo,
              (size_t)SNAPSHOT_MAX_ITEMS + 1);
        tb(&r, &f, NULL, EXTRA("--", "-c", "touch SESSION-RAN"));
        assert_void(&f, &r, "session_unavailable", "more control files than trialbox can keep");
        _cleanup_free_ char *ran = path_in(f.repo, "SESSION-RAN");
        ck_assert_msg(access(ran, F_OK) < 0, "the session ran");
        /* Nothing moved out of .git on a partial snapshot's word. */
        _cleanup_free_ char *quarantine = path_in(f.out, "quarantine");
        ck_assert_msg(access(quarantine, F_OK) < 0, "a quarantine was made");
        sh_ok("cd '%s' && git status >/dev/null && test -e .git/many/%zu", f.repo, (size_t)SNAPSHOT_MAX_ITEMS + 1);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

TB_SUITE("repo_guard", 120)
{
        tcase_add_test(tc, nothing_a_session_writes_into_git_runs_on_the_host);
        tcase_add_test(tc, without_trialbox_the_same_attack_does_run_on_the_host);
        tcase_add_loop_test(tc, head_removed_replaced_or_garbage_and_a_top_that_looks_bare_run_nothing, 0, 4);
        tcase_add_test(tc, quarantine_names_the_session_takes_first_change_nothing);
        tcase_add_test(tc, an_embedded_repository_at_any_depth_is_moved_out);
        tcase_add_test(tc, permissions_the_session_changed_do_not_stop_the_guard);
        tcase_add_test(tc, git_files_pointing_anywhere_are_moved_out);
        tcase_add_test(tc, an_unchanged_leaf_is_still_looked_into_where_git_would_read);
        tcase_add_loop_test(tc, the_index_is_kept_when_it_reads_as_one, 0, 3);
        tcase_add_test(tc, a_change_the_guard_cannot_undo_quarantines_the_whole_git_folder);
        tcase_add_test(tc, other_tools_control_files_are_listed_and_put_back);
        tcase_add_test(tc, keep_control_files_lists_the_changes_and_keeps_them);
        tcase_add_test(tc, new_links_and_fifos_are_listed_and_setuid_bits_cleared);
        tcase_add_test(tc, a_setuid_bit_in_a_git_folder_the_session_changed_is_cleared_under_one_it_did_not);
        tcase_add_loop_test(tc, what_a_session_adds_to_an_existing_object_folder_is_moved_out, 0, 2);
        tcase_add_test(tc, a_git_link_at_the_top_of_the_repository_makes_the_trial_void);
        tcase_add_test(tc, a_git_folder_past_the_snapshots_bounds_makes_the_trial_void_before_the_session);
        tcase_add_loop_test(tc, a_folder_above_a_hooks_folder_the_host_names_is_put_back, 0, 2);
        tcase_add_test(tc, hooks_and_configs_the_host_config_names_in_the_worktree_stay_the_hosts);
        tcase_add_test(tc, a_hooks_link_into_the_worktree_stays_the_hosts);
        tcase_add_test(tc, a_git_folder_made_by_the_session_in_a_plain_folder_is_moved_out);
        tcase_add_test(tc, a_linked_worktree_gets_its_common_directory_rebuilt);
        tcase_add_test(tc, a_planted_git_file_never_binds_a_host_folder);
        tcase_add_test(tc, a_fifo_as_git_file_or_commondir_hangs_nothing);
        tcase_add_loop_test(tc, the_session_commits_as_the_host_user_and_sees_no_other_host_git_config, 0, 3);
}
