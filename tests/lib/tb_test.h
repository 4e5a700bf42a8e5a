/* The tests' toolkit (bubblewrap's tests/libtest-core.sh is the model): a
 * suite macro, temporary folders and files, running a program and capturing
 * what it prints, the host's processes, a Trial's fixture, running trialbox
 * and reading its outcome.json, and named assertions. A helper used by more
 * than one test file lives here, not in a copy per file.
 *
 *   tb_test.c    files, text, JSON, the suite runner
 *   tb_proc.c    spawning and running programs, the host's processes, ptys
 *   tb_trial.c   fixtures, trialbox's command line and environment, outcome.json, graded Trials
 *   tb_model.c   the stand-in model server, what it sent, a closed port, the endpoints sent nowhere
 *
 * Helpers documented "(asserts)" fail the running test, naming what they were
 * doing, instead of returning an error; call them only inside a test or a
 * checked fixture. */
#ifndef TB_TEST_H
#define TB_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#include "base/util.h"

struct json_object;
struct strv;
struct tb_host;

/* ---- the suite ---- */

/* Run a Check suite (CK_ENV verbosity, fork mode): a test binary's main. */
typedef struct Suite Suite;
typedef struct TCase TCase;
int run_suite(Suite *s);
/* A new TCase NAME in `s`, with a timeout of `seconds` (0: Check's default,
 * CK_DEFAULT_TIMEOUT, which ctest sets to 60). */
TCase *tb_tcase(Suite *s, const char *name, int seconds);
/* Make the Suite NAME with one TCase NAME (tb_tcase), let `add_tests` add its
 * tests, and run it. */
int tb_run_tests(const char *name, int seconds, void (*add_tests)(Suite *s, TCase *tc));
/* The same for tests that need `program` on PATH: without it, say so and
 * return 77 (ctest's SKIP_RETURN_CODE), and only then. */
int tb_run_tests_needing(const char *program, const char *name, int seconds,
                         void (*add_tests)(Suite *s, TCase *tc));

/* A test program's main: the Suite NAME of one TCase NAME (timeout `seconds`,
 * as tb_tcase), whose tests the body that follows adds to `tc` (and may add
 * more TCases to `s`):
 *
 *     TB_SUITE("util", 0)
 *     {
 *             tcase_add_test(tc, a_test_named_by_its_behaviour);
 *     }
 */
#define TB_SUITE(name, seconds)                                                                             \
        static void tb_add_tests_(Suite *s, TCase *tc);                                                     \
        int main(void) { return tb_run_tests((name), (seconds), tb_add_tests_); }                          \
        static void tb_add_tests_(Suite *s, TCase *tc)

/* TB_SUITE for tests that need `program` on PATH (tb_run_tests_needing). */
#define TB_SUITE_NEEDING(program, name, seconds)                                                            \
        static void tb_add_tests_(Suite *s, TCase *tc);                                                     \
        int main(void) { return tb_run_tests_needing((program), (name), (seconds), tb_add_tests_); }       \
        static void tb_add_tests_(Suite *s, TCase *tc)

/* Say on stderr that part of `test` was skipped, and why (root only, a tool missing). */
void skip_note(const char *test, const char *why);
/* Not root? Then skip_note(test, why) and true, for a test that needs root:
 *     if (skip_unless_root(__func__, "needs root's cgroups"))
 *             return;
 */
bool skip_unless_root(const char *test, const char *why);

/* ---- files ---- */

/* A new folder under /tmp (mode 0755, so any user may enter it); malloc'd. */
char *tmpdir_new(void);
/* rm -rf, for a test's folder. */
void tmpdir_remove(const char *dir);
/* tmpdir_remove and free *dir: a test's folder that goes when its variable does,
 *     _cleanup_tmpdir_ char *dir = tmpdir_new();
 */
void tmpdir_freep(char **dir);
#define _cleanup_tmpdir_ _cleanup_(tmpdir_freep)

