/* tapegrad: elementwise math functions (PyTorch's torch.sin ... torch.lerp).
 * Each kind's value and derivative sit side by side; the engine (broadcast,
 * backward accumulation) is core/ops/pointwise/pointwise.c. With y = f(x):
 *   sin    cos x              cos    -sin x
 *   exp2   y ln 2             log2   1 / (x ln 2)       log10  1 / (x ln 10)
 *   log1p  1 / (1 + x)        expm1  y + 1              sign   0
 *   reciprocal  -y^2          rsqrt  -y^3 / 2           square 2x
 *   erf    2 / sqrt(pi) exp(-x^2)
 * and of two or three operands (broadcasting):
 *   logaddexp(a, b) = log(e^a + e^b)   da = 1 / (1 + e^(b - a))   db = 1 / (1 + e^(a - b))
 *   pow(a, b) = a^b                    da = b a^(b-1) (0 where b = 0)
 *                                      db = y ln a   (0 where a = 0 and b >= 0)
 *   lerp(a, b, w) = a + w (b - a)      da = 1 - w   db = w   dw = b - a
 * Domain edges give PyTorch's values: log2(0) = -inf, log1p(-2) NaN,
 * rsqrt(0) = inf, sign(NaN) = 0; NaN in gives NaN out elsewhere.
 */
#include <math.h>

#include "../internal.h"
#include "../ops.h"

#define X v[0]
#define LN2 0.69314718055994530942
#define LN10 2.30258509299404568402
#define TWO_OVER_SQRT_PI 1.12837916709551257390
#define UNUSED (void)k, (void)p

static double sin_f(const double *v, const double *p) { (void)p; return sin(X); }
static double sin_d(int k, const double *v, double y, const double *p) { UNUSED, (void)y; return cos(X); }
static double cos_f(const double *v, const double *p) { (void)p; return cos(X); }
static double cos_d(int k, const double *v, double y, const double *p) { UNUSED, (void)y; return -sin(X); }
static double exp2_f(const double *v, const double *p) { (void)p; return exp2(X); }
static double exp2_d(int k, const double *v, double y, const double *p) { UNUSED, (void)v; return y * LN2; }
static double log2_f(const double *v, const double *p) { (void)p; return log2(X); }
static double log2_d(int k, const double *v, double y, const double *p) { UNUSED, (void)y; return 1 / (X * LN2); }
static double log10_f(const double *v, const double *p) { (void)p; return log10(X); }
static double log10_d(int k, const double *v, double y, const double *p) { UNUSED, (void)y; return 1 / (X * LN10); }
static double log1p_f(const double *v, const double *p) { (void)p; return log1p(X); }
static double log1p_d(int k, const double *v, double y, const double *p) { UNUSED, (void)y; return 1 / (1 + X); }
static double expm1_f(const double *v, const double *p) { (void)p; return expm1(X); }
static double expm1_d(int k, const double *v, double y, const double *p) { UNUSED, (void)v; return y + 1; }
/* (0 < x) - (x < 0): NaN gives 0, as PyTorch */
static double sign_f(const double *v, const double *p) { (void)p; return (double)((0 < X) - (X < 0)); }
static double zero_d(int k, const double *v, double y, const double *p) { UNUSED, (void)v, (void)y; return 0; }
static double recip_f(const double *v, const double *p) { (void)p; return 1 / X; }
static double recip_d(int k, const double *v, double y, const double *p) { UNUSED, (void)v; return -y * y; }
static double rsqrt_f(const double *v, const double *p) { (void)p; return 1 / sqrt(X); }
static double rsqrt_d(int k, const double *v, double y, const double *p) { UNUSED, (void)v; return -0.5 * y * y * y; }
static double square_f(const double *v, const double *p) { (void)p; return X * X; }
static double square_d(int k, const double *v, double y, const double *p) { UNUSED, (void)y; return 2 * X; }
static double erf_f(const double *v, const double *p) { (void)p; return erf(X); }
static double erf_d(int k, const double *v, double y, const double *p) { UNUSED, (void)y; return TWO_OVER_SQRT_PI * exp(-X * X); }

/* both infinite and equal: the sum of two zeros or infs is that inf */
static double logaddexp_f(const double *v, const double *p)
{
    (void)p;
    double a = v[0], b = v[1], m = a > b ? a : b;
    if (isinf(a) && a == b) return a;
    return isnan(m) ? a + b : m + log1p(exp(-fabs(a - b)));
}
static double logaddexp_d(int k, const double *v, double y, const double *p)
{
    (void)p, (void)y;
    return k == 0 ? 1 / (1 + exp(v[1] - v[0])) : 1 / (1 + exp(v[0] - v[1]));
}

