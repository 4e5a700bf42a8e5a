/* How a session's end, as the supervisor saw it, maps to a session result:
 * supervisor_result() over a table of what can be seen, no processes. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fileio.h"

#include "sandbox/supervisor.h"
#include "tb_test.h"

/* What was seen, then the result it must give. */
struct result_case {
        const char *name;
        struct supervisor_seen seen;
        bool started;
        enum outcome_cause void_cause;
        int exit_code;
        int signal;
        const char *detail; /* when !started */
};

#define BWRAP .bwrap = true, .program = "/usr/bin/bwrap"
#define DIRECT .bwrap = false, .program = "/bin/sh"
/* bwrap set the sandbox up and executed the session (pid 42 on the host). */
#define RAN BWRAP, .child_pid = 42, .setup_done = true

static const struct result_case cases[] = {
        { "bwrap that cannot be executed is void, sandbox unavailable",
          { BWRAP, .exec_errno = ENOENT, .exit_code = -1, .wait_status = W_EXITCODE(127, 0) },
          false, CAUSE_SANDBOX_UNAVAILABLE, 0, 0, "cannot execute '/usr/bin/bwrap': No such file or directory" },
        { "an unsandboxed Harness that cannot be executed is void, session unavailable",
          { DIRECT, .exec_errno = EACCES, .exit_code = -1, .wait_status = W_EXITCODE(127, 0) },
          false, CAUSE_SESSION_UNAVAILABLE, 0, 0, "cannot execute '/bin/sh': Permission denied" },
        { "unsandboxed exit 0",
          { DIRECT, .exit_code = -1, .wait_status = W_EXITCODE(0, 0) }, true, CAUSE_NONE, 0, 0, NULL },
        { "unsandboxed exit 3 is passed through",
          { DIRECT, .exit_code = -1, .wait_status = W_EXITCODE(3, 0) }, true, CAUSE_NONE, 3, 0, NULL },
        { "unsandboxed, killed by a signal: the kernel says so",
          { DIRECT, .exit_code = -1, .wait_status = W_EXITCODE(0, SIGKILL) }, true, CAUSE_NONE, 0, SIGKILL, NULL },
        { "unsandboxed 128+N after forwarding N: the signal",
          { DIRECT, .exit_code = -1, .wait_status = W_EXITCODE(130, 0), .forwarded = SIGINT },
          true, CAUSE_NONE, 0, SIGINT, NULL },
        { "unsandboxed 128+N with another signal forwarded: the exit code",
          { DIRECT, .exit_code = -1, .wait_status = W_EXITCODE(130, 0), .forwarded = SIGTERM },
          true, CAUSE_NONE, 130, 0, NULL },
        { "unsandboxed 128+N, nothing forwarded: the exit code",
          { DIRECT, .exit_code = -1, .wait_status = W_EXITCODE(130, 0) }, true, CAUSE_NONE, 130, 0, NULL },
        { "bwrap's exit-code 0 is completed", { RAN, .exit_code = 0 }, true, CAUSE_NONE, 0, 0, NULL },
        { "bwrap's exit-code 1 is passed through, a 'bwrap: ' line or not",
          { RAN, .exit_code = 1, .bwrap_msg = "bwrap: fake message" }, true, CAUSE_NONE, 1, 0, NULL },
        { "bwrap's exit-code 137, nothing sent: exit code 137, no signal",
          { RAN, .exit_code = 128 + SIGKILL }, true, CAUSE_NONE, 137, 0, NULL },
        { "bwrap's exit-code 143 after forwarding SIGINT: exit code 143",
          { RAN, .exit_code = 128 + SIGTERM, .forwarded = SIGINT }, true, CAUSE_NONE, 143, 0, NULL },
        { "bwrap's exit-code 128+N after forwarding N: signal N",
          { RAN, .exit_code = 128 + SIGTERM, .forwarded = SIGTERM }, true, CAUSE_NONE, 0, SIGTERM, NULL },
        { "bwrap's exit-code 137 after trialbox's SIGKILL: signal 9",
          { RAN, .exit_code = 128 + SIGKILL, .forwarded = SIGTERM, .killed = true },
          true, CAUSE_NONE, 0, SIGKILL, NULL },
        { "bwrap's exit-code 143 after trialbox's SIGKILL of a session sent SIGTERM: signal 15",
          { RAN, .exit_code = 128 + SIGTERM, .forwarded = SIGTERM, .killed = true },
          true, CAUSE_NONE, 0, SIGTERM, NULL },
        { "killed by trialbox, no exit-code: SIGKILL",
          { RAN, .exit_code = -1, .wait_status = W_EXITCODE(0, SIGKILL), .forwarded = SIGTERM, .killed = true },
          true, CAUSE_NONE, 0, SIGKILL, NULL },
        { "a forwarded signal, bwrap gone without an exit-code: that signal, never void",
          { RAN, .exit_code = -1, .wait_status = W_EXITCODE(0, SIGTERM), .forwarded = SIGTERM,
            .bwrap_msg = "bwrap: fake message" },
          true, CAUSE_NONE, 0, SIGTERM, NULL },
        { "bwrap killed by someone else after the session started: the signal that killed it",
          { RAN, .exit_code = -1, .wait_status = W_EXITCODE(0, SIGKILL), .bwrap_msg = "bwrap: fake message" },
          true, CAUSE_NONE, 0, SIGKILL, NULL },
        { "bwrap exited after the session started with no exit-code: its status",
          { RAN, .exit_code = -1, .wait_status = W_EXITCODE(1, 0), .bwrap_msg = "bwrap: execvp x: No such file" },
          true, CAUSE_NONE, 1, 0, NULL },
        { "killed by trialbox before the child pid, the operator's SIGTERM: void, interrupted, how bwrap ended",
          { BWRAP, .exit_code = -1, .wait_status = W_EXITCODE(0, SIGKILL), .forwarded = SIGTERM, .interrupted = SIGTERM,
            .killed = true },
          false, CAUSE_INTERRUPTED, 0, 0, "bwrap was killed by signal 9 before the session started" },
        { "killed by trialbox before the child pid, past the deadline: void, sandbox unavailable",
          { BWRAP, .exit_code = -1, .wait_status = W_EXITCODE(0, SIGKILL), .forwarded = SIGTERM, .killed = true,
            .timed_out = true },
          false, CAUSE_SANDBOX_UNAVAILABLE, 0, 0, "bwrap was killed by signal 9 before the session started" },
        /* The operator's signal: the Trial is interrupted, whatever the session did. */
        { "the operator's SIGINT, then exit 1: started, exit code 1, interrupted",
          { RAN, .exit_code = 1, .forwarded = SIGINT, .interrupted = SIGINT }, true, CAUSE_NONE, 1, 0, NULL },
        { "the operator's SIGTERM, the session ended on it: started, signal 15, interrupted",
          { RAN, .exit_code = 128 + SIGTERM, .forwarded = SIGTERM, .interrupted = SIGTERM },
          true, CAUSE_NONE, 0, SIGTERM, NULL },
        { "unsandboxed, the operator's SIGHUP, exit 0: started, interrupted",
          { DIRECT, .exit_code = -1, .wait_status = W_EXITCODE(0, 0), .forwarded = SIGHUP, .interrupted = SIGHUP },
          true, CAUSE_NONE, 0, 0, NULL },
        { "the operator's SIGINT pending before anything was started: void, interrupted",
          { BWRAP, .exit_code = -1, .forwarded = SIGINT, .interrupted = SIGINT, .before_start = true },
          false, CAUSE_INTERRUPTED, 0, 0, "it was never started" },
        { "unsandboxed, the same: void, interrupted",
          { DIRECT, .exit_code = -1, .forwarded = SIGINT, .interrupted = SIGINT, .before_start = true },
          false, CAUSE_INTERRUPTED, 0, 0, "it was never started" },
        { "past the deadline, then the operator's SIGINT: timed out, not interrupted",
          { RAN, .exit_code = 128 + SIGTERM, .timed_out = true, .forwarded = SIGINT, .timeout_ms = 1000 },
          true, CAUSE_NONE, 143, 0, NULL },
        { "a setup that failed after the child pid: void with bwrap's message",
          { BWRAP, .child_pid = 42, .exit_code = -1, .wait_status = W_EXITCODE(1, 0),
            .bwrap_msg = "bwrap: Can't find source path /x: No such file or directory" },
          false, CAUSE_SANDBOX_UNAVAILABLE, 0, 0, "bwrap: Can't find source path /x: No such file or directory" },
        { "an exit-code without the setup done: void",
          { BWRAP, .child_pid = 42, .exit_code = 1, .wait_status = W_EXITCODE(1, 0),
            .bwrap_msg = "bwrap: setting up uid map: Permission denied" },
          false, CAUSE_SANDBOX_UNAVAILABLE, 0, 0, "bwrap: setting up uid map: Permission denied" },
        { "no setup, no message, bwrap killed: void naming the signal",
          { BWRAP, .exit_code = -1, .wait_status = W_EXITCODE(0, SIGTERM) },
          false, CAUSE_SANDBOX_UNAVAILABLE, 0, 0, "bwrap was killed by signal 15 before the session started" },
        { "a hold (the network proxy) that refused to let the session start: void with its reason",
          { BWRAP, .child_pid = 42, .exit_code = -1, .wait_status = W_EXITCODE(0, SIGKILL),
            .bwrap_msg = "bwrap: fake message",
            .hold_msg = "the network proxy: joining the sandbox's network namespace: Operation not permitted" },
          false, CAUSE_SANDBOX_UNAVAILABLE, 0, 0,
          "the network proxy: joining the sandbox's network namespace: Operation not permitted" },
        { "no setup, no message, bwrap exited: void naming the status",
          { BWRAP, .exit_code = -1, .wait_status = W_EXITCODE(1, 0) },
          false, CAUSE_SANDBOX_UNAVAILABLE, 0, 0, "bwrap exited with status 1 before the session started" },
        /* Limits: a timeout, its grace, and what the kernel killed. */
        { "past the deadline, the session ended on its SIGTERM: timed out, signal 15",
          { RAN, .exit_code = 128 + SIGTERM, .timed_out = true, .timeout_ms = 1000, .kill_after_ms = 10000 },
          true, CAUSE_NONE, 0, SIGTERM, NULL },
        { "past the deadline, the session exited 3 on its own: timed out, exit code 3",
          { RAN, .exit_code = 3, .timed_out = true, .timeout_ms = 1000 },
          true, CAUSE_NONE, 3, 0, NULL },
        { "past the deadline and the grace, bwrap's exit-code 137: timed out, killed after the grace, signal 9",
          { RAN, .exit_code = 128 + SIGKILL, .timed_out = true, .killed_after_grace = true },
          true, CAUSE_NONE, 0, SIGKILL, NULL },
        { "past the deadline and the grace, no exit-code: SIGKILL",
          { RAN, .exit_code = -1, .wait_status = W_EXITCODE(0, SIGKILL), .timed_out = true,
            .killed_after_grace = true },
          true, CAUSE_NONE, 0, SIGKILL, NULL },
        { "unsandboxed, past the deadline: the kernel's signal",
          { DIRECT, .exit_code = -1, .wait_status = W_EXITCODE(0, SIGTERM), .timed_out = true },
          true, CAUSE_NONE, 0, SIGTERM, NULL },
        { "an OOM kill and exit-code 137: the kills pass through, exit code 137",
          { RAN, .exit_code = 128 + SIGKILL, .oom_kills = 1, .memory_bytes = 64 << 20 },
          true, CAUSE_NONE, 137, 0, NULL },
        { "OOM kills but exit 0: the kills pass through, exit 0",
          { RAN, .exit_code = 0, .oom_kills = 2 }, true, CAUSE_NONE, 0, 0, NULL },
        { "143 with no deadline and nothing forwarded: the exit code, not timed out",
          { RAN, .exit_code = 128 + SIGTERM }, true, CAUSE_NONE, 143, 0, NULL },
        { "a void Trial never carries a timeout",
          { BWRAP, .exit_code = -1, .wait_status = W_EXITCODE(1, 0), .timed_out = true },
          false, CAUSE_SANDBOX_UNAVAILABLE, 0, 0, "bwrap exited with status 1 before the session started" },
};

