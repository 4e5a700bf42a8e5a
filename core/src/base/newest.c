#define _GNU_SOURCE
#include "base/newest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/tree.h"

struct finder {
        const struct newest_limits *lim;
        struct newest_file *v; /* newest first, at most lim->max_files */
        size_t n;
        size_t seen; /* entries seen so far */
        bool cut;
};

/* Is `a` newer than `b` (ties: the smaller path first)? */
static bool newer(const struct newest_file *a, const struct newest_file *b)
{
        if (a->mtime.tv_sec != b->mtime.tv_sec)
                return a->mtime.tv_sec > b->mtime.tv_sec;
        if (a->mtime.tv_nsec != b->mtime.tv_nsec)
                return a->mtime.tv_nsec > b->mtime.tv_nsec;
        return strcmp(a->path, b->path) < 0;
}

static bool name_matches(const char *name, const char *suffix)
{
        size_t n = strlen(name), k = suffix ? strlen(suffix) : 0;
        return name[0] != '.' && n > k && strcmp(name + n - k, suffix ? suffix : "") == 0;
}

/* Keep `f` (taken) among the newest, in order; what falls off is freed. */
static void keep(struct finder *w, struct newest_file f)
{
        size_t at = w->n;
        while (at > 0 && newer(&f, &w->v[at - 1]))
                at--;
        if (at == w->lim->max_files) {
                free(f.path);
                w->cut = true;
                return;
        }
        if (w->n == w->lim->max_files) {
                free(w->v[w->n - 1].path);
                w->n--;
                w->cut = true;
        }
        memmove(&w->v[at + 1], &w->v[at], (w->n - at) * sizeof *w->v);
        w->v[at] = f;
        w->n++;
}

static int find_pre(struct tree_dir *d, void *ctx)
{
        struct finder *w = ctx;
        const struct newest_limits *lim = w->lim;
        for (size_t i = 0; i < d->n; i++) {
                struct tree_entry *e = &d->v[i];
                if (++w->seen > lim->max_entries) {
                        w->cut = true;
                        return 1;
                }
                if (e->type == DT_DIR) {
                        e->skip = d->depth >= lim->max_depth;
                        continue;
                }
                struct stat st;
                if (e->type != DT_REG || !name_matches(e->name, lim->suffix) ||
                    fstatat(d->fd, e->name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
                    st.st_uid != lim->owner)
                        continue;
                char *path = tree_dir_path(d, e->name, 0);
                if (strlen(path) >= PATH_MAX) {
                        free(path);
                        w->cut = true;
                        continue;
                }
                keep(w, (struct newest_file){ .path = path, .mtime = st.st_mtim, .size = st.st_size });
        }
        return 0;
}

int newest_files_at(int root_fd, const struct newest_limits *lim, struct newest_file **out, size_t *n, bool *cut)
{
        *out = NULL;
        *n = 0;
        if (cut)
                *cut = false;
        if (!lim || lim->max_files == 0 || lim->max_entries == 0)
                return -EINVAL;
        struct finder w = { .lim = lim, .v = xcalloc(lim->max_files, sizeof *w.v) };
        static const struct tree_ops ops = { .pre = find_pre };
        int r = tree_walk(root_fd, &ops, &w);
        if (r < 0 && w.seen == 0) { /* the root itself could not be read */
                free(w.v);
                return r;
        }
        /* A folder the walk could not open or climb back to: what was found stands. */
        if (r != 0)
                w.cut = true;
        if (cut)
                *cut = w.cut;
        *out = w.v;
        *n = w.n;
        return 0;
}

void newest_files_free(struct newest_file *v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i].path);
        free(v);
}
