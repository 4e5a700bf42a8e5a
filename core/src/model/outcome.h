/* The Outcome of a Trial: what happened, mapped from how the session ended,
 * written atomically to OUTPUT_DIR/outcome.json. */
#ifndef TB_OUTCOME_H
#define TB_OUTCOME_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "model/limits.h"
#include "base/error.h"

/* trialbox's own exit statuses (the session's status is passed through for
 * completed and failed Trials, 128+N for a signal). */
#define TB_EXIT_USAGE 2   /* bad flags or input: nothing was run or written */
#define TB_EXIT_VOID 125  /* the Trial is void: outcome.json says why */
#define TB_EXIT_ERROR 126 /* trialbox itself failed (e.g. cannot write outcome.json) */
#define TB_EXIT_TIMEOUT 124 /* failed/timeout, as timeout(1) */
/* The session ran, but the repository guard had to move the repository's
 * whole .git to the quarantine (outcome.json's repo_guard says why); the
 * Outcome itself (completed, failed) stands. */
#define TB_EXIT_QUARANTINED 123

enum outcome_kind { OUTCOME_COMPLETED, OUTCOME_FAILED, OUTCOME_VOID };
/* Void causes, then failed causes. A plain failure has CAUSE_NONE. */
enum outcome_cause {
        CAUSE_NONE,
        CAUSE_SANDBOX_UNAVAILABLE,
        CAUSE_SESSION_UNAVAILABLE,
        CAUSE_INTERRUPTED, /* void: the session ended (or never started) because the operator's signal
                            * (SIGINT, SIGTERM, SIGHUP) reached trialbox, which forwarded it: no fault of
                            * the agent; a batch runs it again */
        CAUSE_TIMEOUT,       /* failed: the session ran past --timeout and was stopped */
        CAUSE_OUT_OF_MEMORY, /* failed: the cgroup's OOM killer hit the session and it did not exit 0 */
};

/* What a Trial's processes used. -1 where unknown (null in the JSON). */
enum usage_source { USAGE_NONE, USAGE_CGROUP, USAGE_RUSAGE };
struct trial_usage {
        enum usage_source source; /* where peak_memory_bytes came from */
        long long cpu_user_ms, cpu_system_ms;
        long long peak_memory_bytes;
        long long oom_kills, pids_refused; /* known only with a cgroup */
};
/* Everything unknown. */
void trial_usage_init(struct trial_usage *u);
/* Fill the fields still unknown from the rusage of the session's reaped
 * processes (RUSAGE_CHILDREN or wait4's): cpu times, and the largest
 * process's max RSS as the peak (source USAGE_RUSAGE). */
void trial_usage_fill_from_rusage(struct trial_usage *u, const struct rusage *ru);

/* What the session's model calls cost, as its Harness's plugin read it
 * from the Harness's own files after the session (plugin.h's `tokens`
 * hook): outcome.json's `tokens`. The counts follow one convention,
 * whatever the Harness's own: `input` INCLUDES `cached_input` and
 * `cache_write_input` (every prompt token), `output` INCLUDES `reasoning`
 * (every generated token), as experiments/prices.h prices them. */
#define TOKENS_MAX_MODELS 8   /* names listed; the others counted in models_more */
#define TOKENS_MODEL_MAX 64   /* bytes of one name */
#define TOKENS_SOURCE_MAX 128 /* bytes of `source` */
struct trial_tokens {
        bool known; /* false: null (the Harness wrote nothing readable, or no session ran) */
        long long input, cached_input, cache_write_input, output, reasoning;
        long long requests; /* the model responses counted */
        char models[TOKENS_MAX_MODELS][TOKENS_MODEL_MAX + 1]; /* sorted */
        size_t n_models;
        long long models_more;          /* further model names seen */
        char source[TOKENS_SOURCE_MAX]; /* where in the home they were read: "~/.codex/sessions" */
        bool partial;                   /* a bound left part of the Harness's files unread, or a count was refused */
};

/* How a session ended, as the supervisor saw it. */
struct session_result {
        bool started;     /* the session's process ran (bwrap reported it) */
        enum outcome_cause void_cause; /* when !started */
        int exit_code;    /* valid when started and signal == 0 */
        int signal;       /* the signal that ended it, or 0 */
        char detail[512]; /* when !started: why (bwrap's own message) */
        /* What the supervisor did or saw, for the failed causes (all 0 by
         * default). A timeout wins over an OOM kill: trialbox stopped it. */
        bool timed_out;           /* the deadline passed and the session was signalled */
        long long timeout_ms;     /* the limit, for the detail */
        bool killed_after_grace;  /* SIGKILL was needed after --kill-after */
        long long kill_after_ms;  /* the grace, for the detail */
        long long oom_kills;      /* the cgroup's OOM kills (0 without a cgroup) */
        long long memory_bytes;   /* the --memory limit, for the detail; <= 0 none */
        /* The operator's signal (SIGINT, SIGTERM, SIGHUP to trialbox) that
         * trialbox forwarded before the session ended (and before any
         * deadline), or 0: the Trial is void/interrupted, whatever the
         * session then did (exit_code, signal: for the detail). */
        int interrupted;
        /* The session's output trialbox's own stdout and stderr did not
         * take (their reader stopped or went away): bytes dropped. */
        long long dropped_stdout, dropped_stderr;
};

