/* The sandbox holds: small probes, each run as the session of a real Trial
 * (the real trialbox, the real bwrap), each proving one property, in the
 * manner of bubblewrap's tests/test-run.sh. Every probe can fail: where it
 * can, a positive control shows that the same probe sees the thing when
 * nothing hides it (--no-sandbox, or the host itself).
 *
 * It must pass as root and as an unprivileged user (tests/fixtures/as-unprivileged.sh);
 * a part that needs root to set up (a folder under /home, a file under /run)
 * is skipped, with a note on stderr, when unprivileged. Markers are split in
 * the probes' own command lines ('AB''CD') so a probe never finds itself. */
#define _GNU_SOURCE
#include <check.h>
#include <linux/keyctl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tb_test.h"
#include "base/util.h"

static bool is_root(void) { return getuid() == 0; }


/* ---- running probes ---- */

/* Run `script` as the session (`sh -c`) of a Trial of `harness`, with
 * `flags` before the `--` (another Harness than shell runs /bin/sh through
 * --harness-bin); a new output folder each time. Returns what the session
 * printed (malloc'd); the Trial must have completed. */
static char *run_script(struct fixture *b, const char *harness, char *const env[], const char *const flags[],
                        const char *script)
{
        const char *extra[32];
        size_t n = 0;
        for (size_t i = 0; flags && flags[i] && n < 24; i++)
                extra[n++] = flags[i];
        if (strcmp(harness, "shell") != 0) {
                extra[n++] = "--harness-bin";
                extra[n++] = "/bin/sh";
        }
        extra[n++] = "--";
        extra[n++] = "-c";
        extra[n++] = script;
        extra[n] = NULL;
        fixture_next_out(b);
        struct proc_result r;
        tb_run(&r, harness, b, env, extra);
        ck_assert_msg(r.status == 0, "the probe's %s Trial ended with status %d: %s", harness, r.status, r.err);
        char *out = r.out;
        free(r.err);
        return out;
}

static char *sandboxed(struct fixture *b, char *const env[], const char *script)
{
        return run_script(b, "shell", env, NULL, script);
}

static char *unsandboxed(struct fixture *b, char *const env[], const char *script)
{
        return run_script(b, "shell", env, EXTRA("--no-sandbox"), script);
}


/* Probe text: say whether `path` exists (as anything, a dangling link included). */
static void probe_exists(struct strbuf *sb, const char *path)
{
        strbuf_add(sb, "if [ -e ");
        strbuf_add_quoted(sb, path);
        strbuf_add(sb, " ] || [ -L ");
        strbuf_add_quoted(sb, path);
        strbuf_add(sb, " ]; then echo ");
        _cleanup_free_ char *v = xasprintf("visible %s", path), *h = xasprintf("hidden %s", path);
        strbuf_add_quoted(sb, v);
        strbuf_add(sb, "; else echo ");
        strbuf_add_quoted(sb, h);
        strbuf_add(sb, "; fi; ");
}

static void assert_hidden(const char *out, const char *path)
{
        _cleanup_free_ char *l = xasprintf("hidden %s", path);
        assert_line(out, l);
}

static void assert_visible(const char *out, const char *path)
{
        _cleanup_free_ char *l = xasprintf("visible %s", path);
        ck_assert_msg(has_line(out, l), "positive control: the probe cannot see '%s' even unsandboxed:\n%s", path, out);
}

/* Probe text: try to create `path` (a file); say whether it was made. */
static void probe_create(struct strbuf *sb, const char *path)
{
        strbuf_add(sb, "if (: > ");
        strbuf_add_quoted(sb, path);
        strbuf_add(sb, ") 2>/dev/null; then echo ");
        _cleanup_free_ char *w = xasprintf("wrote %s", path), *r = xasprintf("refused %s", path);
        strbuf_add_quoted(sb, w);
        strbuf_add(sb, "; else echo ");
        strbuf_add_quoted(sb, r);
        strbuf_add(sb, "; fi; ");
}

static void assert_refused(const char *out, const char *path)
{
        _cleanup_free_ char *l = xasprintf("refused %s", path);
        assert_line(out, l);
}

/* Probe text: print the mount table, each line prefixed "mnt ". */
#define PROBE_MOUNTS "sed 's/^/mnt /' /proc/self/mountinfo; "

/* From a PROBE_MOUNTS listing: the top mount at `mountpoint`: 1 read-only,
 * 0 writable, -1 no mount there. Its file system type in `fstype` (64 bytes)
 * when not NULL. */
static int mount_ro(const char *out, const char *mountpoint, char fstype[64])
{
        int res = -1;
        for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                if (strncmp(p, "mnt ", 4) != 0)
                        continue;
                char mp[4096], opts[1024];
                if (sscanf(p + 4, "%*s %*s %*s %*s %4095s %1023s", mp, opts) != 2 || strcmp(mp, mountpoint) != 0)
                        continue;
                res = strncmp(opts, "ro", 2) == 0 && (opts[2] == ',' || opts[2] == '\0');
                const char *dash = strstr(p, " - ");
                const char *eol = strchrnul(p, '\n');
                if (fstype && dash && dash < eol)
                        sscanf(dash + 3, "%63s", fstype);
        }
        return res;
}

static void assert_mount_ro(const char *out, const char *mountpoint)
{
        int ro = mount_ro(out, mountpoint, NULL);
        ck_assert_msg(ro != -1, "no mount at '%s' in the sandbox", mountpoint);
        ck_assert_msg(ro == 1, "'%s' is mounted writable in the sandbox", mountpoint);
}

static void kill_sleepers(const char *num)
{
        pid_t p[32];
        size_t n = host_pids(num, "sleep", NULL, p, 32);
        for (size_t i = 0; i < n && i < 32; i++)
                kill(p[i], SIGKILL);
}

/* ---- unbound host paths are invisible ---- */

START_TEST(the_real_home_is_invisible)
{
        struct fixture b;
        fixture_new(&b);
        const char *home = getenv("HOME");
        ck_assert_ptr_nonnull(home);
        _cleanup_free_ char *m = marker("tbtest-home");
        _cleanup_free_ char *dir = xasprintf("%s/.%s", home, m);
        _cleanup_free_ char *key = path_in(dir, "id_ed25519");
        ck_assert_int_eq(mkdir(dir, 0700), 0);
        write_text(key, "-----BEGIN OPENSSH PRIVATE KEY-----\n", 0600);

        struct strbuf sb = { 0 };
        probe_exists(&sb, dir);
        probe_exists(&sb, key);
        strbuf_addf(&sb, "[ \"$HOME\" = '%s' ] && echo home=real || echo home=other", home);
        char *in = sandboxed(&b, NULL, sb.s);
        char *out = unsandboxed(&b, NULL, sb.s);
        unlink(key);
        rmdir(dir);

        assert_hidden(in, dir);
        assert_hidden(in, key);
        assert_line(in, "home=other");
        assert_visible(out, dir);
        assert_visible(out, key);
        free(in);
        free(out);
        free(sb.s);
        fixture_free(&b);
}
END_TEST

/* Is `dir` a folder above (or equal to) some folder of `list` (colon-separated)? */
static bool holds_any_of(const char *dir, const char *list)
{
        _cleanup_free_ char *copy = xstrdup(list ? list : "");
        char *save = NULL;
        for (char *w = strtok_r(copy, ":", &save); w; w = strtok_r(NULL, ":", &save))
                if (w[0] == '/' && path_is_under(w, dir))
                        return true;
        return false;
}

START_TEST(other_users_homes_are_invisible)
{
        struct fixture b;
        fixture_new(&b);
        struct strv paths = { 0 };
        _cleanup_free_ char *m = marker("tbtest-user");
        _cleanup_free_ char *made = xasprintf("/home/%s", m);
        _cleanup_free_ char *made_key = xasprintf("%s/.ssh/id_rsa", made);
        if (is_root()) {
                _cleanup_free_ char *ssh = xasprintf("%s/.ssh", made);
                ck_assert_int_eq(mkdir_p(ssh, 0700), 0);
                write_text(made_key, "-----BEGIN RSA PRIVATE KEY-----\n", 0600);
                strv_add(&paths, made);
                strv_add(&paths, made_key);
        } else {
                skip_note("other_users_homes_are_invisible", "not root: no home of our own made under /home");
        }
        /* Every home already there, but ours and any holding a toolchain on
         * the PATH (bound on purpose); and /root when we are not root. */
        DIR *d = opendir("/home");
        struct dirent *e;
        while (d && (e = readdir(d))) {
                if (e->d_name[0] == '.' || strcmp(e->d_name, m) == 0)
                        continue;
                _cleanup_free_ char *h = xasprintf("/home/%s", e->d_name);
                const char *home = getenv("HOME");
                if ((home && path_is_under(home, h)) || holds_any_of(h, getenv("PATH")))
                        continue;
                strv_add(&paths, h);
        }
        if (d)
                closedir(d);
        if (!is_root() && !holds_any_of("/root", getenv("PATH")))
                strv_add(&paths, "/root");

        struct strbuf sb = { 0 };
        for (size_t i = 0; i < paths.n; i++)
                probe_exists(&sb, paths.v[i]);
        strbuf_add(&sb, "true");
        char *in = sandboxed(&b, NULL, sb.s);
        char *out = unsandboxed(&b, NULL, sb.s);
        if (is_root()) {
                _cleanup_free_ char *rm = xasprintf("rm -rf '%s'", made);
                host_can(rm);
        }
        ck_assert_msg(paths.n > 0, "no other user's home to probe");
        for (size_t i = 0; i < paths.n; i++) {
                assert_hidden(in, paths.v[i]);
                assert_visible(out, paths.v[i]);
        }
        free(in);
        free(out);
        free(sb.s);
        strv_done(&paths);
        fixture_free(&b);
}
END_TEST

START_TEST(the_grok_trials_home_is_invisible_from_another_harness)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *state = path_in(b.dir, "state");
        _cleanup_free_ char *grok = path_in(state, "trialbox/trials/grok");
        _cleanup_free_ char *auth = path_in(grok, "auth.json");
        ck_assert_int_eq(mkdir_p(grok, 0700), 0);
        write_text(auth, "{\"grok\": \"login\"}", 0600);
        _cleanup_free_ char *env = xasprintf("XDG_STATE_HOME=%s", state);

        struct strbuf sb = { 0 };
        probe_exists(&sb, grok);
        probe_exists(&sb, auth);
        strbuf_add(&sb, "echo grok_home=${GROK_HOME:-unset}");
        char *shell = sandboxed(&b, ENV(env), sb.s);
        assert_hidden(shell, grok);
        assert_hidden(shell, auth);
        assert_line(shell, "grok_home=unset");
        /* Nor from a Harness that has a login of its own. */
        _cleanup_free_ char *codex_home = path_in(b.dir, "codex");
        _cleanup_free_ char *codex_auth = path_in(codex_home, "auth.json");
        ck_assert_int_eq(mkdir_p(codex_home, 0700), 0);
        write_text(codex_auth, "{}", 0600);
        _cleanup_free_ char *env_codex = xasprintf("CODEX_HOME=%s", codex_home);
        char *codex = run_script(&b, "codex", ENV(env, env_codex), NULL, sb.s);
        assert_hidden(codex, grok);
        assert_hidden(codex, auth);
        assert_line(codex, "grok_home=unset");
        free(codex);
        /* Positive control: a Grok Trial, given it on purpose, sees it. */
        char *g = run_script(&b, "grok", ENV(env), NULL, sb.s);
        assert_visible(g, auth);
        free(shell);
        free(g);
        free(sb.s);
        fixture_free(&b);
}
END_TEST

