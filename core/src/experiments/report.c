/* The report's Trials, read from a batch's results (PLAN.results.jsonl), and `trialbox report`. */
#define _GNU_SOURCE
#include "experiments/report.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <string.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "experiments/report_internal.h"
#include "model/outcome.h"

const char *const report_kind_names[K_COUNT] = { "completed", "failed", "void", "not_run", "unrecorded", "other" };

static const char *const grade_names[] = { [G_PASSED] = "passed", [G_FAILED] = "failed", [G_ERROR] = "error",
                                           [G_VOID] = "void" };

struct report *report_new(void)
{
        struct report *r = xcalloc(1, sizeof(struct report));
        strv_add(&r->by, "harness");
        r->by_seen = xcalloc(1, sizeof(bool));
        return r;
}

void report_free(struct report *r)
{
        if (!r)
                return;
        for (size_t i = 0; i < r->n; i++)
                if (r->t[i].tokens) {
                        strv_done(&r->t[i].tokens->models);
                        free(r->t[i].tokens);
                }
        free(r->t);
        for (size_t i = 0; i < r->n_keysets; i++) {
                for (size_t k = 0; k < r->by.n; k++)
                        json_object_put(r->keysets[i][k]);
                free(r->keysets[i]);
        }
        free(r->keysets);
        strv_done(&r->tasks);
        strv_done(&r->causes);
        strv_done(&r->by);
        strv_done(&r->label_names);
        free(r->by_seen);
        prices_done(&r->prices);
        free(r->source);
        free(r);
}

/* One --by key, as the report names it: harness, arm, task or labels.NAME. */
static char *by_key_name(const char *k, size_t len)
{
        if ((len == 7 && strncmp(k, "harness", 7) == 0) || (len == 3 && strncmp(k, "arm", 3) == 0) ||
            (len == 4 && strncmp(k, "task", 4) == 0) || (len > 7 && strncmp(k, "labels.", 7) == 0))
                return strndup(k, len);
        return xasprintf("labels.%.*s", (int)len, k);
}

int report_set_by(struct report *r, const char *by, struct tb_error *err)
{
        struct strv keys = { 0 };
        for (const char *p = by;; p++) {
                size_t len = strcspn(p, ",");
                if (len == 0 || (len == 7 && strncmp(p, "labels.", 7) == 0)) {
                        strv_done(&keys);
                        return tb_fail(err, -EINVAL,
                                       "--by '%s': an empty key; give keys such as arm, task, harness or a label "
                                       "(arm,task or labels.model)",
                                       by);
                }
                char *k = by_key_name(p, len);
                if (strv_contains(&keys, k)) {
                        tb_fail(err, -EINVAL, "--by '%s': '%s' is given twice", by, k);
                        free(k);
                        strv_done(&keys);
                        return -EINVAL;
                }
                strv_add_take(&keys, k);
                p += len;
                if (*p == '\0')
                        break;
        }
        strv_done(&r->by);
        r->by = keys;
        free(r->by_seen);
        r->by_seen = xcalloc(keys.n, sizeof(bool));
        return 0;
}

int report_set_prices(struct report *r, const char *path, struct tb_error *err)
{
        prices_done(&r->prices);
        int ret = prices_load(&r->prices, path, err);
        r->has_prices = ret == 0;
        return ret;
}

static json_object *get(json_object *o, const char *key)
{
        json_object *v = NULL;
        return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static bool is_number(json_object *v)
{
        return v && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double));
}

static long long get_count(json_object *o, const char *key)
{
        json_object *v = get(o, key);
        return is_number(v) ? json_object_get_int64(v) : -1;
}

static int kind_of(const char *s)
{
        if (!s)
                return K_NOT_RUN;
        for (int k = 0; k < K_OTHER; k++)
                if (k != K_NOT_RUN && strcmp(s, report_kind_names[k]) == 0)
                        return k;
        return K_OTHER;
}

/* Why a Trial failed or was void: its cause, or how a plain failure ended. */
static const char *cause_of(json_object *j, int kind)
{
        json_object *c = get(j, "cause");
        if (c && json_object_is_type(c, json_type_string))
                return json_object_get_string(c);
        if (kind == K_FAILED)
                return get_count(j, "signal") > 0 ? "signal" : "nonzero_exit";
        return "unknown";
}

/* `s` as one of `known`'s strings (added when it is new): the same text
 * for many Trials is kept once. */
static const char *intern(struct strv *known, const char *s)
{
        for (size_t i = 0; i < known->n; i++)
                if (strcmp(known->v[i], s) == 0)
                        return known->v[i];
        strv_add(known, s);
        return known->v[known->n - 1];
}

/* A scalar as text (a string as is, a number as its JSON text), or NULL. */
static const char *scalar_text(json_object *v)
{
        if (!v || json_object_is_type(v, json_type_null) || json_object_is_type(v, json_type_object) ||
            json_object_is_type(v, json_type_array))
                return NULL;
        return json_object_get_string(v);
}

