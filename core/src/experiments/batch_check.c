/* What a batch checks of its plan's lines before anything runs
 * (experiments/batch_internal.h): mistakes that would make a Trial void
 * every time (a Harness not installed, its binary missing, a repo_from
 * revision that does not exist, a login or key missing, a skills folder
 * missing), and finished Trials whose line or Harness binary changed since
 * they ran. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/env.h"
#include "base/log.h"
#include "base/path.h"
#include "base/spawn.h"
#include "base/str.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "experiments/batch_internal.h"
#include "model/outcome.h"
#include "plugin/loader.h"
#include "sandbox/session_user.h"
#include "trial/readiness.h"

/* ---- the Harnesses' plugins, asked once ---- */

/* What the checks need of a Harness's plugin, asked once. The plugin is
 * not kept loaded: two plugins loaded at once through /proc/self/fd/N can
 * be taken for one by the dynamic loader, which matches a library's name. */
struct batch_harness {
        char *name;
        char *default_binary;
        char *error; /* why it cannot be loaded, or NULL */
};

static struct batch_harness *harness_of(struct batch *b, const char *name)
{
        for (size_t i = 0; i < b->n_harnesses; i++)
                if (strcmp(b->harnesses[i].name, name) == 0)
                        return &b->harnesses[i];
        GREEDY_REALLOC(b->harnesses, b->cap_harnesses, b->n_harnesses + 1);
        struct batch_harness *h = &b->harnesses[b->n_harnesses++];
        *h = (struct batch_harness){ .name = xstrdup(name) };
        struct tb_error err = { 0 };
        struct plugin p;
        if (plugin_load(b->opt->plugin_path, name, &p, &err) < 0) {
                h->error = xstrdup(err.msg);
                return h;
        }
        h->default_binary = xstrdup(p.harness->default_binary);
        plugin_unload(&p);
        return h;
}

void batch_check_done(struct batch *b)
{
        for (size_t i = 0; i < b->n_harnesses; i++) {
                free(b->harnesses[i].name);
                free(b->harnesses[i].default_binary);
                free(b->harnesses[i].error);
        }
        free(b->harnesses);
        b->harnesses = NULL;
        b->n_harnesses = b->cap_harnesses = 0;
}

/* ---- the Harness binary ---- */

static const char *batch_path(const struct batch *b)
{
        return b->opt->env && b->opt->env->path ? b->opt->env->path : TB_DEFAULT_PATH;
}

void batch_binary_find(struct batch *b, const struct plan_trial *p, struct batch_binary *out)
{
        *out = (struct batch_binary){ .size = -1, .mtime_ns = -1 };
        const char *want = p->more->harness_bin;
        if (!want) {
                struct batch_harness *h = harness_of(b, p->harness);
                want = h->default_binary;
        }
        if (!want)
                return;
        out->wanted = xstrdup(want);
        out->path = find_on_path(want, batch_path(b));
        struct stat st;
        if (out->path && stat(out->path, &st) == 0) {
                out->size = (long long)st.st_size;
                out->mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
        }
}

void batch_binary_done(struct batch_binary *bin)
{
        free(bin->path);
        free(bin->wanted);
        *bin = (struct batch_binary){ 0 };
}

json_object *batch_binary_json(const struct batch_binary *bin)
{
        json_object *j = json_object_new_object();
        json_object_object_add(j, "path", bin->path ? json_object_new_string(bin->path) : NULL);
        json_object_object_add(j, "size", bin->size >= 0 ? json_object_new_int64(bin->size) : NULL);
        json_object_object_add(j, "mtime_ns", bin->mtime_ns >= 0 ? json_object_new_int64(bin->mtime_ns) : NULL);
        /* No plugin hook says a Harness's version (ABI 1.3): path, size and
         * mtime tell an update, and running the binary outside its sandbox
         * to ask would be running the agent's CLI on the host. */
        json_object_object_add(j, "version", NULL);
        return j;
}

bool batch_binary_gone(struct batch *b, const struct btrial *t, char **why)
{
        struct batch_binary bin;
        batch_binary_find(b, t->p, &bin);
        bool gone = bin.wanted && !bin.path;
        if (gone)
                *why = xasprintf("its %s binary '%s' is not there%s", t->p->harness, bin.wanted,
                                 strchr(bin.wanted, '/') ? "" : " (on the PATH)");
        batch_binary_done(&bin);
        return gone;
}

