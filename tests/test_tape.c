/* The tape: recording, reverse accumulation, arena reuse with zero
 * allocations per step, sticky errors, out-of-memory reporting, dumps and
 * anomaly mode. */
#include <stdio.h>
#include <string.h>

#include "test_util.h"

Test(tape, backward_accumulates_over_reuse)
{
    /* y = sum(x*x + x) -> dy/dx = 2x + 1 (x used three times) */
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(1, (int[]){3});
    tg_real xv[] = {1, -2, 0.5};
    memcpy(x->data, xv, sizeof xv);
    x->requires_grad = true;
    tg_tensor *y = tg_sum(t, tg_add(t, tg_mul(t, x, x), x));
    cr_assert_eq(tg_backward(t, y), 0, "%s", tg_tape_error(t));
    for (int i = 0; i < 3; i++) cr_assert_eq(x->grad[i], 2 * xv[i] + 1);
    /* a second step without zeroing accumulates, as params do */
    tg_tape_reset(t);
    y = tg_sum(t, x);
    cr_assert_eq(tg_backward(t, y), 0);
    for (int i = 0; i < 3; i++) cr_assert_eq(x->grad[i], 2 * xv[i] + 2);
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(tape, recording_off_records_nothing)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(2, (int[]){2, 2});
    x->requires_grad = true;
    bool prev = tg_no_grad_begin(t);
    cr_assert(prev);
    cr_assert(!tg_no_grad_begin(t), "a nested scope sees recording off");
    tg_no_grad_end(t, false);
    tg_tensor *y = tg_tanh(t, tg_matmul(t, x, x, NULL, 0));
    cr_assert_not_null(y);
    cr_assert_eq(tg_tape_node_count(t), 0);
    cr_assert(!y->requires_grad);
    tg_no_grad_end(t, prev);
    cr_assert(tg_tape_recording(t));
    y = tg_tanh(t, tg_matmul(t, x, x, NULL, 0));
    cr_assert_eq(tg_tape_node_count(t), 2);
    cr_assert(y->requires_grad);
    /* data inputs that need no grad record nothing either */
    tg_tensor *c = tg_tensor_zeros(t, 2, (int[]){2, 2});
    tg_tanh(t, c);
    cr_assert_eq(tg_tape_node_count(t), 2);
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(tape, backward_errors)
{
    tg_tape *t = tg_tape_new();
    cr_assert_eq(tg_backward(t, NULL), -1);
    cr_assert_str_eq(tg_tape_error(t), "tg_backward: output is NULL");
    tg_tape_reset(t);
    cr_assert_null(tg_tape_error(t));
    tg_tensor *x = tg_tensor_zeros(t, 1, (int[]){4});
    cr_assert_eq(tg_backward(t, x), -1);
    cr_assert(strstr(tg_tape_error(t), "loss must have one element, got [4]"), "%s", tg_tape_error(t));
    tg_tape_reset(t);
    x = tg_tensor_zeros(t, 1, (int[]){4});
    /* an op error is kept when the NULL result reaches backward */
    tg_tensor *bad = tg_add(t, x, tg_tensor_zeros(t, 1, (int[]){5}));
    cr_assert_eq(tg_backward(t, tg_sum(t, bad)), -1);
    cr_assert(strstr(tg_tape_error(t), "tg_add: shapes do not broadcast"), "%s", tg_tape_error(t));
    tg_tape_free(t);
}

/* One fixed-shape training-like step: y = sum(gelu(x W^T + b)) */
static int step(tg_tape *t, tg_params *p, tg_tensor *x)
{
    tg_tensor *h = tg_matmul(t, x, tg_params_get(p, "w"), tg_params_get(p, "b"), TG_TRANS_B);
    tg_tensor *loss = tg_mean(t, tg_gelu(t, h));
    tg_params_zero_grad(p);
    int rc = tg_backward(t, loss);
    tg_tape_reset(t);
    return rc;
}

Test(tape, zero_allocations_after_first_step)
{
    tg_tape *t = tg_tape_new();
    tg_params *p = tg_params_new();
    tg_params_add(p, "w", 2, (int[]){64, 32});
    tg_params_add(p, "b", 1, (int[]){64});
    tg_rng r;
    tg_rng_seed(&r, 1);
    tg_tensor *x = tu_rand(&r, -1, 1, 2, (int[]){128, 32});
    x->requires_grad = false;
    cr_assert_eq(step(t, p, x), 0);
    uint64_t before = tg_alloc_count();
    for (int i = 0; i < 5; i++) cr_assert_eq(step(t, p, x), 0);
    cr_assert_eq(tg_alloc_count() - before, 0, "steps after the first allocated %llu times",
                 (unsigned long long)(tg_alloc_count() - before));
    tg_tensor_free(x);
    tg_params_free(p);
    tg_tape_free(t);
}

Test(tape, arena_grows_and_rewinds)
{
    tg_tape *t = tg_tape_new();
    for (int i = 0; i < 8; i++) cr_assert_not_null(tg_tensor_new(t, 2, (int[]){512, 512}));  /* 8 MiB+ */
    size_t cap = tg_tape_arena_capacity(t);
    cr_assert_geq(cap, (size_t)8 * 512 * 512 * sizeof(tg_real));
    tg_tape_reset(t);
    cr_assert_eq(tg_tape_arena_used(t), 0);
    for (int i = 0; i < 8; i++) cr_assert_not_null(tg_tensor_new(t, 2, (int[]){512, 512}));
    cr_assert_eq(tg_tape_arena_capacity(t), cap, "a rewound arena is reused, not grown");
    tg_tape_free(t);
}

/* Dead arena memory (scratch handed back, grads of temporaries after their
 * node) is handed out again before the arena grows: neighbours merge, and a
 * smaller request takes the front of a piece and leaves the rest spare. */
Test(tape, dead_memory_is_reused_merged_and_split)
{
    tg_tape *t = tg_tape_new();
    unsigned char *a = tg_arena_scratch(t, 4096, "test"), *b = tg_arena_scratch(t, 4090, "test");
    cr_assert(a && b == a + 4096, "fresh scratch comes from the arena in order");
    size_t used = tg_tape_arena_used(t);
    tg_arena_release(t, b, 4090);
    tg_arena_release(t, a, 4096);
    unsigned char *c = tg_arena_scratch(t, 8192, "test");
    cr_assert_eq(c, a, "two dead neighbours (4096 and 4090 rounded up to 4096) hold one request of both");
    tg_arena_release(t, c, 8192);
    unsigned char *d = tg_arena_scratch(t, 1000, "test"), *e = tg_arena_scratch(t, 7000, "test");
    cr_assert(d == a && e == a + 1024, "a piece is split (sizes round up to 64-byte units: 1024, 7040)");
    cr_assert_eq(tg_arena_scratch(t, 0, "test"), a + 8064, "the 128 bytes left hold a 64-byte unit");
    cr_assert_eq(tg_tape_arena_used(t), used, "nothing so far grew the arena");
    cr_assert_not_null(tg_arena_scratch(t, 200, "test"));
    cr_assert_eq(tg_tape_arena_used(t), used + 256, "64 spare bytes do not hold 200: the arena grows");
    tg_tape_free(t);
}

Test(tape, out_of_memory_is_an_error_not_a_crash)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = tg_tensor_zeros(t, 2, (int[]){4, 4});
    tg_alloc_fail_at(1);
    tg_tensor *big = tg_tensor_new(t, 2, (int[]){1 << 14, 1 << 12}); /* needs a new chunk */
    tg_alloc_fail_at(0);
    cr_assert_null(big);
    cr_assert(strstr(tg_tape_error(t), "out of memory"), "%s", tg_tape_error(t));
    cr_assert(strstr(tg_tape_error(t), "MiB for tg_tensor_new output"), "%s", tg_tape_error(t));
    tg_tape_reset(t);
    /* an absurd shape is refused without trying */
    cr_assert_null(tg_tensor_new(t, 4, (int[]){1 << 30, 1 << 30, 1 << 30, 1 << 30}));
    cr_assert(strstr(tg_tape_error(t), "invalid shape"), "%s", tg_tape_error(t));
    (void)a;
    tg_tape_free(t);
}

