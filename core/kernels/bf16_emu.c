/* tapegrad: Intel's bfloat16 dot-product instructions in scalar code (see
 * core/kernels/bf16_emu.h), each step as the SDM's Operation text
 * defines it. */
#include "bf16_emu.h"

#include <math.h>
#include <string.h>

#include "half.h"

/* A float32 input with DAZ: a denormal (exponent bits zero) is a zero of
 * its sign. */
static float daz(float x)
{
    uint32_t u = tg_float_bits(x);
    return (u & 0x7F800000u) == 0 ? tg_bits_float(u & 0x80000000u) : x;
}

/* make_fp32: the bfloat16 as the top half of a float32, then DAZ. */
static float bf16_in(uint32_t h)
{
    return tg_bits_float((h & 0x7F80u) == 0 ? (h & 0x8000u) << 16 : h << 16);
}

/* One step, srcdest += x * y for bfloat16 values x, y (after DAZ): the
 * exact acc + x y rounded once to nearest even, FTZ on the result. The
 * product is exact in double (8 significant bits each); the double sum, when
 * inexact (TwoSum's error e), is rounded to odd, which keeps its order
 * against any double of fewer bits and makes rounding it to float32 round
 * once (53 >= 24 + 2 bits): without the flush it gave fmaf's bits on 2e8
 * random triples, denormal results included. Tiny (flushed to a zero of
 * the true result's sign) is the SDM's vol. 1 4.9.1.5 "result of rounding
 * with unbounded exponent is non-zero and ... less than the smallest
 * possible normalized" value: |exact| < 2^-126 (1 - 2^-25), half of
 * float32's last spacing below 2^-126 (a tie there rounds up to 2^-126). */
static float dpbf16_step(float acc, float x, float y)
{
    double a = acc, p = (double)x * y, s = a + p, pb = s - a, e = (a - (s - pb)) + (p - pb);
    if (e != 0 && isfinite(s)) {
        uint64_t u;
        memcpy(&u, &s, 8);
        if (!(u & 1)) u += (e > 0) == (s > 0) ? 1 : (uint64_t)-1;
        memcpy(&s, &u, 8);
    }
    float r = (float)s;
    return fabs(s) < 0x1.ffffffp-127 ? copysignf(0.0f, r) : r;
}

/* The NaN the instruction gives when its result is NaN (the SDM's NaN
 * propagation table): the first NaN among src1 low, src2 low, src1 high,
 * src2 high and srcdest, quieted; with none (inf * 0, inf - inf) the default
 * NaN, FFC00000h. */
static float dpbf16_nan(float acc, uint32_t x, uint32_t y)
{
    uint32_t in[5] = {tg_float_bits(bf16_in(x & 0xFFFFu)), tg_float_bits(bf16_in(y & 0xFFFFu)),
                      tg_float_bits(bf16_in(x >> 16)), tg_float_bits(bf16_in(y >> 16)), tg_float_bits(acc)};
    for (int i = 0; i < 5; i++)
        if ((in[i] & 0x7FFFFFFFu) > 0x7F800000u) return tg_bits_float(in[i] | 0x00400000u);
    return tg_bits_float(0xFFC00000u);
}

/* One lane of VDPBF16PS srcdest, src1, src2 as Intel's SDM (vol. 2C,
 * "VDPBF16PS - Dot Product of BF16 Pairs Accumulated Into Packed Single
 * Precision") defines it; x and y are the lane's dwords of src1 and src2
 * (t). Its Operation reads:
 *     // FP32 FMA with daz in, ftz out and RNE rounding. MXCSR neither
 *     // consulted nor updated.
 *     srcdest.fp32[ i ] += make_fp32(src1.bfloat16[2*i+1]) * make_fp32(t.bfloat[1])
 *     srcdest.fp32[ i ] += make_fp32(src1.bfloat16[2*i+0]) * make_fp32(t.bfloat[0])
 * and its Description: "Round to nearest even rounding mode is used when
 * doing each accumulation of the FMA. Output denormals are always flushed
 * to zero and input denormals are always treated as zero." So: the odd
 * (high-word) product first, then the even one; each statement one fused
 * multiply-add into the float32 register (dpbf16_step), so the flush
 * applies to the intermediate sum too; DAZ on every input, srcdest
 * included; round to nearest even whatever the caller's rounding mode (this
 * file never changes it). Not settled by the text and not checked on
 * hardware: what "denormal" means for the flush (dpbf16_step takes vol. 1's
 * tininess, after rounding with unbounded exponent; judged on the float32
 * denormal grid instead, exact sums within (2^-151, 2^-150] below 2^-126
 * would give 2^-126, not 0). NaN: dpbf16_nan. */
