/* tapegrad: pieces of a tensor along any dim: narrow, slicing with a step,
 * split and chunk. Each piece is a new tensor whose map (core/ops/shape/move.c)
 * reads every step-th element of a range of a:
 *   out [.., len, ..] <- a [.., n, ..]      out[.., j, ..] = a[.., start + j step, ..]
 *   d a[.., start + j step, ..] += d out[.., j, ..]
 * split and chunk are narrows, one node per piece (PyTorch returns views);
 * tg_slice is a narrow of the last dim.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

TG_OP(narrow_op, "tg_narrow", tg_map_op_backward, tg_map_ctx);
TG_OP(slice_dim_op, "tg_slice_dim", tg_map_op_backward, tg_map_ctx);
TG_OP(slice_op, "tg_slice", tg_map_op_backward, tg_map_ctx);

/* out = a[.., start : start + len * step : step, ..] along dim d (resolved, in range) */
static tg_tensor *take(tg_tape *t, const tg_op *op, tg_tensor *a, int d, int start, int len, int step)
{
    int shape[TG_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[d] = len;
    tg_map_ctx c = {.n_maps = 1};
    tg_map *m = &c.maps[0];
    tg_map_of(m, a->ndim, a->shape);
    m->n[d] = len;
    m->in_off = (ptrdiff_t)start * m->in_st[d];
    m->in_st[d] *= step;
    tg_strides(a->ndim, shape, m->out_st);
    return tg_map_op(t, op, a, a->ndim, shape, &c, NULL);
}

/* After the input checks, a's dim resolved into *d; false with the error
 * ("<op>: a [] has no dim to <verb>" for a 0-d a). */
static bool dim_check(tg_tape *t, const tg_op *rec, tg_tensor *a, int dim, const char *verb, int *d)
{
    char sa[TG_SHAPE_STR];
    if (!tg_inputs_check_dtype(t, rec, tg_move_dtype(a), &a, 1, 1)) return false;
    if (a->ndim == 0) {
        tg_fail(t, "%s: a %s has no dim to %s", rec->name, tg_shape_str(a, sa), verb);
        return false;
    }
    return tg_dim_resolve(t, rec->name, a, dim, a->ndim, d);
}

tg_tensor *tg_narrow(tg_tape *t, tg_tensor *a, int dim, int start, int len)
{
    TG_DISPATCH(tg_narrow, a, (t, a, dim, start, len));
    const char *op = narrow_op.name;
    int d;
    char sa[TG_SHAPE_STR];
    if (!dim_check(t, &narrow_op, a, dim, "narrow", &d)) return NULL;
    int n = a->shape[d], s = start < 0 ? start + n : start;
    if (s < 0 || len < 0 || s > n || len > n - s)
        return tg_fail(t, "%s: start %d, length %d do not fit dim %d (size %d) of a %s", op, start, len, dim, n,
                       tg_shape_str(a, sa));
    return take(t, &narrow_op, a, d, s, len, 1);
}

/* a narrow of the last dim (start >= 0) */
tg_tensor *tg_slice(tg_tape *t, tg_tensor *a, int start, int len)
{
    TG_DISPATCH(tg_slice, a, (t, a, start, len));
    const char *op = slice_op.name;
    if (!tg_inputs_check_dtype(t, &slice_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    char sa[TG_SHAPE_STR];
    if (a->ndim < 1) return tg_fail(t, "%s: a %s has no last dim to slice", op, tg_shape_str(a, sa));
    int C = a->shape[a->ndim - 1];
    if (start < 0 || len < 0 || start > C || len > C - start)
        return tg_fail(t, "%s: range start %d, len %d does not fit the last dim %d of a %s", op, start, len, C,
                       tg_shape_str(a, sa));
    return take(t, &slice_op, a, a->ndim - 1, start, len, 1);
}

/* Python's slice start:end:step on a dim of size n: negative counts from the
 * end, out-of-range bounds clamp. The number of elements taken. */
static int slice_len(int n, int *start, int end, int step)
{
    long long s = *start < 0 ? (long long)*start + n : *start, e = end < 0 ? (long long)end + n : end;
    s = s < 0 ? 0 : s > n ? n : s;
    e = e < 0 ? 0 : e > n ? n : e;
    *start = (int)s;
    return e > s ? (int)((e - s + step - 1) / step) : 0;
}

tg_tensor *tg_slice_dim(tg_tape *t, tg_tensor *a, int dim, int start, int end, int step)
{
    TG_DISPATCH(tg_slice_dim, a, (t, a, dim, start, end, step));
    const char *op = slice_dim_op.name;
    int d;
    char sa[TG_SHAPE_STR];
    if (!dim_check(t, &slice_dim_op, a, dim, "slice", &d)) return NULL;
    if (step <= 0)
        return tg_fail(t, "%s: step %d must be positive (a %s, dim %d)", op, step, tg_shape_str(a, sa), dim);
    int len = slice_len(a->shape[d], &start, end, step);
    return take(t, &slice_dim_op, a, d, start, len, step);
}

/* split and chunk record nothing themselves (each piece is a narrow): these
 * name their errors. */
TG_OP_NO_GRAD(split_sizes_op, "tg_split_sizes");
TG_OP_NO_GRAD(split_op, "tg_split");
TG_OP_NO_GRAD(chunk_op, "tg_chunk");

/* The half rule for split and chunk: rc the split of a widened a (the
 * number of pieces, or 0 and n pieces: split_sizes), each piece rounded back
 * to half. */
static int half_pieces(tg_tape *t, int rc, int n, tg_tensor **outs, tg_dtype half)
{
    for (int i = 0; rc >= 0 && i < (rc ? rc : n); i++)
        if (!(outs[i] = tg_to(t, outs[i], half))) return -1;
    return rc;
}
#define PIECES_HALF(call, n)                                                          \
    do {                                                                              \
        if (tg_dtype_is_half(a->dtype)) {                                             \
            tg_dtype half_ = a->dtype;                                                \
            if (!(a = tg_to(t, a, TG_F32))) return -1;                                \
            return half_pieces(t, call, n, outs, half_);                              \
        }                                                                             \
    } while (0)

/* Checks shared by split and chunk; the resolved dim in *d. */
static bool pieces_check(tg_tape *t, const tg_op *rec, tg_tensor *a, int dim, tg_tensor **outs, int *d)
{
    const char *op = rec->name;
    char sa[TG_SHAPE_STR];
    if (!tg_inputs_check_dtype(t, rec, tg_move_dtype(a), &a, 1, 1)) return false;
    if (!outs) {
        tg_fail(t, "%s: outs is NULL (a %s)", op, tg_shape_str(a, sa));
        return false;
    }
    if (a->ndim == 0) {
        tg_fail(t, "%s: a %s has no dim to split", op, tg_shape_str(a, sa));
        return false;
    }
    return tg_dim_resolve(t, op, a, dim, a->ndim, d);
}

int tg_split_sizes(tg_tape *t, tg_tensor *a, const int *sizes, int n, int dim, tg_tensor **outs)
{
    TG_DISPATCH_OTHER(tg_split_sizes, a, (t, a, sizes, n, dim, outs));
    const char *op = split_sizes_op.name;
    int d;
    if (!pieces_check(t, &split_sizes_op, a, dim, outs, &d)) return -1;
    PIECES_HALF(tg_split_sizes(t, a, sizes, n, dim, outs), n);
    if (!sizes) return tg_fail(t, "%s: sizes is NULL", split_sizes_op.name), -1;
    char sa[TG_SHAPE_STR];
    long long sum = 0;
    for (int i = 0; sizes && i < n; i++) {
        if (sizes[i] < 0) {
            tg_fail(t, "%s: sizes[%d] is %d (a %s, dim %d)", op, i, sizes[i], tg_shape_str(a, sa), dim);
            return -1;
        }
        sum += sizes[i];
    }
    if (!sizes || n <= 0 || sum != a->shape[d]) {
        tg_fail(t, "%s: %d sizes summing to %lld do not split dim %d (size %d) of a %s", op, n, sum, dim,
                a->shape[d], tg_shape_str(a, sa));
        return -1;
    }
    for (int i = 0, off = 0; i < n; off += sizes[i++])
        if (!(outs[i] = take(t, &narrow_op, a, d, off, sizes[i], 1))) return -1;
    return 0;
}

int tg_split(tg_tape *t, tg_tensor *a, int size, int dim, tg_tensor **outs, int max_outs)
{
    TG_DISPATCH_OTHER(tg_split, a, (t, a, size, dim, outs, max_outs));
    const char *op = split_op.name;
    int d;
    if (!pieces_check(t, &split_op, a, dim, outs, &d)) return -1;
    PIECES_HALF(tg_split(t, a, size, dim, outs, max_outs), 0);
    char sa[TG_SHAPE_STR];
    int n = a->shape[d];
    if (size <= 0 && !(size == 0 && n == 0)) {
        tg_fail(t, "%s: split size %d must be positive (a %s, dim %d)", op, size, tg_shape_str(a, sa), dim);
        return -1;
    }
    int count = n == 0 ? 1 : (n + size - 1) / size;
    if (count > max_outs) {
        tg_fail(t, "%s: %d pieces of dim %d (size %d) of a %s do not fit outs[%d]", op, count, dim, n,
                tg_shape_str(a, sa), max_outs);
        return -1;
    }
    for (int i = 0; i < count; i++) {
        int off = i * size, len = n - off < size ? n - off : size;
        if (!(outs[i] = take(t, &narrow_op, a, d, off, len, 1))) return -1;
    }
    return count;
}

int tg_chunk(tg_tape *t, tg_tensor *a, int chunks, int dim, tg_tensor **outs)
{
    TG_DISPATCH_OTHER(tg_chunk, a, (t, a, chunks, dim, outs));
    const char *op = chunk_op.name;
    int d;
    if (!pieces_check(t, &chunk_op, a, dim, outs, &d)) return -1;
    PIECES_HALF(tg_chunk(t, a, chunks, dim, outs), 0);
    char sa[TG_SHAPE_STR];
    if (chunks <= 0) {
        tg_fail(t, "%s: chunks %d must be positive (a %s, dim %d)", op, chunks, tg_shape_str(a, sa), dim);
        return -1;
    }
    int n = a->shape[d];
    /* PyTorch: pieces of ceil(n / chunks), so there may be fewer than chunks */
    int size = (n + chunks - 1) / chunks;
    if (n == 0) {
        for (int i = 0; i < chunks; i++)
            if (!(outs[i] = take(t, &narrow_op, a, d, 0, 0, 1))) return -1;
        return chunks;
    }
    return tg_split(t, a, size, dim, outs, chunks);
}
