/* tapegrad: softmax, log_softmax and masked softmax over the last dim.
 *
 * y = softmax(x * scale + additive) over the visible entries of each row,
 * computed stably (row max subtracted). Masked entries are -inf before the
 * exp, so their weight is exactly 0, and a row with no visible entry is all
 * zeros (its max stays -inf; PyTorch gives NaN there).
 * Backward needs only y (the op's own output):
 *   softmax       dx = scale * y * (dy - sum(dy * y))   (0 where y is 0)
 *   log_softmax   dx = dy - exp(y) * sum(dy)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"
#include "../../kernels/vmath.h"

#ifdef TAPEGRAD_DOUBLE
#define R_LOG log
#else
#define R_LOG logf
#endif

/* Row reductions with 8 independent lanes: no loop-carried dependence, so
 * they run at throughput (and vectorize) without -ffast-math. */
#define LANES 8
/* The max ignores NaN (a compare with NaN is false), so a row holding a NaN
 * among numbers still turns NaN as a whole: exp(NaN - max) poisons the sum,
 * as in PyTorch. Only a row with no number is checked again, so that a row
 * of NaN scores gives NaN instead of passing for a fully masked (-inf) one;
 * the hot loop keeps its vectorised max. */
static inline tg_real row_max(const tg_real *y, int n)
{
    tg_real m[LANES];
    for (int k = 0; k < LANES; k++) m[k] = -INFINITY;
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int k = 0; k < LANES; k++) m[k] = y[j + k] > m[k] ? y[j + k] : m[k];
    for (; j < n; j++) m[0] = y[j] > m[0] ? y[j] : m[0];
    for (int k = 1; k < LANES; k++) m[0] = m[k] > m[0] ? m[k] : m[0];
    if (m[0] == -INFINITY)
        for (j = 0; j < n; j++)
            if (y[j] != y[j]) return y[j];
    return m[0];
}

/* Row r of x * scale + add, masked entries -inf, into yr. */
static inline void scores_row(const tg_real *xr, tg_real *yr, int n, tg_real scale, const uint8_t *vr,
                              const tg_real *ar)
{
    if (ar)
        for (int j = 0; j < n; j++) yr[j] = xr[j] * scale + ar[j];
    else if (xr != yr || scale != 1)
        for (int j = 0; j < n; j++) yr[j] = xr[j] * scale;
    if (vr)
        for (int j = 0; j < n; j++) yr[j] = vr[j] ? yr[j] : -INFINITY;
}

/* Declared in core/ops/internal.h; also used by tg_sdpa. */
TG_SIMD_BODY void tg_softmax_block_body(const tg_real *x, tg_real *y, size_t rows, int n, tg_real scale,
                                     const uint8_t *vis, const tg_real *add, int ld_add, tg_real *stats)
{
    for (size_t r = 0; r < rows; r++) {
        tg_real *yr = y + r * n;
        scores_row(x + r * n, yr, n, scale, vis ? vis + r * n : NULL, add ? add + r * ld_add : NULL);
        tg_real mx = row_max(yr, n), inv = 0;
        if (mx == -INFINITY) /* no visible key: all zeros, not NaN */
            memset(yr, 0, (size_t)n * sizeof *yr);
        else {
            for (int j = 0; j < n; j++) yr[j] = tg_vexp(yr[j] - mx); /* masked: exactly 0 */
            inv = 1 / tg_row_sum(yr, (size_t)n);
            for (int j = 0; j < n; j++) yr[j] *= inv;
        }
        if (stats) stats[2 * r] = mx, stats[2 * r + 1] = inv;
    }
}
TG_SIMD_CLONES(, tg_softmax_block,
               (const tg_real *x, tg_real *y, size_t rows, int n, tg_real scale, const uint8_t *vis,
                const tg_real *add, int ld_add, tg_real *stats),
               (x, y, rows, n, scale, vis, add, ld_add, stats))

/* Declared in core/ops/internal.h: tg_softmax_block's rows again from its
 * stats, without the two row reductions. */
