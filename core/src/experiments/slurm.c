#define _GNU_SOURCE
#include "experiments/slurm.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/env.h"
#include "base/error.h"
#include "base/path.h"
#include "base/spawn.h"
#include "base/str.h"
#include "base/strbuf.h"
#include "base/strv.h"

/* ---- running Slurm's clients ---- */

struct tool_result {
        int status; /* exit status, 128+N for a signal */
        char *out;
        char *err;
};

static void tool_result_done(struct tool_result *r)
{
        free(r->out);
        free(r->err);
        r->out = r->err = NULL;
}

#define TOOL_OUTPUT_MAX (64u << 20)

/* The first line of a tool's stderr, printable, for a message. */
static char *first_line(const char *s)
{
        while (*s == '\n' || *s == ' ')
                s++;
        char *line = strndup(s, strcspn(s, "\n"));
        if (!line)
                return xstrdup("");
        char *shown = str_escape(line);
        free(line);
        return shown;
}

/* Run `argv` (argv[0] a tool's name, found on envp's PATH) with stdin on
 * /dev/null, capturing stdout and stderr. */
static int run_tool(char *const argv[], char *const envp[], struct tool_result *r, struct tb_error *err)
{
        const char *path = env_lookup(envp, "PATH");
        _cleanup_free_ char *bin = find_on_path(argv[0], path && *path ? path : TB_DEFAULT_PATH);
        if (!bin)
                return tb_fail(err, -ENOENT, "'%s' not found on PATH: install slurm-client", argv[0]);
        /* The caller may block the signals it waits for: spawn gives the
         * tool an empty mask. */
        struct spawn s = { .argv = argv, .path = bin, .envp = envp, .std_in = SPAWN_DEV_NULL, .std_out = SPAWN_CAPTURE,
                           .std_err = SPAWN_CAPTURE, .capture_max = TOOL_OUTPUT_MAX };
        int rc = spawn_run(&s, err);
        if (rc < 0) {
                spawn_done(&s);
                return rc;
        }
        r->status = s.status;
        r->out = TAKE_PTR(s.out.buf);
        r->err = TAKE_PTR(s.err.buf);
        spawn_done(&s);
        return 0;
}

/* ---- --slurm-args ---- */

/* One word from *pp (blanks skipped first) into `w`; *got false at the end. */
static int split_word(const char **pp, struct strbuf *w, bool *got, struct tb_error *err)
{
        const char *p = *pp + strspn(*pp, " \t\n");
        *got = *p != '\0';
        char quote = 0;
        for (; *p && (quote || !strchr(" \t\n", *p)); p++) {
                if (quote && *p == quote) {
                        quote = 0;
                        continue;
                }
                if (!quote && (*p == '\'' || *p == '"')) {
                        quote = *p;
                        if (!w->s)
                                strbuf_add(w, ""); /* '' is an empty word */
                        continue;
                }
                if (*p == '\\' && quote != '\'' && (!quote || (p[1] && strchr("\"\\$`", p[1])))) {
                        if (!p[1])
                                return tb_fail(err, -EINVAL, "--slurm-args ends in a backslash: remove it or quote it");
                        p++;
                }
                char c[2] = { *p, 0 };
                strbuf_add(w, c);
        }
        if (quote)
                return tb_fail(err, -EINVAL, "--slurm-args has an unclosed %c quote: close it", quote);
        *pp = p;
        return 0;
}

int slurm_args_split(const char *s, struct strv *out, struct tb_error *err)
{
        for (const char *p = s ? s : "";;) {
                struct strbuf w = { 0 };
                bool got;
                int r = split_word(&p, &w, &got, err);
                if (r < 0 || !got) {
                        free(w.s);
                        return r;
                }
                strv_add_take(out, w.s ? w.s : xstrdup(""));
        }
}

/* Does a word of `words` set this option ("--long", "--long=…", "-s", "-s…")? */
static bool words_set(const struct strv *words, const char *long_opt, char short_opt)
{
        size_t n = strlen(long_opt);
        for (size_t i = 0; i < words->n; i++) {
                const char *w = words->v[i];
                if (strncmp(w, long_opt, n) == 0 && (w[n] == '\0' || w[n] == '='))
                        return true;
                if (short_opt && w[0] == '-' && w[1] == short_opt)
                        return true;
        }
        return false;
}

/* ---- the sbatch command line ---- */

