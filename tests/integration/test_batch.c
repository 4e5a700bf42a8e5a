/* Integration tests of `trialbox batch` and `trialbox report`: real plans of
 * `shell` Trials in the real bwrap, real signals (a batch SIGKILLed and run
 * again), real clones. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <json-c/json.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tb_test.h"
#include "base/util.h"

/* `trialbox run` takes --timeout: the twelve-Trial plan has its timed-out
 * row. */
#ifndef RUN_HAS_TIMEOUT
#define RUN_HAS_TIMEOUT 1
#endif

struct exp {
        char *dir;  /* the Experiment's folder: plan.jsonl, repo/, out/ */
        char plan[1100], repo[1100], results[1100];
};

static void exp_new(struct exp *e)
{
        e->dir = tmpdir_new();
        snprintf(e->plan, sizeof e->plan, "%s/plan.jsonl", e->dir);
        snprintf(e->repo, sizeof e->repo, "%s/repo", e->dir);
        snprintf(e->results, sizeof e->results, "%s/plan.results.jsonl", e->dir);
        mkdir_p(e->repo, 0755);
        chmod(e->repo, 0777); /* the unprivileged run writes markers into it */
}

static void exp_free(struct exp *e)
{
        tmpdir_remove(e->dir);
        free(e->dir);
}

/* A `shell` Trial line: id, output out/ID, the shared repo, a script and extra fields. */
static void add_trial(struct strbuf *plan, const char *id, const char *script, const char *extra)
{
        json_object *s = json_object_new_string(script);
        strbuf_addf(plan, "{\"id\":\"%s\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/%s\","
                          "\"args\":[\"-c\",%s]%s%s}\n",
                    id, id, json_object_to_json_string(s), extra ? "," : "", extra ? extra : "");
        json_object_put(s);
}

/* The same, with a repository of its own (repos/ID): Trials that must run
 * at once cannot share one (a plan's Trials sharing a repository run one
 * after the other). */
static void add_trial_own(struct strbuf *plan, const struct exp *e, const char *id, const char *script)
{
        _cleanup_free_ char *rel = xasprintf("repos/%s", id);
        _cleanup_free_ char *dir = path_in(e->dir, rel);
        mkdir_p(dir, 0755);
        chmod(dir, 0777); /* the unprivileged run writes markers into it */
        json_object *s = json_object_new_string(script);
        strbuf_addf(plan, "{\"id\":\"%s\",\"harness\":\"shell\",\"repo\":\"%s\",\"output_dir\":\"out/%s\","
                          "\"args\":[\"-c\",%s]}\n",
                    id, rel, id, json_object_to_json_string(s));
        json_object_put(s);
}

/* The lines of every repos/ID/NAME together. */
static size_t lines_across(const struct exp *e, const char *name)
{
        _cleanup_free_ char *cmd = xasprintf("cat '%s'/repos/*/%s 2>/dev/null", e->dir, name);
        FILE *f = popen(cmd, "r");
        size_t n = 0;
        for (int c; f && (c = fgetc(f)) != EOF;)
                n += c == '\n';
        if (f)
                pclose(f);
        return n;
}

static void batch_env(struct proc_result *r, const struct exp *e, const char *env, const char *const extra[])
{
        char *argv[32] = { TRIALBOX_BIN, "batch", (char *)e->plan };
        size_t n = 3;
        for (size_t i = 0; extra && extra[i] && n + 1 < 32; i++)
                argv[n++] = (char *)extra[i];
        argv[n] = NULL;
        run_argv(r, tb_env(ENV("TRIALBOX_BATCH_BACKOFF_MS=1", (char *)env)), argv);
}

static void batch(struct proc_result *r, const struct exp *e, const char *const extra[])
{
        batch_env(r, e, NULL, extra);
}

/* The results line of Trial `id`, parsed (NULL when there is none). */
static json_object *result_of(const struct exp *e, const char *id) { return results_line(e->results, id); }

static void assert_result(const struct exp *e, const char *id, const char *field, const char *want)
{
        json_object *j = result_of(e, id), *v = NULL;
        ck_assert_msg(j != NULL, "no results line for '%s'", id);
        ck_assert_msg(json_object_object_get_ex(j, field, &v), "results line of '%s' has no '%s'", id, field);
        const char *got = v ? json_object_get_string(v) : "null";
        ck_assert_msg(strcmp(got, want) == 0, "'%s' %s is '%s', not '%s'", id, field, got, want);
        json_object_put(j);
}

/* How many times `line` is a line of `path`. */
static size_t count_in(const char *path, const char *line)
{
        _cleanup_free_ char *text = read_text(path);
        return text ? count_line(text, line) : 0;
}

/* How many times `line` is a line of DIR/REL. */
static size_t count_at(const char *dir, const char *rel, const char *line)
{
        _cleanup_free_ char *p = path_in(dir, rel);
        return count_in(p, line);
}

/* How many lines `path` has (0 when it is missing). */
static size_t lines_of(const char *path)
{
        _cleanup_free_ char *text = read_text(path);
        return text ? count_lines(text) : 0;
}

START_TEST(a_plan_of_twelve_gives_its_results_summary_and_exit_status)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        char id[16];
        for (int i = 0; i < 6; i++) {
                snprintf(id, sizeof id, "ok%d", i);
                add_trial(&plan, id, "echo ran >> marker-ok", NULL);
        }
        for (int i = 0; i < 3; i++) {
                snprintf(id, sizeof id, "fail%d", i);
                add_trial(&plan, id, "echo ran >> marker-fail; exit 3", NULL);
        }
        /* Void every time: bwrap refuses their sandbox (a missing binary
         * would be refused by the batch's checks before anything runs). */
        add_trial(&plan, "void0", "true", NULL);
        add_trial(&plan, "void1", "true", NULL);
#if RUN_HAS_TIMEOUT
        add_trial(&plan, "slow", "sleep 60", "\"timeout\":\"1s\"");
#else
        add_trial(&plan, "ok6", "echo ran >> marker-ok", NULL);
#endif
        write_plan(e.plan, plan.s);
        free(plan.s);

        struct proc_result r;
        batch_env(&r, &e, "TRIALBOX_BWRAP=" FAKE("bwrap-refuses-void"), EXTRA("--jobs", "3", "--retries", "1"));
        ck_assert_msg(r.status == 1, "status %d (any void: 1); stderr:\n%s", r.status, r.err);
        ck_assert_uint_eq(lines_of(e.results), 12);
        assert_result(&e, "ok0", "outcome", "completed");
        assert_result(&e, "ok0", "attempts", "1");
        assert_result(&e, "fail2", "outcome", "failed");
        assert_result(&e, "fail2", "exit_code", "3");
        assert_result(&e, "fail2", "attempts", "1");
        assert_result(&e, "void0", "outcome", "void");
        assert_result(&e, "void0", "cause", "sandbox_unavailable");
        assert_result(&e, "void0", "attempts", "2");
        assert_result(&e, "void1", "attempts", "2");
#if RUN_HAS_TIMEOUT
        assert_result(&e, "slow", "outcome", "failed");
        assert_result(&e, "slow", "cause", "timeout");
        assert_contains(r.out, "failed/timeout 1");
#endif
        /* The summary: per Harness × outcome, and the causes. */
        ck_assert_msg(strstr(r.out, "shell") && strstr(r.out, "void/sandbox_unavailable 2") &&
                              strstr(r.out, "failed/nonzero_exit 3"),
                      "summary:\n%s", r.out);
        ck_assert_uint_eq(count_at(e.repo, "marker-ok", "ran"), RUN_HAS_TIMEOUT ? 6 : 7);
        ck_assert_uint_eq(count_at(e.repo, "marker-fail", "ran"), 3);
        proc_result_free(&r);

        /* report prints the same table again, and as CSV and JSON. */
        char *argv[] = { TRIALBOX_BIN, "report", e.results, "--csv", NULL };
        run_argv(&r, NULL, argv);
        ck_assert_int_eq(r.status, 0);
        ck_assert_msg(strstr(r.out, RUN_HAS_TIMEOUT ? "\nshell,12,6,4,2,0," : "\nshell,12,7,3,2,0,"), "csv:\n%s",
                      r.out);
        proc_result_free(&r);
        argv[3] = "--json";
        run_argv(&r, NULL, argv);
        json_object *j = json_tokener_parse(r.out);
        ck_assert_msg(j != NULL, "not JSON: %s", r.out);
        json_object_put(j);
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

/* Run the batch in the background until `marker` has `lines` lines, then SIGKILL it. */
static void batch_killed_after(const struct exp *e, const char *marker, size_t lines, const char *jobs)
{
        char *argv[] = { TRIALBOX_BIN, "batch", (char *)e->plan, "--jobs", (char *)jobs, "-q", NULL };
        pid_t pid = spawn_argv(tb_env(ENV("TRIALBOX_BATCH_BACKOFF_MS=1")), argv, "/dev/null", "/dev/null");
        for (int i = 0; i < 600; i++) {
                if (lines_of(marker) >= lines)
                        break;
                usleep(50 * 1000);
        }
        kill(pid, SIGKILL);
        wait_status(pid);
}

