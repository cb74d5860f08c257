/* tapegrad: the checks every layer's init and forward start with, and the
 * undo that makes a failed init leave nothing behind.
 *
 * One convention, the library's: 0 when the call may go on, -1 with a
 * message naming fn (the caller) when it may not.
 */
#ifndef TAPEGRAD_NN_CHECK_H
#define TAPEGRAD_NN_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/engine/params.h"
#include "../core/engine/tape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 0, or -1 with "<fn>: the layer is NULL" (or the parameter store, or the
 * configuration: pass p = layer for a layer without parameters, cfg = layer
 * when there is no configuration) in tg_error(). */
int tg_nn_check_init(const char *fn, const void *layer, const tg_params *p, const void *cfg);

/* 0, or -1 with "<fn>: the tape is NULL", "<fn>: the layer is NULL" or,
 * unless ready (the layer's last parameter exists), "<fn>: the layer is not
 * initialised ..." in the tape and tg_error(). */
int tg_nn_check_forward(const char *fn, tg_tape *t, const void *layer, bool ready);

/* A failed init leaves nothing usable: the parameters added to p after its
 * first `count` leave the store and the layer (size bytes) is zeroed but for
 * its name (NULL: none; TG_NN_NAME_MAX bytes), so its forward refuses it as
 * not initialised and the same prefix can be tried again. Keeps tg_error()
 * (a NULL layer or p is skipped, not reported over it); returns -1. */
int tg_nn_init_undo(void *layer, size_t size, char *name, tg_params *p, int count);

#ifdef __cplusplus
}
#endif

#endif
