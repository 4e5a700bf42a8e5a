#define _GNU_SOURCE
#include "experiments/experiment.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/path.h"
#include "base/utf8.h"
#include "experiments/labels.h"
#include "model/limits.h"
#include "sandbox/cow.h"
#include "sandbox/spec.h"
#include "trial/session_env.h"

#define PROMPT "{prompt}"

/* ---- the file, and saying what is wrong in it ---- */

struct xctx {
        const char *file; /* as given, for messages */
        char *dir;        /* its folder, real */
        struct tb_error *err;
};

static int xfail(const struct xctx *x, const char *where, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int xfail(const struct xctx *x, const char *where, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *what = xvasprintf(fmt, ap);
        va_end(ap);
        return tb_fail(x->err, -EINVAL, "%s: %s: %s", x->file, where, what);
}

/* "arms[1].args" and the like, malloc'd. */
static char *at(const char *parent, const char *key) { return xasprintf("%s.%s", parent, key); }
static char *at_index(const char *parent, size_t i) { return xasprintf("%s[%zu]", parent, i); }

/* ---- one value: checked and made what the plan line holds ---- */

enum xtype {
        X_STRING,    /* a non-empty string without NUL or newline */
        X_HARNESS,   /* a Harness's name */
        X_PATH,      /* a path (relative to the file's folder) */
        X_FOLDER,    /* a path to an existing folder */
        X_BIN,       /* a path, or a bare name looked up on PATH */
        X_REPO_FROM, /* PATH[@REV], PATH an existing folder */
        X_STRINGS,   /* an array of strings */
        X_ARGS,      /* an array of strings, {prompt} in them the task's prompt */
        X_DURATION,  /* as --timeout */
        X_GRACE,     /* as --kill-after (0 allowed) */
        X_SIZE,      /* as --memory */
        X_PIDS,      /* as --pids */
        X_CPUS,      /* as --cpus */
        X_NETWORK,   /* none, allow, host */
        X_LAYER,     /* auto, bwrap-overlay, overlayfs, copy */
        X_FLAG,      /* true or false */
        X_ENV,       /* an object of strings */
        X_LABELS,    /* labels (experiments/labels.h) */
        X_PROMPT,    /* any string of UTF-8 text */
        X_GRADE,     /* a grader: its own fields (grade_fields) */
};

struct xfield {
        const char *name;
        enum xtype type;
};

static const struct xfield arm_fields[] = {
        { "harness", X_HARNESS },    { "args", X_ARGS },
        { "harness_bin", X_BIN },    { "skills", X_FOLDER },
        { "credentials", X_PATH },   { "user", X_STRING },
        { "root_session", X_FLAG },  { "keep_control_files", X_FLAG },
        { "timeout", X_DURATION },   { "kill_after", X_GRACE },
        { "memory", X_SIZE },        { "pids", X_PIDS },
        { "cpus", X_CPUS },          { "network", X_NETWORK },
        { "allow_host", X_STRINGS }, { "env", X_ENV },
};
static const struct xfield task_fields[] = {
        { "repo", X_FOLDER },      { "repo_from", X_REPO_FROM }, { "prompt", X_PROMPT },
        { "timeout", X_DURATION }, { "kill_after", X_GRACE },    { "memory", X_SIZE },
        { "pids", X_PIDS },        { "cpus", X_CPUS },           { "grade", X_GRADE },
};
static const struct xfield grade_fields[] = {
        { "harness", X_HARNESS },  { "args", X_ARGS },          { "harness_bin", X_BIN }, { "credentials", X_PATH },
        { "user", X_STRING },      { "root_session", X_FLAG },  { "files", X_FOLDER },    { "timeout", X_DURATION },
        { "kill_after", X_GRACE }, { "memory", X_SIZE },        { "pids", X_PIDS },       { "cpus", X_CPUS },
        { "network", X_NETWORK },  { "allow_host", X_STRINGS }, { "env", X_ENV },         { "layer", X_LAYER },
};

static const struct xfield *find(const struct xfield *v, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(v[i].name, name) == 0)
                        return &v[i];
        return NULL;
}

