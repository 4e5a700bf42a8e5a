/* libFuzzer target: the Credentials parser, credentials_parse().
 *
 * The input is a Credentials file's contents, passed as libFuzzer gives it:
 * exactly `size` bytes with no terminator, so reading past the end is an
 * AddressSanitizer report. Beyond "no crash, no leak", each run checks what
 * the header promises: a failure is -EINVAL or -EFBIG with *out untouched and
 * a one-line message naming the file; a success holds only valid names, each
 * readable with credentials_get() and removable with credentials_unset(). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logins/credentials.h"
#include "base/error.h"
#include "base/strv.h"

#define FUZZ_TARGET "fuzz_credentials"
#include "fuzz.h"

#define PATH "/fuzz/credentials.json"

static void check_message(const struct tb_error *err, int r)
{
        check(err->code == r, "err.code is the returned error");
        check(strstr(err->msg, "'" PATH "'") != NULL, "the message names the file");
        for (const unsigned char *p = (const unsigned char *)err->msg; *p; p++)
                check(*p >= 0x20 && *p != 0x7f, "the message is one printable line");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct credentials *c = (struct credentials *)&check; /* a sentinel: must stay untouched on failure */
        struct tb_error err = { 0 };

        int r = credentials_parse((const char *)data, size, PATH, &c, &err);
        if (r < 0) {
                check(r == -EINVAL || r == -EFBIG, "a parse error is -EINVAL or -EFBIG");
                check(c == (struct credentials *)&check, "*out is untouched on failure");
                check_message(&err, r);
                return 0;
        }
        check(r == 0 && c != NULL, "success gives Credentials");
        check(!credentials_loose_mode(c), "parsed text is never loose");

        struct strv names = { 0 };
        credentials_names(c, &names);
        for (size_t i = 0; i < names.n; i++) {
                char *section = NULL, *key = NULL;
                check(credentials_parse_key(names.v[i], &section, &key) == 0, "every loaded name is valid");
                const char *v = credentials_get(c, section, key);
                check(v != NULL, "every listed name has a value");
                (void)strlen(v); /* a NUL-terminated string the sanitizer can walk */
                check(credentials_unset(c, section, key) == 0, "every listed name can be unset");
                check(credentials_get(c, section, key) == NULL, "an unset name is gone");
                free(section);
                free(key);
        }
        strv_done(&names);

        struct strv left = { 0 };
        credentials_names(c, &left);
        check(left.n == 0, "nothing is left after unsetting every name");
        strv_done(&left);
        credentials_free(c);
        return 0;
}
