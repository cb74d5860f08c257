/* Comparisons and selection (core/ops/pointwise/compare.c): bool tensors without grads,
 * integer and bool operands promoted beside a float one (x * (x > y)),
 * where / masked_fill with bool masks and grads to the chosen side (broadcasting),
 * maximum / minimum's half-and-half ties, max / min of every element with
 * the grad shared among ties, NaN handling, size-0 dims and misuse.
 * tinygrad's test_ops.py cases: test_maximum / test_minimum ([(45,65)] x 2
 * and the tie vals [[1,0,3,-4],[-1,-2,3,0]]), test_where ([(45,65)] x 3),
 * test_max_dont_collapse style full max with ties. */
#include "ops_util.h"

TU_SUITE(compare, 29);

/* A bool tensor on t (an arena one) or on the heap (t NULL) holding v. */
static tg_tensor *bools(tg_tape *t, int ndim, const int *shape, const uint8_t *v)
{
    tg_tensor *m = t ? tg_tensor_from_dtype(t, TG_BOOL, v, ndim, shape) : tg_tensor_alloc_dtype(TG_BOOL, ndim, shape);
    cr_assert_not_null(m, "%s", tg_error());
    if (!t) memcpy(m->data, v, m->size);
    return m;
}

/* A heap bool tensor true where x > 0 */
static tg_tensor *positive(const tg_tensor *x)
{
    tg_tensor *m = tg_tensor_alloc_dtype(TG_BOOL, x->ndim, x->shape);
    cr_assert_not_null(m);
    for (size_t e = 0; e < x->size; e++) ((uint8_t *)m->data)[e] = x->data[e] > 0;
    return m;
}

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
        cr_assert_eq(m->dtype, TG_BOOL, "op %d gives %s", k, tg_dtype_name(m->dtype));
        cr_assert(!m->requires_grad, "a mask never requires a grad");
        for (int e = 0; e < 6; e++) cr_assert_eq(((uint8_t *)m->data)[e], want[k][e], "op %d element %d", k, e);
        cr_assert_null(tg_grad(T, m), "a bool tensor takes no grad");
    }
}

/* Integer and bool operands: beside a float one they take its type (PyTorch's
 * promotion); two of them compare exactly, int64 beyond float32's 2^24 too. */
Test(compare, integer_and_bool_operands)
{
    tg_tensor *x = mk(T, 1, (int[]){4}, (tg_real[]){0.5, 1, 2.5, -3});
    tg_tensor *i = tg_tensor_from_dtype(T, TG_I32, (int32_t[]){1, 1, 2, -3}, 1, (int[]){4});
    const uint8_t lt[4] = {1, 0, 0, 0}, eq[4] = {0, 1, 0, 1};
    tg_tensor *m = tg_lt(T, x, i), *e = tg_eq(T, i, x);
    cr_assert(m && e && m->dtype == TG_BOOL && e->dtype == TG_BOOL, "%s", tg_tape_error(T));
    cr_assert(!memcmp(m->data, lt, 4) && !memcmp(e->data, eq, 4));
    int64_t big = (int64_t)1 << 40;
    tg_tensor *p = tg_tensor_from_dtype(T, TG_I64, (int64_t[]){big, big + 1, -big}, 1, (int[]){3});
    tg_tensor *q = tg_tensor_from_dtype(T, TG_I64, (int64_t[]){big}, 1, (int[]){1});
    tg_tensor *pe = tg_eq(T, p, q), *pg = tg_gt(T, p, q);
    cr_assert(pe && pg && pe->dtype == TG_BOOL, "%s", tg_tape_error(T));
    cr_assert(!memcmp(pe->data, (uint8_t[]){1, 0, 0}, 3) && !memcmp(pg->data, (uint8_t[]){0, 1, 0}, 3));
    /* bool with bool, and a bool mask against an int: compared as 0 / 1 */
    tg_tensor *ne = tg_ne(T, m, e), *ge = tg_ge(T, i, m);
    cr_assert(ne && ge, "%s", tg_tape_error(T));
    cr_assert(!memcmp(ne->data, (uint8_t[]){1, 1, 0, 1}, 4) && !memcmp(ge->data, (uint8_t[]){1, 1, 1, 0}, 4));
    /* x * (x > 1) and x - i: float results; the int and bool operands get no grad */
    x->requires_grad = true;
    tg_tensor *y = tg_mul(T, x, tg_gt(T, x, mk(T, 0, NULL, (tg_real[]){1})));
    tg_tensor *d = tg_sub(T, x, i);
    cr_assert(y && d && y->dtype == TG_REAL_DTYPE && d->dtype == TG_REAL_DTYPE, "%s", tg_tape_error(T));
    cr_assert(y->data[0] == 0 && y->data[1] == 0 && y->data[2] == 2.5 && y->data[3] == 0);
    cr_assert(d->data[0] == -0.5 && d->data[1] == 0 && d->data[2] == 0.5 && d->data[3] == 0);
    cr_assert_eq(tg_backward(T, tg_sum(T, tg_add(T, y, d))), 0, "%s", tg_tape_error(T));
    cr_assert(x->grad[0] == 1 && x->grad[1] == 1 && x->grad[2] == 2 && x->grad[3] == 1);
    tg_tape_reset(T);
    /* only integer or bool operands: what needs a float type is refused */
    i = tg_tensor_from_dtype(T, TG_I64, (int64_t[]){1, 2}, 1, (int[]){2});
    tg_tensor *bm = bools(T, 1, (int[]){2}, (uint8_t[]){1, 0});
    assert_fails(T, tg_add(T, i, i), "tg_add", "input 0 is int64", "float tensors");
    assert_fails(T, tg_mul(T, bm, i), "tg_mul", "input 0 is bool", "float tensors");
    assert_fails(T, tg_exp(T, i), "tg_exp", "input 0 is int64");
    assert_fails(T, tg_masked_fill(T, i, bm, 0), "tg_masked_fill", "input 0 is int64");
    assert_fails(T, tg_lt(T, i, NULL), "tg_lt", "NULL");
}

