/* A growable string (git's strbuf, reduced). Zero-initialise; `s` is
 * NUL-terminated once anything was added; free(sb.s) when done. */
#ifndef TB_STRBUF_H
#define TB_STRBUF_H

#include <stddef.h>

struct strbuf {
        char *s;
        size_t len;
};
void strbuf_add(struct strbuf *sb, const char *s);
/* The `n` bytes at `s` (a NUL among them is data). */
void strbuf_addn(struct strbuf *sb, const char *s, size_t n);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append `s` quoted for a POSIX shell (as is when it needs no quoting). */
void strbuf_add_quoted(struct strbuf *sb, const char *s);

#endif
