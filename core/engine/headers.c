/* tapegrad: a tape's header store, whose addresses are never reused (see
 * core/engine/headers.h). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "headers.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"

/* Address space per block; only touched pages cost memory. Large, because a
 * finished block stays mapped (read-only zeros) as long as the tape lives: at
 * about 100 bytes a header, one block holds ~650k headers, and the process's
 * mapping count (vm.max_map_count, 65530 by default) runs out only after
 * ~10^10 of them instead of ~10^9 with 4 MiB blocks. */
#define BLOCK_BYTES ((size_t)64 << 20)
#define HEADER_ALIGN 16

/* Kept outside its block, so a finished block becomes one read-only mapping
 * (which the kernel merges with a neighbouring one). */
struct tg_hblock {
    tg_hblock *prev;
    unsigned char *base;
    size_t size;     /* bytes mapped */
    size_t used;     /* the cursor: bytes from base */
    size_t released; /* bytes from base that are zero pages already */
};

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static tg_hblock *block_new(tg_hblock *prev, size_t need)
{
    size_t page = page_size(), size = need > BLOCK_BYTES ? (need + page - 1) / page * page : BLOCK_BYTES;
    tg_hblock *b = tg_malloc(sizeof *b);
    if (!b) return NULL;
    void *p = tg_pages_map(size);
    if (!p) {
        tg_free(b);
        return NULL;
    }
    *b = (tg_hblock){.prev = prev, .base = p, .size = size};
    return b;
}

void *tg_headers_take(tg_hblock **cur, size_t size)
{
    TG_REFUSE_NULL(cur, "the store", NULL);
    size = (size + HEADER_ALIGN - 1) / HEADER_ALIGN * HEADER_ALIGN;
    tg_hblock *b = *cur;
    if (!b || b->size - b->used < size) {
        b = block_new(b, size);
        if (!b) return NULL;
        *cur = b;
    }
    void *p = b->base + b->used;
    b->used += size;
    return p;
}

/* [released, to) of b becomes read-only zero pages; a failure keeps the old
 * pages (still dead headers, still refused) and is tried again at the next
 * reset. */
static void release(tg_hblock *b, size_t to)
{
    if (to <= b->released) return;
    void *p = b->base + b->released;
    if (mmap(p, to - b->released, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
        b->released = to;
}

void tg_headers_release(tg_hblock *cur)
{
    if (!cur) return;
    release(cur, cur->used / page_size() * page_size());  /* the cursor's page still takes headers */
    /* older blocks take no more headers: all of each goes, in one mapping */
    for (tg_hblock *b = cur->prev; b && b->released < b->size; b = b->prev) release(b, b->size);
}

bool tg_headers_own(const tg_hblock *cur, const void *p)
{
    for (const tg_hblock *b = cur; b; b = b->prev)
        if ((uintptr_t)p >= (uintptr_t)b->base && (uintptr_t)p < (uintptr_t)b->base + b->size) return true;
    return false;
}

void tg_headers_free(tg_hblock *cur)
{
    for (tg_hblock *b = cur, *prev; b; b = prev) {
        prev = b->prev;
        tg_pages_unmap(b->base, b->size);
        tg_free(b);
    }
}
