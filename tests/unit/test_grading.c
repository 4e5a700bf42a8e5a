/* Unit tests of graders without running one: the verdict file's parser
 * and the grade's decision (tables), the layers' names and bwrap's
 * version, the spec's overlay, a plan line's grade and labels, and the
 * faithful copy a copy layer is. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/tree.h"
#include "experiments/labels.h"
#include "experiments/plan.h"
#include "model/grade.h"
#include "sandbox/cow.h"
#include "sandbox/spec.h"
#include "tb_test.h"

struct verdict_row {
        const char *text;
        int ok; /* 0 parsed, else -EINVAL */
        const char *why; /* part of the reason */
};

START_TEST(the_verdict_file_is_checked_key_by_key)
{
        static const struct verdict_row rows[] = {
                { "{}", 0, NULL },
                { "{\"passed\": true, \"score\": 0.5, \"detail\": \"half\"}\n", 0, NULL },
                { "{\"score\": -3}", 0, NULL },
                { "{\"passed\": 1}", -EINVAL, "'passed' is not true or false" },
                { "{\"score\": \"high\"}", -EINVAL, "'score' is not a finite number" },
                { "{\"score\": 1e999}", -EINVAL, "'score' is not a finite number" },
                { "{\"detail\": 7}", -EINVAL, "'detail' is not a string" },
                { "{\"pass\": true}", -EINVAL, "key 'pass' is not one of passed, score, detail" },
                { "{\"\\u001b[31m\": true}", -EINVAL, "a key that is not one of passed, score, detail" },
                { "[true]", -EINVAL, "not a JSON object" },
                { "{\"passed\": true} x", -EINVAL, "not JSON" },
                { "{\"passed\": tru", -EINVAL, "not JSON" },
                { "", -EINVAL, "not JSON" },
        };
        for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
                struct grade_verdict v;
                char why[256] = "";
                int r = grade_verdict_parse(rows[i].text, strlen(rows[i].text), &v, why, sizeof why);
                ck_assert_msg(r == rows[i].ok, "row %zu: %d (%s)", i, r, why);
                if (rows[i].why)
                        ck_assert_msg(strstr(why, rows[i].why), "row %zu: '%s' does not say '%s'", i, why, rows[i].why);
        }
        struct grade_verdict v;
        char why[256];
        const char ok[] = "{\"passed\": false, \"score\": 2.5, \"detail\": \"d\"}";
        ck_assert_int_eq(grade_verdict_parse(ok, strlen(ok), &v, why, sizeof why), 0);
        ck_assert(v.has_passed && !v.passed && v.has_score && v.score == 2.5 && v.has_detail);
        ck_assert_str_eq(v.detail, "d");
        /* A NUL inside, a detail too long, bytes that are not UTF-8. */
        const char nul[] = "{\"detail\": \"a\"}\0{}";
        ck_assert_int_eq(grade_verdict_parse(nul, sizeof nul - 1, &v, why, sizeof why), -EINVAL);
        _cleanup_free_ char *lng = xasprintf("{\"detail\": \"%01001d\"}", 0);
        ck_assert_int_eq(grade_verdict_parse(lng, strlen(lng), &v, why, sizeof why), -EINVAL);
        assert_contains(why, "longer than 1000 bytes");
        const char bad[] = "{\"detail\": \"\xff\xfe\"}";
        ck_assert_int_eq(grade_verdict_parse(bad, strlen(bad), &v, why, sizeof why), -EINVAL);
}
END_TEST

struct decide_row {
        const char *grader; /* the grader's outcome.json, or NULL */
        enum grade_verdict_state state;
        const char *verdict; /* parsed when VERDICT_OK */
        const char *status, *cause, *detail;
};

