/* Every public function given NULL for a pointer it needs refuses it with a
 * message naming itself (or the op) and what was NULL, and returns its
 * failure value: never a crash. One test per header. */
#include <stdio.h>
#include <string.h>

#include "test_util.h"

#include <tapegrad/core/engine/headers.h>
#include <tapegrad/dist/dist.h>

/* call fails with a message holding fn and "NULL" (any value is discarded) */
#define REFUSES(call, fn)                                                                          \
    do {                                                                                           \
        tg_error_clear();                                                                          \
        (void)(call);                                                                              \
        const char *e_ = tg_error();                                                               \
        cr_expect(e_ && strstr(e_, fn) && strstr(e_, "NULL"), "%s: got \"%s\"", #call, e_ ? e_ : "(none)"); \
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
    static const tg_op my_op = {"my_op", NULL, 0};
    REFUSES(tg_new(NULL, &my_op, 1, (int[]){2}), "my_op: the tape is NULL");
    REFUSES(tg_new_like(t, &my_op, NULL), "my_op");
    tg_tape_reset(t);
    REFUSES(tg_new(t, NULL, 1, (int[]){2}), "tg_new: the op is NULL");
    REFUSES(tg_new_named(t, NULL, 1, (int[]){2}), "tg_new_named: the name is NULL");
    REFUSES(tg_new_named(NULL, "my_buffer", 1, (int[]){2}), "my_buffer: the tape is NULL");
    tg_tape_reset(t);
    REFUSES(tg_new_like(t, NULL, NULL), "tg_new_like: the op is NULL");
    tg_tape_reset(t);
    REFUSES(tg_new_header(NULL, "my_op"), "my_op: the tape is NULL");
    REFUSES(tg_arena_alloc(NULL, 8, "my_op"), "my_op: the tape is NULL");
    REFUSES(tg_arena_scratch(NULL, 8, "my_op"), "my_op: the tape is NULL");
    tg_arena_release(NULL, NULL, 8);
    REFUSES(tg_inputs_check(NULL, &my_op, NULL, 1, 1), "my_op: the tape is NULL");
    REFUSES(tg_inputs_check(t, &my_op, NULL, 1, 1), "my_op: input is NULL");
    tg_tape_reset(t);
    REFUSES(tg_inputs_check(t, NULL, NULL, 1, 1), "tg_inputs_check: the op is NULL");
    tg_tape_reset(t);
    cr_assert_eq(tg_needs_grad(NULL, NULL, 0), false);
    REFUSES(tg_op_record(t, NULL, NULL, NULL, 0, NULL), "tg_op_record: the op is NULL");
    tg_tape_reset(t);
    REFUSES(tg_op_done(t, &my_op, NULL), "my_op: input is NULL");
    tg_tape_reset(t);
    REFUSES(tg_op_done(NULL, &my_op, NULL), "my_op: the tape is NULL");
    tg_tape_reset(t);
    REFUSES(tg_op_done(t, NULL, NULL), "tg_op_done: the op is NULL");
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
    REFUSES(tg_dropout(t, x, 0.5, NULL), "tg_dropout");
    tg_tape_reset(t);
    REFUSES(tg_concat(t, (tg_tensor *[]){x, NULL}, 2), "tg_concat");
    tg_tape_reset(t);
    uint8_t vis[2] = {0, 0};
    tg_mask_fill(NULL, 0, 1, 2, vis);  /* no mask: all visible */
    cr_assert(vis[0] && vis[1]);
    REFUSES(tg_mask_fill(&(tg_mask){.causal = true}, 0, 1, 1, NULL), "tg_mask_fill");
    cr_assert(tg_mask_empty(NULL));
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(null, nn)
{
    tg_tape *t = tg_tape_new();
    tg_params *p = tg_params_new();
    tg_linear l;
    REFUSES(tg_linear_init(NULL, p, "fc", &(tg_linear_config){.in = 2, .out = 2}, NULL), "tg_linear_init: the layer is NULL");
    REFUSES(tg_linear_init(&l, NULL, "fc", &(tg_linear_config){.in = 2, .out = 2}, NULL), "tg_linear_init: the parameter store is NULL");
    REFUSES(tg_linear_init(&l, p, "fc", NULL, NULL), "tg_linear_init: the configuration is NULL");
    REFUSES(tg_linear_forward(t, NULL, NULL), "tg_linear_forward: the layer is NULL");
    REFUSES(tg_layernorm_forward(NULL, NULL, NULL), "tg_layernorm_forward: the tape is NULL");
    REFUSES(tg_embedding_forward(t, NULL, NULL, 1, 1), "tg_embedding_forward");
    REFUSES(tg_ffn_forward(t, NULL, NULL, NULL), "tg_ffn_forward");
    REFUSES(tg_mha_forward(t, NULL, NULL, NULL, NULL, NULL), "tg_mha_forward");
    REFUSES(tg_block_forward(t, NULL, NULL, NULL, NULL), "tg_block_forward");
    REFUSES(tg_model_forward(t, NULL, NULL, 1, 1, NULL, NULL), "tg_model_forward");
    REFUSES(tg_model_decode(t, NULL, NULL, NULL, NULL, 1, NULL), "tg_model_decode");
    REFUSES(tg_model_prefill(t, NULL, NULL, NULL, 1, 1, NULL), "tg_model_prefill");
    REFUSES(tg_kv_cache_init(NULL, NULL, 1), "tg_kv_cache_init");
    REFUSES(tg_kv_cache_move(NULL, 0, 0, 0), "tg_kv_cache_move");
    REFUSES(tg_kv_cache_free(NULL), "tg_kv_cache_free");
    REFUSES(tg_block_prefill(t, NULL, NULL, NULL, NULL, NULL), "tg_block_prefill");
    REFUSES(tg_block_cache_new(NULL, 1, 1), "tg_block_cache_new");
    REFUSES(tg_sample(NULL, (tg_real[]){0}, 1, NULL, NULL), "tg_sample");
    REFUSES(tg_sample_probs(NULL, (tg_real[]){0}, 1, NULL), "tg_sample_probs");
    REFUSES(tg_model_generate(NULL, (int32_t[1]){0}, 1, (int32_t[]){0}, 1, NULL, NULL, 0, NULL, &(int){0}),
            "tg_model_generate");
    REFUSES(tg_mha_copy_weights(NULL, NULL), "tg_mha_copy_weights");
    REFUSES(tg_mha_convert(NULL, TG_MHA_FUSED, 2, 2), "tg_mha_convert");
    REFUSES(tg_nn_name(NULL, "a", "b"), "tg_nn_name");
    REFUSES(tg_nn_param(NULL, "a", "b", 1, (int[]){2}), "tg_params_add");
    REFUSES(tg_init_uniform(NULL, 0, 1, NULL), "tg_init_uniform");
    REFUSES(tg_init_normal(NULL, 0, 1, NULL), "tg_init_normal");
    REFUSES(tg_init_const(NULL, 0), "tg_init_const");
    REFUSES(tg_init_linear(NULL, NULL, NULL), "tg_init_linear");
    tg_model_free(NULL);
    tg_params_free(p);
    tg_tape_free(t);
}

Test(null, optim)
{
    tg_params *p = tg_params_new();
    tg_optim_opts o = tg_optim_defaults(TG_ADAM);
    REFUSES(tg_optim_new(NULL, &o), "tg_optim_new");
    REFUSES(tg_optim_new(p, NULL), "tg_optim: options are NULL");
    REFUSES(tg_optim_check(NULL), "tg_optim: options are NULL");
    REFUSES(tg_optim_step(NULL), "tg_optim_step");
    REFUSES(tg_optim_zero_grad(NULL), "tg_optim_zero_grad");
    REFUSES(tg_optim_set_lr(NULL, 1), "tg_optim_set_lr");
    REFUSES(tg_optim_lr(NULL), "tg_optim_lr");
    REFUSES(tg_optim_steps(NULL), "tg_optim_steps");
    REFUSES(tg_optim_options(NULL), "tg_optim_options");
    REFUSES(tg_optim_state_save(NULL, NULL), "tg_optim_state_save");
    REFUSES(tg_optim_state_load(NULL, NULL), "tg_optim_state_load");
    tg_optim *opt = tg_optim_new(p, &o);
    cr_assert_not_null(opt, "%s", tg_error());
    REFUSES(tg_optim_state_save(opt, NULL), "tg_optim_state_save");
    REFUSES(tg_optim_state_load(opt, NULL), "tg_optim_state_load");
    tg_schedule sched = tg_schedule_constant(1, 0);
    REFUSES(tg_optim_schedule_lr(NULL, &sched, 0), "tg_optim_schedule_lr: the optimizer is NULL");
    REFUSES(tg_optim_schedule_lr(opt, NULL, 0), "tg_optim_schedule_lr: tg_schedule: the schedule is NULL");
    tg_optim_free(opt);
    tg_optim_free(NULL);
    REFUSES(tg_grad_norm(NULL), "tg_grad_norm");
    REFUSES(tg_clip_grad_norm(NULL, 1), "tg_clip_grad_norm");
    REFUSES(tg_schedule_check(NULL), "tg_schedule: the schedule is NULL");
    REFUSES(tg_lr_at(NULL, 0), "tg_lr_at");
    tg_params_free(p);
}

Test(null, io)
{
    tg_safetensors *s = tg_st_new();
    tg_tensor *x = tg_tensor_alloc(1, (int[]){2});
    REFUSES(tg_st_add(NULL, "x", x), "tg_st_add");
    REFUSES(tg_st_add(s, NULL, x), "tg_st_add");
    REFUSES(tg_st_add(s, "x", NULL), "tg_st_add");
    REFUSES(tg_st_add_zeros(NULL, "x", 1, (int[]){2}), "tg_st_add: set is NULL");
    REFUSES(tg_st_add_zeros(s, NULL, 1, (int[]){2}), "tg_st_add: name is NULL");
    cr_assert_null(tg_st_add_zeros(s, "y", 1, NULL));
    REFUSES(tg_st_set_meta(NULL, "k", "v"), "tg_st_set_meta");
    REFUSES(tg_st_set_meta(s, NULL, "v"), "tg_st_set_meta");
    REFUSES(tg_st_set_meta(s, "k", NULL), "tg_st_set_meta");
    REFUSES(tg_st_meta(NULL, "k"), "tg_st_meta: the set is NULL");
    REFUSES(tg_st_meta(s, NULL), "tg_st_meta");
    REFUSES(tg_st_meta_count(NULL), "tg_st_meta_count");
    REFUSES(tg_st_meta_key(NULL, 0), "tg_st_meta_key");
    REFUSES(tg_st_count(NULL), "tg_st_count");
    REFUSES(tg_st_at(NULL, 0), "tg_st_at");
    REFUSES(tg_st_get(NULL, "x"), "tg_st_get");
    REFUSES(tg_st_get(s, NULL), "tg_st_get");
    REFUSES(tg_st_save(NULL, "/tmp/x", TG_F32), "tg_st_save");
    REFUSES(tg_st_save(s, NULL, TG_F32), "tg_st_save");
    uint8_t *buf;
    size_t len;
    REFUSES(tg_st_to_bytes(NULL, TG_F32, &buf, &len), "tg_st_to_bytes");
    REFUSES(tg_st_to_bytes(s, TG_F32, NULL, &len), "tg_st_to_bytes");
    REFUSES(tg_st_to_bytes(s, TG_F32, &buf, NULL), "tg_st_to_bytes");
    tg_safetensors *out;
    REFUSES(tg_st_load(NULL, &out), "tg_st_load");
    REFUSES(tg_st_load("/tmp/x", NULL), "tg_st_load");
    REFUSES(tg_st_parse(NULL, 4, "buf", &out), "tg_st_parse");
    REFUSES(tg_st_parse((uint8_t[8]){0}, 8, "buf", NULL), "tg_st_parse");
    REFUSES(tg_st_load_verify(NULL, TG_ST_VERIFY_REQUIRED, &out), "tg_st_load");
    REFUSES(tg_st_parse_verify(NULL, 4, "buf", TG_ST_VERIFY_OFF, &out), "tg_st_parse");
    REFUSES(tg_st_verified(NULL), "tg_st_verified");
    REFUSES(tg_st_add_params(NULL, NULL), "tg_st_add_params");
    REFUSES(tg_st_add_params(s, NULL), "tg_st_add_params");
    REFUSES(tg_st_load_params(NULL, s, true, NULL), "tg_st_load_params");
    tg_params *p = tg_params_new();
    REFUSES(tg_st_load_params(p, NULL, true, NULL), "tg_st_load_params");
    tg_params_free(p);
    tg_st_free(NULL);
    tg_st_free(s);
    tg_tensor_free(x);
}

Test(null, viz_dist_threads)
{
    REFUSES(tg_canvas_pixel(NULL, 0, 0, (tg_rgb){0, 0, 0}), "tg_canvas_pixel");
    REFUSES(tg_canvas_fill_rect(NULL, 0, 0, 1, 1, (tg_rgb){0, 0, 0}), "tg_canvas_fill_rect");
    REFUSES(tg_canvas_rect(NULL, 0, 0, 1, 1, (tg_rgb){0, 0, 0}), "tg_canvas_rect");
    REFUSES(tg_canvas_line(NULL, 0, 0, 1, 1, 1, (tg_rgb){0, 0, 0}), "tg_canvas_line");
    REFUSES(tg_canvas_text(NULL, 0, 0, "a", 1, (tg_rgb){0, 0, 0}), "tg_canvas_text");
    REFUSES(tg_canvas_text_up(NULL, 0, 0, "a", 1, (tg_rgb){0, 0, 0}), "tg_canvas_text_up");
    tg_canvas *c = tg_canvas_new(4, 4, (tg_rgb){0, 0, 0});
    tg_canvas_text(c, 0, 0, NULL, 1, (tg_rgb){0, 0, 0});  /* no text: draws nothing */
    REFUSES(tg_canvas_save_png(NULL, "/tmp/x.png"), "tg_canvas_save_png");
    REFUSES(tg_canvas_save_png(c, NULL), "tg_canvas_save_png");
    tg_canvas_free(c);
    tg_canvas_free(NULL);
    cr_assert_eq(tg_text_width(NULL, 1), 0);
    REFUSES(tg_heatmap_png(NULL, (tg_real[1]){0}, 1, 1, 1, 1, NULL, NULL), "tg_heatmap_png");
    REFUSES(tg_heatmap_png("/tmp/x.png", NULL, 1, 1, 1, 1, NULL, NULL), "tg_heatmap_png");
    REFUSES(tg_plot_lines_png(NULL, "t", "x", NULL, 1), "tg_plot_lines_png");
    REFUSES(tg_plot_bars_png(NULL, "t", NULL, (double[1]){1}, 1), "tg_plot_bars_png");
    REFUSES(tg_plot_bars_png("/tmp/x.png", "t", NULL, NULL, 1), "tg_plot_bars_png");
    REFUSES(tg_dist_bcast_params(NULL), "tg_dist_bcast_params");
    REFUSES(tg_dist_allreduce_grads(NULL), "tg_dist_allreduce_grads");
    REFUSES(tg_dist_sum(NULL, 1), "tg_dist_sum");
    REFUSES(tg_dist_bcast(NULL, 1), "tg_dist_bcast");
    bool same;
    REFUSES(tg_dist_params_agree(NULL, &same), "tg_dist_params_agree");
    tg_params *p = tg_params_new();
    REFUSES(tg_dist_params_agree(p, NULL), "tg_dist_params_agree");
    tg_params_free(p);
    cr_expect_eq(tg_dist_set_timeout(1, NULL), 0);  /* NULL: nothing to add to the message */
    cr_expect(tg_dist_set_timeout(NAN, NULL) == -1 && strstr(tg_error(), "tg_dist_set_timeout: the timeout nan s"),
              "%s", tg_error());
    tg_dist_set_timeout(0, NULL);
    REFUSES(tg_parallel_for(4, NULL, NULL), "tg_parallel_for");
    REFUSES(tg_parallel_range(4, 1, NULL, NULL), "tg_parallel_range");
}

Test(null, null_inputs_of_matmul_and_tensor_from)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = tg_tensor_zeros(t, 2, (int[]){2, 2});
    cr_assert_null(tg_matmul(t, NULL, a, NULL, 0));
    cr_assert_str_eq(tg_tape_error(t), "tg_matmul: input is NULL");
    tg_tape_reset(t);
    cr_assert_null(tg_tensor_from(t, NULL, 1, (int[]){2}));
    cr_assert_str_eq(tg_tape_error(t), "tg_tensor_from: input is NULL");
    tg_tape_free(t);
}

/* Every op given a NULL input returns NULL and keeps an earlier message; with
 * no earlier message it names itself. */
Test(null, null_inputs_keep_the_first_message)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 3, (int[]){2, 3, 4});
    int32_t ids[2] = {0, 0};
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    for (int round = 0; round < 2; round++) {
        const char *names[] = {"tg_reshape", "tg_permute", "tg_transpose", "tg_split_heads", "tg_merge_heads",
                               "tg_concat", "tg_concat", "tg_slice", "tg_layernorm", "tg_embedding",
                               "tg_embedding", "tg_cross_entropy", "tg_cross_entropy", "tg_dropout"};
        for (int k = 0; k < 14; k++) {
            tg_tape_clear_error(t);
            if (round == 0) tg_fail(t, "an earlier error");
            tg_tensor *r = NULL;
            switch (k) {
            case 0: r = tg_reshape(t, NULL, 1, (int[]){-1}); break;
            case 1: r = tg_permute(t, NULL, (int[]){0}); break;
            case 2: r = tg_transpose(t, NULL, 0, 1); break;
            case 3: r = tg_split_heads(t, NULL, 2); break;
            case 4: r = tg_merge_heads(t, NULL); break;
            case 5: r = tg_concat(t, (tg_tensor *[]){x, NULL}, 2); break;
            case 6: r = tg_concat(t, NULL, 2); break;
            case 7: r = tg_slice(t, NULL, 0, 1); break;
            case 8: r = tg_layernorm(t, NULL, NULL, NULL, 1e-5); break;
            case 9: r = tg_embedding(t, NULL, ids, 1, 2); break;
            case 10: r = tg_embedding(t, x, NULL, 1, 2); break;
            case 11: r = tg_cross_entropy(t, NULL, ids, TG_IGNORE); break;
            case 12: r = tg_cross_entropy(t, x, NULL, TG_IGNORE); break;
            case 13: r = tg_dropout(t, NULL, 0.5, &rng); break;
            }
            cr_assert_null(r, "case %d", k);
            const char *msg = tg_tape_error(t);
            cr_assert_not_null(msg);
            if (round == 0)
                cr_assert_str_eq(msg, "an earlier error");
            else
                cr_assert(strstr(msg, names[k]) && strstr(msg, "NULL"), "case %d: %s", k, msg);
        }
    }
    /* no tape: NULL, nothing to report to */
    cr_assert_null(tg_permute(NULL, x, (int[]){0, 1, 2}));
    cr_assert_null(tg_dropout(NULL, x, 0.5, &rng));
    tg_tape_free(t);
}

