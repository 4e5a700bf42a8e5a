/* The tests' toolkit (bubblewrap's tests/libtest-core.sh is the model): temporary
 * folders, files, running a program with extra environment and capturing what it
 * prints, reading outcome.json, a suite runner, and named assertions. A helper
 * used by more than one test file lives here, not in a copy per file.
 *
 * Helpers documented "(asserts)" fail the running test, naming what they were
 * doing, instead of returning an error; call them only inside a test or a
 * checked fixture. */
#ifndef TB_TEST_H
#define TB_TEST_H

#include <stdbool.h>
#include <sys/types.h>

struct proc_result {
        int status;   /* exit status, or 128+N for a signal */
        char *out;    /* stdout, NUL-terminated */
        char *err;    /* stderr, NUL-terminated */
};

/* A new folder under /tmp (mode 0755, so any user may enter it); malloc'd. */
char *tmpdir_new(void);
/* rm -rf, for a test's folder. */
void tmpdir_remove(const char *dir);

/* Write a file (created or truncated, then set to `mode`). (asserts) */
void write_text(const char *path, const char *text, mode_t mode);
/* The same with `len` bytes of `data`, NULs and all. (asserts) */
void write_bytes(const char *path, const void *data, size_t len, mode_t mode);
/* "DIR/REL"; malloc'd. */
char *path_in(const char *dir, const char *rel);
/* Write DIR/REL, making its missing folders (0700) first. (asserts) */
void write_in(const char *dir, const char *rel, const char *text, mode_t mode);
/* Write a batch plan (JSON Lines). Run as root, each Trial line that starts
 * with {"id": also gets "root_session": true, as root's Trials of root-owned
 * test repositories need (the suite runs again as nobody for the other path). */
void write_plan(const char *path, const char *text);
/* The line of a batch's results.jsonl whose "id" is `id`, parsed (json-c;
 * json_object_put it), or NULL when there is none. */
struct json_object *results_line(const char *results_path, const char *id);
/* Say on stderr that part of `test` was skipped, and why (root only, a tool missing). */
void skip_note(const char *test, const char *why);
/* Copy the first `max` bytes of `from` (SIZE_MAX: all of it) to `to`, then set `mode`. (asserts) */
void copy_file(const char *from, const char *to, mode_t mode, size_t max);
/* The permission bits of `path` itself (a link is not followed). (asserts it exists) */
mode_t mode_of(const char *path);
/* Everything up to EOF on `fd` (EINTR retried), NUL-terminated; malloc'd. (asserts no read error) */
char *read_fd(int fd);
/* A whole file, NULs kept (and one more after it), its length in *len; with !follow_links a link is
 * not read through (NULL). malloc'd, or NULL. */
char *read_all(const char *path, size_t *len, bool follow_links);

/* Run a Check suite (CK_ENV verbosity, fork mode): a test binary's main. */
typedef struct Suite Suite;
int run_suite(Suite *s);

/* Read a whole file, or NULL. malloc'd. */
char *read_text(const char *path);

/* Is `line` one whole line of `text`? */
bool has_line(const char *text, const char *line);
/* Is `s` exactly one non-empty line ending in a newline (a one-line message)? */
bool one_line(const char *s);
/* How many lines of `text` there are (its newlines). */
size_t count_lines(const char *text);

/* Run argv (argv[0] a path) with `env` ("NAME=value" to set, "NAME" alone to
 * unset; NULL-terminated, may be NULL) added to ours, stdin on /dev/null,
 * and wait for it. */
void run_argv(struct proc_result *r, char *const env[], char *const argv[]);
/* Apply such an `env` to this process (for a child, between fork and exec). */
void apply_env(char *const env[]);
/* Start it in the background instead; its stdout/stderr go to the given files. */
pid_t spawn_argv(char *const env[], char *const argv[], const char *out_file, const char *err_file);
/* Wait for a spawned pid; returns its status as run_argv would. */
int wait_status(pid_t pid);
void proc_result_free(struct proc_result *r);

/* A field of OUTPUT/outcome.json as a string ("null" for JSON null); malloc'd, or NULL. */
char *outcome_field(const char *output_dir, const char *field);

/* Is there any process on the host whose command line contains `marker`? */
bool host_process_with(const char *marker);

/* Wait up to `ms` for `path` to exist. */
bool wait_for_file(const char *path, int ms);

/* A Trial's folders: DIR/repo (made) and DIR/out (not made). */
struct fixture {
        char *dir;
        char repo[1024];
        char out[1024];
};
void fixture_new(struct fixture *f);
void fixture_free(struct fixture *f);

/* argv for `trialbox run --harness H --repo R --output-dir O EXTRA...` */
void tb_argv(char **argv, size_t cap, const char *harness, const struct fixture *f, const char *const extra[]);
/* The environment every run gets (the build's plugins, no inherited
 * TRIALBOX_NO_SANDBOX/TRIALBOX_BWRAP), plus `more`. Static storage. */
char **tb_env(char *const more[]);
/* Run trialbox for harness H on the fixture and wait. */
void tb_run(struct proc_result *r, const char *harness, const struct fixture *f, char *const env[],
            const char *const extra[]);

#define EXTRA(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define ENV(...) ((char *const[]){ __VA_ARGS__, NULL })

/* A string unique to this test run. malloc'd. */
char *marker(const char *what);
/* Does `cmd` succeed in /bin/sh on the host? */
bool host_can(const char *cmd);

/* Assert that OUTPUT/outcome.json's `field` reads `want` (Check). */
#define assert_outcome(f, field, want)                                                                      \
        do {                                                                                                \
                char *v_ = outcome_field((f)->out, (field));                                                \
                ck_assert_msg(v_ != NULL, "outcome.json has no '%s' in %s", (field), (f)->out);             \
                ck_assert_msg(strcmp(v_, (want)) == 0, "outcome %s is '%s', not '%s'", (field), v_, (want)); \
                free(v_);                                                                                   \
        } while (0)

/* Named assertions: each says what was expected and what was there. */
#define assert_line(text, line)                                                                             \
        ck_assert_msg(has_line((text), (line)), "no line '%s' in:\n%s", (line), (text))
#define assert_no_line(text, line)                                                                          \
        ck_assert_msg(!has_line((text), (line)), "an unexpected line '%s' in:\n%s", (line), (text))
#define assert_one_line(s) ck_assert_msg(one_line(s), "not exactly one line: '%s'", (s))
#define assert_mode(path, want)                                                                             \
        do {                                                                                                \
                mode_t m_ = mode_of(path);                                                                  \
                ck_assert_msg(m_ == (mode_t)(want), "'%s' has mode %04o, not %04o", (path), (unsigned)m_,  \
                              (unsigned)(want));                                                            \
        } while (0)

#endif
