/* seqtask, charlm, cnn: the training step of --precision f32|bf16|f16.
 * The products take operands of autocast's type (tg_autocast_begin with
 * cast); f16 adds PyTorch's GradScaler with its defaults (optim/scaler.h),
 * in its documented order:
 *
 *   tg_backward(tape, sq_amp_loss(a, tape, loss));  loss * S (f16)
 *   sq_amp_unscale(a, opt);                          grads / S, Inf/NaN looked for
 *   tg_clip_grad_norm(...);                          on the true gradients
 *   sq_amp_step(a, opt);                             the step, or a skip; S updated
 *
 * f32 and bf16 have no scaler: the loss is the loss, every step steps. */
#ifndef SEQTASK_AMP_H
#define SEQTASK_AMP_H

#include <stdbool.h>
#include <stdio.h>

#include <tapegrad/core/engine/tape.h>
#include <tapegrad/optim/optim.h>
#include <tapegrad/optim/scaler.h>
#include "config.h"  /* sq_precision: --precision's choices, in every program's order */

typedef struct sq_amp {
    tg_dtype cast;               /* autocast's operand type: TG_F32, TG_BF16 or TG_F16 */
    tg_grad_scaler *scaler;      /* f16: dynamic loss scaling; else NULL */
    long skipped;                /* steps the scaler skipped in this process */
} sq_amp;

/* a for precision (sq_precision). 0, or -1 with a message (out of memory). */
int sq_amp_init(sq_amp *a, int precision);
void sq_amp_free(sq_amp *a);
/* loss * S with a scaler, else loss (NULL when loss is). */
tg_tensor *sq_amp_loss(sq_amp *a, tg_tape *t, tg_tensor *loss);
/* With a scaler: the gradients of the parameters o moves divided by S, an
 * Inf or NaN among them noted. 0, or -1 with a message. */
int sq_amp_unscale(sq_amp *a, tg_optim *o);
/* tg_optim_step(o), skipped (and counted) with a scaler when the unscale
 * found an Inf or NaN; then the new S. 1 stepped, 0 skipped, -1 with a
 * message. */
int sq_amp_step(sq_amp *a, tg_optim *o);
/* Whether the step may go on: a finite loss, and a finite gradient norm
 * unless a scaler will skip the step (and shrink S) for it. */
bool sq_amp_finite(const sq_amp *a, double loss, double gnorm);
/* S, or 0 without a scaler. */
double sq_amp_scale(const sq_amp *a);
/* "loss scale S (N steps skipped for an Inf or NaN gradient)" on f at the
 * end of a run; nothing when scale is 0 (no scaler). */
void sq_amp_report(FILE *f, double scale, long skipped);

#endif