/* call returns bad with a message holding fn and "NULL"; the tape's earlier
 * failure is cleared first, since an op given a NULL input keeps it */
#define FAILS(t, call, bad, fn)                                                                    \
    do {                                                                                           \
        if (t) tg_tape_clear_error(t);                                                             \
        tg_error_clear();                                                                          \
        cr_expect((call) == (bad), "%s: not %s", #call, #bad);                                     \
        const char *e_ = tg_error();                                                               \
        cr_expect(e_ && strstr(e_, fn) && strstr(e_, "NULL"), "%s: got \"%s\"", #call, e_ ? e_ : "(none)"); \
    } while (0)

/* The elementwise, comparison, reduction, scan and loss ops given a NULL input. */
Test(null, ops_math)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 2, (int[]){2, 2});
    int32_t y[2] = {0, 1};
    FAILS(t, tg_sub(t, x, NULL), NULL, "tg_sub");
    FAILS(t, tg_mul(t, NULL, x), NULL, "tg_mul");
    FAILS(t, tg_div(t, x, NULL), NULL, "tg_div");
    FAILS(t, tg_add_inplace(t, NULL, x), NULL, "tg_add_inplace");
    FAILS(t, tg_scale(t, NULL, 2), NULL, "tg_scale");
    FAILS(t, tg_neg(t, NULL), NULL, "tg_neg");
    FAILS(t, tg_abs(t, NULL), NULL, "tg_abs");
    FAILS(t, tg_exp(t, NULL), NULL, "tg_exp");
    FAILS(t, tg_log(t, NULL), NULL, "tg_log");
    FAILS(t, tg_sqrt(t, NULL), NULL, "tg_sqrt");
    FAILS(t, tg_pow(t, NULL, 2), NULL, "tg_pow");
    FAILS(t, tg_sigmoid(t, NULL), NULL, "tg_sigmoid");
    FAILS(t, tg_tanh(t, NULL), NULL, "tg_tanh");
    FAILS(t, tg_gelu(t, NULL), NULL, "tg_gelu");
    FAILS(t, tg_clamp(t, NULL, 0, 1), NULL, "tg_clamp");
    FAILS(t, tg_sin(t, NULL), NULL, "tg_sin");
    FAILS(t, tg_cos(t, NULL), NULL, "tg_cos");
    FAILS(t, tg_exp2(t, NULL), NULL, "tg_exp2");
    FAILS(t, tg_log2(t, NULL), NULL, "tg_log2");
    FAILS(t, tg_log10(t, NULL), NULL, "tg_log10");
    FAILS(t, tg_log1p(t, NULL), NULL, "tg_log1p");
    FAILS(t, tg_expm1(t, NULL), NULL, "tg_expm1");
    FAILS(t, tg_sign(t, NULL), NULL, "tg_sign");
    FAILS(t, tg_reciprocal(t, NULL), NULL, "tg_reciprocal");
    FAILS(t, tg_rsqrt(t, NULL), NULL, "tg_rsqrt");
    FAILS(t, tg_square(t, NULL), NULL, "tg_square");
    FAILS(t, tg_erf(t, NULL), NULL, "tg_erf");
    FAILS(t, tg_floor(t, NULL), NULL, "tg_floor");
    FAILS(t, tg_ceil(t, NULL), NULL, "tg_ceil");
    FAILS(t, tg_trunc(t, NULL), NULL, "tg_trunc");
    FAILS(t, tg_round(t, NULL), NULL, "tg_round");
    FAILS(t, tg_logaddexp(t, x, NULL), NULL, "tg_logaddexp");
    FAILS(t, tg_pow_tensor(t, NULL, x), NULL, "tg_pow_tensor");
    FAILS(t, tg_lerp(t, x, x, NULL), NULL, "tg_lerp");
    FAILS(t, tg_silu(t, NULL), NULL, "tg_silu");
    FAILS(t, tg_softplus(t, NULL, 1, 20), NULL, "tg_softplus");
    FAILS(t, tg_leaky_relu(t, NULL, 0.01), NULL, "tg_leaky_relu");
    FAILS(t, tg_elu(t, NULL, 1), NULL, "tg_elu");
    FAILS(t, tg_selu(t, NULL), NULL, "tg_selu");
    FAILS(t, tg_celu(t, NULL, 1), NULL, "tg_celu");
    FAILS(t, tg_mish(t, NULL), NULL, "tg_mish");
    FAILS(t, tg_hardswish(t, NULL), NULL, "tg_hardswish");
    FAILS(t, tg_hardsigmoid(t, NULL), NULL, "tg_hardsigmoid");
    FAILS(t, tg_hardtanh(t, NULL, -1, 1), NULL, "tg_hardtanh");
    FAILS(t, tg_softsign(t, NULL), NULL, "tg_softsign");
    FAILS(t, tg_gelu_tanh(t, NULL), NULL, "tg_gelu_tanh");
    FAILS(t, tg_eq(t, x, NULL), NULL, "tg_eq");
    FAILS(t, tg_ne(t, x, NULL), NULL, "tg_ne");
    FAILS(t, tg_lt(t, x, NULL), NULL, "tg_lt");
    FAILS(t, tg_le(t, x, NULL), NULL, "tg_le");
    FAILS(t, tg_gt(t, x, NULL), NULL, "tg_gt");
    FAILS(t, tg_ge(t, x, NULL), NULL, "tg_ge");
    FAILS(t, tg_where(t, NULL, x, x), NULL, "tg_where");
    FAILS(t, tg_masked_fill(t, x, NULL, 0), NULL, "tg_masked_fill");
    FAILS(t, tg_maximum(t, x, NULL), NULL, "tg_maximum");
    FAILS(t, tg_minimum(t, NULL, x), NULL, "tg_minimum");
    FAILS(t, tg_max(t, NULL), NULL, "tg_max");
    FAILS(t, tg_min(t, NULL), NULL, "tg_min");
    FAILS(t, tg_mean(t, NULL), NULL, "tg_mean");
    FAILS(t, tg_sum_dim(t, NULL, 0, false), NULL, "tg_sum_dim");
    FAILS(t, tg_mean_dim(t, NULL, 0, false), NULL, "tg_mean_dim");
    FAILS(t, tg_max_dim(t, NULL, 0, false), NULL, "tg_max_dim");
    FAILS(t, tg_min_dim(t, NULL, 0, false), NULL, "tg_min_dim");
    FAILS(t, tg_prod_dim(t, NULL, 0, false), NULL, "tg_prod_dim");
    FAILS(t, tg_var_dim(t, NULL, 0, 1, false), NULL, "tg_var_dim");
    FAILS(t, tg_std_dim(t, NULL, 0, 1, false), NULL, "tg_std_dim");
    FAILS(t, tg_norm_dim(t, NULL, 2, 0, false), NULL, "tg_norm_dim");
    FAILS(t, tg_logsumexp_dim(t, NULL, 0, false), NULL, "tg_logsumexp_dim");
    FAILS(t, tg_amax(t, NULL, 0, false), NULL, "tg_amax");
    FAILS(t, tg_amin(t, NULL, 0, false), NULL, "tg_amin");
    FAILS(t, tg_argmax(t, NULL, 0, false), NULL, "tg_argmax");
    FAILS(t, tg_argmin(t, NULL, 0, false), NULL, "tg_argmin");
    FAILS(t, tg_cumsum(t, NULL, 0), NULL, "tg_cumsum");
    FAILS(t, tg_cumprod(t, NULL, 0), NULL, "tg_cumprod");
    FAILS(t, tg_sort(t, NULL, 0, false, NULL), NULL, "tg_sort");
    FAILS(t, tg_topk(t, NULL, 1, 0, true, NULL), NULL, "tg_topk");
    FAILS(t, tg_log_softmax(t, NULL), NULL, "tg_log_softmax");
    FAILS(t, tg_softmax_masked(t, NULL, NULL, 1), NULL, "tg_softmax_masked");
    FAILS(t, tg_cross_entropy_sum(t, NULL, y, TG_IGNORE), NULL, "tg_cross_entropy_sum");
    FAILS(t, tg_cross_entropy_sum(t, x, NULL, TG_IGNORE), NULL, "tg_cross_entropy_sum");
    FAILS(t, tg_cross_entropy_ex(t, NULL, y, NULL, NULL), NULL, "tg_cross_entropy");
    FAILS(t, tg_nll_loss(t, NULL, y, NULL), NULL, "tg_nll_loss");
    /* NULL targets mean probabilities instead: with none, neither is given */
    tg_tape_clear_error(t);
    cr_expect_null(tg_cross_entropy_ex(t, x, NULL, NULL, NULL));
    cr_expect(strstr(tg_error(), "tg_cross_entropy_ex: give class targets or probabilities"), "%s", tg_error());
    FAILS(t, tg_mse_loss(t, x, NULL, TG_MEAN), NULL, "tg_mse_loss");
    FAILS(t, tg_l1_loss(t, NULL, x, TG_MEAN), NULL, "tg_l1_loss");
    FAILS(t, tg_smooth_l1_loss(t, x, NULL, TG_MEAN, 1), NULL, "tg_smooth_l1_loss");
    FAILS(t, tg_huber_loss(t, NULL, x, TG_MEAN, 1), NULL, "tg_huber_loss");
    FAILS(t, tg_binary_cross_entropy(t, x, NULL, NULL, TG_MEAN), NULL, "tg_binary_cross_entropy");
    FAILS(t, tg_binary_cross_entropy_with_logits(t, NULL, x, NULL, NULL, TG_MEAN), NULL,
          "tg_binary_cross_entropy_with_logits");
    tg_tape_free(t);
}

