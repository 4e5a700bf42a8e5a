/* Secrets never leak. Known test secrets sit where each Harness's login
 * lives: in the Credentials (claude.setup_token, opencode.api_key,
 * gemini.api_key) and in the host logins (Codex's auth.json under
 * CODEX_HOME, Muse's under XDG_CONFIG_HOME, agy's token and Gemini's OAuth
 * login under HOME/.gemini, Grok's auth.json in its Trials home). For each
 * Harness a real Trial runs (the real trialbox and bwrap; the session is
 * /bin/sh, which keeps running a moment), and:
 *   - while it runs, no process's command line on the host holds a secret;
 *   - after it, none is in outcome.json, in what trialbox printed at its
 *     most verbose (-vv, stdout and stderr), in --dry-run's line, or in any
 *     file left in the output folder.
 * A Harness's own secret does reach its own session (Claude's token in
 * CLAUDE_CODE_OAUTH_TOKEN, Codex's login file in its fresh home): that is
 * the positive control, checked without ever printing a value (the session
 * prints only the secrets' kinds, "tbsecret-claude", never the random part). */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tb_test.h"
#include "base/util.h"


enum {
        S_CLAUDE,
        S_OPENCODE,
        S_GEMINI_KEY,
        S_CODEX,
        S_MUSE,
        S_AGY,
        S_GROK,
        S_GEMINI_LOGIN,
        N_SECRETS
};
static const char *const kinds[N_SECRETS] = { "claude", "opencode", "geminikey", "codex",
                                              "muse",   "agy",      "grok",      "geminilogin" };

/* A host with every Harness's login in place, all under one test folder. */
struct world {
        struct fixture f;
        char *home, *config, *codex_home, *state, *creds;
        char *secret[N_SECRETS];
        char *env[8];
};



/* "tbsecret-KIND-" and 32 random hex digits. */
static char *new_secret(const char *kind)
{
        unsigned char r[16];
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(read(fd, r, sizeof r), (ssize_t)sizeof r);
        close(fd);
        char hex[33];
        for (size_t i = 0; i < sizeof r; i++)
                snprintf(hex + 2 * i, 3, "%02x", r[i]);
        return xasprintf("tbsecret-%s-%s", kind, hex);
}

static void world_new(struct world *w)
{
        memset(w, 0, sizeof *w);
        fixture_new(&w->f);
        for (int i = 0; i < N_SECRETS; i++)
                w->secret[i] = fixture_keep(&w->f, new_secret(kinds[i]));
        w->home = fixture_keep(&w->f, path_in(w->f.dir, "host-home"));
        w->config = fixture_keep(&w->f, path_in(w->f.dir, "host-config"));
        w->codex_home = fixture_keep(&w->f, path_in(w->f.dir, "host-codex"));
        w->state = fixture_keep(&w->f, path_in(w->f.dir, "host-state"));
        w->creds = fixture_keep(&w->f, path_in(w->config, "trialbox/credentials.json"));

        _cleanup_free_ char *creds = xasprintf(
                "{\"claude\": {\"setup_token\": \"%s\"},\n \"opencode\": {\"api_key\": \"%s\", \"provider\": \"anthropic\"},\n"
                " \"gemini\": {\"api_key\": \"%s\"}}\n",
                w->secret[S_CLAUDE], w->secret[S_OPENCODE], w->secret[S_GEMINI_KEY]);
        write_in(w->config, "trialbox/credentials.json", creds, 0600);
        _cleanup_free_ char *codex = xasprintf(
                "{\"OPENAI_API_KEY\": null, \"tokens\": {\"access_token\": \"%s\", \"refresh_token\": \"%s\"}}\n",
                w->secret[S_CODEX], w->secret[S_CODEX]);
        write_in(w->codex_home, "auth.json", codex, 0600);
        _cleanup_free_ char *muse = xasprintf("{\"token\": \"%s\"}\n", w->secret[S_MUSE]);
        write_in(w->config, "muse/auth.json", muse, 0600);
        write_in(w->config, "muse/auth.json.lock", "", 0600);
        write_in(w->home, ".gemini/antigravity-cli/antigravity-oauth-token", w->secret[S_AGY], 0600);
        _cleanup_free_ char *gemini = xasprintf("{\"access_token\": \"%s\"}\n", w->secret[S_GEMINI_LOGIN]);
        write_in(w->home, ".gemini/oauth_creds.json", gemini, 0600);
        _cleanup_free_ char *grok = xasprintf("{\"token\": \"%s\"}\n", w->secret[S_GROK]);
        write_in(w->state, "trialbox/trials/grok/auth.json", grok, 0600);

        size_t n = 0;
        w->env[n++] = fixture_keep(&w->f, xasprintf("HOME=%s", w->home));
        w->env[n++] = fixture_keep(&w->f, xasprintf("XDG_CONFIG_HOME=%s", w->config));
        w->env[n++] = fixture_keep(&w->f, xasprintf("CODEX_HOME=%s", w->codex_home));
        w->env[n++] = fixture_keep(&w->f, xasprintf("XDG_STATE_HOME=%s", w->state));
        w->env[n] = NULL;
}

