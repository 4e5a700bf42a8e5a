/* libFuzzer target: the bounded line reader, lines_read_fd(), against a
 * plain model of it.
 *
 * The input's first 4 bytes choose the limits (max_bytes, max_line, tail,
 * the needles); the rest is the file, put in a memfd. The lines handed on,
 * the long lines counted and the cut must be exactly those of the model
 * below: split the part of the file the limits read at each '\n' (a tail
 * from its first whole line; a last line without '\n' counted unless a
 * head limit cut it), keep the lines holding a needle, skip (and count)
 * those over max_line. Each line handed on holds no '\n', is NUL-terminated
 * where it ends and is no longer than max_line. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/lines.h"

#define FUZZ_TARGET "fuzz_lines"
#include "fuzz.h"

struct seen {
        const char *want;  /* the model's lines, each followed by a NUL */
        size_t want_len, at;
        size_t max_line;
};

static int compare(char *line, size_t len, void *ctx)
{
        struct seen *s = ctx;
        check(line[len] == '\0', "a line is NUL-terminated where it ends");
        check(len <= s->max_line, "no line over max_line is handed on");
        check(memchr(line, '\n', len) == NULL, "no line holds a newline");
        check(s->at + len + 1 <= s->want_len, "no more lines than the model's");
        check(memcmp(s->want + s->at, line, len) == 0 && s->want[s->at + len] == '\0', "the model's line, in order");
        s->at += len + 1;
        return 0;
}

/* The model: the lines of data[start, end) into `out` (each NUL-ended). */
static size_t model(const char *d, size_t start, size_t end, bool last_counts, const struct lines_limits *lim,
                    char *out, size_t *long_lines)
{
        size_t n = 0;
        *long_lines = 0;
        for (size_t i = start; i < end;) {
                const char *nl = memchr(d + i, '\n', end - i);
                size_t len = nl ? (size_t)(nl - (d + i)) : end - i;
                if (nl || last_counts) {
                        bool hit = lines_has_needle(d + i, len, lim->needles);
                        if (hit && len > lim->max_line)
                                (*long_lines)++;
                        else if (hit) {
                                memcpy(out + n, d + i, len);
                                out[n + len] = '\0';
                                n += len + 1;
                        }
                }
                i += len + 1;
        }
        return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const char *const none[] = { NULL };
        static const char *const one[] = { "usage", NULL };
        static const char *const two[] = { "\"a\"", "b\nb", NULL };
        if (size < 4 || size > 1 << 20)
                return 0;
        const char *file = (const char *)data + 4;
        size_t len = size - 4;
        struct lines_limits lim = {
                .max_bytes = 1 + data[0] * 4u,
                .max_line = 1 + data[1] % 64u,
                .tail = data[2] & 1,
                .needles = (data[3] % 3) == 0 ? NULL : (data[3] % 3) == 1 ? one : two,
        };
        if (data[2] & 2)
                lim.needles = none; /* an empty list: no line holds a needle */

        int fd = memfd_create("fuzz-lines", MFD_CLOEXEC);
        check(fd >= 0, "a memfd");
        check(write(fd, file, len) == (ssize_t)len, "the file written");

        /* What the limits read of it. */
        bool cut = len > lim.max_bytes;
        size_t start = 0, end = len;
        if (cut && lim.tail) {
                start = len - lim.max_bytes;
                if (file[start - 1] != '\n') { /* from the first whole line */
                        const char *nl = memchr(file + start, '\n', len - start);
                        start = nl ? (size_t)(nl - file) + 1 : len;
                }
        } else if (cut) {
                end = lim.max_bytes;
        }
        char *want = malloc(len + 1);
        size_t long_lines;
        size_t want_len = model(file, start, end, !cut || lim.tail, &lim, want, &long_lines);

        struct seen s = { .want = want, .want_len = want_len, .max_line = lim.max_line };
        struct lines_stats st;
        int r = lines_read_fd(fd, &lim, compare, &s, &st);
        check(r == 0, "a memfd is read whole");
        check(s.at == want_len, "every line of the model is handed on");
        check(st.cut == cut, "the cut is said exactly when the file is over max_bytes");
        check(st.long_lines == long_lines, "the long lines with a needle are counted");
        free(want);
        close(fd);
        return 0;
}
