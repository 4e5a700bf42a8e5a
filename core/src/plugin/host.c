#define _GNU_SOURCE
#include "plugin/host.h"
#include "plugin/tokens.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "logins/credentials.h"
#include "model/outcome.h"
#include "base/env.h"
#include "base/log.h"
#include "sandbox/session_user.h"
#include "logins/trials_home.h"
#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/path.h"
#include "base/strv.h"

static void svc_log(struct tb_host *h, enum tb_log_level level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void svc_log(struct tb_host *h, enum tb_log_level level, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        log_fullv((int)level, h->harness, fmt, ap);
        va_end(ap);
}

static const char *svc_host_getenv(struct tb_host *h, const char *name)
{
        return name ? tb_env_get(h->env, name) : NULL;
}

static const char *svc_host_home(struct tb_host *h) { return h->host_home; }
static const char *svc_session_home(struct tb_host *h) { return h->session_home; }
static int svc_sandboxed(struct tb_host *h) { return h->sandboxed; }

static int svc_setenv(struct tb_host *h, const char *name, const char *value, int secret)
{
        if (h->after_session)
                return -EPERM;
        if (!sandbox_env_name_valid(name) || !value)
                return -EINVAL;
        if (h->spec)
                sandbox_setenv(h->spec, name, value, secret != 0);
        return 0;
}

static int svc_void_trial(struct tb_host *h, const char *detail)
{
        if (h->after_session) /* the session ran: the Trial is not void */
                return -EPERM;
        if (!h->voided) {
                h->voided = true;
                snprintf(h->void_detail, sizeof h->void_detail, "%s", detail ? detail : "the harness refused to start");
        }
        return -ECANCELED;
}

static void svc_note(struct tb_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void svc_note(struct tb_host *h, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) >= 0) {
                if (!h->checking)
                        log_full(TB_LOG_INFO, h->harness, "%s", msg);
                strv_add_take(&h->notes, msg);
        }
        va_end(ap);
}

/* A sandbox path for a login: absolute, clean, inside the session home. */
static bool in_session_home(const struct tb_host *h, const char *p)
{
        return p && p[0] == '/' && !strstr(p, "/../") && !strstr(p, "/./") && h->session_home &&
               path_is_under(p, h->session_home) && strcmp(p, h->session_home) != 0;
}

static int svc_login_in_place(struct tb_host *h, const char *host_path, const char *sandbox_path)
{
        if (h->after_session)
                return -EPERM;
        if (!h->sandboxed || h->checking)
                return 0;
        if (!in_session_home(h, sandbox_path))
                return -EINVAL;
        _cleanup_free_ char *real = realpath(host_path, NULL);
        struct stat st;
        if (!real || stat(real, &st) < 0 || !S_ISREG(st.st_mode)) {
                snprintf(h->fail_detail, sizeof h->fail_detail, "login '%s' is not a file", host_path);
                return -ENOENT;
        }
        /* Bound in place, the host's own file: never given away (no chown);
         * the session's user must be able to use it as it is. */
        const struct session_user *u = h->session_user;
        if (u && u->drop && !session_user_can(u, real, R_OK | W_OK)) {
                snprintf(h->fail_detail, sizeof h->fail_detail,
                         "login '%s' cannot be read and written by the session's user '%s'; log in as that user, "
                         "or pass --user with the login's owner",
                         host_path, u->name);
                return -EACCES;
        }
        if (!h->dry_run) {
                /* bwrap needs a file to mount on; create it like mkdir -p would. */
                _cleanup_free_ char *dir = path_dirname(sandbox_path);
                int r = mkdir_p(dir, 0700);
                _cleanup_close_ int fd = r < 0 ? -1 : open(sandbox_path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0)
                        return r < 0 ? r : -errno;
        }
        sandbox_add(h->spec, SANDBOX_BIND, real, sandbox_path);
        return 0;
}

static int svc_login_synced(struct tb_host *h, const char *host_path, const char *sandbox_path)
{
        if (h->after_session)
                return -EPERM;
        if (!h->sandboxed || h->checking || h->dry_run)
                return 0;
        if (!in_session_home(h, sandbox_path))
                return -EINVAL;
        struct tb_error err = { 0 };
        int r = login_sync_add(&h->logins, host_path, h->session_home, sandbox_path, &err);
        if (r < 0)
                snprintf(h->fail_detail, sizeof h->fail_detail, "%s", err.msg);
        return r;
}

static int svc_bind(struct tb_host *h, const char *host_path, const char *sandbox_path, int writable)
{
        if (h->after_session)
                return -EPERM;
        if (!h->sandboxed || h->checking)
                return 0;
        if (!sandbox_path || sandbox_path[0] != '/')
                return -EINVAL;
        _cleanup_free_ char *real = realpath(host_path, NULL);
        if (!real)
                return -errno;
        sandbox_add(h->spec, writable ? SANDBOX_BIND : SANDBOX_RO_BIND, real, sandbox_path);
        return 0;
}

static const char *svc_credential(struct tb_host *h, const char *key)
{
        if (!key || !credentials_key_name_valid(key))
                return NULL;
        if (!h->creds_loaded) {
                struct tb_error err = { 0 };
                _cleanup_free_ char *def = NULL;
                const char *path = h->credentials_path;
                h->creds_loaded = true;
                if (!path) {
                        if (credentials_default_path(h->env, &def) < 0)
                                return NULL;
                        path = def;
                }
                if (credentials_load(path, &h->creds, &err) < 0) {
                        h->creds = NULL;
                        if (!h->checking || !h->voided) {
                                h->voided = true;
                                snprintf(h->void_detail, sizeof h->void_detail, "%s", err.msg);
                        }
                        return NULL;
                }
                if (credentials_loose_mode(h->creds))
                        log_warn(CREDENTIALS_LOOSE_WARNING, path, path);
        }
        /* The section is always this Harness's own: the scope is the core's. */
        return h->creds ? credentials_get(h->creds, h->harness, key) : NULL;
}

static int svc_write_home_file(struct tb_host *h, const char *rel, const char *content)
{
        if (h->after_session)
                return -EPERM;
        if (!h->sandboxed)
                return -EPERM;
        if (!rel || !*rel || rel[0] == '/' || strstr(rel, "..") || !content)
                return -EINVAL;
        if (h->checking || h->dry_run)
                return 0;
        _cleanup_free_ char *path = xasprintf("%s/%s", h->session_home, rel);
        _cleanup_free_ char *dir = path_dirname(path);
        int r = mkdir_p(dir, 0700);
        if (r < 0)
                return r;
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        /* A file of this Trial's fresh home: nothing to keep across a crash. */
        return write_file_atomic_at(dfd, strrchr(path, '/') + 1, content, strlen(content), 0600, 0);
}

static int svc_lock(struct tb_host *h, const char *path, long timeout_ms)
{
        if (h->after_session)
                return -EPERM;
        if (h->checking || h->dry_run)
                return 0;
        if (h->n_locks == TB_ARRAY_SIZE(h->lock_fds))
                return -ENOSPC;
        struct tb_error err = { 0 };
        int fd = -1;
        int r = trials_home_lock(path, timeout_ms, &fd, &err);
        if (r < 0) {
                snprintf(h->fail_detail, sizeof h->fail_detail, "%s", err.msg);
                return r;
        }
        h->lock_fds[h->n_locks++] = fd;
        return 0;
}

static int svc_wipe_except(struct tb_host *h, const char *dir, const char *const keep[])
{
        if (h->after_session)
                return -EPERM;
        if (h->checking || h->dry_run)
                return 0;
        struct tb_error err = { 0 };
        int r = trials_home_wipe(dir, keep, &err);
        if (r < 0)
                snprintf(h->fail_detail, sizeof h->fail_detail, "%s", err.msg);
        return r;
}

static void kept_login_said(const struct tb_host *h, const struct kept_login *k, const char *found, const char *when)
{
        log_warn("%s: the login '%s' was %s %s; put back the copy kept in '%s'", h->harness, k->path, found, when,
                 k->kept_path);
}

