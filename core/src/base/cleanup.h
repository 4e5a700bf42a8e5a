/* Cleanup attributes and ownership transfer (bubblewrap, systemd): a
 * variable declared with _cleanup_xxx_ is released when it goes out of
 * scope; TAKE_PTR/TAKE_FD hand its value on and leave it empty, so the
 * cleanup then does nothing.
 *
 *   _cleanup_free_ char *s = xstrdup("x");
 *   _cleanup_close_ int fd = open(...);
 *   ...
 *   *out = TAKE_PTR(s);       // s is NULL now
 *   return TAKE_FD(fd);       // fd is -1 now
 *
 * DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) defines `funcp(type *)`, which
 * calls func(*p) when *p is not NULL, for _cleanup_(funcp). Cleanups of
 * libraries other than libc are defined in the layers that link them
 * (model/jsonc.h for json-c, plugin/loader.c for dlopen): base links alone. */
#ifndef TB_CLEANUP_H
#define TB_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

/* `funcp(type *p)`: func(*p) unless *p is NULL; errno kept. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)         \
        static inline void func##p(type *p)             \
        {                                               \
                if (*p) {                               \
                        int saved_ = errno;             \
                        func(*p);                       \
                        errno = saved_;                 \
                }                                       \
        }

/* The value of `var`, which is left `empty` (typed, evaluated once). */
#define TB_TAKE_GENERIC(var, type, empty)                       \
        __extension__({                                         \
                type *tb_pvar_ = &(var);                        \
                type tb_var_ = *tb_pvar_;                       \
                *tb_pvar_ = (empty);                            \
                tb_var_;                                        \
        })
/* The pointer in `ptr` (an lvalue), which is left NULL. */
#define TAKE_PTR(ptr) TB_TAKE_GENERIC(ptr, __typeof__(ptr), NULL)
/* The fd in `fd` (an int lvalue), which is left -1. */
#define TAKE_FD(fd) TB_TAKE_GENERIC(fd, int, -1)
/* The older spelling, kept for callers not yet converted (cmd/): the
 * pointer at `pp`, left NULL. New code uses TAKE_PTR(*pp). */
#define steal_pointer(pp) TAKE_PTR(*(pp))

static inline void tb_freep(void *p) { free(*(void **)p); }
#define _cleanup_free_ _cleanup_(tb_freep)

/* Closes *fd when it is >= 0 and sets it to -1; errno kept. */
static inline void tb_closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                *fd = -1;
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(tb_closep)

/* Both ends of a pipe (int p[2], -1 for a closed end). */
static inline void tb_close_pairp(int (*p)[2])
{
        tb_closep(&(*p)[0]);
        tb_closep(&(*p)[1]);
}
#define _cleanup_close_pair_ _cleanup_(tb_close_pairp)

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)
#define _cleanup_closedir_ _cleanup_(closedirp)
DEFINE_TRIVIAL_CLEANUP_FUNC(FILE *, fclose)
#define _cleanup_fclose_ _cleanup_(fclosep)

#endif
