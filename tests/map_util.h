/* Index-by-index references for the ops that move elements (test_dims.c,
 * test_move.c, test_tri.c, test_gather.c): multi-index helpers, and a check of an op's
 * forward and backward against a function naming the input element each
 * output element reads. */
#ifndef TAPEGRAD_TESTS_MAP_UTIL_H
#define TAPEGRAD_TESTS_MAP_UTIL_H

#include "ops_util.h"

/* flat index of idx in a row-major shape, reading dims of size 1 as 0 */
static inline size_t flat(const int *shape, const int *idx, int nd)
{
    size_t f = 0;
    for (int k = 0; k < nd; k++) f = f * (size_t)shape[k] + (size_t)(shape[k] == 1 ? 0 : idx[k]);
    return f;
}

/* the multi-index of flat position i in shape */
static inline void unflat(const int *shape, int nd, size_t i, int *idx)
{
    for (int k = nd - 1; k >= 0; k--) {
        idx[k] = shape[k] ? (int)(i % (size_t)shape[k]) : 0;
        i = shape[k] ? i / (size_t)shape[k] : 0;
    }
}

/* The input element (flat) that output multi-index o reads, or -1 where the
 * output holds a constant. */
typedef long (*src_fn)(const int *o, const tg_tensor *x, const void *ctx);

/* out = op(x) on tape t (recorded): every element equals x at src (or fill),
 * and a backward from random seeds gives d x[j] = the sum of the seeds of the
 * elements that read j. */
static inline void check_map(tg_tape *t, tg_tensor *x, tg_tensor *out, src_fn src, const void *ctx, double fill)
{
    cr_assert_not_null(out, "%s", tg_tape_error(t) ? tg_tape_error(t) : "");
    int o[TG_MAX_DIMS];
    double *want = calloc(x->size ? x->size : 1, sizeof *want);
    tg_real *seed = malloc((out->size ? out->size : 1) * sizeof *seed);
    cr_assert(want && seed);
    for (size_t i = 0; i < out->size; i++) {
        unflat(out->shape, out->ndim, i, o);
        long s = src(o, x, ctx);
        seed[i] = (tg_real)(0.25 * (double)(i % 7) - 0.5);
        if (s < 0) {
            cr_assert(out->data[i] == (tg_real)fill || (isnan(fill) && isnan(out->data[i])), "out[%zu] = %g, fill %g",
                      i, (double)out->data[i], fill);
            continue;
        }
        cr_assert_eq(out->data[i], x->data[s], "out[%zu] = %g, x[%ld] = %g", i, (double)out->data[i], s,
                     (double)x->data[s]);
        want[s] += seed[i];
    }
    if (out->requires_grad) {
        tg_free(x->grad);
        x->grad = NULL;
        cr_assert_eq(tg_backward_seed(t, out, seed), 0, "%s", tg_tape_error(t));
        for (size_t j = 0; j < x->size; j++) tu_close(x->grad[j], want[j], TU_TOL);
    }
    free(want);
    free(seed);
    tg_tape_reset(t);
}

/* y is not NULL and has the shape nd, shape */
static inline void assert_shape(const tg_tensor *y, int nd, const int *shape)
{
    cr_assert_not_null(y);
    cr_assert_eq(y->ndim, nd);
    for (int k = 0; k < nd; k++) cr_assert_eq(y->shape[k], shape[k], "dim %d: %d, want %d", k, y->shape[k], shape[k]);
}

#endif
