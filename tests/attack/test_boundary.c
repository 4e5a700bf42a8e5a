/* The rest of the boundary: what a hostile session may ask of the kernel
 * beyond its files (the socket families it may create, setuid and setgid
 * bits it may not set) and the host's unix sockets that a bind would
 * otherwise put in its reach. Real Trials (the real trialbox, the real
 * bwrap, the `shell` Harness), each with a positive control that shows the
 * same probe succeeding where nothing stops it.
 *
 * It must pass as root and as an unprivileged user (tests/as-unprivileged.sh). */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tb_test.h"

/* Run `script` as a shell Trial's session (`sh -c`) with `flags` before
 * the `--`, in the fixture's next output folder; the Trial must complete.
 * Returns what the session printed (malloc'd). */
static char *session(struct fixture *f, int *n, char *const env[], const char *const flags[], const char *script)
{
        const char *extra[32];
        size_t k = 0;
        for (size_t i = 0; flags && flags[i] && k < 24; i++)
                extra[k++] = flags[i];
        extra[k++] = "--";
        extra[k++] = "-c";
        extra[k++] = script;
        extra[k] = NULL;
        snprintf(f->out, sizeof f->out, "%s/out%d", f->dir, (*n)++);
        struct proc_result r;
        tb_run(&r, "shell", f, env, extra);
        ck_assert_msg(r.status == 0, "the probe's Trial (%s) ended with status %d:\n%s\n%s",
                      flags && flags[0] ? flags[0] : "defaults", r.status, r.out, r.err);
        free(r.err);
        return r.out;
}

/* Copy a probe program into the repository (bound in every Trial); returns
 * its path, quoted for a script. */
static char *with_probe(const struct fixture *f, const char *probe, const char *name)
{
        _cleanup_free_ char *dest = path_in(f->repo, name);
        copy_file(probe, dest, 0755, SIZE_MAX);
        return xasprintf("'%s'", dest);
}

static bool allowed_family(int f)
{
        return f == AF_UNIX || f == AF_INET || f == AF_INET6 || f == AF_NETLINK;
}

START_TEST(a_session_creates_only_unix_inet_inet6_and_route_netlink_sockets)
{
        struct fixture f;
        int n = 0;
        fixture_new(&f);
        _cleanup_free_ char *probe = with_probe(&f, SOCKET_PROBE, "socket_probe");
        _cleanup_free_ char *in = session(&f, &n, NULL, EXTRA("--network", "none"), probe);
        _cleanup_free_ char *out = session(&f, &n, NULL, EXTRA("--no-sandbox"), probe);
        for (int fam = 0; fam < AF_MAX; fam++) {
                _cleanup_free_ char *ok = xasprintf("socket.%d=ok", fam);
                _cleanup_free_ char *refused = xasprintf("socket.%d=EAFNOSUPPORT", fam);
                _cleanup_free_ char *pair = xasprintf("socketpair.%d=EAFNOSUPPORT", fam);
                if (allowed_family(fam)) {
                        assert_line(in, ok);
                } else {
                        assert_line(in, refused);
                        assert_line(in, pair);
                }
        }
        assert_line(in, "socketpair.1=ok");
        assert_line(in, "netlink.0=ok"); /* NETLINK_ROUTE: getaddrinfo's AI_ADDRCONFIG, `ip addr` */
        for (int p = 1; p < 32; p++) {
                _cleanup_free_ char *refused = xasprintf("netlink.%d=EAFNOSUPPORT", p);
                assert_line(in, refused);
        }
        /* Positive control: unfiltered, the kernel has more to give. */
        assert_line(out, "netlink.4=ok"); /* NETLINK_SOCK_DIAG: lists the host's sockets */
        if (has_line(out, "socket.40=ok"))
                assert_line(in, "socket.40=EAFNOSUPPORT");
        else
                skip_note("a_session_creates_only_…", "this host has no vsock to show unfiltered");
        _cleanup_free_ char *packet = xasprintf("socket.%d=EAFNOSUPPORT", AF_PACKET);
        assert_no_line(out, packet); /* AF_PACKET is there: ok as root, EPERM without CAP_NET_RAW */
        fixture_free(&f);
}
END_TEST

/* Every file under `dir` with a setuid or setgid bit, one "special PATH" line each. */
static char *special_files(const char *dir)
{
        _cleanup_free_ char *cmd = xasprintf("find '%s' -perm /6000 -printf 'special %%P\\n'", dir);
        char *argv[] = { "/bin/sh", "-c", cmd, NULL };
        struct proc_result r;
        run_argv(&r, NULL, argv);
        ck_assert_int_eq(r.status, 0);
        free(r.err);
        return r.out;
}

