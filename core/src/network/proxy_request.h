/* The head of a request to the allowlist proxy: parsed from the bytes a
 * (hostile) session sends, and rewritten for the origin server.
 *
 * Two forms are accepted:
 *   CONNECT host:port HTTP/1.x              (authority-form; then a blind relay)
 *   METHOD http://host[:port]/path HTTP/1.x (absolute-form; forwarded in origin-form)
 * Lines end in CRLF or a bare LF; the head ends at the first empty line and
 * may not exceed PROXY_HEAD_MAX bytes. */
#ifndef TB_PROXY_REQUEST_H
#define TB_PROXY_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "network/netpolicy.h"
#include "base/strbuf.h"

#define PROXY_HEAD_MAX 16384

struct proxy_request {
        bool connect;                   /* CONNECT, else an absolute-form request */
        char method[32];
        char host[NETPOLICY_HOST_MAX];  /* normalised (netpolicy_normalize_host) */
        uint16_t port;
        size_t head_len;                /* bytes of the head, its empty line included */
        size_t target_off, target_len;  /* the request target in the buffer */
        size_t path_off, path_len;      /* absolute-form: "/path?query" (may be empty: "/" is sent) */
        int status;                     /* on error: the HTTP status to answer with */
        const char *why;                /* on error: one lowercase phrase (static) */
};

/* Parse the head at buf[0..len). Returns the head's length (> 0) when it is
 * complete and valid, 0 when more bytes are needed (and the head may still
 * fit PROXY_HEAD_MAX), or -EINVAL with req->status (400, 405, 431, 501, 505)
 * and req->why set. Never reads past buf[len-1]; buf need not be terminated. */
int proxy_request_parse(const char *buf, size_t len, struct proxy_request *req);

/* The head to send to the origin server for an absolute-form request that
 * proxy_request_parse() accepted from the same buffer: origin-form request
 * line, the client's headers except Proxy-*, Connection, Keep-Alive and
 * Host, then `Host: <authority>` and `Connection: close`. Appended to `out`. */
void proxy_request_rewrite(const char *buf, const struct proxy_request *req, struct strbuf *out);

/* The head of the origin server's answer to an absolute-form request, for
 * the client, at buf[0..len): returns the head's length (> 0) once it is
 * complete, with what the client gets appended to `out`, every line ended
 * in CRLF whatever the server ended it with: an interim (1xx)
 * head whole (*interim set: another head follows), else the status line
 * and the headers but Connection, Keep-Alive and Proxy-Connection, then
 * `Connection: close` (the proxy carries one request per connection, so a
 * client that keeps its connection alive, as Claude Code and OpenCode do,
 * opens a new one for the next). 0 when more bytes are needed and the head
 * may still fit PROXY_HEAD_MAX; -EINVAL when it is not an HTTP/1.x
 * response head, or does not fit (then the bytes go through as they are). */
int proxy_response_rewrite(const char *buf, size_t len, struct strbuf *out, bool *interim);

#endif
