#define _GNU_SOURCE
#include "experiments/plan_grade.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/macro.h"
#include "base/path.h"
#include "model/limits.h"
#include "sandbox/cow.h"
#include "sandbox/spec.h"
#include "trial/session_env.h"

enum gtype {
        G_STRING,
        G_PATH,
        G_BIN,
        G_STRINGS,
        G_DURATION,
        G_SIZE,
        G_PIDS,
        G_CPUS,
        G_NETWORK,
        G_LAYER,
        G_FLAG,
        G_ENV
};

struct gfield {
        const char *name;
        enum gtype type;
        size_t offset;
        const char *flag; /* trialbox grade's option */
};

#define GF(n, t, f) { #n, t, offsetof(struct plan_grade, n), f }
static const struct gfield gfields[] = {
        GF(harness, G_STRING, "--harness"),
        GF(args, G_STRINGS, NULL),
        GF(harness_bin, G_BIN, "--harness-bin"),
        GF(credentials, G_PATH, "--credentials"),
        GF(user, G_STRING, "--user"),
        GF(root_session, G_FLAG, "--root-session"),
        GF(files, G_PATH, "--files"),
        GF(timeout, G_DURATION, "--timeout"),
        GF(kill_after, G_DURATION, "--kill-after"),
        GF(memory, G_SIZE, "--memory"),
        GF(pids, G_PIDS, "--pids"),
        GF(cpus, G_CPUS, "--cpus"),
        GF(network, G_NETWORK, "--network"),
        GF(allow_host, G_STRINGS, "--allow-host"),
        GF(env, G_ENV, "--env-file"),
        GF(layer, G_LAYER, "--layer"),
};

static char **str_at(struct plan_grade *g, const struct gfield *f) { return (char **)((char *)g + f->offset); }
static struct strv *strv_at(struct plan_grade *g, const struct gfield *f)
{
        return (struct strv *)((char *)g + f->offset);
}

struct gerr {
        char *field, *why;
        size_t field_len, why_len;
};

