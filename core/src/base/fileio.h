/* Reading a file whole and writing one atomically: one reader with flags
 * (systemd's read_full_file_full) and one atomic writer with flags
 * (systemd's write_string_file_atomic_at); the other helpers here are thin
 * wrappers of them. */
#ifndef TB_FILEIO_H
#define TB_FILEIO_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

enum {
        READ_NOFOLLOW = 1 << 0, /* a link as the last component is refused (-ELOOP), never followed */
        READ_BENEATH = 1 << 1,  /* `path` is relative and stays beneath `dirfd`: no link at any step,
                                   no "..", no magic link (-EXDEV, -ELOOP); implies READ_NOFOLLOW */
        READ_REGULAR = 1 << 2,  /* only a regular file: -EISDIR a folder, -EINVAL anything else;
                                   one larger than `max` is refused before it is read */
        READ_NONBLOCK = 1 << 3, /* opened O_NONBLOCK: a FIFO planted there is never waited on */
        READ_SECURE = 1 << 4,   /* for secrets: a buffer given up (grown, or on an error) is
                                   erased first; release *out with erase_and_free() */
        READ_PREFIX = 1 << 5,   /* its first `max` bytes (all of a shorter one): a longer file is
                                   not refused; with `max` 0, only that it opens (and, with
                                   READ_REGULAR, is a regular file) */
};

/* Read the file at `path` (relative to `dirfd`, or AT_FDCWD) whole, opened
 * O_RDONLY|O_CLOEXEC|O_NOCTTY and as `flags` (READ_*) say, at most `max`
 * bytes. On success *out is malloc'd and NUL-terminated (a NUL inside is
 * data), *len (may be NULL) its length and `st` (may be NULL) the fstat of
 * what was read (filled for READ_REGULAR, else zeroed). Returns 0, or a
 * negative errno: -EFBIG over `max`, the flags' own, any open/read error as
 * is. *out is untouched on error. */
int read_full_file_at(int dirfd, const char *path, size_t max, int flags, char **out, size_t *len, struct stat *st);

/* The same from the open `fd`, from where it is to its end (READ_REGULAR
 * and READ_SECURE apply; the opening flags do not). */
int read_full_fd(int fd, size_t max, int flags, char **out, size_t *len, struct stat *st);

/* Open `rel` beneath the folder `dirfd` as READ_BENEATH resolves it:
 * openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS) where
 * the kernel has it, else one O_NOFOLLOW openat per component.
 * O_CLOEXEC|O_NOFOLLOW are added to `flags`. An fd, or a negative errno. */
int open_beneath(int dirfd, const char *rel, int flags);

/* Thin wrappers, for the common cases. */
/* read_full_file_at(AT_FDCWD, path, max, READ_NOFOLLOW|READ_REGULAR|
 * READ_NONBLOCK|READ_SECURE): a secret file (systemd's READ_FULL_FILE_SECURE). */
int read_file_secure(const char *path, size_t max, char **out, size_t *len, struct stat *st);
/* `path` followed wherever it goes, any kind of file: malloc'd, or NULL
 * with errno set. */
char *read_file(const char *path, size_t max, size_t *len_out);
/* The regular file `name` in `dirfd` (READ_NOFOLLOW|READ_REGULAR|
 * READ_NONBLOCK): malloc'd, or NULL with errno set (EINVAL for a folder
 * too). */
char *read_file_at(int dirfd, const char *name, size_t max, size_t *len_out, struct stat *st_out);

enum {
        WRITE_SYNC_FILE = 1 << 0, /* fdatasync the data before the rename: never a partial file after a crash */
        WRITE_SYNC_DIR = 1 << 1,  /* fsync the folder after it: the new name itself survives a crash */
        WRITE_KEEP_MODE = 1 << 2, /* keep the mode of the file replaced (a link is not followed
                                     for it); `mode` when there is none */
        WRITE_DIR_OWNER = 1 << 3, /* owned like its folder when that is not trialbox's user (a
                                     session running as another user can read it) */
};

/* Write `len` bytes to `name` in `dirfd` atomically: a temporary file made
 * with O_EXCL|O_NOFOLLOW in that folder, given `mode` exactly (the umask
 * aside), written, renamed over `name`; readers see the old file or the new
 * one whole, never a part. With WRITE_SYNC_FILE|WRITE_SYNC_DIR it survives
 * a crash whole too (secrets). A link at `name` is replaced, never
 * followed. 0 or a negative errno (the temporary file removed). */
int write_file_atomic_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode, int flags);

#endif
