#include "base/error.h"
/* The host user's git identity, given to a session. */
#ifndef TB_GITGUARD_IDENTITY_H
#define TB_GITGUARD_IDENTITY_H

struct tb_error;

/* Give the session the host user's git identity, and nothing else of its git
 * config: user.name and user.email as the host's `git config --global
 * --includes -z --get-regexp '^user\.(name|email)$'` gives them (`git` found
 * on `path`, HOME `host_home`, cwd `/`, so no includeIf "gitdir:" matches,
 * no system config, nothing else of the environment), read by gitconfig.c
 * itself when the files use only the syntax it follows, else by that run
 * of git (a no-op Trial's start-up would otherwise be mostly git's), and write the two
 * values, quoted, to `session_home/.gitconfig` (0600, written atomically):
 * the session's git then finds them as the host's would, a repository's own
 * user.name still first, and `git config user.name` shows them. No identity
 * or no git: nothing written, 0. A negative errno with `err` set when the
 * file cannot be written. */
int git_identity_write(const char *path, const char *host_home, const char *session_home, struct tb_error *err);

#endif
