#define _GNU_SOURCE
#include "network/proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>

#include "network/proxy_request.h"
#include "network/resolver.h"
#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/io.h"
#include "base/macro.h"
#include "base/strbuf.h"

#define RELAY_PIPE_START 65536    /* a flow's pipe as the kernel makes it (a user past its quota gets less) */
#define RELAY_PIPE_SIZE (1 << 20) /* ... and as a bulk flow asks for it (the kernel may give less) */
#define RELAY_BULK (256 << 10)    /* bytes a flow relays before its pipe grows */
#define DRAIN_MAX 65536           /* bytes read and dropped after a refusal before closing */
#define DRAIN_MS 2000             /* how long a refused client may take to read the answer */
#define LOOKUPS_MAX 256           /* name lookups at once (more are answered 503) */
#define ADDRS_MAX 8               /* addresses tried per connection */
#define HOSTS_MAX 4096            /* distinct hosts counted one by one */
#define ACCEPT_BATCH 64           /* connections accepted per dispatch, so others get their turn */
#define PUMP_ROUNDS 8             /* splices per flow per event, for the same reason */

enum end_kind { END_LISTEN, END_TIMER, END_LOOKUP, END_CLIENT, END_UPSTREAM };
enum conn_state { ST_HEAD, ST_RESOLVING, ST_CONNECTING, ST_RELAY, ST_RESPOND, ST_DRAIN, ST_DEAD };

struct conn;

/* One fd registered with the epoll set. */
struct end {
        enum end_kind kind;
        int fd;
        uint32_t events; /* as registered */
        struct conn *c;
};

/* One direction of a relay: from one end to the other. */
struct flow {
        int pipe[2];
        size_t in_pipe, cap;
        char *pending;       /* sent before anything spliced: a rewritten head, an answer, early bytes */
        size_t pending_len, pending_off;
        size_t pending_own;  /* leading pending bytes that are the proxy's own (not counted) */
        bool full;           /* the pipe took no more (its slots are per page, not per byte) */
        bool eof;            /* the source has no more to give */
        bool shut;           /* the destination was shut for writing */
        bool grown;          /* its pipe was asked to grow (flow_grow) */
        uint64_t bytes;
};

struct conn {
        struct proxy *p;
        struct conn *prev, *next;
        enum conn_state state;
        struct end client, upstream;
        struct flow up, down; /* client to server, server to client */
        char *head;
        size_t head_len;
        struct proxy_request req;
        bool have_req, allowed;
        const char *pattern;
        char reason[320];
        long long start_ms, deadline_ms;
        struct timespec start_real;
        struct resolver_lookup *lookup;
        /* Absolute-form: the server's response head, read until complete, then
         * rewritten (proxy_response_rewrite) before the relay splices the rest. */
        bool resp_head;
        char *rhead;
        size_t rhead_len;
        struct sockaddr_storage addrs[ADDRS_MAX];
        size_t n_addrs, next_addr;
        size_t drained;
};

struct test_host {
        char host[NETPOLICY_HOST_MAX];
        struct sockaddr_storage addr; /* port 0: the requested one */
};

struct proxy {
        int epfd;
        struct end listener, timer, lookups;
        struct resolver *resolver;
        int running_lookups;
        int record_fd;
        struct netpolicy *policy;
        int head_timeout_ms, connect_timeout_ms;
        void (*on_lookup)(const char *host, void *ctx);
        void *ctx;
        struct test_host *test_hosts;
        size_t n_test_hosts;
        struct conn *conns;     /* open */
        struct conn *dead;      /* closed during this dispatch, freed at its end */
        bool accept_paused, finished, saw_epipe;
        bool sigpipe_held;    /* SIGPIPE blocked by sigpipe_hold() in this dispatch */
        sigset_t sigpipe_old; /* the thread's mask before that */
        long long allowed, denied;
        struct json_object *hosts, *other_hosts;
};

bool proxy_test_hosts_enabled(void)
{
#ifdef TRIALBOX_TESTING
        return true;
#else
        return false;
#endif
}

/* ---- small helpers ---- */

static int set_events(struct proxy *p, struct end *e, uint32_t events)
{
        if (e->fd < 0 || e->events == events)
                return 0;
        struct epoll_event ev = { .events = events, .data.ptr = e };
        if (epoll_ctl(p->epfd, EPOLL_CTL_MOD, e->fd, &ev) < 0)
                return -errno;
        e->events = events;
        return 0;
}

static int add_end(struct proxy *p, struct end *e, uint32_t events)
{
        struct epoll_event ev = { .events = events, .data.ptr = e };
        if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, e->fd, &ev) < 0)
                return -errno;
        e->events = events;
        return 0;
}

static void close_end(struct end *e)
{
        /* close() takes the fd out of the epoll set: no other reference to it is kept. */
        tb_closep(&e->fd);
        e->events = 0;
}

static void flow_done(struct flow *f)
{
        tb_closep(&f->pipe[0]);
        tb_closep(&f->pipe[1]);
        free(f->pending);
        f->pending = NULL;
}

static void set_nodelay(int fd)
{
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void addr_text(const struct sockaddr_storage *ss, char *buf, size_t size)
{
        if (ss->ss_family == AF_INET)
                inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, buf, (socklen_t)size);
        else
                inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, buf, (socklen_t)size);
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
        if (ss->ss_family == AF_INET)
                ((struct sockaddr_in *)ss)->sin_port = htons(port);
        else
                ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static uint16_t get_port(const struct sockaddr_storage *ss)
{
        return ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
                                              : ((const struct sockaddr_in6 *)ss)->sin6_port);
}