START_TEST(a_session_cannot_make_a_setuid_or_setgid_file)
{
        struct fixture f;
        int n = 0;
        fixture_new(&f);
        const char *script =
                "umask 022; "
                "touch u g; chmod u+s u; echo chmod_u=$?; chmod g+s g; echo chmod_g=$?; "
                "chmod 4755 u; echo chmod_4755=$?; "
                "install -m 4755 /bin/true inst 2>/dev/null; echo install=$?; "
                "python3 -c 'import os; os.close(os.open(\"opened\", os.O_CREAT | os.O_WRONLY, 0o6755))' 2>/dev/null; "
                "echo open=$?; "
                "python3 -c 'import os; os.mknod(\"node\", 0o104755)' 2>/dev/null; echo mknod=$?; "
                "python3 -c 'import os; fd = os.open(\"u\", os.O_RDONLY); os.fchmod(fd, 0o4755)' 2>/dev/null; "
                "echo fchmod=$?; "
                "find . -perm /6000 -printf 'special %P\\n'";
        _cleanup_free_ char *in = session(&f, &n, NULL, NULL, script);
        assert_line(in, "chmod_u=1");
        assert_line(in, "chmod_g=1");
        assert_line(in, "chmod_4755=1");
        assert_no_line(in, "install=0");
        assert_no_line(in, "open=0");
        assert_no_line(in, "mknod=0");
        assert_no_line(in, "fchmod=0");
        ck_assert_msg(!strstr(in, "special "), "the session made a setuid or setgid file:\n%s", in);
        /* Seen from the host, after the Trial: nothing special in the repository. */
        _cleanup_free_ char *after = special_files(f.repo);
        ck_assert_msg(after[0] == '\0', "the repository holds setuid or setgid files:\n%s", after);
        ck_assert_int_eq(access(f.repo, F_OK), 0);
        _cleanup_free_ char *u = path_in(f.repo, "u");
        ck_assert_int_eq(access(u, F_OK), 0); /* made, only without the bit */

        /* Positive control: unsandboxed, the same script makes them. */
        _cleanup_free_ char *repo2 = path_in(f.dir, "repo2");
        ck_assert_int_eq(mkdir(repo2, 0755), 0);
        struct fixture g = f;
        snprintf(g.repo, sizeof g.repo, "%s", repo2);
        _cleanup_free_ char *out = session(&g, &n, NULL, EXTRA("--no-sandbox"), script);
        assert_line(out, "chmod_u=0");
        assert_line(out, "special u");
        assert_line(out, "install=0");
        fixture_free(&f);
}
END_TEST

START_TEST(cp_tar_git_and_python_copies_work_under_the_setuid_rules)
{
        struct fixture f;
        int n = 0;
        fixture_new(&f);
        const char *script =
                "set -e; umask 022; mkdir -p src/a/b; echo x > src/a/b/f; chmod 755 src/a/b/f; ln -s b src/a/l; "
                "chmod 700 src/a; "
                "cp -a src cp; echo cp=$?; cp -r --preserve=mode src cp2; echo cp_mode=$?; "
                "tar cf t.tar src; mkdir x; tar xf t.tar -C x; tar xpf t.tar -C x --overwrite; echo tar=$?; "
                "git init -q r; cd r; echo hi > f; chmod +x f; git add f; "
                "git -c user.name=t -c user.email=t@example.com commit -qm one; cd ..; git clone -q r r2; "
                "test -x r2/f; echo git=$?; "
                "python3 -c 'import shutil; shutil.copytree(\"src\", \"py\", symlinks=True)'; echo py=$?; "
                "install -m 755 /bin/true inst; echo install=$?; "
                "cmp src/a/b/f cp/a/b/f; cmp src/a/b/f x/src/a/b/f; cmp src/a/b/f py/a/b/f; echo same=$?; "
                "stat -c 'mode=%a' cp/a";
        _cleanup_free_ char *in = session(&f, &n, NULL, NULL, script);
        assert_line(in, "cp=0");
        assert_line(in, "cp_mode=0");
        assert_line(in, "tar=0");
        assert_line(in, "git=0");
        assert_line(in, "py=0");
        assert_line(in, "install=0");
        assert_line(in, "same=0");
        assert_line(in, "mode=700");
        fixture_free(&f);
}
END_TEST

/* ---- the host's unix sockets ---- */

/* A "host daemon": a forked child of the test's, answering every HTTP
 * request "200 ok" on the unix sockets at `paths` until killed. */
