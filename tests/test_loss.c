/* cross-entropy (core/ops/loss/cross_entropy.c): against a double reference with ignored
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

/* class targets y of shape {dims} as an int32 tensor on t */
#define YT(t, y, ...) tg_tensor_from_dtype(t, TG_I32, y, sizeof((int[]){__VA_ARGS__}) / sizeof(int), (int[]){__VA_ARGS__})

/* ctx: int32 targets of in[0]'s shape without its last dim */
static tg_tensor *gc_cross_entropy(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_cross_entropy(t, in[0], tg_tensor_from_dtype(t, TG_I32, ctx, in[0]->ndim - 1, in[0]->shape), TG_IGNORE);
}

static tg_tensor *gc_cross_entropy_sum(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_cross_entropy_sum(t, in[0], tg_tensor_from_dtype(t, TG_I32, ctx, in[0]->ndim - 1, in[0]->shape),
                                TG_IGNORE);
}

Test(loss, cross_entropy_with_ignored_targets)
{
    tg_tape *t = tg_tape_new();
    const tg_real xv[12] = {0.5f, -1, 2, 0.25f, 3, 1, -2, 0, -0.5f, 1.5f, 0.75f, -1.25f};
    const int32_t y[3] = {2, TG_IGNORE, 0};
    tg_tensor *x = mk(t, 2, (int[]){3, 4}, xv);
    x->requires_grad = true;
    tg_tensor *loss = tg_cross_entropy(t, x, YT(t, y, 3), TG_IGNORE);
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
    loss = tg_cross_entropy(t, x, YT(t, none, 3), TG_IGNORE);
    cr_assert(loss && loss->data[0] == 0);
    cr_assert_eq(tg_backward(t, loss), 0);
    cr_assert_not_null(x->grad, "the logits get a zero grad, not none");
    for (int i = 0; i < 12; i++) cr_assert(x->grad[i] == 0);

    /* an ignore_index inside [0, V) (class 0 here) also works */
    tg_tape_reset(t);
    x = mk(t, 3, (int[]){1, 3, 4}, xv);
    const int32_t y0[3] = {0, 3, 0};
    loss = tg_cross_entropy(t, x, YT(t, y0, 1, 3), 0);
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
    tg_tensor *loss = tg_cross_entropy_sum(t, x, YT(t, y, 3), TG_IGNORE);
    cr_assert_not_null(loss);
    double grad[12] = {0};
    tu_close(loss->data[0], 2 * ce_ref(xv, y, 3, 4, TG_IGNORE, grad, 2), TU_TOL);
    cr_assert_eq(tg_backward(t, loss), 0);
    for (int i = 0; i < 12; i++) tu_close(x->grad[i], grad[i], TU_TOL);

    tg_real mean_grad[12];
    tg_tape_reset(t);
    x = mk(t, 2, (int[]){3, 4}, xv);
    x->requires_grad = true;
    cr_assert_eq(tg_backward(t, tg_cross_entropy(t, x, YT(t, y, 3), TG_IGNORE)), 0);
    memcpy(mean_grad, x->grad, sizeof mean_grad);
    tg_tape_reset(t);
    x = mk(t, 2, (int[]){3, 4}, xv);
    x->requires_grad = true;
    cr_assert_eq(tg_backward(t, tg_scale(t, tg_cross_entropy_sum(t, x, YT(t, y, 3), TG_IGNORE), 1.0 / 2)), 0);
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
    assert_fails(t, tg_cross_entropy(t, x, YT(t, y, 3), TG_IGNORE), "tg_cross_entropy", "target 4", "position 1", "[3,4]");
    y[1] = -3;
    assert_fails(t, tg_cross_entropy(t, x, YT(t, y, 3), TG_IGNORE), "tg_cross_entropy", "target -3", "position 1", "[3,4]");
    y[1] = TG_IGNORE;
    assert_fails(t, tg_cross_entropy(t, x, YT(t, y, 3), 1), "tg_cross_entropy", "target -100", "position 1", "[3,4]");
    assert_fails(t, tg_cross_entropy(t, s0, YT(t, y, 3), TG_IGNORE), "tg_cross_entropy", "[]");
    y[1] = 7;
    assert_fails(t, tg_cross_entropy_sum(t, x, YT(t, y, 3), TG_IGNORE), "tg_cross_entropy_sum", "target 7", "[3,4]");
    assert_fails(t, tg_cross_entropy_sum(t, s0, YT(t, y, 3), TG_IGNORE), "tg_cross_entropy_sum", "[]");
    /* an int64 target beyond int32 is out of range, not truncated into it */
    tg_tensor *big = tg_tensor_from_dtype(t, TG_I64, (int64_t[]){0, 4294967297LL, 1}, 1, (int[]){3});
    assert_fails(t, tg_cross_entropy(t, x, big, TG_IGNORE), "tg_cross_entropy", "target 4294967297", "position 1");
    /* the targets' shape is the logits' without the class dim: logits [2,3,2] take [2,3], so 2 targets
     * (or 6 in a row) are refused naming both shapes, not read past */
    tg_tensor *x3 = tg_tensor_zeros(t, 3, (int[]){2, 3, 2});
    int32_t y2[2] = {0, 1}, y6[6] = {0, 1, 0, 1, 0, 1};
    assert_fails(t, tg_cross_entropy(t, x3, YT(t, y2, 2), TG_IGNORE), "tg_cross_entropy", "targets [2]", "logits [2,3,2]");
    assert_fails(t, tg_cross_entropy_sum(t, x3, YT(t, y6, 6), TG_IGNORE), "tg_cross_entropy_sum", "targets [6]",
                 "logits [2,3,2]");
    assert_fails(t, tg_cross_entropy(t, x, YT(t, y6, 3, 2), TG_IGNORE), "tg_cross_entropy", "targets [3,2]", "logits [3,4]");
    assert_fails(t, tg_cross_entropy_ex(t, x3, YT(t, y2, 2), NULL, NULL), "tg_cross_entropy_ex", "targets [2]",
                 "logits [2,3,2]");
    assert_fails(t, tg_nll_loss(t, x3, YT(t, y2, 2, 1), NULL), "tg_nll_loss", "targets [2,1]", "logits [2,3,2]");
    cr_assert_not_null(tg_cross_entropy(t, x3, YT(t, y6, 2, 3), TG_IGNORE), "%s", tg_tape_error(t));
    /* class targets are integers: a float or bool tensor is refused naming the op and its dtype */
    tg_tensor *fy = tg_tensor_zeros(t, 1, (int[]){3}), *by = tg_tensor_zeros_dtype(t, TG_BOOL, 1, (int[]){3});
    char want[64];
    snprintf(want, sizeof want, "class targets are %s, not int64 or int32", tg_dtype_name(TG_REAL_DTYPE));
    assert_fails(t, tg_cross_entropy(t, x, fy, TG_IGNORE), "tg_cross_entropy", want, "probabilities");
    assert_fails(t, tg_cross_entropy_sum(t, x, by, TG_IGNORE), "tg_cross_entropy_sum", "class targets are bool, not int64");
    assert_fails(t, tg_cross_entropy_ex(t, x, fy, NULL, NULL), "tg_cross_entropy_ex", want);
    assert_fails(t, tg_nll_loss(t, x, fy, NULL), "tg_nll_loss", want);
    tg_tape_free(t);
}