struct outcome {
        enum outcome_kind kind;
        enum outcome_cause cause;
        const char *harness;
        char detail[1024];
        int exit_code; /* -1: none */
        int signal;    /* 0: none */
        int interrupted; /* void/interrupted: the operator's signal N (trialbox exits 128+N), else 0 */
        bool sandboxed;
        const char *home;
        long long duration_ms;
        /* Times are Unix milliseconds (UTC); 0: unknown (null). */
        long long started_at_ms, ended_at_ms;
        const struct trial_limits *limits; /* NULL: none asked (every key null) */
        char host[256];                    /* "" : unknown (null) */
        struct trial_usage usage;          /* zero-initialised means all unknown: see outcome_start */
        bool usage_known;                  /* false: `usage` is null (e.g. a void Trial that ran nothing) */
        struct trial_tokens tokens;        /* tokens.known false: `tokens` is null */
        /* outcome.json's output_dropped: the session's output trialbox's
         * stdout and stderr did not take, in bytes; null when no session ran
         * (usage_known false). */
        long long dropped_stdout, dropped_stderr;
        /* The Slurm job the Trial ran in (slurm_ids_from_env),
         * outcome.json's slurm_job_id and slurm_array_task_id, in the final
         * Outcome and the running record. <= 0 job id: not in a job (both
         * null); < 0 task: not an array task (null). */
        long long slurm_job_id, slurm_array_task_id;
        /* The `network` object (trial_net.h), a json-c object
         * the owner of `o` puts; NULL: null (host network, unsandboxed). */
        struct json_object *network;
        /* The repository guard's record (gitguard/repo_guard.h): `repo_guard`,
         * `control_files`, `special_files`; NULL: null (the guard did not run). */
        struct json_object *repo_guard, *control_files, *special_files;
        /* The guard's status when it ran: "restored", "quarantined", "failed"; NULL: it did not. */
        const char *guard_status;
        /* The token of the batch that started this run (TRIALBOX_RECORD_NONCE,
         * OUTCOME_NONCE_LEN hex digits), echoed as `launcher_nonce` in the
         * running and the final record: a batch reads no record its own run
         * did not write. "" when none. */
        char nonce[33];
};

#define OUTCOME_NONCE_LEN 32
/* Copy `s` into o->nonce when it is OUTCOME_NONCE_LEN lowercase hex digits. */
void outcome_set_nonce(struct outcome *o, const char *s);

/* Stamp the start: started_at (now), host (gethostname), usage all unknown. */
void outcome_start(struct outcome *o);
/* Stamp the end: ended_at (now). */
void outcome_end(struct outcome *o);
/* Unix milliseconds as RFC 3339 UTC with milliseconds, "2026-12-01T14:12:15.123Z", into buf (>= 25 bytes). */
char *outcome_format_time(long long unix_ms, char *buf, size_t n);
long long outcome_realtime_ms(void);

const char *outcome_kind_name(enum outcome_kind k);
const char *outcome_cause_name(enum outcome_cause c);

/* Fill `o`'s kind, cause, detail, exit_code and signal from a session result. */
void outcome_from_session(struct outcome *o, const struct session_result *r);

/* Make `o` void with `cause` and `detail`. */
void outcome_set_void(struct outcome *o, enum outcome_cause cause, const char *detail);

/* The Outcome as one line of JSON (malloc'd). */
char *outcome_to_json(const struct outcome *o);

/* Write OUTPUT_DIR/outcome.json atomically (mode 0644). 0 or negative errno. */
int outcome_write(const struct outcome *o, const char *output_dir, struct tb_error *err);

/* The exit status trialbox ends with for this Outcome (124 for a timeout,
 * 128+N for void/interrupted by the operator's signal N, 125 for any other
 * void). */
int outcome_exit_status(const struct outcome *o);

/* ---- the `running` record and the lost launcher ----
 * When the session starts, outcome.json says {"outcome": "running", "pid",
 * "pid_start", "boot_id", "started_at", "harness", "host",
 * "trialbox_version"}; the final Outcome replaces it. Whoever finds a running
 * record whose pid is gone, or whose boot_id is not this boot's, or whose pid
 * now belongs to a process started at another time than `pid_start` (clock
 * ticks after boot, /proc/PID/stat), knows the launcher was lost (the batch
 * runner counts it void/launcher_lost). Only meaningful on the launcher's host. */

/* This boot's id (/proc/sys/kernel/random/boot_id, 36 characters) into buf (>= 37). */
int outcome_boot_id(char *buf, size_t n, struct tb_error *err);
/* Write the running record for `o` (harness, host, started_at) atomically. */
int outcome_write_running(const struct outcome *o, const char *output_dir, pid_t pid, const char *boot_id,
                          struct tb_error *err);
/* 1: OUTCOME_PATH is a running record whose launcher is lost (its pid is
 * gone or reused, or its boot id is not this boot's); 0: it is not (a final Outcome, or
 * a launcher still alive); negative errno when it cannot be read or parsed. */
int outcome_launcher_lost(const char *outcome_path);

/* ---- the final record, with its space reserved ----
 * A session may fill the filesystem; the final Outcome must still be
 * written. outcome_reserve() (before the session) creates the temporary file
 * beside outcome.json and allocates OUTCOME_RESERVE bytes for it (fallocate);
 * outcome_commit() (after) writes the Outcome into that space, truncates it
 * to its length, fdatasyncs and renames it over outcome.json: no new blocks
 * are needed. */
#define OUTCOME_RESERVE 65536 /* bytes */
struct outcome_file {
        int dirfd; /* the output folder, opened before the session */
        int fd;    /* the reserved temporary file; -1 once committed */
        char tmp[64];
};
#define OUTCOME_FILE_INIT { .dirfd = -1, .fd = -1 }
int outcome_reserve(struct outcome_file *f, const char *output_dir, struct tb_error *err);
/* Write `o` into the reserved file and put it in place. Only once. */
int outcome_commit(struct outcome_file *f, const struct outcome *o, struct tb_error *err);
/* Close and (if not committed) remove the temporary file. Safe twice, after
 * a failed reserve, and on OUTCOME_FILE_INIT. */
void outcome_file_done(struct outcome_file *f);

#endif
