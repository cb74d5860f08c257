/* tapegrad: gradient checking by central differences.
 *
 * f builds a computation on a tape from the given input tensors and returns
 * its output. A non-scalar output is reduced with a fixed random weighting
 * w (L = sum w * out; a plain sum hides softmax bugs since softmax rows sum to
 * one). For every element of every input, the analytic dL/dx from tg_backward
 * is compared with (L(x+eps) - L(x-eps)) / 2eps, element by element:
 *     |analytic - numeric| <= atol + rtol * |numeric|
 * and the worst element is reported with its input and index. Signs count.
 *
 * Inputs are caller-owned tensors (tg_tensor_alloc or a tg_params store);
 * their data is restored exactly after each perturbation, their grad is
 * overwritten.
 *
 * The check runs in float64 whatever the inputs' dtype, as PyTorch's does:
 * float32 heap inputs are replaced by float64 copies for its duration (the
 * ops f calls then run their float64 copies), and get their grads back rounded
 * to float32. A float32 rounding leaves a central difference good to about
 * 1e-3 only, too coarse to tell a 1% wrong backward from a right one. With
 * same_dtype, or when a float32 input lives in a tg_params store (its data
 * cannot be swapped), the check runs in the inputs' own dtype: that is how
 * the float32 kernels themselves are checked. f must build everything it
 * mixes with the inputs from them (or in float64): an op refuses operands of
 * two float types.
 */
#ifndef TAPEGRAD_GRADCHECK_H
#define TAPEGRAD_GRADCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "tape.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef tg_tensor *(*tg_gradcheck_fn)(tg_tape *t, tg_tensor **inputs, void *ctx);

typedef struct tg_gradcheck_opts {
    double eps, atol, rtol;  /* 0 for each: the precision's default */
    unsigned long long seed; /* weighting of a non-scalar output */
    bool same_dtype;         /* check float32 inputs in float32 (its kernels), not float64 */
} tg_gradcheck_opts;

/* Gradcheck is meant for float64, whose defaults are PyTorch's
 * torch.autograd.gradcheck: eps 1e-6, atol 1e-5, rtol 1e-3. The numeric
 * estimate itself is off by rounding (about 1e-16 |L| / eps) plus truncation
 * (about eps^2 times the third derivative), so much tighter tolerances fail
 * correct composites. float32's defaults, eps 1e-3, atol 1e-3,
 * rtol 1e-2, are a smoke test: float rounding leaves the estimate good to
 * about 1e-3, enough to catch a wrong sign, a missing term or a swapped
 * index, not a subtle error. */
tg_gradcheck_opts tg_gradcheck_defaults_for(tg_dtype dt);
/* float64's: the check runs in float64 unless same_dtype. */
static inline tg_gradcheck_opts tg_gradcheck_defaults(void) { return tg_gradcheck_defaults_for(TG_F64); }

typedef struct tg_gradcheck_result {
    bool ok;
    int worst_input;        /* index into inputs, -1 if none */
    size_t worst_index;     /* flat element index */
    double analytic, numeric;
    double worst_ratio;     /* |a - n| / (atol + rtol |n|); ok iff <= 1 */
} tg_gradcheck_result;

/* Only inputs with requires_grad are checked (set it on the ones you want).
 * When ok is false, tg_error() says why: the worst element ("gradcheck
 * FAILED: worst input 1 index 7 analytic ... numeric ...") or the error that
 * stopped the check. */
tg_gradcheck_result tg_gradcheck(tg_gradcheck_fn f, void *ctx, tg_tensor **inputs, int n_inputs,
                                 const tg_gradcheck_opts *opts);

#ifdef __cplusplus
}
#endif

#endif
