/* Losses with options (core/ops/loss/cross_entropy.c, losses.c): gradchecks of
 * each reduction, PyTorch's definitions checked by hand on small cases
 * (label smoothing, class weights in the mean's divisor, probability
 * targets), agreement with tg_cross_entropy, stability at large logits,
 * BCE's -100 clamp, and misuse. PyTorch's own numbers: tests/test_fixtures.c
 * ("losses" family: tinygrad's (32,) probability targets and pos_weight list). */
#include "ops_util.h"

TU_SUITE(losses, 37);

static const int32_t TARGETS[6] = {0, 3, TG_IGNORE, 1, 4, 2};

/* class targets y for logits x: an int32 tensor of x's shape without its last dim */
static tg_tensor *YL(tg_tape *t, const tg_tensor *x, const int32_t *y)
{
    return tg_tensor_from_dtype(t, TG_I32, y, x->ndim > 0 ? x->ndim - 1 : 0, x->shape);
}

typedef struct loss_ctx {
    int op;
    tg_reduction red;
    tg_tensor *cw;  /* class weights [5] or NULL */
} loss_ctx;

static tg_tensor *f_loss(tg_tape *t, tg_tensor **in, void *ctx)
{
    const loss_ctx *c = ctx;
    tg_ce_opts o = TG_CE_OPTS_DEFAULT;
    tg_tensor *cw = tu_like(t, c->cw, in[0]);
    o.weight = cw, o.reduction = c->red, o.label_smoothing = 0.15;
    switch (c->op) {
    case 0: return tg_cross_entropy_ex(t, in[0], YL(t, in[0], TARGETS), NULL, &o);
    case 1: return tg_cross_entropy_ex(t, in[0], NULL, tg_softmax(t, in[1]), &o);
    case 2: o.label_smoothing = 0; return tg_nll_loss(t, tg_log_softmax(t, in[0]), YL(t, in[0], TARGETS), &o);
    case 3: return tg_binary_cross_entropy(t, tg_sigmoid(t, in[0]), tg_sigmoid(t, in[1]), cw, c->red);
    case 4: return tg_binary_cross_entropy_with_logits(t, in[0], tg_sigmoid(t, in[1]), cw, cw, c->red);
    case 5: return tg_mse_loss(t, in[0], in[1], c->red);
    case 6: return tg_l1_loss(t, in[0], in[1], c->red);
    case 7: return tg_smooth_l1_loss(t, in[0], in[1], c->red, 0.8);
    default: return tg_huber_loss(t, in[0], in[1], c->red, 0.8);
    }
}

Test(losses, gradcheck_every_loss_and_reduction)
{
    const char *names[] = {"ce", "ce probs", "nll", "bce", "bce logits", "mse", "l1", "smooth_l1", "huber"};
    tg_tensor *cw = tu_rand(&R, 0.5, 2, 1, (int[]){5});
    cw->requires_grad = false;
    for (int op = 0; op < 9; op++)
        for (int red = 0; red < 3; red++)
            for (int w = 0; w < 2; w++) {
                /* cross-entropy's 6 rows; the elementwise losses on 15 elements, few enough
                 * that float rounding of their sum stays well below the float gradcheck's atol */
                int rows = op < 3 ? 6 : 3;
                tg_tensor *in[2] = {tu_rand(&R, -2, 2, 2, (int[]){rows, 5}), tu_rand(&R, -2, 2, 2, (int[]){rows, 5})};
                for (size_t e = 0; e < in[0]->size; e++) {  /* |a - b| away from 0 and from the kinks at 0.8 */
                    double d = (double)(in[0]->data[e] - in[1]->data[e]);
                    if (fabs(d) < 0.05 || fabs(fabs(d) - 0.8) < 0.05) in[0]->data[e] += (tg_real)0.2;
                }
                loss_ctx c = {op, (tg_reduction)red, w ? cw : NULL};
                tg_gradcheck_result r = tg_gradcheck(f_loss, &c, in, 2, NULL);
                cr_assert(r.ok, "%s reduction %d weight %d: %s", names[op], red, w, tg_error());
                tu_free_all(in, 2);
            }
    tg_tensor_free(cw);
}