/* Its folder and everything it made (the fixture keeps them all). */
static void world_free(struct world *w) { fixture_free(&w->f); }

/* The first secret in `len` bytes of `buf`, or NULL. */
static const char *secret_in(const struct world *w, const char *buf, size_t len)
{
        for (int i = 0; buf && i < N_SECRETS; i++)
                if (memmem(buf, len, w->secret[i], strlen(w->secret[i])))
                        return w->secret[i];
        return NULL;
}

#define assert_no_secret(w, text, where)                                                                   \
        do {                                                                                               \
                const char *t_ = (text);                                                                   \
                const char *s_ = secret_in((w), t_, t_ ? strlen(t_) : 0);                                  \
                ck_assert_msg(s_ == NULL, "a secret (%s) is in %s:\n%s", s_, (where), t_);                 \
        } while (0)

/* Every file under `dir` (links not followed): the first one holding a
 * secret, malloc'd, or NULL. Counts the files read in *files. */
static char *file_with_secret(const struct world *w, const char *dir, size_t *files)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        char *found = NULL;
        while (!found && d && (e = readdir(d))) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                _cleanup_free_ char *p = path_in(dir, e->d_name);
                struct stat st;
                if (lstat(p, &st) < 0)
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        found = file_with_secret(w, p, files);
                } else if (S_ISREG(st.st_mode)) {
                        size_t len;
                        _cleanup_free_ char *buf = read_all(p, &len, false);
                        (*files)++;
                        if (buf && secret_in(w, buf, len))
                                found = xstrdup(p);
                } else if (S_ISLNK(st.st_mode)) {
                        char target[4096];
                        ssize_t k = readlink(p, target, sizeof target);
                        (*files)++;
                        if (k > 0 && secret_in(w, target, (size_t)k))
                                found = xstrdup(p);
                }
        }
        if (d)
                closedir(d);
        return found;
}

static void assert_output_folder_clean(const struct world *w, const char *out)
{
        size_t files = 0;
        _cleanup_free_ char *found = file_with_secret(w, out, &files);
        ck_assert_msg(found == NULL, "a secret is left in '%s'", found);
        ck_assert_msg(files >= 1, "positive control: no file at all in the output folder '%s'", out);
}

/* One look at every process on the host: a command line holding a secret
 * makes the test fail at once. Says whether a process holding `marker`
 * (the running Trial) was seen. */
static bool scan_cmdlines(const struct world *w, const char *marker_text)
{
        DIR *d = opendir("/proc");
        struct dirent *e;
        bool trial_seen = false;
        while (d && (e = readdir(d))) {
                if (e->d_name[0] < '0' || e->d_name[0] > '9')
                        continue;
                char p[300];
                size_t len;
                snprintf(p, sizeof p, "/proc/%s/cmdline", e->d_name);
                _cleanup_free_ char *cmd = read_all(p, &len, false);
                if (!cmd)
                        continue;
                const char *s = secret_in(w, cmd, len);
                if (s) {
                        for (size_t i = 0; i < len; i++)
                                cmd[i] = cmd[i] ? cmd[i] : ' ';
                        cmd[len ? len - 1 : 0] = '\0';
                        ck_abort_msg("process %s has a secret (%s) on its command line: %s", e->d_name, s, cmd);
                }
                trial_seen = trial_seen || memmem(cmd, len, marker_text, strlen(marker_text));
        }
        if (d)
                closedir(d);
        return trial_seen;
}

/* What a session finds of the secrets, printed by kind only ("tbsecret-
 * codex"), never the random part: "env NAME=tbsecret-KIND" for its
 * variables, "file PATH:tbsecret-KIND" for the files it can reach. */
#define SESSION_REPORT                                                                                     \
        "p='tbsec''ret-'; env | grep -o \"^[A-Za-z_][A-Za-z0-9_]*=$p[a-z]*\" | sed 's/^/env /' | sort; "  \
        "grep -ro \"$p[a-z]*\" \"$HOME\" /tmp \"$PWD\" /sandbox ${GROK_HOME:+\"$GROK_HOME\"} 2>/dev/null | sort -u | " \
        "sed 's/^/file /'; "


