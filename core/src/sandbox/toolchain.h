/* Toolchains: what of the host's installed tools a session needs to see,
 * read-only, so that `cargo --version` or `python3 --version` work inside a
 * Trial where they work on the host. */
#ifndef TB_TOOLCHAIN_H
#define TB_TOOLCHAIN_H

#include "base/path.h"
#include "sandbox/spec.h"

/* The tools whose resolved homes are always bound (when installed). */
#define TOOLCHAIN_DEFAULT_TOOLS "cargo:rustc:node:npm:python3:php"

struct toolchain_host {
        const char *path;      /* the host PATH */
        const char *home;      /* the host user's real home */
        const char *tools;     /* extra tools, ':'- or space-separated (TRIALBOX_TOOLCHAINS), or NULL */
        const char *cargo_home, *rustup_home, *pyenv_root; /* host overrides, or NULL */
        const char *config_home, *data_home, *state_home;  /* XDG_*_HOME, or NULL */
        const char *secret_places; /* more secret places (TRIALBOX_SECRET_PLACES), or NULL */
        /* realpath's answers for one pass (base/path.h), or NULL: the
         * file system must not change while it is used. */
        struct path_memo *memo;
};

/* Add to `spec` the system folders (/usr, /etc, the merged-usr links, the
 * target of `resolv_conf` (TOOLCHAIN_RESOLV_CONF) when it is a link), /proc,
 * /dev and a tmpfs /tmp. */
#define TOOLCHAIN_RESOLV_CONF "/etc/resolv.conf"
void toolchain_add_system(struct sandbox_spec *spec, const char *resolv_conf);

/* Add read-only binds for every folder on the host PATH and the resolved
 * homes of the default and extra tools, with the variables version managers
 * need once HOME is the fresh home (CARGO_HOME, RUSTUP_HOME, PYENV_ROOT).
 * The rules keep the user's private files out:
 *   - a PATH folder is bound as itself, never its parent; the home and the
 *     folders above it are never bound;
 *   - a PATH folder inside the home (~/.local/bin, ~/bin, a node_modules/.bin)
 *     is not bound whole: each entry the session may run (a regular file
 *     with an execute bit, or a link to one) is bound on its own, nothing
 *     else of the folder (a token file beside the tools stays out);
 *   - a tool on PATH that is a link into its package (npm's .bin, pipx's
 *     ~/.local/bin) is kept a link, and the package bound: for a file in an
 *     npm tree the outermost node_modules (with the dependencies npm put
 *     beside it), else the nearest folder up holding pyvenv.cfg (a venv) or
 *     package.json, else the file's own folder; never one too broad
 *     (toolchain_too_broad), in a secret place, or holding a PATH folder of
 *     the home: then the file alone. Nothing in a secret place is bound for
 *     a tool, nor a PATH folder inside one;
 *   - a tool's home (the parent of its bin folder: /usr, ~/.nvm/versions/
 *     node/v22) is bound unless toolchain_too_broad(); then only the tool's
 *     own file is (~/bin/tool, ~/.local/bin/tool);
 *   - a tool in the Cargo home brings its bin, registry and git folders, its
 *     config.toml when that names no `token`, and the rustup home; never the
 *     Cargo home whole (credentials.toml);
 *   - a tool in the pyenv root brings the root, whole.
 * Whatever these bind, toolchain_mask_secrets() hides the secret places. */
void toolchain_add_tools(struct sandbox_spec *spec, const struct toolchain_host *host);

/* Is the folder `p` too broad to be bound as a tool's home: the host home, a
 * folder above it, a top-level folder of it (~/.local, ~/.cargo, ~/bin) or an
 * XDG base folder (~/.local/share, $XDG_STATE_HOME)? */
bool toolchain_too_broad(const struct toolchain_host *host, const char *p);

/* Hide the secret places (secret_places.h) wherever a bind of `spec` makes
 * one visible. Call it last, once every bind (the plugins' too) is in. */
void toolchain_mask_secrets(struct sandbox_spec *spec, const struct toolchain_host *host);

/* The home of a resolved tool binary: the parent of its folder when that
 * folder is called "bin", else the folder. malloc'd. */
char *toolchain_home_of(const char *resolved);

/* Make the Harness binary `bin` (absolute, on the host) run in the sandbox as
 * SANDBOX_HARNESS_DIR/<name>: a native binary is bound read-only there; a
 * script inside a node_modules tree (an npm launcher) becomes a link to its
 * real path with the whole package tree bound read-only, so its relative
 * requires resolve; a script's interpreter (`#!/usr/bin/env node`) is found
 * next to the launcher or on the PATH and its home bound, its folder put on
 * the session PATH when it is not there already.
 * Returns the path to run inside the sandbox (malloc'd). */
char *toolchain_add_harness(struct sandbox_spec *spec, const char *name, const char *bin,
                            const struct toolchain_host *host);

#endif
