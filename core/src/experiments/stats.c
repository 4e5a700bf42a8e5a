#include "experiments/stats.h"

#include <math.h>

#define STATS_PI 3.14159265358979323846

bool stats_wilson95(size_t passes, size_t n, double *low, double *high)
{
        if (n == 0 || passes > n)
                return false;
        double z2 = STATS_Z95 * STATS_Z95, nn = (double)n, p = (double)passes / nn;
        double denom = 1 + z2 / nn;
        double centre = (p + z2 / (2 * nn)) / denom;
        double half = STATS_Z95 / denom * sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
        *low = centre - half > 0 ? centre - half : 0;
        *high = centre + half < 1 ? centre + half : 1;
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

/* x^n for a whole n, by squaring. */
static double pow_whole(double x, size_t n)
{
        double r = 1;
        for (; n; n >>= 1, x *= x)
                if (n & 1)
                        r *= x;
        return r;
}

/* 1 / B(nu/2, 1/2) = Γ((nu+1)/2) / (Γ(nu/2) Γ(1/2)), for a whole nu >= 1,
 * with no Gamma function (and so no libm, which every start of trialbox
 * would load). Under 1000 degrees, a product of ratios near 1: 1/π at
 * nu = 1, 1/2 at nu = 2, and times (nu+1)/nu from nu to nu + 2
 * (Γ(z+1) = zΓ(z)). From 1000, Γ(z+1/2)/Γ(z) = √z (1 - 1/(8z) + 1/(128z²) +
 * 5/(1024z³) - 21/(32768z⁴) + O(z⁻⁵)) with z = nu/2, over √π: it meets the
 * product within 1e-15 there, in constant time. */
static double inverse_beta_half(size_t nu)
{
        if (nu >= 1000) {
                double z = (double)nu / 2, w = 1 / z;
                return sqrt(z / STATS_PI) *
                       (1 + w * (-1.0 / 8 + w * (1.0 / 128 + w * (5.0 / 1024 - w * 21.0 / 32768))));
        }
        double r = nu % 2 ? 1 / STATS_PI : 0.5;
        for (size_t k = nu % 2 ? 1 : 2; k + 2 <= nu; k += 2)
                r *= (double)(k + 1) / (double)k;
        return r;
}

/* P(T > t) for Student's t with `nu` degrees of freedom, t >= 0: half the
 * regularized incomplete beta function I_x(nu/2, 1/2) at x = nu/(nu+t²),
 * whose front factor x^a (1-x)^b / B(a, b) is (√x)^nu √(1-x) times `inv_beta`
 * (inverse_beta_half(nu)). */
static double t_upper_tail(double t, size_t nu, double inv_beta)
{
        double a = (double)nu / 2, b = 0.5, s = (double)nu + t * t;
        double x = (double)nu / s, y = t * t / s; /* y = 1 - x, without the cancellation */
        if (y <= 0)
                return 0.5;
        double front = inv_beta * pow_whole(sqrt(x), nu) * sqrt(y);
        /* The fraction converges fast on this side; the other by symmetry. */
        if (x < (a + 1) / (a + b + 2))
                return 0.5 * front * beta_fraction(a, b, x) / a;
        return 0.5 * (1 - front * beta_fraction(b, a, y) / b);
}

double stats_t975(size_t df)
{
        size_t nu = df ? df : 1;
        double lo = 0, hi = 2, inv_beta = inverse_beta_half(nu);
        while (t_upper_tail(hi, nu, inv_beta) > 0.025)
                hi *= 2;
        for (int i = 0; i < 200 && hi - lo > 1e-12; i++) {
                double mid = (lo + hi) / 2;
                if (t_upper_tail(mid, nu, inv_beta) > 0.025)
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
