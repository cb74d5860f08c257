/* tapegrad: embedding lookup.
 *
 * out [B, T, D] = weight [V, D] rows picked by ids [B*T].
 * Backward scatter-adds: dweight[ids[i]] += dout[i] (a repeated id gets the
 * sum of its rows' grads).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../ops.h"

typedef struct embedding_ctx {
    const int32_t *ids;  /* [n] arena copy: the caller may reuse its array */
    int n;
} embedding_ctx;

/* out [B,T,D] <- weight [V,D] at ids */
TG_BACKWARD(embedding_backward, embedding_ctx)
{
    const embedding_ctx *c = ctx;
    tg_tensor *w = in[0];
    int D = w->shape[1];
    tg_real *dw = tg_grad(t, w);
    if (!dw) return;
    for (int i = 0; i < c->n; i++) {
        const tg_real *g = out->grad + (size_t)i * D;
        tg_real *d = dw + (size_t)c->ids[i] * D;
        for (int j = 0; j < D; j++) d[j] += g[j];
    }
}

TG_OP(embedding_op, "tg_embedding", embedding_backward, embedding_ctx);

tg_tensor *tg_embedding(tg_tape *t, tg_tensor *weight, const int32_t *ids, int B, int T)
{
    if (!tg_inputs_check(t, &embedding_op, &weight, 1, 1)) return NULL;
    if (!ids) return tg_fail_null(t, embedding_op.name);
    char sw[TG_SHAPE_STR];
    if (weight->ndim != 2)
        return tg_op_fail(t, &embedding_op, "weight must be [V, D], got %s", tg_shape_str(weight, sw));
    if (B < 0 || T < 0 || (T > 0 && B > INT_MAX / T))
        return tg_op_fail(t, &embedding_op, "bad ids shape B %d, T %d (weight %s)", B, T, tg_shape_str(weight, sw));
    int V = weight->shape[0], D = weight->shape[1], N = B * T;
    for (int i = 0; i < N; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return tg_op_fail(t, &embedding_op, "id %d at position %d (b %d, t %d) is out of range [0, %d) (weight %s, ids [%d,%d])",
                              (int)ids[i], i, i / T, i % T, V, tg_shape_str(weight, sw), B, T);
    tg_tensor *out = tg_new(t, &embedding_op, 3, (int[]){B, T, D});
    if (!out) return NULL;
    for (int i = 0; i < N; i++)
        memcpy(out->data + (size_t)i * D, weight->data + (size_t)ids[i] * D, (size_t)D * sizeof(tg_real));
    if (tg_needs_grad(t, &weight, 1)) {
        int32_t *saved = tg_arena_alloc(t, (size_t)N * sizeof *saved, "tg_embedding saved ids");
        if (!saved) return NULL;
        memcpy(saved, ids, (size_t)N * sizeof *saved);
        if (!tg_op_record(t, &embedding_op, out, &weight, 1, &(embedding_ctx){saved, N})) return NULL;
    }
    return tg_op_done(t, &embedding_op, out);
}
