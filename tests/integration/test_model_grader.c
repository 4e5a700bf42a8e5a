/* A model grader, proved with the real CLI: `trialbox grade --harness
 * claude` (or codex) on a shell Trial's repository, with a rubric in the
 * grader's files, against the stand-in model server
 * (tests/fakes/model-server.py, stdlib Python, loopback only) scripted to
 * answer as a grading model would, one tool call of the CLI's own a turn:
 * read the rubric, look at the repository (and write in it), write the
 * verdict to $TRIALBOX_GRADE_FILE; then say it is done. Built once per CLI
 * (MODEL_CLI: "codex" or "claude"); exits 77 when that CLI is not
 * installed, and only then.
 *
 * What the CLIs need to do that unattended is in the grader's arguments, as
 * a user would give them (docs/experiments.md, "A model grader"): Claude
 * Code asks before it reads outside its folder or writes anywhere, and is
 * told what it may (--allowedTools); Codex's own sandbox would keep it from
 * writing the verdict, and cannot start as root inside trialbox's, so it runs
 * its commands without one (--sandbox danger-full-access): trialbox's is the
 * grader's.
 *
 * The network: a grader's is none unless asked; here the server's port is
 * named exactly (--allow-host 127.0.0.1:PORT, which makes it allow), and
 * every endpoint the Harness's plugin declares is sent to a closed loopback
 * port through the test build's name map: nothing leaves the host. The
 * CLIs retry for minutes when a server is unreachable: every grade has
 * --timeout. */
#define _GNU_SOURCE
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tb_test.h"

#define VERDICT_PATH "/sandbox/grade/verdict.json"
#define DONE "Verdict written."
#define PROMPT                                                                                                \
        "Grade the repository in the current folder by the rubric in /grader/rubric.md. Write your verdict "  \
        "as JSON, {\"passed\": true or false, \"score\": 0 to 1, \"detail\": \"one sentence\"}, to the file " \
        "$TRIALBOX_GRADE_FILE (" VERDICT_PATH ")."
/* What the grader's look at the repository runs: what the Trial left, where
 * the verdict goes, and a write of its own into the repository. */
#define LOOK "cat code; echo \"grade file: $TRIALBOX_GRADE_FILE\"; echo graded > grader-note; ls"

static bool is_codex(void) { return strcmp(MODEL_CLI, "codex") == 0; }

/* {"name": NAME, "input": {KEY: VALUE, KEY2: VALUE2}} (KEY2 may be NULL). */
static json_object *tool_call(const char *name, const char *key, const char *value, const char *key2,
                              const char *value2)
{
        json_object *input = json_object_new_object();
        json_object_object_add(input, key, json_object_new_string(value));
        if (key2)
                json_object_object_add(input, key2, json_object_new_string(value2));
        json_object *call = json_object_new_object();
        json_object_object_add(call, "name", json_object_new_string(name));
        json_object_object_add(call, "input", input);
        json_object *step = json_object_new_object();
        json_object_object_add(step, "tool_call", call);
        return step;
}

/* The model's script for this CLI: three tool calls, then the text DONE.
 * Claude Code: Read, Bash, Write; Codex: exec_command (the one tool it
 * offers a model it does not know to run a command or write a file).
 * malloc'd JSON. */
static char *model_script(const char *verdict)
{
        json_object *script = json_object_new_array();
        if (is_codex()) {
                _cleanup_free_ char *write = xasprintf("printf '%%s' '%s' > \"$TRIALBOX_GRADE_FILE\"", verdict);
                json_object_array_add(script, tool_call("exec_command", "cmd", "cat /grader/rubric.md", NULL, NULL));
                json_object_array_add(script, tool_call("exec_command", "cmd", LOOK, NULL, NULL));
                json_object_array_add(script, tool_call("exec_command", "cmd", write, NULL, NULL));
        } else {
                json_object_array_add(script, tool_call("Read", "file_path", "/grader/rubric.md", NULL, NULL));
                json_object_array_add(script,
                                      tool_call("Bash", "command", LOOK, "description", "Look at the repository"));
                json_object_array_add(script, tool_call("Write", "file_path", VERDICT_PATH, "content", verdict));
        }
        json_object *config = json_object_new_object();
        json_object_object_add(config, "text", json_object_new_string(DONE));
        json_object_object_add(config, "script", script);
        char *text = xstrdup(json_object_to_json_string_ext(config, JSON_C_TO_STRING_PLAIN));
        json_object_put(config);
        return text;
}

