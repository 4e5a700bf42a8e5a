/* trialbox's own messages on stderr: one logger, its verbosity set once by
 * the command layer (crun's libcrun_set_verbosity), the "trialbox: " prefix
 * written in one place. Library code does not log: it returns a struct
 * tb_error and the command prints it here.
 *
 * Every message is passed through str_escape() whole, so user input quoted in
 * it (paths, arguments, a plugin's text) sends the terminal no control
 * character or escape sequence.
 *
 * A reader of stderr that stops reading never blocks trialbox (base/sink.h):
 * what it has not taken is held (256 KiB), the rest dropped, and at exit it
 * gets a second without progress before the rest is dropped. */
#ifndef TB_LOG_H
#define TB_LOG_H

#include <stdarg.h>

#define LOG_PREFIX "trialbox: "

/* Verbosity: 0 (-q: errors only), 1 (default: warnings and the summary
 * line), 2 (-v: what is done), 3 (-vv: more). Default 1. */
void log_set_verbosity(int verbosity);
int log_get_verbosity(void);

/* For a child that goes on without an exec (`batch` runs each Trial in a
 * fork of itself): log_forked() begins again as a new process would (the
 * default verbosity; what the parent held for its stderr dropped unwritten,
 * the fd it opened for it closed), before the child moves its fds;
 * log_end() gives stderr what it holds (what exit() would), before _exit. */
void log_forked(void);
void log_end(void);

/* One line each, printf-like, no trailing newline in `fmt`. */
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));   /* always */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));    /* >= 1, "warning: " */
void log_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));  /* >= 1 */
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));    /* >= 2 */

/* One line of a command's own output on stdout (a table row of `check` or
 * `harnesses`), passed through str_escape() like every log line: it quotes
 * paths and plugin text. No prefix, never filtered by the verbosity. */
void log_print(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A line at `level` (0 error, 1 warning, 2 info, 3 debug), shown when level
 * <= verbosity; `who` (may be NULL) follows the prefix: "trialbox: codex: …".
 * The plugins' log and note services end here. */
void log_fullv(int level, const char *who, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
void log_full(int level, const char *who, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
