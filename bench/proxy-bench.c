/* The allowlist proxy against a direct connection to the same loopback
 * server, side by side in one run (bench/proxy.sh runs it; built with
 * -DTRIALBOX_BENCH=ON, bench/CMakeLists.txt).
 *
 *   proxy-bench BULK_MIB ROUNDS CONNECTIONS
 *
 * In this process: a loopback server (a thread per connection), and the proxy
 * (core/src/network/proxy.c, the one trialbox links) served by its own thread as the
 * supervisor's loop would serve it, allowing only the server's address
 * literally. Measures, alternating direct and proxied:
 *   - bulk: BULK_MIB MiB from the server to the client, ROUNDS times each way;
 *     the median throughput;
 *   - setup: connect + (CONNECT, 200) + one 1-byte round trip, CONNECTIONS times;
 *   - round trip: a 1-byte echo inside an open connection, CONNECTIONS times.
 * Prints "name value" lines; the shell script makes the table. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "network/netpolicy.h"
#include "network/proxy.h"
#include "base/error.h"

static void die(const char *what)
{
        perror(what);
        exit(1);
}

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int listen_loopback(uint16_t *port)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(a);
        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 1024) < 0 ||
            getsockname(fd, (struct sockaddr *)&a, &len) < 0)
                die("listen");
        *port = ntohs(a.sin_port);
        return fd;
}

static int dial(uint16_t port)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int one = 1;
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
                die("connect");
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return fd;
}

static void full_write(int fd, const void *buf, size_t n)
{
        const char *p = buf;
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w <= 0)
                        die("write");
                p += w;
                n -= (size_t)w;
        }
}

static void full_read(int fd, void *buf, size_t n)
{
        char *p = buf;
        while (n > 0) {
                ssize_t r = read(fd, p, n);
                if (r <= 0)
                        die("read");
                p += r;
                n -= (size_t)r;
        }
}

/* The server: 'D' + 8 bytes of length: send that many bytes, close; 'E': echo. */
static void *serve_one(void *arg)
{
        int fd = (int)(intptr_t)arg;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        char mode;
        if (read(fd, &mode, 1) == 1 && mode == 'D') {
                uint64_t n;
                full_read(fd, &n, sizeof(n));
                static char block[1 << 16];
                while (n > 0) {
                        size_t k = n < sizeof(block) ? (size_t)n : sizeof(block);
                        full_write(fd, block, k);
                        n -= k;
                }
        } else if (mode == 'E') {
                char c;
                while (read(fd, &c, 1) == 1)
                        full_write(fd, &c, 1);
        }
        close(fd);
        return NULL;
}

static void *server(void *arg)
{
        int lfd = (int)(intptr_t)arg;
        for (;;) {
                int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        continue;
                pthread_t t;
                pthread_create(&t, NULL, serve_one, (void *)(intptr_t)fd);
                pthread_detach(t);
        }
        return NULL;
}

struct loop {
        struct proxy *p;
        int stop;
        double cpu_s;    /* the proxy thread's CPU time, when it stopped */
        clockid_t clock; /* the proxy thread's CPU clock, read from the client's */
};

static void *proxy_loop(void *arg)
{
        struct loop *l = arg;
        for (;;) {
                struct pollfd pfd[2] = { { .fd = proxy_fd(l->p), .events = POLLIN }, { .fd = l->stop, .events = POLLIN } };
                if (poll(pfd, 2, -1) < 0)
                        continue;
                if (pfd[1].revents) {
                        struct timespec ts;
                        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
                        l->cpu_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
                        return NULL;
                }
                if (proxy_dispatch(l->p) < 0)
                        die("proxy_dispatch");
        }
}

static uint16_t server_port, proxy_port;

/* A connection to the server, direct or through a CONNECT tunnel. */
static int open_conn(bool proxied)
{
        if (!proxied)
                return dial(server_port);
        int fd = dial(proxy_port);
        char req[128], head[256];
        int n = snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", server_port);
        full_write(fd, req, (size_t)n);
        size_t got = 0;
        while (got < 4 || memcmp(head + got - 4, "\r\n\r\n", 4) != 0) {
                if (got == sizeof(head) || read(fd, head + got, 1) != 1)
                        die("CONNECT");
                got++;
        }
        if (strncmp(head, "HTTP/1.1 200", 12) != 0)
                die("CONNECT refused");
        return fd;
}