/* ---- the record ---- */

static void count(struct proxy *p, const char *host, bool allowed)
{
        if (allowed)
                p->allowed++;
        else
                p->denied++;
        if (!host)
                return;
        struct json_object *h;
        if (!json_object_object_get_ex(p->hosts, host, &h)) {
                if (json_object_object_length(p->hosts) >= HOSTS_MAX) {
                        h = p->other_hosts; /* its "hosts" counts requests past the map, not names */
                } else {
                        h = json_object_new_object();
                        json_object_object_add(h, "allowed", json_object_new_int64(0));
                        json_object_object_add(h, "denied", json_object_new_int64(0));
                        json_object_object_add(p->hosts, host, h);
                }
        }
        struct json_object *n;
        if (json_object_object_get_ex(h, allowed ? "allowed" : "denied", &n))
                json_object_int_inc(n, 1);
}

static struct json_object *rfc3339(const struct timespec *ts)
{
        struct tm tm;
        char buf[64];
        gmtime_r(&ts->tv_sec, &tm);
        size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + n, sizeof(buf) - n, ".%03ldZ", ts->tv_nsec / 1000000);
        return json_object_new_string(buf);
}

static void record(struct conn *c)
{
        struct proxy *p = c->p;
        const char *host = c->have_req ? c->req.host : NULL;
        count(p, host, c->allowed);
        if (p->record_fd < 0)
                return;
        struct json_object *o = json_object_new_object();
        json_object_object_add(o, "time", rfc3339(&c->start_real));
        json_object_object_add(o, "host", host ? json_object_new_string(host) : NULL);
        json_object_object_add(o, "port", c->have_req ? json_object_new_int(c->req.port) : NULL);
        json_object_object_add(o, "method", c->have_req ? json_object_new_string(c->req.method) : NULL);
        json_object_object_add(o, "decision", json_object_new_string(c->allowed ? "allowed" : "denied"));
        json_object_object_add(o, "reason", json_object_new_string(c->reason));
        json_object_object_add(o, "bytes_up", json_object_new_int64((int64_t)c->up.bytes));
        json_object_object_add(o, "bytes_down", json_object_new_int64((int64_t)c->down.bytes));
        json_object_object_add(o, "duration_ms", json_object_new_int64(now_ms() - c->start_ms));
        _cleanup_free_ char *line = xasprintf(
                "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        /* One write per line (O_APPEND): lines never interleave. A full disk loses a line, never the loop. */
        (void)!write(p->record_fd, line, strlen(line));
}

/* ---- connections: end, answer ---- */

static void lookup_cancel(struct conn *c)
{
        if (!c->lookup)
                return;
        resolver_cancel(c->p->resolver, c->lookup);
        c->lookup = NULL;
        c->p->running_lookups--;
}

static void conn_close(struct conn *c)
{
        struct proxy *p = c->p;
        if (c->state == ST_DEAD)
                return;
        record(c);
        c->state = ST_DEAD;
        lookup_cancel(c);
        close_end(&c->client);
        close_end(&c->upstream);
        flow_done(&c->up);
        flow_done(&c->down);
        free(c->head);
        c->head = NULL;
        free(c->rhead);
        c->rhead = NULL;
        if (c->prev)
                c->prev->next = c->next;
        else
                p->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->next = p->dead;
        p->dead = c;
        if (p->accept_paused && !p->finished) {
                p->accept_paused = false;
                (void)set_events(p, &p->listener, EPOLLIN);
        }
}

static const char *status_text(int status)
{
        switch (status) {
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 408: return "Request Timeout";
        case 431: return "Request Header Fields Too Large";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        case 505: return "HTTP Version Not Supported";
        default: return "Error";
        }
}

static void client_write(struct conn *c);

/* Answer the client with `status` and the reason (already in c->reason),
 * then close once it is sent and the client had a moment to read it. */
static void respond(struct conn *c, int status)
{
        close_end(&c->upstream);
        lookup_cancel(c);
        free(c->down.pending);
        c->down.pending = xasprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                                    "Connection: close\r\n\r\ntrialbox: %s\n",
                                    status, status_text(status), strlen(c->reason) + 11, c->reason);
        c->down.pending_len = strlen(c->down.pending);
        c->down.pending_own = c->down.pending_len;
        c->down.pending_off = 0;
        c->state = ST_RESPOND;
        c->deadline_ms = now_ms() + DRAIN_MS;
        client_write(c);
}

