/* The allowlist proxy of `--network allow`: an HTTP proxy, single-threaded
 * and non-blocking (epoll), serving a listening socket it is given (made by
 * the caller inside the session's network namespace) and connecting out from
 * trialbox's own namespace.
 *
 * - `CONNECT host:port` (then a blind relay both ways, half-close aware) and
 *   absolute-form requests (`GET http://host/path`: forwarded in origin-form
 *   with Proxy-* and hop-by-hop headers removed, Host set from the target,
 *   and `Connection: close`: one request per connection; the server's
 *   response head reaches the client with `Connection: close` too, so a
 *   client that keeps its connections alive opens a new one for its next
 *   request: proxy_response_rewrite).
 * - host:port is checked against the netpolicy before anything is resolved:
 *   a denied name never reaches the resolver; `localhost`, listed with its
 *   port, is never resolved (127.0.0.1, then ::1). Allowed names are resolved by
 *   resolver.c's threads (the loop never blocks on DNS), and addresses
 *   netpolicy_refuses_address() names are not connected to.
 * - Refusals are answered `HTTP/1.1 403 Forbidden` (400/431/505 for bad
 *   requests, 408 for a head not sent in time, 502/504 when the server
 *   cannot be reached) with a one-line body saying why.
 * - One JSON line per connection is appended to the record fd when it ends:
 *   {"time","host","port","method","decision","reason","bytes_up","bytes_down","duration_ms"}.
 *   time: when it was accepted (RFC 3339, ms, UTC). host/port/method: null
 *   when no valid request head came. decision: "allowed" (the allowlist and
 *   the address checks passed) or "denied". bytes_up/bytes_down: bytes relayed
 *   from the client after its request head, and from the server to the client.
 *
 * Driving it: poll proxy_fd() for POLLIN with the rest of the event loop and
 * call proxy_dispatch() when it is readable. A timer inside keeps the
 * deadlines (a request head within head_timeout_ms, a connection within
 * connect_timeout_ms), so nothing else has to be scheduled. */
#ifndef TB_PROXY_H
#define TB_PROXY_H

#include <json-c/json.h>
#include <stdbool.h>

#include "network/netpolicy.h"
#include "base/error.h"

/* The test-only name map: "allowed.test=127.0.0.1:8080,other.test=[::1]"
 * (NAME=ADDRESS[:PORT], comma-separated; without a port, the requested one).
 * A mapped name resolves to its address without DNS and counts as listed
 * literally (it may be a loopback address). Honoured only in builds with
 * TRIALBOX_TESTING (CMake option, off in Release builds); see
 * proxy_test_hosts_enabled(). */
#define PROXY_TEST_HOSTS_ENV "TRIALBOX_TEST_HOSTS"

struct proxy_config {
        int listen_fd;              /* a listening TCP socket; the proxy owns it (closes it) from proxy_new on */
        int record_fd;              /* network.jsonl, opened O_APPEND by the caller; borrowed; -1: no record */
        struct netpolicy *policy;   /* owned by the proxy from proxy_new on, even when it fails */
        const char *test_hosts;     /* PROXY_TEST_HOSTS_ENV's value or NULL; ignored unless proxy_test_hosts_enabled() */
        int head_timeout_ms;        /* 0: 30 s for the whole request head */
        int connect_timeout_ms;     /* 0: 10 s to resolve and connect */
        /* Called with every name handed to the resolver (or the test map), before it is: tests show with it
         * that a denied name is never resolved. May be NULL. */
        void (*on_lookup)(const char *host, void *ctx);
        void *ctx;
};

struct proxy;

/* Start serving cfg->listen_fd (made non-blocking here, and given reno
 * congestion control, which every accepted socket inherits: the session's
 * side is a loopback hop, where the host's default may pace for nothing).
 * Adds the host's own addresses (getifaddrs, here) to cfg->policy's refused
 * ones. Also raises this process's RLIMIT_NOFILE soft limit to its hard limit
 * (children forked later inherit it). 0, or a negative errno with err set
 * (cfg's fd and policy are released then too). */
int proxy_new(const struct proxy_config *cfg, struct proxy **out, struct tb_error *err);

/* The fd to poll for POLLIN (an epoll fd). */
int proxy_fd(const struct proxy *p);

/* Handle what is ready, without blocking. 0, or a negative errno when the
 * proxy itself broke (its epoll fd failed): then stop polling it. */
int proxy_dispatch(struct proxy *p);

/* Stop listening and end every connection still open, recording each (a
 * request never completed is recorded denied, "the trial ended"). Call it
 * when the session is over, before proxy_stats_json(). */
void proxy_finish(struct proxy *p);

/* The counts for the Outcome's `network` object, for every connection
 * recorded so far: {"allowed": N, "denied": N, "hosts": {"host": {"allowed":
 * N, "denied": N}, ...}, "other_hosts": {"allowed": N, "denied": N, "hosts":
 * N}}. Bounded, whatever the session asked for: "hosts" holds the
 * PROXY_RECORD_HOSTS hosts asked for most (ties by name), "other_hosts"
 * (absent when empty) sums the rest and counts their names (names past the
 * 4096 the proxy tracks are summed, not counted). network.jsonl has every
 * connection. A new json-c object. */
#define PROXY_RECORD_HOSTS 20
struct json_object *proxy_stats_json(const struct proxy *p);

/* proxy_finish() if needed, then free everything. NULL is fine. */
void proxy_free(struct proxy *p);
static inline void proxy_freep(struct proxy **p) { proxy_free(*p); }

/* Was this build compiled to honour cfg->test_hosts (TRIALBOX_TESTING)? */
bool proxy_test_hosts_enabled(void);

#endif
