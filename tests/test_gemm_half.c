/* tg_gemm_half (core/kernels/gemm_half.c): GEMMs of bfloat16 / float16
 * operands with float32 accumulation, against a double reference; and the
 * element conversions of core/kernels/half.h against core/engine/dtype.c's.
 *
 * The error bounds, derived (u = 2^-24, float32's unit roundoff):
 *  - half inputs: each product of two half values is exact in float32 (8 or
 *    11 significant bits each), so only the float32 sums round, as in
 *    tg_sgemm: |C - exact| <= gamma_K sum |a||b| plus the roundings of
 *    alpha acc and beta C; test_gemm's (K + 2) 2u (|alpha| sum |a||b| +
 *    |beta C0|) is twice that.
 *  - float32 inputs rounded to half (autocast): each operand moves by at most
 *    e |x| (e = 2^-8 for bfloat16, 2^-11 for float16), so a product moves by
 *    at most (2e + e^2) |a||b|; with the sums' bound on top, the element is
 *    within ((2e + e^2)(1 + gamma) + (K + 2) 2u) |alpha| sum |a||b| of the
 *    product of the float32 inputs. For bfloat16 that is about
 *    (2^-7 + K 2^-23) sum |a||b|.
 * The bfloat16 kernels (VDPBF16PS, real or emulated) add two exact products
 * per rounded step; the AMX ones (TDPBF16PS) sum the even and the odd
 * products of 16 pairs apart, then add the two sums and that to C, at most
 * K + 2 rounded steps per element too; so the same bounds hold, but for
 * denormals: a flushed
 * step moves an element by less than 2^-126 (K of them: far below the
 * bounds), and a denormal input reads as zero, which the random operands
 * here (multiples of 2^-23) never are.
 *
 * Every test that runs products runs them with each kernel this CPU can run
 * (the emulated AVX512-BF16 and AMX kernels on every CPU) and prints which
 * ran and which were skipped. */
#define _DEFAULT_SOURCE /* usleep (limit_util.h) */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/engine/error.h>
#include <tapegrad/core/kernels/threads.h>
#include "../core/kernels/gemm.h"
#include "../core/kernels/gemm_half.h"
#include "../core/kernels/half.h"
#include "../core/kernels/peak.h"
#include "limit_util.h"

static unsigned g_seed = 7;
static float frand(void)
{
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)(g_seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

/* op(A) [M,K], op(B) [K,N] of dtype dt, C [M,N], rows pad longer than needed;
 * af / bf hold the float32 values the half operands were rounded from. */
typedef struct problem {
    tg_dtype dt;
    bool ta, tb;
    int M, N, K, lda, ldb, ldc;
    float alpha, beta;
    float *af, *bf, *C, *C0;
    uint16_t *A, *B;
} problem;

static problem make(tg_dtype dt, bool ta, bool tb, int M, int N, int K, float alpha, float beta, int pad)
{
    problem p = {dt, ta, tb, M, N, K, (ta ? M : K) + pad, (tb ? K : N) + pad, N + pad, alpha, beta,
                 NULL, NULL, NULL, NULL, NULL, NULL};
    size_t na = (size_t)(ta ? K : M) * p.lda + 1, nb = (size_t)(tb ? N : K) * p.ldb + 1, nc = (size_t)M * p.ldc + 1;
    p.af = malloc(na * 4), p.bf = malloc(nb * 4), p.C = malloc(nc * 4), p.C0 = malloc(nc * 4);
    p.A = malloc(na * 2), p.B = malloc(nb * 2);
    cr_assert(p.af && p.bf && p.C && p.C0 && p.A && p.B);
    for (size_t i = 0; i < na; i++) p.af[i] = frand(), p.A[i] = tg_half_from_float(p.af[i], dt);
    for (size_t i = 0; i < nb; i++) p.bf[i] = frand(), p.B[i] = tg_half_from_float(p.bf[i], dt);
    for (size_t i = 0; i < nc; i++) p.C[i] = beta == 0 ? NAN : frand(); /* beta 0 must not read C */
    memcpy(p.C0, p.C, nc * 4);
    return p;
}

static void release(problem *p)
{
    free(p->af), free(p->bf), free(p->C), free(p->C0), free(p->A), free(p->B);
}

static void run(problem *p)
{
    cr_assert(tg_gemm_half(p->dt, p->ta, p->tb, p->M, p->N, p->K, p->alpha, p->A, p->lda, p->B, p->ldb, p->beta,
                           p->C, p->ldc),
              "%s", tg_error());
}

static double a_at(const problem *p, int i, int k, bool rounded)
{
    size_t at = p->ta ? (size_t)k * p->lda + i : (size_t)i * p->lda + k;
    return rounded ? tg_half_to_float(p->A[at], p->dt) : p->af[at];
}

static double b_at(const problem *p, int k, int j, bool rounded)
{
    size_t at = p->tb ? (size_t)j * p->ldb + k : (size_t)k * p->ldb + j;
    return rounded ? tg_half_to_float(p->B[at], p->dt) : p->bf[at];
}

/* Every element against the double product of the half values (rounded) or
 * of the float32 values they came from, within the header's bounds. */
static void check(const problem *p, bool rounded, const char *what)
{
    double e = p->dt == TG_BF16 ? 0x1p-8 : 0x1p-11, u = 0x1p-24;
    double gamma = p->K * u / (1 - p->K * u);
    double from_inputs = rounded ? 0 : (2 * e + e * e) * (1 + gamma);
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->N; j++) {
            double dot = 0, mag = 0;
            for (int k = 0; k < p->K; k++) {
                double ab = a_at(p, i, k, rounded) * b_at(p, k, j, rounded);
                dot += ab, mag += fabs(ab);
            }
            double c0 = p->beta == 0 ? 0 : p->C0[(size_t)i * p->ldc + j];
            double ref = p->alpha * dot + p->beta * c0;
            double tol = (from_inputs + (p->K + 2) * 2 * u) * fabs(p->alpha) * mag + (p->K + 2) * 2 * u * fabs(p->beta * c0);
            double got = p->C[(size_t)i * p->ldc + j];
            if (!(fabs(got - ref) <= tol))
                cr_assert_fail("%s %s (%s): ta=%d tb=%d M=%d N=%d K=%d: C[%d,%d] = %.9g, expected %.9g (bound %.3g)",
                               what, tg_dtype_name(p->dt), rounded ? "half values" : "float32 values", p->ta, p->tb,
                               p->M, p->N, p->K, i, j, got, ref, tol);
        }
}