long long slurm_time_limit_s(const struct slurm_limits *l)
{
        if (l->timeout_s <= 0)
                return -1;
        long long backoff_ms = 0;
        for (unsigned i = 0, wait = l->backoff_ms > 0 ? (unsigned)(l->backoff_ms < 60000 ? l->backoff_ms : 60000) : 0;
             i < l->retries; i++, wait = wait * 2 < 60000 ? wait * 2 : 60000)
                backoff_ms += wait;
        return (1 + (long long)l->retries) * l->timeout_s + (backoff_ms + 999) / 1000 + SLURM_TIME_MARGIN_S;
}

static void add_limits(const struct slurm_limits *l, const struct strv *user, struct strv *argv)
{
        if (l->timeout_s > 0 && !words_set(user, "--time", 't'))
                strv_addf(argv, "--time=%lld", (slurm_time_limit_s(l) + 59) / 60);
        if (l->memory_bytes > 0 && !words_set(user, "--mem", 0) && !words_set(user, "--mem-per-cpu", 0) &&
            !words_set(user, "--mem-per-gpu", 0))
                strv_addf(argv, "--mem=%lldM", (l->memory_bytes + SLURM_MEMORY_MARGIN_BYTES + (1 << 20) - 1) >> 20);
        if (l->cpus > 0 && !words_set(user, "--cpus-per-task", 'c')) {
                long long cpus = (long long)l->cpus;
                strv_addf(argv, "--cpus-per-task=%lld", cpus < l->cpus ? cpus + 1 : cpus);
        }
}

static char *wrap_line(const struct slurm_array_request *req)
{
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "exec ");
        strbuf_add_quoted(&sb, req->trialbox);
        strbuf_add(&sb, " batch ");
        strbuf_add_quoted(&sb, req->plan);
        strbuf_add(&sb, " --index \"$SLURM_ARRAY_TASK_ID\"");
        for (char *const *a = req->task_args; a && *a; a++) {
                strbuf_add(&sb, " ");
                strbuf_add_quoted(&sb, *a);
        }
        return sb.s;
}

int slurm_sbatch_argv(const struct slurm_array_request *req, struct strv *argv, struct tb_error *err)
{
        if (req->tasks == 0)
                return tb_fail(err, -EINVAL, "the plan has no Trials: nothing to submit");
        if (!req->trialbox || req->trialbox[0] != '/' || !req->plan || req->plan[0] != '/' || !req->log_dir)
                return tb_fail(err, -EINVAL, "the trialbox binary, the plan and the log folder need absolute paths");
        struct strv user = { 0 };
        int r = slurm_args_split(req->slurm_args, &user, err);
        if (r < 0) {
                strv_done(&user);
                return r;
        }
        if (words_set(&user, "--array", 'a') || words_set(&user, "--wrap", 0) || words_set(&user, "--parsable", 0) ||
            words_set(&user, "--wait", 'W')) {
                strv_done(&user);
                return tb_fail(err, -EINVAL,
                               "--slurm-args may not set --array, --wrap, --parsable or --wait: trialbox sets them");
        }
        strv_add(argv, "sbatch");
        strv_add(argv, "--job-name=trialbox-batch");
        struct strbuf out = { 0 }; /* sbatch expands %x in the name: a '%' of the folder is "%%" */
        strbuf_add(&out, "--output=");
        for (const char *p = req->log_dir; *p; p++)
                strbuf_add(&out, *p == '%' ? "%%" : (char[]){ *p, 0 });
        strbuf_add(&out, "/slurm-%A_%a.out");
        strv_add_take(argv, out.s);
        add_limits(&req->limits, &user, argv);
        for (size_t i = 0; i < user.n; i++)
                strv_add(argv, user.v[i]);
        strv_done(&user);
        strv_add(argv, "--parsable");
        if (req->max_running > 0)
                strv_addf(argv, "--array=0-%zu%%%u", req->tasks - 1, req->max_running);
        else
                strv_addf(argv, "--array=0-%zu", req->tasks - 1);
        _cleanup_free_ char *wrap = wrap_line(req);
        strv_addf(argv, "--wrap=%s", wrap);
        return 0;
}

/* ---- submit, poll, wait, cancel ---- */

/* "1234" or "1234;cluster", then a newline. */
static long long parse_sbatch_id(const char *out)
{
        char *end;
        errno = 0;
        long long v = strtoll(out, &end, 10);
        if (errno || end == out || v < 0 || (*end && *end != ';' && *end != '\n'))
                return -1;
        return v;
}

