/* tapegrad: elementwise math functions (PyTorch's torch.exp ... torch.lerp),
 * rows of the pointwise table: each kind's value and derivative sit side by
 * side; the engine (broadcast, backward accumulation) is
 * core/ops/pointwise/pointwise.c. The hot ones are vectorised loops over
 * tg_real (s and s2 their parameters):
 *   scale  s x                d = s              neg  -x      d = -1
 *   abs    |x|                sign(x), 0 at 0
 *   exp    e^x                y                  log  ln x    1 / x
 *   sqrt   sqrt x             1 / (2 y)
 *   pow    x^s                s x^(s-1) (0 where s = 0, as PyTorch)
 *   clamp  min(max(x, s), s2) 1 where s <= x <= s2 (ends included, as PyTorch)
 * the others are computed in double and rounded once. With y = f(x):
 *   sin    cos x              cos    -sin x
 *   exp2   y ln 2             log2   1 / (x ln 2)       log10  1 / (x ln 10)
 *   log1p  1 / (1 + x)        expm1  y + 1              sign   0
 *   reciprocal  -y^2          rsqrt  -y^3 / 2           square 2x
 *   erf    2 / sqrt(pi) exp(-x^2)
 *   floor, ceil, trunc, round (halves to even)  0, as PyTorch
 * and of two or three operands (broadcasting):
 *   logaddexp(a, b) = log(e^a + e^b)   da = 1 / (1 + e^(b - a))   db = 1 / (1 + e^(a - b))
 *   pow(a, b) = a^b                    da = b a^(b-1) (0 where b = 0)
 *                                      db = y ln a   (0 where a = 0 and b >= 0)
 *   lerp(a, b, w) = a + w (b - a)      da = 1 - w   db = w   dw = b - a
 *   remainder(a, b), sign of b         da = 1       db = -floor(a / b)
 *   fmod(a, b), sign of a (C's fmod)   da = 1       db = -trunc(a / b)
 * Domain edges give PyTorch's values: log2(0) = -inf, log1p(-2) NaN,
 * rsqrt(0) = inf, sign(NaN) = 0; NaN in gives NaN out elsewhere; log and
 * sqrt of a negative number, and pow of a negative number to a non-integer
 * power, and x % 0, are NaN, log(0) is -inf (anomaly mode reports them). A clamp with
 * lo > hi gives hi; NaN stays NaN.
 */
#include <math.h>

#include "../internal.h"
#include "../ops.h"
#include "../../kernels/vmath.h"

/* libm's double function in the double build, its float version otherwise */
#ifdef TAPEGRAD_DOUBLE
#define R(fn) fn
#else
#define R(fn) fn##f
#endif

/* ---- vectorised --------------------------------------------------------------- */

static inline tg_real clamp1(tg_real x, tg_real lo, tg_real hi)
{
    tg_real v = x < lo ? lo : x;
    return v > hi ? hi : v;
}

TG_PW_VEC(scale, s * x[i], s * g[i])
TG_PW_VEC(neg, -x[i], -g[i])
TG_PW_VEC(abs, R(fabs)(x[i]), x[i] > 0 ? g[i] : x[i] < 0 ? -g[i] : 0)
TG_PW_VEC(exp, tg_vexp(x[i]), g[i] * y[i])
TG_PW_VEC(log, R(log)(x[i]), g[i] / x[i])
TG_PW_VEC(sqrt, R(sqrt)(x[i]), g[i] / (2 * y[i]))
TG_PW_VEC(pow, R(pow)(x[i], s), s != 0 ? g[i] * s * R(pow)(x[i], s - 1) : 0)
TG_PW_VEC(clamp, clamp1(x[i], s, s2), x[i] >= s && x[i] <= s2 ? g[i] : 0)

/* the one-thread time per element (bench/bench_threads): 0.9 ns for the
 * transcendental ones, 0.1 for the rest */
static const tg_pw_kind scale_k = TG_PW_VEC_KIND("tg_scale", scale, 0.1), neg_k = TG_PW_VEC_KIND("tg_neg", neg, 0.1),
                        abs_k = TG_PW_VEC_KIND("tg_abs", abs, 0.1), exp_k = TG_PW_VEC_KIND("tg_exp", exp, 0.9),
                        log_k = TG_PW_VEC_KIND("tg_log", log, 0.9), sqrt_k = TG_PW_VEC_KIND("tg_sqrt", sqrt, 0.1),
                        pow_scalar_k = TG_PW_VEC_KIND("tg_pow", pow, 0.9), clamp_k = TG_PW_VEC_KIND("tg_clamp", clamp, 0.1);

