/* Unit tests of the Experiment's answer (experiments/report.h, stats.h,
 * prices.h): the numbers against values computed independently (Python's
 * math module, the t tables), on small exact cases; the groups, the paired
 * difference, tokens and cost in JSON, CSV and text; bad input. Nothing runs
 * but `trialbox report` itself. */
#define _GNU_SOURCE
#include <check.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments/prices.h"
#include "experiments/report.h"
#include "experiments/stats.h"
#include "model/outcome.h"
#include "tb_test.h"

#define assert_near(got, want, eps) \
        ck_assert_msg(fabs((got) - (want)) <= (eps), "%s is %.10g, not %.10g", #got, (double)(got), (double)(want))

/* ---- the statistics ---- */

START_TEST(the_wilson_interval_matches_independent_values)
{
        /* Python: centre ± half of the Wilson formula, z = 1.959963984540054. */
        static const struct {
                size_t c, n;
                double lo, hi;
        } cases[] = {
                { 5, 9, 0.2667, 0.8112 }, { 0, 5, 0.0, 0.4345 }, { 5, 5, 0.5655, 1.0 },
                { 4, 7, 0.2505, 0.8418 }, { 0, 1, 0.0, 0.7935 }, { 1, 1, 0.2065, 1.0 },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                double lo = -1, hi = -1;
                ck_assert(stats_wilson95(cases[i].c, cases[i].n, &lo, &hi));
                ck_assert_msg(fabs(lo - cases[i].lo) < 5e-5 && fabs(hi - cases[i].hi) < 5e-5,
                              "%zu of %zu: [%.6f, %.6f], not [%.4f, %.4f]", cases[i].c, cases[i].n, lo, hi,
                              cases[i].lo, cases[i].hi);
        }
        double lo = -1, hi = -1;
        ck_assert(!stats_wilson95(0, 0, &lo, &hi));
        ck_assert(lo == -1 && hi == -1);
}
END_TEST

START_TEST(t_quantiles_match_the_tables)
{
        static const struct {
                size_t df;
                double t;
        } table[] = { { 1, 12.706204736 },  { 2, 4.302652730 },   { 3, 3.182446305 },    { 4, 2.776445105 },
                      { 5, 2.570581836 },   { 10, 2.228138852 },  { 29, 2.045229642 },   { 30, 2.042272456 },
                      { 100, 1.983971519 }, { 999, 1.962341461 }, { 1000, 1.962339081 }, { 100000, 1.959987708 } };
        /* Odd and even degrees (1/B(nu/2, 1/2) starts at 1/π or at 1/2),
         * each side of 1000 (a product below, a series from there), and a
         * high power. */
        for (size_t i = 0; i < TB_ARRAY_SIZE(table); i++)
                assert_near(stats_t975(table[i].df), table[i].t, 1e-6);
        assert_near(stats_t975(10000000), STATS_Z95, 1e-6);
}
END_TEST

START_TEST(the_mean_interval_is_a_t_interval_and_needs_two_samples)
{
        const double x[] = { 1, 2, 3, 4 };
        double m = 0, lo = 0, hi = 0;
        ck_assert(stats_mean_t95(x, 4, &m, &lo, &hi));
        /* 2.5 ± t(3) · stdev / √4, stdev = 1.2910 */
        assert_near(m, 2.5, 1e-12);
        assert_near(lo, 0.4457397432, 1e-8);
        assert_near(hi, 4.5542602568, 1e-8);
        m = lo = hi = -7;
        ck_assert(!stats_mean_t95(x, 1, &m, &lo, &hi));
        ck_assert(m == 1 && lo == -7 && hi == -7);
        const double same[] = { 0.5, 0.5, 0.5 };
        ck_assert(stats_mean_t95(same, 3, &m, &lo, &hi));
        ck_assert(lo == 0.5 && hi == 0.5);
}
END_TEST

START_TEST(pass_at_k_is_the_unbiased_estimator_without_overflow)
{
        assert_near(stats_pass_at_k(3, 1, 1), 1.0 / 3, 1e-12);
        assert_near(stats_pass_at_k(3, 1, 2), 2.0 / 3, 1e-12);
        assert_near(stats_pass_at_k(3, 1, 3), 1.0, 1e-12);
        /* 1 - C(3, k) / C(5, k) */
        const double five_two[] = { 0.4, 0.7, 0.9, 1, 1 };
        for (size_t k = 1; k <= 5; k++)
                assert_near(stats_pass_at_k(5, 2, k), five_two[k - 1], 1e-12);
        ck_assert(stats_pass_at_k(9, 0, 4) == 0);
        ck_assert(stats_pass_at_k(9, 9, 1) == 1);
        /* 1 - C(997, 500) / C(1000, 500): factorials of 1000 overflow a double */
        assert_near(stats_pass_at_k(1000, 3, 500), 0.8753753754, 1e-9);
        ck_assert(stats_pass_at_k(200, 100, 150) == 1);
}
END_TEST

/* ---- the answer ---- */

/* Two arms over tasks t1..t4 (A only has t4), with scores, usage, tokens. By
 * hand: A passes 4 of 7 graded; B 5 of 6 (its void Trial has no grade).
 * Per task (A, B): t1 1/2 2/2, t2 0/2 1/2, t3 2/2 2/2, t4 1/1 -. */
static const char two_arms[] =
        "{\"id\":\"a1\",\"harness\":\"codex\",\"arm\":\"A\",\"task\":\"t1\",\"labels\":{\"model\":\"gpt-5\",\"temp\":0.7},"
        "\"outcome\":\"completed\",\"duration_ms\":1200,\"usage\":{\"cpu_user_ms\":100,\"cpu_system_ms\":20,"
        "\"peak_memory_bytes\":104857600},\"grade\":{\"status\":\"passed\",\"score\":1,\"detail\":\"ok\","
        "\"duration_ms\":5,\"usage\":null},\"tokens\":{\"input\":1000000,\"cached_input\":400000,\"output\":200000,"
        "\"reasoning\":50000,\"requests\":10,\"models\":[\"gpt-5\"],\"source\":\"rollout\"}}\n"
        "{\"id\":\"a2\",\"harness\":\"codex\",\"arm\":\"A\",\"task\":\"t1\",\"labels\":{\"model\":\"gpt-5\"},"
        "\"outcome\":\"completed\",\"duration_ms\":1500,\"grade\":{\"status\":\"failed\",\"score\":0.2,\"detail\":\"x\"},"
        "\"tokens\":{\"input\":10,\"cached_input\":0,\"output\":5,\"reasoning\":0,\"requests\":1,\"models\":[\"gpt-5\"],"
        "\"source\":\"rollout\"}}\n"
        "{\"id\":\"a3\",\"harness\":\"codex\",\"arm\":\"A\",\"task\":\"t2\",\"outcome\":\"failed\",\"exit_code\":1,"
        "\"duration_ms\":900,\"grade\":{\"status\":\"failed\",\"score\":0,\"detail\":\"x\"}}\n"
        "{\"id\":\"a4\",\"harness\":\"codex\",\"arm\":\"A\",\"task\":\"t2\",\"outcome\":\"failed\",\"exit_code\":1,"
        "\"duration_ms\":900,\"grade\":{\"status\":\"failed\",\"score\":0,\"detail\":\"x\"}}\n"
        "{\"id\":\"a5\",\"harness\":\"codex\",\"arm\":\"A\",\"task\":\"t3\",\"outcome\":\"completed\",\"duration_ms\":700,"
        "\"grade\":{\"status\":\"passed\",\"score\":1,\"detail\":\"x\"}}\n"
        "{\"id\":\"a6\",\"harness\":\"codex\",\"arm\":\"A\",\"task\":\"t3\",\"outcome\":\"completed\",\"duration_ms\":800,"
        "\"grade\":{\"status\":\"passed\",\"score\":1,\"detail\":\"x\"}}\n"
        "{\"id\":\"a7\",\"harness\":\"codex\",\"arm\":\"A\",\"task\":\"t4\",\"outcome\":\"completed\",\"duration_ms\":800,"
        "\"grade\":{\"status\":\"passed\",\"score\":1,\"detail\":\"x\"}}\n"
        "{\"id\":\"b1\",\"harness\":\"claude\",\"arm\":\"B\",\"task\":\"t1\",\"outcome\":\"completed\",\"duration_ms\":2200,"
        "\"grade\":{\"status\":\"passed\",\"score\":1,\"detail\":\"x\"},\"tokens\":{\"input\":50,\"cached_input\":0,"
        "\"output\":5,\"reasoning\":0,\"requests\":1,\"models\":[\"claude-x\"],\"source\":\"t\"}}\n"
        "{\"id\":\"b2\",\"harness\":\"claude\",\"arm\":\"B\",\"task\":\"t1\",\"outcome\":\"completed\",\"duration_ms\":2100,"
        "\"grade\":{\"status\":\"passed\",\"score\":1,\"detail\":\"x\"}}\n"
        "{\"id\":\"b3\",\"harness\":\"claude\",\"arm\":\"B\",\"task\":\"t2\",\"outcome\":\"completed\",\"duration_ms\":2000,"
        "\"grade\":{\"status\":\"passed\",\"score\":0.5,\"detail\":\"x\"}}\n"
        "{\"id\":\"b4\",\"harness\":\"claude\",\"arm\":\"B\",\"task\":\"t2\",\"outcome\":\"failed\",\"duration_ms\":2000,"
        "\"grade\":{\"status\":\"failed\",\"score\":0.5,\"detail\":\"x\"}}\n"
        "{\"id\":\"b5\",\"harness\":\"claude\",\"arm\":\"B\",\"task\":\"t3\",\"outcome\":\"completed\",\"duration_ms\":2000,"
        "\"grade\":{\"status\":\"passed\",\"score\":1,\"detail\":\"x\"}}\n"
        "{\"id\":\"b6\",\"harness\":\"claude\",\"arm\":\"B\",\"task\":\"t3\",\"outcome\":\"void\","
        "\"cause\":\"session_unavailable\",\"grade\":null}\n"
        "{\"id\":\"b7\",\"harness\":\"claude\",\"arm\":\"B\",\"task\":\"t3\",\"outcome\":\"completed\",\"duration_ms\":2000,"
        "\"grade\":{\"status\":\"passed\",\"score\":1,\"detail\":\"x\"}}\n";

struct run {
        char *dir;
        int status;
        char *out;
        struct tb_error err;
};

/* `trialbox report` in this process on `results` (and `prices`, when not
 * NULL) with `by` (may be NULL) in `format`; the output in r->out. */
static void report_on(struct run *r, const char *results, const char *by, const char *prices,
                      enum report_format format)
{
        *r = (struct run){ .dir = tmpdir_new() };
        char *rpath = path_in(r->dir, "plan.results.jsonl"), *ppath = path_in(r->dir, "prices.json");
        write_text(rpath, results, 0644);
        if (prices)
                write_text(ppath, prices, 0644);
        struct report_args a = { .results = rpath, .format = format, .by = by, .prices = prices ? ppath : NULL };
        size_t len = 0;
        FILE *f = open_memstream(&r->out, &len);
        r->status = report_run(&a, f, &r->err);
        fclose(f);
        free(rpath);
        free(ppath);
}

static void run_done(struct run *r)
{
        tmpdir_remove(r->dir);
        free(r->dir);
        free(r->out);
}

/* The JSON answer (asserting it was given). json_object_put it. */
static json_object *answer_json(const char *results, const char *by, const char *prices)
{
        struct run r;
        report_on(&r, results, by, prices, REPORT_JSON);
        ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err.msg);
        json_object *j = json_tokener_parse(r.out);
        ck_assert_msg(j != NULL, "not JSON: %s", r.out);
        run_done(&r);
        return j;
}

