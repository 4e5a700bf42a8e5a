/* Unit tests of the Experiment file (experiments/experiment.c): its plan's
 * lines, their order, labels, prompts, limits and paths; and every mistake
 * named by the file and the field. Nothing runs. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "experiments/experiment.h"
#include "experiments/plan.h"
#include "tb_test.h"

struct xp {
        char *dir, *file;
};

static void xp_new(struct xp *x, const char *text)
{
        x->dir = tmpdir_new();
        sh_ok("mkdir -p '%s/tasks/one' '%s/tasks/two' '%s/graders/one' '%s/plans'", x->dir, x->dir, x->dir, x->dir);
        x->file = path_in(x->dir, "exp.json");
        write_text(x->file, text, 0644);
}

static void xp_free(struct xp *x)
{
        tmpdir_remove(x->dir);
        free(x->dir);
        free(x->file);
}

static const char good[] =
        "{\"output_root\": \"runs\", \"repetitions\": 2, \"labels\": {\"suite\": \"s\"},\n"
        " \"arms\": [{\"name\": \"a\", \"harness\": \"codex\", \"args\": [\"exec\", \"{prompt}\", \"say: {prompt}!\"],\n"
        "            \"timeout\": \"10m\", \"memory\": \"1G\", \"labels\": {\"model\": \"m1\"}},\n"
        "           {\"name\": \"b\", \"harness\": \"shell\", \"harness_bin\": \"agents/b.sh\", \"args\": [\"-c\", \"x\"],\n"
        "            \"network\": \"none\", \"credentials\": \"/etc/creds.json\"}],\n"
        " \"tasks\": [{\"name\": \"one\", \"repo_from\": \"tasks/one@v1\", \"prompt\": \"fix it\", \"timeout\": 60,\n"
        "             \"labels\": {\"size\": 1},\n"
        "             \"grade\": {\"harness\": \"shell\", \"files\": \"graders/one\", \"args\": [\"/grader/t.sh\", \"{prompt}\"]}},\n"
        "            {\"name\": \"two\", \"repo_from\": \"tasks/two\", \"prompt\": \"p2\"}]}\n";

START_TEST(the_plan_has_a_line_per_repetition_task_and_arm_in_that_order)
{
        struct xp x;
        xp_new(&x, good);
        struct strbuf out = { 0 };
        struct strv notes = { 0 };
        struct tb_error err = { 0 };
        _cleanup_free_ char *plans = path_in(x.dir, "plans");
        ck_assert_msg(experiment_expand(x.file, plans, &out, &notes, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(count_lines(out.s), 8);
        ck_assert_uint_eq(notes.n, 0);
        static const char *const ids[] = { "one/a/1", "one/b/1", "two/a/1", "two/b/1",
                                           "one/a/2", "one/b/2", "two/a/2", "two/b/2" };
        const char *line = out.s;
        for (size_t i = 0; i < 8; i++) {
                _cleanup_free_ char *head = xasprintf("{\"id\":\"%s\",", ids[i]);
                ck_assert_msg(strncmp(line, head, strlen(head)) == 0, "line %zu: %.60s", i, line);
                line = strchr(line, '\n') + 1;
        }
        /* The first line whole: labels of the file, the arm, the task; {prompt}
         * in a whole arg and in a part of one; the task's timeout over the
         * arm's; paths relative to the plan's folder. */
        assert_contains(out.s,
                        "{\"id\":\"one/a/1\",\"task\":\"one\",\"arm\":\"a\",\"labels\":{\"suite\":\"s\",\"model\":\"m1\","
                        "\"size\":1},\"harness\":\"codex\",\"output_dir\":\"../runs/one/a/1\",\"args\":[\"exec\","
                        "\"fix it\",\"say: fix it!\"],\"timeout\":60,\"memory\":\"1G\",\"repo_from\":\"../tasks/one@v1\","
                        "\"grade\":{\"harness\":\"shell\",\"files\":\"../graders/one\",\"args\":[\"/grader/t.sh\","
                        "\"fix it\"]}}\n");
        /* An absolute path stays; a bare harness_bin with a '/' is relative; no grade for "two". */
        assert_contains(out.s, "{\"id\":\"two/b/2\",\"task\":\"two\",\"arm\":\"b\",\"labels\":{\"suite\":\"s\"},"
                               "\"harness\":\"shell\",\"output_dir\":\"../runs/two/b/2\",\"harness_bin\":"
                               "\"../agents/b.sh\",\"args\":[\"-c\",\"x\"],\"network\":\"none\",\"credentials\":"
                               "\"/etc/creds.json\",\"repo_from\":\"../tasks/two\"}\n");
        /* The plan it makes is one the batch takes. */
        _cleanup_free_ char *plan = path_in(plans, "plan.jsonl");
        write_text(plan, out.s, 0644);
        struct plan p;
        ck_assert_msg(plan_load(plan, &p, &err) == 0, "%s", err.msg);
        ck_assert_uint_eq(p.n, 8);
        ck_assert_str_eq(p.v[0].more->arm, "a");
        ck_assert_ptr_nonnull(p.v[0].more->grade);
        plan_done(&p);
        free(out.s);

        /* Without a plan's folder (stdout): absolute paths. */
        out = (struct strbuf){ 0 };
        ck_assert_int_eq(experiment_expand(x.file, NULL, &out, &notes, &err), 0);
        _cleanup_free_ char *abs = xasprintf("\"output_dir\":\"%s/runs/one/a/1\"", x.dir);
        assert_contains(out.s, abs);
        free(out.s);
        strv_done(&notes);
        xp_free(&x);
}
END_TEST

