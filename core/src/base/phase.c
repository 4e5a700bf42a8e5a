#define _GNU_SOURCE
#include "base/phase.h"

#ifdef TRIALBOX_PHASES
#include <stdio.h>
#include <unistd.h>

#include "base/clock.h"

void tb_phase(const char *name)
{
        char buf[128];
        int n = snprintf(buf, sizeof buf, "PHASE %d %s %lld\n", (int)getpid(), name, now_us());
        if (n > 0 && write(STDERR_FILENO, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1) < 0) {
        }
}
#endif
