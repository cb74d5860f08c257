/* tapegrad: OpenBLAS's GEMMs, called so that they cannot hang (see
 * core/kernels/openblas.h). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "openblas.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/resource.h>

/* OpenBLAS's buffer (BUFFER_SIZE, 128 MiB on x86-64 and arm64 servers) and
 * its bookkeeping. */
enum { OPENBLAS_BUFFER = (128 << 20) + (1 << 20) };

static _Thread_local bool g_mapped;  /* this thread has had an OpenBLAS product */
static atomic_long g_fallbacks;
/* Held across a thread's first product, from the check to OpenBLAS's own
 * mapping: two threads checking at once would both find the room that
 * only one buffer fits in, and the second would hang. */
static pthread_mutex_t g_first = PTHREAD_MUTEX_INITIALIZER;

/* Whether OpenBLAS can map its buffer for this thread's first product:
 * always without an address-space limit. */
static bool buffer_fits(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
        void *p = mmap(NULL, OPENBLAS_BUFFER, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) return false;
        munmap(p, OPENBLAS_BUFFER);
    }
    return true;
}

/* name: cblas_fn when OpenBLAS's buffer fits, else C[M,N] = alpha op(A)
 * op(B) + beta C in plain loops (beta == 0 never reads C). */
#define OPENBLAS_GEMM(name, T, cblas_fn)                                                           \
    void name(bool ta, bool tb, int M, int N, int K, T alpha, const T *A, int lda, const T *B,    \
              int ldb, T beta, T *C, int ldc)                                                      \
    {                                                                                              \
        bool first = !g_mapped;                                                                    \
        if (first) pthread_mutex_lock(&g_first);                                                   \
        if (!first || buffer_fits()) {                                                             \
            cblas_fn(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, \
                     M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);                                \
            if (first) g_mapped = true, pthread_mutex_unlock(&g_first);                            \
            return;                                                                                \
        }                                                                                          \
        pthread_mutex_unlock(&g_first);                                                            \
        atomic_fetch_add(&g_fallbacks, 1);                                                         \
        /* 64 sums of a row at a time, each over k in order, so that the                          \
           inner loop runs along a row of B (a thread's every product may                         \
           come here) */                                                                           \
        for (int i = 0; i < M; i++)                                                                \
            for (int j0 = 0; j0 < N; j0 += 64) {                                                   \
                int nj = N - j0 < 64 ? N - j0 : 64;                                                \
                T s[64] = {0};                                                                     \
                for (int k = 0; k < K; k++) {                                                      \
                    T a = A[ta ? (size_t)k * lda + i : (size_t)i * lda + k];                       \
                    for (int j = 0; j < nj; j++)                                                   \
                        s[j] += a * B[tb ? (size_t)(j0 + j) * ldb + k : (size_t)k * ldb + j0 + j]; \
                }                                                                                  \
                T *c = C + (size_t)i * ldc + j0;                                                   \
                for (int j = 0; j < nj; j++) c[j] = beta == 0 ? alpha * s[j] : alpha * s[j] + beta * c[j]; \
            }                                                                                      \
    }
OPENBLAS_GEMM(tg_openblas_sgemm, float, cblas_sgemm)
OPENBLAS_GEMM(tg_openblas_dgemm, double, cblas_dgemm)

long tg_openblas_fallbacks(void) { return atomic_load(&g_fallbacks); }
