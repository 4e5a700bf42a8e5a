/* trialbox plugin ABI.
 *
 * A Harness plugin is a shared object `NAME.so` that exports one symbol,
 * `trialbox_harness`, a const `struct tb_harness`. The core dlopens exactly
 * the plugin asked for, checks the struct (ABI version, size, name) and calls
 * its hooks in this order, each at most once per Trial:
 *
 *   preflight      may the session start at all? (login present, key present)
 *   prepare_login  hand the login over (bind it, sync it, lock a Trials home)
 *   env            set the Harness's environment (self-update off, ...)
 *
 * A plugin never builds a command line and never touches bwrap: it describes
 * what it needs through the host services below, and the core turns that into
 * the one sandbox invocation. Plugins need no library of the core's: every
 * service arrives as a function pointer in `struct tb_host_services`, with an
 * explicit context pointer, `struct tb_host *`, passed back on every call.
 *
 * Compatibility rules:
 *  - `abi_version` is (major << 16) | minor. The core refuses a plugin whose
 *    major differs from its own, or whose minor is newer than its own.
 *  - `size` is sizeof(struct tb_harness) as the plugin was compiled. Fields are
 *    only ever added at the end; a hook past the plugin's `size` is absent.
 *  - `struct tb_host_services` only grows at its end; a plugin must check
 *    `services->size` before calling a member added after ABI 1.0 (use
 *    TB_HOST_HAS()).
 *
 * Hooks return 0 on success or a negative errno value. A hook that decides the
 * session must not start calls `svc->void_trial()` and returns its result.
 */
#ifndef TRIALBOX_PLUGIN_H
#define TRIALBOX_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TB_PLUGIN_ABI_MAJOR 1
#define TB_PLUGIN_ABI_MINOR 0
#define TB_PLUGIN_ABI_VERSION ((uint32_t)((TB_PLUGIN_ABI_MAJOR << 16) | TB_PLUGIN_ABI_MINOR))
#define TB_PLUGIN_ABI_MAJOR_OF(v) ((uint32_t)(v) >> 16)
#define TB_PLUGIN_ABI_MINOR_OF(v) ((uint32_t)(v)&0xffffu)

/* The symbol every plugin exports. */
#define TB_PLUGIN_SYMBOL "trialbox_harness"

/* Opaque: the core's state for one Trial (or one `check`). */
struct tb_host;

/* Log levels for tb_host_services.log. */
enum tb_log_level { TB_LOG_ERROR = 0, TB_LOG_WARNING = 1, TB_LOG_INFO = 2, TB_LOG_DEBUG = 3 };

/* The services the core offers a plugin. Every member takes the context
 * pointer it was handed with the table. Strings passed in are copied by the
 * core; strings returned belong to the core and live until the hook returns. */
struct tb_host_services {
        /* sizeof(struct tb_host_services) as the core was built. */
        uint32_t size;
        /* The core's TB_PLUGIN_ABI_VERSION. */
        uint32_t abi_version;

        /* Print a message prefixed with the Harness name, at a level filtered
         * by -v/-q. Never pass a secret. */
        void (*log)(struct tb_host *host, enum tb_log_level level, const char *fmt, ...)
                __attribute__((format(printf, 3, 4)));

        /* The value of a variable in trialbox's own (host) environment, or
         * NULL. For locating logins (CODEX_HOME, XDG_CONFIG_HOME, ...); what
         * reaches the session is only what `setenv` puts there. */
        const char *(*host_getenv)(struct tb_host *host, const char *name);

        /* The host user's real home folder (never the fresh home). */
        const char *(*host_home)(struct tb_host *host);

        /* The Trial's home as the session sees it: the fresh home when
         * sandboxed, the real home when not. */
        const char *(*session_home)(struct tb_host *host);

        /* Whether the Trial runs in the sandbox (1) or not (0). */
        int (*sandboxed)(struct tb_host *host);

        /* Set a variable in the session's environment. `secret` values are
         * redacted wherever trialbox prints them. -EINVAL on a bad name. */
        int (*setenv)(struct tb_host *host, const char *name, const char *value, int secret);

        /* Decide that the session must not start: the Trial becomes
         * void/session_unavailable with `detail` (one sentence: what is
         * missing and how to provide it). Returns -ECANCELED, which the hook
         * returns. In `check` it only records the verdict. */
        int (*void_trial)(struct tb_host *host, const char *detail);

