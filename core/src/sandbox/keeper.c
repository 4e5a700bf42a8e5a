#define _GNU_SOURCE
#include "sandbox/keeper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/confine.h"
#include "sandbox/cow.h"
#include "sandbox/spec.h"
#include "sandbox/session_user.h"
#include "base/io.h"
#include "base/phase.h"
#include "base/shared_child.h"

/* SIGKILL every direct child; returns how many were found. */
static int kill_children(void)
{
        char path[64], buf[4096];
        snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        int found = 0;
        if (fd >= 0) {
                ssize_t n = read(fd, buf, sizeof buf - 1);
                close(fd);
                buf[n > 0 ? n : 0] = '\0';
                for (char *p = buf, *end; *p; p = end) {
                        long pid = strtol(p, &end, 10);
                        if (end == p)
                                break;
                        if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
                                found++;
                }
                return found;
        }
        /* No children file: look for our children in /proc. */
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d))) {
                int pid = atoi(e->d_name);
                if (pid <= 0)
                        continue;
                snprintf(path, sizeof path, "/proc/%d/stat", pid);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                ssize_t n = read(fd, buf, sizeof buf - 1);
                close(fd);
                buf[n > 0 ? n : 0] = '\0';
                const char *paren = strrchr(buf, ')');
                int ppid = 0;
                if (paren && sscanf(paren + 1, " %*c %d", &ppid) == 1 && ppid == getpid() && kill(pid, SIGKILL) == 0)
                        found++;
        }
        if (d)
                closedir(d);
        return found;
}

/* Hold nothing of trialbox's but bwrap's stdio, its status and block fds,
 * the exec-error pipe (moved to the fd after them) and the keeper's hold
 * on the block pipe: not the Grok lock, not the login watch, not
 * trialbox's signalfd. The exec-error fd. */
static TB_NO_ASAN int keep_only_bwraps_fds(int exec_err_w, char **argv)
{
        _Static_assert(KEEPER_BLOCK_FD == SANDBOX_STATUS_FD + 1 && KEEPER_EXEC_ERR_FD == KEEPER_BLOCK_FD + 1 &&
                               KEEPER_BLOCK_HOLD_FD == KEEPER_EXEC_ERR_FD + 1,
                       "the keeper's fds follow bwrap's");
        const int err_fd = KEEPER_EXEC_ERR_FD;
        if (exec_err_w != err_fd && dup2(exec_err_w, err_fd) < 0)
                _exit(127);
        fcntl(err_fd, F_SETFD, FD_CLOEXEC);
        confine_close_fds(KEEPER_BLOCK_HOLD_FD + 1, argv); /* all but the seccomp filter bwrap's argv names */
        return err_fd;
}

/* The signals the keeper reads from a signalfd (returned), blocked; its
 * parent-death signal and its subreaper role set. */
static TB_NO_ASAN int keeper_signals(pid_t trialbox)
{
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGUSR1);
        sigaddset(&mask, SIGUSR2);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        /* Learn of trialbox's death, even if it came before this line. */
        if (prctl(PR_SET_PDEATHSIG, SIGUSR2) < 0 || getppid() != trialbox)
                _exit(127);
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        return signalfd(-1, &mask, SFD_CLOEXEC);
}

/* What bwrap's process starts from: the keeper's, read in its memory. */
struct bwrap_start {
        char **argv, **envp;
        int exec_err_w;
        const struct session_user *user;
        const struct sandbox_cow *cow;
        const cpu_set_t *cpus;
        int *pid_word; /* keeper_run's bwrap_pid: the kernel writes the pid there at the clone */
        char *stack_top; /* keeper_run's bwrap_stack */
};

