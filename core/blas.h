/* tapegrad internal: the one pair of BLAS entry points, by precision. */
#ifndef TAPEGRAD_BLAS_H
#define TAPEGRAD_BLAS_H

#include <cblas.h>

#ifdef TAPEGRAD_DOUBLE
#define TG_GEMM cblas_dgemm
#else
#define TG_GEMM cblas_sgemm
#endif

/* C[M,N] = alpha * op(A) op(B) + beta * C, all row-major and contiguous;
 * op(A) is [M,K], op(B) is [K,N]. */
#define tg_gemm(ta, tb, M, N, K, alpha, A, B, beta, C)                                          \
    TG_GEMM(CblasRowMajor, (ta) ? CblasTrans : CblasNoTrans, (tb) ? CblasTrans : CblasNoTrans,  \
            (M), (N), (K), (alpha), (A), (ta) ? (M) : (K), (B), (tb) ? (K) : (N), (beta), (C), (N))

#endif
