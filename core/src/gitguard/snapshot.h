/* A snapshot of files and folders as they were before the session, taken
 * through folder fds, to compare them with what the session left and put
 * them back. Each entry is kept under a name of the caller's (".git/hooks",
 * ".vscode/settings.json"); a folder whole, with everything in it.
 *
 * What is kept: folders (mode, owner), regular files (bytes, mode, owner)
 * and links (target). A file is kept whole while the snapshot's budget
 * allows; past it only its identity (device, inode, size, ctime): such a
 * file can be compared (any change to it changes its ctime) but not put
 * back. FIFOs, sockets and devices are kept by identity too. */
#ifndef TB_GITGUARD_SNAPSHOT_H
#define TB_GITGUARD_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

struct snap_item {
        char *key;        /* the caller's name, then "/" and the path below it for what a folder holds */
        bool absent;      /* the entry did not exist */
        mode_t mode;      /* st_mode: type and permissions */
        uid_t uid;
        gid_t gid;
        char *data;       /* a file's bytes or a link's target, NUL-terminated; NULL: identity only */
        size_t len;
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec ctime;
};

struct snapshot {
        struct snap_item *v;
        size_t n, cap;
        bool sorted;
        size_t bytes;     /* file bytes kept so far */
        size_t max_bytes; /* the budget for file bytes (0: SNAPSHOT_MAX_BYTES) */
        size_t max_file;  /* the largest file kept whole (0: SNAPSHOT_MAX_FILE) */
        size_t max_items; /* entries at most (0: SNAPSHOT_MAX_ITEMS) */
};

#define SNAPSHOT_MAX_BYTES ((size_t)64 << 20)
#define SNAPSHOT_MAX_FILE ((size_t)1 << 20)
#define SNAPSHOT_MAX_ITEMS ((size_t)100000)

/* Keep `name` in `dirfd` as `key` (a missing one as absent). 0, -E2BIG past
 * max_items, or a negative errno when it cannot be read. */
int snapshot_add(struct snapshot *s, int dirfd, const char *name, const char *key);

/* Was `key` taken, and did it exist? */
bool snapshot_has(struct snapshot *s, const char *key);
bool snapshot_existed(struct snapshot *s, const char *key);

/* Is `name` in `dirfd` now exactly what `key` was: the same kind, mode and
 * owner, bytes and link targets, and for a folder the same entries, each
 * the same? A missing entry is the same as an absent one. */
bool snapshot_same(struct snapshot *s, int dirfd, const char *name, const char *key);

/* Make `name` in `dirfd` (which must not exist) what `key` was: nothing for
 * an absent one. 0, -ENODATA when a file of it was kept by identity only
 * (nothing is made then), or a negative errno (what was made stays: the
 * caller removes it). Owners are given back when run as root. */
int snapshot_restore(struct snapshot *s, int dirfd, const char *name, const char *key);

void snapshot_done(struct snapshot *s);

#endif
