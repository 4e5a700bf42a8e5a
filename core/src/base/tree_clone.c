/* A faithful copy of a folder tree (base/tree.h's tree_clone_at), walked
 * with tree_walk: for a throwaway copy of a repository that must look to
 * its reader as the original does (owners, modes, times), made as fast as
 * the filesystem allows (shared blocks where it can). */
#define _GNU_SOURCE
#include "base/tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/io.h"
#include "base/macro.h"

struct clone {
        int *to; /* per depth: the copy of that folder, open */
        size_t cap;
        bool no_reflink; /* the filesystem said it cannot share blocks: not asked again */
        struct tree_clone_stats st;
};

/* The permission bits a copy gets: never setuid or setgid. */
static mode_t copy_mode(mode_t m) { return m & 01777; }

/* Owner and times of the copy `fd` (or `name` in it, a link), as `src`
 * says; a chown that is not ours to make (not root) is skipped. */
static void copy_meta(int fd, const char *name, const struct stat *src)
{
        const struct timespec ts[2] = { src->st_atim, src->st_mtim };
        if (name) {
                if (fchownat(fd, name, src->st_uid, src->st_gid, AT_SYMLINK_NOFOLLOW) < 0) {
                }
                if (utimensat(fd, name, ts, AT_SYMLINK_NOFOLLOW) < 0) {
                }
                return;
        }
        if (fchown(fd, src->st_uid, src->st_gid) < 0) {
        }
        if (futimens(fd, ts) < 0) {
        }
}

/* `in` (`size` bytes) into `out`: shared blocks, else fd_copy. 1 when the
 * blocks are shared, 0 copied, or -errno. */
static int copy_bytes(struct clone *c, int in, int out, off_t size)
{
        if (!c->no_reflink && size > 0) {
                if (ioctl(out, FICLONE, in) == 0)
                        return 1;
                /* Not this filesystem (EOPNOTSUPP), not across two (EXDEV): not again. */
                c->no_reflink = errno == EOPNOTSUPP || errno == EXDEV || errno == EINVAL || errno == ENOTTY;
        }
        return fd_copy(in, out);
}

