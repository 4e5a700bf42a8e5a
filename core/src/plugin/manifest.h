/* Harness manifests: a Harness described by a JSON file (NAME.json) instead
 * of a compiled plugin. The core turns a manifest into the very same
 * `struct tb_harness` a plugin exports: each hook is a libffi closure bound to
 * the parsed manifest, so nothing past the loader can tell the two apart.
 *
 * The format (every field but name and default_binary optional):
 *   {
 *     "name": "gemini",                       must equal the file name
 *     "summary": "Gemini CLI",
 *     "default_binary": "gemini",
 *     "env": {"NAME": "value", ...},          set in the session
 *     "home_files": {"rel/path": "text"},     written into the fresh home (0600)
 *     "logins": [{"host": "~/.gemini/oauth_creds.json",   ~ is the host home
 *                 "sandbox": "~/.gemini/oauth_creds.json", ~ is the session home
 *                 "mode": "synced" | "in_place",
 *                 "required": false}],
 *     "credentials": [{"key": "api_key", "env": "GEMINI_API_KEY", "required": false}],
 *     "require_any": true,                    void unless some login or key is present
 *     "endpoints": [{"host": "api.example.com:443", "required": true}],
 *                                             the network hosts it needs (ABI 1.1)
 *     "exclusive": "name",                    a resource its Trials cannot share at
 *                                             once (ABI 1.2: one at a time in a batch)
 *     "how": "one sentence: how to provide the login or key"
 *   }
 * What voids a Trial: a required login or key that is missing; with
 * require_any, no login and no key present at all.
 */
#ifndef TB_MANIFEST_H
#define TB_MANIFEST_H

#include <stdbool.h>
#include <trialbox/plugin.h>

#include "base/error.h"

struct manifest;

/* Parse manifest text (from `path`, for messages) into a manifest whose
 * Harness must be called `expected_name`. A bad manifest is refused naming
 * the file and the field. */
int manifest_parse(const char *text, size_t len, const char *path, const char *expected_name,
                   struct manifest **out, struct tb_error *err);

/* Read and parse the file. */
int manifest_load(const char *path, const char *expected_name, struct manifest **out, struct tb_error *err);

/* The vtable built for it: its hooks are libffi closures. Lives as long as
 * the manifest. */
const struct tb_harness *manifest_harness(const struct manifest *m);

void manifest_free(struct manifest *m);

/* Is `name` a valid exclusive resource of a Harness (tb_harness.exclusive,
 * a manifest's "exclusive"): 1 to 64 characters of [a-z0-9._-]? */
bool harness_exclusive_valid(const char *name);

#endif
