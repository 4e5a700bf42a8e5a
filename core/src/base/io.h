/* The one EINTR loop: reading, writing and waiting for a child, each
 * retried when a signal interrupts it, so that no caller writes its own
 * `if (errno == EINTR) continue`. */
#ifndef TB_IO_H
#define TB_IO_H

#include <errno.h>
#include <stddef.h>
#include <sys/types.h>

/* `call` (a system call that fails with -1 and errno) made again while a
 * signal interrupts it: its result. For the calls without a helper below
 * (flock, recvmsg, send, splice, accept4, nanosleep). */
#define RETRY_EINTR(call)                                               \
        __extension__({                                                 \
                __typeof__(call) tb_r_;                                 \
                do                                                      \
                        tb_r_ = (call);                                 \
                while (tb_r_ < 0 && errno == EINTR);                    \
                tb_r_;                                                  \
        })

/* Read up to `n` bytes into `buf`, as many as come before the end: the
 * count read (less than `n` only at the end, or when a non-blocking fd has
 * no more for now), or a negative errno (-EAGAIN only when nothing was
 * read). A blocking fd is read until `n` bytes or its end. */
ssize_t loop_read(int fd, void *buf, size_t n);

/* One read(), retried while a signal interrupts it: read()'s count (0 at
 * the end), or a negative errno (-EAGAIN when a non-blocking fd has
 * nothing). For event loops, which take what one read gives. */
ssize_t read_retry(int fd, void *buf, size_t n);

/* One write(), retried while a signal interrupts it: write()'s count, or a
 * negative errno. For a relay that keeps what was not taken yet. */
ssize_t write_retry(int fd, const void *buf, size_t n);

/* Write all `n` bytes of `buf` (a short write is continued): 0, or a
 * negative errno (-EAGAIN when a non-blocking fd is full; what was written
 * before that stays written). */
int loop_write(int fd, const void *buf, size_t n);

/* The same at offset `off` (pwrite), the file offset untouched. */
int loop_pwrite(int fd, const void *buf, size_t n, off_t off);

/* Copy what is left of `in` (from its offset to its end) to `out` at its
 * offset: the kernel's copy, else, where it cannot (another filesystem, a
 * file it does not take), read and write from where it stopped. 0, or a
 * negative errno. */
int fd_copy(int in, int out);

/* waitpid(pid, status, options) retried while a signal interrupts it: the
 * pid reaped, 0 (WNOHANG and nothing to reap), or a negative errno. */
pid_t wait_child(pid_t pid, int *status, int options);

/* A wait status as a shell reports it: the exit code (0 to 255), or 128+N
 * for a child killed by signal N. */
int exit_status_of(int wait_status);

/* Close every fd from `from` on but keep[0..n) (any order; a negative one
 * keeps nothing): close_range() over the spans between them, else (a
 * kernel before 5.9) close() of each fd below the soft RLIMIT_NOFILE, or
 * below 65536 when that limit is higher.
 * Allocates nothing: for a child between its fork and its exec, or one
 * that goes on without an exec. */
void close_fds_except(int from, const int *keep, size_t n);

#endif
