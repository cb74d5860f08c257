/* tg_detach and tg_retain_grad: a detached tensor shares data and sends no
 * grad back; a retained op output (or view) keeps its grad after backward,
 * intact while later nodes reuse the arena; misuse is named. */
#include "ops_util.h"

Test(detach, shares_data_and_stops_grad)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *x = tu_rand(&rng, -2, 2, 2, (int[]){3, 4});
    tg_tensor *d = tg_detach(t, x);
    cr_assert(d && d->data == x->data && !d->requires_grad && !d->grad && tg_shape_equal(d, x));
    /* sum(x*x + detach(x)*x): d x = 2x + x, the detached factor a constant */
    tg_tensor *y = tg_sum(t, tg_add(t, tg_mul(t, x, x), tg_mul(t, d, x)));
    cr_assert_eq(tg_backward(t, y), 0, "%s", tg_tape_error(t));
    for (size_t i = 0; i < x->size; i++) tu_close(x->grad[i], 3 * x->data[i], TU_TOL);
    tg_tape_reset(t);
    tg_tensor *only = tg_sum(t, tg_mul(t, tg_detach(t, x), tg_detach(t, x)));
    cr_assert_eq(tg_backward(t, only), -1);
    cr_assert(strstr(tg_tape_error(t), "does not depend on any tensor that requires grad"));
    tg_tape_reset(t);
    assert_fails(t, tg_detach(t, NULL), "tg_detach", "input is NULL");
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(detach, retain_grad_of_an_op_output_and_a_view)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 2);
    tg_tensor *x = tu_rand(&rng, -1, 1, 2, (int[]){4, 6});
    tg_tensor *x0 = NULL;
    for (int retain = 0; retain < 2; retain++) {
        /* q = x0 (an arena leaf, through a node), h = 2q, a = exp(h),
         * loss = sum(a * a) + sum(view(h)^2): d h = 2 a^2 + 2 h. q's backward
         * runs after h's and takes x0's grad from the arena's given-back
         * pieces: h's grad, unless retained. */
        x0 = tg_tensor_from(t, x->data, 2, x->shape);
        x0->requires_grad = true;
        tg_tensor *q = tg_scale(t, x0, 1.0);
        tg_tensor *h = tg_scale(t, q, 2.0);
        tg_tensor *v = tg_reshape(t, h, 1, (int[]){24});
        if (retain) cr_assert_eq(tg_retain_grad(t, v), 0);
        tg_tensor *a = tg_exp(t, h);
        tg_tensor *loss = tg_add(t, tg_sum(t, tg_mul(t, a, a)), tg_sum(t, tg_mul(t, v, v)));
        cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
        if (!retain) {
            cr_assert_null(h->grad, "an op output's grad is handed back");
        } else {
            cr_assert(h->grad && v->grad && x0->grad && x0->grad != h->grad);
            for (int i = 0; i < 24; i++) {
                double hi = 2 * (double)x->data[i], want = 2 * exp(2 * hi) + 2 * hi;
                tu_close(h->grad[i], want, 1e-5);
                cr_assert_eq(v->grad[i], h->grad[i], "the view slices its base's grad");
                tu_close(x0->grad[i], 2 * want, 1e-5);
            }
        }
        tg_tape_reset(t);
    }
    /* misuse */
    tg_tensor *c = tg_tensor_zeros(t, 1, (int[]){3});
    cr_assert_eq(tg_retain_grad(t, c), -1);
    cr_assert(strstr(tg_error(), "tg_retain_grad: the tensor [3] does not require grad"), "%s", tg_error());
    tg_tape_reset(t);
    cr_assert_eq(tg_retain_grad(t, c), -1);
    cr_assert(strstr(tg_error(), "tg_retain_grad: the tensor is a tensor from before tg_tape_reset") ||
                  strstr(tg_error(), "not a live tensor"), "%s", tg_error());
    cr_assert_eq(tg_retain_grad(t, NULL), -1);
    cr_assert(strstr(tg_error(), "the tensor is NULL"));
    cr_assert_eq(tg_retain_grad(t, x), 0, "a leaf: nothing to do");
    tg_tensor_free(x);
    tg_tape_free(t);
}
