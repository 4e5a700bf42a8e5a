/* Slurm: the sbatch command line a plan becomes (--slurm-args, limits, the
 * one quoted shell line), the ids a task reads from its environment, the
 * jobcomp records; then, on the real single-node cluster of
 * tests/fixtures/slurm-cluster (the ctest fixture starts it), an array submitted,
 * waited for, cancelled, and bwrap inside its tasks as root and as an
 * unprivileged submitter. Without a running cluster the cluster cases are
 * skipped (exit 77) once the others passed. */
#define _GNU_SOURCE
#include <check.h>
#include <ctype.h>
#include <json-c/json.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "experiments/slurm.h"
#include "tb_test.h"

extern char **environ;

/* ---- the command line ---- */

START_TEST(slurm_args_split_like_a_shell_without_expanding_anything)
{
        static const struct text_case table[] = {
                { "", "" },
                { "  --partition=gpu\t -N 1 ", "[--partition=gpu] [-N] [1]" },
                { "--comment 'a b' x", "[--comment] [a b] [x]" },
                { "--comment \"say \\\"hi\\\" \\$x\"", "[--comment] [say \"hi\" $x]" },
                { "a\\ b 'it'\\''s'", "[a b] [it's]" },
                { "'' \"\"", "[] []" },
                { "$HOME `id` * ~ ;rm", "[$HOME] [`id`] [*] [~] [;rm]" },
                { "'a\\b'", "[a\\b]" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(table); i++) {
                struct strv v = { 0 };
                struct tb_error err = { 0 };
                ck_assert_msg(slurm_args_split(table[i].in, &v, &err) == 0, "'%s': %s", table[i].in, err.msg);
                char *got = strv_joined(&v, "[", "]");
                ck_assert_msg(strcmp(got, table[i].want) == 0, "'%s' split to '%s', not '%s'", table[i].in, got,
                              table[i].want);
                free(got);
                strv_done(&v);
        }
        static const char *const bad[] = { "--comment 'open", "x \"open", "trailing\\" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++) {
                struct strv v = { 0 };
                struct tb_error err = { 0 };
                ck_assert_int_eq(slurm_args_split(bad[i], &v, &err), -EINVAL);
                ck_assert_ptr_null(strchr(err.msg, '\n'));
                assert_contains(err.msg, "--slurm-args");
                strv_done(&v);
        }
}
END_TEST

static struct slurm_array_request request(const char *slurm_args)
{
        struct slurm_array_request req = { .trialbox = "/usr/bin/trialbox", .plan = "/data/exp/plan.jsonl",
                                           .tasks = 12, .max_running = 4, .log_dir = "/data/exp/logs",
                                           .slurm_args = slurm_args };
        slurm_limits_add(&req.limits, 600, 1LL << 30, 1.5);
        slurm_limits_add(&req.limits, 300, 512LL << 20, 1);
        return req;
}

static char *sbatch_line(const struct slurm_array_request *req)
{
        struct strv v = { 0 };
        struct tb_error err = { 0 };
        ck_assert_msg(slurm_sbatch_argv(req, &v, &err) == 0, "%s", err.msg);
        char *s = strv_joined(&v, "[", "]");
        strv_done(&v);
        return s;
}

START_TEST(a_plan_becomes_one_array_with_the_largest_limits_of_its_trials)
{
        struct slurm_array_request req = request(NULL);
        _cleanup_free_ char *got = sbatch_line(&req);
        ck_assert_str_eq(got, "[sbatch] [--job-name=trialbox-batch] [--output=/data/exp/logs/slurm-%A_%a.out] "
                              "[--time=12] [--mem=1088M] [--cpus-per-task=2] [--parsable] [--array=0-11%4] "
                              "[--wrap=exec /usr/bin/trialbox batch /data/exp/plan.jsonl --index "
                              "\"$SLURM_ARRAY_TASK_ID\"]");
}
END_TEST

/* The array's time limit covers what each task may run: every attempt a
 * void Trial is given (1 + --retries, each its timeout and its kill-after)
 * and the backoff between them, not one timeout. Seen through a stand-in
 * sbatch on PATH that records its arguments (and a squeue that says the job
 * is gone): no cluster needed. */
START_TEST(the_arrays_time_limit_covers_every_attempt_and_the_backoff_between_them)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *bin = path_in(dir, "bin"), *args = path_in(dir, "sbatch.args");
        mkdir_p(bin, 0755);
        _cleanup_free_ char *sbatch = xasprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" > '%s'\necho 4242\n", args);
        write_in(bin, "sbatch", sbatch, 0755);
        write_in(bin, "squeue", "#!/bin/sh\nexit 0\n", 0755);
        _cleanup_free_ char *repo = path_in(dir, "repo"), *plan = path_in(dir, "plan.jsonl");
        mkdir_p(repo, 0755);
        write_plan(plan, "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/a\",\"timeout\":\"10m\"}\n"
                         "{\"id\":\"b\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/b\",\"timeout\":\"5m\"}\n");
        _cleanup_free_ char *path = xasprintf("PATH=%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
        char *argv[] = { TRIALBOX_BIN, "batch", plan, "--slurm", "--retries", "2", NULL };
        struct proc_result r;
        run_argv(&r, tb_env(ENV(path, "TRIALBOX_BATCH_BACKOFF_MS=1000")), argv);
        _cleanup_free_ char *got = read_text(args);
        ck_assert_msg(got != NULL, "sbatch was not run: %d %s", r.status, r.err);
        /* 3 attempts of (600 s + the default 10 s kill-after), 1 s + 2 s of
         * backoff, 120 s for trialbox: 1953 s, 33 minutes. */
        assert_line(got, "--time=33");
        proc_result_free(&r);
}
END_TEST

