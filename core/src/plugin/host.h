/* The host services given to plugins: the one place where a plugin's wishes
 * (an environment variable, a voided Trial, a login) become sandbox spec
 * entries and Trial state. */
#ifndef TB_HOST_H
#define TB_HOST_H

#include <trialbox/plugin.h>

#include "logins/login.h"
#include "logins/trials_home.h"
#include "sandbox/spec.h"
#include "base/strv.h"

struct credentials;
struct tb_env;
struct tokens_tally;
struct trial_tokens;

/* A network endpoint a Harness declared with add_endpoint. */
struct host_endpoint {
        char *pattern; /* "api.openai.com:443", "*.example.com", "[::1]:80": lowercase, no trailing dot */
        bool required; /* else optional (telemetry, update checks) */
};

/* What the services show is the logger's verbosity (log.h). */
struct session_user;

struct tb_host {
        const char *harness;
        const struct tb_env *env;  /* the host environment (host_getenv, the Credentials' default path) */
        struct sandbox_spec *spec; /* NULL when only checking */
        bool sandboxed;
        bool checking;             /* `check`/`harnesses`: record, change nothing */
        const char *host_home;
        const char *session_home;

        bool dry_run;              /* record binds, touch no file */
        const char *credentials_path; /* --credentials, or NULL for the default */

        bool voided;
        char void_detail[1024];
        char fail_detail[1024];    /* why a service failed, for the Outcome */
        struct strv notes;

        /* What the services hold until the Trial ends. */
        struct credentials *creds;
        bool creds_loaded;
        struct login_set logins;
        int lock_fds[8];
        size_t n_locks;
        struct kept_login kept[4]; /* keep_login's logins, put back after the session */
        size_t n_kept;
        struct strv handed;        /* strings the services returned (home_dir_from_env) */

        /* What the `endpoints` hook declared, in order, each pattern once. */
        struct host_endpoint *endpoints;
        size_t n_endpoints;

        /* Who the session runs as (session_user.h); NULL: trialbox's own. */
        const struct session_user *session_user;

        /* What a Trial cost (plugin/tokens.h): the fresh home's fd, opened
         * before the session (the Trial's; NULL or -1: none), and, only while
         * the `tokens` hook runs after the session, what it reads and records. */
        const int *home_fd;
        bool after_session; /* in the tokens hook: nothing may change the Trial any more */
        struct tokens_tally *tally;
};


/* The services table (static, shared by every host context). */
const struct tb_host_services *host_services(void);

/* Call one hook of a plugin with `host`; a hook that voids returns
 * -ECANCELED. Hooks the plugin does not have succeed. */
int host_call(struct tb_host *host, tb_hook_fn hook);

/* Is `endpoint` one add_endpoint accepts ("host[:port]", see plugin.h)? */
bool host_endpoint_valid(const char *endpoint);

/* The endpoints declared so far (by host_call(host, plugin->endpoints)),
 * owned by `host`: valid until host_done. */
const struct host_endpoint *host_endpoints(const struct tb_host *host, size_t *n);

/* After the session, before host_done: the logins keep_login keeps are
 * put back where the session removed or broke them (a warning says so), or
 * kept when the session wrote newer valid ones. */
void host_after_session(struct tb_host *host);

/* After the session that ran (whatever its end), sandboxed: call the
 * plugin's `tokens` hook (NULL: none) with the services of ABI 1.4 open,
 * and put what it recorded into `out` (out->known false: the Harness wrote
 * nothing readable; also unsandboxed, in `check` and in a dry run, where
 * the hook is not called). Says the totals with -v, and warns when they
 * are partial. */
void host_read_tokens(struct tb_host *host, tb_hook_fn hook, struct trial_tokens *out);

/* Release what the services hold (credentials, logins, locks); not `host` itself. */
void host_done(struct tb_host *host);

#endif
