#define _GNU_SOURCE
#include "trial/readiness.h"

#include <stdlib.h>

#include "base/env.h"
#include "base/util.h"
#include "plugin/host.h"
#include "plugin/loader.h"

/* A host context in checking mode for `p`: the home a Trial would use
 * (trial.c), so that the checks look where `run` will. */
static void checking_host(const struct plugin *p, const struct tb_env *env, struct tb_host *host)
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
}

void readiness_check(const struct plugin *p, const struct tb_env *env, struct readiness *out)
{
        const struct tb_harness *h = p->harness;
        struct tb_host host;

        *out = (struct readiness){ 0 };
        out->binary = find_on_path(h->default_binary, env->path);
        checking_host(p, env, &host);
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

char *readiness_login(const struct plugin *p, const struct tb_env *env, const char *credentials)
{
        struct tb_host host;
        checking_host(p, env, &host);
        host.credentials_path = credentials;
        host_call(&host, p->preflight);
        char *why = host.voided ? xstrdup(host.void_detail) : NULL;
        host_done(&host);
        return why;
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

void readiness_endpoints(const struct plugin *p, const struct tb_env *env, struct tb_host *host)
{
        checking_host(p, env, host);
        host_call(host, p->endpoints);
}
