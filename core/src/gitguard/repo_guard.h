/* The repository guard: the repository comes back as data. Nothing a
 * session wrote is ever read by the host as configuration afterwards.
 *
 * Git runs programs its config names (core.fsmonitor, core.pager,
 * diff.external, filter drivers, hooks, aliases...) and reads whatever its
 * control files point it to (commondir, a `.git` file's gitdir, alternates,
 * a submodule's git directory); other tools run what their control files
 * in the worktree say (tool_files.h). The session must keep committing,
 * branching and rebasing, which write only data: objects, refs, the index,
 * logs.
 *
 * Before the session (repo_guard_open: what the repository is and the
 * binds that follow; repo_guard_snapshot, while bwrap sets the sandbox up
 * and the session waits for its byte), through folder fds: a snapshot of
 * every control entry of the git directory (everything but the data, kept
 * whole, recursively: config, HEAD, hooks/, info/, description, commondir,
 * objects/info/alternates, each submodule's and linked worktree's own,
 * anything git may add), of the other tools' control files, and of the
 * worktree paths the host's own git config names (a hooks folder, an
 * include); and a walk of the worktree noting its links, FIFOs and `.git`
 * files (a submodule's, a linked worktree's).
 *
 * After the session (repo_guard_restore), the session's processes all gone:
 *  1. the git directory is rebuilt from what trialbox trusts: each control
 *     entry that differs from its snapshot is moved to the quarantine and
 *     put back; each one that is new is moved to the quarantine; the data
 *     is kept only where it validates (gitdata.h: a regular file or folder
 *     of the kind git expects, refs with valid names and values, HEAD a
 *     valid ref value, packed-refs whole), the rest moved out. A `.git`
 *     folder renamed or replaced is found again through the fd held since
 *     before the session and put back.
 *  2. the worktree is walked, at any depth (base/tree.h: iterative,
 *     fd-relative, never following a link): every `.git` below its top (a
 *     folder, a file or a link) that is not a submodule's or linked
 *     worktree's `.git` file unchanged since before the session, and every
 *     folder of a git directory's shape (HEAD with objects/ and refs/, or
 *     with commondir), are moved to the quarantine; links, FIFOs, sockets
 *     and devices that are new are listed; setuid and setgid bits are
 *     cleared.
 *  3. the other tools' control files and the host-config-named paths are
 *     compared with their snapshot: each change is listed; the host's paths
 *     always, the tools' unless --keep-control-files, are put back.
 * The quarantine is OUTPUT_DIR/quarantine/ (quarantine.h).
 *
 * Fail closed: when a step of 1 cannot be done (an I/O error, a permission
 * that cannot be given back, a file kept by identity only that changed),
 * the whole `.git` is moved to the quarantine and the repository is left
 * without one: status "quarantined". When even that (or a step of 2) cannot
 * be done: status "failed". The record says which (repo_guard_json).
 *
 * Not covered: the repository while the session runs (run no git in it on
 * the host until the Trial ended); a worktree file that a program the
 * host's own config or hooks name reads (a hook manager's own config, a
 * filter script); nothing is done when trialbox itself is killed with
 * SIGKILL. */
#ifndef TB_REPO_GUARD_H
#define TB_REPO_GUARD_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/strv.h"
#include "gitguard/quarantine.h"
#include "gitguard/snapshot.h"
#include "sandbox/spec.h"

struct json_object;

/* What the guard needs of the host. */
struct repo_guard_host {
        const char *repo;         /* the repository, a real path */
        const char *host_home;    /* the host user's real home */
        const char *session_home; /* the fresh home */
        const char *path;         /* the host PATH, where the host's git is found */
        bool keep_control_files;  /* --keep-control-files */
};

/* An entry the guard noted before the session. */
struct guard_seen {
        char *path;    /* from the repository's top */
        char *data;    /* a link's target, a `.git` file's bytes; may be NULL */
        size_t len;
        unsigned char type;
};

/* A folder of the worktree as it was before the session: one whose change
 * time is the same after it holds the same entries (the session made,
 * removed or renamed none in it). */
struct guard_dir {
        dev_t dev;
        ino_t ino;
        struct timespec ctime;
        bool leaf;    /* it held no folder: unchanged, it still holds none */
        bool objects; /* a leaf objects/XX/ the rebuild need not look into when unchanged: one whose every
                         entry was a loose object's file, or one noted by its identity alone (scan.c) */
        bool plain;   /* a leaf of the worktree with no entry named .git or HEAD: unchanged, the walk after
                         the session has nothing to look at in it */
};

struct guard_move {
        char *path; /* where it was, from the repository's top (or absolute, outside it) */
        char *to;   /* its path from OUTPUT_DIR, or NULL when it could only be removed */
        const char *why;
};

struct guard_change {
        char *path;
        const char *change; /* "new", "changed", "removed" */
        bool kept;          /* the session's version stays (--keep-control-files) */
        bool host_config;   /* a path the host's git config names (always put back) */
        char *saved;        /* the session's version in the quarantine, or NULL */
};

enum guard_status { GUARD_NONE, GUARD_RESTORED, GUARD_QUARANTINED, GUARD_FAILED };

