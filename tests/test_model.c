/* The toy model (nn/model.h) and the PyTorch fixtures of
 * bench/torch/make_nn_fixtures.py: gradcheck of the whole model w.r.t. every
 * parameter (both attention modes); fused MHA against torch's
 * nn.MultiheadAttention, per-head MHA against an explicit per-head module, and
 * the model's logits, loss, attention weights and every parameter gradient
 * against a PyTorch twin. */
#include <stdlib.h>
#include <string.h>

#include <tapegrad/core/io/io.h>
#include <tapegrad/nn/nn.h>
#include "../core/kernels/gemm.h"
#include "fixture_util.h"


/* ---- gradcheck of the whole model ---------------------------------------------------- */

enum { GB = 2, GT = 5 };
static const int32_t g_ids[GB * GT] = {1, 4, 6, 2, 5, 1, 3, 5, 0, 0};
static const int32_t g_lens[GB] = {5, 3};
static const int32_t g_targets[GB * GT] = {4, 6, 2, 5, TG_IGNORE, 3, 5, TG_IGNORE, TG_IGNORE, TG_IGNORE};

/* ids [B, T] (T 0: lens [B]) as an int tensor of t of dtype dt */
static tg_tensor *ix(tg_tape *t, tg_dtype dt, const int32_t *v, int B, int T)
{
    tg_tensor *x = tg_tensor_new_dtype(t, dt, T ? 2 : 1, (int[]){B, T});
    for (int i = 0; x && i < B * (T ? T : 1); i++) tg_dtype_store(dt, x->data, (size_t)i, v[i]);
    return x;
}

/* The gradcheck batch's forward: g_ids [GB, GT] and g_lens [GB] as int32 tensors of t. */
static tg_tensor *g_forward(tg_tape *t, const tg_model *m, tg_model_opts o, tg_tensor **attn)
{
    o.lens = ix(t, TG_I32, g_lens, GB, 0);
    return tg_model_forward(t, m, ix(t, TG_I32, g_ids, GB, GT), &o, attn);
}

typedef struct model_ctx {
    tg_model m;
    bool loss;  /* the cross-entropy loss, else the logits */
} model_ctx;

static tg_tensor *model_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)in;
    model_ctx *c = ctx;
    tg_tensor *logits = g_forward(t, &c->m, (tg_model_opts){0}, NULL);
    return c->loss ? tg_cross_entropy(t, logits, tg_tensor_from_dtype(t, TG_I32, g_targets, 2, (int[]){GB, GT}), TG_IGNORE) : logits;
}

static void check_config_grads(const tg_model_config *cfg, bool loss)
{
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_params *p = tg_params_new();
    model_ctx c = {.loss = loss};
    cr_assert_eq(tg_model_init(&c.m, p, cfg, &rng), 0, "%s", tg_error());
    tg_real *d = tg_params_data(p);  /* nudge biases and LayerNorm off 0 / 1 */
    for (size_t i = 0; i < tg_params_numel(p); i++) d[i] += (tg_real)(0.1 * (2 * tg_rng_uniform(&rng) - 1));
    int n = tg_params_count(p);
    tg_tensor **in = malloc((size_t)n * sizeof *in);
    for (int i = 0; i < n; i++) in[i] = tg_params_at(p, i);
    tu_gradcheck(model_fn, &c, in, n);
    free(in);
    tg_model_free(&c.m);
    tg_params_free(p);
}

static void check_model_grads(tg_mha_mode mode, bool loss)
{
    tg_model_config cfg = {.vocab = 7, .d_model = 8, .n_layers = 2, .n_heads = 2, .d_ff = 16, .max_len = 6,
                           .mode = mode};
    check_config_grads(&cfg, loss);
}

/* LLaMA-style (RMSNorm, GQA, RoPE, SwiGLU, no biases) and GPT-2 (tied head:
 * the one tok_emb.weight gets the sum of both uses' gradients) */
static const tg_model_config LLAMA = {.vocab = 7, .d_model = 8, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2,
                                      .d_ff = 12, .max_len = 6, .pos = TG_POS_ROPE, .norm = TG_NORM_RMS,
                                      .ff_act = TG_FFN_SWIGLU, .no_bias = true};
static const tg_model_config GPT2 = {.vocab = 7, .d_model = 8, .n_layers = 2, .n_heads = 2, .d_ff = 16,
                                     .max_len = 6, .tie_weights = true};

Test(model, gradcheck_loss_fused) { check_model_grads(TG_MHA_FUSED, true); }
Test(model, gradcheck_loss_llama) { check_config_grads(&LLAMA, true); }
Test(model, gradcheck_loss_gpt2_tied) { check_config_grads(&GPT2, true); }
Test(model, gradcheck_loss_geglu_per_head)
{
    tg_model_config c = LLAMA;
    c.ff_act = TG_FFN_GEGLU, c.mode = TG_MHA_PER_HEAD, c.no_bias = false, c.tie_weights = true;
    check_config_grads(&c, true);
}

