/* tapegrad core ops, linear algebra: matmul, triangles and diagonals.
 * The conventions of every op are in core/ops/ops.h. */
#ifndef TAPEGRAD_OPS_LINALG_H
#define TAPEGRAD_OPS_LINALG_H

#include <stdbool.h>
#include <stdint.h>

#include "../../engine/op.h"
#include "../../engine/tape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- matmul (core/ops/linalg/matmul.c) ------------------------------------------
 * out = op(a) @ op(b) + bias, op = transpose when TG_TRANS_A / TG_TRANS_B.
 * a is [..., M, K] (or [..., K, M] with TG_TRANS_A), 2-D to 8-D.
 * b is [K, N] (or [N, K] with TG_TRANS_B): 2-D broadcast over a's batch dims,
 *   or with the same batch dims as a (batched).
 * bias is [N] or NULL. out is [..., M, N]. Through tg_gemm (core/kernels/blas.h):
 * tapegrad's own SGEMM in the float build, OpenBLAS's dgemm in the double.
 * Empty dims are allowed: K = 0 gives out = bias (or zeros), and every input
 * that requires a grad gets one, all zeros where nothing flows back. */
enum { TG_TRANS_A = 1, TG_TRANS_B = 2 };
tg_tensor *tg_matmul(tg_tape *t, tg_tensor *a, tg_tensor *b, tg_tensor *bias, unsigned flags);

/* The lower / upper triangle of the last two dims, diagonal k (0 the main,
 * > 0 above it); the rest is 0. */
tg_tensor *tg_tril(tg_tape *t, tg_tensor *a, int diagonal);
tg_tensor *tg_triu(tg_tape *t, tg_tensor *a, int diagonal);
/* torch.diag: a 1-D a [n] gives the [n+|k|, n+|k|] matrix with a on
 * diagonal k; a 2-D a gives its diagonal k (length 0 when k is off the matrix). */
tg_tensor *tg_diag(tg_tape *t, tg_tensor *a, int diagonal);
/* Batched diagonals (core/ops/linalg/diagonal.c). torch.diagonal(a, offset,
 * dim1, dim2): out drops dims dim1 and dim2 of a and appends their diagonal
 * offset (> 0 above the main) as its last dim (length 0 when it is off the
 * plane); -2, -1 take the matrices of a batch. torch.diag_embed(a, offset,
 * dim1, dim2): out has a's last dim as a diagonal of dims dim1 and dim2
 * (both of size n + |offset|, counted in out's dims), 0 elsewhere. */
tg_tensor *tg_diagonal(tg_tape *t, tg_tensor *a, int offset, int dim1, int dim2);
tg_tensor *tg_diag_embed(tg_tape *t, tg_tensor *a, int offset, int dim1, int dim2);

#ifdef __cplusplus
}
#endif

#endif
