#define _GNU_SOURCE
#include "sandbox/spec.h"

#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/macro.h"
#include "base/path.h"
#include "base/strbuf.h"
#include "base/strv.h"

void sandbox_spec_done(struct sandbox_spec *spec)
{
        for (size_t i = 0; i < spec->n_ops; i++) {
                free(spec->ops[i].src);
                free(spec->ops[i].dest);
        }
        free(spec->ops);
        for (size_t i = 0; i < spec->n_env; i++) {
                free(spec->env[i].name);
                if (spec->env[i].secret)
                        erase_and_free(spec->env[i].value);
                else
                        free(spec->env[i].value);
        }
        free(spec->env);
        strv_done(&spec->command);
        free(spec->chdir);
        free(spec->cow.path);
        if (spec->seccomp_fd > 0)
                close(spec->seccomp_fd);
        memset(spec, 0, sizeof *spec);
}

void sandbox_add(struct sandbox_spec *spec, enum sandbox_op_kind kind, const char *src, const char *dest)
{
        sandbox_insert(spec, spec->n_ops, kind, src, dest);
}

void sandbox_insert(struct sandbox_spec *spec, size_t index, enum sandbox_op_kind kind, const char *src,
                    const char *dest)
{
        GREEDY_REALLOC(spec->ops, spec->cap_ops, spec->n_ops + 1);
        if (index > spec->n_ops)
                index = spec->n_ops;
        memmove(&spec->ops[index + 1], &spec->ops[index], (spec->n_ops - index) * sizeof *spec->ops);
        spec->n_ops++;
        spec->ops[index] = (struct sandbox_op){
                .kind = kind,
                .src = src ? xstrdup(src) : NULL,
                .dest = xstrdup(dest),
        };
}

bool sandbox_covers(const struct sandbox_spec *spec, const char *path)
{
        for (size_t i = 0; i < spec->n_ops; i++) {
                const struct sandbox_op *op = &spec->ops[i];
                if ((op->kind == SANDBOX_RO_BIND || op->kind == SANDBOX_BIND) && strcmp(op->src, op->dest) == 0 &&
                    path_is_under(path, op->dest))
                        return true;
        }
        return false;
}

const struct sandbox_op *sandbox_find(const struct sandbox_spec *spec, const char *dest)
{
        for (size_t i = 0; i < spec->n_ops; i++)
                if (strcmp(spec->ops[i].dest, dest) == 0)
                        return &spec->ops[i];
        return NULL;
}

bool sandbox_env_name_valid(const char *name)
{
        if (!name || !*name || (*name >= '0' && *name <= '9'))
                return false;
        for (const char *p = name; *p; p++)
                if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
                        return false;
        return true;
}

