/* Limits as the user writes them: durations, sizes, process counts, CPUs,
 * each accepted form and each refusal, and the JSON outcome.json carries. */
#define _GNU_SOURCE
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "model/limits.h"
#include "tb_test.h"

static const struct {
        const char *text;
        long long ms;
} good_durations[] = {
        { "90", 90000 },     { "90s", 90000 },   { "1.5m", 90000 },     { "30m", 1800000 }, { "2h", 7200000 },
        { "0.5", 500 },      { ".25s", 250 },    { "250ms", 250 },      { "1.0005s", 1001 }, { "0.0001", 0 + 0 },
        { "87600h", 315360000000LL },
};

START_TEST(a_duration_in_every_accepted_form_reads_as_milliseconds)
{
        struct tb_error err = { 0 };
        long long ms = -7;
        /* "0.0001" rounds to 0 ms: refused as zero for --timeout, taken by --kill-after. */
        bool zero = good_durations[_i].ms == 0;
        int r = limits_parse_duration("--timeout", good_durations[_i].text, false, &ms, &err);
        if (zero) {
                ck_assert_int_eq(r, -EINVAL);
                r = limits_parse_duration("--kill-after", good_durations[_i].text, true, &ms, &err);
        }
        ck_assert_msg(r == 0, "'%s': %s", good_durations[_i].text, err.msg);
        ck_assert_int_eq(ms, good_durations[_i].ms);
}
END_TEST

static const struct text_case bad_durations[] = {
        { "", "not a duration" },        { "-5", "not a duration" },     { "+5", "not a duration" },
        { "5x", "not a duration" },      { "5 s", "not a duration" },    { " 5", "not a duration" },
        { "1e3", "not a duration" },     { "inf", "not a duration" },    { "0x10", "not a duration" },
        { "5.", "not a duration" },      { ".", "not a duration" },      { "5sm", "not a duration" },
        { "0", "not more than 0" },      { "0s", "not more than 0" },    { "0.0h", "not more than 0" },
        { "88000h", "too long" },        { "99999999999999999999999", "too long" },
        { "5\033[2J", "not a duration" },
};

START_TEST(a_bad_duration_is_refused_naming_the_option_and_the_forms)
{
        struct tb_error err = { 0 };
        long long ms = -7;
        ck_assert_int_eq(limits_parse_duration("--timeout", bad_durations[_i].in, false, &ms, &err), -EINVAL);
        ck_assert_int_eq(ms, -7);
        ck_assert_msg(strstr(err.msg, bad_durations[_i].want), "'%s': %s", bad_durations[_i].in, err.msg);
        ck_assert_msg(str_has_prefix(err.msg, "--timeout '"), "%s", err.msg);
        ck_assert_ptr_null(strchr(err.msg, '\033'));
        ck_assert_ptr_null(strchr(err.msg, '\n'));
        if (!strstr(err.msg, "too long"))
                assert_contains(err.msg, "(90, 90s, 1.5m, 2h)");
}
END_TEST

START_TEST(kill_after_takes_zero_and_defaults_to_ten_seconds)
{
        struct trial_limits l;
        struct tb_error err = { 0 };
        trial_limits_init(&l);
        ck_assert_int_eq(l.kill_after_ms, 10000);
        ck_assert_int_eq(trial_limits_set(&l, "--kill-after", "0", &err), 0);
        ck_assert_int_eq(l.kill_after_ms, 0);
        ck_assert_int_eq(trial_limits_set(&l, "--kill-after", "-1", &err), -EINVAL);
        assert_contains(err.msg, "--kill-after");
}
END_TEST

static const struct {
        const char *text;
        long long bytes;
} good_sizes[] = {
        { "512M", 512LL << 20 },   { "4G", 4LL << 30 },         { "1.5G", 3LL << 29 },   { "1048576", 1LL << 20 },
        { "512m", 512LL << 20 },   { "2048k", 2LL << 20 },      { "1T", 1LL << 40 },     { "1.5GiB", 3LL << 29 },
        { "100MiB", 100LL << 20 }, { "1.0000001M", 1LL << 20 }, { "0.5G", 1LL << 29 },
};