START_TEST(a_batch_killed_midway_and_run_again_finishes_every_trial_once)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        char id[16], script[128];
        for (int i = 0; i < 8; i++) {
                snprintf(id, sizeof id, "t%d", i);
                snprintf(script, sizeof script, "echo %s >> marker; sleep 0.4", id);
                add_trial(&plan, id, script, NULL);
        }
        write_plan(e.plan, plan.s);
        free(plan.s);
        char *marker = path_in(e.repo, "marker");
        batch_killed_after(&e, marker, 3, "2");

        struct proc_result r;
        batch(&r, &e, EXTRA("--jobs", "2"));
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        for (int i = 0; i < 8; i++) {
                snprintf(id, sizeof id, "t%d", i);
                ck_assert_msg(count_in(marker, id) == 1, "Trial %s ran %zu times", id, count_in(marker, id));
                assert_result(&e, id, "outcome", "completed");
                assert_result(&e, id, "attempts", "1");
        }
        proc_result_free(&r);
        /* Once more: nothing runs again. */
        batch(&r, &e, EXTRA("--jobs", "2"));
        ck_assert_int_eq(r.status, 0);
        ck_assert_uint_eq(lines_of(marker), 8);
        proc_result_free(&r);
        free(marker);
        exp_free(&e);
}
END_TEST

START_TEST(void_trials_run_again_in_folders_of_their_own_and_failed_ones_do_not)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        add_trial(&plan, "void", "true", NULL); /* bwrap refuses its sandbox */
        add_trial(&plan, "fail", "echo ran >> marker; exit 1", NULL);
        write_plan(e.plan, plan.s);
        free(plan.s);
        struct proc_result r;
        const char *refuses = "TRIALBOX_BWRAP=" FAKE("bwrap-refuses-void");
        batch_env(&r, &e, refuses, EXTRA("--retries", "2"));
        ck_assert_int_eq(r.status, 1);
        assert_result(&e, "void", "attempts", "3");
        ck_assert(exists_in(e.dir, "out/void.attempt-1/outcome.json"));
        ck_assert(exists_in(e.dir, "out/void.attempt-2/outcome.json"));
        ck_assert(exists_in(e.dir, "out/void/outcome.json"));
        ck_assert(!exists_in(e.dir, "out/void.attempt-3"));
        assert_result(&e, "fail", "attempts", "1");
        ck_assert(!exists_in(e.dir, "out/fail.attempt-1"));
        ck_assert_uint_eq(count_at(e.repo, "marker", "ran"), 1);
        proc_result_free(&r);
        /* A resumed batch with more retries gives the void one more attempts; the failed none. */
        batch_env(&r, &e, refuses, EXTRA("--retries", "3"));
        ck_assert_int_eq(r.status, 1);
        assert_result(&e, "void", "attempts", "4");
        ck_assert_uint_eq(count_at(e.repo, "marker", "ran"), 1);
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

START_TEST(a_lost_launcher_is_void_kept_aside_and_runs_again)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        add_trial(&plan, "t", "echo ran >> marker", NULL);
        write_plan(e.plan, plan.s);
        free(plan.s);
        /* A running record whose launcher is gone (a pid that has exited). */
        pid_t gone = fork();
        if (gone == 0)
                _exit(0);
        waitpid(gone, NULL, 0);
        char boot[64] = "";
        char *b = read_text("/proc/sys/kernel/random/boot_id");
        snprintf(boot, sizeof boot, "%.36s", b);
        free(b);
        char rec[256];
        /* The token this batch's run would have echoed (its launcher.json holds it). */
        static const char nonce[] = "0123456789abcdef0123456789abcdef";
        snprintf(rec, sizeof rec,
                 "{\"harness\":\"shell\",\"outcome\":\"running\",\"pid\":%d,\"boot_id\":\"%s\",\"launcher_nonce\":\"%s\"}\n",
                 (int)gone, boot, nonce);
        write_in(e.dir, "out/t/outcome.json", rec, 0644);
        _cleanup_free_ char *launcher = xasprintf("{\"outcome\":\"running\",\"pid\":%d,\"nonce\":\"%s\"}\n", (int)gone, nonce);
        write_in(e.dir, "out/t/launcher.json", launcher, 0600);

        struct proc_result r;
        batch(&r, &e, NULL);
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        assert_result(&e, "t", "outcome", "completed");
        assert_result(&e, "t", "attempts", "2");
        char *kept = path_in(e.dir, "out/t.attempt-1");
        char *cause = outcome_field(kept, "cause");
        ck_assert_str_eq(cause, "launcher_lost");
        _cleanup_free_ char *detail = outcome_field(kept, "detail");
        assert_contains(detail, "its launcher was lost");
        free(cause);
        free(kept);
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

/* A record the batch cannot read (not JSON, a folder in its place, no
 * permission; or its launcher.json, with no outcome.json) is not "no
 * record": the batch says which file and why, and never runs the Trial a
 * second time on that guess. */
START_TEST(a_record_the_batch_cannot_read_is_said_and_its_trial_never_runs_again)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        static const char *const ids[] = { "garbled", "folder", "launcher", "denied" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(ids); i++) {
                _cleanup_free_ char *script = xasprintf("echo %s >> marker", ids[i]);
                add_trial(&plan, ids[i], script, NULL);
        }
        write_plan(e.plan, plan.s);
        free(plan.s);
        struct proc_result r;
        batch(&r, &e, NULL);
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        proc_result_free(&r);
        write_in(e.dir, "out/garbled/outcome.json", "{not json\n", 0644);
        _cleanup_free_ char *folder = path_in(e.dir, "out/folder/outcome.json");
        ck_assert_int_eq(unlink(folder), 0);
        ck_assert_int_eq(mkdir(folder, 0755), 0);
        _cleanup_free_ char *lost = path_in(e.dir, "out/launcher/outcome.json");
        ck_assert_int_eq(unlink(lost), 0);
        write_in(e.dir, "out/launcher/launcher.json", "\x01 garbage", 0600);
        _cleanup_free_ char *denied = path_in(e.dir, "out/denied/outcome.json");
        ck_assert_int_eq(chmod(denied, 0), 0);
        batch(&r, &e, NULL);
        ck_assert_msg(r.status == 1, "status %d; stderr:\n%s", r.status, r.err);
        assert_contains(r.err, "garbled: cannot read '");
        assert_contains(r.err, "out/garbled/outcome.json': not a JSON object");
        assert_contains(r.err, "out/folder/outcome.json': Is a directory");
        assert_contains(r.err, "launcher: cannot read '");
        assert_contains(r.err, "out/launcher/launcher.json': not a JSON object");
        if (geteuid() != 0) /* root reads it all the same: then it is the completed Trial it was */
                assert_contains(r.err, "out/denied/outcome.json': Permission denied");
        assert_contains(r.err, "the Trial is not run");
        for (size_t i = 0; i < TB_ARRAY_SIZE(ids); i++)
                ck_assert_msg(count_at(e.repo, "marker", ids[i]) == 1, "%s ran %zu times", ids[i],
                              count_at(e.repo, "marker", ids[i]));
        assert_result(&e, "garbled", "outcome", "null");
        assert_result(&e, "launcher", "outcome", "null");
        ck_assert_msg(!exists_in(e.dir, "out/garbled.attempt-1") && !exists_in(e.dir, "out/launcher.attempt-1"),
                      "an unreadable attempt was moved aside to run again");
        proc_result_free(&r);
        chmod(denied, 0644);
        exp_free(&e);
}
END_TEST

/* A launcher that ran the session but could not write its final Outcome
 * (here its reserved record is removed under it: an I/O error would do
 * the same) is its own state, `unrecorded`: never a void run again. */
START_TEST(a_trial_whose_outcome_could_not_be_written_is_unrecorded_and_not_run_again)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        add_trial(&plan, "t", "echo ran >> marker; touch started; sleep 2", NULL);
        write_plan(e.plan, plan.s);
        free(plan.s);
        _cleanup_free_ char *out = path_in(e.dir, "out.log"), *err = path_in(e.dir, "err.log");
        char *argv[] = { TRIALBOX_BIN, "batch", e.plan, NULL };
        pid_t pid = spawn_argv(tb_env(ENV("TRIALBOX_BATCH_BACKOFF_MS=1")), argv, out, err);
        _cleanup_free_ char *started = path_in(e.repo, "started");
        ck_assert_msg(wait_for_file(started, 20000), "the session did not start");
        _cleanup_free_ char *tdir = path_in(e.dir, "out/t");
        DIR *d = opendir(tdir);
        int removed = 0;
        for (struct dirent *de; d && (de = readdir(d));)
                if (str_has_prefix(de->d_name, ".outcome.json.final-")) {
                        _cleanup_free_ char *p = path_in(tdir, de->d_name);
                        removed += unlink(p) == 0;
                }
        if (d)
                closedir(d);
        ck_assert_int_eq(removed, 1);
        int status = wait_status(pid);
        ck_assert_msg(status == 1, "batch exit status %d, not 1", status);
        _cleanup_free_ char *summary = read_text(out);
        assert_contains(summary, "unrecorded: shell 1");
        assert_result(&e, "t", "outcome", "unrecorded");
        assert_result(&e, "t", "attempts", "1");
        /* Run again: it is final, the session does not run a second time. */
        struct proc_result r;
        batch(&r, &e, NULL);
        ck_assert_int_eq(r.status, 1);
        assert_result(&e, "t", "outcome", "unrecorded");
        ck_assert_uint_eq(count_at(e.repo, "marker", "ran"), 1);
        ck_assert_msg(!exists_in(e.dir, "out/t.attempt-1"), "the Trial was moved aside to run again");
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

