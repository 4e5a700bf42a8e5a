/* libFuzzer target: the terminal filter, term_filter_feed() and
 * term_filter_end(), over whatever a session may print.
 *
 * The first byte picks how the rest is cut into feeds (the relay's reads):
 * the filter must give the same bytes however it is cut. Its promises,
 * checked on every input:
 *   - each feed writes at most TERM_FILTER_OUT_MAX of its input, the end at
 *     most TERM_FILTER_END_MAX, and nothing is held beyond TERM_FILTER_SEQ_MAX;
 *   - what comes out is UTF-8 throughout, no C0 control but BEL BS HT LF
 *     VT FF CR SO SI, and every ESC starts a CSI sequence (not ending in
 *     't') or one of the escape sequences passed: never a string sequence;
 *   - what comes out passes the filter again unchanged, the end's bytes too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/term_filter.h"

#define FUZZ_TARGET "fuzz_term_filter"
#include "fuzz.h"

/* Feed `in` in slices of `cut` bytes (0: at once); the bytes out, malloc'd. */
static char *filter(const uint8_t *in, size_t n, size_t cut, size_t *out_n, char *end, size_t *end_n)
{
        struct term_filter f;
        term_filter_init(&f);
        char *out = malloc(TERM_FILTER_OUT_MAX(n) + 1);
        size_t m = 0;
        if (!out)
                abort();
        size_t i = 0;
        do {
                size_t k = cut && n - i > cut ? cut : n - i;
                size_t got = term_filter_feed(&f, (const char *)in + i, k, out + m);
                check(got <= TERM_FILTER_OUT_MAX(k), "a feed writes at most TERM_FILTER_OUT_MAX");
                check(f.len <= TERM_FILTER_SEQ_MAX, "at most TERM_FILTER_SEQ_MAX held");
                m += got;
                i += k;
        } while (i < n);
        *end_n = term_filter_end(&f, end);
        check(*end_n <= TERM_FILTER_END_MAX, "the end writes at most TERM_FILTER_END_MAX");
        *out_n = m;
        return out;
}

/* The length of the UTF-8 character at s (n bytes left), 0 if none
 * (Unicode's table of well-formed byte sequences). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
        size_t need = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
        if (!need || need > n)
                return 0;
        unsigned char lo = s[0] == 0xe0 ? 0xa0 : s[0] == 0xf0 ? 0x90 : 0x80;
        unsigned char hi = s[0] == 0xed ? 0x9f : s[0] == 0xf4 ? 0x8f : 0xbf;
        if (s[1] < lo || s[1] > hi)
                return 0;
        for (size_t k = 2; k < need; k++)
                if ((s[k] & 0xc0) != 0x80)
                        return 0;
        return need;
}

/* The promise about what reaches the terminal, checked independently. */
static void check_safe(const unsigned char *s, size_t n)
{
        for (size_t i = 0; i < n;) {
                unsigned char b = s[i];
                if (b >= 0x80) {
                        size_t k = utf8_len(s + i, n - i);
                        check(k > 0, "only UTF-8 reaches the terminal");
                        check(!(b == 0xc2 && s[i + 1] < 0xa0), "no UTF-8-encoded C1 control reaches the terminal");
                        i += k;
                } else if (b == 0x1b) {
                        check(i + 1 < n, "an ESC is never the last byte");
                        unsigned char next = s[i + 1];
                        check(next && strchr("[78=>DEHM()*+-./#", next), "only CSI and the escapes passed reach the terminal");
                        if (next == '[') {
                                size_t j = i + 2;
                                while (j < n && s[j] >= 0x20 && s[j] < 0x40)
                                        j++;
                                check(j < n && s[j] >= 0x40 && s[j] < 0x7f, "a CSI sequence reaches the terminal whole");
                                check(s[j] != 't', "no window manipulation reaches the terminal");
                                i = j + 1;
                        } else {
                                i += 2;
                        }
                } else {
                        check(b >= 0x20 ? b != 0x7f : (b >= 0x07 && b <= 0x0f), "only the C0 controls a screen uses");
                        i++;
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size == 0)
                return 0;
        size_t cut = data[0] % 17; /* 0: whole; else 1 to 16 bytes a feed */
        data++, size--;
        char end_whole[TERM_FILTER_END_MAX], end_cut[TERM_FILTER_END_MAX], end_again[TERM_FILTER_END_MAX];
        size_t n_whole, n_cut, n_again, e_whole, e_cut, e_again;
        char *whole = filter(data, size, 0, &n_whole, end_whole, &e_whole);
        char *cutted = filter(data, size, cut, &n_cut, end_cut, &e_cut);
        check(n_whole == n_cut && memcmp(whole, cutted, n_whole) == 0, "the same bytes however the input is cut");
        check(e_whole == e_cut && memcmp(end_whole, end_cut, e_whole) == 0, "the same end however the input is cut");
        check_safe((const unsigned char *)whole, n_whole);
        check_safe((const unsigned char *)end_whole, e_whole);

        char *again = filter((const uint8_t *)whole, n_whole, 0, &n_again, end_again, &e_again);
        check(n_again == n_whole && memcmp(again, whole, n_whole) == 0, "what passed passes again unchanged");
        check(e_again == e_whole && memcmp(end_again, end_whole, e_whole) == 0, "its end is the same");
        free(again);
        again = filter((const uint8_t *)end_whole, e_whole, 0, &n_again, end_again, &e_again);
        check(n_again == e_whole && memcmp(again, end_whole, e_whole) == 0, "the end's bytes pass unchanged");
        free(again);
        free(whole);
        free(cutted);
        return 0;
}
