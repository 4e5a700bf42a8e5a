#define _GNU_SOURCE
#include "gitguard/snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/tree.h"
#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/fileio.h"
#include "base/macro.h"

static size_t max_of(size_t v, size_t dflt) { return v ? v : dflt; }

static int cmp_items(const void *a, const void *b)
{
        return strcmp(((const struct snap_item *)a)->key, ((const struct snap_item *)b)->key);
}

static void sort(struct snapshot *s)
{
        if (!s->sorted) {
                tb_qsort(s->v, s->n, sizeof *s->v, cmp_items);
                s->sorted = true;
        }
}

static struct snap_item *find(struct snapshot *s, const char *key)
{
        sort(s);
        struct snap_item k = { .key = (char *)key };
        return bsearch(&k, s->v, s->n, sizeof *s->v, cmp_items);
}

/* The items below `key` (a folder's content): [*from, *to). */
static void below(struct snapshot *s, const char *key, size_t *from, size_t *to)
{
        sort(s);
        _cleanup_free_ char *prefix = xasprintf("%s/", key);
        size_t lo = 0, hi = s->n, k = strlen(prefix);
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (strcmp(s->v[mid].key, prefix) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *from = lo;
        while (lo < s->n && strncmp(s->v[lo].key, prefix, k) == 0)
                lo++;
        *to = lo;
}

/* The bytes of the regular file `name` in `dirfd`, up to `max` + 1 (so a
 * longer one shows), or NULL. */
static char *read_small(int dirfd, const char *name, size_t max, size_t *len)
{
        char *buf = NULL;
        int r = read_full_file_at(dirfd, name, max + 1, READ_NOFOLLOW | READ_REGULAR | READ_NONBLOCK, &buf, len, NULL);
        if (r < 0 && r != -EFBIG) {
                free(buf);
                return NULL;
        }
        return buf;
}

static char *read_link(int dirfd, const char *name, size_t *len)
{
        char buf[4096];
        ssize_t n = readlinkat(dirfd, name, buf, sizeof buf - 1);
        if (n < 0)
                return NULL;
        buf[n] = '\0';
        *len = (size_t)n;
        return xstrdup(buf);
}

static int add_item(struct snapshot *s, int dirfd, const char *name, const char *key, const struct stat *st)
{
        if (s->n >= max_of(s->max_items, SNAPSHOT_MAX_ITEMS))
                return -E2BIG;
        GREEDY_REALLOC(s->v, s->cap, s->n + 1);
        struct snap_item *it = &s->v[s->n];
        *it = (struct snap_item){ .key = xstrdup(key), .mode = st->st_mode, .uid = st->st_uid, .gid = st->st_gid,
                                  .dev = st->st_dev, .ino = st->st_ino, .size = st->st_size, .ctime = st->st_ctim };
        if (S_ISREG(st->st_mode) && (size_t)st->st_size <= max_of(s->max_file, SNAPSHOT_MAX_FILE) &&
            s->bytes + (size_t)st->st_size <= max_of(s->max_bytes, SNAPSHOT_MAX_BYTES)) {
                it->data = read_small(dirfd, name, (size_t)st->st_size, &it->len);
                if (!it->data || it->len != (size_t)st->st_size) {
                        free(it->data);
                        free(it->key);
                        return -EIO;
                }
                s->bytes += it->len;
        } else if (S_ISLNK(st->st_mode)) {
                it->data = read_link(dirfd, name, &it->len);
        }
        s->n++;
        s->sorted = false;
        return 0;
}

struct add_ctx {
        struct snapshot *s;
        const char *key;
};

static int add_pre(struct tree_dir *d, void *ctx)
{
        struct add_ctx *a = ctx;
        for (size_t i = 0; i < d->n; i++) {
                struct stat st;
                if (fstatat(d->fd, d->v[i].name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                _cleanup_free_ char *rel = tree_dir_path(d, d->v[i].name, 0);
                _cleanup_free_ char *key = xasprintf("%s/%s", a->key, rel);
                int r = add_item(a->s, d->fd, d->v[i].name, key, &st);
                if (r < 0)
                        return r;
        }
        return 0;
}

int snapshot_add(struct snapshot *s, int dirfd, const char *name, const char *key)
{
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT && errno != ENOTDIR)
                        return -errno;
                GREEDY_REALLOC(s->v, s->cap, s->n + 1);
                s->v[s->n++] = (struct snap_item){ .key = xstrdup(key), .absent = true };
                s->sorted = false;
                return 0;
        }
        int r = add_item(s, dirfd, name, key, &st);
        if (r < 0 || !S_ISDIR(st.st_mode))
                return r;
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct add_ctx a = { .s = s, .key = key };
        const struct tree_ops ops = { .pre = add_pre };
        return tree_walk(fd, &ops, &a);
}

bool snapshot_has(struct snapshot *s, const char *key) { return find(s, key) != NULL; }

bool snapshot_existed(struct snapshot *s, const char *key)
{
        const struct snap_item *it = find(s, key);
        return it && !it->absent;
}

/* Is `name` in `dirfd` (its lstat `st`) the item `it`, itself (not what a
 * folder holds)? */
static bool same_entry(const struct snap_item *it, int dirfd, const char *name, const struct stat *st)
{
        if (it->absent || (st->st_mode & S_IFMT) != (it->mode & S_IFMT) || (st->st_mode & 07777) != (it->mode & 07777) ||
            st->st_uid != it->uid || st->st_gid != it->gid)
                return false;
        if (S_ISDIR(st->st_mode))
                return true;
        if (!it->data)
                return st->st_dev == it->dev && st->st_ino == it->ino && st->st_size == it->size &&
                       st->st_ctim.tv_sec == it->ctime.tv_sec && st->st_ctim.tv_nsec == it->ctime.tv_nsec;
        size_t len = 0;
        _cleanup_free_ char *now = NULL;
        if (S_ISLNK(st->st_mode))
                now = read_link(dirfd, name, &len);
        else if ((size_t)st->st_size == it->len)
                now = read_small(dirfd, name, it->len, &len);
        return now && len == it->len && memcmp(now, it->data, len) == 0;
}

struct same_ctx {
        struct snapshot *s;
        const char *key;
        size_t seen;
        bool differs;
};

static int same_pre(struct tree_dir *d, void *ctx)
{
        struct same_ctx *c = ctx;
        for (size_t i = 0; i < d->n; i++) {
                struct stat st;
                _cleanup_free_ char *rel = tree_dir_path(d, d->v[i].name, 0);
                _cleanup_free_ char *key = xasprintf("%s/%s", c->key, rel);
                const struct snap_item *it = find(c->s, key);
                c->seen++;
                if (!it || fstatat(d->fd, d->v[i].name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !same_entry(it, d->fd, d->v[i].name, &st)) {
                        c->differs = true;
                        return 1;
                }
        }
        return 0;
}

bool snapshot_same(struct snapshot *s, int dirfd, const char *name, const char *key)
{
        const struct snap_item *it = find(s, key);
        struct stat st;
        bool exists = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (!it || it->absent || !exists)
                return it && it->absent && !exists && (errno == ENOENT || errno == ENOTDIR);
        if (!same_entry(it, dirfd, name, &st))
                return false;
        if (!S_ISDIR(st.st_mode))
                return true;
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return false;
        struct same_ctx c = { .s = s, .key = key };
        const struct tree_ops ops = { .pre = same_pre };
        if (tree_walk(fd, &ops, &c) < 0 || c.differs)
                return false;
        size_t from, to;
        below(s, key, &from, &to);
        return c.seen == to - from;
}

/* Make one item at `name` in `dirfd`; a folder 0700 for now. */
static int make_item(const struct snap_item *it, int dirfd, const char *name)
{
        int r = 0;
        if (S_ISDIR(it->mode)) {
                r = mkdirat(dirfd, name, 0700) < 0 ? -errno : 0;
        } else if (S_ISLNK(it->mode)) {
                r = !it->data ? -ENODATA : symlinkat(it->data, dirfd, name) < 0 ? -errno : 0;
        } else if (S_ISREG(it->mode) && it->data) {
                _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd < 0)
                        return -errno;
                for (size_t off = 0; off < it->len;) {
                        ssize_t w = write(fd, it->data + off, it->len - off);
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0)
                                return -errno;
                        off += (size_t)w;
                }
                if (fchmod(fd, it->mode & 07777) < 0)
                        return -errno;
        } else {
                return -ENODATA;
        }
        if (r == 0 && geteuid() == 0 && fchownat(dirfd, name, it->uid, it->gid, AT_SYMLINK_NOFOLLOW) < 0)
                r = -errno;
        return r;
}

