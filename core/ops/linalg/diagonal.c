/* tapegrad: batched diagonals (torch.diagonal, torch.diag_embed), each one
 * map (core/ops/shape/move.c), so each backward is the map read backwards:
 *   diagonal(a, k, d1, d2)    out[.., j] = a[.., i_d1 = j + max(-k, 0), .., i_d2 = j + max(k, 0), ..]
 *   diag_embed(a, k, d1, d2)  out[.., i_d1 = j + max(-k, 0), .., i_d2 = j + max(k, 0), ..] = a[.., j], 0 elsewhere
 * diagonal drops d1 and d2 and appends the diagonal as the last dim;
 * diag_embed is its inverse: a's last dim becomes d1 and d2 (of size
 * n + |k|) of out, a's other dims the rest in order.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

TG_OP(diagonal_op, "tg_diagonal", tg_map_op_backward, tg_map_ctx);
TG_OP(diag_embed_op, "tg_diag_embed", tg_map_op_backward, tg_map_ctx);

/* d1, d2 resolved against n dims of a into *r1, *r2; false unless distinct. */
static bool two_dims(tg_tape *t, const char *op, const tg_tensor *a, int n, int d1, int d2, int *r1, int *r2)
{
    if (!tg_dim_resolve(t, op, a, d1, n, r1) || !tg_dim_resolve(t, op, a, d2, n, r2)) return false;
    if (*r1 == *r2) {
        char sa[TG_SHAPE_STR];
        return tg_fail(t, "%s: dim1 %d and dim2 %d are the same dim of a %s", op, d1, d2, tg_shape_str(a, sa)), false;
    }
    return true;
}

/* The diagonal's length in an [r, c] plane and its first element's offset
 * (strides s1, s2 of the plane's dims). */
static int diag_len(long long r, long long c, long long k, ptrdiff_t s1, ptrdiff_t s2, ptrdiff_t *off)
{
    long long len = k >= 0 ? (r < c - k ? r : c - k) : (r + k < c ? r + k : c);
    *off = len > 0 ? (k >= 0 ? (ptrdiff_t)k * s2 : (ptrdiff_t)-k * s1) : 0;
    return len > 0 ? (int)len : 0;
}

tg_tensor *tg_diagonal(tg_tape *t, tg_tensor *a, int offset, int dim1, int dim2)
{
    TG_DISPATCH(tg_diagonal, a, (t, a, offset, dim1, dim2));
    const char *op = diagonal_op.name;
    if (!tg_inputs_check_dtype(t, &diagonal_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    char sa[TG_SHAPE_STR];
    if (a->ndim < 2) return tg_fail(t, "%s: a %s has fewer than 2 dims", op, tg_shape_str(a, sa));
    int d1, d2;
    if (!two_dims(t, op, a, a->ndim, dim1, dim2, &d1, &d2)) return NULL;
    ptrdiff_t st[TG_MAX_DIMS], in_st[TG_MAX_DIMS], in_off;
    tg_strides(a->ndim, a->shape, st);
    int shape[TG_MAX_DIMS], nd = 0;  /* out [a's other dims.., len] */
    for (int k = 0; k < a->ndim; k++)
        if (k != d1 && k != d2) in_st[nd] = st[k], shape[nd++] = a->shape[k];
    shape[nd] = diag_len(a->shape[d1], a->shape[d2], offset, st[d1], st[d2], &in_off);
    in_st[nd++] = st[d1] + st[d2];
    tg_map_ctx c = {.n_maps = 1};
    tg_map_of(&c.maps[0], nd, shape);
    memcpy(c.maps[0].in_st, in_st, (size_t)nd * sizeof *in_st);
    c.maps[0].in_off = in_off;
    return tg_map_op(t, &diagonal_op, a, nd, shape, &c, NULL);
}

tg_tensor *tg_diag_embed(tg_tape *t, tg_tensor *a, int offset, int dim1, int dim2)
{
    TG_DISPATCH(tg_diag_embed, a, (t, a, offset, dim1, dim2));
    const char *op = diag_embed_op.name;
    if (!tg_inputs_check_dtype(t, &diag_embed_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    char sa[TG_SHAPE_STR];
    if (a->ndim < 1 || a->ndim >= TG_MAX_DIMS)
        return tg_fail(t, "%s: a %s must have 1 to %d dims", op, tg_shape_str(a, sa), TG_MAX_DIMS - 1);
    int d1, d2, nd = a->ndim + 1;
    if (!two_dims(t, op, a, nd, dim1, dim2, &d1, &d2)) return NULL;
    long long n = (long long)a->shape[a->ndim - 1] + (offset < 0 ? -(long long)offset : offset);
    if (n > INT32_MAX) return tg_fail(t, "%s: a %s with offset %d: the size overflows", op, tg_shape_str(a, sa), offset);
    int shape[TG_MAX_DIMS];  /* out: a's other dims in order, n at d1 and d2 */
    for (int k = 0, j = 0; k < nd; k++) shape[k] = k == d1 || k == d2 ? (int)n : a->shape[j++];
    size_t size;
    if (!tg_shape_size(nd, shape, &size)) return tg_fail(t, "%s: a %s with offset %d: the size overflows", op,
                                                         tg_shape_str(a, sa), offset);
    ptrdiff_t st[TG_MAX_DIMS], out_off;
    tg_strides(nd, shape, st);
    tg_map_ctx c = {.n_maps = 1};
    tg_map *m = &c.maps[0];
    tg_map_of(m, a->ndim, a->shape);  /* walks a in order */
    for (int k = 0, j = 0; k < nd; k++)
        if (k != d1 && k != d2) m->out_st[j++] = st[k];
    diag_len(n, n, offset, st[d1], st[d2], &out_off);
    m->out_st[a->ndim - 1] = st[d1] + st[d2];
    m->out_off = a->shape[a->ndim - 1] ? out_off : 0;
    double zero = 0;
    return tg_map_op(t, &diag_embed_op, a, nd, shape, &c, &zero);
}
