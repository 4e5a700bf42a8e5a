#include "sandbox/term_filter.h"

#include <stdio.h>
#include <string.h>

#include "base/utf8.h"

enum state {
        GROUND,
        UTF8,       /* a multi-byte character, held until whole */
        ESCAPE,     /* after ESC */
        ESCAPE_INT, /* ESC and intermediates (0x20-0x2F) */
        ESCAPE_IGNORE,
        CSI,        /* ESC [ and parameters, intermediates */
        CSI_IGNORE, /* a CSI sequence dropped whole: until its final byte */
        STRING,     /* OSC, DCS, SOS, PM, APC: dropped until its end */
        STRING_ESC, /* ESC inside a string: ST when '\' follows */
};

#define ESC 0x1b
#define CAN 0x18
#define SUB 0x1a
#define BEL 0x07
#define SO 0x0e
#define SI 0x0f

/* The modes (DEC private, CSI ? N h/l) a session may set, with their
 * defaults: those not tracked are passed but not put back. The alternate
 * screens come first: leaving one restores the main screen, and
 * term_filter_end() puts modes back in this order. A mode not listed
 * (DECCOLM 3, which may resize the window; 1042 and 1043, which make the
 * window urgent or raise it; anything unknown) drops its sequence. */
static const struct mode {
        uint16_t n;
        bool on_by_default, tracked;
} private_modes[] = {
        { 1049, false, true }, /* alternate screen, cursor saved */
        { 1047, false, true }, /* alternate screen */
        { 47, false, true },   /* alternate screen (old) */
        { 1, false, true },    /* application cursor keys */
        { 5, false, true },    /* reverse video */
        { 6, false, true },    /* origin mode */
        { 7, true, true },     /* autowrap */
        { 8, true, true },     /* autorepeat */
        { 9, false, true },    /* X10 mouse */
        { 12, false, false },  /* blinking cursor (its default is the user's) */
        { 25, true, true },    /* cursor visible */
        { 45, false, true },   /* reverse wraparound */
        { 66, false, true },   /* application keypad */
        { 69, false, true },   /* left and right margins */
        { 1000, false, true }, /* mouse: press and release */
        { 1002, false, true }, /* mouse: drag */
        { 1003, false, true }, /* mouse: any motion */
        { 1004, false, true }, /* focus events */
        { 1005, false, true }, /* mouse: UTF-8 coordinates */
        { 1006, false, true }, /* mouse: SGR coordinates */
        { 1007, false, false },/* alternate scroll (its default is the user's) */
        { 1015, false, true }, /* mouse: urxvt coordinates */
        { 1016, false, true }, /* mouse: SGR pixels */
        { 1048, false, false },/* save/restore the cursor: an action, not a state */
        { 2004, false, true }, /* bracketed paste */
        { 2026, false, true }, /* synchronized output */
};

/* ANSI modes (CSI N h/l): insert and newline mode. Keyboard lock (2) and
 * local echo (12) are not a screen's. */
static const struct mode ansi_modes[] = {
        { 4, false, true },
        { 20, false, true },
};

#define N_PRIVATE (sizeof private_modes / sizeof private_modes[0])
#define N_ANSI (sizeof ansi_modes / sizeof ansi_modes[0])

struct out {
        char *p;
        size_t n;
};

static void put(struct out *o, unsigned char b) { o->p[o->n++] = (char)b; }

static void put_n(struct out *o, const void *s, size_t n)
{
        memcpy(o->p + o->n, s, n);
        o->n += n;
}

void term_filter_init(struct term_filter *f) { memset(f, 0, sizeof *f); }

/* The C0 controls a screen uses: BEL, BS, HT, LF, VT, FF, CR, SO, SI. */
static bool c0_passed(unsigned char b) { return b >= BEL && b <= SI; }

static void pass_c0(struct term_filter *f, unsigned char b, struct out *o)
{
        if (!c0_passed(b))
                return;
        if (b == SO)
                f->charset = true;
        put(o, b);
}

static void begin(struct term_filter *f, enum state s, const char *seq)
{
        f->state = (uint8_t)s;
        f->len = strlen(seq);
        memcpy(f->seq, seq, f->len);
}

static void begin_string(struct term_filter *f, bool osc)
{
        f->state = STRING;
        f->osc = osc;
        f->len = 0;
}

/* A C1 control (raw, or decoded from UTF-8): dropped; an introducer takes
 * its sequence with it. */
