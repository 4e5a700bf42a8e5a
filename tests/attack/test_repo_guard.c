/* The repository guard, end to end: the real trialbox, the real bwrap and
 * the real git. A session plants everything that makes git run a program
 * or read another config; the host's ordinary git commands afterwards run
 * none of it. A planted `.git` file never makes trialbox bind a host folder,
 * and a FIFO in its place never hangs it. The session commits as the host
 * user, with nothing else of the host's git config. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tb_test.h"
#include "base/util.h"


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

/* Everything a session can write that git on the host would run or follow.
 * Markers go to `%1$s` (the fixture's folder: inside the session it is the
 * sandbox's own /tmp, so only the host can leave them there). The session's
 * own git work comes first; the redirection of git's common directory last,
 * as it changes where the session's own commits go. */
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
        /* A .git file git reads otherwise than a lax parser: two spaces make
         * git open "twospace/ ../.git/modules/sub", a folder of the session's. */
        "mkdir -p twospace && printf 'gitdir:  ../.git/modules/sub\\n' > twospace/.git\n"
        /* Under .git/modules: a link to a git directory of the session's,
         * and a git directory whose HEAD is a link (git takes both). */
        "mkdir -p evilmod && cp -r .git/HEAD .git/refs .git/objects evilmod/ && cp evil.cfg evilmod/config && "
        "ln -s \"$R/evilmod\" .git/modules/evil\n"
        "mkdir -p .git/modules/lh/refs .git/modules/lh/objects && ln -s refs/heads/main .git/modules/lh/HEAD && "
        "cp evil.cfg .git/modules/lh/config\n"
        /* The git directory's own files. */
        "cat evil.cfg >> .git/config 2>/dev/null && echo LEAK-append\n"
        "cp evil.cfg x.cfg && mv -f x.cfg .git/config 2>/dev/null && echo LEAK-rename-config\n"
        "git config core.fsmonitor \"touch $M-git-config; false\" 2>/dev/null && echo LEAK-git-config\n"
        "cp evil.cfg .git/config.worktree\n"
        "for x in pre-commit post-commit post-checkout reference-transaction; do cp h/$x .git/hooks/$x 2>/dev/null "
        "&& echo LEAK-hook; done\n"
        "mv .git/hooks .git/hooks-away 2>/dev/null && echo LEAK-hooks-renamed\n"
        "mkdir -p .git/info && echo '* filter=x' > .git/info/attributes\n"
        "mkdir -p .git/objects/info && echo \"$R/alt\" > .git/objects/info/alternates\n"
        /* A worktree entry of its own and a .git file naming it. */
        "mkdir -p .git/worktrees/evil wt && echo \"$R/wt/.git\" > .git/worktrees/evil/gitdir && "
        "echo ../../../evil-gd > .git/worktrees/evil/commondir && cp .git/HEAD .git/worktrees/evil/ && "
        "echo \"gitdir: $R/.git/worktrees/evil\" > wt/.git\n"
        /* .git itself moved away, or a file (not in the control run below,
         * where it would succeed and leave no repository to attack). */
        "[ -n \"$CONTROL\" ] || { mv .git .git-away 2>/dev/null && echo LEAK-dotgit-renamed; }\n"
        /* Last: git's common directory redirected to one of the session's. */
        "mkdir evil-gd && cp -r .git/HEAD .git/refs .git/objects evil-gd/ && cp evil.cfg evil-gd/config && "
        "echo \"$R/evil-gd\" > .git/commondir && echo SESSION-COMMONDIR-PLANTED\n"
        "exit 0\n";

/* What the host's user does next in the repository, each with the
 * session's markers in reach. Failures are fine; running code is not. */
static const char host_commands[] =
        "cd '%s'; git status; git status --short; git diff; git diff HEAD~1; echo three >> tracked; "
        "git add -A; " GIT " commit -q -m host; git checkout -q -b host-branch; git log -p | cat; git log --stat; "
        "git -C wt status; git -C inner status; " GIT " -C inner commit -q --allow-empty -m in; git -C sub status; git -C emb status; git gc -q --auto; exit 0";

