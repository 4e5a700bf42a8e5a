/* Small macros every module may use. */
#ifndef TB_MACRO_H
#define TB_MACRO_H

/* The number of elements of the array `a` (not a pointer). */
#define TB_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