START_TEST(var_is_invisible)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *m = marker("tbtest-var");
        _cleanup_free_ char *planted = xasprintf("/var/tmp/%s", m);
        bool plant = access("/var/tmp", W_OK) == 0;
        if (plant)
                write_text(planted, "host state\n", 0600);
        else
                skip_note("var_is_invisible", "no writable /var/tmp: nothing planted");
        struct strbuf sb = { 0 };
        probe_exists(&sb, "/var");
        probe_exists(&sb, planted);
        char *in = sandboxed(&b, NULL, sb.s);
        char *out = unsandboxed(&b, NULL, sb.s);
        if (plant)
                unlink(planted);
        assert_hidden(in, "/var");
        assert_hidden(in, planted);
        assert_visible(out, "/var");
        if (plant)
                assert_visible(out, planted);
        free(in);
        free(out);
        free(sb.s);
        fixture_free(&b);
}
END_TEST

START_TEST(run_and_the_user_runtime_folders_are_invisible)
{
        struct fixture b;
        fixture_new(&b);
        struct strv paths = { 0 };
        struct stat st;
        _cleanup_free_ char *m = marker("tbtest-run");
        /* A runtime folder of a user of our own, as /run/user/UID would be. */
        _cleanup_free_ char *runtime = xasprintf("/run/%s", m);
        _cleanup_free_ char *bus = path_in(runtime, "bus");
        bool planted = is_root() && stat("/run", &st) == 0 && mkdir(runtime, 0700) == 0;
        if (planted) {
                write_text(bus, "", 0600);
                strv_add(&paths, runtime);
                strv_add(&paths, bus);
        } else {
                skip_note("run_and_the_user_runtime_folders_are_invisible", "not root: nothing planted under /run");
        }
        if (stat("/run", &st) == 0)
                strv_add(&paths, "/run");
        if (stat("/run/user", &st) == 0)
                strv_add(&paths, "/run/user");
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0)
                strv_add(&paths, xdg);
        struct strbuf sb = { 0 };
        for (size_t i = 0; i < paths.n; i++)
                probe_exists(&sb, paths.v[i]);
        strbuf_add(&sb, "true");
        char *in = sandboxed(&b, NULL, sb.s);
        char *out = unsandboxed(&b, NULL, sb.s);
        if (planted) {
                unlink(bus);
                rmdir(runtime);
        }
        if (paths.n == 0)
                skip_note("run_and_the_user_runtime_folders_are_invisible", "the host has no /run");
        for (size_t i = 0; i < paths.n; i++) {
                assert_hidden(in, paths.v[i]);
                assert_visible(out, paths.v[i]);
        }
        free(in);
        free(out);
        free(sb.s);
        strv_done(&paths);
        fixture_free(&b);
}
END_TEST

START_TEST(the_host_tmp_is_invisible_and_the_session_tmp_is_a_private_tmpfs)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *m = marker("tbtest-tmp");
        _cleanup_free_ char *host_file = xasprintf("/tmp/%s-host", m);
        _cleanup_free_ char *session_file = xasprintf("/tmp/%s-session", m);
        write_text(host_file, "host tmp\n", 0600);
        struct strbuf sb = { 0 };
        probe_exists(&sb, host_file);
        probe_create(&sb, session_file);
        strbuf_add(&sb, PROBE_MOUNTS);
        char *in = sandboxed(&b, NULL, sb.s);
        bool leaked = access(session_file, F_OK) == 0;
        unlink(session_file);
        char *out = unsandboxed(&b, NULL, sb.s);
        unlink(host_file);
        unlink(session_file);

        assert_hidden(in, host_file);
        _cleanup_free_ char *wrote = xasprintf("wrote %s", session_file);
        assert_line(in, wrote); /* /tmp is the session's own */
        ck_assert_msg(!leaked, "a file the session made in its /tmp appeared in the host's /tmp");
        char fstype[64] = "";
        ck_assert_int_eq(mount_ro(in, "/tmp", fstype), 0);
        ck_assert_str_eq(fstype, "tmpfs");
        assert_visible(out, host_file);
        free(in);
        free(out);
        free(sb.s);
        fixture_free(&b);
}
END_TEST

START_TEST(the_host_dev_shm_is_invisible)
{
        struct fixture b;
        fixture_new(&b);
        if (access("/dev/shm", W_OK) != 0) {
                skip_note("the_host_dev_shm_is_invisible", "the host has no writable /dev/shm");
                fixture_free(&b);
                return;
        }
        _cleanup_free_ char *m = marker("tbtest-shm");
        _cleanup_free_ char *planted = xasprintf("/dev/shm/%s", m);
        write_text(planted, "shared memory of a host process\n", 0600);
        struct strbuf sb = { 0 };
        probe_exists(&sb, planted);
        char *in = sandboxed(&b, NULL, sb.s);
        char *out = unsandboxed(&b, NULL, sb.s);
        unlink(planted);
        assert_hidden(in, planted);
        assert_visible(out, planted);
        free(in);
        free(out);
        free(sb.s);
        fixture_free(&b);
}
END_TEST

START_TEST(host_sysv_shared_memory_is_out_of_reach)
{
        struct fixture b;
        fixture_new(&b);
        /* SysV IPC is not a file: only an IPC namespace of the sandbox's
         * own hides it (bwrap --unshare-ipc). A segment only we (and root)
         * may use, as an X server's or a database's would be. Marked for removal at once: it goes when
         * this test's process does, whatever happens. */
        int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
        ck_assert_int_ge(id, 0);
        char *mem = shmat(id, NULL, 0);
        ck_assert_ptr_ne(mem, (void *)-1);
        strcpy(mem, "a host process's secret");
        shmctl(id, IPC_RMID, NULL);
        _cleanup_free_ char *script = xasprintf(
                "awk '$2 == %d {found=1} END {print found ? \"segment=visible\" : \"segment=hidden\"}' /proc/sysvipc/shm",
                id);
        char *in = sandboxed(&b, NULL, script);
        char *out = unsandboxed(&b, NULL, script);
        shmdt(mem);
        assert_line(out, "segment=visible");
        assert_line(in, "segment=hidden");
        free(in);
        free(out);
        fixture_free(&b);
}
END_TEST

START_TEST(sys_is_invisible)
{
        struct fixture b;
        fixture_new(&b);
        struct strbuf sb = { 0 };
        probe_exists(&sb, "/sys/kernel");
        probe_exists(&sb, "/sys/class");
        char *in = sandboxed(&b, NULL, sb.s);
        char *out = unsandboxed(&b, NULL, sb.s);
        assert_hidden(in, "/sys/kernel");
        assert_hidden(in, "/sys/class");
        assert_visible(out, "/sys/kernel");
        free(in);
        free(out);
        free(sb.s);
        fixture_free(&b);
}
END_TEST

static bool basic_dev_node(const char *name)
{
        /* bwrap's --dev; "console" only when bwrap's stdout is a terminal. */
        static const char *const ok[] = { "null", "zero",  "full",   "random", "urandom", "tty",     "pts",
                                          "ptmx", "shm",   "fd",     "stdin",  "stdout",  "stderr",  "core",
                                          "mqueue", "console", NULL };
        for (size_t i = 0; ok[i]; i++)
                if (strcmp(name, ok[i]) == 0)
                        return true;
        return false;
}

START_TEST(dev_holds_only_the_basic_nodes)
{
        struct fixture b;
        fixture_new(&b);
        const char *script = "for n in $(ls -A /dev); do echo \"dev $n\"; done";
        char *in = sandboxed(&b, NULL, script);
        char *out = unsandboxed(&b, NULL, script);
        size_t in_n = 0, extra_host = 0;
        for (const char *p = in; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                char name[256];
                if (sscanf(p, "dev %255s", name) != 1)
                        continue;
                in_n++;
                ck_assert_msg(basic_dev_node(name), "the sandbox's /dev holds '%s'", name);
        }
        ck_assert_msg(in_n >= 6, "the probe listed no /dev:\n%s", in);
        for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                char name[256];
                if (sscanf(p, "dev %255s", name) == 1 && !basic_dev_node(name))
                        extra_host++;
        }
        if (extra_host == 0)
                skip_note("dev_holds_only_the_basic_nodes", "the host's own /dev holds only basic nodes: no control");
        free(in);
        free(out);
        fixture_free(&b);
}
END_TEST

START_TEST(a_link_in_the_repository_to_a_host_secret_resolves_to_nothing)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *m = marker("tbtest-key");
        _cleanup_free_ char *fake_home = path_in(b.dir, "fake-home");
        _cleanup_free_ char *ssh = path_in(fake_home, ".ssh");
        _cleanup_free_ char *key = path_in(ssh, "id_rsa");
        ck_assert_int_eq(mkdir_p(ssh, 0700), 0);
        write_text(key, "PRIVATE KEY CONTENT\n", 0600);
        _cleanup_free_ char *real = xasprintf("%s/.%s", getenv("HOME"), m);
        write_text(real, "PRIVATE KEY CONTENT\n", 0600);
        struct {
                const char *name, *target;
        } links[] = {
                { "abs-link", key },
                { "rel-link", "../fake-home/.ssh/id_rsa" },
                { "dir-link", ssh },
                { "home-link", real },
        };
        struct strbuf sb = { 0 };
        for (size_t i = 0; i < TB_ARRAY_SIZE(links); i++) {
                _cleanup_free_ char *l = path_in(b.repo, links[i].name);
                ck_assert_int_eq(symlink(links[i].target, l), 0);
                const char *file = strcmp(links[i].name, "dir-link") == 0 ? "dir-link/id_rsa" : links[i].name;
                strbuf_addf(&sb, "if grep -q 'PRIVATE KEY' '%s' 2>/dev/null; then echo 'read %s'; else echo 'nothing %s'; fi; ",
                            file, links[i].name, links[i].name);
        }
        char *in = sandboxed(&b, NULL, sb.s);
        char *out = unsandboxed(&b, NULL, sb.s);
        unlink(real);
        for (size_t i = 0; i < TB_ARRAY_SIZE(links); i++) {
                _cleanup_free_ char *nothing = xasprintf("nothing %s", links[i].name);
                _cleanup_free_ char *read = xasprintf("read %s", links[i].name);
                assert_line(in, nothing);
                ck_assert_msg(has_line(out, read), "positive control: '%s' unreadable unsandboxed:\n%s", links[i].name, out);
        }
        free(in);
        free(out);
        free(sb.s);
        fixture_free(&b);
}
END_TEST

/* ---- read-only binds refuse writes ---- */

START_TEST(toolchains_on_the_path_refuse_writes)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *bin = path_in(b.dir, "toolchain/bin");
        _cleanup_free_ char *tool = path_in(bin, "fake-tool");
        _cleanup_free_ char *planted = path_in(bin, "planted");
        ck_assert_int_eq(mkdir_p(bin, 0755), 0);
        write_text(tool, "#!/bin/sh\necho fake-tool ran\n", 0755);
        _cleanup_free_ char *path = xasprintf("PATH=%s:%s", bin, getenv("PATH"));
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "fake-tool; ");
        probe_create(&sb, planted);
        strbuf_addf(&sb, "(echo 'echo hijacked' >> '%s') 2>/dev/null && echo appended || echo append-refused; ", tool);
        strbuf_addf(&sb, "rm -f '%s' 2>/dev/null; [ -e '%s' ] && echo tool-kept || echo tool-removed; ", tool, tool);
        strbuf_add(&sb, PROBE_MOUNTS);
        char *in = sandboxed(&b, ENV(path), sb.s);
        bool planted_on_host = access(planted, F_OK) == 0;
        _cleanup_free_ char *tool_now = read_text(tool);

        assert_line(in, "fake-tool ran"); /* it is there, and runs */
        assert_refused(in, planted);
        assert_line(in, "append-refused");
        assert_line(in, "tool-kept");
        assert_mount_ro(in, bin);
        ck_assert(!planted_on_host);
        ck_assert_str_eq(tool_now, "#!/bin/sh\necho fake-tool ran\n");
        /* Positive control: the same probe writes there unsandboxed. */
        _cleanup_free_ char *ctl = xasprintf("touch '%s' && echo made", planted);
        char *out = unsandboxed(&b, ENV(path), ctl);
        assert_line(out, "made");
        free(in);
        free(out);
        free(sb.s);
        fixture_free(&b);
}
END_TEST

