#define _GNU_SOURCE
#include "base/strv.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

void strv_add_take(struct strv *s, char *x)
{
        GREEDY_REALLOC(s->v, s->cap, s->n + 2);
        s->v[s->n++] = x;
        s->v[s->n] = NULL;
}

void strv_add(struct strv *s, const char *x) { strv_add_take(s, xstrdup(x)); }

void strv_addf(struct strv *s, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *p = xvasprintf(fmt, ap);
        va_end(ap);
        strv_add_take(s, p);
}

bool strv_contains(const struct strv *s, const char *x)
{
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->v[i], x) == 0)
                        return true;
        return false;
}

void strv_done_erase(struct strv *s)
{
        for (size_t i = 0; i < s->n; i++) {
                erase_and_free(s->v[i]);
                s->v[i] = NULL;
        }
        strv_done(s);
}

void strv_done(struct strv *s)
{
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i]);
        free(s->v);
        s->v = NULL;
        s->n = s->cap = 0;
}
