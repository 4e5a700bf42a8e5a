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
