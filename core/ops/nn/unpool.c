/* tapegrad: max unpooling (F.max_unpool2d), the inverse of max pooling's
 * routing: each input goes to the output plane position its index names.
 *
 *   out[p][idx[p, i]] = x[p, i]      (zero elsewhere; a repeated index: the last)
 *   dx[p, i] += dout[p][idx[p, i]]   (PyTorch's: a gather of dout)
 *
 * p runs over the N * C planes, i over a plane's H * W inputs. The indices
 * are copied to the arena (the caller may change its tensor before backward).
 */
#include <stdint.h>
#include <string.h>

#include "conv.h"
#include "../internal.h"
#include "../ops.h"

typedef struct unpool_ctx {
    size_t planes, in, out;  /* N * C, H * W, Ho * Wo */
    const int64_t *idx;      /* [planes, in], each in [0, out) */
} unpool_ctx;

/* out [planes, Ho, Wo] <- x [planes, H, W] */
TG_BACKWARD(unpool_backward, unpool_ctx)
{
    tg_real *dx = tg_grad(t, in[0]);
    if (!dx) return;
    for (size_t p = 0; p < ctx->planes; p++)
        for (size_t i = p * ctx->in; i < (p + 1) * ctx->in; i++) dx[i] += out->grad[p * ctx->out + (size_t)ctx->idx[i]];
}

TG_OP(unpool_op, "tg_max_unpool2d", unpool_backward, unpool_ctx);

/* The output size along one dim: PyTorch's default, or size when strictly
 * within stride of it; -1 with an error otherwise. */
static int unpool_size(tg_tape *t, int in, int k, int s, int p, const int *size, int d)
{
    long dflt = (long)(in - 1) * s - 2L * p + k;
    if (!size) {
        if (dflt > 0 && dflt <= INT32_MAX) return (int)dflt;
        tg_op_fail(t, &unpool_op, "output size %ld (dim %d) must be > 0", dflt, d);
        return -1;
    }
    if (size[d] > 0 && size[d] > dflt - s && size[d] < dflt + s) return size[d];
    tg_op_fail(t, &unpool_op, "output_size %d (dim %d) must be > 0 and strictly between %ld and %ld (the default %ld "
               "less and plus the stride %d)", size[d], d, dflt - s, dflt + s, dflt, s);
    return -1;
}

tg_tensor *tg_max_unpool2d(tg_tape *t, tg_tensor *x, tg_tensor *indices, const tg_pool_opts *opts,
                           const int *output_size)
{
    TG_DISPATCH(tg_max_unpool2d, x, (t, x, indices, opts, output_size));
    if (!tg_inputs_check(t, &unpool_op, &x, 1, 1) || !tg_index_check(t, &unpool_op, indices, "indices")) return NULL;
    char sx[TG_SHAPE_STR], si[TG_SHAPE_STR];
    if (!opts) return tg_op_fail(t, &unpool_op, "opts is NULL (the kernel size has no default)");
    if (x->ndim != 4 && x->ndim != 3)
        return tg_op_fail(t, &unpool_op, "input %s must be [N, C, H, W] or [C, H, W]", tg_shape_str(x, sx));
    if (!tg_shape_equal(x, indices))
        return tg_op_fail(t, &unpool_op, "indices %s must have the input's shape %s", tg_shape_str(indices, si),
                          tg_shape_str(x, sx));
    int shape[TG_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    for (int d = 0; d < 2; d++) {
        int k = opts->kernel[d], s = opts->stride[d] ? opts->stride[d] : k, p = opts->padding[d];
        if (k <= 0 || s <= 0 || p < 0)
            return tg_op_fail(t, &unpool_op, "kernel %d and stride %d must be > 0 (stride 0: the kernel), padding "
                              "%d >= 0 (dim %d)", k, opts->stride[d], p, d);
        int n = unpool_size(t, x->shape[x->ndim - 2 + d], k, s, p, output_size, d);
        if (n < 0) return NULL;
        shape[x->ndim - 2 + d] = n;
    }
    unpool_ctx c = {0, (size_t)x->shape[x->ndim - 2] * x->shape[x->ndim - 1],
                    (size_t)shape[x->ndim - 2] * shape[x->ndim - 1], NULL};
    c.planes = c.in ? x->size / c.in : 0;
    int64_t *idx = tg_arena_alloc(t, x->size * sizeof *idx + 1, unpool_op.name);
    if (!idx) return NULL;
    for (size_t i = 0; i < x->size; i++) {
        idx[i] = tg_index_at(indices, i);
        if (idx[i] < 0 || (size_t)idx[i] >= c.out)
            return tg_op_fail(t, &unpool_op, "indices[%zu] = %lld is out of range for an output plane of %d x %d",
                              i, (long long)idx[i], shape[x->ndim - 2], shape[x->ndim - 1]);
    }
    tg_tensor *out = tg_new(t, &unpool_op, x->ndim, shape);
    if (!out) return NULL;
    memset(out->data, 0, out->size * sizeof(tg_real));
    for (size_t p = 0; p < c.planes; p++)
        for (size_t i = p * c.in; i < (p + 1) * c.in; i++) out->data[p * c.out + (size_t)idx[i]] = x->data[i];
    c.idx = idx;
    if (!tg_op_record(t, &unpool_op, out, &x, 1, &c)) return NULL;
    return tg_op_done(t, &unpool_op, out);
}
