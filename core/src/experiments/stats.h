/* The statistics of an Experiment's answer, as pure functions of counts and
 * samples: no I/O, no allocation. An interval is two doubles, low and high;
 * a function that cannot give one (too few samples) returns false and leaves
 * its outputs alone. Every level is 95%, two-sided. */
#ifndef TB_STATS_H
#define TB_STATS_H

#include <stdbool.h>
#include <stddef.h>

/* The 97.5th percentile of the standard normal distribution. */
#define STATS_Z95 1.959963984540054

/* The Wilson score interval of a proportion: `passes` out of `n` (> 0).
 * Within [0, 1]; sensible at 0 of n and n of n, unlike the normal
 * approximation. false when n is 0. */
bool stats_wilson95(size_t passes, size_t n, double *low, double *high);

/* The 97.5th percentile of Student's t distribution with `df` (>= 1)
 * degrees of freedom (t_{0.975, df}): the regularized incomplete beta
 * function inverted by bisection, to about 1e-10. */
double stats_t975(size_t df);

/* The mean of `n` samples and its t-interval, mean ± t_{0.975, n-1} · s/√n
 * (s the sample standard deviation). *mean is set when n >= 1; the interval
 * (and true) only when n >= 2. */
bool stats_mean_t95(const double *x, size_t n, double *mean, double *low, double *high);

/* The unbiased pass@k estimator of Chen et al. (2021), "Evaluating Large
 * Language Models Trained on Code": 1 - C(n-c, k) / C(n, k) for one task
 * with `c` passes among `n` samples, 1 <= k <= n. Computed as the product
 * 1 - Π_{i=n-c+1}^{n} (1 - k/i): no factorial, no overflow, for any n. */
double stats_pass_at_k(size_t n, size_t c, size_t k);

#endif
