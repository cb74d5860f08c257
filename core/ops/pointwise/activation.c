/* tapegrad: activations (PyTorch's torch.nn.functional names and defaults),
 * rows of the pointwise table: each kind's value and derivative sit side by
 * side; the engine is core/ops/pointwise/pointwise.c. The hot ones are
 * vectorised loops over tg_real:
 *   relu      x > 0 ? x : 0 (NaN stays NaN)     g where x > 0 (and at NaN, as PyTorch)
 *   gelu      x Phi(x) (erf form)                Phi(x) + x phi(x)
 *   tanh      tanh x                             1 - y^2
 *   sigmoid   1 / (1 + e^-x)                     y (1 - y)
 *   silu      x s, s = sigmoid(x)                s (1 + x (1 - s))
 * the others are computed in double and rounded once. With s = sigmoid(x),
 * sp = softplus(x):
 *   softplus     log(1 + e^(bx)) / b         e^(bx) / (1 + e^(bx)); x itself
 *                (x when bx > threshold)     and grad 1 past the threshold
 *   leaky_relu   x > 0 ? x : n x             x > 0 ? 1 : n
 *   elu          x > 0 ? x : a (e^x - 1)     x > 0 ? 1 : a e^x
 *   selu         scale * elu(x, alpha)       with PyTorch's constants
 *   celu         x > 0 ? x : a (e^(x/a) - 1) x > 0 ? 1 : e^(x/a)
 *   mish         x tanh(sp)                  tanh(sp) + x s (1 - tanh(sp)^2)
 *   hardswish    x relu6(x + 3) / 6          0 below -3, 1 above 3, x/3 + 1/2 between (ends as PyTorch)
 *   hardsigmoid  relu6(x + 3) / 6            1/6 on (-3, 3), else 0
 *   hardtanh     clamp(x, lo, hi)            1 on (lo, hi), else 0 (ends excluded, as PyTorch)
 *   softsign     x / (1 + |x|)               1 / (1 + |x|)^2
 *   gelu_tanh    x/2 (1 + tanh(u)), u = c (x + 0.044715 x^3), c = sqrt(2/pi)
 *                                            (1 + t)/2 + x/2 (1 - t^2) c (1 + 3 * 0.044715 x^2)
 * NaN in gives NaN out (x > 0 is false for NaN, and the other branch keeps it).
 */
#include <math.h>

#include "../internal.h"
#include "../ops.h"
#include "../../kernels/vmath.h"

/* ---- vectorised --------------------------------------------------------------- */

/* gelu(x) = x Phi(x);  gelu'(x) = Phi(x) + x phi(x) (core/kernels/vmath.h: vectorizable) */
static inline tg_real gelu1(tg_real x) { return x * tg_vnormal_cdf(x); }
static inline tg_real gelu_grad1(tg_real x) { return tg_vnormal_cdf(x) + x * tg_vnormal_pdf(x); }

TG_PW_VEC(relu, x[i] <= 0 ? 0 : x[i], x[i] <= 0 ? 0 : g[i])
TG_PW_VEC(gelu, gelu1(x[i]), g[i] * gelu_grad1(x[i]))
TG_PW_VEC(tanh, (tg_real)tanh(x[i]), g[i] * (1 - y[i] * y[i]))
TG_PW_VEC(sigmoid, tg_vsigmoid(x[i]), g[i] * y[i] * (1 - y[i]))
/* SwiGLU's gate (the LLaMA block's FFN), at every element of d_ff */
static inline tg_real silu_grad1(tg_real x)
{
    tg_real s = tg_vsigmoid(x);
    return s * (1 + x * (1 - s));
}
TG_PW_VEC(silu, x[i] * tg_vsigmoid(x[i]), g[i] * silu_grad1(x[i]))

/* one-thread time per element (bench/bench_threads) */
static const tg_pw_kind relu_k = TG_PW_VEC_KIND("tg_relu", relu, 0.1), gelu_k = TG_PW_VEC_KIND("tg_gelu", gelu, 0.9),
                        tanh_k = TG_PW_VEC_KIND("tg_tanh", tanh, 0.9),
                        sigmoid_k = TG_PW_VEC_KIND("tg_sigmoid", sigmoid, 0.9),
                        silu_k = TG_PW_VEC_KIND("tg_silu", silu, 0.9);