TG_SIMD_BODY void tg_softmax_block_redo_body(const tg_real *x, tg_real *y, size_t rows, int n, tg_real scale,
                                          const uint8_t *vis, const tg_real *add, int ld_add,
                                          const tg_real *stats)
{
    for (size_t r = 0; r < rows; r++) {
        tg_real *yr = y + r * n, mx = stats[2 * r], inv = stats[2 * r + 1];
        if (mx == -INFINITY) {
            memset(yr, 0, (size_t)n * sizeof *yr);
            continue;
        }
        scores_row(x + r * n, yr, n, scale, vis ? vis + r * n : NULL, add ? add + r * ld_add : NULL);
        for (int j = 0; j < n; j++) yr[j] = tg_vexp(yr[j] - mx) * inv;
    }
}
TG_SIMD_CLONES(, tg_softmax_block_redo,
               (const tg_real *x, tg_real *y, size_t rows, int n, tg_real scale, const uint8_t *vis,
                const tg_real *add, int ld_add, const tg_real *stats),
               (x, y, rows, n, scale, vis, add, ld_add, stats))

typedef struct softmax_ctx {
    double scale;  /* tg_softmax_masked's; 1 otherwise */
} softmax_ctx;

/* y, dy, dx [rows, n]: dx += scale * y * (dy - sum(dy * y)) */
TG_BACKWARD(softmax_backward, softmax_ctx)
{
    tg_tensor *y = out;
    tg_real *dx = tg_grad(t, in[0]);
    if (!dx) return;
    size_t rows = tg_rows(y);
    int c = tg_cols(y);
    tg_real s = (tg_real)ctx->scale;
    for (size_t r = 0; r < rows; r++) {
        const tg_real *yr = y->data + r * c, *gr = y->grad + r * c;
        tg_real *dr = dx + r * c;
        tg_real dot = tg_row_dot(gr, yr, (size_t)c);
        for (int j = 0; j < c; j++) dr[j] += s * yr[j] * (gr[j] - dot);
    }
}

TG_OP(softmax_op, "tg_softmax", softmax_backward, softmax_ctx);
TG_OP(softmax_masked_op, "tg_softmax_masked", softmax_backward, softmax_ctx);

/* Records the node of a softmax-like op whose backward reads only its output. */
static tg_tensor *finish(tg_tape *t, const tg_op *op, tg_tensor *a, tg_tensor *out, double scale)
{
    if (!tg_op_record(t, op, out, &a, 1, &(softmax_ctx){scale})) return NULL;
    return tg_op_done(t, op, out);
}

tg_tensor *tg_softmax(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_softmax, a, (t, a));
    if (!tg_inputs_check(t, &softmax_op, &a, 1, 1)) return NULL;
    tg_tensor *out = tg_new_like(t, &softmax_op, a);
    if (!out) return NULL;
    tg_softmax_block(a->data, out->data, tg_rows(a), tg_cols(a), 1, NULL, NULL, 0, NULL);
    return finish(t, &softmax_op, a, out, 1.0);
}

/* y, dy, dx [rows, n]: dx += dy - exp(y) * sum(dy) */
static void log_softmax_backward(tg_tape *t, tg_tensor *y, tg_tensor *const *in, const void *ctx)
{
    (void)ctx;
    tg_real *dx = tg_grad(t, in[0]);
    if (!dx) return;
    size_t rows = tg_rows(y);
    int c = tg_cols(y);
    for (size_t r = 0; r < rows; r++) {
        const tg_real *yr = y->data + r * c, *gr = y->grad + r * c;
        tg_real *dr = dx + r * c;
        tg_real sum = tg_row_sum(gr, (size_t)c);
        for (int j = 0; j < c; j++) dr[j] += gr[j] - tg_vexp(yr[j]) * sum;
    }
}

TG_OP(log_softmax_op, "tg_log_softmax", log_softmax_backward, softmax_ctx);

