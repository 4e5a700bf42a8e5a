/* Codex: its login is $CODEX_HOME/auth.json (default ~/.codex). Codex saves a
 * refreshed login with rename(".auth-XXXX", "auth.json"), which a single-file
 * bind turns into EBUSY: so the login is synced, not bound. Codex sandboxes
 * each shell command it runs with its own bwrap: it needs nested user
 * namespaces. */
#include <errno.h>
#include <stdio.h>
#include <trialbox/plugin.h>

static int codex_login(const struct tb_host_services *svc, struct tb_host *host, char *buf, size_t n)
{
        const char *dir = svc->home_dir_from_env(host, "CODEX_HOME", ".codex");
        return dir && snprintf(buf, n, "%s/auth.json", dir) < (int)n ? 0 : -ENAMETOOLONG;
}

static int codex_preflight(const struct tb_host_services *svc, struct tb_host *host)
{
        char login[4096];
        int r = codex_login(svc, host, login, sizeof login);
        return r < 0 ? r
                     : svc->require_file(host, "Codex login", login,
                                         "run 'codex login' on the host (CODEX_HOME is honoured)");
}

static int codex_prepare_login(const struct tb_host_services *svc, struct tb_host *host)
{
        char login[4096], dest[4096];
        int r = codex_login(svc, host, login, sizeof login);
        if (r < 0)
                return r;
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

/* Seen from Codex 0.171 through a logging proxy: the API and ChatGPT
 * backends, the login refresh; ab.chatgpt.com is its feature flags and
 * telemetry, which it does without. */
static int codex_endpoints(const struct tb_host_services *svc, struct tb_host *host)
{
        int r = svc->add_endpoint(host, "api.openai.com:443", TB_ENDPOINT_REQUIRED);
        if (r == 0)
                r = svc->add_endpoint(host, "chatgpt.com:443", TB_ENDPOINT_REQUIRED);
        if (r == 0)
                r = svc->add_endpoint(host, "auth.openai.com:443", TB_ENDPOINT_REQUIRED);
        if (r == 0)
                r = svc->add_endpoint(host, "ab.chatgpt.com:443", TB_ENDPOINT_OPTIONAL);
        return r;
}

TB_HARNESS_DEFINE(.name = "codex", .summary = "OpenAI Codex CLI (login: $CODEX_HOME/auth.json, synced)",
                  .default_binary = "codex", .preflight = codex_preflight, .prepare_login = codex_prepare_login,
                  .env = codex_env, .flags = TB_HARNESS_NEEDS_USERNS, .endpoints = codex_endpoints);