/* Write a file (created or truncated, then set to `mode`). (asserts) */
void write_text(const char *path, const char *text, mode_t mode);
/* The same with `len` bytes of `data`, NULs and all. (asserts) */
void write_bytes(const char *path, const void *data, size_t len, mode_t mode);
/* "DIR/REL"; malloc'd. */
char *path_in(const char *dir, const char *rel);
/* Write DIR/REL, making its missing folders (0700) first. (asserts) */
void write_in(const char *dir, const char *rel, const char *text, mode_t mode);
/* Copy the first `max` bytes of `from` (SIZE_MAX: all of it) to `to`, then set `mode`. (asserts) */
void copy_file(const char *from, const char *to, mode_t mode, size_t max);
/* The permission bits of `path` itself (a link is not followed). (asserts it exists) */
mode_t mode_of(const char *path);
/* Is there anything at `path` (a dangling link included)? */
bool exists(const char *path);
/* The same for DIR/REL. */
bool exists_in(const char *dir, const char *rel);
/* The names in `dir` (not . and ..), sorted, joined with spaces; malloc'd ("" when none or no folder). */
char *listing(const char *dir);

/* Read a whole file, or NULL. malloc'd. */
char *read_text(const char *path);
/* The same for DIR/REL. */
char *read_text_in(const char *dir, const char *rel);
/* Everything up to EOF on `fd` (EINTR retried), NUL-terminated; malloc'd. (asserts no read error) */
char *read_fd(int fd);
/* A whole file, NULs kept (and one more after it), its length in *len; with !follow_links a link is
 * not read through (NULL). malloc'd, or NULL. */
char *read_all(const char *path, size_t *len, bool follow_links);

/* Write a batch plan (JSON Lines). Run as root, each Trial line that starts
 * with {"id": also gets "root_session": true, as root's Trials of root-owned
 * test repositories need (the suite runs again as nobody for the other path). */
void write_plan(const char *path, const char *text);
/* The line of a batch's PLAN.results.jsonl whose "id" is `id`, parsed (json-c;
 * json_object_put it), or NULL when there is none. */
struct json_object *results_line(const char *results_path, const char *id);
/* Member `key` of the JSON object `j` (may be JSON null: NULL). (asserts it is there) */
struct json_object *json_get(struct json_object *j, const char *key);

/* ---- text ---- */

/* A row of a table-driven test: an input and what it should give (for a
 * refusal, a part of what it should say). */
struct text_case {
        const char *in, *want;
};

/* Is `line` one whole line of `text`? */
bool has_line(const char *text, const char *line);
/* How many whole lines of `text` are `line`. */
size_t count_line(const char *text, const char *line);
/* Is `s` exactly one non-empty line ending in a newline (a one-line message)? */
bool one_line(const char *s);
/* How many lines of `text` there are (its newlines). */
size_t count_lines(const char *text);
/* The last line of `text` (its final newline not counted); malloc'd. */
char *last_line(const char *text);
/* The words of `v` joined by spaces, each between `open` and `close` ("" for none); malloc'd. */
char *strv_joined(const struct strv *v, const char *open, const char *close);
/* The index of the word `x` in `v`, or -1. */
int strv_find(const struct strv *v, const char *x);
/* The index of `flag` followed by `src` and `dest` in `v` (a bwrap bind), or -1. */
int strv_find_triple(const struct strv *v, const char *flag, const char *src, const char *dest);

/* ---- programs ---- */

struct proc_result {
        int status;   /* exit status, or 128+N for a signal */
        char *out;    /* stdout, NUL-terminated */
        char *err;    /* stderr, NUL-terminated */
};

/* Where a spawned child reads and writes; what is left zero is the default. */
struct tb_spawn_io {
        const char *in;        /* stdin from this file (default /dev/null) */
        const char *tty;       /* or this terminal, made the controlling terminal of a new session;
                                  also stdout and stderr unless given below */
        const char *out, *err; /* stdout, stderr to these files (created 0600, or truncated) */
        int out_fd, err_fd;    /* or onto these fds (> 0) */
        int keep_fd;           /* > 0: passed on as fd 9 */
        bool close_fds;        /* no other fd above 2 is passed on */
        bool own_group;        /* in a process group of its own (as a shell job) */
        bool background;       /* SIGINT and SIGQUIT ignored, as a script's `&` leaves them */
        int blocked;           /* > 0: this signal blocked when it starts */
        int pending;           /* > 0: this signal blocked and already pending when it starts */
};

