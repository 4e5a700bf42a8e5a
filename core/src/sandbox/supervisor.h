/* The supervisor: starts the session (through bwrap, or directly when
 * unsandboxed), forwards SIGINT/SIGTERM/SIGHUP to it, reaps it, and says how
 * it ended. Setup, then a loop that hands each ready event source (bwrap's
 * status fd, its stderr, a signalfd, the kill timer, the deadline (--timeout),
 * the cgroup's OOM events, extra watches such as
 * login sync) to its own handler; what was seen is then mapped to a
 * session_result by a pure function, supervisor_result().
 *
 * The session never holds trialbox's own standard streams: it gets pipes
 * for stdin and stdout (a pty of trialbox's for both when trialbox's stdin
 * and stdout are its terminal) and bwrap's stderr pipe, all relayed by the loop, and
 * drained before supervisor_run() returns. The relays never wait on
 * trialbox's readers (base/sink.h): what a reader that stopped does not
 * take is held up to 1 MiB per stream, the rest dropped and counted in the
 * result; at the end, a reader that takes nothing for a second is not
 * waited for. The timers, the signals and the record never wait on one. The keeper and bwrap (or the
 * unsandboxed session) run in a process group of their own, so a signal
 * for trialbox's group reaches trialbox alone, which forwards it. */
#ifndef TB_SUPERVISOR_H
#define TB_SUPERVISOR_H

#include <stdbool.h>
#include <sys/resource.h>

#include "model/outcome.h"
#include "base/error.h"

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

struct session_user;

struct supervisor_run {
        char **argv;  /* argv[0] is the program (bwrap, or the Harness) */
        char **envp;
        const char *cwd;  /* unsandboxed only: where to start */
        bool bwrap;       /* argv runs bwrap with --json-status-fd SANDBOX_STATUS_FD
                           * (the supervisor adds --block-fd KEEPER_BLOCK_FD) */
        struct supervisor_watch *watches;
        size_t n_watches;
        /* Limits. With a cgroup (NULL: none), the keeper (the
         * session, unsandboxed) joins it before it starts bwrap, so every
         * process of the session is born inside; its OOM events are
         * watched. With a timeout (timeout_ms > 0; LIMIT_UNSET: none), at
         * the deadline every process of the session gets SIGTERM (the
         * cgroup's, but the keeper and bwrap, which stay to report; else the
         * session's process group), and whatever is left after
         * kill_after_ms gets SIGKILL. */
        struct cgroup *cgroup;
        long long timeout_ms, kill_after_ms;
        long long memory_bytes; /* the --memory limit, for the detail; <= 0: none */
        /* When set: the rusage of the direct child and everything it reaped
         * (the keeper is a subreaper that waits for every process under it,
         * so that is the whole session). */
        struct rusage *rusage;
        /* Network, bwrap only. When set, the session is held (its
         * --block-fd byte is not written) until bwrap reports the sandbox's
         * pid ("child-pid") and hold() returns 0 for it; hold() may fill
         * *watch (fd -1: none), watched like the others from then on and
         * finished with them. A negative errno kills the sandbox before the
         * session's program runs: the Trial is void, err's message its detail. */
        int (*hold)(pid_t sandbox_pid, struct supervisor_watch *watch, void *ctx, struct tb_error *err);
        void *hold_ctx;
        /* When set: what must be done before the session's program may
         * run, but need not keep bwrap waiting (the other network
         * namespaces' socket masks, the repository guard's snapshot, the
         * `running` record: trial.c).
         * Through bwrap it is called once bwrap's keeper is forked, while
         * bwrap sets the sandbox up, and the session's --block-fd byte is
         * written only after it returns 0; unsandboxed, right before the
         * fork. A negative errno ends everything started before the
         * session's program runs, and supervisor_run returns it (err
         * filled): nothing ran. */
        int (*before_start)(void *ctx, struct tb_error *err);
        void *before_start_ctx;
        const struct session_user *user; /* NULL, or who bwrap runs as (session_user.h) */
        const struct sandbox_cow *cow;   /* NULL, or an overlay mounted before bwrap (sandbox/cow.h) */
        /* When set, the signals the supervisor blocks (SIGINT, SIGTERM,
         * SIGHUP among them) stay blocked after it returns: one that comes
         * then is for a Trial that is ending, and must not stop trialbox
         * before the repository is restored and the Outcome written. The
         * caller's process exits with the Outcome's status, the signal
         * dropped. */
        bool hold_signals;
        /* When set: a supervisor supervisor_start_early returned, whose
         * bwrap waits for its options. argv (bwrap's whole line, as
         * sandbox_argv makes it) must name the filter fd and the command
         * it was started with; supervisor_run sends bwrap the rest of argv
         * and envp, and goes on as it would have. It owns it from then on.
         * `cgroup` must be the one it was started with (the keeper joined
         * it at its start); not with a cow layer (mounted before bwrap). */
        struct supervisor *started;
};

