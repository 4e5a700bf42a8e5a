/* What a Trial cost: the bounded line reader, the finder of a hostile
 * home's newest files, the services of ABI 1.4 and the tally, and the
 * codex and claude plugins' `tokens` hooks on real transcripts (the fuzz
 * seeds, from Codex 0.171 and Claude Code 2.1.332 against a stand-in model
 * server whose usage is known) and on forged ones. */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/lines.h"
#include "base/newest.h"
#include "model/outcome.h"
#include "plugin/host.h"
#include "plugin/loader.h"
#include "plugin/tokens.h"
#include "tb_test.h"

#define CODEX_SEED TESTS_SOURCE_DIR "/fuzz/corpus/tokens_codex/real-codex-0.171-two-turns.jsonl"
#define CLAUDE_SEED TESTS_SOURCE_DIR "/fuzz/corpus/tokens_claude/real-claude-2.1.332-two-turns.jsonl"
#define ROLLOUT_DIR ".codex/sessions/2026/12/02"
#define PROJECT_DIR ".claude/projects/-work-repo"

/* ---- the line reader ---- */

struct got {
        char text[4096];
        size_t n;
};

static int collect(char *line, size_t len, void *ctx)
{
        struct got *g = ctx;
        ck_assert_uint_eq(strlen(line), len); /* NUL-terminated where it ends */
        g->n++;
        size_t k = strlen(g->text);
        snprintf(g->text + k, sizeof g->text - k, "%s%.*s", k ? "|" : "", (int)len, line);
        return 0;
}

/* The lines of `text` as `lim` lets them through, joined by '|'. */
static void read_lines(const char *text, const struct lines_limits *lim, struct got *g, struct lines_stats *st)
{
        _cleanup_free_ char *dir = tmpdir_new();
        _cleanup_free_ char *path = path_in(dir, "f");
        write_text(path, text, 0600);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        *g = (struct got){ 0 };
        ck_assert_int_eq(lines_read_fd(fd, lim, collect, g, st), 0);
        close(fd);
        tmpdir_remove(dir);
}

START_TEST(lines_are_read_within_their_limits)
{
        static const char *const usage[] = { "usage", NULL };
        static const struct {
                const char *text;
                size_t max_bytes, max_line;
                bool tail;
                bool needles;
                const char *want;
                size_t long_lines;
                bool cut;
        } cases[] = {
                { "a\nbb\nccc\n", 100, 100, false, false, "a|bb|ccc", 0, false },
                { "a\n\nb", 100, 100, false, false, "a||b", 0, false },         /* an empty line; no last '\n' */
                { "a\nbbbbbb\nc\n", 100, 3, false, false, "a|c", 1, false },   /* over max_line: skipped */
                { "usage 1\nnone\nusage 2\n", 100, 100, false, true, "usage 1|usage 2", 0, false },
                { "xxxxusagexxxx\nusage\n", 100, 6, false, true, "usage", 1, false }, /* a long line with a needle */
                { "xxxxxxxxxxxx\nusage\n", 100, 6, false, true, "usage", 0, false },  /* a long one without */
                { "one\ntwo\nthree\n", 9, 100, false, false, "one|two", 0, true },    /* cut: "t" is no line */
                { "one\ntwo\nthree\n", 9, 100, true, false, "three", 0, true },       /* the tail: from a whole line */
                { "one\ntwo\nthree\n", 10, 100, true, false, "two|three", 0, true },  /* the cut falls after a '\n' */
                { "abc", 2, 100, true, false, "", 0, true },                          /* no whole line in the tail */
        };
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
                const struct lines_limits lim = { .max_bytes = cases[i].max_bytes,
                                                  .max_line = cases[i].max_line,
                                                  .tail = cases[i].tail,
                                                  .needles = cases[i].needles ? usage : NULL };
                struct got g;
                struct lines_stats st;
                read_lines(cases[i].text, &lim, &g, &st);
                ck_assert_msg(strcmp(g.text, cases[i].want) == 0, "case %zu: '%s', not '%s'", i, g.text,
                              cases[i].want);
                ck_assert_msg(st.long_lines == cases[i].long_lines, "case %zu: %zu long lines", i, st.long_lines);
                ck_assert_msg(st.cut == cases[i].cut, "case %zu: cut %d", i, st.cut);
        }
}
END_TEST

