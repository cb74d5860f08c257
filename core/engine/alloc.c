/* tapegrad: counted, failure-injectable allocation (see core/engine/alloc.h). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "error.h"

/* Atomic: tapes on different threads allocate at the same time. */
static atomic_uint_fast64_t n_allocs;  /* successful allocations */
static atomic_uint_fast64_t fail_at;   /* 0: off; else the countdown to the failing call */

static int should_fail(void)
{
    uint_fast64_t n = atomic_load_explicit(&fail_at, memory_order_relaxed);
    while (n != 0)
        if (atomic_compare_exchange_weak_explicit(&fail_at, &n, n - 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            return n == 1;
    return 0;
}

static void counted(void) { atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed); }

/* Every failed allocation leaves a message; callers that know what the
 * memory was for replace it with a better one. */
static void *oom(size_t n)
{
    tg_error_set("out of memory (%zu bytes)", n);
    return NULL;
}

void *tg_malloc(size_t n)
{
    if (should_fail()) return oom(n);
    void *p = malloc(n ? n : 1);
    if (!p) return oom(n);
    counted();
    return p;
}

void *tg_calloc(size_t count, size_t size)
{
    if (should_fail()) return oom(count * size);
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) return oom(count * size);
    counted();
    return p;
}

void *tg_realloc(void *p, size_t n)
{
    if (should_fail()) return oom(n);
    void *q = realloc(p, n ? n : 1);
    if (!q) return oom(n);
    counted();
    return q;
}

void tg_free(void *p) { free(p); }

char *tg_strdup(const char *s)
{
    TG_REFUSE_NULL(s, "the string", NULL);
    size_t n = strlen(s) + 1;
    char *d = tg_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void *tg_pages_map(size_t n)
{
    if (should_fail()) return oom(n);
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return oom(n);
    counted();
    return p;
}

void tg_pages_unmap(void *p, size_t n)
{
    if (p) munmap(p, n);
}

uint64_t tg_alloc_count(void) { return atomic_load_explicit(&n_allocs, memory_order_relaxed); }
void tg_alloc_fail_at(uint64_t n) { atomic_store_explicit(&fail_at, n, memory_order_relaxed); }
