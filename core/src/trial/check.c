#define _GNU_SOURCE
#include "trial/check.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/env.h"
#include "base/spawn.h"
#include "base/util.h"
#include "limits/cgroup.h"
#include "network/trial_net.h"
#include "plugin/host.h"
#include "logins/credentials.h"
#include "plugin/loader.h"
#include "sandbox/confine.h"
#include "sandbox/session_user.h"
#include "sandbox/spec.h"
#include "sandbox/toolchain.h"
#include "trial/readiness.h"

/* Run argv with stdin and fd 3 on /dev/null, its stdout and stderr captured
 * into `out` (at most `cap` bytes), its wait status in *status. 0, or a
 * negative errno when it could not be run or waited for. */
/* Run argv[0] (a path) with only a PATH, stdin and SANDBOX_STATUS_FD on
 * /dev/null, its stdout and stderr together in `out` (the first cap - 1
 * bytes), its status (0-255, 128+N) in *status. 0 or a negative errno. */
static int run_capture(char **argv, char *out, size_t cap, int *status)
{
        out[0] = '\0';
        _cleanup_close_ int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0)
                return -errno;
        char *envp[] = { "PATH=/usr/bin:/bin", NULL };
        const int fds[] = { null }, targets[] = { SANDBOX_STATUS_FD };
        struct spawn s = { .argv = argv, .envp = envp, .std_in = SPAWN_DEV_NULL, .std_out = SPAWN_CAPTURE,
                           .std_err = SPAWN_TO_STDOUT, .capture_max = cap - 1, .fds = fds, .fd_targets = targets,
                           .n_fds = 1 };
        struct tb_error err = { 0 };
        int r = spawn_run(&s, &err);
        if (r == 0) {
                memcpy(out, s.out.buf, s.out.len);
                out[s.out.len] = '\0';
                *status = s.status;
        }
        spawn_done(&s);
        return r;
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

struct checker {
        check_emit_fn emit;
        void *ctx;
        bool failed;
};

/* One verdict: `ok` is false (CHECK_FAIL), true (CHECK_OK) or CHECK_WARN. */
static void verdict(struct checker *rep, const char *what, int ok, const char *detail, const char *fix)
{
        if (!ok)
                rep->failed = true;
        rep->emit(rep->ctx, what, ok == CHECK_WARN ? CHECK_WARN : ok ? CHECK_OK : CHECK_FAIL, detail, fix);
}

/* A sysctl's value, or -1 when this kernel has none. */
static long read_sysctl(const char *path)
{
        _cleanup_free_ char *v = read_file(path, 64, NULL);
        return v ? strtol(v, NULL, 10) : -1;
}

/* What decides whether an unprivileged bwrap gets its user namespace. The
 * probe that follows is the verdict; these lines say why. */
static void check_userns_sysctls(struct checker *rep, const char *bwrap)
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
                verdict(rep, "userns", CHECK_WARN, d, APPARMOR_FIX);
        else
                verdict(rep, "userns", true, d, NULL);
}

static void check_plugins(struct checker *rep, const struct tb_env *env)
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

static void check_credentials(struct checker *rep, const struct tb_env *env)
{
        _cleanup_free_ char *path = NULL;
        if (credentials_default_path(env, &path) < 0) {
                verdict(rep, "credentials", CHECK_WARN, "no home folder to look in", "set HOME");
                return;
        }
        struct credentials *c = NULL;
        struct tb_error err = { 0 };
        struct stat st;
        if (lstat(path, &st) < 0) {
                _cleanup_free_ char *d = xasprintf("'%s' absent (no Harness key stored)", path);
                verdict(rep, "credentials", true, d, NULL);
        } else if (credentials_load(path, &c, &err) < 0) {
                verdict(rep, "credentials", CHECK_WARN, err.msg, NULL);
        } else if (credentials_loose_mode(c)) {
                _cleanup_free_ char *d = xasprintf("'%s' is readable by others", path);
                _cleanup_free_ char *fix = xasprintf("chmod 600 '%s'", path);
                verdict(rep, "credentials", CHECK_WARN, d, fix);
        } else {
                _cleanup_free_ char *d = xasprintf("'%s' (mode 0600)", path);
                verdict(rep, "credentials", true, d, NULL);
        }
        credentials_free(c);
}

static void check_sandbox(struct checker *rep, const struct tb_env *env)
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
static void check_session(struct checker *rep)
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

static void check_harness(struct checker *rep, const struct tb_env *env, const char *name)
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
 * (trial_network_default of the endpoints its plugin declares); with
 * `endpoints`, the required ones listed, then the optional ones. */
static enum trial_network default_network(const struct plugin *p, const struct tb_env *env, struct strbuf *endpoints)
{
        struct tb_host h;
        readiness_endpoints(p, env, &h);
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

/* What network a Trial of `harness` gets, or of each Harness here. */
static void check_network(struct checker *rep, const struct tb_env *env, const char *harness)
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

/* Which mechanism would enforce each limit here. A host without
 * one still runs Trials without limits: a warning, with the fix. */
static void check_limits(struct checker *rep)
{
        struct cgroup_probe p;
        char summary[1280];
        enum cgroup_mechanism m = cgroup_probe(NULL, &p);
        cgroup_probe_summary(&p, summary, sizeof summary);
        _cleanup_free_ char *d = xasprintf("--timeout: trialbox's timer; --memory, --pids, --cpus: %s", summary);
        verdict(rep, "limits", m == CGROUP_NONE ? CHECK_WARN : CHECK_OK, d, NULL);
}

bool check_run(const struct tb_env *env, const char *harness, check_emit_fn emit, void *ctx)
{
        struct checker rep = { .emit = emit, .ctx = ctx };
        check_sandbox(&rep, env);
        check_session(&rep);
        check_plugins(&rep, env);
        check_credentials(&rep, env);
        check_limits(&rep);
        if (harness)
                check_harness(&rep, env, harness);
        check_network(&rep, env, harness);
        return !rep.failed;
}
