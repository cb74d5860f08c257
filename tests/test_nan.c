/* NaN propagates as in PyTorch beyond what an op-case row says (each row of
 * tests/op_cases_*.c gives its op's NaN pattern for one NaN in its first
 * input): grads at a NaN, NaN at every position of max_dim, in later inputs
 * (a bias, keys, values), in ignored or masked places, and on the larger
 * sizes the vectorised and blocked paths take. Expected patterns and grads
 * are PyTorch 1.13's. */
#include <stdio.h>
#include <string.h>

#include "test_util.h"

TU_SUITE(nan, 5);

/* [rows, cols] of (i % 5 - 2) / 2, element `at` NaN (-1: none) */
static tg_tensor *input(int rows, int cols, int at)
{
    tg_tensor *x = tg_tensor_alloc(2, (int[]){rows, cols});
    for (size_t i = 0; i < x->size; i++) x->data[i] = (tg_real)((int)(i % 5) - 2) / 2;
    if (at >= 0) x->data[at] = NAN;
    x->requires_grad = true;
    return x;
}

/* y is NaN exactly where want (a string of '.' finite / 'n' NaN) says. */
static void assert_nans(const char *op, const tg_tensor *y, const char *want)
{
    cr_assert_not_null(y, "%s: %s", op, tg_tape_error(T));
    cr_assert_eq(y->size, strlen(want), "%s: %zu elements", op, y->size);
    for (size_t i = 0; i < y->size; i++)
        cr_assert_eq(isnan(y->data[i]), want[i] == 'n', "%s: element %zu is %g, want %s", op, i,
                     (double)y->data[i], want[i] == 'n' ? "NaN" : "a number");
}

static tg_tensor *relu(tg_tensor *x) { return tg_relu(T, x); }
static tg_tensor *tanh_(tg_tensor *x) { return tg_tanh(T, x); }
static tg_tensor *abs_(tg_tensor *x) { return tg_abs(T, x); }
static tg_tensor *pow0(tg_tensor *x) { return tg_pow(T, x, 0); }
static tg_tensor *clamp(tg_tensor *x) { return tg_clamp(T, x, -0.25, 0.25); }

/* torch.pow(nan, 0) is 1 */
Test(nan, pow_zero_is_one)
{
    tg_tensor *x = input(2, 4, 5);
    assert_nans("tg_pow", pow0(x), "........");
    tg_tensor_free(x);
}

/* Grads at the NaN as PyTorch: relu passes (threshold_backward reads NaN <= 0
 * as false), clamp and abs give 0, the rest NaN. */
static void grad_at_nan(tg_tensor *(*f)(tg_tensor *), double want)
{
    tg_tensor *x = input(1, 4, 1);
    cr_assert_eq(tg_backward(T, tg_sum(T, f(x))), 0, "%s", tg_tape_error(T));
    if (isnan(want)) cr_assert(isnan(x->grad[1]), "grad %g, want NaN", (double)x->grad[1]);
    else cr_assert_eq(x->grad[1], want, "grad %g, want %g", (double)x->grad[1], want);
    tg_tensor_free(x);
}

Test(nan, relu_grad_passes) { grad_at_nan(relu, 1); }
Test(nan, clamp_grad_is_zero) { grad_at_nan(clamp, 0); }
Test(nan, abs_grad_is_zero) { grad_at_nan(abs_, 0); }
Test(nan, tanh_grad_is_nan) { grad_at_nan(tanh_, NAN); }

/* max over a dim is NaN where the NaN is, whatever is larger around it, and
 * its grad goes to the NaN's position (PyTorch's index). */
Test(nan, max_dim)
{
    for (int at = 0; at < 12; at++) {
        tg_tensor *x = input(3, 4, at);
        x->data[(at + 1) % 12] = 100;  /* a larger number next to the NaN */
        tg_tensor *y = tg_max_dim(T, x, 1, false);
        char want[4] = "...";
        want[at / 4] = 'n';
        assert_nans("tg_max_dim 1", y, want);
        cr_assert_eq(tg_backward(T, tg_sum(T, y)), 0, "%s", tg_tape_error(T));
        cr_assert_eq(x->grad[at], 1, "the grad of row %d goes to the NaN", at / 4);
        tg_tape_reset(T);
        y = tg_max_dim(T, x, 0, true);
        char want0[5] = "....";
        want0[at % 4] = 'n';
        assert_nans("tg_max_dim 0", y, want0);
        tg_tape_reset(T);
        tg_tensor_free(x);
    }
}

/* One NaN makes its whole row NaN, as PyTorch; a row of NaN is not taken for
 * a fully masked one (zeros). */
Test(nan, softmax)
{
    for (int cols = 1; cols <= 19; cols += 9) {
        tg_tensor *x = input(2, cols, cols);  /* row 1's first element */
        char want[64];
        for (int i = 0; i < 2 * cols; i++) want[i] = i < cols ? '.' : 'n';
        want[2 * cols] = '\0';
        assert_nans("tg_softmax", tg_softmax(T, x), want);
        assert_nans("tg_log_softmax", tg_log_softmax(T, x), want);
        assert_nans("tg_softmax_masked", tg_softmax_masked(T, x, NULL, 1), want);
        tg_tensor_free(x);
    }
}

