#define _GNU_SOURCE
#include "model/outcome.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/io.h"

#ifndef TB_VERSION
#define TB_VERSION "unknown"
#endif

const char *outcome_kind_name(enum outcome_kind k)
{
        switch (k) {
        case OUTCOME_COMPLETED:
                return "completed";
        case OUTCOME_FAILED:
                return "failed";
        case OUTCOME_VOID:
                return "void";
        }
        return "void";
}

const char *outcome_cause_name(enum outcome_cause c)
{
        switch (c) {
        case CAUSE_SANDBOX_UNAVAILABLE:
                return "sandbox_unavailable";
        case CAUSE_SESSION_UNAVAILABLE:
                return "session_unavailable";
        case CAUSE_INTERRUPTED:
                return "interrupted";
        case CAUSE_TIMEOUT:
                return "timeout";
        case CAUSE_OUT_OF_MEMORY:
                return "out_of_memory";
        case CAUSE_NONE:
                break;
        }
        return NULL;
}

void outcome_set_void(struct outcome *o, enum outcome_cause cause, const char *detail)
{
        o->kind = OUTCOME_VOID;
        o->cause = cause;
        o->exit_code = -1;
        o->signal = 0;
        snprintf(o->detail, sizeof o->detail, "%s", detail);
}

static void describe_limit(char *buf, size_t n, long long ms)
{
        if (ms % 1000 == 0)
                snprintf(buf, n, "%llds", ms / 1000);
        else
                snprintf(buf, n, "%lld.%03llds", ms / 1000, ms % 1000);
}

static void set_timeout(struct outcome *o, const struct session_result *r)
{
        char limit[32], grace[32];
        describe_limit(limit, sizeof limit, r->timeout_ms);
        describe_limit(grace, sizeof grace, r->kill_after_ms);
        o->cause = CAUSE_TIMEOUT;
        if (r->killed_after_grace)
                snprintf(o->detail, sizeof o->detail,
                         "the session ran past its %s limit (--timeout): it got SIGTERM, and SIGKILL %s later (--kill-after)",
                         limit, grace);
        else
                snprintf(o->detail, sizeof o->detail, "the session ran past its %s limit (--timeout) and ended on SIGTERM",
                         limit);
}

static void set_out_of_memory(struct outcome *o, const struct session_result *r, const char *how)
{
        o->cause = CAUSE_OUT_OF_MEMORY;
        if (r->memory_bytes > 0)
                snprintf(o->detail, sizeof o->detail,
                         "the kernel's OOM killer stopped %lld process(es) of the session at its %lld MiB limit (--memory); %s",
                         r->oom_kills, r->memory_bytes >> 20, how);
        else
                snprintf(o->detail, sizeof o->detail, "the kernel's OOM killer stopped %lld process(es) of the session; %s",
                         r->oom_kills, how);
}

/* The operator's signal ended the Trial: void, and what the session did is
 * said in the detail. */
static void set_interrupted(struct outcome *o, const struct session_result *r)
{
        char how[600];
        if (!r->started)
                snprintf(how, sizeof how, " before the session started (%.500s)", r->detail);
        else if (r->signal > 0)
                snprintf(how, sizeof how, ", which forwarded it to the session; the session was then killed by signal %d "
                         "(SIG%s)", r->signal, sigabbrev_np(r->signal) ? sigabbrev_np(r->signal) : "?");
        else
                snprintf(how, sizeof how, ", which forwarded it to the session; the session then exited with status %d",
                         r->exit_code);
        char detail[sizeof o->detail];
        snprintf(detail, sizeof detail, "the operator's SIG%s reached trialbox%s: no fault of the agent; run it again "
                 "(a batch does)",
                 sigabbrev_np(r->interrupted) ? sigabbrev_np(r->interrupted) : "?", how);
        outcome_set_void(o, CAUSE_INTERRUPTED, detail);
        o->interrupted = r->interrupted;
}

