/* The one UTF-8 decoder: strict (no overlong forms, no surrogates, nothing
 * above U+10FFFF), used by the escaping function and by every check that a
 * text is UTF-8. */
#ifndef TB_UTF8_H
#define TB_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The length (1 to 4) of the valid UTF-8 sequence at the start of the `n`
 * bytes at `s`, with its code point in *cp; 0 when those bytes start no
 * valid sequence (or n is 0). */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);

/* Are the `n` bytes at `s` UTF-8 throughout? */
bool utf8_is_valid(const char *s, size_t n);

#endif
