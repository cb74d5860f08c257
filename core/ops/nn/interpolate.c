/* tapegrad: resizing images (F.interpolate, modes 'nearest' and 'bilinear').
 *
 * Each plane [H, W] -> [Ho, Wo]. Along each dim with in, out and the scale
 * r = in / out (1 / scale_factor when one is given; align_corners:
 * (in - 1) / (out - 1), 0 for out = 1), PyTorch's source index of output i:
 *   nearest:  min(floor(i r), in - 1), r in float as PyTorch's kernel
 *   bilinear: s = r i (align_corners) or max(r (i + 0.5) - 0.5, 0);
 *             i0 = floor(s), i1 = min(i0 + 1, in - 1), weights 1 - (s - i0), s - i0
 * out = the weighted taps; backward: each tap's weight times dout added back.
 * Planes are independent, so the pool cuts them.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conv.h"
#include "../internal.h"
#include "../ops.h"

/* Along one dim: output i reads taps i0[i], i1[i] with weights l0[i], l1[i]. */
typedef struct interp_axis {
    int *i0, *i1;
    double *l0, *l1;
} interp_axis;

typedef struct interp_ctx {
    size_t planes;
    int H, W, Ho, Wo;
    bool nearest;        /* one tap: copied, so an inf stays inf (0 * inf is NaN) */
    interp_axis ax[2];   /* arena: [Ho] then [Wo] entries */
} interp_ctx;

static void axis_fill(const tg_interp_opts *o, int in, int out, double sf, interp_axis *a)
{
    for (int i = 0; i < out; i++) {
        if (o->mode == TG_INTERP_NEAREST) {
            float r = sf > 0 ? (float)(1.0 / sf) : (float)in / (float)out;
            int s = (int)floorf((float)i * r);
            a->i0[i] = a->i1[i] = s < in - 1 ? s : in - 1;
            a->l0[i] = 1, a->l1[i] = 0;
            continue;
        }
        double r = o->align_corners ? (out > 1 ? (double)(in - 1) / (out - 1) : 0) : sf > 0 ? 1 / sf : (double)in / out;
        double s = o->align_corners ? r * i : r * (i + 0.5) - 0.5;
        if (s < 0) s = 0;
        int i0 = (int)s;
        a->i0[i] = i0;
        a->i1[i] = i0 < in - 1 ? i0 + 1 : i0;
        a->l1[i] = s - i0;
        a->l0[i] = 1 - a->l1[i];
    }
}

typedef struct interp_job {
    const interp_ctx *c;
    const tg_real *x, *dout;
    tg_real *out, *dx;
} interp_job;

static void interp_planes(void *p, size_t begin, size_t end)
{
    const interp_job *j = p;
    const interp_ctx *c = j->c;
    const interp_axis *h = &c->ax[0], *w = &c->ax[1];
    size_t HW = (size_t)c->H * c->W, P = (size_t)c->Ho * c->Wo;
    for (size_t pl = begin; pl < end; pl++)
        for (int oh = 0; oh < c->Ho; oh++) {
            size_t r0 = pl * HW + (size_t)h->i0[oh] * c->W, r1 = pl * HW + (size_t)h->i1[oh] * c->W;
            for (int ow = 0; ow < c->Wo; ow++) {
                size_t o = pl * P + (size_t)oh * c->Wo + ow;
                int a = w->i0[ow], b = w->i1[ow];
                if (j->out && c->nearest) {
                    j->out[o] = j->x[r0 + a];
                } else if (j->out) {
                    j->out[o] = (tg_real)(h->l0[oh] * (w->l0[ow] * j->x[r0 + a] + w->l1[ow] * j->x[r0 + b]) +
                                          h->l1[oh] * (w->l0[ow] * j->x[r1 + a] + w->l1[ow] * j->x[r1 + b]));
                } else if (c->nearest) {
                    j->dx[r0 + a] += j->dout[o];
                } else {
                    double g = j->dout[o];
                    j->dx[r0 + a] += (tg_real)(g * h->l0[oh] * w->l0[ow]);
                    j->dx[r0 + b] += (tg_real)(g * h->l0[oh] * w->l1[ow]);
                    j->dx[r1 + a] += (tg_real)(g * h->l1[oh] * w->l0[ow]);
                    j->dx[r1 + b] += (tg_real)(g * h->l1[oh] * w->l1[ow]);
                }
            }
        }
}

