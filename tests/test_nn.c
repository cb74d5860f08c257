/* nn layers: gradchecks of Linear (with / without bias), Embedding,
 * LayerNorm, RMSNorm, FFN (GELU, SiLU, SwiGLU, GeGLU, with and without
 * dropout and biases) and the pre-norm block (GPT-2's, LLaMA's) w.r.t. their
 * input and every parameter; PyTorch's default init distributions; layer
 * names in init and forward errors. */
#include <string.h>

#include <tapegrad/nn/nn.h>
#include "test_util.h"

/* ---- Linear ------------------------------------------------------------------ */

static tg_tensor *linear_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_linear_forward(t, ctx, in[0]);
}

static void check_linear(bool bias)
{
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_params *p = tg_params_new();
    tg_linear l;
    cr_assert_eq(tg_linear_init(&l, p, "proj", &(tg_linear_config){.in = 5, .out = 3, .bias = bias}, &rng), 0,
                 "%s", tg_error());
    cr_assert_eq(tg_params_count(p), bias ? 2 : 1);
    cr_assert_not_null(tg_params_get(p, "proj.weight"));
    cr_assert_eq(tg_params_get(p, "proj.bias") != NULL, bias);
    tg_tensor *x = tu_rand(&rng, -1, 1, 3, (int[]){2, 4, 5}), *in[TU_MAXIN];
    int n = tu_gather(in, x, NULL, p);
    tu_gradcheck(linear_fn, &l, in, n);
    tg_tensor_free(x);
    tg_params_free(p);
}

Test(nn, linear_gradcheck_bias) { check_linear(true); }
Test(nn, linear_gradcheck_no_bias) { check_linear(false); }

Test(nn, linear_values)
{
    tg_params *p = tg_params_new();
    tg_linear l;
    cr_assert_eq(tg_linear_init(&l, p, "fc", &(tg_linear_config){.in = 2, .out = 3, .bias = true}, NULL), 0);
    const tg_real w[6] = {1, 2, 3, 4, 5, 6}, b[3] = {0.5, -1, 2}, xv[2] = {1, -2};
    memcpy(l.weight->data, w, sizeof w);
    memcpy(l.bias->data, b, sizeof b);
    tg_tape *t = tg_tape_new();
    tg_tensor *y = tg_linear_forward(t, &l, tg_tensor_from(t, xv, 2, (int[]){1, 2}));
    cr_assert_not_null(y, "%s", tg_tape_error(t));
    tu_close(y->data[0], 1 - 4 + 0.5, TU_TOL);  /* x W^T + b, W [out, in] */
    tu_close(y->data[1], 3 - 8 - 1, TU_TOL);
    tu_close(y->data[2], 5 - 12 + 2, TU_TOL);
    tg_tape_free(t);
    tg_params_free(p);
}

Test(nn, linear_errors_name_the_layer)
{
    tg_params *p = tg_params_new();
    tg_linear l, dup;
    cr_assert_eq(tg_linear_init(&l, p, "enc.fc", &(tg_linear_config){.in = 0, .out = 3, .bias = true}, NULL), -1);
    tu_assert_has(tg_error(), "enc.fc");
    cr_assert_eq(tg_linear_init(&l, p, "enc.fc", &(tg_linear_config){.in = 4, .out = 3, .bias = true}, NULL), 0);
    cr_assert_eq(tg_linear_init(&dup, p, "enc.fc", &(tg_linear_config){.in = 4, .out = 3, .bias = true}, NULL),
                 -1);
    tu_assert_has(tg_error(), "enc.fc.weight");  /* the name is taken */
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 2, (int[]){2, 5});
    cr_assert_null(tg_linear_forward(t, &l, x));
    tu_assert_has(tg_tape_error(t), "tg_linear 'enc.fc'");
    tu_assert_has(tg_tape_error(t), "[2,5]");
    tg_tape_free(t);
    tg_params_free(p);
}

/* ---- Embedding ---------------------------------------------------------------- */

static const int64_t emb_ids[6] = {3, 0, 3, 1, 4, 3};  /* repeats accumulate */

