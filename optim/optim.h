/* tapegrad: optimizers, one interface for SGD, Adam and AdamW
 * (torch.optim.SGD / Adam / AdamW), plus gradient clipping and schedules.
 *
 *   optim/optim.h     this interface; the update rules are in optim/sgd.c
 *                     and optim/adam.c
 *   optim/clip.h      clip by global gradient norm (clip_grad_norm_)
 *   optim/schedule.h  learning-rate schedules: warmup, cosine / linear decay
 *
 * One optimizer per parameter store. A training step:
 *
 *   tg_optim_zero_grad(opt);
 *   tg_backward(tape, loss);
 *   tg_clip_grad_norm(params, 1.0);
 *   tg_optim_set_lr(opt, tg_lr_at(&sched, tg_optim_steps(opt)));
 *   tg_optim_step(opt);
 *
 * The update rules, for each parameter p with gradient g (wd = weight_decay,
 * applied to every parameter, or with no_decay_1d only to those with 2 or
 * more dims: nanoGPT's convention, torch's two parameter groups):
 *
 *   SGD (mu = momentum, tau = dampening):
 *     g = g + wd * p
 *     b = g (first step), b = mu * b + (1 - tau) * g (later)     when mu != 0
 *     g = g + mu * b (nesterov), g = b (otherwise)               when mu != 0
 *     p = p - lr * g
 *   Adam / AdamW, at step t = 1, 2, ...:
 *     Adam:  g = g + wd * p            AdamW: p = p * (1 - lr * wd)
 *     m = b1 * m + (1 - b1) * g
 *     v = b2 * v + (1 - b2) * g * g
 *     p = p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 *
 * Scalar coefficients are computed in double and rounded to tg_real, the
 * per-element arithmetic follows torch's order, so the float build follows
 * torch's float32 trajectories to rounding (tests/test_optim_torch.c).
 *
 * The state (momentum buffers, or Adam's moments) is allocated once by
 * tg_optim_new; a step allocates nothing. The optimizer reads the store's
 * flat gradient, so the store must not gain parameters after tg_optim_new.
 *
 * Checkpoints: the state is exported as named tensors, PyTorch state_dict
 * keys for the parameter part, and a step count in the metadata:
 *   SGD         "optim.sgd.momentum.<param name>" (only when momentum != 0),
 *               "optim.sgd.step"
 *   Adam/AdamW  "optim.adam.m.<param name>", "optim.adam.v.<param name>",
 *               "optim.adam.step"
 * so a checkpoint holds model and optimizer in one safetensors file and a
 * resumed run continues bit for bit. Hyperparameters are not saved: they
 * come from the caller's configuration.
 */
#ifndef TAPEGRAD_OPTIM_H
#define TAPEGRAD_OPTIM_H

#include <stdbool.h>

#include "../core/engine/params.h"
#include "../core/io/io.h"
#include "clip.h"
#include "schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_optim_kind { TG_SGD, TG_ADAM, TG_ADAMW } tg_optim_kind;

/* The options of one kind; the other kinds' fields must stay 0. */
typedef struct tg_optim_opts {
    tg_optim_kind kind;
    double lr;            /* >= 0 */
    double weight_decay;  /* >= 0: L2 in the gradient (SGD, Adam), decoupled (AdamW) */
    bool no_decay_1d;     /* no weight decay for parameters with fewer than 2 dims */
    double momentum;      /* SGD: >= 0 */
    double dampening;     /* SGD: in [0, 1] */
    bool nesterov;        /* SGD: needs momentum > 0 and dampening 0 (as torch) */
    double beta1, beta2;  /* Adam, AdamW: each in [0, 1) */
    double eps;           /* Adam, AdamW: > 0 (torch also allows 0; we refuse its 0/0) */
} tg_optim_opts;

/* torch's defaults:
 *   TG_SGD    lr 1e-3 (torch.optim.SGD's since PyTorch 2.2), momentum 0,
 *             dampening 0, weight_decay 0, nesterov false
 *   TG_ADAM   lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0
 *   TG_ADAMW  the same with weight_decay 0.01 */
tg_optim_opts tg_optim_defaults(tg_optim_kind kind);

/* 0 when the options are valid; else -1 with a message naming the option
 * ("tg_optim: beta2 = 1 is outside [0, 1)"). */
int tg_optim_check(const tg_optim_opts *o);

typedef struct tg_optim tg_optim;

/* An optimizer for every parameter of p. NULL on bad options, NULL p or out
 * of memory. */
tg_optim *tg_optim_new(tg_params *p, const tg_optim_opts *o);
void tg_optim_free(tg_optim *o);

/* One update of every parameter from its current gradient (read, not
 * cleared). -1, changing nothing, when the store has gained parameters since
 * tg_optim_new. */
int tg_optim_step(tg_optim *o);
/* Zeroes every gradient of the store (tg_params_zero_grad). */
void tg_optim_zero_grad(tg_optim *o);

/* The learning rate of the next steps. -1, changing nothing, unless lr >= 0. */
int tg_optim_set_lr(tg_optim *o, double lr);
double tg_optim_lr(const tg_optim *o);
/* Steps taken so far (0 before the first). */
long tg_optim_steps(const tg_optim *o);
const tg_optim_opts *tg_optim_options(const tg_optim *o);

/* Adds the state to s under the keys above. -1 with a message (a name taken
 * in s, out of memory), s then holding part of the state: discard it. */
int tg_optim_state_save(const tg_optim *o, tg_safetensors *s);
/* Restores a state saved by tg_optim_state_save into an optimizer of the
 * same kind over a store with the same parameter names and shapes. Every
 * name and shape is checked before anything is copied: the first missing or
 * mis-shaped tensor (or a missing or invalid step) is reported by name and
 * the optimizer is left unchanged. Other tensors of s are ignored. */
int tg_optim_state_load(tg_optim *o, const tg_safetensors *s);

#ifdef __cplusplus
}
#endif

#endif
