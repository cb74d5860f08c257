/* tapegrad: indexing along a dim with integer index tensors (int64 or
 * int32, tg_index_check). With g = d out:
 *   gather(a, d, ix)          out[i] = a[i with i_d = ix[i]]            d a[i with i_d = ix[i]] += g[i]
 *   scatter_add(a, d, ix, s)  out = a; out[i with i_d = ix[i]] += s[i]  d a = g; d s[i] += g[i with i_d = ix[i]]
 *   index_select(a, d, ix)    out[.., j, ..] = a[.., ix[j], ..]         d a[.., ix[j], ..] += g[.., j, ..]
 *   index_add(a, d, ix, s, α) out = a; out[.., ix[j], ..] += α s[.., j, ..]
 *                             d a = g; d s[.., j, ..] += α g[.., ix[j], ..]
 * Every index is checked against its dim before anything is written; an
 * error names the index, its position and the dim. gather and scatter_add
 * save one offset per index element, index_select and index_add a copy of
 * the indices, so the caller may change its index tensor at once. Repeated indices
 * accumulate, in index order (the bits do not depend on threads).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

/* For gather and scatter_add: per index element i (row-major over ix's
 * shape), xoff[i] = its element of x (i with i_d = ix[i]) and, when soff is
 * not NULL, soff[i] = its element of src (i itself in src's shape). Checks
 * ix's dims against x (and src) and every index against x's dim d. */
bool tg_index_offsets(tg_tape *t, const char *op, const tg_tensor *ix0, int d, const tg_tensor *x0,
                      const tg_tensor *src0, size_t *xoff, size_t *soff)
{
    char sx[TG_SHAPE_STR], si[TG_SHAPE_STR], ss[TG_SHAPE_STR];
    /* a 0-d a, src or index is read as [1] (PyTorch's gather and scatter_add) */
    tg_tensor ix1 = *ix0, x1 = *x0, s1 = src0 ? *src0 : x1;
    if (!ix1.ndim) ix1.ndim = 1, ix1.shape[0] = 1;
    if (!x1.ndim) x1.ndim = 1, x1.shape[0] = 1;
    if (!s1.ndim) s1.ndim = 1, s1.shape[0] = 1;
    const tg_tensor *ix = &ix1, *x = &x1, *src = src0 ? &s1 : NULL;
    bool fits = ix->ndim == x->ndim && (!src || src->ndim == x->ndim);
    for (int k = 0; fits && k < ix->ndim; k++)
        fits = (k == d || ix->shape[k] <= x->shape[k]) && (!src || ix->shape[k] <= src->shape[k]);
    if (!fits)
        return tg_fail(t, "%s: index %s does not fit a %s%s%s (same number of dims, no larger than a but along "
                          "dim %d%s)", op, tg_shape_str(ix0, si), tg_shape_str(x0, sx), src ? " and src " : "",
                       src ? tg_shape_str(src0, ss) : "", d, src ? ", no larger than src" : ""), false;
    ptrdiff_t xst[TG_MAX_DIMS], sst[TG_MAX_DIMS];
    tg_strides(x->ndim, x->shape, xst);
    if (src) tg_strides(src->ndim, src->shape, sst);
    int i_k[TG_MAX_DIMS] = {0};
    size_t xo = 0, so = 0;  /* offsets of i without the d term in x; of i in src */
    for (size_t i = 0; i < ix->size; i++) {
        int64_t v = tg_index_at(ix, i);
        if (v < 0 || v >= x->shape[d])
            return tg_fail(t, "%s: index %" PRId64 " at position %zu is out of range for dim %d (size %d) of a %s",
                           op, v, i, d, x->shape[d], tg_shape_str(x0, sx)), false;
        xoff[i] = xo + (size_t)v * (size_t)xst[d];
        if (soff) soff[i] = so;
        for (int k = ix->ndim - 1; k >= 0; k--) {  /* next i, row-major */
            if (k != d) xo += (size_t)xst[k];
            if (src) so += (size_t)sst[k];
            if (++i_k[k] < ix->shape[k]) break;
            if (k != d) xo -= (size_t)xst[k] * (size_t)ix->shape[k];
            if (src) so -= (size_t)sst[k] * (size_t)ix->shape[k];
            i_k[k] = 0;
        }
    }
    return true;
}

