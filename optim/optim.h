/* tapegrad: optimizers, one interface for SGD, Adam and AdamW
 * (torch.optim.SGD / Adam / AdamW), plus gradient clipping and schedules.
 *
 *   optim/optim.h     this interface; each kind is a record (optim/internal.h)
 *                     in its own file: optim/sgd.c, optim/adam.c
 *   optim/clip.h      clip by global gradient norm (clip_grad_norm_)
 *   optim/schedule.h  learning-rate schedules: warmup, cosine / linear decay
 *   optim/scaler.h    dynamic loss scaling for float16 training (GradScaler)
 *
 * One optimizer per parameter store. A training step:
 *
 *   tg_optim_zero_grad(opt);
 *   tg_backward(tape, loss);
 *   tg_clip_grad_norm(params, 1.0);
 *   tg_optim_schedule_lr(opt, &sched, tg_optim_steps(opt));  (every group)
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
 * resumed run continues bit for bit. The default group's hyperparameters
 * are not saved: they come from the caller's configuration. The groups
 * added by tg_optim_add_group are (metadata "optim.groups" = their number,
 * then "optim.group.<i>.prefix", ".lr", ".initial_lr", ".weight_decay",
 * ".frozen" for i = 1, 2, ...), and tg_optim_state_load restores them (a
 * checkpoint without ".initial_lr" takes ".lr" as the base rate).
 *
 * Parameter groups (torch's param_groups): every parameter belongs to one
 * group, the default group 0 (tg_optim_new's options) unless a group added
 * by tg_optim_add_group takes it by name prefix. A group has its own lr and
 * weight decay, and may be frozen. A frozen group's parameters, and any
 * parameter whose requires_grad is false, are skipped by the step: no
 * update, no weight decay, no change to their state, bit for bit (torch
 * skips a parameter whose grad is None). The step count t is shared.
 *
 * Schedules move every group (torch's LRScheduler): each group keeps its
 * base rate, the lr it was made with (tg_optim_new's for group 0,
 * tg_optim_add_group's), and tg_optim_schedule_lr sets each group's lr to
 * its base times the schedule's factor tg_lr_at(s, step) / s->lr. With the
 * schedule's peak equal to group 0's lr, group 0 follows tg_lr_at exactly
 * and a group made with half that lr follows half the curve. Weight decay
 * for matrices only (biases and norm weights exempt) needs no group:
 * no_decay_1d.
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

/* The kinds, one line each: X(constant, its record in optim/<kind>.c).
 * docs/DESIGN.md "How to add an optimizer". */
#define TG_OPTIM_KINDS(X) X(TG_SGD, tg_optim_sgd) X(TG_ADAM, tg_optim_adam) X(TG_ADAMW, tg_optim_adamw)

#define TG_OPTIM_KIND_ENUM_(k, rec) k,
typedef enum tg_optim_kind { TG_OPTIM_KINDS(TG_OPTIM_KIND_ENUM_) TG_OPTIM_KIND_COUNT } tg_optim_kind;
#undef TG_OPTIM_KIND_ENUM_

/* "SGD", "Adam", "AdamW"; NULL for an unknown kind. */
const char *tg_optim_kind_name(tg_optim_kind kind);
/* The kind named name, case ignored ("adamw"); -1 with a message when none is. */
int tg_optim_kind_parse(const char *name);

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

/* Group 0's learning rate for the next steps (tg_optim_group_set_lr(o, 0,
 * lr)); the added groups keep theirs: a schedule goes through
 * tg_optim_schedule_lr. -1, changing nothing, unless lr >= 0. */
int tg_optim_set_lr(tg_optim *o, double lr);
/* Every group's learning rate for update step + 1 (step: updates taken,
 * tg_optim_steps(o)): its base rate * tg_lr_at(s, step) / s->lr (0 when
 * s->lr is 0). -1, changing nothing, on a NULL o or an invalid schedule. */
int tg_optim_schedule_lr(tg_optim *o, const tg_schedule *s, long step);
double tg_optim_lr(const tg_optim *o);
/* Steps taken so far (0 before the first). */
long tg_optim_steps(const tg_optim *o);
const tg_optim_opts *tg_optim_options(const tg_optim *o);

/* A parameter group: the parameters whose names start with prefix (a full
 * name selects one). */
typedef struct tg_optim_group {
    const char *prefix;
    double lr;            /* >= 0 */
    double weight_decay;  /* >= 0, with the kind's meaning */
    bool frozen;          /* its parameters never move */
} tg_optim_group;

/* Adds a group; returns its index (1, 2, ...), or -1 with a message when
 * an option is bad, no parameter name starts with the prefix, or one that
 * does is in another added group already (a parameter has one group). */
int tg_optim_add_group(tg_optim *o, const tg_optim_group *g);
/* Number of groups, the default included (-1 when o is NULL). */
int tg_optim_group_count(const tg_optim *o);
/* Group i (0: the default, prefix ""); the prefix points into o. -1 when i
 * is out of range. */
int tg_optim_group_get(const tg_optim *o, int i, tg_optim_group *g);
/* Group i's lr until the next tg_optim_schedule_lr (its base rate stays);
 * tg_optim_set_lr sets group 0's. -1 on a bad i or lr. */
int tg_optim_group_set_lr(tg_optim *o, int i, double lr);

/* Adds the state to s under the keys above. -1 with a message (a name taken
 * in s, a non-finite value in the state, out of memory), s then holding
 * part of the state: discard it. */
int tg_optim_state_save(const tg_optim *o, tg_safetensors *s);
/* Restores a state saved by tg_optim_state_save into an optimizer of the
 * same kind over a store with the same parameter names and shapes. Every
 * name and shape is checked before anything is copied: the first missing or
 * mis-shaped tensor (or a missing or invalid step or group, or a non-finite
 * value) is reported by name and the optimizer is left unchanged. The saved
 * groups replace o's added groups; a state saved before parameter groups
 * existed leaves them as they are. Other tensors of s are ignored. */
int tg_optim_state_load(tg_optim *o, const tg_safetensors *s);

#ifdef __cplusplus
}
#endif

#endif
