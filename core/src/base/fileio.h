/* Reading a file whole and writing one atomically. */
#ifndef TB_FILEIO_H
#define TB_FILEIO_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Read the file at `path` whole, for secrets (systemd's READ_FULL_FILE_SECURE):
 * opened O_NOFOLLOW|O_CLOEXEC|O_NOCTTY|O_NONBLOCK (a planted link or FIFO is
 * refused, not followed or waited on), checked to be a regular file of at
 * most `max` bytes, read into a buffer that is erased whenever it is given
 * up (grown or on error). On success *out is malloc'd and NUL-terminated
 * (release it with erase_and_free()), *len its length (a NUL byte inside is
 * data), and `st` (may be NULL) the file's fstat. Returns 0 or a negative
 * errno: -ELOOP a link, -EISDIR a folder, -EINVAL not a regular file,
 * -EFBIG over `max`, any open/fstat/read error as is. */
int read_file_secure(const char *path, size_t max, char **out, size_t *len, struct stat *st);

/* Write `len` bytes to `dirfd`/`name` atomically: a temporary file made with
 * O_EXCL in that folder, written, fsynced, renamed over `name`, and the
 * folder fsynced (systemd's write_string_file_atomic_at): for secrets, which
 * must survive a crash whole. The file gets `mode`. 0 or negative errno. */
int write_file_atomic_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode);

enum {
        WRITE_SYNC_FILE = 1 << 0, /* fdatasync the data before the rename: never a partial file after a crash */
        WRITE_SYNC_DIR = 1 << 1,  /* fsync the folder after it: the new name itself survives a crash */
};
/* The same with the syncs chosen (`flags`, WRITE_*): readers always see the
 * old file or the new one whole, whatever the flags. */
int write_file_atomic_at_flags(int dirfd, const char *name, const void *data, size_t len, mode_t mode, int flags);

/* Read `fd` to its end, at most `max` bytes, into *out (malloc'd,
 * NUL-terminated) and *len: 0, or a negative errno (-EFBIG over `max`). */
int read_fd_whole(int fd, size_t max, char **out, size_t *len);
/* Read a whole small file (up to `max` bytes). malloc'd, NUL-terminated, or NULL with errno set. */
char *read_file(const char *path, size_t max, size_t *len_out);
/* The regular file `name` in `dirfd` likewise, never following a link nor
 * blocking on a FIFO: NULL with errno EINVAL when not a regular file, EFBIG
 * over `max`. Fills *st_out (may be NULL) with what it opened. */
char *read_file_at(int dirfd, const char *name, size_t max, size_t *len_out, struct stat *st_out);

#endif
