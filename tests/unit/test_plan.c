/* Unit tests of the plan (plan.c) and the summary (report.c): nothing runs. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpus.h"
#include "base/strv.h"
#include "experiments/batch_internal.h"
#include "experiments/plan.h"
#include "experiments/report.h"
#include "tb_test.h"

static char *plan_in(const char *dir, const char *text)
{
        char *p = path_in(dir, "plan.jsonl");
        write_text(p, text, 0644);
        return p;
}

START_TEST(a_plan_line_becomes_the_run_options_with_paths_from_the_plan_folder)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char *repo = path_in(dir, "repo");
        mkdir_p(repo, 0755);
        char *path = plan_in(dir, "{\"id\":\"t1\",\"harness\":\"shell\",\"repo\":\"./repo/\",\"output_dir\":\"out/../out/t1/\","
                                  "\"harness_bin\":\"sh\",\"skills\":\"skills\",\"timeout\":90,\"memory\":\"512M\","
                                  "\"cpus\":1.5,\"network\":\"allow\",\"allow_host\":[\"a.example\",\"b.example\"],"
                                  "\"args\":[\"-c\",\"echo 'x y'\"],\"user\":null}\n");
        struct plan plan;
        struct tb_error err = { 0 };
        ck_assert_msg(plan_load(path, &plan, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(plan.n, 1);
        const struct plan_trial *t = &plan.v[0];
        char *want_out = path_in(dir, "out/t1");
        ck_assert_str_eq(t->output_dir, want_out);
        ck_assert_str_eq(t->repo, repo);
        ck_assert_str_eq(t->more->harness_bin, "sh"); /* a bare name stays for PATH */
        ck_assert_uint_eq(t->slots, 2);         /* ceil(1.5) */
        ck_assert_ptr_null(t->more->user);
        struct strv args = { 0 };
        plan_trial_run_args(t, t->repo, NULL, &args);
        char *line = strv_joined(&args, "", "");
        char *want;
        if (asprintf(&want,
                     "run --repo %s --harness shell --output-dir %s --harness-bin sh --skills %s/skills --timeout 90 "
                     "--memory 512M --cpus 1.5 --network allow --allow-host a.example --allow-host b.example -q --json -- "
                     "-c echo 'x y'",
                     repo, want_out, dir) < 0)
                abort();
        ck_assert_str_eq(line, want);
        free(want);
        free(line);
        strv_done(&args);
        char *clone = plan_clone_dir(t->output_dir);
        ck_assert_str_eq(clone + strlen(clone) - 8, "/t1.repo");
        free(clone);
        plan_done(&plan);
        free(want_out);
        free(path);
        free(repo);
}
END_TEST

/* `env`, `kill_after` and `harness_endpoints`: what reaches `run`, and the
 * values never in its argv (they go through --env-file, the batch's pipe). */
