/* The custom-op API (core/engine/op.h) as a user meets it: the sigmoid of
 * examples/custom_op.c passes gradcheck, agrees with the same function built
 * from core ops, shows up in dumps and gets the engine's misuse checks; an
 * op whose backward refuses or writes NaN (anomaly mode), and each reason
 * tg_gradcheck gives for not checking. */
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

/* ---- a user-written op whose backward misbehaves (core/engine/tape.h's op-author API) ------------- */

static void refusing_backward(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx)
{
    (void)out, (void)in, (void)ctx;
    tg_fail(t, "my_op: backward refused");
}

static void nan_backward(tg_tape *t, tg_tensor *out, tg_tensor *const *in, const void *ctx)
{
    (void)out, (void)ctx;
    void *g = tg_grad_as(t, in[0], in[0]->dtype);
    if (g) tg_dtype_store(in[0]->dtype, g, 0, NAN);
}

/* identity forward, backward as given */
static tg_tensor *my_op(tg_tape *t, tg_tensor *x, tg_backward_fn bw)
{
    const tg_op op = {"my_op", bw, 0};
    if (!tg_inputs_check_dtype(t, &op, x ? x->dtype : TG_REAL_DTYPE, &x, 1, 1)) return NULL;
    tg_tensor *out = tg_new_like(t, &op, x);
    if (!out) return NULL;
    memcpy(out->data, x->data, x->size * tg_dtype_size(x->dtype));
    if (!tg_op_record(t, &op, out, &x, 1, NULL)) return NULL;
    return tg_op_done(t, &op, out);
}

/* ---- gradcheck: why it could not check ---------------------------------------------------------- */

typedef struct gc_ctx {
    int calls, fail_from;  /* f fails from call fail_from on (0: never) */
    tg_backward_fn bw;     /* NULL: tg_tanh */
} gc_ctx;

static tg_tensor *gc_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    gc_ctx *c = ctx;
    if (c->fail_from && ++c->calls >= c->fail_from) return tg_fail(t, "gc_fn: refused on call %d", c->calls);
    return c->bw ? my_op(t, in[0], c->bw) : tg_tanh(t, in[0]);
}

static tg_gradcheck_result gc(tg_tensor **in, int n, gc_ctx c) { return tg_gradcheck(gc_fn, &c, in, n, NULL); }

Test(custom_op, gradcheck_reports_why_it_could_not_check)
{
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *x = tu_rand(&rng, -1, 1, 1, (int[]){3}), *in[2] = {x, NULL};
    tg_gradcheck_result r = tg_gradcheck(NULL, NULL, in, 1, NULL);
    cr_assert(!r.ok);
    tu_assert_has(tg_error(), "gradcheck: the function is NULL");
    r = gc(in, 2, (gc_ctx){0});
    tu_assert_has(tg_error(), "an input is NULL");
    r = gc(in, 1, (gc_ctx){.fail_from = 1});
    tu_assert_has(tg_error(), "the forward pass failed: gc_fn: refused on call 1");
    r = gc(in, 1, (gc_ctx){.fail_from = 2});
    tu_assert_has(tg_error(), "a perturbed forward failed: gc_fn: refused on call");
    r = gc(in, 1, (gc_ctx){.bw = refusing_backward});
    tu_assert_has(tg_error(), "backward failed: my_op: backward refused");
    cr_assert(gc(in, 1, (gc_ctx){0}).ok);
    tg_tensor_free(x);
}

/* Every allocation of tg_gradcheck's set-up fails in turn: input grad, tape,
 * the forward's arena, the weighting, the float64 copies of float32 inputs;
 * each is named. */
Test(custom_op, gradcheck_out_of_memory)
{
    tg_rng rng;
    tg_rng_seed(&rng, 2);
    const char *want[] = {"out of memory for an input's grad", "out of memory for the tape",
                          "the forward pass failed: out of memory", "out of memory for the weighting",
                          "out of memory for the inputs' float64 copies"};
    bool seen[5] = {false};
    bool ok = false;
    for (uint64_t n = 1; n < 20 && !ok; n++) {
        tg_tensor *x = tu_rand(&rng, -1, 1, 1, (int[]){3});  /* no grad yet */
        tg_alloc_fail_at(n);
        tg_gradcheck_result r = gc(&x, 1, (gc_ctx){0});
        tg_alloc_fail_at(0);
        ok = r.ok;
        int k = 0;
        while (!ok && k < 5 && !strstr(tg_error(), want[k])) k++;
        cr_assert(ok || k < 5, "allocation %d: %s", (int)n, tg_error());
        if (!ok) seen[k] = true;
        tg_tensor_free(x);
    }
    cr_assert(ok);
    for (int k = 0; k < 5; k++) cr_assert(seen[k] || (k == 4 && TG_REAL_DTYPE == TG_F64), "never saw: %s", want[k]);
}

Test(custom_op, backward_seed_null_and_anomaly_in_a_backward)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(1, (int[]){3});
    x->requires_grad = true;
    tg_tensor *y = my_op(t, x, nan_backward);
    cr_assert_eq(tg_backward_seed(t, y, NULL), -1);
    cr_assert_str_eq(tg_tape_error(t), "tg_backward: seed is NULL");
    tg_tape_reset(t);
    tg_tape_set_anomaly(t, true);
    y = tg_sum(t, my_op(t, x, nan_backward));
    cr_assert_eq(tg_backward(t, y), -1);
    tu_assert_has(tg_tape_error(t), "anomaly: backward of my_op produced NaN/Inf in the grad of input 0 [3]");
    cr_assert_eq(tg_backward_seed(NULL, y, (tg_real[]){1}), -1);
    cr_assert_str_eq(tg_error(), "tg_backward: the tape is NULL");
    tg_tensor_free(x);
    tg_tape_free(t);
}