START_TEST(nothing_a_session_writes_into_git_runs_on_the_host)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        /* A worktree of the host's inside the repository stays usable. */
        sh_ok("cd '%s' && git worktree add -q inner -b inner-branch", f.repo);
        char *script = NULL;
        ck_assert_int_ge(asprintf(&script, attack, f.dir), 0);
        tb_shell(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0, "the Trial failed (%d): %s", r.status, r.err);
        /* The session keeps doing its work. */
        const char *ok[] = { "SESSION-COMMIT-OK", "SESSION-REBASE-OK", "SESSION-BRANCH-OK", "SESSION-TAG-OK",
                             "SESSION-STASH-OK", "SESSION-SUBMODULE-OK", "SESSION-EMBEDDED-OK",
                             "SESSION-COMMONDIR-PLANTED" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(ok); i++)
                ck_assert_msg(strstr(r.out, ok[i]), "no %s in the session's output: %s\n%s", ok[i], r.out, r.err);
        /* The config, its hooks and .git itself cannot even be changed. */
        ck_assert_msg(!strstr(r.out, "LEAK-"), "the session changed a protected git file: %s", r.out);
        /* What it could plant was undone, and said so. */
        const char *undone[] = { "/.git/commondir", "/.git/config.worktree", "/.git/objects/info/alternates",
                                 "/.git/modules/sub/config", "/.git/worktrees/evil/commondir", "emb/.git",
                                 "wt/.git", "/.git/modules/sub/hooks/post-checkout", "twospace/.git",
                                 "/.git/modules/evil", "/.git/modules/lh/config" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(undone); i++)
                ck_assert_msg(strstr(r.err, undone[i]), "nothing undone for %s: %s", undone[i], r.err);
        char inner[1100];
        snprintf(inner, sizeof inner, "%s/inner/.git", f.repo);
        ck_assert_msg(access(inner, F_OK) == 0, "the host's own worktree was renamed aside: %s", r.err);
        /* The session's commits are on the host. */
        sh_ok("cd '%s' && git log --format=%%s main | grep -qx emb && git log --format=%%s side | grep -qx on-side",
              f.repo);
        proc_result_free(&r);

        char *cmds = NULL;
        ck_assert_int_ge(asprintf(&cmds, host_commands, f.repo), 0);
        run_argv(&r, NULL, (char *[]){ "/bin/sh", "-c", cmds, NULL });
        char *ran = files_with_prefix(f.dir, "PWNED");
        ck_assert_msg(strcmp(ran, "") == 0, "the host's git ran the session's code (%s):\n%s", ran, r.err);
        /* The host's own commit worked, as the host user's git sees it. */
        sh_ok("cd '%s' && git log -1 --format=%%s | grep -qx host", f.repo);
        free(ran);
        free(cmds);
        free(script);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* The control of the test above: the same attack by a plain shell, no
 * trialbox, and the same host commands. Its code does run then, so "nothing
 * ran" above is trialbox's doing, not an attack that cannot fire. */
START_TEST(without_trialbox_the_same_attack_does_run_on_the_host)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        sh_ok("cd '%s' && git worktree add -q inner -b inner-branch", f.repo);
        char *script = NULL, *cmds = NULL;
        ck_assert_int_ge(asprintf(&script, attack, f.dir), 0);
        _cleanup_free_ char *cd_script = xasprintf("cd '%s' && CONTROL=1; %s", f.repo, script);
        run_argv(&r, NULL, (char *[]){ "/bin/sh", "-c", cd_script, NULL });
        proc_result_free(&r);
        ck_assert_int_ge(asprintf(&cmds, host_commands, f.repo), 0);
        run_argv(&r, NULL, (char *[]){ "/bin/sh", "-c", cmds, NULL });
        _cleanup_free_ char *ran = files_with_prefix(f.dir, "PWNED");
        /* Seen here: the include's fsmonitor (it overrides the config's own),
         * the filter, diff.external, and the hooks through hooksPath. The
         * pager, editor, ssh command, alias and pre-auto-gc vectors stay in
         * the attack but never fire with these host commands. */
        const char *fired[] = { "PWNED-include",          "PWNED-filter",
                                "PWNED-hook-ext",         "PWNED-hook-pre-commit",
                                "PWNED-hook-post-commit", "PWNED-hook-post-checkout",
                                "PWNED-hook-reference-transaction", "PWNED-hook-post-index-change" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(fired); i++)
                ck_assert_msg(strstr(ran, fired[i]), "the attack's %s did not fire without trialbox (ran: %s)",
                              fired[i], ran);
        free(cmds);
        free(script);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* The host's own config names worktree paths: husky's hooks folder (there,
 * or not yet), a shared config included from the worktree. */
