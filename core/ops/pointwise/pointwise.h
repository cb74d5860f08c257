/* tapegrad core ops, pointwise: binary arithmetic with broadcasting, math, activations, comparisons and selection.
 * The conventions of every op are in core/ops/ops.h. */
#ifndef TAPEGRAD_OPS_POINTWISE_H
#define TAPEGRAD_OPS_POINTWISE_H

#include <stdbool.h>
#include <stdint.h>

#include "../../engine/op.h"
#include "../../engine/tape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- binary arithmetic (core/ops/pointwise/binary.c) -------------------------------
 * add/sub/mul/div broadcast as NumPy / PyTorch: shapes align from the last
 * dim and each pair of dims is equal or one of them 1 (or missing), which
 * stretches; out has the broadcast shape, and a stretched operand's grad is
 * summed over the dims it was stretched along. Anything else is an error
 * naming both shapes. x / 0 is +-inf, 0 / 0 NaN (IEEE, as PyTorch). */
tg_tensor *tg_add(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_sub(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_mul(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_div(tg_tape *t, tg_tensor *a, tg_tensor *b);
/* a + b written over a's memory (b broadcasts to a's shape; the bits of
 * tg_add): the result shares a's data, and a holds the sum afterwards. Only for a temporary whose values nothing reads again:
 * no op has read it yet, and the op that made it never reads its output in
 * backward (matmul, embedding, dropout, add do not; exp, tanh, softmax do).
 * The transformer block's residual adds write over the branch's output,
 * which saves one [B, T, D] buffer per add. */
tg_tensor *tg_add_inplace(tg_tape *t, tg_tensor *a, tg_tensor *b);

/* ---- dtype (core/ops/pointwise/to.c) ------------------------------------------------
 * a converted to dtype (PyTorch's a.to(dtype)): float types round to nearest
 * even, integers truncate toward zero and saturate (NaN: 0), bool is a != 0.
 * Between float types the grad flows back converted; an integer or bool side
 * takes none. The same dtype gives a copy. */
tg_tensor *tg_to(tg_tape *t, tg_tensor *a, tg_dtype dtype);

/* ---- math (core/ops/pointwise/math.c) -----------------------------------------------
 * Out has a's shape; the binary and ternary ones broadcast as tg_add.
 * Domain errors give what PyTorch gives, not an error: log(x < 0),
 * sqrt(x < 0), pow(x < 0, non-integer p) are NaN, log(0) = log2(0) = -inf,
 * rsqrt(0) = inf, sign(NaN) = 0 (anomaly mode reports NaN and inf). NaN in
 * gives NaN out. Derivatives: core/ops/pointwise/math.c. */
tg_tensor *tg_scale(tg_tape *t, tg_tensor *a, double s);  /* s * a */
tg_tensor *tg_neg(tg_tape *t, tg_tensor *a);
tg_tensor *tg_abs(tg_tape *t, tg_tensor *a);              /* grad sign(a), 0 at 0 */
tg_tensor *tg_exp(tg_tape *t, tg_tensor *a);
tg_tensor *tg_log(tg_tape *t, tg_tensor *a);
tg_tensor *tg_sqrt(tg_tape *t, tg_tensor *a);
tg_tensor *tg_pow(tg_tape *t, tg_tensor *a, double p);    /* a^p; p = 0: grad 0 */
/* min(max(a, lo), hi) as torch.clamp (NaN stays NaN, lo > hi gives hi); the
 * grad passes where lo <= a <= hi. Pass -INFINITY or INFINITY for one side.
 * NaN bounds are an error. */
tg_tensor *tg_clamp(tg_tape *t, tg_tensor *a, double lo, double hi);
tg_tensor *tg_sin(tg_tape *t, tg_tensor *a);
tg_tensor *tg_cos(tg_tape *t, tg_tensor *a);
tg_tensor *tg_exp2(tg_tape *t, tg_tensor *a);
tg_tensor *tg_log2(tg_tape *t, tg_tensor *a);
tg_tensor *tg_log10(tg_tape *t, tg_tensor *a);
tg_tensor *tg_log1p(tg_tape *t, tg_tensor *a);
tg_tensor *tg_expm1(tg_tape *t, tg_tensor *a);
tg_tensor *tg_sign(tg_tape *t, tg_tensor *a);        /* grad 0 */
tg_tensor *tg_reciprocal(tg_tape *t, tg_tensor *a);
tg_tensor *tg_rsqrt(tg_tape *t, tg_tensor *a);
tg_tensor *tg_square(tg_tape *t, tg_tensor *a);
tg_tensor *tg_erf(tg_tape *t, tg_tensor *a);
/* to an integer; grad 0 (PyTorch's); round halves to even as torch.round */
tg_tensor *tg_floor(tg_tape *t, tg_tensor *a);
tg_tensor *tg_ceil(tg_tape *t, tg_tensor *a);
tg_tensor *tg_trunc(tg_tape *t, tg_tensor *a);
tg_tensor *tg_round(tg_tape *t, tg_tensor *a);
/* log(e^a + e^b), stable */
tg_tensor *tg_logaddexp(tg_tape *t, tg_tensor *a, tg_tensor *b);
/* a^b with b a tensor (torch.pow(a, b)); tg_pow takes a number */
tg_tensor *tg_pow_tensor(tg_tape *t, tg_tensor *a, tg_tensor *b);
/* a mod b as torch.remainder (Python's %: the sign of b) and torch.fmod
 * (C's fmod: the sign of a); x mod 0 is NaN. Grads 1 and -floor(a / b) /
 * -trunc(a / b), as PyTorch. */
tg_tensor *tg_remainder(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_fmod(tg_tape *t, tg_tensor *a, tg_tensor *b);
/* a + w (b - a); w a tensor (a 0-d one for a number) */
tg_tensor *tg_lerp(tg_tape *t, tg_tensor *a, tg_tensor *b, tg_tensor *w);

/* ---- activations (core/ops/pointwise/activation.c) ----------------------------------
 * torch.nn.functional's; out has a's shape. PyTorch's defaults: softplus
 * beta 1 threshold 20, leaky_relu 0.01, elu / celu alpha 1, hardtanh -1 and 1 */
tg_tensor *tg_relu(tg_tape *t, tg_tensor *a);
tg_tensor *tg_sigmoid(tg_tape *t, tg_tensor *a);
tg_tensor *tg_tanh(tg_tape *t, tg_tensor *a);
/* GELU, erf form (PyTorch's default approximate='none'). */
tg_tensor *tg_gelu(tg_tape *t, tg_tensor *a);
tg_tensor *tg_silu(tg_tape *t, tg_tensor *a);
tg_tensor *tg_softplus(tg_tape *t, tg_tensor *a, double beta, double threshold);
tg_tensor *tg_leaky_relu(tg_tape *t, tg_tensor *a, double negative_slope);
tg_tensor *tg_elu(tg_tape *t, tg_tensor *a, double alpha);
tg_tensor *tg_selu(tg_tape *t, tg_tensor *a);
tg_tensor *tg_celu(tg_tape *t, tg_tensor *a, double alpha);
tg_tensor *tg_mish(tg_tape *t, tg_tensor *a);
tg_tensor *tg_hardswish(tg_tape *t, tg_tensor *a);
tg_tensor *tg_hardsigmoid(tg_tape *t, tg_tensor *a);
tg_tensor *tg_hardtanh(tg_tape *t, tg_tensor *a, double min_val, double max_val);
tg_tensor *tg_softsign(tg_tape *t, tg_tensor *a);
/* GELU, tanh form (PyTorch's approximate='tanh') */
tg_tensor *tg_gelu_tanh(tg_tape *t, tg_tensor *a);

/* ---- comparisons and selection (core/ops/pointwise/compare.c) -------------------------
 * Broadcast as tg_add. eq ... ge give a bool tensor and never a grad; two
 * integer or bool operands are compared exactly (in float64, to 2^53). cond
 * and mask are bool tensors (a float one is refused, as PyTorch).
 * where's grads go to a and b (cond gets none); integer or bool a and b give
 * their promoted type (bool < uint8 < int32 < int64; chosen in float64, exact to 2^53);
 * masked_fill broadcasts a and mask (PyTorch's out-of-place form). maximum / minimum propagate
 * NaN and split the grad half and half on ties (PyTorch). */
tg_tensor *tg_eq(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_ne(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_lt(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_le(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_gt(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_ge(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_where(tg_tape *t, tg_tensor *cond, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_masked_fill(tg_tape *t, tg_tensor *a, tg_tensor *mask, double value);
tg_tensor *tg_maximum(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_minimum(tg_tape *t, tg_tensor *a, tg_tensor *b);
/* Bool tensors of a's shape, no grad (torch.isnan, isinf, isfinite): an
 * integer or bool a is never NaN or infinite. */
tg_tensor *tg_isnan(tg_tape *t, tg_tensor *a);
tg_tensor *tg_isinf(tg_tape *t, tg_tensor *a);
tg_tensor *tg_isfinite(tg_tape *t, tg_tensor *a);
/* Bool tensors, no grad (torch.logical_not ...): each operand of any dtype
 * read as true where nonzero (NaN is true); and / or / xor broadcast as tg_add. */
tg_tensor *tg_logical_not(tg_tape *t, tg_tensor *a);
tg_tensor *tg_logical_and(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_logical_or(tg_tape *t, tg_tensor *a, tg_tensor *b);
tg_tensor *tg_logical_xor(tg_tape *t, tg_tensor *a, tg_tensor *b);

#ifdef __cplusplus
}
#endif

#endif
