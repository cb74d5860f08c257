/* tapegrad: reductions along a dim beyond sum / mean / max / min / logsumexp
 * (reduce.c): prod, var, std, linalg.vector_norm, amax, amin, argmax, argmin.
 * A slice x of n elements gives y; with g = dy and m = mean(x):
 *   prod       y = prod_k x_k (n = 0: 1)           dx_i = g prod_{k != i} x_k (g y / x_i without
 *                                                  zeros; exact with zeros, as PyTorch)
 *   var        y = sum (x - m)^2 / (n - c)         dx_i = g 2 (x_i - m) / (n - c)
 *   std        y = sqrt(var)                       dx_i = g (x_i - m) / ((n - c) y); 0 where y = 0
 *   norm p=1   y = sum |x|                         dx = g sign(x)
 *   norm p=2   y = sqrt(sum x^2)                   dx = g x / y; 0 where y = 0
 *   norm p=inf y = max |x|                         dx = g sign(x) / k at the k elements with |x| = y
 *   amax       y = max_k x_k (NaN if any)          dx = g / k at the k elements equal to y (amin alike)
 *   argmax     index of the first maximum (first NaN), int64; no grad
 * c is the correction (1: Bessel's); n - c <= 0 divides by 0 (inf or NaN,
 * as PyTorch). Sums are in double. The zero-grad rules are PyTorch's.
 */
#include <math.h>
#include <stdio.h>

#include "../internal.h"
#include "../ops.h"

#define X(i) ((double)x[(i) * s])

/* index of the first minimum (max: maximum) of the slice, the first NaN if any */
static size_t first_extreme(const tg_real *x, size_t n, size_t s, bool max)
{
    size_t at = 0;
    for (size_t i = 1; i < n && !isnan(X(at)); i++)
        if (isnan(X(i)) || (max ? X(i) > X(at) : X(i) < X(at))) at = i;
    return at;
}

static void prod_fwd(const tg_real *x, size_t n, size_t m, size_t s, tg_real *y, int64_t *idx, const double *p,
                     void *w)
{
    (void)w;
    (void)m, (void)idx, (void)p;
    double r = 1;
    for (size_t i = 0; i < n; i++) r *= X(i);
    y[0] = (tg_real)r;
}
/* dx_i = g prod_{k != i} x_k, as PyTorch: g y / x_i without a zero; with one
 * zero only it gets a grad (the product of the others); with two, none does */
static void prod_bwd(const tg_real *x, size_t n, size_t m, size_t s, const tg_real *y, const tg_real *g,
                     const int64_t *idx, tg_real *dx, const double *p)
{
    (void)m, (void)y, (void)idx, (void)p;
    double others = 1, gy = (double)g[0];
    size_t zeros = 0, z = 0;
    for (size_t i = 0; i < n; i++) {
        if (X(i) == 0) zeros++, z = i;
        else others *= X(i);
    }
    if (zeros == 0)
        for (size_t i = 0; i < n; i++) dx[i * s] += (tg_real)(gy * others / X(i));
    else if (zeros == 1)
        dx[z * s] += (tg_real)(gy * others);
}

static double slice_mean(const tg_real *x, size_t n, size_t s)
{
    double acc = 0;
    for (size_t i = 0; i < n; i++) acc += X(i);
    return acc / (double)n;
}

/* p = {correction, 1 for std} */
static void var_fwd(const tg_real *x, size_t n, size_t m, size_t s, tg_real *y, int64_t *idx, const double *p,
                    void *w)
{
    (void)w;
    (void)m, (void)idx;
    double mu = slice_mean(x, n, s), acc = 0, div = fmax(0, (double)n - p[0]);
    for (size_t i = 0; i < n; i++) acc += (X(i) - mu) * (X(i) - mu);
    y[0] = (tg_real)(p[1] != 0 ? sqrt(acc / div) : acc / div);
}
static void var_bwd(const tg_real *x, size_t n, size_t m, size_t s, const tg_real *y, const tg_real *g,
                    const int64_t *idx, tg_real *dx, const double *p)
{
    (void)m, (void)idx;
    double mu = slice_mean(x, n, s), div = fmax(0, (double)n - p[0]);
    double f = p[1] != 0 ? (y[0] == 0 ? 0 : (double)g[0] / (div * (double)y[0])) : 2 * (double)g[0] / div;
    for (size_t i = 0; i < n; i++) dx[i * s] += (tg_real)(f * (X(i) - mu));
}

