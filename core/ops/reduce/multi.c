/* tapegrad: reductions over several dims at once (PyTorch's dim=(d0, d1, ..)).
 * Each input element i goes to one output element o(i); with N the count per
 * output, m the mean, c the correction, g = d out, y = out:
 *   mean  y = sum x / N                          d x[i] += g / N
 *   var   y = sum (x - m)^2 / max(N - c, 0)      d x[i] += g 2 (x - m) / (N - c)
 *   std   y = sqrt(var)                          d x[i] += g (x - m) / ((N - c) y)
 *   norm  vector_norm(x, p): (sum |x|^p)^(1/p); p = inf / -inf max / min |x|; p = 0 the count of x != 0
 *         d x[i] as PyTorch's norm_backward: g sgn(x) |x|^(p-1) / y^(p-1) (0 where y = 0; p < 1: 0 where
 *         x = 0), inf / -inf: g sgn(x) shared among the |x| equal to y, p = 0: none
 * dims are distinct, negative counting from the end; n = 0 reduces every
 * dim (PyTorch's dim=None). Sums run in a's row-major order: the same bits on
 * any thread count.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

enum multi_kind { MULTI_MEAN, MULTI_VAR, MULTI_STD, MULTI_NORM };

typedef struct multi_ctx {
    const size_t *off;  /* [a size] arena: o(i) */
    const tg_real *m;   /* [out size] arena: the means (var, std), the tie counts (norm inf) */
    enum multi_kind kind;
    double p, correction;
    size_t N;
} multi_ctx;

static tg_real sgn(tg_real x) { return (tg_real)((x > 0) - (x < 0)); }

/* d x[i] += g[o(i)] times the kind's derivative */
TG_BACKWARD(multi_backward, multi_ctx)
{
    const multi_ctx *c = ctx;
    tg_real *dx = tg_grad(t, in[0]);
    if (!dx) return;
    const tg_real *x = in[0]->data, *y = out->data, *g = out->grad;
    tg_real Nc = (tg_real)c->N - (tg_real)c->correction, p = (tg_real)c->p;
    for (size_t i = 0; i < in[0]->size; i++) {
        size_t o = c->off[i];
        switch (c->kind) {
        case MULTI_MEAN: dx[i] += g[o] / (tg_real)c->N; break;
        case MULTI_VAR: dx[i] += g[o] * 2 * (x[i] - c->m[o]) / Nc; break;
        case MULTI_STD: dx[i] += g[o] * (x[i] - c->m[o]) / (Nc * y[o]); break;
        case MULTI_NORM:
            if (isinf(p))
                dx[i] += sgn(x[i]) * (g[o] / c->m[o]) * (tg_real)(fabs(x[i]) == y[o]);
            else if (p == 1)
                dx[i] += sgn(x[i]) * g[o];
            else if (p < 1 && p != 0)
                dx[i] += x[i] == 0 ? 0 : sgn(x[i]) * pow(fabs(x[i]), p - 1) * g[o] * pow(y[o], 1 - p);
            else if (p > 1)
                dx[i] += y[o] == 0 ? 0 : (p < 2 ? sgn(x[i]) * pow(fabs(x[i]), p - 1) : x[i] * pow(fabs(x[i]), p - 2))
                                             * (g[o] / pow(y[o], p - 1));
            break;
        }
    }
}

TG_OP(mean_dims_op, "tg_mean_dims", multi_backward, multi_ctx);
TG_OP(var_dims_op, "tg_var_dims", multi_backward, multi_ctx);
TG_OP(std_dims_op, "tg_std_dims", multi_backward, multi_ctx);
TG_OP(norm_dims_op, "tg_norm_dims", multi_backward, multi_ctx);

/* out (of a reduced over dims) and o(i) in off; N in *N. */
static tg_tensor *multi_out(tg_tape *t, const tg_op *op, tg_tensor *a, const int *dims, int n, bool keepdim,
                            size_t **off, size_t *N)
{
    char sa[TG_SHAPE_STR];
    if (n < 0 || n > TG_MAX_DIMS || (n && !dims))
        return tg_fail(t, "%s: %d dims (dims %s) for a %s", op->name, n, dims ? "given" : "NULL", tg_shape_str(a, sa));
    bool red[TG_MAX_DIMS] = {false};
    for (int k = 0; k < n; k++) {
        int d;
        if (!tg_dim_resolve(t, op->name, a, dims[k], a->ndim ? a->ndim : 1, &d)) return NULL;
        if (red[d]) return tg_fail(t, "%s: dim %d appears twice in dims (a %s)", op->name, dims[k], tg_shape_str(a, sa));
        red[d] = true;
    }
    int shape[TG_MAX_DIMS], nd = 0, full[TG_MAX_DIMS];  /* out's shape; keepdim's */
    *N = 1;
    for (int k = 0; k < a->ndim; k++) {
        bool r = red[k] || n == 0;
        full[k] = r ? 1 : a->shape[k];
        if (r) *N *= (size_t)a->shape[k];
        if (!r || keepdim) shape[nd++] = full[k];
    }
    tg_tensor *out = tg_new(t, op, nd, shape);
    if (!out || !(*off = tg_arena_alloc(t, (a->size ? a->size : 1) * sizeof **off, op->name))) return NULL;
    ptrdiff_t st[TG_MAX_DIMS];
    tg_strides(a->ndim, full, st);
    for (int k = 0; k < a->ndim; k++)
        if (full[k] == 1) st[k] = 0;
    int i_k[TG_MAX_DIMS] = {0};
    size_t o = 0;
    for (size_t i = 0; i < a->size; i++) {
        (*off)[i] = o;
        for (int k = a->ndim - 1; k >= 0; k--) {  /* next i, row-major */
            o += (size_t)st[k];
            if (++i_k[k] < a->shape[k]) break;
            o -= (size_t)st[k] * (size_t)a->shape[k];
            i_k[k] = 0;
        }
    }
    return out;
}

