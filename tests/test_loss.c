/* cross-entropy (core/ops/loss/loss.c): against a double reference with ignored
 * targets, gradcheck. */
#include <string.h>

#include "ops_util.h"

/* mean over valid rows of (logsumexp(x_r) - x_r[y_r]), in double */
static double ce_ref(const tg_real *x, const int32_t *y, int N, int V, int ignore, double *grad, double g)
{
    double sum = 0;
    int valid = 0;
    for (int r = 0; r < N; r++) valid += y[r] != ignore;
    for (int r = 0; r < N; r++) {
        if (y[r] == ignore) continue;
        double z = 0;
        for (int j = 0; j < V; j++) z += exp((double)x[r * V + j]);
        sum += log(z) - x[r * V + y[r]];
        for (int j = 0; j < V; j++) grad[r * V + j] = (exp((double)x[r * V + j]) / z - (j == y[r])) * g / valid;
    }
    return valid ? sum / valid : 0;
}

static tg_tensor *gc_cross_entropy(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_cross_entropy(t, in[0], ctx, (int)(in[0]->size / in[0]->shape[in[0]->ndim - 1]), TG_IGNORE);
}

static tg_tensor *gc_cross_entropy_sum(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_cross_entropy_sum(t, in[0], ctx, (int)(in[0]->size / in[0]->shape[in[0]->ndim - 1]), TG_IGNORE);
}

Test(loss, cross_entropy_with_ignored_targets)
{
    tg_tape *t = tg_tape_new();
    const tg_real xv[12] = {0.5f, -1, 2, 0.25f, 3, 1, -2, 0, -0.5f, 1.5f, 0.75f, -1.25f};
    const int32_t y[3] = {2, TG_IGNORE, 0};
    tg_tensor *x = mk(t, 2, (int[]){3, 4}, xv);
    x->requires_grad = true;
    tg_tensor *loss = tg_cross_entropy(t, x, y, 3, TG_IGNORE);
    cr_assert_not_null(loss);
    cr_assert(loss->ndim == 0 && loss->size == 1);
    double grad[12] = {0};
    double want = ce_ref(xv, y, 3, 4, TG_IGNORE, grad, 1);
    tu_close(loss->data[0], want, TU_TOL);
    cr_assert_eq(tg_backward(t, loss), 0);
    for (int i = 0; i < 12; i++) tu_close(x->grad[i], grad[i], TU_TOL);
    for (int j = 0; j < 4; j++) cr_assert(x->grad[4 + j] == 0, "an ignored row gets exactly zero grad");

    /* every target ignored: loss 0 and zero grad, no NaN */
    tg_tape_reset(t);
    const int32_t none[3] = {TG_IGNORE, TG_IGNORE, TG_IGNORE};
    x = mk(t, 2, (int[]){3, 4}, xv);
    x->requires_grad = true;
    loss = tg_cross_entropy(t, x, none, 3, TG_IGNORE);
    cr_assert(loss && loss->data[0] == 0);
    cr_assert_eq(tg_backward(t, loss), 0);
    cr_assert_not_null(x->grad, "the logits get a zero grad, not none");
    for (int i = 0; i < 12; i++) cr_assert(x->grad[i] == 0);

    /* an ignore_index inside [0, V) (class 0 here) also works */
    tg_tape_reset(t);
    x = mk(t, 3, (int[]){1, 3, 4}, xv);
    const int32_t y0[3] = {0, 3, 0};
    loss = tg_cross_entropy(t, x, y0, 3, 0);
    cr_assert_not_null(loss);
    tu_close(loss->data[0], ce_ref(xv, y0, 3, 4, 0, grad, 1), TU_TOL);
    tg_tape_free(t);
}

/* reduction='sum': n_valid times the mean, and the same grads times n_valid;
 * sum * (1/n_valid) gives every row the very grad bits of the mean */
