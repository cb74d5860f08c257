/* tapegrad internal: the geometry of a convolution, shared by conv.c,
 * conv1d.c and conv_transpose.c (not installed). */
#ifndef TAPEGRAD_OPS_NN_CONV_GEOM_H
#define TAPEGRAD_OPS_NN_CONV_GEOM_H

#include <stdbool.h>
#include <stddef.h>

#include "conv.h"
#include "../../engine/op.h"

/* A convolution of an image x [N, C, H, W] with w [O, C/groups, kh, kw] into
 * [N, O, Ho, Wo]: stride (sh, sw), padding before (ph, pw), dilation (dh, dw).
 * A transposed convolution is the same geometry read backwards: its input is
 * [N, O, Ho, Wo], its output [N, C, H, W] and its weight [O, C/groups, kh, kw]. */
typedef struct tg_conv_geom {
    int N, C, H, W, O, kh, kw, Ho, Wo;
    int sh, sw, ph, pw, dh, dw;
    int groups;
    tg_dtype half;  /* autocast's operand type for both passes' GEMMs (TG_F32: none) */
} tg_conv_geom;

/* C [M,N] = op(A) op(B) + beta C, contiguous as tg_gemm (core/kernels/blas.h);
 * under autocast (g->half) with the operands rounded to it
 * (core/kernels/gemm_half.h; when that scratch cannot be allocated the
 * product runs in float, more exactly than asked). */
void tg_conv_gemm(const tg_conv_geom *g, bool ta, bool tb, int M, int N, int K, const tg_real *A, const tg_real *B,
                  tg_real beta, tg_real *C);

/* Checks x (nd + 2 dims, or nd + 1 unbatched), w, b (or NULL) and opts (NULL:
 * the defaults) for op over nd = 1 or 2 spatial dims and fills g (a 1-D op
 * reads index [0] of opts' pairs, and its height is 1); false with "<op>: ..."
 * naming what was wrong. transposed: w is [C_in, C_out/groups, k...], x the
 * small side, opts' output_padding adds to the output size. */
bool tg_conv_geom_make(tg_tape *t, const char *op, int nd, bool transposed, const tg_tensor *x,
                       const tg_tensor *w, const tg_tensor *b, const tg_conv_opts *opts, tg_conv_geom *g);

/* col [C/groups * kh * kw, Ho * Wo] <- the windows of x [C/groups, H, W] */
void tg_im2col(const tg_conv_geom *g, const tg_real *x, tg_real *col);
/* x [C/groups, H, W] += col [C/groups * kh * kw, Ho * Wo] put back in its windows */
void tg_col2im(const tg_conv_geom *g, const tg_real *col, tg_real *x);
/* A 1x1 kernel, stride 1, no padding: x is its own columns. */
bool tg_conv_geom_direct(const tg_conv_geom *g);
/* out [N, O, Ho, Wo] = x [N, C, H, W] (*) w + b (b may be NULL); false on out of memory. */
bool tg_conv_forward(tg_tape *t, const tg_conv_geom *g, const char *op, const tg_real *x, const tg_real *w,
                     const tg_real *b, tg_real *out);
/* b's grad [O] += the sums of dout [N, O, P] over N and P (nothing when b is
 * NULL or needs no grad); false on out of memory. */
bool tg_conv_bias_grad(tg_tape *t, tg_tensor *b, const tg_real *dout, int N, int O, size_t P);

#endif
