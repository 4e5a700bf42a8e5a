#define _GNU_SOURCE
#include "sandbox/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <linux/close_range.h>
#include <linux/futex.h>
#include <poll.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>

#include "limits/cgroup.h"
#include "model/jsonc.h"
#include "sandbox/keeper.h"
#include "sandbox/spec.h"
#include "sandbox/term_filter.h"
#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/cpus.h"
#include "base/error.h"
#include "base/io.h"
#include "base/macro.h"
#include "base/phase.h"
#include "base/shared_child.h"
#include "base/sink.h"
#include "base/spawn.h"
#include "base/str.h"
#include "base/strbuf.h"
#include "base/strv.h"

int supervisor_parse_status(const char *line, long *child_pid, int *exit_code)
{
        _cleanup_json_ json_object *j = json_tokener_parse(line);
        if (!j || !json_object_is_type(j, json_type_object))
                return -EINVAL;
        json_object *v;
        if (json_object_object_get_ex(j, "child-pid", &v) && json_object_is_type(v, json_type_int))
                *child_pid = (long)json_object_get_int64(v);
        if (json_object_object_get_ex(j, "exit-code", &v) && json_object_is_type(v, json_type_int))
                *exit_code = json_object_get_int(v);
        return 0;
}

/* Lines read from a pipe, split on '\n'. */
struct line_reader {
        char buf[8192];
        size_t len;
};

/* Read what is there; call `line` for each complete line. Returns false at EOF or error. */
static bool read_lines(int fd, struct line_reader *lr, void (*line)(char *l, void *ud), void *ud)
{
        ssize_t n = read_retry(fd, lr->buf + lr->len, sizeof lr->buf - 1 - lr->len);
        if (n < 0)
                return n == -EAGAIN;
        if (n == 0) {
                if (lr->len) {
                        lr->buf[lr->len] = '\0';
                        line(lr->buf, ud);
                        lr->len = 0;
                }
                return false;
        }
        lr->len += (size_t)n;
        char *start = lr->buf, *nl;
        while ((nl = memchr(start, '\n', lr->len - (size_t)(start - lr->buf)))) {
                *nl = '\0';
                line(start, ud);
                start = nl + 1;
        }
        lr->len -= (size_t)(start - lr->buf);
        memmove(lr->buf, start, lr->len);
        if (lr->len == sizeof lr->buf - 1) { /* a line too long to be bwrap's: pass it on */
                lr->buf[lr->len] = '\0';
                line(lr->buf, ud);
                lr->len = 0;
        }
        return true;
}

/* A source of events: an fd and the handler it is given to when ready. */
struct supervisor;
enum source_life {
        WHILE_RUNNING, /* watched until the session is reaped */
        ALWAYS,        /* watched as long as the loop runs */
        TO_EOF,        /* read to its end: the loop waits for it */
};
struct source {
        int fd;
        short events; /* POLLIN, or POLLOUT */
        enum source_life life;
        bool ended;
        /* Called with poll's revents; returns false once the fd is at its end. */
        bool (*handle)(struct supervisor *sv, struct source *src, short revents);
        /* When set: is the source wanted now (e.g. a relay with room)? */
        bool (*wanted)(const struct supervisor *sv);
        void *ctx;
};

/* trialbox's stdin on its way to the session, through a buffer: a session
 * that does not read never blocks the loop. */
struct relay {
        char buf[16384];
        size_t len, off;
        bool ended; /* no more input: stdin at its end, or the session's side closed */
};

/* Room for the sources of today (signals, kill timer, bwrap's status and
 * stderr) and those to come (deadline, cgroup events, relayed streams), and
 * the caller's watches. */
#define SUPERVISOR_MAX_SOURCES 32
/* A signal again within this long of the one forwarded is the same request. */
#define SUPERVISOR_REPEAT_MS 500
/* Once the session is reaped, how long to wait for its pipes' last bytes. */
#define SUPERVISOR_LINGER_MS 100
/* Once it is reaped, how long a reader of trialbox's stdout or stderr may
 * take nothing before what it has not taken is dropped (and counted). */
#define SUPERVISOR_OUTPUT_STALL_MS 1000

/* What the session's child starts from, taken from the supervisor before
 * it starts: with bwrap the child is the keeper, which runs beside
 * trialbox in its memory (base/shared_child.h) while trialbox closes its
 * own ends of these fds, so it reads nothing the supervisor changes. */
struct child_start {
        const struct supervisor_run *run;
        char **argv;
        pid_t trialbox;
        int fds[7];       /* stdin, stdout, stderr, the exec's error, bwrap's status, block and block-hold */
        sigset_t blocked; /* trialbox's mask: the child's until the exec */
        cpu_set_t cpus;   /* trialbox's CPUs, when the keeper starts on others */
        bool narrowed;
        int *bwrap_pid; /* an early start's: bwrap's pid, posted by the keeper (keeper.h) */
        const struct shared_child *keeper; /* its spare stack is bwrap's process's (keeper.h) */
        bool gated;                        /* the keeper was started before this was filled (supervisor_prestart) */
};

/* A keeper started before its fds and its line exist (supervisor_prestart):
 * it waits at this gate, sharing trialbox's fd table, until `word` says
 * go (1: `cs` filled) or end (-1). */
struct keeper_gate {
        int word;
        int unshared; /* 1 once its fd table is its own copy (trialbox may close and open fds again) */
        pid_t trialbox;
        const struct child_start *cs;
};

struct supervisor {
        const struct supervisor_run *run;
        char **argv; /* run->argv, with bwrap's --block-fd */
        sigset_t old_mask;
        struct termios saved_termios;
        struct source *input_sink;
        long long forwarded_at; /* now_ms() when a signal was forwarded */
        struct source sources[SUPERVISOR_MAX_SOURCES];
        size_t n_sources;
        struct supervisor_seen seen;
        struct rusage rusage; /* the direct child's, once reaped */
        struct supervisor_watch hold_watch;
        pid_t pid; /* the direct child: the session, or bwrap's keeper */
        int sfd, timer, exec_r;
        int status_p[2], err_p[2];
        /* bwrap blocks on this pipe's one byte until the sandbox is set up:
         * once it is read, the session's program is being executed. */
        int block_p[2];
        /* The session's stdin and stdout: its ends (given to the child) and
         * trialbox's; with a terminal, one pty for both (master, slave). */
        int in_p[2], out_p[2], pty_master, pty_slave;
        int deadline;         /* a timerfd armed for --timeout, or -1 */
        bool masked;          /* old_mask holds the mask to restore */
        bool reaped;
        bool terminal;        /* the session has a pty; trialbox's terminal is raw */
        bool termios_saved;   /* saved_termios holds the terminal's settings to put back */
        bool output_mid_line; /* the session's stdout so far ends without a newline */
        /* trialbox's stdout and stderr, when each is a terminal: what of the
         * session's output may reach it (term_filter.h). To a file or a
         * pipe, the output is the record: relayed byte for byte. */
        bool filter_out, filter_err;
        struct term_filter out_filter, err_filter;
        /* trialbox's stdout and stderr, as the relays write them (sink.h). */
        struct sink out_sink, err_sink;
        /* run->hold: the session waits for it (held), then its byte is written (released). */
        bool held, released;
        bool byte_written; /* the session's --block-fd byte was written */
        /* Started early (supervisor_start_early): its line, bwrap's pid
         * (posted by the keeper), the write end of bwrap's --args pipe and
         * the read end it keeps until the keeper is cloned, the exec pipe's
         * write end, the number of the command's words. */
        struct supervisor_run early_run;
        struct strv early_argv;
        char *early_envp[1];
        int bwrap_pid;
        int args_w, args_r, exec_w;
        size_t early_command;
        /* Then, in this order: a keeper started before the rest
         * (supervisor_prestart) keeps them in place (supervisor_init). */
        struct child_start child;   /* what it started from: read by the keeper until bwrap's exec */
        struct keeper_gate gate;    /* a prestarted keeper's (gate.trialbox set), else zero */
        struct shared_child keeper; /* with bwrap: the keeper, in trialbox's memory */
        /* Last, the buffers (32 KiB of the struct's 36): never cleared, only
         * their lengths (supervisor_init), so that a page of them is made
         * only when it is written (a Trial's first touch of a page cost 1.2
         * to 1.8 us here; most Trials write a few hundred bytes of them). */
        struct relay input;
        struct line_reader status_lines, err_lines;
};

