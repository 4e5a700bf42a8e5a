#define _GNU_SOURCE
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "base/env.h"
#include "plugin/host.h"
#include "base/log.h"
#include "plugin/loader.h"

void readiness_check(const struct plugin *p, const struct tb_env *env, struct readiness *out)
{
        const struct tb_harness *h = p->harness;
        /* The home a Trial would use (trial.c), so `check` looks where `run` will. */
        const char *home = env->home ? env->home : "/";

        *out = (struct readiness){ 0 };
        out->binary = find_on_path(h->default_binary, env->path);
        struct tb_host host = {
                .harness = h->name,
                .env = env,
                .sandboxed = 1,
                .checking = true,
                .host_home = home,
                .session_home = home,
        };
        host_call(&host, p->preflight);
        out->login_ok = !host.voided;
        if (host.voided)
                out->detail = xstrdup(host.void_detail);
        else if (!out->binary)
                out->detail = xasprintf("the binary '%s' is not on the PATH; install it or pass --harness-bin",
                                        h->default_binary);
        out->ready = out->detail == NULL;
        out->n_notes = host.notes.n;
        out->notes = steal_pointer(&host.notes.v);
        host.notes.n = 0;
        host_done(&host);
}

void readiness_done(struct readiness *r)
{
        free(r->binary);
        free(r->detail);
        for (size_t i = 0; i < r->n_notes; i++)
                free(r->notes[i]);
        free(r->notes);
        *r = (struct readiness){ 0 };
}

void endpoints_check(const struct plugin *p, const struct tb_env *env, struct tb_host *host)
{
        const char *home = env->home ? env->home : "/";
        *host = (struct tb_host){
                .harness = p->harness->name,
                .env = env,
                .sandboxed = 1,
                .checking = true,
                .host_home = home,
                .session_home = home,
        };
        host_call(host, p->endpoints);
}

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
                log_print("%-10s           endpoints: none declared", "");
        for (size_t i = 0; i < n; i++)
                log_print("%-10s           endpoint: %s (%s)", "", e[i].pattern,
                          e[i].required ? "required: allowed under --network allow"
                                        : "optional: denied under --network allow unless --allow-host");
        for (size_t i = 0; i < host->notes.n; i++)
                log_print("%-10s           %s", "", host->notes.v[i]);
        if (plugin_needs_userns(p))
                log_print("%-10s           runs its own sandbox: keeps nested user namespaces", "");
}

int harnesses_main(const struct tb_env *env, int json)
{
        struct plugin_entry *v;
        size_t n;
        json_object *arr = json ? json_object_new_array() : NULL;

        plugin_list(env->plugin_path, &v, &n);
        if (n == 0 && !json)
                printf("no harnesses installed (looked in TRIALBOX_PLUGIN_PATH and %s)\n", TB_PLUGIN_DIR);
        for (size_t i = 0; i < n; i++) {
                struct plugin p;
                struct tb_error err = { 0 };
                json_object *o = json ? json_object_new_object() : NULL;
                if (o) {
                        json_object_object_add(o, "name", json_object_new_string(v[i].name));
                        json_object_object_add(o, "path", json_object_new_string(v[i].path));
                }
                if (v[i].shadowed) {
                        if (o) {
                                json_object_object_add(o, "status", json_object_new_string("shadowed"));
                                json_object_array_add(arr, o);
                        } else {
                                log_print("%-10s shadowed  %s (an earlier folder has %s.so)", v[i].name, v[i].path,
                                          v[i].name);
                        }
                        continue;
                }
                if (plugin_load_file(v[i].path, v[i].name, &p, &err) < 0) {
                        if (o) {
                                json_object_object_add(o, "status", json_object_new_string("refused"));
                                json_object_object_add(o, "detail", json_object_new_string(err.msg));
                                json_object_array_add(arr, o);
                        } else {
                                log_print("%-10s refused   %s", v[i].name, err.msg);
                        }
                        continue;
                }
                struct readiness rd;
                struct tb_host eh;
                readiness_check(&p, env, &rd);
                endpoints_check(&p, env, &eh);
                uint32_t abi = p.harness->abi_version;
                if (o) {
                        json_object_object_add(o, "status", json_object_new_string(rd.ready ? "ready" : "not_ready"));
                        char abibuf[32];
                        snprintf(abibuf, sizeof abibuf, "%u.%u", TB_PLUGIN_ABI_MAJOR_OF(abi), TB_PLUGIN_ABI_MINOR_OF(abi));
                        json_object_object_add(o, "abi", json_object_new_string(abibuf));
                        json_object_object_add(o, "summary", json_object_new_string(p.harness->summary ? p.harness->summary : ""));
                        json_object_object_add(o, "default_binary", json_object_new_string(p.harness->default_binary));
                        json_object_object_add(o, "binary", rd.binary ? json_object_new_string(rd.binary) : NULL);
                        json_object_object_add(o, "detail", rd.detail ? json_object_new_string(rd.detail) : NULL);
                        json_object *notes = json_object_new_array();
                        for (size_t k = 0; k < rd.n_notes; k++)
                                json_object_array_add(notes, json_object_new_string(rd.notes[k]));
                        json_object_object_add(o, "notes", notes);
                        endpoints_json(&p, &eh, o);
                        json_object_array_add(arr, o);
                } else {
                        log_print("%-10s %-9s %s (ABI %u.%u): %s", v[i].name, rd.ready ? "ready" : "not-ready",
                                  v[i].path, TB_PLUGIN_ABI_MAJOR_OF(abi), TB_PLUGIN_ABI_MINOR_OF(abi),
                                  p.harness->summary ? p.harness->summary : "");
                        if (rd.detail)
                                log_print("%-10s           %s", "", rd.detail);
                        for (size_t k = 0; k < rd.n_notes && log_get_verbosity() >= 2; k++)
                                log_print("%-10s           %s", "", rd.notes[k]);
                        if (log_get_verbosity() >= 2)
                                endpoints_print(&p, &eh);
                }
                host_done(&eh);
                readiness_done(&rd);
                plugin_unload(&p);
        }
        plugin_list_free(v, n);
        if (arr) {
                printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(arr);
        }
        return 0;
}
