/* Trial limits end to end: real bwrap, real cgroups as root. As
 * nobody (no writable cgroup on this host) a Trial that asks for --memory,
 * --pids or --cpus is void with the fix, and --timeout works as for root.
 * What the kernel counted shows in outcome.json's `usage`; the `running`
 * record is there while the session runs; a full disk still gets the final
 * Outcome. Each test says what it measured on stdout. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "limits/cgroup.h"
#include "model/outcome.h"
#include "tb_test.h"
#include "base/util.h"

#define MIB (1024LL * 1024)

/* Every Trial here is of the `shell` Harness. */

/* Can this user make a cgroup that enforces memory, pids and cpus? */
static bool have_cgroup(void)
{
        struct cgroup_probe p;
        return cgroup_probe(NULL, &p) != CGROUP_NONE;
}

/* The Trials' cgroup folders ("trialbox-PID-MS" in each parent the probe
 * finds) whose trialbox is gone: left behind. One path a line ("" for
 * none); a Trial still running (another test's, another run's) is not. */
static char *cgroups_left_behind(void)
{
        struct cgroup_probe p;
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        if (cgroup_probe(NULL, &p) == CGROUP_NONE)
                return sb.s;
        for (int c = 0; c < CG_N; c++) {
                DIR *d = p.parent[c][0] ? opendir(p.parent[c]) : NULL;
                for (struct dirent *e; d && (e = readdir(d));) {
                        int pid, end = 0;
                        long long ms;
                        if (sscanf(e->d_name, "trialbox-%d-%lld%n", &pid, &ms, &end) == 2 && !e->d_name[end] &&
                            kill(pid, 0) < 0 && errno == ESRCH)
                                strbuf_addf(&sb, "%s/%s\n", p.parent[c], e->d_name);
                }
                if (d)
                        closedir(d);
        }
        return sb.s;
}

/* No cgroup left behind (cgroups_left_behind) but those in `before`. */
static void assert_none_left_behind_but(const char *before, const char *how)
{
        _cleanup_free_ char *after = cgroups_left_behind();
        for (char *line = after, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
                *nl = '\0';
                ck_assert_msg(has_line(before, line), "after %s: the cgroup '%s' is left behind", how, line);
        }
}

/* OUTPUT/outcome.json's usage.FIELD as a number; -1 for null; fails when absent. */
static long long usage_of(const struct fixture *f, const char *field)
{
        _cleanup_free_ char *path = path_in(f->out, "outcome.json");
        _cleanup_free_ char *text = read_text(path);
        ck_assert_msg(text != NULL, "no outcome.json in %s", f->out);
        json_object *j = json_tokener_parse(text), *u, *v;
        ck_assert_msg(j && json_object_object_get_ex(j, "usage", &u) && u, "outcome.json has no usage: %s", text);
        ck_assert_msg(json_object_object_get_ex(u, field, &v), "usage has no '%s': %s", field, text);
        long long n = v ? json_object_get_int64(v) : -1;
        json_object_put(j);
        return n;
}

/* How many host processes have `marker` in their command line: the
 * session's shells, not trialbox, its keeper or bwrap (whose argv hold the
 * script too). */
static int processes_with(const char *marker)
{
        return (int)host_pids(marker, NULL, EXTRA("--harness", "--unshare-pid"), NULL, 0);
}

/* A limited Trial as nobody: void, sandbox_unavailable, the fix named, nothing run. */
static void assert_void_with_fix(const struct fixture *f, const struct proc_result *r)
{
        assert_void(f, r, "sandbox_unavailable", NULL);
        _cleanup_free_ char *detail = outcome_field(f->out, "detail");
        ck_assert_msg(strstr(detail, "cannot be enforced") && (strstr(detail, "systemd-run") || strstr(detail, "root")),
                      "the detail does not say how to make it possible: %s", detail);
        _cleanup_free_ char *ran = path_in(f->repo, "RAN");
        ck_assert_msg(access(ran, F_OK) < 0, "the session ran unenforced");
}

