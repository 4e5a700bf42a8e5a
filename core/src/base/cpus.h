/* Whether another CPU than this thread's is free for work started now (a
 * thread, a child), and which CPUs those are. */
#ifndef TB_BASE_CPUS_H
#define TB_BASE_CPUS_H

#include <sched.h>
#include <stdbool.h>

/* The CPUs this process may use (*all) and those of them but the one this
 * thread runs on (*others): false when it may use one CPU (or the kernel
 * does not say), whatever the load. */
bool cpus_others(cpu_set_t *all, cpu_set_t *others);

/* The CPUs this process may use (*all) and those of them but the one this
 * thread runs on (*others), when one of the others looks idle this moment:
 * fewer tasks running or ready to run (/proc/loadavg's fourth field, this
 * one included) than the CPUs it may use. False when none looks idle (a
 * batch on every core: work moved there would wait its turn, and take the
 * CPU another Trial is using), when it may use one CPU, or when the kernel
 * does not say. */
bool cpus_other_idle(cpu_set_t *all, cpu_set_t *others);

#endif