/* ---- what is in a Trial's folder ---- */

/* Is the Trial's record final for good (completed, failed, unrecorded, or
 * void with its retries used: one the operator interrupted never is), as
 * written by a run of this batch? `rec` is its outcome.json. */
static bool finished(const struct batch *b, const struct btrial *t, json_object *rec)
{
        const char *kind = batch_record_kind(rec);
        _cleanup_free_ char *why = NULL;
        if (!kind || strcmp(kind, "running") == 0 || batch_record_ours(t->p->output_dir, rec, &why) != 1)
                return false;
        if (strcmp(kind, "void") != 0)
                return true;
        if (batch_record_interrupted(rec))
                return false;
        unsigned asides = batch_count_asides(t->p->output_dir);
        return 1 + batch_count_retried(t->p->output_dir, asides) >= 1 + b->opt->retries;
}

static const char *string_of(json_object *j, const char *key)
{
        json_object *v;
        return j && json_object_object_get_ex(j, key, &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : NULL;
}

static long long int_of(json_object *j, const char *key)
{
        json_object *v;
        return j && json_object_object_get_ex(j, key, &v) && json_object_is_type(v, json_type_int)
                       ? json_object_get_int64(v)
                       : -1;
}

/* What changed since the finished Trial `t` ran (its launcher.json says what
 * it ran): NULL when nothing did (or an earlier trialbox recorded nothing to
 * compare), else a malloc'd phrase. */
static char *what_changed(struct batch *b, const struct btrial *t)
{
        json_object *launcher = batch_read_record(t->p->output_dir, "launcher.json");
        const char *was = string_of(launcher, "plan_fingerprint");
        json_object *bin_was = NULL;
        if (launcher)
                json_object_object_get_ex(launcher, "harness_binary", &bin_was);
        struct strbuf why = { 0 };
        if (was && strcmp(was, t->p->fingerprint) != 0)
                strbuf_add(&why, "its plan line changed");
        if (bin_was && json_object_is_type(bin_was, json_type_object)) {
                struct batch_binary now;
                batch_binary_find(b, t->p, &now);
                const char *path = string_of(bin_was, "path");
                long long size = int_of(bin_was, "size"), mtime = int_of(bin_was, "mtime_ns");
                if (!now.path)
                        strbuf_addf(&why, "%sits Harness binary '%s' is gone", why.s ? "; " : "",
                                    path ? path : now.wanted ? now.wanted : "?");
                else if (!path || strcmp(path, now.path) != 0)
                        strbuf_addf(&why, "%sits Harness binary is '%s' now, not '%s'", why.s ? "; " : "", now.path,
                                    path ? path : "none");
                else if (size != now.size || mtime != now.mtime_ns) {
                        char was_at[40], now_at[40];
                        strbuf_addf(&why, "%sits Harness binary '%s' changed (%lld bytes, modified %s; now %lld bytes, "
                                    "modified %s)",
                                    why.s ? "; " : "", now.path, size,
                                    outcome_format_time(mtime / 1000000, was_at, sizeof was_at), now.size,
                                    outcome_format_time(now.mtime_ns / 1000000, now_at, sizeof now_at));
                }
                batch_binary_done(&now);
        }
        json_object_put(launcher);
        return why.s;
}

/* ---- checking the lines ---- */

/* Is REV (or HEAD) a commit of the repository `src`? Asked of git once
 * per repository and revision (`seen` keeps the answers). */
static bool revision_exists(const char *src, const char *rev, struct strv *seen)
{
        _cleanup_free_ char *key = xasprintf("%s\n%s", src, rev ? rev : "");
        for (size_t i = 0; i + 1 < seen->n; i += 2)
                if (strcmp(seen->v[i], key) == 0)
                        return seen->v[i + 1][0] == '1';
        _cleanup_free_ char *spec = xasprintf("%s^{commit}", rev ? rev : "HEAD");
        char *argv[] = { "git", "-C", (char *)src, "rev-parse", "--quiet", "--verify", spec, NULL };
        struct spawn s = { .argv = argv, .std_in = SPAWN_DEV_NULL, .std_out = SPAWN_DEV_NULL,
                           .std_err = SPAWN_DEV_NULL };
        int r = spawn_run(&s, NULL);
        spawn_done(&s);
        bool exists = r == 0 && s.status == 0;
        strv_add(seen, key);
        strv_add(seen, exists ? "1" : "0");
        return exists;
}

/* One problem of line `p`: "PLAN:LINE: field 'F': what", into `out`. */
static void problem(const struct batch *b, const struct plan_trial *p, const char *field, struct strv *out,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void problem(const struct batch *b, const struct plan_trial *p, const char *field, struct strv *out,
                    const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *what = xvasprintf(fmt, ap);
        va_end(ap);
        strv_addf(out, "%s:%u: field '%s': %s", b->plan.path, p->line, field, what);
}

/* The plugin's preflight in checking mode, once per Harness and
 * Credentials file: NULL when it passes, else why (kept in `seen`). */
static const char *login_problem(struct batch *b, struct batch_harness *h, const char *credentials, struct strv *seen)
{
        _cleanup_free_ char *key = xasprintf("%s\n%s\n", h->name, credentials ? credentials : "");
        for (size_t i = 0; i + 1 < seen->n; i += 2)
                if (strcmp(seen->v[i], key) == 0)
                        return seen->v[i + 1][0] ? seen->v[i + 1] : NULL;
        _cleanup_free_ char *why = NULL;
        struct plugin p;
        struct tb_error err = { 0 };
        if (b->opt->env && plugin_load(b->opt->plugin_path, h->name, &p, &err) == 0) {
                why = readiness_login(&p, b->opt->env, credentials);
                plugin_unload(&p);
        }
        strv_add(seen, key);
        strv_add(seen, why ? why : "");
        return why ? seen->v[seen->n - 1] : NULL;
}

/* Who the session (or the grader) of line `p` runs as, as `run` (or
 * `grade`) will decide it: a line that would be refused for it, said. A
 * clone of repo_from is the batch's own until it is given to `user`. */
static void check_user(const struct batch *b, const struct plan_trial *p, const char *field, const char *user,
                       bool root_session, const char *repo, struct strv *out)
{
        struct stat st = { .st_uid = geteuid() };
        if (repo && stat(repo, &st) < 0)
                return; /* said by the plan's check, or the Trial's own */
        struct session_user u;
        struct tb_error err = { 0 };
        if (session_user_resolve(user, root_session, geteuid(), &st, &u, &err) < 0)
                problem(b, p, field, out, "%s (in a plan line: '%s' or '%s')", err.msg, field,
                        strcmp(field, "user") == 0 ? "root_session" : "grade.root_session");
        else
                session_user_done(&u);
}

/* What the checks asked once, for every line: the plugins' preflights,
 * git's answers. */
struct check_memo {
        struct strv logins, revisions;
};

/* Everything that would make line `p` void every time it runs. */
static void check_line(struct batch *b, const struct plan_trial *p, struct check_memo *memo, struct strv *out)
{
        struct batch_harness *h = harness_of(b, p->harness);
        if (h->error) {
                problem(b, p, "harness", out, "%s; see 'trialbox harnesses'", h->error);
                return;
        }
        struct batch_binary bin;
        batch_binary_find(b, p, &bin);
        if (bin.wanted && !bin.path)
                problem(b, p, p->more->harness_bin ? "harness_bin" : "harness", out,
                        "the %s binary '%s' was not found%s; install it or %s", p->harness, bin.wanted,
                        strchr(bin.wanted, '/') ? "" : " on the PATH",
                        p->more->harness_bin ? "fix harness_bin" : "give harness_bin");
        batch_binary_done(&bin);
        struct stat st;
        if (p->more->skills && (stat(p->more->skills, &st) < 0 || !S_ISDIR(st.st_mode)))
                problem(b, p, "skills", out, "'%s' is not a folder", p->more->skills);
        if (p->repo_from && !revision_exists(p->repo_from, p->more->repo_rev, &memo->revisions))
                problem(b, p, "repo_from", out,
                        p->more->repo_rev ? "'%s' is not a commit of the git repository '%s'"
                                          : "%s'%s' has no commit (is it a git repository?)",
                        p->more->repo_rev ? p->more->repo_rev : "", p->repo_from);
        const char *login = login_problem(b, h, p->more->credentials, &memo->logins);
        if (login)
                problem(b, p, "harness", out, "the %s plugin's preflight: %s", p->harness, login);
        check_user(b, p, "user", p->more->user, p->root_session, p->repo, out);
        /* (A clone given to the Trial's user is the grader's default user.) */
        if (p->more->grade && (p->repo || !p->more->user))
                check_user(b, p, "grade.user", p->more->grade->user, p->more->grade->root_session, p->repo, out);
}

/* Check the lines `run` selects (every line when NULL): each problem a
 * line in `out`. */
static void check_lines(struct batch *b, const bool *run, struct strv *out)
{
        struct check_memo memo = { 0 };
        for (size_t i = 0; i < b->plan.n; i++)
                if (!run || run[i])
                        check_line(b, &b->plan.v[i], &memo, out);
        strv_done(&memo.logins);
        strv_done(&memo.revisions);
}

int batch_check_only(struct batch *b)
{
        struct strv problems = { 0 };
        check_lines(b, NULL, &problems);
        for (size_t i = 0; i < problems.n; i++)
                log_error("%s", problems.v[i]);
        int status = problems.n ? TB_EXIT_USAGE : 0;
        if (!problems.n)
                log_notice("%s: %zu Trials checked: nothing found", b->plan.path, b->plan.n);
        strv_done(&problems);
        return status;
}

/* A finished Trial whose line or binary changed, run again: its last
 * attempt moved aside as any void one. */
static void rerun(struct batch *b, struct btrial *t, const char *what)
{
        unsigned attempt = batch_count_asides(t->p->output_dir) + 1;
        int r = batch_move_aside(t, attempt);
        _cleanup_free_ char *to = batch_attempt_dir(t->p->output_dir, attempt);
        if (r < 0)
                log_error("%s:%u: Trial '%s' finished, but %s: cannot move '%s' aside to run it again: %s",
                          b->plan.path, t->p->line, t->p->id, what, t->p->output_dir, strerror(-r));
        else
                log_notice("%s:%u: Trial '%s' finished, but %s: it runs again (its last attempt is kept as '%s')",
                           b->plan.path, t->p->line, t->p->id, what, to);
}

int batch_check_start(struct batch *b)
{
        batch_trials_init(b);
        _cleanup_free_ bool *run = xcalloc(b->n + 1, sizeof *run);
        struct strv changed = { 0 }, problems = { 0 };
        _cleanup_free_ char **what = xcalloc(b->n + 1, sizeof *what);
        for (size_t i = 0; i < b->n; i++) {
                json_object *rec = batch_read_record(b->t[i].p->output_dir, "outcome.json");
                bool done = finished(b, &b->t[i], rec);
                json_object_put(rec);
                what[i] = done ? what_changed(b, &b->t[i]) : NULL;
                run[i] = !done || (what[i] && b->opt->rerun_changed);
                if (what[i] && !b->opt->rerun_changed)
                        strv_addf(&changed, "%s:%u: Trial '%s' finished, but %s: its result is kept; run with "
                                  "--rerun-changed to run it again",
                                  b->plan.path, b->t[i].p->line, b->t[i].p->id, what[i]);
        }
        check_lines(b, run, &problems);
        for (size_t i = 0; i < changed.n; i++)
                log_error("%s", changed.v[i]);
        for (size_t i = 0; i < problems.n; i++)
                log_error("%s", problems.v[i]);
        int status = changed.n || problems.n ? TB_EXIT_USAGE : 0;
        if (status)
                log_error("%s: nothing was run%s", b->plan.path,
                          problems.n ? ": fix the lines above" : "");
        for (size_t i = 0; status == 0 && i < b->n; i++)
                if (what[i])
                        rerun(b, &b->t[i], what[i]);
        for (size_t i = 0; i < b->n; i++)
                free(what[i]);
        strv_done(&changed);
        strv_done(&problems);
        return status;
}
