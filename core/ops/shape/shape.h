/* tapegrad core ops, shape ops: views, moves, joins and splits, slicing, gather / scatter / index.
 * The conventions of every op are in core/ops/ops.h. */
#ifndef TAPEGRAD_OPS_SHAPE_H
#define TAPEGRAD_OPS_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "../../engine/op.h"
#include "../../engine/tape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- shape (core/ops/shape/shape.c) ---------------------------------------------
 * reshape and rows_view (and squeeze / unsqueeze below) are VIEWS: they
 * share data and grad with a (no node, no copy). Every other shape op writes
 * a new tensor. */
/* a -1 dim is inferred */
tg_tensor *tg_reshape(tg_tape *t, tg_tensor *a, int ndim, const int *shape);
/* a[start : start + len] along the first dim (PyTorch's a.narrow(0, start, len)) */
tg_tensor *tg_rows_view(tg_tape *t, tg_tensor *a, int start, int len);
/* out.shape[i] = a.shape[perm[i]]; perm has n = a->ndim entries (another
 * n is an error), negative ones counting from the end (-1 is the last dim). */
tg_tensor *tg_permute(tg_tape *t, tg_tensor *a, const int *perm, int n);
tg_tensor *tg_transpose(tg_tape *t, tg_tensor *a, int d0, int d1);
/* [B, L, H*dk] -> [B, H, L, dk] and back. */
tg_tensor *tg_split_heads(tg_tape *t, tg_tensor *x, int n_heads);
tg_tensor *tg_merge_heads(tg_tape *t, tg_tensor *x);
/* Concatenate n tensors along the last dim (all other dims equal):
 * tg_cat(t, xs, n, -1), named tg_concat (core/ops/shape/cat.c). */
tg_tensor *tg_concat(tg_tape *t, tg_tensor *const *xs, int n);
/* a[..., start:start+len] along the last dim, start >= 0: tg_narrow of the
 * last dim, named tg_slice (core/ops/shape/slice.c). */
tg_tensor *tg_slice(tg_tape *t, tg_tensor *a, int start, int len);

/* ---- shape and indexing along any dim (core/ops/shape/slice.c, cat.c, layout.c,
 * gather.c; squeeze / unsqueeze in shape.c) --------------------------
 * A dim counts from the end when negative (-1 is the last); out-of-range
 * dims, sizes and indices are errors naming the op, the value and a's shape.
 * Every op writes a new tensor except squeeze / unsqueeze (views, as
 * reshape); each backward is hand-written beside its forward. */
/* a.narrow(dim, start, len); start < 0 counts from the end. */
tg_tensor *tg_narrow(tg_tape *t, tg_tensor *a, int dim, int start, int len);
/* a[.., start:end:step, ..] along dim (Python's slice: negative bounds count
 * from the end, out-of-range bounds clamp); step >= 1 (PyTorch has no
 * negative step: use tg_flip). */
tg_tensor *tg_slice_dim(tg_tape *t, tg_tensor *a, int dim, int start, int end, int step);
/* torch.split(a, size, dim): pieces of `size` along dim (the last smaller)
 * into outs[0..count), count = ceil(n / size) (1 when the dim is empty);
 * returns count, or -1 when it exceeds max_outs or on another error. */
int tg_split(tg_tape *t, tg_tensor *a, int size, int dim, tg_tensor **outs, int max_outs);
/* torch.split(a, sizes, dim): n pieces of sizes[i], which must sum to the
 * dim; 0 or -1. */
int tg_split_sizes(tg_tape *t, tg_tensor *a, const int *sizes, int n, int dim, tg_tensor **outs);
/* torch.chunk: pieces of ceil(n / chunks), so possibly fewer than chunks;
 * outs has room for chunks; returns the count or -1. */
int tg_chunk(tg_tape *t, tg_tensor *a, int chunks, int dim, tg_tensor **outs);
/* Join n tensors along dim: every other dim equal (PyTorch also skips 1-D
 * empty tensors of another shape; tapegrad does not). */
tg_tensor *tg_cat(tg_tape *t, tg_tensor *const *xs, int n, int dim);
/* Join n tensors of one shape along a new dim (0 .. ndim; -1 appends). */
tg_tensor *tg_stack(tg_tape *t, tg_tensor *const *xs, int n, int dim);
/* a's data (shared, as PyTorch) under a header that requires no grad: what
 * is computed from it sends no grad back to a. */
tg_tensor *tg_detach(tg_tape *t, tg_tensor *a);
/* a with a size-1 dim inserted at dim (0 .. ndim; negative counts from the
 * end of ndim + 1). A view. */
tg_tensor *tg_unsqueeze(tg_tape *t, tg_tensor *a, int dim);
/* a without dim `dim` when its size is 1, else unchanged (PyTorch's
 * squeeze(dim)); dim = TG_SQUEEZE_ALL drops every size-1 dim. A view. */
