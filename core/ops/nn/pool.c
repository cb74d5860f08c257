/* tapegrad: max and average pooling over windows (F.max_pool2d, F.avg_pool2d
 * and their 1-D forms, a height of 1).
 *
 * Each of the N * C planes [H, W] gives a plane [Ho, Wo]; the window of output
 * (oh, ow) starts at (oh * sh - ph, ow * sw - pw) and takes kh x kw inputs
 * dilation apart. Output sizes are PyTorch's pooling_output_shape:
 *   Ho = floor_or_ceil((H + 2 ph - dh (kh - 1) - 1) / sh) + 1, less one when
 *   ceil_mode starts the last window in the bottom padding or past it.
 * max: out = the window's first maximum (a NaN wins), whose plane index is
 *   kept for backward: dx[idx] += dout.
 * avg: out = the window's sum / its count (with count_include_pad the window
 *   clipped to the padded input, else to the input; divisor_override when
 *   > 0): dx += dout / count over the window.
 * The planes are independent, so the pool cuts them: the same bits on any
 * number of threads.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conv.h"
#include "../internal.h"
#include "../ops.h"

typedef struct pool_geom {
    size_t planes;  /* N * C */
    int H, W, kh, kw, sh, sw, ph, pw, dh, dw, Ho, Wo;
    bool count_include_pad;
    int divisor;         /* avg: divisor_override, 0 for none */
    const int64_t *idx;  /* max: [planes, Ho, Wo] plane indices of the maxima (arena), -1 for none */
} pool_geom;

/* PyTorch's pooling_output_shape */
static long pool_out(long in, int k, int s, int p, int d, bool ceil_mode)
{
    long num = in + 2L * p - (long)d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    long n = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && (n - 1) * s >= in + p) n--;
    return n;
}

/* Checks x ([N, C, H, W] or [C, H, W]; nd = 1: [N, C, L] or [C, L]) and o
 * (its [0] is the length for nd = 1) and fills g; false with "<op>: ...". */
static bool pool_geom_make(tg_tape *t, const char *op, int nd, bool max, const tg_tensor *x, const tg_pool_opts *o,
                           pool_geom *g)
{
    char sx[TG_SHAPE_STR];
    if (!o) {
        tg_fail(t, "%s: opts is NULL (the kernel size has no default: TG_POOL_OPTS_DEFAULT(kh, kw))", op);
        return false;
    }
    if (o->divisor_override < 0 || (o->divisor_override && (max || nd == 1))) {
        tg_fail(t, "%s: divisor_override %d must be >= 0 (0: none), and only avg_pool2d has one (PyTorch's)", op,
                o->divisor_override);
        return false;
    }
    if (x->ndim != nd + 2 && x->ndim != nd + 1) {
        tg_fail(t, "%s: input %s must be %s", op, tg_shape_str(x, sx),
                nd == 2 ? "[N, C, H, W] or [C, H, W]" : "[N, C, L] or [C, L]");
        return false;
    }
    int v[6][2];  /* in, k, s, p, d, out per spatial dim: [0] height (1 for 1-D), [1] width */
    for (int i = 0; i < 2; i++) {
        int j = nd == 2 ? i : i - 1;
        if (j < 0) {
            v[0][i] = v[1][i] = v[2][i] = v[4][i] = v[5][i] = 1, v[3][i] = 0;
            continue;
        }
        int in = x->shape[x->ndim - nd + j], k = o->kernel[j], p = o->padding[j], d = o->dilation[j];
        int s = o->stride[j] ? o->stride[j] : k;
        if (k <= 0 || s <= 0 || d <= 0 || p < 0) {
            tg_fail(t, "%s: kernel %d, stride %d and dilation %d must be > 0 (stride 0: the kernel), padding %d >= 0 "
                    "(dim %d, input %s)", op, k, o->stride[j], d, p, j, tg_shape_str(x, sx));
            return false;
        }
        if (!max && d != 1) {
            tg_fail(t, "%s: dilation %d: average pooling has none (1)", op, d);
            return false;
        }
        if (p > k / 2) {
            tg_fail(t, "%s: padding %d must be at most half the kernel %d (dim %d)", op, p, k, j);
            return false;
        }
        long n = pool_out(in, k, s, p, d, o->ceil_mode);
        if (in == 0 || n < 1) {
            tg_fail(t, "%s: input %s is too small for kernel %d, stride %d, padding %d, dilation %d (output size %ld)",
                    op, tg_shape_str(x, sx), k, s, p, d, n);
            return false;
        }
        v[0][i] = in, v[1][i] = k, v[2][i] = s, v[3][i] = p, v[4][i] = d, v[5][i] = (int)n;
    }
    size_t planes = 1;
    for (int i = 0; i < x->ndim - nd; i++) planes *= (size_t)x->shape[i];
    *g = (pool_geom){planes, v[0][0], v[0][1], v[1][0], v[1][1], v[2][0], v[2][1], v[3][0], v[3][1],
                     v[4][0], v[4][1], v[5][0], v[5][1], o->count_include_pad, o->divisor_override, NULL};
    return true;
}

