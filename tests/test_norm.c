/* layernorm and rmsnorm (core/ops/norm.c): values by hand, constant rows, gradcheck. */
#include <string.h>

#include "ops_util.h"

typedef struct ln_ctx {
    bool weight, bias;
} ln_ctx;

static tg_tensor *gc_layernorm(tg_tape *t, tg_tensor **in, void *ctx)
{
    const ln_ctx *c = ctx;
    return tg_layernorm(t, in[0], c->weight ? in[1] : NULL, c->bias ? in[2] : NULL, 1e-5);
}

Test(norm, constant_rows_give_the_bias_exactly)
{
    tg_tape *t = tg_tape_new();
    tg_real xv[12], wv[4] = {0.5f, -1.25f, 2, 0.75f}, bv[4] = {0.1f, -0.3f, 0.7f, 1e-3f};
    for (int j = 0; j < 4; j++) xv[j] = (tg_real)0.1, xv[4 + j] = (tg_real)-3.7, xv[8 + j] = (tg_real)1e6;
    tg_tensor *x = mk(t, 2, (int[]){3, 4}, xv), *w = mk(t, 1, (int[]){4}, wv), *b = mk(t, 1, (int[]){4}, bv);
    x->requires_grad = w->requires_grad = b->requires_grad = true;
    tg_tensor *y = tg_layernorm(t, x, w, b, 1e-5);
    cr_assert_not_null(y);
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 4; j++) cr_assert(y->data[r * 4 + j] == bv[j], "row %d col %d: %g", r, j, (double)y->data[r * 4 + j]);
    tg_real seed[12];
    for (int i = 0; i < 12; i++) seed[i] = (tg_real)(i % 5) - 2;
    cr_assert_eq(tg_backward_seed(t, y, seed), 0);
    for (int i = 0; i < 12; i++) cr_assert(isfinite(x->grad[i]));
    for (int j = 0; j < 4; j++) cr_assert(w->grad[j] == 0, "xhat is exactly 0, so dw is 0");
    tg_tape_free(t);
}

Test(norm, values_by_hand)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = mk(t, 1, (int[]){4}, (tg_real[]){1, 2, 3, 4});
    tg_tensor *y = tg_layernorm(t, x, NULL, NULL, 1e-5);
    cr_assert_not_null(y);
    double rstd = 1 / sqrt(1.25 + 1e-5);
    for (int j = 0; j < 4; j++) tu_close(y->data[j], (j + 1 - 2.5) * rstd, TU_TOL);
    tg_tensor *w = mk(t, 1, (int[]){4}, (tg_real[]){2, 2, 2, 2});
    y = tg_layernorm(t, x, w, NULL, 1e-5);
    cr_assert_not_null(y);
    for (int j = 0; j < 4; j++) tu_close(y->data[j], 2 * (j + 1 - 2.5) * rstd, TU_TOL);
    tg_tape_free(t);
}

Test(norm, gradcheck_layernorm)
{
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    tg_tensor *in[3] = {tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 5}), tu_rand(&rng, 0.5, 1.5, 1, (int[]){5}),
                        tu_rand(&rng, -0.5, 0.5, 1, (int[]){5})};
    tu_gradcheck(gc_layernorm, (&(ln_ctx){true, true}), in, 3);
    tu_gradcheck(gc_layernorm, (&(ln_ctx){false, false}), in, 1);
    tu_gradcheck(gc_layernorm, (&(ln_ctx){true, false}), in, 2);
    in[0]->requires_grad = false;  /* weight and bias only */
    tu_gradcheck(gc_layernorm, (&(ln_ctx){true, true}), in, 3);
    tu_free_all(in, 3);
}

