#define _GNU_SOURCE
#include "base/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"

int write_file_atomic_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode)
{
        return write_file_atomic_at_flags(dirfd, name, data, len, mode, WRITE_SYNC_FILE | WRITE_SYNC_DIR);
}

int write_file_atomic_at_flags(int dirfd, const char *name, const void *data, size_t len, mode_t mode, int flags)
{
        char tmp[NAME_MAX + 1];
        _cleanup_close_ int fd = -1;
        int r;

        for (int attempt = 0; fd < 0; attempt++) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                snprintf(tmp, sizeof tmp, ".%.200s.tmp-%d-%lx", name, (int)getpid(),
                         (unsigned long)ts.tv_nsec ^ ((unsigned long)attempt * 2654435761UL));
                fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 07777);
                if (fd < 0 && (errno != EEXIST || attempt > 16))
                        return -errno;
        }
        /* The umask may have narrowed the mode: set it exactly. */
        if (fchmod(fd, mode & 07777) < 0)
                goto fail;
        for (size_t off = 0; off < len;) {
                ssize_t w = write(fd, (const char *)data + off, len - off);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        goto fail;
                }
                off += (size_t)w;
        }
        if ((flags & WRITE_SYNC_FILE) && fdatasync(fd) < 0)
                goto fail;
        if (renameat(dirfd, tmp, dirfd, name) < 0)
                goto fail;
        if ((flags & WRITE_SYNC_DIR) && fsync(dirfd) < 0 && errno != EINVAL)
                return -errno;
        return 0;
fail:
        r = -errno;
        unlinkat(dirfd, tmp, 0);
        return r;
}

/* Read `fd` to its end into *out (malloc'd, NUL-terminated), at most `max`
 * bytes, starting with room for `hint`. With `secure`, a buffer is never
 * realloc'd (that could leave a copy behind) but copied and erased, and it
 * is erased on error. 0 or a negative errno (-EFBIG over `max`). */
static int read_fd_all(int fd, size_t max, size_t hint, bool secure, char **out, size_t *len)
{
        /* One byte more than expected: the read that finds the end needs room. */
        size_t cap = (hint < max ? hint : max) + 2, n = 0;
        char *buf = xmalloc(cap);
        int r = 0;

        for (;;) {
                if (n + 1 >= cap) {
                        if (n > max) {
                                r = -EFBIG;
                                break;
                        }
                        size_t want = cap < 4096 ? 4096 : cap * 2;
                        if (secure) {
                                char *bigger = xmalloc(want);
                                memcpy(bigger, buf, n);
                                erase_and_free(buf);
                                buf = bigger;
                        } else {
                                buf = xrealloc(buf, want);
                        }
                        cap = want;
                }
                ssize_t got = read(fd, buf + n, cap - n - 1);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got < 0) {
                        r = errno > 0 ? -errno : -EIO;
                        break;
                }
                if (got == 0)
                        break;
                n += (size_t)got;
        }
        if (r == 0 && n > max)
                r = -EFBIG;
        if (r < 0) {
                if (secure)
                        erase_and_free(buf);
                else
                        free(buf);
                return r;
        }
        buf[n] = '\0';
        *out = buf;
        *len = n;
        return 0;
}

int read_fd_whole(int fd, size_t max, char **out, size_t *len)
{
        return read_fd_all(fd, max, 4094, false, out, len);
}

char *read_file(const char *path, size_t max, size_t *len_out)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        char *buf = NULL;
        size_t len = 0;
        int r = read_fd_all(fd, max, 4094, false, &buf, &len);
        if (r < 0) {
                errno = -r;
                return NULL;
        }
        if (len_out)
                *len_out = len;
        return buf;
}

char *read_file_at(int dirfd, const char *name, size_t max, size_t *len_out, struct stat *st_out)
{
        struct stat own = { 0 };
        struct stat *st = st_out ? st_out : &own;
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        if (fd < 0 || fstat(fd, st) < 0)
                return NULL;
        if (!S_ISREG(st->st_mode)) {
                errno = EINVAL;
                return NULL;
        }
        if ((uintmax_t)st->st_size > max) {
                errno = EFBIG;
                return NULL;
        }
        char *buf = NULL;
        size_t len = 0;
        int r = read_fd_all(fd, max, (size_t)st->st_size, false, &buf, &len);
        if (r < 0) {
                errno = -r;
                return NULL;
        }
        if (len_out)
                *len_out = len;
        return buf;
}

int read_file_secure(const char *path, size_t max, char **out, size_t *len, struct stat *st)
{
        struct stat own = { 0 };
        st = st ? st : &own;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 || fstat(fd, st) < 0)
                return errno > 0 ? -errno : -EIO;
        if (S_ISDIR(st->st_mode))
                return -EISDIR;
        if (!S_ISREG(st->st_mode))
                return -EINVAL;
        if ((uintmax_t)st->st_size > max)
                return -EFBIG;
        return read_fd_all(fd, max, (size_t)st->st_size, true, out, len);
}
