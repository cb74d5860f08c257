/* tapegrad: sum, mean, max, min and logsumexp along one dim (of every
 * element: all.c; prod, var, amax ... along a dim: stats.c).
 *
 * Along dim d, a is read as [outer, n, inner] (n = a.shape[d]) and out is
 * [outer, inner]: a's shape without dim d, or with it as 1 when keepdim.
 * dim counts from the end when negative (-1 is the last); a 0-d tensor takes
 * dim 0 or -1 and reduces over its one element, as PyTorch. With g = dout:
 *   sum        y = sum_k x_k                    dx_k = g
 *   mean       y = sum_k x_k / n                dx_k = g / n      (n = 0: NaN)
 *   max        y = max_k x_k (NaN if any)       dx_k = g at the first maximum, 0 elsewhere
 *   min        y = min_k x_k (NaN if any)       dx_k = g at the first minimum, 0 elsewhere
 *   logsumexp  y = m + log sum_k exp(x_k - m)   dx_k = g exp(x_k - y)
 *              (m = max_k x_k; all -inf gives y = -inf and zero grad)
 * Each output element is one sum in a fixed order (8 lanes along a row, or
 * rows added in order down a column), cut across the pool by output element:
 * the same bits on any number of threads.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"
#include "../../kernels/vmath.h"

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_LSE, R_COUNT };

/* a as [outer, n, inner]; out [outer, inner] */
typedef struct red_dims {
    size_t outer, n, inner;
} red_dims;

/* a's dims around dim d (0 for a 0-d tensor) */
static red_dims red_dims_of(const tg_tensor *a, int d)
{
    red_dims r = {1, a->ndim ? (size_t)a->shape[d] : 1, 1};
    for (int i = 0; i < a->ndim; i++) {
        if (i < d) r.outer *= (size_t)a->shape[i];
        if (i > d) r.inner *= (size_t)a->shape[i];
    }
    return r;
}

/* dim resolved (negative counts from the end) into *d and out's shape; false
 * with the tape's error naming the op, the dim and a's shape. */
static bool red_plan(tg_tape *t, const char *op, const tg_tensor *a, int dim, bool keepdim, int *d,
                     int *ndim, int *shape)
{
    int nd = a->ndim ? a->ndim : 1;
    *d = dim < 0 ? dim + nd : dim;
    if (*d < 0 || *d >= nd) {
        char sa[TG_SHAPE_STR];
        tg_fail(t, "%s: dim %d is out of range for a %s (dims %d to %d)", op, dim, tg_shape_str(a, sa), -nd,
                nd - 1);
        return false;
    }
    *ndim = 0;
    for (int i = 0; i < a->ndim; i++)
        if (i != *d || keepdim) shape[(*ndim)++] = i == *d ? 1 : a->shape[i];
    return true;
}

/* sum_k exp(x_k - m) over a row, in 8 lanes as tg_row_sum */
#define LANES 8
static inline tg_real row_sum_exp(const tg_real *x, size_t n, tg_real m)
{
    tg_real s[LANES] = {0};
    size_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int k = 0; k < LANES; k++) s[k] += tg_vexp(x[j + k] - m);
    for (int k = 0; j < n; j++, k++) s[k] += tg_vexp(x[j] - m);
    for (int k = 1; k < LANES; k++) s[0] += s[k];
    return s[0];
}

/* Column max (min: column min) of x [n, stride] over columns [0, len) into
 * y [len], with the index of the first maximum (minimum) in at [len]; a NaN
 * wins (the first one), as in PyTorch; n = 0 gives -inf (inf). Inlined with
 * min a constant: one loop each. */
static inline void col_extreme(const tg_real *x, size_t n, size_t stride, size_t len, tg_real *y, int32_t *at,
                               bool min)
{
    for (size_t c = 0; c < len; c++) y[c] = min ? INFINITY : -INFINITY, at[c] = 0;
    for (size_t k = 0; k < n; k++)
        for (size_t c = 0; c < len; c++) {
            tg_real v = x[k * stride + c];
            if ((min ? v < y[c] : v > y[c]) || (v != v && y[c] == y[c])) y[c] = v, at[c] = (int32_t)k;
        }
}

static void col_max(const tg_real *x, size_t n, size_t stride, size_t len, tg_real *y, int32_t *at)
{
    col_extreme(x, n, stride, len, y, at, false);
}