static const tg_gemm_half_kernel KERNELS[] = {TG_GEMM_HALF_WIDEN, TG_GEMM_HALF_AVX512BF16,
                                               TG_GEMM_HALF_AVX512BF16_EMULATED, TG_GEMM_HALF_AMX,
                                               TG_GEMM_HALF_AMX_EMULATED};
#define NKERNELS ((int)(sizeof KERNELS / sizeof KERNELS[0]))

/* Makes k the kernel, saying so; false (and said) when this CPU cannot run it. */
static bool is_bf16_kernel(tg_gemm_half_kernel k) { return k != TG_GEMM_HALF_WIDEN; }
static bool is_amx_kernel(tg_gemm_half_kernel k) { return k == TG_GEMM_HALF_AMX || k == TG_GEMM_HALF_AMX_EMULATED; }
static bool is_emulated(tg_gemm_half_kernel k)
{
    return k == TG_GEMM_HALF_AVX512BF16_EMULATED || k == TG_GEMM_HALF_AMX_EMULATED;
}

static bool use_kernel(tg_gemm_half_kernel k, const char *test)
{
#if defined(TAPEGRAD_DOUBLE) || defined(TG_EMULATED)
    /* The emulations are plain C, the same on every CPU, and slow: the
     * float32 suite on the host runs them; its float64 twin (tg_gemm_half is
     * float32 only) and a run under qemu skip them. */
    if (is_emulated(k)) {
        printf("%s: kernel %s skipped: the float32 suite on the host runs it\n", test, tg_gemm_half_kernel_name(k));
        return false;
    }
#endif
    bool ok = tg_gemm_half_set_kernel(k);
    printf("%s: kernel %s %s\n", test, tg_gemm_half_kernel_name(k), ok ? "ran" : "skipped: this CPU cannot run it");
    return ok;
}

/* What CPUID says of AMX-BF16 and AMX-TILE (leaf 7, EDX bits 22 and 24);
 * the kernel may still refuse the tile state. */
static bool cpu_has_amx(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 22 & 1) && (d >> 24 & 1);
#else
    return false;
#endif
}

static const int SIZES[] = {1, 2, 5, 12, 13, 17, 32, 33, 100, 193};
#define NSIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

/* The kernel tg_gemm_half runs now, over both dtypes (bfloat16 only for a
 * bfloat16 kernel, which widens float16 as the widening kernel does), every
 * transpose, the sizes above, alpha / beta and padding; then shapes past the
 * blocking. */
static void sweep(bool float16_too)
{
    static const float alphas[] = {1, 0.5f, -2}, betas[] = {0, 1, 0.25f};
    for (int d = 0; d < (float16_too ? 2 : 1); d++)
        for (int t = 0; t < 4; t++)
            for (int a = 0; a < NSIZES; a++)
                for (int b = 0; b < NSIZES; b++) {
                    int r = a * NSIZES + b + t;
                    problem p = make(d ? TG_F16 : TG_BF16, t & 1, t & 2, SIZES[a], SIZES[b],
                                     SIZES[(a * 7 + b * 3 + t) % NSIZES], alphas[r % 3], betas[(r / 3) % 3],
                                     r % 2 ? 0 : 1 + r % 5);
                    run(&p);
                    check(&p, true, "sweep");
                    check(&p, false, "sweep");
                    release(&p);
                }
    static const int big[][3] = {{300, 257, 129}, {37, 45, 800}, {13, 700, 390}};
    for (int s = 0; s < 3; s++)
        for (int t = 0; t < 4; t++) {
            problem p = make(TG_BF16, t & 1, t & 2, big[s][0], big[s][1], big[s][2], 1, 0.25f, 1);
            run(&p);
            check(&p, true, "past the blocking");
            check(&p, false, "past the blocking");
            release(&p);
        }
}

Test(gemm_half, within_the_bounds_of_a_double_product)
{
    for (int k = 0; k < NKERNELS; k++)
        if (use_kernel(KERNELS[k], "within the bounds")) sweep(!is_bf16_kernel(KERNELS[k])); /* float16: widen */
}

/* The bound for rounded float32 inputs is not loose enough to hide a wrong
 * rounding: truncating instead of rounding to nearest moves a product by up
 * to 2^-7 one way, which over K = 800 terms of one sign exceeds it. */
static void truncation(void)
{
    problem p = make(TG_BF16, false, false, 4, 4, 800, 1, 0, 0);
    for (size_t i = 0; i < (size_t)4 * 800; i++) {
        p.af[i] = fabsf(p.af[i]) + 1.0f / 3, p.bf[i] = fabsf(p.bf[i]) + 1.0f / 3;
        uint32_t ua, ub;
        memcpy(&ua, &p.af[i], 4), memcpy(&ub, &p.bf[i], 4);
        p.A[i] = (uint16_t)(ua >> 16), p.B[i] = (uint16_t)(ub >> 16); /* truncated */
    }
    run(&p);
    double worst = 0;
    for (int j = 0; j < 4; j++) {
        double dot = 0;
        for (int k = 0; k < 800; k++) dot += (double)p.af[k] * p.bf[(size_t)k * 4 + j];
        double rel = fabs(p.C[j] - dot) / dot;
        if (rel > worst) worst = rel; /* (not fmax: GCC 12's aarch64 vectoriser fails on it at -O3) */
    }
    cr_assert_gt(worst, 0x1p-8 + 800 * 0x1p-23, "truncation moved C by only %.3g of sum |a||b|", worst);
    release(&p);
}

Test(gemm_half, the_rounded_input_bound_catches_truncation)
{
    for (int k = 0; k < NKERNELS; k++)
        if (use_kernel(KERNELS[k], "truncation")) truncation();
}

/* The emulated kernel is slow: it skips the largest shape, takes one past
 * its K block (768) instead, and runs two of the transposes (the sweep runs
 * all four). */
