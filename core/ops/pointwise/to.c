/* tapegrad: tg_to, a tensor converted to another dtype (PyTorch's x.to(dtype)).
 *
 * Elements go through tg_dtype_store's rules: float types round to nearest
 * even, integers truncate toward zero and saturate, NaN is 0 as an integer,
 * bool is x != 0. Between two float types the grad flows back converted
 * (PyTorch's): dx += (dtype of x) dout. Nothing flows into or out of an
 * integer or bool tensor. The code reads any dtype, so both copies of this
 * file (docs/DESIGN.md "Dtypes") do the same. */
#include <string.h>

#include "../internal.h"
#include "../ops.h"

/* dst [n] of dtype dd = src [n] of dtype sd, converted. */
static void convert(void *dst, tg_dtype dd, const void *src, tg_dtype sd, size_t n)
{
    if (dd == sd) {
        memcpy(dst, src, n * tg_dtype_size(dd));
    } else if (dd == TG_F64 && sd == TG_F32) {
        for (size_t i = 0; i < n; i++) ((double *)dst)[i] = ((const float *)src)[i];
    } else if (dd == TG_F32 && sd == TG_F64) {
        for (size_t i = 0; i < n; i++) ((float *)dst)[i] = (float)((const double *)src)[i];
    } else {
        for (size_t i = 0; i < n; i++) tg_dtype_store(dd, dst, i, tg_dtype_load(sd, src, i));
    }
}

/* dx += dout, converted to x's dtype (out and x are float types). */
TG_BACKWARD(to_backward, int)
{
    (void)ctx;
    tg_tensor *x = in[0];
    void *dx = tg_grad_as(t, x, x->dtype);
    if (!dx) return;
    for (size_t i = 0; i < x->size; i++)
        tg_dtype_store(x->dtype, dx, i, tg_dtype_load(x->dtype, dx, i) + tg_dtype_load(out->dtype, out->grad, i));
}
TG_OP(to_op, "tg_to", to_backward, int);

tg_tensor *tg_to(tg_tape *t, tg_tensor *a, tg_dtype dtype)
{
    if (!tg_inputs_check_dtype(t, &to_op, a ? a->dtype : TG_REAL_DTYPE, &a, 1, 1)) return NULL;
    if (!tg_dtype_size(dtype)) return tg_op_fail(t, &to_op, "%d is not a dtype", (int)dtype);
    tg_tensor *out = tg_new_op(t, &to_op, dtype, a->ndim, a->shape);
    if (!out) return NULL;
    convert(out->data, dtype, a->data, a->dtype, a->size);
    bool flows = tg_dtype_is_float(a->dtype) && tg_dtype_is_float(dtype);
    int none = 0;
    if (flows && !tg_op_record(t, &to_op, out, &a, 1, &none)) return NULL;
    return tg_op_done(t, &to_op, out);
}

bool tg_half_widen(tg_tape *t, const char *op, tg_tensor **const *x, int n, tg_dtype half)
{
    for (int k = 0; k < n; k++) {
        if (!*x[k] || (*x[k])->magic != TG_TENSOR_LIVE || (*x[k])->dtype != half) continue;
        if (!tg_inputs_check_dtype(t, &(tg_op){.name = op}, half, x[k], 1, 1)) return false;
        if (!(*x[k] = tg_to(t, *x[k], TG_F32))) return false;
    }
    return true;
}

tg_tensor **tg_half_widen_all(tg_tape *t, const char *op, tg_tensor *const *xs, int n)
{
    tg_tensor **w = tg_arena_alloc(t, (size_t)n * sizeof *w, op);
    for (int i = 0; w && i < n; i++)
        if (!(w[i] = tg_to(t, xs[i], TG_F32))) return NULL;
    return w;
}

tg_tensor *tg_half_round(tg_tape *t, tg_tensor *r, tg_dtype half)
{
    return r && r->dtype == TG_F32 ? tg_to(t, r, half) : r;
}