tg_tensor *tg_log_softmax(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_log_softmax, a, (t, a));
    if (!tg_inputs_check(t, &log_softmax_op, &a, 1, 1)) return NULL;
    tg_tensor *out = tg_new_like(t, &log_softmax_op, a);
    if (!out) return NULL;
    size_t rows = tg_rows(a);
    int c = tg_cols(a);
    for (size_t r = 0; r < rows; r++) { /* y = (x - max) - log(sum(exp(x - max))) */
        const tg_real *xr = a->data + r * c;
        tg_real *yr = out->data + r * c;
        tg_real mx = row_max(xr, c);
        for (int j = 0; j < c; j++) yr[j] = tg_vexp(xr[j] - mx); /* y as scratch */
        /* not x - (max + log_sum): that sum rounds at the scale of |x| (1e4 in float: 1e-3) */
        tg_real log_sum = R_LOG(tg_row_sum(yr, (size_t)c));
        for (int j = 0; j < c; j++) yr[j] = (xr[j] - mx) - log_sum;
    }
    return finish(t, &log_softmax_op, a, out, 1.0);
}

/* Scores a [B, H, Lq, Lk] (3-D: H = 1, 2-D: B = H = 1); out has a's shape.
 * The mask's float parts are added as attention adds them (tg_attn_bias_rows). */
tg_tensor *tg_softmax_masked(tg_tape *t, tg_tensor *a, const tg_mask *mask, double scale)
{
    TG_DISPATCH(tg_softmax_masked, a, (t, a, mask, scale));
    if (!tg_inputs_check(t, &softmax_masked_op, &a, 1, 1)) return NULL;
    char sa[TG_SHAPE_STR], what[TG_SHAPE_STR + 8];
    snprintf(what, sizeof what, "a %s", tg_shape_str(a, sa));
    if (a->ndim < 2 || a->ndim > 4)
        return tg_op_fail(t, &softmax_masked_op, "scores must be 2-D to 4-D [B,H,Lq,Lk]: %s", what);
    if (!isfinite(scale))
        return tg_op_fail(t, &softmax_masked_op, "scale %g is not finite: %s", scale, what);
    int nd = a->ndim, Lq = a->shape[nd - 2], Lk = a->shape[nd - 1];
    int B = nd >= 3 ? a->shape[0] : 1, H = nd == 4 ? a->shape[1] : 1;
    tg_attn_bias ab = {.H = H, .Lq = Lq, .Lk = Lk};
    if (!tg_mask_read(t, mask, B, H, Lq, Lk, false, softmax_masked_op.name, what, &ab.mask)) return NULL;
    tg_tensor *out = tg_new_like(t, &softmax_masked_op, a);
    if (!out) return NULL;
    const tg_mask_rt *m = &ab.mask;
    bool rules = tg_mask_rt_rules(m) || m->lens, sum = m->add && m->pad_add;  /* no block stops at lens here */
    size_t plane = (size_t)Lq * Lk, bytes = (rules ? plane : 0) + (sum ? plane * sizeof(tg_real) : 0);
    tg_real *scr = bytes ? tg_arena_scratch(t, bytes, "tg_softmax_masked mask") : NULL;
    if (bytes && !scr) return NULL;
    uint8_t *vis = rules ? (uint8_t *)(scr + (sum ? plane : 0)) : NULL;
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            size_t off = ((size_t)b * H + h) * plane;
            if (rules && ((b == 0 && h == 0) || (tg_mask_rt_per_h(m) || (h == 0 && tg_mask_rt_per_b(m)))))
                tg_mask_fill_rows(m, b, h, 0, Lq, Lk, vis);
            int ld;
            const tg_real *add = tg_attn_bias_rows(&ab, b, h, 0, Lq, Lk, scr, &ld);
            tg_softmax_block(a->data + off, out->data + off, (size_t)Lq, Lk, (tg_real)scale, vis, add, ld, NULL);
        }
    }
    tg_arena_release(t, scr, bytes);
    return finish(t, &softmax_masked_op, a, out, scale);
}
