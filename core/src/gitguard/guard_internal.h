/* The repository guard's own parts, shared by its files and by nothing
 * else (gitguard/repo_guard.h is the guard's contract):
 *   repo_guard.c     open (before the session), restore (after), done
 *   gitdir.c         the git directory: its snapshot, and its rebuild
 *   control_paths.c  the worktree paths the host's git config names, and
 *                    other tools' control files
 *   scan.c           the worktree walked: before (links, FIFOs, .git files),
 *                    after (.git and git-directory shapes moved out, setuid)
 *   worktree.c       a linked worktree's common directory, proven
 *   record.c         outcome.json's parts and guard.jsonl
 *   guard_util.c     reading without trusting, and noting what was done */
#ifndef TB_GITGUARD_INTERNAL_H
#define TB_GITGUARD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/path.h"
#include "base/str.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "base/tree.h"

struct repo_guard;
struct repo_guard_host;
struct strv;
struct tb_error;

/* The longest path a record shows: a longer one keeps its tail. */
#define SHOWN_MAX 200
/* The largest ref file, pseudo-ref or message git writes; packed-refs. */
#define REF_MAX 4096
#define TEXT_MAX ((size_t)1 << 20)
#define PACKED_REFS_MAX ((size_t)256 << 20)
/* Submodules nest (modules/a/modules/b) and their names may hold '/'. */
#define MODULES_MAX_DEPTH 32

/* ---- guard_util.c ---- */
/* The regular file `name` in `dirfd`, never following a link or blocking on
 * a FIFO, up to `max` bytes: malloc'd (NUL-terminated), or NULL with errno
 * (EFBIG when larger, EINVAL when not a regular file). */
char *guard_read_at(int dirfd, const char *name, size_t max, size_t *len_out, mode_t *mode_out);
/* The first line of a small file, trimmed. */
char *guard_read_line_at(int dirfd, const char *name);
bool guard_is_dir_at(int dirfd, const char *name);
bool guard_is_reg_at(int dirfd, const char *name);
bool guard_exists_at(int dirfd, const char *name);
/* The folder `name` in `dirfd`, never through a link. */
int guard_open_dir_at(int dirfd, const char *name);
/* The names in the folder open at `fd` (not "." and ".."), in `out`. */
int guard_list_names(int fd, struct strv *out);
/* `s` shown in a record: at most SHOWN_MAX bytes, its tail kept. malloc'd. */
char *guard_shown(const char *s);
/* Note a move (takes `to`). */
void guard_note_move(struct repo_guard *g, const char *path, char *to, const char *why);
/* A step that could not be done: the first one's words become g->detail.
 * Returns `r` (a negative errno; -EIO when it is not one). */
int guard_note_failure(struct repo_guard *g, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Move `name` in `dirfd` (shown as `path`) to the quarantine, noting it. */
int guard_move_out(struct repo_guard *g, int dirfd, const char *name, const char *path, const char *why);
/* Note a control entry put back, a setuid bit cleared. */
void guard_note_restored(struct repo_guard *g, const char *path);
void guard_note_setuid(struct repo_guard *g, const char *path);
/* Note a control file's change (takes `saved`). */
void guard_note_change(struct repo_guard *g, const char *path, const char *change, bool kept, bool host,
                       char *saved);

/* ---- gitdir.c ---- */
/* Snapshot the control entries of the git directory open at `fd` (`key`
 * prefixes its keys, `rel` is its path from the common one). */
int guard_snap_gitdir(struct repo_guard *g, int fd, const char *key, const char *rel, int depth,
                      struct tb_error *err);
/* Rebuild the repository's own `.git` folder (or move a new one out). */
int guard_rebuild_git(struct repo_guard *g);
/* Rebuild a linked worktree's `.git` file and common directory. */
int guard_rebuild_common(struct repo_guard *g);
/* Fail closed: the whole `.git` to the quarantine (status QUARANTINED, or
 * FAILED when even that cannot be done). */
void guard_quarantine_dotgit(struct repo_guard *g);

/* ---- control_paths.c ---- */
/* Before the session: the worktree paths the host's git config names, the
 * links of the git directory pointing into the worktree, other tools'
 * control files; each snapshotted. */
void guard_find_host_paths(struct repo_guard *g, const struct repo_guard_host *host);
void guard_find_link_targets(struct repo_guard *g);
int guard_snap_path(struct repo_guard *g, const char *kind, const char *rel);
int guard_snap_tool_files(struct repo_guard *g);
/* After it: each change listed; the host's put back always, the tools'
 * unless --keep-control-files. */
int guard_fix_paths(struct repo_guard *g);

/* ---- scan.c ---- */
int guard_cmp_seen(const void *a, const void *b);
/* The walk's `pre` before the session (ctx: the guard). */
int guard_seen_pre(struct tree_dir *d, void *ctx);
/* A walk's `pre` that notes each folder's identity and change time only. */
int guard_dirs_pre(struct tree_dir *d, void *ctx);
/* The same for the git folder, which also notes the folders that hold
 * nothing but loose objects' files, and notes the objects/XX/ folders
 * without a folder in them by their identity alone (not entered). */
int guard_gitdirs_pre(struct tree_dir *d, void *ctx);
/* Does the file system of the folder open at `fd` count a folder's
 * subfolders in its link count (2 + subfolders), so that 2 says "none"?
 * tmpfs, ext2/3/4 and XFS do; others (btrfs: 1 always) are not trusted. */
bool guard_nlink_exact(int fd);
/* Is the folder `name` in `dirfd` one noted before the session that held no
 * folder (and, with GUARD_LEAF_OBJECTS, was an objects/XX/ the rebuild
 * need not look into; with GUARD_LEAF_PLAIN, had no .git or HEAD), and
 * that the session did not change (its change time)? Then it holds the
 * same entries as it did. */
enum guard_leaf { GUARD_LEAF_ANY, GUARD_LEAF_OBJECTS, GUARD_LEAF_PLAIN };
bool guard_unchanged_leaf(const struct repo_guard *g, int dirfd, const char *name, enum guard_leaf kind);
/* Sort g->dirs, once every folder is noted. */
void guard_sort_dirs(struct repo_guard *g);
/* After the session: the worktree walked (above). */
int guard_scan_worktree(struct repo_guard *g, uid_t session_uid);

#endif