static void col_min(const tg_real *x, size_t n, size_t stride, size_t len, tg_real *y, int32_t *at)
{
    col_extreme(x, n, stride, len, y, at, true);
}

typedef struct red_job {
    int kind;
    red_dims r;
    const tg_real *x, *g, *y;
    tg_real *out, *dx;
    int32_t *at;           /* max, min: index of the first extreme per output element */
} red_job;

#define RED_COLS 256       /* columns reduced together (a stack block for logsumexp) */

/* y [len] = reduction of x [n, inner] over its n rows, columns [0, len) */
static void reduce_cols(const red_job *j, const tg_real *x, tg_real *y, int32_t *at, size_t len)
{
    size_t n = j->r.n, inner = j->r.inner;
    if (j->kind == R_MIN) {
        int32_t tmp[RED_COLS];
        col_min(x, n, inner, len, y, at ? at : tmp);
        return;
    }
    if (j->kind == R_MAX || j->kind == R_LSE) {
        int32_t tmp[RED_COLS];
        col_max(x, n, inner, len, y, at ? at : tmp);
        if (j->kind == R_MAX) return;
        tg_real s[RED_COLS] = {0};
        for (size_t k = 0; k < n; k++)
            for (size_t c = 0; c < len; c++) s[c] += tg_vexp(x[k * inner + c] - y[c]);
        for (size_t c = 0; c < len; c++) y[c] = isinf(y[c]) ? y[c] : y[c] + (tg_real)log(s[c]);
        return;
    }
    for (size_t c = 0; c < len; c++) y[c] = 0;
    for (size_t k = 0; k < n; k++)
        for (size_t c = 0; c < len; c++) y[c] += x[k * inner + c];
    if (j->kind == R_MEAN)
        for (size_t c = 0; c < len; c++) y[c] /= (tg_real)n;
}

/* y = reduction of one row x [n] (inner == 1) */
static void reduce_row(const red_job *j, const tg_real *x, tg_real *y, int32_t *at)
{
    size_t n = j->r.n;
    switch (j->kind) {
    case R_SUM: *y = tg_row_sum(x, n); break;
    case R_MEAN: *y = tg_row_sum(x, n) / (tg_real)n; break;
    case R_MIN: {
        int32_t tmp;
        col_min(x, n, 1, 1, y, at ? at : &tmp);
        break;
    }
    default: {
        int32_t tmp;
        col_max(x, n, 1, 1, y, at ? at : &tmp);
        if (j->kind == R_LSE && !isinf(*y)) *y += (tg_real)log(row_sum_exp(x, n, *y));
    }
    }
}

/* dx [n, inner] += d y / d x * g for columns [0, len) */
static void grad_cols(const red_job *j, const tg_real *x, tg_real *dx, const tg_real *g, const tg_real *y,
                      const int32_t *at, size_t len)
{
    size_t n = j->r.n, inner = j->r.inner;
    if (j->kind == R_MAX || j->kind == R_MIN) {
        for (size_t c = 0; c < len; c++) dx[(size_t)at[c] * inner + c] += g[c];
    } else if (j->kind == R_LSE) {
        for (size_t k = 0; k < n; k++)
            for (size_t c = 0; c < len; c++)
                dx[k * inner + c] += y[c] == -INFINITY ? 0 : g[c] * tg_vexp(x[k * inner + c] - y[c]);
    } else {
        tg_real s = j->kind == R_MEAN ? 1 / (tg_real)n : 1;
        for (size_t k = 0; k < n; k++)
            for (size_t c = 0; c < len; c++) dx[k * inner + c] += g[c] * s;
    }
}

/* Output elements [begin, end), in blocks of up to RED_COLS columns of one
 * outer index: forward when dx is NULL, else backward. */
static void red_piece(void *ctx, size_t begin, size_t end)
{
    const red_job *j = ctx;
    size_t n = j->r.n, inner = j->r.inner;
    for (size_t e = begin; e < end;) {
        size_t o = e / inner, c = e % inner, len = inner - c;
        if (len > end - e) len = end - e;
        if (len > RED_COLS) len = RED_COLS;
        size_t xo = o * n * inner + c;
        int32_t *at = j->at ? j->at + e : NULL;
        if (j->dx)
            grad_cols(j, j->x + xo, j->dx + xo, j->g + e, j->y + e, at, len);
        else if (inner == 1)
            reduce_row(j, j->x + xo, j->out + e, at);
        else
            reduce_cols(j, j->x + xo, j->out + e, at, len);
        e += len;
    }
}

