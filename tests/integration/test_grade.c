/* Integration tests of `trialbox grade`: real graders of real Trials in the
 * real bwrap, on each copy-on-write layer this machine can make; graders
 * that write everywhere, hang, fill their layer, write bad verdicts, or
 * find their Trial's repository gone. The graded Trial's repository and
 * outcome.json never change. */
#define _GNU_SOURCE
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tb_test.h"
#include "base/util.h"

/* A Trial that ran (its session fixed a file), the grader's files beside it. */
struct graded {
        struct fixture f;
        char files[1100];
        char *manifest; /* of the repository after the Trial */
        char *outcome;  /* outcome.json's bytes */
        size_t outcome_len;
};

static void graded_new(struct graded *g, const char *session)
{
        fixture_new(&g->f);
        sh_ok("cd '%s' && git init -q && echo broken > code && " GIT " add -A && " GIT " commit -qm one", g->f.repo);
        snprintf(g->files, sizeof g->files, "%s/files", g->f.dir);
        mkdir_p(g->files, 0755);
        write_in(g->files, "check.sh", "#!/bin/sh\ngrep -q fixed code\n", 0755);
        struct proc_result r;
        tb_shell(&r, &g->f, NULL, EXTRA("--", "-c", session));
        ck_assert_msg(r.status == 0 || r.status == 1, "the Trial: status %d; %s", r.status, r.err);
        proc_result_free(&r);
        g->manifest = tree_manifest(g->f.repo);
        _cleanup_free_ char *path = path_in(g->f.out, "outcome.json");
        g->outcome = read_all(path, &g->outcome_len, false);
        ck_assert(g->outcome != NULL);
}

/* Nothing of the Trial changed: its repository, to the inode and the
 * change time, and its outcome.json, to the byte. */
static void assert_trial_unchanged(const struct graded *g)
{
        _cleanup_free_ char *now = tree_manifest(g->f.repo);
        size_t i = 0;
        while (now[i] && now[i] == g->manifest[i])
                i++;
        while (i > 0 && now[i - 1] != '\n')
                i--;
        ck_assert_msg(strcmp(now, g->manifest) == 0, "the Trial's repository changed, from:\n%.300s\nto:\n%.300s",
                      g->manifest + i, now + i);
        _cleanup_free_ char *path = path_in(g->f.out, "outcome.json");
        size_t len = 0;
        _cleanup_free_ char *bytes = read_all(path, &len, false);
        ck_assert_msg(bytes && len == g->outcome_len && memcmp(bytes, g->outcome, len) == 0,
                      "the Trial's outcome.json changed:\n%s\n%s", g->outcome, bytes ? bytes : "(gone)");
}

static void graded_free(struct graded *g)
{
        free(g->manifest);
        free(g->outcome);
        fixture_free(&g->f);
}

/* `trialbox grade` of the fixture's Trial with `extra` options, then the grader's args. */
static void grade(struct proc_result *r, const struct graded *g, char *const env[], const char *const extra[],
                  const char *const args[])
{
        const char *argv[48] = { "grade", "--trial-dir", g->f.out, "--repo", g->f.repo, "--harness", "shell",
                                 "--files", g->files };
        size_t n = 9;
        for (size_t i = 0; extra && extra[i] && n + 2 < 48; i++)
                argv[n++] = extra[i];
        argv[n++] = "--";
        for (size_t i = 0; args && args[i] && n + 1 < 48; i++)
                argv[n++] = args[i];
        argv[n] = NULL;
        tb_command(r, env, argv);
}

#define GRADE_OF(g, field, want) assert_record((g)->f.out, "grade.json", (field), (want))

/* A grader that writes everywhere it can: new files, a changed file, a
 * removed one, a renamed folder, modes, a commit, .git itself. */
static const char everywhere[] =
        "set -u; pwd > \"$HOME/cwd\"; grep -q fixed code || exit 1; "
        "echo new > new-file; echo more >> code; chmod 600 code; mkdir -p sub/deep && echo x > sub/deep/f; "
        "mv sub sub2; ln -s code link; " GIT " add -A >/dev/null 2>&1; " GIT " commit -qm grader >/dev/null 2>&1; "
        "rm -rf .git; rm -f code; "
        "printf '{\"passed\": true, \"score\": 0.75, \"detail\": \"%s\"}' \"$(cat \"$HOME/cwd\")\" > \"$TRIALBOX_GRADE_FILE\"";

