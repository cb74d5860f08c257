/* tapegrad: attention masks, described rather than materialised.
 *
 * A key j is visible to query i of batch element b when every set rule
 * allows it:
 *   causal      j <= i (top-left aligned, as PyTorch's is_causal)
 *   key_lens    j < key_lens[b]                        (per-sequence lengths)
 *   key_keep    key_keep[b*Lk + j] != 0                (a [B, Lk] 0/1 array;
 *               NOTE: 1 = attend, the opposite of PyTorch's key_padding_mask
 *               where true = ignore)
 *   window      |i - j| < window (window > 0; with causal: i-window < j <= i)
 *   keep        keep[(b*Lq + i)*Lk + j] != 0 when keep_batched, else
 *               keep[i*Lk + j] != 0                    (arbitrary 0/1 mask)
 * additive (optional, [Lq, Lk]) is added to the scaled scores of visible
 * entries; an entry of -INFINITY there counts as masked.
 * Masked entries get exactly zero weight and zero gradient; a query row with
 * no visible key gets all-zero weights (PyTorch gives NaN).
 * The ops refuse key_lens outside [0, Lk], a negative window, keep_batched
 * without keep, and NaN or +inf in additive.
 * The arrays are read during the forward call and copied when needed for
 * backward, so the caller may free them after the op returns.
 */
#ifndef TAPEGRAD_MASK_H
#define TAPEGRAD_MASK_H

#include <stdbool.h>
#include <stdint.h>

#include "../../engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_mask {
    bool causal;
    const int32_t *key_lens;   /* [B] or NULL */
    const uint8_t *key_keep;   /* [B, Lk] or NULL */
    int window;                /* 0: off */
    const uint8_t *keep;       /* [Lq, Lk] or [B, Lq, Lk], or NULL */
    bool keep_batched;
    const tg_real *additive;   /* [Lq, Lk] or NULL */
} tg_mask;

/* Fills vis[Lq*Lk] (1 = visible) for batch element b. */
void tg_mask_fill(const tg_mask *m, int b, int Lq, int Lk, uint8_t *vis);
/* True when the mask is NULL or has no rule set. */
bool tg_mask_empty(const tg_mask *m);

#ifdef __cplusplus
}
#endif

#endif