static void c1(struct term_filter *f, unsigned code)
{
        f->len = 0;
        f->state = GROUND;
        if (code == 0x9b)
                f->state = CSI_IGNORE;
        else if (code == 0x9d)
                begin_string(f, true);
        else if (code == 0x90 || code == 0x98 || code == 0x9e || code == 0x9f)
                begin_string(f, false);
}

static void ground(struct term_filter *f, unsigned char b, struct out *o)
{
        if (b >= 0x20 && b < 0x7f)
                put(o, b);
        else if (b == ESC)
                begin(f, ESCAPE, "\x1b");
        else if (b < 0x20)
                pass_c0(f, b, o);
        else if (b >= 0x80 && b <= 0x9f)
                c1(f, b);
        else if (b >= 0xc2 && b <= 0xf4) {
                f->state = UTF8;
                f->need = b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
                f->seq[0] = b;
                f->len = 1;
        }
        /* DEL, 0xA0-0xC1, 0xF5-0xFF: not text, dropped */
}

/* A byte of a multi-byte character. False: `b` ends it unfinished, and is
 * to be read again from GROUND. */
static bool utf8(struct term_filter *f, unsigned char b, struct out *o)
{
        f->state = GROUND;
        if ((b & 0xc0) != 0x80) {
                f->len = 0;
                return false;
        }
        f->seq[f->len++] = b;
        if (f->len < f->need) {
                f->state = UTF8;
                return true;
        }
        /* Whole: the one decoder says whether it is UTF-8 (no overlong
         * form, no surrogate, nothing above U+10FFFF). */
        uint32_t cp = 0;
        bool valid = utf8_decode((const char *)f->seq, f->len, &cp) == f->len;
        if (valid && cp >= 0x80 && cp <= 0x9f)
                c1(f, cp);
        else if (valid)
                put_n(o, f->seq, f->len);
        f->len = 0;
        return true;
}

static void string(struct term_filter *f, unsigned char b)
{
        if (b == ESC)
                f->state = STRING_ESC;
        else if ((b == BEL && f->osc) || b == CAN || b == SUB)
                f->state = GROUND;
}

/* ---- escape sequences ---- */

static void escape_final(struct term_filter *f, unsigned char b, struct out *o)
{
        bool ok = false;
        if (f->len == 1) {
                ok = strchr("78=>DEHM", b) != NULL;
        } else if (f->len == 2 && strchr("()*+-./", f->seq[1])) {
                ok = true; /* a charset designated: G0 to G3 */
                f->charset = true;
        } else if (f->len == 2 && f->seq[1] == '#') {
                ok = strchr("34568", b) != NULL; /* double size lines, the alignment test */
        }
        if (ok) {
                put_n(o, f->seq, f->len);
                put(o, b);
        }
        f->state = GROUND;
        f->len = 0;
}

static void escape(struct term_filter *f, unsigned char b, struct out *o)
{
        if (f->state == ESCAPE_IGNORE) {
                if (b >= 0x30)
                        f->state = GROUND;
                return;
        }
        if (f->state == ESCAPE && b == '[') {
                begin(f, CSI, "\x1b[");
        } else if (f->state == ESCAPE && b == ']') {
                begin_string(f, true);
        } else if (f->state == ESCAPE && (b == 'P' || b == 'X' || b == '^' || b == '_')) {
                begin_string(f, false);
        } else if (b < 0x30) {
                f->state = ESCAPE_INT;
                if (f->len < 4)
                        f->seq[f->len++] = b;
                else
                        f->state = ESCAPE_IGNORE;
        } else {
                escape_final(f, b, o);
        }
}

/* ---- CSI sequences ---- */

/* A CSI sequence, taken apart. */
struct csi {
        unsigned char prefix; /* '<', '=', '>', '?' or 0 */
        const unsigned char *params;
        size_t n_params;
        const unsigned char *inter;
        size_t n_inter;
        unsigned char final;
};

static struct csi csi_parse(const unsigned char *s, size_t len)
{
        struct csi c = { .final = s[len - 1] };
        const unsigned char *p = s + 2, *end = s + len - 1;
        if (p < end && *p >= '<' && *p <= '?')
                c.prefix = *p++;
        c.params = p;
        while (p < end && *p >= 0x30)
                p++;
        c.n_params = (size_t)(p - c.params);
        c.inter = p;
        c.n_inter = (size_t)(end - p);
        return c;
}

/* The parameters as numbers (empty ones -1), at most `max`; -1 when one is
 * not a plain number (a ':' sub-parameter, too many, too large). */
