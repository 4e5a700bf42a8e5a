#define _GNU_SOURCE
#include "host.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool level_shown(int verbosity, enum tb_log_level level)
{
        return (int)level <= verbosity;
}

void host_logf(int verbosity, enum tb_log_level level, const char *fmt, ...)
{
        if (!level_shown(verbosity, level))
                return;
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) >= 0)
                fprintf(stderr, "trialbox: %s%s\n", level == TB_LOG_WARNING ? "warning: " : "", msg);
        va_end(ap);
}

static void svc_log(struct tb_host *h, enum tb_log_level level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void svc_log(struct tb_host *h, enum tb_log_level level, const char *fmt, ...)
{
        if (!level_shown(h->verbosity, level))
                return;
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) >= 0)
                fprintf(stderr, "trialbox: %s: %s%s\n", h->harness, level == TB_LOG_WARNING ? "warning: " : "", msg);
        va_end(ap);
}

static const char *svc_host_getenv(struct tb_host *h, const char *name)
{
        (void)h;
        return name ? getenv(name) : NULL;
}

static const char *svc_host_home(struct tb_host *h) { return h->host_home; }
static const char *svc_session_home(struct tb_host *h) { return h->session_home; }
static int svc_sandboxed(struct tb_host *h) { return h->sandboxed; }

static int svc_setenv(struct tb_host *h, const char *name, const char *value, int secret)
{
        if (!sandbox_env_name_valid(name) || !value)
                return -EINVAL;
        if (h->spec)
                sandbox_setenv(h->spec, name, value, secret != 0);
        return 0;
}

static int svc_void_trial(struct tb_host *h, const char *detail)
{
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
                if (!h->checking && level_shown(h->verbosity, TB_LOG_INFO))
                        fprintf(stderr, "trialbox: %s: %s\n", h->harness, msg);
                strv_add_take(&h->notes, msg);
        }
        va_end(ap);
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

void host_free(struct tb_host *host) { strv_free(&host->notes); }