/* The model grader as a user gives it, to `trialbox grade` or in a plan
 * line's `grade` alike: its session arguments, its variables and (Claude
 * Code) its Credentials with a setup token; and what trialbox itself needs
 * in its environment: (Codex) CODEX_HOME with an API-key login, and the
 * plugin's endpoints sent nowhere. The server is at `port`; the logins are
 * written in `dir`. */
struct model_grader {
        char *creds, *codex_home, *allow, *url, *provider;
        const char *args[20]; /* after "--" */
        const char *vars[3];  /* NAME=value */
        char *host_env[3];
};

static void model_grader_init(struct model_grader *mg, const char *dir, int port)
{
        *mg = (struct model_grader){ 0 };
        mg->allow = xasprintf("127.0.0.1:%d", port);
        if (is_codex()) {
                mg->codex_home = path_in(dir, "codex-home");
                write_in(mg->codex_home, "auth.json", "{\"OPENAI_API_KEY\": \"tbtest-key\"}", 0600);
                mg->provider = xasprintf("model_providers.standin={name=\"Stand-in\",base_url=\"http://"
                                         "127.0.0.1:%d/v1\",wire_api=\"responses\"}",
                                         port);
                const char *args[] = { "exec",
                                       "--sandbox",
                                       "danger-full-access",
                                       "--skip-git-repo-check",
                                       "-c",
                                       "model_provider=standin",
                                       "-c",
                                       mg->provider,
                                       "-c",
                                       "model=stand-in-model",
                                       "-c",
                                       "features.plugins=false",
                                       "-c",
                                       "analytics.enabled=false",
                                       PROMPT,
                                       NULL };
                _Static_assert(sizeof args <= sizeof mg->args, "room for Codex's arguments");
                memcpy(mg->args, args, sizeof args);
                mg->host_env[0] = xasprintf("CODEX_HOME=%s", mg->codex_home);
                mg->host_env[1] = xstrdup(endpoints_nowhere(CODEX_ENDPOINTS));
                return;
        }
        mg->creds = path_in(dir, "credentials.json");
        write_text(mg->creds, "{\"claude\": {\"setup_token\": \"tbtest-oauth\"}}", 0600);
        mg->url = xasprintf("ANTHROPIC_BASE_URL=http://127.0.0.1:%d", port);
        const char *args[] = { "-p",   PROMPT, "--allowedTools", "Read(//grader/**)", "Edit(//sandbox/grade/**)",
                               "Bash", NULL };
        _Static_assert(sizeof args <= sizeof mg->args, "room for Claude Code's arguments");
        memcpy(mg->args, args, sizeof args);
        mg->vars[0] = mg->url;
        mg->vars[1] = "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1";
        mg->host_env[0] = xstrdup(endpoints_nowhere(CLAUDE_ENDPOINTS));
}

static void model_grader_done(struct model_grader *mg)
{
        free(mg->creds);
        free(mg->codex_home);
        free(mg->allow);
        free(mg->url);
        free(mg->provider);
        for (size_t i = 0; mg->host_env[i]; i++)
                free(mg->host_env[i]);
}

/* `trialbox grade --harness MODEL_CLI` of the Trial, the server's port
 * named with --allow-host when `named` (else the grader's network stays
 * none). */
