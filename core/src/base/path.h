/* Paths: comparing, splitting, looking a program up, making folders. */
#ifndef TB_PATH_H
#define TB_PATH_H

#include <stdbool.h>
#include <sys/types.h>

/* Is `path` equal to `dir` or inside it? Both must be absolute and clean. */
bool path_is_under(const char *path, const char *dir);

/* The folder `path` is in, as dirname(1) says, malloc'd: "/a" for "/a/b"
 * and "/a/b/", "/" for "/x" and "/", "a" for "a/b", and "." for a name
 * without a folder ("plan.jsonl"): a relative path stays relative, to the
 * working folder. */
char *path_dirname(const char *path);
/* "A/B" (as "%s/%s" would print it, even for A "/" or ""), malloc'd; the
 * _n form takes A's first `a_len` bytes. */
char *path_join(const char *a, const char *b);
char *path_join_n(const char *a, size_t a_len, const char *b);

/* Look `prog` up on `path_env` (a PATH value), or take it as a path when it
 * has a '/': a malloc'd absolute path (links not resolved) to an executable
 * regular file, or NULL. */
char *find_on_path(const char *prog, const char *path_env);
/* The PATH used when the host's is unset or empty (as execvp does):
 * trialbox must work from an empty environment (env.h). */
#define TB_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* mkdir -p with `mode` for the folders it makes. 0 or negative errno. */
int mkdir_p(const char *path, mode_t mode);

/* `p` made absolute against the absolute folder `base` (when relative) and
 * lexically clean: no "//", ".", ".." (taken lexically: links are not
 * resolved) or trailing '/'. malloc'd. */
char *path_clean(const char *base, const char *p);

/* realpath(3) answers remembered for one pass over many paths that ask for
 * the same ones again (the toolchains look at the home and each PATH folder
 * many times): each path is resolved once, its answer (the real path, or
 * the errno) kept, and so is each component on the way (each folder of the
 * home is looked at once, whatever path goes through it). Only for a pass in which the file system is taken not to
 * change: a new memo for each. Zeroed is empty. */
struct path_memo {
        struct path_memo_entry *v; /* the paths asked */
        size_t n, cap;
        struct path_memo_entry *parts; /* each resolved folder/name pair of them */
        size_t n_parts, cap_parts;
        /* Hash indexes of v and parts: open addressing, an entry's index + 1
         * (0: free), a power of two more than twice as many slots as entries. */
        unsigned *slots, *slots_parts;
        size_t n_slots, n_slots_parts;
        /* Folders listed (path_memo_list), by real path, and the entries of
         * theirs that may be links (asked of readlink(2) when resolved). */
        struct path_memo_entry *listed, *linked;
        size_t n_listed, cap_listed, n_linked, cap_linked;
        unsigned *slots_listed, *slots_linked;
        size_t n_slots_listed, n_slots_linked;
};

/* As realpath(path, NULL): malloc'd, or NULL with errno set; through
 * `memo` when it is not NULL. */
char *path_memo_realpath(struct path_memo *memo, const char *path);

/* List the folder `folder` once for the memo: then each name of it that is
 * not a link resolves without a system call, and a name it does not hold
 * fails with ENOENT without one (as realpath(3) does); links are read as
 * before. For a folder many asked paths are in (the secret places, in the
 * home): one listing instead of a readlink(2) each. A folder that cannot
 * be listed, searched, or holds more than PATH_MEMO_LIST_MAX entries is
 * left as it was. */
#define PATH_MEMO_LIST_MAX 4096
void path_memo_list(struct path_memo *memo, const char *folder);

/* Free what the memo holds; it is empty again. */
void path_memo_done(struct path_memo *memo);

#endif
