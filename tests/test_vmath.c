/* core/kernels/vmath.h: the inline exp and normal CDF behind softmax and GELU, against
 * libm in double. The float polynomials are held to a few units in the last
 * place where the values matter; the double build uses libm itself. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>

#include "../core/kernels/vmath.h"

#ifdef TAPEGRAD_DOUBLE
#define ULP DBL_EPSILON
#else
#define ULP FLT_EPSILON
#endif

/* max relative error of f against ref over [lo, hi] in steps of h, where ref > 1e-30 */
static double worst_rel(tg_real (*f)(tg_real), double (*ref)(double), double lo, double hi, double h,
                        double *at)
{
    double worst = 0;
    for (double x = lo; x <= hi; x += h) {
        tg_real xr = (tg_real)x;
        double r = ref((double)xr);
        if (r < 1e-30) continue;
        double e = fabs((double)f(xr) - r) / r;
        if (e > worst) worst = e, *at = (double)xr;
    }
    return worst;
}

static double cdf_ref(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }
static double pdf_ref(double x) { return exp(-0.5 * x * x) * TG_INV_SQRT_2PI; }
static tg_real vexp(tg_real x) { return tg_vexp(x); }
static tg_real vcdf(tg_real x) { return tg_vnormal_cdf(x); }
static tg_real vpdf(tg_real x) { return tg_vnormal_pdf(x); }

Test(vmath, exp_is_accurate_on_what_softmax_feeds_it)
{
    double at = 0, e = worst_rel(vexp, exp, -87, 1, 1e-4, &at);
    cr_expect_leq(e, 2 * ULP, "exp: relative error %g at %g", e, at);
    cr_expect_eq(tg_vexp(0), 1);
    cr_expect_eq(tg_vexp(-INFINITY), 0);
    cr_expect(isnan(tg_vexp(NAN)));
}

/* tg_exp feeds it anything: the whole float range, overflow to +inf exactly
 * where expf overflows (ln FLT_MAX = 88.7228), 2^128 split so the last finite
 * values stay finite. */
Test(vmath, exp_covers_the_whole_range)
{
    double at = 0, e = worst_rel(vexp, exp, -87, 88.72, 1e-3, &at);
    cr_expect_leq(e, 2 * ULP, "exp: relative error %g at %g", e, at);
#ifndef TAPEGRAD_DOUBLE
    float last = nextafterf(88.7228394f, 0);  /* the largest x with expf(x) finite */
    cr_expect(isfinite(tg_vexp(last)) && tg_vexp(last) > 3.4e38f, "exp(%.9g) = %g", (double)last, (double)tg_vexp(last));
    cr_expect(isinf(tg_vexp(88.7228394f)));
#endif
    cr_expect(isinf(tg_vexp(1000)) && tg_vexp(1000) > 0);
    cr_expect(isinf(tg_vexp(INFINITY)));
    cr_expect_eq(tg_vexp(-1000), 0);
}

static double sigmoid_ref(double x) { return 1 / (1 + exp(-x)); }
static tg_real vsig(tg_real x) { return tg_vsigmoid(x); }

Test(vmath, sigmoid_is_accurate_and_never_overflows)
{
    double at = 0, e = worst_rel(vsig, sigmoid_ref, -80, 80, 1e-3, &at);
    cr_expect_leq(e, 4 * ULP, "sigmoid: relative error %g at %g", e, at);
    cr_expect_eq(tg_vsigmoid(0), 0.5);
    cr_expect_eq(tg_vsigmoid(INFINITY), 1);
    cr_expect_eq(tg_vsigmoid(-INFINITY), 0);
    cr_expect(isnan(tg_vsigmoid(NAN)));
}

/* The float CDF computes z^2 in float, so its relative error grows with z^2 ulp
 * in the far left tail (where gelu(x) = x Phi(x) is below 1e-8 of |x|). */
Test(vmath, normal_cdf_keeps_relative_accuracy_in_the_left_tail)
{
    static const struct { double lo, ulps; } band[] = {{-1, 4}, {-3, 12}, {-6, 40}, {-12, 160}};
    for (size_t i = 0; i < sizeof band / sizeof band[0]; i++) {
        double at = 0, e = worst_rel(vcdf, cdf_ref, band[i].lo, 12, 1e-4, &at);
        cr_expect_leq(e, band[i].ulps * ULP, "Phi on [%g, 12]: relative error %g at %g", band[i].lo, e, at);
    }
    cr_expect_eq(tg_vnormal_cdf(INFINITY), 1);
    cr_expect_eq(tg_vnormal_cdf(-INFINITY), 0);
    cr_expect_eq(tg_vnormal_cdf(0), 0.5);
}

Test(vmath, normal_pdf_is_accurate_where_it_matters)
{
    double at = 0, e = worst_rel(vpdf, pdf_ref, -6, 6, 1e-4, &at);
    cr_expect_leq(e, 12 * ULP, "phi on [-6, 6]: relative error %g at %g", e, at);
}
