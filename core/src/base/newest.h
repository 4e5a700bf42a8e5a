/* The newest files of a tree a hostile session may have made (its home):
 * found with tree.h's walker (fd-relative, no link followed, one
 * filesystem), every count bounded, so that a folder of a million files or
 * a chain of a thousand folders costs a bounded walk. Nothing here opens a
 * file or prints. */
#ifndef TB_BASE_NEWEST_H
#define TB_BASE_NEWEST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

struct newest_limits {
        const char *suffix; /* the names to find end in it (NULL: any); names starting with '.' never match */
        size_t max_depth;   /* how many folders below the root a file may lie (0: in the root only) */
        size_t max_files;   /* the newest this many are kept (> 0) */
        size_t max_entries; /* the walk stops after seeing this many entries (> 0) */
        uid_t owner;        /* only files this user owns */
};

struct newest_file {
        char *path; /* relative to the root folder */
        struct timespec mtime;
        off_t size;
};

/* The regular files (by lstat: a link is never one) with one link, owned
 * by lim->owner, under the folder open at `root_fd`, as `lim` says: newest
 * first (ties by path), into *out (malloc'd; newest_files_free) and *n.
 * *cut (may be NULL) is set when a limit, or a folder that could not be
 * walked, left some out. 0 or a negative errno (-EINVAL: a bad limit). */
int newest_files_at(int root_fd, const struct newest_limits *lim, struct newest_file **out, size_t *n, bool *cut);

void newest_files_free(struct newest_file *v, size_t n);

#endif
