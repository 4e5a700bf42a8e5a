#define _GNU_SOURCE
#include "base/tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/io.h"
#include "base/strbuf.h"

struct frame {
        struct tree_dir d;
        char *name;  /* its name in its parent (NULL for the root) */
        char *names; /* the entries' names, one buffer */
        size_t next; /* the next entry to consider entering */
};

struct tree_walk {
        struct frame *f;
        size_t n, cap;
        size_t open; /* frames whose fd is open */
        dev_t root_dev;
        int flags;
};

/* chmod the file an O_PATH fd holds, never a path: fchmodat2 (AT_EMPTY_PATH)
 * where the kernel has it, else its /proc/self/fd entry. */
static int chmod_pinned(int pin, mode_t mode)
{
#ifdef SYS_fchmodat2
        if (syscall(SYS_fchmodat2, pin, "", mode, AT_EMPTY_PATH) == 0)
                return 0;
#endif
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", pin);
        return chmod(self, mode);
}

/* Open the folder `name` in `dirfd`, never through a link; with
 * TREE_FIX_MODES, one its owner cannot read, search or write gets u+rwx
 * first. An fd or -1 with errno. */
static int open_dir(int dirfd, const char *name, int flags)
{
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0 || errno != EACCES || !(flags & TREE_FIX_MODES))
                return fd;
        _cleanup_close_ int pin = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (pin < 0 || fstat(pin, &st) < 0 || chmod_pinned(pin, (st.st_mode & 07777) | 0700) < 0)
                return -1;
        return openat(pin, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int tree_open_dir(int dirfd, const char *name, int flags)
{
        int fd = open_dir(dirfd, name, flags);
        return fd < 0 ? -errno : fd;
}

/* Give a folder already open its owner's rwx (to empty it). */
static void fix_mode(int fd)
{
        struct stat st;
        if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700 && fchmod(fd, (st.st_mode & 07777) | 0700) < 0) {
        }
}

static unsigned char type_of(mode_t m)
{
        return S_ISDIR(m)    ? DT_DIR
               : S_ISREG(m)  ? DT_REG
               : S_ISLNK(m)  ? DT_LNK
               : S_ISFIFO(m) ? DT_FIFO
               : S_ISSOCK(m) ? DT_SOCK
               : S_ISCHR(m)  ? DT_CHR
                             : DT_BLK;
}

