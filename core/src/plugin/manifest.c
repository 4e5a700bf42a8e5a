#define _GNU_SOURCE
#include "plugin/manifest.h"

#include "plugin/host.h"
#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/macro.h"

#include <ffi.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MANIFEST_MAX_SIZE (256UL * 1024)

struct manifest_login {
        char *host, *sandbox; /* "~/..." or absolute */
        bool synced, required;
};

struct manifest_credential {
        char *key, *env;
        bool required;
};

struct manifest_endpoint {
        char *host;
        bool required;
};

struct kv {
        char *name, *value;
};

enum { HOOK_PREFLIGHT, HOOK_PREPARE_LOGIN, HOOK_ENV, HOOK_ENDPOINTS, HOOK_COUNT };

struct manifest {
        char *name, *summary, *default_binary, *how, *exclusive;
        struct kv *env, *home_files;
        size_t n_env, n_home_files;
        struct manifest_login *logins;
        size_t n_logins;
        struct manifest_credential *creds;
        size_t n_creds;
        struct manifest_endpoint *endpoints;
        size_t n_endpoints;
        bool require_any;

        /* The vtable and the closures behind its hooks. */
        struct tb_harness harness;
        ffi_cif cif;
        ffi_type *arg_types[2];
        ffi_closure *closures[HOOK_COUNT];
};

void manifest_free(struct manifest *m)
{
        if (!m)
                return;
        for (int i = 0; i < HOOK_COUNT; i++)
                if (m->closures[i])
                        ffi_closure_free(m->closures[i]);
        free(m->name);
        free(m->summary);
        free(m->default_binary);
        free(m->how);
        free(m->exclusive);
        for (size_t i = 0; i < m->n_env; i++) {
                free(m->env[i].name);
                free(m->env[i].value);
        }
        free(m->env);
        for (size_t i = 0; i < m->n_home_files; i++) {
                free(m->home_files[i].name);
                free(m->home_files[i].value);
        }
        free(m->home_files);
        for (size_t i = 0; i < m->n_logins; i++) {
                free(m->logins[i].host);
                free(m->logins[i].sandbox);
        }
        free(m->logins);
        for (size_t i = 0; i < m->n_creds; i++) {
                free(m->creds[i].key);
                free(m->creds[i].env);
        }
        free(m->creds);
        for (size_t i = 0; i < m->n_endpoints; i++)
                free(m->endpoints[i].host);
        free(m->endpoints);
        free(m);
}

/* ---- the hooks, run with the manifest as their data ---- */

/* "~/x" against `home`, or an absolute path as is. */
static char *expand(const char *p, const char *home)
{
        if (p[0] == '~')
                return xasprintf("%s%s", home ? home : "", p + 1);
        return xstrdup(p);
}

static bool login_present(const struct tb_host_services *svc, struct tb_host *host, const struct manifest_login *l)
{
        _cleanup_free_ char *p = expand(l->host, svc->host_home(host));
        return access(p, R_OK) == 0;
}

static int manifest_preflight(const struct manifest *m, const struct tb_host_services *svc, struct tb_host *host)
{
        bool any = false;
        const char *how = m->how ? m->how : "see the Harness's manifest";
        for (size_t i = 0; i < m->n_logins; i++) {
                const struct manifest_login *l = &m->logins[i];
                _cleanup_free_ char *p = expand(l->host, svc->host_home(host));
                if (l->required) {
                        if (svc->require_file(host, "login", p, how) < 0)
                                return -ECANCELED;
                        any = true;
                } else if (login_present(svc, host, l)) {
                        svc->note(host, "login: '%s' (present)", p);
                        any = true;
                } else {
                        svc->note(host, "login: '%s' (absent, optional)", p);
                }
        }
        for (size_t i = 0; i < m->n_creds; i++) {
                const struct manifest_credential *c = &m->creds[i];
                if (c->required) {
                        if (!svc->require_credential(host, c->key, how))
                                return -ECANCELED;
                        any = true;
                } else if (svc->credential(host, c->key)) {
                        svc->note(host, "%s.%s: present", m->name, c->key);
                        any = true;
                } else {
                        svc->note(host, "%s.%s: absent, optional", m->name, c->key);
                }
        }
        if (m->require_any && !any && (m->n_logins || m->n_creds)) {
                _cleanup_free_ char *d = xasprintf("no login and no key for %s; %s", m->name, how);
                return svc->void_trial(host, d);
        }
        return 0;
}