static int svc_keep_login(struct tb_host *h, const char *path, unsigned format, size_t max_bytes)
{
        if (h->after_session)
                return -EPERM;
        if (!path || path[0] != '/' || (format != TB_LOGIN_ANY && format != TB_LOGIN_JSON_OBJECT))
                return -EINVAL;
        if (h->checking || h->dry_run)
                return 0;
        if (h->n_kept == TB_ARRAY_SIZE(h->kept))
                return -ENOSPC;
        struct kept_login *k = &h->kept[h->n_kept];
        struct tb_error err = { 0 };
        const char *restored = NULL;
        int r = kept_login_open(k, path, format == TB_LOGIN_JSON_OBJECT ? KEPT_JSON_OBJECT : KEPT_ANY, max_bytes,
                                &restored, &err);
        if (r < 0) {
                snprintf(h->fail_detail, sizeof h->fail_detail, "%s", err.msg);
                kept_login_done(k);
                return r;
        }
        h->n_kept++;
        if (restored)
                kept_login_said(h, k, restored, "before the Trial");
        return 0;
}

void host_after_session(struct tb_host *h)
{
        for (size_t i = 0; i < h->n_kept; i++) {
                struct tb_error err = { 0 };
                const char *restored = NULL;
                if (kept_login_sync(&h->kept[i], &restored, &err) < 0)
                        log_warn("%s: %s", h->harness, err.msg);
                else if (restored)
                        kept_login_said(h, &h->kept[i], restored, "after the session");
        }
}

static int svc_require_file(struct tb_host *h, const char *what, const char *path, const char *how)
{
        struct stat st;
        if (path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0) {
                svc_note(h, "%s: '%s' (present)", what, path);
                return 0;
        }
        svc_note(h, "%s: '%s' (missing)", what, path ? path : "");
        _cleanup_free_ char *d = xasprintf("no %s at '%s'; %s", what, path ? path : "", how);
        return svc_void_trial(h, d);
}

static const char *credentials_shown_path(const struct tb_host *h, char **def)
{
        if (h->credentials_path)
                return h->credentials_path;
        return credentials_default_path(h->env, def) == 0 ? *def : "the Credentials";
}

static const char *svc_require_credential(struct tb_host *h, const char *key, const char *how)
{
        const char *v = svc_credential(h, key);
        if (h->voided) /* the file itself is bad: that is the detail */
                return NULL;
        _cleanup_free_ char *def = NULL;
        const char *file = credentials_shown_path(h, &def);
        if (v && *v) {
                svc_note(h, "%s.%s: in '%s' (present)", h->harness, key, file);
                return v;
        }
        svc_note(h, "%s.%s: in '%s' (missing)", h->harness, key, file);
        _cleanup_free_ char *d = xasprintf("no %s.%s in the Credentials '%s'; %s", h->harness, key, file, how);
        svc_void_trial(h, d);
        return NULL;
}

/* Does the relative path `p` have a ".." component? */
static bool has_dotdot(const char *p)
{
        for (const char *c = p; (c = strstr(c, "..")) != NULL; c += 2)
                if ((c == p || c[-1] == '/') && (c[2] == '\0' || c[2] == '/'))
                        return true;
        return false;
}

static char *strip_trailing_slashes(char *p)
{
        for (size_t n = strlen(p); n > 1 && p[n - 1] == '/'; n--)
                p[n - 1] = '\0';
        return p;
}

static const char *svc_home_dir_from_env(struct tb_host *h, const char *var, const char *under_home)
{
        if (!under_home || under_home[0] == '/' || has_dotdot(under_home))
                return NULL;
        const char *v = var ? svc_host_getenv(h, var) : NULL;
        const char *home = h->host_home && h->host_home[0] ? h->host_home : "/";
        char *dir;
        if (v && v[0] == '/')
                dir = xstrdup(v);
        else if (!under_home[0])
                dir = xstrdup(home);
        else
                dir = xasprintf("%s%s%s", home, home[strlen(home) - 1] == '/' ? "" : "/", under_home);
        strv_add_take(&h->handed, strip_trailing_slashes(dir));
        return dir;
}

/* One DNS label: 1 to 63 letters, digits and '-', not at either end. */
static bool label_valid(const char *s, size_t n)
{
        return n >= 1 && n <= 63 && s[0] != '-' && s[n - 1] != '-' &&
               strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") >= n;
}