struct repo_guard {
        char *repo;             /* the repository (real path) */
        int repo_fd;            /* opened before the session */
        char dotgit;            /* the top `.git` before: 0 none, 'd' folder, 'f' file, 'x' other */
        char *common;           /* the common git directory (real path), or NULL */
        int common_fd;          /* opened before the session, or -1 */
        char *worktree;         /* a linked worktree: its name under common/worktrees/, else NULL */
        dev_t git_dev;          /* the common git directory's identity */
        ino_t git_ino;
        bool git_nlink_exact;   /* its file system counts a folder's subfolders in its link count */
        char *refused;          /* why a worktree's common directory was not bound, or NULL */
        bool keep_control_files;
        bool snapped;           /* the snapshot was taken whole (repo_guard_snapshot) */
        struct snapshot snap;
        struct strv modules;    /* the git directories under modules/, from the common one ("modules/a") */
        struct strv host_paths; /* worktree paths the host's git config names, from the top */
        struct strv tool_paths; /* the other tools' control files present or named, from the top */
        struct guard_seen *seen;
        size_t n_seen, cap_seen;
        struct guard_dir *dirs;  /* every folder of the worktree before the session, by identity */
        size_t n_dirs, cap_dirs;
        struct quarantine q;
        /* What was done: the record. */
        enum guard_status status;
        char detail[512];
        struct guard_move *moved;
        size_t n_moved, cap_moved;
        struct strv restored;
        struct strv setuid_cleared;
        struct guard_change *changes;
        size_t n_changes, cap_changes;
        struct guard_seen *special; /* new links, FIFOs, sockets and devices */
        size_t n_special, cap_special;
        /* How many of each there were: the lists keep the first GUARD_KEEP_MAX
         * (a session can make millions), guard.jsonl says how many it left out. */
        size_t total_moved, total_restored, total_setuid, total_changes, total_special;
};

#define GUARD_KEEP_MAX 10000

/* The common git directory of the worktree at `repo` when it is provably the
 * same repository: `repo/.git` is a regular file `gitdir: G`; `G/commondir`
 * names C; G is C/worktrees/<name>; `G/gitdir` names `repo/.git` back; C holds
 * HEAD, objects/ and refs/; C is no system path, not a top-level folder, not
 * the home or the fresh home or a parent of either, not a parent of `repo`,
 * and neither inside nor around a read-only bind already in `spec`. Every
 * file is read with O_NOFOLLOW|O_NONBLOCK, checked regular and size-capped.
 * Returns the real path (malloc'd); NULL when `repo/.git` is no such file
 * (*why NULL) or when it is refused (*why says why, malloc'd). */
char *repo_guard_common_dir(const struct repo_guard_host *host, const struct sandbox_spec *spec, char **why);

/* Open the repository and find what it is: its `.git` (a folder, a file,
 * none), the common git directory and a linked worktree's name, opened by
 * fd; the binds follow from these (repo_guard_add_binds). `spec` is the
 * spec so far (for the common directory's checks). 0, or a negative errno
 * with `err` set when the repository cannot be guarded (its `.git` is a
 * link): nothing has run yet, the Trial is void. Call repo_guard_done in
 * every case. */
int repo_guard_open(struct repo_guard *g, const struct repo_guard_host *host, const struct sandbox_spec *spec,
                    struct tb_error *err);

/* Take the snapshot (above) of an opened guard, the same `host`: before
 * anything of the session runs (trialbox takes it while bwrap sets the
 * sandbox up, before the session's byte). 0 and g->snapped, or a negative
 * errno with `err` (a control entry past the snapshot's bounds, an I/O
 * error): the session must not run, the Trial is void; without the
 * snapshot, repo_guard_restore does nothing. */
int repo_guard_snapshot(struct repo_guard *g, const struct repo_guard_host *host, struct tb_error *err);

/* Add to `spec`, after the repository's own bind: a linked worktree's
 * common directory (read-write, when it lies outside the repository). */
void repo_guard_add_binds(const struct repo_guard *g, struct sandbox_spec *spec);

/* After the session: steps 1 to 3 above, the quarantine in the folder
 * `output_fd` (OUTPUT_DIR; -1: none, what is moved out is removed).
 * `session_uid`: whose files' setuid and setgid bits are cleared. Sets
 * g->status (RESTORED, QUARANTINED or FAILED) and what was done. */
void repo_guard_restore(struct repo_guard *g, int output_fd, uid_t session_uid);

/* Every action of the guard, one JSON line each ({"action": "moved" |
 * "restored" | "setuid_cleared" | "control_file" | "special_file", ...}),
 * to `name` in `dirfd` (OUTPUT_DIR/guard.jsonl): the record's lists are
 * bounded, this file is whole. 0 or a negative errno. */
int repo_guard_write_log(const struct repo_guard *g, int dirfd, const char *name);

/* Clear the setuid and setgid bits of the regular files under the folder
 * `dirfd` (the output folder, the home) that `session_uid` owns (or any
 * owner's with a single link), noting them (as `shown`/path) in
 * g->setuid_cleared. 0 or a negative errno. */
int repo_guard_clear_setuid(struct repo_guard *g, int dirfd, const char *shown, uid_t session_uid);

/* The record: outcome.json's `repo_guard` ({"status", "detail", "moved",
 * "restored", "setuid_cleared", each list at most REPO_GUARD_LIST_MAX long
 * with a count of the rest ("moved_more", ...), "control_files_total",
 * "special_files_total"}), `control_files` and `special_files` (arrays, at
 * most REPO_GUARD_LIST_MAX long; guard.jsonl has them all). New json-c
 * objects; NULL when the guard did not run. */
#define REPO_GUARD_LIST_MAX 50
struct json_object *repo_guard_json(const struct repo_guard *g);
struct json_object *repo_guard_control_json(const struct repo_guard *g);
struct json_object *repo_guard_special_json(const struct repo_guard *g);

const char *repo_guard_status_name(enum guard_status s);

/* Close the fds and free everything. A zeroed guard (never opened) is fine
 * to pass here and to repo_guard_restore. */
void repo_guard_done(struct repo_guard *g);

#endif