/* The shape, indexing, creation and attention ops given NULL. */
Test(null, ops_shape)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 2, (int[]){2, 2});
    tg_tensor *outs[2];
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_index ix = {.data = (int32_t[]){0, 1}, .ndim = 1, .shape = {2}};
    FAILS(t, tg_rows_view(t, NULL, 0, 1), NULL, "tg_rows_view");
    FAILS(t, tg_narrow(t, NULL, 0, 0, 1), NULL, "tg_narrow");
    FAILS(t, tg_slice_dim(t, NULL, 0, 0, 1, 1), NULL, "tg_slice_dim");
    FAILS(t, tg_split(t, NULL, 1, 0, outs, 2), -1, "tg_split");
    FAILS(t, tg_split(t, x, 1, 0, NULL, 2), -1, "tg_split");
    FAILS(t, tg_split_sizes(t, NULL, (int[]){1, 1}, 2, 0, outs), -1, "tg_split_sizes");
    FAILS(t, tg_split_sizes(t, x, NULL, 2, 0, outs), -1, "tg_split_sizes");
    FAILS(t, tg_split_sizes(t, x, (int[]){1, 1}, 2, 0, NULL), -1, "tg_split_sizes");
    FAILS(t, tg_chunk(t, NULL, 2, 0, outs), -1, "tg_chunk");
    FAILS(t, tg_chunk(t, x, 2, 0, NULL), -1, "tg_chunk");
    FAILS(t, tg_cat(t, NULL, 2, 0), NULL, "tg_cat");
    FAILS(t, tg_cat(t, (tg_tensor *[]){x, NULL}, 2, 0), NULL, "tg_cat");
    FAILS(t, tg_stack(t, NULL, 2, 0), NULL, "tg_stack");
    FAILS(t, tg_stack(t, (tg_tensor *[]){NULL, x}, 2, 0), NULL, "tg_stack");
    FAILS(t, tg_detach(t, NULL), NULL, "tg_detach");
    FAILS(t, tg_unsqueeze(t, NULL, 0), NULL, "tg_unsqueeze");
    FAILS(t, tg_squeeze(t, NULL, 0), NULL, "tg_squeeze");
    FAILS(t, tg_flip(t, NULL, (int[]){0}, 1), NULL, "tg_flip");
    FAILS(t, tg_flip(t, x, NULL, 1), NULL, "tg_flip");
    FAILS(t, tg_roll(t, NULL, 1, 0), NULL, "tg_roll");
    FAILS(t, tg_pad(t, NULL, (int[]){1, 1}, 2, 0), NULL, "tg_pad");
    FAILS(t, tg_pad(t, x, NULL, 2, 0), NULL, "tg_pad");
    FAILS(t, tg_repeat(t, NULL, (int[]){1, 2}, 2), NULL, "tg_repeat");
    FAILS(t, tg_repeat(t, x, NULL, 2), NULL, "tg_repeat");
    FAILS(t, tg_expand(t, NULL, 2, (int[]){2, 2}), NULL, "tg_expand");
    FAILS(t, tg_expand(t, x, 2, NULL), NULL, "tg_expand");
    FAILS(t, tg_tril(t, NULL, 0), NULL, "tg_tril");
    FAILS(t, tg_triu(t, NULL, 0), NULL, "tg_triu");
    FAILS(t, tg_diag(t, NULL, 0), NULL, "tg_diag");
    FAILS(t, tg_gather(t, NULL, 0, &ix), NULL, "tg_gather");
    FAILS(t, tg_gather(t, x, 0, NULL), NULL, "tg_gather");
    FAILS(t, tg_gather(t, x, 0, &(tg_index){.ndim = 1, .shape = {2}}), NULL, "tg_gather");
    FAILS(t, tg_scatter_add(t, x, 0, &ix, NULL), NULL, "tg_scatter_add");
    FAILS(t, tg_scatter_add(t, x, 0, NULL, x), NULL, "tg_scatter_add");
    FAILS(t, tg_index_select(t, NULL, 0, &ix), NULL, "tg_index_select");
    FAILS(t, tg_index_select(t, x, 0, NULL), NULL, "tg_index_select");
    FAILS(t, tg_index_add(t, x, 0, &ix, NULL, 1), NULL, "tg_index_add");
    FAILS(t, tg_index_add(t, x, 0, NULL, x, 1), NULL, "tg_index_add");
    FAILS(NULL, tg_arange(NULL, 0, 2, 1), NULL, "tg_arange");
    FAILS(NULL, tg_linspace(NULL, 0, 1, 2), NULL, "tg_linspace");
    FAILS(NULL, tg_full(NULL, 1, (int[]){2}, 1), NULL, "tg_full");
    FAILS(t, tg_full(t, 1, NULL, 1), NULL, "tg_full");
    FAILS(NULL, tg_zeros(NULL, 1, (int[]){2}), NULL, "tg_zeros");
    FAILS(t, tg_zeros(t, 1, NULL), NULL, "tg_zeros");
    FAILS(NULL, tg_ones(NULL, 1, (int[]){2}), NULL, "tg_ones");
    FAILS(t, tg_ones(t, 1, NULL), NULL, "tg_ones");
    FAILS(NULL, tg_eye(NULL, 2, 2), NULL, "tg_eye");
    FAILS(t, tg_rand(t, 1, (int[]){2}, NULL), NULL, "tg_rand");
    FAILS(t, tg_rand(t, 1, NULL, &rng), NULL, "tg_rand");
    FAILS(t, tg_randn(t, 1, (int[]){2}, NULL), NULL, "tg_randn");
    FAILS(NULL, tg_randn(NULL, 1, (int[]){2}, &rng), NULL, "tg_randn");
    FAILS(t, tg_randint(t, 0, 4, 1, (int[]){2}, NULL), NULL, "tg_randint");
    FAILS(t, tg_randint(t, 0, 4, 1, NULL, &rng), NULL, "tg_randint");
    FAILS(t, tg_rope(t, NULL, &(tg_rope_opts){.n_heads = 1, .d_head = 2}), NULL, "tg_rope");
    FAILS(t, tg_rope(t, x, NULL), NULL, "tg_rope");
    FAILS(NULL, (tg_alibi_slopes(2, NULL), 0), 0, "tg_alibi_slopes");
    tg_tape_free(t);
}