static void deny(struct conn *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void deny(struct conn *c, int status, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
        va_end(ap);
        c->allowed = false;
        respond(c, status);
}

/* Send what is pending to `fd`: true when all of it went. */
static bool send_pending(struct conn *c, struct flow *f, int fd)
{
        while (f->pending_off < f->pending_len) {
                ssize_t n = RETRY_EINTR(
                        send(fd, f->pending + f->pending_off, f->pending_len - f->pending_off, MSG_NOSIGNAL));
                if (n < 0) {
                        if (errno == EAGAIN)
                                return false;
                        c->p->saw_epipe |= errno == EPIPE;
                        f->eof = true;
                        f->shut = true;
                        f->pending_off = f->pending_len;
                        return false;
                }
                size_t before = f->pending_off;
                f->pending_off += (size_t)n;
                if (f->pending_off > f->pending_own)
                        f->bytes += f->pending_off - (before > f->pending_own ? before : f->pending_own);
        }
        free(f->pending);
        f->pending = NULL;
        f->pending_len = f->pending_off = f->pending_own = 0;
        return true;
}

/* ST_RESPOND: send the answer, then half-close and drain what the client still sends. */
static void client_write(struct conn *c)
{
        if (!send_pending(c, &c->down, c->client.fd)) {
                if (c->down.shut)
                        conn_close(c);
                else
                        (void)set_events(c->p, &c->client, EPOLLOUT);
                return;
        }
        (void)shutdown(c->client.fd, SHUT_WR);
        c->state = ST_DRAIN;
        (void)set_events(c->p, &c->client, EPOLLIN);
}

static void drain(struct conn *c)
{
        char buf[4096];
        for (;;) {
                ssize_t n = read_retry(c->client.fd, buf, sizeof(buf));
                if (n == -EAGAIN)
                        return;
                if (n <= 0 || (c->drained += (size_t)n) > DRAIN_MAX) {
                        conn_close(c);
                        return;
                }
        }
}

/* ---- the relay ---- */

/* splice() into a socket whose peer is gone raises SIGPIPE (it has no
 * MSG_NOSIGNAL). From the first such splice of a dispatch to its end the
 * signal is held back; then it is taken away and the thread's mask put
 * back, so the process's disposition stays as it is. A dispatch that
 * splices into no socket leaves the mask alone, and when the caller blocks
 * SIGPIPE already (trialbox's loop takes it from its signalfd) the one call
 * that finds so is all. */
static void sigpipe_hold(struct proxy *p)
{
        if (p->sigpipe_held)
                return;
        sigset_t pipe_set;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &p->sigpipe_old);
        p->sigpipe_held = true;
}

static void sigpipe_release(struct proxy *p)
{
        if (!p->sigpipe_held)
                return;
        p->sigpipe_held = false;
        if (sigismember(&p->sigpipe_old, SIGPIPE))
                return; /* the caller's own mask: a SIGPIPE pending is the caller's to take */
        if (p->saw_epipe) {
                sigset_t pipe_set;
                sigemptyset(&pipe_set);
                sigaddset(&pipe_set, SIGPIPE);
                struct timespec zero = { 0 };
                while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE)
                        ;
                p->saw_epipe = false;
        }
        pthread_sigmask(SIG_SETMASK, &p->sigpipe_old, NULL);
}

