/* tapegrad: error messages for functions that touch the outside world.
 *
 * Such functions (files, CLI arguments, data files, layer set-up) return 0 on
 * success and -1 on failure with a message a person can act on, written into
 * a caller-supplied buffer err of errlen bytes (err may be NULL or errlen 0:
 * the message is then dropped). Ops on a tape use the tape's error instead
 * (core/engine/tape.h). */
#ifndef TAPEGRAD_ERROR_H
#define TAPEGRAD_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Formats the message into err (when there is room) and returns -1. */
int tg_set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif
