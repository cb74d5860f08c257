/* tapegrad core ops, creation: constants, ranges and random tensors.
 * The conventions of every op are in core/ops/ops.h. */
#ifndef TAPEGRAD_OPS_CREATE_H
#define TAPEGRAD_OPS_CREATE_H

#include <stdbool.h>
#include <stdint.h>

#include "../../engine/op.h"
#include "../../engine/rng.h"
#include "../../engine/tape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- creation ------------------------------------------------------------------
 * New arena tensors that require no grad and record no node (set
 * requires_grad to make one a leaf). Random ones draw from rng one element
 * after another in row-major order (randn: tg_rng_normal per element), so
 * one seed gives the same values on any number of threads; the values are
 * not PyTorch's (its generator differs), the distributions are. */
/* [ceil((end - start) / step)] values start + i * step; step != 0 and
 * pointing from start towards end (PyTorch's errors). */
tg_tensor *tg_arange(tg_tape *t, double start, double end, double step);
/* [steps] evenly spaced from start to end, both included (steps >= 0). */
tg_tensor *tg_linspace(tg_tape *t, double start, double end, int steps);
tg_tensor *tg_full(tg_tape *t, int ndim, const int *shape, double value);
tg_tensor *tg_zeros(tg_tape *t, int ndim, const int *shape);
tg_tensor *tg_ones(tg_tape *t, int ndim, const int *shape);
/* [n, m] with ones on the diagonal (torch.eye(n, m)). */
tg_tensor *tg_eye(tg_tape *t, int n, int m);
/* The same in dtype dt (PyTorch's dtype=): values computed in double and
 * stored as dt (integers truncate toward zero, tg_dtype_store); a range
 * (arange, linspace) cannot be bool. The ops above make the program's
 * tg_real. */
tg_tensor *tg_full_dtype(tg_tape *t, tg_dtype dt, int ndim, const int *shape, double value);
tg_tensor *tg_zeros_dtype(tg_tape *t, tg_dtype dt, int ndim, const int *shape);
tg_tensor *tg_ones_dtype(tg_tape *t, tg_dtype dt, int ndim, const int *shape);
tg_tensor *tg_arange_dtype(tg_tape *t, tg_dtype dt, double start, double end, double step);
tg_tensor *tg_linspace_dtype(tg_tape *t, tg_dtype dt, double start, double end, int steps);
tg_tensor *tg_eye_dtype(tg_tape *t, tg_dtype dt, int n, int m);
/* Uniform in [0, 1). */
tg_tensor *tg_rand(tg_tape *t, int ndim, const int *shape, tg_rng *rng);
/* Standard normal. */
tg_tensor *tg_randn(tg_tape *t, int ndim, const int *shape, tg_rng *rng);
/* Uniform integers in [low, high) as an int64 tensor (torch.randint's
 * dtype), exact anywhere in int64; the range is at most 2^32 wide. */
tg_tensor *tg_randint(tg_tape *t, int64_t low, int64_t high, int ndim, const int *shape, tg_rng *rng);

#ifdef __cplusplus
}
#endif

#endif