/* A zeroed tg_ce_opts ignores no target: class 0 counts, and PyTorch's -100
 * is an out-of-range target, not a silently skipped row. */
Test(losses, zeroed_options_ignore_nothing)
{
    tg_tensor *x = mk(T, 2, (int[]){2, 3}, (tg_real[]){1, 2, 3, -1, 0.5, 0});
    tg_ce_opts zero = {0}, dflt = TG_CE_OPTS_DEFAULT;
    tg_tensor *both = tg_cross_entropy_ex(T, x, YL(T, x, (int32_t[]){0, 0}), NULL, &zero);
    tg_tensor *want = tg_cross_entropy_ex(T, x, YL(T, x, (int32_t[]){0, 0}), NULL, &dflt);
    cr_assert(both && want, "%s", tg_error());
    cr_assert_eq(both->data[0], want->data[0]);
    cr_assert_gt(both->data[0], 0);
    assert_fails(T, tg_cross_entropy_ex(T, x, YL(T, x, (int32_t[]){0, TG_IGNORE}), NULL, &zero), "target -100 at position 1",
                 "ignoring no");
}

/* PyTorch's label smoothing and weighted mean, by hand on 2 rows of 3 classes */
Test(losses, cross_entropy_definition_by_hand)
{
    tg_real x[] = {1, 2, 3, -1, 0.5, 0};
    tg_tensor *lg = mk(T, 2, (int[]){2, 3}, x), *cw = mk(T, 1, (int[]){3}, (tg_real[]){0.5, 2, 1});
    int32_t tgt[] = {2, 0};
    tg_ce_opts o = {cw, 0.3, TG_MEAN, TG_IGNORE, true};
    double want = 0, div = 0;
    for (int r = 0; r < 2; r++) {
        double m = 0;
        for (int j = 0; j < 3; j++) m += exp((double)x[r * 3 + j]);
        double nll = -(double)cw->data[tgt[r]] * ((double)x[r * 3 + tgt[r]] - log(m)), smooth = 0;
        for (int j = 0; j < 3; j++) smooth -= (double)cw->data[j] * ((double)x[r * 3 + j] - log(m));
        want += 0.7 * nll + 0.3 * smooth / 3;
        div += (double)cw->data[tgt[r]];
    }
    tu_close(tg_cross_entropy_ex(T, lg, YL(T, lg, tgt), NULL, &o)->data[0], want / div, TU_TOL);
    o.reduction = TG_SUM;
    tu_close(tg_cross_entropy_ex(T, lg, YL(T, lg, tgt), NULL, &o)->data[0], want, TU_TOL);
    o.reduction = TG_NONE;
    tg_tensor *none = tg_cross_entropy_ex(T, lg, YL(T, lg, tgt), NULL, &o);
    cr_assert(none->ndim == 1 && none->shape[0] == 2);
    tu_close(none->data[0] + none->data[1], want, TU_TOL);
}

/* without options it is tg_cross_entropy: the same loss and grads */
Test(losses, defaults_agree_with_tg_cross_entropy)
{
    tg_tensor *x = tu_rand(&R, -3, 3, 3, (int[]){2, 3, 5});
    tg_tensor *a = tg_cross_entropy(T, x, YL(T, x, TARGETS), TG_IGNORE);
    cr_assert_eq(tg_backward(T, a), 0);
    tg_real ga[30];
    memcpy(ga, x->grad, sizeof ga);
    double va = (double)a->data[0];
    tg_tape_reset(T);
    memset(x->grad, 0, 30 * sizeof *x->grad);
    tg_tensor *b = tg_cross_entropy_ex(T, x, YL(T, x, TARGETS), NULL, NULL);
    cr_assert_eq(tg_backward(T, b), 0);
    tu_close(b->data[0], va, TU_TOL);
    for (int e = 0; e < 30; e++) tu_close(x->grad[e], ga[e], TU_TOL);
    tg_tensor_free(x);
}

