/* The worktree walked before the session (what may stay) and after it
 * (gitguard/repo_guard.h, step 2), and the setuid sweep. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/macro.h"
#include "gitguard/gitdata.h"
#include "gitguard/guard_internal.h"
#include "gitguard/repo_guard.h"

int guard_cmp_seen(const void *a, const void *b)
{
        return strcmp(((const struct guard_seen *)a)->path, ((const struct guard_seen *)b)->path);
}

/* The worktree before the session: its links, FIFOs, sockets and devices,
 * and the `.git` files below its top (a submodule's, a linked worktree's). */
static int cmp_dir(const void *a, const void *b)
{
        const struct guard_dir *x = a, *y = b;
        if (x->dev != y->dev)
                return x->dev < y->dev ? -1 : 1;
        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

void guard_sort_dirs(struct repo_guard *g) { tb_qsort(g->dirs, g->n_dirs, sizeof *g->dirs, cmp_dir); }

/* The folder (dev, ino) as noted before the session, when its change time
 * is still `ctime` (the session made, removed or renamed nothing directly
 * in it, nor changed its mode); else NULL. */
static const struct guard_dir *noted_unchanged(const struct repo_guard *g, dev_t dev, ino_t ino,
                                               const struct timespec *ctime)
{
        struct guard_dir k = { .dev = dev, .ino = ino };
        const struct guard_dir *was = g->n_dirs ? bsearch(&k, g->dirs, g->n_dirs, sizeof *g->dirs, cmp_dir) : NULL;
        return was && was->ctime.tv_sec == ctime->tv_sec && was->ctime.tv_nsec == ctime->tv_nsec ? was : NULL;
}

/* Did the session make, remove or rename nothing directly in `d`? */
static bool dir_unchanged(const struct repo_guard *g, const struct tree_dir *d)
{
        return noted_unchanged(g, d->dev, d->ino, &d->ctime) != NULL;
}

int guard_dirs_pre(struct tree_dir *d, void *ctx)
{
        struct repo_guard *g = ctx;
        bool leaf = true;
        for (size_t i = 0; i < d->n && leaf; i++)
                leaf = d->v[i].type != DT_DIR;
        GREEDY_REALLOC(g->dirs, g->cap_dirs, g->n_dirs + 1);
        g->dirs[g->n_dirs++] = (struct guard_dir){ .dev = d->dev, .ino = d->ino, .ctime = d->ctime, .leaf = leaf };
        return 0;
}

bool guard_nlink_exact(int fd)
{
        struct statfs fs;
        if (fstatfs(fd, &fs) < 0)
                return false;
        switch ((unsigned long)fs.f_type) {
        case TMPFS_MAGIC:
        case EXT4_SUPER_MAGIC: /* ext2 and ext3 too */
        case XFS_SUPER_MAGIC:
                return true;
        default:
                return false;
        }
}

/* A loose objects' folder's name: two lowercase hex digits. */
static bool xx_name(const char *name)
{
        return strlen(name) == 2 && strspn(name, "0123456789abcdef") == 2;
}

/* The objects/XX/ folders of `d` (an objects/ folder) that hold no folder
 * (their link count says so: 2), noted by their identity alone and not
 * entered: most of a git folder with history (256 of them on a clone of
 * trialbox's own repository), whose listing, before the session, was most
 * of the walk the session waited for. Unchanged after the session (the
 * same change time), such a folder holds the same entries and no folder,
 * as it did when trialbox saw it: the rebuild and the sweep leave it as
 * the host left it, without looking into it. One the session changed is
 * checked entry by entry. */
static void note_objects_folders(struct repo_guard *g, struct tree_dir *d)
{
        for (size_t i = 0; i < d->n; i++) {
                struct tree_entry *e = &d->v[i];
                struct stat st;
                if (e->type != DT_DIR || !xx_name(e->name) || fstatat(d->fd, e->name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISDIR(st.st_mode) || st.st_nlink != 2)
                        continue; /* walked as any other folder */
                GREEDY_REALLOC(g->dirs, g->cap_dirs, g->n_dirs + 1);
                g->dirs[g->n_dirs++] = (struct guard_dir){
                        .dev = st.st_dev, .ino = st.st_ino, .ctime = st.st_ctim, .leaf = true, .objects = true
                };
                e->skip = true;
        }
}

int guard_gitdirs_pre(struct tree_dir *d, void *ctx)
{
        struct repo_guard *g = ctx;
        guard_dirs_pre(d, g);
        struct guard_dir *noted = &g->dirs[g->n_dirs - 1];
        if (d->depth == 0)
                return 0;
        _cleanup_free_ char *path = tree_dir_path(d, NULL, 0);
        const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
        if (g->git_nlink_exact && strcmp(name, "objects") == 0) {
                note_objects_folders(g, d);
                return 0;
        }
        if (!noted->leaf || !xx_name(name))
                return 0;
        /* Entered (its file system's link counts say nothing, or it held a
         * folder once): skipped after the session only when it held
         * nothing but loose objects' files. */
        bool objects = true;
        for (size_t i = 0; i < d->n && objects; i++)
                objects = d->v[i].type == DT_REG && gitdata_object_name_valid(name, d->v[i].name, false);
        noted->objects = objects;
        return 0;
}

bool guard_unchanged_leaf(const struct repo_guard *g, int dirfd, const char *name, enum guard_leaf kind)
{
        struct stat st;
        if (!g->n_dirs || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                return false;
        const struct guard_dir *was = noted_unchanged(g, st.st_dev, st.st_ino, &st.st_ctim);
        return was && was->leaf && (kind != GUARD_LEAF_OBJECTS || was->objects) &&
               (kind != GUARD_LEAF_PLAIN || was->plain);
}

int guard_seen_pre(struct tree_dir *d, void *ctx)
{
        struct repo_guard *g = ctx;
        guard_dirs_pre(d, g);
        /* The walk after the session looks, in a folder whose entries the
         * session left as they were, only at a .git in it and at a git
         * directory's shape (HEAD with commondir, or with objects and
         * refs): a leaf with neither name gives it nothing. */
        struct guard_dir *noted = &g->dirs[g->n_dirs - 1];
        noted->plain = noted->leaf;
        for (size_t i = 0; i < d->n && noted->plain; i++)
                noted->plain = strcmp(d->v[i].name, ".git") != 0 && strcmp(d->v[i].name, "HEAD") != 0;
        for (size_t i = 0; i < d->n; i++) {
                struct tree_entry *e = &d->v[i];
                bool dotgit = strcmp(e->name, ".git") == 0;
                if (dotgit && d->depth == 0) {
                        e->skip = true;
                        continue;
                }
                if (e->type == DT_DIR || (e->type == DT_REG && !dotgit))
                        continue;
                GREEDY_REALLOC(g->seen, g->cap_seen, g->n_seen + 1);
                struct guard_seen *s = &g->seen[g->n_seen++];
                *s = (struct guard_seen){ .path = tree_dir_path(d, e->name, 0), .type = e->type };
                if (e->type == DT_LNK) {
                        char buf[PATH_MAX];
                        ssize_t k = readlinkat(d->fd, e->name, buf, sizeof buf - 1);
                        if (k >= 0) {
                                s->data = strndup(buf, (size_t)k);
                                s->len = (size_t)k;
                        }
                } else if (e->type == DT_REG) {
                        s->data = guard_read_at(d->fd, e->name, 4096, &s->len, NULL);
                }
        }
        return 0;
}

/* ---- after the session: the worktree ---- */

struct scan {
        struct repo_guard *g;
        uid_t uid;
        size_t *bare; /* the depths of folders found in a git directory's shape, to move once walked */
        size_t n_bare, cap_bare;
};

static const struct guard_seen *seen_find(const struct repo_guard *g, const char *path)
{
        struct guard_seen k = { .path = (char *)path };
        return g->n_seen ? bsearch(&k, g->seen, g->n_seen, sizeof *g->seen, guard_cmp_seen) : NULL;
}

static bool has_name(const struct tree_dir *d, const char *name)
{
        for (size_t i = 0; i < d->n; i++)
                if (strcmp(d->v[i].name, name) == 0)
                        return true;
        return false;
}

/* A `.git` below the top that may stay: a submodule's or linked worktree's
 * `.git` file, the same bytes as before the session. */
static bool dotgit_kept(struct repo_guard *g, const struct tree_dir *d, const struct tree_entry *e, const char *path)
{
        const struct guard_seen *s = seen_find(g, path);
        if (!s || s->type != DT_REG || e->type != DT_REG || !s->data)
                return false;
        size_t len = 0;
        _cleanup_free_ char *now = guard_read_at(d->fd, e->name, 4096, &len, NULL);
        return now && len == s->len && memcmp(now, s->data, len) == 0;
}

static void note_special(struct repo_guard *g, int dirfd, const struct tree_entry *e, char *path)
{
        char target[PATH_MAX] = "";
        if (e->type == DT_LNK) {
                ssize_t k = readlinkat(dirfd, e->name, target, sizeof target - 1);
                target[k > 0 ? k : 0] = '\0';
        }
        const struct guard_seen *s = seen_find(g, path);
        if (s && s->type == e->type && (e->type != DT_LNK || (s->data && strcmp(s->data, target) == 0))) {
                free(path);
                return;
        }
        if (g->total_special++ >= GUARD_KEEP_MAX) {
                free(path);
                return;
        }
        GREEDY_REALLOC(g->special, g->cap_special, g->n_special + 1);
        g->special[g->n_special++] = (struct guard_seen){ .path = path, .type = e->type,
                                                          .data = e->type == DT_LNK ? guard_shown(target) : NULL };
}

/* Clear setuid and setgid of the regular file `name` in `dirfd`. */
static int clear_setuid(struct repo_guard *g, int dirfd, const char *name, uid_t uid, const struct tree_dir *d,
                        const char *shown_prefix)
{
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
            !(st.st_mode & (S_ISUID | S_ISGID)))
                return 0;
        /* Never a file that is also elsewhere and not the session's (a link to a system program). */
        if (st.st_uid != uid && st.st_nlink != 1)
                return 0;
        _cleanup_free_ char *rel = tree_dir_path(d, name, 0);
        _cleanup_free_ char *path = xasprintf("%s%s", shown_prefix, rel);
        if (fchmodat(dirfd, name, st.st_mode & 0777 & ~(mode_t)(S_ISUID | S_ISGID), 0) < 0)
                return guard_note_failure(g, -errno, "cannot clear the setuid bit of '%s'", path);
        guard_note_setuid(g, path);
        return 0;
}

static int guard_scan_pre(struct tree_dir *d, void *ctx)
{
        struct scan *s = ctx;
        struct repo_guard *g = s->g;
        /* A folder git would take for a git directory (setup.c's
         * is_git_directory: HEAD, and objects/ with refs/ or a commondir). */
        bool bare = has_name(d, "HEAD") && (has_name(d, "commondir") || (has_name(d, "objects") && has_name(d, "refs")));
        if (bare && d->depth > 0) {
                for (size_t i = 0; i < d->n; i++)
                        d->v[i].skip = true;
                GREEDY_REALLOC(s->bare, s->cap_bare, s->n_bare + 1);
                s->bare[s->n_bare++] = d->depth;
                return 0;
        }
        /* A folder whose entries the session left as they were holds no new
         * link or FIFO, and no file of the session's with a setuid bit (the
         * sandbox's filter refuses the bits on what exists): only its .git
         * entries are looked at again. Its change time says: making,
         * removing or renaming an entry, or forging its mtime, changes it. */
        bool same = dir_unchanged(g, d);
        for (size_t i = 0; i < d->n; i++) {
                struct tree_entry *e = &d->v[i];
                int r = 0;
                /* A leaf the session did not change that held nothing for
                 * this walk: not entered (one fstatat instead of opening
                 * and listing it; most of a big worktree). */
                if (e->type == DT_DIR && strcmp(e->name, ".git") != 0 &&
                    guard_unchanged_leaf(g, d->fd, e->name, GUARD_LEAF_PLAIN)) {
                        e->skip = true;
                        continue;
                }
                if (same && strcmp(e->name, ".git") != 0 && !bare)
                        continue;
                if (d->depth == 0 && strcmp(e->name, ".git") == 0) {
                        e->skip = true; /* the repository's own: rebuilt above */
                        continue;
                }
                if (bare && (strcmp(e->name, "HEAD") == 0 || strcmp(e->name, "commondir") == 0)) {
                        e->skip = true;
                        r = guard_move_out(g, d->fd, e->name, e->name, "makes the repository's top look like a git directory");
                } else if (strcmp(e->name, ".git") == 0) {
                        _cleanup_free_ char *path = tree_dir_path(d, e->name, 0);
                        e->skip = true;
                        if (!dotgit_kept(g, d, e, path))
                                r = guard_move_out(g, d->fd, e->name, path, "a .git below the repository's top");
                } else if (e->type == DT_REG) {
                        r = clear_setuid(g, d->fd, e->name, s->uid, d, "");
                } else if (e->type != DT_DIR) {
                        note_special(g, d->fd, e, tree_dir_path(d, e->name, 0));
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static int guard_scan_post(struct tree_dir *d, const char *name, void *ctx)
{
        struct scan *s = ctx;
        if (s->n_bare == 0 || s->bare[s->n_bare - 1] != d->depth + 1)
                return 0;
        s->n_bare--;
        _cleanup_free_ char *path = tree_dir_path(d, name, 0);
        return guard_move_out(s->g, d->fd, name, path, "a folder in a git directory's shape (HEAD, objects/, refs/)");
}

/* ---- after the session ---- */

struct sweep {
        struct repo_guard *g;
        uid_t uid;
        const char *shown;
        bool skip_unchanged; /* the folders noted before the session (g->dirs) that did not change */
};

static int sweep_pre(struct tree_dir *d, void *ctx)
{
        struct sweep *s = ctx;
        if (s->skip_unchanged) {
                /* A folder unchanged that held no folder has nothing for the
                 * sweep (below): not entered at all, one fstatat instead of
                 * opening and listing it (most of a git folder: objects/xx/). */
                for (size_t i = 0; i < d->n; i++)
                        if (d->v[i].type == DT_DIR && guard_unchanged_leaf(s->g, d->fd, d->v[i].name, GUARD_LEAF_ANY))
                                d->v[i].skip = true;
                if (dir_unchanged(s->g, d))
                        return 0;
        }
        for (size_t i = 0; i < d->n; i++) {
                if (d->v[i].type != DT_REG)
                        continue;
                int r = clear_setuid(s->g, d->fd, d->v[i].name, s->uid, d, s->shown);
                if (r < 0)
                        return r;
        }
        return 0;
}

int repo_guard_clear_setuid(struct repo_guard *g, int dirfd, const char *shown_prefix, uid_t session_uid)
{
        /* The git folder's folders were noted before the session; the home's were not. */
        struct stat st;
        bool git = g->dotgit == 'd' && fstat(dirfd, &st) == 0 && st.st_dev == g->git_dev && st.st_ino == g->git_ino;
        struct sweep s = { .g = g, .uid = session_uid, .shown = shown_prefix, .skip_unchanged = git };
        const struct tree_ops ops = { .pre = sweep_pre, .flags = TREE_FIX_MODES };
        return tree_walk(dirfd, &ops, &s);
}


int guard_scan_worktree(struct repo_guard *g, uid_t session_uid)
{
        struct scan s = { .g = g, .uid = session_uid };
        const struct tree_ops ops = { .pre = guard_scan_pre, .post = guard_scan_post, .flags = TREE_FIX_MODES };
        int r = tree_walk(g->repo_fd, &ops, &s);
        free(s.bare);
        return r;
}