Test(model, options_name_their_parameters)
{
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config c = LLAMA;
    c.n_layers = 1;
    cr_assert_eq(tg_model_init(&m, p, &c, NULL), 0, "%s", tg_error());
    static const char *const llama[] = {"tok_emb.weight", "blocks.0.ln1.weight", "blocks.0.attn.in_proj_weight",
        "blocks.0.attn.out_proj.weight", "blocks.0.ln2.weight", "blocks.0.ff.gate_proj.weight",
        "blocks.0.ff.up_proj.weight", "blocks.0.ff.down_proj.weight", "ln_f.weight", "head.weight"};
    cr_assert_eq(tg_params_count(p), 10);
    for (int i = 0; i < 10; i++) cr_assert_str_eq(tg_params_at(p, i)->name, llama[i]);
    tg_model_free(&m);
    tg_params_free(p);

    p = tg_params_new();
    c = GPT2;
    c.n_layers = 1;
    cr_assert_eq(tg_model_init(&m, p, &c, NULL), 0, "%s", tg_error());
    cr_assert_str_eq(tg_params_at(p, tg_params_count(p) - 1)->name, "ln_f.bias");
    cr_assert_null(tg_params_get(p, "head.weight"));
    cr_assert_null(tg_params_get(p, "head.bias"));
    cr_assert(m.head.weight == m.tok_emb.weight && !m.head.bias, "one parameter, no head bias");
    tg_model_free(&m);

    c.norm = (tg_norm_kind)2;
    cr_assert_eq(tg_model_init(&m, p, &c, NULL), -1);
    cr_assert(strstr(tg_error(), "norm 2"), "%s", tg_error());
    c.norm = TG_NORM_LAYER, c.ff_act = (tg_ffn_act)-1;
    cr_assert_eq(tg_model_init(&m, p, &c, NULL), -1);
    cr_assert(strstr(tg_error(), "ff_act -1"), "%s", tg_error());
    tg_params_free(p);
}

/* A tied model saves tok_emb.weight once; a file that also names it
 * head.weight (PyTorch's state_dict) loads when the two are equal. */
Test(model, tied_weights_save_once_and_load_torch_files)
{
    tg_rng rng;
    tg_rng_seed(&rng, 4);
    tg_params *p = tg_params_new(), *q = tg_params_new();
    tg_model m, n;
    cr_assert_eq(tg_model_init(&m, p, &GPT2, &rng), 0, "%s", tg_error());
    cr_assert_eq(tg_model_init(&n, q, &GPT2, NULL), 0, "%s", tg_error());
    tg_safetensors *s = tg_st_new();
    cr_assert_eq(tg_st_add_params(s, p), 0, "%s", tg_error());
    cr_assert_eq(tg_st_count(s), tg_params_count(p));
    cr_assert_null(tg_st_get(s, "head.weight"));
    cr_assert_eq(tg_model_load(&n, q, s, true, NULL), 0, "%s", tg_error());
    cr_assert(!memcmp(tg_params_data(q), tg_params_data(p), tg_params_numel(p) * sizeof(tg_real)));

    const tg_tensor *emb = tg_st_get(s, "tok_emb.weight");
    cr_assert_eq(tg_st_add(s, "head.weight", emb), 0, "%s", tg_error());
    memset(tg_params_data(q), 0, tg_params_numel(q) * sizeof(tg_real));
    cr_assert_eq(tg_model_load(&n, q, s, true, "optim."), 0, "%s", tg_error());
    cr_assert(!memcmp(tg_params_data(q), tg_params_data(p), tg_params_numel(p) * sizeof(tg_real)));
    cr_assert_eq(tg_st_load_params(q, s, true, NULL), -1, "the plain loader calls head.weight unexpected");

    tg_st_get(s, "head.weight")->data[3] += 1;
    cr_assert_eq(tg_model_load(&n, q, s, true, NULL), -1);
    cr_assert(strstr(tg_error(), "head.weight differs from its tok_emb.weight"), "%s", tg_error());
    tg_st_get(s, "head.weight")->data[3] = emb->data[3];
    cr_assert_eq(tg_st_add_data(s, "extra", NULL, 1, (int[]){2}), 0);
    cr_assert_eq(tg_model_load(&n, q, s, true, NULL), -1);
    cr_assert(strstr(tg_error(), "unexpected tensor 'extra'"), "%s", tg_error());
    cr_assert_eq(tg_model_load(&n, q, s, false, NULL), 0, "%s", tg_error());
    tg_st_free(s);
    tg_model_free(&m);
    tg_model_free(&n);
    tg_params_free(p);
    tg_params_free(q);
}
Test(model, gradcheck_loss_per_head) { check_model_grads(TG_MHA_PER_HEAD, true); }
Test(model, gradcheck_logits_fused) { check_model_grads(TG_MHA_FUSED, false); }