START_TEST(env_kill_after_and_harness_endpoints_reach_run_and_no_value_is_in_its_argv)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char *repo = path_in(dir, "repo");
        mkdir_p(repo, 0755);
        char *path = plan_in(dir, "{\"id\":\"t\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o\","
                                  "\"timeout\":\"1m\",\"kill_after\":0,\"harness_endpoints\":false,"
                                  "\"env\":{\"API_KEY\":\"s3cret-value\",\"MODE\":\"fast\"}}\n"
                                  "{\"id\":\"u\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"p\","
                                  "\"harness_endpoints\":true}\n");
        struct plan plan;
        struct tb_error err = { 0 };
        ck_assert_msg(plan_load(path, &plan, &err) == 0, "%s", err.msg);
        struct strv args = { 0 };
        plan_trial_run_args(&plan.v[0], plan.v[0].repo, "/dev/fd/3", &args);
        char *line = strv_joined(&args, "", "");
        assert_contains(line, "--env-file /dev/fd/3");
        assert_contains(line, "--timeout 1m");
        assert_contains(line, "--kill-after 0");
        assert_contains(line, "--no-harness-endpoints");
        assert_lacks(line, "s3cret");
        assert_lacks(line, "API_KEY");
        ck_assert_uint_eq(plan.v[0].more->env.n, 2);
        free(line);
        strv_done(&args);
        plan_trial_run_args(&plan.v[1], plan.v[1].repo, "/dev/fd/3", &args);
        line = strv_joined(&args, "", "");
        assert_lacks(line, "--no-harness-endpoints");
        assert_lacks(line, "--env-file");
        free(line);
        strv_done(&args);
        plan_done(&plan);
        free(path);
        static const struct text_case bad[] = {
                { "\"env\":{\"HOME\":\"/x\"}", "field 'env': 'HOME' cannot be set: trialbox sets it" },
                { "\"env\":{\"PATH\":\"/x\"}", "field 'env': 'PATH' cannot be set" },
                { "\"env\":{\"TRIALBOX_DEADLINE\":\"1\"}", "'TRIALBOX_DEADLINE' cannot be set: TRIALBOX_* are" },
                { "\"env\":{\"https_proxy\":\"x\"}", "'https_proxy' cannot be set" },
                { "\"env\":{\"LD_PRELOAD\":\"/x.so\"}", "'LD_PRELOAD' cannot be set: LD_*" },
                { "\"env\":{\"1X\":\"a\"}", "'1X' is not a variable name" },
                { "\"env\":{\"A-B\":\"a\"}", "'A-B' is not a variable name" },
                { "\"env\":{\"N\":3}", "field 'env': 'N' must be a string" },
                { "\"env\":[\"A=b\"]", "field 'env': must be an object" },
                { "\"kill_after\":\"5s\"", "field 'kill_after': needs 'timeout'" },
                { "\"timeout\":5,\"kill_after\":\"soon\"", "field 'kill_after':" },
                { "\"harness_endpoints\":\"no\"", "field 'harness_endpoints': must be true or false" },
                /* As run takes them: a pattern it parses, under allow only. */
                { "\"allow_host\":[\"bad pattern!\"]", "field 'allow_host': --allow-host 'bad pattern!': not a host" },
                { "\"network\":\"none\",\"allow_host\":[\"localhost\"]", "field 'network': is 'none', but allow_host" },
                { "\"network\":\"host\",\"harness_endpoints\":false", "field 'network': is 'host', but harness_endpoints" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++) {
                _cleanup_free_ char *text = xasprintf("{\"id\":\"t\",\"harness\":\"shell\",\"repo\":\"repo\","
                                                      "\"output_dir\":\"o\",%s}\n", bad[i].in);
                path = plan_in(dir, text);
                struct tb_error e = { 0 };
                ck_assert_int_eq(plan_load(path, &plan, &e), -EINVAL);
                ck_assert_msg(strstr(e.msg, bad[i].want), "case %zu: '%s'", i, e.msg);
                ck_assert_msg(!strstr(e.msg, "/x"), "case %zu: a value is shown: %s", i, e.msg);
                free(path);
        }
        free(repo);
}
END_TEST

/* A line's fingerprint: what it runs, whatever the order of its keys, its
 * spacing, its id, output folder or nulls; another value of any other
 * field (env included, nested keys in any order) changes it. */
START_TEST(a_lines_fingerprint_is_what_it_runs)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char *repo = path_in(dir, "repo");
        mkdir_p(repo, 0755);
        static const char *const base =
                "{\"id\":\"t\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o\",\"args\":[\"-c\",\"x\"],"
                "\"env\":{\"A\":\"1\",\"B\":\"2\"}}\n";
        static const char *const same[] = {
                "{ \"output_dir\" : \"elsewhere\", \"env\":{\"B\":\"2\",\"A\":\"1\"}, \"args\":[\"-c\",\"x\"], "
                "\"repo\":\"repo\", \"harness\":\"shell\", \"id\":\"other\", \"user\": null }\n",
        };
        static const char *const other[] = {
                "{\"id\":\"t\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o\",\"args\":[\"-c\",\"y\"],"
                "\"env\":{\"A\":\"1\",\"B\":\"2\"}}\n",
                "{\"id\":\"t\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o\",\"args\":[\"-c\",\"x\"],"
                "\"env\":{\"A\":\"1\",\"B\":\"3\"}}\n",
                "{\"id\":\"t\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o\",\"args\":[\"-c\",\"x\"],"
                "\"env\":{\"A\":\"1\",\"B\":\"2\"},\"harness_bin\":\"sh\"}\n",
                "{\"id\":\"t\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o\",\"args\":[\"-c\",\"x\"],"
                "\"env\":{\"A\":\"1\",\"B\":\"2\"},\"timeout\":60}\n",
        };
        struct plan plan;
        struct tb_error err = { 0 };
        char *path = plan_in(dir, base);
        ck_assert_msg(plan_load(path, &plan, &err) == 0, "%s", err.msg);
        char want[SHA256_HEX_LEN + 1];
        memcpy(want, plan.v[0].fingerprint, sizeof want);
        ck_assert_uint_eq(strlen(want), 64);
        plan_done(&plan);
        free(path);
        for (size_t i = 0; i < TB_ARRAY_SIZE(same) + TB_ARRAY_SIZE(other); i++) {
                bool is_same = i < TB_ARRAY_SIZE(same);
                path = plan_in(dir, is_same ? same[i] : other[i - TB_ARRAY_SIZE(same)]);
                ck_assert_msg(plan_load(path, &plan, &err) == 0, "%s", err.msg);
                ck_assert_msg((strcmp(plan.v[0].fingerprint, want) == 0) == is_same, "case %zu: fingerprint %s", i,
                              is_same ? "changed" : "did not change");
                plan_done(&plan);
                free(path);
        }
        free(repo);
}
END_TEST

