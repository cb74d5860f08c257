/* tapegrad internal: vectorised loops. The SIMD levels a hot loop is
 * compiled for; eight running sums as one vector (tg_lanes8); and exp, the
 * sigmoid and the normal CDF as inline, branch-free functions, so the
 * elementwise loops that call them vectorize (a libm call in a loop stops
 * GCC from vectorizing it). The float build uses the polynomials below; the
 * double build, which checks gradients, keeps libm. */
#ifndef TAPEGRAD_VMATH_H
#define TAPEGRAD_VMATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../engine/tensor.h"

/* The hot loops are compiled three times (AVX-512, AVX2, baseline x86-64:
 * 4 to 16 lanes instead of always 4) and run at one level, chosen once: the
 * best this CPU has, or a lower one that TAPEGRAD_SIMD (base, avx2, avx512)
 * or tg_simd_set asks for (tests run every level). No level contracts a*b+c
 * into an FMA (-ffp-contract=off, docs/DESIGN.md), so every level gives the
 * same bits. Elsewhere (aarch64, clang, TG_NO_IFUNC: the ThreadSanitizer
 * build) there is the baseline only.
 *
 * A cloned loop is its body, TG_SIMD_BODY void name_body(params), then
 * TG_SIMD_CLONES(storage, name, (params), (args)), which defines
 * `storage void name(params)` running the body at the chosen level. */
typedef enum tg_simd { TG_SIMD_BASE, TG_SIMD_AVX2, TG_SIMD_AVX512 } tg_simd;
tg_simd tg_simd_get(void);
const char *tg_simd_name(tg_simd level);
/* Forces a level (tests, benchmarks); false, and nothing changes, when this
 * CPU (or this build) cannot run it. Not while other threads run ops. */
bool tg_simd_set(tg_simd level);

#define TG_SIMD_BODY static inline __attribute__((always_inline))
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && !defined(TG_NO_IFUNC)
#define TG_SIMD_BUILT 1
#define TG_SIMD_CLONES(storage, name, params, args)                                        \
    __attribute__((target("arch=x86-64-v4"))) static void name##_v4 params { name##_body args; } \
    __attribute__((target("arch=x86-64-v3"))) static void name##_v3 params { name##_body args; } \
    storage void name params                                                                \
    {                                                                                       \
        tg_simd l_ = tg_simd_get();                                                         \
        if (l_ == TG_SIMD_AVX512) name##_v4 args;                                           \
        else if (l_ == TG_SIMD_AVX2) name##_v3 args;                                        \
        else name##_body args;                                                              \
    }
#else
#define TG_SIMD_BUILT 0
#define TG_SIMD_CLONES(storage, name, params, args) \
    storage void name params { name##_body args; }
#endif

/* Eight running sums side by side as one value (GCC's vector extension:
 * one zmm, two ymm or four xmm). Written lane by lane (s[k] += x[j + k]),
 * such loops stayed scalar code under GCC 12, eight separate chains of
 * scalar adds; as vectors they are the same operations lane by lane, so the
 * same bits. tg_lanes8d: the same in double, for sums of float rows. */
typedef tg_real tg_lanes8 __attribute__((vector_size(8 * sizeof(tg_real))));
typedef double tg_lanes8d __attribute__((vector_size(8 * sizeof(double))));
/* the 8 values at p, which need only tg_real's alignment; and as doubles
   (macros: a function returning a 64-byte vector has no ABI below AVX-512) */
typedef tg_real tg_lanes8_at_ __attribute__((vector_size(8 * sizeof(tg_real)), aligned(sizeof(tg_real)), may_alias));
#define TG_LANES8_AT(p) (*(const tg_lanes8_at_ *)(p))
#define TG_LANES8D(v) __builtin_convertvector((v), tg_lanes8d)

/* sum of x[i]^2 in double, x[i] in lane i % 8 and the tail in lane 0, the
 * lanes added at the end (RMSNorm's rows, the global grad norm) */
static inline __attribute__((always_inline)) double tg_sum_squares(const tg_real *x, size_t n)
{
    tg_lanes8d v = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        tg_lanes8d d = TG_LANES8D(TG_LANES8_AT(x + i));
        v += d * d;
    }
    double s[8];
    memcpy(s, &v, sizeof s);
    for (; i < n; i++) s[0] += (double)x[i] * (double)x[i];
    for (int k = 1; k < 8; k++) s[0] += s[k];
    return s[0];
}

#define TG_INV_SQRT2 0.70710678118654752440
#define TG_INV_SQRT_2PI 0.39894228040143267794

#ifdef TAPEGRAD_DOUBLE