/* A masked-out NaN is ignored (PyTorch masks with -inf first); a visible one
 * makes its row NaN. */
Test(nan, softmax_masked)
{
    tg_tensor *x = input(3, 3, 1);  /* row 0, key 1: masked by causality */
    x->data[7] = NAN;               /* row 2, key 1: visible */
    assert_nans("tg_softmax_masked causal", tg_softmax_masked(T, x, &(tg_mask){.causal = true}, 1),
                "......nnn");
    tg_tensor_free(x);
}

Test(nan, layernorm_bias)
{
    tg_tensor *w = tg_tensor_alloc(1, (int[]){4}), *b = tg_tensor_alloc(1, (int[]){4});
    tg_tensor_fill(w, 1);
    b->data[3] = NAN;
    tg_tensor *x2 = input(2, 4, -1);
    assert_nans("tg_layernorm bias", tg_layernorm(T, x2, w, b, 1e-5), "...n...n");
    tu_free_all((tg_tensor *[]){x2, w, b}, 3);
}

Test(nan, cross_entropy_ignored_row)
{
    tg_tensor *x = input(2, 3, 4);  /* row 1, not its target */
    /* a NaN only in an ignored row does not count, as PyTorch */
    tg_tensor *y = tg_tensor_from_dtype(T, TG_I64, (int64_t[]){0, TG_IGNORE}, 1, (int[]){2});
    assert_nans("tg_cross_entropy ignored", tg_cross_entropy(T, x, y, TG_IGNORE), ".");
    tg_tensor_free(x);
}

Test(nan, matmul)
{
    tg_tensor *w = input(3, 2, 2);  /* row 1 */
    /* zeros @ a NaN: 0 * NaN is NaN (as a BLAS GEMM) */
    tg_tensor *z = tg_tensor_alloc(2, (int[]){2, 3});
    assert_nans("tg_matmul", tg_matmul(T, z, w, NULL, 0), "n.n.");
    tg_tensor *big = input(40, 40, 41), *zb = tg_tensor_alloc(2, (int[]){1, 40});
    tg_tensor *y = tg_matmul(T, zb, big, NULL, 0);
    char want[41];
    for (int i = 0; i < 40; i++) want[i] = i == 1 ? 'n' : '.';
    want[40] = '\0';
    assert_nans("tg_matmul 40", y, want);
    tu_free_all((tg_tensor *[]){w, z, big, zb}, 4);
}

/* PyTorch's dropout multiplies by the mask: a dropped NaN stays NaN. */
Test(nan, dropout)
{
    tg_tensor *x = tg_tensor_alloc(1, (int[]){64});
    tg_tensor_fill(x, NAN);
    tg_tensor *y = tg_dropout(T, x, 0.5, &R);
    cr_assert_not_null(y);
    for (size_t i = 0; i < y->size; i++) cr_assert(isnan(y->data[i]), "element %zu dropped to %g", i, (double)y->data[i]);
    tg_tensor_free(x);
}

/* Attention: a NaN in q makes its query's output row NaN; in k, every row
 * (each attends to it); in v, that column of every row. With dropout too. */
Test(nan, sdpa)
{
    static const char *want[3] = {"..nn..", "nnnnnn", "n.n.n."};
    for (int which = 0; which < 3; which++)
        for (int drop = 0; drop < 2; drop++) {
            tg_tensor *x[3];
            for (int k = 0; k < 3; k++) {
                x[k] = tg_tensor_alloc(4, (int[]){1, 1, 3, 2});
                for (int i = 0; i < 6; i++) x[k]->data[i] = (tg_real)(i % 3) / 2;
            }
            x[which]->data[2] = NAN;  /* row 1, column 0 */
            tg_sdpa_opts o = {.dropout = drop ? 0.9 : 0, .rng = &R};
            tg_tensor *w = NULL, *y = tg_sdpa(T, x[0], x[1], x[2], &o, &w);
            char what[40];
            snprintf(what, sizeof what, "tg_sdpa (NaN in %c%s)", "qkv"[which], drop ? ", dropout" : "");
            assert_nans(what, y, want[which]);
            /* the same through the packed-heads op */
            tg_tensor *pk = tg_tensor_alloc(3, (int[]){1, 3, 6});
            for (int i = 0; i < 3; i++)
                for (int k = 0; k < 3; k++) memcpy(pk->data + i * 6 + k * 2, x[k]->data + i * 2, 2 * sizeof(tg_real));
            tg_sdpa_layout lay = {.n_heads = 1, .dk = 2, .dv = 2, .q_col = 0, .k_col = 2, .v_col = 4};
            assert_nans("tg_sdpa_heads", tg_sdpa_heads(T, pk, pk, &lay, &o, NULL), want[which]);
            tg_tape_reset(T);
            tu_free_all(x, 3);
            tg_tensor_free(pk);
        }
}