static tg_tensor *embedding_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)in;
    return tg_embedding_forward(t, ctx, tg_tensor_from_dtype(t, TG_I64, emb_ids, 2, (int[]){2, 3}));
}

Test(nn, embedding_gradcheck_and_errors)
{
    tg_rng rng;
    tg_rng_seed(&rng, 2);
    tg_params *p = tg_params_new();
    tg_embedding_layer e;
    cr_assert_eq(tg_embedding_init(&e, p, "tok_emb", 5, 4, &rng), 0, "%s", tg_error());
    tg_tensor *in[TU_MAXIN];
    int n = tu_gather(in, NULL, NULL, p);
    tu_gradcheck(embedding_fn, &e, in, n);
    tg_tape *t = tg_tape_new();
    /* ids [2, 1, 3] (int32) -> [2, 1, 3, 4] */
    tg_tensor *y = tg_embedding_forward(t, &e, tg_tensor_from_dtype(t, TG_I32, (int32_t[]){3, 0, 3, 1, 4, 3}, 3,
                                                                    (int[]){2, 1, 3}));
    cr_assert(y && y->ndim == 4 && y->shape[1] == 1 && y->shape[2] == 3 && y->shape[3] == 4, "%s",
              tg_tape_error(t));
    cr_assert_eq(y->data[4 * 4 + 2], e.weight->data[4 * 4 + 2]);  /* id 4 at position 4 */
    const int32_t bad[2] = {1, 5};
    cr_assert_null(tg_embedding_forward(t, &e, tg_tensor_from_dtype(t, TG_I32, bad, 2, (int[]){1, 2})));
    tu_assert_has(tg_tape_error(t), "id 5 at position 1");
    tg_tape_clear_error(t);
    cr_assert_null(tg_embedding_forward(t, &e, NULL));
    tu_assert_has(tg_tape_error(t), "tok_emb");
    tg_tape_free(t);
    tg_params_free(p);
}

/* ---- LayerNorm ---------------------------------------------------------------- */

static tg_tensor *layernorm_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_layernorm_forward(t, ctx, in[0]);
}

Test(nn, layernorm_gradcheck_and_errors)
{
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_params *p = tg_params_new();
    tg_layernorm_layer ln;
    cr_assert_eq(tg_layernorm_init(&ln, p, "ln1", 6, 1e-5), 0, "%s", tg_error());
    tu_jitter(p, &rng, 0.3);
    tg_tensor *x = tu_rand(&rng, -2, 2, 3, (int[]){2, 3, 6}), *in[TU_MAXIN];
    int n = tu_gather(in, x, NULL, p);
    tu_gradcheck(layernorm_fn, &ln, in, n);
    tg_tape *t = tg_tape_new();
    cr_assert_null(tg_layernorm_forward(t, &ln, tg_tensor_zeros(t, 2, (int[]){2, 5})));
    tu_assert_has(tg_tape_error(t), "tg_layernorm 'ln1'");
    tg_tape_free(t);
    tg_tensor_free(x);
    tg_params_free(p);
}

/* ---- FFN ---------------------------------------------------------------------- */

typedef struct ffn_ctx {
    tg_ffn ffn;
    tg_rng rng;
    uint64_t seed;  /* reseeded on every call: the same dropout mask each time */
} ffn_ctx;

static tg_tensor *ffn_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    ffn_ctx *c = ctx;
    tg_rng_seed(&c->rng, c->seed);
    return tg_ffn_forward(t, &c->ffn, in[0], &c->rng);
}