static json_object *field(json_object *o, const char *key)
{
        json_object *v = NULL;
        ck_assert_msg(json_object_object_get_ex(o, key, &v), "no '%s' in %s", key, json_object_to_json_string(o));
        return v;
}

/* The group whose `key` (a top-level key, or labels.NAME) is `value`. */
static json_object *group(json_object *top, const char *key, const char *value)
{
        json_object *groups = field(top, "groups");
        for (size_t i = 0; i < json_object_array_length(groups); i++) {
                json_object *g = json_object_array_get_idx(groups, i), *v = NULL;
                if (strncmp(key, "labels.", 7) == 0)
                        json_object_object_get_ex(field(g, "labels"), key + 7, &v);
                else
                        json_object_object_get_ex(g, key, &v);
                if (v && strcmp(json_object_get_string(v), value) == 0)
                        return g;
        }
        ck_abort_msg("no group %s=%s in %s", key, value, json_object_to_json_string(top));
        return NULL;
}

static double num(json_object *o, const char *key)
{
        json_object *v = field(o, key);
        ck_assert_msg(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int),
                      "'%s' is not a number: %s", key, json_object_to_json_string(o));
        return json_object_get_double(v);
}

static void assert_null(json_object *o, const char *key)
{
        ck_assert_msg(field(o, key) == NULL, "'%s' is not null in %s", key, json_object_to_json_string(o));
}

