/* The mask cases the softmax and attention suites share: every part of
 * tg_mask alone, then combinations, for scores [B_ = 2, H_ = 2, LQ = 4, LK = 5].
 * The masks' tensors are heap tensors made once per process from the arrays
 * below (mc_tensor). */
#ifndef TAPEGRAD_MASK_CASES_H
#define TAPEGRAD_MASK_CASES_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <tapegrad/tapegrad.h>

enum { B_ = 2, H_ = 2, LQ = 4, LK = 5 };
static const int32_t LENS[B_] = {3, 5};
static const int32_t LENS0[B_] = {0, 4};                 /* batch 0 fully masked */
static const uint8_t KPAD[B_ * LK] = {0, 1, 0, 0, 1, 1, 0, 0, 0, 0};  /* true = ignore */
static const uint8_t DENY2[LQ * LK] = {0, 0, 1, 1, 0, 1, 0, 0, 1, 1,  /* true = not allowed */
                                       0, 1, 0, 1, 0, 0, 0, 0, 0, 1};
static const uint8_t DENYB[B_ * LQ * LK] = {0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0,
                                            1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 1, 1, 0};
/* per head, plane b*H + h: the heads of a batch element differ */
static const uint8_t DENYH[B_ * H_ * LQ * LK] = {
    0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0,
    1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0,
    0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1, 1,
    1, 1, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 1};
static const tg_real ADD[LQ * LK] = {0.5, -1, 0, 0.25, -0.5, 1, 0, -2, 0.1, 0,
                                     -0.3, 0.2, 0, 1.5, -1, 0, 0, 0.7, -0.7, 0.4};
static const tg_real ADDINF[LQ * LK] = {0, -INFINITY, 0.5, 0, -INFINITY, -INFINITY, -INFINITY,
                                        -INFINITY, -INFINITY, -INFINITY, 1, 0, -INFINITY, -1, 0,
                                        0, 0.3, 0, -INFINITY, 0};
static const tg_real ADDH[B_ * H_ * LQ * LK] = {
    0.5, -INFINITY, 0, 0.25, -0.5, 1, 0, -2, 0.1, 0, -0.3, 0.2, 0, 1.5, -1, 0, 0, 0.7, -0.7, 0.4,
    -INFINITY, 0.3, 1, 0, -0.2, 0, -1, 0.5, -INFINITY, 0.6, 0.1, 0, 0, -0.4, 2, -INFINITY, -INFINITY, 0, 0.2, 0,
    0, 0.5, -0.5, 1, 0, -1, 0.2, 0.3, 0, 0.1, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, 0.9, 0, 0, -1, 0,
    0.4, 0.4, 0, -0.6, 0, 0, 1.2, -INFINITY, 0, 0.5, -0.1, 0, 0.3, 0, -0.8, 0.7, 0, -INFINITY, 0.1, 0};
static const tg_real KPADD[B_ * LK] = {0.3, -INFINITY, 0, -0.5, 1, -1, 0.2, 0, -INFINITY, 0.4};

/* A heap tensor of dtype dt holding src (of dtype src_dt) in shape, made once
 * per (src, dt) and kept for the process. */
static inline tg_tensor *mc_tensor(tg_dtype dt, const void *src, tg_dtype src_dt, int ndim, const int *shape)
{
    static struct { const void *src; tg_dtype dt; tg_tensor *x; } made[32];
    static int n_made;
    for (int k = 0; k < n_made; k++) {
        bool same = made[k].src == src && made[k].dt == dt && made[k].x->ndim == ndim;
        for (int d = 0; same && d < ndim; d++) same = made[k].x->shape[d] == shape[d];
        if (same) return made[k].x;
    }
    tg_tensor *x = tg_tensor_alloc_dtype(dt, ndim, shape);
    if (!x || n_made == 32) abort();
    for (size_t i = 0; i < x->size; i++) tg_dtype_store(dt, x->data, i, tg_dtype_load(src_dt, src, i));
    made[n_made++] = (__typeof__(made[0])){src, dt, x};
    return x;
}
#define MC_I32(a) mc_tensor(TG_I32, a, TG_I32, 1, (int[]){B_})
#define MC_BOOL(a, ...) mc_tensor(TG_BOOL, a, TG_U8, sizeof((int[]){__VA_ARGS__}) / sizeof(int), (int[]){__VA_ARGS__})
#define MC_REAL(a, ...) mc_tensor(TG_REAL_DTYPE, a, TG_REAL_DTYPE, sizeof((int[]){__VA_ARGS__}) / sizeof(int), \
                                  (int[]){__VA_ARGS__})
#ifdef TAPEGRAD_DOUBLE
#define MC_OTHER TG_F32
#else
#define MC_OTHER TG_F64
#endif

