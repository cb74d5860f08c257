/* tapegrad: multi-head attention, per-head and fused (docs/ATTENTION.md).
 *
 * With E = n_heads * d_head and scale 1/sqrt(d_head), for each head h:
 *     Q_h = xq  W_h^Q^T + b_h^Q        [B, Lq, d_head]
 *     K_h = xkv W_h^K^T + b_h^K        [B, Lk, d_head]
 *     V_h = xkv W_h^V^T + b_h^V        [B, Lk, d_head]
 *     O_h = softmax(Q_h K_h^T * scale + mask) V_h       (dropout on the weights)
 *     out = concat_h(head_mask[h] * O_h) W^O^T + b^O    [B, Lq, d_model]
 * The two modes compute this same function from differently stored weights:
 *   TG_MHA_FUSED     "<prefix>.in_proj_weight" [3E, D], "<prefix>.in_proj_bias"
 *                    [3E] (rows: all heads' Q, then K, then V; head h owns rows
 *                    h*d_head .. of each third: torch.nn.MultiheadAttention's
 *                    layout). Self-attention is one GEMM for Q, K and V.
 *   TG_MHA_PER_HEAD  "<prefix>.heads.<h>.{q,k,v}_proj.weight" [d_head, D] and
 *                    ".bias" [d_head]: one GEMM per head, joined (tg_concat).
 *                    A head can be read, frozen or pruned alone.
 * Only the projections differ: both produce the same packed tensors, head h
 * of q in columns [h*d_head, (h+1)*d_head) of | q | k | v | [B, L, E + 2Ekv]
 * (self-attention) or of q [B, Lq, E] and | k | v | [B, Lk, 2Ekv], and from
 * there one path serves both (RoPE, the appended keys, the cache, then one
 * tg_sdpa_heads reading every head in place and writing [B, Lq, E]).
 * Both: "<prefix>.out_proj.weight" [D, E], "<prefix>.out_proj.bias" [D].
 * bias = false drops all four kinds of bias.
 *
 * Grouped-query attention (n_kv_heads = Hkv < H, dividing it; 1 is
 * multi-query): Hkv key/value heads, Ekv = Hkv * d_head; query head h uses
 * key/value head h / (H / Hkv). Fused: in_proj [E + 2Ekv, D] (Q rows of the
 * H heads, then K and V rows of the Hkv heads), qkv [B, L, E + 2Ekv].
 * Per-head: "heads.<h>.q_proj.*" and "kv_heads.<g>.{k,v}_proj.*", one
 * tensor per key/value head, shared by the heads of its group. The key/value
 * cache holds only the Hkv heads.
 *
 * RoPE (rope = true): after the projections, the first rope_rot dims of
 * every q and k head are rotated by their position (tg_rope: positions
 * 0..L-1 in a forward, pos[b] in a decode; the cache keeps rotated keys), in
 * both modes the same numbers.
 *
 * ALiBi (alibi = true): head h adds m_h * (j - i) to the scaled score of
 * query i and key j (a decode: i = pos[b]); tg_mha_opts.bias adds any
 * [B or 1, H, Lq, Lk] tensor there and takes its gradient.
 *
 * Init (PyTorch's nn.MultiheadAttention): the packed [3E, D] Q/K/V weight ~
 * xavier_uniform_, Q/K/V biases 0, out_proj.weight as nn.Linear (U(+-1/sqrt(E))),
 * out_proj.bias 0. Per-head mode draws the same numbers in the same order, so
 * the same seed gives the same function in both modes.
 *
 * Cross-attention in fused mode reads Q from the first E rows of in_proj and
 * K, V from the other 2E rows through views that share the parameter's data
 * and grad (one set of parameters, two GEMMs).
 *
 * Head mask (a float tensor [n_heads], HuggingFace's head_mask: 1 keeps a head,
 * 0 silences it): head h's output is multiplied by head_mask[h] before
 * out_proj, so a head at 0 contributes nothing and its Q/K/V parameters get
 * exactly zero gradient (its attention weights are still computed and
 * returned). No gradient flows to the head mask.
 * A query row with every key masked gets all-zero weights and a zero head
 * output (so out = b^O there), never NaN; PyTorch gives NaN.
 * Dropout: one stream over the weights in (b, h, i, j) order, so the two
 * modes draw the same masks and agree with dropout on too.
 */