Test(model, names_shapes_and_errors)
{
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = 7, .d_model = 8, .n_layers = 2, .n_heads = 2, .max_len = 6};
    cr_assert_eq(tg_model_init(&m, p, &cfg, NULL), 0, "%s", tg_error());
    const char *names[] = {"tok_emb.weight", "pos_emb.weight", "blocks.0.ln1.weight", "blocks.0.ln1.bias",
                           "blocks.0.attn.in_proj_weight", "blocks.0.attn.in_proj_bias",
                           "blocks.0.attn.out_proj.weight", "blocks.0.attn.out_proj.bias",
                           "blocks.0.ln2.weight", "blocks.0.ln2.bias", "blocks.0.ff.fc1.weight",
                           "blocks.0.ff.fc1.bias", "blocks.0.ff.fc2.weight", "blocks.0.ff.fc2.bias"};
    for (int i = 0; i < 14; i++) cr_assert_str_eq(tg_params_at(p, i)->name, names[i]);
    cr_assert_str_eq(tg_params_at(p, tg_params_count(p) - 1)->name, "head.bias");
    cr_assert_eq(tg_params_count(p), 2 + 2 * 12 + 4);
    cr_assert_eq(m.cfg.d_ff, 32);
    cr_assert_eq(m.cfg.d_head, 4);
    cr_assert_eq(tg_params_get(p, "pos_emb.weight")->shape[0], 6);
    tg_tape *t = tg_tape_new();
    cr_assert_null(tg_model_forward(t, &m, ix(t, TG_I32, g_ids, 1, 7), NULL, NULL));  /* T > max_len */
    cr_assert(strstr(tg_tape_error(t), "tg_model_forward: ids is [1,7], but it is [B, T] with B > 0 and 0 < T <= "
                                       "max_len 6"), "%s", tg_tape_error(t));
    tg_tape_clear_error(t);
    const int32_t bad_lens[GB] = {5, 6};
    tg_model_opts o = {.lens = ix(t, TG_I64, bad_lens, GB, 0)};
    cr_assert_null(tg_model_forward(t, &m, ix(t, TG_I32, g_ids, GB, GT), &o, NULL));
    cr_assert(strstr(tg_tape_error(t), "tg_model_forward: lens[1] = 6 is outside [0, T = 5]"), "%s", tg_tape_error(t));
    tg_tape_clear_error(t);
    const int32_t bad_ids[2] = {1, 7};
    cr_assert_null(tg_model_forward(t, &m, ix(t, TG_I32, bad_ids, 1, 2), NULL, NULL));
    cr_assert(strstr(tg_tape_error(t), "id 7 at position 1 is out of range [0, 7)"), "%s", tg_tape_error(t));
    tg_tape_free(t);
    tg_model_free(&m);
    cfg.n_layers = 0;
    cr_assert_eq(tg_model_init(&m, p, &cfg, NULL), -1);
    cr_assert(strstr(tg_error(), "n_layers 0"), "%s", tg_error());
    tg_params_free(p);
}

/* A model of V 7, D 8, 2 layers of 2 heads, max_len 6 from seed into *m: its parameters. */
static tg_params *small_model(tg_model *m, uint64_t seed)
{
    tg_rng rng;
    tg_rng_seed(&rng, seed);
    tg_params *p = tg_params_new();
    tg_model_config cfg = {.vocab = 7, .d_model = 8, .n_layers = 2, .n_heads = 2, .max_len = 6};
    cr_assert_eq(tg_model_init(m, p, &cfg, &rng), 0, "%s", tg_error());
    return p;
}

Test(model, head_mask_and_attention_out)
{
    tg_model m;
    tg_params *p = small_model(&m, 4);
    tg_tape *t = tg_tape_new();
    tg_tensor *hm = tg_tensor_from(t, (const tg_real[]){1, 1, 0, 1}, 2, (int[]){2, 2});  /* layer 1, head 0 off */
    tg_tensor *attn[2];
    tg_tensor *logits = g_forward(t, &m, (tg_model_opts){.head_mask = hm}, attn);
    cr_assert_not_null(logits, "%s", tg_tape_error(t));
    cr_assert(logits->ndim == 3 && logits->shape[0] == GB && logits->shape[1] == GT && logits->shape[2] == 7);
    for (int l = 0; l < 2; l++) {
        cr_assert_not_null(attn[l]);
        cr_assert(attn[l]->shape[0] == GB && attn[l]->shape[1] == 2 && attn[l]->shape[2] == GT);
        for (int i = 0; i < GT; i++)  /* causal: nothing above the diagonal */
            for (int j = i + 1; j < GT; j++) cr_assert_eq(attn[l]->data[i * GT + j], 0);
    }
    cr_assert_eq(tg_backward(t, tg_cross_entropy(t, logits, tg_tensor_from_dtype(t, TG_I32, g_targets, 2, (int[]){GB, GT}), TG_IGNORE)), 0, "%s", tg_tape_error(t));
    const tg_tensor *w = tg_params_get(p, "blocks.1.attn.in_proj_weight");
    for (int s = 0; s < 3; s++)  /* head 0 = rows 0..3 of each third */
        for (int r = 0; r < 4; r++)
            for (int k = 0; k < 8; k++) cr_assert_eq(w->grad[((s * 8) + r) * 8 + k], 0);
    tg_tape_free(t);
    tg_model_free(&m);
    tg_params_free(p);
}

/* ids, lens and positions are int64 or int32 tensors (PyTorch's LongTensor
 * input_ids; int32 accepted too): both give the same logits bit for bit, in
 * a forward, a prefill and a decode; a float or misshapen one is refused
 * naming the op, what it takes and what it got. */
