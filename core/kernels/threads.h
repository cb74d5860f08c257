/* tapegrad: a tiny persistent thread pool for the library's own kernels.
 *
 * The float GEMM (core/kernels/gemm.c) splits its output across these threads. The
 * workers are created on first use; between jobs each spins for up to 50 us
 * (yielding as it does: a job usually follows within that) and then sleeps
 * on a condition variable, so an idle pool costs a shared machine nothing
 * (threads.c, SPIN_NS). A forked child starts with no workers and creates its
 * own when it needs them.
 */
#ifndef TAPEGRAD_THREADS_H
#define TAPEGRAD_THREADS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Threads used by tapegrad's kernels (the caller counts as one); n <= 0 means
 * one per online core, which is also the default. Also sets OpenBLAS's thread
 * count, so the double build's dgemm follows. */
void tg_threads_set(int n);
int tg_threads_get(void);

/* Runs fn(ctx, begin, end) over [0, n) split into tg_threads_get() contiguous
 * chunks (chunk c is [n*c/T, n*(c+1)/T)); the caller runs chunk 0, the workers
 * the others, and it returns when all are done. The split depends only on n
 * and the thread count. Called from inside a chunk (nested), from a second
 * thread while the pool is busy, or when workers cannot be created, it runs the
 * same chunks one after the other on the calling thread. n <= 0: nothing. */
void tg_parallel_for(int n, void (*fn)(void *ctx, int begin, int end), void *ctx);

/* fn(ctx, begin, end) over [0, n) in tg_threads_get() contiguous pieces on
 * the pool, or in one call when n is below 2 * grain (waking the pool costs about as much as `grain` elements of
 * work). For loops whose result does not depend on how [0, n) is cut. */
void tg_parallel_range(size_t n, size_t grain, void (*fn)(void *ctx, size_t begin, size_t end), void *ctx);

#ifdef __cplusplus
}
#endif

#endif