        /* Record a readiness note for `trialbox check` and `harnesses`: what
         * was looked for and where ("login: /root/.codex/auth.json present").
         * Harmless during a Trial (printed with -v). */
        void (*note)(struct tb_host *host, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

        /* ---- logins ----
         * `sandbox_path` is where the session finds the login, an absolute
         * path inside session_home(). Unsandboxed, the session already sees
         * the host file: these do nothing and succeed. */

        /* Bind the host file read-write at `sandbox_path`: the same inode, so
         * a lock shared with host processes works. The file must exist. */
        int (*login_in_place)(struct tb_host *host, const char *host_path, const char *sandbox_path);

        /* Put a private copy (0600) of the host file at `sandbox_path` and
         * write every change of it back to the host file at once, atomically,
         * keeping its mode and following a host-side link. For logins the
         * Harness rewrites by renaming a new file over the old one. */
        int (*login_synced)(struct tb_host *host, const char *host_path, const char *sandbox_path);

        /* Bind a host file or folder at `sandbox_path` (read-only unless
         * `writable`). For a folder the Harness renames files inside. */
        int (*bind)(struct tb_host *host, const char *host_path, const char *sandbox_path, int writable);

        /* The value of `key` in this Harness's own section of the Credentials,
         * or NULL. Other sections cannot be read ("claude.setup_token" from
         * another plugin gives NULL). A malformed Credentials file voids the
         * Trial with the parse error. */
        const char *(*credential)(struct tb_host *host, const char *key);

        /* Write `content` to `relative_path` inside the fresh home (mode 0600,
         * folders 0700, atomically). -EPERM when unsandboxed (it would be the
         * real home). */
        int (*write_home_file)(struct tb_host *host, const char *relative_path, const char *content);

        /* Take an exclusive lock (flock) on the file `path` (created 0600 if
         * missing), held until the Trial ends, waiting up to `timeout_ms`.
         * -ETIMEDOUT when it was not had in time. */
        int (*lock)(struct tb_host *host, const char *path, long timeout_ms);

        /* Remove everything inside the folder `dir` but the regular files
         * named in `keep` (NULL-terminated), never following a link. */
        int (*wipe_except)(struct tb_host *host, const char *dir, const char *const keep[]);

        /* ---- preflight helpers: look, note, void ---- */

        /* Is `path` a readable regular file? Notes "<what>: '<path>' (present)"
         * and returns 0, or voids the Trial with "no <what> at '<path>'; <how>"
         * and returns -ECANCELED. */
        int (*require_file)(struct tb_host *host, const char *what, const char *path, const char *how);

        /* The value of `key` in this Harness's section of the Credentials
         * (see `credential`), noted as present; or NULL with the Trial voided
         * "no <section>.<key> in the Credentials '<file>'; <how>". */
        const char *(*require_credential)(struct tb_host *host, const char *key, const char *how);
};

/* Does this services table reach member `m`? */
#define TB_HOST_HAS(svc, m) ((svc)->size >= offsetof(struct tb_host_services, m) + sizeof((svc)->m))

typedef int (*tb_hook_fn)(const struct tb_host_services *svc, struct tb_host *host);

/* The one struct a plugin exports as `trialbox_harness`. */
struct tb_harness {
        uint32_t abi_version;       /* TB_PLUGIN_ABI_VERSION */
        uint32_t size;              /* sizeof(struct tb_harness) */
        const char *name;           /* must equal the file name without ".so" */
        const char *summary;        /* one line for `trialbox harnesses` */
        const char *default_binary; /* looked up on the host PATH unless absolute */

        /* May the session start? Read-only checks; void the Trial if not.
         * Also called by `check` and `harnesses` to report readiness. */
        tb_hook_fn preflight;
        /* Hand the login over. Called only for a Trial that will run. */
        tb_hook_fn prepare_login;
        /* Set the Harness's own environment. */
        tb_hook_fn env;
};

/* Declare the exported struct with the right version and size:
 *   TB_HARNESS_DEFINE(.name = "x", .summary = "...", .default_binary = "x",
 *                     .preflight = x_preflight);                          */
#define TB_HARNESS_DEFINE(...)                                                                    \
        __attribute__((visibility("default"))) const struct tb_harness trialbox_harness = {       \
                .abi_version = TB_PLUGIN_ABI_VERSION, .size = sizeof(struct tb_harness), __VA_ARGS__ \
        }

#ifdef __cplusplus
}
#endif

#endif
