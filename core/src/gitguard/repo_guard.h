/* The repository guard: nothing a session writes into the repository's git
 * files runs, or is resolved, on the host afterwards, and trialbox never
 * takes a bind source from the repository without proving it.
 *
 * Git runs programs named in its config (core.fsmonitor, core.pager,
 * diff.external, filter and diff drivers, core.hooksPath, core.sshCommand,
 * aliases…), reads other configs it names (include.path, includeIf) and runs
 * hooks; the files that redirect it (`commondir`, `.git` files,
 * `objects/info/alternates`, a submodule's git directory under `modules/`)
 * decide which config it reads. The session must keep committing, branching
 * and rebasing, which write objects, refs, the index and logs, but none of
 * those files.
 *
 * The mechanism, in two layers:
 * 1. Before the session (repo_guard_open, repo_guard_add_binds): read-only
 *    binds over every such file that exists (the common git directory's
 *    `config`, `config.worktree`, `commondir`, `objects/info/alternates`,
 *    `hooks/` (made first when missing: an empty folder is harmless and bwrap
 *    needs a mount point), each `worktrees/<name>/{commondir,gitdir,
 *    config.worktree}`, each `modules/<name>/{config,config.worktree,
 *    commondir,hooks}`, nested), the worktree folders the host's own config
 *    names as `core.hooksPath` or an include (husky's `.husky`) and the
 *    worktree folder a `hooks` link of the host's points to; and binds of
 *    `.git`, `worktrees/`, `modules/` and each module onto themselves, so
 *    that the session can neither rename them away nor replace them (a mount
 *    point cannot be). A read-only file cannot be replaced by a rename
 *    either: `git config`, `git remote add`, `git branch -u`,
 *    `git submodule add|init` fail inside the session (EBUSY, EROFS);
 *    commit, branch, checkout, merge, rebase, tag, stash and gc work.
 * 2. After the session (repo_guard_restore): through directory fds opened
 *    before it, every step O_NOFOLLOW, only regular files read (O_NONBLOCK,
 *    size-capped), the same files are compared with the copies taken before
 *    and restored; those that appeared (a `commondir` or `config.worktree`, a
 *    new worktree's or submodule's config or hooks, a hook) are removed; a
 *    `.git` that is not the one there before (or that appeared in a folder
 *    that had none) is renamed aside (`.git.trialbox-quarantine-<n>`), as is
 *    a `.git` anywhere below the top of the worktree (an embedded repository:
 *    the host's `git status` enters it and runs its config) unless it is a
 *    submodule's `.git` file naming a git directory just checked under
 *    `modules/`; a hooks folder or include the host's config names in the
 *    worktree that appeared is renamed aside too. Each undo is reported as
 *    one line. Layer 2 also covers what layer 1 cannot bind: files that did
 *    not exist. Worktrees made inside the session lose their `commondir`
 *    and `gitdir` (and their `.git` file is renamed aside).
 *
 * Not covered (residual risks, documented): a rebase, merge or sequencer
 * left in progress (`rebase-merge/git-rebase-todo` may hold `exec` lines
 * that `git rebase --continue` on the host runs); a worktree file that a
 * program the host's config or hooks name reads (a filter or diff driver
 * script, a hook manager's `.pre-commit-config.yaml`); attributes selecting
 * a filter driver the host's global config defines; new files during the
 * session itself when the host's git runs concurrently; nothing is undone
 * when trialbox itself is killed with SIGKILL. */
#ifndef TB_REPO_GUARD_H
#define TB_REPO_GUARD_H

#include <stdbool.h>
#include <sys/types.h>

#include "sandbox/spec.h"
#include "base/error.h"
#include "base/strv.h"

/* The largest git control file kept (and restored) whole. */
#define REPO_GUARD_MAX_FILE ((size_t)256 * 1024)

/* A control file's state before the session: its path relative to the
 * common git directory, whether it existed, its bytes and mode. */
struct repo_guard_file {
        char *rel;
        bool existed;
        char *data;
        size_t len;
        mode_t mode;
        uid_t uid; /* its owner, given back when it is restored */
        gid_t gid;
};

/* A hooks folder before the session: its identity and entry names. */
struct repo_guard_hooks {
        char *rel;
        bool existed;
        bool link; /* the host's own link: its worktree target is bound read-only */
        dev_t dev;
        ino_t ino;
        struct strv names; /* its entries; for a link, its target */
};

struct repo_guard {
        char *repo;         /* the repository (real path) */
        char *common;       /* its common git directory (real path), or NULL */
        bool worktree;      /* `.git` is a file naming common/worktrees/<name> */
        int repo_fd;        /* the repository folder, opened before the session */
        int common_fd;      /* the common git directory, or -1 */
        int dotgit_kind;    /* 0: no .git, 'd': a folder, 'f': a regular file, 'l': a link (refused), 'x': other */
        dev_t dotgit_dev;
        ino_t dotgit_ino;
        uid_t dotgit_uid;
        gid_t dotgit_gid;
        char *dotgit_data; /* a .git file's bytes */
        size_t dotgit_len;
        struct repo_guard_file *files;
        size_t n_files, cap_files;
        struct repo_guard_hooks *hooks;
        size_t n_hooks, cap_hooks;
        struct strv pins;     /* folders bound onto themselves */
        struct strv ro;       /* existing files and folders bound read-only */
        struct strv watch_dir, watch_name; /* missing worktree paths the host's config names: folder
                                            * (relative to the repository, "" for its top) and name */
        char *refused;        /* why a worktree's common directory was not bound, or NULL */
};

/* What the guard needs of the host: the paths a repository-derived bind may
 * never be, contain or override. */
struct repo_guard_host {
        const char *repo;         /* the repository, a real path */
        const char *host_home;    /* the host user's real home */
        const char *session_home; /* the fresh home */
        bool dry_run;             /* change nothing on the host (no hooks folder made) */
        const char *path;         /* the host PATH, where the host's git is found */
};

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

/* Open the repository's git directories and keep their control files as
 * they are now. `spec` is the spec so far (for the common directory's
 * checks). 0, or a negative errno with `err` set when a control file is
 * neither a regular file nor missing (nothing could protect it). Call
 * repo_guard_done in every case. */
int repo_guard_open(struct repo_guard *g, const struct repo_guard_host *host, const struct sandbox_spec *spec,
                    struct tb_error *err);

/* Add to `spec`, after the repository's own bind: the common directory
 * (read-write, when it lies outside the repository), the pins and the
 * read-only binds. */
void repo_guard_add_binds(const struct repo_guard *g, struct sandbox_spec *spec);

/* After the session: restore what changed, remove what appeared, adding one
 * line per undo to `undone` ("restored '.git/config'", …). Returns the
 * number of undos, or a negative errno when something could not be undone
 * (its line says so). */
int repo_guard_restore(struct repo_guard *g, struct strv *undone);

/* Close the fds and free everything. A zeroed guard (never opened) is fine
 * to pass here and to repo_guard_restore. */
void repo_guard_done(struct repo_guard *g);

#endif
