/* tg_sgemm (core/kernels/gemm.c) against a naive double-accumulating reference, and
 * the thread pool it runs on (core/kernels/threads.c).
 *
 * tg_sgemm is float-only but built in both precisions, so this suite runs
 * unchanged in the double build. Tolerance: a float dot product of length K
 * summed in any order is within gamma_K * sum_k |a_k b_k| of the exact value,
 * gamma_K = K u / (1 - K u), u = FLT_EPSILON / 2 (Higham, Accuracy and
 * Stability, 3.1); alpha * acc and the beta C update add two roundings.
 * We allow (K + 2) * FLT_EPSILON * (|alpha| sum |a||b| + |beta| |C0|): twice the
 * bound, so a wrong element (off by a whole product) still fails.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/kernels/threads.h>
#include "../core/kernels/gemm.h"
#include "../core/kernels/openblas.h"
#include "limit_util.h"

static const int SIZES[] = {1, 2, 3, 5, 11, 12, 13, 16, 17, 27, 31, 32, 33, 64, 100, 193};
#define NSIZES ((int)(sizeof SIZES / sizeof SIZES[0]))
static const float ALPHAS[] = {1.0f, 0.5f, -2.0f};
static const float BETAS[] = {0.0f, 1.0f, 0.25f};
#define SENTINEL 12345.0f

static unsigned g_seed = 1;
static float frand(void)
{
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)(g_seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

/* One problem: op(A) [M,K], op(B) [K,N], C [M,N], with leading dimensions
 * pad larger than the minimum (pad = 0: contiguous). */
typedef struct problem {
    bool ta, tb;
    int M, N, K, lda, ldb, ldc;
    float alpha, beta;
    float *A, *B, *C, *C0;
} problem;

static float a_at(const problem *p, int i, int k) { return p->ta ? p->A[(size_t)k * p->lda + i] : p->A[(size_t)i * p->lda + k]; }
static float b_at(const problem *p, int k, int j) { return p->tb ? p->B[(size_t)j * p->ldb + k] : p->B[(size_t)k * p->ldb + j]; }

static problem make(bool ta, bool tb, int M, int N, int K, float alpha, float beta, int pad)
{
    problem p = {ta, tb, M, N, K, 0, 0, 0, alpha, beta, NULL, NULL, NULL, NULL};
    p.lda = (ta ? M : K) + pad;
    p.ldb = (tb ? K : N) + pad;
    p.ldc = N + pad;
    size_t na = (size_t)(ta ? K : M) * p.lda, nb = (size_t)(tb ? N : K) * p.ldb, nc = (size_t)M * p.ldc;
    p.A = malloc(sizeof(float) * (na ? na : 1));
    p.B = malloc(sizeof(float) * (nb ? nb : 1));
    p.C = malloc(sizeof(float) * (nc ? nc : 1));
    p.C0 = malloc(sizeof(float) * (nc ? nc : 1));
    cr_assert(p.A && p.B && p.C && p.C0);
    for (size_t i = 0; i < na; i++) p.A[i] = frand();
    for (size_t i = 0; i < nb; i++) p.B[i] = frand();
    for (size_t i = 0; i < nc; i++) {
        bool in_row = (int)(i % (size_t)p.ldc) < N;
        /* beta == 0 must not read C: fill it with NaN; padding must stay untouched */
        p.C[i] = !in_row ? SENTINEL : beta == 0 ? NAN : frand();
    }
    memcpy(p.C0, p.C, sizeof(float) * nc);
    return p;
}

static void release(problem *p)
{
    free(p->A), free(p->B), free(p->C), free(p->C0);
}

static void run(problem *p)
{
    tg_sgemm(p->ta, p->tb, p->M, p->N, p->K, p->alpha, p->A, p->lda, p->B, p->ldb, p->beta, p->C, p->ldc);
}