/* x * (x > y) and where with an int64 operand, gradchecked in float32 and float64 */
static tg_tensor *f_mask_mul(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return tg_mul(t, in[0], tg_gt(t, in[0], in[1]));
}
static tg_tensor *f_where_int(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_where(t, tg_lt(t, in[0], in[1]), in[1], ctx);
}

Test(compare, bool_times_float_gradcheck)
{
    tg_tensor *in[2] = {tu_rand(&R, -2, 2, 2, (int[]){5, 7}), tu_rand(&R, -2, 2, 1, (int[]){7})};
    for (size_t e = 0; e < in[0]->size; e++) /* no pair within eps of the step */
        if (fabs((double)(in[0]->data[e] - in[1]->data[e % 7])) < 0.01) in[0]->data[e] += (tg_real)0.05;
    tu_gradcheck(f_mask_mul, NULL, in, 2);
    tg_tensor *k = tg_tensor_alloc_dtype(TG_I64, 1, (int[]){7});
    for (int e = 0; e < 7; e++) ((int64_t *)k->data)[e] = e - 3;
    tu_gradcheck(f_where_int, k, in, 2);
    tg_tensor_free(k);
    tu_free_all(in, 2);
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
        tg_tensor *r = tu_rand(&R, -1, 1, nd[s], shapes[s][0]), *c = positive(r);
        tg_tensor_free(r);
        tg_tensor *in[2] = {tu_rand(&R, -2, 2, nd[s], shapes[s][1]), tu_rand(&R, -2, 2, nd[s], shapes[s][2])};
        tu_gradcheck(f_where, c, in, 2);
        tu_free_all(in, 2);
        tg_tensor_free(c);
    }
    tg_tensor *c = bools(T, 1, (int[]){4}, (uint8_t[]){1, 0, 1, 0});
    tg_tensor *a = mk(T, 1, (int[]){4}, (tg_real[]){1, 2, 3, 4}), *b = mk(T, 0, NULL, (tg_real[]){-7});
    a->requires_grad = b->requires_grad = true;
    tg_tensor *y = tg_where(T, c, a, b);
    cr_assert(y && y->dtype == TG_REAL_DTYPE, "%s", tg_tape_error(T));
    cr_assert(y->data[0] == 1 && y->data[1] == -7 && y->data[2] == 3 && y->data[3] == -7);
    cr_assert_eq(tg_backward_seed(T, y, (tg_real[]){1, 2, 3, 4}), 0, "%s", tg_tape_error(T));
    cr_assert(a->grad[0] == 1 && a->grad[1] == 0 && a->grad[2] == 3 && a->grad[3] == 0);
    cr_assert_eq(b->grad[0], 6);
}