/* A targets tensor from before tg_tape_reset, of another tape or freed is refused as any input. */
Test(loss, stale_targets_refused)
{
    tg_tape *t = tg_tape_new(), *u = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(2, (int[]){2, 3});
    tg_tensor *old = YT(t, ((int32_t[]){0, 1}), 2);
    tg_tape_reset(t);
    assert_fails(t, tg_cross_entropy(t, x, old, TG_IGNORE), "tg_cross_entropy", "input 1 is a tensor from before tg_tape_reset");
    assert_fails(t, tg_nll_loss(t, x, YT(u, ((int32_t[]){0, 1}), 2), NULL), "tg_nll_loss", "belongs to another tape");
    tg_tensor *freed = tg_tensor_alloc_dtype(TG_I64, 1, (int[]){2});
    tg_tensor_free(freed);
    assert_fails(t, tg_cross_entropy_ex(t, x, freed, NULL, NULL), "tg_cross_entropy_ex", "input 1 is not a live tensor");
    tg_tensor_free(x);
    tg_tape_free(u);
    tg_tape_free(t);
}

/* the loss of one of the four ops on logits x and class targets y */
static tg_tensor *ce_with(tg_tape *t, int op, tg_tensor *x, tg_tensor *y)
{
    tg_ce_opts o = TG_CE_OPTS_DEFAULT;
    o.label_smoothing = op == 2 ? 0.1 : 0;
    o.reduction = op == 3 ? TG_SUM : TG_MEAN;
    switch (op) {
    case 0: return tg_cross_entropy(t, x, y, TG_IGNORE);
    case 1: return tg_cross_entropy_sum(t, x, y, TG_IGNORE);
    case 2: return tg_cross_entropy_ex(t, x, y, NULL, &o);
    default: return tg_nll_loss(t, tg_log_softmax(t, x), y, &o);
    }
}

