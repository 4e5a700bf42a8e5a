/* Can a Trial start here? The probes `trialbox check` runs: bwrap and the
 * namespaces it needs (a real probe: the very namespaces and mounts a Trial
 * uses), the user namespace sysctls, who a session runs as, the seccomp
 * filter and keyring, the plugins, the Credentials file, the limits'
 * mechanism, and one Harness when asked. Each verdict says what was found
 * and, when it is not ok, the fix. Nothing is printed here: each verdict goes
 * to the caller's function as soon as it is known. */
#ifndef TB_CHECK_H
#define TB_CHECK_H

#include <stdbool.h>

struct tb_env;

enum check_verdict {
        CHECK_FAIL, /* a Trial cannot start until it is fixed */
        CHECK_OK,
        CHECK_WARN, /* worth fixing, but a Trial can start */
};

/* One verdict: `what` was checked ("bwrap", "userns", ...), `detail` says what
 * was found, `fix` what to do (or NULL). The strings live for the call only. */
typedef void (*check_emit_fn)(void *ctx, const char *what, enum check_verdict verdict, const char *detail,
                              const char *fix);

/* Run every check, and the Harness `harness`'s (its plugin, binary, login)
 * when not NULL. Returns true when no verdict was CHECK_FAIL. */
bool check_run(const struct tb_env *env, const char *harness, check_emit_fn emit, void *ctx);

#endif
