/* How an Experiment is judged, end to end on this machine: the example
 * (examples/experiment: 2 arms × 3 tasks × 3 repetitions, shell agents of
 * known skill, graders with hidden tests) through `trialbox plan`,
 * `trialbox batch` and `trialbox report`. The sessions cannot read the
 * hidden tests, the graders' writes never reach a Trial's repository, and
 * the report's pass rates, Wilson intervals, pass@k and paired difference
 * are the ones computed here, independently, from the agents' known skill. */
#define _GNU_SOURCE
#include <check.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tb_test.h"
#include "base/util.h"

#define EXAMPLE TESTS_SOURCE_DIR "/../examples/experiment"

static const char *const tasks[] = { "add", "greet", "max" };
static const char *const arms[] = { "careful", "hasty" };
#define REPETITIONS 3

/* What the agents do, known beforehand: careful fixes every task every
 * time; hasty only on odd repetitions (it reads N from its output folder). */
static bool fixes(const char *arm, int n) { return strcmp(arm, "careful") == 0 || n % 2 == 1; }

struct exp {
        char *dir, *plan, *results;
};

static void exp_new(struct exp *e)
{
        e->dir = tmpdir_new();
        e->plan = path_in(e->dir, "plan.jsonl");
        e->results = path_in(e->dir, "plan.results.jsonl");
        sh_ok("'%s/setup.sh' '%s' >/dev/null", EXAMPLE, e->dir);
}

static void exp_free(struct exp *e)
{
        tmpdir_remove(e->dir);
        free(e->dir);
        free(e->plan);
        free(e->results);
}

/* ---- the numbers, computed here ---- */

/* The Wilson score interval of c successes in n, z for 95%. */
static void wilson(double c, double n, double *lo, double *hi)
{
        const double z = 1.959963984540054;
        double p = c / n, z2 = z * z;
        double mid = (p + z2 / (2 * n)) / (1 + z2 / n);
        double half = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n);
        *lo = mid - half;
        *hi = mid + half;
}

/* C(a, b) as a double (small numbers here). */
static double choose(int a, int b)
{
        if (b < 0 || b > a)
                return 0;
        double r = 1;
        for (int i = 1; i <= b; i++)
                r = r * (a - b + i) / i;
        return r;
}

/* Chen et al.'s pass@k for one task: 1 - C(n-c, k) / C(n, k). */
static double pass_at_k(int n, int c, int k) { return 1 - choose(n - c, k) / choose(n, k); }

static json_object *get(json_object *j, const char *key)
{
        json_object *v = NULL;
        ck_assert_msg(json_object_object_get_ex(j, key, &v), "no '%s' in %s", key, json_object_to_json_string(j));
        return v;
}

static void assert_near(double got, double want, const char *what)
{
        ck_assert_msg(fabs(got - want) < 1e-6, "%s is %.10f, not %.10f", what, got, want);
}

/* The report's group of `arm` against what the agents' skill makes it. */
static void assert_group(json_object *g, const char *arm)
{
        int passed = 0, per_task[3] = { 0 };
        double score = 0;
        for (int t = 0; t < 3; t++)
                for (int n = 1; n <= REPETITIONS; n++)
                        if (fixes(arm, n)) {
                                passed++;
                                per_task[t]++;
                                score += 1;
                        } else {
                                /* The hidden cases an unfixed task still passes: add 1 of 4, greet 0 of 3, max 1 of 4. */
                                score += t == 1 ? 0 : 0.25;
                        }
        int graded = 3 * REPETITIONS;
        ck_assert_int_eq(json_object_get_int(get(g, "graded")), graded);
        ck_assert_int_eq(json_object_get_int(get(g, "passed")), passed);
        ck_assert_int_eq(json_object_get_int(get(g, "not_graded")), 0);
        assert_near(json_object_get_double(get(g, "pass_rate")), (double)passed / graded, "pass_rate");
        double lo, hi;
        wilson(passed, graded, &lo, &hi);
        json_object *ci = get(g, "pass_rate_ci95");
        assert_near(json_object_get_double(json_object_array_get_idx(ci, 0)), lo, "the interval's low end");
        assert_near(json_object_get_double(json_object_array_get_idx(ci, 1)), hi > 1 ? 1 : hi, "its high end");
        assert_near(json_object_get_double(get(g, "mean_score")), score / graded, "mean_score");
        json_object *pk = get(g, "pass_at_k");
        for (int k = 1; k <= REPETITIONS; k++) {
                double want = 0;
                for (int t = 0; t < 3; t++)
                        want += pass_at_k(REPETITIONS, per_task[t], k) / 3;
                char key[8];
                snprintf(key, sizeof key, "%d", k);
                assert_near(json_object_get_double(get(pk, key)), want, "pass@k");
        }
}

