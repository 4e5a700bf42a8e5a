#define _GNU_SOURCE
#include "experiments/plan.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "model/limits.h"
#include "base/utf8.h"
#include "experiments/labels.h"
#include "base/alloc.h"
#include "base/arena.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/macro.h"
#include "base/path.h"
#include "base/sha256.h"
#include "base/strv.h"
#include "network/netpolicy.h"
#include "trial/session_env.h"
#include "trial/trial.h"

enum field_type {
        F_STRING,    /* a non-empty string */
        F_PATH,      /* a non-empty path, made absolute against the plan's folder */
        F_BIN,       /* a path, or a bare name looked up on PATH by `run` */
        F_STRINGS,   /* an array of strings */
        F_DURATION,  /* a string or a number, as --timeout */
        F_SIZE,      /* as --memory */
        F_PIDS,      /* as --pids */
        F_CPUS,      /* as --cpus */
        F_GRACE,     /* as --kill-after: a duration, 0 allowed */
        F_NETWORK,   /* host|none|allow */
        F_REPO_FROM, /* PATH[@REV] */
        F_FLAG,      /* a boolean: true gives the run flag alone (a bool in struct plan_trial) */
        F_FLAG_OFF,  /* a boolean, true by default: false gives the run flag alone (the bool says false) */
        F_ENV,       /* an object of variables (trial/session_env.h): the run's --env-file */
        /* An Experiment's fields, last (set_experiment_field): */
        F_NAME,      /* a short name of printable UTF-8 (an Experiment's task, arm) */
        F_LABELS,    /* an object of labels (experiments/labels.h), kept as JSON text */
        F_GRADE,     /* the grader (experiments/plan_grade.h) */
};

struct field {
        const char *name;
        const char *run_flag;
        size_t offset; /* of the char * (bool, struct plan_strings, struct strv) in its struct */
        enum field_type type;
        bool more;     /* in struct plan_trial_more, else in struct plan_trial */
};

#define FIELD_AT(n, t, s, member, flag, m) \
        { .name = (n), .run_flag = (flag), .offset = offsetof(s, member), .type = (t), .more = (m) }
#define FIELD(n, t, flag) FIELD_AT(#n, t, struct plan_trial, n, flag, false)
#define MORE(n, t, flag) FIELD_AT(#n, t, struct plan_trial_more, n, flag, true)
static const struct field fields[] = {
        FIELD(id, F_STRING, NULL),
        FIELD(harness, F_STRING, "--harness"),
        FIELD(output_dir, F_PATH, "--output-dir"),
        FIELD(args, F_STRINGS, NULL),
        FIELD(repo, F_PATH, "--repo"),
        FIELD(repo_from, F_REPO_FROM, NULL),
        MORE(harness_bin, F_BIN, "--harness-bin"),
        MORE(skills, F_PATH, "--skills"),
        MORE(credentials, F_PATH, "--credentials"),
        MORE(timeout, F_DURATION, "--timeout"),
        MORE(memory, F_SIZE, "--memory"),
        MORE(pids, F_PIDS, "--pids"),
        MORE(cpus, F_CPUS, "--cpus"),
        MORE(user, F_STRING, "--user"),
        FIELD(root_session, F_FLAG, "--root-session"),
        FIELD(keep_control_files, F_FLAG, "--keep-control-files"),
        MORE(network, F_NETWORK, "--network"),
        MORE(allow_host, F_STRINGS, "--allow-host"),
        MORE(kill_after, F_GRACE, "--kill-after"),
        FIELD_AT("harness_endpoints", F_FLAG_OFF, struct plan_trial, no_harness_endpoints, "--no-harness-endpoints",
                 false),
        MORE(env, F_ENV, NULL),
        MORE(task, F_NAME, NULL),
        MORE(arm, F_NAME, NULL),
        MORE(labels, F_LABELS, NULL),
        MORE(grade, F_GRADE, NULL),
};

/* The `more` of the lines that give none of its fields: never written. */
static struct plan_trial_more no_more;

/* A line being parsed: its Trial, and the fields kept apart, gathered here
 * until the line is whole. */
