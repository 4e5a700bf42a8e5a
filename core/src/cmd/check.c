#define _GNU_SOURCE
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "limits/cgroup.h"
#include "cmd/cli.h"
#include "sandbox/confine.h"
#include "logins/credentials.h"
#include "base/env.h"
#include "base/log.h"
#include "model/outcome.h"
#include "plugin/loader.h"
#include "sandbox/spec.h"
#include "sandbox/session_user.h"
#include "sandbox/toolchain.h"
#include "network/trial_net.h"
#include "plugin/host.h"

/* Run argv with stdin and fd 3 on /dev/null, its stdout and stderr captured
 * into `out` (at most `cap` bytes), its wait status in *status. 0, or a
 * negative errno when it could not be run or waited for. */
static int run_capture(char **argv, char *out, size_t cap, int *status)
{
        _cleanup_close_pair_ int p[2] = { -1, -1 };
        out[0] = '\0';
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR);
                if (null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0 ||
                    dup2(null, SANDBOX_STATUS_FD) < 0)
                        _exit(127);
                char *envp[] = { "PATH=/usr/bin:/bin", NULL };
                execve(argv[0], argv, envp);
                _exit(127);
        }
        tb_closep(&p[1]);
        /* Keep the first cap-1 bytes; read the rest to the end all the same. */
        size_t len = 0;
        for (;;) {
                char buf[512];
                ssize_t n = read(p[0], buf, sizeof buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                size_t take = (size_t)n < cap - 1 - len ? (size_t)n : cap - 1 - len;
                memcpy(out + len, buf, take);
                len += take;
        }
        out[len] = '\0';
        tb_closep(&p[0]);
        while (waitpid(pid, status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return 0;
}

/* Ubuntu 24.04 and later restrict unprivileged user namespaces through
 * AppArmor: the two ways bwrap users lift it, the sysctl and the profile. */
#define APPARMOR_FIX                                                                                              \
        "unprivileged user namespaces are restricted here (Ubuntu 24.04+, AppArmor). Either: 'sudo sysctl -w "      \
        "kernel.apparmor_restrict_unprivileged_userns=0' (persist it: echo "                                       \
        "'kernel.apparmor_restrict_unprivileged_userns=0' | sudo tee /etc/sysctl.d/60-bwrap-userns.conf); or "      \
        "give bwrap its own AppArmor profile: printf 'abi <abi/4.0>,\\ninclude <tunables/global>\\nprofile bwrap " \
        "/usr/bin/bwrap flags=(unconfined) {\\n  userns,\\n}\\n' | sudo tee /etc/apparmor.d/bwrap && sudo "        \
        "apparmor_parser -r /etc/apparmor.d/bwrap"

/* The fix for a bwrap that cannot create its namespaces, from its message. */
static const char *namespace_fix(const char *msg)
{
        if (strstr(msg, "uid map") || strstr(msg, "setting up uid") || strstr(msg, "Permission denied"))
                return APPARMOR_FIX;
        if (strstr(msg, "No permissions to creat"))
                return "the kernel forbids unprivileged user namespaces: run 'sudo sysctl -w "
                       "kernel.unprivileged_userns_clone=1', or install bwrap setuid root";
        if (strstr(msg, "No space left"))
                return "user namespaces are disabled: run 'sudo sysctl -w user.max_user_namespaces=15000'";
        if (strstr(msg, "Operation not permitted"))
                return "this environment (a container?) forbids namespaces: run trialbox on the host, or give the "
                       "container user namespaces (Docker: --security-opt seccomp=unconfined --security-opt "
                       "apparmor=unconfined)";
        return "read bwrap's message above; a Trial can start once 'trialbox check' passes";
}

struct report {
        json_object *arr;
        int failed;
};

enum { WARN = 2 };

/* One line: what was checked, its verdict (ok, FAIL, or warn when `ok` is
 * WARN: worth fixing, but a Trial can start), and the fix. */
static void verdict(struct report *rep, const char *what, int ok, const char *detail, const char *fix)
{
        if (!ok)
                rep->failed = 1;
        if (rep->arr) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "check", json_object_new_string(what));
                json_object_object_add(o, "ok", json_object_new_boolean(ok != 0));
                json_object_object_add(o, "verdict", json_object_new_string(ok == WARN ? "warn" : ok ? "ok" : "fail"));
                json_object_object_add(o, "detail", json_object_new_string(detail));
                json_object_object_add(o, "fix", fix ? json_object_new_string(fix) : NULL);
                json_object_array_add(rep->arr, o);
                return;
        }
        log_print("%-4s %-12s %s", ok == WARN ? "warn" : ok ? "ok" : "FAIL", what, detail);
        if (fix)
                log_print("     %-12s fix: %s", "", fix);
}