/* ---- the steps ---- */

static void plan_and_run(struct exp *e)
{
        struct proc_result r;
        _cleanup_free_ char *exp = path_in(e->dir, "experiment.json");
        tb_command(&r, NULL, EXTRA("plan", exp, "-o", e->plan));
        ck_assert_msg(r.status == 0, "plan: status %d; %s", r.status, r.err);
        proc_result_free(&r);
        _cleanup_free_ char *text = read_text(e->plan);
        ck_assert_uint_eq(count_lines(text), 2 * 3 * REPETITIONS);
        assert_contains(text, "{\"id\":\"add/careful/1\",\"task\":\"add\",\"arm\":\"careful\",\"labels\":"
                              "{\"suite\":\"example\",\"skill\":\"high\"}");
        assert_contains(text, "\"args\":[\"max.sh s/-lt/-gt/\"]");
        tb_command(&r, ENV("TRIALBOX_BATCH_BACKOFF_MS=1"), EXTRA("batch", e->plan, "--jobs", "2"));
        ck_assert_msg(r.status == 0, "batch: status %d; %s", r.status, r.err);
        assert_contains(r.err, "graded passed (layer ");
        proc_result_free(&r);
}

/* Every Trial ran, was graded as the agents' skill says, and no session
 * found the hidden tests: not at /grader, not at their host path. */
static void assert_trials(const struct exp *e)
{
        for (size_t t = 0; t < 3; t++)
                for (size_t a = 0; a < 2; a++)
                        for (int n = 1; n <= REPETITIONS; n++) {
                                _cleanup_free_ char *id = xasprintf("%s/%s/%d", tasks[t], arms[a], n);
                                json_object *line = results_line(e->results, id);
                                ck_assert_msg(line != NULL, "no results line for %s", id);
                                ck_assert_str_eq(json_object_get_string(get(line, "outcome")), "completed");
                                ck_assert_str_eq(json_object_get_string(get(line, "task")), tasks[t]);
                                json_object *grade = get(line, "grade");
                                ck_assert_str_eq(json_object_get_string(get(grade, "status")),
                                                 fixes(arms[a], n) ? "passed" : "failed");
                                json_object_put(line);
                                if (a == 0)
                                        continue;
                                _cleanup_free_ char *rel = xasprintf("runs/%s.repo", id);
                                _cleanup_free_ char *clone = path_in(e->dir, rel);
                                _cleanup_free_ char *peek = read_text_in(clone, ".peek");
                                ck_assert_msg(peek != NULL, "%s left no .peek", id);
                                assert_contains(peek, "no /grader");
                                _cleanup_free_ char *host = xasprintf("no %s/graders", e->dir);
                                assert_contains(peek, host);
                                assert_lacks(peek, "hidden cases");
                        }
}

/* The Trials' repositories and records, to compare after grading again. */
static char *snapshot(const struct exp *e)
{
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        for (size_t t = 0; t < 3; t++)
                for (size_t a = 0; a < 2; a++)
                        for (int n = 1; n <= REPETITIONS; n++) {
                                _cleanup_free_ char *rel = xasprintf("runs/%s/%s/%d", tasks[t], arms[a], n);
                                _cleanup_free_ char *out = path_in(e->dir, rel);
                                _cleanup_free_ char *clone = xasprintf("%s.repo", out);
                                _cleanup_free_ char *m = tree_manifest(clone);
                                _cleanup_free_ char *rec = read_text_in(out, "outcome.json");
                                ck_assert_msg(!exists_in(clone, ".grader-was-here") && exists_in(clone, "test.sh"),
                                              "a grader's write reached %s", clone);
                                strbuf_addf(&sb, "%s\n%s%s", clone, m, rec);
                        }
        return sb.s;
}

