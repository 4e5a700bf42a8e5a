/* The keeper: a small process between trialbox and bwrap, so that nothing of
 * a sandbox outlives trialbox, even when trialbox is killed with SIGKILL.
 *
 * bwrap's --die-with-parent is racy: the sandbox's first process sets its
 * parent-death signal only during setup, so a bwrap killed at the wrong
 * moment leaves a sandbox running under init, unwatched (bubblewrap #633).
 * The keeper is a child subreaper with a parent-death signal of its own: it
 * starts bwrap, and whatever of the sandbox is orphaned comes to it. When
 * trialbox dies (SIGUSR2, its parent-death signal) or asks (SIGUSR1), or when
 * bwrap has exited, it kills every process left under it. It forwards
 * SIGINT, SIGTERM and SIGHUP to bwrap, and ends with bwrap's own status.
 * With limits it joins the Trial's cgroup before it starts bwrap
 * (the supervisor's exec path calls cgroup_attach_self), so every process of
 * the session is born inside; and since it reaps every process under it
 * before it exits, its rusage (wait4) counts the whole session. */
#ifndef TB_KEEPER_H
#define TB_KEEPER_H

#include <signal.h>
#include <sched.h>
#include <sys/types.h>

/* The fds the keeper finds in place (KEEPER_BLOCK_FD, KEEPER_EXEC_ERR_FD,
 * KEEPER_BLOCK_HOLD_FD)
 * are laid out in sandbox/spec.h, beside SANDBOX_STATUS_FD. */
#include "sandbox/spec.h"

/* Ask a keeper to kill everything under it. */
#define KEEPER_KILL_ALL SIGUSR1

/* Run in the keeper: a child of `trialbox` that shares its memory
 * (base/shared_child.h: its own TLS, stack, fd table and signal
 * dispositions), in a process group of its own,
 * with stdin, stdout, stderr, SANDBOX_STATUS_FD and KEEPER_BLOCK_FD set up
 * for bwrap, and every signal's disposition back to default (as
 * spawn_reset_signals leaves them): start argv with envp (those dispositions
 * and an empty signal mask, whatever trialbox's own) and keep it. bwrap's
 * process starts in the keeper's memory (clone(CLONE_VM | CLONE_VFORK), no
 * copy of it) and resets only its mask: a handler left in place would run
 * there, on the keeper's memory. On a failed exec, the errno goes to
 * `exec_err_w` (KEEPER_EXEC_ERR_FD); with no process for bwrap, the keeper
 * ends with status 127. Never returns. */
struct session_user;

/* `user`, when it says to drop, is who bwrap runs as: the keeper switches
 * bwrap's process to it right before the exec (session_user.h). `cow`,
 * when its path is set, is a copy-on-write overlay mounted in bwrap's
 * process before that (sandbox/cow.h): bwrap starts in its mount namespace,
 * which dies with the sandbox. `cpus`, when not NULL, are the CPUs bwrap
 * and the keeper may use: trialbox's, which it may have narrowed the
 * keeper's to just after the fork (supervisor.c says why).
 *
 * `bwrap_pid`, when not NULL (bwrap started before its options are known:
 * supervisor_start_early), gets bwrap's pid as its process is cloned (the
 * kernel writes it there: CLONE_PARENT_SETTID), then a wake-up once the
 * clone has returned, or -1 when there is none (shared_child_post). bwrap's process then keeps
 * the keeper's CPUs, `cpus` are the keeper's own alone, and trialbox gives
 * bwrap its CPUs back before it sends bwrap's options. */
/* bwrap's process's stack until its exec (its top is `bwrap_stack`: a stack
 * mapped beside the keeper's before it started, shared_child_start's
 * `spare`, which the keeper neither maps nor unmaps; NULL: no bwrap, the
 * keeper ends as when its clone fails). Its deepest path
 * is the overlay's (cow_overlay_enter, with snprintf's work buffer): under
 * 4 KiB of it were touched, 7 KiB with ASan's redzones and interceptors
 * (measured by filling the stack with a pattern); glibc's posix_spawn gives
 * its child 32 KiB and argv's size. 256 KiB is far more and costs only
 * address space (a page is made when touched). Below it a guard page: an
 * overflow faults in bwrap's process instead of writing over the keeper's
 * memory. */
#define KEEPER_BWRAP_STACK (256u << 10)

void keeper_run(char **argv, char **envp, pid_t trialbox, int exec_err_w, const struct session_user *user,
                const struct sandbox_cow *cow, const cpu_set_t *cpus, int *bwrap_pid, char *bwrap_stack)
        __attribute__((noreturn));

#endif
