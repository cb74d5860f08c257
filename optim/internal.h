/* tapegrad internal: the update rules behind tg_optim (optim/sgd.c,
 * optim/adam.c; the formulas are in optim/optim.h). Not part of the public
 * API. */
#ifndef TAPEGRAD_OPTIM_INTERNAL_H
#define TAPEGRAD_OPTIM_INTERNAL_H

#include <stdbool.h>

#include "optim.h"

/* Whether parameter x gets weight decay under o. */
static inline bool tg_optim_decays(const tg_optim_opts *o, const tg_tensor *x)
{
    return o->weight_decay != 0 && !(o->no_decay_1d && x->ndim < 2);
}

/* One SGD update of every parameter of p. b: the momentum buffers [numel]
 * (NULL without momentum); first: they take the gradient as is (torch's
 * clone on the first step). */
void tg_sgd_update(tg_params *p, const tg_optim_opts *o, tg_real *b, bool first);

/* One Adam or AdamW update of every parameter of p at step t (1, 2, ...);
 * m, v: the moments [numel]. */
void tg_adam_update(tg_params *p, const tg_optim_opts *o, long t, tg_real *m, tg_real *v);

#endif
