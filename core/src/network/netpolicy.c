#define _GNU_SOURCE
#include "network/netpolicy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/str.h"

enum pattern_kind { PAT_NAME, PAT_SUFFIX, PAT_IP };

struct pattern {
        enum pattern_kind kind;
        char *text;                  /* as given, for the record */
        char host[NETPOLICY_HOST_MAX]; /* PAT_NAME: the name; PAT_SUFFIX: ".example.com" */
        struct sockaddr_storage ip;  /* PAT_IP */
        uint16_t port;               /* 0: any */
        bool loopback;               /* one port of this host's loopback (always with a port) */
};

struct netpolicy {
        struct pattern *pat;
        size_t n, cap;
        struct sockaddr_storage *own;
        size_t n_own, cap_own;
};

#define USAGE "a pattern is example.com, *.example.com, 192.0.2.1 or [2001:db8::1], each with an optional :PORT"

struct netpolicy *netpolicy_new(void)
{
        return xcalloc(1, sizeof(struct netpolicy));
}

void netpolicy_free(struct netpolicy *np)
{
        if (!np)
                return;
        for (size_t i = 0; i < np->n; i++)
                free(np->pat[i].text);
        free(np->pat);
        free(np->own);
        free(np);
}

size_t netpolicy_count(const struct netpolicy *np)
{
        return np->n;
}

bool netpolicy_allows_loopback(const struct netpolicy *np)
{
        for (size_t i = 0; i < np->n; i++)
                if (np->pat[i].loopback)
                        return true;
        return false;
}

bool netpolicy_is_loopback_name(const char *host)
{
        return strcmp(host, "localhost") == 0;
}

static bool label_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* A lowercased dotted name: labels of 1-63 allowed characters, not
 * beginning or ending with '-'; 253 at most. */
static bool valid_name(const char *s)
{
        size_t len = strlen(s), label = 0;
        if (len == 0 || len > 253)
                return false;
        for (size_t i = 0; i <= len; i++) {
                if (s[i] == '.' || s[i] == '\0') {
                        if (label == 0 || label > 63 || s[i - 1] == '-' || s[i - label] == '-')
                                return false;
                        label = 0;
                } else if (!label_char(s[i])) {
                        return false;
                } else {
                        label++;
                }
        }
        return true;
}

/* Resolvers read a name whose last label is all digits as an address
 * ("1.2.3", "2130706433"): such names are refused unless a dotted quad. */
static bool numeric_last_label(const char *s)
{
        const char *last = strrchr(s, '.');
        last = last ? last + 1 : s;
        return last[0] != '\0' && strspn(last, "0123456789") == strlen(last);
}

static bool parse_ip(const char *s, bool v6, struct sockaddr_storage *ss)
{
        memset(ss, 0, sizeof(*ss));
        if (v6) {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
                a->sin6_family = AF_INET6;
                return inet_pton(AF_INET6, s, &a->sin6_addr) == 1;
        }
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        return inet_pton(AF_INET, s, &a->sin_addr) == 1;
}

bool netpolicy_normalize_host(char *host)
{
        size_t len = strlen(host);
        if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
                memmove(host, host + 1, len - 2);
                host[len - 2] = '\0';
                for (char *c = host; *c; c++)
                        *c = (char)tolower((unsigned char)*c);
                struct sockaddr_storage ss;
                return strchr(host, ':') && parse_ip(host, true, &ss);
        }
        if (len > 0 && host[len - 1] == '.')
                host[--len] = '\0';
        for (char *c = host; *c; c++)
                *c = (char)tolower((unsigned char)*c);
        if (!valid_name(host))
                return false;
        struct sockaddr_storage ss;
        return !numeric_last_label(host) || parse_ip(host, false, &ss);
}

bool netpolicy_ip_literal(const char *host, struct sockaddr_storage *sa)
{
        return parse_ip(host, strchr(host, ':') != NULL, sa);
}

static int parse_port(const char *s, uint16_t *port)
{
        if (s[0] == '\0' || strlen(s) > 5 || strspn(s, "0123456789") != strlen(s))
                return -EINVAL;
        long v = strtol(s, NULL, 10);
        if (v < 1 || v > 65535)
                return -EINVAL;
        *port = (uint16_t)v;
        return 0;
}