/* "name", "name." or "*.name.tld": labels, at least two after a "*.". */
static bool endpoint_name_valid(const char *s, size_t n)
{
        size_t labels = 0;
        bool wild = n >= 2 && s[0] == '*' && s[1] == '.';
        if (wild) {
                s += 2;
                n -= 2;
        }
        if (n > 0 && s[n - 1] == '.')
                n--;
        if (n == 0 || n > 253)
                return false;
        for (size_t i = 0; i <= n;) {
                const char *dot = memchr(s + i, '.', n - i);
                size_t len = dot ? (size_t)(dot - (s + i)) : n - i;
                if (!label_valid(s + i, len))
                        return false;
                labels++;
                i += len + 1;
        }
        return !wild || labels >= 2;
}

static bool endpoint_port_valid(const char *p)
{
        size_t n = strlen(p);
        if (n == 0 || n > 5 || strspn(p, "0123456789") != n || p[0] == '0')
                return false;
        return strtol(p, NULL, 10) <= 65535;
}

/* The endpoint as stored (lowercase, the name's trailing dot dropped), or
 * NULL when it is not "host[:port]". */
static char *endpoint_normal(const char *e)
{
        size_t n = e ? strlen(e) : 0, host_len;
        const char *port = NULL;
        if (n == 0 || n > 300)
                return NULL;
        if (e[0] == '[') {
                const char *close = strchr(e, ']');
                host_len = close ? (size_t)(close - e) + 1 : 0;
                if (!close || host_len < 3 || strspn(e + 1, "0123456789abcdefABCDEF:.") != host_len - 2 ||
                    !memchr(e + 1, ':', host_len - 2) || (close[1] && close[1] != ':'))
                        return NULL;
        } else {
                const char *colon = strchr(e, ':');
                host_len = colon ? (size_t)(colon - e) : n;
                if (!endpoint_name_valid(e, host_len))
                        return NULL;
        }
        if (e[host_len] == ':')
                port = e + host_len + 1;
        if (port && !endpoint_port_valid(port))
                return NULL;
        size_t keep = host_len - (e[0] != '[' && e[host_len - 1] == '.');
        char *out = xasprintf("%.*s%s%s", (int)keep, e, port ? ":" : "", port ? port : "");
        for (char *c = out; *c; c++)
                if (*c >= 'A' && *c <= 'Z')
                        *c = (char)(*c - 'A' + 'a');
        return out;
}

bool host_endpoint_valid(const char *endpoint)
{
        _cleanup_free_ char *p = endpoint_normal(endpoint);
        return p != NULL;
}

static int svc_add_endpoint(struct tb_host *h, const char *endpoint, unsigned how)
{
        if (h->after_session)
                return -EPERM;
        if (how != TB_ENDPOINT_REQUIRED && how != TB_ENDPOINT_OPTIONAL)
                return -EINVAL;
        char *pattern = endpoint_normal(endpoint);
        if (!pattern)
                return -EINVAL;
        for (size_t i = 0; i < h->n_endpoints; i++)
                if (strcmp(h->endpoints[i].pattern, pattern) == 0) {
                        h->endpoints[i].required = h->endpoints[i].required || how == TB_ENDPOINT_REQUIRED;
                        free(pattern);
                        return 0;
                }
        h->endpoints = xrealloc(h->endpoints, (h->n_endpoints + 1) * sizeof *h->endpoints);
        h->endpoints[h->n_endpoints++] = (struct host_endpoint){ pattern, how == TB_ENDPOINT_REQUIRED };
        return 0;
}

/* ---- what a Trial cost (plugin/tokens.h): on the tally of the tokens hook
 * that runs, NULL (-EPERM) anywhere else ---- */

static int svc_home_fd(struct tb_host *h) { return tokens_home_fd(h->tally); }

static int svc_read_jsonl(struct tb_host *h, const char *folder, unsigned max_depth, const char *suffix,
                          const char *const needles[], unsigned flags, tb_jsonl_fn fn, void *ctx)
{
        return tokens_read_jsonl(h->tally, h, folder, max_depth, suffix, needles, flags, fn, ctx);
}

