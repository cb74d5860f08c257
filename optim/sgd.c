/* tapegrad: the SGD optimizer (torch.optim.SGD: momentum, dampening,
 * nesterov, weight decay; formulas in optim/optim.h). */
#include <math.h>

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

/* buf[0]: the momentum buffer (NULL without momentum); the first step
 * takes the gradient as is (torch's clone). */
static void sgd_update(tg_tensor *x, const tg_optim_opts *o, long t, tg_real *const *buf)
{
    sgd_coef c = {
        .wd = (tg_real)o->weight_decay,
        .mu = (tg_real)o->momentum,
        .one_m_tau = (tg_real)(1 - o->dampening),
        .neg_lr = (tg_real)(-o->lr),
    };
    sgd_param(x->data, x->grad, buf[0], x->size, &c, tg_optim_decays(o, x), t == 1, o->nesterov);
}

/* The comparisons are written so that NaN fails them. */
static int sgd_check(const tg_optim_opts *o)
{
    if (!(o->momentum >= 0 && isfinite(o->momentum)))
        return tg_error_set("tg_optim: momentum = %g must be finite and >= 0", o->momentum);
    if (!(o->dampening >= 0 && o->dampening <= 1))
        return tg_error_set("tg_optim: dampening = %g is outside [0, 1]", o->dampening);
    if (o->nesterov && (o->momentum <= 0 || o->dampening != 0))
        return tg_error_set("tg_optim: nesterov needs momentum > 0 and dampening = 0 (momentum = %g, "
                            "dampening = %g)", o->momentum, o->dampening);
    return 0;
}

/* A momentum buffer only with momentum. */
static int sgd_bufs(const tg_optim_opts *o)
{
    return o->momentum != 0;
}

/* lr 1e-3: torch.optim.SGD's default since PyTorch 2.2. */
const tg_optim_def tg_optim_sgd = {
    .name = "SGD",
    .defaults = {.kind = TG_SGD, .lr = 1e-3},
    .options = TG_OPTS_SGD_MOMENTUM,
    .check = sgd_check,
    .n_bufs = sgd_bufs,
    .buf_key = {"optim.sgd.momentum."},
    .step_key = "optim.sgd.step",
    .update = sgd_update,
};