/* Split "host[:port]" / "[v6][:port]": the host part into `host` (brackets
 * kept), the port into *port (0 when none). */
static int split_host_port(const char *pattern, char *host, size_t size, uint16_t *port)
{
        const char *colon;
        *port = 0;
        if (pattern[0] == '[') {
                const char *close = strchr(pattern, ']');
                if (!close)
                        return -EINVAL;
                colon = close[1] == ':' ? close + 1 : NULL;
                if (!colon && close[1] != '\0')
                        return -EINVAL;
        } else {
                colon = strchr(pattern, ':');
                if (colon && strchr(colon + 1, ':'))
                        return -EINVAL; /* a bare IPv6 address */
        }
        size_t hlen = colon ? (size_t)(colon - pattern) : strlen(pattern);
        if (hlen == 0 || hlen >= size)
                return -EINVAL;
        memcpy(host, pattern, hlen);
        host[hlen] = '\0';
        return colon ? parse_port(colon + 1, port) : 0;
}

static bool has_suffix(const char *s, const char *suffix)
{
        size_t n = strlen(s), m = strlen(suffix);
        return n > m && strcmp(s + n - m, suffix) == 0;
}

static int usage(struct tb_error *err, const char *pattern, const char *why)
{
        _cleanup_free_ char *shown = str_escape(pattern);
        return tb_fail(err, -EINVAL, "--allow-host '%s': %s; " USAGE, shown, why);
}

/* The host's loopback is let through one port at a time, named exactly:
 * an address that reaches it (127.0.0.0/8, ::1, 0.0.0.0, ::) or the name
 * localhost, with its port. */
static bool reaches_loopback(const struct sockaddr_storage *ip)
{
        const char *c = netpolicy_address_class((const struct sockaddr *)ip);
        return c && (strcmp(c, "a loopback address") == 0 || strcmp(c, "an unspecified address") == 0);
}

static int loopback_pattern(const char *text, struct pattern *p, struct tb_error *err)
{
        if (!p->port)
                return usage(err, text,
                             "this host's loopback is let through one port at a time: name it, e.g. 127.0.0.1:8000 "
                             "or localhost:8000");
        p->loopback = true;
        return 0;
}

static int parse_pattern(const char *text, struct pattern *p, struct tb_error *err)
{
        char host[NETPOLICY_HOST_MAX + 2];
        if (strcmp(text, "*") == 0)
                return usage(err, text, "'*' would allow every host");
        if (strchr(text, ':') && text[0] != '[' && strchr(strchr(text, ':') + 1, ':'))
                return usage(err, text, "put an IPv6 address in brackets");
        if (split_host_port(text, host, sizeof(host), &p->port) < 0)
                return usage(err, text, "not a host with an optional port from 1 to 65535");
        if (host[0] == '[') {
                if (!netpolicy_normalize_host(host))
                        return usage(err, text, "not an IPv6 address");
                p->kind = PAT_IP;
                if (!parse_ip(host, true, &p->ip))
                        return usage(err, text, "not an IPv6 address");
                return reaches_loopback(&p->ip) ? loopback_pattern(text, p, err) : 0;
        }
        bool wildcard = str_has_prefix(host, "*.");
        char *name = wildcard ? host + 2 : host;
        if (strchr(name, '*'))
                return usage(err, text, "a wildcard may only be a leading '*.'");
        if (!netpolicy_normalize_host(name))
                return usage(err, text, "not a host name");
        struct sockaddr_storage ss;
        if (parse_ip(name, false, &ss)) {
                if (wildcard)
                        return usage(err, text, "a wildcard cannot precede an address");
                p->kind = PAT_IP;
                p->ip = ss;
                return reaches_loopback(&p->ip) ? loopback_pattern(text, p, err) : 0;
        }
        if (strcmp(name, "localhost") == 0 || has_suffix(name, ".localhost")) {
                if (wildcard || strcmp(name, "localhost") != 0)
                        return usage(err, text, "names under localhost are this host's loopback: use localhost:PORT");
                p->kind = PAT_NAME;
                snprintf(p->host, sizeof(p->host), "localhost");
                return loopback_pattern(text, p, err);
        }
        if (wildcard && !strchr(name, '.'))
                return usage(err, text, "a wildcard over a whole top-level domain is too wide");
        p->kind = wildcard ? PAT_SUFFIX : PAT_NAME;
        snprintf(p->host, sizeof(p->host), "%s%.253s", wildcard ? "." : "", name); /* valid_name: 253 at most */
        return 0;
}

