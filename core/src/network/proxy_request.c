#define _GNU_SOURCE
#include "network/proxy_request.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/macro.h"
#include "base/strbuf.h"

static int fail(struct proxy_request *req, int status, const char *why)
{
        req->status = status;
        req->why = why;
        return -EINVAL;
}

static bool tchar(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

/* The end of the line starting at `off` (the '\n'), or len. */
static size_t line_end(const char *buf, size_t len, size_t off)
{
        const char *nl = memchr(buf + off, '\n', len - off);
        return nl ? (size_t)(nl - buf) : len;
}

/* The line's length without its '\r'. */
static size_t content_len(const char *buf, size_t off, size_t end)
{
        return end > off && buf[end - 1] == '\r' ? end - off - 1 : end - off;
}

static bool port_from(const char *s, size_t n, uint16_t *port)
{
        if (n == 0 || n > 5)
                return false;
        unsigned v = 0;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (unsigned)(s[i] - '0');
        }
        if (v < 1 || v > 65535)
                return false;
        *port = (uint16_t)v;
        return true;
}

/* "host[:port]" or "[v6][:port]" into req->host and req->port. */
static bool parse_authority(const char *s, size_t n, bool port_required, struct proxy_request *req)
{
        size_t host_len = n;
        const char *colon = NULL;
        if (n > 0 && s[0] == '[') {
                const char *close = memchr(s, ']', n);
                if (!close)
                        return false;
                host_len = (size_t)(close - s) + 1;
                if (host_len < n) {
                        if (s[host_len] != ':')
                                return false;
                        colon = s + host_len;
                }
        } else {
                colon = memchr(s, ':', n);
                if (colon)
                        host_len = (size_t)(colon - s);
        }
        if (host_len == 0 || host_len >= sizeof(req->host))
                return false;
        memcpy(req->host, s, host_len);
        req->host[host_len] = '\0';
        if (!netpolicy_normalize_host(req->host))
                return false;
        if (!colon)
                return !port_required;
        return port_from(colon + 1, (size_t)(s + n - colon - 1), &req->port);
}

static int parse_target(const char *buf, struct proxy_request *req)
{
        const char *t = buf + req->target_off;
        size_t n = req->target_len;
        if (req->connect) {
                if (!parse_authority(t, n, true, req))
                        return fail(req, 400, "CONNECT needs host:port with a valid host name and port");
                return 0;
        }
        if (n >= 8 && strncasecmp(t, "https://", 8) == 0)
                return fail(req, 400, "send https through CONNECT, not as an absolute-form request");
        if (n < 7 || strncasecmp(t, "http://", 7) != 0)
                return fail(req, 400, "this is a proxy: send absolute-form requests (http://host/path) or CONNECT");
        size_t a = 7, e = a;
        while (e < n && t[e] != '/' && t[e] != '?' && t[e] != '#')
                e++;
        if (memchr(t + a, '@', e - a))
                return fail(req, 400, "user information in the request target is not accepted");
        if (memchr(t + e, '#', n - e))
                return fail(req, 400, "a fragment in the request target is not accepted");
        req->port = 80;
        if (!parse_authority(t + a, e - a, false, req))
                return fail(req, 400, "the request target needs a valid host name and port");
        req->path_off = req->target_off + e;
        req->path_len = n - e;
        return 0;
}

static int parse_request_line(const char *buf, size_t end, struct proxy_request *req)
{
        size_t n = content_len(buf, 0, end), i = 0;
        while (i < n && tchar(buf[i]))
                i++;
        if (i == 0 || i >= sizeof(req->method) || i >= n || buf[i] != ' ')
                return fail(req, 400, "malformed request line");
        memcpy(req->method, buf, i);
        req->method[i] = '\0';
        req->connect = strcmp(req->method, "CONNECT") == 0;
        req->target_off = ++i;
        while (i < n && buf[i] > ' ' && buf[i] < 0x7f)
                i++;
        req->target_len = i - req->target_off;
        if (req->target_len == 0 || i >= n || buf[i] != ' ')
                return fail(req, 400, "malformed request line");
        const char *v = buf + i + 1;
        size_t vn = n - i - 1;
        if (vn != 8 || memcmp(v, "HTTP/", 5) != 0 || v[6] != '.')
                return fail(req, 400, "malformed request line");
        if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
                return fail(req, 505, "only HTTP/1.0 and HTTP/1.1 are spoken here");
        return parse_target(buf, req);
}

static int check_header_line(const char *buf, size_t off, size_t n, struct proxy_request *req)
{
        if (buf[off] == ' ' || buf[off] == '\t')
                return fail(req, 400, "folded header lines are not accepted");
        size_t i = 0;
        while (i < n && tchar(buf[off + i]))
                i++;
        if (i == 0 || i >= n || buf[off + i] != ':')
                return fail(req, 400, "malformed header line");
        for (; i < n; i++) {
                unsigned char c = (unsigned char)buf[off + i];
                if ((c < ' ' && c != '\t') || c == 0x7f)
                        return fail(req, 400, "a control character in a header");
        }
        return 0;
}

/* The head's length (its empty line included), or 0 when it is not complete in buf[0..len). */
static size_t head_end(const char *buf, size_t len)
{
        for (size_t off = 0; off < len;) {
                size_t end = line_end(buf, len, off);
                if (end == len)
                        return 0;
                if (off > 0 && content_len(buf, off, end) == 0)
                        return end + 1;
                off = end + 1;
        }
        return 0;
}

