/* tapegrad: cross-entropy, fused log-softmax + NLL (as
 * torch.nn.functional.cross_entropy with ignore_index and reduction='mean',
 * or reduction='sum' for tg_cross_entropy_sum).
 *
 * For logits [N, V] (all dims but the last are rows) and targets [N] (a
 * tensor of int64 or int32 of logits' shape without the last dim):
 *   loss = (1 / n_valid) * sum over valid rows r of (lse_r - x[r, targets[r]])
 * with lse_r = log sum_j exp(x[r, j]) computed stably (row max subtracted).
 * A row whose target is ignore_index contributes nothing and is not
 * counted; with no valid row the loss is 0 and every grad is 0 (PyTorch gives
 * NaN there).
 *   dlogits[r, j] = (softmax(x_r)_j - [j == targets[r]]) / n_valid * dloss
 * The sum drops the 1 / n_valid. Gradient accumulation and data-parallel
 * training scale a sum by 1 / (the batch's valid rows) so that every row's
 * grad is the one the whole batch's mean gives.
 * The log-sum-exp of every row and an int32 copy of targets are saved (arena).
 *
 * tg_cross_entropy_ex: cross-entropy with every option of
 * torch.nn.functional's (class weights, label smoothing, probability
 * targets, reduction none / mean / sum, ignore_index) and nll_loss;
 * tg_cross_entropy above stays the model's fused fast path.
 *
 * Per row r of logits x [N, C] with logp = log_softmax(x_r), class weights
 * w (1 without), smoothing e, the row's loss is -sum_c a_c logp_c with
 *   class index y:      a_c = (1 - e) w_y [c == y] + e w_c / C
 *   probabilities q:    a_c = w_c ((1 - e) q_c + e / C)
 * (PyTorch's definition). mean divides the sum over rows by sum_r w_{y_r}
 * over the rows not ignored (index targets) or by N (probabilities).
 * With g the row's share of dloss:
 *   dx_j = g (softmax_j sum_c a_c - a_j)        dq_c = -g (1 - e) w_c logp_c
 * nll_loss of log-probabilities lp: row loss -w_y lp_y, d lp_y = -g w_y.
 * With every row ignored the mean is 0 with zero grads (tg_cross_entropy's
 * rule; PyTorch gives NaN).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "../ops.h"

typedef struct ce_ctx {
    const int32_t *targets; /* [N] arena copy */
    const double *lse;      /* [N] in double: a float lse would round away the softmax at large logits */
    double div;             /* mean: rows whose target is not ignore; sum: 1; 0: no such row */
    int ignore;
} ce_ctx;

/* loss [] <- logits [N, V]: dlogits += (softmax - onehot) * dloss / div
 * (div: n_valid for the mean, 1 for the sum). */
TG_BACKWARD(cross_entropy_backward, ce_ctx)
{
    const ce_ctx *s = ctx;
    tg_tensor *x = in[0];
    tg_real *dx = tg_grad(t, x);  /* zero when every target is ignored */
    if (!dx || s->div == 0) return;
    size_t rows = tg_rows(x);
    int V = tg_cols(x), ignore = s->ignore;
    tg_real g = (tg_real)(out->grad[0] / s->div);
    for (size_t r = 0; r < rows; r++) {
        int y = s->targets[r];
        if (y == ignore) continue;
        const tg_real *xr = x->data + r * V;
        tg_real *dr = dx + r * V;
        double lse = s->lse[r];
        for (int j = 0; j < V; j++) dr[j] += g * (tg_real)exp((double)xr[j] - lse);
        dr[y] -= g;
    }
}

/* log sum exp of one row, in double, max subtracted (the fused path's bits) */
static double row_lse_fused(const tg_real *x, int V)
{
    tg_real mx = x[0];
    for (int j = 1; j < V; j++)
        if (x[j] > mx) mx = x[j];
    double s = 0;
    for (int j = 0; j < V; j++) s += exp((double)(x[j] - mx));
    return (double)mx + log(s);
}

/* The class targets y of logits x [..., C] (C >= 1) as an int32 arena copy:
 * y is int64 or int32 of x's shape without the last dim, each value in
 * [0, C) or, with ignore, ignore_index. NULL and op's error otherwise. */
