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

#endif
