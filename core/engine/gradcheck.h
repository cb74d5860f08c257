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
} tg_gradcheck_opts;

/* Gradcheck is meant for the double build, whose defaults are PyTorch's
 * torch.autograd.gradcheck: eps 1e-6, atol 1e-5, rtol 1e-3. The numeric
 * estimate itself is off by rounding (about 1e-16 |L| / eps) plus truncation
 * (about eps^2 times the third derivative), so much tighter tolerances fail
 * correct composites. The float build's defaults, eps 1e-3, atol 1e-3,
 * rtol 1e-2, are a smoke test: float rounding leaves the estimate good to
 * about 1e-3, enough to catch a wrong sign, a missing term or a swapped
 * index, not a subtle error. */
tg_gradcheck_opts tg_gradcheck_defaults(void);

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