static size_t count_prefixed(const char *out, const char *prefix)
{
        size_t n = 0;
        for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                n += strncmp(p, prefix, strlen(prefix)) == 0;
        return n;
}

/* What each Harness's session must find of its own login (and nothing else). */
struct expect {
        const char *harness;
        const char *env[3];   /* "NAME=tbsecret-KIND" */
        const char *files[3]; /* "file RELPATH:tbsecret-KIND", RELPATH under the session's home or GROK_HOME */
        bool redacted;        /* a secret in the environment: --dry-run and -vv show <redacted> */
};

static const struct expect expectations[] = {
        { "shell", { NULL }, { NULL }, false },
        { "codex", { NULL }, { "H/.codex/auth.json:tbsecret-codex" }, false },
        { "claude", { "CLAUDE_CODE_OAUTH_TOKEN=tbsecret-claude" }, { NULL }, true },
        { "muse", { NULL }, { "H/.config/muse/auth.json:tbsecret-muse" }, false },
        { "agy", { NULL }, { "H/.gemini/antigravity-cli/antigravity-oauth-token:tbsecret-agy" }, false },
        { "grok", { NULL }, { "G/auth.json:tbsecret-grok" }, false },
        { "opencode", { "ANTHROPIC_API_KEY=tbsecret-opencode" }, { NULL }, true },
        { "gemini", { "GEMINI_API_KEY=tbsecret-geminikey" }, { "H/.gemini/oauth_creds.json:tbsecret-geminilogin" }, true },
};

/* The session's report, with H and G spelt out. */
static char *expected_file_line(const struct world *w, const char *spec)
{
        _cleanup_free_ char *grok = path_in(w->state, "trialbox/trials/grok");
        if (spec[0] == 'H')
                return xasprintf("file %s/home%s", w->f.out, spec + 1);
        return xasprintf("file %s%s", grok, spec + 1);
}

