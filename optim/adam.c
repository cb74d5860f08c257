/* tapegrad: Adam / AdamW (see optim/adam.h), and the state-export helpers
 * shared by the optimizers (declared in optim/optim.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim.h"
#include "../core/engine/alloc.h"
#include "../core/engine/error.h"
#include "../core/kernels/vmath.h"

#ifdef TAPEGRAD_DOUBLE
#define r_sqrt sqrt
#else
#define r_sqrt sqrtf
#endif

struct tg_adam {
    tg_params *p;
    tg_adam_opts o;
    size_t numel;   /* the store's size at creation */
    long t;         /* steps taken */
    tg_real *m, *v; /* numel each, flat layout of p; one allocation */
};

tg_adam_opts tg_adam_defaults(void)
{
    return (tg_adam_opts){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0};
}

/* The comparisons are written so that NaN fails them. */
int tg_adam_check(const tg_adam_opts *o)
{
    if (!o) return tg_error_set("tg_adam: options are NULL");
    if (!(o->lr >= 0 && isfinite(o->lr)))
        return tg_error_set("tg_adam: lr = %g must be finite and >= 0", o->lr);
    if (!(o->beta1 >= 0 && o->beta1 < 1))
        return tg_error_set("tg_adam: beta1 = %g is outside [0, 1)", o->beta1);
    if (!(o->beta2 >= 0 && o->beta2 < 1))
        return tg_error_set("tg_adam: beta2 = %g is outside [0, 1)", o->beta2);
    if (!(o->eps > 0 && isfinite(o->eps)))
        return tg_error_set("tg_adam: eps = %g must be finite and > 0", o->eps);
    if (!(o->weight_decay >= 0 && isfinite(o->weight_decay)))
        return tg_error_set("tg_adam: weight_decay = %g must be finite and >= 0", o->weight_decay);
    return 0;
}

tg_adam *tg_adam_new(tg_params *p, const tg_adam_opts *o)
{
    tg_adam_opts opts = o ? *o : tg_adam_defaults();
    if (!p) {
        tg_error_set("tg_adam_new: the parameter store is NULL");
        return NULL;
    }
    if (tg_adam_check(&opts)) return NULL;
    size_t n = tg_params_numel(p);
    tg_adam *a = tg_calloc(1, sizeof *a);
    tg_real *mv = n <= SIZE_MAX / 2 ? tg_calloc(2 * n, sizeof(tg_real)) : NULL;
    if (!a || !mv) {
        tg_free(a);
        tg_free(mv);
        tg_error_set("tg_adam_new: out of memory for the moments of %zu parameters", n);
        return NULL;
    }
    *a = (tg_adam){.p = p, .o = opts, .numel = n, .m = mv, .v = mv + n};
    return a;
}

void tg_adam_free(tg_adam *a)
{
    if (!a) return;
    tg_free(a->m);
    tg_free(a);
}

/* The step's scalars, computed in double as torch does in Python, rounded
 * to tg_real as torch's kernels round their Scalar arguments. */
typedef struct adam_coef {
    tg_real b1, one_m_b1, b2, one_m_b2;
    tg_real wd;        /* Adam: the L2 coefficient */
    tg_real decay;     /* AdamW: 1 - lr * wd */
    tg_real bc2_sqrt;  /* sqrt(1 - b2^t) */
    tg_real eps;
    tg_real neg_step;  /* -lr / (1 - b1^t) */
} adam_coef;

/* n elements of one parameter: p, g, m, v [n]. */
TG_SIMD_CLONES static void adam_update(tg_real *restrict p, const tg_real *restrict g,
                                       tg_real *restrict m, tg_real *restrict v, size_t n,
                                       const adam_coef *c, bool l2, bool decoupled)
{
    for (size_t i = 0; i < n; i++) {
        tg_real gi = g[i];
        if (l2) gi = gi + c->wd * p[i];
        if (decoupled) p[i] = p[i] * c->decay;
        m[i] = m[i] * c->b1 + c->one_m_b1 * gi;
        v[i] = v[i] * c->b2 + c->one_m_b2 * gi * gi;
        tg_real denom = r_sqrt(v[i]) / c->bc2_sqrt + c->eps;
        p[i] = p[i] + c->neg_step * m[i] / denom;
    }
}

