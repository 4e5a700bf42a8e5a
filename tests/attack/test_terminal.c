/* A session's output on the terminal trialbox runs on: trialbox runs under a
 * real pty here (its controlling terminal), the `shell` Harness prints what a hostile session
 * would (a clipboard write, a window title, a DCS, window manipulation, raw
 * C1 controls, sequences split across writes) among what a TUI draws with,
 * and the bytes that reach the pty's master are checked. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "tb_test.h"

struct pty_run {
        char *out; /* everything the terminal received, NULs kept */
        size_t len;
        int status;
};

/* Run trialbox for the `shell` Harness with `script` as its session, on a
 * pty of 80x24; read all it writes until it exits. */
static void run_on_pty(struct pty_run *r, const struct fixture *f, const char *script)
{
        char *argv[64];
        tb_argv(argv, 64, "shell", f, EXTRA("--", "-c", script));
        _cleanup_free_ char *slave = NULL;
        int master = pty_open(&slave);
        struct winsize ws = { .ws_row = 24, .ws_col = 80 };
        ck_assert_int_eq(ioctl(master, TIOCSWINSZ, &ws), 0);
        /* Its controlling terminal, in the foreground: stdin, stdout and stderr. */
        pid_t pid = spawn(tb_env(NULL), argv, &(struct tb_spawn_io){ .tty = slave });
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        for (;;) {
                struct pollfd p = { master, POLLIN, 0 };
                int k = poll(&p, 1, 30000);
                ck_assert_msg(k > 0, "trialbox on the pty wrote nothing for 30 s; so far: %s", sb.s);
                char buf[4096];
                ssize_t n = read(master, buf, sizeof buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) /* EIO: the last slave is closed */
                        break;
                size_t old = sb.len;
                sb.s = xrealloc(sb.s, old + (size_t)n + 1);
                memcpy(sb.s + old, buf, (size_t)n);
                sb.len = old + (size_t)n;
                sb.s[sb.len] = '\0';
        }
        close(master);
        r->status = wait_status(pid);
        r->out = sb.s;
        r->len = sb.len;
}

static bool holds(const struct pty_run *r, const char *s)
{
        return memmem(r->out, r->len, s, strlen(s)) != NULL;
}

#define assert_reached(r, s)                                                                                      \
        do {                                                                                                      \
                _cleanup_free_ char *e_ = str_escape(s), *o_ = str_escape((r)->out);                             \
                ck_assert_msg(holds((r), (s)), "'%s' did not reach the terminal; it got: %s", e_, o_);           \
        } while (0)
#define assert_not_reached(r, s)                                                                                  \
        do {                                                                                                      \
                _cleanup_free_ char *e_ = str_escape(s), *o_ = str_escape((r)->out);                             \
                ck_assert_msg(!holds((r), (s)), "'%s' reached the terminal: %s", e_, o_);                        \
        } while (0)

/* What a hostile session prints among a TUI's own sequences; the `split`
 * parts are written in two writes a moment apart: two reads for the relay. */
#define HOSTILE_SCRIPT                                                                                             \
        "printf '\\033]52;c;cm0gLXJmIH4K\\007'; "                   /* OSC 52: the clipboard */                \
        "printf '\\033]0;pwned-title\\007'; "                       /* the window's title */                   \
        "printf '\\033]8;;http://evil.example/\\033\\\\link\\033]8;;\\033\\\\ '; " /* a hyperlink */           \
        "printf '\\033P$qm\\033\\\\'; "                             /* DCS: a status request */                 \
        "printf '\\033_Gf=100;AAAA\\033\\\\'; "                     /* APC: an image */                         \
        "printf '\\033[8;1;1t\\033[21t'; "                          /* resize the window, report its title */  \
        "printf '\\2332J\\235 0;c1-title\\007'; "                   /* raw C1 CSI and OSC */                    \
        "printf '\\033[31mRED\\033[0m\\033[5;10H'; "                /* SGR and a cursor move */                 \
        "printf '\\033[?25l\\033[?25h\\033[?2004h\\033[?2004l'; "   /* cursor visibility, bracketed paste */    \
        "printf '\\033]2;split-'; sleep 0.3; printf 'title\\007AFTER '; " /* an OSC across two reads */         \
        "printf '\\033[3'; sleep 0.3; printf '2mGREEN\\n'; "         /* a CSI across two reads */                \
        "printf '\\033]0;err-title\\007ERRTEXT\\n' >&2"             /* the same on stderr */

