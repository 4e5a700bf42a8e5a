#define _GNU_SOURCE
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/cleanup.h"

void strbuf_addn(struct strbuf *sb, const char *s, size_t n)
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

/* A character a shell word needs no quotes for. (Not strspn: glibc's
 * builds a table of the set on each call, which a --dry-run line's ~80
 * words made a tenth of its rendering.) */
static bool shell_plain(unsigned char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c != '\0' && strchr("-_./=:,+@%", c));
}

void strbuf_add_quoted(struct strbuf *sb, const char *s)
{
        bool plain = *s != '\0';
        for (const char *p = s; plain && *p; p++)
                plain = shell_plain((unsigned char)*p);
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