/* bwrap's process, from its clone (start_bwrap) to its exec: exec bwrap, or
 * send the errno to `exec_err_w`.
 *
 * It runs on the keeper's memory (which is trialbox's: base/shared_child.h)
 * and TLS (errno included) while the keeper is suspended (CLONE_VM |
 * CLONE_VFORK), as posix_spawn's child does. So it allocates nothing (no
 * malloc, no stdio stream), writes nothing of the keeper's but errno (which
 * the keeper reads only right after a call that failed), and ends in execve
 * or _exit (exit_group of itself alone: it is a process of its own). Its fd
 * table, signal dispositions, working folder, mount namespace and
 * credentials are its own copies (no CLONE_FILES, CLONE_SIGHAND, CLONE_FS):
 * what it changes of them, the keeper never sees.
 * Each call below is a system call's wrapper, a string function that only
 * reads (strcmp, strtol, strlen), or formats into a buffer on this stack
 * (snprintf of %d, %u, %lld, %s: no allocation, no stream lock);
 * session_user_switch makes the system calls, not glibc's set*id()
 * broadcast (session_user.c says why).
 *
 * Not instrumented by ASan (TB_NO_ASAN), as the keeper's own functions that
 * call a noreturn one (base/shared_child.h): ASan knows the stack of the TLS
 * it shares with the keeper as the holder thread's, so before the noreturn
 * _exit it would look for this one there, not find it, and warn ("ignoring
 * requested __asan_handle_no_return"). What it calls is instrumented and
 * returns, leaving its frames' shadow as it found it. */
static TB_NO_ASAN int exec_bwrap(void *arg)
{
        const struct bwrap_start *s = arg;
        /* An empty mask, whatever trialbox's starter left it (the keeper
         * blocks its own signals): bwrap and the session get every signal.
         * The dispositions are default already (keeper.h): exec_child reset
         * every one before keeper_run, and the keeper installs no handler
         * (it reads its signals from a signalfd; end_like's signal() comes
         * after bwrap's end). So no handler of trialbox's can run here, on
         * the keeper's memory, and 64 sigaction calls are saved. */
        sigset_t empty;
        sigemptyset(&empty);
        sigprocmask(SIG_SETMASK, &empty, NULL);
        close(KEEPER_BLOCK_HOLD_FD); /* the keeper's alone (close-on-exec too) */
        /* Every CPU of trialbox's for bwrap and the session, whatever the
         * keeper was narrowed to (a system call, no allocation). */
        if (s->cpus)
                (void)sched_setaffinity(0, sizeof *s->cpus, s->cpus);
        TB_PHASE("bwrap_signals");
        int e = 0;
        /* The layer first: as root, before the switch below gives root up. */
        if (s->cow && s->cow->path) {
                int r = cow_overlay_enter(s->cow, NULL);
                e = r < 0 ? -r : 0;
        }
        /* Not root from here: bwrap and the session run as the
         * session's user (a switch clears the parent-death signal,
         * so that comes after it). */
        if (e == 0 && s->user && s->user->drop) {
                int r = session_user_switch(s->user);
                e = r < 0 ? -r : 0;
        }
        if (e == 0) {
                /* bwrap dies with its keeper: a second line of defence. */
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                e = -confine_exec_prepare(s->argv); /* a fresh session keyring; the filter fd crosses */
        }
        TB_PHASE("bwrap_confined");
        if (e == 0) {
                execve(s->argv[0], s->argv, s->envp);
                e = errno;
        }
        if (write(s->exec_err_w, &e, sizeof e) < 0) {
        }
        _exit(127);
}

/* Start bwrap's process (exec_bwrap) without a copy of the keeper's memory:
 * clone(CLONE_VM | CLONE_VFORK) returns once it has exec'd or exited. Its
 * pid, or -1 when there is none.
 *
 * Until then the keeper is suspended (only a signal that kills it ends the
 * wait): what trialbox sends it waits in its signalfd, a few dozen
 * microseconds. A process of the session's user could stop bwrap's process
 * between the switch and the exec (SIGSTOP), and so hold the keeper;
 * nothing of the sandbox runs meanwhile, and once continued, bwrap is
 * exec'd and the keeper reads what waited (a kill: it kills everything
 * under it). */
static pid_t start_bwrap(struct bwrap_start *s)
{
        if (!s->stack_top)
                return -1;
        /* A switch of user in bwrap's process makes the memory it shares
         * with the keeper (and trialbox) not dumpable (the kernel's rule for
         * a changed effective uid): it is put back as it was once bwrap's
         * process has exec'd, as with a fork. Meanwhile it is only the
         * stricter. */
        const int dumpable = s->user && s->user->drop ? prctl(PR_GET_DUMPABLE) : -1;
        /* With a pid word (bwrap started early), the kernel writes bwrap's
         * pid into it as it clones (CLONE_PARENT_SETTID: the keeper's
         * memory, which is trialbox's), before bwrap's process runs: trialbox
         * reads it when it sends bwrap's options, without waiting for the
         * keeper, which resumes only once bwrap has exec'd and, on a CPU
         * bwrap's loader holds, runs only when bwrap first blocks (its read
         * of those options: seen here, the options then came 0.1 ms late,
         * through the keeper's wake-up of trialbox and trialbox's of bwrap).
         * The keeper's post after the clone wakes a trialbox already
         * waiting, and says -1 when there is no bwrap. */
        const int settid = s->pid_word ? CLONE_PARENT_SETTID : 0;
        pid_t pid = clone(exec_bwrap, s->stack_top, CLONE_VM | CLONE_VFORK | settid | SIGCHLD, s, s->pid_word);
        if (dumpable >= 0 && prctl(PR_GET_DUMPABLE) != dumpable)
                prctl(PR_SET_DUMPABLE, dumpable);
        return pid;
}