static void on_status(char *l, void *ud)
{
        TB_PHASE("status_line");
        struct supervisor_seen *seen = ud;
        if (*l)
                supervisor_parse_status(l, &seen->child_pid, &seen->exit_code);
}

/* Relay `n` bytes of the session's output to one of trialbox's own
 * streams (`to`: never blocking, what its reader does not take held up to
 * a bound, the rest dropped and counted): through `filter` when that is a
 * terminal. Returns the last byte passed on, or -1. */
static int relay(struct sink *to, const char *buf, size_t n, struct term_filter *filter)
{
        if (!filter) {
                sink_write(to, buf, n);
                return n ? (unsigned char)buf[n - 1] : -1;
        }
        char out[TERM_FILTER_OUT_MAX(16384)];
        int last = -1;
        for (size_t off = 0; off < n;) { /* in slices the buffer holds */
                size_t k = n - off < 16384 ? n - off : 16384;
                size_t m = term_filter_feed(filter, buf + off, k, out);
                sink_write(to, out, m);
                if (m)
                        last = (unsigned char)out[m - 1];
                off += k;
        }
        return last;
}

static void on_stderr(char *l, void *ud)
{
        struct supervisor *sv = ud;
        /* Relay the session's stderr as it comes; keep bwrap's own message
         * for the Outcome when the sandbox does not come up. */
        size_t n = strlen(l);
        l[n] = '\n';
        relay(&sv->err_sink, l, n + 1, sv->filter_err ? &sv->err_filter : NULL);
        l[n] = '\0';
        if (str_has_prefix(l, "bwrap: "))
                snprintf(sv->seen.bwrap_msg, sizeof sv->seen.bwrap_msg, "%s", l);
}

/* Mark every fd from `from` on close-on-exec, but `keep` (itself cloexec). */
static void close_inherited_fds(int from, int keep)
{
        if (close_range((unsigned)from, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
                return;
        /* Older kernels: walk the open fds. */
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        while (d && (e = readdir(d))) {
                int fd = atoi(e->d_name);
                if (fd >= from && fd != keep && fd != dirfd(d))
                        fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
        if (d)
                closedir(d);
}

/* In the child: move each fds[i] to targets[i], whatever numbers they had
 * (one may sit where another must go), all without close-on-exec. */
static int place_fds(int *fds, const int *targets, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 64);
                if (fds[i] < 0)
                        return -1;
        }
        for (size_t i = 0; i < n; i++)
                if (dup2(fds[i], targets[i]) < 0)
                        return -1;
        return 0;
}

static void child_start_init(struct child_start *cs, const struct supervisor *sv, int exec_err_w)
{
        bool pty = sv->pty_slave >= 0;
        *cs = (struct child_start){ .run = sv->run,
                                    .argv = sv->argv,
                                    .trialbox = getpid(),
                                    .fds = { pty ? sv->pty_slave : sv->in_p[0], pty ? sv->pty_slave : sv->out_p[1],
                                             sv->err_p[1], exec_err_w, sv->status_p[1], sv->block_p[0],
                                             sv->block_p[1] } };
        sigprocmask(SIG_SETMASK, NULL, &cs->blocked);
}

/* In the child: put the fds where the program expects them and exec it
 * (bwrap: through its keeper, in a process group of its own). With bwrap
 * this runs in the keeper, on trialbox's memory (base/shared_child.h):
 * its locals and system calls only. */
static void TB_NO_ASAN __attribute__((noreturn)) exec_child(const struct child_start *cs)
{
        const struct supervisor_run *run = cs->run;
        int fds[TB_ARRAY_SIZE(cs->fds)];
        memcpy(fds, cs->fds, sizeof fds);
        const int targets[] = { STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO, KEEPER_EXEC_ERR_FD, SANDBOX_STATUS_FD,
                                KEEPER_BLOCK_FD, KEEPER_BLOCK_HOLD_FD };
        _Static_assert(TB_ARRAY_SIZE(targets) == TB_ARRAY_SIZE(fds), "a target for each fd");
        int exec_err_w = fds[3], e;
        /* Every disposition back to default (a SIGINT or SIGQUIT ignored by
         * a background shell is not passed on); the mask stays as the
         * supervisor blocked it until the session's exec, which gets an
         * empty one (bwrap's, through the keeper). Its own process group: a
         * signal for trialbox's group (Ctrl-C, timeout(1), a runner's
         * killpg) reaches trialbox alone, which forwards it. A keeper
         * started at a gate did both before it (keeper_at_gate). */
        if (cs->gated) {
                sigprocmask(SIG_SETMASK, &cs->blocked, NULL);
        } else {
                spawn_reset_signals(&cs->blocked);
                if (setpgid(0, 0) < 0)
                        goto fail;
        }
        /* Into the Trial's cgroup before anything of the session exists. */
        if (run->cgroup && (e = cgroup_attach_self(run->cgroup)) < 0) {
                errno = -e;
                goto fail;
        }
        if (place_fds(fds, targets, run->bwrap ? TB_ARRAY_SIZE(fds) : 4) < 0 ||
            fcntl(KEEPER_EXEC_ERR_FD, F_SETFD, FD_CLOEXEC) < 0 ||
            (run->bwrap && fcntl(KEEPER_BLOCK_HOLD_FD, F_SETFD, FD_CLOEXEC) < 0))
                goto fail;
        exec_err_w = KEEPER_EXEC_ERR_FD;
        if (run->bwrap)
                /* Only what bwrap needs crosses: no fd trialbox inherited
                 * from whoever started it (bwrap passes them all on). */
                keeper_run(cs->argv, run->envp, cs->trialbox, exec_err_w, run->user, run->cow,
                           cs->narrowed ? &cs->cpus : NULL, cs->bwrap_pid, cs->keeper ? cs->keeper->spare_top : NULL);
        /* Not trialbox's own mask, whatever its starter blocked: a session
         * must get the signals trialbox forwards. */
        spawn_reset_signals(NULL);
        if (run->cwd && chdir(run->cwd) < 0)
                goto fail;
        close_inherited_fds(STDERR_FILENO + 1, exec_err_w);
        execve(cs->argv[0], cs->argv, run->envp);
fail:
        e = errno;
        if (write(exec_err_w, &e, sizeof e) < 0) {
        }
        _exit(127);
}

/* The keeper's start (shared_child_start's function). */
static int TB_NO_ASAN keeper_child(void *arg) { exec_child(arg); }

/* How long a keeper at its gate looks at the word before it sleeps on it:
 * trialbox's checks and its pipes take some 0.2 to 0.4 ms here, and a
 * sleeper on an idle CPU is woken some 0.05 ms after it is told. */
#define KEEPER_GATE_SPIN_US 2000

/* How long trialbox looks at the word that says a keeper let through its
 * gate has its own fd table (it copies it on its CPU in some microseconds)
 * before it sleeps on it: asleep and woken, trialbox went on 0.02 to 0.03 ms
 * later here (the TB_PHASE marks of bench/phases.sh's build, 80 Trials each
 * way, twice). */
#define KEEPER_UNSHARE_SPIN_US 200

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* Look at `word` (pause between looks) while it is 0, for `us` µs at most:
 * for a word another CPU sets within microseconds, where a sleeper would
 * be woken tens of microseconds late. The caller sleeps on it after. */
static void spin_while_zero(const int *word, long long us)
{
        const long long until = now_us() + us;
        while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == 0 && now_us() < until)
                cpu_relax();
}

/* A keeper started early (supervisor_prestart), on a CPU of its own, while
 * trialbox checks the request and makes bwrap's pipes: what needs none of
 * them is done first (the dispositions, its process group, its
 * parent-death signal), then it waits at its gate, looking at the word
 * (pause) for up to KEEPER_GATE_SPIN_US, then asleep on it. On go, a fd
 * table of its own (a copy of trialbox's, as a clone without CLONE_FILES
 * makes), then on as any keeper (exec_child). On end, or when trialbox is
 * gone, it ends, having started nothing. */
