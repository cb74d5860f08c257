/* Helpers shared by the op suites (test_shape.c, test_norm.c, test_loss.c,
 * test_index.c, test_dropout.c, test_sdpa.c, test_sdpa_heads.c,
 * test_decode.c, test_kv_cache.c). */
#ifndef TAPEGRAD_TESTS_OPS_UTIL_H
#define TAPEGRAD_TESTS_OPS_UTIL_H

#include <string.h>

#include "test_util.h"
#include "../core/kernels/gemm.h"

/* Whether products give the same bits whatever their row count: tapegrad's
 * own GEMMs (the float build on x86-64), not OpenBLAS's. A decoding step
 * then reproduces a whole pass bit for bit. */
static inline bool tu_same_bits(void)
{
#ifdef TAPEGRAD_DOUBLE
    return false;
#else
    return tg_gemm_get_kernel() != TG_GEMM_BLAS;
#endif
}

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

/* Every allocation of forward(t, ctx) and a backward from it failing in turn,
 * n = 1, 2, ... until a run succeeds: an error saying "out of memory", no
 * crash, no leak (the sanitizer build checks the leaks). The n_in inputs'
 * grads are dropped before each run: backward allocates them again. */
static inline void walk_out_of_memory(tg_tensor *(*forward)(tg_tape *t, void *ctx), void *ctx, tg_tensor **in, int n_in)
{
    bool done = false;
    for (int n = 1; n < 20 && !done; n++) {
        tg_tape *t = tg_tape_new();
        cr_assert_not_null(t);
        for (int x = 0; x < n_in; x++) {
            tg_free(in[x]->grad);
            in[x]->grad = NULL;
        }
        tg_alloc_fail_at((uint64_t)n);
        tg_tensor *o = forward(t, ctx);
        tg_real one[64] = {1};
        int rc = o && o->size <= 64 ? tg_backward_seed(t, o, one) : -1;
        tg_alloc_fail_at(0);
        cr_assert(!o || o->size <= 64, "the seed has 64 elements, the output %zu", o->size);
        done = rc == 0;
        if (!done) cr_assert(tg_tape_error(t) && strstr(tg_tape_error(t), "out of memory"), "n %d: %s", n,
                             tg_tape_error(t) ? tg_tape_error(t) : "(no error)");
        tg_tape_free(t);
    }
    cr_assert(done, "never succeeded");
}

#endif