static int32_t *targets_read(tg_tape *t, const tg_op *op, const tg_tensor *x, tg_tensor *y, bool ignore,
                             int ignore_index)
{
    char sx[TG_SHAPE_STR], sy[TG_SHAPE_STR];
    if (y->magic == TG_TENSOR_LIVE && y->dtype != TG_I64 && y->dtype != TG_I32)
        return tg_op_fail(t, op, "class targets are %s, not int64 or int32%s", tg_dtype_name(y->dtype),
                          tg_dtype_is_float(y->dtype) ? " (probabilities are tg_cross_entropy_ex's probs)" : ""),
               NULL;
    if (!tg_inputs_check_dtype(t, op, y->dtype, (tg_tensor *[]){NULL, y}, 2, 0)) return NULL;
    if (y->ndim != x->ndim - 1 || (y->ndim && memcmp(y->shape, x->shape, (size_t)y->ndim * sizeof *y->shape)))
        return tg_op_fail(t, op, "targets %s must have the shape of logits %s without the class dim (the last)",
                          tg_shape_str(y, sy), tg_shape_str(x, sx)),
               NULL;
    int C = tg_cols(x);
    int32_t *c = tg_arena_alloc(t, (y->size ? y->size : 1) * sizeof *c, op->name);
    if (!c) return NULL;
    for (size_t r = 0; r < y->size; r++) {
        int64_t v = y->dtype == TG_I64 ? ((const int64_t *)y->data)[r] : ((const int32_t *)y->data)[r];
        if (!(ignore && v == ignore_index) && (v < 0 || v >= C))
            return tg_op_fail(t, op, "target %lld at position %zu is out of range [0, %d) (logits %s, %s %d)",
                              (long long)v, r, C, tg_shape_str(x, sx), ignore ? "ignore_index" : "ignoring no",
                              ignore_index),
                   NULL;
        c[r] = (int32_t)v;
    }
    return c;
}

TG_OP(cross_entropy_op, "tg_cross_entropy", cross_entropy_backward, ce_ctx);
TG_OP(cross_entropy_sum_op, "tg_cross_entropy_sum", cross_entropy_backward, ce_ctx);

static tg_tensor *cross_entropy(tg_tape *t, tg_tensor *logits, tg_tensor *target_tensor, int ignore_index,
                                const tg_op *op)
{
    const char *name = op->name;
    bool mean = op == &cross_entropy_op;
    if (!tg_inputs_check(t, op, &logits, 1, 1)) return NULL;
    if (!target_tensor) return tg_fail_null(t, name);
    char sx[TG_SHAPE_STR];
    if (logits->ndim < 1 || tg_cols(logits) < 1)
        return tg_op_fail(t, op, "logits must be [..., V] with V >= 1, got %s", tg_shape_str(logits, sx));
    const int32_t *targets = targets_read(t, op, logits, target_tensor, true, ignore_index);
    if (!targets) return NULL;
    tg_tensor *out = tg_new(t, op, 0, NULL);
    if (!out) return NULL;
    size_t rows = tg_rows(logits);
    int V = tg_cols(logits);
    bool need = tg_needs_grad(t, &logits, 1);
    ce_ctx c = {.ignore = ignore_index, .targets = targets};
    double *lse = NULL;
    if (need) {
        lse = tg_arena_alloc(t, rows * sizeof *lse, "tg_cross_entropy saved state");
        if (!lse) return NULL;
        c.lse = lse;
    }
    double sum = 0;
    size_t n_valid = 0;
    for (size_t r = 0; r < rows; r++) {
        int y = targets[r];
        if (y == ignore_index) continue;
        const tg_real *xr = logits->data + r * V;
        double l = row_lse_fused(xr, V);
        if (lse) lse[r] = l;
        sum += l - (double)xr[y];
        n_valid++;
    }
    double div = mean ? (double)n_valid : 1;
    out->data[0] = n_valid ? (tg_real)(sum / div) : 0;
    c.div = n_valid ? div : 0;
    if (!tg_op_record(t, op, out, &logits, 1, &c)) return NULL;
    return tg_op_done(t, op, out);
}

tg_tensor *tg_cross_entropy(tg_tape *t, tg_tensor *logits, tg_tensor *targets, int ignore_index)
{
    TG_DISPATCH(tg_cross_entropy, logits, (t, logits, targets, ignore_index));
    return cross_entropy(t, logits, targets, ignore_index, &cross_entropy_op);
}

tg_tensor *tg_cross_entropy_sum(tg_tape *t, tg_tensor *logits, tg_tensor *targets, int ignore_index)
{
    TG_DISPATCH(tg_cross_entropy_sum, logits, (t, logits, targets, ignore_index));
    return cross_entropy(t, logits, targets, ignore_index, &cross_entropy_sum_op);
}

/* ---- with options, nll_loss ------------------------------------------------- */