/* A loop test over the table: run _i is the Trial of expectations[_i].harness. */
START_TEST(secrets_never_leak_from_any_harness_trial)
{
        const struct expect *x = &expectations[_i];
        const char *harness = x->harness;
        struct world w;
        world_new(&w);
        _cleanup_free_ char *m = marker("probe");
        _cleanup_free_ char *script =
                xasprintf(": %s; " SESSION_REPORT "touch STARTED; sleep 0.5", m);

        /* 1. The Trial, at its most verbose; the host's command lines scanned while it runs. */
        fixture_next_out(&w.f);
        char *argv[64];
        tb_argv(argv, 64, harness, &w.f, EXTRA("-vv", "--json", "--harness-bin", "/bin/sh", "--", "-c", script));
        _cleanup_free_ char *outp = path_in(w.f.dir, "stdout"), *errp = path_in(w.f.dir, "stderr");
        _cleanup_free_ char *started = path_in(w.f.repo, "STARTED");
        pid_t tb = spawn_argv(tb_env(w.env), argv, outp, errp);
        size_t scans = 0, scans_during = 0;
        int status = -1, wst;
        long long deadline = now_ms() + 30000;
        while (now_ms() < deadline) {
                bool seen = scan_cmdlines(&w, m);
                scans++;
                scans_during += seen && access(started, F_OK) == 0;
                if (scans_during == 1) {
                        /* trialbox's own environment holds none either. */
                        _cleanup_free_ char *envp = xasprintf("/proc/%d/environ", (int)tb);
                        size_t len;
                        _cleanup_free_ char *env = read_all(envp, &len, false);
                        ck_assert_msg(env && !secret_in(&w, env, len), "trialbox's environment holds a secret");
                }
                if (waitpid(tb, &wst, WNOHANG) == tb) {
                        status = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst);
                        break;
                }
                usleep(5000);
        }
        if (status < 0) {
                kill(tb, SIGKILL);
                wait_status(tb);
        }
        _cleanup_free_ char *out = read_text(outp), *err = read_text(errp);
        ck_assert_msg(status == 0, "the %s Trial ended with status %d: %s", harness, status, err);
        ck_assert_msg(scans_during >= 3, "only %zu scans of %zu saw the %s session running", scans_during, scans,
                      harness);
        assert_outcome(&w.f, "outcome", "completed");

        /* The session got its own login, and only it (found by kind, printed by kind). */
        for (size_t i = 0; i < 3 && x->env[i]; i++) {
                _cleanup_free_ char *l = xasprintf("env %s", x->env[i]);
                ck_assert_msg(has_line(out, l), "the %s session lacks '%s':\n%s", harness, x->env[i], out);
        }
        for (size_t i = 0; i < 3 && x->files[i]; i++) {
                _cleanup_free_ char *l = expected_file_line(&w, x->files[i]);
                ck_assert_msg(has_line(out, l), "the %s session lacks '%s':\n%s", harness, l, out);
        }
        size_t n_env = 0, n_files = 0;
        for (; n_env < 3 && x->env[n_env]; n_env++)
                ;
        for (; n_files < 3 && x->files[n_files]; n_files++)
                ;
        ck_assert_msg(count_prefixed(out, "env ") == n_env && count_prefixed(out, "file ") == n_files,
                      "the %s session holds secrets not its own:\n%s", harness, out);

        /* Nothing printed, written or left holds a secret. */
        ck_assert_msg(strstr(err, "running: ") != NULL, "positive control: -vv did not show the command:\n%s", err);
        if (x->redacted)
                ck_assert_msg(strstr(err, "=<redacted>") != NULL, "positive control: -vv shows no redacted value:\n%s",
                              err);
        assert_no_secret(&w, out, "the Trial's stdout");
        assert_no_secret(&w, err, "the Trial's stderr (-vv)");
        _cleanup_free_ char *outcome_path = path_in(w.f.out, "outcome.json");
        _cleanup_free_ char *outcome = read_text(outcome_path);
        ck_assert_ptr_nonnull(outcome);
        assert_no_secret(&w, outcome, "outcome.json");
        assert_output_folder_clean(&w, w.f.out);

        /* 2. --dry-run, verbose: the line it prints, with a secret variable redacted. */
        fixture_next_out(&w.f);
        struct proc_result r;
        tb_run(&r, harness, &w.f, w.env, EXTRA("--dry-run", "-vv", "--harness-bin", "/bin/sh", "--", "-c", script));
        ck_assert_msg(r.status == 0, "--dry-run of %s: status %d: %s", harness, r.status, r.err);
        ck_assert(str_has_prefix(r.out, "env -i "));
        if (x->redacted)
                ck_assert_msg(strstr(r.out, "=<redacted>") != NULL, "positive control: no redacted value in:\n%s", r.out);
        assert_no_secret(&w, r.out, "--dry-run's stdout");
        assert_no_secret(&w, r.err, "--dry-run's stderr");
        ck_assert_int_ne(access(w.f.out, F_OK), 0);
        proc_result_free(&r);

        /* 3. Unsandboxed, verbose: the same holds. */
        fixture_next_out(&w.f);
        tb_run(&r, harness, &w.f, w.env, EXTRA("--no-sandbox", "-vv", "--json", "--harness-bin", "/bin/sh", "--", "-c", "true"));
        ck_assert_msg(r.status == 0, "unsandboxed %s: status %d: %s", harness, r.status, r.err);
        assert_no_secret(&w, r.out, "the unsandboxed Trial's stdout");
        assert_no_secret(&w, r.err, "the unsandboxed Trial's stderr (-vv)");
        assert_output_folder_clean(&w, w.f.out);
        proc_result_free(&r);

        /* The host logins are intact. */
        _cleanup_free_ char *codex = path_in(w.codex_home, "auth.json");
        _cleanup_free_ char *codex_now = read_text(codex);
        assert_contains(codex_now, w.secret[S_CODEX]);
        world_free(&w);
}
END_TEST

static const char *const all_harnesses[] = { "shell", "codex", "claude", "muse", "agy", "grok", "opencode", "gemini" };

START_TEST(a_void_trial_prints_and_leaves_no_secret)
{
        struct world w;
        world_new(&w);
        /* bwrap cannot set up the sandbox: the logins were prepared (copies
         * made, variables set) and must be gone without a trace. */
        char *env[12];
        size_t n = 0;
        for (; w.env[n]; n++)
                env[n] = w.env[n];
        env[n++] = "TRIALBOX_BWRAP=" FAKE("bwrap-refuses");
        env[n] = NULL;
        for (size_t i = 0; i < TB_ARRAY_SIZE(all_harnesses); i++) {
                struct proc_result r;
                fixture_next_out(&w.f);
                tb_run(&r, all_harnesses[i], &w.f, env,
                       EXTRA("-vv", "--json", "--harness-bin", "/bin/sh", "--", "-c", "echo ran"));
                ck_assert_msg(r.status == 125, "%s: status %d: %s", all_harnesses[i], r.status, r.err);
                assert_outcome(&w.f, "cause", "sandbox_unavailable");
                assert_no_secret(&w, r.out, "a void Trial's stdout");
                assert_no_secret(&w, r.err, "a void Trial's stderr (-vv)");
                assert_output_folder_clean(&w, w.f.out);
                proc_result_free(&r);
        }
        /* And voided by its plugin: Claude without its token, the Credentials
         * holding the others' secrets. */
        _cleanup_free_ char *creds = path_in(w.f.dir, "others.json");
        _cleanup_free_ char *json = xasprintf("{\"opencode\": {\"api_key\": \"%s\"}, \"gemini\": {\"api_key\": \"%s\"}}",
                                              w.secret[S_OPENCODE], w.secret[S_GEMINI_KEY]);
        write_text(creds, json, 0600);
        struct proc_result r;
        fixture_next_out(&w.f);
        tb_run(&r, "claude", &w.f, w.env, EXTRA("-vv", "--json", "--credentials", creds, "--harness-bin", "/bin/sh"));
        assert_void(&w.f, &r, "session_unavailable", NULL);
        assert_no_secret(&w, r.out, "a void Trial's stdout");
        assert_no_secret(&w, r.err, "a void Trial's stderr (-vv)");
        assert_output_folder_clean(&w, w.f.out);
        proc_result_free(&r);
        world_free(&w);
}
END_TEST