static void assert_ci(json_object *o, const char *key, double lo, double hi)
{
        json_object *ci = field(o, key);
        ck_assert_msg(ci && json_object_array_length(ci) == 2, "'%s' is not [low, high]", key);
        assert_near(json_object_get_double(json_object_array_get_idx(ci, 0)), lo, 5e-5);
        assert_near(json_object_get_double(json_object_array_get_idx(ci, 1)), hi, 5e-5);
}

START_TEST(grouped_by_arm_each_arm_has_its_pass_rate_score_and_pass_at_k)
{
        json_object *top = answer_json(two_arms, "arm", NULL), *a = group(top, "arm", "A"),
                    *b = group(top, "arm", "B");
        ck_assert_int_eq((int)num(a, "trials"), 7);
        ck_assert_int_eq((int)num(a, "graded"), 7);
        ck_assert_int_eq((int)num(a, "passed"), 4);
        assert_near(num(a, "pass_rate"), 4.0 / 7, 1e-9);
        assert_ci(a, "pass_rate_ci95", 0.250458, 0.841780);
        /* B: 7 Trials, the void one never graded. */
        ck_assert_int_eq((int)num(b, "trials"), 7);
        ck_assert_int_eq((int)num(b, "graded"), 6);
        ck_assert_int_eq((int)num(b, "not_graded"), 1);
        assert_near(num(b, "pass_rate"), 5.0 / 6, 1e-9);
        assert_ci(b, "pass_rate_ci95", 0.436497, 0.969947);
        /* A's scores 1, .2, 0, 0, 1, 1, 1: mean 0.6 */
        assert_near(num(a, "mean_score"), 0.6, 1e-9);
        ck_assert_int_eq((int)num(a, "scored"), 7);
        json_object *ci = field(a, "mean_score_ci95");
        ck_assert(json_object_get_double(json_object_array_get_idx(ci, 0)) < 0.6);
        /* pass@k up to the fewest graded Trials of a task: A's t4 has 1. */
        json_object *pk = field(a, "pass_at_k");
        ck_assert_int_eq(json_object_object_length(pk), 1);
        assert_near(num(pk, "1"), (0.5 + 0 + 1 + 1) / 4, 1e-9);
        ck_assert_int_eq((int)num(a, "pass_at_k_tasks"), 4);
        pk = field(b, "pass_at_k");
        ck_assert_int_eq(json_object_object_length(pk), 2);
        assert_near(num(pk, "1"), (1 + 0.5 + 1) / 3.0, 1e-9);
        assert_near(num(pk, "2"), 1.0, 1e-9);
        /* The run's side, as before. */
        ck_assert_int_eq((int)num(a, "duration_p50_ms"), 900);
        ck_assert_int_eq((int)num(a, "cpu_ms"), 120);
        ck_assert_int_eq((int)num(b, "void"), 1);
        json_object_put(top);
}
END_TEST

