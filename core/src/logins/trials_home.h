/* A Trials home: state a Harness keeps across Trials in one host folder
 * (Grok's), used by one Trial at a time and wiped to its login before each. */
#ifndef TB_TRIALS_HOME_H
#define TB_TRIALS_HOME_H

#include "base/error.h"

/* Lock `path` (a file, created 0600 if missing, never through a link) with
 * flock(LOCK_EX), waiting up to `timeout_ms`. On success *fd holds the lock
 * (O_CLOEXEC) until closed. -ETIMEDOUT when not had in time. */
int trials_home_lock(const char *path, long timeout_ms, int *fd, struct tb_error *err);

/* Remove everything inside `dir` but the regular files named in `keep`,
 * walking with openat/unlinkat and O_NOFOLLOW: a link is removed, never
 * followed. `dir` itself must be a real folder. 0 or negative errno. */
int trials_home_wipe(const char *dir, const char *const keep[], struct tb_error *err);

#endif
