#define _GNU_SOURCE
#include "trial/session_env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/fileio.h"
#include "sandbox/spec.h"

int session_env_name_check(const char *name, struct tb_error *err)
{
        if (!sandbox_env_name_valid(name))
                return tb_fail(err, -EINVAL, "'%s' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", name);
        const char *why = sandbox_env_reserved(name);
        if (why)
                return tb_fail(err, -EINVAL, "'%s' cannot be set: %s", name, why);
        return 0;
}

int session_env_check(const char *name, json_object *value, struct tb_error *err)
{
        int r = session_env_name_check(name, err);
        if (r < 0)
                return r;
        if (!json_object_is_type(value, json_type_string))
                return tb_fail(err, -EINVAL, "'%s' must be a string", name);
        if (strlen(json_object_get_string(value)) != (size_t)json_object_get_string_len(value))
                return tb_fail(err, -EINVAL, "'%s' holds a NUL character", name);
        return 0;
}

int session_env_from_json(json_object *j, struct strv *out, struct tb_error *err)
{
        if (!json_object_is_type(j, json_type_object))
                return tb_fail(err, -EINVAL, "must be an object of variables (\"NAME\": \"value\")");
        const char *text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN);
        if (strlen(text) > SESSION_ENV_MAX_BYTES)
                return tb_fail(err, -EINVAL, "is larger than %d bytes", SESSION_ENV_MAX_BYTES);
        json_object_object_foreach(j, key, v) {
                int r = session_env_check(key, v, err);
                if (r < 0)
                        return r;
        }
        json_object_object_foreach(j, name, value) {
                char *s = xasprintf("%s=%s", name, json_object_get_string(value));
                strv_add_take(out, s);
        }
        return 0;
}

int session_env_read(const char *path, struct strv *out, struct tb_error *err)
{
        _cleanup_erase_ char *text = NULL;
        size_t len = 0;
        int r = read_full_file_at(AT_FDCWD, path, SESSION_ENV_MAX_BYTES, READ_SECURE, &text, &len, NULL);
        if (r < 0)
                return tb_fail(err, r, "--env-file '%s': %s", path, r == -EFBIG ? "larger than 60000 bytes" : strerror(-r));
        json_tokener *tok = json_tokener_new();
        json_object *j = json_tokener_parse_ex(tok, text, (int)len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        json_tokener_free(tok);
        if (!j || jerr != json_tokener_success) {
                json_object_put(j);
                return tb_fail(err, -EINVAL, "--env-file '%s': not JSON (%s); give one object of variables", path,
                               json_tokener_error_desc(jerr));
        }
        struct tb_error e = { 0 };
        r = session_env_from_json(j, out, &e);
        json_object_put(j);
        if (r < 0)
                return tb_fail(err, r, "--env-file '%s': %s", path, e.msg);
        return 0;
}

char *session_env_to_json(const struct strv *env)
{
        json_object *j = json_object_new_object();
        for (size_t i = 0; i < env->n; i++) {
                const char *eq = strchr(env->v[i], '=');
                _cleanup_free_ char *name = strndup(env->v[i], (size_t)(eq - env->v[i]));
                json_object_object_add(j, name, json_object_new_string(eq + 1));
        }
        char *s = xstrdup(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(j);
        return s;
}

void session_env_done(struct strv *env)
{
        for (size_t i = 0; i < env->n; i++) {
                erase_and_free(env->v[i]);
                env->v[i] = NULL;
        }
        env->n = 0;
        strv_done(env);
}
