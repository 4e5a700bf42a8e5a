/* A real Harness CLI reaching a model server on the host's loopback under
 * `--network allow`, the way users point their agent at a local inference
 * server or gateway: `--allow-host 127.0.0.1:PORT`, plain HTTP, through the
 * proxy variables trialbox sets. Built once per CLI (MODEL_CLI: "codex" or
 * "claude"); exits 77 when that CLI is not installed, and only then.
 *
 * The stand-in server is tests/fakes/model-server.py (stdlib Python, loopback
 * only); every endpoint the Harness's plugin declares is sent to a closed
 * loopback port through the test build's name map, so nothing leaves this
 * host even if the CLI tries. The CLIs do not fail fast when a server is
 * unreachable (they retry for minutes): every run has --timeout. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tb_test.h"

#define REPLY "Hello from the stand-in model."

/* What every run checks: the session completed with the stand-in's reply,
 * its model call went through the proxy to the host's loopback port (in
 * network.jsonl and the Outcome), and the server saw it. */
static void assert_reached(const struct proc_result *r, const struct fixture *f, const struct model_server *m,
                           const char *api)
{
        ck_assert_msg(r->status == 0, "the %s Trial ended with status %d:\n%s\n%s", MODEL_CLI, r->status, r->out, r->err);
        ck_assert_msg(strstr(r->out, REPLY), "no '%s' in what %s printed:\n%s\n%s", REPLY, MODEL_CLI, r->out, r->err);
        assert_outcome(f, "outcome", "completed");
        _cleanup_free_ char *net = path_in(f->out, "network.jsonl");
        _cleanup_free_ char *rec = read_text(net);
        ck_assert_ptr_nonnull(rec);
        _cleanup_free_ char *want = xasprintf("\"host\":\"127.0.0.1\",\"port\":%d,\"method\":\"POST\",\"decision\":\"allowed\"",
                                              m->port);
        ck_assert_msg(strstr(rec, want), "no '%s' in network.jsonl:\n%s", want, rec);
        _cleanup_free_ char *seen = read_text(m->record);
        _cleanup_free_ char *call = xasprintf("\"api\": \"%s\"", api);
        ck_assert_msg(seen && strstr(seen, call), "the stand-in server saw no %s call:\n%s", api, seen ? seen : "");
}

/* The real CLI asked to say hi to the stand-in under --network allow, the
 * stand-in's port named. Codex's plugin gives the session a CODEX_HOME in
 * the fresh home, with the plugin's own config.toml (the host's config does
 * not reach a Trial); the provider comes as `-c` session arguments, passed
 * unchanged. Claude Code's plugin hands over the setup token from the
 * Credentials (CLAUDE_CODE_OAUTH_TOKEN); ANTHROPIC_BASE_URL reaches the
 * session through TRIALBOX_ENV_ALLOW, as a user's would. */
static void run_cli(struct fixture *f, const struct model_server *m, struct proc_result *r)
{
        struct standin s;
        standin_new(&s, MODEL_CLI, f, m);
        if (strcmp(MODEL_CLI, "codex") == 0)
                tb_run(r, "codex", f, s.env,
                       EXTRA("--network", "allow", "--allow-host", s.allow, "--timeout", "90s", "--",
                             STANDIN_CODEX_ARGS(&s), "say hi"));
        else
                tb_run(r, "claude", f, s.env,
                       EXTRA("--network", "allow", "--allow-host", s.allow, "--timeout", "90s", "--", "-p", "say hi"));
        standin_free(&s);
}

/* Does the fresh home hold a file under `rel` (at any depth)? */
static bool home_has_file(const struct fixture *f, const char *rel)
{
        _cleanup_free_ char *cmd = xasprintf("find '%s/home/%s' -type f -name '*.jsonl' | grep -q .", f->out, rel);
        return host_can(cmd);
}

START_TEST(the_real_cli_reaches_a_model_server_on_the_host_loopback_through_the_proxy)
{
        struct model_server m;
        struct fixture f;
        struct proc_result r;
        model_server_start(&m, NULL);
        fixture_new(&f);
        run_cli(&f, &m, &r);
        bool codex = strcmp(MODEL_CLI, "codex") == 0;
        assert_reached(&r, &f, &m, codex ? "responses" : "messages");
        /* The session ran with what its plugin gave it. */
        if (codex) {
                ck_assert_msg(home_has_file(&f, ".codex/sessions"), "no Codex rollout in the fresh home's CODEX_HOME");
                _cleanup_free_ char *cfg = xasprintf("%s/home/.codex/config.toml", f.out);
                _cleanup_free_ char *text = read_text(cfg);
                ck_assert_msg(text && strstr(text, "check_for_update_on_startup = false"), "%s", text ? text : "");
        } else {
                ck_assert_msg(home_has_file(&f, ".claude/projects"), "no Claude Code transcript in the fresh home");
                _cleanup_free_ char *seen = read_text(m.record);
                ck_assert_msg(strstr(seen, "\"Authorization\": \"Bearer tbtest-"),
                              "the setup token did not reach the server:\n%s", seen);
        }
        proc_result_free(&r);
        fixture_free(&f);
        model_server_stop(&m);
}
END_TEST

/* The same without the port named: the host's loopback is out of reach
 * (the session's 127.0.0.1 is its own, and NO_PROXY keeps it direct); the
 * CLI retries until trialbox's timeout ends the session. */
START_TEST(without_the_port_named_the_host_loopback_is_out_of_reach)
{
        struct model_server m;
        struct fixture f;
        struct proc_result r;
        model_server_start(&m, NULL);
        fixture_new(&f);
        _cleanup_free_ char *other = xasprintf("x.test:%d", m.port);
        struct standin s;
        standin_new(&s, MODEL_CLI, &f, &m);
        if (strcmp(MODEL_CLI, "codex") == 0)
                tb_run(&r, "codex", &f, s.env,
                       EXTRA("--allow-host", other, "--timeout", "4s", "--", STANDIN_CODEX_ARGS(&s), "say hi"));
        else
                tb_run(&r, "claude", &f, s.env, EXTRA("--allow-host", other, "--timeout", "4s", "--", "-p", "say hi"));
        standin_free(&s);
        ck_assert_msg(!strstr(r.out, REPLY), "the model was reached:\n%s", r.out);
        ck_assert_msg(r.status == 124, "the %s Trial ended with status %d, not by its timeout:\n%s", MODEL_CLI, r.status,
                      r.err);
        assert_outcome(&f, "cause", "timeout");
        _cleanup_free_ char *seen = read_text(m.record);
        ck_assert_msg(!seen || !strstr(seen, "\"method\": \"POST\""), "the server saw a call:\n%s", seen);
        proc_result_free(&r);
        fixture_free(&f);
        model_server_stop(&m);
}
END_TEST

TB_SUITE_NEEDING(MODEL_CLI, "model_server_" MODEL_CLI, 150)
{
        tcase_add_test(tc, the_real_cli_reaches_a_model_server_on_the_host_loopback_through_the_proxy);
        tcase_add_test(tc, without_the_port_named_the_host_loopback_is_out_of_reach);
}
