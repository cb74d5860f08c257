/* tapegrad: the decoder-only toy model that seqtask trains.
 *
 *   h = tok_emb[ids] + pos_emb[0 .. T-1]                [B, T, D]  (ids int [B, T])
 *       (pos TG_POS_ROPE: RoPE in every attention layer instead; TG_POS_NONE:
 *       no positions but the causal mask's; neither has pos_emb)
 *   for each block l: h = h + attn(ln1(h)); h = h + ff(ln2(h))
 *                     (causal mask + key padding from lens)
 *   logits = head(ln_f(h))                              [B, T, V]
 * The zero config: LayerNorm eps 1e-5, GELU (erf), no weight tying, head =
 * Linear(D, V) with bias, biases everywhere in attention and feed-forward.
 * Options: norm (RMSNorm, eps 1e-5, for ln1, ln2 and ln_f), ff_act (SiLU,
 * SwiGLU, GeGLU: nn/ffn.h), no_bias (no bias in attention, feed-forward or
 * head; LayerNorm keeps its own), tie_weights (the head's weight IS
 * tok_emb.weight, one parameter whose gradient sums both uses; the tied head
 * has no bias, as GPT-2's). Dropout p (training only) on the attention
 * weights and on each feed-forward output.
 *   LLaMA-style: {.norm = TG_NORM_RMS, .n_kv_heads < n_heads, .pos = TG_POS_ROPE,
 *                 .ff_act = TG_FFN_SWIGLU, .no_bias = true}
 *   GPT-2:       {.pos = TG_POS_LEARNED, .tie_weights = true}
 *
 * Parameters (safetensors keys, PyTorch state_dict style), in this order:
 *   tok_emb.weight [V, D], pos_emb.weight [max_len, D],
 *   blocks.{l}.ln1.{weight,bias}, blocks.{l}.attn.* (nn/attention.h: fused
 *   in_proj_weight / in_proj_bias, or per-head heads.{h}.{q,k,v}_proj.*; then
 *   out_proj.{weight,bias}), blocks.{l}.ln2.{weight,bias},
 *   blocks.{l}.ff.fc1.{weight,bias}, blocks.{l}.ff.fc2.{weight,bias}
 *   (gated: ff.gate_proj.*, ff.up_proj.*, ff.down_proj.*),
 *   ln_f.{weight,bias}, head.{weight,bias}; without what the options drop
 *   (RMSNorm's bias, no_bias's biases, the tied head's weight and bias).
 * A tied model stores tok_emb.weight only; tg_model_load also accepts a
 * file that has head.weight too (a PyTorch state_dict names the shared
 * tensor twice) when it equals tok_emb.weight (docs/FORMATS.md).
 * Init: PyTorch's defaults (nn/init.h); tied, tok_emb and pos_emb are N(0, 0.02)
 * (GPT-2's scale, nanoGPT's init).
 */
#ifndef TAPEGRAD_NN_MODEL_H
#define TAPEGRAD_NN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "block.h"
#include "embedding.h"
#include "rmsnorm.h"
#include "../core/io/io.h"
#include "linear.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the model knows positions: a learned table added to the token
 * embeddings, RoPE inside every attention layer (no table), or nothing
 * (causal attention alone). */
typedef enum tg_pos_kind { TG_POS_LEARNED = 0, TG_POS_ROPE = 1, TG_POS_NONE = 2 } tg_pos_kind;

typedef struct tg_model_config {
    int vocab;          /* V */
    int d_model;        /* D */
    int n_layers;
    int n_heads;
    int d_head;         /* 0: d_model / n_heads */
    int n_kv_heads;     /* key/value heads, dividing n_heads (0: n_heads; 1: multi-query) */
    int d_ff;           /* 0: 4 * d_model */
    int max_len;        /* rows of pos_emb: the longest sequence T the model reads */
    double dropout;
    tg_mha_mode mode;   /* TG_MHA_FUSED or TG_MHA_PER_HEAD */
    tg_pos_kind pos;    /* TG_POS_LEARNED (pos_emb), TG_POS_ROPE or TG_POS_NONE */
    double rope_base, rope_frac;  /* with TG_POS_ROPE: tg_mha_config's */
    bool alibi;         /* ALiBi biases in every attention layer (with any pos) */
    tg_norm_kind norm;  /* 0: LayerNorm; TG_NORM_RMS: RMSNorm */
    tg_ffn_act ff_act;  /* 0: GELU (nn/ffn.h) */
    bool no_bias;       /* no bias in attention, feed-forward or head */
    bool tie_weights;   /* head.weight is tok_emb.weight (no head bias) */
} tg_model_config;

