#define _GNU_SOURCE
#include "base/util.h"


#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void tb_fail_set(struct tb_error *err, int code, const char *fmt, ...)
{
        if (err) {
                int saved = errno;
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(err->msg, sizeof err->msg, fmt, ap);
                va_end(ap);
                err->code = code;
                errno = saved;
        }
}

int tb_wrap(struct tb_error *err, const char *fmt, ...)
{
        _cleanup_free_ char *prefix = NULL, *whole = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&prefix, fmt, ap) < 0)
                prefix = NULL;
        va_end(ap);
        whole = xasprintf("%s: %s", prefix ? prefix : "", err->msg);
        size_t n = strlen(whole);
        if (n >= sizeof err->msg)
                n = sizeof err->msg - 1;
        memcpy(err->msg, whole, n);
        err->msg[n] = '\0';
        return err->code;
}

static void oom(void)
{
        static const char m[] = "trialbox: out of memory\n"; /* not the logger: it allocates */
        if (write(STDERR_FILENO, m, sizeof m - 1) < 0) {
        }
        abort();
}

void *xmalloc(size_t n)
{
        void *p = malloc(n ? n : 1);
        if (!p)
                oom();
        return p;
}

void *xcalloc(size_t n, size_t m)
{
        void *p = calloc(n ? n : 1, m ? m : 1);
        if (!p)
                oom();
        return p;
}

void *xrealloc(void *p, size_t n)
{
        p = realloc(p, n ? n : 1);
        if (!p)
                oom();
        return p;
}

char *xstrdup(const char *s)
{
        char *p = strdup(s);
        if (!p)
                oom();
        return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
        char *p;
        if (vasprintf(&p, fmt, ap) < 0)
                oom();
        return p;
}

char *xasprintf(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *p = xvasprintf(fmt, ap);
        va_end(ap);
        return p;
}

void *tb_greedy_realloc(void *p, size_t *cap, size_t need, size_t elem_size)
{
        size_t n = *cap ? *cap : 4;
        while (n < need) {
                if (n > SIZE_MAX / 2 / elem_size)
                        oom();
                n *= 2;
        }
        p = xrealloc(p, n * elem_size);
        *cap = n;
        return p;
}

void erase_and_free(void *p)
{
        if (!p)
                return;
        explicit_bzero(p, malloc_usable_size(p));
        free(p);
}

void strv_add_take(struct strv *s, char *x)
{
        GREEDY_REALLOC(s->v, s->cap, s->n + 2);
        s->v[s->n++] = x;
        s->v[s->n] = NULL;
}

void strv_add(struct strv *s, const char *x) { strv_add_take(s, xstrdup(x)); }

void strv_addf(struct strv *s, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *p = xvasprintf(fmt, ap);
        va_end(ap);
        strv_add_take(s, p);
}

bool strv_contains(const struct strv *s, const char *x)
{
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->v[i], x) == 0)
                        return true;
        return false;
}

void strv_done_erase(struct strv *s)
{
        for (size_t i = 0; i < s->n; i++) {
                erase_and_free(s->v[i]);
                s->v[i] = NULL;
        }
        strv_done(s);
}

void strv_done(struct strv *s)
{
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i]);
        free(s->v);
        s->v = NULL;
        s->n = s->cap = 0;
}

/* Length of the valid UTF-8 sequence at `p` (1 to 4), or 0; *cp gets the
 * code point. Strict: no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_seq(const unsigned char *p, unsigned int *cp)
{
        size_t need;
        unsigned int c, min;
        if (*p < 0x80) {
                *cp = *p;
                return 1;
        } else if ((*p & 0xe0) == 0xc0) {
                need = 1, c = *p & 0x1f, min = 0x80;
        } else if ((*p & 0xf0) == 0xe0) {
                need = 2, c = *p & 0x0f, min = 0x800;
        } else if ((*p & 0xf8) == 0xf0) {
                need = 3, c = *p & 0x07, min = 0x10000;
        } else {
                return 0;
        }
        for (size_t k = 1; k <= need; k++) {
                if ((p[k] & 0xc0) != 0x80) /* also stops at the terminator */
                        return 0;
                c = (c << 6) | (p[k] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        *cp = c;
        return need + 1;
}

static void strbuf_addn(struct strbuf *sb, const char *s, size_t n);

char *str_escape(const char *s)
{
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        for (const unsigned char *p = (const unsigned char *)s; *p;) {
                unsigned int cp = 0;
                size_t n = utf8_seq(p, &cp);
                /* C0 and C1 controls (a C1 CSI starts escape sequences too), DEL,
                 * and bytes that are not UTF-8: shown, never sent. */
                bool shown = n == 0 || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0);
                if (n == 0)
                        n = 1;
                if (shown) {
                        for (size_t k = 0; k < n; k++)
                                strbuf_addf(&sb, "\\x%02x", p[k]);
                } else {
                        strbuf_addn(&sb, (const char *)p, n);
                }
                p += n;
        }
        return sb.s;
}