typedef struct ce_ex_ctx {
    const int32_t *targets;  /* [N] arena copy, or NULL (probabilities) */
    const double *lse;       /* [N] */
    tg_ce_opts o;
    double div;              /* the mean's divisor (1 for sum and none); 0: nothing counted */
    bool nll;
} ce_ex_ctx;

static double class_w(const tg_ce_opts *o, int c) { return o->weight ? (double)o->weight->data[c] : 1; }

/* a_c of row r into a [C]; returns sum_c a_c */
static double row_coeffs(const ce_ex_ctx *c, const tg_tensor *probs, size_t r, int C, double *a)
{
    double e = c->o.label_smoothing, sum = 0;
    for (int j = 0; j < C; j++) {
        double w = class_w(&c->o, j);
        a[j] = probs ? w * ((1 - e) * (double)probs->data[r * (size_t)C + (size_t)j] + e / C) : e * w / C;
    }
    if (!probs) a[c->targets[r]] += (1 - e) * class_w(&c->o, c->targets[r]);
    for (int j = 0; j < C; j++) sum += a[j];
    return sum;
}

/* the share of dloss of row r */
static double row_g(const ce_ex_ctx *c, const tg_tensor *out, size_t r)
{
    return c->o.reduction == TG_NONE ? (double)out->grad[r] : (double)out->grad[0] / c->div;
}

/* loss <- x [N, C] (and probs [N, C]) */
TG_BACKWARD(ce_ex_backward, ce_ex_ctx)
{
    const ce_ex_ctx *c = ctx;
    tg_tensor *x = in[0], *probs = in[1];
    size_t N = tg_rows(x);
    int C = tg_cols(x);
    tg_real *dx = x->requires_grad ? tg_grad(t, x) : NULL;  /* zero when nothing counts */
    tg_real *dq = probs && probs->requires_grad ? tg_grad(t, probs) : NULL;
    if ((x->requires_grad && !dx) || (probs && probs->requires_grad && !dq) || c->div == 0) return;
    double *a = tg_arena_scratch(t, (size_t)C * sizeof *a, "cross-entropy backward");
    if (!a) return;
    for (size_t r = 0; r < N; r++) {
        if (c->targets && c->o.ignore && c->targets[r] == c->o.ignore_index) continue;
        const tg_real *xr = x->data + r * (size_t)C;
        double g = row_g(c, out, r);
        if (c->nll) {
            if (dx) dx[r * (size_t)C + (size_t)c->targets[r]] -= (tg_real)(g * class_w(&c->o, c->targets[r]));
            continue;
        }
        double sa = row_coeffs(c, probs, r, C, a);
        for (int j = 0; j < C; j++) {
            double lp = (double)xr[j] - c->lse[r];
            if (dx) dx[r * (size_t)C + (size_t)j] += (tg_real)(g * (exp(lp) * sa - a[j]));
            if (dq) dq[r * (size_t)C + (size_t)j] -= (tg_real)(g * (1 - c->o.label_smoothing) * class_w(&c->o, j) * lp);
        }
    }
    tg_arena_release(t, a, (size_t)C * sizeof *a);
}

TG_OP(ce_ex_op, "tg_cross_entropy_ex", ce_ex_backward, ce_ex_ctx);
TG_OP(nll_op, "tg_nll_loss", ce_ex_backward, ce_ex_ctx);

static double row_lse(const tg_real *x, int C)
{
    double mx = -INFINITY, s = 0;
    for (int j = 0; j < C; j++) mx = (double)x[j] > mx || isnan((double)x[j]) ? (double)x[j] : mx;
    if (isinf(mx)) return mx;
    for (int j = 0; j < C; j++) s += exp((double)x[j] - mx);
    return mx + log(s);
}

