/* The network policy of `--network allow`: which hosts a session may reach
 * through the proxy (the allowlist of `--allow-host PATTERN`), and which
 * addresses are refused even when a listed name resolves to them.
 *
 * Patterns (as Anthropic's sandbox-runtime):
 *   example.com          that name only (case-insensitive; a trailing dot is ignored)
 *   *.example.com        strict subdomains only: a.example.com, a.b.example.com, not example.com
 *   192.0.2.1            an IPv4 literal
 *   [2001:db8::1]        an IPv6 literal, always in brackets
 * each with an optional `:PORT` (1-65535); without one, any port matches.
 * Refused as usage errors: `*`, TLD-wide wildcards (`*.com`), a wildcard
 * anywhere but a leading `*.`, bare IPv6, empty labels, characters other
 * than letters, digits, '-' and '_', and numeric names that are not a
 * dotted-quad IPv4 address (`1.2.3`, `2130706433`: resolvers read them as
 * addresses).
 *
 * This host's loopback is let through one port at a time, named exactly:
 * `127.0.0.1:8000`, `[::1]:8000`, `localhost:8000` (any address of
 * 127.0.0.0/8, ::1, 0.0.0.0 or ::, or the name localhost), always with its
 * port: without one, or as a pattern (`*.localhost`, a name under
 * localhost), it is a usage error. The name localhost is never resolved:
 * the proxy connects to 127.0.0.1, then ::1 (netpolicy_is_loopback_name).
 *
 * Addresses refused after resolving a name (netpolicy_refuses_address):
 * loopback, link-local, unspecified ("this network", 0.0.0.0/8 and ::),
 * multicast, broadcast, IPv4-mapped forms of those, and the host's own
 * addresses (netpolicy_add_own_addresses) -- unless that address is listed
 * literally as an IP pattern (with a matching port, if it has one). */
#ifndef TB_NETPOLICY_H
#define TB_NETPOLICY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/error.h"

/* A host name's longest text form (253 characters, one trailing dot dropped). */
#define NETPOLICY_HOST_MAX 256

struct netpolicy;

/* An empty policy (allows nothing). Never NULL. */
struct netpolicy *netpolicy_new(void);
void netpolicy_free(struct netpolicy *np);
static inline void netpolicy_freep(struct netpolicy **np) { netpolicy_free(*np); }

/* Add one pattern. -EINVAL with a one-line usage message in err when it is
 * not one of the forms above; the policy is unchanged then. */
int netpolicy_add(struct netpolicy *np, const char *pattern, struct tb_error *err);

/* How many patterns were added. */
size_t netpolicy_count(const struct netpolicy *np);

/* Does a pattern let a port of this host's loopback through? */
bool netpolicy_allows_loopback(const struct netpolicy *np);

/* Is `host` (normalised) the loopback name a pattern may list (localhost),
 * connected to as 127.0.0.1 and ::1 without resolving? */
bool netpolicy_is_loopback_name(const char *host);

/* Record the host's own addresses (getifaddrs), refused unless listed
 * literally. 0 or negative errno. */
int netpolicy_add_own_addresses(struct netpolicy *np, struct tb_error *err);
/* Add one address to the host's own (tests; and anything getifaddrs misses). */
void netpolicy_add_own_address(struct netpolicy *np, const struct sockaddr *sa);

/* Normalise a requested host in place: lowercase, one trailing dot dropped,
 * IPv6 brackets removed. Returns false (host unspecified) when it is not a
 * syntactically valid name or IP literal. */
bool netpolicy_normalize_host(char *host);

/* The pattern (as given) that allows host:port, or NULL. `host` must be
 * normalised. Checked on the name alone: nothing is resolved. */
const char *netpolicy_match(const struct netpolicy *np, const char *host, uint16_t port);

/* Is `host` (normalised) an IP literal? Fills *sa (port 0) when it is. */
bool netpolicy_ip_literal(const char *host, struct sockaddr_storage *sa);

/* Why this address (with its port) may not be connected to, as a short
 * phrase ("a loopback address"), or NULL when it may. */
const char *netpolicy_refuses_address(const struct netpolicy *np, const struct sockaddr *sa, uint16_t port);

/* The special class of an address ("a loopback address", ...), or NULL for
 * an ordinary one. Pure: the host's own addresses are not considered. */
const char *netpolicy_address_class(const struct sockaddr *sa);

#endif