/* int32 and int64 targets: the same loss and grad bits, every op, in float32 and float64 logits */
Test(loss, int32_and_int64_targets_agree_bit_for_bit)
{
    tg_rng rng;
    tg_rng_seed(&rng, 11);
    int32_t y32[6] = {1, TG_IGNORE, 4, 0, 3, 2};
    int64_t y64[6];
    for (int i = 0; i < 6; i++) y64[i] = y32[i];
    for (int dt = 0; dt < 2; dt++) {
        tg_dtype real = dt ? TG_F64 : TG_F32;
        for (int op = 0; op < 4; op++) {
            tg_tensor *x = tg_tensor_alloc_dtype(real, 3, (int[]){2, 3, 5});
            for (size_t i = 0; i < x->size; i++) tg_dtype_store(real, x->data, i, 4 * tg_rng_uniform(&rng) - 2);
            x->requires_grad = true;
            double loss[2];
            void *grad[2];
            size_t bytes = x->size * tg_dtype_size(real);
            for (int k = 0; k < 2; k++) {
                tg_tape *t = tg_tape_new();
                tg_tensor *y = k ? tg_tensor_from_dtype(t, TG_I64, y64, 2, (int[]){2, 3})
                                 : tg_tensor_from_dtype(t, TG_I32, y32, 2, (int[]){2, 3});
                tg_tensor *l = ce_with(t, op, x, y);
                cr_assert_not_null(l, "op %d: %s", op, tg_tape_error(t));
                cr_assert_eq(l->dtype, real, "op %d runs in the logits' dtype", op);
                loss[k] = tg_dtype_load(real, l->data, 0);
                cr_assert_eq(tg_backward(t, l), 0, "%s", tg_tape_error(t));
                void *g = tg_grad_as(t, x, real);
                cr_assert_not_null(g, "%s", tg_error());
                grad[k] = malloc(bytes);
                memcpy(grad[k], g, bytes);
                memset(g, 0, bytes);
                tg_tape_free(t);
            }
            cr_expect(loss[0] == loss[1], "op %d %s: loss %.17g vs %.17g", op, tg_dtype_name(real), loss[0], loss[1]);
            cr_expect(memcmp(grad[0], grad[1], bytes) == 0, "op %d %s: grads differ", op, tg_dtype_name(real));
            free(grad[0]), free(grad[1]);
            tg_tensor_free(x);
        }
    }
}
