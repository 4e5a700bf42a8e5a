/* Small macros every module may use. */
#ifndef TB_MACRO_H
#define TB_MACRO_H

#include <stdlib.h>

/* The number of elements of the array `a` (not a pointer). */
#define TB_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* qsort(), which may not be given a null array even to sort nothing (C11
 * 7.22.5: UBSan checks it): an empty or one-element array is left as is. */
static inline void tb_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
        if (n > 1)
                qsort(base, n, size, cmp);
}

#endif