/* The key/value cache and decoding step (core/ops/nn/decode.h). */
Test(null, decode)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *cache = tg_tensor_zeros(t, 3, (int[]){1, 4, 4});
    tg_tensor *x = tg_tensor_zeros(t, 3, (int[]){1, 1, 6});
    tg_sdpa_layout lay = {.n_heads = 1, .dk = 2, .dv = 2, .q_col = 0, .k_col = 2, .v_col = 4};
    FAILS(t, tg_kv_write(NULL, cache, x, &lay, NULL), -1, "tg_kv_write");
    FAILS(t, tg_kv_write(t, NULL, x, &lay, NULL), -1, "tg_kv_write");
    FAILS(t, tg_kv_write(t, cache, NULL, &lay, NULL), -1, "tg_kv_write");
    FAILS(t, tg_kv_write(t, cache, x, NULL, NULL), -1, "tg_kv_write");
    cr_assert(tg_no_grad_begin(t));  /* decoding steps run on a tape that does not record */
    FAILS(t, tg_sdpa_decode(NULL, x, cache, &lay, (int32_t[]){0}, NULL), NULL, "tg_sdpa_decode");
    FAILS(t, tg_sdpa_decode(t, NULL, cache, &lay, (int32_t[]){0}, NULL), NULL, "tg_sdpa_decode");
    FAILS(t, tg_sdpa_decode(t, x, NULL, &lay, (int32_t[]){0}, NULL), NULL, "tg_sdpa_decode");
    FAILS(t, tg_sdpa_decode(t, x, cache, NULL, (int32_t[]){0}, NULL), NULL, "tg_sdpa_decode");
    FAILS(t, tg_sdpa_decode(t, x, cache, &lay, NULL, NULL), NULL, "tg_sdpa_decode");
    FAILS(NULL, tg_kv_copy(NULL, &lay, 0, 0, 1), -1, "tg_kv_copy");
    FAILS(NULL, tg_kv_copy(cache, NULL, 0, 0, 1), -1, "tg_kv_copy");
    tg_tape_free(t);
}

