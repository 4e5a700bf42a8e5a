#define _GNU_SOURCE
#include "experiments/report.h"

#include <json-c/json.h>
#include <string.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/str.h"
#include "base/strbuf.h"

enum { K_COMPLETED, K_FAILED, K_VOID, K_NOT_RUN, K_OTHER, K_COUNT };
static const char *const kind_names[K_COUNT] = { "completed", "failed", "void", "not_run", "other" };

struct cause_count {
        int kind;
        char *cause;
        size_t n;
};

struct harness_stats {
        char *name;
        size_t trials, by_kind[K_COUNT];
        long long *durations; /* of the Trials that ran (completed, failed) */
        size_t n_durations, cap_durations;
        long long cpu_ms;           /* user + system, summed over the Trials that report it */
        size_t cpu_known;
        long long peak_memory_max;  /* the largest peak; -1: none known */
        struct cause_count *causes;
        size_t n_causes;
};

struct report {
        struct harness_stats *h;
        size_t n;
};

struct report *report_new(void) { return xcalloc(1, sizeof(struct report)); }

void report_free(struct report *r)
{
        if (!r)
                return;
        for (size_t i = 0; i < r->n; i++) {
                struct harness_stats *h = &r->h[i];
                free(h->name);
                free(h->durations);
                for (size_t k = 0; k < h->n_causes; k++)
                        free(h->causes[k].cause);
                free(h->causes);
        }
        free(r->h);
        free(r);
}

static struct harness_stats *harness_get(struct report *r, const char *name)
{
        for (size_t i = 0; i < r->n; i++)
                if (strcmp(r->h[i].name, name) == 0)
                        return &r->h[i];
        r->h = xrealloc(r->h, (r->n + 1) * sizeof *r->h);
        struct harness_stats *h = &r->h[r->n++];
        *h = (struct harness_stats){ .name = xstrdup(name), .peak_memory_max = -1 };
        return h;
}

static void cause_add(struct harness_stats *h, int kind, const char *cause)
{
        for (size_t i = 0; i < h->n_causes; i++)
                if (h->causes[i].kind == kind && strcmp(h->causes[i].cause, cause) == 0) {
                        h->causes[i].n++;
                        return;
                }
        h->causes = xrealloc(h->causes, (h->n_causes + 1) * sizeof *h->causes);
        h->causes[h->n_causes++] = (struct cause_count){ .kind = kind, .cause = xstrdup(cause), .n = 1 };
}

static json_object *get(json_object *o, const char *key)
{
        json_object *v = NULL;
        return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static long long get_count(json_object *o, const char *key)
{
        json_object *v = get(o, key);
        return v && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))
                       ? json_object_get_int64(v)
                       : -1;
}

static int kind_of(const char *s)
{
        if (!s)
                return K_NOT_RUN;
        for (int k = 0; k < K_NOT_RUN; k++)
                if (strcmp(s, kind_names[k]) == 0)
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

static void add_usage(struct harness_stats *h, json_object *usage)
{
        long long user = get_count(usage, "cpu_user_ms"), sys = get_count(usage, "cpu_system_ms");
        if (user >= 0 || sys >= 0) {
                h->cpu_ms += (user > 0 ? user : 0) + (sys > 0 ? sys : 0);
                h->cpu_known++;
        }
        long long peak = get_count(usage, "peak_memory_bytes");
        if (peak > h->peak_memory_max)
                h->peak_memory_max = peak;
}

int report_add_line(struct report *r, const char *line, struct tb_error *err)
{
        json_object *j = json_tokener_parse(line);
        if (!j || !json_object_is_type(j, json_type_object)) {
                json_object_put(j);
                return tb_fail(err, -EINVAL, "not a JSON object");
        }
        json_object *hv = get(j, "harness"), *ov = get(j, "outcome");
        const char *harness = hv && json_object_is_type(hv, json_type_string) ? json_object_get_string(hv) : "?";
        int kind = kind_of(ov && json_object_is_type(ov, json_type_string) ? json_object_get_string(ov) : NULL);
        struct harness_stats *h = harness_get(r, harness);
        h->trials++;
        h->by_kind[kind]++;
        if (kind == K_FAILED || kind == K_VOID)
                cause_add(h, kind, cause_of(j, kind));
        long long d = get_count(j, "duration_ms");
        if ((kind == K_COMPLETED || kind == K_FAILED) && d >= 0) {
                GREEDY_REALLOC(h->durations, h->cap_durations, h->n_durations + 1);
                h->durations[h->n_durations++] = d;
        }
        add_usage(h, get(j, "usage"));
        json_object_put(j);
        return 0;
}

int report_read(struct report *r, const char *path, struct tb_error *err)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return tb_fail(err, -errno, "cannot read the results '%s': %s", path, strerror(errno));
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        unsigned no = 0;
        int ret = 0;
        while (getline(&line, &cap, f) >= 0) {
                no++;
                if (strspn(line, " \t\r\n") == strlen(line))
                        continue;
                if (report_add_line(r, line, err) < 0) {
                        ret = tb_fail(err, -EINVAL, "%s:%u: not a results line (a JSON object); is it a results.jsonl?",
                                      path, no);
                        break;
                }
        }
        return ret;
}

static int cmp_ll(const void *a, const void *b)
{
        long long x = *(const long long *)a, y = *(const long long *)b;
        return (x > y) - (x < y);
}

/* Nearest-rank percentile of the sorted durations; -1 when there are none. */
static long long percentile(const struct harness_stats *h, int p)
{
        if (h->n_durations == 0)
                return -1;
        size_t rank = (h->n_durations * (size_t)p + 99) / 100;
        return h->durations[rank ? rank - 1 : 0];
}

