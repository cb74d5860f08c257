/* tapegrad: reductions of every element to a 0-d tensor (torch.sum(a),
 * mean, max, min). With g = dout:
 *   sum   y = sum x (in double)        dx = g
 *   mean  y = sum x / n (n = 0: 0)     dx = g / n
 *   max   y = max x (NaN if any)       g / k to each of the k elements equal to
 *                                      y (NaN: to each NaN), as PyTorch; min alike
 * An empty a has no max or min: an error.
 */
#include <math.h>

#include "../internal.h"
#include "../ops.h"

/* ---- sum, mean ------------------------------------------------------------------ */

typedef struct sum_ctx {
    double s;  /* 1 for sum, 1/n for mean */
} sum_ctx;

/* out = s * sum(a), 0-d: da += s * dout */
TG_BACKWARD(sum_backward, sum_ctx)
{
    tg_tensor *a = in[0];
    tg_real *da = tg_grad(t, a);
    if (!da) return;
    tg_real g = (tg_real)(ctx->s * out->grad[0]);
    for (size_t i = 0; i < a->size; i++) da[i] += g;
}

TG_OP(sum_op, "tg_sum", sum_backward, sum_ctx);
TG_OP(mean_op, "tg_mean", sum_backward, sum_ctx);

static tg_tensor *scaled_sum(tg_tape *t, tg_tensor *a, const tg_op *op, bool mean)
{
    if (!tg_inputs_check(t, op, &a, 1, 1)) return NULL;
    tg_tensor *out = tg_new(t, op, 0, NULL);
    if (!out) return NULL;
    double s = mean ? (a->size ? 1.0 / (double)a->size : 0) : 1, acc = 0;
    for (size_t i = 0; i < a->size; i++) acc += a->data[i];
    out->data[0] = (tg_real)(s * acc);
    if (!tg_op_record(t, op, out, &a, 1, &(sum_ctx){s})) return NULL;
    return tg_op_done(t, op, out);
}

tg_tensor *tg_sum(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_sum, a, (t, a));
    return scaled_sum(t, a, &sum_op, false);
}
tg_tensor *tg_mean(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_mean, a, (t, a));
    return scaled_sum(t, a, &mean_op, true);
}

/* ---- max, min ------------------------------------------------------------------ */

/* out [] = max(a): da += g / k at each of the k elements equal to out (each
 * NaN when out is NaN) */
static void extreme_backward(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx)
{
    (void)ctx;
    tg_tensor *a = in[0];
    tg_real *da = tg_grad(t, a), y = out->data[0];
    if (!da) return;
    bool nan = isnan(y);
    size_t k = 0;
    for (size_t i = 0; i < a->size; i++) k += nan ? isnan(a->data[i]) : a->data[i] == y;
    tg_real g = out->grad[0] / (tg_real)k;
    for (size_t i = 0; i < a->size; i++)
        if (nan ? isnan(a->data[i]) : a->data[i] == y) da[i] += g;
}

TG_OP_NO_CTX(max_op, "tg_max", extreme_backward);
TG_OP_NO_CTX(min_op, "tg_min", extreme_backward);

static tg_tensor *extreme(tg_tape *t, tg_tensor *a, bool max)
{
    const tg_op *op = max ? &max_op : &min_op;
    if (!tg_inputs_check(t, op, &a, 1, 1)) return NULL;
    if (a->size == 0) {
        char sa[TG_SHAPE_STR];
        return tg_fail(t, "%s: a %s is empty: no %s (give a dim-wise reduction a default instead)", op->name,
                       tg_shape_str(a, sa), max ? "maximum" : "minimum");
    }
    tg_tensor *out = tg_new(t, op, 0, NULL);
    if (!out) return NULL;
    tg_real y = a->data[0];
    for (size_t i = 1; i < a->size && !isnan(y); i++) {
        tg_real v = a->data[i];
        if (isnan(v) || (max ? v > y : v < y)) y = v;
    }
    out->data[0] = y;
    if (!tg_op_record(t, op, out, &a, 1, NULL)) return NULL;
    return tg_op_done(t, op, out);
}

tg_tensor *tg_max(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_max, a, (t, a));
    return extreme(t, a, true);
}
tg_tensor *tg_min(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_min, a, (t, a));
    return extreme(t, a, false);
}
