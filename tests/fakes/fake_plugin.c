/* A plugin for the loader's tests, good or bad in the one way its
 * compile definitions say:
 *   FAKE_ABI          the abi_version it declares
 *   FAKE_SIZE_UPTO    declare a size that stops before this member
 *   FAKE_SIZE         declare this size
 *   FAKE_NO_SYMBOL    export no trialbox_harness
 *   FAKE_EXCLUSIVE    the exclusive resource it names (ABI 1.2)
 *   (its `tokens` hook (ABI 1.4) records one unit; FAKE_SIZE_UPTO=tokens is
 *   a plugin built against 1.3)
 *   FAKE_OLD_LAYOUT   built against ABI 1.0: the struct as it was then
 *   FAKE_NEWER_LAYOUT built against a newer minor: a member this core does
 *                     not know after its own, and a service it tests for */
#include <trialbox/plugin.h>

#ifndef FAKE_ABI
#define FAKE_ABI TB_PLUGIN_ABI_VERSION
#endif
#ifdef FAKE_SIZE_UPTO
#define FAKE_SIZE offsetof(struct tb_harness, FAKE_SIZE_UPTO)
#endif
#ifndef FAKE_SIZE
#define FAKE_SIZE sizeof(struct tb_harness)
#endif
#ifndef FAKE_EXCLUSIVE
#define FAKE_EXCLUSIVE NULL
#endif

#ifndef FAKE_NO_SYMBOL
static int fake_preflight(const struct tb_host_services *svc, struct tb_host *host)
{
        svc->note(host, "fake preflight ran");
#ifdef FAKE_NEWER_LAYOUT
        /* The header of a newer minor would have this service after the
         * last one this core has: test for it, as plugin.h says. */
        struct newer_services {
                struct tb_host_services known;
                int (*newer_service)(struct tb_host *host);
        };
        if (svc->size >= offsetof(struct newer_services, newer_service) + sizeof(void *))
                return ((const struct newer_services *)(const void *)svc)->newer_service(host);
        svc->note(host, "newer service absent: done without it");
#endif
        return 0;
}

static int fake_env(const struct tb_host_services *svc, struct tb_host *host)
{
        return svc->setenv(host, "FAKE_ENV", "1", 0);
}
#endif

#if !defined(FAKE_NO_SYMBOL) && !defined(FAKE_OLD_LAYOUT)
static int fake_endpoints(const struct tb_host_services *svc, struct tb_host *host)
{
        int r = svc->add_endpoint(host, "api.fake.test:443", TB_ENDPOINT_REQUIRED);
        return r < 0 ? r : svc->add_endpoint(host, "telemetry.fake.test", TB_ENDPOINT_OPTIONAL);
}
#endif

#if !defined(FAKE_NO_SYMBOL) && !defined(FAKE_OLD_LAYOUT)
static int fake_tokens(const struct tb_host_services *svc, struct tb_host *host)
{
        struct tb_tokens t = TB_TOKENS_INIT;
        t.input = 10;
        t.output = 1;
        t.requests = 1;
        t.model = "fake-model";
        return svc->record_tokens(host, "fake", &t);
}
#endif

#if defined(FAKE_NO_SYMBOL)
__attribute__((visibility("default"))) int not_a_harness = 1;
#elif defined(FAKE_OLD_LAYOUT)
/* struct tb_harness of ABI 1.0, as a plugin built then has it. */
struct tb_harness_1_0 {
        uint32_t abi_version, size;
        const char *name, *summary, *default_binary;
        tb_hook_fn preflight, prepare_login, env;
};
/* Whatever follows the struct in memory is not the plugin's: here, words
 * where 1.1's flags and endpoints would be, which the core must not read. */
__attribute__((visibility("default"))) const struct {
        struct tb_harness_1_0 h;
        uint32_t not_flags;
        tb_hook_fn not_endpoints;
} trialbox_harness = {
        .h = {
                .abi_version = (1 << 16) | 0,
                .size = sizeof(struct tb_harness_1_0),
                .name = FAKE_NAME,
                .summary = "a fake plugin built against ABI 1.0",
                .default_binary = "/bin/true",
                .preflight = fake_preflight,
                .env = fake_env,
        },
        .not_flags = 0xffffffffu,
        .not_endpoints = fake_preflight,
};
#elif defined(FAKE_NEWER_LAYOUT)
/* struct tb_harness of a newer minor: what this core knows, then more. */
struct tb_harness_newer {
        struct tb_harness known;
        tb_hook_fn newer_hook;
};
static int fake_newer_hook(const struct tb_host_services *svc, struct tb_host *host)
{
        return svc->void_trial(host, "the newer hook must never be called by this core");
}
__attribute__((visibility("default"))) const struct tb_harness_newer trialbox_harness = {
        .known = {
                .abi_version = FAKE_ABI,
                .size = sizeof(struct tb_harness_newer),
                .name = FAKE_NAME,
                .summary = "a fake plugin built against a newer minor",
                .default_binary = "/bin/true",
                .preflight = fake_preflight,
                .env = fake_env,
                .flags = TB_HARNESS_NEEDS_USERNS | 0x80000000u,
                .endpoints = fake_endpoints,
                .tokens = fake_tokens,
        },
        .newer_hook = fake_newer_hook,
};
#else
__attribute__((visibility("default"))) const struct tb_harness trialbox_harness = {
        .abi_version = FAKE_ABI,
        .size = FAKE_SIZE,
        .name = FAKE_NAME,
        .summary = "a fake plugin for tests",
        .default_binary = "/bin/true",
        .preflight = fake_preflight,
        .env = fake_env,
        .flags = TB_HARNESS_NEEDS_USERNS,
        .endpoints = fake_endpoints,
        .exclusive = FAKE_EXCLUSIVE,
        .tokens = fake_tokens,
};
#endif
