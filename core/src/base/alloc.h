/* Memory: allocations that never return NULL (they abort with a message
 * when out of memory: trialbox has no way to go on without memory), the one
 * growth macro, and erasing what held a secret. */
#ifndef TB_ALLOC_H
#define TB_ALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* The first n bytes of s (fewer when it ends before), NUL-terminated. */
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Make room for `need` elements in the array `p` whose capacity is `cap`
 * (both updated), growing it geometrically (systemd's GREEDY_REALLOC): the
 * one way the core grows an array. Aborts when out of memory, as xrealloc. */
#define GREEDY_REALLOC(p, cap, need)                                                    \
        do {                                                                            \
                if ((need) > (cap))                                                     \
                        (p) = tb_greedy_realloc((p), &(cap), (need), sizeof *(p));      \
        } while (0)
void *tb_greedy_realloc(void *p, size_t *cap, size_t need, size_t elem_size);

/* Erase the whole allocation at `p` (explicit_bzero over its usable size),
 * then free it; NULL is fine. For anything that held a secret. */
void erase_and_free(void *p);
static inline void erase_and_freep(void *p) { erase_and_free(*(void **)p); }
#define _cleanup_erase_ __attribute__((cleanup(erase_and_freep)))

#endif