/* names: the parameters expected, in order */
static void check_ffn_act(double dropout, tg_ffn_act act, bool no_bias, const char *const *names, int n_names)
{
    tg_rng rng;
    tg_rng_seed(&rng, 4);
    tg_params *p = tg_params_new();
    ffn_ctx c = {.seed = 99};
    tg_ffn_config fc = {.d_model = 4, .d_ff = 7, .dropout = dropout, .act = act, .no_bias = no_bias};
    cr_assert_eq(tg_ffn_init(&c.ffn, p, "ff", &fc, &rng), 0, "%s", tg_error());
    cr_assert_eq(tg_params_count(p), n_names);
    for (int i = 0; i < n_names; i++) cr_assert_str_eq(tg_params_at(p, i)->name, names[i]);
    cr_assert_eq(tg_params_at(p, 0)->shape[0], 7);
    tg_tensor *x = tu_rand(&rng, -1.5, 1.5, 3, (int[]){2, 3, 4}), *in[TU_MAXIN];
    int n = tu_gather(in, x, NULL, p);
    tu_gradcheck(ffn_fn, &c, in, n);
    tg_tensor_free(x);
    tg_params_free(p);
}

static const char *const FFN_NAMES[] = {"ff.fc1.weight", "ff.fc1.bias", "ff.fc2.weight", "ff.fc2.bias"};
static const char *const GLU_NAMES[] = {"ff.gate_proj.weight", "ff.up_proj.weight", "ff.down_proj.weight"};
static const char *const GLU_BIAS_NAMES[] = {"ff.gate_proj.weight", "ff.gate_proj.bias", "ff.up_proj.weight",
                                             "ff.up_proj.bias", "ff.down_proj.weight", "ff.down_proj.bias"};

static void check_ffn(double dropout) { check_ffn_act(dropout, TG_FFN_GELU, false, FFN_NAMES, 4); }

Test(nn, ffn_gradcheck) { check_ffn(0.0); }
Test(nn, ffn_gradcheck_with_dropout) { check_ffn(0.3); }
Test(nn, ffn_gradcheck_silu_no_bias)
{
    check_ffn_act(0.0, TG_FFN_SILU, true, (const char *const[]){"ff.fc1.weight", "ff.fc2.weight"}, 2);
}
Test(nn, ffn_gradcheck_swiglu) { check_ffn_act(0.0, TG_FFN_SWIGLU, true, GLU_NAMES, 3); }
Test(nn, ffn_gradcheck_swiglu_dropout_bias) { check_ffn_act(0.3, TG_FFN_SWIGLU, false, GLU_BIAS_NAMES, 6); }
Test(nn, ffn_gradcheck_geglu) { check_ffn_act(0.0, TG_FFN_GEGLU, false, GLU_BIAS_NAMES, 6); }