/* A string without NUL, newline (unless `lines`), of UTF-8. */
static const char *text_of(json_object *v, bool lines)
{
        if (!json_object_is_type(v, json_type_string))
                return NULL;
        const char *s = json_object_get_string(v);
        size_t n = (size_t)json_object_get_string_len(v);
        if (strlen(s) != n || !utf8_is_valid(s, n) || (!lines && strpbrk(s, "\n\r")))
                return NULL;
        return s;
}

static int check_strings(const struct xctx *x, const char *where, json_object *v, bool *uses_prompt)
{
        if (!json_object_is_type(v, json_type_array))
                return xfail(x, where, "must be an array of strings");
        for (size_t i = 0; i < json_object_array_length(v); i++) {
                json_object *e = json_object_array_get_idx(v, i);
                if (!json_object_is_type(e, json_type_string) ||
                    strlen(json_object_get_string(e)) != (size_t)json_object_get_string_len(e)) {
                        _cleanup_free_ char *w = at_index(where, i);
                        return xfail(x, w, "must be a string");
                }
                if (uses_prompt && strstr(json_object_get_string(e), PROMPT))
                        *uses_prompt = true;
        }
        return 0;
}

static int check_limit(const struct xctx *x, const char *where, enum xtype type, json_object *v)
{
        bool ok = json_object_is_type(v, json_type_string) || json_object_is_type(v, json_type_int) ||
                  json_object_is_type(v, json_type_double);
        if (!ok)
                return xfail(x, where, "must be a string or a number");
        const char *s = json_object_get_string(v);
        long long value;
        struct tb_error e = { 0 };
        int r = type == X_DURATION ? limits_parse_duration("value", s, false, &value, &e)
                : type == X_GRACE  ? limits_parse_duration("value", s, true, &value, &e)
                : type == X_SIZE   ? limits_parse_size("value", s, &value, &e)
                : type == X_PIDS   ? limits_parse_pids("value", s, &value, &e)
                                   : limits_parse_cpus("value", s, &value, &e);
        return r < 0 ? xfail(x, where, "%s", e.msg) : 0;
}

static int check_folder(const struct xctx *x, const char *where, const char *path)
{
        _cleanup_free_ char *abs = path_clean(x->dir, path);
        struct stat st;
        if (stat(abs, &st) < 0)
                return xfail(x, where, "'%s': %s; give an existing folder", path, strerror(errno));
        if (!S_ISDIR(st.st_mode))
                return xfail(x, where, "'%s' is not a folder", path);
        return 0;
}

/* PATH[@REV] as the plan reads it: the REV after the last '@' that has no '/' after it. */
static void split_rev(const char *s, char **path, const char **rev)
{
        const char *a = strrchr(s, '@');
        if (a && !strchr(a, '/')) {
                *path = strndup(s, (size_t)(a - s));
                *rev = a + 1;
        } else {
                *path = xstrdup(s);
                *rev = NULL;
        }
}

static int check_string_kind(const struct xctx *x, const char *where, enum xtype type, const char *s)
{
        enum cow_layer layer;
        switch (type) {
        case X_HARNESS:
                if (strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(s))
                        return xfail(x, where, "'%s' is not a Harness name (lowercase letters, digits, '-', '_')", s);
                return 0;
        case X_NETWORK:
                if (strcmp(s, "none") != 0 && strcmp(s, "allow") != 0 && strcmp(s, "host") != 0)
                        return xfail(x, where, "'%s' is not one of none, allow, host", s);
                return 0;
        case X_LAYER:
                if (cow_layer_parse(s, &layer) < 0)
                        return xfail(x, where, "'%s' is not one of auto, bwrap-overlay, overlayfs, copy", s);
                return 0;
        case X_FOLDER:
                return check_folder(x, where, s);
        case X_REPO_FROM: {
                _cleanup_free_ char *path = NULL;
                const char *rev;
                split_rev(s, &path, &rev);
                if (!path[0] || (rev && (!rev[0] || rev[0] == '-')))
                        return xfail(x, where, "'%s' is not PATH or PATH@REV", s);
                return check_folder(x, where, path);
        }
        default:
                return 0;
        }
}

