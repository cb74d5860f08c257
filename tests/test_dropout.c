/* dropout (core/ops/nn/dropout.c): identity cases, statistics, the backward
 * uses the forward's mask, gradcheck. */
#include <string.h>

#include "ops_util.h"

static tg_tensor *gc_dropout(tg_tape *t, tg_tensor **in, void *ctx)
{
    tg_rng r;  /* reseeded every call: the same mask in every perturbed pass */
    tg_rng_seed(&r, *(const unsigned *)ctx);
    return tg_dropout(t, in[0], 0.4, &r);
}

Test(dropout, identity_cases_return_the_input)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 7);
    tg_tensor *x = iota(2, (int[]){3, 4});
    cr_assert(tg_dropout(t, x, 0, NULL) == x);
    cr_assert(tg_dropout(t, x, 0, &rng) == x);
    tg_tape_set_training(t, false);
    cr_assert(tg_dropout(t, x, 0.5, &rng) == x);
    cr_assert(tg_dropout(t, x, 0.5, NULL) == x, "no rng is needed when not training");
    cr_assert_eq(tg_tape_node_count(t), 0);
    cr_assert_null(tg_tape_error(t));
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(dropout, statistics_and_backward_uses_the_same_mask)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 42);
    const int n = 100000;
    const double p = 0.3;
    tg_tensor *x = tg_tensor_alloc(1, &n);
    cr_assert_not_null(x);
    tg_tensor_fill(x, 1);
    x->requires_grad = true;
    tg_tensor *y = tg_dropout(t, x, p, &rng);
    cr_assert(y && y != x);
    const tg_real scale = (tg_real)(1 / (1 - p));
    int zeros = 0;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        cr_assert(y->data[i] == 0 || y->data[i] == scale, "y[%d] = %g", i, (double)y->data[i]);
        zeros += y->data[i] == 0;
        sum += y->data[i];
    }
    /* binomial std of the dropped fraction: sqrt(p(1-p)/n) = 0.0014 */
    cr_assert(fabs((double)zeros / n - p) < 0.01, "dropped fraction %g", (double)zeros / n);
    cr_assert(fabs(sum / n - 1) < 0.02, "mean %g (inverted dropout keeps the mean)", sum / n);
    tg_real *seed = tg_malloc(n * sizeof *seed);
    cr_assert_not_null(seed);
    for (int i = 0; i < n; i++) seed[i] = 1;
    cr_assert_eq(tg_backward_seed(t, y, seed), 0);
    for (int i = 0; i < n; i++) cr_assert(x->grad[i] == y->data[i], "dx[%d] = %g, y = %g", i, (double)x->grad[i], (double)y->data[i]);
    /* the same seed gives the same mask */
    tg_rng_seed(&rng, 42);
    tg_tensor *y2 = tg_dropout(t, x, p, &rng);
    for (int i = 0; i < n; i++) cr_assert(y2->data[i] == y->data[i]);
    tg_free(seed);
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(dropout, gradcheck_dropout)
{
    tg_rng rng;
    tg_rng_seed(&rng, 8);
    tg_tensor *x = tu_rand(&rng, -1, 1, 2, (int[]){4, 5});
    unsigned seed = 99;
    tu_gradcheck(gc_dropout, &seed, &x, 1);
    /* the check means something only if some elements were dropped and some kept */
    tg_tape *t = tg_tape_new();
    tg_tensor *y = gc_dropout(t, &x, &seed);
    int zeros = 0;
    for (size_t i = 0; i < y->size; i++) zeros += y->data[i] == 0;
    cr_assert(zeros > 0 && zeros < (int)y->size, "%d of %zu dropped", zeros, y->size);
    tg_tape_free(t);
    tg_tensor_free(x);
}

Test(dropout, rejects_bad_arguments)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 2, (int[]){3, 4});
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    assert_fails(t, tg_dropout(t, x, 1, &rng), "tg_dropout", "p", "[3,4]");
    assert_fails(t, tg_dropout(t, x, -0.1, &rng), "tg_dropout", "p", "[3,4]");
    assert_fails(t, tg_dropout(t, x, NAN, &rng), "tg_dropout", "p", "[3,4]");
    assert_fails(t, tg_dropout(t, x, 0.5, NULL), "tg_dropout", "rng", "[3,4]");
    tg_tape_set_training(t, false);
    assert_fails(t, tg_dropout(t, x, 1.5, NULL), "tg_dropout", "p", "[3,4]");
    tg_tape_free(t);
}