static void grade_on_layer(const char *layer, char *const env[])
{
        struct graded g;
        graded_new(&g, "echo fixed > code");
        struct proc_result r;
        grade(&r, &g, env, EXTRA("--layer", layer, "--json"), EXTRA("-c", everywhere));
        ck_assert_msg(r.status == 0, "layer %s: status %d; %s", layer, r.status, r.err);
        GRADE_OF(&g, "status", "passed");
        GRADE_OF(&g, "layer", layer);
        GRADE_OF(&g, "score", "0.75");
        /* The grader worked in the repository at its own path. */
        GRADE_OF(&g, "detail", g.f.repo);
        assert_contains(r.out, "\"status\":\"passed\"");
        /* Its home is its own, in the Trial's folder; nothing of a copy is left. */
        _cleanup_free_ char *home = path_in(g.f.out, "grade/home");
        ck_assert(exists_in(home, "cwd"));
        ck_assert(!exists_in(g.f.out, "grade/layer"));
        assert_trial_unchanged(&g);
        proc_result_free(&r);
        graded_free(&g);
}

START_TEST(a_grader_writes_on_an_overlay_and_the_repository_stays_as_the_session_left_it)
{
        grade_on_layer("overlayfs", NULL);
}
END_TEST

START_TEST(a_grader_writes_on_a_copy_and_the_repository_stays_as_the_session_left_it)
{
        grade_on_layer("copy", NULL);
}
END_TEST

/* bwrap's own overlays need bubblewrap 0.11 (Debian 12 has 0.8):
 * TRIALBOX_TEST_OVERLAY_BWRAP names one to use. */
START_TEST(a_grader_writes_on_bwraps_overlay_and_the_repository_stays_as_the_session_left_it)
{
        const char *bwrap = getenv("TRIALBOX_TEST_OVERLAY_BWRAP");
        if (!bwrap || access(bwrap, X_OK) != 0) {
                skip_note("bwrap-overlay", "no bubblewrap 0.11 or later: set TRIALBOX_TEST_OVERLAY_BWRAP to one");
                return;
        }
        _cleanup_free_ char *var = xasprintf("TRIALBOX_BWRAP=%s", bwrap);
        grade_on_layer("bwrap-overlay", ENV(var));
}
END_TEST

START_TEST(the_best_layer_is_chosen_and_recorded)
{
        struct graded g;
        graded_new(&g, "echo fixed > code");
        struct proc_result r;
        grade(&r, &g, NULL, NULL, EXTRA("/grader/check.sh"));
        ck_assert_msg(r.status == 0, "status %d; %s", r.status, r.err);
        GRADE_OF(&g, "status", "passed");
        /* This machine's bwrap (0.8) has no overlays; its kernel mounts overlayfs in a user namespace. */
        _cleanup_free_ char *layer = record_field(g.f.out, "grade.json", "layer");
        ck_assert_msg(strcmp(layer, "overlayfs") == 0 || strcmp(layer, "bwrap-overlay") == 0 ||
                              strcmp(layer, "copy") == 0,
                      "layer '%s'", layer);
        GRADE_OF(&g, "detail", "the grader exited with status 0");
        GRADE_OF(&g, "exit_code", "0");
        proc_result_free(&r);

        /* Its files are read-only; the verdict of the exit status is failed. */
        grade(&r, &g, NULL, NULL, EXTRA("-c", "echo x > /grader/planted; test -e /grader/planted"));
        ck_assert_int_eq(r.status, 1);
        GRADE_OF(&g, "status", "failed");
        ck_assert(!exists_in(g.files, "planted"));
        /* The earlier grade was moved aside, whole. */
        _cleanup_free_ char *aside = path_in(g.f.out, "grade.attempt-1");
        assert_record(aside, "grade.json", "status", "passed");
        assert_trial_unchanged(&g);
        proc_result_free(&r);
        graded_free(&g);
}
END_TEST

START_TEST(a_grader_that_hangs_is_stopped_by_its_timeout_as_an_error)
{
        struct graded g;
        graded_new(&g, "echo fixed > code");
        struct proc_result r;
        grade(&r, &g, NULL, EXTRA("--timeout", "1s", "--kill-after", "1s"),
              EXTRA("-c", "echo '{\"passed\": true}' > \"$TRIALBOX_GRADE_FILE\"; sleep 600"));
        ck_assert_msg(r.status == 3, "status %d (error: 3); %s", r.status, r.err);
        GRADE_OF(&g, "status", "error");
        GRADE_OF(&g, "cause", "timeout");
        _cleanup_free_ char *ms = record_field(g.f.out, "grade.json", "duration_ms");
        ck_assert_msg(atoll(ms) >= 1000 && atoll(ms) < 30000, "duration %s ms", ms);
        assert_trial_unchanged(&g);
        proc_result_free(&r);
        graded_free(&g);
}
END_TEST

