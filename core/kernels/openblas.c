/* tapegrad: OpenBLAS's GEMMs, called so that they cannot hang (see
 * core/kernels/openblas.h). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "openblas.h"

#include <cblas.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/resource.h>

/* OpenBLAS's buffer (BUFFER_SIZE, 128 MiB on x86-64 and arm64 servers) and
 * its bookkeeping. */
enum { OPENBLAS_BUFFER = (128 << 20) + (1 << 20) };

static _Thread_local bool g_mapped;  /* this thread has had an OpenBLAS product */
static atomic_long g_fallbacks;

/* Whether OpenBLAS can map its buffer for this thread's product: always
 * without an address-space limit, and once a product on the thread has had it. */
static bool buffer_fits(void)
{
    if (g_mapped) return true;
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
        void *p = mmap(NULL, OPENBLAS_BUFFER, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) return false;
        munmap(p, OPENBLAS_BUFFER);
    }
    g_mapped = true;
    return true;
}

/* name: cblas_fn when OpenBLAS's buffer fits, else C[M,N] = alpha op(A)
 * op(B) + beta C in plain loops (beta == 0 never reads C). */
#define OPENBLAS_GEMM(name, T, cblas_fn)                                                           \
    void name(bool ta, bool tb, int M, int N, int K, T alpha, const T *A, int lda, const T *B,    \
              int ldb, T beta, T *C, int ldc)                                                      \
    {                                                                                              \
        if (buffer_fits()) {                                                                       \
            cblas_fn(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, \
                     M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);                                \
            return;                                                                                \
        }                                                                                          \
        atomic_fetch_add(&g_fallbacks, 1);                                                         \
        for (int i = 0; i < M; i++)                                                                \
            for (int j = 0; j < N; j++) {                                                          \
                T s = 0;                                                                           \
                for (int k = 0; k < K; k++)                                                        \
                    s += A[ta ? (size_t)k * lda + i : (size_t)i * lda + k] *                       \
                         B[tb ? (size_t)j * ldb + k : (size_t)k * ldb + j];                        \
                T *c = C + (size_t)i * ldc + j;                                                    \
                *c = beta == 0 ? alpha * s : alpha * s + beta * *c;                                \
            }                                                                                      \
    }
OPENBLAS_GEMM(tg_openblas_sgemm, float, cblas_sgemm)
OPENBLAS_GEMM(tg_openblas_dgemm, double, cblas_dgemm)

long tg_openblas_fallbacks(void) { return atomic_load(&g_fallbacks); }
