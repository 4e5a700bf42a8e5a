/* The allowlist proxy: its patterns, its request parser, and the proxy over
 * real sockets on loopback (an origin server in a thread of the test; test
 * names mapped to it with the test-only name map).
 *
 * Built twice: test_proxy (the proxy as tests build it) and
 * test_proxy_release (PROXY_RELEASE_CHECK: proxy.c compiled as a release is,
 * which must ignore the name map). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "network/netpolicy.h"
#include "network/proxy.h"
#include "network/proxy_request.h"
#include "tb_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- an origin server: HTTP heads are echoed back in a 200's body; anything else is echoed
 * as it comes, and "BYE\n" follows the client's end of stream ---- */

static void *origin_conn(void *arg)
{
        int fd = (int)(intptr_t)arg;
        char buf[65536];
        /* MSG_NOSIGNAL: a client that left must not stop the test with SIGPIPE (the proxy's own
         * SIGPIPEs are its business: this process has the default disposition). */
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n > 0 && (strncmp(buf, "GET ", 4) == 0 || strncmp(buf, "POST ", 5) == 0)) {
                buf[n] = '\0';
                char *head_end = strstr(buf, "\r\n\r\n");
                size_t len = head_end ? (size_t)(head_end - buf) + 4 : (size_t)n;
                char head[256];
                /* "/keep-alive": a 100 Continue first, then a server that would keep the connection. */
                int hn = strstr(buf, " /keep-alive ")
                                 ? snprintf(head, sizeof(head),
                                            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
                                            "Connection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n",
                                            len)
                                 : snprintf(head, sizeof(head),
                                            "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", len);
                (void)!send(fd, head, (size_t)hn, MSG_NOSIGNAL);
                (void)!send(fd, buf, len, MSG_NOSIGNAL);
        } else {
                while (n > 0 && send(fd, buf, (size_t)n, MSG_NOSIGNAL) == n)
                        n = read(fd, buf, sizeof(buf));
                (void)!send(fd, "BYE\n", 4, MSG_NOSIGNAL);
        }
        close(fd);
        return NULL;
}

static void *origin_loop(void *arg)
{
        int lfd = (int)(intptr_t)arg;
        for (;;) {
                int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        return NULL;
                pthread_t t;
                pthread_create(&t, NULL, origin_conn, (void *)(intptr_t)fd);
                pthread_detach(t);
        }
}

static int listen_loopback(uint16_t *port)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(a);
        ck_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 4096) == 0);
        ck_assert(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
        *port = ntohs(a.sin_port);
        return fd;
}

static uint16_t origin_port;
static int origin_fd = -1;

static void origin_start(void)
{
        origin_fd = listen_loopback(&origin_port);
        pthread_t t;
        pthread_create(&t, NULL, origin_loop, (void *)(intptr_t)origin_fd);
        pthread_detach(t);
}

/* ---- the proxy, run in a thread of its own as the supervisor's loop would run it ---- */

struct harness {
        struct proxy *proxy;
        uint16_t port;
        int stop;
        pthread_t thread;
        char *dir, record[1024];
        int record_fd;
        pthread_mutex_t lock;
        char lookups[4096]; /* every name handed to the resolver, one per line */
};

static void on_lookup(const char *host, void *ctx)
{
        struct harness *h = ctx;
        pthread_mutex_lock(&h->lock);
        size_t n = strlen(h->lookups);
        snprintf(h->lookups + n, sizeof(h->lookups) - n, "%s\n", host);
        pthread_mutex_unlock(&h->lock);
}

static void *proxy_loop(void *arg)
{
        struct harness *h = arg;
        for (;;) {
                struct pollfd pfd[2] = { { .fd = proxy_fd(h->proxy), .events = POLLIN }, { .fd = h->stop, .events = POLLIN } };
                if (poll(pfd, 2, -1) < 0)
                        continue;
                if (pfd[1].revents)
                        return NULL;
                ck_assert_int_eq(proxy_dispatch(h->proxy), 0);
        }
}

static char map_extra[256]; /* more NAME=ADDRESS[:PORT] entries for one test */

static char *test_hosts(void)
{
        return xasprintf("allowed.test=127.0.0.1:%u,a.wild.test=127.0.0.1:%u,wild.test=127.0.0.1:%u,"
                         "port.test=127.0.0.1:%u,%s",
                         origin_port, origin_port, origin_port, origin_port, map_extra);
}

/* A pattern with "{origin}" standing for the origin server's port. malloc'd. */
static char *subst_origin(const char *pattern)
{
        const char *at = strstr(pattern, "{origin}");
        if (!at)
                return xstrdup(pattern);
        return xasprintf("%.*s%u%s", (int)(at - pattern), pattern, origin_port, at + 8);
}

static void harness_start_with(struct harness *h, const char *const patterns[], int head_timeout_ms)
{
        memset(h, 0, sizeof(*h));
        pthread_mutex_init(&h->lock, NULL);
        if (origin_fd < 0)
                origin_start();
        struct netpolicy *np = netpolicy_new();
        struct tb_error err = { 0 };
        for (size_t i = 0; patterns[i]; i++) {
                _cleanup_free_ char *pat = subst_origin(patterns[i]);
                ck_assert_msg(netpolicy_add(np, pat, &err) == 0, "%s", err.msg);
        }
        h->dir = tmpdir_new();
        snprintf(h->record, sizeof(h->record), "%s/network.jsonl", h->dir);
        h->record_fd = open(h->record, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        ck_assert(h->record_fd >= 0);
        _cleanup_free_ char *map = test_hosts();
        struct proxy_config cfg = { .listen_fd = listen_loopback(&h->port), .record_fd = h->record_fd, .policy = np,
                                    .test_hosts = map, .head_timeout_ms = head_timeout_ms, .on_lookup = on_lookup,
                                    .ctx = h };
        ck_assert_msg(proxy_new(&cfg, &h->proxy, &err) == 0, "%s", err.msg);
        h->stop = eventfd(0, EFD_CLOEXEC);
        pthread_create(&h->thread, NULL, proxy_loop, h);
}

static void harness_start(struct harness *h, const char *const patterns[])
{
        harness_start_with(h, patterns, 0);
}

/* Stop the loop, end every connection; the stats as a JSON string (malloc'd). */
static char *harness_stop(struct harness *h)
{
        uint64_t one = 1;
        (void)!write(h->stop, &one, sizeof(one));
        pthread_join(h->thread, NULL);
        proxy_finish(h->proxy);
        struct json_object *stats = proxy_stats_json(h->proxy);
        char *s = xstrdup(json_object_to_json_string_ext(stats, JSON_C_TO_STRING_PLAIN));
        json_object_put(stats);
        proxy_free(h->proxy);
        close(h->stop);
        close(h->record_fd);
        return s;
}

static void harness_free(struct harness *h)
{
        tmpdir_remove(h->dir);
        free(h->dir);
        pthread_mutex_destroy(&h->lock);
}

static int connect_port(uint16_t port)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        ck_assert(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
        struct timeval tv = { .tv_sec = 30 }; /* a hang fails the test instead of stopping the run */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        return fd;
}

static void send_all(int fd, const char *s, size_t n)
{
        while (n > 0) {
                ssize_t w = write(fd, s, n);
                ck_assert(w > 0);
                s += w;
                n -= (size_t)w;
        }
}

static char *read_to_eof(int fd)
{
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        char buf[4096];
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf) - 1)) > 0) {
                buf[n] = '\0';
                strbuf_add(&sb, buf);
        }
        ck_assert_msg(n == 0, "read: %s", strerror(errno));
        return sb.s;
}

