/* Tensors, the parameter store, the RNG and the allocation hooks. */
#include <string.h>

#include "test_util.h"

Test(tensor, shapes_and_overflow)
{
    size_t n;
    cr_assert(tg_shape_size(3, (int[]){2, 3, 4}, &n));
    cr_assert_eq(n, 24);
    cr_assert(tg_shape_size(0, NULL, &n));
    cr_assert_eq(n, 1, "a 0-d tensor holds one element");
    cr_assert(tg_shape_size(2, (int[]){0, 5}, &n));
    cr_assert_eq(n, 0);
    cr_assert(!tg_shape_size(9, (int[]){1, 1, 1, 1, 1, 1, 1, 1, 1}, &n));
    cr_assert(!tg_shape_size(2, (int[]){-1, 3}, &n));
    cr_assert(!tg_shape_size(4, (int[]){1 << 30, 1 << 30, 1 << 30, 1 << 30}, &n));
    tg_tensor *x = tg_tensor_alloc(2, (int[]){2, 3});
    char s[TG_SHAPE_STR];
    cr_assert_str_eq(tg_shape_str(x, s), "[2,3]");
    cr_assert_eq(tg_rows(x), 2);
    cr_assert_eq(tg_cols(x), 3);
    cr_assert_null(tg_tensor_alloc(2, (int[]){-2, 3}));
    tg_tensor_free(x);
}

Test(params, store_names_flat_view_and_zero_grad)
{
    tg_params *p = tg_params_new();
    tg_tensor *w = tg_params_add(p, "fc.weight", 2, (int[]){3, 2});
    tg_tensor *b = tg_params_add(p, "fc.bias", 1, (int[]){3});
    cr_assert_not_null(w);
    cr_assert_not_null(b);
    cr_assert_null(tg_params_add(p, "fc.bias", 1, (int[]){3}));
    cr_assert(strstr(tg_error(), "'fc.bias' already exists"));
    cr_assert_eq(tg_params_count(p), 2);
    cr_assert_eq(tg_params_numel(p), 9);
    cr_assert_eq(tg_params_get(p, "fc.bias"), b);
    cr_assert_null(tg_params_get(p, "nope"));
    cr_assert_eq(w->data, tg_params_data(p));
    cr_assert_eq(b->data, tg_params_data(p) + 6);
    cr_assert_eq(b->grad, tg_params_grad(p) + 6);
    cr_assert_str_eq(tg_params_at(p, 1)->name, "fc.bias");
    for (size_t i = 0; i < 9; i++) tg_params_grad(p)[i] = 1;
    tg_params_zero_grad(p);
    for (size_t i = 0; i < 9; i++) cr_assert_eq(tg_params_grad(p)[i], 0);
    tg_params_free(p);
}

Test(params, add_out_of_memory_leaves_store_usable)
{
    tg_params *p = tg_params_new();
    tg_params_add(p, "a", 1, (int[]){4});
    for (uint64_t k = 1; k <= 4; k++) {
        tg_alloc_fail_at(k);
        tg_tensor *x = tg_params_add(p, "b", 1, (int[]){5});
        tg_alloc_fail_at(0);
        if (x) break;
        cr_assert(strstr(tg_error(), "out of memory"));
        cr_assert_eq(tg_params_count(p), 1);
        tg_params_get(p, "a")->data[3] = 7;  /* still points at valid memory */
    }
    tg_params_free(p);
}

Test(rng, reproducible_and_distributed)
{
    tg_rng a, b;
    tg_rng_seed(&a, 7);
    tg_rng_seed(&b, 7);
    for (int i = 0; i < 100; i++) cr_assert_eq(tg_rng_u32(&a), tg_rng_u32(&b));
    /* PCG32 reference stream for seed 7 is fixed across machines */
    tg_rng_seed(&a, 7);
    uint32_t first = tg_rng_u32(&a);
    tg_rng_seed(&b, 8);
    cr_assert_neq(first, tg_rng_u32(&b));
    double s = 0, s2 = 0, u = 0;
    int n = 100000;
    for (int i = 0; i < n; i++) {
        double z = tg_rng_normal(&a);
        s += z;
        s2 += z * z;
        double v = tg_rng_uniform(&a);
        cr_assert(v >= 0 && v < 1);
        u += v;
        cr_assert_lt(tg_rng_below(&a, 10), 10u);
    }
    cr_assert_lt(fabs(s / n), 0.02);
    cr_assert_lt(fabs(s2 / n - 1), 0.02);
    cr_assert_lt(fabs(u / n - 0.5), 0.01);
}

Test(alloc, counts_and_injects_failures)
{
    uint64_t c0 = tg_alloc_count();
    void *p = tg_malloc(16);
    cr_assert_not_null(p);
    cr_assert_eq(tg_alloc_count(), c0 + 1);
    tg_alloc_fail_at(2);
    void *q = tg_malloc(16), *r = tg_malloc(16), *s = tg_malloc(16);
    cr_assert_not_null(q);
    cr_assert_null(r, "the second allocation from now fails");
    cr_assert_not_null(s, "and only that one");
    tg_free(p);
    tg_free(q);
    tg_free(s);
}

Test(tensor, params_add_refusals)
{
    tg_params *p = tg_params_new();
    cr_assert_null(tg_params_add(p, "", 1, (int[]){2}));
    cr_assert_str_eq(tg_error(), "tg_params_add: empty name");
    cr_assert_null(tg_params_add(p, NULL, 1, (int[]){2}));
    cr_assert_str_eq(tg_error(), "tg_params_add: the name is NULL");
    cr_assert_null(tg_params_add(p, "w", 9, (int[]){1, 1, 1, 1, 1, 1, 1, 1, 1}));
    cr_assert_str_eq(tg_error(), "tg_params_add: 'w' has an invalid shape");
    cr_assert_null(tg_params_add(p, "w", 1, (int[]){-3}));
    cr_assert_str_eq(tg_error(), "tg_params_add: 'w' has an invalid shape");
    tg_error_clear();
    cr_assert_not_null(tg_params_add(p, "w", 1, (int[]){2}));
    cr_assert_null(tg_error());  /* a success leaves no message */
    tg_params_free(p);
}
