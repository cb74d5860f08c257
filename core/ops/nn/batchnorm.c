/* tapegrad: batch normalisation (F.batch_norm) over dim 1 of x [N, C, ...].
 *
 * Per channel c, over its n = N * inner values (inner: the dims after C):
 *   training: mean, var = the batch's (biased var); running stats, when
 *             given, move: r = (1 - m) r + m s, with the unbiased var
 *             var * n / (n - 1) for running_var (PyTorch's);
 *   eval:     mean, var = running_mean, running_var.
 *   y = (x - mean) * rstd * w + b,   rstd = 1 / sqrt(var + eps)
 * Backward, xhat = (x - mean) * rstd:
 *   db += sum dy    dw += sum dy xhat
 *   training: dx += w rstd (dy - sum dy / n - xhat sum dy xhat / n)
 *   eval:     dx += w rstd dy
 * Channels are independent (sums in double, in order), so the pool cuts
 * them: the same bits on any number of threads.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conv.h"
#include "../internal.h"
#include "../ops.h"

typedef struct bn_ctx {
    size_t N, inner;
    int C;
    bool training;
    const double *mean, *rstd;  /* [C] (arena): what x was normalised with */
} bn_ctx;

typedef struct bn_job {
    const bn_ctx *c;
    const tg_real *x, *w, *b, *dy;
    tg_real *y, *dx, *dw, *db;
    double *mean, *rstd, *var;  /* forward: var [C] the batch's biased variance (training) */
    double eps;
} bn_job;

static void bn_forward_channels(void *p, size_t begin, size_t end)
{
    const bn_job *j = p;
    const bn_ctx *c = j->c;
    double n = (double)c->N * c->inner;
    for (size_t ch = begin; ch < end; ch++) {
        if (c->training) {  /* two passes in double */
            double s = 0, v = 0;
            for (size_t i = 0; i < c->N; i++)
                for (size_t k = 0, o = (i * c->C + ch) * c->inner; k < c->inner; k++) s += j->x[o + k];
            double mean = s / n;
            for (size_t i = 0; i < c->N; i++)
                for (size_t k = 0, o = (i * c->C + ch) * c->inner; k < c->inner; k++) {
                    double d = j->x[o + k] - mean;
                    v += d * d;
                }
            j->mean[ch] = mean;
            j->var[ch] = v / n;
            j->rstd[ch] = 1 / sqrt(v / n + j->eps);
        }
        double mean = j->mean[ch], rstd = j->rstd[ch], w = j->w ? j->w[ch] : 1, b = j->b ? j->b[ch] : 0;
        for (size_t i = 0; i < c->N; i++)
            for (size_t k = 0, o = (i * c->C + ch) * c->inner; k < c->inner; k++)
                j->y[o + k] = (tg_real)((j->x[o + k] - mean) * rstd * w + b);
    }
}

static void bn_backward_channels(void *p, size_t begin, size_t end)
{
    const bn_job *j = p;
    const bn_ctx *c = j->c;
    double n = (double)c->N * c->inner;
    for (size_t ch = begin; ch < end; ch++) {
        double mean = c->mean[ch], rstd = c->rstd[ch], w = j->w ? j->w[ch] : 1, sdy = 0, sdyx = 0;
        for (size_t i = 0; i < c->N; i++)
            for (size_t k = 0, o = (i * c->C + ch) * c->inner; k < c->inner; k++) {
                sdy += j->dy[o + k];
                sdyx += j->dy[o + k] * (j->x[o + k] - mean) * rstd;
            }
        if (j->db) j->db[ch] += (tg_real)sdy;
        if (j->dw) j->dw[ch] += (tg_real)sdyx;
        if (!j->dx) continue;
        double a = c->training ? sdy / n : 0, bx = c->training ? sdyx / n : 0;
        for (size_t i = 0; i < c->N; i++)
            for (size_t k = 0, o = (i * c->C + ch) * c->inner; k < c->inner; k++)
                j->dx[o + k] += (tg_real)(w * rstd * (j->dy[o + k] - a - (j->x[o + k] - mean) * rstd * bx));
    }
}

/* ns per channel element: a few flops and reads per pass */
#define BN_NS 1.5

/* out [N, C, ...] <- x, weight [C] (or NULL), bias [C] (or NULL) */
TG_BACKWARD(batch_norm_backward, bn_ctx)
{
    tg_tensor *x = in[0], *w = in[1], *b = in[2];
    bn_job j = {ctx, x->data, w ? w->data : NULL, NULL, out->grad, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0};
    if ((x->requires_grad && !(j.dx = tg_grad(t, x))) || (w && w->requires_grad && !(j.dw = tg_grad(t, w))) ||
        (b && b->requires_grad && !(j.db = tg_grad(t, b))))
        return;
    tg_parallel_range((size_t)ctx->C, 3 * BN_NS * (double)ctx->N * ctx->inner, bn_backward_channels, &j);
}

