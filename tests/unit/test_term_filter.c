/* The terminal filter (sandbox/term_filter.h): a table of what a session
 * prints and what of it reaches the terminal; every row fed whole, byte by
 * byte and split at every point must give the same bytes, and the filter's
 * output filtered again must come out unchanged. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/term_filter.h"
#include "tb_test.h"

struct filter_case {
        const char *name;
        const char *in;
        size_t in_len; /* 0: strlen(in) */
        const char *want;
};

#define E "\x1b"
/* A row whose input holds NUL bytes. */
#define BYTES(s) s, sizeof(s) - 1

static const struct filter_case cases[] = {
        /* Text and the controls a screen uses. */
        { "plain text passes", "hello, world\n", 0, "hello, world\n" },
        { "UTF-8 text passes", "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \xc3\x9b\n", 0,
          "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \xc3\x9b\n" },
        { "BEL BS HT LF VT FF CR SO SI pass", "\a\b\t\n\v\f\r\x0e\x0f", 0, "\a\b\t\n\v\f\r\x0e\x0f" },
        { "other C0 controls and DEL are dropped", BYTES("a\x00\x01\x05\x10\x11\x13\x18\x1a\x1c\x1f\x7f" "b"), "ab" },
        { "ENQ (the answerback) is dropped", "a\x05" "b", 0, "ab" },

        /* CSI: what a TUI draws with. */
        { "SGR colours pass", E "[31mred" E "[0m " E "[38;2;1;2;3m" E "[38:5:208m" E "[m", 0,
          E "[31mred" E "[0m " E "[38;2;1;2;3m" E "[38:5:208m" E "[m" },
        { "cursor movement passes", E "[H" E "[2;5H" E "[3A" E "[B" E "[10C" E "[D" E "[5G" E "[7d" E "[2;3f", 0,
          E "[H" E "[2;5H" E "[3A" E "[B" E "[10C" E "[D" E "[5G" E "[7d" E "[2;3f" },
        { "erase, insert, delete and scroll pass", E "[2J" E "[K" E "[1@" E "[2P" E "[3L" E "[M" E "[2S" E "[T" E "[4X", 0,
          E "[2J" E "[K" E "[1@" E "[2P" E "[3L" E "[M" E "[2S" E "[T" E "[4X" },
        { "scroll regions pass", E "[2;20r" E "[r", 0, E "[2;20r" E "[r" },
        { "the alternate screen passes", E "[?1049h" E "[?1049l" E "[?47h" E "[?1047l", 0,
          E "[?1049h" E "[?1049l" E "[?47h" E "[?1047l" },
        { "bracketed paste, cursor visibility, mouse modes pass",
          E "[?2004h" E "[?25l" E "[?1000;1006h" E "[?1002h" E "[?1003l" E "[?1004h" E "[?2026h", 0,
          E "[?2004h" E "[?25l" E "[?1000;1006h" E "[?1002h" E "[?1003l" E "[?1004h" E "[?2026h" },
        { "device status, cursor position and attribute requests pass", E "[5n" E "[6n" E "[?6n" E "[c" E "[>c" E "[>q", 0,
          E "[5n" E "[6n" E "[?6n" E "[c" E "[>c" E "[>q" },
        { "cursor shape and mode requests pass", E "[2 q" E "[?2004$p", 0, E "[2 q" E "[?2004$p" },
        { "the kitty keyboard stack passes", E "[?u" E "[>1u" E "[<u", 0, E "[?u" E "[>1u" E "[<u" },
        { "insert mode passes, keyboard lock does not", E "[4h" E "[2h" E "[12l" E "[4l", 0, E "[4h" E "[4l" },
        { "window manipulation CSI t is dropped", "a" E "[8;100;200t" E "[21t" E "[2t" E "[>2t" E "[ t" "b", 0, "ab" },
        { "printing (media copy) is dropped", "a" E "[5i" E "[4i" E "[?5i" "b", 0, "ab" },
        { "DECCOLM and window raising modes are dropped", "a" E "[?3h" E "[?1042h" E "[?1043h" E "[?40h" "b", 0, "ab" },
        { "a mode list with one unknown mode is dropped whole", "a" E "[?25;3h" E "[?9999h" "b", 0, "ab" },
        { "title modes and conformance levels are dropped", "a" E "[>0;1T" E "[62;1\"p" E "[!p" "b", 0, "ab" },
        { "modifyOtherKeys passes, other key resources do not", E "[>4;2m" E "[>1;2m", 0, E "[>4;2m" },
        { "a malformed CSI is dropped", "a" E "[1?h" E "[1 1m" "b", 0, "ab" },
        { "a CSI cut by CAN or SUB is dropped", "a" E "[31\x18" "b" E "[1\x1a" "c", 0, "abc" },
        { "a CSI cut by ESC gives way to the next", "a" E "[31" E "[32mb", 0, "a" E "[32mb" },
        { "a C0 control inside a CSI is executed first", E "[3\n1m", 0, "\n" E "[31m" },
        { "a non-ASCII byte inside a CSI drops it and is read as text", E "[3\xc3\xa9m", 0, "\xc3\xa9m" },

        /* Simple escape sequences. */
        { "ESC 7 8 = > D E H M pass", E "7" E "8" E "=" E ">" E "D" E "E" E "H" E "M", 0,
          E "7" E "8" E "=" E ">" E "D" E "E" E "H" E "M" },
        { "charset designations pass", E "(0q" E "(B" E ")0" E "*A" E "+B", 0, E "(0q" E "(B" E ")0" E "*A" E "+B" },
        { "line size and the alignment test pass", E "#3" E "#6" E "#8", 0, E "#3" E "#6" E "#8" },
        { "other escapes are dropped", "a" E "c" E "Z" E " G" E "%G" E "N" E "l" E "\\" "b", 0, "ab" },

        /* String sequences: dropped with their content. */
        { "a window title (OSC 0, 1, 2) is dropped", "a" E "]0;pwned\a" E "]1;icon\a" E "]2;title" E "\\b", 0, "ab" },
        { "OSC 52 (the clipboard) is dropped", "a" E "]52;c;cm0gLXJmIH4K\ab" E "]52;c;?" E "\\c", 0, "abc" },
        { "OSC 7, 8, 4, 10, 11 are dropped",
          "a" E "]7;file://h/x\a" E "]8;;http://x" E "\\link" E "]8;;" E "\\" E "]4;1;#ff0000\a" E "]10;?\a" E "]11;#000\ab",
          0, "alinkb" },
        { "notifications (OSC 9, 777) are dropped", "a" E "]9;hi\a" E "]777;notify;t;b\ab", 0, "ab" },
        { "DCS, APC, PM and SOS are dropped", "a" E "P$qm" E "\\" E "_Gf=100;AAAA" E "\\" E "^pm" E "\\" E "Xsos" E "\\b", 0,
          "ab" },
        { "BEL does not end a DCS", "a" E "Pq\a#0;2;0;0;0" E "\\b", 0, "ab" },
        { "ESC inside a string ends it and starts a sequence", "a" E "]0;t" E "[31mb", 0, "a" E "[31mb" },
        { "CAN ends a string", "a" E "]0;t\x18" "b", 0, "ab" },
        { "newlines inside a string are part of it", "a" E "]0;t\n\n" E "\\b", 0, "ab" },
        { "an unended OSC hides what follows", "a" E "]0;never ends\nsecret", 0, "a" },

        /* 8-bit C1 controls and bytes that are not UTF-8. */
        { "raw C1 introducers drop their sequences",
          "a\x9b" "2J" "b\x9d" "0;t\a" "c\x90" "q" E "\\" "d\x98" "s" E "\\" "e\x9e" "p" E "\\" "f\x9f" "a" E "\\g", 0,
          "abcdefg" },
        { "other raw C1 controls are dropped", "a\x84\x85\x8d\x9c" "b", 0, "ab" },
        { "UTF-8-encoded C1 controls are dropped like raw ones", "a\xc2\x9b" "2J" "b\xc2\x9d" "0;t\a" "c\xc2\x85" "d", 0,
          "abcd" },
        { "C3 9B is a letter, not a CSI", "\xc3\x9b" "2J", 0, "\xc3\x9b" "2J" },
        { "invalid UTF-8 is dropped", "a\xc0\xaf" "b\xed\xa0\x80" "c\xf5\x80\x80\x80" "d\xff\xfe" "e\xe2\x82" "f", 0,
          "abcdef" },
        { "an overlong or surrogate sequence hides no C1", "a\xe0\x82\x9b" "2J", 0, "a2J" },
};

