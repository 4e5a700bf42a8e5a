/* Small helpers shared by the whole core: cleanup attributes, errors in
 * crun's style, growable string vectors, path and file helpers. */
#ifndef TB_UTIL_H
#define TB_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* ---- cleanup attributes (bubblewrap, systemd) ---- */
static inline void tb_freep(void *p) { free(*(void **)p); }
static inline void tb_closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                *fd = -1;
                errno = saved;
        }
}
/* Both ends of a pipe (int p[2], -1 for a closed end). */
static inline void tb_close_pairp(int (*p)[2])
{
        tb_closep(&(*p)[0]);
        tb_closep(&(*p)[1]);
}
static inline void tb_closedirp(DIR **d)
{
        if (*d) {
                int saved = errno;
                closedir(*d);
                *d = NULL;
                errno = saved;
        }
}
#define _cleanup_free_ __attribute__((cleanup(tb_freep)))
#define _cleanup_close_ __attribute__((cleanup(tb_closep)))
#define _cleanup_close_pair_ __attribute__((cleanup(tb_close_pairp)))
#define _cleanup_closedir_ __attribute__((cleanup(tb_closedirp)))
#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void *tb_steal_ptr(void *pp)
{
        void **p = pp, *v = *p;
        *p = NULL;
        return v;
}
#define steal_pointer(pp) tb_steal_ptr(pp)
static inline int tb_steal_fd(int *fd)
{
        int v = *fd;
        *fd = -1;
        return v;
}

#define TB_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- errors: 0 or a negative errno, and a message filled on the way up ---- */
struct tb_error {
        int code;        /* negative errno */
        char msg[1024];  /* one line, lowercase, says what is wrong and what to do */
};

/* Set err (if not NULL) and return `code` (a negative errno). A macro so
 * that callers (and static analysers) see the value returned is `code`. */
