/* Integration tests: the real trialbox binary, the real bwrap, and the
 * `shell` Harness running small scripts that behave like agent CLIs (they
 * look for what they must not see, leave children behind, ignore signals). */
#define _GNU_SOURCE
#include <check.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tb_test.h"
#include "base/util.h"

/* Every Trial here is of the `shell` Harness. */

START_TEST(a_completed_session_writes_its_outcome_and_passes_its_status)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        tb_shell(&r, &f, NULL, EXTRA("--json", "--", "-c", "echo from-the-session"));
        ck_assert_int_eq(r.status, 0);
        assert_contains(r.out, "from-the-session\n");
        assert_outcome(&f, "outcome", "completed");
        assert_outcome(&f, "exit_code", "0");
        assert_outcome(&f, "sandboxed", "true");
        char home[1100];
        snprintf(home, sizeof home, "%s/home", f.out);
        assert_outcome(&f, "home", home);
        /* --json: the same object as the last line of stdout. */
        size_t n = strlen(r.out);
        ck_assert(n > 0 && r.out[n - 1] == '\n');
        r.out[n - 1] = '\0';
        char *last = strrchr(r.out, '\n');
        last = last ? last + 1 : r.out;
        ck_assert(last[0] == '{');
        assert_contains(last, "\"outcome\":\"completed\"");
        proc_result_free(&r);
        fixture_free(&f);

        fixture_new(&f);
        tb_shell(&r, &f, NULL, EXTRA("--", "-c", "exit 7"));
        assert_failed(&f, &r, 7);
        assert_outcome(&f, "signal", "null");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* trialbox starts its keeper on another CPU than its own (supervisor.c),
 * but bwrap and the session get every CPU trialbox may use: the session's
 * Cpus_allowed_list is trialbox's (this test's, which it inherits). */
START_TEST(the_session_may_use_every_cpu_trialbox_may)
{
        cpu_set_t cpus;
        ck_assert_int_eq(sched_getaffinity(0, sizeof cpus, &cpus), 0);
        if (CPU_COUNT(&cpus) < 2) {
                skip_note(__func__, "one CPU: trialbox narrows nothing");
                return;
        }
        _cleanup_free_ char *status = read_text("/proc/self/status");
        const char *line = strstr(status, "Cpus_allowed_list:");
        ck_assert_ptr_nonnull(line);
        _cleanup_free_ char *ours = xstrndup(line, strcspn(line, "\n"));
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        tb_shell(&r, &f, NULL, EXTRA("--", "-c", "grep '^Cpus_allowed_list:' /proc/self/status"));
        ck_assert_int_eq(r.status, 0);
        assert_contains(r.out, ours);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* A toolchain folder of the test's own on the PATH, with a tool in it. */
static char *fake_toolchain(const struct fixture *f, char *path_env, size_t cap)
{
        char *bin;
        if (asprintf(&bin, "%s/tools/bin", f->dir) < 0)
                abort();
        char p[1200];
        mkdir_p(bin, 0755);
        snprintf(p, sizeof p, "%s/fake-tool", bin);
        write_text(p, "#!/bin/sh\necho fake-tool ran\n", 0755);
        snprintf(path_env, cap, "PATH=%s:%s", bin, getenv("PATH"));
        return bin;
}

START_TEST(the_repository_is_writable_and_the_toolchains_are_not)
{
        struct fixture f;
        struct proc_result r;
        char path_env[4096], script[2048], p[1200];
        fixture_new(&f);
        char *bin = fake_toolchain(&f, path_env, sizeof path_env);
        snprintf(script, sizeof script,
                 "touch new-file && echo repo=rw; "
                 "touch '%s/planted' 2>/dev/null && echo tools=rw || echo tools=ro; "
                 "touch /usr/bin/tbtest-planted 2>/dev/null && echo usr=rw || echo usr=ro; "
                 "(echo >> /sandbox/harness/shell) 2>/dev/null && echo harness=rw || echo harness=ro; "
                 "touch /planted 2>/dev/null && echo root=rw || echo root=ro",
                 bin);
        tb_shell(&r, &f, ENV(path_env), EXTRA("--", "-c", script));
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.out, "repo=rw\ntools=ro\nusr=ro\nharness=ro\nroot=ro\n");
        snprintf(p, sizeof p, "%s/new-file", f.repo);
        ck_assert_int_eq(access(p, F_OK), 0);
        snprintf(p, sizeof p, "%s/planted", bin);
        ck_assert_int_ne(access(p, F_OK), 0);
        ck_assert_int_ne(access("/usr/bin/tbtest-planted", F_OK), 0);
        proc_result_free(&r);
        free(bin);
        fixture_free(&f);
}
END_TEST

