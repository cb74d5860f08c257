/* Rows of the creation ops (tests/op_cases.h): no tensor input, so only the
 * NULL refusals (the tape, a shape, the rng), their output's lack of a grad
 * and the same bits on any thread count apply. */
#include "op_cases.h"

#define SHAPE(k) OC_PTR(c, k, ((const int[]){2, 3}))
#define NO_INPUT "no tensor input: no gradcheck, NaN or misuse row"
#define ROW(fn, n_ptr) {"tg_" #fn, b_##fn, 0, 0, n_ptr, {{0}}, OC_NO_GRAD, NULL, NO_INPUT}

OC_BUILD(b_arange, tg_arange(t, 0, 3, 0.5))
OC_BUILD(b_linspace, tg_linspace(t, -1, 1, 5))
OC_BUILD(b_full, tg_full(t, 2, SHAPE(0), 0.5))
OC_BUILD(b_zeros, tg_zeros(t, 2, SHAPE(0)))
OC_BUILD(b_ones, tg_ones(t, 2, SHAPE(0)))
OC_BUILD(b_eye, tg_eye(t, 2, 3))
OC_BUILD(b_arange_dtype, tg_arange_dtype(t, TG_I64, 5, 10, 3))
OC_BUILD(b_linspace_dtype, tg_linspace_dtype(t, TG_I32, 5, -5, 20))
OC_BUILD(b_full_dtype, tg_full_dtype(t, TG_BOOL, 2, SHAPE(0), 0.5))
OC_BUILD(b_zeros_dtype, tg_zeros_dtype(t, TG_BF16, 2, SHAPE(0)))
OC_BUILD(b_ones_dtype, tg_ones_dtype(t, TG_F64, 2, SHAPE(0)))
OC_BUILD(b_eye_dtype, tg_eye_dtype(t, TG_U8, 2, 3))
OC_BUILD(b_rand, tg_rand(t, 2, SHAPE(0), OC_PTR(c, 1, c->rng)))
OC_BUILD(b_randn, tg_randn(t, 2, SHAPE(0), OC_PTR(c, 1, c->rng)))
OC_BUILD(b_randint, tg_randint(t, -3, 5, 2, SHAPE(0), OC_PTR(c, 1, c->rng)))

static const op_case rows[] = {
    ROW(arange, 0), ROW(linspace, 0), ROW(full, 1), ROW(zeros, 1), ROW(ones, 1),
    ROW(eye, 0),    ROW(rand, 2),     ROW(randn, 2), ROW(randint, 2),
    ROW(arange_dtype, 0), ROW(linspace_dtype, 0), ROW(full_dtype, 1), ROW(zeros_dtype, 1), ROW(ones_dtype, 1),
    ROW(eye_dtype, 0),
};

const oc_family oc_create = {"create", rows, sizeof rows / sizeof rows[0]};
