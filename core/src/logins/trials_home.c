#define _GNU_SOURCE
#include "logins/trials_home.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/io.h"
#include "base/path.h"

int trials_home_lock(const char *path, long timeout_ms, int *fd_out, struct tb_error *err)
{
        long long deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
        for (;;) {
                _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0)
                        return tb_fail(err, -errno, "lock '%s': %s", path, strerror(errno));
                if (RETRY_EINTR(flock(fd, LOCK_EX | LOCK_NB)) == 0) {
                        /* Locked; but is it still the file at `path`? */
                        struct stat a, b;
                        if (fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
                                *fd_out = TAKE_FD(fd);
                                return 0;
                        }
                        continue;
                }
                if (errno != EWOULDBLOCK)
                        return tb_fail(err, -errno, "lock '%s': %s", path, strerror(errno));
                if (now_ms() >= deadline)
                        return tb_fail(err, -ETIMEDOUT, "lock '%s' is held by another Trial", path);
                struct timespec ts = { 0, 20L * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
}

/* chmod the file an O_PATH fd holds, never a path: fchmodat2(AT_EMPTY_PATH)
 * where the kernel has it, else through its /proc/self/fd entry. 0 or a
 * negative errno. */
static int chmod_by_fd(int pin, mode_t mode)
{
#ifdef SYS_fchmodat2
        if (syscall(SYS_fchmodat2, pin, "", mode, AT_EMPTY_PATH) == 0)
                return 0;
#endif
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", pin);
        return chmod(self, mode) < 0 ? -errno : 0;
}

/* Make the folder `name` in `dfd` 0700 and open it, never through a link: a
 * session may have left it unreadable (chmod 000) or unwritable. The folder
 * is pinned with O_PATH first and changed by that fd (fchmodat2 with
 * AT_EMPTY_PATH, else its /proc/self/fd entry). An fd, or a negative errno. */
static int open_dir_for_wipe(int dfd, const char *name)
{
        _cleanup_close_ int pin = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (pin < 0)
                return -errno;
        struct stat st;
        if (fstat(pin, &st) < 0)
                return -errno;
        int r = (st.st_mode & 0700) != 0700 ? chmod_by_fd(pin, 0700) : 0;
        if (r < 0)
                return r;
        int fd = openat(pin, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
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
                        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
                }
                if (type == DT_REG && kept(n, keep))
                        continue;
                if (type == DT_DIR) {
                        int sub = open_dir_for_wipe(dirfd(d), n);
                        if (sub < 0) {
                                r = tb_fail(err, sub, "wiping '%s/%s': %s", where, n, strerror(-sub));
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
        /* Through its parent, so that a home left unreadable is taken back too. */
        _cleanup_free_ char *up = path_dirname(dir);
        const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
        _cleanup_close_ int parent = open(up, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int dfd = parent < 0 ? -errno : !*base ? -EINVAL : open_dir_for_wipe(parent, base);
        if (dfd < 0)
                return tb_fail(err, dfd, "wiping '%s': %s (it must be a real folder)", dir, strerror(-dfd));
        return wipe_at(dfd, keep, dir, err);
}