START_TEST(the_grade_follows_from_the_graders_outcome_and_verdict)
{
        static const struct decide_row rows[] = {
                { "{\"outcome\":\"completed\",\"exit_code\":0}", VERDICT_NONE, NULL, "passed", NULL,
                  "the grader exited with status 0" },
                { "{\"outcome\":\"failed\",\"exit_code\":1}", VERDICT_NONE, NULL, "failed", NULL,
                  "the grader exited with status 1" },
                { "{\"outcome\":\"completed\",\"exit_code\":0}", VERDICT_OK, "{\"passed\": false}", "failed", NULL,
                  "the grader's verdict file says failed" },
                { "{\"outcome\":\"failed\",\"exit_code\":2}", VERDICT_OK, "{\"passed\": true, \"detail\": \"ok\"}",
                  "passed", NULL, "ok" },
                { "{\"outcome\":\"failed\",\"exit_code\":2}", VERDICT_OK, "{\"score\": 1}", "failed", NULL,
                  "the grader exited with status 2" },
                { "{\"outcome\":\"completed\",\"exit_code\":0}", VERDICT_MALFORMED, NULL, "error", "verdict_file",
                  "not a verdict: WHY" },
                { "{\"outcome\":\"failed\",\"cause\":\"timeout\",\"detail\":\"ran past 1s\",\"exit_code\":null,"
                  "\"signal\":15}",
                  VERDICT_OK, "{\"passed\": true}", "error", "timeout", "ran past 1s" },
                { "{\"outcome\":\"failed\",\"cause\":\"out_of_memory\",\"exit_code\":137}", VERDICT_NONE, NULL, "error",
                  "out_of_memory", "no verdict" },
                { "{\"outcome\":\"failed\",\"signal\":15,\"exit_code\":null}", VERDICT_NONE, NULL, "void", "interrupted",
                  "interrupted by signal 15" },
                { "{\"outcome\":\"failed\",\"signal\":11,\"exit_code\":null}", VERDICT_NONE, NULL, "error", "signal",
                  "killed by signal 11" },
                { "{\"outcome\":\"void\",\"cause\":\"sandbox_unavailable\",\"detail\":\"no bwrap\"}", VERDICT_NONE,
                  NULL, "void", "sandbox_unavailable", "no bwrap" },
                { "{\"outcome\":\"running\"}", VERDICT_NONE, NULL, "void", "launcher_lost", "no final Outcome" },
                { NULL, VERDICT_NONE, NULL, "void", "launcher_lost", "no final Outcome" },
        };
        for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
                const struct decide_row *row = &rows[i];
                json_object *o = row->grader ? json_tokener_parse(row->grader) : NULL;
                struct grade_verdict v = { 0 };
                char why[64];
                if (row->verdict)
                        ck_assert_int_eq(grade_verdict_parse(row->verdict, strlen(row->verdict), &v, why, sizeof why), 0);
                struct grade g = { .exit_code = -1, .duration_ms = -1 };
                grade_decide(&g, o, row->state, &v, "WHY");
                ck_assert_msg(strcmp(grade_status_name(g.status), row->status) == 0, "row %zu: %s, not %s", i,
                              grade_status_name(g.status), row->status);
                ck_assert_msg((!g.cause && !row->cause) || (g.cause && row->cause && strcmp(g.cause, row->cause) == 0),
                              "row %zu: cause %s", i, g.cause ? g.cause : "(none)");
                ck_assert_msg(strstr(g.detail, row->detail), "row %zu: '%s' does not say '%s'", i, g.detail, row->detail);
                grade_done(&g);
                json_object_put(o);
        }
}
END_TEST

START_TEST(grade_json_has_every_field_null_where_unknown)
{
        struct grade g = { .status = GRADE_PASSED, .exit_code = 0, .duration_ms = 12, .layer = "overlayfs",
                           .harness = "shell", .has_score = true, .score = 0.5 };
        snprintf(g.detail, sizeof g.detail, "fine");
        json_object *j = grade_to_json(&g);
        const char *text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
        assert_contains(text, "{\"status\":\"passed\",\"cause\":null,\"score\":0.5,\"detail\":\"fine\",\"exit_code\":0,"
                              "\"signal\":null,\"duration_ms\":12,\"usage\":null,\"tokens\":null,\"layer\":\"overlayfs\",\"harness\":"
                              "\"shell\",\"graded_at\":\"");
        json_object_put(j);
        enum grade_status st;
        ck_assert_int_eq(grade_status_parse("void", &st), 0);
        ck_assert_int_eq(st, GRADE_VOID);
        ck_assert_int_eq(grade_status_parse("pass", &st), -EINVAL);
}
END_TEST