void outcome_from_session(struct outcome *o, const struct session_result *r)
{
        char how[128];

        o->dropped_stdout = r->dropped_stdout;
        o->dropped_stderr = r->dropped_stderr;
        if (r->interrupted > 0) {
                set_interrupted(o, r);
                return;
        }
        if (!r->started) {
                outcome_set_void(o, r->void_cause != CAUSE_NONE ? r->void_cause : CAUSE_SANDBOX_UNAVAILABLE, r->detail);
                return;
        }
        o->cause = CAUSE_NONE;
        if (r->timed_out) {
                o->kind = OUTCOME_FAILED;
                o->exit_code = r->signal > 0 ? -1 : r->exit_code;
                o->signal = r->signal;
                set_timeout(o, r);
                return;
        }
        if (r->signal > 0) {
                o->kind = OUTCOME_FAILED;
                o->exit_code = -1;
                o->signal = r->signal;
                snprintf(how, sizeof how, "the session was killed by signal %d (SIG%s)", r->signal,
                         sigabbrev_np(r->signal) ? sigabbrev_np(r->signal) : "?");
        } else if (r->exit_code == 0) {
                o->kind = OUTCOME_COMPLETED;
                o->exit_code = 0;
                o->signal = 0;
                snprintf(o->detail, sizeof o->detail, "the session exited with status 0");
                return;
        } else {
                o->kind = OUTCOME_FAILED;
                o->exit_code = r->exit_code;
                o->signal = 0;
                snprintf(how, sizeof how, "the session exited with status %d", r->exit_code);
        }
        if (r->oom_kills > 0)
                set_out_of_memory(o, r, how);
        else
                snprintf(o->detail, sizeof o->detail, "%s", how);
}

void trial_usage_init(struct trial_usage *u)
{
        *u = (struct trial_usage){ .source = USAGE_NONE,
                                   .cpu_user_ms = -1,
                                   .cpu_system_ms = -1,
                                   .peak_memory_bytes = -1,
                                   .oom_kills = -1,
                                   .pids_refused = -1 };
}

static long long timeval_ms(const struct timeval *tv) { return (long long)tv->tv_sec * 1000 + tv->tv_usec / 1000; }

void trial_usage_fill_from_rusage(struct trial_usage *u, const struct rusage *ru)
{
        if (u->cpu_user_ms < 0)
                u->cpu_user_ms = timeval_ms(&ru->ru_utime);
        if (u->cpu_system_ms < 0)
                u->cpu_system_ms = timeval_ms(&ru->ru_stime);
        if (u->peak_memory_bytes < 0) {
                u->peak_memory_bytes = (long long)ru->ru_maxrss * 1024; /* KiB on Linux */
                u->source = USAGE_RUSAGE;
        }
}