static void threads_bits(bool emulated)
{
    static const int shapes[][3] = {{300, 257, 129}, {1664, 64, 64}, {64, 1664, 100}, {772, 256, 1024},
                                    {40, 130, 1001}};
    for (int s = 0; s < 5; s++) {
        if (emulated && s == 3) continue;
        for (int t = 0; t < 4; t += emulated ? 3 : 1) {
            problem p = make(TG_BF16, t & 1, t & 2, shapes[s][0], shapes[s][1], shapes[s][2], 0.5f, 0.25f, 0);
            size_t nc = (size_t)p.M * p.ldc;
            tg_threads_set(1);
            run(&p);
            float *one = malloc(nc * 4);
            cr_assert_not_null(one);
            memcpy(one, p.C, nc * 4);
            memcpy(p.C, p.C0, nc * 4);
            tg_threads_set(2);
            run(&p);
            cr_assert(memcmp(one, p.C, nc * 4) == 0, "%s: M=%d N=%d K=%d ta=%d tb=%d",
                      tg_gemm_half_kernel_name(tg_gemm_half_get_kernel()), p.M, p.N, p.K, t & 1, (t & 2) != 0);
            free(one);
            release(&p);
        }
    }
}

Test(gemm_half, bit_identical_for_1_and_2_threads)
{
    for (int k = 0; k < NKERNELS; k++) {
        if (!use_kernel(KERNELS[k], "1 and 2 threads")) continue;
        /* widening runs tg_sgemm, which is cblas_sgemm where the CPU has no
         * kernel of ours (aarch64): its threads promise no bits (test_gemm) */
        if (KERNELS[k] == TG_GEMM_HALF_WIDEN && tg_gemm_get_kernel() == TG_GEMM_BLAS) {
            printf("1 and 2 threads: %s skipped: tg_sgemm is cblas_sgemm here\n", tg_gemm_half_kernel_name(KERNELS[k]));
            continue;
        }
        threads_bits(is_emulated(KERNELS[k]));
    }
}

/* A copy of C after p runs from C0 with kernel k (also left in p->C). */
static float *result_of(problem *p, tg_gemm_half_kernel k)
{
    size_t nc = (size_t)p->M * p->ldc;
    cr_assert(tg_gemm_half_set_kernel(k));
    memcpy(p->C, p->C0, nc * 4);
    run(p);
    float *c = malloc(nc * 4);
    cr_assert_not_null(c);
    memcpy(c, p->C, nc * 4);
    return c;
}

/* The emulated and the widening kernels sum in different orders, so their
 * bits differ, but each is within the bound of the exact product of the
 * half values: the two within twice that of each other. */
static void agree_within_the_bound(tg_gemm_half_kernel emulated)
{
    static const int shapes[][3] = {{37, 45, 800}, {13, 70, 1}, {100, 33, 193}};
    for (int s = 0; s < 3; s++)
        for (int t = 0; t < 4; t++) {
            problem p = make(TG_BF16, t & 1, t & 2, shapes[s][0], shapes[s][1], shapes[s][2], -2, 0.5f, 2);
            size_t nc = (size_t)p.M * p.ldc;
            float *widened = result_of(&p, TG_GEMM_HALF_WIDEN);
            free(result_of(&p, emulated)); /* and in p.C */
            bool differ = false;
            for (int i = 0; i < p.M; i++)
                for (int j = 0; j < p.N; j++) {
                    double mag = 0;
                    for (int k = 0; k < p.K; k++) mag += fabs(a_at(&p, i, k, true) * b_at(&p, k, j, true));
                    size_t at = (size_t)i * p.ldc + j;
                    double tol = 2 * (p.K + 2) * 2 * 0x1p-24 * (fabs(p.alpha) * mag + fabs(p.beta * p.C0[at]));
                    cr_assert(fabs((double)p.C[at] - widened[at]) <= tol, "M=%d N=%d K=%d C[%d,%d]: %.9g vs %.9g",
                              p.M, p.N, p.K, i, j, p.C[at], widened[at]);
                    differ |= p.C[at] != widened[at];
                }
            for (size_t at = 0; at < nc; at++) /* the padding is C0's */
                if ((int)(at % p.ldc) >= p.N) cr_assert(memcmp(&p.C[at], &p.C0[at], 4) == 0);
            if (p.K > 2) cr_assert(differ, "M=%d N=%d K=%d: the same bits, so not two kernels", p.M, p.N, p.K);
            free(widened);
            release(&p);
        }
}

Test(gemm_half, emulated_and_widening_kernels_agree_within_the_bound)
{
    agree_within_the_bound(TG_GEMM_HALF_AVX512BF16_EMULATED);
    agree_within_the_bound(TG_GEMM_HALF_AMX_EMULATED);
}

/* float16 operands are widened whatever the kernel: the same bits. */
Test(gemm_half, float16_is_widened_by_every_kernel)
{
    problem p = make(TG_F16, true, false, 45, 37, 300, 0.5f, 0.25f, 1);
    float *widened = result_of(&p, TG_GEMM_HALF_WIDEN);
    for (int k = 0; k < NKERNELS; k++) {
        if (!is_bf16_kernel(KERNELS[k]) || !use_kernel(KERNELS[k], "float16 widened")) continue;
        float *c = result_of(&p, KERNELS[k]);
        cr_assert(memcmp(widened, c, (size_t)p.M * p.ldc * 4) == 0, "%s", tg_gemm_half_kernel_name(KERNELS[k]));
        free(c);
    }
    free(widened);
    release(&p);
}

/* C [1 x 1] of a bfloat16 product of A [1 x K] and B [K x 1] given as bits. */
static float dot_bits(int K, const uint16_t *a, const uint16_t *b)
{
    float c = NAN;
    cr_assert(tg_gemm_half(TG_BF16, false, false, 1, 1, K, 1, a, K, b, 1, 0, &c, 1), "%s", tg_error());
    return c;
}

/* NaN and infinity reach C on every kernel, hardware and emulated (the SDM
 * leaves NaN payloads open; the sign and class are what is checked): NaN
 * times 1, inf times 0, inf - inf give NaN; inf + 1 gives +inf; -inf alone
 * gives -inf. K = 2, and 34 (the special value in the second instruction
 * of an AMX K step, after a finite first). A silent finite C here would be
 * a wrong number. */