static void grade_with_model(struct proc_result *r, const struct graded *g, const struct model_grader *mg, bool named,
                             const char *timeout)
{
        const char *argv[64] = { "grade",     "--trial-dir",  g->f.out,  "--repo", g->f.repo,
                                 "--harness", MODEL_CLI,      "--files", g->files, "--timeout",
                                 timeout,     "--kill-after", "2s" };
        size_t n = 13;
        if (named) {
                argv[n++] = "--allow-host";
                argv[n++] = mg->allow;
        }
        if (mg->creds) {
                argv[n++] = "--credentials";
                argv[n++] = mg->creds;
        }
        for (size_t i = 0; mg->vars[i]; i++) {
                argv[n++] = "--env";
                argv[n++] = mg->vars[i];
        }
        argv[n++] = "--";
        for (size_t i = 0; mg->args[i]; i++)
                argv[n++] = mg->args[i];
        argv[n] = NULL;
        tb_command(r, mg->host_env, argv);
}

static json_object *strings(const char *const *v)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; v[i]; i++)
                json_object_array_add(a, json_object_new_string(v[i]));
        return a;
}

/* A plan line: the shell Trial `session` on the graded fixture, its `grade`
 * the model grader with the server's port named. malloc'd, newline-ended. */
static char *plan_line(const char *id, const struct graded *g, const char *session, const struct model_grader *mg)
{
        json_object *grade = json_object_new_object();
        json_object_object_add(grade, "harness", json_object_new_string(MODEL_CLI));
        json_object_object_add(grade, "files", json_object_new_string(g->files));
        json_object_object_add(grade, "timeout", json_object_new_string("90s"));
        json_object_object_add(grade, "kill_after", json_object_new_string("2s"));
        json_object_object_add(grade, "network", json_object_new_string("allow"));
        json_object_object_add(grade, "allow_host", strings((const char *const[]){ mg->allow, NULL }));
        if (mg->creds)
                json_object_object_add(grade, "credentials", json_object_new_string(mg->creds));
        if (geteuid() == 0)
                json_object_object_add(grade, "root_session", json_object_new_boolean(true));
        json_object *vars = json_object_new_object();
        for (size_t i = 0; mg->vars[i]; i++) {
                const char *eq = strchr(mg->vars[i], '=');
                _cleanup_free_ char *name = strndup(mg->vars[i], (size_t)(eq - mg->vars[i]));
                json_object_object_add(vars, name, json_object_new_string(eq + 1));
        }
        json_object_object_add(grade, "env", vars);
        json_object_object_add(grade, "args", strings(mg->args));
        json_object *line = json_object_new_object();
        json_object_object_add(line, "id", json_object_new_string(id));
        json_object_object_add(line, "harness", json_object_new_string("shell"));
        json_object_object_add(line, "repo", json_object_new_string(g->f.repo));
        json_object_object_add(line, "output_dir", json_object_new_string(g->f.out));
        json_object_object_add(line, "args", strings((const char *const[]){ "-c", session, NULL }));
        json_object_object_add(line, "grade", grade);
        char *text = xasprintf("%s\n", json_object_to_json_string_ext(line, JSON_C_TO_STRING_PLAIN));
        json_object_put(line);
        return text;
}

/* The model calls the server answered (Messages or Responses), in order. */
static size_t model_calls(const struct model_server *m, json_object **calls, size_t cap)
{
        _cleanup_free_ char *text = read_text(m->record);
        size_t n = 0;
        for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
                json_object *j = json_tokener_parse(line);
                ck_assert_ptr_nonnull(j);
                const char *api = json_object_get_string(json_get(j, "api"));
                if ((strcmp(api, "messages") == 0 || strcmp(api, "responses") == 0) && n < cap)
                        calls[n++] = j;
                else
                        json_object_put(j);
        }
        return n;
}

/* A field of a call's hint, "" for none. */
static const char *hint_of(json_object *call, const char *key)
{
        json_object *hint = NULL, *v = NULL;
        if (!json_object_object_get_ex(call, "hint", &hint) || !json_object_object_get_ex(hint, key, &v) || !v)
                return "";
        return json_object_get_string(v);
}

/* The conversation the model had: the prompt, then each tool's result as
 * the CLI sent it back: the rubric (the grader sees its files), what the
 * Trial left in `code`, its own write in the repository, where the verdict
 * goes, and the verdict written. */
