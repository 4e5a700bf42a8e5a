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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#endif

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/io.h"

int open_beneath(int dirfd, const char *rel, int flags)
{
        flags |= O_CLOEXEC | O_NOFOLLOW;
#if defined(SYS_openat2) && defined(RESOLVE_BENEATH)
        struct open_how how = {
                .flags = (unsigned long long)flags,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        int fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
        if (fd >= 0)
                return fd;
        if (errno != ENOSYS && errno != EPERM)
                return -errno;
#endif
        /* No openat2 (or a filter refusing it): walk it ourselves. */
        _cleanup_free_ char *copy = xstrdup(rel);
        _cleanup_close_ int cur = -1;
        char *save = NULL;
        char *part = strtok_r(copy, "/", &save);
        while (part) {
                char *next = strtok_r(NULL, "/", &save);
                if (strcmp(part, "..") == 0 || strcmp(part, ".") == 0)
                        return -EXDEV;
                int at = cur >= 0 ? cur : dirfd;
                int sub = openat(at, part, next ? O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW : flags);
                if (sub < 0)
                        return -errno;
                if (!next)
                        return sub;
                tb_closep(&cur);
                cur = sub;
                part = next;
        }
        return -EINVAL;
}

static void give_up(char *buf, int flags)
{
        if (flags & READ_SECURE)
                erase_and_free(buf);
        else
                free(buf);
}

/* Read `fd` to its end into a buffer first sized for `hint` bytes. With
 * READ_SECURE a buffer is never realloc'd (that could leave a copy behind)
 * but copied and erased. */
static int read_to_end(int fd, size_t max, size_t hint, int flags, char **out, size_t *len)
{
        /* One byte more than expected: the read that finds the end needs room. */
        size_t cap = (hint < max ? hint : max) + 2, n = 0;
        char *buf = xmalloc(cap);

        for (;;) {
                if ((flags & READ_PREFIX) && n >= max)
                        break;
                if (n + 1 >= cap) {
                        if (n > max) {
                                give_up(buf, flags);
                                return -EFBIG;
                        }
                        size_t want = cap < 4096 ? 4096 : cap * 2;
                        if (flags & READ_SECURE) {
                                char *bigger = xmalloc(want);
                                memcpy(bigger, buf, n);
                                erase_and_free(buf);
                                buf = bigger;
                        } else {
                                buf = xrealloc(buf, want);
                        }
                        cap = want;
                }
                size_t room = cap - n - 1;
                if ((flags & READ_PREFIX) && room > max - n)
                        room = max - n;
                ssize_t got = read_retry(fd, buf + n, room);
                if (got < 0) {
                        give_up(buf, flags);
                        return (int)got;
                }
                if (got == 0)
                        break;
                n += (size_t)got;
        }
        if (n > max) {
                give_up(buf, flags);
                return -EFBIG;
        }
        buf[n] = '\0';
        *out = buf;
        if (len)
                *len = n;
        return 0;
}

int read_full_fd(int fd, size_t max, int flags, char **out, size_t *len, struct stat *st)
{
        struct stat own = { 0 };
        st = st ? st : &own;
        *st = (struct stat){ 0 };
        size_t hint = 4094;
        if (flags & READ_REGULAR) {
                if (fstat(fd, st) < 0)
                        return -errno;
                if (S_ISDIR(st->st_mode))
                        return -EISDIR;
                if (!S_ISREG(st->st_mode))
                        return -EINVAL;
                if ((uintmax_t)st->st_size > max && !(flags & READ_PREFIX))
                        return -EFBIG;
                hint = (uintmax_t)st->st_size > max ? max : (size_t)st->st_size;
        }
        return read_to_end(fd, max, hint, flags, out, len);
}

int read_full_file_at(int dirfd, const char *path, size_t max, int flags, char **out, size_t *len, struct stat *st)
{
        int oflags = O_RDONLY | O_CLOEXEC | O_NOCTTY;
        if (flags & READ_NOFOLLOW)
                oflags |= O_NOFOLLOW;
        if (flags & READ_NONBLOCK)
                oflags |= O_NONBLOCK;
        _cleanup_close_ int fd = flags & READ_BENEATH ? open_beneath(dirfd, path, oflags) : openat(dirfd, path, oflags);
        if (fd < 0)
                return flags & READ_BENEATH ? fd : -errno;
        return read_full_fd(fd, max, flags, out, len, st);
}

int read_file_secure(const char *path, size_t max, char **out, size_t *len, struct stat *st)
{
        return read_full_file_at(AT_FDCWD, path, max, READ_NOFOLLOW | READ_REGULAR | READ_NONBLOCK | READ_SECURE, out,
                                 len, st);
}

char *read_file(const char *path, size_t max, size_t *len_out)
{
        char *buf = NULL;
        int r = read_full_file_at(AT_FDCWD, path, max, 0, &buf, len_out, NULL);
        if (r < 0) {
                errno = -r;
                return NULL;
        }
        return buf;
}

char *read_file_at(int dirfd, const char *name, size_t max, size_t *len_out, struct stat *st_out)
{
        char *buf = NULL;
        int r = read_full_file_at(dirfd, name, max, READ_NOFOLLOW | READ_REGULAR | READ_NONBLOCK, &buf, len_out,
                                  st_out);
        if (r < 0) {
                errno = r == -EISDIR ? EINVAL : -r;
                return NULL;
        }
        return buf;
}

/* Make a new file beside `name` in `dirfd` (O_EXCL, never a link): its fd,
 * its name in `tmp`, or a negative errno. */
static int open_temporary(int dirfd, const char *name, mode_t mode, char tmp[NAME_MAX + 1])
{
        for (int attempt = 0;; attempt++) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                snprintf(tmp, NAME_MAX + 1, ".%.200s.tmp-%d-%lx", name, (int)getpid(),
                         (unsigned long)ts.tv_nsec ^ ((unsigned long)attempt * 2654435761UL));
                int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 07777);
                if (fd >= 0)
                        return fd;
                if (errno != EEXIST || attempt > 16)
                        return -errno;
        }
}

/* The mode and owner the new file gets (the umask may have narrowed the
 * mode: it is set exactly). */
static int set_mode_and_owner(int fd, int dirfd, const char *name, mode_t mode, int flags)
{
        struct stat st;
        if ((flags & WRITE_KEEP_MODE) && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                mode = st.st_mode;
        if (fchmod(fd, mode & 07777) < 0)
                return -errno;
        if (flags & WRITE_DIR_OWNER) {
                if (fstat(dirfd, &st) < 0)
                        return -errno;
                if (st.st_uid != geteuid() && fchown(fd, st.st_uid, st.st_gid) < 0)
                        return -errno;
        }
        return 0;
}

int write_file_atomic_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode, int flags)
{
        char tmp[NAME_MAX + 1];
        _cleanup_close_ int fd = open_temporary(dirfd, name, mode, tmp);
        if (fd < 0)
                return fd;
        int r = set_mode_and_owner(fd, dirfd, name, mode, flags);
        if (r == 0)
                r = loop_write(fd, data, len);
        if (r == 0 && (flags & WRITE_SYNC_FILE) && fdatasync(fd) < 0)
                r = -errno;
        if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = -errno;
        if (r < 0) {
                unlinkat(dirfd, tmp, 0);
                return r;
        }
        if ((flags & WRITE_SYNC_DIR) && fsync(dirfd) < 0 && errno != EINVAL)
                return -errno;
        return 0;
}