START_TEST(what_was_seen_maps_to_one_session_result)
{
        const struct result_case *c = &cases[_i];
        struct session_result res;
        memset(&res, 0xa5, sizeof res); /* every field is written */
        supervisor_result(&c->seen, &res);
        ck_assert_msg(res.started == c->started, "%s: started is %d", c->name, res.started);
        ck_assert_msg(res.exit_code == c->exit_code, "%s: exit_code is %d", c->name, res.exit_code);
        ck_assert_msg(res.signal == c->signal, "%s: signal is %d", c->name, res.signal);
        ck_assert_msg(res.void_cause == c->void_cause, "%s: void_cause is %d", c->name, (int)res.void_cause);
        /* The operator's signal passes into the result, started or not. */
        ck_assert_msg(res.interrupted == c->seen.interrupted, "%s: interrupted is %d", c->name, res.interrupted);
        ck_assert_msg(strcmp(res.detail, c->detail ? c->detail : "") == 0, "%s: detail is '%s'", c->name,
                      res.detail);
        /* The limits' part passes through for a session that started, and
         * a void Trial carries none of it. */
        ck_assert_msg(res.timed_out == (c->started && c->seen.timed_out), "%s: timed_out is %d", c->name,
                      res.timed_out);
        ck_assert_msg(res.killed_after_grace == (c->started && c->seen.killed_after_grace),
                      "%s: killed_after_grace is %d", c->name, res.killed_after_grace);
        ck_assert_msg(res.oom_kills == (c->started ? c->seen.oom_kills : 0), "%s: oom_kills is %lld", c->name,
                      res.oom_kills);
        if (res.timed_out)
                ck_assert_msg(res.timeout_ms == c->seen.timeout_ms && res.kill_after_ms == c->seen.kill_after_ms,
                              "%s: the limits are not passed on", c->name);
}
END_TEST

