/* libFuzzer target: the head of a request to the network proxy,
 * proxy_request_parse(), and the origin-form head proxy_request_rewrite()
 * makes of an accepted one. The input is what a hostile session sends.
 *
 * Promises checked: the result is the head's length, 0 or -EINVAL; an error
 * carries a status and a reason; an accepted head names a valid host and a
 * port; the rewritten head is itself a complete head that carries no Proxy-*
 * header and ends its connection; read as a server's response head, the
 * client gets a whole head that ends its connection (proxy_response_rewrite).
 * test_proxy replays the seed corpus through
 * this same function. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "network/proxy_request.h"
#include "base/strbuf.h"

#define FUZZ_TARGET "fuzz_proxy_request"
#include "fuzz.h"

static void check_rewrite(const char *buf, const struct proxy_request *req)
{
        struct strbuf out = { 0 };
        proxy_request_rewrite(buf, req, &out);
        check(out.len > 4 && strcmp(out.s + out.len - 4, "\r\n\r\n") == 0, "the rewritten head ends with an empty line");
        check(strstr(out.s, "\r\n\r\n") == out.s + out.len - 4, "the rewritten head has one empty line");
        for (const char *line = strstr(out.s, "\r\n") + 2; *line; line = strstr(line, "\r\n") + 2)
                check(strncasecmp(line, "proxy-", 6) != 0, "no Proxy-* header is forwarded");
        check(strstr(out.s, "\r\nConnection: close\r\n") != NULL, "the forwarded request ends its connection");
        struct proxy_request again;
        int r = proxy_request_parse(out.s, out.len, &again);
        /* Origin-form is not proxy form: the proxy itself would refuse it, but as a head it is whole. */
        check(r == -EINVAL && again.status == 400, "the rewritten head is origin-form");
        free(out.s);
}

/* The same bytes as a server's response head: the client gets a whole head
 * that ends its connection, or the bytes as they are. */
static void check_response(const char *buf, size_t size)
{
        struct strbuf out = { 0 };
        bool interim = false;
        strbuf_add(&out, "");
        int r = proxy_response_rewrite(buf, size, &out, &interim);
        check(r >= -EINVAL && (r <= 0 || (size_t)r <= size), "a response head's length is within the input");
        if (r > 0) {
                check(out.len > 4 && strcmp(out.s + out.len - 4, "\r\n\r\n") == 0, "a response head ends with an empty line");
                check(interim || strstr(out.s, "\r\nConnection: close\r\n\r\n") != NULL,
                      "a final response head ends its connection");
        } else {
                check(out.len == 0, "nothing is made of an incomplete or unreadable response head");
        }
        free(out.s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* The proxy reads at most PROXY_HEAD_MAX bytes before it decides. */
        if (size > PROXY_HEAD_MAX)
                size = PROXY_HEAD_MAX;
        char *buf = malloc(size ? size : 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);
        check_response(buf, size);
        struct proxy_request req;
        int r = proxy_request_parse(buf, size, &req);
        check(r >= -EINVAL, "the result is a length, 0 or -EINVAL");
        if (r < 0) {
                check(req.status >= 400 && req.status < 600 && req.why && req.why[0], "an error has a status and a reason");
        } else if (r == 0) {
                check(size < PROXY_HEAD_MAX, "an incomplete head is under the cap");
        } else {
                check((size_t)r == req.head_len && (size_t)r <= size, "the head length is within the input");
                char host[NETPOLICY_HOST_MAX];
                snprintf(host, sizeof(host), strchr(req.host, ':') ? "[%s]" : "%s", req.host);
                check(req.host[0] && netpolicy_normalize_host(host) && strcmp(host, req.host) == 0,
                      "an accepted head names a normalised host");
                check(req.port > 0, "an accepted head has a port");
                if (!req.connect)
                        check_rewrite(buf, &req);
        }
        free(buf);
        return 0;
}
