#define _GNU_SOURCE
#include "base/utf8.h"

size_t utf8_decode(const char *s, size_t n, uint32_t *cp)
{
        const unsigned char *p = (const unsigned char *)s;
        size_t need;
        uint32_t c, min;

        if (n == 0)
                return 0;
        if (p[0] < 0x80) {
                *cp = p[0];
                return 1;
        } else if ((p[0] & 0xe0) == 0xc0) {
                need = 1, c = p[0] & 0x1f, min = 0x80;
        } else if ((p[0] & 0xf0) == 0xe0) {
                need = 2, c = p[0] & 0x0f, min = 0x800;
        } else if ((p[0] & 0xf8) == 0xf0) {
                need = 3, c = p[0] & 0x07, min = 0x10000;
        } else {
                return 0;
        }
        if (n - 1 < need)
                return 0;
        for (size_t k = 1; k <= need; k++) {
                if ((p[k] & 0xc0) != 0x80)
                        return 0;
                c = (c << 6) | (p[k] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        *cp = c;
        return need + 1;
}

bool utf8_is_valid(const char *s, size_t n)
{
        for (size_t i = 0; i < n;) {
                uint32_t cp;
                size_t k = utf8_decode(s + i, n - i, &cp);
                if (k == 0)
                        return false;
                i += k;
        }
        return true;
}
