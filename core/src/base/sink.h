/* Output to a consumer that may stop reading (trialbox's own stdout and
 * stderr, which a runner may pipe somewhere that never reads): written
 * without ever blocking the writer, the rest buffered up to a bound, and
 * what does not fit (or that a consumer that went away never took)
 * dropped and counted. A timer, a signal or a record never waits on a
 * consumer.
 *
 * How a byte gets out without blocking depends on what the fd is:
 *  - a regular file or a block device: written as it comes (it never
 *    waits on a reader);
 *  - a pipe, a FIFO, a terminal: through an open file description of its
 *    own (/proc/self/fd/N opened again, O_NONBLOCK), so that O_NONBLOCK
 *    never reaches the description others share (a shell's terminal);
 *  - a socket: send() with MSG_DONTWAIT;
 *  - one that cannot be opened again (another user's pipe): only when
 *    poll() says it takes more, PIPE_BUF bytes at a time, which a pipe
 *    then takes without blocking.
 *
 *   struct sink out;
 *   sink_init(&out, STDOUT_FILENO, SINK_DEFAULT_MAX);
 *   sink_write(&out, buf, n);            // never blocks
 *   ... poll sink_fd(&out) for POLLOUT while sink_pending(&out): sink_flush(&out)
 *   sink_drain(&out, 1000);             // at the end: at most 1 s without progress
 *   out.dropped                          // bytes the consumer never got
 *   sink_done(&out);
 */
#ifndef TB_SINK_H
#define TB_SINK_H

#include <stdbool.h>
#include <stddef.h>

#define SINK_DEFAULT_MAX (1u << 20) /* bytes held for a consumer that is behind */

enum sink_how { SINK_NONE, SINK_FILE, SINK_NONBLOCK, SINK_SOCKET, SINK_POLLED };

struct sink {
        int fd;           /* the consumer's fd (not owned) */
        int own_fd;       /* SINK_NONBLOCK: the description opened for it (owned), else -1 */
        enum sink_how how;
        char *buf;        /* what the consumer has not taken yet */
        size_t len, cap, max;
        bool broken;      /* the consumer is gone (EPIPE, ...): everything from now on is dropped */
        unsigned long long dropped; /* bytes the consumer never got */
};

/* Decide how to write to `fd` (SINK_NONE when it is closed), holding at
 * most `max` bytes for it. */
void sink_init(struct sink *s, int fd, size_t max);

/* Write what the consumer takes now; hold the rest up to the bound; drop
 * and count what is past it. Never blocks (but on a regular file). */
void sink_write(struct sink *s, const void *buf, size_t n);

/* Write what is held, as much as the consumer takes now. */
void sink_flush(struct sink *s);

/* Is something held for the consumer? */
bool sink_pending(const struct sink *s);

/* The fd to poll for POLLOUT while sink_pending(), or -1 for a sink that
 * never holds anything (a file, or none). */
int sink_fd(const struct sink *s);

/* At the end: write what is held while the consumer takes it, giving up
 * (the rest dropped and counted) once it took nothing for `stall_ms`. */
void sink_drain(struct sink *s, int stall_ms);

/* Free what is held (counted as dropped) and the fd opened for it. */
void sink_done(struct sink *s);

#endif