static double pow_f(const double *v, const double *p) { (void)p; return pow(v[0], v[1]); }
static double pow_d(int k, const double *v, double y, const double *p)
{
    (void)p;
    double a = v[0], b = v[1];
    if (k == 0) return b == 0 ? 0 : b * pow(a, b - 1);
    return a == 0 && b >= 0 ? 0 : y * log(a);
}

/* PyTorch's two-sided form: exact at w = 0 and w = 1 */
static double lerp_f(const double *v, const double *p)
{
    (void)p;
    double a = v[0], b = v[1], w = v[2];
    return fabs(w) < 0.5 ? a + w * (b - a) : b - (b - a) * (1 - w);
}
static double lerp_d(int k, const double *v, double y, const double *p)
{
    (void)p, (void)y;
    return k == 0 ? 1 - v[2] : k == 1 ? v[2] : v[1] - v[0];
}

#define KIND1(nm, f, d) {TG_PW_OP(nm), 1, 1, f, d}
static const tg_pw_kind sin_k = KIND1("tg_sin", sin_f, sin_d), cos_k = KIND1("tg_cos", cos_f, cos_d),
                        exp2_k = KIND1("tg_exp2", exp2_f, exp2_d), log2_k = KIND1("tg_log2", log2_f, log2_d),
                        log10_k = KIND1("tg_log10", log10_f, log10_d), log1p_k = KIND1("tg_log1p", log1p_f, log1p_d),
                        expm1_k = KIND1("tg_expm1", expm1_f, expm1_d), sign_k = KIND1("tg_sign", sign_f, zero_d),
                        recip_k = KIND1("tg_reciprocal", recip_f, recip_d), rsqrt_k = KIND1("tg_rsqrt", rsqrt_f, rsqrt_d),
                        square_k = KIND1("tg_square", square_f, square_d), erf_k = KIND1("tg_erf", erf_f, erf_d);
static const tg_pw_kind logaddexp_k = {TG_PW_OP("tg_logaddexp"), 2, 3, logaddexp_f, logaddexp_d};
static const tg_pw_kind pow_k = {TG_PW_OP("tg_pow_tensor"), 2, 3, pow_f, pow_d};
static const tg_pw_kind lerp_k = {TG_PW_OP("tg_lerp"), 3, 7, lerp_f, lerp_d};

tg_tensor *tg_sin(tg_tape *t, tg_tensor *a) { return tg_pw_apply(t, &sin_k, &a, NULL); }
tg_tensor *tg_cos(tg_tape *t, tg_tensor *a) { return tg_pw_apply(t, &cos_k, &a, NULL); }
tg_tensor *tg_exp2(tg_tape *t, tg_tensor *a) { return tg_pw_apply(t, &exp2_k, &a, NULL); }
tg_tensor *tg_log2(tg_tape *t, tg_tensor *a) { return tg_pw_apply(t, &log2_k, &a, NULL); }
tg_tensor *tg_log10(tg_tape *t, tg_tensor *a) { return tg_pw_apply(t, &log10_k, &a, NULL); }
tg_tensor *tg_log1p(tg_tape *t, tg_tensor *a) { return tg_pw_apply(t, &log1p_k, &a, NULL); }
tg_tensor *tg_expm1(tg_tape *t, tg_tensor *a) { return tg_pw_apply(t, &expm1_k, &a, NULL); }
tg_tensor *tg_sign(tg_tape *t, tg_tensor *a) { return tg_pw_apply(t, &sign_k, &a, NULL); }
tg_tensor *tg_reciprocal(tg_tape *t, tg_tensor *a) { return tg_pw_apply(t, &recip_k, &a, NULL); }
tg_tensor *tg_rsqrt(tg_tape *t, tg_tensor *a) { return tg_pw_apply(t, &rsqrt_k, &a, NULL); }
tg_tensor *tg_square(tg_tape *t, tg_tensor *a) { return tg_pw_apply(t, &square_k, &a, NULL); }
tg_tensor *tg_erf(tg_tape *t, tg_tensor *a) { return tg_pw_apply(t, &erf_k, &a, NULL); }

tg_tensor *tg_logaddexp(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    return tg_pw_apply(t, &logaddexp_k, (tg_tensor *[]){a, b}, NULL);
}
tg_tensor *tg_pow_tensor(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    return tg_pw_apply(t, &pow_k, (tg_tensor *[]){a, b}, NULL);
}
tg_tensor *tg_lerp(tg_tape *t, tg_tensor *a, tg_tensor *b, tg_tensor *w)
{
    return tg_pw_apply(t, &lerp_k, (tg_tensor *[]){a, b, w}, NULL);
}