/* Start argv (argv[0] a path) with `env` ("NAME=value" to set, "NAME" alone
 * to unset; NULL-terminated, may be NULL) added to ours, as `io` says (may be
 * NULL: stdin on /dev/null, stdout and stderr as ours). Returns its pid. */
pid_t spawn(char *const env[], char *const argv[], const struct tb_spawn_io *io);
/* spawn() with stdin on /dev/null and stdout/stderr into the given files. */
pid_t spawn_argv(char *const env[], char *const argv[], const char *out_file, const char *err_file);
/* Apply such an `env` to this process (for a child, between fork and exec). */
void apply_env(char *const env[]);
/* Wait for a spawned pid; returns its status as run_argv would. */
int wait_status(pid_t pid);
/* Run argv as spawn() does, stdin from `in_file` (NULL: /dev/null), and wait
 * for it, capturing what it printed. */
void run_argv_in(struct proc_result *r, char *const env[], char *const argv[], const char *in_file);
/* The same with stdin on /dev/null. */
void run_argv(struct proc_result *r, char *const env[], char *const argv[]);
void proc_result_free(struct proc_result *r);
/* Does `cmd` succeed in /bin/sh on the host? (Also while a suite is being made: spawn, wait_status and
 * run_argv assert nothing.) */
bool host_can(const char *cmd);
/* Run the command (printf-style) in /bin/sh on the host: it must succeed. (asserts) */
void sh_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* git with an identity, for the commits tests make. */
#define GIT "git -c user.name=t -c user.email=t@example.com"
/* Make `dir` a git repository with one commit (file `tracked`, "one") on main. (asserts) */
void git_repo_new(const char *dir);

/* The host's processes but this one whose command line (its NULs read as
 * spaces) holds `needle`, whose name is `comm` when not NULL, and whose
 * command line holds none of `unless` (NULL-terminated, may be NULL): their
 * pids, up to `cap`, into `pids` (may be NULL); returns how many there are. */
size_t host_pids(const char *needle, const char *comm, const char *const unless[], pid_t *pids, size_t cap);
/* Is there any process on the host whose command line contains `needle`? */
bool host_process_with(const char *needle);
/* ... and `also` too (a fake's path and a fixture's folder: this test's, not another's)? */
bool host_process_with_both(const char *needle, const char *also);
/* Wait up to `ms` for no process named `comm` (NULL: any) whose command line
 * holds `needle` to be left on the host. */
bool host_processes_gone(const char *needle, const char *comm, int ms);
/* A number no process on the host has on its command line: a long, valid
 * duration for sleep(1). Into buf (n bytes). */
void sleep_number(char *buf, size_t n);
/* Sleep `us` microseconds, whatever signals come. */
void sleep_us(long us);

/* A new pty: its master (O_CLOEXEC, not our terminal), its slave's path in *slave (malloc'd). (asserts) */
int pty_open(char **slave);

/* Wait up to `ms` for `path` to exist. */
bool wait_for_file(const char *path, int ms);

/* ---- Trials ---- */

/* A Trial's folders: DIR/repo (made) and DIR/out (not made). */
struct fixture {
        char *dir;
        char repo[1024];
        char out[1024];
        int outs; /* output folders fixture_next_out made */
        char **kept; /* what fixture_keep was given */
        size_t n_kept;
};
void fixture_new(struct fixture *f);
/* Remove DIR and free what the fixture keeps. */
void fixture_free(struct fixture *f);
/* Give the fixture `s` (malloc'd) to free with it; returns `s`. For a test's
 * own fixture struct, whose paths and variables then need no free of their own:
 *     l->home = fixture_keep(&l->f, path_in(l->f.dir, "home"));
 */