Test(gemm_half, nan_and_inf_reach_c_on_every_kernel)
{
    enum { NAN16 = 0x7fc0, INF16 = 0x7f80, NINF16 = 0xff80, ONE = 0x3f80 };
    static const uint16_t cases[][4] = {
        {NAN16, ONE, ONE, ONE}, {INF16, 0, 0, ONE}, {INF16, NINF16, ONE, ONE}, {INF16, ONE, ONE, ONE},
        {NINF16, 0, ONE, 0}};
    for (int k = 0; k < NKERNELS; k++) {
        if (!use_kernel(KERNELS[k], "NaN and inf")) continue;
        for (int c = 0; c < 5; c++)
            for (int K = 2; K <= 34; K += 32) {
                uint16_t a[34] = {0}, b[34] = {0};
                for (int i = 0; i + 2 < K; i++) a[i] = b[i] = ONE; /* a finite lead-in */
                a[K - 2] = cases[c][0], a[K - 1] = cases[c][1], b[K - 2] = cases[c][2], b[K - 1] = cases[c][3];
                float got = dot_bits(K, a, b);
                const char *name = tg_gemm_half_kernel_name(KERNELS[k]);
                if (c < 3) cr_assert(isnan(got), "%s case %d K=%d: %.9g, not NaN", name, c, K, got);
                else cr_assert(isinf(got) && (got > 0) == (c == 3), "%s case %d K=%d: %.9g", name, c, K, got);
            }
    }
}

/* Hand-made cases on which VDPBF16PS and TDPBF16PS as the SDM defines them
 * (see emu_dpbf16 and emu_tdpbf16 in core/kernels/gemm_half.c) give other
 * bits than an exact sum, another order or IEEE float32 with denormals: run
 * by every bfloat16 kernel this CPU has (on a CPU with the instruction this
 * checks the emulation against it), and by the widening kernel to show
 * that each case discriminates. bfloat16 bits: 1 = 0x3f80, 2^-12 = 0x3980, -2^-12 =
 * 0xb980, 2^100 = 0x7180, 2^-63 = 0x2000, 2^-70 = 0x1c80, 0x0001 = the
 * denormal 2^-133. */
Test(gemm_half, bf16_kernels_follow_the_instruction)
{
    /* order: pairs (k0, k1), (k2, k3); products p0 = 1, p1 = 0, p2 = -2^-24,
     * p3 = 2^-24. Pair 0 leaves 1. Pair 1, odd product first: 1 + 2^-24 is
     * a tie between 1 and 1 + 2^-23, to even: 1; then 1 - 2^-24, exact (the
     * spacing below 1 is 2^-24): 0x3f7fffff. Even first (or in k order, as
     * the widening kernel): 1 - 2^-24, then + 2^-24 = 1 exactly. */
    static const uint16_t oa[4] = {0x3f80, 0, 0x3980, 0x3980}, ob[4] = {0x3f80, 0, 0xb980, 0x3980};
    /* denormal input: 2^-133 * 2^100 = 2^-33, but the denormal reads as 0 */
    static const uint16_t da[2] = {0x0001, 0}, db[2] = {0x7180, 0};
    /* intermediate flush: odd product 2^-70 * 2^-70 = 2^-140, denormal in
     * float32, flushed to 0; then 0 + 2^-63 * 2^-63 = 2^-126 = FLT_MIN
     * (0x00800000). Unflushed: 2^-126 + 2^-140 = 2^-126 (1 + 2^-14),
     * 0x00800200. */
    static const uint16_t fa[2] = {0x2000, 0x1c80}, fb[2] = {0x2000, 0x1c80};
    /* result flush: K = 1 (the pair's odd half zero), 2^-140 -> 0 */
    static const uint16_t ra[1] = {0x1c80}, rb[1] = {0x1c80};
    /* tininess after rounding with unbounded exponent (SDM vol. 1 4.9.1.5):
     * odd product 2^-63 * 2^-63 = 2^-126; even 1.5 2^-76 (0x19c0) * -2^-75
     * (0x9a00) = -3 2^-152. Exact sum 2^-126 - 0.75 2^-150: to 24 bits with
     * unbounded exponent it is 2^-126 - 2^-150 (0.25 away, not 0.75), tiny:
     * flushed to +0. On float32's denormal grid (spacing 2^-149) it is
     * 2^-126 (0.375 of a spacing away), which IEEE gives. */
    static const uint16_t ta[2] = {0x19c0, 0x2000}, tb[2] = {0x9a00, 0x2000};
    /* TDPBF16PS's two sums: products 1, 2^-24, 0, 2^-24. Its even sum is 1,
     * its odd one 2^-23, and 1 + 2^-23 is exact: 0x3f800001. One running
     * sum in any order (VDPBF16PS's, the widening kernel's) takes 1 + 2^-24,
     * a tie, to 1 and stays there. */
    static const uint16_t sa[4] = {0x3f80, 0x3980, 0, 0x3980}, sb[4] = {0x3f80, 0x3980, 0, 0x3980};
    /* ... which restart in each instruction (16 pairs): products 1 and 2^-24
     * (k 0, 1) in the first, 2^-24 (k 33) in the second; each adds 2^-24 to
     * 1: 1 for every kernel. Sums kept over the whole K would give 1 +
     * 2^-23 (so this case is about the AMX kernels only). */
    uint16_t xa[34] = {0x3f80, 0x3980}, xb[34] = {0x3f80, 0x3980};
    xa[33] = xb[33] = 0x3980;
    /* the add of the two sums flushes: even 2^-62 (0x2080) 2^-63 = 2^-125,
     * odd -1.9375 2^-63 (0xa078) 2^-63 = -1.9375 2^-126, both normal; their
     * sum 2^-130 is exact but denormal: 0 (IEEE: 2^-130). VDPBF16PS flushes
     * it too, as its second step. */
    static const uint16_t ha[2] = {0x2080, 0xa078}, hb[2] = {0x2000, 0x2000};
    for (int k = 0; k < NKERNELS; k++) {
        if (!use_kernel(KERNELS[k], "follows the instruction")) continue;
        bool bf = is_bf16_kernel(KERNELS[k]), amx = is_amx_kernel(KERNELS[k]);
        float order = dot_bits(4, oa, ob), denormal = dot_bits(2, da, db), flush = dot_bits(2, fa, fb),
              result = dot_bits(1, ra, rb), tiny = dot_bits(2, ta, tb), sums = dot_bits(4, sa, sb),
              restart = dot_bits(34, xa, xb), halves = dot_bits(2, ha, hb);
        const char *name = tg_gemm_half_kernel_name(KERNELS[k]);
        /* The emulations must follow the SDM's text. A kernel on silicon is
         * compared with that reading and each difference printed, not
         * failed: none has run on such a CPU yet, and where the silicon and
         * the text differ it is the emulation that must change (every
         * kernel is held to the error bound above either way). */
        bool silicon = KERNELS[k] == TG_GEMM_HALF_AVX512BF16 || KERNELS[k] == TG_GEMM_HALF_AMX;
        int differ = 0;
#define FOLLOWS(cond, fmt, ...)                                                                  \
        do {                                                                                     \
            if (cond) break;                                                                     \
            if (!silicon) cr_assert_fail("%s: " fmt, name, __VA_ARGS__);                         \
            printf("%s: on this CPU, not as the SDM reads: " fmt "\n", name, __VA_ARGS__);       \
            differ++;                                                                            \
        } while (0)
        /* (widening on OpenBLAS, without our x86 kernels, sums in its own order) */
        bool ordered = bf || tg_gemm_get_kernel() != TG_GEMM_BLAS;
        /* AMX: even 1 - 2^-24 exact, odd 2^-24, their sum 1 */
        if (ordered) FOLLOWS(order == (bf && !amx ? 0x1.fffffep-1f : 1.0f), "order %a", order);
        FOLLOWS(denormal == (bf ? 0.0f : 0x1p-33f), "denormal input %a", denormal);
        FOLLOWS(flush == (bf ? 0x1p-126f : 0x1.0004p-126f), "intermediate flush %a", flush);
        FOLLOWS(result == (bf ? 0.0f : 0x1p-140f), "result flush %a", result);
        /* AMX: the even sum alone is tiny (-3 2^-152, flushed), the odd 2^-126 */
        FOLLOWS(bf && !amx ? tiny == 0 && !signbit(tiny) : tiny == 0x1p-126f, "tininess %a", tiny);
        if (ordered) FOLLOWS(sums == (amx ? 0x1.000002p+0f : 1.0f), "two sums %a", sums);
        if (ordered) FOLLOWS(restart == 1.0f, "sums restart per instruction %a", restart);
        FOLLOWS(bf ? halves == 0 && !signbit(halves) : halves == 0x1p-130f, "sum of the sums %a", halves);
#undef FOLLOWS
        if (silicon) printf("%s: %d of the hand-made cases differ from the SDM's reading\n", name, differ);
    }
}