static void assert_conversation(const struct model_server *m, const char *rubric, const char *code)
{
        json_object *calls[8];
        size_t n = model_calls(m, calls, 8);
        ck_assert_msg(n == 4, "the server answered %zu model calls, not 4", n);
        assert_contains(hint_of(calls[0], "last_user_tail"), "(" VERDICT_PATH ").");
        static const char *const tools_claude[] = { "Read", "Bash", "Write" };
        for (size_t i = 0; i < 3; i++) {
                json_object *call = json_get(calls[i], "tool_call");
                ck_assert_msg(call != NULL, "call %zu was not answered with a tool call", i);
                ck_assert_str_eq(json_object_get_string(json_get(call, "name")),
                                 is_codex() ? "exec_command" : tools_claude[i]);
        }
        ck_assert(!json_object_object_get_ex(calls[3], "tool_call", NULL));
        assert_contains(hint_of(calls[1], "tool_result_tail"), rubric);
        const char *look = hint_of(calls[2], "tool_result_tail");
        assert_contains(look, code);
        assert_contains(look, "grade file: " VERDICT_PATH);
        assert_contains(look, "grader-note");
        assert_contains(hint_of(calls[3], "tool_result_tail"),
                        is_codex() ? "Process exited with code 0" : "File created successfully at: " VERDICT_PATH);
        for (size_t i = 0; i < n; i++)
                json_object_put(calls[i]);
}

/* A grade (grade.json, or a results line's `grade`) is the model's
 * verdict, with the grader's usage and what it cost, as the server sent it. */
static void assert_models_grade(json_object *grade, bool fix, const struct model_server *m)
{
        const char *text = json_object_to_json_string(grade);
        static const char *const fields[] = { "status", "score", "detail", "cause", "exit_code", "harness" };
        const char *const want[] = { fix ? "passed" : "failed",
                                     fix ? "1" : "0.25",
                                     fix ? "code says fixed, as the rubric asks" : "code still says broken",
                                     NULL,
                                     "0",
                                     MODEL_CLI };
        for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
                json_object *v = NULL;
                ck_assert_msg(json_object_object_get_ex(grade, fields[i], &v), "grade.%s is missing: %s", fields[i],
                              text);
                if (!want[i]) {
                        ck_assert_msg(v == NULL, "grade.%s is not null: %s", fields[i], text);
                        continue;
                }
                ck_assert_msg(v != NULL, "grade.%s is missing: %s", fields[i], text);
                bool same = json_object_is_type(v, json_type_double)
                                    ? json_object_get_double(v) == strtod(want[i], NULL)
                                    : strcmp(json_object_get_string(v), want[i]) == 0;
                ck_assert_msg(same, "grade.%s is %s, not %s: %s", fields[i], json_object_to_json_string(v), want[i],
                              text);
        }
        json_object *usage = json_get(grade, "usage");
        ck_assert_msg(usage && json_object_get_int64(json_get(usage, "peak_memory_bytes")) > 0,
                      "the grade has no usage: %s", text);
        ck_assert_msg(json_object_get_int64(json_get(grade, "duration_ms")) > 0, "the grade took no time: %s", text);
        json_object *t = json_get(grade, "tokens");
        ck_assert_msg(t != NULL, "the grade has no tokens: %s", text);
        assert_tokens_are_the_servers(t, m, 4, is_codex() ? "~/.codex/sessions" : "~/.claude/projects");
}

/* The grader reached the model through its own proxy, on the port named. */
static void assert_reached_through_its_proxy(const char *out, int port)
{
        _cleanup_free_ char *net = read_text_in(out, "grade/network.jsonl");
        _cleanup_free_ char *want = xasprintf(
                "\"host\":\"127.0.0.1\",\"port\":%d,\"method\":\"POST\",\"decision\":\"allowed\"", port);
        ck_assert_msg(net && strstr(net, want), "no '%s' in the grader's network.jsonl:\n%s", want, net ? net : "");
}

/* The Trial to grade: the rubric in the grader's files, and a session that
 * fixes `code` (or leaves it broken) and tries to read the rubric, at
 * /grader and at its host path, into .peek. Returns the session (malloc'd). */
