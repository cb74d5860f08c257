/* The custom-op API (core/engine/op.h) as a user meets it: the sigmoid of
 * examples/custom_op.c passes gradcheck, agrees with the same function built
 * from core ops, shows up in dumps and gets the engine's misuse checks. */
#define CUSTOM_OP_NO_MAIN
#include "../examples/custom_op.c"

#include "test_util.h"

static tg_tensor *f_sigmoid(tg_tape *t, tg_tensor **in, void *ctx)
{
    return my_sigmoid(t, in[0], *(const double *)ctx);
}

Test(custom_op, sigmoid_gradcheck)
{
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_tensor *x = tu_rand(&rng, -3, 3, 3, (int[]){2, 3, 4});
    double slope = 1.5;
    tu_gradcheck(f_sigmoid, &slope, &x, 1);
    tg_tensor_free(x);
}

/* sigmoid(s x) = (1 + tanh(s x / 2)) / 2: values and grads of both agree. */
Test(custom_op, sigmoid_matches_core_ops)
{
    tg_rng rng;
    tg_rng_seed(&rng, 4);
    tg_tensor *x = tu_rand(&rng, -3, 3, 1, (int[]){7});
    tg_tensor *w = tu_rand(&rng, -1, 1, 1, (int[]){7});
    w->requires_grad = false;
    tg_tape *t = tg_tape_new();
    tg_tensor *y = my_sigmoid(t, x, 0.7);
    cr_assert_eq(tg_backward(t, tg_sum(t, tg_mul(t, y, w))), 0, "%s", tg_tape_error(t));
    tg_real mine[7], yv[7];
    memcpy(mine, x->grad, sizeof mine);
    memcpy(yv, y->data, sizeof yv);
    memset(x->grad, 0, sizeof mine);
    tg_tape_reset(t);
    tg_tensor *half = tg_tensor_from(t, (tg_real[]){0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, 1, (int[]){7});
    tg_tensor *ref = tg_add(t, tg_scale(t, tg_tanh(t, tg_scale(t, x, 0.35)), 0.5), half);
    cr_assert_eq(tg_backward(t, tg_sum(t, tg_mul(t, ref, w))), 0, "%s", tg_tape_error(t));
    for (int i = 0; i < 7; i++) {
        tu_close(yv[i], ref->data[i], 10 * TU_TOL);
        tu_close(mine[i], x->grad[i], 10 * TU_TOL);
    }
    tg_tensor_free(x);
    tg_tensor_free(w);
    tg_tape_free(t);
}

Test(custom_op, dump_and_misuse)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(1, (int[]){2});
    x->requires_grad = true;
    cr_assert_not_null(my_sigmoid(t, x, 1));
    char buf[1024] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    tg_tape_dump(t, f);
    fclose(f);
    cr_assert(strstr(buf, "my_sigmoid") && strstr(buf, "[2]"), "%s", buf);
    tg_tensor *old = tg_tensor_zeros(t, 1, (int[]){2});
    tg_tape_reset(t);
    cr_assert_null(my_sigmoid(t, old, 1));
    cr_assert_str_eq(tg_tape_error(t), "my_sigmoid: input 0 is a tensor from before tg_tape_reset");
    tg_tensor_free(x);
    tg_tape_free(t);
}