/* End as bwrap ended: killed by the same signal, or with its exit code. */
static TB_NO_ASAN void __attribute__((noreturn)) end_like(int status)
{
        if (WIFSIGNALED(status)) {
                signal(WTERMSIG(status), SIG_DFL);
                sigset_t all;
                sigfillset(&all);
                sigprocmask(SIG_UNBLOCK, &all, NULL);
                raise(WTERMSIG(status));
        }
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

/* Reap what ended (bwrap's status into *status); once bwrap and everything
 * under the keeper are gone, end like bwrap. */
static TB_NO_ASAN void reap_all(pid_t bwrap, int *status, bool *bwrap_done)
{
        for (;;) {
                int st;
                pid_t p = waitpid(-1, &st, WNOHANG);
                if (p == bwrap) {
                        *status = st;
                        *bwrap_done = true;
                }
                if (p <= 0) {
                        if (p < 0 && errno == ECHILD && *bwrap_done)
                                end_like(*status);
                        return;
                }
        }
}

/* Forward what is for bwrap; kill everything on trialbox's word, on its
 * death, or once bwrap is gone (anything left is an orphan of the sandbox). */
static void __attribute__((noreturn)) keep(int sfd, pid_t bwrap)
{
        int status = 0;
        bool bwrap_done = false, killing = false;
        for (;;) {
                struct signalfd_siginfo si;
                if (read_retry(sfd, &si, sizeof si) != (ssize_t)sizeof si || si.ssi_signo == SIGUSR1 ||
                    si.ssi_signo == SIGUSR2) {
                        killing = true;
                } else if (si.ssi_signo != SIGCHLD && !bwrap_done) {
                        kill(bwrap, (int)si.ssi_signo);
                }
                if (killing)
                        kill_children();
                reap_all(bwrap, &status, &bwrap_done);
                if (bwrap_done && !killing) {
                        killing = true;
                        kill_children();
                }
        }
}

TB_NO_ASAN void keeper_run(char **argv, char **envp, pid_t trialbox, int exec_err_w, const struct session_user *user,
                           const struct sandbox_cow *cow, const cpu_set_t *cpus, int *bwrap_pid, char *bwrap_stack)
{
        exec_err_w = keep_only_bwraps_fds(exec_err_w, argv);
        TB_PHASE("keeper_start");
        int sfd = keeper_signals(trialbox);
        struct bwrap_start start = {
                argv, envp, exec_err_w, user, cow, bwrap_pid ? NULL : cpus, bwrap_pid, bwrap_stack
        };
        pid_t bwrap = start_bwrap(&start);
        TB_PHASE("keeper_forked");
        if (bwrap_pid)
                shared_child_post(bwrap_pid, bwrap > 0 ? bwrap : -1);
        if (cpus) /* its own too, once its start is done */
                (void)sched_setaffinity(0, sizeof *cpus, cpus);
        /* The keeper holds none of bwrap's pipes but stderr, and the block
         * pipe's write end until bwrap and all under it are gone (it ends
         * with the keeper): trialbox's end closing never lets bwrap go on. */
        close(exec_err_w);
        close(SANDBOX_STATUS_FD);
        close(KEEPER_BLOCK_FD);
        /* bwrap's alone: with bwrap gone, trialbox's write of its options fails. */
        int args_fd = confine_argv_args_fd(argv);
        if (args_fd >= 0)
                close(args_fd);
        if (bwrap < 0 || sfd < 0) {
                if (bwrap > 0)
                        kill(bwrap, SIGKILL);
                _exit(127);
        }
        keep(sfd, bwrap);
}