START_TEST(the_paired_difference_is_over_the_tasks_both_arms_graded)
{
        json_object *top = answer_json(two_arms, "arm", NULL);
        json_object *pairs = field(top, "paired_differences");
        ck_assert_int_eq(json_object_array_length(pairs), 1);
        json_object *p = json_object_array_get_idx(pairs, 0);
        ck_assert_str_eq(json_object_get_string(field(p, "arm_a")), "A");
        ck_assert_str_eq(json_object_get_string(field(p, "arm_b")), "B");
        /* By hand: differences t1 +0.5, t2 +0.5, t3 0; mean 1/3, stdev √(1/12), t(2) = 4.3027:
         * 1/3 ± 0.7171 = [-0.3838, 1.0504], the top within 1. */
        ck_assert_int_eq((int)num(p, "tasks"), 3);
        assert_near(num(p, "pass_rate_difference"), 1.0 / 3, 1e-9);
        assert_ci(p, "pass_rate_difference_ci95", -0.383775, 1.0);
        json_object *left = field(p, "tasks_left_out");
        ck_assert_int_eq(json_object_array_length(left), 1);
        json_object *t4 = json_object_array_get_idx(left, 0);
        ck_assert_str_eq(json_object_get_string(field(t4, "task")), "t4");
        ck_assert_str_eq(json_object_get_string(field(t4, "graded_in")), "A");
        json_object *t2 = json_object_array_get_idx(field(p, "per_task"), 1);
        ck_assert_str_eq(json_object_get_string(field(t2, "task")), "t2");
        assert_near(num(t2, "difference"), 0.5, 1e-12);
        json_object_put(top);

        /* The same sentence in the text. */
        struct run r;
        report_on(&r, two_arms, "arm", NULL, REPORT_TEXT);
        ck_assert_msg(strstr(r.out, "paired difference in pass rate, B - A: +0.333, 95% CI [-0.384, +1.000] over 3 "
                                    "tasks; left out: t4 (graded only in A)"),
                      "%s", r.out);
        run_done(&r);
}
END_TEST

START_TEST(with_three_arms_each_is_paired_against_the_first_and_not_when_grouped_by_more)
{
        char *three = xasprintf("%s%s", two_arms,
                                "{\"arm\":\"C\",\"task\":\"t1\",\"outcome\":\"completed\",\"grade\":{\"status\":\"failed\"}}\n"
                                "{\"arm\":\"C\",\"task\":\"t2\",\"outcome\":\"completed\",\"grade\":{\"status\":\"passed\"}}\n");
        json_object *top = answer_json(three, "arm", NULL), *pairs = field(top, "paired_differences");
        ck_assert_int_eq(json_object_array_length(pairs), 2);
        json_object *c = json_object_array_get_idx(pairs, 1);
        ck_assert_str_eq(json_object_get_string(field(c, "arm_a")), "A");
        ck_assert_str_eq(json_object_get_string(field(c, "arm_b")), "C");
        /* t1: 0 - 0.5, t2: 1 - 0: mean 0.25 over 2 tasks */
        assert_near(num(c, "pass_rate_difference"), 0.25, 1e-12);
        ck_assert_int_eq((int)num(c, "tasks"), 2);
        ck_assert_int_eq(json_object_array_length(field(c, "tasks_left_out")), 2);
        json_object_put(top);
        top = answer_json(three, "arm,task", NULL);
        ck_assert(!json_object_object_get_ex(top, "paired_differences", NULL));
        json_object_put(top);
        free(three);
}
END_TEST

