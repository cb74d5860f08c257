/* tapegrad: transposed convolution (F.conv_transpose2d), the input-grad of
 * a convolution run forwards.
 *
 * In the geometry of the convolution it undoes (conv_geom.h: its output
 * [N, C, H, W] is the big side, its input [N, O, Ho, Wo] the small one,
 * w [O, C/groups, kh, kw], Og = O/groups, K = C/groups * kh * kw, P = Ho * Wo),
 * one image n and group g at a time:
 *   col [K, P] = w_g^T [K, Og] @ x[n, g] [Og, P]     out[n, g] = b + col2im(col)
 *   dcol [K, P] = im2col(dout[n, g])
 *   dx[n, g] [Og, P] += w_g [Og, K] @ dcol     dw_g [Og, K] += x[n, g] @ dcol^T
 *   db[c] += sum of dout[., c, .]
 */
#include <stdio.h>
#include <string.h>

#include "conv_geom.h"
#include "../internal.h"
#include "../ops.h"
#include "../../kernels/blas.h"

/* out [N, C, H, W] <- x [N, O, Ho, Wo], w [O, C/groups, kh, kw], b [C] (in[2], or NULL) */
TG_BACKWARD(conv_transpose_backward, tg_conv_geom)
{
    tg_tensor *x = in[0], *w = in[1], *b = in[2];
    const tg_conv_geom *g = ctx;
    const tg_real *dout = out->grad;
    int G = g->groups, Og = g->O / G, Cg = g->C / G, K = Cg * g->kh * g->kw;
    size_t P = (size_t)g->Ho * g->Wo, HW = (size_t)g->H * g->W;
    if (!tg_conv_bias_grad(t, b, dout, g->N, g->C, HW)) return;
    tg_real *dx = x->requires_grad ? tg_grad(t, x) : NULL;
    tg_real *dw = w->requires_grad ? tg_grad(t, w) : NULL;
    if ((x->requires_grad && !dx) || (w->requires_grad && !dw) || (!dx && !dw) || g->N == 0) return;
    bool direct = tg_conv_geom_direct(g);
    size_t bytes = direct ? 0 : (size_t)K * P * sizeof(tg_real);
    tg_real *dcol = direct ? NULL : tg_arena_scratch(t, bytes, "tg_conv_transpose2d column grads");
    if (!direct && !dcol) return;
    for (int n = 0; n < g->N; n++)
        for (int gi = 0; gi < G; gi++) {
            const tg_real *dog = dout + ((size_t)n * g->C + (size_t)gi * Cg) * HW;
            const tg_real *xg = x->data + ((size_t)n * g->O + (size_t)gi * Og) * P;
            const tg_real *wg = w->data + (size_t)gi * Og * K, *col = direct ? dog : dcol;
            if (!direct) tg_im2col(g, dog, dcol);
            if (dx) tg_conv_gemm(g, 0, 0, Og, (int)P, K, wg, col, 1, dx + ((size_t)n * g->O + (size_t)gi * Og) * P);
            if (dw) tg_conv_gemm(g, 0, 1, Og, K, (int)P, xg, col, 1, dw + (size_t)gi * Og * K);
        }
    tg_arena_release(t, dcol, bytes);
}

TG_OP(conv_transpose2d_op, "tg_conv_transpose2d", conv_transpose_backward, tg_conv_geom);

tg_tensor *tg_conv_transpose2d(tg_tape *t, tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_opts *opts)
{
    TG_DISPATCH_SAME(tg_conv_transpose2d, (t, x, w, b, opts), x, w, b);
    const tg_op *op = &conv_transpose2d_op;
    tg_tensor *in[3] = {x, w, b};
    if (!tg_inputs_check(t, op, in, 3, 2)) return NULL;
    tg_conv_geom g;
    if (!tg_conv_geom_make(t, op->name, 2, true, x, w, b, opts, &g)) return NULL;
    int shape[4] = {g.N, g.C, g.H, g.W};
    bool batched = x->ndim == 4;
    tg_tensor *out = tg_new(t, op, x->ndim, batched ? shape : shape + 1);
    if (!out) return NULL;
    int G = g.groups, Og = g.O / G, Cg = g.C / G, K = Cg * g.kh * g.kw;
    size_t P = (size_t)g.Ho * g.Wo, HW = (size_t)g.H * g.W;
    for (size_t i = 0; i < out->size; i++) out->data[i] = b ? b->data[i / HW % g.C] : 0;
    bool direct = tg_conv_geom_direct(&g);
    size_t bytes = direct || g.N == 0 ? 0 : (size_t)K * P * sizeof(tg_real);
    tg_real *col = bytes ? tg_arena_scratch(t, bytes, "tg_conv_transpose2d columns") : NULL;
    if (bytes && !col) return NULL;
    for (int n = 0; n < g.N; n++)
        for (int gi = 0; gi < G; gi++) {
            const tg_real *xg = x->data + ((size_t)n * g.O + (size_t)gi * Og) * P;
            tg_real *og = out->data + ((size_t)n * g.C + (size_t)gi * Cg) * HW;
            /* col [K, P] = w_g^T @ x_g; a direct geometry adds straight into out */
            tg_conv_gemm(&g, 1, 0, K, (int)P, Og, w->data + (size_t)gi * Og * K, xg, direct ? 1 : 0, direct ? og : col);
            if (!direct) tg_col2im(&g, col, og);
        }
    tg_arena_release(t, col, bytes);
    if (!tg_op_record(t, op, out, in, 3, &g)) return NULL;
    return tg_op_done(t, op, out);
}