void tb_fail_set(struct tb_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define tb_fail(err, code, ...)                                  \
        __extension__({                                          \
                int tb_code_ = (code);                           \
                tb_fail_set((err), tb_code_, __VA_ARGS__);       \
                tb_code_;                                        \
        })
/* Put context before err's message on the way up: "loading plugin 'x': <old>".
 * Returns err->code. */
int tb_wrap(struct tb_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- memory ---- */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Make room for `need` elements in the array `p` whose capacity is `cap`
 * (both updated), growing it geometrically (systemd's GREEDY_REALLOC): the
 * one way the core grows an array. Aborts when out of memory, as xrealloc. */
#define GREEDY_REALLOC(p, cap, need)                                                    \
        do {                                                                            \
                if ((need) > (cap))                                                     \
                        (p) = tb_greedy_realloc((p), &(cap), (need), sizeof *(p));      \
        } while (0)
void *tb_greedy_realloc(void *p, size_t *cap, size_t need, size_t elem_size);

/* ---- secrets ---- */
/* Erase the whole allocation at `p` (explicit_bzero over its usable size),
 * then free it; NULL is fine. For anything that held a secret. */
void erase_and_free(void *p);
static inline void erase_and_freep(void *p) { erase_and_free(*(void **)p); }
#define _cleanup_erase_ __attribute__((cleanup(erase_and_freep)))

/* Read the file at `path` whole, for secrets (systemd's READ_FULL_FILE_SECURE):
 * opened O_NOFOLLOW|O_CLOEXEC|O_NOCTTY|O_NONBLOCK (a planted link or FIFO is
 * refused, not followed or waited on), checked to be a regular file of at
 * most `max` bytes, read into a buffer that is erased whenever it is given
 * up (grown or on error). On success *out is malloc'd and NUL-terminated
 * (release it with erase_and_free()), *len its length (a NUL byte inside is
 * data), and `st` (may be NULL) the file's fstat. Returns 0 or a negative
 * errno: -ELOOP a link, -EISDIR a folder, -EINVAL not a regular file,
 * -EFBIG over `max`, any open/fstat/read error as is. */
int read_file_secure(const char *path, size_t max, char **out, size_t *len, struct stat *st);

/* ---- a growable NULL-terminated vector of owned strings ---- */
struct strv {
        char **v;
        size_t n, cap;
};
void strv_add(struct strv *s, const char *x);           /* copies x */
void strv_add_take(struct strv *s, char *x);             /* takes ownership */
void strv_addf(struct strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool strv_contains(const struct strv *s, const char *x);
/* Free the strings and the vector's array; `s` is left empty, reusable. */
void strv_done(struct strv *s);
/* The same, erasing each string first (an environment with secrets). */
void strv_done_erase(struct strv *s);
#define _cleanup_strv_ _cleanup_(strv_done)
#define _cleanup_strv_erase_ _cleanup_(strv_done_erase)

/* ---- strings and paths ---- */
bool str_has_prefix(const char *s, const char *prefix);
/* Is `path` equal to `dir` or inside it? Both must be absolute and clean. */
bool path_is_under(const char *path, const char *dir);
/* `s` made safe for a terminal, malloc'd: control characters (C0, DEL, C1),
 * and so every escape sequence, and bytes that are not UTF-8 are written
 * visibly as \xNN ("\x1b[31m"), so a message that quotes user input stays one
 * line and sends the terminal nothing. The one escaping function: the logger
 * passes every line through it. */
char *str_escape(const char *s);

/* A growable string (git's strbuf, reduced). Zero-initialise; `s` is
 * NUL-terminated once anything was added; free(sb.s) when done. */
struct strbuf {
        char *s;
        size_t len;
};
void strbuf_add(struct strbuf *sb, const char *s);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append `s` quoted for a POSIX shell (as is when it needs no quoting). */
void strbuf_add_quoted(struct strbuf *sb, const char *s);
/* Look `prog` up on `path_env` (a PATH value), or take it as a path when it
 * has a '/': a malloc'd absolute path (links not resolved) to an executable
 * regular file, or NULL. */
char *find_on_path(const char *prog, const char *path_env);
/* The PATH used when the host's is unset or empty (as execvp does):
 * trialbox must work from an empty environment (env.h). */
#define TB_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* The parent folder of an absolute path, malloc'd ("/" for "/x"). */
char *path_dirname(const char *path);
/* mkdir -p with `mode` for the folders it makes. 0 or negative errno. */
int mkdir_p(const char *path, mode_t mode);

/* Write `len` bytes to `dirfd`/`name` atomically: a temporary file made with
 * O_EXCL in that folder, written, fsynced, renamed over `name`, and the
 * folder fsynced (systemd's write_string_file_atomic_at): for secrets, which
 * must survive a crash whole. The file gets `mode`. 0 or negative errno. */
int write_file_atomic_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode);

enum {
        WRITE_SYNC_FILE = 1 << 0, /* fdatasync the data before the rename: never a partial file after a crash */
        WRITE_SYNC_DIR = 1 << 1,  /* fsync the folder after it: the new name itself survives a crash */
};
/* The same with the syncs chosen (`flags`, WRITE_*): readers always see the
 * old file or the new one whole, whatever the flags. */
int write_file_atomic_at_flags(int dirfd, const char *name, const void *data, size_t len, mode_t mode, int flags);

/* Read `fd` to its end, at most `max` bytes, into *out (malloc'd,
 * NUL-terminated) and *len: 0, or a negative errno (-EFBIG over `max`). */
int read_fd_whole(int fd, size_t max, char **out, size_t *len);
/* Read a whole small file (up to `max` bytes). malloc'd, NUL-terminated, or NULL with errno set. */
char *read_file(const char *path, size_t max, size_t *len_out);
/* The regular file `name` in `dirfd` likewise, never following a link nor
 * blocking on a FIFO: NULL with errno EINVAL when not a regular file, EFBIG
 * over `max`. Fills *st_out (may be NULL) with what it opened. */
char *read_file_at(int dirfd, const char *name, size_t max, size_t *len_out, struct stat *st_out);

/* Milliseconds on the monotonic clock. */
long long now_ms(void);

#endif