START_TEST(bwrap_has_overlays_when_its_help_lists_them_and_layers_have_names)
{
        /* What bubblewrap 0.8.0 and 0.11.1 print. */
        ck_assert(!cow_bwrap_help_has_overlay("    --bind SRC DEST              Bind mount the host path SRC on DEST\n"
                                              "    --tmpfs DEST                 Mount new tmpfs on DEST\n"));
        ck_assert(cow_bwrap_help_has_overlay("    --overlay-src SRC            Read files from SRC in the following overlay\n"
                                             "    --tmp-overlay DEST           Mount overlayfs on DEST, with writes going to "
                                             "an invisible tmpfs\n"));
        ck_assert(!cow_bwrap_help_has_overlay(NULL));
        /* The installed one, whichever it is, answers the same as its help. */
        struct proc_result r;
        char *help[] = { "/bin/sh", "-c", "bwrap --help 2>&1", NULL };
        run_argv(&r, NULL, help);
        _cleanup_free_ char *bwrap = find_on_path("bwrap", getenv("PATH") ? getenv("PATH") : TB_DEFAULT_PATH);
        if (bwrap)
                ck_assert(cow_bwrap_has_overlay(bwrap) == (strstr(r.out, "--tmp-overlay") != NULL));
        proc_result_free(&r);
        static const char *const names[] = { "auto", "bwrap-overlay", "overlayfs", "copy" };
        for (size_t i = 0; i < 4; i++) {
                enum cow_layer l;
                ck_assert_int_eq(cow_layer_parse(names[i], &l), 0);
                ck_assert_str_eq(cow_layer_name(l), names[i]);
        }
        enum cow_layer l;
        ck_assert_int_eq(cow_layer_parse("overlay", &l), -EINVAL);
}
END_TEST

START_TEST(bwraps_overlay_is_a_source_then_the_overlay_and_trialboxs_own_is_said_in_the_line)
{
        struct sandbox_spec spec = { 0 };
        sandbox_add(&spec, SANDBOX_TMP_OVERLAY, "/r/repo", "/r/repo");
        strv_add(&spec.command, "true");
        struct strv argv = { 0 };
        sandbox_argv(&spec, "bwrap", &argv);
        _cleanup_free_ char *line = strv_joined(&argv, "", "");
        assert_contains(line, " --overlay-src /r/repo --tmp-overlay /r/repo ");
        strv_done(&argv);
        spec.cow = (struct sandbox_cow){ .path = xstrdup("/r/repo"), .size = 1 << 20 };
        _cleanup_free_ char *shown = sandbox_render(&spec, "bwrap");
        assert_contains(shown, "# and, before bwrap, a copy-on-write overlay mounted by trialbox on /r/repo");
        sandbox_spec_done(&spec);
}
END_TEST

/* The batch holds every line: a grader given the same on many lines (an
 * Experiment's task) is one grader, however many lines give it. */
START_TEST(lines_giving_the_same_grade_share_one_grader)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *repo = path_in(dir, "repo");
        mkdir_p(repo, 0755);
        _cleanup_free_ char *path = path_in(dir, "plan.jsonl");
        write_text(path,
                   "{\"id\":\"1\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/1\","
                   "\"grade\":{\"harness\":\"shell\",\"args\":[\"t1\"],\"env\":{\"K\":\"v\"}}}\n"
                   "{\"id\":\"2\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/2\","
                   "\"grade\":{\"harness\":\"shell\",\"args\":[\"t2\"]}}\n"
                   "{\"id\":\"3\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/3\","
                   "\"grade\":{\"harness\":\"shell\",\"args\":[\"t1\"],\"env\":{\"K\":\"v\"}}}\n"
                   "{\"id\":\"4\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/4\"}\n",
                   0644);
        struct plan plan;
        struct tb_error err = { 0 };
        ck_assert_msg(plan_load(path, &plan, &err) == 0, "%s", err.msg);
        ck_assert_ptr_eq(plan.v[0].more->grade, plan.v[2].more->grade);
        ck_assert_ptr_ne(plan.v[0].more->grade, plan.v[1].more->grade);
        ck_assert_ptr_null(plan.v[3].more->grade);
        ck_assert_uint_eq(plan.n_graders, 2);
        ck_assert_str_eq(plan.v[1].more->grade->args.v[0], "t2");
        ck_assert_str_eq(plan.v[2].more->grade->args.v[0], "t1");
        ck_assert_uint_eq(plan.v[2].more->grade->env.n, 1);
        plan_done(&plan);
}
END_TEST