static tg_tensor *vec(tg_tape *t, const tg_pw_kind *k, tg_tensor *a, double s, double s2)
{
    return tg_pw_apply(t, k, &a, (double[TG_PW_PARAMS]){s, s2});
}

tg_tensor *tg_scale(tg_tape *t, tg_tensor *a, double s)
{
    TG_DISPATCH(tg_scale, a, (t, a, s));
    return vec(t, &scale_k, a, s, 0);
}
tg_tensor *tg_neg(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_neg, a, (t, a));
    return vec(t, &neg_k, a, 0, 0);
}
tg_tensor *tg_abs(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_abs, a, (t, a));
    return vec(t, &abs_k, a, 0, 0);
}
tg_tensor *tg_exp(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_exp, a, (t, a));
    return vec(t, &exp_k, a, 0, 0);
}
tg_tensor *tg_log(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_log, a, (t, a));
    return vec(t, &log_k, a, 0, 0);
}
tg_tensor *tg_sqrt(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_sqrt, a, (t, a));
    return vec(t, &sqrt_k, a, 0, 0);
}
tg_tensor *tg_pow(tg_tape *t, tg_tensor *a, double p)
{
    TG_DISPATCH(tg_pow, a, (t, a, p));
    return vec(t, &pow_scalar_k, a, p, 0);
}
tg_tensor *tg_clamp(tg_tape *t, tg_tensor *a, double lo, double hi)
{
    TG_DISPATCH(tg_clamp, a, (t, a, lo, hi));
    if (t && (isnan(lo) || isnan(hi))) return tg_op_fail(t, &clamp_k.op, "bounds must not be NaN (lo %g, hi %g)", lo, hi);
    return vec(t, &clamp_k, a, lo, hi);
}

/* ---- in double ------------------------------------------------------------------ */

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
/* PyTorch's: zero grad; round halves to even (nearbyint's default mode) */
static double floor_f(const double *v, const double *p) { (void)p; return floor(X); }
static double ceil_f(const double *v, const double *p) { (void)p; return ceil(X); }
static double trunc_f(const double *v, const double *p) { (void)p; return trunc(X); }
static double round_f(const double *v, const double *p) { (void)p; return nearbyint(X); }
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