START_TEST(a_needle_split_across_reads_of_a_long_line_is_seen)
{
        /* 64 KiB reads: the needle straddles the first boundary. */
        size_t n = 200000;
        char *text = xmalloc(n + 2);
        memset(text, 'x', n);
        memcpy(text + 65536 - 3, "usage", 5);
        text[n] = '\n';
        text[n + 1] = '\0';
        static const char *const usage[] = { "usage", NULL };
        const struct lines_limits lim = { .max_bytes = 1 << 20, .max_line = 1000, .needles = usage };
        struct got g;
        struct lines_stats st;
        read_lines(text, &lim, &g, &st);
        ck_assert_uint_eq(g.n, 0);
        ck_assert_uint_eq(st.long_lines, 1);
        free(text);
}
END_TEST

START_TEST(the_line_reader_refuses_what_is_not_a_regular_file_and_bad_limits)
{
        static const char *const empty[] = { "", NULL };
        struct lines_limits lim = { .max_bytes = 10, .max_line = 10 };
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ck_assert_int_eq(lines_read_fd(fd, &lim, collect, NULL, NULL), -EINVAL);
        close(fd);
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_eq(lines_read_fd(fd, &lim, collect, NULL, NULL), -EINVAL);
        lim.max_line = 0;
        ck_assert_int_eq(lines_read_fd(fd, &lim, collect, NULL, NULL), -EINVAL);
        lim = (struct lines_limits){ .max_bytes = 10, .max_line = 10, .needles = empty };
        ck_assert_int_eq(lines_read_fd(fd, &lim, collect, NULL, NULL), -EINVAL);
        close(fd);
}
END_TEST

/* ---- the newest files ---- */

START_TEST(the_newest_files_are_found_without_following_links_or_opening_anything)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        sh_ok("cd '%s' && mkdir -p a/b/c/d && touch -d '2026-01-01' old.jsonl && touch -d '2026-01-03' a/new.jsonl &&"
              " touch -d '2026-01-02' a/b/mid.jsonl && touch a/b/c/d/too-deep.jsonl && touch .hidden.jsonl &&"
              " touch other.txt && mkfifo fifo.jsonl && ln -s /etc/passwd link.jsonl && touch hard.jsonl &&"
              " ln hard.jsonl hard2.jsonl && ln -s /etc a/linked",
              dir);
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct newest_limits lim = { .suffix = ".jsonl", .max_depth = 2, .max_files = 10, .max_entries = 1000,
                                     .owner = geteuid() };
        struct newest_file *v;
        size_t n;
        bool cut;
        ck_assert_int_eq(newest_files_at(fd, &lim, &v, &n, &cut), 0);
        ck_assert_uint_eq(n, 3);
        ck_assert_str_eq(v[0].path, "a/new.jsonl");
        ck_assert_str_eq(v[1].path, "a/b/mid.jsonl");
        ck_assert_str_eq(v[2].path, "old.jsonl");
        ck_assert(!cut);
        newest_files_free(v, n);

        /* The newest two only, and the cut said. */
        lim.max_files = 2;
        ck_assert_int_eq(newest_files_at(fd, &lim, &v, &n, &cut), 0);
        ck_assert_uint_eq(n, 2);
        ck_assert_str_eq(v[1].path, "a/b/mid.jsonl");
        ck_assert(cut);
        newest_files_free(v, n);

        /* A walk stopped by its budget of entries keeps what it found. */
        lim = (struct newest_limits){ .suffix = ".jsonl", .max_depth = 8, .max_files = 10, .max_entries = 3,
                                      .owner = geteuid() };
        ck_assert_int_eq(newest_files_at(fd, &lim, &v, &n, &cut), 0);
        ck_assert(cut);
        ck_assert_uint_le(n, 3);
        newest_files_free(v, n);

        /* Someone else's files are not the session's. */
        lim = (struct newest_limits){ .suffix = ".jsonl", .max_depth = 8, .max_files = 10, .max_entries = 1000,
                                      .owner = geteuid() + 1 };
        ck_assert_int_eq(newest_files_at(fd, &lim, &v, &n, &cut), 0);
        ck_assert_uint_eq(n, 0);
        newest_files_free(v, n);
        close(fd);
}
END_TEST