START_TEST(hooks_and_configs_the_host_config_names_in_the_worktree_stay_the_hosts)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        sh_ok("set -e; cd '%s'; mkdir .husky; printf '#!/bin/sh\\ntrue\\n' > .husky/pre-commit; chmod +x "
              ".husky/pre-commit; echo '[user]' > shared.cfg; git config core.hooksPath .husky; "
              "git config include.path ../shared.cfg; git config includeIf.gitdir:/.path ../later.cfg",
              f.repo);
        char *script = NULL;
        ck_assert_int_ge(asprintf(&script,
                                  "M=%1$s/PWNED\n"
                                  "printf '#!/bin/sh\\ntouch %%s\\n' \"$M-husky\" > .husky/pre-commit 2>/dev/null && echo LEAK-husky\n"
                                  "printf '[core]\\n\\tfsmonitor = touch %%s; false\\n' \"$M-shared\" >> shared.cfg 2>/dev/null "
                                  "&& echo LEAK-shared\n"
                                  "printf '[core]\\n\\tfsmonitor = touch %%s; false\\n' \"$M-later\" > later.cfg && echo PLANTED\n",
                                  f.dir),
                         0);
        tb_shell(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0 && strstr(r.out, "PLANTED"), "%s%s", r.out, r.err);
        ck_assert_msg(!strstr(r.out, "LEAK-"), "the session changed a file the host's config names: %s", r.out);
        assert_contains(r.err, "later.cfg");
        proc_result_free(&r);
        free(script);
        /* A hooks folder the host's config names but that is not there yet. */
        sh_ok("cd '%s' && git config core.hooksPath .githooks", f.repo);
        char out2[1200];
        snprintf(out2, sizeof out2, "%s2", f.out);
        struct fixture f2 = f;
        snprintf(f2.out, sizeof f2.out, "%s", out2);
        ck_assert_int_ge(asprintf(&script,
                                  "mkdir .githooks && printf '#!/bin/sh\\ntouch %%s\\n' '%s/PWNED-githooks' > .githooks/pre-commit && "
                                  "chmod +x .githooks/pre-commit && echo PLANTED",
                                  f.dir),
                         0);
        tb_shell(&r, &f2, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0 && strstr(r.out, "PLANTED"), "%s%s", r.out, r.err);
        assert_contains(r.err, ".githooks");
        proc_result_free(&r);
        free(script);
        run_argv(&r, NULL,
                 (char *[]){ "/bin/sh", "-c", "cd \"$0\" && git status && echo x >> tracked && " GIT " commit -qam host",
                             f.repo, NULL });
        char *ran = files_with_prefix(f.dir, "PWNED");
        ck_assert_msg(strcmp(ran, "") == 0, "the host's git ran the session's code (%s): %s", ran, r.err);
        ck_assert_msg(r.status == 0, "the host's commit failed: %s", r.err);
        free(ran);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* A hooks folder the host made a link into the worktree. */