START_TEST(repo_from_takes_an_optional_revision)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char *src = path_in(dir, "src");
        mkdir_p(src, 0755);
        char *path = plan_in(dir, "{\"id\":\"a\",\"harness\":\"shell\",\"repo_from\":\"src@v1.2\",\"output_dir\":\"a\"}\n"
                                  "{\"id\":\"b\",\"harness\":\"shell\",\"repo_from\":\"src\",\"output_dir\":\"b\"}\n");
        struct plan plan;
        struct tb_error err = { 0 };
        ck_assert_msg(plan_load(path, &plan, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(plan.v[0].repo_from, src);
        ck_assert_str_eq(plan.v[0].more->repo_rev, "v1.2");
        ck_assert_ptr_null(plan.v[1].more->repo_rev);
        ck_assert_uint_eq(plan.v[1].slots, 1);
        plan_done(&plan);
        free(path);
        free(src);
}
END_TEST

START_TEST(a_bad_line_names_its_line_and_field_and_keeps_nothing)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char *path = plan_in(dir, "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\".\",\"output_dir\":\"a\"}\n"
                                  "{\"id\":\"b\",\"harness\":\"shell\",\"repo\":\".\",\"output_dir\":\"a.attempt-2\"}\n");
        struct plan plan;
        struct tb_error err = { 0 };
        ck_assert_int_eq(plan_load(path, &plan, &err), -EINVAL);
        ck_assert_msg(strstr(err.msg, "plan.jsonl:2: field 'output_dir':"), "%s", err.msg);
        ck_assert_ptr_null(plan.v);
        ck_assert_uint_eq(plan.n, 0);
        free(path);
}
END_TEST

/* An output folder inside another's (its session's home, say) is refused
 * even when a sibling sorts between them ('-' sorts before '/'). */
START_TEST(an_output_folder_inside_another_is_refused_whatever_sorts_between_them)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char *path = plan_in(dir, "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\".\",\"output_dir\":\"runs/a\"}\n"
                                  "{\"id\":\"c\",\"harness\":\"shell\",\"repo\":\".\",\"output_dir\":\"runs/a-2\"}\n"
                                  "{\"id\":\"b\",\"harness\":\"shell\",\"repo\":\".\",\"output_dir\":\"runs/a/home/x\"}\n");
        struct plan plan;
        struct tb_error err = { 0 };
        ck_assert_int_eq(plan_load(path, &plan, &err), -EINVAL);
        ck_assert_msg(strstr(err.msg, "plan.jsonl:3: field 'output_dir':") && strstr(err.msg, "inside line 1's"), "%s",
                      err.msg);
        free(path);
}
END_TEST

START_TEST(the_summary_counts_outcomes_causes_and_percentiles_per_harness)
{
        struct report *r = report_new();
        char line[512];
        for (int i = 1; i <= 20; i++) {
                snprintf(line, sizeof line,
                         "{\"id\":\"c%d\",\"harness\":\"codex\",\"outcome\":\"completed\",\"duration_ms\":%d,"
                         "\"usage\":{\"cpu_user_ms\":10,\"cpu_system_ms\":5,\"peak_memory_bytes\":%d}}",
                         i, i * 100, i * 1048576);
                ck_assert_int_eq(report_add_line(r, line, NULL), 0);
        }
        ck_assert_int_eq(report_add_line(r, "{\"harness\":\"codex\",\"outcome\":\"failed\",\"cause\":\"timeout\","
                                            "\"duration_ms\":5000}", NULL), 0);
        ck_assert_int_eq(report_add_line(r, "{\"harness\":\"codex\",\"outcome\":\"failed\",\"exit_code\":1}", NULL), 0);
        ck_assert_int_eq(report_add_line(r, "{\"harness\":\"grok\",\"outcome\":\"void\",\"cause\":\"launcher_lost\"}", NULL), 0);
        ck_assert_int_eq(report_add_line(r, "{\"harness\":\"grok\",\"outcome\":null}", NULL), 0);
        ck_assert_int_eq(report_add_line(r, "[]", NULL), -EINVAL);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        report_print(r, REPORT_CSV, f);
        fclose(f);
        /* 21 durations (100..2000 and 5000): p50 is the 11th, p95 the 20th; cpu 20 × 15 ms. */
        assert_line(buf, "codex,22,20,2,0,0,1100,2000,300,20971520,failed/timeout=1 failed/nonzero_exit=1");
        assert_line(buf, "grok,2,0,0,1,1,,,,,void/launcher_lost=1");
        free(buf);
        f = open_memstream(&buf, &len);
        report_print(r, REPORT_TEXT, f);
        fclose(f);
        ck_assert_msg(strstr(buf, "codex failed/timeout 1") && strstr(buf, "grok void/launcher_lost 1"), "%s", buf);
        free(buf);
        report_free(r);
}
END_TEST

