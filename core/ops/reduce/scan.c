/* tapegrad: running sums and products, sort and topk along a dim
 * (torch.cumsum, cumprod, sort, topk). Per slice x [n], with g = dy:
 *   cumsum   y_j = sum_{i<=j} x_i        dx_i = sum_{j>=i} g_j (a reversed running sum)
 *   cumprod  y_j = prod_{i<=j} x_i       dx_i = sum_{j>=i} g_j y_j / x_i without a zero
 *                                        (PyTorch's formula); a slice with a zero takes
 *                                        dx_i = sum_{j>=i} g_j prod_{k<=j, k!=i} x_k, O(n^2)
 *   sort     y_j = x_{idx_j}             dx_{idx_j} += g_j (indices without a grad)
 *   topk     the first k of sort, descending for the largest
 * Order: NaN sorts above every number (last ascending, first descending, as
 * PyTorch); equal values keep their order (stable, as sort(stable=True)).
 * Running sums and products are in double.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../internal.h"
#include "../ops.h"

#define X(i) ((double)x[(i) * s])

static void cumsum_fwd(const tg_real *x, size_t n, size_t m, size_t s, tg_real *y, int64_t *idx, const double *p,
                       void *w)
{
    (void)w;
    (void)m, (void)idx, (void)p;
    double acc = 0;
    for (size_t i = 0; i < n; i++) y[i * s] = (tg_real)(acc += X(i));
}
static void cumsum_bwd(const tg_real *x, size_t n, size_t m, size_t s, const tg_real *y, const tg_real *g,
                       const int64_t *idx, tg_real *dx, const double *p)
{
    (void)x, (void)m, (void)y, (void)idx, (void)p;
    double acc = 0;
    for (size_t i = n; i-- > 0;) dx[i * s] += (tg_real)(acc += (double)g[i * s]);
}

static void cumprod_fwd(const tg_real *x, size_t n, size_t m, size_t s, tg_real *y, int64_t *idx, const double *p,
                        void *w)
{
    (void)w;
    (void)m, (void)idx, (void)p;
    double acc = 1;
    for (size_t i = 0; i < n; i++) y[i * s] = (tg_real)(acc *= X(i));
}
static void cumprod_bwd(const tg_real *x, size_t n, size_t m, size_t s, const tg_real *y, const tg_real *g,
                        const int64_t *idx, tg_real *dx, const double *p)
{
    (void)m, (void)idx, (void)p;
    bool zero = false;
    for (size_t i = 0; i < n; i++) zero |= x[i * s] == 0;
    if (!zero) {  /* sum_{j>=i} g_j y_j, reversed, over x_i */
        double acc = 0;
        for (size_t i = n; i-- > 0;) {
            acc += (double)g[i * s] * (double)y[i * s];
            dx[i * s] += (tg_real)(acc / X(i));
        }
        return;
    }
    double pre = 1;  /* prod_{k<i} x_k */
    for (size_t i = 0; i < n; i++) {
        double r = pre, acc = 0;
        for (size_t j = i; j < n; j++) {
            if (j > i) r *= X(j);
            acc += (double)g[j * s] * r;
        }
        dx[i * s] += (tg_real)acc;
        pre *= X(i);
    }
}

/* one slice element and where it came from */
typedef struct keyed {
    double v;
    int64_t i;
} keyed;

/* ascending with NaN above everything; ties by index */
static int cmp_up(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    bool na = isnan(a->v), nb = isnan(b->v);
    if (na != nb) return na ? 1 : -1;
    if (!na && a->v != b->v) return a->v < b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}
/* descending with NaN first; ties by index */
static int cmp_down(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    bool na = isnan(a->v), nb = isnan(b->v);
    if (na != nb) return na ? -1 : 1;
    if (!na && a->v != b->v) return a->v > b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* p = {1 for descending}; w holds n keys */
static void sort_fwd(const tg_real *x, size_t n, size_t m, size_t s, tg_real *y, int64_t *idx, const double *p,
                     void *w)
{
    keyed *k = w;
    for (size_t i = 0; i < n; i++) k[i] = (keyed){X(i), (int64_t)i};
    if (n > 1) qsort(k, n, sizeof *k, p[0] != 0 ? cmp_down : cmp_up);
    for (size_t j = 0; j < m; j++) {
        y[j * s] = x[(size_t)k[j].i * s];
        if (idx) idx[j * s] = k[j].i;
    }
}
static void sort_bwd(const tg_real *x, size_t n, size_t m, size_t s, const tg_real *y, const tg_real *g,
                     const int64_t *idx, tg_real *dx, const double *p)
{
    (void)x, (void)n, (void)y, (void)p;
    for (size_t j = 0; j < m; j++) dx[(size_t)idx[j * s] * s] += g[j * s];
}

static const tg_along_kind cumsum_k = {TG_ALONG_OP("tg_cumsum"), false, 0, cumsum_fwd, cumsum_bwd};
static const tg_along_kind cumprod_k = {TG_ALONG_OP("tg_cumprod"), false, 0, cumprod_fwd, cumprod_bwd};
static const tg_along_kind sort_k = {TG_ALONG_OP("tg_sort"), true, sizeof(keyed), sort_fwd, sort_bwd};
static const tg_along_kind topk_k = {TG_ALONG_OP("tg_topk"), true, sizeof(keyed), sort_fwd, sort_bwd};

static tg_tensor *scan(tg_tape *t, const tg_along_kind *k, tg_tensor *a, int dim)
{
    int d;
    if (!tg_inputs_check(t, &k->op, &a, 1, 1) || !tg_along_dim(t, k->op.name, a, dim, &d)) return NULL;
    return tg_along_apply(t, k, a, d, a->ndim ? (size_t)a->shape[d] : 1, true, NULL, NULL);
}

tg_tensor *tg_cumsum(tg_tape *t, tg_tensor *a, int dim)
{
    TG_DISPATCH(tg_cumsum, a, (t, a, dim));
    return scan(t, &cumsum_k, a, dim);
}
tg_tensor *tg_cumprod(tg_tape *t, tg_tensor *a, int dim)
{
    TG_DISPATCH(tg_cumprod, a, (t, a, dim));
    return scan(t, &cumprod_k, a, dim);
}

tg_tensor *tg_sort(tg_tape *t, tg_tensor *a, int dim, bool descending, tg_tensor **indices)
{
    TG_DISPATCH(tg_sort, a, (t, a, dim, descending, indices));
    int d;
    if (!tg_inputs_check(t, &sort_k.op, &a, 1, 1) || !tg_along_dim(t, sort_k.op.name, a, dim, &d)) return NULL;
    return tg_along_apply(t, &sort_k, a, d, a->ndim ? (size_t)a->shape[d] : 1, true,
                          (double[TG_ALONG_PARAMS]){descending}, indices);
}

tg_tensor *tg_topk(tg_tape *t, tg_tensor *a, int k, int dim, bool largest, tg_tensor **indices)
{
    TG_DISPATCH(tg_topk, a, (t, a, k, dim, largest, indices));
    int d;
    if (!tg_inputs_check(t, &topk_k.op, &a, 1, 1) || !tg_along_dim(t, topk_k.op.name, a, dim, &d)) return NULL;
    int n = a->ndim ? a->shape[d] : 1;
    if (k < 0 || k > n) {
        char sa[TG_SHAPE_STR];
        return tg_op_fail(t, &topk_k.op, "k %d is out of range [0, %d] for dim %d of a %s", k, n, dim, tg_shape_str(a, sa));
    }
    return tg_along_apply(t, &topk_k, a, d, (size_t)k, true, (double[TG_ALONG_PARAMS]){largest}, indices);
}