static int check_env(const struct xctx *x, const char *where, json_object *v)
{
        if (!json_object_is_type(v, json_type_object))
                return xfail(x, where, "must be an object of strings ({\"NAME\": \"value\"})");
        json_object_object_foreach(v, name, val) {
                _cleanup_free_ char *w = at(where, sandbox_env_name_valid(name) ? name : "?");
                struct tb_error e = { 0 };
                if (!sandbox_env_name_valid(name))
                        return xfail(x, w, "not a variable's name (letters, digits, '_')");
                /* The rule of the plan line's `env` (trial/session_env.h), said here, not at the batch. */
                if (session_env_name_check(name, &e) < 0)
                        return xfail(x, w, "%s", e.msg);
                if (!text_of(val, true))
                        return xfail(x, w, "must be a string");
        }
        return 0;
}

static int check_fields(const struct xctx *x, const char *where, json_object *obj, const struct xfield *fields,
                        size_t n, bool *uses_prompt);

static int check_value(const struct xctx *x, const char *where, enum xtype type, json_object *v, bool *uses_prompt)
{
        switch (type) {
        case X_STRINGS:
                return check_strings(x, where, v, NULL);
        case X_ARGS:
                return check_strings(x, where, v, uses_prompt);
        case X_DURATION:
        case X_GRACE:
        case X_SIZE:
        case X_PIDS:
        case X_CPUS:
                return check_limit(x, where, type, v);
        case X_FLAG:
                return json_object_is_type(v, json_type_boolean) ? 0 : xfail(x, where, "must be true or false");
        case X_ENV:
                return check_env(x, where, v);
        case X_LABELS: {
                char name[64], why[256];
                if (labels_check(v, name, sizeof name, why, sizeof why) == 0)
                        return 0;
                _cleanup_free_ char *w = name[0] ? at(where, name) : xstrdup(where);
                return xfail(x, w, "%s", why);
        }
        case X_PROMPT:
                if (!text_of(v, true))
                        return xfail(x, where, "must be a string of UTF-8 text");
                if ((size_t)json_object_get_string_len(v) > EXPERIMENT_PROMPT_MAX)
                        return xfail(x, where, "is longer than %d bytes", EXPERIMENT_PROMPT_MAX);
                return 0;
        case X_GRADE:
                if (!json_object_is_type(v, json_type_object))
                        return xfail(x, where, "must be an object: the grader's fields (harness, args, files, ...)");
                return check_fields(x, where, v, grade_fields, TB_ARRAY_SIZE(grade_fields), uses_prompt);
        default:
                break;
        }
        const char *s = text_of(v, false);
        if (!s || !s[0])
                return xfail(x, where, "must be a non-empty string (no newline)");
        return check_string_kind(x, where, type, s);
}

/* Every key of `obj` a field of `fields` (or "name", "labels": the
 * caller's), each value right. *uses_prompt: some args say {prompt}. */
static int check_fields(const struct xctx *x, const char *where, json_object *obj, const struct xfield *fields,
                        size_t n, bool *uses_prompt)
{
        bool grade = fields == grade_fields;
        json_object_object_foreach(obj, key, v) {
                _cleanup_free_ char *w = at(where, key);
                if (!grade && (strcmp(key, "name") == 0 || strcmp(key, "labels") == 0))
                        continue;
                const struct xfield *f = find(fields, n, key);
                if (!f)
                        return xfail(x, w, "unknown field; see 'The Experiment file' in docs/experiments.md");
                bool prompted = grade || f->type == X_ARGS || f->type == X_GRADE;
                int r = check_value(x, w, f->type, v, prompted ? uses_prompt : NULL);
                if (r < 0)
                        return r;
        }
        if (grade) {
                json_object *h;
                if (!json_object_object_get_ex(obj, "harness", &h)) {
                        _cleanup_free_ char *w = at(where, "harness");
                        return xfail(x, w, "is missing; name the grader's Harness (shell for a test command)");
                }
        }
        return 0;
}

/* ---- the file's parts ---- */

struct part {
        const char *name;
        json_object *j;      /* the arm's or task's object (borrowed) */
        json_object *labels; /* or NULL (borrowed) */
        bool uses_prompt;    /* an arm's args, or a task's grade args, say {prompt} */
        const char *prompt;  /* a task's, or NULL */
        char *where;         /* "arms[1]" */
};