/* One mask per part, then combinations; each used for values and gradchecks. */
static inline tg_mask mask_kind(int kind)
{
    switch (kind) {
    case 0: return (tg_mask){.causal = true};
    case 1: return (tg_mask){.key_lens = MC_I32(LENS)};
    case 2: return (tg_mask){.key_padding = MC_BOOL(KPAD, B_, LK)};
    case 3: return (tg_mask){.window = 2};
    case 4: return (tg_mask){.window = 2, .causal = true};
    case 5: return (tg_mask){.attn = MC_BOOL(DENY2, LQ, LK)};
    case 6: return (tg_mask){.attn = MC_BOOL(DENYB, B_, LQ, LK)};
    case 7: return (tg_mask){.attn = MC_REAL(ADD, LQ, LK)};
    case 8: return (tg_mask){.attn = MC_REAL(ADDINF, LQ, LK)};
    case 9: return (tg_mask){.causal = true, .key_lens = MC_I32(LENS)};
    case 10: return (tg_mask){.causal = true, .key_lens = MC_I32(LENS0), .window = 3, .attn = MC_REAL(ADD, LQ, LK)};
    case 11: return (tg_mask){.key_padding = MC_BOOL(KPAD, B_, LK), .attn = MC_REAL(ADDINF, LQ, LK)};
    case 12: return (tg_mask){.attn = MC_BOOL(DENYH, B_ * H_, LQ, LK)};             /* per head, 3-D */
    case 13: return (tg_mask){.attn = MC_REAL(ADDH, B_, H_, LQ, LK)};               /* per head, 4-D */
    case 14: return (tg_mask){.causal = true, .key_padding = MC_REAL(KPADD, B_, LK)};  /* float padding */
    case 15: return (tg_mask){.key_lens = mc_tensor(TG_I64, LENS, TG_I32, 1, (int[]){B_}),
                              .key_padding = MC_REAL(KPADD, B_, LK), .attn = MC_BOOL(DENYH, B_, H_, LQ, LK)};
    default: return (tg_mask){.key_padding = MC_REAL(KPADD, B_, LK),  /* the other float type, converted */
                              .attn = mc_tensor(MC_OTHER, ADDH, TG_REAL_DTYPE, 3, (int[]){B_ * H_, LQ, LK})};
    }
}
#define N_KINDS 17

/* ---- independent references (double, straight from the rules in mask.h) -- */

#define MAXK 64

/* The element of attn a for plane (b, h) of scores [B, H, ., .], query i, key j. */
static inline double ref_attn(const tg_tensor *a, int B, int H, int b, int h, int i, int j, int Lk)
{
    int Lq = a->shape[a->ndim - 2];
    size_t plane = a->ndim == 2 ? 0 : a->ndim == 4 || a->shape[0] == B * H ? (size_t)b * H + h : (size_t)b;
    return tg_dtype_load(a->dtype, a->data, (plane * Lq + i) * Lk + j);
}

static inline bool ref_visible(const tg_mask *m, int B, int H, int b, int h, int i, int j, int Lk)
{
    if (!m) return true;
    if (m->causal && j > i) return false;
    if (m->key_lens && j >= tg_dtype_load(m->key_lens->dtype, m->key_lens->data, b)) return false;
    const tg_tensor *kp = m->key_padding, *a = m->attn;
    double p = kp ? tg_dtype_load(kp->dtype, kp->data, (size_t)b * Lk + j) : 0;
    if (kp && (kp->dtype == TG_BOOL ? p != 0 : p == -INFINITY)) return false;
    if (m->window > 0 && abs(i - j) >= m->window) return false;
    double v = a ? ref_attn(a, B, H, b, h, i, j, Lk) : 0;
    if (a && (a->dtype == TG_BOOL ? v != 0 : v == -INFINITY)) return false;
    return true;
}

/* What the mask's float parts add to a visible score. */
static inline double ref_added(const tg_mask *m, int B, int H, int b, int h, int i, int j, int Lk)
{
    double s = 0;
    if (m && m->attn && m->attn->dtype != TG_BOOL) s += ref_attn(m->attn, B, H, b, h, i, j, Lk);
    if (m && m->key_padding && m->key_padding->dtype != TG_BOOL)
        s += tg_dtype_load(m->key_padding->dtype, m->key_padding->data, (size_t)b * Lk + j);
    return s;
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

/* Reference weights w and visibility of query row i of plane (b, h) of
 * scores [B, H, ., Lk], from the raw scores (the op's input, or q.k) times
 * scale plus the mask's float parts. */
static inline void ref_weights(const tg_mask *m, int B, int H, int b, int h, int i, int Lk, const double *raw,
                               double scale, double *w, bool *vis)
{
    double s[MAXK];
    for (int j = 0; j < Lk; j++) {
        vis[j] = ref_visible(m, B, H, b, h, i, j, Lk);
        s[j] = raw[j] * scale + (vis[j] ? ref_added(m, B, H, b, h, i, j, Lk) : 0);
    }
    ref_softmax_row(s, vis, Lk, w);
}

#endif