START_TEST(a_bound_toolchain_is_on_the_session_path)
{
        struct fixture f;
        struct proc_result r;
        char path_env[4096];
        fixture_new(&f);
        char *bin = fake_toolchain(&f, path_env, sizeof path_env);
        tb_shell(&r, &f, ENV(path_env), EXTRA("--", "-c", "fake-tool"));
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.out, "fake-tool ran\n");
        proc_result_free(&r);
        free(bin);
        fixture_free(&f);

        /* The version-managed toolchains of this machine, where the host has them. */
        const char *tools[] = { "cargo --version", "rustc --version", "python3 --version", "node --version" };
        for (size_t i = 0; i < sizeof tools / sizeof *tools; i++) {
                if (!host_can(tools[i]))
                        continue;
                fixture_new(&f);
                tb_shell(&r, &f, NULL, EXTRA("--", "-c", tools[i]));
                ck_assert_msg(r.status == 0, "'%s' fails in the sandbox: %s", tools[i], r.err);
                proc_result_free(&r);
                fixture_free(&f);
        }
}
END_TEST

START_TEST(a_host_secret_variable_does_not_reach_the_session)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        tb_shell(&r, &f,
           ENV("OPENAI_API_KEY=sk-tbtest-openai", "AWS_SECRET_ACCESS_KEY=tbtest-aws", "EXTRA_ALLOWED=yes-allowed",
               "TRIALBOX_ENV_ALLOW=EXTRA_ALLOWED"),
           EXTRA("--", "-c", "env"));
        ck_assert_int_eq(r.status, 0);
        assert_lacks(r.out, "sk-tbtest-openai");
        assert_lacks(r.out, "tbtest-aws");
        assert_lacks(r.out, "OPENAI_API_KEY");
        assert_contains(r.out, "EXTRA_ALLOWED=yes-allowed");
        ck_assert_ptr_nonnull(strstr(r.out, "\nPATH=") ? strstr(r.out, "PATH=") : strstr(r.out, "PATH="));
        char home[1100];
        snprintf(home, sizeof home, "HOME=%s/home\n", f.out);
        assert_contains(r.out, home);
        snprintf(home, sizeof home, "XDG_CONFIG_HOME=%s/home/.config\n", f.out);
        assert_contains(r.out, home);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(a_background_child_left_by_the_session_is_gone_after_it_ends)
{
        struct fixture f;
        struct proc_result r;
        char script[2048], num[64];
        fixture_new(&f);
        snprintf(num, sizeof num, "2%d.%ld", (int)getpid() % 100000, (long)time(NULL) % 100000);
        snprintf(script, sizeof script,
                 "sleep %s & (sleep %s &) ; setsid sh -c 'sleep %s & ' ; sleep 0.3; m='%.3s''%s'; "
                 "n=0; for d in /proc/[0-9]*; do [ \"$(cat $d/comm 2>/dev/null)\" = sleep ] && "
                 "grep -q \"$m\" $d/cmdline 2>/dev/null && n=$((n+1)); done; echo running=$n",
                 num, num, num, num, num + 3);
        tb_shell(&r, &f, NULL, EXTRA("--", "-c", script));
        ck_assert_int_eq(r.status, 0);
        ck_assert_msg(strstr(r.out, "running=3") != NULL, "the session did not start its children: %s", r.out);
        bool gone = false;
        for (int i = 0; i < 200 && !gone; i++) {
                gone = !host_process_with(num);
                if (!gone)
                        usleep(10000);
        }
        ck_assert_msg(gone, "a child of the session outlived it");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(sigterm_to_trialbox_ends_the_session_as_void_interrupted)
{
        struct fixture f;
        char script[512], num[64];
        fixture_new(&f);
        sleep_number(num, sizeof num);
        snprintf(script, sizeof script, "touch READY; exec sleep %s", num);
        pid_t pid = tb_shell_start(&f, EXTRA("--", "-c", script), "READY", false);
        ck_assert(host_process_with(num));
        ck_assert_int_eq(kill(pid, SIGTERM), 0);
        ck_assert_int_eq(wait_status(pid), 128 + SIGTERM);
        /* The operator's signal, not the agent's failure: void, and how
         * the session ended is in the detail. */
        assert_outcome(&f, "outcome", "void");
        assert_outcome(&f, "cause", "interrupted");
        assert_outcome_has(&f, "detail", "the session was then killed by signal 15 (SIGTERM)");
        assert_outcome(&f, "signal", "null");
        assert_outcome(&f, "exit_code", "null");
        _cleanup_free_ char *cpu = outcome_field(f.out, "usage");
        ck_assert_msg(cpu && strcmp(cpu, "null") != 0, "a session that ran has its usage: %s", cpu);
        ck_assert(!host_process_with(num));
        fixture_free(&f);
}
END_TEST

START_TEST(a_second_signal_kills_a_session_that_ignores_the_first)
{
        struct fixture f;
        fixture_new(&f);
        pid_t pid = tb_shell_start(&f, EXTRA("--", "-c", "trap '' TERM INT; touch READY; while :; do sleep 0.05; done"),
                                   "READY", false);
        ck_assert_int_eq(kill(pid, SIGINT), 0);
        usleep(300000);
        /* Still running: it ignored SIGINT. */
        ck_assert_int_eq(kill(pid, 0), 0);
        ck_assert_int_eq(kill(pid, SIGINT), 0);
        /* Interrupted by the operator's SIGINT, however it then ended. */
        ck_assert_int_eq(wait_status(pid), 128 + SIGINT);
        assert_outcome(&f, "outcome", "void");
        assert_outcome(&f, "cause", "interrupted");
        assert_outcome_has(&f, "detail", "killed by signal 9 (SIGKILL)");
        fixture_free(&f);
}
END_TEST

/* trialbox's Trial of the shell Harness on `f` that would make REPO/RAN,
 * started in the background with `env` (stderr into DIR/stderr), and
 * `pending` (a signal, or 0) already pending when it starts. */
static pid_t start_trial_that_would_make_ran(const struct fixture *f, char *const env[], int pending)
{
        char *argv[64];
        /* The fixture's folder on the session's command line too: bwrap's
         * own line has no more when it is started before its options. */
        char cmd[PATH_MAX + 32];
        snprintf(cmd, sizeof cmd, "touch RAN # %s", f->dir);
        tb_argv(argv, 64, "shell", f, EXTRA("--", "-c", cmd));
        _cleanup_free_ char *errp = path_in(f->dir, "stderr");
        return spawn(tb_env(env), argv, &(struct tb_spawn_io){ .err = errp, .out = "/dev/null", .pending = pending });
}

/* That Trial ended by `sig`, void/interrupted with `detail`, and (looked
 * for `settle_us` later) its session never ran. */
static void assert_interrupted_before_its_session(const struct fixture *f, pid_t pid, int sig, const char *detail,
                                                  long settle_us)
{
        int status = wait_status(pid);
        _cleanup_free_ char *errs = read_text_in(f->dir, "stderr");
        ck_assert_msg(status == 128 + sig, "status %d; stderr: %s", status, errs);
        assert_outcome(f, "outcome", "void");
        assert_outcome(f, "cause", "interrupted");
        assert_outcome_has(f, "detail", detail);
        usleep(settle_us);
        ck_assert_msg(!exists_in(f->repo, "RAN"), "the session ran after the signal");
}

/* SIGINT while bwrap is still setting up (a slow one): the session never
 * starts after it, and the Trial is void/interrupted, not a sandbox that
 * failed. */
START_TEST(a_signal_during_start_up_ends_the_trial_void_interrupted_before_its_session)
{
        struct fixture f;
        fixture_new(&f);
        pid_t pid = start_trial_that_would_make_ran(&f, ENV("TRIALBOX_BWRAP=" FAKE("fault-slow-bwrap")), 0);
        /* This Trial's slow bwrap (its line names the fixture's folders),
         * not another test's (test_faults runs one too, maybe meanwhile:
         * then the signal came before this Trial had blocked it). */
        bool slow = false;
        for (int i = 0; i < 400 && !slow; i++) {
                slow = host_process_with_both(FAKE("fault-slow-bwrap"), f.dir);
                if (!slow)
                        usleep(5000);
        }
        ck_assert_msg(slow, "the slow bwrap never ran");
        ck_assert_int_eq(kill(pid, SIGINT), 0);
        /* The slow bwrap's half second, had it gone on. */
        assert_interrupted_before_its_session(&f, pid, SIGINT, "before the session started", 700000);
        fixture_free(&f);
}
END_TEST

/* Once bwrap has reported the session's end, the pid it reported is no
 * longer the session's: bwrap reaped it, and the kernel may have given it to
 * anyone. A signal trialbox forwards then, and its SIGKILL after a second
 * one, go to the keeper, never to that pid: here a stranger's (a decoy in a
 * process group of its own) that a lingering bwrap names. */
START_TEST(a_signal_after_the_sessions_end_never_reaches_the_pid_bwrap_reported)
{
        struct fixture f;
        fixture_new(&f);
        pid_t decoy = fork();
        ck_assert_int_ge(decoy, 0);
        if (decoy == 0) {
                setsid();
                execl("/bin/sleep", "sleep", "30", (char *)NULL);
                _exit(127);
        }
        char decoy_pid[16];
        snprintf(decoy_pid, sizeof decoy_pid, "%d", (int)decoy);
        char *argv[64];
        tb_argv(argv, 64, "shell", &f, EXTRA("--", "-c", "true", decoy_pid));
        _cleanup_free_ char *errp = path_in(f.dir, "stderr");
        pid_t pid = spawn(tb_env(ENV("TRIALBOX_BWRAP=" FAKE("bwrap-lingers"))), argv,
                          &(struct tb_spawn_io){ .err = errp, .out = "/dev/null" });
        bool lingering = false;
        for (int i = 0; i < 1000 && !lingering; i++) {
                _cleanup_free_ char *errs = read_text(errp);
                lingering = errs && strstr(errs, "fake bwrap: lingering");
                if (!lingering)
                        usleep(5000);
        }
        ck_assert_msg(lingering, "the lingering bwrap never reported");
        usleep(50000); /* trialbox has read the two status lines by now */
        ck_assert_int_eq(kill(pid, SIGINT), 0);
        usleep(700000); /* a second one past the repeat window: SIGKILL at once */
        ck_assert_int_eq(kill(pid, SIGINT), 0);
        wait_status(pid);
        usleep(100000);
        int st = 0;
        pid_t gone = waitpid(decoy, &st, WNOHANG);
        if (gone == 0) {
                kill(decoy, SIGKILL);
                waitpid(decoy, &st, 0);
        }
        fixture_free(&f);
        ck_assert_msg(gone == 0, "trialbox signalled the pid bwrap had reported after its end (the decoy ended: %#x)",
                      st);
}
END_TEST

/* A signal that came before trialbox could set anything up (here: already
 * pending when it starts) is not lost: nothing is started, the Trial is
 * void/interrupted. */
START_TEST(a_signal_pending_when_trialbox_starts_is_void_interrupted_and_nothing_runs)
{
        struct fixture f;
        fixture_new(&f);
        pid_t pid = start_trial_that_would_make_ran(&f, NULL, SIGTERM);
        assert_interrupted_before_its_session(&f, pid, SIGTERM, "SIGTERM reached trialbox before the session started", 0);
        fixture_free(&f);
}
END_TEST

/* --env-file: the session's own variables, from a file (a pipe works
 * too); --dry-run shows their names, never their values; a name trialbox
 * keeps, or a file that is not one JSON object of strings, is a usage
 * error of one line. */
START_TEST(env_file_variables_reach_the_session_and_dry_run_redacts_them)
{
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *secret = marker("env-file-value");
        _cleanup_free_ char *file = path_in(f.dir, "env.json");
        _cleanup_free_ char *json = xasprintf("{\"TB_TEST_KEY\": \"%s\", \"GREETING\": \"hello world\"}", secret);
        write_text(file, json, 0600);
        struct proc_result r;
        tb_shell(&r, &f, NULL, EXTRA("--env-file", file, "--dry-run", "--", "-c", "true"));
        ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
        assert_contains(r.out, "TB_TEST_KEY=<redacted>");
        assert_lacks(r.out, secret);
        assert_lacks(r.err, secret);
        proc_result_free(&r);
        tb_shell(&r, &f, NULL,
                 EXTRA("--env-file", file, "--", "-c", "printf '%s|%s' \"$TB_TEST_KEY\" \"$GREETING\" > got"));
        ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
        _cleanup_free_ char *want = xasprintf("%s|hello world", secret);
        assert_file_in(f.repo, "got", want);
        proc_result_free(&r);
        static const char *const bad[][2] = {
                { "{\"HOME\": \"/tmp\"}", "'HOME' cannot be set" },
                { "{\"LD_PRELOAD\": \"x\"}", "'LD_PRELOAD' cannot be set" },
                { "{\"A\": 1}", "'A' must be a string" },
                { "[\"A=1\"]", "must be an object" },
                { "{oops", "not JSON" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++) {
                write_text(file, bad[i][0], 0600);
                fixture_next_out(&f);
                tb_shell(&r, &f, NULL, EXTRA("--env-file", file, "--", "-c", "true"));
                ck_assert_msg(r.status == 2, "case %zu: status %d: %s", i, r.status, r.err);
                assert_one_line(r.err);
                assert_contains(r.err, bad[i][1]);
                assert_contains(r.err, "--env-file '");
                ck_assert_msg(!exists_in(f.out, "outcome.json"), "case %zu: a Trial ran", i);
                proc_result_free(&r);
        }
        fixture_free(&f);
}
END_TEST

START_TEST(no_bwrap_is_void_sandbox_unavailable)
{
        struct fixture f;
        struct proc_result r;
        char marker_file[1100];
        fixture_new(&f);
        tb_shell(&r, &f, ENV("PATH=/nonexistent-folder"), EXTRA("--harness-bin", "/bin/true"));
        assert_void(&f, &r, "sandbox_unavailable", "bwrap was not found on the PATH; install bubblewrap");
        proc_result_free(&r);
        fixture_free(&f);

        fixture_new(&f);
        snprintf(marker_file, sizeof marker_file, "%s/RAN", f.repo);
        tb_shell(&r, &f, ENV("TRIALBOX_BWRAP=/nonexistent/bwrap"), EXTRA("--", "-c", "touch RAN"));
        assert_void(&f, &r, "sandbox_unavailable", NULL);
        ck_assert_int_ne(access(marker_file, F_OK), 0);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(a_bwrap_that_refuses_is_void_with_its_own_message)
{
        struct fixture f;
        struct proc_result r;
        char marker_file[1100];
        fixture_new(&f);
        snprintf(marker_file, sizeof marker_file, "%s/RAN", f.repo);
        tb_shell(&r, &f, ENV("TRIALBOX_BWRAP=" FAKE("bwrap-refuses")), EXTRA("--", "-c", "touch RAN"));
        assert_void(&f, &r, "sandbox_unavailable", NULL);
        assert_outcome(&f, "detail", "bwrap: setting up uid map: Permission denied");
        assert_outcome(&f, "exit_code", "null");
        ck_assert_int_ne(access(marker_file, F_OK), 0);
        proc_result_free(&r);

        /* check says so too, with the fix. */
        run_argv(&r, ENV("TRIALBOX_BWRAP=" FAKE("bwrap-refuses")),
                 (char *[]){ TRIALBOX_BIN, "check", NULL });
        ck_assert_int_eq(r.status, 1);
        assert_contains(r.out, "setting up uid map: Permission denied");
        assert_contains(r.out, "kernel.apparmor_restrict_unprivileged_userns=0");
        assert_contains(r.out, "/etc/apparmor.d/bwrap");
        assert_contains(r.out, "FAIL namespaces");
        proc_result_free(&r);
        run_argv(&r, ENV("TRIALBOX_BWRAP=" FAKE("bwrap-refuses")),
                 (char *[]){ TRIALBOX_BIN, "check", "--json", NULL });
        ck_assert_int_eq(r.status, 1);
        ck_assert(str_has_prefix(r.out, "{\"ready\":false,\"checks\":["));
        assert_contains(r.out, "{\"check\":\"namespaces\",\"ok\":false,\"verdict\":\"fail\"");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(a_commit_inside_a_worktree_trial_succeeds)
{
        struct fixture f;
        struct proc_result r;
        char script[4096], wt[1100];
        if (!host_can("command -v git >/dev/null"))
                return;
        fixture_new(&f);
        snprintf(wt, sizeof wt, "%s/wt", f.dir);
        snprintf(script, sizeof script,
                 "set -e; cd '%s'; git init -q -b main; git -c user.name=t -c user.email=t@example.com commit -q "
                 "--allow-empty -m base; git worktree add -q '%s' -b feature",
                 f.repo, wt);
        ck_assert(host_can(script));
        /* The Trial runs in the worktree, whose .git is a file. */
        struct fixture w = f;
        snprintf(w.repo, sizeof w.repo, "%s", wt);
        tb_shell(&r, &w, NULL,
           EXTRA("--", "-c", "git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m from-the-trial"));
        ck_assert_msg(r.status == 0, "commit failed: %s", r.err);
        snprintf(script, sizeof script, "git -C '%s' log --format=%%s feature | grep -qx from-the-trial", f.repo);
        ck_assert(host_can(script));
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(unsandboxed_mode_keeps_the_real_home)
{
        struct fixture f;
        struct proc_result r;
        char want[1100], home_dir[1100];
        fixture_new(&f);
        tb_shell(&r, &f, ENV("TRIALBOX_NO_SANDBOX=1"), EXTRA("--", "-c", "echo \"$HOME\"; pwd"));
        ck_assert_int_eq(r.status, 0);
        snprintf(want, sizeof want, "%s\n%s\n", getenv("HOME"), f.repo);
        ck_assert_str_eq(r.out, want);
        assert_outcome(&f, "sandboxed", "false");
        assert_outcome(&f, "home", getenv("HOME"));
        snprintf(home_dir, sizeof home_dir, "%s/home", f.out);
        ck_assert_int_ne(access(home_dir, F_OK), 0);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(dry_run_prints_the_bwrap_line_and_runs_nothing)
{
        struct fixture f;
        struct proc_result r;
        char ran[1100];
        fixture_new(&f);
        snprintf(ran, sizeof ran, "%s/RAN", f.repo);
        tb_shell(&r, &f, NULL, EXTRA("--network", "host", "--dry-run", "--", "-c", "touch RAN"));
        ck_assert_int_eq(r.status, 0);
        ck_assert(str_has_prefix(r.out, "env -i "));
        assert_contains(r.out, "bwrap --seccomp "); /* first: the keeper finds the fd there */
        assert_contains(r.out, " --unshare-pid --unshare-ipc --die-with-parent --new-session --cap-drop ALL");
        assert_contains(r.out, "-- /sandbox/harness/shell -c 'touch RAN'");
        ck_assert_int_ne(access(ran, F_OK), 0);
        ck_assert_int_ne(access(f.out, F_OK), 0);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(an_npm_launcher_and_an_nvm_install_run_as_the_harness)
{
        struct fixture f;
        struct proc_result r;
        char p[1400];
        if (!host_can("command -v node >/dev/null"))
                return;
        fixture_new(&f);
        /* npm install agent: node_modules/.bin/agent -> ../agent/bin/agent.js */
        snprintf(p, sizeof p, "%s/proj/node_modules/agent/bin", f.dir);
        mkdir_p(p, 0755);
        snprintf(p, sizeof p, "%s/proj/node_modules/agent/lib", f.dir);
        mkdir_p(p, 0755);
        snprintf(p, sizeof p, "%s/proj/node_modules/.bin", f.dir);
        mkdir_p(p, 0755);
        snprintf(p, sizeof p, "%s/proj/node_modules/agent/bin/agent.js", f.dir);
        write_text(p, "#!/usr/bin/env node\nconsole.log(require('../lib/main.js'), process.env.FAKE_NVM_NODE || 'plain');\n",
                   0755);
        snprintf(p, sizeof p, "%s/proj/node_modules/agent/lib/main.js", f.dir);
        write_text(p, "module.exports = 'lib-loaded';\n", 0644);
        snprintf(p, sizeof p, "%s/proj/node_modules/.bin/agent", f.dir);
        ck_assert_int_eq(symlink("../agent/bin/agent.js", p), 0);
        tb_shell(&r, &f, NULL, EXTRA("--harness-bin", p));
        ck_assert_msg(r.status == 0, "npm launcher failed: %s", r.err);
        ck_assert_str_eq(r.out, "lib-loaded plain\n");
        proc_result_free(&r);

        /* nvm: the launcher beside its own node, which is not on the PATH. */
        char v[1200];
        snprintf(v, sizeof v, "%s/nvm/versions/node/v20.9.0", f.dir);
        snprintf(p, sizeof p, "%s/bin", v);
        mkdir_p(p, 0755);
        snprintf(p, sizeof p, "%s/lib", v);
        mkdir_p(p, 0755);
        snprintf(p, sizeof p, "/bin/mv '%s/proj/node_modules' '%s/lib/node_modules'", f.dir, v);
        ck_assert(host_can(p));
        char *host_node = find_on_path("node", getenv("PATH")), wrapper[1400];
        snprintf(wrapper, sizeof wrapper, "#!/bin/sh\nFAKE_NVM_NODE=nvm-node exec '%s' \"$@\"\n", host_node);
        free(host_node);
        snprintf(p, sizeof p, "%s/bin/node", v);
        write_text(p, wrapper, 0755);
        snprintf(p, sizeof p, "%s/bin/agent", v);
        ck_assert_int_eq(symlink("../lib/node_modules/agent/bin/agent.js", p), 0);
        char out2[1100];
        snprintf(out2, sizeof out2, "%s/out2", f.dir);
        struct fixture g = f;
        snprintf(g.out, sizeof g.out, "%s", out2);
        tb_shell(&r, &g, NULL, EXTRA("--harness-bin", p));
        ck_assert_msg(r.status == 0, "nvm launcher failed: %s", r.err);
        ck_assert_str_eq(r.out, "lib-loaded nvm-node\n");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(the_skills_folder_is_visible_read_only_at_its_own_path)
{
        struct fixture f;
        struct proc_result r;
        char skills[1100], p[1200], script[4096];
        fixture_new(&f);
        snprintf(skills, sizeof skills, "%s/skills", f.dir);
        mkdir_p(skills, 0755);
        snprintf(p, sizeof p, "%s/SKILL.md", skills);
        write_text(p, "a skill\n", 0644);
        snprintf(p, sizeof p, "%s/skills", f.repo);
        ck_assert_int_eq(symlink(skills, p), 0);
        snprintf(script, sizeof script,
                 "cat skills/SKILL.md; touch '%s/planted' 2>/dev/null && echo skills=rw || echo skills=ro", skills);
        tb_shell(&r, &f, NULL, EXTRA("--skills", skills, "--", "-c", script));
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.out, "a skill\nskills=ro\n");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* The other bad requests, case by case, are in test_badinput.c. */
START_TEST(an_unknown_harness_gets_one_line_listing_the_installed_harnesses)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        tb_run(&r, "nosuch", &f, NULL, NULL);
        ck_assert_msg(r.status == 2, "status %d", r.status);
        ck_assert_msg(strstr(r.err, "); installed harnesses: agy, claude, codex, gemini") != NULL, "'%s'", r.err);
        ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "not one line: %s", r.err);
        ck_assert_int_ne(access(f.out, F_OK), 0);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(a_missing_harness_binary_is_void_session_unavailable)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        tb_shell(&r, &f, NULL, EXTRA("--harness-bin", "no-such-agent-cli"));
        assert_void(&f, &r, "session_unavailable", "'no-such-agent-cli' was not found on the PATH");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(check_and_harnesses_report_a_working_sandbox_and_the_shell_harness)
{
        struct proc_result r;
        run_argv(&r, tb_env(NULL), (char *[]){ TRIALBOX_BIN, "check", "--harness", "shell", NULL });
        ck_assert_msg(r.status == 0, "check failed: %s", r.out);
        assert_contains(r.out, "ok   namespaces");
        assert_contains(r.out, "ok   userns");
        assert_contains(r.out, "ok   plugins");
        assert_contains(r.out, "ok   plugin       " PLUGIN_BUILD_DIR "/shell.so");
        assert_contains(r.out, "a Trial can start here");
        proc_result_free(&r);
        run_argv(&r, tb_env(NULL), (char *[]){ TRIALBOX_BIN, "harnesses", "--json", NULL });
        ck_assert_int_eq(r.status, 0);
        assert_contains(r.out, "\"name\":\"shell\"");
        assert_contains(r.out, "\"status\":\"ready\"");
        proc_result_free(&r);
}
END_TEST

TB_SUITE("trial", 60)
{
        tcase_add_test(tc, a_completed_session_writes_its_outcome_and_passes_its_status);
        tcase_add_test(tc, the_session_may_use_every_cpu_trialbox_may);
        tcase_add_test(tc, the_repository_is_writable_and_the_toolchains_are_not);
        tcase_add_test(tc, a_bound_toolchain_is_on_the_session_path);
        tcase_add_test(tc, a_host_secret_variable_does_not_reach_the_session);
        tcase_add_test(tc, a_background_child_left_by_the_session_is_gone_after_it_ends);
        tcase_add_test(tc, sigterm_to_trialbox_ends_the_session_as_void_interrupted);
        tcase_add_test(tc, env_file_variables_reach_the_session_and_dry_run_redacts_them);
        tcase_add_test(tc, a_second_signal_kills_a_session_that_ignores_the_first);
        tcase_add_test(tc, a_signal_during_start_up_ends_the_trial_void_interrupted_before_its_session);
        tcase_add_test(tc, a_signal_after_the_sessions_end_never_reaches_the_pid_bwrap_reported);
        tcase_add_test(tc, a_signal_pending_when_trialbox_starts_is_void_interrupted_and_nothing_runs);
        tcase_add_test(tc, no_bwrap_is_void_sandbox_unavailable);
        tcase_add_test(tc, a_bwrap_that_refuses_is_void_with_its_own_message);
        tcase_add_test(tc, a_commit_inside_a_worktree_trial_succeeds);
        tcase_add_test(tc, unsandboxed_mode_keeps_the_real_home);
        tcase_add_test(tc, dry_run_prints_the_bwrap_line_and_runs_nothing);
        tcase_add_test(tc, an_npm_launcher_and_an_nvm_install_run_as_the_harness);
        tcase_add_test(tc, the_skills_folder_is_visible_read_only_at_its_own_path);
        tcase_add_test(tc, an_unknown_harness_gets_one_line_listing_the_installed_harnesses);
        tcase_add_test(tc, a_missing_harness_binary_is_void_session_unavailable);
        tcase_add_test(tc, check_and_harnesses_report_a_working_sandbox_and_the_shell_harness);
}
