#define _GNU_SOURCE
#include "base/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/cleanup.h"

void tb_fail_set(struct tb_error *err, int code, const char *fmt, ...)
{
        if (err) {
                int saved = errno;
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(err->msg, sizeof err->msg, fmt, ap);
                va_end(ap);
                err->code = code;
                errno = saved;
        }
}

int tb_wrap(struct tb_error *err, const char *fmt, ...)
{
        _cleanup_free_ char *prefix = NULL, *whole = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&prefix, fmt, ap) < 0)
                prefix = NULL;
        va_end(ap);
        whole = xasprintf("%s: %s", prefix ? prefix : "", err->msg);
        size_t n = strlen(whole);
        if (n >= sizeof err->msg)
                n = sizeof err->msg - 1;
        memcpy(err->msg, whole, n);
        err->msg[n] = '\0';
        return err->code;
}
