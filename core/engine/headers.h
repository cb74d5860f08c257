/* tapegrad: where a tape's tensor headers live (core/engine/headers.c).
 *
 * A tensor the user keeps across tg_tape_reset is a pointer to its header, and
 * the only thing an op can check is what that memory holds. If a newer header
 * could start at the same address, the old pointer would read it and pass for
 * live. So the headers of a tape come from a store whose addresses are never
 * handed out twice while the tape lives: a cursor that only moves forward,
 * through blocks mapped from the system. At each reset the pages wholly behind
 * the cursor are replaced by read-only zero pages: the memory goes back to
 * the system, the addresses stay reserved, and an old pointer reads either
 * its own intact header (an older generation) or zeros (no magic word).
 */
#ifndef TAPEGRAD_HEADERS_H
#define TAPEGRAD_HEADERS_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_hblock tg_hblock;

/* Room for one header (size bytes) at a never-used address of the store whose
 * newest block is *cur (NULL at first); NULL when out of memory. */
void *tg_headers_take(tg_hblock **cur, size_t size);
/* Called at reset: the pages no current or future header lives on go back. */
void tg_headers_release(tg_hblock *cur);
/* Whether p points into the store (a header it made, dead or live). */
bool tg_headers_own(const tg_hblock *cur, const void *p);
void tg_headers_free(tg_hblock *cur);

#ifdef __cplusplus
}
#endif

#endif