/* p = {ord} */
static void norm_fwd(const tg_real *x, size_t n, size_t m, size_t s, tg_real *y, int64_t *idx, const double *p,
                     void *w)
{
    (void)w;
    (void)m, (void)idx;
    double acc = 0;
    for (size_t i = 0; i < n; i++) {
        double a = fabs(X(i));
        if (isinf(p[0])) {
            if (isnan(acc)) break;
            if (isnan(a) || a > acc) acc = a;
        } else {
            acc += p[0] == 1 ? a : a * a;
        }
    }
    y[0] = (tg_real)(p[0] == 2 ? sqrt(acc) : acc);
}
static void norm_bwd(const tg_real *x, size_t n, size_t m, size_t s, const tg_real *y, const tg_real *g,
                     const int64_t *idx, tg_real *dx, const double *p)
{
    (void)m, (void)idx;
    double gy = (double)g[0], yv = (double)y[0];
    size_t k = 0;
    if (isinf(p[0]))
        for (size_t i = 0; i < n; i++) k += fabs(X(i)) == yv || (isnan(yv) && isnan(X(i)));
    for (size_t i = 0; i < n; i++) {
        double v = X(i), sg = (double)((0 < v) - (v < 0)), d;
        if (p[0] == 1)
            d = sg;
        else if (p[0] == 2)
            d = yv == 0 ? 0 : v / yv;
        else
            d = fabs(v) == yv || (isnan(yv) && isnan(v)) ? sg / (double)k : 0;
        dx[i * s] += (tg_real)(gy * d);
    }
}

/* p = {1 for argmax}: the index into idx (the op's int64 output); y unused
 * (0: no NaN for anomaly mode to find) */
static void arg_fwd(const tg_real *x, size_t n, size_t m, size_t s, tg_real *y, int64_t *idx, const double *p,
                    void *w)
{
    (void)w, (void)m;
    idx[0] = (int64_t)first_extreme(x, n, s, p[0] != 0);
    y[0] = 0;
}

/* p = {1 for amax}: the extreme (NaN if any); its grad is shared evenly
 * among the k elements equal to it (each NaN when it is NaN), as torch.amax */
static void amax_fwd(const tg_real *x, size_t n, size_t m, size_t s, tg_real *y, int64_t *idx, const double *p,
                     void *w)
{
    (void)w, (void)m, (void)idx;
    y[0] = x[first_extreme(x, n, s, p[0] != 0) * s];
}
static void amax_bwd(const tg_real *x, size_t n, size_t m, size_t s, const tg_real *y, const tg_real *g,
                     const int64_t *idx, tg_real *dx, const double *p)
{
    (void)m, (void)idx, (void)p;
    bool nan = isnan(y[0]);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += nan ? isnan(X(i)) : x[i * s] == y[0];
    tg_real gk = g[0] / (tg_real)k;
    for (size_t i = 0; i < n; i++)
        if (nan ? isnan(X(i)) : x[i * s] == y[0]) dx[i * s] += gk;
}

static const tg_along_kind prod_k = {TG_ALONG_OP("tg_prod_dim"), false, 0, prod_fwd, prod_bwd};
static const tg_along_kind var_k = {TG_ALONG_OP("tg_var_dim"), false, 0, var_fwd, var_bwd};
static const tg_along_kind std_k = {TG_ALONG_OP("tg_std_dim"), false, 0, var_fwd, var_bwd};
static const tg_along_kind norm_k = {TG_ALONG_OP("tg_norm_dim"), false, 0, norm_fwd, norm_bwd};
static const tg_along_kind amax_k = {TG_ALONG_OP("tg_amax"), false, 0, amax_fwd, amax_bwd};
static const tg_along_kind amin_k = {TG_ALONG_OP("tg_amin"), false, 0, amax_fwd, amax_bwd};
static const tg_along_kind argmax_k = {{"tg_argmax", NULL, 0}, true, 0, arg_fwd, NULL};
static const tg_along_kind argmin_k = {{"tg_argmin", NULL, 0}, true, 0, arg_fwd, NULL};

/* one value per slice; empty_err not NULL: an empty dim is an error (`what`: no minimum ...);
 * idx_out as tg_along_apply's */