START_TEST(the_harness_binary_refuses_writes)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *agent_dir = path_in(b.dir, "agent");
        _cleanup_free_ char *agent = path_in(agent_dir, "agent");
        ck_assert_int_eq(mkdir_p(agent_dir, 0755), 0);
        _cleanup_free_ char *cp = xasprintf("cp /bin/sh '%s' && chmod 755 '%s'", agent, agent);
        ck_assert(host_can(cp));
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "[ -x /sandbox/harness/shell ] && echo harness=there; ");
        strbuf_add(&sb, "(: >> /sandbox/harness/shell) 2>/dev/null && echo append=ok || echo append=refused; ");
        strbuf_add(&sb, "cp /dev/null /sandbox/harness/shell 2>/dev/null && echo overwrite=ok || echo overwrite=refused; ");
        strbuf_add(&sb, "rm -f /sandbox/harness/shell 2>/dev/null; [ -e /sandbox/harness/shell ] && echo kept; ");
        probe_create(&sb, "/sandbox/harness/planted");
        probe_exists(&sb, agent);
        strbuf_add(&sb, PROBE_MOUNTS);
        char *in = run_script(&b, "shell", NULL, EXTRA("--harness-bin", agent), sb.s);
        _cleanup_free_ char *same = xasprintf("cmp -s /bin/sh '%s'", agent);

        assert_line(in, "harness=there");
        assert_line(in, "append=refused");
        assert_line(in, "overwrite=refused");
        assert_line(in, "kept");
        assert_refused(in, "/sandbox/harness/planted");
        assert_hidden(in, agent); /* only at /sandbox/harness/shell */
        assert_mount_ro(in, "/sandbox/harness/shell");
        ck_assert_msg(host_can(same), "the Harness binary changed on the host");
        /* Positive control: the host file itself is writable by us. */
        ck_assert_int_eq(access(agent, W_OK), 0);
        free(in);
        free(sb.s);
        fixture_free(&b);
}
END_TEST

START_TEST(the_skills_folder_refuses_writes)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *skills = path_in(b.dir, "skills");
        _cleanup_free_ char *skill = path_in(skills, "SKILL.md");
        _cleanup_free_ char *planted = path_in(skills, "planted");
        ck_assert_int_eq(mkdir_p(skills, 0755), 0);
        write_text(skill, "a skill\n", 0644);
        struct strbuf sb = { 0 };
        strbuf_addf(&sb, "cat '%s'; ", skill);
        probe_create(&sb, planted);
        strbuf_addf(&sb, "(echo changed > '%s') 2>/dev/null && echo rewrite=ok || echo rewrite=refused; ", skill);
        strbuf_addf(&sb, "rm -f '%s' 2>/dev/null; [ -e '%s' ] && echo skill-kept; ", skill, skill);
        strbuf_add(&sb, PROBE_MOUNTS);
        char *in = run_script(&b, "shell", NULL, EXTRA("--skills", skills), sb.s);
        bool planted_on_host = access(planted, F_OK) == 0;
        _cleanup_free_ char *now = read_text(skill);

        assert_line(in, "a skill");
        assert_refused(in, planted);
        assert_line(in, "rewrite=refused");
        assert_line(in, "skill-kept");
        assert_mount_ro(in, skills);
        ck_assert(!planted_on_host);
        ck_assert_str_eq(now, "a skill\n");
        char *out = run_script(&b, "shell", NULL, EXTRA("--no-sandbox", "--skills", skills), sb.s);
        _cleanup_free_ char *wrote = xasprintf("wrote %s", planted);
        assert_line(out, wrote);
        free(in);
        free(out);
        free(sb.s);
        fixture_free(&b);
}
END_TEST

/* A system folder: the probe sees it, cannot add to it, and it is mounted read-only. */
static void system_folder_refuses_writes(const char *dir, const char *known)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *m = marker("tbtest-sys");
        _cleanup_free_ char *file = xasprintf("%s/%s", dir, m);
        _cleanup_free_ char *sub = xasprintf("%s/%s-dir", dir, m);
        struct strbuf sb = { 0 };
        probe_exists(&sb, known);
        probe_create(&sb, file);
        strbuf_addf(&sb, "mkdir '%s' 2>/dev/null && echo mkdir=ok || echo mkdir=refused; ", sub);
        strbuf_add(&sb, PROBE_MOUNTS);
        char *in = sandboxed(&b, NULL, sb.s);
        bool made = access(file, F_OK) == 0 || access(sub, F_OK) == 0;
        if (made) { /* never leave it there */
                unlink(file);
                rmdir(sub);
        }
        ck_assert_msg(!made, "the session wrote into the host's %s", dir);
        _cleanup_free_ char *v = xasprintf("visible %s", known);
        assert_line(in, v);
        assert_refused(in, file);
        assert_line(in, "mkdir=refused");
        assert_mount_ro(in, dir);
        free(in);
        free(sb.s);
        fixture_free(&b);
}

START_TEST(usr_refuses_writes)
{
        system_folder_refuses_writes("/usr", "/usr/bin/env");
}
END_TEST

START_TEST(etc_refuses_writes)
{
        system_folder_refuses_writes("/etc", "/etc/passwd");
}
END_TEST

START_TEST(the_sandbox_root_refuses_writes)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *m = marker("tbtest-root");
        _cleanup_free_ char *top = xasprintf("/%s", m);
        _cleanup_free_ char *in_sandbox_dir = xasprintf("/sandbox/%s", m);
        struct strbuf sb = { 0 };
        probe_create(&sb, top);
        probe_create(&sb, in_sandbox_dir);
        strbuf_addf(&sb, "mkdir '/%s-dir' 2>/dev/null && echo mkdir=ok || echo mkdir=refused; ", m);
        strbuf_add(&sb, "ln -s /tmp /evil 2>/dev/null && echo link=ok || echo link=refused; ");
        strbuf_add(&sb, PROBE_MOUNTS);
        char *in = sandboxed(&b, NULL, sb.s);
        bool made = access(top, F_OK) == 0;
        if (made)
                unlink(top);
        ck_assert(!made);
        assert_refused(in, top);
        assert_refused(in, in_sandbox_dir);
        assert_line(in, "mkdir=refused");
        assert_line(in, "link=refused");
        assert_mount_ro(in, "/");
        free(in);
        free(sb.s);
        fixture_free(&b);
}
END_TEST

START_TEST(only_the_repository_the_home_and_private_mounts_are_writable)
{
        struct fixture b;
        fixture_new(&b);
        char *in = sandboxed(&b, NULL, PROBE_MOUNTS);
        _cleanup_free_ char *home = xasprintf("%s/home", b.out);
        bool repo_rw = false, home_rw = false;
        size_t mounts = 0;
        for (const char *p = in; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                char mp[4096], opts[1024];
                if (sscanf(p, "mnt %*s %*s %*s %*s %4095s %1023s", mp, opts) != 2)
                        continue;
                mounts++;
                bool ro = strncmp(opts, "ro", 2) == 0 && (opts[2] == ',' || opts[2] == '\0');
                if (ro)
                        continue;
                repo_rw = repo_rw || strcmp(mp, b.repo) == 0;
                home_rw = home_rw || strcmp(mp, home) == 0;
                bool allowed = strcmp(mp, b.repo) == 0 || strcmp(mp, home) == 0 || strcmp(mp, "/tmp") == 0 ||
                               strcmp(mp, "/sandbox/tmp") == 0 /* TMPDIR, private */ || strcmp(mp, "/proc") == 0 || path_is_under(mp, "/dev");
                ck_assert_msg(allowed, "'%s' is mounted writable in the sandbox (%s)", mp, opts);
        }
        ck_assert_msg(mounts > 5, "the probe saw no mount table:\n%s", in);
        /* Positive control: the probe does see the writable ones. */
        ck_assert(repo_rw);
        ck_assert(home_rw);
        free(in);
        fixture_free(&b);
}
END_TEST

START_TEST(nothing_the_session_writes_reaches_the_repository_s_parent)
{
        struct fixture b;
        fixture_new(&b);
        /* A repository outside /tmp: its parent is on the sandbox's
         * read-only root, and the write is refused in the sandbox too. */
        if (access("/var/tmp", W_OK) == 0) {
                struct fixture v = b;
                _cleanup_free_ char *m = marker("tbtest-varrepo");
                v.dir = xasprintf("/var/tmp/%s", m);
                snprintf(v.repo, sizeof v.repo, "%s/repo", v.dir);
                v.outs = 0;
                ck_assert_int_eq(mkdir_p(v.repo, 0755), 0);
                _cleanup_free_ char *file = path_in(v.dir, "planted");
                const char *script = "(echo x > ../planted) 2>/dev/null && echo parent=written || echo parent=refused";
                char *in = sandboxed(&v, NULL, script);
                bool leaked = access(file, F_OK) == 0;
                char *out = unsandboxed(&v, NULL, script);
                fixture_free(&v);
                ck_assert_msg(!leaked, "the session wrote beside a repository under /var/tmp");
                assert_line(in, "parent=refused");
                assert_line(out, "parent=written");
                free(in);
                free(out);
        } else {
                skip_note("nothing_the_session_writes_reaches_the_repository_s_parent", "no writable /var/tmp");
        }
        _cleanup_free_ char *m = marker("tbtest-parent");
        _cleanup_free_ char *file = xasprintf("%s/%s", b.dir, m);
        _cleanup_free_ char *dir = xasprintf("%s/%s-dir", b.dir, m);
        _cleanup_free_ char *script =
                xasprintf("echo x > ../%s 2>/dev/null; mkdir ../%s-dir 2>/dev/null; echo done", m, m);
        char *in = sandboxed(&b, NULL, script);
        ck_assert_msg(access(file, F_OK) != 0, "the session wrote a file beside the repository on the host");
        ck_assert_msg(access(dir, F_OK) != 0, "the session made a folder beside the repository on the host");
        char *out = unsandboxed(&b, NULL, script);
        ck_assert_msg(access(file, F_OK) == 0, "positive control: the probe cannot write there even unsandboxed");
        free(in);
        free(out);
        fixture_free(&b);
}
END_TEST

START_TEST(the_session_cannot_forge_its_outcome)
{
        struct fixture b;
        fixture_new(&b);
        const char *script = "printf '{\"outcome\":\"completed\",\"exit_code\":0}' > \"$HOME/../outcome.json\" 2>/dev/null; "
                             "echo forged > \"$HOME/../forged\" 2>/dev/null; echo kept > \"$HOME/kept\"; exit 3";
        fixture_next_out(&b);
        struct proc_result r;
        tb_run(&r, "shell", &b, NULL, EXTRA("--", "-c", script));
        ck_assert_int_eq(r.status, 3);
        assert_outcome(&b, "outcome", "failed");
        assert_outcome(&b, "exit_code", "3");
        _cleanup_free_ char *forged = path_in(b.out, "forged");
        _cleanup_free_ char *kept = path_in(b.out, "home/kept");
        ck_assert_msg(access(forged, F_OK) != 0, "the session wrote into its output folder beside its home");
        ck_assert_msg(access(kept, F_OK) == 0, "positive control: the session's home is not the output folder's");
        proc_result_free(&r);
        fixture_free(&b);
}
END_TEST

