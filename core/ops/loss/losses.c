/* tapegrad: elementwise losses (torch.nn.functional's mse_loss, l1_loss,
 * smooth_l1_loss, huber_loss, binary_cross_entropy and
 * binary_cross_entropy_with_logits). Each is a pointwise kind (the engine
 * of core/ops/pointwise/pointwise.c) giving the loss of every element, then summed or
 * averaged over all elements (tg_sum / tg_mean) unless the reduction is
 * TG_NONE. With d = a - b (input a, target b), g = d loss of the element:
 *   mse        d^2                                   da = 2d        db = -2d
 *   l1         |d|                                   da = sign(d)   db = -sign(d)
 *   smooth_l1  |d| < beta ? d^2 / (2 beta) : |d| - beta / 2
 *                                                    da = clamp(d / beta, -1, 1) (sign(d) when beta = 0)
 *   huber      |d| < delta ? d^2 / 2 : delta (|d| - delta / 2)
 *                                                    da = clamp(d, -delta, delta)
 *   bce        -w (b log p + (1 - b) log(1 - p)), each log at least -100 (PyTorch)
 *                                                    dp = w (p - b) / max(p (1 - p), 1e-12)
 *                                                    db = w (log(1 - p) - log p)
 *   bce_logits with s = sigmoid(x), pw the pos_weight (1 without), weight w:
 *              w (pw b softplus(-x) + (1 - b) softplus(x))
 *                                                    dx = w (s (pw b + 1 - b) - pw b)
 *                                                    db = w (pw softplus(-x) - softplus(x))
 * The target has the input's shape (PyTorch's warning is an error here);
 * weight and pos_weight broadcast against it. The mean is over every element
 * (BCE's weights are not normalised, as PyTorch).
 */
#include <math.h>
#include <stdio.h>

#include "../internal.h"
#include "../ops.h"

#define A v[0]
#define B v[1]

static double sgn(double d) { return (double)((0 < d) - (d < 0)); }

static double mse_f(const double *v, const double *p) { (void)p; return (A - B) * (A - B); }
static double mse_d(int k, const double *v, double y, const double *p) { (void)y, (void)p; return (k ? -2 : 2) * (A - B); }
static double l1_f(const double *v, const double *p) { (void)p; return fabs(A - B); }
static double l1_d(int k, const double *v, double y, const double *p) { (void)y, (void)p; return (k ? -1 : 1) * sgn(A - B); }

/* p = {beta} */
static double smooth_l1_f(const double *v, const double *p)
{
    double z = fabs(A - B);
    return z < p[0] ? 0.5 * z * z / p[0] : z - 0.5 * p[0];
}
static double smooth_l1_d(int k, const double *v, double y, const double *p)
{
    (void)y;
    double d = A - B, r = d <= -p[0] ? -1 : d >= p[0] ? 1 : d / p[0];
    return k ? -r : r;
}

/* p = {delta} */
static double huber_f(const double *v, const double *p)
{
    double z = fabs(A - B);
    return z < p[0] ? 0.5 * z * z : p[0] * (z - 0.5 * p[0]);
}
static double huber_d(int k, const double *v, double y, const double *p)
{
    (void)y;
    double d = A - B, r = d < -p[0] ? -p[0] : d > p[0] ? p[0] : d;
    return k ? -r : r;
}

/* v = {p, b, w} */
static double log_at_least_m100(double x) { return fmax(log(x), -100); }
static double bce_f(const double *v, const double *p)
{
    (void)p;
    return -v[2] * (B * log_at_least_m100(A) + (1 - B) * log_at_least_m100(1 - A));
}
static double bce_d(int k, const double *v, double y, const double *p)
{
    (void)p, (void)y;
    if (k == 0) return v[2] * (A - B) / fmax(A * (1 - A), 1e-12);
    return v[2] * (log_at_least_m100(1 - A) - log_at_least_m100(A));
}