static int TB_NO_ASAN keeper_at_gate(void *arg)
{
        struct keeper_gate *g = arg;
        sigset_t now;
        sigprocmask(SIG_SETMASK, NULL, &now);
        spawn_reset_signals(&now);
        if (setpgid(0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != g->trialbox)
                _exit(127);
        int w;
        spin_while_zero(&g->word, KEEPER_GATE_SPIN_US);
        while ((w = __atomic_load_n(&g->word, __ATOMIC_ACQUIRE)) == 0)
                (void)syscall(SYS_futex, &g->word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
        if (w < 0)
                _exit(0);
        int e = unshare(CLONE_FILES) < 0 ? errno : 0;
        shared_child_post(&g->unshared, 1);
        if (e) {
                if (write(g->cs->fds[3], &e, sizeof e) < 0) {
                }
                _exit(127);
        }
        exec_child(g->cs);
}

/* The signal trialbox knows ended the session, or 0; `code` is what was
 * reported (bwrap's exit-code, or the keeper's own status), -1 for none. */
static int known_signal(const struct supervisor_seen *seen, int code)
{
        /* The deadline's SIGTERM is a signal trialbox sent, as a forwarded one. */
        int sent = seen->forwarded ? seen->forwarded : seen->timed_out ? SIGTERM : 0;
        bool killed = seen->killed || seen->killed_after_grace;
        if (!seen->bwrap && WIFSIGNALED(seen->wait_status))
                return WTERMSIG(seen->wait_status);
        if (code < 0) /* bwrap ended without reporting the session's end */
                return killed ? SIGKILL
                       : sent ? sent
                       : WIFSIGNALED(seen->wait_status) ? WTERMSIG(seen->wait_status)
                                                        : 0;
        if (killed && code == 128 + SIGKILL)
                return SIGKILL;
        if (sent && code == 128 + sent)
                return sent;
        return 0;
}

/* The limits' part of the result: copied as seen. */
static void limits_result(const struct supervisor_seen *seen, struct session_result *res)
{
        res->timed_out = seen->timed_out;
        res->timeout_ms = seen->timeout_ms;
        res->killed_after_grace = seen->killed_after_grace;
        res->kill_after_ms = seen->kill_after_ms;
        res->oom_kills = seen->oom_kills;
        res->memory_bytes = seen->memory_bytes;
}

void supervisor_result(const struct supervisor_seen *seen, struct session_result *res)
{
        memset(res, 0, sizeof *res);
        res->interrupted = seen->interrupted;
        res->dropped_stdout = seen->dropped_stdout;
        res->dropped_stderr = seen->dropped_stderr;
        if (seen->before_start) {
                res->void_cause = CAUSE_INTERRUPTED;
                snprintf(res->detail, sizeof res->detail, "it was never started");
                return;
        }
        if (seen->exec_errno) {
                res->void_cause = seen->bwrap ? CAUSE_SANDBOX_UNAVAILABLE : CAUSE_SESSION_UNAVAILABLE;
                snprintf(res->detail, sizeof res->detail, "cannot execute '%s': %s", seen->program,
                         strerror(seen->exec_errno));
                return;
        }
        if (seen->bwrap && !seen->setup_done) {
                /* The session's program never ran: every line on bwrap's
                 * stderr is bwrap's own. */
                res->void_cause = seen->interrupted ? CAUSE_INTERRUPTED : CAUSE_SANDBOX_UNAVAILABLE;
                if (seen->hold_msg[0])
                        snprintf(res->detail, sizeof res->detail, "%s", seen->hold_msg);
                else if (seen->bwrap_msg[0])
                        snprintf(res->detail, sizeof res->detail, "%s", seen->bwrap_msg);
                else if (WIFSIGNALED(seen->wait_status))
                        snprintf(res->detail, sizeof res->detail,
                                 "bwrap was killed by signal %d before the session started",
                                 WTERMSIG(seen->wait_status));
                else
                        snprintf(res->detail, sizeof res->detail,
                                 "bwrap exited with status %d before the session started",
                                 WEXITSTATUS(seen->wait_status));
                return;
        }
        res->started = true;
        limits_result(seen, res);
        int code = seen->bwrap ? seen->exit_code : -1;
        if (!seen->bwrap && WIFEXITED(seen->wait_status))
                code = WEXITSTATUS(seen->wait_status);
        res->signal = known_signal(seen, code);
        if (res->signal == 0)
                res->exit_code = code >= 0 ? code : WEXITSTATUS(seen->wait_status);
}

/* The parent of `pid` (/proc/PID/stat), or -1. */
static pid_t process_parent(pid_t pid)
{
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        const char *paren = strrchr(buf, ')');
        int ppid;
        return paren && sscanf(paren + 1, " %*c %d", &ppid) == 1 ? (pid_t)ppid : -1;
}

/* The one place that decides which process receives a signal meant for the
 * session: unsandboxed, the session's own process group; once bwrap has
 * reported its child, the session's process group (SIGKILL: the sandbox's
 * pid 1, and the namespace dies with it); before that, and once bwrap has
 * reported the child's end (bwrap reaped it: its pid may be another
 * process's by now), the keeper, which stops bwrap (SIGKILL: it kills
 * everything under it). */
static void signal_session(struct supervisor *sv, int sig)
{
        pid_t child = (pid_t)sv->seen.child_pid;
        if (!sv->run->bwrap)
                kill(-sv->pid, sig);
        else if (child > 0 && sv->seen.exit_code < 0)
                kill(sig == SIGKILL ? child : -child, sig);
        else
                kill(sv->pid, sig == SIGKILL ? KEEPER_KILL_ALL : sig);
}

/* Arm the kill timer to fire after `ms` (0: at once). */
static void arm_kill_timer(struct supervisor *sv, long long ms)
{
        struct itimerspec its = { .it_value = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 } };
        if (ms <= 0)
                its.it_value.tv_nsec = 1; /* zero would disarm it */
        timerfd_settime(sv->timer, 0, &its, NULL);
}

static void reap(struct supervisor *sv)
{
        if (!sv->reaped && wait4(sv->pid, &sv->seen.wait_status, WNOHANG, &sv->rusage) == sv->pid)
                sv->reaped = true;
}

/* The terminal's size, given to the session's pty. */
static void copy_window_size(const struct supervisor *sv)
{
        struct winsize ws;
        if (sv->pty_master >= 0 && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
                ioctl(sv->pty_master, TIOCSWINSZ, &ws);
}

/* A signal for trialbox: forward the first, hurry the end on the second. */
static void handle_signal(struct supervisor *sv, int sig)
{
        if (sig == SIGCHLD) {
                reap(sv);
                return;
        }
        if (sig == SIGPIPE) /* a relay's reader is gone: its write said so */
                return;
        if (sig == SIGWINCH) {
                copy_window_size(sv);
                return;
        }
        if (sv->reaped)
                return;
        if (sv->seen.forwarded) {
                /* Asked again: no more waiting. But timeout(1) signals its
                 * child, then its whole group: one request, sent twice. */
                if (now_ms() - sv->forwarded_at >= SUPERVISOR_REPEAT_MS)
                        arm_kill_timer(sv, 0);
                return;
        }
        sv->seen.forwarded = sig;
        if (!sv->seen.timed_out) /* a Trial already past its deadline has failed: that stands */
                sv->seen.interrupted = sig;
        sv->forwarded_at = now_ms();
        if (!sv->seen.timed_out) /* past the deadline, --kill-after's timer runs already */
                arm_kill_timer(sv, SUPERVISOR_KILL_GRACE_MS);
        signal_session(sv, sig);
}

static bool on_signalfd(struct supervisor *sv, struct source *src, short revents)
{
        struct signalfd_siginfo si;
        if (revents & POLLIN)
                while (read(src->fd, &si, sizeof si) == (ssize_t)sizeof si)
                        handle_signal(sv, (int)si.ssi_signo);
        return true;
}

/* With a cgroup: `sig` to each of its processes but the keeper and (for
 * any signal but SIGKILL) bwrap, the keeper's child, which stay to report
 * the session's end; SIGKILL leaves the keeper alone to reap everything. */
static void signal_cgroup(struct supervisor *sv, int sig)
{
        if (!sv->run->cgroup)
                return;
        _cleanup_free_ pid_t *pids = NULL;
        int n = cgroup_pids(sv->run->cgroup, &pids);
        for (int i = 0; i < n; i++) {
                if (sv->run->bwrap && pids[i] == sv->pid)
                        continue;
                if (sv->run->bwrap && sig != SIGKILL && process_parent(pids[i]) == sv->pid)
                        continue;
                kill(pids[i], sig);
        }
}

/* The grace after a forwarded signal (or the deadline) is over: end all of the session. */
static bool on_kill_timer(struct supervisor *sv, struct source *src, short revents)
{
        uint64_t expirations;
        if (!(revents & POLLIN) || read(src->fd, &expirations, sizeof expirations) != (ssize_t)sizeof expirations)
                return true;
        if (!sv->reaped && !sv->seen.killed && !sv->seen.killed_after_grace) {
                if (sv->seen.timed_out)
                        sv->seen.killed_after_grace = true;
                else
                        sv->seen.killed = true;
                signal_cgroup(sv, SIGKILL);
                signal_session(sv, SIGKILL);
        }
        return true;
}

/* The deadline (--timeout): SIGTERM to every process of the session, then
 * SIGKILL after --kill-after. */
static bool on_deadline(struct supervisor *sv, struct source *src, short revents)
{
        uint64_t expirations;
        if (!(revents & POLLIN) || read(src->fd, &expirations, sizeof expirations) != (ssize_t)sizeof expirations)
                return true;
        if (sv->reaped || sv->seen.timed_out)
                return true;
        sv->seen.timed_out = true;
        if (!sv->seen.forwarded) {
                arm_kill_timer(sv, sv->run->kill_after_ms);
                signal_cgroup(sv, SIGTERM);
                signal_session(sv, SIGTERM);
        }
        return true;
}

/* The cgroup's OOM killer acted: count it (the Outcome's cause, if the
 * session then fails). */
static bool on_oom(struct supervisor *sv, struct source *src, short revents)
{
        (void)src;
        if (revents & POLLIN) {
                long long n = cgroup_oom_event(sv->run->cgroup);
                if (n > sv->seen.oom_kills)
                        sv->seen.oom_kills = n;
        }
        return true;
}
static void release_session(struct supervisor *sv);

static bool on_status_fd(struct supervisor *sv, struct source *src, short revents)
{
        (void)revents;
        bool more = read_lines(src->fd, &sv->status_lines, on_status, &sv->seen);
        release_session(sv);
        return more;
}

static bool on_bwrap_stderr(struct supervisor *sv, struct source *src, short revents)
{
        (void)revents;
        return read_lines(src->fd, &sv->err_lines, on_stderr, sv);
}

static bool on_watch(struct supervisor *sv, struct source *src, short revents)
{
        (void)sv;
        const struct supervisor_watch *w = src->ctx;
        if (revents & POLLIN)
                w->ready(w->ctx);
        return true;
}

/* The session's stdout (a pipe, or the pty's master): relayed to trialbox's
 * own, which the session never holds. */
static bool on_session_stdout(struct supervisor *sv, struct source *src, short revents)
{
        (void)revents;
        char buf[65536];
        ssize_t n = read_retry(src->fd, buf, sizeof buf);
        if (n < 0)
                return n == -EAGAIN; /* EIO: the pty's last slave is closed */
        if (n == 0)
                return false;
        int last = relay(&sv->out_sink, buf, (size_t)n, sv->filter_out ? &sv->out_filter : NULL);
        if (last >= 0)
                sv->output_mid_line = last != '\n';
        return true;
}

/* No more input for the session: a pipe is closed so that it reads EOF. */
static void input_end(struct supervisor *sv)
{
        sv->input.ended = true;
        sv->input.len = sv->input.off = 0;
        if (sv->in_p[1] >= 0) {
                sv->input_sink->ended = true;
                tb_closep(&sv->in_p[1]);
        }
}

/* Write what the buffer holds to the session, as much as it takes now. */
static void input_flush(struct supervisor *sv)
{
        struct relay *in = &sv->input;
        while (in->off < in->len) {
                ssize_t w = write_retry(sv->input_sink->fd, in->buf + in->off, in->len - in->off);
                if (w == -EAGAIN)
                        return;
                if (w <= 0) { /* the session closed its stdin */
                        input_end(sv);
                        return;
                }
                in->off += (size_t)w;
        }
        in->len = in->off = 0;
        if (in->ended)
                input_end(sv);
}

static bool on_stdin(struct supervisor *sv, struct source *src, short revents)
{
        (void)revents;
        ssize_t n = read_retry(src->fd, sv->input.buf, sizeof sv->input.buf);
        if (n == -EAGAIN)
                return true;
        if (n <= 0) {
                sv->input.ended = true;
                if (sv->in_p[1] >= 0) /* a pty stays open: it is the session's stdout too */
                        input_end(sv);
                return false;
        }
        sv->input.len = (size_t)n;
        sv->input.off = 0;
        input_flush(sv);
        return true;
}

static bool on_stdin_sink(struct supervisor *sv, struct source *src, short revents)
{
        (void)revents;
        input_flush(sv);
        return !src->ended;
}

static bool input_empty(const struct supervisor *sv)
{
        return sv->input.len == 0;
}

static bool input_pending(const struct supervisor *sv)
{
        return sv->input.len > 0;
}

static struct source *add_source(struct supervisor *sv, int fd, enum source_life life,
                                 bool (*handle)(struct supervisor *, struct source *, short), void *ctx)
{
        if (sv->n_sources == SUPERVISOR_MAX_SOURCES)
                return NULL;
        struct source *src = &sv->sources[sv->n_sources++];
        *src = (struct source){ .fd = fd, .events = POLLIN, .life = life, .handle = handle, .ctx = ctx };
        return src;
}

/* Write the byte bwrap waits for on its --block-fd: from here the session's
 * program may run. 0 or a negative errno with `err`. */
static int let_session_start(struct supervisor *sv, struct tb_error *err)
{
        if (write(sv->block_p[1], "", 1) != 1)
                return tb_fail(err, -errno, "letting the session start: %s", strerror(errno));
        tb_closep(&sv->block_p[1]);
        sv->byte_written = true;
        return 0;
}

/* run->hold: once bwrap has reported the sandbox's pid, ask hold() and
 * write the session's byte, or end the sandbox before the session runs. */
static void release_session(struct supervisor *sv)
{
        if (!sv->held || sv->seen.child_pid <= 0)
                return;
        sv->held = false;
        struct tb_error e = { 0 };
        sv->hold_watch = (struct supervisor_watch){ .fd = -1 };
        int r = sv->run->hold((pid_t)sv->seen.child_pid, &sv->hold_watch, sv->run->hold_ctx, &e);
        if (r == 0 && sv->hold_watch.fd >= 0 &&
            !add_source(sv, sv->hold_watch.fd, WHILE_RUNNING, on_watch, &sv->hold_watch))
                r = tb_fail(&e, -E2BIG, "the supervisor watches at most %d fds", SUPERVISOR_MAX_SOURCES);
        if (r == 0)
                r = let_session_start(sv, &e);
        if (r == 0) {
                sv->released = true;
                return;
        }
        snprintf(sv->seen.hold_msg, sizeof sv->seen.hold_msg, "%.500s", e.msg[0] ? e.msg : strerror(-r));
        signal_session(sv, SIGKILL); /* its byte never comes: bwrap would go on at EOF */
}

static bool source_watched(const struct supervisor *sv, const struct source *src)
{
        return !src->ended && !(src->life == WHILE_RUNNING && sv->reaped) && (!src->wanted || src->wanted(sv));
}

static bool draining(const struct supervisor *sv)
{
        for (size_t i = 0; i < sv->n_sources; i++)
                if (sv->sources[i].life == TO_EOF && !sv->sources[i].ended)
                        return true;
        return false;
}

/* trialbox's stdin is the terminal it runs in the foreground of: its
 * settings are put back after the session (supervisor_done()). When stdout
 * is a terminal too, the session gets a pty of trialbox's with the
 * terminal's settings and size, and the terminal is made raw (but for the
 * signal keys, which stay trialbox's to forward). */
static int open_terminal(struct supervisor *sv, struct tb_error *err)
{
        if (!isatty(STDIN_FILENO) || tcgetpgrp(STDIN_FILENO) != getpgrp() ||
            tcgetattr(STDIN_FILENO, &sv->saved_termios) < 0)
                return 0;
        sv->termios_saved = true;
        if (!isatty(STDOUT_FILENO)) /* output kept in a file: plain pipes, plain newlines */
                return 0;
        struct winsize ws;
        bool sized = ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0;
        if (openpty(&sv->pty_master, &sv->pty_slave, NULL, &sv->saved_termios, sized ? &ws : NULL) < 0)
                return tb_fail(err, -errno, "opening a pty for the session: %s", strerror(errno));
        if (fcntl(sv->pty_master, F_SETFD, FD_CLOEXEC) < 0 || fcntl(sv->pty_slave, F_SETFD, FD_CLOEXEC) < 0 ||
            fcntl(sv->pty_master, F_SETFL, O_NONBLOCK) < 0)
                return tb_fail(err, -errno, "setting up the session's pty: %s", strerror(errno));
        struct termios raw = sv->saved_termios;
        cfmakeraw(&raw);
        raw.c_lflag |= ISIG; /* Ctrl-C: SIGINT to trialbox, which forwards it */
        /* Ctrl-Z and Ctrl-\ go to the session as bytes: as signals they would
         * stop or kill trialbox, not the session in its own group. */
        raw.c_cc[VSUSP] = _POSIX_VDISABLE;
        raw.c_cc[VQUIT] = _POSIX_VDISABLE;
        raw.c_oflag |= OPOST; /* trialbox's own messages still start their lines */
        if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) < 0)
                return tb_fail(err, -errno, "setting the terminal up: %s", strerror(errno));
        sv->terminal = true;
        return 0;
}