/* PyTorch's: fmod, moved into b's sign when the signs differ */
static double remainder_f(const double *v, const double *p)
{
    (void)p;
    double r = fmod(v[0], v[1]);
    return r != 0 && (r < 0) != (v[1] < 0) ? r + v[1] : r;
}
static double remainder_d(int k, const double *v, double y, const double *p)
{
    (void)p, (void)y;
    return k == 0 ? 1 : -floor(v[0] / v[1]);
}
static double fmod_f(const double *v, const double *p) { (void)p; return fmod(v[0], v[1]); }
static double fmod_d(int k, const double *v, double y, const double *p)
{
    (void)p, (void)y;
    return k == 0 ? 1 : -trunc(v[0] / v[1]);
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

#define KIND1(nm, f, d) TG_PW_KIND(nm, 1, 1, f, d)
static const tg_pw_kind sin_k = KIND1("tg_sin", sin_f, sin_d), cos_k = KIND1("tg_cos", cos_f, cos_d),
                        exp2_k = KIND1("tg_exp2", exp2_f, exp2_d), log2_k = KIND1("tg_log2", log2_f, log2_d),
                        log10_k = KIND1("tg_log10", log10_f, log10_d), log1p_k = KIND1("tg_log1p", log1p_f, log1p_d),
                        expm1_k = KIND1("tg_expm1", expm1_f, expm1_d), sign_k = KIND1("tg_sign", sign_f, zero_d),
                        recip_k = KIND1("tg_reciprocal", recip_f, recip_d), rsqrt_k = KIND1("tg_rsqrt", rsqrt_f, rsqrt_d),
                        square_k = KIND1("tg_square", square_f, square_d), erf_k = KIND1("tg_erf", erf_f, erf_d),
                        floor_k = KIND1("tg_floor", floor_f, zero_d), ceil_k = KIND1("tg_ceil", ceil_f, zero_d),
                        trunc_k = KIND1("tg_trunc", trunc_f, zero_d), round_k = KIND1("tg_round", round_f, zero_d);
static const tg_pw_kind logaddexp_k = TG_PW_KIND("tg_logaddexp", 2, 3, logaddexp_f, logaddexp_d);
static const tg_pw_kind pow_k = TG_PW_KIND("tg_pow_tensor", 2, 3, pow_f, pow_d);
static const tg_pw_kind remainder_k = TG_PW_KIND("tg_remainder", 2, 3, remainder_f, remainder_d);
static const tg_pw_kind fmod_k = TG_PW_KIND("tg_fmod", 2, 3, fmod_f, fmod_d);
static const tg_pw_kind lerp_k = TG_PW_KIND("tg_lerp", 3, 7, lerp_f, lerp_d);

tg_tensor *tg_sin(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_sin, a, (t, a));
    return tg_pw_apply(t, &sin_k, &a, NULL);
}
tg_tensor *tg_cos(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_cos, a, (t, a));
    return tg_pw_apply(t, &cos_k, &a, NULL);
}
tg_tensor *tg_exp2(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_exp2, a, (t, a));
    return tg_pw_apply(t, &exp2_k, &a, NULL);
}
tg_tensor *tg_log2(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_log2, a, (t, a));
    return tg_pw_apply(t, &log2_k, &a, NULL);
}
tg_tensor *tg_log10(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_log10, a, (t, a));
    return tg_pw_apply(t, &log10_k, &a, NULL);
}
tg_tensor *tg_log1p(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_log1p, a, (t, a));
    return tg_pw_apply(t, &log1p_k, &a, NULL);
}
tg_tensor *tg_expm1(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_expm1, a, (t, a));
    return tg_pw_apply(t, &expm1_k, &a, NULL);
}
tg_tensor *tg_sign(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_sign, a, (t, a));
    return tg_pw_apply(t, &sign_k, &a, NULL);
}
tg_tensor *tg_reciprocal(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_reciprocal, a, (t, a));
    return tg_pw_apply(t, &recip_k, &a, NULL);
}
tg_tensor *tg_rsqrt(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_rsqrt, a, (t, a));
    return tg_pw_apply(t, &rsqrt_k, &a, NULL);
}
tg_tensor *tg_square(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_square, a, (t, a));
    return tg_pw_apply(t, &square_k, &a, NULL);
}
tg_tensor *tg_erf(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_erf, a, (t, a));
    return tg_pw_apply(t, &erf_k, &a, NULL);
}
tg_tensor *tg_floor(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_floor, a, (t, a));
    return tg_pw_apply(t, &floor_k, &a, NULL);
}
tg_tensor *tg_ceil(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_ceil, a, (t, a));
    return tg_pw_apply(t, &ceil_k, &a, NULL);
}
tg_tensor *tg_trunc(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_trunc, a, (t, a));
    return tg_pw_apply(t, &trunc_k, &a, NULL);
}
tg_tensor *tg_round(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_round, a, (t, a));
    return tg_pw_apply(t, &round_k, &a, NULL);
}

tg_tensor *tg_logaddexp(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_logaddexp, (t, a, b), a, b);
    return tg_pw_apply(t, &logaddexp_k, (tg_tensor *[]){a, b}, NULL);
}
tg_tensor *tg_pow_tensor(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_pow_tensor, (t, a, b), a, b);
    return tg_pw_apply(t, &pow_k, (tg_tensor *[]){a, b}, NULL);
}
tg_tensor *tg_remainder(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_remainder, (t, a, b), a, b);
    return tg_pw_apply(t, &remainder_k, (tg_tensor *[]){a, b}, NULL);
}
tg_tensor *tg_fmod(tg_tape *t, tg_tensor *a, tg_tensor *b)
{
    TG_DISPATCH_PROMOTED(tg_fmod, (t, a, b), a, b);
    return tg_pw_apply(t, &fmod_k, (tg_tensor *[]){a, b}, NULL);
}
tg_tensor *tg_lerp(tg_tape *t, tg_tensor *a, tg_tensor *b, tg_tensor *w)
{
    TG_DISPATCH_PROMOTED(tg_lerp, (t, a, b, w), a, b, w);
    return tg_pw_apply(t, &lerp_k, (tg_tensor *[]){a, b, w}, NULL);
}