START_TEST(errors_voids_and_missing_grades_are_not_graded_and_no_graded_trial_is_null)
{
        static const char results[] =
                "{\"arm\":\"C\",\"task\":\"t1\",\"outcome\":\"completed\",\"grade\":{\"status\":\"error\",\"score\":1}}\n"
                "{\"arm\":\"C\",\"task\":\"t1\",\"outcome\":\"completed\",\"grade\":{\"status\":\"void\"}}\n"
                "{\"arm\":\"C\",\"task\":\"t1\",\"outcome\":\"void\",\"cause\":\"sandbox_unavailable\",\"grade\":null}\n"
                "{\"arm\":\"C\",\"task\":\"t1\",\"outcome\":\"completed\"}\n"
                "{\"arm\":\"C\",\"task\":\"t1\",\"outcome\":\"completed\",\"grade\":{\"status\":\"odd\"}}\n"
                "{\"arm\":\"D\",\"task\":\"t1\",\"outcome\":\"completed\",\"grade\":{\"status\":\"failed\",\"score\":null}}\n";
        json_object *top = answer_json(results, "arm", NULL), *c = group(top, "arm", "C");
        ck_assert_int_eq((int)num(c, "trials"), 5);
        ck_assert_int_eq((int)num(c, "graded"), 0);
        ck_assert_int_eq((int)num(c, "grade_errors"), 2); /* a status trialbox does not know is an error */
        ck_assert_int_eq((int)num(c, "grade_void"), 1);
        ck_assert_int_eq((int)num(c, "not_graded"), 2);
        assert_null(c, "pass_rate");
        assert_null(c, "pass_rate_ci95");
        assert_null(c, "mean_score");
        assert_null(c, "pass_at_k");
        assert_null(c, "tokens");
        assert_null(c, "cost_usd");
        json_object *d = group(top, "arm", "D");
        assert_near(num(d, "pass_rate"), 0, 0);
        ck_assert_int_eq((int)num(d, "scored"), 0);
        assert_null(d, "mean_score");
        /* C has no graded task: its pair with D has no difference. */
        json_object *p = json_object_array_get_idx(field(top, "paired_differences"), 0);
        assert_null(p, "pass_rate_difference");
        json_object_put(top);

        struct run r;
        report_on(&r, results, "arm", NULL, REPORT_CSV);
        ck_assert_int_eq(r.status, 0);
        /* graded,passed,errors,void,none, then pass rate and its interval empty, never 0 or nan */
        ck_assert_msg(strstr(r.out, "\nC,5,") && strstr(r.out, ",0,0,2,1,2,,,,0,,,,"), "%s", r.out);
        ck_assert_ptr_null(strstr(r.out, "nan"));
        run_done(&r);
}
END_TEST

/* ---- tokens and cost ---- */

START_TEST(tokens_are_summed_and_priced_per_model)
{
        /* gpt-5: no reasoning price (priced as output); o-mini: no cached price (priced as input). */
        static const char prices[] = "{\"gpt-5\": {\"input\": 1.25, \"cached_input\": 0.125, \"output\": 10},"
                                     " \"o-mini\": {\"input\": 2, \"output\": 4, \"reasoning\": 8}}";
        char *results = xasprintf(
                "%s{\"arm\":\"B\",\"task\":\"t9\",\"outcome\":\"completed\",\"tokens\":{\"input\":1000,"
                "\"cached_input\":500,\"output\":300,\"reasoning\":100,\"requests\":2,\"models\":[\"o-mini\"]}}\n",
                two_arms);
        json_object *top = answer_json(results, "arm", prices), *a = group(top, "arm", "A");
        json_object *t = field(a, "tokens");
        ck_assert_int_eq((int)num(t, "trials"), 2);
        ck_assert_int_eq((long long)num(t, "input"), 1000010);
        ck_assert_int_eq((long long)num(t, "cached_input"), 400000);
        ck_assert_int_eq((long long)num(t, "output"), 200005);
        ck_assert_int_eq((long long)num(t, "reasoning"), 50000);
        ck_assert_int_eq((long long)num(t, "requests"), 11);
        ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(field(t, "models"), 0)), "gpt-5");
        /* (600000 × 1.25 + 400000 × 0.125 + 150000 × 10 + 50000 × 10) / 1e6 = 2.8,
         * + (10 × 1.25 + 5 × 10) / 1e6 */
        assert_near(num(a, "cost_usd"), 2.8000625, 1e-9);
        assert_null(a, "cost_note");
        json_object_put(top);

        /* B alone, without claude-x: o-mini's Trial is (500 × 2 + 500 × 2 + 200 × 4 + 100 × 8) / 1e6. */
        free(results);
        results = xstrdup("{\"arm\":\"B\",\"task\":\"t9\",\"outcome\":\"completed\",\"tokens\":{\"input\":1000,"
                          "\"cached_input\":500,\"output\":300,\"reasoning\":100,\"requests\":2,\"models\":[\"o-mini\"]}}\n");
        top = answer_json(results, "arm", prices);
        assert_near(num(group(top, "arm", "B"), "cost_usd"), 0.0036, 1e-12);
        json_object_put(top);
        free(results);
}
END_TEST

