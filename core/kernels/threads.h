/* tapegrad: a tiny persistent thread pool for the library's own kernels.
 *
 * The float GEMM (core/kernels/gemm.c) splits its output across these threads,
 * the elementwise, layernorm and reduction loops their elements or rows, and
 * attention its batches, each only where tg_parallel_pays says so. The
 * workers are created on first use; between jobs each spins for 64 us to 1 ms,
 * a budget learnt from the gaps between recent jobs (long enough for the
 * short gaps inside a training step, not through its long serial stretches),
 * and then sleeps on a condition variable, so an idle pool costs a shared
 * machine nothing (threads.c, spin_choose). A forked child starts with no workers and creates its own when it
 * needs them.
 */
#ifndef TAPEGRAD_THREADS_H
#define TAPEGRAD_THREADS_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Threads used by tapegrad's kernels (the caller counts as one); n <= 0 means
 * one per online core, which is also the default. Also sets OpenBLAS's thread
 * count, so the double build's dgemm follows. */
void tg_threads_set(int n);
int tg_threads_get(void);

/* Runs fn(ctx, begin, end) over [0, n) cut into tg_parallel_chunks(n)
 * contiguous chunks (chunk c of C is [n*c/C, n*(c+1)/C)), which the caller
 * and the workers claim one at a time; it returns when all are done. The cut
 * depends only on n and the thread count, not on who runs which chunk. Called
 * from inside a chunk (nested), from a second thread while the pool is busy,
 * or when workers cannot be created, it runs the same chunks one after the
 * other on the calling thread. n <= 0: nothing. */
void tg_parallel_for(int n, void (*fn)(void *ctx, int begin, int end), void *ctx);

/* How many chunks tg_parallel_for cuts [0, n) into: min(n, 4 per thread). */
int tg_parallel_chunks(int n);

/* The size rule: whether a loop that takes `ns` nanoseconds on one thread is
 * worth splitting across the pool (core/kernels/parallel.c gives the
 * measurements it rests on). Every call site asks it with its own measured
 * cost per element; false on one thread. */
bool tg_parallel_pays(double ns);

/* fn(ctx, begin, end) over [0, n) on the pool when n elements of ns_each
 * nanoseconds each pay for it (tg_parallel_pays), else in one call. For
 * loops whose result does not depend on how [0, n) is cut. */
void tg_parallel_range(size_t n, double ns_each, void (*fn)(void *ctx, size_t begin, size_t end), void *ctx);

#ifdef __cplusplus
}
#endif

#endif