typedef struct tg_model {
    tg_model_config cfg;        /* d_head, d_ff resolved */
    tg_embedding_layer tok_emb; /* [V, D] */
    tg_embedding_layer pos_emb; /* [max_len, D]; TG_POS_LEARNED only */
    tg_block *blocks;           /* n_layers (heap) */
    tg_norm_layer ln_f;
    tg_linear head;             /* [V, D] + [V]; tied: weight = tok_emb.weight, no bias */
} tg_model;

/* Adds every parameter to p (which must not have them yet) and initialises
 * them from rng (NULL: leave the random ones at zero, e.g. before loading a
 * checkpoint). 0, or -1 with a message in tg_error(); on failure the model holds
 * nothing to free and p holds what it held before. */
int tg_model_init(tg_model *m, tg_params *p, const tg_model_config *cfg, tg_rng *rng);
/* Frees what tg_model_init allocated (not the parameters: p owns those). */
void tg_model_free(tg_model *m);
/* tg_st_load_params(p, s, strict, ignore_prefix) for m's parameters p; with
 * tie_weights, a "head.weight" in s must equal s's tok_emb.weight (shape and
 * every bit) and is then skipped. 0, or -1 with a message in tg_error() (p
 * unchanged). */
int tg_model_load(const tg_model *m, tg_params *p, const tg_safetensors *s, bool strict, const char *ignore_prefix);

/* What one forward may add (all optional: NULL options, or a NULL field,
 * mean none). */
typedef struct tg_model_opts {
    const tg_tensor *lens;      /* int64 or int32 [B]: valid length of each sequence, each in
                                   [0, T] (keys j >= lens[b] are masked); NULL: all T */
    const tg_tensor *head_mask; /* float [n_layers, n_heads] (either float type): head h of
                                   layer l's output times head_mask[l, h] (0 = silenced) */
    tg_rng *rng;                /* for dropout while training */
} tg_model_opts;

/* ids, an int64 or int32 tensor [B, T] (PyTorch's LongTensor input_ids; each
 * in [0, V), 0 < T <= max_len) -> logits [B, T, V]. attn: NULL, or an array
 * of n_layers pointers that receive each layer's weights [B, H, T, T]. A
 * float ids, another shape, or lens / head_mask of the wrong dtype or shape
 * is an error naming the one expected and the one given. */
tg_tensor *tg_model_forward(tg_tape *t, const tg_model *m, const tg_tensor *ids, const tg_model_opts *o,
                            tg_tensor **attn);

/* Keys and values of every layer for incremental decoding: n_layers tensors
 * [B, cap, Hkv*(dk + dv)], cap = the model's max_len positions per row, laid
 * out as core/ops/nn/decode.h says (keys transposed, then values). */
typedef struct tg_kv_cache {
    int B, cap, n_layers;
    tg_sdpa_layout lay;         /* every layer's (tg_mha_kv_layout) */
    tg_tensor **kv;
} tg_kv_cache;

/* 0, or -1 with a message in tg_error() (out of memory). */
int tg_kv_cache_init(tg_kv_cache *c, const tg_model *m, int B);
void tg_kv_cache_free(tg_kv_cache *c);
/* Positions [0, n) of cache row `from`, every layer, into row `to` (a
 * batched decoder packing its unfinished rows). 0, or -1 with a message in
 * tg_error() (a NULL or uninitialised cache, a row outside [0, B), n outside
 * [0, cap]). */
int tg_kv_cache_move(tg_kv_cache *c, int to, int from, int n);

/* tg_model_forward that also writes every layer's keys and values of positions
 * [0, T) into cache rows [0, B) (ids [B, T], B <= c->B), as T calls of tg_model_decode
 * would, but in one batched pass: row b may then decode on from position
 * lens[b] (or from any earlier one, overwriting). Positions >= lens[b] hold
 * padding's keys, which no decode reads before writing them. No gradient flows
 * through the cache. -> logits [B, T, V], the same bits as tg_model_forward. */
tg_tensor *tg_model_prefill(tg_tape *t, const tg_model *m, tg_kv_cache *c, const tg_tensor *ids,
                            const tg_model_opts *o);

/* One greedy-decoding position for inference (the tape must not record): ids
 * is an int64 or int32 tensor [B, 1] (B <= c->B; a one-position token grid,
 * HuggingFace's input_ids[:, -1:]), pos one [B]: row b (cache row b) reads
 * token ids[b, 0] at position pos[b], attending to the positions
 * 0..pos[b]-1 earlier decodes (or a prefill) put in the cache. head_mask as
 * tg_model_opts's, or NULL.
 * Feeding a sequence one position at a time gives tg_model_forward's causal
 * logits, each at O(pos) cost. -> logits [B, 1, V]. */
tg_tensor *tg_model_decode(tg_tape *t, const tg_model *m, tg_kv_cache *c, const tg_tensor *ids,
                           const tg_tensor *pos, const tg_tensor *head_mask);

#ifdef __cplusplus
}
#endif

#endif