char *fixture_keep(struct fixture *f, char *s);
/* Point f->out at a new output folder, DIR/out0, out1, …, for the next Trial. */
void fixture_next_out(struct fixture *f);

/* The fake Harnesses and programs (tests/fakes/), and the fake plugins built from fakes/fake_plugin.c. */
#define FAKE(name) TESTS_SOURCE_DIR "/fakes/" name
#define FAKE_SO(target, file) FAKE_PLUGIN_DIR "/" target "/" file ".so"

/* argv for `trialbox run --harness H --repo R --output-dir O EXTRA...` */
void tb_argv(char **argv, size_t cap, const char *harness, const struct fixture *f, const char *const extra[]);
/* The environment every run gets (the build's plugins, no inherited
 * TRIALBOX_NO_SANDBOX/TRIALBOX_BWRAP), plus `more`. Static storage. */
char **tb_env(char *const more[]);
/* Run trialbox for harness H on the fixture and wait. */
void tb_run(struct proc_result *r, const char *harness, const struct fixture *f, char *const env[],
            const char *const extra[]);
/* The same for the `shell` Harness. */
void tb_shell(struct proc_result *r, const struct fixture *f, char *const env[], const char *const extra[]);
/* Start trialbox for the `shell` Harness on the fixture in the background,
 * as tb_shell would run it (stdout and stderr into DIR/stdout and
 * DIR/stderr; in a process group of its own when `own_group`, as a shell
 * job), and wait until its session has made REPO/`ready` (trialbox is killed
 * if it never does). Returns trialbox's pid. (asserts) */
pid_t tb_shell_start(const struct fixture *f, const char *const extra[], const char *ready, bool own_group);
/* Run `trialbox ARGS...` (NULL-terminated) with tb_env(env), and wait; as
 * root, a `run` or a `grade` also gets --root-session, as tb_argv gives it. */
void tb_command(struct proc_result *r, char *const env[], const char *const args[]);

#define EXTRA(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define ENV(...) ((char *const[]){ __VA_ARGS__, NULL })

/* A string unique to this test run. malloc'd. */
char *marker(const char *what);

/* A field of OUTPUT/outcome.json as a string ("null" for JSON null); malloc'd, or NULL. */
char *outcome_field(const char *output_dir, const char *field);
/* The same of DIR/NAME (grade.json). */
char *record_field(const char *dir, const char *name, const char *field);
/* Assert that DIR/NAME's `field` reads `want`. */
#define assert_record(dir, name, field, want)                                                               \
        do {                                                                                                \
                char *v_ = record_field((dir), (name), (field));                                            \
                ck_assert_msg(v_ != NULL, "%s/%s has no '%s'", (dir), (name), (field));                     \
                ck_assert_msg(strcmp(v_, (want)) == 0, "%s %s is '%s', not '%s'", (name), (field), v_, (want)); \
                free(v_);                                                                                   \
        } while (0)
/* A listing of the tree at `dir` that changes when anything in it does:
 * each entry's type, mode, owner, size, modification and change times,
 * inode, path and link target, then each regular file's SHA-256; malloc'd.
 * (asserts) */
char *tree_manifest(const char *dir);

/* ---- graded Trials (`trialbox grade`) ---- */

/* A Trial that ran, to be graded: its fixture, the grader's files folder
 * beside it, and what the Trial left, to compare after grading. */
struct graded {
        struct fixture f;
        char files[1100];
        char *manifest; /* of the repository after the Trial */
        char *outcome;  /* outcome.json's bytes */
        size_t outcome_len;
};
/* The fixture, its repository a git repository whose one commit has the
 * file `code` reading "broken", and an empty folder DIR/files for the
 * grader's files; no Trial yet. (asserts) */
void graded_init(struct graded *g);
/* Run the shell Trial `session` (`sh -c`) on it, which must complete or
 * fail, and take the repository's manifest and outcome.json. (asserts) */
void graded_run(struct graded *g, const char *session);
void graded_free(struct graded *g);
/* Assert that nothing of the Trial changed since graded_run: its repository,
 * to the inode and the change time, and its outcome.json, to the byte. */
