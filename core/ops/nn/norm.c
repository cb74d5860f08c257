/* tapegrad: LayerNorm and RMSNorm over the last dim (as torch.nn.LayerNorm
 * with one normalized dim: biased variance, eps inside the square root; and
 * nn.RMSNorm).
 *
 * Per row of C values: xhat = (x - mean) * rstd, rstd = 1 / sqrt(var + eps),
 * y = xhat * w + b. Backward, with dxhat = dy * w:
 *   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
 *   dw += sum over rows of dy * xhat        db += sum over rows of dy
 * mean and rstd of every row are saved (arena); xhat is recomputed.
 * RMSNorm is the same with mean 0, rstd = 1 / sqrt(mean(x^2) + eps) and no
 * bias: its backward is LayerNorm's with no mean (saved mean NULL), the
 * mean(dxhat) term dropped.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"
#include "../../kernels/vmath.h"

/* Saved per row: mean and rstd [rows] (arena). */
typedef struct ln_ctx {
    tg_real *mean, *rstd;
} ln_ctx;

/* The row sums run in 8 independent lanes of double (element j in lane
 * j % 8, the lanes added at the end, tg_lanes8d): one running double sum was
 * a chain of dependent additions, 4 cycles each, and a row of 64 took 80-90
 * ns; the lanes written one by one stayed scalar code, 1 ns an element. */

/* Mean and rstd of one row in one pass. The sums run over d = x - x[0] (in
 * double): shifting by a row element keeps the one-pass variance accurate,
 * and a constant row gets exactly its value as mean and var 0, so its xhat
 * is exactly 0 and y is exactly the bias. */
TG_SIMD_BODY void row_stats(const tg_real *x, int C, double eps, tg_real *mean, tg_real *rstd)
{
    tg_lanes8d v1 = {0}, v2 = {0};
    double x0 = x[0];
    int j = 0;
    for (; j + 8 <= C; j += 8) {
        tg_lanes8d d = TG_LANES8D(TG_LANES8_AT(x + j)) - x0;
        v1 += d;
        v2 += d * d;
    }
    double s1[8], s2[8];
    memcpy(s1, &v1, sizeof s1), memcpy(s2, &v2, sizeof s2);
    for (; j < C; j++) {
        double d = (double)x[j] - x0;
        s1[0] += d;
        s2[0] += d * d;
    }
    for (int k = 1; k < 8; k++) s1[0] += s1[k], s2[0] += s2[k];
    double m = s1[0] / C, var = s2[0] / C - m * m;
    if (var < 0) var = 0;
    *mean = (tg_real)(x0 + m);
    *rstd = (tg_real)(1.0 / sqrt(var + eps));
}

/* One layernorm pass over rows [r0, r1) or columns [j0, j1), run on the pool
 * (core/kernels/parallel.c): the forward and dx cut by rows, dw and db by columns, so
 * every sum keeps the row order and the result does not depend on the cut. */
typedef struct ln_job {
    const tg_real *x, *w, *b, *dy;
    tg_real *y, *dx, *dw, *db, *mean, *rstd;
    size_t n_rows;
    int C;
    double eps;
} ln_job;

/* One-thread time of a row of C, or of a column of n rows (dw, db), forward
 * or backward: 0.9 ns an element (bench/bench_threads: 47-55 ns a row of 64;
 * 75-80 before the sums ran in lanes) */
#define LN_NS(n) (0.9 * (double)(n))

/* y [rows, C] = xhat * w + b; mean, rstd [rows] saved when non-NULL */
TG_SIMD_BODY void ln_forward_rows_body(void *ctx, size_t r0, size_t r1)
{
    const ln_job *j = ctx;
    int C = j->C;
    for (size_t r = r0; r < r1; r++) {
        const tg_real *xr = j->x + r * C;
        tg_real *yr = j->y + r * C, mu, rs;
        row_stats(xr, C, j->eps, &mu, &rs);
        if (j->mean) j->mean[r] = mu, j->rstd[r] = rs;
        for (int c = 0; c < C; c++) {
            tg_real xh = (xr[c] - mu) * rs;
            yr[c] = (j->w ? xh * j->w[c] : xh) + (j->b ? j->b[c] : 0);
        }
    }
}
TG_SIMD_CLONES(static, ln_forward_rows, (void *ctx, size_t r0, size_t r1), (ctx, r0, r1))

