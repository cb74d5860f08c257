/* Helpers shared by the op suites (test_shape.c, test_norm.c, test_loss.c,
 * test_index.c, test_dropout.c, test_errors.c). */
#ifndef TAPEGRAD_TESTS_OPS_UTIL_H
#define TAPEGRAD_TESTS_OPS_UTIL_H

#include <string.h>

#include "test_util.h"

/* An arena tensor holding vals (n = product of shape). */
static inline tg_tensor *mk(tg_tape *t, int ndim, const int *shape, const tg_real *vals)
{
    tg_tensor *x = tg_tensor_from(t, vals, ndim, shape);
    cr_assert_not_null(x, "%s", tg_tape_error(t) ? tg_tape_error(t) : "");
    return x;
}

/* A heap tensor with values 0, 1, 2, ... (requires_grad set). */
static inline tg_tensor *iota(int ndim, const int *shape)
{
    tg_tensor *x = tg_tensor_alloc(ndim, shape);
    cr_assert_not_null(x);
    for (size_t i = 0; i < x->size; i++) x->data[i] = (tg_real)i;
    x->requires_grad = true;
    return x;
}

/* The op returned NULL and the tape's message names every needle. */
#define assert_fails(t, res, ...)                                                              \
    do {                                                                                       \
        cr_assert_null(res, "expected an error");                                              \
        const char *msg_ = tg_tape_error(t);                                                   \
        cr_assert_not_null(msg_, "no error message");                                          \
        const char *needles_[] = {__VA_ARGS__};                                                \
        for (size_t k_ = 0; k_ < sizeof needles_ / sizeof *needles_; k_++)                     \
            cr_assert(strstr(msg_, needles_[k_]), "message \"%s\" lacks \"%s\"", msg_, needles_[k_]); \
        tg_tape_clear_error(t);                                                                \
    } while (0)

#endif