int slurm_submit(const struct slurm_array_request *req, char *const envp[], long long *job_id,
                 struct tb_error *err)
{
        struct strv argv = { 0 };
        int r = slurm_sbatch_argv(req, &argv, err);
        struct tool_result res = { 0 };
        if (r == 0)
                r = run_tool(argv.v, envp, &res, err);
        strv_done(&argv);
        if (r != 0)
                return tb_wrap(err, "submitting the plan to Slurm");
        if (res.status != 0) {
                _cleanup_free_ char *msg = first_line(res.err);
                r = tb_fail(err, -EIO, "sbatch failed (status %d): %s", res.status, *msg ? msg : "no message");
        } else if ((*job_id = parse_sbatch_id(res.out)) < 0) {
                _cleanup_free_ char *msg = first_line(res.out);
                r = tb_fail(err, -EPROTO, "sbatch printed no job id ('%s')", msg);
        }
        tool_result_done(&res);
        return r;
}

/* Count one "1234_5 RUNNING" line of squeue. */
static void count_state(const char *line, struct slurm_array_state *st)
{
        const char *state = strchr(line, ' ');
        if (!state)
                return;
        state++;
        size_t n = strcspn(state, " \n");
        if (n == 7 && strncmp(state, "PENDING", n) == 0)
                st->pending++;
        else if ((n == 7 && strncmp(state, "RUNNING", n) == 0) ||
                 (n == 11 && (strncmp(state, "CONFIGURING", n) == 0)) ||
                 (n == 10 && strncmp(state, "COMPLETING", n) == 0))
                st->running++;
        else
                st->other++;
}

/* One squeue of `id` ("1234" or "1234_5"). */
static int poll_id(char *id, char *const envp[], struct slurm_array_state *st, struct tb_error *err)
{
        *st = (struct slurm_array_state){ 0 };
        char *argv[] = { "squeue", "-h", "-r", "-j", id, "-o", "%i %T", NULL };
        struct tool_result res = { 0 };
        int r = run_tool(argv, envp, &res, err);
        if (r != 0)
                return r;
        if (res.status != 0 && strstr(res.err, "Invalid job id")) {
                st->gone = true; /* forgotten by the controller (MinJobAge): long over */
        } else if (res.status != 0) {
                _cleanup_free_ char *msg = first_line(res.err);
                r = tb_fail(err, -EAGAIN, "squeue failed (status %d): %s", res.status, *msg ? msg : "no message");
        } else {
                for (char *line = res.out; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != '\0'))
                        count_state(line, st);
                st->gone = st->pending + st->running + st->other == 0;
        }
        tool_result_done(&res);
        return r;
}

int slurm_array_poll(long long job_id, char *const envp[], struct slurm_array_state *st, struct tb_error *err)
{
        char id[32];
        snprintf(id, sizeof id, "%lld", job_id);
        return poll_id(id, envp, st, err);
}

int slurm_task_poll(long long job_id, long long task, char *const envp[], struct slurm_array_state *st,
                    struct tb_error *err)
{
        char id[48];
        snprintf(id, sizeof id, "%lld_%lld", job_id, task);
        return poll_id(id, envp, st, err);
}

/* Sleep `ms`, returning early when a signal arrives (the tick sees it). */
static void sleep_ms(long ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

int slurm_array_wait(long long job_id, char *const envp[], slurm_tick_fn tick, void *userdata,
                     struct tb_error *err)
{
        long long failing_since = -1;
        for (;;) {
                struct slurm_array_state st;
                int r = slurm_array_poll(job_id, envp, &st, err);
                if (r == -EAGAIN) {
                        long long now = now_ms();
                        if (failing_since < 0)
                                failing_since = now;
                        if (now - failing_since > SLURM_POLL_PATIENCE_S * 1000LL)
                                return tb_wrap(err, "waiting for job %lld (for %d s)", job_id, SLURM_POLL_PATIENCE_S);
                } else if (r < 0) {
                        return tb_wrap(err, "waiting for job %lld", job_id);
                } else {
                        failing_since = -1;
                }
                int stop = tick && r == 0 ? tick(&st, userdata) : 0;
                if (stop)
                        return stop;
                if (r == 0 && st.gone)
                        return 0;
                sleep_ms(1000);
        }
}

/* scancel: an array already gone is not an error. */
static int run_scancel(char *const argv[], char *const envp[], long long job_id, struct tb_error *err)
{
        struct tool_result res = { 0 };
        int r = run_tool(argv, envp, &res, err);
        if (r == 0 && res.status != 0 && !strstr(res.err, "Invalid job id")) {
                _cleanup_free_ char *msg = first_line(res.err);
                r = tb_fail(err, -EIO, "scancel of job %lld failed (status %d): %s", job_id, res.status,
                            *msg ? msg : "no message");
        }
        tool_result_done(&res);
        return r;
}

int slurm_array_cancel(long long job_id, int sig, char *const envp[], struct tb_error *err)
{
        char id[32], signal_opt[32];
        snprintf(id, sizeof id, "%lld", job_id);
        snprintf(signal_opt, sizeof signal_opt, "--signal=%d", sig);
        char *pending[] = { "scancel", "--state=PENDING", id, NULL };
        int r = run_scancel(pending, envp, job_id, err);
        if (r != 0)
                return r;
        /* --full: the batch shell itself, which is the exec'd trialbox. */
        char *running[] = { "scancel", "--full", signal_opt, id, NULL };
        char *kill_all[] = { "scancel", id, NULL };
        return run_scancel(sig == SIGKILL ? kill_all : running, envp, job_id, err);
}

/* ---- the jobcomp file ---- */

/* "Key = value" of `scontrol show config`, malloc'd, or NULL. */
static char *config_value(const char *text, const char *key)
{
        size_t n = strlen(key);
        for (const char *line = text ? text : ""; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != '\0')) {
                if (strncmp(line, key, n) != 0 || (line[n] != ' ' && line[n] != '='))
                        continue;
                const char *v = line + n + strspn(line + n, " =");
                return strndup(v, strcspn(v, "\n"));
        }
        return NULL;
}