START_TEST(a_plan_lines_grade_and_labels_are_checked_and_become_grades_options)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *repo = path_in(dir, "repo");
        _cleanup_free_ char *files = path_in(dir, "files");
        mkdir_p(repo, 0755);
        mkdir_p(files, 0755);
        _cleanup_free_ char *path = path_in(dir, "plan.jsonl");
        write_text(path,
                   "{\"id\":\"t/a/1\",\"task\":\"t\",\"arm\":\"a\",\"labels\":{\"model\":\"m\",\"n\":3},"
                   "\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/1\",\"grade\":{\"harness\":\"shell\","
                   "\"files\":\"files\",\"args\":[\"/grader/t.sh\"],\"timeout\":30,\"cpus\":2,\"env\":{\"K\":\"v\"},"
                   "\"layer\":\"copy\"}}\n",
                   0644);
        struct plan plan;
        struct tb_error err = { 0 };
        ck_assert_msg(plan_load(path, &plan, &err) == 0, "%s", err.msg);
        const struct plan_trial *t = &plan.v[0];
        ck_assert_str_eq(t->more->task, "t");
        ck_assert_str_eq(t->more->arm, "a");
        ck_assert_str_eq(t->more->labels, "{\"model\":\"m\",\"n\":3}");
        ck_assert_uint_eq(t->more->grade->slots, 2);
        struct strv args = { 0 };
        plan_grade_args(t->more->grade, t->output_dir, t->repo, "/dev/fd/3", &args);
        _cleanup_free_ char *line = strv_joined(&args, "", "");
        /* The grader's env goes through a pipe, as a Trial's: no value in argv. */
        _cleanup_free_ char *want = xasprintf("grade --trial-dir %s --repo %s --harness shell --files %s --timeout 30 "
                                              "--cpus 2 --env-file /dev/fd/3 --layer copy -q -- /grader/t.sh",
                                              t->output_dir, repo, files);
        ck_assert_str_eq(line, want);
        assert_lacks(line, "K=v");
        strv_done(&args);
        /* The run's own arguments know nothing of it. */
        plan_trial_run_args(t, t->repo, NULL, &args);
        _cleanup_free_ char *run = strv_joined(&args, "", "");
        assert_lacks(run, "grade");
        assert_lacks(run, "model");
        strv_done(&args);
        plan_done(&plan);

        static const struct text_case bad[] = {
                { "\"labels\":{\"model\":[1]}", "field 'labels': 'model' must be a string or a number" },
                { "\"labels\":{\"1x\":1}", "field 'labels': a label's name must be 1 to 32 letters" },
                { "\"labels\":{\"a\":\"\"}", "field 'labels': 'a' must be a string of 1 to 128 bytes" },
                { "\"task\":\"\"", "field 'task': must be a string of 1 to 128 bytes of printable UTF-8" },
                { "\"arm\":\"a\\u0007b\"", "field 'arm': must be a string of 1 to 128 bytes of printable UTF-8" },
                { "\"grade\":{\"args\":[]}", "field 'grade.harness': is missing" },
                { "\"grade\":{\"harness\":\"shell\",\"timeout\":\"soon\"}", "field 'grade.timeout': value 'soon'" },
                { "\"grade\":{\"harness\":\"shell\",\"layer\":\"zfs\"}", "field 'grade.layer': 'zfs' is not one of" },
                { "\"grade\":{\"harness\":\"shell\",\"env\":{\"TRIALBOX_X\":\"1\"}}", "field 'grade.env': 'TRIALBOX_X'" },
                { "\"grade\":{\"harness\":\"shell\",\"env\":{\"PATH\":\"/x\"}}", "field 'grade.env': 'PATH' cannot be set" },
                { "\"grade\":{\"harness\":\"shell\",\"env\":{\"LD_PRELOAD\":\"/x\"}}", "field 'grade.env': 'LD_PRELOAD' cannot" },
                { "\"grade\":{\"harness\":\"shell\",\"files\":\"nowhere\"}", "field 'grade.files': '" },
                { "\"grade\":{\"harness\":\"shell\",\"files\":\"repo/hidden\"}", "field 'grade.files': '" },
                { "\"grade\":{\"harness\":\"shell\",\"cache\":1}", "field 'grade.cache': unknown field" },
                { "\"grade\":[1]", "field 'grade': must be an object" },
        };
        _cleanup_free_ char *hidden = path_in(dir, "repo/hidden");
        mkdir_p(hidden, 0755);
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
                _cleanup_free_ char *text = xasprintf("{\"id\":\"x\",\"harness\":\"shell\",\"repo\":\"repo\","
                                                      "\"output_dir\":\"o\",%s}\n",
                                                      bad[i].in);
                write_text(path, text, 0644);
                err = (struct tb_error){ 0 };
                ck_assert_int_eq(plan_load(path, &plan, &err), -EINVAL);
                ck_assert_msg(strstr(err.msg, bad[i].want), "row %zu: '%s' does not say '%s'", i, err.msg,
                              bad[i].want);
        }
        /* The grader's files inside the repository: where its session could read them. */
        write_text(path,
                   "{\"id\":\"x\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o\",\"grade\":{\"harness\":"
                   "\"shell\",\"files\":\"repo/hidden\"}}\n",
                   0644);
        ck_assert_int_eq(plan_load(path, &plan, &err), -EINVAL);
        assert_contains(err.msg, "where that session could read the grader's files");
}
END_TEST

