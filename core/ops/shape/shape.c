/* tapegrad: shape ops.
 *
 * tg_reshape, tg_rows_view, tg_squeeze and tg_unsqueeze are VIEWS: the
 * result shares data and grad with its input (no copy, no node); tg_detach
 * shares data only. Every other op here writes a new
 * contiguous tensor and
 * records a node whose backward moves the output grad back to where each
 * element came from:
 *   permute       d a = permute(d out, inverse perm) (a map, core/ops/shape/move.c)
 *   split_heads   d x = merge_heads(d out)      merge_heads  d x = split_heads(d out)
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

/* "{2,0,1}" (n ints) into buf (TG_SHAPE_STR bytes); returns buf. */
static const char *ints_str(const int *v, int n, char *buf)
{
    int k = snprintf(buf, TG_SHAPE_STR, "{");
    for (int i = 0; i < n && k < TG_SHAPE_STR; i++)
        k += snprintf(buf + k, (size_t)(TG_SHAPE_STR - k), i ? ",%d" : "%d", v[i]);
    if (k < TG_SHAPE_STR) snprintf(buf + k, (size_t)(TG_SHAPE_STR - k), "}");
    return buf;
}

/* ---- reshape (view) -------------------------------------------------------- */

TG_OP_NO_GRAD(reshape_op, "tg_reshape");
TG_OP_NO_GRAD(rows_view_op, "tg_rows_view");
TG_OP_NO_GRAD(detach_op, "tg_detach");
TG_OP_NO_GRAD(unsqueeze_op, "tg_unsqueeze");
TG_OP_NO_GRAD(squeeze_op, "tg_squeeze");

/* Fills out[ndim] from shape, inferring one -1 dim; false with an error. */
static bool reshape_dims(tg_tape *t, const tg_tensor *a, int ndim, const int *shape, int *out)
{
    char sa[TG_SHAPE_STR], ss[TG_SHAPE_STR];
    if (ndim > 0 && !shape) return tg_op_fail(t, &reshape_op, "the shape is NULL (a %s)", tg_shape_str(a, sa)), false;
    if (ndim < 0 || ndim > TG_MAX_DIMS) {
        tg_op_fail(t, &reshape_op, "target must have 0..%d dims, got %d dims (a %s)", TG_MAX_DIMS, ndim,
                   tg_shape_str(a, sa));
        return false;
    }
    int infer = -1;
    size_t known = 1;  /* product of the given dims, saturated at SIZE_MAX */
    for (int i = 0; i < ndim; i++) {
        bool bad = shape[i] < -1 || (shape[i] == -1 && infer >= 0);
        if (bad) {
            tg_op_fail(t, &reshape_op, "bad target shape %s for a %s (one -1 at most, other dims >= 0)",
                       ints_str(shape, ndim, ss), tg_shape_str(a, sa));
            return false;
        }
        if (shape[i] == -1) {
            infer = i;
            continue;
        }
        out[i] = shape[i];
        known = shape[i] && known > SIZE_MAX / (size_t)shape[i] ? SIZE_MAX : known * (size_t)shape[i];
    }
    if (infer >= 0) {
        if (known == 0 || a->size % known != 0 || a->size / known > (size_t)INT_MAX) {
            tg_op_fail(t, &reshape_op, "cannot infer the -1 in %s from a %s (%zu elements)",
                       ints_str(shape, ndim, ss), tg_shape_str(a, sa), a->size);
            return false;
        }
        out[infer] = (int)(a->size / known);
    }
    size_t size;
    if (!tg_shape_size(ndim, out, &size) || size != a->size) {
        tg_op_fail(t, &reshape_op, "cannot reshape a %s (%zu elements) into %s", tg_shape_str(a, sa), a->size,
                   ints_str(shape, ndim, ss));
        return false;
    }
    return true;
}

/* A view of a's elements [off, off + size) with the given shape: same data,
 * same grad, no node. Whatever a later op accumulates into the view's grad
 * lands in a's (and flows on through a's own node): the view shares a's grad
 * buffer when a has one; else, when a needs a grad on a recording tape, the
 * view remembers its base and tg_grad makes a's grad on first need, so a
 * forward of views allocates no grads. The view's requires_grad is a's. On a
 * tape that is not recording, the view shares a's grad only if it exists. */
