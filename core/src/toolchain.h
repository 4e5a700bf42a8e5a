/* Toolchains: what of the host's installed tools a session needs to see,
 * read-only, so that `cargo --version` or `python3 --version` work inside a
 * Trial where they work on the host. */
#ifndef TB_TOOLCHAIN_H
#define TB_TOOLCHAIN_H

#include "sandbox.h"

/* The tools whose resolved homes are always bound (when installed). */
#define TOOLCHAIN_DEFAULT_TOOLS "cargo:rustc:node:npm:python3:php"

struct toolchain_host {
        const char *path;      /* the host PATH */
        const char *home;      /* the host user's real home */
        const char *tools;     /* extra tools, ':'- or space-separated (TRIALBOX_TOOLCHAINS), or NULL */
        const char *cargo_home, *rustup_home, *pyenv_root; /* host overrides, or NULL */
};

/* Add to `spec` the system folders (/usr, /etc, the merged-usr links, the
 * target of `resolv_conf` (TOOLCHAIN_RESOLV_CONF) when it is a link), /proc,
 * /dev and a tmpfs /tmp. */
#define TOOLCHAIN_RESOLV_CONF "/etc/resolv.conf"
void toolchain_add_system(struct sandbox_spec *spec, const char *resolv_conf);

/* Add read-only binds for every folder on the host PATH and the resolved
 * homes of the default and extra tools, with the variables version managers
 * need once HOME is the fresh home (CARGO_HOME, RUSTUP_HOME, PYENV_ROOT). */
void toolchain_add_tools(struct sandbox_spec *spec, const struct toolchain_host *host);

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
