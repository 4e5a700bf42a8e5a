/* A session that forges its Harness's usage files to attack whoever reads
 * them after it (trialbox, for the Outcome's tokens): a FIFO named like a
 * rollout, links to /etc/shadow and to /, hard links, JSON a million deep,
 * counts below 0 and over 2^53, forty model names, a 150 MB rollout,
 * 100,000 files. A forged home can change the Trial's own numbers and
 * nothing else: the Trial completes in bounded time, nothing is followed,
 * opened or waited on but the session's regular files, and the record stays
 * within its bounds. The real bwrap, the codex plugin, and
 * tests/fakes/forge-usage as the Harness, next to a real Codex 0.171
 * rollout (the fuzz seed) whose totals are known. */
#define _GNU_SOURCE
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tb_test.h"

#define CODEX_SEED TESTS_SOURCE_DIR "/fuzz/corpus/tokens_codex/real-codex-0.171-two-turns.jsonl"

struct forged {
        struct fixture f;
        json_object *outcome;
        json_object *tokens; /* NULL: null */
        long long ms;        /* how long trialbox ran */
};

/* One codex Trial whose session forges as `what` says (forge-usage). */
static void forge(struct forged *t, const char *what)
{
        fixture_new(&t->f);
        _cleanup_free_ char *real = path_in(t->f.repo, "real.jsonl");
        copy_file(CODEX_SEED, real, 0644, SIZE_MAX);
        _cleanup_free_ char *home = path_in(t->f.dir, "codex-home");
        write_in(home, "auth.json", "{\"OPENAI_API_KEY\": \"tbtest-key\"}", 0600);
        _cleanup_free_ char *env = xasprintf("CODEX_HOME=%s", home);
        struct proc_result r;
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        tb_run(&r, "codex", &t->f, ENV(env),
               EXTRA("--network", "none", "--harness-bin", FAKE("forge-usage"), "--", what));
        clock_gettime(CLOCK_MONOTONIC, &b);
        t->ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
        ck_assert_msg(r.status == 0, "the forging Trial (%s) ended with %d: %s", what, r.status, r.err);
        _cleanup_free_ char *path = path_in(t->f.out, "outcome.json");
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_int_lt(st.st_size, 65536); /* the record's bound: its reserved space */
        _cleanup_free_ char *text = read_text(path);
        t->outcome = json_tokener_parse(text);
        ck_assert_ptr_nonnull(t->outcome);
        ck_assert_str_eq(json_object_get_string(json_get(t->outcome, "outcome")), "completed");
        t->tokens = json_get(t->outcome, "tokens");
        printf("%s: %lld ms, tokens %s\n", what, t->ms, t->tokens ? json_object_to_json_string(t->tokens) : "null");
        proc_result_free(&r);
}

static void forged_free(struct forged *t)
{
        json_object_put(t->outcome);
        fixture_free(&t->f);
}

static long long count(const struct forged *t, const char *name)
{
        return json_object_get_int64(json_get(t->tokens, name));
}

static bool partial(const struct forged *t) { return json_object_get_boolean(json_get(t->tokens, "partial")); }

/* The real rollout's totals (what the stand-in server sent Codex 0.171). */
static void assert_real_totals(const struct forged *t)
{
        ck_assert_msg(t->tokens != NULL, "tokens is null");
        ck_assert_int_eq(count(t, "input"), 3234);
        ck_assert_int_eq(count(t, "cached_input"), 1734);
        ck_assert_int_eq(count(t, "cache_write_input"), 11);
        ck_assert_int_eq(count(t, "output"), 86);
        ck_assert_int_eq(count(t, "reasoning"), 7);
        ck_assert_int_eq(count(t, "requests"), 2);
}

START_TEST(fifos_links_hard_links_and_json_a_million_deep_are_never_followed_opened_or_counted)
{
        struct forged t;
        forge(&t, "specials");
        /* Only the real rollout counts: the hard-linked copy, the one below
         * the depth limit and the garbage do not; the FIFO was not waited
         * on (or the Trial would not have ended). */
        assert_real_totals(&t);
        ck_assert(!partial(&t));
        forged_free(&t);
}
END_TEST

START_TEST(counts_below_zero_or_over_2_53_are_refused_and_forty_models_make_eight_names)
{
        struct forged t;
        forge(&t, "numbers");
        /* The real rollout, plus the forty forged sessions' totals (0 to 39
         * input, 1 output each); the others refused. */
        ck_assert_msg(t.tokens != NULL, "tokens is null");
        ck_assert_int_eq(count(&t, "input"), 3234 + 39);
        ck_assert_int_eq(count(&t, "output"), 86 + 1);
        ck_assert(partial(&t));
        json_object *models = json_get(t.tokens, "models");
        ck_assert_uint_eq(json_object_array_length(models), 8);
        ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(models, 0)), "forged-model-00");
        /* The forty forged names and the real one: their order is the
         * names', the one session's last model its record's. */
        ck_assert_int_eq(count(&t, "models_more"), 41 - 8);
        forged_free(&t);
}
END_TEST

START_TEST(a_150_mb_rollout_is_read_from_its_tail_within_its_bound)
{
        struct forged t;
        forge(&t, "big");
        /* Its last 128 MiB hold the real lines: the totals stand; the cut
         * is said. */
        assert_real_totals(&t);
        ck_assert(partial(&t));
        forged_free(&t);
}
END_TEST

START_TEST(a_hundred_thousand_files_cost_a_bounded_walk_and_the_newest_is_read)
{
        struct forged t;
        forge(&t, "many");
        assert_real_totals(&t);
        ck_assert(partial(&t)); /* the newest 256 only */
        forged_free(&t);
}
END_TEST

TB_SUITE("forged_usage", 120)
{
        (void)s;
        tcase_add_test(tc, fifos_links_hard_links_and_json_a_million_deep_are_never_followed_opened_or_counted);
        tcase_add_test(tc, counts_below_zero_or_over_2_53_are_refused_and_forty_models_make_eight_names);
        tcase_add_test(tc, a_150_mb_rollout_is_read_from_its_tail_within_its_bound);
        tcase_add_test(tc, a_hundred_thousand_files_cost_a_bounded_walk_and_the_newest_is_read);
}
