/* An Experiment's summary, from its results.jsonl: per Harness the Trials by
 * outcome, the causes of voids and failures, duration p50/p95, CPU time and
 * peak memory. `trialbox batch` prints it at the end; `trialbox report
 * RESULTS` prints it again. Only the figures are kept, never the lines. */
#ifndef TB_REPORT_H
#define TB_REPORT_H

#include <stdio.h>

#include "base/error.h"

struct report;

enum report_format { REPORT_TEXT, REPORT_JSON, REPORT_CSV };

struct report *report_new(void);
void report_free(struct report *r);

/* Count one results line (a JSON object: the batch's fields and the
 * Outcome's). A line whose `outcome` is null counts as not run. -EINVAL
 * when it is not such an object. */
int report_add_line(struct report *r, const char *line, struct tb_error *err);

/* Read a whole results file into `r`. 0, or a negative errno with err
 * naming the file and the line. */
int report_read(struct report *r, const char *path, struct tb_error *err);

/* Print the summary to `out`. */
void report_print(const struct report *r, enum report_format format, FILE *out);

#endif