START_TEST(trials_sharing_a_repository_are_said)
{
        struct xp x;
        xp_new(&x, "{\"arms\": [{\"name\": \"a\", \"harness\": \"shell\"}],"
                   " \"tasks\": [{\"name\": \"t\", \"repo\": \"tasks/one\"}], \"repetitions\": 2}");
        struct strbuf out = { 0 };
        struct strv notes = { 0 };
        struct tb_error err = { 0 };
        ck_assert_int_eq(experiment_expand(x.file, NULL, &out, &notes, &err), 0);
        ck_assert_uint_eq(notes.n, 1);
        assert_contains(notes.v[0], "tasks[0].repo: its 2 Trials share one repository");
        free(out.s);
        strv_done(&notes);
        xp_free(&x);
}
END_TEST

struct bad_row {
        const char *text;
        const char *where_what; /* after "FILE: " */
};

START_TEST(every_mistake_is_named_by_the_file_and_the_field)
{
        /* An arm and a task that are fine, to put the mistake beside. */
#define ARM "{\"name\": \"a\", \"harness\": \"shell\"}"
#define TASK "{\"name\": \"t\", \"repo_from\": \"tasks/one\"}"
        static const struct bad_row rows[] = {
                { "[1]", "an Experiment is one JSON object" },
                { "{\"arms\": [" ARM "], \"tasks\": [" TASK "]", "not valid JSON" },
                { "{\"arm\": [], \"arms\": [" ARM "], \"tasks\": [" TASK "]}", "arm: unknown field" },
                { "{\"arms\": [], \"tasks\": [" TASK "]}", "arms: must be a non-empty array of arms" },
                { "{\"arms\": [" ARM "]}", "tasks: must be a non-empty array of tasks" },
                { "{\"repetitions\": 0, \"arms\": [" ARM "], \"tasks\": [" TASK "]}",
                  "repetitions: must be a whole number from 1 to 1000" },
                { "{\"arms\": [{\"harness\": \"shell\"}], \"tasks\": [" TASK "]}",
                  "arms[0].name: is missing; give each arm a name" },
                { "{\"arms\": [{\"name\": \"../x\", \"harness\": \"shell\"}], \"tasks\": [" TASK "]}",
                  "arms[0].name: must be 1 to 64 letters" },
                { "{\"arms\": [" ARM ", " ARM "], \"tasks\": [" TASK "]}", "arms[1].name: 'a' is also arms[0]'s" },
                { "{\"arms\": [{\"name\": \"a\"}], \"tasks\": [" TASK "]}", "arms[0].harness: is missing" },
                { "{\"arms\": [" ARM ", {\"name\": \"b\", \"harness\": \"shell\", \"args\": [\"-c\", \"x\", 3]}],"
                  " \"tasks\": [" TASK "]}",
                  "arms[1].args[2]: must be a string" },
                { "{\"arms\": [{\"name\": \"a\", \"harness\": \"Shell\"}], \"tasks\": [" TASK "]}",
                  "arms[0].harness: 'Shell' is not a Harness name" },
                { "{\"arms\": [{\"name\": \"a\", \"harness\": \"shell\", \"timeout\": \"soon\"}], \"tasks\": [" TASK "]}",
                  "arms[0].timeout: value 'soon' is not a duration" },
                { "{\"arms\": [{\"name\": \"a\", \"harness\": \"shell\", \"network\": \"lan\"}], \"tasks\": [" TASK "]}",
                  "arms[0].network: 'lan' is not one of none, allow, host" },
                { "{\"arms\": [{\"name\": \"a\", \"harness\": \"shell\", \"env\": {\"TRIALBOX_X\": \"1\"}}],"
                  " \"tasks\": [" TASK "]}",
                  "arms[0].env.TRIALBOX_X: 'TRIALBOX_X' cannot be set: TRIALBOX_* are trialbox's own" },
                { "{\"arms\": [{\"name\": \"a\", \"harness\": \"shell\", \"env\": {\"PATH\": \"/x\"}}],"
                  " \"tasks\": [" TASK "]}",
                  "arms[0].env.PATH: 'PATH' cannot be set: trialbox sets it" },
                { "{\"arms\": [{\"name\": \"a\", \"harness\": \"shell\", \"env\": {\"1X\": \"1\"}}],"
                  " \"tasks\": [" TASK "]}",
                  "arms[0].env.?: not a variable's name" },
                { "{\"arms\": [{\"name\": \"a\", \"harness\": \"shell\", \"output_dir\": \"x\"}], \"tasks\": [" TASK "]}",
                  "arms[0].output_dir: unknown field" },
                { "{\"arms\": [{\"name\": \"a\", \"harness\": \"shell\", \"labels\": {\"1x\": 1}}], \"tasks\": [" TASK "]}",
                  "arms[0].labels: a label's name must be" },
                { "{\"arms\": [" ARM "], \"tasks\": [{\"name\": \"t\"}]}",
                  "tasks[0].repo: is missing; give 'repo_from'" },
                { "{\"arms\": [" ARM "], \"tasks\": [{\"name\": \"t\", \"repo\": \"tasks/one\", \"repo_from\": \"tasks/one\"}]}",
                  "tasks[0].repo_from: give either 'repo' or 'repo_from', not both" },
                { "{\"arms\": [" ARM "], \"tasks\": [{\"name\": \"t\", \"repo_from\": \"tasks/none\"}]}",
                  "tasks[0].repo_from: 'tasks/none': No such file or directory" },
                { "{\"arms\": [" ARM "], \"tasks\": [{\"name\": \"t\", \"repo_from\": \"tasks/one@\"}]}",
                  "tasks[0].repo_from: 'tasks/one@' is not PATH or PATH@REV" },
                { "{\"arms\": [{\"name\": \"a\", \"harness\": \"shell\", \"args\": [\"{prompt}\"]}], \"tasks\": [" TASK "]}",
                  "tasks[0].prompt: is missing, and arms[0].args use {prompt}" },
                { "{\"arms\": [" ARM "], \"tasks\": [{\"name\": \"t\", \"repo_from\": \"tasks/one\", \"grade\": "
                  "{\"args\": [\"x\"]}}]}",
                  "tasks[0].grade.harness: is missing" },
                { "{\"arms\": [" ARM "], \"tasks\": [{\"name\": \"t\", \"repo_from\": \"tasks/one\", \"grade\": "
                  "{\"harness\": \"shell\", \"layer\": \"zfs\"}}]}",
                  "tasks[0].grade.layer: 'zfs' is not one of auto, bwrap-overlay, overlayfs, copy" },
                { "{\"arms\": [" ARM "], \"tasks\": [{\"name\": \"t\", \"repo_from\": \"tasks/one\", \"grade\": "
                  "{\"harness\": \"shell\", \"files\": \"graders/none\"}}]}",
                  "tasks[0].grade.files: 'graders/none': No such file or directory" },
                { "{\"arms\": [" ARM "], \"tasks\": [{\"name\": \"t\", \"repo_from\": \"tasks/one\", \"grade\": "
                  "{\"harness\": \"shell\", \"args\": [\"{prompt}\"]}}]}",
                  "tasks[0].prompt: is missing, and tasks[0].grade.args use {prompt}" },
                { "{\"labels\": {\"m\": 1}, \"arms\": [{\"name\": \"a\", \"harness\": \"shell\", \"labels\": {\"m\": 2}}],"
                  " \"tasks\": [" TASK "]}",
                  "arms[0].labels.m: is also given by the file's labels" },
                { "{\"arms\": [{\"name\": \"a\", \"harness\": \"shell\", \"labels\": {\"m\": 2}}],"
                  " \"tasks\": [{\"name\": \"t\", \"repo_from\": \"tasks/one\", \"labels\": {\"m\": 3}}]}",
                  "tasks[0].labels.m: is also given by arms[0].labels" },
                { "{\"arms\": [" ARM "], \"tasks\": [{\"name\": \"t\", \"repo_from\": \"tasks/one\", \"prompt\": 5}]}",
                  "tasks[0].prompt: must be a string of UTF-8 text" },
        };
        for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
                struct xp x;
                xp_new(&x, rows[i].text);
                struct strbuf out = { 0 };
                struct strv notes = { 0 };
                struct tb_error err = { 0 };
                ck_assert_msg(experiment_expand(x.file, NULL, &out, &notes, &err) < 0, "row %zu expanded", i);
                _cleanup_free_ char *want = xasprintf("%s: %s", x.file, rows[i].where_what);
                ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "row %zu: '%s', not '%s...'", i, err.msg, want);
                _cleanup_free_ char *shown = xasprintf("%s\n", err.msg);
                assert_one_line(shown);
                free(out.s);
                strv_done(&notes);
                xp_free(&x);
        }
        /* Over a bound: said, and nothing half-made is freed. */
        struct strbuf big = { 0 };
        strbuf_add(&big, "{\"tasks\": [" TASK "], \"arms\": [");
        for (int i = 0; i <= EXPERIMENT_MAX_ARMS; i++)
                strbuf_addf(&big, "%s{\"name\": \"a%d\", \"harness\": \"shell\"}", i ? ", " : "", i);
        strbuf_add(&big, "]}");
        struct xp x;
        xp_new(&x, big.s);
        struct strbuf out = { 0 };
        struct strv notes = { 0 };
        struct tb_error err = { 0 };
        ck_assert_int_eq(experiment_expand(x.file, NULL, &out, &notes, &err), -EINVAL);
        assert_contains(err.msg, ": arms: has more than 64 entries");
        free(out.s);
        free(big.s);
        xp_free(&x);
#undef ARM
#undef TASK
}
END_TEST

TB_SUITE("experiment_file", 0)
{
        (void)s;
        tcase_add_test(tc, the_plan_has_a_line_per_repetition_task_and_arm_in_that_order);
        tcase_add_test(tc, trials_sharing_a_repository_are_said);
        tcase_add_test(tc, every_mistake_is_named_by_the_file_and_the_field);
}
