/* tapegrad internal: the one GEMM entry point, by precision.
 *
 * float: tapegrad's own sgemm (core/kernels/gemm.c: AVX-512 / AVX2 kernels, its own
 * threads; cblas_sgemm on other CPUs). double: OpenBLAS's cblas_dgemm. Both
 * reach OpenBLAS through core/kernels/openblas.h. */
#ifndef TAPEGRAD_BLAS_H
#define TAPEGRAD_BLAS_H

#include "gemm.h"
#include "openblas.h"

/* C[M,N] = alpha * op(A) op(B) + beta * C, all row-major; op(A) is [M,K],
 * op(B) is [K,N]; rows of A, B, C are lda, ldb, ldc elements apart. */
#ifdef TAPEGRAD_DOUBLE
#define tg_gemm_ld(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)                        \
    tg_openblas_dgemm((ta), (tb), (M), (N), (K), (alpha), (A), (lda), (B), (ldb), (beta), (C), (ldc))
#else
#define tg_gemm_ld(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)                        \
    tg_sgemm((ta), (tb), (M), (N), (K), (alpha), (A), (lda), (B), (ldb), (beta), (C), (ldc))
#endif

/* The same, contiguous: lda = ta ? M : K, ldb = tb ? K : N, ldc = N. */
#define tg_gemm(ta, tb, M, N, K, alpha, A, B, beta, C)                                           \
    tg_gemm_ld((ta), (tb), (M), (N), (K), (alpha), (A), (ta) ? (M) : (K), (B), (tb) ? (K) : (N),  \
               (beta), (C), (N))

/* C[M,N] = op(A) op(B) + bias (bias [N] on every row; C not read), contiguous
 * as tg_gemm. The float build adds bias in the GEMM's store; the double build
 * copies it into C first (the same result). */
#ifdef TAPEGRAD_DOUBLE
#include <string.h>
static inline void tg_gemm_bias(int ta, int tb, int M, int N, int K, const double *A, const double *B,
                                const double *bias, double *C)
{
    for (int i = 0; i < M; i++) memcpy(C + (size_t)i * N, bias, sizeof(double) * (size_t)N);
    if (K > 0) tg_gemm(ta, tb, M, N, K, 1.0, A, B, 1.0, C);
}
#else
#define tg_gemm_bias(ta, tb, M, N, K, A, B, bias, C)                                             \
    tg_sgemm_bias((ta), (tb), (M), (N), (K), 1.0f, (A), (ta) ? (M) : (K), (B), (tb) ? (K) : (N),  \
                  (bias), (C), (N))
#endif

#endif