/* ---- the services and the plugins ---- */

/* Run the `tokens` hook of the built plugin `name` on the home `home`. */
static void plugin_tokens(const char *name, const char *home, struct trial_tokens *out)
{
        struct plugin p;
        struct tb_error err = { 0 };
        _cleanup_free_ char *so = xasprintf("%s/%s.so", PLUGIN_BUILD_DIR, name);
        ck_assert_msg(plugin_load_file(so, name, &p, &err) == 0, "%s", err.msg);
        ck_assert_ptr_nonnull(p.tokens);
        int fd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        struct tb_host host = { .harness = name, .sandboxed = true, .home_fd = &fd };
        host_read_tokens(&host, p.tokens, out);
        host_done(&host);
        close(fd);
        plugin_unload(&p);
}

/* A home with the file `rel` holding what `from` holds (then `more`). */
static char *home_with(const char *rel, const char *from, const char *more)
{
        char *home = tmpdir_new();
        _cleanup_free_ char *text = from ? read_text(from) : xstrdup("");
        ck_assert_ptr_nonnull(text);
        _cleanup_free_ char *all = xasprintf("%s%s", text, more ? more : "");
        write_in(home, rel, all, 0600);
        return home;
}

#define assert_counts(t, in_, cached_, cw_, out_, reasoning_, requests_)                                    \
        do {                                                                                                     \
                ck_assert((t)->known);                                                                           \
                ck_assert_int_eq((t)->input, (in_));                                                             \
                ck_assert_int_eq((t)->cached_input, (cached_));                                                  \
                ck_assert_int_eq((t)->cache_write_input, (cw_));                                                 \
                ck_assert_int_eq((t)->output, (out_));                                                           \
                ck_assert_int_eq((t)->reasoning, (reasoning_));                                                  \
                ck_assert_int_eq((t)->requests, (requests_));                                                    \
        } while (0)

/* One model, `model`, read whole from `source`. */
#define assert_one_model_from(t, model, source_)                                                              \
        do {                                                                                                     \
                ck_assert_uint_eq((t)->n_models, 1);                                                             \
                ck_assert_str_eq((t)->models[0], (model));                                                       \
                ck_assert_str_eq((t)->source, (source_));                                                        \
                ck_assert(!(t)->partial);                                                                        \
        } while (0)

/* What the stand-in server sent Codex 0.171 in its two responses (its
 * --record file): 1234+2000 input, 234+1500 cached, 11 written to the cache,
 * 56+30 output, 7 reasoning. */
START_TEST(a_codex_rollout_gives_the_sessions_total_as_the_server_sent_it)
{
        _cleanup_tmpdir_ char *home = home_with(ROLLOUT_DIR "/rollout-a.jsonl", CODEX_SEED, NULL);
        struct trial_tokens t;
        plugin_tokens("codex", home, &t);
        assert_counts(&t, 3234, 1734, 11, 86, 7, 2);
        assert_one_model_from(&t, "stand-in-model", "~/.codex/sessions");
}
END_TEST