static pid_t socket_daemon(const char *const *paths, size_t n)
{
        int fds[8];
        ck_assert_uint_le(n, TB_ARRAY_SIZE(fds));
        for (size_t i = 0; i < n; i++) {
                struct sockaddr_un sun = { .sun_family = AF_UNIX };
                ck_assert_uint_lt(strlen(paths[i]), sizeof sun.sun_path);
                snprintf(sun.sun_path, sizeof sun.sun_path, "%s", paths[i]);
                fds[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                ck_assert_int_ge(fds[i], 0);
                ck_assert_msg(bind(fds[i], (struct sockaddr *)&sun, sizeof sun) == 0, "bind '%s': %s", paths[i],
                              strerror(errno));
                ck_assert_int_eq(chmod(paths[i], 0777), 0);
                ck_assert_int_eq(listen(fds[i], 16), 0);
        }
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid > 0) {
                for (size_t i = 0; i < n; i++)
                        close(fds[i]);
                return pid;
        }
        for (;;) {
                fd_set set;
                int max = 0;
                FD_ZERO(&set);
                for (size_t i = 0; i < n; i++) {
                        FD_SET(fds[i], &set);
                        max = fds[i] > max ? fds[i] : max;
                }
                if (select(max + 1, &set, NULL, NULL, NULL) < 0)
                        continue;
                for (size_t i = 0; i < n; i++) {
                        if (!FD_ISSET(fds[i], &set))
                                continue;
                        int c = accept(fds[i], NULL, NULL);
                        if (c < 0)
                                continue;
                        http_answer_ok(c);
                }
        }
}

START_TEST(no_host_unix_socket_in_a_bound_folder_is_reachable_without_the_host_network)
{
        struct fixture f;
        int n = 0;
        fixture_new(&f);
        _cleanup_free_ char *bin = path_in(f.dir, "bin"), *skills = path_in(f.dir, "skills");
        _cleanup_free_ char *deep = path_in(f.repo, "sub/deeper");
        ck_assert_int_eq(mkdir(bin, 0755), 0);
        ck_assert_int_eq(mkdir(skills, 0755), 0);
        ck_assert_int_eq(mkdir_p(deep, 0755), 0);
        _cleanup_free_ char *on_path = path_in(bin, "daemon.sock"), *in_skills = path_in(skills, "daemon.sock");
        _cleanup_free_ char *in_repo = path_in(f.repo, "daemon.sock"), *in_deep = path_in(deep, "daemon.sock");
        const char *const socks[] = { on_path, in_skills, in_repo, in_deep };
        pid_t daemon = socket_daemon(socks, TB_ARRAY_SIZE(socks));
        /* Two whose file is not where their name says: bound by a relative
         * path, and moved after it was bound. trialbox has to walk for them. */
        _cleanup_free_ char *relative = path_in(skills, "relative.sock"), *moved = path_in(f.repo, "moved.sock");
        _cleanup_free_ char *was = path_in(f.dir, "was.sock");
        char cwd[4096];
        ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
        ck_assert_int_eq(chdir(skills), 0);
        pid_t rel_daemon = socket_daemon(EXTRA("relative.sock"), 1);
        ck_assert_int_eq(chdir(cwd), 0);
        pid_t moved_daemon = socket_daemon(EXTRA(was), 1);
        ck_assert_int_eq(rename(was, moved), 0);
        _cleanup_free_ char *probe_cmd = xasprintf("curl -sf --noproxy '*' --unix-socket '%s' http://x/", on_path);
        ck_assert(host_can(probe_cmd)); /* the host reaches it */

        _cleanup_free_ char *env_path = xasprintf("PATH=%s:%s", bin, getenv("PATH"));
        struct strbuf sb = { 0 };
        static const char *const names[] = { "path", "skills", "repo", "deep", "relative", "moved" };
        const char *const where[] = { on_path, in_skills, in_repo, in_deep, relative, moved };
        strbuf_add(&sb, "c() { curl -s --noproxy '*' -o /dev/null --unix-socket \"$2\" http://x/; echo $1=$?; }; ");
        for (size_t i = 0; i < TB_ARRAY_SIZE(where); i++)
                strbuf_addf(&sb, "c %s '%s'; ", names[i], where[i]);
        /* The session's own sockets still work. */
        strbuf_add(&sb, "python3 -c 'import socket, os\n"
                        "s = socket.socket(socket.AF_UNIX); s.bind(\"own.sock\"); s.listen()\n"
                        "c = socket.socket(socket.AF_UNIX); c.connect(\"own.sock\"); print(\"own=0\")' 2>&1; rm -f own.sock");
        /* The list is made by trialbox's listing thread on the other CPU
         * (2 CPUs or more), or in line when it is told every CPU is busy
         * (TRIALBOX_CPUS_BUSY=1, as a batch's Trials are): masked either way. */
        static const struct {
                const char *mode;
                bool busy;
        } cases[] = { { "none", false }, { "none", true }, { "allow", false }, { "host", false } };
        for (size_t m = 0; m < TB_ARRAY_SIZE(cases); m++) {
                const char *mode = cases[m].mode;
                _cleanup_free_ char *out = session(
                        &f, &n, cases[m].busy ? ENV(env_path, "TRIALBOX_CPUS_BUSY=1") : ENV(env_path),
                        EXTRA("--network", mode, "--skills", skills), sb.s);
                for (size_t i = 0; i < TB_ARRAY_SIZE(names); i++) {
                        /* curl 7: could not connect. Under host, the positive control: reached. */
                        _cleanup_free_ char *want = xasprintf("%s=%s", names[i], strcmp(mode, "host") ? "7" : "0");
                        ck_assert_msg(has_line(out, want), "--network %s%s: no line '%s' in:\n%s", mode,
                                      cases[m].busy ? " (CPUs busy)" : "", want, out);
                }
                assert_line(out, "own=0");
        }
        free(sb.s);
        const pid_t daemons[] = { daemon, rel_daemon, moved_daemon };
        for (size_t i = 0; i < TB_ARRAY_SIZE(daemons); i++) {
                kill(daemons[i], SIGKILL);
                waitpid(daemons[i], NULL, 0);
        }
        fixture_free(&f);
}
END_TEST

