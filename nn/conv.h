/* tapegrad: nn.Conv2d, nn.Conv1d and nn.ConvTranspose2d.
 * Conv2d: y = conv2d(x, W) + b, W [out, in/groups, kh, kw] (PyTorch layout),
 * x [N, in, H, W] or [in, H, W]; Conv1d and ConvTranspose2d below.
 *
 * Parameters: "<prefix>.weight" [out, in/groups, kh, kw], "<prefix>.bias"
 * [out] (optional), the same keys for each layer. Init: W, b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
 * fan_in = in/groups * kh * kw (PyTorch's kaiming_uniform_(a=sqrt(5)) and
 * its bias rule), or zeros when rng is NULL.
 */
#ifndef TAPEGRAD_NN_CONV_H
#define TAPEGRAD_NN_CONV_H

#include <stdbool.h>

#include "names.h"
#include "../core/engine/params.h"
#include "../core/engine/rng.h"
#include "../core/ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_conv2d_config {
    int in, out;                /* in_channels, out_channels, each > 0 and divisible by groups */
    int kernel[2];              /* kernel_size (kh, kw), each > 0 */
    tg_conv_opts opts;          /* stride, padding, dilation, groups, 'same' (TG_CONV_OPTS_DEFAULT) */
    bool bias;                  /* nn.Conv2d's bias=True */
} tg_conv2d_config;
#define TG_CONV2D_CONFIG(in, out, kh, kw) {(in), (out), {(kh), (kw)}, TG_CONV_OPTS_DEFAULT, true}

typedef struct tg_conv2d_layer {
    tg_tensor *weight;          /* [out, in/groups, kh, kw] */
    tg_tensor *bias;            /* [out], or NULL */
    int in, out;
    tg_conv_opts opts;
    char name[TG_NN_NAME_MAX];  /* the prefix, for messages */
} tg_conv2d_layer;

/* 0, or -1 with a message in tg_error() naming the layer (bad sizes or opts). */
int tg_conv2d_init(tg_conv2d_layer *l, tg_params *p, const char *prefix, const tg_conv2d_config *cfg, tg_rng *rng);
/* x [N, in, H, W] (or [in, H, W]) -> [N, out, Ho, Wo] (tg_conv2d). */
tg_tensor *tg_conv2d_forward(tg_tape *t, const tg_conv2d_layer *l, tg_tensor *x);

/* nn.Conv1d: W [out, in/groups, k], b [out]; fan_in = in/groups * k; opts'
 * index [0] (as tg_conv1d). */
typedef struct tg_conv1d_config {
    int in, out;                /* each > 0 and divisible by groups */
    int kernel;                 /* kernel_size, > 0 */
    tg_conv_opts opts;          /* index [0]: stride, padding, dilation; groups, 'same' */
    bool bias;
} tg_conv1d_config;
#define TG_CONV1D_CONFIG(in, out, k) {(in), (out), (k), TG_CONV_OPTS_DEFAULT, true}

typedef struct tg_conv1d_layer {
    tg_tensor *weight;          /* [out, in/groups, k] */
    tg_tensor *bias;            /* [out], or NULL */
    int in, out;
    tg_conv_opts opts;
    char name[TG_NN_NAME_MAX];
} tg_conv1d_layer;

int tg_conv1d_init(tg_conv1d_layer *l, tg_params *p, const char *prefix, const tg_conv1d_config *cfg, tg_rng *rng);
/* x [N, in, L] (or [in, L]) -> [N, out, Lo] (tg_conv1d). */
tg_tensor *tg_conv1d_forward(tg_tape *t, const tg_conv1d_layer *l, tg_tensor *x);

/* nn.ConvTranspose2d: W [in, out/groups, kh, kw] (PyTorch's layout), b [out];
 * fan_in = out/groups * kh * kw (PyTorch reads it from W's dim 1). opts'
 * output_padding must be smaller than stride or dilation; no 'same'. */
typedef struct tg_conv_transpose2d_config {
    int in, out;
    int kernel[2];
    tg_conv_opts opts;          /* stride, padding, output_padding, dilation, groups */
    bool bias;
} tg_conv_transpose2d_config;
#define TG_CONV_TRANSPOSE2D_CONFIG(in, out, kh, kw) {(in), (out), {(kh), (kw)}, TG_CONV_OPTS_DEFAULT, true}

typedef struct tg_conv_transpose2d_layer {
    tg_tensor *weight;          /* [in, out/groups, kh, kw] */
    tg_tensor *bias;            /* [out], or NULL */
    int in, out;
    tg_conv_opts opts;
    char name[TG_NN_NAME_MAX];
} tg_conv_transpose2d_layer;

int tg_conv_transpose2d_init(tg_conv_transpose2d_layer *l, tg_params *p, const char *prefix,
                             const tg_conv_transpose2d_config *cfg, tg_rng *rng);
/* x [N, in, H, W] (or [in, H, W]) -> [N, out, Ho, Wo] (tg_conv_transpose2d). */
tg_tensor *tg_conv_transpose2d_forward(tg_tape *t, const tg_conv_transpose2d_layer *l, tg_tensor *x);

#ifdef __cplusplus
}
#endif

#endif