struct experiment {
        struct xctx x;
        json_object *root;
        const char *output_root;
        long repetitions;
        json_object *labels; /* the file's, or NULL */
        struct part *arms, *tasks;
        size_t n_arms, n_tasks;
};

static bool name_valid(const char *s)
{
        size_t n = strlen(s);
        return n >= 1 && n <= EXPERIMENT_NAME_MAX && s[0] != '.' && s[0] != '-' &&
               strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static int load_part(struct experiment *e, const char *kind, size_t i, json_object *j, struct part *p)
{
        const struct xctx *x = &e->x;
        p->where = xasprintf("%s[%zu]", kind, i);
        p->j = j;
        if (!json_object_is_type(j, json_type_object))
                return xfail(x, p->where, "must be an object");
        json_object *v;
        _cleanup_free_ char *wn = at(p->where, "name");
        if (!json_object_object_get_ex(j, "name", &v))
                return xfail(x, wn, "is missing; give each %s a name", strcmp(kind, "arms") == 0 ? "arm" : "task");
        const char *name = text_of(v, false);
        if (!name || !name_valid(name))
                return xfail(x, wn,
                             "must be 1 to %d letters, digits, '.', '_' or '-', not starting with '.' or '-' "
                             "(it names folders)",
                             EXPERIMENT_NAME_MAX);
        p->name = name;
        bool arm = strcmp(kind, "arms") == 0;
        int r = arm ? check_fields(x, p->where, j, arm_fields, TB_ARRAY_SIZE(arm_fields), &p->uses_prompt)
                    : check_fields(x, p->where, j, task_fields, TB_ARRAY_SIZE(task_fields), &p->uses_prompt);
        if (r < 0)
                return r;
        if (json_object_object_get_ex(j, "labels", &v)) {
                _cleanup_free_ char *wl = at(p->where, "labels");
                if ((r = check_value(x, wl, X_LABELS, v, NULL)) < 0)
                        return r;
                p->labels = v;
        }
        if (json_object_object_get_ex(j, "prompt", &v))
                p->prompt = json_object_get_string(v);
        if (arm && !json_object_object_get_ex(j, "harness", &v)) {
                _cleanup_free_ char *w = at(p->where, "harness");
                return xfail(x, w, "is missing; name the arm's Harness");
        }
        if (!arm) {
                bool repo = json_object_object_get_ex(j, "repo", NULL),
                     from = json_object_object_get_ex(j, "repo_from", NULL);
                if (repo == from) {
                        _cleanup_free_ char *w = at(p->where, repo ? "repo_from" : "repo");
                        return xfail(x, w,
                                     repo ? "give either 'repo' or 'repo_from', not both"
                                          : "is missing; give 'repo_from' (PATH[@REV]: each Trial gets a clone) "
                                            "or 'repo'");
                }
        }
        return 0;
}

static int load_parts(struct experiment *e, const char *kind, size_t max, struct part **out, size_t *n)
{
        json_object *a;
        if (!json_object_object_get_ex(e->root, kind, &a) || !json_object_is_type(a, json_type_array) ||
            json_object_array_length(a) == 0)
                return xfail(&e->x, kind, "must be a non-empty array of %s",
                             strcmp(kind, "arms") == 0 ? "arms" : "tasks");
        size_t count = json_object_array_length(a);
        if (count > max)
                return xfail(&e->x, kind, "has more than %zu entries", max);
        *out = xcalloc(count, sizeof **out);
        *n = count;
        for (size_t i = 0; i < *n; i++) {
                int r = load_part(e, kind, i, json_object_array_get_idx(a, i), &(*out)[i]);
                if (r < 0)
                        return r;
                for (size_t k = 0; k < i; k++)
                        if (strcmp((*out)[k].name, (*out)[i].name) == 0) {
                                _cleanup_free_ char *w = at((*out)[i].where, "name");
                                return xfail(&e->x, w, "'%s' is also %s's; each needs its own", (*out)[i].name,
                                             (*out)[k].where);
                        }
        }
        return 0;
}

static int load_top(struct experiment *e)
{
        const struct xctx *x = &e->x;
        static const char *const keys[] = { "output_root", "repetitions", "labels", "description", "arms", "tasks" };
        json_object_object_foreach(e->root, key, unused) {
                bool known = false;
                for (size_t i = 0; i < TB_ARRAY_SIZE(keys); i++)
                        known = known || strcmp(keys[i], key) == 0;
                if (!known)
                        return xfail(x, key, "unknown field; see 'The Experiment file' in docs/experiments.md");
                (void)unused;
        }
        json_object *v;
        e->output_root = "runs";
        if (json_object_object_get_ex(e->root, "output_root", &v)) {
                e->output_root = text_of(v, false);
                if (!e->output_root || !e->output_root[0])
                        return xfail(x, "output_root", "must be a non-empty string: the Trials' folder");
        }
        e->repetitions = 1;
        if (json_object_object_get_ex(e->root, "repetitions", &v)) {
                if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1 ||
                    json_object_get_int64(v) > EXPERIMENT_MAX_REPETITIONS)
                        return xfail(x, "repetitions", "must be a whole number from 1 to %d",
                                     EXPERIMENT_MAX_REPETITIONS);
                e->repetitions = (long)json_object_get_int64(v);
        }
        if (json_object_object_get_ex(e->root, "labels", &v)) {
                int r = check_value(x, "labels", X_LABELS, v, NULL);
                if (r < 0)
                        return r;
                e->labels = v;
        }
        if (json_object_object_get_ex(e->root, "description", &v) && !text_of(v, true))
                return xfail(x, "description", "must be a string");
        return 0;
}