static bool on_sink(struct supervisor *sv, struct source *src, short revents)
{
        (void)sv;
        (void)revents;
        sink_flush(src->ctx);
        return true;
}

static bool out_pending(const struct supervisor *sv) { return sink_pending(&sv->out_sink); }
static bool err_pending(const struct supervisor *sv) { return sink_pending(&sv->err_sink); }

/* trialbox's stdout and stderr as the relays write them: each a source
 * that takes POLLOUT while its reader is behind. */
static int open_sinks(struct supervisor *sv, struct tb_error *err)
{
        sink_init(&sv->out_sink, STDOUT_FILENO, SINK_DEFAULT_MAX);
        sink_init(&sv->err_sink, STDERR_FILENO, SINK_DEFAULT_MAX);
        struct sink *sinks[] = { &sv->out_sink, &sv->err_sink };
        bool (*pending[])(const struct supervisor *) = { out_pending, err_pending };
        for (size_t i = 0; i < TB_ARRAY_SIZE(sinks); i++) {
                if (sink_fd(sinks[i]) < 0)
                        continue;
                struct source *src = add_source(sv, sink_fd(sinks[i]), ALWAYS, on_sink, sinks[i]);
                if (!src)
                        return tb_fail(err, -E2BIG, "the supervisor watches at most %d fds", SUPERVISOR_MAX_SOURCES);
                src->events = POLLOUT;
                src->wanted = pending[i];
        }
        return 0;
}

