/* The mask cases the softmax and attention suites share: every rule of
 * tg_mask alone, then combinations, for scores [B_ = 2, ., LQ = 4, LK = 5]. */
#ifndef TAPEGRAD_MASK_CASES_H
#define TAPEGRAD_MASK_CASES_H

#include <math.h>
#include <stdint.h>

#include <tapegrad/tapegrad.h>

enum { B_ = 2, LQ = 4, LK = 5 };
static const int32_t LENS[B_] = {3, 5};
static const int32_t LENS0[B_] = {0, 4};                 /* batch 0 fully masked */
static const uint8_t KKEEP[B_ * LK] = {1, 0, 1, 1, 0, 0, 1, 1, 1, 1};
static const uint8_t KEEP2[LQ * LK] = {1, 1, 0, 0, 1, 0, 1, 1, 0, 0,
                                       1, 0, 1, 0, 1, 1, 1, 1, 1, 0};
static const uint8_t KEEPB[B_ * LQ * LK] = {1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1,
                                            0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 1};
static const tg_real ADD[LQ * LK] = {0.5, -1, 0, 0.25, -0.5, 1, 0, -2, 0.1, 0,
                                     -0.3, 0.2, 0, 1.5, -1, 0, 0, 0.7, -0.7, 0.4};
static const tg_real ADDINF[LQ * LK] = {0, -INFINITY, 0.5, 0, -INFINITY, -INFINITY, -INFINITY,
                                        -INFINITY, -INFINITY, -INFINITY, 1, 0, -INFINITY, -1, 0,
                                        0, 0.3, 0, -INFINITY, 0};

/* One mask per rule, then combinations; each used for values and gradchecks. */
static inline tg_mask mask_kind(int kind)
{
    switch (kind) {
    case 0: return (tg_mask){.causal = true};
    case 1: return (tg_mask){.key_lens = LENS};
    case 2: return (tg_mask){.key_keep = KKEEP};
    case 3: return (tg_mask){.window = 2};
    case 4: return (tg_mask){.window = 2, .causal = true};
    case 5: return (tg_mask){.keep = KEEP2};
    case 6: return (tg_mask){.keep = KEEPB, .keep_batched = true};
    case 7: return (tg_mask){.additive = ADD};
    case 8: return (tg_mask){.additive = ADDINF};
    case 9: return (tg_mask){.causal = true, .key_lens = LENS};
    case 10: return (tg_mask){.causal = true, .key_lens = LENS0, .window = 3, .additive = ADD};
    default: return (tg_mask){.key_keep = KKEEP, .keep = KEEP2, .additive = ADDINF};
    }
}
#define N_KINDS 12

#endif
