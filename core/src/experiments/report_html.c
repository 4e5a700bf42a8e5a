/* The answer as one self-contained HTML page: inline CSS and SVG, no script,
 * nothing fetched (its Content-Security-Policy forbids both). Every string
 * from the results (arm, task and label names, causes, models) is written
 * through html_escape(); the page's own numbers through printf. */
#define _GNU_SOURCE
#include <string.h>

#include "base/macro.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "experiments/report_internal.h"

/* `s` as HTML text or attribute value: & < > " ' as entities. */
static void html_escape(struct strbuf *sb, const char *s)
{
        for (const char *p = s; *p; p++) {
                switch (*p) {
                case '&': strbuf_add(sb, "&amp;"); break;
                case '<': strbuf_add(sb, "&lt;"); break;
                case '>': strbuf_add(sb, "&gt;"); break;
                case '"': strbuf_add(sb, "&quot;"); break;
                case '\'': strbuf_add(sb, "&#39;"); break;
                default: {
                        char c[2] = { *p, '\0' };
                        strbuf_add(sb, c);
                }
                }
        }
}

static const char page_style[] =
        "body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1d2330;background:#f6f7f9;"
        "margin:0;padding:24px 32px 48px}"
        "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:0 0 12px}"
        ".sub{color:#5b6475;margin:0 0 20px}"
        "section{background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:16px 20px;margin:0 0 18px;"
        "overflow-x:auto}"
        "table{border-collapse:collapse;font-variant-numeric:tabular-nums}"
        "th,td{padding:4px 10px;text-align:right;border-bottom:1px solid #eceef2;white-space:nowrap}"
        "th{font-weight:600;color:#3a4252;background:#f2f4f7}"
        "th.k,td.k{text-align:left}"
        ".chart td{border:none;padding:3px 8px}"
        ".chart svg{display:block}"
        ".chart td:last-child{white-space:normal;min-width:16em}"
        ".grid td{text-align:center;min-width:56px;border:1px solid #fff}"
        ".grid td.none{background:#eef0f3;color:#8a93a3}"
        ".grid td.k{text-align:left;min-width:0}"
        "#numbers table{font-size:13px}"
        ".note{color:#5b6475;font-size:13px;margin:8px 0 0}"
        ".diff{font-size:16px;margin:0 0 8px}"
        "footer{color:#5b6475;font-size:13px;max-width:60em}";

