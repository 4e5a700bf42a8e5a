/* The answer: the report's Trials grouped by its keys, and every number of
 * each group; grouped by arm, the paired differences between arms. */
#include <math.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "experiments/report_internal.h"
#include "experiments/stats.h"

const char *report_key_text(json_object *v, const char *none)
{
        return v ? json_object_get_string(v) : none;
}

static void cause_add(struct group *g, int kind, const char *cause)
{
        for (size_t i = 0; i < g->n_causes; i++)
                if (g->causes[i].kind == kind && strcmp(g->causes[i].cause, cause) == 0) {
                        g->causes[i].n++;
                        return;
                }
        g->causes = xrealloc(g->causes, (g->n_causes + 1) * sizeof *g->causes);
        g->causes[g->n_causes++] = (struct cause_count){ .kind = kind, .cause = xstrdup(cause), .n = 1 };
}

static struct task_tally *tally_get(struct group *g, const char *task)
{
        for (size_t i = 0; i < g->n_tasks; i++)
                if (strcmp(g->tasks[i].task, task) == 0)
                        return &g->tasks[i];
        g->tasks = xrealloc(g->tasks, (g->n_tasks + 1) * sizeof *g->tasks);
        g->tasks[g->n_tasks] = (struct task_tally){ .task = task };
        return &g->tasks[g->n_tasks++];
}

static int cmp_ll(const void *a, const void *b)
{
        long long x = *(const long long *)a, y = *(const long long *)b;
        return (x > y) - (x < y);
}

/* Nearest-rank percentile of the sorted durations; -1 when there are none. */
static long long percentile(const struct group *g, size_t p)
{
        if (g->n_durations == 0)
                return -1;
        size_t rank = (g->n_durations * p + 99) / 100;
        return g->durations[rank ? rank - 1 : 0];
}

/* Outcomes, causes, durations and usage: the run's side of the group. */
static void group_add_run(struct group *g, const struct trial_rec *t)
{
        g->trials++;
        g->by_kind[t->kind]++;
        if (t->cause)
                cause_add(g, t->kind, t->cause);
        if (t->duration_ms >= 0) {
                GREEDY_REALLOC(g->durations, g->cap_durations, g->n_durations + 1);
                g->durations[g->n_durations++] = t->duration_ms;
        }
        if (t->cpu_ms >= 0)
                g->cpu_ms = (g->cpu_ms < 0 ? 0 : g->cpu_ms) + t->cpu_ms;
        if (t->peak_memory > g->peak_memory_max)
                g->peak_memory_max = t->peak_memory;
}

/* The grade's side: counts, and the task's tally. */
static void group_add_grade(struct group *g, const struct trial_rec *t)
{
        if (t->grade == G_NONE)
                g->not_graded++;
        else if (t->grade == G_ERROR)
                g->grade_errors++;
        else if (t->grade == G_VOID)
                g->grade_void++;
        else
                g->graded++;
        g->passed += t->grade == G_PASSED;
        struct task_tally *tt = t->task ? tally_get(g, t->task) : NULL;
        if (tt && (t->grade == G_PASSED || t->grade == G_FAILED)) {
                tt->graded++;
                tt->passed += t->grade == G_PASSED;
        }
}

static void group_add_tokens(struct group *g, const struct rec_tokens *t)
{
        if (!t)
                return;
        g->token_trials++;
        g->tok.input += t->tok.input;
        g->tok.cached_input += t->tok.cached_input;
        g->tok.cache_write_input += t->tok.cache_write_input;
        g->tok.output += t->tok.output;
        g->tok.reasoning += t->tok.reasoning;
        g->tok.requests += t->tok.requests;
        for (size_t i = 0; i < t->models.n; i++)
                if (!strv_contains(&g->models, t->models.v[i]))
                        strv_add(&g->models, t->models.v[i]);
}