/* Send `req` on a new connection to the proxy and read everything back. */
__attribute__((unused)) static char *exchange(const struct harness *h, const char *req)
{
        int fd = connect_port(h->port);
        send_all(fd, req, strlen(req));
        char *s = read_to_eof(fd);
        close(fd);
        return s;
}

/* Read a response head byte by byte (so nothing after it is taken). malloc'd. */
static char *read_head(int fd)
{
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        char c[2] = { 0 };
        while (!strstr(sb.s, "\r\n\r\n") && read(fd, c, 1) == 1)
                strbuf_add(&sb, c);
        return sb.s;
}

static int open_tunnel(const struct harness *h, const char *authority, char **head)
{
        int fd = connect_port(h->port);
        dprintf(fd, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority);
        *head = read_head(fd);
        return fd;
}

__attribute__((unused)) static bool tunnel_opens(const struct harness *h, const char *authority)
{
        _cleanup_free_ char *head = NULL;
        int fd = open_tunnel(h, authority, &head);
        close(fd);
        return str_has_prefix(head, "HTTP/1.1 200 ");
}


/* ---- patterns ---- */

START_TEST(patterns_are_accepted_or_refused_as_usage_errors)
{
        static const struct {
                const char *pattern;
                bool ok;
                const char *why;
        } cases[] = {
                { "example.com", true, NULL },
                { "Example.COM.", true, NULL },
                { "*.example.com", true, NULL },
                { "example.com:443", true, NULL },
                { "*.example.com:8443", true, NULL },
                { "192.0.2.1", true, NULL },
                { "192.0.2.1:80", true, NULL },
                { "[2001:db8::1]", true, NULL },
                { "[::1]:8080", true, NULL },
                { "localhost:8080", true, NULL },
                /* This host's loopback: one port at a time, named exactly. */
                { "localhost", false, "one port at a time" },
                { "127.0.0.1", false, "one port at a time" },
                { "127.9.9.9", false, "one port at a time" },
                { "[::1]", false, "one port at a time" },
                { "0.0.0.0", false, "one port at a time" },
                { "[::]", false, "one port at a time" },
                { "[::ffff:127.0.0.1]", false, "one port at a time" },
                { "*.localhost", false, "under localhost" },
                { "model.localhost:8000", false, "under localhost" },
                { "under_score.example", true, NULL },
                { "*", false, "every host" },
                { "*.com", false, "top-level domain" },
                { "*.com.", false, "top-level domain" },
                { "*example.com", false, "leading '*.'" },
                { "a.*.example.com", false, "leading '*.'" },
                { "example.*", false, "leading '*.'" },
                { "**.example.com", false, "leading '*.'" },
                { "*.192.0.2.1", false, "cannot precede an address" },
                { "2001:db8::1", false, "in brackets" },
                { "[2001:db8::1", false, "not a host" },
                { "[example.com]", false, "not an IPv6" },
                { "[192.0.2.1]", false, "not an IPv6" },
                { "example.com:0", false, "65535" },
                { "example.com:65536", false, "65535" },
                { "example.com:", false, "65535" },
                { "example.com:+80", false, "65535" },
                { "example.com:http", false, "65535" },
                { "", false, "not a host" },
                { ".", false, "not a host name" },
                { "a..b", false, "not a host name" },
                { "-", false, NULL },
                { "exa mple.com", false, "not a host name" },
                { "exa/mple.com", false, "not a host name" },
                { "1.2.3", false, "not a host name" },
                { "2130706433", false, "not a host name" },
                { "256.1.1.1", false, "not a host name" },
                { "http://example.com", false, NULL },
                { "user@example.com", false, "not a host name" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                struct netpolicy *np = netpolicy_new();
                struct tb_error err = { 0 };
                int r = netpolicy_add(np, cases[i].pattern, &err);
                ck_assert_msg((r == 0) == cases[i].ok, "'%s': %d %s", cases[i].pattern, r, err.msg);
                if (!cases[i].ok) {
                        ck_assert_int_eq(r, -EINVAL);
                        ck_assert_int_eq(netpolicy_count(np), 0);
                        assert_contains(err.msg, "--allow-host '");
                        assert_contains(err.msg, "a pattern is example.com, *.example.com");
                        ck_assert_ptr_null(strchr(err.msg, '\n'));
                        if (cases[i].why)
                                assert_contains(err.msg, cases[i].why);
                }
                netpolicy_free(np);
        }
        printf("patterns: %zu cases\n", TB_ARRAY_SIZE(cases));
}
END_TEST

START_TEST(patterns_match_names_wildcards_ports_and_literals)
{
        static const char *const patterns[] = { "exact.example", "*.wild.example", "port.example:8443",
                                                "*.both.example:443", "192.0.2.7", "[2001:db8::7]:443", NULL };
        static const struct {
                const char *host;
                uint16_t port;
                const char *want; /* the pattern that allows it, or NULL */
        } cases[] = {
                { "exact.example", 443, "exact.example" },
                { "exact.example", 1, "exact.example" },
                { "a.exact.example", 443, NULL },
                { "xexact.example", 443, NULL },
                { "a.wild.example", 80, "*.wild.example" },
                { "a.b.wild.example", 80, "*.wild.example" },
                { "wild.example", 80, NULL },
                { "awild.example", 80, NULL },
                { "port.example", 8443, "port.example:8443" },
                { "port.example", 443, NULL },
                { "x.both.example", 443, "*.both.example:443" },
                { "x.both.example", 80, NULL },
                { "192.0.2.7", 1234, "192.0.2.7" },
                { "192.0.2.8", 1234, NULL },
                { "[2001:db8::7]", 443, "[2001:db8::7]:443" },
                { "[2001:db8:0::7]", 443, "[2001:db8::7]:443" },
                { "[2001:db8::7]", 80, NULL },
                { "example", 443, NULL },
        };
        struct netpolicy *np = netpolicy_new();
        struct tb_error err;
        for (size_t i = 0; patterns[i]; i++)
                ck_assert_int_eq(netpolicy_add(np, patterns[i], &err), 0);
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                char host[NETPOLICY_HOST_MAX];
                snprintf(host, sizeof(host), "%s", cases[i].host);
                ck_assert(netpolicy_normalize_host(host));
                const char *got = netpolicy_match(np, host, cases[i].port);
                ck_assert_msg(cases[i].want ? got && strcmp(got, cases[i].want) == 0 : got == NULL, "%s:%u matched %s",
                              cases[i].host, cases[i].port, got ? got : "nothing");
        }
        netpolicy_free(np);
        printf("matches: %zu cases\n", TB_ARRAY_SIZE(cases));
}
END_TEST

