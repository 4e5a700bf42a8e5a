#define _GNU_SOURCE
#include "base/io.h"

#include <errno.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

ssize_t loop_read(int fd, void *buf, size_t n)
{
        size_t done = 0;
        while (done < n) {
                ssize_t k = read(fd, (char *)buf + done, n - done);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        if (errno == EAGAIN && done > 0)
                                break;
                        return -errno;
                }
                if (k == 0)
                        break;
                done += (size_t)k;
        }
        return (ssize_t)done;
}

ssize_t read_retry(int fd, void *buf, size_t n)
{
        for (;;) {
                ssize_t k = read(fd, buf, n);
                if (k >= 0)
                        return k;
                if (errno != EINTR)
                        return -errno;
        }
}

ssize_t write_retry(int fd, const void *buf, size_t n)
{
        for (;;) {
                ssize_t k = write(fd, buf, n);
                if (k >= 0)
                        return k;
                if (errno != EINTR)
                        return -errno;
        }
}

int loop_write(int fd, const void *buf, size_t n)
{
        for (size_t done = 0; done < n;) {
                ssize_t k = write(fd, (const char *)buf + done, n - done);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EIO;
                done += (size_t)k;
        }
        return 0;
}

int loop_pwrite(int fd, const void *buf, size_t n, off_t off)
{
        for (size_t done = 0; done < n;) {
                ssize_t k = pwrite(fd, (const char *)buf + done, n - done, off + (off_t)done);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EIO;
                done += (size_t)k;
        }
        return 0;
}

pid_t wait_child(pid_t pid, int *status, int options)
{
        for (;;) {
                pid_t r = waitpid(pid, status, options);
                if (r >= 0)
                        return r;
                if (errno != EINTR)
                        return -errno;
        }
}

int exit_status_of(int wait_status)
{
        if (WIFEXITED(wait_status))
                return WEXITSTATUS(wait_status);
        if (WIFSIGNALED(wait_status))
                return 128 + WTERMSIG(wait_status);
        return 255;
}

int fd_copy(int in, int out)
{
        for (;;) {
                ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
                if (n == 0)
                        return 0;
                if (n > 0 || errno == EINTR)
                        continue;
                if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
                        return -errno;
                break;
        }
        char buf[65536];
        for (;;) {
                ssize_t n = loop_read(in, buf, sizeof buf);
                if (n <= 0)
                        return (int)n;
                int r = loop_write(out, buf, (size_t)n);
                if (r < 0)
                        return r;
        }
}

static void close_span(unsigned from, unsigned to)
{
        if (from > to || close_range(from, to, 0) == 0)
                return;
        struct rlimit rl;
        unsigned max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (unsigned)rl.rlim_cur : 65536;
        for (unsigned fd = from; fd <= to && fd < max; fd++)
                close((int)fd);
}

void close_fds_except(int from, const int *keep, size_t n)
{
        unsigned lo = (unsigned)from;
        for (;;) {
                int next = -1; /* the lowest kept fd from lo on */
                for (size_t i = 0; i < n; i++)
                        if (keep[i] >= 0 && (unsigned)keep[i] >= lo && (next < 0 || keep[i] < next))
                                next = keep[i];
                if (next < 0) {
                        close_span(lo, ~0U);
                        return;
                }
                if ((unsigned)next > lo)
                        close_span(lo, (unsigned)next - 1);
                lo = (unsigned)next + 1;
        }
}
