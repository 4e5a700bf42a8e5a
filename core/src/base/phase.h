/* Start-up phase timing, for bench/phases.sh: in a build configured with
 * -DTRIALBOX_PHASES=ON, TB_PHASE("name") writes "PHASE PID NAME MICROSECONDS"
 * (CLOCK_MONOTONIC) to stderr, one write(2) each; in any other build it is
 * nothing at all. Never in a build that is shipped: stderr is the user's. */
#ifndef TB_BASE_PHASE_H
#define TB_BASE_PHASE_H

#ifdef TRIALBOX_PHASES
void tb_phase(const char *name);
#define TB_PHASE(name) tb_phase(name)
#else
#define TB_PHASE(name) ((void)0)
#endif

#endif
