/* tapegrad: the pre-norm transformer block.
 *
 *   x = x + attn(ln1(x))        self-attention, with the caller's mask
 *   x = x + ff(ln2(x))
 *
 * ln1, ln2: LayerNorm (GPT-2) or RMSNorm (LLaMA), eps ln_eps either way.
 * Parameters under "<prefix>.": ln1.weight (and ln1.bias with LayerNorm),
 * attn.* (nn/attention.h, either mode), ln2.weight (ln2.bias), ff.* (nn/ffn.h:
 * fc1.*, fc2.*, or gated gate_proj.*, up_proj.*, down_proj.*).
 * GPT-2's block: {.attn.bias = true} and the rest zero. LLaMA's: {.attn =
 * {.n_kv_heads < n_heads, .rope = true}, .norm = TG_NORM_RMS, .ff_act =
 * TG_FFN_SWIGLU, .no_bias = true} (no_bias drops the feed-forward's biases;
 * the attention's follow attn.bias).
 */
#ifndef TAPEGRAD_NN_BLOCK_H
#define TAPEGRAD_NN_BLOCK_H

#include "attention.h"
#include "ffn.h"
#include "rmsnorm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_block_config {
    tg_mha_config attn;     /* d_model, n_heads, d_head, bias, attention dropout, mode */
    int d_ff;               /* hidden width of the feed-forward block */
    double ff_dropout;      /* on the feed-forward output */
    double ln_eps;          /* 0: 1e-5 */
    tg_norm_kind norm;      /* 0: LayerNorm; TG_NORM_RMS: RMSNorm */
    tg_ffn_act ff_act;      /* 0: GELU (nn/ffn.h) */
    bool no_bias;           /* the feed-forward's Linear layers without bias */
} tg_block_config;

typedef struct tg_block {
    tg_norm_layer ln1;
    tg_mha attn;
    tg_norm_layer ln2;
    tg_ffn ff;
    char name[TG_NN_NAME_MAX];
} tg_block;

int tg_block_init(tg_block *b, tg_params *p, const char *prefix, const tg_block_config *cfg,
                  tg_rng *rng);
/* x [B, T, D] -> [B, T, D]. o (the attention's mask, head mask and rng;
 * the rng also drives the feed-forward dropout) and weights ([B, H, T, T]
 * out) as tg_mha_forward. */
tg_tensor *tg_block_forward(tg_tape *t, const tg_block *b, tg_tensor *x, const tg_mha_opts *o,
                            tg_tensor **weights);

/* Decoding with a key/value cache, for a model built from blocks as for
 * tg_model (tg_model_prefill, tg_model_decode): one cache per block, made by
 * tg_block_cache_new, filled by tg_block_prefill, read and extended by
 * tg_block_decode (on a tape that does not record: inference). */

/* A zeroed cache of B rows of cap positions for this block's attention:
 * [B, cap, Hkv*(dk + dv)] as core/ops/nn/decode.h lays it out (tg_mha_kv_layout;
 * Hkv key/value heads, so grouped-query attention stores Hkv, not H, heads).
 * Free with tg_tensor_free. NULL with tg_error() naming what is wrong (a NULL
 * or uninitialised block, B or cap < 1, an attention without a cache:
 * kdim, vdim, add_bias_kv, add_zero_attn; out of memory). */
tg_tensor *tg_block_cache_new(const tg_block *b, int B, int cap);
/* tg_block_forward of x [B, T, D] under a causal mask (key j >= lens[b]
 * padding; lens an int64 or int32 tensor [B], or NULL: all T) that also writes the keys and values of
 * positions [0, T) into cache rows [0, B) (the cache's B >= x's, cap >= T):
 * row b may then decode on from position lens[b]. head_mask: float [n_heads]
 * (tg_mha_opts.head_mask) or NULL. -> [B, T, D], the same bits as
 * tg_block_forward. */
tg_tensor *tg_block_prefill(tg_tape *t, const tg_block *b, tg_tensor *x, tg_tensor *cache, const tg_tensor *lens,
                            const tg_tensor *head_mask);
/* One decoded position (tg_mha_decode): x [B, 1, D], row b at position pos[b]
 * (pos an int64 or int32 tensor [B]; keys and values of 0..pos[b]-1 in cache row b from a prefill or earlier
 * decodes), cache as tg_block_cache_new's -> [B, 1, D]. */
tg_tensor *tg_block_decode(tg_tape *t, const tg_block *b, tg_tensor *x, tg_tensor *cache, const tg_tensor *pos,
                           const tg_tensor *head_mask);

#ifdef __cplusplus
}
#endif

#endif