Test(tape, anomaly_names_the_first_op_with_nan)
{
    tg_tape *t = tg_tape_new();
    tg_tape_set_anomaly(t, true);
    tg_tensor *x = tg_tensor_alloc(1, (int[]){2});
    x->data[0] = (tg_real)INFINITY;
    x->requires_grad = true;
    tg_tensor *ok = tg_scale(t, x, 0.5);  /* inf, not the first op to make NaN */
    cr_assert_null(ok, "inf is caught too");
    cr_assert(strstr(tg_tape_error(t), "anomaly: tg_scale produced NaN/Inf"), "%s", tg_tape_error(t));
    tg_tape_reset(t);
    x->data[0] = 0;
    tg_tensor *y = tg_scale(t, x, 2);
    tg_tensor *z = tg_tensor_from(t, (tg_real[]){(tg_real)INFINITY, 1}, 1, (int[]){2});
    tg_tensor_free(x);
    x = NULL;
    tg_tape_set_anomaly(t, false);  /* z itself may hold inf: it is data */
    tg_tape_set_anomaly(t, true);
    cr_assert_null(tg_mul(t, y, z));  /* 0 * inf = NaN */
    cr_assert(strstr(tg_tape_error(t), "anomaly: tg_mul produced NaN/Inf in its output [2]"), "%s",
              tg_tape_error(t));
    tg_tape_free(t);
}

Test(tape, dump_lists_nodes)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(2, (int[]){3, 4});
    x->requires_grad = true;
    tg_sum(t, tg_relu(t, tg_matmul(t, x, x, NULL, TG_TRANS_B)));
    char buf[4096] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    tg_tape_dump(t, f);
    fclose(f);
    cr_assert(strstr(buf, "3 nodes"), "%s", buf);
    cr_assert(strstr(buf, "tg_matmul"), "%s", buf);
    cr_assert(strstr(buf, "[3,3]"), "%s", buf);
    cr_assert(strstr(buf, "tg_relu"), "%s", buf);
    cr_assert(strstr(buf, "tg_sum"), "%s", buf);
    tg_tensor_free(x);
    tg_tape_free(t);
}

/* A node holds every input of tg_concat, however many: dumps list them all
 * and the backward reaches the last one. */
Test(tape, concat_records_every_input)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *xs[6];
    for (int i = 0; i < 6; i++) {
        xs[i] = tg_tensor_alloc(2, (int[]){2, i + 1});
        xs[i]->requires_grad = true;
    }
    tg_tensor *y = tg_concat(t, xs, 6);
    cr_assert_eq(tg_backward(t, tg_sum(t, y)), 0, "%s", tg_tape_error(t));
    char buf[4096] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    tg_tape_dump(t, f);
    fclose(f);
    cr_assert(strstr(buf, "<- [2,1] [2,2] [2,3] [2,4] [2,5] [2,6]"), "%s", buf);
    for (int i = 0; i < 6; i++) {
        cr_assert_not_null(xs[i]->grad);
        for (size_t k = 0; k < xs[i]->size; k++) cr_assert_eq(xs[i]->grad[k], 1);
    }
    tu_free_all(xs, 6);
    tg_tape_free(t);
}
