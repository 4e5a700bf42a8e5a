/* The `shell` Harness: no login at all. Its default binary is /bin/sh, so
 * `--harness shell --harness-bin PROG` runs any program as a Trial: the way
 * to sandbox a CLI that has no plugin yet. */
#include <trialbox/plugin.h>

static int shell_preflight(const struct tb_host_services *svc, struct tb_host *host)
{
        svc->note(host, "login: none needed");
        return 0;
}

TB_HARNESS_DEFINE(.name = "shell", .summary = "any program, no login (the default binary is /bin/sh)",
                  .default_binary = "/bin/sh", .preflight = shell_preflight);
