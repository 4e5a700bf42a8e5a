/* Copy-on-write layers: a folder of the host seen in a sandbox at its own
 * path, writable, every write thrown away with the sandbox, the folder
 * itself left exactly as it was. A grader sees a Trial's final repository
 * this way. Three ways to make one, best first:
 *
 *   COW_BWRAP_OVERLAY  bwrap's own `--overlay-src DIR --tmp-overlay DIR`
 *                      (bubblewrap 0.11 and later, not setuid): the writes
 *                      go to bwrap's own tmpfs, whose size bwrap cannot
 *                      bound (its pages count against the sandbox's memory
 *                      cgroup); the merged folder is the sandbox user's,
 *                      0755, not the repository's own mode and times.
 *   COW_OVERLAYFS      an overlayfs trialbox mounts itself on DIR, in a
 *                      mount namespace of the keeper's bwrap child (the
 *                      spec's `cow`), right before bwrap starts: root takes
 *                      a mount namespace; anyone else a user namespace that
 *                      maps their own ids and mounts with `userxattr`
 *                      (Linux 5.11). The upper and work folders are on a
 *                      tmpfs of the layer's size (and one inode per KiB)
 *                      stacked on DIR itself, so
 *                      nothing is made on the host and everything goes when
 *                      the sandbox's last process does.
 *   COW_COPY           a throwaway copy of DIR (blocks shared where the
 *                      filesystem can: FICLONE), bound at DIR, removed
 *                      after the sandbox (trial/grader.c).
 *
 * Nothing here prints. */
#ifndef TB_COW_H
#define TB_COW_H

#include <stdbool.h>

#include "base/error.h"
#include "sandbox/spec.h"

enum cow_layer {
        COW_AUTO, /* the best one that works here */
        COW_BWRAP_OVERLAY,
        COW_OVERLAYFS,
        COW_COPY,
};

/* "auto", "bwrap-overlay", "overlayfs", "copy". */
const char *cow_layer_name(enum cow_layer l);
/* The layer named `s`: 0, or -EINVAL. */
int cow_layer_parse(const char *s, enum cow_layer *out);

/* Does `help_text` (what `bwrap --help` printed) list --overlay-src and
 * --tmp-overlay? They came with bubblewrap 0.11.0; asking the binary is
 * surer than its version (a distribution may carry them back). */
bool cow_bwrap_help_has_overlay(const char *help_text);

/* Can the bwrap at `path` make a COW_BWRAP_OVERLAY: its --help lists the
 * options, and it is not setuid (bwrap refuses overlays then)? Runs it once. */
bool cow_bwrap_has_overlay(const char *path);

/* In the calling process (the keeper's bwrap child between its clone and
 * its exec, on the keeper's memory, or a probe's child): a private mount
 * namespace (and, when not root, a user namespace mapping the caller's uid
 * and gid to themselves, so that bwrap still sees its own user) in which
 * `cow->path` is an overlayfs: the folder below read-only, the writes into
 * a tmpfs of `cow->size` bytes (the kernel's default size when <= 0), the
 * merged folder given the owner, mode and times of the folder below. The
 * calling process's working folder ends at "/". Allocates nothing and
 * writes no memory but *step, errno and its own stack (snprintf into stack
 * buffers, system calls). 0, or a negative errno with *step (may be NULL)
 * naming the step that failed ("mount(overlay)"). */
int cow_overlay_enter(const struct sandbox_cow *cow, const char **step);

/* Would cow_overlay_enter() work here on `cow->path`? Tried in a child,
 * which then exits: nothing of it is left. 0, or a negative errno with `err`
 * saying which step failed and why. */
int cow_overlay_probe(const struct sandbox_cow *cow, struct tb_error *err);

#endif