static int svc_json_count(struct tb_host *h, const struct tb_json *line, const char *path, uint64_t *out)
{
        return tokens_json_count(h->tally, line, path, out);
}

static const char *svc_json_string(struct tb_host *h, const struct tb_json *line, const char *path)
{
        return tokens_json_string(h->tally, line, path);
}

static int svc_record_tokens(struct tb_host *h, const char *key, const struct tb_tokens *t)
{
        return tokens_record(h->tally, key, t);
}

static const struct tb_host_services services = {
        .size = sizeof(struct tb_host_services),
        .abi_version = TB_PLUGIN_ABI_VERSION,
        .log = svc_log,
        .host_getenv = svc_host_getenv,
        .host_home = svc_host_home,
        .session_home = svc_session_home,
        .sandboxed = svc_sandboxed,
        .setenv = svc_setenv,
        .void_trial = svc_void_trial,
        .note = svc_note,
        .login_in_place = svc_login_in_place,
        .login_synced = svc_login_synced,
        .bind = svc_bind,
        .credential = svc_credential,
        .write_home_file = svc_write_home_file,
        .lock = svc_lock,
        .wipe_except = svc_wipe_except,
        .require_file = svc_require_file,
        .require_credential = svc_require_credential,
        .home_dir_from_env = svc_home_dir_from_env,
        .add_endpoint = svc_add_endpoint,
        .keep_login = svc_keep_login,
        .home_fd = svc_home_fd,
        .read_jsonl = svc_read_jsonl,
        .json_count = svc_json_count,
        .json_string = svc_json_string,
        .record_tokens = svc_record_tokens,
};

const struct tb_host_services *host_services(void) { return &services; }

int host_call(struct tb_host *host, tb_hook_fn hook)
{
        if (!hook)
                return 0;
        int r = hook(&services, host);
        if (host->voided)
                return -ECANCELED;
        return r > 0 ? 0 : r;
}

static void log_tokens(const struct tb_host *h, const struct trial_tokens *o)
{
        if (!o->known) {
                log_full(TB_LOG_INFO, h->harness, "tokens: the harness wrote no usage that could be read");
                return;
        }
        log_full(TB_LOG_INFO, h->harness,
                 "tokens: %lld input (%lld cached), %lld output (%lld reasoning), %lld requests, from %s", o->input,
                 o->cached_input, o->output, o->reasoning, o->requests, o->source);
}

void host_read_tokens(struct tb_host *h, tb_hook_fn hook, struct trial_tokens *out)
{
        *out = (struct trial_tokens){ 0 };
        if (!hook || h->checking || h->dry_run || !h->sandboxed || !h->home_fd || *h->home_fd < 0)
                return;
        const struct session_user *u = h->session_user;
        h->tally = tokens_tally_new(*h->home_fd, u && u->drop ? u->uid : geteuid());
        h->after_session = true;
        int r = hook(&services, h);
        h->after_session = false;
        if (r < 0)
                log_warn("%s: reading what the session cost failed: %s", h->harness, strerror(-r));
        const char *why;
        tokens_tally_result(h->tally, out, &why);
        if (out->partial)
                log_warn("%s: the tokens recorded are a part only (%s)", h->harness, why);
        log_tokens(h, out);
        tokens_tally_free(h->tally);
        h->tally = NULL;
}

const struct host_endpoint *host_endpoints(const struct tb_host *host, size_t *n)
{
        *n = host->n_endpoints;
        return host->endpoints;
}

void host_done(struct tb_host *host)
{
        tokens_tally_free(host->tally);
        host->tally = NULL;
        strv_done(&host->handed);
        for (size_t i = 0; i < host->n_endpoints; i++)
                free(host->endpoints[i].pattern);
        free(host->endpoints);
        host->endpoints = NULL;
        host->n_endpoints = 0;
        strv_done(&host->notes);
        credentials_free(host->creds);
        host->creds = NULL;
        login_set_done(&host->logins);
        for (size_t i = 0; i < host->n_kept; i++)
                kept_login_done(&host->kept[i]);
        host->n_kept = 0;
        for (size_t i = 0; i < host->n_locks; i++)
                tb_closep(&host->lock_fds[i]);
        host->n_locks = 0;
}