/* Claude Code's usage as a Trial records it (a real session's, 3 responses):
 * `input` holds what was read from and written to the prompt cache;
 * writes are priced apart when the table says, else as input. */
START_TEST(cache_writes_are_summed_and_priced_apart_when_the_table_says)
{
        static const char results[] =
                "{\"arm\":\"C\",\"task\":\"t1\",\"outcome\":\"completed\",\"tokens\":{\"input\":3906,"
                "\"cached_input\":2445,\"cache_write_input\":217,\"output\":136,\"reasoning\":0,\"requests\":3,"
                "\"models\":[\"claude-sonnet-5-5\"]}}\n"
                "{\"arm\":\"C\",\"task\":\"t2\",\"outcome\":\"completed\",\"tokens\":{\"input\":10,"
                "\"cached_input\":0,\"output\":1,\"reasoning\":0,\"requests\":1,\"models\":[\"claude-sonnet-5-5\"]}}\n";
        json_object *top = answer_json(results, "arm",
                                       "{\"claude-sonnet-5-5\": {\"input\": 3, \"cached_input\": 0.3,"
                                       " \"cache_write_input\": 3.75, \"output\": 15}}");
        json_object *c = group(top, "arm", "C");
        ck_assert_int_eq((long long)num(field(c, "tokens"), "cache_write_input"), 217);
        /* ((3906 - 2445 - 217) × 3 + 2445 × 0.3 + 217 × 3.75 + 136 × 15) / 1e6, + (10 × 3 + 1 × 15) / 1e6 */
        assert_near(num(c, "cost_usd"), 0.00731925 + 0.000045, 1e-12);
        json_object_put(top);
        /* No price for them: as input. */
        top = answer_json(results, "arm", "{\"claude-sonnet-5-5\": {\"input\": 3, \"cached_input\": 0.3, \"output\": 15}}");
        assert_near(num(group(top, "arm", "C"), "cost_usd"), 0.0071565 + 0.000045, 1e-12);
        json_object_put(top);
}
END_TEST

START_TEST(a_model_without_a_price_makes_the_cost_unknown_never_zero)
{
        static const char prices[] = "{\"gpt-5\": {\"input\": 1.25, \"output\": 10}}";
        json_object *top = answer_json(two_arms, "arm", prices), *b = group(top, "arm", "B");
        assert_null(b, "cost_usd");
        ck_assert_str_eq(json_object_get_string(field(b, "cost_note")), "no price for model 'claude-x'");
        ck_assert(num(group(top, "arm", "A"), "cost_usd") > 0);
        json_object_put(top);
        /* Without --prices: no cost, and it says why. */
        top = answer_json(two_arms, "arm", NULL);
        assert_null(group(top, "arm", "A"), "cost_usd");
        ck_assert_str_eq(json_object_get_string(field(group(top, "arm", "A"), "cost_note")), "no --prices");
        json_object_put(top);
        /* Several models in one Trial's tokens are not split: unknown too. */
        top = answer_json("{\"arm\":\"A\",\"tokens\":{\"input\":1,\"output\":1,\"models\":[\"gpt-5\",\"o3\"]}}\n",
                          "arm", prices);
        assert_null(group(top, "arm", "A"), "cost_usd");
        ck_assert_ptr_nonnull(strstr(json_object_get_string(field(group(top, "arm", "A"), "cost_note")), "several"));
        json_object_put(top);

        struct run r;
        report_on(&r, two_arms, "arm", prices, REPORT_TEXT);
        ck_assert_msg(strstr(r.out, "unknown") && strstr(r.out, "cost unknown for B: no price for model 'claude-x'"),
                      "%s", r.out);
        run_done(&r);
        report_on(&r, two_arms, "arm", prices, REPORT_CSV);
        ck_assert_msg(strstr(r.out, ",cost_usd,cost_note\n") && strstr(r.out, ",claude-x,,no price for model 'claude-x'\n"),
                      "%s", r.out);
        run_done(&r);
}
END_TEST

/* ---- grouping ---- */

START_TEST(grouping_by_a_label_by_its_name_or_labels_dot_name)
{
        const char *const bys[] = { "model", "labels.model" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bys); i++) {
                json_object *top = answer_json(two_arms, bys[i], NULL);
                ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(field(top, "by"), 0)), "labels.model");
                json_object *g = group(top, "labels.model", "gpt-5");
                ck_assert_int_eq((int)num(g, "trials"), 2);
                ck_assert_int_eq((int)num(g, "passed"), 1);
                /* The lines without the label are their own group, its key null. */
                json_object *rest = json_object_array_get_idx(field(top, "groups"), 1);
                ck_assert_ptr_null(field(field(rest, "labels"), "model"));
                ck_assert_int_eq((int)num(rest, "trials"), 12);
                json_object_put(top);
        }
        /* A number label stays a number; with two keys, a group per pair. */
        json_object *top = answer_json(two_arms, "arm,temp", NULL);
        json_object *g = json_object_array_get_idx(field(top, "groups"), 0);
        ck_assert(json_object_is_type(field(field(g, "labels"), "temp"), json_type_double));
        ck_assert_str_eq(json_object_get_string(field(g, "arm")), "A");
        ck_assert_int_eq(json_object_array_length(field(top, "groups")), 3);
        json_object_put(top);

        struct run r;
        report_on(&r, two_arms, "arm,task", NULL, REPORT_CSV);
        ck_assert_msg(strstr(r.out, "arm,task,trials,completed,") && strstr(r.out, "\nA,t4,1,1,0,0,0,"), "%s", r.out);
        ck_assert_int_eq(count_lines(r.out), 1 + 7);
        run_done(&r);
}
END_TEST

