/* Codex: its login is $CODEX_HOME/auth.json (default ~/.codex). Codex saves a
 * refreshed login with rename(".auth-XXXX", "auth.json"), which a single-file
 * bind turns into EBUSY: so the login is synced, not bound. */
#include <stdio.h>
#include <trialbox/plugin.h>

static void codex_login(const struct tb_host_services *svc, struct tb_host *host, char *buf, size_t n)
{
        const char *home = svc->host_getenv(host, "CODEX_HOME");
        if (home && home[0] == '/')
                snprintf(buf, n, "%s/auth.json", home);
        else
                snprintf(buf, n, "%s/.codex/auth.json", svc->host_home(host));
}

static int codex_preflight(const struct tb_host_services *svc, struct tb_host *host)
{
        char login[4096];
        codex_login(svc, host, login, sizeof login);
        return svc->require_file(host, "Codex login", login,
                                 "run 'codex login' on the host (CODEX_HOME is honoured)");
}

static int codex_prepare_login(const struct tb_host_services *svc, struct tb_host *host)
{
        char login[4096], dest[4096];
        codex_login(svc, host, login, sizeof login);
        snprintf(dest, sizeof dest, "%s/.codex/auth.json", svc->session_home(host));
        return svc->login_synced(host, login, dest);
}

static int codex_env(const struct tb_host_services *svc, struct tb_host *host)
{
        char dir[4096];
        if (!svc->sandboxed(host))
                return 0; /* the session uses the host's own CODEX_HOME */
        snprintf(dir, sizeof dir, "%s/.codex", svc->session_home(host));
        int r = svc->setenv(host, "CODEX_HOME", dir, 0);
        if (r < 0)
                return r;
        /* Codex has no variable for it: its config turns the update check off. */
        return svc->write_home_file(host, ".codex/config.toml", "check_for_update_on_startup = false\n");
}

TB_HARNESS_DEFINE(.name = "codex", .summary = "OpenAI Codex CLI (login: $CODEX_HOME/auth.json, synced)",
                  .default_binary = "codex", .preflight = codex_preflight, .prepare_login = codex_prepare_login,
                  .env = codex_env);
