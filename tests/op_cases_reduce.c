/* Rows of the reductions, scans, sort and topk (tests/op_cases.h): a [2, 3]
 * reduced along its rows; element 1 (row 0) is the NaN. */
#include <math.h>

#include "op_cases.h"

#define ROW(fn, lo, hi, flags_, nan_) {"tg_" #fn, b_##fn, 1, 1, 0, {OC_IN(lo, hi, 2, 3)}, (flags_) | OC_GROWS, nan_, NULL}

OC_BUILD(b_sum_dim, tg_sum_dim(t, x[0], 1, false))
OC_BUILD(b_mean_dim, tg_mean_dim(t, x[0], 0, true))
OC_BUILD(b_max_dim, tg_max_dim(t, x[0], -1, false))
OC_BUILD(b_logsumexp_dim, tg_logsumexp_dim(t, x[0], 1, false))
OC_BUILD(b_min_dim, tg_min_dim(t, x[0], 1, true))
OC_BUILD(b_amax, tg_amax(t, x[0], -1, false))
OC_BUILD(b_amin, tg_amin(t, x[0], 1, true))
OC_BUILD(b_prod_dim, tg_prod_dim(t, x[0], 1, false))
OC_BUILD(b_var_dim, tg_var_dim(t, x[0], 1, 1, false))
OC_BUILD(b_std_dim, tg_std_dim(t, x[0], -1, 0, false))
OC_BUILD(b_norm_dim, tg_norm_dim(t, x[0], 2, 1, false))
OC_BUILD(b_norm1_dim, tg_norm_dim(t, x[0], 1, 0, false))
OC_BUILD(b_norminf_dim, tg_norm_dim(t, x[0], INFINITY, 1, false))
#define DIMS02 OC_PTR(c, 0, ((const int[]){0, -1})), 2
OC_BUILD(b_mean_dims, tg_mean_dims(t, x[0], DIMS02, false))
OC_BUILD(b_var_dims, tg_var_dims(t, x[0], DIMS02, 1, true))
OC_BUILD(b_std_dims, tg_std_dims(t, x[0], DIMS02, 0, false))
OC_BUILD(b_norm_dims, tg_norm_dims(t, x[0], 2, DIMS02, false))
OC_BUILD(b_norm3_dims, tg_norm_dims(t, x[0], 3, DIMS02, false))
OC_BUILD(b_norm1_5_dims, tg_norm_dims(t, x[0], 1.5, DIMS02, false))
OC_BUILD(b_norm_half_dims, tg_norm_dims(t, x[0], 0.5, DIMS02, false))
OC_BUILD(b_norm0_dims, tg_norm_dims(t, x[0], 0, DIMS02, false))
OC_BUILD(b_norminf_dims, tg_norm_dims(t, x[0], INFINITY, DIMS02, false))
OC_BUILD(b_normninf_dims, tg_norm_dims(t, x[0], -INFINITY, DIMS02, false))
OC_BUILD(b_argmax, tg_argmax(t, x[0], 1, false))
OC_BUILD(b_argmin, tg_argmin(t, x[0], 1, false))
OC_BUILD(b_cumsum, tg_cumsum(t, x[0], 1))
OC_BUILD(b_cumprod, tg_cumprod(t, x[0], 1))
static tg_tensor *b_sort(const oc_call *c)
{
    tg_tensor *ix;
    return tg_sort(c->t, c->in[0], 1, false, &ix);
}
static tg_tensor *b_topk(const oc_call *c)
{
    tg_tensor *ix;
    return tg_topk(c->t, c->in[0], 2, 1, true, &ix);
}

/* Drawn values have no ties (max, min, the inf norm, sort, topk); the 1-norm's
 * inputs are away from 0. NaN: a reduction is NaN where a NaN was reduced;
 * argmax / argmin give the NaN's index (a number); sort puts a NaN last and
 * topk first (NaN is the largest, as PyTorch). */
/* a [2, 3, 2] over dims 0 and 2: element 1 (a[0, 0, 1]) goes to out[0]; the count of nonzeros counts a NaN
 * (NaN != 0); p < 1 and -inf inputs stay away from 0 */
#define MROW(fn, b, lo, hi, nan_) {"tg_" #fn, b, 1, 1, 1, {OC_IN(lo, hi, 2, 3, 2)}, OC_GROWS, nan_, NULL}
static const op_case rows[] = {
    MROW(mean_dims, b_mean_dims, -1, 1, "n.."),
    MROW(var_dims, b_var_dims, -1, 1, "n.."),
    MROW(std_dims, b_std_dims, -1, 1, "n.."),
    MROW(norm_dims, b_norm_dims, -1, 1, "n.."),
    MROW(norm_dims, b_norm3_dims, -1, 1, "n.."),
    MROW(norm_dims, b_norm1_5_dims, -1, 1, "n.."),
    MROW(norm_dims, b_norm_half_dims, 0.2, 1, "n.."),
    {"tg_norm_dims", b_norm0_dims, 1, 1, 1, {OC_IN(-1, 1, 2, 3, 2)}, OC_GROWS, "...", NULL},
    MROW(norm_dims, b_norminf_dims, -1, 1, "n.."),
    MROW(norm_dims, b_normninf_dims, 0.2, 1, "n.."),
    ROW(sum_dim, -1, 1, 0, "n."),
    ROW(mean_dim, -1, 1, 0, ".n."),
    ROW(max_dim, -1, 1, 0, "n."),
    ROW(logsumexp_dim, -1, 1, 0, "n."),
    ROW(min_dim, -1, 1, 0, "n."),
    ROW(amax, -1, 1, 0, "n."),
    ROW(amin, -1, 1, 0, "n."),
    ROW(prod_dim, 0.5, 1.5, 0, "n."),
    ROW(var_dim, -1, 1, 0, "n."),
    ROW(std_dim, -1, 1, 0, "n."),
    ROW(norm_dim, -1, 1, 0, "n."),
    {"tg_norm_dim", b_norm1_dim, 1, 1, 0, {OC_IN(0.2, 1, 2, 3)}, OC_GROWS, ".n.", NULL},
    {"tg_norm_dim", b_norminf_dim, 1, 1, 0, {OC_IN(-1, 1, 2, 3)}, OC_GROWS, "n.", NULL},
    ROW(argmax, -1, 1, OC_NO_GRAD, ".."),
    ROW(argmin, -1, 1, OC_NO_GRAD, ".."),
    ROW(cumsum, -1, 1, 0, ".nn..."),
    ROW(cumprod, 0.5, 1.5, 0, ".nn..."),
    ROW(sort, -1, 1, 0, "..n..."),
    {"tg_topk", b_topk, 1, 1, 0, {OC_IN(-1, 1, 2, 3)}, OC_GROWS, "n...", NULL},
};

const oc_family oc_reduce = {"reduce", rows, sizeof rows / sizeof rows[0]};
