/* tapegrad: the engine of the pointwise table (the rows of math.c,
 * activation.c, compare.c and the elementwise losses; core/ops/internal.h).
 *
 * A row with vectorised loops (vf, vdf) has one operand: out has its shape,
 * and both directions run the loops over pieces cut across the pool. For
 * the others, out has the broadcast shape of the operands (NumPy's rule, as tg_add);
 * operand k's element for out element e is found through its strides in
 * out's dims (0 where it is stretched). Values are computed in double and
 * rounded once. Backward, with g = dout:
 *   d in_k [e_k] += g[e] * df(k, v(e), y[e])
 * summed over every out element e that reads e_k, in out's order (one pass,
 * one thread: the same bits on any thread count). A single operand as large
 * as out is cut across the pool in both directions.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

/* out's shape and each operand's stride along each of out's dims */
typedef struct pw_plan {
    int nd, n_in;
    bool flat;  /* every operand has out's shape: operand offsets are e */
    int shape[TG_MAX_DIMS];
    size_t stride[TG_PW_MAX_IN][TG_MAX_DIMS];
} pw_plan;

static bool pw_plan_make(tg_tensor *const *in, int n_in, pw_plan *pl)
{
    int nd = 0;
    for (int k = 0; k < n_in; k++)
        if (in[k]->ndim > nd) nd = in[k]->ndim;
    pl->nd = nd;
    pl->n_in = n_in;
    pl->flat = true;
    for (int d = 0; d < nd; d++) pl->shape[d] = 1;
    for (int k = 0; k < n_in; k++) {
        size_t s = 1;
        int off = nd - in[k]->ndim;
        for (int d = nd - 1; d >= 0; d--) {
            int n = d >= off ? in[k]->shape[d - off] : 1;
            if (n != 1 && pl->shape[d] != 1 && pl->shape[d] != n) return false;
            if (n != 1) pl->shape[d] = n;
            pl->stride[k][d] = n == 1 ? 0 : s;
            s *= (size_t)n;
        }
    }
    for (int k = 0; k < n_in; k++) pl->flat &= in[k]->ndim == nd;
    for (int d = 0; d < nd; d++)
        for (int k = 0; k < n_in; k++) pl->flat &= in[k]->shape[d] == pl->shape[d];
    return true;
}

/* operand offsets of out element e */
static void pw_offsets(const pw_plan *pl, size_t e, size_t *off)
{
    for (int k = 0; k < pl->n_in; k++) off[k] = pl->flat ? e : 0;
    if (pl->flat) return;
    for (int d = pl->nd - 1; d >= 0; d--) {
        size_t i = e % (size_t)pl->shape[d];
        e /= (size_t)pl->shape[d];
        for (int k = 0; k < pl->n_in; k++) off[k] += i * pl->stride[k][d];
    }
}

typedef struct pw_job {
    const pw_plan *pl;
    const tg_pw_kind *kind;
    const double *p;
    tg_tensor *const *in;
    tg_real *y;
    uint8_t *yb;           /* a bool kind's out, instead of y */
    const tg_real *g;
    int which;             /* backward: the operand whose grad is made */
    tg_real *dx;
} pw_job;

static void pw_piece(void *ctx, size_t begin, size_t end)
{
    const pw_job *j = ctx;
    const tg_pw_kind *k = j->kind;
    size_t off[TG_PW_MAX_IN];
    double v[TG_PW_MAX_IN];
    for (size_t e = begin; e < end; e++) {
        pw_offsets(j->pl, e, off);
        for (int i = 0; i < k->n_in; i++) v[i] = (double)j->in[i]->data[off[i]];
        if (j->yb) {
            j->yb[e] = k->f(v, j->p) != 0;
        } else if (!j->dx) {
            j->y[e] = (tg_real)k->f(v, j->p);
        } else {
            double g = (double)j->g[e];
            /* g times the slope even where g is 0 (0 * inf is NaN), as PyTorch */
            j->dx[off[j->which]] += (tg_real)(g * k->df(j->which, v, (double)j->y[e], j->p));
        }
    }
}

/* 1 ns an element: a libm call */
#define PW_NS 1.0

/* One pass of a vectorised row over [begin, end): y = f(x) when dx is NULL,
 * else dx (+)= g f'(x). */
typedef struct vec_job {
    const tg_pw_kind *kind;
    tg_real *y, *dx, s, s2;
    const tg_real *x, *g;
    bool store;  /* dx was just made: store, do not add */
} vec_job;

static void vec_piece(void *ctx, size_t begin, size_t end)
{
    const vec_job *j = ctx;
    size_t n = end - begin;
    if (j->dx)
        j->kind->vdf(j->store, j->dx + begin, j->g + begin, j->x + begin, j->y + begin, n, j->s, j->s2);
    else
        j->kind->vf(j->y + begin, j->x + begin, n, j->s, j->s2);
}

