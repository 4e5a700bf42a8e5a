/* Name lookups off the event loop: a small pool of threads calling
 * getaddrinfo(), each result handed back through a pipe the loop polls.
 * Used by the network proxy (proxy.c), whose loop must never block on DNS.
 *
 * Threads are started as lookups wait (at most RESOLVER_THREADS), with every
 * signal blocked, and joined by resolver_free(); one still inside a slow
 * getaddrinfo() then is left to finish on its own (it frees what is left). */
#ifndef TB_RESOLVER_H
#define TB_RESOLVER_H

#include <netdb.h>
#include <stdint.h>

#define RESOLVER_THREADS 8

struct resolver;

struct resolver_lookup {
        char host[256];
        char service[8];
        void *data;               /* the caller's */
        int error;                /* getaddrinfo()'s result: 0 or EAI_* */
        struct addrinfo *result;  /* when error == 0; freed with the lookup */
        /* the resolver's own */
        struct resolver_lookup *next;
        int state;
};

/* A resolver with no threads yet. NULL with errno set when its pipe cannot be made. */
struct resolver *resolver_new(void);

/* Readable (POLLIN) when resolver_next() has something. */
int resolver_fd(const struct resolver *r);

/* Queue a lookup of host:port (TCP, IPv4 and IPv6). The lookup, or NULL with
 * errno set (no thread could be started). */
struct resolver_lookup *resolver_start(struct resolver *r, const char *host, uint16_t port, void *data);

/* A finished lookup (the caller frees it with resolver_lookup_free()), or
 * NULL when none is ready. Cancelled lookups are never returned. */
struct resolver_lookup *resolver_next(struct resolver *r);

/* Forget a lookup not yet returned: its result is dropped, the resolver frees it. */
void resolver_cancel(struct resolver *r, struct resolver_lookup *lk);

void resolver_lookup_free(struct resolver_lookup *lk);

/* Drop every pending lookup, stop and join the threads (one busy for more
 * than ~200 ms is detached instead). NULL is fine. */
void resolver_free(struct resolver *r);

#endif
