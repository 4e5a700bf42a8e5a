/* The answer as text, JSON and CSV. Every string from the results goes
 * through str_escape() on the terminal, json-c's escaping in JSON, and CSV's
 * quoting in CSV. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/macro.h"
#include "base/str.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "experiments/report_internal.h"

static bool by_default(const struct report *r) { return r->by.n == 1 && strcmp(r->by.v[0], "harness") == 0; }

/* ---- text ---- */

static char *fmt_ms(long long ms, char *buf, size_t n)
{
        if (ms < 0)
                snprintf(buf, n, "-");
        else if (ms < 1000)
                snprintf(buf, n, "%lldms", ms);
        else if (ms < 600000)
                snprintf(buf, n, "%.1fs", (double)ms / 1000);
        else
                snprintf(buf, n, "%.1fm", (double)ms / 60000);
        return buf;
}

static char *fmt_bytes(long long b, char *buf, size_t n)
{
        if (b < 0)
                snprintf(buf, n, "-");
        else if (b < 1024LL * 1024 * 1024)
                snprintf(buf, n, "%.1fM", (double)b / (1024 * 1024));
        else
                snprintf(buf, n, "%.2fG", (double)b / (1024.0 * 1024 * 1024));
        return buf;
}

static char *fmt_fixed(bool known, double v, char *buf, size_t n)
{
        if (known)
                snprintf(buf, n, "%.3f", v);
        else
                snprintf(buf, n, "-");
        return buf;
}

static char *fmt_ci(bool known, double lo, double hi, char *buf, size_t n)
{
        if (known)
                snprintf(buf, n, "[%.3f, %.3f]", lo, hi);
        else
                snprintf(buf, n, "-");
        return buf;
}

/* The key columns: each as wide as its name and its values, 12 at least in all. */
struct key_cols {
        size_t n;
        int *width;
};

static void key_cols_init(struct key_cols *kc, const struct answer *a)
{
        const struct report *r = a->r;
        kc->n = r->by.n;
        kc->width = xcalloc(kc->n, sizeof(int));
        size_t total = 0;
        for (size_t k = 0; k < kc->n; k++) {
                size_t w = strlen(r->by.v[k]);
                for (size_t i = 0; i < a->n; i++) {
                        _cleanup_free_ char *s = str_escape(report_key_text(a->g[i].keys[k], "-"));
                        if (strlen(s) > w)
                                w = strlen(s);
                }
                kc->width[k] = (int)w;
                total += w + (k ? 1 : 0);
        }
        if (total < 12)
                kc->width[kc->n - 1] += (int)(12 - total);
}

static void key_cols_header(const struct key_cols *kc, const struct report *r, FILE *out)
{
        for (size_t k = 0; k < kc->n; k++)
                fprintf(out, "%s%-*s", k ? " " : "", kc->width[k], r->by.v[k]);
}

static void key_cols_row(const struct key_cols *kc, const struct group *g, FILE *out)
{
        for (size_t k = 0; k < kc->n; k++) {
                _cleanup_free_ char *s = str_escape(report_key_text(g->keys[k], "-"));
                fprintf(out, "%s%-*s", k ? " " : "", kc->width[k], s);
        }
}

/* "A,t1": a group's keys in a sentence, escaped; malloc'd. */
static char *group_name(const struct group *g, size_t n_keys)
{
        struct strbuf sb = { 0 };
        for (size_t k = 0; k < n_keys; k++)
                strbuf_addf(&sb, "%s%s", k ? "," : "", report_key_text(g->keys[k], "-"));
        char *s = str_escape(sb.s ? sb.s : "");
        free(sb.s);
        return s;
}

