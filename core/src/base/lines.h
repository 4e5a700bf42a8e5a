/* Reading a file a line at a time, bounded: for logs and JSON Lines files a
 * hostile session may have written (a transcript of 100 MB, a line of 1 GB,
 * no newline at all). Nothing is held but the line at hand: at most
 * `max_line` bytes, whatever the file. Nothing here prints. */
#ifndef TB_BASE_LINES_H
#define TB_BASE_LINES_H

#include <stdbool.h>
#include <stddef.h>

#define LINES_NEEDLE_MAX 63 /* bytes of one needle */

struct lines_limits {
        size_t max_bytes; /* read at most this much of the file (> 0) */
        size_t max_line;  /* a longer line is skipped, never held (> 0) */
        bool tail;        /* a file over max_bytes: its last max_bytes (from the first whole line), not its first */
        /* Only the lines holding one of these (NULL-terminated, each 1 to
         * LINES_NEEDLE_MAX bytes) are handed on; NULL: every line. */
        const char *const *needles;
};

struct lines_stats {
        size_t lines;      /* lines handed to `fn` */
        size_t long_lines; /* lines over max_line that held a needle (or any, without needles): skipped */
        bool cut;          /* the file is longer than max_bytes: part of it was not read */
};

/* Called for each line (without its '\n'; NUL-terminated at line[len],
 * though a NUL may be inside): 0 goes on, anything else stops the reading
 * and is returned. */
typedef int (*lines_fn)(char *line, size_t len, void *ctx);

/* Read the regular file open at `fd` (from its start, whatever its offset:
 * pread) line by line as `lim` says, handing each line to `fn`; a last line
 * without a '\n' is a line too, but one cut by max_bytes is not. `st` (may
 * be NULL) is filled. 0, what `fn` returned, -EINVAL for a bad limit or a
 * file that is not regular, or a read's negative errno. */
int lines_read_fd(int fd, const struct lines_limits *lim, lines_fn fn, void *ctx, struct lines_stats *st);

/* Does the line `s` of `n` bytes hold one of `needles` (NULL: yes)? */
bool lines_has_needle(const char *s, size_t n, const char *const *needles);

#endif
