/* tapegrad: the Adam and AdamW optimizers (torch.optim.Adam / AdamW;
 * formulas in optim/optim.h). */
#include <math.h>

#include "../core/kernels/threads.h"
#include "../core/kernels/vmath.h"
#include "internal.h"

#ifdef TAPEGRAD_DOUBLE
#define r_sqrt sqrt
#else
#define r_sqrt sqrtf
#endif

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
TG_SIMD_BODY void adam_param_body(tg_real *restrict p, const tg_real *restrict g,
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
TG_SIMD_CLONES(static, adam_param,
               (tg_real *restrict p, const tg_real *restrict g, tg_real *restrict m, tg_real *restrict v,
                size_t n, const adam_coef *c, bool l2, bool decoupled),
               (p, g, m, v, n, c, l2, decoupled))

/* A parameter's elements cut across the pool: each is updated on its own, so
 * the bits do not depend on the cut. */
typedef struct adam_job {
    tg_real *p, *m, *v;
    const tg_real *g;
    const adam_coef *c;
    bool l2, decoupled;
} adam_job;

static void adam_piece(void *ctx, size_t begin, size_t end)
{
    const adam_job *j = ctx;
    adam_param(j->p + begin, j->g + begin, j->m + begin, j->v + begin, end - begin, j->c, j->l2, j->decoupled);
}

/* One-thread time per element: four streams and a square root and a
 * division, as the transcendental unary ops (core/ops/pointwise/math.c). */
#define ADAM_NS 0.9

/* buf: the moments m, v. */
static void adam_update(tg_tensor *x, const tg_optim_opts *o, long t, tg_real *const *buf)
{
    adam_coef c = {
        .b1 = (tg_real)o->beta1,
        .one_m_b1 = (tg_real)(1 - o->beta1),
        .b2 = (tg_real)o->beta2,
        .one_m_b2 = (tg_real)(1 - o->beta2),
        .wd = (tg_real)o->weight_decay,
        .decay = (tg_real)(1 - o->lr * o->weight_decay),
        .bc2_sqrt = (tg_real)sqrt(1 - pow(o->beta2, (double)t)),
        .eps = (tg_real)o->eps,
        .neg_step = (tg_real)(-(o->lr / (1 - pow(o->beta1, (double)t)))),
    };
    bool adamw = o->kind == TG_ADAMW, decays = tg_optim_decays(o, x);
    adam_job j = {x->data, buf[0], buf[1], x->grad, &c, decays && !adamw, decays && adamw};
    tg_parallel_range(x->size, ADAM_NS, adam_piece, &j);
}

/* The comparisons are written so that NaN fails them. */
static int adam_check(const tg_optim_opts *o)
{
    if (!(o->beta1 >= 0 && o->beta1 < 1))
        return tg_error_set("tg_optim: beta1 = %g is outside [0, 1)", o->beta1);
    if (!(o->beta2 >= 0 && o->beta2 < 1))
        return tg_error_set("tg_optim: beta2 = %g is outside [0, 1)", o->beta2);
    if (!(o->eps > 0 && isfinite(o->eps)))
        return tg_error_set("tg_optim: eps = %g must be finite and > 0", o->eps);
    return 0;
}

static int adam_bufs(const tg_optim_opts *o)
{
    (void)o;
    return 2;
}

/* AdamW differs in its default weight decay and in the update's kind test;
 * both keep their moments under the same keys. */
#define ADAM_DEF(k, nm, wd)                                                                     \
    {                                                                                           \
        .name = nm, .defaults = {.kind = k, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, \
                                 .weight_decay = wd},                                           \
        .options = TG_OPTS_ADAM_BETAS, .check = adam_check, .n_bufs = adam_bufs,               \
        .buf_key = {"optim.adam.m.", "optim.adam.v."}, .step_key = "optim.adam.step",          \
        .update = adam_update,                                                                  \
    }

const tg_optim_def tg_optim_adam = ADAM_DEF(TG_ADAM, "Adam", 0);
const tg_optim_def tg_optim_adamw = ADAM_DEF(TG_ADAMW, "AdamW", 0.01);
