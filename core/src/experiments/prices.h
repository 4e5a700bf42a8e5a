/* What Trials cost: a price table the user writes (`trialbox report
 * --prices FILE`) applied to the token counts a Trial's Outcome records.
 * trialbox builds in no price: a model the table does not name has no cost.
 *
 * The file is one JSON object, per model the USD per million tokens of each
 * kind:
 *   {"gpt-5": {"input": 1.25, "cached_input": 0.125, "output": 10, "reasoning": 10},
 *    "claude-x": {"input": 3, "cached_input": 0.3, "cache_write_input": 3.75, "output": 15}}
 * `input` and `output` are required; `cached_input` and `cache_write_input`,
 * when absent, are priced as `input`, and `reasoning`, when absent, as
 * `output` (providers bill reasoning tokens as output). The counts are read
 * as the Outcome's `tokens` has them (model/outcome.h): `input` includes the
 * cached input tokens and those written to the cache, `output` includes the
 * reasoning tokens, so a Trial costs
 *   (input - cached_input - cache_write_input) × input + cached_input × cached_input
 *   + cache_write_input × cache_write_input
 *   + (output - reasoning) × output + reasoning × reasoning
 * (each difference at least 0), divided by one million. */
#ifndef TB_PRICES_H
#define TB_PRICES_H

#include <stddef.h>

#include "base/error.h"

/* A Trial's token counts (the Outcome's `tokens`, without its models). */
struct token_counts {
        long long input, cached_input, output, reasoning, requests;
        long long cache_write_input; /* 0 in a record older than it */
};

/* One model's prices, USD per million tokens. */
struct price {
        char *model;
        double input, cached_input, output, reasoning, cache_write_input;
};

struct prices {
        struct price *p;
        size_t n;
};

/* Read the table at `path` into `out` (zeroed first). 0, or -EINVAL (a bad
 * table) or the read's negative errno, with err one line naming the file and
 * the field: "prices 'p.json': field 'gpt-5.output': not a number >= 0 ...".
 * Nothing is kept on error. */
int prices_load(struct prices *out, const char *path, struct tb_error *err);

/* Free the table's contents; `p` is left empty. */
void prices_done(struct prices *p);

/* The prices of `model`, or NULL when the table does not name it. */
const struct price *prices_find(const struct prices *p, const char *model);

/* What `t` cost at `price`, in USD (the formula above). */
double price_cost(const struct price *price, const struct token_counts *t);

#endif