const char *sandbox_env_reserved(const char *name)
{
        static const char *const own[] = { "HOME", "PATH", "USER", "LOGNAME", "TMPDIR", "XDG_CONFIG_HOME",
                                           "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR" };
        static const char *const proxy[] = { "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(own); i++)
                if (strcmp(name, own[i]) == 0)
                        return "trialbox sets it for the session";
        for (size_t i = 0; i < TB_ARRAY_SIZE(proxy); i++)
                if (strcasecmp(name, proxy[i]) == 0)
                        return "trialbox sets it for the session under --network allow";
        if (strncmp(name, "TRIALBOX_", 9) == 0)
                return "TRIALBOX_* are trialbox's own";
        if (strncmp(name, "LD_", 3) == 0)
                return "LD_* would reach bwrap's loader, outside the sandbox";
        return NULL;
}

void sandbox_setenv(struct sandbox_spec *spec, const char *name, const char *value, bool secret)
{
        for (size_t i = 0; i < spec->n_env; i++) {
                struct sandbox_env *e = &spec->env[i];
                if (strcmp(e->name, name) == 0) {
                        if (e->secret)
                                erase_and_free(e->value);
                        else
                                free(e->value);
                        e->value = xstrdup(value);
                        e->secret = e->secret || secret;
                        return;
                }
        }
        GREEDY_REALLOC(spec->env, spec->cap_env, spec->n_env + 1);
        spec->env[spec->n_env++] = (struct sandbox_env){ xstrdup(name), xstrdup(value), secret };
}

const char *sandbox_getenv(const struct sandbox_spec *spec, const char *name)
{
        for (size_t i = 0; i < spec->n_env; i++)
                if (strcmp(spec->env[i].name, name) == 0)
                        return spec->env[i].value;
        return NULL;
}

char *sandbox_harness_path(const char *name) { return xasprintf("%s/%s", SANDBOX_HARNESS_DIR, name); }

void sandbox_envp(const struct sandbox_spec *spec, struct strv *out)
{
        for (size_t i = 0; i < spec->n_env; i++)
                strv_addf(out, "%s=%s", spec->env[i].name, spec->env[i].value);
}

static const char *const op_flag[] = {
        [SANDBOX_RO_BIND] = "--ro-bind", [SANDBOX_BIND] = "--bind", [SANDBOX_SYMLINK] = "--symlink",
        [SANDBOX_DIR] = "--dir",         [SANDBOX_TMPFS] = "--tmpfs", [SANDBOX_PROC] = "--proc",
        [SANDBOX_DEV] = "--dev",         [SANDBOX_TMP_OVERLAY] = "--tmp-overlay",
};

void sandbox_argv(const struct sandbox_spec *spec, const char *bwrap, struct strv *out)
{
        strv_add(out, bwrap);
        if (spec->seccomp_fd > 0) {
                strv_add(out, "--seccomp");
                strv_addf(out, "%d", spec->seccomp_fd);
        }
        if (spec->disable_userns) {
                strv_add(out, "--unshare-user");
                strv_add(out, "--disable-userns");
        }
        strv_add(out, "--unshare-pid");
        /* The host's SysV shared memory and semaphores stay out of reach;
         * the network stays the host's unless unshare_net says otherwise. */
        strv_add(out, "--unshare-ipc");
        if (spec->unshare_net) /* --network none and allow: loopback only */
                strv_add(out, "--unshare-net");
        strv_add(out, "--die-with-parent");
        strv_add(out, "--new-session");
        /* bwrap run by root keeps every capability unless told otherwise
         * (a user namespace drops them anyway): none, always. */
        strv_add(out, "--cap-drop");
        strv_add(out, "ALL");
        for (size_t i = 0; i < spec->n_ops; i++) {
                const struct sandbox_op *op = &spec->ops[i];
                if (op->kind == SANDBOX_TMPFS && spec->tmpfs_size > 0) {
                        strv_add(out, "--size");
                        strv_addf(out, "%lld", spec->tmpfs_size);
                }
                if (op->kind == SANDBOX_TMP_OVERLAY) {
                        strv_add(out, "--overlay-src");
                        strv_add(out, op->src);
                        strv_add(out, op_flag[op->kind]);
                        strv_add(out, op->dest);
                        continue;
                }
                strv_add(out, op_flag[op->kind]);
                if (op->src)
                        strv_add(out, op->src);
                strv_add(out, op->dest);
        }
        /* Nothing but the binds may be written: not the sandbox's own root. */
        strv_add(out, "--remount-ro");
        strv_add(out, "/");
        if (spec->chdir) {
                strv_add(out, "--chdir");
                strv_add(out, spec->chdir);
        }
        strv_add(out, "--json-status-fd");
        strv_addf(out, "%d", SANDBOX_STATUS_FD);
        strv_add(out, "--");
        for (size_t i = 0; i < spec->command.n; i++)
                strv_add(out, spec->command.v[i]);
}

char *sandbox_render(const struct sandbox_spec *spec, const char *bwrap)
{
        struct strbuf sb = { 0 };
        struct strv argv = { 0 };

        if (!bwrap && spec->chdir) {
                strbuf_add(&sb, "cd ");
                strbuf_add_quoted(&sb, spec->chdir);
                strbuf_add(&sb, " && ");
        }
        strbuf_add(&sb, "env -i");
        for (size_t i = 0; i < spec->n_env; i++) {
                const struct sandbox_env *e = &spec->env[i];
                _cleanup_free_ char *kv = xasprintf("%s=%s", e->name, e->secret ? "<redacted>" : e->value);
                strbuf_add(&sb, " ");
                strbuf_add_quoted(&sb, kv);
        }
        if (bwrap)
                sandbox_argv(spec, bwrap, &argv);
        else
                for (size_t i = 0; i < spec->command.n; i++)
                        strv_add(&argv, spec->command.v[i]);
        for (size_t i = 0; i < argv.n; i++) {
                strbuf_add(&sb, " ");
                strbuf_add_quoted(&sb, argv.v[i]);
        }
        /* bwrap writes its status to fd 3: give a shell that runs this line one. */
        if (bwrap)
                strbuf_addf(&sb, " %d>/dev/null", SANDBOX_STATUS_FD);
        /* Not a command bwrap runs: said, so the line is not taken for all of it. */
        if (bwrap && spec->cow.path) {
                strbuf_add(&sb, " # and, before bwrap, a copy-on-write overlay mounted by trialbox on ");
                strbuf_add_quoted(&sb, spec->cow.path);
        }
        strv_done(&argv);
        return sb.s;
}