#ifndef TAPEGRAD_NN_ATTENTION_H
#define TAPEGRAD_NN_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "linear.h"
#include "../core/engine/params.h"
#include "../core/io/io.h"
#include "../core/ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_MHA_MAX_HEADS 64

typedef enum tg_mha_mode { TG_MHA_FUSED = 0, TG_MHA_PER_HEAD = 1 } tg_mha_mode;

typedef struct tg_mha_config {
    int n_heads;
    int d_model;        /* D: input and output width */
    int d_head;         /* 0: d_model / n_heads (must divide); any value > 0 allowed */
    int n_kv_heads;     /* key/value heads, dividing n_heads; 0: n_heads (1: multi-query) */
    bool rope;          /* rotary position embeddings on q and k (tg_rope), positions 0.. */
    double rope_base;   /* 0: 10000 */
    double rope_frac;   /* share of each head's dims rotated, rounded down to even; 0: 1 */
    bool alibi;         /* ALiBi: head h adds m_h * (j - i) to its scores (tg_alibi_slopes) */
    /* torch.nn.MultiheadAttention's options: */
    int kdim, vdim;     /* widths of the key and value inputs; 0: d_model (no key/value
                           cache unless both are d_model) */
    bool add_bias_kv;   /* a learned key and value appended to every sequence (not with
                           n_kv_heads < n_heads, rope or alibi: the keys have no position) */
    bool add_zero_attn; /* a zero key and value appended (after add_bias_kv's; not with
                           rope or alibi) */
    bool bias;          /* biases on Q, K, V and out_proj */
    double dropout;     /* on the attention weights while training, in [0, 1) */
    tg_mha_mode mode;
} tg_mha_config;

/* One head's projections in per-head mode; with grouped key/value heads,
 * wk, wv, bk, bv are its group's (the same tensors for every head of it). */
typedef struct tg_mha_head {
    tg_tensor *wq, *wk, *wv;    /* [d_head, D], [d_head, kdim], [d_head, vdim] */
    tg_tensor *bq, *bk, *bv;    /* [d_head] or NULL */
    tg_tensor *bias_k, *bias_v; /* add_bias_kv: [d_head] */
} tg_mha_head;

typedef struct tg_mha {
    tg_mha_config cfg;          /* d_head resolved (never 0) */
    tg_tensor *in_proj_weight;  /* fused: [E + 2Ekv, D] (NULL when kdim or vdim != D) */
    tg_tensor *in_proj_bias;    /* fused: [E + 2Ekv] or NULL */
    tg_tensor *qkv_proj[3];     /* fused with kdim or vdim != D: [E, D], [Ekv, kdim], [Ekv, vdim] */
    tg_tensor *bias_k, *bias_v; /* fused with add_bias_kv: [1, 1, E] */
    tg_mha_head heads[TG_MHA_MAX_HEADS];  /* per-head: n_heads used */
    tg_linear out_proj;         /* [D, E] (+ [D]) */
    int rope_rot;               /* with cfg.rope: dims rotated per head */
    double alibi[TG_MHA_MAX_HEADS];  /* with cfg.alibi: each head's slope */
    char name[TG_NN_NAME_MAX];
} tg_mha;

/* 0, or -1 with a message in tg_error() naming the layer (bad config, name clash). */
int tg_mha_init(tg_mha *m, tg_params *p, const char *prefix, const tg_mha_config *cfg, tg_rng *rng);

/* What one attention call may add (all optional: NULL options, or a NULL
 * field, mean none), as tg_sdpa_opts does for tg_sdpa. */
typedef struct tg_mha_opts {
    const tg_mask *mask;        /* any tg_mask (core/ops/nn/mask.h) for B, n_heads, Lq, Lk: an attn
                                   mask may be per head ([B*n_heads, Lq, Lk], PyTorch's 3-D form) */
    const tg_tensor *head_mask; /* float [n_heads] (either float type): head h's output times
                                   head_mask[h] (0 = silenced), or NULL */
    tg_rng *rng;                /* needed for dropout while training */
    tg_tensor *bias;            /* [B or 1, n_heads, Lq, Lk] added to the scaled scores, with a
                                   gradient (learned relative-position biases), or NULL */
    tg_tensor *xv;              /* the values' input [B, Lk, vdim] (PyTorch's value), or NULL:
                                   xkv gives keys and values */
    tg_tensor *cache;           /* self-attention: [B' >= B, cap >= L, Hkv*(dk + dv)] (2E
                                   without grouped heads), receives the key and value of every
                                   position in rows [0, B) (tg_kv_write with tg_mha_kv_layout:
                                   a prefill; no gradient flows through it) */
} tg_mha_opts;

