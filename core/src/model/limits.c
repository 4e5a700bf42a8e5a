#define _GNU_SOURCE
#include "model/limits.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/macro.h"
#include "base/str.h"

#define MAX_DURATION_MS (10LL * 366 * 24 * 3600 * 1000)
#define MIN_MEMORY (1LL << 20)
#define MAX_PIDS 4194304LL
#define MIN_CPUS_MILLI 10LL
#define MAX_CPUS_MILLI 4096000LL

void trial_limits_init(struct trial_limits *l)
{
        *l = (struct trial_limits){ .timeout_ms = LIMIT_UNSET,
                                    .kill_after_ms = LIMITS_DEFAULT_KILL_AFTER_MS,
                                    .memory_bytes = LIMIT_UNSET,
                                    .pids = LIMIT_UNSET,
                                    .cpus_milli = LIMIT_UNSET };
}

/* A plain decimal "123" or "1.25": no sign, no exponent, no spaces (strtod
 * takes all of those, hex and "inf" too). Returns where the number ends, or
 * NULL when there is no number. Fraction digits past the ninth are read and
 * dropped. */
struct decimal {
        unsigned long long whole;
        unsigned long long frac; /* frac / 10^frac_digits */
        int frac_digits;
        bool overflow;
};

static const char *parse_decimal(const char *s, struct decimal *d)
{
        const char *p = s;
        *d = (struct decimal){ 0 };
        for (; isdigit((unsigned char)*p); p++) {
                unsigned digit = (unsigned)(*p - '0');
                if (d->whole > (ULLONG_MAX - digit) / 10)
                        d->overflow = true;
                else
                        d->whole = d->whole * 10 + digit;
        }
        if (*p != '.')
                return p > s ? p : NULL;
        const char *f = ++p;
        for (; isdigit((unsigned char)*p); p++) {
                if (d->frac_digits < 9) {
                        d->frac = d->frac * 10 + (unsigned)(*p - '0');
                        d->frac_digits++;
                }
        }
        return p > f ? p : NULL; /* "12." and "." are not numbers; ".5" is */
}

/* d * unit, rounded to nearest when `round` else down; false on overflow
 * past `max`. */
static bool decimal_scale(const struct decimal *d, long long unit, bool round, long long max, long long *out)
{
        if (d->overflow || d->whole > (unsigned long long)(max / unit))
                return false;
        long double frac = (long double)d->frac * (long double)unit;
        for (int i = 0; i < d->frac_digits; i++)
                frac /= 10;
        long long v = (long long)d->whole * unit + (long long)(round ? frac + 0.5L : frac);
        if (v > max || v < 0)
                return false;
        *out = v;
        return true;
}

static const char *printable_copy(const char *text, char *buf, size_t n)
{
        _cleanup_free_ char *shown = str_escape(text);
        snprintf(buf, n, "%s", shown);
        return buf;
}

#define DURATION_FORMS "a number of seconds, or one with s, m or h (90, 90s, 1.5m, 2h)"

int limits_parse_duration(const char *option, const char *text, bool allow_zero, long long *ms, struct tb_error *err)
{
        static const struct {
                const char *suffix;
                long long ms;
        } units[] = { { "", 1000 }, { "s", 1000 }, { "ms", 1 }, { "m", 60000 }, { "h", 3600000 } };
        char shown[128];
        struct decimal d;
        const char *end = parse_decimal(text, &d);
        long long v = -1;

        for (size_t i = 0; end && i < TB_ARRAY_SIZE(units); i++) {
                if (strcmp(end, units[i].suffix) != 0)
                        continue;
                if (!decimal_scale(&d, units[i].ms, true, MAX_DURATION_MS, &v))
                        return tb_fail(err, -EINVAL, "%s '%s' is too long; the most is 10 years", option,
                                       printable_copy(text, shown, sizeof shown));
                break;
        }
        if (v < 0)
                return tb_fail(err, -EINVAL, "%s '%s' is not a duration; use %s", option,
                               printable_copy(text, shown, sizeof shown), DURATION_FORMS);
        if (v == 0 && !allow_zero)
                return tb_fail(err, -EINVAL, "%s '%s' is not more than 0; use %s", option,
                               printable_copy(text, shown, sizeof shown), DURATION_FORMS);
        *ms = v;
        return 0;
}

#define SIZE_FORMS "bytes, or a number with K, M, G or T, powers of 1024 (512M, 4G, 1.5G)"