/* Two lines naming one repository: the plan check says so, and they never
 * run at once (one session read and broke the other's work). */
START_TEST(trials_sharing_a_repository_never_run_at_once_and_the_plan_says_so)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        add_trial(&plan, "a", "echo \"$(date +%s%N) 1\" >> times; sleep 0.5; echo \"$(date +%s%N) -1\" >> times", NULL);
        add_trial(&plan, "b", "echo \"$(date +%s%N) 1\" >> times; sleep 0.5; echo \"$(date +%s%N) -1\" >> times", NULL);
        write_plan(e.plan, plan.s);
        free(plan.s);
        struct proc_result r;
        batch(&r, &e, EXTRA("--jobs", "2"));
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        assert_contains(r.err, "plan.jsonl:2: line 2's repository");
        assert_contains(r.err, "never at once");
        _cleanup_free_ char *cmd = xasprintf("sort -n -k1,1 -k2,2n '%s/times' | awk '{n+=$2; if (n>m) m=n} END "
                                             "{exit !(m==1 && NR==4)}'",
                                             e.repo);
        ck_assert_msg(host_can(cmd), "the two sessions overlapped: see '%s/times'", e.repo);
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

/* An output folder inside another Trial's repository, or its clone: that
 * session could plant the other's outcome.json. Refused, naming both. */
START_TEST(an_output_folder_inside_another_trials_repository_or_clone_is_refused)
{
        struct exp e;
        exp_new(&e);
        const char *plans[][2] = {
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/a\"}\n"
                  "{\"id\":\"b\",\"harness\":\"shell\",\"repo\":\"other\",\"output_dir\":\"repo/planted\"}\n",
                  "plan.jsonl:2: field 'output_dir'" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo_from\":\"src\",\"output_dir\":\"out/a\"}\n"
                  "{\"id\":\"b\",\"harness\":\"shell\",\"repo\":\"other\",\"output_dir\":\"out/a.repo/x\"}\n",
                  "plan.jsonl:2: field 'output_dir'" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/a\"}\n"
                  "{\"id\":\"b\",\"harness\":\"shell\",\"repo\":\"repo/inner\",\"output_dir\":\"out/b\"}\n",
                  "plan.jsonl:2: field 'repo'" },
        };
        _cleanup_free_ char *other = path_in(e.dir, "other");
        _cleanup_free_ char *src = path_in(e.dir, "src");
        mkdir_p(src, 0755);
        _cleanup_free_ char *inner = path_in(e.dir, "repo/inner");
        mkdir_p(other, 0755);
        mkdir_p(inner, 0755);
        for (size_t i = 0; i < TB_ARRAY_SIZE(plans); i++) {
                write_text(e.plan, plans[i][0], 0644);
                struct proc_result r;
                batch(&r, &e, NULL);
                ck_assert_msg(r.status == 2, "plan %zu: status %d: %s", i, r.status, r.err);
                assert_contains(r.err, plans[i][1]);
                assert_contains(r.err, "line 1's");
                ck_assert_msg(!exists_in(e.dir, "out/a"), "plan %zu ran a Trial", i);
                proc_result_free(&r);
        }
        exp_free(&e);
}
END_TEST

/* An outcome.json in a Trial's folder that no run of this batch wrote (a
 * session of another Trial planted it): not taken; the Trial runs. */
START_TEST(an_outcome_the_batch_did_not_see_its_run_write_is_not_taken)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        add_trial(&plan, "victim", "echo ran >> marker", NULL);
        write_plan(e.plan, plan.s);
        free(plan.s);
        write_in(e.dir, "out/victim/outcome.json",
                 "{\"harness\":\"shell\",\"outcome\":\"completed\",\"exit_code\":0,\"detail\":\"forged\"}\n", 0644);
        write_in(e.dir, "out/victim/launcher.json", "{\"outcome\":\"running\",\"pid\":1}\n", 0644);
        struct proc_result r;
        batch(&r, &e, NULL);
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        assert_contains(r.err, "was not written by a run this batch started");
        ck_assert_uint_eq(count_at(e.repo, "marker", "ran"), 1);
        assert_result(&e, "victim", "outcome", "completed");
        assert_result(&e, "victim", "attempts", "2");
        ck_assert(exists_in(e.dir, "out/victim.attempt-1/outcome.json.foreign"));
        _cleanup_free_ char *out = path_in(e.dir, "out/victim");
        _cleanup_free_ char *detail = outcome_field(out, "detail");
        ck_assert_msg(detail && !strstr(detail, "forged"), "the forged record was taken: %s", detail);
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

/* The modes `run` gives a Trial's output: the folder 0700 (its session's
 * user searches it with --user: 0711), the logs 0600. */
START_TEST(a_batch_gives_a_trials_output_the_modes_run_gives_it)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        add_trial(&plan, "t", "true", "\"network\":\"none\"");
        write_plan(e.plan, plan.s);
        free(plan.s);
        struct proc_result r;
        batch(&r, &e, NULL);
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        _cleanup_free_ char *out = path_in(e.dir, "out/t");
        assert_mode(out, 0700);
        _cleanup_free_ char *log = path_in(out, "trialbox.log"), *launcher = path_in(out, "launcher.json");
        _cleanup_free_ char *guard = path_in(out, "guard.jsonl");
        assert_mode(log, 0600);
        assert_mode(launcher, 0600);
        if (exists(guard))
                assert_mode(guard, 0600);
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

