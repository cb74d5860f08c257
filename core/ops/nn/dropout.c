/* tapegrad: inverted dropout with the framework RNG (core/engine/rng.h).
 *
 * out = a * mask / (1 - p), mask_i = 1 with probability 1 - p (one
 * tg_rng_uniform draw per element, kept when u >= p, so a seeded rng gives
 * the same mask on every machine). Backward: da += dout * mask / (1 - p),
 * with the forward's mask (saved in the arena).
 * Identity when p == 0 or the tape is not training: the result is `a`
 * itself (no copy, no node, no draw from rng).
 * p must be in [0, 1) (checked on every call); rng must be non-NULL when
 * dropout actually runs (p > 0 while training), so evaluation code may pass
 * NULL.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

typedef struct dropout_ctx {
    const uint8_t *mask;  /* [a->size] 1 = kept (arena) */
    double scale;         /* 1 / (1 - p) */
} dropout_ctx;

/* out [...] <- a [...]: da += dout * mask * scale */
TG_BACKWARD(dropout_backward, dropout_ctx)
{
    const dropout_ctx *c = ctx;
    tg_tensor *a = in[0];
    const tg_real *g = out->grad, scale = (tg_real)c->scale;
    tg_real *da = tg_grad(t, a);
    if (!da) return;
    for (size_t i = 0; i < a->size; i++)
        if (c->mask[i]) da[i] += g[i] * scale;
}

TG_OP(dropout_op, "tg_dropout", dropout_backward, dropout_ctx);

tg_tensor *tg_dropout(tg_tape *t, tg_tensor *a, double p, tg_rng *rng)
{
    TG_DISPATCH(tg_dropout, a, (t, a, p, rng));
    if (!tg_inputs_check(t, &dropout_op, &a, 1, 1)) return NULL;
    char sa[TG_SHAPE_STR];
    if (!(p >= 0 && p < 1))
        return tg_op_fail(t, &dropout_op, "p must be in [0, 1), got %g (a %s)", p, tg_shape_str(a, sa));
    if (p == 0 || !tg_tape_training(t)) return a;
    if (!rng)
        return tg_op_fail(t, &dropout_op, "rng is NULL with p = %g while training (a %s)", p, tg_shape_str(a, sa));
    tg_tensor *out = tg_new_like(t, &dropout_op, a);
    if (!out) return NULL;
    bool need = tg_needs_grad(t, &a, 1);
    uint8_t *mask = need ? tg_arena_alloc(t, a->size, "tg_dropout mask") : NULL;
    if (need && !mask) return NULL;
    const tg_real scale = (tg_real)(1.0 / (1.0 - p));
    for (size_t i = 0; i < a->size; i++) {
        bool keep = tg_rng_uniform(rng) >= p;
        out->data[i] = a->data[i] * (keep ? scale : 0);  /* a dropped NaN stays NaN, as PyTorch */
        if (mask) mask[i] = keep;
    }
    if (!tg_op_record(t, &dropout_op, out, &a, 1, &(dropout_ctx){mask, 1.0 / (1.0 - p)})) return NULL;
    return tg_op_done(t, &dropout_op, out);
}