START_TEST(a_hooks_link_into_the_worktree_stays_the_hosts)
{
        struct fixture f;
        struct proc_result r;
        char link[1100], target[1100];
        git_fixture(&f, true);
        sh_ok("set -e; cd '%s'; mkdir githooks; printf '#!/bin/sh\\ntrue\\n' > githooks/pre-commit; "
              "chmod +x githooks/pre-commit; rm -rf .git/hooks; ln -s ../githooks .git/hooks",
              f.repo);
        char *script = NULL;
        ck_assert_int_ge(asprintf(&script,
                                  "M=%1$s/PWNED\n"
                                  "printf '#!/bin/sh\\ntouch %%s\\n' \"$M-target\" > githooks/pre-commit 2>/dev/null && "
                                  "echo LEAK-target\n"
                                  "rm .git/hooks && mkdir .git/hooks && printf '#!/bin/sh\\ntouch %%s\\n' \"$M-hook\" > "
                                  ".git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo REPLACED\n",
                                  f.dir),
                         0);
        tb_shell(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0 && strstr(r.out, "REPLACED"), "%s%s", r.out, r.err);
        ck_assert_msg(!strstr(r.out, "LEAK-"), "the session changed the hooks the link names: %s", r.out);
        assert_contains(r.err, "restored the link");
        snprintf(link, sizeof link, "%s/.git/hooks", f.repo);
        ssize_t n = readlink(link, target, sizeof target - 1);
        ck_assert_int_gt(n, 0);
        target[n] = '\0';
        ck_assert_str_eq(target, "../githooks");
        proc_result_free(&r);
        run_argv(&r, NULL,
                 (char *[]){ "/bin/sh", "-c", "cd \"$0\" && echo x >> tracked && " GIT " commit -qam host", f.repo, NULL });
        char *ran = files_with_prefix(f.dir, "PWNED");
        ck_assert_msg(strcmp(ran, "") == 0, "the host's git ran the session's code (%s): %s", ran, r.err);
        ck_assert_msg(r.status == 0, "the host's commit failed: %s", r.err);
        free(ran);
        free(script);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(a_git_folder_made_by_the_session_in_a_plain_folder_is_renamed_aside)
{
        struct fixture f;
        struct proc_result r;
        char dotgit[1100];
        git_fixture(&f, false);
        tb_shell(&r, &f, NULL,
           EXTRA("--", "-c", "git init -q && git config core.fsmonitor 'touch /x; false' && echo SESSION-INIT-OK"));
        ck_assert_msg(r.status == 0 && strstr(r.out, "SESSION-INIT-OK"), "%s%s", r.out, r.err);
        snprintf(dotgit, sizeof dotgit, "%s/.git", f.repo);
        ck_assert_int_ne(access(dotgit, F_OK), 0);
        assert_contains(r.err, ".git.trialbox-quarantine-1");
        proc_result_free(&r);
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
                tb_shell(&r, &f, NULL, EXTRA("--dry-run", "--", "-c", "true"));
                ck_assert_msg(r.status == 0, "%s", r.err);
                ck_assert_msg(!binds_rw(r.out, targets[i]), "'%s' is bound read-write: %s", targets[i], r.out);
                assert_contains(r.err, "not bound");
                proc_result_free(&r);
                fixture_free(&f);
        }
        /* A parent of the repository, with every proof forged. */
        fixture_new(&f);
        snprintf(parent, sizeof parent, "%s", f.dir);
        plant_dotgit(&f, parent, true);
        tb_shell(&r, &f, NULL, EXTRA("--dry-run", "--", "-c", "true"));
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
                                assert_contains(r.out, "SESSION-RAN");
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
        tb_shell(&r, &f, ENV(env_home),
           EXTRA("--", "-c",
                 "git commit -q --allow-empty -m as-host && git config --get credential.helper; "
                 "git config --get core.pager; cat \"$HOME/.gitconfig\""));
        ck_assert_msg(r.status == 0, "the commit failed: %s%s", r.out, r.err);
        assert_lacks(r.out, "never");
        assert_lacks(r.out, "SECRETPAGER");
        assert_lacks(r.out, "credential");
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
        tb_shell(&r, &f, NULL, EXTRA("--", "-c", "touch SESSION-RAN"));
        ck_assert_msg(r.status == 125, "status %d: %s", r.status, r.err);
        ck_assert_msg(strstr(r.err, ".git' is a link"), "%s", r.err);
        _cleanup_free_ char *ran = path_in(f.repo, "SESSION-RAN");
        ck_assert_msg(access(ran, F_OK) < 0, "the session ran");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* A hooks folder the host's config names below a folder of the worktree
 * (tools/hooks, there or not yet): the session cannot move tools away and
 * make a tools/hooks of its own, which git would then run. */
START_TEST(a_folder_above_a_hooks_folder_the_host_names_cannot_be_moved_away)
{
        struct fixture f;
        struct proc_result r;
        git_fixture(&f, true);
        sh_ok("set -e; cd '%s'; mkdir -p tools; %s git config core.hooksPath tools/hooks", f.repo,
              _i == 0 ? "mkdir tools/hooks; printf '#!/bin/sh\\ntrue\\n' > tools/hooks/pre-commit; "
                        "chmod +x tools/hooks/pre-commit;"
                      : "");
        _cleanup_free_ char *script =
                xasprintf("mv tools tools-away 2>/dev/null && mkdir -p tools/hooks && printf '#!/bin/sh\\ntouch "
                          "%%s\\n' '%s/PWNED-moved' > tools/hooks/pre-commit && chmod +x tools/hooks/pre-commit && "
                          "echo LEAK-moved; echo DONE",
                          f.dir);
        tb_shell(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_msg(r.status == 0 && strstr(r.out, "DONE"), "%s%s", r.out, r.err);
        ck_assert_msg(!strstr(r.out, "LEAK-moved"), "the session moved the folder above the hooks: %s", r.out);
        proc_result_free(&r);
        run_argv(&r, NULL,
                 (char *[]){ "/bin/sh", "-c", "cd \"$0\" && echo x >> tracked && " GIT " commit -qam host", f.repo, NULL });
        _cleanup_free_ char *ran = files_with_prefix(f.dir, "PWNED");
        ck_assert_msg(strcmp(ran, "") == 0, "the host's git ran the session's hook: %s", ran);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

TB_SUITE("repo_guard", 120)
{
        tcase_add_test(tc, nothing_a_session_writes_into_git_runs_on_the_host);
        tcase_add_test(tc, without_trialbox_the_same_attack_does_run_on_the_host);
        tcase_add_test(tc, a_git_link_at_the_top_of_the_repository_makes_the_trial_void);
        tcase_add_loop_test(tc, a_folder_above_a_hooks_folder_the_host_names_cannot_be_moved_away, 0, 2);
        tcase_add_test(tc, hooks_and_configs_the_host_config_names_in_the_worktree_stay_the_hosts);
        tcase_add_test(tc, a_hooks_link_into_the_worktree_stays_the_hosts);
        tcase_add_test(tc, a_git_folder_made_by_the_session_in_a_plain_folder_is_renamed_aside);
        tcase_add_test(tc, a_planted_git_file_never_binds_a_host_folder);
        tcase_add_test(tc, a_fifo_as_git_file_or_commondir_hangs_nothing);
        tcase_add_loop_test(tc, the_session_commits_as_the_host_user_and_sees_no_other_host_git_config, 0, 3);
}
