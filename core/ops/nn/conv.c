/* tapegrad: convolution (F.conv2d), through tg_gemm on im2col columns.
 *
 * One image n and group g at a time, with Cg = C / groups, Og = O / groups,
 * K = Cg * kh * kw and P = Ho * Wo:
 *   col [K, P] = im2col(x[n, g])    out[n, g] [Og, P] = w_g [Og, K] @ col + b
 *   dw_g [Og, K] += dout[n, g] @ col^T
 *   dcol [K, P] = w_g^T @ dout[n, g]     dx[n, g] += col2im(dcol)
 *   db[o] += sum of dout[., o, .]
 * Backward recomputes the columns rather than keeping N * groups of them. A
 * 1x1 kernel with stride 1 and no padding reads x as its own columns. The
 * images go in order and the GEMMs split only their output, so the bits do
 * not depend on the thread count.
 */
#include <stdio.h>
#include <string.h>

#include "conv_geom.h"
#include "../internal.h"
#include "../ops.h"
#include "../../kernels/blas.h"

/* The outputs o in [0, n) whose input o * s + off lies in [0, size): [*lo, *hi). */
static void conv_span(int n, int s, int off, int size, int *lo, int *hi)
{
    int a = off >= 0 ? 0 : (-off + s - 1) / s;
    int b = size - off <= 0 ? 0 : (size - 1 - off) / s + 1;
    *lo = a < n ? a : n;
    *hi = b < n ? b : n;
    if (*hi < *lo) *hi = *lo;
}

/* gather: col [K, P] <- the windows of x (0 in the padding); else
 * x += col put back in its windows */
static void cols_walk(const tg_conv_geom *g, tg_real *x, tg_real *col, bool gather)
{
    size_t P = (size_t)g->Ho * g->Wo, HW = (size_t)g->H * g->W;
    for (int c = 0; c < g->C / g->groups; c++)
        for (int i = 0; i < g->kh; i++)
            for (int j = 0; j < g->kw; j++, col += P) {
                int off_h = i * g->dh - g->ph, off_w = j * g->dw - g->pw, h0, h1, w0, w1;
                conv_span(g->Ho, g->sh, off_h, g->H, &h0, &h1);
                conv_span(g->Wo, g->sw, off_w, g->W, &w0, &w1);
                if (gather) {
                    memset(col, 0, (size_t)h0 * g->Wo * sizeof *col);
                    memset(col + (size_t)h1 * g->Wo, 0, (size_t)(g->Ho - h1) * g->Wo * sizeof *col);
                }
                for (int oh = h0; oh < h1; oh++) {
                    tg_real *xr = x + c * HW + (size_t)(oh * g->sh + off_h) * g->W + off_w;
                    tg_real *row = col + (size_t)oh * g->Wo;
                    if (!gather) {
                        for (int ow = w0; ow < w1; ow++) xr[(size_t)ow * g->sw] += row[ow];
                        continue;
                    }
                    for (int ow = 0; ow < w0; ow++) row[ow] = 0;
                    if (g->sw == 1) memcpy(row + w0, xr + w0, (size_t)(w1 - w0) * sizeof *row);
                    else
                        for (int ow = w0; ow < w1; ow++) row[ow] = xr[(size_t)ow * g->sw];
                    for (int ow = w1; ow < g->Wo; ow++) row[ow] = 0;
                }
            }
}

void tg_im2col(const tg_conv_geom *g, const tg_real *x, tg_real *col) { cols_walk(g, (tg_real *)x, col, true); }

void tg_col2im(const tg_conv_geom *g, const tg_real *col, tg_real *x) { cols_walk(g, x, (tg_real *)col, false); }

