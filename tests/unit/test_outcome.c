/* The Outcome: how a session's end maps to completed / failed / void, the
 * JSON it becomes, the exit status, and the atomic write. */
#define _GNU_SOURCE
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/outcome.h"
#include "tb_test.h"

static struct outcome base(void)
{
        return (struct outcome){ .harness = "codex", .exit_code = -1, .sandboxed = true, .home = "/o/home" };
}

/* The Outcome of a Trial whose session ended as `r` says. */
static struct outcome outcome_of(struct session_result r)
{
        struct outcome o = base();
        outcome_from_session(&o, &r);
        return o;
}

/* A failed Outcome with this exit code and signal, and trialbox's exit status. */
static void assert_failed_with(const struct outcome *o, int exit_code, int signal, int status)
{
        ck_assert_int_eq(o->kind, OUTCOME_FAILED);
        ck_assert_int_eq(o->exit_code, exit_code);
        ck_assert_int_eq(o->signal, signal);
        ck_assert_int_eq(outcome_exit_status(o), status);
}

START_TEST(exit_zero_is_completed)
{
        struct outcome o = outcome_of((struct session_result){ .started = true, .exit_code = 0 });
        ck_assert_int_eq(o.kind, OUTCOME_COMPLETED);
        ck_assert_int_eq(outcome_exit_status(&o), 0);
}
END_TEST

START_TEST(a_nonzero_exit_is_failed_with_its_code_passed_through)
{
        struct outcome o = outcome_of((struct session_result){ .started = true, .exit_code = 3 });
        assert_failed_with(&o, 3, 0, 3);
}
END_TEST

START_TEST(a_signal_is_failed_with_the_signal_and_128_plus_n)
{
        struct outcome o = outcome_of((struct session_result){ .started = true, .signal = 15 });
        assert_failed_with(&o, -1, 15, 143);
        assert_contains(o.detail, "SIGTERM");
}
END_TEST

START_TEST(a_session_that_never_started_is_void_with_its_cause)
{
        struct outcome o = base();
        struct session_result r = { .started = false, .void_cause = CAUSE_SANDBOX_UNAVAILABLE };
        snprintf(r.detail, sizeof r.detail, "bwrap: setting up uid map: Permission denied");
        outcome_from_session(&o, &r);
        ck_assert_int_eq(o.kind, OUTCOME_VOID);
        ck_assert_int_eq(o.cause, CAUSE_SANDBOX_UNAVAILABLE);
        ck_assert_str_eq(o.detail, "bwrap: setting up uid map: Permission denied");
        ck_assert_int_eq(outcome_exit_status(&o), TB_EXIT_VOID);
}
END_TEST

START_TEST(the_json_has_every_field_with_nulls_where_they_do_not_apply)
{
        struct outcome o = base();
        outcome_set_void(&o, CAUSE_SESSION_UNAVAILABLE, "no login at '/root/.codex/auth.json'");
        o.duration_ms = 12;
        char *s = outcome_to_json(&o);
        json_object *j = json_tokener_parse(s), *v;
        ck_assert_ptr_nonnull(j);
        const char *fields[] = { "harness", "outcome", "cause", "detail", "exit_code", "signal", "sandboxed", "home",
                                 "duration_ms" };
        for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
                ck_assert_msg(json_object_object_get_ex(j, fields[i], &v), "missing %s", fields[i]);
        json_object_object_get_ex(j, "outcome", &v);
        ck_assert_str_eq(json_object_get_string(v), "void");
        json_object_object_get_ex(j, "cause", &v);
        ck_assert_str_eq(json_object_get_string(v), "session_unavailable");
        json_object_object_get_ex(j, "exit_code", &v);
        ck_assert_ptr_null(v);
        json_object_object_get_ex(j, "detail", &v);
        ck_assert_str_eq(json_object_get_string(v), "no login at '/root/.codex/auth.json'");
        ck_assert_ptr_null(strchr(s, '\n'));
        json_object_put(j);
        free(s);

        struct outcome c = base();
        struct session_result r = { .started = true, .exit_code = 0 };
        outcome_from_session(&c, &r);
        s = outcome_to_json(&c);
        j = json_tokener_parse(s);
        json_object_object_get_ex(j, "cause", &v);
        ck_assert_ptr_null(v);
        json_object_object_get_ex(j, "exit_code", &v);
        ck_assert_int_eq(json_object_get_int(v), 0);
        json_object_put(j);
        free(s);
}
END_TEST