START_TEST(a_session_on_a_terminal_draws_its_screen_and_reaches_nothing_beyond)
{
        struct fixture f;
        struct pty_run r;
        fixture_new(&f);
        run_on_pty(&r, &f, HOSTILE_SCRIPT);
        ck_assert_msg(r.status == 0, "trialbox exited %d: %s", r.status, r.out);
        /* What a TUI draws with. */
        assert_reached(&r, "\x1b[31mRED\x1b[0m\x1b[5;10H");
        assert_reached(&r, "\x1b[?25l\x1b[?25h\x1b[?2004h\x1b[?2004l");
        assert_reached(&r, "\x1b[32mGREEN");
        assert_reached(&r, "link");
        assert_reached(&r, "AFTER");
        assert_reached(&r, "ERRTEXT");
        /* What reaches beyond the screen. */
        assert_not_reached(&r, "\x1b]");
        assert_not_reached(&r, "52;c");
        assert_not_reached(&r, "cm0gLXJmIH4K");
        assert_not_reached(&r, "pwned-title");
        assert_not_reached(&r, "evil.example");
        assert_not_reached(&r, "\x1bP");
        assert_not_reached(&r, "\x1b_");
        assert_not_reached(&r, "$qm");
        assert_not_reached(&r, "AAAA");
        assert_not_reached(&r, "[8;1;1t");
        assert_not_reached(&r, "[21t");
        assert_not_reached(&r, "\x9b");
        assert_not_reached(&r, "\x9d");
        assert_not_reached(&r, "c1-title");
        assert_not_reached(&r, "split-");
        assert_not_reached(&r, "err-title");
        assert_outcome(&f, "outcome", "completed");
        free(r.out);
        fixture_free(&f);
}
END_TEST

START_TEST(a_session_that_leaves_its_modes_on_has_them_put_back)
{
        /* A TUI that dies on the alternate screen, mouse reporting on, the
         * cursor hidden, bracketed paste on: the user's shell must not
         * inherit that. */
        struct fixture f;
        struct pty_run r;
        fixture_new(&f);
        run_on_pty(&r, &f, "printf '\\033[?1049h\\033[?1000;1006h\\033[?25l\\033[?2004h\\033[1;31mtui'; kill -9 $$");
        ck_assert_int_ne(r.status, 0);
        assert_reached(&r, "\x1b[?1049h\x1b[?1000;1006h\x1b[?25l\x1b[?2004h\x1b[1;31mtui");
        assert_reached(&r, "tui\x1b[?1049l\x1b[?25h\x1b[?1000l\x1b[?1006l\x1b[?2004l\x1b[m");
        free(r.out);
        fixture_free(&f);
}
END_TEST

START_TEST(output_to_a_file_or_pipe_is_kept_byte_for_byte)
{
        /* Not a terminal: the session's output is data for the record. */
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        tb_shell(&r, &f, NULL,
                 EXTRA("--", "-c", "printf '\\033]52;c;eA==\\007\\033]0;t\\007\\233x\\033[8;1;1t\\033[31mR\\n'"));
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_str_eq(r.out, "\x1b]52;c;eA==\a\x1b]0;t\a\x9bx\x1b[8;1;1t\x1b[31mR\n");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

TB_SUITE("terminal", 0)
{
        tcase_add_test(tc, a_session_on_a_terminal_draws_its_screen_and_reaches_nothing_beyond);
        tcase_add_test(tc, a_session_that_leaves_its_modes_on_has_them_put_back);
        tcase_add_test(tc, output_to_a_file_or_pipe_is_kept_byte_for_byte);
}