/* Limits need a cgroup, which trialbox has as root (as nobody, a limited
 * grade is void with the fix: the limits tests' case). */
START_TEST(a_grader_that_fills_its_layer_stops_at_its_memory)
{
        if (geteuid() != 0) {
                skip_note("fill", "memory limits need root's cgroups here");
                return;
        }
        struct graded g;
        graded_new(&g, "echo fixed > code");
        struct proc_result r;
        grade(&r, &g, NULL, EXTRA("--layer", "overlayfs", "--memory", "64M", "--timeout", "60s"),
              EXTRA("-c", "dd if=/dev/zero of=big bs=1M count=256 2>/dev/null; ls -l big >&2; exit 0"));
        _cleanup_free_ char *status = record_field(g.f.out, "grade.json", "status");
        ck_assert_msg(r.status == 0 || r.status == 3, "status %d; %s", r.status, r.err);
        ck_assert_msg(strcmp(status, "passed") == 0 || strcmp(status, "error") == 0, "status %s", status);
        /* Whatever it managed to write was never more than the layer holds, and is gone. */
        if (strstr(r.err, " big"))
                ck_assert_msg(!strstr(r.err, "268435456"), "256 MiB written: %s", r.err);
        ck_assert(!exists_in(g.f.repo, "big"));
        assert_trial_unchanged(&g);
        proc_result_free(&r);
        graded_free(&g);
}
END_TEST

struct verdict_case {
        const char *setup; /* the grader's script */
        const char *status, *cause, *detail;
};

START_TEST(a_verdict_file_decides_and_a_bad_one_is_an_error)
{
        static const struct verdict_case cases[] = {
                { "echo '{\"passed\": false, \"detail\": \"2 of 3\"}' > \"$TRIALBOX_GRADE_FILE\"", "failed", "null",
                  "2 of 3" },
                { "echo '{\"score\": 3}' > \"$TRIALBOX_GRADE_FILE\"; exit 1", "failed", "null",
                  "the grader exited with status 1" },
                { "echo 'not json' > \"$TRIALBOX_GRADE_FILE\"", "error", "verdict_file", "not JSON" },
                { "echo '{\"pass\": true}' > \"$TRIALBOX_GRADE_FILE\"", "error", "verdict_file",
                  "key 'pass' is not one of passed, score, detail" },
                { "echo '{\"score\": NaN}' > \"$TRIALBOX_GRADE_FILE\"", "error", "verdict_file",
                  "'score' is not a finite number" },
                { "ln -s /etc/passwd \"$TRIALBOX_GRADE_FILE\"", "error", "verdict_file", "a symbolic link" },
                { "mkfifo \"$TRIALBOX_GRADE_FILE\"", "error", "verdict_file", "not a regular file" },
                { "mkdir \"$TRIALBOX_GRADE_FILE\"", "error", "verdict_file", "a folder" },
                { "head -c 70000 /dev/zero | tr '\\0' ' ' > \"$TRIALBOX_GRADE_FILE\"", "error", "verdict_file",
                  "larger than 65536 bytes" },
        };
        struct graded g;
        graded_new(&g, "echo fixed > code");
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
                const struct verdict_case *c = &cases[i];
                struct proc_result r;
                grade(&r, &g, NULL, EXTRA("--timeout", "20s"), EXTRA("-c", c->setup));
                int want = strcmp(c->status, "failed") == 0 ? 1 : 3;
                ck_assert_msg(r.status == want, "case %zu: status %d, not %d; %s", i, r.status, want, r.err);
                GRADE_OF(&g, "status", c->status);
                GRADE_OF(&g, "cause", c->cause);
                _cleanup_free_ char *detail = record_field(g.f.out, "grade.json", "detail");
                ck_assert_msg(strstr(detail, c->detail), "case %zu: detail '%s' does not say '%s'", i, detail,
                              c->detail);
                proc_result_free(&r);
        }
        assert_trial_unchanged(&g);
        graded_free(&g);
}
END_TEST

