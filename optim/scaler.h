/* tapegrad: dynamic loss scaling for float16 training, PyTorch's GradScaler
 * (torch.cuda.amp.GradScaler, 1.13): its defaults, its rule, its errors.
 *
 * A float16 gradient underflows to 0 below 2^-24; the loss is multiplied by
 * a large scale S before backward so the gradients are S times larger, and
 * divided again before the optimizer sees them. A step whose gradients hold
 * an Inf or NaN (S was too large) is skipped and S shrinks; S grows again
 * after growth_interval clean steps. A training step (PyTorch's documented
 * pattern, the unscale and the clipping optional):
 *
 *   tg_optim_zero_grad(opt);
 *   tg_backward(tape, tg_grad_scaler_scale(sc, tape, loss));
 *   tg_grad_scaler_unscale(sc, opt);           grads / S, Inf/NaN looked for
 *   tg_clip_grad_norm(params, 1.0);            on the true gradients
 *   tg_grad_scaler_step(sc, opt);              tg_optim_step unless Inf/NaN
 *   tg_grad_scaler_update(sc);                 the new S
 *
 * The rule, torch's _amp_foreach_non_finite_check_and_unscale_ and
 * _amp_update_scale_ (aten/src/ATen/native/cuda/AmpKernels.cu):
 *   S is a float32 (in both builds, as torch's scale tensor);
 *   unscale: inv = float32(1 / double(S)); found_inf when any gradient of
 *     a parameter the step moves (not frozen, requires_grad: torch's grads
 *     that are not None) is not finite, looked at before it is multiplied;
 *     each of those gradients g = g * inv (g's own precision), none when
 *     inv == 1;
 *   step: tg_optim_step only when nothing was found: a skipped step leaves
 *     parameters and optimizer state as they are (Adam's step count too);
 *   update, found_inf in any optimizer unscaled since the last update:
 *     S = float32(double(S) * backoff_factor), growth tracker = 0;
 *   otherwise tracker + 1, and when that reaches growth_interval:
 *     S = float32(double(S) * growth_factor) unless that is Inf, tracker = 0.
 *   (The Inf guard is torch 2.1's fix; 1.13 let S grow to Inf, and an Inf S
 *   never comes back: every later step is skipped.)
 *
 * Each optimizer (up to TG_GRAD_SCALER_OPTIMS of them between updates) is
 * unscaled once per update: tg_grad_scaler_step unscales it unless
 * tg_grad_scaler_unscale did; a second unscale, an unscale after the step,
 * a second step, or an update with no unscale before it are errors, with
 * torch's messages. A disabled scaler (enabled false) does nothing: the loss
 * is returned as it is, step always steps, the scale reads 1.
 *
 * Checkpoints: the scale and the growth tracker are metadata
 * "optim.grad_scaler.scale" (%.17g: the float32 exactly) and
 * "optim.grad_scaler.growth_tracker", beside the optimizer's state; the
 * factors and interval come from the caller's configuration (as the
 * optimizer's hyperparameters do).
 */
#ifndef TAPEGRAD_OPTIM_SCALER_H
#define TAPEGRAD_OPTIM_SCALER_H

#include <stdbool.h>

#include "../core/engine/tape.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Optimizers one scaler serves between two updates. */
#define TG_GRAD_SCALER_OPTIMS 8

typedef struct tg_grad_scaler_opts {
    double init_scale;      /* > 0 and finite as a float32 */
    double growth_factor;   /* > 1 */
    double backoff_factor;  /* in (0, 1) */
    long growth_interval;   /* > 0 */
    bool enabled;
} tg_grad_scaler_opts;

/* torch's: init_scale 2^16, growth_factor 2, backoff_factor 0.5,
 * growth_interval 2000, enabled. */
tg_grad_scaler_opts tg_grad_scaler_defaults(void);
/* 0 when the options are valid; else -1 with a message naming the option
 * ("tg_grad_scaler: growth_factor = 1 must be > 1"). A disabled scaler's
 * options are checked too. */
int tg_grad_scaler_check(const tg_grad_scaler_opts *o);

typedef struct tg_grad_scaler tg_grad_scaler;

/* NULL on bad or NULL options, or out of memory. */
tg_grad_scaler *tg_grad_scaler_new(const tg_grad_scaler_opts *o);
void tg_grad_scaler_free(tg_grad_scaler *s);

/* loss * S on t (tg_scale), to run tg_backward on: every gradient comes out
 * S times larger. A bfloat16 or float16 loss is widened to float32 first
 * (tg_to), as torch's product with its float32 scale is. loss itself when
 * the scaler is disabled; NULL when loss is (the tape keeps its error) or,
 * with an error on t, when s is NULL. */
tg_tensor *tg_grad_scaler_scale(tg_grad_scaler *s, tg_tape *t, tg_tensor *loss);
/* Divides the gradients of the parameters o moves by S in place and records
 * whether one was Inf or NaN. -1 with a message on a NULL argument or a second call for
 * o since the last update, or after tg_grad_scaler_step(s, o). */
int tg_grad_scaler_unscale(tg_grad_scaler *s, tg_optim *o);
/* Unscales o unless already done, then tg_optim_step(o) unless an Inf or
 * NaN was found. 1 when it stepped, 0 when it skipped, -1 with a message on
 * a NULL argument, a second step since the last update, or a failed step. */
int tg_grad_scaler_step(tg_grad_scaler *s, tg_optim *o);
/* The new scale from what the unscales since the last update found (the
 * rule above); forgets them. -1 with a message when s is NULL or no
 * optimizer was unscaled. */
int tg_grad_scaler_update(tg_grad_scaler *s);

/* S (1 when disabled, NAN with a message when s is NULL). */
double tg_grad_scaler_get_scale(const tg_grad_scaler *s);
/* Clean steps since the last change of S (0 when disabled, -1 with a
 * message when s is NULL). */
long tg_grad_scaler_growth_tracker(const tg_grad_scaler *s);

/* Adds the scale and the tracker to s's metadata (nothing when disabled,
 * as torch's empty state_dict). -1 with a message. */
int tg_grad_scaler_state_save(const tg_grad_scaler *s, tg_safetensors *st);
/* Restores them (nothing when disabled). -1 with a message naming the key,
 * the scaler unchanged, when one is missing or invalid (a scale that is not
 * a finite, positive float32; a tracker that is not a count). */
int tg_grad_scaler_state_load(tg_grad_scaler *s, const tg_safetensors *st);

#ifdef __cplusplus
}
#endif

#endif