static void print_run_table(const struct answer *a, const struct key_cols *kc, FILE *out)
{
        char b1[32], b2[32], b3[32], b4[32];
        key_cols_header(kc, a->r, out);
        fprintf(out, " %6s %9s %6s %5s %7s %8s %8s %8s %9s\n", "trials", "completed", "failed", "void", "not_run", "p50",
                "p95", "cpu", "peak_mem");
        for (size_t i = 0; i < a->n; i++) {
                const struct group *g = &a->g[i];
                key_cols_row(kc, g, out);
                fprintf(out, " %6zu %9zu %6zu %5zu %7zu %8s %8s %8s %9s\n", g->trials, g->by_kind[K_COMPLETED],
                        g->by_kind[K_FAILED], g->by_kind[K_VOID], g->by_kind[K_NOT_RUN], fmt_ms(g->p50_ms, b1, sizeof b1),
                        fmt_ms(g->p95_ms, b2, sizeof b2), fmt_ms(g->cpu_ms, b3, sizeof b3),
                        fmt_bytes(g->peak_memory_max, b4, sizeof b4));
        }
        bool any = false;
        for (size_t i = 0; i < a->n; i++)
                for (size_t k = 0; k < a->g[i].n_causes; k++) {
                        const struct cause_count *cc = &a->g[i].causes[k];
                        _cleanup_free_ char *name = group_name(&a->g[i], a->r->by.n);
                        _cleanup_free_ char *cause = str_escape(cc->cause);
                        fprintf(out, "%s%s %s/%s %zu", any ? ", " : "causes: ", name, report_kind_names[cc->kind], cause,
                                cc->n);
                        any = true;
                }
        if (any)
                fputc('\n', out);
        for (size_t i = 0; i < a->n; i++)
                if (a->g[i].by_kind[K_UNRECORDED]) {
                        _cleanup_free_ char *name = group_name(&a->g[i], a->r->by.n);
                        fprintf(out, "unrecorded: %s %zu (the session ran; trialbox could not write its Outcome)\n", name,
                                a->g[i].by_kind[K_UNRECORDED]);
                }
}

static void print_grade_table(const struct answer *a, const struct key_cols *kc, FILE *out)
{
        char b1[32], b2[64], b3[32], b4[64], b5[32];
        fputc('\n', out);
        key_cols_header(kc, a->r, out);
        fprintf(out, " %6s %6s %9s %-16s %6s %10s %-18s", "graded", "passed", "pass_rate", "95% CI", "scored", "mean_score",
                "95% CI");
        for (size_t k = 1; k <= a->k_max; k++) {
                snprintf(b1, sizeof b1, "pass@%zu", k);
                fprintf(out, " %7s", b1);
        }
        fputc('\n', out);
        for (size_t i = 0; i < a->n; i++) {
                const struct group *g = &a->g[i];
                key_cols_row(kc, g, out);
                fprintf(out, " %6zu %6zu %9s %-16s %6zu %10s %-18s", g->graded, g->passed,
                        fmt_fixed(g->has_rate, g->pass_rate, b1, sizeof b1),
                        fmt_ci(g->has_rate_ci, g->rate_low, g->rate_high, b2, sizeof b2), g->scored,
                        fmt_fixed(g->has_mean, g->mean_score, b3, sizeof b3),
                        fmt_ci(g->has_mean_ci, g->mean_low, g->mean_high, b4, sizeof b4));
                for (size_t k = 1; k <= a->k_max; k++)
                        fprintf(out, " %7s", fmt_fixed(k <= g->k_max, k <= g->k_max ? g->pass_at_k[k - 1] : 0, b5, sizeof b5));
                fputc('\n', out);
        }
        bool any = false;
        for (size_t i = 0; i < a->n; i++) {
                const struct group *g = &a->g[i];
                const size_t counts[] = { g->grade_errors, g->grade_void, g->not_graded };
                static const char *const what[] = { "error", "void", "none" };
                _cleanup_free_ char *name = group_name(g, a->r->by.n);
                for (size_t k = 0; k < TB_ARRAY_SIZE(counts); k++) {
                        if (!counts[k])
                                continue;
                        fprintf(out, "%s%s %s %zu", any ? ", " : "not graded: ", name, what[k], counts[k]);
                        any = true;
                }
        }
        if (any)
                fputc('\n', out);
}

