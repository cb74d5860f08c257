/* tapegrad internal: the size rule, and element and row loops split across the pool. */
#include "threads.h"
#include "spin.h"

#include "../engine/error.h"

/* A loop is split when its one-thread time is at least PAR_MIN_NS with a
 * worker spinning for work, PAR_MIN_NS_ASLEEP when every worker sleeps.
 * Measured with bench/bench_threads on a 2-core machine (docs/PERF.md,
 * "Threads", names it), every loop forced to split at every size, best of 15 rounds:
 *   - worker spinning: splitting breaks even at 1-2 us of one-thread work
 *     and gains 1.23-1.65x at 3.5-9 us, at every site (GEMM, relu, add,
 *     gelu, layernorm, sum_dim, attention);
 *   - worker asleep before every call: waking it costs the caller a system
 *     call and the worker 10-100 us before it runs, so splitting gains only
 *     from about 60 us (gelu 57 us: 1.2x) and loses below.
 * Both thresholds sit well above the break-even they guard, so a noisy
 * machine does not tip a loop into a loss. */
#define PAR_MIN_NS 5000.0
#define PAR_MIN_NS_ASLEEP 200000.0

bool tg_parallel_pays(double ns)
{
    if (tg_threads_get() < 2 || ns < PAR_MIN_NS) return false;
    if (ns >= PAR_MIN_NS_ASLEEP || tg_parallel_awake()) return true;
    tg_parallel_wake();  /* this one alone; the workers spin for the next */
    return false;
}

typedef struct range_job {
    size_t n;
    int chunks;
    void (*fn)(void *ctx, size_t begin, size_t end);
    void *ctx;
} range_job;

/* Chunks [first, last) of j->chunks over [0, n). */
static void range_piece(void *p, int first, int last)
{
    const range_job *j = p;
    size_t begin = j->n * (size_t)first / (size_t)j->chunks, end = j->n * (size_t)last / (size_t)j->chunks;
    if (begin < end) j->fn(j->ctx, begin, end);
}

void tg_parallel_range(size_t n, double ns_each, void (*fn)(void *ctx, size_t begin, size_t end), void *ctx)
{
    TG_REFUSE_NULL(fn, "fn", );
    if (!n) return;
    if (!tg_parallel_pays((double)n * ns_each)) {
        fn(ctx, 0, n);
        return;
    }
    int chunks = tg_parallel_chunks(n < (size_t)1 << 30 ? (int)n : 1 << 30);
    range_job j = {n, chunks, fn, ctx};
    tg_parallel_for(chunks, range_piece, &j);
}
