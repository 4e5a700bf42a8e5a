/* The one way trialbox starts a child (git's run-command.h): describe it in
 * a struct spawn, then spawn_start() and spawn_wait(), or spawn_run() for
 * both.
 *
 *   struct spawn s = { .argv = argv, .envp = envp, .std_in = SPAWN_DEV_NULL,
 *                      .std_out = SPAWN_CAPTURE, .std_err = SPAWN_DEV_NULL };
 *   int r = spawn_run(&s, &err);        // s.out.buf: what it printed
 *   ... s.status == 0 ...
 *   spawn_done(&s);
 *
 * Every child starts with every signal's disposition back to default (an
 * ignored SIGINT or SIGQUIT of a background shell is not passed on) and an
 * empty signal mask unless `sigmask` says otherwise; it holds no fd of
 * trialbox's but its stdio and the `fds` placed for it (trialbox opens
 * everything O_CLOEXEC).
 *
 * Children that do not go through here, and why:
 *  - the supervisor's session child (sandbox/supervisor.c) joins the
 *    Trial's cgroup, places six fds and, for bwrap, is the keeper, which
 *    shares trialbox's memory (base/shared_child.h: no fork) and never
 *    execs; its exec error comes back on a pipe the supervisor's event
 *    loop owns;
 *  - the keeper's bwrap child (sandbox/keeper.c) switches to the session's
 *    user and sets a parent-death signal between its start and its exec,
 *    started by clone(CLONE_VM | CLONE_VFORK) in the keeper's memory, where
 *    it must not allocate or unwind.
 * The session child resets the dispositions with spawn_reset_signals() all
 * the same; the bwrap child finds them reset (by the session child, which
 * became its keeper) and empties its mask. The session each starts gets an
 * empty mask, whatever trialbox's own. */
#ifndef TB_SPAWN_H
#define TB_SPAWN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"

enum spawn_io {
        SPAWN_INHERIT = 0, /* trialbox's own */
        SPAWN_DEV_NULL,    /* /dev/null */
        SPAWN_FD,          /* the fd in std_in_fd / std_out_fd / std_err_fd (not closed, not moved) */
        SPAWN_CAPTURE,     /* stdout, stderr: a pipe read into `out` / `err` by spawn_wait() */
        SPAWN_TO_STDOUT,   /* stderr: wherever stdout goes (one capture for both) */
};

/* What a SPAWN_CAPTURE stream said: `buf` malloc'd and NUL-terminated (""
 * when it said nothing), its first `len` bytes kept; `truncated` when it
 * said more than capture_max (the rest was read and dropped, so that the
 * child never blocks on a full pipe). */
struct spawn_capture {
        char *buf;
        size_t len;
        bool truncated;
};

#define SPAWN_CAPTURE_MAX (64u << 20)

enum {
        SPAWN_NEW_PGROUP = 1 << 0, /* a process group of its own (setpgid(0, 0)) */
        SPAWN_EXEC_FD = 1 << 1,    /* exec the program open at `exec_fd` (execveat), argv[0] only its name */
};

struct spawn {
        /* The program: argv[0] a path, or a name looked up on this process's
         * PATH (execvp). NULL with child_fn: no exec, the child runs child_fn
         * and exits with what it returns. */
        char *const *argv;
        const char *path;  /* the program's file, when argv[0] is only its name; NULL: argv[0] */
        char *const *envp; /* NULL: this process's environment */
        int exec_fd;       /* with SPAWN_EXEC_FD */
        const char *cwd;   /* NULL: trialbox's */
        int flags;         /* SPAWN_* */

        enum spawn_io std_in, std_out, std_err;
        int std_in_fd, std_out_fd, std_err_fd; /* for SPAWN_FD */
        size_t capture_max;                    /* bytes kept of a capture; 0: SPAWN_CAPTURE_MAX */

        /* More fds for the child: fds[i] becomes its fd_targets[i], without
         * close-on-exec (a source may sit where another must go). */
        const int *fds, *fd_targets; /* targets below 64 */
        size_t n_fds;

        const sigset_t *sigmask; /* the child's signal mask; NULL: empty */

        /* Run in the child once its fds, signals, process group and cwd are
         * set, right before the exec: 0 to go on, or an exit status to end
         * the child with instead. The child is a fork of trialbox, so it may
         * do what trialbox does (wait on a pipe, run children of its own).
         * With child_fn, spawn_start() does not wait for the exec and an
         * exec that fails ends the child with 127 (its errno on stderr). */
        int (*child_fn)(void *ctx);
        void *ctx;

        /* Filled in. */
        pid_t pid;               /* spawn_start(): the child, > 0 */
        int wait_status;         /* spawn_wait(): waitpid()'s status */
        int status;              /* spawn_wait(): 0-255, or 128+N for signal N */
        struct spawn_capture out, err;
        int pipes[3];            /* the read ends of the captures (spawn's own) */
        bool started;
};

/* Start the child. Without child_fn, waits until its exec is done: a
 * program that cannot be run is -errno here ('cannot run ...' in err),
 * its child already reaped. 0 or a negative errno. */
int spawn_start(struct spawn *s, struct tb_error *err);

/* Read the captures to their end, then reap the child (EINTR retried):
 * fills wait_status, status, out, err. 0 or a negative errno (-ECHILD when
 * someone else reaped it). */
int spawn_wait(struct spawn *s, struct tb_error *err);

/* spawn_start() then spawn_wait(). */
int spawn_run(struct spawn *s, struct tb_error *err);

/* Free the captures and close what spawn_start() left open; `s` may be
 * spawned again. Does not wait for a child still running. */
void spawn_done(struct spawn *s);

/* In a child, before its exec: every signal's disposition back to default
 * and the mask set to `mask` (NULL: empty). */
void spawn_reset_signals(const sigset_t *mask);

#endif
