/* Creation ops (core/ops/create/create.c): tinygrad's test_arange / test_linspace /
 * test_eye / test_zeros / test_ones / test_full / test_negative_dims cases,
 * the random ones against the tg_rng stream they draw, the same values on one
 * thread and on two, and their distributions. */
#include "ops_util.h"

static void assert_values(const tg_tensor *x, const double *want, int n)
{
    cr_assert(x && x->ndim == 1 && x->shape[0] == n, "got %d elements, want %d", x ? x->shape[0] : -1, n);
    for (int i = 0; i < n; i++) tu_close(x->data[i], want[i], TU_TOL);
}

Test(create, arange_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    const struct {
        double start, end, step;
        int n;
    } cases[] = {{0, 10, 1, 10},        {0, 36, 1, 36},       {5, 10, 3, 2},           {10, 5, -3, 2},
                 {11, 5, -3, 2},        {1, 78, 2, 39},       {5.5, 175.5, 2.5, 68},   {-30.2, -0.3, 0.75, 40},
                 {-50.3, -380.2, -2.25, 147}, {0, 256, 1, 256}, {0, 4096, 1, 4096}, {3, 3, 1, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tg_tensor *x = tg_arange(t, cases[c].start, cases[c].end, cases[c].step);
        double *want = malloc((size_t)(cases[c].n + 1) * sizeof *want);
        for (int i = 0; i < cases[c].n; i++) want[i] = cases[c].start + i * cases[c].step;
        assert_values(x, want, cases[c].n);
        cr_assert(!x->requires_grad);
        free(want);
    }
    assert_fails(t, tg_arange(t, 0, 10, 0), "tg_arange", "step 0", "nonzero");
    assert_fails(t, tg_arange(t, 0, 10, -1), "tg_arange", "step -1 goes away from end 10");
    assert_fails(t, tg_arange(t, 0, NAN, 1), "tg_arange", "must be finite");
    assert_fails(t, tg_arange(t, 0, 1e12, 1), "tg_arange", "too many");
    tg_tape_free(t);
}

Test(create, linspace_tinygrad_cases)
{
    tg_tape *t = tg_tape_new();
    assert_values(tg_linspace(t, 5, 10, 3), (double[]){5, 7.5, 10}, 3);
    assert_values(tg_linspace(t, 5, 10, 1), (double[]){5}, 1);
    assert_values(tg_linspace(t, 5, 10, 0), NULL, 0);
    double w[30];
    for (int i = 0; i < 30; i++) w[i] = 5 + i * 5.0 / 29;
    assert_values(tg_linspace(t, 5, 10, 30), w, 30);
    for (int i = 0; i < 10; i++) w[i] = -5.5 + i * 11.0 / 9;
    tg_tensor *up = tg_linspace(t, -5.5, 5.5, 10), *down = tg_linspace(t, 5.5, -5.5, 10);
    assert_values(up, w, 10);
    cr_assert(up->data[0] == (tg_real)-5.5 && up->data[9] == (tg_real)5.5, "both ends exact");
    for (int i = 0; i < 10; i++) cr_assert_eq(down->data[i], -up->data[i], "symmetric");
    assert_fails(t, tg_linspace(t, 1, 2, -1), "tg_linspace", "steps -1");
    tg_tape_free(t);
}

Test(create, full_zeros_ones_eye)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *f = tg_full(t, 2, (int[]){45, 65}, 4), *z = tg_zeros(t, 2, (int[]){45, 65}), *o = tg_ones(t, 0, NULL);
    cr_assert(f && z && o && f->size == 45 * 65 && o->ndim == 0);
    for (size_t i = 0; i < f->size; i++) cr_assert(f->data[i] == 4 && z->data[i] == 0);
    cr_assert_eq(o->data[0], 1);
    tg_tensor *s = tg_zeros(t, 0, NULL);
    cr_assert(s && s->ndim == 0 && s->data[0] == 0);
    const int eyes[][2] = {{10, 10}, {3, 5}, {5, 3}, {1, 1}, {0, 0}};
    for (int c = 0; c < 5; c++) {
        tg_tensor *e = tg_eye(t, eyes[c][0], eyes[c][1]);
        cr_assert(e && e->shape[0] == eyes[c][0] && e->shape[1] == eyes[c][1]);
        for (int i = 0; i < eyes[c][0]; i++)
            for (int j = 0; j < eyes[c][1]; j++) cr_assert_eq(e->data[i * eyes[c][1] + j], i == j);
    }
    /* tinygrad's test_negative_dims*: (-3, 2), (2, -3), (2, -3, 0) */
    const int bad[][3] = {{-3, 2}, {2, -3}, {2, -3, 0}};
    const int nd[] = {2, 2, 3};
    const char *shown[] = {"[-3,2]", "[2,-3]", "[2,-3,0]"};
    tg_rng rng;
    tg_rng_seed(&rng, 0);
    for (int c = 0; c < 3; c++) {
        assert_fails(t, tg_full(t, nd[c], bad[c], 2), "tg_full", shown[c], "invalid");
        assert_fails(t, tg_zeros(t, nd[c], bad[c]), "tg_zeros", shown[c]);
        assert_fails(t, tg_ones(t, nd[c], bad[c]), "tg_ones", shown[c]);
        assert_fails(t, tg_rand(t, nd[c], bad[c], &rng), "tg_rand", shown[c]);
        assert_fails(t, tg_randn(t, nd[c], bad[c], &rng), "tg_randn", shown[c]);
        assert_fails(t, tg_randint(t, 0, 5, nd[c], bad[c], &rng), "tg_randint", shown[c]);
    }
    assert_fails(t, tg_eye(t, -3, 3), "tg_eye", "n -3");
    assert_fails(t, tg_eye(t, 3, -3), "tg_eye", "m -3");
    assert_fails(t, tg_full(t, 9, (int[]){1, 1, 1, 1, 1, 1, 1, 1, 1}, 0), "tg_full", "9 dims");
    tg_tape_free(t);
}