/* A container's daemon: a socket bound from another network namespace into
 * a folder the Trial sees. The kernel lists each namespace's sockets to its
 * own: trialbox, as root, asks every namespace; unprivileged it cannot
 * enter them (network.md says so). */
START_TEST(as_root_a_socket_bound_in_another_network_namespace_is_masked_too)
{
        if (skip_unless_root(__func__, "not root: another network namespace's sockets are not listed"))
                return;
        struct fixture f;
        int n = 0;
        fixture_new(&f);
        _cleanup_free_ char *path = path_in(f.repo, "container.sock");
        int ready[2];
        ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
        pid_t container = fork();
        ck_assert_int_ge(container, 0);
        if (container == 0) {
                if (unshare(CLONE_NEWNET) < 0)
                        _exit(1);
                close(ready[0]);
                pid_t d = socket_daemon(EXTRA(path), 1);
                (void)!write(ready[1], &d, sizeof d);
                waitpid(d, NULL, 0);
                _exit(0);
        }
        close(ready[1]);
        pid_t daemon = -1;
        ck_assert_int_eq(read(ready[0], &daemon, sizeof daemon), (ssize_t)sizeof daemon);
        close(ready[0]);
        _cleanup_free_ char *probe = xasprintf("curl -sf --noproxy '*' --unix-socket '%s' http://x/", path);
        ck_assert(host_can(probe));
        _cleanup_free_ char *script =
                xasprintf("curl -s --noproxy '*' -o /dev/null --unix-socket '%s' http://x/; echo container=$?", path);
        /* bwrap is started early here (as root, with --root-session): the
         * other namespaces' sockets are masked while it sets the sandbox
         * up, and this one's mask, which its options did not have, starts
         * bwrap again (-v says so), before the session. */
        snprintf(f.out, sizeof f.out, "%s/out%d", f.dir, n++);
        struct proc_result r;
        tb_run(&r, "shell", &f, NULL, EXTRA("-v", "--network", "none", "--", "-c", script));
        ck_assert_msg(r.status == 0, "the Trial ended with status %d:\n%s\n%s", r.status, r.out, r.err);
        ck_assert_msg(strstr(r.err, " masked (bwrap is started again with them)"),
                      "no restart of bwrap with the other namespace's mask in:\n%s", r.err);
        _cleanup_free_ char *out = session(&f, &n, NULL, EXTRA("--network", "host"), script);
        kill(daemon, SIGKILL);
        waitpid(container, NULL, 0);
        assert_line(r.out, "container=7");
        assert_line(out, "container=0");
        free(r.out);
        free(r.err);
        fixture_free(&f);
}
END_TEST

TB_SUITE("boundary", 120)
{
        tcase_add_test(tc, a_session_creates_only_unix_inet_inet6_and_route_netlink_sockets);
        tcase_add_test(tc, a_session_cannot_make_a_setuid_or_setgid_file);
        tcase_add_test(tc, cp_tar_git_and_python_copies_work_under_the_setuid_rules);
        tcase_add_test(tc, no_host_unix_socket_in_a_bound_folder_is_reachable_without_the_host_network);
        tcase_add_test(tc, as_root_a_socket_bound_in_another_network_namespace_is_masked_too);
}