START_TEST(repo_from_gives_each_trial_its_own_clone_at_its_revision)
{
        struct exp e;
        exp_new(&e);
        char *src = path_in(e.dir, "src");
        mkdir_p(src, 0755);
        sh_ok("cd '%s' && git init -q -b main", src);
        write_in(src, "file", "first\n", 0644);
        sh_ok("cd '%s' && git add file && " GIT " commit -qm first && git tag v1", src);
        write_in(src, "file", "second\n", 0644);
        sh_ok("cd '%s' && " GIT " commit -qam second", src);
        struct strbuf plan = { 0 };
        strbuf_add(&plan, "{\"id\":\"a\",\"harness\":\"shell\",\"repo_from\":\"src@v1\",\"output_dir\":\"out/a\","
                          "\"args\":[\"-c\",\"echo a > mine\"]}\n"
                          "{\"id\":\"b\",\"harness\":\"shell\",\"repo_from\":\"src\",\"output_dir\":\"out/b\","
                          "\"args\":[\"-c\",\"echo b > mine\"]}\n");
        write_plan(e.plan, plan.s);
        free(plan.s);
        if (geteuid() == 0)
                chmod(e.dir, 0755);

        struct proc_result r;
        batch(&r, &e, NULL);
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s\nout:\n%s", r.status, r.err, r.out);
        char *a = path_in(e.dir, "out/a.repo"), *b = path_in(e.dir, "out/b.repo");
        assert_result(&e, "a", "repo", a);
        assert_file_in(a, "file", "first\n");
        assert_file_in(b, "file", "second\n");
        assert_file_in(a, "mine", "a\n");
        assert_file_in(b, "mine", "b\n");
        ck_assert(!exists_in(src, "mine"));
        free(a);
        free(b);
        free(src);
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

/* Started as root, a Trial with a `user` gets a clone that user owns, and
 * its session runs as that user in it (no root_session needed). */
/* `trialbox batch plan.jsonl` in the plan's folder: its results and the
 * Trials' folders and clones are beside the plan, as with a path. */
START_TEST(a_plan_named_without_a_folder_keeps_its_results_and_clones_beside_it)
{
        struct exp e;
        exp_new(&e);
        char *src = path_in(e.dir, "src");
        mkdir_p(src, 0755);
        sh_ok("cd '%s' && git init -q -b main && echo one > file && git add file && " GIT " commit -qm one", src);
        struct strbuf plan = { 0 };
        add_trial(&plan, "t", "echo t >> marker", NULL);
        strbuf_add(&plan, "{\"id\":\"c\",\"harness\":\"shell\",\"repo_from\":\"src\",\"output_dir\":\"out/c\","
                          "\"args\":[\"-c\",\"echo c > mine\"]}\n");
        write_plan(e.plan, plan.s);
        free(plan.s);
        if (geteuid() == 0)
                chmod(e.dir, 0755);
        char *argv[] = { "/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", e.dir, TRIALBOX_BIN, "batch",
                         "plan.jsonl", NULL };
        struct proc_result r;
        run_argv(&r, tb_env(ENV("TRIALBOX_BATCH_BACKOFF_MS=1")), argv);
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        assert_result(&e, "t", "outcome", "completed");
        assert_result(&e, "c", "outcome", "completed");
        _cleanup_free_ char *clone = path_in(e.dir, "out/c.repo");
        assert_result(&e, "c", "repo", clone);
        assert_file_in(clone, "mine", "c\n");
        assert_file_in(e.repo, "marker", "t\n");
        proc_result_free(&r);
        free(src);
        exp_free(&e);
}
END_TEST

/* Two plans in one folder: each has its own results, named after it, and
 * neither overwrites the other's. */
START_TEST(two_plans_in_one_folder_keep_results_of_their_own)
{
        struct exp e;
        exp_new(&e);
        struct strbuf a = { 0 };
        add_trial(&a, "a", "true", NULL);
        write_plan(e.plan, a.s);
        free(a.s);
        _cleanup_free_ char *plan2 = path_in(e.dir, "other.jsonl");
        write_plan(plan2, "{\"id\":\"b\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out2/b\","
                          "\"args\":[\"-c\",\"true\"]}\n");
        struct proc_result r;
        batch(&r, &e, NULL);
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        proc_result_free(&r);
        char *argv[] = { TRIALBOX_BIN, "batch", plan2, NULL };
        run_argv(&r, tb_env(NULL), argv);
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        proc_result_free(&r);
        _cleanup_free_ char *mine = path_in(e.dir, "plan.results.jsonl"), *other = path_in(e.dir, "other.results.jsonl");
        json_object *ja = results_line(mine, "a"), *jb = results_line(other, "b");
        ck_assert_msg(ja != NULL, "no line for 'a' in '%s'", mine);
        ck_assert_msg(jb != NULL, "no line for 'b' in '%s'", other);
        ck_assert_uint_eq(lines_of(mine), 1);
        ck_assert_uint_eq(lines_of(other), 1);
        json_object_put(ja);
        json_object_put(jb);
        exp_free(&e);
}
END_TEST

/* The results an earlier trialbox wrote as results.jsonl become
 * PLAN.results.jsonl when they are this plan's, and are left alone when
 * they are another's. */
START_TEST(results_an_earlier_trialbox_named_results_jsonl_are_taken_when_they_are_this_plans)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        add_trial(&plan, "t", "echo ran >> marker", NULL);
        write_plan(e.plan, plan.s);
        free(plan.s);
        _cleanup_free_ char *old = path_in(e.dir, "results.jsonl"), *now = path_in(e.dir, "plan.results.jsonl");
        /* Another plan's (another id): not taken. */
        write_text(old, "{\"id\":\"x\",\"attempts\":0,\"output_dir\":\"/elsewhere\",\"harness\":\"shell\",\"outcome\":null}\n",
                   0644);
        struct proc_result r;
        batch(&r, &e, NULL);
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        proc_result_free(&r);
        assert_file_holds(old,
                          "{\"id\":\"x\",\"attempts\":0,\"output_dir\":\"/elsewhere\",\"harness\":\"shell\",\"outcome\":null}\n");
        /* This plan's, as an earlier batch left them: renamed, then rewritten. */
        _cleanup_free_ char *text = read_text(now);
        ck_assert_ptr_nonnull(text);
        ck_assert_int_eq(unlink(now), 0);
        write_text(old, text, 0644);
        batch(&r, &e, NULL);
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        assert_contains(r.err, "results.jsonl' holds this plan's results");
        ck_assert(!exists(old));
        assert_result(&e, "t", "outcome", "completed");
        ck_assert_uint_eq(count_at(e.repo, "marker", "ran"), 1);
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

START_TEST(as_root_a_clone_is_given_to_the_trial_s_user)
{
        if (skip_unless_root(__func__, "not root: see its root run"))
                return;
        struct exp e;
        exp_new(&e);
        ck_assert_int_eq(chmod(e.dir, 0755), 0);
        char *src = path_in(e.dir, "src");
        mkdir_p(src, 0755);
        sh_ok("cd '%s' && git init -q -b main", src);
        write_in(src, "file", "first\n", 0644);
        sh_ok("cd '%s' && git add file && " GIT " commit -qm first", src);
        write_text(e.plan,
                   "{\"id\":\"n\",\"harness\":\"shell\",\"repo_from\":\"src\",\"output_dir\":\"out/n\","
                   "\"user\":\"nobody\",\"args\":[\"-c\",\"id -u > mine\"]}\n",
                   0644);
        struct proc_result r;
        batch(&r, &e, NULL);
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s\nout:\n%s", r.status, r.err, r.out);
        char *clone = path_in(e.dir, "out/n.repo");
        struct passwd *pw = getpwnam("nobody");
        ck_assert_ptr_nonnull(pw);
        struct stat st;
        ck_assert_int_eq(stat(clone, &st), 0);
        ck_assert_int_eq(st.st_uid, pw->pw_uid);
        char want[32];
        snprintf(want, sizeof want, "%u\n", (unsigned)pw->pw_uid);
        assert_file_in(clone, "mine", want);
        free(clone);
        free(src);
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

START_TEST(concurrency_never_exceeds_jobs)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        char id[16];
        for (int i = 0; i < 8; i++) {
                snprintf(id, sizeof id, "t%d", i);
                add_trial_own(&plan, &e, id,
                              "echo \"$(date +%s%N) 1\" >> times; sleep 0.3; echo \"$(date +%s%N) -1\" >> times");
        }
        write_plan(e.plan, plan.s);
        free(plan.s);
        struct proc_result r;
        batch(&r, &e, EXTRA("--jobs", "2"));
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        proc_result_free(&r);
        /* Sweep the start (+1) and end (-1) events in time order. */
        char cmd[1400];
        snprintf(cmd, sizeof cmd,
                 "cat '%s'/repos/*/times | sort -n -k1,1 -k2,2n | awk '{n+=$2; if (n>m) m=n} END {exit !(m==2 && NR==16)}'",
                 e.dir);
        ck_assert_msg(host_can(cmd), "more than 2 sessions at once, or not 8 sessions: see '%s/repos/*/times'", e.dir);
        exp_free(&e);
}
END_TEST

/* The first number on the only line of DIR/REL. */
static long long number_in(const char *dir, const char *rel, int which)
{
        char *p = path_in(dir, rel);
        char *text = read_text(p);
        long long v[2] = { -1, -1 };
        ck_assert_msg(text && sscanf(text, "%lld %lld", &v[0], &v[1]) >= 1, "no times in '%s'", p);
        free(text);
        free(p);
        return v[which];
}

START_TEST(grok_trials_run_one_at_a_time_without_holding_a_slot)
{
        struct exp e;
        exp_new(&e);
        char *state = path_in(e.dir, "state");
        char *home = path_in(state, "trialbox/trials/grok");
        mkdir_p(home, 0700);
        write_in(home, "auth.json", "grok-login", 0600);
        char *env = xasprintf("XDG_STATE_HOME=%s", state);
        struct strbuf plan = { 0 };
        for (int i = 1; i <= 2; i++) {
                _cleanup_free_ char *own = xasprintf("%s/repos/g%d", e.dir, i);
                mkdir_p(own, 0755);
                chmod(own, 0777);
                strbuf_addf(&plan, "{\"id\":\"g%d\",\"harness\":\"grok\",\"repo\":\"repos/g%d\",\"output_dir\":\"out/g%d\","
                                   "\"harness_bin\":\"%s\",\"args\":[\"times-g%d\",\"2\"]}\n",
                            i, i, i, FAKE("fake-grok"), i);
        }
        add_trial_own(&plan, &e, "s1", "date +%s%N > times-s1; sleep 0.3");
        add_trial_own(&plan, &e, "s2", "date +%s%N > times-s2; sleep 0.3");
        write_plan(e.plan, plan.s);
        free(plan.s);
        struct proc_result r;
        batch_env(&r, &e, env, EXTRA("--jobs", "2"));
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        /* The second grok Trial did not take the other slot to wait on the
         * lock: s1 ran beside the first one. Each grok session lasts 2 s:
         * s1 starts in the same pass as the first, but after its launcher
         * record is written and under ASan on a loaded CI machine; with
         * 0.6 s, s1 was seen to start after the first session ended once. */
        _cleanup_free_ char *g1 = path_in(e.dir, "repos/g1"), *g2 = path_in(e.dir, "repos/g2");
        _cleanup_free_ char *s1 = path_in(e.dir, "repos/s1");
        long long a0 = number_in(g1, "times-g1", 0), a1 = number_in(g1, "times-g1", 1);
        long long b0 = number_in(g2, "times-g2", 0), b1 = number_in(g2, "times-g2", 1);
        ck_assert_msg(a1 <= b0 || b1 <= a0, "the grok sessions overlapped");
        long long first_end = a0 < b0 ? a1 : b1;
        ck_assert_msg(number_in(s1, "times-s1", 0) < first_end, "s1 waited: a grok Trial held a slot");
        proc_result_free(&r);
        free(env);
        free(home);
        free(state);
        exp_free(&e);
}
END_TEST

START_TEST(index_runs_only_that_trial_as_an_array_task_would)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        add_trial(&plan, "t0", "echo t0 >> marker", NULL);
        add_trial(&plan, "t1", "echo t1 >> marker", NULL);
        add_trial(&plan, "t2", "echo t2 >> marker", NULL);
        write_plan(e.plan, plan.s);
        free(plan.s);
        struct proc_result r;
        batch(&r, &e, EXTRA("--index", "1"));
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        assert_file_in(e.repo, "marker", "t1\n");
        ck_assert(!exists_in(e.dir, "out/t0") && !exists_in(e.dir, "out/t2"));
        ck_assert(!exists_in(e.dir, "plan.results.jsonl"));
        proc_result_free(&r);
        batch(&r, &e, EXTRA("--index", "3"));
        ck_assert_int_eq(r.status, 2);
        assert_one_line(r.err);
        proc_result_free(&r);
        /* An array task runs its one Trial here: --index does not go with --slurm (tests/integration/test_slurm.c has --slurm). */
        batch(&r, &e, EXTRA("--slurm", "--index", "1"));
        ck_assert_int_eq(r.status, 2);
        assert_contains(r.err, "does not go with --slurm");
        proc_result_free(&r);
        assert_file_in(e.repo, "marker", "t1\n");
        exp_free(&e);
}
END_TEST