/* The threads of this process but this one: how many, and the first's tid. */
static int other_threads(pid_t *first)
{
        int n = 0;
        *first = 0;
        DIR *d = opendir("/proc/self/task");
        ck_assert_ptr_nonnull(d);
        for (struct dirent *e; (e = readdir(d));) {
                pid_t tid = (pid_t)atoi(e->d_name);
                if (tid > 0 && tid != getpid()) {
                        n++;
                        if (!*first)
                                *first = tid;
                }
        }
        closedir(d);
        return n;
}

/* A field of /proc/PATH/status ("SigBlk", "PPid", ...), as text. */
static char *status_field(const char *path, const char *field)
{
        _cleanup_free_ char *status = read_file(path, 1u << 16, NULL);
        ck_assert_ptr_nonnull(status);
        _cleanup_free_ char *key = NULL;
        ck_assert_int_gt(asprintf(&key, "\n%s:\t", field), 0);
        const char *at = strstr(status, key);
        ck_assert_msg(at != NULL, "no %s in %s", field, path);
        at += strlen(key);
        return strndup(at, strcspn(at, "\n"));
}

/* The keeper started before its Trial is known waits at its gate: a child
 * of this process, on a holder thread that blocks every signal (SIGCHLD
 * taken there would be lost to the supervisor's signalfd: SIGCHLD's
 * default ignores it; seen as a Trial that never ended, 2 in 120); and
 * told to end, it ends and is reaped, its holder gone. */
