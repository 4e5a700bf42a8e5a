/* OpenCode: its provider key comes from the Credentials only
 * (opencode.api_key, and opencode.provider, default "anthropic"), into one
 * environment variable, <PROVIDER>_API_KEY. The Trial's OpenCode config in
 * the fresh home sets that provider's apiKey to {env:<PROVIDER>_API_KEY}, so
 * the key is never on disk in the Trial. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <trialbox/plugin.h>

static const char how[] = "store the key with 'trialbox credentials set opencode.api_key' (and the provider, "
                          "default anthropic, with 'trialbox credentials set opencode.provider')";

/* The provider, checked, and its variable's name. */
static int opencode_provider(const struct tb_host_services *svc, struct tb_host *host, const char **provider,
                             char *var, size_t n)
{
        const char *p = svc->credential(host, "provider");
        *provider = p && *p ? p : "anthropic";
        size_t len = strlen(*provider);
        if (len == 0 || len > 64 || strspn(*provider, "abcdefghijklmnopqrstuvwxyz0123456789-_") != len) {
                char detail[512];
                snprintf(detail, sizeof detail,
                         "opencode.provider in the Credentials is not a provider id (lowercase letters, digits, '-', "
                         "'_'); fix it with 'trialbox credentials set opencode.provider'");
                return svc->void_trial(host, detail);
        }
        size_t i = 0;
        for (; (*provider)[i] && i + 9 < n; i++)
                var[i] = (*provider)[i] == '-' ? '_' : (char)toupper((unsigned char)(*provider)[i]);
        snprintf(var + i, n - i, "_API_KEY");
        return 0;
}

static int opencode_preflight(const struct tb_host_services *svc, struct tb_host *host)
{
        const char *provider;
        char var[96];
        if (!svc->require_credential(host, "api_key", how))
                return -ECANCELED;
        return opencode_provider(svc, host, &provider, var, sizeof var);
}

static int opencode_env(const struct tb_host_services *svc, struct tb_host *host)
{
        const char *provider, *key = svc->require_credential(host, "api_key", how);
        char var[96], config[1024];
        if (!key)
                return -ECANCELED;
        int r = opencode_provider(svc, host, &provider, var, sizeof var);
        if (r < 0)
                return r;
        r = svc->setenv(host, var, key, 1);
        if (r == 0)
                r = svc->setenv(host, "OPENCODE_DISABLE_AUTOUPDATE", "1", 0);
        if (r < 0 || !svc->sandboxed(host))
                return r; /* unsandboxed: the real home's config stays the user's */
        snprintf(config, sizeof config,
                 "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"autoupdate\": false,\n"
                 "  \"provider\": {\n    \"%s\": {\n      \"options\": {\n        \"apiKey\": \"{env:%s}\"\n"
                 "      }\n    }\n  }\n}\n",
                 provider, var);
        return svc->write_home_file(host, ".config/opencode/opencode.json", config);
}

/* The API host of the providers whose host is fixed; a provider not listed
 * (a self-hosted or regional one) needs --allow-host. */
static const struct {
        const char *provider, *endpoint;
} provider_hosts[] = {
        { "anthropic", "api.anthropic.com:443" },
        { "openai", "api.openai.com:443" },
        { "google", "generativelanguage.googleapis.com:443" },
        { "openrouter", "openrouter.ai:443" },
        { "groq", "api.groq.com:443" },
        { "mistral", "api.mistral.ai:443" },
        { "deepseek", "api.deepseek.com:443" },
        { "xai", "api.x.ai:443" },
};

/* Seen from OpenCode 1.18.33 through a logging proxy: its provider's API and
 * its model list are needed; the npm registry and GitHub are its update
 * checks, which it does without. */
static int opencode_endpoints(const struct tb_host_services *svc, struct tb_host *host)
{
        const char *provider, *api = NULL;
        char var[96];
        int r = opencode_provider(svc, host, &provider, var, sizeof var);
        if (r < 0)
                return r;
        for (size_t i = 0; i < sizeof provider_hosts / sizeof provider_hosts[0]; i++)
                if (strcmp(provider_hosts[i].provider, provider) == 0)
                        api = provider_hosts[i].endpoint;
        if (api)
                r = svc->add_endpoint(host, api, TB_ENDPOINT_REQUIRED);
        else
                svc->note(host, "endpoints: the API host of provider '%s' is not known; allow it with --allow-host",
                          provider);
        if (r == 0)
                r = svc->add_endpoint(host, "models.opencode.ai:443", TB_ENDPOINT_REQUIRED);
        if (r == 0)
                r = svc->add_endpoint(host, "registry.npmjs.org:443", TB_ENDPOINT_OPTIONAL);
        if (r == 0)
                r = svc->add_endpoint(host, "github.com:443", TB_ENDPOINT_OPTIONAL);
        return r;
}

TB_HARNESS_DEFINE(.name = "opencode", .summary = "OpenCode (key: opencode.api_key from the Credentials, by variable)",
                  .default_binary = "opencode", .preflight = opencode_preflight, .env = opencode_env,
                  .endpoints = opencode_endpoints);
