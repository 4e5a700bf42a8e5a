#define _GNU_SOURCE
#include "base/phase.h"

#ifdef TRIALBOX_PHASES
#include <stdio.h>
#include <time.h>
#include <unistd.h>

void tb_phase(const char *name)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        char buf[128];
        int n = snprintf(buf, sizeof buf, "PHASE %d %s %lld\n", (int)getpid(), name,
                         (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
        if (n > 0 && write(STDERR_FILENO, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1) < 0) {
        }
}
#endif
