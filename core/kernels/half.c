/* tapegrad: float32 arrays rounded to bfloat16 / float16 values
 * (core/kernels/half.h), cloned per vector level (vmath.h). */
#include "half.h"

#include "vmath.h"

TG_SIMD_BODY void bf16_quantize_n_body(float *restrict dst, const float *restrict src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = tg_bf16_to_float(tg_bf16_from_float(src[i]));
}
TG_SIMD_CLONES(static, bf16_quantize_n, (float *restrict dst, const float *restrict src, size_t n), (dst, src, n))

void tg_half_quantize_n(float *dst, const float *src, size_t n, tg_dtype dt)
{
    if (dt == TG_BF16) bf16_quantize_n(dst, src, n);
    else
        for (size_t i = 0; i < n; i++) dst[i] = tg_f16_to_float(tg_f16_from_float(src[i]));
}
