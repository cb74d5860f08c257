/* tapegrad core ops, reductions: of every element, along a dim, statistics, scans, sort and topk.
 * The conventions of every op are in core/ops/ops.h. */
#ifndef TAPEGRAD_OPS_REDUCE_H
#define TAPEGRAD_OPS_REDUCE_H

#include <stdbool.h>
#include <stdint.h>

#include "../../engine/op.h"
#include "../../engine/tape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- of every element (core/ops/reduce/all.c) -------------------------------------
 * A 0-d tensor. max / min: torch.max(a) / torch.min(a); their grad is shared
 * evenly among the elements equal to the result (PyTorch); an empty a is an
 * error. */
tg_tensor *tg_sum(tg_tape *t, tg_tensor *a);
tg_tensor *tg_mean(tg_tape *t, tg_tensor *a);
tg_tensor *tg_max(tg_tape *t, tg_tensor *a);
tg_tensor *tg_min(tg_tape *t, tg_tensor *a);

/* ---- reductions along a dim (core/ops/reduce/reduce.c) ----------------------------
 * Reduce dim `dim` of a (negative counts from the end: -1 is the last); out
 * is a's shape without that dim, or with it as 1 when keepdim (a 0-d a takes
 * dim 0 or -1 and gives itself). As PyTorch: sum over an empty dim is 0,
 * mean NaN, logsumexp -inf; max and min need a non-empty dim. */
tg_tensor *tg_sum_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
tg_tensor *tg_mean_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
/* The values of torch.max(a, dim) and torch.min(a, dim): NaN if any
 * element is NaN; the gradient goes to the first maximum (minimum; the
 * first NaN) only. */
tg_tensor *tg_max_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
tg_tensor *tg_min_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
/* log sum exp, stable (max subtracted); a slice that is all -inf gives -inf
 * and zero grad (PyTorch: NaN grad). */
tg_tensor *tg_logsumexp_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim);

/* ---- more reductions along a dim (core/ops/reduce/stats.c) ------------------------
 * dim and keepdim as tg_sum_dim. Empty dims as PyTorch: prod 1, var / std
 * NaN, norm 1 and 2 give 0; amax, amin, argmax, argmin and the inf norm
 * are an error. var / std divide by n - correction (1: Bessel's, 0: population);
 * std's grad is 0 where std is 0. norm is torch.linalg.vector_norm with ord
 * 1, 2 or INFINITY (its grad at ties of the inf norm is shared evenly, at a
 * zero 2-norm 0). amax / amin are torch.amax / amin: NaN if any, the grad
 * shared evenly among the elements equal to the result. argmax / argmin give the index of the first extreme (the
 * first NaN) as an int64 tensor, never a grad.
 * For every element, reshape a to [-1] and reduce dim 0. */
tg_tensor *tg_prod_dim(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
tg_tensor *tg_var_dim(tg_tape *t, tg_tensor *a, int dim, double correction, bool keepdim);
tg_tensor *tg_std_dim(tg_tape *t, tg_tensor *a, int dim, double correction, bool keepdim);
tg_tensor *tg_norm_dim(tg_tape *t, tg_tensor *a, double ord, int dim, bool keepdim);
tg_tensor *tg_amax(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
tg_tensor *tg_amin(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
tg_tensor *tg_argmax(tg_tape *t, tg_tensor *a, int dim, bool keepdim);
tg_tensor *tg_argmin(tg_tape *t, tg_tensor *a, int dim, bool keepdim);

/* ---- scans, sort, topk along a dim (core/ops/reduce/scan.c) ------------------------
 * Out has a's shape (topk: k along dim). cumprod's grad is exact with zeros.
 * sort / topk: values with grads (each goes back to where it came from);
 * *indices, when not NULL, gets the source indices as an int64 tensor of
 * out's shape (never a grad). NaN sorts above every number (PyTorch); equal
 * values keep their order (PyTorch's stable=True; its topk leaves the order
 * of ties unspecified). topk's out is always sorted; k in [0, n]. */
tg_tensor *tg_cumsum(tg_tape *t, tg_tensor *a, int dim);
tg_tensor *tg_cumprod(tg_tape *t, tg_tensor *a, int dim);
tg_tensor *tg_sort(tg_tape *t, tg_tensor *a, int dim, bool descending, tg_tensor **indices);
tg_tensor *tg_topk(tg_tape *t, tg_tensor *a, int k, int dim, bool largest, tg_tensor **indices);

/* ---- reductions over several dims at once (core/ops/reduce/multi.c) ----------------
 * PyTorch's dim=(d0, d1, ..): n distinct dims (negative count from the
 * end); n = 0 reduces every dim (dim=None). keepdim keeps them as size 1.
 * var / std divide by max(N - correction, 0) (N the count reduced); norm is
 * torch.linalg.vector_norm(a, ord, dims): any ord, inf / -inf the max / min
 * of |a| (grad shared among ties), 0 the count of nonzeros (no grad). */
tg_tensor *tg_mean_dims(tg_tape *t, tg_tensor *a, const int *dims, int n, bool keepdim);
tg_tensor *tg_var_dims(tg_tape *t, tg_tensor *a, const int *dims, int n, double correction, bool keepdim);
tg_tensor *tg_std_dims(tg_tape *t, tg_tensor *a, const int *dims, int n, double correction, bool keepdim);
tg_tensor *tg_norm_dims(tg_tape *t, tg_tensor *a, double ord, const int *dims, int n, bool keepdim);

#ifdef __cplusplus
}
#endif

#endif