START_TEST(the_session_home_is_fresh_and_its_writes_stay_in_the_output_folder)
{
        struct fixture b;
        fixture_new(&b);
        const char *real = getenv("HOME");
        _cleanup_free_ char *m = marker("tbtest-fresh");
        _cleanup_free_ char *planted = xasprintf("%s/.%s", real, m);
        _cleanup_free_ char *written = xasprintf("%s/.%s-written", real, m);
        write_text(planted, "host dotfile\n", 0600);
        /* Nothing but the host's git identity trialbox writes there (.gitconfig). */
        _cleanup_free_ char *script = xasprintf(
                "echo \"home=$HOME\"; echo \"list=$(ls -A \"$HOME\" | grep -vx .gitconfig | tr '\\n' ' ')\"; "
                "echo x > \"$HOME/.%s-written\"",
                m);
        char *in = sandboxed(&b, NULL, script);
        unlink(planted);
        bool wrote_real = access(written, F_OK) == 0;
        unlink(written);
        _cleanup_free_ char *want_home = xasprintf("home=%s/home", b.out);
        _cleanup_free_ char *landed = xasprintf("%s/home/.%s-written", b.out, m);
        assert_line(in, want_home);
        assert_line(in, "list=");
        ck_assert_msg(!wrote_real, "a write to $HOME reached the real home");
        ck_assert_msg(access(landed, F_OK) == 0, "a write to $HOME is not in the output folder's home");
        free(in);
        fixture_free(&b);
}
END_TEST

/* ---- host processes: neither seen nor signalled ---- */

static pid_t host_sleeper(char *num, size_t n)
{
        sleep_number(num, n);
        pid_t pid = spawn_argv(NULL, (char *[]){ "/bin/sleep", num, NULL }, "/dev/null", "/dev/null");
        pid_t p[2];
        for (int i = 0; i < 200 && host_pids(num, "sleep", NULL, p, 2) == 0; i++)
                usleep(10000);
        ck_assert_msg(host_pids(num, "sleep", NULL, p, 2) == 1, "the host's sleeper did not start");
        return pid;
}

START_TEST(the_session_sees_only_its_own_processes_and_pid_1_is_bwrap)
{
        struct fixture b;
        fixture_new(&b);
        char num[64];
        pid_t host = host_sleeper(num, sizeof num);
        _cleanup_free_ char *script = xasprintf(
                "for d in /proc/[0-9]*; do echo \"proc ${d#/proc/} $(cat $d/comm 2>/dev/null)\"; done; "
                "m='%.4s''%s'; seen=0; for f in /proc/[0-9]*/cmdline; do grep -q \"$m\" \"$f\" 2>/dev/null && seen=1; done; "
                "echo seen=$seen",
                num, num + 4);
        char *in = sandboxed(&b, NULL, script);
        char *out = unsandboxed(&b, NULL, script);
        kill(host, SIGKILL);
        wait_status(host);

        assert_line(in, "seen=0");
        assert_line(in, "proc 1 bwrap");
        size_t n_in = 0, n_out = 0;
        for (const char *p = in; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                int pid;
                char comm[64];
                if (sscanf(p, "proc %d %63s", &pid, comm) != 2)
                        continue;
                n_in++;
                bool ours = strcmp(comm, "bwrap") == 0 || strcmp(comm, "shell") == 0 || strcmp(comm, "sh") == 0 ||
                            strcmp(comm, "cat") == 0;
                ck_assert_msg(ours, "the session sees process %d '%s'", pid, comm);
        }
        for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                n_out += strncmp(p, "proc ", 5) == 0;
        ck_assert_msg(n_in >= 2 && n_in <= 6, "the session sees %zu processes:\n%s", n_in, in);
        /* Positive control: unsandboxed, the same probe sees the host's. */
        assert_line(out, "seen=1");
        ck_assert_msg(n_out > n_in, "positive control: unsandboxed the probe sees only %zu processes", n_out);
        free(in);
        free(out);
        fixture_free(&b);
}
END_TEST

START_TEST(a_host_process_cannot_be_signalled_by_its_pid)
{
        struct fixture b;
        fixture_new(&b);
        char num[64];
        pid_t host = host_sleeper(num, sizeof num);
        _cleanup_free_ char *kill_it = xasprintf(
                "kill -KILL %d 2>/dev/null && echo kill=delivered || echo kill=refused; "
                "kill -0 %d 2>/dev/null && echo probe=reached || echo probe=unreached",
                (int)host, (int)host);
        char *in = sandboxed(&b, NULL, kill_it);
        usleep(50000);
        int w;
        bool alive = waitpid(host, &w, WNOHANG) == 0;
        _cleanup_free_ char *ctl = xasprintf("kill -0 %d 2>/dev/null && echo probe=reached || echo probe=unreached",
                                             (int)host);
        char *out = alive ? unsandboxed(&b, NULL, ctl) : NULL;
        kill(host, SIGKILL);
        if (alive)
                wait_status(host);

        ck_assert_msg(alive, "the session killed a host process by its pid");
        assert_line(in, "kill=refused");
        assert_line(in, "probe=unreached");
        assert_line(out, "probe=reached");
        free(in);
        free(out);
        fixture_free(&b);
}
END_TEST

/* Start a Trial whose session first waits for the file PID in the
 * repository, which this writes with trialbox's own pid. */
static char *with_trialbox_pid(struct fixture *b, const char *const flags[], const char *probe_text)
{
        _cleanup_free_ char *script = xasprintf(
                "i=0; while [ ! -s PID ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; p=$(cat PID); %s",
                probe_text);
        const char *extra[16];
        size_t n = 0;
        for (size_t i = 0; flags && flags[i]; i++)
                extra[n++] = flags[i];
        extra[n++] = "--";
        extra[n++] = "-c";
        extra[n++] = script;
        extra[n] = NULL;
        fixture_next_out(b);
        char *argv[64];
        tb_argv(argv, 64, "shell", b, extra);
        _cleanup_free_ char *outp = xasprintf("%s.stdout", b->out), *errp = xasprintf("%s.stderr", b->out);
        pid_t tb = spawn_argv(tb_env(NULL), argv, outp, errp);
        _cleanup_free_ char *tmp = path_in(b->repo, "PID.tmp"), *pidf = path_in(b->repo, "PID");
        _cleanup_free_ char *num = xasprintf("%d", (int)tb);
        write_text(tmp, num, 0644);
        ck_assert_int_eq(rename(tmp, pidf), 0);
        int status = wait_status(tb);
        _cleanup_free_ char *err = read_text(errp);
        ck_assert_msg(status == 0, "the probe's Trial ended with status %d: %s", status, err);
        unlink(pidf);
        return read_text(outp);
}

START_TEST(trialbox_s_own_process_is_out_of_reach)
{
        struct fixture b;
        fixture_new(&b);
        const char *probe_text =
                "[ -e /proc/$p ] && echo proc=seen || echo proc=unseen; "
                "kill -0 $p 2>/dev/null && echo signal=reached || echo signal=refused; "
                "tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null | grep -q 'trial''box run' && echo cmdline=read || echo cmdline=unread; "
                "[ -r /proc/$p/environ ] && echo environ=readable || echo environ=unreadable; ";
        _cleanup_free_ char *with_ptrace = xasprintf(
                "%s if command -v strace >/dev/null; then timeout 5 strace -qq -e trace=none -p $p >/dev/null 2>&1 "
                "&& echo ptrace=attached || echo ptrace=refused; else echo ptrace=refused; fi",
                probe_text);
        char *in = with_trialbox_pid(&b, NULL, with_ptrace);
        char *out = with_trialbox_pid(&b, EXTRA("--no-sandbox"), probe_text);
        assert_line(in, "proc=unseen");
        assert_line(in, "signal=refused");
        assert_line(in, "cmdline=unread");
        assert_line(in, "environ=unreadable");
        assert_line(in, "ptrace=refused");
        assert_line(out, "proc=seen");
        assert_line(out, "signal=reached");
        assert_line(out, "cmdline=read");
        free(in);
        free(out);
        fixture_free(&b);
}
END_TEST

/* ---- file descriptors ---- */

/* Run a Trial of `harness` with a clean fd table (and `keep` as fd 9);
 * while its session sleeps, count what trialbox itself holds open. */
static char *fd_probe(struct fixture *b, const char *harness, char *const env[], int keep, size_t *tb_fds,
                      bool *tb_has_login_fd)
{
        const char *script = "echo \"fds=$(ls /proc/self/fd | sort -n | tr '\\n' ' ')\"; "
                             "(echo through-fd-9 >&9) 2>/dev/null && echo fd9=writable || echo fd9=closed; "
                             "touch READY; sleep 0.3";
        fixture_next_out(b);
        char *argv[64];
        tb_argv(argv, 64, harness, b, EXTRA("--harness-bin", "/bin/sh", "--", "-c", script));
        _cleanup_free_ char *outp = xasprintf("%s.stdout", b->out), *errp = xasprintf("%s.stderr", b->out);
        _cleanup_free_ char *ready = path_in(b->repo, "READY");
        unlink(ready);
        pid_t tb = spawn(tb_env(env), argv, &(struct tb_spawn_io){ .out = outp, .err = errp, .keep_fd = keep, .close_fds = true });
        ck_assert_msg(wait_for_file(ready, 20000), "the %s session never became ready", harness);
        _cleanup_free_ char *fd_dir = xasprintf("/proc/%d/fd", (int)tb);
        DIR *d = opendir(fd_dir);
        struct dirent *e;
        *tb_fds = 0;
        *tb_has_login_fd = false;
        while (d && (e = readdir(d))) {
                if (e->d_name[0] == '.' || atoi(e->d_name) <= 2)
                        continue;
                (*tb_fds)++;
                char link[4096] = "", p[4400];
                snprintf(p, sizeof p, "%s/%s", fd_dir, e->d_name);
                ssize_t k = readlink(p, link, sizeof link - 1);
                if (k > 0)
                        link[k] = '\0';
                *tb_has_login_fd = *tb_has_login_fd || strstr(link, "inotify") || strstr(link, "/.lock");
        }
        if (d)
                closedir(d);
        int status = wait_status(tb);
        _cleanup_free_ char *err = read_text(errp);
        ck_assert_msg(status == 0, "the %s Trial ended with status %d: %s", harness, status, err);
        unlink(ready);
        return read_text(outp);
}

START_TEST(the_session_holds_none_of_trialbox_s_open_fds)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *codex_home = path_in(b.dir, "codex");
        _cleanup_free_ char *codex_auth = path_in(codex_home, "auth.json");
        _cleanup_free_ char *state = path_in(b.dir, "state");
        _cleanup_free_ char *grok = path_in(state, "trialbox/trials/grok");
        _cleanup_free_ char *grok_auth = path_in(grok, "auth.json");
        ck_assert_int_eq(mkdir_p(codex_home, 0700), 0);
        ck_assert_int_eq(mkdir_p(grok, 0700), 0);
        write_text(codex_auth, "{}", 0600);
        write_text(grok_auth, "{}", 0600);
        _cleanup_free_ char *env_codex = xasprintf("CODEX_HOME=%s", codex_home);
        _cleanup_free_ char *env_state = xasprintf("XDG_STATE_HOME=%s", state);
        /* shell: pipes and a signalfd; codex: an inotify watch on its
         * synced login; grok: the Trials home's lock. */
        const char *harnesses[] = { "shell", "codex", "grok" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(harnesses); i++) {
                size_t held;
                bool login_fd;
                char *in = fd_probe(&b, harnesses[i], ENV(env_codex, env_state), -1, &held, &login_fd);
                ck_assert_msg(has_line(in, "fds=0 1 2 3 "), "a %s session holds fds of trialbox's: %s", harnesses[i], in);
                /* Positive control: trialbox did hold fds while the session ran. */
                ck_assert_msg(held >= 2, "trialbox held only %zu fds during the %s session", held, harnesses[i]);
                if (i > 0)
                        ck_assert_msg(login_fd, "trialbox held no login fd (inotify, lock) during the %s session",
                                      harnesses[i]);
                free(in);
        }
        fixture_free(&b);
}
END_TEST

