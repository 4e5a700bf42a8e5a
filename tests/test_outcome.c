/* The Outcome: how a session's end maps to completed / failed / void, the
 * JSON it becomes, the exit status, and the atomic write. */
#define _GNU_SOURCE
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outcome.h"
#include "testutil.h"

static struct outcome base(void)
{
        return (struct outcome){ .harness = "codex", .exit_code = -1, .sandboxed = true, .home = "/o/home" };
}

START_TEST(exit_zero_is_completed)
{
        struct outcome o = base();
        struct session_result r = { .started = true, .exit_code = 0 };
        outcome_from_session(&o, &r);
        ck_assert_int_eq(o.kind, OUTCOME_COMPLETED);
        ck_assert_int_eq(outcome_exit_status(&o), 0);
}
END_TEST

START_TEST(a_nonzero_exit_is_failed_with_its_code_passed_through)
{
        struct outcome o = base();
        struct session_result r = { .started = true, .exit_code = 3 };
        outcome_from_session(&o, &r);
        ck_assert_int_eq(o.kind, OUTCOME_FAILED);
        ck_assert_int_eq(o.exit_code, 3);
        ck_assert_int_eq(o.signal, 0);
        ck_assert_int_eq(outcome_exit_status(&o), 3);
}
END_TEST

START_TEST(a_signal_is_failed_with_the_signal_and_128_plus_n)
{
        struct outcome o = base();
        struct session_result r = { .started = true, .signal = 15 };
        outcome_from_session(&o, &r);
        ck_assert_int_eq(o.kind, OUTCOME_FAILED);
        ck_assert_int_eq(o.signal, 15);
        ck_assert_int_eq(o.exit_code, -1);
        ck_assert_int_eq(outcome_exit_status(&o), 143);
        ck_assert_ptr_nonnull(strstr(o.detail, "SIGTERM"));
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
        ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/folder"));
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("outcome");
        TCase *tc = tcase_create("outcome");
        tcase_add_test(tc, exit_zero_is_completed);
        tcase_add_test(tc, a_nonzero_exit_is_failed_with_its_code_passed_through);
        tcase_add_test(tc, a_signal_is_failed_with_the_signal_and_128_plus_n);
        tcase_add_test(tc, a_session_that_never_started_is_void_with_its_cause);
        tcase_add_test(tc, the_json_has_every_field_with_nulls_where_they_do_not_apply);
        tcase_add_test(tc, the_outcome_file_is_written_whole_and_replaces_no_temp_file);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) { return run_suite(suite()); }
