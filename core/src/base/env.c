#define _GNU_SOURCE
#include "base/env.h"

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/path.h"

extern char **environ;

/* The one home: a relative or empty $HOME is not a home (as in
 * credentials' XDG rule), and "/" is never guessed. */
static const char *resolve_home(struct tb_env *env)
{
        const char *h = getenv("HOME");
        if (h && h[0] == '/')
                return h;
        struct passwd *pw = getpwuid(getuid());
        if (!pw || !pw->pw_dir || pw->pw_dir[0] != '/')
                return NULL;
        env->home_owned = xstrdup(pw->pw_dir);
        return env->home_owned;
}

void tb_env_init(struct tb_env *env)
{
        const char *path = getenv("PATH");

        *env = (struct tb_env){
                .environ = environ,
                .path = path && *path ? path : TB_DEFAULT_PATH,
                .xdg_config_home = getenv("XDG_CONFIG_HOME"),
                .xdg_data_home = getenv("XDG_DATA_HOME"),
                .xdg_state_home = getenv("XDG_STATE_HOME"),
                .no_sandbox = getenv("TRIALBOX_NO_SANDBOX"),
                .env_allow = getenv("TRIALBOX_ENV_ALLOW"),
                .bwrap = getenv("TRIALBOX_BWRAP"),
                .toolchains = getenv("TRIALBOX_TOOLCHAINS"),
                .plugin_path = getenv("TRIALBOX_PLUGIN_PATH"),
                .cargo_home = getenv("CARGO_HOME"),
                .rustup_home = getenv("RUSTUP_HOME"),
                .pyenv_root = getenv("PYENV_ROOT"),
                .secret_places = getenv("TRIALBOX_SECRET_PLACES"),
                .test_hosts = getenv("TRIALBOX_TEST_HOSTS"),
                .batch_backoff_ms = getenv("TRIALBOX_BATCH_BACKOFF_MS"),
                .record_nonce = getenv("TRIALBOX_RECORD_NONCE"),
                .cpus_busy = getenv("TRIALBOX_CPUS_BUSY"),
        };
        env->home = resolve_home(env);
}

void tb_env_done(struct tb_env *env)
{
        free(env->home_owned);
        *env = (struct tb_env){ 0 };
}

const char *tb_env_get(const struct tb_env *env, const char *name)
{
        if (!env) /* a host context made without one (tests, checking) */
                return NULL;
        return env_lookup(env->environ, name);
}

const char *env_lookup(char *const envp[], const char *name)
{
        size_t n = strlen(name);
        for (char *const *e = envp; e && *e; e++)
                if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
                        return *e + n + 1;
        return NULL;
}
