/* elementwise ops and reductions (core/ops/pointwise/binary.c, math.c,
 * activation.c, core/ops/reduce/all.c): values on hand-computed cases,
 * add_inplace's gradcheck, and rejection of bad shapes (the others'
 * gradchecks: their op-case rows, tests/op_cases_pointwise.c). */
#include <string.h>

#include "test_util.h"
#include "../core/ops/internal.h"

TU_SUITE(elementwise, 42);

Test(elementwise, elementwise_values)
{
    tg_real av[] = {-1, 0.5, 2}, bv[] = {3, -4, 0.25};
    tg_tensor *a = tg_tensor_from(T, av, 1, (int[]){3}), *b = tg_tensor_from(T, bv, 1, (int[]){3});
    tg_tensor *s = tg_add(T, a, b), *d = tg_sub(T, a, b), *m = tg_mul(T, a, b), *r = tg_relu(T, a);
    tg_tensor *g = tg_gelu(T, a), *sum = tg_sum(T, a), *mean = tg_mean(T, b);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(s->data[i], av[i] + bv[i]);
        cr_assert_eq(d->data[i], av[i] - bv[i]);
        cr_assert_eq(m->data[i], av[i] * bv[i]);
        cr_assert_eq(r->data[i], av[i] > 0 ? av[i] : 0);
        tu_close(g->data[i], 0.5 * av[i] * (1 + erf(av[i] / sqrt(2.0))), TU_TOL);
    }
    cr_assert_eq(sum->ndim, 0);
    tu_close(sum->data[0], 1.5, TU_TOL);
    tu_close(mean->data[0], -0.25, TU_TOL);
    tu_close(g->data[0], -0.15865525393145707, 1e-6);  /* torch.nn.functional.gelu(-1) */
}

/* x * w (mul's backward reads its inputs, never its output) + b over the
 * product's memory */
static tg_tensor *f_add_inplace(tg_tape *t, tg_tensor **in, void *c)
{
    (void)c;
    return tg_add_inplace(t, tg_mul(t, in[0], in[1]), in[2]);
}

Test(elementwise, add_inplace_is_add_over_a)
{
    tg_tensor *x = tu_rand(&R, -1, 1, 3, (int[]){2, 3, 4}), *w = tu_rand(&R, -1, 1, 3, (int[]){2, 3, 4});
    tg_tensor *b = tu_rand(&R, -1, 1, 1, (int[]){4});
    tg_tensor *in[3] = {x, w, b};
    tu_gradcheck(f_add_inplace, NULL, in, 3);
    tg_tensor *a = tg_mul(T, x, w), *want = tg_add(T, a, b), *got = tg_add_inplace(T, a, b);
    cr_assert(got && got->data == a->data && got->ndim == 3 && got->shape[2] == 4, "the sum lives in a's memory");
    cr_assert_eq(memcmp(got->data, want->data, want->size * sizeof(tg_real)), 0, "the bits of tg_add");
    tu_expect_error(T, tg_add_inplace(T, tg_mul(T, b, b), x), "tg_add_inplace", "must broadcast to a's shape");
    tu_expect_error(T, tg_add_inplace(T, x, x), "tg_add_inplace", "parameter or heap tensor");
    tu_free_all(in, 3);
}

/* broadcasting shape errors: tests/test_broadcast.c */
Test(elementwise, elementwise_rejects_null)
{
    cr_assert_null(tg_relu(T, NULL));
    cr_assert_str_eq(tg_tape_error(T), "tg_relu: input is NULL");
}