/* Every element within the bound of the header comment; padding untouched. */
static void check(const problem *p, const char *what)
{
    for (int i = 0; i < p->M; i++) {
        for (int j = 0; j < p->N; j++) {
            double dot = 0, mag = 0;
            for (int k = 0; k < p->K; k++) {
                double ab = (double)a_at(p, i, k) * b_at(p, k, j);
                dot += ab;
                mag += fabs(ab);
            }
            double c0 = p->beta == 0 ? 0 : p->C0[(size_t)i * p->ldc + j];
            double ref = p->alpha * dot + (p->beta == 0 ? 0 : p->beta * c0);
            double tol = (p->K + 2) * (double)FLT_EPSILON * (fabs(p->alpha) * mag + fabs(p->beta * c0));
            double got = p->C[(size_t)i * p->ldc + j];
            if (!(fabs(got - ref) <= tol))
                cr_assert_fail("%s: ta=%d tb=%d M=%d N=%d K=%d alpha=%g beta=%g ld=%d,%d,%d: C[%d,%d] = %.9g, "
                         "expected %.9g (tol %.3g)", what, p->ta, p->tb, p->M, p->N, p->K, p->alpha,
                         p->beta, p->lda, p->ldb, p->ldc, i, j, got, ref, tol);
        }
        for (int j = p->N; j < p->ldc; j++)
            if (p->C[(size_t)i * p->ldc + j] != SENTINEL)
                cr_assert_fail("%s: M=%d N=%d K=%d: padding C[%d,%d] was written", what, p->M, p->N, p->K, i, j);
    }
}

static void one(bool ta, bool tb, int M, int N, int K, float alpha, float beta, int pad, const char *what)
{
    problem p = make(ta, tb, M, N, K, alpha, beta, pad);
    run(&p);
    check(&p, what);
    release(&p);
}

/* All 16 x 16 (M, N) pairs of SIZES for each (ta, tb), K, alpha, beta and the
 * padding varying with the pair; then a few shapes past the blocking sizes
 * (K > KC = 384, M > MC = 1536, N > NC = 672). */
static void sweep(const char *what)
{
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        for (int a = 0; a < NSIZES; a++)
            for (int b = 0; b < NSIZES; b++) {
                int r = a * NSIZES + b + t;
                one(ta, tb, SIZES[a], SIZES[b], SIZES[(a * 7 + b * 3 + t) % NSIZES], ALPHAS[r % 3],
                    BETAS[(r / 3) % 3], r % 2 ? 0 : 1 + r % 5, what);
            }
        one(ta, tb, 300, 257, 129, 1.0f, 0.0f, 0, what);
        one(ta, tb, 300, 257, 129, -2.0f, 0.25f, 3, what);
        one(ta, tb, 37, 45, 800, 0.5f, 1.0f, 0, what);     /* three K blocks */
        one(ta, tb, 1550, 20, 40, 1.0f, 0.25f, 2, what);   /* two M blocks */
        one(ta, tb, 13, 700, 390, 1.0f, 0.0f, 1, what);    /* two N and K blocks */
    }
}

Test(gemm, matches_reference_default_kernel)
{
    tg_threads_set(1);
    sweep(tg_gemm_kernel_name(tg_gemm_get_kernel()));
}

Test(gemm, matches_reference_avx512)
{
    if (!tg_gemm_set_kernel(TG_GEMM_AVX512)) cr_skip_test("this CPU has no AVX-512");
    tg_threads_set(2);
    sweep("avx512");
}

Test(gemm, matches_reference_avx2)
{
    if (!tg_gemm_set_kernel(TG_GEMM_AVX2)) cr_skip_test("this CPU has no AVX2 + FMA");
    cr_assert_eq(tg_gemm_get_kernel(), TG_GEMM_AVX2);
    tg_threads_set(2);
    sweep("avx2");
}

Test(gemm, cblas_path_keeps_blas_semantics)
{
    cr_assert(tg_gemm_set_kernel(TG_GEMM_BLAS));
    for (int t = 0; t < 4; t++) {
        one(t & 1, t & 2, 17, 33, 27, 1.0f, 0.0f, 0, "cblas");
        one(t & 1, t & 2, 100, 31, 64, -2.0f, 0.25f, 3, "cblas");
    }
}


/* OpenBLAS 0.3.21 retries forever when it cannot map its 128 MiB buffer: under
 * an address-space limit that leaves no room for it, products on the OpenBLAS
 * path (float on CPUs without our kernels, every double product) run in plain
 * loops instead (core/kernels/openblas.h), with BLAS semantics. A hang fails
 * the test through its timeout. */
Test(gemm, openblas_path_under_an_address_space_limit_runs_without_its_buffer, .timeout = 60)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("RLIMIT_AS and AddressSanitizer do not mix (it reserves terabytes of address space)");
#elif defined(TG_EMULATED)
    cr_skip_test("under qemu-user RLIMIT_AS limits the emulator's own address space, not the program's");