static void sort_durations(const struct report *r)
{
        for (size_t i = 0; i < r->n; i++)
                if (r->h[i].n_durations > 1)
                        qsort(r->h[i].durations, r->h[i].n_durations, sizeof(long long), cmp_ll);
}

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

static void print_text(const struct report *r, FILE *out)
{
        char a[32], b[32], c[32], d[32];
        fprintf(out, "%-12s %6s %9s %6s %5s %7s %8s %8s %8s %9s\n", "harness", "trials", "completed", "failed",
                "void", "not_run", "p50", "p95", "cpu", "peak_mem");
        for (size_t i = 0; i < r->n; i++) {
                const struct harness_stats *h = &r->h[i];
                _cleanup_free_ char *name = str_escape((h->name));
                fprintf(out, "%-12s %6zu %9zu %6zu %5zu %7zu %8s %8s %8s %9s\n", name, h->trials,
                        h->by_kind[K_COMPLETED], h->by_kind[K_FAILED], h->by_kind[K_VOID], h->by_kind[K_NOT_RUN],
                        fmt_ms(percentile(h, 50), a, sizeof a), fmt_ms(percentile(h, 95), b, sizeof b),
                        fmt_ms(h->cpu_known ? h->cpu_ms : -1, c, sizeof c), fmt_bytes(h->peak_memory_max, d, sizeof d));
        }
        bool any = false;
        for (size_t i = 0; i < r->n; i++)
                for (size_t k = 0; k < r->h[i].n_causes; k++) {
                        const struct cause_count *cc = &r->h[i].causes[k];
                        _cleanup_free_ char *name = str_escape((r->h[i].name));
                        _cleanup_free_ char *cause = str_escape((cc->cause));
                        fprintf(out, "%s%s %s/%s %zu", any ? ", " : "causes: ", name, kind_names[cc->kind], cause,
                                cc->n);
                        any = true;
                }
        if (any)
                fputc('\n', out);
}

static json_object *ms_or_null(long long v) { return v >= 0 ? json_object_new_int64(v) : NULL; }

static void print_json(const struct report *r, FILE *out)
{
        json_object *arr = json_object_new_array();
        for (size_t i = 0; i < r->n; i++) {
                const struct harness_stats *h = &r->h[i];
                json_object *o = json_object_new_object(), *causes = json_object_new_array();
                json_object_object_add(o, "harness", json_object_new_string(h->name));
                json_object_object_add(o, "trials", json_object_new_int64((long long)h->trials));
                for (int k = 0; k < K_OTHER; k++)
                        json_object_object_add(o, kind_names[k], json_object_new_int64((long long)h->by_kind[k]));
                json_object_object_add(o, "duration_p50_ms", ms_or_null(percentile(h, 50)));
                json_object_object_add(o, "duration_p95_ms", ms_or_null(percentile(h, 95)));
                json_object_object_add(o, "cpu_ms", ms_or_null(h->cpu_known ? h->cpu_ms : -1));
                json_object_object_add(o, "peak_memory_max_bytes", ms_or_null(h->peak_memory_max));
                for (size_t k = 0; k < h->n_causes; k++) {
                        json_object *c = json_object_new_object();
                        json_object_object_add(c, "outcome", json_object_new_string(kind_names[h->causes[k].kind]));
                        json_object_object_add(c, "cause", json_object_new_string(h->causes[k].cause));
                        json_object_object_add(c, "count", json_object_new_int64((long long)h->causes[k].n));
                        json_object_array_add(causes, c);
                }
                json_object_object_add(o, "causes", causes);
                json_object_array_add(arr, o);
        }
        json_object *top = json_object_new_object();
        json_object_object_add(top, "harnesses", arr);
        fprintf(out, "%s\n", json_object_to_json_string_ext(top, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(top);
}

/* A CSV field: quoted when it holds a separator, quote or newline. */
static void csv_field(FILE *out, const char *s)
{
        if (!strpbrk(s, ",\"\r\n")) {
                fputs(s, out);
                return;
        }
        fputc('"', out);
        for (; *s; s++) {
                if (*s == '"')
                        fputc('"', out);
                fputc(*s, out);
        }
        fputc('"', out);
}

static void csv_num(FILE *out, long long v)
{
        if (v >= 0)
                fprintf(out, ",%lld", v);
        else
                fputc(',', out);
}

static void print_csv(const struct report *r, FILE *out)
{
        fputs("harness,trials,completed,failed,void,not_run,duration_p50_ms,duration_p95_ms,cpu_ms,"
              "peak_memory_max_bytes,causes\n",
              out);
        for (size_t i = 0; i < r->n; i++) {
                const struct harness_stats *h = &r->h[i];
                csv_field(out, h->name);
                fprintf(out, ",%zu,%zu,%zu,%zu,%zu", h->trials, h->by_kind[K_COMPLETED], h->by_kind[K_FAILED],
                        h->by_kind[K_VOID], h->by_kind[K_NOT_RUN]);
                csv_num(out, percentile(h, 50));
                csv_num(out, percentile(h, 95));
                csv_num(out, h->cpu_known ? h->cpu_ms : -1);
                csv_num(out, h->peak_memory_max);
                struct strbuf causes = { 0 };
                for (size_t k = 0; k < h->n_causes; k++)
                        strbuf_addf(&causes, "%s%s/%s=%zu", k ? " " : "", kind_names[h->causes[k].kind],
                                    h->causes[k].cause, h->causes[k].n);
                fputc(',', out);
                csv_field(out, causes.s ? causes.s : "");
                fputc('\n', out);
                free(causes.s);
        }
}

void report_print(const struct report *r, enum report_format format, FILE *out)
{
        sort_durations(r);
        if (format == REPORT_JSON)
                print_json(r, out);
        else if (format == REPORT_CSV)
                print_csv(r, out);
        else
                print_text(r, out);
}
