/* A layer's init is all or nothing: with the n-th allocation of any layer's
 * init made to fail, for every n, the init returns -1 with a message, the
 * store holds what it held before (the same prefix can be tried again), and
 * the half-made layer's forward refuses it by name instead of running without
 * the parameters that failed. */
#include <stdio.h>
#include <string.h>

#include "test_util.h"

enum { D = 8, H = 2, V = 7, TT = 3 };

typedef union layer {
    tg_linear linear;
    tg_layernorm_layer ln;
    tg_rmsnorm_layer rms;
    tg_norm_layer norm;
    tg_embedding_layer emb;
    tg_ffn ffn;
    tg_mha mha;
    tg_block block;
    tg_model model;
} layer;

static const int32_t IDS[2 * TT] = {1, 2, 3, 4, 5, 6};

static int linear_init(layer *l, tg_params *p, tg_rng *r)
{
    return tg_linear_init(&l->linear, p, "fc", &(tg_linear_config){.in = D, .out = 4, .bias = true}, r);
}
static tg_tensor *linear_fwd(tg_tape *t, layer *l, tg_tensor *x) { return tg_linear_forward(t, &l->linear, x); }
static int ln_init(layer *l, tg_params *p, tg_rng *r)
{
    (void)r;
    return tg_layernorm_init(&l->ln, p, "ln", D, 1e-5);
}
static tg_tensor *ln_fwd(tg_tape *t, layer *l, tg_tensor *x) { return tg_layernorm_forward(t, &l->ln, x); }
static int rms_init(layer *l, tg_params *p, tg_rng *r)
{
    (void)r;
    return tg_rmsnorm_init(&l->rms, p, "ln", D, 1e-5);
}
static tg_tensor *rms_fwd(tg_tape *t, layer *l, tg_tensor *x) { return tg_rmsnorm_forward(t, &l->rms, x); }
static int norm_init(layer *l, tg_params *p, tg_rng *r)
{
    (void)r;
    return tg_norm_init(&l->norm, p, "ln", TG_NORM_RMS, D, 1e-5);
}
static tg_tensor *norm_fwd(tg_tape *t, layer *l, tg_tensor *x) { return tg_norm_forward(t, &l->norm, x); }
static int emb_init(layer *l, tg_params *p, tg_rng *r) { return tg_embedding_init(&l->emb, p, "emb", V, D, r); }
static tg_tensor *emb_fwd(tg_tape *t, layer *l, tg_tensor *x)
{
    (void)x;
    return tg_embedding_forward(t, &l->emb, tg_tensor_from_dtype(t, TG_I32, IDS, 2, (int[]){2, TT}));
}
static int ffn_init(layer *l, tg_params *p, tg_rng *r)
{
    return tg_ffn_init(&l->ffn, p, "ff", &(tg_ffn_config){.d_model = D, .d_ff = 16}, r);
}
static int ffn_swiglu_init(layer *l, tg_params *p, tg_rng *r)
{
    return tg_ffn_init(&l->ffn, p, "ff", &(tg_ffn_config){.d_model = D, .d_ff = 16, .act = TG_FFN_SWIGLU}, r);
}
static tg_tensor *ffn_fwd(tg_tape *t, layer *l, tg_tensor *x) { return tg_ffn_forward(t, &l->ffn, x, NULL); }
static tg_mha_config mha_cfg(tg_mha_mode mode)
{
    return (tg_mha_config){.n_heads = H, .d_model = D, .bias = true, .mode = mode};
}
static int mha_init(layer *l, tg_params *p, tg_rng *r)
{
    tg_mha_config c = mha_cfg(TG_MHA_FUSED);
    return tg_mha_init(&l->mha, p, "attn", &c, r);
}
static int mha_heads_init(layer *l, tg_params *p, tg_rng *r)
{
    tg_mha_config c = mha_cfg(TG_MHA_PER_HEAD);
    return tg_mha_init(&l->mha, p, "attn", &c, r);
}
/* grouped key/value heads (one for both heads) with RoPE, and with ALiBi */
static int mha_gqa_rope_init(layer *l, tg_params *p, tg_rng *r)
{
    tg_mha_config c = mha_cfg(TG_MHA_FUSED);
    c.n_kv_heads = 1, c.rope = true;
    return tg_mha_init(&l->mha, p, "attn", &c, r);
}
static int mha_gqa_alibi_heads_init(layer *l, tg_params *p, tg_rng *r)
{
    tg_mha_config c = mha_cfg(TG_MHA_PER_HEAD);
    c.n_kv_heads = 1, c.alibi = true;
    return tg_mha_init(&l->mha, p, "attn", &c, r);
}
/* nn.MultiheadAttention's options: own key/value widths and add_bias_kv */
static int mha_kvdim_init(layer *l, tg_params *p, tg_rng *r, tg_mha_mode mode)
{
    tg_mha_config c = mha_cfg(mode);
    c.kdim = D, c.vdim = D / 2, c.add_bias_kv = true, c.add_zero_attn = true;
    return tg_mha_init(&l->mha, p, "attn", &c, r);
}
static int mha_kvdim_fused_init(layer *l, tg_params *p, tg_rng *r) { return mha_kvdim_init(l, p, r, TG_MHA_FUSED); }
static int mha_kvdim_heads_init(layer *l, tg_params *p, tg_rng *r) { return mha_kvdim_init(l, p, r, TG_MHA_PER_HEAD); }
static tg_tensor *mha_fwd(tg_tape *t, layer *l, tg_tensor *x) { return tg_mha_forward(t, &l->mha, x, x, NULL, NULL); }
static tg_tensor *XV;  /* [2, TT, D/2]: the values' input of the kdim/vdim cases */
static tg_tensor *mha_kvdim_fwd(tg_tape *t, layer *l, tg_tensor *x)
{
    return tg_mha_forward(t, &l->mha, x, x, &(tg_mha_opts){.xv = XV}, NULL);
}
static int block_init(layer *l, tg_params *p, tg_rng *r)
{
    tg_block_config c = {.attn = mha_cfg(TG_MHA_FUSED), .d_ff = 16};
    return tg_block_init(&l->block, p, "blocks.0", &c, r);
}
/* LLaMA's: RMSNorm, grouped key/value heads with RoPE, SwiGLU, no biases */
static int block_llama_init(layer *l, tg_params *p, tg_rng *r)
{
    tg_block_config c = {.attn = {.n_heads = H, .n_kv_heads = 1, .d_model = D, .rope = true}, .d_ff = 16,
                         .norm = TG_NORM_RMS, .ff_act = TG_FFN_SWIGLU, .no_bias = true};
    return tg_block_init(&l->block, p, "blocks.0", &c, r);
}
static tg_tensor *block_fwd(tg_tape *t, layer *l, tg_tensor *x) { return tg_block_forward(t, &l->block, x, NULL, NULL); }
static int model_init(layer *l, tg_params *p, tg_rng *r)
{
    tg_model_config c = {.vocab = V, .d_model = D, .n_layers = 2, .n_heads = H, .max_len = TT};
    return tg_model_init(&l->model, p, &c, r);
}
/* RoPE and grouped key/value heads in every layer, no position table */
static int model_rope_init(layer *l, tg_params *p, tg_rng *r)
{
    tg_model_config c = {.vocab = V, .d_model = D, .n_layers = 2, .n_heads = H, .n_kv_heads = 1, .max_len = TT,
                         .pos = TG_POS_ROPE, .mode = TG_MHA_PER_HEAD};
    return tg_model_init(&l->model, p, &c, r);
}
static int model_alibi_init(layer *l, tg_params *p, tg_rng *r)
{
    tg_model_config c = {.vocab = V, .d_model = D, .n_layers = 2, .n_heads = H, .max_len = TT,
                         .pos = TG_POS_NONE, .alibi = true};
    return tg_model_init(&l->model, p, &c, r);
}
static int model_llama_init(layer *l, tg_params *p, tg_rng *r)
{
    tg_model_config c = {.vocab = V, .d_model = D, .n_layers = 2, .n_heads = H, .n_kv_heads = 1, .max_len = TT,
                         .pos = TG_POS_ROPE, .norm = TG_NORM_RMS, .ff_act = TG_FFN_SWIGLU, .no_bias = true};
    return tg_model_init(&l->model, p, &c, r);
}
static int model_tied_init(layer *l, tg_params *p, tg_rng *r)
{
    tg_model_config c = {.vocab = V, .d_model = D, .n_layers = 2, .n_heads = H, .max_len = TT, .tie_weights = true};
    return tg_model_init(&l->model, p, &c, r);
}
static tg_tensor *model_fwd(tg_tape *t, layer *l, tg_tensor *x)
{
    (void)x;
    return tg_model_forward(t, &l->model, tg_tensor_from_dtype(t, TG_I32, IDS, 2, (int[]){2, TT}), NULL, NULL);
}
static void model_free(layer *l) { tg_model_free(&l->model); }