START_TEST(requested_hosts_are_normalised_case_and_trailing_dot)
{
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "Example.COM.", "example.com" }, { "[::1]", "::1" }, { "[2001:DB8::1]", "2001:db8::1" },
                { "127.0.0.1", "127.0.0.1" },      { "a.b", "a.b" },   { "x..", NULL },
                { "::1", NULL },                   { "[a.b]", NULL },  { "1.2.3", NULL },
                { "a b", NULL },                   { "", NULL },       { "a.", "a" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                char host[NETPOLICY_HOST_MAX];
                snprintf(host, sizeof(host), "%s", cases[i].in);
                bool ok = netpolicy_normalize_host(host);
                ck_assert_msg(ok == (cases[i].out != NULL), "'%s'", cases[i].in);
                if (ok)
                        ck_assert_str_eq(host, cases[i].out);
        }
}
END_TEST

static struct sockaddr_storage addr(const char *text)
{
        struct sockaddr_storage ss;
        ck_assert(netpolicy_ip_literal(text, &ss));
        return ss;
}

START_TEST(special_addresses_are_refused_unless_listed_literally)
{
        static const struct {
                const char *addr;
                const char *class; /* NULL: ordinary */
        } cases[] = {
                { "127.0.0.1", "loopback" },     { "127.255.0.9", "loopback" },   { "::1", "loopback" },
                { "0.0.0.0", "unspecified" },    { "0.1.2.3", "unspecified" },    { "::", "unspecified" },
                { "169.254.169.254", "link-local" }, { "fe80::1", "link-local" }, { "224.0.0.1", "multicast" },
                { "239.1.1.1", "multicast" },    { "ff02::1", "multicast" },      { "255.255.255.255", "broadcast" },
                { "::ffff:127.0.0.1", "loopback" }, { "::ffff:169.254.1.1", "link-local" },
                { "192.0.2.1", NULL },           { "10.1.2.3", NULL },            { "2001:db8::1", NULL },
                { "::ffff:192.0.2.1", NULL },
        };
        struct netpolicy *np = netpolicy_new();
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                struct sockaddr_storage ss = addr(cases[i].addr);
                const char *c = netpolicy_address_class((struct sockaddr *)&ss);
                const char *refused = netpolicy_refuses_address(np, (struct sockaddr *)&ss, 80);
                if (cases[i].class) {
                        ck_assert_msg(c && strstr(c, cases[i].class), "%s: %s", cases[i].addr, c ? c : "ordinary");
                        ck_assert_ptr_nonnull(refused);
                } else {
                        ck_assert_msg(c == NULL && refused == NULL, "%s: %s", cases[i].addr, c);
                }
        }
        struct tb_error err;
        ck_assert_int_eq(netpolicy_add(np, "127.0.0.1:8080", &err), 0);
        ck_assert_int_eq(netpolicy_add(np, "[::1]:1", &err), 0);
        struct sockaddr_storage lo = addr("127.0.0.1"), lo6 = addr("::1");
        ck_assert_ptr_null(netpolicy_refuses_address(np, (struct sockaddr *)&lo, 8080));
        ck_assert_ptr_nonnull(netpolicy_refuses_address(np, (struct sockaddr *)&lo, 8081));
        ck_assert_ptr_null(netpolicy_refuses_address(np, (struct sockaddr *)&lo6, 1));
        ck_assert_ptr_nonnull(netpolicy_refuses_address(np, (struct sockaddr *)&lo6, 2));
        ck_assert(netpolicy_allows_loopback(np));
        netpolicy_free(np);
}
END_TEST

START_TEST(the_hosts_own_addresses_are_refused)
{
        struct netpolicy *np = netpolicy_new();
        struct tb_error err;
        ck_assert_int_eq(netpolicy_add_own_addresses(np, &err), 0);
        struct ifaddrs *ifs;
        ck_assert_int_eq(getifaddrs(&ifs), 0);
        int seen = 0;
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
                if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
                        continue;
                const char *why = netpolicy_refuses_address(np, i->ifa_addr, 443);
                ck_assert_ptr_nonnull(why);
                seen++;
        }
        freeifaddrs(ifs);
        ck_assert_int_gt(seen, 0);
        struct sockaddr_storage doc = addr("192.0.2.1");
        ck_assert_ptr_null(netpolicy_refuses_address(np, (struct sockaddr *)&doc, 443));
        netpolicy_add_own_address(np, (struct sockaddr *)&doc);
        ck_assert_str_eq(netpolicy_refuses_address(np, (struct sockaddr *)&doc, 443), "one of this host's own addresses");
        netpolicy_free(np);
}
END_TEST

/* ---- the request parser ---- */