TG_BACKWARD_SHARED(tg_pw_backward, tg_pw_ctx)
{
    if (ctx->kind->vdf) {
        tg_tensor *a = in[0];
        tg_real beta;
        tg_real *dx = tg_grad_write(t, a, &beta);
        if (!dx) return;
        vec_job j = {ctx->kind, out->data, dx, (tg_real)ctx->p[0], (tg_real)ctx->p[1], a->data, out->grad, beta == 0};
        tg_parallel_range(a->size, ctx->kind->ns, vec_piece, &j);
        return;
    }
    pw_plan pl;
    pw_plan_make(in, ctx->kind->n_in, &pl);
    for (int k = 0; k < ctx->kind->n_in; k++) {
        if (!(ctx->kind->grads >> k & 1) || !in[k]->requires_grad) continue;
        tg_real *dx = tg_grad(t, in[k]);
        if (!dx) return;
        pw_job j = {&pl, ctx->kind, ctx->p, in, out->data, NULL, out->grad, k, dx};
        if (in[k]->size == out->size)
            tg_parallel_range(out->size, PW_NS, pw_piece, &j);
        else
            pw_piece(&j, 0, out->size);
    }
}

bool tg_promote(tg_tape *t, const tg_op *op, tg_tensor **x, int n)
{
    bool mixed = false;
    for (int k = 0; k < n; k++) mixed |= x[k] && x[k]->magic == TG_TENSOR_LIVE && x[k]->dtype != TG_REAL_DTYPE;
    if (!mixed) return true;
    /* every operand present and live first, in order, so that a bad one is named before another's dtype */
    if (!t) return tg_inputs_check(t, op, x, n, n);
    for (int k = 0; k < n; k++) {
        tg_tensor *one[TG_PW_MAX_IN] = {NULL};
        if (!x[k]) return tg_fail_null(t, op->name), false;
        one[k] = x[k];
        if (!tg_inputs_check_dtype(t, op, x[k]->dtype, one, k + 1, 0)) return false;
    }
    bool has_float = tg_dtype_promoted(x, n) != TG_DTYPE_COUNT;
    for (int k = 0; k < n; k++) {
        /* only ever widens: this copy is reached only when no operand is wider */
        bool widen = tg_dtype_is_float(x[k]->dtype) && x[k]->dtype != TG_REAL_DTYPE;
        bool joins = has_float && tg_dtype_is_int_or_bool(x[k]->dtype);
        if ((widen || joins) && !(x[k] = tg_to(t, x[k], TG_REAL_DTYPE))) return false;
    }
    return true;
}

tg_tensor *tg_pw_apply(tg_tape *t, const tg_pw_kind *k, tg_tensor *const *operands, const double *p)
{
    const char *op = k->op.name;
    tg_tensor *in[3] = {NULL};  /* the operands, promoted */
    memcpy(in, operands, (size_t)k->n_in * sizeof *in);
    if (k->n_in > 1 && !tg_promote(t, &k->op, in, k->n_in)) return NULL;
    if (!tg_inputs_check(t, &k->op, in, k->n_in, k->n_in)) return NULL;
    tg_pw_ctx c = {k, {0}};
    if (p) memcpy(c.p, p, sizeof c.p);
    if (k->vf) {
        tg_tensor *a = in[0], *out = tg_new_like(t, &k->op, a);
        if (!out) return NULL;
        vec_job j = {k, out->data, NULL, (tg_real)c.p[0], (tg_real)c.p[1], a->data, NULL, false};
        tg_parallel_range(a->size, k->ns, vec_piece, &j);
        if (!tg_op_record(t, &k->op, out, in, 1, &c)) return NULL;
        return tg_op_done(t, &k->op, out);
    }
    pw_plan pl;
    if (!pw_plan_make(in, k->n_in, &pl)) {
        char s[TG_PW_MAX_IN][TG_SHAPE_STR];
        for (int i = 0; i < k->n_in; i++) tg_shape_str(in[i], s[i]);
        return tg_fail(t, "%s: shapes do not broadcast: %s%s%s%s%s (aligned from the last dim, each pair of dims must be equal or one of them 1)",
                       op, s[0], k->n_in > 1 ? ", " : "", k->n_in > 1 ? s[1] : "", k->n_in > 2 ? ", " : "",
                       k->n_in > 2 ? s[2] : "");
    }
    tg_tensor *out = tg_new_op(t, &k->op, k->to_bool ? TG_BOOL : TG_REAL_DTYPE, pl.nd, pl.shape);
    if (!out) return NULL;
    pw_job j = {&pl, k, c.p, in, k->to_bool ? NULL : out->data, k->to_bool ? (uint8_t *)out->data : NULL, NULL, 0, NULL};
    tg_parallel_range(out->size, PW_NS, pw_piece, &j);
    bool diff = false;
    for (int i = 0; i < k->n_in; i++) diff |= (k->grads >> i & 1) && in[i]->requires_grad;
    if (diff && !tg_op_record(t, &k->op, out, in, k->n_in, &c)) return NULL;
    return tg_op_done(t, &k->op, out);
}
