/* Logins: handing a Harness's login file to its session.
 *
 *  - in place: the host file bound read-write at the sandbox path (same
 *    inode, so a lock file shared with host processes keeps working);
 *  - synced: a private copy (0600, in a 0700 folder of the fresh home) at the
 *    sandbox path, watched with inotify while the session runs; every change,
 *    whether written in place or renamed over, is written back to the host
 *    file at once and atomically (temporary file in its folder, fsync,
 *    rename, folder fsync), keeping its mode and following a host-side link.
 *    A last check runs after the session; the private copy is removed when
 *    the Trial ends.
 *
 * One host login, many concurrent Trials: write-backs of one host folder
 * are serialized with flock(2) on that folder. Each Trial also watches the
 * host login; when it changes to something this Trial did not last sync
 * (another Trial's session refreshed its token), it is put into this
 * Trial's copy at once (temporary file and rename in the copy's folder),
 * unless the session changed its copy too: then the session's, the newest
 * write, goes to the host and from there to every other Trial. Contents
 * are compared, so an update never bounces back.
 */
#ifndef TB_LOGIN_H
#define TB_LOGIN_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"

struct login_sync;

struct login_set {
        struct login_sync *v;
        size_t n, cap;
        int inotify_fd; /* valid when `watching` */
        bool watching;
        unsigned long writebacks; /* how many times a host file was rewritten */
};

/* Start syncing `host_path` (a file, possibly a link) to the private copy at
 * `copy_path`, in a folder of the fresh home `home`; the copy must not exist
 * yet. Creates the copy's folder (0700) and the copy (0600), and opens the
 * home, that folder and the host login's folder: after the session starts,
 * the home is reached only through these fds, beneath them and through no
 * link, and only a regular file at the login's place is ever read.
 * 0 or negative errno, `err` says why. */
int login_sync_add(struct login_set *set, const char *host_path, const char *home, const char *copy_path,
                   struct tb_error *err);

/* Read pending inotify events and write changed copies back. Every login
 * is tried; 0, or the first failure's negative errno with `err` naming it. */
int login_sync_ready(struct login_set *set, struct tb_error *err);
/* The last check after the session ended; the same return. */
int login_sync_finish(struct login_set *set, struct tb_error *err);

/* Write back one login now if its copy differs from what the host has. 0 or negative errno. */
int login_sync_now(struct login_set *set, size_t i);

/* Remove the private copies and free what `set` holds. */
void login_set_done(struct login_set *set);

#endif