START_TEST(limits_given_in_slurm_args_are_not_asked_twice)
{
        struct slurm_array_request req = request("--time=5 -c4 --mem-per-cpu=1G --job-name=mine -p 'big one'");
        req.max_running = 0;
        _cleanup_free_ char *got = sbatch_line(&req);
        ck_assert_str_eq(got, "[sbatch] [--job-name=trialbox-batch] [--output=/data/exp/logs/slurm-%A_%a.out] "
                              "[--time=5] [-c4] [--mem-per-cpu=1G] [--job-name=mine] [-p] [big one] "
                              "[--parsable] [--array=0-11] "
                              "[--wrap=exec /usr/bin/trialbox batch /data/exp/plan.jsonl --index "
                              "\"$SLURM_ARRAY_TASK_ID\"]");
}
END_TEST

START_TEST(a_trial_without_a_limit_keeps_the_array_from_asking_for_it)
{
        struct slurm_array_request req = request(NULL);
        slurm_limits_add(&req.limits, 0, 0, 0);
        slurm_limits_add(&req.limits, 900, 2LL << 30, 0);
        _cleanup_free_ char *got = sbatch_line(&req);
        assert_lacks(got, "--time");
        assert_lacks(got, "--mem");
        assert_contains(got, "[--cpus-per-task=2]");
}
END_TEST

START_TEST(the_job_shell_line_quotes_paths_and_flags_and_holds_no_plan_data)
{
        char *const task_args[] = { "--retries", "3", "x'; rm -rf ~; '", NULL };
        struct slurm_array_request req = { .trialbox = "/opt/tb $(id)/trialbox", .plan = "/data/it's/plan.jsonl",
                                           .tasks = 1, .log_dir = "/l/100%", .task_args = task_args };
        struct strv v = { 0 };
        struct tb_error err = { 0 };
        ck_assert_int_eq(slurm_sbatch_argv(&req, &v, &err), 0);
        ck_assert_str_eq(v.v[v.n - 1], "--wrap=exec '/opt/tb $(id)/trialbox' batch '/data/it'\\''s/plan.jsonl' "
                                       "--index \"$SLURM_ARRAY_TASK_ID\" --retries 3 'x'\\''; rm -rf ~; '\\'''");
        ck_assert_str_eq(v.v[v.n - 2], "--array=0-0");
        ck_assert_str_eq(v.v[2], "--output=/l/100%%/slurm-%A_%a.out");
        strv_done(&v);
}
END_TEST

START_TEST(slurm_args_may_not_take_over_the_array_or_the_wait)
{
        static const char *const theirs[] = { "--array=0-3", "-a 1", "--wrap=id", "--parsable", "--wait", "-W" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(theirs); i++) {
                struct slurm_array_request req = request(theirs[i]);
                struct strv v = { 0 };
                struct tb_error err = { 0 };
                ck_assert_msg(slurm_sbatch_argv(&req, &v, &err) == -EINVAL, "'%s' accepted", theirs[i]);
                assert_contains(err.msg, "trialbox sets them");
                ck_assert_uint_eq(v.n, 0);
        }
        struct slurm_array_request req = request(NULL);
        req.tasks = 0;
        struct strv v = { 0 };
        struct tb_error err = { 0 };
        ck_assert_int_eq(slurm_sbatch_argv(&req, &v, &err), -EINVAL);
        req = request(NULL);
        req.plan = "plan.jsonl";
        ck_assert_int_eq(slurm_sbatch_argv(&req, &v, &err), -EINVAL);
        ck_assert_uint_eq(v.n, 0);
}
END_TEST

/* ---- what a task reads of its job ---- */

START_TEST(a_task_knows_its_array_id_and_index_and_a_plain_job_its_id)
{
        struct slurm_ids ids = slurm_ids_from_env(
                ENV("SLURM_JOB_ID=1240", "SLURM_ARRAY_JOB_ID=1234", "SLURM_ARRAY_TASK_ID=6"));
        ck_assert_int_eq(ids.job_id, 1234);
        ck_assert_int_eq(ids.array_task_id, 6);
        ids = slurm_ids_from_env(ENV("PATH=/bin", "SLURM_JOB_ID=77"));
        ck_assert_int_eq(ids.job_id, 77);
        ck_assert_int_eq(ids.array_task_id, -1);
        ids = slurm_ids_from_env(ENV("SLURM_JOB_IDX=5", "SLURM_ARRAY_TASK_ID=2"));
        ck_assert_int_eq(ids.job_id, -1);
        ck_assert_int_eq(ids.array_task_id, -1);
        ids = slurm_ids_from_env(ENV("SLURM_JOB_ID=12x", "SLURM_ARRAY_JOB_ID=-3", "SLURM_ARRAY_TASK_ID=1"));
        ck_assert_int_eq(ids.job_id, -1);
        ids = slurm_ids_from_env(NULL);
        ck_assert_int_eq(ids.job_id, -1);
}
END_TEST

START_TEST(a_jobcomp_line_gives_the_state_and_exit_code_of_its_task)
{
        const char *line = "JobId=9 UserId=root(0) GroupId=root(0) Name=wrap JobState=FAILED Partition=debug "
                           "WorkDir=/tmp/a b ArrayJobId=5 ArrayTaskId=3 DerivedExitCode=0:0 ExitCode=3:0 \n";
        struct slurm_task_end end = { 0 };
        ck_assert(slurm_jobcomp_line_match(line, 5, 3, &end));
        ck_assert_str_eq(end.state, "FAILED");
        ck_assert_int_eq(end.exit_code, 3);
        ck_assert_int_eq(end.signal, 0);
        ck_assert(!slurm_jobcomp_line_match(line, 5, 2, &end));
        ck_assert(!slurm_jobcomp_line_match(line, 9, 3, &end));
        ck_assert(slurm_jobcomp_line_match(line, 9, -1, &end));
        ck_assert(!slurm_jobcomp_line_match("JobId=9 JobState=", 9, -1, &end));
        ck_assert(slurm_jobcomp_line_match("JobId=4 JobState=CANCELLED ExitCode=0:15", 4, -1, &end));
        ck_assert_str_eq(end.state, "CANCELLED");
        ck_assert_int_eq(end.signal, 15);
}
END_TEST

