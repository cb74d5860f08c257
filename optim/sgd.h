/* tapegrad: SGD with momentum, dampening, nesterov and weight decay, as
 * torch.optim.SGD.
 *
 * For each parameter p with gradient g (lr, mu = momentum, tau = dampening,
 * wd from the options):
 *
 *   g = g + wd * p                               when wd != 0
 *   b = g                                        first step (no dampening)
 *   b = mu * b + (1 - tau) * g                   later steps
 *   g = g + mu * b  (nesterov)   or   g = b      when mu != 0
 *   p = p - lr * g
 *
 * Coefficients are rounded to tg_real and the arithmetic follows torch's
 * order. The momentum buffers are allocated once by tg_sgd_new (only when
 * momentum != 0); a step allocates nothing. The store must not gain
 * parameters after tg_sgd_new.
 */
#ifndef TAPEGRAD_OPTIM_SGD_H
#define TAPEGRAD_OPTIM_SGD_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/engine/params.h"
#include "../core/io/io.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_sgd_opts {
    double lr;            /* >= 0 */
    double momentum;      /* >= 0 */
    double dampening;     /* in [0, 1] */
    double weight_decay;  /* >= 0 */
    bool nesterov;        /* needs momentum > 0 and dampening == 0 (as torch) */
} tg_sgd_opts;

/* lr 1e-3 (torch.optim.SGD's default since PyTorch 2.2; earlier versions
 * required it), momentum 0, dampening 0, weight_decay 0, nesterov false. */
tg_sgd_opts tg_sgd_defaults(void);

/* 0 when valid; else -1 with a message naming the option in tg_error(). */
int tg_sgd_check(const tg_sgd_opts *o);

typedef struct tg_sgd tg_sgd;

/* o NULL: tg_sgd_defaults(). NULL with a message in tg_error() on bad options,
 * NULL p or out of memory. */
tg_sgd *tg_sgd_new(tg_params *p, const tg_sgd_opts *o);
void tg_sgd_free(tg_sgd *s);

/* One update from the current gradients. 0, or -1 (nothing changed) when
 * the store has gained parameters since tg_sgd_new. */
int tg_sgd_step(tg_sgd *s);
/* -1, changing nothing, unless lr >= 0. */
int tg_sgd_set_lr(tg_sgd *s, double lr);
double tg_sgd_lr(const tg_sgd *s);
long tg_sgd_steps(const tg_sgd *s);
const tg_sgd_opts *tg_sgd_options(const tg_sgd *s);

/* Exports "optim.sgd.momentum.<param name>" (only when momentum != 0) and
 * the metadata "optim.sgd.step"; the step tells whether the buffers are
 * live (step > 0) or still waiting for their first gradient. -1 with a
 * message on failure, s then holding part of the state: discard it. */
int tg_sgd_state_save(const tg_sgd *s, tg_safetensors *st);
/* Checks every name and shape first, reports the first missing or
 * mis-shaped one and leaves the optimizer unchanged on failure. */
int tg_sgd_state_load(tg_sgd *s, const tg_safetensors *st);

#ifdef __cplusplus
}
#endif

#endif