START_TEST(codex_sessions_are_summed_each_by_its_last_total)
{
        _cleanup_tmpdir_ char *home = home_with(ROLLOUT_DIR "/rollout-a.jsonl", CODEX_SEED, NULL);
        _cleanup_free_ char *two = path_in(home, ".codex/sessions/2026/12/01/rollout-b.jsonl");
        sh_ok("mkdir -p \"$(dirname '%s')\" && head -n 13 '%s' > '%s'", two, CODEX_SEED, two); /* its first turn */
        struct trial_tokens t;
        plugin_tokens("codex", home, &t);
        assert_counts(&t, 3234 + 1234, 1734 + 234, 11 + 11, 86 + 56, 7 + 7, 3);
}
END_TEST

/* Claude Code 2.1.332 wrote each response twice (a thinking and a text
 * block) with the same message.id; the server sent 1234+3 input, 345+2100
 * read from the cache, 67+150 written to it, 89+42 output. */
START_TEST(a_claude_transcript_counts_each_response_once_with_its_cache_in_the_input)
{
        _cleanup_tmpdir_ char *home = home_with(PROJECT_DIR "/a.jsonl", CLAUDE_SEED, NULL);
        struct trial_tokens t;
        plugin_tokens("claude", home, &t);
        assert_counts(&t, 1234 + 3 + 345 + 2100 + 67 + 150, 345 + 2100, 67 + 150, 89 + 42, 0, 2);
        assert_one_model_from(&t, "claude-opus-5-5", "~/.claude/projects");
}
END_TEST

#define CLAUDE_LINE(id, model, in, out)                                                                        \
        "{\"type\":\"assistant\",\"message\":{\"id\":\"" id "\",\"model\":\"" model "\",\"usage\":{"         \
        "\"input_tokens\":" #in ",\"output_tokens\":" #out "}}}\n"

START_TEST(a_later_line_of_a_claude_response_replaces_an_earlier_and_synthetic_ones_are_no_response)
{
        const char *text = CLAUDE_LINE("msg_1", "m", 10, 1) CLAUDE_LINE("msg_1", "m", 10, 89)
                CLAUDE_LINE("msg_2", "<synthetic>", 0, 0) CLAUDE_LINE("msg_3", "m", 5, 5);
        _cleanup_tmpdir_ char *home = tmpdir_new();
        write_in(home, PROJECT_DIR "/a.jsonl", text, 0600);
        /* A subagent's transcript, below the session's folder, and the same
         * response copied into a resumed session's. */
        write_in(home, PROJECT_DIR "/a/subagents/agent-1.jsonl", CLAUDE_LINE("msg_4", "m", 1, 1), 0600);
        write_in(home, PROJECT_DIR "/b.jsonl", CLAUDE_LINE("msg_3", "m", 5, 5), 0600);
        struct trial_tokens t;
        plugin_tokens("claude", home, &t);
        assert_counts(&t, 16, 0, 0, 95, 0, 3);
}
END_TEST

START_TEST(a_home_without_the_harnesses_files_records_null)
{
        _cleanup_tmpdir_ char *home = tmpdir_new();
        struct trial_tokens t;
        plugin_tokens("codex", home, &t);
        ck_assert(!t.known);
        /* A rollout with no usage in it yet. */
        write_in(home, ROLLOUT_DIR "/rollout-a.jsonl",
                 "{\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\",\"info\":null}}\n", 0600);
        plugin_tokens("codex", home, &t);
        ck_assert(!t.known);
        plugin_tokens("claude", home, &t);
        ck_assert(!t.known);
}
END_TEST

/* What a forged home may hold, beside a real rollout: nothing of it is
 * followed, opened, waited on, or counted. */
