#define _GNU_SOURCE
#include "network/trial_net.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/io.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/spawn.h"

static const char *const mode_names[] = {
        [TRIAL_NETWORK_HOST] = "host",
        [TRIAL_NETWORK_NONE] = "none",
        [TRIAL_NETWORK_ALLOW] = "allow",
};

enum trial_network trial_network_default(size_t n_endpoints)
{
        return n_endpoints > 0 ? TRIAL_NETWORK_ALLOW : TRIAL_NETWORK_NONE;
}

int trial_network_parse(const char *name, enum trial_network *out)
{
        for (size_t i = 0; i < TB_ARRAY_SIZE(mode_names); i++)
                if (strcmp(name, mode_names[i]) == 0) {
                        *out = (enum trial_network)i;
                        return 0;
                }
        return -EINVAL;
}

const char *trial_network_name(enum trial_network mode)
{
        if (mode == TRIAL_NETWORK_DEFAULT)
                return "default";
        return (size_t)mode < TB_ARRAY_SIZE(mode_names) ? mode_names[mode] : "?";
}

void trial_net_done(struct trial_net *n)
{
        proxy_free(n->proxy);
        n->proxy = NULL;
        netpolicy_free(n->policy);
        n->policy = NULL;
        tb_closep(&n->record_fd);
}

void trial_net_spec(const struct trial_net *n, struct sandbox_spec *spec)
{
        static const char *const proxy_vars[] = { "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                                                  "http_proxy", "https_proxy", "all_proxy" };
        if (n->mode == TRIAL_NETWORK_HOST)
                return;
        spec->unshare_net = true;
        if (n->mode != TRIAL_NETWORK_ALLOW)
                return;
        for (size_t i = 0; i < TB_ARRAY_SIZE(proxy_vars); i++)
                sandbox_setenv(spec, proxy_vars[i], TRIAL_NET_PROXY_URL, false);
        /* Servers the session runs for itself stay direct, unless a host
         * loopback port is let through: the CLIs honour NO_PROXY, and a
         * local model server's requests must reach the proxy. */
        const char *direct = n->policy && netpolicy_allows_loopback(n->policy) ? "" : "localhost,127.0.0.1,::1";
        sandbox_setenv(spec, "NO_PROXY", direct, false);
        sandbox_setenv(spec, "no_proxy", direct, false);
}

int trial_net_open_record(struct trial_net *n, const char *output_dir, struct tb_error *err)
{
        if (n->mode != TRIAL_NETWORK_ALLOW)
                return 0;
        _cleanup_free_ char *path = xasprintf("%s/%s", output_dir, TRIAL_NET_RECORD);
        n->record_fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
        if (n->record_fd < 0)
                return tb_fail(err, -errno, "cannot create the network record '%s': %s", path, strerror(errno));
        return 0;
}

/* Same namespace as ours? */
static bool same_ns(int fd, const char *ours)
{
        struct stat a, b;
        return fstat(fd, &a) == 0 && stat(ours, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Wait until `lo` is up in the current network namespace: bwrap brings it
 * up (address first, then the link) before it reads its --block-fd, which
 * waits for us. Doing it here instead races bwrap's own RTM_NEWADDR, which
 * then fails the sandbox. 0, or -1 with errno (ETIMEDOUT after 10 s). */
static int loopback_wait(void)
{
        _cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return -1;
        for (int i = 0; i < 10000; i++) {
                struct ifreq ifr = { 0 };
                snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
                if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
                        return -1;
                if (ifr.ifr_flags & IFF_UP)
                        return 0;
                usleep(1000);
        }
        errno = ETIMEDOUT;
        return -1;
}

/* What the child sends back: 0 and the fd, or an errno and the step. */
struct listen_reply {
        int err;
        char step[64];
};

struct listen_in {
        int user_fd, net_fd; /* the namespaces to join (user_fd -1: trialbox's own) */
        uint16_t port;
        int sock, parent_end; /* the socketpair: the child's end, trialbox's */
};

/* In the child: join the namespaces, listen, send the socket back on
 * `sock`. A process of its own, not a thread of trialbox's: setns() into a
 * user namespace refuses a process with threads (the proxy's resolver). */
static int listen_child(void *ctx)
{
        const struct listen_in *in = ctx;
        int user_fd = in->user_fd, net_fd = in->net_fd, sock = in->sock;
        uint16_t port = in->port;
        close(in->parent_end);
        struct listen_reply rep = { 0 };
        int lfd = -1;
        const char *step = "joining the sandbox's user namespace";
        if (user_fd >= 0 && setns(user_fd, CLONE_NEWUSER) < 0)
                goto fail;
        step = "joining the sandbox's network namespace";
        if (setns(net_fd, CLONE_NEWNET) < 0)
                goto fail;
        step = "waiting for the sandbox's loopback";
        if (loopback_wait() < 0)
                goto fail;
        step = "listening on the sandbox's 127.0.0.1";
        lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port),
                                   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
            bind(lfd, (struct sockaddr *)&sin, sizeof sin) < 0 || listen(lfd, SOMAXCONN) < 0)
                goto fail;
        goto send;
fail:
        rep.err = errno ? errno : EIO;
        snprintf(rep.step, sizeof rep.step, "%s", step);
send:;
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u = { 0 };
        struct iovec iov = { .iov_base = &rep, .iov_len = sizeof rep };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (rep.err == 0) {
                msg.msg_control = u.buf;
                msg.msg_controllen = sizeof u.buf;
                struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &lfd, sizeof lfd);
        }
        return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof rep ? 0 : 1;
}