static char *trial_new(struct graded *g, const char *rubric, bool fix)
{
        graded_init(g);
        _cleanup_free_ char *text = xasprintf("# Rubric\n\nPassed when `code` says fixed. (%s)\n", rubric);
        write_in(g->files, "rubric.md", text, 0644);
        return xasprintf("%s{ cat /grader/rubric.md || echo 'no /grader'; cat '%s/rubric.md' || echo 'no %s'; } "
                         ">.peek 2>&1",
                         fix ? "echo fixed > code; " : "", g->files, g->files);
}

/* The session read the rubric nowhere. */
static void assert_session_saw_no_rubric(const struct graded *g, const char *rubric)
{
        _cleanup_free_ char *peek = read_text_in(g->f.repo, ".peek");
        ck_assert_msg(peek != NULL, "the session left no .peek");
        assert_contains(peek, "no /grader");
        _cleanup_free_ char *host = xasprintf("no %s", g->files);
        assert_contains(peek, host);
        assert_lacks(peek, rubric);
}

static const char *verdict_of(bool fix)
{
        return fix ? "{\"passed\": true, \"score\": 1, \"detail\": \"code says fixed, as the rubric asks\"}"
                   : "{\"passed\": false, \"score\": 0.25, \"detail\": \"code still says broken\"}";
}

static void a_model_grades(bool fix)
{
        _cleanup_free_ char *rubric = marker("rubric");
        _cleanup_free_ char *script = model_script(verdict_of(fix));
        struct model_server m;
        model_server_start(&m, script);
        struct graded g;
        _cleanup_free_ char *session = trial_new(&g, rubric, fix);
        graded_run(&g, session);
        assert_session_saw_no_rubric(&g, rubric);
        struct model_grader mg;
        model_grader_init(&mg, g.f.dir, m.port);
        struct proc_result r;
        grade_with_model(&r, &g, &mg, true, "90s");
        ck_assert_msg(r.status == (fix ? 0 : 1), "the %s grader: status %d:\n%s\n%s", MODEL_CLI, r.status, r.out,
                      r.err);
        assert_contains(r.out, DONE);

        /* The verdict is the model's, from the file its tool wrote. */
        _cleanup_free_ char *text = read_text_in(g.f.out, "grade.json");
        json_object *grade = json_tokener_parse(text);
        ck_assert_msg(grade != NULL, "grade.json is not JSON: %s", text ? text : "(none)");
        assert_models_grade(grade, fix, &m);
        json_object_put(grade);
        assert_conversation(&m, rubric, fix ? "fixed" : "broken");
        assert_reached_through_its_proxy(g.f.out, m.port);

        /* Its write in the repository went with its layer; the Trial is as it was. */
        ck_assert(!exists_in(g.f.repo, "grader-note"));
        assert_trial_unchanged(&g);
        proc_result_free(&r);
        model_grader_done(&mg);
        graded_free(&g);
        model_server_stop(&m);
}

START_TEST(a_model_grader_reads_its_rubric_and_the_repository_and_writes_a_passing_verdict) { a_model_grades(true); }
END_TEST

START_TEST(a_model_grader_that_finds_no_fix_writes_a_failing_verdict) { a_model_grades(false); }
END_TEST

/* The same graders as plan lines' `grade`, run by `trialbox batch` after
 * their Trials (two at once, each with a model server of its own): each
 * results line's `grade` is its model's verdict and cost. */
