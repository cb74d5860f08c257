/* tapegrad: nn.BatchNorm2d.  y = (x - mean) / sqrt(var + eps) * weight + bias
 * per channel of x [N, C, H, W] (tg_batch_norm).
 *
 * Parameters (affine): "<prefix>.weight" = 1, "<prefix>.bias" = 0, [C].
 * Buffers (track_running_stats), in a store of their own so that no
 * optimizer updates them: "<prefix>.running_mean" = 0, "<prefix>.running_var"
 * = 1 [C], "<prefix>.num_batches_tracked" [] (PyTorch's int64, held as a
 * tg_real count). PyTorch's state_dict is both stores (tg_st_add_params on
 * each). A training tape normalises with the batch statistics and moves the
 * running ones (momentum, unbiased variance) and counts the batch; an
 * evaluation tape uses the running ones. Without running statistics every
 * forward uses the batch's (PyTorch's track_running_stats=False).
 */
#ifndef TAPEGRAD_NN_BATCHNORM_H
#define TAPEGRAD_NN_BATCHNORM_H

#include <stdbool.h>

#include "names.h"
#include "../core/engine/params.h"
#include "../core/ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_batchnorm2d_config {
    int features;               /* num_features C > 0 */
    double eps;                 /* > 0; 1e-5 */
    double momentum;            /* in [0, 1]; 0.1 */
    bool affine;                /* weight and bias */
    bool track_running_stats;   /* the buffers */
} tg_batchnorm2d_config;
#define TG_BATCHNORM2D_CONFIG(c) {(c), 1e-5, 0.1, true, true}

typedef struct tg_batchnorm2d {
    tg_tensor *weight, *bias;                                   /* [C], or NULL */
    tg_tensor *running_mean, *running_var, *num_batches_tracked; /* [C], [C], [], or NULL */
    int features;
    double eps, momentum;
    char name[TG_NN_NAME_MAX];  /* the prefix, for messages */
} tg_batchnorm2d;

/* 0, or -1 with a message in tg_error() naming the layer. buffers is
 * needed with track_running_stats (and must not be p); else it may be NULL. */
int tg_batchnorm2d_init(tg_batchnorm2d *l, tg_params *p, tg_params *buffers, const char *prefix,
                        const tg_batchnorm2d_config *cfg);
/* x [N, C, H, W] -> the same shape. */
tg_tensor *tg_batchnorm2d_forward(tg_tape *t, const tg_batchnorm2d *l, tg_tensor *x);

#ifdef __cplusplus
}
#endif

#endif