struct bad_plan {
        const char *plan;
        const char *want; /* in the message */
};

START_TEST(bad_plans_exit_2_with_the_line_and_the_field)
{
        static const struct bad_plan cases[] = {
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/a\"}\n{not json\n",
                  "plan.jsonl:2: not valid JSON" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/a\",\"colour\":1}\n",
                  "plan.jsonl:1: field 'colour': unknown field" },
                { "{\"id\":7,\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/a\"}\n",
                  "plan.jsonl:1: field 'id': must be a string" },
                { "{\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/a\"}\n", "plan.jsonl:1: field 'id': is missing" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/a\"}\n\n"
                  "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/b\"}\n",
                  "plan.jsonl:3: field 'id': 'a' is also line 1's" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/a\"}\n"
                  "{\"id\":\"b\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/./a/\"}\n",
                  "plan.jsonl:2: field 'output_dir':" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"output_dir\":\"o/a\"}\n", "plan.jsonl:1: field 'repo': is missing" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"repo_from\":\"repo\",\"output_dir\":\"o/a\"}\n",
                  "plan.jsonl:1: field 'repo_from': give either" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/a\",\"args\":[\"x\",2]}\n",
                  "plan.jsonl:1: field 'args': item 1 is not a string" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/a\",\"timeout\":\"soon\"}\n",
                  "plan.jsonl:1: field 'timeout': value 'soon' is not a duration" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/a\",\"memory\":\"1Q\"}\n",
                  "plan.jsonl:1: field 'memory':" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/a\",\"network\":\"some\"}\n",
                  "plan.jsonl:1: field 'network': 'some' is not one of host, none, allow" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/a\",\"allow_host\":\"x\"}\n",
                  "plan.jsonl:1: field 'allow_host': must be an array of strings" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"nowhere\",\"output_dir\":\"o/a\"}\n",
                  "plan.jsonl:1: field 'repo': '" },
                { "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/a\"}\n"
                  "{\"id\":\"b\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"o/a/in\"}\n",
                  "plan.jsonl:2: field 'output_dir': '" },
                { "[1]\n", "plan.jsonl:1: not a JSON object" },
                { "\n", "no Trials" },
        };
        size_t checked = 0;
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                struct exp e;
                exp_new(&e);
                write_text(e.plan, cases[i].plan, 0644);
                struct proc_result r;
                batch(&r, &e, NULL);
                ck_assert_msg(r.status == 2, "case %zu: status %d, not 2", i, r.status);
                ck_assert_msg(strstr(r.err, cases[i].want), "case %zu: '%s' not in: %s", i, cases[i].want, r.err);
                assert_one_line(r.err);
                ck_assert_msg(!exists_in(e.dir, "o") && !exists_in(e.dir, "plan.results.jsonl"), "case %zu: something ran", i);
                proc_result_free(&r);
                exp_free(&e);
                checked++;
        }
        ck_assert_uint_eq(checked, TB_ARRAY_SIZE(cases));
}
END_TEST

/* A Trial the operator interrupted (SIGINT to the batch) is void/interrupted,
 * and runs again when the batch is run again, even with no retries: the
 * interruption is not counted against them. */
START_TEST(an_interrupted_trial_runs_again_on_resume_whatever_its_retries)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        add_trial_own(&plan, &e, "a", "echo ran >> marker; while [ ! -e go ]; do sleep 0.05; done");
        add_trial_own(&plan, &e, "b", "echo ran >> marker; while [ ! -e go ]; do sleep 0.05; done");
        write_plan(e.plan, plan.s);
        free(plan.s);
        char *argv[] = { TRIALBOX_BIN, "batch", e.plan, "--jobs", "2", "--retries", "0", "-q", NULL };
        pid_t pid = spawn_argv(tb_env(ENV("TRIALBOX_BATCH_BACKOFF_MS=1")), argv, "/dev/null", "/dev/null");
        for (int i = 0; i < 600 && lines_across(&e, "marker") < 2; i++)
                usleep(50 * 1000);
        ck_assert_uint_eq(lines_across(&e, "marker"), 2);
        ck_assert_int_eq(kill(pid, SIGINT), 0);
        ck_assert_int_eq(wait_status(pid), 128 + SIGINT);
        assert_result(&e, "a", "outcome", "void");
        assert_result(&e, "a", "cause", "interrupted");
        assert_result(&e, "b", "cause", "interrupted");
        assert_result(&e, "a", "attempts", "1");
        for (const char *const *id = (const char *const[]){ "a", "b", NULL }; *id; id++) {
                _cleanup_free_ char *rel = xasprintf("repos/%s/go", *id);
                write_in(e.dir, rel, "", 0644);
        }
        struct proc_result r;
        batch(&r, &e, EXTRA("--jobs", "2", "--retries", "0"));
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        assert_result(&e, "a", "outcome", "completed");
        assert_result(&e, "b", "outcome", "completed");
        assert_result(&e, "a", "attempts", "2");
        ck_assert_uint_eq(lines_across(&e, "marker"), 4);
        _cleanup_free_ char *aside = path_in(e.dir, "out/a.attempt-1");
        _cleanup_free_ char *cause = outcome_field(aside, "cause");
        ck_assert_str_eq(cause, "interrupted");
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

/* A plan line's `env` reaches its session, and no process shows a value in
 * its command line (ps): the batch hands it to its run through a pipe. Its
 * `kill_after` is run's --kill-after. */
START_TEST(env_reaches_the_session_never_an_argv_and_kill_after_is_the_runs)
{
        struct exp e;
        exp_new(&e);
        _cleanup_free_ char *secret = marker("env-value");
        _cleanup_free_ char *plan = xasprintf(
                "{\"id\":\"env\",\"harness\":\"shell\",\"repo\":\"repos/env\",\"output_dir\":\"out/env\","
                "\"env\":{\"TB_TEST_SECRET\":\"%s\",\"TB_TEST_MODE\":\"a b\"},"
                "\"args\":[\"-c\",\"printf '%%s|%%s' \\\"$TB_TEST_SECRET\\\" \\\"$TB_TEST_MODE\\\" > got; sleep 2\"]}\n"
                "{\"id\":\"grace\",\"harness\":\"shell\",\"repo\":\"repos/grace\",\"output_dir\":\"out/grace\","
                "\"timeout\":\"1\",\"kill_after\":0,\"args\":[\"-c\",\"trap '' TERM; sleep 30\"]}\n",
                secret);
        for (const char *const *id = (const char *const[]){ "env", "grace", NULL }; *id; id++) {
                _cleanup_free_ char *rel = xasprintf("repos/%s", *id);
                _cleanup_free_ char *dir = path_in(e.dir, rel);
                mkdir_p(dir, 0755);
                chmod(dir, 0777);
        }
        write_plan(e.plan, plan);
        char *argv[] = { TRIALBOX_BIN, "batch", e.plan, "--jobs", "2", NULL };
        _cleanup_free_ char *out = path_in(e.dir, "stdout"), *err = path_in(e.dir, "stderr");
        pid_t pid = spawn_argv(tb_env(NULL), argv, out, err);
        _cleanup_free_ char *got = path_in(e.dir, "repos/env/got");
        bool wrote = wait_for_file(got, 30000);
        bool shown = host_process_with(secret);
        int status = wait_status(pid);
        _cleanup_free_ char *errs = read_text(err);
        ck_assert_msg(wrote, "the session never wrote its variables; stderr:\n%s", errs);
        ck_assert_msg(!shown, "a process shows the value in its command line");
        ck_assert_msg(status == 0, "status %d; stderr:\n%s", status, errs);
        _cleanup_free_ char *want = xasprintf("%s|a b", secret);
        assert_file_holds(got, want);
        assert_result(&e, "env", "outcome", "completed");
        assert_result(&e, "grace", "outcome", "failed");
        assert_result(&e, "grace", "cause", "timeout");
        _cleanup_free_ char *grace = path_in(e.dir, "out/grace");
        _cleanup_free_ char *detail = outcome_field(grace, "detail"), *limits = outcome_field(grace, "limits");
        assert_contains(detail, "SIGKILL 0s later (--kill-after)");
        assert_contains(limits, "\"kill_after_ms\": 0,");
        _cleanup_free_ char *log = read_text_in(e.dir, "out/env/trialbox.log");
        ck_assert_msg(log == NULL || !strstr(log, secret), "the value is in the Trial's log");
        exp_free(&e);
}
END_TEST

