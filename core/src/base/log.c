#define _GNU_SOURCE
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sink.h"
#include "base/str.h"

static int log_verbosity = 1;

/* stderr as the logger writes it: a reader that stopped never blocks
 * trialbox (base/sink.h); what it has not taken is given a second at exit. */
static struct sink log_sink;
static bool log_sink_ready;

static void log_sink_drain(void)
{
        sink_drain(&log_sink, 1000);
        sink_done(&log_sink);
}

static void log_write(const char *line)
{
        if (!log_sink_ready) {
                fflush(stderr);
                sink_init(&log_sink, STDERR_FILENO, 256u << 10);
                log_sink_ready = true;
                atexit(log_sink_drain);
        }
        sink_write(&log_sink, line, strlen(line));
}

void log_forked(void)
{
        if (log_sink_ready) {
                sink_done(&log_sink); /* unwritten: the parent's, not this child's */
                log_sink_ready = false;
        }
        log_verbosity = 1;
}

void log_end(void)
{
        if (log_sink_ready) {
                log_sink_drain();
                log_sink_ready = false;
        }
}

void log_set_verbosity(int verbosity) { log_verbosity = verbosity; }
int log_get_verbosity(void) { return log_verbosity; }

/* The one place a line reaches stderr: prefix, who, tag, the escaped text. */
static void vlog(int level, const char *who, const char *tag, const char *fmt, va_list ap)
        __attribute__((format(printf, 4, 0)));
static void vlog(int level, const char *who, const char *tag, const char *fmt, va_list ap)
{
        if (level > log_verbosity)
                return;
        _cleanup_free_ char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) < 0)
                return;
        _cleanup_free_ char *shown = str_escape(msg);
        _cleanup_free_ char *line = NULL;
        if (asprintf(&line, LOG_PREFIX "%s%s%s%s\n", who ? who : "", who ? ": " : "", tag, shown) < 0)
                return;
        log_write(line);
}

void log_fullv(int level, const char *who, const char *fmt, va_list ap)
{
        vlog(level, who, level == 1 ? "warning: " : "", fmt, ap);
}

void log_print(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = NULL;
        int r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        _cleanup_free_ char *shown = str_escape(msg);
        printf("%s\n", shown);
}

void log_full(int level, const char *who, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        log_fullv(level, who, fmt, ap);
        va_end(ap);
}

#define LOG_AT(name, level, tag)                      \
        void name(const char *fmt, ...)               \
        {                                             \
                va_list ap;                           \
                va_start(ap, fmt);                    \
                vlog((level), NULL, (tag), fmt, ap);  \
                va_end(ap);                           \
        }

LOG_AT(log_error, 0, "")
LOG_AT(log_warn, 1, "warning: ")
LOG_AT(log_notice, 1, "")
LOG_AT(log_info, 2, "")
