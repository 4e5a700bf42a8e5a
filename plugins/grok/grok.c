/* Grok Build: every Grok Trial shares one Trials home,
 * $XDG_STATE_HOME/trialbox/trials/grok (default ~/.local/state/...), which
 * holds only the login (auth.json) and a lock (.lock). One Grok Trial at a
 * time: the lock is taken (waiting up to TRIALBOX_GROK_WAIT seconds, default
 * 1800) before the home is wiped to those two and bound as a folder, so
 * Grok's renames inside it work. The lock file is bound read-only over
 * itself, so a session cannot remove or replace it. The login is the host's
 * only Grok login: the core keeps its last good copy out of the session's
 * reach and puts it back when a session removes or breaks it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <trialbox/plugin.h>

#define GROK_LOGIN "auth.json"
#define GROK_LOCK ".lock"
#define GROK_WAIT_DEFAULT_S 1800
/* The largest auth.json taken for a login (Grok's is a few hundred bytes). */
#define GROK_LOGIN_MAX ((size_t)256 * 1024)

static int grok_home(const struct tb_host_services *svc, struct tb_host *host, char *buf, size_t n)
{
        const char *state = svc->home_dir_from_env(host, "XDG_STATE_HOME", ".local/state");
        return state && snprintf(buf, n, "%s/trialbox/trials/grok", state) < (int)n ? 0 : -ENAMETOOLONG;
}

static int grok_require_login(const struct tb_host_services *svc, struct tb_host *host, const char *home)
{
        char login[4200], how[8400];
        snprintf(login, sizeof login, "%s/" GROK_LOGIN, home);
        snprintf(how, sizeof how, "put Grok's login there: mkdir -p '%s' && GROK_HOME='%s' grok login", home, home);
        return svc->require_file(host, "Grok login in the Trials home", login, how);
}

static int grok_preflight(const struct tb_host_services *svc, struct tb_host *host)
{
        char home[4096];
        int r = grok_home(svc, host, home, sizeof home);
        return r < 0 ? r : grok_require_login(svc, host, home);
}

static long grok_wait_ms(const struct tb_host_services *svc, struct tb_host *host)
{
        const char *v = svc->host_getenv(host, "TRIALBOX_GROK_WAIT");
        char *end;
        double s = v && *v ? strtod(v, &end) : GROK_WAIT_DEFAULT_S;
        if (v && *v && (*end || s < 0)) {
                svc->log(host, TB_LOG_WARNING, "TRIALBOX_GROK_WAIT='%s' is not a number of seconds; using %d", v,
                         GROK_WAIT_DEFAULT_S);
                s = GROK_WAIT_DEFAULT_S;
        }
        return (long)(s * 1000);
}

static int grok_prepare_login(const struct tb_host_services *svc, struct tb_host *host)
{
        char home[4096], lock[4200];
        static const char *const keep[] = { GROK_LOGIN, GROK_LOCK, NULL };
        int r = grok_home(svc, host, home, sizeof home);
        if (r < 0)
                return r;
        snprintf(lock, sizeof lock, "%s/" GROK_LOCK, home);

        long wait = grok_wait_ms(svc, host);
        r = svc->lock(host, lock, wait);
        if (r == -ETIMEDOUT) {
                char detail[8400];
                snprintf(detail, sizeof detail,
                         "the Grok Trials home '%s' stayed busy for %.1f s (another Grok Trial holds its lock); "
                         "run Grok Trials one at a time or raise TRIALBOX_GROK_WAIT",
                         home, wait / 1000.0);
                return svc->void_trial(host, detail);
        }
        if (r < 0)
                return r;
        r = svc->wipe_except(host, home, keep);
        if (r < 0)
                return r;
        char login[4200];
        snprintf(login, sizeof login, "%s/" GROK_LOGIN, home);
        if (TB_HOST_HAS(svc, keep_login) && (r = svc->keep_login(host, login, TB_LOGIN_JSON_OBJECT, GROK_LOGIN_MAX)) < 0)
                return r;
        /* The wipe removes a login that was a link: look again. */
        r = grok_require_login(svc, host, home);
        if (r < 0)
                return r;
        r = svc->bind(host, home, home, 1);
        return r < 0 ? r : svc->bind(host, lock, lock, 0);
}

static int grok_env(const struct tb_host_services *svc, struct tb_host *host)
{
        char home[4096];
        int r = grok_home(svc, host, home, sizeof home);
        if (r == 0)
                r = svc->setenv(host, "GROK_HOME", home, 0);
        if (r == 0)
                r = svc->setenv(host, "GROK_DISABLE_AUTOUPDATER", "1", 0);
        if (r == 0)
                r = svc->setenv(host, "GROK_FOLDER_TRUST", "0", 0);
        return r;
}

/* xAI's API; its update check is off (GROK_DISABLE_AUTOUPDATER). Not yet
 * seen through a logging proxy: a guess from the name, kept to the API. */
static int grok_endpoints(const struct tb_host_services *svc, struct tb_host *host)
{
        return svc->add_endpoint(host, "api.x.ai:443", TB_ENDPOINT_REQUIRED);
}

TB_HARNESS_DEFINE(.name = "grok", .summary = "Grok Build (login: the shared Grok Trials home, one Trial at a time)",
                  .default_binary = "grok", .preflight = grok_preflight, .prepare_login = grok_prepare_login,
                  .env = grok_env, .endpoints = grok_endpoints,
                  /* One Trials home, locked for each Trial: a batch runs one Grok Trial at a time. */
                  .exclusive = "grok-trials-home");