void assert_trial_unchanged(const struct graded *g);

/* ---- the stand-in model server (tb_model.c) ----
 * tests/fakes/model-server.py: stdlib Python on 127.0.0.1, answering the
 * OpenAI and Anthropic APIs with known usage and writing down every response
 * it sent (one JSON line each in m->record). */

struct model_server {
        pid_t pid;
        int port;
        char *dir, *record;
};
/* Start it on a free port it picks, with the JSON `config` (its format is in
 * the server's docstring; NULL: its defaults). (asserts) */
void model_server_start(struct model_server *m, const char *config);
void model_server_stop(struct model_server *m);
/* Read one HTTP request's head from the accepted connection `c`, answer
 * "200 OK" with the body "ok", and close it: a server's whole answer. */
void http_answer_ok(int c);
/* What the server sent in its model responses (Responses and Messages
 * calls), summed in trialbox's convention: input with the cache, output
 * with the reasoning; `model` the last one named. */
struct model_sums {
        long long input, cached_input, cache_write_input, output, reasoning, requests;
        char model[128];
};
void model_server_sums(const struct model_server *m, struct model_sums *s);
/* Assert that `tokens` (an Outcome's or a grade's) is what the server sent,
 * response for response: `requests` responses, one model, not partial,
 * read from `source`. */
void assert_tokens_are_the_servers(struct json_object *tokens, const struct model_server *m, long long requests,
                                   const char *source);
/* A loopback port nothing listens on. (asserts) */
int closed_port(void);
/* "TRIALBOX_TEST_HOSTS=NAME=127.0.0.1:PORT,…": the Harness's own endpoints
 * (comma-separated `names`) sent to a closed loopback port, so that nothing
 * leaves the host under --network allow. Static storage. (asserts this test
 * build honours the map) */
char *endpoints_nowhere(const char *names);
#define CODEX_ENDPOINTS "api.openai.com,chatgpt.com,auth.openai.com,ab.chatgpt.com"
#define CLAUDE_ENDPOINTS "api.anthropic.com"

/* What points a real Harness CLI in a Trial on `f` at the stand-in server:
 * for `cli` "codex" an API-key login in a CODEX_HOME under f->dir (no
 * ChatGPT account, so Codex asks chatgpt.com for nothing) and the provider
 * "standin"; for "claude" a setup token in the Credentials under f->dir and
 * ANTHROPIC_BASE_URL, passed on by TRIALBOX_ENV_ALLOW. Either way the CLI's
 * own endpoints are sent nowhere. */
struct standin {
        char *env[6];   /* for tb_run, NULL-terminated */
        char *allow;    /* "127.0.0.1:PORT", for --allow-host */
        char *provider; /* codex: the `-c` value that defines the provider */
};
void standin_new(struct standin *s, const char *cli, const struct fixture *f, const struct model_server *m);
void standin_free(struct standin *s);
/* Codex's session arguments for a prompt to the stand-in (the prompt follows them). */
#define STANDIN_CODEX_ARGS(s)                                                                                        \
        "exec", "--skip-git-repo-check", "-c", "model_provider=standin", "-c", (s)->provider, "-c",                   \
                "model=stand-in-model", "-c", "features.plugins=false", "-c", "analytics.enabled=false"

/* ---- named assertions: each says what was expected and what was there ---- */

/* Assert that OUTPUT/outcome.json's `field` reads `want`. */
#define assert_outcome(f, field, want)                                                                      \
        do {                                                                                                \
                char *v_ = outcome_field((f)->out, (field));                                                \
                ck_assert_msg(v_ != NULL, "outcome.json has no '%s' in %s", (field), (f)->out);             \
                ck_assert_msg(strcmp(v_, (want)) == 0, "outcome %s is '%s', not '%s'", (field), v_, (want)); \
                free(v_);                                                                                   \
        } while (0)
