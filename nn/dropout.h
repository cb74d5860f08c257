/* tapegrad: nn.Dropout2d, the layer over tg_dropout2d: while the tape is
 * training, each channel of x [N, C, H, W] is zeroed whole with
 * probability p or kept times 1 / (1 - p); an evaluation tape (or p = 0)
 * gives x itself. No parameters.
 */
#ifndef TAPEGRAD_NN_DROPOUT_H
#define TAPEGRAD_NN_DROPOUT_H

#include <stdbool.h>

#include "names.h"
#include "../core/engine/rng.h"
#include "../core/ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_dropout2d_layer {
    double p;                   /* in [0, 1) */
    bool ready;                 /* init succeeded (p may be 0) */
    char name[TG_NN_NAME_MAX];  /* for messages */
} tg_dropout2d_layer;

/* 0, or -1 with a message in tg_error() naming the layer (p not in [0, 1)). */
int tg_dropout2d_init(tg_dropout2d_layer *l, const char *name, double p);
/* x [N, C, H, W] -> the same shape; rng is needed only while training with p > 0. */
tg_tensor *tg_dropout2d_forward(tg_tape *t, const tg_dropout2d_layer *l, tg_tensor *x, tg_rng *rng);

#ifdef __cplusplus
}
#endif

#endif
