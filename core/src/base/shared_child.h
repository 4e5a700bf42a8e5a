/* A child process that runs in this process's memory, beside it: a fork
 * without the fork's cost, for a child that runs a function of ours for a
 * long time and never execs (the keeper, sandbox/keeper.h).
 *
 * fork() copies the page tables of the whole process, then every page
 * either side writes is copied on its first write, and the child's end
 * unmaps its whole copy. In a program of trialbox's shape (its libraries,
 * 2000 heap blocks, a thread made and joined) a forked child that starts a
 * program and waits for it took 0.49 ms longer, start to reaping, than one
 * started this way; a no-op Trial gained 0.1 to 0.3 ms (medians of
 * alternating runs beside the forking build). A child made with
 * clone(CLONE_VM) shares the memory instead. What it still has of its own:
 * its pid, process group, credentials, fd table, signal dispositions and
 * mask (no CLONE_FILES, CLONE_SIGHAND, CLONE_THREAD): it can be a
 * subreaper, join a cgroup and be waited for as any child.
 *
 * What it must not share is the calling thread's TLS (errno, malloc's
 * cache, the sanitizers' state): both would run on it at once. So the child
 * is cloned by a thread made for it (the holder), whose TLS it takes, with
 * CLONE_VFORK: the holder is suspended in clone() for as long as the child
 * lives and touches nothing of its own meanwhile. Its TLS is the child's
 * alone: the child may set errno, and call what a thread may call.
 *
 * The vfork also keeps the OOM killer off the child: it never picks a
 * child in a vfork (the kernel's in_vfork(); its /proc/PID/oom_score reads
 * 0). That matters: whoever it picks, it kills every process that shares
 * the victim's memory with it, and a keeper in a Trial's memory cgroup,
 * among a session's small processes, could otherwise be its choice, and
 * trialbox with it.
 *
 * The rules for the child's function: it runs on a stack of its own
 * (SHARED_CHILD_STACK, a guard page below); what it reads, the caller keeps
 * in place until the child is reaped; it writes only its own stack and what
 * the caller gave it to write; it ends with _exit (or returns its exit
 * status). Under ASan, a function of it that calls a noreturn function
 * (_exit, or one that never returns) is marked TB_NO_ASAN: before such a
 * call ASan clears the shadow of the stack it knows for this TLS (the
 * holder's) down to here, and warns on the child's stderr when the two are
 * far apart.
 *
 * The child's parent is the holder thread: its parent-death signal
 * (PR_SET_PDEATHSIG) comes when that thread ends, which is never before the
 * child has ended and shared_child_done() has been called, or when this
 * whole process dies. getppid() in it is this process's pid.
 *
 * Under valgrind (when built with its header, valgrind/valgrind.h), which
 * runs no such clone, the child is a fork: a copy of this memory. */
#ifndef TB_BASE_SHARED_CHILD_H
#define TB_BASE_SHARED_CHILD_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* For a function that runs on the shared child's stack and calls a
 * noreturn function (see above). */
#define TB_NO_ASAN __attribute__((no_sanitize("address")))

/* The child's stack. The keeper's deepest path (the children it kills: a
 * 4 KiB buffer and snprintf) takes under 8 KiB; this is far more and costs
 * only address space (a page is made when touched). */
#define SHARED_CHILD_STACK (256u << 10)

/* A stack for a clone's child: `size` bytes above a guard page (stacks grow
 * down: an overflow faults instead of writing over what lies below), one
 * mapping. Its top is base + len. */
struct clone_stack {
        char *base;
        size_t len;
};

/* Map it: 0, or -errno (s->base NULL). */
int clone_stack_map(struct clone_stack *s, size_t size);

/* Unmap it (nothing when it is not mapped). */
void clone_stack_unmap(struct clone_stack *s);

struct shared_child {
        int (*fn)(void *);
        void *arg;
        pthread_t holder;
        bool holding; /* the holder runs: shared_child_done() joins it */
        struct clone_stack stack; /* the spare stack (when asked for), the child's, then the holder's above it */
        char *spare_top;          /* the spare stack's top, or NULL */
        int tid;      /* the child's pid once cloned (the kernel writes it), or -errno */
        int alive;    /* the child's pid while it runs, 0 once its memory is released (the kernel writes both) */
        int released; /* set by shared_child_done(): a holder whose child outlived the clone may end */
        int clone_files; /* CLONE_FILES or 0 (shared_child_start's `flags`) */
};

/* shared_child_start's flags: the child shares this process's fd table
 * (CLONE_FILES) instead of a copy made at its clone: it sees the fds made
 * after it started, until it calls unshare(CLONE_FILES) (the keeper
 * started before its fds exist, supervisor_prestart). */
#define SHARED_CHILD_FILES 1u

/* Start fn(arg) in a child that shares this memory; `cpus`, when not NULL,
 * are the CPUs it starts on (its holder's, which it inherits). `spare`,
 * when not 0, asks for a stack of that many bytes besides, above a guard
 * page of its own (c->spare_top), for a clone the child makes in turn (the
 * keeper's of bwrap's process): mapped here, with the child's, before any
 * other thread runs on this memory. A mapping the child made or changed
 * while this thread ran on another CPU would stop this one for the
 * kernel's flush of its address translations (an interrupt, waited for),
 * and unmapped at once, stop it again. Returns 0 once its holder runs (the
 * child is cloned meanwhile), or -errno. `c` must stay in place until
 * shared_child_done(). */
int shared_child_start(struct shared_child *c, int (*fn)(void *), void *arg, const cpu_set_t *cpus, size_t spare,
                       unsigned flags);

/* The child's pid, once it is cloned: every fd this process had at that
 * moment is in its table, so none of those may be closed before this
 * returns. -errno when it could not be cloned (its holder is done then).
 * Wait for it with waitpid/wait4 as for any child. */
pid_t shared_child_pid(struct shared_child *c);

/* Once the child has ended: end its holder and unmap its stack. Waits for
 * the child's end if it has not come yet. Nothing when it never started. */
void shared_child_done(struct shared_child *c);

/* Whether the child shares this memory: false under valgrind, where it is
 * a fork (above). */
bool shared_child_shares_memory(void);

/* A word the child tells this process through the memory they share: the
 * child sets it once to a value other than 0 (shared_child_post, which
 * wakes a waiter); shared_child_wait_word returns that value, or 0 once
 * the child has ended (or could not be cloned) without setting it. Only for a child that shares
 * this memory (shared_child_shares_memory). */
void shared_child_post(int *word, int value);
int shared_child_wait_word(struct shared_child *c, int *word);

#endif