START_TEST(the_outcome_file_is_written_whole_and_replaces_no_temp_file)
{
        char *dir = tmpdir_new();
        struct outcome o = base();
        struct tb_error err = { 0 };
        struct session_result r = { .started = true, .exit_code = 1 };
        outcome_from_session(&o, &r);
        ck_assert_int_eq(outcome_write(&o, dir, &err), 0);
        char *f = outcome_field(dir, "outcome");
        ck_assert_str_eq(f, "failed");
        free(f);
        char path[1024];
        snprintf(path, sizeof path, "%s/outcome.json", dir);
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0644);
        /* Only outcome.json is there: no temporary file left behind. */
        char *argv[] = { "/bin/ls", "-A", dir, NULL };
        struct proc_result pr;
        run_argv(&pr, NULL, argv);
        ck_assert_str_eq(pr.out, "outcome.json\n");
        proc_result_free(&pr);
        tmpdir_remove(dir);
        free(dir);

        ck_assert_int_lt(outcome_write(&o, "/nonexistent/folder", &err), 0);
        assert_contains(err.msg, "/nonexistent/folder");
}
END_TEST


/* ---- limits: causes, the record's fields, running, reserved space ---- */

/* The end-of-session mapping, case by case. */
static const struct {
        const char *name;
        struct session_result r;
        enum outcome_kind kind;
        enum outcome_cause cause;
        int status;
        const char *detail;
} endings[] = {
        { "exit 0", { .started = true }, OUTCOME_COMPLETED, CAUSE_NONE, 0, "exited with status 0" },
        { "exit 3", { .started = true, .exit_code = 3 }, OUTCOME_FAILED, CAUSE_NONE, 3, "status 3" },
        { "SIGKILL", { .started = true, .signal = 9 }, OUTCOME_FAILED, CAUSE_NONE, 137, "SIGKILL" },
        { "timeout, ended on SIGTERM",
          { .started = true, .signal = 15, .timed_out = true, .timeout_ms = 30000, .kill_after_ms = 10000 },
          OUTCOME_FAILED, CAUSE_TIMEOUT, 124, "past its 30s limit (--timeout) and ended on SIGTERM" },
        { "timeout, killed after the grace",
          { .started = true, .signal = 9, .timed_out = true, .timeout_ms = 1500, .killed_after_grace = true,
            .kill_after_ms = 2000 },
          OUTCOME_FAILED, CAUSE_TIMEOUT, 124, "past its 1.500s limit (--timeout): it got SIGTERM, and SIGKILL 2s later" },
        { "timeout, exit 0 on SIGTERM", { .started = true, .timed_out = true, .timeout_ms = 1000 }, OUTCOME_FAILED,
          CAUSE_TIMEOUT, 124, "past its 1s limit" },
        { "OOM, killed", { .started = true, .signal = 9, .oom_kills = 1, .memory_bytes = 100 << 20 }, OUTCOME_FAILED,
          CAUSE_OUT_OF_MEMORY, 137, "OOM killer stopped 1 process(es) of the session at its 100 MiB limit (--memory); the session was killed by signal 9" },
        { "OOM, exit 1", { .started = true, .exit_code = 1, .oom_kills = 2 }, OUTCOME_FAILED, CAUSE_OUT_OF_MEMORY, 1,
          "stopped 2 process(es) of the session; the session exited with status 1" },
        { "OOM, but exit 0", { .started = true, .oom_kills = 1 }, OUTCOME_COMPLETED, CAUSE_NONE, 0, "status 0" },
        { "timeout wins over OOM", { .started = true, .signal = 9, .timed_out = true, .timeout_ms = 5000, .oom_kills = 1 },
          OUTCOME_FAILED, CAUSE_TIMEOUT, 124, "5s limit" },
        { "never started", { .started = false, .void_cause = CAUSE_SESSION_UNAVAILABLE, .detail = "no login" },
          OUTCOME_VOID, CAUSE_SESSION_UNAVAILABLE, TB_EXIT_VOID, "no login" },
        { "the operator's SIGINT, then exit 1 (as Claude Code does): void, interrupted, 130",
          { .started = true, .exit_code = 1, .interrupted = 2 }, OUTCOME_VOID, CAUSE_INTERRUPTED, 130,
          "the operator's SIGINT reached trialbox, which forwarded it to the session; the session then exited with "
          "status 1: no fault of the agent" },
        { "the operator's SIGTERM, the session killed by it: void, interrupted, 143",
          { .started = true, .signal = 15, .interrupted = 15 }, OUTCOME_VOID, CAUSE_INTERRUPTED, 143,
          "the session was then killed by signal 15 (SIGTERM)" },
        { "the operator's SIGHUP, exit 0: still void, interrupted, 129",
          { .started = true, .interrupted = 1 }, OUTCOME_VOID, CAUSE_INTERRUPTED, 129, "SIGHUP" },
        { "the operator's SIGINT before the start: void, interrupted, 130",
          { .started = false, .void_cause = CAUSE_INTERRUPTED, .interrupted = 2, .detail = "it was never started" },
          OUTCOME_VOID, CAUSE_INTERRUPTED, 130, "SIGINT reached trialbox before the session started (it was never started)" },
};