START_TEST(links_fifos_hard_links_and_garbage_in_the_home_change_nothing)
{
        _cleanup_free_ char *deep = xmalloc(200003);
        memset(deep, '[', 200000);
        strcpy(deep + 200000, "\n");
        _cleanup_free_ char *more = xasprintf(
                "garbage \"token_count\" {{{\n"
                "{\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\"}} trailing\n"
                "\"token_count\"%s"
                "{\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\",\"info\":{\"total_token_usage\":"
                "{\"input_tokens\":\"1\",\"output_tokens\":2}}}}\n",
                deep);
        /* The real rollout last: its totals are the newest. */
        _cleanup_tmpdir_ char *home = home_with(ROLLOUT_DIR "/rollout-a.jsonl", NULL, more);
        _cleanup_free_ char *real = path_in(home, ROLLOUT_DIR "/rollout-a.jsonl");
        sh_ok("cat '%s' >> '%s'", CODEX_SEED, real);
        _cleanup_free_ char *sessions = path_in(home, ROLLOUT_DIR);
        sh_ok("cd '%s' && mkfifo rollout-fifo.jsonl && ln -s /etc/shadow rollout-shadow.jsonl &&"
              " ln -s /etc ../linked && cp '%s' rollout-hard.jsonl && ln rollout-hard.jsonl ../rollout-hard2.jsonl &&"
              " printf '\\0\"token_count\"\\0\\n' > rollout-nul.jsonl",
              sessions, CODEX_SEED);
        struct trial_tokens t;
        plugin_tokens("codex", home, &t);
        assert_counts(&t, 3234, 1734, 11, 86, 7, 2);
        ck_assert(!t.partial);
}
END_TEST

START_TEST(counts_below_zero_or_over_2_53_are_refused_and_the_tokens_are_partial)
{
        const char *text = CLAUDE_LINE("msg_1", "m", -5, 1) CLAUDE_LINE("msg_2", "m", 99999999999999999999, 1)
                CLAUDE_LINE("msg_3", "m", 9007199254740992, 1) CLAUDE_LINE("msg_4", "m", 1.5, 1)
                        CLAUDE_LINE("msg_5", "m", 7, 3);
        _cleanup_tmpdir_ char *home = tmpdir_new();
        write_in(home, PROJECT_DIR "/a.jsonl", text, 0600);
        struct trial_tokens t;
        plugin_tokens("claude", home, &t);
        assert_counts(&t, 7, 0, 0, 3, 0, 1);
        ck_assert(t.partial);
}
END_TEST

START_TEST(sums_saturate_at_2_53_and_say_so)
{
        const char *text = CLAUDE_LINE("msg_1", "m", 9007199254740991, 1) CLAUDE_LINE("msg_2", "m", 9007199254740991, 1);
        _cleanup_tmpdir_ char *home = tmpdir_new();
        write_in(home, PROJECT_DIR "/a.jsonl", text, 0600);
        struct trial_tokens t;
        plugin_tokens("claude", home, &t);
        assert_counts(&t, 9007199254740991LL, 0, 0, 2, 0, 2);
        ck_assert(t.partial);
}
END_TEST

/* A hook that records what the test's context says. */
static int record_many(const struct tb_host_services *svc, struct tb_host *host)
{
        char key[32];
        for (int i = 0; i < 70000; i++) {
                snprintf(key, sizeof key, "k%d", i);
                struct tb_tokens t = TB_TOKENS_INIT;
                t.input = 1;
                t.output = 2;
                t.cached_input = 5;  /* more than the input: cut to it */
                t.reasoning = 3;     /* more than the output: cut to it */
                t.requests = 1;
                t.model = i < 12 ? (const char *[]){ "m-a", "m-b", "m-c", "m-d", "m-e", "m-f", "m-g", "m-h", "m-i",
                                                     "m-j", "bad name", "m\"q" }[i]
                                 : "m-a";
                int r = svc->record_tokens(host, key, &t);
                ck_assert_int_eq(r, i < TOKENS_MAX_KEYS ? 0 : -ENOSPC);
        }
        return 0;
}