/* dx [rows, C] += rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
 * (RMSNorm: mean NULL, no mean(dxhat)) */
TG_SIMD_BODY void ln_dx_rows_body(void *ctx, size_t r0, size_t r1)
{
    const ln_job *j = ctx;
    int C = j->C;
    for (size_t r = r0; r < r1; r++) {
        const tg_real *xr = j->x + r * C, *g = j->dy + r * C;
        const tg_real mu = j->mean ? j->mean[r] : 0, rs = j->rstd[r];
        tg_lanes8d v1 = {0}, v2 = {0}; /* sum dxhat, sum dxhat * xhat */
        int c = 0;
        for (; c + 8 <= C; c += 8) {
            tg_lanes8 xh = (TG_LANES8_AT(xr + c) - mu) * rs, dxh = TG_LANES8_AT(g + c);
            if (j->w) dxh = dxh * TG_LANES8_AT(j->w + c);
            tg_lanes8d d = TG_LANES8D(dxh);
            v1 += d;
            v2 += d * TG_LANES8D(xh);
        }
        double s1[8], s2[8];
        memcpy(s1, &v1, sizeof s1), memcpy(s2, &v2, sizeof s2);
        for (; c < C; c++) {
            tg_real xh = (xr[c] - mu) * rs, dxh = j->w ? g[c] * j->w[c] : g[c];
            s1[0] += dxh;
            s2[0] += (double)dxh * xh;
        }
        for (int k = 1; k < 8; k++) s1[0] += s1[k], s2[0] += s2[k];
        tg_real m1 = j->mean ? (tg_real)(s1[0] / C) : 0, m2 = (tg_real)(s2[0] / C);
        tg_real *dxr = j->dx + r * C;
        for (c = 0; c < C; c++) {
            tg_real xh = (xr[c] - mu) * rs, dxh = j->w ? g[c] * j->w[c] : g[c];
            dxr[c] += rs * (dxh - m1 - xh * m2);
        }
    }
}
TG_SIMD_CLONES(static, ln_dx_rows, (void *ctx, size_t r0, size_t r1), (ctx, r0, r1))

/* dw [C] += sum over rows of dy * xhat, db [C] += sum over rows of dy, for
 * columns [c0, c1), rows in order (so the sums do not depend on the cut).
 * Row by row over strips of up to LN_STRIP columns, in local sums from dw's
 * and db's values to the store, as matmul.c's bias grad: x and dy read in
 * the order they are stored, dw and db written once per thread. */
#define LN_STRIP 512
TG_SIMD_BODY void ln_dwdb_cols_body(void *ctx, size_t c0, size_t c1)
{
    const ln_job *j = ctx;
    size_t C = (size_t)j->C;
    for (size_t s0 = c0; s0 < c1; s0 += LN_STRIP) {
        size_t n = c1 - s0 < LN_STRIP ? c1 - s0 : LN_STRIP;
        tg_real sw[LN_STRIP], sb[LN_STRIP];
        for (size_t c = 0; c < n; c++) sw[c] = j->dw ? j->dw[s0 + c] : 0, sb[c] = j->db ? j->db[s0 + c] : 0;
        for (size_t r = 0; r < j->n_rows; r++) {
            const tg_real *restrict xr = j->x + r * C + s0, *restrict g = j->dy + r * C + s0;
            const tg_real mu = j->mean ? j->mean[r] : 0, rs = j->rstd[r];
            for (size_t c = 0; c < n; c++) sw[c] += g[c] * ((xr[c] - mu) * rs);
            for (size_t c = 0; c < n; c++) sb[c] += g[c];
        }
        for (size_t c = 0; c < n; c++) {
            if (j->dw) j->dw[s0 + c] = sw[c];
            if (j->db) j->db[s0 + c] = sb[c];
        }
    }
}
TG_SIMD_CLONES(static, ln_dwdb_cols, (void *ctx, size_t c0, size_t c1), (ctx, c0, c1))

