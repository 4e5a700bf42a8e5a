/* What a Trial cost, proved with the real CLI: a real Codex or Claude Code
 * session inside a Trial, against the stand-in model server
 * (tests/fakes/model-server.py, stdlib Python, loopback only) that reports
 * known usage and writes down every response it sent (--record): the
 * Outcome's `tokens` must be exactly the sum of what the server sent.
 * Built once per CLI (MODEL_CLI: "codex" or "claude"); exits 77 when that
 * CLI is not installed, and only then.
 *
 * The network: the default for both (allow: trialbox's proxy), the
 * server's port named exactly with --allow-host 127.0.0.1:PORT, and every
 * endpoint the Harness's plugin declares sent to a closed loopback port
 * through the test build's name map: nothing leaves the host. The CLIs
 * retry for minutes when a server is unreachable: every run has
 * --timeout.
 */
#define _GNU_SOURCE
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_test.h"

#define REPLY "Hello from the stand-in model."

/* Distinct usage per response: the first, then script[i] merged in. */
static const char server_config[] =
        "{\"openai\": {\"input_tokens\": 1234, \"cached_tokens\": 234, \"output_tokens\": 56, \"reasoning_tokens\": 7,"
        "  \"cache_write_tokens\": 11},"
        " \"anthropic\": {\"input_tokens\": 1234, \"cache_read_input_tokens\": 345, \"cache_creation_input_tokens\": 67,"
        "  \"output_tokens\": 89, \"start_output_tokens\": 1, \"thinking\": \"The user says hi; answer briefly.\"},"
        " \"script\": [{},"
        "  {\"openai\": {\"input_tokens\": 2000, \"cached_tokens\": 1500, \"output_tokens\": 30, \"reasoning_tokens\": 0,"
        "   \"cache_write_tokens\": null},"
        "   \"anthropic\": {\"input_tokens\": 3, \"cache_read_input_tokens\": 2100, \"cache_creation_input_tokens\": 150,"
        "   \"output_tokens\": 42}},"
        "  {\"openai\": {\"input_tokens\": 3000, \"cached_tokens\": 2000, \"output_tokens\": 40, \"reasoning_tokens\": 5},"
        "   \"anthropic\": {\"input_tokens\": 7, \"cache_read_input_tokens\": 0, \"cache_creation_input_tokens\": 0,"
        "   \"output_tokens\": 5, \"thinking\": null}}]}";

static bool is_codex(void) { return strcmp(MODEL_CLI, "codex") == 0; }

/* The Outcome's tokens are what the server sent, response for response. */
static void assert_outcome_tokens_are_the_servers(const struct fixture *f, const struct model_server *m,
                                                  long long requests)
{
        _cleanup_free_ char *path = path_in(f->out, "outcome.json");
        _cleanup_free_ char *text = read_text(path);
        json_object *o = json_tokener_parse(text);
        ck_assert_ptr_nonnull(o);
        /* The model was reached through trialbox's proxy, by the default network. */
        ck_assert_str_eq(json_object_get_string(json_get(json_get(o, "network"), "mode")), "allow");
        json_object *t = json_get(o, "tokens");
        ck_assert_msg(t != NULL, "tokens is null in %s", text);
        assert_tokens_are_the_servers(t, m, requests, is_codex() ? "~/.codex/sessions" : "~/.claude/projects");
        printf("%s: tokens %s\n", MODEL_CLI, json_object_to_json_string(t));
        json_object_put(o);
}

/* The environment of every run: the Harness's own endpoints sent nowhere,
 * the CLI's own settings through TRIALBOX_ENV_ALLOW, and `more` (up to 2,
 * NULL-terminated). Static storage. */
static char **run_env(const char *endpoints, const char *home_var, const char *more, const char *more2)
{
        static char *env[8];
        size_t n = 0;
        env[n++] = endpoints_nowhere(endpoints);
        env[n++] = "TRIALBOX_ENV_ALLOW=ANTHROPIC_BASE_URL:CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC";
        env[n++] = (char *)home_var;
        if (more)
                env[n++] = (char *)more;
        if (more2)
                env[n++] = (char *)more2;
        env[n] = NULL;
        return env;
}

/* Codex: the plugin syncs $CODEX_HOME/auth.json into the fresh home (an
 * API-key login: no ChatGPT account, so Codex asks chatgpt.com for nothing);
 * the provider comes as `-c` session arguments, passed unchanged. */