Test(gemm_half, set_kernel_refuses_what_the_cpu_lacks)
{
    bool has = false;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
#endif
    cr_assert(tg_gemm_half_set_kernel(TG_GEMM_HALF_AVX512BF16_EMULATED));
    cr_assert_eq(tg_gemm_half_set_kernel(TG_GEMM_HALF_AVX512BF16), has);
    cr_assert_eq(tg_gemm_half_get_kernel(), has ? TG_GEMM_HALF_AVX512BF16 : TG_GEMM_HALF_AVX512BF16_EMULATED);
    cr_assert(tg_gemm_half_set_kernel(TG_GEMM_HALF_AMX_EMULATED));
    /* with AMX in the CPU, the operating system may still refuse it */
    if (!cpu_has_amx()) cr_assert_not(tg_gemm_half_set_kernel(TG_GEMM_HALF_AMX));
    else printf("set kernel: this CPU has AMX; the operating system %s the tile state\n",
                tg_gemm_half_set_kernel(TG_GEMM_HALF_AMX) ? "granted" : "refused");
    cr_assert_not(tg_gemm_half_set_kernel((tg_gemm_half_kernel)7));
}

static void degenerate(void)
{
    float C[4] = {1, 2, 3, 4};
    uint16_t A[1] = {0}, B[1] = {0};
    cr_assert(tg_gemm_half(TG_BF16, false, false, 2, 2, 0, 1, A, 1, B, 2, 0.5f, C, 2)); /* K 0: C = beta C */
    cr_assert(C[0] == 0.5f && C[3] == 2);
    cr_assert(tg_gemm_half(TG_BF16, false, false, 0, 2, 3, 1, NULL, 3, NULL, 2, 0, C, 2)); /* M 0: nothing */
    cr_assert(C[0] == 0.5f);
    cr_assert_not(tg_gemm_half(TG_F32, false, false, 2, 2, 1, 1, A, 1, B, 2, 0, C, 2));
    cr_assert_str_eq(tg_error(), "tg_gemm_half: operands are float32, not bfloat16 or float16");
    float F[2] = {1, 1};
    cr_assert_not(tg_gemm_rounded(TG_F32, false, false, 2, 2, 1, 1, F, 1, F, 2, 0, C, 2));
    cr_assert_str_eq(tg_error(), "tg_gemm_rounded: operands are rounded to float32, not bfloat16 or float16");
    cr_assert(C[0] == 0.5f && C[3] == 2, "C changed by a refused product");
    float D[2] = {NAN, NAN};
    uint16_t one[1] = {0x3f80};
    cr_assert(tg_gemm_half(TG_BF16, false, false, 1, 2, 1, 0, one, 1, one, 2, 0, D, 2)); /* alpha 0, beta 0 */
    cr_assert(D[0] == 0 && D[1] == 0);
}

Test(gemm_half, degenerate_sizes_follow_blas)
{
    for (int k = 0; k < NKERNELS; k++)
        if (use_kernel(KERNELS[k], "degenerate sizes")) degenerate();
}

/* half.h's conversions give dtype.c's bits: every half value widened, and
 * float32s rounded (random bits, and each half value +- half an ulp: the
 * ties, which go to even). */
