/* tapegrad internal: element and row loops split across the pool. */
#include "threads.h"

typedef struct range_job {
    size_t n, piece;
    void (*fn)(void *ctx, size_t begin, size_t end);
    void *ctx;
} range_job;

static void range_piece(void *p, int first, int last)
{
    const range_job *j = p;
    size_t begin = (size_t)first * j->piece, end = (size_t)last * j->piece;
    if (end > j->n) end = j->n;
    if (begin < end) j->fn(j->ctx, begin, end);
}

void tg_parallel_range(size_t n, size_t grain, void (*fn)(void *ctx, size_t begin, size_t end), void *ctx)
{
    int T = tg_threads_get();
    if (T < 2 || n < 2 * grain) {
        if (n) fn(ctx, 0, n);
        return;
    }
    range_job j = {n, (n + (size_t)T - 1) / (size_t)T, fn, ctx};
    tg_parallel_for(T, range_piece, &j);
}
