/* A Trials home: state a Harness keeps across Trials in one host folder
 * (Grok's), used by one Trial at a time and wiped to its login before each,
 * and the login in it kept where no session reaches it. */
#ifndef TB_TRIALS_HOME_H
#define TB_TRIALS_HOME_H

#include <stddef.h>

#include "base/error.h"

/* Lock `path` (a file, created 0600 if missing, never through a link) with
 * flock(LOCK_EX), waiting up to `timeout_ms`. On success *fd holds the lock
 * (O_CLOEXEC) until closed. -ETIMEDOUT when not had in time. */
int trials_home_lock(const char *path, long timeout_ms, int *fd, struct tb_error *err);

/* Remove everything inside `dir` but the regular files named in `keep`,
 * walking with openat/unlinkat and O_NOFOLLOW: a link is removed, never
 * followed. `dir` itself must be a real folder. 0 or negative errno. */
int trials_home_wipe(const char *dir, const char *const keep[], struct tb_error *err);

/* ---- the kept login ----
 * A Trials home is bound read-write into the session, login and all: a
 * session may remove the login or leave something else in its place (a
 * FIFO, a folder, a link, an empty or broken file), which would void every
 * later Trial and lose the host's only login. So the last good login is
 * kept beside the Trials home, in a folder only trialbox writes
 * ("HOME.kept", 0700; the copy 0600, written atomically and synced), and
 * put back after the session when what the session left is no valid login.
 * A valid login the session wrote (a refreshed token) wins: it becomes the
 * kept copy. After the session starts, both folders are reached only
 * through fds opened before it, and only a regular file is read there,
 * opened O_NOFOLLOW|O_NONBLOCK (a FIFO is never waited on). */

/* What a valid login is. */
enum kept_format {
        KEPT_ANY,         /* a regular file, not empty, at most `max` bytes */
        KEPT_JSON_OBJECT, /* the same, holding one JSON object (whitespace around it) */
};

/* The default of `max`. */
#define KEPT_LOGIN_MAX ((size_t)1024 * 1024)

struct kept_login {
        int dir_fd;      /* the login's folder (the Trials home) */
        int keep_fd;     /* the keeping folder beside it */
        char *name;      /* the login's file name */
        char *path;      /* the login's path, for messages */
        char *kept_path; /* the kept copy's path, for messages */
        enum kept_format format;
        size_t max;
};
#define KEPT_LOGIN_INIT ((struct kept_login){ .dir_fd = -1, .keep_fd = -1 })

/* Start keeping the login file `path` (absolute, in a Trials home, which
 * must be a real folder): open its folder and the keeping folder beside it
 * ("HOME.kept", made 0700 when missing, set to 0700 when it is looser),
 * then kept_login_sync(). Call it before the session, with the Trials
 * home's lock held. 0, or a negative errno with `err`; kept_login_done()
 * frees `k` either way. */
int kept_login_open(struct kept_login *k, const char *path, enum kept_format format, size_t max,
                    const char **restored, struct tb_error *err);

/* Bring the login and its kept copy together, through the fds opened
 * before the session (a folder the session left closed, chmod 000, is
 * opened up to 0700 first): a valid login becomes the kept copy (when it
 * differs); otherwise a valid kept copy is put back in its place (whatever
 * is there removed, a folder with all it holds; the copy 0600, atomically,
 * owned like the Trials home when trialbox runs as root) and *restored says
 * what was found (a static string: "missing", "empty", "a FIFO", ...). With
 * no valid login anywhere nothing is changed. *restored is NULL when
 * nothing was put back. 0, or a negative errno with `err`. */
int kept_login_sync(struct kept_login *k, const char **restored, struct tb_error *err);

/* Close and free what `k` holds; it is KEPT_LOGIN_INIT again. */
void kept_login_done(struct kept_login *k);

/* Is `data` (`len` bytes) a valid login of `format`, at most `max` bytes?
 * NULL when it is, else what it is instead ("empty", "not a JSON object",
 * ...; a static string). */
const char *kept_login_invalid(const char *data, size_t len, enum kept_format format, size_t max);

#endif