START_TEST(each_way_a_session_ends_maps_to_its_kind_cause_status_and_detail)
{
        struct outcome o = base();
        outcome_from_session(&o, &endings[_i].r);
        ck_assert_msg(o.kind == endings[_i].kind, "%s: kind %d", endings[_i].name, o.kind);
        ck_assert_msg(o.cause == endings[_i].cause, "%s: cause %d", endings[_i].name, o.cause);
        ck_assert_msg(outcome_exit_status(&o) == endings[_i].status, "%s: status %d", endings[_i].name,
                      outcome_exit_status(&o));
        ck_assert_msg(strstr(o.detail, endings[_i].detail), "%s: detail '%s'", endings[_i].name, o.detail);
}
END_TEST

START_TEST(a_failed_outcome_has_a_cause_only_when_the_kernel_or_a_limit_ended_it)
{
        struct outcome o = base();
        struct session_result plain = { .started = true, .exit_code = 2 };
        outcome_from_session(&o, &plain);
        char *s = outcome_to_json(&o);
        json_object *j = json_tokener_parse(s);
        ck_assert_ptr_null(json_get(j, "cause"));
        json_object_put(j);
        free(s);

        struct session_result t = { .started = true, .signal = 15, .timed_out = true, .timeout_ms = 1000 };
        outcome_from_session(&o, &t);
        s = outcome_to_json(&o);
        j = json_tokener_parse(s);
        ck_assert_str_eq(json_object_get_string(json_get(j, "cause")), "timeout");
        ck_assert_str_eq(json_object_get_string(json_get(j, "outcome")), "failed");
        json_object_put(j);
        free(s);
}
END_TEST

START_TEST(times_are_rfc3339_utc_with_milliseconds)
{
        char buf[40];
        ck_assert_str_eq(outcome_format_time(1764598335123LL, buf, sizeof buf), "2025-12-01T14:12:15.123Z");
        ck_assert_str_eq(outcome_format_time(1000, buf, sizeof buf), "1970-01-01T00:00:01.000Z");
        ck_assert_str_eq(outcome_format_time(1764598335007LL, buf, sizeof buf), "2025-12-01T14:12:15.007Z");
}
END_TEST