START_TEST(a_trial_ended_by_a_signal_leaves_no_secret)
{
        struct world w;
        world_new(&w);
        /* The Harnesses with a synced private copy in the fresh home. */
        const char *synced[] = { "codex", "muse", "agy", "gemini" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(synced); i++) {
                fixture_next_out(&w.f);
                char *argv[64];
                tb_argv(argv, 64, synced[i], &w.f,
                        EXTRA("-vv", "--harness-bin", "/bin/sh", "--", "-c", "touch STARTED; exec sleep 30"));
                _cleanup_free_ char *outp = xasprintf("%s.stdout", w.f.out), *errp = xasprintf("%s.stderr", w.f.out);
                _cleanup_free_ char *started = path_in(w.f.repo, "STARTED");
                unlink(started);
                pid_t tb = spawn_argv(tb_env(w.env), argv, outp, errp);
                ck_assert_msg(wait_for_file(started, 20000), "the %s session never started", synced[i]);
                /* Positive control: the private copy is there while it runs. */
                size_t files = 0;
                _cleanup_free_ char *during = file_with_secret(&w, w.f.out, &files);
                ck_assert_msg(during != NULL, "positive control: no copy of the %s login in the running Trial", synced[i]);
                ck_assert_int_eq(kill(tb, SIGTERM), 0);
                ck_assert_int_eq(wait_status(tb), 128 + SIGTERM);
                _cleanup_free_ char *out = read_text(outp), *err = read_text(errp);
                assert_no_secret(&w, out, "the signalled Trial's stdout");
                assert_no_secret(&w, err, "the signalled Trial's stderr");
                assert_output_folder_clean(&w, w.f.out);
        }
        world_free(&w);
}
END_TEST

START_TEST(a_login_the_session_refreshes_is_never_printed_nor_left_behind)
{
        struct world w;
        world_new(&w);
        /* The session makes up a new token itself (so it is on no command
         * line) and saves it as Codex does (rename) and as agy would (in place). */
        struct {
                const char *harness, *save;
                int slot; /* the secret it replaces */
        } cases[] = {
                { "codex", "printf '{\"tokens\": {\"access_token\": \"%s\"}}' \"$t\" > \"$CODEX_HOME/.auth-x\" && "
                           "mv -f \"$CODEX_HOME/.auth-x\" \"$CODEX_HOME/auth.json\"",
                  S_CODEX },
                { "agy", "printf %s \"$t\" > \"$HOME/.gemini/antigravity-cli/antigravity-oauth-token\"", S_AGY },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                _cleanup_free_ char *script = xasprintf(
                        "t=\"tbsecret-refreshed$(od -An -tx1 -N16 /dev/urandom | tr -d ' \\n')\"; %s; sleep 0.2", cases[i].save);
                struct proc_result r;
                fixture_next_out(&w.f);
                tb_run(&r, cases[i].harness, &w.f, w.env,
                       EXTRA("-vv", "--json", "--harness-bin", "/bin/sh", "--", "-c", script));
                ck_assert_msg(r.status == 0, "%s: status %d: %s", cases[i].harness, r.status, r.err);
                /* The host's login now holds the refreshed token: learn it. */
                _cleanup_free_ char *host = cases[i].slot == S_CODEX
                                                    ? path_in(w.codex_home, "auth.json")
                                                    : path_in(w.home, ".gemini/antigravity-cli/antigravity-oauth-token");
                _cleanup_free_ char *now = read_text(host);
                char *t = now ? strstr(now, "tbsecret-refreshed") : NULL;
                ck_assert_msg(t != NULL, "positive control: the refreshed %s login did not reach the host: %s",
                              cases[i].harness, now);
                t[strspn(t, "tbsecret-refreshed0123456789abcdef")] = '\0';
                ck_assert_uint_eq(strlen(t), strlen("tbsecret-refreshed") + 32);
                ck_assert_msg(strstr(r.out, t) == NULL, "the refreshed %s login is in stdout", cases[i].harness);
                ck_assert_msg(strstr(r.err, t) == NULL, "the refreshed %s login is in stderr (-vv):\n%s",
                              cases[i].harness, r.err);
                /* Nor left in the output folder. */
                w.secret[cases[i].slot] = fixture_keep(&w.f, xstrdup(t));
                assert_output_folder_clean(&w, w.f.out);
                proc_result_free(&r);
        }
        world_free(&w);
}
END_TEST

