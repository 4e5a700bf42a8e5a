/* Muse: its login is auth.json beside its lock under the host's
 * $XDG_CONFIG_HOME/muse/ (default ~/.config/muse/). An overridden
 * XDG_CONFIG_HOME is the folder holding muse/, not one level deeper. The
 * login is synced (safe for a rename); the lock is bound in place, so host
 * Muse processes and the session lock the same inode. */
#include <errno.h>
#include <stdio.h>
#include <trialbox/plugin.h>
#include <unistd.h>

static int muse_dir(const struct tb_host_services *svc, struct tb_host *host, char *buf, size_t n)
{
        const char *xdg = svc->home_dir_from_env(host, "XDG_CONFIG_HOME", ".config");
        return xdg && snprintf(buf, n, "%s/muse", xdg) < (int)n ? 0 : -ENAMETOOLONG;
}

static int muse_preflight(const struct tb_host_services *svc, struct tb_host *host)
{
        char dir[4096], login[4200];
        int r = muse_dir(svc, host, dir, sizeof dir);
        if (r < 0)
                return r;
        snprintf(login, sizeof login, "%s/auth.json", dir);
        return svc->require_file(host, "Muse login", login,
                                 "run 'muse login' on the host (XDG_CONFIG_HOME is honoured)");
}

static int muse_prepare_login(const struct tb_host_services *svc, struct tb_host *host)
{
        char dir[4096], from[4200], to[4200];
        int r = muse_dir(svc, host, dir, sizeof dir);
        if (r < 0)
                return r;
        snprintf(from, sizeof from, "%s/auth.json", dir);
        snprintf(to, sizeof to, "%s/.config/muse/auth.json", svc->session_home(host));
        r = svc->login_synced(host, from, to);
        if (r < 0)
                return r;
        snprintf(from, sizeof from, "%s/auth.json.lock", dir);
        snprintf(to, sizeof to, "%s/.config/muse/auth.json.lock", svc->session_home(host));
        if (access(from, F_OK) != 0) {
                svc->note(host, "lock: '%s' (absent: not shared)", from);
                return 0;
        }
        return svc->login_in_place(host, from, to);
}

static int muse_env(const struct tb_host_services *svc, struct tb_host *host)
{
        return svc->setenv(host, "MUSE_NO_AUTO_UPDATE", "1", 0);
}

TB_HARNESS_DEFINE(.name = "muse", .summary = "Muse (login: $XDG_CONFIG_HOME/muse/auth.json, synced; its lock in place)",
                  .default_binary = "muse", .preflight = muse_preflight, .prepare_login = muse_prepare_login,
                  .env = muse_env);
