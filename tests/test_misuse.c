/* Misuse of the API is an error naming what was wrong, never a crash and
 * never a silent wrong number. One section per area; every case asserts the
 * message. */
#include <stdio.h>
#include <string.h>

#include "test_util.h"

static void assert_error(const tg_tape *t, const char *want)
{
    const char *e = tg_tape_error(t);
    cr_assert(e && strstr(e, want), "want \"%s\", got \"%s\"", want, e ? e : "(none)");
}

/* ---- engine: the tape's backward ------------------------------------------------------------ */

Test(misuse_backward, twice_on_one_tape_is_refused_and_changes_nothing)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = tg_tensor_alloc(0, NULL);
    a->requires_grad = true;
    tg_tensor *loss = tg_sum(t, tg_scale(t, a, 2));
    cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
    cr_assert_eq(a->grad[0], 2);
    cr_assert_eq(tg_backward(t, loss), -1);
    assert_error(t, "tg_backward called twice on one tape: reset it first");
    cr_assert_eq(a->grad[0], 2, "the refused call accumulated nothing");
    /* a loss that is itself a leaf, and tg_backward_seed, count as well */
    tg_tape_reset(t);
    loss = tg_sum(t, a);
    cr_assert_eq(tg_backward(t, loss), 0);
    cr_assert_eq(tg_backward_seed(t, loss, (tg_real[]){1}), -1);
    assert_error(t, "tg_backward called twice on one tape: reset it first");
    cr_assert_eq(a->grad[0], 3);
    /* reset makes the tape usable again */
    tg_tape_reset(t);
    cr_assert_eq(tg_backward(t, tg_sum(t, a)), 0, "%s", tg_tape_error(t));
    cr_assert_eq(a->grad[0], 4);
    tg_tensor_free(a);
    tg_tape_free(t);
}

Test(misuse_backward, loss_that_needs_no_grad)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(1, (int[]){3});
    x->requires_grad = true;
    /* recording left off after an evaluation pass */
    tg_no_grad_begin(t);
    tg_tape_reset(t);
    tg_tensor *loss = tg_sum(t, tg_tanh(t, x));
    cr_assert_not_null(loss);
    cr_assert_eq(tg_backward(t, loss), -1);
    assert_error(t, "tg_backward: loss does not depend on any tensor that requires grad (is recording off?)");
    cr_assert_null(x->grad);
    /* recording on, but nothing requires a grad */
    tg_tape_reset(t);
    tg_no_grad_end(t, true);
    x->requires_grad = false;
    cr_assert_eq(tg_backward(t, tg_sum(t, x)), -1);
    assert_error(t, "loss does not depend on any tensor that requires grad");
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(misuse_backward, bad_loss)
{
    tg_tape *t = tg_tape_new(), *u = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(0, NULL);
    x->requires_grad = true;
    cr_assert_eq(tg_backward(t, NULL), -1);
    assert_error(t, "tg_backward: output is NULL");
    /* a loss from before tg_tape_reset */
    tg_tape_reset(t);
    tg_tensor *loss = tg_scale(t, x, 3);
    tg_tape_reset(t);
    cr_assert_eq(tg_backward(t, loss), -1);
    assert_error(t, "tg_backward: the loss is a tensor from before tg_tape_reset");
    cr_assert_null(x->grad);
    /* a loss recorded on another tape */
    tg_tape_reset(t);
    loss = tg_scale(u, x, 3);
    cr_assert_eq(tg_backward(t, loss), -1);
    assert_error(t, "tg_backward: the loss belongs to another tape");
    cr_assert_null(x->grad);
    /* a freed heap tensor */
    tg_tape_reset(t);
    tg_tensor *h = tg_tensor_alloc(0, NULL);
    tg_tensor_free(h);
    cr_assert_eq(tg_backward(t, h), -1);
    assert_error(t, "tg_backward: the loss is not a live tensor");
    /* a forward error stays the message */
    tg_tape_reset(t);
    tg_fail(t, "an earlier error");
    cr_assert_eq(tg_backward(t, tg_scale(u, x, 1)), -1);
    cr_assert_str_eq(tg_tape_error(t), "an earlier error");
    tg_tensor_free(x);
    tg_tape_free(u);
    tg_tape_free(t);
}

