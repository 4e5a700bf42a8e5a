/* The host environment, read once at the command boundary and passed down
 * (crun's init_libcrun_context fills libcrun_context_t the same way): every
 * variable the core looks at, resolved one way, and the environment itself
 * for the session's allowlist and the plugins' host_getenv. Nothing below
 * the command layer calls getenv(). */
#ifndef TB_ENV_H
#define TB_ENV_H

/* Transitional: cmd/ gets the base helpers from here (base/util.h). */
#include "base/util.h"

struct tb_env {
        char **environ;              /* the host environment (borrowed, NULL-terminated) */
        const char *home;            /* $HOME when absolute, else the password database's
                                        home when absolute, else NULL */
        const char *path;            /* $PATH, or TB_DEFAULT_PATH when unset or empty */
        const char *xdg_config_home; /* as set, or NULL (relative ones are the caller's to ignore) */
        const char *xdg_data_home;   /* XDG_DATA_HOME, likewise */
        const char *xdg_state_home;  /* XDG_STATE_HOME, likewise */
        const char *no_sandbox;      /* TRIALBOX_NO_SANDBOX */
        const char *env_allow;       /* TRIALBOX_ENV_ALLOW: more variables for the session */
        const char *bwrap;           /* TRIALBOX_BWRAP: the bwrap to use, or NULL/"" for PATH's */
        const char *toolchains;      /* TRIALBOX_TOOLCHAINS */
        const char *plugin_path;     /* TRIALBOX_PLUGIN_PATH */
        const char *cargo_home;      /* CARGO_HOME */
        const char *rustup_home;     /* RUSTUP_HOME */
        const char *pyenv_root;      /* PYENV_ROOT */
        const char *secret_places;   /* TRIALBOX_SECRET_PLACES: more places no session sees */
        const char *batch_backoff_ms; /* TRIALBOX_BATCH_BACKOFF_MS: a batch's first retry delay */
        const char *record_nonce;     /* TRIALBOX_RECORD_NONCE: the batch's token its run echoes in outcome.json */
        const char *cpus_busy;        /* TRIALBOX_CPUS_BUSY: every CPU taken by work like this (base/cpus.h) */
        const char *test_hosts;      /* TRIALBOX_TEST_HOSTS: the proxy's test-only name map (test builds) */

        char *home_owned;            /* the password database's home, when that is `home` */
};

/* Fill `env` from this process's environment. The strings are borrowed from
 * the environment (not copied) except the home; release with tb_env_done(). */
void tb_env_init(struct tb_env *env);
void tb_env_done(struct tb_env *env);

/* The value of `name` in env->environ, or NULL. */
const char *tb_env_get(const struct tb_env *env, const char *name);

/* The value of `name` in the NULL-terminated `envp` (may be NULL), or NULL. */
const char *env_lookup(char *const envp[], const char *name);

#endif