static void print_token_table(const struct answer *a, const struct key_cols *kc, FILE *out)
{
        bool prices = a->r->has_prices;
        fputc('\n', out);
        key_cols_header(kc, a->r, out);
        fprintf(out, " %6s %12s %12s %12s %12s %8s%s\n", "trials", "input", "cached_input", "output", "reasoning",
                "requests", prices ? "     cost_usd" : "");
        for (size_t i = 0; i < a->n; i++) {
                const struct group *g = &a->g[i];
                key_cols_row(kc, g, out);
                fprintf(out, " %6zu %12lld %12lld %12lld %12lld %8lld", g->token_trials, g->tok.input,
                        g->tok.cached_input, g->tok.output, g->tok.reasoning, g->tok.requests);
                if (prices && g->cost_state == COST_KNOWN)
                        fprintf(out, " %12.4f", g->cost_usd);
                else if (prices)
                        fprintf(out, " %12s", g->cost_state == COST_UNKNOWN ? "unknown" : "-");
                fputc('\n', out);
        }
        for (size_t i = 0; prices && i < a->n; i++) {
                if (a->g[i].cost_state != COST_UNKNOWN)
                        continue;
                _cleanup_free_ char *name = group_name(&a->g[i], a->r->by.n);
                _cleanup_free_ char *note = str_escape(a->g[i].cost_note);
                fprintf(out, "cost unknown for %s: %s\n", name, note);
        }
}

static void print_pair(const struct paired *p, FILE *out)
{
        _cleanup_free_ char *na = str_escape(p->arm_a);
        _cleanup_free_ char *nb = str_escape(p->arm_b);
        fprintf(out, "paired difference in pass rate, %s - %s: ", nb, na);
        if (!p->has_diff)
                fputs("no task graded in both arms", out);
        else if (!p->has_ci)
                fprintf(out, "%+.3f over 1 task (an interval needs 2 tasks)", p->diff);
        else
                fprintf(out, "%+.3f, 95%% CI [%+.3f, %+.3f] over %zu tasks%s", p->diff, p->low, p->high, p->n_tasks,
                        p->low == p->high ? " (every task's difference is the same: an interval of no width says little)"
                                          : "");
        for (size_t i = 0; i < p->n_left_out; i++) {
                _cleanup_free_ char *task = str_escape(p->left_out[i].task);
                _cleanup_free_ char *in = p->left_out[i].graded_in ? str_escape(p->left_out[i].graded_in) : NULL;
                fprintf(out, "%s%s (%s%s)", i ? ", " : "; left out: ", task, in ? "graded only in " : "graded in neither",
                        in ? in : "");
        }
        fputc('\n', out);
}

void report_print_text(const struct answer *a, FILE *out)
{
        struct key_cols kc;
        key_cols_init(&kc, a);
        print_run_table(a, &kc, out);
        if (a->r->any_grade)
                print_grade_table(a, &kc, out);
        else if (!by_default(a->r))
                fputs("no results line has a grade: no pass rates\n", out);
        if (a->r->any_tokens || a->r->has_prices)
                print_token_table(a, &kc, out);
        if (a->by_arm && a->r->any_grade && a->n_pairs > 0) {
                fputc('\n', out);
                for (size_t i = 0; i < a->n_pairs; i++)
                        print_pair(&a->pairs[i], out);
        }
        free(kc.width);
}

/* ---- JSON ---- */

static json_object *num(double v)
{
        char buf[40];
        snprintf(buf, sizeof buf, "%.10g", v);
        return json_object_new_double_s(v, buf);
}

static json_object *num_or_null(bool known, double v) { return known ? num(v) : NULL; }

static json_object *int_or_null(long long v) { return v >= 0 ? json_object_new_int64(v) : NULL; }

static json_object *count(size_t v) { return json_object_new_int64((long long)v); }

static json_object *ci_or_null(bool known, double lo, double hi)
{
        if (!known)
                return NULL;
        json_object *ci = json_object_new_array();
        json_object_array_add(ci, num(lo));
        json_object_array_add(ci, num(hi));
        return ci;
}

static json_object *key_json(json_object *v) { return v ? json_object_get(v) : NULL; }

static void json_add_keys(json_object *o, const struct report *r, const struct group *g)
{
        json_object *labels = NULL;
        for (size_t k = 0; k < r->by.n; k++) {
                const char *key = r->by.v[k];
                if (strncmp(key, "labels.", 7) != 0) {
                        json_object_object_add(o, key, key_json(g->keys[k]));
                        continue;
                }
                if (!labels)
                        labels = json_object_new_object();
                json_object_object_add(labels, key + 7, key_json(g->keys[k]));
        }
        if (labels)
                json_object_object_add(o, "labels", labels);
}

