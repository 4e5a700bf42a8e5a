/* The terminal filter: what of a session's output may reach the terminal
 * trialbox runs on. A session's output is attacker-made; a terminal obeys
 * much of what it is sent beyond drawing its screen: it sets the window's
 * title, reads and writes the clipboard (OSC 52), opens links, changes the
 * palette, resizes or iconifies the window, reports its title as if typed.
 * The filter passes what a text user interface needs to draw its screen and
 * drops the rest:
 *
 *   passed   text (UTF-8, decoded strictly), BEL BS HT LF VT FF CR SO SI,
 *            the CSI sequences of term_filter.c's table (cursor, erase,
 *            scroll, SGR, the modes listed there, device and cursor
 *            reports, the kitty keyboard stack), and ESC 7 8 = > D E H M,
 *            charset designations (ESC ( ) * + - . / F), ESC # 3 4 5 6 8;
 *   dropped  every other C0 control and DEL; OSC, DCS, SOS, PM and APC with
 *            their content up to ST (ESC \), BEL for OSC, CAN or SUB; every
 *            other CSI sequence (CSI ... t, printing, unknown modes) and
 *            escape sequence; C1 controls, raw (0x80-0x9F) or UTF-8
 *            encoded (U+0080-U+009F), an introducer with its sequence;
 *            bytes that are not UTF-8.
 *
 * It is a state machine (modelled on DEC's parser, as xterm and VTE are)
 * fed any slices of the stream: a sequence split across two reads is
 * filtered as if whole. It holds back at most TERM_FILTER_SEQ_MAX bytes (an
 * incomplete sequence or character); a longer CSI sequence is dropped, and
 * a string sequence's content is dropped as it comes, never held, so its
 * memory is bounded whatever the session sends. Pure: no I/O, no
 * allocation.
 *
 * It also remembers what the session left on that outlives it (the
 * alternate screen, mouse reporting, bracketed paste, a hidden cursor,
 * colours, a line-drawing charset, ...): term_filter_end() gives the bytes
 * that put those back, for after the session. */
#ifndef TB_TERM_FILTER_H
#define TB_TERM_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest incomplete sequence held back between two feeds. */
#define TERM_FILTER_SEQ_MAX 128
/* Room term_filter_feed() needs for `n` bytes in: they and what was held. */
#define TERM_FILTER_OUT_MAX(n) ((n) + TERM_FILTER_SEQ_MAX)
/* Room term_filter_end() needs. */
#define TERM_FILTER_END_MAX 512

struct term_filter {
        uint8_t state;
        bool osc;                               /* the string being dropped is an OSC: BEL ends it too */
        uint8_t need;                           /* the UTF-8 character's length */
        size_t len;                             /* bytes in seq */
        unsigned char seq[TERM_FILTER_SEQ_MAX]; /* the sequence or character held back */
        /* What the session changed, for term_filter_end(). */
        uint64_t modes_changed;                 /* bit i: the table's mode i is not at its default */
        unsigned pushes[2];                     /* kitty keyboard pushes: main screen, alternate screen */
        bool sgr, charset, margins, modify_keys;
};

/* A filter in its initial state (as if nothing was sent yet). */
void term_filter_init(struct term_filter *f);

/* Filter the `n` bytes at `in` into `out`, which has room for
 * TERM_FILTER_OUT_MAX(n) bytes; returns how many were written. */
size_t term_filter_feed(struct term_filter *f, const char *in, size_t n, char *out);

/* The session's output has ended: what it held back is dropped, and `out`
 * (room for TERM_FILTER_END_MAX bytes) gets what puts back the terminal
 * state the session left changed (leaving the alternate screen, mouse and
 * paste modes off, the cursor shown, colours and charset reset, ...).
 * Returns how many bytes; the filter is initial again. */
size_t term_filter_end(struct term_filter *f, char *out);

#endif