Test(norm, rejects_bad_arguments)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 2, (int[]){3, 4});
    tg_tensor *w4 = tg_tensor_zeros(t, 1, (int[]){4}), *w5 = tg_tensor_zeros(t, 1, (int[]){5});
    tg_tensor *w14 = tg_tensor_zeros(t, 2, (int[]){1, 4}), *s0 = tg_tensor_zeros(t, 0, NULL);
    assert_fails(t, tg_layernorm(t, x, w5, w4, 1e-5), "tg_layernorm", "weight", "[3,4]", "[5]");
    assert_fails(t, tg_layernorm(t, x, w4, w14, 1e-5), "tg_layernorm", "bias", "[3,4]", "[1,4]");
    assert_fails(t, tg_layernorm(t, x, NULL, w5, 1e-5), "tg_layernorm", "bias", "[3,4]", "[5]");
    assert_fails(t, tg_layernorm(t, s0, NULL, NULL, 1e-5), "tg_layernorm", "x []");
    assert_fails(t, tg_layernorm(t, x, w4, w4, -1), "tg_layernorm", "eps", "[3,4]");
    assert_fails(t, tg_layernorm(t, x, w4, w4, NAN), "tg_layernorm", "eps", "[3,4]");
    tg_tape_free(t);
}

static tg_tensor *gc_rmsnorm(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_rmsnorm(t, in[0], *(bool *)ctx ? in[1] : NULL, 1e-5);
}

Test(norm, rmsnorm_values_by_hand)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = mk(t, 2, (int[]){2, 4}, (tg_real[]){1, 2, 3, 4, 0, 0, 0, 0});
    tg_tensor *w = mk(t, 1, (int[]){4}, (tg_real[]){2, -1, 0.5f, 1});
    x->requires_grad = w->requires_grad = true;
    tg_tensor *y = tg_rmsnorm(t, x, w, 1e-5);
    cr_assert_not_null(y, "%s", tg_tape_error(t));
    double rstd = 1 / sqrt(7.5 + 1e-5), wv[4] = {2, -1, 0.5, 1};
    for (int j = 0; j < 4; j++) tu_close(y->data[j], (j + 1) * rstd * wv[j], TU_TOL);
    for (int j = 0; j < 4; j++) cr_assert(y->data[4 + j] == 0, "a zero row stays 0");
    cr_assert_eq(tg_backward_seed(t, y, (tg_real[]){1, 1, 1, 1, 1, 1, 1, 1}), 0);
    for (int j = 0; j < 4; j++) {  /* a zero row: xhat = 0, so dx = rstd * dy * w = w / sqrt(eps) */
        double want = wv[j] / sqrt(1e-5);
        cr_assert(fabs(x->grad[4 + j] - want) <= 1e-5 * fabs(want), "%g, want %g", (double)x->grad[4 + j], want);
    }
    tg_tape_free(t);
}

Test(norm, gradcheck_rmsnorm)
{
    tg_rng rng;
    tg_rng_seed(&rng, 6);
    /* C = 11: the lanes of 8 and the tail */
    tg_tensor *in[2] = {tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 11}), tu_rand(&rng, 0.5, 1.5, 1, (int[]){11})};
    tu_gradcheck(gc_rmsnorm, (&(bool){true}), in, 2);
    tu_gradcheck(gc_rmsnorm, (&(bool){false}), in, 1);
    in[0]->requires_grad = false;  /* weight only */
    tu_gradcheck(gc_rmsnorm, (&(bool){true}), in, 2);
    tu_free_all(in, 2);
}

Test(norm, rmsnorm_rejects_bad_arguments)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 2, (int[]){3, 4});
    tg_tensor *w4 = tg_tensor_zeros(t, 1, (int[]){4}), *w5 = tg_tensor_zeros(t, 1, (int[]){5});
    tg_tensor *s0 = tg_tensor_zeros(t, 0, NULL);
    assert_fails(t, tg_rmsnorm(t, x, w5, 1e-5), "tg_rmsnorm", "weight", "[3,4]", "[5]");
    assert_fails(t, tg_rmsnorm(t, s0, NULL, 1e-5), "tg_rmsnorm", "x []");
    assert_fails(t, tg_rmsnorm(t, x, w4, 0), "tg_rmsnorm", "eps", "> 0");
    assert_fails(t, tg_rmsnorm(t, x, w4, INFINITY), "tg_rmsnorm", "eps", "[3,4]");
    tg_tape_free(t);
}