typedef struct offsets_ctx {
    const size_t *xoff, *soff;  /* [n] arena: a's (x's) and src's element per index element */
    size_t n;
} offsets_ctx;

/* d a += d out for an op that adds to a copy of a (a has out's shape);
 * false on out of memory. */
static bool grad_through(tg_tape *t, const tg_tensor *out, tg_tensor *a)
{
    if (!a->requires_grad) return true;
    tg_real *da = tg_grad(t, a);
    if (!da) return false;
    for (size_t i = 0; i < out->size; i++) da[i] += out->grad[i];
    return true;
}

/* out [ix's shape] <- a: d a[xoff[i]] += g[i] */
TG_BACKWARD(gather_backward, offsets_ctx)
{
    const offsets_ctx *c = ctx;
    tg_real *da = tg_grad(t, in[0]);
    if (!da) return;
    for (size_t i = 0; i < c->n; i++) da[c->xoff[i]] += out->grad[i];
}

/* out [a's shape] <- a, src: d a += g; d src[soff[i]] += g[xoff[i]] */
TG_BACKWARD(scatter_add_backward, offsets_ctx)
{
    const offsets_ctx *c = ctx;
    if (!grad_through(t, out, in[0])) return;
    if (in[1]->requires_grad) {
        tg_real *ds = tg_grad(t, in[1]);
        if (!ds) return;
        for (size_t i = 0; i < c->n; i++) ds[c->soff[i]] += out->grad[c->xoff[i]];
    }
}

TG_OP(gather_op, "tg_gather", gather_backward, offsets_ctx);
TG_OP(scatter_add_op, "tg_scatter_add", scatter_add_backward, offsets_ctx);

/* Arena offsets for n index elements (soff too when want_soff); NULL on OOM. */
static size_t *offsets_alloc(tg_tape *t, const char *op, size_t n, size_t **soff)
{
    size_t *x = tg_arena_alloc(t, (n ? n : 1) * sizeof *x * (soff ? 2 : 1), op);
    if (x && soff) *soff = x + n;
    return x;
}

tg_tensor *tg_gather(tg_tape *t, tg_tensor *a, int dim, const tg_tensor *ix)
{
    TG_DISPATCH(tg_gather, a, (t, a, dim, ix));
    const char *op = gather_op.name;
    if (!tg_inputs_check_dtype(t, &gather_op, tg_move_dtype(a), &a, 1, 1) ||
        !tg_index_check(t, &gather_op, ix, "the index"))
        return NULL;
    int d;
    size_t n = ix->size;
    if (!tg_dim_resolve(t, op, a, dim, a->ndim ? a->ndim : 1, &d)) return NULL;
    size_t *xoff = offsets_alloc(t, op, n, NULL);
    if (!xoff || !tg_index_offsets(t, op, ix, d, a, NULL, xoff, NULL)) return NULL;
    tg_tensor *out = tg_new_op(t, &gather_op, a->dtype, ix->ndim, ix->shape);
    if (!out) return NULL;
    size_t es = tg_dtype_size(a->dtype);
    for (size_t i = 0; i < n; i++)
        memcpy((unsigned char *)out->data + i * es, (const unsigned char *)a->data + xoff[i] * es, es);
    if (!tg_op_record(t, &gather_op, out, &a, 1, &(offsets_ctx){xoff, NULL, n})) return NULL;
    return tg_op_done(t, &gather_op, out);
}

