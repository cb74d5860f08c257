/* tapegrad: the one place the library asks the system for memory.
 *
 * Every heap allocation of tapegrad goes through tg_malloc / tg_calloc /
 * tg_realloc / tg_free, so tests can count allocations (a training step after
 * the first must make none) and make the n-th one fail (every failure path
 * must report an error and leak nothing). The counter and the countdown are
 * atomic, so tapes on several threads may allocate at once.
 */
#ifndef TAPEGRAD_ALLOC_H
#define TAPEGRAD_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void *tg_malloc(size_t n);
void *tg_calloc(size_t count, size_t size);
void *tg_realloc(void *p, size_t n);
void tg_free(void *p);
char *tg_strdup(const char *s);
/* n bytes of fresh zeroed pages straight from the system (mmap), for memory
 * whose addresses must not go back to malloc (core/engine/headers.h). */
void *tg_pages_map(size_t n);
void tg_pages_unmap(void *p, size_t n);

/* Number of successful tg_malloc/tg_calloc/tg_realloc/tg_pages_map calls so far,
 * all threads together. */
uint64_t tg_alloc_count(void);
/* Make the n-th allocation from now fail (1 = the next one); 0 disables. */
void tg_alloc_fail_at(uint64_t n);

#ifdef __cplusplus
}
#endif

#endif
