/* agy (Antigravity CLI): its login is the token file
 * ~/.gemini/antigravity-cli/antigravity-oauth-token, synced. agy ignores
 * AGY_CLI_DISABLE_AUTO_UPDATE=1: it must be "true". */
#include <stdio.h>
#include <trialbox/plugin.h>

#define AGY_TOKEN ".gemini/antigravity-cli/antigravity-oauth-token"

static int agy_preflight(const struct tb_host_services *svc, struct tb_host *host)
{
        char token[4096];
        snprintf(token, sizeof token, "%s/" AGY_TOKEN, svc->host_home(host));
        return svc->require_file(host, "agy token file", token, "run 'agy' on the host once and sign in");
}

static int agy_prepare_login(const struct tb_host_services *svc, struct tb_host *host)
{
        char from[4096], to[4096];
        snprintf(from, sizeof from, "%s/" AGY_TOKEN, svc->host_home(host));
        snprintf(to, sizeof to, "%s/" AGY_TOKEN, svc->session_home(host));
        return svc->login_synced(host, from, to);
}

static int agy_env(const struct tb_host_services *svc, struct tb_host *host)
{
        return svc->setenv(host, "AGY_CLI_DISABLE_AUTO_UPDATE", "true", 0);
}

TB_HARNESS_DEFINE(.name = "agy", .summary = "Antigravity CLI (login: ~/" AGY_TOKEN ", synced)",
                  .default_binary = "agy", .preflight = agy_preflight, .prepare_login = agy_prepare_login,
                  .env = agy_env);