static char *filter_all(const char *in, size_t n, size_t *out_n, size_t chunk)
{
        struct term_filter f;
        term_filter_init(&f);
        char *out = xmalloc(TERM_FILTER_OUT_MAX(n) + 1);
        size_t m = 0;
        char *piece = xmalloc(TERM_FILTER_OUT_MAX(chunk ? chunk : n));
        for (size_t i = 0; i < n; i += chunk ? chunk : n) {
                size_t k = chunk && i + chunk < n ? chunk : n - i;
                size_t got = term_filter_feed(&f, in + i, k, piece);
                ck_assert_uint_le(got, TERM_FILTER_OUT_MAX(k));
                memcpy(out + m, piece, got);
                m += got;
        }
        free(piece);
        out[m] = '\0';
        *out_n = m;
        return out;
}

/* Split at `at`: the two feeds give what one does. */
static char *filter_split(const char *in, size_t n, size_t at, size_t *out_n)
{
        struct term_filter f;
        term_filter_init(&f);
        char *out = xmalloc(TERM_FILTER_OUT_MAX(n) * 2 + 1);
        size_t m = term_filter_feed(&f, in, at, out);
        m += term_filter_feed(&f, in + at, n - at, out + m);
        out[m] = '\0';
        *out_n = m;
        return out;
}