Test(nn, ffn_rejects_a_bad_act)
{
    tg_params *p = tg_params_new();
    tg_ffn f;
    cr_assert_eq(tg_ffn_init(&f, p, "ff", &(tg_ffn_config){.d_model = 4, .d_ff = 8, .act = (tg_ffn_act)7}, NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_ffn 'ff': act 7 is not a tg_ffn_act");
    cr_assert_eq(tg_params_count(p), 0);
    tg_params_free(p);
}

/* ---- RMSNorm ------------------------------------------------------------------- */

static tg_tensor *norm_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    return tg_norm_forward(t, ctx, in[0]);
}

static void check_norm(tg_norm_kind kind, int n_params)
{
    tg_rng rng;
    tg_rng_seed(&rng, 8);
    tg_params *p = tg_params_new();
    tg_norm_layer nl;
    cr_assert_eq(tg_norm_init(&nl, p, "ln", kind, 6, 1e-5), 0, "%s", tg_error());
    cr_assert_eq(tg_params_count(p), n_params);
    cr_assert_str_eq(tg_params_at(p, 0)->name, "ln.weight");
    cr_assert(tg_params_at(p, 0)->data[5] == 1, "weight starts at 1");
    tu_jitter(p, &rng, 0.3);
    tg_tensor *x = tu_rand(&rng, -1, 1, 3, (int[]){2, 3, 6}), *in[TU_MAXIN];
    int n = tu_gather(in, x, NULL, p);
    tu_gradcheck(norm_fn, &nl, in, n);
    tg_tensor_free(x);
    tg_params_free(p);
}

Test(nn, rmsnorm_gradcheck) { check_norm(TG_NORM_RMS, 1); }
Test(nn, norm_layer_gradcheck_layernorm) { check_norm(TG_NORM_LAYER, 2); }

Test(nn, rmsnorm_errors_name_the_layer)
{
    tg_params *p = tg_params_new();
    tg_rmsnorm_layer r;
    tg_norm_layer nl;
    cr_assert_eq(tg_rmsnorm_init(&r, p, "ln_f", 4, 0), -1);
    cr_assert_str_eq(tg_error(), "tg_rmsnorm 'ln_f': dim 4 and eps 0 must be > 0");
    cr_assert_eq(tg_norm_init(&nl, p, "ln_f", (tg_norm_kind)5, 4, 1e-5), -1);
    cr_assert_str_eq(tg_error(), "tg_norm 'ln_f': kind 5 is not a tg_norm_kind");
    cr_assert_eq(tg_params_count(p), 0);
    cr_assert_eq(tg_rmsnorm_init(&r, p, "ln_f", 4, 1e-6), 0, "%s", tg_error());
    tg_tape *t = tg_tape_new();
    cr_assert_null(tg_rmsnorm_forward(t, &r, tg_tensor_zeros(t, 2, (int[]){2, 5})));
    cr_assert(strstr(tg_tape_error(t), "tg_rmsnorm 'ln_f': input [2,5] must be [..., 4]"), "%s", tg_tape_error(t));
    tg_tape_free(t);
    tg_params_free(p);
}

Test(nn, ffn_dropout_off_when_not_training)
{
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    tg_params *p = tg_params_new();
    tg_ffn f, g;
    cr_assert_eq(tg_ffn_init(&f, p, "a", &(tg_ffn_config){.d_model = 3, .d_ff = 5, .dropout = 0.5}, &rng), 0);
    cr_assert_eq(tg_ffn_init(&g, p, "b", &(tg_ffn_config){.d_model = 3, .d_ff = 5, .dropout = 1.0}, &rng), -1);
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_from(t, (tg_real[]){0.1, -0.2, 0.3}, 2, (int[]){1, 3});
    tg_tape_set_training(t, false);
    tg_tensor *y1 = tg_ffn_forward(t, &f, x, NULL);
    tg_tensor *y2 = tg_ffn_forward(t, &f, x, NULL);
    cr_assert_not_null(y1, "%s", tg_tape_error(t));
    for (int i = 0; i < 3; i++) cr_assert_eq(y1->data[i], y2->data[i]);
    tg_tape_free(t);
    tg_params_free(p);
}

/* ---- block -------------------------------------------------------------------- */

typedef struct block_ctx {
    tg_block blk;
    tg_mask mask;
} block_ctx;

static tg_tensor *block_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    block_ctx *c = ctx;
    return tg_block_forward(t, &c->blk, in[0], &(tg_mha_opts){.mask = &c->mask}, NULL);
}

static void check_block_config(const tg_block_config *bc, const char *const *names, int n_names)
{
    tg_rng rng;
    tg_rng_seed(&rng, 6);
    tg_params *p = tg_params_new();
    static const int32_t lens[2] = {4, 3};
    block_ctx c = {.mask = {.causal = true, .key_lens = tu_lens(lens, 2)}};
    cr_assert_eq(tg_block_init(&c.blk, p, "blocks.0", bc, &rng), 0, "%s", tg_error());
    cr_assert_eq(tg_params_count(p), n_names);
    for (int i = 0; i < n_names; i++) cr_assert_str_eq(tg_params_at(p, i)->name, names[i]);
    tu_jitter(p, &rng, 0.2);
    tg_tensor *x = tu_rand(&rng, -1, 1, 3, (int[]){2, 4, 4}), *in[TU_MAXIN];
    int n = tu_gather(in, x, NULL, p);
    tu_gradcheck(block_fn, &c, in, n);
    tg_tensor_free(x);
    tg_params_free(p);
}

