#define _GNU_SOURCE
#include "base/cpus.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool cpus_busy;

void cpus_set_busy(bool busy) { cpus_busy = busy; }
bool cpus_told_busy(void) { return cpus_busy; }

/* How many tasks the kernel has running or ready to run this moment (the
 * fourth field of /proc/loadavg: "1/88"), or -1. */
static int tasks_running(void)
{
        char buf[128];
        int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
        if (fd >= 0)
                close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        const char *p = buf;
        for (int field = 0; field < 3 && p; field++) {
                p = strchr(p, ' ');
                p = p ? p + 1 : NULL;
        }
        return p && *p >= '0' && *p <= '9' ? atoi(p) : -1;
}

int cpus_count(void)
{
        cpu_set_t all;
        return sched_getaffinity(0, sizeof all, &all) == 0 && CPU_COUNT(&all) > 0 ? CPU_COUNT(&all) : 1;
}

bool cpus_others(cpu_set_t *all, cpu_set_t *others)
{
        int here = sched_getcpu();
        if (here < 0 || sched_getaffinity(0, sizeof *all, all) < 0 || CPU_COUNT(all) < 2 || !CPU_ISSET(here, all))
                return false;
        *others = *all;
        CPU_CLR(here, others);
        return true;
}

bool cpus_other_idle(cpu_set_t *all, cpu_set_t *others)
{
        if (!cpus_others(all, others))
                return false;
        int running = tasks_running();
        return running >= 0 && running < CPU_COUNT(all);
}

bool cpus_other_free(cpu_set_t *all, cpu_set_t *others)
{
        return cpus_busy ? cpus_other_idle(all, others) : cpus_others(all, others);
}
