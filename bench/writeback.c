/* Driver for bench/writeback.sh: the latency of a synced login's write-back,
 * from the Harness's rename inside the session to the host file holding the
 * new content.
 *
 *   writeback harness N INTERVAL_MS
 *       Run as the codex Harness inside a Trial: N times, stamp a sequence
 *       number and the time (CLOCK_REALTIME, ns) into a new login, write it to
 *       $CODEX_HOME/.auth-PID and rename it over $CODEX_HOME/auth.json, as
 *       Codex does; wait INTERVAL_MS between renames.
 *   writeback watch FILE N TIMEOUT_S
 *       On the host: watch FILE's folder with inotify; at each event for FILE,
 *       read it, and when it holds a sequence number not seen yet, record
 *       now - its stamp. Prints "ready" once watching, and at the end:
 *       seen K of N; median, p99 (nearest rank) and max latency in ms.
 *
 * The session's clock is the host's (bwrap makes no time namespace), so the
 * two stamps compare. Built with -DTRIALBOX_BENCH=ON (bench/CMakeLists.txt);
 * bench/writeback.sh builds it when missing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int harness(long n, long interval_ms)
{
        const char *home = getenv("CODEX_HOME");
        if (!home) {
                fprintf(stderr, "writeback: no CODEX_HOME\n");
                return 3;
        }
        char tmp[PATH_MAX], auth[PATH_MAX], pad[1201];
        snprintf(tmp, sizeof tmp, "%s/.auth-%ld", home, (long)getpid());
        snprintf(auth, sizeof auth, "%s/auth.json", home);
        memset(pad, 'x', sizeof pad - 1); /* a login is a kilobyte or two of tokens */
        pad[sizeof pad - 1] = '\0';
        struct timespec gap = { interval_ms / 1000, (interval_ms % 1000) * 1000000L };
        for (long seq = 1; seq <= n; seq++) {
                char buf[2048];
                int len = snprintf(buf, sizeof buf, "{\"bench_seq\": %ld, \"bench_ns\": %lld, \"tokens\": \"%s\"}\n",
                                   seq, now_ns(), pad);
                int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                if (fd < 0 || write(fd, buf, (size_t)len) != len || close(fd) < 0 || rename(tmp, auth) < 0) {
                        fprintf(stderr, "writeback: saving login %ld: %s\n", seq, strerror(errno));
                        return 1;
                }
                nanosleep(&gap, NULL);
        }
        struct timespec last = { 0, 300 * 1000000L }; /* the last write-back lands meanwhile */
        nanosleep(&last, NULL);
        return 0;
}

static int cmp_ll(const void *a, const void *b)
{
        long long x = *(const long long *)a, y = *(const long long *)b;
        return (x > y) - (x < y);
}

static int watch(const char *file, long n, long timeout_s)
{
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", file);
        char *slash = strrchr(dir, '/');
        if (!slash || !slash[1]) {
                fprintf(stderr, "writeback: FILE must be an absolute path\n");
                return 2;
        }
        const char *name = file + (slash - dir) + 1;
        if (slash == dir)
                slash[1] = '\0';
        else
                *slash = '\0';
        int in = inotify_init1(IN_CLOEXEC);
        if (in < 0 || inotify_add_watch(in, dir, IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
                perror("inotify");
                return 1;
        }
        long long *lat = calloc((size_t)n + 1, sizeof *lat);
        long seen = 0, last_seq = 0;
        long long deadline = now_ns() + timeout_s * 1000000000LL;
        printf("ready\n");
        fflush(stdout);
        while (last_seq < n) {
                long long left = (deadline - now_ns()) / 1000000;
                if (left <= 0)
                        break;
                struct pollfd p = { .fd = in, .events = POLLIN };
                if (poll(&p, 1, (int)(left < INT_MAX ? left : INT_MAX)) <= 0)
                        continue;
                char ev[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
                ssize_t got = read(in, ev, sizeof ev);
                long long t = now_ns();
                int ours = 0;
                for (char *e = ev; got > 0 && e < ev + got;) {
                        const struct inotify_event *ie = (const struct inotify_event *)e;
                        if (ie->len && strcmp(ie->name, name) == 0)
                                ours = 1;
                        e += sizeof *ie + ie->len;
                }
                if (!ours)
                        continue;
                char buf[4096];
                int fd = open(file, O_RDONLY | O_CLOEXEC);
                ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
                if (fd >= 0)
                        close(fd);
                if (len <= 0)
                        continue;
                buf[len] = '\0';
                long seq;
                long long stamp;
                if (sscanf(buf, "{\"bench_seq\": %ld, \"bench_ns\": %lld", &seq, &stamp) != 2 || seq <= last_seq ||
                    seq > n)
                        continue;
                lat[seen++] = t - stamp;
                last_seq = seq;
        }
        if (seen == 0) {
                printf("seen 0 of %ld\n", n);
                return 1;
        }
        qsort(lat, (size_t)seen, sizeof *lat, cmp_ll);
        long p99 = (long)((99 * seen + 99) / 100) - 1; /* nearest rank: ceil(0.99 K) */
        printf("seen %ld of %ld\nmedian_ms %.3f\np99_ms %.3f\nmax_ms %.3f\n", seen, n, lat[(seen - 1) / 2] / 1e6,
               lat[p99] / 1e6, lat[seen - 1] / 1e6);
        free(lat);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc == 4 && strcmp(argv[1], "harness") == 0)
                return harness(atol(argv[2]), atol(argv[3]));
        if (argc == 5 && strcmp(argv[1], "watch") == 0)
                return watch(argv[2], atol(argv[3]), atol(argv[4]));
        fprintf(stderr, "usage: writeback harness N INTERVAL_MS | watch FILE N TIMEOUT_S\n");
        return 2;
}
