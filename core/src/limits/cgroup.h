/* A cgroup made for one Trial: it enforces `--memory`, `--pids` and
 * `--cpus`, holds every process of the session (so all of them can be
 * killed), counts what they used and what the kernel refused, and is removed
 * after the Trial.
 *
 * Mechanisms, in the order they are tried:
 *  - cgroup v2, delegated: trialbox's own v2 cgroup is writable and offers the
 *    controllers (under `systemd-run --user --scope -p Delegate=yes`, in a
 *    Slurm step with cgroup v2, or as root on a v2 host). The Trial's cgroup
 *    is a child of it. v2 forbids processes in a cgroup that hands
 *    controllers to children, so when enabling them is refused with EBUSY the
 *    processes of trialbox's own cgroup are first moved into a leaf child
 *    "trialbox-leaf" (the usual move of a delegated scope).
 *  - cgroup v1: the `memory`, `pids`, `cpu` (and `cpuacct`, for usage)
 *    hierarchies where trialbox's own cgroup in each is writable (root on a
 *    hybrid host); one child in each.
 *  - none: the reason says why and how to make it possible.
 *
 * Library code: nothing is printed; functions return 0 or a negative errno
 * and fill `struct tb_error`. */
#ifndef TB_CGROUP_H
#define TB_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "model/outcome.h"
#include "model/limits.h"
#include "base/error.h"

enum cgroup_mechanism { CGROUP_NONE, CGROUP_V2, CGROUP_V1 };
enum cgroup_controller { CG_MEMORY, CG_PIDS, CG_CPU, CG_CPUACCT, CG_N };

/* What this host offers. Plain data: a test may fill it by hand (e.g. a v2
 * parent without controllers, to exercise kill and removal). */
struct cgroup_probe {
        enum cgroup_mechanism mechanism;
        /* v2: parent[0] is the folder the Trial's cgroup is made in, and
         * `v2_controllers` says which of CG_MEMORY, CG_PIDS, CG_CPU it offers.
         * v1: the parent folder per controller, "" where not mounted or not
         * writable (CG_CPUACCT may equal CG_CPU's when they are co-mounted). */
        char parent[CG_N][PATH_MAX];
        bool v2_controllers[CG_N];
        char reason[1024]; /* CGROUP_NONE: one line, why and the fix */
};

/* "cgroup v2 (delegated)", "cgroup v1", "none". */
const char *cgroup_mechanism_name(enum cgroup_mechanism m);

/* Find the mechanism that can enforce `l` (NULL: memory, pids and cpus all
 * asked, as `trialbox check` wants to know). Reads /proc/self/cgroup and
 * /proc/self/mountinfo and checks write access; creates nothing. Returns the
 * mechanism; with CGROUP_NONE, `p->reason` says why and the fix. */
enum cgroup_mechanism cgroup_probe(const struct trial_limits *l, struct cgroup_probe *p);

/* One line for `trialbox check`'s `limits`: "cgroup v1 (memory, pids, cpu,
 * cpuacct)", "cgroup v2 (delegated) at '/sys/fs/cgroup/…' (memory, pids,
 * cpu)", or "none: <reason with the fix>". */
void cgroup_probe_summary(const struct cgroup_probe *p, char *buf, size_t n);

struct cgroup;

/* Make the Trial's cgroup "trialbox-NAME" (NAME: letters, digits, '.', '_',
 * '-') under the probe's parent(s) and set the limits asked in `l`:
 * memory.max and memory.swap.max 0 (v1: memory.limit_in_bytes and
 * memory.memsw.limit_in_bytes where swap accounting is on); pids.max;
 * cpu.max (v1: cpu.cfs_quota_us over a 100 ms cpu.cfs_period_us). Controllers
 * not asked for are joined where available, for usage only. Opens each
 * folder's joining file now (v1: tasks, v2: cgroup.procs), so a child can
 * join with cgroup_attach_self() after fork. On failure nothing is left
 * behind. *out is owned by the caller:
 * cgroup_destroy() it. */
int cgroup_create(const struct cgroup_probe *p, const struct trial_limits *l, const char *name, struct cgroup **out,
                  struct tb_error *err);

/* In a child between fork and exec: move the calling process into the
 * cgroup (writes "0" to each joining file opened by cgroup_create; on v1,
 * `tasks` moves the calling thread only: the caller must be
 * single-threaded, as a child after fork is). Only async-signal-safe calls.
 * 0 or negative errno. The keeper calls it before it starts bwrap, so every
 * process of the session is born inside. */
int cgroup_attach_self(const struct cgroup *cg);
/* Move `pid` (a whole process) into the cgroup. */
int cgroup_attach_pid(const struct cgroup *cg, pid_t pid, struct tb_error *err);
/* v2 only: an O_PATH|O_DIRECTORY fd of the cgroup's folder for clone3's
 * CLONE_INTO_CGROUP, or -1 (v1). Owned by cg. */
int cgroup_v2_dirfd(const struct cgroup *cg);
/* The cgroup's folder (v2), or its memory (else pids, cpu) folder (v1). */
const char *cgroup_path(const struct cgroup *cg);

/* The pids in the cgroup now (malloc'd array in *pids, count returned, or a
 * negative errno). */
int cgroup_pids(const struct cgroup *cg, pid_t **pids);

/* SIGKILL every process in the cgroup and wait (up to 5 s) until it is
 * empty: v2 writes cgroup.kill where the kernel has it; otherwise (and on
 * v1) every pid in cgroup.procs is killed, again and again until none is
 * left (a process with SIGKILL pending can no longer fork, so this ends).
 * -EBUSY if processes remain. */
int cgroup_kill_all(struct cgroup *cg, struct tb_error *err);

/* Signal every process in the cgroup once (e.g. SIGTERM at a deadline).
 * Returns how many were signalled, or a negative errno. */
int cgroup_signal_all(const struct cgroup *cg, int sig);

/* What the cgroup's processes used, into `u` (fields it cannot know are left
 * as they are: fill the rest from rusage with trial_usage_fill_from_rusage):
 * cpu from cpu.stat (v2) or cpuacct.usage_user/usage_sys (v1, when mounted);
 * peak memory from memory.peak (v2; else the largest memory.current seen by
 * cgroup_sample_memory) or memory.max_usage_in_bytes (v1); OOM kills from
 * memory.events oom_kill (v2) or memory.oom_control oom_kill (v1); refused
 * forks from pids.events max. Sets u->source to USAGE_CGROUP when the peak
 * came from here. */
void cgroup_usage(const struct cgroup *cg, struct trial_usage *u);

/* For kernels without memory.peak: read memory.current and keep the largest
 * seen (call it from a periodic timer). Harmless elsewhere. */
void cgroup_sample_memory(struct cgroup *cg);

/* An fd that becomes readable (POLLIN) when the OOM killer acts in the
 * cgroup (v2: inotify on memory.events; v1: an eventfd registered through
 * cgroup.event_control on memory.oom_control), or -1 without a memory
 * controller. Owned by cg; add it to the supervisor's poll set. */
int cgroup_oom_fd(const struct cgroup *cg);
/* After the fd polled readable: drain it and return the OOM kills counted so
 * far (>= 0), or a negative errno. */
long long cgroup_oom_event(struct cgroup *cg);

/* Kill whatever is left (cgroup_kill_all), remove the cgroup's folders
 * (retrying briefly while the kernel lets the last process go) and free cg.
 * NULL is a no-op. 0, or a negative errno with `err` saying which folder is
 * left. cg is freed either way. */
int cgroup_destroy(struct cgroup *cg, struct tb_error *err);

#endif