/* y, x [rows, C]; w, b [C] or NULL. */
TG_BACKWARD(layernorm_backward, ln_ctx)
{
    tg_tensor *x = in[0], *w = in[1], *b = in[2];
    const ln_ctx *s = ctx;
    tg_real *dx = x->requires_grad ? tg_grad(t, x) : NULL;
    tg_real *dw = w && w->requires_grad ? tg_grad(t, w) : NULL;
    tg_real *db = b && b->requires_grad ? tg_grad(t, b) : NULL;
    if ((x->requires_grad && !dx) || (w && w->requires_grad && !dw) || (b && b->requires_grad && !db))
        return;
    ln_job j = {.x = x->data, .w = w ? w->data : NULL, .dy = out->grad, .dx = dx, .dw = dw, .db = db,
                .mean = s->mean, .rstd = s->rstd, .C = tg_cols(x), .n_rows = tg_rows(x)};
    if (dw || db) tg_parallel_range((size_t)j.C, LN_NS(j.n_rows), ln_dwdb_cols, &j);
    if (dx) tg_parallel_range(j.n_rows, LN_NS(j.C), ln_dx_rows, &j);
}

/* x [..., C], w and b [C] or NULL; eps finite, >= 0 (> 0 when eps_positive:
 * RMSNorm of a zero row divides by sqrt(eps)). */
static bool norm_check(tg_tape *t, const tg_op *op, const tg_tensor *x, const tg_tensor *w, const tg_tensor *b,
                       double eps, bool eps_positive)
{
    char sx[TG_SHAPE_STR], sw[TG_SHAPE_STR], sb[TG_SHAPE_STR];
    int C = tg_cols(x);
    const char *bad = NULL;
    if (x->ndim < 1 || C < 1)
        bad = "x needs at least one dim and a last dim >= 1";
    else if (w && (w->ndim != 1 || w->shape[0] != C))
        bad = "weight must be [C], C = x's last dim";
    else if (b && (b->ndim != 1 || b->shape[0] != C))
        bad = "bias must be [C], C = x's last dim";
    else if (!(eps >= 0) || !isfinite(eps) || (eps_positive && eps == 0))
        bad = eps_positive ? "eps must be finite and > 0" : "eps must be finite and >= 0";
    if (!bad) return true;
    tg_op_fail(t, op, "%s: x %s, weight %s, bias %s, eps %g", bad, tg_shape_str(x, sx), tg_shape_str(w, sw),
               tg_shape_str(b, sb), eps);
    return false;
}

TG_OP(layernorm_op, "tg_layernorm", layernorm_backward, ln_ctx);

tg_tensor *tg_layernorm(tg_tape *t, tg_tensor *x, tg_tensor *weight, tg_tensor *bias, double eps)
{
    TG_DISPATCH_SAME(tg_layernorm, (t, x, weight, bias, eps), x, weight, bias);
    tg_tensor *in[3] = {x, weight, bias};
    if (!tg_inputs_check(t, &layernorm_op, in, 3, 1)) return NULL;
    if (!norm_check(t, &layernorm_op, x, weight, bias, eps, false)) return NULL;
    tg_tensor *out = tg_new_like(t, &layernorm_op, x);
    if (!out) return NULL;
    size_t rows = tg_rows(x);
    int C = tg_cols(x);
    ln_ctx s = {NULL, NULL};
    if (tg_needs_grad(t, in, 3)) {
        s.mean = tg_arena_alloc(t, 2 * rows * sizeof(tg_real), "tg_layernorm saved stats");
        if (!s.mean) return NULL;
        s.rstd = s.mean + rows;
    }
    ln_job j = {.x = x->data, .w = weight ? weight->data : NULL, .b = bias ? bias->data : NULL,
                .y = out->data, .mean = s.mean, .rstd = s.rstd, .n_rows = rows, .C = C, .eps = eps};
    tg_parallel_range(rows, LN_NS(C), ln_forward_rows, &j);
    if (!tg_op_record(t, &layernorm_op, out, in, 3, &s)) return NULL;
    return tg_op_done(t, &layernorm_op, out);
}

/* Saved per row: rstd [rows] (arena). */
typedef struct rms_ctx {
    tg_real *rstd;
} rms_ctx;

/* y [rows, C] = x * rstd * w; rstd [rows] saved when non-NULL. mean(x^2) in
 * lanes of double, as row_stats. */
TG_SIMD_BODY void rms_forward_rows_body(void *ctx, size_t r0, size_t r1)
{
    const ln_job *j = ctx;
    int C = j->C;
    for (size_t r = r0; r < r1; r++) {
        const tg_real *xr = j->x + r * C;
        tg_real *yr = j->y + r * C;
        tg_real rs = (tg_real)(1.0 / sqrt(tg_sum_squares(xr, (size_t)C) / C + j->eps));
        if (j->rstd) j->rstd[r] = rs;
        for (int c = 0; c < C; c++) yr[c] = j->w ? xr[c] * rs * j->w[c] : xr[c] * rs;
    }
}
TG_SIMD_CLONES(static, rms_forward_rows, (void *ctx, size_t r0, size_t r1), (ctx, r0, r1))

/* y, x [rows, C]; w [C] or NULL. */
TG_BACKWARD(rmsnorm_backward, rms_ctx)
{
    tg_tensor *x = in[0], *w = in[1];
    tg_real *dx = x->requires_grad ? tg_grad(t, x) : NULL;
    tg_real *dw = w && w->requires_grad ? tg_grad(t, w) : NULL;
    if ((x->requires_grad && !dx) || (w && w->requires_grad && !dw)) return;
    ln_job j = {.x = x->data, .w = w ? w->data : NULL, .dy = out->grad, .dx = dx, .dw = dw,
                .rstd = ctx->rstd, .C = tg_cols(x), .n_rows = tg_rows(x)};
    if (dw) tg_parallel_range((size_t)j.C, LN_NS(j.n_rows), ln_dwdb_cols, &j);
    if (dx) tg_parallel_range(j.n_rows, LN_NS(j.C), ln_dx_rows, &j);
}

TG_OP(rmsnorm_op, "tg_rmsnorm", rmsnorm_backward, rms_ctx);

tg_tensor *tg_rmsnorm(tg_tape *t, tg_tensor *x, tg_tensor *weight, double eps)
{
    TG_DISPATCH_SAME(tg_rmsnorm, (t, x, weight, eps), x, weight);
    tg_tensor *in[2] = {x, weight};
    if (!tg_inputs_check(t, &rmsnorm_op, in, 2, 1)) return NULL;
    if (!norm_check(t, &rmsnorm_op, x, weight, NULL, eps, true)) return NULL;
    tg_tensor *out = tg_new_like(t, &rmsnorm_op, x);
    if (!out) return NULL;
    size_t rows = tg_rows(x);
    rms_ctx s = {NULL};
    if (tg_needs_grad(t, in, 2) && !(s.rstd = tg_arena_alloc(t, rows * sizeof(tg_real), "tg_rmsnorm saved rstd")))
        return NULL;
    ln_job j = {.x = x->data, .w = weight ? weight->data : NULL, .y = out->data, .rstd = s.rstd, .n_rows = rows,
                .C = tg_cols(x), .eps = eps};
    tg_parallel_range(rows, LN_NS(j.C), rms_forward_rows, &j);
    if (!tg_op_record(t, &rmsnorm_op, out, in, 2, &s)) return NULL;
    return tg_op_done(t, &rmsnorm_op, out);
}
