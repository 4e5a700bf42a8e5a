#define _GNU_SOURCE
#include "trials_home.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

int trials_home_lock(const char *path, long timeout_ms, int *fd_out, struct tb_error *err)
{
        long long deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
        for (;;) {
                _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0)
                        return tb_fail(err, -errno, "lock '%s': %s", path, strerror(errno));
                if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
                        /* Locked; but is it still the file at `path`? */
                        struct stat a, b;
                        if (fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
                                *fd_out = tb_steal_fd(&fd);
                                return 0;
                        }
                        continue;
                }
                if (errno != EWOULDBLOCK && errno != EINTR)
                        return tb_fail(err, -errno, "lock '%s': %s", path, strerror(errno));
                if (now_ms() >= deadline)
                        return tb_fail(err, -ETIMEDOUT, "lock '%s' is held by another Trial", path);
                struct timespec ts = { 0, 20L * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
}

static bool kept(const char *name, const char *const keep[])
{
        for (size_t i = 0; keep && keep[i]; i++)
                if (strcmp(name, keep[i]) == 0)
                        return true;
        return false;
}

/* Empty the folder open at `dfd` (which this takes), keeping `keep` at top level only. */
static int wipe_at(int dfd, const char *const keep[], const char *where, struct tb_error *err)
{
        _cleanup_closedir_ DIR *d = fdopendir(dfd);
        if (!d) {
                int e = errno;
                close(dfd);
                return tb_fail(err, -e, "wiping '%s': %s", where, strerror(e));
        }
        int r = 0;
        struct dirent *e;
        while (r == 0 && (errno = 0, e = readdir(d))) {
                const char *n = e->d_name;
                if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
                        continue;
                unsigned char type = e->d_type;
                if (type == DT_UNKNOWN) {
                        struct stat st;
                        if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                continue;
                        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
                }
                if (type == DT_REG && kept(n, keep))
                        continue;
                if (type == DT_DIR) {
                        int sub = openat(dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0) {
                                r = tb_fail(err, -errno, "wiping '%s/%s': %s", where, n, strerror(errno));
                                break;
                        }
                        r = wipe_at(sub, NULL, where, err);
                        if (r == 0 && unlinkat(dirfd(d), n, AT_REMOVEDIR) < 0)
                                r = tb_fail(err, -errno, "wiping '%s/%s': %s", where, n, strerror(errno));
                } else if (unlinkat(dirfd(d), n, 0) < 0 && errno != ENOENT) {
                        r = tb_fail(err, -errno, "wiping '%s/%s': %s", where, n, strerror(errno));
                }
        }
        return r;
}

int trials_home_wipe(const char *dir, const char *const keep[], struct tb_error *err)
{
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return tb_fail(err, -errno, "wiping '%s': %s (it must be a real folder)", dir, strerror(errno));
        return wipe_at(dfd, keep, dir, err);
}
