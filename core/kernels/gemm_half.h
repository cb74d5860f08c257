/* tapegrad internal: GEMMs of bfloat16 or float16 operands with float32
 * accumulation and result (core/kernels/gemm_half.c), the products of mixed
 * precision (core/engine/tape.h's autocast).
 *
 * Not installed: users reach it through tg_matmul and the ops that run it
 * under autocast. */
#ifndef TAPEGRAD_GEMM_HALF_H
#define TAPEGRAD_GEMM_HALF_H

#include <stdbool.h>
#include <stdint.h>

#include "../engine/dtype.h"

/* C[M,N] = alpha op(A) op(B) + beta C with A and B of dtype dt (TG_BF16 or
 * TG_F16), C float32; the layout and BLAS semantics of tg_sgemm (gemm.h):
 * row-major, op(A) [M,K] (A [K,M] when ta), op(B) [K,N] (B [N,K] when tb),
 * beta == 0 never reads C. Products of two half values are exact in float32
 * and summed in float32 (the bfloat16 kernels: VDPBF16PS's or TDPBF16PS's
 * order of sums (see gemm_half.c), denormal inputs read as zero and
 * denormal sums flushed to zero). Bit-identical for any thread count, but
 * for the widening kernel where tg_sgemm is cblas_sgemm (aarch64). False,
 * with the error set, only when its scratch cannot be allocated (C
 * unchanged). */
bool tg_gemm_half(tg_dtype dt, bool ta, bool tb, int M, int N, int K, float alpha, const uint16_t *A, int lda,
                  const uint16_t *B, int ldb, float beta, float *C, int ldc);

/* The same with float32 operands, each element rounded to dt first: every
 * product autocast runs (tg_matmul's, attention's, convolution's). A
 * bfloat16 kernel rounds the operands as it packs them, making no copy;
 * the widening kernel rounds them to half values as float32s, in one pass
 * across the threads into per-thread copies, for tg_sgemm. False, with
 * the error set, when those copies or the pack buffers cannot be allocated
 * (C unchanged). */
bool tg_gemm_rounded(tg_dtype dt, bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc);

/* C [M,N] = round(A) op(round(B)) + bias in every row, A [M,K] and B
 * contiguous (a linear layer's forward): the bits of tg_gemm_rounded with
 * beta 1 on a C holding the bias rows, without writing those rows first
 * (a bfloat16 kernel adds the bias as it stores). False as tg_gemm_rounded
 * (C may then hold the bias rows). */
bool tg_gemm_rounded_bias(tg_dtype dt, bool tb, int M, int N, int K, const float *A, const float *B,
                          const float *bias, float *C);

/* The kernel tg_gemm_half runs, chosen once from the CPU (amx-bf16 where it
 * can run, else avx512bf16 where it can and VDPBF16PS outruns the FMA,
 * tg_gemm_half_bf16_rate, else widen) unless
 * TAPEGRAD_GEMM_HALF names one (widen, avx512bf16, avx512bf16-emulated,
 * amx-bf16, amx-bf16-emulated). A bfloat16 kernel is chosen only after one
 * product of it is within the error bound of a double reference; one that
 * is not is said on stderr and passed over. The bfloat16 kernels run bfloat16 products
 * with K > 0 and alpha != 0; float16 operands are always widened
 * (AVX512-FP16 and AMX-FP16 are not used). */
typedef enum tg_gemm_half_kernel {
    TG_GEMM_HALF_WIDEN,      /* operands widened to float32, tg_sgemm: every CPU */
    TG_GEMM_HALF_AVX512BF16, /* VDPBF16PS, 12 x 32 tiles: x86-64 CPUs with AVX512-BF16 */
    /* The same kernel with the instruction emulated in scalar code (its
     * bits): every CPU, never chosen by itself. A test device, and slow. */
    TG_GEMM_HALF_AVX512BF16_EMULATED,
    /* TDPBF16PS, 32 x 32 blocks of four 16 x 16 tiles: x86-64 Linux CPUs with
     * AMX-BF16 and AMX-TILE whose kernel grants the tile state */
    TG_GEMM_HALF_AMX,
    /* The AMX kernel with the tiles and TDPBF16PS emulated: every CPU, never
     * chosen by itself; a test device, slow. */
    TG_GEMM_HALF_AMX_EMULATED,
} tg_gemm_half_kernel;

tg_gemm_half_kernel tg_gemm_half_get_kernel(void);
/* VDPBF16PS's flop rate over VFMADD231PS's on this CPU (zmm, one thread),
 * measured once per process in about a millisecond; 0 where VDPBF16PS
 * cannot run. The default takes the avx512bf16 kernel only where it is at
 * least TG_GEMM_HALF_BF16_RATE_MIN: below, widening the operands into the
 * float32 kernel is faster. */
double tg_gemm_half_bf16_rate(void);
#define TG_GEMM_HALF_BF16_RATE_MIN 1.25
const char *tg_gemm_half_kernel_name(tg_gemm_half_kernel k);
/* Forces a kernel (tests, benchmarks), unchecked; false, and nothing
 * changes, when this CPU cannot run it. */
bool tg_gemm_half_set_kernel(tg_gemm_half_kernel k);
/* Whether this CPU can run kernel k (for amx-bf16: and the operating system
 * granted the tile state, asked for here the first time); bench/bench_peak.c
 * runs its TDPBF16PS loop only then. */
bool tg_gemm_half_can_run(tg_gemm_half_kernel k);

#endif
