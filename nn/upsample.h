/* tapegrad: nn.Upsample, the layer over tg_interpolate: x [N, C, H, W] ->
 * [N, C, Ho, Wo], nearest or bilinear (align_corners), by size or by
 * scale_factor per dim, exactly one (PyTorch's recompute_scale_factor=None).
 * No parameters: init checks the options once and keeps them with the
 * layer's name for messages.
 */
#ifndef TAPEGRAD_NN_UPSAMPLE_H
#define TAPEGRAD_NN_UPSAMPLE_H

#include "names.h"
#include "../core/ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_upsample_layer {
    tg_interp_opts opts;        /* size or scale per dim, mode, align_corners */
    char name[TG_NN_NAME_MAX];  /* for messages */
} tg_upsample_layer;

/* 0, or -1 with a message in tg_error() naming the layer: for each dim a size
 * > 0 or a finite scale > 0, not both; mode nearest or bilinear;
 * align_corners with bilinear only. */
int tg_upsample_init(tg_upsample_layer *l, const char *name, const tg_interp_opts *cfg);
/* x [N, C, H, W] -> [N, C, Ho, Wo] (tg_interpolate). */
tg_tensor *tg_upsample_forward(tg_tape *t, const tg_upsample_layer *l, tg_tensor *x);

#ifdef __cplusplus
}
#endif

#endif