/* The session's standard streams: a pty when on a terminal, else pipes for
 * stdin and stdout (its stderr is bwrap's pipe); each relayed by a source. */
static int open_streams(struct supervisor *sv, struct tb_error *err)
{
        int r = open_terminal(sv, err);
        if (r == 0)
                r = open_sinks(sv, err);
        if (r < 0)
                return r;
        sv->filter_out = isatty(STDOUT_FILENO);
        sv->filter_err = isatty(STDERR_FILENO);
        term_filter_init(&sv->out_filter);
        term_filter_init(&sv->err_filter);
        if (!sv->terminal && (pipe2(sv->in_p, O_CLOEXEC) < 0 || pipe2(sv->out_p, O_CLOEXEC) < 0 ||
                              fcntl(sv->in_p[1], F_SETFL, O_NONBLOCK) < 0))
                return tb_fail(err, -errno, "making the session's pipes: %s", strerror(errno));
        int to_session = sv->terminal ? sv->pty_master : sv->in_p[1];
        int from_session = sv->terminal ? sv->pty_master : sv->out_p[0];
        struct source *in = add_source(sv, STDIN_FILENO, WHILE_RUNNING, on_stdin, NULL);
        sv->input_sink = add_source(sv, to_session, WHILE_RUNNING, on_stdin_sink, NULL);
        if (!in || !sv->input_sink || !add_source(sv, from_session, TO_EOF, on_session_stdout, NULL))
                return tb_fail(err, -E2BIG, "the supervisor watches at most %d fds", SUPERVISOR_MAX_SOURCES);
        in->wanted = input_empty;
        sv->input_sink->events = POLLOUT;
        sv->input_sink->wanted = input_pending;
        if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) != getpgrp()) {
                /* A terminal trialbox runs in the background of: reading it
                 * would stop trialbox (SIGTTIN). The session reads EOF. */
                in->ended = true;
                input_end(sv);
        }
        return 0;
}

/* bwrap's argv with "--block-fd KEEPER_BLOCK_FD" after argv[0]. */
static char **argv_with_block_fd(char **argv)
{
        size_t n = 0;
        while (argv[n])
                n++;
        char **v = xmalloc((n + 3) * sizeof *v);
        v[0] = argv[0];
        v[1] = "--block-fd";
        v[2] = KEEPER_BLOCK_FD_STR;
        memcpy(v + 3, argv + 1, n * sizeof *v); /* with the final NULL */
        return v;
}

/* The limits' event sources: the deadline's timer (armed once the child
 * is forked: start_deadline) and the cgroup's OOM events. */
static int add_limit_sources(struct supervisor *sv, struct tb_error *err)
{
        const struct supervisor_run *run = sv->run;
        if (run->timeout_ms > 0) {
                sv->deadline = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
                if (sv->deadline < 0)
                        return tb_fail(err, -errno, "setting up the deadline timer: %s", strerror(errno));
                if (!add_source(sv, sv->deadline, WHILE_RUNNING, on_deadline, NULL))
                        return tb_fail(err, -E2BIG, "the supervisor watches at most %d fds", SUPERVISOR_MAX_SOURCES);
        }
        if (run->cgroup && cgroup_oom_fd(run->cgroup) >= 0 &&
            !add_source(sv, cgroup_oom_fd(run->cgroup), WHILE_RUNNING, on_oom, NULL))
                return tb_fail(err, -E2BIG, "the supervisor watches at most %d fds", SUPERVISOR_MAX_SOURCES);
        return 0;
}

static void start_deadline(struct supervisor *sv)
{
        long long ms = sv->run->timeout_ms;
        if (sv->deadline < 0)
                return;
        struct itimerspec its = { .it_value = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 } };
        timerfd_settime(sv->deadline, 0, &its, NULL);
}

static void supervisor_init(struct supervisor *sv, const struct supervisor_run *run, bool prestarted)
{
        /* A prestarted keeper's gate and memory stay where it reads them;
         * the buffers are not cleared (see struct supervisor). */
        memset(sv, 0, prestarted ? offsetof(struct supervisor, child) : offsetof(struct supervisor, input));
        sv->run = run;
        sv->argv = run->argv;
        sv->sfd = sv->timer = sv->exec_r = -1;
        sv->status_p[0] = sv->status_p[1] = sv->err_p[0] = sv->err_p[1] = -1;
        sv->block_p[0] = sv->block_p[1] = sv->in_p[0] = sv->in_p[1] = sv->out_p[0] = sv->out_p[1] = -1;
        sv->pty_master = sv->pty_slave = -1;
        sv->out_sink.fd = sv->out_sink.own_fd = sv->err_sink.fd = sv->err_sink.own_fd = -1;
        sv->deadline = sv->args_w = sv->args_r = sv->exec_w = -1;
        sv->seen.bwrap = run->bwrap;
        sv->seen.program = run->argv[0];
        sv->seen.exit_code = -1;
        sv->seen.timeout_ms = run->timeout_ms;
        sv->seen.kill_after_ms = run->kill_after_ms;
        sv->seen.memory_bytes = run->memory_bytes;
        sv->input.len = sv->input.off = 0;
        sv->input.ended = false;
        sv->status_lines.len = sv->err_lines.len = 0;
}

/* Block the signals the loop takes from its signalfd; make that, the kill
 * timer and the pipes (exec_p: the exec's outcome); for bwrap, the argv
 * with its block fd, and the byte that lets it go unless it is held. */
static int supervisor_fds(struct supervisor *sv, int exec_p[2], struct tb_error *err)
{
        const struct supervisor_run *run = sv->run;
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGPIPE);
        sigaddset(&mask, SIGWINCH);
        if (sigprocmask(SIG_BLOCK, &mask, &sv->old_mask) < 0)
                return tb_fail(err, -errno, "blocking signals: %s", strerror(errno));
        sv->masked = true;
        sv->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        sv->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (sv->sfd < 0 || sv->timer < 0 || pipe2(exec_p, O_CLOEXEC) < 0 || pipe2(sv->err_p, O_CLOEXEC) < 0 ||
            (run->bwrap && (pipe2(sv->status_p, O_CLOEXEC) < 0 || pipe2(sv->block_p, O_CLOEXEC) < 0)))
                return tb_fail(err, -errno, "setting up the supervisor: %s", strerror(errno));
        sv->exec_r = exec_p[0];
        if (run->bwrap) {
                sv->argv = argv_with_block_fd(run->argv);
                /* With hold: the byte is written by release_session(); else
                 * once the keeper holds the pipe too, after before_start
                 * (supervisor_fork). */
                sv->held = run->hold != NULL;
        }
        return 0;
}

