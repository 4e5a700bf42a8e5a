/* Claude Code: its login is a setup token from the Credentials
 * (claude.setup_token), handed over as CLAUDE_CODE_OAUTH_TOKEN. Its own
 * sandbox (sandbox.enabled) runs commands under bwrap: it needs nested user
 * namespaces. What a session cost is in its transcripts
 * (~/.claude/projects/<folder>/<session>.jsonl, subagents' below). */
#include <errno.h>
#include <string.h>
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

/* A transcript's assistant line: one per content block of a response, each
 * with the response's message.id and its usage (Anthropic's convention:
 * input_tokens excludes the cache; trialbox's `input` is all three). A
 * later line of the same response replaces an earlier one: the last has
 * the final output count. "<synthetic>" messages are Claude Code's own
 * (an error, an interruption), no model's response. */
static int transcript_line(struct tb_host *host, const struct tb_json *line, unsigned file, void *ctx)
{
        (void)file;
        const struct tb_host_services *svc = ctx;
        const char *type = svc->json_string(host, line, "type");
        const char *id = svc->json_string(host, line, "message.id");
        const char *model = svc->json_string(host, line, "message.model");
        if (!type || strcmp(type, "assistant") != 0 || !id || (model && strcmp(model, "<synthetic>") == 0))
                return 0;
        uint64_t input, cache_read = 0, cache_write = 0;
        struct tb_tokens t = TB_TOKENS_INIT;
        if (svc->json_count(host, line, "message.usage.input_tokens", &input) < 0 ||
            svc->json_count(host, line, "message.usage.output_tokens", &t.output) < 0)
                return 0;
        int r = svc->json_count(host, line, "message.usage.cache_read_input_tokens", &cache_read);
        if (r == 0 || r == -ENOENT)
                r = svc->json_count(host, line, "message.usage.cache_creation_input_tokens", &cache_write);
        if (r == 0 || r == -ENOENT)
                r = svc->json_count(host, line, "message.usage.output_tokens_details.thinking_tokens", &t.reasoning);
        if (r < 0 && r != -ENOENT)
                return 0;
        /* Each is at most 2^53: the sum fits, and the core refuses it when over. */
        t.input = input + cache_read + cache_write;
        t.cached_input = cache_read;
        t.cache_write_input = cache_write;
        t.requests = 1;
        t.model = model;
        svc->record_tokens(host, id, &t);
        return 0;
}

static int claude_tokens(const struct tb_host_services *svc, struct tb_host *host)
{
        static const char *const needles[] = { "\"usage\"", NULL };
        return svc->read_jsonl(host, ".claude/projects", 3, ".jsonl", needles, 0, transcript_line, (void *)svc);
}

TB_HARNESS_DEFINE(.name = "claude", .summary = "Claude Code (login: claude.setup_token from the Credentials)",
                  .default_binary = "claude", .preflight = claude_preflight, .env = claude_env,
                  .flags = TB_HARNESS_NEEDS_USERNS, .endpoints = claude_endpoints, .tokens = claude_tokens);