START_TEST(labels_are_bounded)
{
        char where[64], why[256];
        json_object *j = json_tokener_parse("{\"a\":1,\"b\":\"x\",\"c\":1.5}");
        ck_assert_int_eq(labels_check(j, where, sizeof where, why, sizeof why), 0);
        json_object_put(j);
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "{");
        for (int i = 0; i <= LABELS_MAX; i++)
                strbuf_addf(&sb, "%s\"l%d\":%d", i ? "," : "", i, i);
        strbuf_add(&sb, "}");
        j = json_tokener_parse(sb.s);
        ck_assert_int_eq(labels_check(j, where, sizeof where, why, sizeof why), -EINVAL);
        assert_contains(why, "more than 16 labels");
        json_object_put(j);
        free(sb.s);
        j = json_tokener_parse("{\"a\":\"line\\nbreak\"}");
        ck_assert_int_eq(labels_check(j, where, sizeof where, why, sizeof why), -EINVAL);
        ck_assert_str_eq(where, "a");
        assert_contains(why, "control characters");
        json_object_put(j);
}
END_TEST

START_TEST(a_clone_keeps_modes_times_and_links_and_leaves_the_source_as_it_was)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *src = path_in(dir, "src");
        sh_ok("mkdir -p '%s/a/b' && cd '%s' && printf data > a/b/f && chmod 640 a/b/f && ln -s a/b/f link && "
              "chmod 4755 a && mkfifo pipe && touch -d 2001-02-03 a/b/f && chmod 750 a/b && printf x > exec && "
              "chmod 4755 exec",
              src, src);
        _cleanup_free_ char *before = tree_manifest(src);
        _cleanup_close_ int out = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct tree_clone_stats st;
        ck_assert_int_eq(tree_clone_at(AT_FDCWD, src, out, "copy", &st), 0);
        _cleanup_free_ char *after = tree_manifest(src);
        ck_assert_str_eq(before, after);
        ck_assert_uint_eq(st.files, 2);
        ck_assert_uint_eq(st.links, 1);
        ck_assert_uint_eq(st.dirs, 2);
        ck_assert_uint_eq(st.skipped, 1); /* the FIFO */
        _cleanup_free_ char *copy = path_in(dir, "copy");
        assert_file_in(copy, "a/b/f", "data");
        _cleanup_free_ char *f = path_in(copy, "a/b/f"), *b = path_in(copy, "a/b"), *x = path_in(copy, "exec");
        assert_mode(f, 0640);
        assert_mode(b, 0750);
        assert_mode(x, 0755); /* setuid never copied */
        struct stat s1, s2;
        _cleanup_free_ char *orig = path_in(src, "a/b/f");
        ck_assert(stat(orig, &s1) == 0 && stat(f, &s2) == 0);
        ck_assert(s1.st_mtim.tv_sec == s2.st_mtim.tv_sec && s1.st_uid == s2.st_uid);
        char target[64];
        _cleanup_free_ char *link = path_in(copy, "link");
        ssize_t n = readlink(link, target, sizeof target - 1);
        ck_assert(n > 0);
        target[n] = '\0';
        ck_assert_str_eq(target, "a/b/f");
        ck_assert(!exists_in(copy, "pipe"));
        /* A folder made again fails: nothing is overwritten. */
        ck_assert_int_eq(tree_clone_at(AT_FDCWD, src, out, "copy", NULL), -EEXIST);
}
END_TEST

TB_SUITE("grading", 0)
{
        (void)s;
        tcase_add_test(tc, the_verdict_file_is_checked_key_by_key);
        tcase_add_test(tc, the_grade_follows_from_the_graders_outcome_and_verdict);
        tcase_add_test(tc, grade_json_has_every_field_null_where_unknown);
        tcase_add_test(tc, bwrap_has_overlays_when_its_help_lists_them_and_layers_have_names);
        tcase_add_test(tc, bwraps_overlay_is_a_source_then_the_overlay_and_trialboxs_own_is_said_in_the_line);
        tcase_add_test(tc, a_plan_lines_grade_and_labels_are_checked_and_become_grades_options);
        tcase_add_test(tc, lines_giving_the_same_grade_share_one_grader);
        tcase_add_test(tc, labels_are_bounded);
        tcase_add_test(tc, a_clone_keeps_modes_times_and_links_and_leaves_the_source_as_it_was);
}