struct line {
        struct plan *plan;
        struct plan_trial *t;
        struct plan_trial_more more;
        bool any_more; /* some field of `more` was given */
};

static void *slot(struct line *l, const struct field *f)
{
        return (f->more ? (char *)&l->more : (char *)l->t) + f->offset;
}
static char **str_slot(struct line *l, const struct field *f) { return slot(l, f); }

/* A path made absolute against the plan's folder, lexically clean, in the arena. */
static char *clean_path(struct line *l, const char *s)
{
        _cleanup_free_ char *p = path_clean(l->plan->dir, s);
        return arena_strdup(&l->plan->arena, p);
}

/* A field of a whole line, as plan_trial_run_args reads it. */
static const void *trial_slot(const struct plan_trial *t, const struct field *f)
{
        return (f->more ? (const char *)t->more : (const char *)t) + f->offset;
}

static int field_error(struct tb_error *err, const struct plan *plan, unsigned line, const char *field,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int field_error(struct tb_error *err, const struct plan *plan, unsigned line, const char *field,
                       const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *what = xvasprintf(fmt, ap);
        va_end(ap);
        if (field)
                return tb_fail(err, -EINVAL, "%s:%u: field '%s': %s", plan->path, line, field, what);
        return tb_fail(err, -EINVAL, "%s:%u: %s", plan->path, line, what);
}

/* The text of a limit given as a string or a number. */
static const char *limit_text(json_object *v)
{
        if (json_object_is_type(v, json_type_string) || json_object_is_type(v, json_type_int) ||
            json_object_is_type(v, json_type_double))
                return json_object_get_string(v);
        return NULL;
}

static int check_limit(const struct field *f, const char *text, long long *value, struct tb_error *err)
{
        switch (f->type) {
        case F_DURATION:
                return limits_parse_duration("value", text, false, value, err);
        case F_SIZE:
                return limits_parse_size("value", text, value, err);
        case F_PIDS:
                return limits_parse_pids("value", text, value, err);
        case F_GRACE:
                return limits_parse_duration("value", text, true, value, err);
        default:
                return limits_parse_cpus("value", text, value, err);
        }
}

/* `env`: the session's own variables, checked as `run --env-file` checks
 * them (the value never quoted back). */
static int set_env_field(struct line *l, const struct field *f, json_object *v, struct tb_error *err)
{
        struct tb_error e = { 0 };
        if (session_env_from_json(v, &l->more.env, &e) < 0)
                return field_error(err, l->plan, l->t->line, f->name, "%s", e.msg);
        return 0;
}

/* `grade`: the plan's grader of that text, parsed when it is the first. */
static int set_grade_field(struct line *l, json_object *v, struct tb_error *err)
{
        struct plan *plan = l->plan;
        const char *text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
        char key[SHA256_HEX_LEN + 1];
        sha256_hex(text, strlen(text), key);
        /* From the last: an Experiment's lines come a task at a time. */
        for (size_t i = plan->n_graders; i > 0; i--)
                if (strcmp(plan->graders[i - 1].key, key) == 0) {
                        l->more.grade = plan->graders[i - 1].grade;
                        return 0;
                }
        char where[64], why[256];
        if (plan_grade_parse(v, plan->dir, &l->more.grade, where, sizeof where, why, sizeof why) < 0)
                return field_error(err, plan, l->t->line, where, "%s", why);
        GREEDY_REALLOC(plan->graders, plan->cap_graders, plan->n_graders + 1);
        struct plan_grader *g = &plan->graders[plan->n_graders++];
        memcpy(g->key, key, sizeof key);
        g->grade = l->more.grade;
        return 0;
}

/* An Experiment's fields: task and arm, labels, the grader. */
static int set_experiment_field(struct line *l, const struct field *f, json_object *v, struct tb_error *err)
{
        const struct plan *plan = l->plan;
        const struct plan_trial *t = l->t;
        if (f->type == F_GRADE)
                return set_grade_field(l, v, err);
        if (f->type == F_LABELS) {
                char where[64], why[256];
                if (labels_check(v, where, sizeof where, why, sizeof why) < 0)
                        return where[0] ? field_error(err, plan, t->line, "labels", "'%s' %s", where, why)
                                        : field_error(err, plan, t->line, "labels", "%s", why);
                *str_slot(l, f) = arena_strdup(&l->plan->arena,
                                               json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
                return 0;
        }
        const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
        size_t n = s ? (size_t)json_object_get_string_len(v) : 0;
        bool printable = s && n >= 1 && n <= PLAN_NAME_MAX && strlen(s) == n && utf8_is_valid(s, n);
        for (size_t i = 0; printable && i < n; i++)
                printable = (unsigned char)s[i] >= 0x20 && s[i] != 0x7f;
        if (!printable)
                return field_error(err, plan, t->line, f->name, "must be a string of 1 to %d bytes of printable UTF-8",
                                   PLAN_NAME_MAX);
        *str_slot(l, f) = arena_strdup(&l->plan->arena, s);
        return 0;
}

/* F_STRINGS: an array of strings. */
static int set_strings_field(struct line *l, const struct field *f, json_object *v, struct tb_error *err)
{
        if (!json_object_is_type(v, json_type_array))
                return field_error(err, l->plan, l->t->line, f->name, "must be an array of strings");
        size_t n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++)
                if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_string))
                        return field_error(err, l->plan, l->t->line, f->name, "item %zu is not a string", i);
        struct plan_strings *sv = slot(l, f);
        if (n == 0)
                return 0;
        sv->v = arena_alloc(&l->plan->arena, (n + 1) * sizeof *sv->v, _Alignof(char *));
        for (size_t i = 0; i < n; i++)
                sv->v[i] = arena_strdup(&l->plan->arena, json_object_get_string(json_object_array_get_idx(v, i)));
        sv->n = n;
        return 0;
}

