/* libFuzzer target: the Harness manifest parser, manifest_parse().
 *
 * The input is a manifest file's contents, `size` bytes with no terminator,
 * parsed as the manifest of a Harness called "fuzz". A success must give a
 * vtable naming that Harness with all three hooks (libffi closures); a
 * failure -EINVAL with no manifest and a message naming the file. Every
 * manifest is freed: LeakSanitizer checks the closures and strings too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/manifest.h"
#include "base/error.h"

#define FUZZ_TARGET "fuzz_manifest"
#include "fuzz.h"

#define PATH "/fuzz/fuzz.json"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* manifest_load() never passes more than 256 KiB; json-c takes an int. */
        if (size > 256 * 1024)
                return 0;
        struct manifest *m = NULL;
        struct tb_error err = { 0 };

        int r = manifest_parse((const char *)data, size, PATH, "fuzz", &m, &err);
        if (r < 0) {
                check(m == NULL, "no manifest on failure");
                check(err.code == r, "err.code is the returned error");
                check(strstr(err.msg, "'" PATH "'") != NULL, "the message names the file");
                return 0;
        }
        check(r == 0 && m != NULL, "success gives a manifest");
        const struct tb_harness *h = manifest_harness(m);
        check(h->abi_version == TB_PLUGIN_ABI_VERSION && h->size == sizeof *h, "the vtable is this ABI's");
        check(h->name && strcmp(h->name, "fuzz") == 0, "the Harness has the expected name");
        check(h->default_binary && h->default_binary[0], "a default binary is set");
        check(h->preflight && h->prepare_login && h->env, "all three hooks are there");
        manifest_free(m);
        return 0;
}