bool tg_conv_geom_direct(const tg_conv_geom *g)
{
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* db [O] += the sums of dout [N, O, P] over N and P, in double */
bool tg_conv_bias_grad(tg_tape *t, tg_tensor *b, const tg_real *dout, int N, int O, size_t P)
{
    TG_DISPATCH_OTHER(tg_conv_bias_grad, b, (t, b, dout, N, O, P));
    if (!b || !b->requires_grad) return true;
    tg_real *db = tg_grad(t, b);
    if (!db) return false;
    for (int o = 0; o < O; o++) {
        double s = 0;
        for (int n = 0; n < N; n++) {
            const tg_real *r = dout + ((size_t)n * O + o) * P;
            for (size_t p = 0; p < P; p++) s += r[p];
        }
        db[o] += (tg_real)s;
    }
    return true;
}

/* out [N, O, Ho, Wo] <- x [N, C, H, W], w [O, Cg, kh, kw], b [O] (in[2], or NULL) */
TG_BACKWARD(conv2d_backward, tg_conv_geom)
{
    tg_tensor *x = in[0], *w = in[1], *b = in[2];
    const tg_conv_geom *g = ctx;
    const tg_real *dout = out->grad;
    int G = g->groups, Og = g->O / G, Cg = g->C / G, K = Cg * g->kh * g->kw;
    size_t P = (size_t)g->Ho * g->Wo, HW = (size_t)g->H * g->W;
    if (!tg_conv_bias_grad(t, b, dout, g->N, g->O, P)) return;
    tg_real beta_w = 1;
    tg_real *dx = x->requires_grad ? tg_grad(t, x) : NULL;
    tg_real *dw = !w->requires_grad ? NULL : g->N > 0 ? tg_grad_write(t, w, &beta_w) : tg_grad(t, w);
    if ((x->requires_grad && !dx) || (w->requires_grad && !dw) || g->N == 0) return;
    bool direct = tg_conv_geom_direct(g);
    size_t bytes = direct ? 0 : (size_t)K * P * sizeof(tg_real);
    tg_real *col = direct || !dw ? NULL : tg_arena_scratch(t, bytes, "tg_conv2d columns");
    tg_real *dcol = direct || !dx ? NULL : tg_arena_scratch(t, bytes, "tg_conv2d column grads");
    if (!direct && ((dw && !col) || (dx && !dcol))) goto done;
    for (int n = 0; n < g->N; n++)
        for (int gi = 0; gi < G; gi++) {
            const tg_real *xg = x->data + ((size_t)n * g->C + (size_t)gi * Cg) * HW;
            const tg_real *dog = dout + ((size_t)n * g->O + (size_t)gi * Og) * P;
            const tg_real *wg = w->data + (size_t)gi * Og * K;
            if (dw) {  /* dw_g [Og, K] += dout_g [Og, P] @ col^T */
                if (!direct) tg_im2col(g, xg, col);
                tg_conv_gemm(g, 0, 1, Og, K, (int)P, dog, direct ? xg : col, n == 0 ? beta_w : 1,
                        dw + (size_t)gi * Og * K);
            }
            if (dx) {  /* dcol [K, P] = w_g^T [K, Og] @ dout_g [Og, P] */
                tg_real *dxg = dx + ((size_t)n * g->C + (size_t)gi * Cg) * HW;
                if (direct) {
                    tg_conv_gemm(g, 1, 0, K, (int)P, Og, wg, dog, 1, dxg);
                } else {
                    tg_conv_gemm(g, 1, 0, K, (int)P, Og, wg, dog, 0, dcol);
                    tg_col2im(g, dcol, dxg);
                }
            }
        }
done:
    tg_arena_release(t, col, bytes);
    tg_arena_release(t, dcol, bytes);
}

TG_OP(conv2d_op, "tg_conv2d", conv2d_backward, tg_conv_geom);
TG_OP(conv1d_op, "tg_conv1d", conv2d_backward, tg_conv_geom);

/* out [N, O, P] = conv of x [N, C, H, W] with w [O, Cg, kh, kw] + b (or NULL);
 * false on out of memory (scratch). */
bool tg_conv_forward(tg_tape *t, const tg_conv_geom *g, const char *op, const tg_real *x, const tg_real *w,
                     const tg_real *b, tg_real *out)
{
    int G = g->groups, Og = g->O / G, Cg = g->C / G, K = Cg * g->kh * g->kw;
    size_t P = (size_t)g->Ho * g->Wo, HW = (size_t)g->H * g->W;
    bool direct = tg_conv_geom_direct(g);
    size_t bytes = direct ? 0 : (size_t)K * P * sizeof(tg_real);
    char what[64];
    snprintf(what, sizeof what, "%s columns", op);
    tg_real *col = direct || g->N == 0 ? NULL : tg_arena_scratch(t, bytes, what);
    if (!direct && g->N > 0 && !col) return false;
    for (int n = 0; n < g->N; n++)
        for (int gi = 0; gi < G; gi++) {
            const tg_real *xg = x + ((size_t)n * g->C + (size_t)gi * Cg) * HW;
            tg_real *og = out + ((size_t)n * g->O + (size_t)gi * Og) * P;
            if (b)
                for (int o = 0; o < Og; o++)
                    for (size_t p = 0; p < P; p++) og[o * P + p] = b[gi * Og + o];
            if (!direct) tg_im2col(g, xg, col);
            tg_conv_gemm(g, 0, 0, Og, (int)P, K, w + (size_t)gi * Og * K, direct ? xg : col, b ? 1 : 0, og);
        }
    tg_arena_release(t, col, bytes);
    return true;
}

/* nd = 2: out [N, O, Ho, Wo]; nd = 1: [N, O, Lo] (a height of 1) */
static tg_tensor *conv(tg_tape *t, const tg_op *op, int nd, tg_tensor *x, tg_tensor *w, tg_tensor *b,
                       const tg_conv_opts *opts)
{
    tg_tensor *in[3] = {x, w, b};
    if (!tg_inputs_check(t, op, in, 3, 2)) return NULL;
    tg_conv_geom g;
    if (!tg_conv_geom_make(t, op->name, nd, false, x, w, b, opts, &g)) return NULL;
    int shape[4] = {g.N, g.O, g.Ho, g.Wo};
    if (nd == 1) shape[2] = g.Wo;
    bool batched = x->ndim == nd + 2;
    tg_tensor *out = tg_new(t, op, x->ndim, batched ? shape : shape + 1);
    if (!out) return NULL;
    if (!tg_conv_forward(t, &g, op->name, x->data, w->data, b ? b->data : NULL, out->data)) return NULL;
    if (!tg_op_record(t, op, out, in, 3, &g)) return NULL;
    return tg_op_done(t, op, out);
}

tg_tensor *tg_conv2d(tg_tape *t, tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_opts *opts)
{
    TG_DISPATCH_SAME(tg_conv2d, (t, x, w, b, opts), x, w, b);
    return conv(t, &conv2d_op, 2, x, w, b, opts);
}

tg_tensor *tg_conv1d(tg_tape *t, tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_opts *opts)
{
    TG_DISPATCH_SAME(tg_conv1d, (t, x, w, b, opts), x, w, b);
    return conv(t, &conv1d_op, 1, x, w, b, opts);
}