/* The value of --by key `key` in line `j`, referenced; NULL when it has none. */
static json_object *key_value(json_object *j, const char *key)
{
        json_object *v;
        if (strncmp(key, "labels.", 7) == 0)
                v = get(get(j, "labels"), key + 7);
        else
                v = get(j, key);
        if (v && (json_object_is_type(v, json_type_object) || json_object_is_type(v, json_type_array)))
                v = NULL;
        if (!v && strcmp(key, "harness") == 0)
                return json_object_new_string("?");
        return v ? json_object_get(v) : NULL;
}

static void add_usage(struct trial_rec *t, json_object *usage)
{
        long long user = get_count(usage, "cpu_user_ms"), sys = get_count(usage, "cpu_system_ms");
        t->cpu_ms = user >= 0 || sys >= 0 ? (user > 0 ? user : 0) + (sys > 0 ? sys : 0) : -1;
        t->peak_memory = get_count(usage, "peak_memory_bytes");
}

static void add_grade(struct report *r, struct trial_rec *t, json_object *j)
{
        json_object *g = NULL;
        if (!json_object_object_get_ex(j, "grade", &g))
                return;
        r->any_grade = true;
        if (!g || !json_object_is_type(g, json_type_object))
                return;
        json_object *s = get(g, "status");
        t->grade = G_ERROR;
        for (int k = G_PASSED; s && json_object_is_type(s, json_type_string) && k <= G_VOID; k++)
                if (strcmp(json_object_get_string(s), grade_names[k]) == 0)
                        t->grade = k;
        json_object *score = get(g, "score");
        if (is_number(score) && isfinite(json_object_get_double(score))) {
                t->has_score = true;
                t->score = json_object_get_double(score);
        }
}

static void add_tokens(struct report *r, struct trial_rec *t, json_object *tok)
{
        if (!tok || !json_object_is_type(tok, json_type_object))
                return;
        r->any_tokens = true;
        struct rec_tokens *tt = t->tokens = xcalloc(1, sizeof *tt);
        long long *slots[] = { &tt->tok.input,     &tt->tok.cached_input, &tt->tok.output,
                               &tt->tok.reasoning, &tt->tok.requests,     &tt->tok.cache_write_input };
        static const char *const names[] = { "input",     "cached_input", "output",
                                             "reasoning", "requests",     "cache_write_input" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(names); i++) {
                long long v = get_count(tok, names[i]);
                *slots[i] = v > 0 ? v : 0;
        }
        json_object *models = get(tok, "models");
        size_t n = models && json_object_is_type(models, json_type_array) ? json_object_array_length(models) : 0;
        for (size_t i = 0; i < n; i++) {
                json_object *m = json_object_array_get_idx(models, i);
                if (m && json_object_is_type(m, json_type_string) &&
                    !strv_contains(&tt->models, json_object_get_string(m)))
                        strv_add(&tt->models, json_object_get_string(m));
        }
}

static bool keys_equal(json_object *const *a, json_object *const *b, size_t n)
{
        for (size_t k = 0; k < n; k++) {
                if (!a[k] != !b[k])
                        return false;
                if (a[k] && !json_object_equal(a[k], b[k]))
                        return false;
        }
        return true;
}

/* The line's --by values, as one of the report's keysets (a new one when
 * no line before had them). */
static void add_keys(struct report *r, struct trial_rec *t, json_object *j)
{
        _cleanup_free_ json_object **keys = xcalloc(r->by.n, sizeof(json_object *));
        for (size_t k = 0; k < r->by.n; k++) {
                keys[k] = key_value(j, r->by.v[k]);
                if (keys[k])
                        r->by_seen[k] = true;
        }
        size_t i = 0;
        while (i < r->n_keysets && !keys_equal(keys, r->keysets[i], r->by.n))
                i++;
        if (i == r->n_keysets) {
                GREEDY_REALLOC(r->keysets, r->cap_keysets, r->n_keysets + 1);
                r->keysets[r->n_keysets++] = TAKE_PTR(keys);
        } else {
                for (size_t k = 0; k < r->by.n; k++)
                        json_object_put(keys[k]);
        }
        t->keyset = (unsigned)i;
        json_object *labels = get(j, "labels");
        if (labels && json_object_is_type(labels, json_type_object)) {
                json_object_object_foreach(labels, name, v) {
                        (void)v;
                        if (r->label_names.n < 64 && !strv_contains(&r->label_names, name))
                                strv_add(&r->label_names, name);
                }
        }
}