static char *visible(const char *s, size_t n)
{
        _cleanup_free_ char *copy = xmalloc(n + 1);
        for (size_t i = 0; i < n; i++)
                copy[i] = s[i] ? s[i] : '@'; /* str_escape stops at a NUL */
        copy[n] = '\0';
        return str_escape(copy);
}

START_TEST(each_row_gives_its_bytes_however_it_is_split)
{
        const struct filter_case *c = &cases[_i];
        size_t n = c->in_len ? c->in_len : strlen(c->in), want_n = strlen(c->want), got_n;
        for (size_t chunk = 0; chunk <= 3; chunk++) { /* whole, then 1, 2 and 3 bytes a feed */
                _cleanup_free_ char *got = filter_all(c->in, n, &got_n, chunk);
                _cleanup_free_ char *g = visible(got, got_n), *w = visible(c->want, want_n);
                ck_assert_msg(got_n == want_n && memcmp(got, c->want, want_n) == 0,
                              "%s (fed %zu bytes a time): got \"%s\", want \"%s\"", c->name, chunk, g, w);
        }
        for (size_t at = 0; at <= n; at++) {
                _cleanup_free_ char *got = filter_split(c->in, n, at, &got_n);
                _cleanup_free_ char *g = visible(got, got_n);
                ck_assert_msg(got_n == want_n && memcmp(got, c->want, want_n) == 0, "%s (split at %zu): got \"%s\"",
                              c->name, at, g);
        }
        /* What passed is passed again, unchanged. */
        _cleanup_free_ char *again = filter_all(c->want, want_n, &got_n, 0);
        ck_assert_msg(got_n == want_n && memcmp(again, c->want, want_n) == 0, "%s: the output is not stable", c->name);
}
END_TEST

START_TEST(a_string_that_never_ends_is_dropped_in_bounded_memory)
{
        /* 8 MiB of one OSC 52, fed in 64 KiB reads, as the relay does. */
        enum { READ = 65536, TOTAL = 8 << 20 };
        struct term_filter f;
        term_filter_init(&f);
        _cleanup_free_ char *buf = xmalloc(READ), *out = xmalloc(TERM_FILTER_OUT_MAX(READ));
        memset(buf, 'A', READ);
        size_t m = term_filter_feed(&f, E "]52;c;", 7, out);
        ck_assert_uint_eq(m, 0);
        for (size_t sent = 0; sent < TOTAL; sent += READ)
                ck_assert_uint_eq(term_filter_feed(&f, buf, READ, out), 0);
        ck_assert_uint_le(f.len, TERM_FILTER_SEQ_MAX); /* nothing of it held */
        m = term_filter_feed(&f, "\aafter", 6, out);
        ck_assert_uint_eq(m, 5);
        ck_assert(memcmp(out, "after", 5) == 0);
}
END_TEST

START_TEST(a_csi_longer_than_the_limit_is_dropped_whole)
{
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "a" E "[");
        for (int i = 0; i < 400; i++)
                strbuf_add(&sb, "1;");
        strbuf_add(&sb, "31mb" E "[32mc");
        size_t n;
        _cleanup_free_ char *got = filter_all(sb.s, sb.len, &n, 7);
        ck_assert_str_eq(got, "ab" E "[32mc");
        free(sb.s);
}
END_TEST

struct end_case {
        const char *name;
        const char *in;
        const char *want; /* what term_filter_end() gives after `in` */
};

