/* The one UTF-8 decoder (base/utf8.h): what it takes and what it refuses. */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "base/macro.h"
#include "base/utf8.h"
#include "tb_test.h"

START_TEST(the_decoder_takes_each_length_and_gives_its_code_point)
{
        static const struct {
                const char *in;
                size_t len;
                uint32_t cp;
        } cases[] = {
                { "a", 1, 'a' },
                { "\xc3\xa9", 2, 0xe9 },
                { "\xe2\x82\xac", 3, 0x20ac },
                { "\xf0\x9f\x99\x82", 4, 0x1f642 },
                { "\xf4\x8f\xbf\xbf", 4, 0x10ffff },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                uint32_t cp = 0;
                ck_assert_uint_eq(utf8_decode(cases[i].in, strlen(cases[i].in), &cp), cases[i].len);
                ck_assert_uint_eq(cp, cases[i].cp);
        }
}
END_TEST

START_TEST(the_decoder_refuses_overlong_forms_surrogates_too_high_cut_and_stray_bytes)
{
        static const char *const bad[] = {
                "\xc0\xaf",         /* overlong '/' */
                "\xe0\x80\xaf",     /* overlong, three bytes */
                "\xed\xa0\x80",     /* a surrogate */
                "\xf4\x90\x80\x80", /* above U+10FFFF */
                "\x9b",             /* a continuation byte alone */
                "\xff",
                "\xe2\x82",         /* cut */
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++) {
                uint32_t cp = 0;
                ck_assert_msg(utf8_decode(bad[i], strlen(bad[i]), &cp) == 0, "case %zu", i);
                ck_assert_msg(!utf8_is_valid(bad[i], strlen(bad[i])), "case %zu", i);
        }
        uint32_t cp = 0;
        /* The length bounds it: a sequence cut by `n` is refused even when more bytes follow. */
        ck_assert_uint_eq(utf8_decode("\xe2\x82\xac", 2, &cp), 0);
        ck_assert_uint_eq(utf8_decode("", 0, &cp), 0);
}
END_TEST

START_TEST(a_text_is_valid_only_when_every_sequence_is)
{
        ck_assert(utf8_is_valid("caf\xc3\xa9 \xe2\x82\xac", 9));
        ck_assert(utf8_is_valid("", 0));
        ck_assert(utf8_is_valid("a\0b", 3)); /* NUL is a character; callers refuse it themselves */
        ck_assert(!utf8_is_valid("caf\xc3", 4));
        ck_assert(!utf8_is_valid("ok \xc0\xaf ok", 8));
}
END_TEST

TB_SUITE("utf8", 0)
{
        tcase_add_test(tc, the_decoder_takes_each_length_and_gives_its_code_point);
        tcase_add_test(tc, the_decoder_refuses_overlong_forms_surrogates_too_high_cut_and_stray_bytes);
        tcase_add_test(tc, a_text_is_valid_only_when_every_sequence_is);
}
