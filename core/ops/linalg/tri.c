/* tapegrad: the matrix structure of the last two dims: tril, triu, diag.
 *   tril(k)  out[.., i, j] = a[.., i, j] where j - i <= k, else 0;  d a = d out there, 0 elsewhere
 *   triu(k)  the same where j - i >= k
 *   diag(k)  1-D a [n] -> [n+|k|, n+|k|] with a on diagonal k (a map into zeros);
 *            2-D a [R, C] -> diagonal k of a [len] (a map);  d a = the map read backwards
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

typedef struct tri_ctx {
    int k;
    bool upper;
} tri_ctx;

/* y = x kept where the triangle holds, 0 (zero bytes) elsewhere, elements of
 * es bytes (any dtype) */
static void tri_copy(const void *x, void *y, size_t es, size_t mats, int R, int C, int k, bool upper)
{
    for (size_t b = 0; b < mats; b++)
        for (int i = 0; i < R; i++) {
            const unsigned char *xr = (const unsigned char *)x + (b * R + i) * (size_t)C * es;
            unsigned char *yr = (unsigned char *)y + (b * R + i) * (size_t)C * es;
            for (int j = 0; j < C; j++) {
                bool keep = upper ? (long long)j - i >= k : (long long)j - i <= k;
                if (keep)
                    memcpy(yr + j * es, xr + j * es, es);
                else
                    memset(yr + j * es, 0, es);
            }
        }
}

/* y += x where the triangle holds */
static void tri_add(const tg_real *x, tg_real *y, size_t mats, int R, int C, int k, bool upper)
{
    for (size_t b = 0; b < mats; b++)
        for (int i = 0; i < R; i++) {
            const tg_real *xr = x + (b * R + i) * (size_t)C;
            tg_real *yr = y + (b * R + i) * (size_t)C;
            for (int j = 0; j < C; j++) {
                bool keep = upper ? (long long)j - i >= k : (long long)j - i <= k;
                yr[j] += keep ? xr[j] : 0;
            }
        }
}

/* out [.., R, C] <- a [.., R, C]: d a += d out inside the triangle */
TG_BACKWARD(tri_backward, tri_ctx)
{
    const tri_ctx *c = ctx;
    tg_real *da = tg_grad(t, in[0]);
    if (!da) return;
    int R = in[0]->shape[in[0]->ndim - 2], C = in[0]->shape[in[0]->ndim - 1];
    tri_add(out->grad, da, R && C ? out->size / ((size_t)R * C) : 0, R, C, c->k, c->upper);
}

TG_OP(tril_op, "tg_tril", tri_backward, tri_ctx);
TG_OP(triu_op, "tg_triu", tri_backward, tri_ctx);

static tg_tensor *tri(tg_tape *t, tg_tensor *a, int k, bool upper)
{
    const tg_op *rec = upper ? &triu_op : &tril_op;
    const char *op = rec->name;
    if (!tg_inputs_check_dtype(t, rec, tg_move_dtype(a), &a, 1, 1)) return NULL;
    char sa[TG_SHAPE_STR];
    if (a->ndim < 2) return tg_fail(t, "%s: a %s must have at least 2 dims", op, tg_shape_str(a, sa));
    tg_tensor *out = tg_new_like(t, rec, a);
    if (!out) return NULL;
    int R = a->shape[a->ndim - 2], C = a->shape[a->ndim - 1];
    tri_copy(a->data, out->data, tg_dtype_size(a->dtype), R && C ? a->size / ((size_t)R * C) : 0, R, C, k, upper);
    if (!tg_op_record(t, rec, out, &a, 1, &(tri_ctx){k, upper})) return NULL;
    return tg_op_done(t, rec, out);
}

tg_tensor *tg_tril(tg_tape *t, tg_tensor *a, int diagonal)
{
    TG_DISPATCH(tg_tril, a, (t, a, diagonal));
    return tri(t, a, diagonal, false);
}
tg_tensor *tg_triu(tg_tape *t, tg_tensor *a, int diagonal)
{
    TG_DISPATCH(tg_triu, a, (t, a, diagonal));
    return tri(t, a, diagonal, true);
}

TG_OP(diag_op, "tg_diag", tg_map_op_backward, tg_map_ctx);

tg_tensor *tg_diag(tg_tape *t, tg_tensor *a, int diagonal)
{
    TG_DISPATCH(tg_diag, a, (t, a, diagonal));
    const char *op = diag_op.name;
    if (!tg_inputs_check_dtype(t, &diag_op, tg_move_dtype(a), &a, 1, 1)) return NULL;
    char sa[TG_SHAPE_STR];
    long long k = diagonal, ak = k < 0 ? -k : k;
    tg_map_ctx c = {.n_maps = 1, .maps[0].nd = 1};
    tg_map *m = &c.maps[0];
    if (a->ndim == 1) {
        long long N = a->shape[0] + ak;
        if (N > INT32_MAX) return tg_fail(t, "%s: a %s with diagonal %d: the size overflows", op, tg_shape_str(a, sa), diagonal);
        int n = (int)N;
        m->n[0] = a->shape[0];
        m->in_st[0] = 1;
        m->out_st[0] = (ptrdiff_t)n + 1;
        m->out_off = k >= 0 ? (ptrdiff_t)k : (ptrdiff_t)ak * n;
        double zero = 0;
        size_t size;
        if (!tg_shape_size(2, (int[]){n, n}, &size))
            return tg_fail(t, "%s: a %s with diagonal %d: the size overflows", op, tg_shape_str(a, sa), diagonal);
        return tg_map_op(t, &diag_op, a, 2, (int[]){n, n}, &c, &zero);
    }
    if (a->ndim != 2) return tg_fail(t, "%s: a %s must be 1-D or 2-D", op, tg_shape_str(a, sa));
    long long R = a->shape[0], C = a->shape[1];
    long long len = k >= 0 ? (R < C - k ? R : C - k) : (R + k < C ? R + k : C);
    m->n[0] = len > 0 ? (int)len : 0;
    m->in_st[0] = (ptrdiff_t)C + 1;
    m->out_st[0] = 1;
    m->in_off = len > 0 ? (k >= 0 ? (ptrdiff_t)k : (ptrdiff_t)ak * C) : 0;
    return tg_map_op(t, &diag_op, a, 1, (int[]){m->n[0]}, &c, NULL);
}