START_TEST(the_tally_is_bounded_in_keys_and_models_and_the_parts_fit_their_whole)
{
        int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct tb_host host = { .harness = "t", .sandboxed = true, .home_fd = &fd };
        struct trial_tokens t;
        host_read_tokens(&host, record_many, &t);
        assert_counts(&t, TOKENS_MAX_KEYS, TOKENS_MAX_KEYS, 0, 2 * TOKENS_MAX_KEYS, 2 * TOKENS_MAX_KEYS,
                      TOKENS_MAX_KEYS);
        ck_assert(t.partial);
        ck_assert_uint_eq(t.n_models, TOKENS_MAX_MODELS);
        ck_assert_str_eq(t.models[0], "m-a");
        ck_assert_str_eq(t.models[7], "m-h");
        ck_assert_int_eq(t.models_more, 2); /* m-i and m-j; the invalid names are not listed */
        host_done(&host);
        close(fd);
}
END_TEST

static int no_line(struct tb_host *host, const struct tb_json *line, unsigned file, void *ctx)
{
        (void)host, (void)line, (void)file, (void)ctx;
        return 0;
}

static int try_everything(const struct tb_host_services *svc, struct tb_host *host)
{
        /* Nothing may change the Trial after its session. */
        ck_assert_int_eq(svc->void_trial(host, "no"), -EPERM);
        ck_assert_int_eq(svc->setenv(host, "X", "1", 0), -EPERM);
        ck_assert_int_eq(svc->bind(host, "/etc", "/x", 1), -EPERM);
        ck_assert_int_eq(svc->write_home_file(host, "x", "y"), -EPERM);
        ck_assert_int_eq(svc->add_endpoint(host, "x.test", TB_ENDPOINT_REQUIRED), -EPERM);
        /* Bad arguments. */
        static const char *const long_needle[] = { "0123456789012345678901234567890123456789012345678901234567890123",
                                                   NULL };
        ck_assert_int_eq(svc->read_jsonl(host, "a", 1, ".jsonl", NULL, 0, no_line, NULL), 0); /* no such folder */
        ck_assert_int_eq(svc->read_jsonl(host, "a", 1, ".jsonl", NULL, 0, NULL, NULL), -EINVAL);
        ck_assert_int_eq(svc->read_jsonl(host, "../x", 1, ".jsonl", NULL, 0, no_line, NULL), -EINVAL);
        ck_assert_int_eq(svc->read_jsonl(host, "a/./b", 1, NULL, NULL, 0, no_line, NULL), -EINVAL);
        ck_assert_int_eq(svc->read_jsonl(host, "/etc", 1, NULL, NULL, 0, no_line, NULL), -EINVAL);
        ck_assert_int_eq(svc->read_jsonl(host, "a", 9, NULL, NULL, 0, no_line, NULL), -EINVAL);
        ck_assert_int_eq(svc->read_jsonl(host, "a", 1, NULL, long_needle, 0, no_line, NULL), -EINVAL);
        ck_assert_int_eq(svc->read_jsonl(host, "a", 1, "x/y", NULL, 0, no_line, NULL), -EINVAL);
        struct tb_tokens t = TB_TOKENS_INIT;
        ck_assert_int_eq(svc->record_tokens(host, "", &t), -EINVAL);
        t.size = 8;
        ck_assert_int_eq(svc->record_tokens(host, "k", &t), -EINVAL);
        ck_assert_int_ge(svc->home_fd(host), 0);
        return 0;
}

START_TEST(the_tokens_hook_can_only_read_and_record)
{
        _cleanup_tmpdir_ char *home = tmpdir_new();
        int fd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct sandbox_spec spec = { 0 };
        struct tb_host host = { .harness = "t", .sandboxed = true, .spec = &spec, .home_fd = &fd };
        struct trial_tokens t;
        host_read_tokens(&host, try_everything, &t);
        ck_assert(!t.known);
        ck_assert(!host.voided);
        /* And outside the hook, none of 1.4's services works. */
        const struct tb_host_services *svc = host_services();
        ck_assert_int_eq(svc->home_fd(&host), -EPERM);
        ck_assert_int_eq(svc->read_jsonl(&host, "a", 1, NULL, NULL, 0, NULL, NULL), -EPERM);
        struct tb_tokens one = TB_TOKENS_INIT;
        ck_assert_int_eq(svc->record_tokens(&host, "k", &one), -EPERM);
        host_done(&host);
        sandbox_spec_done(&spec);
        close(fd);
}
END_TEST

