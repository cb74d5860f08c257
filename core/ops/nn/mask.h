/* tapegrad: attention masks, PyTorch's tensors plus two rules.
 *
 * For scores [B, H, Lq, Lk], key j is visible to query i of batch element b
 * and head h when every part that is set allows it:
 *   causal       j <= i (top-left aligned, as PyTorch's is_causal)
 *   window       |i - j| < window (window > 0; with causal: i-window < j <= i)
 *   key_lens     j < key_lens[b]: TG_I32 or TG_I64 [B] (per-sequence lengths)
 *   key_padding  [B, Lk], PyTorch's key_padding_mask: TG_BOOL, true = IGNORE
 *                the key; or float (float32/float64), added to the scores
 *   attn         PyTorch's attn_mask of nn.MultiheadAttention: TG_BOOL, true =
 *                NOT allowed to attend; or float, added to the scores. Shape
 *                [Lq, Lk] (every b, h), [B, Lq, Lk] (every head of b),
 *                [B*H, Lq, Lk] (plane b*H + h, PyTorch's 3-D form) or
 *                [B, H, Lq, Lk] (per head). With B == 1 or H == 1, [B*H, Lq,
 *                Lk] and [B, Lq, Lk] are the same shape: a plane per b*H + h.
 * NOTE: F.scaled_dot_product_attention's bool attn_mask is the opposite
 * (true = take part in attention); pass its logical not here.
 * A float entry of -inf counts as masked; float masks carry no gradient and
 * may be of either float type (converted to the op's). Masked entries get
 * exactly zero weight and zero gradient; a query row with no visible key gets
 * all-zero weights (PyTorch gives NaN).
 * The ops refuse a negative window, key_lens outside [0, Lk], a tensor of the
 * wrong shape or dtype (naming the expected and the given), NaN or +inf in a
 * float mask. The tensors are read during the forward call and copied when
 * needed for backward, so the caller may free them after the op returns.
 */
#ifndef TAPEGRAD_MASK_H
#define TAPEGRAD_MASK_H

#include <stdbool.h>
#include <stdint.h>

#include "../../engine/tape.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_mask {
    bool causal;
    int window;                       /* 0: off */
    const tg_tensor *key_lens;        /* TG_I32 / TG_I64 [B], or NULL */
    const tg_tensor *key_padding;     /* TG_BOOL (true = ignore) or float [B, Lk], or NULL */
    const tg_tensor *attn;            /* TG_BOOL (true = not allowed) or float: [Lq, Lk],
                                         [B, Lq, Lk], [B*H, Lq, Lk], [B, H, Lq, Lk]; or NULL */
} tg_mask;

/* The visibility of m over scores [B, H, Lq, Lk]: TG_BOOL [B, H, Lq, Lk],
 * true = visible (an arena tensor, no gradient). NULL with the tape's error
 * set when m does not fit those dims (as the ops refuse it). m NULL: all true. */
tg_tensor *tg_mask_visible(tg_tape *t, const tg_mask *m, int B, int H, int Lq, int Lk);
/* True when the mask is NULL or has no rule set. */
bool tg_mask_empty(const tg_mask *m);

#ifdef __cplusplus
}
#endif

#endif
