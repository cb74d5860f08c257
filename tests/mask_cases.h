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

/* ---- independent references (double, straight from the rules in mask.h) -- */

#define MAXK 64

static inline bool ref_visible(const tg_mask *m, int b, int i, int j, int Lq, int Lk)
{
    if (!m) return true;
    if (m->causal && j > i) return false;
    if (m->key_lens && j >= m->key_lens[b]) return false;
    if (m->key_keep && !m->key_keep[b * Lk + j]) return false;
    if (m->window > 0 && abs(i - j) >= m->window) return false;
    if (m->keep && !m->keep[m->keep_batched ? (b * Lq + i) * Lk + j : i * Lk + j]) return false;
    if (m->additive && m->additive[i * Lk + j] == -INFINITY) return false;
    return true;
}

/* w = softmax of s over the visible entries; all zeros when none is. */
static inline void ref_softmax_row(const double *s, const bool *vis, int n, double *w)
{
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < n; j++)
        if (vis[j] && s[j] > mx) mx = s[j];
    for (int j = 0; j < n; j++) {
        w[j] = vis[j] && mx > -INFINITY ? exp(s[j] - mx) : 0;
        sum += w[j];
    }
    for (int j = 0; j < n; j++) w[j] = sum > 0 ? w[j] / sum : 0;
}

/* Reference weights w and visibility of query row i of batch b, from the raw
 * scores (the op's input, or q.k) times scale plus additive. */
static inline void ref_weights(const tg_mask *m, int b, int i, int Lq, int Lk, const double *raw,
                        double scale, double *w, bool *vis)
{
    double s[MAXK];
    for (int j = 0; j < Lk; j++) {
        vis[j] = ref_visible(m, b, i, j, Lq, Lk);
        s[j] = raw[j] * scale + (m && m->additive && vis[j] ? m->additive[i * Lk + j] : 0);
    }
    ref_softmax_row(s, vis, Lk, w);
}

enum { H_ = 2 };

#endif
