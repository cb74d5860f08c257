/* tapegrad: selecting elements by a mask. With g = d out:
 *   masked_select(a, m)  out[k] = a[i_k], i_k the k-th element (row-major) where m   d a[i_k] += g[k]
 *   nonzero(a)           out[k, :] = the index of the k-th nonzero element of a         (no grad)
 * m is a bool tensor (PyTorch refuses others too). a and m broadcast as
 * tg_add (PyTorch); a stretched a goes through tg_expand,
 * whose backward sums the stretched dims. out's length depends on the
 * values, so the op saves the selected offsets (the arena).
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

typedef struct select_ctx {
    const size_t *off;  /* [n] arena: a's element of out[k] */
    size_t n;
} select_ctx;

/* out [n] <- a: d a[off[k]] += g[k] */
TG_BACKWARD(masked_select_backward, select_ctx)
{
    const select_ctx *c = ctx;
    tg_real *da = tg_grad(t, in[0]);
    if (!da) return;
    for (size_t k = 0; k < c->n; k++) da[c->off[k]] += out->grad[k];
}

TG_OP(masked_select_op, "tg_masked_select", masked_select_backward, select_ctx);
TG_OP_NO_GRAD(nonzero_op, "tg_nonzero");

/* The broadcast shape of a and b into shape[*nd] (aligned from the last dim);
 * false when they do not broadcast. */
static bool broadcast_shape(const tg_tensor *a, const tg_tensor *b, int *nd, int *shape)
{
    *nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int k = 0; k < *nd; k++) {
        int ka = k - (*nd - a->ndim), kb = k - (*nd - b->ndim);
        int sa = ka >= 0 ? a->shape[ka] : 1, sb = kb >= 0 ? b->shape[kb] : 1;
        if (sa != sb && sa != 1 && sb != 1) return false;
        shape[k] = sa == 1 ? sb : sa;
    }
    return true;
}

tg_tensor *tg_masked_select(tg_tape *t, tg_tensor *a, tg_tensor *mask)
{
    TG_DISPATCH(tg_masked_select, a, (t, a, mask));
    const char *op = masked_select_op.name;
    if (!tg_inputs_check(t, &masked_select_op, &a, 1, 1)) return NULL;
    if (!mask) return tg_fail_null(t, op);
    if (!tg_bool_mask(t, &masked_select_op, "mask", mask) ||
        !tg_inputs_check_dtype(t, &masked_select_op, TG_BOOL, (tg_tensor *[]){NULL, mask}, 2, 0))
        return NULL;
    const uint8_t *m = (const uint8_t *)mask->data;
    int nd, shape[TG_MAX_DIMS];
    if (!broadcast_shape(a, mask, &nd, shape)) {
        char sa[TG_SHAPE_STR], sm[TG_SHAPE_STR];
        return tg_fail(t, "%s: mask %s does not broadcast with a %s", op, tg_shape_str(mask, sm),
                       tg_shape_str(a, sa));
    }
    size_t size;
    tg_shape_size(nd, shape, &size);
    tg_tensor *x = a;
    if (a->ndim != nd || size != a->size || (nd && memcmp(a->shape, shape, (size_t)nd * sizeof *shape)))
        if (!(x = tg_expand(t, a, nd, shape))) return NULL;
    /* mask read in the broadcast shape: stride 0 on its stretched dims */
    ptrdiff_t mst[TG_MAX_DIMS] = {0}, st[TG_MAX_DIMS];
    tg_strides(mask->ndim, mask->shape, st);
    for (int k = 0; k < mask->ndim; k++)
        if (mask->shape[k] != 1) mst[k + nd - mask->ndim] = st[k];
    size_t *off = tg_arena_alloc(t, (size ? size : 1) * sizeof *off, op);
    if (!off) return NULL;
    size_t n = 0, mo = 0;
    int i_k[TG_MAX_DIMS] = {0};
    for (size_t i = 0; i < size; i++) {
        if (m[mo]) off[n++] = i;
        for (int k = nd - 1; k >= 0; k--) {  /* next i, row-major */
            mo += (size_t)mst[k];
            if (++i_k[k] < shape[k]) break;
            mo -= (size_t)mst[k] * (size_t)shape[k];
            i_k[k] = 0;
        }
    }
    if (n > INT32_MAX) return tg_fail(t, "%s: %zu elements selected, more than a dim holds", op, n);
    tg_tensor *out = tg_new(t, &masked_select_op, 1, (int[]){(int)n});
    if (!out) return NULL;
    for (size_t k = 0; k < n; k++) out->data[k] = x->data[off[k]];
    if (!tg_op_record(t, &masked_select_op, out, &x, 1, &(select_ctx){off, n})) return NULL;
    return tg_op_done(t, &masked_select_op, out);
}

tg_tensor *tg_nonzero(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_nonzero, a, (t, a));
    const char *op = nonzero_op.name;
    if (!tg_inputs_check_dtype(t, &nonzero_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < a->size; i++) n += tg_dtype_load(a->dtype, a->data, i) != 0;
    if (n > INT32_MAX) return tg_fail(t, "%s: %zu nonzero elements, more than a dim holds", op, n);
    tg_tensor *out = tg_new_op(t, &nonzero_op, TG_I64, 2, (int[]){(int)n, a->ndim});
    if (!out) return NULL;
    int64_t *o = tg_data(out, TG_I64);
    int i_k[TG_MAX_DIMS] = {0};
    for (size_t i = 0; i < a->size; i++) {
        if (tg_dtype_load(a->dtype, a->data, i) != 0)
            for (int k = 0; k < a->ndim; k++) *o++ = i_k[k];
        for (int k = a->ndim - 1; k >= 0; k--) {
            if (++i_k[k] < a->shape[k]) break;
            i_k[k] = 0;
        }
    }
    return tg_op_done(t, &nonzero_op, out);
}