static tg_tensor *f_fill(tg_tape *t, tg_tensor **in, void *ctx) { return tg_masked_fill(t, in[0], ctx, 0.5); }

Test(compare, masked_fill)
{
    tg_tensor *m = bools(T, 2, (int[]){1, 3}, (uint8_t[]){0, 1, 0});
    tg_tensor *a = mk(T, 2, (int[]){2, 3}, (tg_real[]){1, 2, 3, 4, 5, 6});
    a->requires_grad = true;
    tg_tensor *y = tg_masked_fill(T, a, m, -INFINITY);
    cr_assert(y && tg_shape_equal(y, a));
    cr_assert(y->data[0] == 1 && isinf(y->data[1]) && y->data[2] == 3 && isinf(y->data[4]) && y->data[5] == 6);
    cr_assert_eq(tg_backward_seed(T, y, (tg_real[]){1, 1, 1, 1, 1, 1}), 0);
    cr_assert(a->grad[0] == 1 && a->grad[1] == 0 && a->grad[4] == 0 && a->grad[5] == 1);
    tg_tape_reset(T);
    /* the mask may widen a, as PyTorch's out-of-place masked_fill */
    tg_tensor *col = mk(T, 2, (int[]){2, 1}, (tg_real[]){1, 2}), *wide = bools(T, 1, (int[]){3}, (uint8_t[]){0, 1, 0});
    col->requires_grad = true;
    y = tg_masked_fill(T, col, wide, 9);
    cr_assert(y->ndim == 2 && y->shape[0] == 2 && y->shape[1] == 3 && y->data[1] == 9 && y->data[3] == 2);
    cr_assert_eq(tg_backward_seed(T, y, (tg_real[]){1, 1, 1, 1, 1, 1}), 0);
    cr_assert(col->grad[0] == 2 && col->grad[1] == 2);
    tg_tape_reset(T);
    tg_tensor *r = tu_rand(&R, -1, 1, 2, (int[]){1, 65}), *mask = positive(r);
    tg_tensor_free(r);
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
    tg_tensor *eb = tg_tensor_zeros_dtype(T, TG_BOOL, 2, (int[]){3, 0});
    tg_tensor *y = tg_where(T, eb, e, b);
    cr_assert(y && y->size == 0 && y->shape[0] == 3 && y->shape[1] == 0);
    cr_assert(tg_eq(T, e, b)->size == 0);
    assert_fails(T, tg_max(T, e), "tg_max", "[3,0] is empty");
    assert_fails(T, tg_min(T, e), "tg_min", "empty");
    tg_tensor *a = mk(T, 2, (int[]){2, 3}, (tg_real[]){1, 2, 3, 4, 5, 6});
    tg_tensor *c = bools(T, 1, (int[]){2}, (uint8_t[]){1, 0});
    assert_fails(T, tg_where(T, c, a, a), "tg_where", "[2], [2,3], [2,3]");
    assert_fails(T, tg_lt(T, a, c), "tg_lt", "do not broadcast");
    assert_fails(T, tg_maximum(T, a, NULL), "tg_maximum", "NULL");
    assert_fails(T, tg_masked_fill(T, a, c, 0), "tg_masked_fill", "[2,3], [2]");
    /* a float condition or mask is refused naming the op and its dtype, as PyTorch */
    tg_tensor *fc = mk(T, 1, (int[]){3}, (tg_real[]){1, 0, 1});
    char want[64];
    snprintf(want, sizeof want, "is %s, not bool", tg_dtype_name(TG_REAL_DTYPE));
    assert_fails(T, tg_where(T, fc, a, a), "tg_where: the condition", want);
    assert_fails(T, tg_masked_fill(T, a, fc, 0), "tg_masked_fill: the mask", want);
    tg_tensor *ic = tg_tensor_from_dtype(T, TG_I64, (int64_t[]){1, 0, 1}, 1, (int[]){3});
    assert_fails(T, tg_where(T, ic, a, a), "tg_where: the condition is int64, not bool");
    /* a condition from before tg_tape_reset is named as such */
    tg_tape_reset(T);
    a = mk(T, 1, (int[]){2}, (tg_real[]){1, 2});
    assert_fails(T, tg_where(T, c, a, a), "tg_where", "from before tg_tape_reset");
}