START_TEST(request_heads_parse_or_get_their_status)
{
        static const struct {
                const char *head;
                int result; /* 1: complete; 0: needs more; else the status */
                const char *host;
                int port;
        } cases[] = {
                { "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n", 1, "api.example.com", 443 },
                { "CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n", 1, "2001:db8::1", 8443 },
                { "GET http://Example.COM./a HTTP/1.1\r\n\r\n", 1, "example.com", 80 },
                { "POST http://e.com:8080?x HTTP/1.0\nA: b\n\n", 1, "e.com", 8080 },
                { "GET http://e.com HTTP/1.1\r\n\r\n", 1, "e.com", 80 },
                { "GET http://e.com/ HTTP/1.1\r\nHost: e.com\r\n", 0, NULL, 0 },
                { "GET http://e.com/ HT", 0, NULL, 0 },
                { "", 0, NULL, 0 },
                { "GET /index.html HTTP/1.1\r\n\r\n", 400, NULL, 0 },
                { "GET https://e.com/ HTTP/1.1\r\n\r\n", 400, NULL, 0 },
                { "GET http://u@e.com/ HTTP/1.1\r\n\r\n", 400, NULL, 0 },
                { "GET http://e.com/#f HTTP/1.1\r\n\r\n", 400, NULL, 0 },
                { "CONNECT e.com HTTP/1.1\r\n\r\n", 400, NULL, 0 },
                { "CONNECT e.com:0 HTTP/1.1\r\n\r\n", 400, NULL, 0 },
                { "CONNECT e.com:65536 HTTP/1.1\r\n\r\n", 400, NULL, 0 },
                { "CONNECT http://e.com/ HTTP/1.1\r\n\r\n", 400, NULL, 0 },
                { "CONNECT e..com:443 HTTP/1.1\r\n\r\n", 400, NULL, 0 },
                { "CONNECT [::1:443 HTTP/1.1\r\n\r\n", 400, NULL, 0 },
                { "GET http://e.com/ HTTP/2.0\r\n\r\n", 505, NULL, 0 },
                { "GET http://e.com/ HTTP/1.1 x\r\n\r\n", 400, NULL, 0 },
                { "GET  http://e.com/ HTTP/1.1\r\n\r\n", 400, NULL, 0 },
                { "GET http://e.com/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400, NULL, 0 },
                { "GET http://e.com/ HTTP/1.1\r\nX a\r\n\r\n", 400, NULL, 0 },
                { "GET http://e.com/ HTTP/1.1\r\nX: a\x01\r\n\r\n", 400, NULL, 0 },
                { "\r\n\r\n", 400, NULL, 0 },
                { "\x16\x03\x01\x02\x00", 400, NULL, 0 },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                struct proxy_request req;
                const char *h = cases[i].head;
                int r = proxy_request_parse(h, strlen(h), &req);
                if (cases[i].result == 1) {
                        ck_assert_msg(r > 0 && (size_t)r == strlen(h), "case %zu: %d %s", i, r, req.why ? req.why : "");
                        ck_assert_str_eq(req.host, cases[i].host);
                        ck_assert_int_eq(req.port, cases[i].port);
                } else if (cases[i].result == 0) {
                        ck_assert_msg(r == 0, "case %zu: %d", i, r);
                } else {
                        ck_assert_msg(r == -EINVAL && req.status == cases[i].result, "case %zu: %d status %d", i, r,
                                      req.status);
                        ck_assert(req.why && req.why[0] && !strchr(req.why, '\n'));
                }
        }
        printf("request heads: %zu cases\n", TB_ARRAY_SIZE(cases));
}
END_TEST

START_TEST(a_head_over_16_kib_gets_431)
{
        size_t n = PROXY_HEAD_MAX + 100;
        char *h = xmalloc(n);
        memset(h, 'a', n);
        memcpy(h, "GET http://e.com/ HTTP/1.1\r\nX: ", 31);
        struct proxy_request req;
        ck_assert_int_eq(proxy_request_parse(h, PROXY_HEAD_MAX - 1, &req), 0);
        ck_assert_int_eq(proxy_request_parse(h, n, &req), -EINVAL);
        ck_assert_int_eq(req.status, 431);
        free(h);
}
END_TEST

START_TEST(the_fuzz_corpus_replays_clean)
{
        const char *dir = TESTS_SOURCE_DIR "/fuzz/corpus/proxy_request";
        DIR *d = opendir(dir);
        ck_assert_ptr_nonnull(d);
        int n = 0;
        for (struct dirent *e; (e = readdir(d));) {
                if (e->d_name[0] == '.')
                        continue;
                _cleanup_free_ char *path = xasprintf("%s/%s", dir, e->d_name);
                size_t len;
                _cleanup_free_ char *data = read_all(path, &len, false);
                ck_assert_ptr_nonnull(data);
                LLVMFuzzerTestOneInput((const uint8_t *)data, len); /* aborts on a broken promise */
                n++;
        }
        closedir(d);
        ck_assert_int_ge(n, 10);
}
END_TEST

/* ---- the proxy over sockets ---- */

#define ALLOWED(...) ((const char *const[]){ __VA_ARGS__, NULL })

START_TEST(response_heads_get_connection_close_and_interim_heads_pass_as_they_are)
{
        static const struct {
                const char *in;
                int ret; /* > 0: the head's length is strlen(in) minus the body's; 0: more; -1: as it is */
                const char *out;
                bool interim;
        } cases[] = {
                { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\nok", 1,
                  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n", false },
                { "HTTP/1.0 404 Not Found\nproxy-connection: x\nX: y\n\n", 1,
                  "HTTP/1.0 404 Not Found\r\nX: y\r\nConnection: close\r\n\r\n", false },
                { "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n", 1, "HTTP/1.1 100 Continue\r\n\r\n", true },
                { "HTTP/1.1 200 OK\r\nContent-Le", 0, "", false },
                { "HTTP/1", 0, "", false },
                { "SSH-2.0-x\r\n\r\n", -1, "", false },
                { "HTTP/1.1 20 OK\r\n\r\n", -1, "", false },
                { "HTTP/1.1 999 OK\r\n\r\n", -1, "", false },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                struct strbuf out = { 0 };
                strbuf_add(&out, "");
                bool interim = false;
                int r = proxy_response_rewrite(cases[i].in, strlen(cases[i].in), &out, &interim);
                if (cases[i].ret > 0) {
                        ck_assert_msg(r > 0, "case %zu: %d", i, r);
                        ck_assert_str_eq(out.s, cases[i].out);
                        ck_assert(interim == cases[i].interim);
                } else {
                        ck_assert_msg(cases[i].ret == 0 ? r == 0 : r == -EINVAL, "case %zu: %d", i, r);
                }
                free(out.s);
        }
}
END_TEST

#ifndef PROXY_RELEASE_CHECK /* these need the name map */
START_TEST(plain_http_in_absolute_form_reaches_the_server_in_origin_form)
{
        struct harness h;
        harness_start(&h, ALLOWED("allowed.test"));
        _cleanup_free_ char *resp = exchange(&h, "GET http://Allowed.Test/x?y=1 HTTP/1.1\r\nHost: elsewhere.example\r\n"
                                                 "Proxy-Authorization: Basic eDp5\r\nProxy-Connection: keep-alive\r\n"
                                                 "User-Agent: t/1\r\nConnection: keep-alive\r\n\r\n");
        assert_contains(resp, "HTTP/1.1 200 OK\r\n");
        assert_contains(resp, "\r\n\r\nGET /x?y=1 HTTP/1.1\r\n");
        assert_contains(resp, "User-Agent: t/1\r\n");
        assert_contains(resp, "Host: allowed.test\r\nConnection: close\r\n\r\n");
        assert_lacks(resp, "Proxy-");
        assert_lacks(resp, "elsewhere");
        assert_lacks(resp, "keep-alive");
        free(harness_stop(&h));
        harness_free(&h);
}
END_TEST

/* Claude Code and OpenCode keep their connection to the proxy alive; the
 * proxy carries one request per connection, so it tells them to close. */
START_TEST(a_server_that_keeps_the_connection_alive_is_answered_connection_close)
{
        struct harness h;
        harness_start(&h, ALLOWED("allowed.test"));
        const char req[] = "GET http://allowed.test/keep-alive HTTP/1.1\r\nConnection: keep-alive\r\n\r\n";
        _cleanup_free_ char *resp = exchange(&h, req);
        assert_contains(resp, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n");
        assert_contains(resp, "\r\nConnection: close\r\n\r\nGET /keep-alive HTTP/1.1\r\n");
        assert_lacks(resp, "keep-alive\r\nKeep-Alive");
        assert_lacks(resp, "timeout=5");
        free(harness_stop(&h));
        /* bytes_down counts what the server sent, not what the proxy made of it. */
        _cleanup_free_ char *rec = read_text(h.record);
        const char *body = strstr(resp, "GET /keep-alive");
        _cleanup_free_ char *head = xasprintf("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
                                              "Connection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n",
                                              strlen(body));
        _cleanup_free_ char *want = xasprintf("\"bytes_down\":%zu,", strlen(head) + strlen(body));
        assert_contains(rec, want);
        harness_free(&h);
}
END_TEST

START_TEST(connect_relays_bytes_both_ways_and_a_half_closed_stream_still_delivers_the_other_way)
{
        struct harness h;
        harness_start(&h, ALLOWED("allowed.test:443"));
        _cleanup_free_ char *head = NULL;
        int fd = open_tunnel(&h, "allowed.test:443", &head);
        ck_assert_str_eq(head, "HTTP/1.1 200 Connection established\r\n\r\n");
        send_all(fd, "ping\x00\xff", 6);
        char buf[6];
        ck_assert_int_eq(recv(fd, buf, 6, MSG_WAITALL), 6);
        ck_assert(memcmp(buf, "ping\x00\xff", 6) == 0);
        send_all(fd, "more", 4);
        ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
        /* The server echoes, sees the end of the stream, then still answers. */
        _cleanup_free_ char *rest = read_to_eof(fd);
        ck_assert_str_eq(rest, "moreBYE\n");
        close(fd);
        free(harness_stop(&h));
        harness_free(&h);
}
END_TEST

/* Bytes of a stream that says where it is: a lost, doubled or reordered chunk shows. */
static unsigned char pattern_byte(size_t i) { return (unsigned char)(i * 31 + i / 4093); }

struct bulk_writer {
        int fd;
        size_t n;
};

static void *bulk_write(void *arg)
{
        struct bulk_writer *w = arg;
        static unsigned char buf[65536];
        for (size_t off = 0; off < w->n;) {
                size_t k = w->n - off < sizeof(buf) ? w->n - off : sizeof(buf);
                for (size_t i = 0; i < k; i++)
                        buf[i] = pattern_byte(off + i);
                ssize_t sent = send(w->fd, buf, k, MSG_NOSIGNAL);
                if (sent <= 0)
                        return NULL;
                off += (size_t)sent;
        }
        shutdown(w->fd, SHUT_WR);
        return NULL;
}

START_TEST(a_tunnel_carries_megabytes_both_ways_intact_while_its_pipes_grow)
{
        struct harness h;
        harness_start(&h, ALLOWED("allowed.test:443"));
        _cleanup_free_ char *head = NULL;
        int fd = open_tunnel(&h, "allowed.test:443", &head);
        ck_assert_str_eq(head, "HTTP/1.1 200 Connection established\r\n\r\n");
        /* The server echoes: 8 MiB up and the same back down, well past the point where a flow's
         * pipe grows, then its "BYE\n" after the end of the stream. */
        struct bulk_writer w = { .fd = fd, .n = 8u << 20 };
        pthread_t t;
        pthread_create(&t, NULL, bulk_write, &w);
        static unsigned char buf[65536];
        size_t got = 0, bad = 0;
        char tail[5] = { 0 };
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf))) > 0) {
                for (ssize_t i = 0; i < n; i++, got++) {
                        if (got < w.n)
                                bad += buf[i] != pattern_byte(got);
                        else if (got - w.n < 4)
                                tail[got - w.n] = (char)buf[i];
                }
        }
        pthread_join(t, NULL);
        ck_assert_int_eq(n, 0);
        ck_assert_uint_eq(got, w.n + 4);
        ck_assert_uint_eq(bad, 0);
        ck_assert_str_eq(tail, "BYE\n");
        close(fd);
        _cleanup_free_ char *stats = harness_stop(&h);
        assert_contains(stats, "\"allowed\":1,");
        harness_free(&h);
}
END_TEST