int tg_adam_step(tg_adam *a)
{
    if (!a) return tg_error_set("tg_adam_step: the optimizer is NULL");
    if (tg_params_numel(a->p) != a->numel)
        return tg_error_set("tg_adam_step: the parameter store has %zu values, %zu when tg_adam_new made "
                            "the optimizer: make a new one after adding parameters",
                            tg_params_numel(a->p), a->numel);
    a->t++;
    const tg_adam_opts *o = &a->o;
    double t = (double)a->t;
    adam_coef c = {
        .b1 = (tg_real)o->beta1,
        .one_m_b1 = (tg_real)(1 - o->beta1),
        .b2 = (tg_real)o->beta2,
        .one_m_b2 = (tg_real)(1 - o->beta2),
        .wd = (tg_real)o->weight_decay,
        .decay = (tg_real)(1 - o->lr * o->weight_decay),
        .bc2_sqrt = (tg_real)sqrt(1 - pow(o->beta2, t)),
        .eps = (tg_real)o->eps,
        .neg_step = (tg_real)(-(o->lr / (1 - pow(o->beta1, t)))),
    };
    size_t off = 0;
    int count = tg_params_count(a->p);
    for (int k = 0; k < count; k++) {
        tg_tensor *x = tg_params_at(a->p, k);
        bool decays = o->weight_decay != 0 && !(o->no_decay_1d && x->ndim < 2);
        adam_update(x->data, x->grad, a->m + off, a->v + off, x->size, &c, decays && !o->adamw,
                    decays && o->adamw);
        off += x->size;
    }
    return 0;
}

int tg_adam_set_lr(tg_adam *a, double lr)
{
    if (!a) return tg_error_set("tg_adam_set_lr: the optimizer is NULL");
    if (!(lr >= 0 && isfinite(lr))) return tg_error_set("tg_adam_set_lr: lr = %g must be finite and >= 0", lr);
    a->o.lr = lr;
    return 0;
}

double tg_adam_lr(const tg_adam *a) { return a->o.lr; }
long tg_adam_steps(const tg_adam *a) { return a->t; }
const tg_adam_opts *tg_adam_options(const tg_adam *a) { return &a->o; }

int tg_adam_state_save(const tg_adam *a, tg_safetensors *s)
{
    const char *what = "tg_adam_state_save";
    if (!a || !s) return tg_error_set("%s: NULL argument", what);
    if (tg_optim_save_bufs(s, a->p, "optim.adam.m.", a->m, what)) return -1;
    if (tg_optim_save_bufs(s, a->p, "optim.adam.v.", a->v, what)) return -1;
    return tg_optim_save_step(s, "optim.adam.step", a->t, what);
}

int tg_adam_state_load(tg_adam *a, const tg_safetensors *s)
{
    const char *what = "tg_adam_state_load";
    long t;
    if (!a || !s) return tg_error_set("%s: NULL argument", what);
    if (tg_params_numel(a->p) != a->numel)
        return tg_error_set("%s: the parameter store has changed since tg_adam_new", what);
    if (tg_optim_load_step(s, "optim.adam.step", &t, what)) return -1;
    if (tg_optim_check_bufs(s, a->p, "optim.adam.m.", what)) return -1;
    if (tg_optim_check_bufs(s, a->p, "optim.adam.v.", what)) return -1;
    tg_optim_load_bufs(s, a->p, "optim.adam.m.", a->m);
    tg_optim_load_bufs(s, a->p, "optim.adam.v.", a->v);
    a->t = t;
    return 0;
}

