/* Every public function but the ops (their NULLs are tests/test_op_cases.c's,
 * a row each) given NULL for a pointer it needs refuses it with a
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
    REFUSES(tg_autocast_begin(NULL, TG_BF16), "tg_autocast_begin");
    REFUSES(tg_autocast_end(NULL, TG_F32), "tg_autocast_end");
    REFUSES(tg_tape_autocast(NULL), "tg_tape_autocast");
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

/* Tensors of a given dtype and the dtype helpers (core/engine/dtype.h). */
Test(null, dtypes)
{
    tg_tape *t = tg_tape_new();
    static const tg_op my_op = {"my_op", NULL, 0};
    bool fresh;
    REFUSES(tg_tensor_alloc_dtype(TG_I64, 2, NULL), "tg_tensor_alloc: the shape is NULL");
    REFUSES(tg_tensor_new_dtype(NULL, TG_F64, 1, (int[]){2}), "tg_tensor_new: the tape is NULL");
    REFUSES(tg_tensor_zeros_dtype(NULL, TG_F64, 1, (int[]){2}), "tg_tensor_zeros: the tape is NULL");
    REFUSES(tg_tensor_from_dtype(t, TG_F64, NULL, 1, (int[]){1}), "tg_tensor_from");
    tg_tape_reset(t);
    REFUSES(tg_new_dtype(NULL, "my_buffer", TG_I32, 1, (int[]){2}), "my_buffer: the tape is NULL");
    REFUSES(tg_new_op(t, NULL, TG_F32, 1, (int[]){2}), "tg_new: the op is NULL");
    tg_tape_reset(t);
    REFUSES(tg_inputs_check_dtype(NULL, &my_op, TG_F64, NULL, 1, 1), "my_op: the tape is NULL");
    REFUSES(tg_grad_as(t, NULL, TG_F64), "tg_grad: the tensor is NULL");
    tg_tape_reset(t);
    REFUSES(tg_grad_fresh(t, NULL, TG_F64, &fresh), "tg_grad: the tensor is NULL");
    tg_tape_reset(t);
    REFUSES(tg_grad_fresh(t, NULL, TG_F64, NULL), "tg_grad_fresh: fresh is NULL");
    REFUSES(tg_data(NULL, TG_I64), "tg_data: the tensor is NULL");
    cr_expect_eq(tg_dtype_promoted(NULL, 2), TG_DTYPE_COUNT, "no tensors: no float type");
    cr_expect_eq(tg_dtype_promoted((tg_tensor *const[]){NULL, NULL}, 2), TG_DTYPE_COUNT);
    REFUSES(tg_dtype_load(TG_F32, NULL, 0), "tg_dtype_load: the data is NULL");
    REFUSES(tg_dtype_store(TG_F32, NULL, 0, 1), "tg_dtype_store: the data is NULL");
    REFUSES(tg_params_dtype(NULL), "tg_params_dtype: the parameter store is NULL");
    REFUSES(tg_params_flat(NULL, TG_F32, false), "tg_params_data: the parameter store is NULL");
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
    REFUSES(tg_index_check(NULL, &my_op, NULL, "ids"), "my_op: the tape is NULL");
    REFUSES(tg_index_check(t, NULL, NULL, "ids"), "tg_index_check: the op is NULL");
    tg_tape_reset(t);
    REFUSES(tg_index_check(t, &my_op, NULL, "ids"), "my_op: ids is NULL");
    tg_tape_reset(t);
    REFUSES(tg_index_check(t, &my_op, NULL, NULL), "my_op: the index is NULL");
    tg_tape_reset(t);
    REFUSES(tg_index_rows_check(NULL, &my_op, NULL, "pos", 1), "my_op: the tape is NULL");
    REFUSES(tg_index_rows_check(t, NULL, NULL, "pos", 1), "tg_index_check: the op is NULL");
    tg_tape_reset(t);
    REFUSES(tg_index_rows_check(t, &my_op, NULL, "pos", 1), "my_op: pos is NULL");
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

/* The mask helpers (the ops' NULLs are tests/test_op_cases.c's, by row). */
Test(null, masks)
{
    tg_tape *t = tg_tape_new();
    const uint8_t *vis = tg_data(tg_mask_visible(t, NULL, 1, 1, 1, 2), TG_BOOL);  /* no mask: all visible */
    cr_assert(vis && vis[0] && vis[1]);
    REFUSES(tg_mask_visible(NULL, &(tg_mask){.causal = true}, 1, 1, 1, 1), "tg_mask_visible");
    tg_tape_free(t);
    cr_assert(tg_mask_empty(NULL));
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
    REFUSES(tg_embedding_forward(t, NULL, NULL), "tg_embedding_forward");
    REFUSES(tg_ffn_forward(t, NULL, NULL, NULL), "tg_ffn_forward");
    REFUSES(tg_mha_forward(t, NULL, NULL, NULL, NULL, NULL), "tg_mha_forward");
    REFUSES(tg_block_forward(t, NULL, NULL, NULL, NULL), "tg_block_forward");
    REFUSES(tg_model_forward(t, NULL, NULL, NULL, NULL), "tg_model_forward");
    REFUSES(tg_model_decode(t, NULL, NULL, NULL, NULL, NULL), "tg_model_decode");
    REFUSES(tg_model_prefill(t, NULL, NULL, NULL, NULL), "tg_model_prefill");
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
    REFUSES(tg_init_fans(NULL, &(long long){0}, &(long long){0}), "tg_init_fans");
    REFUSES(tg_init_kaiming_uniform(NULL, 0, TG_FAN_IN, TG_GAIN_RELU, NULL), "tg_init_kaiming_uniform");
    REFUSES(tg_init_kaiming_normal(NULL, 0, TG_FAN_IN, TG_GAIN_RELU, NULL), "tg_init_kaiming_normal");
    REFUSES(tg_init_xavier_uniform(NULL, 1, NULL), "tg_init_xavier_uniform");
    REFUSES(tg_init_xavier_normal(NULL, 1, NULL), "tg_init_xavier_normal");
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

Test(null, grad_scaler)
{
    tg_params *p = tg_params_new();
    tg_optim_opts o = tg_optim_defaults(TG_SGD);
    tg_optim *opt = tg_optim_new(p, &o);
    tg_grad_scaler_opts so = tg_grad_scaler_defaults();
    tg_grad_scaler *s = tg_grad_scaler_new(&so);
    tg_tape *t = tg_tape_new();
    cr_assert(opt && s && t, "%s", tg_error());
    REFUSES(tg_grad_scaler_check(NULL), "tg_grad_scaler: options are NULL");
    REFUSES(tg_grad_scaler_new(NULL), "tg_grad_scaler: options are NULL");
    REFUSES(tg_grad_scaler_scale(NULL, t, NULL), "tg_grad_scaler_scale: the scaler is NULL");
    REFUSES(tg_grad_scaler_unscale(NULL, opt), "tg_grad_scaler_unscale: the scaler is NULL");
    REFUSES(tg_grad_scaler_unscale(s, NULL), "tg_grad_scaler_unscale: the optimizer is NULL");
    REFUSES(tg_grad_scaler_step(NULL, opt), "tg_grad_scaler_step: the scaler is NULL");
    REFUSES(tg_grad_scaler_step(s, NULL), "tg_grad_scaler_step: the optimizer is NULL");
    REFUSES(tg_grad_scaler_update(NULL), "tg_grad_scaler_update: the scaler is NULL");
    REFUSES(tg_grad_scaler_get_scale(NULL), "tg_grad_scaler_get_scale: the scaler is NULL");
    REFUSES(tg_grad_scaler_growth_tracker(NULL), "tg_grad_scaler_growth_tracker: the scaler is NULL");
    REFUSES(tg_grad_scaler_state_save(NULL, NULL), "tg_grad_scaler_state_save");
    REFUSES(tg_grad_scaler_state_load(NULL, NULL), "tg_grad_scaler_state_load");
    REFUSES(tg_grad_scaler_state_save(s, NULL), "tg_grad_scaler_state_save");
    REFUSES(tg_grad_scaler_state_load(s, NULL), "tg_grad_scaler_state_load");
    tg_grad_scaler_free(NULL);
    tg_grad_scaler_free(s);
    tg_tape_free(t);
    tg_optim_free(opt);
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

Test(null, null_input_of_tensor_from)
{
    tg_tape *t = tg_tape_new();
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
    tg_tensor *y = tg_tensor_from_dtype(t, TG_I32, ids, 1, (int[]){2});
    tg_tensor *idt = tg_tensor_from_dtype(t, TG_I32, ids, 2, (int[]){1, 2});
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
            case 1: r = tg_permute(t, NULL, (int[]){0}, 1); break;
            case 2: r = tg_transpose(t, NULL, 0, 1); break;
            case 3: r = tg_split_heads(t, NULL, 2); break;
            case 4: r = tg_merge_heads(t, NULL); break;
            case 5: r = tg_concat(t, (tg_tensor *[]){x, NULL}, 2); break;
            case 6: r = tg_concat(t, NULL, 2); break;
            case 7: r = tg_slice(t, NULL, 0, 1); break;
            case 8: r = tg_layernorm(t, NULL, NULL, NULL, 1e-5); break;
            case 9: r = tg_embedding(t, NULL, idt); break;
            case 10: r = tg_embedding(t, x, NULL); break;
            case 11: r = tg_cross_entropy(t, NULL, y, TG_IGNORE); break;
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
    cr_assert_null(tg_permute(NULL, x, (int[]){0, 1, 2}, 3));
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

/* A NULL index, and the ALiBi slopes' output (the ops' own NULLs are
 * tests/test_op_cases.c's, by row). */
Test(null, index_and_alibi)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 2, (int[]){2, 2});
    FAILS(t, tg_gather(t, x, 0, NULL), NULL, "tg_gather");
    FAILS(NULL, (tg_alibi_slopes(NULL, 2), 0), 0, "tg_alibi_slopes");
    tg_tape_free(t);
}

/* The key/value cache (core/ops/nn/decode.h). */
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
    FAILS(t, tg_mha_decode(t, NULL, x, x, tu_lens((int32_t[]){0}, 1), NULL), NULL, "tg_mha_decode");
    FAILS(NULL, tg_ffn_init(&f, NULL, "f", &(tg_ffn_config){.d_model = 2, .d_ff = 4}, &rng), -1, "tg_ffn_init");
    FAILS(NULL, tg_ffn_init(&f, p, "f", NULL, &rng), -1, "tg_ffn_init");
    FAILS(NULL, tg_layernorm_init(NULL, p, "ln", 2, 1e-5), -1, "tg_layernorm_init");
    FAILS(NULL, tg_layernorm_init(&ln, NULL, "ln", 2, 1e-5), -1, "tg_layernorm_init");
    tg_rmsnorm_layer rms;
    tg_norm_layer nl;
    FAILS(NULL, tg_rmsnorm_init(NULL, p, "rms", 2, 1e-5), -1, "tg_rmsnorm_init");
    FAILS(NULL, tg_rmsnorm_init(&rms, NULL, "rms", 2, 1e-5), -1, "tg_rmsnorm_init");
    FAILS(t, tg_rmsnorm_forward(t, NULL, x), NULL, "tg_rmsnorm_forward");
    FAILS(NULL, tg_norm_init(NULL, p, "n", TG_NORM_RMS, 2, 1e-5), -1, "tg_norm_init");
    FAILS(NULL, tg_norm_init(&nl, NULL, "n", TG_NORM_LAYER, 2, 1e-5), -1, "tg_norm_init");
    FAILS(t, tg_norm_forward(t, NULL, x), NULL, "tg_norm_forward");
    FAILS(NULL, tg_block_init(&b, p, "b", NULL, &rng), -1, "tg_block_init");
    FAILS(t, tg_block_decode(t, NULL, x, x, tu_lens((int32_t[]){0}, 1), NULL), NULL, "tg_block_decode");
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

/* The convolutional layers, pooling, Upsample and Dropout2d (their ops: the op-case rows). */
Test(null, conv_layers)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 4, (int[]){1, 1, 2, 2});
    tg_params *p = tg_params_new();
    tg_conv2d_layer c;
    tg_conv2d_config cc = TG_CONV2D_CONFIG(1, 1, 1, 1);
    REFUSES(tg_conv2d_init(NULL, p, "c", &cc, NULL), "tg_conv2d_init: the layer is NULL");
    REFUSES(tg_conv2d_init(&c, NULL, "c", &cc, NULL), "tg_conv2d_init: the parameter store is NULL");
    REFUSES(tg_conv2d_init(&c, p, "c", NULL, NULL), "tg_conv2d_init: the configuration is NULL");
    REFUSES(tg_conv2d_forward(t, NULL, x), "tg_conv2d_forward: the layer is NULL");
    cr_assert_eq(tg_conv2d_init(&c, p, "c", &cc, NULL), 0);
    FAILS(t, tg_conv2d_forward(t, &c, NULL), NULL, "tg_conv2d");
    tg_params *bufs = tg_params_new();
    tg_batchnorm2d bn;
    tg_batchnorm2d_config bc = TG_BATCHNORM2D_CONFIG(1);
    REFUSES(tg_batchnorm2d_init(NULL, p, bufs, "bn", &bc), "tg_batchnorm2d_init: the layer is NULL");
    REFUSES(tg_batchnorm2d_init(&bn, NULL, bufs, "bn", &bc), "tg_batchnorm2d_init: the parameter store is NULL");
    REFUSES(tg_batchnorm2d_init(&bn, p, bufs, "bn", NULL), "tg_batchnorm2d_init: the configuration is NULL");
    REFUSES(tg_batchnorm2d_init(&bn, p, NULL, "bn", &bc), "buffers is NULL");
    REFUSES(tg_batchnorm2d_forward(t, NULL, x), "tg_batchnorm2d_forward: the layer is NULL");
    cr_assert_eq(tg_batchnorm2d_init(&bn, p, bufs, "bn", &bc), 0);
    FAILS(t, tg_batchnorm2d_forward(t, &bn, NULL), NULL, "tg_batchnorm2d");
    tg_pool_opts po = TG_POOL_OPTS_DEFAULT(1, 1);
    tg_max_pool2d_layer mp;
    REFUSES(tg_max_pool2d_init(NULL, "mp", &po), "tg_max_pool2d_init: the layer is NULL");
    REFUSES(tg_max_pool2d_init(&mp, "mp", NULL), "tg_max_pool2d_init: the configuration is NULL");
    REFUSES(tg_max_pool2d_forward(t, NULL, x), "tg_max_pool2d_forward: the layer is NULL");
    cr_assert_eq(tg_max_pool2d_init(&mp, NULL, &po), 0);
    FAILS(t, tg_max_pool2d_forward(t, &mp, NULL), NULL, "tg_max_pool2d");
    tg_avg_pool2d_layer ap;
    REFUSES(tg_avg_pool2d_init(NULL, "ap", &po), "tg_avg_pool2d_init: the layer is NULL");
    REFUSES(tg_avg_pool2d_init(&ap, "ap", NULL), "tg_avg_pool2d_init: the configuration is NULL");
    REFUSES(tg_avg_pool2d_forward(t, NULL, x), "tg_avg_pool2d_forward: the layer is NULL");
    cr_assert_eq(tg_avg_pool2d_init(&ap, NULL, &po), 0);
    FAILS(t, tg_avg_pool2d_forward(t, &ap, NULL), NULL, "tg_avg_pool2d");
    tg_adaptive_avg_pool2d_layer aa;
    REFUSES(tg_adaptive_avg_pool2d_init(NULL, "aa", 1, 1), "tg_adaptive_avg_pool2d_init: the layer is NULL");
    REFUSES(tg_adaptive_avg_pool2d_forward(t, NULL, x), "tg_adaptive_avg_pool2d_forward: the layer is NULL");
    cr_assert_eq(tg_adaptive_avg_pool2d_init(&aa, NULL, 1, 1), 0);
    FAILS(t, tg_adaptive_avg_pool2d_forward(t, &aa, NULL), NULL, "tg_adaptive_avg_pool2d");
    tg_conv1d_layer c1;
    tg_conv1d_config c1c = TG_CONV1D_CONFIG(1, 1, 1);
    REFUSES(tg_conv1d_init(NULL, p, "c1", &c1c, NULL), "tg_conv1d_init: the layer is NULL");
    REFUSES(tg_conv1d_init(&c1, NULL, "c1", &c1c, NULL), "tg_conv1d_init: the parameter store is NULL");
    REFUSES(tg_conv1d_init(&c1, p, "c1", NULL, NULL), "tg_conv1d_init: the configuration is NULL");
    REFUSES(tg_conv1d_forward(t, NULL, x), "tg_conv1d_forward: the layer is NULL");
    cr_assert_eq(tg_conv1d_init(&c1, p, "c1", &c1c, NULL), 0);
    FAILS(t, tg_conv1d_forward(t, &c1, NULL), NULL, "tg_conv1d");
    tg_conv_transpose2d_layer ct;
    tg_conv_transpose2d_config ctc = TG_CONV_TRANSPOSE2D_CONFIG(1, 1, 1, 1);
    REFUSES(tg_conv_transpose2d_init(NULL, p, "ct", &ctc, NULL), "tg_conv_transpose2d_init: the layer is NULL");
    REFUSES(tg_conv_transpose2d_init(&ct, NULL, "ct", &ctc, NULL), "tg_conv_transpose2d_init: the parameter store is NULL");
    REFUSES(tg_conv_transpose2d_init(&ct, p, "ct", NULL, NULL), "tg_conv_transpose2d_init: the configuration is NULL");
    REFUSES(tg_conv_transpose2d_forward(t, NULL, x), "tg_conv_transpose2d_forward: the layer is NULL");
    cr_assert_eq(tg_conv_transpose2d_init(&ct, p, "ct", &ctc, NULL), 0);
    FAILS(t, tg_conv_transpose2d_forward(t, &ct, NULL), NULL, "tg_conv_transpose2d");
    tg_max_pool1d_layer mp1;
    REFUSES(tg_max_pool1d_init(NULL, "mp1", &po), "tg_max_pool1d_init: the layer is NULL");
    REFUSES(tg_max_pool1d_init(&mp1, "mp1", NULL), "tg_max_pool1d_init: the configuration is NULL");
    REFUSES(tg_max_pool1d_forward(t, NULL, x), "tg_max_pool1d_forward: the layer is NULL");
    cr_assert_eq(tg_max_pool1d_init(&mp1, NULL, &po), 0);
    FAILS(t, tg_max_pool1d_forward(t, &mp1, NULL), NULL, "tg_max_pool1d");
    tg_avg_pool1d_layer ap1;
    REFUSES(tg_avg_pool1d_init(NULL, "ap1", &po), "tg_avg_pool1d_init: the layer is NULL");
    REFUSES(tg_avg_pool1d_init(&ap1, "ap1", NULL), "tg_avg_pool1d_init: the configuration is NULL");
    REFUSES(tg_avg_pool1d_forward(t, NULL, x), "tg_avg_pool1d_forward: the layer is NULL");
    cr_assert_eq(tg_avg_pool1d_init(&ap1, NULL, &po), 0);
    FAILS(t, tg_avg_pool1d_forward(t, &ap1, NULL), NULL, "tg_avg_pool1d");
    tg_upsample_layer up;
    tg_interp_opts io = {{2, 2}, {0, 0}, TG_INTERP_NEAREST, false};
    REFUSES(tg_upsample_init(NULL, "up", &io), "tg_upsample_init: the layer is NULL");
    REFUSES(tg_upsample_init(&up, "up", NULL), "tg_upsample_init: the configuration is NULL");
    REFUSES(tg_upsample_forward(t, NULL, x), "tg_upsample_forward: the layer is NULL");
    cr_assert_eq(tg_upsample_init(&up, NULL, &io), 0);
    FAILS(t, tg_upsample_forward(t, &up, NULL), NULL, "tg_upsample");
    tg_dropout2d_layer d;
    REFUSES(tg_dropout2d_init(NULL, "d", 0.5), "tg_dropout2d_init: the layer is NULL");
    REFUSES(tg_dropout2d_forward(t, NULL, x, NULL), "tg_dropout2d_forward: the layer is NULL");
    cr_assert_eq(tg_dropout2d_init(&d, NULL, 0.5), 0);
    FAILS(t, tg_dropout2d_forward(t, &d, NULL, NULL), NULL, "tg_dropout2d");
    tg_params_free(bufs);
    tg_params_free(p);
    tg_tape_free(t);
}