START_TEST(a_trial_repository_that_is_gone_voids_the_grade_until_it_is_back)
{
        struct graded g;
        graded_new(&g, "echo fixed > code");
        _cleanup_free_ char *moved = path_in(g.f.dir, "moved");
        ck_assert_int_eq(rename(g.f.repo, moved), 0);
        struct proc_result r;
        grade(&r, &g, NULL, NULL, EXTRA("/grader/check.sh"));
        ck_assert_msg(r.status == 125, "status %d (void: 125); %s", r.status, r.err);
        GRADE_OF(&g, "status", "void");
        GRADE_OF(&g, "cause", "repository_gone");
        _cleanup_free_ char *detail = record_field(g.f.out, "grade.json", "detail");
        assert_contains(detail, g.f.repo);
        GRADE_OF(&g, "layer", "null");
        proc_result_free(&r);
        /* Put back, it is graded (the void grade moved aside). The moves
         * changed the folder's own change time: that is the test's. */
        ck_assert_int_eq(rename(moved, g.f.repo), 0);
        free(g.manifest);
        g.manifest = tree_manifest(g.f.repo);
        grade(&r, &g, NULL, NULL, EXTRA("/grader/check.sh"));
        ck_assert_msg(r.status == 0, "status %d; %s", r.status, r.err);
        GRADE_OF(&g, "status", "passed");
        _cleanup_free_ char *aside = path_in(g.f.out, "grade.attempt-1");
        assert_record(aside, "grade.json", "cause", "repository_gone");
        assert_trial_unchanged(&g);
        proc_result_free(&r);
        graded_free(&g);
}
END_TEST

START_TEST(only_a_trial_that_ran_is_graded_and_only_in_the_sandbox)
{
        struct fixture f;
        fixture_new(&f);
        struct proc_result r;
        tb_shell(&r, &f, NULL, EXTRA("--harness-bin", "/nonexistent/agent", "--", "-c", "true"));
        ck_assert_int_eq(r.status, 125);
        proc_result_free(&r);
        tb_command(&r, NULL, EXTRA("grade", "--trial-dir", f.out, "--repo", f.repo, "--harness", "shell", "--", "-c",
                                   "true"));
        ck_assert_msg(r.status == 2, "status %d; %s", r.status, r.err);
        assert_contains(r.err, "is void: a grader runs only after a Trial that completed or failed");
        ck_assert(!exists_in(f.out, "grade.json"));
        proc_result_free(&r);
        fixture_free(&f);

        struct graded g;
        graded_new(&g, "echo fixed > code");
        grade(&r, &g, ENV("TRIALBOX_NO_SANDBOX=1"), NULL, EXTRA("/grader/check.sh"));
        ck_assert_int_eq(r.status, 125);
        GRADE_OF(&g, "status", "void");
        GRADE_OF(&g, "cause", "sandbox_unavailable");
        assert_trial_unchanged(&g);
        proc_result_free(&r);
        graded_free(&g);
}
END_TEST

START_TEST(a_layer_asked_for_that_cannot_be_made_here_voids_the_grade)
{
        struct graded g;
        graded_new(&g, "echo fixed > code");
        struct proc_result r;
        char *help[] = { "/bin/sh", "-c", "bwrap --help 2>&1", NULL };
        run_argv(&r, NULL, help);
        bool old = !strstr(r.out, "--tmp-overlay");
        proc_result_free(&r);
        if (!old) {
                skip_note("bwrap-overlay", "this bwrap has overlays");
                graded_free(&g);
                return;
        }
        grade(&r, &g, NULL, EXTRA("--layer", "bwrap-overlay"), EXTRA("/grader/check.sh"));
        ck_assert_msg(r.status == 125, "status %d; %s", r.status, r.err);
        GRADE_OF(&g, "status", "void");
        GRADE_OF(&g, "cause", "sandbox_unavailable");
        _cleanup_free_ char *detail = record_field(g.f.out, "grade.json", "detail");
        assert_contains(detail, "bubblewrap 0.11 or later");
        assert_trial_unchanged(&g);
        proc_result_free(&r);
        graded_free(&g);
}
END_TEST

/* The grader's own variables: --env for plain ones (its value is in argv),
 * --env-file for secrets, and a plan's grade.env through the batch's pipe;
 * the names a Trial's env may not set are refused, and a refused value is
 * never said. */