/* The session's streams and every event source the loop polls. */
static int supervisor_sources(struct supervisor *sv, struct tb_error *err)
{
        const struct supervisor_run *run = sv->run;
        int r = open_streams(sv, err);
        if (r == 0 && (!add_source(sv, sv->sfd, ALWAYS, on_signalfd, NULL) ||
                       !add_source(sv, sv->timer, WHILE_RUNNING, on_kill_timer, NULL) ||
                       !add_source(sv, sv->err_p[0], TO_EOF, on_bwrap_stderr, NULL) ||
                       (run->bwrap && !add_source(sv, sv->status_p[0], TO_EOF, on_status_fd, NULL))))
                r = tb_fail(err, -E2BIG, "the supervisor watches at most %d fds", SUPERVISOR_MAX_SOURCES);
        for (size_t i = 0; r == 0 && i < run->n_watches; i++)
                if (!add_source(sv, run->watches[i].fd, WHILE_RUNNING, on_watch, &run->watches[i]))
                        r = tb_fail(err, -E2BIG, "the supervisor watches at most %d fds", SUPERVISOR_MAX_SOURCES);
        if (r == 0)
                r = add_limit_sources(sv, err);
        return r;
}

/* The operator's signal already pending (it came while trialbox set the
 * Trial up: trial_run() blocks them from its start), taken from the
 * signalfd: the session is not started at all. Its number, or 0. */
static int take_pending_operator_signal(struct supervisor *sv)
{
        sigset_t pending;
        if (sigpending(&pending) < 0 ||
            !(sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM) || sigismember(&pending, SIGHUP)))
                return 0;
        struct signalfd_siginfo si;
        int sig = 0;
        while (read(sv->sfd, &si, sizeof si) == (ssize_t)sizeof si)
                if (!sig && (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP))
                        sig = (int)si.ssi_signo;
        return sig;
}

/* Start bwrap's keeper, in trialbox's memory (base/shared_child.h), on
 * another CPU than trialbox's own when one is free (`early`: whenever there
 * is another, cpus_other_free; else when one looks idle, cpus_other_idle):
 * left to the scheduler, a new thread or child waits on its parent's CPU
 * until the parent blocks, and trialbox has its own work to do first (the
 * guard's snapshot and the records; started early, the spec too). Seen
 * here: a forked keeper began 0.3 ms after the fork, 0.14 ms once moved;
 * the keeper's holder thread, left where it was, after the guard's
 * snapshot. With every CPU busy (a batch), it is left where it is. bwrap's
 * process gets every CPU back (keeper.c; started early, from trialbox:
 * send_options). `exec_w` stays open until the keeper is cloned
 * (keeper_go). 0, or a negative errno with `err`. */
static int keeper_start(struct supervisor *sv, int exec_w, bool early, struct tb_error *err)
{
        struct child_start *cs = &sv->child;
        if (sv->gate.trialbox) { /* waiting at its gate: its CPUs were chosen then */
                const cpu_set_t cpus = cs->cpus;
                const bool narrowed = cs->narrowed;
                child_start_init(cs, sv, exec_w);
                cs->cpus = cpus;
                cs->narrowed = narrowed;
                cs->bwrap_pid = &sv->bwrap_pid;
                cs->keeper = &sv->keeper;
                cs->gated = true;
                shared_child_post(&sv->gate.word, 1);
                /* Until it has its own copy of the fd table, this one is
                 * its too: no fd of it closed or made meanwhile. */
                spin_while_zero(&sv->gate.unshared, KEEPER_UNSHARE_SPIN_US);
                if (shared_child_wait_word(&sv->keeper, &sv->gate.unshared) != 1)
                        return tb_fail(err, -ECHILD, "starting the keeper: it ended at its start");
                TB_PHASE("forked");
                return 0;
        }
        child_start_init(cs, sv, exec_w);
        cpu_set_t others;
        cs->narrowed = early ? cpus_other_free(&cs->cpus, &others) : cpus_other_idle(&cs->cpus, &others);
        cs->bwrap_pid = early ? &sv->bwrap_pid : NULL;
        cs->keeper = &sv->keeper;
        int r = shared_child_start(&sv->keeper, keeper_child, cs, cs->narrowed ? &others : NULL, KEEPER_BWRAP_STACK, 0);
        if (r < 0)
                return tb_fail(err, r, "starting the keeper: %s", strerror(-r));
        TB_PHASE("forked");
        return 0;
}

/* With the keeper started: while bwrap sets the sandbox up, before_start
 * (the session waits on its byte); the keeper's pid; the byte, unless the
 * session is held. 0, or a negative errno with `err`. */
static int keeper_go(struct supervisor *sv, struct tb_error *err)
{
        const struct supervisor_run *run = sv->run;
        int r = 0;
        if (run->before_start)
                r = run->before_start(run->before_start_ctx, err);
        /* Nothing of the child's ends is closed before it is cloned
         * with them (the byte's pipe's write end included). */
        sv->pid = shared_child_pid(&sv->keeper);
        TB_PHASE("cloned");
        if (sv->pid < 0 && r == 0)
                r = tb_fail(err, sv->pid, "starting the keeper: %s", strerror(-sv->pid));
        if (r == 0 && !sv->held)
                r = let_session_start(sv, err);
        return r;
}

/* Once the session's process is started (sv->pid) or could not be (`r`
 * < 0): keep none of the child's ends; on a failure, end what was started
 * and return `r`; else start the deadline and wait for the exec's outcome
 * (its errno in seen.exec_errno, 0 when it ran). */
static int started(struct supervisor *sv, int *exec_w, int r)
{
        if (sv->pid > 0)
                setpgid(sv->pid, sv->pid); /* as the child does: whichever runs first */
        tb_closep(&sv->status_p[1]);
        tb_closep(&sv->err_p[1]);
        tb_closep(&sv->in_p[0]);
        tb_closep(&sv->out_p[1]);
        tb_closep(&sv->pty_slave);
        tb_closep(exec_w);
        tb_closep(&sv->args_r);
        if (r < 0) {
                if (sv->pid > 0) {
                        /* The keeper kills bwrap and all under it before the
                         * byte's pipe is closed: at EOF, bwrap would go on. */
                        signal_session(sv, SIGKILL);
                        if (wait4(sv->pid, &sv->seen.wait_status, 0, &sv->rusage) == sv->pid)
                                sv->reaped = true;
                }
                return r;
        }
        /* The session's time starts once trialbox's own work before it is
         * done: after before_start (the guard's snapshot, the records) and,
         * unless the session is held, its byte. A held session's deadline
         * runs while hold() is waited for, as it did before. */
        start_deadline(sv);

        ssize_t n = read_retry(sv->exec_r, &sv->seen.exec_errno, sizeof sv->seen.exec_errno);
        TB_PHASE("exec_read");
        if (n != (ssize_t)sizeof sv->seen.exec_errno)
                sv->seen.exec_errno = 0;
        return 0;
}

/* Start the session's process (with bwrap: the keeper, in trialbox's
 * memory; unsandboxed: a fork); keep none of the child's ends; wait for the
 * exec's outcome (its errno in seen.exec_errno, 0 when it ran). With the
 * operator's signal pending, nothing is started (seen.before_start). */
static int supervisor_fork(struct supervisor *sv, int exec_p[2], struct tb_error *err)
{
        int sig = take_pending_operator_signal(sv);
        if (sig) {
                sv->seen.forwarded = sv->seen.interrupted = sig;
                sv->seen.before_start = true;
                tb_closep(&exec_p[1]);
                return 0;
        }
        const struct supervisor_run *run = sv->run;
        int r;
        /* Unsandboxed, the session starts with the exec: before the fork. */
        if (run->before_start && !run->bwrap && (r = run->before_start(run->before_start_ctx, err)) < 0) {
                tb_closep(&exec_p[1]);
                return r;
        }
        if (run->bwrap) {
                r = keeper_start(sv, exec_p[1], false, err);
                if (r < 0) {
                        tb_closep(&exec_p[1]);
                        return r;
                }
                r = keeper_go(sv, err);
        } else {
                child_start_init(&sv->child, sv, exec_p[1]);
                r = 0;
                sv->pid = fork();
                if (sv->pid == 0)
                        exec_child(&sv->child);
                if (sv->pid < 0)
                        r = tb_fail(err, -errno, "fork: %s", strerror(errno));
                TB_PHASE("forked");
        }
        return started(sv, &exec_p[1], r);
}