/* A limit (F_DURATION to F_GRACE): a string or a number, checked by the
 * run's own parsers, kept as written. */
static int set_limit_field(struct line *l, const struct field *f, json_object *v, struct tb_error *err)
{
        const char *text = limit_text(v);
        long long value = 0;
        struct tb_error e = { 0 };
        if (!text)
                return field_error(err, l->plan, l->t->line, f->name, "must be a string or a number");
        if (check_limit(f, text, &value, &e) < 0)
                return field_error(err, l->plan, l->t->line, f->name, "%s", e.msg);
        if (f->type == F_CPUS)
                l->t->slots = (unsigned)((value + 999) / 1000);
        *str_slot(l, f) = arena_strdup(&l->plan->arena, text);
        return 0;
}

/* F_REPO_FROM: PATH[@REV]. */
static int set_repo_from(struct line *l, const char *s, struct tb_error *err)
{
        _cleanup_free_ char *path = xstrdup(s);
        char *at = strrchr(path, '@');
        if (at && !strchr(at, '/')) {
                *at = '\0';
                if (!at[1] || at[1] == '-')
                        return field_error(err, l->plan, l->t->line, "repo_from",
                                           "'%s' has an empty or bad revision; use PATH or PATH@REV", s);
                l->more.repo_rev = arena_strdup(&l->plan->arena, at + 1);
                l->any_more = true;
        }
        if (!path[0])
                return field_error(err, l->plan, l->t->line, "repo_from", "'%s' has no path; use PATH or PATH@REV", s);
        l->t->repo_from = clean_path(l, path);
        return 0;
}

