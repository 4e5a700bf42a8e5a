#define _GNU_SOURCE
#include "cmd/exit.h"

#include <stdarg.h>
#include <stdio.h>

#include "base/log.h"
#include "base/util.h"

int cli_usage_error(const char *command, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        log_error("%s; see 'trialbox %s%s--help'", msg ? msg : "usage error", command ? command : "",
                  command ? " " : "");
        return TB_EXIT_USAGE;
}

int cli_fail(int status, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        log_error("%s", msg ? msg : "error");
        return status;
}