/* Assert that OUTPUT/outcome.json's `field` holds `part`. */
#define assert_outcome_has(f, field, part)                                                                  \
        do {                                                                                                \
                char *v_ = outcome_field((f)->out, (field));                                                \
                ck_assert_msg(v_ != NULL, "outcome.json has no '%s' in %s", (field), (f)->out);             \
                ck_assert_msg(strstr(v_, (part)) != NULL, "outcome %s '%s' does not say '%s'", (field), v_,  \
                              (part));                                                                      \
                free(v_);                                                                                   \
        } while (0)
/* Assert that the run `r` of a Trial on `f` was void (status 125) with
 * `cause`, and that its detail says `part` (NULL: not looked at). */
#define assert_void(f, r, cause, part)                                                                      \
        do {                                                                                                \
                const char *part_ = (part);                                                                 \
                ck_assert_msg((r)->status == 125, "status %d, not 125 (void); stderr: %s", (r)->status,     \
                              (r)->err);                                                                    \
                assert_outcome((f), "outcome", "void");                                                     \
                assert_outcome((f), "cause", (cause));                                                      \
                if (part_)                                                                                  \
                        assert_outcome_has((f), "detail", part_);                                           \
        } while (0)

/* Assert that the run `r` of a Trial on `f` exited `code` (an int) and the
 * Trial is failed with that exit_code. */
#define assert_failed(f, r, code)                                                                           \
        do {                                                                                                \
                char code_[16];                                                                             \
                snprintf(code_, sizeof code_, "%d", (code));                                                \
                ck_assert_msg((r)->status == (code), "status %d, not %s; stderr: %s", (r)->status, code_,   \
                              (r)->err);                                                                    \
                assert_outcome((f), "outcome", "failed");                                                   \
                assert_outcome((f), "exit_code", code_);                                                    \
        } while (0)

#define assert_line(text, line)                                                                             \
        ck_assert_msg(has_line((text), (line)), "no line '%s' in:\n%s", (line), (text))
#define assert_no_line(text, line)                                                                          \
        ck_assert_msg(!has_line((text), (line)), "an unexpected line '%s' in:\n%s", (line), (text))
#define assert_one_line(s) ck_assert_msg(one_line(s), "not exactly one line: '%s'", (s))
/* Assert that `text` (not NULL) holds, or lacks, `part`. */
#define assert_contains(text, part)                                                                         \
        do {                                                                                                \
                const char *t_ = (text);                                                                    \
                ck_assert_msg(t_ != NULL && strstr(t_, (part)) != NULL, "'%s' not in: %s", (part),        \
                              t_ ? t_ : "(null)");                                                          \
        } while (0)
#define assert_lacks(text, part)                                                                            \
        do {                                                                                                \
                const char *t_ = (text);                                                                    \
                ck_assert_msg(t_ != NULL && strstr(t_, (part)) == NULL, "'%s' in: %s", (part),            \
                              t_ ? t_ : "(null)");                                                          \
        } while (0)
#define assert_mode(path, want)                                                                             \
        do {                                                                                                \
                mode_t m_ = mode_of(path);                                                                  \
                ck_assert_msg(m_ == (mode_t)(want), "'%s' has mode %04o, not %04o", (path), (unsigned)m_,  \
                              (unsigned)(want));                                                            \
        } while (0)
/* Assert that the file at `path` holds exactly `want`. */
void assert_file_holds(const char *path, const char *want);
/* The same for DIR/REL. */
void assert_file_in(const char *dir, const char *rel, const char *want);
/* Assert that the endpoints declared to `host` are, in order, these
 * { pattern, required } pairs:
 *     assert_endpoints(&host, { "api.x.test:443", true }, { "*.cdn.x.test", false });
 */
struct endpoint_want {
        const char *pattern;
        bool required;
};
void assert_endpoints_are(const struct tb_host *host, const struct endpoint_want want[], size_t n);
#define assert_endpoints(host, ...)                                                                         \
        assert_endpoints_are((host), (const struct endpoint_want[]){ __VA_ARGS__ },                        \
                             sizeof((const struct endpoint_want[]){ __VA_ARGS__ }) / sizeof(struct endpoint_want))

#endif
