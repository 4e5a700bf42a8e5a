/* Whether another CPU than this thread's is free for work started now (a
 * thread, a child), and which CPUs those are. */
#ifndef TB_BASE_CPUS_H
#define TB_BASE_CPUS_H

#include <sched.h>
#include <stdbool.h>

/* Say whether every CPU this process may use is shared with work like its
 * own for as long as it runs (a batch running at least as many Trials at
 * once as it has CPUs: TRIALBOX_CPUS_BUSY=1). Once, at the command's start. */
void cpus_set_busy(bool busy);
/* What cpus_set_busy said last (false when never called). */
bool cpus_told_busy(void);

/* How many CPUs this process may use (its affinity; 1 when the kernel
 * does not say). */
int cpus_count(void);

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

/* Whether a helper may start on another CPU than this thread's (*all and
 * *others as above), for work the caller does itself when the helper has
 * not begun by the time it is needed: cpus_others, or cpus_other_idle once
 * this process was told its CPUs are busy (cpus_set_busy). Alone, what runs
 * this moment is no guide: the process that started this one, about to
 * wait for it, or one of the kernel's threads, often is, and is gone a few
 * microseconds later; with every CPU given a Trial, the other CPU is free
 * only in the gaps between them, which cpus_other_idle catches. */
bool cpus_other_free(cpu_set_t *all, cpu_set_t *others);

#endif