static void json_add_run(json_object *o, const struct group *g)
{
        json_object_object_add(o, "trials", count(g->trials));
        for (int k = 0; k < K_OTHER; k++)
                json_object_object_add(o, report_kind_names[k], count(g->by_kind[k]));
        json_object_object_add(o, "duration_p50_ms", int_or_null(g->p50_ms));
        json_object_object_add(o, "duration_p95_ms", int_or_null(g->p95_ms));
        json_object_object_add(o, "cpu_ms", int_or_null(g->cpu_ms));
        json_object_object_add(o, "peak_memory_max_bytes", int_or_null(g->peak_memory_max));
        json_object *causes = json_object_new_array();
        for (size_t k = 0; k < g->n_causes; k++) {
                json_object *c = json_object_new_object();
                json_object_object_add(c, "outcome", json_object_new_string(report_kind_names[g->causes[k].kind]));
                json_object_object_add(c, "cause", json_object_new_string(g->causes[k].cause));
                json_object_object_add(c, "count", count(g->causes[k].n));
                json_object_array_add(causes, c);
        }
        json_object_object_add(o, "causes", causes);
}

static void json_add_grades(json_object *o, const struct group *g)
{
        json_object_object_add(o, "graded", count(g->graded));
        json_object_object_add(o, "passed", count(g->passed));
        json_object_object_add(o, "grade_errors", count(g->grade_errors));
        json_object_object_add(o, "grade_void", count(g->grade_void));
        json_object_object_add(o, "not_graded", count(g->not_graded));
        json_object_object_add(o, "pass_rate", num_or_null(g->has_rate, g->pass_rate));
        json_object_object_add(o, "pass_rate_ci95", ci_or_null(g->has_rate_ci, g->rate_low, g->rate_high));
        json_object_object_add(o, "scored", count(g->scored));
        json_object_object_add(o, "mean_score", num_or_null(g->has_mean, g->mean_score));
        json_object_object_add(o, "mean_score_ci95", ci_or_null(g->has_mean_ci, g->mean_low, g->mean_high));
        json_object *pk = NULL;
        for (size_t k = 1; k <= g->k_max; k++) {
                char name[24];
                snprintf(name, sizeof name, "%zu", k);
                if (!pk)
                        pk = json_object_new_object();
                json_object_object_add(pk, name, num(g->pass_at_k[k - 1]));
        }
        json_object_object_add(o, "pass_at_k", pk);
        json_object_object_add(o, "pass_at_k_tasks", count(g->pass_at_k_tasks));
}

static void json_add_tokens(json_object *o, const struct group *g)
{
        json_object *t = NULL;
        if (g->token_trials > 0) {
                t = json_object_new_object();
                json_object_object_add(t, "trials", count(g->token_trials));
                json_object_object_add(t, "input", json_object_new_int64(g->tok.input));
                json_object_object_add(t, "cached_input", json_object_new_int64(g->tok.cached_input));
                json_object_object_add(t, "cache_write_input", json_object_new_int64(g->tok.cache_write_input));
                json_object_object_add(t, "output", json_object_new_int64(g->tok.output));
                json_object_object_add(t, "reasoning", json_object_new_int64(g->tok.reasoning));
                json_object_object_add(t, "requests", json_object_new_int64(g->tok.requests));
                json_object *models = json_object_new_array();
                for (size_t i = 0; i < g->models.n; i++)
                        json_object_array_add(models, json_object_new_string(g->models.v[i]));
                json_object_object_add(t, "models", models);
        }
        json_object_object_add(o, "tokens", t);
        json_object_object_add(o, "cost_usd", num_or_null(g->cost_state == COST_KNOWN, g->cost_usd));
        json_object_object_add(o, "cost_note", g->cost_note ? json_object_new_string(g->cost_note) : NULL);
}