/* A Trial's cost into the group's, or why it cannot be known into `why`. */
static void group_add_cost(struct group *g, const struct report *r, const struct rec_tokens *t, struct strv *why)
{
        if (!t || !r->has_prices)
                return;
        const struct price *p = t->models.n == 1 ? prices_find(&r->prices, t->models.v[0]) : NULL;
        if (p) {
                g->cost_usd += price_cost(p, &t->tok);
                return;
        }
        g->cost_state = COST_UNKNOWN;
        char *reason = t->models.n == 0   ? xstrdup("a Trial's tokens name no model")
                       : t->models.n == 1 ? xasprintf("no price for model '%s'", t->models.v[0])
                                          : xstrdup("a Trial's tokens name several models and are not split by model");
        if (!strv_contains(why, reason))
                strv_add(why, reason);
        free(reason);
}

static void group_cost_state(struct group *g, const struct report *r, struct strv *why)
{
        if (!r->has_prices)
                g->cost_state = COST_NO_PRICES;
        else if (g->token_trials == 0)
                g->cost_state = COST_NO_TOKENS;
        else if (g->cost_state != COST_UNKNOWN)
                g->cost_state = COST_KNOWN;
        struct strbuf note = { 0 };
        if (g->cost_state == COST_NO_PRICES)
                strbuf_add(&note, "no --prices");
        else if (g->cost_state == COST_NO_TOKENS)
                strbuf_add(&note, "no Trial reported tokens");
        for (size_t i = 0; g->cost_state == COST_UNKNOWN && i < why->n; i++)
                strbuf_addf(&note, "%s%s", i ? "; " : "", why->v[i]);
        g->cost_note = note.s;
        if (g->cost_state != COST_KNOWN)
                g->cost_usd = 0;
}

/* Pass rate, mean score and pass@k from the counts and the scores. */
static void group_rates(struct group *g, const double *scores)
{
        if (g->graded > 0) {
                g->has_rate = true;
                g->pass_rate = (double)g->passed / (double)g->graded;
                g->has_rate_ci = stats_wilson95(g->passed, g->graded, &g->rate_low, &g->rate_high);
        }
        g->has_mean = g->scored > 0;
        g->has_mean_ci = stats_mean_t95(scores, g->scored, &g->mean_score, &g->mean_low, &g->mean_high);
        size_t k_max = 0;
        for (size_t i = 0; i < g->n_tasks; i++) {
                if (g->tasks[i].graded == 0)
                        continue;
                if (g->pass_at_k_tasks == 0 || g->tasks[i].graded < k_max)
                        k_max = g->tasks[i].graded;
                g->pass_at_k_tasks++;
        }
        g->k_max = k_max;
        g->pass_at_k = k_max ? xcalloc(k_max, sizeof(double)) : NULL;
        for (size_t k = 1; k <= k_max; k++) {
                double sum = 0;
                for (size_t i = 0; i < g->n_tasks; i++)
                        if (g->tasks[i].graded > 0)
                                sum += stats_pass_at_k(g->tasks[i].graded, g->tasks[i].passed, k);
                g->pass_at_k[k - 1] = sum / (double)g->pass_at_k_tasks;
        }
}

/* Every number of `g`, from the Trials of `r` in its keyset. */
static void group_compute(struct group *g, const struct report *r, size_t keyset)
{
        struct strv why = { 0 };
        double *scores = xcalloc(r->n + 1, sizeof(double));
        for (size_t i = 0; i < r->n; i++) {
                const struct trial_rec *t = &r->t[i];
                if (t->keyset != keyset)
                        continue;
                group_add_run(g, t);
                group_add_grade(g, t);
                if (t->has_score && (t->grade == G_PASSED || t->grade == G_FAILED))
                        scores[g->scored++] = t->score;
                group_add_tokens(g, t->tokens);
                group_add_cost(g, r, t->tokens, &why);
        }
        if (g->n_durations > 1)
                tb_qsort(g->durations, g->n_durations, sizeof(long long), cmp_ll);
        g->p50_ms = percentile(g, 50);
        g->p95_ms = percentile(g, 95);
        group_rates(g, scores);
        group_cost_state(g, r, &why);
        free(scores);
        strv_done(&why);
}

static const struct task_tally *tally_find(const struct group *g, const char *task)
{
        for (size_t i = 0; i < g->n_tasks; i++)
                if (strcmp(g->tasks[i].task, task) == 0 && g->tasks[i].graded > 0)
                        return &g->tasks[i];
        return NULL;
}