START_TEST(the_json_has_the_record_fields_with_nulls_where_unknown)
{
        struct outcome o = outcome_of((struct session_result){ .started = true, .exit_code = 0 });
        /* Built without the record's fields: nothing stamped. */
        char *s = outcome_to_json(&o);
        json_object *j = json_tokener_parse(s);
        ck_assert_ptr_null(json_get(j, "started_at"));
        ck_assert_ptr_null(json_get(j, "ended_at"));
        ck_assert_ptr_null(json_get(j, "usage"));
        ck_assert_ptr_null(json_get(j, "host"));
        ck_assert_ptr_null(json_get(json_object_object_get(j, "limits"), "memory_bytes"));
        ck_assert_str_eq(json_object_get_string(json_get(j, "trialbox_version")), TB_VERSION);
        json_object_put(j);
        free(s);

        struct trial_limits l;
        struct tb_error err = { 0 };
        trial_limits_init(&l);
        ck_assert_int_eq(trial_limits_set(&l, "--memory", "512M", &err), 0);
        outcome_start(&o);
        o.limits = &l;
        o.usage_known = true;
        o.usage.oom_kills = 0;
        struct rusage ru = { .ru_utime = { 1, 500000 }, .ru_stime = { 0, 250000 }, .ru_maxrss = 2048 };
        trial_usage_fill_from_rusage(&o.usage, &ru);
        outcome_end(&o);
        s = outcome_to_json(&o);
        j = json_tokener_parse(s);
        const char *started = json_object_get_string(json_get(j, "started_at"));
        ck_assert_int_eq(strlen(started), 24);
        ck_assert_msg(started[4] == '-' && started[10] == 'T' && started[19] == '.' && started[23] == 'Z', "%s", started);
        ck_assert_ptr_nonnull(json_get(j, "ended_at"));
        ck_assert_int_eq(json_object_get_int64(json_get(json_get(j, "limits"), "memory_bytes")), 512LL << 20);
        ck_assert_ptr_null(json_get(json_get(j, "limits"), "pids"));
        json_object *u = json_get(j, "usage");
        ck_assert_int_eq(json_object_get_int64(json_get(u, "cpu_user_ms")), 1500);
        ck_assert_int_eq(json_object_get_int64(json_get(u, "cpu_system_ms")), 250);
        ck_assert_int_eq(json_object_get_int64(json_get(u, "peak_memory_bytes")), 2048 * 1024);
        ck_assert_int_eq(json_object_get_int64(json_get(u, "oom_kills")), 0);
        ck_assert_ptr_null(json_get(u, "pids_refused"));
        ck_assert_str_eq(json_object_get_string(json_get(u, "source")), "rusage");
        char host[256] = "";
        gethostname(host, sizeof host);
        ck_assert_str_eq(json_object_get_string(json_get(j, "host")), host);
        json_object_put(j);
        free(s);
}
END_TEST

START_TEST(rusage_fills_only_what_the_cgroup_did_not_know)
{
        struct trial_usage u;
        trial_usage_init(&u);
        u.peak_memory_bytes = 300LL << 20;
        u.source = USAGE_CGROUP;
        u.cpu_user_ms = 990;
        struct rusage ru = { .ru_utime = { 5, 0 }, .ru_stime = { 0, 7000 }, .ru_maxrss = 10 };
        trial_usage_fill_from_rusage(&u, &ru);
        ck_assert_int_eq(u.cpu_user_ms, 990);
        ck_assert_int_eq(u.cpu_system_ms, 7);
        ck_assert_int_eq(u.peak_memory_bytes, 300LL << 20);
        ck_assert_int_eq(u.source, USAGE_CGROUP);
}
END_TEST

static void write_running_with(const char *dir, pid_t pid, const char *boot)
{
        struct outcome o = base();
        struct tb_error err = { 0 };
        outcome_start(&o);
        ck_assert_msg(outcome_write_running(&o, dir, pid, boot, &err) == 0, "%s", err.msg);
}

