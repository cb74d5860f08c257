/* tapegrad: pre-norm transformer block (see nn/block.h). */
#include "block.h"

#include <stdio.h>
#include <string.h>

int tg_block_init(tg_block *b, tg_params *p, const char *prefix, const tg_block_config *cfg,
                  tg_rng *rng)
{
    if (tg_nn_check_init("tg_block_init", b, p, cfg)) return -1;
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", prefix ? prefix : "");
    int n0 = tg_params_count(p);
    double eps = cfg->ln_eps > 0 ? cfg->ln_eps : 1e-5;
    int D = cfg->attn.d_model;
    tg_ffn_config ff = {.d_model = D, .d_ff = cfg->d_ff, .dropout = cfg->ff_dropout, .act = cfg->ff_act,
                        .no_bias = cfg->no_bias};
    char sub[TG_NN_NAME_MAX];
    if (tg_nn_name(sub, prefix, "ln1") || tg_norm_init(&b->ln1, p, sub, cfg->norm, D, eps) ||
        tg_nn_name(sub, prefix, "attn") || tg_mha_init(&b->attn, p, sub, &cfg->attn, rng) ||
        tg_nn_name(sub, prefix, "ln2") || tg_norm_init(&b->ln2, p, sub, cfg->norm, D, eps) ||
        tg_nn_name(sub, prefix, "ff") || tg_ffn_init(&b->ff, p, sub, &ff, rng))
        return tg_nn_init_undo(b, sizeof *b, b->name, p, n0);
    return 0;
}

/* [B, T, D] -> [B, T, D] */
tg_tensor *tg_block_forward(tg_tape *t, const tg_block *b, tg_tensor *x, const tg_mha_opts *o,
                            tg_tensor **weights)
{
    if (weights) *weights = NULL;
    if (tg_nn_check_forward("tg_block_forward", t, b, b && b->ff.fc2.weight)) return NULL;
    tg_tensor *h = tg_norm_forward(t, &b->ln1, x);
    h = tg_mha_forward(t, &b->attn, h, h, o, weights);
    x = tg_add_inplace(t, h, x);  /* x + h over the branch's output, which nothing reads again */
    h = tg_norm_forward(t, &b->ln2, x);
    h = tg_ffn_forward(t, &b->ff, h, o ? o->rng : NULL);
    return tg_add_inplace(t, h, x);
}

tg_tensor *tg_block_cache_new(const tg_block *b, int B, int cap)
{
    if (!b || !b->ff.fc2.weight) {
        tg_error_set("tg_block_cache_new: the block is %s", b ? "not initialised (its init failed or was not called)"
                                                              : "NULL");
        return NULL;
    }
    const tg_mha_config *a = &b->attn.cfg;
    if (a->add_bias_kv || a->add_zero_attn || a->kdim != a->d_model || a->vdim != a->d_model) {
        tg_error_set("tg_block_cache_new '%s': no key/value cache with kdim, vdim, add_bias_kv or add_zero_attn",
                     b->name);
        return NULL;
    }
    if (B < 1 || cap < 1) {
        tg_error_set("tg_block_cache_new '%s': B = %d rows of cap = %d positions: both must be >= 1", b->name, B, cap);
        return NULL;
    }
    tg_sdpa_layout lay = tg_mha_kv_layout(&b->attn);
    return tg_tensor_alloc(3, (int[]){B, cap, lay.n_kv_heads * (lay.dk + lay.dv)});
}

/* [B, T, D] -> [B, T, D] */
TG_OP_NO_GRAD(block_prefill_op, "tg_block_prefill");

tg_tensor *tg_block_prefill(tg_tape *t, const tg_block *b, tg_tensor *x, tg_tensor *cache, const tg_tensor *lens,
                            const tg_tensor *head_mask)
{
    if (tg_nn_check_forward("tg_block_prefill", t, b, b && b->ff.fc2.weight)) return NULL;
    if (!x || !cache) return tg_fail_null(t, "tg_block_prefill");
    if (lens && !tg_index_rows_check(t, &block_prefill_op, lens, "lens", x->ndim ? x->shape[0] : 1)) return NULL;
    tg_mask mask = {.causal = true, .key_lens = lens};
    return tg_block_forward(t, b, x, &(tg_mha_opts){.mask = &mask, .head_mask = head_mask, .cache = cache}, NULL);
}

tg_tensor *tg_block_decode(tg_tape *t, const tg_block *b, tg_tensor *x, tg_tensor *cache, const tg_tensor *pos,
                         const tg_tensor *head_mask)
{
    if (tg_nn_check_forward("tg_block_decode", t, b, b && b->ff.fc2.weight)) return NULL;
    tg_tensor *h = tg_norm_forward(t, &b->ln1, x);
    h = tg_mha_decode(t, &b->attn, h, cache, pos, head_mask);
    x = tg_add(t, x, h);
    h = tg_norm_forward(t, &b->ln2, x);
    h = tg_ffn_forward(t, &b->ff, h, NULL);
    return tg_add(t, x, h);
}