Test(losses, stable_at_large_magnitudes_and_clamped)
{
    tg_tensor *x = mk(T, 2, (int[]){2, 3}, (tg_real[]){1e4, 0, -1e4, -1e4, -1e4, 1e4});
    x->requires_grad = true;
    tg_ce_opts o = TG_CE_OPTS_DEFAULT;
    o.label_smoothing = 0.1;
    tg_tensor *l = tg_cross_entropy_ex(T, x, YL(T, x, (int32_t[]){0, 2}), NULL, &o);
    tu_close(l->data[0], 0.1 / 3 * (1e4 + 2e4 + 0 + 2e4 + 2e4 + 0) / 2, 1e-6);
    cr_assert_eq(tg_backward(T, l), 0);
    for (int e = 0; e < 6; e++) cr_assert(isfinite(x->grad[e]));
    tg_tape_reset(T);
    tg_tensor *p = mk(T, 1, (int[]){3}, (tg_real[]){0, 1, 0.5}), *y = mk(T, 1, (int[]){3}, (tg_real[]){1, 0, 1});
    tg_tensor *b = tg_binary_cross_entropy(T, p, y, NULL, TG_NONE);
    cr_assert(b->data[0] == 100 && b->data[1] == 100);  /* log clamped at -100, as PyTorch */
    tu_close(b->data[2], log(2.0), TU_TOL);
    tg_tensor *z = mk(T, 1, (int[]){3}, (tg_real[]){1000, 1000, 0});
    z->requires_grad = true;
    tg_tensor *bl = tg_binary_cross_entropy_with_logits(T, z, y, NULL, NULL, TG_NONE);
    cr_assert(bl->data[0] == 0 && bl->data[1] == 1000);
    tu_close(bl->data[2], log(2.0), TU_TOL);
    cr_assert_eq(tg_backward_seed(T, bl, (tg_real[]){1, 1, 1}), 0);
    cr_assert(z->grad[0] == 0 && z->grad[1] == 1);
    tu_close(z->grad[2], -0.5, TU_TOL);
}

Test(losses, every_row_ignored_gives_zero)
{
    tg_tensor *x = mk(T, 2, (int[]){2, 3}, (tg_real[]){1, 2, 3, 4, 5, 6});
    x->requires_grad = true;
    tg_tensor *l = tg_cross_entropy_ex(T, x, YL(T, x, (int32_t[]){TG_IGNORE, TG_IGNORE}), NULL, NULL);
    cr_assert_eq(l->data[0], 0);
    cr_assert_eq(tg_backward(T, l), 0);
    for (int e = 0; e < 6; e++) cr_assert_eq(x->grad[e], 0);
}