static json_object *json_pair(const struct paired *p)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, "arm_a", json_object_new_string(p->arm_a));
        json_object_object_add(o, "arm_b", json_object_new_string(p->arm_b));
        json_object_object_add(o, "tasks", count(p->n_tasks));
        json_object_object_add(o, "pass_rate_difference", num_or_null(p->has_diff, p->diff));
        json_object_object_add(o, "pass_rate_difference_ci95", ci_or_null(p->has_ci, p->low, p->high));
        json_object *per = json_object_new_array();
        for (size_t i = 0; i < p->n_tasks; i++) {
                const struct pair_task *t = &p->tasks[i];
                json_object *x = json_object_new_object();
                json_object_object_add(x, "task", json_object_new_string(t->task));
                json_object_object_add(x, "a_graded", count(t->graded_a));
                json_object_object_add(x, "a_pass_rate", num(t->rate_a));
                json_object_object_add(x, "b_graded", count(t->graded_b));
                json_object_object_add(x, "b_pass_rate", num(t->rate_b));
                json_object_object_add(x, "difference", num(t->rate_b - t->rate_a));
                json_object_array_add(per, x);
        }
        json_object_object_add(o, "per_task", per);
        json_object *left = json_object_new_array();
        for (size_t i = 0; i < p->n_left_out; i++) {
                json_object *x = json_object_new_object();
                const char *in = p->left_out[i].graded_in;
                json_object_object_add(x, "task", json_object_new_string(p->left_out[i].task));
                json_object_object_add(x, "graded_in", in ? json_object_new_string(in) : NULL);
                json_object_array_add(left, x);
        }
        json_object_object_add(o, "tasks_left_out", left);
        return o;
}