TG_OP(batch_norm_op, "tg_batch_norm", batch_norm_backward, bn_ctx);

/* A [C] tensor or NULL; else false with "tg_batch_norm: <what> ... must be [C]". */
static bool bn_vec(tg_tape *t, const tg_tensor *v, const char *what, int C, const tg_tensor *x)
{
    if (!v || (v->ndim == 1 && v->shape[0] == C)) return true;
    char s1[TG_SHAPE_STR], s2[TG_SHAPE_STR];
    tg_op_fail(t, &batch_norm_op, "%s %s must be [C] = [%d] (input %s)", what, tg_shape_str(v, s1), C,
            tg_shape_str(x, s2));
    return false;
}

tg_tensor *tg_batch_norm(tg_tape *t, tg_tensor *x, tg_tensor *running_mean, tg_tensor *running_var,
                         tg_tensor *weight, tg_tensor *bias, const tg_bn_opts *opts)
{
    TG_DISPATCH_SAME(tg_batch_norm, (t, x, running_mean, running_var, weight, bias, opts), x, weight, bias);
    tg_tensor *in[5] = {x, weight, bias, running_mean, running_var};
    if (!tg_inputs_check(t, &batch_norm_op, in, 5, 1)) return NULL;
    static const tg_bn_opts dflt = TG_BN_OPTS_DEFAULT;
    const tg_bn_opts *o = opts ? opts : &dflt;
    char sx[TG_SHAPE_STR];
    if (x->ndim < 2)
        return tg_op_fail(t, &batch_norm_op, "input %s must be [N, C, ...] (2-D to 8-D)", tg_shape_str(x, sx));
    int C = x->shape[1];
    if (!bn_vec(t, weight, "weight", C, x) || !bn_vec(t, bias, "bias", C, x) ||
        !bn_vec(t, running_mean, "running_mean", C, x) || !bn_vec(t, running_var, "running_var", C, x))
        return NULL;
    if (!(o->eps > 0) || !(o->momentum >= 0 && o->momentum <= 1))
        return tg_op_fail(t, &batch_norm_op, "eps %g must be > 0 and momentum %g in [0, 1] (input %s)", o->eps,
                       o->momentum, tg_shape_str(x, sx));
    if ((running_mean == NULL) != (running_var == NULL))
        return tg_op_fail(t, &batch_norm_op, "%s is NULL and %s is not: give both running statistics or neither (input %s)",
                       running_mean ? "running_var" : "running_mean", running_mean ? "running_mean" : "running_var",
                       tg_shape_str(x, sx));
    if (!o->training && !running_mean)
        return tg_op_fail(t, &batch_norm_op, "running_mean and running_var are NULL: evaluation needs them (input %s)",
                       tg_shape_str(x, sx));
    bn_ctx c = {(size_t)x->shape[0], x->size / ((size_t)x->shape[0] * (C ? C : 1)), C, o->training, NULL, NULL};
    if (x->shape[0] == 0) c.inner = 0;
    if (o->training && c.N * c.inner <= 1)
        return tg_op_fail(t, &batch_norm_op, "training needs more than 1 value per channel (input %s)",
                       tg_shape_str(x, sx));
    tg_tensor *out = tg_new_like(t, &batch_norm_op, x);
    if (!out) return NULL;
    double *stats = tg_arena_alloc(t, 3 * (size_t)(C ? C : 1) * sizeof(double), "tg_batch_norm statistics");
    if (!stats) return NULL;
    bn_job j = {&c, x->data, weight ? weight->data : NULL, bias ? bias->data : NULL, NULL, out->data, NULL, NULL,
                NULL, stats, stats + C, stats + 2 * C, o->eps};
    if (!o->training)
        for (int ch = 0; ch < C; ch++) {
            stats[ch] = running_mean->data[ch];
            stats[C + ch] = 1 / sqrt((double)running_var->data[ch] + o->eps);
        }
    tg_parallel_range((size_t)C, 2 * BN_NS * (double)c.N * c.inner, bn_forward_channels, &j);
    if (o->training && running_mean) {
        double n = (double)c.N * c.inner, m = o->momentum;
        for (int ch = 0; ch < C; ch++) {
            running_mean->data[ch] = (tg_real)((1 - m) * running_mean->data[ch] + m * j.mean[ch]);
            running_var->data[ch] = (tg_real)((1 - m) * running_var->data[ch] + m * j.var[ch] * n / (n - 1));
        }
    }
    c.mean = j.mean;
    c.rstd = j.rstd;
    if (!tg_op_record(t, &batch_norm_op, out, in, 3, &c)) return NULL;
    return tg_op_done(t, &batch_norm_op, out);
}