static int csi_numbers(const struct csi *c, long *v, int max)
{
        int n = 0;
        long cur = -1;
        for (size_t i = 0; i <= c->n_params; i++) {
                unsigned char b = i < c->n_params ? c->params[i] : ';';
                if (b == ';') {
                        if (n == max)
                                return -1;
                        v[n++] = cur;
                        cur = -1;
                } else if (b >= '0' && b <= '9') {
                        cur = (cur < 0 ? 0 : cur) * 10 + (b - '0');
                        if (cur > 99999)
                                return -1;
                } else {
                        return -1;
                }
        }
        return n;
}

static const struct mode *mode_find(const struct mode *table, size_t n, long v, size_t *index)
{
        for (size_t i = 0; i < n; i++)
                if (table[i].n == v) {
                        *index = i;
                        return &table[i];
                }
        return NULL;
}

static bool alternate_screen(const struct term_filter *f)
{
        return f->modes_changed & 0x7; /* 1049, 1047, 47: the table's first three */
}

/* CSI [?] N;... h/l: passed only when every mode is listed; the tracked
 * ones remembered. */
static bool set_modes(struct term_filter *f, const struct csi *c)
{
        const bool private = c->prefix == '?';
        const struct mode *table = private ? private_modes : ansi_modes;
        const size_t n_table = private ? N_PRIVATE : N_ANSI, shift = private ? 0 : N_PRIVATE;
        long v[16];
        size_t index[16];
        int n = csi_numbers(c, v, 16);
        if (n <= 0)
                return false;
        for (int i = 0; i < n; i++)
                if (!mode_find(table, n_table, v[i], &index[i]))
                        return false;
        if (c->final == 'r' || c->final == 's') /* restore or save the modes: no change known */
                return true;
        for (int i = 0; i < n; i++) {
                const struct mode *m = &table[index[i]];
                uint64_t bit = UINT64_C(1) << (index[i] + shift);
                if (!m->tracked)
                        continue;
                if ((c->final == 'h') != m->on_by_default)
                        f->modes_changed |= bit;
                else
                        f->modes_changed &= ~bit;
        }
        return true;
}

/* The kitty keyboard protocol's stack: CSI > flags u pushes, CSI < n u
 * pops n (1 when omitted), one stack per screen. */
static void keyboard_stack(struct term_filter *f, const struct csi *c)
{
        unsigned *pushes = &f->pushes[alternate_screen(f) ? 1 : 0];
        long v[1] = { -1 };
        if (c->prefix == '>' && *pushes < 64) {
                (*pushes)++;
        } else if (c->prefix == '<' && csi_numbers(c, v, 1) >= 0) {
                unsigned k = v[0] <= 0 ? 1 : v[0] > 64 ? 64 : (unsigned)v[0];
                *pushes -= k < *pushes ? k : *pushes;
        }
}

/* Is the whole CSI sequence one the table passes? Remembers what it changes. */
static bool csi_allowed(struct term_filter *f, const struct csi *c)
{
        if (c->n_inter == 1) {
                unsigned char i = c->inter[0];
                if (i == ' ' && c->final == 'q' && !c->prefix)
                        return true; /* DECSCUSR: the cursor's shape */
                return i == '$' && c->final == 'p' && (!c->prefix || c->prefix == '?'); /* DECRQM: a mode's state */
        }
        if (c->n_inter)
                return false;
        switch (c->prefix) {
        case 0:
                if (c->final == 'h' || c->final == 'l')
                        return set_modes(f, c);
                if (c->final == 'm')
                        f->sgr = true;
                if (c->final == 'r')
                        f->margins = c->n_params > 0;
                /* cursor, erase, insert and delete, scroll, tabs, SGR,
                 * reports (DA, DSR), scroll margins, save/restore cursor */
                return strchr("@ABCDEFGHIJKLMPSTXZ`abcdefgmnrsu", c->final) != NULL;
        case '?':
                if (strchr("hlrs", c->final))
                        return set_modes(f, c);
                return strchr("JKmnu", c->final) != NULL; /* selective erase, reports, the keyboard's flags */
        case '>':
                if (c->final == 'u')
                        keyboard_stack(f, c);
                if (c->final == 'm') { /* modifyOtherKeys only (xterm's key modifiers: vim's) */
                        long v[2];
                        bool ok = csi_numbers(c, v, 2) >= 1 && v[0] == 4;
                        f->modify_keys = f->modify_keys || ok;
                        return ok;
                }
                return strchr("cqu", c->final) != NULL; /* DA2, XTVERSION, a keyboard push */
        case '<':
                if (c->final == 'u')
                        keyboard_stack(f, c);
                return c->final == 'u';
        case '=':
                return c->final == 'c'; /* DA3 */
        default:
                return false;
        }
}

