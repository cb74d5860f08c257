/* tapegrad: the error model, one for the whole library.
 *
 * Every call that can fail returns NULL or -1 (or a result struct whose ok
 * is false) and leaves a message a person can act on in tg_error(): the last
 * failure in the calling thread, one thread-local string read the same way
 * everywhere, like dlerror(). A success leaves it alone, so read it right
 * after the call that failed; reading does not clear it.
 *
 * Ops on a tape also keep their first failure in the tape until
 * tg_tape_reset (tg_tape_error, core/engine/tape.h): an op given a NULL input fails
 * quietly, so a whole forward pass is checked once, at the loss, and either
 * message names the op that failed first.
 */
#ifndef TAPEGRAD_ERROR_H
#define TAPEGRAD_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* Longest message kept, with the NUL; longer ones are cut. */
#define TG_ERROR_MAX 2048

/* The last failure's message in this thread, or NULL when nothing failed
 * since the thread started or since tg_error_clear. */
const char *tg_error(void);
void tg_error_clear(void);

/* Makes "fmt..." the message and returns -1. The arguments may include
 * tg_error() itself, to prefix the message of a call that failed
 * (tg_error_set("%s: %s", path, tg_error())). */
int tg_error_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Every public function refuses a NULL pointer it needs with this, naming
 * itself: "tg_tape_reset: the tape is NULL" in tg_error(), then returns ret
 * (left empty in a void function). */
#define TG_REFUSE_NULL(p, what, ret)                                  \
    do {                                                              \
        if (!(p)) {                                                   \
            tg_error_set("%s: %s is NULL", __func__, what);           \
            return ret;                                               \
        }                                                             \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif
