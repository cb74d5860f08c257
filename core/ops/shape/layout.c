/* tapegrad: ops that lay a tensor's elements out anew, each one or two maps
 * (core/ops/shape/move.c), so each backward is the map read backwards:
 *   flip    out[.., j, ..] = a[.., n-1-j, ..]           d a[.., n-1-j, ..] += d out[.., j, ..]
 *   roll    out[.., j, ..] = a[.., (j - s) mod n, ..]   d a[.., (j - s) mod n, ..] += d out[.., j, ..]
 *   pad     out[.., lo + j, ..] = a[.., j, ..], value elsewhere; d a[.., j, ..] += d out[.., lo + j, ..]
 *   repeat  out[.., r n + j, ..] = a[.., j, ..]         d a[.., j, ..] += sum_r d out[.., r n + j, ..]
 *   expand  out[.., j, ..] = a[.., 0, ..] on a stretched dim; d a[.., 0, ..] += sum_j d out[.., j, ..]
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

TG_OP(flip_op, "tg_flip", tg_map_op_backward, tg_map_ctx);
TG_OP(roll_op, "tg_roll", tg_map_op_backward, tg_map_ctx);
TG_OP(pad_op, "tg_pad", tg_map_op_backward, tg_map_ctx);
TG_OP(repeat_op, "tg_repeat", tg_map_op_backward, tg_map_ctx);
TG_OP(expand_op, "tg_expand", tg_map_op_backward, tg_map_ctx);

tg_tensor *tg_flip(tg_tape *t, tg_tensor *a, const int *dims, int n)
{
    TG_DISPATCH(tg_flip, a, (t, a, dims, n));
    const char *op = flip_op.name;
    if (!tg_inputs_check_dtype(t, &flip_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    char sa[TG_SHAPE_STR];
    if (n < 0 || n > a->ndim || (n > 0 && !dims))
        return tg_fail(t, "%s: %d dims (dims %s) for a %s", op, n, dims ? "given" : "NULL", tg_shape_str(a, sa));
    tg_map_ctx c = {.n_maps = 1};
    tg_map *m = &c.maps[0];
    tg_map_of(m, a->ndim, a->shape);
    bool seen[TG_MAX_DIMS] = {false};
    for (int i = 0; i < n; i++) {
        int d;
        if (!tg_dim_resolve(t, op, a, dims[i], a->ndim, &d)) return NULL;
        if (seen[d]) return tg_fail(t, "%s: dim %d appears twice in dims (a %s)", op, dims[i], tg_shape_str(a, sa));
        seen[d] = true;
        if (a->shape[d] > 0) m->in_off += (ptrdiff_t)(a->shape[d] - 1) * m->in_st[d];
        m->in_st[d] = -m->in_st[d];
    }
    return tg_map_op(t, &flip_op, a, a->ndim, a->shape, &c, NULL);
}

tg_tensor *tg_roll(tg_tape *t, tg_tensor *a, int shift, int dim)
{
    TG_DISPATCH(tg_roll, a, (t, a, shift, dim));
    const char *op = roll_op.name;
    if (!tg_inputs_check_dtype(t, &roll_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    /* a 0-d tensor rolls as [1]; TG_ROLL_FLAT rolls a read as one dim of a->size */
    int d = 0, nd = 1, flat[1] = {a->size > INT32_MAX ? 0 : (int)a->size};
    const int *shape = flat;
    if (dim == TG_ROLL_FLAT) {
        char sa[TG_SHAPE_STR];
        if (a->size > INT32_MAX) return tg_fail(t, "%s: a %s is too large to roll flattened", op, tg_shape_str(a, sa));
    } else {
        if (!tg_dim_resolve(t, op, a, dim, a->ndim ? a->ndim : 1, &d)) return NULL;
        nd = a->ndim ? a->ndim : 1;
        shape = a->ndim ? a->shape : flat;
    }
    int n = shape[d], s = n ? (int)(((long long)shift % n + n) % n) : 0;
    /* out[s:] = a[:n-s], out[:s] = a[n-s:] along d */
    tg_map_ctx c = {.n_maps = 2};
    for (int k = 0; k < 2; k++) tg_map_of(&c.maps[k], nd, shape);
    c.maps[0].n[d] = n - s;
    c.maps[0].out_off = (ptrdiff_t)s * c.maps[0].out_st[d];
    c.maps[1].n[d] = s;
    c.maps[1].in_off = (ptrdiff_t)(n - s) * c.maps[1].in_st[d];
    return tg_map_op(t, &roll_op, a, a->ndim, a->shape, &c, NULL);
}

tg_tensor *tg_pad(tg_tape *t, tg_tensor *a, const int *pads, int n_pads, double value)
{
    TG_DISPATCH(tg_pad, a, (t, a, pads, n_pads, value));
    const char *op = pad_op.name;
    if (!tg_inputs_check_dtype(t, &pad_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    if (n_pads && !pads) return tg_fail(t, "%s: pads is NULL", pad_op.name);
    char sa[TG_SHAPE_STR];
    if (n_pads < 0 || n_pads % 2 || n_pads > 2 * a->ndim || (n_pads && !pads))
        return tg_fail(t, "%s: %d pad sizes for a %s (an even number, at most 2 per dim)", op, n_pads,
                       tg_shape_str(a, sa));
    int shape[TG_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    tg_map_ctx c = {.n_maps = 1};
    tg_map *m = &c.maps[0];
    tg_map_of(m, a->ndim, a->shape);
    /* pads[2i], pads[2i+1]: before and after dim ndim-1-i (PyTorch's F.pad order); negative crops */
    for (int i = 0; i < n_pads / 2; i++) {
        int d = a->ndim - 1 - i, lo = pads[2 * i], hi = pads[2 * i + 1];
        long long size = (long long)a->shape[d] + lo + hi;
        if (size < 0 || size > INT32_MAX)
            return tg_fail(t, "%s: pads (%d, %d) give dim %d of a %s size %lld", op, lo, hi, d, tg_shape_str(a, sa),
                           size);
        shape[d] = (int)size;
        int cut_lo = lo < 0 ? -lo : 0, cut_hi = hi < 0 ? -hi : 0, kept = a->shape[d] - cut_lo - cut_hi;
        m->n[d] = kept > 0 ? kept : 0;
        m->in_off += (ptrdiff_t)cut_lo * m->in_st[d];
    }
    tg_strides(a->ndim, shape, m->out_st);
    for (int i = 0; i < n_pads / 2; i++) {
        int d = a->ndim - 1 - i;
        if (pads[2 * i] > 0) m->out_off += (ptrdiff_t)pads[2 * i] * m->out_st[d];
    }
    return tg_map_op(t, &pad_op, a, a->ndim, shape, &c, &value);
}

tg_tensor *tg_repeat(tg_tape *t, tg_tensor *a, const int *reps, int n)
{
    TG_DISPATCH(tg_repeat, a, (t, a, reps, n));
    const char *op = repeat_op.name;
    if (!tg_inputs_check_dtype(t, &repeat_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    if (n && !reps) return tg_fail(t, "%s: reps is NULL", repeat_op.name);
    char sa[TG_SHAPE_STR];
    if (n < a->ndim || n > TG_MAX_DIMS || (n && !reps))
        return tg_fail(t, "%s: %d repeats for a %s (at least one per dim, at most %d)", op, n, tg_shape_str(a, sa),
                       TG_MAX_DIMS);
    int s[TG_MAX_DIMS], shape[TG_MAX_DIMS];  /* a padded in front to n dims */
    for (int k = 0; k < n; k++) {
        s[k] = k < n - a->ndim ? 1 : a->shape[k - (n - a->ndim)];
        long long o = (long long)reps[k] * s[k];
        if (reps[k] < 0 || o > INT32_MAX)
            return tg_fail(t, "%s: repeat %d of dim %d of a %s (repeats must be >= 0, sizes fit an int)", op,
                           reps[k], k, tg_shape_str(a, sa));
        shape[k] = (int)o;
    }
    /* walk [reps_0, s_0, reps_1, s_1, ..]: a copy per repeat, reading a again */
    ptrdiff_t ist[TG_MAX_DIMS], ost[TG_MAX_DIMS];
    tg_strides(n, s, ist);
    tg_strides(n, shape, ost);
    tg_map_ctx c = {.n_maps = 1, .maps[0].nd = 2 * n};
    tg_map *m = &c.maps[0];
    for (int k = 0; k < n; k++) {
        m->n[2 * k] = reps[k];
        m->n[2 * k + 1] = s[k];
        m->in_st[2 * k] = 0;
        m->in_st[2 * k + 1] = ist[k];
        m->out_st[2 * k] = (ptrdiff_t)s[k] * ost[k];
        m->out_st[2 * k + 1] = ost[k];
    }
    return tg_map_op(t, &repeat_op, a, n, shape, &c, NULL);
}

tg_tensor *tg_expand(tg_tape *t, tg_tensor *a, int ndim, const int *shape)
{
    TG_DISPATCH(tg_expand, a, (t, a, ndim, shape));
    const char *op = expand_op.name;
    if (!tg_inputs_check_dtype(t, &expand_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    if (ndim && !shape) return tg_fail(t, "%s: the shape is NULL", expand_op.name);
    char sa[TG_SHAPE_STR];
    if (ndim < a->ndim || ndim > TG_MAX_DIMS || (ndim && !shape))
        return tg_fail(t, "%s: a %s cannot expand to %d dims (%d to %d)", op, tg_shape_str(a, sa), ndim, a->ndim,
                       TG_MAX_DIMS);
    int out[TG_MAX_DIMS];
    ptrdiff_t st[TG_MAX_DIMS];
    tg_strides(a->ndim, a->shape, st);
    tg_map_ctx c = {.n_maps = 1, .maps[0].nd = ndim};
    tg_map *m = &c.maps[0];
    for (int k = 0; k < ndim; k++) {
        int j = k - (ndim - a->ndim), have = j >= 0 ? a->shape[j] : 1;  /* aligned from the last dim */
        int want = shape[k] == -1 && j >= 0 ? have : shape[k];
        if (want < 0 || (have != 1 && have != want))
            return tg_fail(t, "%s: a %s cannot expand to size %d at dim %d (only size-1 dims stretch; -1 keeps "
                              "a dim of a)", op, tg_shape_str(a, sa), shape[k], k);
        out[k] = m->n[k] = want;
        m->in_st[k] = j >= 0 && have == want ? st[j] : 0;
    }
    size_t size;
    if (!tg_shape_size(ndim, out, &size))
        return tg_fail(t, "%s: expanding a %s: the size overflows", op, tg_shape_str(a, sa));
    tg_strides(ndim, out, m->out_st);
    return tg_map_op(t, &expand_op, a, ndim, out, &c, NULL);
}