/* Read every entry of the folder at fr->d.fd. */
static int read_entries(struct frame *fr)
{
        struct {
                size_t off;
                unsigned char type;
        } *tmp = NULL;
        size_t n = 0, cap = 0, len = 0, len_cap = 0;
        char buf[32768];
        int r = 0;
        for (;;) {
                ssize_t got = getdents64(fr->d.fd, buf, sizeof buf);
                if (got < 0) {
                        r = -errno;
                        break;
                }
                if (got == 0)
                        break;
                for (ssize_t pos = 0; pos < got;) {
                        struct dirent64 *e = (struct dirent64 *)(void *)(buf + pos);
                        pos += e->d_reclen;
                        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                                continue;
                        unsigned char type = e->d_type;
                        if (type == DT_UNKNOWN) {
                                struct stat st;
                                if (fstatat(fr->d.fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                        continue; /* gone */
                                type = type_of(st.st_mode);
                        }
                        size_t k = strlen(e->d_name) + 1;
                        GREEDY_REALLOC(fr->names, len_cap, len + k);
                        memcpy(fr->names + len, e->d_name, k);
                        GREEDY_REALLOC(tmp, cap, n + 1);
                        tmp[n].off = len;
                        tmp[n].type = type;
                        n++;
                        len += k;
                }
        }
        fr->d.v = xcalloc(n ? n : 1, sizeof *fr->d.v);
        for (size_t i = 0; i < n; i++)
                fr->d.v[i] = (struct tree_entry){ .name = fr->names + tmp[i].off, .type = tmp[i].type };
        fr->d.n = n;
        free(tmp);
        return r;
}

static void frame_done(struct tree_walk *w, struct frame *fr)
{
        if (fr->d.fd >= 0) {
                close(fr->d.fd);
                w->open--;
        }
        free(fr->d.v);
        free(fr->names);
        free(fr->name);
}

/* Push the folder open at `fd` (taken) as a new frame, its entries read. */
static int push(struct tree_walk *w, int fd, const char *name)
{
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int e = -errno;
                close(fd);
                return e;
        }
        GREEDY_REALLOC(w->f, w->cap, w->n + 1);
        struct frame *fr = &w->f[w->n++];
        *fr = (struct frame){ .d = { .fd = fd, .depth = w->n - 1, .dev = st.st_dev, .ino = st.st_ino,
                                     .ctime = st.st_ctim, .walk = w },
                              .name = name ? xstrdup(name) : NULL };
        w->open++;
        /* Beyond the budget, the deepest ancestor still open gives its fd up. */
        if (w->open > TREE_MAX_OPEN) {
                struct frame *old = &w->f[w->n - 1 - TREE_MAX_OPEN];
                if (old->d.fd >= 0) {
                        close(old->d.fd);
                        old->d.fd = -1;
                        w->open--;
                }
        }
        return read_entries(fr);
}

/* Pop the top frame; the new top gets its fd back through ".." of the
 * popped one when it had given it up, checked to be the same folder. */
static int pop(struct tree_walk *w)
{
        struct frame *top = &w->f[w->n - 1];
        int r = 0;
        if (w->n >= 2 && w->f[w->n - 2].d.fd < 0) {
                struct frame *parent = &w->f[w->n - 2];
                int fd = openat(top->d.fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != parent->d.dev || st.st_ino != parent->d.ino) {
                        r = fd < 0 ? -errno : -ESTALE;
                        if (fd >= 0)
                                close(fd);
                } else {
                        parent->d.fd = fd;
                        w->open++;
                }
        }
        frame_done(w, top);
        w->n--;
        return r;
}

/* The next subfolder of the top frame to enter, or NULL. */
static struct tree_entry *next_dir(struct frame *fr)
{
        while (fr->next < fr->d.n) {
                struct tree_entry *e = &fr->d.v[fr->next++];
                if (e->type == DT_DIR && !e->skip)
                        return e;
        }
        return NULL;
}

int tree_walk(int root_fd, const struct tree_ops *ops, void *ctx)
{
        struct tree_walk w = { .flags = ops->flags };
        /* A file description of its own: a dup would share (and move) the
         * caller's position in the folder. */
        int fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = push(&w, fd, NULL);
        if (r == 0 && w.n > 0) {
                w.root_dev = w.f[0].d.dev;
                r = ops->pre ? ops->pre(&w.f[0].d, ctx) : 0;
        }
        while (r == 0 && w.n > 0) {
                struct frame *top = &w.f[w.n - 1];
                struct tree_entry *e = next_dir(top);
                if (!e) {
                        char *name = top->name ? xstrdup(top->name) : NULL;
                        r = pop(&w);
                        if (r == 0 && name && ops->post)
                                r = ops->post(&w.f[w.n - 1].d, name, ctx);
                        free(name);
                        continue;
                }
                int sub = open_dir(top->d.fd, e->name, w.flags);
                if (sub < 0) {
                        if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
                                continue; /* gone, or replaced: nothing to enter */
                        r = -errno;
                        break;
                }
                struct stat st;
                if (fstat(sub, &st) < 0 || st.st_dev != w.root_dev) {
                        close(sub); /* another filesystem: not entered */
                        continue;
                }
                r = push(&w, sub, e->name);
                if (r == 0 && ops->pre)
                        r = ops->pre(&w.f[w.n - 1].d, ctx);
        }
        while (w.n > 0)
                frame_done(&w, &w.f[--w.n]);
        free(w.f);
        return r;
}

char *tree_dir_path(const struct tree_dir *d, const char *name, size_t max)
{
        const struct tree_walk *w = d->walk;
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        for (size_t i = 1; i <= d->depth; i++)
                strbuf_addf(&sb, "%s%s", i > 1 ? "/" : "", w->f[i].name);
        if (name)
                strbuf_addf(&sb, "%s%s", d->depth > 0 ? "/" : "", name);
        if (sb.len > max && max > 0) {
                char *tail = xasprintf(".../%s", sb.s + sb.len - max);
                free(sb.s);
                return tail;
        }
        return sb.s;
}

/* ---- removing ---- */

static int remove_pre(struct tree_dir *d, void *ctx)
{
        (void)ctx;
        fix_mode(d->fd);
        for (size_t i = 0; i < d->n; i++)
                if (d->v[i].type != DT_DIR && unlinkat(d->fd, d->v[i].name, 0) < 0 && errno != ENOENT)
                        return -errno;
        return 0;
}

static int remove_post(struct tree_dir *d, const char *name, void *ctx)
{
        (void)ctx;
        return unlinkat(d->fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

int tree_remove_at(int dirfd, const char *name)
{
        if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        _cleanup_close_ int fd = open_dir(dirfd, name, TREE_FIX_MODES);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        static const struct tree_ops ops = { .pre = remove_pre, .post = remove_post, .flags = TREE_FIX_MODES };
        int r = tree_walk(fd, &ops, NULL);
        if (r == 0 && unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                r = -errno;
        return r;
}

/* ---- copying ---- */

struct copy {
        int *to;    /* per depth: the copy of that folder */
        size_t cap;
        size_t max_depth;
        size_t skipped;
};

static int copy_file(int from_dir, const char *name, int to_dir)
{
        _cleanup_close_ int in = openat(from_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat st;
        if (in < 0 || fstat(in, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        _cleanup_close_ int out =
                openat(to_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 0777);
        if (out < 0)
                return -errno;
        return fd_copy(in, out);
}

static int copy_pre(struct tree_dir *d, void *ctx)
{
        struct copy *c = ctx;
        int to = c->to[d->depth];
        for (size_t i = 0; i < d->n; i++) {
                struct tree_entry *e = &d->v[i];
                int r = 0;
                if (e->type == DT_REG) {
                        r = copy_file(d->fd, e->name, to);
                } else if (e->type == DT_LNK) {
                        char target[4096];
                        ssize_t n = readlinkat(d->fd, e->name, target, sizeof target - 1);
                        if (n >= 0) {
                                target[n] = '\0';
                                r = symlinkat(target, to, e->name) < 0 ? -errno : 0;
                        }
                } else if (e->type == DT_DIR) {
                        if (d->depth + 1 > c->max_depth) {
                                e->skip = true;
                                c->skipped++;
                        } else if (mkdirat(to, e->name, 0700) < 0) {
                                r = -errno;
                        }
                } else {
                        c->skipped++;
                }
                if (r < 0 && r != -ENOENT && r != -EINVAL)
                        return r;
        }
        /* The copies of the subfolders, opened as the walk enters them. */
        return 0;
}

/* Entering a subfolder: open its copy (pre of the child needs it), which
 * this post-order hook closes again. */
static int copy_enter(struct copy *c, const struct tree_dir *child_parent, const char *name)
{
        size_t depth = child_parent->depth + 1;
        size_t old = c->cap;
        GREEDY_REALLOC(c->to, c->cap, depth + 1);
        for (size_t i = old; i < c->cap; i++)
                c->to[i] = -1;
        c->to[depth] = openat(c->to[child_parent->depth], name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return c->to[depth] < 0 ? -errno : 0;
}

static int copy_pre_all(struct tree_dir *d, void *ctx)
{
        struct copy *c = ctx;
        if (d->depth > 0) {
                /* The walk entered `d` from its parent: open its copy first. */
                const struct tree_walk *w = d->walk;
                const struct tree_dir *parent = &w->f[d->depth - 1].d;
                int r = copy_enter(c, parent, w->f[d->depth].name);
                if (r < 0)
                        return r;
        }
        return copy_pre(d, ctx);
}

static int copy_post(struct tree_dir *d, const char *name, void *ctx)
{
        struct copy *c = ctx;
        (void)name;
        int to = c->to[d->depth + 1];
        c->to[d->depth + 1] = -1;
        if (to >= 0)
                close(to);
        return 0;
}

int tree_copy_at(int from_dirfd, const char *from, int to_dirfd, const char *to, size_t max_depth,
                 size_t *skipped)
{
        struct stat st;
        if (fstatat(from_dirfd, from, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (S_ISREG(st.st_mode)) {
                /* A file alone: copy it under its new name through a folder fd pair. */
                _cleanup_close_ int in = openat(from_dirfd, from, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                if (in < 0)
                        return -errno;
                _cleanup_close_ int out =
                        openat(to_dirfd, to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 0777);
                if (out < 0)
                        return -errno;
                char buf[65536];
                for (ssize_t n; (n = read(in, buf, sizeof buf)) != 0;) {
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return -errno;
                        for (ssize_t off = 0; off < n;) {
                                ssize_t w = write(out, buf + off, (size_t)(n - off));
                                if (w < 0 && errno != EINTR)
                                        return -errno;
                                off += w > 0 ? w : 0;
                        }
                }
                return 0;
        }
        if (S_ISLNK(st.st_mode)) {
                char target[4096];
                ssize_t n = readlinkat(from_dirfd, from, target, sizeof target - 1);
                if (n < 0)
                        return -errno;
                target[n] = '\0';
                return symlinkat(target, to_dirfd, to) < 0 ? -errno : 0;
        }
        if (!S_ISDIR(st.st_mode)) {
                if (skipped)
                        (*skipped)++;
                return 0;
        }
        if (mkdirat(to_dirfd, to, 0700) < 0)
                return -errno;
        _cleanup_close_ int src = open_dir(from_dirfd, from, TREE_FIX_MODES);
        if (src < 0)
                return -errno;
        struct copy c = { .max_depth = max_depth };
        GREEDY_REALLOC(c.to, c.cap, 1);
        for (size_t i = 0; i < c.cap; i++)
                c.to[i] = -1;
        c.to[0] = openat(to_dirfd, to, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (c.to[0] < 0) {
                free(c.to);
                return -errno;
        }
        static const struct tree_ops ops = { .pre = copy_pre_all, .post = copy_post, .flags = TREE_FIX_MODES };
        int r = tree_walk(src, &ops, &c);
        for (size_t i = 0; i < c.cap; i++)
                if (c.to[i] >= 0)
                        close(c.to[i]);
        free(c.to);
        if (skipped)
                *skipped += c.skipped;
        return r;
}
