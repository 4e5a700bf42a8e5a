/* Integration tests of `run --network`: the real trialbox, the
 * real bwrap, the `shell` Harness running curl. Every server here listens on
 * the host's loopback (made by the test) or inside a Trial's own namespace;
 * names like allowed.test reach them through TRIALBOX_TEST_HOSTS, which
 * only a TRIALBOX_TESTING build honours. */
#define _GNU_SOURCE
#include <check.h>
#include <json-c/json.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tb_test.h"
#include "network/trial_net.h"
#include "base/cleanup.h"
#include "base/macro.h"
#include "base/error.h"
#include "base/alloc.h"


/* A loopback HTTP server of the test's: a forked child answering every
 * request "200 ok" on 127.0.0.1:port (and on an abstract unix socket, when
 * `abstract` is set), until killed. */
struct server {
        pid_t pid;
        int port;
};

static void __attribute__((noreturn)) serve(int tcp, int unx)
{
        for (;;) {
                fd_set set;
                FD_ZERO(&set);
                FD_SET(tcp, &set);
                if (unx >= 0)
                        FD_SET(unx, &set);
                if (select((tcp > unx ? tcp : unx) + 1, &set, NULL, NULL, NULL) < 0)
                        continue;
                int c = accept(FD_ISSET(tcp, &set) ? tcp : unx, NULL, NULL);
                if (c < 0)
                        continue;
                http_answer_ok(c);
        }
}

static void server_start(struct server *s, const char *abstract)
{
        int tcp = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t sl = sizeof sin;
        ck_assert_int_eq(bind(tcp, (struct sockaddr *)&sin, sizeof sin), 0);
        ck_assert_int_eq(listen(tcp, 64), 0);
        ck_assert_int_eq(getsockname(tcp, (struct sockaddr *)&sin, &sl), 0);
        s->port = ntohs(sin.sin_port);
        int unx = -1;
        if (abstract) {
                struct sockaddr_un sun = { .sun_family = AF_UNIX };
                snprintf(sun.sun_path + 1, sizeof sun.sun_path - 1, "%s", abstract);
                unx = socket(AF_UNIX, SOCK_STREAM, 0);
                ck_assert_int_eq(bind(unx, (struct sockaddr *)&sun,
                                      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(abstract))),
                                 0);
                ck_assert_int_eq(listen(unx, 16), 0);
        }
        s->pid = fork();
        ck_assert_int_ge(s->pid, 0);
        if (s->pid == 0)
                serve(tcp, unx);
        close(tcp);
        if (unx >= 0)
                close(unx);
}

static void server_stop(struct server *s)
{
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
}

/* The value after "name=" on its own line of `out`, or "" (static). */
static const char *result(const char *out, const char *name)
{
        static char v[64];
        char key[64];
        snprintf(key, sizeof key, "\n%s=", name);
        _cleanup_free_ char *text = xasprintf("\n%s", out);
        const char *p = strstr(text, key);
        v[0] = '\0';
        if (p)
                sscanf(p + strlen(key), "%63s", v);
        return v;
}

/* outcome.json's network.PATH (dotted; "hosts.a.test.allowed" is written
 * hosts/a.test/allowed) as text, "absent" when it is not there (static). */
static const char *network_field(const char *output_dir, const char *path)
{
        static char v[256];
        _cleanup_free_ char *p = path_in(output_dir, "outcome.json");
        _cleanup_free_ char *text = read_text(p);
        json_object *root = text ? json_tokener_parse(text) : NULL, *j = NULL;
        snprintf(v, sizeof v, "absent");
        if (root && json_object_object_get_ex(root, "network", &j)) {
                _cleanup_free_ char *copy = xstrdup(path);
                char *save = NULL;
                for (char *k = strtok_r(copy, "/", &save); k && j; k = strtok_r(NULL, "/", &save))
                        if (!json_object_object_get_ex(j, k, &j))
                                j = NULL, snprintf(v, sizeof v, "absent");
                if (j || !*path)
                        snprintf(v, sizeof v, "%s", j ? json_object_get_string(j) : "null");
        }
        json_object_put(root);
        return v;
}

