/* The git directory: the snapshot of its control entries before the
 * session, and its rebuild after it (gitguard/repo_guard.h, step 1). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitguard/guard_internal.h"
#include "gitguard/repo_guard.h"
#include "gitguard/gitdata.h"

/* ---- before the session ---- */

int guard_snap_gitdir(struct repo_guard *g, int fd, const char *key, const char *rel, int depth,
                       struct tb_error *err);

/* What modules/ holds below `key` (a git directory's "modules/"): each
 * submodule's git directory (it has a HEAD), and the folders of names with a
 * '/' on the way to them; anything else as a control entry. */
static int snap_modules(struct repo_guard *g, int fd, const char *key, const char *rel, int depth,
                        struct tb_error *err)
{
        if (depth > MODULES_MAX_DEPTH)
                return tb_fail(err, -ELOOP, "'%s/%s' nests submodules more than %d deep; trialbox cannot guard it",
                               g->common, rel, MODULES_MAX_DEPTH);
        _cleanup_strv_ struct strv names = { 0 };
        int r = guard_list_names(fd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                _cleanup_free_ char *k = xasprintf("%s%s", key, names.v[i]);
                _cleanup_free_ char *sub = xasprintf("%s%s", rel, names.v[i]);
                _cleanup_close_ int cfd = guard_open_dir_at(fd, names.v[i]);
                if (cfd < 0) {
                        r = snapshot_add(&g->snap, fd, names.v[i], k);
                        continue;
                }
                _cleanup_free_ char *k2 = xasprintf("%s/", k);
                _cleanup_free_ char *sub2 = xasprintf("%s/", sub);
                if (guard_exists_at(cfd, "HEAD")) {
                        strv_add(&g->modules, sub);
                        r = guard_snap_gitdir(g, cfd, k2, sub2, depth + 1, err);
                } else {
                        r = snap_modules(g, cfd, k2, sub2, depth + 1, err);
                }
        }
        return r;
}

/* A linked worktree's own git directory (the Trial's): its control entries. */
static int snap_private(struct repo_guard *g, int fd, const char *key)
{
        _cleanup_strv_ struct strv names = { 0 };
        int r = guard_list_names(fd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                enum gitdata_kind k = gitdata_kind(names.v[i], true);
                if (k == GITDATA_CONTROL || k == GITDATA_HEAD) {
                        _cleanup_free_ char *kk = xasprintf("%s%s", key, names.v[i]);
                        r = snapshot_add(&g->snap, fd, names.v[i], kk);
                }
        }
        return r;
}

