/* tapegrad: channel dropout (F.dropout2d) with the framework RNG.
 *
 * x [N, C, H, W]: each channel (n, c) is kept whole with probability 1 - p
 * (one tg_rng_uniform draw per channel in (n, c) order, kept when u >= p)
 * and scaled by 1 / (1 - p), or zeroed whole. Backward: dx += dout * mask /
 * (1 - p). As tg_dropout: identity (x itself, no node, no draw) when p == 0
 * or the tape is not training; p in [0, 1); rng needed only when it runs.
 */
#include <stdio.h>
#include <string.h>

#include "conv.h"
#include "../internal.h"
#include "../ops.h"

typedef struct dropout2d_ctx {
    const uint8_t *mask;  /* [N * C] 1 = kept (arena) */
    size_t plane;         /* H * W */
    double scale;         /* 1 / (1 - p) */
} dropout2d_ctx;

/* out [N, C, H, W] <- x: dx += dout * mask * scale, a channel at a time */
TG_BACKWARD(dropout2d_backward, dropout2d_ctx)
{
    tg_real *dx = tg_grad(t, in[0]);
    if (!dx) return;
    const tg_real scale = (tg_real)ctx->scale;
    for (size_t i = 0; i < in[0]->size; i++)
        if (ctx->mask[i / ctx->plane]) dx[i] += out->grad[i] * scale;
}

TG_OP(dropout2d_op, "tg_dropout2d", dropout2d_backward, dropout2d_ctx);

tg_tensor *tg_dropout2d(tg_tape *t, tg_tensor *x, double p, tg_rng *rng)
{
    TG_DISPATCH(tg_dropout2d, x, (t, x, p, rng));
    if (!tg_inputs_check(t, &dropout2d_op, &x, 1, 1)) return NULL;
    char sx[TG_SHAPE_STR];
    if (!(p >= 0 && p < 1))
        return tg_op_fail(t, &dropout2d_op, "p must be in [0, 1), got %g (x %s)", p, tg_shape_str(x, sx));
    if (x->ndim != 4)
        return tg_op_fail(t, &dropout2d_op, "input %s must be [N, C, H, W] (PyTorch reads a 3-D input as [N, C, L])",
                       tg_shape_str(x, sx));
    if (p == 0 || !tg_tape_training(t)) return x;
    if (!rng)
        return tg_op_fail(t, &dropout2d_op, "rng is NULL with p = %g while training (x %s)", p, tg_shape_str(x, sx));
    tg_tensor *out = tg_new_like(t, &dropout2d_op, x);
    if (!out) return NULL;
    size_t channels = (size_t)x->shape[0] * x->shape[1], plane = (size_t)x->shape[2] * x->shape[3];
    uint8_t *mask = tg_arena_alloc(t, channels + 1, "tg_dropout2d mask");
    if (!mask) return NULL;
    const tg_real scale = (tg_real)(1.0 / (1.0 - p));
    for (size_t c = 0; c < channels; c++) {
        mask[c] = tg_rng_uniform(rng) >= p;
        for (size_t i = c * plane; i < (c + 1) * plane; i++) out->data[i] = x->data[i] * (mask[c] ? scale : 0);
    }
    if (!tg_op_record(t, &dropout2d_op, out, &x, 1, &(dropout2d_ctx){mask, plane ? plane : 1, 1.0 / (1.0 - p)}))
        return NULL;
    return tg_op_done(t, &dropout2d_op, out);
}