tg_tensor *tg_relu(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_relu, a, (t, a));
    return tg_pw_apply(t, &relu_k, &a, NULL);
}
tg_tensor *tg_gelu(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_gelu, a, (t, a));
    return tg_pw_apply(t, &gelu_k, &a, NULL);
}
tg_tensor *tg_tanh(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_tanh, a, (t, a));
    return tg_pw_apply(t, &tanh_k, &a, NULL);
}
tg_tensor *tg_sigmoid(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_sigmoid, a, (t, a));
    return tg_pw_apply(t, &sigmoid_k, &a, NULL);
}
tg_tensor *tg_silu(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_silu, a, (t, a));
    return tg_pw_apply(t, &silu_k, &a, NULL);
}

/* ---- in double ------------------------------------------------------------------ */

#define X v[0]

static double sigm(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }
/* log(1 + e^x) without overflow */
static double softplus1(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }


/* p = {beta, threshold} */
static double softplus_f(const double *v, const double *p)
{
    return X * p[0] > p[1] ? X : log1p(exp(X * p[0])) / p[0];
}
static double softplus_d(int k, const double *v, double y, const double *p)
{
    (void)k, (void)y;
    double z = exp(X * p[0]);
    return X * p[0] > p[1] ? 1 : z / (z + 1);
}

/* p = {negative_slope} */
static double leaky_f(const double *v, const double *p) { return X > 0 ? X : X * p[0]; }
static double leaky_d(int k, const double *v, double y, const double *p) { (void)k, (void)y; return X > 0 ? 1 : p[0]; }

/* p = {alpha, scale, input_scale}: elu is {a, 1, 1}, selu {alpha, scale, 1},
 * celu {a, 1, 1/a}: x > 0 ? scale x : scale a (e^(x is) - 1), as ATen's elu */
static double elu_f(const double *v, const double *p)
{
    return X > 0 ? p[1] * X : p[1] * p[0] * expm1(X * p[2]);
}
static double elu_d(int k, const double *v, double y, const double *p)
{
    (void)k, (void)y;
    return X > 0 ? p[1] : p[1] * p[0] * p[2] * exp(X * p[2]);
}

static double mish_f(const double *v, const double *p) { (void)p; return X * tanh(softplus1(X)); }
static double mish_d(int k, const double *v, double y, const double *p)
{
    (void)k, (void)p, (void)y;
    double th = tanh(softplus1(X));
    return th + X * sigm(X) * (1 - th * th);
}

static double relu6(double x) { return x < 0 ? 0 : x > 6 ? 6 : x; }
static double hswish_f(const double *v, const double *p) { (void)p; return X * relu6(X + 3) / 6; }
static double hswish_d(int k, const double *v, double y, const double *p)
{
    (void)k, (void)p, (void)y;
    return X < -3 ? 0 : X <= 3 ? X / 3 + 0.5 : 1;
}
static double hsigmoid_f(const double *v, const double *p) { (void)p; return relu6(X + 3) / 6; }
static double hsigmoid_d(int k, const double *v, double y, const double *p)
{
    (void)k, (void)p, (void)y;
    return X > -3 && X < 3 ? 1.0 / 6 : 0;
}

/* p = {lo, hi} */
static double htanh_f(const double *v, const double *p) { return X < p[0] ? p[0] : X > p[1] ? p[1] : X; }
static double htanh_d(int k, const double *v, double y, const double *p)
{
    (void)k, (void)y;
    return X <= p[0] || X >= p[1] ? 0 : 1;
}

static double softsign_f(const double *v, const double *p) { (void)p; return X / (1 + fabs(X)); }
static double softsign_d(int k, const double *v, double y, const double *p)
{
    (void)k, (void)p, (void)y;
    double d = 1 + fabs(X);
    return 1 / (d * d);
}

#define GELU_C 0.7978845608028654 /* sqrt(2 / pi) */
#define GELU_K 0.044715
static double gelu_tanh_f(const double *v, const double *p)
{
    (void)p;
    return 0.5 * X * (1 + tanh(GELU_C * (X + GELU_K * X * X * X)));
}
static double gelu_tanh_d(int k, const double *v, double y, const double *p)
{
    (void)k, (void)p, (void)y;
    double th = tanh(GELU_C * (X + GELU_K * X * X * X));
    return 0.5 * (1 + th) + 0.5 * X * (1 - th * th) * GELU_C * (1 + 3 * GELU_K * X * X);
}