static void run_codex(struct proc_result *r, struct fixture *f, const struct model_server *m, bool several)
{
        _cleanup_free_ char *home = path_in(f->dir, "codex-home");
        write_in(home, "auth.json", "{\"OPENAI_API_KEY\": \"tbtest-key\"}", 0600);
        _cleanup_free_ char *env_home = xasprintf("CODEX_HOME=%s", home);
        _cleanup_free_ char *allow = xasprintf("127.0.0.1:%d", m->port);
        _cleanup_free_ char *provider = xasprintf(
                "model_providers.standin={name=\"Stand-in\",base_url=\"http://127.0.0.1:%d/v1\",wire_api=\"responses\"}",
                m->port);
        char **env = run_env(CODEX_ENDPOINTS, env_home, NULL, NULL);
#define CODEX_ARGS "exec", "--skip-git-repo-check", "-c", "model_provider=standin", "-c", provider, "-c", \
                   "model=stand-in-model", "-c", "features.plugins=false", "-c", "analytics.enabled=false"
        if (!several)
                tb_run(r, "codex", f, env, EXTRA("--allow-host", allow, "--timeout", "90s", "--", CODEX_ARGS, "say hi"));
        else /* a session, its continuation (the same rollout), another session */
                tb_run(r, "codex", f, env,
                       EXTRA("--allow-host", allow, "--timeout", "90s", "--harness-bin", FAKE("cli-sessions"), "--",
                             "codex", CODEX_ARGS, "say hi", ":::", CODEX_ARGS, "resume", "--last", "again", ":::",
                             CODEX_ARGS, "a new session"));
#undef CODEX_ARGS
}

/* Claude Code: its plugin hands over the setup token from the Credentials;
 * ANTHROPIC_BASE_URL reaches the session through TRIALBOX_ENV_ALLOW. */
static void run_claude(struct proc_result *r, struct fixture *f, const struct model_server *m, bool several)
{
        _cleanup_free_ char *cfg = path_in(f->dir, "config");
        write_in(cfg, "trialbox/credentials.json", "{\"claude\": {\"setup_token\": \"tbtest-oauth\"}}", 0600);
        _cleanup_free_ char *env_cfg = xasprintf("XDG_CONFIG_HOME=%s", cfg);
        _cleanup_free_ char *url = xasprintf("ANTHROPIC_BASE_URL=http://127.0.0.1:%d", m->port);
        _cleanup_free_ char *allow = xasprintf("127.0.0.1:%d", m->port);
        char **env = run_env(CLAUDE_ENDPOINTS, env_cfg, url, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1");
        if (!several)
                tb_run(r, "claude", f, env, EXTRA("--allow-host", allow, "--timeout", "90s", "--", "-p", "say hi"));
        else /* a session, its continuation (the same transcript), another session */
                tb_run(r, "claude", f, env,
                       EXTRA("--allow-host", allow, "--timeout", "90s", "--harness-bin", FAKE("cli-sessions"), "--",
                             "claude", "-p", "say hi", ":::", "-p", "-c", "again", ":::", "-p", "a new session"));
}

START_TEST(the_outcomes_tokens_are_what_the_model_server_sent)
{
        struct model_server m;
        struct fixture f;
        struct proc_result r;
        model_server_start(&m, server_config);
        fixture_new(&f);
        if (is_codex())
                run_codex(&r, &f, &m, false);
        else
                run_claude(&r, &f, &m, false);
        ck_assert_msg(r.status == 0, "the %s Trial ended with status %d:\n%s\n%s", MODEL_CLI, r.status, r.out, r.err);
        ck_assert_msg(strstr(r.out, REPLY), "no '%s' in what %s printed:\n%s\n%s", REPLY, MODEL_CLI, r.out, r.err);
        assert_outcome_tokens_are_the_servers(&f, &m, 1);
        proc_result_free(&r);
        fixture_free(&f);
        model_server_stop(&m);
}
END_TEST

/* Three responses in two sessions, one of them continued: Codex's running
 * total per rollout, summed over rollouts; Claude Code's responses once
 * each, though it writes each (a thinking and a text block) twice. */
START_TEST(sessions_and_their_continuations_in_one_trial_are_summed_response_for_response)
{
        struct model_server m;
        struct fixture f;
        struct proc_result r;
        model_server_start(&m, server_config);
        fixture_new(&f);
        if (is_codex())
                run_codex(&r, &f, &m, true);
        else
                run_claude(&r, &f, &m, true);
        ck_assert_msg(r.status == 0, "the %s Trial ended with status %d:\n%s\n%s", MODEL_CLI, r.status, r.out, r.err);
        assert_outcome_tokens_are_the_servers(&f, &m, 3);
        proc_result_free(&r);
        fixture_free(&f);
        model_server_stop(&m);
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("tokens_" MODEL_CLI);
        TCase *tc = tb_tcase(s, MODEL_CLI, 200);
        tcase_add_test(tc, the_outcomes_tokens_are_what_the_model_server_sent);
        tcase_add_test(tc, sessions_and_their_continuations_in_one_trial_are_summed_response_for_response);
        return s;
}

int main(void)
{
        _cleanup_free_ char *cli = find_on_path(MODEL_CLI, getenv("PATH"));
        if (!cli) {
                printf("%s is not installed: skipped\n", MODEL_CLI);
                return 77;
        }
        return run_suite(suite());
}
