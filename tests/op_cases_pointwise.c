/* Rows of the pointwise ops (elementwise, math, activations, comparisons):
 * tests/op_cases.h. Inputs [2, 3] (and [3] to broadcast); ranges keep
 * gradchecks off kinks and poles. */
#include <math.h>

#include "op_cases.h"

#define UNARY(fn) OC_BUILD(b_##fn, tg_##fn(t, x[0]))
#define BINARY(fn) OC_BUILD(b_##fn, tg_##fn(t, x[0], x[1]))

/* one input [2, 3] in [lo, hi) */
#define ROW1(fn, lo, hi, nan_) {"tg_" #fn, b_##fn, 1, 1, 0, {OC_IN(lo, hi, 2, 3)}, OC_GROWS, nan_, NULL}
/* a [2, 3] and b [3] (broadcast) */
#define ROW2(fn, lo, hi, blo, bhi, flags_, nan_) \
    {"tg_" #fn, b_##fn, 2, 2, 0, {OC_IN(lo, hi, 2, 3), OC_IN(blo, bhi, 3)}, (flags_) | OC_GROWS, nan_, NULL}

BINARY(add)
BINARY(sub)
BINARY(mul)
BINARY(div)
/* a must be a temporary: the heap input (a leaf with a grad) is copied to
 * one first; a bad one (stale, of another tape, freed) goes in as it is */
OC_BUILD(b_add_inplace,
         tg_add_inplace(t, x[0] && x[0]->requires_grad && !x[0]->tape ? tg_scale(t, x[0], 1) : x[0], x[1]))
OC_BUILD(b_scale, tg_scale(t, x[0], -1.5))
/* through float64 and back (exact from either float type): the grad flows back converted */
OC_BUILD(b_to, tg_to(t, tg_to(t, x[0], TG_F64), x[0] ? x[0]->dtype : TG_REAL_DTYPE))
UNARY(neg)
UNARY(abs)
UNARY(exp)
UNARY(log)
UNARY(sqrt)
OC_BUILD(b_pow, tg_pow(t, x[0], 2.5))
UNARY(sigmoid)
UNARY(tanh)
UNARY(relu)
UNARY(gelu)
OC_BUILD(b_clamp, tg_clamp(t, x[0], -0.5, 0.5))
UNARY(sum)
UNARY(mean)
UNARY(sin)
UNARY(cos)
UNARY(exp2)
UNARY(log2)
UNARY(log10)
UNARY(log1p)
UNARY(expm1)
UNARY(sign)
UNARY(floor)
UNARY(ceil)
UNARY(trunc)
UNARY(round)
UNARY(reciprocal)
UNARY(rsqrt)
UNARY(square)
UNARY(erf)
BINARY(logaddexp)
BINARY(pow_tensor)
BINARY(remainder)
BINARY(fmod)
OC_BUILD(b_lerp, tg_lerp(t, x[0], x[1], x[2]))
UNARY(silu)
OC_BUILD(b_softplus, tg_softplus(t, x[0], 2, 1))  /* both branches: beta x > 1 past the threshold */
OC_BUILD(b_leaky_relu, tg_leaky_relu(t, x[0], 0.1))
OC_BUILD(b_elu, tg_elu(t, x[0], 0.7))
UNARY(selu)
OC_BUILD(b_celu, tg_celu(t, x[0], 1.3))
UNARY(mish)
UNARY(hardswish)
UNARY(hardsigmoid)
OC_BUILD(b_hardtanh, tg_hardtanh(t, x[0], -0.5, 0.5))
UNARY(softsign)
UNARY(gelu_tanh)
BINARY(eq)
BINARY(ne)
BINARY(lt)
BINARY(le)
BINARY(gt)
BINARY(ge)
OC_BUILD(b_where, tg_where(t, x[0], x[1], x[2]))
OC_BUILD(b_masked_fill, tg_masked_fill(t, x[0], x[1], -2))
BINARY(maximum)
BINARY(minimum)
UNARY(isnan)
UNARY(isinf)
UNARY(isfinite)
UNARY(logical_not)
BINARY(logical_and)
BINARY(logical_or)
BINARY(logical_xor)
UNARY(max)
UNARY(min)

/* The kinks (abs, relu at 0; clamp, hardtanh at +-0.5; leaky_relu, elu,
 * selu, celu at 0; hardswish at +-3, hardsigmoid at +-3) are more than eps
 * from every drawn value at these seeds; the sign rows check a zero grad. */
static const op_case rows[] = {
    ROW2(add, -1, 1, -1, 1, 0, OC_NAN_SAME),
    ROW2(sub, -1, 1, -1, 1, 0, OC_NAN_SAME),
    ROW2(mul, -1, 1, -1, 1, 0, OC_NAN_SAME),
    /* a bool or integer operand joins the float one's type (x * (x > y)); no grad flows to it */
    {"tg_mul", b_mul, 2, 2, 0, {OC_IN(-1, 1, 2, 3), OC_INK(OC_MASK, 0, 1, 3)}, OC_GROWS, OC_NAN_SAME, NULL},
    {"tg_sub", b_sub, 2, 2, 0, {OC_IN(-1, 1, 2, 3), OC_INK(OC_CLASS, -2, 3, 2, 3)}, OC_GROWS, OC_NAN_SAME, NULL},
    {"tg_where", b_where, 3, 3, 0, {OC_INK(OC_MASK, 0, 1, 2, 3), OC_IN(-1, 1, 2, 3), OC_INK(OC_CLASS, 0, 4, 3)}, OC_GROWS,
     NULL, "NaN: cond is a bool tensor in PyTorch"},
    ROW2(div, -1, 1, 0.5, 1.5, 0, OC_NAN_SAME),
    ROW2(add_inplace, -1, 1, -1, 1, 0, OC_NAN_SAME),
    ROW1(scale, -1, 1, OC_NAN_SAME),
    ROW1(neg, -1, 1, OC_NAN_SAME),
    ROW1(to, -1, 1, OC_NAN_SAME),
    ROW1(abs, -1, 1, OC_NAN_SAME),
    ROW1(exp, -1, 1, OC_NAN_SAME),
    ROW1(log, 0.5, 2, OC_NAN_SAME),
    ROW1(sqrt, 0.5, 2, OC_NAN_SAME),
    ROW1(pow, 0.5, 2, OC_NAN_SAME),
    ROW1(sigmoid, -2, 2, OC_NAN_SAME),
    ROW1(tanh, -2, 2, OC_NAN_SAME),
    ROW1(relu, -1, 1, OC_NAN_SAME),
    ROW1(gelu, -2, 2, OC_NAN_SAME),
    ROW1(clamp, -1, 1, OC_NAN_SAME),
    ROW1(sum, -1, 1, OC_NAN_ALL),
    ROW1(mean, -1, 1, OC_NAN_ALL),
    ROW1(sin, -2, 2, OC_NAN_SAME),
    ROW1(cos, -2, 2, OC_NAN_SAME),
    ROW1(exp2, -1, 1, OC_NAN_SAME),
    ROW1(log2, 0.5, 2, OC_NAN_SAME),
    ROW1(log10, 0.5, 2, OC_NAN_SAME),
    ROW1(log1p, -0.5, 1, OC_NAN_SAME),
    ROW1(expm1, -1, 1, OC_NAN_SAME),
    ROW1(sign, -1, 1, "......"),  /* torch.sign(NaN) is 0 */
    ROW1(floor, -2.5, 2.5, OC_NAN_SAME),  /* grad 0 everywhere, as PyTorch */
    ROW1(ceil, -2.5, 2.5, OC_NAN_SAME),
    ROW1(trunc, -2.5, 2.5, OC_NAN_SAME),
    ROW1(round, -2.5, 2.5, OC_NAN_SAME),
    ROW1(reciprocal, 0.5, 2, OC_NAN_SAME),
    ROW1(rsqrt, 0.5, 2, OC_NAN_SAME),
    ROW1(square, -1, 1, OC_NAN_SAME),
    ROW1(erf, -1.5, 1.5, OC_NAN_SAME),
    ROW2(logaddexp, -1, 1, -1, 1, 0, OC_NAN_SAME),
    ROW2(pow_tensor, 0.5, 2, -1.5, 1.5, 0, OC_NAN_SAME),
    /* a / b in (-1.82, -1.21), off the integers where the grads jump: floor -2, trunc -1 */
    ROW2(remainder, 1.7, 2, -1.4, -1.1, 0, OC_NAN_SAME),
    ROW2(fmod, -2, -1.7, 1.1, 1.4, 0, OC_NAN_SAME),
    {"tg_lerp", b_lerp, 3, 3, 0, {OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 3), OC_IN(-0.5, 1.5, 2, 3)}, OC_GROWS, OC_NAN_SAME, NULL},
    ROW1(silu, -2, 2, OC_NAN_SAME),
    ROW1(softplus, -1, 1, OC_NAN_SAME),
    ROW1(leaky_relu, -1, 1, OC_NAN_SAME),
    ROW1(elu, -1, 1, OC_NAN_SAME),
    ROW1(selu, -1, 1, OC_NAN_SAME),
    ROW1(celu, -1, 1, OC_NAN_SAME),
    ROW1(mish, -2, 2, OC_NAN_SAME),
    ROW1(hardswish, -4, 4, OC_NAN_SAME),
    ROW1(hardsigmoid, -4, 4, OC_NAN_SAME),
    ROW1(hardtanh, -1, 1, OC_NAN_SAME),
    ROW1(softsign, -2, 2, OC_NAN_SAME),
    ROW1(gelu_tanh, -2, 2, OC_NAN_SAME),
    /* a comparison with NaN is false (ne: true), never NaN */
    ROW2(eq, -1, 1, -1, 1, OC_NO_GRAD, "......"),
    ROW2(ne, -1, 1, -1, 1, OC_NO_GRAD, "......"),
    ROW2(lt, -1, 1, -1, 1, OC_NO_GRAD, "......"),
    ROW2(le, -1, 1, -1, 1, OC_NO_GRAD, "......"),
    ROW2(gt, -1, 1, -1, 1, OC_NO_GRAD, "......"),
    ROW2(ge, -1, 1, -1, 1, OC_NO_GRAD, "......"),
    {"tg_where", b_where, 3, 3, 0, {OC_INK(OC_MASK, 0, 1, 2, 3), OC_IN(-1, 1, 2, 3), OC_IN(-1, 1, 3)}, OC_GROWS, NULL,
     "NaN: cond is a bool tensor in PyTorch"},
    /* element 1 is masked (OC_MASK is 0, 1, 0, ...): its NaN is filled over */
    {"tg_masked_fill", b_masked_fill, 2, 2, 0, {OC_IN(-1, 1, 2, 3), OC_INK(OC_MASK, 0, 1, 2, 3)}, OC_GROWS, "......", NULL},
    ROW2(maximum, -1, 1, -1, 1, 0, OC_NAN_SAME),
    ROW2(minimum, -1, 1, -1, 1, 0, OC_NAN_SAME),
    ROW1(max, -1, 1, OC_NAN_ALL),
    ROW1(min, -1, 1, OC_NAN_ALL),
    /* bool outputs, never NaN: isnan is true at the NaN, logical ops read NaN as true */
    {"tg_isnan", b_isnan, 1, 1, 0, {OC_IN(-1, 1, 2, 3)}, OC_NO_GRAD | OC_GROWS, "......", NULL},
    {"tg_isinf", b_isinf, 1, 1, 0, {OC_IN(-1, 1, 2, 3)}, OC_NO_GRAD | OC_GROWS, "......", NULL},
    {"tg_isfinite", b_isfinite, 1, 1, 0, {OC_IN(-1, 1, 2, 3)}, OC_NO_GRAD | OC_GROWS, "......", NULL},
    {"tg_logical_not", b_logical_not, 1, 1, 0, {OC_IN(-1, 1, 2, 3)}, OC_NO_GRAD | OC_GROWS, "......", NULL},
    ROW2(logical_and, -1, 1, -1, 1, OC_NO_GRAD, "......"),
    ROW2(logical_or, -1, 1, -1, 1, OC_NO_GRAD, "......"),
    ROW2(logical_xor, -1, 1, -1, 1, OC_NO_GRAD, "......"),
    /* integer branches give their type */
    {"tg_where", b_where, 3, 3, 0, {OC_INK(OC_MASK, 0, 1, 2, 3), OC_INK(OC_CLASS, 0, 4, 2, 3), OC_INK(OC_CLASS, -2, 2, 3)},
     OC_NO_GRAD | OC_GROWS, NULL, "NaN: integer branches"},
    /* bool operands (false, true, false, ...) */
    {"tg_logical_and", b_logical_and, 2, 2, 0, {OC_INK(OC_MASK, 0, 1, 2, 3), OC_INK(OC_MASK, 0, 1, 3)},
     OC_NO_GRAD | OC_GROWS, NULL, "NaN: bool operands"},
    {"tg_logical_not", b_logical_not, 1, 1, 0, {OC_INK(OC_MASK, 0, 1, 2, 3)}, OC_NO_GRAD | OC_GROWS, NULL,
     "NaN: a bool operand"},
};

const oc_family oc_pointwise = {"pointwise", rows, sizeof rows / sizeof rows[0]};