/* Block the signals the loop takes from its signalfd; make the pipes and
 * the event sources; fork and exec; wait for the exec's outcome. */
static int supervisor_start(struct supervisor *sv, const struct supervisor_run *run, struct tb_error *err)
{
        int exec_p[2] = { -1, -1 };
        supervisor_init(sv, run, false);
        int r = supervisor_fds(sv, exec_p, err);
        TB_PHASE("sv_fds");
        if (r == 0)
                r = supervisor_sources(sv, err);
        TB_PHASE("sv_sources");
        if (r < 0) {
                tb_closep(&exec_p[1]);
                return r;
        }
        return supervisor_fork(sv, exec_p, err);
}

/* Until the session is reaped and its pipes are at their end, hand each
 * ready source to its handler. */
static int supervisor_loop(struct supervisor *sv, struct tb_error *err)
{
        while (!sv->reaped || draining(sv)) {
                struct pollfd pfd[SUPERVISOR_MAX_SOURCES];
                const size_t n = sv->n_sources; /* a handler may add sources: polled from the next round */
                for (size_t i = 0; i < n; i++)
                        pfd[i] = (struct pollfd){ .fd = source_watched(sv, &sv->sources[i]) ? sv->sources[i].fd : -1,
                                                  .events = sv->sources[i].events };
                int k = poll(pfd, n, sv->reaped ? SUPERVISOR_LINGER_MS : -1);
                if (k < 0 && errno != EINTR)
                        return tb_fail(err, -errno, "poll: %s", strerror(errno));
                if (k == 0) /* the session is gone; something still holds its pipes */
                        break;
                for (size_t i = 0; k > 0 && i < n; i++)
                        if (pfd[i].fd >= 0 && pfd[i].revents && !sv->sources[i].ended)
                                sv->sources[i].ended = !sv->sources[i].handle(sv, &sv->sources[i], pfd[i].revents);
                reap(sv);
        }
        /* The terminal state the session left changed (its alternate screen,
         * mouse reporting, a hidden cursor, ...) is put back. */
        char end[TERM_FILTER_END_MAX];
        if (sv->filter_out)
                sink_write(&sv->out_sink, end, term_filter_end(&sv->out_filter, end));
        if (sv->filter_err)
                sink_write(&sv->err_sink, end, term_filter_end(&sv->err_filter, end));
        /* What trialbox prints next (its --json line) starts a line of its own. */
        if (sv->output_mid_line)
                sink_write(&sv->out_sink, "\n", 1);
        /* What its readers have not taken yet, while they take it: a
         * reader that stopped is not waited for (the rest is counted). */
        sink_drain(&sv->out_sink, SUPERVISOR_OUTPUT_STALL_MS);
        sink_drain(&sv->err_sink, SUPERVISOR_OUTPUT_STALL_MS);
        sv->seen.dropped_stdout = (long long)sv->out_sink.dropped;
        sv->seen.dropped_stderr = (long long)sv->err_sink.dropped;
        /* Once bwrap took its byte, it had set the sandbox up and went on to
         * execute the session's program. */
        int unread = 1;
        sv->seen.setup_done = sv->run->bwrap && sv->byte_written && ioctl(sv->block_p[0], FIONREAD, &unread) == 0 && unread == 0;
        return 0;
}

/* A keeper still at its gate (supervisor_prestart) told to end, and reaped. */
static void gate_end(struct supervisor *sv)
{
        if (!sv->gate.trialbox || __atomic_load_n(&sv->gate.word, __ATOMIC_ACQUIRE) != 0)
                return;
        shared_child_post(&sv->gate.word, -1);
        pid_t pid = shared_child_pid(&sv->keeper);
        if (pid > 0)
                (void)waitpid(pid, NULL, 0);
}

static void supervisor_done(struct supervisor *sv)
{
        gate_end(sv);
        /* What is still pending was meant for a session that has ended (the
         * rest of a signal sent twice, a relay's SIGPIPE): not for trialbox,
         * which has its Outcome to write. */
        struct signalfd_siginfo si;
        while (sv->sfd >= 0 && read(sv->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        }
        int *fds[] = { &sv->status_p[0], &sv->status_p[1], &sv->err_p[0], &sv->err_p[1], &sv->block_p[0],
                       &sv->block_p[1], &sv->in_p[0], &sv->in_p[1], &sv->out_p[0], &sv->out_p[1],
                       &sv->pty_master, &sv->pty_slave, &sv->exec_r, &sv->timer, &sv->sfd, &sv->deadline };
        for (size_t i = 0; i < TB_ARRAY_SIZE(fds); i++)
                tb_closep(fds[i]);
        shared_child_done(&sv->keeper); /* reaped by now: its holder ends */
        if (sv->argv != sv->run->argv)
                free(sv->argv);
        tb_closep(&sv->args_w);
        tb_closep(&sv->args_r);
        tb_closep(&sv->exec_w);
        strv_done(&sv->early_argv);
        sink_done(&sv->out_sink);
        sink_done(&sv->err_sink);
        if (sv->termios_saved)
                tcsetattr(STDIN_FILENO, TCSADRAIN, &sv->saved_termios);
        if (sv->masked && !sv->run->hold_signals)
                sigprocmask(SIG_SETMASK, &sv->old_mask, NULL);
}

/* supervisor_done, and the memory of one supervisor_start_early made. */
static void supervisor_finish(struct supervisor *sv)
{
        bool early = sv->early_argv.v != NULL;
        supervisor_done(sv);
        if (early)
                free(sv);
}

struct supervisor *supervisor_prestart(void)
{
        /* Not when every CPU is busy with a Trial (a batch): a keeper
         * waiting, and looking at its gate, on a CPU idle this moment would
         * take it from the next Trial that needs it. */
        cpu_set_t all, others;
        if (!shared_child_shares_memory() || cpus_told_busy() || !cpus_others(&all, &others))
                return NULL;
        struct supervisor *sv = xmalloc(sizeof *sv);
        memset(sv, 0, offsetof(struct supervisor, input)); /* the buffers: supervisor_init */
        sv->child.cpus = all;
        sv->child.narrowed = true;
        sv->gate = (struct keeper_gate){ .trialbox = getpid(), .cs = &sv->child };
        /* Every signal blocked in the holder (it inherits the mask, and the
         * supervisor blocks SIGCHLD only later, in this thread): else the
         * keeper's end could be taken there, SIGCHLD's default ignoring
         * it, and never reach the supervisor's signalfd. */
        sigset_t all_signals, old;
        sigfillset(&all_signals);
        pthread_sigmask(SIG_SETMASK, &all_signals, &old);
        int r = shared_child_start(&sv->keeper, keeper_at_gate, &sv->gate, &others, KEEPER_BWRAP_STACK,
                                   SHARED_CHILD_FILES);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0) {
                free(sv);
                return NULL;
        }
        return sv;
}

void supervisor_prestart_cancel(struct supervisor *pre)
{
        if (!pre)
                return;
        gate_end(pre);
        shared_child_done(&pre->keeper);
        free(pre);
}

struct supervisor *supervisor_start_early(const struct supervisor_early *e, struct supervisor *pre,
                                          struct tb_error *err)
{
        struct supervisor *sv = pre ? pre : xmalloc(sizeof *sv);
        int p[2] = { -1, -1 }, exec_p[2] = { -1, -1 };
        int rd = -1;
        if (pipe2(p, O_CLOEXEC) < 0 || (rd = fcntl(p[0], F_DUPFD_CLOEXEC, SANDBOX_FILTER_FD_MIN)) < 0) {
                int r = tb_fail(err, -errno, "making bwrap's options pipe: %s", strerror(errno));
                tb_closep(&p[0]);
                tb_closep(&p[1]);
                if (pre)
                        supervisor_prestart_cancel(pre);
                else
                        free(sv);
                errno = -r;
                return NULL;
        }
        tb_closep(&p[0]);
        /* bwrap's line: the filter's fd, the options' fd, the command. The
         * supervisor puts its --block-fd pair first (supervisor_fds). */
        struct strv argv = { 0 };
        strv_add(&argv, e->bwrap);
        strv_add(&argv, "--seccomp");
        strv_addf(&argv, "%d", e->seccomp_fd);
        strv_add(&argv, "--args");
        strv_addf(&argv, "%d", rd);
        strv_add(&argv, "--");
        size_t n = 0;
        for (; e->command[n]; n++)
                strv_add(&argv, e->command[n]);
        const struct supervisor_run run = {
                .argv = argv.v,
                .envp = sv->early_envp,
                .bwrap = true,
                .user = e->user,
                .cgroup = e->cgroup,
                .hold_signals = true,
        };
        supervisor_init(sv, &run, pre != NULL);
        sv->early_run = run;
        sv->run = &sv->early_run;
        sv->early_envp[0] = NULL;
        sv->early_argv = argv;
        sv->early_command = n;
        sv->args_w = p[1];
        sv->args_r = rd;
        int r = supervisor_fds(sv, exec_p, err);
        if (r == 0)
                r = supervisor_sources(sv, err);
        if (r == 0)
                r = keeper_start(sv, exec_p[1], true, err);
        sv->exec_w = exec_p[1];
        if (r < 0) {
                supervisor_finish(sv);
                errno = -r;
                return NULL;
        }
        return sv;
}