START_TEST(a_graders_variables_reach_it_and_its_secrets_stay_out_of_argv_and_messages)
{
        struct graded g;
        graded_new(&g, "echo fixed > code");
        _cleanup_free_ char *secret = marker("grader-secret");
        _cleanup_free_ char *env_json = xasprintf("{\"SECRET\": \"%s\"}", secret);
        _cleanup_free_ char *env_file = path_in(g.f.dir, "grader.env");
        write_text(env_file, env_json, 0600);
        static const char says[] = "printf '{\"passed\": true, \"detail\": \"%s|%s\"}' \"$PLAIN\" \"$SECRET\" "
                                   "> \"$TRIALBOX_GRADE_FILE\"";
        struct proc_result r;
        grade(&r, &g, NULL, EXTRA("--env", "PLAIN=p", "--env-file", env_file), EXTRA("-c", says));
        ck_assert_msg(r.status == 0, "status %d; %s", r.status, r.err);
        _cleanup_free_ char *want = xasprintf("p|%s", secret);
        GRADE_OF(&g, "detail", want);
        proc_result_free(&r);

        /* Refused, with nothing graded and the value never said. */
        _cleanup_free_ char *path_env = xasprintf("PATH=%s", secret);
        grade(&r, &g, NULL, EXTRA("--env", path_env), EXTRA("-c", says));
        ck_assert_int_eq(r.status, 2);
        assert_contains(r.err, "'PATH' cannot be set");
        assert_lacks(r.err, secret);
        proc_result_free(&r);
        _cleanup_free_ char *bad_json = xasprintf("{\"LD_PRELOAD\": \"%s\"}", secret);
        write_text(env_file, bad_json, 0600);
        grade(&r, &g, NULL, EXTRA("--env-file", env_file), EXTRA("-c", says));
        ck_assert_msg(r.status == 2, "status %d; %s", r.status, r.err);
        assert_contains(r.err, "'LD_PRELOAD' cannot be set");
        assert_lacks(r.err, secret);
        proc_result_free(&r);

        /* A plan's grade.env: handed over through the batch's pipe. */
        _cleanup_free_ char *plan = path_in(g.f.dir, "plan.jsonl");
        _cleanup_free_ char *out = path_in(g.f.dir, "batch-out");
        _cleanup_free_ char *line = xasprintf(
                "{\"id\":\"t\",\"harness\":\"shell\",\"repo\":\"%s\",\"output_dir\":\"%s\",\"args\":[\"-c\",\"true\"],"
                "\"grade\":{\"harness\":\"shell\",%s\"files\":\"%s\",\"env\":{\"SECRET\":\"%s\"},"
                "\"args\":[\"-c\",\"printf '{\\\"passed\\\": true, \\\"detail\\\": \\\"%%s\\\"}' \\\"$SECRET\\\" > "
                "\\\"$TRIALBOX_GRADE_FILE\\\"\"]}}\n",
                g.f.repo, out, geteuid() == 0 ? "\"root_session\":true," : "", g.files, secret);
        write_plan(plan, line);
        tb_command(&r, NULL, EXTRA("batch", plan, "-q"));
        ck_assert_msg(r.status == 0, "batch: status %d; %s", r.status, r.err);
        assert_record(out, "grade.json", "detail", secret);
        _cleanup_free_ char *log = read_text_in(out, "grade.log");
        assert_lacks(log, secret);
        proc_result_free(&r);
        graded_free(&g);
}
END_TEST

TB_SUITE("grade", 120)
{
        (void)s;
        tcase_add_test(tc, a_grader_writes_on_an_overlay_and_the_repository_stays_as_the_session_left_it);
        tcase_add_test(tc, a_grader_writes_on_a_copy_and_the_repository_stays_as_the_session_left_it);
        tcase_add_test(tc, a_grader_writes_on_bwraps_overlay_and_the_repository_stays_as_the_session_left_it);
        tcase_add_test(tc, the_best_layer_is_chosen_and_recorded);
        tcase_add_test(tc, a_grader_that_hangs_is_stopped_by_its_timeout_as_an_error);
        tcase_add_test(tc, a_grader_that_fills_its_layer_stops_at_its_memory);
        tcase_add_test(tc, a_verdict_file_decides_and_a_bad_one_is_an_error);
        tcase_add_test(tc, a_trial_repository_that_is_gone_voids_the_grade_until_it_is_back);
        tcase_add_test(tc, only_a_trial_that_ran_is_graded_and_only_in_the_sandbox);
        tcase_add_test(tc, a_layer_asked_for_that_cannot_be_made_here_voids_the_grade);
        tcase_add_test(tc, a_graders_variables_reach_it_and_its_secrets_stay_out_of_argv_and_messages);
}