Test(misuse_backward, graph_spanning_two_tapes)
{
    tg_tape *a = tg_tape_new(), *b = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(1, (int[]){2});
    x->requires_grad = true;
    tg_tensor *tmp = tg_scale(a, x, 2);   /* recorded on a */
    tg_tensor *loss = tg_sum(b, tmp);      /* consumed on b */
    cr_assert_null(loss);
    assert_error(b, "tg_sum: input 0 belongs to another tape (a graph lives on one tape)");
    cr_assert_eq(tg_backward(b, loss), -1);
    cr_assert_null(x->grad);
    tg_tensor_free(x);
    tg_tape_free(a);
    tg_tape_free(b);
}

/* ---- engine: op inputs (every op's NULL, stale, foreign and freed inputs: tests/test_op_cases.c) -- */

/* The loop every training program has, with the input wrongly made once
 * outside it: the next step makes a tensor of the same shape first, where the
 * kept one lived, and the kept one is still found dead (its header's address
 * is never reused: core/engine/headers.h; tests/test_stale.c loops further). */
Test(misuse_inputs, kept_across_a_reset_in_a_loop)
{
    tg_tape *t = tg_tape_new();
    tg_real xs[4] = {1, 2, 3, 4};
    tg_tensor *w = tg_tensor_alloc(1, (int[]){4});
    w->requires_grad = true;
    tg_tensor *x = tg_tensor_from(t, xs, 1, (int[]){4});  /* dies at the first reset */
    for (int step = 0; step < 2; step++) {
        tg_tensor *y = tg_tensor_from(t, xs, 1, (int[]){4});
        tg_tensor *loss = tg_sum(t, tg_mul(t, tg_sub(t, x, y), w));
        if (step == 0) {
            cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
        } else {
            cr_assert_null(loss);
            assert_error(t, "tg_sub: input 0 ");
            assert_error(t, "from before tg_tape_reset");
            cr_assert_eq(tg_backward(t, loss), -1);
        }
        tg_tape_reset(t);
    }
    tg_tensor_free(w);
    tg_tape_free(t);
}

/* A view of a dead tensor is refused, and a view made before a reset is dead too. */
Test(misuse_inputs, views)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 2, (int[]){2, 3});
    tg_tensor *v = tg_reshape(t, x, 1, (int[]){6});
    cr_assert_not_null(v);
    tg_tape_reset(t);
    cr_assert_null(tg_relu(t, v));
    assert_error(t, "tg_relu: input 0 is a tensor from before tg_tape_reset");
    tg_tape_free(t);
}

/* A tensor not made by tapegrad (a struct on the stack) is refused. */
Test(misuse_inputs, tensor_not_made_by_tapegrad)
{
    tg_tape *t = tg_tape_new();
    tg_real d[2] = {1, 2};
    tg_tensor fake = {.data = d, .ndim = 1, .shape = {2, 1, 1, 1}, .size = 2};
    cr_assert_null(tg_tanh(t, &fake));
    assert_error(t, "tg_tanh: input 0 is not a live tensor");
    tg_tape_free(t);
}

/* Freeing twice, or freeing what is not a heap tensor, does nothing. */
Test(misuse_inputs, tensor_free_of_what_it_does_not_own)
{
    tg_tape *t = tg_tape_new();
    tg_params *p = tg_params_new();
    tg_tensor *w = tg_params_add(p, "w", 1, (int[]){2});
    tg_tensor *x = tg_tensor_alloc(1, (int[]){2});
    tg_tensor_free(x);
    tg_tensor_free(x);
    tg_tensor_free(tg_tensor_zeros(t, 1, (int[]){2}));
    tg_tensor_free(w);
    cr_assert_not_null(tg_relu(t, w), "%s", tg_tape_error(t));
    tg_params_free(p);
    tg_tape_free(t);
}

/* ---- engine: no-grad scopes ------------------------------------------------------------------- */

Test(misuse_no_grad, scopes_nest_and_restore)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(1, (int[]){2});
    x->requires_grad = true;
    bool outer = tg_no_grad_begin(t);
    bool inner = tg_no_grad_begin(t);
    cr_assert(outer && !inner);
    cr_assert(!tg_tanh(t, x)->requires_grad);
    tg_no_grad_end(t, inner);
    cr_assert(!tg_tape_recording(t), "the inner end restores the outer scope");
    tg_no_grad_end(t, outer);
    cr_assert(tg_tape_recording(t));
    tg_tensor *loss = tg_sum(t, tg_tanh(t, x));
    cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
    cr_assert_not_null(x->grad);
    tg_tensor_free(x);
    tg_tape_free(t);
}

/* Asserts that a call returned NULL (or -1) with tg_error() equal to want,
 * after clearing it, so a stale message cannot pass. */
