/* tapegrad: counted, failure-injectable allocation (see core/engine/alloc.h). */
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

static uint64_t n_allocs;  /* successful allocations */
static uint64_t fail_at;   /* 0: off; else the countdown to the failing call */

static int should_fail(void)
{
    if (fail_at == 0) return 0;
    if (--fail_at == 0) return 1;
    return 0;
}

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
    n_allocs++;
    return p;
}

void *tg_calloc(size_t count, size_t size)
{
    if (should_fail()) return oom(count * size);
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) return oom(count * size);
    n_allocs++;
    return p;
}

void *tg_realloc(void *p, size_t n)
{
    if (should_fail()) return oom(n);
    void *q = realloc(p, n ? n : 1);
    if (!q) return oom(n);
    n_allocs++;
    return q;
}

void tg_free(void *p) { free(p); }

char *tg_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = tg_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

uint64_t tg_alloc_count(void) { return n_allocs; }
void tg_alloc_fail_at(uint64_t n) { fail_at = n; }