static void page_begin(struct strbuf *sb, const struct answer *a)
{
        strbuf_add(sb, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                       "style-src 'unsafe-inline'\">\n"
                       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>trialbox report");
        if (a->r->source) {
                strbuf_add(sb, ": ");
                html_escape(sb, a->r->source);
        }
        strbuf_addf(sb, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>Experiment report</h1>\n<p class=\"sub\">",
                    page_style);
        if (a->r->source) {
                html_escape(sb, a->r->source);
                strbuf_add(sb, " &middot; ");
        }
        strbuf_addf(sb, "%zu Trials &middot; %zu groups, by ", a->r->n, a->n);
        for (size_t k = 0; k < a->r->by.n; k++) {
                strbuf_add(sb, k ? ", " : "");
                html_escape(sb, a->r->by.v[k]);
        }
        strbuf_add(sb, "</p>\n");
}

/* A group's name: its keys, joined. */
static void group_label(struct strbuf *sb, const struct answer *a, const struct group *g)
{
        for (size_t k = 0; k < a->r->by.n; k++) {
                strbuf_add(sb, k ? " &middot; " : "");
                html_escape(sb, report_key_text(g->keys[k], "(none)"));
        }
}

static void keys_header(struct strbuf *sb, const struct answer *a)
{
        for (size_t k = 0; k < a->r->by.n; k++) {
                strbuf_add(sb, "<th class=\"k\">");
                html_escape(sb, a->r->by.v[k]);
                strbuf_add(sb, "</th>");
        }
}

static void keys_cells(struct strbuf *sb, const struct answer *a, const struct group *g)
{
        for (size_t k = 0; k < a->r->by.n; k++) {
                strbuf_add(sb, "<td class=\"k\">");
                html_escape(sb, report_key_text(g->keys[k], "(none)"));
                strbuf_add(sb, "</td>");
        }
}

/* The colour of a pass rate: red at 0, amber at 0.5, green at 1. */
static void rate_colour(struct strbuf *sb, double rate)
{
        strbuf_addf(sb, "hsl(%.0f,65%%,78%%)", rate * 120);
}

#define BAR_W 360.0

/* A bar of `frac` (of BAR_W) with an error bar from lo to hi. */
static void svg_bar(struct strbuf *sb, double frac, bool ci, double lo, double hi, const char *title)
{
        strbuf_addf(sb, "<svg width=\"%.0f\" height=\"22\" viewBox=\"0 0 %.0f 22\" role=\"img\"><title>%s</title>"
                        "<rect x=\"0\" y=\"3\" width=\"%.0f\" height=\"16\" fill=\"#eef0f3\"/>",
                    BAR_W + 8, BAR_W + 8, title, BAR_W);
        for (int q = 1; q < 4; q++)
                strbuf_addf(sb, "<line x1=\"%.1f\" y1=\"1\" x2=\"%.1f\" y2=\"21\" stroke=\"#d3d8e0\"/>", BAR_W * q / 4,
                            BAR_W * q / 4);
        strbuf_addf(sb, "<rect x=\"0\" y=\"3\" width=\"%.1f\" height=\"16\" fill=\"#4c78a8\"/>", frac * BAR_W);
        if (ci) {
                double x1 = lo * BAR_W, x2 = hi * BAR_W;
                strbuf_addf(sb,
                            "<g stroke=\"#1d2330\" stroke-width=\"1.6\"><line x1=\"%.1f\" y1=\"11\" x2=\"%.1f\" y2=\"11\"/>"
                            "<line x1=\"%.1f\" y1=\"5\" x2=\"%.1f\" y2=\"17\"/><line x1=\"%.1f\" y1=\"5\" x2=\"%.1f\" "
                            "y2=\"17\"/></g>",
                            x1, x2, x1, x1, x2, x2);
        }
        strbuf_add(sb, "</svg>");
}

static void section_pass_rates(struct strbuf *sb, const struct answer *a)
{
        strbuf_add(sb, "<section id=\"pass-rates\">\n<h2>Pass rate per ");
        html_escape(sb, a->r->by.n == 1 ? a->r->by.v[0] : "group");
        strbuf_add(sb, "</h2>\n");
        if (!a->r->any_grade) {
                strbuf_add(sb, "<p>No results line has a grade: no pass rates.</p>\n</section>\n");
                return;
        }
        strbuf_add(sb, "<table class=\"chart\">\n");
        for (size_t i = 0; i < a->n; i++) {
                const struct group *g = &a->g[i];
                strbuf_add(sb, "<tr><td class=\"k\">");
                group_label(sb, a, g);
                strbuf_add(sb, "</td><td>");
                svg_bar(sb, g->has_rate ? g->pass_rate : 0, g->has_rate_ci, g->rate_low, g->rate_high,
                        "pass rate and its Wilson 95% interval");
                if (g->has_rate)
                        strbuf_addf(sb, "</td><td class=\"k\"><b>%.3f</b> [%.3f, %.3f] &middot; %zu/%zu passed</td></tr>\n",
                                    g->pass_rate, g->rate_low, g->rate_high, g->passed, g->graded);
                else
                        strbuf_add(sb, "</td><td class=\"k\">no graded Trial</td></tr>\n");
        }
        strbuf_add(sb, "</table>\n<p class=\"note\">Bars: passed / graded (passed or failed; a grader's error or "
                       "void is not graded). Whiskers: the Wilson score 95% interval. Lines at 0.25, 0.5, 0.75.</p>\n"
                       "</section>\n");
}

/* The difference and its interval on a -1…1 axis, 0 in the middle. */
static void svg_diff(struct strbuf *sb, const struct paired *p)
{
        double mid = BAR_W / 2, x = mid + p->diff * mid;
        strbuf_addf(sb, "<svg width=\"%.0f\" height=\"34\" role=\"img\"><title>difference and its 95%% interval</title>"
                        "<line x1=\"0\" y1=\"14\" x2=\"%.0f\" y2=\"14\" stroke=\"#d3d8e0\"/>"
                        "<line x1=\"%.0f\" y1=\"2\" x2=\"%.0f\" y2=\"26\" stroke=\"#8a93a3\"/>",
                    BAR_W + 8, BAR_W, mid, mid);
        if (p->has_ci)
                strbuf_addf(sb, "<line x1=\"%.1f\" y1=\"14\" x2=\"%.1f\" y2=\"14\" stroke=\"#1d2330\" stroke-width=\"2\"/>",
                            mid + p->low * mid, mid + p->high * mid);
        strbuf_addf(sb, "<circle cx=\"%.1f\" cy=\"14\" r=\"5\" fill=\"#4c78a8\"/>"
                        "<text x=\"0\" y=\"32\" font-size=\"10\" fill=\"#5b6475\">-1</text>"
                        "<text x=\"%.0f\" y=\"32\" font-size=\"10\" fill=\"#5b6475\">0</text>"
                        "<text x=\"%.0f\" y=\"32\" font-size=\"10\" fill=\"#5b6475\">+1</text></svg>",
                    x, mid - 3, BAR_W - 12);
}

static void paired_sentence(struct strbuf *sb, const struct paired *p)
{
        strbuf_add(sb, "<p class=\"diff\"><b>");
        html_escape(sb, p->arm_b);
        strbuf_add(sb, "</b> &minus; <b>");
        html_escape(sb, p->arm_a);
        strbuf_add(sb, "</b>: ");
        if (!p->has_diff)
                strbuf_add(sb, "no task is graded in both arms");
        else if (!p->has_ci)
                strbuf_addf(sb, "%+.3f over 1 task (an interval needs 2 tasks)", p->diff);
        else
                strbuf_addf(sb, "%+.3f, 95%% interval [%+.3f, %+.3f], over %zu tasks%s", p->diff, p->low, p->high,
                            p->n_tasks,
                            p->low == p->high ? " (every task's difference is the same: an interval of no width "
                                                "says little)"
                                              : "");
        strbuf_add(sb, "</p>\n");
        if (p->n_left_out) {
                strbuf_add(sb, "<p class=\"note\">Left out: ");
                for (size_t i = 0; i < p->n_left_out; i++) {
                        strbuf_add(sb, i ? ", " : "");
                        html_escape(sb, p->left_out[i].task);
                        strbuf_add(sb, p->left_out[i].graded_in ? " (graded only in " : " (graded in neither");
                        if (p->left_out[i].graded_in)
                                html_escape(sb, p->left_out[i].graded_in);
                        strbuf_add(sb, ")");
                }
                strbuf_add(sb, "</p>\n");
        }
}

/* Per task: each arm's pass rate and the difference. */
static void paired_tasks(struct strbuf *sb, const struct paired *p)
{
        strbuf_add(sb, "<table class=\"pairs\">\n<tr><th class=\"k\">task</th><th>");
        html_escape(sb, p->arm_a);
        strbuf_add(sb, "</th><th>");
        html_escape(sb, p->arm_b);
        strbuf_add(sb, "</th><th>difference</th></tr>\n");
        for (size_t i = 0; i < p->n_tasks; i++) {
                const struct pair_task *t = &p->tasks[i];
                strbuf_add(sb, "<tr><td class=\"k\">");
                html_escape(sb, t->task);
                strbuf_addf(sb, "</td><td>%.3f (%zu)</td><td>%.3f (%zu)</td><td>%+.3f</td></tr>\n", t->rate_a,
                            t->graded_a, t->rate_b, t->graded_b, t->rate_b - t->rate_a);
        }
        strbuf_add(sb, "</table>\n");
}

static void section_paired(struct strbuf *sb, const struct answer *a)
{
        if (!a->by_arm || !a->r->any_grade || a->n_pairs == 0)
                return;
        strbuf_add(sb, "<section id=\"paired\">\n<h2>Paired difference in pass rate</h2>\n");
        for (size_t i = 0; i < a->n_pairs; i++) {
                paired_sentence(sb, &a->pairs[i]);
                if (a->pairs[i].has_diff) {
                        svg_diff(sb, &a->pairs[i]);
                        paired_tasks(sb, &a->pairs[i]);
                }
        }
        strbuf_add(sb, "<p class=\"note\">Per task both arms have graded: the difference of the two arms' pass "
                       "rates on it (in brackets: its graded Trials); the mean over those tasks, and a t-interval "
                       "over tasks (within -1 and 1).</p>\n"
                       "</section>\n");
}

/* The tasks of every group, in the order first seen. */
static void all_tasks(const struct answer *a, struct strv *tasks)
{
        for (size_t i = 0; i < a->n; i++)
                for (size_t t = 0; t < a->g[i].n_tasks; t++)
                        if (!strv_contains(tasks, a->g[i].tasks[t].task))
                                strv_add(tasks, a->g[i].tasks[t].task);
}

static void grid_cell(struct strbuf *sb, const struct group *g, const char *task)
{
        const struct task_tally *tt = NULL;
        for (size_t t = 0; t < g->n_tasks && !tt; t++)
                if (strcmp(g->tasks[t].task, task) == 0)
                        tt = &g->tasks[t];
        if (!tt || tt->graded == 0) {
                strbuf_add(sb, "<td class=\"none\">&ndash;</td>");
                return;
        }
        double rate = (double)tt->passed / (double)tt->graded;
        strbuf_add(sb, "<td style=\"background:");
        rate_colour(sb, rate);
        strbuf_addf(sb, "\" title=\"pass rate %.3f\">%zu/%zu</td>", rate, tt->passed, tt->graded);
}

static void section_grid(struct strbuf *sb, const struct answer *a)
{
        struct strv tasks = { 0 };
        all_tasks(a, &tasks);
        if (!a->r->any_grade || tasks.n == 0) {
                strv_done(&tasks);
                return;
        }
        strbuf_add(sb, "<section id=\"grid\">\n<h2>");
        html_escape(sb, a->r->by.n == 1 ? a->r->by.v[0] : "group");
        strbuf_add(sb, " &times; task</h2>\n<table class=\"grid\">\n<tr>");
        keys_header(sb, a);
        for (size_t t = 0; t < tasks.n; t++) {
                strbuf_add(sb, "<th>");
                html_escape(sb, tasks.v[t]);
                strbuf_add(sb, "</th>");
        }
        strbuf_add(sb, "</tr>\n");
        for (size_t i = 0; i < a->n; i++) {
                strbuf_add(sb, "<tr>");
                keys_cells(sb, a, &a->g[i]);
                for (size_t t = 0; t < tasks.n; t++)
                        grid_cell(sb, &a->g[i], tasks.v[t]);
                strbuf_add(sb, "</tr>\n");
        }
        strbuf_add(sb, "</table>\n<p class=\"note\">Each cell: passed/graded Trials of that task, coloured by its pass "
                       "rate (red 0, amber 0.5, green 1); &ndash;: none graded.</p>\n</section>\n");
        strv_done(&tasks);
}

static void fmt_duration(struct strbuf *sb, long long ms)
{
        if (ms < 0)
                strbuf_add(sb, "&ndash;");
        else if (ms < 1000)
                strbuf_addf(sb, "%lld ms", ms);
        else if (ms < 600000)
                strbuf_addf(sb, "%.1f s", (double)ms / 1000);
        else
                strbuf_addf(sb, "%.1f min", (double)ms / 60000);
}

static void section_durations(struct strbuf *sb, const struct answer *a)
{
        long long longest = 0;
        for (size_t i = 0; i < a->n; i++)
                if (a->g[i].p95_ms > longest)
                        longest = a->g[i].p95_ms;
        strbuf_add(sb, "<section id=\"durations\">\n<h2>Durations and usage</h2>\n<table class=\"chart\">\n");
        for (size_t i = 0; i < a->n && longest > 0; i++) {
                const struct group *g = &a->g[i];
                strbuf_add(sb, "<tr><td class=\"k\">");
                group_label(sb, a, g);
                strbuf_add(sb, "</td><td>");
                svg_bar(sb, g->p50_ms > 0 ? (double)g->p50_ms / (double)longest : 0, g->p95_ms >= 0,
                        g->p50_ms > 0 ? (double)g->p50_ms / (double)longest : 0,
                        g->p95_ms > 0 ? (double)g->p95_ms / (double)longest : 0, "duration p50, whisker to p95");
                strbuf_add(sb, "</td><td class=\"k\">p50 ");
                fmt_duration(sb, g->p50_ms);
                strbuf_add(sb, " &middot; p95 ");
                fmt_duration(sb, g->p95_ms);
                strbuf_add(sb, " &middot; CPU ");
                fmt_duration(sb, g->cpu_ms);
                if (g->peak_memory_max >= 0)
                        strbuf_addf(sb, " &middot; peak memory %.1f MiB", (double)g->peak_memory_max / 1048576.0);
                strbuf_add(sb, "</td></tr>\n");
        }
        strbuf_add(sb, "</table>\n");
        if (longest <= 0)
                strbuf_add(sb, "<p>No Trial that ran records a duration.</p>\n");
        else
                strbuf_add(sb, "<p class=\"note\">Bars: the median duration of the Trials that ran; whiskers to "
                               "the 95th percentile. CPU: user + system, summed.</p>\n");
        strbuf_add(sb, "</section>\n");
}

static void cost_cell(struct strbuf *sb, const struct group *g)
{
        if (g->cost_state == COST_KNOWN) {
                strbuf_addf(sb, "<td>$%.4f</td>", g->cost_usd);
                return;
        }
        strbuf_add(sb, "<td title=\"");
        html_escape(sb, g->cost_note ? g->cost_note : "");
        strbuf_add(sb, g->cost_state == COST_UNKNOWN ? "\">unknown</td>" : "\">&ndash;</td>");
}

static void section_tokens(struct strbuf *sb, const struct answer *a)
{
        if (!a->r->any_tokens && !a->r->has_prices)
                return;
        strbuf_add(sb, "<section id=\"tokens\">\n<h2>Tokens and cost</h2>\n<table>\n<tr>");
        keys_header(sb, a);
        strbuf_add(sb, "<th>Trials with tokens</th><th>input</th><th>cached input</th><th>output</th>"
                       "<th>reasoning</th><th>requests</th><th class=\"k\">models</th>");
        if (a->r->has_prices)
                strbuf_add(sb, "<th>cost (USD)</th>");
        strbuf_add(sb, "</tr>\n");
        for (size_t i = 0; i < a->n; i++) {
                const struct group *g = &a->g[i];
                strbuf_add(sb, "<tr>");
                keys_cells(sb, a, g);
                strbuf_addf(sb, "<td>%zu</td><td>%lld</td><td>%lld</td><td>%lld</td><td>%lld</td><td>%lld</td>"
                                "<td class=\"k\">",
                            g->token_trials, g->tok.input, g->tok.cached_input, g->tok.output, g->tok.reasoning,
                            g->tok.requests);
                for (size_t m = 0; m < g->models.n; m++) {
                        strbuf_add(sb, m ? ", " : "");
                        html_escape(sb, g->models.v[m]);
                }
                strbuf_add(sb, "</td>");
                if (a->r->has_prices)
                        cost_cell(sb, g);
                strbuf_add(sb, "</tr>\n");
        }
        strbuf_add(sb, "</table>\n");
        for (size_t i = 0; a->r->has_prices && i < a->n; i++) {
                if (a->g[i].cost_state != COST_UNKNOWN)
                        continue;
                strbuf_add(sb, "<p class=\"note\">Cost unknown for ");
                group_label(sb, a, &a->g[i]);
                strbuf_add(sb, ": ");
                html_escape(sb, a->g[i].cost_note);
                strbuf_add(sb, ".</p>\n");
        }
        strbuf_add(sb, "</section>\n");
}

static void num_cell(struct strbuf *sb, bool known, double v)
{
        if (known)
                strbuf_addf(sb, "<td>%.3f</td>", v);
        else
                strbuf_add(sb, "<td>&ndash;</td>");
}

static void ci_cell(struct strbuf *sb, bool known, double lo, double hi)
{
        if (known)
                strbuf_addf(sb, "<td>[%.3f, %.3f]</td>", lo, hi);
        else
                strbuf_add(sb, "<td>&ndash;</td>");
}

static void numbers_row(struct strbuf *sb, const struct answer *a, const struct group *g)
{
        strbuf_add(sb, "<tr>");
        keys_cells(sb, a, g);
        strbuf_addf(sb, "<td>%zu</td><td>%zu</td><td>%zu</td><td>%zu</td><td>%zu</td><td>%zu</td><td>%zu</td>",
                    g->trials, g->by_kind[K_COMPLETED], g->by_kind[K_FAILED], g->by_kind[K_VOID],
                    g->by_kind[K_NOT_RUN], g->graded, g->passed);
        num_cell(sb, g->has_rate, g->pass_rate);
        ci_cell(sb, g->has_rate_ci, g->rate_low, g->rate_high);
        num_cell(sb, g->has_mean, g->mean_score);
        ci_cell(sb, g->has_mean_ci, g->mean_low, g->mean_high);
        for (size_t k = 1; k <= a->k_max; k++)
                num_cell(sb, k <= g->k_max, k <= g->k_max ? g->pass_at_k[k - 1] : 0);
        const long long ms[] = { g->p50_ms, g->p95_ms, g->cpu_ms };
        for (size_t i = 0; i < TB_ARRAY_SIZE(ms); i++) {
                strbuf_add(sb, "<td>");
                fmt_duration(sb, ms[i]);
                strbuf_add(sb, "</td>");
        }
        if (g->peak_memory_max >= 0)
                strbuf_addf(sb, "<td>%.1f MiB</td>", (double)g->peak_memory_max / 1048576.0);
        else
                strbuf_add(sb, "<td>&ndash;</td>");
        strbuf_add(sb, "</tr>\n");
}

static void section_numbers(struct strbuf *sb, const struct answer *a)
{
        strbuf_add(sb, "<section id=\"numbers\">\n<h2>The numbers</h2>\n<table>\n<tr>");
        keys_header(sb, a);
        strbuf_add(sb, "<th>Trials</th><th>completed</th><th>failed</th><th>void</th><th>not run</th><th>graded</th>"
                       "<th>passed</th><th>pass rate</th><th>95% CI</th><th>mean score</th><th>95% CI</th>");
        for (size_t k = 1; k <= a->k_max; k++)
                strbuf_addf(sb, "<th>pass@%zu</th>", k);
        strbuf_add(sb, "<th>p50</th><th>p95</th><th>CPU</th><th>peak memory</th></tr>\n");
        for (size_t i = 0; i < a->n; i++)
                numbers_row(sb, a, &a->g[i]);
        strbuf_add(sb, "</table>\n");
        for (size_t i = 0; i < a->n; i++) {
                const struct group *g = &a->g[i];
                if (g->n_causes == 0)
                        continue;
                strbuf_add(sb, "<p class=\"note\">Causes, ");
                group_label(sb, a, g);
                strbuf_add(sb, ": ");
                for (size_t k = 0; k < g->n_causes; k++) {
                        strbuf_addf(sb, "%s%s/", k ? ", " : "", report_kind_names[g->causes[k].kind]);
                        html_escape(sb, g->causes[k].cause);
                        strbuf_addf(sb, " %zu", g->causes[k].n);
                }
                strbuf_add(sb, "</p>\n");
        }
        strbuf_add(sb, "</section>\n");
}

static const char page_footer[] =
        "<footer>Pass rate: passed / graded, with the Wilson score 95% interval. Mean score: over the graded "
        "Trials with a score, with a t-interval. pass@k: the unbiased estimator of Chen et al. (2021), averaged "
        "over the tasks with a graded Trial, for k up to the fewest graded Trials of any of them. Written by "
        "<code>trialbox report</code>; docs/experiments.md, &ldquo;The answer&rdquo;, says more.</footer>\n";

char *report_html(const struct answer *a)
{
        struct strbuf sb = { 0 };
        page_begin(&sb, a);
        section_pass_rates(&sb, a);
        section_paired(&sb, a);
        section_grid(&sb, a);
        section_durations(&sb, a);
        section_tokens(&sb, a);
        section_numbers(&sb, a);
        strbuf_add(&sb, page_footer);
        strbuf_add(&sb, "</body>\n</html>\n");
        return sb.s;
}
