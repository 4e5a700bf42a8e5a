/* The toolkit's Trials: fixtures, trialbox's command line and environment,
 * outcome.json (tb_test.h). */
#define _GNU_SOURCE
#include "tb_test.h"
#include "base/util.h"

#include <check.h>

#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void fixture_new(struct fixture *f)
{
        f->dir = tmpdir_new();
        f->outs = 0;
        f->kept = NULL;
        f->n_kept = 0;
        snprintf(f->repo, sizeof f->repo, "%s/repo", f->dir);
        snprintf(f->out, sizeof f->out, "%s/out", f->dir);
        if (mkdir(f->repo, 0755) < 0)
                abort();
}

void fixture_free(struct fixture *f)
{
        tmpdir_remove(f->dir);
        free(f->dir);
        for (size_t i = 0; i < f->n_kept; i++)
                free(f->kept[i]);
        free(f->kept);
}

char *fixture_keep(struct fixture *f, char *s)
{
        f->kept = xrealloc(f->kept, (f->n_kept + 1) * sizeof *f->kept);
        f->kept[f->n_kept++] = s;
        return s;
}

void fixture_next_out(struct fixture *f) { snprintf(f->out, sizeof f->out, "%s/out%d", f->dir, f->outs++); }

void tb_argv(char **argv, size_t cap, const char *harness, const struct fixture *f, const char *const extra[])
{
        size_t n = 0;
        const char *base[] = { TRIALBOX_BIN, "run", "--harness", harness, "--repo", f->repo, "--output-dir", f->out };
        for (size_t i = 0; i < sizeof base / sizeof *base; i++)
                argv[n++] = (char *)base[i];
        /* As root, a session runs as root only when asked: these runs keep
         * their root-owned fixtures and ask; test_isolation runs the --user
         * path. */
        if (geteuid() == 0)
                argv[n++] = "--root-session";
        for (size_t i = 0; extra && extra[i] && n + 1 < cap; i++)
                argv[n++] = (char *)extra[i];
        argv[n] = NULL;
}

char **tb_env(char *const more[])
{
        static char *env[64];
        size_t n = 0;
        env[n++] = "TRIALBOX_PLUGIN_PATH=" PLUGIN_BUILD_DIR;
        env[n++] = "TRIALBOX_NO_SANDBOX";
        env[n++] = "TRIALBOX_BWRAP";
        for (size_t i = 0; more && more[i] && n + 1 < 64; i++)
                env[n++] = more[i];
        env[n] = NULL;
        return env;
}

void tb_run(struct proc_result *r, const char *harness, const struct fixture *f, char *const env[],
            const char *const extra[])
{
        char *argv[64];
        tb_argv(argv, 64, harness, f, extra);
        run_argv(r, tb_env(env), argv);
}

void tb_shell(struct proc_result *r, const struct fixture *f, char *const env[], const char *const extra[])
{
        tb_run(r, "shell", f, env, extra);
}

pid_t tb_shell_start(const struct fixture *f, const char *const extra[], const char *ready, bool own_group)
{
        char *argv[64];
        tb_argv(argv, 64, "shell", f, extra);
        _cleanup_free_ char *outp = path_in(f->dir, "stdout"), *errp = path_in(f->dir, "stderr");
        _cleanup_free_ char *ready_path = path_in(f->repo, ready);
        pid_t pid = spawn(tb_env(NULL), argv, &(struct tb_spawn_io){ .out = outp, .err = errp, .own_group = own_group });
        bool up = wait_for_file(ready_path, 60000);
        if (!up)
                kill(pid, SIGKILL);
        ck_assert_msg(up, "the session never made %s", ready);
        return pid;
}

void tb_command(struct proc_result *r, char *const env[], const char *const args[])
{
        char *argv[64];
        size_t n = 0;
        argv[n++] = TRIALBOX_BIN;
        for (size_t i = 0; args[i] && n + 2 < 64; i++) {
                argv[n++] = (char *)args[i];
                if (i == 0 && (strcmp(args[0], "run") == 0 || strcmp(args[0], "grade") == 0) && geteuid() == 0)
                        argv[n++] = "--root-session"; /* as tb_argv() does */
        }
        argv[n] = NULL;
        run_argv(r, tb_env(env), argv);
}

char *marker(const char *what)
{
        static unsigned n;
        char *m;
        if (asprintf(&m, "%s-%d-%u-%ld", what, (int)getpid(), n++, (long)time(NULL)) < 0)
                abort();
        return m;
}

char *outcome_field(const char *output_dir, const char *field) { return record_field(output_dir, "outcome.json", field); }

char *record_field(const char *dir, const char *name, const char *field)
{
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        char *text = read_text(path);
        if (!text)
                return NULL;
        json_object *j = json_tokener_parse(text), *v;
        free(text);
        if (!j)
                return NULL;
        char *res = NULL;
        if (json_object_object_get_ex(j, field, &v))
                res = strdup(v ? json_object_get_string(v) : "null");
        json_object_put(j);
        return res;
}

char *tree_manifest(const char *dir)
{
        /* Every entry (not its access time, which reading changes), then
         * every regular file's bytes, each in a stable order. */
        char *argv[] = { "/bin/sh", "-c",
                         "cd \"$1\" && find . -printf '%y %m %U %G %s %T@ %C@ %i %p -> %l\\n' | LC_ALL=C sort && "
                         "find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum",
                         "manifest", (char *)dir, NULL };
        struct proc_result r;
        run_argv(&r, NULL, argv);
        ck_assert_msg(r.status == 0 && r.out[0], "cannot list '%s': %s", dir, r.err);
        free(r.err);
        return r.out;
}

void graded_init(struct graded *g)
{
        fixture_new(&g->f);
        sh_ok("cd '%s' && git init -q && echo broken > code && " GIT " add -A && " GIT " commit -qm one", g->f.repo);
        snprintf(g->files, sizeof g->files, "%s/files", g->f.dir);
        mkdir_p(g->files, 0755);
        g->manifest = g->outcome = NULL;
        g->outcome_len = 0;
}

void graded_run(struct graded *g, const char *session)
{
        struct proc_result r;
        tb_shell(&r, &g->f, NULL, EXTRA("--", "-c", session));
        ck_assert_msg(r.status == 0 || r.status == 1, "the Trial: status %d; %s", r.status, r.err);
        proc_result_free(&r);
        g->manifest = tree_manifest(g->f.repo);
        _cleanup_free_ char *path = path_in(g->f.out, "outcome.json");
        g->outcome = read_all(path, &g->outcome_len, false);
        ck_assert(g->outcome != NULL);
}

void graded_free(struct graded *g)
{
        free(g->manifest);
        free(g->outcome);
        fixture_free(&g->f);
}

void assert_trial_unchanged(const struct graded *g)
{
        _cleanup_free_ char *now = tree_manifest(g->f.repo);
        size_t i = 0;
        while (now[i] && now[i] == g->manifest[i])
                i++;
        while (i > 0 && now[i - 1] != '\n')
                i--;
        ck_assert_msg(strcmp(now, g->manifest) == 0, "the Trial's repository changed, from:\n%.300s\nto:\n%.300s",
                      g->manifest + i, now + i);
        _cleanup_free_ char *path = path_in(g->f.out, "outcome.json");
        size_t len = 0;
        _cleanup_free_ char *bytes = read_all(path, &len, false);
        ck_assert_msg(bytes && len == g->outcome_len && memcmp(bytes, g->outcome, len) == 0,
                      "the Trial's outcome.json changed:\n%s\n%s", g->outcome, bytes ? bytes : "(gone)");
}
