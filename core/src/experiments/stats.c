#include "experiments/stats.h"

#include <math.h>

bool stats_wilson95(size_t passes, size_t n, double *low, double *high)
{
        if (n == 0 || passes > n)
                return false;
        double z2 = STATS_Z95 * STATS_Z95, nn = (double)n, p = (double)passes / nn;
        double denom = 1 + z2 / nn;
        double centre = (p + z2 / (2 * nn)) / denom;
        double half = STATS_Z95 / denom * sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
        *low = fmax(0, centre - half);
        *high = fmin(1, centre + half);
        return true;
}

/* One step of the modified Lentz method: the partial numerator `aa` into
 * the running C and D (kept off zero). */
static void lentz_step(double aa, double *c, double *d)
{
        const double tiny = 1e-300;
        *d = 1 + aa * *d;
        *c = 1 + aa / *c;
        *d = 1 / (fabs(*d) < tiny ? tiny : *d);
        *c = fabs(*c) < tiny ? tiny : *c;
}

/* The continued fraction of the incomplete beta function (modified Lentz). */
static double beta_fraction(double a, double b, double x)
{
        double c = 1, d = 1; /* the first step gives D = 1 / (1 - (a+b)x/(a+1)); C starts at 1 */
        lentz_step(-(a + b) * x / (a + 1), &c, &d);
        c = 1;
        double h = d;
        for (int m = 1; m <= 300; m++) {
                double m2 = 2.0 * m;
                lentz_step(m * (b - m) * x / ((a - 1 + m2) * (a + m2)), &c, &d);
                h *= d * c;
                lentz_step(-(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2)), &c, &d);
                double step = d * c;
                h *= step;
                if (fabs(step - 1) < 1e-15)
                        break;
        }
        return h;
}

/* The regularized incomplete beta function I_x(a, b). */
static double beta_regularized(double a, double b, double x)
{
        if (x <= 0)
                return 0;
        if (x >= 1)
                return 1;
        double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
        /* The fraction converges fast on this side; the other by symmetry. */
        if (x < (a + 1) / (a + b + 2))
                return front * beta_fraction(a, b, x) / a;
        return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

/* P(T > t) for Student's t with `df` degrees of freedom, t >= 0. */
static double t_upper_tail(double t, double df)
{
        return 0.5 * beta_regularized(df / 2, 0.5, df / (df + t * t));
}

double stats_t975(size_t df)
{
        double lo = 0, hi = 2, nu = df ? (double)df : 1;
        while (t_upper_tail(hi, nu) > 0.025)
                hi *= 2;
        for (int i = 0; i < 200 && hi - lo > 1e-12; i++) {
                double mid = (lo + hi) / 2;
                if (t_upper_tail(mid, nu) > 0.025)
                        lo = mid;
                else
                        hi = mid;
        }
        return (lo + hi) / 2;
}

bool stats_mean_t95(const double *x, size_t n, double *mean, double *low, double *high)
{
        if (n == 0)
                return false;
        double sum = 0;
        for (size_t i = 0; i < n; i++)
                sum += x[i];
        double m = sum / (double)n;
        *mean = m;
        if (n < 2)
                return false;
        double ss = 0;
        for (size_t i = 0; i < n; i++)
                ss += (x[i] - m) * (x[i] - m);
        double half = stats_t975(n - 1) * sqrt(ss / (double)(n - 1)) / sqrt((double)n);
        *low = m - half;
        *high = m + half;
        return true;
}

double stats_pass_at_k(size_t n, size_t c, size_t k)
{
        if (c == 0 || k == 0)
                return 0;
        if (n - c < k)
                return 1;
        double none = 1; /* C(n-c, k) / C(n, k): the chance that k draws miss every pass */
        for (size_t i = n - c + 1; i <= n; i++)
                none *= 1 - (double)k / (double)i;
        return 1 - none;
}
