/* layernorm and rmsnorm (core/ops/nn/norm.c): values by hand, constant rows, gradcheck. */
#include <string.h>

#include <tapegrad/core/kernels/vmath.h>

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

/* ---- every SIMD level (core/kernels/vmath.h) -------------------------------------- */

/* y, then the grads of x, w and b, of layernorm on x [rows, C] with w, b
 * [C] and the seed dy, run at `level`: into out [2 rows C + 2 C]. */
static void ln_run(tg_simd level, int rows, int C, const tg_real *xv, const tg_real *wv, const tg_real *bv,
                   const tg_real *dy, tg_real *out)
{
    cr_assert(tg_simd_set(level));
    tg_tape *t = tg_tape_new();
    tg_tensor *x = mk(t, 2, (int[]){rows, C}, xv), *w = mk(t, 1, (int[]){C}, wv), *b = mk(t, 1, (int[]){C}, bv);
    x->requires_grad = w->requires_grad = b->requires_grad = true;
    tg_tensor *y = tg_layernorm(t, x, w, b, 1e-5);
    cr_assert_not_null(y, "%s", tg_error());
    cr_assert_eq(tg_backward_seed(t, y, dy), 0, "%s", tg_error());
    size_t n = (size_t)rows * C;
    memcpy(out, y->data, n * sizeof *out);
    memcpy(out + n, x->grad, n * sizeof *out);
    memcpy(out + 2 * n, w->grad, (size_t)C * sizeof *out);
    memcpy(out + 2 * n + C, b->grad, (size_t)C * sizeof *out);
    tg_tape_free(t);
}

/* The levels this CPU runs; the others are named with the reason. */
static int simd_levels(tg_simd *levels)
{
    int n = 0;
    tg_simd best = tg_simd_get();
    for (int l = TG_SIMD_BASE; l <= TG_SIMD_AVX512; l++) {
        if (tg_simd_set((tg_simd)l)) levels[n++] = (tg_simd)l;
        else cr_log_info("SIMD level %s skipped: %s", tg_simd_name((tg_simd)l),
                         TG_SIMD_BUILT ? "this CPU cannot run it" : "not built here (baseline only)");
    }
    tg_simd_set(best);
    return n;
}

/* One feature: xhat is 0 and dxhat - mean(dxhat) cancels exactly, so dx is
 * exactly 0, as in PyTorch (an FMA contracting dy * w - mean gave -8.95e-7
 * for x = [[1]], w = [1.1], dy = [[0.1]]). */
Test(norm, one_feature_gives_dx_exactly_0_at_every_simd_level)
{
    tg_simd levels[3];
    int n = simd_levels(levels);
    tg_real dy[5] = {(tg_real)0.1, (tg_real)-3.3, (tg_real)7e-3, 1, (tg_real)0.3};
    tg_real x[5] = {1, (tg_real)-2.5, (tg_real)1e6, 0, (tg_real)0.1}, out[5 * 2 + 2];
    for (int i = 0; i < n; i++) {
        for (int r = 1; r <= 5; r += 4) {
            ln_run(levels[i], r, 1, x, (tg_real[]){(tg_real)1.1}, (tg_real[]){(tg_real)0.2}, dy, out);
            for (int k = 0; k < r; k++)
                cr_assert(out[r + k] == 0, "level %s, row %d: dx = %.9g, want exactly 0",
                          tg_simd_name(levels[i]), k, (double)out[r + k]);
        }
        cr_log_info("SIMD level %s ran: dx exactly 0", tg_simd_name(levels[i]));
    }
}

/* Random rows of widths around the lanes and vector lengths: y and every
 * grad the same bits at every level. */
Test(norm, every_simd_level_gives_the_same_bits)
{
    tg_simd levels[3];
    int n = simd_levels(levels);
    static const int widths[] = {1, 3, 8, 17, 64, 100};
    tg_rng rng;
    tg_rng_seed(&rng, 11);
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
        int rows = 7, C = widths[wi];
        size_t len = 2 * (size_t)rows * C + 2 * (size_t)C;
        tg_tensor *x = tu_rand(&rng, -2, 2, 2, (int[]){rows, C}), *dy = tu_rand(&rng, -1, 1, 2, (int[]){rows, C});
        tg_tensor *w = tu_rand(&rng, 0.5, 1.5, 1, (int[]){C}), *b = tu_rand(&rng, -0.5, 0.5, 1, (int[]){C});
        tg_real *first = malloc(len * sizeof *first), *other = malloc(len * sizeof *other);
        ln_run(levels[0], rows, C, x->data, w->data, b->data, dy->data, first);
        for (int i = 1; i < n; i++) {
            ln_run(levels[i], rows, C, x->data, w->data, b->data, dy->data, other);
            for (size_t k = 0; k < len; k++)
                cr_assert(memcmp(&first[k], &other[k], sizeof *first) == 0, "C = %d, value %zu: %s %.9g, %s %.9g", C,
                          k, tg_simd_name(levels[0]), (double)first[k], tg_simd_name(levels[i]), (double)other[k]);
        }
        free(first);
        free(other);
        tg_tensor *in[4] = {x, dy, w, b};
        tu_free_all(in, 4);
    }
    for (int i = 0; i < n; i++) cr_log_info("SIMD level %s ran", tg_simd_name(levels[i]));
}