/* One-thread time per output element: 0.2 ns per input element it reduces
 * (bench/bench_threads: sum_dim over rows of 64, 13 ns a row) */
static double red_ns(const red_dims *r) { return 0.2 * (double)(r->n + 1); }

typedef struct reduce_ctx {
    int kind;         /* R_SUM ... */
    int dim;          /* the reduced dim, >= 0 */
    int32_t *at;      /* tg_max_dim, tg_min_dim: where each extreme was [out->size] (arena), else NULL */
} reduce_ctx;

/* out = reduction of a along dim */
TG_BACKWARD(reduce_dim_backward, reduce_ctx)
{
    const reduce_ctx *c = ctx;
    tg_tensor *a = in[0];
    tg_real *dx = tg_grad(t, a);
    if (!dx) return;
    red_job j = {.kind = c->kind, .r = red_dims_of(a, c->dim), .x = a->data, .g = out->grad, .y = out->data,
                 .dx = dx, .at = c->at};
    tg_parallel_range(out->size, red_ns(&j.r), red_piece, &j);
}

#define REDUCE_OP(name) {name, reduce_dim_backward, sizeof(reduce_ctx)}
static const tg_op reduce_ops[] = {
    [R_SUM] = REDUCE_OP("tg_sum_dim"),
    [R_MEAN] = REDUCE_OP("tg_mean_dim"),
    [R_MAX] = REDUCE_OP("tg_max_dim"),
    [R_MIN] = REDUCE_OP("tg_min_dim"),
    [R_LSE] = REDUCE_OP("tg_logsumexp_dim"),
};
_Static_assert(sizeof reduce_ops / sizeof *reduce_ops == R_COUNT, "a reduction without its op");

static tg_tensor *reduce_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim, int kind)
{
    const tg_op *rec = &reduce_ops[kind];
    const char *op = rec->name;
    if (!tg_inputs_check(t, rec, &a, 1, 1)) return NULL;
    int d, nd, shape[TG_MAX_DIMS];
    if (!red_plan(t, op, a, dim, keepdim, &d, &nd, shape)) return NULL;
    red_dims r = red_dims_of(a, d);
    bool extreme = kind == R_MAX || kind == R_MIN;
    if (extreme && r.n == 0) {
        char sa[TG_SHAPE_STR];
        return tg_fail(t, "%s: dim %d of a %s has size 0: no %s", op, dim, tg_shape_str(a, sa),
                       kind == R_MAX ? "maximum" : "minimum");
    }
    tg_tensor *out = tg_new(t, rec, nd, shape);
    if (!out) return NULL;
    bool need = tg_needs_grad(t, &a, 1);
    int32_t *at = NULL;
    const char *what = kind == R_MAX ? "tg_max_dim indices" : "tg_min_dim indices";
    if (extreme && need && !(at = tg_arena_alloc(t, out->size * sizeof *at, what))) return NULL;
    red_job j = {.kind = kind, .r = r, .x = a->data, .out = out->data, .at = at};
    tg_parallel_range(out->size, red_ns(&r), red_piece, &j);
    if (!tg_op_record(t, rec, out, &a, 1, &(reduce_ctx){kind, d, at})) return NULL;
    return tg_op_done(t, rec, out);
}

tg_tensor *tg_sum_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim)
{
    TG_DISPATCH(tg_sum_dim, a, (t, a, dim, keepdim));
    return reduce_dim(t, a, dim, keepdim, R_SUM);
}
tg_tensor *tg_mean_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim)
{
    TG_DISPATCH(tg_mean_dim, a, (t, a, dim, keepdim));
    return reduce_dim(t, a, dim, keepdim, R_MEAN);
}
tg_tensor *tg_max_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim)
{
    TG_DISPATCH(tg_max_dim, a, (t, a, dim, keepdim));
    return reduce_dim(t, a, dim, keepdim, R_MAX);
}
tg_tensor *tg_min_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim)
{
    TG_DISPATCH(tg_min_dim, a, (t, a, dim, keepdim));
    return reduce_dim(t, a, dim, keepdim, R_MIN);
}
tg_tensor *tg_logsumexp_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim)
{
    TG_DISPATCH(tg_logsumexp_dim, a, (t, a, dim, keepdim));
    return reduce_dim(t, a, dim, keepdim, R_LSE);
}