/* A sysctl's value, or -1 when this kernel has none. */
static long read_sysctl(const char *path)
{
        _cleanup_free_ char *v = read_file(path, 64, NULL);
        return v ? strtol(v, NULL, 10) : -1;
}

/* What decides whether an unprivileged bwrap gets its user namespace. The
 * probe that follows is the verdict; these lines say why. */
static void check_userns_sysctls(struct report *rep, const char *bwrap)
{
        struct stat st;
        bool setuid_bwrap = stat(bwrap, &st) == 0 && (st.st_mode & S_ISUID) && st.st_uid == 0;
        /* As root too: sessions run as an unprivileged user unless
         * --root-session (session_user.h). */
        bool needs_userns = !setuid_bwrap;
        long max = read_sysctl("/proc/sys/user/max_user_namespaces");
        long clone = read_sysctl("/proc/sys/kernel/unprivileged_userns_clone");
        long apparmor = read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
        _cleanup_free_ char *d = xasprintf("user.max_user_namespaces=%ld%s%s%s%s; %s", max,
                                           clone >= 0 ? ", kernel.unprivileged_userns_clone=" : "",
                                           clone >= 0 ? (clone ? "1" : "0") : "",
                                           apparmor >= 0 ? ", kernel.apparmor_restrict_unprivileged_userns=" : "",
                                           apparmor >= 0 ? (apparmor ? "1" : "0") : "",
                                           needs_userns ? "bwrap needs a user namespace (the session's user is not "
                                                          "root; bwrap is not setuid)"
                                                        : "bwrap needs no user namespace here");
        if (needs_userns && max == 0)
                verdict(rep, "userns", false, d, "run 'sudo sysctl -w user.max_user_namespaces=15000'");
        else if (needs_userns && clone == 0)
                verdict(rep, "userns", false, d, "run 'sudo sysctl -w kernel.unprivileged_userns_clone=1'");
        else if (needs_userns && apparmor == 1)
                verdict(rep, "userns", WARN, d, APPARMOR_FIX);
        else
                verdict(rep, "userns", true, d, NULL);
}

static void check_plugins(struct report *rep, const struct tb_env *env)
{
        struct plugin_entry *v;
        size_t n, usable = 0;
        plugin_list(env->plugin_path, &v, &n);
        for (size_t i = 0; i < n; i++)
                usable += !v[i].shadowed;
        plugin_list_free(v, n);
        _cleanup_strv_ struct strv dirs = { 0 };
        plugin_search_path(env->plugin_path, &dirs);
        struct strbuf where = { 0 };
        for (size_t i = 0; i < dirs.n; i++)
                strbuf_addf(&where, "%s'%s'", i ? ", " : "", dirs.v[i]);
        _cleanup_free_ char *d = xasprintf("%zu harnesses in %s", usable, where.s);
        verdict(rep, "plugins", usable > 0, d,
                usable ? NULL : "install a trialbox-plugin-NAME package, or set TRIALBOX_PLUGIN_PATH");
        free(where.s);
}

static void check_credentials(struct report *rep, const struct tb_env *env, const char *path_override)
{
        _cleanup_free_ char *def = NULL;
        const char *path = path_override;
        if (!path && credentials_default_path(env, &def) < 0) {
                verdict(rep, "credentials", WARN, "no home folder to look in", "set HOME");
                return;
        }
        path = path ? path : def;
        struct credentials *c = NULL;
        struct tb_error err = { 0 };
        struct stat st;
        if (lstat(path, &st) < 0) {
                _cleanup_free_ char *d = xasprintf("'%s' absent (no Harness key stored)", path);
                verdict(rep, "credentials", true, d, NULL);
        } else if (credentials_load(path, &c, &err) < 0) {
                verdict(rep, "credentials", WARN, err.msg, NULL);
        } else if (credentials_loose_mode(c)) {
                _cleanup_free_ char *d = xasprintf("'%s' is readable by others", path);
                _cleanup_free_ char *fix = xasprintf("chmod 600 '%s'", path);
                verdict(rep, "credentials", WARN, d, fix);
        } else {
                _cleanup_free_ char *d = xasprintf("'%s' (mode 0600)", path);
                verdict(rep, "credentials", true, d, NULL);
        }
        credentials_free(c);
}

