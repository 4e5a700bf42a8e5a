#define _GNU_SOURCE
#include "base/path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"

bool path_is_under(const char *path, const char *dir)
{
        size_t n = strlen(dir);
        if (n == 1 && dir[0] == '/')
                return path[0] == '/';
        return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

char *path_join_n(const char *a, size_t a_len, const char *b)
{
        size_t b_len = strlen(b);
        char *p = xmalloc(a_len + 1 + b_len + 1);
        memcpy(p, a, a_len);
        p[a_len] = '/';
        memcpy(p + a_len + 1, b, b_len + 1);
        return p;
}

char *path_join(const char *a, const char *b)
{
        return path_join_n(a, strlen(a), b);
}

/* Whether the PATH entry at `entry` (`n` bytes) is also one before it in
 * `path_env`: a folder already looked in (PATH often names one twice). */
static bool path_entry_seen(const char *path_env, const char *entry, size_t n)
{
        for (const char *p = path_env; p < entry;) {
                const char *end = strchrnul(p, ':');
                if ((size_t)(end - p) == n && memcmp(p, entry, n) == 0)
                        return true;
                p = *end ? end + 1 : end;
        }
        return false;
}

char *find_on_path(const char *prog, const char *path_env)
{
        if (strchr(prog, '/')) {
                struct stat st;
                if (stat(prog, &st) < 0 || !S_ISREG(st.st_mode) || access(prog, X_OK) < 0)
                        return NULL;
                if (prog[0] == '/')
                        return xstrdup(prog);
                char cwd[PATH_MAX];
                return getcwd(cwd, sizeof cwd) ? path_join(cwd, prog) : NULL;
        }
        if (!path_env)
                return NULL;
        const char *p = path_env;
        while (*p) {
                const char *end = strchrnul(p, ':');
                size_t n = (size_t)(end - p);
                if (n > 0 && p[0] == '/' && !path_entry_seen(path_env, p, n)) {
                        char *cand = path_join_n(p, n, prog);
                        struct stat st;
                        if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
                                return cand;
                        free(cand);
                }
                p = *end ? end + 1 : end;
        }
        return NULL;
}

char *path_dirname(const char *path)
{
        size_t n = strlen(path);
        while (n > 1 && path[n - 1] == '/') /* "a/b/" is "a/b" */
                n--;
        while (n > 0 && path[n - 1] != '/')
                n--;
        if (n == 0) /* a bare name: the working folder's */
                return xstrdup(".");
        while (n > 1 && path[n - 1] == '/')
                n--;
        return xstrndup(path, n);
}

int mkdir_p(const char *path, mode_t mode)
{
        /* Mostly only the last folder is missing: try it first. */
        if (mkdir(path, mode) == 0 || errno == EEXIST)
                return 0;
        if (errno != ENOENT)
                return -errno;
        char *copy = xstrdup(path);
        int r = 0;
        for (char *p = copy + 1; *p && r == 0; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(copy, mode) < 0 && errno != EEXIST)
                        r = -errno;
                *p = '/';
        }
        if (r == 0 && mkdir(copy, mode) < 0 && errno != EEXIST)
                r = -errno;
        free(copy);
        return r;
}