/* What came after the first sweep: the engine's extras, io, optim groups, nn
 * layers' init and step, viz groups. */
Test(null, engine_io_optim_nn_viz)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 1, (int[]){2});
    char buf[64];
    FAILS(NULL, tg_strdup(NULL), NULL, "tg_strdup");
    FAILS(NULL, tg_headers_take(NULL, 8), NULL, "tg_headers_take");
    FAILS(NULL, tg_retain_grad(NULL, x), -1, "tg_retain_grad");
    FAILS(t, tg_retain_grad(t, NULL), -1, "tg_retain_grad");
    tg_tape_clear_error(t);
    FAILS(NULL, tg_fail_null(t, "my_op"), NULL, "my_op: input is NULL");
    FAILS(NULL, tg_fail_null(NULL, NULL), NULL, "tg_fail_null");
    FAILS(NULL, tg_op_fail(NULL, NULL, "%s", "a message"), NULL, "tg_op_fail");
    static const tg_op named = {"my_op", NULL, 0};
    cr_expect_null(tg_op_fail(NULL, &named, "bad %s", "thing"));
    cr_expect_str_eq(tg_error(), "my_op: bad thing");
    FAILS(NULL, tg_tensor_str(x, NULL, 8), 0, "tg_tensor_str");
    cr_expect_gt(tg_tensor_str(x, NULL, 0), 0);  /* snprintf's rule: no buffer, the length */
    cr_expect_eq(tg_tensor_str(NULL, buf, sizeof buf), 12);  /* a NULL tensor prints as one */
    cr_expect_str_eq(buf, "tensor(NULL)");
    FAILS(NULL, tg_tensor_print(NULL, x), -1, "tg_tensor_print");

    tg_safetensors *s = tg_st_new();
    tg_dtype dt;
    FAILS(NULL, tg_st_add_data(NULL, "a", (tg_real[]){1}, 1, (int[]){1}), -1, "tg_st_add");
    FAILS(NULL, tg_st_add_data(s, NULL, (tg_real[]){1}, 1, (int[]){1}), -1, "tg_st_add");
    cr_expect_eq(tg_st_add_data(s, "z", NULL, 1, (int[]){1}), 0, "%s", tg_error());  /* NULL data: zeros */
    FAILS(NULL, tg_st_dtype(NULL, "a", &dt), -1, "tg_st_dtype");
    FAILS(NULL, tg_st_dtype(s, NULL, &dt), -1, "tg_st_dtype");
    FAILS(NULL, tg_st_dtype(s, "z", NULL), -1, "tg_st_dtype");
    FAILS(NULL, tg_st_ints(NULL, "a"), NULL, "tg_st_ints");
    FAILS(NULL, tg_st_ints(s, NULL), NULL, "tg_st_ints");
    tg_st_free(s);

    tg_params *p = tg_params_new();
    tg_optim_opts oo = tg_optim_defaults(TG_ADAM);
    tg_optim *o = tg_optim_new(p, &oo);
    cr_assert_not_null(o, "%s", tg_error());
    tg_optim_group g;
    FAILS(NULL, tg_optim_kind_parse(NULL), -1, "tg_optim_kind_parse");
    FAILS(NULL, tg_optim_add_group(NULL, &g), -1, "tg_optim_add_group");
    FAILS(NULL, tg_optim_add_group(o, NULL), -1, "tg_optim_add_group");
    FAILS(NULL, tg_optim_group_count(NULL), -1, "tg_optim_group_count");
    FAILS(NULL, tg_optim_group_get(NULL, 0, &g), -1, "tg_optim_group_get");
    FAILS(NULL, tg_optim_group_get(o, 0, NULL), -1, "tg_optim_group_get");
    FAILS(NULL, tg_optim_group_set_lr(NULL, 0, 1), -1, "tg_optim_group_set_lr");
    tg_optim_free(o);

    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_mha m = {0};
    tg_ffn f;
    tg_block b = {0};
    tg_layernorm_layer ln;
    tg_embedding_layer e;
    tg_model md;
    FAILS(NULL, tg_nn_check_init("my_init", NULL, p, p), -1, "my_init: the layer is NULL");
    FAILS(NULL, tg_nn_check_forward("my_fwd", NULL, &m, true), -1, "my_fwd: the tape is NULL");
    tg_error_set("an earlier error");  /* what undo keeps, NULLs and all */
    cr_expect_eq(tg_nn_init_undo(NULL, 8, NULL, NULL, 0), -1);
    cr_expect_str_eq(tg_error(), "an earlier error");
    FAILS(NULL, tg_mha_init(NULL, p, "a", &(tg_mha_config){.d_model = 2, .n_heads = 1}, &rng), -1, "tg_mha_init");
    FAILS(NULL, tg_mha_init(&m, p, "a", NULL, &rng), -1, "tg_mha_init");
    FAILS(NULL, tg_mha_kv_layout(NULL).n_heads, 0, "tg_mha_kv_layout");
    FAILS(t, tg_mha_decode(t, NULL, x, x, (int32_t[]){0}, NULL), NULL, "tg_mha_decode");
    FAILS(NULL, tg_ffn_init(&f, NULL, "f", &(tg_ffn_config){.d_model = 2, .d_ff = 4}, &rng), -1, "tg_ffn_init");
    FAILS(NULL, tg_ffn_init(&f, p, "f", NULL, &rng), -1, "tg_ffn_init");
    FAILS(NULL, tg_layernorm_init(NULL, p, "ln", 2, 1e-5), -1, "tg_layernorm_init");
    FAILS(NULL, tg_layernorm_init(&ln, NULL, "ln", 2, 1e-5), -1, "tg_layernorm_init");
    tg_rmsnorm_layer rms;
    tg_norm_layer nl;
    FAILS(NULL, tg_rmsnorm_init(NULL, p, "rms", 2, 1e-5), -1, "tg_rmsnorm_init");
    FAILS(NULL, tg_rmsnorm_init(&rms, NULL, "rms", 2, 1e-5), -1, "tg_rmsnorm_init");
    FAILS(t, tg_rmsnorm_forward(t, NULL, x), NULL, "tg_rmsnorm_forward");
    FAILS(t, tg_rmsnorm(t, NULL, NULL, 1e-5), NULL, "tg_rmsnorm");
    FAILS(NULL, tg_norm_init(NULL, p, "n", TG_NORM_RMS, 2, 1e-5), -1, "tg_norm_init");
    FAILS(NULL, tg_norm_init(&nl, NULL, "n", TG_NORM_LAYER, 2, 1e-5), -1, "tg_norm_init");
    FAILS(t, tg_norm_forward(t, NULL, x), NULL, "tg_norm_forward");
    FAILS(NULL, tg_block_init(&b, p, "b", NULL, &rng), -1, "tg_block_init");
    FAILS(t, tg_block_decode(t, NULL, x, x, (int32_t[]){0}, NULL), NULL, "tg_block_decode");
    FAILS(NULL, tg_embedding_init(NULL, p, "e", 4, 2, &rng), -1, "tg_embedding_init");
    cr_expect_eq(tg_embedding_init(&e, p, "e", 4, 2, NULL), 0, "%s", tg_error());  /* NULL rng: zeros */
    cr_expect(e.weight && e.weight->data[0] == 0);
    FAILS(NULL, tg_model_init(&md, p, NULL, &rng), -1, "tg_model_init");
    FAILS(NULL, tg_model_init(NULL, p, NULL, &rng), -1, "tg_model_init");
    FAILS(NULL, tg_model_load(NULL, p, NULL, true, NULL), -1, "tg_model_load");
    tg_params_free(p);

    FAILS(NULL, tg_heatmap_png_groups(NULL, (tg_real[1]){0}, 1, 1, 1, 1, 1, NULL, NULL), -1, "tg_heatmap_png_groups");
    FAILS(NULL, tg_heatmap_png_groups("/tmp/x.png", NULL, 1, 1, 1, 1, 1, NULL, NULL), -1, "tg_heatmap_png_groups");
    tg_tape_free(t);
}
