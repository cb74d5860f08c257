/* tapegrad: gradient clipping by global norm, as torch.nn.utils.clip_grad_norm_
 * (norm_type 2). */
#ifndef TAPEGRAD_OPTIM_CLIP_H
#define TAPEGRAD_OPTIM_CLIP_H

#include "../core/engine/params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The L2 norm of all gradients of p taken as one vector (squares summed in
 * double); -1 (with tg_error()) when p is NULL. */
double tg_grad_norm(const tg_params *p);

/* Computes the global L2 norm of p's gradients and, when
 * max_norm / (norm + 1e-6) < 1, multiplies every gradient by that factor
 * (torch's formula: the clipped norm lands just under max_norm). Returns the
 * norm before clipping. All-zero gradients give 0 and stay zero.
 *
 * A non-finite norm (a NaN or Inf in some gradient) is returned as is and
 * the gradients are left untouched, so the caller can see it and skip the
 * step (torch would multiply them by NaN or 0). max_norm = 0 zeroes every
 * gradient, as torch. A negative or NaN max_norm, or p NULL, changes
 * nothing and returns -1 (tg_error() says which). */
double tg_clip_grad_norm(tg_params *p, double max_norm);

#ifdef __cplusplus
}
#endif

#endif
