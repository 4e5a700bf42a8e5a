/* `trialbox harnesses`: its command line, then each plugin found, loaded and
 * asked (trial/readiness.h), as a table or a JSON array. */
#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>

#include "base/env.h"
#include "base/log.h"
#include "cmd/cli.h"
#include "cmd/exit.h"
#include "cmd/options.h"
#include "plugin/host.h"
#include "plugin/loader.h"
#include "trial/readiness.h"

#ifndef TB_PLUGIN_DIR
#error "TB_PLUGIN_DIR must be defined by the build"
#endif

struct harnesses_args {
        bool json;
        int v, q;
};

static const struct cli_option harnesses_options[] = {
        { .kind = CLI_FLAG, .name = "json", .offset = offsetof(struct harnesses_args, json),
          .help = "print the list as one JSON array" },
        { .kind = CLI_COUNT, .name = "verbose", .short_name = 'v', .offset = offsetof(struct harnesses_args, v),
          .help = "also what each plugin looked for, its endpoints and whether it\n"
                  "runs its own sandbox" },
        { .kind = CLI_COUNT, .name = "quiet", .short_name = 'q', .offset = offsetof(struct harnesses_args, q),
          .help = "errors only" },
        { .kind = CLI_HELP, .name = "help", .short_name = 'h' },
};

static const struct cli_status harnesses_statuses[] = {
        { "0", "the list was printed" },
        { "2", "a usage error" },
};

const struct cli_usage cmd_harnesses_usage = {
        .synopsis = "trialbox harnesses [--json] [-v|-q]",
        .description = "Lists the plugins found (TRIALBOX_PLUGIN_PATH, then the install folder): each\n"
                       "Harness's path, ABI and summary, and whether a Trial of it can start here.\n",
        .stop_at_argument = true,
        .options = harnesses_options,
        .n_options = TB_ARRAY_SIZE(harnesses_options),
        .statuses = harnesses_statuses,
        .n_statuses = TB_ARRAY_SIZE(harnesses_statuses),
};

/* A column of its own under the name and the status. */
#define MORE "%-10s           "

static void endpoints_json(const struct plugin *p, const struct tb_host *host, json_object *o)
{
        size_t n;
        const struct host_endpoint *e = host_endpoints(host, &n);
        json_object *arr = json_object_new_array();
        for (size_t i = 0; i < n; i++) {
                json_object *one = json_object_new_object();
                json_object_object_add(one, "host", json_object_new_string(e[i].pattern));
                json_object_object_add(one, "required", json_object_new_boolean(e[i].required));
                json_object_array_add(arr, one);
        }
        json_object_object_add(o, "endpoints", arr);
        json_object_object_add(o, "needs_userns", json_object_new_boolean(plugin_needs_userns(p)));
}

static void endpoints_print(const struct plugin *p, const struct tb_host *host)
{
        size_t n;
        const struct host_endpoint *e = host_endpoints(host, &n);
        if (n == 0)
                log_print(MORE "endpoints: none declared", "");
        for (size_t i = 0; i < n; i++)
                log_print(MORE "endpoint: %s (%s)", "", e[i].pattern,
                          e[i].required ? "required: allowed under --network allow"
                                        : "optional: denied under --network allow unless --allow-host");
        for (size_t i = 0; i < host->notes.n; i++)
                log_print(MORE "%s", "", host->notes.v[i]);
        if (plugin_needs_userns(p))
                log_print(MORE "runs its own sandbox: keeps nested user namespaces", "");
}