/* The window's first in-bounds tap and its end along one dim: taps
 * start, start + d, ... < end (start > end: none). */
static void window(int o, int s, int p, int k, int d, int in, int *start, int *end)
{
    int a = o * s - p, e = a + (k - 1) * d + 1;
    while (a < 0) a += d;
    *start = a;
    *end = e < in ? e : in;
}

typedef struct pool_job {
    const pool_geom *g;
    const tg_real *x, *dout;
    tg_real *out, *dx;
    int64_t *idx;
} pool_job;

/* Every window inside the plane with dilation 1: no padding, no ceil_mode
 * window past the edge. */
static bool windows_inside(const pool_geom *g)
{
    return g->ph == 0 && g->pw == 0 && g->dh == 1 && g->dw == 1 && (g->Ho - 1) * g->sh + g->kh <= g->H &&
           (g->Wo - 1) * g->sw + g->kw <= g->W;
}

/* One plane's maxima when windows_inside: the same taps in the same order
 * as max_planes' loop, with kh and kw constants where the call gives them
 * (2 x 2), so the taps unroll. */
static inline __attribute__((always_inline)) void max_plane_inside(const pool_geom *g, const tg_real *x,
                                                                   tg_real *out, int64_t *idx, int kh, int kw)
{
    for (int oh = 0; oh < g->Ho; oh++)
        for (int ow = 0; ow < g->Wo; ow++) {
            size_t at = (size_t)oh * g->sh * g->W + (size_t)ow * g->sw, first = at;
            tg_real m = -INFINITY;
            for (int ih = 0; ih < kh; ih++)
                for (int iw = 0; iw < kw; iw++) {
                    tg_real v = x[first + (size_t)ih * g->W + iw];
                    if (v > m || isnan(v)) m = v, at = first + (size_t)ih * g->W + iw;  /* PyTorch's rule */
                }
            *out++ = m;
            if (idx) *idx++ = (int64_t)at;
        }
}

static void max_planes(void *p, size_t begin, size_t end)
{
    const pool_job *j = p;
    const pool_geom *g = j->g;
    size_t HW = (size_t)g->H * g->W, P = (size_t)g->Ho * g->Wo;
    bool inside = windows_inside(g);
    for (size_t pl = begin; pl < end; pl++) {
        const tg_real *x = j->x + pl * HW;
        if (inside) {
            int64_t *idx = j->idx ? j->idx + pl * P : NULL;
            if (g->kh == 2 && g->kw == 2) max_plane_inside(g, x, j->out + pl * P, idx, 2, 2);
            else max_plane_inside(g, x, j->out + pl * P, idx, g->kh, g->kw);
            continue;
        }
        for (int oh = 0; oh < g->Ho; oh++) {
            int h0, h1;
            window(oh, g->sh, g->ph, g->kh, g->dh, g->H, &h0, &h1);
            for (int ow = 0; ow < g->Wo; ow++) {
                int w0, w1;
                window(ow, g->sw, g->pw, g->kw, g->dw, g->W, &w0, &w1);
                int64_t at = h0 < h1 && w0 < w1 ? (int64_t)h0 * g->W + w0 : -1;
                tg_real m = -INFINITY;
                for (int ih = h0; ih < h1; ih += g->dh)
                    for (int iw = w0; iw < w1; iw += g->dw) {
                        tg_real v = x[(size_t)ih * g->W + iw];
                        if (v > m || isnan(v)) m = v, at = (int64_t)ih * g->W + iw;  /* PyTorch's rule */
                    }
                size_t o = pl * P + (size_t)oh * g->Wo + ow;
                j->out[o] = m;
                if (j->idx) j->idx[o] = at;
            }
        }
    }
}