/* The keeper's pid, once cloned, then everything under it killed and
 * reaped: nothing of a supervisor started early whose session never ran
 * is left. */
static void end_early(struct supervisor *sv)
{
        sv->pid = shared_child_pid(&sv->keeper);
        if (sv->pid > 0) {
                kill(sv->pid, KEEPER_KILL_ALL);
                if (wait4(sv->pid, &sv->seen.wait_status, 0, &sv->rusage) == sv->pid)
                        sv->reaped = true;
        }
        /* Only now: at its end, bwrap would have gone on with no options. */
        tb_closep(&sv->args_w);
}

void supervisor_abort(struct supervisor *sv)
{
        if (!sv)
                return;
        end_early(sv);
        supervisor_finish(sv);
}

static bool words_equal(const char *x, const char *y)
{
        return x && y && strcmp(x, y) == 0;
}

/* bwrap's options, through its --args pipe: run->argv's (bwrap's whole
 * line, as sandbox_argv makes it) but argv[0], its filter's pair (already
 * on bwrap's own line) and the command (which must be the one bwrap was
 * started with), then the environment as --setenv pairs. First, bwrap's
 * process gets every CPU of trialbox's back (it kept the keeper's), before
 * it can make anything of the sandbox. 0, or a negative errno with `err`. */
static int send_options(struct supervisor *sv, const struct supervisor_run *run, struct tb_error *err)
{
        char **a = run->argv;
        size_t n = 0;
        while (a[n])
                n++;
        const size_t cmd = sv->early_command;
        char **early = sv->early_argv.v;
        if (!early || sv->early_argv.n < 6 + cmd)
                return tb_fail(err, -EINVAL, "bwrap was not started early");
        char **started_cmd = early + sv->early_argv.n - cmd;
        bool same = n >= 4 + cmd && words_equal(a[0], early[0]) && words_equal(a[1], "--seccomp") &&
                    words_equal(a[2], early[2]) && words_equal(a[n - cmd - 1], "--");
        for (size_t i = 0; same && i < cmd; i++)
                same = words_equal(a[n - cmd + i], started_cmd[i]);
        if (!same)
                return tb_fail(err, -EINVAL, "the sandbox's command line is not the one bwrap was started with");
        if (run->cgroup != sv->early_run.cgroup)
                return tb_fail(err, -EINVAL, "the session's cgroup is not the one bwrap's keeper joined");
        struct strbuf b = { 0 };
        for (size_t i = 3; i < n - cmd - 1; i++)
                strbuf_addn(&b, a[i], strlen(a[i]) + 1);
        for (char **e = run->envp; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                if (!eq)
                        continue;
                strbuf_addn(&b, "--setenv", sizeof "--setenv");
                strbuf_addn(&b, *e, (size_t)(eq - *e));
                strbuf_addn(&b, "", 1);
                strbuf_addn(&b, eq + 1, strlen(eq + 1) + 1);
        }
        /* Cloned with the pipe's read end, which it keeps for bwrap: ours
         * goes, so that a bwrap gone makes the write fail, not wait. */
        int r = 0;
        sv->pid = shared_child_pid(&sv->keeper);
        tb_closep(&sv->args_r);
        int pid = sv->pid < 0 ? -1 : sv->child.narrowed ? shared_child_wait_word(&sv->keeper, &sv->bwrap_pid) : 1;
        /* ESRCH: bwrap is gone already (its own message says why). */
        if (pid > 0 && sv->child.narrowed && sched_setaffinity(pid, sizeof sv->child.cpus, &sv->child.cpus) < 0 &&
            errno != ESRCH)
                r = tb_fail(err, -errno, "giving bwrap its CPUs back: %s", strerror(errno));
        /* EPIPE: bwrap is gone (its own message says why). */
        if (r == 0 && pid > 0 && (r = loop_write(sv->args_w, b.s, b.len)) < 0)
                r = r == -EPIPE ? 0 : tb_fail(err, r, "sending bwrap its options: %s", strerror(-r));
        explicit_bzero(b.s, b.len); /* the environment's secrets */
        free(b.s);
        if (r == 0) /* at EOF bwrap goes on; on a failure, once killed (started) */
                tb_closep(&sv->args_w);
        TB_PHASE("options");
        return r; /* no bwrap: the exec's error says why */
}

/* Go on with a supervisor started early: `run` (the same line, its
 * options now known) takes the place of the early one; its sources are
 * added; with the operator's signal pending, nothing runs and everything
 * started is ended (seen.before_start); else bwrap gets its options and the
 * session starts as it would have (keeper_go). */
static int supervisor_resume(struct supervisor *sv, const struct supervisor_run *run, struct tb_error *err)
{
        sv->run = run;
        sv->held = run->hold != NULL;
        sv->seen.timeout_ms = run->timeout_ms;
        sv->seen.kill_after_ms = run->kill_after_ms;
        sv->seen.memory_bytes = run->memory_bytes;
        int r = 0;
        for (size_t i = 0; r == 0 && i < run->n_watches; i++)
                if (!add_source(sv, run->watches[i].fd, WHILE_RUNNING, on_watch, &run->watches[i]))
                        r = tb_fail(err, -E2BIG, "the supervisor watches at most %d fds", SUPERVISOR_MAX_SOURCES);
        if (r == 0)
                r = add_limit_sources(sv, err);
        int sig = r == 0 ? take_pending_operator_signal(sv) : 0;
        if (sig || r < 0) {
                end_early(sv);
                if (sig) {
                        sv->seen.forwarded = sv->seen.interrupted = sig;
                        sv->seen.before_start = true;
                }
                return r;
        }
        r = send_options(sv, run, err);
        if (r == 0)
                r = keeper_go(sv, err);
        return started(sv, &sv->exec_w, r);
}

int supervisor_run(const struct supervisor_run *run, struct session_result *res, struct tb_error *err)
{
        /* Not on the stack: 36 KiB there would put every frame below it
         * (the loop's, its handlers') on stack pages of their own, each
         * one more page made (a Trial started early has its own). */
        struct supervisor *local = NULL, *sv;
        int r;

        memset(res, 0, sizeof *res);
        if (run->started) {
                sv = run->started;
                r = supervisor_resume(sv, run, err);
        } else {
                sv = local = xmalloc(sizeof *sv);
                r = supervisor_start(sv, run, err);
        }
        if (r < 0) {
                supervisor_finish(sv);
                free(local);
                return r;
        }
        if (!sv->seen.before_start)
                r = supervisor_loop(sv, err);
        TB_PHASE("loop_end");
        for (size_t i = 0; i < run->n_watches; i++)
                if (run->watches[i].finish)
                        run->watches[i].finish(run->watches[i].ctx);
        if (sv->released && sv->hold_watch.finish)
                sv->hold_watch.finish(sv->hold_watch.ctx);
        if (r < 0 && !sv->reaped && sv->pid > 0) {
                kill(sv->pid, SIGKILL);
                wait4(sv->pid, &sv->seen.wait_status, 0, &sv->rusage);
        }
        /* OOM kills the loop had no time to see (the last event may come with the end). */
        if (run->cgroup && cgroup_oom_fd(run->cgroup) >= 0) {
                long long n = cgroup_oom_event(run->cgroup);
                if (n > sv->seen.oom_kills)
                        sv->seen.oom_kills = n;
        }
        if (run->rusage)
                *run->rusage = sv->rusage;
        if (r == 0)
                supervisor_result(&sv->seen, res);
        supervisor_finish(sv);
        free(local);
        return r;
}
