#define _GNU_SOURCE
#include "network/resolver.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"

enum { LK_QUEUED, LK_RUNNING, LK_CANCELLED };

/* Shared with the threads: freed by whichever of the owner and the threads lets go last. */
struct resolver {
        pthread_mutex_t lock;
        pthread_cond_t wake;
        struct resolver_lookup *head, *tail; /* queued */
        int pipe[2];                         /* results, as pointers; [1] is -1 once stopping */
        int threads, idle, refs;
        bool stop;
        pthread_t tids[RESOLVER_THREADS];
};

struct resolver *resolver_new(void)
{
        struct resolver *r = xcalloc(1, sizeof(*r));
        /* Never full: it holds thousands of pointers, and the proxy caps lookups at a few hundred. */
        if (pipe2(r->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
                free(r);
                return NULL;
        }
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->wake, NULL);
        r->refs = 1;
        return r;
}

int resolver_fd(const struct resolver *r)
{
        return r->pipe[0];
}

void resolver_lookup_free(struct resolver_lookup *lk)
{
        if (!lk)
                return;
        if (lk->result)
                freeaddrinfo(lk->result);
        free(lk);
}

/* Drop a reference (the lock held); the last one frees the resolver. */
static void unref_locked(struct resolver *r)
{
        bool last = --r->refs == 0;
        pthread_mutex_unlock(&r->lock);
        if (last) {
                tb_closep(&r->pipe[0]);
                tb_closep(&r->pipe[1]);
                pthread_cond_destroy(&r->wake);
                pthread_mutex_destroy(&r->lock);
                free(r);
        }
}

static void run(struct resolver_lookup *lk)
{
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                  .ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG };
        lk->error = getaddrinfo(lk->host, lk->service, &hints, &lk->result);
}

static void *worker(void *arg)
{
        struct resolver *r = arg;
        pthread_mutex_lock(&r->lock);
        for (;;) {
                while (!r->head && !r->stop) {
                        r->idle++;
                        pthread_cond_wait(&r->wake, &r->lock);
                        r->idle--;
                }
                if (r->stop)
                        break;
                struct resolver_lookup *lk = r->head;
                r->head = lk->next;
                if (!r->head)
                        r->tail = NULL;
                lk->state = LK_RUNNING;
                pthread_mutex_unlock(&r->lock);
                run(lk);
                pthread_mutex_lock(&r->lock);
                void *ptr = lk;
                if (r->stop || write(r->pipe[1], &ptr, sizeof(ptr)) != (ssize_t)sizeof(ptr))
                        resolver_lookup_free(lk);
        }
        unref_locked(r);
        return NULL;
}

/* Start one more thread (the lock held), with every signal blocked: the
 * process's signals stay with its own threads. */
static int spawn_locked(struct resolver *r)
{
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int e = pthread_create(&r->tids[r->threads], NULL, worker, r);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (e != 0)
                return -e;
        r->threads++;
        r->refs++;
        return 0;
}

struct resolver_lookup *resolver_start(struct resolver *r, const char *host, uint16_t port, void *data)
{
        struct resolver_lookup *lk = xcalloc(1, sizeof(*lk));
        snprintf(lk->host, sizeof(lk->host), "%s", host);
        snprintf(lk->service, sizeof(lk->service), "%u", (unsigned)port);
        lk->data = data;
        pthread_mutex_lock(&r->lock);
        if (r->idle == 0 && r->threads < RESOLVER_THREADS) {
                int e = spawn_locked(r);
                if (e < 0 && r->threads == 0) {
                        pthread_mutex_unlock(&r->lock);
                        free(lk);
                        errno = -e;
                        return NULL;
                }
        }
        lk->state = LK_QUEUED;
        if (r->tail)
                r->tail->next = lk;
        else
                r->head = lk;
        r->tail = lk;
        pthread_cond_signal(&r->wake);
        pthread_mutex_unlock(&r->lock);
        return lk;
}

struct resolver_lookup *resolver_next(struct resolver *r)
{
        void *ptr;
        while (read(r->pipe[0], &ptr, sizeof(ptr)) == (ssize_t)sizeof(ptr)) {
                struct resolver_lookup *lk = ptr;
                if (lk->state != LK_CANCELLED)
                        return lk;
                resolver_lookup_free(lk);
        }
        return NULL;
}

void resolver_cancel(struct resolver *r, struct resolver_lookup *lk)
{
        pthread_mutex_lock(&r->lock);
        if (lk->state == LK_QUEUED) {
                struct resolver_lookup **pp = &r->head, *prev = NULL;
                while (*pp != lk) {
                        prev = *pp;
                        pp = &(*pp)->next;
                }
                *pp = lk->next;
                if (r->tail == lk)
                        r->tail = prev;
                free(lk);
        } else {
                /* Running, or finished and in the pipe: dropped when it comes out. */
                lk->state = LK_CANCELLED;
        }
        pthread_mutex_unlock(&r->lock);
}

void resolver_free(struct resolver *r)
{
        if (!r)
                return;
        pthread_mutex_lock(&r->lock);
        r->stop = true;
        while (r->head) {
                struct resolver_lookup *lk = r->head;
                r->head = lk->next;
                free(lk);
        }
        r->tail = NULL;
        pthread_cond_broadcast(&r->wake);
        int threads = r->threads;
        pthread_mutex_unlock(&r->lock);
        /* Idle threads end at once; one inside getaddrinfo() may wait for a slow name server. */
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += 200 * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
        }
        for (int i = 0; i < threads; i++)
                if (pthread_timedjoin_np(r->tids[i], NULL, &deadline) != 0)
                        pthread_detach(r->tids[i]);
        /* Results already handed back: nobody will read them now. */
        void *ptr;
        while (read(r->pipe[0], &ptr, sizeof(ptr)) == (ssize_t)sizeof(ptr))
                resolver_lookup_free(ptr);
        pthread_mutex_lock(&r->lock);
        unref_locked(r);
}
