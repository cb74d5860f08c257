/* tapegrad: nn.Embedding.  out[b, t] = weight[ids[b, t]].
 *
 * Parameter: "<prefix>.weight" [num, dim], init N(0, 1) (PyTorch's default),
 * or zeros when rng is NULL. (The type is tg_embedding_layer because
 * tg_embedding is the core lookup op.)
 */
#ifndef TAPEGRAD_NN_EMBEDDING_H
#define TAPEGRAD_NN_EMBEDDING_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"
#include "init.h"
#include "names.h"
#include "../core/engine/params.h"
#include "../core/ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_embedding_layer {
    tg_tensor *weight;          /* [num, dim] */
    int num, dim;
    char name[TG_NN_NAME_MAX];
} tg_embedding_layer;

int tg_embedding_init(tg_embedding_layer *e, tg_params *p, const char *prefix, int num, int dim,
                      tg_rng *rng);
/* ids [B*T], each in [0, num) -> [B, T, dim]. */
tg_tensor *tg_embedding_forward(tg_tape *t, const tg_embedding_layer *e, const int32_t *ids, int B,
                                int T);

#ifdef __cplusplus
}
#endif

#endif