static tg_tensor *reduce_idx(tg_tape *t, const tg_along_kind *k, tg_tensor *a, int dim, bool keepdim, double p0,
                             double p1, const char *empty_err, tg_tensor **idx_out)
{
    const char *op = k->op.name;
    if (!tg_inputs_check(t, &k->op, &a, 1, 1)) return NULL;
    int d;
    if (!tg_along_dim(t, op, a, dim, &d)) return NULL;
    if (empty_err && a->ndim && a->shape[d] == 0) {
        char sa[TG_SHAPE_STR];
        return tg_fail(t, "%s: dim %d of a %s has size 0: %s", op, dim, tg_shape_str(a, sa), empty_err);
    }
    return tg_along_apply(t, k, a, d, 1, keepdim, (double[TG_ALONG_PARAMS]){p0, p1}, idx_out);
}
static tg_tensor *reduce(tg_tape *t, const tg_along_kind *k, tg_tensor *a, int dim, bool keepdim, double p0,
                         double p1, const char *empty_err)
{
    return reduce_idx(t, k, a, dim, keepdim, p0, p1, empty_err, NULL);
}
/* argmax / argmin: the int64 indices (the float output beside them is dropped) */
static tg_tensor *arg_reduce(tg_tape *t, const tg_along_kind *k, tg_tensor *a, int dim, bool keepdim, double p0,
                             const char *empty_err)
{
    tg_tensor *ix = NULL;
    return reduce_idx(t, k, a, dim, keepdim, p0, 0, empty_err, &ix) ? ix : NULL;
}

tg_tensor *tg_prod_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim)
{
    TG_DISPATCH(tg_prod_dim, a, (t, a, dim, keepdim));
    return reduce(t, &prod_k, a, dim, keepdim, 0, 0, NULL);
}
tg_tensor *tg_var_dim(tg_tape *t, tg_tensor *a, int dim, double correction, bool keepdim)
{
    TG_DISPATCH(tg_var_dim, a, (t, a, dim, correction, keepdim));
    if (t && !(correction >= 0)) return tg_op_fail(t, &var_k.op, "correction %g must be >= 0", correction);
    return reduce(t, &var_k, a, dim, keepdim, correction, 0, NULL);
}
tg_tensor *tg_std_dim(tg_tape *t, tg_tensor *a, int dim, double correction, bool keepdim)
{
    TG_DISPATCH(tg_std_dim, a, (t, a, dim, correction, keepdim));
    if (t && !(correction >= 0)) return tg_op_fail(t, &std_k.op, "correction %g must be >= 0", correction);
    return reduce(t, &std_k, a, dim, keepdim, correction, 1, NULL);
}
tg_tensor *tg_norm_dim(tg_tape *t, tg_tensor *a, double ord, int dim, bool keepdim)
{
    TG_DISPATCH(tg_norm_dim, a, (t, a, ord, dim, keepdim));
    if (t && ord != 1 && ord != 2 && ord != INFINITY)
        return tg_op_fail(t, &norm_k.op, "ord %g is not supported (1, 2 or INFINITY)", ord);
    return reduce(t, &norm_k, a, dim, keepdim, ord, 0, isinf(ord) ? "the inf norm has no identity" : NULL);
}
tg_tensor *tg_amax(tg_tape *t, tg_tensor *a, int dim, bool keepdim)
{
    TG_DISPATCH(tg_amax, a, (t, a, dim, keepdim));
    return reduce(t, &amax_k, a, dim, keepdim, 1, 0, "no maximum");
}
tg_tensor *tg_amin(tg_tape *t, tg_tensor *a, int dim, bool keepdim)
{
    TG_DISPATCH(tg_amin, a, (t, a, dim, keepdim));
    return reduce(t, &amin_k, a, dim, keepdim, 0, 0, "no minimum");
}
tg_tensor *tg_argmax(tg_tape *t, tg_tensor *a, int dim, bool keepdim)
{
    TG_DISPATCH(tg_argmax, a, (t, a, dim, keepdim));
    return arg_reduce(t, &argmax_k, a, dim, keepdim, 1, "no maximum");
}
tg_tensor *tg_argmin(tg_tape *t, tg_tensor *a, int dim, bool keepdim)
{
    TG_DISPATCH(tg_argmin, a, (t, a, dim, keepdim));
    return arg_reduce(t, &argmin_k, a, dim, keepdim, 0, "no minimum");
}