START_TEST(tls_through_connect_with_openssl)
{
        if (!host_can("command -v openssl >/dev/null")) {
                printf("tls: skipped, no openssl on this host\n");
                return;
        }
        uint16_t tls_port;
        close(listen_loopback(&tls_port)); /* a free port for s_server */
        snprintf(map_extra, sizeof(map_extra), "tls.test=127.0.0.1:%u", tls_port);
        struct harness h;
        harness_start(&h, ALLOWED("tls.test:443"));
        _cleanup_free_ char *server = xasprintf(
                "cd %s && openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=tls.test -days 1 -keyout k.pem -out c.pem "
                ">/dev/null 2>&1 && { openssl s_server -accept 127.0.0.1:%u -cert c.pem -key k.pem -www >s_server.log 2>&1 "
                "& echo $! >s_server.pid; } && for i in $(seq 200); do grep -q ACCEPT s_server.log && exit 0; sleep 0.05; "
                "done; exit 1",
                h.dir, tls_port);
        ck_assert_msg(host_can(server), "openssl s_server did not start");
        _cleanup_free_ char *client = xasprintf(
                "cd %s && printf 'GET / HTTP/1.0\\r\\n\\r\\n' | timeout 30 openssl s_client -quiet -proxy 127.0.0.1:%u "
                "-connect tls.test:443 -servername tls.test >s_client.out 2>s_client.err; "
                "kill $(cat s_server.pid); grep -q '^HTTP/1.0 200 ok' s_client.out",
                h.dir, h.port);
        bool ok = host_can(client);
        _cleanup_free_ char *out_path = xasprintf("%s/s_client.err", h.dir);
        _cleanup_free_ char *err = read_text(out_path);
        ck_assert_msg(ok, "s_client through the proxy: %s", err ? err : "");
        _cleanup_free_ char *stats = harness_stop(&h);
        assert_contains(stats, "\"tls.test\":{\"allowed\":1,\"denied\":0}");
        map_extra[0] = '\0';
        harness_free(&h);
}
END_TEST