/* The file's, an arm's and a task's labels together: no name twice, at
 * most LABELS_MAX. */
static int check_labels_of(const struct experiment *e, const struct part *arm, const struct part *task)
{
        json_object *sets[] = { e->labels, arm->labels, task->labels };
        const char *whose[] = { NULL, arm->where, task->where };
        size_t count = 0;
        for (size_t s = 0; s < TB_ARRAY_SIZE(sets); s++) {
                if (!sets[s])
                        continue;
                json_object_object_foreach(sets[s], name, v) {
                        (void)v;
                        count++;
                        for (size_t o = 0; o < s; o++) {
                                if (!sets[o] || !json_object_object_get_ex(sets[o], name, NULL))
                                        continue;
                                _cleanup_free_ char *w = xasprintf("%s.labels.%s", whose[s], name);
                                _cleanup_free_ char *other = whose[o] ? xasprintf("%s.labels", whose[o])
                                                                      : xstrdup("the file's labels");
                                return xfail(&e->x, w, "is also given by %s; a label has one value per Trial", other);
                        }
                }
        }
        if (count <= LABELS_MAX)
                return 0;
        _cleanup_free_ char *w = at(task->where, "labels");
        return xfail(&e->x, w, "with %s's and the file's, more than %d labels", arm->where, LABELS_MAX);
}

