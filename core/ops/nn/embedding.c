/* tapegrad: embedding lookup.
 *
 * out [..., D] = weight [V, D] rows picked by ids [...] (int64 or int32).
 * Backward scatter-adds: dweight[ids[i]] += dout[i] (a repeated id gets the
 * sum of its rows' grads).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

typedef struct embedding_ctx {
    const int32_t *ids;  /* [n] arena copy: the caller may change its ids at once */
    int n;
} embedding_ctx;

/* out [..., D] <- weight [V, D] at ids [...] */
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

tg_tensor *tg_embedding(tg_tape *t, tg_tensor *weight, const tg_tensor *ids)
{
    TG_DISPATCH(tg_embedding, weight, (t, weight, ids));
    if (!tg_inputs_check(t, &embedding_op, &weight, 1, 1) || !tg_index_check(t, &embedding_op, ids, "ids"))
        return NULL;
    char sw[TG_SHAPE_STR], si[TG_SHAPE_STR];
    if (weight->ndim != 2)
        return tg_op_fail(t, &embedding_op, "weight must be [V, D], got %s", tg_shape_str(weight, sw));
    size_t N = ids->size;
    if (ids->ndim >= TG_MAX_DIMS || N > INT_MAX)
        return tg_op_fail(t, &embedding_op, "ids %s has too many dims or elements (at most %d dims; weight %s)",
                          tg_shape_str(ids, si), TG_MAX_DIMS - 1, tg_shape_str(weight, sw));
    int V = weight->shape[0], D = weight->shape[1], shape[TG_MAX_DIMS];
    for (size_t i = 0; i < N; i++) {
        int64_t v = tg_index_at(ids, i);
        if (v < 0 || v >= V)
            return tg_op_fail(t, &embedding_op, "id %lld at position %zu is out of range [0, %d) (weight %s, ids %s)",
                              (long long)v, i, V, tg_shape_str(weight, sw), tg_shape_str(ids, si));
    }
    memcpy(shape, ids->shape, (size_t)ids->ndim * sizeof *shape);
    shape[ids->ndim] = D;
    tg_tensor *out = tg_new(t, &embedding_op, ids->ndim + 1, shape);
    if (!out) return NULL;
    for (size_t i = 0; i < N; i++)
        memcpy(out->data + i * D, weight->data + (size_t)tg_index_at(ids, i) * D, (size_t)D * sizeof(tg_real));
    if (tg_needs_grad(t, &weight, 1)) {
        int32_t *saved = tg_arena_alloc(t, (N ? N : 1) * sizeof *saved, "tg_embedding saved ids");
        if (!saved) return NULL;
        for (size_t i = 0; i < N; i++) saved[i] = (int32_t)tg_index_at(ids, i);
        if (!tg_op_record(t, &embedding_op, out, &weight, 1, &(embedding_ctx){saved, (int)N})) return NULL;
    }
    return tg_op_done(t, &embedding_op, out);
}