static int manifest_prepare_login(const struct manifest *m, const struct tb_host_services *svc, struct tb_host *host)
{
        for (size_t i = 0; i < m->n_logins; i++) {
                const struct manifest_login *l = &m->logins[i];
                if (!l->required && !login_present(svc, host, l))
                        continue;
                _cleanup_free_ char *from = expand(l->host, svc->host_home(host));
                _cleanup_free_ char *to = expand(l->sandbox, svc->session_home(host));
                int r = l->synced ? svc->login_synced(host, from, to) : svc->login_in_place(host, from, to);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int manifest_env(const struct manifest *m, const struct tb_host_services *svc, struct tb_host *host)
{
        for (size_t i = 0; i < m->n_env; i++) {
                int r = svc->setenv(host, m->env[i].name, m->env[i].value, 0);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < m->n_creds; i++) {
                const char *v = svc->credential(host, m->creds[i].key);
                int r = v ? svc->setenv(host, m->creds[i].env, v, 1) : 0;
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < m->n_home_files && svc->sandboxed(host); i++) {
                int r = svc->write_home_file(host, m->home_files[i].name, m->home_files[i].value);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int manifest_endpoints(const struct manifest *m, const struct tb_host_services *svc, struct tb_host *host)
{
        for (size_t i = 0; i < m->n_endpoints; i++) {
                int r = svc->add_endpoint(host, m->endpoints[i].host,
                                          m->endpoints[i].required ? TB_ENDPOINT_REQUIRED : TB_ENDPOINT_OPTIONAL);
                if (r < 0)
                        return r;
        }
        return 0;
}

typedef int (*manifest_hook)(const struct manifest *, const struct tb_host_services *, struct tb_host *);
static const manifest_hook hooks[HOOK_COUNT] = { manifest_preflight, manifest_prepare_login, manifest_env,
                                                 manifest_endpoints };

/* One trampoline per hook kind: libffi hands it the call's arguments and the
 * closure's user data, the manifest. */
#define TRAMPOLINE(idx)                                                                           \
        static void trampoline_##idx(ffi_cif *cif, void *ret, void **args, void *user)            \
        {                                                                                         \
                (void)cif;                                                                        \
                const struct tb_host_services *svc = *(const struct tb_host_services **)args[0]; \
                struct tb_host *host = *(struct tb_host **)args[1];                               \
                *(ffi_arg *)ret = (ffi_arg)(ffi_sarg)hooks[idx](user, svc, host);                 \
        }
TRAMPOLINE(0)
TRAMPOLINE(1)
TRAMPOLINE(2)
TRAMPOLINE(3)
static void (*const trampolines[HOOK_COUNT])(ffi_cif *, void *, void **, void *) = { trampoline_0, trampoline_1,
                                                                                      trampoline_2, trampoline_3 };

static int build_vtable(struct manifest *m, struct tb_error *err, const char *path)
{
        m->arg_types[0] = &ffi_type_pointer;
        m->arg_types[1] = &ffi_type_pointer;
        if (ffi_prep_cif(&m->cif, FFI_DEFAULT_ABI, 2, &ffi_type_sint, m->arg_types) != FFI_OK)
                return tb_fail(err, -EINVAL, "manifest '%s': libffi cannot describe a hook", path);
        tb_hook_fn code[HOOK_COUNT];
        for (int i = 0; i < HOOK_COUNT; i++) {
                void *c = NULL;
                m->closures[i] = ffi_closure_alloc(sizeof(ffi_closure), &c);
                if (!m->closures[i] ||
                    ffi_prep_closure_loc(m->closures[i], &m->cif, trampolines[i], m, c) != FFI_OK)
                        return tb_fail(err, -ENOMEM, "manifest '%s': cannot make its hooks (libffi)", path);
                /* The closure's code is a function of the hook's type; the
                 * cast through void * is how libffi hands it back. */
                memcpy(&code[i], &c, sizeof c);
        }
        m->harness = (struct tb_harness){
                .abi_version = TB_PLUGIN_ABI_VERSION,
                .size = sizeof(struct tb_harness),
                .name = m->name,
                .summary = m->summary,
                .default_binary = m->default_binary,
                .preflight = code[HOOK_PREFLIGHT],
                .prepare_login = code[HOOK_PREPARE_LOGIN],
                .env = code[HOOK_ENV],
                .endpoints = m->n_endpoints ? code[HOOK_ENDPOINTS] : NULL,
                .exclusive = m->exclusive,
        };
        return 0;
}

/* ---- parsing ---- */

bool harness_exclusive_valid(const char *name)
{
        size_t n = strlen(name);
        if (n == 0 || n > 64)
                return false;
        for (const char *c = name; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-'))
                        return false;
        return true;
}


static int bad(struct tb_error *err, const char *path, const char *field, const char *what)
{
        tb_fail(err, -EINVAL, "manifest '%s': field '%s' %s; fix the manifest", path, field, what);
        return -EINVAL;
}

static bool is_portable_name(const char *s, const char *extra)
{
        size_t n = strlen(s);
        return n > 0 && n <= 128 && strspn(s, extra) == n;
}

static int get_string(json_object *o, const char *key, const char *field, bool required, char **out, const char *path,
                      struct tb_error *err)
{
        json_object *v;
        *out = NULL;
        if (!json_object_object_get_ex(o, key, &v) || !v) {
                if (required)
                        return bad(err, path, field, "is missing");
                return 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return bad(err, path, field, "must be a string");
        const char *s = json_object_get_string(v);
        if (strlen(s) != (size_t)json_object_get_string_len(v))
                return bad(err, path, field, "must not contain a NUL character");
        *out = xstrdup(s);
        return 0;
}

static int get_bool(json_object *o, const char *key, const char *field, bool *out, const char *path,
                    struct tb_error *err)
{
        json_object *v;
        *out = false;
        if (!json_object_object_get_ex(o, key, &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_boolean))
                return bad(err, path, field, "must be true or false");
        *out = json_object_get_boolean(v);
        return 0;
}

static bool path_ok(const char *p)
{
        if (!((p[0] == '~' && p[1] == '/') || p[0] == '/'))
                return false;
        return !strstr(p, "/../") && !strstr(p, "/./") && strcmp(p + strlen(p) - (strlen(p) >= 3 ? 3 : 0), "/..") != 0;
}

#define ENV_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
static const char env_chars[] = ENV_CHARS;
static const char key_chars[] = ENV_CHARS "-";

static int parse_kv(json_object *o, const char *key, bool env_names, struct kv **out, size_t *n, const char *path,
                    struct tb_error *err)
{
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_object))
                return bad(err, path, key, "must be an object of strings");
        *out = xcalloc((size_t)json_object_object_length(v) + 1, sizeof **out);
        json_object_object_foreach(v, k, val)
        {
                char field[300];
                snprintf(field, sizeof field, "%s.%.200s", key, k);
                if (!json_object_is_type(val, json_type_string))
                        return bad(err, path, field, "must be a string");
                if (strlen(json_object_get_string(val)) != (size_t)json_object_get_string_len(val))
                        return bad(err, path, field, "must not contain a NUL character");
                if (env_names ? !(is_portable_name(k, env_chars) && !(k[0] >= '0' && k[0] <= '9'))
                              : (k[0] == '/' || strstr(k, "..") || !*k))
                        return bad(err, path, field,
                                   env_names ? "is not a variable name" : "must be a relative path inside the home");
                (*out)[*n].name = xstrdup(k);
                (*out)[(*n)++].value = xstrdup(json_object_get_string(val));
        }
        return 0;
}

static int parse_logins(json_object *o, struct manifest *m, const char *path, struct tb_error *err)
{
        json_object *arr;
        if (!json_object_object_get_ex(o, "logins", &arr) || !arr)
                return 0;
        if (!json_object_is_type(arr, json_type_array))
                return bad(err, path, "logins", "must be an array");
        size_t n = json_object_array_length(arr);
        m->logins = xcalloc(n + 1, sizeof *m->logins);
        for (size_t i = 0; i < n; i++) {
                json_object *l = json_object_array_get_idx(arr, i);
                struct manifest_login *ml = &m->logins[m->n_logins++];
                char field[64];
                _cleanup_free_ char *mode = NULL;
                snprintf(field, sizeof field, "logins[%zu]", i);
                if (!json_object_is_type(l, json_type_object))
                        return bad(err, path, field, "must be an object");
                snprintf(field, sizeof field, "logins[%zu].host", i);
                int r = get_string(l, "host", field, true, &ml->host, path, err);
                if (r == 0 && !path_ok(ml->host))
                        r = bad(err, path, field, "must be absolute or start with ~/, without . or ..");
                snprintf(field, sizeof field, "logins[%zu].sandbox", i);
                if (r == 0)
                        r = get_string(l, "sandbox", field, true, &ml->sandbox, path, err);
                if (r == 0 && !(ml->sandbox[0] == '~' && ml->sandbox[1] == '/' && path_ok(ml->sandbox)))
                        r = bad(err, path, field, "must start with ~/ (the session's home), without . or ..");
                snprintf(field, sizeof field, "logins[%zu].mode", i);
                if (r == 0)
                        r = get_string(l, "mode", field, true, &mode, path, err);
                if (r == 0) {
                        if (strcmp(mode, "synced") == 0)
                                ml->synced = true;
                        else if (strcmp(mode, "in_place") != 0)
                                r = bad(err, path, field, "must be \"synced\" or \"in_place\"");
                }
                snprintf(field, sizeof field, "logins[%zu].required", i);
                if (r == 0)
                        r = get_bool(l, "required", field, &ml->required, path, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_credentials(json_object *o, struct manifest *m, const char *path, struct tb_error *err)
{
        json_object *arr;
        if (!json_object_object_get_ex(o, "credentials", &arr) || !arr)
                return 0;
        if (!json_object_is_type(arr, json_type_array))
                return bad(err, path, "credentials", "must be an array");
        size_t n = json_object_array_length(arr);
        m->creds = xcalloc(n + 1, sizeof *m->creds);
        for (size_t i = 0; i < n; i++) {
                json_object *c = json_object_array_get_idx(arr, i);
                struct manifest_credential *mc = &m->creds[m->n_creds++];
                char field[64];
                snprintf(field, sizeof field, "credentials[%zu]", i);
                if (!json_object_is_type(c, json_type_object))
                        return bad(err, path, field, "must be an object");
                snprintf(field, sizeof field, "credentials[%zu].key", i);
                int r = get_string(c, "key", field, true, &mc->key, path, err);
                if (r == 0 && (strchr(mc->key, '.') || !is_portable_name(mc->key, key_chars)))
                        r = bad(err, path, field, "must be a key of this Harness's section (letters, digits, _ and -)");
                snprintf(field, sizeof field, "credentials[%zu].env", i);
                if (r == 0)
                        r = get_string(c, "env", field, true, &mc->env, path, err);
                if (r == 0 && (!is_portable_name(mc->env, env_chars) || (mc->env[0] >= '0' && mc->env[0] <= '9')))
                        r = bad(err, path, field, "is not a variable name");
                snprintf(field, sizeof field, "credentials[%zu].required", i);
                if (r == 0)
                        r = get_bool(c, "required", field, &mc->required, path, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_endpoints(json_object *o, struct manifest *m, const char *path, struct tb_error *err)
{
        json_object *arr;
        if (!json_object_object_get_ex(o, "endpoints", &arr) || !arr)
                return 0;
        if (!json_object_is_type(arr, json_type_array))
                return bad(err, path, "endpoints", "must be an array");
        size_t n = json_object_array_length(arr);
        m->endpoints = xcalloc(n + 1, sizeof *m->endpoints);
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(arr, i);
                struct manifest_endpoint *me = &m->endpoints[m->n_endpoints++];
                char field[64];
                snprintf(field, sizeof field, "endpoints[%zu]", i);
                if (!json_object_is_type(e, json_type_object))
                        return bad(err, path, field, "must be an object");
                snprintf(field, sizeof field, "endpoints[%zu].host", i);
                int r = get_string(e, "host", field, true, &me->host, path, err);
                if (r == 0 && !host_endpoint_valid(me->host))
                        r = bad(err, path, field, "must be host[:port] (a name, *.name, or an IP literal)");
                snprintf(field, sizeof field, "endpoints[%zu].required", i);
                if (r == 0)
                        r = get_bool(e, "required", field, &me->required, path, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const char *const known_fields[] = { "name", "summary", "default_binary", "env", "home_files",
                                            "logins", "credentials", "require_any", "how", "endpoints",
                                            "exclusive" };

/* The manifest's text as one JSON object, strictly (nothing after it):
 * 0 with *out, or -EINVAL saying where the JSON breaks. */
static int parse_object(const char *text, size_t len, const char *path, json_object **out, struct tb_error *err)
{
        *out = NULL;
        json_tokener *tok = json_tokener_new();
        if (!tok)
                return tb_fail(err, -ENOMEM, "manifest '%s': out of memory", path);
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        json_object *root = json_tokener_parse_ex(tok, text, (int)len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        if (!root || jerr != json_tokener_success) {
                size_t line = 1, col = 1;
                for (size_t i = 0; i < end && i < len; i++) {
                        if (text[i] == '\n') {
                                line++;
                                col = 1;
                        } else {
                                col++;
                        }
                }
                json_object_put(root);
                return tb_fail(err, -EINVAL, "manifest '%s': invalid JSON at line %zu, column %zu: %s; fix the manifest",
                               path, line, col,
                               jerr == json_tokener_continue ? "unexpected end of data" : json_tokener_error_desc(jerr));
        }
        for (size_t i = end; i < len; i++)
                if (text[i] != ' ' && text[i] != '\t' && text[i] != '\r' && text[i] != '\n') {
                        json_object_put(root);
                        return tb_fail(err, -EINVAL, "manifest '%s': text after the JSON object; fix the manifest", path);
                }
        if (!json_object_is_type(root, json_type_object)) {
                json_object_put(root);
                return tb_fail(err, -EINVAL, "manifest '%s': the top level must be a JSON object; fix the manifest",
                               path);
        }
        *out = root;
        return 0;
}

/* Every top-level field is one this core knows (a typo is refused, not ignored). */
static int check_known_fields(json_object *root, const char *path, struct tb_error *err)
{
        json_object_object_foreach(root, k, v)
        {
                (void)v;
                bool known = false;
                for (size_t i = 0; i < TB_ARRAY_SIZE(known_fields); i++)
                        known = known || strcmp(k, known_fields[i]) == 0;
                if (!known) {
                        char field[200];
                        snprintf(field, sizeof field, "%.190s", k);
                        return bad(err, path, field, "is not a manifest field");
                }
        }
        return 0;
}

int manifest_parse(const char *text, size_t len, const char *path, const char *expected_name,
                   struct manifest **out, struct tb_error *err)
{
        *out = NULL;
        json_object *root;
        int r = parse_object(text, len, path, &root, err);
        if (r < 0)
                return r;

        struct manifest *m = xcalloc(1, sizeof *m);
        r = check_known_fields(root, path, err);
        if (r == 0)
                r = get_string(root, "name", "name", true, &m->name, path, err);
        if (r == 0 && strcmp(m->name, expected_name) != 0)
                r = tb_fail(err, -EINVAL, "manifest '%s': field 'name' is '%s', not the file's name '%s'; fix the manifest",
                            path, m->name, expected_name);
        if (r == 0)
                r = get_string(root, "summary", "summary", false, &m->summary, path, err);
        if (r == 0)
                r = get_string(root, "default_binary", "default_binary", true, &m->default_binary, path, err);
        if (r == 0 && !m->default_binary[0])
                r = bad(err, path, "default_binary", "must not be empty");
        if (r == 0)
                r = get_string(root, "how", "how", false, &m->how, path, err);
        if (r == 0)
                r = get_string(root, "exclusive", "exclusive", false, &m->exclusive, path, err);
        if (r == 0 && m->exclusive && !harness_exclusive_valid(m->exclusive))
                r = bad(err, path, "exclusive", "must be 1 to 64 characters of [a-z0-9._-]");
        if (r == 0)
                r = parse_kv(root, "env", true, &m->env, &m->n_env, path, err);
        if (r == 0)
                r = parse_kv(root, "home_files", false, &m->home_files, &m->n_home_files, path, err);
        if (r == 0)
                r = parse_logins(root, m, path, err);
        if (r == 0)
                r = parse_credentials(root, m, path, err);
        if (r == 0)
                r = parse_endpoints(root, m, path, err);
        if (r == 0)
                r = get_bool(root, "require_any", "require_any", &m->require_any, path, err);
        json_object_put(root);
        if (r == 0)
                r = build_vtable(m, err, path);
        if (r < 0) {
                manifest_free(m);
                return r;
        }
        *out = m;
        return 0;
}

int manifest_load(const char *path, const char *expected_name, struct manifest **out, struct tb_error *err)
{
        size_t len = 0;
        _cleanup_free_ char *text = read_file(path, MANIFEST_MAX_SIZE, &len);
        if (!text)
                return tb_fail(err, -errno, "manifest '%s': %s", path,
                               errno == EFBIG ? "larger than 256 KiB" : strerror(errno));
        return manifest_parse(text, len, path, expected_name, out, err);
}

const struct tb_harness *manifest_harness(const struct manifest *m) { return &m->harness; }
