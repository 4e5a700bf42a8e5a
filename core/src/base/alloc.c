#define _GNU_SOURCE
#include "base/alloc.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void oom(void)
{
        static const char m[] = "trialbox: out of memory\n"; /* not the logger: it allocates */
        if (write(STDERR_FILENO, m, sizeof m - 1) < 0) {
        }
        abort();
}

void *xmalloc(size_t n)
{
        void *p = malloc(n ? n : 1);
        if (!p)
                oom();
        return p;
}

void *xcalloc(size_t n, size_t m)
{
        void *p = calloc(n ? n : 1, m ? m : 1);
        if (!p)
                oom();
        return p;
}

void *xrealloc(void *p, size_t n)
{
        p = realloc(p, n ? n : 1);
        if (!p)
                oom();
        return p;
}

char *xstrdup(const char *s)
{
        char *p = strdup(s);
        if (!p)
                oom();
        return p;
}

char *xstrndup(const char *s, size_t n)
{
        char *p = strndup(s, n);
        if (!p)
                oom();
        return p;
}

/* Formatted once into a buffer on the stack, and copied to an allocation
 * of the size it took: most strings here are short paths, and vasprintf
 * grows and shrinks a heap buffer for each. A longer one is formatted
 * again into its exact size. */
char *xvasprintf(const char *fmt, va_list ap)
{
        char buf[256];
        va_list again;
        va_copy(again, ap);
        int n = vsnprintf(buf, sizeof buf, fmt, ap);
        if (n < 0)
                oom();
        char *p = xmalloc((size_t)n + 1);
        if ((size_t)n < sizeof buf)
                memcpy(p, buf, (size_t)n + 1);
        else if (vsnprintf(p, (size_t)n + 1, fmt, again) != n)
                oom();
        va_end(again);
        return p;
}

char *xasprintf(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *p = xvasprintf(fmt, ap);
        va_end(ap);
        return p;
}

void *tb_greedy_realloc(void *p, size_t *cap, size_t need, size_t elem_size)
{
        size_t n = *cap ? *cap : 4;
        while (n < need) {
                if (n > SIZE_MAX / 2 / elem_size)
                        oom();
                n *= 2;
        }
        p = xrealloc(p, n * elem_size);
        *cap = n;
        return p;
}

void erase_and_free(void *p)
{
        if (!p)
                return;
        explicit_bzero(p, malloc_usable_size(p));
        free(p);
}
