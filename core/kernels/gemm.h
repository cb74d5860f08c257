/* tapegrad internal: the library's own single-precision GEMM (core/kernels/gemm.c).
 *
 * Not installed: users reach it through the ops. core/kernels/blas.h's tg_gemm calls
 * it in the float build; it is compiled (and tested) in the double build too.
 */
#ifndef TAPEGRAD_GEMM_H
#define TAPEGRAD_GEMM_H

#include <stdbool.h>

/* C[M,N] = alpha op(A) op(B) + beta C, row-major with leading dimensions
 * lda/ldb/ldc; op(A) is [M,K] (A is [K,M] when ta), op(B) is [K,N] (B is [N,K]
 * when tb). BLAS semantics: beta == 0 never reads C (NaN in C does not
 * propagate); K == 0 or alpha == 0 gives C = beta C without reading A or B;
 * M == 0 or N == 0 does nothing. The result is bit-identical for any thread
 * count (the work is split along M or N, never K). */
void tg_sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);

/* C[M,N] = alpha op(A) op(B) + bias, bias [N] added to every row in the
 * kernel's store (C not read): the same bits as C = bias then tg_sgemm with
 * beta 1, without the pass that copies bias into C. */
void tg_sgemm_bias(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                   const float *B, int ldb, const float *bias, float *C, int ldc);

/* The calling thread's pack buffers of tg_sgemm, made on its first GEMM
 * and kept for the process: *a is TG_GEMM_PACK_A bytes, *b TG_GEMM_PACK_B,
 * 64-byte aligned. Another kernel may use them between two GEMMs of the same
 * thread (the bfloat16 kernels, core/kernels/gemm_half.c). False: out of
 * memory. */
#define TG_GEMM_PACK_A (1536 * 384 * 4) /* MC x KC floats */
#define TG_GEMM_PACK_B (384 * 672 * 4)  /* KC x NC floats */
bool tg_gemm_pack_buffers(void **a, void **b);

/* Which inner kernel tg_sgemm uses. On x86-64, chosen once from the CPU
 * (__builtin_cpu_supports) unless the environment says otherwise:
 * TAPEGRAD_GEMM=blas (always cblas_sgemm), avx2 or avx512. Other CPUs
 * (aarch64) have only TG_GEMM_BLAS: the AVX kernels are not compiled. */
typedef enum tg_gemm_kernel {
    TG_GEMM_BLAS,    /* cblas_sgemm: CPUs with neither AVX2+FMA nor AVX-512 */
    TG_GEMM_AVX2,    /* 6x16 micro-kernel, AVX2 + FMA */
    TG_GEMM_AVX512,  /* 12x32 micro-kernel, AVX-512F */
} tg_gemm_kernel;

tg_gemm_kernel tg_gemm_get_kernel(void);
const char *tg_gemm_kernel_name(tg_gemm_kernel k);
/* Forces a kernel (tests, benchmarks); false, and nothing changes, when this
 * CPU cannot run it. Not thread-safe against concurrent tg_sgemm calls. */
bool tg_gemm_set_kernel(tg_gemm_kernel k);

#endif