/* out [planes, Ho, Wo] <- x [planes, H, W] */
TG_BACKWARD(interpolate_backward, interp_ctx)
{
    tg_real *dx = tg_grad(t, in[0]);
    if (!dx) return;
    interp_job j = {ctx, NULL, out->grad, NULL, dx};
    tg_parallel_range(ctx->planes, 8.0 * ctx->Ho * ctx->Wo, interp_planes, &j);
}

TG_OP(interpolate_op, "tg_interpolate", interpolate_backward, interp_ctx);

tg_tensor *tg_interpolate(tg_tape *t, tg_tensor *x, const tg_interp_opts *opts)
{
    TG_DISPATCH(tg_interpolate, x, (t, x, opts));
    if (!tg_inputs_check(t, &interpolate_op, &x, 1, 1)) return NULL;
    char sx[TG_SHAPE_STR];
    if (!opts) return tg_op_fail(t, &interpolate_op, "opts is NULL (the size or scale has no default)");
    if (x->ndim != 4)
        return tg_op_fail(t, &interpolate_op, "input %s must be [N, C, H, W] (PyTorch reads a 3-D input as [N, C, L])",
                       tg_shape_str(x, sx));
    if (opts->mode != TG_INTERP_NEAREST && opts->mode != TG_INTERP_BILINEAR)
        return tg_op_fail(t, &interpolate_op, "mode %d is not TG_INTERP_NEAREST or TG_INTERP_BILINEAR", (int)opts->mode);
    if (opts->align_corners && opts->mode == TG_INTERP_NEAREST)
        return tg_op_fail(t, &interpolate_op, "align_corners is for bilinear only (as PyTorch)");
    int in[2] = {x->shape[x->ndim - 2], x->shape[x->ndim - 1]}, out[2];
    for (int i = 0; i < 2; i++) {
        double sf = opts->scale[i];
        bool by_size = opts->size[i] != 0;
        if (by_size == (sf != 0))
            return tg_op_fail(t, &interpolate_op, "give size or scale for dim %d, exactly one (size %d, scale %g)", i,
                           opts->size[i], sf);
        double n = by_size ? opts->size[i] : floor(in[i] * sf);
        if (!(n >= 1 && n <= (1 << 30)) || in[i] == 0)
            return tg_op_fail(t, &interpolate_op, "output size %g along dim %d of input %s must be in [1, 2^30] "
                           "(size %d, scale %g)", n, i, tg_shape_str(x, sx), opts->size[i], sf);
        out[i] = (int)n;
    }
    int shape[TG_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 2] = out[0];
    shape[x->ndim - 1] = out[1];
    tg_tensor *y = tg_new(t, &interpolate_op, x->ndim, shape);
    if (!y) return NULL;
    size_t n = (size_t)out[0] + out[1];
    char *mem = tg_arena_alloc(t, n * (2 * sizeof(int) + 2 * sizeof(double)), "tg_interpolate taps");
    if (!mem) return NULL;
    interp_ctx c = {x->size / ((size_t)in[0] * in[1]), in[0], in[1], out[0], out[1], opts->mode == TG_INTERP_NEAREST,
                     {{0}}};
    double *l = (double *)mem;
    int *ix = (int *)(l + 2 * n);
    for (int i = 0, off = 0; i < 2; off += out[i], i++) {
        c.ax[i] = (interp_axis){ix + off, ix + n + off, l + off, l + n + off};
        /* a given size ignores the scale factor; PyTorch passes it to the kernel only without a size */
        axis_fill(opts, in[i], out[i], opts->size[i] ? 0 : opts->scale[i], &c.ax[i]);
    }
    interp_job j = {&c, x->data, NULL, y->data, NULL};
    tg_parallel_range(c.planes, 8.0 * out[0] * out[1], interp_planes, &j);
    if (!tg_op_record(t, &interpolate_op, y, &x, 1, &c)) return NULL;
    return tg_op_done(t, &interpolate_op, y);
}
