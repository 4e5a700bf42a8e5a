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

/* The real CLI in a Trial on `f`, pointed at the stand-in `m` (standin_new),
 * under the default network: one session saying hi, or with `several` a
 * session, its continuation (the same rollout or transcript) and another
 * session, run one after the other by fakes/cli-sessions. */
static void run_cli(struct proc_result *r, struct fixture *f, const struct model_server *m, bool several)
{
        struct standin s;
        standin_new(&s, MODEL_CLI, f, m);
        if (is_codex() && !several)
                tb_run(r, "codex", f, s.env,
                       EXTRA("--allow-host", s.allow, "--timeout", "90s", "--", STANDIN_CODEX_ARGS(&s), "say hi"));
        else if (is_codex())
                tb_run(r, "codex", f, s.env,
                       EXTRA("--allow-host", s.allow, "--timeout", "90s", "--harness-bin", FAKE("cli-sessions"), "--",
                             "codex", STANDIN_CODEX_ARGS(&s), "say hi", ":::", STANDIN_CODEX_ARGS(&s), "resume",
                             "--last", "again", ":::", STANDIN_CODEX_ARGS(&s), "a new session"));
        else if (!several)
                tb_run(r, "claude", f, s.env, EXTRA("--allow-host", s.allow, "--timeout", "90s", "--", "-p", "say hi"));
        else
                tb_run(r, "claude", f, s.env,
                       EXTRA("--allow-host", s.allow, "--timeout", "90s", "--harness-bin", FAKE("cli-sessions"), "--",
                             "claude", "-p", "say hi", ":::", "-p", "-c", "again", ":::", "-p", "a new session"));
        standin_free(&s);
}

/* Run the CLI against a new stand-in (run_cli); it must end well, and the
 * Outcome's tokens be the `requests` responses the server sent. */
static void assert_trial_counts_what_the_server_sent(bool several, long long requests)
{
        struct model_server m;
        struct fixture f;
        struct proc_result r;
        model_server_start(&m, server_config);
        fixture_new(&f);
        run_cli(&r, &f, &m, several);
        ck_assert_msg(r.status == 0, "the %s Trial ended with status %d:\n%s\n%s", MODEL_CLI, r.status, r.out, r.err);
        if (!several)
                ck_assert_msg(strstr(r.out, REPLY), "no '%s' in what %s printed:\n%s\n%s", REPLY, MODEL_CLI, r.out,
                              r.err);
        assert_outcome_tokens_are_the_servers(&f, &m, requests);
        proc_result_free(&r);
        fixture_free(&f);
        model_server_stop(&m);
}

START_TEST(the_outcomes_tokens_are_what_the_model_server_sent)
{
        assert_trial_counts_what_the_server_sent(false, 1);
}
END_TEST

/* Three responses in two sessions, one of them continued: Codex's running
 * total per rollout, summed over rollouts; Claude Code's responses once
 * each, though it writes each (a thinking and a text block) twice. */
START_TEST(sessions_and_their_continuations_in_one_trial_are_summed_response_for_response)
{
        assert_trial_counts_what_the_server_sent(true, 3);
}
END_TEST

TB_SUITE_NEEDING(MODEL_CLI, "tokens_" MODEL_CLI, 200)
{
        tcase_add_test(tc, the_outcomes_tokens_are_what_the_model_server_sent);
        tcase_add_test(tc, sessions_and_their_continuations_in_one_trial_are_summed_response_for_response);
}
