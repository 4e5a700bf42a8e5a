/* Codex: its login is $CODEX_HOME/auth.json (default ~/.codex). Codex saves a
 * refreshed login with rename(".auth-XXXX", "auth.json"), which a single-file
 * bind turns into EBUSY: so the login is synced, not bound. Codex sandboxes
 * each shell command it runs with its own bwrap: it needs nested user
 * namespaces. What a session cost is in its rollouts
 * ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl, one per session). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
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

/* One rollout as it is read: Codex 0.171 writes, per model response, a
 * token_usage_record line and then an event_msg of type token_count whose
 * info.total_token_usage is the session's running total (OpenAI's
 * convention: input_tokens includes cached_input_tokens and
 * cache_write_input_tokens, output_tokens includes reasoning_output_tokens,
 * as trialbox records them); the model is its turn_context's. */
struct rollout {
        const struct tb_host_services *svc;
        unsigned file;
        char model[65];
        uint64_t records; /* token_usage_record lines: one per response */
        uint64_t counts;  /* token_count events with usage, for a Codex without those */
};

static int rollout_line(struct tb_host *host, const struct tb_json *line, unsigned file, void *ctx)
{
        struct rollout *ro = ctx;
        const struct tb_host_services *svc = ro->svc;
        if (file != ro->file) /* the next session's rollout */
                *ro = (struct rollout){ .svc = svc, .file = file };
        const char *type = svc->json_string(host, line, "type");
        if (!type)
                return 0;
        if (strcmp(type, "turn_context") == 0) {
                const char *model = svc->json_string(host, line, "payload.model");
                if (model)
                        snprintf(ro->model, sizeof ro->model, "%s", model);
                return 0;
        }
        if (strcmp(type, "token_usage_record") == 0) {
                ro->records++;
                return 0;
        }
        const char *event = svc->json_string(host, line, "payload.type");
        if (strcmp(type, "event_msg") != 0 || !event || strcmp(event, "token_count") != 0)
                return 0;
        static const char *const fields[] = { "input_tokens", "cached_input_tokens", "cache_write_input_tokens",
                                              "output_tokens", "reasoning_output_tokens" };
        struct tb_tokens t = TB_TOKENS_INIT;
        uint64_t *slots[] = { &t.input, &t.cached_input, &t.cache_write_input, &t.output, &t.reasoning };
        for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
                char path[96];
                snprintf(path, sizeof path, "payload.info.total_token_usage.%s", fields[i]);
                int r = svc->json_count(host, line, path, slots[i]);
                /* No usage yet (info null), or a count refused: not this line. */
                if (r < 0 && (r != -ENOENT || i == 0 || i == 3))
                        return 0;
        }
        ro->counts++;
        t.requests = ro->records ? ro->records : ro->counts;
        t.model = ro->model[0] ? ro->model : NULL;
        /* The session's running total: its last one stands. */
        char key[32];
        snprintf(key, sizeof key, "rollout %u", file);
        svc->record_tokens(host, key, &t);
        return 0;
}

static int codex_tokens(const struct tb_host_services *svc, struct tb_host *host)
{
        static const char *const needles[] = { "\"token_count\"", "\"turn_context\"", "\"token_usage_record\"", NULL };
        struct rollout ro = { .svc = svc, .file = 0 };
        /* The plugin's CODEX_HOME in the fresh home; a rollout's newest lines
         * hold its totals. */
        return svc->read_jsonl(host, ".codex/sessions", 3, ".jsonl", needles, TB_JSONL_TAIL, rollout_line, &ro);
}

TB_HARNESS_DEFINE(.name = "codex", .summary = "OpenAI Codex CLI (login: $CODEX_HOME/auth.json, synced)",
                  .default_binary = "codex", .preflight = codex_preflight, .prepare_login = codex_prepare_login,
                  .env = codex_env, .flags = TB_HARNESS_NEEDS_USERNS, .endpoints = codex_endpoints,
                  .tokens = codex_tokens);