int report_add_line(struct report *r, const char *line, struct tb_error *err)
{
        json_object *j = json_tokener_parse(line);
        if (!j || !json_object_is_type(j, json_type_object)) {
                json_object_put(j);
                return tb_fail(err, -EINVAL, "not a JSON object");
        }
        GREEDY_REALLOC(r->t, r->cap, r->n + 1);
        struct trial_rec *t = &r->t[r->n++];
        *t = (struct trial_rec){ .duration_ms = -1 };
        json_object *ov = get(j, "outcome");
        t->kind = kind_of(ov && json_object_is_type(ov, json_type_string) ? json_object_get_string(ov) : NULL);
        if (t->kind == K_FAILED || t->kind == K_VOID)
                t->cause = intern(&r->causes, cause_of(j, t->kind));
        if (t->kind == K_COMPLETED || t->kind == K_FAILED)
                t->duration_ms = get_count(j, "duration_ms");
        t->has_arm = scalar_text(get(j, "arm")) != NULL;
        const char *task = scalar_text(get(j, "task"));
        t->task = task ? intern(&r->tasks, task) : NULL;
        add_keys(r, t, j);
        add_usage(t, get(j, "usage"));
        add_grade(r, t, j);
        add_tokens(r, t, get(j, "tokens"));
        json_object_put(j);
        return 0;
}

int report_read(struct report *r, const char *path, struct tb_error *err)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return tb_fail(err, -errno, "cannot read the results '%s': %s", path, strerror(errno));
        free(r->source);
        r->source = xstrdup(path);
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        unsigned no = 0;
        int ret = 0;
        while (getline(&line, &cap, f) >= 0) {
                no++;
                if (strspn(line, " \t\r\n") == strlen(line))
                        continue;
                if (report_add_line(r, line, err) < 0) {
                        ret = tb_fail(err, -EINVAL, "%s:%u: not a results line (a JSON object); is it a batch's PLAN.results.jsonl?",
                                      path, no);
                        break;
                }
        }
        return ret;
}

/* "harness, arm, task, labels.model": the keys some line has. malloc'd. */
static char *keys_present(const struct report *r)
{
        bool arm = false, task = false;
        for (size_t i = 0; i < r->n; i++) {
                arm = arm || r->t[i].has_arm;
                task = task || r->t[i].task;
        }
        struct strbuf have = { 0 };
        strbuf_addf(&have, "harness%s%s", arm ? ", arm" : "", task ? ", task" : "");
        for (size_t i = 0; i < r->label_names.n; i++)
                strbuf_addf(&have, ", labels.%s", r->label_names.v[i]);
        return have.s;
}

int report_check(const struct report *r, struct tb_error *err)
{
        for (size_t k = 0; k < r->by.n && r->n > 0; k++) {
                if (r->by_seen[k])
                        continue;
                _cleanup_free_ char *have = keys_present(r);
                return tb_fail(err, -EINVAL, "--by %s: no results line has it; the lines have: %s", r->by.v[k], have);
        }
        return 0;
}

void report_print(const struct report *r, enum report_format format, FILE *out)
{
        struct answer a;
        answer_build(&a, r);
        if (format == REPORT_JSON)
                report_print_json(&a, out);
        else if (format == REPORT_CSV)
                report_print_csv(&a, out);
        else
                report_print_text(&a, out);
        answer_done(&a);
}

/* `path` split into its folder (opened) and its name. */
static int open_parent(const char *path, const char **name)
{
        const char *slash = strrchr(path, '/');
        *name = slash ? slash + 1 : path;
        _cleanup_free_ char *dir = slash ? strndup(path, (size_t)(slash - path)) : xstrdup(".");
        return open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int report_write_html(const struct report *r, const char *path, struct tb_error *err)
{
        const char *name;
        _cleanup_close_ int dirfd = open_parent(path, &name);
        if (dirfd < 0)
                return tb_fail(err, -errno, "cannot write the page '%s': its folder: %s", path, strerror(errno));
        if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return tb_fail(err, -EISDIR, "cannot write the page '%s': name a file, not a folder", path);
        struct answer a;
        answer_build(&a, r);
        _cleanup_free_ char *page = report_html(&a);
        answer_done(&a);
        int ret = write_file_atomic_at(dirfd, name, page, strlen(page), 0644, WRITE_SYNC_FILE);
        if (ret < 0)
                return tb_fail(err, ret, "cannot write the page '%s': %s", path, strerror(-ret));
        return 0;
}

int report_run(const struct report_args *a, FILE *out, struct tb_error *err)
{
        struct report *r = report_new();
        int ret = a->by ? report_set_by(r, a->by, err) : 0;
        if (ret == 0 && a->prices)
                ret = report_set_prices(r, a->prices, err);
        if (ret == 0)
                ret = report_read(r, a->results, err);
        if (ret == 0)
                ret = report_check(r, err);
        if (ret < 0) {
                report_free(r);
                return TB_EXIT_USAGE;
        }
        if (a->html && report_write_html(r, a->html, err) < 0) {
                report_free(r);
                return TB_EXIT_ERROR;
        }
        report_print(r, a->format, out);
        report_free(r);
        return 0;
}