char *path_clean(const char *base, const char *p)
{
        _cleanup_free_ char *joined = p[0] == '/' ? xstrdup(p) : xasprintf("%s/%s", base, p);
        char *out = xmalloc(strlen(joined) + 2);
        size_t n = 0;
        for (char *save = NULL, *c = strtok_r(joined, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                if (strcmp(c, ".") == 0)
                        continue;
                if (strcmp(c, "..") == 0) {
                        while (n > 0 && out[n - 1] != '/')
                                n--;
                        if (n > 0)
                                n--;
                        continue;
                }
                out[n++] = '/';
                size_t l = strlen(c);
                memcpy(out + n, c, l);
                n += l;
        }
        if (n == 0)
                out[n++] = '/';
        out[n] = '\0';
        return out;
}

struct path_memo_entry {
        char *path, *real; /* real NULL: realpath failed with `err` */
        unsigned hash;
        int err;
};

static unsigned path_hash(const char *s)
{
        unsigned h = 2166136261u; /* FNV-1a */
        for (; *s; s++)
                h = (h ^ (unsigned char)*s) * 16777619u;
        return h;
}

/* The entry of `v` for `path` through its index `slots`, or NULL. */
static const struct path_memo_entry *memo_find(const struct path_memo_entry *v, const unsigned *slots,
                                               size_t n_slots, const char *path, unsigned h)
{
        for (size_t i = h & (n_slots - 1); n_slots && slots[i]; i = (i + 1) & (n_slots - 1)) {
                const struct path_memo_entry *e = &v[slots[i] - 1];
                if (e->hash == h && strcmp(e->path, path) == 0)
                        return e;
        }
        return NULL;
}

static void slot_put(unsigned *slots, size_t n_slots, unsigned h, size_t index)
{
        size_t i = h & (n_slots - 1);
        while (slots[i])
                i = (i + 1) & (n_slots - 1);
        slots[i] = (unsigned)index + 1;
}

/* Append `e` to `v` (n of them, capacity cap) and index it, the index
 * grown to keep it at most half full. */
static void memo_add(struct path_memo_entry **v, size_t *n, size_t *cap, unsigned **slots, size_t *n_slots,
                     struct path_memo_entry e)
{
        GREEDY_REALLOC(*v, *cap, *n + 1);
        (*v)[*n] = e;
        if (2 * (*n + 1) >= *n_slots) {
                size_t grown = *n_slots ? 2 * *n_slots : 64;
                free(*slots);
                *slots = xcalloc(grown, sizeof **slots);
                *n_slots = grown;
                for (size_t k = 0; k < *n; k++)
                        slot_put(*slots, grown, (*v)[k].hash, k);
        }
        slot_put(*slots, *n_slots, e.hash, *n);
        (*n)++;
}

/* realpath(3)'s answer for `path` from an entry: a copy, or NULL with errno. */
static char *memo_answer(const struct path_memo_entry *e)
{
        if (!e->real)
                errno = e->err;
        return e->real ? xstrdup(e->real) : NULL;
}

#define MEMO_LINKS_MAX 40 /* as the kernel's and glibc's: more links than this is a loop */

static char *resolve(struct path_memo *memo, const char *path, int *links);

/* The real path of `real`/`name` (`real` resolved, `name` one component of
 * `name_len` bytes), each such pair asked of the file system once per
 * memo: readlink(2) tells a link (followed) from a file or folder (EINVAL)
 * from nothing. The memo's own string (it lives as long as the memo), or
 * NULL with errno. Nothing is allocated when the memo knows the pair. */
static const char *resolve_part(struct path_memo *memo, const char *real, const char *name, size_t name_len,
                                int *links)
{
        char key[PATH_MAX];
        size_t real_len = strcmp(real, "/") == 0 ? 0 : strlen(real);
        if (real_len + 1 + name_len >= sizeof key) {
                errno = ENAMETOOLONG;
                return NULL;
        }
        memcpy(key, real, real_len);
        key[real_len] = '/';
        memcpy(key + real_len + 1, name, name_len);
        key[real_len + 1 + name_len] = '\0';
        unsigned h = path_hash(key);
        const struct path_memo_entry *e = memo_find(memo->parts, memo->slots_parts, memo->n_slots_parts, key, h);
        if (e) {
                if (!e->real)
                        errno = e->err;
                return e->real;
        }
        char target[PATH_MAX];
        char *out = NULL;
        int err = 0;
        /* In a listed folder, a name not there and not a link is not at all. */
        ssize_t len;
        if (memo->n_listed &&
            memo_find(memo->listed, memo->slots_listed, memo->n_slots_listed, real, path_hash(real)) &&
            !memo_find(memo->linked, memo->slots_linked, memo->n_slots_linked, key, h)) {
                len = -1;
                errno = ENOENT;
        } else {
                len = readlink(key, target, sizeof target - 1);
        }
        if (len >= 0 && ++*links > MEMO_LINKS_MAX) {
                err = ELOOP;
        } else if (len >= 0) {
                target[len] = '\0';
                _cleanup_free_ char *next = target[0] == '/' ? xstrdup(target) : path_join(real, target);
                out = resolve(memo, next, links);
                err = out ? 0 : errno;
        } else if (errno == EINVAL) {
                out = xstrdup(key);
        } else {
                err = errno;
        }
        memo_add(&memo->parts, &memo->n_parts, &memo->cap_parts, &memo->slots_parts, &memo->n_slots_parts,
                 (struct path_memo_entry){ xstrdup(key), out, h, err });
        errno = err;
        return out;
}

/* `real` is a folder: 0, or -1 with errno (ENOTDIR). */
static int is_folder(const char *real)
{
        struct stat st;
        if (stat(real, &st) < 0)
                return -1;
        if (!S_ISDIR(st.st_mode)) {
                errno = ENOTDIR;
                return -1;
        }
        return 0;
}

/* The absolute `path` resolved component by component, as realpath(3)
 * does: "." and ".." (and a trailing '/') need a folder before them, ".."
 * goes up from what the links before it resolved to. malloc'd, or NULL
 * with errno. */
static char *resolve(struct path_memo *memo, const char *path, int *links)
{
        char real[PATH_MAX]; /* a link costs a level of 12 KiB of stack, 40 at most */
        real[0] = '/';       /* not "= "/"": that would clear all of it, each call */
        real[1] = '\0';
        bool folder = true; /* `real` is known to be a folder */
        for (const char *p = path;;) {
                while (*p == '/')
                        p++;
                size_t l = strcspn(p, "/");
                bool dot = (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.');
                bool trailing = l == 0 && p > path + 1 && p[-1] == '/';
                if ((dot || trailing) && !folder) {
                        if (is_folder(real) < 0)
                                return NULL;
                        folder = true;
                }
                if (l == 0)
                        break;
                if (l == 2 && dot) {
                        char *slash = strrchr(real, '/');
                        slash[slash == real ? 1 : 0] = '\0';
                } else if (!dot) {
                        const char *next = resolve_part(memo, real, p, l, links);
                        if (!next)
                                return NULL;
                        size_t n = strlen(next);
                        if (n >= sizeof real) {
                                errno = ENAMETOOLONG;
                                return NULL;
                        }
                        memcpy(real, next, n + 1);
                        folder = false;
                }
                p += l;
        }
        return xstrdup(real);
}

char *path_memo_realpath(struct path_memo *memo, const char *path)
{
        if (!memo)
                return realpath(path, NULL);
        unsigned h = path_hash(path);
        const struct path_memo_entry *e = memo_find(memo->v, memo->slots, memo->n_slots, path, h);
        if (e)
                return memo_answer(e);
        /* Absolute paths through the memo of their components (a home and
         * its folders are shared by most paths asked); others as asked. */
        int links = 0;
        char *real = path[0] == '/' ? resolve(memo, path, &links) : realpath(path, NULL);
        int err = real ? 0 : errno;
        memo_add(&memo->v, &memo->n, &memo->cap, &memo->slots, &memo->n_slots,
                 (struct path_memo_entry){ xstrdup(path), real ? xstrdup(real) : NULL, h, err });
        errno = err;
        return real;
}

void path_memo_list(struct path_memo *memo, const char *folder)
{
        _cleanup_free_ char *real = path_memo_realpath(memo, folder);
        if (!real || memo_find(memo->listed, memo->slots_listed, memo->n_slots_listed, real, path_hash(real)))
                return;
        _cleanup_close_ int fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        /* Listed but not searchable, its names would not resolve at all. */
        if (fd < 0 || faccessat(fd, ".", X_OK, AT_EACCESS) < 0)
                return;
        const size_t real_len = strcmp(real, "/") == 0 ? 0 : strlen(real);
        size_t count = 0;
        /* getdents64(2) itself, into this buffer: no DIR to allocate. */
        _Alignas(struct dirent64) char buf[8192];
        for (;;) {
                ssize_t got = getdents64(fd, buf, sizeof buf);
                if (got < 0)
                        return;
                if (got == 0)
                        break;
                for (ssize_t at = 0; at < got;) {
                        const struct dirent64 *e = (const struct dirent64 *)(buf + at);
                        at += e->d_reclen;
                        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                                continue;
                        if (++count > PATH_MEMO_LIST_MAX)
                                return;
                        /* The key as resolve_part makes it: the folder, '/', the name. */
                        char key[PATH_MAX];
                        const size_t name_len = strlen(e->d_name);
                        if (real_len + 1 + name_len >= sizeof key)
                                continue; /* asked, it fails with ENAMETOOLONG before any lookup */
                        memcpy(key, real, real_len + 1); /* its NUL, or for "/" its '/', overwritten */
                        key[real_len] = '/';
                        memcpy(key + real_len + 1, e->d_name, name_len + 1);
                        unsigned h = path_hash(key);
                        if (memo_find(memo->parts, memo->slots_parts, memo->n_slots_parts, key, h) ||
                            memo_find(memo->linked, memo->slots_linked, memo->n_slots_linked, key, h))
                                continue;
                        if (e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) /* read when asked */
                                memo_add(&memo->linked, &memo->n_linked, &memo->cap_linked, &memo->slots_linked,
                                         &memo->n_slots_linked, (struct path_memo_entry){ xstrdup(key), NULL, h, 0 });
                        else /* what readlink(2) says of it: EINVAL, itself */
                                memo_add(&memo->parts, &memo->n_parts, &memo->cap_parts, &memo->slots_parts,
                                         &memo->n_slots_parts,
                                         (struct path_memo_entry){ xstrdup(key), xstrdup(key), h, 0 });
                }
        }
        memo_add(&memo->listed, &memo->n_listed, &memo->cap_listed, &memo->slots_listed, &memo->n_slots_listed,
                 (struct path_memo_entry){ real, NULL, path_hash(real), 0 });
        real = NULL;
}

void path_memo_done(struct path_memo *memo)
{
        for (size_t i = 0; i < memo->n; i++) {
                free(memo->v[i].path);
                free(memo->v[i].real);
        }
        for (size_t i = 0; i < memo->n_parts; i++) {
                free(memo->parts[i].path);
                free(memo->parts[i].real);
        }
        for (size_t i = 0; i < memo->n_listed; i++)
                free(memo->listed[i].path);
        for (size_t i = 0; i < memo->n_linked; i++)
                free(memo->linked[i].path);
        free(memo->v);
        free(memo->parts);
        free(memo->listed);
        free(memo->linked);
        free(memo->slots);
        free(memo->slots_parts);
        free(memo->slots_listed);
        free(memo->slots_linked);
        *memo = (struct path_memo){ 0 };
}
