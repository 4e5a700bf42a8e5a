/* Folder trees a hostile session may have made (a repository, a home),
 * walked after the session without trusting their shape:
 *  - fd-relative: every folder is opened from its parent's fd, never by a
 *    path, with O_NOFOLLOW|O_NONBLOCK: a link is an entry, never followed;
 *  - iterative: no recursion, so a chain of a million folders costs memory
 *    (a few dozen bytes a level), never the stack, and has no depth limit;
 *  - at most TREE_MAX_OPEN folder fds held: deeper, an ancestor's fd is
 *    closed and opened again through ".." of its child, checked to be the
 *    same folder (device and inode) when the walk climbs back;
 *  - one filesystem: a folder on another device (a mount point) is an entry
 *    not entered;
 *  - with TREE_FIX_MODES, a folder the walk cannot open or change (a session
 *    ran `chmod 000`) is given its owner's rwx first, by an O_PATH fd: the
 *    caller owns it or is root.
 * Nothing here prints; functions return 0 or a negative errno. */
#ifndef TB_BASE_TREE_H
#define TB_BASE_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define TREE_MAX_OPEN 128

struct tree_entry {
        const char *name;
        unsigned char type; /* DT_DIR, DT_REG, DT_LNK, DT_FIFO, DT_SOCK, DT_CHR, DT_BLK (never DT_UNKNOWN) */
        bool skip;          /* set by `pre` (a folder): not entered, and gone from the walk's view */
};

struct tree_walk;

/* One folder during the walk. */
struct tree_dir {
        int fd;                 /* the folder, open (O_RDONLY|O_DIRECTORY) */
        size_t depth;           /* 0: the root */
        dev_t dev;
        ino_t ino;
        struct timespec ctime;  /* its change time when the walk entered it (an entry made or removed
                                 * changes it, and so does forging its mtime) */
        struct tree_entry *v;   /* its entries but "." and "..", in the order the kernel gave them */
        size_t n;
        struct tree_walk *walk; /* the walk: tree_dir_path */
};

enum {
        TREE_FIX_MODES = 1 << 0, /* chmod u+rwx a folder that cannot be opened or emptied (EACCES) */
};

struct tree_ops {
        /* Called once per folder, root first, before its subfolders are
         * entered: 0 to go on, a positive value to stop the walk (returned),
         * a negative errno to stop it with that error. It may rename or
         * remove entries (setting their `skip`). */
        int (*pre)(struct tree_dir *d, void *ctx);
        /* Called in the parent `d` after its subfolder `name` was walked
         * whole (for removal: the folder is empty by then). Same returns. */
        int (*post)(struct tree_dir *d, const char *name, void *ctx);
        int flags; /* TREE_* */
};

/* Walk the tree whose root folder is open at `root_fd` (kept open; the
 * walk uses its own duplicate). 0, the positive value `pre` or `post`
 * stopped with, or a negative errno (-ESTALE: a folder changed while the
 * walk climbed back to it). */
int tree_walk(int root_fd, const struct tree_ops *ops, void *ctx);

/* The path of `d` (or of its entry `name`, when not NULL) from the root
 * ("" for the root itself), malloc'd. Longer than `max` bytes, it keeps its
 * last `max` bytes after ".../". */
char *tree_dir_path(const struct tree_dir *d, const char *name, size_t max);

/* Open the folder `name` in `dirfd` (O_RDONLY|O_DIRECTORY), never through a
 * link; with TREE_FIX_MODES a folder its owner cannot read, search or write
 * gets u+rwx first, through an O_PATH fd (never a path). An fd, or a
 * negative errno. */
int tree_open_dir(int dirfd, const char *name, int flags);

/* Remove `name` in `dirfd`, whatever it is, folders with everything in them
 * (rm -rf), never following a link; TREE_FIX_MODES on folders. 0 (also when
 * it is missing) or a negative errno. */
int tree_remove_at(int dirfd, const char *name);

/* Copy `from` in `from_dirfd` to the new name `to` in `to_dirfd` (which
 * must not exist): folders, regular files (their bytes and permission bits
 * without setuid, setgid and sticky) and links (as links); FIFOs, sockets and
 * devices are skipped, and so are folders deeper than `max_depth` below it.
 * *skipped (may be NULL) counts what was left out. 0 or a negative errno. */
int tree_copy_at(int from_dirfd, const char *from, int to_dirfd, const char *to, size_t max_depth,
                 size_t *skipped);

/* What tree_clone_at() made. */
struct tree_clone_stats {
        size_t files, dirs, links;
        size_t reflinked; /* files whose blocks are shared with the source (FICLONE), not copied */
        size_t skipped;   /* FIFOs, sockets, devices, and folders the caller cannot read (made empty) */
        long long bytes;  /* of the regular files */
};

/* A faithful copy of the folder `from` in `from_dirfd` as the new folder
 * `to` in `to_dirfd` (tree_clone.c): folders, regular files and links (as
 * links), with their permission bits (setuid and setgid dropped), their
 * access and modification times, and, when the caller may (root), their
 * owners. A file's blocks are shared with the source where the filesystem
 * can (ioctl FICLONE: btrfs, XFS), else copied (copy_file_range). Nothing
 * of the source is changed, not even a mode: a folder the caller cannot
 * read is made empty and counted as skipped, and so are FIFOs, sockets and
 * devices. `st` (may be NULL) is filled. 0 or a negative errno. */
int tree_clone_at(int from_dirfd, const char *from, int to_dirfd, const char *to, struct tree_clone_stats *st);

#endif