START_TEST(a_batch_runs_a_plan_lines_model_grader_and_its_results_carry_the_verdict)
{
        _cleanup_free_ char *rubric = marker("rubric");
        struct model_server m[2];
        struct graded g[2];
        struct model_grader mg[2];
        char *lines[2];
        for (int i = 0; i < 2; i++) {
                bool fix = i == 0;
                _cleanup_free_ char *script = model_script(verdict_of(fix));
                model_server_start(&m[i], script);
                _cleanup_free_ char *session = trial_new(&g[i], rubric, fix);
                /* One login for both graders: trialbox's environment is the batch's. */
                model_grader_init(&mg[i], g[0].f.dir, m[i].port);
                lines[i] = plan_line(fix ? "fixed" : "broken", &g[i], session, &mg[i]);
        }
        _cleanup_free_ char *plan = path_in(g[0].f.dir, "plan.jsonl");
        _cleanup_free_ char *both = xasprintf("%s%s", lines[0], lines[1]);
        write_plan(plan, both);
        struct proc_result r;
        tb_command(&r, mg[0].host_env, EXTRA("batch", plan, "--jobs", "2", "-q"));
        ck_assert_msg(r.status == 0, "batch: status %d:\n%s\n%s", r.status, r.out, r.err);

        _cleanup_free_ char *results = path_in(g[0].f.dir, "plan.results.jsonl");
        for (int i = 0; i < 2; i++) {
                bool fix = i == 0;
                json_object *line = results_line(results, fix ? "fixed" : "broken");
                ck_assert_msg(line != NULL, "no results line '%s' in %s", fix ? "fixed" : "broken", results);
                ck_assert_str_eq(json_object_get_string(json_get(line, "outcome")), "completed");
                json_object *grade = json_get(line, "grade");
                ck_assert_msg(grade != NULL, "the results line has no grade: %s", json_object_to_json_string(line));
                assert_models_grade(grade, fix, &m[i]);
                json_object_put(line);
                assert_conversation(&m[i], rubric, fix ? "fixed" : "broken");
                assert_reached_through_its_proxy(g[i].f.out, m[i].port);
                assert_session_saw_no_rubric(&g[i], rubric);
                ck_assert(!exists_in(g[i].f.repo, "grader-note"));
        }
        proc_result_free(&r);
        for (int i = 0; i < 2; i++) {
                free(lines[i]);
                model_grader_done(&mg[i]);
                graded_free(&g[i]);
                model_server_stop(&m[i]);
        }
}
END_TEST

/* A grader's network is none unless asked, whatever its Harness: without
 * the port named, the model is out of its reach, and its timeout ends it. */
START_TEST(without_the_port_named_a_model_grader_reaches_no_model)
{
        _cleanup_free_ char *rubric = marker("rubric");
        _cleanup_free_ char *script = model_script("{\"passed\": true}");
        struct model_server m;
        model_server_start(&m, script);
        struct graded g;
        _cleanup_free_ char *session = trial_new(&g, rubric, true);
        graded_run(&g, session);
        struct model_grader mg;
        model_grader_init(&mg, g.f.dir, m.port);
        struct proc_result r;
        grade_with_model(&r, &g, &mg, false, "4s");
        ck_assert_msg(r.status == 3, "the %s grader: status %d (error: 3):\n%s\n%s", MODEL_CLI, r.status, r.out, r.err);
        assert_record(g.f.out, "grade.json", "status", "error");
        assert_record(g.f.out, "grade.json", "cause", "timeout");
        _cleanup_free_ char *seen = read_text(m.record);
        ck_assert_msg(!seen || !strstr(seen, "\"method\": \"POST\""), "the server saw a call:\n%s", seen);
        assert_trial_unchanged(&g);
        proc_result_free(&r);
        model_grader_done(&mg);
        graded_free(&g);
        model_server_stop(&m);
}
END_TEST

static void add_tests(Suite *s, TCase *tc)
{
        (void)s;
        tcase_add_test(tc, a_model_grader_reads_its_rubric_and_the_repository_and_writes_a_passing_verdict);
        tcase_add_test(tc, a_model_grader_that_finds_no_fix_writes_a_failing_verdict);
        tcase_add_test(tc, a_batch_runs_a_plan_lines_model_grader_and_its_results_carry_the_verdict);
        tcase_add_test(tc, without_the_port_named_a_model_grader_reaches_no_model);
}

int main(void)
{
        _cleanup_free_ char *cli = find_on_path(MODEL_CLI, getenv("PATH"));
        if (!cli) {
                printf("%s is not installed: skipped\n", MODEL_CLI);
                return 77;
        }
        return tb_run_tests("model_grader_" MODEL_CLI, 150, add_tests);
}