#else
    cr_assert(tg_gemm_set_kernel(TG_GEMM_BLAS));
    problem ps[8];
    for (int t = 0; t < 4; t++) {
        ps[2 * t] = make(t & 1, t & 2, 17, 133, 27, 1.0f, 0.0f, 0); /* three blocks of 64 columns */
        ps[2 * t + 1] = make(t & 1, t & 2, 100, 31, 64, -2.0f, 0.25f, 3);
    }
    double A[3 * 5], B[3 * 4], C[5 * 4];  /* op(A) = A^T [5,3], B [3,4] */
    for (int i = 0; i < 15; i++) A[i] = frand();
    for (int i = 0; i < 12; i++) B[i] = frand();
    for (int i = 0; i < 20; i++) C[i] = frand();
    double C0[20];
    memcpy(C0, C, sizeof C);
    long vm = vm_size();
    cr_assert_gt(vm, 0);
    cr_assert_eq(setrlimit(RLIMIT_AS, &(struct rlimit){(rlim_t)vm + (32 << 20), (rlim_t)vm + (32 << 20)}), 0);
    void *p = mmap(NULL, 129 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cr_assert_eq(p, MAP_FAILED, "the limit leaves room for OpenBLAS's buffer: nothing to test");
    for (int i = 0; i < 8; i++) {
        run(&ps[i]);
        check(&ps[i], "openblas path, no room for its buffer");
        release(&ps[i]);
    }
    tg_openblas_dgemm(true, false, 5, 4, 3, 0.5, A, 5, B, 4, 2.0, C, 4);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++) {
            double dot = 0;
            for (int k = 0; k < 3; k++) dot += A[k * 5 + i] * B[k * 4 + j];
            cr_expect(fabs(C[i * 4 + j] - (0.5 * dot + 2.0 * C0[i * 4 + j])) <= 1e-15, "C[%d,%d]", i, j);
        }
    cr_expect_eq(tg_openblas_fallbacks(), 9, "products in the plain loops: %ld", tg_openblas_fallbacks());
#endif
}

/* A worker that cannot allocate its pack buffers (an address-space limit
 * set after the caller has its own and the pool's worker runs) borrows the
 * caller's under a lock: products on the shared paths (B shared along M,
 * A along N, each with both transposes) complete with the bits of one
 * thread. */
Test(gemm, a_worker_without_pack_buffers_borrows_the_callers, .timeout = 60)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("RLIMIT_AS and AddressSanitizer do not mix (it reserves terabytes of address space)");
#elif defined(TG_EMULATED)
    cr_skip_test("under qemu-user RLIMIT_AS limits the emulator's own address space, not the program's");
#else
    if (tg_gemm_get_kernel() == TG_GEMM_BLAS) cr_skip_test("no kernel of ours on this CPU");
    static const int shapes[][3] = {{1400, 700, 400}, {40, 900, 700}};
    problem ps[8];
    float *one_thread[8];
    tg_threads_set(2); /* (limit_util.h) */
    tg_threads_set(1);
    for (int i = 0; i < 8; i++) {
        const int *sh = shapes[i / 4];
        ps[i] = make(i & 1, i & 2, sh[0], sh[1], sh[2], 0.5f, 0.25f, 0);
        run(&ps[i]); /* the caller's buffers made here */
        size_t nc = (size_t)ps[i].M * ps[i].ldc;
        one_thread[i] = malloc(sizeof(float) * nc);
        cr_assert_not_null(one_thread[i]);
        memcpy(one_thread[i], ps[i].C, sizeof(float) * nc);
        memcpy(ps[i].C, ps[i].C0, sizeof(float) * nc);
    }
    limit_worker_buffers();
    bool same[8];
    for (int i = 0; i < 8; i++) {
        run(&ps[i]);
        same[i] = memcmp(one_thread[i], ps[i].C, sizeof(float) * (size_t)ps[i].M * ps[i].ldc) == 0;
    }
    limit_lift();
    for (int i = 0; i < 8; i++) {
        cr_assert(same[i], "M=%d N=%d K=%d ta=%d tb=%d: not the bits of one thread", ps[i].M, ps[i].N, ps[i].K,
                  ps[i].ta, ps[i].tb);
        free(one_thread[i]);
        release(&ps[i]);
    }
#endif
}

Test(gemm, env_forces_a_kernel)
{
    /* Each Criterion test runs in a fresh process: the choice is not made yet. */
    setenv("TAPEGRAD_GEMM", "blas", 1);
    cr_assert_eq(tg_gemm_get_kernel(), TG_GEMM_BLAS);
}

