/* tapegrad: the key/value cache of one attention layer, and one decoded position
 * of attention over it (core/ops/nn/decode.c; the step: core/ops/nn/attention.c).
 *
 * For a tg_sdpa_layout with Hkv key/value heads (n_kv_heads, 0: n_heads) of
 * widths dk and dv, a cache is [B, cap, Hkv*(dk + dv)]. Row b holds its keys
 * transposed, [Hkv*dk, cap] (channel c of position j at c*cap + j; key head g
 * owns channels g*dk ..), then its values [cap, Hkv*dv] (value head g in
 * columns g*dv ..). A decode's scores q K^T and its P V are then products read
 * in place, and a new position is one column of keys and one row of values.
 * Only the key/value heads are stored: grouped-query attention (Hkv < H)
 * shrinks the cache by H / Hkv.
 */
#ifndef TAPEGRAD_DECODE_H
#define TAPEGRAD_DECODE_H

#include "../../engine/op.h"
#include "../../engine/tape.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_sdpa_layout tg_sdpa_layout;
typedef struct tg_sdpa_opts tg_sdpa_opts;

/* The keys and values of L positions into the cache: for every row b and
 * i < L, columns [lay->k_col, + Hkv*dk) of x[b, i] are the key and columns
 * [lay->v_col, + Hkv*dv) the value of position at[b] + i (at, an int64 or
 * int32 tensor [B]; NULL: i). x is [B, L, C] with B <= the cache's rows. No
 * gradient flows through the cache. 0, or -1 with the tape's error set
 * (shapes, at's dtype, a position past cap). */
int tg_kv_write(tg_tape *t, tg_tensor *cache, const tg_tensor *x, const tg_sdpa_layout *lay, const tg_tensor *at);

/* One decoded position, for inference (the tape must not record): query head h
 * of row b, columns [q_col + h*dk, + dk) of xq [B, 1, Cq], attends to
 * positions 0..pos[b] (pos an int64 or int32 tensor [B]) of key/value head h / (H / Hkv) in cache rows [0, B).
 * It is the last row of tg_sdpa_heads under a causal mask, run by the same
 * core (core/ops/nn/attention.c; the same bits with tapegrad's GEMMs). opts may give
 * the scale (<= 0: 1/sqrt(dk)) and ALiBi slopes (head h adds
 * alibi[h] * (j - pos[b])); a mask, a bias tensor or dropout is refused.
 * -> [B, 1, H*dv], head h in columns [h*dv, (h+1)*dv). */
tg_tensor *tg_sdpa_decode(tg_tape *t, tg_tensor *xq, tg_tensor *cache, const tg_sdpa_layout *lay,
                        const tg_tensor *pos, const tg_sdpa_opts *opts);

/* Positions [0, n) of cache row `from` into row `to` (a batched decoder
 * packing its unfinished rows). 0, or -1 with a message in tg_error(). */
int tg_kv_copy(tg_tensor *cache, const tg_sdpa_layout *lay, int to, int from, int n);

#ifdef __cplusplus
}
#endif

#endif