Test(model, int64_and_int32_ids_give_the_same_logits)
{
    tg_model m;
    tg_params *p = small_model(&m, 12);
    tg_tape *t = tg_tape_new();
    tg_no_grad_begin(t);
    tg_kv_cache c;
    cr_assert_eq(tg_kv_cache_init(&c, &m, GB), 0, "%s", tg_error());
    tg_tensor *hm = tg_tensor_from(t, (const tg_real[]){1, 0, 1, 1}, 2, (int[]){2, 2});
    const tg_dtype dts[2] = {TG_I32, TG_I64};
    tg_tensor *y[2][3];
    for (int k = 0; k < 2; k++) {
        tg_model_opts o = {.lens = ix(t, dts[k], g_lens, GB, 0), .head_mask = hm};
        y[k][0] = tg_model_forward(t, &m, ix(t, dts[k], g_ids, GB, GT), &o, NULL);
        y[k][1] = tg_model_prefill(t, &m, &c, ix(t, dts[k], g_ids, GB, GT), &o);
        y[k][2] = tg_model_decode(t, &m, &c, ix(t, dts[k], (const int32_t[]){2, 3}, GB, 1),
                                  ix(t, dts[k], (const int32_t[]){5, 3}, GB, 0), hm);
        for (int j = 0; j < 3; j++) cr_assert_not_null(y[k][j], "%s", tg_tape_error(t));
    }
    for (int j = 0; j < 3; j++)
        cr_assert_eq(memcmp(y[0][j]->data, y[1][j]->data, y[0][j]->size * sizeof(tg_real)), 0, "call %d", j);
    cr_assert(y[0][2]->shape[0] == GB && y[0][2]->shape[1] == 1 && y[0][2]->shape[2] == 7);
    /* misuse: float ids, ids not [B, T], lens not [B] or float, a head mask not [n_layers, n_heads] */
    struct { tg_tensor *ids; tg_model_opts o; const char *want; } bad[] = {
        {tg_tensor_zeros(t, 2, (int[]){GB, GT}), {0}, "tg_model_forward: ids is float"},
        {ix(t, TG_I32, g_ids, GB * GT, 0), {0}, "tg_model_forward: ids is [10], but it is [B, T]"},
        {ix(t, TG_I32, g_ids, GB, GT), {.lens = ix(t, TG_I32, g_lens, 1, GB)},
         "tg_model_forward: lens is [1,2], but it is [B] = [2] (one per row)"},
        {ix(t, TG_I32, g_ids, GB, GT), {.lens = tg_tensor_zeros(t, 1, (int[]){GB})}, "tg_model_forward: lens is float"},
        {ix(t, TG_I32, g_ids, GB, GT), {.head_mask = tg_tensor_zeros(t, 1, (int[]){4})},
         "tg_model_forward: head_mask is float"},
        {ix(t, TG_I32, g_ids, GB, GT), {.head_mask = ix(t, TG_I32, (const int32_t[]){1, 1, 1, 1}, 2, 2)},
         "tg_model_forward: head_mask is int32 [2,2], but it is a float tensor [n_layers, n_heads] = [2, 2]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_null(tg_model_forward(t, &m, bad[i].ids, &bad[i].o, NULL), "case %zu", i);
        cr_assert(strstr(tg_tape_error(t), bad[i].want), "case %zu: \"%s\", want \"%s\"", i, tg_tape_error(t),
                  bad[i].want);
        tg_tape_clear_error(t);
    }
    tg_kv_cache_free(&c);
    tg_tape_free(t);
    tg_model_free(&m);
    tg_params_free(p);
}

/* After the first step, a fixed-shape training step allocates nothing (arena
 * and node array are reused), in both modes and with dropout on; under
 * autocast too (the half GEMMs' operand copies are kept per thread). */
static void check_no_alloc(tg_mha_mode mode, tg_dtype autocast)
{
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = 7, .d_model = 8, .n_layers = 2, .n_heads = 2, .max_len = 6,
                           .dropout = 0.1, .mode = mode};
    cr_assert_eq(tg_model_init(&m, p, &cfg, &rng), 0);
    tg_tape *t = tg_tape_new();
    tg_tensor *attn[2];
    uint64_t before = 0;
    for (int step = 0; step < 3; step++) {
        if (step == 2) before = tg_alloc_count();
        tg_tape_reset(t);
        tg_dtype prev = tg_autocast_begin(t, autocast);
        tg_tensor *logits = g_forward(t, &m, (tg_model_opts){.rng = &rng}, attn);
        tg_autocast_end(t, prev);
        tg_tensor *loss = tg_cross_entropy(t, logits, tg_tensor_from_dtype(t, TG_I32, g_targets, 2, (int[]){GB, GT}), TG_IGNORE);
        tg_params_zero_grad(p);
        cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
    }
    cr_assert_eq(tg_alloc_count(), before, "%llu allocations in a step",
                 (unsigned long long)(tg_alloc_count() - before));
    tg_tape_free(t);
    tg_model_free(&m);
    tg_params_free(p);
}

Test(model, step_makes_no_allocation_fused) { check_no_alloc(TG_MHA_FUSED, TG_F32); }
Test(model, step_makes_no_allocation_per_head) { check_no_alloc(TG_MHA_PER_HEAD, TG_F32); }
Test(model, bf16_step_makes_no_allocation_fused) { check_no_alloc(TG_MHA_FUSED, TG_BF16); }
Test(model, bf16_step_makes_no_allocation_per_head) { check_no_alloc(TG_MHA_PER_HEAD, TG_BF16); }
Test(model, f16_step_makes_no_allocation_fused) { check_no_alloc(TG_MHA_FUSED, TG_F16); }

