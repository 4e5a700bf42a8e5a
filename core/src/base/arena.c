#include "base/arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

/* A block's room: allocations larger than a quarter of it get a block of
 * their own, so that a block wastes at most a quarter at its end. */
#define ARENA_BLOCK_SIZE ((size_t)32 * 1024)

struct arena_block {
        struct arena_block *next;
        size_t size, used;
        max_align_t data[]; /* `size` bytes */
};

static struct arena_block *block_new(size_t size)
{
        if (size > SIZE_MAX / 2)
                abort(); /* no such request is made: sizes are a plan line's */
        struct arena_block *b = xmalloc(sizeof *b + size);
        b->next = NULL;
        b->size = size;
        b->used = 0;
        return b;
}

void *arena_alloc(struct arena *a, size_t size, size_t align)
{
        struct arena_block *b = a->blocks;
        size_t at = b ? (b->used + align - 1) & ~(align - 1) : 0;
        if (!b || at > b->size || size > b->size - at) {
                if (size > ARENA_BLOCK_SIZE / 4) {
                        /* Its own block, behind the one being carved. */
                        struct arena_block *big = block_new(size);
                        big->used = size;
                        big->next = b ? b->next : NULL;
                        if (b)
                                b->next = big;
                        else
                                a->blocks = big;
                        return memset(big->data, 0, size);
                }
                b = block_new(ARENA_BLOCK_SIZE);
                b->next = a->blocks;
                a->blocks = b;
                at = 0;
        }
        b->used = at + size;
        return memset((char *)b->data + at, 0, size);
}

char *arena_strdup(struct arena *a, const char *s)
{
        size_t n = strlen(s) + 1;
        return memcpy(arena_alloc(a, n, 1), s, n);
}

void arena_done(struct arena *a)
{
        while (a->blocks) {
                struct arena_block *next = a->blocks->next;
                free(a->blocks);
                a->blocks = next;
        }
}
