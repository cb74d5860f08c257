/* Comparisons and selection (core/ops/pointwise/compare.c): 0/1 masks without grads,
 * where / masked_fill with grads to the chosen side (broadcasting),
 * maximum / minimum's half-and-half ties, max / min of every element with
 * the grad shared among ties, NaN handling, size-0 dims and misuse.
 * tinygrad's test_ops.py cases: test_maximum / test_minimum ([(45,65)] x 2
 * and the tie vals [[1,0,3,-4],[-1,-2,3,0]]), test_where ([(45,65)] x 3),
 * test_max_dont_collapse style full max with ties. */
#include "ops_util.h"

TU_SUITE(compare, 29);

Test(compare, masks_follow_ieee_and_broadcast)
{
    tg_tensor *a = mk(T, 2, (int[]){2, 3}, (tg_real[]){1, 2, NAN, -1, 0, 5});
    tg_tensor *b = mk(T, 1, (int[]){3}, (tg_real[]){1, 3, NAN});
    a->requires_grad = true;
    tg_tensor *(*const fns[6])(tg_tape *, tg_tensor *, tg_tensor *) = {tg_eq, tg_ne, tg_lt, tg_le, tg_gt, tg_ge};
    const tg_real want[6][6] = {
        {1, 0, 0, 0, 0, 0}, {0, 1, 1, 1, 1, 1}, {0, 1, 0, 1, 1, 0},
        {1, 1, 0, 1, 1, 0}, {0, 0, 0, 0, 0, 0}, {1, 0, 0, 0, 0, 0},
    };
    for (int k = 0; k < 6; k++) {
        tg_tensor *m = fns[k](T, a, b);
        cr_assert(m && m->ndim == 2 && m->shape[0] == 2 && m->shape[1] == 3);
        cr_assert(!m->requires_grad, "a mask never requires a grad");
        for (int e = 0; e < 6; e++) cr_assert_eq(m->data[e], want[k][e], "op %d element %d", k, e);
    }
}

static tg_tensor *f_where(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_where(t, ctx, in[0], in[1]);
}

/* where(c, a, b): grads go to the chosen side, summed over stretched dims */
Test(compare, where_grads_with_broadcasting)
{
    int shapes[][3][3] = {{{45, 65}, {45, 65}, {45, 65}}, {{4, 1, 5}, {1, 3, 1}, {1, 1, 5}}};
    int nd[] = {2, 3};
    for (int s = 0; s < 2; s++) {
        tg_tensor *c = tu_rand(&R, -1, 1, nd[s], shapes[s][0]);
        for (size_t e = 0; e < c->size; e++) c->data[e] = c->data[e] > 0;
        c->requires_grad = false;
        tg_tensor *in[2] = {tu_rand(&R, -2, 2, nd[s], shapes[s][1]), tu_rand(&R, -2, 2, nd[s], shapes[s][2])};
        tu_gradcheck(f_where, c, in, 2);
        tu_free_all(in, 2);
        tg_tensor_free(c);
    }
    tg_tensor *c = mk(T, 1, (int[]){4}, (tg_real[]){1, 0, NAN, 0});
    tg_tensor *a = mk(T, 1, (int[]){4}, (tg_real[]){1, 2, 3, 4}), *b = mk(T, 0, NULL, (tg_real[]){-7});
    a->requires_grad = b->requires_grad = true;
    tg_tensor *y = tg_where(T, c, a, b);
    cr_assert(y->data[0] == 1 && y->data[1] == -7 && y->data[2] == 3 && y->data[3] == -7);  /* NaN is true */
    cr_assert_eq(tg_backward_seed(T, y, (tg_real[]){1, 2, 3, 4}), 0, "%s", tg_tape_error(T));
    cr_assert(a->grad[0] == 1 && a->grad[1] == 0 && a->grad[2] == 3 && a->grad[3] == 0);
    cr_assert_eq(b->grad[0], 6);
}

static tg_tensor *f_fill(tg_tape *t, tg_tensor **in, void *ctx) { return tg_masked_fill(t, in[0], ctx, 0.5); }

Test(compare, masked_fill)
{
    tg_tensor *m = mk(T, 2, (int[]){1, 3}, (tg_real[]){0, 1, 0});
    tg_tensor *a = mk(T, 2, (int[]){2, 3}, (tg_real[]){1, 2, 3, 4, 5, 6});
    a->requires_grad = true;
    tg_tensor *y = tg_masked_fill(T, a, m, -INFINITY);
    cr_assert(y && tg_shape_equal(y, a));
    cr_assert(y->data[0] == 1 && isinf(y->data[1]) && y->data[2] == 3 && isinf(y->data[4]) && y->data[5] == 6);
    cr_assert_eq(tg_backward_seed(T, y, (tg_real[]){1, 1, 1, 1, 1, 1}), 0);
    cr_assert(a->grad[0] == 1 && a->grad[1] == 0 && a->grad[4] == 0 && a->grad[5] == 1);
    tg_tape_reset(T);
    /* the mask may widen a, as PyTorch's out-of-place masked_fill */
    tg_tensor *col = mk(T, 2, (int[]){2, 1}, (tg_real[]){1, 2}), *wide = mk(T, 1, (int[]){3}, (tg_real[]){0, 1, 0});
    col->requires_grad = true;
    y = tg_masked_fill(T, col, wide, 9);
    cr_assert(y->ndim == 2 && y->shape[0] == 2 && y->shape[1] == 3 && y->data[1] == 9 && y->data[3] == 2);
    cr_assert_eq(tg_backward_seed(T, y, (tg_real[]){1, 1, 1, 1, 1, 1}), 0);
    cr_assert(col->grad[0] == 2 && col->grad[1] == 2);
    tg_tape_reset(T);
    tg_tensor *mask = tu_rand(&R, -1, 1, 2, (int[]){1, 65});
    for (size_t e = 0; e < mask->size; e++) mask->data[e] = mask->data[e] > 0;
    tg_tensor *x = tu_rand(&R, -2, 2, 2, (int[]){45, 65});
    tu_gradcheck(f_fill, mask, &x, 1);
    tg_tensor_free(x);
    tg_tensor_free(mask);
}