int proxy_request_parse(const char *buf, size_t len, struct proxy_request *req)
{
        memset(req, 0, sizeof(*req));
        if (len == 0)
                return 0;
        size_t scan = len > PROXY_HEAD_MAX ? (size_t)PROXY_HEAD_MAX : len;
        size_t first = line_end(buf, scan, 0);
        /* cppcheck takes scan for 0 here (it is not: len > 0 above). */
        // cppcheck-suppress knownConditionTrueFalse
        if (first < scan) {
                int r = parse_request_line(buf, first, req);
                if (r < 0)
                        return r;
        } else {
                /* No whole request line yet: fail early on what can never become one. */
                // cppcheck-suppress knownConditionTrueFalse
                for (size_t i = 0; i < scan; i++)
                        if ((unsigned char)buf[i] < ' ' && buf[i] != '\r')
                                return fail(req, 400, "malformed request line");
        }
        size_t head = head_end(buf, scan);
        if (head == 0)
                return len >= PROXY_HEAD_MAX ? fail(req, 431, "the request head is over 16 KiB") : 0;
        for (size_t off = first + 1; off < head;) {
                size_t end = line_end(buf, head, off);
                size_t n = content_len(buf, off, end);
                if (n == 0)
                        break;
                int r = check_header_line(buf, off, n, req);
                if (r < 0)
                        return r;
                off = end + 1;
        }
        req->head_len = head;
        return (int)head;
}

static bool dropped_header(const char *name, size_t n)
{
        static const char *const dropped[] = { "connection", "keep-alive", "host", "te", "upgrade" };
        if (n >= 6 && strncasecmp(name, "proxy-", 6) == 0)
                return true;
        for (size_t i = 0; i < TB_ARRAY_SIZE(dropped); i++)
                if (n == strlen(dropped[i]) && strncasecmp(name, dropped[i], n) == 0)
                        return true;
        return false;
}

void proxy_request_rewrite(const char *buf, const struct proxy_request *req, struct strbuf *out)
{
        size_t first = line_end(buf, req->head_len, 0);
        const char *version = buf + content_len(buf, 0, first) - 8;
        if (req->path_len > 0 && buf[req->path_off] == '/')
                strbuf_addf(out, "%s %.*s %.8s\r\n", req->method, (int)req->path_len, buf + req->path_off, version);
        else
                strbuf_addf(out, "%s /%.*s %.8s\r\n", req->method, (int)req->path_len, buf + req->path_off, version);
        for (size_t off = first + 1; off < req->head_len;) {
                size_t end = line_end(buf, req->head_len, off);
                size_t n = content_len(buf, off, end);
                if (n == 0)
                        break;
                size_t name = (size_t)((const char *)memchr(buf + off, ':', n) - (buf + off));
                if (!dropped_header(buf + off, name))
                        strbuf_addf(out, "%.*s\r\n", (int)n, buf + off);
                off = end + 1;
        }
        bool v6 = strchr(req->host, ':') != NULL;
        strbuf_addf(out, "Host: %s%s%s", v6 ? "[" : "", req->host, v6 ? "]" : "");
        if (req->port != 80)
                strbuf_addf(out, ":%u", (unsigned)req->port);
        strbuf_add(out, "\r\nConnection: close\r\n\r\n");
}

static bool is_header(const char *line, size_t n, const char *name)
{
        size_t m = strlen(name);
        return n > m && line[m] == ':' && strncasecmp(line, name, m) == 0;
}

int proxy_response_rewrite(const char *buf, size_t len, struct strbuf *out, bool *interim)
{
        static const char version[] = "HTTP/1.";
        if (memcmp(buf, version, len < sizeof(version) - 1 ? len : sizeof(version) - 1) != 0)
                return -EINVAL;
        if (len < sizeof(version))
                return 0; /* "HTTP/1." and no minor version yet */
        size_t head = head_end(buf, len > PROXY_HEAD_MAX ? (size_t)PROXY_HEAD_MAX : len);
        if (head == 0)
                return len >= PROXY_HEAD_MAX ? -EINVAL : 0;
        if (memchr(buf, '\0', head))
                return -EINVAL;
        size_t first = line_end(buf, head, 0);
        size_t n = content_len(buf, 0, first);
        /* "HTTP/1.x SSS": a status of three digits. */
        if (n < 12 || buf[8] != ' ' || buf[9] < '1' || buf[9] > '5' || buf[10] < '0' || buf[10] > '9' ||
            buf[11] < '0' || buf[11] > '9')
                return -EINVAL;
        /* An interim (1xx) head passes whole; a final one loses its
         * connection headers and ends the connection. Either way each line
         * ends in CRLF, whatever the server ended it with. */
        *interim = buf[9] == '1';
        strbuf_addf(out, "%.*s\r\n", (int)n, buf);
        for (size_t off = first + 1; off < head;) {
                size_t end = line_end(buf, head, off);
                size_t ln = content_len(buf, off, end);
                if (ln == 0)
                        break;
                if (*interim || (!is_header(buf + off, ln, "connection") && !is_header(buf + off, ln, "keep-alive") &&
                                 !is_header(buf + off, ln, "proxy-connection")))
                        strbuf_addf(out, "%.*s\r\n", (int)ln, buf + off);
                off = end + 1;
        }
        strbuf_add(out, *interim ? "\r\n" : "Connection: close\r\n\r\n");
        return (int)head;
}
