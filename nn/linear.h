/* tapegrad: nn.Linear.  y = x W^T + b, W [out, in] (PyTorch layout).
 *
 * Parameters: "<prefix>.weight" [out, in], "<prefix>.bias" [out] (optional).
 * Init: W, b ~ U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's default), or zeros when
 * rng is NULL.
 */
#ifndef TAPEGRAD_NN_LINEAR_H
#define TAPEGRAD_NN_LINEAR_H

#include <stdbool.h>
#include <stddef.h>

#include "check.h"
#include "init.h"
#include "names.h"
#include "../core/engine/params.h"
#include "../core/ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_linear_config {
    int in, out;                /* in_features, out_features, each > 0 */
    bool bias;                  /* nn.Linear's bias=True */
} tg_linear_config;

typedef struct tg_linear {
    tg_tensor *weight;          /* [out, in] */
    tg_tensor *bias;            /* [out], or NULL */
    int in, out;
    char name[TG_NN_NAME_MAX];  /* the prefix, for messages */
} tg_linear;

/* 0, or -1 with a message in tg_error() naming the layer. */
int tg_linear_init(tg_linear *l, tg_params *p, const char *prefix, const tg_linear_config *cfg, tg_rng *rng);
/* x [..., in] (2-D to 8-D) -> [..., out]. */
tg_tensor *tg_linear_forward(tg_tape *t, const tg_linear *l, tg_tensor *x);

#ifdef __cplusplus
}
#endif

#endif