START_TEST(check_harnesses_and_credentials_list_print_no_secret)
{
        struct world w;
        world_new(&w);
        const char *const cmds[][6] = {
                { TRIALBOX_BIN, "check", NULL },
                { TRIALBOX_BIN, "check", "--json", NULL },
                { TRIALBOX_BIN, "harnesses", "-v", NULL },
                { TRIALBOX_BIN, "harnesses", "--json", NULL },
                { TRIALBOX_BIN, "credentials", "list", NULL },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cmds); i++) {
                struct proc_result r;
                run_argv(&r, tb_env(w.env), (char *const *)cmds[i]);
                assert_no_secret(&w, r.out, cmds[i][1]);
                assert_no_secret(&w, r.err, cmds[i][1]);
                /* Positive control: each knows the keys are there. */
                if (strcmp(cmds[i][1], "check") != 0)
                        ck_assert_msg(strstr(r.out, "setup_token") != NULL, "'%s %s' does not name the token:\n%s",
                                      cmds[i][1], cmds[i][2] ? cmds[i][2] : "", r.out);
                proc_result_free(&r);
        }
        /* A Credentials file readable by others: warned about, not printed. */
        ck_assert_int_eq(chmod(w.creds, 0644), 0);
        struct proc_result r;
        fixture_next_out(&w.f);
        tb_run(&r, "claude", &w.f, w.env, EXTRA("-vv", "--harness-bin", "/bin/true"));
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_msg(strstr(r.err, "chmod 600") != NULL, "positive control: no warning:\n%s", r.err);
        assert_no_secret(&w, r.err, "the warning about a loose Credentials file");
        proc_result_free(&r);
        world_free(&w);
}
END_TEST

/* `text` with each "SECRET" replaced by `secret`. malloc'd. */
static char *with_secret(const char *text, const char *secret)
{
        struct strbuf sb = { 0 };
        const char *p = text, *at;
        while ((at = strstr(p, "SECRET"))) {
                _cleanup_free_ char *head = strndup(p, (size_t)(at - p));
                strbuf_add(&sb, head);
                strbuf_add(&sb, secret);
                p = at + strlen("SECRET");
        }
        strbuf_add(&sb, p);
        return sb.s;
}

START_TEST(a_malformed_credentials_file_is_reported_without_its_secrets)
{
        struct world w;
        world_new(&w);
        static const char *const bad[] = {
                "{\"claude\": {\"setup_token\": \"SECRET}}",
                "{\"claude\": {\"setup_token\": [\"SECRET\"]}}",
                "{\"claude\": {\"setup_token\": \"SECRET\", }}",
                "{\"claude\": {\"setup_token\": \"SECRET\" \"x\": 1}}",
                "{\"claude\": \"SECRET\"}",
                "{\"claude\": {\"setup_token\": SECRET}}",
                "{\"claude\": {\"setup_token\": \"SECRET\"}} SECRET",
                "\"SECRET\"",
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++) {
                _cleanup_free_ char *text = with_secret(bad[i], w.secret[S_CLAUDE]);
                write_text(w.creds, text, 0600);
                struct proc_result r;
                fixture_next_out(&w.f);
                tb_run(&r, "claude", &w.f, w.env, EXTRA("-vv", "--json", "--harness-bin", "/bin/true"));
                ck_assert_msg(r.status == 125, "case %zu: status %d: %s", i, r.status, r.err);
                /* Positive control: the error is the file's. */
                ck_assert_msg(strstr(r.err, w.creds) != NULL, "case %zu: the error does not name the file: %s", i, r.err);
                assert_no_secret(&w, r.out, "stdout, with a malformed Credentials file");
                assert_no_secret(&w, r.err, "stderr (-vv), with a malformed Credentials file");
                assert_output_folder_clean(&w, w.f.out);
                proc_result_free(&r);
                const char *const cmds[][5] = {
                        { TRIALBOX_BIN, "credentials", "list", NULL },
                        { TRIALBOX_BIN, "check", "--harness", "claude", NULL },
                        { TRIALBOX_BIN, "harnesses", "--json", NULL },
                };
                for (size_t k = 0; k < TB_ARRAY_SIZE(cmds); k++) {
                        run_argv(&r, tb_env(w.env), (char *const *)cmds[k]);
                        assert_no_secret(&w, r.out, cmds[k][1]);
                        assert_no_secret(&w, r.err, cmds[k][1]);
                        proc_result_free(&r);
                }
        }
        world_free(&w);
}
END_TEST

