#ifndef TBPHASE_H
#define TBPHASE_H
#include <stdio.h>
#include <time.h>
#include <unistd.h>
struct timespec; extern int clock_gettime(int, struct timespec *);
static inline void TB_PHASE(const char *name) {
        struct timespec ts; clock_gettime(1, &ts);
        char buf[128]; int n = snprintf(buf, sizeof buf, "PHASE %d %s %lld\n", (int)getpid(), name, (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
        if (write(2, buf, (size_t)n) < 0) {}
}
#endif
