/* tapegrad: nn.Embedding.  out[..., :] = weight[ids[...]].
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
/* ids [...], an int64 (PyTorch's) or int32 tensor, each in [0, num) ->
 * [..., dim]. */
tg_tensor *tg_embedding_forward(tg_tape *t, const tg_embedding_layer *e, const tg_tensor *ids);

#ifdef __cplusplus
}
#endif

#endif