START_TEST(a_running_record_is_lost_when_its_pid_is_gone_or_the_boot_differs)
{
        char *dir = tmpdir_new(), path[1024], boot[40];
        struct tb_error err = { 0 };
        snprintf(path, sizeof path, "%s/outcome.json", dir);
        ck_assert_int_eq(outcome_boot_id(boot, sizeof boot, &err), 0);
        ck_assert_int_eq(strlen(boot), 36);

        write_running_with(dir, getpid(), boot);
        char *v = outcome_field(dir, "outcome");
        ck_assert_str_eq(v, "running");
        free(v);
        v = outcome_field(dir, "boot_id");
        ck_assert_str_eq(v, boot);
        free(v);
        v = outcome_field(dir, "started_at");
        ck_assert_str_ne(v, "null");
        free(v);
        ck_assert_int_eq(outcome_launcher_lost(path), 0);

        pid_t gone = fork();
        if (gone == 0)
                _exit(0);
        waitpid(gone, NULL, 0);
        write_running_with(dir, gone, boot);
        ck_assert_int_eq(outcome_launcher_lost(path), 1);

        write_running_with(dir, getpid(), "00000000-0000-0000-0000-000000000000");
        ck_assert_int_eq(outcome_launcher_lost(path), 1);

        /* Our pid, this boot, but a process started at another time: the pid was reused. */
        char record[512];
        snprintf(record, sizeof record, "{\"outcome\": \"running\", \"pid\": %d, \"pid_start\": 1, \"boot_id\": \"%s\"}",
                 (int)getpid(), boot);
        write_text(path, record, 0644);
        ck_assert_int_eq(outcome_launcher_lost(path), 1);
        write_running_with(dir, getpid(), boot);
        v = outcome_field(dir, "pid_start");
        ck_assert_int_gt(atoll(v), 1);
        free(v);
        ck_assert_int_eq(outcome_launcher_lost(path), 0);

        /* The final Outcome replaces the record: nothing is lost. */
        struct outcome o = outcome_of((struct session_result){ .started = true });
        ck_assert_int_eq(outcome_write(&o, dir, &err), 0);
        ck_assert_int_eq(outcome_launcher_lost(path), 0);

        write_text(path, "{\"outcome\": \"running\"", 0644);
        ck_assert_int_eq(outcome_launcher_lost(path), -EBADMSG);
        write_text(path, "{\"outcome\": \"running\", \"pid\": \"12\"}", 0644);
        ck_assert_int_eq(outcome_launcher_lost(path), -EBADMSG);
        unlink(path);
        ck_assert_int_eq(outcome_launcher_lost(path), -ENOENT);
        tmpdir_remove(dir);
        free(dir);
}
END_TEST

START_TEST(the_reserved_final_record_replaces_the_running_one_and_leaves_no_temp_file)
{
        char *dir = tmpdir_new(), boot[40];
        struct tb_error err = { 0 };
        struct outcome_file f = OUTCOME_FILE_INIT;
        struct outcome o = base();
        ck_assert_int_eq(outcome_boot_id(boot, sizeof boot, &err), 0);
        outcome_start(&o);
        ck_assert_msg(outcome_reserve(&f, dir, &err) == 0, "%s", err.msg);
        write_running_with(dir, getpid(), boot);
        struct session_result r = { .started = true, .exit_code = 4 };
        outcome_from_session(&o, &r);
        outcome_end(&o);
        ck_assert_msg(outcome_commit(&f, &o, &err) == 0, "%s", err.msg);
        outcome_file_done(&f);
        outcome_file_done(&f);
        char *v = outcome_field(dir, "exit_code");
        ck_assert_str_eq(v, "4");
        free(v);
        char *argv[] = { "/bin/ls", "-A", dir, NULL };
        struct proc_result pr;
        run_argv(&pr, NULL, argv);
        ck_assert_str_eq(pr.out, "outcome.json\n");
        proc_result_free(&pr);

        /* A reservation given up leaves nothing either. */
        ck_assert_int_eq(outcome_reserve(&f, dir, &err), 0);
        outcome_file_done(&f);
        run_argv(&pr, NULL, argv);
        ck_assert_str_eq(pr.out, "outcome.json\n");
        proc_result_free(&pr);
        tmpdir_remove(dir);
        free(dir);
}
END_TEST