int slurm_jobcomp_path(char *const envp[], char **path, struct tb_error *err)
{
        char *argv[] = { "scontrol", "show", "config", NULL };
        struct tool_result res = { 0 };
        int r = run_tool(argv, envp, &res, err);
        if (r != 0)
                return r;
        _cleanup_free_ char *type = config_value(res.out, "JobCompType");
        _cleanup_free_ char *loc = config_value(res.out, "JobCompLoc");
        if (res.status != 0)
                r = tb_fail(err, -EAGAIN, "scontrol show config failed (status %d)", res.status);
        else if (!type || strcmp(type, "jobcomp/filetxt") != 0 || !loc || loc[0] != '/')
                r = tb_fail(err, -ENOENT, "the cluster keeps no jobcomp/filetxt file (JobCompType '%s')",
                            type ? type : "unset");
        else
                *path = TAKE_PTR(loc);
        tool_result_done(&res);
        return r;
}

/* The value of " Key=" in a jobcomp line, up to the next blank. */
static const char *field(const char *line, const char *key, char *buf, size_t size)
{
        size_t n = strlen(key);
        for (const char *p = line; (p = strstr(p, key)); p += n) {
                if ((p != line && p[-1] != ' ') || p[n] != '=')
                        continue;
                size_t len = strcspn(p + n + 1, " \n");
                snprintf(buf, size, "%.*s", (int)(len < size ? len : size - 1), p + n + 1);
                return buf;
        }
        return NULL;
}

bool slurm_jobcomp_line_match(const char *line, long long job_id, long long task, struct slurm_task_end *end)
{
        char a[64];
        if (task >= 0) {
                char b[64];
                if (job_parse_id(field(line, "ArrayJobId", a, sizeof a)) != job_id ||
                    job_parse_id(field(line, "ArrayTaskId", b, sizeof b)) != task)
                        return false;
        } else if (job_parse_id(field(line, "JobId", a, sizeof a)) != job_id) {
                return false;
        }
        if (!field(line, "JobState", end->state, sizeof end->state))
                return false;
        int code = 0, sig = 0;
        if (!field(line, "ExitCode", a, sizeof a) || sscanf(a, "%d:%d", &code, &sig) < 1)
                return false;
        end->exit_code = code;
        end->signal = sig;
        return true;
}

int slurm_jobcomp_find(const char *path, long long job_id, long long task, struct slurm_task_end *end,
                       struct tb_error *err)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return tb_fail(err, -errno, "reading '%s': %s", path, strerror(errno));
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        bool found = false;
        while (getline(&line, &cap, f) >= 0) {
                struct slurm_task_end e;
                if (slurm_jobcomp_line_match(line, job_id, task, &e)) {
                        *end = e;
                        found = true; /* keep the last: a requeued task ends again */
                }
        }
        if (!found)
                return tb_fail(err, -ENOENT, "'%s' has no record of job %lld task %lld", path, job_id, task);
        return 0;
}

void slurm_limits_add(struct slurm_limits *l, long long timeout_s, long long memory_bytes, double cpus)
{
        /* A Trial without a timeout or memory limit must not get one from
         * another Trial: then the array asks for none (-1 stays). */
        if (timeout_s <= 0 || l->timeout_s < 0)
                l->timeout_s = -1;
        else if (timeout_s > l->timeout_s)
                l->timeout_s = timeout_s;
        if (memory_bytes <= 0 || l->memory_bytes < 0)
                l->memory_bytes = -1;
        else if (memory_bytes > l->memory_bytes)
                l->memory_bytes = memory_bytes;
        if (cpus > l->cpus)
                l->cpus = cpus;
}
