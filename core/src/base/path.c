#define _GNU_SOURCE
#include "base/path.h"

#include <errno.h>
#include <limits.h>
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

char *find_on_path(const char *prog, const char *path_env)
{
        if (strchr(prog, '/')) {
                struct stat st;
                if (stat(prog, &st) < 0 || !S_ISREG(st.st_mode) || access(prog, X_OK) < 0)
                        return NULL;
                if (prog[0] == '/')
                        return xstrdup(prog);
                char cwd[PATH_MAX];
                return getcwd(cwd, sizeof cwd) ? xasprintf("%s/%s", cwd, prog) : NULL;
        }
        if (!path_env)
                return NULL;
        const char *p = path_env;
        while (*p) {
                const char *end = strchrnul(p, ':');
                size_t n = (size_t)(end - p);
                if (n > 0 && p[0] == '/') {
                        char *cand = xasprintf("%.*s/%s", (int)n, p, prog);
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
        return xasprintf("%.*s", (int)n, path);
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

char *path_memo_realpath(struct path_memo *memo, const char *path)
{
        if (!memo)
                return realpath(path, NULL);
        unsigned h = path_hash(path);
        for (size_t i = 0; i < memo->n; i++) {
                const struct path_memo_entry *e = &memo->v[i];
                if (e->hash != h || strcmp(e->path, path) != 0)
                        continue;
                if (!e->real)
                        errno = e->err;
                return e->real ? xstrdup(e->real) : NULL;
        }
        char *real = realpath(path, NULL);
        int err = errno;
        GREEDY_REALLOC(memo->v, memo->cap, memo->n + 1);
        memo->v[memo->n++] = (struct path_memo_entry){ xstrdup(path), real ? xstrdup(real) : NULL, h, err };
        errno = err;
        return real;
}

void path_memo_done(struct path_memo *memo)
{
        for (size_t i = 0; i < memo->n; i++) {
                free(memo->v[i].path);
                free(memo->v[i].real);
        }
        free(memo->v);
        *memo = (struct path_memo){ 0 };
}