static bool ce_ex_check(tg_tape *t, const char *op, const tg_tensor *x, const tg_tensor *targets,
                        const tg_tensor *probs, const tg_ce_opts *o)
{
    char sx[TG_SHAPE_STR], s2[TG_SHAPE_STR];
    int C = x->ndim ? tg_cols(x) : 0;
    if (x->ndim < 1 || C < 1)
        return tg_fail(t, "%s: logits must be [..., C] with C >= 1, got %s", op, tg_shape_str(x, sx)), false;
    if (!targets && !probs)  /* tg_nll_loss takes no probabilities */
        return tg_fail(t, "%s: the targets are NULL%s", op,
                       strcmp(op, "tg_nll_loss") ? " (give class targets or probabilities, exactly one of them)" : ""),
               false;
    if (targets && probs)
        return tg_fail(t, "%s: give class targets or probabilities, exactly one of them", op), false;
    if (probs && !tg_shape_equal(x, probs))
        return tg_fail(t, "%s: probabilities %s must have the logits' shape %s", op, tg_shape_str(probs, s2),
                       tg_shape_str(x, sx)), false;
    if (o->weight && (o->weight->ndim != 1 || o->weight->shape[0] != C))
        return tg_fail(t, "%s: weight %s must be [C] = [%d] (logits %s)", op, tg_shape_str(o->weight, s2), C,
                       tg_shape_str(x, sx)), false;
    if (!(o->label_smoothing >= 0 && o->label_smoothing <= 1))
        return tg_fail(t, "%s: label_smoothing %g must be in [0, 1]", op, o->label_smoothing), false;
    if (o->reduction != TG_MEAN && o->reduction != TG_SUM && o->reduction != TG_NONE)
        return tg_fail(t, "%s: reduction %d is not TG_MEAN, TG_SUM or TG_NONE", op, (int)o->reduction), false;
    return true;
}

static tg_tensor *ce_ex(tg_tape *t, const tg_op *op, tg_tensor *x, tg_tensor *target_tensor, tg_tensor *probs,
                        const tg_ce_opts *opts)
{
    const char *name = op->name;
    tg_ce_opts o = opts ? *opts : (tg_ce_opts)TG_CE_OPTS_DEFAULT;
    tg_tensor *in[3] = {x, probs, o.weight};
    if (!tg_inputs_check(t, op, (tg_tensor *[]){x, NULL, probs, o.weight}, 4, 1) ||
        !ce_ex_check(t, name, x, target_tensor, probs, &o))
        return NULL;
    const int32_t *targets = NULL;
    if (target_tensor && !(targets = targets_read(t, op, x, target_tensor, o.ignore, o.ignore_index))) return NULL;
    bool nll = op == &nll_op;
    if (nll && (probs || o.label_smoothing != 0))
        return tg_fail(t, "%s: takes class targets and no label_smoothing (use tg_cross_entropy_ex)", name);
    size_t N = tg_rows(x);
    int C = tg_cols(x);
    tg_tensor *out = o.reduction == TG_NONE ? tg_new(t, op, x->ndim - 1, x->shape) : tg_new(t, op, 0, NULL);
    double *lse = tg_arena_alloc(t, (N ? N : 1) * sizeof *lse, name);
    double *a = lse ? tg_arena_scratch(t, (size_t)C * sizeof *a, name) : NULL;
    if (!out || !a) return NULL;
    ce_ex_ctx c = {targets, lse, o, 0, nll};
    double sum = 0, div = 0;
    for (size_t r = 0; r < N; r++) {
        const tg_real *xr = x->data + r * (size_t)C;
        double l = 0;
        if (targets && o.ignore && targets[r] == o.ignore_index) {
            lse[r] = 0;
        } else if (nll) {
            l = -class_w(&o, targets[r]) * (double)xr[targets[r]];
            div += class_w(&o, targets[r]);
        } else {
            lse[r] = row_lse(xr, C);
            row_coeffs(&c, probs, r, C, a);
            for (int j = 0; j < C; j++) l -= a[j] == 0 ? 0 : a[j] * ((double)xr[j] - lse[r]);
            div += probs ? 1 : class_w(&o, targets[r]);
        }
        if (o.reduction == TG_NONE) out->data[r] = (tg_real)l;
        sum += l;
    }
    tg_arena_release(t, a, (size_t)C * sizeof *a);
    if (o.reduction == TG_MEAN) {
        c.div = div;
        out->data[0] = div != 0 ? (tg_real)(sum / div) : 0;
    } else {
        c.div = 1;
        if (o.reduction == TG_SUM) out->data[0] = (tg_real)sum;
    }
    if (!tg_op_record(t, op, out, in, 2, &c)) return NULL;
    return tg_op_done(t, op, out);
}

tg_tensor *tg_cross_entropy_ex(tg_tape *t, tg_tensor *logits, tg_tensor *targets, tg_tensor *probs,
                               const tg_ce_opts *opts)
{
    TG_DISPATCH_SAME(tg_cross_entropy_ex, (t, logits, targets, probs, opts), logits, probs);
    return ce_ex(t, &ce_ex_op, logits, targets, probs, opts);
}

tg_tensor *tg_nll_loss(tg_tape *t, tg_tensor *logp, tg_tensor *targets, const tg_ce_opts *opts)
{
    TG_DISPATCH(tg_nll_loss, logp, (t, logp, targets, opts));
    return ce_ex(t, &nll_op, logp, targets, NULL, opts);
}