START_TEST(an_fd_trialbox_inherited_does_not_reach_the_session)
{
        struct fixture b;
        fixture_new(&b);
        /* A caller's log file, opened without O_CLOEXEC, outside every bind.
         * bwrap passes on every fd it gets: trialbox must not hand it any
         * but its own status fd. */
        _cleanup_free_ char *log = path_in(b.dir, "caller.log");
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        ck_assert_int_ge(fd, 0);
        size_t held;
        bool login_fd;
        char *in = fd_probe(&b, "shell", NULL, fd, &held, &login_fd);
        _cleanup_free_ char *got = read_text(log);

        /* Positive control: the probe finds an inherited fd 9 where one is. */
        _cleanup_free_ char *ctl_out = path_in(b.dir, "ctl.out"), *ctl_err = path_in(b.dir, "ctl.err");
        pid_t p = spawn(NULL, (char *[]){ "/bin/sh", "-c", "(: >&9) 2>/dev/null && echo fd9=writable", NULL },
                        &(struct tb_spawn_io){ .out = ctl_out, .err = ctl_err, .keep_fd = fd, .close_fds = true });
        ck_assert_int_eq(wait_status(p), 0);
        _cleanup_free_ char *ctl = read_text(ctl_out);
        close(fd);
        assert_line(ctl, "fd9=writable");

        ck_assert_msg(strcmp(got, "") == 0, "the session wrote to a host file through an fd trialbox inherited: '%s'",
                      got);
        assert_line(in, "fd9=closed");
        assert_line(in, "fds=0 1 2 3 ");
        free(in);
        fixture_free(&b);
}
END_TEST

/* ---- secrets in the environment and in other Harnesses' Credentials ---- */

START_TEST(no_host_environment_secret_reaches_the_session)
{
        struct fixture b;
        fixture_new(&b);
        static const char *const names[] = {
                "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "XAI_API_KEY",
                "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GITHUB_TOKEN", "GH_TOKEN",
                "NPM_TOKEN", "HF_TOKEN", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS",
                "KUBECONFIG", "DOCKER_HOST", "DATABASE_URL", "CODEX_HOME", "GROK_HOME", "CLAUDE_CODE_OAUTH_TOKEN",
        };
        _cleanup_free_ char *m = marker("tbsecretenv");
        char *env[64];
        size_t n = 0;
        for (size_t i = 0; i < TB_ARRAY_SIZE(names); i++)
                env[n++] = xasprintf("%s=%s-%zu", names[i], m, i);
        env[n++] = "TRIALBOX_ENV_ALLOW";
        env[n] = NULL;
        /* The session counts values holding the marker, in its own
         * environment and in every process's it can read (bwrap's too), and
         * names each of those variables it has. */
        struct strbuf sb = { 0 };
        strbuf_addf(&sb,
                    "m='%.6s''%s'; echo \"env=$(env | grep -c \"$m\")\"; "
                    "n=0; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\" 2>/dev/null | grep -q \"$m\" && n=$((n+1)); done; "
                    "echo procs=$n; for v in",
                    m, m + 6);
        for (size_t i = 0; i < TB_ARRAY_SIZE(names); i++)
                strbuf_addf(&sb, " %s", names[i]);
        strbuf_add(&sb, "; do eval \"[ -n \\\"\\${$v+set}\\\" ]\" && echo \"set $v\"; done; echo end");
        char *in = sandboxed(&b, env, sb.s);
        assert_line(in, "env=0");
        assert_line(in, "procs=0");
        for (size_t i = 0; i < TB_ARRAY_SIZE(names); i++) {
                _cleanup_free_ char *set = xasprintf("set %s", names[i]);
                ck_assert_msg(!has_line(in, set), "%s reached the session", names[i]);
        }
        assert_line(in, "end");
        /* Positive control: a variable the user allows does reach it, and
         * the probe sees it. */
        env[n - 1] = "TRIALBOX_ENV_ALLOW=GITHUB_TOKEN";
        char *allowed = sandboxed(&b, env, sb.s);
        assert_line(allowed, "env=1");
        assert_line(allowed, "set GITHUB_TOKEN");
        free(sb.s);
        for (size_t i = 0; i + 1 < n; i++)
                free(env[i]);
        free(in);
        free(allowed);
        fixture_free(&b);
}
END_TEST

START_TEST(the_ssh_agent_socket_is_unreachable)
{
        struct fixture b;
        fixture_new(&b);
        /* Where ssh-agent puts it: /tmp/ssh-XXXX/agent.PID, listening. */
        _cleanup_free_ char *m = marker("ssh");
        _cleanup_free_ char *dir = xasprintf("/tmp/%s", m);
        _cleanup_free_ char *sock = xasprintf("%s/agent.%d", dir, (int)getpid());
        ck_assert_int_eq(mkdir(dir, 0700), 0);
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
        ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
        ck_assert_int_eq(listen(s, 1), 0);
        _cleanup_free_ char *env = xasprintf("SSH_AUTH_SOCK=%s", sock);
        _cleanup_free_ char *script = xasprintf(
                "[ -S '%s' ] && echo socket=there || echo socket=absent; echo \"var=${SSH_AUTH_SOCK:+set}\"; "
                "[ -n \"$SSH_AUTH_SOCK\" ] && [ -S \"$SSH_AUTH_SOCK\" ] && echo via-var=there || echo via-var=absent",
                sock);
        char *in = sandboxed(&b, ENV(env, "TRIALBOX_ENV_ALLOW"), script);
        /* Even when the user lets the variable through, the socket is not there. */
        char *allowed = sandboxed(&b, ENV(env, "TRIALBOX_ENV_ALLOW=SSH_AUTH_SOCK"), script);
        char *out = unsandboxed(&b, ENV(env), script);
        close(s);
        unlink(sock);
        rmdir(dir);
        assert_line(in, "socket=absent");
        assert_line(in, "var=");
        assert_line(allowed, "var=set");
        assert_line(allowed, "via-var=absent");
        assert_line(out, "socket=there");
        free(in);
        free(allowed);
        free(out);
        fixture_free(&b);
}
END_TEST

START_TEST(no_other_harness_s_credentials_reach_the_session)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *m = marker("tbcred");
        _cleanup_free_ char *cfg = path_in(b.dir, "config");
        _cleanup_free_ char *creds_dir = path_in(cfg, "trialbox");
        _cleanup_free_ char *creds = path_in(creds_dir, "credentials.json");
        ck_assert_int_eq(mkdir_p(creds_dir, 0700), 0);
        _cleanup_free_ char *json = xasprintf(
                "{\"claude\": {\"setup_token\": \"%s-claude\"}, \"opencode\": {\"api_key\": \"%s-opencode\"}, "
                "\"gemini\": {\"api_key\": \"%s-gemini\"}}",
                m, m, m);
        write_text(creds, json, 0600);
        _cleanup_free_ char *codex_home = path_in(b.dir, "codex");
        _cleanup_free_ char *codex_auth = path_in(codex_home, "auth.json");
        ck_assert_int_eq(mkdir_p(codex_home, 0700), 0);
        write_text(codex_auth, "{\"codex\": \"login\"}", 0600);
        _cleanup_free_ char *env_cfg = xasprintf("XDG_CONFIG_HOME=%s", cfg);
        _cleanup_free_ char *env_codex = xasprintf("CODEX_HOME=%s", codex_home);
        /* The session counts the secrets in its environment, in the files it
         * can reach (its home, /tmp, the repository, /sandbox), and looks
         * for the Credentials file itself. */
        struct strbuf sb = { 0 };
        strbuf_addf(&sb,
                    "m='%.5s''%s'; echo \"env=$(env | grep -c \"$m\")\"; "
                    "echo \"files=$(grep -rl \"$m\" \"$HOME\" /tmp \"$PWD\" /sandbox 2>/dev/null | wc -l)\"; ",
                    m, m + 5);
        probe_exists(&sb, creds);
        char *shell = sandboxed(&b, ENV(env_cfg), sb.s);
        char *codex = run_script(&b, "codex", ENV(env_cfg, env_codex), NULL, sb.s);
        /* The same with the file given by --credentials. */
        char *given = run_script(&b, "codex", ENV(env_codex), EXTRA("--credentials", creds), sb.s);
        char *results[] = { shell, codex, given };
        for (size_t i = 0; i < TB_ARRAY_SIZE(results); i++) {
                assert_line(results[i], "env=0");
                assert_line(results[i], "files=0");
                assert_hidden(results[i], creds);
        }
        /* Positive control: Claude's session gets its own token, and only it. */
        char *claude = run_script(&b, "claude", ENV(env_cfg), NULL, sb.s);
        assert_line(claude, "env=1");
        assert_line(claude, "files=0");
        assert_hidden(claude, creds);
        for (size_t i = 0; i < TB_ARRAY_SIZE(results); i++)
                free(results[i]);
        free(claude);
        free(sb.s);
        fixture_free(&b);
}
END_TEST

/* ---- nothing of the session survives it ---- */

START_TEST(a_double_forked_setsid_daemon_dies_with_the_session)
{
        struct fixture b;
        fixture_new(&b);
        char num[64];
        sleep_number(num, sizeof num);
        /* It ignores the polite signals, is in a session of its own and
         * its parent is gone; the session's shell exits at once. */
        _cleanup_free_ char *script = xasprintf(
                "setsid sh -c '(trap \"\" HUP TERM INT; exec sleep %s) & ' </dev/null >/dev/null 2>&1; "
                "nohup sleep %s </dev/null >/dev/null 2>&1 & "
                "i=0; n=0; while [ $n -lt 2 ] && [ $i -lt 200 ]; do n=0; for d in /proc/[0-9]*; do "
                "[ \"$(cat $d/comm 2>/dev/null)\" = sleep ] && n=$((n+1)); done; i=$((i+1)); sleep 0.01; done; echo running=$n",
                num, num);
        char *in = sandboxed(&b, NULL, script);
        assert_line(in, "running=2"); /* they did start */
        bool gone = host_processes_gone(num, "sleep", 2000);
        if (!gone)
                kill_sleepers(num);
        ck_assert_msg(gone, "a daemon of the session outlived it");
        /* Positive control: unsandboxed, the same daemons do survive, and
         * the probe sees them. */
        char *out = unsandboxed(&b, NULL, script);
        pid_t p[4];
        size_t left = 0;
        for (int i = 0; i < 100 && (left = host_pids(num, "sleep", NULL, p, 4)) < 2; i++)
                usleep(20000);
        kill_sleepers(num);
        ck_assert_msg(left == 2, "positive control: %zu of the unsandboxed daemons are seen on the host", left);
        free(in);
        free(out);
        fixture_free(&b);
}
END_TEST

