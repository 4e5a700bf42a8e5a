/* hello-harness: a complete out-of-tree trialbox plugin. Its "agent" is any
 * program (default /bin/sh); its login is an optional token file
 * ~/.hello/token, synced into the Trial; it tells the session its greeting
 * through HELLO_GREETING, from the Credentials key hello-harness.greeting. */
#include <stdio.h>
#include <trialbox/plugin.h>
#include <unistd.h>

static void token_path(const struct tb_host_services *svc, struct tb_host *host, const char *home, char *buf,
                       size_t n)
{
        (void)svc;
        (void)host;
        snprintf(buf, n, "%s/.hello/token", home);
}

static int hello_preflight(const struct tb_host_services *svc, struct tb_host *host)
{
        char token[4096];
        token_path(svc, host, svc->host_home(host), token, sizeof token);
        svc->note(host, "token: '%s' (%s, optional)", token, access(token, R_OK) == 0 ? "present" : "absent");
        return 0;
}

static int hello_prepare_login(const struct tb_host_services *svc, struct tb_host *host)
{
        char from[4096], to[4096];
        token_path(svc, host, svc->host_home(host), from, sizeof from);
        if (access(from, R_OK) != 0)
                return 0;
        token_path(svc, host, svc->session_home(host), to, sizeof to);
        return svc->login_synced(host, from, to);
}

static int hello_env(const struct tb_host_services *svc, struct tb_host *host)
{
        const char *greeting = svc->credential(host, "greeting");
        return svc->setenv(host, "HELLO_GREETING", greeting ? greeting : "hello from hello-harness", 0);
}

TB_HARNESS_DEFINE(.name = "hello-harness", .summary = "an example plugin built out of tree",
                  .default_binary = "/bin/sh", .preflight = hello_preflight, .prepare_login = hello_prepare_login,
                  .env = hello_env);