/* out [planes, Ho, Wo] <- x [planes, H, W]: dx[idx] += dout */
TG_BACKWARD(max_pool_backward, pool_geom)
{
    tg_real *dx = tg_grad(t, in[0]);
    if (!dx) return;
    size_t HW = (size_t)ctx->H * ctx->W, P = (size_t)ctx->Ho * ctx->Wo;
    for (size_t pl = 0; pl < ctx->planes; pl++)
        for (size_t o = pl * P; o < (pl + 1) * P; o++)
            if (ctx->idx[o] >= 0) dx[pl * HW + (size_t)ctx->idx[o]] += out->grad[o];
}

TG_OP(max_pool2d_op, "tg_max_pool2d", max_pool_backward, pool_geom);
TG_OP(max_pool1d_op, "tg_max_pool1d", max_pool_backward, pool_geom);
TG_OP(max_pool2d_ix_op, "tg_max_pool2d_with_indices", max_pool_backward, pool_geom);
TG_OP(max_pool1d_ix_op, "tg_max_pool1d_with_indices", max_pool_backward, pool_geom);


/* avg: the window of (oh, ow) along one dim, [*a, *e) clipped to the input,
 * and its length clipped to the padded input (count_include_pad's) */
static void avg_window(int o, int s, int p, int k, int in, int *a, int *e, int *padded)
{
    int a0 = o * s - p, e0 = a0 + k < in + p ? a0 + k : in + p;
    *padded = e0 - a0;
    *a = a0 > 0 ? a0 : 0;
    *e = e0 < in ? e0 : in;
}

/* the divisor of output (oh, ow) and its window [h0, h1) x [w0, w1) */
static int avg_count(const pool_geom *g, int oh, int ow, int *h0, int *h1, int *w0, int *w1)
{
    int ph, pw;
    avg_window(oh, g->sh, g->ph, g->kh, g->H, h0, h1, &ph);
    avg_window(ow, g->sw, g->pw, g->kw, g->W, w0, w1, &pw);
    if (g->divisor) return g->divisor;
    return g->count_include_pad ? ph * pw : (*h1 - *h0) * (*w1 - *w0);
}

static void avg_planes(void *p, size_t begin, size_t end)
{
    const pool_job *j = p;
    const pool_geom *g = j->g;
    size_t HW = (size_t)g->H * g->W, P = (size_t)g->Ho * g->Wo;
    for (size_t pl = begin; pl < end; pl++)
        for (int oh = 0; oh < g->Ho; oh++)
            for (int ow = 0; ow < g->Wo; ow++) {
                int h0, h1, w0, w1, n = avg_count(g, oh, ow, &h0, &h1, &w0, &w1);
                tg_real *o = (j->out ? j->out : j->dx) + pl * (j->out ? P : HW) + (j->out ? (size_t)oh * g->Wo + ow : 0);
                if (h0 >= h1 || w0 >= w1) {  /* a window wholly in the padding: 0, no grad (PyTorch) */
                    if (j->out) *o = 0;
                    continue;
                }
                if (j->out) {  /* forward: the window's sum / n */
                    double sum = 0;
                    for (int ih = h0; ih < h1; ih++)
                        for (int iw = w0; iw < w1; iw++) sum += j->x[pl * HW + (size_t)ih * g->W + iw];
                    *o = (tg_real)(sum / n);
                } else {       /* backward: dx += dout / n over the window */
                    tg_real d = j->dout[pl * P + (size_t)oh * g->Wo + ow] / (tg_real)n;
                    for (int ih = h0; ih < h1; ih++)
                        for (int iw = w0; iw < w1; iw++) o[(size_t)ih * g->W + iw] += d;
                }
            }
}

/* out [planes, Ho, Wo] <- x [planes, H, W]: dx += dout / count over each window */
TG_BACKWARD(avg_pool_backward, pool_geom)
{
    tg_real *dx = tg_grad(t, in[0]);
    if (!dx) return;
    pool_job j = {ctx, NULL, out->grad, NULL, dx, NULL};
    tg_parallel_range(ctx->planes, 2.0 * ctx->kh * ctx->kw * ctx->Ho * ctx->Wo, avg_planes, &j);
}

