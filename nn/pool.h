/* tapegrad: nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d, nn.MaxPool1d
 * and nn.AvgPool1d, the layers over the pooling ops (tg_max_pool2d,
 * tg_avg_pool2d, tg_adaptive_avg_pool2d, tg_max_pool1d, tg_avg_pool1d):
 * x [N, C, H, W] or [C, H, W] -> [N, C, Ho, Wo] (1-D: [N, C, L] or [C, L],
 * the opts' index [0]).
 *
 * No parameters: init checks the options once and keeps them with the
 * layer's name for messages. The options are the op's tg_pool_opts,
 * PyTorch's defaults in TG_POOL_OPTS_DEFAULT(kh, kw) (stride = the kernel,
 * padding 0, dilation 1, ceil_mode false, count_include_pad true).
 * AvgPool2d has no dilation (1); its divisor_override (0: None) is the
 * op's. MaxPool's return_indices: tg_max_pool2d_with_indices on the layer's
 * opts.
 */
#ifndef TAPEGRAD_NN_POOL_H
#define TAPEGRAD_NN_POOL_H

#include "names.h"
#include "../core/ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_max_pool2d_layer {
    tg_pool_opts opts;          /* kernel, stride (0: the kernel), padding, dilation, ceil_mode */
    char name[TG_NN_NAME_MAX];  /* for messages */
} tg_max_pool2d_layer;

typedef struct tg_avg_pool2d_layer {
    tg_pool_opts opts;          /* kernel, stride (0: the kernel), padding, ceil_mode, count_include_pad */
    char name[TG_NN_NAME_MAX];
} tg_avg_pool2d_layer;

typedef struct tg_max_pool1d_layer {
    tg_pool_opts opts;          /* index [0]: kernel, stride, padding, dilation; ceil_mode */
    char name[TG_NN_NAME_MAX];
} tg_max_pool1d_layer;

typedef struct tg_avg_pool1d_layer {
    tg_pool_opts opts;          /* index [0]: kernel, stride, padding; ceil_mode, count_include_pad */
    char name[TG_NN_NAME_MAX];
} tg_avg_pool1d_layer;

typedef struct tg_adaptive_avg_pool2d_layer {
    int size[2];                /* output_size (oh, ow); TG_SIZE_NONE keeps the input's */
    char name[TG_NN_NAME_MAX];
} tg_adaptive_avg_pool2d_layer;

/* 0, or -1 with a message in tg_error() naming the layer: kernel and
 * dilation > 0, stride >= 0, padding >= 0 and at most half the kernel,
 * divisor_override >= 0 (AvgPool2d's only). */
int tg_max_pool2d_init(tg_max_pool2d_layer *l, const char *name, const tg_pool_opts *cfg);
int tg_avg_pool2d_init(tg_avg_pool2d_layer *l, const char *name, const tg_pool_opts *cfg);
int tg_max_pool1d_init(tg_max_pool1d_layer *l, const char *name, const tg_pool_opts *cfg);
int tg_avg_pool1d_init(tg_avg_pool1d_layer *l, const char *name, const tg_pool_opts *cfg);
/* oh, ow > 0 or TG_SIZE_NONE (PyTorch's None). */
int tg_adaptive_avg_pool2d_init(tg_adaptive_avg_pool2d_layer *l, const char *name, int oh, int ow);

/* x [N, C, H, W] (or [C, H, W]) -> [N, C, Ho, Wo]. */
tg_tensor *tg_max_pool2d_forward(tg_tape *t, const tg_max_pool2d_layer *l, tg_tensor *x);
tg_tensor *tg_avg_pool2d_forward(tg_tape *t, const tg_avg_pool2d_layer *l, tg_tensor *x);
tg_tensor *tg_adaptive_avg_pool2d_forward(tg_tape *t, const tg_adaptive_avg_pool2d_layer *l, tg_tensor *x);
/* x [N, C, L] (or [C, L]) -> [N, C, Lo]. */
tg_tensor *tg_max_pool1d_forward(tg_tape *t, const tg_max_pool1d_layer *l, tg_tensor *x);
tg_tensor *tg_avg_pool1d_forward(tg_tape *t, const tg_avg_pool1d_layer *l, tg_tensor *x);

#ifdef __cplusplus
}
#endif

#endif