/* Fill the filesystem of `dir` until it refuses another byte. */
static void fill_up(const char *dir)
{
        char path[1024], block[4096];
        memset(block, 'x', sizeof block);
        snprintf(path, sizeof path, "%s/filler", dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        while (write(fd, block, sizeof block) > 0) {
        }
        ck_assert_int_eq(errno, ENOSPC);
        close(fd);
}

START_TEST(a_filesystem_the_session_filled_still_gets_the_final_outcome)
{
        if (geteuid() != 0) {
                fprintf(stderr, "skipped: mounting a small tmpfs needs root\n");
                return;
        }
        char *dir = tmpdir_new(), boot[40];
        struct tb_error err = { 0 };
        ck_assert_int_eq(mount("tb-outcome-test", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=1M,mode=0755"), 0);
        struct outcome_file f = OUTCOME_FILE_INIT;
        struct outcome o = base();
        outcome_start(&o);
        ck_assert_int_eq(outcome_boot_id(boot, sizeof boot, &err), 0);
        ck_assert_msg(outcome_reserve(&f, dir, &err) == 0, "%s", err.msg);
        write_running_with(dir, getpid(), boot);

        fill_up(dir); /* what a session might do */
        /* Without the reservation there is no room: the old way fails. */
        struct session_result r = { .started = true, .exit_code = 0 };
        outcome_from_session(&o, &r);
        outcome_end(&o);
        ck_assert_int_eq(outcome_write(&o, dir, &err), -ENOSPC);

        ck_assert_msg(outcome_commit(&f, &o, &err) == 0, "%s", err.msg);
        outcome_file_done(&f);
        char *v = outcome_field(dir, "outcome");
        ck_assert_str_eq(v, "completed");
        free(v);
        v = outcome_field(dir, "ended_at");
        ck_assert_str_ne(v, "null");
        free(v);
        ck_assert_int_eq(umount2(dir, MNT_DETACH), 0);
        tmpdir_remove(dir);
        free(dir);
}
END_TEST

TB_SUITE("outcome", 0)
{
        tcase_add_test(tc, exit_zero_is_completed);
        tcase_add_test(tc, a_nonzero_exit_is_failed_with_its_code_passed_through);
        tcase_add_test(tc, a_signal_is_failed_with_the_signal_and_128_plus_n);
        tcase_add_test(tc, a_session_that_never_started_is_void_with_its_cause);
        tcase_add_test(tc, the_json_has_every_field_with_nulls_where_they_do_not_apply);
        tcase_add_test(tc, the_outcome_file_is_written_whole_and_replaces_no_temp_file);
        tcase_add_loop_test(tc, each_way_a_session_ends_maps_to_its_kind_cause_status_and_detail, 0,
                            TB_ARRAY_SIZE(endings));
        tcase_add_test(tc, a_failed_outcome_has_a_cause_only_when_the_kernel_or_a_limit_ended_it);
        tcase_add_test(tc, times_are_rfc3339_utc_with_milliseconds);
        tcase_add_test(tc, the_json_has_the_record_fields_with_nulls_where_unknown);
        tcase_add_test(tc, rusage_fills_only_what_the_cgroup_did_not_know);
        tcase_add_test(tc, a_running_record_is_lost_when_its_pid_is_gone_or_the_boot_differs);
        tcase_add_test(tc, the_reserved_final_record_replaces_the_running_one_and_leaves_no_temp_file);
        tcase_add_test(tc, a_filesystem_the_session_filled_still_gets_the_final_outcome);
}
