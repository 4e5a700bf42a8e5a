/* What every fuzz target shares: libFuzzer's entry point and the check of a
 * promise. A target defines FUZZ_TARGET, its name, before including this. */
#ifndef FUZZ_H
#define FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A promise the code under test must keep: when `ok` is false, say which one
 * broke on fd 2 (a target may have pointed stderr elsewhere) and abort, which
 * fails the replay and makes libFuzzer keep the input. */
static inline void check(int ok, const char *what)
{
        if (ok)
                return;
        char msg[512];
        int n = snprintf(msg, sizeof msg, "%s: broken promise: %s\n", FUZZ_TARGET, what);
        if (n > 0)
                (void)!write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
        abort();
}

#endif