/* Run the session to its end and fill `res`. Returns 0, or a negative errno
 * when trialbox itself could not run it (pipes, fork): then `err` says why. */
int supervisor_run(const struct supervisor_run *run, struct session_result *res, struct tb_error *err);

/* bwrap started before its options are known: its exec and its loader
 * overlap the work that makes them (the spec, the plugin's hooks, the
 * masks). The keeper starts at once, on another CPU when there is one
 * (cpus_other_free), and starts `bwrap --block-fd B --seccomp F --args A
 * -- COMMAND...` with an empty environment: bwrap reads its options from
 * the pipe A until its end, which comes once supervisor_run writes them
 * (the --setenv pairs of the session's environment among them), and even
 * then sets nothing up but waits on B for the session's byte. Until
 * supervisor_run, bwrap's process keeps the keeper's CPU; it gets every
 * CPU of trialbox's back before its options are sent, before it has made
 * anything of the sandbox. */
struct supervisor_early {
        const char *bwrap;
        int seccomp_fd;                  /* the filter's (confine_filter_fd): its program, on bwrap's line */
        char *const *command;            /* what follows "--": the session's program and its arguments */
        const struct session_user *user; /* NULL, or who bwrap runs as (session_user.h) */
        struct cgroup *cgroup;           /* NULL, or the Trial's: the keeper joins it before it starts bwrap */
};

/* NULL, with `err` (and errno) saying why, when it could not be started.
 * `pre`, when not NULL, is supervisor_prestart's, taken whatever happens. */
struct supervisor *supervisor_start_early(const struct supervisor_early *e, struct supervisor *pre,
                                          struct tb_error *err);

/* The keeper of a supervisor_start_early to come, started before anything
 * of it is known (as trialbox checks the request), when trialbox's memory
 * can be shared, trialbox may use another CPU and was not told that every
 * CPU is busy (cpus_set_busy: a batch with a Trial on each): there it does what
 * needs nothing of the Trial, then waits (looking, then asleep) until
 * supervisor_start_early says go, which then needs neither to start a
 * thread nor to clone a process, and on a CPU already awake. It shares
 * trialbox's fd table until then, and takes a copy of its own on go, as
 * a keeper cloned then would. NULL when not started (the early start then
 * starts its keeper itself). */
struct supervisor *supervisor_prestart(void);

/* A prestarted keeper that will not be used: it ends, having started
 * nothing, and is reaped. Nothing for NULL. */
void supervisor_prestart_cancel(struct supervisor *pre);

/* A supervisor started early whose session will not run (the Trial turned
 * void before it): the keeper kills bwrap, which has run nothing, and
 * both are reaped before this returns. Nothing for NULL. */
void supervisor_abort(struct supervisor *sv);