START_TEST(a_denied_name_gets_403_with_the_reason_and_is_never_resolved)
{
        struct harness h;
        harness_start(&h, ALLOWED("allowed.test"));
        _cleanup_free_ char *head = NULL;
        int fd = open_tunnel(&h, "denied.test:443", &head);
        _cleanup_free_ char *body = read_to_eof(fd);
        close(fd);
        assert_contains(head, "HTTP/1.1 403 Forbidden\r\n");
        ck_assert_str_eq(body, "trialbox: 'denied.test' port 443 is not on this trial's allowlist (--allow-host)\n");
        _cleanup_free_ char *get = exchange(&h, "GET http://denied2.test/ HTTP/1.1\r\n\r\n");
        assert_contains(get, "HTTP/1.1 403 Forbidden\r\n");
        /* The hook does see names: the allowed one, looked up once. */
        ck_assert(tunnel_opens(&h, "allowed.test:443"));
        free(harness_stop(&h));
        ck_assert_str_eq(h.lookups, "allowed.test\n");
        harness_free(&h);
}
END_TEST

START_TEST(wildcards_match_strict_subdomains_and_ports_are_honoured)
{
        struct harness h;
        harness_start(&h, ALLOWED("*.wild.test", "port.test:8443"));
        ck_assert(tunnel_opens(&h, "a.wild.test:443"));
        ck_assert(!tunnel_opens(&h, "wild.test:443"));
        ck_assert(tunnel_opens(&h, "port.test:8443"));
        ck_assert(!tunnel_opens(&h, "port.test:443"));
        free(harness_stop(&h));
        ck_assert_str_eq(h.lookups, "a.wild.test\nport.test\n");
        harness_free(&h);
}
END_TEST

/* A name /etc/hosts maps to a loopback address, other than localhost (which
 * a pattern lists with its port, never resolved), or NULL: resolving it
 * asks no server. malloc'd. */
