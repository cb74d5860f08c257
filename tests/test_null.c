/* Every public function given NULL for a pointer it needs refuses it with a
 * message naming itself (or the op) and what was NULL, and returns its
 * failure value: never a crash. One test per header. */
#include <stdio.h>
#include <string.h>

#include "test_util.h"

/* call fails with a message holding fn and "NULL" (any value is discarded) */
#define REFUSES(call, fn)                                                                          \
    do {                                                                                           \
        tg_error_clear();                                                                          \
        (void)(call);                                                                              \
        const char *e_ = tg_error();                                                               \
        cr_assert(e_ && strstr(e_, fn) && strstr(e_, "NULL"), "%s: got \"%s\"", #call, e_ ? e_ : "(none)"); \
    } while (0)

Test(null, tape)
{
    cr_assert_null(tg_tensor_new(NULL, 1, (int[]){2}));
    REFUSES(tg_tensor_new(NULL, 1, (int[]){2}), "tg_tensor_new: the tape is NULL");
    REFUSES(tg_tensor_zeros(NULL, 1, (int[]){2}), "tg_tensor_zeros");
    REFUSES(tg_tensor_from(NULL, (tg_real[]){1}, 1, (int[]){1}), "tg_tensor_from");
    REFUSES(tg_tape_reset(NULL), "tg_tape_reset: the tape is NULL");
    cr_assert_eq(tg_no_grad_begin(NULL), false);
    REFUSES(tg_no_grad_begin(NULL), "tg_no_grad_begin");
    REFUSES(tg_no_grad_end(NULL, true), "tg_no_grad_end");
    REFUSES(tg_tape_recording(NULL), "tg_tape_recording");
    REFUSES(tg_tape_set_training(NULL, true), "tg_tape_set_training");
    REFUSES(tg_tape_training(NULL), "tg_tape_training");
    REFUSES(tg_tape_set_anomaly(NULL, true), "tg_tape_set_anomaly");
    REFUSES(tg_tape_clear_error(NULL), "tg_tape_clear_error");
    cr_assert_str_eq(tg_tape_error(NULL), "tg_tape_error: the tape is NULL");
    cr_assert_eq(tg_tape_node_count(NULL), -1);
    REFUSES(tg_tape_node_count(NULL), "tg_tape_node_count");
    REFUSES(tg_tape_arena_capacity(NULL), "tg_tape_arena_capacity");
    REFUSES(tg_tape_arena_used(NULL), "tg_tape_arena_used");
    REFUSES(tg_tape_dump(NULL, stderr), "tg_tape_dump: the tape is NULL");
    tg_tape *t = tg_tape_new();
    REFUSES(tg_tape_dump(t, NULL), "tg_tape_dump: the file is NULL");
    REFUSES(tg_tensor_new(t, 2, NULL), "tg_tensor_new: the shape is NULL");
    tg_tape_reset(t);
    REFUSES(tg_tensor_from(t, NULL, 1, (int[]){1}), "tg_tensor_from");
    tg_tape_reset(t);
    cr_assert_eq(tg_backward(NULL, NULL), -1);
    REFUSES(tg_backward(NULL, NULL), "tg_backward");
    REFUSES(tg_backward(t, NULL), "tg_backward");
    tg_tape_reset(t);
    REFUSES(tg_backward_seed(t, tg_tensor_zeros(t, 0, NULL), NULL), "tg_backward: seed is NULL");
    tg_tape_free(NULL);
    tg_tape_free(t);
}

/* The helpers op authors call (core/engine/op.h). */
Test(null, op_helpers)
{
    tg_tape *t = tg_tape_new();
    REFUSES(tg_new(NULL, "my_op", 1, (int[]){2}), "my_op: the tape is NULL");
    REFUSES(tg_new_like(t, "my_op", NULL), "my_op");
    tg_tape_reset(t);
    REFUSES(tg_new_header(NULL, "my_op"), "my_op: the tape is NULL");
    REFUSES(tg_arena_alloc(NULL, 8, "my_op"), "my_op: the tape is NULL");
    REFUSES(tg_arena_scratch(NULL, 8, "my_op"), "my_op: the tape is NULL");
    tg_arena_release(NULL, NULL, 8);
    REFUSES(tg_inputs_check(NULL, "my_op", NULL, 1, 1), "my_op: the tape is NULL");
    REFUSES(tg_inputs_check(t, "my_op", NULL, 1, 1), "my_op: input is NULL");
    tg_tape_reset(t);
    cr_assert_eq(tg_needs_grad(NULL, NULL, 0), false);
    REFUSES(tg_op_record(t, NULL, NULL, NULL, 0, NULL), "tg_op_record: the op is NULL");
    tg_tape_reset(t);
    REFUSES(tg_op_done(t, "my_op", NULL), "my_op: input is NULL");
    tg_tape_reset(t);
    REFUSES(tg_op_done(NULL, "my_op", NULL), "my_op: the tape is NULL");
    REFUSES(tg_grad(t, NULL), "tg_grad: the tensor is NULL");
    tg_tape_reset(t);
    tg_real beta;
    REFUSES(tg_grad_write(t, NULL, &beta), "tg_grad: the tensor is NULL");
    tg_tape_free(t);
}

Test(null, tensor)
{
    size_t n;
    REFUSES(tg_tensor_alloc(2, NULL), "tg_tensor_alloc");
    REFUSES(tg_shape_size(1, (int[]){2}, NULL), "tg_shape_size: size is NULL");
    cr_assert_eq(tg_shape_size(2, NULL, &n), false);
    REFUSES(tg_shape_equal(NULL, NULL), "tg_shape_equal");
    REFUSES(tg_tensor_set_shape(NULL, 1, (int[]){2}, 2), "tg_tensor_set_shape: the tensor is NULL");
    tg_tensor *x = tg_tensor_alloc(1, (int[]){2});
    REFUSES(tg_tensor_set_shape(x, 1, NULL, 2), "tg_tensor_set_shape: the shape is NULL");
    REFUSES(tg_shape_str(x, NULL), "tg_shape_str: the buffer is NULL");
    char buf[TG_SHAPE_STR];
    cr_assert_str_eq(tg_shape_str(NULL, buf), "NULL");
    REFUSES(tg_rows(NULL), "tg_rows");
    REFUSES(tg_cols(NULL), "tg_cols");
    REFUSES(tg_tensor_fill(NULL, 1), "tg_tensor_fill");
    REFUSES(tg_tensor_alloc_grad(NULL), "tg_tensor_alloc_grad");
    tg_tensor_free(NULL);
    tg_tensor_free(x);
}

Test(null, params)
{
    cr_assert_eq(tg_params_count(NULL), -1);
    REFUSES(tg_params_count(NULL), "tg_params_count: the parameter store is NULL");
    REFUSES(tg_params_add(NULL, "w", 1, (int[]){2}), "tg_params_add");
    REFUSES(tg_params_get(NULL, "w"), "tg_params_get");
    tg_params *p = tg_params_new();
    REFUSES(tg_params_get(p, NULL), "tg_params_get: the name is NULL");
    REFUSES(tg_params_add(p, NULL, 1, (int[]){2}), "tg_params_add");
    REFUSES(tg_params_add(p, "w", 1, NULL), "tg_params_add");
    REFUSES(tg_params_at(NULL, 0), "tg_params_at");
    REFUSES(tg_params_numel(NULL), "tg_params_numel");
    REFUSES(tg_params_data(NULL), "tg_params_data");
    REFUSES(tg_params_grad(NULL), "tg_params_grad");
    REFUSES(tg_params_zero_grad(NULL), "tg_params_zero_grad");
    REFUSES(tg_params_truncate(NULL, 0), "tg_params_truncate");
    tg_params_free(NULL);
    tg_params_free(p);
}

Test(null, rng_and_gradcheck)
{
    REFUSES(tg_rng_seed(NULL, 1), "tg_rng_seed");
    REFUSES(tg_rng_u32(NULL), "tg_rng_u32");
    REFUSES(tg_rng_below(NULL, 3), "tg_rng_below");
    cr_assert(isnan(tg_rng_uniform(NULL)));
    REFUSES(tg_rng_uniform(NULL), "tg_rng_uniform");
    REFUSES(tg_rng_normal(NULL), "tg_rng_normal");
    cr_assert(!tg_gradcheck(NULL, NULL, NULL, 1, NULL).ok);
    REFUSES(tg_gradcheck(NULL, NULL, NULL, 1, NULL), "gradcheck: the function is NULL");
}

/* Every op refuses a NULL tape by name (tg_inputs_check), and a NULL input
 * with the op's name. */
Test(null, ops)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(2, (int[]){2, 2});
    REFUSES(tg_add(NULL, x, x), "tg_add: the tape is NULL");
    REFUSES(tg_relu(NULL, x), "tg_relu: the tape is NULL");
    REFUSES(tg_matmul(NULL, x, x, NULL, 0), "tg_matmul: the tape is NULL");
    REFUSES(tg_softmax(NULL, x), "tg_softmax: the tape is NULL");
    REFUSES(tg_sum(t, NULL), "tg_sum: input is NULL");
    tg_tape_reset(t);
    REFUSES(tg_concat(t, NULL, 2), "tg_concat");
    tg_tape_reset(t);
    REFUSES(tg_embedding(t, x, NULL, 1, 1), "tg_embedding");
    tg_tape_reset(t);
    REFUSES(tg_cross_entropy(t, x, NULL, TG_IGNORE), "tg_cross_entropy");
    tg_tape_reset(t);
    REFUSES(tg_permute(t, x, NULL), "tg_permute");
    tg_tape_reset(t);
    cr_assert_null(tg_reshape(t, x, 1, NULL));
    cr_assert(strstr(tg_error(), "tg_reshape") && strstr(tg_error(), "a shape array"), "%s", tg_error());
    tg_tape_reset(t);
    REFUSES(tg_sdpa(t, x, NULL, x, NULL, NULL), "tg_sdpa");
    tg_tape_reset(t);
    REFUSES(tg_sdpa_heads(t, x, x, NULL, NULL, NULL), "tg_sdpa_heads");
    tg_tape_reset(t);
    uint8_t vis[2] = {0, 0};
    tg_mask_fill(NULL, 0, 1, 2, vis);  /* no mask: all visible */
    cr_assert(vis[0] && vis[1]);
    REFUSES(tg_mask_fill(&(tg_mask){.causal = true}, 0, 1, 1, NULL), "tg_mask_fill");
    cr_assert(tg_mask_empty(NULL));
    tg_tensor_free(x);
    tg_tape_free(t);
}