/* Someone else's SIGTERM to one Trial's `trialbox run` (not to the
 * batch): the Trial is void/interrupted, and the batch, still going,
 * counts it as any void attempt: with no retries it is not run again now
 * (a resume would). */
START_TEST(a_run_signalled_while_the_batch_goes_on_is_retried_as_a_counted_void)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        add_trial(&plan, "t", "echo ran >> marker; touch started; sleep 30", NULL);
        write_plan(e.plan, plan.s);
        free(plan.s);
        char *argv[] = { TRIALBOX_BIN, "batch", e.plan, "--retries", "0", "-q", NULL };
        pid_t pid = spawn_argv(tb_env(ENV("TRIALBOX_BATCH_BACKOFF_MS=1")), argv, "/dev/null", "/dev/null");
        _cleanup_free_ char *started = path_in(e.repo, "started");
        ck_assert_msg(wait_for_file(started, 30000), "the session never started");
        /* Its run: the pid its launcher.json records, the batch's child (a
         * fork of the batch that runs `run` without an exec). */
        _cleanup_free_ char *out = path_in(e.dir, "out/t");
        _cleanup_free_ char *recorded = record_field(out, "launcher.json", "pid");
        pid_t run = recorded ? (pid_t)atoi(recorded) : 0;
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)run);
        _cleanup_free_ char *stat = run > 0 ? read_text(path) : NULL;
        const char *paren = stat ? strrchr(stat, ')') : NULL;
        int ppid = 0;
        if (!paren || sscanf(paren + 1, " %*c %d", &ppid) != 1 || ppid != pid)
                run = 0;
        ck_assert_msg(run > 0, "the Trial's run was not found");
        ck_assert_int_eq(kill(run, SIGTERM), 0);
        int status = wait_status(pid);
        ck_assert_msg(status == 1, "status %d", status);
        assert_result(&e, "t", "outcome", "void");
        assert_result(&e, "t", "cause", "interrupted");
        assert_result(&e, "t", "attempts", "1");
        ck_assert_uint_eq(count_at(e.repo, "marker", "ran"), 1);
        exp_free(&e);
}
END_TEST

/* Every fd of a running Trial's process (the pid its launcher.json
 * records), one target a line: "N -> TARGET\n". NULL when it is gone. */
static char *fds_of_run(const char *out)
{
        _cleanup_free_ char *recorded = record_field(out, "launcher.json", "pid");
        if (!recorded)
                return NULL;
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%s/fd", recorded);
        DIR *d = opendir(dir);
        if (!d)
                return NULL;
        struct strbuf all = { 0 };
        for (struct dirent *e; (e = readdir(d));) {
                if (e->d_name[0] == '.')
                        continue;
                char link[PATH_MAX], target[PATH_MAX] = "";
                snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
                ssize_t n = readlink(link, target, sizeof target - 1);
                if (n > 0)
                        target[n] = '\0';
                strbuf_addf(&all, "%s -> %s\n", e->d_name, target);
        }
        closedir(d);
        return all.s ? all.s : xstrdup("");
}

/* Each Trial's `run` goes on in a fork of the batch, with no exec: it
 * holds none of the batch's fds (its epoll, the plan, its results, the
 * binary it opened) and nothing of the Trial running beside it. */
START_TEST(a_trials_run_holds_no_fd_of_the_batch_or_of_the_trial_beside_it)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        const char *wait_go = "touch started; i=0; "
                              "while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done";
        add_trial_own(&plan, &e, "a", wait_go);
        add_trial_own(&plan, &e, "b", wait_go);
        write_plan(e.plan, plan.s);
        free(plan.s);
        char *argv[] = { TRIALBOX_BIN, "batch", e.plan, "--jobs", "2", "-q", NULL };
        pid_t pid = spawn_argv(tb_env(NULL), argv, "/dev/null", "/dev/null");
        const char *ids[] = { "a", "b" };
        char *fds[2] = { NULL, NULL };
        for (int i = 0; i < 2; i++) {
                _cleanup_free_ char *rel = xasprintf("repos/%s/started", ids[i]);
                _cleanup_free_ char *started = path_in(e.dir, rel);
                ck_assert_msg(wait_for_file(started, 30000), "session %s never started", ids[i]);
        }
        for (int i = 0; i < 2; i++) {
                _cleanup_free_ char *rel = xasprintf("out/%s", ids[i]);
                _cleanup_free_ char *out = path_in(e.dir, rel);
                fds[i] = fds_of_run(out);
        }
        for (int i = 0; i < 2; i++) {
                _cleanup_free_ char *rel = xasprintf("repos/%s/go", ids[i]);
                _cleanup_free_ char *go = path_in(e.dir, rel);
                write_text(go, "", 0644);
        }
        ck_assert_int_eq(wait_status(pid), 0);
        char bin[PATH_MAX];
        ck_assert_ptr_nonnull(realpath(TRIALBOX_BIN, bin));
        for (int i = 0; i < 2; i++) {
                ck_assert_msg(fds[i], "Trial %s's run was gone while its session ran", ids[i]);
                _cleanup_free_ char *mine = xasprintf(" -> %s/out/%s/", e.dir, ids[i]);
                _cleanup_free_ char *other = xasprintf(" -> %s/out/%s", e.dir, ids[1 - i]);
                ck_assert_msg(strstr(fds[i], mine), "Trial %s's run has no fd in its own folder:\n%s", ids[i], fds[i]);
                ck_assert_msg(!strstr(fds[i], other), "Trial %s's run holds the other Trial's:\n%s", ids[i], fds[i]);
                ck_assert_msg(!strstr(fds[i], e.plan) && !strstr(fds[i], e.results),
                              "Trial %s's run holds the plan or its results:\n%s", ids[i], fds[i]);
                ck_assert_msg(!strstr(fds[i], "[eventpoll]"), "Trial %s's run holds the batch's epoll:\n%s", ids[i],
                              fds[i]);
                _cleanup_free_ char *self = xasprintf(" -> %s\n", bin);
                ck_assert_msg(!strstr(fds[i], self), "Trial %s's run holds the batch's binary:\n%s", ids[i], fds[i]);
                free(fds[i]);
        }
        assert_result(&e, "a", "outcome", "completed");
        assert_result(&e, "b", "outcome", "completed");
        exp_free(&e);
}
END_TEST

/* The usage peak in OUT/outcome.json. */
static long long peak_in(const char *out)
{
        _cleanup_free_ char *path = path_in(out, "outcome.json");
        _cleanup_free_ char *text = read_text(path);
        ck_assert_ptr_nonnull(text);
        json_object *j = json_tokener_parse(text);
        ck_assert_ptr_nonnull(j);
        long long peak = json_object_get_int64(json_get(json_get(j, "usage"), "peak_memory_bytes"));
        json_object_put(j);
        return peak;
}

/* A session's rusage peak counts trialbox's memory (the keeper shares it):
 * a batch whose plan has grown its memory past BATCH_FORK_MAX_ANON (1 MiB;
 * 6,000 lines, some 2.6 MiB) execs each Trial's run rather than run it in
 * a fork of itself, so that no Trial's peak carries the plan: Trial t0 of
 * such a plan (`--index 0`, a `true` session) peaks as the same Trial run
 * by `trialbox run` itself does, within 1 MiB. */
START_TEST(a_trial_of_a_long_plan_carries_none_of_the_plans_memory_in_its_peak)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        for (int i = 0; i < 6000; i++) {
                char id[32];
                snprintf(id, sizeof id, "t%d", i);
                add_trial_own(&plan, &e, id, "true");
        }
        write_plan(e.plan, plan.s);
        free(plan.s);
        char *argv[] = { TRIALBOX_BIN, "batch", e.plan, "--index", "0", "-q", NULL };
        ck_assert_int_eq(wait_status(spawn_argv(tb_env(NULL), argv, "/dev/null", "/dev/null")), 0);
        _cleanup_free_ char *repo = path_in(e.dir, "repos/t0"), *out = path_in(e.dir, "out/t0");
        _cleanup_free_ char *direct = path_in(e.dir, "direct");
        char *root = geteuid() == 0 ? "--root-session" : "-q";
        char *run[] = { TRIALBOX_BIN, "run",    "-q", "--harness=shell",
                        root,         "--repo", repo, "--output-dir",
                        direct,       "--",     "-c", "true",
                        NULL };
        ck_assert_int_eq(wait_status(spawn_argv(tb_env(NULL), run, "/dev/null", "/dev/null")), 0);
        long long among = peak_in(out), alone = peak_in(direct);
        printf("rusage peak of a `true` Trial: by `run` %lld bytes, line 0 of a 6000-line plan %lld bytes\n", alone,
               among);
        ck_assert_msg(alone > 0 && among > 0, "no peak: %lld, %lld", alone, among);
        ck_assert_msg(among <= alone + (1 << 20), "the 6000-line plan's Trial peaked at %lld bytes, by `run` %lld",
                      among, alone);
        exp_free(&e);
}
END_TEST