START_TEST(a_sleep_past_the_timeout_is_failed_timeout_124_and_leaves_nothing_running)
{
        struct fixture f;
        fixture_new(&f);
        chmod(f.dir, 0777);
        _cleanup_free_ char *m = marker("limits-timeout");
        /* A child in the session's group, and one that left it (setsid). */
        _cleanup_free_ char *script = xasprintf("sh -c 'sleep 600; : %s' & setsid sh -c 'sleep 600; : %s' & "
                                                "sleep 600; : %s",
                                                m, m, m);
        struct proc_result r;
        tb_shell(&r, &f, NULL, EXTRA("--timeout", "1", "--", "-c", script));
        ck_assert_msg(r.status == 124, "status %d; stderr: %s", r.status, r.err);
        assert_outcome(&f, "outcome", "failed");
        assert_outcome(&f, "cause", "timeout");
        assert_outcome(&f, "signal", "15");
        _cleanup_free_ char *detail = outcome_field(f.out, "detail");
        ck_assert_msg(strstr(detail, "1s") && strstr(detail, "SIGTERM"), "detail: %s", detail);
        ck_assert_msg(!host_process_with(m), "a process of the session outlived the Trial");
        printf("timeout: %s\n", detail);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(a_session_that_ignores_sigterm_is_killed_after_the_grace)
{
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *m = marker("limits-grace");
        _cleanup_free_ char *script = xasprintf("trap '' TERM; sleep 600; : %s", m);
        struct proc_result r;
        tb_shell(&r, &f, NULL, EXTRA("--timeout", "0.5", "--kill-after", "1", "--", "-c", script));
        ck_assert_msg(r.status == 124, "status %d; stderr: %s", r.status, r.err);
        assert_outcome(&f, "cause", "timeout");
        assert_outcome(&f, "signal", "9");
        _cleanup_free_ char *detail = outcome_field(f.out, "detail");
        ck_assert_msg(strstr(detail, "SIGKILL") && strstr(detail, "--kill-after"), "detail: %s", detail);
        ck_assert_msg(!host_process_with(m), "a process of the session outlived the Trial");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(the_session_sees_its_deadline)
{
        struct fixture f;
        fixture_new(&f);
        long long before = outcome_realtime_ms() / 1000;
        struct proc_result r;
        tb_shell(&r, &f, NULL, EXTRA("--timeout", "1h", "--", "-c", "echo \"$TRIALBOX_DEADLINE\""));
        ck_assert_msg(r.status == 0, "status %d; stderr: %s", r.status, r.err);
        long long deadline = atoll(r.out);
        ck_assert_msg(deadline >= before + 3600 - 1 && deadline <= before + 3600 + 60, "TRIALBOX_DEADLINE '%s'", r.out);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(a_python_allocation_past_memory_is_failed_out_of_memory)
{
        struct fixture f;
        fixture_new(&f);
        struct proc_result r;
        tb_shell(&r, &f, NULL,
           EXTRA("--memory", "64M", "--", "-c",
                 "touch RAN; python3 -c 'b = bytearray(256 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1'"));
        if (!have_cgroup()) {
                assert_void_with_fix(&f, &r);
        } else {
                ck_assert_msg(r.status != 0 && r.status != 125, "status %d; stderr: %s", r.status, r.err);
                assert_outcome(&f, "outcome", "failed");
                assert_outcome(&f, "cause", "out_of_memory");
                ck_assert_int_ge(usage_of(&f, "oom_kills"), 1);
                ck_assert_int_le(usage_of(&f, "peak_memory_bytes"), 64 * MIB);
                printf("memory: peak %lld bytes under a 64 MiB limit, %lld OOM kill(s)\n",
                       usage_of(&f, "peak_memory_bytes"), usage_of(&f, "oom_kills"));
        }
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(tmp_is_no_larger_than_the_memory_limit)
{
        struct fixture f;
        fixture_new(&f);
        struct proc_result r;
        tb_shell(&r, &f, NULL, EXTRA("--memory", "96M", "--", "-c", "touch RAN; df -k /tmp | tail -1"));
        if (!have_cgroup()) {
                assert_void_with_fix(&f, &r);
        } else {
                ck_assert_msg(r.status == 0, "status %d; stderr: %s", r.status, r.err);
                long long kib = 0;
                ck_assert_msg(sscanf(r.out, "%*s %lld", &kib) == 1 && kib == 96 * 1024, "df: %s", r.out);
        }
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(a_fork_loop_under_pids_64_never_has_more_and_a_concurrent_trial_is_fine)
{
        struct fixture f, g;
        fixture_new(&f);
        fixture_new(&g);
        _cleanup_free_ char *m = marker("limits-pids");
        /* 300 forks of children that wait on a pipe (no CPU); refused
         * forks are counted. Once done, it waits for GO, then lets them go. */
        write_in(f.repo, "forker.py",
                 "import os, time\n"
                 "r, w = os.pipe()\n"
                 "kids = refused = 0\n"
                 "for i in range(300):\n"
                 "    try:\n"
                 "        pid = os.fork()\n"
                 "    except OSError:\n"
                 "        refused += 1\n"
                 "        continue\n"
                 "    if pid == 0:\n"
                 "        os.close(w); os.read(r, 1); os._exit(0)\n"
                 "    kids += 1\n"
                 "open('FORKED', 'w').close()\n"
                 "while not os.path.exists('GO'):\n"
                 "    time.sleep(0.05)\n"
                 "os.close(w)\n"
                 "while True:\n"
                 "    try:\n"
                 "        os.wait()\n"
                 "    except ChildProcessError:\n"
                 "        break\n"
                 "print(kids, refused)\n",
                 0644);
        _cleanup_free_ char *script = xasprintf("touch RAN; exec python3 forker.py %s", m);
        char *argv[64];
        tb_argv(argv, 64, "shell", &f, EXTRA("--pids", "64", "--", "-c", script));
        _cleanup_free_ char *outp = path_in(f.dir, "stdout"), *errp = path_in(f.dir, "stderr");
        pid_t pid = spawn_argv(tb_env(NULL), argv, outp, errp);
        _cleanup_free_ char *forked = path_in(f.repo, "FORKED"), *go = path_in(f.repo, "GO");
        int most = 0;
        bool concurrent_done = false;
        int st = 0;
        for (;;) {
                int n = processes_with(m);
                most = n > most ? n : most;
                if (!concurrent_done && access(forked, F_OK) == 0) {
                        /* While the loop holds its 64: another Trial, and the host, can fork. */
                        struct proc_result r2;
                        tb_shell(&r2, &g, NULL, EXTRA("--", "-c", "sh -c 'echo fine'"));
                        ck_assert_msg(r2.status == 0 && strstr(r2.out, "fine"), "the concurrent Trial: %d %s",
                                      r2.status, r2.err);
                        proc_result_free(&r2);
                        concurrent_done = true;
                        most = processes_with(m) > most ? processes_with(m) : most;
                        write_text(go, "", 0644);
                }
                if (waitpid(pid, &st, WNOHANG) == pid)
                        break;
                usleep(20000);
        }
        if (!have_cgroup()) {
                /* trialbox's own status, as wait_status() would give it. */
                struct proc_result r = { .status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
                                         .err = read_text(errp) };
                assert_void_with_fix(&f, &r);
                free(r.err);
        } else {
                ck_assert_msg(concurrent_done, "the fork loop never finished forking");
                ck_assert_msg(most <= 64, "%d processes of the session at once under --pids 64", most);
                /* The loop did reach the limit (the keeper, bwrap and its
                 * init, and the main shell hold 4 of the 64). */
                ck_assert_msg(most >= 50, "only %d processes: the loop never reached the limit", most);
                ck_assert_int_ge(usage_of(&f, "pids_refused"), 1);
                printf("pids: at most %d processes seen under --pids 64; %lld forks refused\n", most,
                       usage_of(&f, "pids_refused"));
        }
        fixture_free(&f);
        fixture_free(&g);
}
END_TEST

/* Under --pids 1 the keeper alone fills the Trial's cgroup: it cannot start
 * bwrap's process (the kernel refuses the clone), ends with 127, and the
 * Trial is void with nothing of the session run. */
START_TEST(under_pids_1_bwrap_cannot_be_started_and_the_trial_is_void_with_status_127)
{
        struct fixture f;
        fixture_new(&f);
        struct proc_result r;
        tb_shell(&r, &f, NULL, EXTRA("--pids", "1", "--", "-c", "touch RAN"));
        if (!have_cgroup()) {
                assert_void_with_fix(&f, &r);
        } else {
                assert_void(&f, &r, "sandbox_unavailable", "bwrap exited with status 127 before the session started");
                _cleanup_free_ char *ran = path_in(f.repo, "RAN");
                ck_assert_msg(access(ran, F_OK) < 0, "the session ran");
        }
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* Run 0 without limits (rusage), run 1 with --memory and --cpus (the cgroup's figures). */
START_TEST(a_busy_second_and_a_300_mib_allocation_show_in_usage)
{
        struct fixture f;
        fixture_new(&f);
        const char *script =
                "touch RAN; python3 -c 'import time\n"
                "b = bytearray(300 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\ndel b\n"
                "t = time.process_time()\nwhile time.process_time() - t < 1: pass'";
        struct proc_result r;
        tb_shell(&r, &f, NULL, _i == 0 ? EXTRA("--", "-c", script) : EXTRA("--memory", "1G", "--cpus", "2", "--", "-c", script));
        if (_i == 1 && !have_cgroup()) {
                assert_void_with_fix(&f, &r);
        } else {
                ck_assert_msg(r.status == 0, "status %d; stderr: %s", r.status, r.err);
                long long user = usage_of(&f, "cpu_user_ms"), sys = usage_of(&f, "cpu_system_ms");
                long long peak = usage_of(&f, "peak_memory_bytes");
                _cleanup_free_ char *path = path_in(f.out, "outcome.json");
                _cleanup_free_ char *text = read_text(path);
                ck_assert_msg(strstr(text, _i == 0 ? "\"source\":\"rusage\"" : "\"source\":\"cgroup\""), "%s", text);
                printf("usage (%s): cpu %lld+%lld ms, peak %lld bytes\n", _i == 0 ? "rusage" : "cgroup", user, sys,
                       peak);
                ck_assert_msg(peak >= 300 * MIB, "peak %lld bytes for a 300 MiB allocation", peak);
                /* The busy second, plus the allocation's page faults (system
                 * time, measured apart by the allocation alone: below). */
                ck_assert_msg(user + sys >= 1000, "cpu %lld+%lld ms for a busy second", user, sys);
        }
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* Run 0 without limits, run 1 with a cgroup: a CPU-bound second shows as
 * what the kernel counted for that work, within 20%. The work says itself
 * how much CPU it used in all (its process_time at the end: the busy second
 * and Python's start-up, which a loaded machine makes longer); the Trial's
 * figure holds that and the little around it (sh, bwrap, its keeper). */
START_TEST(a_busy_second_shows_as_about_1000_ms)
{
        struct fixture f;
        fixture_new(&f);
        /* The system's own Python, not a version manager's shim (a pyenv shim
         * runs bash and pyenv first, which the work would not count). */
        const char *work = "exec /usr/bin/python3 -c 'import time\n"
                           "t = time.process_time()\nwhile time.process_time() - t < 1: pass\n"
                           "print(\"self\", int(time.process_time() * 1000))'";
        _cleanup_free_ char *script = xasprintf("touch RAN; %s", work);
        struct proc_result r;
        tb_shell(&r, &f, NULL, _i == 0 ? EXTRA("--", "-c", script) : EXTRA("--pids", "100", "--", "-c", script));
        if (_i == 1 && !have_cgroup()) {
                assert_void_with_fix(&f, &r);
        } else {
                ck_assert_msg(r.status == 0, "status %d; stderr: %s", r.status, r.err);
                long long cpu = usage_of(&f, "cpu_user_ms") + usage_of(&f, "cpu_system_ms");
                const char *line = strstr(r.out, "self ");
                ck_assert_msg(line != NULL, "the work did not say its CPU time: %s", r.out);
                long long self = atoll(line + 5);
                printf("cpu (%s): %lld ms for a busy second; the work counted %lld ms itself\n",
                       _i == 0 ? "rusage" : "cgroup", cpu, self);
                ck_assert_msg(cpu >= 1000 && cpu * 10 >= self * 8 && cpu * 10 <= self * 12,
                              "cpu %lld ms for a busy second whose process counted %lld ms", cpu, self);
        }
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* However a limited Trial ends (its deadline, a signal, the OOM killer),
 * trialbox removes its cgroup before it exits. */
START_TEST(a_limited_trial_leaves_no_cgroup_after_a_timeout_a_kill_or_an_oom)
{
        static const struct {
                const char *how, *timeout, *script;
                int status;
        } ends[] = {
                { "a timeout", "0.5", "touch RAN; sleep 600", 124 },
                { "a kill", "60", "touch RAN; kill -KILL $$", 128 + SIGKILL },
                { "an OOM", "60",
                  "touch RAN; python3 -c 'b = bytearray(256 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1'", -1 },
        };
        _cleanup_free_ char *before = cgroups_left_behind();
        for (size_t i = 0; i < TB_ARRAY_SIZE(ends); i++) {
                struct fixture f;
                fixture_new(&f);
                struct proc_result r;
                tb_shell(&r, &f, NULL,
                         EXTRA("--memory", "64M", "--pids", "64", "--cpus", "1", "--timeout", ends[i].timeout, "--",
                               "-c", ends[i].script));
                if (!have_cgroup()) {
                        assert_void_with_fix(&f, &r);
                } else {
                        ck_assert_msg(ends[i].status < 0 ? r.status != 0 : r.status == ends[i].status,
                                      "%s: status %d; stderr: %s", ends[i].how, r.status, r.err);
                        if (ends[i].status < 0)
                                assert_outcome(&f, "cause", "out_of_memory");
                }
                assert_none_left_behind_but(before, ends[i].how);
                proc_result_free(&r);
                fixture_free(&f);
        }
}
END_TEST

/* With limits, bwrap is started early too (before the plugin is loaded:
 * its options come through --args) and in the Trial's cgroup from its
 * first instruction: the keeper made it there. A limited Trial that turns
 * void after that start (its Harness binary missing) kills that bwrap and
 * removes the cgroup. Where limits cannot be enforced, bwrap never starts. */
START_TEST(a_limited_trials_bwrap_starts_early_and_inside_its_cgroup)
{
        struct fixture f;
        fixture_new(&f);
        struct proc_result r;
        _cleanup_free_ char *before = cgroups_left_behind();
        tb_shell(&r, &f, ENV("TRIALBOX_BWRAP=" FAKE("bwrap-logs-start")),
                 EXTRA("--memory", "256M", "--pids", "64", "--cpus", "1", "--", "-c", "touch RAN", f.dir));
        _cleanup_free_ char *line = read_text_in(f.dir, "bwrap-started");
        if (!have_cgroup()) {
                assert_void_with_fix(&f, &r);
                ck_assert_msg(!line, "bwrap was started for limits that cannot be enforced: %s", line);
                proc_result_free(&r);
                fixture_free(&f);
                return;
        }
        ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
        ck_assert_msg(line && strstr(line, " --args ") && !strstr(line, f.repo),
                      "a limited Trial's bwrap was not started early: %s", line ? line : "(never)");
        _cleanup_free_ char *ran = path_in(f.repo, "RAN");
        ck_assert_msg(access(ran, F_OK) == 0, "the session did not run");
        /* Its "0::" line on cgroup v2, else its memory hierarchy's. */
        struct cgroup_probe p;
        bool v2 = cgroup_probe(NULL, &p) == CGROUP_V2;
        _cleanup_free_ char *cgroups = read_text_in(f.dir, "bwrap-cgroup");
        ck_assert_msg(cgroups != NULL, "bwrap did not say its cgroups");
        const char *mine = v2 ? strstr(cgroups, "0::") : strstr(cgroups, ":memory:");
        const char *trialbox = mine ? strstr(mine, "/trialbox-") : NULL;
        ck_assert_msg(trialbox && trialbox < mine + strcspn(mine, "\n"),
                      "bwrap started outside the Trial's cgroup:\n%s", cgroups);
        proc_result_free(&r);
        assert_none_left_behind_but(before, "a limited Trial");

        struct fixture g;
        fixture_new(&g);
        tb_shell(&r, &g, ENV("TRIALBOX_BWRAP=" FAKE("bwrap-logs-start")),
                 EXTRA("--memory", "256M", "--pids", "64", "--harness-bin", "no-such-agent-cli", "--", "-c",
                       "touch RAN", g.dir));
        assert_void(&g, &r, "session_unavailable", "'no-such-agent-cli' was not found on the PATH");
        assert_none_left_behind_but(before, "a limited Trial void before its session");
        _cleanup_free_ char *void_ran = path_in(g.repo, "RAN");
        ck_assert_msg(access(void_ran, F_OK) < 0, "the void Trial's session ran");
        proc_result_free(&r);
        fixture_free(&g);
        fixture_free(&f);
}
END_TEST

/* Whether limits can be enforced is asked at one point, before the
 * Harness's login is looked for, whichever way bwrap starts: a Codex Trial
 * without its login is void for its limits where they cannot be enforced,
 * for its login where they can; with --dry-run (bwrap never starts) alike. */
START_TEST(a_void_for_limits_or_for_a_login_is_the_same_with_dry_run)
{
        for (int dry = 0; dry < 2; dry++) {
                struct fixture f;
                fixture_new(&f);
                struct proc_result r;
                _cleanup_free_ char *env_home = xasprintf("CODEX_HOME=%s/nowhere", f.dir);
                if (dry)
                        tb_run(&r, "codex", &f, ENV(env_home), EXTRA("--memory", "64M", "--dry-run"));
                else
                        tb_run(&r, "codex", &f, ENV(env_home), EXTRA("--memory", "64M"));
                const char *want = have_cgroup() ? "void (session_unavailable): no Codex login at"
                                                 : "void (sandbox_unavailable): the limits asked cannot be enforced";
                ck_assert_msg(r.status == 125 && strstr(r.err, want), "%s: status %d, stderr: %s",
                              dry ? "--dry-run" : "a run", r.status, r.err);
                proc_result_free(&r);
                fixture_free(&f);
        }
}
END_TEST

START_TEST(the_running_record_is_there_while_the_session_runs_and_replaced_at_the_end)
{
        struct fixture f;
        fixture_new(&f);
        chmod(f.repo, 0777);
        pid_t pid = tb_shell_start(&f, EXTRA("--", "-c", "touch STARTED; while [ ! -e GO ]; do sleep 0.05; done; exit 0"),
                                   "STARTED", false);
        _cleanup_free_ char *go = path_in(f.repo, "GO");
        assert_outcome(&f, "outcome", "running");
        _cleanup_free_ char *rec_pid = outcome_field(f.out, "pid"), *boot = outcome_field(f.out, "boot_id");
        char boot_now[40];
        struct tb_error err = { 0 };
        ck_assert_int_eq(outcome_boot_id(boot_now, sizeof boot_now, &err), 0);
        ck_assert_msg(rec_pid && atoi(rec_pid) == pid, "the running record's pid is %s, not %d", rec_pid, (int)pid);
        ck_assert_msg(boot && strcmp(boot, boot_now) == 0, "boot id %s", boot);
        _cleanup_free_ char *path = path_in(f.out, "outcome.json");
        ck_assert_int_eq(outcome_launcher_lost(path), 0);
        write_text(go, "", 0644);
        int status = wait_status(pid);
        ck_assert_int_eq(status, 0);
        assert_outcome(&f, "outcome", "completed");
        ck_assert_int_eq(outcome_launcher_lost(path), 0);
        fixture_free(&f);
}
END_TEST

/* Root only: the output folder on a 2 MiB tmpfs that the session fills. */
START_TEST(a_disk_filled_by_the_session_still_gets_the_final_outcome)
{
        if (geteuid() != 0) {
                printf("full disk: skipped (mounting a tmpfs needs root)\n");
                return;
        }
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *mnt = path_in(f.dir, "small");
        ck_assert_int_eq(mkdir(mnt, 0755), 0);
        ck_assert_msg(mount("tmpfs", mnt, "tmpfs", 0, "size=2m") == 0, "mount: %s", strerror(errno));
        snprintf(f.out, sizeof f.out, "%s/out", mnt);
        struct proc_result r;
        tb_shell(&r, &f, NULL, EXTRA("--", "-c", "dd if=/dev/zero of=\"$HOME/fill\" bs=64k 2>/dev/null; df -k \"$HOME\" | tail -1; exit 3"));
        _cleanup_free_ char *detail = outcome_field(f.out, "detail");
        ck_assert_msg(r.status == 3, "status %d; stderr: %s", r.status, r.err);
        ck_assert_msg(strstr(r.out, " 0 100%"), "the disk was not full: %s", r.out);
        assert_outcome(&f, "outcome", "failed");
        assert_outcome(&f, "exit_code", "3");
        printf("full disk: final Outcome written: %s\n", detail);
        proc_result_free(&r);
        umount2(mnt, MNT_DETACH);
        fixture_free(&f);
}
END_TEST

START_TEST(bad_limit_values_are_usage_errors_in_one_line)
{
        struct fixture f;
        fixture_new(&f);
        static const char *const bad[][2] = {
                { "--timeout", "soon" }, { "--timeout", "0" },   { "--memory", "12X" },
                { "--pids", "0" },       { "--cpus", "-1" },     { "--kill-after", "x" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++) {
                struct proc_result r;
                tb_shell(&r, &f, NULL, EXTRA(bad[i][0], bad[i][1], "--timeout", "5", "--", "-c", "true"));
                ck_assert_msg(r.status == 2, "%s %s: status %d", bad[i][0], bad[i][1], r.status);
                ck_assert_msg(one_line(r.err) && strstr(r.err, bad[i][0]), "%s %s: %s", bad[i][0], bad[i][1], r.err);
                _cleanup_free_ char *o = path_in(f.out, "outcome.json");
                ck_assert_msg(access(o, F_OK) < 0, "a usage error wrote an Outcome");
                proc_result_free(&r);
        }
        fixture_free(&f);
}
END_TEST

TB_SUITE("limits_trial", 120)
{
        tcase_add_test(tc, a_sleep_past_the_timeout_is_failed_timeout_124_and_leaves_nothing_running);
        tcase_add_test(tc, a_session_that_ignores_sigterm_is_killed_after_the_grace);
        tcase_add_test(tc, the_session_sees_its_deadline);
        tcase_add_test(tc, a_python_allocation_past_memory_is_failed_out_of_memory);
        tcase_add_test(tc, tmp_is_no_larger_than_the_memory_limit);
        tcase_add_test(tc, a_fork_loop_under_pids_64_never_has_more_and_a_concurrent_trial_is_fine);
        tcase_add_test(tc, under_pids_1_bwrap_cannot_be_started_and_the_trial_is_void_with_status_127);
        tcase_add_loop_test(tc, a_busy_second_and_a_300_mib_allocation_show_in_usage, 0, 2);
        tcase_add_loop_test(tc, a_busy_second_shows_as_about_1000_ms, 0, 2);
        tcase_add_test(tc, a_limited_trial_leaves_no_cgroup_after_a_timeout_a_kill_or_an_oom);
        tcase_add_test(tc, a_limited_trials_bwrap_starts_early_and_inside_its_cgroup);
        tcase_add_test(tc, a_void_for_limits_or_for_a_login_is_the_same_with_dry_run);
        tcase_add_test(tc, the_running_record_is_there_while_the_session_runs_and_replaced_at_the_end);
        tcase_add_test(tc, a_disk_filled_by_the_session_still_gets_the_final_outcome);
        tcase_add_test(tc, bad_limit_values_are_usage_errors_in_one_line);
}