/* x has dtype dt and exactly the values want[n], read through its dtype */
static void assert_typed(const tg_tensor *x, tg_dtype dt, const double *want, size_t n)
{
    cr_assert(x, "%s", tg_error());
    cr_assert_eq(x->dtype, dt, "%s, want %s", tg_dtype_name(x->dtype), tg_dtype_name(dt));
    cr_assert_eq(x->size, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(tg_dtype_load(dt, x->data, i), want[i], "element %zu: %g, want %g", i, tg_dtype_load(dt, x->data, i), want[i]);
}

/* tinygrad's test_arange / test_linspace / test_full / test_zeros_like /
 * test_ones_like cases in int32 (PyTorch's values), and every dtype for the rest */
Test(create, creation_takes_a_dtype)
{
    tg_tape *t = tg_tape_new();
    assert_typed(tg_arange_dtype(t, TG_I32, 5, 10, 3), TG_I32, (double[]){5, 8}, 2);
    assert_typed(tg_arange_dtype(t, TG_I32, 10, 5, -3), TG_I32, (double[]){10, 7}, 2);
    assert_typed(tg_arange_dtype(t, TG_I32, 11, 5, -3), TG_I32, (double[]){11, 8}, 2);
    tg_tensor *big = tg_arange_dtype(t, TG_I64, 0, 4096, 1);
    cr_assert(big && big->dtype == TG_I64 && big->size == 4096 && ((int64_t *)big->data)[4095] == 4095);
    assert_typed(tg_linspace_dtype(t, TG_I32, 5, 10, 3), TG_I32, (double[]){5, 7, 10}, 3);
    assert_typed(tg_linspace_dtype(t, TG_I32, 5, 10, 20), TG_I32,
                 (double[]){5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 9, 9, 9, 10}, 20);
    /* (5, -5, 20) is left out: PyTorch's vectorised integer path gives -1 where
     * its own scalar formula, which this follows, truncates -0.26 to 0 */
    assert_fails(t, tg_linspace_dtype(t, TG_BOOL, 5, 10, 3), "tg_linspace_dtype", "bool");
    assert_fails(t, tg_arange_dtype(t, TG_BOOL, 0, 3, 1), "tg_arange_dtype", "bool");
    assert_fails(t, tg_linspace_dtype(t, TG_I32, 1, 2, -1), "tg_linspace_dtype", "steps -1");
    double fours[45 * 65];
    for (size_t i = 0; i < 45 * 65; i++) fours[i] = 4;
    assert_typed(tg_full_dtype(t, TG_I32, 2, (int[]){45, 65}, 4), TG_I32, fours, 45 * 65);
    assert_typed(tg_full_dtype(t, TG_I32, 1, (int[]){2}, 3.7), TG_I32, (double[]){3, 3}, 2);
    assert_typed(tg_full_dtype(t, TG_I64, 1, (int[]){2}, -3.7), TG_I64, (double[]){-3, -3}, 2);
    assert_typed(tg_full_dtype(t, TG_BOOL, 1, (int[]){2}, 0.5), TG_BOOL, (double[]){1, 1}, 2);
    assert_typed(tg_zeros_dtype(t, TG_I32, 2, (int[]){2, 3}), TG_I32, (double[]){0, 0, 0, 0, 0, 0}, 6);
    assert_typed(tg_ones_dtype(t, TG_I32, 2, (int[]){2, 3}), TG_I32, (double[]){1, 1, 1, 1, 1, 1}, 6);
    for (tg_dtype dt = 0; dt < TG_DTYPE_COUNT; dt++) {
        assert_typed(tg_ones_dtype(t, dt, 1, (int[]){3}), dt, (double[]){1, 1, 1}, 3);
        assert_typed(tg_zeros_dtype(t, dt, 0, NULL), dt, (double[]){0}, 1);
        assert_typed(tg_eye_dtype(t, dt, 2, 3), dt, (double[]){1, 0, 0, 0, 1, 0}, 6);
        tg_tensor *m = tg_full_dtype(t, dt, 1, (int[]){1}, -0.0);
        cr_assert(m && (!tg_dtype_is_float(dt) || signbit(tg_dtype_load(dt, m->data, 0))), "%s: -0 kept", tg_dtype_name(dt));
    }
    assert_fails(t, tg_zeros_dtype(t, TG_DTYPE_COUNT, 1, (int[]){2}), "tg_zeros_dtype", "not a dtype");
    assert_fails(t, tg_full_dtype(t, TG_I32, 2, (int[]){2, -3}, 1), "tg_full_dtype", "[2,-3]", "invalid");
    tg_tape_free(t);
}

/* the values are the tg_rng stream, in order, whatever the thread count */
Test(create, random_stream_and_threads)
{
    tg_tape *t = tg_tape_new();
    const int shape[3] = {7, 1, 33};
    tg_tensor *x[2][3];
    for (int th = 0; th < 2; th++) {
        tg_threads_set(th + 1);
        tg_rng rng;
        tg_rng_seed(&rng, 42);
        x[th][0] = tg_rand(t, 3, shape, &rng);
        x[th][1] = tg_randn(t, 3, shape, &rng);
        x[th][2] = tg_randint(t, -3, 4, 3, shape, &rng);
        cr_assert(x[th][0] && x[th][1] && x[th][2]);
    }
    tg_threads_set(0);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(memcmp(x[0][k]->data, x[1][k]->data, 231 * tg_dtype_size(x[0][k]->dtype)), 0);
    tg_rng ref;
    tg_rng_seed(&ref, 42);
    for (int i = 0; i < 231; i++) cr_assert_eq(x[0][0]->data[i], (tg_real)tg_rng_uniform(&ref));
    for (int i = 0; i < 231; i++) cr_assert_eq(x[0][1]->data[i], (tg_real)tg_rng_normal(&ref));
    const int64_t *k2 = tg_data(x[0][2], TG_I64);
    cr_assert_not_null(k2, "randint makes int64");
    for (int i = 0; i < 231; i++) cr_assert_eq(k2[i], -3 + (int)tg_rng_below(&ref, 7));
    tg_tape_free(t);
}

Test(create, random_distributions)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 7);
    const int n = 20000;
    tg_tensor *u = tg_rand(t, 1, &n, &rng), *g = tg_randn(t, 1, &n, &rng), *k = tg_randint(t, 5, 9, 1, &n, &rng);
    double su = 0, sg = 0, sg2 = 0;
    int count[4] = {0};
    for (int i = 0; i < n; i++) {
        cr_assert(u->data[i] >= 0 && u->data[i] < 1);
        su += u->data[i];
        sg += g->data[i];
        sg2 += (double)g->data[i] * g->data[i];
        int64_t kv = ((int64_t *)tg_data(k, TG_I64))[i];
        cr_assert(kv >= 5 && kv < 9);
        count[kv - 5]++;
    }
    /* 5 standard errors: mean of U(0,1) (sd 0.289), of N(0,1), its variance (sd sqrt 2), a quarter each */
    cr_assert(fabs(su / n - 0.5) < 5 * 0.289 / sqrt(n), "rand mean %g", su / n);
    cr_assert(fabs(sg / n) < 5 / sqrt(n), "randn mean %g", sg / n);
    cr_assert(fabs(sg2 / n - 1) < 5 * sqrt(2.0 / n), "randn variance %g", sg2 / n);
    for (int v = 0; v < 4; v++) cr_assert(fabs(count[v] - n / 4.0) < 5 * sqrt(n * 0.1875), "randint %d: %d", v + 5, count[v]);
    assert_fails(t, tg_rand(t, 1, &n, NULL), "tg_rand", "rng is NULL");
    assert_fails(t, tg_randint(t, 3, 3, 1, &n, &rng), "tg_randint", "[3, 3)", "non-empty");
    assert_fails(t, tg_randint(t, 0, (int64_t)1 << 40, 1, &n, &rng), "tg_randint", "2^32 wide");
    assert_fails(t, tg_randint(t, INT64_MIN, INT64_MAX, 1, &n, &rng), "tg_randint", "2^32 wide");
    tg_tape_free(t);
}