START_TEST(the_csv_has_flat_columns_and_defuses_formulas)
{
        struct run r;
        report_on(&r, two_arms, "arm", NULL, REPORT_CSV);
        ck_assert_msg(strstr(r.out, "arm,trials,completed,failed,void,not_run,duration_p50_ms,duration_p95_ms,cpu_ms,"
                                    "peak_memory_max_bytes,causes,graded,passed,grade_errors,grade_void,not_graded,"
                                    "pass_rate,pass_rate_ci95_low,pass_rate_ci95_high,scored,mean_score,"
                                    "mean_score_ci95_low,mean_score_ci95_high,pass_at_1,pass_at_2,tokens_trials,"
                                    "tokens_input,tokens_cached_input,tokens_output,tokens_reasoning,tokens_requests,"
                                    "tokens_models\n"),
                      "%s", r.out);
        /* A: pass_at_2 is undefined (t4 has one graded Trial): empty. */
        ck_assert_msg(strstr(r.out, ",0.625,,2,"), "%s", r.out);
        run_done(&r);
        report_on(&r, "{\"arm\":\"=HYPERLINK(\\\"http://x\\\")\"}\n{\"arm\":\"-1\"}\n", "arm", NULL, REPORT_CSV);
        ck_assert_msg(strstr(r.out, "\n\"'=HYPERLINK(\"\"http://x\"\")\",1,") && strstr(r.out, "\n-1,1,"), "%s", r.out);
        run_done(&r);
}
END_TEST

START_TEST(the_per_harness_summary_without_grades_is_as_before)
{
        struct run r;
        report_on(&r, "{\"harness\":\"codex\",\"outcome\":\"completed\",\"duration_ms\":5}\n", NULL, NULL, REPORT_CSV);
        ck_assert_str_eq(r.out, "harness,trials,completed,failed,void,not_run,duration_p50_ms,duration_p95_ms,cpu_ms,"
                                "peak_memory_max_bytes,causes\ncodex,1,1,0,0,0,5,5,,,\n");
        run_done(&r);
        report_on(&r, "{\"harness\":\"codex\",\"outcome\":\"completed\",\"duration_ms\":5}\n", NULL, NULL, REPORT_TEXT);
        ck_assert_str_eq(r.out, "harness      trials completed failed  void not_run      p50      p95      cpu  peak_mem\n"
                                "codex             1         1      0     0       0      5ms      5ms        -         -\n");
        run_done(&r);
        json_object *top = answer_json("{\"harness\":\"codex\",\"outcome\":null}\n", NULL, NULL);
        ck_assert_int_eq(json_object_array_length(field(top, "harnesses")), 1);
        ck_assert_int_eq((int)num(group(top, "harness", "codex"), "not_run"), 1);
        json_object_put(top);
}
END_TEST

/* ---- bad input ---- */

