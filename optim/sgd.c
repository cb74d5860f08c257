/* tapegrad: the SGD update rule (torch.optim.SGD: momentum, dampening,
 * nesterov, weight decay; formulas in optim/optim.h). */
#include "internal.h"

typedef struct sgd_coef {
    tg_real wd, mu, one_m_tau, neg_lr;
} sgd_coef;

/* n elements of one parameter: p, g, b [n] (b NULL without momentum). */
static void sgd_param(tg_real *restrict p, const tg_real *restrict g, tg_real *restrict b, size_t n,
                      const sgd_coef *c, bool l2, bool first, bool nesterov)
{
    for (size_t i = 0; i < n; i++) {
        tg_real gi = g[i];
        if (l2) gi = gi + c->wd * p[i];
        if (b) {
            b[i] = first ? gi : b[i] * c->mu + c->one_m_tau * gi;
            gi = nesterov ? gi + c->mu * b[i] : b[i];
        }
        p[i] = p[i] + c->neg_lr * gi;
    }
}

void tg_sgd_update(tg_tensor *x, const tg_optim_opts *o, tg_real *b, bool first)
{
    sgd_coef c = {
        .wd = (tg_real)o->weight_decay,
        .mu = (tg_real)o->momentum,
        .one_m_tau = (tg_real)(1 - o->dampening),
        .neg_lr = (tg_real)(-o->lr),
    };
    sgd_param(x->data, x->grad, b, x->size, &c, tg_optim_decays(o, x), first, o->nesterov);
}