TG_OP(avg_pool2d_op, "tg_avg_pool2d", avg_pool_backward, pool_geom);
TG_OP(avg_pool1d_op, "tg_avg_pool1d", avg_pool_backward, pool_geom);

/* max (or avg) pooling of x by o; the max keeps its indices when a grad is
 * needed, and copies them into *indices when indices is not NULL */
static tg_tensor *pool(tg_tape *t, const tg_op *op, int nd, bool max, tg_tensor *x, const tg_pool_opts *o,
                       tg_tensor **indices)
{
    if (!tg_inputs_check(t, op, &x, 1, 1)) return NULL;
    pool_geom g;
    if (!pool_geom_make(t, op->name, nd, max, x, o, &g)) return NULL;
    int shape[TG_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    if (nd == 2) shape[x->ndim - 2] = g.Ho;
    shape[x->ndim - 1] = g.Wo;
    tg_tensor *out = tg_new(t, op, x->ndim, shape);
    if (!out) return NULL;
    int64_t *idx = NULL;
    if (max && (indices || tg_needs_grad(t, &x, 1)) &&
        !(idx = tg_arena_alloc(t, out->size * sizeof *idx + 1, op->name)))
        return NULL;
    pool_job j = {&g, x->data, NULL, out->data, NULL, idx};
    tg_parallel_range(g.planes, 2.0 * g.kh * g.kw * g.Ho * g.Wo, max ? max_planes : avg_planes, &j);
    if (indices) {  /* a copy: the caller may change it before backward reads idx */
        tg_tensor *ix = tg_new_op(t, op, TG_I64, out->ndim, out->shape);
        if (!ix) return NULL;
        memcpy(ix->data, idx, out->size * sizeof *idx);
        *indices = ix;
    }
    g.idx = idx;
    if (!tg_op_record(t, op, out, &x, 1, &g)) return NULL;
    return tg_op_done(t, op, out);
}

tg_tensor *tg_avg_pool2d(tg_tape *t, tg_tensor *x, const tg_pool_opts *opts)
{
    TG_DISPATCH(tg_avg_pool2d, x, (t, x, opts));
    return pool(t, &avg_pool2d_op, 2, false, x, opts, NULL);
}

tg_tensor *tg_avg_pool1d(tg_tape *t, tg_tensor *x, const tg_pool_opts *opts)
{
    TG_DISPATCH(tg_avg_pool1d, x, (t, x, opts));
    return pool(t, &avg_pool1d_op, 1, false, x, opts, NULL);
}

tg_tensor *tg_max_pool2d(tg_tape *t, tg_tensor *x, const tg_pool_opts *opts)
{
    TG_DISPATCH(tg_max_pool2d, x, (t, x, opts));
    return pool(t, &max_pool2d_op, 2, true, x, opts, NULL);
}

tg_tensor *tg_max_pool1d(tg_tape *t, tg_tensor *x, const tg_pool_opts *opts)
{
    TG_DISPATCH(tg_max_pool1d, x, (t, x, opts));
    return pool(t, &max_pool1d_op, 1, true, x, opts, NULL);
}

tg_tensor *tg_max_pool2d_with_indices(tg_tape *t, tg_tensor *x, const tg_pool_opts *opts, tg_tensor **indices)
{
    TG_DISPATCH(tg_max_pool2d_with_indices, x, (t, x, opts, indices));
    if (!indices) return tg_op_fail(t, &max_pool2d_ix_op, "indices is NULL (where the int64 indices go)");
    return pool(t, &max_pool2d_ix_op, 2, true, x, opts, indices);
}

tg_tensor *tg_max_pool1d_with_indices(tg_tape *t, tg_tensor *x, const tg_pool_opts *opts, tg_tensor **indices)
{
    TG_DISPATCH(tg_max_pool1d_with_indices, x, (t, x, opts, indices));
    if (!indices) return tg_op_fail(t, &max_pool1d_ix_op, "indices is NULL (where the int64 indices go)");
    return pool(t, &max_pool1d_ix_op, 1, true, x, opts, indices);
}
