/* The rest of the boundary: what a hostile session may ask of the kernel
 * beyond its files: the socket families it may create, the setuid and
 * setgid bits it may not set. Real Trials (the real trialbox, the real
 * bwrap, the `shell` Harness), each with a positive control that shows the
 * same probe succeeding where nothing stops it.
 *
 * It must pass as root and as an unprivileged user (tests/as-unprivileged.sh). */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "base/util.h"

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

static Suite *suite(void)
{
        Suite *s = suite_create("boundary");
        TCase *tc = tcase_create("boundary");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, a_session_creates_only_unix_inet_inet6_and_route_netlink_sockets);
        tcase_add_test(tc, a_session_cannot_make_a_setuid_or_setgid_file);
        tcase_add_test(tc, cp_tar_git_and_python_copies_work_under_the_setuid_rules);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) { return run_suite(suite()); }
