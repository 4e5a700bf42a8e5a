/* Errors in crun's style: a fallible function returns 0 or a negative errno
 * and fills a struct tb_error, which callers wrap with context on the way up
 * ("loading plugin '/x.so': undefined symbol ..."). The message is printed
 * once, by the command layer; strerror() is added where it is first made
 * from an errno, never again on the way up. */
#ifndef TB_ERROR_H
#define TB_ERROR_H

#include <errno.h>

struct tb_error {
        int code;        /* negative errno */
        char msg[1024];  /* one line, lowercase, says what is wrong and what to do */
};

/* Set err (if not NULL) and return `code` (a negative errno). A macro so
 * that callers (and static analysers) see the value returned is `code`. */
void tb_fail_set(struct tb_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define tb_fail(err, code, ...)                                  \
        __extension__({                                          \
                int tb_code_ = (code);                           \
                tb_fail_set((err), tb_code_, __VA_ARGS__);       \
                tb_code_;                                        \
        })
/* Put context before err's message on the way up: "loading plugin 'x': <old>".
 * Returns err->code. */
int tb_wrap(struct tb_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
