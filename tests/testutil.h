/* Helpers for the tests: temporary folders, running a program with extra
 * environment and capturing what it prints, reading outcome.json. */
#ifndef TB_TESTUTIL_H
#define TB_TESTUTIL_H

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

/* Write a file (creating it with `mode`). */
void write_text(const char *path, const char *text, mode_t mode);
/* A whole file, NULs kept (and one more after it), its length in *len; with !follow_links a link is
 * not read through (NULL). malloc'd, or NULL. */
char *read_all(const char *path, size_t *len, bool follow_links);

/* Run a Check suite (CK_ENV verbosity, fork mode): a test binary's main. */
typedef struct Suite Suite;
int run_suite(Suite *s);

/* Read a whole file, or NULL. malloc'd. */
char *read_text(const char *path);

/* Run argv (argv[0] a path) with `env` ("NAME=value" to set, "NAME" alone to
 * unset; NULL-terminated, may be NULL) added to ours, stdin on /dev/null,
 * and wait for it. */
void run_argv(struct proc_result *r, char *const env[], char *const argv[]);
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

#endif
