/* A plugin for the loader's tests, good or bad in the one way its
 * compile definitions say. */
#include <trialbox/plugin.h>

#ifndef FAKE_ABI
#define FAKE_ABI TB_PLUGIN_ABI_VERSION
#endif
#ifndef FAKE_SIZE
#define FAKE_SIZE sizeof(struct tb_harness)
#endif

#ifndef FAKE_NO_SYMBOL
static int fake_preflight(const struct tb_host_services *svc, struct tb_host *host)
{
        svc->note(host, "fake preflight ran");
        return 0;
}
#endif

#ifdef FAKE_NO_SYMBOL
__attribute__((visibility("default"))) int not_a_harness = 1;
#else
__attribute__((visibility("default"))) const struct tb_harness trialbox_harness = {
        .abi_version = FAKE_ABI,
        .size = FAKE_SIZE,
        .name = FAKE_NAME,
        .summary = "a fake plugin for tests",
        .default_binary = "/bin/true",
        .preflight = fake_preflight,
};
#endif