long long outcome_realtime_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *outcome_format_time(long long unix_ms, char *buf, size_t n)
{
        time_t secs = (time_t)(unix_ms / 1000);
        struct tm tm;
        char day[32];
        if (!gmtime_r(&secs, &tm) || strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                snprintf(day, sizeof day, "1970-01-01T00:00:00");
        snprintf(buf, n, "%s.%03lldZ", day, unix_ms % 1000);
        return buf;
}

void outcome_start(struct outcome *o)
{
        o->started_at_ms = outcome_realtime_ms();
        if (gethostname(o->host, sizeof o->host) < 0)
                o->host[0] = '\0';
        o->host[sizeof o->host - 1] = '\0';
        trial_usage_init(&o->usage);
}

void outcome_end(struct outcome *o) { o->ended_at_ms = outcome_realtime_ms(); }

static json_object *time_or_null(long long unix_ms)
{
        char buf[40];
        return unix_ms > 0 ? json_object_new_string(outcome_format_time(unix_ms, buf, sizeof buf)) : NULL;
}

static json_object *count_or_null(long long v) { return v >= 0 ? json_object_new_int64(v) : NULL; }

static json_object *usage_to_json(const struct trial_usage *u)
{
        static const char *const sources[] = { [USAGE_NONE] = NULL, [USAGE_CGROUP] = "cgroup", [USAGE_RUSAGE] = "rusage" };
        json_object *j = json_object_new_object();
        json_object_object_add(j, "cpu_user_ms", count_or_null(u->cpu_user_ms));
        json_object_object_add(j, "cpu_system_ms", count_or_null(u->cpu_system_ms));
        json_object_object_add(j, "peak_memory_bytes", count_or_null(u->peak_memory_bytes));
        json_object_object_add(j, "oom_kills", count_or_null(u->oom_kills));
        json_object_object_add(j, "pids_refused", count_or_null(u->pids_refused));
        json_object_object_add(j, "source", sources[u->source] ? json_object_new_string(sources[u->source]) : NULL);
        return j;
}

static json_object *tokens_to_json(const struct trial_tokens *t)
{
        json_object *j = json_object_new_object();
        json_object_object_add(j, "input", json_object_new_int64(t->input));
        json_object_object_add(j, "cached_input", json_object_new_int64(t->cached_input));
        json_object_object_add(j, "cache_write_input", json_object_new_int64(t->cache_write_input));
        json_object_object_add(j, "output", json_object_new_int64(t->output));
        json_object_object_add(j, "reasoning", json_object_new_int64(t->reasoning));
        json_object_object_add(j, "requests", json_object_new_int64(t->requests));
        json_object *models = json_object_new_array();
        for (size_t i = 0; i < t->n_models && i < TOKENS_MAX_MODELS; i++)
                json_object_array_add(models, json_object_new_string(t->models[i]));
        json_object_object_add(j, "models", models);
        json_object_object_add(j, "models_more", json_object_new_int64(t->models_more));
        json_object_object_add(j, "source", json_object_new_string(t->source));
        json_object_object_add(j, "partial", json_object_new_boolean(t->partial));
        return j;
}

static char *json_line(json_object *j)
{
        char *s = xstrdup(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(j);
        return s;
}

/* The Slurm job the Trial ran in: both null outside one. */
static void add_slurm_ids(json_object *j, const struct outcome *o)
{
        bool in_job = o->slurm_job_id > 0;
        json_object_object_add(j, "slurm_job_id", in_job ? json_object_new_int64(o->slurm_job_id) : NULL);
        json_object_object_add(j, "slurm_array_task_id",
                               in_job && o->slurm_array_task_id >= 0 ? json_object_new_int64(o->slurm_array_task_id) : NULL);
}

static json_object *outcome_json(const struct outcome *o)
{
        json_object *j = json_object_new_object();
        const char *cause = outcome_cause_name(o->cause);

        json_object_object_add(j, "harness", json_object_new_string(o->harness ? o->harness : ""));
        json_object_object_add(j, "outcome", json_object_new_string(outcome_kind_name(o->kind)));
        json_object_object_add(j, "cause", o->kind != OUTCOME_COMPLETED && cause ? json_object_new_string(cause) : NULL);
        json_object_object_add(j, "detail", json_object_new_string(o->detail));
        json_object_object_add(j, "exit_code", o->exit_code >= 0 ? json_object_new_int(o->exit_code) : NULL);
        json_object_object_add(j, "signal", o->signal > 0 ? json_object_new_int(o->signal) : NULL);
        json_object_object_add(j, "sandboxed", json_object_new_boolean(o->sandboxed));
        json_object_object_add(j, "home", o->home ? json_object_new_string(o->home) : NULL);
        json_object_object_add(j, "duration_ms", json_object_new_int64(o->duration_ms));
        json_object_object_add(j, "started_at", time_or_null(o->started_at_ms));
        json_object_object_add(j, "ended_at", time_or_null(o->ended_at_ms));
        struct trial_limits none;
        trial_limits_init(&none);
        json_object_object_add(j, "limits", trial_limits_to_json(o->limits ? o->limits : &none));
        json_object_object_add(j, "usage", o->usage_known ? usage_to_json(&o->usage) : NULL);
        json_object_object_add(j, "tokens", o->tokens.known ? tokens_to_json(&o->tokens) : NULL);
        json_object *dropped = NULL;
        if (o->usage_known) {
                dropped = json_object_new_object();
                json_object_object_add(dropped, "stdout", json_object_new_int64(o->dropped_stdout));
                json_object_object_add(dropped, "stderr", json_object_new_int64(o->dropped_stderr));
        }
        json_object_object_add(j, "output_dropped", dropped);
        json_object_object_add(j, "network", o->network ? json_object_get(o->network) : NULL);
        json_object_object_add(j, "repo_guard", o->repo_guard ? json_object_get(o->repo_guard) : NULL);
        json_object_object_add(j, "control_files", o->control_files ? json_object_get(o->control_files) : NULL);
        json_object_object_add(j, "special_files", o->special_files ? json_object_get(o->special_files) : NULL);
        json_object_object_add(j, "trialbox_version", json_object_new_string(TB_VERSION));
        json_object_object_add(j, "host", o->host[0] ? json_object_new_string(o->host) : NULL);
        add_slurm_ids(j, o);
        json_object_object_add(j, "launcher_nonce", o->nonce[0] ? json_object_new_string(o->nonce) : NULL);
        return j;
}

void outcome_set_nonce(struct outcome *o, const char *s)
{
        o->nonce[0] = '\0';
        if (!s || strlen(s) != OUTCOME_NONCE_LEN || strspn(s, "0123456789abcdef") != OUTCOME_NONCE_LEN)
                return;
        memcpy(o->nonce, s, OUTCOME_NONCE_LEN + 1);
}

char *outcome_to_json(const struct outcome *o) { return json_line(outcome_json(o)); }

/* The record without what a session can grow (the lists of the network
 * and the guard): their counts stay, and "record_reduced" says so. For an
 * Outcome that would not fit its reservation, which the bounds on each list
 * should make impossible: the Outcome is written whatever the session did. */
static char *outcome_reduced_json(const struct outcome *o)
{
        json_object *j = outcome_json(o), *v;
        if (json_object_object_get_ex(j, "network", &v) && v) {
                json_object_object_del(v, "hosts");
                json_object_object_del(v, "other_hosts");
        }
        if (json_object_object_get_ex(j, "repo_guard", &v) && v) {
                json_object_object_del(v, "moved");
                json_object_object_del(v, "restored");
                json_object_object_del(v, "setuid_cleared");
        }
        json_object_object_add(j, "control_files", NULL);
        json_object_object_add(j, "special_files", NULL);
        json_object_object_add(j, "record_reduced", json_object_new_boolean(true));
        return json_line(j);
}

/* The JSON and a newline, its length in *len: the reduced record when the
 * whole one is larger than OUTCOME_RESERVE. */
static char *outcome_record(const struct outcome *o, size_t *len)
{
        char *json = outcome_to_json(o);
        if (strlen(json) + 1 > OUTCOME_RESERVE) {
                free(json);
                json = outcome_reduced_json(o);
        }
        size_t n = strlen(json);
        json = xrealloc(json, n + 2);
        json[n++] = '\n';
        json[n] = '\0';
        *len = n;
        return json;
}

int outcome_write(const struct outcome *o, const char *output_dir, struct tb_error *err)
{
        _cleanup_close_ int dirfd = open(output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return tb_fail(err, -errno, "writing the outcome: cannot open '%s': %s", output_dir, strerror(errno));
        size_t len;
        _cleanup_free_ char *json = outcome_record(o, &len);
        /* Whole or absent, even after a crash (the data is synced before the
         * rename); the folder is not synced: a lost outcome.json reads as a
         * Trial that did not finish, never as a wrong one. */
        int r = write_file_atomic_at(dirfd, "outcome.json", json, len, 0644, WRITE_SYNC_FILE);
        if (r < 0)
                return tb_fail(err, r, "writing '%s/outcome.json': %s; free space or fix the folder's permissions",
                               output_dir, strerror(-r));
        return 0;
}

int outcome_exit_status(const struct outcome *o)
{
        if (o->kind != OUTCOME_VOID && o->guard_status && strcmp(o->guard_status, "quarantined") == 0)
                return TB_EXIT_QUARANTINED;
        if (o->kind != OUTCOME_VOID && o->guard_status && strcmp(o->guard_status, "failed") == 0)
                return TB_EXIT_ERROR;
        switch (o->kind) {
        case OUTCOME_COMPLETED:
                return 0;
        case OUTCOME_FAILED:
                if (o->cause == CAUSE_TIMEOUT)
                        return TB_EXIT_TIMEOUT;
                return o->signal > 0 ? 128 + o->signal : (o->exit_code & 0xff);
        case OUTCOME_VOID:
                break;
        }
        return o->cause == CAUSE_INTERRUPTED && o->interrupted > 0 ? 128 + o->interrupted : TB_EXIT_VOID;
}

int outcome_boot_id(char *buf, size_t n, struct tb_error *err)
{
        size_t len = 0;
        _cleanup_free_ char *id = read_file("/proc/sys/kernel/random/boot_id", 128, &len);
        if (!id)
                return tb_fail(err, -errno, "reading the boot id '/proc/sys/kernel/random/boot_id': %s; is /proc mounted?",
                               strerror(errno));
        id[strcspn(id, "\n")] = '\0';
        if (strlen(id) != 36 || strlen(id) >= n)
                return tb_fail(err, -EINVAL, "the boot id in '/proc/sys/kernel/random/boot_id' is not a UUID");
        memcpy(buf, id, 37);
        return 0;
}

/* When `pid` started, in clock ticks after boot (/proc/PID/stat's 22nd
 * field), or -1: with the boot id, tells a pid reused from the launcher. */
static long long process_start_ticks(long long pid)
{
        char path[64];
        snprintf(path, sizeof path, "/proc/%lld/stat", pid);
        _cleanup_free_ char *stat = read_file(path, 4096, NULL);
        const char *p = stat ? strrchr(stat, ')') : NULL; /* the command may hold spaces and ')' */
        if (!p)
                return -1;
        /* After ")": field 3 (state) onward; the start time is field 22. */
        for (int field = 2; field < 22 && p; field++)
                p = strchr(p + 1, ' ');
        return p ? strtoll(p + 1, NULL, 10) : -1;
}

int outcome_write_running(const struct outcome *o, const char *output_dir, pid_t pid, const char *boot_id,
                          struct tb_error *err)
{
        _cleanup_close_ int dirfd = open(output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return tb_fail(err, -errno, "writing the running record: cannot open '%s': %s", output_dir,
                               strerror(errno));
        json_object *j = json_object_new_object();
        json_object_object_add(j, "harness", json_object_new_string(o->harness ? o->harness : ""));
        json_object_object_add(j, "outcome", json_object_new_string("running"));
        json_object_object_add(j, "pid", json_object_new_int64(pid));
        json_object_object_add(j, "boot_id", json_object_new_string(boot_id));
        long long start = process_start_ticks(pid);
        json_object_object_add(j, "pid_start", start >= 0 ? json_object_new_int64(start) : NULL);
        json_object_object_add(j, "started_at", time_or_null(o->started_at_ms));
        json_object_object_add(j, "host", o->host[0] ? json_object_new_string(o->host) : NULL);
        json_object_object_add(j, "trialbox_version", json_object_new_string(TB_VERSION));
        add_slurm_ids(j, o);
        json_object_object_add(j, "launcher_nonce", o->nonce[0] ? json_object_new_string(o->nonce) : NULL);
        _cleanup_free_ char *line = json_line(j);
        size_t len = strlen(line);
        line = xrealloc(line, len + 2);
        memcpy(line + len, "\n", 2);
        int r = write_file_atomic_at(dirfd, "outcome.json", line, len + 1, 0644, WRITE_SYNC_FILE);
        if (r < 0)
                return tb_fail(err, r, "writing '%s/outcome.json': %s; free space or fix the folder's permissions",
                               output_dir, strerror(-r));
        return 0;
}

int outcome_launcher_lost(const char *outcome_path)
{
        size_t len = 0;
        _cleanup_free_ char *text = read_file(outcome_path, 1 << 20, &len);
        if (!text)
                return -errno;
        json_object *j = json_tokener_parse(text), *v;
        if (!j)
                return -EBADMSG;
        int lost = -EBADMSG;
        const char *kind = json_object_object_get_ex(j, "outcome", &v) ? json_object_get_string(v) : NULL;
        if (kind && strcmp(kind, "running") != 0) {
                lost = 0;
        } else if (kind) {
                json_object *pid_j, *boot_j;
                char boot[40];
                if (json_object_object_get_ex(j, "pid", &pid_j) && json_object_object_get_ex(j, "boot_id", &boot_j) &&
                    json_object_is_type(pid_j, json_type_int) && json_object_get_int64(pid_j) > 0 &&
                    outcome_boot_id(boot, sizeof boot, NULL) == 0) {
                        long long pid = json_object_get_int64(pid_j);
                        const char *was = json_object_get_string(boot_j);
                        bool same_boot = was && strcmp(was, boot) == 0;
                        /* EPERM: alive, someone else's. */
                        bool alive = pid <= INT32_MAX && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
                        /* The pid reused by another process since: the launcher is gone. */
                        json_object *start_j;
                        if (alive && json_object_object_get_ex(j, "pid_start", &start_j) &&
                            json_object_is_type(start_j, json_type_int))
                                alive = json_object_get_int64(start_j) == process_start_ticks(pid);
                        lost = !same_boot || !alive;
                }
        }
        json_object_put(j);
        return lost;
}

int outcome_reserve(struct outcome_file *f, const char *output_dir, struct tb_error *err)
{
        *f = (struct outcome_file){ .dirfd = -1, .fd = -1 };
        f->dirfd = open(output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (f->dirfd < 0)
                return tb_fail(err, -errno, "reserving space for the outcome: cannot open '%s': %s", output_dir,
                               strerror(errno));
        snprintf(f->tmp, sizeof f->tmp, ".outcome.json.final-%d", (int)getpid());
        /* A leftover of an earlier run with our pid is ours to replace. */
        unlinkat(f->dirfd, f->tmp, 0);
        f->fd = openat(f->dirfd, f->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (f->fd < 0) {
                int r = -errno;
                outcome_file_done(f);
                return tb_fail(err, r, "reserving space for the outcome in '%s': %s; fix the folder's permissions",
                               output_dir, strerror(-r));
        }
        int r = fchmod(f->fd, 0644) < 0 ? errno : posix_fallocate(f->fd, 0, OUTCOME_RESERVE);
        if (r != 0) {
                outcome_file_done(f);
                return tb_fail(err, -r, "reserving %d KiB for the outcome in '%s': %s; free some space", OUTCOME_RESERVE / 1024,
                               output_dir, strerror(r));
        }
        return 0;
}

int outcome_commit(struct outcome_file *f, const struct outcome *o, struct tb_error *err)
{
        if (f->fd < 0)
                return tb_fail(err, -EBADF, "writing the outcome: no space was reserved for it");
        size_t len;
        _cleanup_free_ char *json = outcome_record(o, &len);
        if (len > OUTCOME_RESERVE)
                return tb_fail(err, -EFBIG, "writing the outcome: %zu bytes do not fit the %d reserved", len,
                               OUTCOME_RESERVE);
        int r = loop_pwrite(f->fd, json, len, 0);
        if (r < 0)
                return tb_fail(err, r, "writing the outcome into '%s': %s", f->tmp, strerror(-r));
        if (ftruncate(f->fd, (off_t)len) < 0 || fdatasync(f->fd) < 0 || renameat(f->dirfd, f->tmp, f->dirfd, "outcome.json") < 0)
                return tb_fail(err, -errno, "putting the outcome in place as 'outcome.json': %s", strerror(errno));
        tb_closep(&f->fd);
        return 0;
}

void outcome_file_done(struct outcome_file *f)
{
        if (f->fd >= 0 && f->dirfd >= 0)
                unlinkat(f->dirfd, f->tmp, 0);
        tb_closep(&f->fd);
        tb_closep(&f->dirfd);
}
