/* tapegrad: a tape's header store, whose addresses are never reused (see
 * core/engine/headers.h). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "headers.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "alloc.h"

#define BLOCK_BYTES ((size_t)4 << 20) /* address space; only touched pages cost memory */
#define HEADER_ALIGN 16

/* Lives at the start of its block's first page, which is never released. */
struct tg_hblock {
    tg_hblock *prev;
    size_t size;     /* bytes mapped */
    size_t used;     /* the cursor: bytes from the block's start */
    size_t released; /* pages before this offset are zero pages already */
};

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static tg_hblock *block_new(tg_hblock *prev, size_t need)
{
    size_t page = page_size(), first = (sizeof(tg_hblock) + HEADER_ALIGN - 1) / HEADER_ALIGN * HEADER_ALIGN;
    size_t size = first + need > BLOCK_BYTES ? (first + need + page - 1) / page * page : BLOCK_BYTES;
    void *p = tg_map(size);
    if (!p) return NULL;
    tg_hblock *b = p;
    *b = (tg_hblock){.prev = prev, .size = size, .used = first, .released = page};
    return b;
}

void *tg_headers_take(tg_hblock **cur, size_t size)
{
    size = (size + HEADER_ALIGN - 1) / HEADER_ALIGN * HEADER_ALIGN;
    tg_hblock *b = *cur;
    if (!b || b->size - b->used < size) {
        b = block_new(b, size);
        if (!b) return NULL;
        *cur = b;
    }
    void *p = (unsigned char *)b + b->used;
    b->used += size;
    return p;
}

/* [from, to) of b becomes read-only zero pages; a failure keeps the old pages
 * (still dead headers, still refused) and is tried again at the next reset. */
static void release(tg_hblock *b, size_t to)
{
    if (to <= b->released) return;
    void *p = (unsigned char *)b + b->released;
    if (mmap(p, to - b->released, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
        b->released = to;
}

void tg_headers_release(tg_hblock *cur)
{
    if (!cur) return;
    size_t page = page_size();
    release(cur, cur->used / page * page);  /* the cursor's page still takes headers */
    /* older blocks take no more headers: all of their used pages go */
    for (tg_hblock *b = cur->prev; b; b = b->prev) {
        size_t end = (b->used + page - 1) / page * page;
        if (b->released >= end) break;  /* and every block before it was done earlier */
        release(b, end);
    }
}

bool tg_headers_own(const tg_hblock *cur, const void *p)
{
    for (const tg_hblock *b = cur; b; b = b->prev)
        if ((uintptr_t)p >= (uintptr_t)b && (uintptr_t)p < (uintptr_t)b + b->size) return true;
    return false;
}

void tg_headers_free(tg_hblock *cur)
{
    for (tg_hblock *b = cur, *prev; b; b = prev) {
        prev = b->prev;
        tg_unmap(b, b->size);
    }
}