START_TEST(credentials_set_takes_the_secret_from_stdin_and_prints_it_nowhere)
{
        struct world w;
        world_new(&w);
        _cleanup_free_ char *value = new_secret("claude");
        _cleanup_free_ char *value_file = path_in(w.f.dir, "value");
        write_text(value_file, value, 0600);
        /* The new value is a secret too: none may show it. */
        w.secret[S_CLAUDE] = value;
        _cleanup_free_ char *cmd = xasprintf("exec '%s' credentials set claude.setup_token < '%s'", TRIALBOX_BIN, value_file);
        struct proc_result r;
        run_argv(&r, tb_env(w.env), (char *[]){ "/bin/sh", "-c", cmd, NULL });
        ck_assert_msg(r.status == 0, "credentials set: %d: %s", r.status, r.err);
        assert_no_secret(&w, r.out, "credentials set's stdout");
        assert_no_secret(&w, r.err, "credentials set's stderr");
        proc_result_free(&r);
        /* Positive control: it is stored, in a file only we may read. */
        _cleanup_free_ char *stored = read_text(w.creds);
        assert_contains(stored, value);
        struct stat st;
        ck_assert_int_eq(stat(w.creds, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0600);
        run_argv(&r, tb_env(w.env), (char *[]){ TRIALBOX_BIN, "credentials", "list", NULL });
        ck_assert_int_eq(r.status, 0);
        assert_contains(r.out, "claude.setup_token");
        assert_no_secret(&w, r.out, "credentials list");
        proc_result_free(&r);
        world_free(&w);
}
END_TEST

/* The well-known secret places, each as a file holding a secret (under
 * HOME). Whatever the PATH and the toolchains bind, a session reads none. */
static const char *const secret_places[] = {
        ".ssh/id_ed25519",
        ".gnupg/private-keys-v1.d/key.key",
        ".aws/credentials",
        ".azure/msal_token_cache.json",
        ".config/gcloud/credentials.db",
        ".kube/config",
        ".docker/config.json",
        ".netrc",
        ".git-credentials",
        ".npmrc",
        ".pypirc",
        ".cargo/credentials",
        ".cargo/credentials.toml",
        ".cargo/config.toml",
        ".codex/auth.json",
        ".claude/.credentials.json",
        ".claude.json",
        ".config/muse/auth.json",
        ".gemini/oauth_creds.json",
        ".config/opencode/opencode.json",
        ".local/share/opencode/auth.json",
        ".local/share/keyrings/login.keyring",
        ".grok/auth.json",
        ".local/state/trialbox/trials/grok/auth.json",
        ".config/trialbox/credentials.json",
};

/* A tool the session must still run: in ~/bin, ~/.local/bin and the Cargo
 * home, each printing "ran NAME". */
static const char *const home_tools[] = { "bin/tbtool-bin", ".local/bin/tbtool-local", ".cargo/bin/cargo" };

/* The PATHs tried (H the home): the tool folders alone, then with the home
 * and top-level folders holding secret folders and files on the PATH too
 * (a PATH folder in the home is bound tool by tool: nothing else of them
 * shows), then the tool folders with the whole home bound read-only as the
 * skills folder, where the secret places are masked. */
static const struct {
        const char *path;
        bool skills_home; /* --skills H: the home bound whole */
} home_paths[] = {
        { "H/bin:H/.local/bin:H/.cargo/bin:/usr/bin:/bin", false },
        { "H/bin:H/.local/bin:H/.cargo/bin:H:H/.local:H/.config:H/.cargo:H/.docker:/usr/bin:/bin", false },
        { "H/bin:H/.local/bin:H/.cargo/bin:/usr/bin:/bin", true },
};

static char *expand_home(const char *s, const char *home)
{
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        for (const char *p = s; *p; p++) {
                if (*p == 'H')
                        strbuf_add(&sb, home);
                else
                        strbuf_addf(&sb, "%c", *p);
        }
        return sb.s;
}

START_TEST(a_session_runs_the_tools_in_the_home_but_reads_no_secret_place)
{
        /* Only a bind of the whole home shows a plain file beside the places. */
        const bool broad = home_paths[_i].skills_home;
        struct fixture f;
        fixture_new(&f);
        char *secret = new_secret("place");
        char *home = path_in(f.dir, "host-home");
        struct strbuf script = { 0 };
        for (size_t i = 0; i < TB_ARRAY_SIZE(secret_places); i++) {
                /* A Cargo config counts as secret for its registry token. */
                _cleanup_free_ char *text = xasprintf("[registry]\ntoken = \"%s\"\n", secret);
                write_in(home, secret_places[i], text, 0600);
        }
        for (size_t i = 0; i < TB_ARRAY_SIZE(home_tools); i++) {
                const char *name = strrchr(home_tools[i], '/') + 1;
                _cleanup_free_ char *text = xasprintf("#!/bin/sh\necho ran %s\n", name);
                _cleanup_free_ char *p = path_in(home, home_tools[i]);
                write_in(home, home_tools[i], text, 0600);
                ck_assert_int_eq(chmod(p, 0755), 0);
                strbuf_addf(&script, "%s; ", name);
        }
        /* Positive control: a plain file beside the places, in a folder the PATH binds. */
        write_in(home, ".local/share/notes.txt", "tbvisible-notes\n", 0600);
        ck_assert_int_eq(chmod(home, 0755), 0);
        /* Each place, then the whole home: a secret read prints "visible PATH". */
        strbuf_addf(&script, "cat '%s/.local/share/notes.txt'; for p in", home);
        for (size_t i = 0; i < TB_ARRAY_SIZE(secret_places); i++)
                strbuf_addf(&script, " '%s/%s'", home, secret_places[i]);
        strbuf_addf(&script, "; do grep -qs tbsecret- \"$p\" && echo \"visible $p\"; done; "
                             "grep -rls tbsecret- '%s' | sed 's/^/visible /'; true", home);

        /* The home itself, ~/.local (a top-level folder) and the tool folders
         * on the PATH; the tools named as toolchains. */
        _cleanup_free_ char *dirs = expand_home(home_paths[_i].path, home);
        _cleanup_free_ char *path = xasprintf("PATH=%s", dirs);
        _cleanup_free_ char *home_env = xasprintf("HOME=%s", home);
        char *env[] = { home_env, path, "TRIALBOX_TOOLCHAINS=tbtool-bin tbtool-local", "CARGO_HOME", "RUSTUP_HOME",
                        "PYENV_ROOT", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", NULL };
        struct proc_result r;
        if (broad)
                tb_run(&r, "shell", &f, env, EXTRA("--skills", home, "--harness-bin", "/bin/sh", "--", "-c", script.s));
        else
                tb_run(&r, "shell", &f, env, EXTRA("--harness-bin", "/bin/sh", "--", "-c", script.s));
        ck_assert_msg(r.status == 0, "the Trial ended with status %d: %s", r.status, r.err);
        for (size_t i = 0; i < TB_ARRAY_SIZE(home_tools); i++) {
                _cleanup_free_ char *l = xasprintf("ran %s", strrchr(home_tools[i], '/') + 1);
                ck_assert_msg(has_line(r.out, l), "the session could not run '%s':\n%s%s", home_tools[i], r.out, r.err);
        }
        ck_assert_msg(count_prefixed(r.out, "visible ") == 0, "with PATH %s, the session reads secret places:\n%s", dirs,
                      r.out);
        ck_assert_msg(has_line(r.out, "tbvisible-notes") == broad, "positive control: the home is%s bound with PATH %s%s:\n%s",
                      broad ? " not" : "", dirs, broad ? " and --skills" : "", r.out);
        assert_outcome(&f, "outcome", "completed");
        proc_result_free(&r);
        free(script.s);
        free(home);
        free(secret);
        fixture_free(&f);
}
END_TEST

TB_SUITE("secrets", 60)
{
        tcase_add_loop_test(tc, secrets_never_leak_from_any_harness_trial, 0, (int)TB_ARRAY_SIZE(expectations));
        tcase_add_test(tc, a_void_trial_prints_and_leaves_no_secret);
        tcase_add_test(tc, a_trial_ended_by_a_signal_leaves_no_secret);
        tcase_add_test(tc, a_login_the_session_refreshes_is_never_printed_nor_left_behind);
        tcase_add_test(tc, check_harnesses_and_credentials_list_print_no_secret);
        tcase_add_test(tc, a_malformed_credentials_file_is_reported_without_its_secrets);
        tcase_add_test(tc, credentials_set_takes_the_secret_from_stdin_and_prints_it_nowhere);
        tcase_add_loop_test(tc, a_session_runs_the_tools_in_the_home_but_reads_no_secret_place, 0,
                            (int)TB_ARRAY_SIZE(home_paths));
}
