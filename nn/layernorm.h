/* tapegrad: nn.LayerNorm over the last dim.
 *
 * Parameters: "<prefix>.weight" [dim] = 1, "<prefix>.bias" [dim] = 0
 * (PyTorch's default, elementwise_affine=True); eps as torch (1e-5 there).
 * (The type is tg_layernorm_layer because tg_layernorm is the core op.)
 */
#ifndef TAPEGRAD_NN_LAYERNORM_H
#define TAPEGRAD_NN_LAYERNORM_H

#include <stddef.h>

#include "check.h"
#include "init.h"
#include "names.h"
#include "../core/engine/params.h"
#include "../core/ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_layernorm_layer {
    tg_tensor *weight, *bias;   /* [dim] each */
    int dim;
    double eps;
    char name[TG_NN_NAME_MAX];
} tg_layernorm_layer;

int tg_layernorm_init(tg_layernorm_layer *ln, tg_params *p, const char *prefix, int dim, double eps);
/* x [..., dim] -> same shape. */
tg_tensor *tg_layernorm_forward(tg_tape *t, const tg_layernorm_layer *ln, tg_tensor *x);

#ifdef __cplusplus
}
#endif

#endif