#define KIND1(nm, f, d) TG_PW_KIND(nm, 1, 1, f, d)
static const tg_pw_kind softplus_k = KIND1("tg_softplus", softplus_f, softplus_d),
                        leaky_k = KIND1("tg_leaky_relu", leaky_f, leaky_d), elu_k = KIND1("tg_elu", elu_f, elu_d),
                        selu_k = KIND1("tg_selu", elu_f, elu_d), celu_k = KIND1("tg_celu", elu_f, elu_d),
                        mish_k = KIND1("tg_mish", mish_f, mish_d), hswish_k = KIND1("tg_hardswish", hswish_f, hswish_d),
                        hsigmoid_k = KIND1("tg_hardsigmoid", hsigmoid_f, hsigmoid_d),
                        htanh_k = KIND1("tg_hardtanh", htanh_f, htanh_d),
                        softsign_k = KIND1("tg_softsign", softsign_f, softsign_d),
                        gelu_tanh_k = KIND1("tg_gelu_tanh", gelu_tanh_f, gelu_tanh_d);

static tg_tensor *act(tg_tape *t, const tg_pw_kind *k, tg_tensor *a, double p0, double p1, double p2)
{
    return tg_pw_apply(t, k, &a, (double[TG_PW_PARAMS]){p0, p1, p2});
}

tg_tensor *tg_softplus(tg_tape *t, tg_tensor *a, double beta, double threshold)
{
    TG_DISPATCH(tg_softplus, a, (t, a, beta, threshold));
    if (t && (!(beta != 0) || isnan(threshold)))
        return tg_op_fail(t, &softplus_k.op, "beta must be nonzero and threshold not NaN (beta %g, threshold %g)", beta,
                          threshold);
    return act(t, &softplus_k, a, beta, threshold, 0);
}
tg_tensor *tg_leaky_relu(tg_tape *t, tg_tensor *a, double negative_slope)
{
    TG_DISPATCH(tg_leaky_relu, a, (t, a, negative_slope));
    if (t && isnan(negative_slope)) return tg_op_fail(t, &leaky_k.op, "negative_slope is NaN");
    return act(t, &leaky_k, a, negative_slope, 0, 0);
}
tg_tensor *tg_elu(tg_tape *t, tg_tensor *a, double alpha)
{
    TG_DISPATCH(tg_elu, a, (t, a, alpha));
    if (t && isnan(alpha)) return tg_op_fail(t, &elu_k.op, "alpha is NaN");
    return act(t, &elu_k, a, alpha, 1, 1);
}
tg_tensor *tg_selu(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_selu, a, (t, a));
    return act(t, &selu_k, a, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1);
}
tg_tensor *tg_celu(tg_tape *t, tg_tensor *a, double alpha)
{
    TG_DISPATCH(tg_celu, a, (t, a, alpha));
    if (t && !(alpha != 0)) return tg_op_fail(t, &celu_k.op, "alpha must be nonzero (got %g): celu divides by it", alpha);
    return act(t, &celu_k, a, alpha, 1, 1 / alpha);
}
tg_tensor *tg_mish(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_mish, a, (t, a));
    return act(t, &mish_k, a, 0, 0, 0);
}
tg_tensor *tg_hardswish(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_hardswish, a, (t, a));
    return act(t, &hswish_k, a, 0, 0, 0);
}
tg_tensor *tg_hardsigmoid(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_hardsigmoid, a, (t, a));
    return act(t, &hsigmoid_k, a, 0, 0, 0);
}
tg_tensor *tg_hardtanh(tg_tape *t, tg_tensor *a, double min_val, double max_val)
{
    TG_DISPATCH(tg_hardtanh, a, (t, a, min_val, max_val));
    if (t && !(min_val <= max_val))
        return tg_op_fail(t, &htanh_k.op, "min_val %g must not exceed max_val %g (nor be NaN)", min_val, max_val);
    return act(t, &htanh_k, a, min_val, max_val, 0);
}
tg_tensor *tg_softsign(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_softsign, a, (t, a));
    return act(t, &softsign_k, a, 0, 0, 0);
}
tg_tensor *tg_gelu_tanh(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_gelu_tanh, a, (t, a));
    return act(t, &gelu_tanh_k, a, 0, 0, 0);
}