tg_tensor *tg_scatter_add(tg_tape *t, tg_tensor *a, int dim, const tg_tensor *ix, tg_tensor *src)
{
    TG_DISPATCH_SAME(tg_scatter_add, (t, a, dim, ix, src), a, src);
    const char *op = scatter_add_op.name;
    tg_tensor *in[2] = {a, src};
    if (!tg_inputs_check(t, &scatter_add_op, in, 2, 2) || !tg_index_check(t, &scatter_add_op, ix, "the index"))
        return NULL;
    int d;
    size_t n = ix->size;
    if (!tg_dim_resolve(t, op, a, dim, a->ndim ? a->ndim : 1, &d)) return NULL;
    size_t *soff, *xoff = offsets_alloc(t, op, n, &soff);
    if (!xoff || !tg_index_offsets(t, op, ix, d, a, src, xoff, soff)) return NULL;
    tg_tensor *out = tg_new_like(t, &scatter_add_op, a);
    if (!out) return NULL;
    memcpy(out->data, a->data, a->size * sizeof *a->data);
    for (size_t i = 0; i < n; i++) out->data[xoff[i]] += src->data[soff[i]];
    if (!tg_op_record(t, &scatter_add_op, out, in, 2, &(offsets_ctx){xoff, soff, n})) return NULL;
    return tg_op_done(t, &scatter_add_op, out);
}

/* ---- index_select / index_add: whole slices along dim --------------------- */

typedef struct slices_ctx {
    const int64_t *ix;  /* [n] arena copy */
    int n, dim;
    double alpha;
} slices_ctx;

/* a as [outer, N, inner] around dim d */
static void around(const tg_tensor *a, int d, size_t *outer, size_t *inner)
{
    *outer = *inner = 1;
    for (int k = 0; k < a->ndim; k++) {
        if (k < d) *outer *= (size_t)a->shape[k];
        if (k > d) *inner *= (size_t)a->shape[k];
    }
}

/* y[o, j, :] += alpha x[o, ix[j], :] (to_ix false) or y[o, ix[j], :] += alpha x[o, j, :] (to_ix) */
static void slices_move(const slices_ctx *c, const tg_tensor *big, tg_real *y, const tg_real *x, bool to_ix)
{
    size_t outer, inner, N = (size_t)big->shape[c->dim];
    around(big, c->dim, &outer, &inner);
    tg_real al = (tg_real)c->alpha;
    for (size_t o = 0; o < outer; o++)
        for (int j = 0; j < c->n; j++) {
            size_t bi = (o * N + (size_t)c->ix[j]) * inner, si = (o * (size_t)c->n + (size_t)j) * inner;
            tg_real *dst = y + (to_ix ? bi : si);
            const tg_real *src = x + (to_ix ? si : bi);
            for (size_t k = 0; k < inner; k++) dst[k] += al * src[k];
        }
}

/* y[o, j, :] = x[o, ix[j], :], elements of es bytes (any dtype) */
static void slices_take(const slices_ctx *c, const tg_tensor *x, void *y, size_t es)
{
    size_t outer, inner, N = (size_t)x->shape[c->dim];
    around(x, c->dim, &outer, &inner);
    for (size_t o = 0; o < outer; o++)
        for (int j = 0; j < c->n; j++)
            memcpy((unsigned char *)y + (o * (size_t)c->n + (size_t)j) * inner * es,
                   (const unsigned char *)x->data + (o * N + (size_t)c->ix[j]) * inner * es, inner * es);
}

/* out [.., n, ..] <- a [.., N, ..]: d a[.., ix[j], ..] += g[.., j, ..] */
TG_BACKWARD(index_select_backward, slices_ctx)
{
    tg_real *da = tg_grad(t, in[0]);
    if (da) slices_move(ctx, in[0], da, out->grad, true);
}

/* out [.., N, ..] <- a, src [.., n, ..]: d a += g; d src[.., j, ..] += alpha g[.., ix[j], ..] */
TG_BACKWARD(index_add_backward, slices_ctx)
{
    if (!grad_through(t, out, in[0])) return;
    if (in[1]->requires_grad) {
        tg_real *ds = tg_grad(t, in[1]);
        if (ds) slices_move(ctx, in[0], ds, out->grad, false);
    }
}

