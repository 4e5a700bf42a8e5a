#define _GNU_SOURCE
#include "base/sink.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/io.h"

void sink_init(struct sink *s, int fd, size_t max)
{
        *s = (struct sink){ .fd = fd, .own_fd = -1, .max = max };
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                s->how = SINK_NONE;
                return;
        }
        if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
                s->how = SINK_FILE;
                return;
        }
        if (S_ISSOCK(st.st_mode)) {
                s->how = SINK_SOCKET;
                return;
        }
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        s->own_fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        s->how = s->own_fd >= 0 ? SINK_NONBLOCK : SINK_POLLED;
}

/* Does the consumer take more now? */
static bool ready(int fd)
{
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        return RETRY_EINTR(poll(&p, 1, 0)) == 1 && (p.revents & (POLLOUT | POLLERR | POLLHUP));
}

/* What the consumer takes of `buf` now, without blocking: the count, or -1
 * when it is gone. */
static ssize_t put(struct sink *s, const char *buf, size_t n)
{
        size_t done = 0;
        ssize_t w;
        switch (s->how) {
        case SINK_FILE:
                return loop_write(s->fd, buf, n) == 0 ? (ssize_t)n : -1;
        case SINK_NONBLOCK:
                w = write_retry(s->own_fd, buf, n);
                return w >= 0 ? w : w == -EAGAIN ? 0 : -1;
        case SINK_SOCKET:
                w = RETRY_EINTR(send(s->fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL));
                return w >= 0 ? w : errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        case SINK_POLLED:
                /* A pipe that polls writable takes PIPE_BUF bytes without blocking. */
                while (done < n && ready(s->fd)) {
                        w = write_retry(s->fd, buf + done, n - done < PIPE_BUF ? n - done : PIPE_BUF);
                        if (w < 0)
                                return w == -EAGAIN ? (ssize_t)done : -1;
                        done += (size_t)w;
                }
                return (ssize_t)done;
        case SINK_NONE:
        default:
                return -1;
        }
}

/* The consumer is gone: what is held, and everything after, is dropped. */
static void broke(struct sink *s)
{
        s->broken = true;
        s->dropped += s->len;
        s->len = 0;
}

void sink_flush(struct sink *s)
{
        if (s->len == 0 || s->broken)
                return;
        ssize_t w = put(s, s->buf, s->len);
        if (w < 0) {
                broke(s);
                return;
        }
        memmove(s->buf, s->buf + w, s->len - (size_t)w);
        s->len -= (size_t)w;
}

void sink_write(struct sink *s, const void *buf, size_t n)
{
        const char *p = buf;
        if (s->broken || s->how == SINK_NONE) {
                s->dropped += n;
                s->broken = true;
                return;
        }
        sink_flush(s); /* what is held goes first */
        if (s->len == 0 && !s->broken) {
                ssize_t w = put(s, p, n);
                if (w < 0) {
                        broke(s);
                        s->dropped += n;
                        return;
                }
                p += w;
                n -= (size_t)w;
        }
        if (s->broken) {
                s->dropped += n;
                return;
        }
        size_t take = n < s->max - s->len ? n : s->max - s->len;
        if (take > 0) {
                GREEDY_REALLOC(s->buf, s->cap, s->len + take);
                memcpy(s->buf + s->len, p, take);
                s->len += take;
        }
        s->dropped += n - take;
}

bool sink_pending(const struct sink *s) { return s->len > 0 && !s->broken; }

int sink_fd(const struct sink *s)
{
        if (s->how == SINK_NONE || s->how == SINK_FILE)
                return -1;
        return s->how == SINK_NONBLOCK ? s->own_fd : s->fd;
}

void sink_drain(struct sink *s, int stall_ms)
{
        long long last = now_ms();
        while (sink_pending(s)) {
                size_t before = s->len;
                sink_flush(s);
                if (!sink_pending(s))
                        return;
                long long now = now_ms();
                if (s->len < before)
                        last = now;
                long long left = last + stall_ms - now;
                struct pollfd p = { .fd = sink_fd(s), .events = POLLOUT };
                if (left <= 0 || RETRY_EINTR(poll(&p, 1, (int)left)) == 0)
                        break;
        }
        s->dropped += s->len; /* the consumer stalled: the rest is not waited for */
        s->len = 0;
}

void sink_done(struct sink *s)
{
        s->dropped += s->len;
        free(s->buf);
        if (s->own_fd >= 0)
                close(s->own_fd);
        *s = (struct sink){ .fd = -1, .own_fd = -1, .dropped = s->dropped };
}