static tg_tensor *f_maximum(tg_tape *t, tg_tensor **in, void *ctx)
{
    return ctx ? tg_minimum(t, in[0], in[1]) : tg_maximum(t, in[0], in[1]);
}

Test(compare, maximum_minimum_split_ties_and_propagate_nan)
{
    /* tinygrad test_maximum vals: [[1., 0., 3., -4.], 3.] and [[1,0,3,-4],[-1,-2,3,0]] */
    tg_tensor *a = mk(T, 1, (int[]){5}, (tg_real[]){1, 0, 3, -4, NAN});
    tg_tensor *b = mk(T, 1, (int[]){5}, (tg_real[]){-1, -2, 3, 0, 1});
    a->requires_grad = b->requires_grad = true;
    tg_tensor *y = tg_maximum(T, a, b);
    cr_assert(y->data[0] == 1 && y->data[1] == 0 && y->data[2] == 3 && y->data[3] == 0 && isnan(y->data[4]));
    cr_assert_eq(tg_backward_seed(T, y, (tg_real[]){1, 1, 1, 1, 1}), 0);
    const tg_real ga[] = {1, 1, 0.5, 0, 1}, gb[] = {0, 0, 0.5, 1, 1};  /* NaN: both get g (PyTorch) */
    for (int e = 0; e < 5; e++) cr_assert(a->grad[e] == ga[e] && b->grad[e] == gb[e], "element %d", e);
    tg_tape_reset(T);
    a->grad = NULL, b->grad = NULL;
    a = mk(T, 1, (int[]){4}, (tg_real[]){1, 0, 3, -4});
    tg_tensor *three = mk(T, 0, NULL, (tg_real[]){3});
    a->requires_grad = three->requires_grad = true;
    y = tg_minimum(T, a, three);
    cr_assert(y->data[0] == 1 && y->data[2] == 3 && y->data[3] == -4);
    cr_assert_eq(tg_backward_seed(T, y, (tg_real[]){1, 1, 1, 1}), 0);
    cr_assert(a->grad[0] == 1 && a->grad[2] == 0.5 && three->grad[0] == 0.5);
    tg_tape_reset(T);
    for (int k = 0; k < 2; k++) {
        tg_tensor *in[2] = {tu_rand(&R, -2, 2, 2, (int[]){45, 65}), tu_rand(&R, -2, 2, 1, (int[]){65})};
        for (size_t e = 0; e < in[0]->size; e++) /* no pair within eps of a tie */
            if (fabs((double)(in[0]->data[e] - in[1]->data[e % 65])) < 0.01) in[0]->data[e] += (tg_real)0.05;
        tu_gradcheck(f_maximum, k ? (void *)1 : NULL, in, 2);
        tu_free_all(in, 2);
    }
}

Test(compare, full_max_min_share_the_grad_among_ties)
{
    tg_tensor *a = mk(T, 2, (int[]){2, 3}, (tg_real[]){3, 1, 3, -2, 3, -2});
    a->requires_grad = true;
    tg_tensor *mx = tg_max(T, a), *mn = tg_min(T, a);
    cr_assert(mx->ndim == 0 && mx->data[0] == 3 && mn->data[0] == -2);
    cr_assert_eq(tg_backward(T, tg_add(T, mx, tg_scale(T, mn, 2))), 0, "%s", tg_tape_error(T));
    const tg_real want[] = {1.0 / 3, 0, 1.0 / 3, 1, 1.0 / 3, 1};
    for (int e = 0; e < 6; e++) tu_close(a->grad[e], want[e], TU_TOL);
    tg_tape_reset(T);
    a = mk(T, 1, (int[]){4}, (tg_real[]){1, NAN, 7, NAN});
    a->requires_grad = true;
    mx = tg_max(T, a);
    cr_assert(isnan(mx->data[0]) && isnan(tg_min(T, a)->data[0]));
    cr_assert_eq(tg_backward(T, mx), 0);
    cr_assert(a->grad[0] == 0 && a->grad[1] == 0.5 && a->grad[2] == 0 && a->grad[3] == 0.5);
}

Test(compare, size_zero_and_misuse)
{
    tg_tensor *e = tg_tensor_zeros(T, 2, (int[]){3, 0}), *b = mk(T, 1, (int[]){1}, (tg_real[]){1});
    tg_tensor *y = tg_where(T, e, e, b);
    cr_assert(y && y->size == 0 && y->shape[0] == 3 && y->shape[1] == 0);
    cr_assert(tg_eq(T, e, b)->size == 0);
    assert_fails(T, tg_max(T, e), "tg_max", "[3,0] is empty");
    assert_fails(T, tg_min(T, e), "tg_min", "empty");
    tg_tensor *a = mk(T, 2, (int[]){2, 3}, (tg_real[]){1, 2, 3, 4, 5, 6});
    tg_tensor *c = mk(T, 1, (int[]){2}, (tg_real[]){1, 0});
    assert_fails(T, tg_where(T, c, a, a), "tg_where", "[2], [2,3], [2,3]");
    assert_fails(T, tg_lt(T, a, c), "tg_lt", "do not broadcast");
    assert_fails(T, tg_maximum(T, a, NULL), "tg_maximum", "NULL");
    assert_fails(T, tg_masked_fill(T, a, c, 0), "tg_masked_fill", "[2,3], [2]");
}