static void loaded_json(const struct plugin *p, const struct readiness *rd, const struct tb_host *eh, json_object *o)
{
        uint32_t abi = p->harness->abi_version;
        char abibuf[32];
        snprintf(abibuf, sizeof abibuf, "%u.%u", TB_PLUGIN_ABI_MAJOR_OF(abi), TB_PLUGIN_ABI_MINOR_OF(abi));
        json_object_object_add(o, "status", json_object_new_string(rd->ready ? "ready" : "not_ready"));
        json_object_object_add(o, "abi", json_object_new_string(abibuf));
        json_object_object_add(o, "summary", json_object_new_string(p->harness->summary ? p->harness->summary : ""));
        json_object_object_add(o, "default_binary", json_object_new_string(p->harness->default_binary));
        json_object_object_add(o, "binary", rd->binary ? json_object_new_string(rd->binary) : NULL);
        json_object_object_add(o, "detail", rd->detail ? json_object_new_string(rd->detail) : NULL);
        json_object *notes = json_object_new_array();
        for (size_t k = 0; k < rd->n_notes; k++)
                json_object_array_add(notes, json_object_new_string(rd->notes[k]));
        json_object_object_add(o, "notes", notes);
        endpoints_json(p, eh, o);
}

static void loaded_print(const struct plugin_entry *v, const struct plugin *p, const struct readiness *rd,
                         const struct tb_host *eh)
{
        uint32_t abi = p->harness->abi_version;
        log_print("%-10s %-9s %s (ABI %u.%u): %s", v->name, rd->ready ? "ready" : "not-ready", v->path,
                  TB_PLUGIN_ABI_MAJOR_OF(abi), TB_PLUGIN_ABI_MINOR_OF(abi),
                  p->harness->summary ? p->harness->summary : "");
        if (rd->detail)
                log_print(MORE "%s", "", rd->detail);
        if (log_get_verbosity() < 2)
                return;
        for (size_t k = 0; k < rd->n_notes; k++)
                log_print(MORE "%s", "", rd->notes[k]);
        endpoints_print(p, eh);
}

/* One plugin found: shadowed, refused (it does not load), or loaded and asked. */
static void one_harness(const struct plugin_entry *v, const struct tb_env *env, json_object *arr)
{
        json_object *o = arr ? json_object_new_object() : NULL;
        struct plugin p;
        struct tb_error err = { 0 };
        if (o) {
                json_object_object_add(o, "name", json_object_new_string(v->name));
                json_object_object_add(o, "path", json_object_new_string(v->path));
                json_object_array_add(arr, o);
        }
        if (v->shadowed) {
                if (o)
                        json_object_object_add(o, "status", json_object_new_string("shadowed"));
                else
                        log_print("%-10s shadowed  %s (an earlier folder has %s.so)", v->name, v->path, v->name);
                return;
        }
        if (plugin_load_file(v->path, v->name, &p, &err) < 0) {
                if (o) {
                        json_object_object_add(o, "status", json_object_new_string("refused"));
                        json_object_object_add(o, "detail", json_object_new_string(err.msg));
                } else {
                        log_print("%-10s refused   %s", v->name, err.msg);
                }
                return;
        }
        struct readiness rd;
        struct tb_host eh;
        readiness_check(&p, env, &rd);
        readiness_endpoints(&p, env, &eh);
        if (o)
                loaded_json(&p, &rd, &eh, o);
        else
                loaded_print(v, &p, &rd, &eh);
        host_done(&eh);
        readiness_done(&rd);
        plugin_unload(&p);
}

int cmd_harnesses(const struct cli_command *self, const struct tb_env *env, int argc, char **argv)
{
        struct harnesses_args a = { 0 };
        struct plugin_entry *v;
        size_t n;
        int first = 0, verbosity = 1, r = cli_parse(self, argc, argv, &a, &first);
        if (r != 0)
                return r == CLI_HELP_SHOWN ? 0 : r;
        if (first < argc)
                return cli_usage_error(self->name, "unexpected argument '%s'", argv[first]);
        if (cli_verbosity(self, a.v, a.q, &verbosity) != 0)
                return TB_EXIT_USAGE;
        log_set_verbosity(verbosity);

        json_object *arr = a.json ? json_object_new_array() : NULL;
        plugin_list(env->plugin_path, &v, &n);
        if (n == 0 && !arr)
                printf("no harnesses installed (looked in TRIALBOX_PLUGIN_PATH and %s)\n", TB_PLUGIN_DIR);
        for (size_t i = 0; i < n; i++)
                one_harness(&v[i], env, arr);
        plugin_list_free(v, n);
        if (arr) {
                printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(arr);
        }
        return CLI_EXIT_OK;
}
