/* tapegrad: the ops of convolutional networks over NCHW images:
 * convolution, pooling, batch normalisation, channel dropout, resizing
 * (PyTorch's torch.nn.functional semantics and defaults). */
#ifndef TAPEGRAD_OPS_NN_CONV_H
#define TAPEGRAD_OPS_NN_CONV_H

#include <stdbool.h>

#include "../../engine/rng.h"
#include "../../engine/tape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- convolution (core/ops/nn/conv.c, conv_transpose.c) ------------------------
 * Index [0] is the height, [1] the width (1-D ops read [0] only). stride and
 * dilation must be > 0, padding >= 0; same: padding='same' (stride 1 only;
 * dilation * (k - 1) split with the odd one on the bottom / right, as
 * PyTorch), padding ignored. output_padding (transposed only, else 0) must be
 * smaller than stride or dilation. */
typedef struct tg_conv_opts {
    int stride[2];
    int padding[2];
    int dilation[2];
    int groups;              /* > 0, dividing C_in and C_out */
    bool same;
    int output_padding[2];
} tg_conv_opts;
#define TG_CONV_OPTS_DEFAULT {{1, 1}, {0, 0}, {1, 1}, 1, false, {0, 0}}

/* F.conv2d: x [N, C, H, W], w [O, C/groups, kh, kw], b [O] or NULL ->
 * [N, O, Ho, Wo], Ho = (H + 2 p - d (kh - 1) - 1) / s + 1. opts NULL: the
 * defaults. Through tg_gemm on im2col columns of one image and group at a
 * time; backward recomputes the columns. */
tg_tensor *tg_conv2d(tg_tape *t, tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_opts *opts);
/* F.conv1d: x [N, C, L] (or [C, L]), w [O, C/groups, k], b [O] or NULL -> [N, O, Lo]. */
tg_tensor *tg_conv1d(tg_tape *t, tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_opts *opts);
/* F.conv_transpose2d: x [N, C_in, H, W] (or unbatched), w [C_in, C_out/groups,
 * kh, kw], b [C_out] or NULL -> [N, C_out, Ho, Wo],
 * Ho = (H - 1) s - 2 p + d (kh - 1) + output_padding + 1: the grad of
 * tg_conv2d with respect to its input ('same' is refused). */
tg_tensor *tg_conv_transpose2d(tg_tape *t, tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_opts *opts);

/* ---- pooling (core/ops/nn/pool.c) ---------------------------------------------
 * kernel > 0; stride 0: the kernel (PyTorch's stride=None); padding at most
 * half the kernel; dilation > 0 (max pooling only: avg pooling needs 1).
 * ceil_mode: the last window may start inside the right padding, not past it.
 * count_include_pad (avg): padded zeros count in the divisor.
 * divisor_override (tg_avg_pool2d only, as PyTorch): > 0 divides every
 * window's sum by it; 0 is PyTorch's None (the count above). */
typedef struct tg_pool_opts {
    int kernel[2];
    int stride[2];
    int padding[2];
    int dilation[2];
    bool ceil_mode;
    bool count_include_pad;
    int divisor_override;
} tg_pool_opts;
#define TG_POOL_OPTS_DEFAULT(kh, kw) {{(kh), (kw)}, {0, 0}, {0, 0}, {1, 1}, false, true, 0}

/* F.max_pool2d: x [N, C, H, W] (or [C, H, W]) -> [N, C, Ho, Wo]; the grad goes
 * to the window's first maximum (a NaN wins, as PyTorch). */
tg_tensor *tg_max_pool2d(tg_tape *t, tg_tensor *x, const tg_pool_opts *opts);
/* F.max_pool1d: x [N, C, L] (or [C, L]) -> [N, C, Lo]; opts' index [0]. */
tg_tensor *tg_max_pool1d(tg_tape *t, tg_tensor *x, const tg_pool_opts *opts);
/* return_indices=True: the same output, and *indices (required) an int64
 * tensor of its shape holding each maximum's flat index in its input plane
 * (h * W + w; 1-D: l), PyTorch's. The indices take no grad. */