Test(gemm_half, conversions_equal_the_dtype_rules)
{
    for (int d = 0; d < 2; d++) {
        tg_dtype dt = d ? TG_F16 : TG_BF16;
        for (uint32_t h = 0; h < 65536; h++) {
            double want = tg_half_to_double((uint16_t)h, dt);
            float got = tg_half_to_float((uint16_t)h, dt);
            cr_assert(isnan(want) ? isnan(got) : got == want, "%s 0x%04x: %.9g, not %.9g", tg_dtype_name(dt), h,
                      got, want);
            if (isnan(want) || isinf(want)) continue;
            /* the value, the tie between it and the next half value away from
             * zero (exact in float32: one bit more than either) and the
             * floats on both sides of the tie, both signs */
            double next = tg_half_to_double((uint16_t)(h + 1), dt);
            if (isinf(next)) next = copysign(ldexp(1, dt == TG_F16 ? 16 : 128), want); /* past the largest */
            float tie = (float)((want + next) / 2);
            float xs[4] = {got, tie, nextafterf(tie, 0), nextafterf(tie, INFINITY)};
            for (int k = 0; k < 8; k++) {
                float x = k < 4 ? xs[k] : -xs[k - 4];
                cr_assert_eq(tg_half_from_float(x, dt), tg_half_from_double(x, dt), "%s of %.9g",
                             tg_dtype_name(dt), x);
            }
        }
        for (int i = 0; i < 200000; i++) {
            uint32_t u = (uint32_t)(frand() * 2147483648.0f) * 2u + (uint32_t)i % 2u;
            float f;
            memcpy(&f, &u, 4);
            uint16_t want = tg_half_from_double(f, dt), got = tg_half_from_float(f, dt);
            cr_assert(got == want, "%s of bits 0x%08x: 0x%04x, not 0x%04x",
                      tg_dtype_name(dt), u, got, want);
        }
    }
}

Test(gemm_half, env_naming_no_kernel_is_said, .init = cr_redirect_stderr)
{
    /* the choice is made once per process: this test's process is fresh */
    setenv("TAPEGRAD_GEMM_HALF", "tiles", 1);
    tg_gemm_half_kernel k = tg_gemm_half_get_kernel();
    fflush(stderr);
    char want[200];
    snprintf(want, sizeof want,
             "tapegrad: TAPEGRAD_GEMM_HALF=tiles is not widen, avx512bf16, avx512bf16-emulated, amx-bf16 or "
             "amx-bf16-emulated; using %s\n",
             tg_gemm_half_kernel_name(k));
    cr_assert_stderr_eq_str(want);
}

/* tg_gemm_rounded rounds its float32 operands as tg_half_from_float does and
 * runs tg_gemm_half's product on them (a bfloat16 kernel rounds them as it
 * packs, in each of its four layouts): the same bits, with leading
 * dimensions, an odd K, two K blocks, one and two threads. float16 is
 * rounded into copies, on the widening kernel. */
static void rounded_bits(tg_dtype dt, int threads)
{
    static const int shapes[][3] = {{33, 17, 45}, {40, 130, 1001}, {300, 70, 129}};
    bool emulated = is_emulated(tg_gemm_half_get_kernel());
    tg_threads_set(threads);
    for (int s = 0; s < (emulated ? 1 : 3); s++)
        for (int t = 0; t < 4; t++) {
            problem p = make(dt, t & 1, t & 2, shapes[s][0], shapes[s][1], shapes[s][2], 0.5f, 0.25f, 3);
            size_t nc = (size_t)p.M * p.ldc;
            run(&p);
            float *want = malloc(nc * 4);
            cr_assert_not_null(want);
            memcpy(want, p.C, nc * 4);
            memcpy(p.C, p.C0, nc * 4);
            cr_assert(tg_gemm_rounded(p.dt, p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.af, p.lda, p.bf, p.ldb, p.beta, p.C,
                                      p.ldc));
            cr_assert(memcmp(want, p.C, nc * 4) == 0, "%s %s M=%d N=%d K=%d ta=%d tb=%d, %d threads",
                      tg_gemm_half_kernel_name(tg_gemm_half_get_kernel()), tg_dtype_name(p.dt), p.M, p.N, p.K, t & 1,
                      (t & 2) != 0, threads);
            free(want);
            release(&p);
        }
}

Test(gemm_half, rounded_float_operands_give_the_half_products_bits)
{
    for (int k = 0; k < NKERNELS; k++)
        if (use_kernel(KERNELS[k], "rounded as packed"))
            for (int threads = 1; threads <= 2; threads++) rounded_bits(TG_BF16, threads);
    tg_gemm_half_set_kernel(TG_GEMM_HALF_WIDEN);
    rounded_bits(TG_F16, 2);
}

/* tg_gemm_rounded_bias (a linear layer's forward under autocast) gives the
 * bits of tg_gemm_rounded with beta 1 on a C holding the bias rows, the
 * bias added as the tiles are stored (edge tiles, two K blocks, both
 * transposes of B, one and two threads), and writes nothing but C. */
static void bias_bits(int threads)
{
    static const int shapes[][3] = {{33, 17, 45}, {70, 100, 1001}, {64, 96, 64}};
    bool emulated = is_emulated(tg_gemm_half_get_kernel());
    tg_threads_set(threads);
    for (int s = 0; s < (emulated ? 1 : 3); s++)
        for (int tb = 0; tb < 2; tb++) {
            problem p = make(TG_BF16, false, tb, shapes[s][0], shapes[s][1], shapes[s][2], 1.0f, 1.0f, 0);
            size_t nc = (size_t)p.M * p.N;
            float *bias = malloc(sizeof *bias * (size_t)p.N), *got = malloc(nc * 4);
            cr_assert(bias && got);
            for (int j = 0; j < p.N; j++) bias[j] = 0.25f * (float)(j % 7) - 0.75f;
            for (int i = 0; i < p.M; i++) memcpy(p.C + (size_t)i * p.N, bias, sizeof *bias * (size_t)p.N);
            cr_assert(tg_gemm_rounded(p.dt, false, tb, p.M, p.N, p.K, 1, p.af, p.lda, p.bf, p.ldb, 1, p.C, p.ldc));
            for (size_t i = 0; i < nc; i++) got[i] = NAN;
            cr_assert(tg_gemm_rounded_bias(p.dt, tb, p.M, p.N, p.K, p.af, p.bf, bias, got), "%s", tg_error());
            cr_assert(memcmp(got, p.C, nc * 4) == 0, "%s M=%d N=%d K=%d tb=%d, %d threads",
                      tg_gemm_half_kernel_name(tg_gemm_half_get_kernel()), p.M, p.N, p.K, tb, threads);
            free(bias), free(got);
            release(&p);
        }
}

Test(gemm_half, a_bias_added_as_stored_gives_the_bits_of_a_bias_filled_c)
{
    for (int k = 0; k < NKERNELS; k++)
        if (use_kernel(KERNELS[k], "bias as stored"))
            for (int threads = 1; threads <= 2; threads++) bias_bits(threads);
}

/* The operand copies are kept per thread: a product no larger than one before
 * allocates nothing; one that cannot have its copies is an error naming
 * them, with C unchanged, and the next product runs. */