bool str_has_prefix(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

bool path_is_under(const char *path, const char *dir)
{
        size_t n = strlen(dir);
        if (n == 1 && dir[0] == '/')
                return path[0] == '/';
        return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static void strbuf_addn(struct strbuf *sb, const char *s, size_t n)
{
        sb->s = xrealloc(sb->s, sb->len + n + 1);
        memcpy(sb->s + sb->len, s, n);
        sb->len += n;
        sb->s[sb->len] = '\0';
}

void strbuf_add(struct strbuf *sb, const char *s) { strbuf_addn(sb, s, strlen(s)); }

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *p = xvasprintf(fmt, ap);
        va_end(ap);
        strbuf_add(sb, p);
}

void strbuf_add_quoted(struct strbuf *sb, const char *s)
{
        bool plain = *s != '\0' && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789-_./=:,+@%") == strlen(s);
        if (plain) {
                strbuf_add(sb, s);
                return;
        }
        strbuf_addn(sb, "'", 1);
        for (const char *p = s; *p; p++) {
                if (*p == '\'')
                        strbuf_addn(sb, "'\\''", 4);
                else
                        strbuf_addn(sb, p, 1);
        }
        strbuf_addn(sb, "'", 1);
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
        const char *slash = strrchr(path, '/');
        if (!slash || slash == path)
                return xstrdup("/");
        return strndup(path, (size_t)(slash - path));
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

int write_file_atomic_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode)
{
        return write_file_atomic_at_flags(dirfd, name, data, len, mode, WRITE_SYNC_FILE | WRITE_SYNC_DIR);
}

int write_file_atomic_at_flags(int dirfd, const char *name, const void *data, size_t len, mode_t mode, int flags)
{
        char tmp[NAME_MAX + 1];
        _cleanup_close_ int fd = -1;
        int r;

        for (int attempt = 0; fd < 0; attempt++) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                snprintf(tmp, sizeof tmp, ".%.200s.tmp-%d-%lx", name, (int)getpid(),
                         (unsigned long)ts.tv_nsec ^ ((unsigned long)attempt * 2654435761UL));
                fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 07777);
                if (fd < 0 && (errno != EEXIST || attempt > 16))
                        return -errno;
        }
        /* The umask may have narrowed the mode: set it exactly. */
        if (fchmod(fd, mode & 07777) < 0)
                goto fail;
        for (size_t off = 0; off < len;) {
                ssize_t w = write(fd, (const char *)data + off, len - off);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        goto fail;
                }
                off += (size_t)w;
        }
        if ((flags & WRITE_SYNC_FILE) && fdatasync(fd) < 0)
                goto fail;
        if (renameat(dirfd, tmp, dirfd, name) < 0)
                goto fail;
        if ((flags & WRITE_SYNC_DIR) && fsync(dirfd) < 0 && errno != EINVAL)
                return -errno;
        return 0;
fail:
        r = -errno;
        unlinkat(dirfd, tmp, 0);
        return r;
}

/* Read `fd` to its end into *out (malloc'd, NUL-terminated), at most `max`
 * bytes, starting with room for `hint`. With `secure`, a buffer is never
 * realloc'd (that could leave a copy behind) but copied and erased, and it
 * is erased on error. 0 or a negative errno (-EFBIG over `max`). */
static int read_fd_all(int fd, size_t max, size_t hint, bool secure, char **out, size_t *len)
{
        /* One byte more than expected: the read that finds the end needs room. */
        size_t cap = (hint < max ? hint : max) + 2, n = 0;
        char *buf = xmalloc(cap);
        int r = 0;

        for (;;) {
                if (n + 1 >= cap) {
                        if (n > max) {
                                r = -EFBIG;
                                break;
                        }
                        size_t want = cap < 4096 ? 4096 : cap * 2;
                        if (secure) {
                                char *bigger = xmalloc(want);
                                memcpy(bigger, buf, n);
                                erase_and_free(buf);
                                buf = bigger;
                        } else {
                                buf = xrealloc(buf, want);
                        }
                        cap = want;
                }
                ssize_t got = read(fd, buf + n, cap - n - 1);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got < 0) {
                        r = errno > 0 ? -errno : -EIO;
                        break;
                }
                if (got == 0)
                        break;
                n += (size_t)got;
        }
        if (r == 0 && n > max)
                r = -EFBIG;
        if (r < 0) {
                if (secure)
                        erase_and_free(buf);
                else
                        free(buf);
                return r;
        }
        buf[n] = '\0';
        *out = buf;
        *len = n;
        return 0;
}

int read_fd_whole(int fd, size_t max, char **out, size_t *len)
{
        return read_fd_all(fd, max, 4094, false, out, len);
}

char *read_file(const char *path, size_t max, size_t *len_out)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        char *buf = NULL;
        size_t len = 0;
        int r = read_fd_all(fd, max, 4094, false, &buf, &len);
        if (r < 0) {
                errno = -r;
                return NULL;
        }
        if (len_out)
                *len_out = len;
        return buf;
}

char *read_file_at(int dirfd, const char *name, size_t max, size_t *len_out, struct stat *st_out)
{
        struct stat own = { 0 };
        struct stat *st = st_out ? st_out : &own;
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        if (fd < 0 || fstat(fd, st) < 0)
                return NULL;
        if (!S_ISREG(st->st_mode)) {
                errno = EINVAL;
                return NULL;
        }
        if ((uintmax_t)st->st_size > max) {
                errno = EFBIG;
                return NULL;
        }
        char *buf = NULL;
        size_t len = 0;
        int r = read_fd_all(fd, max, (size_t)st->st_size, false, &buf, &len);
        if (r < 0) {
                errno = -r;
                return NULL;
        }
        if (len_out)
                *len_out = len;
        return buf;
}

int read_file_secure(const char *path, size_t max, char **out, size_t *len, struct stat *st)
{
        struct stat own = { 0 };
        st = st ? st : &own;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 || fstat(fd, st) < 0)
                return errno > 0 ? -errno : -EIO;
        if (S_ISDIR(st->st_mode))
                return -EISDIR;
        if (!S_ISREG(st->st_mode))
                return -EINVAL;
        if ((uintmax_t)st->st_size > max)
                return -EFBIG;
        return read_fd_all(fd, max, (size_t)st->st_size, true, out, len);
}

long long now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