static void check_block(tg_mha_mode mode)
{
    tg_block_config bc = {.attn = {.n_heads = 2, .d_model = 4, .d_head = 3, .bias = true, .mode = mode}, .d_ff = 6};
    static const char *const fused[] = {"blocks.0.ln1.weight", "blocks.0.ln1.bias", "blocks.0.attn.in_proj_weight",
        "blocks.0.attn.in_proj_bias", "blocks.0.attn.out_proj.weight", "blocks.0.attn.out_proj.bias",
        "blocks.0.ln2.weight", "blocks.0.ln2.bias", "blocks.0.ff.fc1.weight", "blocks.0.ff.fc1.bias",
        "blocks.0.ff.fc2.weight", "blocks.0.ff.fc2.bias"};
    if (mode == TG_MHA_FUSED) {
        check_block_config(&bc, fused, 12);
        return;
    }
    static const char *const per_head[] = {"blocks.0.ln1.weight", "blocks.0.ln1.bias",
        "blocks.0.attn.heads.0.q_proj.weight", "blocks.0.attn.heads.0.q_proj.bias",
        "blocks.0.attn.heads.0.k_proj.weight", "blocks.0.attn.heads.0.k_proj.bias",
        "blocks.0.attn.heads.0.v_proj.weight", "blocks.0.attn.heads.0.v_proj.bias",
        "blocks.0.attn.heads.1.q_proj.weight", "blocks.0.attn.heads.1.q_proj.bias",
        "blocks.0.attn.heads.1.k_proj.weight", "blocks.0.attn.heads.1.k_proj.bias",
        "blocks.0.attn.heads.1.v_proj.weight", "blocks.0.attn.heads.1.v_proj.bias",
        "blocks.0.attn.out_proj.weight", "blocks.0.attn.out_proj.bias", "blocks.0.ln2.weight",
        "blocks.0.ln2.bias", "blocks.0.ff.fc1.weight", "blocks.0.ff.fc1.bias", "blocks.0.ff.fc2.weight",
        "blocks.0.ff.fc2.bias"};
    check_block_config(&bc, per_head, 22);
}

Test(nn, block_gradcheck_fused) { check_block(TG_MHA_FUSED); }
Test(nn, block_gradcheck_per_head) { check_block(TG_MHA_PER_HEAD); }

/* LLaMA's block: RMSNorm, grouped-query attention with RoPE, SwiGLU, no biases */
Test(nn, block_gradcheck_llama)
{
    tg_block_config bc = {.attn = {.n_heads = 4, .n_kv_heads = 2, .d_model = 4, .d_head = 2, .rope = true},
                          .d_ff = 6, .norm = TG_NORM_RMS, .ff_act = TG_FFN_SWIGLU, .no_bias = true};
    static const char *const names[] = {"blocks.0.ln1.weight", "blocks.0.attn.in_proj_weight",
        "blocks.0.attn.out_proj.weight", "blocks.0.ln2.weight", "blocks.0.ff.gate_proj.weight",
        "blocks.0.ff.up_proj.weight", "blocks.0.ff.down_proj.weight"};
    check_block_config(&bc, names, 7);
}

/* ---- init statistics ------------------------------------------------------------ */

/* Every value in [-bound, bound], the extremes near it, mean ~ 0 and variance
 * ~ bound^2 / 3 (uniform): n is large enough for 5 sigma margins. */
static void assert_uniform(const tg_tensor *x, double bound)
{
    double lo = 1e30, hi = -1e30, s = 0, s2 = 0, n = (double)x->size;
    for (size_t i = 0; i < x->size; i++) {
        double v = x->data[i];
        cr_assert(v >= -bound && v <= bound, "%s[%zu] = %g outside +-%g", x->name, i, v, bound);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        s += v;
        s2 += v * v;
    }
    double mean = s / n, var = s2 / n - mean * mean, want = bound * bound / 3;
    cr_assert(lo < -0.9 * bound && hi > 0.9 * bound, "%s spans [%g, %g], bound %g", x->name, lo, hi, bound);
    cr_assert(fabs(mean) < 5 * sqrt(want / n), "%s mean %g", x->name, mean);
    cr_assert(fabs(var - want) < 0.15 * want, "%s variance %g, want %g", x->name, var, want);
}

