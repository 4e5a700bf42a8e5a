#define _GNU_SOURCE
#include "base/lines.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/io.h"

bool lines_has_needle(const char *s, size_t n, const char *const *needles)
{
        if (!needles)
                return true;
        for (const char *const *k = needles; *k; k++)
                if (memmem(s, n, *k, strlen(*k)))
                        return true;
        return false;
}

static bool limits_valid(const struct lines_limits *lim)
{
        if (!lim || lim->max_bytes == 0 || lim->max_line == 0 || lim->max_line > SIZE_MAX / 2)
                return false;
        for (const char *const *k = lim->needles; k && *k; k++)
                if (!**k || strlen(*k) > LINES_NEEDLE_MAX)
                        return false;
        return true;
}

/* Looking for a needle in a line too long to hold: the stream's last bytes
 * are kept, so a needle split across two reads is still seen. */
struct needle_scan {
        char carry[LINES_NEEDLE_MAX];
        size_t n;
        bool found;
};

static void scan_feed(struct needle_scan *s, const char *const *needles, const char *p, size_t n)
{
        enum { KEEP = LINES_NEEDLE_MAX - 1 };
        if (s->found || n == 0)
                return;
        char joint[2 * LINES_NEEDLE_MAX];
        size_t head = n < KEEP ? n : KEEP;
        memcpy(joint, s->carry, s->n);
        memcpy(joint + s->n, p, head);
        if (lines_has_needle(joint, s->n + head, needles) || lines_has_needle(p, n, needles)) {
                s->found = true;
                return;
        }
        if (n >= KEEP) {
                memcpy(s->carry, p + n - KEEP, KEEP);
                s->n = KEEP;
                return;
        }
        size_t keep = s->n < KEEP - n ? s->n : KEEP - n;
        memmove(s->carry, s->carry + s->n - keep, keep);
        memcpy(s->carry + keep, p, n);
        s->n = keep + n;
}

/* One reading: the line being gathered, or the long line being skipped. */
struct reader {
        const struct lines_limits *lim;
        lines_fn fn;
        void *ctx;
        struct lines_stats *st;
        char *line;
        size_t len, cap;
        bool skipping_first; /* the tail's first, partial line */
        bool too_long;       /* the line at hand is over max_line: only scanned */
        struct needle_scan scan;
};

static int emit(struct reader *r, char *s, size_t n)
{
        if (!lines_has_needle(s, n, r->lim->needles))
                return 0;
        r->st->lines++;
        return r->fn(s, n, r->ctx);
}

/* The end of the line at hand (its bytes in r->line). */
static int line_end(struct reader *r)
{
        int ret = 0;
        if (r->too_long) {
                if (r->scan.found)
                        r->st->long_lines++;
        } else {
                r->line[r->len] = '\0';
                ret = emit(r, r->line, r->len);
        }
        r->len = 0;
        r->too_long = false;
        r->scan = (struct needle_scan){ 0 };
        return ret;
}

/* Add `n` bytes to the line at hand. */
static void line_add(struct reader *r, const char *p, size_t n)
{
        if (!r->too_long && r->len + n > r->lim->max_line) {
                r->too_long = true;
                scan_feed(&r->scan, r->lim->needles, r->line, r->len);
        }
        if (r->too_long) {
                scan_feed(&r->scan, r->lim->needles, p, n);
                return;
        }
        GREEDY_REALLOC(r->line, r->cap, r->len + n + 1);
        memcpy(r->line + r->len, p, n);
        r->len += n;
}

/* Split one chunk read (NUL-terminable: one byte of room after it). */
static int feed(struct reader *r, char *p, size_t n)
{
        while (n > 0) {
                char *nl = memchr(p, '\n', n);
                size_t piece = nl ? (size_t)(nl - p) : n;
                if (r->skipping_first) {
                        r->skipping_first = !nl;
                } else if (nl && r->len == 0 && !r->too_long && piece <= r->lim->max_line) {
                        *nl = '\0'; /* a whole line inside the chunk: handed on from there */
                        int ret = emit(r, p, piece);
                        if (ret != 0)
                                return ret;
                } else {
                        line_add(r, p, piece);
                        int ret = nl ? line_end(r) : 0;
                        if (ret != 0)
                                return ret;
                }
                if (!nl)
                        return 0;
                p = nl + 1;
                n -= piece + 1;
        }
        return 0;
}

/* Where the reading starts and ends, as the limits say. */
static int plan(int fd, const struct lines_limits *lim, struct reader *r, off_t *start, off_t *end)
{
        struct stat sb;
        if (fstat(fd, &sb) < 0)
                return -errno;
        if (!S_ISREG(sb.st_mode))
                return -EINVAL;
        *start = 0;
        *end = sb.st_size;
        if ((uint64_t)sb.st_size <= lim->max_bytes)
                return 0;
        r->st->cut = true;
        if (!lim->tail) {
                *end = (off_t)lim->max_bytes;
                return 0;
        }
        *start = sb.st_size - (off_t)lim->max_bytes;
        char before;
        ssize_t k = RETRY_EINTR(pread(fd, &before, 1, *start - 1));
        if (k < 0)
                return -errno;
        r->skipping_first = k != 1 || before != '\n';
        return 0;
}

int lines_read_fd(int fd, const struct lines_limits *lim, lines_fn fn, void *ctx, struct lines_stats *st)
{
        struct lines_stats none = { 0 };
        st = st ? st : &none;
        *st = (struct lines_stats){ 0 };
        if (!limits_valid(lim) || !fn)
                return -EINVAL;
        struct reader r = { .lim = lim, .fn = fn, .ctx = ctx, .st = st };
        off_t off = 0, end = 0;
        int ret = plan(fd, lim, &r, &off, &end);
        enum { CHUNK = 65536 };
        char *chunk = ret == 0 ? xmalloc(CHUNK + 1) : NULL;
        bool at_end = false;
        while (ret == 0 && off < end) {
                size_t want = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
                ssize_t k = RETRY_EINTR(pread(fd, chunk, want, off));
                if (k < 0) {
                        ret = -errno;
                        break;
                }
                if (k == 0) { /* shorter than it was: its end is here */
                        at_end = true;
                        break;
                }
                off += k;
                ret = feed(&r, chunk, (size_t)k);
        }
        /* The last line without a '\n' is one, unless the limit cut it. */
        bool whole = at_end || !st->cut || lim->tail;
        if (ret == 0 && (r.len > 0 || r.too_long) && !r.skipping_first && whole)
                ret = line_end(&r);
        free(chunk);
        free(r.line);
        return ret;
}
