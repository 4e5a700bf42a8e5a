/* A Trial's network: `run --network host|none|allow`.
 *
 *  host   the host's network namespace: explicit only.
 *  none   bwrap --unshare-net: a namespace of its own with loopback only.
 *         The default for a Harness that declares no endpoints.
 *  allow  --unshare-net, and proxy.h's allowlist proxy listening on the
 *         session's own 127.0.0.1:TRIAL_NET_PROXY_PORT: the socket is made
 *         inside the sandbox's network namespace by a child of trialbox's
 *         (setns), passed back over a socketpair, and served by trialbox's
 *         supervisor loop. The session starts only once it listens
 *         (supervisor_run's hold). Every connection is one line of
 *         OUTPUT_DIR/network.jsonl; the counts go to the Outcome. The
 *         default for a Harness whose plugin declares endpoints.
 * Unsandboxed, a session has the host's network whatever is asked. */
#ifndef TB_TRIAL_NET_H
#define TB_TRIAL_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "network/netpolicy.h"
#include "network/proxy.h"
#include "sandbox/spec.h"
#include "sandbox/supervisor.h"
#include "base/error.h"

#define TRIAL_NET_PROXY_PORT 3128
#define TRIAL_NET_PROXY_URL "http://127.0.0.1:3128"
#define TRIAL_NET_RECORD "network.jsonl"

/* TRIAL_NETWORK_DEFAULT: no --network given; trial_network_default()
 * decides once the Harness's endpoints are known. */
enum trial_network { TRIAL_NETWORK_HOST, TRIAL_NETWORK_NONE, TRIAL_NETWORK_ALLOW, TRIAL_NETWORK_DEFAULT };

/* "host", "none", "allow" → *out: 0, or -EINVAL. */
int trial_network_parse(const char *name, enum trial_network *out);
const char *trial_network_name(enum trial_network mode);

/* The mode a sandboxed Trial gets when none is asked: allow for a Harness
 * that declares endpoints (`n_endpoints`, required or optional), none for
 * one that declares none. (Unsandboxed, it has the host's.) */
enum trial_network trial_network_default(size_t n_endpoints);

struct trial_net {
        enum trial_network mode;
        struct netpolicy *policy; /* allow: until the proxy takes it */
        int record_fd;            /* allow: network.jsonl; -1 */
        const char *test_hosts;   /* tb_env's TRIALBOX_TEST_HOSTS (test builds only) */
        bool no_harness_endpoints; /* allow: the Harness's own endpoints are not allowed, only --allow-host */
        struct proxy *proxy;
};
#define TRIAL_NET_INIT { .mode = TRIAL_NETWORK_HOST, .record_fd = -1 }
void trial_net_done(struct trial_net *n);

/* The spec's part: --unshare-net for none and allow; for allow, the proxy
 * variables (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and their lowercase forms)
 * and NO_PROXY/no_proxy: the loopback names, so servers the session starts
 * for itself stay direct, unless the policy lets a host loopback port
 * through (netpolicy_allows_loopback): then none, or the session's clients
 * would go straight to its own loopback, where nothing listens. Call it
 * once n->policy is built. */
void trial_net_spec(const struct trial_net *n, struct sandbox_spec *spec);

/* allow: create OUTPUT_DIR/network.jsonl (O_EXCL|O_NOFOLLOW, 0644), opened in
 * `dirfd`. 0 or a negative errno with err. */
int trial_net_open_record(struct trial_net *n, const char *output_dir, struct tb_error *err);

/* supervisor_run's hold for allow (ctx: the trial_net): listen inside pid's
 * network namespace, start the proxy, hand its fd to the supervisor. */
int trial_net_hold(pid_t pid, struct supervisor_watch *watch, void *ctx, struct tb_error *err);

/* A TCP socket listening on 127.0.0.1:port inside the network namespace of
 * process `pid` (and its user namespace first, when it has one of its own),
 * made by a forked child and passed back, once bwrap has brought the
 * loopback up there. 0 (*out set) or a negative errno with err. */
int trial_net_listen_in(pid_t pid, uint16_t port, int *out, struct tb_error *err);

/* The Outcome's `network` object: NULL for host (and for a Trial void
 * before its mode was decided); {"mode":"none"}; for allow
 * {"mode","allowed","denied","hosts":{host:{allowed,denied}},
 * "harness_endpoints"} (false under --no-harness-endpoints). New reference. */
struct json_object *trial_net_outcome_json(const struct trial_net *n);

#endif
