/* tapegrad: adaptive average pooling (F.adaptive_avg_pool2d).
 *
 * Each plane [H, W] -> [oh, ow] (TG_SIZE_NONE: H or W); output (i, j) is the mean of rows
 * [floor(i H / oh), ceil((i + 1) H / oh)) and columns likewise (windows of
 * varying size that may overlap, PyTorch's start_index / end_index).
 * Backward: dx += dout / count over each window. Planes are independent, so
 * the pool cuts them (the same bits on any number of threads).
 */
#include <stdio.h>
#include <string.h>

#include "conv.h"
#include "../internal.h"
#include "../ops.h"

typedef struct adaptive_ctx {
    size_t planes;
    int H, W, oh, ow;
} adaptive_ctx;

typedef struct adaptive_job {
    const adaptive_ctx *c;
    const tg_real *x, *dout;
    tg_real *out, *dx;
} adaptive_job;

static int start_index(int i, int out, int in) { return (int)((long)i * in / out); }
static int end_index(int i, int out, int in) { return (int)(((long)(i + 1) * in + out - 1) / out); }

static void adaptive_planes(void *p, size_t begin, size_t end)
{
    const adaptive_job *j = p;
    const adaptive_ctx *c = j->c;
    size_t HW = (size_t)c->H * c->W, P = (size_t)c->oh * c->ow;
    for (size_t pl = begin; pl < end; pl++)
        for (int i = 0; i < c->oh; i++) {
            int h0 = start_index(i, c->oh, c->H), h1 = end_index(i, c->oh, c->H);
            for (int k = 0; k < c->ow; k++) {
                int w0 = start_index(k, c->ow, c->W), w1 = end_index(k, c->ow, c->W), n = (h1 - h0) * (w1 - w0);
                size_t o = pl * P + (size_t)i * c->ow + k;
                if (j->out) {
                    double sum = 0;
                    for (int ih = h0; ih < h1; ih++)
                        for (int iw = w0; iw < w1; iw++) sum += j->x[pl * HW + (size_t)ih * c->W + iw];
                    j->out[o] = (tg_real)(sum / n);
                } else {
                    tg_real d = j->dout[o] / (tg_real)n;
                    for (int ih = h0; ih < h1; ih++)
                        for (int iw = w0; iw < w1; iw++) j->dx[pl * HW + (size_t)ih * c->W + iw] += d;
                }
            }
        }
}

/* ns per plane: about two per input read, each input in about one window */
static double adaptive_cost(const adaptive_ctx *c) { return 2.0 * ((double)c->H * c->W + (double)c->oh * c->ow); }

/* out [planes, oh, ow] <- x [planes, H, W] */
TG_BACKWARD(adaptive_backward, adaptive_ctx)
{
    tg_real *dx = tg_grad(t, in[0]);
    if (!dx) return;
    adaptive_job j = {ctx, NULL, out->grad, NULL, dx};
    tg_parallel_range(ctx->planes, adaptive_cost(ctx), adaptive_planes, &j);
}

TG_OP(adaptive_op, "tg_adaptive_avg_pool2d", adaptive_backward, adaptive_ctx);

tg_tensor *tg_adaptive_avg_pool2d(tg_tape *t, tg_tensor *x, int oh, int ow)
{
    TG_DISPATCH(tg_adaptive_avg_pool2d, x, (t, x, oh, ow));
    if (!tg_inputs_check(t, &adaptive_op, &x, 1, 1)) return NULL;
    char sx[TG_SHAPE_STR];
    if (x->ndim != 3 && x->ndim != 4)
        return tg_op_fail(t, &adaptive_op, "input %s must be [N, C, H, W] or [C, H, W]", tg_shape_str(x, sx));
    int H = x->shape[x->ndim - 2], W = x->shape[x->ndim - 1];
    if ((oh <= 0 && oh != TG_SIZE_NONE) || (ow <= 0 && ow != TG_SIZE_NONE) || H == 0 || W == 0)
        return tg_op_fail(t, &adaptive_op, "output size %dx%d must be > 0 or TG_SIZE_NONE (-1: the input's) and the "
                          "input %s non-empty in H and W", oh, ow, tg_shape_str(x, sx));
    if (oh == TG_SIZE_NONE) oh = H;
    if (ow == TG_SIZE_NONE) ow = W;
    adaptive_ctx c = {x->size / ((size_t)H * W), H, W, oh, ow};
    int shape[TG_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 2] = oh;
    shape[x->ndim - 1] = ow;
    tg_tensor *out = tg_new(t, &adaptive_op, x->ndim, shape);
    if (!out) return NULL;
    adaptive_job j = {&c, x->data, NULL, out->data, NULL};
    tg_parallel_range(c.planes, adaptive_cost(&c), adaptive_planes, &j);
    if (!tg_op_record(t, &adaptive_op, out, &x, 1, &c)) return NULL;
    return tg_op_done(t, &adaptive_op, out);
}