tg_tensor *tg_max_pool2d_with_indices(tg_tape *t, tg_tensor *x, const tg_pool_opts *opts, tg_tensor **indices);
tg_tensor *tg_max_pool1d_with_indices(tg_tape *t, tg_tensor *x, const tg_pool_opts *opts, tg_tensor **indices);
/* F.max_unpool2d (core/ops/nn/unpool.c): x [N, C, H, W] (or [C, H, W]) and
 * indices (int64 or int32, x's shape, as tg_max_pool2d_with_indices gives
 * them) -> [N, C, Ho, Wo], zero but out[n, c][indices[i]] = x[i] (a repeated
 * index: the last). Ho = (H - 1) stride - 2 padding + kernel, unless
 * output_size (NULL: that default) gives {Ho, Wo}, each strictly within
 * stride of the default (PyTorch's rule). Only opts' kernel, stride and
 * padding are read, so the pooling's opts serve. dx[i] = dout[indices[i]]. */
tg_tensor *tg_max_unpool2d(tg_tape *t, tg_tensor *x, tg_tensor *indices, const tg_pool_opts *opts,
                           const int *output_size);
/* F.avg_pool2d / F.avg_pool1d (ceil_mode, count_include_pad; no dilation):
 * each window's mean; a window wholly in the padding gives 0. */
tg_tensor *tg_avg_pool2d(tg_tape *t, tg_tensor *x, const tg_pool_opts *opts);
tg_tensor *tg_avg_pool1d(tg_tape *t, tg_tensor *x, const tg_pool_opts *opts);

/* F.adaptive_avg_pool2d (core/ops/nn/adaptive.c): x [N, C, H, W] (or
 * [C, H, W]) -> [N, C, oh, ow], oh, ow > 0 or TG_SIZE_NONE (PyTorch's None:
 * that dim keeps the input's size); output i averages inputs
 * floor(i H / oh) to ceil((i + 1) H / oh) - 1 (and likewise along W). */
#define TG_SIZE_NONE (-1)
tg_tensor *tg_adaptive_avg_pool2d(tg_tape *t, tg_tensor *x, int oh, int ow);

/* ---- batch normalisation (core/ops/nn/batchnorm.c) -----------------------------
 * F.batch_norm over dim 1 of x [N, C, ...] (2-D to 8-D): training normalises
 * with the batch's mean and biased variance and, when running_mean and
 * running_var ([C], both or neither) are given, moves them in place:
 * r = (1 - momentum) r + momentum s, with the unbiased variance (PyTorch's).
 * Evaluation normalises with the running statistics (required). weight and
 * bias [C] may be NULL. Training needs more than one value per channel. */
typedef struct tg_bn_opts {
    bool training;
    double momentum;         /* in [0, 1] */
    double eps;              /* > 0 */
} tg_bn_opts;
#define TG_BN_OPTS_DEFAULT {false, 0.1, 1e-5}
tg_tensor *tg_batch_norm(tg_tape *t, tg_tensor *x, tg_tensor *running_mean, tg_tensor *running_var,
                         tg_tensor *weight, tg_tensor *bias, const tg_bn_opts *opts);

/* F.dropout2d (core/ops/nn/dropout2d.c): x [N, C, H, W]; each channel kept
 * whole (times 1 / (1 - p)) or zeroed whole, one rng draw per channel in
 * (n, c) order. As tg_dropout: x itself when p == 0 or the tape is not
 * training (rng may then be NULL); p in [0, 1). */
tg_tensor *tg_dropout2d(tg_tape *t, tg_tensor *x, double p, tg_rng *rng);

/* ---- resizing (core/ops/nn/interpolate.c) ---------------------------------------
 * F.interpolate of x [N, C, H, W] to [N, C, Ho, Wo]: for each
 * of H ([0]) and W ([1]) give size (> 0) or scale (> 0; Ho = floor(H scale),
 * and the kernel maps with 1 / scale, PyTorch's recompute_scale_factor=None),
 * exactly one. align_corners: bilinear only. */
typedef enum tg_interp_mode { TG_INTERP_NEAREST, TG_INTERP_BILINEAR } tg_interp_mode;
typedef struct tg_interp_opts {
    int size[2];
    double scale[2];
    tg_interp_mode mode;
    bool align_corners;
} tg_interp_opts;
tg_tensor *tg_interpolate(tg_tape *t, tg_tensor *x, const tg_interp_opts *opts);

#ifdef __cplusplus
}
#endif

#endif