/* Open the folder `rel` ('/'-separated) below `root`, never through a link. */
static int open_rel(int root, const char *rel)
{
        int fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
        _cleanup_free_ char *copy = xstrdup(rel);
        char *save = NULL;
        for (char *part = strtok_r(copy, "/", &save); fd >= 0 && part; part = strtok_r(NULL, "/", &save)) {
                int next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                close(fd);
                fd = next;
        }
        return fd;
}

int snapshot_restore(struct snapshot *s, int dirfd, const char *name, const char *key)
{
        struct snap_item *root = find(s, key);
        if (!root)
                return -ENOENT;
        if (root->absent)
                return 0;
        size_t from, to;
        below(s, key, &from, &to);
        for (size_t i = from; i < to; i++)
                if (!s->v[i].data && !S_ISDIR(s->v[i].mode))
                        return -ENODATA;
        int r = make_item(root, dirfd, name);
        if (r < 0 || !S_ISDIR(root->mode))
                return r;
        _cleanup_close_ int top = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (top < 0)
                return -errno;
        size_t skip = strlen(key) + 1;
        for (size_t i = from; r == 0 && i < to; i++) {
                const char *rel = s->v[i].key + skip;
                const char *slash = strrchr(rel, '/');
                _cleanup_free_ char *parent = slash ? strndup(rel, (size_t)(slash - rel)) : xstrdup("");
                _cleanup_close_ int pfd = open_rel(top, parent);
                r = pfd < 0 ? -errno : make_item(&s->v[i], pfd, slash ? slash + 1 : rel);
        }
        /* The folders' own modes last, deepest first: one without write
         * permission could not have been filled. */
        for (size_t i = to; r == 0 && i-- > from;) {
                if (!S_ISDIR(s->v[i].mode))
                        continue;
                _cleanup_close_ int fd = open_rel(top, s->v[i].key + skip);
                if (fd < 0 || fchmod(fd, s->v[i].mode & 07777) < 0)
                        r = -errno;
        }
        if (r == 0 && fchmod(top, root->mode & 07777) < 0)
                r = -errno;
        return r;
}

void snapshot_done(struct snapshot *s)
{
        for (size_t i = 0; i < s->n; i++) {
                free(s->v[i].key);
                free(s->v[i].data);
        }
        free(s->v);
        *s = (struct snapshot){ 0 };
}