/* A batch started as a script's background job (SIGINT and SIGQUIT
 * ignored) by a runner that left SIGINT blocked: its sessions still start
 * with every signal's default disposition and an empty mask, and SIGINT
 * to the batch ends a session that traps nothing at once (not after the
 * grace's SIGKILL). */
START_TEST(a_batch_started_in_the_background_gives_sessions_default_signals_and_sigint_ends_them_at_once)
{
        struct exp e;
        exp_new(&e);
        write_plan(e.plan, "{\"id\":\"sigs\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/sigs\","
                           "\"harness_bin\":\"grep\",\"args\":[\"-E\",\"^Sig(Ign|Blk)\",\"/proc/self/status\"]}\n"
                           "{\"id\":\"slow\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/slow\","
                           "\"harness_bin\":\"sleep\",\"args\":[\"30\"]}\n");
        char *argv[] = { TRIALBOX_BIN, "batch", e.plan, "--jobs", "1", "-q", NULL };
        _cleanup_free_ char *out = path_in(e.dir, "stdout"), *err = path_in(e.dir, "stderr");
        pid_t pid = spawn(tb_env(NULL), argv,
                          &(struct tb_spawn_io){ .out = out, .err = err, .background = true, .blocked = SIGINT });
        _cleanup_free_ char *slow = path_in(e.dir, "out/slow");
        char *kind = NULL;
        for (int i = 0; i < 400; i++) {
                free(kind);
                kind = outcome_field(slow, "outcome");
                if (kind && strcmp(kind, "running") == 0)
                        break;
                usleep(50 * 1000);
        }
        ck_assert_msg(kind && strcmp(kind, "running") == 0, "the second session never started");
        free(kind);
        usleep(300 * 1000); /* its program executed */
        long long t0 = now_ms();
        ck_assert_int_eq(kill(pid, SIGINT), 0);
        int status = wait_status(pid);
        long long took = now_ms() - t0;
        ck_assert_msg(status == 128 + SIGINT, "status %d", status);
        ck_assert_msg(took < 5000, "the session ended %lld ms after SIGINT: it did not get it", took);
        _cleanup_free_ char *log = read_text_in(e.dir, "out/sigs/trialbox.log");
        ck_assert_ptr_nonnull(log);
        assert_line(log, "SigIgn:\t0000000000000000");
        assert_line(log, "SigBlk:\t0000000000000000");
        exp_free(&e);
}
END_TEST

/* Mistakes that would make a Trial void every time are found before
 * anything runs, all of them at once, one line each: by `batch --check`,
 * and by the start of every batch. */