/* A worker that cannot allocate its pack buffers borrows the caller's A
 * buffer under a lock (limit_util.h): on every bfloat16 kernel, products
 * whose threads take rows, each packing its A rows, give one thread's bits. */
Test(gemm_half, a_worker_without_pack_buffers_borrows_the_callers, .timeout = 120)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("RLIMIT_AS and AddressSanitizer do not mix (it reserves terabytes of address space)");
#elif defined(TG_EMULATED)
    cr_skip_test("under qemu-user RLIMIT_AS limits the emulator's own address space, not the program's");
#else
    enum { P = 2 * NKERNELS };
    problem ps[P];
    float *one_thread[P];
    bool ran[NKERNELS] = {false};
    tg_threads_set(2); /* (limit_util.h) */
    tg_threads_set(1);
    for (int k = 0; k < NKERNELS; k++) {
        ran[k] = is_bf16_kernel(KERNELS[k]) && use_kernel(KERNELS[k], "worker without buffers");
        for (int t = 0; ran[k] && t < 2; t++) {
            problem *p = &ps[2 * k + t];
            *p = make(TG_BF16, t, !t, 300, 257, 129, 0.5f, 0.25f, 0); /* M >= N: threads take rows */
            one_thread[2 * k + t] = result_of(p, KERNELS[k]);           /* the caller's buffers made here */
        }
    }
    limit_worker_buffers();
    bool same[P] = {false};
    for (int k = 0; k < NKERNELS; k++)
        for (int t = 0; ran[k] && t < 2; t++) {
            problem *p = &ps[2 * k + t];
            memcpy(p->C, p->C0, (size_t)p->M * p->ldc * 4);
            same[2 * k + t] = tg_gemm_half_set_kernel(KERNELS[k]) && tg_gemm_half(p->dt, p->ta, p->tb, p->M, p->N, p->K, p->alpha, p->A, p->lda, p->B,
                                           p->ldb, p->beta, p->C, p->ldc) &&
                              memcmp(one_thread[2 * k + t], p->C, (size_t)p->M * p->ldc * 4) == 0;
        }
    limit_lift();
    for (int k = 0; k < NKERNELS; k++)
        for (int t = 0; ran[k] && t < 2; t++) {
            problem *p = &ps[2 * k + t];
            cr_assert(same[2 * k + t], "%s: ta=%d tb=%d: failed, or not the bits of one thread",
                      tg_gemm_half_kernel_name(KERNELS[k]), p->ta, p->tb);
            free(one_thread[2 * k + t]);
            release(p);
        }
#endif
}

Test(gemm_half, operand_copies_are_reused_and_their_failure_is_said)
{
    problem p = make(TG_BF16, false, true, 40, 24, 56, 1.0f, 0.5f, 0);
    size_t nc = (size_t)p.M * p.ldc;
    tg_gemm_half_set_kernel(TG_GEMM_HALF_WIDEN);
    cr_assert(tg_gemm_rounded(p.dt, p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.af, p.lda, p.bf, p.ldb, p.beta, p.C, p.ldc));
    uint64_t before = tg_alloc_count();
    for (int i = 0; i < 3; i++) {
        run(&p);
        cr_assert(tg_gemm_rounded(p.dt, p.ta, p.tb, 20, 24, 56, p.alpha, p.af, p.lda, p.bf, p.ldb, p.beta, p.C,
                                  p.ldc));
    }
    cr_assert_eq(tg_alloc_count(), before, "%llu allocations", (unsigned long long)(tg_alloc_count() - before));
    release(&p);

    /* each larger than the one before, so that its one allocation (the
     * copies, grown) fails: float32 operands rounded, then half ones widened */
    static const char *const want[2] = {"tg_gemm_rounded: out of memory rounding [80,112] @ [112,48] operands",
                                        "tg_gemm_half: out of memory widening [96,128] and [64,128] operands"};
    for (int halves = 0; halves <= 1; halves++) {
        problem q = make(TG_BF16, false, true, 80 + 16 * halves, 48 + 16 * halves, 112 + 16 * halves, 1.0f, 0.5f, 0);
        nc = (size_t)q.M * q.ldc;
        for (int fail = 1; fail >= 0; fail--) {
            tg_alloc_fail_at((uint64_t)fail);
            bool ok = halves ? tg_gemm_half(q.dt, q.ta, q.tb, q.M, q.N, q.K, q.alpha, q.A, q.lda, q.B, q.ldb, q.beta,
                                            q.C, q.ldc)
                             : tg_gemm_rounded(q.dt, q.ta, q.tb, q.M, q.N, q.K, q.alpha, q.af, q.lda, q.bf, q.ldb,
                                               q.beta, q.C, q.ldc);
            tg_alloc_fail_at(0);
            if (fail) {
                cr_assert_not(ok);
                cr_assert_str_eq(tg_error(), want[halves]);
                cr_assert(memcmp(q.C, q.C0, nc * 4) == 0, "C changed by a product that failed");
            } else {
                cr_assert(ok, "%s", tg_error());
            }
        }
        check(&q, halves, "after a failed product");
        release(&q);
    }
}

Test(gemm_half, env_naming_a_kernel_the_cpu_lacks_is_said, .init = cr_redirect_stderr)
{
    setenv("TAPEGRAD_GEMM_HALF", "avx512bf16", 1);
    tg_gemm_half_kernel k = tg_gemm_half_get_kernel();
    fflush(stderr);
    if (k == TG_GEMM_HALF_AVX512BF16) { /* this CPU has it: followed, nothing said */
        cr_assert_stderr_eq_str("");
        return;
    }
    cr_assert_eq(k, TG_GEMM_HALF_WIDEN);
    cr_assert_stderr_eq_str(
        "tapegrad: TAPEGRAD_GEMM_HALF=avx512bf16: this CPU cannot run it; using widen-to-float32\n");
}

Test(gemm_half, env_forces_the_emulated_kernel)
{
    setenv("TAPEGRAD_GEMM_HALF", "avx512bf16-emulated", 1);
    cr_assert_eq(tg_gemm_half_get_kernel(), TG_GEMM_HALF_AVX512BF16_EMULATED);
}

Test(gemm_half, env_forces_the_emulated_amx_kernel)
{
    setenv("TAPEGRAD_GEMM_HALF", "amx-bf16-emulated", 1);
    cr_assert_eq(tg_gemm_half_get_kernel(), TG_GEMM_HALF_AMX_EMULATED);
}