typedef struct layer_case {
    const char *fn;  /* the forward's name, in its refusal */
    int (*init)(layer *, tg_params *, tg_rng *);
    tg_tensor *(*forward)(tg_tape *, layer *, tg_tensor *);
    void (*release)(layer *);
} layer_case;

static const layer_case CASES[] = {
    {"tg_linear_forward", linear_init, linear_fwd, NULL},
    {"tg_layernorm_forward", ln_init, ln_fwd, NULL},
    {"tg_rmsnorm_forward", rms_init, rms_fwd, NULL},
    {"tg_norm_forward", norm_init, norm_fwd, NULL},
    {"tg_embedding_forward", emb_init, emb_fwd, NULL},
    {"tg_ffn_forward", ffn_swiglu_init, ffn_fwd, NULL},
    {"tg_ffn_forward", ffn_init, ffn_fwd, NULL},
    {"tg_mha_forward", mha_init, mha_fwd, NULL},
    {"tg_mha_forward", mha_heads_init, mha_fwd, NULL},
    {"tg_mha_forward", mha_gqa_rope_init, mha_fwd, NULL},
    {"tg_mha_forward", mha_gqa_alibi_heads_init, mha_fwd, NULL},
    {"tg_mha_forward", mha_kvdim_fused_init, mha_kvdim_fwd, NULL},
    {"tg_mha_forward", mha_kvdim_heads_init, mha_kvdim_fwd, NULL},
    {"tg_block_forward", block_init, block_fwd, NULL},
    {"tg_block_forward", block_llama_init, block_fwd, NULL},
    {"tg_model_forward", model_llama_init, model_fwd, model_free},
    {"tg_model_forward", model_tied_init, model_fwd, model_free},
    {"tg_model_forward", model_init, model_fwd, model_free},
    {"tg_model_forward", model_rope_init, model_fwd, model_free},
    {"tg_model_forward", model_alibi_init, model_fwd, model_free},
};