static void assert_const(const tg_tensor *x, double v)
{
    for (size_t i = 0; i < x->size; i++) cr_assert_eq(x->data[i], (tg_real)v, "%s[%zu]", x->name, i);
}

Test(nn, pytorch_default_inits)
{
    tg_rng rng;
    tg_rng_seed(&rng, 7);
    tg_params *p = tg_params_new();
    tg_linear l;
    tg_embedding_layer e;
    tg_layernorm_layer ln;
    tg_mha m;
    cr_assert_eq(tg_linear_init(&l, p, "fc", &(tg_linear_config){.in = 64, .out = 48, .bias = true}, &rng), 0);
    assert_uniform(l.weight, 1 / sqrt(64.0));  /* kaiming_uniform_(a=sqrt(5)) */
    assert_uniform(l.bias, 1 / sqrt(64.0));
    cr_assert_eq(tg_embedding_init(&e, p, "emb", 100, 40, &rng), 0);
    double s = 0, s2 = 0, n = (double)e.weight->size;
    for (size_t i = 0; i < e.weight->size; i++) {
        s += e.weight->data[i];
        s2 += (double)e.weight->data[i] * e.weight->data[i];
    }
    cr_assert(fabs(s / n) < 5 / sqrt(n), "embedding mean %g", s / n);
    cr_assert(fabs(s2 / n - 1) < 0.1, "embedding variance %g", s2 / n);
    cr_assert_eq(tg_layernorm_init(&ln, p, "ln", 9, 1e-5), 0);
    assert_const(ln.weight, 1);
    assert_const(ln.bias, 0);
    tg_mha_config mc = {.n_heads = 4, .d_model = 32, .bias = true, .mode = TG_MHA_FUSED};
    cr_assert_eq(tg_mha_init(&m, p, "attn", &mc, &rng), 0);
    assert_uniform(m.in_proj_weight, sqrt(6.0 / (32 + 96)));  /* xavier_uniform_ */
    assert_const(m.in_proj_bias, 0);
    assert_uniform(m.out_proj.weight, 1 / sqrt(32.0));
    assert_const(m.out_proj.bias, 0);
    tg_params_free(p);
}

Test(nn, no_rng_leaves_zeros)
{
    tg_params *p = tg_params_new();
    tg_linear l;
    cr_assert_eq(tg_linear_init(&l, p, "fc", &(tg_linear_config){.in = 3, .out = 2, .bias = true}, NULL), 0);
    assert_const(l.weight, 0);
    assert_const(l.bias, 0);
    tg_params_free(p);
}

Test(nn, layer_init_refusals)
{
    tg_params *p = tg_params_new();
    tg_embedding_layer e;
    cr_assert_eq(tg_embedding_init(&e, p, "emb", 0, 4, NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_embedding 'emb': num_embeddings 0 and dim 4 must be > 0");
    tg_ffn f;
    cr_assert_eq(tg_ffn_init(&f, p, "ff", &(tg_ffn_config){.d_model = 4, .d_ff = 8, .dropout = 1.0}, NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_ffn 'ff': dropout 1 must be in [0, 1)");
    tg_layernorm_layer ln;
    cr_assert_eq(tg_layernorm_init(&ln, p, "ln", 4, 0), -1);
    cr_assert_str_eq(tg_error(), "tg_layernorm 'ln': dim 4 and eps 0 must be > 0");
    tg_linear l;
    cr_assert_eq(tg_linear_init(&l, p, "fc", &(tg_linear_config){.in = 0, .out = 3, .bias = true}, NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_linear 'fc': in_features 0 and out_features 3 must be > 0");
    char longp[TG_NN_NAME_MAX + 8];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    cr_assert_eq(tg_linear_init(&l, p, longp, &(tg_linear_config){.in = 2, .out = 3, .bias = true}, NULL), -1);
    tu_assert_has(tg_error(), "weight' is longer than 127 bytes");
    cr_assert_eq(tg_params_count(p), 0);
    tg_params_free(p);
}