static tg_tensor *view(tg_tape *t, const tg_op *op, tg_tensor *a, int ndim, const int *shape, size_t off)
{
    tg_tensor *v = tg_new_header(t, op->name);
    if (!v) return NULL;
    size_t size;
    tg_shape_size(ndim, shape, &size);
    tg_tensor_set_shape(v, ndim, shape, size);
    v->dtype = a->dtype;
    v->data = (tg_real *)(void *)((unsigned char *)a->data + off * tg_dtype_size(a->dtype));
    v->grad = a->grad ? a->grad + off : NULL;  /* only a float a has one: of this copy's type */
    if (!a->grad && a->requires_grad && tg_tape_recording(t)) {
        v->view_of = a->view_of ? a->view_of : a;  /* the base, never a view */
        v->view_off = (a->view_of ? a->view_off : 0) + off;
    }
    v->requires_grad = a->requires_grad;
    return tg_op_done(t, op, v);
}

tg_tensor *tg_reshape(tg_tape *t, tg_tensor *a, int ndim, const int *shape)
{
    TG_DISPATCH(tg_reshape, a, (t, a, ndim, shape));
    if (!tg_inputs_check_dtype(t, &reshape_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    int dims[TG_MAX_DIMS] = {0};
    if (!reshape_dims(t, a, ndim, shape, dims)) return NULL;
    return view(t, &reshape_op, a, ndim, dims, 0);
}

tg_tensor *tg_rows_view(tg_tape *t, tg_tensor *a, int start, int len)
{
    TG_DISPATCH(tg_rows_view, a, (t, a, start, len));
    if (!tg_inputs_check_dtype(t, &rows_view_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    char sa[TG_SHAPE_STR];
    if (a->ndim < 1)
        return tg_op_fail(t, &rows_view_op, "a %s has no first dim", tg_shape_str(a, sa));
    if (start < 0 || len < 0 || start > a->shape[0] || len > a->shape[0] - start)
        return tg_op_fail(t, &rows_view_op, "rows start %d, len %d do not fit the first dim %d of a %s", start,
                          len, a->shape[0], tg_shape_str(a, sa));
    int shape[TG_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[0] = len;
    size_t row = 1;  /* elements per row */
    for (int i = 1; i < a->ndim; i++) row *= (size_t)a->shape[i];
    return view(t, &rows_view_op, a, a->ndim, shape, (size_t)start * row);
}

/* a's data under a new header that requires no grad and has none: no node,
 * nothing flows back through it (PyTorch's detach shares storage too). */
tg_tensor *tg_detach(tg_tape *t, tg_tensor *a)
{
    TG_DISPATCH(tg_detach, a, (t, a));
    if (!tg_inputs_check_dtype(t, &detach_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    tg_tensor *v = tg_new_header(t, detach_op.name);
    if (!v) return NULL;
    tg_tensor_set_shape(v, a->ndim, a->shape, a->size);
    v->dtype = a->dtype;
    v->data = a->data;
    return v;
}

/* a with a size-1 dim inserted at dim (0 .. ndim; negative counts from the
 * end of ndim + 1): a view. */
tg_tensor *tg_unsqueeze(tg_tape *t, tg_tensor *a, int dim)
{
    TG_DISPATCH(tg_unsqueeze, a, (t, a, dim));
    if (!tg_inputs_check_dtype(t, &unsqueeze_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    char sa[TG_SHAPE_STR];
    if (a->ndim == TG_MAX_DIMS)
        return tg_op_fail(t, &unsqueeze_op, "a %s already has %d dims, the most a tensor has", tg_shape_str(a, sa),
                          TG_MAX_DIMS);
    int d, shape[TG_MAX_DIMS];
    if (!tg_dim_resolve(t, unsqueeze_op.name, a, dim, a->ndim + 1, &d)) return NULL;
    for (int k = 0, j = 0; k <= a->ndim; k++) shape[k] = k == d ? 1 : a->shape[j++];
    return view(t, &unsqueeze_op, a, a->ndim + 1, shape, 0);
}

/* a without dim `dim` when its size is 1, else a view of a itself (PyTorch's
 * squeeze(dim)); TG_SQUEEZE_ALL drops every size-1 dim. A view. */
tg_tensor *tg_squeeze(tg_tape *t, tg_tensor *a, int dim)
{
    TG_DISPATCH(tg_squeeze, a, (t, a, dim));
    if (!tg_inputs_check_dtype(t, &squeeze_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    int d = -1, nd = 0, shape[TG_MAX_DIMS];
    if (dim != TG_SQUEEZE_ALL && !tg_dim_resolve(t, squeeze_op.name, a, dim, a->ndim ? a->ndim : 1, &d)) return NULL;
    for (int k = 0; k < a->ndim; k++)
        if (a->shape[k] != 1 || (dim != TG_SQUEEZE_ALL && k != d)) shape[nd++] = a->shape[k];
    return view(t, &squeeze_op, a, nd, shape, 0);
}

/* ---- permute / transpose ----------------------------------------------------- */

/* out dim k is a's dim perm[k]: one map that walks out in order and reads a
 * through its strides in perm's order; d a = permute(d out, inverse perm). */
TG_OP(permute_rec, "tg_permute", tg_map_op_backward, tg_map_ctx);
TG_OP(transpose_rec, "tg_transpose", tg_map_op_backward, tg_map_ctx);

/* Records as op; perm is resolved (0 .. ndim-1). */
static tg_tensor *permute_op(tg_tape *t, const tg_op *op, tg_tensor *a, const int *perm)
{
    int out_shape[TG_MAX_DIMS];
    ptrdiff_t st[TG_MAX_DIMS];
    tg_strides(a->ndim, a->shape, st);
    tg_map_ctx c = {.n_maps = 1, .maps[0].nd = a->ndim};
    for (int k = 0; k < a->ndim; k++) {
        out_shape[k] = c.maps[0].n[k] = a->shape[perm[k]];
        c.maps[0].in_st[k] = st[perm[k]];
    }
    tg_strides(a->ndim, out_shape, c.maps[0].out_st);
    return tg_map_op(t, op, a, a->ndim, out_shape, &c, NULL);
}

tg_tensor *tg_permute(tg_tape *t, tg_tensor *a, const int *perm, int n)
{
    TG_DISPATCH(tg_permute, a, (t, a, perm, n));
    if (!tg_inputs_check_dtype(t, &permute_rec, tg_move_dtype(a), &a, 1, 1)) return NULL;
    char sa[TG_SHAPE_STR], sp[TG_SHAPE_STR];
    if (n != a->ndim)
        return tg_op_fail(t, &permute_rec, "perm has %d entries for the %d dims of a %s", n, a->ndim, tg_shape_str(a, sa));
    if (a->ndim > 0 && !perm)
        return tg_op_fail(t, &permute_rec, "perm is NULL for a %s", tg_shape_str(a, sa));
    bool seen[TG_MAX_DIMS] = {false};
    int p[TG_MAX_DIMS];
    for (int k = 0; k < a->ndim; k++) {
        p[k] = perm[k] < 0 ? perm[k] + a->ndim : perm[k];
        if (p[k] < 0 || p[k] >= a->ndim || seen[p[k]])
            return tg_op_fail(t, &permute_rec, "perm %s is not a permutation of the %d dims of a %s (dims %d to %d)",
                              ints_str(perm, a->ndim, sp), a->ndim, tg_shape_str(a, sa), -a->ndim, a->ndim - 1);
        seen[p[k]] = true;
    }
    return permute_op(t, &permute_rec, a, p);
}

/* Swaps dims d0 and d1; negative dims count from the end (PyTorch style). */
tg_tensor *tg_transpose(tg_tape *t, tg_tensor *a, int d0, int d1)
{
    TG_DISPATCH(tg_transpose, a, (t, a, d0, d1));
    if (!tg_inputs_check_dtype(t, &transpose_rec, tg_move_dtype(a), &a, 1, 1)) return NULL;
    char sa[TG_SHAPE_STR];
    int e0 = d0 < 0 ? d0 + a->ndim : d0, e1 = d1 < 0 ? d1 + a->ndim : d1;
    if (e0 < 0 || e0 >= a->ndim || e1 < 0 || e1 >= a->ndim)
        return tg_op_fail(t, &transpose_rec, "dims (%d, %d) out of range for a %s", d0, d1, tg_shape_str(a, sa));
    int perm[TG_MAX_DIMS];
    for (int k = 0; k < TG_MAX_DIMS; k++) perm[k] = k;
    perm[e0] = e1;
    perm[e1] = e0;
    return permute_op(t, &transpose_rec, a, perm);
}

/* ---- split / merge heads ----------------------------------------------------------- */

/* [B,n1,n2,dk] -> [B,n2,n1,dk], the middle dims swapped; adds into dst when
 * acc. Splitting heads is n1 = L, n2 = H ([B,L,H*dk] -> [B,H,L,dk]);
 * merging them n1 = H, n2 = L. */
static void heads_swap(const tg_real *src, tg_real *dst, int B, int n1, int n2, int dk, bool acc)
{
    for (int b = 0; b < B; b++)
        for (int j2 = 0; j2 < n2; j2++)
            for (int j1 = 0; j1 < n1; j1++) {
                const tg_real *s = src + (((size_t)b * n1 + j1) * n2 + j2) * dk;
                tg_real *d = dst + (((size_t)b * n2 + j2) * n1 + j1) * dk;
                if (acc)
                    for (int j = 0; j < dk; j++) d[j] += s[j];
                else
                    memcpy(d, s, (size_t)dk * sizeof *d);
            }
}

/* out [B,H,L,dk] <- x [B,L,H*dk]: d x += merge_heads(d out). */
static void split_heads_backward(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx)
{
    (void)ctx;
    tg_real *dx = tg_grad(t, in[0]);
    if (dx) heads_swap(out->grad, dx, out->shape[0], out->shape[1], out->shape[2], out->shape[3], true);
}

/* out [B,L,H*dk] <- x [B,H,L,dk]: d x += split_heads(d out). */
static void merge_heads_backward(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx)
{
    (void)ctx;
    const tg_tensor *x = in[0];
    tg_real *dx = tg_grad(t, in[0]);
    if (dx) heads_swap(out->grad, dx, x->shape[0], x->shape[2], x->shape[1], x->shape[3], true);
}

TG_OP_NO_CTX(split_heads_op, "tg_split_heads", split_heads_backward);
TG_OP_NO_CTX(merge_heads_op, "tg_merge_heads", merge_heads_backward);

tg_tensor *tg_split_heads(tg_tape *t, tg_tensor *x, int n_heads)
{
    TG_DISPATCH(tg_split_heads, x, (t, x, n_heads));
    if (!tg_inputs_check(t, &split_heads_op, &x, 1, 1)) return NULL;
    char sx[TG_SHAPE_STR];
    if (x->ndim != 3)
        return tg_op_fail(t, &split_heads_op, "x must be [B, L, H*dk], got %s", tg_shape_str(x, sx));
    if (n_heads <= 0 || x->shape[2] % n_heads != 0)
        return tg_op_fail(t, &split_heads_op, "last dim of x %s is not divisible into %d heads",
                          tg_shape_str(x, sx), n_heads);
    int B = x->shape[0], L = x->shape[1], dk = x->shape[2] / n_heads;
    tg_tensor *out = tg_new(t, &split_heads_op, 4, (int[]){B, n_heads, L, dk});
    if (!out) return NULL;
    heads_swap(x->data, out->data, B, L, n_heads, dk, false);
    if (!tg_op_record(t, &split_heads_op, out, &x, 1, NULL)) return NULL;
    return tg_op_done(t, &split_heads_op, out);
}

tg_tensor *tg_merge_heads(tg_tape *t, tg_tensor *x)
{
    TG_DISPATCH(tg_merge_heads, x, (t, x));
    if (!tg_inputs_check(t, &merge_heads_op, &x, 1, 1)) return NULL;
    char sx[TG_SHAPE_STR];
    if (x->ndim != 4)
        return tg_op_fail(t, &merge_heads_op, "x must be [B, H, L, dk], got %s", tg_shape_str(x, sx));
    int B = x->shape[0], H = x->shape[1], L = x->shape[2], dk = x->shape[3];
    if ((long long)H * dk > INT_MAX)
        return tg_op_fail(t, &merge_heads_op, "H*dk overflows an int for x %s", tg_shape_str(x, sx));
    tg_tensor *out = tg_new(t, &merge_heads_op, 3, (int[]){B, L, H * dk});
    if (!out) return NULL;
    heads_swap(x->data, out->data, B, H, L, dk, false);
    if (!tg_op_record(t, &merge_heads_op, out, &x, 1, NULL)) return NULL;
    return tg_op_done(t, &merge_heads_op, out);
}