static char *loopback_name_in_etc_hosts(void)
{
        _cleanup_free_ char *hosts = read_text("/etc/hosts");
        for (char *save = NULL, *l = hosts ? strtok_r(hosts, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
                char *save2 = NULL, *ip = strtok_r(l, " \t", &save2);
                if (!ip || strncmp(ip, "127.", 4) != 0)
                        continue;
                for (char *name = strtok_r(NULL, " \t", &save2); name && name[0] != '#';
                     name = strtok_r(NULL, " \t", &save2)) {
                        char norm[NETPOLICY_HOST_MAX];
                        snprintf(norm, sizeof(norm), "%s", name);
                        if (netpolicy_normalize_host(norm) && !strstr(norm, "localhost") &&
                            !netpolicy_ip_literal(norm, &(struct sockaddr_storage){ 0 }))
                                return xstrdup(norm);
                }
        }
        return NULL;
}

START_TEST(loopback_is_refused_unless_its_address_or_localhost_is_listed_with_its_port)
{
        struct harness h;
        if (origin_fd < 0)
                origin_start();
        _cleanup_free_ char *lit = xasprintf("127.0.0.1:%u", origin_port);
        _cleanup_free_ char *local = xasprintf("localhost:%u", origin_port);
        /* A name listed that resolves to loopback (from /etc/hosts) is refused. */
        _cleanup_free_ char *name = loopback_name_in_etc_hosts();
        if (name) {
                _cleanup_free_ char *target = xasprintf("%s:%u", name, origin_port);
                harness_start(&h, ALLOWED(name));
                _cleanup_free_ char *head = NULL;
                int fd = open_tunnel(&h, target, &head);
                shutdown(fd, SHUT_WR);
                _cleanup_free_ char *body = read_to_eof(fd);
                close(fd);
                assert_contains(head, "HTTP/1.1 403 Forbidden\r\n");
                _cleanup_free_ char *why = xasprintf("'%s' resolves to ", name);
                assert_contains(body, why);
                assert_contains(body, "a loopback address), which is refused unless that address is listed\n");
                ck_assert(!tunnel_opens(&h, lit)); /* not listed at all */
                free(harness_stop(&h));
                _cleanup_free_ char *looked = xasprintf("%s\n", name);
                ck_assert_str_eq(h.lookups, looked);
                harness_free(&h);
        } else {
                skip_note("loopback_is_refused_…", "/etc/hosts maps no name but localhost to loopback");
        }

        /* Its address listed literally, with its port: the literal passes; localhost is not listed. */
        harness_start(&h, ALLOWED("127.0.0.1:{origin}"));
        ck_assert(tunnel_opens(&h, lit));
        ck_assert(!tunnel_opens(&h, local));
        free(harness_stop(&h));
        ck_assert_str_eq(h.lookups, ""); /* a literal is not resolved, a denied name never */
        harness_free(&h);

        /* localhost listed with its port: it passes, never resolved; the literal is not listed. */
        harness_start(&h, ALLOWED("localhost:{origin}"));
        ck_assert(tunnel_opens(&h, local));
        ck_assert(!tunnel_opens(&h, lit));
        free(harness_stop(&h));
        ck_assert_str_eq(h.lookups, "");
        harness_free(&h);
}
END_TEST

START_TEST(an_allowed_server_that_refuses_gets_502_and_is_recorded_allowed)
{
        uint16_t closed;
        close(listen_loopback(&closed)); /* nothing listens there now */
        snprintf(map_extra, sizeof(map_extra), "closed.test=127.0.0.1:%u", closed);
        struct harness h;
        harness_start(&h, ALLOWED("closed.test"));
        _cleanup_free_ char *resp = exchange(&h, "GET http://closed.test/ HTTP/1.1\r\n\r\n");
        _cleanup_free_ char *why = xasprintf("trialbox: cannot connect to 127.0.0.1 port %u: Connection refused\n", closed);
        assert_contains(resp, "HTTP/1.1 502 Bad Gateway\r\n");
        assert_contains(resp, why);
        _cleanup_free_ char *stats = harness_stop(&h);
        assert_contains(stats, "\"closed.test\":{\"allowed\":1,\"denied\":0}");
        map_extra[0] = '\0';
        harness_free(&h);
}
END_TEST

START_TEST(a_client_that_does_not_read_stalls_only_its_own_tunnel)
{
        struct harness h;
        harness_start(&h, ALLOWED("allowed.test"));
        _cleanup_free_ char *head = NULL;
        int fd = open_tunnel(&h, "allowed.test:443", &head);
        ck_assert_str_eq(head, "HTTP/1.1 200 Connection established\r\n\r\n");
        /* The server echoes; this client never reads: every buffer on the way fills, then sending blocks. */
        ck_assert_int_eq(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
        static char chunk[65536];
        size_t sent = 0;
        for (int idle = 0; idle < 50;) {
                ssize_t n = send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL);
                if (n > 0) {
                        sent += (size_t)n;
                        idle = 0;
                } else {
                        ck_assert(n < 0 && errno == EAGAIN);
                        struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                        idle += poll(&pfd, 1, 20) == 0;
                }
        }
        ck_assert_uint_gt(sent, 1 << 20);
        _cleanup_free_ char *resp = exchange(&h, "GET http://allowed.test/other HTTP/1.1\r\n\r\n");
        assert_contains(resp, "GET /other HTTP/1.1");
        close(fd);
        free(harness_stop(&h));
        harness_free(&h);
        printf("stalled tunnel: %zu bytes sent before the buffers were full\n", sent);
}
END_TEST

START_TEST(a_thousand_idle_connections_do_not_block_a_new_request)
{
        struct harness h;
        harness_start(&h, ALLOWED("allowed.test"));
        enum { IDLE = 1000 };
        static int fds[IDLE];
        for (int i = 0; i < IDLE; i++) {
                fds[i] = connect_port(h.port);
                if (i % 2)
                        send_all(fds[i], "GET http://allowed.test/ HTTP/1.1\r\nX: ", 38); /* half a head */
        }
        _cleanup_free_ char *resp = exchange(&h, "GET http://allowed.test/ok HTTP/1.1\r\n\r\n");
        assert_contains(resp, "GET /ok HTTP/1.1");
        _cleanup_free_ char *head = NULL;
        int t = open_tunnel(&h, "allowed.test:80", &head);
        ck_assert_str_eq(head, "HTTP/1.1 200 Connection established\r\n\r\n");
        close(t);
        for (int i = 0; i < IDLE; i++)
                close(fds[i]);
        _cleanup_free_ char *stats = harness_stop(&h);
        /* 1000 closed before a complete request, one GET, one CONNECT. */
        assert_contains(stats, "\"allowed\":2,\"denied\":1000,");
        harness_free(&h);
}
END_TEST

START_TEST(a_client_that_never_speaks_gets_408_and_others_are_served_meanwhile)
{
        struct harness h;
        harness_start_with(&h, ALLOWED("allowed.test"), 200);
        int silent = connect_port(h.port);
        _cleanup_free_ char *resp = exchange(&h, "GET http://allowed.test/ HTTP/1.1\r\n\r\n");
        assert_contains(resp, "HTTP/1.1 200 OK");
        _cleanup_free_ char *late = read_to_eof(silent);
        close(silent);
        assert_contains(late, "HTTP/1.1 408 Request Timeout\r\n");
        assert_contains(late, "trialbox: no complete request within 200 ms\n");
        free(harness_stop(&h));
        harness_free(&h);
}
END_TEST

START_TEST(oversized_and_malformed_heads_get_4xx)
{
        struct harness h;
        harness_start(&h, ALLOWED("allowed.test"));
        struct strbuf big = { 0 };
        strbuf_add(&big, "GET http://allowed.test/ HTTP/1.1\r\n");
        while (big.len < 20000)
                strbuf_add(&big, "X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        strbuf_add(&big, "\r\n");
        _cleanup_free_ char *resp = exchange(&h, big.s);
        free(big.s);
        assert_contains(resp, "HTTP/1.1 431 Request Header Fields Too Large\r\n");
        _cleanup_free_ char *bad = exchange(&h, "hello there\r\n\r\n");
        assert_contains(bad, "HTTP/1.1 400 Bad Request\r\n");
        _cleanup_free_ char *origin = exchange(&h, "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
        assert_contains(origin, "HTTP/1.1 400 Bad Request\r\n");
        assert_contains(origin, "this is a proxy");
        free(harness_stop(&h));
        ck_assert_str_eq(h.lookups, "");
        harness_free(&h);
}
END_TEST

/* A record line with its time and duration taken out (they vary), or NULL. */
static char *record_line_without_clock(const char *line)
{
        const char *t = strstr(line, "\"time\":\"");
        const char *d = strstr(line, ",\"duration_ms\":");
        ck_assert(t == line + 1 && d);
        char time[32];
        snprintf(time, sizeof(time), "%.24s", t + 8);
        /* 2026-12-01T14:12:22.123Z */
        ck_assert_msg(strlen(time) == 24 && time[4] == '-' && time[10] == 'T' && time[19] == '.' && time[23] == 'Z' &&
                              t[32] == '"',
                      "time: %s", line);
        ck_assert_msg(strspn(d + 15, "0123456789") > 0 && strcmp(d + 15 + strspn(d + 15, "0123456789"), "}") == 0,
                      "duration: %s", line);
        return xasprintf("{%.*s}", (int)(d - (t + 34)), t + 34);
}

START_TEST(every_connection_is_one_exact_json_line_and_counted_per_host)
{
        struct harness h;
        harness_start(&h, ALLOWED("allowed.test"));
        _cleanup_free_ char *head = NULL;
        int fd = open_tunnel(&h, "allowed.test:443", &head);
        send_all(fd, "12345", 5);
        shutdown(fd, SHUT_WR);
        _cleanup_free_ char *rest = read_to_eof(fd);
        ck_assert_str_eq(rest, "12345BYE\n");
        close(fd);
        _cleanup_free_ char *denied = exchange(&h, "GET http://denied.test:8080/ HTTP/1.1\r\n\r\n");
        _cleanup_free_ char *bad = exchange(&h, "nonsense\r\n\r\n");
        assert_contains(denied, "HTTP/1.1 403 Forbidden\r\n");
        assert_contains(bad, "HTTP/1.1 400 Bad Request\r\n");
        _cleanup_free_ char *stats = harness_stop(&h);
        ck_assert_str_eq(stats, "{\"allowed\":1,\"denied\":2,\"hosts\":{\"allowed.test\":{\"allowed\":1,\"denied\":0},"
                                "\"denied.test\":{\"allowed\":0,\"denied\":1}}}");
        _cleanup_free_ char *text = read_text(h.record);
        ck_assert_ptr_nonnull(text);
        static const char *const want[] = {
                "{\"host\":\"allowed.test\",\"port\":443,\"method\":\"CONNECT\",\"decision\":\"allowed\","
                "\"reason\":\"allowed by 'allowed.test'\",\"bytes_up\":5,\"bytes_down\":9}",
                "{\"host\":\"denied.test\",\"port\":8080,\"method\":\"GET\",\"decision\":\"denied\","
                "\"reason\":\"'denied.test' port 8080 is not on this trial's allowlist (--allow-host)\","
                "\"bytes_up\":0,\"bytes_down\":0}",
                "{\"host\":null,\"port\":null,\"method\":null,\"decision\":\"denied\","
                "\"reason\":\"malformed request line\",\"bytes_up\":0,\"bytes_down\":0}",
        };
        int lines = 0;
        bool found[3] = { false };
        for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                _cleanup_free_ char *bare = record_line_without_clock(line);
                bool any = false;
                for (size_t i = 0; i < 3; i++)
                        if (strcmp(bare, want[i]) == 0)
                                any = found[i] = true;
                ck_assert_msg(any, "unexpected record: %s", line);
                lines++;
        }
        ck_assert_int_eq(lines, 3);
        ck_assert(found[0] && found[1] && found[2]);
        harness_free(&h);
}
END_TEST

#endif

/* The proxy's side of the session's connections is a loopback hop in the session's namespace:
 * set on the listening socket, so that every accepted one is born with it, reno, which does not pace
 * (the host's default may: bbr). */
START_TEST(the_session_side_of_every_connection_uses_reno_from_the_listening_socket_on)
{
        uint16_t port;
        int lfd = listen_loopback(&port);
        int seen = dup(lfd);
        ck_assert_int_ge(seen, 0);
        struct tb_error err = { 0 };
        struct proxy *p = NULL;
        struct proxy_config cfg = { .listen_fd = lfd, .record_fd = -1, .policy = netpolicy_new() };
        ck_assert_msg(proxy_new(&cfg, &p, &err) == 0, "%s", err.msg);
        char cc[16] = "";
        socklen_t len = sizeof(cc);
        ck_assert_int_eq(getsockopt(seen, IPPROTO_TCP, TCP_CONGESTION, cc, &len), 0);
        ck_assert_str_eq(cc, "reno");
        proxy_free(p);
        close(seen);
}
END_TEST

/* With the map honoured, localhost goes to the origin (listed literally); a release ignores the map,
 * so localhost, listed with a port nothing listens on, goes to this host's loopback there, never
 * resolved, and the connection is refused. The same request either way. */
START_TEST(the_test_name_map_is_honoured_only_in_test_builds)
{
        struct harness h;
        if (origin_fd < 0)
                origin_start();
        uint16_t closed;
        close(listen_loopback(&closed)); /* nothing listens there now */
        snprintf(map_extra, sizeof(map_extra), "localhost=127.0.0.1:%u", origin_port);
        _cleanup_free_ char *pattern = xasprintf("localhost:%u", closed);
        harness_start(&h, ALLOWED(pattern));
        _cleanup_free_ char *head = NULL;
        int fd = open_tunnel(&h, pattern, &head);
        shutdown(fd, SHUT_WR);
        _cleanup_free_ char *body = read_to_eof(fd);
        close(fd);
        free(harness_stop(&h));
#ifdef PROXY_RELEASE_CHECK
        bool honoured = false; /* proxy.c compiled here without TRIALBOX_TESTING, as a release is */
#else
        bool honoured = PROXY_TESTING_BUILD;
#endif
        ck_assert(proxy_test_hosts_enabled() == honoured);
        if (honoured) {
                ck_assert_str_eq(head, "HTTP/1.1 200 Connection established\r\n\r\n");
                ck_assert_str_eq(body, "BYE\n");
                ck_assert_str_eq(h.lookups, "localhost\n");
        } else {
                assert_contains(head, "HTTP/1.1 502 Bad Gateway\r\n");
                assert_contains(body, "cannot connect to ");
                ck_assert_str_eq(h.lookups, "");
        }
        harness_free(&h);
}
END_TEST

TB_SUITE("proxy", 60)
{
        tcase_add_test(tc, patterns_are_accepted_or_refused_as_usage_errors);
        tcase_add_test(tc, patterns_match_names_wildcards_ports_and_literals);
        tcase_add_test(tc, requested_hosts_are_normalised_case_and_trailing_dot);
        tcase_add_test(tc, special_addresses_are_refused_unless_listed_literally);
        tcase_add_test(tc, the_hosts_own_addresses_are_refused);
        tcase_add_test(tc, request_heads_parse_or_get_their_status);
        tcase_add_test(tc, a_head_over_16_kib_gets_431);
        tcase_add_test(tc, the_fuzz_corpus_replays_clean);
        tcase_add_test(tc, response_heads_get_connection_close_and_interim_heads_pass_as_they_are);
#ifndef PROXY_RELEASE_CHECK
        tcase_add_test(tc, loopback_is_refused_unless_its_address_or_localhost_is_listed_with_its_port);
        /* The rest reach their server through the name map: without it (a Release build with its tests)
         * allowed.test would be looked up in the real DNS, and no test sends traffic off this host. */
        if (proxy_test_hosts_enabled()) {
                tcase_add_test(tc, plain_http_in_absolute_form_reaches_the_server_in_origin_form);
                tcase_add_test(tc, a_server_that_keeps_the_connection_alive_is_answered_connection_close);
                tcase_add_test(tc, connect_relays_bytes_both_ways_and_a_half_closed_stream_still_delivers_the_other_way);
                tcase_add_test(tc, a_tunnel_carries_megabytes_both_ways_intact_while_its_pipes_grow);
                tcase_add_test(tc, tls_through_connect_with_openssl);
                tcase_add_test(tc, a_denied_name_gets_403_with_the_reason_and_is_never_resolved);
                tcase_add_test(tc, wildcards_match_strict_subdomains_and_ports_are_honoured);
                tcase_add_test(tc, an_allowed_server_that_refuses_gets_502_and_is_recorded_allowed);
                tcase_add_test(tc, a_client_that_does_not_read_stalls_only_its_own_tunnel);
                tcase_add_test(tc, a_thousand_idle_connections_do_not_block_a_new_request);
                tcase_add_test(tc, a_client_that_never_speaks_gets_408_and_others_are_served_meanwhile);
                tcase_add_test(tc, oversized_and_malformed_heads_get_4xx);
                tcase_add_test(tc, every_connection_is_one_exact_json_line_and_counted_per_host);
        } else {
                printf("proxy: tests through the name map skipped: this build does not honour it\n");
        }
#endif
        tcase_add_test(tc, the_session_side_of_every_connection_uses_reno_from_the_listening_socket_on);
        tcase_add_test(tc, the_test_name_map_is_honoured_only_in_test_builds);
}