START_TEST(killing_trialbox_with_sigkill_leaves_nothing_of_the_session_running)
{
        struct fixture b;
        fixture_new(&b);
        char num[64];
        sleep_number(num, sizeof num);
        _cleanup_free_ char *script = xasprintf(
                "setsid sh -c '(trap \"\" HUP TERM INT; exec sleep %s) & ' </dev/null >/dev/null 2>&1; "
                "sleep %s & touch READY; wait",
                num, num);
        fixture_next_out(&b);
        char *argv[64];
        tb_argv(argv, 64, "shell", &b, EXTRA("--", "-c", script));
        _cleanup_free_ char *outp = path_in(b.dir, "stdout"), *errp = path_in(b.dir, "stderr");
        _cleanup_free_ char *ready = path_in(b.repo, "READY");
        pid_t tb = spawn_argv(tb_env(NULL), argv, outp, errp);
        ck_assert_msg(wait_for_file(ready, 20000), "the session never became ready");
        pid_t p[4];
        for (int i = 0; i < 200 && host_pids(num, "sleep", NULL, p, 4) < 2; i++)
                usleep(10000);
        size_t before = host_pids(num, "sleep", NULL, p, 4);
        ck_assert_int_eq(kill(tb, SIGKILL), 0);
        ck_assert_int_eq(wait_status(tb), 128 + SIGKILL);
        bool gone = host_processes_gone(num, "sleep", 3000);
        size_t left = host_pids(num, "sleep", NULL, p, 4);
        _cleanup_free_ char *bwrap_cmd = xasprintf("sleep %s", num);
        pid_t bw[4];
        size_t bwraps = host_pids(bwrap_cmd, "bwrap", NULL, bw, 4);
        if (!gone)
                kill_sleepers(num);
        ck_assert_msg(before == 2, "positive control: %zu of the session's processes seen before the kill", before);
        ck_assert_msg(gone, "%zu processes of the session outlived trialbox killed with SIGKILL", left);
        ck_assert_msg(bwraps == 0, "a bwrap of the session outlived trialbox");
        fixture_free(&b);
}
END_TEST

START_TEST(the_session_has_no_controlling_terminal)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *slave = NULL;
        int master = pty_open(&slave);
        /* The terminal is trialbox's controlling terminal and its stdin.
         * --new-session takes it away, so TIOCSTI (typing into the user's
         * shell, CVE-2017-5226) is refused; CAP_SYS_ADMIN would bypass that. */
        const char *script =
                "(exec 3</dev/tty) 2>/dev/null && echo tty=controlling || echo tty=none; "
                "if command -v python3 >/dev/null 2>&1; then python3 -c 'import fcntl, termios\n"
                "try:\n    fcntl.ioctl(0, termios.TIOCSTI, b\"#\"); print(\"tiocsti=typed\")\n"
                "except OSError:\n    print(\"tiocsti=refused\")' 2>/dev/null || echo tiocsti=refused; "
                "else echo tiocsti=refused; fi";
        char *outs[2];
        for (int i = 0; i < 2; i++) {
                fixture_next_out(&b);
                char *argv[64];
                tb_argv(argv, 64, "shell", &b,
                        i == 0 ? EXTRA("--", "-c", script) : EXTRA("--no-sandbox", "--", "-c", script));
                _cleanup_free_ char *outp = xasprintf("%s.stdout", b.out), *errp = xasprintf("%s.stderr", b.out);
                pid_t tb = spawn(tb_env(NULL), argv,
                                 &(struct tb_spawn_io){ .out = outp, .err = errp, .tty = slave, .close_fds = true });
                int status = wait_status(tb);
                _cleanup_free_ char *err = read_text(errp);
                ck_assert_msg(status == 0, "the Trial ended with status %d: %s", status, err);
                outs[i] = read_text(outp);
        }
        close(master);
        assert_line(outs[0], "tty=none");
        assert_line(outs[0], "tiocsti=refused");
        /* Positive control: unsandboxed, the session does have it. */
        assert_line(outs[1], "tty=controlling");
        free(outs[0]);
        free(outs[1]);
        fixture_free(&b);
}
END_TEST

/* ---- privileges ---- */

/* bwrap run by root (not setuid, no user namespace) keeps every capability
 * for the session unless told --cap-drop ALL. */
START_TEST(the_session_holds_no_capabilities)
{
        struct fixture b;
        fixture_new(&b);
        const char *script = "grep -E '^Cap(Prm|Eff|Amb):' /proc/self/status | tr -d '\\t'";
        char *in = sandboxed(&b, NULL, script);
        char *out = unsandboxed(&b, NULL, script);
        assert_line(in, "CapPrm:0000000000000000");
        assert_line(in, "CapEff:0000000000000000");
        assert_line(in, "CapAmb:0000000000000000");
        if (is_root())
                ck_assert_msg(!has_line(out, "CapEff:0000000000000000"),
                              "positive control: root unsandboxed shows no capabilities:\n%s", out);
        else
                skip_note("the_session_holds_no_capabilities", "not root: no capabilities to see unsandboxed");
        free(in);
        free(out);
        fixture_free(&b);
}
END_TEST

START_TEST(a_read_only_bind_cannot_be_remounted_writable)
{
        struct fixture b;
        fixture_new(&b);
        /* A toolchain folder of the test's own: bound read-only. With
         * CAP_SYS_ADMIN, root in the session could remount it writable. */
        _cleanup_free_ char *bin = path_in(b.dir, "toolchain/bin");
        _cleanup_free_ char *planted = path_in(bin, "planted");
        ck_assert_int_eq(mkdir_p(bin, 0755), 0);
        _cleanup_free_ char *path = xasprintf("PATH=%s:%s", bin, getenv("PATH"));
        _cleanup_free_ char *script = xasprintf(
                "mount -o remount,bind,rw '%s' 2>/dev/null && echo remount=done || echo remount=refused; "
                "touch '%s' 2>/dev/null && echo write=done || echo write=refused",
                bin, planted);
        char *in = sandboxed(&b, ENV(path), script);
        bool planted_on_host = access(planted, F_OK) == 0;
        assert_line(in, "remount=refused");
        assert_line(in, "write=refused");
        ck_assert_msg(!planted_on_host, "the session wrote through a read-only bind to the host");
        free(in);
        fixture_free(&b);
}
END_TEST

START_TEST(the_host_kernel_settings_refuse_writes)
{
        struct fixture b;
        fixture_new(&b);
        /* bwrap covers /proc/sys read-only only when access("/proc/sys",
         * W_OK) succeeds, which for root it does not (the folder is r-x),
         * while the files in it are writable by uid 0 even without any
         * capability. access(2) only here: nothing is written. */
        const char *script = "for f in /proc/sys/kernel/domainname /proc/sys/kernel/core_pattern /proc/sys/vm/drop_caches; do "
                             "[ -w $f ] && echo \"writable $f\" || echo \"refused $f\"; done";
        char *in = sandboxed(&b, NULL, script);
        char *out = unsandboxed(&b, NULL, script);
        assert_line(in, "refused /proc/sys/kernel/domainname");
        assert_line(in, "refused /proc/sys/kernel/core_pattern");
        assert_line(in, "refused /proc/sys/vm/drop_caches");
        if (is_root())
                assert_line(out, "writable /proc/sys/kernel/domainname");
        else
                skip_note("the_host_kernel_settings_refuse_writes", "not root: they are not writable unsandboxed");
        free(in);
        free(out);
        fixture_free(&b);
}
END_TEST

START_TEST(setuid_programs_cannot_raise_the_session_s_privileges)
{
        struct fixture b;
        fixture_new(&b);
        const char *script = "grep '^NoNewPrivs:' /proc/self/status | tr -d '\\t'";
        char *in = sandboxed(&b, NULL, script);
        assert_line(in, "NoNewPrivs:1");
        _cleanup_free_ char *ours = read_text("/proc/self/status");
        if (ours && strstr(ours, "NoNewPrivs:\t0")) {
                char *out = unsandboxed(&b, NULL, script);
                assert_line(out, "NoNewPrivs:0");
                free(out);
        } else {
                skip_note("setuid_programs_cannot_raise_the_session_s_privileges", "the test itself runs with no_new_privs");
        }
        free(in);
        fixture_free(&b);
}
END_TEST

/* ---- the kernel's surface (confine.h) ---- */

/* The kernel probe, copied into the repository (bound in every Trial);
 * returns the script that runs it. */
static char *with_kernel_probe(struct fixture *b)
{
        _cleanup_free_ char *dest = path_in(b->repo, "kernel_probe");
        size_t n = 0;
        _cleanup_free_ char *bin = read_all(KERNEL_PROBE, &n, true);
        ck_assert_msg(bin != NULL, "cannot read the kernel probe '%s'", KERNEL_PROBE);
        int fd = open(dest, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, bin, n), (ssize_t)n);
        close(fd);
        return xasprintf("'%s'", dest);
}

START_TEST(the_session_cannot_reach_keyrings_bpf_perf_userfaultfd_io_uring_or_ptrace_attach)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *probe = with_kernel_probe(&b);
        char *in = sandboxed(&b, NULL, probe);
        char *out = unsandboxed(&b, NULL, probe);
        assert_line(in, "keyctl=ENOSYS");
        assert_line(in, "add_key=ENOSYS");
        assert_line(in, "bpf=EPERM");
        assert_line(in, "perf_event_open=EPERM");
        assert_line(in, "userfaultfd=EPERM");
        assert_line(in, "io_uring_setup=ENOSYS");
        assert_line(in, "ptrace_attach=EPERM");
        /* Positive control: the same calls, unfiltered, get past the
         * point where the filter stops them. */
        assert_line(out, "keyctl=ok");
        assert_line(out, "add_key=ok");
        assert_line(out, "bpf=EINVAL");
        assert_line(out, "perf_event_open=EFAULT");
        assert_line(out, "io_uring_setup=EFAULT");
        assert_line(out, "ptrace_attach=ok");
        free(in);
        free(out);
        fixture_free(&b);
}
END_TEST

START_TEST(the_session_cannot_mount_or_make_a_user_namespace)
{
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *probe = with_kernel_probe(&b);
        _cleanup_free_ char *script =
                xasprintf("%s; unshare -U true 2>/dev/null && echo unshare-U=ok || echo unshare-U=refused; "
                          "bwrap --unshare-user --ro-bind / / true 2>/dev/null && echo nested=ok || echo nested=refused",
                          probe);
        char *in = sandboxed(&b, NULL, script);
        char *out = unsandboxed(&b, NULL, script);
        assert_line(in, "mount=EPERM");
        assert_line(in, "umount2=EPERM");
        assert_line(in, "fsopen=ENOSYS");
        assert_line(in, "clone3=ENOSYS");
        assert_line(in, "unshare_user=EPERM");
        assert_line(in, "unshare-U=refused");
        assert_line(in, "nested=refused");
        /* Positive control: unfiltered, the path is looked up before any
         * permission is asked, and a user namespace can be made. */
        assert_line(out, "mount=ENOENT");
        assert_line(out, "umount2=ENOENT");
        assert_line(out, "clone3=EINVAL");
        ck_assert_msg(!has_line(out, "fsopen=ENOSYS"), "positive control: fsopen is there unfiltered:\n%s", out);
        if (host_can("unshare -U true"))
                assert_line(out, "unshare_user=ok");
        else
                skip_note("the_session_cannot_mount_or_make_a_user_namespace", "the host makes no user namespace");
        free(in);
        free(out);
        fixture_free(&b);
}
END_TEST

