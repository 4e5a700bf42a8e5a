/* Who the session runs as. Started as root, trialbox never runs a sandboxed
 * session as root unless told to (--root-session): it runs it, and bwrap,
 * as an unprivileged user (--user NAME|UID, else the repository's owner),
 * while trialbox itself keeps root for what it needs (write-back to a
 * root-owned login, cgroups, restoring git's control files). */
#ifndef TB_SESSION_USER_H
#define TB_SESSION_USER_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/error.h"

struct session_user {
        bool drop;  /* the session runs as uid/gid below, not as trialbox's own */
        uid_t uid;
        gid_t gid;
        char *name; /* the user's name, or its number when it has none */
        const char *why; /* "--user", "the repository's owner", "--root-session", "trialbox's own" */
};

/* Decide who the session runs as: `want` is --user (NULL when not given),
 * `root_session` is --root-session, `euid` trialbox's effective uid and
 * `repo` the repository's stat. 0, or a negative errno with `err` saying
 * what to pass instead (a usage error). */
int session_user_resolve(const char *want, bool root_session, uid_t euid, const struct stat *repo,
                         struct session_user *out, struct tb_error *err);

void session_user_done(struct session_user *u);

/* Can `u` reach `path` with access(2) `mode`, as the session will be (its
 * uid and gid, no supplementary groups)? Checked by trialbox (root) with
 * those as its filesystem ids for the moment, else in a child that switches. */
bool session_user_can(const struct session_user *u, const char *path, int mode);

/* The same for many paths at once (one child): ok[i] for paths[i]. */
void session_user_can_all(const struct session_user *u, char *const paths[], size_t n, int mode, bool *ok);

/* Switch the calling process to `u` for good (a child about to exec bwrap):
 * no supplementary groups, then the gid, then the uid, all three of real,
 * effective and saved; verified with getresuid/getresgid. 0 or -errno.
 * The calling task alone changes (the system calls, not glibc's set*id()
 * broadcast to every thread): call it in a child with one thread. Safe in a
 * CLONE_VM child: it allocates nothing and writes no memory but errno. */
int session_user_switch(const struct session_user *u);

/* Give the tree under the directory `dirfd` (and the directory itself) to
 * `u`, through fds, never following a link. For the fresh home before the
 * session: everything trialbox put in it. 0 or the first -errno. */
int session_user_chown_tree(int dirfd, const struct session_user *u);

#endif
