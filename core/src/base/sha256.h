/* SHA-256 (FIPS 180-4), for fingerprints: what a batch keeps of a plan
 * line to tell, on resume, that the line changed. Not for secrets' sake
 * alone: a fingerprint is in results other users may read, and SHA-256
 * does not give its input back. */
#ifndef TB_SHA256_H
#define TB_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_HEX_LEN 64

/* The digest of `n` bytes of `data` as 64 lowercase hex digits and a NUL. */
void sha256_hex(const void *data, size_t n, char out[SHA256_HEX_LEN + 1]);

#endif