static int must_not_run(const struct tb_host_services *svc, struct tb_host *host)
{
        (void)svc;
        (void)host;
        ck_abort_msg("the tokens hook ran without a home of the Trial's own");
        return 0;
}

START_TEST(unsandboxed_or_without_a_home_the_hook_is_not_called_and_tokens_are_null)
{
        int fd = -1;
        struct tb_host host = { .harness = "t", .sandboxed = false, .home_fd = &fd };
        struct trial_tokens t;
        host_read_tokens(&host, must_not_run, &t);
        ck_assert(!t.known);
        host.sandboxed = true;
        host_read_tokens(&host, must_not_run, &t);
        host.home_fd = NULL;
        host_read_tokens(&host, must_not_run, &t);
        ck_assert(!t.known);
        host_done(&host);
}
END_TEST

/* The record: `tokens` is null, or its object with every field. */
START_TEST(the_outcome_records_tokens_or_null)
{
        struct outcome o = { .harness = "codex", .exit_code = 0 };
        _cleanup_free_ char *none = outcome_to_json(&o);
        assert_contains(none, "\"tokens\":null");
        o.tokens = (struct trial_tokens){ .known = true, .input = 3234, .cached_input = 1734, .cache_write_input = 11,
                                          .output = 86, .reasoning = 7, .requests = 2, .n_models = 1,
                                          .source = "~/.codex/sessions" };
        snprintf(o.tokens.models[0], sizeof o.tokens.models[0], "stand-in-model");
        _cleanup_free_ char *some = outcome_to_json(&o);
        assert_contains(some, "\"tokens\":{\"input\":3234,\"cached_input\":1734,\"cache_write_input\":11,"
                              "\"output\":86,\"reasoning\":7,\"requests\":2,\"models\":[\"stand-in-model\"],"
                              "\"models_more\":0,\"source\":\"~/.codex/sessions\",\"partial\":false}");
}
END_TEST

TB_SUITE("tokens", 0)
{
        (void)s;
        tcase_add_test(tc, lines_are_read_within_their_limits);
        tcase_add_test(tc, a_needle_split_across_reads_of_a_long_line_is_seen);
        tcase_add_test(tc, the_line_reader_refuses_what_is_not_a_regular_file_and_bad_limits);
        tcase_add_test(tc, the_newest_files_are_found_without_following_links_or_opening_anything);
        tcase_add_test(tc, a_codex_rollout_gives_the_sessions_total_as_the_server_sent_it);
        tcase_add_test(tc, codex_sessions_are_summed_each_by_its_last_total);
        tcase_add_test(tc, a_claude_transcript_counts_each_response_once_with_its_cache_in_the_input);
        tcase_add_test(tc, a_later_line_of_a_claude_response_replaces_an_earlier_and_synthetic_ones_are_no_response);
        tcase_add_test(tc, a_home_without_the_harnesses_files_records_null);
        tcase_add_test(tc, links_fifos_hard_links_and_garbage_in_the_home_change_nothing);
        tcase_add_test(tc, counts_below_zero_or_over_2_53_are_refused_and_the_tokens_are_partial);
        tcase_add_test(tc, sums_saturate_at_2_53_and_say_so);
        tcase_add_test(tc, the_tally_is_bounded_in_keys_and_models_and_the_parts_fit_their_whole);
        tcase_add_test(tc, the_tokens_hook_can_only_read_and_record);
        tcase_add_test(tc, unsandboxed_or_without_a_home_the_hook_is_not_called_and_tokens_are_null);
        tcase_add_test(tc, the_outcome_records_tokens_or_null);
}
