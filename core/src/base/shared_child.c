#define _GNU_SOURCE
#include "base/shared_child.h"

#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

/* The holder runs a few calls. */
#define HOLDER_STACK (64u << 10)

bool shared_child_shares_memory(void) { return !RUNNING_ON_VALGRIND; }

static int load(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

static void store(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* Sleep while *p is 0. */
static void wait_nonzero(int *p)
{
        while (load(p) == 0)
                (void)syscall(SYS_futex, p, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

static void wake(int *p) { (void)syscall(SYS_futex, p, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }

int clone_stack_map(struct clone_stack *s, size_t size)
{
        const size_t guard = (size_t)sysconf(_SC_PAGESIZE);
        s->len = guard + size;
        s->base = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (s->base == MAP_FAILED) {
                s->base = NULL;
                return -errno;
        }
        if (mprotect(s->base, guard, PROT_NONE) < 0) {
                int e = errno;
                clone_stack_unmap(s);
                return -e;
        }
        return 0;
}

void clone_stack_unmap(struct clone_stack *s)
{
        if (s->base)
                munmap(s->base, s->len);
        s->base = NULL;
}

/* The child's first lines: the kernel wrote its pid into c->tid before it
 * ran (CLONE_PARENT_SETTID); the caller sleeps until told. */
static int child_entry(void *arg)
{
        struct shared_child *c = arg;
        wake(&c->tid);
        return c->fn(c->arg);
}

/* The holder: clones the child and, with CLONE_VFORK, sleeps in clone()
 * until it has ended. The kernel clears c->alive when the child's memory is
 * released, before it ends the holder's wait (CLONE_CHILD_CLEARTID); still
 * set, the child outlived the clone (under valgrind, below): then the
 * holder waits to be released, so that it never ends (and sends the child
 * its parent-death signal) before the caller is done with the child.
 *
 * valgrind runs a CLONE_VM clone only as a thread's or a vfork's, and it
 * would hold its one lock for as long as this holder sleeps in a vfork's
 * clone (every other thread stopped: the caller never gets the child's
 * pid). Under it the child is a fork: a copy of the memory, which the
 * keeper reads and never needs to share. */
static void *hold(void *arg)
{
        struct shared_child *c = arg;
        const int share = RUNNING_ON_VALGRIND ? 0 : CLONE_VM | CLONE_VFORK;
        int pid = clone(child_entry, c->stack.base + c->stack.len - HOLDER_STACK,
                        share | c->clone_files | CLONE_PARENT_SETTID | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID |
                                SIGCHLD,
                        c, &c->tid, NULL, &c->alive);
        store(&c->tid, pid < 0 ? -errno : pid);
        wake(&c->tid);
        if (pid > 0 && load(&c->alive))
                wait_nonzero(&c->released);
        return NULL;
}

int shared_child_start(struct shared_child *c, int (*fn)(void *), void *arg, const cpu_set_t *cpus, size_t spare,
                       unsigned flags)
{
        *c = (struct shared_child){
                .fn = fn, .arg = arg, .alive = 1, .clone_files = flags & SHARED_CHILD_FILES ? CLONE_FILES : 0
        };
        /* [guard][spare][guard][the child's stack][the holder's] */
        const size_t guard = (size_t)sysconf(_SC_PAGESIZE);
        spare = (spare + guard - 1) / guard * guard;
        const size_t below = spare ? spare + guard : 0;
        int e = -clone_stack_map(&c->stack, below + SHARED_CHILD_STACK + HOLDER_STACK);
        if (e == 0 && spare) {
                char *child_guard = c->stack.base + guard + spare;
                if (mprotect(child_guard, guard, PROT_NONE) < 0)
                        e = errno;
                c->spare_top = child_guard;
        }
        pthread_attr_t attr;
        if (e == 0)
                e = pthread_attr_init(&attr);
        if (e == 0) {
                e = pthread_attr_setstack(&attr, c->stack.base + c->stack.len - HOLDER_STACK, HOLDER_STACK);
                /* Left to the scheduler, a new thread waits on this CPU
                 * until this thread blocks. */
                if (e == 0 && cpus)
                        e = pthread_attr_setaffinity_np(&attr, sizeof *cpus, cpus);
                if (e == 0)
                        e = pthread_create(&c->holder, &attr, hold, c);
                pthread_attr_destroy(&attr);
        }
        if (e) {
                clone_stack_unmap(&c->stack);
                return -e;
        }
        c->holding = true;
        return 0;
}

pid_t shared_child_pid(struct shared_child *c)
{
        if (!c->holding && c->tid == 0)
                return -ECHILD;
        wait_nonzero(&c->tid);
        int tid = load(&c->tid);
        if (tid < 0)
                shared_child_done(c);
        return tid;
}

void shared_child_post(int *word, int value)
{
        store(word, value);
        wake(word);
}

int shared_child_wait_word(struct shared_child *c, int *word)
{
        /* The child's end clears c->alive (CLONE_CHILD_CLEARTID) but wakes
         * only who waits on that word, and a clone that failed leaves a
         * negative c->tid: this wait looks again every 10 ms. */
        const struct timespec tick = { .tv_sec = 0, .tv_nsec = 10L * 1000 * 1000 };
        int v;
        while ((v = load(word)) == 0 && load(&c->alive) != 0 && load(&c->tid) >= 0)
                (void)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 0, &tick, NULL, 0);
        return v;
}

void shared_child_done(struct shared_child *c)
{
        if (c->holding) {
                store(&c->released, 1);
                wake(&c->released);
                pthread_join(c->holder, NULL); /* the child has ended: the holder's clone() returned */
                c->holding = false;
        }
        clone_stack_unmap(&c->stack);
}