/* xq [B, Lq, D], xkv [B, Lk, kdim] (pass xq again for self-attention) -> [B, Lq, D].
 * Unbatched, as PyTorch: xq [Lq, D], xkv [Lk, kdim] (and xv [Lk, vdim]) ->
 * [Lq, D], weights [H, Lq, Lk].
 * weights: NULL, or receives the attention weights [B, H, Lq, Lk] (after
 * masking, before dropout; a plain arena tensor to read: no gradient flows
 * back from it, as tg_sdpa's). With add_bias_kv / add_zero_attn the keys
 * (and the weights' last dim) have one more position each, at the end,
 * visible to every query whatever the mask (PyTorch pads its masks so). */
tg_tensor *tg_mha_forward(tg_tape *t, const tg_mha *m, tg_tensor *xq, tg_tensor *xkv, const tg_mha_opts *o,
                          tg_tensor **weights);

/* The layout of this layer's key/value cache for the core ops tg_kv_write,
 * tg_sdpa_decode and tg_kv_copy (core/ops/nn/decode.h, which owns the cache's
 * layout): a cache is [B, cap, Hkv*(dk + dv)]; q_col, k_col and v_col are
 * where the packed | q | k | v | projection of one position holds them.
 * A NULL m gives all zeros, a layout those ops refuse. */
tg_sdpa_layout tg_mha_kv_layout(const tg_mha *m);

/* One decoded position of causal self-attention with a key/value cache, for
 * inference (the tape must not record). x [B, 1, D] holds each row's newest
 * position. Row b's new key and value go to position pos[b] (pos an int64 or
 * int32 tensor [B]) of cache row b (tg_kv_write), then its query attends to positions 0..pos[b]
 * (tg_sdpa_decode): the last row of tg_mha_forward under a causal mask, at
 * O(pos) cost, with the same bits with tapegrad's GEMMs. -> [B, 1, D] */
tg_tensor *tg_mha_decode(tg_tape *t, const tg_mha *m, tg_tensor *x, tg_tensor *cache, const tg_tensor *pos,
                       const tg_tensor *head_mask);

/* Copies every weight of src into dst exactly, converting between the modes
 * when they differ. 0, or -1 (tg_error() names them) when n_heads,
 * n_kv_heads, d_model, d_head or bias differ. */
int tg_mha_copy_weights(tg_mha *dst, const tg_mha *src);

/* A checkpoint saved in one mode, ready to load into the other: a new set
 * with every attention layer's Q/K/V tensors stored as `to` wants them, the
 * other tensors and the metadata copied unchanged. To per-head, each
 * "<p>.in_proj_weight" [3E, D] (and "<p>.in_proj_bias" [3E]) becomes
 * "<p>.heads.<h>.{q,k,v}_proj.weight" [d_head, D] (and ".bias"); to fused,
 * the reverse. With n_kv_heads < n_heads (0: n_heads) in_proj is
 * [(n_heads + 2 n_kv_heads) d_head, D] and the key/value heads are
 * "<p>.kv_heads.<g>.{k,v}_proj.*"; nn.MultiheadAttention's
 * "<p>.{q,k,v}_proj_weight" (kdim or vdim != d_model) and "<p>.bias_k",
 * "<p>.bias_v" [1, 1, E] become or come from the heads' weights and
 * "<p>.heads.<h>.bias_{k,v}" [d_head]. A set already in mode `to` comes back as
 * a copy. The values are copied exactly, so both modes compute the same
 * function. NULL with a message in tg_error() (naming the tensor) when a
 * layer's tensors are missing or mis-shaped, or a head index is too large.
 * Free with tg_st_free. */
tg_safetensors *tg_mha_convert(const tg_safetensors *src, tg_mha_mode to, int n_heads, int n_kv_heads);

#ifdef __cplusplus
}
#endif

#endif
