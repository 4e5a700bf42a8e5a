/* The sandbox spec: plain data describing one Trial's sandbox (like
 * bubblewrap's list of SetupOps), built by the Trial and the plugin hooks,
 * inspected by --dry-run and the tests, and only then turned into one bwrap
 * command line. Nothing here runs anything. */
#ifndef TB_SANDBOX_H
#define TB_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>

#include "base/strv.h"

/* The folder under which the Harness binary appears in the sandbox. */
#define SANDBOX_HARNESS_DIR "/sandbox/harness"
/* The fd bwrap writes its JSON status documents to. */
#define SANDBOX_STATUS_FD 3
/* Where the keeper (sandbox/keeper.h) finds its fds, above bwrap's stdin,
 * stdout, stderr and SANDBOX_STATUS_FD: the pipe bwrap's --block-fd reads
 * (passed on to bwrap), and the exec-error pipe (close-on-exec). The
 * seccomp filter's fd (sandbox/confine.h) is placed above them. */
#define KEEPER_BLOCK_FD 4
#define KEEPER_BLOCK_FD_STR "4"
#define KEEPER_EXEC_ERR_FD 5
/* The keeper's own copy of the block pipe's write end (never written, not
 * passed to bwrap): however trialbox ends, bwrap sees no end of file on
 * its --block-fd while it lives, so no session starts before its byte;
 * the keeper kills bwrap first when trialbox is gone. */
#define KEEPER_BLOCK_HOLD_FD 6
/* The seccomp filter's fd is the lowest free one from here: above the
 * fds trialbox holds open at once (a few dozen at most), so that its
 * number, printed in the --dry-run line, is the same in every run,
 * whatever another thread had open when it was made. */
#define SANDBOX_FILTER_FD_MIN 100

enum sandbox_op_kind {
        SANDBOX_RO_BIND, /* --ro-bind src dest */
        SANDBOX_BIND,    /* --bind src dest */
        SANDBOX_SYMLINK, /* --symlink src(target) dest */
        SANDBOX_DIR,     /* --dir dest */
        SANDBOX_TMPFS,   /* --tmpfs dest */
        SANDBOX_PROC,    /* --proc dest */
        SANDBOX_DEV,     /* --dev dest */
        /* --overlay-src src --tmp-overlay dest (bwrap >= 0.9): src seen at
         * dest, every write going to a tmpfs that dies with the sandbox. */
        SANDBOX_TMP_OVERLAY,
};

struct sandbox_op {
        enum sandbox_op_kind kind;
        char *src; /* NULL for dir/tmpfs/proc/dev */
        char *dest;
};

struct sandbox_env {
        char *name;
        char *value;
        bool secret; /* redacted wherever it is printed */
};

struct sandbox_spec {
        struct sandbox_op *ops;
        size_t n_ops, cap_ops;
        struct sandbox_env *env;
        size_t n_env, cap_env;
        struct strv command; /* argv of the session, as the sandbox sees it */
        char *chdir;         /* working folder of the session */
        /* Confinement (confine.h). A zeroed spec has none of it. */
        int seccomp_fd;      /* > 0: a BPF program bwrap loads (--seccomp N, first); owned, closed by _free */
        bool disable_userns; /* --unshare-user --disable-userns: no nested user namespaces */
        /* > 0: the size in bytes of every tmpfs (`--size N` before each
         * `--tmpfs`; /tmp and TMPDIR are bounded by --memory). */
        long long tmpfs_size;
        /* Network: a network namespace of its own, loopback only (--unshare-net). */
        bool unshare_net;
        /* A copy-on-write layer trialbox mounts itself (sandbox/cow.h)
         * before bwrap starts: NULL path for none. */
        struct sandbox_cow {
                char *path;     /* the folder covered, absolute and real; the spec binds it onto itself */
                long long size; /* the layer's size in bytes (its tmpfs); <= 0: the kernel's default */
        } cow;
};

void sandbox_spec_done(struct sandbox_spec *spec);

/* Append an operation; operations are applied in order, later ones on top. */
void sandbox_add(struct sandbox_spec *spec, enum sandbox_op_kind kind, const char *src, const char *dest);
/* Insert an operation before the one at `index` (index n_ops appends). */
void sandbox_insert(struct sandbox_spec *spec, size_t index, enum sandbox_op_kind kind, const char *src,
                    const char *dest);

/* Is `path` already visible in the sandbox as the same host path, through a
 * bind of a folder onto itself that contains it? */
bool sandbox_covers(const struct sandbox_spec *spec, const char *path);

/* Find the operation whose dest is exactly `dest`, or NULL. */
const struct sandbox_op *sandbox_find(const struct sandbox_spec *spec, const char *dest);

/* Set (or replace) a variable of the session's environment. */
void sandbox_setenv(struct sandbox_spec *spec, const char *name, const char *value, bool secret);
const char *sandbox_getenv(const struct sandbox_spec *spec, const char *name);
/* Is `name` a valid environment variable name? */
bool sandbox_env_name_valid(const char *name);
/* May a user's own variable for the session (a plan's `env`, `run
 * --env-file`) have this name? Not one trialbox sets itself (HOME, PATH,
 * USER, LOGNAME, TMPDIR, the XDG_*_HOME and XDG_RUNTIME_DIR folders, the
 * proxy variables of --network allow in either case, TRIALBOX_*), nor LD_*
 * (the environment reaches bwrap too, outside the sandbox, whose loader
 * would take it). NULL when it may; else why not. */
const char *sandbox_env_reserved(const char *name);

/* The environment as "NAME=value" strings, for execve. */
void sandbox_envp(const struct sandbox_spec *spec, struct strv *out);

/* Where the Harness `name`'s program is in the sandbox, SANDBOX_HARNESS_DIR/
 * NAME: the first word of every session's command (no plugin adds another).
 * Allocated. */
char *sandbox_harness_path(const char *name);

/* The bwrap argv (argv[0] = bwrap) for this spec: --seccomp N first (where
 * the keeper finds the fd to pass on: confine_argv_fd), the fixed isolation flags,
 * the operations, --chdir, --json-status-fd SANDBOX_STATUS_FD, then "--" and
 * the command. Secrets never appear in argv: the environment goes through
 * execve. */
void sandbox_argv(const struct sandbox_spec *spec, const char *bwrap, struct strv *out);

/* One shell line that reproduces the run: `env -i NAME=value … bwrap …`,
 * secret values shown as '<redacted>'. With bwrap NULL, the unsandboxed
 * command (run in spec->chdir). malloc'd. */
char *sandbox_render(const struct sandbox_spec *spec, const char *bwrap);

#endif
