/* Slurm: the sbatch command line a plan becomes (--slurm-args, limits, the
 * one quoted shell line), the ids a task reads from its environment, the
 * jobcomp records; then, on the real single-node cluster of
 * tests/slurm/cluster (the ctest fixture starts it), an array submitted,
 * waited for, cancelled, and bwrap inside its tasks as root and as an
 * unprivileged submitter. Without a running cluster the cluster cases are
 * skipped (exit 77) once the others passed. */
#define _GNU_SOURCE
#include <check.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "slurm.h"
#include "testutil.h"

extern char **environ;

/* ---- the command line ---- */

static char *joined(const struct strv *v)
{
        struct strbuf sb = { 0 };
        for (size_t i = 0; i < v->n; i++)
                strbuf_addf(&sb, "%s[%s]", i ? " " : "", v->v[i]);
        return sb.s ? sb.s : xstrdup("");
}

START_TEST(slurm_args_split_like_a_shell_without_expanding_anything)
{
        static const struct {
                const char *in, *want;
        } table[] = {
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
                char *got = joined(&v);
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
                ck_assert_ptr_nonnull(strstr(err.msg, "--slurm-args"));
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
        char *s = joined(&v);
        strv_done(&v);
        return s;
}

START_TEST(a_plan_becomes_one_array_with_the_largest_limits_of_its_trials)
{
        struct slurm_array_request req = request(NULL);
        char *got = sbatch_line(&req);
        ck_assert_str_eq(got, "[sbatch] [--job-name=trialbox-batch] [--output=/data/exp/logs/slurm-%A_%a.out] "
                              "[--time=12] [--mem=1088M] [--cpus-per-task=2] [--parsable] [--array=0-11%4] "
                              "[--wrap=exec /usr/bin/trialbox batch /data/exp/plan.jsonl --index "
                              "\"$SLURM_ARRAY_TASK_ID\"]");
        free(got);
}
END_TEST

START_TEST(limits_given_in_slurm_args_are_not_asked_twice)
{
        struct slurm_array_request req = request("--time=5 -c4 --mem-per-cpu=1G --job-name=mine -p 'big one'");
        req.max_running = 0;
        char *got = sbatch_line(&req);
        ck_assert_str_eq(got, "[sbatch] [--job-name=trialbox-batch] [--output=/data/exp/logs/slurm-%A_%a.out] "
                              "[--time=5] [-c4] [--mem-per-cpu=1G] [--job-name=mine] [-p] [big one] "
                              "[--parsable] [--array=0-11] "
                              "[--wrap=exec /usr/bin/trialbox batch /data/exp/plan.jsonl --index "
                              "\"$SLURM_ARRAY_TASK_ID\"]");
        free(got);
}
END_TEST

START_TEST(a_trial_without_a_limit_keeps_the_array_from_asking_for_it)
{
        struct slurm_array_request req = request(NULL);
        slurm_limits_add(&req.limits, 0, 0, 0);
        slurm_limits_add(&req.limits, 900, 2LL << 30, 0);
        char *got = sbatch_line(&req);
        ck_assert_ptr_null(strstr(got, "--time"));
        ck_assert_ptr_null(strstr(got, "--mem"));
        ck_assert_ptr_nonnull(strstr(got, "[--cpus-per-task=2]"));
        free(got);
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
                ck_assert_ptr_nonnull(strstr(err.msg, "trialbox sets them"));
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
        char *env = file_in(j.dir, "env", 0);
        ck_assert_ptr_nonnull(strstr(env, "SLURM_JOB_UID=65534"));
        free(env);
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
        ck_assert_ptr_nonnull(strstr(err.msg, "slurm-client"));
}
END_TEST

/* SLURM_CONF from the environment, or tests/slurm/cluster's; true when a
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
        TCase *tc = tcase_create("command line");
        tcase_add_test(tc, slurm_args_split_like_a_shell_without_expanding_anything);
        tcase_add_test(tc, a_plan_becomes_one_array_with_the_largest_limits_of_its_trials);
        tcase_add_test(tc, limits_given_in_slurm_args_are_not_asked_twice);
        tcase_add_test(tc, a_trial_without_a_limit_keeps_the_array_from_asking_for_it);
        tcase_add_test(tc, the_job_shell_line_quotes_paths_and_flags_and_holds_no_plan_data);
        tcase_add_test(tc, slurm_args_may_not_take_over_the_array_or_the_wait);
        tcase_add_test(tc, a_task_knows_its_array_id_and_index_and_a_plain_job_its_id);
        tcase_add_test(tc, a_jobcomp_line_gives_the_state_and_exit_code_of_its_task);
        suite_add_tcase(s, tc);
        bool up = cluster_up();
        if (up) {
                TCase *cl = tcase_create("cluster");
                tcase_set_timeout(cl, 90); /* a few arrays of a few seconds each, on a busy machine */
                tcase_add_test(cl, an_array_runs_every_task_once_with_its_ids_and_jobcomp_keeps_its_end);
                tcase_add_test(cl, bwrap_runs_inside_a_task_of_this_submitter);
                tcase_add_test(cl, bwrap_runs_inside_a_task_of_an_unprivileged_submitter);
                tcase_add_test(cl, a_cancelled_array_terms_its_running_tasks_and_never_starts_the_rest);
                tcase_add_test(cl, a_forgotten_job_is_gone_and_a_missing_sbatch_is_named);
                suite_add_tcase(s, cl);
        }
        int r = run_suite(s);
        if (r == 0 && !up) {
                printf("slurm: no cluster answers at SLURM_CONF (start one: tests/slurm/cluster start): "
                       "the cluster cases are skipped\n");
                return 77;
        }
        return r;
}