static void check_sandbox(struct report *rep, const struct tb_env *env)
{
        const char *over = env->bwrap;
        _cleanup_free_ char *bwrap = over && *over ? (access(over, X_OK) == 0 ? xstrdup(over) : NULL)
                                                   : find_on_path("bwrap", env->path);
        if (!bwrap) {
                verdict(rep, "bwrap", false, over && *over ? "TRIALBOX_BWRAP does not name an executable" : "bwrap is not on the PATH",
                        "install bubblewrap: sudo apt-get install bubblewrap");
                verdict(rep, "namespaces", false, "not tried: no bwrap", NULL);
                return;
        }
        char out[2048];
        char *vargv[] = { bwrap, "--version", NULL };
        int st = 0;
        bool ran = run_capture(vargv, out, sizeof out, &st) == 0 && st == 0;
        out[strcspn(out, "\n")] = '\0';
        _cleanup_free_ char *d = xasprintf("%s (%s)", bwrap, ran && out[0] ? out : "version unknown");
        verdict(rep, "bwrap", true, d, NULL);
        check_userns_sysctls(rep, bwrap);

        /* The probe: the very namespaces and mounts a Trial uses. */
        struct sandbox_spec spec = { 0 };
        struct strv argv = { 0 };
        toolchain_add_system(&spec, TOOLCHAIN_RESOLV_CONF);
        strv_add(&spec.command, "true");
        sandbox_argv(&spec, bwrap, &argv);
        ran = run_capture(argv.v, out, sizeof out, &st) == 0 && st == 0;
        strv_done(&argv);
        sandbox_spec_done(&spec);
        out[strcspn(out, "\n")] = '\0';
        if (ran) {
                _cleanup_free_ char *ok = xasprintf("bwrap created its mount and pid namespaces (as uid %u)",
                                                    (unsigned)getuid());
                verdict(rep, "namespaces", true, ok, NULL);
        } else {
                _cleanup_free_ char *bad = xasprintf("bwrap cannot start a sandbox here: %s",
                                                     out[0] ? out : "no message");
                verdict(rep, "namespaces", false, bad, namespace_fix(out));
        }
}

/* Who a session would run as, and what confines it besides bwrap. */
static void check_session(struct report *rep)
{
        if (geteuid() == 0) {
                verdict(rep, "user", true,
                        "trialbox is root: a session runs as --user NAME|UID, else as the repository's owner; "
                        "a root-owned repository is refused unless --user or --root-session is given",
                        NULL);
        } else {
                struct session_user u = { 0 };
                struct tb_error err = { 0 };
                if (session_user_resolve(NULL, false, geteuid(), NULL, &u, &err) == 0) {
                        _cleanup_free_ char *d = xasprintf("a session runs as '%s' (uid %u), trialbox's own user",
                                                           u.name, (unsigned)u.uid);
                        verdict(rep, "user", true, d, NULL);
                }
                session_user_done(&u);
        }
        struct confine_status cs;
        struct tb_error err = { 0 };
        if (confine_check(&cs, &err) < 0) {
                verdict(rep, "seccomp", false, err.msg, "install a kernel and libseccomp that support it");
                return;
        }
        _cleanup_free_ char *d = xasprintf("a filter of %d instructions denies keyctl, bpf, mount, ptrace, "
                                           "sockets but unix, inet and route netlink, setuid modes and more",
                                           cs.filter_len);
        verdict(rep, "seccomp", true, d, NULL);
        verdict(rep, "keyring", true,
                cs.keyrings ? "each session gets a fresh anonymous session keyring"
                            : "this kernel has no keyrings: nothing to hide",
                NULL);
}

static void check_harness(struct report *rep, const struct tb_env *env, const char *name)
{
        struct plugin p;
        struct tb_error err = { 0 };
        if (!plugin_name_valid(name)) {
                _cleanup_free_ char *d = xasprintf("'%s' is not a harness name", name);
                verdict(rep, "plugin", false, d, "see 'trialbox harnesses'");
                return;
        }
        if (plugin_load(env->plugin_path, name, &p, &err) < 0) {
                verdict(rep, "plugin", false, err.msg, NULL);
                return;
        }
        uint32_t abi = p.harness->abi_version;
        _cleanup_free_ char *d = xasprintf("%s (ABI %u.%u)", p.path, TB_PLUGIN_ABI_MAJOR_OF(abi), TB_PLUGIN_ABI_MINOR_OF(abi));
        verdict(rep, "plugin", true, d, NULL);
        struct readiness rd;
        readiness_check(&p, env, &rd);
        _cleanup_free_ char *bin = rd.binary ? xstrdup(rd.binary)
                                             : xasprintf("'%s' is not on the PATH", p.harness->default_binary);
        verdict(rep, "binary", rd.binary != NULL, bin, rd.binary ? NULL : "install it, or pass --harness-bin to run");
        if (rd.login_ok)
                for (size_t i = 0; i < rd.n_notes; i++)
                        verdict(rep, "login", true, rd.notes[i], NULL);
        else
                verdict(rep, "login", false, rd.detail, NULL);
        readiness_done(&rd);
        plugin_unload(&p);
}