/* The check product's pack buffers cannot be had (an address-space limit
 * just above this process's size): the kernel is not used, and since the
 * choice is made once per process, that is said, with why, rather than the
 * kernel being called wrong. Every bfloat16 kernel tried after it fails the
 * same way; the product is then widened. */
Test(gemm_half, a_check_product_that_cannot_run_is_said, .init = cr_redirect_stderr)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("RLIMIT_AS and AddressSanitizer do not mix (it reserves terabytes of address space)");
#elif defined(TG_EMULATED)
    cr_skip_test("under qemu-user RLIMIT_AS limits the emulator's own address space, not the program's");
#else
    setenv("TAPEGRAD_GEMM_HALF", "amx-bf16-emulated", 1);
    tg_threads_set(2); /* (limit_util.h) */
    struct rlimit old, lim;
    cr_assert_eq(getrlimit(RLIMIT_AS, &old), 0);
    lim = (struct rlimit){(rlim_t)vm_size() + (1 << 20), old.rlim_max};
    cr_assert_eq(setrlimit(RLIMIT_AS, &lim), 0);
    tg_gemm_half_kernel k = tg_gemm_half_get_kernel();
    cr_assert_eq(setrlimit(RLIMIT_AS, &old), 0);
    fflush(stderr);
    cr_assert_eq(k, TG_GEMM_HALF_WIDEN, "%s", tg_gemm_half_kernel_name(k));
    char said[2048] = "";
    FILE *f = cr_get_redirected_stderr();
    size_t n = fread(said, 1, sizeof said - 1, f);
    said[n] = 0;
    const char *first = "tapegrad: the amx-bf16-emulated kernel's check product could not run (tg_gemm_half: out "
                        "of memory for the pack buffers of [37,67] x [67,45]); not used\n",
               *last = "tapegrad: TAPEGRAD_GEMM_HALF=amx-bf16-emulated: its check product failed; using "
                       "widen-to-float32\n";
    cr_assert(strncmp(said, first, strlen(first)) == 0, "said: %s", said);
    cr_assert(n >= strlen(last) && strcmp(said + n - strlen(last), last) == 0, "said: %s", said);
#endif
}

/* Unfollowed, it says why: no AMX in the CPU, or the operating system
 * refused the tile state. */
Test(gemm_half, env_naming_amx_without_it_is_said, .init = cr_redirect_stderr)
{
    setenv("TAPEGRAD_GEMM_HALF", "amx-bf16", 1);
    tg_gemm_half_kernel k = tg_gemm_half_get_kernel();
    fflush(stderr);
    if (k == TG_GEMM_HALF_AMX) {
        cr_assert_stderr_eq_str("");
        return;
    }
    cr_assert(k == TG_GEMM_HALF_WIDEN || k == TG_GEMM_HALF_AVX512BF16);
    char want[300];
    snprintf(want, sizeof want, "tapegrad: TAPEGRAD_GEMM_HALF=amx-bf16: %s; using %s\n",
             cpu_has_amx() ? "the operating system refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)"
                           : "this CPU cannot run it",
             tg_gemm_half_kernel_name(k));
    cr_assert_stderr_eq_str(want);
}

/* From here on this process's request for the AMX tile state
 * (arch_prctl(ARCH_REQ_XCOMP_PERM, ...)) fails with EPERM, as a kernel
 * before Linux 5.16 refuses it; false where that cannot be done. */
static bool refuse_amx_state(void)
{
#if defined(__x86_64__) && defined(__linux__)
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_arch_prctl, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])), /* its low half */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1 /* EPERM */),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof code / sizeof *code, code};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
#else
    return false;
#endif
}

/* Without AMX (refused here, where the CPU has it) the default is the
 * VDPBF16PS kernel only where that instruction outruns the float32 FMA
 * enough to beat widening into it; on the Intel Xeon it was measured on it
 * does not, and widening is the faster (docs/PERF.md). */
Test(gemm_half, without_amx_the_bf16_kernel_is_the_default_only_where_it_outruns_the_fma)
{
    unsetenv("TAPEGRAD_GEMM_HALF");
    if (cpu_has_amx() && !refuse_amx_state()) /* a sandbox that forbids seccomp filters */
        cr_skip_test("this CPU has AMX and this process cannot refuse itself its tile state (seccomp)");
    bool bf16 = tg_gemm_half_can_run(TG_GEMM_HALF_AVX512BF16);
    cr_assert_not(tg_gemm_half_can_run(TG_GEMM_HALF_AMX));
    double rate = tg_gemm_half_bf16_rate();
    tg_gemm_half_kernel k = tg_gemm_half_get_kernel();
    printf("default without AMX: VDPBF16PS %s (%.2f of the FMA's flop rate); %s\n", bf16 ? "runs" : "cannot run",
           rate, tg_gemm_half_kernel_name(k));
    cr_assert_eq(rate > 0, bf16);
    cr_assert_eq(k, bf16 && rate >= TG_GEMM_HALF_BF16_RATE_MIN ? TG_GEMM_HALF_AVX512BF16 : TG_GEMM_HALF_WIDEN,
                 "the default is %s at a rate of %.2f", tg_gemm_half_kernel_name(k), rate);
}

/* The register-only loops behind that choice (and bench_peak) take time
 * where the CPU runs their instruction, and none where it cannot. */
Test(gemm_half, peak_loops_run_where_the_cpu_can)
{
    static const char *const names[] = {"vfmadd231ps ymm", "vfmadd231ps zmm", "vdpbf16ps zmm"};
    for (int i = TG_PEAK_FMA_YMM; i <= TG_PEAK_DPBF16_ZMM; i++) {
        bool runs = tg_peak_can_run((tg_peak_insn)i);
        double s = tg_peak_seconds((tg_peak_insn)i, 1000);
        printf("peak loop %s: %s\n", names[i], runs ? "ran" : "cannot run here");
        cr_assert(runs ? s > 0 : s == 0, "%s: %g s", names[i], s);
        cr_assert_eq(tg_peak_seconds((tg_peak_insn)i, 0), 0);
    }
    cr_assert_eq(tg_peak_flop(TG_PEAK_DPBF16_ZMM), 2 * tg_peak_flop(TG_PEAK_FMA_ZMM));
}