/* How many of `env`'s strings start with `prefix`; *last the last one. */
static int count_prefixed(const struct strv *env, const char *prefix, const char **last)
{
        int n = 0;
        for (size_t i = 0; i < env->n; i++)
                if (strncmp(env->v[i], prefix, strlen(prefix)) == 0) {
                        n++;
                        *last = env->v[i];
                }
        return n;
}

/* A batch's children (its Trials' runs, its graders) get its environment
 * without a Trial's token; when it runs as many at once as it has CPUs, or
 * more, they are told every CPU is busy (TRIALBOX_CPUS_BUSY=1, once,
 * whatever the batch was given), else they keep what the batch has. */
START_TEST(a_batchs_children_are_told_the_cpus_are_busy_when_its_jobs_fill_them)
{
        ck_assert_int_eq(setenv("TRIALBOX_RECORD_NONCE", "n", 1), 0);
        ck_assert_int_eq(setenv("TRIALBOX_CPUS_BUSY", "0", 1), 0);
        ck_assert_int_eq(setenv("TB_TEST_KEPT", "yes", 1), 0);
        const unsigned cpus = (unsigned)cpus_count();
        const unsigned busy_jobs[] = { cpus, cpus * 2 };
        for (size_t k = 0; k < TB_ARRAY_SIZE(busy_jobs); k++) {
                _cleanup_strv_ struct strv env = { 0 };
                const char *last = NULL;
                batch_child_env(busy_jobs[k], &env);
                ck_assert_int_eq(count_prefixed(&env, "TB_TEST_KEPT=yes", &last), 1);
                ck_assert_int_eq(count_prefixed(&env, "TRIALBOX_RECORD_NONCE=", &last), 0);
                ck_assert_int_eq(count_prefixed(&env, "TRIALBOX_CPUS_BUSY=", &last), 1);
                ck_assert_str_eq(last, "TRIALBOX_CPUS_BUSY=1");
        }
        if (cpus < 2)
                return; /* one job fills one CPU */
        _cleanup_strv_ struct strv kept = { 0 };
        const char *last = NULL;
        batch_child_env(cpus - 1, &kept);
        ck_assert_int_eq(count_prefixed(&kept, "TRIALBOX_CPUS_BUSY=", &last), 1);
        ck_assert_str_eq(last, "TRIALBOX_CPUS_BUSY=0");
        ck_assert_int_eq(unsetenv("TRIALBOX_CPUS_BUSY"), 0);
        _cleanup_strv_ struct strv none = { 0 };
        batch_child_env(cpus - 1, &none);
        ck_assert_int_eq(count_prefixed(&none, "TRIALBOX_CPUS_BUSY=", &last), 0);
}
END_TEST

TB_SUITE("plan", 0)
{
        tcase_add_test(tc, a_plan_line_becomes_the_run_options_with_paths_from_the_plan_folder);
        tcase_add_test(tc, repo_from_takes_an_optional_revision);
        tcase_add_test(tc, env_kill_after_and_harness_endpoints_reach_run_and_no_value_is_in_its_argv);
        tcase_add_test(tc, a_lines_fingerprint_is_what_it_runs);
        tcase_add_test(tc, a_bad_line_names_its_line_and_field_and_keeps_nothing);
        tcase_add_test(tc, an_output_folder_inside_another_is_refused_whatever_sorts_between_them);
        tcase_add_test(tc, the_summary_counts_outcomes_causes_and_percentiles_per_harness);
        tcase_add_test(tc, a_batchs_children_are_told_the_cpus_are_busy_when_its_jobs_fill_them);
}