static const struct end_case end_cases[] = {
        { "nothing changed: nothing to put back", "text" E "[2J" E "[H" E "7" E "8", "" },
        { "a mode set and reset is not put back", E "[?1049h" E "[?1049l" E "[?2004h" E "[?2004l", "" },
        { "the alternate screen is left first", E "[?2004h" E "[?1049h" E "[?1000h", E "[?1049l" E "[?1000l" E "[?2004l" },
        { "a hidden cursor is shown, autowrap put back on", E "[?25l" E "[?7l", E "[?7h" E "[?25h" },
        { "mouse and focus modes are turned off", E "[?1002;1006h" E "[?1004h", E "[?1002l" E "[?1004l" E "[?1006l" },
        { "insert mode is turned off", E "[4h", E "[4l" },
        { "keyboard pushes are popped, per screen",
          E "[>1u" E "[>3u" E "[?1049h" E "[>1u", E "[<1u" E "[?1049l" E "[<2u" },
        { "a pop is counted", E "[>1u" E "[>1u" E "[<u", E "[<1u" },
        { "modifyOtherKeys is reset", E "[>4;2m", E "[>4m" },
        { "scroll margins are reset, the cursor kept", E "[2;10r", E "7" E "[r" E "8" },
        { "colours and charsets are reset", E "[1;31m" E "(0", E "[m\x0f" E "(B" },
        { "dropped sequences change nothing", E "[?3h" E "]0;t\a" E "P" "x" E "\\", "" },
};

START_TEST(what_the_session_left_changed_is_put_back)
{
        const struct end_case *c = &end_cases[_i];
        struct term_filter f;
        term_filter_init(&f);
        size_t n = strlen(c->in);
        _cleanup_free_ char *out = xmalloc(TERM_FILTER_OUT_MAX(n));
        term_filter_feed(&f, c->in, n, out);
        char end[TERM_FILTER_END_MAX + 1];
        size_t m = term_filter_end(&f, end);
        end[m] = '\0';
        _cleanup_free_ char *g = str_escape(end), *w = str_escape(c->want);
        ck_assert_msg(strcmp(end, c->want) == 0, "%s: got \"%s\", want \"%s\"", c->name, g, w);
        /* The filter is initial again, and what it gives passes it. */
        ck_assert_uint_eq(term_filter_end(&f, end), 0);
        size_t again_n;
        _cleanup_free_ char *again = filter_all(c->want, strlen(c->want), &again_n, 0);
        ck_assert_str_eq(again, c->want);
}
END_TEST

START_TEST(the_most_the_end_can_give_fits_its_room)
{
        struct strbuf sb = { 0 };
        strbuf_add(&sb, E "[?1049h");
        static const int modes[] = { 1, 5, 6, 9, 45, 66, 69, 1000, 1002, 1003, 1004, 1005, 1006, 1015, 1016, 2004, 2026 };
        for (size_t i = 0; i < TB_ARRAY_SIZE(modes); i++)
                strbuf_addf(&sb, E "[?%dh", modes[i]);
        strbuf_add(&sb, E "[?1047h" E "[?47h" E "[?7l" E "[?8l" E "[?25l" E "[4h" E "[20h" E "[>4;2m" E "[3;4r" E "[1m" E "(0");
        for (int i = 0; i < 100; i++)
                strbuf_add(&sb, E "[>1u" E "[?1049l" E "[>1u" E "[?1049h");
        struct term_filter f;
        term_filter_init(&f);
        _cleanup_free_ char *out = xmalloc(TERM_FILTER_OUT_MAX(sb.len));
        term_filter_feed(&f, sb.s, sb.len, out);
        char end[TERM_FILTER_END_MAX];
        size_t m = term_filter_end(&f, end);
        ck_assert_uint_gt(m, 150);
        ck_assert_uint_le(m, TERM_FILTER_END_MAX);
        free(sb.s);
}
END_TEST

TB_SUITE("term_filter", 0)
{
        tcase_add_loop_test(tc, each_row_gives_its_bytes_however_it_is_split, 0, (int)TB_ARRAY_SIZE(cases));
        tcase_add_test(tc, a_string_that_never_ends_is_dropped_in_bounded_memory);
        tcase_add_test(tc, a_csi_longer_than_the_limit_is_dropped_whole);
        tcase_add_loop_test(tc, what_the_session_left_changed_is_put_back, 0, (int)TB_ARRAY_SIZE(end_cases));
        tcase_add_test(tc, the_most_the_end_can_give_fits_its_room);
}