START_TEST(bad_input_is_one_line_and_exit_2)
{
        static const struct {
                const char *what, *results, *by, *prices, *says;
        } cases[] = {
                { "a line that is not JSON", "{\"arm\":\"A\"}\nnot json\n", "arm", NULL, "results.jsonl:2: not a results line" },
                { "a line that is not an object", "[1]\n", NULL, NULL, "results.jsonl:1: not a results line" },
                { "a key nobody has", two_arms, "colour", NULL, "--by labels.colour: no results line has it; the lines "
                                                                "have: harness, arm, task, labels.model, labels.temp" },
                { "an empty key", two_arms, "arm,,task", NULL, "an empty key" },
                { "a key twice", two_arms, "arm,arm", NULL, "'arm' is given twice" },
                { "prices not JSON", two_arms, NULL, "{\"gpt-5\": ", "prices.json': not JSON at byte" },
                { "prices not an object", two_arms, NULL, "[]", "not a JSON object of models" },
                { "a price not a number", two_arms, NULL, "{\"gpt-5\": {\"input\": \"1\", \"output\": 1}}",
                  "field 'gpt-5.input': not a number >= 0" },
                { "a negative price", two_arms, NULL, "{\"gpt-5\": {\"input\": 1, \"output\": -1}}",
                  "field 'gpt-5.output': not a number >= 0" },
                { "a missing price", two_arms, NULL, "{\"gpt-5\": {\"input\": 1}}", "field 'gpt-5.output': missing" },
                { "an unknown kind", two_arms, NULL, "{\"gpt-5\": {\"input\": 1, \"output\": 1, \"cache\": 1}}",
                  "field 'gpt-5.cache': unknown" },
                { "a model not an object", two_arms, NULL, "{\"gpt-5\": 3}", "field 'gpt-5': not an object" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                struct run r;
                report_on(&r, cases[i].results, cases[i].by, cases[i].prices, REPORT_TEXT);
                ck_assert_msg(r.status == TB_EXIT_USAGE, "%s: status %d", cases[i].what, r.status);
                ck_assert_msg(strstr(r.err.msg, cases[i].says) && !strchr(r.err.msg, '\n'), "%s: '%s'", cases[i].what,
                              r.err.msg);
                ck_assert_msg(r.out[0] == '\0', "%s: printed '%s'", cases[i].what, r.out);
                run_done(&r);
        }
}
END_TEST

/* The real command: one line on stderr, exit 2, nothing on stdout. */
START_TEST(the_command_says_one_line_and_exits_2_on_bad_input)
{
        char *dir = tmpdir_new(), *results = path_in(dir, "plan.results.jsonl"), *prices = path_in(dir, "p.json");
        write_text(results, "{\"arm\":\"A\"}\n{oops\n", 0644);
        write_text(prices, "{\"gpt-5\": {\"input\": 1, \"output\": \"ten\"}}", 0644);
        char *const argvs[][8] = {
                { TRIALBOX_BIN, "report", results, NULL },
                { TRIALBOX_BIN, "report", results, "--by", "nosuch", NULL },
                { TRIALBOX_BIN, "report", results, "--prices", prices, NULL },
                { TRIALBOX_BIN, "report", results, "--by", NULL },
                { TRIALBOX_BIN, "report", results, "--json", "--csv", NULL },
        };
        const char *const says[] = { "results.jsonl:2: not a results line", "results.jsonl:2: not a results line",
                                     "p.json': field 'gpt-5.output': not a number", "option '--by' needs a value",
                                     "--json and --csv cannot be used together" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(says); i++) {
                struct proc_result r;
                run_argv(&r, NULL, argvs[i]);
                ck_assert_msg(r.status == 2, "case %zu: status %d, stderr '%s'", i, r.status, r.err);
                assert_one_line(r.err);
                ck_assert_msg(strstr(r.err, says[i]), "case %zu: '%s'", i, r.err);
                ck_assert_str_eq(r.out, "");
                proc_result_free(&r);
        }
        /* A key nobody has, on good results. */
        write_text(results, two_arms, 0644);
        struct proc_result r;
        run_argv(&r, NULL, (char *[]){ TRIALBOX_BIN, "report", results, "--by", "nosuch", NULL });
        ck_assert_int_eq(r.status, 2);
        assert_one_line(r.err);
        ck_assert_ptr_nonnull(strstr(r.err, "--by labels.nosuch: no results line has it"));
        proc_result_free(&r);
        run_argv(&r, NULL, (char *[]){ TRIALBOX_BIN, "report", results, "--by", "arm", NULL });
        ck_assert_msg(r.status == 0 && strstr(r.out, "paired difference in pass rate, B - A"), "%d %s %s", r.status,
                      r.out, r.err);
        proc_result_free(&r);
        free(results);
        free(prices);
        tmpdir_remove(dir);
        free(dir);
}
END_TEST

TB_SUITE("report", 0)
{
        tcase_add_test(tc, the_wilson_interval_matches_independent_values);
        tcase_add_test(tc, t_quantiles_match_the_tables);
        tcase_add_test(tc, the_mean_interval_is_a_t_interval_and_needs_two_samples);
        tcase_add_test(tc, pass_at_k_is_the_unbiased_estimator_without_overflow);
        tcase_add_test(tc, grouped_by_arm_each_arm_has_its_pass_rate_score_and_pass_at_k);
        tcase_add_test(tc, the_paired_difference_is_over_the_tasks_both_arms_graded);
        tcase_add_test(tc, with_three_arms_each_is_paired_against_the_first_and_not_when_grouped_by_more);
        tcase_add_test(tc, errors_voids_and_missing_grades_are_not_graded_and_no_graded_trial_is_null);
        tcase_add_test(tc, tokens_are_summed_and_priced_per_model);
        tcase_add_test(tc, a_model_without_a_price_makes_the_cost_unknown_never_zero);
        tcase_add_test(tc, cache_writes_are_summed_and_priced_apart_when_the_table_says);
        tcase_add_test(tc, grouping_by_a_label_by_its_name_or_labels_dot_name);
        tcase_add_test(tc, the_csv_has_flat_columns_and_defuses_formulas);
        tcase_add_test(tc, the_per_harness_summary_without_grades_is_as_before);
        tcase_add_test(tc, bad_input_is_one_line_and_exit_2);
        tcase_add_test(tc, the_command_says_one_line_and_exits_2_on_bad_input);
}