/* Every arm with every task: their prompts, their labels together. */
static int check_pairs(struct experiment *e)
{
        for (size_t t = 0; t < e->n_tasks; t++) {
                const struct part *task = &e->tasks[t];
                for (size_t a = 0; a < e->n_arms && !task->prompt; a++)
                        if (e->arms[a].uses_prompt || task->uses_prompt) {
                                _cleanup_free_ char *w = at(task->where, "prompt");
                                _cleanup_free_ char *user = task->uses_prompt ? at(task->where, "grade.args")
                                                                              : at(e->arms[a].where, "args");
                                return xfail(&e->x, w, "is missing, and %s use {prompt}", user);
                        }
                for (size_t a = 0; a < e->n_arms; a++) {
                        int r = check_labels_of(e, &e->arms[a], task);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int load(struct experiment *e, const char *path)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = read_full_file_at(AT_FDCWD, path, 16 << 20, READ_REGULAR, &text, &len, NULL);
        if (r < 0)
                return tb_fail(e->x.err, r, "cannot read the Experiment '%s': %s", path, strerror(-r));
        json_tokener *tok = json_tokener_new();
        e->root = json_tokener_parse_ex(tok, text, (int)len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        if (!e->root || jerr != json_tokener_success)
                return tb_fail(e->x.err, -EINVAL, "%s: not valid JSON (%s); an Experiment is one JSON object", path,
                               jerr == json_tokener_continue ? "it ends too soon" : json_tokener_error_desc(jerr));
        if (strspn(text + end, " \t\r\n") != len - end || !json_object_is_type(e->root, json_type_object))
                return tb_fail(e->x.err, -EINVAL, "%s: an Experiment is one JSON object, and nothing after it", path);
        r = load_top(e);
        if (r == 0)
                r = load_parts(e, "arms", EXPERIMENT_MAX_ARMS, &e->arms, &e->n_arms);
        if (r == 0)
                r = load_parts(e, "tasks", EXPERIMENT_MAX_TASKS, &e->tasks, &e->n_tasks);
        if (r == 0 && (size_t)e->repetitions * e->n_arms * e->n_tasks > EXPERIMENT_MAX_TRIALS)
                r = xfail(&e->x, "repetitions", "arms × tasks × repetitions is more than %d Trials",
                          EXPERIMENT_MAX_TRIALS);
        if (r == 0)
                r = check_pairs(e);
        return r;
}

static void experiment_done(struct experiment *e)
{
        for (size_t i = 0; i < e->n_arms; i++)
                free(e->arms[i].where);
        for (size_t i = 0; i < e->n_tasks; i++)
                free(e->tasks[i].where);
        free(e->arms);
        free(e->tasks);
        json_object_put(e->root);
        free(e->x.dir);
}

/* ---- the plan's lines ---- */

/* `to` relative to the folder `from` (both absolute and clean). */
static char *path_relative(const char *from, const char *to)
{
        size_t common = 0, i = 0;
        for (;; i++) {
                bool end_f = from[i] == '\0' || from[i] == '/', end_t = to[i] == '\0' || to[i] == '/';
                if (end_f && end_t)
                        common = i;
                if (from[i] != to[i] || !from[i])
                        break;
        }
        if (strcmp(from, "/") == 0)
                common = 0;
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        for (const char *p = from + common; *p; p++)
                if (*p == '/')
                        strbuf_add(&sb, sb.len ? "/.." : "..");
        const char *rest = to + common + (to[common] == '/');
        if (*rest)
                strbuf_addf(&sb, "%s%s", sb.len ? "/" : "", rest);
        if (!sb.len)
                strbuf_add(&sb, ".");
        return sb.s;
}

/* A path of the file (relative to its folder, or absolute) as the plan
 * gives it: relative to the plan's folder, or absolute without one. An
 * absolute path stays as written. */
static char *plan_path(const struct experiment *e, const char *plan_dir, const char *p)
{
        if (p[0] == '/')
                return xstrdup(p);
        _cleanup_free_ char *abs = path_clean(e->x.dir, p);
        return plan_dir ? path_relative(plan_dir, abs) : TAKE_PTR(abs);
}

/* Each {prompt} of `s` replaced by `prompt`. */
static char *substitute(const char *s, const char *prompt)
{
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        for (const char *p; (p = strstr(s, PROMPT)); s = p + strlen(PROMPT)) {
                strbuf_addn(&sb, s, (size_t)(p - s));
                strbuf_add(&sb, prompt);
        }
        strbuf_add(&sb, s);
        return sb.s;
}

/* The fields of `src` (an arm, a task, a grade) into `line`, made what the
 * plan holds: paths for the plan's folder, {prompt} substituted. */
static void copy_fields(const struct experiment *e, const char *plan_dir, json_object *line, json_object *src,
                        const struct xfield *fields, size_t n, const char *prompt)
{
        json_object_object_foreach(src, key, v) {
                const struct xfield *f = find(fields, n, key);
                if (!f || f->type == X_PROMPT || f->type == X_GRADE)
                        continue; /* name, labels, prompt, grade: the caller's */
                json_object *out;
                if (f->type == X_ARGS) {
                        out = json_object_new_array();
                        for (size_t i = 0; i < json_object_array_length(v); i++) {
                                _cleanup_free_ char *s = substitute(
                                        json_object_get_string(json_object_array_get_idx(v, i)), prompt ? prompt : "");
                                json_object_array_add(out, json_object_new_string(s));
                        }
                } else if (f->type == X_PATH || f->type == X_FOLDER ||
                           (f->type == X_BIN && strchr(json_object_get_string(v), '/'))) {
                        _cleanup_free_ char *p = plan_path(e, plan_dir, json_object_get_string(v));
                        out = json_object_new_string(p);
                } else if (f->type == X_REPO_FROM) {
                        _cleanup_free_ char *path = NULL;
                        const char *rev;
                        split_rev(json_object_get_string(v), &path, &rev);
                        _cleanup_free_ char *p = plan_path(e, plan_dir, path);
                        _cleanup_free_ char *s = rev ? xasprintf("%s@%s", p, rev) : xstrdup(p);
                        out = json_object_new_string(s);
                } else {
                        out = json_object_get(v);
                }
                json_object_object_add(line, key, out);
        }
}

static json_object *merged_labels(const struct experiment *e, const struct part *arm, const struct part *task)
{
        json_object *sets[] = { e->labels, arm->labels, task->labels };
        json_object *out = NULL;
        for (size_t s = 0; s < TB_ARRAY_SIZE(sets); s++) {
                if (!sets[s])
                        continue;
                if (!out)
                        out = json_object_new_object();
                json_object_object_foreach(sets[s], name, v) {
                        json_object_object_add(out, name, json_object_get(v));
                }
        }
        return out;
}

static void add_line(const struct experiment *e, const char *plan_dir, const struct part *task, const struct part *arm,
                     long n, struct strbuf *out)
{
        json_object *line = json_object_new_object();
        _cleanup_free_ char *id = xasprintf("%s/%s/%ld", task->name, arm->name, n);
        _cleanup_free_ char *dir = xasprintf("%s/%s", e->output_root, id);
        _cleanup_free_ char *output = plan_path(e, plan_dir, dir);
        json_object_object_add(line, "id", json_object_new_string(id));
        json_object_object_add(line, "task", json_object_new_string(task->name));
        json_object_object_add(line, "arm", json_object_new_string(arm->name));
        json_object *labels = merged_labels(e, arm, task);
        if (labels)
                json_object_object_add(line, "labels", labels);
        json_object *h;
        json_object_object_get_ex(arm->j, "harness", &h);
        json_object_object_add(line, "harness", json_object_get(h));
        json_object_object_add(line, "output_dir", json_object_new_string(output));
        copy_fields(e, plan_dir, line, arm->j, arm_fields, TB_ARRAY_SIZE(arm_fields), task->prompt);
        /* The task's repository and limits, over the arm's; its grade last. */
        copy_fields(e, plan_dir, line, task->j, task_fields, TB_ARRAY_SIZE(task_fields), task->prompt);
        json_object *g;
        if (json_object_object_get_ex(task->j, "grade", &g)) {
                json_object *grade = json_object_new_object();
                copy_fields(e, plan_dir, grade, g, grade_fields, TB_ARRAY_SIZE(grade_fields), task->prompt);
                json_object_object_add(line, "grade", grade);
        }
        strbuf_addf(out, "%s\n",
                    json_object_to_json_string_ext(line, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(line);
}

/* Tasks with `repo` that several Trials share: said, not refused. */
static void note_shared(const struct experiment *e, struct strv *notes)
{
        size_t per_task = (size_t)e->repetitions * e->n_arms;
        for (size_t t = 0; t < e->n_tasks && per_task > 1; t++)
                if (json_object_object_get_ex(e->tasks[t].j, "repo", NULL))
                        strv_addf(notes,
                                  "%s: %s.repo: its %zu Trials share one repository, one after the other, each "
                                  "seeing what the one before left; 'repo_from' gives each a clone",
                                  e->x.file, e->tasks[t].where, per_task);
}

int experiment_expand(const char *path, const char *plan_dir, struct strbuf *out, struct strv *notes,
                      struct tb_error *err)
{
        struct experiment e = { .x = { .file = path, .err = err } };
        _cleanup_free_ char *real = realpath(path, NULL);
        e.x.dir = real ? path_dirname(real) : NULL;
        int r = real ? load(&e, path)
                     : tb_fail(err, -errno, "cannot read the Experiment '%s': %s", path, strerror(errno));
        if (r == 0) {
                for (long n = 1; n <= e.repetitions; n++)
                        for (size_t t = 0; t < e.n_tasks; t++)
                                for (size_t a = 0; a < e.n_arms; a++)
                                        add_line(&e, plan_dir, &e.tasks[t], &e.arms[a], n, out);
                note_shared(&e, notes);
        }
        experiment_done(&e);
        return r;
}
