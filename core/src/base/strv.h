/* A growable NULL-terminated vector of owned strings (an argv, an
 * environment). Zero-initialise; `v` is NULL until something is added. */
#ifndef TB_STRV_H
#define TB_STRV_H

#include <stdbool.h>
#include <stddef.h>

struct strv {
        char **v;
        size_t n, cap;
};
void strv_add(struct strv *s, const char *x);           /* copies x */
void strv_add_take(struct strv *s, char *x);             /* takes ownership */
void strv_addf(struct strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool strv_contains(const struct strv *s, const char *x);
/* Free the strings and the vector's array; `s` is left empty, reusable. */
void strv_done(struct strv *s);
/* The same, erasing each string first (an environment with secrets). */
void strv_done_erase(struct strv *s);
#define _cleanup_strv_ __attribute__((cleanup(strv_done)))
#define _cleanup_strv_erase_ __attribute__((cleanup(strv_done_erase)))

#endif