static int set_field(struct line *l, const struct field *f, json_object *v, struct tb_error *err)
{
        const struct plan *plan = l->plan;
        const struct plan_trial *t = l->t;
        const char *name = f->name;
        l->any_more = l->any_more || f->more;
        if (f->type >= F_NAME)
                return set_experiment_field(l, f, v, err);
        if (f->type == F_ENV)
                return set_env_field(l, f, v, err);
        if (f->type == F_STRINGS)
                return set_strings_field(l, f, v, err);
        if (f->type >= F_DURATION && f->type <= F_GRACE)
                return set_limit_field(l, f, v, err);
        if (f->type == F_FLAG || f->type == F_FLAG_OFF) {
                if (!json_object_is_type(v, json_type_boolean))
                        return field_error(err, plan, t->line, name, "must be true or false");
                bool on = json_object_get_boolean(v);
                /* F_FLAG: true gives the flag; F_FLAG_OFF: false does. */
                if (f->type == F_FLAG ? on : !on)
                        *(bool *)slot(l, f) = true;
                return 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return field_error(err, plan, t->line, name, "must be a string");
        const char *s = json_object_get_string(v);
        if (!s[0])
                return field_error(err, plan, t->line, name, "must not be empty");
        if (strlen(s) != (size_t)json_object_get_string_len(v) || strpbrk(s, "\n\r"))
                return field_error(err, plan, t->line, name, "must not hold NUL or newline characters");
        switch (f->type) {
        case F_PATH:
                *str_slot(l, f) = clean_path(l, s);
                return 0;
        case F_BIN:
                *str_slot(l, f) = strchr(s, '/') ? clean_path(l, s) : arena_strdup(&l->plan->arena, s);
                return 0;
        case F_NETWORK:
                if (strcmp(s, "host") != 0 && strcmp(s, "none") != 0 && strcmp(s, "allow") != 0)
                        return field_error(err, plan, t->line, name, "'%s' is not one of host, none, allow", s);
                *str_slot(l, f) = arena_strdup(&l->plan->arena, s);
                return 0;
        case F_REPO_FROM:
                return set_repo_from(l, s, err);
        default:
                *str_slot(l, f) = arena_strdup(&l->plan->arena, s);
                return 0;
        }
}

static const struct field *find_field(const char *name)
{
        for (size_t i = 0; i < TB_ARRAY_SIZE(fields); i++)
                if (strcmp(fields[i].name, name) == 0)
                        return &fields[i];
        return NULL;
}

/* What a line holds outside the plan's arena: its env (erased). */
static void trial_done(struct plan_trial *t)
{
        if (t->more && t->more != &no_more)
                session_env_done(&t->more->env);
        *t = (struct plan_trial){ 0 };
}

/* The names the batch gives to folders beside an output folder. */
static bool reserved_name(const char *dir)
{
        size_t n = strlen(dir);
        if (n >= 5 && strcmp(dir + n - 5, ".repo") == 0)
                return true;
        const char *a = strstr(dir, ".attempt-");
        return a && strspn(a + 9, "0123456789") > 0;
}

static int check_folder(const struct plan *plan, unsigned line, const char *field, const char *path,
                        struct tb_error *err)
{
        struct stat st;
        if (stat(path, &st) < 0)
                return field_error(err, plan, line, field, "'%s': %s; give an existing folder", path, strerror(errno));
        if (!S_ISDIR(st.st_mode))
                return field_error(err, plan, line, field, "'%s' is not a folder", path);
        return 0;
}

/* `allow_host` and `harness_endpoints` as `run` takes them: with `network`
 * allow (or none given), each pattern one it parses, at most as many. */
static int check_network(const struct plan *plan, const struct plan_trial *t, struct tb_error *err)
{
        const struct plan_trial_more *m = t->more;
        bool allow_only = m->allow_host.n || t->no_harness_endpoints;
        if (allow_only && m->network && strcmp(m->network, "allow") != 0)
                return field_error(err, plan, t->line, "network", "is '%s', but %s needs allow", m->network,
                                   m->allow_host.n ? "allow_host" : "harness_endpoints false");
        if (m->allow_host.n > TRIAL_MAX_ALLOW_HOSTS)
                return field_error(err, plan, t->line, "allow_host", "holds %zu patterns; at most %d", m->allow_host.n,
                                   TRIAL_MAX_ALLOW_HOSTS);
        for (size_t i = 0; i < m->allow_host.n; i++) {
                _cleanup_(netpolicy_freep) struct netpolicy *np = netpolicy_new();
                struct tb_error e = { 0 };
                if (netpolicy_add(np, m->allow_host.v[i], &e) < 0)
                        return field_error(err, plan, t->line, "allow_host", "%s", e.msg);
        }
        return 0;
}

static int check_trial(const struct plan *plan, struct plan_trial *t, struct tb_error *err)
{
        static const char *const required[] = { "id", "harness", "output_dir" };
        const char *have[] = { t->id, t->harness, t->output_dir };
        for (size_t i = 0; i < TB_ARRAY_SIZE(required); i++)
                if (!have[i])
                        return field_error(err, plan, t->line, required[i], "is missing");
        if (!!t->repo == !!t->repo_from)
                return field_error(err, plan, t->line, t->repo ? "repo_from" : "repo",
                                   t->repo ? "give either 'repo' or 'repo_from', not both"
                                           : "is missing; give 'repo' (a prepared repository) or 'repo_from' "
                                             "(PATH[@REV] to clone)");
        if (strspn(t->harness, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(t->harness))
                return field_error(err, plan, t->line, "harness", "'%s' is not a Harness name (lowercase letters, "
                                   "digits, '-', '_')", t->harness);
        if (strcmp(t->output_dir, "/") == 0 || reserved_name(t->output_dir))
                return field_error(err, plan, t->line, "output_dir",
                                   "'%s' is a name the batch keeps for its own folders (NAME.repo, NAME.attempt-N); "
                                   "choose another", t->output_dir);
        int r = check_network(plan, t, err);
        if (r < 0)
                return r;
        if (t->more->kill_after && !t->more->timeout)
                return field_error(err, plan, t->line, "kill_after", "needs 'timeout' (the grace after the deadline's "
                                   "SIGTERM)");
        r = check_folder(plan, t->line, t->repo ? "repo" : "repo_from", t->repo ? t->repo : t->repo_from, err);
        if (r < 0)
                return r;
        if (t->slots == 0)
                t->slots = 1;
        return 0;
}

/* The fields that do not change what a Trial runs: its name, where its
 * output goes, and how it is labelled or graded. */
static bool fingerprint_skips(const char *key)
{
        static const char *const skip[] = { "id", "output_dir", "task", "arm", "labels", "grade" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(skip); i++)
                if (strcmp(key, skip[i]) == 0)
                        return true;
        return false;
}

static int by_key(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* `j` with its objects' keys sorted (and, at the top, without the skipped
 * fields and nulls): the canonical form. A new reference. */
static json_object *canonical(json_object *j, bool top)
{
        if (json_object_is_type(j, json_type_array)) {
                json_object *a = json_object_new_array();
                for (size_t i = 0; i < json_object_array_length(j); i++)
                        json_object_array_add(a, canonical(json_object_array_get_idx(j, i), false));
                return a;
        }
        if (!json_object_is_type(j, json_type_object))
                return json_object_get(j);
        size_t n = 0;
        _cleanup_free_ const char **keys = xcalloc((size_t)json_object_object_length(j) + 1, sizeof *keys);
        json_object_object_foreach(j, key, v)
                if (!top || (v && !fingerprint_skips(key)))
                        keys[n++] = key;
        tb_qsort(keys, n, sizeof *keys, by_key);
        json_object *o = json_object_new_object();
        for (size_t i = 0; i < n; i++)
                json_object_object_add(o, keys[i], canonical(json_object_object_get(j, keys[i]), false));
        return o;
}

/* The line's fingerprint: SHA-256 of its canonical JSON (keys sorted;
 * without id, output_dir, task, arm, labels, grade and nulls): everything
 * that changes what runs, as written ("60" and 60 differ). */
static void line_fingerprint(json_object *j, char out[SHA256_HEX_LEN + 1])
{
        json_object *c = canonical(j, true);
        const char *text = json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        sha256_hex(text, strlen(text), out);
        json_object_put(c);
}

/* The fields kept apart, into the plan's arena (when the line gave any):
 * the line is whole. */
static void line_finish(struct line *l)
{
        l->t->more = &no_more;
        if (!l->any_more)
                return;
        l->t->more = arena_alloc(&l->plan->arena, sizeof l->more, _Alignof(struct plan_trial_more));
        *l->t->more = l->more;
}

static int parse_line(struct plan *plan, unsigned line, const char *text, size_t len, struct plan_trial *t,
                      struct tb_error *err)
{
        *t = (struct plan_trial){ .line = line };
        struct line l = { .plan = plan, .t = t };
        json_tokener *tok = json_tokener_new();
        json_object *j = json_tokener_parse_ex(tok, text, (int)len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        int r = 0;
        if (!j || jerr != json_tokener_success)
                r = field_error(err, plan, line, NULL, "not valid JSON (%s); each line must be one JSON object",
                                jerr == json_tokener_continue ? "unexpected end of line" : json_tokener_error_desc(jerr));
        else if (strspn(text + end, " \t\r\n") != len - end)
                r = field_error(err, plan, line, NULL, "text after the JSON object; put one object per line");
        else if (!json_object_is_type(j, json_type_object))
                r = field_error(err, plan, line, NULL, "not a JSON object; each line must be one object");
        if (r == 0) {
                json_object_object_foreach(j, key, v) {
                        const struct field *f = find_field(key);
                        if (!f)
                                r = field_error(err, plan, line, key, "unknown field; see 'Experiments' in the README");
                        else if (json_object_is_type(v, json_type_null))
                                continue;
                        else
                                r = set_field(&l, f, v, err);
                        if (r < 0)
                                break;
                }
        }
        line_finish(&l);
        if (r == 0)
                line_fingerprint(j, t->fingerprint);
        json_object_put(j);
        if (r == 0)
                r = check_trial(plan, t, err);
        if (r < 0)
                trial_done(t);
        return r;
}

/* Order of indexes by one string field, for the uniqueness checks. */
static const struct plan *sort_plan;
static size_t sort_offset;
/* strcmp, but '/' before every other byte: a folder is then followed at
 * once by what is inside it ("a", "a/home/x", "a-2"), where strcmp would put
 * "a-2" between them and hide the nesting from the neighbour check. */
static int path_cmp(const char *x, const char *y)
{
        for (;; x++, y++) {
                int cx = *x == '/' ? 1 : (unsigned char)*x + 1, cy = *y == '/' ? 1 : (unsigned char)*y + 1;
                if (!*x || !*y || cx != cy)
                        return (*x ? cx : 0) - (*y ? cy : 0);
        }
}

static int by_field(const void *a, const void *b)
{
        const struct plan_trial *x = &sort_plan->v[*(const size_t *)a], *y = &sort_plan->v[*(const size_t *)b];
        int c = path_cmp(*(char *const *)((const char *)x + sort_offset), *(char *const *)((const char *)y + sort_offset));
        return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* Duplicate ids and output folders, and one output folder inside another. */
static int check_unique(const struct plan *plan, size_t offset, const char *field, bool nested,
                        struct tb_error *err)
{
        if (plan->n < 2)
                return 0;
        _cleanup_free_ size_t *ix = xcalloc(plan->n, sizeof *ix);
        for (size_t i = 0; i < plan->n; i++)
                ix[i] = i;
        sort_plan = plan;
        sort_offset = offset;
        tb_qsort(ix, plan->n, sizeof *ix, by_field);
        for (size_t i = 1; i < plan->n; i++) {
                const struct plan_trial *a = &plan->v[ix[i - 1]], *b = &plan->v[ix[i]];
                const char *x = *(char *const *)((const char *)a + offset), *y = *(char *const *)((const char *)b + offset);
                if (strcmp(x, y) == 0)
                        return field_error(err, plan, b->line, field, "'%s' is also line %u's; each Trial needs its own",
                                           y, a->line);
                if (nested && path_is_under(y, x))
                        return field_error(err, plan, b->line, field, "'%s' is inside line %u's output folder '%s'", y,
                                           a->line, x);
        }
        return 0;
}

/* A folder a Trial owns or writes, for the overlap check. */
struct place {
        const char *path;
        const struct plan_trial *t;
        const char *what; /* "output_dir" or "repo" */
};

static int by_place(const void *a, const void *b)
{
        const struct place *x = a, *y = b;
        int c = path_cmp(x->path, y->path);
        return c ? c : (x->t->line > y->t->line) - (x->t->line < y->t->line);
}

/* Two places of two lines, one at or inside the other. */
static int overlap(const struct plan *plan, const struct place *outer, const struct place *inner,
                   struct tb_error *err)
{
        /* A grader's files: never where a session could read them. */
        if (strcmp(outer->what, "grade.files") == 0)
                return 0;
        if (strcmp(inner->what, "grade.files") == 0)
                return field_error(err, plan, inner->t->line, inner->what,
                                   "'%s' %s line %u's %s '%s', where that session could read the grader's files; keep "
                                   "them outside every Trial's repository and output folder",
                                   inner->path, strcmp(outer->path, inner->path) == 0 ? "is" : "is inside",
                                   outer->t->line, strcmp(outer->what, "repo") == 0 ? "repository" : "output folder",
                                   outer->path);
        bool repos = strcmp(outer->what, "repo") == 0 && strcmp(inner->what, "repo") == 0;
        if (repos && strcmp(outer->path, inner->path) == 0)
                return 0; /* the same repository: shared, run one at a time */
        if (strcmp(outer->what, "output_dir") == 0 && strcmp(inner->what, "output_dir") == 0)
                return 0; /* check_unique's */
        const char *where = strcmp(outer->path, inner->path) == 0 ? "is" : "is inside";
        if (repos)
                return field_error(err, plan, inner->t->line, inner->t->repo ? "repo" : "repo_from",
                                   "'%s' %s line %u's repository '%s'; give each Trial its own (repo_from)", inner->path,
                                   where, outer->t->line, outer->path);
        return field_error(err, plan, inner->t->line, inner->what,
                           "'%s' %s line %u's %s '%s', where that session could write; keep every Trial's output "
                           "outside every other's repository",
                           inner->path, where, outer->t->line, strcmp(outer->what, "repo") == 0 ? "repository" : "output folder",
                           outer->path);
}

/* Every output folder against every repository and clone, in one sorted
 * pass: sorted with '/' first, a folder is followed by what is inside it,
 * so a stack of the folders still open finds every nesting. */
static int check_places(struct plan *plan, struct tb_error *err)
{
        size_t n = 0;
        struct place *v = xcalloc(3 * plan->n + 1, sizeof *v);
        struct strv own = { 0 };
        for (size_t i = 0; i < plan->n; i++) {
                struct plan_trial *t = &plan->v[i];
                v[n++] = (struct place){ .path = t->output_dir, .t = t, .what = "output_dir" };
                if (t->repo) {
                        char *real = realpath(t->repo, NULL);
                        strv_add_take(&own, real ? real : xstrdup(t->repo));
                } else {
                        strv_add_take(&own, plan_clone_dir(t->output_dir));
                }
                v[n++] = (struct place){ .path = own.v[own.n - 1], .t = t, .what = "repo" };
                if (t->more->grade && t->more->grade->files)
                        v[n++] = (struct place){ .path = t->more->grade->files, .t = t, .what = "grade.files" };
        }
        tb_qsort(v, n, sizeof *v, by_place);
        _cleanup_free_ size_t *open = xcalloc(n + 1, sizeof(size_t)); /* indexes into v */
        size_t depth = 0;
        int r = 0;
        for (size_t i = 0; i < n && r == 0; i++) {
                while (depth > 0 && !path_is_under(v[i].path, v[open[depth - 1]].path))
                        depth--;
                for (size_t k = 0; k < depth && r == 0; k++)
                        if (v[open[k]].t != v[i].t || strcmp(v[i].what, "grade.files") == 0)
                                r = overlap(plan, &v[open[k]], &v[i], err);
                open[depth++] = i;
        }
        /* The same repository named twice: shared, never at once. */
        for (size_t i = 1; i < n && r == 0; i++) {
                if (strcmp(v[i].what, "repo") != 0 || strcmp(v[i - 1].what, "repo") != 0 ||
                    strcmp(v[i].path, v[i - 1].path) != 0)
                        continue;
                struct plan_trial *a = (struct plan_trial *)v[i - 1].t, *b = (struct plan_trial *)v[i].t;
                if (!a->shared_repo)
                        a->shared_repo = arena_strdup(&plan->arena, v[i].path);
                if (!b->shared_repo)
                        b->shared_repo = arena_strdup(&plan->arena, v[i].path);
                strv_addf(&plan->notes, "%s:%u: line %u's repository '%s' is also line %u's: they run one after the "
                          "other, never at once (repo_from gives each its own clone)",
                          plan->path, b->line, b->line, v[i].path, a->line);
        }
        free(v);
        strv_done(&own);
        return r;
}

int plan_load(const char *path, struct plan *plan, struct tb_error *err)
{
        *plan = (struct plan){ 0 };
        _cleanup_free_ char *file = realpath(path, NULL);
        if (!file)
                return tb_fail(err, -errno, "cannot read the plan '%s': %s", path, strerror(errno));
        _cleanup_fclose_ FILE *f = fopen(file, "re");
        if (!f)
                return tb_fail(err, -errno, "cannot read the plan '%s': %s", path, strerror(errno));
        plan->file = TAKE_PTR(file);
        plan->path = xstrdup(path);
        plan->dir = path_dirname(plan->file);
        _cleanup_free_ char *line = NULL;
        size_t cap = 0, alloc = 0;
        ssize_t len;
        unsigned no = 0;
        int r = 0;
        while ((len = getline(&line, &cap, f)) >= 0) {
                no++;
                if (strspn(line, " \t\r\n") == (size_t)len)
                        continue;
                if (strlen(line) != (size_t)len) {
                        r = field_error(err, plan, no, NULL, "a NUL byte; the plan must be text");
                        break;
                }
                GREEDY_REALLOC(plan->v, alloc, plan->n + 1);
                r = parse_line(plan, no, line, (size_t)len, &plan->v[plan->n], err);
                if (r < 0)
                        break;
                plan->n++;
        }
        if (r == 0 && ferror(f))
                r = tb_fail(err, -EIO, "cannot read the plan '%s': %s", path, strerror(errno));
        if (r == 0 && plan->n == 0)
                r = tb_fail(err, -EINVAL, "%s: no Trials; put one JSON object per line", path);
        if (r == 0)
                r = check_unique(plan, offsetof(struct plan_trial, id), "id", false, err);
        if (r == 0)
                r = check_unique(plan, offsetof(struct plan_trial, output_dir), "output_dir", true, err);
        if (r == 0)
                r = check_places(plan, err);
        if (r < 0)
                plan_done(plan);
        return r;
}

void plan_done(struct plan *plan)
{
        for (size_t i = 0; i < plan->n; i++)
                trial_done(&plan->v[i]);
        free(plan->v);
        free(plan->path);
        free(plan->file);
        free(plan->dir);
        arena_done(&plan->arena);
        for (size_t i = 0; i < plan->n_graders; i++)
                plan_grade_free(plan->graders[i].grade);
        free(plan->graders);
        strv_done(&plan->notes);
        *plan = (struct plan){ 0 };
}

char *plan_clone_dir(const char *output_dir) { return xasprintf("%s.repo", output_dir); }

void plan_trial_run_args(const struct plan_trial *t, const char *repo, const char *env_file, struct strv *out)
{
        strv_add(out, "run");
        strv_add(out, "--repo");
        strv_add(out, repo);
        if (t->more->env.n > 0 && env_file) {
                strv_add(out, "--env-file");
                strv_add(out, env_file);
        }
        for (size_t i = 0; i < TB_ARRAY_SIZE(fields); i++) {
                const struct field *f = &fields[i];
                /* `repo` is given first: the plan's, or the clone. */
                if (!f->run_flag || (!f->more && f->offset == offsetof(struct plan_trial, repo)))
                        continue;
                if (f->type == F_STRINGS) {
                        const struct plan_strings *sv = trial_slot(t, f);
                        for (size_t k = 0; k < sv->n; k++) {
                                strv_add(out, f->run_flag);
                                strv_add(out, sv->v[k]);
                        }
                        continue;
                }
                if (f->type == F_FLAG || f->type == F_FLAG_OFF) {
                        if (*(const bool *)trial_slot(t, f))
                                strv_add(out, f->run_flag);
                        continue;
                }
                const char *v = *(char *const *)trial_slot(t, f);
                if (v) {
                        strv_add(out, f->run_flag);
                        strv_add(out, v);
                }
        }
        strv_add(out, "-q");
        strv_add(out, "--json");
        strv_add(out, "--");
        for (size_t i = 0; i < t->args.n; i++)
                strv_add(out, t->args.v[i]);
}