START_TEST(none_leaves_only_loopback_and_no_host_service_is_reachable)
{
        _cleanup_free_ char *abstract = marker("tb-net");
        struct server s;
        server_start(&s, abstract);
        /* From the host, both answer. */
        char check[512];
        snprintf(check, sizeof check, "curl -sf --noproxy '*' http://127.0.0.1:%d/ && curl -sf --abstract-unix-socket %s http://x/",
                 s.port, abstract);
        ck_assert(host_can(check));

        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        _cleanup_free_ char *script = xasprintf(
                "echo links=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ,); "
                "curl -s --noproxy '*' -o /dev/null http://127.0.0.1:%d/; echo tcp=$?; "
                "curl -s --abstract-unix-socket %s -o /dev/null http://x/; echo abstract=$?; "
                "getent hosts example.com; echo dns=$?",
                s.port, abstract);
        tb_shell(&r, &f, NULL, EXTRA("--network", "none", "--", "-c", script));
        server_stop(&s);
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_str_eq(result(r.out, "links"), "lo,");
        ck_assert_str_eq(result(r.out, "tcp"), "7");      /* could not connect */
        ck_assert_str_eq(result(r.out, "abstract"), "7"); /* abstract sockets are per network namespace */
        ck_assert_str_ne(result(r.out, "dns"), "0");
        ck_assert_str_eq(network_field(f.out, "mode"), "none");
        _cleanup_free_ char *rec = path_in(f.out, "network.jsonl");
        ck_assert_int_ne(access(rec, F_OK), 0); /* nothing to record without a proxy */
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(two_concurrent_trials_cannot_reach_each_other)
{
        struct fixture a, b;
        fixture_new(&a);
        fixture_new(&b);
        /* Trial A serves on its own 127.0.0.1:38080 until told to stop. */
        const char *serve_script =
                "python3 -m http.server 38080 --bind 127.0.0.1 >/dev/null 2>&1 & "
                "until curl -sf --noproxy '*' -o /dev/null http://127.0.0.1:38080/; do sleep 0.05; done; "
                "touch ready; while [ ! -e stop ]; do sleep 0.05; done; kill $!";
        char *argv[64];
        tb_argv(argv, 64, "shell", &a, EXTRA("--network", "none", "--", "-c", serve_script));
        _cleanup_free_ char *aout = path_in(a.dir, "a.out"), *aerr = path_in(a.dir, "a.err");
        pid_t pa = spawn_argv(tb_env(NULL), argv, aout, aerr);
        _cleanup_free_ char *ready = path_in(a.repo, "ready"), *stop = path_in(a.repo, "stop");
        ck_assert(wait_for_file(ready, 30000));

        struct proc_result r;
        tb_shell(&r, &b, NULL,
           EXTRA("--network", "none", "--", "-c", "curl -s --noproxy '*' -o /dev/null http://127.0.0.1:38080/; echo b=$?"));
        /* Nor from the host. */
        bool host_reaches = host_can("curl -sf --noproxy '*' -o /dev/null http://127.0.0.1:38080/");
        write_text(stop, "", 0644);
        ck_assert_int_eq(wait_status(pa), 0);
        ck_assert_str_eq(result(r.out, "b"), "7");
        ck_assert(!host_reaches);
        proc_result_free(&r);
        fixture_free(&a);
        fixture_free(&b);
}
END_TEST

START_TEST(allow_reaches_allowed_names_only_and_records_every_decision)
{
        struct server s;
        server_start(&s, NULL);
        struct fixture f;
        fixture_new(&f);

        /* A TLS server, when openssl can make one. */
        bool tls = host_can("command -v openssl");
        int tls_port = 0;
        pid_t tls_pid = -1;
        if (tls) {
                _cleanup_free_ char *cmd = xasprintf(
                        "cd '%s' && openssl req -x509 -newkey rsa:2048 -nodes -keyout k.pem -out c.pem "
                        "-subj /CN=tls.test -days 1 >/dev/null 2>&1",
                        f.dir);
                tls = host_can(cmd);
        }
        if (tls) {
                /* A free port: taken, then given up for s_server. */
                int fd = socket(AF_INET, SOCK_STREAM, 0);
                struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
                socklen_t sl = sizeof sin;
                bind(fd, (struct sockaddr *)&sin, sizeof sin);
                getsockname(fd, (struct sockaddr *)&sin, &sl);
                tls_port = ntohs(sin.sin_port);
                close(fd);
                _cleanup_free_ char *acc = xasprintf("127.0.0.1:%d", tls_port);
                _cleanup_free_ char *cert = path_in(f.dir, "c.pem"), *key = path_in(f.dir, "k.pem");
                _cleanup_free_ char *o = path_in(f.dir, "tls.out"), *e = path_in(f.dir, "tls.err");
                char *targv[] = { "/usr/bin/openssl", "s_server", "-accept", acc, "-cert", cert, "-key", key,
                                  "-www", "-quiet", NULL };
                tls_pid = spawn_argv(NULL, targv, o, e);
                _cleanup_free_ char *wait = xasprintf(
                        "for i in $(seq 300); do curl -sk -o /dev/null https://127.0.0.1:%d/ && exit 0; sleep 0.05; done; exit 1",
                        tls_port);
                tls = host_can(wait);
        }

        _cleanup_free_ char *map = xasprintf("TRIALBOX_TEST_HOSTS=allowed.test=127.0.0.1:%d,denied.test=127.0.0.1:%d,"
                                             "a.wild.test=127.0.0.1:%d,wild.test=127.0.0.1:%d,port.test=127.0.0.1,"
                                             "tls.test=127.0.0.1",
                                             s.port, s.port, s.port, s.port);
        _cleanup_free_ char *port_rule = xasprintf("port.test:%d", s.port);
        _cleanup_free_ char *tls_cmd = tls ? xasprintf("c tls -k https://tls.test:%d/", tls_port) : xstrdup("echo tls=skipped");
        _cleanup_free_ char *script = xasprintf(
                "c() { n=$1; shift; echo $n=$(curl -s -o /dev/null -w '%%{http_code}' \"$@\"); }; "
                "c http http://allowed.test/; "
                "c connect -p http://allowed.test/; "
                "c denied http://denied.test/; "
                "c wild http://a.wild.test/; c apex http://wild.test/; "
                "c port http://port.test:%d/; c otherport http://port.test:1/; "
                "c localhost --noproxy '' -x http://127.0.0.1:3128 http://localhost:%d/; "
                "c loopback --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:%d/; "
                "curl -s --noproxy '*' -o /dev/null http://127.0.0.1:%d/; echo direct=$?; "
                "%s",
                s.port, s.port, s.port, s.port,
                tls_cmd);
        struct proc_result r;
        tb_shell(&r, &f, ENV(map),
           EXTRA("-v", "--network", "allow", "--allow-host", "allowed.test", "--allow-host", "*.wild.test",
                 "--allow-host", port_rule, "--allow-host", "tls.test", "--", "-c",
                 script));
        server_stop(&s);
        if (tls_pid > 0) {
                kill(tls_pid, SIGKILL);
                waitpid(tls_pid, NULL, 0);
        }
        ck_assert_msg(r.status == 0, "%s\n%s", r.out, r.err);
        /* Each curl's HTTP code (direct: curl's exit status). */
        static const struct text_case got[] = {
                { "http", "200" },      { "connect", "200" },  { "denied", "403" },
                { "wild", "200" },      { "apex", "403" },     { "port", "200" },
                { "otherport", "403" }, { "localhost", "403" }, /* this host's loopback, not listed with its port */
                { "loopback", "403" },  { "direct", "7" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(got); i++)
                ck_assert_str_eq(result(r.out, got[i].in), got[i].want);
        if (tls)
                ck_assert_str_eq(result(r.out, "tls"), "200");

        /* A denied name is never resolved: -v names each lookup. */
        assert_contains(r.err, "resolving 'allowed.test'");
        assert_lacks(r.err, "resolving 'denied.test'");
        assert_lacks(r.err, "resolving 'wild.test'");

        _cleanup_free_ char *rec = read_text_in(f.out, "network.jsonl");
        size_t want = 9 + (tls ? 1 : 0); /* every curl above but the direct one */
        ck_assert_uint_eq(count_lines(rec), want);
        assert_contains(rec, "\"host\":\"denied.test\",\"port\":80,\"method\":\"GET\",\"decision\":\"denied\"");
        assert_contains(rec, "\"host\":\"allowed.test\",\"port\":80,\"method\":\"CONNECT\",\"decision\":\"allowed\"");
        static const struct text_case counted[] = {
                { "mode", "allow" },
                { "hosts/allowed.test/allowed", "2" },
                { "hosts/allowed.test/denied", "0" },
                { "hosts/denied.test/denied", "1" },
                { "hosts/port.test/allowed", "1" },
                { "hosts/port.test/denied", "1" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(counted); i++)
                ck_assert_str_eq(network_field(f.out, counted[i].in), counted[i].want);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* --no-harness-endpoints: under allow, the Harness's own endpoints (the
 * fake plugin's api.fake.test:443) are not allowed, only --allow-host, and
 * the Outcome says so. */
START_TEST(no_harness_endpoints_leaves_only_the_allow_host_patterns)
{
        struct server s;
        server_start(&s, NULL);
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *map = xasprintf("TRIALBOX_TEST_HOSTS=api.fake.test=127.0.0.1:%d,listed.test=127.0.0.1:%d",
                                             s.port, s.port);
        const char *script = "c() { n=$1; shift; echo $n=$(curl -s -o /dev/null -w '%{http_code}' \"$@\"); }; "
                             "c own http://api.fake.test:443/; c listed http://listed.test/";
        char *const env[] = { map, "TRIALBOX_PLUGIN_PATH=" FAKE_PLUGIN_DIR "/fp_good", NULL };
        struct proc_result r;
        tb_run(&r, "good", &f, env, EXTRA("--harness-bin", "/bin/sh", "--network", "allow", "--", "-c", script));
        ck_assert_msg(r.status == 0, "%s\n%s", r.out, r.err);
        ck_assert_str_eq(result(r.out, "own"), "200");
        ck_assert_str_eq(result(r.out, "listed"), "403");
        ck_assert_str_eq(network_field(f.out, "harness_endpoints"), "true");
        proc_result_free(&r);
        fixture_next_out(&f);
        tb_run(&r, "good", &f, env,
               EXTRA("--harness-bin", "/bin/sh", "--no-harness-endpoints", "--allow-host", "listed.test", "--", "-c",
                     script));
        ck_assert_msg(r.status == 0, "%s\n%s", r.out, r.err);
        ck_assert_str_eq(result(r.out, "own"), "403");
        ck_assert_str_eq(result(r.out, "listed"), "200");
        ck_assert_str_eq(network_field(f.out, "mode"), "allow"); /* implied */
        ck_assert_str_eq(network_field(f.out, "harness_endpoints"), "false");
        proc_result_free(&r);
        /* With another mode it means nothing: a usage error. */
        fixture_next_out(&f);
        tb_run(&r, "good", &f, env, EXTRA("--harness-bin", "/bin/sh", "--network", "none", "--no-harness-endpoints"));
        ck_assert_int_eq(r.status, 2);
        assert_contains(r.err, "--no-harness-endpoints needs --network allow");
        proc_result_free(&r);
        server_stop(&s);
        fixture_free(&f);
}
END_TEST

/* A session that asks the proxy for hundreds of long, distinct names (a
 * failing session did, and its Outcome outgrew the space reserved for it:
 * no final Outcome, and a batch counted the Trial void and ran it again).
 * The Outcome keeps the 20 names asked for most and sums the rest; it is
 * written, the Trial is the session's own failure; network.jsonl has all. */
START_TEST(hundreds_of_long_names_asked_of_the_proxy_never_break_the_outcome)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        tb_shell(&r, &f, NULL,
           EXTRA("--network", "allow", "--", "-c",
                 "l=$(printf 'a%.0s' $(seq 60)); n=$l.$l.$l; for i in $(seq 300); do "
                 "curl -s -o /dev/null --max-time 5 http://$n.x$i.example.test/; done; "
                 "for i in 1 2 3; do curl -s -o /dev/null http://often.example.test/; done; exit 3"));
        ck_assert_msg(r.status == 3, "exit status %d, not the session's 3: %s", r.status, r.err);
        assert_outcome(&f, "outcome", "failed");
        _cleanup_free_ char *net = outcome_field(f.out, "network");
        json_object *j = json_tokener_parse(net), *hosts, *other, *v;
        ck_assert_msg(j && json_object_object_get_ex(j, "hosts", &hosts), "%s", net);
        ck_assert_int_eq(json_object_object_length(hosts), 20);
        ck_assert_msg(json_object_object_get_ex(hosts, "often.example.test", &v), "the most asked host is missing: %s",
                      net);
        ck_assert(json_object_object_get_ex(j, "other_hosts", &other));
        ck_assert(json_object_object_get_ex(other, "hosts", &v));
        ck_assert_int_eq(json_object_get_int64(v), 281);
        ck_assert(json_object_object_get_ex(j, "denied", &v));
        ck_assert_int_eq(json_object_get_int64(v), 303);
        json_object_put(j);
        _cleanup_free_ char *outcome = path_in(f.out, "outcome.json");
        struct stat st;
        ck_assert_int_eq(stat(outcome, &st), 0);
        ck_assert_int_lt(st.st_size, 16384);
        _cleanup_free_ char *log = path_in(f.out, "network.jsonl");
        _cleanup_free_ char *rec = read_text(log);
        ck_assert_uint_eq(count_lines(rec), 303);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(host_mode_keeps_the_host_network)
{
        struct server s;
        server_start(&s, NULL);
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *script =
                xasprintf("curl -s --noproxy '*' -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/", s.port);
        struct proc_result r;
        tb_shell(&r, &f, NULL, EXTRA("--network", "host", "--", "-c", script));
        server_stop(&s);
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.out, "200\n"); /* the newline: trialbox ends the session's last line */
        ck_assert_str_eq(network_field(f.out, ""), "null");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(dry_run_shows_unshare_net_and_bad_network_flags_are_usage_errors)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        tb_shell(&r, &f, NULL, EXTRA("--network", "none", "--dry-run"));
        ck_assert_int_eq(r.status, 0);
        assert_contains(r.out, " --unshare-net ");
        proc_result_free(&r);
        tb_shell(&r, &f, NULL, EXTRA("--allow-host", "x.test", "--dry-run"));
        ck_assert_int_eq(r.status, 0);
        assert_contains(r.out, " --unshare-net ");
        assert_contains(r.out, "HTTPS_PROXY=http://127.0.0.1:3128");
        proc_result_free(&r);
        tb_shell(&r, &f, NULL, EXTRA("--network", "host", "--dry-run"));
        assert_lacks(r.out, "--unshare-net");
        proc_result_free(&r);
        const char *const bad[][4] = {
                { "--allow-host", "*", NULL },
                { "--allow-host", "*.com", NULL },
                /* This host's loopback: one port, named exactly. */
                { "--allow-host", "127.0.0.1", NULL },
                { "--allow-host", "localhost", NULL },
                { "--allow-host", "[::1]", NULL },
                { "--allow-host", "0.0.0.0", NULL },
                { "--allow-host", "*.localhost", NULL },
                { "--allow-host", "model.localhost:8000", NULL },
                { "--network", "none", "--allow-host", "x.test" },
                { "--network", "bogus", NULL },
                { "--network", "none", "--no-sandbox", NULL },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++) {
                tb_shell(&r, &f, NULL, EXTRA(bad[i][0], bad[i][1], bad[i][2], bad[i][3]));
                ck_assert_msg(r.status == 2, "case %zu: %d %s", i, r.status, r.err);
                ck_assert(one_line(r.err));
                proc_result_free(&r);
        }
        fixture_free(&f);
}
END_TEST

/* ---- a model server on the host's loopback ---- */

/* A local model server or gateway on the host's 127.0.0.1: `--allow-host
 * 127.0.0.1:PORT` (or localhost:PORT) lets that one port through, and the
 * session's clients, which honour NO_PROXY, send it through the proxy. */
START_TEST(a_host_loopback_port_named_exactly_is_reached_through_the_proxy)
{
        struct server s;
        server_start(&s, NULL);
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *lit = xasprintf("127.0.0.1:%d", s.port), *name = xasprintf("localhost:%d", s.port);
        /* curl with the session's own proxy variables, as the Harness CLIs use them. */
        _cleanup_free_ char *script = xasprintf(
                "c() { n=$1; shift; echo $n=$(curl -s -o /dev/null -w '%%{http_code}' \"$@\"); }; "
                "c lit http://127.0.0.1:%d/v1/messages; c name http://localhost:%d/; "
                "c other http://127.0.0.1:%d/; "
                "echo close=$(curl -s -D - -o /dev/null http://127.0.0.1:%d/ | tr -d '\\r' | grep -ci '^connection: close'); "
                "echo no_proxy=[$NO_PROXY]",
                s.port, s.port, s.port == 65535 ? 1 : s.port + 1, s.port);
        struct proc_result r;
        tb_shell(&r, &f, NULL, EXTRA("--network", "allow", "--allow-host", lit, "--allow-host", name, "--", "-c", script));
        server_stop(&s);
        ck_assert_msg(r.status == 0, "%s\n%s", r.out, r.err);
        ck_assert_str_eq(result(r.out, "lit"), "200");
        ck_assert_str_eq(result(r.out, "name"), "200");
        ck_assert_str_eq(result(r.out, "other"), "403"); /* one port, not the host's whole loopback */
        ck_assert_str_eq(result(r.out, "close"), "1");
        ck_assert_str_eq(result(r.out, "no_proxy"), "[]");
        _cleanup_free_ char *rec = read_text_in(f.out, "network.jsonl");
        _cleanup_free_ char *want = xasprintf("\"host\":\"127.0.0.1\",\"port\":%d,\"method\":\"GET\",\"decision\":\"allowed\","
                                              "\"reason\":\"allowed by '%s'\"", s.port, lit);
        ck_assert_msg(strstr(rec, want), "no '%s' in:\n%s", want, rec);
        _cleanup_free_ char *want_name = xasprintf("\"host\":\"localhost\",\"port\":%d,\"method\":\"GET\",\"decision\":\"allowed\"",
                                                   s.port);
        ck_assert_msg(strstr(rec, want_name), "no '%s' in:\n%s", want_name, rec);
        ck_assert_str_eq(network_field(f.out, "hosts/127.0.0.1/allowed"), "2");
        ck_assert_str_eq(network_field(f.out, "hosts/127.0.0.1/denied"), "1");
        proc_result_free(&r);

        /* Without a loopback port, the session's own servers stay direct. */
        snprintf(f.out, sizeof f.out, "%s/out2", f.dir);
        tb_shell(&r, &f, NULL, EXTRA("--allow-host", "x.test", "--", "-c", "echo no_proxy=[$NO_PROXY]"));
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_str_eq(result(r.out, "no_proxy"), "[localhost,127.0.0.1,::1]");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* ---- the default network ---- */

/* A Credentials file (under DIR/config) holding a Claude setup token; the
 * XDG_CONFIG_HOME=... entry that names it (static). */
static char *claude_credentials(const struct fixture *f)
{
        static char env[1200];
        _cleanup_free_ char *cfg = path_in(f->dir, "config");
        write_in(cfg, "trialbox/credentials.json", "{\"claude\": {\"setup_token\": \"tbtest-token\"}}", 0600);
        snprintf(env, sizeof env, "XDG_CONFIG_HOME=%s", cfg);
        return env;
}

static const char default_probe[] = "echo proxy=${HTTPS_PROXY:-unset}; "
                                     "echo links=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ,)";

START_TEST(the_default_network_is_allow_for_a_harness_with_endpoints_and_none_for_one_without)
{
        struct fixture f;
        struct proc_result r;
        fixture_new(&f);
        /* shell declares no endpoints: a network of its own, loopback only. */
        tb_shell(&r, &f, NULL, EXTRA("--", "-c", default_probe));
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_str_eq(result(r.out, "proxy"), "unset");
        ck_assert_str_eq(result(r.out, "links"), "lo,");
        ck_assert_str_eq(network_field(f.out, "mode"), "none");
        proc_result_free(&r);

        /* claude declares its API: allow, through the proxy. */
        snprintf(f.out, sizeof f.out, "%s/out-claude", f.dir);
        char *cred = claude_credentials(&f);
        tb_run(&r, "claude", &f, ENV(cred), EXTRA("--harness-bin", "/bin/sh", "--", "-c", default_probe));
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_str_eq(result(r.out, "proxy"), TRIAL_NET_PROXY_URL);
        ck_assert_str_eq(result(r.out, "links"), "lo,");
        ck_assert_str_eq(network_field(f.out, "mode"), "allow");
        _cleanup_free_ char *rec = path_in(f.out, TRIAL_NET_RECORD);
        ck_assert_int_eq(access(rec, F_OK), 0);
        proc_result_free(&r);

        /* Unsandboxed, there is no other network to give. */
        snprintf(f.out, sizeof f.out, "%s/out-nosandbox", f.dir);
        tb_shell(&r, &f, NULL, EXTRA("--no-sandbox", "--", "-c", "true"));
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_str_eq(network_field(f.out, ""), "null");
        proc_result_free(&r);

        /* The dry run shows the same. */
        snprintf(f.out, sizeof f.out, "%s/out-dry", f.dir);
        tb_run(&r, "claude", &f, ENV(cred), EXTRA("--harness-bin", "/bin/sh", "--dry-run"));
        ck_assert_int_eq(r.status, 0);
        ck_assert_ptr_nonnull(strstr(r.out, " --unshare-net "));
        ck_assert_ptr_nonnull(strstr(r.out, "HTTPS_PROXY=" TRIAL_NET_PROXY_URL));
        proc_result_free(&r);
        tb_shell(&r, &f, NULL, EXTRA("--dry-run"));
        ck_assert_ptr_nonnull(strstr(r.out, " --unshare-net "));
        ck_assert_ptr_null(strstr(r.out, "HTTPS_PROXY"));
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(a_plan_line_without_network_gets_the_same_default)
{
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *plan = path_in(f.dir, "plan.jsonl"), *out = path_in(f.dir, "trial-a");
        _cleanup_free_ char *out_host = path_in(f.dir, "trial-b");
        _cleanup_free_ char *text = xasprintf(
                "{\"id\":\"a\",\"harness\":\"shell\",\"repo\":\"%s\",\"output_dir\":\"%s\",\"args\":[\"-c\",\"true\"]}\n"
                "{\"id\":\"b\",\"harness\":\"shell\",\"repo\":\"%s\",\"output_dir\":\"%s\",\"network\":\"host\","
                "\"args\":[\"-c\",\"true\"]}\n",
                f.repo, out, f.repo, out_host);
        write_plan(plan, text);
        char *argv[] = { TRIALBOX_BIN, "batch", plan, "-q", NULL };
        struct proc_result r;
        run_argv(&r, tb_env(NULL), argv);
        ck_assert_msg(r.status == 0, "%s\n%s", r.out, r.err);
        ck_assert_str_eq(network_field(out, "mode"), "none");
        ck_assert_str_eq(network_field(out_host, ""), "null");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(check_says_which_network_a_trial_of_each_harness_gets)
{
        struct proc_result r;
        char *argv[] = { TRIALBOX_BIN, "check", NULL };
        run_argv(&r, tb_env(NULL), argv);
        _cleanup_free_ char *all = xasprintf("%s%s", r.out, r.err);
        const char *line = strstr(all, "network ");
        ck_assert_msg(line, "no network line in:\n%s", all);
        _cleanup_free_ char *l = strndup(line, strcspn(line, "\n"));
        ck_assert_msg(strstr(l, "allow") && strstr(l, "claude") && strstr(l, "codex"), "%s", l);
        ck_assert_msg(strstr(l, "none") && strstr(l, "shell") && strstr(l, "muse") && strstr(l, "agy"), "%s", l);
        ck_assert_msg(strstr(l, "--network host"), "%s", l);
        proc_result_free(&r);

        const char *const one[][2] = { { "shell", "--network none" }, { "claude", "--network allow" } };
        for (size_t i = 0; i < TB_ARRAY_SIZE(one); i++) {
                char *argv1[] = { TRIALBOX_BIN, "check", "--harness", (char *)one[i][0], NULL };
                run_argv(&r, tb_env(NULL), argv1);
                _cleanup_free_ char *text = xasprintf("%s%s", r.out, r.err);
                const char *nl = strstr(text, "network ");
                ck_assert_msg(nl, "no network line in:\n%s", text);
                _cleanup_free_ char *want = xasprintf("a %s Trial gets %s", one[i][0], one[i][1]);
                ck_assert_msg(strstr(nl, want), "no '%s' in:\n%s", want, text);
                proc_result_free(&r);
        }
}
END_TEST

/* Write `text` to /proc/self/<file>; 0 or -1. */
static int write_self(const char *file, const char *text)
{
        char path[64];
        snprintf(path, sizeof path, "/proc/self/%s", file);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t n = write(fd, text, strlen(text));
        close(fd);
        return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* What bwrap --disable-userns leaves behind: a network namespace owned by
 * one user namespace and the sandbox's processes in a second, nested one.
 * The child reports 0 on `ready` when it is there, or the step that failed. */
static void __attribute__((noreturn)) nested_userns_child(int ready)
{
        char step = 1;
        uid_t uid = geteuid();
        gid_t gid = getegid();
        char map[64];
        if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
                goto out;
        step = 2;
        snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
        if (write_self("uid_map", map) < 0 || write_self("setgroups", "deny") < 0)
                goto out;
        snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
        if (write_self("gid_map", map) < 0)
                goto out;
        step = 3;
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct ifreq ifr = { 0 };
        snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
        if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
                goto out;
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
                goto out;
        step = 4;
        if (unshare(CLONE_NEWUSER) < 0)
                goto out;
        step = 0;
out:
        if (write(ready, &step, 1) != 1)
                _exit(1);
        for (;;)
                pause();
}

static void same_file(const char *a, const char *b, bool *same)
{
        struct stat sa, sb;
        ck_assert_int_eq(stat(a, &sa), 0);
        ck_assert_int_eq(stat(b, &sb), 0);
        *same = sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* CI saw `allow` void as nobody: "joining the sandbox's network namespace:
 * Operation not permitted". The proxy's listener joined the user namespace
 * of bwrap's child, which --disable-userns makes a nested one, without
 * rights over the network namespace; it must join the one that owns it. */
START_TEST(the_proxy_listens_in_a_network_namespace_whose_processes_are_in_a_nested_user_namespace)
{
        int ready[2];
        ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                close(ready[0]);
                nested_userns_child(ready[1]);
        }
        close(ready[1]);
        char step = -1;
        ck_assert_int_eq(read(ready[0], &step, 1), 1);
        close(ready[0]);
        if (step != 0) {
                kill(pid, SIGKILL);
                wait_status(pid);
                ck_abort_msg("could not make the nested namespaces (step %d)", step);
        }
        char user[64], net[64];
        snprintf(user, sizeof user, "/proc/%d/ns/user", (int)pid);
        snprintf(net, sizeof net, "/proc/%d/ns/net", (int)pid);
        bool same;
        same_file(user, "/proc/self/ns/user", &same);
        ck_assert(!same);
        same_file(net, "/proc/self/ns/net", &same);
        ck_assert(!same);

        int fd = -1;
        struct tb_error err = { 0 };
        int r = trial_net_listen_in(pid, TRIAL_NET_PROXY_PORT, &fd, &err);
        kill(pid, SIGKILL);
        wait_status(pid);
        ck_assert_msg(r == 0, "%s", err.msg);
        struct sockaddr_in sin;
        socklen_t sl = sizeof sin;
        ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
        ck_assert_int_eq(ntohs(sin.sin_port), TRIAL_NET_PROXY_PORT);
        ck_assert_uint_eq(ntohl(sin.sin_addr.s_addr), INADDR_LOOPBACK);
        int listening = 0;
        sl = sizeof listening;
        ck_assert_int_eq(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &sl), 0);
        ck_assert_int_eq(listening, 1);
        close(fd);
}
END_TEST

TB_SUITE("network", 120)
{
        tcase_add_test(tc, none_leaves_only_loopback_and_no_host_service_is_reachable);
        tcase_add_test(tc, two_concurrent_trials_cannot_reach_each_other);
        tcase_add_test(tc, allow_reaches_allowed_names_only_and_records_every_decision);
        tcase_add_test(tc, no_harness_endpoints_leaves_only_the_allow_host_patterns);
        tcase_add_test(tc, host_mode_keeps_the_host_network);
        tcase_add_test(tc, hundreds_of_long_names_asked_of_the_proxy_never_break_the_outcome);
        tcase_add_test(tc, dry_run_shows_unshare_net_and_bad_network_flags_are_usage_errors);
        tcase_add_test(tc, the_proxy_listens_in_a_network_namespace_whose_processes_are_in_a_nested_user_namespace);
        tcase_add_test(tc, a_host_loopback_port_named_exactly_is_reached_through_the_proxy);
        tcase_add_test(tc, the_default_network_is_allow_for_a_harness_with_endpoints_and_none_for_one_without);
        tcase_add_test(tc, a_plan_line_without_network_gets_the_same_default);
        tcase_add_test(tc, check_says_which_network_a_trial_of_each_harness_gets);
}