/* ---- the real cluster ---- */

/* A stand-in for trialbox on the node: `batch PLAN --index I [MODE]`. It
 * records its environment, runs bwrap or sleeps as MODE says, writes
 * out.I; task 3 exits 3. */
static const char fake_trialbox[] =
        "#!/bin/sh\n"
        "dir=$(dirname \"$2\"); i=$4\n"
        "env >\"$dir/env.$i\"\n"
        "case \"${5:-}\" in\n"
        "bwrap) bwrap --ro-bind / / true; echo $? >\"$dir/bwrap.$i\" ;;\n"
        "sleep) trap 'echo term >\"$dir/term.$i\"; exit 143' TERM; sleep 60 & wait $! ;;\n"
        "esac\n"
        "echo \"$SLURM_ARRAY_TASK_ID\" >\"$dir/out.$i\"\n"
        "[ \"$i\" != 3 ] || exit 3\n";

struct job_dir {
        char *dir, *fake, *plan;
};

static void job_dir_new(struct job_dir *j)
{
        j->dir = tmpdir_new();
        ck_assert_int_eq(chmod(j->dir, 0777), 0); /* an unprivileged submitter's tasks write here too */
        j->fake = path_in(j->dir, "trialbox");
        j->plan = path_in(j->dir, "plan.jsonl");
        write_text(j->fake, fake_trialbox, 0755);
        write_text(j->plan, "", 0644);
}

static void job_dir_free(struct job_dir *j)
{
        tmpdir_remove(j->dir);
        free(j->dir);
        free(j->fake);
        free(j->plan);
}

static int count_ticks(const struct slurm_array_state *st, void *userdata)
{
        (void)st;
        ++*(int *)userdata;
        return 0;
}

/* Submit `tasks` tasks of the fake in MODE with these limits (or none),
 * wait for them: the job id. */
static long long submit_and_wait(const struct job_dir *j, size_t tasks, const char *mode,
                                 const struct slurm_limits *limits)
{
        char *const task_args[] = { (char *)mode, NULL };
        _cleanup_free_ char *args = xasprintf("--chdir=%s --comment 'trialbox test'", j->dir);
        struct slurm_array_request req = { .trialbox = j->fake, .plan = j->plan, .tasks = tasks,
                                           .max_running = 2, .log_dir = j->dir, .slurm_args = args,
                                           .task_args = mode ? task_args : NULL };
        if (limits)
                req.limits = *limits;
        long long id = -1;
        struct tb_error err = { 0 };
        ck_assert_msg(slurm_submit(&req, environ, &id, &err) == 0, "%s", err.msg);
        ck_assert_int_gt(id, 0);
        int ticks = 0;
        ck_assert_msg(slurm_array_wait(id, environ, count_ticks, &ticks, &err) == 0, "%s", err.msg);
        ck_assert_int_ge(ticks, 1);
        struct slurm_array_state st;
        ck_assert_int_eq(slurm_array_poll(id, environ, &st, &err), 0);
        ck_assert(st.gone);
        return id;
}

/* DIR/WHAT.I, or NULL. */
static char *file_in(const char *dir, const char *what, size_t i)
{
        char name[64];
        snprintf(name, sizeof name, "%s.%zu", what, i);
        char *p = path_in(dir, name);
        char *text = read_text(p);
        free(p);
        return text;
}

START_TEST(an_array_runs_every_task_once_with_its_ids_and_jobcomp_keeps_its_end)
{
        struct job_dir j;
        job_dir_new(&j);
        struct slurm_limits limits = { 0 };
        slurm_limits_add(&limits, 60, 100LL << 20, 1);
        long long id = submit_and_wait(&j, 4, NULL, &limits);
        for (size_t i = 0; i < 4; i++) {
                char *out = file_in(j.dir, "out", i);
                ck_assert_msg(out != NULL, "task %zu wrote no output", i);
                char want[32];
                snprintf(want, sizeof want, "%zu\n", i);
                ck_assert_str_eq(out, want);
                free(out);
                /* What the task saw of its job is what slurm_ids_from_env reads. */
                char *env = file_in(j.dir, "env", i);
                ck_assert_ptr_nonnull(env);
                struct strv envp = { 0 };
                for (char *line = strtok(env, "\n"); line; line = strtok(NULL, "\n"))
                        strv_add(&envp, line);
                struct slurm_ids ids = slurm_ids_from_env(envp.v);
                ck_assert_int_eq(ids.job_id, id);
                ck_assert_int_eq(ids.array_task_id, (long long)i);
                /* The Trials' limits reached Slurm: 100 MiB and the margin, one CPU. */
                ck_assert_msg(strv_contains(&envp, "SLURM_MEM_PER_NODE=164"), "task %zu: no 164 MiB", i);
                ck_assert(strv_contains(&envp, "SLURM_CPUS_PER_TASK=1"));
                ck_assert(strv_contains(&envp, "SLURM_JOB_NAME=trialbox-batch"));
                strv_done(&envp);
                free(env);
        }

        _cleanup_free_ char *jobcomp = NULL;
        struct tb_error err = { 0 };
        ck_assert_msg(slurm_jobcomp_path(environ, &jobcomp, &err) == 0, "%s", err.msg);
        struct slurm_task_end end = { 0 };
        ck_assert_msg(slurm_jobcomp_find(jobcomp, id, 0, &end, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(end.state, "COMPLETED");
        ck_assert_int_eq(end.exit_code, 0);
        ck_assert_int_eq(slurm_jobcomp_find(jobcomp, id, 3, &end, &err), 0);
        ck_assert_str_eq(end.state, "FAILED");
        ck_assert_int_eq(end.exit_code, 3);
        ck_assert_int_eq(slurm_jobcomp_find(jobcomp, id, 4, &end, &err), -ENOENT);
        job_dir_free(&j);
}
END_TEST

static void assert_bwrap_ran(const struct job_dir *j, size_t tasks)
{
        for (size_t i = 0; i < tasks; i++) {
                char *st = file_in(j->dir, "bwrap", i);
                ck_assert_msg(st != NULL, "task %zu did not run bwrap", i);
                ck_assert_msg(strcmp(st, "0\n") == 0, "bwrap in task %zu exited %s", i, st);
                free(st);
        }
}

START_TEST(bwrap_runs_inside_a_task_of_this_submitter)
{
        struct job_dir j;
        job_dir_new(&j);
        submit_and_wait(&j, 2, "bwrap", NULL);
        assert_bwrap_ran(&j, 2);
        job_dir_free(&j);
}
END_TEST

/* As root, the same from `nobody` (as the user of a shared cluster). */
START_TEST(bwrap_runs_inside_a_task_of_an_unprivileged_submitter)
{
        if (geteuid() != 0)
                return; /* already unprivileged: the case above is this one */
        struct job_dir j;
        job_dir_new(&j);
        struct passwd *pw = getpwnam("nobody");
        ck_assert_ptr_nonnull(pw);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0 || chdir(j.dir) < 0)
                        _exit(99);
                submit_and_wait(&j, 2, "bwrap", NULL);
                _exit(0);
        }
        ck_assert_int_eq(wait_status(pid), 0);
        assert_bwrap_ran(&j, 2);
        _cleanup_free_ char *env = file_in(j.dir, "env", 0);
        assert_contains(env, "SLURM_JOB_UID=65534");
        job_dir_free(&j);
}
END_TEST

