/* The plugin loader: finds NAME.so (a compiled plugin) or NAME.json (a
 * manifest) in the plugin path, checks it, and hands back the Harness vtable:
 * the plugin's own, or one built from the manifest with libffi closures. */
#ifndef TB_PLUGIN_LOADER_H
#define TB_PLUGIN_LOADER_H

#include <trialbox/plugin.h>

#include "base/error.h"
#include "base/strv.h"

struct manifest;

struct plugin {
        void *dl;                      /* dlopen handle (a .so), or NULL */
        struct manifest *manifest;     /* the parsed manifest (a .json), or NULL */
        const struct tb_harness *harness;
        char *path;                    /* the file it was loaded from */
        /* The hooks the plugin's size reaches; NULL when absent. */
        tb_hook_fn preflight, prepare_login, env, endpoints;
        /* What the session cost, read after it (ABI 1.4), or NULL. */
        tb_hook_fn tokens;
        /* TB_HARNESS_* bits; 0 when the plugin's size does not reach them. */
        uint32_t flags;
        /* The resource its Trials cannot share at once (ABI 1.2), or NULL. */
        const char *exclusive;
};

/* Does the Harness run its own sandbox and need nested user namespaces
 * (TB_HARNESS_NEEDS_USERNS)? False for a plugin older than ABI 1.1. */
bool plugin_needs_userns(const struct plugin *p);

/* The folders searched, in order: those of `plugin_path` (colon-separated:
 * tb_env's plugin_path, TRIALBOX_PLUGIN_PATH; NULL for none), then the
 * compiled-in install folder. Every function below that searches takes it. */
void plugin_search_path(const char *plugin_path, struct strv *out);

/* Is `name` a possible Harness name ([a-z0-9][a-z0-9_-]*, at most 64)? */
bool plugin_name_valid(const char *name);

/* Load the Harness `name` from the first folder of the search path that has
 * `name`.so or `name`.json (both in one folder is refused). -ENOENT (message
 * lists the installed Harnesses) when no folder has it; any other refusal
 * names the file and what is wrong. */
int plugin_load(const char *plugin_path, const char *name, struct plugin *out, struct tb_error *err);

/* Load and check one file (.so or .json), whose Harness must be called `expected_name`. */
int plugin_load_file(const char *path, const char *expected_name, struct plugin *out, struct tb_error *err);

void plugin_unload(struct plugin *p);

/* One plugin file found in the search path. */
struct plugin_entry {
        char *name;    /* from the file name */
        char *path;
        bool shadowed; /* an earlier folder has the same name */
};

/* Every NAME.so and NAME.json in the search path, in search order. */
void plugin_list(const char *plugin_path, struct plugin_entry **out, size_t *n);
void plugin_list_free(struct plugin_entry *v, size_t n);

#endif