static int flow_start(struct flow *f)
{
        if (pipe2(f->pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        /* Not asked: a pipe smaller than this (past the user's pipe quota) makes a splice move less,
         * and its being full is seen by the EAGAIN. */
        f->cap = RELAY_PIPE_START;
        return 0;
}

/* A bigger pipe moves more per splice, and per wake-up: a flow that has
 * relayed RELAY_BULK bytes is moving bulk data and asks for one, once.
 * Pages are only taken while it is full, but the user's pipe quota
 * (fs/pipe-user-pages-soft, shared by every process of the user) counts
 * its size: were every flow's pipe grown, a few dozen connections of a
 * user's Trials would use it up, and every pipe after that would get two
 * pages. Past the quota the kernel refuses: the pipe stays as it is. */
static void flow_grow(struct flow *f)
{
        f->grown = true;
        int size = fcntl(f->pipe[1], F_SETPIPE_SZ, RELAY_PIPE_SIZE);
        if (size > 0)
                f->cap = (size_t)size;
}

/* Send what is pending, then (when `ready`: an event concerns this way)
 * move what can be moved from `src` to `dst`, without blocking. */
static void pump(struct conn *c, struct flow *f, int src, int dst, bool ready)
{
        if (f->pending && !send_pending(c, f, dst))
                return;
        for (int round = 0; ready && round < PUMP_ROUNDS && !f->shut; round++) {
                bool moved = false;
                if (!f->eof && f->in_pipe < f->cap) {
                        ssize_t n = RETRY_EINTR(splice(src, NULL, f->pipe[1], NULL, f->cap - f->in_pipe,
                                                       SPLICE_F_MOVE | SPLICE_F_NONBLOCK));
                        if (n > 0) {
                                f->in_pipe += (size_t)n;
                                moved = true;
                        } else if (n == 0 || errno != EAGAIN) {
                                f->eof = true;
                        } else if (f->in_pipe > 0) {
                                /* Maybe the source is empty, maybe the pipe is full: either way, wait
                                 * for the destination to take some before reading again. */
                                f->full = true;
                        }
                }
                if (f->in_pipe > 0) {
                        sigpipe_hold(c->p);
                        ssize_t n = RETRY_EINTR(
                                splice(f->pipe[0], NULL, dst, NULL, f->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK));
                        if (n > 0) {
                                f->in_pipe -= (size_t)n;
                                f->bytes += (uint64_t)n;
                                f->full = false;
                                moved = true;
                                if (!f->grown && f->bytes >= RELAY_BULK)
                                        flow_grow(f);
                        } else if (n < 0 && errno != EAGAIN) {
                                /* The destination is gone: nothing more can be delivered this way. */
                                c->p->saw_epipe |= errno == EPIPE;
                                f->eof = true;
                                f->in_pipe = 0;
                                f->shut = true;
                        }
                }
                if (!moved)
                        break;
        }
        if (f->eof && f->in_pipe == 0 && !f->pending && !f->shut) {
                (void)shutdown(dst, SHUT_WR);
                f->shut = true;
        }
}

static uint32_t wants(const struct flow *f, bool as_src)
{
        if (as_src)
                return !f->eof && !f->pending && !f->full && f->in_pipe < f->cap ? EPOLLIN : 0;
        return !f->shut && (f->pending || f->in_pipe > 0) ? EPOLLOUT : 0;
}

/* Hand the client what the response head became, then the bytes after it:
 * `own` bytes the proxy wrote (not counted; `counted` server bytes they
 * stand for are), then `rest` counted as relayed. */
static void down_pending(struct conn *c, const char *own, size_t own_len, size_t counted, const char *rest,
                         size_t rest_len)
{
        struct flow *f = &c->down;
        f->pending = xmalloc(own_len + rest_len + 1);
        memcpy(f->pending, own, own_len);
        if (rest_len > 0)
                memcpy(f->pending + own_len, rest, rest_len);
        f->pending_len = own_len + rest_len;
        f->pending_own = own_len;
        f->pending_off = 0;
        f->bytes += counted;
}

/* Absolute-form: read the server's response head and rewrite it
 * (proxy_response_rewrite). Clears c->resp_head once the client's bytes
 * are pending; until then the down flow only reads. */
static void read_response_head(struct conn *c)
{
        if (!c->rhead)
                c->rhead = xmalloc(PROXY_HEAD_MAX + 1);
        bool eof = false;
        while (c->rhead_len < PROXY_HEAD_MAX) {
                ssize_t n = read(c->upstream.fd, c->rhead + c->rhead_len, PROXY_HEAD_MAX - c->rhead_len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n <= 0) {
                        eof = true;
                        break;
                }
                c->rhead_len += (size_t)n;
        }
        struct strbuf out = { 0 };
        size_t used = 0, counted = 0;
        strbuf_add(&out, "");
        for (;;) {
                bool interim = false;
                int r = proxy_response_rewrite(c->rhead + used, c->rhead_len - used, &out, &interim);
                if (r == 0 && !eof) {
                        if (used == 0) {
                                free(out.s);
                                return; /* wait for more of it */
                        }
                        /* Interim heads go now; the final one is still to come. */
                        down_pending(c, out.s, out.len, counted, NULL, 0);
                        memmove(c->rhead, c->rhead + used, c->rhead_len - used);
                        c->rhead_len -= used;
                        free(out.s);
                        return;
                }
                if (r <= 0) {
                        /* Not a head it can read (or cut short): the rest goes as it came. */
                        down_pending(c, out.s, out.len, counted, c->rhead + used, c->rhead_len - used);
                        break;
                }
                used += (size_t)r;
                counted += (size_t)r;
                if (!interim) {
                        down_pending(c, out.s, out.len, counted, c->rhead + used, c->rhead_len - used);
                        break;
                }
        }
        free(out.s);
        free(c->rhead);
        c->rhead = NULL;
        c->rhead_len = 0;
        c->resp_head = false;
        c->down.eof = eof;
}

/* The ways of a relay: up (client to server), down (server to client). */
#define WAY_UP 1u
#define WAY_DOWN 2u

/* The ways an event on `e` concerns: its end is the source of one way and
 * the destination of the other. A hang-up concerns both. */
static unsigned ways_of(const struct conn *c, const struct end *e, uint32_t events)
{
        unsigned src = e == &c->client ? WAY_UP : WAY_DOWN, dst = src ^ (WAY_UP | WAY_DOWN);
        if (events & EPOLLHUP)
                return WAY_UP | WAY_DOWN;
        return ((events & EPOLLIN) ? src : 0) | ((events & EPOLLOUT) ? dst : 0);
}

/* Move what `ways` can move, and what the proxy has of its own to send:
 * only the ways an event concerns are spliced, so an idle way costs no
 * splice that could only say EAGAIN. */
static void relay(struct conn *c, unsigned ways)
{
        if (ways & WAY_UP || c->up.pending)
                pump(c, &c->up, c->client.fd, c->upstream.fd, ways & WAY_UP);
        if (ways & WAY_DOWN || c->down.pending) {
                /* Interim heads (100 Continue) first, then the final one read and rewritten. */
                if (c->resp_head && c->down.pending && !send_pending(c, &c->down, c->client.fd) && c->down.shut)
                        c->resp_head = false; /* the client is gone: the relay winds down as usual */
                if (c->resp_head && !c->down.pending && !c->down.shut)
                        read_response_head(c);
                if (!c->resp_head)
                        pump(c, &c->down, c->upstream.fd, c->client.fd, ways & WAY_DOWN);
        }
        if (c->up.shut && c->down.shut) {
                conn_close(c);
                return;
        }
        (void)set_events(c->p, &c->client, wants(&c->up, true) | wants(&c->down, false));
        (void)set_events(c->p, &c->upstream, wants(&c->down, true) | wants(&c->up, false));
}

static void relay_start(struct conn *c)
{
        if (flow_start(&c->up) < 0 || flow_start(&c->down) < 0) {
                c->allowed = false;
                deny(c, 503, "the proxy is out of file descriptors; retry later");
                return;
        }
        c->state = ST_RELAY;
        c->deadline_ms = 0;
        struct strbuf up = { 0 };
        size_t own;
        if (c->req.connect) {
                c->down.pending = xstrdup("HTTP/1.1 200 Connection established\r\n\r\n");
                c->down.pending_len = c->down.pending_own = strlen(c->down.pending);
                strbuf_add(&up, "");
                own = 0;
        } else {
                proxy_request_rewrite(c->head, &c->req, &up);
                own = up.len;
                c->resp_head = true;
        }
        /* Bytes the client sent after its head go first, counted as its own. */
        size_t early = c->head_len - c->req.head_len;
        if (early > 0 || own > 0) {
                c->up.pending = xmalloc(own + early + 1);
                memcpy(c->up.pending, up.s, own);
                memcpy(c->up.pending + own, c->head + c->req.head_len, early);
                c->up.pending_len = own + early;
                c->up.pending_own = own;
        }
        free(up.s);
        free(c->head);
        c->head = NULL;
        c->head_len = 0;
        /* What is pending goes now; the sockets are watched from here for the rest. */
        relay(c, 0);
}

/* ---- connecting ---- */

static void connect_next(struct conn *c, int last_error);

static void connect_done(struct conn *c)
{
        int e = 0;
        socklen_t len = sizeof(e);
        if (getsockopt(c->upstream.fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
                e = errno;
        if (e == 0) {
                relay_start(c);
                return;
        }
        close_end(&c->upstream);
        connect_next(c, e);
}

static void connect_next(struct conn *c, int last_error)
{
        struct proxy *p = c->p;
        while (c->next_addr < c->n_addrs) {
                const struct sockaddr_storage *a = &c->addrs[c->next_addr++];
                socklen_t alen = a->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
                int fd = socket(a->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        last_error = errno;
                        continue;
                }
                set_nodelay(fd);
                if (connect(fd, (const struct sockaddr *)a, alen) < 0 && errno != EINPROGRESS) {
                        last_error = errno;
                        close(fd);
                        continue;
                }
                c->upstream = (struct end){ .kind = END_UPSTREAM, .fd = fd, .c = c };
                if (add_end(p, &c->upstream, EPOLLOUT) < 0) {
                        last_error = errno;
                        close_end(&c->upstream);
                        continue;
                }
                (void)set_events(p, &c->client, 0);
                c->state = ST_CONNECTING;
                return;
        }
        char where[INET6_ADDRSTRLEN] = "?";
        uint16_t port = c->req.port;
        if (c->n_addrs > 0) {
                addr_text(&c->addrs[c->n_addrs - 1], where, sizeof(where));
                port = get_port(&c->addrs[c->n_addrs - 1]);
        }
        c->allowed = true; /* allowed by the policy; the server could not be reached */
        snprintf(c->reason, sizeof(c->reason), "cannot connect to %s port %u: %s", where, (unsigned)port,
                 strerror(last_error));
        respond(c, 502);
}

/* Take the resolved addresses that may be connected to; deny when none may. */
static void use_addresses(struct conn *c, const struct addrinfo *ai)
{
        const char *refusal = NULL;
        char refused[INET6_ADDRSTRLEN] = "";
        c->n_addrs = c->next_addr = 0;
        for (; ai && c->n_addrs < ADDRS_MAX; ai = ai->ai_next) {
                if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
                        continue;
                struct sockaddr_storage ss = { 0 };
                memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
                const char *why = netpolicy_refuses_address(c->p->policy, ai->ai_addr, c->req.port);
                if (why) {
                        if (!refusal) {
                                refusal = why;
                                addr_text(&ss, refused, sizeof(refused));
                        }
                        continue;
                }
                set_port(&ss, c->req.port);
                c->addrs[c->n_addrs++] = ss;
        }
        if (c->n_addrs == 0) {
                if (refusal)
                        deny(c, 403, "'%s' resolves to %s (%s), which is refused unless that address is listed",
                             c->req.host, refused, refusal);
                else
                        deny(c, 502, "'%s' has no address", c->req.host);
                return;
        }
        c->allowed = true;
        connect_next(c, ECONNREFUSED);
}

/* ---- resolving ---- */

static void lookups_ready(struct proxy *p)
{
        struct resolver_lookup *lk;
        while ((lk = resolver_next(p->resolver))) {
                struct conn *c = lk->data;
                p->running_lookups--;
                c->lookup = NULL;
                if (lk->error != 0)
                        deny(c, 502, "cannot resolve '%s': %s", c->req.host, gai_strerror(lk->error));
                else
                        use_addresses(c, lk->result);
                resolver_lookup_free(lk);
        }
}

static void resolve(struct conn *c)
{
        struct proxy *p = c->p;
        if (p->running_lookups >= LOOKUPS_MAX) {
                c->allowed = true;
                snprintf(c->reason, sizeof(c->reason), "too many name lookups at once; retry");
                respond(c, 503);
                return;
        }
        c->lookup = resolver_start(p->resolver, c->req.host, c->req.port, c);
        if (!c->lookup) {
                deny(c, 503, "cannot start a name lookup: %s", strerror(errno));
                return;
        }
        p->running_lookups++;
        c->state = ST_RESOLVING;
        c->deadline_ms = now_ms() + p->connect_timeout_ms;
        (void)set_events(p, &c->client, 0);
}

static const struct test_host *test_host(const struct proxy *p, const char *host)
{
        for (size_t i = 0; i < p->n_test_hosts; i++)
                if (strcmp(p->test_hosts[i].host, host) == 0)
                        return &p->test_hosts[i];
        return NULL;
}

/* The request head is complete: check it, then find where to connect. */
static void decide(struct conn *c)
{
        struct proxy *p = c->p;
        c->have_req = true;
        c->pattern = netpolicy_match(p->policy, c->req.host, c->req.port);
        if (!c->pattern) {
                deny(c, 403, "'%s' port %u is not on this trial's allowlist (--allow-host)", c->req.host,
                     (unsigned)c->req.port);
                return;
        }
        snprintf(c->reason, sizeof(c->reason), "allowed by '%s'", c->pattern);
        c->allowed = true;
        c->deadline_ms = now_ms() + p->connect_timeout_ms;
        struct sockaddr_storage ss;
        const struct test_host *t = test_host(p, c->req.host);
        if (!t && netpolicy_is_loopback_name(c->req.host)) {
                /* Listed with its port (netpolicy.h): this host's loopback, never resolved. */
                struct sockaddr_in *v4 = (struct sockaddr_in *)&c->addrs[0];
                struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&c->addrs[1];
                memset(c->addrs, 0, 2 * sizeof(c->addrs[0]));
                v4->sin_family = AF_INET;
                v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                v6->sin6_family = AF_INET6;
                v6->sin6_addr = in6addr_loopback;
                set_port(&c->addrs[0], c->req.port);
                set_port(&c->addrs[1], c->req.port);
                c->n_addrs = 2;
                c->next_addr = 0;
                connect_next(c, ECONNREFUSED);
                return;
        }
        if (t || netpolicy_ip_literal(c->req.host, &ss)) {
                /* Listed literally (an address pattern or a test name): no resolving, no address check. */
                if (t && p->on_lookup)
                        p->on_lookup(c->req.host, p->ctx);
                c->addrs[0] = t ? t->addr : ss;
                if (!t || get_port(&t->addr) == 0)
                        set_port(&c->addrs[0], c->req.port);
                c->n_addrs = 1;
                c->next_addr = 0;
                connect_next(c, ECONNREFUSED);
                return;
        }
        if (p->on_lookup)
                p->on_lookup(c->req.host, p->ctx);
        resolve(c);
}

/* ---- reading the head ---- */

/* Read until the head is complete (or the buffer full): what follows it
 * stays in the socket for the relay, and a read that could only say
 * EAGAIN is not made. */
static void read_head(struct conn *c)
{
        if (!c->head)
                c->head = xmalloc(PROXY_HEAD_MAX + 1);
        int r = 0;
        while (r == 0 && c->head_len < PROXY_HEAD_MAX) {
                ssize_t n = read_retry(c->client.fd, c->head + c->head_len, PROXY_HEAD_MAX - c->head_len);
                if (n == -EAGAIN)
                        return;
                if (n <= 0) {
                        snprintf(c->reason, sizeof(c->reason), "the client closed before a complete request");
                        conn_close(c);
                        return;
                }
                c->head_len += (size_t)n;
                r = proxy_request_parse(c->head, c->head_len, &c->req);
        }
        if (r == 0)
                return;
        if (r < 0) {
                deny(c, c->req.status, "%s", c->req.why);
                return;
        }
        decide(c);
}

/* ---- the loop ---- */

static void accept_some(struct proxy *p)
{
        for (int i = 0; i < ACCEPT_BATCH; i++) {
                int fd = RETRY_EINTR(accept4(p->listener.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC));
                if (fd < 0) {
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                                /* Wait for a connection to end (or the next tick) instead of spinning. */
                                p->accept_paused = true;
                                (void)set_events(p, &p->listener, 0);
                        }
                        if (errno == ECONNABORTED)
                                continue;
                        return;
                }
                set_nodelay(fd);
                struct conn *c = xcalloc(1, sizeof(*c));
                c->p = p;
                c->client = (struct end){ .kind = END_CLIENT, .fd = fd, .c = c };
                c->upstream = (struct end){ .kind = END_UPSTREAM, .fd = -1, .c = c };
                c->up.pipe[0] = c->up.pipe[1] = c->down.pipe[0] = c->down.pipe[1] = -1;
                c->start_ms = now_ms();
                clock_gettime(CLOCK_REALTIME, &c->start_real);
                c->deadline_ms = c->start_ms + p->head_timeout_ms;
                c->next = p->conns;
                if (p->conns)
                        p->conns->prev = c;
                p->conns = c;
                if (add_end(p, &c->client, EPOLLIN) < 0) {
                        snprintf(c->reason, sizeof(c->reason), "the proxy cannot watch the connection: %s",
                                 strerror(errno));
                        conn_close(c);
                        continue;
                }
                /* A client writes its head as soon as it is connected: it is often there already,
                 * and reading it now saves a trip through the event loop. */
                read_head(c);
        }
}

static void timeout(struct conn *c)
{
        switch (c->state) {
        case ST_HEAD:
                deny(c, 408, "no complete request within %d ms", c->p->head_timeout_ms);
                break;
        case ST_RESOLVING:
        case ST_CONNECTING:
                c->allowed = true;
                snprintf(c->reason, sizeof(c->reason), "'%s' port %u not reached within %d ms", c->req.host,
                         (unsigned)c->req.port, c->p->connect_timeout_ms);
                respond(c, 504);
                break;
        default:
                conn_close(c);
        }
}

static void tick(struct proxy *p)
{
        uint64_t expirations;
        (void)!read(p->timer.fd, &expirations, sizeof(expirations));
        long long now = now_ms();
        for (struct conn *c = p->conns, *next; c; c = next) {
                next = c->next;
                if (c->deadline_ms && now >= c->deadline_ms)
                        timeout(c);
        }
        if (p->accept_paused && !p->finished) {
                p->accept_paused = false;
                (void)set_events(p, &p->listener, EPOLLIN);
        }
}

static void conn_event(struct conn *c, const struct end *e, uint32_t events)
{
        if (c->state == ST_DEAD)
                return;
        switch (c->state) {
        case ST_HEAD:
                read_head(c);
                break;
        case ST_CONNECTING:
                connect_done(c);
                break;
        case ST_RELAY:
                if (events & EPOLLERR)
                        conn_close(c); /* reset: neither way can go on */
                else
                        relay(c, ways_of(c, e, events));
                break;
        case ST_RESPOND:
                client_write(c);
                break;
        case ST_DRAIN:
                drain(c);
                break;
        case ST_RESOLVING:
                /* Only an error or hang-up reaches here (nothing is watched): the client is gone. */
                if (events & (EPOLLERR | EPOLLHUP)) {
                        snprintf(c->reason + strlen(c->reason), sizeof(c->reason) - strlen(c->reason),
                                 "; the client left while resolving");
                        conn_close(c);
                }
                break;
        case ST_DEAD:
                break;
        }
}

static void free_dead(struct proxy *p)
{
        while (p->dead) {
                struct conn *c = p->dead;
                p->dead = c->next;
                free(c);
        }
}

int proxy_dispatch(struct proxy *p)
{
        struct epoll_event ev[128];
        int n = epoll_wait(p->epfd, ev, (int)TB_ARRAY_SIZE(ev), 0);
        int r = n < 0 && errno != EINTR ? -errno : 0;
        for (int i = 0; i < n; i++) {
                struct end *e = ev[i].data.ptr;
                switch (e->kind) {
                case END_LISTEN:
                        accept_some(p);
                        break;
                case END_TIMER:
                        tick(p);
                        break;
                case END_LOOKUP:
                        lookups_ready(p);
                        break;
                case END_CLIENT:
                case END_UPSTREAM:
                        conn_event(e->c, e, ev[i].events);
                        break;
                }
        }
        free_dead(p);
        sigpipe_release(p);
        return r;
}

int proxy_fd(const struct proxy *p)
{
        return p->epfd;
}

/* ---- set-up and tear-down ---- */

#ifdef TRIALBOX_TESTING
static int parse_test_hosts(struct proxy *p, const char *spec, struct tb_error *err)
{
        _cleanup_free_ char *copy = xstrdup(spec);
        char *save = NULL;
        for (char *item = strtok_r(copy, ", \t\n", &save); item; item = strtok_r(NULL, ", \t\n", &save)) {
                char *eq = strchr(item, '=');
                struct test_host t = { 0 };
                char addr[NETPOLICY_HOST_MAX];
                uint16_t port = 0;
                if (!eq || (size_t)(eq - item) >= sizeof(t.host))
                        return tb_fail(err, -EINVAL, PROXY_TEST_HOSTS_ENV ": '%s' is not NAME=ADDRESS[:PORT]", item);
                memcpy(t.host, item, (size_t)(eq - item));
                snprintf(addr, sizeof(addr), "%s", eq + 1);
                char *colon = addr[0] == '[' ? strstr(addr, "]:") : strrchr(addr, ':');
                if (colon) {
                        if (addr[0] == '[')
                                colon++;
                        *colon = '\0';
                        long v = strtol(colon + 1, NULL, 10);
                        if (v < 1 || v > 65535)
                                return tb_fail(err, -EINVAL, PROXY_TEST_HOSTS_ENV ": bad port in '%s'", item);
                        port = (uint16_t)v;
                }
                if (!netpolicy_normalize_host(t.host) || !netpolicy_normalize_host(addr) ||
                    !netpolicy_ip_literal(addr, &t.addr))
                        return tb_fail(err, -EINVAL, PROXY_TEST_HOSTS_ENV ": '%s' is not NAME=ADDRESS[:PORT]", item);
                set_port(&t.addr, port);
                p->test_hosts = xrealloc(p->test_hosts, (p->n_test_hosts + 1) * sizeof(*p->test_hosts));
                p->test_hosts[p->n_test_hosts++] = t;
        }
        return 0;
}

#endif

static void raise_nofile(void)
{
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void)setrlimit(RLIMIT_NOFILE, &rl);
        }
}

/* The session's side of every connection is a loopback hop inside the
 * session's own network namespace: nothing is lost there, nothing needs
 * pacing. The host's default congestion control may pace (bbr does, with a
 * timer per packet where no fq qdisc paces for it); reno (always built in,
 * always allowed) does not. On a host defaulting to bbr, reno here cut the
 * proxy's CPU per GB relayed by a fifth to a third and up to doubled bulk
 * throughput. Set on the listening socket, before any connection: accepted
 * sockets inherit it, whereas a socket switched once established keeps
 * pacing (bbr turned it on for good). The upstream side keeps the host's
 * choice, made for the real network. Best effort. */
static void session_side_congestion(int listen_fd)
{
        static const char reno[] = "reno";
        (void)setsockopt(listen_fd, IPPROTO_TCP, TCP_CONGESTION, reno, sizeof(reno) - 1);
}

static int proxy_setup(struct proxy *p, const struct proxy_config *cfg, struct tb_error *err)
{
        int flags = fcntl(p->listener.fd, F_GETFL);
        if (flags < 0 || fcntl(p->listener.fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return tb_fail(err, -errno, "the proxy's listening socket: %s", strerror(errno));
        session_side_congestion(p->listener.fd);
        p->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (p->epfd < 0)
                return tb_fail(err, -errno, "creating the proxy's epoll set: %s", strerror(errno));
        p->timer = (struct end){ .kind = END_TIMER, .fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC) };
        if (p->timer.fd < 0)
                return tb_fail(err, -errno, "creating the proxy's timer: %s", strerror(errno));
        p->resolver = resolver_new();
        if (!p->resolver)
                return tb_fail(err, -errno, "creating the proxy's resolver: %s", strerror(errno));
        p->lookups = (struct end){ .kind = END_LOOKUP, .fd = resolver_fd(p->resolver) };
        int tick_ms = p->head_timeout_ms / 4;
        tick_ms = tick_ms < 10 ? 10 : tick_ms > 250 ? 250 : tick_ms;
        struct itimerspec its = { .it_interval = { 0, tick_ms * 1000000L }, .it_value = { 0, tick_ms * 1000000L } };
        if (timerfd_settime(p->timer.fd, 0, &its, NULL) < 0 || add_end(p, &p->listener, EPOLLIN) < 0 ||
            add_end(p, &p->timer, EPOLLIN) < 0 || add_end(p, &p->lookups, EPOLLIN) < 0)
                return tb_fail(err, -errno, "setting up the proxy's event loop: %s", strerror(errno));
        /* The host's own addresses, as seen from here (trialbox's namespace, where connections start). */
        int r = netpolicy_add_own_addresses(p->policy, err);
        if (r < 0)
                return r;
#ifdef TRIALBOX_TESTING
        if (cfg->test_hosts)
                return parse_test_hosts(p, cfg->test_hosts, err);
#endif
        return 0;
}

int proxy_new(const struct proxy_config *cfg, struct proxy **out, struct tb_error *err)
{
        struct proxy *p = xcalloc(1, sizeof(*p));
        p->listener = (struct end){ .kind = END_LISTEN, .fd = cfg->listen_fd };
        p->timer.fd = -1;
        p->lookups.fd = -1;
        p->epfd = -1;
        p->record_fd = cfg->record_fd;
        p->policy = cfg->policy ? cfg->policy : netpolicy_new();
        p->head_timeout_ms = cfg->head_timeout_ms > 0 ? cfg->head_timeout_ms : 30000;
        p->connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 10000;
        p->on_lookup = cfg->on_lookup;
        p->ctx = cfg->ctx;
        p->hosts = json_object_new_object();
        p->other_hosts = json_object_new_object();
        json_object_object_add(p->other_hosts, "allowed", json_object_new_int64(0));
        json_object_object_add(p->other_hosts, "denied", json_object_new_int64(0));
        raise_nofile();
        int r = proxy_setup(p, cfg, err);
        if (r < 0) {
                proxy_free(p);
                return r;
        }
        *out = p;
        return 0;
}

void proxy_finish(struct proxy *p)
{
        if (p->finished)
                return;
        p->finished = true;
        close_end(&p->listener);
        while (p->conns) {
                struct conn *c = p->conns;
                if (c->state == ST_HEAD)
                        snprintf(c->reason, sizeof(c->reason), "the trial ended before a complete request");
                conn_close(c);
        }
        free_dead(p);
}

struct host_count {
        const char *name;
        int64_t allowed, denied;
};

static int by_count(const void *a, const void *b)
{
        const struct host_count *x = a, *y = b;
        int64_t nx = x->allowed + x->denied, ny = y->allowed + y->denied;
        return nx != ny ? (nx < ny ? 1 : -1) : strcmp(x->name, y->name);
}

static int64_t field(struct json_object *o, const char *key)
{
        struct json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

struct json_object *proxy_stats_json(const struct proxy *p)
{
        struct json_object *o = json_object_new_object();
        json_object_object_add(o, "allowed", json_object_new_int64(p->allowed));
        json_object_object_add(o, "denied", json_object_new_int64(p->denied));
        /* The record is bounded whatever the session asks for: the hosts asked
         * for most, then one sum for the rest (network.jsonl has them all). */
        size_t n = (size_t)json_object_object_length(p->hosts), k = 0;
        struct host_count *v = xcalloc(n ? n : 1, sizeof *v);
        json_object_object_foreach(p->hosts, name, h)
                v[k++] = (struct host_count){ .name = name, .allowed = field(h, "allowed"), .denied = field(h, "denied") };
        qsort(v, k, sizeof *v, by_count);
        struct json_object *hosts = json_object_new_object();
        int64_t rest_allowed = field(p->other_hosts, "allowed"), rest_denied = field(p->other_hosts, "denied");
        int64_t rest_hosts = field(p->other_hosts, "hosts");
        for (size_t i = 0; i < k; i++) {
                if (i < PROXY_RECORD_HOSTS) {
                        struct json_object *one = json_object_new_object();
                        json_object_object_add(one, "allowed", json_object_new_int64(v[i].allowed));
                        json_object_object_add(one, "denied", json_object_new_int64(v[i].denied));
                        json_object_object_add(hosts, v[i].name, one);
                } else {
                        rest_allowed += v[i].allowed;
                        rest_denied += v[i].denied;
                        rest_hosts++;
                }
        }
        free(v);
        json_object_object_add(o, "hosts", hosts);
        if (rest_allowed || rest_denied) {
                struct json_object *other = json_object_new_object();
                json_object_object_add(other, "allowed", json_object_new_int64(rest_allowed));
                json_object_object_add(other, "denied", json_object_new_int64(rest_denied));
                json_object_object_add(other, "hosts", json_object_new_int64(rest_hosts));
                json_object_object_add(o, "other_hosts", other);
        }
        return o;
}

void proxy_free(struct proxy *p)
{
        if (!p)
                return;
        proxy_finish(p);
        resolver_free(p->resolver);
        tb_closep(&p->timer.fd);
        tb_closep(&p->epfd);
        netpolicy_free(p->policy);
        free(p->test_hosts);
        json_object_put(p->hosts);
        json_object_put(p->other_hosts);
        free(p);
}
