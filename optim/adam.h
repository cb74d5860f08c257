/* tapegrad: Adam and AdamW, as torch.optim.Adam / torch.optim.AdamW.
 *
 * One optimizer per parameter store. For each parameter p with gradient g,
 * at step t = 1, 2, ... (lr, b1, b2, eps, wd from the options):
 *
 *   Adam  (adamw = false):  g = g + wd * p            L2 penalty in the gradient
 *   AdamW (adamw = true):   p = p * (1 - lr * wd)     decoupled decay, before the moments
 *   m = b1 * m + (1 - b1) * g
 *   v = b2 * v + (1 - b2) * g * g
 *   denom = sqrt(v) / sqrt(1 - b2^t) + eps            eps added after the square root
 *   p = p - lr / (1 - b1^t) * m / denom
 *
 * The scalar coefficients (bias corrections, step size) are computed in
 * double and rounded to tg_real, the per-element arithmetic is done in tg_real
 * in the order torch uses, so a float build follows torch's float32
 * trajectories to rounding (tests/test_optim_torch.c checks 1e-5 relative over 100
 * steps against bench/torch/make_optim_fixtures.py).
 *
 * Weight decay applies to every parameter, as in PyTorch. With no_decay_1d,
 * parameters with fewer than 2 dims (biases, LayerNorm weights and biases)
 * are left out of it (nanoGPT's convention; torch does this with two
 * parameter groups).
 *
 * The moments are allocated once by tg_adam_new; a step allocates nothing.
 * The optimizer reads the store's flat gradient (tg_params_grad), so the
 * store must not gain parameters after tg_adam_new.
 */
#ifndef TAPEGRAD_OPTIM_ADAM_H
#define TAPEGRAD_OPTIM_ADAM_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/engine/params.h"
#include "../core/io/io.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_adam_opts {
    double lr;            /* >= 0 */
    double beta1, beta2;  /* each in [0, 1) */
    double eps;           /* > 0 (torch also allows 0; we refuse the 0/0 it allows) */
    double weight_decay;  /* >= 0 */
    bool adamw;           /* decoupled weight decay (torch.optim.AdamW) */
    bool no_decay_1d;     /* no weight decay for parameters with ndim < 2 */
} tg_adam_opts;

/* torch.optim.Adam's defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8,
 * weight_decay 0, adamw false, no_decay_1d false. For AdamW set adamw = true
 * and weight_decay yourself: torch.optim.AdamW's default is 0.01. */
tg_adam_opts tg_adam_defaults(void);

/* 0 when the options are valid; else -1 with a message naming the option
 * ("tg_adam: beta2 = 1 is outside [0, 1)") in tg_error(). */
int tg_adam_check(const tg_adam_opts *o);

typedef struct tg_adam tg_adam;

/* An optimizer for every parameter of p (o NULL: tg_adam_defaults()).
 * NULL with a message in tg_error() on bad options, NULL p, or out of memory. */
tg_adam *tg_adam_new(tg_params *p, const tg_adam_opts *o);
void tg_adam_free(tg_adam *a);

/* One update of every parameter from its current gradient (the gradient is
 * read, not cleared). 0 on success; -1, changing nothing, when the store has
 * gained parameters since tg_adam_new. */
int tg_adam_step(tg_adam *a);

/* Sets the learning rate of the next steps (for schedules: pass
 * tg_lr_at(s, tg_adam_steps(a))). -1, changing nothing, unless lr >= 0. */
int tg_adam_set_lr(tg_adam *a, double lr);
double tg_adam_lr(const tg_adam *a);
/* Steps taken so far (t of the last step; 0 before the first). */
long tg_adam_steps(const tg_adam *a);
const tg_adam_opts *tg_adam_options(const tg_adam *a);

/* Exports the state into s: tensors "optim.adam.m.<param name>" and
 * "optim.adam.v.<param name>" (each shaped like its parameter) and the
 * metadata "optim.adam.step" (decimal step count). Hyperparameters are not
 * saved: they come from the caller's configuration. 0 on success; -1 with a
 * message (duplicate name in s, out of memory), s then holding part of the
 * state: discard it. */
int tg_adam_state_save(const tg_adam *a, tg_safetensors *s);

/* Restores the state saved by tg_adam_state_save into an optimizer over a
 * store with the same parameter names and shapes. Every name and shape is
 * checked before anything is copied: the first missing or mis-shaped tensor
 * (or a missing/invalid step) is reported by name and the optimizer is left
 * unchanged. Tensors of s that are not Adam state for p are ignored. */
int tg_adam_state_load(tg_adam *a, const tg_safetensors *s);

#ifdef __cplusplus
}
#endif

#endif