Test(model, dropout_needs_rng_only_while_training)
{
    tg_rng rng;
    tg_rng_seed(&rng, 6);
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = 7, .d_model = 8, .n_layers = 1, .n_heads = 2, .max_len = 6, .dropout = 0.2};
    cr_assert_eq(tg_model_init(&m, p, &cfg, &rng), 0);
    tg_tape *t = tg_tape_new();
    cr_assert_null(g_forward(t, &m, (tg_model_opts){0}, NULL));
    cr_assert(strstr(tg_tape_error(t), "rng"), "%s", tg_tape_error(t));
    tg_tape_reset(t);
    tg_tensor *a = g_forward(t, &m, (tg_model_opts){.rng = &rng}, NULL);
    tg_tensor *b = g_forward(t, &m, (tg_model_opts){.rng = &rng}, NULL);
    cr_assert(a && b, "%s", tg_tape_error(t));
    bool differ = false;
    for (size_t i = 0; i < a->size; i++) differ = differ || a->data[i] != b->data[i];
    cr_assert(differ, "two training passes drew the same dropout masks");
    tg_tape_set_training(t, false);
    a = g_forward(t, &m, (tg_model_opts){0}, NULL);
    b = g_forward(t, &m, (tg_model_opts){0}, NULL);
    cr_assert(a && b, "%s", tg_tape_error(t));
    for (size_t i = 0; i < a->size; i++) cr_assert_eq(a->data[i], b->data[i]);
    tg_tape_free(t);
    tg_model_free(&m);
    tg_params_free(p);
}

/* ---- fixtures ------------------------------------------------------------------------ */

Test(fixtures, mha_fused_self_vs_torch) { check_mha_fixture("mha_fused_self.safetensors", TG_MHA_FUSED, TG_MHA_FUSED); }
Test(fixtures, mha_fused_cross_vs_torch) { check_mha_fixture("mha_fused_cross.safetensors", TG_MHA_FUSED, TG_MHA_FUSED); }
Test(fixtures, mha_per_head_vs_torch) { check_mha_fixture("mha_per_head.safetensors", TG_MHA_PER_HEAD, TG_MHA_PER_HEAD); }
/* the same references through the other mode */
Test(fixtures, mha_fused_files_in_per_head_mode)
{
    check_mha_fixture("mha_fused_self.safetensors", TG_MHA_FUSED, TG_MHA_PER_HEAD);
    check_mha_fixture("mha_fused_cross.safetensors", TG_MHA_FUSED, TG_MHA_PER_HEAD);
}
Test(fixtures, mha_per_head_file_in_fused_mode) { check_mha_fixture("mha_per_head.safetensors", TG_MHA_PER_HEAD, TG_MHA_FUSED); }

/* The PyTorch twin's file in tapegrad's model, in `mode` (per-head: the
 * fused weights converted with tg_mha_copy_weights, attention grads compared
 * after converting back). */