START_TEST(node_git_python_and_a_compiler_work_under_the_filter)
{
        struct fixture b;
        fixture_new(&b);
        const char *script =
                "node -e 'console.log(\"node=\" + (6 * 7))'; "
                "python3 -c 'import os, tempfile; tempfile.mkstemp(); print(\"python=\" + str(6 * 7))'; "
                "git init -q g && cd g && echo hi > f && git add f && "
                "git -c user.name=t -c user.email=t@example.com commit -qm one && git log --format=git=%s; cd ..; "
                "printf '#include <stdio.h>\\nint main(void){puts(\"cc=hello\");return 0;}\\n' > h.c && "
                "cc -o h h.c && ./h";
        char *in = sandboxed(&b, NULL, script);
        assert_line(in, "node=42");
        assert_line(in, "python=42");
        assert_line(in, "git=one");
        assert_line(in, "cc=hello");
        free(in);
        fixture_free(&b);
}
END_TEST

START_TEST(keys_in_trialbox_s_session_keyring_are_invisible_to_the_session)
{
        struct fixture b;
        fixture_new(&b);
        /* A session keyring of this test's own, holding a key only a
         * possessor may see: the session sees it in /proc/keys (no keyctl
         * needed) only if it shares trialbox's session keyring. */
        _cleanup_free_ char *desc = marker("keyring");
        ck_assert_int_ge(syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "trialbox-test"), 0);
        long key = syscall(SYS_add_key, "user", desc, "secret", 6, KEY_SPEC_SESSION_KEYRING);
        ck_assert_int_ge(key, 0);
        ck_assert_int_eq(syscall(SYS_keyctl, KEYCTL_SETPERM, key, 0x3f000000), 0); /* possessor: all; else none */
        _cleanup_free_ char *script = xasprintf("grep -q '%s' /proc/keys && echo key=visible || echo key=hidden", desc);
        char *in = sandboxed(&b, NULL, script);
        char *out = unsandboxed(&b, NULL, script);
        assert_line(in, "key=hidden");
        assert_line(out, "key=visible");
        free(in);
        free(out);
        fixture_free(&b);
}
END_TEST

START_TEST(the_session_tmpdir_is_never_a_prefix_of_its_home)
{
        struct fixture b;
        fixture_new(&b);
        /* The output folder is under /tmp (the fixture's), so the home is. */
        ck_assert(path_is_under(b.dir, "/tmp"));
        const char *script = "echo \"tmpdir=$TMPDIR\"; echo \"home=$HOME\"; "
                             "case \"$HOME/\" in \"${TMPDIR%/}\"/*) echo prefix=yes;; *) echo prefix=no;; esac; "
                             "f=$(mktemp) && echo made > \"$f\" && echo mktemp=ok";
        char *in = sandboxed(&b, NULL, script);
        assert_line(in, "prefix=no");
        assert_line(in, "mktemp=ok");
        ck_assert_msg(!has_line(in, "tmpdir="), "TMPDIR is empty:\n%s", in);
        free(in);
        fixture_free(&b);
}
END_TEST

/* Run `script` as a claude Trial (its plugin declares TB_HARNESS_NEEDS_USERNS:
 * Claude Code runs its own sandbox), with a setup token in a Credentials file
 * of its own. Returns what the session printed (malloc'd). */
static char *as_claude(struct fixture *b, const char *script)
{
        _cleanup_free_ char *cfg = path_in(b->dir, "claude-config");
        write_in(cfg, "trialbox/credentials.json", "{\"claude\": {\"setup_token\": \"tbtest-token\"}}", 0600);
        _cleanup_free_ char *env_cfg = xasprintf("XDG_CONFIG_HOME=%s", cfg);
        return run_script(b, "claude", ENV(env_cfg), NULL, script);
}

/* A Harness that runs its own sandbox (Codex, Claude Code: bwrap with a new
 * pid namespace and a fresh /proc) keeps nested user namespaces, with the
 * filter on. */
START_TEST(a_harness_s_own_sandbox_with_a_fresh_proc_works_when_it_needs_nested_user_namespaces)
{
        if (is_root()) {
                skip_note("a_harness_s_own_sandbox_…", "root: a root session cannot map uid 0 for a nested sandbox");
                return;
        }
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *probe = with_kernel_probe(&b);
        _cleanup_free_ char *script = xasprintf(
                "%s; bwrap --unshare-user --unshare-pid --die-with-parent --ro-bind / / --proc /proc --dev /dev "
                "--tmpfs /tmp sh -c 'test -r /proc/self/status && echo nested=ok' || echo nested=refused",
                probe);
        char *in = as_claude(&b, script);
        assert_line(in, "nested=ok");
        assert_line(in, "unshare_user=ok");
        /* The rest of the filter still holds. */
        assert_line(in, "keyctl=ENOSYS");
        assert_line(in, "bpf=EPERM");
        free(in);
        fixture_free(&b);
}
END_TEST

/* The real Codex's sandbox (npm @openai/codex) inside a Trial whose output
 * folder is under /tmp: CODEX_HOME must not lie under the temp folder, or
 * Codex makes no helper binaries and its first command fails. */
START_TEST(the_real_codex_sandbox_runs_inside_a_trial_under_tmp)
{
        if (!host_can("command -v codex >/dev/null")) {
                skip_note("the_real_codex_sandbox_runs_inside_a_trial_under_tmp", "codex is not installed");
                return;
        }
        if (is_root()) {
                skip_note("the_real_codex_sandbox_runs_inside_a_trial_under_tmp", "root: see its _unprivileged run");
                return;
        }
        struct fixture b;
        fixture_new(&b);
        _cleanup_free_ char *codex_home = path_in(b.dir, "codex");
        _cleanup_free_ char *codex_auth = path_in(codex_home, "auth.json");
        ck_assert_int_eq(mkdir_p(codex_home, 0700), 0);
        write_text(codex_auth, "{}", 0600);
        _cleanup_free_ char *env_codex = xasprintf("CODEX_HOME=%s", codex_home);
        fixture_next_out(&b);
        struct proc_result r;
        tb_run(&r, "codex", &b, ENV(env_codex),
               EXTRA("--", "sandbox", "--", "sh", "-c", "echo codex-sandbox=ok"));
        ck_assert_msg(r.status == 0 && has_line(r.out, "codex-sandbox=ok"),
                      "codex sandbox in a Trial ended with status %d:\n%s\n%s", r.status, r.out, r.err);
        proc_result_free(&r);
        fixture_free(&b);
}
END_TEST

/* Claude Code's own sandbox (npm @anthropic-ai/sandbox-runtime, `srt`; it
 * needs rg and socat): bwrap with a new pid namespace and a fresh /proc,
 * refused while the Trial's /proc has a read-only cover over /proc/sys. */
START_TEST(the_real_claude_sandbox_runtime_mounts_its_proc_inside_a_trial)
{
        if (!host_can("command -v srt && command -v rg && command -v socat") || is_root()) {
                skip_note("the_real_claude_sandbox_runtime_…",
                          is_root() ? "root: see its _unprivileged run" : "srt, rg or socat is not installed");
                return;
        }
        struct fixture b;
        fixture_new(&b);
        char *in = as_claude(&b, "srt -c 'echo srt=ok' 2>&1");
        assert_line(in, "srt=ok");
        free(in);
        fixture_free(&b);
}
END_TEST

/* ---- who the session runs as ---- */

/* `trialbox run --harness shell --repo R --output-dir O FLAGS... -- -c SCRIPT`,
 * without tb_argv()'s --root-session. */
static void run_as(struct proc_result *r, const struct fixture *f, const char *const flags[], const char *script)
{
        char *argv[32];
        size_t n = 0;
        const char *base[] = { TRIALBOX_BIN, "run", "--harness", "shell", "--repo", f->repo, "--output-dir", f->out };
        for (size_t i = 0; i < TB_ARRAY_SIZE(base); i++)
                argv[n++] = (char *)base[i];
        for (size_t i = 0; flags && flags[i]; i++)
                argv[n++] = (char *)flags[i];
        argv[n++] = "--";
        argv[n++] = "-c";
        argv[n++] = (char *)script;
        argv[n] = NULL;
        run_argv(r, tb_env(NULL), argv);
}