static void pair_leave_out(struct paired *p, const char *task, const char *graded_in)
{
        for (size_t i = 0; i < p->n_left_out; i++)
                if (strcmp(p->left_out[i].task, task) == 0)
                        return;
        p->left_out = xrealloc(p->left_out, (p->n_left_out + 1) * sizeof *p->left_out);
        p->left_out[p->n_left_out++] = (struct pair_left_out){ .task = task, .graded_in = graded_in };
}

/* Arm B against arm A over the tasks both have graded: per task the
 * difference of the two pass rates; their mean and its t-interval, within
 * [-1, 1]. */
static void pair_compute(struct paired *p, const struct group *a, const struct group *b)
{
        p->arm_a = report_key_text(a->keys[0], "");
        p->arm_b = report_key_text(b->keys[0], "");
        p->tasks = xcalloc(a->n_tasks + 1, sizeof *p->tasks);
        double *d = xcalloc(a->n_tasks + 1, sizeof(double));
        for (size_t i = 0; i < a->n_tasks; i++) {
                const struct task_tally *ta = &a->tasks[i], *tb = tally_find(b, ta->task);
                if (ta->graded == 0 || !tb) {
                        pair_leave_out(p, ta->task, ta->graded ? p->arm_a : tally_find(b, ta->task) ? p->arm_b : NULL);
                        continue;
                }
                struct pair_task *pt = &p->tasks[p->n_tasks];
                *pt = (struct pair_task){ .task = ta->task, .graded_a = ta->graded, .graded_b = tb->graded,
                                          .rate_a = (double)ta->passed / (double)ta->graded,
                                          .rate_b = (double)tb->passed / (double)tb->graded };
                d[p->n_tasks++] = pt->rate_b - pt->rate_a;
        }
        for (size_t i = 0; i < b->n_tasks; i++)
                if (!tally_find(a, b->tasks[i].task))
                        pair_leave_out(p, b->tasks[i].task, b->tasks[i].graded ? p->arm_b : NULL);
        p->has_diff = p->n_tasks > 0;
        p->has_ci = stats_mean_t95(d, p->n_tasks, &p->diff, &p->low, &p->high);
        if (p->has_ci) {
                p->low = p->low > -1 ? p->low : -1;
                p->high = p->high < 1 ? p->high : 1;
        }
        free(d);
}

/* Grouped by arm alone: each arm (that has a name) against the first. */
static void answer_pairs(struct answer *a)
{
        const struct group *first = NULL;
        a->pairs = xcalloc(a->n + 1, sizeof *a->pairs);
        for (size_t i = 0; i < a->n; i++) {
                if (!a->g[i].keys[0])
                        continue;
                if (!first)
                        first = &a->g[i];
                else
                        pair_compute(&a->pairs[a->n_pairs++], first, &a->g[i]);
        }
}

void answer_build(struct answer *a, const struct report *r)
{
        /* One group per keyset, in the order the lines brought them. */
        *a = (struct answer){ .r = r, .n = r->n_keysets };
        a->g = xcalloc(a->n + 1, sizeof *a->g);
        for (size_t j = 0; j < a->n; j++) {
                a->g[j] = (struct group){ .keys = r->keysets[j], .cpu_ms = -1, .peak_memory_max = -1 };
                group_compute(&a->g[j], r, j);
                if (a->g[j].k_max > a->k_max)
                        a->k_max = a->g[j].k_max;
        }
        a->by_arm = r->by.n == 1 && strcmp(r->by.v[0], "arm") == 0;
        if (a->by_arm)
                answer_pairs(a);
}

void answer_done(struct answer *a)
{
        for (size_t i = 0; i < a->n; i++) {
                struct group *g = &a->g[i];
                free(g->durations);
                for (size_t k = 0; k < g->n_causes; k++)
                        free(g->causes[k].cause);
                free(g->causes);
                free(g->tasks);
                free(g->pass_at_k);
                strv_done(&g->models);
                free(g->cost_note);
        }
        free(a->g);
        for (size_t i = 0; i < a->n_pairs; i++) {
                free(a->pairs[i].tasks);
                free(a->pairs[i].left_out);
        }
        free(a->pairs);
        *a = (struct answer){ 0 };
}