Test(loss, cross_entropy_sum_is_the_unnormalised_mean)
{
    tg_tape *t = tg_tape_new();
    const tg_real xv[12] = {0.5f, -1, 2, 0.25f, 3, 1, -2, 0, -0.5f, 1.5f, 0.75f, -1.25f};
    const int32_t y[3] = {2, TG_IGNORE, 0};
    tg_tensor *x = mk(t, 2, (int[]){3, 4}, xv);
    x->requires_grad = true;
    tg_tensor *loss = tg_cross_entropy_sum(t, x, y, 3, TG_IGNORE);
    cr_assert_not_null(loss);
    double grad[12] = {0};
    tu_close(loss->data[0], 2 * ce_ref(xv, y, 3, 4, TG_IGNORE, grad, 2), TU_TOL);
    cr_assert_eq(tg_backward(t, loss), 0);
    for (int i = 0; i < 12; i++) tu_close(x->grad[i], grad[i], TU_TOL);

    tg_real mean_grad[12];
    tg_tape_reset(t);
    x = mk(t, 2, (int[]){3, 4}, xv);
    x->requires_grad = true;
    cr_assert_eq(tg_backward(t, tg_cross_entropy(t, x, y, 3, TG_IGNORE)), 0);
    memcpy(mean_grad, x->grad, sizeof mean_grad);
    tg_tape_reset(t);
    x = mk(t, 2, (int[]){3, 4}, xv);
    x->requires_grad = true;
    cr_assert_eq(tg_backward(t, tg_scale(t, tg_cross_entropy_sum(t, x, y, 3, TG_IGNORE), 1.0 / 2)), 0);
    cr_assert_eq(memcmp(mean_grad, x->grad, sizeof mean_grad), 0);
    tg_tape_free(t);
}

Test(loss, gradcheck_cross_entropy)
{
    tg_rng rng;
    tg_rng_seed(&rng, 7);
    tg_tensor *x = tu_rand(&rng, -2, 2, 3, (int[]){2, 3, 5});
    int32_t y[6] = {1, TG_IGNORE, 4, 0, TG_IGNORE, 2};
    tu_gradcheck(gc_cross_entropy, y, &x, 1);
    int32_t none[6] = {TG_IGNORE, TG_IGNORE, TG_IGNORE, TG_IGNORE, TG_IGNORE, TG_IGNORE};
    tu_gradcheck(gc_cross_entropy, none, &x, 1);
    tu_gradcheck(gc_cross_entropy_sum, y, &x, 1);
    tu_gradcheck(gc_cross_entropy_sum, none, &x, 1);
    tg_tensor_free(x);
}

Test(loss, rejects_bad_arguments)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 2, (int[]){3, 4}), *s0 = tg_tensor_zeros(t, 0, NULL);
    int32_t y[3] = {0, 4, TG_IGNORE};
    assert_fails(t, tg_cross_entropy(t, x, y, 3, TG_IGNORE), "tg_cross_entropy", "target 4", "position 1", "[3,4]");
    y[1] = -3;
    assert_fails(t, tg_cross_entropy(t, x, y, 3, TG_IGNORE), "tg_cross_entropy", "target -3", "position 1", "[3,4]");
    y[1] = TG_IGNORE;
    assert_fails(t, tg_cross_entropy(t, x, y, 3, 1), "tg_cross_entropy", "target -100", "position 1", "[3,4]");
    assert_fails(t, tg_cross_entropy(t, s0, y, 3, TG_IGNORE), "tg_cross_entropy", "[]");
    y[1] = 7;
    assert_fails(t, tg_cross_entropy_sum(t, x, y, 3, TG_IGNORE), "tg_cross_entropy_sum", "target 7", "[3,4]");
    assert_fails(t, tg_cross_entropy_sum(t, s0, y, 3, TG_IGNORE), "tg_cross_entropy_sum", "[]");
    /* the count is the logits' rows: logits [2,3,2] have 6, so 2 targets are refused, not read past */
    tg_tensor *x3 = tg_tensor_zeros(t, 3, (int[]){2, 3, 2});
    int32_t y2[2] = {0, 1};
    assert_fails(t, tg_cross_entropy(t, x3, y2, 2, TG_IGNORE), "tg_cross_entropy", "2 targets", "6 rows", "[2,3,2]");
    assert_fails(t, tg_cross_entropy_sum(t, x3, y2, 2, TG_IGNORE), "tg_cross_entropy_sum", "2 targets", "6 rows");
    assert_fails(t, tg_cross_entropy(t, x, y, -1, TG_IGNORE), "tg_cross_entropy", "-1 targets", "3 rows", "[3,4]");
    assert_fails(t, tg_cross_entropy_ex(t, x3, y2, 2, NULL, NULL), "tg_cross_entropy_ex", "2 targets", "6 rows",
                 "[2,3,2]");
    assert_fails(t, tg_nll_loss(t, x3, y2, 2, NULL), "tg_nll_loss", "2 targets", "6 rows", "[2,3,2]");
    assert_fails(t, tg_cross_entropy_ex(t, x3, NULL, 6, x3, NULL), "tg_cross_entropy_ex", "6 targets counted",
                 "targets is NULL");
    tg_tape_free(t);
}