Test(gemm, env_naming_no_kernel_is_said, .init = cr_redirect_stderr)
{
    setenv("TAPEGRAD_GEMM", "avx9", 1);
    tg_gemm_kernel k = tg_gemm_get_kernel();
    cr_assert_neq(k, (tg_gemm_kernel)-1);
    fflush(stderr);
    char want[128];
    snprintf(want, sizeof want, "tapegrad: TAPEGRAD_GEMM=avx9 is not blas, avx2 or avx512; using %s\n",
             tg_gemm_kernel_name(k));
    cr_assert_stderr_eq_str(want);
}

Test(gemm, degenerate_sizes)
{
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 1, 1, 1, 1, 1}, c[6];
    for (int i = 0; i < 6; i++) c[i] = NAN;
    tg_sgemm(false, false, 0, 3, 2, 1.0f, a, 2, b, 3, 0.0f, c, 3);  /* M = 0: nothing */
    tg_sgemm(false, false, 2, 0, 2, 1.0f, a, 2, b, 1, 0.0f, c, 1);  /* N = 0: nothing */
    for (int i = 0; i < 6; i++) cr_assert(isnan(c[i]));
    tg_sgemm(false, false, 2, 3, 0, 1.0f, NULL, 1, NULL, 3, 0.0f, c, 3);  /* K = 0, beta 0: C = 0 */
    for (int i = 0; i < 6; i++) cr_assert_eq(c[i], 0.0f);
    for (int i = 0; i < 6; i++) c[i] = (float)i;
    tg_sgemm(false, false, 2, 3, 0, 1.0f, NULL, 1, NULL, 3, 0.5f, c, 3);  /* K = 0: C = beta C */
    for (int i = 0; i < 6; i++) cr_assert_eq(c[i], 0.5f * (float)i);
    a[0] = NAN;  /* alpha = 0: A and B are not used */
    tg_sgemm(false, false, 2, 3, 2, 0.0f, a, 2, b, 3, 2.0f, c, 3);
    for (int i = 0; i < 6; i++) cr_assert_eq(c[i], (float)i);
}

/* Same shapes with 1 and 2 threads, split along M (B's blocks packed once
 * and shared) and along N ({772, 256, 1024} and {256, 1000, 1030}: the
 * GPT-2-style step's weight grads, packing one operand and reading the
 * other in place; {1400, 700, 400}: two K blocks and two N blocks of a
 * shared B): equal bits. */
Test(gemm, bit_identical_for_1_and_2_threads)
{
    if (tg_gemm_get_kernel() == TG_GEMM_BLAS)
        cr_skip_test("no kernel of ours on this CPU: cblas_sgemm's threads promise no bits");
    static const int shapes[][3] = {{300, 257, 129}, {1664, 64, 64}, {64, 1664, 100}, {192, 64, 1664},
                                    {2048, 40, 512}, {40, 900, 700}, {772, 256, 1024}, {256, 1000, 1030},
                                    {1400, 700, 400}};
    for (int s = 0; s < 9; s++)
        for (int t = 0; t < 4; t++) {
            problem p = make(t & 1, t & 2, shapes[s][0], shapes[s][1], shapes[s][2], 0.5f, 0.25f, 0);
            tg_threads_set(1);
            run(&p);
            size_t nc = (size_t)p.M * p.ldc;
            float *one_thread = malloc(sizeof(float) * nc);
            cr_assert_not_null(one_thread);
            memcpy(one_thread, p.C, sizeof(float) * nc);
            memcpy(p.C, p.C0, sizeof(float) * nc);
            tg_threads_set(2);
            run(&p);
            cr_assert(memcmp(one_thread, p.C, sizeof(float) * nc) == 0, "M=%d N=%d K=%d ta=%d tb=%d",
                      p.M, p.N, p.K, t & 1, (t & 2) != 0);
            free(one_thread);
            release(&p);
        }
}

/* A few rows of a product alone give the bits they have in the whole
 * product, whichever path (packed or direct, 12-, 8- or 4-row kernel) each
 * takes: a decoding step (one row per sequence) then reproduces a whole
 * pass exactly. */
