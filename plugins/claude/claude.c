/* Claude Code: its login is a setup token from the Credentials
 * (claude.setup_token), handed over as CLAUDE_CODE_OAUTH_TOKEN. Its own
 * sandbox (sandbox.enabled) runs commands under bwrap: it needs nested user
 * namespaces. */
#include <errno.h>
#include <trialbox/plugin.h>

static const char how[] = "run 'claude setup-token' on the host and store the token with "
                          "'trialbox credentials set claude.setup_token'";

static int claude_preflight(const struct tb_host_services *svc, struct tb_host *host)
{
        return svc->require_credential(host, "setup_token", how) ? 0 : -ECANCELED;
}

static int claude_env(const struct tb_host_services *svc, struct tb_host *host)
{
        const char *token = svc->require_credential(host, "setup_token", how);
        if (!token)
                return -ECANCELED;
        int r = svc->setenv(host, "CLAUDE_CODE_OAUTH_TOKEN", token, 1);
        return r < 0 ? r : svc->setenv(host, "DISABLE_AUTOUPDATER", "1", 0);
}

/* Seen from Claude Code 2.1.197 through a logging proxy: only its API (with
 * the self-update off; its telemetry is not needed). */
static int claude_endpoints(const struct tb_host_services *svc, struct tb_host *host)
{
        return svc->add_endpoint(host, "api.anthropic.com:443", TB_ENDPOINT_REQUIRED);
}

TB_HARNESS_DEFINE(.name = "claude", .summary = "Claude Code (login: claude.setup_token from the Credentials)",
                  .default_binary = "claude", .preflight = claude_preflight, .env = claude_env,
                  .flags = TB_HARNESS_NEEDS_USERNS, .endpoints = claude_endpoints);