START_TEST(an_experiment_of_two_arms_three_tasks_three_repetitions_gives_the_expected_answer)
{
        struct exp e;
        exp_new(&e);
        plan_and_run(&e);
        assert_trials(&e);
        _cleanup_free_ char *before = snapshot(&e);

        /* Graded again, running no Trial: the same answer, nothing of the Trials changed. */
        struct proc_result r;
        tb_command(&r, NULL, EXTRA("batch", e.plan, "--grade-only", "-q"));
        ck_assert_msg(r.status == 0, "batch --grade-only: status %d; %s", r.status, r.err);
        proc_result_free(&r);
        _cleanup_free_ char *after = snapshot(&e);
        ck_assert_msg(strcmp(before, after) == 0, "grading again changed a Trial's repository or outcome.json");
        _cleanup_free_ char *aside = path_in(e.dir, "runs/add/hasty/2/grade.attempt-1");
        assert_record(aside, "grade.json", "status", "failed");
        /* --grade-only runs nothing: a Trial's line is not checked again, nor
         * run again when it changed, and --check has nothing to add to it. */
        tb_command(&r, NULL, EXTRA("batch", e.plan, "--grade-only", "--rerun-changed"));
        ck_assert_int_eq(r.status, 2);
        assert_contains(r.err, "--grade-only runs no Trial; it does not go with --rerun-changed");
        proc_result_free(&r);
        tb_command(&r, NULL, EXTRA("batch", e.plan, "--grade-only", "--check"));
        ck_assert_int_eq(r.status, 2);
        assert_contains(r.err, "--check runs nothing");
        proc_result_free(&r);
        _cleanup_free_ char *unchanged = snapshot(&e);
        ck_assert_msg(strcmp(before, unchanged) == 0, "a refused batch changed a Trial");

        /* The answer, by arm. */
        tb_command(&r, NULL, EXTRA("report", e.results, "--by", "arm", "--json"));
        ck_assert_msg(r.status == 0, "report: status %d; %s", r.status, r.err);
        json_object *j = json_tokener_parse(r.out);
        ck_assert_msg(j != NULL, "not JSON: %s", r.out);
        json_object *groups = get(j, "groups");
        ck_assert_uint_eq(json_object_array_length(groups), 2);
        for (size_t a = 0; a < 2; a++) {
                json_object *g = json_object_array_get_idx(groups, a);
                ck_assert_str_eq(json_object_get_string(get(g, "arm")), arms[a]);
                assert_group(g, arms[a]);
        }
        /* hasty - careful: every task 2/3 - 3/3, so -1/3 with an interval of no width. */
        json_object *pair = json_object_array_get_idx(get(j, "paired_differences"), 0);
        ck_assert_str_eq(json_object_get_string(get(pair, "arm_b")), "hasty");
        ck_assert_int_eq(json_object_get_int(get(pair, "tasks")), 3);
        assert_near(json_object_get_double(get(pair, "pass_rate_difference")), -1.0 / 3, "the paired difference");
        json_object_put(j);
        proc_result_free(&r);

        /* The table, for the reader of the test's log; and the page. */
        _cleanup_free_ char *html = path_in(e.dir, "report.html");
        tb_command(&r, NULL, EXTRA("report", e.results, "--by", "arm", "--html", html));
        ck_assert_msg(r.status == 0, "report --html: status %d; %s", r.status, r.err);
        fprintf(stderr, "%s", r.out);
        assert_contains(r.out, "careful           9      9     1.000 [0.701, 1.000]");
        assert_contains(r.out, "hasty             9      6     0.667 [0.354, 0.879]");
        proc_result_free(&r);
        _cleanup_free_ char *page = read_text(html);
        ck_assert_msg(page && strstr(page, "<!DOCTYPE html>") && strstr(page, "careful") && strstr(page, "hasty") &&
                              strstr(page, "0.354"),
                      "the page lacks the arms or their intervals");
        exp_free(&e);
}
END_TEST

START_TEST(a_bad_experiment_names_the_file_and_the_field)
{
        struct exp e;
        exp_new(&e);
        _cleanup_free_ char *bad = path_in(e.dir, "bad.json");
        write_text(bad,
                   "{\"arms\": [{\"name\": \"a\", \"harness\": \"shell\", \"args\": [\"-c\", \"x\"]},"
                   " {\"name\": \"b\", \"harness\": \"shell\", \"args\": [\"-c\", \"{prompt}\", 3]}],"
                   " \"tasks\": [{\"name\": \"t\", \"repo_from\": \"tasks/add\", \"prompt\": \"p\"}]}",
                   0644);
        struct proc_result r;
        tb_command(&r, NULL, EXTRA("plan", bad));
        ck_assert_msg(r.status == 2, "status %d", r.status);
        _cleanup_free_ char *want = xasprintf("trialbox: %s: arms[1].args[2]: must be a string\n", bad);
        ck_assert_str_eq(r.err, want);
        ck_assert_str_eq(r.out, "");
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

TB_SUITE("experiment", 240)
{
        (void)s;
        tcase_add_test(tc, an_experiment_of_two_arms_three_tasks_three_repetitions_gives_the_expected_answer);
        tcase_add_test(tc, a_bad_experiment_names_the_file_and_the_field);
}