static double cpu_s(void)
{
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double clock_s(clockid_t clock)
{
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double bulk_cpu[2]; /* the whole process's CPU seconds in bulk runs: direct, proxied */
static double bulk_proxy_cpu; /* the proxy thread's CPU seconds in proxied bulk runs */
static struct loop loop;

static double bulk(bool proxied, uint64_t bytes)
{
        static char buf[1 << 17];
        double c0 = cpu_s(), p0 = clock_s(loop.clock);
        double t0 = now_s();
        int fd = open_conn(proxied);
        full_write(fd, "D", 1);
        full_write(fd, &bytes, sizeof(bytes));
        uint64_t got = 0;
        for (ssize_t r; (r = read(fd, buf, sizeof(buf))) > 0;)
                got += (uint64_t)r;
        double t = now_s() - t0;
        close(fd);
        bulk_cpu[proxied] += cpu_s() - c0;
        if (proxied)
                bulk_proxy_cpu += clock_s(loop.clock) - p0;
        if (got != bytes)
                die("short bulk transfer");
        return (double)bytes / t / 1e6;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
        qsort(v, (size_t)n, sizeof(*v), cmp);
        return v[(int)(p * (n - 1))];
}

int main(int argc, char **argv)
{
        if (argc != 4) {
                fprintf(stderr, "usage: proxy-bench BULK_MIB ROUNDS CONNECTIONS\n");
                return 2;
        }
        uint64_t bytes = strtoull(argv[1], NULL, 10) << 20;
        int rounds = atoi(argv[2]), conns = atoi(argv[3]);
        pthread_t t;
        pthread_create(&t, NULL, server, (void *)(intptr_t)listen_loopback(&server_port));

        struct netpolicy *np = netpolicy_new();
        struct tb_error err;
        char pattern[64];
        snprintf(pattern, sizeof(pattern), "127.0.0.1:%u", server_port);
        if (netpolicy_add(np, pattern, &err) < 0)
                return fprintf(stderr, "%s\n", err.msg), 1;
        struct proxy_config cfg = { .listen_fd = listen_loopback(&proxy_port), .record_fd = -1, .policy = np };
        struct loop *l = &loop;
        l->stop = eventfd(0, EFD_CLOEXEC);
        if (proxy_new(&cfg, &l->p, &err) < 0)
                return fprintf(stderr, "%s\n", err.msg), 1;
        pthread_create(&t, NULL, proxy_loop, l);
        if (pthread_getcpuclockid(t, &l->clock) != 0)
                die("pthread_getcpuclockid");

        double *d = calloc((size_t)(rounds > conns ? rounds : conns), sizeof(double));
        double *p = calloc((size_t)(rounds > conns ? rounds : conns), sizeof(double));
        bulk(false, bytes >> 4); /* warm up both paths */
        bulk(true, bytes >> 4);
        bulk_cpu[0] = bulk_cpu[1] = bulk_proxy_cpu = 0;
        for (int i = 0; i < rounds; i++) {
                d[i] = bulk(false, bytes);
                p[i] = bulk(true, bytes);
        }
        double bd = pct(d, rounds, 0.5), bp = pct(p, rounds, 0.5);
        printf("bulk_direct_mbs %.0f\nbulk_proxied_mbs %.0f\nbulk_ratio %.2f\n", bd, bp, bp / bd);
        double gb = (double)bytes * rounds / 1e9;
        printf("bulk_cpu_ms_per_gb_direct %.0f\nbulk_cpu_ms_per_gb_proxied %.0f\nbulk_proxy_cpu_ms_per_gb %.0f\n",
               bulk_cpu[0] * 1e3 / gb, bulk_cpu[1] * 1e3 / gb, bulk_proxy_cpu * 1e3 / gb);

        /* Setup: a new connection and its first 1-byte round trip. */
        for (int i = 0; i < conns; i++) {
                for (int k = 0; k < 2; k++) {
                        char c = 'x';
                        double t0 = now_s();
                        int fd = open_conn(k == 1);
                        full_write(fd, "E", 1);
                        full_write(fd, &c, 1);
                        full_read(fd, &c, 1);
                        (k ? p : d)[i] = (now_s() - t0) * 1e6;
                        close(fd);
                }
        }
        double sd = pct(d, conns, 0.5), sp = pct(p, conns, 0.5), sd99 = pct(d, conns, 0.99), sp99 = pct(p, conns, 0.99);
        printf("setup_direct_p50_us %.0f\nsetup_proxied_p50_us %.0f\nsetup_added_p50_us %.0f\n", sd, sp, sp - sd);
        printf("setup_direct_p99_us %.0f\nsetup_proxied_p99_us %.0f\n", sd99, sp99);

        /* A round trip inside an open connection. */
        int fds[2] = { open_conn(false), open_conn(true) };
        full_write(fds[0], "E", 1);
        full_write(fds[1], "E", 1);
        for (int i = 0; i < conns; i++) {
                for (int k = 0; k < 2; k++) {
                        char c = 'x';
                        double t0 = now_s();
                        full_write(fds[k], &c, 1);
                        full_read(fds[k], &c, 1);
                        (k ? p : d)[i] = (now_s() - t0) * 1e6;
                }
        }
        double rd = pct(d, conns, 0.5), rp = pct(p, conns, 0.5), rd99 = pct(d, conns, 0.99), rp99 = pct(p, conns, 0.99);
        printf("rtt_direct_p50_us %.1f\nrtt_proxied_p50_us %.1f\nrtt_added_p50_us %.1f\n", rd, rp, rp - rd);
        printf("rtt_direct_p99_us %.1f\nrtt_proxied_p99_us %.1f\n", rd99, rp99);
        close(fds[0]);
        close(fds[1]);

        uint64_t one = 1;
        (void)!write(l->stop, &one, sizeof(one));
        pthread_join(t, NULL);
        double moved = (double)bytes * (rounds + 1.0 / 16) / 1e9;
        printf("proxy_cpu_s %.2f\nproxy_cpu_ms_per_gb %.0f\n", l->cpu_s, l->cpu_s * 1e3 / moved);
        proxy_free(l->p);
        free(d);
        free(p);
        return 0;
}
