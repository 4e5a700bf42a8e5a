/* Other tools' control files: what agents and editors read from a
 * repository and act on (hooks, tasks, servers to start, shell code), so a
 * session's change to them would run later on the host or steer the next
 * agent. The guard snapshots them before the session, lists every change in
 * the Outcome (`control_files`) and, unless --keep-control-files, puts them
 * back, the session's version kept in the quarantine. */
#ifndef TB_GITGUARD_TOOL_FILES_H
#define TB_GITGUARD_TOOL_FILES_H

#include <stdbool.h>
#include <stddef.h>

struct tool_file {
        const char *path;   /* from the repository's top: a file, or a folder taken whole */
        const char *prefix; /* with `suffix`: the entries of the folder `path` named prefix*suffix */
        const char *suffix;
        const char *why;    /* which tool reads it, and what it does with it */
};

/* The table (tool_files.c), `*n` rows. */
const struct tool_file *tool_files(size_t *n);

#endif
