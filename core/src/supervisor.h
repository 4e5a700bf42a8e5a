/* The supervisor: starts the session (through bwrap, or directly when
 * unsandboxed), forwards SIGINT/SIGTERM/SIGHUP to it, reaps it, and says how
 * it ended. One poll loop over bwrap's status fd, its stderr, a signalfd and
 * any extra watches (login sync). */
#ifndef TB_SUPERVISOR_H
#define TB_SUPERVISOR_H

#include <stdbool.h>

#include "outcome.h"
#include "util.h"

/* Seconds between a forwarded signal and SIGKILL to the whole session. */
#define SUPERVISOR_KILL_GRACE_MS 10000

/* An extra fd to watch while the session runs: `ready` is called when it is
 * readable, `finish` once after the session ended (may be NULL). */
struct supervisor_watch {
        int fd;
        void (*ready)(void *ctx);
        void (*finish)(void *ctx);
        void *ctx;
};

struct supervisor_run {
        char **argv;  /* argv[0] is the program (bwrap, or the Harness) */
        char **envp;
        const char *cwd;  /* unsandboxed only: where to start */
        bool bwrap;       /* argv runs bwrap with --json-status-fd SANDBOX_STATUS_FD */
        struct supervisor_watch *watches;
        size_t n_watches;
};

/* Run the session to its end and fill `res`. Returns 0, or a negative errno
 * when trialbox itself could not run it (pipes, fork): then `err` says why. */
int supervisor_run(const struct supervisor_run *run, struct session_result *res, struct tb_error *err);

/* Parse one JSON status document of bwrap's into child_pid / exit_code
 * (left untouched when absent). Returns 0, or -EINVAL when it is not a JSON
 * object. Exposed for tests and fuzzing. */
int supervisor_parse_status(const char *line, long *child_pid, int *exit_code);

#endif
