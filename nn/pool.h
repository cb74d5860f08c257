/* tapegrad: nn.MaxPool2d, nn.AvgPool2d and nn.AdaptiveAvgPool2d, the
 * layers over the pooling ops (tg_max_pool2d, tg_avg_pool2d,
 * tg_adaptive_avg_pool2d): x [N, C, H, W] or [C, H, W] -> [N, C, Ho, Wo].
 *
 * No parameters: init checks the options once and keeps them with the
 * layer's name for messages. The options are the op's tg_pool_opts,
 * PyTorch's defaults in TG_POOL_OPTS_DEFAULT(kh, kw) (stride = the kernel,
 * padding 0, dilation 1, ceil_mode false, count_include_pad true).
 * AvgPool2d has no dilation (1) and no divisor_override.
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

typedef struct tg_adaptive_avg_pool2d_layer {
    int size[2];                /* output_size (oh, ow) */
    char name[TG_NN_NAME_MAX];
} tg_adaptive_avg_pool2d_layer;

/* 0, or -1 with a message in tg_error() naming the layer: kernel and
 * dilation > 0, stride >= 0, padding >= 0 and at most half the kernel. */
int tg_max_pool2d_init(tg_max_pool2d_layer *l, const char *name, const tg_pool_opts *cfg);
int tg_avg_pool2d_init(tg_avg_pool2d_layer *l, const char *name, const tg_pool_opts *cfg);
/* oh, ow > 0. */
int tg_adaptive_avg_pool2d_init(tg_adaptive_avg_pool2d_layer *l, const char *name, int oh, int ow);

/* x [N, C, H, W] (or [C, H, W]) -> [N, C, Ho, Wo]. */
tg_tensor *tg_max_pool2d_forward(tg_tape *t, const tg_max_pool2d_layer *l, tg_tensor *x);
tg_tensor *tg_avg_pool2d_forward(tg_tape *t, const tg_avg_pool2d_layer *l, tg_tensor *x);
tg_tensor *tg_adaptive_avg_pool2d_forward(tg_tape *t, const tg_adaptive_avg_pool2d_layer *l, tg_tensor *x);

#ifdef __cplusplus
}
#endif

#endif
