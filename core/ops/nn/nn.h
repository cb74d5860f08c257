/* tapegrad core ops, neural-network ops: softmax, masks, normalisation, embedding, dropout, attention, RoPE, ALiBi.
 * The conventions of every op are in core/ops/ops.h. */
#ifndef TAPEGRAD_OPS_NN_H
#define TAPEGRAD_OPS_NN_H

#include <stdbool.h>
#include <stdint.h>

#include "decode.h"
#include "mask.h"
#include "../../engine/op.h"
#include "../../engine/rng.h"
#include "../../engine/tape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- softmax (core/ops/nn/softmax.c) ---------------- */

/* Softmax over the last dim, stable (row max subtracted). */
tg_tensor *tg_softmax(tg_tape *t, tg_tensor *a);
tg_tensor *tg_log_softmax(tg_tape *t, tg_tensor *a);
/* softmax(a * scale + mask) over the last dim of scores a [B, H, Lq, Lk]
 * (3-D [B, Lq, Lk] and 2-D [Lq, Lk] are read as B = 1 and/or H = 1).
 * Masked entries get exactly zero weight; a row with every key masked is all
 * zeros (PyTorch gives NaN there). mask may be NULL. */
tg_tensor *tg_softmax_masked(tg_tape *t, tg_tensor *a, const tg_mask *mask, double scale);

/* ---- normalisation (core/ops/nn/norm.c) --------------------------------------
 * LayerNorm over the last dim C: x [..., C], weight and bias [C] (either may
 * be NULL), eps as torch.nn.LayerNorm (biased variance). */
tg_tensor *tg_layernorm(tg_tape *t, tg_tensor *x, tg_tensor *weight, tg_tensor *bias, double eps);
/* RMSNorm over the last dim C: y = x / sqrt(mean(x^2) + eps) * weight; x
 * [..., C], weight [C] or NULL, eps > 0 (nn.RMSNorm's, given explicitly). */
tg_tensor *tg_rmsnorm(tg_tape *t, tg_tensor *x, tg_tensor *weight, double eps);

/* ---- indexing (core/ops/nn/embedding.c) -------------------------------------------
 * F.embedding: rows of weight [V, D] picked by ids, an int64 (PyTorch's) or
 * int32 tensor of any shape [...] up to 7 dims (each id checked in [0, V)):
 * out is [..., D]. Backward scatter-adds (repeated ids accumulate). */
tg_tensor *tg_embedding(tg_tape *t, tg_tensor *weight, const tg_tensor *ids);

/* ---- dropout (core/ops/nn/dropout.c) -----------------------------------------
 * Zeroes each element with probability p and scales the rest by 1/(1-p);
 * identity (a itself, no node) when p == 0 or the tape is not training. */
tg_tensor *tg_dropout(tg_tape *t, tg_tensor *a, double p, tg_rng *rng);

/* ---- fused scaled-dot-product attention (core/ops/nn/attention.c) -----------
 * out = softmax(Q K^T * scale + mask) V, for q [B, H, Lq, dk], k [B, Hkv, Lk, dk],
 * v [B, Hkv, Lk, dv]; out [B, H, Lq, dv]. scale <= 0 means 1/sqrt(dk).
 * Hkv dividing H is grouped-query attention (1: multi-query): query head h
 * reads key/value head h / (H / Hkv), PyTorch's enable_gqa=True.
 * Attention dropout (p, rng) applies to the weights when training.
 * When weights != NULL, *weights receives the attention weights
 * [B, H, Lq, Lk] (after masking, before dropout): a plain arena tensor to
 * read, valid until tg_tape_reset; no gradient flows back from it. Backward
 * does not need them: it recomputes them block by block (memory O(L)).
 * opts may be NULL (no mask, default scale, no dropout); an rng is required
 * when dropout > 0 and the tape is training. Dropout draws one number per weight in (b,h,i,j)
 * order, masked or not, so the stream does not depend on the mask.
 * The mask's float parts (attn, then key_padding), the bias and ALiBi add up (in
 * that order). */
