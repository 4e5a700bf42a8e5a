#define _GNU_SOURCE
#include "base/str.h"

#include <stdint.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/utf8.h"

bool str_has_prefix(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

char *str_escape(const char *s)
{
        struct strbuf sb = { 0 };
        size_t left = strlen(s);
        strbuf_add(&sb, "");
        for (const char *p = s; left > 0;) {
                uint32_t cp = 0;
                size_t n = utf8_decode(p, left, &cp);
                /* C0 and C1 controls (a C1 CSI starts escape sequences too), DEL,
                 * and bytes that are not UTF-8: shown, never sent. */
                bool shown = n == 0 || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0);
                if (n == 0)
                        n = 1;
                if (shown) {
                        for (size_t k = 0; k < n; k++)
                                strbuf_addf(&sb, "\\x%02x", (unsigned char)p[k]);
                } else {
                        strbuf_addn(&sb, p, n);
                }
                p += n;
                left -= n;
        }
        return sb.s;
}