static inline double tg_vexp(double x) { return exp(x); }
/* 1 / (1 + e^-x) from e = exp(-|x|) <= 1, so nothing overflows */
static inline double tg_vsigmoid(double x)
{
    double e = exp(-fabs(x));
    return x >= 0 ? 1 / (1 + e) : e / (1 + e);
}
/* Phi(x) = P(N(0,1) <= x) = erfc(-x / sqrt2) / 2: no cancellation for x << 0 */
static inline double tg_vnormal_cdf(double x) { return 0.5 * erfc(-x * TG_INV_SQRT2); }

#else

/* expf(x) for every float x: Cephes' expf (x = n ln2 + r, degree-6
 * polynomial, 2^n from the exponent bits, applied in two halves so that
 * n = 128 near ln(FLT_MAX) does not overflow early), relative error < 1e-7.
 * exp(0) = 1 exactly; x < -87.3 (where expf gives denormals, < 1.2e-38) and
 * -inf give exactly 0; x > ln(FLT_MAX) and +inf give +inf; NaN stays NaN.
 * Selects are done on the bits: float compares in a select keep GCC from
 * vectorizing under the default -ftrapping-math. */
static inline float tg_vexp(float x)
{
    union { float f; uint32_t u; } xb = {x}, tb, s1, s2, rb;
    uint32_t under = (uint32_t)(xb.u > 0xC2AE999Au) & (uint32_t)(xb.u <= 0xFF800000u);
    uint32_t over = (uint32_t)(xb.u > 0x42B17217u) & (uint32_t)(xb.u <= 0x7F800000u);
    tb.f = x * 1.44269504088896341f + 12582912.0f; /* 1.5 * 2^23: rounds to an integer */
    float n = tb.f - 12582912.0f;
    uint32_t k = tb.u - 0x4B400000u + 252u;       /* n + 252 */
    s1.u = ((k >> 1) + 1u) << 23;                 /* 2^n1, n1 = floor((n + 252) / 2) - 126 */
    s2.u = (k - (k >> 1) + 1u) << 23;             /* 2^(n - n1) */
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = (((((1.9875691500E-4f * r + 1.3981999507E-3f) * r + 8.3334519073E-3f) * r +
                 4.1665795894E-2f) * r + 1.6666665459E-1f) * r + 5.0000001201E-1f) * (r * r) + r + 1.0f;
    rb.f = p * s1.f * s2.f;
    rb.u &= under - 1u;
    rb.u = (rb.u & (over - 1u)) | (0x7F800000u & (0u - over));
    return rb.f;
}

/* 1 / (1 + e^-x) from e = exp(-|x|) <= 1, so nothing overflows:
 * 1 / (1 + e) for x >= 0, e / (1 + e) below. */
static inline float tg_vsigmoid(float x)
{
    union { float f; uint32_t u; } xb = {x}, nb, pos, neg, rb;
    nb.u = xb.u | 0x80000000u;                    /* -|x| */
    float e = tg_vexp(nb.f);
    pos.f = 1.0f / (1.0f + e);
    neg.f = e * pos.f;
    uint32_t m = 0u - (xb.u >> 31);               /* all ones when x < 0 */
    rb.u = (neg.u & m) | (pos.u & ~m);
    return rb.f;
}

/* Phi(x) = erfc(-x / sqrt2) / 2 with the Chebyshev fit of Numerical Recipes'
 * erfcc, erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), z = |x| / sqrt2,
 * whose relative error is < 1.2e-7 for every z >= 0. So Phi keeps its
 * relative accuracy deep in the left tail (gelu(-8) ~ -5e-15, not 0 or noise),
 * and Phi(x) = 1 - Phi(-x) on the right. */
static inline float tg_vnormal_cdf(float x)
{
    union { float f; uint32_t u; } xb = {x}, ab, lo, hi, rb;
    ab.u = xb.u & 0x7FFFFFFFu;
    float z = ab.f * (float)TG_INV_SQRT2, t = 1.0f / (1.0f + 0.5f * z);
    float P = -1.26551223f +
              t * (1.00002368f +
                   t * (0.37409196f +
                        t * (0.09678418f +
                             t * (-0.18628806f +
                                  t * (0.27886807f +
                                       t * (-1.13520398f +
                                            t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
    lo.f = 0.5f * t * tg_vexp(P - z * z); /* Phi(-|x|) */
    hi.f = 1.0f - lo.f;
    uint32_t neg = 0u - (xb.u >> 31);      /* all ones when x < 0 (or -0, NaN with the sign set) */
    rb.u = (lo.u & neg) | (hi.u & ~neg);
    return rb.f;
}

#endif

/* phi(x), the N(0,1) density */
static inline tg_real tg_vnormal_pdf(tg_real x) { return (tg_real)TG_INV_SQRT_2PI * tg_vexp((tg_real)-0.5 * x * x); }

#endif
