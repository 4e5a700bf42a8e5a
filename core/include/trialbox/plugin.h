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
 * and, outside that order, `endpoints` (1.1): the network hosts the Harness
 * needs, asked for by `trialbox harnesses` and by the network modes; and
 * `tokens` (1.4), after the session: what its model calls cost, read from
 * the Harness's own files in the Trial's home.
 *
 * A plugin never builds a command line and never touches bwrap: it describes
 * what it needs through the host services below, and the core turns that into
 * the one sandbox invocation. Plugins need no library of the core's: every
 * service arrives as a function pointer in `struct tb_host_services`, with an
 * explicit context pointer, `struct tb_host *`, passed back on every call.
 *
 * Compatibility rules (sudo's): the ABI is versioned by major, minor and size.
 *  - `abi_version` is (major << 16) | minor. The core refuses a plugin whose
 *    major differs from its own, and loads a plugin of the same major and ANY
 *    minor, older or newer than its own.
 *  - `size` is sizeof(struct tb_harness) as the plugin was compiled. Members
 *    are only ever added at the end, each with a minor bump; the core reads a
 *    hook or member only when the plugin's `size` reaches it, so a plugin built
 *    against an older minor simply has no newer hooks (absent, not called)
 *    and no newer members (zero).
 *  - `struct tb_host_services` only grows at its end, each addition with a
 *    minor bump. A plugin built against a newer minor than the core it runs
 *    in (newer than the `abi_version` of the table it is handed) must check
 *    TB_HOST_HAS() before calling a service newer than that core. (A 1.0 core
 *    refuses every newer minor, so the services of 1.1 need no check.)
 *
 * What each minor added:
 *   1.0  the hooks preflight, prepare_login, env; the services log ... require_credential.
 *   1.1  the members flags and endpoints (hook); the services home_dir_from_env,
 *        add_endpoint.
 *   1.2  the member exclusive.
 *   1.3  the service keep_login.
 *   1.4  the hook tokens; the services home_fd, read_jsonl, json_count,
 *        json_string, record_tokens.
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
#define TB_PLUGIN_ABI_MINOR 4
#define TB_PLUGIN_ABI_VERSION ((uint32_t)((TB_PLUGIN_ABI_MAJOR << 16) | TB_PLUGIN_ABI_MINOR))
#define TB_PLUGIN_ABI_MAJOR_OF(v) ((uint32_t)(v) >> 16)
#define TB_PLUGIN_ABI_MINOR_OF(v) ((uint32_t)(v)&0xffffu)

/* The symbol every plugin exports. */
#define TB_PLUGIN_SYMBOL "trialbox_harness"

/* Opaque: the core's state for one Trial (or one `check`). */
struct tb_host;

/* Log levels for tb_host_services.log. */
enum tb_log_level { TB_LOG_ERROR = 0, TB_LOG_WARNING = 1, TB_LOG_INFO = 2, TB_LOG_DEBUG = 3 };

/* How a Harness needs an endpoint, for tb_host_services.add_endpoint (1.1):
 * exactly one of the two. */
#define TB_ENDPOINT_REQUIRED 0x1u /* the Harness does not work without it (its API, its login refresh) */
#define TB_ENDPOINT_OPTIONAL 0x2u /* it tries it and copes without (telemetry, update checks) */

/* What a valid login is, for tb_host_services.keep_login (1.3). */
#define TB_LOGIN_ANY 0u         /* a regular file, not empty */
#define TB_LOGIN_JSON_OBJECT 1u /* a regular file holding one JSON object */

/* Bits of tb_harness.flags (1.1). The core ignores bits it does not know. */
#define TB_HARNESS_NEEDS_USERNS 0x1u /* it runs its own sandbox: keep nested user namespaces */

/* ---- what a Trial cost (1.4) ---- */

/* One unit of a Harness's usage, for tb_host_services.record_tokens: one
 * model response, or a session's running total. The counts are as the
 * Outcome's `tokens` has them: `input` INCLUDES `cached_input` and
 * `cache_write_input` (every token of the prompt, however the provider
 * bills it), `output` INCLUDES `reasoning`. Each count is at most
 * TB_TOKENS_COUNT_MAX. */
struct tb_tokens {
        uint32_t size;              /* sizeof(struct tb_tokens): TB_TOKENS_INIT sets it */
        uint64_t input;             /* prompt tokens, all of them */
        uint64_t cached_input;      /* of those, read from the provider's prompt cache */
        uint64_t cache_write_input; /* of those, written to it */
        uint64_t output;            /* tokens generated, all of them */
        uint64_t reasoning;         /* of those, reasoning (thinking) tokens */
        uint64_t requests;          /* the model responses this unit stands for */
        const char *model;          /* the model that answered, or NULL */
};
#define TB_TOKENS_INIT { .size = sizeof(struct tb_tokens) }
/* The largest count the core takes (2^53 - 1: every JSON reader holds it exactly). */
#define TB_TOKENS_COUNT_MAX 9007199254740991ull

/* Opaque: one line of a JSON Lines file, parsed: one JSON object. */
struct tb_json;

/* Called by read_jsonl for each line that is one JSON object, in file order;
 * `file` numbers the files, 0 the newest. 0 goes on; anything else stops the
 * reading and is returned by read_jsonl. `line` lives until it returns. */
typedef int (*tb_jsonl_fn)(struct tb_host *host, const struct tb_json *line, unsigned file, void *ctx);

/* Bits for tb_host_services.read_jsonl. */
#define TB_JSONL_TAIL 0x1u /* of a file longer than the core reads, its end (the newest lines), not its start */

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

        /* ---- added in ABI 1.1 ---- */

        /* A host folder a Harness keeps its state in: the value of the host
         * variable `var` when it is an absolute path (trailing '/' dropped),
         * else host_home()/`under_home` ("" for the home itself). For
         * CODEX_HOME (".codex"), XDG_CONFIG_HOME (".config"), ... The string
         * belongs to the core and lives until the Trial ends. NULL when
         * `under_home` is NULL, absolute or has a ".." component. */
        const char *(*home_dir_from_env)(struct tb_host *host, const char *var, const char *under_home);

        /* Declare a network endpoint the Harness needs, from the `endpoints`
         * hook: "host:port" or "host" (any port); host a name (case does not
         * matter, a trailing dot is dropped), "*.name" for its strict
         * subdomains, an IPv4 literal or a bracketed IPv6 literal. `how` is
         * TB_ENDPOINT_REQUIRED or TB_ENDPOINT_OPTIONAL. Declared twice, the
         * required one wins. -EINVAL on a bad endpoint or `how`. */
        int (*add_endpoint)(struct tb_host *host, const char *endpoint, unsigned how);

        /* ---- added in ABI 1.3 ---- */

        /* Keep the login file `path`, which the session gets read-write in a
         * shared folder (a Trials home, bound whole): its last good copy is
         * kept where no session reaches it, beside that folder ("FOLDER.kept",
         * 0700, only trialbox writes it), and put back after the session when
         * the session removed the login or left something that is no valid
         * login in its place; a valid login the session wrote (a refreshed
         * token) wins and is kept. Also put back now, when what is there is
         * no valid login. `format` (TB_LOGIN_*) and `max_bytes` (0: 1 MiB)
         * say what a valid login is. Call it from prepare_login, once the
         * folder is locked and wiped, before require_file. Does nothing in
         * `check` or a dry run; -EINVAL on a bad argument. */
        int (*keep_login)(struct tb_host *host, const char *path, unsigned format, size_t max_bytes);

        /* ---- added in ABI 1.4: what a Trial cost ----
         * For the `tokens` hook only, after the session (-EPERM anywhere
         * else). The home is what the session left: attacker-made. These
         * read it the one safe way: through the fd opened before the
         * session, never following a link, opening regular files only
         * (never a FIFO, never waiting), every size and count bounded; a
         * forged file can change the Trial's own numbers, nothing else. */

        /* The Trial's home, an O_DIRECTORY fd opened when the home was made,
         * before the session; it belongs to the core (never close it).
         * -EBADF when there is none: an unsandboxed Trial shares the real
         * home, whose files are not this Trial's alone. For a plugin that
         * must look for itself (openat with O_NOFOLLOW|O_NONBLOCK, fstat,
         * regular files only); read_jsonl does the reading for it. */
        int (*home_fd)(struct tb_host *host);

        /* Read the JSON Lines files the session left under `folder` (relative
         * to the home, no ".." and no link at any step): the regular files
         * whose name ends in `suffix` (and starts with no '.'), at most
         * `max_depth` folders below it (at most 8), owned by the session's
         * user and with one link; newest (modification time) first, at most
         * 256 of them, at most 128 MiB of each (TB_JSONL_TAIL: its last
         * 128 MiB) and 512 MiB in all. Lines longer than 4 MiB, lines that
         * hold none of `needles` (NULL-terminated; NULL: read every line;
         * each at most 63 bytes) and lines that are not one JSON object (at
         * most 128 deep) are skipped; `fn` gets the others. What a bound
         * left out makes the Trial's tokens `partial`. 0 (also when there
         * is no such folder or file), what `fn` stopped with, -EBADF
         * without a home, -EINVAL on a bad argument. */
        int (*read_jsonl)(struct tb_host *host, const char *folder, unsigned max_depth, const char *suffix,
                          const char *const needles[], unsigned flags, tb_jsonl_fn fn, void *ctx);

        /* The count at `path` in `line`: member names joined by '.'
         * ("payload.info.total_token_usage.input_tokens"). 0 with *out set
         * when it is an integer from 0 to TB_TOKENS_COUNT_MAX; -ENOENT when
         * a member on the way is missing or null; -ERANGE when it is
         * negative or larger (refused, never cut); -EINVAL when it is not an
         * integer. */
        int (*json_count)(struct tb_host *host, const struct tb_json *line, const char *path, uint64_t *out);

        /* The string at `path` in `line` (as json_count), or NULL when it is
         * missing or not a string. It belongs to the line. */
        const char *(*json_string)(struct tb_host *host, const struct tb_json *line, const char *path);

        /* Record one unit of usage named `key` (1 to 255 bytes): a later
         * record with the same key replaces the earlier one (a session's
         * running total, a response written once per content block), and
         * the Trial's tokens are the sum over the keys (at most 65536 of
         * them; saturated at TB_TOKENS_COUNT_MAX). The parts are cut to fit
         * what includes them (cached_input + cache_write_input <= input,
         * reasoning <= output). The models are those of every record
         * (valid names: 1 to 64 bytes of printable ASCII but '"' and '\\').
         * 0; -ERANGE (a count over TB_TOKENS_COUNT_MAX) or -ENOSPC (too many
         * keys): nothing recorded, the tokens `partial`; -EINVAL on a bad
         * argument. */
        int (*record_tokens)(struct tb_host *host, const char *key, const struct tb_tokens *tokens);
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

        /* ---- added in ABI 1.1 ---- */

        /* TB_HARNESS_* bits. */
        uint32_t flags;
        /* Declare the Harness's network endpoints with svc->add_endpoint (it
         * may decide from the Credentials, e.g. a provider). Changes nothing
         * else; also called by `trialbox harnesses`. */
        tb_hook_fn endpoints;

        /* ---- added in ABI 1.2 ---- */

        /* A resource the Harness's Trials share and cannot use at once (a
         * shared Trials home, one account's session), or NULL. Trials whose
         * Harnesses name the same resource never run at the same time in one
         * batch: the scheduler starts the next only when the last has ended,
         * holding no slot while it waits. 1 to 64 characters of [a-z0-9._-];
         * a plugin naming anything else is refused. */
        const char *exclusive;

        /* ---- added in ABI 1.4 ---- */

        /* Read what the session's model calls cost from the Harness's own
         * files in the Trial's home (its transcripts, its rollouts), with
         * read_jsonl and json_count, and record it with record_tokens.
         * Called once after every session that ran, whatever its end; never
         * unsandboxed (the Trial's tokens are then null), never in `check`.
         * It cannot void the Trial or change its sandbox: only the services
         * of 1.4 and log work here. Recording nothing leaves the Outcome's
         * tokens null: the Harness wrote nothing readable. */
        tb_hook_fn tokens;
};

/* Declare the exported struct with the right version and size:
 *   TB_HARNESS_DEFINE(.name = "x", .summary = "...", .default_binary = "x",
 *                     .preflight = x_preflight, .endpoints = x_endpoints);  */
#define TB_HARNESS_DEFINE(...)                                                                    \
        __attribute__((visibility("default"))) const struct tb_harness trialbox_harness = {       \
                .abi_version = TB_PLUGIN_ABI_VERSION, .size = sizeof(struct tb_harness), __VA_ARGS__ \
        }

#ifdef __cplusplus
}
#endif

#endif
