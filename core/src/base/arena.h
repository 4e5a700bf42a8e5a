/* An arena: many small allocations that live and die together (a plan's
 * strings and records), carved one after the other out of large blocks and
 * freed all at once. Each costs its size (and its alignment), where a
 * malloc'd one costs a header and a rounding too; none can be freed alone.
 * Zero-initialise; allocations never return NULL (they abort when out of
 * memory, as xmalloc). Not for secrets: nothing is erased. */
#ifndef TB_ARENA_H
#define TB_ARENA_H

#include <stddef.h>

struct arena_block;
struct arena {
        struct arena_block *blocks; /* the newest first: the one being carved */
};

/* `size` zeroed bytes aligned to `align` (a power of two, at most
 * alignof(max_align_t)); owned by the arena. */
void *arena_alloc(struct arena *a, size_t size, size_t align);
/* A copy of `s` (NUL-terminated), owned by the arena. */
char *arena_strdup(struct arena *a, const char *s);
/* Free every allocation of the arena; it is left empty, reusable. */
void arena_done(struct arena *a);

#endif