static int gfail(const struct gerr *e, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int gfail(const struct gerr *e, const char *field, const char *fmt, ...)
{
        snprintf(e->field, e->field_len, "grade.%s", field);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->why, e->why_len, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

static int take_strings(struct plan_grade *g, const struct gfield *f, json_object *v, const struct gerr *e)
{
        if (!json_object_is_type(v, json_type_array))
                return gfail(e, f->name, "must be an array of strings");
        for (size_t i = 0; i < json_object_array_length(v); i++) {
                json_object *x = json_object_array_get_idx(v, i);
                if (!json_object_is_type(x, json_type_string) ||
                    strlen(json_object_get_string(x)) != (size_t)json_object_get_string_len(x))
                        return gfail(e, f->name, "item %zu is not a string", i);
                strv_add(strv_at(g, f), json_object_get_string(x));
        }
        return 0;
}

/* As a Trial's `env` (trial/session_env.h): secrets, handed to the
 * grader through a pipe, never in its argv. */
static int take_env(struct plan_grade *g, const struct gfield *f, json_object *v, const struct gerr *e)
{
        struct tb_error err = { 0 };
        if (session_env_from_json(v, &g->env, &err) < 0)
                return gfail(e, f->name, "%s", err.msg);
        return 0;
}

static int take_limit(struct plan_grade *g, const struct gfield *f, json_object *v, const struct gerr *e)
{
        bool text = json_object_is_type(v, json_type_string) || json_object_is_type(v, json_type_int) ||
                    json_object_is_type(v, json_type_double);
        if (!text)
                return gfail(e, f->name, "must be a string or a number");
        const char *s = json_object_get_string(v);
        long long value = 0;
        struct tb_error le = { 0 };
        int r = f->type == G_DURATION
                        ? limits_parse_duration("value", s, f->offset == offsetof(struct plan_grade, kill_after),
                                                &value, &le)
                : f->type == G_SIZE ? limits_parse_size("value", s, &value, &le)
                : f->type == G_PIDS ? limits_parse_pids("value", s, &value, &le)
                                    : limits_parse_cpus("value", s, &value, &le);
        if (r < 0)
                return gfail(e, f->name, "%s", le.msg);
        if (f->type == G_CPUS)
                g->slots = (unsigned)((value + 999) / 1000);
        *str_at(g, f) = xstrdup(s);
        return 0;
}

static int take_string(struct plan_grade *g, const struct gfield *f, json_object *v, const char *dir,
                       const struct gerr *e)
{
        if (!json_object_is_type(v, json_type_string))
                return gfail(e, f->name, "must be a string");
        const char *s = json_object_get_string(v);
        if (!s[0])
                return gfail(e, f->name, "must not be empty");
        if (strlen(s) != (size_t)json_object_get_string_len(v) || strpbrk(s, "\n\r"))
                return gfail(e, f->name, "must not hold NUL or newline characters");
        enum cow_layer layer;
        if (f->type == G_NETWORK && strcmp(s, "none") != 0 && strcmp(s, "allow") != 0 && strcmp(s, "host") != 0)
                return gfail(e, f->name, "'%s' is not one of none, allow, host", s);
        if (f->type == G_LAYER && cow_layer_parse(s, &layer) < 0)
                return gfail(e, f->name, "'%s' is not one of auto, bwrap-overlay, overlayfs, copy", s);
        if (f->type == G_PATH || (f->type == G_BIN && strchr(s, '/')))
                *str_at(g, f) = path_clean(dir, s);
        else
                *str_at(g, f) = xstrdup(s);
        return 0;
}

static int take(struct plan_grade *g, const struct gfield *f, json_object *v, const char *dir, const struct gerr *e)
{
        switch (f->type) {
        case G_STRINGS:
                return take_strings(g, f, v, e);
        case G_ENV:
                return take_env(g, f, v, e);
        case G_FLAG:
                if (!json_object_is_type(v, json_type_boolean))
                        return gfail(e, f->name, "must be true or false");
                g->root_session = json_object_get_boolean(v);
                return 0;
        case G_DURATION:
        case G_SIZE:
        case G_PIDS:
        case G_CPUS:
                return take_limit(g, f, v, e);
        default:
                return take_string(g, f, v, dir, e);
        }
}

/* What must hold once every field is read. */
static int check(struct plan_grade *g, const struct gerr *e)
{
        struct stat st;
        if (!g->harness)
                return gfail(e, "harness", "is missing; name the grader's Harness (shell for a test command)");
        if (strspn(g->harness, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(g->harness))
                return gfail(e, "harness", "'%s' is not a Harness name (lowercase letters, digits, '-', '_')",
                             g->harness);
        if (g->files && (stat(g->files, &st) < 0 || !S_ISDIR(st.st_mode)))
                return gfail(e, "files", "'%s' is not a folder; give the grader's own folder", g->files);
        if (g->kill_after && !g->timeout)
                return gfail(e, "kill_after", "needs a timeout (the grace after the deadline's SIGTERM)");
        if (g->allow_host.n && g->network && strcmp(g->network, "allow") != 0)
                return gfail(e, "allow_host", "needs the network 'allow', not '%s'", g->network);
        if (g->slots == 0)
                g->slots = 1;
        return 0;
}

int plan_grade_parse(json_object *j, const char *dir, struct plan_grade **out, char *field, size_t field_len, char *why,
                     size_t why_len)
{
        const struct gerr e = { .field = field, .why = why, .field_len = field_len, .why_len = why_len };
        *out = NULL;
        if (!json_object_is_type(j, json_type_object)) {
                snprintf(field, field_len, "grade");
                snprintf(why, why_len, "must be an object: the grader's fields (harness, args, files, ...)");
                return -EINVAL;
        }
        struct plan_grade *g = xcalloc(1, sizeof *g);
        int r = 0;
        json_object_object_foreach(j, key, v) {
                const struct gfield *f = NULL;
                for (size_t i = 0; i < TB_ARRAY_SIZE(gfields) && !f; i++)
                        if (strcmp(gfields[i].name, key) == 0)
                                f = &gfields[i];
                if (!f)
                        r = gfail(&e, key, "unknown field; see 'Graders' in docs/experiments.md");
                else if (!json_object_is_type(v, json_type_null))
                        r = take(g, f, v, dir, &e);
                if (r < 0)
                        break;
        }
        if (r == 0)
                r = check(g, &e);
        if (r < 0) {
                plan_grade_free(g);
                return r;
        }
        *out = g;
        return 0;
}

void plan_grade_free(struct plan_grade *g)
{
        if (!g)
                return;
        for (size_t i = 0; i < TB_ARRAY_SIZE(gfields); i++) {
                const struct gfield *f = &gfields[i];
                if (f->type == G_STRINGS)
                        strv_done(strv_at(g, f));
                else if (f->type == G_ENV)
                        session_env_done(strv_at(g, f));
                else if (f->type != G_FLAG)
                        free(*str_at(g, f));
        }
        free(g);
}

void plan_grade_args(const struct plan_grade *g, const char *trial_dir, const char *repo, const char *env_file,
                     struct strv *out)
{
        struct plan_grade *m = (struct plan_grade *)g;
        strv_add(out, "grade");
        strv_add(out, "--trial-dir");
        strv_add(out, trial_dir);
        strv_add(out, "--repo");
        strv_add(out, repo);
        for (size_t i = 0; i < TB_ARRAY_SIZE(gfields); i++) {
                const struct gfield *f = &gfields[i];
                if (!f->flag)
                        continue;
                if (f->type == G_FLAG) {
                        if (g->root_session)
                                strv_add(out, f->flag);
                } else if (f->type == G_ENV) {
                        if (g->env.n && env_file) {
                                strv_add(out, f->flag);
                                strv_add(out, env_file);
                        }
                } else if (f->type == G_STRINGS) {
                        const struct strv *sv = strv_at(m, f);
                        for (size_t k = 0; k < sv->n; k++) {
                                strv_add(out, f->flag);
                                strv_add(out, sv->v[k]);
                        }
                } else if (*str_at(m, f)) {
                        strv_add(out, f->flag);
                        strv_add(out, *str_at(m, f));
                }
        }
        strv_add(out, "-q");
        strv_add(out, "--");
        for (size_t i = 0; i < g->args.n; i++)
                strv_add(out, g->args.v[i]);
}