static void check_model_fixture(tg_mha_mode mode)
{
    tg_safetensors *s = load_fixture("model_fused.safetensors");
    tg_model_config cfg = {.vocab = meta_int(s, "vocab"), .d_model = meta_int(s, "d_model"),
                           .n_layers = meta_int(s, "n_layers"), .n_heads = meta_int(s, "n_heads"),
                           .d_ff = meta_int(s, "d_ff"), .max_len = meta_int(s, "max_len"),
                           .mode = TG_MHA_FUSED};
    tg_params *pf = tg_params_new(), *pr = tg_params_new();
    tg_model mf, mr;
    cr_assert_eq(tg_model_init(&mf, pf, &cfg, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_st_load_params(pf, s, false, NULL), 0, "%s", tg_error());
    cfg.mode = mode;
    cr_assert_eq(tg_model_init(&mr, pr, &cfg, NULL), 0, "%s", tg_error());
    for (int i = 0; i < tg_params_count(pr); i++) {  /* everything but attention by name */
        tg_tensor *x = tg_params_at(pr, i), *y = tg_params_get(pf, x->name);
        if (y) memcpy(x->data, y->data, x->size * sizeof(tg_real));
    }
    for (int l = 0; l < cfg.n_layers; l++) cr_assert_eq(tg_mha_copy_weights(&mr.blocks[l].attn, &mf.blocks[l].attn), 0);
    const tg_tensor *ids_t = fx(s, "ids");
    int B = ids_t->shape[0], T = ids_t->shape[1];
    int32_t *ids = to_ints(ids_t), *lens = to_ints(fx(s, "lens")), *targets = to_ints(fx(s, "targets"));
    tg_tape *t = tg_tape_new();
    tg_tensor *attn[8];
    cr_assert_leq(cfg.n_layers, 8);
    tg_model_opts o = {.lens = ix(t, TG_I32, lens, B, 0)};
    tg_tensor *logits = tg_model_forward(t, &mr, ix(t, TG_I32, ids, B, T), &o, attn);
    tg_tensor *loss = tg_cross_entropy(t, logits, tg_tensor_from_dtype(t, TG_I32, targets, 2, (int[]){B, T}), TG_IGNORE);
    cr_assert_not_null(loss, "%s", tg_tape_error(t));
    assert_matches(logits->data, logits->size, fx(s, "logits"), "logits");
    assert_matches(loss->data, 1, fx(s, "loss"), "loss");
    for (int l = 0; l < cfg.n_layers; l++) {
        char key[32];
        snprintf(key, sizeof key, "attn.%d", l);
        assert_matches(attn[l]->data, attn[l]->size, fx(s, key), key);
    }
    cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
    if (mode == TG_MHA_PER_HEAD) {  /* grads into the fused layout, the rest by name */
        for (size_t i = 0; i < tg_params_numel(pr); i++) tg_params_data(pr)[i] = tg_params_grad(pr)[i];
        for (int l = 0; l < cfg.n_layers; l++) cr_assert_eq(tg_mha_copy_weights(&mf.blocks[l].attn, &mr.blocks[l].attn), 0);
        for (int i = 0; i < tg_params_count(pr); i++) {
            tg_tensor *x = tg_params_at(pr, i), *y = tg_params_get(pf, x->name);
            if (y) memcpy(y->data, x->data, x->size * sizeof(tg_real));
        }
        for (size_t i = 0; i < tg_params_numel(pf); i++) tg_params_grad(pf)[i] = tg_params_data(pf)[i];
        assert_param_grads(pf, s);
    } else {
        assert_param_grads(pr, s);
    }
    cr_assert_eq(tg_params_count(pf), 2 + 12 * cfg.n_layers + 4);  /* every torch parameter was compared */
    free(ids);
    free(lens);
    free(targets);
    tg_tape_free(t);
    tg_model_free(&mf);
    tg_model_free(&mr);
    tg_params_free(pf);
    tg_params_free(pr);
    tg_st_free(s);
}

/* ---- the language-model options vs PyTorch (bench/torch/make_lm_fixtures.py) ------------------ */

static void check_ffn_fixture(const char *file)
{
    tg_safetensors *s = load_fixture(file);
    tg_ffn_config cfg = {.d_model = meta_int(s, "d_model"), .d_ff = meta_int(s, "d_ff"),
                         .act = (tg_ffn_act)meta_int(s, "act"), .no_bias = meta_int(s, "no_bias") != 0};
    tg_params *p = tg_params_new();
    tg_ffn f;
    cr_assert_eq(tg_ffn_init(&f, p, "ff", &cfg, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_st_load_params(p, s, false, NULL), 0, "%s", tg_error());
    tg_tape *t = tg_tape_new();
    const tg_tensor *xf = fx(s, "x");
    tg_tensor *x = tg_tensor_from(t, xf->data, xf->ndim, xf->shape);
    x->requires_grad = true;
    tg_tensor *out = tg_ffn_forward(t, &f, x, NULL);
    cr_assert_not_null(out, "%s", tg_tape_error(t));
    assert_matches(out->data, out->size, fx(s, "out"), "out");
    cr_assert_eq(tg_backward_seed(t, out, fx(s, "seed")->data), 0, "%s", tg_tape_error(t));
    assert_matches(x->grad, x->size, fx(s, "grad.x"), "grad.x");
    assert_param_grads(p, s);
    cr_assert_eq(tg_params_count(p), cfg.no_bias ? 3 : 6);  /* every torch parameter was compared */
    tg_tape_free(t);
    tg_params_free(p);
    tg_st_free(s);
}

Test(fixtures, ffn_swiglu_vs_torch) { check_ffn_fixture("ffn_swiglu.safetensors"); }
Test(fixtures, ffn_geglu_vs_torch) { check_ffn_fixture("ffn_geglu.safetensors"); }

/* A whole model from the file's config and state_dict (a tied one names
 * tok_emb.weight twice): logits, loss and every parameter's gradient. */
static void check_lm_fixture(const char *file, int n_params)
{
    tg_safetensors *s = load_fixture(file);
    tg_model_config cfg = {.vocab = meta_int(s, "vocab"), .d_model = meta_int(s, "d_model"),
                           .n_layers = meta_int(s, "n_layers"), .n_heads = meta_int(s, "n_heads"),
                           .n_kv_heads = meta_int(s, "n_kv_heads"), .d_ff = meta_int(s, "d_ff"),
                           .max_len = meta_int(s, "max_len"), .pos = (tg_pos_kind)meta_int(s, "pos"),
                           .norm = (tg_norm_kind)meta_int(s, "norm"), .ff_act = (tg_ffn_act)meta_int(s, "ff_act"),
                           .no_bias = meta_int(s, "no_bias") != 0, .tie_weights = meta_int(s, "tie_weights") != 0};
    tg_params *p = tg_params_new();
    tg_model m;
    cr_assert_eq(tg_model_init(&m, p, &cfg, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_params_count(p), n_params);
    cr_assert_eq(tg_model_load(&m, p, s, false, NULL), 0, "%s", tg_error());
    const tg_tensor *ids_t = fx(s, "ids");
    int B = ids_t->shape[0], T = ids_t->shape[1];
    int32_t *ids = to_ints(ids_t), *lens = to_ints(fx(s, "lens")), *targets = to_ints(fx(s, "targets"));
    tg_tape *t = tg_tape_new();
    tg_model_opts o = {.lens = ix(t, TG_I32, lens, B, 0)};
    tg_tensor *logits = tg_model_forward(t, &m, ix(t, TG_I32, ids, B, T), &o, NULL);
    tg_tensor *loss = tg_cross_entropy(t, logits, tg_tensor_from_dtype(t, TG_I32, targets, 2, (int[]){B, T}), TG_IGNORE);
    cr_assert_not_null(loss, "%s", tg_tape_error(t));
    assert_matches(logits->data, logits->size, fx(s, "logits"), "logits");
    assert_matches(loss->data, 1, fx(s, "loss"), "loss");
    cr_assert_eq(tg_backward(t, loss), 0, "%s", tg_tape_error(t));
    assert_param_grads(p, s);
    free(ids);
    free(lens);
    free(targets);
    tg_tape_free(t);
    tg_model_free(&m);
    tg_params_free(p);
    tg_st_free(s);
}

/* tok_emb, then 7 per block (ln1, in_proj, out_proj, ln2, gate, up, down), ln_f, head */
Test(fixtures, llama_model_vs_torch_twin) { check_lm_fixture("model_llama.safetensors", 1 + 7 * 2 + 2); }
/* tok_emb, pos_emb, 12 per block, ln_f's two; no head of its own */
Test(fixtures, gpt2_tied_model_vs_torch_twin) { check_lm_fixture("model_gpt2_tied.safetensors", 2 + 12 * 2 + 2); }

Test(fixtures, model_vs_torch_twin) { check_model_fixture(TG_MHA_FUSED); }
Test(fixtures, model_per_head_vs_torch_twin) { check_model_fixture(TG_MHA_PER_HEAD); }

/* ---- checkpoints across attention modes ------------------------------------------------------ */

/* A copy of s without tensor `drop`. */
static tg_safetensors *st_without(const tg_safetensors *s, const char *drop)
{
    tg_safetensors *d = tg_st_new();
    for (int i = 0; i < tg_st_count(s); i++)
        if (strcmp(tg_st_at(s, i)->name, drop))
            cr_assert_eq(tg_st_add(d, NULL, tg_st_at(s, i)), 0, "%s", tg_error());
    return d;
}

/* A copy of s with tensor `name` replaced by zeros of another shape. */
static tg_safetensors *st_reshaped(const tg_safetensors *s, const char *name, int ndim, const int *shape)
{
    tg_safetensors *d = st_without(s, name);
    cr_assert_not_null(tg_st_add_zeros(d, name, ndim, shape), "%s", tg_error());
    return d;
}

static void assert_convert_fails(const tg_safetensors *s, tg_mha_mode to, int H, const char *needle)
{
    tg_error_clear();
    cr_assert_null(tg_mha_convert(s, to, H, 0), "converted, want \"%s\"", needle);
    cr_assert(strstr(tg_error(), needle), "message \"%s\" lacks \"%s\"", tg_error(), needle);
}

/* Fused -> per-head gives exactly tg_mha_copy_weights' per-head weights (with
 * d_head != d_model / n_heads, other tensors and metadata kept), and back gives
 * the original set bit for bit. */
static void check_convert(bool bias)
{
    tg_rng rng;
    tg_rng_seed(&rng, 7);
    tg_mha_config cfg = {.n_heads = 3, .d_model = 8, .d_head = 4, .bias = bias, .mode = TG_MHA_FUSED};
    tg_params *pf = tg_params_new(), *pr = tg_params_new(), *pq = tg_params_new();
    tg_mha mf, mr, mq;
    cr_assert_eq(tg_mha_init(&mf, pf, "blocks.0.attn", &cfg, &rng), 0, "%s", tg_error());
    tg_tensor *other = tg_params_add(pf, "head.weight", 2, (int[]){2, 3});
    for (size_t i = 0; i < 6; i++) other->data[i] = (tg_real)i;
    if (bias)  /* nonzero biases, so a misplaced row would show */
        for (size_t i = 0; i < mf.in_proj_bias->size; i++) mf.in_proj_bias->data[i] = (tg_real)(0.1 * (double)i);
    cfg.mode = TG_MHA_PER_HEAD;
    cr_assert_eq(tg_mha_init(&mr, pr, "blocks.0.attn", &cfg, NULL), 0, "%s", tg_error());
    cr_assert_not_null(tg_params_add(pr, "head.weight", 2, (int[]){2, 3}));
    cr_assert_eq(tg_mha_init(&mq, pq, "blocks.0.attn", &cfg, NULL), 0, "%s", tg_error());
    cr_assert_eq(tg_mha_copy_weights(&mq, &mf), 0);

    tg_safetensors *s = tg_st_new();
    cr_assert_eq(tg_st_add_params(s, pf), 0, "%s", tg_error());
    cr_assert_eq(tg_st_set_meta(s, "step", "12"), 0);
    tg_safetensors *ph = tg_mha_convert(s, TG_MHA_PER_HEAD, 3, 0);
    cr_assert_not_null(ph, "%s", tg_error());
    cr_assert_str_eq(tg_st_meta(ph, "step"), "12");
    cr_assert_eq(tg_st_load_params(pr, ph, true, NULL), 0, "%s", tg_error());  /* strict: nothing left over */
    for (int i = 0; i < tg_params_count(pq); i++) {
        const tg_tensor *want = tg_params_at(pq, i), *got = tg_params_get(pr, want->name);
        cr_assert(got && !memcmp(got->data, want->data, want->size * sizeof(tg_real)), "%s differs", want->name);
    }
    cr_assert(!memcmp(tg_params_get(pr, "head.weight")->data, other->data, 6 * sizeof(tg_real)));

    tg_safetensors *back = tg_mha_convert(ph, TG_MHA_FUSED, 3, 0);
    cr_assert_not_null(back, "%s", tg_error());
    cr_assert_eq(tg_st_count(back), tg_st_count(s));
    for (int i = 0; i < tg_st_count(s); i++) {
        const tg_tensor *want = tg_st_at(s, i), *got = tg_st_get(back, want->name);
        cr_assert(got && tg_shape_equal(got, want) && !memcmp(got->data, want->data, want->size * sizeof(tg_real)),
                  "%s does not come back", want->name);
    }

    /* a set already in the target mode comes back as a copy */
    tg_safetensors *same = tg_mha_convert(s, TG_MHA_FUSED, 3, 0);
    cr_assert(same && tg_st_count(same) == tg_st_count(s));

    assert_convert_fails(s, TG_MHA_PER_HEAD, 5, "'blocks.0.attn.in_proj_weight' [36,8] is not [(n_heads + 2 n_kv_heads) * d_head");
    assert_convert_fails(ph, TG_MHA_FUSED, 2, "'blocks.0.attn.heads.2.q_proj.weight' [4,8] is a head beyond n_heads");
    assert_convert_fails(ph, TG_MHA_FUSED, 0, "n_heads 0 must be in [1, 64]");
    tg_safetensors *gap = st_without(ph, "blocks.0.attn.heads.1.k_proj.weight");
    assert_convert_fails(gap, TG_MHA_FUSED, 3, "'blocks.0.attn.heads.1.k_proj.weight' is missing");
    tg_st_free(gap);
    gap = st_without(ph, "blocks.0.attn.heads.0.q_proj.weight");
    assert_convert_fails(gap, TG_MHA_FUSED, 3, "'blocks.0.attn.heads.0.q_proj.weight' is missing");
    tg_st_free(gap);
    if (bias) {
        gap = st_without(s, "blocks.0.attn.in_proj_weight");
        assert_convert_fails(gap, TG_MHA_PER_HEAD, 3, "'blocks.0.attn.in_proj_bias' [36] has no in_proj_weight");
        tg_st_free(gap);
        gap = st_without(ph, "blocks.0.attn.heads.2.v_proj.bias");
        assert_convert_fails(gap, TG_MHA_FUSED, 3, "'blocks.0.attn.heads.2.v_proj.bias' is missing");
        tg_st_free(gap);
        gap = st_without(ph, "blocks.0.attn.heads.0.q_proj.bias");  /* head 0 sets "no biases" */
        assert_convert_fails(gap, TG_MHA_FUSED, 3, "'blocks.0.attn.heads.0.k_proj.bias' [4] is not [d_head], or head 0 has no biases");
        tg_st_free(gap);
        gap = st_reshaped(s, "blocks.0.attn.in_proj_bias", 1, (int[]){35});
        assert_convert_fails(gap, TG_MHA_PER_HEAD, 3, "'blocks.0.attn.in_proj_bias' [35] does not match in_proj_weight's rows");
        tg_st_free(gap);
    }
    tg_safetensors *bad = st_reshaped(ph, "blocks.0.attn.heads.1.k_proj.weight", 2, (int[]){4, 7});
    assert_convert_fails(bad, TG_MHA_FUSED, 3, "'blocks.0.attn.heads.1.k_proj.weight' [4,7] differs from head 0's k_proj.weight");
    tg_st_free(bad);
    bad = st_reshaped(ph, "blocks.0.attn.heads.0.q_proj.weight", 1, (int[]){32});
    assert_convert_fails(bad, TG_MHA_FUSED, 3, "'blocks.0.attn.heads.0.q_proj.weight' [32] is not [d_head, d_model]");
    tg_st_free(bad);
    tg_st_free(same);
    tg_st_free(back);
    tg_st_free(ph);
    tg_st_free(s);
    tg_params_free(pf);
    tg_params_free(pr);
    tg_params_free(pq);
}

Test(model, mha_convert_between_modes_with_bias) { check_convert(true); }
Test(model, mha_convert_between_modes_without_bias) { check_convert(false); }

Test(model, model_forward_null_ids)
{
    tg_params *p = tg_params_new();
    tg_model m;
    tg_model_config cfg = {.vocab = 5, .d_model = 4, .n_layers = 1, .n_heads = 1, .max_len = 4};
    cr_assert_eq(tg_model_init(&m, p, &cfg, NULL), 0);
    tg_tape *t = tg_tape_new();
    cr_assert_null(tg_model_forward(t, &m, NULL, NULL, NULL));
    cr_assert_str_eq(tg_tape_error(t), "tg_model_forward: ids is NULL");
    cr_assert_null(tg_model_forward(NULL, &m, ix(t, TG_I32, (int32_t[]){1, 2}, 1, 2), NULL, NULL));
    cr_assert_str_eq(tg_error(), "tg_model_forward: the tape is NULL");
    cr_assert_null(tg_matmul(NULL, NULL, NULL, NULL, 0));
    cr_assert_str_eq(tg_error(), "tg_matmul: the tape is NULL");
    cr_assert_null(tg_add(NULL, NULL, NULL));
    cr_assert_str_eq(tg_error(), "tg_add: the tape is NULL");
    tg_tape_free(t);
    tg_model_free(&m);
    tg_params_free(p);
}