/* The means of x per output in m [out size]. */
static void means(const tg_tensor *a, const size_t *off, size_t N, tg_real *m, size_t size)
{
    memset(m, 0, size * sizeof *m);
    for (size_t i = 0; i < a->size; i++) m[off[i]] += a->data[i];
    for (size_t o = 0; o < size; o++) m[o] /= (tg_real)N;
}

static tg_tensor *moments(tg_tape *t, const tg_op *op, enum multi_kind kind, tg_tensor *a, const int *dims, int n,
                          double correction, bool keepdim)
{
    if (!tg_inputs_check(t, op, &a, 1, 1)) return NULL;
    if (!(correction >= 0)) return tg_fail(t, "%s: correction %g must be >= 0", op->name, correction);
    size_t *off, N;
    tg_tensor *out = multi_out(t, op, a, dims, n, keepdim, &off, &N);
    if (!out) return NULL;
    tg_real *m = out->data;
    if (kind != MULTI_MEAN && !(m = tg_arena_alloc(t, (out->size ? out->size : 1) * sizeof *m, op->name))) return NULL;
    means(a, off, N, m, out->size);
    if (kind != MULTI_MEAN) {
        memset(out->data, 0, out->size * sizeof *out->data);
        for (size_t i = 0; i < a->size; i++) {
            tg_real d = a->data[i] - m[off[i]];
            out->data[off[i]] += d * d;
        }
        tg_real div = (tg_real)fmax((double)N - correction, 0);
        for (size_t o = 0; o < out->size; o++) {
            out->data[o] /= div;
            if (kind == MULTI_STD) out->data[o] = sqrt(out->data[o]);
        }
    }
    if (!tg_op_record(t, op, out, &a, 1, &(multi_ctx){off, m, kind, 0, correction, N})) return NULL;
    return tg_op_done(t, op, out);
}

tg_tensor *tg_mean_dims(tg_tape *t, tg_tensor *a, const int *dims, int n, bool keepdim)
{
    TG_DISPATCH(tg_mean_dims, a, (t, a, dims, n, keepdim));
    return moments(t, &mean_dims_op, MULTI_MEAN, a, dims, n, 0, keepdim);
}
tg_tensor *tg_var_dims(tg_tape *t, tg_tensor *a, const int *dims, int n, double correction, bool keepdim)
{
    TG_DISPATCH(tg_var_dims, a, (t, a, dims, n, correction, keepdim));
    return moments(t, &var_dims_op, MULTI_VAR, a, dims, n, correction, keepdim);
}
tg_tensor *tg_std_dims(tg_tape *t, tg_tensor *a, const int *dims, int n, double correction, bool keepdim)
{
    TG_DISPATCH(tg_std_dims, a, (t, a, dims, n, correction, keepdim));
    return moments(t, &std_dims_op, MULTI_STD, a, dims, n, correction, keepdim);
}

tg_tensor *tg_norm_dims(tg_tape *t, tg_tensor *a, double ord, const int *dims, int n, bool keepdim)
{
    TG_DISPATCH(tg_norm_dims, a, (t, a, ord, dims, n, keepdim));
    const tg_op *op = &norm_dims_op;
    if (!tg_inputs_check(t, op, &a, 1, 1)) return NULL;
    if (isnan(ord)) return tg_fail(t, "%s: ord is NaN", op->name);
    size_t *off, N;
    tg_tensor *out = multi_out(t, op, a, dims, n, keepdim, &off, &N);
    if (!out) return NULL;
    char sa[TG_SHAPE_STR];
    if (isinf(ord) && N == 0 && out->size)
        return tg_fail(t, "%s: the inf norm of an empty reduction of a %s has no value (PyTorch: an error too)",
                       op->name, tg_shape_str(a, sa));
    tg_real *y = out->data, p = (tg_real)ord, *ties = NULL;
    for (size_t o = 0; o < out->size; o++) y[o] = isinf(ord) ? (ord > 0 ? -INFINITY : INFINITY) : 0;
    for (size_t i = 0; i < a->size; i++) {
        tg_real v = fabs(a->data[i]), *acc = &y[off[i]];
        if (isinf(ord))
            *acc = isnan(v) || (ord > 0 ? v > *acc : v < *acc) ? v : *acc;
        else if (ord == 0)
            *acc += a->data[i] != 0;
        else
            *acc += ord == 1 ? v : ord == 2 ? v * v : pow(v, p);
    }
    if (!isinf(ord) && ord != 0 && ord != 1)
        for (size_t o = 0; o < out->size; o++) y[o] = ord == 2 ? sqrt(y[o]) : pow(y[o], 1 / p);
    if (isinf(ord) && tg_needs_grad(t, &a, 1)) {  /* the ties per output */
        if (!(ties = tg_arena_alloc(t, (out->size ? out->size : 1) * sizeof *ties, op->name))) return NULL;
        memset(ties, 0, out->size * sizeof *ties);
        for (size_t i = 0; i < a->size; i++) ties[off[i]] += fabs(a->data[i]) == y[off[i]];
    }
    if (!tg_op_record(t, op, out, &a, 1, &(multi_ctx){off, ties, MULTI_NORM, ord, 0, N})) return NULL;
    return tg_op_done(t, op, out);
}