START_TEST(lines_that_cannot_run_are_all_said_before_anything_runs)
{
        struct exp e;
        exp_new(&e);
        _cleanup_free_ char *src = path_in(e.dir, "src"), *plain = path_in(e.dir, "plain");
        _cleanup_free_ char *home = path_in(e.dir, "home");
        mkdir_p(src, 0755);
        mkdir_p(plain, 0755);
        mkdir_p(home, 0755);
        sh_ok("cd '%s' && git init -q -b main && echo one > f && git add f && " GIT " commit -qm one", src);
        struct strbuf plan = { 0 };
        add_trial(&plan, "ok", "echo ran >> marker", NULL);
        add_trial(&plan, "nobin", "true", "\"harness_bin\":\"/nonexistent/agent\"");
        add_trial(&plan, "relbin", "true", "\"harness_bin\":\"missing/agent\"");
        add_trial(&plan, "noskills", "true", "\"skills\":\"nowhere\"");
        strbuf_add(&plan, "{\"id\":\"badrev\",\"harness\":\"shell\",\"repo_from\":\"src@no-such-rev\",\"output_dir\":\"out/badrev\"}\n"
                          "{\"id\":\"notgit\",\"harness\":\"shell\",\"repo_from\":\"plain\",\"output_dir\":\"out/notgit\"}\n"
                          "{\"id\":\"noplugin\",\"harness\":\"nosuchharness\",\"repo\":\"repo\",\"output_dir\":\"out/noplugin\"}\n"
                          "{\"id\":\"nologin\",\"harness\":\"claude\",\"repo\":\"repo\",\"output_dir\":\"out/nologin\","
                          "\"harness_bin\":\"/bin/sh\"}\n"
                          /* Not {"id": first: write_plan gives it no root_session. */
                          "{\"harness\":\"shell\",\"id\":\"asroot\",\"repo\":\"repo\",\"output_dir\":\"out/asroot\"}\n");
        write_plan(e.plan, plan.s);
        free(plan.s);
        /* A home without any Harness's login, and no Credentials. */
        _cleanup_free_ char *env_home = xasprintf("HOME=%s", home);
        static const char *const says[] = {
                "plan.jsonl:2: field 'harness_bin': the shell binary '/nonexistent/agent' was not found",
                "plan.jsonl:3: field 'harness_bin': the shell binary '",
                "plan.jsonl:4: field 'skills': '",
                "plan.jsonl:5: field 'repo_from': 'no-such-rev' is not a commit of the git repository '",
                "plan.jsonl:6: field 'repo_from': '",
                "plan.jsonl:7: field 'harness':",
                "plan.jsonl:8: field 'harness': the claude plugin's preflight:",
        };
        for (int pass = 0; pass < 2; pass++) {
                struct proc_result r;
                batch_env(&r, &e, env_home, pass == 0 ? EXTRA("--check") : NULL);
                ck_assert_msg(r.status == 2, "pass %d: status %d; stderr:\n%s", pass, r.status, r.err);
                for (size_t i = 0; i < TB_ARRAY_SIZE(says); i++)
                        assert_contains(r.err, says[i]);
                /* As root, a root-owned repository's session would be root's. */
                if (geteuid() == 0)
                        assert_contains(r.err, "plan.jsonl:9: field 'user': started as root with a root-owned "
                                               "repository");
                else
                        assert_lacks(r.err, "plan.jsonl:9: field");
                assert_lacks(r.err, "plan.jsonl:1:");
                ck_assert_msg(!exists_in(e.dir, "out") && !exists_in(e.repo, "marker"), "pass %d: something ran", pass);
                ck_assert(!exists_in(e.dir, "plan.results.jsonl"));
                proc_result_free(&r);
        }
        /* A plan of lines that can run: --check says so, runs nothing. */
        write_plan(e.plan, "{\"id\":\"ok\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/ok\"}\n");
        struct proc_result r;
        batch_env(&r, &e, env_home, EXTRA("--check"));
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        assert_contains(r.err, "1 Trials checked: nothing found");
        ck_assert(!exists_in(e.dir, "out"));
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

/* A void Trial that can never succeed (its binary is gone: here the Trial
 * before it removed it) is not run again with backoff. */
START_TEST(a_void_trial_whose_binary_is_gone_is_not_retried)
{
        struct exp e;
        exp_new(&e);
        _cleanup_free_ char *agent = path_in(e.repo, "agent");
        write_text(agent, "#!/bin/sh\nexec /bin/sh \"$@\"\n", 0755);
        struct strbuf plan = { 0 };
        add_trial(&plan, "remover", "rm -f agent", NULL);
        add_trial(&plan, "victim", "echo ran >> marker", "\"harness_bin\":\"repo/agent\"");
        write_plan(e.plan, plan.s);
        free(plan.s);
        struct proc_result r;
        batch(&r, &e, EXTRA("--jobs", "1", "--retries", "2"));
        ck_assert_msg(r.status == 1, "status %d; stderr:\n%s", r.status, r.err);
        assert_result(&e, "victim", "outcome", "void");
        assert_result(&e, "victim", "attempts", "1");
        assert_contains(r.err, "victim: void, and its shell binary '");
        assert_contains(r.err, "is not there: it is not run again");
        ck_assert(!exists_in(e.dir, "out/victim.attempt-1"));
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

/* A line its run refuses (exit 2: it ran nothing; here its output folder
 * already holds a fresh home no record explains) is a void attempt that
 * says so; the next attempt, in a fresh folder, runs. */
START_TEST(a_line_its_run_refuses_is_a_void_attempt_that_says_why)
{
        struct exp e;
        exp_new(&e);
        _cleanup_free_ char *home = path_in(e.dir, "out/refused/home");
        mkdir_p(home, 0700);
        struct strbuf plan = { 0 };
        add_trial(&plan, "refused", "echo ran >> marker", NULL);
        write_plan(e.plan, plan.s);
        free(plan.s);
        struct proc_result r;
        batch(&r, &e, EXTRA("--retries", "2", "-v"));
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        assert_result(&e, "refused", "outcome", "completed");
        assert_result(&e, "refused", "attempts", "2");
        _cleanup_free_ char *aside = path_in(e.dir, "out/refused.attempt-1");
        assert_record(aside, "outcome.json", "cause", "launcher_lost");
        _cleanup_free_ char *detail = outcome_field(aside, "detail");
        assert_contains(detail, "trialbox run refused the line and ran nothing (exit status 2; its log's last line: "
                                "trialbox: output folder '");
        assert_contains(detail, "the batch runs it again, in a fresh folder, while retries are left");
        /* The void attempt ran no session: no duration to say. */
        assert_contains(r.err, "refused: void, attempt 1 of 3");
        assert_lacks(r.err, "-1 ms");
        assert_file_in(e.repo, "marker", "ran\n");
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

/* A finished Trial whose plan line (what it runs) or Harness binary changed
 * since it ran: said, one line each, and nothing runs; with
 * --rerun-changed it runs again, its last attempt kept aside. A line whose
 * keys were only reordered has not changed. */
START_TEST(a_finished_trial_whose_line_or_binary_changed_is_said_and_runs_again_only_when_asked)
{
        struct exp e;
        exp_new(&e);
        _cleanup_free_ char *bin = path_in(e.dir, "bin"), *agent = path_in(e.dir, "bin/agent");
        mkdir_p(bin, 0755);
        write_text(agent, "#!/bin/sh\nexec /bin/sh \"$@\"\n", 0755);
        write_plan(e.plan, "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/a\",\"args\":[\"-c\",\"echo a >> marker\"]}\n"
                           "{\"id\":\"b\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/b\",\"args\":[\"-c\",\"echo b >> marker\"]}\n"
                           "{\"id\":\"c\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/c\",\"harness_bin\":\"bin/agent\","
                           "\"args\":[\"-c\",\"echo c >> marker\"]}\n");
        struct proc_result r;
        batch(&r, &e, NULL);
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        proc_result_free(&r);
        json_object *line = result_of(&e, "c");
        ck_assert_ptr_nonnull(line);
        _cleanup_free_ char *fp = xstrdup(json_object_get_string(json_get(line, "plan_fingerprint")));
        ck_assert_uint_eq(strlen(fp), 64);
        ck_assert_str_eq(json_object_get_string(json_get(json_get(line, "harness_binary"), "path")), agent);
        json_object_put(line);
        /* a: other args; b: the same line, its keys in another order; c: its binary rebuilt. */
        write_plan(e.plan, "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/a\",\"args\":[\"-c\",\"echo a2 >> marker\"]}\n"
                           "{\"id\":\"b\",\"args\":[\"-c\",\"echo b >> marker\"], \"output_dir\":\"out/b\",\"repo\":\"repo\",\"harness\":\"shell\"}\n"
                           "{\"id\":\"c\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/c\",\"harness_bin\":\"bin/agent\","
                           "\"args\":[\"-c\",\"echo c >> marker\"]}\n");
        write_text(agent, "#!/bin/sh\n# rebuilt\nexec /bin/sh \"$@\"\n", 0755);
        batch(&r, &e, NULL);
        ck_assert_msg(r.status == 2, "status %d; stderr:\n%s", r.status, r.err);
        assert_contains(r.err, "plan.jsonl:1: Trial 'a' finished, but its plan line changed: its result is kept; run with "
                               "--rerun-changed to run it again");
        assert_contains(r.err, "plan.jsonl:3: Trial 'c' finished, but its Harness binary '");
        assert_lacks(r.err, "Trial 'b'");
        ck_assert_uint_eq(count_at(e.repo, "marker", "a") + count_at(e.repo, "marker", "b") +
                                  count_at(e.repo, "marker", "c"),
                          3);
        ck_assert(!exists_in(e.dir, "out/a.attempt-1"));
        proc_result_free(&r);
        batch(&r, &e, EXTRA("--rerun-changed"));
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        assert_contains(r.err, "Trial 'a' finished, but its plan line changed: it runs again");
        ck_assert_uint_eq(count_at(e.repo, "marker", "a2"), 1);
        ck_assert_uint_eq(count_at(e.repo, "marker", "b"), 1);
        ck_assert_uint_eq(count_at(e.repo, "marker", "c"), 2);
        assert_result(&e, "a", "attempts", "2");
        assert_result(&e, "b", "attempts", "1");
        _cleanup_free_ char *kept = path_in(e.dir, "out/a.attempt-1");
        _cleanup_free_ char *kind = outcome_field(kept, "outcome");
        ck_assert_str_eq(kind, "completed");
        proc_result_free(&r);
        /* Nothing changed since: nothing runs. */
        batch(&r, &e, NULL);
        ck_assert_msg(r.status == 0, "status %d; stderr:\n%s", r.status, r.err);
        _cleanup_free_ char *marks = path_in(e.repo, "marker");
        ck_assert_uint_eq(lines_of(marks), 5);
        proc_result_free(&r);
        exp_free(&e);
}
END_TEST

START_TEST(sigterm_stops_starting_waits_for_the_running_and_writes_results)
{
        struct exp e;
        exp_new(&e);
        struct strbuf plan = { 0 };
        char id[16];
        for (int i = 0; i < 6; i++) {
                snprintf(id, sizeof id, "t%d", i);
                add_trial_own(&plan, &e, id, "echo ran >> marker; sleep 30");
        }
        write_plan(e.plan, plan.s);
        free(plan.s);
        char *argv[] = { TRIALBOX_BIN, "batch", e.plan, "--jobs", "2", "-q", NULL };
        char *out = path_in(e.dir, "stdout");
        pid_t pid = spawn_argv(tb_env(NULL), argv, out, "/dev/null");
        for (int i = 0; i < 600; i++) {
                if (lines_across(&e, "marker") >= 2)
                        break;
                usleep(50 * 1000);
        }
        kill(pid, SIGTERM);
        ck_assert_int_eq(wait_status(pid), 128 + SIGTERM);
        ck_assert_uint_eq(lines_across(&e, "marker"), 2);
        ck_assert_uint_eq(lines_of(e.results), 6);
        /* The operator stopped them: void/interrupted, not the agent's failure. */
        assert_result(&e, "t0", "outcome", "void");
        assert_result(&e, "t0", "cause", "interrupted");
        assert_result(&e, "t5", "outcome", "null");
        ck_assert_uint_eq(count_at(e.dir, "stdout", "causes: shell void/interrupted 2"), 1);
        free(out);
        exp_free(&e);
}
END_TEST

TB_SUITE("batch", 240)
{
        tcase_add_test(tc, a_plan_of_twelve_gives_its_results_summary_and_exit_status);
        tcase_add_test(tc, a_batch_killed_midway_and_run_again_finishes_every_trial_once);
        tcase_add_test(tc, void_trials_run_again_in_folders_of_their_own_and_failed_ones_do_not);
        tcase_add_test(tc, a_lost_launcher_is_void_kept_aside_and_runs_again);
        tcase_add_test(tc, a_trial_whose_outcome_could_not_be_written_is_unrecorded_and_not_run_again);
        tcase_add_test(tc, a_record_the_batch_cannot_read_is_said_and_its_trial_never_runs_again);
        tcase_add_test(tc, trials_sharing_a_repository_never_run_at_once_and_the_plan_says_so);
        tcase_add_test(tc, an_output_folder_inside_another_trials_repository_or_clone_is_refused);
        tcase_add_test(tc, an_outcome_the_batch_did_not_see_its_run_write_is_not_taken);
        tcase_add_test(tc, a_batch_gives_a_trials_output_the_modes_run_gives_it);
        tcase_add_test(tc, repo_from_gives_each_trial_its_own_clone_at_its_revision);
        tcase_add_test(tc, a_plan_named_without_a_folder_keeps_its_results_and_clones_beside_it);
        tcase_add_test(tc, two_plans_in_one_folder_keep_results_of_their_own);
        tcase_add_test(tc, results_an_earlier_trialbox_named_results_jsonl_are_taken_when_they_are_this_plans);
        tcase_add_test(tc, as_root_a_clone_is_given_to_the_trial_s_user);
        tcase_add_test(tc, concurrency_never_exceeds_jobs);
        tcase_add_test(tc, grok_trials_run_one_at_a_time_without_holding_a_slot);
        tcase_add_test(tc, bad_plans_exit_2_with_the_line_and_the_field);
        tcase_add_test(tc, index_runs_only_that_trial_as_an_array_task_would);
        tcase_add_test(tc, sigterm_stops_starting_waits_for_the_running_and_writes_results);
        tcase_add_test(tc, lines_that_cannot_run_are_all_said_before_anything_runs);
        tcase_add_test(tc, a_void_trial_whose_binary_is_gone_is_not_retried);
        tcase_add_test(tc, a_line_its_run_refuses_is_a_void_attempt_that_says_why);
        tcase_add_test(tc, a_finished_trial_whose_line_or_binary_changed_is_said_and_runs_again_only_when_asked);
        tcase_add_test(tc, an_interrupted_trial_runs_again_on_resume_whatever_its_retries);
        tcase_add_test(tc, a_run_signalled_while_the_batch_goes_on_is_retried_as_a_counted_void);
        tcase_add_test(tc, env_reaches_the_session_never_an_argv_and_kill_after_is_the_runs);
        tcase_add_test(tc, a_batch_started_in_the_background_gives_sessions_default_signals_and_sigint_ends_them_at_once);
        tcase_add_test(tc, a_trials_run_holds_no_fd_of_the_batch_or_of_the_trial_beside_it);
        tcase_add_test(tc, a_trial_of_a_long_plan_carries_none_of_the_plans_memory_in_its_peak);
}
