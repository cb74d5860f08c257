/* tapegrad internal: OpenBLAS's GEMMs, called so that they cannot hang.
 *
 * OpenBLAS 0.3.21 (Debian 12) maps a work buffer (128 MiB on x86-64) for a
 * thread's first product and, when the address space cannot hold it, retries
 * forever. Under an address-space limit (RLIMIT_AS) a product would hang
 * before any error path. So a thread's first product under such a limit
 * first maps that much itself (threads one at a time, up to OpenBLAS's own
 * mapping, so that two do not count the same room); when it cannot, this
 * product runs in plain loops instead (the same maths, slower, no buffer)
 * and the run goes on to its own "out of memory" error. Later products on the thread reuse
 * OpenBLAS's buffer. The arguments are cblas's, row-major. */
#ifndef TAPEGRAD_OPENBLAS_H
#define TAPEGRAD_OPENBLAS_H

#include <stdbool.h>

void tg_openblas_sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                       const float *B, int ldb, float beta, float *C, int ldc);
void tg_openblas_dgemm(bool ta, bool tb, int M, int N, int K, double alpha, const double *A, int lda,
                       const double *B, int ldb, double beta, double *C, int ldc);

/* Products this process ran in the plain loops (tests). */
long tg_openblas_fallbacks(void);

#endif
