/* Would a Trial of this Harness start here? What `trialbox check --harness`
 * and `trialbox harnesses` ask of a loaded plugin, changing nothing: its
 * binary on the PATH, its preflight (run in checking mode), the endpoints it
 * declares. */
#ifndef TB_READINESS_H
#define TB_READINESS_H

#include <stddef.h>

struct plugin;
struct tb_env;
struct tb_host;

struct readiness {
        char *binary;  /* resolved binary, or NULL */
        int ready;
        int login_ok;  /* the plugin's preflight passed */
        char *detail;  /* why not ready (the login's reason first), or NULL */
        char **notes;  /* what the plugin looked for (NULL-terminated, may be NULL) */
        size_t n_notes;
};

/* Is the loaded plugin `p`'s Harness ready here? Looks where `run` would (the
 * home a Trial uses). Release with readiness_done(). */
void readiness_check(const struct plugin *p, const struct tb_env *env, struct readiness *out);

/* Would the plugin's preflight, in checking mode, let a Trial with these
 * Credentials (NULL: the default file) start? NULL when it would, else why
 * (its login or key is missing: malloc'd). What `trialbox batch` asks of
 * each line before anything runs. */
char *readiness_login(const struct plugin *p, const struct tb_env *env, const char *credentials);
void readiness_done(struct readiness *r);

/* The endpoints `p` declares (its `endpoints` hook, asked the way
 * readiness_check asks preflight), into `host`: read them with
 * host_endpoints() and host->notes; release with host_done(). */
void readiness_endpoints(const struct plugin *p, const struct tb_env *env, struct tb_host *host);

#endif