/* A store that already holds a parameter (so a failed init must take back
 * only its own), its value set. */
static tg_params *store_new(void)
{
    tg_params *p = tg_params_new();
    cr_assert_not_null(p);
    tg_tensor *o = tg_params_add(p, "other", 1, (int[]){3});
    cr_assert_not_null(o);
    tg_tensor_fill(o, 5);
    return p;
}

static void walk(const layer_case *c)
{
    tg_rng rng;
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(3, (int[]){2, TT, D});
    tg_tensor_fill(x, (tg_real)0.25);
    unsigned long long walked = 0;
    for (unsigned long long n = 1;; n++) {
        tg_params *p = store_new();
        layer l;
        memset(&l, 0xab, sizeof l);  /* whatever the caller's memory held */
        tg_rng_seed(&rng, 3);
        tg_error_clear();
        tg_alloc_fail_at(n);
        int rc = c->init(&l, p, &rng);
        tg_alloc_fail_at(0);
        if (rc == 0) {  /* n is past the init's allocations: it works, and runs */
            cr_assert_gt(n, 1, "%s: the init allocates nothing?", c->fn);
            cr_assert_not_null(c->forward(t, &l, x), "%s: %s", c->fn, tg_tape_error(t));
            if (c->release) c->release(&l);
            tg_params_free(p);
            break;
        }
        walked++;
        cr_assert_eq(rc, -1);
        cr_assert(strstr(tg_error(), "out of memory"), "%s, allocation %llu: %s", c->fn, n, tg_error());
        cr_assert_eq(tg_params_count(p), 1, "%s, allocation %llu: the store keeps %d parameters", c->fn, n,
                     tg_params_count(p));
        cr_assert_eq(tg_params_at(p, 0)->data[2], 5);
        tg_tape_reset(t);
        cr_assert_null(c->forward(t, &l, x), "%s ran a layer whose init failed at allocation %llu", c->fn, n);
        const char *e = tg_tape_error(t);
        cr_assert(e && strstr(e, c->fn) && strstr(e, "not initialised"), "%s: %s", c->fn, e ? e : "(none)");
        tg_tape_reset(t);
        /* the same prefix again, on the same store: nothing of the failure is in the way */
        tg_rng_seed(&rng, 3);
        cr_assert_eq(c->init(&l, p, &rng), 0, "%s after allocation %llu failed: %s", c->fn, n, tg_error());
        cr_assert_not_null(c->forward(t, &l, x), "%s: %s", c->fn, tg_tape_error(t));
        tg_tape_reset(t);
        if (c->release) c->release(&l);
        tg_params_free(p);
    }
    cr_assert_gt(walked, 0);
    tg_tensor_free(x);
    tg_tape_free(t);
}

