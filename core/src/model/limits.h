/* A Trial's limits as the user asked for them (`--timeout`, `--kill-after`,
 * `--memory`, `--pids`, `--cpus`): parsing, the unset state, and the JSON
 * that outcome.json carries as `limits`. Enforcement is elsewhere (the
 * supervisor's deadline timer, cgroup.h). */
#ifndef TB_TRIAL_LIMITS_H
#define TB_TRIAL_LIMITS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "base/error.h"

#define LIMIT_UNSET (-1LL)
#define LIMITS_DEFAULT_KILL_AFTER_MS 10000LL

struct trial_limits {
        long long timeout_ms;    /* wall clock from the session's start, > 0; LIMIT_UNSET: none */
        long long kill_after_ms; /* SIGTERM to SIGKILL grace, >= 0; LIMITS_DEFAULT_KILL_AFTER_MS unless given */
        long long memory_bytes;  /* >= 1 MiB; LIMIT_UNSET: none */
        long long pids;          /* >= 1; LIMIT_UNSET: none */
        long long cpus_milli;    /* CPUs in thousandths (1.5 = 1500), >= 10; LIMIT_UNSET: none */
};

/* No limit; the default grace. */
void trial_limits_init(struct trial_limits *l);

/* Parsers. Each takes the option's name for its message ("--timeout") and
 * the user's text; 0 and the value, or -EINVAL with a one-line message that
 * names the option, quotes the text and lists the accepted forms.
 *
 * DURATION: a decimal number (fraction allowed, no sign, no exponent) with an
 * optional unit: none or `s` seconds, `ms`, `m` minutes, `h` hours
 * (`90`, `90s`, `1.5m`, `2h`); at most 10 years. Rounded to milliseconds.
 * `allow_zero` is for `--kill-after 0` (SIGKILL at the deadline). */
int limits_parse_duration(const char *option, const char *text, bool allow_zero, long long *ms, struct tb_error *err);
/* SIZE: a decimal number (fraction allowed) of bytes, or with `K`, `M`, `G`,
 * `T` (either case; powers of 1024), optionally followed by `iB`
 * (`512M`, `4G`, `1.5GiB`, `1048576`). Rounded down to bytes; at least 1 MiB. */
int limits_parse_size(const char *option, const char *text, long long *bytes, struct tb_error *err);
/* A positive whole number of processes, at most 4194304 (the kernel's pid limit). */
int limits_parse_pids(const char *option, const char *text, long long *n, struct tb_error *err);
/* CPUs: a decimal number from 0.01 to 4096 (`1`, `1.5`, `0.25`), in thousandths. */
int limits_parse_cpus(const char *option, const char *text, long long *milli, struct tb_error *err);

/* Set the limit named by a `run` option ("--timeout", "--kill-after",
 * "--memory", "--pids", "--cpus") from its text. -ENOENT (no message) for
 * another option; else as the parsers. */
int trial_limits_set(struct trial_limits *l, const char *option, const char *text, struct tb_error *err);

/* Do the limits need a cgroup (memory, pids or cpus asked)? */
bool trial_limits_need_cgroup(const struct trial_limits *l);

/* outcome.json's `limits`: {"timeout_ms", "kill_after_ms", "memory_bytes",
 * "pids", "cpus"}, each null where not asked (`kill_after_ms` is null
 * without a timeout; `cpus` is a number such as 1.5). A new reference. */
json_object *trial_limits_to_json(const struct trial_limits *l);

/* TRIALBOX_DEADLINE for the session: the Unix second the timeout falls at,
 * for a session started at `started_unix_ms` (rounded down, so a wrapper
 * that finishes by then is in time); LIMIT_UNSET without a timeout. */
long long trial_limits_deadline(const struct trial_limits *l, long long started_unix_ms);

/* The size for /tmp's tmpfs (bwrap `--size`, which applies to the next
 * `--tmpfs`; bwrap 0.8.0 has it): the memory limit when one is asked, since
 * tmpfs pages count against it anyway; LIMIT_UNSET for bwrap's default. */
long long trial_limits_tmpfs_size(const struct trial_limits *l);

#endif