Test(gemm, rows_alone_equal_rows_of_the_whole_product)
{
    if (tg_gemm_get_kernel() == TG_GEMM_BLAS)
        cr_skip_test("no kernel of ours on this CPU: cblas_sgemm promises no bits");
    static const int shapes[][3] = {{40, 900, 700}, {30, 300, 16}, {26, 48, 64}};
    static const int rows[] = {1, 2, 5, 8, 9, 13};
    for (int s = 0; s < 3; s++)
        for (int t = 0; t < 4; t++) {
            problem p = make(t & 1, t & 2, shapes[s][0], shapes[s][1], shapes[s][2], 0.5f, 0.25f, 0);
            run(&p);
            for (int r = 0; r < 6; r++) {
                int r0 = (7 * r) % (p.M - rows[r] + 1), m = rows[r];
                float *c = malloc(sizeof(float) * (size_t)m * p.ldc);
                cr_assert_not_null(c);
                memcpy(c, p.C0 + (size_t)r0 * p.ldc, sizeof(float) * (size_t)m * p.ldc);
                const float *a = p.A + (p.ta ? (size_t)r0 : (size_t)r0 * p.lda);
                tg_sgemm(p.ta, p.tb, m, p.N, p.K, p.alpha, a, p.lda, p.B, p.ldb, p.beta, c, p.ldc);
                cr_assert(memcmp(c, p.C + (size_t)r0 * p.ldc, sizeof(float) * (size_t)m * p.ldc) == 0,
                          "rows [%d, %d) of M=%d N=%d K=%d ta=%d tb=%d", r0, r0 + m, p.M, p.N, p.K, t & 1,
                          (t & 2) != 0);
                free(c);
            }
            release(&p);
        }
}

/* The bias added in the store (tg_sgemm_bias) gives the bits of the bias
 * copied into C and a product with beta 1, on every kernel, through edge
 * tiles, several K blocks and both splits, and leaves C's padding alone. */
static void bias_same_bits(const char *what)
{
    static const int shapes[][3] = {{1, 1, 1}, {5, 17, 3}, {26, 48, 64}, {300, 257, 129}, {37, 45, 800},
                                    {1664, 64, 64}, {64, 700, 390}, {2048, 40, 512}};
    for (int s = 0; s < 8; s++)
        for (int t = 0; t < 4; t++)
            for (int threads = 1; threads <= 2; threads++) {
                tg_threads_set(threads);
                problem p = make(t & 1, t & 2, shapes[s][0], shapes[s][1], shapes[s][2], 0.5f, 1.0f, s % 3);
                float *bias = malloc(sizeof(float) * (size_t)p.N);
                cr_assert_not_null(bias);
                for (int j = 0; j < p.N; j++) bias[j] = frand();
                for (int i = 0; i < p.M; i++) memcpy(p.C + (size_t)i * p.ldc, bias, sizeof(float) * (size_t)p.N);
                run(&p);  /* beta 1 over C = bias */
                size_t nc = (size_t)p.M * p.ldc;
                float *with_bias = malloc(sizeof(float) * nc);
                cr_assert_not_null(with_bias);
                for (size_t i = 0; i < nc; i++) with_bias[i] = (int)(i % (size_t)p.ldc) < p.N ? NAN : SENTINEL;
                tg_sgemm_bias(p.ta, p.tb, p.M, p.N, p.K, p.alpha, p.A, p.lda, p.B, p.ldb, bias, with_bias, p.ldc);
                cr_assert(memcmp(with_bias, p.C, sizeof(float) * nc) == 0, "%s: M=%d N=%d K=%d ta=%d tb=%d threads=%d",
                          what, p.M, p.N, p.K, t & 1, (t & 2) != 0, threads);
                free(with_bias);
                free(bias);
                release(&p);
            }
}

Test(gemm, bias_in_the_store_same_bits_as_bias_then_beta_1)
{
    bias_same_bits(tg_gemm_kernel_name(tg_gemm_get_kernel()));
    if (tg_gemm_set_kernel(TG_GEMM_AVX2)) bias_same_bits("avx2");
    cr_assert(tg_gemm_set_kernel(TG_GEMM_BLAS));
    bias_same_bits("cblas");
    float c[6] = {NAN, NAN, NAN, NAN, NAN, NAN}, bias[3] = {1, 2, 3};
    tg_sgemm_bias(false, false, 2, 3, 0, 1.0f, NULL, 1, NULL, 3, bias, c, 3);  /* K = 0: every row = bias */
    for (int i = 0; i < 6; i++) cr_assert_eq(c[i], bias[i % 3]);
}

