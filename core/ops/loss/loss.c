/* tapegrad: cross-entropy, fused log-softmax + NLL (as
 * torch.nn.functional.cross_entropy with ignore_index and reduction='mean',
 * or reduction='sum' for tg_cross_entropy_sum).
 *
 * For logits [N, V] (all dims but the last are rows) and targets [N]:
 *   loss = (1 / n_valid) * sum over valid rows r of (lse_r - x[r, targets[r]])
 * with lse_r = log sum_j exp(x[r, j]) computed stably (row max subtracted).
 * A row whose target is ignore_index contributes nothing and is not
 * counted; with no valid row the loss is 0 and every grad is 0 (PyTorch gives
 * NaN there).
 *   dlogits[r, j] = (softmax(x_r)_j - [j == targets[r]]) / n_valid * dloss
 * The sum drops the 1 / n_valid. Gradient accumulation and data-parallel
 * training scale a sum by 1 / (the batch's valid rows) so that every row's
 * grad is the one the whole batch's mean gives.
 * The log-sum-exp of every row and a copy of targets are saved (arena).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

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

/* log sum exp of one row, in double, max subtracted. */
static double row_lse(const tg_real *x, int V)
{
    tg_real mx = x[0];
    for (int j = 1; j < V; j++)
        if (x[j] > mx) mx = x[j];
    double s = 0;
    for (int j = 0; j < V; j++) s += exp((double)(x[j] - mx));
    return (double)mx + log(s);
}

static bool ce_check(tg_tape *t, const char *op, const tg_tensor *x, const int32_t *targets, int n,
                     int ignore_index)
{
    char sx[TG_SHAPE_STR];
    if (x->ndim < 1 || tg_cols(x) < 1) {
        tg_fail(t, "%s: logits must be [..., V] with V >= 1, got %s", op, tg_shape_str(x, sx));
        return false;
    }
    size_t rows = tg_rows(x);
    if (n < 0 || (size_t)n != rows) {
        tg_fail(t, "%s: %d targets for the %zu rows of logits %s", op, n, rows, tg_shape_str(x, sx));
        return false;
    }
    int V = tg_cols(x);
    for (size_t r = 0; r < rows; r++) {
        int32_t y = targets[r];
        if (y != ignore_index && (y < 0 || y >= V)) {
            tg_fail(t, "%s: target %d at position %zu is out of range [0, %d) (logits %s, ignore_index %d)",
                    op, (int)y, r, V, tg_shape_str(x, sx), ignore_index);
            return false;
        }
    }
    return true;
}

TG_OP(cross_entropy_op, "tg_cross_entropy", cross_entropy_backward, ce_ctx);
TG_OP(cross_entropy_sum_op, "tg_cross_entropy_sum", cross_entropy_backward, ce_ctx);

static tg_tensor *cross_entropy(tg_tape *t, tg_tensor *logits, const int32_t *targets, int n, int ignore_index,
                                const tg_op *op)
{
    const char *name = op->name;
    bool mean = op == &cross_entropy_op;
    if (!tg_inputs_check(t, op, &logits, 1, 1)) return NULL;
    if (!targets) return tg_fail_null(t, name);
    if (!ce_check(t, name, logits, targets, n, ignore_index)) return NULL;
    tg_tensor *out = tg_new(t, op, 0, NULL);
    if (!out) return NULL;
    size_t rows = tg_rows(logits);
    int V = tg_cols(logits);
    bool need = tg_needs_grad(t, &logits, 1);
    ce_ctx c = {.ignore = ignore_index};
    double *lse = NULL;
    if (need) {
        lse = tg_arena_alloc(t, rows * sizeof *lse, "tg_cross_entropy saved state");
        int32_t *tg = lse ? tg_arena_alloc(t, rows * sizeof *tg, "tg_cross_entropy saved targets") : NULL;
        if (!tg) return NULL;
        memcpy(tg, targets, rows * sizeof *tg);
        c.targets = tg;
        c.lse = lse;
    }
    double sum = 0;
    size_t n_valid = 0;
    for (size_t r = 0; r < rows; r++) {
        int y = targets[r];
        if (y == ignore_index) continue;
        const tg_real *xr = logits->data + r * V;
        double l = row_lse(xr, V);
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

tg_tensor *tg_cross_entropy(tg_tape *t, tg_tensor *logits, const int32_t *targets, int n, int ignore_index)
{
    return cross_entropy(t, logits, targets, n, ignore_index, &cross_entropy_op);
}

tg_tensor *tg_cross_entropy_sum(tg_tape *t, tg_tensor *logits, const int32_t *targets, int n, int ignore_index)
{
    return cross_entropy(t, logits, targets, n, ignore_index, &cross_entropy_sum_op);
}