/* randint is int64 and exact far beyond 2^24 and 2^53, to either end of int64 */
Test(create, randint_exact_int64)
{
    tg_tape *t = tg_tape_new();
    const int64_t lows[3] = {(int64_t)1 << 40, INT64_MAX - 10, INT64_MIN};  /* high up to INT64_MAX */
    for (int c = 0; c < 3; c++) {
        tg_rng rng, ref;
        tg_rng_seed(&rng, 3);
        tg_rng_seed(&ref, 3);
        const int n = 64;
        tg_tensor *k = tg_randint(t, lows[c], lows[c] + 10, 1, &n, &rng);
        cr_assert(k && k->dtype == TG_I64 && !k->requires_grad, "%s", tg_tape_error(t));
        const int64_t *v = tg_data(k, TG_I64);
        for (int i = 0; i < n; i++) cr_assert_eq(v[i], lows[c] + (int64_t)tg_rng_below(&ref, 10), "case %d [%d]", c, i);
    }
    /* a range 2^32 wide draws whole u32s */
    tg_rng rng, ref;
    tg_rng_seed(&rng, 4);
    tg_rng_seed(&ref, 4);
    tg_tensor *w = tg_randint(t, -((int64_t)1 << 31), (int64_t)1 << 31, 1, (int[]){8}, &rng);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(((int64_t *)tg_data(w, TG_I64))[i], -((int64_t)1 << 31) + (int64_t)tg_rng_u32(&ref));
    tg_tape_free(t);
}
