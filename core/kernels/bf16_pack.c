/* tapegrad: bfloat16 operands packed into k-pair panels (see
 * core/kernels/bf16_pack.h). */
#include "bf16_pack.h"

#include <string.h>

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

/* A pair's dword holds the even k in its low half: on a little-endian CPU
 * the pairs of a run of k are that run's 16-bit values in order. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "pairs are stored as runs of 16-bit values");
typedef uint16_t u16_alias __attribute__((may_alias));

/* The 16 pairs of X[at, at + 32) into dst: 32 values, one vector. */
static inline void round_run(const void *X, bool f32, size_t at, u16_alias *restrict dst)
{
    for (int q = 0; q < 32; q++) dst[q] = src_at(X, f32, at + q);
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

/* Pairs [p0, full) of lines [l0, n) (full = kc/2 pairs lie inside the
 * block; l0 and p0 multiples of 16 and G) from X, element (l, k) at
 * X[k*ld + l] (kmajor) or X[l*ld + k], into the panels of w lines (line l
 * in panel l/w at dst + (l/w)*w*kp). Each loop reads X in the order it is
 * stored (a kmajor X row by row, across all panels: a column strip per
 * panel would touch a page per row), prefetching the next line or rows as
 * it goes (the operands are mostly activations written long before, out
 * of cache, and the hardware's prefetch does not run ahead across lines:
 * 10% of a bf16 GPT-2-style step), and its inner loop runs along
 * contiguous memory where the layout has it; compiled per vector level,
 * per source type and per G. */
TG_SIMD_BODY void pack_lines_any(const void *X, bool f32, int ld, bool kmajor, int l0, int n, int p0, int full, int kp,
                                 int w, int G, bool by_row, uint32_t *restrict dst)
{
    if (!kmajor)
        for (int l = l0; l < n; l++) {
            size_t line = (size_t)l * ld, step = by_row ? 1 : 16;
            uint32_t *d = dst + (size_t)(l / w) * w * kp;
            for (int pg = p0; pg < full; pg += G) {
                if (pg % 16 == 0) { /* the next line, in step: its start would stall */
                    const char *next = (const char *)X + (line + ld + 2 * (size_t)pg) * (f32 ? 4 : 2);
                    __builtin_prefetch(next), __builtin_prefetch(next + 64);
                }
                uint32_t *g = d + pair_index(l % w, pg, w, G, by_row);
                int pe = full - pg < G ? full - pg : G;
                size_t at = line + 2 * (size_t)pg;
                for (int p = 0; p < pe; p++) g[p * step] = pair_of(X, f32, at + 2 * p, at + 2 * p + 1);
            }
        }
    else
        for (int p = p0; p < full; p++) {
            size_t e = (size_t)2 * p * ld, step = by_row ? (size_t)G : 1;
            for (int l = l0, m; l < n; l += m) {
                int s = l % w; /* up to 16 lines at a time, inside one panel */
                m = n - l < 16 ? n - l : 16;
                m = w - s < m ? w - s : m;
                /* the next pair's two rows, in step */
                const char *next = (const char *)X + (e + 2 * (size_t)ld + l) * (f32 ? 4 : 2);
                __builtin_prefetch(next), __builtin_prefetch(next + (size_t)ld * (f32 ? 4 : 2));
                uint32_t *d = dst + (size_t)(l - s) * kp + pair_index(s, p, w, G, by_row);
                for (int i = 0; i < m; i++) d[i * step] = pair_of(X, f32, e + l + i, e + ld + l + i);
            }
        }
}

/* 16 dwords, one row of a 16 x 16 block (GCC and clang lower it to one
 * zmm register where the level has AVX-512). */
typedef uint32_t u32x16 __attribute__((vector_size(64)));

/* Rows r[i] and r[i+b] (for i with bit b clear) swap their off-diagonal
 * b x b blocks; done for b = 8, 4, 2, 1 that transposes the 16 x 16 block.
 * In the index lists, 16 + c is element c of r[i+b], c of r[i]. */
#define SWAP_STAGE(r, b)                                                         \
    for (int i = 0; i < 16; i++)                                                  \
        if (!(i & (b))) {                                                         \
            u32x16 lo = __builtin_shufflevector(r[i], r[i + (b)], SWAP_LO_##b);    \
            r[i + (b)] = __builtin_shufflevector(r[i], r[i + (b)], SWAP_HI_##b);   \
            r[i] = lo;                                                            \
        }
#define SWAP_LO_8 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23
#define SWAP_HI_8 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define SWAP_LO_4 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27
#define SWAP_HI_4 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define SWAP_LO_2 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29
#define SWAP_HI_2 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define SWAP_LO_1 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30
#define SWAP_HI_1 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31

/* dst[a*16 + b] = blk[b*16 + a]: 64 shuffles instead of 256 scattered stores. */
TG_SIMD_BODY void transpose16(const uint32_t *restrict blk, uint32_t *restrict dst)
{
    u32x16 r[16];
    memcpy(r, blk, sizeof r);
    SWAP_STAGE(r, 8) SWAP_STAGE(r, 4) SWAP_STAGE(r, 2) SWAP_STAGE(r, 1)
    memcpy(dst, r, sizeof r);
}

/* The whole 16 x 16 blocks (lines [0, n16) x pairs [0, f16)) with G = 16,
 * each one AMX tile: built from 16 runs in X's stored order (a line's 32
 * values, or two rows' 16 values interleaved), straight into the tile
 * where the layout runs the same way, else into blk and transposed (B
 * from a [N, K] X: every forward of a linear layer; A from a [K, M] X:
 * every weight grad), where storing line by line put every dword apart.
 * Prefetches the runs of the next block as it goes (see pack_lines_any). */
TG_SIMD_BODY void pack_tiles_any(const void *X, bool f32, int ld, bool kmajor, bool by_row, int n16, int f16, int kp,
                                 int w, uint32_t *restrict dst)
{
    uint32_t blk[256];
    size_t size = f32 ? 4 : 2;
    for (int outer = 0; outer < (kmajor ? f16 : n16); outer += 16)
        for (int inner = 0; inner < (kmajor ? n16 : f16); inner += 16) {
            int l = kmajor ? inner : outer, p = kmajor ? outer : inner;
            uint32_t *tile = dst + (size_t)(l / w) * w * kp + pair_index(l % w, p, w, 16, by_row);
            uint32_t *b = kmajor == by_row ? blk : tile; /* b[i*16 + j]: run i's dword j */
            for (int i = 0; i < 16; i++)
                if (!kmajor) { /* line l+i's pairs p.. */
                    size_t at = (size_t)(l + i) * ld + 2 * (size_t)p;
                    __builtin_prefetch((const char *)X + (at + 64) * size);
                    round_run(X, f32, at, (u16_alias *)b + 32 * i);
                } else {       /* pair p+i of lines l.. */
                    size_t e = (size_t)2 * (p + i) * ld + l;
                    __builtin_prefetch((const char *)X + (e + 32) * size);
                    __builtin_prefetch((const char *)X + (e + ld + 32) * size);
                    for (int j = 0; j < 16; j++) b[i * 16 + j] = pair_of(X, f32, e + j, e + ld + j);
                }
            if (b == blk) transpose16(blk, tile);
        }
}

#define PACK_PARAMS \
    (const void *X, int ld, bool kmajor, int l0, int n, int p0, int full, int kp, int w, bool by_row, uint32_t *dst)
#define PACK_ARGS (X, ld, kmajor, l0, n, p0, full, kp, w, by_row, dst)
TG_SIMD_BODY void pack_half1_body PACK_PARAMS { pack_lines_any(X, false, ld, kmajor, l0, n, p0, full, kp, w, 1, by_row, dst); }
TG_SIMD_BODY void pack_float1_body PACK_PARAMS { pack_lines_any(X, true, ld, kmajor, l0, n, p0, full, kp, w, 1, by_row, dst); }
TG_SIMD_BODY void pack_half16_body PACK_PARAMS { pack_lines_any(X, false, ld, kmajor, l0, n, p0, full, kp, w, 16, by_row, dst); }
TG_SIMD_BODY void pack_float16_body PACK_PARAMS { pack_lines_any(X, true, ld, kmajor, l0, n, p0, full, kp, w, 16, by_row, dst); }
TG_SIMD_CLONES(static, pack_half1, PACK_PARAMS, PACK_ARGS)
TG_SIMD_CLONES(static, pack_float1, PACK_PARAMS, PACK_ARGS)
TG_SIMD_CLONES(static, pack_half16, PACK_PARAMS, PACK_ARGS)
TG_SIMD_CLONES(static, pack_float16, PACK_PARAMS, PACK_ARGS)
#define TILES_PARAMS (const void *X, int ld, bool kmajor, bool by_row, int n16, int f16, int kp, int w, uint32_t *dst)
#define TILES_ARGS (X, ld, kmajor, by_row, n16, f16, kp, w, dst)
TG_SIMD_BODY void pack_tiles_half_body TILES_PARAMS { pack_tiles_any(X, false, ld, kmajor, by_row, n16, f16, kp, w, dst); }
TG_SIMD_BODY void pack_tiles_float_body TILES_PARAMS { pack_tiles_any(X, true, ld, kmajor, by_row, n16, f16, kp, w, dst); }
TG_SIMD_CLONES(static, pack_tiles_half, TILES_PARAMS, TILES_ARGS)
TG_SIMD_CLONES(static, pack_tiles_float, TILES_PARAMS, TILES_ARGS)

void tg_bf16_pack(tg_bf16_src X, int ld, bool kmajor, int r0, int n, int k0, int kc, int kp, int w, int G,
                  bool by_row, uint32_t *dst)
{
    int full = kc / 2;
    size_t size = X.f32 ? sizeof(float) : sizeof(uint16_t), at = kmajor ? (size_t)k0 * ld + r0 : (size_t)r0 * ld + k0;
    void (*pack)PACK_PARAMS = G == 16 ? (X.f32 ? pack_float16 : pack_half16) : X.f32 ? pack_float1 : pack_half1;
    const char *x = (const char *)X.p + at * size;
    if (G == 16 && w % 16 == 0) { /* by tiles, then what is left of the lines and pairs */
        int n16 = n / 16 * 16, f16 = full / 16 * 16;
        (X.f32 ? pack_tiles_float : pack_tiles_half)(x, ld, kmajor, by_row, n16, f16, kp, w, dst);
        pack(x, ld, kmajor, 0, n16, f16, full, kp, w, by_row, dst); /* the pairs past the blocks */
        pack(x, ld, kmajor, n16, n, 0, full, kp, w, by_row, dst);   /* the lines past them */
    } else
        pack(x, ld, kmajor, 0, n, 0, full, kp, w, by_row, dst);
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

