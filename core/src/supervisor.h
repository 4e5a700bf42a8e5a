/* The supervisor: starts the session (through bwrap, or directly when
 * unsandboxed), forwards SIGINT/SIGTERM/SIGHUP to it, reaps it, and says how
 * it ended. Setup, then a loop that hands each ready event source (bwrap's
 * status fd, its stderr, a signalfd, the kill timer, extra watches such as
 * login sync) to its own handler; what was seen is then mapped to a
 * session_result by a pure function, supervisor_result(). */
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

/* What the supervisor saw of a session, the input of supervisor_result(). */
struct supervisor_seen {
        bool bwrap;            /* the session ran through bwrap (and its keeper) */
        const char *program;   /* argv[0]: named when it could not be executed */
        int exec_errno;        /* why argv[0] could not be executed, or 0 */
        long child_pid;        /* bwrap's "child-pid" (host pid), or 0 */
        int exit_code;         /* bwrap's "exit-code", or -1 */
        int wait_status;       /* waitpid() status of the direct child: the session, or the keeper */
        int forwarded;         /* the signal trialbox forwarded to the session, or 0 */
        bool killed;           /* trialbox ended the session with SIGKILL after the grace */
        char bwrap_msg[512];   /* the last "bwrap: ..." line on bwrap's stderr, or "" */
};

/* How the session ended, from what was seen alone: no system calls, no
 * state. Fills all of `res`. */
void supervisor_result(const struct supervisor_seen *seen, struct session_result *res);

/* Parse one JSON status document of bwrap's into child_pid / exit_code
 * (left untouched when absent). Returns 0, or -EINVAL when it is not a JSON
 * object. Exposed for tests and fuzzing. */
int supervisor_parse_status(const char *line, long *child_pid, int *exit_code);

#endif