float tg_emu_dpbf16(float acc, uint32_t x, uint32_t y)
{
    float r = dpbf16_step(daz(acc), bf16_in(x >> 16), bf16_in(y >> 16));
    r = dpbf16_step(r, bf16_in(x & 0xFFFFu), bf16_in(y & 0xFFFFu));
    return isnan(r) ? dpbf16_nan(acc, x, y) : r;
}

/* TDPBF16PS c, a, b as Intel's SDM (vol. 2C, "TDPBF16PS - Dot Product of
 * BF16 Tiles Accumulated into Packed Single Precision Tile") defines it;
 * its Operation, for tiles of 16 rows and 64 bytes (elements_src1 =
 * elements_dest = 16):
 *     for m in 0 ... tsrcdest.rows-1:
 *         temp1[ 0 ... elements_temp-1 ] := 0
 *         for k in 0 ... elements_src1-1:
 *             for n in 0 ... elements_dest-1:
 *                 // FP32 FMA with DAZ=FTZ=1, RNE rounding.
 *                 // MXCSR is neither consulted nor updated.
 *                 // No exceptions raised or denoted.
 *                 temp1.fp32[2*n+0] += make_fp32(tsrc1.row[m].bfloat16[2*k+0]) * make_fp32(tsrc2.row[k].bfloat16[2*n+0])
 *                 temp1.fp32[2*n+1] += make_fp32(tsrc1.row[m].bfloat16[2*k+1]) * make_fp32(tsrc2.row[k].bfloat16[2*n+1])
 *         for n in 0 ... elements_dest-1:
 *             // DAZ=FTZ=1, RNE rounding.
 *             // MXCSR is neither consulted nor updated.
 *             // No exceptions raised or denoted.
 *             tmpf32 := temp1.fp32[2*n] + temp1.fp32[2*n+1]
 *             tsrcdest.row[m].fp32[n] := tsrcdest.row[m].fp32[n] + tmpf32
 * and its Description: "Round to nearest even rounding mode is used when
 * doing each accumulation of the FMA. Output denormals are always flushed
 * to zero and input denormals are always treated as zero."
 * So, unlike VDPBF16PS (one sum per lane, odd product first), per element:
 * the even products and the odd ones in two sums, each started at zero in
 * the instruction and fed its 16 products in k order (each step an FMA
 * rounded once, FTZ: dpbf16_step); then even + odd, then that added to the
 * destination (DAZ on it), each rounded once and flushed. Neither product
 * comes "first"; what sets the bits is the two separate sums and that the
 * destination joins only at the end (the intrinsics guide's pseudo-code,
 * which adds both products to the destination in turn, disagrees; this
 * follows the SDM). Denormal flush: dpbf16_step's reading of "denormal".
 * NaN: the SDM gives no propagation rule for this instruction; the
 * emulation gives the default NaN (FFC00000h), which hardware may not:
 * tests/test_gemm_half.c checks that NaN and infinity reach C on every
 * kernel (AMX hardware included), not the payload. */
void tg_emu_tdpbf16(tg_emu_tile *c, const tg_emu_tile *a, const tg_emu_tile *b)
{
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            float even = 0, odd = 0;
            for (int k = 0; k < 16; k++) {
                uint32_t x = a->d[m][k], y = b->d[k][n];
                even = dpbf16_step(even, bf16_in(x & 0xFFFFu), bf16_in(y & 0xFFFFu));
                odd = dpbf16_step(odd, bf16_in(x >> 16), bf16_in(y >> 16));
            }
            float r = dpbf16_step(daz(tg_bits_float(c->d[m][n])), dpbf16_step(even, odd, 1.0f), 1.0f);
            c->d[m][n] = isnan(r) ? 0xFFC00000u : tg_float_bits(r);
        }
}