START_TEST(a_prestarted_keeper_waits_at_its_gate_and_ends_when_told)
{
        sigset_t chld, old;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        pthread_sigmask(SIG_UNBLOCK, &chld, &old); /* as trialbox's thread has it before the supervisor */
        pid_t none;
        const int threads_before = other_threads(&none);
        struct supervisor *pre = supervisor_prestart();
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (!pre) { /* valgrind (no shared memory there), or no free CPU */
                skip_note("a_prestarted_keeper_waits_at_its_gate_and_ends_when_told", "no keeper was prestarted here");
                return;
        }
        pid_t holder;
        ck_assert_int_eq(other_threads(&holder), threads_before + 1);
        _cleanup_free_ char *holder_status = NULL;
        ck_assert_int_gt(asprintf(&holder_status, "/proc/self/task/%d/status", (int)holder), 0);
        _cleanup_free_ char *blocked = status_field(holder_status, "SigBlk");
        unsigned long long mask = strtoull(blocked, NULL, 16);
        ck_assert_msg(mask & (1ULL << (SIGCHLD - 1)), "the holder takes SIGCHLD (SigBlk %s)", blocked);
        ck_assert_msg(mask & (1ULL << (SIGTERM - 1)), "the holder takes SIGTERM (SigBlk %s)", blocked);
        /* The keeper: the holder's child, waiting (running or asleep). The
         * prestart returns once the holder thread exists, not once it has
         * cloned the keeper (on a busy CPU that comes a little later):
         * looked for until it is there, for 5 s at most. */
        _cleanup_free_ char *children_path = NULL;
        ck_assert_int_gt(asprintf(&children_path, "/proc/self/task/%d/children", (int)holder), 0);
        pid_t keeper = 0;
        for (int tries = 0; keeper <= 0 && tries < 5000; tries++) {
                _cleanup_free_ char *children = read_file(children_path, 4096, NULL);
                ck_assert_ptr_nonnull(children);
                keeper = (pid_t)atoi(children);
                if (keeper <= 0)
                        usleep(1000);
        }
        ck_assert_int_gt(keeper, 0);
        _cleanup_free_ char *keeper_status = NULL;
        ck_assert_int_gt(asprintf(&keeper_status, "/proc/%d/status", (int)keeper), 0);
        _cleanup_free_ char *ppid = status_field(keeper_status, "PPid");
        ck_assert_int_eq(atoi(ppid), getpid());
        supervisor_prestart_cancel(pre);
        ck_assert_int_eq(kill(keeper, 0), -1); /* ended and reaped */
        ck_assert_int_eq(errno, ESRCH);
        ck_assert_int_eq(other_threads(&none), threads_before);
}
END_TEST

TB_SUITE("supervisor", 0)
{
        tcase_add_loop_test(tc, what_was_seen_maps_to_one_session_result, 0, (int)TB_ARRAY_SIZE(cases));
        tcase_add_test(tc, a_prestarted_keeper_waits_at_its_gate_and_ends_when_told);
}