static double softplus1(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
static double sigm(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }
/* v = {x, b, pw}; the weight w multiplies the result (a tg_mul) */
static double bcel_f(const double *v, const double *p)
{
    (void)p;
    return v[2] * B * softplus1(-A) + (1 - B) * softplus1(A);
}
static double bcel_d(int k, const double *v, double y, const double *p)
{
    (void)p, (void)y;
    double pw = v[2];
    if (k == 0) return sigm(A) * (pw * B + 1 - B) - pw * B;
    return pw * softplus1(-A) - softplus1(A);
}

static const tg_pw_kind mse_k = TG_PW_KIND("tg_mse_loss", 2, 3, mse_f, mse_d);
static const tg_pw_kind l1_k = TG_PW_KIND("tg_l1_loss", 2, 3, l1_f, l1_d);
static const tg_pw_kind smooth_l1_k = TG_PW_KIND("tg_smooth_l1_loss", 2, 3, smooth_l1_f, smooth_l1_d);
static const tg_pw_kind huber_k = TG_PW_KIND("tg_huber_loss", 2, 3, huber_f, huber_d);
static const tg_pw_kind bce_k = TG_PW_KIND("tg_binary_cross_entropy", 3, 3, bce_f, bce_d);
static const tg_pw_kind bcel_k = TG_PW_KIND("tg_binary_cross_entropy_with_logits", 3, 3, bcel_f, bcel_d);

/* the elementwise loss of kind k over in (in[0] and in[1] of one shape), reduced */
static tg_tensor *loss(tg_tape *t, const tg_pw_kind *k, tg_tensor **in, tg_tensor *weight, double p0, tg_reduction red)
{
    const char *op = k->op.name;
    if (!tg_inputs_check(t, &k->op, in, 2, 2)) return NULL;
    char sa[TG_SHAPE_STR], sb[TG_SHAPE_STR];
    if (!tg_shape_equal(in[0], in[1]))
        return tg_fail(t, "%s: target %s must have the input's shape %s", op, tg_shape_str(in[1], sb),
                       tg_shape_str(in[0], sa));
    if (red != TG_MEAN && red != TG_SUM && red != TG_NONE)
        return tg_fail(t, "%s: reduction %d is not TG_MEAN, TG_SUM or TG_NONE", op, (int)red);
    tg_tensor *l = tg_pw_apply(t, k, in, (double[TG_PW_PARAMS]){p0});
    if (l && k->n_in == 3 && !tg_shape_equal(l, in[0]))
        return tg_fail(t, "%s: %s %s must broadcast to the input's shape %s", op, k == &bce_k ? "weight" : "pos_weight",
                       tg_shape_str(in[2], sb), tg_shape_str(in[0], sa));
    if (l && weight) {
        l = tg_mul(t, l, weight);
        if (l && !tg_shape_equal(l, in[0]))
            return tg_fail(t, "%s: weight %s must broadcast to the input's shape %s", op, tg_shape_str(weight, sb),
                           tg_shape_str(in[0], sa));
    }
    if (!l || red == TG_NONE) return l;
    return red == TG_SUM ? tg_sum(t, l) : tg_mean(t, l);
}

tg_tensor *tg_mse_loss(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_reduction reduction)
{
    TG_DISPATCH_PROMOTED(tg_mse_loss, (t, input, target, reduction), input, target);
    return loss(t, &mse_k, (tg_tensor *[]){input, target}, NULL, 0, reduction);
}
tg_tensor *tg_l1_loss(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_reduction reduction)
{
    TG_DISPATCH_PROMOTED(tg_l1_loss, (t, input, target, reduction), input, target);
    return loss(t, &l1_k, (tg_tensor *[]){input, target}, NULL, 0, reduction);
}
tg_tensor *tg_smooth_l1_loss(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_reduction reduction, double beta)
{
    TG_DISPATCH_SAME(tg_smooth_l1_loss, (t, input, target, reduction, beta), input, target);
    if (t && !(beta >= 0)) return tg_op_fail(t, &smooth_l1_k.op, "beta %g must be >= 0", beta);
    if (beta == 0) return loss(t, &l1_k, (tg_tensor *[]){input, target}, NULL, 0, reduction);
    return loss(t, &smooth_l1_k, (tg_tensor *[]){input, target}, NULL, beta, reduction);
}
tg_tensor *tg_huber_loss(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_reduction reduction, double delta)
{
    TG_DISPATCH_PROMOTED(tg_huber_loss, (t, input, target, reduction, delta), input, target);
    if (t && !(delta > 0)) return tg_op_fail(t, &huber_k.op, "delta %g must be > 0", delta);
    return loss(t, &huber_k, (tg_tensor *[]){input, target}, NULL, delta, reduction);
}

static tg_tensor *one(tg_tape *t) { return tg_tensor_from(t, (tg_real[]){1}, 0, NULL); }

tg_tensor *tg_binary_cross_entropy(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_tensor *weight,
                                   tg_reduction reduction)
{
    TG_DISPATCH_SAME(tg_binary_cross_entropy, (t, input, target, weight, reduction), input, target, weight);
    tg_tensor *in[3] = {input, target, weight};
    if (!tg_inputs_check(t, &bce_k.op, in, 3, 2)) return NULL;
    for (size_t i = 0; i < input->size; i++)
        if (!(input->data[i] >= 0 && input->data[i] <= 1))
            return tg_op_fail(t, &bce_k.op, "input[%zu] = %g is not in [0, 1] (probabilities; %s takes logits)", i,
                              (double)input->data[i], bcel_k.op.name);
    if (!weight && !(in[2] = one(t))) return NULL;
    return loss(t, &bce_k, in, NULL, 0, reduction);
}

tg_tensor *tg_binary_cross_entropy_with_logits(tg_tape *t, tg_tensor *input, tg_tensor *target, tg_tensor *weight,
                                               tg_tensor *pos_weight, tg_reduction reduction)
{
    TG_DISPATCH_SAME(tg_binary_cross_entropy_with_logits, (t, input, target, weight, pos_weight, reduction), input, target, weight, pos_weight);
    tg_tensor *in[4] = {input, target, pos_weight, weight};
    if (!tg_inputs_check(t, &bcel_k.op, in, 4, 2)) return NULL;
    if (!pos_weight && !(in[2] = one(t))) return NULL;
    return loss(t, &bcel_k, in, weight, 0, reduction);
}