/* A file the caller cannot read: there, empty, with its mode. */
static int clone_unreadable(struct clone *c, int from, const char *name, int to)
{
        struct stat st;
        if (fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                return 0;
        _cleanup_close_ int out = openat(to, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (out < 0)
                return -errno;
        c->st.skipped++;
        copy_meta(out, NULL, &st);
        return fchmod(out, copy_mode(st.st_mode)) < 0 ? -errno : 0;
}

static int clone_file(struct clone *c, int from, const char *name, int to)
{
        _cleanup_close_ int in = openat(from, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat st;
        if (in < 0 && errno == EACCES)
                return clone_unreadable(c, from, name, to);
        if (in < 0 || fstat(in, &st) < 0)
                return errno == ENOENT || errno == ELOOP ? 0 : -errno;
        if (!S_ISREG(st.st_mode))
                return 0; /* replaced since it was listed */
        _cleanup_close_ int out = openat(to, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                         copy_mode(st.st_mode) & 0700);
        if (out < 0)
                return -errno;
        int r = copy_bytes(c, in, out, st.st_size);
        if (r < 0)
                return r;
        c->st.files++;
        c->st.reflinked += r == 1;
        c->st.bytes += st.st_size;
        copy_meta(out, NULL, &st);
        /* After the chown, which clears the bits a chmod would have set. */
        return fchmod(out, copy_mode(st.st_mode)) < 0 ? -errno : 0;
}

static int clone_link(struct clone *c, int from, const char *name, int to)
{
        char target[PATH_MAX];
        struct stat st;
        ssize_t n = readlinkat(from, name, target, sizeof target - 1);
        if (n < 0 || fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT || errno == EINVAL ? 0 : -errno;
        target[n] = '\0';
        if (symlinkat(target, to, name) < 0)
                return -errno;
        c->st.links++;
        copy_meta(to, name, &st);
        return 0;
}

/* A folder is made when the walk enters it (clone_pre: 0700, so that it
 * can be filled, as cp does, depth first) and given its mode, owner and
 * times once it is full (clone_post). One the caller cannot read is made
 * here, empty, and not entered: `skip`. */
static int clone_dir(struct clone *c, int from, struct tree_entry *e, int to)
{
        if (faccessat(from, e->name, R_OK | X_OK, AT_EACCESS) == 0)
                return 0;
        if (mkdirat(to, e->name, 0700) < 0)
                return -errno;
        c->st.dirs++;
        e->skip = true;
        c->st.skipped++;
        struct stat st;
        if (fstatat(from, e->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                _cleanup_close_ int fd = openat(to, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0) {
                        copy_meta(fd, NULL, &st);
                        if (fchmod(fd, copy_mode(st.st_mode)) < 0) {
                        }
                }
        }
        return 0;
}

static int clone_entries(struct clone *c, struct tree_dir *d, int to)
{
        for (size_t i = 0; i < d->n; i++) {
                struct tree_entry *e = &d->v[i];
                int r;
                switch (e->type) {
                case DT_REG:
                        r = clone_file(c, d->fd, e->name, to);
                        break;
                case DT_LNK:
                        r = clone_link(c, d->fd, e->name, to);
                        break;
                case DT_DIR:
                        r = clone_dir(c, d->fd, e, to);
                        break;
                default:
                        c->st.skipped++;
                        r = 0;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Entering `d`: make and open its copy (its name is the last part of its
 * path), then copy what it holds. */
static int clone_pre(struct tree_dir *d, void *ctx)
{
        struct clone *c = ctx;
        if (d->depth > 0) {
                size_t old = c->cap;
                GREEDY_REALLOC(c->to, c->cap, d->depth + 1);
                for (size_t i = old; i < c->cap; i++)
                        c->to[i] = -1;
                _cleanup_free_ char *path = tree_dir_path(d, NULL, 0);
                const char *slash = strrchr(path, '/');
                const char *name = slash ? slash + 1 : path;
                if (mkdirat(c->to[d->depth - 1], name, 0700) < 0)
                        return -errno;
                c->st.dirs++;
                c->to[d->depth] = openat(c->to[d->depth - 1], name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (c->to[d->depth] < 0)
                        return -errno;
        }
        return clone_entries(c, d, c->to[d->depth]);
}

/* The subfolder `name` of `d` is full: its mode, owner and times now. */
static int clone_post(struct tree_dir *d, const char *name, void *ctx)
{
        struct clone *c = ctx;
        int to = c->to[d->depth + 1];
        c->to[d->depth + 1] = -1;
        struct stat st;
        int r = 0;
        if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                copy_meta(to, NULL, &st);
                if (fchmod(to, copy_mode(st.st_mode)) < 0)
                        r = -errno;
        }
        close(to);
        return r;
}

int tree_clone_at(int from_dirfd, const char *from, int to_dirfd, const char *to, struct tree_clone_stats *st)
{
        _cleanup_close_ int src = openat(from_dirfd, from,
                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat root;
        if (src < 0 || fstat(src, &root) < 0)
                return -errno;
        if (mkdirat(to_dirfd, to, 0700) < 0)
                return -errno;
        struct clone c = { 0 };
        GREEDY_REALLOC(c.to, c.cap, 1);
        for (size_t i = 0; i < c.cap; i++)
                c.to[i] = -1;
        c.to[0] = openat(to_dirfd, to, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r = c.to[0] < 0 ? -errno : 0;
        static const struct tree_ops ops = { .pre = clone_pre, .post = clone_post };
        if (r == 0)
                r = tree_walk(src, &ops, &c);
        if (r == 0) {
                copy_meta(c.to[0], NULL, &root);
                if (fchmod(c.to[0], copy_mode(root.st_mode)) < 0)
                        r = -errno;
        }
        for (size_t i = 0; i < c.cap; i++)
                if (c.to[i] >= 0)
                        close(c.to[i]);
        free(c.to);
        if (st)
                *st = c.st;
        return r;
}
