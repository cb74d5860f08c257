/* tapegrad: SGD with momentum, dampening, nesterov, weight decay (see
 * optim/sgd.h). */
#include <math.h>
#include <stdio.h>

#include "optim.h"
#include "../core/engine/alloc.h"
#include "../core/engine/error.h"

struct tg_sgd {
    tg_params *p;
    tg_sgd_opts o;
    size_t numel;  /* the store's size at creation */
    long t;        /* steps taken; the buffers are live when t > 0 */
    tg_real *buf;  /* momentum buffers [numel], NULL when momentum == 0 */
};

tg_sgd_opts tg_sgd_defaults(void) { return (tg_sgd_opts){.lr = 1e-3}; }

/* The comparisons are written so that NaN fails them. */
int tg_sgd_check(const tg_sgd_opts *o)
{
    if (!o) return tg_error_set("tg_sgd: options are NULL");
    if (!(o->lr >= 0 && isfinite(o->lr)))
        return tg_error_set("tg_sgd: lr = %g must be finite and >= 0", o->lr);
    if (!(o->momentum >= 0 && isfinite(o->momentum)))
        return tg_error_set("tg_sgd: momentum = %g must be finite and >= 0", o->momentum);
    if (!(o->dampening >= 0 && o->dampening <= 1))
        return tg_error_set("tg_sgd: dampening = %g is outside [0, 1]", o->dampening);
    if (!(o->weight_decay >= 0 && isfinite(o->weight_decay)))
        return tg_error_set("tg_sgd: weight_decay = %g must be finite and >= 0", o->weight_decay);
    if (o->nesterov && (o->momentum <= 0 || o->dampening != 0))
        return tg_error_set("tg_sgd: nesterov needs momentum > 0 and dampening = 0 (momentum = %g, dampening = %g)",
                            o->momentum, o->dampening);
    return 0;
}

tg_sgd *tg_sgd_new(tg_params *p, const tg_sgd_opts *o)
{
    tg_sgd_opts opts = o ? *o : tg_sgd_defaults();
    if (!p) {
        tg_error_set("tg_sgd_new: the parameter store is NULL");
        return NULL;
    }
    if (tg_sgd_check(&opts)) return NULL;
    size_t n = tg_params_numel(p);
    tg_sgd *s = tg_calloc(1, sizeof *s);
    tg_real *buf = opts.momentum != 0 ? tg_calloc(n, sizeof(tg_real)) : NULL;
    if (!s || (opts.momentum != 0 && !buf)) {
        tg_free(s);
        tg_free(buf);
        tg_error_set("tg_sgd_new: out of memory for the momentum of %zu parameters", n);
        return NULL;
    }
    *s = (tg_sgd){.p = p, .o = opts, .numel = n, .buf = buf};
    return s;
}

void tg_sgd_free(tg_sgd *s)
{
    if (!s) return;
    tg_free(s->buf);
    tg_free(s);
}

typedef struct sgd_coef {
    tg_real wd, mu, one_m_tau, neg_lr;
} sgd_coef;

/* n elements of one parameter: p, g, b [n] (b NULL without momentum).
 * first: the buffer takes the gradient as is (torch's clone on step 1). */
static void sgd_update(tg_real *restrict p, const tg_real *restrict g, tg_real *restrict b, size_t n,
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

int tg_sgd_step(tg_sgd *s)
{
    if (!s) return tg_error_set("tg_sgd_step: the optimizer is NULL");
    if (tg_params_numel(s->p) != s->numel)
        return tg_error_set("tg_sgd_step: the parameter store has %zu values, %zu when tg_sgd_new made "
                            "the optimizer: make a new one after adding parameters",
                            tg_params_numel(s->p), s->numel);
    const tg_sgd_opts *o = &s->o;
    sgd_coef c = {
        .wd = (tg_real)o->weight_decay,
        .mu = (tg_real)o->momentum,
        .one_m_tau = (tg_real)(1 - o->dampening),
        .neg_lr = (tg_real)(-o->lr),
    };
    size_t off = 0;
    int count = tg_params_count(s->p);
    for (int k = 0; k < count; k++) {
        tg_tensor *x = tg_params_at(s->p, k);
        sgd_update(x->data, x->grad, s->buf ? s->buf + off : NULL, x->size, &c, o->weight_decay != 0,
                   s->t == 0, o->nesterov);
        off += x->size;
    }
    s->t++;
    return 0;
}

int tg_sgd_set_lr(tg_sgd *s, double lr)
{
    if (!s) return tg_error_set("tg_sgd_set_lr: the optimizer is NULL");
    if (!(lr >= 0 && isfinite(lr))) return tg_error_set("tg_sgd_set_lr: lr = %g must be finite and >= 0", lr);
    s->o.lr = lr;
    return 0;
}

double tg_sgd_lr(const tg_sgd *s) { return s->o.lr; }
long tg_sgd_steps(const tg_sgd *s) { return s->t; }
const tg_sgd_opts *tg_sgd_options(const tg_sgd *s) { return &s->o; }

int tg_sgd_state_save(const tg_sgd *s, tg_safetensors *st)
{
    const char *what = "tg_sgd_state_save";
    if (!s || !st) return tg_error_set("%s: NULL argument", what);
    if (s->buf && tg_optim_save_bufs(st, s->p, "optim.sgd.momentum.", s->buf, what)) return -1;
    return tg_optim_save_step(st, "optim.sgd.step", s->t, what);
}

int tg_sgd_state_load(tg_sgd *s, const tg_safetensors *st)
{
    const char *what = "tg_sgd_state_load";
    long t;
    if (!s || !st) return tg_error_set("%s: NULL argument", what);
    if (tg_params_numel(s->p) != s->numel)
        return tg_error_set("%s: the parameter store has changed since tg_sgd_new", what);
    if (tg_optim_load_step(st, "optim.sgd.step", &t, what)) return -1;
    if (s->buf && tg_optim_check_bufs(st, s->p, "optim.sgd.momentum.", what)) return -1;
    if (s->buf) tg_optim_load_bufs(st, s->p, "optim.sgd.momentum.", s->buf);
    s->t = t;
    return 0;
}
