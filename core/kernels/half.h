/* tapegrad internal: float32 <-> bfloat16 / float16 element conversions, fast
 * and bit-exact with core/engine/dtype.c's tg_half_from_double /
 * tg_half_to_double (round to nearest even, NaN quiet, overflow to inf). */
#ifndef TAPEGRAD_HALF_H
#define TAPEGRAD_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../engine/dtype.h"

/* A float32's bits, and the float32 of some bits. */
static inline uint32_t tg_float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float tg_bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* bfloat16 is the top half of a float32: widening appends 16 zero bits. */
static inline float tg_bf16_to_float(uint16_t h) { return tg_bits_float((uint32_t)h << 16); }

/* Round to nearest even on the 16 dropped bits; a carry runs into the
 * exponent (the largest floats round to inf). NaN keeps its sign, quiet. */
static inline uint16_t tg_bf16_from_float(float f)
{
    /* both results, then a select: no branch, so loops of it vectorize */
    uint32_t u = tg_float_bits(f), rounded = (u + 0x7fffu + (u >> 16 & 1u)) >> 16,
             nan = (u >> 16 & 0x8000u) | 0x7fc0u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/* binary16: sign, 5 exponent bits (bias 15), 10 mantissa bits. */
static inline float tg_f16_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = h >> 10 & 0x1fu, man = h & 0x3ffu, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | man << 13;  /* inf, NaN (payload kept) */
    } else if (exp != 0) {
        u = sign | (exp + 112) << 23 | man << 13;  /* 112 = 127 - 15 */
    } else {
        u = sign | tg_float_bits((float)man * 0x1p-24f);  /* zero, subnormal: exact */
    }
    return tg_bits_float(u);
}

/* Round to nearest even, in the bits: a normal result drops 13 mantissa
 * bits and rebiases the exponent (a carry runs into it, up to inf); below
 * 2^-14 the result is the subnormal's integer multiple of 2^-24, x 2^24
 * (exact) rounded to an integer by adding and taking away 2^23 in float32
 * arithmetic (round to nearest even). From 65520 (halfway between 65504 and
 * 2^16) up: inf. NaN: the quiet NaN 7E00h with x's sign. tg_half_from_double's
 * results for every float32 (tests/test_gemm_half.c), without its libm
 * calls. */
static inline uint16_t tg_f16_from_float(float f)
{
    uint32_t u = tg_float_bits(f), a = u & 0x7fffffffu;
    uint16_t sign = (uint16_t)(u >> 16 & 0x8000u);
    if (a > 0x7f800000u) return sign | 0x7e00u;
    if (a >= 0x477ff000u) return sign | 0x7c00u;
    if (a < 0x38800000u) return sign | (uint16_t)((tg_bits_float(a) * 0x1p24f + 0x1p23f) - 0x1p23f);
    return sign | (uint16_t)((a + 0xfffu + (a >> 13 & 1u) - 0x38000000u) >> 13);
}

static inline float tg_half_to_float(uint16_t h, tg_dtype dt)
{
    return dt == TG_BF16 ? tg_bf16_to_float(h) : tg_f16_to_float(h);
}

static inline uint16_t tg_half_from_float(float f, tg_dtype dt)
{
    return dt == TG_BF16 ? tg_bf16_from_float(f) : tg_f16_from_float(f);
}

/* dst[i] = src[i] widened / rounded, i < n; dt is TG_BF16 or TG_F16. */
static inline void tg_half_widen_n(float *dst, const uint16_t *src, size_t n, tg_dtype dt)
{
    if (dt == TG_BF16)
        for (size_t i = 0; i < n; i++) dst[i] = tg_bf16_to_float(src[i]);
    else
        for (size_t i = 0; i < n; i++) dst[i] = tg_f16_to_float(src[i]);
}

/* dst[i] = src[i] rounded to dt and widened back: the float32 that
 * tg_half_to_float(tg_half_from_float(src[i], dt), dt) gives, in one pass at
 * the CPU's vector width (core/kernels/half.c): the operands of every
 * autocast product that no bfloat16 kernel packs pass here. */
void tg_half_quantize_n(float *dst, const float *src, size_t n, tg_dtype dt);

#endif