int limits_parse_size(const char *option, const char *text, long long *bytes, struct tb_error *err)
{
        static const char letters[] = "KMGT";
        char shown[128];
        struct decimal d;
        const char *end = parse_decimal(text, &d);
        long long unit = 1, v;

        if (end && *end) {
                const char *l = strchr(letters, toupper((unsigned char)*end));
                if (!l || !(end[1] == '\0' || strcmp(end + 1, "iB") == 0))
                        end = NULL;
                else
                        unit = 1LL << (10 * (l - letters + 1));
        }
        if (!end)
                return tb_fail(err, -EINVAL, "%s '%s' is not a size; use %s", option,
                               printable_copy(text, shown, sizeof shown), SIZE_FORMS);
        if (!decimal_scale(&d, unit, false, LLONG_MAX / 2, &v))
                return tb_fail(err, -EINVAL, "%s '%s' is too large; use %s", option,
                               printable_copy(text, shown, sizeof shown), SIZE_FORMS);
        if (v < MIN_MEMORY)
                return tb_fail(err, -EINVAL, "%s '%s' is less than the least a session can run in (1M); use %s",
                               option, printable_copy(text, shown, sizeof shown), SIZE_FORMS);
        *bytes = v;
        return 0;
}

int limits_parse_pids(const char *option, const char *text, long long *n, struct tb_error *err)
{
        struct decimal d;
        const char *end = parse_decimal(text, &d);
        long long v;

        if (!end || *end || d.frac_digits > 0 || strchr(text, '.') || !decimal_scale(&d, 1, false, MAX_PIDS, &v) ||
            v < 1) {
                char shown[128];
                return tb_fail(err, -EINVAL, "%s '%s' is not a number of processes; use a whole number from 1 to %lld",
                               option, printable_copy(text, shown, sizeof shown), MAX_PIDS);
        }
        *n = v;
        return 0;
}

int limits_parse_cpus(const char *option, const char *text, long long *milli, struct tb_error *err)
{
        struct decimal d;
        const char *end = parse_decimal(text, &d);
        long long v;

        if (!end || *end || !decimal_scale(&d, 1000, true, MAX_CPUS_MILLI, &v) || v < MIN_CPUS_MILLI) {
                char shown[128];
                return tb_fail(err, -EINVAL, "%s '%s' is not a number of CPUs; use a number from 0.01 to 4096 (1, 1.5)",
                               option, printable_copy(text, shown, sizeof shown));
        }
        *milli = v;
        return 0;
}

int trial_limits_set(struct trial_limits *l, const char *option, const char *text, struct tb_error *err)
{
        if (strcmp(option, "--timeout") == 0)
                return limits_parse_duration(option, text, false, &l->timeout_ms, err);
        if (strcmp(option, "--kill-after") == 0)
                return limits_parse_duration(option, text, true, &l->kill_after_ms, err);
        if (strcmp(option, "--memory") == 0)
                return limits_parse_size(option, text, &l->memory_bytes, err);
        if (strcmp(option, "--pids") == 0)
                return limits_parse_pids(option, text, &l->pids, err);
        if (strcmp(option, "--cpus") == 0)
                return limits_parse_cpus(option, text, &l->cpus_milli, err);
        return -ENOENT;
}

bool trial_limits_need_cgroup(const struct trial_limits *l)
{
        return l->memory_bytes != LIMIT_UNSET || l->pids != LIMIT_UNSET || l->cpus_milli != LIMIT_UNSET;
}

static json_object *int_or_null(long long v) { return v == LIMIT_UNSET ? NULL : json_object_new_int64(v); }

json_object *trial_limits_to_json(const struct trial_limits *l)
{
        json_object *j = json_object_new_object();
        json_object_object_add(j, "timeout_ms", int_or_null(l->timeout_ms));
        json_object_object_add(j, "kill_after_ms", l->timeout_ms == LIMIT_UNSET ? NULL : int_or_null(l->kill_after_ms));
        json_object_object_add(j, "memory_bytes", int_or_null(l->memory_bytes));
        json_object_object_add(j, "pids", int_or_null(l->pids));
        json_object_object_add(j, "cpus",
                               l->cpus_milli == LIMIT_UNSET ? NULL : json_object_new_double((double)l->cpus_milli / 1000));
        return j;
}

long long trial_limits_deadline(const struct trial_limits *l, long long started_unix_ms)
{
        return l->timeout_ms == LIMIT_UNSET ? LIMIT_UNSET : (started_unix_ms + l->timeout_ms) / 1000;
}

long long trial_limits_tmpfs_size(const struct trial_limits *l) { return l->memory_bytes; }