TG_OP(index_select_op, "tg_index_select", index_select_backward, slices_ctx);
TG_OP(index_add_op, "tg_index_add", index_add_backward, slices_ctx);

/* Checks a 0-d or 1-D ix against dim d of a and copies it into the arena
 * (a and the op's inputs checked). */
static bool slices_plan(tg_tape *t, const tg_op *rec, tg_tensor *a, int dim, const tg_tensor *ix, slices_ctx *c)
{
    const char *op = rec->name;
    char sa[TG_SHAPE_STR], si[TG_SHAPE_STR];
    if (!tg_index_check(t, rec, ix, "the index") || !tg_dim_resolve(t, op, a, dim, a->ndim ? a->ndim : 1, &c->dim))
        return false;
    size_t n = ix->size;
    if (a->ndim == 0) return tg_fail(t, "%s: a %s has no dim to index", op, tg_shape_str(a, sa)), false;
    if (ix->ndim > 1 || n > INT32_MAX)
        return tg_fail(t, "%s: the index %s must be 1-D (a %s)", op, tg_shape_str(ix, si), tg_shape_str(a, sa)), false;
    int64_t *copy = tg_arena_alloc(t, (n ? n : 1) * sizeof *copy, op);
    if (!copy) return false;
    for (size_t j = 0; j < n; j++) {
        copy[j] = tg_index_at(ix, j);
        if (copy[j] < 0 || copy[j] >= a->shape[c->dim])
            return tg_fail(t, "%s: index %" PRId64 " at position %zu is out of range for dim %d (size %d) of a %s", op,
                           copy[j], j, c->dim, a->shape[c->dim], tg_shape_str(a, sa)), false;
    }
    c->ix = copy;
    c->n = (int)n;
    return true;
}

tg_tensor *tg_index_select(tg_tape *t, tg_tensor *a, int dim, const tg_tensor *ix)
{
    TG_DISPATCH(tg_index_select, a, (t, a, dim, ix));
    if (!tg_inputs_check_dtype(t, &index_select_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    slices_ctx c = {.alpha = 1};
    if (!slices_plan(t, &index_select_op, a, dim, ix, &c)) return NULL;
    int shape[TG_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[c.dim] = c.n;
    tg_tensor *out = tg_new_op(t, &index_select_op, a->dtype, a->ndim, shape);
    if (!out) return NULL;
    slices_take(&c, a, out->data, tg_dtype_size(a->dtype));
    if (!tg_op_record(t, &index_select_op, out, &a, 1, &c)) return NULL;
    return tg_op_done(t, &index_select_op, out);
}

tg_tensor *tg_index_add(tg_tape *t, tg_tensor *a, int dim, const tg_tensor *ix, tg_tensor *src, double alpha)
{
    TG_DISPATCH_SAME(tg_index_add, (t, a, dim, ix, src, alpha), a, src);
    tg_tensor *in[2] = {a, src};
    if (!tg_inputs_check(t, &index_add_op, in, 2, 2)) return NULL;
    slices_ctx c = {.alpha = alpha};
    if (!slices_plan(t, &index_add_op, a, dim, ix, &c)) return NULL;
    bool fits = src->ndim == a->ndim;
    for (int k = 0; fits && k < a->ndim; k++) fits = src->shape[k] == (k == c.dim ? c.n : a->shape[k]);
    if (!fits) {
        char sa[TG_SHAPE_STR], ss[TG_SHAPE_STR];
        return tg_op_fail(t, &index_add_op, "src %s must be a %s with dim %d of size %d (the index's length)",
                          tg_shape_str(src, ss), tg_shape_str(a, sa), c.dim, c.n);
    }
    tg_tensor *out = tg_new_like(t, &index_add_op, a);
    if (!out) return NULL;
    memcpy(out->data, a->data, a->size * sizeof *a->data);
    slices_move(&c, a, out->data, src->data, true);
    if (!tg_op_record(t, &index_add_op, out, in, 2, &c)) return NULL;
    return tg_op_done(t, &index_add_op, out);
}