/* The network a Trial of `p` gets unless --network says
 * (trial_network_default of the endpoints its plugin declares). */
static enum trial_network default_network(const struct plugin *p, const struct tb_env *env, struct strbuf *endpoints)
{
        struct tb_host h;
        endpoints_check(p, env, &h);
        size_t n;
        const struct host_endpoint *e = host_endpoints(&h, &n);
        size_t listed = 0;
        for (int required = 1; endpoints && required >= 0; required--) {
                if (!required && listed < n)
                        strbuf_add(endpoints, "; denied unless --allow-host: ");
                for (size_t i = 0, k = 0; i < n; i++)
                        if (e[i].required == required) {
                                strbuf_addf(endpoints, "%s%s", k++ ? ", " : "", e[i].pattern);
                                listed++;
                        }
        }
        host_done(&h);
        return trial_network_default(n);
}

/* What network a Trial of each Harness (or of `harness`) gets. */
static void check_network(struct report *rep, const struct tb_env *env, const char *harness)
{
        struct plugin p;
        struct tb_error err = { 0 };
        if (harness) {
                if (!plugin_name_valid(harness) || plugin_load(env->plugin_path, harness, &p, &err) < 0)
                        return; /* check_harness said why */
                struct strbuf ends = { 0 };
                strbuf_add(&ends, "");
                _cleanup_free_ char *d =
                        default_network(&p, env, &ends) == TRIAL_NETWORK_ALLOW
                                ? xasprintf("a %s Trial gets --network allow unless told otherwise: its endpoints (%s) "
                                            "and --allow-host, through trialbox's proxy; --network host only when asked",
                                            harness, ends.s)
                                : xasprintf("a %s Trial gets --network none unless told otherwise: loopback only (add "
                                            "--allow-host for what it needs); --network host only when asked",
                                            harness);
                free(ends.s);
                plugin_unload(&p);
                verdict(rep, "network", true, d, NULL);
                return;
        }
        struct plugin_entry *v;
        size_t n;
        struct strbuf allow = { 0 }, none = { 0 };
        strbuf_add(&allow, "");
        strbuf_add(&none, "");
        plugin_list(env->plugin_path, &v, &n);
        for (size_t i = 0; i < n; i++) {
                if (v[i].shadowed || plugin_load_file(v[i].path, v[i].name, &p, &err) < 0)
                        continue;
                struct strbuf *to = default_network(&p, env, NULL) == TRIAL_NETWORK_ALLOW ? &allow : &none;
                strbuf_addf(to, "%s%s", to->len ? ", " : "", v[i].name);
                plugin_unload(&p);
        }
        plugin_list_free(v, n);
        _cleanup_free_ char *d = xasprintf("a Trial gets --network allow (its Harness's endpoints and --allow-host, "
                                           "through trialbox's proxy) for %s; none (loopback only) for %s; "
                                           "--network host only when asked",
                                           allow.len ? allow.s : "no Harness here", none.len ? none.s : "no Harness here");
        free(allow.s);
        free(none.s);
        verdict(rep, "network", true, d, NULL);
}

/* Which mechanism would enforce each limit here (issue 11). A host without
 * one still runs Trials without limits: a warning, with the fix. */
static void check_limits(struct report *rep)
{
        struct cgroup_probe p;
        char summary[1280];
        enum cgroup_mechanism m = cgroup_probe(NULL, &p);
        cgroup_probe_summary(&p, summary, sizeof summary);
        _cleanup_free_ char *d = xasprintf("--timeout: trialbox's timer; --memory, --pids, --cpus: %s", summary);
        verdict(rep, "limits", m == CGROUP_NONE ? WARN : 1, d, NULL);
}

int check_main(const struct tb_env *env, const char *harness, int json)
{
        struct report rep = { .arr = json ? json_object_new_array() : NULL };
        check_sandbox(&rep, env);
        check_session(&rep);
        check_plugins(&rep, env);
        check_credentials(&rep, env, NULL);
        check_limits(&rep);
        if (harness)
                check_harness(&rep, env, harness);
        check_network(&rep, env, harness);
        if (rep.arr) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "ready", json_object_new_boolean(!rep.failed));
                json_object_object_add(o, "checks", rep.arr);
                printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(o);
        } else {
                printf("%s\n", rep.failed ? "a Trial cannot start here: fix what FAIL says" : "a Trial can start here");
        }
        return rep.failed ? 1 : 0;
}