Test(gemm, makes_no_tg_malloc)
{
    tg_threads_set(2);
    problem p = make(false, true, 300, 257, 129, 1.0f, 0.0f, 0);
    uint64_t before = tg_alloc_count();
    run(&p);  /* the first call allocates the pack buffers, outside tg_malloc */
    run(&p);
    cr_assert_eq(tg_alloc_count(), before);
    release(&p);
}

/* ---- the thread pool --------------------------------------------------------- */

typedef struct cover_ctx {
    atomic_int *hits;
    int calls_begin[64], calls_end[64];
    atomic_int calls;
    pthread_t caller;
    atomic_int nested_off_thread;
} cover_ctx;

static void cover(void *p, int begin, int end)
{
    cover_ctx *c = p;
    int slot = atomic_fetch_add(&c->calls, 1);
    if (slot < 64) c->calls_begin[slot] = begin, c->calls_end[slot] = end;
    for (int i = begin; i < end; i++) atomic_fetch_add(&c->hits[i], 1);
}

Test(threads, parallel_for_covers_every_index_once_in_fixed_chunks)
{
    static const int ns[] = {0, 1, 2, 3, 7, 100, 1001};
    for (int T = 1; T <= 4; T++) {
        tg_threads_set(T);
        cr_assert_eq(tg_threads_get(), T);
        for (int s = 0; s < 7; s++) {
            int n = ns[s];
            cover_ctx c;
            memset(&c, 0, sizeof c);
            c.hits = calloc((size_t)n + 1, sizeof *c.hits);
            cr_assert_not_null(c.hits);
            tg_parallel_for(n, cover, &c);
            for (int i = 0; i < n; i++) cr_assert_eq(atomic_load(&c.hits[i]), 1, "T=%d n=%d i=%d", T, n, i);
            /* the non-empty chunks are exactly [n*c/C, n*(c+1)/C), C = min(n, 4 T) */
            int C = tg_parallel_chunks(n);
            cr_assert_eq(C, n < 4 * T ? n : 4 * T, "T=%d n=%d", T, n);
            int expect_calls = 0;
            for (int k = 0; k < C; k++) {
                int b = (int)((long)n * k / C), e = (int)((long)n * (k + 1) / C);
                if (b == e) continue;
                expect_calls++;
                bool found = false;
                for (int m = 0; m < atomic_load(&c.calls); m++)
                    found |= c.calls_begin[m] == b && c.calls_end[m] == e;
                cr_assert(found, "T=%d n=%d: chunk [%d, %d) missing", T, n, b, e);
            }
            cr_assert_eq(atomic_load(&c.calls), expect_calls);
            free(c.hits);
        }
    }
}

static void inner(void *p, int begin, int end)
{
    cover_ctx *c = p;
    if (!pthread_equal(pthread_self(), c->caller)) atomic_fetch_add(&c->nested_off_thread, 1);
    for (int i = begin; i < end; i++) atomic_fetch_add(&c->hits[i], 1);
}

/* Each outer chunk runs an inner parallel_for over [0, 50): it must stay on
 * the thread that runs the outer chunk and still cover everything. */
static void outer(void *p, int begin, int end)
{
    (void)begin, (void)end;
    cover_ctx *shared = p;
    cover_ctx c;
    memset(&c, 0, sizeof c);
    atomic_int hits[50];
    for (int i = 0; i < 50; i++) atomic_init(&hits[i], 0);
    c.hits = hits;
    c.caller = pthread_self();
    tg_parallel_for(50, inner, &c);
    int bad = atomic_load(&c.nested_off_thread);
    for (int i = 0; i < 50; i++) bad += atomic_load(&hits[i]) != 1;
    atomic_fetch_add(&shared->nested_off_thread, bad);
    atomic_fetch_add(&shared->calls, 1);
}

Test(threads, nested_parallel_for_runs_serially)
{
    tg_threads_set(2);
    cover_ctx c;
    memset(&c, 0, sizeof c);
    tg_parallel_for(2, outer, &c);
    cr_assert_eq(atomic_load(&c.calls), 2);
    cr_assert_eq(atomic_load(&c.nested_off_thread), 0);
}

Test(threads, default_is_one_per_core)
{
    tg_threads_set(0);
    cr_assert_geq(tg_threads_get(), 1);
    tg_threads_set(3);
    cr_assert_eq(tg_threads_get(), 3);
}