static void csi(struct term_filter *f, unsigned char b, struct out *o)
{
        if (f->state == CSI_IGNORE) {
                if (b >= 0x40)
                        f->state = GROUND;
                return;
        }
        bool after_inter = f->len > 2 && f->seq[f->len - 1] < 0x30;
        bool late_prefix = b >= '<' && b <= '?' && f->len > 2;
        if ((b < 0x40 && f->len == TERM_FILTER_SEQ_MAX - 1) || (b >= 0x30 && b < 0x40 && (after_inter || late_prefix))) {
                f->state = CSI_IGNORE; /* too long, or malformed: a terminal ignores it too */
                f->len = 0;
                return;
        }
        f->seq[f->len++] = b;
        if (b < 0x40)
                return;
        struct csi c = csi_parse(f->seq, f->len);
        if (csi_allowed(f, &c))
                put_n(o, f->seq, f->len);
        f->state = GROUND;
        f->len = 0;
}

/* A byte inside an escape or CSI sequence. False: it ended the sequence
 * and is to be read again from GROUND. */
static bool sequence(struct term_filter *f, unsigned char b, struct out *o)
{
        if (b >= 0x80) { /* not part of a sequence: it is dropped, the byte read as text */
                f->state = GROUND;
                f->len = 0;
                return false;
        }
        if (b == ESC) {
                begin(f, ESCAPE, "\x1b");
        } else if (b == CAN || b == SUB) {
                f->state = GROUND;
                f->len = 0;
        } else if (b < 0x20) {
                pass_c0(f, b, o); /* executed in the middle of a sequence, as a terminal does */
        } else if (b == 0x7f) {
                /* ignored inside a sequence */
        } else if (f->state == CSI || f->state == CSI_IGNORE) {
                csi(f, b, o);
        } else {
                escape(f, b, o);
        }
        return true;
}

static bool consume(struct term_filter *f, unsigned char b, struct out *o)
{
        switch ((enum state)f->state) {
        case GROUND:
                ground(f, b, o);
                return true;
        case UTF8:
                return utf8(f, b, o);
        case STRING:
                string(f, b);
                return true;
        case STRING_ESC:
                if (b == '\\') {
                        f->state = GROUND;
                        return true;
                }
                /* Any other escape ends the string and starts a sequence. */
                begin(f, ESCAPE, "\x1b");
                return false;
        default:
                return sequence(f, b, o);
        }
}

size_t term_filter_feed(struct term_filter *f, const char *in, size_t n, char *out)
{
        struct out o = { out, 0 };
        for (size_t i = 0; i < n; i++)
                while (!consume(f, (unsigned char)in[i], &o)) {
                }
        return o.n;
}

static void put_str(struct out *o, const char *s) { put_n(o, s, strlen(s)); }

static void put_mode(struct out *o, bool private, const struct mode *m)
{
        char buf[16];
        snprintf(buf, sizeof buf, "\x1b[%s%u%c", private ? "?" : "", m->n, m->on_by_default ? 'h' : 'l');
        put_str(o, buf);
}

size_t term_filter_end(struct term_filter *f, char *out)
{
        struct out o = { out, 0 };
        char buf[32];
        if (f->pushes[1] && alternate_screen(f)) { /* the alternate screen's own stack, while it is shown */
                snprintf(buf, sizeof buf, "\x1b[<%uu", f->pushes[1]);
                put_str(&o, buf);
        }
        for (size_t i = 0; i < N_PRIVATE; i++)
                if (f->modes_changed & (UINT64_C(1) << i))
                        put_mode(&o, true, &private_modes[i]);
        for (size_t i = 0; i < N_ANSI; i++)
                if (f->modes_changed & (UINT64_C(1) << (N_PRIVATE + i)))
                        put_mode(&o, false, &ansi_modes[i]);
        if (f->pushes[0]) {
                snprintf(buf, sizeof buf, "\x1b[<%uu", f->pushes[0]);
                put_str(&o, buf);
        }
        if (f->modify_keys)
                put_str(&o, "\x1b[>4m");
        if (f->margins)
                put_str(&o, "\x1b" "7\x1b[r\x1b" "8"); /* the margins reset home the cursor: keep it */
        if (f->sgr)
                put_str(&o, "\x1b[m");
        if (f->charset)
                put_str(&o, "\x0f\x1b(B");
        term_filter_init(f);
        return o.n;
}