Test(losses, misuse)
{
    tg_tensor *x = mk(T, 2, (int[]){2, 3}, (tg_real[]){1, 2, 3, 4, 5, 6});
    tg_tensor *q = mk(T, 2, (int[]){3, 2}, (tg_real[]){1, 0, 0, 1, 0, 1});
    tg_tensor *y = mk(T, 2, (int[]){2, 3}, (tg_real[]){0, 1, 0, 1, 0, 1});
    int32_t tg[] = {0, 3};
    assert_fails(T, tg_cross_entropy_ex(T, x, YL(T, x, tg), NULL, NULL), "tg_cross_entropy_ex", "target 3 at position 1");
    assert_fails(T, tg_cross_entropy_ex(T, x, NULL, NULL, NULL), "tg_cross_entropy_ex", "exactly one");
    assert_fails(T, tg_cross_entropy_ex(T, x, NULL, q, NULL), "probabilities [3,2] must have the logits' shape [2,3]", "");
    tg_ce_opts o = TG_CE_OPTS_DEFAULT;
    o.label_smoothing = 1.5;
    assert_fails(T, tg_cross_entropy_ex(T, x, YL(T, x, (int32_t[]){0, 1}), NULL, &o), "label_smoothing 1.5", "[0, 1]");
    o.label_smoothing = 0, o.weight = y;
    assert_fails(T, tg_cross_entropy_ex(T, x, YL(T, x, (int32_t[]){0, 1}), NULL, &o), "weight [2,3] must be [C] = [3]", "");
    o.weight = NULL, o.reduction = (tg_reduction)7;
    assert_fails(T, tg_nll_loss(T, x, YL(T, x, (int32_t[]){0, 1}), &o), "tg_nll_loss", "reduction 7");
    assert_fails(T, tg_mse_loss(T, x, q, TG_MEAN), "tg_mse_loss", "target [3,2] must have the input's shape [2,3]");
    assert_fails(T, tg_binary_cross_entropy(T, x, y, NULL, TG_MEAN), "tg_binary_cross_entropy", "input[1] = 2 is not in [0, 1]");
    assert_fails(T, tg_binary_cross_entropy_with_logits(T, x, y, NULL, q, TG_SUM), "[2,3], [2,3], [3,2]", "broadcast");
    tg_tensor *wide = tg_tensor_zeros(T, 3, (int[]){2, 1, 3});
    assert_fails(T, tg_binary_cross_entropy_with_logits(T, x, y, NULL, wide, TG_SUM),
                 "pos_weight [2,1,3] must broadcast to the input's shape [2,3]", "");
    assert_fails(T, tg_binary_cross_entropy_with_logits(T, x, y, wide, NULL, TG_SUM),
                 "weight [2,1,3] must broadcast to the input's shape [2,3]", "");
    assert_fails(T, tg_huber_loss(T, x, y, TG_SUM, 0), "tg_huber_loss", "delta 0");
    assert_fails(T, tg_smooth_l1_loss(T, x, y, TG_SUM, -1), "tg_smooth_l1_loss", "beta -1");
    assert_fails(T, tg_l1_loss(T, x, NULL, TG_SUM), "tg_l1_loss", "NULL");
    assert_fails(T, tg_mse_loss(T, x, y, (tg_reduction)9), "tg_mse_loss", "reduction 9 is not TG_MEAN, TG_SUM or TG_NONE");
    tg_tensor *p = mk(T, 2, (int[]){2, 3}, (tg_real[]){0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
    assert_fails(T, tg_binary_cross_entropy(T, p, y, wide, TG_MEAN), "tg_binary_cross_entropy",
                 "weight [2,1,3] must broadcast to the input's shape [2,3]");
    o = (tg_ce_opts)TG_CE_OPTS_DEFAULT;
    o.label_smoothing = 0.1;
    assert_fails(T, tg_nll_loss(T, x, YL(T, x, (int32_t[]){0, 1}), &o), "tg_nll_loss", "no label_smoothing");
    tg_tensor *s = mk(T, 0, NULL, (tg_real[]){1}), *e = tg_tensor_zeros(T, 2, (int[]){2, 0});
    assert_fails(T, tg_cross_entropy_ex(T, s, YL(T, s, (int32_t[]){0}), NULL, NULL), "logits must be [..., C] with C >= 1, got []", "");
    assert_fails(T, tg_cross_entropy_ex(T, e, YL(T, e, (int32_t[]){0, 0}), NULL, NULL), "C >= 1, got [2,0]", "");
}

/* every new op refuses a NULL tape with a message, and does not crash */
Test(losses, null_tape)
{
    tg_tensor *x = mk(T, 1, (int[]){2}, (tg_real[]){0.25, 0.5});
    tg_tensor *res[] = {
        tg_sin(NULL, x), tg_softplus(NULL, x, 1, 20), tg_logaddexp(NULL, x, x), tg_where(NULL, x, x, x),
        tg_masked_fill(NULL, x, x, 0), tg_max(NULL, x), tg_prod_dim(NULL, x, 0, false), tg_topk(NULL, x, 1, 0, true, NULL),
        tg_cumsum(NULL, x, 0), tg_cross_entropy_ex(NULL, x, YL(NULL, x, (int32_t[]){0}), NULL, NULL), tg_mse_loss(NULL, x, x, TG_SUM),
        tg_binary_cross_entropy(NULL, x, x, NULL, TG_SUM), tg_binary_cross_entropy_with_logits(NULL, x, x, NULL, NULL, TG_SUM),
    };
    for (size_t i = 0; i < sizeof res / sizeof *res; i++) {
        cr_assert_null(res[i], "op %zu", i);
        cr_assert(strstr(tg_error(), "the tape is NULL"), "op %zu: %s", i, tg_error());
    }
}

/* every allocation failing in turn: an "out of memory" error, never a crash */
static tg_tensor *oom_ce(tg_tape *t, void *ctx)
{
    tg_tensor **in = ctx;
    tg_ce_opts o = TG_CE_OPTS_DEFAULT;
    o.label_smoothing = 0.1, o.weight = in[2];
    return tg_cross_entropy_ex(t, tg_silu(t, in[0]), NULL, tg_softmax(t, in[1]), &o);
}
static tg_tensor *oom_along(tg_tape *t, void *ctx)
{
    tg_tensor **in = ctx;
    return tg_sum(t, tg_topk(t, tg_cumprod(t, tg_where(t, tg_gt(t, in[1], in[0]), in[0], in[1]), 0), 2, 1, true, NULL));
}
static tg_tensor *oom_bce(tg_tape *t, void *ctx)
{
    tg_tensor **in = ctx;
    return tg_binary_cross_entropy_with_logits(t, in[0], tg_sigmoid(t, in[1]), in[2], NULL, TG_MEAN);
}

Test(losses, out_of_memory_is_an_error)
{
    tg_tensor *in[3] = {tu_rand(&R, -1, 1, 2, (int[]){3, 5}), tu_rand(&R, -1, 1, 2, (int[]){3, 5}),
                        tu_rand(&R, 0.5, 1, 1, (int[]){5})};
    in[2]->requires_grad = false;
    walk_out_of_memory(oom_ce, in, in, 2);
    walk_out_of_memory(oom_along, in, in, 2);
    walk_out_of_memory(oom_bce, in, in, 2);
    tu_free_all(in, 3);
}

/* NaN in a logit, an input or a target gives a NaN loss, as PyTorch */
Test(losses, nan_propagates)
{
    tg_tensor *x = mk(T, 2, (int[]){2, 3}, (tg_real[]){1, NAN, 3, 4, 5, 6});
    tg_tensor *y = mk(T, 2, (int[]){2, 3}, (tg_real[]){0, 1, 0, 1, 0, 1});
    cr_assert(isnan(tg_cross_entropy_ex(T, x, YL(T, x, (int32_t[]){0, 1}), NULL, NULL)->data[0]));
    tg_ce_opts o = TG_CE_OPTS_DEFAULT;
    o.reduction = TG_NONE;
    tg_tensor *rows = tg_cross_entropy_ex(T, x, YL(T, x, (int32_t[]){0, 1}), NULL, &o);
    cr_assert(isnan(rows->data[0]) && isfinite(rows->data[1]));
    cr_assert(isnan(tg_mse_loss(T, x, y, TG_MEAN)->data[0]) && isnan(tg_huber_loss(T, y, x, TG_SUM, 1)->data[0]));
    cr_assert(isnan(tg_binary_cross_entropy_with_logits(T, x, y, NULL, NULL, TG_MEAN)->data[0]));
}