#define TG_SQUEEZE_ALL INT32_MIN
tg_tensor *tg_squeeze(tg_tape *t, tg_tensor *a, int dim);
/* Reverse the n given dims. */
tg_tensor *tg_flip(tg_tape *t, tg_tensor *a, const int *dims, int n);
/* out[.., (j + shift) mod n, ..] = a[.., j, ..] along one dim (torch.roll
 * with one shift and one dim: roll again for more); dim = TG_ROLL_FLAT rolls
 * the elements in row-major order (torch.roll without dims). A 0-d a takes
 * dim 0 or -1. */
#define TG_ROLL_FLAT INT32_MIN
tg_tensor *tg_roll(tg_tape *t, tg_tensor *a, int shift, int dim);
/* torch.roll(a, shifts, dims): n >= 1 shifts, shifts[i] along dims[i]
 * (core/ops/shape/roll_dims.c, one tg_roll per dim). */
tg_tensor *tg_roll_dims(tg_tape *t, tg_tensor *a, const int *shifts, const int *dims, int n);
/* F.pad(a, pads, mode='constant', value): pads[2i], pads[2i+1] go before
 * and after dim ndim-1-i (the last dim first); negative pads crop. */
tg_tensor *tg_pad(tg_tape *t, tg_tensor *a, const int *pads, int n_pads, double value);
/* a.repeat(reps): n >= a->ndim repeats, a padded with leading 1-dims. */
tg_tensor *tg_repeat(tg_tape *t, tg_tensor *a, const int *reps, int n);
/* a.expand(shape) / torch.broadcast_to: size-1 dims of a stretch, new dims
 * go in front, -1 keeps a's size. A copy (PyTorch returns a view); the
 * backward sums over the stretched dims. */
tg_tensor *tg_expand(tg_tape *t, tg_tensor *a, int ndim, const int *shape);

/* Indexing along dim by an index tensor of int64 (PyTorch's) or int32; any
 * other dtype is an error naming the op and the dtype. An index never takes
 * a grad. */
/* torch.gather: ix has a's number of dims, no larger than a but along dim;
 * out has ix's shape, out[i] = a[i with i_dim = ix[i]]. A 0-d a or ix is
 * read as [1] (scatter_add too), as PyTorch. */
tg_tensor *tg_gather(tg_tape *t, tg_tensor *a, int dim, const tg_tensor *ix);
/* a.scatter_add(dim, ix, src): out = a, then out[i with i_dim = ix[i]] +=
 * src[i] for every i of ix (no larger than src, nor than a but along dim). */
tg_tensor *tg_scatter_add(tg_tape *t, tg_tensor *a, int dim, const tg_tensor *ix, tg_tensor *src);
/* torch.index_select: ix 1-D [n]; out is a with dim of size n, its slice j
 * a's slice ix[j]. */
tg_tensor *tg_index_select(tg_tape *t, tg_tensor *a, int dim, const tg_tensor *ix);
/* a.index_add(dim, ix, src, alpha=alpha): out = a, then out's slice ix[j]
 * += alpha * src's slice j; src is a with dim of size n. */
tg_tensor *tg_index_add(tg_tape *t, tg_tensor *a, int dim, const tg_tensor *ix, tg_tensor *src, double alpha);
/* a.scatter_reduce(dim, ix, src, reduce, include_self=include_self)
 * (core/ops/shape/scatter_reduce.c): ix and src as tg_scatter_add; each
 * position an index names reduces the src values sent to it, with a's value
 * when include_self (else a's value is dropped there); other positions keep
 * a. amax / amin propagate NaN; their grads are shared evenly among ties,
 * prod's grad handles zeros as PyTorch's scatter_reduce_backward. */
typedef enum tg_scatter_reduce_mode {
    TG_SCATTER_SUM, TG_SCATTER_PROD, TG_SCATTER_MEAN, TG_SCATTER_AMAX, TG_SCATTER_AMIN
} tg_scatter_reduce_mode;
tg_tensor *tg_scatter_reduce(tg_tape *t, tg_tensor *a, int dim, const tg_tensor *ix, tg_tensor *src,
                             tg_scatter_reduce_mode reduce, bool include_self);

/* ---- selection by a mask (core/ops/shape/select.c) ------------------------------
 * torch.masked_select: a and mask broadcast as tg_add; out is 1-D, the
 * elements of a (broadcast) where mask != 0, in row-major order; the grad
 * goes back to those elements (summed over a's stretched dims). */
tg_tensor *tg_masked_select(tg_tape *t, tg_tensor *a, tg_tensor *mask);
/* torch.nonzero: out [n, a->ndim], int64, holds the index of each of a's n
 * nonzero elements in row-major order (NaN is nonzero). Never a grad. */
tg_tensor *tg_nonzero(tg_tape *t, tg_tensor *a);

#ifdef __cplusplus
}
#endif

#endif