START_TEST(a_size_in_every_accepted_form_reads_as_bytes_in_powers_of_1024)
{
        struct tb_error err = { 0 };
        long long b = -7;
        ck_assert_msg(limits_parse_size("--memory", good_sizes[_i].text, &b, &err) == 0, "'%s': %s",
                      good_sizes[_i].text, err.msg);
        ck_assert_int_eq(b, good_sizes[_i].bytes);
}
END_TEST

static const struct text_case bad_sizes[] = {
        { "", "not a size" },     { "-1G", "not a size" },  { "1GB", "not a size" }, { "1Gi", "not a size" },
        { "1X", "not a size" },   { "1 G", "not a size" },  { "G", "not a size" },   { "1e9", "not a size" },
        { "1P", "not a size" },   { "1.G", "not a size" },  { "0", "less than" },    { "1000K", "less than" },
        { "99999999T", "too large" }, { "99999999999999999999", "too large" },
};

START_TEST(a_bad_size_is_refused_naming_the_option_and_the_forms)
{
        struct tb_error err = { 0 };
        long long b = -7;
        ck_assert_int_eq(limits_parse_size("--memory", bad_sizes[_i].in, &b, &err), -EINVAL);
        ck_assert_int_eq(b, -7);
        ck_assert_msg(strstr(err.msg, bad_sizes[_i].want), "'%s': %s", bad_sizes[_i].in, err.msg);
        ck_assert_msg(str_has_prefix(err.msg, "--memory '"), "%s", err.msg);
        assert_contains(err.msg, "(512M, 4G, 1.5G)");
}
END_TEST

static const struct {
        const char *text;
        long long want; /* -1: refused */
} pids_cases[] = {
        { "64", 64 },  { "1", 1 },     { "4194304", 4194304 }, { "0", -1 },  { "-1", -1 }, { "1.5", -1 },
        { "64.", -1 }, { "4194305", -1 }, { "", -1 },           { "6x", -1 }, { "1.0", -1 },
};

START_TEST(pids_must_be_a_positive_whole_number)
{
        struct tb_error err = { 0 };
        long long n = -7;
        int r = limits_parse_pids("--pids", pids_cases[_i].text, &n, &err);
        if (pids_cases[_i].want < 0) {
                ck_assert_msg(r == -EINVAL, "'%s' was taken", pids_cases[_i].text);
                assert_contains(err.msg, "--pids '");
                assert_contains(err.msg, "whole number from 1");
        } else {
                ck_assert_msg(r == 0, "'%s': %s", pids_cases[_i].text, err.msg);
                ck_assert_int_eq(n, pids_cases[_i].want);
        }
}
END_TEST

static const struct {
        const char *text;
        long long milli; /* -1: refused */
} cpus_cases[] = {
        { "1", 1000 }, { "1.5", 1500 }, { "0.25", 250 }, { ".5", 500 },    { "0.01", 10 },   { "4096", 4096000 },
        { "0", -1 },   { "0.001", -1 }, { "-1", -1 },    { "4097", -1 },   { "1.5x", -1 },   { "", -1 },
};

START_TEST(cpus_is_a_fraction_above_zero)
{
        struct tb_error err = { 0 };
        long long m = -7;
        int r = limits_parse_cpus("--cpus", cpus_cases[_i].text, &m, &err);
        if (cpus_cases[_i].milli < 0) {
                ck_assert_msg(r == -EINVAL, "'%s' was taken", cpus_cases[_i].text);
                assert_contains(err.msg, "--cpus '");
        } else {
                ck_assert_msg(r == 0, "'%s': %s", cpus_cases[_i].text, err.msg);
                ck_assert_int_eq(m, cpus_cases[_i].milli);
        }
}
END_TEST