int trial_net_listen_in(pid_t pid, uint16_t port, int *out, struct tb_error *err)
{
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
        _cleanup_close_ int net_fd = open(path, O_RDONLY | O_CLOEXEC);
        if (net_fd < 0)
                return tb_fail(err, -errno, "cannot open the sandbox's network namespace '%s': %s", path,
                               strerror(errno));
        /* The user namespace that owns the network namespace, not the
         * process's own: with --disable-userns bwrap unshares a second,
         * nested user namespace, and a process that joined that one has no
         * capability over the network namespace (EPERM, depending on when
         * we looked). */
        _cleanup_close_ int user_fd = ioctl(net_fd, NS_GET_USERNS);
        if (user_fd < 0)
                return tb_fail(err, -errno, "cannot find the user namespace that owns '%s': %s", path,
                               strerror(errno));
        if (same_ns(user_fd, "/proc/self/ns/user"))
                tb_closep(&user_fd);
        if (same_ns(net_fd, "/proc/self/ns/net"))
                return tb_fail(err, -EINVAL, "the sandbox (pid %d) shares trialbox's network namespace", (int)pid);

        int sp[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return tb_fail(err, -errno, "socketpair: %s", strerror(errno));
        struct listen_in in = { user_fd, net_fd, port, sp[1], sp[0] };
        struct spawn child = { .child_fn = listen_child, .ctx = &in };
        int r = spawn_start(&child, err);
        close(sp[1]);
        if (r < 0) {
                close(sp[0]);
                return r;
        }
        _cleanup_close_ int rd = sp[0];

        struct listen_reply rep = { 0 };
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u = { 0 };
        struct iovec iov = { .iov_base = &rep, .iov_len = sizeof rep };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
        ssize_t n = RETRY_EINTR(recvmsg(rd, &msg, MSG_CMSG_CLOEXEC));
        int e = errno;
        (void)spawn_wait(&child, NULL);
        spawn_done(&child);
        struct cmsghdr *c = n == (ssize_t)sizeof rep ? CMSG_FIRSTHDR(&msg) : NULL;
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                memcpy(out, CMSG_DATA(c), sizeof *out);
                return 0;
        }
        if (n == (ssize_t)sizeof rep && rep.err) {
                rep.step[sizeof rep.step - 1] = '\0';
                return tb_fail(err, -rep.err, "the network proxy: %s: %s", rep.step, strerror(rep.err));
        }
        return tb_fail(err, n < 0 ? -e : -EIO, "the network proxy: no socket came back from the sandbox's namespace");
}

/* -v shows every name the proxy resolves: a denied one never is. */
static void on_lookup(const char *host, void *ctx)
{
        (void)ctx;
        log_info("proxy: resolving '%s'", host);
}

static void proxy_ready(void *ctx)
{
        struct trial_net *n = ctx;
        if (n->proxy && proxy_dispatch(n->proxy) < 0)
                log_warn("the network proxy failed; the session's connections through it end");
}

static void proxy_done(void *ctx)
{
        struct trial_net *n = ctx;
        if (n->proxy)
                proxy_finish(n->proxy);
}

int trial_net_hold(pid_t pid, struct supervisor_watch *watch, void *ctx, struct tb_error *err)
{
        struct trial_net *n = ctx;
        int lfd = -1;
        int r = trial_net_listen_in(pid, TRIAL_NET_PROXY_PORT, &lfd, err);
        if (r < 0)
                return r;
        struct netpolicy *policy = TAKE_PTR(n->policy); /* the proxy's from here, even when it fails */
        const struct proxy_config cfg = {
                .listen_fd = lfd,
                .record_fd = n->record_fd,
                .policy = policy,
                .test_hosts = n->test_hosts,
                .on_lookup = on_lookup,
        };
        r = proxy_new(&cfg, &n->proxy, err);
        if (r < 0)
                return r;
        *watch = (struct supervisor_watch){
                .fd = proxy_fd(n->proxy), .ready = proxy_ready, .finish = proxy_done, .ctx = n,
        };
        return 0;
}

struct json_object *trial_net_outcome_json(const struct trial_net *n)
{
        /* Host; or not decided yet: the Trial was void before its plugin ran. */
        if (n->mode == TRIAL_NETWORK_HOST || n->mode == TRIAL_NETWORK_DEFAULT)
                return NULL;
        json_object *j;
        if (n->mode == TRIAL_NETWORK_ALLOW && n->proxy) {
                j = proxy_stats_json(n->proxy);
        } else {
                j = json_object_new_object();
                if (n->mode == TRIAL_NETWORK_ALLOW) {
                        json_object_object_add(j, "allowed", json_object_new_int(0));
                        json_object_object_add(j, "denied", json_object_new_int(0));
                        json_object_object_add(j, "hosts", json_object_new_object());
                }
        }
        json_object_object_add(j, "mode", json_object_new_string(trial_network_name(n->mode)));
        if (n->mode == TRIAL_NETWORK_ALLOW)
                json_object_object_add(j, "harness_endpoints", json_object_new_boolean(!n->no_harness_endpoints));
        return j;
}