#define expect_null(call, want)                                                             \
    do {                                                                                    \
        tg_error_clear();                                                                   \
        cr_assert_null((call), "%s", #call);                                                \
        cr_assert_str_eq(tg_error() ? tg_error() : "(none)", (want), "%s", #call);          \
    } while (0)
#define expect_fail(call, want)                                                             \
    do {                                                                                    \
        tg_error_clear();                                                                   \
        cr_assert_eq((call), -1, "%s", #call);                                              \
        cr_assert_str_eq(tg_error() ? tg_error() : "(none)", (want), "%s", #call);          \
    } while (0)

/* ---- nn: NULL layers, stores, configurations and tapes ------------------------------------- */

static const tg_mha_config MHA = {.n_heads = 2, .d_model = 4, .bias = true, .mode = TG_MHA_FUSED};
static const tg_block_config BLOCK = {.attn = {.n_heads = 2, .d_model = 4, .bias = true}, .d_ff = 8};
static const tg_model_config MODEL = {.vocab = 5, .d_model = 4, .n_layers = 1, .n_heads = 2, .max_len = 4};

/* One of each layer. */
typedef struct layers {
    tg_linear l;
    tg_embedding_layer e;
    tg_layernorm_layer ln;
    tg_ffn f;
    tg_mha m;
    tg_block b;
    tg_model mo;
} layers;

Test(misuse_nn, init_with_null_layer_store_or_config)
{
    tg_params *p = tg_params_new();
    layers L;
    expect_fail(tg_linear_init(NULL, p, "fc", &(tg_linear_config){.in = 2, .out = 3, .bias = true}, NULL),
                "tg_linear_init: the layer is NULL");
    expect_fail(tg_linear_init(&L.l, NULL, "fc", &(tg_linear_config){.in = 2, .out = 3, .bias = true}, NULL),
                "tg_linear_init: the parameter store is NULL");
    expect_fail(tg_embedding_init(NULL, p, "emb", 5, 4, NULL), "tg_embedding_init: the layer is NULL");
    expect_fail(tg_embedding_init(&L.e, NULL, "emb", 5, 4, NULL), "tg_embedding_init: the parameter store is NULL");
    expect_fail(tg_layernorm_init(NULL, p, "ln", 4, 1e-5), "tg_layernorm_init: the layer is NULL");
    expect_fail(tg_layernorm_init(&L.ln, NULL, "ln", 4, 1e-5), "tg_layernorm_init: the parameter store is NULL");
    expect_fail(tg_ffn_init(NULL, p, "ff", &(tg_ffn_config){.d_model = 4, .d_ff = 8}, NULL),
                "tg_ffn_init: the layer is NULL");
    expect_fail(tg_ffn_init(&L.f, NULL, "ff", &(tg_ffn_config){.d_model = 4, .d_ff = 8}, NULL),
                "tg_ffn_init: the parameter store is NULL");
    expect_fail(tg_mha_init(NULL, p, "attn", &MHA, NULL), "tg_mha_init: the layer is NULL");
    expect_fail(tg_mha_init(&L.m, NULL, "attn", &MHA, NULL), "tg_mha_init: the parameter store is NULL");
    expect_fail(tg_mha_init(&L.m, p, "attn", NULL, NULL), "tg_mha_init: the configuration is NULL");
    expect_fail(tg_block_init(NULL, p, "blk", &BLOCK, NULL), "tg_block_init: the layer is NULL");
    expect_fail(tg_block_init(&L.b, NULL, "blk", &BLOCK, NULL), "tg_block_init: the parameter store is NULL");
    expect_fail(tg_block_init(&L.b, p, "blk", NULL, NULL), "tg_block_init: the configuration is NULL");
    expect_fail(tg_model_init(NULL, p, &MODEL, NULL), "tg_model_init: the layer is NULL");
    expect_fail(tg_model_init(&L.mo, NULL, &MODEL, NULL), "tg_model_init: the parameter store is NULL");
    expect_fail(tg_model_init(&L.mo, p, NULL, NULL), "tg_model_init: the configuration is NULL");
    cr_assert_eq(tg_params_count(p), 0, "a refused init added parameters");
    tg_model_free(NULL);  /* a no-op, as free(NULL) */
    tg_params_free(p);
}

/* An op or layer on tape t returned NULL with want in the tape and in
 * tg_error(); the tape's error is cleared first and after. */
#define expect_op_null(t, call, want)                                                       \
    do {                                                                                    \
        tg_tape_clear_error(t);                                                             \
        tg_error_clear();                                                                   \
        cr_assert_null((call), "%s", #call);                                                \
        cr_assert_str_eq(tg_tape_error(t) ? tg_tape_error(t) : "(none)", (want), "%s", #call); \
        cr_assert_str_eq(tg_error() ? tg_error() : "(none)", (want), "%s", #call);          \
        tg_tape_clear_error(t);                                                             \
    } while (0)

Test(misuse_nn, forward_with_null_layer_or_tape)
{
    tg_params *p = tg_params_new();
    layers L;
    cr_assert_eq(tg_linear_init(&L.l, p, "fc", &(tg_linear_config){.in = 4, .out = 4, .bias = true}, NULL), 0,
                 "%s", tg_error());
    cr_assert_eq(tg_embedding_init(&L.e, p, "emb", 5, 4, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_layernorm_init(&L.ln, p, "ln", 4, 1e-5), 0, "%s", tg_error());
    cr_assert_eq(tg_ffn_init(&L.f, p, "ff", &(tg_ffn_config){.d_model = 4, .d_ff = 8}, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_mha_init(&L.m, p, "attn", &MHA, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_block_init(&L.b, p, "blk", &BLOCK, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_model_init(&L.mo, p, &MODEL, NULL), 0, "%s", tg_error());
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(3, (int[]){1, 2, 4}), *w = x;
    const int32_t ids[2] = {1, 2};
    tg_tensor *idt = tg_tensor_from_dtype(t, TG_I32, ids, 2, (int[]){1, 2});
    expect_op_null(t, tg_linear_forward(t, NULL, x), "tg_linear_forward: the layer is NULL");
    expect_op_null(t, tg_embedding_forward(t, NULL, idt), "tg_embedding_forward: the layer is NULL");
    expect_op_null(t, tg_layernorm_forward(t, NULL, x), "tg_layernorm_forward: the layer is NULL");
    expect_op_null(t, tg_ffn_forward(t, NULL, x, NULL), "tg_ffn_forward: the layer is NULL");
    expect_op_null(t, tg_mha_forward(t, NULL, x, x, NULL, &w), "tg_mha_forward: the layer is NULL");
    cr_assert_null(w, "tg_mha_forward clears *weights when it fails");
    expect_op_null(t, tg_block_forward(t, NULL, x, NULL, NULL), "tg_block_forward: the layer is NULL");
    expect_op_null(t, tg_model_forward(t, NULL, idt, NULL, NULL),
                   "tg_model_forward: the layer is NULL");
    /* a NULL tape: nowhere to keep the error but tg_error() */
    expect_null(tg_linear_forward(NULL, &L.l, x), "tg_linear_forward: the tape is NULL");
    expect_null(tg_embedding_forward(NULL, &L.e, idt), "tg_embedding_forward: the tape is NULL");
    expect_null(tg_layernorm_forward(NULL, &L.ln, x), "tg_layernorm_forward: the tape is NULL");
    expect_null(tg_ffn_forward(NULL, &L.f, x, NULL), "tg_ffn_forward: the tape is NULL");
    expect_null(tg_mha_forward(NULL, &L.m, x, x, NULL, NULL), "tg_mha_forward: the tape is NULL");
    expect_null(tg_block_forward(NULL, &L.b, x, NULL, NULL), "tg_block_forward: the tape is NULL");
    expect_null(tg_model_forward(NULL, &L.mo, idt, NULL, NULL), "tg_model_forward: the tape is NULL");
    /* the decoding path: one position per row against a key/value cache */
    tg_kv_cache c;
    const int32_t pos[1] = {0};
    tg_tensor *id1 = tg_tensor_from_dtype(t, TG_I32, ids, 2, (int[]){1, 1});  /* [B, 1] */
    tg_tensor *pt = tg_tensor_from_dtype(t, TG_I32, pos, 1, (int[]){1});      /* [B] */
    expect_fail(tg_kv_cache_init(NULL, &L.mo, 1), "tg_kv_cache_init: the cache is NULL");
    expect_fail(tg_kv_cache_init(&c, NULL, 1), "tg_kv_cache_init: the model is NULL");
    expect_fail(tg_kv_cache_init(&c, &L.mo, 0), "tg_kv_cache_init: B = 0 must be >= 1");
    cr_assert_eq(tg_kv_cache_init(&c, &L.mo, 1), 0, "%s", tg_error());
    expect_fail(tg_kv_cache_move(NULL, 0, 0, 1), "tg_kv_cache_move: the cache is NULL");
    expect_fail(tg_kv_cache_move(&(tg_kv_cache){0}, 0, 0, 1), "tg_kv_cache_move: the cache is not initialised");
    expect_fail(tg_kv_cache_move(&c, 1, 0, 1),
                "tg_kv_cache_move: rows 0 -> 1, 1 positions: need rows in [0, 1), positions in [0, 4]");
    expect_fail(tg_kv_cache_move(&c, 0, 0, 5),
                "tg_kv_cache_move: rows 0 -> 0, 5 positions: need rows in [0, 1), positions in [0, 4]");
    bool prev = tg_no_grad_begin(t);
    tg_tensor *x1 = tg_tensor_zeros(t, 3, (int[]){1, 1, 4});
    expect_op_null(t, tg_mha_decode(t, NULL, x1, c.kv[0], pt, NULL), "tg_mha_decode: the layer is NULL");
    expect_op_null(t, tg_block_decode(t, NULL, x1, c.kv[0], pt, NULL), "tg_block_decode: the layer is NULL");
    expect_op_null(t, tg_model_decode(t, NULL, &c, id1, pt, NULL), "tg_model_decode: the layer is NULL");
    expect_null(tg_model_decode(NULL, &L.mo, &c, id1, pt, NULL), "tg_model_decode: the tape is NULL");
    cr_assert_not_null(tg_model_decode(t, &L.mo, &c, id1, pt, NULL), "%s", tg_error());
    expect_op_null(t, tg_model_decode(t, &L.mo, NULL, id1, pt, NULL), "tg_model_decode: the cache is NULL");
    expect_op_null(t, tg_model_decode(t, &L.mo, &c, NULL, pt, NULL), "tg_model_decode: ids is NULL");
    expect_op_null(t, tg_model_decode(t, &L.mo, &c, id1, NULL, NULL), "tg_model_decode: pos is NULL");
    /* the prefill: a forward that also fills the cache */
    expect_op_null(t, tg_model_prefill(t, NULL, &c, idt, NULL), "tg_model_prefill: the layer is NULL");
    expect_null(tg_model_prefill(NULL, &L.mo, &c, idt, NULL), "tg_model_prefill: the tape is NULL");
    expect_op_null(t, tg_model_prefill(t, &L.mo, NULL, idt, NULL), "tg_model_prefill: the cache is NULL");
    expect_op_null(t, tg_model_prefill(t, &L.mo, &(tg_kv_cache){0}, idt, NULL),
                   "tg_model_prefill: the cache is not initialised (tg_kv_cache_init)");
    expect_op_null(t, tg_model_prefill(t, &L.mo, &c, tg_tensor_from_dtype(t, TG_I32, ids, 2, (int[]){2, 1}), NULL),
                   "tg_model_prefill: 2 rows for a cache of 1");
    expect_op_null(t, tg_model_prefill(t, &L.mo, &c, tg_tensor_zeros_dtype(t, TG_I32, 2, (int[]){1, 5}), NULL),
                   "tg_model_prefill: ids is [1,5], but it is [B, T] with B > 0 and 0 < T <= max_len 4");
    expect_op_null(t, tg_model_prefill(t, &L.mo, &c, tg_tensor_zeros_dtype(t, TG_F32, 2, (int[]){1, 2}), NULL),
                   "tg_model_prefill: ids is float32, but indices are int64 or int32 (convert with tg_to)");
    cr_assert_not_null(tg_model_prefill(t, &L.mo, &c, idt, NULL), "%s", tg_error());
    tg_params *p2 = tg_params_new();
    tg_model other;
    tg_model_config longer = MODEL;
    longer.max_len = 6;
    cr_assert_eq(tg_model_init(&other, p2, &longer, NULL), 0, "%s", tg_error());
    expect_op_null(t, tg_model_prefill(t, &other, &c, idt, NULL),
                   "tg_model_prefill: the cache holds 1 layers x 4 positions, the model 1 x 6 (another model's?)");
    tg_model_free(&other);
    tg_params_free(p2);
    tg_tensor *x2 = tg_tensor_zeros(t, 3, (int[]){1, 2, 4});
    expect_op_null(t, tg_mha_forward(t, &L.m, x2, x1, &(tg_mha_opts){.cache = c.kv[0]}, NULL),
                   "tg_mha 'attn': a key/value cache is filled by self-attention only (xq == xkv)");
    expect_op_null(t, tg_mha_forward(t, &L.m, x2, x2, &(tg_mha_opts){.cache = x2}, NULL),
                   "tg_mha 'attn': the cache must be [B' >= B, cap >= L, 8] for x [1,2,4], got [1,2,4]");
    tg_no_grad_end(t, prev);
    tg_kv_cache_free(&c);
    /* the layers themselves still work */
    cr_assert_not_null(tg_model_forward(t, &L.mo, idt, NULL, NULL), "%s", tg_error());
    tg_tensor_free(x);
    tg_tape_free(t);
    tg_model_free(&L.mo);
    tg_params_free(p);
}

/* A layer whose init failed (or that was never initialised: zeroed) is
 * refused by its forward with a message, not run on NULL weights. */
Test(misuse_nn, forward_of_a_layer_whose_init_failed)
{
    tg_params *p = tg_params_new();
    tg_linear l;
    tg_embedding_layer e;
    tg_layernorm_layer ln;
    tg_ffn f;
    tg_mha m, good;
    tg_block b = {0};  /* never initialised */
    tg_model mo;
    tg_mha_config bad = MHA;
    bad.n_heads = 3;  /* does not divide d_model */
    tg_model_config badm = MODEL;
    badm.n_layers = 0;
    cr_assert_eq(tg_linear_init(&l, p, "fc", &(tg_linear_config){.in = 0, .out = 4, .bias = true}, NULL), -1);
    cr_assert_eq(tg_embedding_init(&e, p, "emb", 0, 4, NULL), -1);
    cr_assert_eq(tg_layernorm_init(&ln, p, "ln", 0, 1e-5), -1);
    cr_assert_eq(tg_ffn_init(&f, p, "ff", &(tg_ffn_config){.d_model = 4, .d_ff = 8, .dropout = 2.0}, NULL), -1);
    cr_assert_eq(tg_mha_init(&m, p, "attn", &bad, NULL), -1);
    cr_assert_eq(tg_model_init(&mo, p, &badm, NULL), -1);
    cr_assert_eq(tg_mha_init(&good, p, "good", &MHA, NULL), 0, "%s", tg_error());
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(3, (int[]){1, 2, 4});
    const int32_t ids[2] = {1, 2};
    tg_tensor *idt = tg_tensor_from_dtype(t, TG_I32, ids, 2, (int[]){1, 2});
#define NOT_INIT ": the layer is not initialised (its init failed or was not called)"
    expect_op_null(t, tg_linear_forward(t, &l, x), "tg_linear_forward" NOT_INIT);
    expect_op_null(t, tg_embedding_forward(t, &e, idt), "tg_embedding_forward" NOT_INIT);
    expect_op_null(t, tg_layernorm_forward(t, &ln, x), "tg_layernorm_forward" NOT_INIT);
    expect_op_null(t, tg_ffn_forward(t, &f, x, NULL), "tg_ffn_forward" NOT_INIT);
    expect_op_null(t, tg_mha_forward(t, &m, x, x, NULL, NULL), "tg_mha_forward" NOT_INIT);
    expect_op_null(t, tg_block_forward(t, &b, x, NULL, NULL), "tg_block_forward" NOT_INIT);
    expect_op_null(t, tg_model_forward(t, &mo, idt, NULL, NULL), "tg_model_forward" NOT_INIT);
    expect_op_null(t, tg_model_prefill(t, &mo, &(tg_kv_cache){0}, idt, NULL), "tg_model_prefill" NOT_INIT);
    expect_fail(tg_mha_copy_weights(&m, &good),
                "tg_mha_copy_weights: dst is not initialised (its init failed or was not called)");
    expect_fail(tg_mha_copy_weights(&good, &m),
                "tg_mha_copy_weights: src is not initialised (its init failed or was not called)");
#undef NOT_INIT
    tg_tensor_free(x);
    tg_tape_free(t);
    tg_params_free(p);
}

Test(misuse_nn, mha_copy_and_convert_with_null)
{
    tg_params *p = tg_params_new();
    tg_mha m;
    cr_assert_eq(tg_mha_init(&m, p, "attn", &MHA, NULL), 0, "%s", tg_error());
    expect_fail(tg_mha_copy_weights(NULL, &m), "tg_mha_copy_weights: dst is NULL");
    expect_fail(tg_mha_copy_weights(&m, NULL), "tg_mha_copy_weights: src is NULL");
    expect_null(tg_mha_convert(NULL, TG_MHA_PER_HEAD, 2, 0), "tg_mha_convert: the safetensors set is NULL");
    tg_params_free(p);
}