Test(init_fail, every_allocation_of_every_layer_init)
{
    XV = tg_tensor_alloc(3, (int[]){2, TT, D / 2});
    tg_tensor_fill(XV, (tg_real)0.5);
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) walk(&CASES[i]);
    tg_tensor_free(XV);
}

/* A bad configuration is refused the same way: nothing added, nothing usable. */
Test(init_fail, a_refused_configuration_leaves_nothing)
{
    tg_params *p = store_new();
    tg_linear l;
    cr_assert_eq(tg_linear_init(&l, p, "fc", &(tg_linear_config){.in = 0, .out = 2}, NULL), -1);
    tg_layernorm_layer ln;
    cr_assert_eq(tg_layernorm_init(&ln, p, "ln", 4, 0), -1);
    tg_ffn f;
    cr_assert_eq(tg_ffn_init(&f, p, "ff", &(tg_ffn_config){.d_model = 4, .d_ff = 8, .dropout = 1}, NULL), -1);
    /* a block whose ffn is refused after its attention was made */
    tg_block b;
    tg_block_config bc = {.attn = mha_cfg(TG_MHA_FUSED), .d_ff = 16, .ff_dropout = 2};
    cr_assert_eq(tg_block_init(&b, p, "blk", &bc, NULL), -1);
    /* RoPE with an odd head width, refused after the configuration was read */
    tg_mha m;
    tg_mha_config mc = {.n_heads = 2, .d_model = 6, .rope = true};
    cr_assert_eq(tg_mha_init(&m, p, "attn", &mc, NULL), -1);
    cr_assert(strstr(tg_error(), "RoPE"), "%s", tg_error());
    cr_assert_eq(tg_params_count(p), 1);
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc(3, (int[]){1, 2, D});
    cr_assert_null(tg_block_forward(t, &b, x, NULL, NULL));
    cr_assert(strstr(tg_tape_error(t), "tg_block_forward: the layer is not initialised"), "%s", tg_tape_error(t));
    tg_tape_reset(t);
    tg_tensor *x6 = tg_tensor_alloc(3, (int[]){1, 2, 6});
    cr_assert_null(tg_mha_forward(t, &m, x6, x6, NULL, NULL));
    cr_assert(strstr(tg_tape_error(t), "tg_mha_forward: the layer is not initialised"), "%s", tg_tape_error(t));
    cr_assert_eq(m.cfg.n_heads, 0, "the refused layer keeps its configuration");
    tg_tensor_free(x6);
    tg_tensor_free(x);
    tg_tape_free(t);
    tg_params_free(p);
}