START_TEST(as_root_a_root_owned_repository_without_user_or_root_session_is_refused_in_one_line)
{
        if (!is_root()) {
                skip_note(__func__, "not root");
                return;
        }
        struct fixture f;
        fixture_new(&f);
        struct proc_result r;
        run_as(&r, &f, NULL, "touch ran");
        ck_assert_msg(r.status == 2, "status %d, stderr: %s", r.status, r.err);
        ck_assert_msg(one_line(r.err), "not one line: %s", r.err);
        ck_assert_msg(strstr(r.err, "--user") && strstr(r.err, "--root-session"), "does not name both ways out: %s",
                      r.err);
        _cleanup_free_ char *ran = path_in(f.repo, "ran");
        ck_assert_msg(access(ran, F_OK) < 0, "the session ran");
        ck_assert_msg(access(f.out, F_OK) < 0, "the output folder was made");
        proc_result_free(&r);
        /* --user root is a root session in disguise; both flags at once are one too many. */
        run_as(&r, &f, (const char *const[]){ "--user", "root", NULL }, "touch ran");
        ck_assert_msg(r.status == 2 && one_line(r.err) && strstr(r.err, "--root-session"), "--user root: %d %s",
                      r.status, r.err);
        proc_result_free(&r);
        run_as(&r, &f, (const char *const[]){ "--user", "nobody", "--root-session", NULL }, "touch ran");
        ck_assert_msg(r.status == 2 && one_line(r.err), "--user with --root-session: %d %s", r.status, r.err);
        proc_result_free(&r);
        /* --user whose user cannot write the repository: refused, with the fix. */
        run_as(&r, &f, (const char *const[]){ "--user", "nobody", NULL }, "touch ran");
        ck_assert_msg(r.status == 2 && one_line(r.err) && strstr(r.err, "chown -R nobody"), "--user nobody: %d %s",
                      r.status, r.err);
        ck_assert_msg(access(ran, F_OK) < 0 && access(f.out, F_OK) < 0, "something was run or written");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* Started as root on a repository owned by nobody (or with --user nobody):
 * the session is nobody's, and so is all it makes. */
START_TEST(as_root_the_session_runs_as_the_repository_s_owner_or_the_user_given)
{
        if (!is_root()) {
                skip_note(__func__, "not root");
                return;
        }
        const char *const *how[] = { NULL, (const char *const[]){ "--user", "nobody", NULL },
                                     (const char *const[]){ "--user", "65534", NULL } };
        for (size_t i = 0; i < TB_ARRAY_SIZE(how); i++) {
                struct fixture f;
                fixture_new(&f);
                ck_assert(chown(f.repo, 65534, 65534) == 0);
                struct proc_result r;
                run_as(&r, &f, how[i],
                       "id -u > uid; echo \"$USER\" > user; cp /bin/sh ./rootsh && chmod 4755 ./rootsh; "
                       "cat /etc/shadow > shadow 2>/dev/null; echo $? > shadow_rc; touch ~/made; chmod 777 ~");
                ck_assert_msg(r.status == 0, "case %zu: status %d: %s", i, r.status, r.err);
                _cleanup_free_ char *uid = path_in(f.repo, "uid"), *user = path_in(f.repo, "user");
                _cleanup_free_ char *sh = path_in(f.repo, "rootsh"), *rc = path_in(f.repo, "shadow_rc");
                _cleanup_free_ char *u = read_text(uid), *name = read_text(user), *src = read_text(rc);
                ck_assert_msg(u && strcmp(u, "65534\n") == 0, "case %zu: the session ran as uid %s", i, u);
                ck_assert_msg(name && strcmp(name, "nobody\n") == 0, "case %zu: USER is %s", i, name);
                ck_assert_msg(src && strcmp(src, "0\n") != 0, "case %zu: the session read /etc/shadow", i);
                struct stat st;
                ck_assert_msg(lstat(sh, &st) < 0 || st.st_uid == 65534, "case %zu: a setuid shell owned by %u", i,
                              (unsigned)st.st_uid);
                /* The output folder: root's, searchable only; the home
                 * nobody's, back to 0700. */
                ck_assert(lstat(f.out, &st) == 0);
                ck_assert_msg(st.st_uid == 0 && (st.st_mode & 07777) == 0711, "case %zu: output %o uid %u", i,
                              st.st_mode & 07777, (unsigned)st.st_uid);
                _cleanup_free_ char *home = path_in(f.out, "home");
                ck_assert(lstat(home, &st) == 0);
                ck_assert_msg((st.st_mode & 07777) == 0700, "case %zu: home mode %o after the session", i,
                              st.st_mode & 07777);
                _cleanup_free_ char *made = path_in(home, "made");
                ck_assert_msg(access(made, F_OK) == 0, "case %zu: the session could not write its home", i);
                proc_result_free(&r);
                fixture_free(&f);
        }
}
END_TEST

/* --root-session: an accepted root session (as root), a no-op otherwise;
 * either way the output folder is 0700 and the home is 0700 again after. */
START_TEST(root_session_runs_as_trialbox_s_own_user_with_output_and_home_0700)
{
        struct fixture f;
        fixture_new(&f);
        struct proc_result r;
        run_as(&r, &f, (const char *const[]){ "--root-session", NULL }, "id -u > uid; chmod 777 ~");
        ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
        _cleanup_free_ char *uid = path_in(f.repo, "uid");
        _cleanup_free_ char *u = read_text(uid);
        char want[32];
        snprintf(want, sizeof want, "%u\n", (unsigned)getuid());
        ck_assert_msg(u && strcmp(u, want) == 0, "the session ran as uid %s", u);
        struct stat st;
        ck_assert(lstat(f.out, &st) == 0);
        ck_assert_msg((st.st_mode & 07777) == 0700, "output mode %o", st.st_mode & 07777);
        _cleanup_free_ char *home = path_in(f.out, "home");
        ck_assert(lstat(home, &st) == 0);
        ck_assert_msg((st.st_mode & 07777) == 0700, "home mode %o after the session", st.st_mode & 07777);
        proc_result_free(&r);
        if (!is_root()) { /* not root: no other user can be had */
                snprintf(f.out, sizeof f.out, "%s/out2", f.dir);
                run_as(&r, &f, (const char *const[]){ "--user", "root", NULL }, "touch ran");
                ck_assert_msg(r.status == 2 && one_line(r.err) && strstr(r.err, "only root"), "--user root: %d %s",
                              r.status, r.err);
                proc_result_free(&r);
        }
        fixture_free(&f);
}
END_TEST

/* ---- Trials are independent ---- */

/* Trial A makes a SysV shared memory segment and message queue, files in
 * /tmp and /dev/shm and a process, then waits; Trial B, meanwhile, looks
 * for each. (Keyrings: the seccomp filter denies keyctl and add_key, see
 * the_session_cannot_reach_keyrings_…, and each session gets a fresh one.) */
START_TEST(two_concurrent_trials_share_no_ipc_tmp_dev_shm_or_processes)
{
        if (!host_can("command -v ipcmk && command -v ipcs")) {
                skip_note(__func__, "no ipcmk/ipcs (util-linux)");
                return;
        }
        struct fixture a, b;
        fixture_new(&a);
        fixture_new(&b);
        chmod(a.repo, 0777);
        chmod(b.repo, 0777);
        _cleanup_free_ char *m = marker("tbindep");
        _cleanup_free_ char *script_a = xasprintf(
                "ipcmk -M 4096 > ipc 2>&1; ipcmk -Q >> ipc 2>&1; ipcs -m -q >> ipc; touch /tmp/%s /dev/shm/%s; "
                "sh -c 'while [ ! -e done ]; do sleep 0.05; done' %s-proc & "
                "touch ready; wait",
                m, m, m);
        char *argv_a[32];
        const char *const extra_a[] = { "--", "-c", script_a, NULL };
        tb_argv(argv_a, 32, "shell", &a, extra_a);
        _cleanup_free_ char *errp = path_in(a.dir, "a.err");
        pid_t pa = spawn_argv(tb_env(NULL), argv_a, "/dev/null", errp);
        _cleanup_free_ char *ready = path_in(a.repo, "ready"), *done = path_in(a.repo, "done");
        ck_assert_msg(wait_for_file(ready, 60000), "Trial A did not start");

        /* B: the marker spelled so that B's own command lines do not hold it. */
        size_t half = strlen(m) / 2;
        _cleanup_free_ char *m1 = xasprintf("%.*s", (int)half, m);
        _cleanup_free_ char *script_b = xasprintf(
                "M=%s; M=\"$M%s\"; ipcs -m -q | grep -c '^0x' > ipc_count; "
                "ls /tmp/\"$M\" /dev/shm/\"$M\" > files 2>/dev/null; "
                "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c '[%c]%s-proc' > procs; true",
                m1, m + half, m[0], m + 1); /* [t]bindep…: grep's own command line does not match */
        struct proc_result r;
        tb_run(&r, "shell", &b, NULL, (const char *const[]){ "--", "-c", script_b, NULL });
        write_text(done, "", 0644);
        int sa = wait_status(pa);
        ck_assert_msg(r.status == 0, "Trial B: status %d: %s", r.status, r.err);
        _cleanup_free_ char *a_err = read_text(errp);
        ck_assert_msg(sa == 0, "Trial A: status %d: %s", sa, a_err);

        _cleanup_free_ char *ipc_a_p = path_in(a.repo, "ipc");
        _cleanup_free_ char *ipc_a = read_text(ipc_a_p);
        ck_assert_msg(ipc_a && strstr(ipc_a, "Shared memory id") && strstr(ipc_a, "Message queue id"),
                      "Trial A could not make its IPC objects: %s", ipc_a);
        _cleanup_free_ char *cnt_p = path_in(b.repo, "ipc_count"), *files_p = path_in(b.repo, "files"),
                            *procs_p = path_in(b.repo, "procs");
        _cleanup_free_ char *cnt = read_text(cnt_p), *files = read_text(files_p), *procs = read_text(procs_p);
        ck_assert_msg(cnt && strcmp(cnt, "0\n") == 0, "Trial B sees %s SysV IPC objects", cnt);
        ck_assert_msg(files && files[0] == '\0', "Trial B sees Trial A's files: %s", files);
        ck_assert_msg(procs && strcmp(procs, "0\n") == 0, "Trial B sees Trial A's process (%s)", procs);
        /* Nor did A's leave anything on the host. */
        _cleanup_free_ char *host_tmp = xasprintf("/tmp/%s", m), *host_shm = xasprintf("/dev/shm/%s", m);
        ck_assert(access(host_tmp, F_OK) < 0 && access(host_shm, F_OK) < 0);
        proc_result_free(&r);
        fixture_free(&a);
        fixture_free(&b);
}
END_TEST

TB_SUITE("isolation", 60)
{
        /* unbound host paths */
        tcase_add_test(tc, the_real_home_is_invisible);
        tcase_add_test(tc, other_users_homes_are_invisible);
        tcase_add_test(tc, the_grok_trials_home_is_invisible_from_another_harness);
        tcase_add_test(tc, var_is_invisible);
        tcase_add_test(tc, run_and_the_user_runtime_folders_are_invisible);
        tcase_add_test(tc, the_host_tmp_is_invisible_and_the_session_tmp_is_a_private_tmpfs);
        tcase_add_test(tc, the_host_dev_shm_is_invisible);
        tcase_add_test(tc, host_sysv_shared_memory_is_out_of_reach);
        tcase_add_test(tc, sys_is_invisible);
        tcase_add_test(tc, dev_holds_only_the_basic_nodes);
        tcase_add_test(tc, a_link_in_the_repository_to_a_host_secret_resolves_to_nothing);
        /* read-only binds */
        tcase_add_test(tc, toolchains_on_the_path_refuse_writes);
        tcase_add_test(tc, the_harness_binary_refuses_writes);
        tcase_add_test(tc, the_skills_folder_refuses_writes);
        tcase_add_test(tc, usr_refuses_writes);
        tcase_add_test(tc, etc_refuses_writes);
        tcase_add_test(tc, the_sandbox_root_refuses_writes);
        tcase_add_test(tc, only_the_repository_the_home_and_private_mounts_are_writable);
        tcase_add_test(tc, nothing_the_session_writes_reaches_the_repository_s_parent);
        tcase_add_test(tc, the_session_cannot_forge_its_outcome);
        tcase_add_test(tc, the_session_home_is_fresh_and_its_writes_stay_in_the_output_folder);
        /* processes */
        tcase_add_test(tc, the_session_sees_only_its_own_processes_and_pid_1_is_bwrap);
        tcase_add_test(tc, a_host_process_cannot_be_signalled_by_its_pid);
        tcase_add_test(tc, trialbox_s_own_process_is_out_of_reach);
        /* file descriptors */
        tcase_add_test(tc, the_session_holds_none_of_trialbox_s_open_fds);
        tcase_add_test(tc, an_fd_trialbox_inherited_does_not_reach_the_session);
        /* secrets */
        tcase_add_test(tc, no_host_environment_secret_reaches_the_session);
        tcase_add_test(tc, the_ssh_agent_socket_is_unreachable);
        tcase_add_test(tc, no_other_harness_s_credentials_reach_the_session);
        /* nothing survives */
        tcase_add_test(tc, a_double_forked_setsid_daemon_dies_with_the_session);
        tcase_add_test(tc, killing_trialbox_with_sigkill_leaves_nothing_of_the_session_running);
        tcase_add_test(tc, the_session_has_no_controlling_terminal);
        /* privileges */
        tcase_add_test(tc, the_session_holds_no_capabilities);
        tcase_add_test(tc, a_read_only_bind_cannot_be_remounted_writable);
        tcase_add_test(tc, the_host_kernel_settings_refuse_writes);
        tcase_add_test(tc, setuid_programs_cannot_raise_the_session_s_privileges);
        /* the kernel's surface */
        tcase_add_test(tc, the_session_cannot_reach_keyrings_bpf_perf_userfaultfd_io_uring_or_ptrace_attach);
        tcase_add_test(tc, the_session_cannot_mount_or_make_a_user_namespace);
        tcase_add_test(tc, node_git_python_and_a_compiler_work_under_the_filter);
        tcase_add_test(tc, keys_in_trialbox_s_session_keyring_are_invisible_to_the_session);
        tcase_add_test(tc, the_session_tmpdir_is_never_a_prefix_of_its_home);
        tcase_add_test(tc, a_harness_s_own_sandbox_with_a_fresh_proc_works_when_it_needs_nested_user_namespaces);
        tcase_add_test(tc, the_real_codex_sandbox_runs_inside_a_trial_under_tmp);
        tcase_add_test(tc, the_real_claude_sandbox_runtime_mounts_its_proc_inside_a_trial);
        tcase_add_test(tc, as_root_a_root_owned_repository_without_user_or_root_session_is_refused_in_one_line);
        tcase_add_test(tc, as_root_the_session_runs_as_the_repository_s_owner_or_the_user_given);
        tcase_add_test(tc, root_session_runs_as_trialbox_s_own_user_with_output_and_home_0700);
        tcase_add_test(tc, two_concurrent_trials_share_no_ipc_tmp_dev_shm_or_processes);
}