START_TEST(only_the_limit_options_are_limits_and_only_some_need_a_cgroup)
{
        struct trial_limits l;
        struct tb_error err = { 0 };
        trial_limits_init(&l);
        ck_assert_int_eq(trial_limits_set(&l, "--harness", "x", &err), -ENOENT);
        ck_assert_int_eq(trial_limits_set(&l, "--timeout", "2h", &err), 0);
        ck_assert(!trial_limits_need_cgroup(&l));
        ck_assert_int_eq(trial_limits_tmpfs_size(&l), LIMIT_UNSET);
        ck_assert_int_eq(trial_limits_set(&l, "--pids", "64", &err), 0);
        ck_assert(trial_limits_need_cgroup(&l));
        ck_assert_int_eq(trial_limits_set(&l, "--memory", "512M", &err), 0);
        ck_assert_int_eq(trial_limits_tmpfs_size(&l), 512LL << 20);
}
END_TEST

START_TEST(the_deadline_is_the_unix_second_the_timeout_falls_at)
{
        struct trial_limits l;
        struct tb_error err = { 0 };
        trial_limits_init(&l);
        ck_assert_int_eq(trial_limits_deadline(&l, 1764598335123LL), LIMIT_UNSET);
        ck_assert_int_eq(trial_limits_set(&l, "--timeout", "1.5m", &err), 0);
        ck_assert_int_eq(trial_limits_deadline(&l, 1764598335123LL), 1764598425);
        ck_assert_int_eq(trial_limits_set(&l, "--timeout", "0.9", &err), 0);
        ck_assert_int_eq(trial_limits_deadline(&l, 1764598335123LL), 1764598336);
}
END_TEST

START_TEST(the_limits_json_is_null_where_nothing_was_asked)
{
        struct trial_limits l;
        struct tb_error err = { 0 };
        trial_limits_init(&l);
        json_object *j = trial_limits_to_json(&l);
        const char *keys[] = { "timeout_ms", "kill_after_ms", "memory_bytes", "pids", "cpus" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(keys); i++)
                ck_assert_ptr_null(json_get(j, keys[i]));
        json_object_put(j);

        trial_limits_set(&l, "--timeout", "1.5m", &err);
        trial_limits_set(&l, "--memory", "1.5G", &err);
        trial_limits_set(&l, "--pids", "64", &err);
        trial_limits_set(&l, "--cpus", "1.5", &err);
        j = trial_limits_to_json(&l);
        ck_assert_int_eq(json_object_get_int64(json_get(j, "timeout_ms")), 90000);
        ck_assert_int_eq(json_object_get_int64(json_get(j, "kill_after_ms")), 10000);
        ck_assert_int_eq(json_object_get_int64(json_get(j, "memory_bytes")), 3LL << 29);
        ck_assert_int_eq(json_object_get_int64(json_get(j, "pids")), 64);
        ck_assert(json_object_is_type(json_get(j, "cpus"), json_type_double));
        ck_assert_double_eq(json_object_get_double(json_get(j, "cpus")), 1.5);
        json_object_put(j);
}
END_TEST

TB_SUITE("limits", 0)
{
        tcase_add_loop_test(tc, a_duration_in_every_accepted_form_reads_as_milliseconds, 0, TB_ARRAY_SIZE(good_durations));
        tcase_add_loop_test(tc, a_bad_duration_is_refused_naming_the_option_and_the_forms, 0, TB_ARRAY_SIZE(bad_durations));
        tcase_add_test(tc, kill_after_takes_zero_and_defaults_to_ten_seconds);
        tcase_add_loop_test(tc, a_size_in_every_accepted_form_reads_as_bytes_in_powers_of_1024, 0, TB_ARRAY_SIZE(good_sizes));
        tcase_add_loop_test(tc, a_bad_size_is_refused_naming_the_option_and_the_forms, 0, TB_ARRAY_SIZE(bad_sizes));
        tcase_add_loop_test(tc, pids_must_be_a_positive_whole_number, 0, TB_ARRAY_SIZE(pids_cases));
        tcase_add_loop_test(tc, cpus_is_a_fraction_above_zero, 0, TB_ARRAY_SIZE(cpus_cases));
        tcase_add_test(tc, only_the_limit_options_are_limits_and_only_some_need_a_cgroup);
        tcase_add_test(tc, the_limits_json_is_null_where_nothing_was_asked);
        tcase_add_test(tc, the_deadline_is_the_unix_second_the_timeout_falls_at);
}
