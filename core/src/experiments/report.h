/* An Experiment's answer, from its results (PLAN.results.jsonl). Per group of Trials (by
 * Harness, the default, or by arm, task, label, or several of them): the
 * Trials by outcome, the causes of voids and failures, duration p50/p95, CPU
 * time, peak memory; when the lines carry grades, the pass rate with its
 * Wilson 95% interval, the mean score with its t 95% interval and pass@k;
 * when they carry tokens, the token sums and (with a price table) the cost;
 * grouped by arm, each arm's paired difference in pass rate against the
 * first. As text, JSON, CSV, or one self-contained HTML page.
 * docs/experiments.md ("The answer") says what each number is.
 *
 * `trialbox batch` prints the per-Harness summary at its end; `trialbox
 * report RESULTS` prints it again, or the answer by other groups. */
#ifndef TB_REPORT_H
#define TB_REPORT_H

#include <stdio.h>

#include "base/error.h"

struct report;

enum report_format { REPORT_TEXT, REPORT_JSON, REPORT_CSV };

/* A new report, grouped by Harness. */
struct report *report_new(void);
void report_free(struct report *r);

/* Group by `by`, a comma-separated list of keys, before any line is added:
 * `harness`, `arm`, `task`, or a label: `labels.NAME`, or NAME alone when it
 * is none of those three. -EINVAL (an empty or repeated key) with err. */
int report_set_by(struct report *r, const char *by, struct tb_error *err);

/* Price the Trials' tokens with the table at `path` (experiments/prices.h).
 * 0, or a negative errno with err naming the file and the field. */
int report_set_prices(struct report *r, const char *path, struct tb_error *err);

/* Count one results line (a JSON object: the batch's fields and the
 * Outcome's). A line whose `outcome` is null counts as not run. -EINVAL
 * when it is not such an object. */
int report_add_line(struct report *r, const char *line, struct tb_error *err);

/* Read a whole results file into `r`. 0, or a negative errno with err
 * naming the file and the line. */
int report_read(struct report *r, const char *path, struct tb_error *err);

/* After the lines: -EINVAL when a grouping key is in none of them (there
 * being some), with err naming the key and the keys the lines have. */
int report_check(const struct report *r, struct tb_error *err);

/* Print the summary to `out`. */
void report_print(const struct report *r, enum report_format format, FILE *out);

/* Write the answer as one self-contained HTML page to `path`, atomically
 * (a temporary file in its folder, renamed). 0, or a negative errno with err. */
int report_write_html(const struct report *r, const char *path, struct tb_error *err);

/* What `trialbox report` was asked. */
struct report_args {
        const char *results;    /* RESULTS */
        enum report_format format;
        const char *by;         /* --by KEYS, or NULL (harness) */
        const char *prices;     /* --prices FILE, or NULL */
        const char *html;       /* --html FILE, or NULL */
};

/* `trialbox report` (cmd/report.c parses its command line): read, check,
 * write the page, print to `out`. The exit status: 0, TB_EXIT_USAGE (bad
 * keys, unreadable or malformed RESULTS or prices) or TB_EXIT_ERROR (the
 * page cannot be written), with err's one line. */
int report_run(const struct report_args *a, FILE *out, struct tb_error *err);

#endif