int netpolicy_add(struct netpolicy *np, const char *pattern, struct tb_error *err)
{
        struct pattern p = { 0 };
        int r = parse_pattern(pattern, &p, err);
        if (r < 0)
                return r;
        GREEDY_REALLOC(np->pat, np->cap, np->n + 1);
        p.text = xstrdup(pattern);
        np->pat[np->n++] = p;
        return 0;
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr_storage *b)
{
        if (a->sa_family != b->ss_family)
                return false;
        if (a->sa_family == AF_INET)
                return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
                       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
}

const char *netpolicy_match(const struct netpolicy *np, const char *host, uint16_t port)
{
        struct sockaddr_storage ip;
        bool literal = netpolicy_ip_literal(host, &ip);
        for (size_t i = 0; i < np->n; i++) {
                const struct pattern *p = &np->pat[i];
                if (p->port && p->port != port)
                        continue;
                bool hit = false;
                switch (p->kind) {
                case PAT_IP:
                        hit = literal && same_ip((const struct sockaddr *)&ip, &p->ip);
                        break;
                case PAT_NAME:
                        hit = !literal && strcmp(host, p->host) == 0;
                        break;
                case PAT_SUFFIX:
                        hit = !literal && has_suffix(host, p->host);
                        break;
                }
                if (hit)
                        return p->text;
        }
        return NULL;
}

static const char *class_v4(uint32_t a)
{
        if ((a >> 24) == 127)
                return "a loopback address";
        if ((a >> 24) == 0)
                return "an unspecified address";
        if ((a >> 16) == 0xa9fe)
                return "a link-local address";
        if ((a >> 28) == 0xe)
                return "a multicast address";
        if (a == 0xffffffffu)
                return "a broadcast address";
        return NULL;
}

const char *netpolicy_address_class(const struct sockaddr *sa)
{
        if (sa->sa_family == AF_INET)
                return class_v4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
        if (sa->sa_family != AF_INET6)
                return "not an internet address";
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a))
                return "a loopback address";
        if (IN6_IS_ADDR_UNSPECIFIED(a))
                return "an unspecified address";
        if (IN6_IS_ADDR_LINKLOCAL(a))
                return "a link-local address";
        if (IN6_IS_ADDR_MULTICAST(a))
                return "a multicast address";
        if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
                uint32_t v4;
                memcpy(&v4, &a->s6_addr[12], 4);
                return class_v4(ntohl(v4));
        }
        return NULL;
}

static bool listed_literally(const struct netpolicy *np, const struct sockaddr *sa, uint16_t port)
{
        for (size_t i = 0; i < np->n; i++) {
                const struct pattern *p = &np->pat[i];
                if (p->kind == PAT_IP && (!p->port || p->port == port) && same_ip(sa, &p->ip))
                        return true;
        }
        return false;
}

const char *netpolicy_refuses_address(const struct netpolicy *np, const struct sockaddr *sa, uint16_t port)
{
        if (listed_literally(np, sa, port))
                return NULL;
        const char *c = netpolicy_address_class(sa);
        if (c)
                return c;
        for (size_t i = 0; i < np->n_own; i++)
                if (same_ip(sa, &np->own[i]))
                        return "one of this host's own addresses";
        return NULL;
}

void netpolicy_add_own_address(struct netpolicy *np, const struct sockaddr *sa)
{
        if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
                return;
        GREEDY_REALLOC(np->own, np->cap_own, np->n_own + 1);
        struct sockaddr_storage *o = &np->own[np->n_own++];
        memset(o, 0, sizeof(*o));
        memcpy(o, sa, sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
}

int netpolicy_add_own_addresses(struct netpolicy *np, struct tb_error *err)
{
        struct ifaddrs *ifs;
        if (getifaddrs(&ifs) < 0)
                return tb_fail(err, -errno, "listing this host's addresses: %s", strerror(errno));
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
                if (i->ifa_addr)
                        netpolicy_add_own_address(np, i->ifa_addr);
        freeifaddrs(ifs);
        return 0;
}