/* What the supervisor saw of a session, the input of supervisor_result(). */
struct supervisor_seen {
        bool bwrap;            /* the session ran through bwrap (and its keeper) */
        const char *program;   /* argv[0]: named when it could not be executed */
        int exec_errno;        /* why argv[0] could not be executed, or 0 */
        long child_pid;        /* bwrap's "child-pid" (host pid), or 0 */
        bool setup_done;       /* bwrap set the sandbox up and went on to execute the session */
        int exit_code;         /* bwrap's "exit-code", or -1 */
        int wait_status;       /* waitpid() status of the direct child: the session, or the keeper */
        int forwarded;         /* the signal trialbox forwarded to the session, or 0 */
        /* The operator's signal (SIGINT, SIGTERM, SIGHUP to trialbox),
         * forwarded before any deadline passed, or 0: the session ended
         * because of it (a deadline's SIGTERM is not the operator's). */
        int interrupted;
        bool before_start;     /* it was pending before the session's process was made: none was */
        bool killed;           /* trialbox ended the session with SIGKILL after the grace */
        char bwrap_msg[512];   /* the last "bwrap: ..." line on bwrap's stderr, or "" */
        /* Limits. */
        bool timed_out;          /* the deadline passed: SIGTERM was sent to the session */
        bool killed_after_grace; /* SIGKILL was needed --kill-after the deadline's SIGTERM */
        long long oom_kills;     /* the cgroup's OOM kills seen (0 without a cgroup) */
        long long timeout_ms, kill_after_ms, memory_bytes; /* the limits, for the detail */
        char hold_msg[512];    /* why run->hold() refused to let the session start, or "" */
        /* The session's output trialbox's own stdout and stderr did not
         * take (their reader stopped, or went away): bytes dropped. */
        long long dropped_stdout, dropped_stderr;
};

/* How the session ended, from what was seen alone: no system calls, no
 * state. Fills all of `res`.
 *
 * Started or void. Through bwrap, the session started once bwrap took the
 * byte trialbox left on its --block-fd: bwrap reads it after setting the
 * sandbox up, just before it executes the session's program. Before that,
 * the Trial is void (sandbox_unavailable) and its detail is bwrap's last
 * "bwrap: " line, which only bwrap can have printed then; after it, the
 * Trial is never void, whatever the session prints or however it ends,
 * but for the operator's signal (below), which only trialbox's own
 * signalfd says: a sandboxed session cannot signal trialbox.
 *
 * Exit code or signal. A status of 128+N is also what a session gets by
 * `exit 128+N`, and bwrap reports a session killed by signal N as 128+N,
 * so a signal is recorded only when trialbox knows it was one:
 *  - unsandboxed, the kernel's wait status says the session was killed;
 *  - trialbox forwarded signal N to the session (SIGINT, SIGTERM, SIGHUP
 *    it received) and the status is 128+N;
 *  - trialbox sent SIGKILL after the grace and the status is 128+9;
 *  - the deadline passed (timed_out) and the status is 128+SIGTERM;
 *  - bwrap ended without reporting the session's end (killed itself):
 *    the signal trialbox sent, else the one that killed bwrap.
 * timed_out, killed_after_grace and oom_kills pass into the result with
 * the limits, for outcome_from_session() (a timeout wins over an OOM kill).
 *
 * Interrupted. When the operator's signal reached trialbox before the
 * session ended (and before its deadline), `interrupted` passes into the
 * result: the Trial is void/interrupted whatever the session did; a session
 * that had not started yet is not started, its cause CAUSE_INTERRUPTED.
 * Anything else is an exit code, passed through as it is: `exit 137` is
 * exit code 137, no signal. outcome.json says which; trialbox's own exit
 * status (128+N for a signal, 125 void, 126 trialbox's failure, 2 usage)
 * can collide with a session's exit code. */
void supervisor_result(const struct supervisor_seen *seen, struct session_result *res);

/* Parse one JSON status document of bwrap's into child_pid / exit_code
 * (left untouched when absent). Returns 0, or -EINVAL when it is not a JSON
 * object. Exposed for tests and fuzzing. */
int supervisor_parse_status(const char *line, long *child_pid, int *exit_code);

#endif