static int cancel_once_running(const struct slurm_array_state *st, void *userdata)
{
        long long id = *(long long *)userdata;
        if (id > 0 && st->running > 0) {
                struct tb_error err = { 0 };
                ck_assert_msg(slurm_array_cancel(id, SIGTERM, environ, &err) == 0, "%s", err.msg);
                *(long long *)userdata = -id;
        }
        return 0;
}

START_TEST(a_cancelled_array_terms_its_running_tasks_and_never_starts_the_rest)
{
        struct job_dir j;
        job_dir_new(&j);
        char *const task_args[] = { "sleep", NULL };
        struct slurm_array_request req = { .trialbox = j.fake, .plan = j.plan, .tasks = 3, .max_running = 1,
                                           .log_dir = j.dir, .task_args = task_args };
        long long id = -1;
        struct tb_error err = { 0 };
        ck_assert_msg(slurm_submit(&req, environ, &id, &err) == 0, "%s", err.msg);
        char *env0 = path_in(j.dir, "env.0");
        ck_assert_msg(wait_for_file(env0, 30000), "task 0 never started");
        free(env0);
        struct slurm_array_state st;
        ck_assert_msg(slurm_task_poll(id, 0, environ, &st, &err) == 0, "%s", err.msg);
        ck_assert(st.running == 1 && !st.gone);
        ck_assert_int_eq(slurm_task_poll(id, 2, environ, &st, &err), 0);
        ck_assert(st.pending == 1 && !st.gone);
        long long arg = id;
        ck_assert_msg(slurm_array_wait(id, environ, cancel_once_running, &arg, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(arg, -id);
        char *term = file_in(j.dir, "term", 0);
        ck_assert_msg(term != NULL, "the running task got no SIGTERM");
        free(term);
        for (size_t i = 1; i < 3; i++) {
                char *env = file_in(j.dir, "env", i);
                ck_assert_msg(env == NULL, "task %zu started after the cancel", i);
        }
        ck_assert_int_eq(slurm_task_poll(id, 0, environ, &st, &err), 0);
        ck_assert(st.gone);
        /* Cancelling what is gone is no error. */
        ck_assert_int_eq(slurm_array_cancel(id, SIGTERM, environ, &err), 0);
        job_dir_free(&j);
}
END_TEST

START_TEST(a_forgotten_job_is_gone_and_a_missing_sbatch_is_named)
{
        struct slurm_array_state st;
        struct tb_error err = { 0 };
        ck_assert_int_eq(slurm_array_poll(999999999, environ, &st, &err), 0);
        ck_assert(st.gone);
        struct slurm_array_request req = request(NULL);
        long long id = -1;
        ck_assert_int_eq(slurm_submit(&req, ENV("PATH=/nonexistent"), &id, &err), -ENOENT);
        assert_contains(err.msg, "slurm-client");
}
END_TEST

/* ---- `trialbox batch PLAN --slurm` on the cluster ---- */

struct bexp {
        struct fixture f; /* its folder and repo/; it keeps the paths below */
        char *dir;        /* f.dir */
        char *plan, *results, *job;
};

/* A folder with repo/ (writable by any user: the Trials leave markers in
 * it) and plan.jsonl of shell Trials `id: script [extra fields]`. */
static void bexp_new(struct bexp *e, const char *const trials[][3])
{
        fixture_new(&e->f);
        e->dir = e->f.dir;
        ck_assert_int_eq(chmod(e->dir, 0777), 0);
        ck_assert_int_eq(chmod(e->f.repo, 0777), 0);
        e->plan = fixture_keep(&e->f, path_in(e->dir, "plan.jsonl"));
        e->results = fixture_keep(&e->f, path_in(e->dir, "plan.results.jsonl"));
        e->job = fixture_keep(&e->f, path_in(e->dir, "plan.jsonl.slurm-job"));
        struct strbuf plan = { 0 };
        for (size_t i = 0; trials[i][0]; i++) {
                json_object *script = json_object_new_string(trials[i][1]);
                strbuf_addf(&plan, "{\"id\":\"%s\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"out/%s\","
                                   "\"args\":[\"-c\",%s]%s%s}\n",
                            trials[i][0], trials[i][0], json_object_to_json_string(script), trials[i][2] ? "," : "",
                            trials[i][2] ? trials[i][2] : "");
                json_object_put(script);
        }
        write_plan(e->plan, plan.s);
        free(plan.s);
}

static void bexp_free(struct bexp *e) { fixture_free(&e->f); }

/* Its void Trials (out/void*) are void because bwrap refuses their sandbox. */
static void tb_batch(struct proc_result *r, const struct bexp *e, const char *const extra[])
{
        char *argv[16] = { TRIALBOX_BIN, "batch", e->plan };
        size_t n = 3;
        for (size_t i = 0; extra && extra[i] && n + 1 < 16; i++)
                argv[n++] = (char *)extra[i];
        argv[n] = NULL;
        run_argv(r, tb_env(ENV("TRIALBOX_BATCH_BACKOFF_MS=1", "TRIALBOX_BWRAP=" FAKE("bwrap-refuses-void"))), argv);
}

/* Trial `id`'s results line, parsed, or NULL. */
static json_object *result_of(const struct bexp *e, const char *id) { return results_line(e->results, id); }

/* A field of a results line as text ("null" for null or missing). */
static char *field_of(json_object *j, const char *field)
{
        json_object *v = NULL;
        json_object_object_get_ex(j, field, &v);
        return xstrdup(v ? json_object_get_string(v) : "null");
}

static long long saved_job(const struct bexp *e)
{
        char *text = read_text(e->job);
        ck_assert_msg(text != NULL, "no '%s'", e->job);
        long long id = strtoll(text, NULL, 10);
        free(text);
        ck_assert_int_gt(id, 0);
        return id;
}

/* Every Trial's outcome.json names the array and its own task. */
static void assert_slurm_ids(const struct bexp *e, const char *const trials[][3], long long job)
{
        for (size_t i = 0; trials[i][0]; i++) {
                char *out = xasprintf("%s/out/%s", e->dir, trials[i][0]);
                char *got_job = outcome_field(out, "slurm_job_id"), *got_task = outcome_field(out, "slurm_array_task_id");
                char want_job[32], want_task[32];
                snprintf(want_job, sizeof want_job, "%lld", job);
                snprintf(want_task, sizeof want_task, "%zu", i);
                ck_assert_msg(got_job && strcmp(got_job, want_job) == 0, "%s: slurm_job_id %s, not %s", trials[i][0],
                              got_job ? got_job : "(none)", want_job);
                ck_assert_msg(got_task && strcmp(got_task, want_task) == 0, "%s: slurm_array_task_id %s, not %s",
                              trials[i][0], got_task ? got_task : "(none)", want_task);
                free(got_job);
                free(got_task);
                free(out);
        }
}

/* Checked before anything is submitted, cluster or not. */
START_TEST(a_bad_plan_or_bad_slurm_args_are_exit_2_and_submit_nothing)
{
        static const char *const one[][3] = { { "t", "true", NULL }, { NULL, NULL, NULL } };
        struct bexp e;
        bexp_new(&e, one);
        static const char *const bad_args[] = { "--wrap=true", "--array=0-3", "--wait", "'unclosed" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad_args); i++) {
                struct proc_result r;
                tb_batch(&r, &e, (const char *const[]){ "--slurm", "--slurm-args", bad_args[i], NULL });
                ck_assert_msg(r.status == 2, "--slurm-args %s: exit %d: %s", bad_args[i], r.status, r.err);
                ck_assert_msg(one_line(r.err), "%s", r.err);
                proc_result_free(&r);
        }
        struct proc_result r;
        tb_batch(&r, &e, (const char *const[]){ "--no-wait", NULL });
        ck_assert_msg(r.status == 2 && strstr(r.err, "--slurm"), "exit %d: %s", r.status, r.err);
        proc_result_free(&r);
        write_text(e.plan, "{\"id\":\"t\",\"harness\":\"shell\",\"output_dir\":\"out/t\"}\n", 0644); /* no repo */
        tb_batch(&r, &e, (const char *const[]){ "--slurm", NULL });
        ck_assert_msg(r.status == 2 && strstr(r.err, ":1:"), "exit %d: %s", r.status, r.err);
        proc_result_free(&r);
        struct stat st;
        ck_assert_int_ne(lstat(e.job, &st), 0);
        bexp_free(&e);
}
END_TEST

/* The summary's words, but those that vary between runs: durations and CPU
 * ("189ms", "2.9s", "1.5m") and peak memory ("8.9M"). */
static char *without_durations(const char *table)
{
        struct strbuf sb = { 0 };
        char *copy = xstrdup(table);
        for (char *save = NULL, *w = strtok_r(copy, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
                /* A figure with a unit (15ms, 2.9s, 1.5m, 2.0M): counts have none. */
                size_t n = strlen(w);
                bool measure = n > 1 && isdigit((unsigned char)w[0]) && strchr("smhKMGT", w[n - 1]);
                if (!measure)
                        strbuf_addf(&sb, "%s ", w);
        }
        free(copy);
        return sb.s ? sb.s : xstrdup("");
}

static const char *const mixed[][3] = {
        { "ok0", "echo ok0 >> ran", NULL },
        { "fail", "echo fail >> ran; exit 3", NULL },
        { "void", "true", NULL }, /* void: bwrap refuses its sandbox (tb_batch) */
        { "ok1", "echo ok1 >> ran", NULL },
        { "killed", "echo killed >> ran; kill -KILL $$", NULL },
        { NULL, NULL, NULL },
};

START_TEST(a_plan_through_slurm_gives_the_results_of_a_local_run_and_records_its_slurm_ids)
{
        struct bexp local, slurm;
        bexp_new(&local, mixed);
        bexp_new(&slurm, mixed);
        struct proc_result lr, sr;
        tb_batch(&lr, &local, (const char *const[]){ "--retries", "0", "-q", NULL });
        tb_batch(&sr, &slurm, (const char *const[]){ "--slurm", "--jobs", "2", "--retries", "0", NULL });
        ck_assert_msg(sr.status == lr.status, "--slurm exit %d, local %d: %s", sr.status, lr.status, sr.err);
        ck_assert_int_eq(sr.status, 1); /* the void Trial */
        ck_assert_msg(strstr(sr.err, "submitted job array") != NULL, "%s", sr.err);
        for (size_t i = 0; mixed[i][0]; i++) {
                json_object *l = result_of(&local, mixed[i][0]), *s = result_of(&slurm, mixed[i][0]);
                ck_assert_msg(l && s, "no results line for '%s'", mixed[i][0]);
                static const char *const fields[] = { "outcome", "cause", "exit_code", "signal", "attempts" };
                for (size_t f = 0; f < TB_ARRAY_SIZE(fields); f++) {
                        char *a = field_of(l, fields[f]), *b = field_of(s, fields[f]);
                        ck_assert_msg(strcmp(a, b) == 0, "%s %s: local '%s', --slurm '%s'", mixed[i][0], fields[f], a, b);
                        free(a);
                        free(b);
                }
                json_object_put(l);
                json_object_put(s);
        }
        /* The same summary table (but the durations), and every Trial ran once. */
        char *st = without_durations(sr.out), *lt = without_durations(lr.out);
        ck_assert_msg(strstr(st, "completed") && strcmp(st, lt) == 0, "--slurm:\n%s\nlocal:\n%s", sr.out, lr.out);
        free(st);
        free(lt);
        char *ran = path_in(slurm.dir, "repo/ran");
        char *text = read_text(ran);
        ck_assert_msg(text && count_lines(text) == 4, "ran: %s", text ? text : "(nothing)");
        free(text);
        free(ran);
        assert_slurm_ids(&slurm, mixed, saved_job(&slurm));
        /* A local run records no Slurm ids. */
        _cleanup_free_ char *out = path_in(local.dir, "out/ok0");
        _cleanup_free_ char *none = outcome_field(out, "slurm_job_id");
        ck_assert_msg(none == NULL || strcmp(none, "null") == 0, "local slurm_job_id %s", none);
        proc_result_free(&lr);
        proc_result_free(&sr);
        bexp_free(&local);
        bexp_free(&slurm);
}
END_TEST

static const char *const quick[][3] = {
        { "a", "echo a >> ran; sleep 1", NULL },
        { "b", "echo b >> ran; sleep 1", NULL },
        { "c", "echo c >> ran; exit 1", NULL },
        { "d", "echo d >> ran", NULL },
        { NULL, NULL, NULL },
};

START_TEST(no_wait_returns_after_submitting_and_the_next_batch_waits_and_gathers)
{
        struct bexp e;
        bexp_new(&e, quick);
        struct proc_result r;
        tb_batch(&r, &e, (const char *const[]){ "--slurm", "--no-wait", "--jobs", "1", NULL });
        ck_assert_msg(r.status == 0, "%d: %s", r.status, r.err);
        long long job = saved_job(&e);
        char want[32];
        snprintf(want, sizeof want, "%lld\n", job);
        ck_assert_str_eq(r.out, want);
        proc_result_free(&r);
        /* The plain command resumes: waits for the saved array, gathers. */
        tb_batch(&r, &e, (const char *const[]){ "--retries", "0", NULL });
        ck_assert_msg(r.status == 0, "%d: %s", r.status, r.err);
        for (size_t i = 0; quick[i][0]; i++) {
                json_object *j = result_of(&e, quick[i][0]);
                ck_assert_msg(j != NULL, "no results line for '%s'", quick[i][0]);
                char *kind = field_of(j, "outcome");
                ck_assert_str_eq(kind, i == 2 ? "failed" : "completed");
                free(kind);
                json_object_put(j);
        }
        assert_slurm_ids(&e, quick, job);
        proc_result_free(&r);
        /* Again, with --slurm: every Trial is final, nothing is submitted, nothing runs twice. */
        tb_batch(&r, &e, (const char *const[]){ "--slurm", NULL });
        ck_assert_msg(r.status == 0, "%d: %s", r.status, r.err);
        ck_assert_msg(strstr(r.err, "nothing to submit") != NULL, "%s", r.err);
        ck_assert_int_eq(saved_job(&e), job);
        _cleanup_free_ char *ran = path_in(e.dir, "repo/ran");
        _cleanup_free_ char *text = read_text(ran);
        ck_assert_msg(text && count_lines(text) == 4, "ran: %s", text ? text : "(nothing)");
        proc_result_free(&r);
        bexp_free(&e);
}
END_TEST

/* One Trial, t, that appends "t" to REPO/ran. */
static const char *const one_that_leaves_ran[][3] = { { "t", "echo t >> ran", NULL }, { NULL, NULL, NULL } };

/* A record as if task 0 of a job the controller never had were running
 * the Trial on another node: judged by squeue (gone), not by its pid. */
START_TEST(a_running_record_of_a_gone_slurm_task_is_a_lost_launcher_whatever_its_pid)
{
        struct bexp e;
        bexp_new(&e, one_that_leaves_ran);
        _cleanup_free_ char *out = path_in(e.dir, "out/t");
        ck_assert_int_eq(mkdir_p(out, 0777), 0);
        char boot[64] = "";
        char *b = read_text("/proc/sys/kernel/random/boot_id");
        snprintf(boot, sizeof boot, "%.36s", b);
        free(b);
        /* pid 1 of this very boot is alive: only the Slurm ids can say it is lost. */
        /* The batch's own token, as its task's run would have echoed it. */
        static const char nonce[] = "0123456789abcdef0123456789abcdef";
        char *rec = xasprintf("{\"outcome\":\"running\",\"harness\":\"shell\",\"pid\":1,\"pid_start\":%s,"
                              "\"boot_id\":\"%s\",\"slurm_job_id\":999999990,\"slurm_array_task_id\":0,"
                              "\"launcher_nonce\":\"%s\"}\n",
                              "null", boot, nonce);
        write_in(out, "outcome.json", rec, 0644);
        _cleanup_free_ char *launcher = xasprintf("{\"outcome\":\"running\",\"pid\":1,\"nonce\":\"%s\"}\n", nonce);
        write_in(out, "launcher.json", launcher, 0600);
        free(rec);
        write_text(e.job, "999999990\n", 0644);
        struct proc_result r;
        tb_batch(&r, &e, (const char *const[]){ "--retries", "0", NULL });
        ck_assert_msg(r.status == 1, "%d: %s", r.status, r.err);
        json_object *j = result_of(&e, "t");
        char *kind = field_of(j, "outcome"), *cause = field_of(j, "cause"), *detail = field_of(j, "detail");
        ck_assert_str_eq(kind, "void");
        ck_assert_str_eq(cause, "launcher_lost");
        ck_assert_msg(strstr(detail, "999999990_0 is gone") != NULL, "%s", detail);
        free(kind);
        free(cause);
        free(detail);
        json_object_put(j);
        proc_result_free(&r);
        bexp_free(&e);
}
END_TEST

/* `trialbox batch plan.jsonl` run in the plan's folder: every path derived
 * from the plan (the saved job id, the tasks' logs, the results, the
 * clones) is beside it, and the next plain batch finds the job and waits
 * for it instead of running the Trials here. */
START_TEST(a_plan_named_without_a_folder_keeps_its_job_logs_results_and_clones_beside_it)
{
        struct bexp e;
        bexp_new(&e, one_that_leaves_ran);
        _cleanup_free_ char *src = path_in(e.dir, "src");
        mkdir_p(src, 0755);
        sh_ok("cd '%s' && git init -q -b main && echo one > file && git add file && " GIT " commit -qm one", src);
        _cleanup_free_ char *plan = read_text(e.plan);
        _cleanup_free_ char *more = xasprintf("%s{\"id\":\"c\",\"harness\":\"shell\",\"repo_from\":\"src\","
                                              "\"output_dir\":\"out/c\",\"args\":[\"-c\",\"echo c > mine\"]}\n",
                                              plan);
        write_plan(e.plan, more);
        char *argv[] = { "/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", e.dir, TRIALBOX_BIN, "batch",
                         "plan.jsonl", "--slurm", "--no-wait", NULL };
        struct proc_result r;
        run_argv(&r, tb_env(NULL), argv);
        ck_assert_msg(r.status == 0, "%d: %s", r.status, r.err);
        long long job = saved_job(&e); /* in the plan's folder */
        proc_result_free(&r);
        char *again[] = { "/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", e.dir, TRIALBOX_BIN, "batch",
                          "plan.jsonl", NULL };
        run_argv(&r, tb_env(NULL), again);
        ck_assert_msg(r.status == 0, "%d: %s", r.status, r.err);
        assert_contains(r.err, "plan.jsonl.slurm-job");
        assert_slurm_ids(&e, (const char *const[][3]){ { "t", NULL, NULL }, { "c", NULL, NULL }, { NULL, NULL, NULL } },
                         job);
        json_object *j = result_of(&e, "c");
        ck_assert_msg(j != NULL, "no results line for 'c' in '%s'", e.results);
        json_object_put(j);
        assert_file_in(e.dir, "out/c.repo/mine", "c\n");
        _cleanup_free_ char *logs = path_in(e.dir, "slurm-logs");
        _cleanup_free_ char *names = listing(logs);
        _cleanup_free_ char *want = xasprintf("slurm-%lld_0.out", job);
        assert_contains(names, want);
        proc_result_free(&r);
        bexp_free(&e);
}
END_TEST

START_TEST(sigterm_to_a_waiting_batch_cancels_the_array_once_and_still_records_the_outcomes)
{
        static const char *const slow[][3] = {
                { "s0", "echo s0 >> ran; sleep 60", NULL },
                { "s1", "echo s1 >> ran; sleep 60", NULL },
                { "s2", "echo s2 >> ran; sleep 60", NULL },
                { NULL, NULL, NULL },
        };
        struct bexp e;
        bexp_new(&e, slow);
        char *err_file = path_in(e.dir, "batch.err"), *out_file = path_in(e.dir, "batch.out");
        char *argv[] = { TRIALBOX_BIN, "batch", e.plan, "--slurm", "--jobs", "1", "--retries", "0", NULL };
        pid_t pid = spawn_argv(tb_env(NULL), argv, out_file, err_file);
        _cleanup_free_ char *ran = path_in(e.dir, "repo/ran");
        ck_assert_msg(wait_for_file(ran, 60000), "the first Trial never started");
        ck_assert_int_eq(kill(pid, SIGTERM), 0);
        ck_assert_int_eq(wait_status(pid), 128 + SIGTERM);
        char *err = read_text(err_file);
        ck_assert_msg(err && strstr(err, "cancelling job") != NULL, "%s", err ? err : "");
        /* Once. */
        ck_assert_ptr_eq(strstr(strstr(err, "cancelling job") + 1, "cancelling job"), NULL);
        free(err);
        /* The running Trial stopped and recorded a final Outcome; the others never ran. */
        char *out = path_in(e.dir, "out/s0");
        char *kind = outcome_field(out, "outcome");
        ck_assert_msg(kind && strcmp(kind, "running") != 0, "s0 is '%s'", kind ? kind : "(none)");
        free(kind);
        free(out);
        json_object *j = result_of(&e, "s0");
        ck_assert_ptr_nonnull(j);
        json_object_put(j);
        for (size_t i = 1; i < 3; i++) {
                j = result_of(&e, slow[i][0]);
                ck_assert_msg(j != NULL, "no results line for '%s'", slow[i][0]);
                char *k = field_of(j, "outcome");
                ck_assert_str_eq(k, "null");
                free(k);
                json_object_put(j);
        }
        char *text = read_text(ran);
        ck_assert_msg(text && count_lines(text) == 1, "ran: %s", text ? text : "(nothing)");
        free(text);
        /* The array is gone from the queue. */
        struct slurm_array_state st;
        struct tb_error terr = { 0 };
        ck_assert_int_eq(slurm_array_poll(saved_job(&e), environ, &st, &terr), 0);
        ck_assert(st.gone);
        free(err_file);
        free(out_file);
        bexp_free(&e);
}
END_TEST

/* A Trial of an array cancelled by SIGTERM to the waiting batch is
 * void/interrupted, and the next --slurm submits it again, retries or not. */
START_TEST(an_interrupted_trial_of_an_array_runs_again_in_the_next_one)
{
        static const char *const one[][3] = {
                { "s", "echo s >> ran; while [ ! -e go ]; do sleep 0.1; done", NULL },
                { NULL, NULL, NULL },
        };
        struct bexp e;
        bexp_new(&e, one);
        char *argv[] = { TRIALBOX_BIN, "batch", e.plan, "--slurm", "--retries", "0", NULL };
        _cleanup_free_ char *err_file = path_in(e.dir, "batch.err");
        pid_t pid = spawn_argv(tb_env(NULL), argv, "/dev/null", err_file);
        _cleanup_free_ char *ran = path_in(e.dir, "repo/ran");
        ck_assert_msg(wait_for_file(ran, 60000), "the Trial never started");
        ck_assert_int_eq(kill(pid, SIGTERM), 0);
        ck_assert_int_eq(wait_status(pid), 128 + SIGTERM);
        json_object *j = result_of(&e, "s");
        ck_assert_ptr_nonnull(j);
        char *kind = field_of(j, "outcome"), *cause = field_of(j, "cause");
        ck_assert_str_eq(kind, "void");
        ck_assert_str_eq(cause, "interrupted");
        free(kind);
        free(cause);
        json_object_put(j);
        _cleanup_free_ char *go = path_in(e.dir, "repo/go");
        write_text(go, "", 0666);
        struct proc_result r;
        tb_batch(&r, &e, (const char *const[]){ "--slurm", "--retries", "0", NULL });
        ck_assert_msg(r.status == 0, "%d: %s", r.status, r.err);
        j = result_of(&e, "s");
        kind = field_of(j, "outcome");
        ck_assert_str_eq(kind, "completed");
        free(kind);
        json_object_put(j);
        _cleanup_free_ char *text = read_text(ran);
        ck_assert_msg(text && count_lines(text) == 2, "ran: %s", text ? text : "(nothing)");
        proc_result_free(&r);
        bexp_free(&e);
}
END_TEST

/* SLURM_CONF from the environment, or tests/fixtures/slurm-cluster's; true when a
 * cluster answers there. */
static bool cluster_up(void)
{
        const char *conf = getenv("SLURM_CONF");
        _cleanup_free_ char *mine = NULL;
        if (!conf) {
                const char *dir = getenv("TRIALBOX_SLURM_DIR");
                mine = xasprintf("%s/slurm.conf", dir ? dir : "/run/trialbox-slurm");
                conf = mine;
                setenv("SLURM_CONF", conf, 1);
        }
        if (access(conf, R_OK) != 0 || !host_can("timeout 10 sinfo -h -o %T 2>/dev/null | grep -qE 'idle|mix|alloc'"))
                return false;
        return true;
}

int main(void)
{
        Suite *s = suite_create("slurm");
        TCase *tc = tb_tcase(s, "command line", 0);
        tcase_add_test(tc, slurm_args_split_like_a_shell_without_expanding_anything);
        tcase_add_test(tc, a_plan_becomes_one_array_with_the_largest_limits_of_its_trials);
        tcase_add_test(tc, limits_given_in_slurm_args_are_not_asked_twice);
        tcase_add_test(tc, the_arrays_time_limit_covers_every_attempt_and_the_backoff_between_them);
        tcase_add_test(tc, a_trial_without_a_limit_keeps_the_array_from_asking_for_it);
        tcase_add_test(tc, the_job_shell_line_quotes_paths_and_flags_and_holds_no_plan_data);
        tcase_add_test(tc, slurm_args_may_not_take_over_the_array_or_the_wait);
        tcase_add_test(tc, a_task_knows_its_array_id_and_index_and_a_plain_job_its_id);
        tcase_add_test(tc, a_jobcomp_line_gives_the_state_and_exit_code_of_its_task);
        tcase_add_test(tc, a_bad_plan_or_bad_slurm_args_are_exit_2_and_submit_nothing);
        bool up = cluster_up();
        if (up) {
                TCase *cl = tb_tcase(s, "cluster", 90); /* a few arrays of a few seconds each, on a busy machine */
                tcase_add_test(cl, an_array_runs_every_task_once_with_its_ids_and_jobcomp_keeps_its_end);
                tcase_add_test(cl, bwrap_runs_inside_a_task_of_this_submitter);
                tcase_add_test(cl, bwrap_runs_inside_a_task_of_an_unprivileged_submitter);
                tcase_add_test(cl, a_cancelled_array_terms_its_running_tasks_and_never_starts_the_rest);
                tcase_add_test(cl, a_forgotten_job_is_gone_and_a_missing_sbatch_is_named);
                TCase *bt = tb_tcase(s, "batch --slurm", 120); /* arrays of real Trials and a cancel, on a busy machine */
                tcase_add_test(bt, a_plan_through_slurm_gives_the_results_of_a_local_run_and_records_its_slurm_ids);
                tcase_add_test(bt, no_wait_returns_after_submitting_and_the_next_batch_waits_and_gathers);
                tcase_add_test(bt, a_running_record_of_a_gone_slurm_task_is_a_lost_launcher_whatever_its_pid);
                tcase_add_test(bt, sigterm_to_a_waiting_batch_cancels_the_array_once_and_still_records_the_outcomes);
                tcase_add_test(bt, a_plan_named_without_a_folder_keeps_its_job_logs_results_and_clones_beside_it);
                tcase_add_test(bt, an_interrupted_trial_of_an_array_runs_again_in_the_next_one);
        }
        int r = run_suite(s);
        if (r == 0 && !up) {
                printf("slurm: no cluster answers at SLURM_CONF (start one: tests/fixtures/slurm-cluster start): "
                       "the cluster cases are skipped\n");
                return 77;
        }
        return r;
}