static int snap_entry(struct repo_guard *g, int fd, const char *name, const char *key, const char *rel, int depth,
                      struct tb_error *err)
{
        _cleanup_free_ char *k = xasprintf("%s%s", key, name);
        switch (gitdata_kind(name, false)) {
        case GITDATA_CONTROL:
        case GITDATA_HEAD:
        case GITDATA_PACKED_REFS: /* data, but put back whole when the session's does not validate */
                return snapshot_add(&g->snap, fd, name, k);
        case GITDATA_OBJECTS: {
                /* The files of objects/info/ that name other object stores. */
                _cleanup_close_ int ifd = openat(fd, "objects/info", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                static const char *const alt[] = { "alternates", "http-alternates" };
                int r = 0;
                for (size_t i = 0; ifd >= 0 && r == 0 && i < TB_ARRAY_SIZE(alt); i++) {
                        _cleanup_free_ char *ak = xasprintf("%sobjects/info/%s", key, alt[i]);
                        r = snapshot_add(&g->snap, ifd, alt[i], ak);
                }
                return r;
        }
        case GITDATA_MODULES: {
                _cleanup_close_ int mfd = guard_open_dir_at(fd, name);
                if (mfd < 0)
                        return snapshot_add(&g->snap, fd, name, k);
                _cleanup_free_ char *mk = xasprintf("%s/", k);
                _cleanup_free_ char *mrel = xasprintf("%smodules/", rel);
                return snap_modules(g, mfd, mk, mrel, depth, err);
        }
        case GITDATA_WORKTREES: {
                _cleanup_close_ int wfd = guard_open_dir_at(fd, name);
                if (wfd < 0)
                        return snapshot_add(&g->snap, fd, name, k);
                _cleanup_strv_ struct strv names = { 0 };
                int r = guard_list_names(wfd, &names);
                for (size_t i = 0; r == 0 && i < names.n; i++) {
                        _cleanup_free_ char *wk = xasprintf("%s/%s", k, names.v[i]);
                        bool own = depth == 0 && g->worktree && strcmp(names.v[i], g->worktree) == 0;
                        _cleanup_close_ int pfd = own ? guard_open_dir_at(wfd, names.v[i]) : -1;
                        if (pfd >= 0) {
                                _cleanup_free_ char *pk = xasprintf("%s/", wk);
                                r = snap_private(g, pfd, pk);
                        } else {
                                r = snapshot_add(&g->snap, wfd, names.v[i], wk);
                        }
                }
                return r;
        }
        default:
                return 0;
        }
}

/* One git directory (the common one, a submodule's) open at `fd`: `key`
 * prefixes its snapshot keys, `rel` is its path from the common one. */
int guard_snap_gitdir(struct repo_guard *g, int fd, const char *key, const char *rel, int depth,
                       struct tb_error *err)
{
        _cleanup_strv_ struct strv names = { 0 };
        int r = guard_list_names(fd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++)
                r = snap_entry(g, fd, names.v[i], key, rel, depth, err);
        if (r == -E2BIG)
                return tb_fail(err, r, "the git directory '%s' holds more control files than trialbox can keep (%zu); "
                               "remove what git does not need there",
                               g->common, (size_t)SNAPSHOT_MAX_ITEMS);
        if (r < 0 && !err->msg[0])
                return tb_fail(err, r, "cannot keep the control files of the git directory '%s': %s", g->common,
                               strerror(-r));
        return r;
}

/* A path the host's own config names, made absolute: `~/` against the
 * home, a relative one against `base`. malloc'd, or NULL. */
/* ---- after the session: the git directory ---- */

/* The context of one git directory being rebuilt. */
struct gd {
        struct repo_guard *g;
        int fd;
        const char *key;   /* its snapshot keys' prefix ("git:", "git:modules/a/") */
        const char *shown; /* its path as the record shows it (".git/", "/x/.git/modules/a/") */
        const char *rel;   /* its path from the common git directory ("", "modules/a/") */
        bool worktree;     /* a linked worktree's own */
        int depth;
};

static char *gd_path(const struct gd *d, const char *name) { return xasprintf("%s%s", d->shown, name); }

/* A control entry: kept when the same as before, else the session's moved
 * out and the snapshot's put back. */
static int fix_control(struct repo_guard *g, int dirfd, const char *name, const char *key, const char *path)
{
        if (snapshot_same(&g->snap, dirfd, name, key))
                return 0;
        bool existed = snapshot_existed(&g->snap, key);
        if (guard_exists_at(dirfd, name)) {
                int r = guard_move_out(g, dirfd, name, path, existed ? "a control entry the session changed" :
                                                                 "a control entry the session made");
                if (r < 0)
                        return r;
        }
        if (!existed)
                return 0;
        int r = snapshot_restore(&g->snap, dirfd, name, key);
        if (r < 0)
                return guard_note_failure(g, r, "cannot put '%s' back as it was before the session", path);
        guard_note_restored(g, path);
        return 0;
}

#define WHOLE SIZE_MAX /* fix_data_file's `need`: every byte, up to `max` */

/* A data file: kept when a regular file of at most `max` bytes whose
 * content `valid` accepts (NULL: any), reading only its first `need` bytes
 * when `valid` looks at no more (0: none, but it must open for reading);
 * else moved out, and put back from the snapshot when `key` was kept. */
static int fix_data_file(const struct gd *d, const char *name, size_t max, size_t need,
                         bool (*valid)(const char *, size_t), const char *key)
{
        struct stat st;
        if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return 0;
        const char *why = NULL;
        if (!S_ISREG(st.st_mode)) {
                why = "data that is not a regular file";
        } else if ((size_t)st.st_size > max) {
                why = "data larger than git writes";
        } else if (valid) {
                size_t len = 0;
                _cleanup_free_ char *text = NULL;
                if (need == WHOLE)
                        text = guard_read_at(d->fd, name, max, &len, NULL);
                else /* on an error `text` stays NULL */
                        (void)read_full_file_at(d->fd, name, need,
                                                READ_NOFOLLOW | READ_REGULAR | READ_NONBLOCK | READ_PREFIX, &text, &len,
                                                NULL);
                if (!text || !valid(text, len))
                        why = "data git would not read as such";
        }
        if (!why)
                return 0;
        _cleanup_free_ char *path = gd_path(d, name);
        int r = guard_move_out(d->g, d->fd, name, path, why);
        if (r == 0 && key && snapshot_existed(&d->g->snap, key)) {
                r = snapshot_restore(&d->g->snap, d->fd, name, key);
                if (r < 0)
                        return guard_note_failure(d->g, r, "cannot put '%s' back as it was before the session", path);
                guard_note_restored(d->g, path);
        }
        return r;
}

#define INDEX_HEAD 12 /* "DIRC", version, entries: all index_valid reads */
static bool index_valid(const char *s, size_t len) { return len >= INDEX_HEAD && memcmp(s, "DIRC", 4) == 0; }

static bool any_bytes(const char *s, size_t len)
{
        (void)s;
        (void)len;
        return true;
}

/* A data folder walked: `ok` says whether an entry may stay. */
struct data_walk {
        const struct gd *d;
        const char *top; /* "refs", "objects", "logs" */
        bool (*ok)(struct data_walk *w, struct tree_dir *dir, struct tree_entry *e, const char *rel);
        int r;
};

static bool object_ok(struct data_walk *w, struct tree_dir *dir, struct tree_entry *e, const char *rel);

static int data_pre(struct tree_dir *dir, void *ctx)
{
        struct data_walk *w = ctx;
        for (size_t i = 0; i < dir->n; i++) {
                struct tree_entry *e = &dir->v[i];
                _cleanup_free_ char *rel = tree_dir_path(dir, e->name, 0);
                if (w->ok(w, dir, e, rel)) {
                        /* objects/XX/ as it was before the session, when it held
                         * loose objects' files only: the same entries, each of
                         * which this walk would keep. Not entered (one fstatat
                         * instead of opening and listing it). */
                        if (w->ok == object_ok && dir->depth == 0 && e->type == DT_DIR &&
                            guard_unchanged_leaf(w->d->g, dir->fd, e->name, GUARD_LEAF_OBJECTS))
                                e->skip = true;
                        continue;
                }
                e->skip = true;
                _cleanup_free_ char *path = xasprintf("%s%s/%s", w->d->shown, w->top, rel);
                int r = guard_move_out(w->d->g, dir->fd, e->name, path, "data git would not read as such");
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool ref_ok(struct data_walk *w, struct tree_dir *dir, struct tree_entry *e, const char *rel)
{
        (void)w;
        _cleanup_free_ char *name = xasprintf("refs/%s", rel);
        if (!gitdata_refname_valid(name))
                return false;
        if (e->type == DT_DIR)
                return true;
        if (e->type != DT_REG)
                return false;
        size_t len = 0;
        _cleanup_free_ char *v = guard_read_at(dir->fd, e->name, REF_MAX, &len, NULL);
        return v && gitdata_ref_value_valid(v, len);
}

static bool object_ok(struct data_walk *w, struct tree_dir *dir, struct tree_entry *e, const char *rel)
{
        bool is_dir = e->type == DT_DIR;
        if (!is_dir && e->type != DT_REG)
                return false;
        if (dir->depth == 0)
                return gitdata_object_name_valid(NULL, e->name, is_dir);
        _cleanup_free_ char *parent = strndup(rel, strlen(rel) - strlen(e->name) - 1);
        if (strcmp(parent, "info") == 0 && !is_dir &&
            (strcmp(e->name, "alternates") == 0 || strcmp(e->name, "http-alternates") == 0)) {
                /* Not data: other object stores. The control entry's own check. */
                _cleanup_free_ char *key = xasprintf("%sobjects/info/%s", w->d->key, e->name);
                _cleanup_free_ char *path = xasprintf("%sobjects/info/%s", w->d->shown, e->name);
                int r = fix_control(w->d->g, dir->fd, e->name, key, path);
                if (r < 0)
                        w->r = r;
                return true;
        }
        return gitdata_object_name_valid(parent, e->name, is_dir);
}

static bool log_ok(struct data_walk *w, struct tree_dir *dir, struct tree_entry *e, const char *rel)
{
        (void)w;
        (void)dir;
        (void)rel;
        return e->type == DT_DIR || e->type == DT_REG;
}

/* refs/, objects/ or logs/: a folder whose entries `ok` accepts; one that
 * is not a folder is moved out (and an empty one made for refs/ and
 * objects/, which git needs). */
static int fix_data_dir(const struct gd *d, const char *name,
                        bool (*ok)(struct data_walk *, struct tree_dir *, struct tree_entry *, const char *))
{
        _cleanup_free_ char *path = gd_path(d, name);
        int fd = guard_open_dir_at(d->fd, name);
        if (fd < 0) {
                if (!guard_exists_at(d->fd, name))
                        return 0;
                int r = guard_move_out(d->g, d->fd, name, path, "data that is not a folder");
                if (r < 0)
                        return r;
        } else {
                struct data_walk w = { .d = d, .top = name, .ok = ok };
                const struct tree_ops ops = { .pre = data_pre, .flags = TREE_FIX_MODES };
                int r = tree_walk(fd, &ops, &w);
                close(fd);
                if (r == 0)
                        r = w.r;
                return r < 0 ? guard_note_failure(d->g, r, "cannot check '%s'", path) : 0;
        }
        return 0;
}

/* What a git directory needs to be one, made when missing: refs/ and
 * objects/ (a full one), and whatever control entry the session removed. */
static int restore_missing(const struct gd *d)
{
        struct snapshot *s = &d->g->snap;
        size_t k = strlen(d->key);
        for (size_t i = 0; i < s->n; i++) {
                const struct snap_item *it = &s->v[i];
                if (it->absent || strncmp(it->key, d->key, k) != 0 || strchr(it->key + k, '/'))
                        continue;
                const char *name = it->key + k;
                if (guard_exists_at(d->fd, name))
                        continue;
                _cleanup_free_ char *key = xstrdup(it->key);
                _cleanup_free_ char *path = gd_path(d, name);
                int r = snapshot_restore(s, d->fd, name, key);
                if (r < 0)
                        return guard_note_failure(d->g, r, "cannot put '%s' back as it was before the session", path);
                guard_note_restored(d->g, path);
        }
        static const char *const needed[] = { "refs", "objects" };
        for (size_t i = 0; !d->worktree && i < TB_ARRAY_SIZE(needed); i++) {
                if (guard_exists_at(d->fd, needed[i]))
                        continue;
                _cleanup_free_ char *path = gd_path(d, needed[i]);
                if (mkdirat(d->fd, needed[i], 0755) < 0)
                        return guard_note_failure(d->g, -errno, "cannot make '%s'", path);
                guard_note_restored(d->g, path);
        }
        return 0;
}

static int fix_gitdir(const struct gd *d);

/* A linked worktree's own git directory (the Trial's). */
static int fix_private(const struct gd *d)
{
        _cleanup_strv_ struct strv names = { 0 };
        int r = guard_list_names(d->fd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                const char *n = names.v[i];
                _cleanup_free_ char *key = xasprintf("%s%s", d->key, n);
                _cleanup_free_ char *path = gd_path(d, n);
                switch (gitdata_kind(n, true)) {
                case GITDATA_HEAD:
                        r = fix_data_file(d, n, REF_MAX, WHOLE, gitdata_ref_value_valid, key);
                        break;
                case GITDATA_INDEX:
                        r = fix_data_file(d, n, SIZE_MAX, INDEX_HEAD, index_valid, NULL);
                        break;
                case GITDATA_PSEUDO_REF:
                        r = fix_data_file(d, n, TEXT_MAX, WHOLE, gitdata_pseudo_ref_valid, NULL);
                        break;
                case GITDATA_TEXT:
                        r = fix_data_file(d, n, TEXT_MAX, 0, any_bytes, NULL);
                        break;
                case GITDATA_LOGS:
                        r = fix_data_dir(d, n, log_ok);
                        break;
                default:
                        r = fix_control(d->g, d->fd, n, key, path);
                }
        }
        return r < 0 ? r : restore_missing(d);
}

/* modules/ (below `d`, at `fd`, `rel` its path from the common directory). */
static int fix_modules(const struct gd *d, int fd, const char *key, const char *shown_prefix, const char *rel,
                       int depth)
{
        struct repo_guard *g = d->g;
        _cleanup_strv_ struct strv names = { 0 };
        int r = guard_list_names(fd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                const char *n = names.v[i];
                _cleanup_free_ char *k = xasprintf("%s%s", key, n);
                _cleanup_free_ char *path = xasprintf("%s%s", shown_prefix, n);
                _cleanup_free_ char *sub = xasprintf("%s%s", rel, n);
                _cleanup_free_ char *sub_prefix = xasprintf("%s/", sub);
                bool module = strv_contains(&g->modules, sub), on_the_way = false;
                for (size_t j = 0; j < g->modules.n && !module; j++)
                        on_the_way = on_the_way || str_has_prefix(g->modules.v[j], sub_prefix);
                _cleanup_close_ int cfd = (module || on_the_way) ? guard_open_dir_at(fd, n) : -1;
                _cleanup_free_ char *k2 = xasprintf("%s/", k);
                _cleanup_free_ char *p2 = xasprintf("%s/", path);
                if (cfd >= 0 && module) {
                        struct gd sd = { .g = g, .fd = cfd, .key = k2, .shown = p2, .rel = sub_prefix,
                                         .depth = d->depth + 1 };
                        r = fix_gitdir(&sd);
                } else if (cfd >= 0 && depth < MODULES_MAX_DEPTH) {
                        r = fix_modules(d, cfd, k2, p2, sub_prefix, depth + 1);
                } else if (snapshot_has(&g->snap, k)) {
                        r = fix_control(g, fd, n, k, path);
                } else {
                        r = guard_move_out(g, fd, n, path,
                                     module || on_the_way ? "a submodule's git directory replaced by the session"
                                                          : "a git directory the session made under modules/");
                }
        }
        return r;
}

static int fix_worktrees(const struct gd *d, const char *name)
{
        struct repo_guard *g = d->g;
        _cleanup_free_ char *key = xasprintf("%s%s/", d->key, name);
        _cleanup_free_ char *path = gd_path(d, name);
        _cleanup_free_ char *prefix = xasprintf("%s/", path);
        _cleanup_close_ int wfd = guard_open_dir_at(d->fd, name);
        if (wfd < 0)
                return guard_move_out(g, d->fd, name, path, "worktrees/ that is not a folder");
        _cleanup_strv_ struct strv names = { 0 };
        int r = guard_list_names(wfd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                const char *n = names.v[i];
                _cleanup_free_ char *k = xasprintf("%s%s", key, n);
                _cleanup_free_ char *p = xasprintf("%s%s", prefix, n);
                bool own = d->depth == 0 && g->worktree && strcmp(n, g->worktree) == 0;
                _cleanup_close_ int pfd = own ? guard_open_dir_at(wfd, n) : -1;
                if (pfd >= 0) {
                        _cleanup_free_ char *k2 = xasprintf("%s/", k);
                        _cleanup_free_ char *p2 = xasprintf("%s/", p);
                        struct gd pd = { .g = g, .fd = pfd, .key = k2, .shown = p2, .worktree = true, .depth = 1 };
                        r = fix_private(&pd);
                } else {
                        r = fix_control(g, wfd, n, k, p);
                }
        }
        if (r == 0) {
                struct gd wd = { .g = g, .fd = wfd, .key = key, .shown = prefix, .worktree = true, .depth = 1 };
                r = restore_missing(&wd);
        }
        return r;
}

/* A full git directory (the common one, a submodule's). */
static int fix_gitdir(const struct gd *d)
{
        _cleanup_strv_ struct strv names = { 0 };
        int r = guard_list_names(d->fd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                const char *n = names.v[i];
                _cleanup_free_ char *key = xasprintf("%s%s", d->key, n);
                _cleanup_free_ char *path = gd_path(d, n);
                switch (gitdata_kind(n, false)) {
                case GITDATA_HEAD:
                        r = fix_data_file(d, n, REF_MAX, WHOLE, gitdata_ref_value_valid, key);
                        break;
                case GITDATA_PACKED_REFS:
                        r = fix_data_file(d, n, PACKED_REFS_MAX, WHOLE, gitdata_packed_refs_valid, key);
                        break;
                case GITDATA_INDEX:
                        r = strcmp(n, "index") == 0 ? fix_data_file(d, n, SIZE_MAX, INDEX_HEAD, index_valid, NULL)
                                               : fix_data_file(d, n, SIZE_MAX, 0, any_bytes, NULL);
                        break;
                case GITDATA_PSEUDO_REF:
                        r = fix_data_file(d, n, TEXT_MAX, WHOLE, gitdata_pseudo_ref_valid, NULL);
                        break;
                case GITDATA_TEXT:
                        r = fix_data_file(d, n, TEXT_MAX, 0, any_bytes, NULL);
                        break;
                case GITDATA_REFS:
                        r = fix_data_dir(d, n, ref_ok);
                        break;
                case GITDATA_OBJECTS:
                        r = fix_data_dir(d, n, object_ok);
                        break;
                case GITDATA_LOGS:
                        r = fix_data_dir(d, n, log_ok);
                        break;
                case GITDATA_MODULES: {
                        _cleanup_close_ int mfd = guard_open_dir_at(d->fd, n);
                        _cleanup_free_ char *mk = xasprintf("%s/", key);
                        _cleanup_free_ char *mp = xasprintf("%s/", path);
                        _cleanup_free_ char *mrel = xasprintf("%smodules/", d->rel);
                        if (mfd < 0)
                                r = snapshot_has(&d->g->snap, key) ? fix_control(d->g, d->fd, n, key, path)
                                                                   : guard_move_out(d->g, d->fd, n, path, "modules/ that is not a folder");
                        else
                                r = fix_modules(d, mfd, mk, mp, mrel, 0);
                        break;
                }
                case GITDATA_WORKTREES:
                        r = fix_worktrees(d, n);
                        break;
                default:
                        r = fix_control(d->g, d->fd, n, key, path);
                }
        }
        if (r == 0)
                r = restore_missing(d);
        /* objects/info/alternates the session removed. */
        static const char *const alt[] = { "alternates", "http-alternates" };
        for (size_t i = 0; r == 0 && i < TB_ARRAY_SIZE(alt); i++) {
                _cleanup_free_ char *key = xasprintf("%sobjects/info/%s", d->key, alt[i]);
                if (!snapshot_existed(&d->g->snap, key))
                        continue;
                if (mkdirat(d->fd, "objects/info", 0755) < 0 && errno != EEXIST)
                        return guard_note_failure(d->g, -errno, "cannot make '%sobjects/info'", d->shown);
                _cleanup_close_ int ifd = openat(d->fd, "objects/info", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                _cleanup_free_ char *path = xasprintf("%sobjects/info/%s", d->shown, alt[i]);
                r = ifd < 0 ? guard_note_failure(d->g, -errno, "cannot open '%sobjects/info'", d->shown)
                            : fix_control(d->g, ifd, alt[i], key, path);
        }
        return r;
}

/* The git folder the session left at `.git`: the very one kept before (by
 * its fd), moved back there when the session renamed it. An fd, or -1 when
 * it is gone (g->detail says why). */
static int find_gitdir(struct repo_guard *g)
{
        struct stat st;
        if (fstatat(g->repo_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
            st.st_dev == g->git_dev && st.st_ino == g->git_ino)
                return openat(g->repo_fd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        char self[64], where[PATH_MAX];
        snprintf(self, sizeof self, "/proc/self/fd/%d", g->common_fd);
        ssize_t n = readlink(self, where, sizeof where - 1);
        if (n < 0 || fstat(g->common_fd, &st) < 0 || st.st_nlink == 0) {
                guard_note_failure(g, -ENOENT, "the session removed the git folder '%s/.git'", g->repo);
                return -1;
        }
        where[n] = '\0';
        _cleanup_free_ char *inside = xasprintf("%s/", g->repo);
        if (!str_has_prefix(where, inside)) {
                guard_note_failure(g, -EXDEV, "the git folder of '%s' is now at '%s'", g->repo, where);
                return -1;
        }
        if (guard_exists_at(g->repo_fd, ".git") && guard_move_out(g, g->repo_fd, ".git", ".git", "the session's .git in place of the repository's") < 0)
                return -1;
        if (renameat(AT_FDCWD, where, g->repo_fd, ".git") < 0) {
                guard_note_failure(g, -errno, "cannot move the git folder back from '%s'", where);
                return -1;
        }
        _cleanup_free_ char *from = xasprintf("git folder moved back from %s", where + strlen(inside));
        guard_note_restored(g, from);
        return find_gitdir(g);
}

/* The top `.git` file (a linked worktree's, or one not bound): its bytes as before. */
static int fix_dotgit_file(struct repo_guard *g)
{
        return fix_control(g, g->repo_fd, ".git", "dotgit", ".git");
}

/* Fail closed: the whole `.git` to the quarantine, none left. */
void guard_quarantine_dotgit(struct repo_guard *g)
{
        char *to = NULL;
        if (!guard_exists_at(g->repo_fd, ".git")) {
                g->status = GUARD_QUARANTINED;
                return;
        }
        int r = quarantine_move(&g->q, g->repo_fd, ".git", &to);
        if (r < 0) {
                g->status = GUARD_FAILED;
                size_t k = strlen(g->detail);
                snprintf(g->detail + k, sizeof g->detail - k, "; and the .git could not be moved out: %s",
                         strerror(-r));
                return;
        }
        guard_note_move(g, ".git", to, "the whole git folder: a step of its rebuild could not be done");
        g->status = GUARD_QUARANTINED;
}

int guard_rebuild_git(struct repo_guard *g)
{
        if (g->dotgit == 'f')
                return fix_dotgit_file(g);
        if (g->dotgit != 'd') { /* none before: any .git now is the session's */
                if (guard_exists_at(g->repo_fd, ".git"))
                        return guard_move_out(g, g->repo_fd, ".git", ".git", "a .git the session made");
                return 0;
        }
        _cleanup_close_ int fd = find_gitdir(g);
        if (fd < 0)
                return -EIO;
        struct stat st;
        if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700 && fchmod(fd, (st.st_mode & 07777) | 0700) < 0)
                return guard_note_failure(g, -errno, "cannot give '%s/.git' its permissions back", g->repo);
        struct gd d = { .g = g, .fd = fd, .key = "git:", .shown = ".git/", .rel = "" };
        return fix_gitdir(&d);
}

int guard_rebuild_common(struct repo_guard *g)
{
        int r = fix_dotgit_file(g);
        if (r < 0 || !g->common)
                return r;
        _cleanup_free_ char *prefix = xasprintf("%s/", g->common);
        struct gd d = { .g = g, .fd = g->common_fd, .key = "git:", .shown = prefix, .rel = "" };
        return fix_gitdir(&d);
}