struct tg_sdpa_opts {
    const tg_mask *mask;     /* NULL: no mask */
    double scale;            /* <= 0: 1/sqrt(dk) */
    double dropout;          /* probability, 0 = off */
    tg_rng *rng;             /* required when dropout > 0 */
    tg_tensor *bias;         /* [B or 1, H, Lq, Lk] added to the scaled scores, with a gradient
                                (learned relative-position biases); NULL: none */
    const double *alibi;     /* [H] ALiBi slopes: head h adds alibi[h] * (j - i); NULL: none */
};
tg_tensor *tg_sdpa(tg_tape *t, tg_tensor *q, tg_tensor *k, tg_tensor *v,
                   const tg_sdpa_opts *opts, tg_tensor **weights);

/* The same attention with the heads read in place from packed projections,
 * as a [B, L, C] projection lays them out: no split/merge copies.
 * Head h of q is columns [q_col + h*dk, q_col + (h+1)*dk) of xq [B, Lq, Cq];
 * its k and v are columns [k_col + h*dk, ...+dk) and [v_col + h*dv, ...+dv) of
 * xkv [B, Lk, Ckv]. xq and xkv may be the same tensor (self-attention on a
 * packed qkv [B, L, 3E]: q_col 0, k_col E, v_col 2E); ranges may overlap.
 * out is [B, Lq, n_heads*dv], head h in columns [h*dv, (h+1)*dv): exactly
 * merge_heads(tg_sdpa(split_heads(q), split_heads(k), split_heads(v))) with
 * the same opts (masks, scale <= 0: 1/sqrt(dk), dropout stream in (b,h,i,j)
 * order) and the same *weights [B, H, Lq, Lk]. */
struct tg_sdpa_layout {
    int n_heads;             /* >= 1 */
    int dk, dv;              /* per-head widths of q/k and of v, >= 1 */
    int q_col;               /* first column of head 0's q in xq */
    int k_col, v_col;        /* first columns of head 0's k and v in xkv */
    int n_kv_heads;          /* key/value heads, dividing n_heads (0: n_heads); query head h
                                reads key/value head h / (n_heads / n_kv_heads) */
};
tg_tensor *tg_sdpa_heads(tg_tape *t, tg_tensor *xq, tg_tensor *xkv, const tg_sdpa_layout *lay,
                         const tg_sdpa_opts *opts, tg_tensor **weights);

/* ALiBi's slopes for n heads: 2^(-8(h+1)/n) for n a power of 2, else the
 * paper's interpolation (core/ops/nn/attn_bias.c). */
void tg_alibi_slopes(double *slopes, int n_heads);

/* ---- rotary position embeddings (core/ops/nn/rope.c) --------------------------
 * x [B, L, C] -> the same shape: n_heads heads of d_head columns from column
 * col have their first rot dims (even; 0: all d_head) rotated pairwise,
 * LLaMA's apply_rotary_emb: pair (x_2i, x_2i+1) of position p by the angle
 * p / base^(2i / rot). Row b's positions are pos0[b] + 0 .. L-1 (pos0 NULL:
 * 0 ..), so a decoding step passes its positions. Other columns are copied.
 * An odd rot, rot > d_head, columns outside x, a bad base, a negative
 * position or a pos0 that is not an int64 / int32 tensor [B] are errors. */
typedef struct tg_rope_opts {
    int col, n_heads, d_head;
    int rot;                 /* rotated dims per head, even; 0: d_head */
    double base;             /* 0: 10000 */
    const tg_tensor *pos0;   /* int64 or int32 [B], or NULL */
} tg_rope_opts;
tg_tensor *tg_rope(tg_tape *t, tg_tensor *x, const tg_rope_opts *opts);

#ifdef __cplusplus
}
#endif

#endif
