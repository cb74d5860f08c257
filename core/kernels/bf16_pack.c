/* tapegrad: bfloat16 operands packed into k-pair panels (see
 * core/kernels/bf16_pack.h). */
#include "bf16_pack.h"

#include "half.h"
#include "vmath.h"

static inline uint16_t src_at(const void *X, bool f32, size_t i)
{
    return f32 ? tg_bf16_from_float(((const float *)X)[i]) : ((const uint16_t *)X)[i];
}

static inline uint32_t pair_of(const void *X, bool f32, size_t even, size_t odd)
{
    return (uint32_t)src_at(X, f32, even) | (uint32_t)src_at(X, f32, odd) << 16;
}

/* The k-pair dword of line r (a row of op(A), a column of op(B)) at k, k+1
 * of X, where element (r, k) is X[k*ld + r] (kmajor) or X[r*ld + k]; the
 * odd half zero past kend. */
static uint32_t pair_at(tg_bf16_src X, int ld, bool kmajor, size_t r, size_t k, size_t kend)
{
    uint32_t e = src_at(X.p, X.f32, kmajor ? k * ld + r : r * ld + k), o = 0;
    if (k + 1 < kend) o = src_at(X.p, X.f32, kmajor ? (k + 1) * ld + r : r * ld + k + 1);
    return e | o << 16;
}

/* Where pair p of line l of a panel goes (the layout: bf16_pack.h). */
static inline size_t pair_index(int l, int p, int w, int G, bool by_row)
{
    size_t block = (size_t)(p / G) * w * G + (size_t)(l / 16) * 16 * G;
    return block + (by_row ? (size_t)(l % 16) * G + p % G : (size_t)(p % G) * 16 + l % 16);
}

/* Pairs [0, full) of lines [0, n) (full = kc/2 pairs lie inside the
 * block) from X, element (l, k) at X[k*ld + l] (kmajor) or X[l*ld + k],
 * into the panels of w lines (line l in panel l/w at dst + (l/w)*w*kp).
 * Each loop reads X in the order it is stored (a kmajor X row by row,
 * across all panels: a column strip per panel would touch a page per row),
 * prefetching the next line or rows as it goes (the operands are mostly
 * activations written long before, out of cache, and the hardware's
 * prefetch does not run ahead across lines: 10% of a bf16 GPT-2-style
 * step), and its inner loop runs along contiguous memory where the layout
 * has it; compiled per vector level, per source type and per G. */
TG_SIMD_BODY void pack_lines_any(const void *X, bool f32, int ld, bool kmajor, int n, int full, int kp, int w, int G,
                                 bool by_row, uint32_t *restrict dst)
{
    if (!kmajor)
        for (int l = 0; l < n; l++) {
            size_t line = (size_t)l * ld, step = by_row ? 1 : 16;
            uint32_t *d = dst + (size_t)(l / w) * w * kp;
            for (int p0 = 0; p0 < full; p0 += G) {
                if (p0 % 16 == 0) { /* the next line, in step: its start would stall */
                    const char *next = (const char *)X + (line + ld + 2 * (size_t)p0) * (f32 ? 4 : 2);
                    __builtin_prefetch(next), __builtin_prefetch(next + 64);
                }
                uint32_t *g = d + pair_index(l % w, p0, w, G, by_row);
                int pe = full - p0 < G ? full - p0 : G;
                for (int p = 0; p < pe; p++) g[p * step] = pair_of(X, f32, line + 2 * (p0 + p), line + 2 * (p0 + p) + 1);
            }
        }
    else
        for (int p = 0; p < full; p++) {
            size_t e = (size_t)2 * p * ld, step = by_row ? (size_t)G : 1;
            for (int q = 0; q < n; q += w)
                for (int s = 0; s < w && q + s < n; s += 16) {
                    /* the next pair's two rows, in step */
                    const char *next = (const char *)X + (e + 2 * (size_t)ld + q + s) * (f32 ? 4 : 2);
                    __builtin_prefetch(next), __builtin_prefetch(next + (size_t)ld * (f32 ? 4 : 2));
                    uint32_t *d = dst + (size_t)q * kp + pair_index(s, p, w, G, by_row);
                    int m = n - q - s < 16 ? n - q - s : 16;
                    m = w - s < m ? w - s : m;
                    for (int l = 0; l < m; l++) d[l * step] = pair_of(X, f32, e + q + s + l, e + ld + q + s + l);
                }
        }
}
#define PACK_PARAMS \
    (const void *X, int ld, bool kmajor, int n, int full, int kp, int w, bool by_row, uint32_t *dst)
#define PACK_ARGS (X, ld, kmajor, n, full, kp, w, by_row, dst)
TG_SIMD_BODY void pack_half1_body PACK_PARAMS { pack_lines_any(X, false, ld, kmajor, n, full, kp, w, 1, by_row, dst); }
TG_SIMD_BODY void pack_float1_body PACK_PARAMS { pack_lines_any(X, true, ld, kmajor, n, full, kp, w, 1, by_row, dst); }
TG_SIMD_BODY void pack_half16_body PACK_PARAMS { pack_lines_any(X, false, ld, kmajor, n, full, kp, w, 16, by_row, dst); }
TG_SIMD_BODY void pack_float16_body PACK_PARAMS { pack_lines_any(X, true, ld, kmajor, n, full, kp, w, 16, by_row, dst); }
TG_SIMD_CLONES(static, pack_half1, PACK_PARAMS, PACK_ARGS)
TG_SIMD_CLONES(static, pack_float1, PACK_PARAMS, PACK_ARGS)
TG_SIMD_CLONES(static, pack_half16, PACK_PARAMS, PACK_ARGS)
TG_SIMD_CLONES(static, pack_float16, PACK_PARAMS, PACK_ARGS)

void tg_bf16_pack(tg_bf16_src X, int ld, bool kmajor, int r0, int n, int k0, int kc, int kp, int w, int G,
                  bool by_row, uint32_t *dst)
{
    int full = kc / 2;
    size_t size = X.f32 ? sizeof(float) : sizeof(uint16_t), at = kmajor ? (size_t)k0 * ld + r0 : (size_t)r0 * ld + k0;
    void (*pack)PACK_PARAMS = G == 16 ? (X.f32 ? pack_float16 : pack_half16) : X.f32 ? pack_float1 : pack_half1;
    pack((const char *)X.p + at * size, ld, kmajor, n, full, kp, w, by_row, dst);
    for (int q = 0; q < n; q += w, dst += (size_t)w * kp) {
        int m = n - q < w ? n - q : w;
        size_t line = (size_t)(r0 + q);
        /* the odd pair, the zero pairs past the block, the zero lines */
        for (int p = full; p < kp; p++)
            for (int l = 0; l < w; l++)
                dst[pair_index(l, p, w, G, by_row)] =
                    l < m && 2 * p < kc ? pair_at(X, ld, kmajor, line + l, (size_t)(k0 + 2 * p), (size_t)(k0 + kc))
                                        : 0;
        for (int p = 0; p < full; p++)
            for (int l = m; l < w; l++) dst[pair_index(l, p, w, G, by_row)] = 0;
    }
}