void report_print_json(const struct answer *a, FILE *out)
{
        json_object *top = json_object_new_object(), *by = json_object_new_array(), *groups = json_object_new_array();
        for (size_t k = 0; k < a->r->by.n; k++)
                json_object_array_add(by, json_object_new_string(a->r->by.v[k]));
        for (size_t i = 0; i < a->n; i++) {
                json_object *o = json_object_new_object();
                json_add_keys(o, a->r, &a->g[i]);
                json_add_run(o, &a->g[i]);
                json_add_grades(o, &a->g[i]);
                json_add_tokens(o, &a->g[i]);
                json_object_array_add(groups, o);
        }
        json_object_object_add(top, "by", by);
        json_object_object_add(top, "groups", groups);
        /* The name the per-Harness summary had first, for its readers. */
        if (by_default(a->r))
                json_object_object_add(top, "harnesses", json_object_get(groups));
        if (a->by_arm) {
                json_object *pairs = json_object_new_array();
                for (size_t i = 0; i < a->n_pairs; i++)
                        json_object_array_add(pairs, json_pair(&a->pairs[i]));
                json_object_object_add(top, "paired_differences", pairs);
        }
        fprintf(out, "%s\n", json_object_to_json_string_ext(top, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(top);
}

/* ---- CSV ---- */

/* Does `s` read as a number (a label such as -0.5)? */
static bool is_number_text(const char *s)
{
        char *end = NULL;
        if (!*s)
                return false;
        (void)strtod(s, &end);
        return *end == '\0';
}

/* A CSV field: quoted when it holds a separator, quote or newline. Text
 * that a spreadsheet would take for a formula (=, +, -, @ first) gets a
 * leading ' (OWASP's advice): the results quote what sessions wrote. */
static void csv_field(FILE *out, const char *s)
{
        bool formula = s[0] && strchr("=+-@\t\r", s[0]) && !is_number_text(s);
        bool quoted = strpbrk(s, ",\"\r\n") != NULL;
        if (quoted)
                fputc('"', out);
        if (formula)
                fputc('\'', out);
        for (; *s; s++) {
                if (*s == '"')
                        fputc('"', out);
                fputc(*s, out);
        }
        if (quoted)
                fputc('"', out);
}

static void csv_int(FILE *out, long long v)
{
        if (v >= 0)
                fprintf(out, ",%lld", v);
        else
                fputc(',', out);
}

static void csv_num(FILE *out, bool known, double v)
{
        if (known)
                fprintf(out, ",%.10g", v);
        else
                fputc(',', out);
}

static void csv_header(const struct answer *a, FILE *out)
{
        const struct report *r = a->r;
        for (size_t k = 0; k < r->by.n; k++) {
                if (k)
                        fputc(',', out);
                csv_field(out, r->by.v[k]);
        }
        fputs(",trials,completed,failed,void,not_run,duration_p50_ms,duration_p95_ms,cpu_ms,peak_memory_max_bytes,causes",
              out);
        if (r->any_grade) {
                fputs(",graded,passed,grade_errors,grade_void,not_graded,pass_rate,pass_rate_ci95_low,"
                      "pass_rate_ci95_high,scored,mean_score,mean_score_ci95_low,mean_score_ci95_high",
                      out);
                for (size_t k = 1; k <= a->k_max; k++)
                        fprintf(out, ",pass_at_%zu", k);
        }
        if (r->any_tokens)
                fputs(",tokens_trials,tokens_input,tokens_cached_input,tokens_output,tokens_reasoning,tokens_requests,"
                      "tokens_models",
                      out);
        if (r->has_prices)
                fputs(",cost_usd,cost_note", out);
        fputc('\n', out);
}

static void csv_run(const struct group *g, FILE *out)
{
        fprintf(out, ",%zu,%zu,%zu,%zu,%zu", g->trials, g->by_kind[K_COMPLETED], g->by_kind[K_FAILED],
                g->by_kind[K_VOID], g->by_kind[K_NOT_RUN]);
        csv_int(out, g->p50_ms);
        csv_int(out, g->p95_ms);
        csv_int(out, g->cpu_ms);
        csv_int(out, g->peak_memory_max);
        struct strbuf causes = { 0 };
        for (size_t k = 0; k < g->n_causes; k++)
                strbuf_addf(&causes, "%s%s/%s=%zu", k ? " " : "", report_kind_names[g->causes[k].kind],
                            g->causes[k].cause, g->causes[k].n);
        fputc(',', out);
        csv_field(out, causes.s ? causes.s : "");
        free(causes.s);
}

static void csv_grades(const struct group *g, size_t k_max, FILE *out)
{
        fprintf(out, ",%zu,%zu,%zu,%zu,%zu", g->graded, g->passed, g->grade_errors, g->grade_void, g->not_graded);
        csv_num(out, g->has_rate, g->pass_rate);
        csv_num(out, g->has_rate_ci, g->rate_low);
        csv_num(out, g->has_rate_ci, g->rate_high);
        fprintf(out, ",%zu", g->scored);
        csv_num(out, g->has_mean, g->mean_score);
        csv_num(out, g->has_mean_ci, g->mean_low);
        csv_num(out, g->has_mean_ci, g->mean_high);
        for (size_t k = 1; k <= k_max; k++)
                csv_num(out, k <= g->k_max, k <= g->k_max ? g->pass_at_k[k - 1] : 0);
}

static void csv_tokens(const struct group *g, FILE *out)
{
        fprintf(out, ",%zu", g->token_trials);
        const long long v[] = { g->tok.input, g->tok.cached_input, g->tok.output, g->tok.reasoning, g->tok.requests };
        for (size_t i = 0; i < TB_ARRAY_SIZE(v); i++)
                csv_int(out, g->token_trials ? v[i] : -1);
        struct strbuf models = { 0 };
        for (size_t i = 0; i < g->models.n; i++)
                strbuf_addf(&models, "%s%s", i ? " " : "", g->models.v[i]);
        fputc(',', out);
        csv_field(out, models.s ? models.s : "");
        free(models.s);
}

void report_print_csv(const struct answer *a, FILE *out)
{
        const struct report *r = a->r;
        csv_header(a, out);
        for (size_t i = 0; i < a->n; i++) {
                const struct group *g = &a->g[i];
                for (size_t k = 0; k < r->by.n; k++) {
                        if (k)
                                fputc(',', out);
                        csv_field(out, report_key_text(g->keys[k], ""));
                }
                csv_run(g, out);
                if (r->any_grade)
                        csv_grades(g, a->k_max, out);
                if (r->any_tokens)
                        csv_tokens(g, out);
                if (r->has_prices) {
                        csv_num(out, g->cost_state == COST_KNOWN, g->cost_usd);
                        fputc(',', out);
                        csv_field(out, g->cost_note ? g->cost_note : "");
                }
                fputc('\n', out);
        }
}
