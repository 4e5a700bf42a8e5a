/* The host's git, run with nothing of a session's: used by the repository
 * guard (the paths the host's config names) and the git identity. */
#ifndef TB_GITGUARD_HOSTGIT_H
#define TB_GITGUARD_HOSTGIT_H

#include <stdbool.h>
#include <stddef.h>

/* Run the host's `git` with `args` (after argv[0]), HOME `home`, cwd `/`,
 * no system config and nothing else of the environment; its stdout (read to
 * the end, up to `cap` - 1 bytes kept) in `out`. false when it fails or says
 * more than that. */
bool host_git_run(const char *git, const char *home, const char *const args[], char *out, size_t cap,
                  size_t *len_out);

/* The host user's global config files, relative to their home, in the
 * order `git config --global` reads them (the last value wins), with HOME
 * set and XDG_CONFIG_HOME not (as host_git_run runs git). */
extern const char *const host_git_global_files[2];

#endif
