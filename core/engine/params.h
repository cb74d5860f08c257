/* tapegrad: the parameter store.
 *
 * One store per model. Every parameter is a named tensor (PyTorch state_dict
 * keys: "blocks.0.attn.in_proj_weight") whose data and grad live in two flat
 * buffers owned by the store, so an optimizer sees all parameters and all
 * gradients as one array each. Grads persist across steps and are cleared
 * only by tg_params_zero_grad (gradient accumulation over micro-batches).
 *
 * Adding a parameter may move the flat buffers: tensor pointers stay valid,
 * but raw data/grad pointers taken before the last tg_params_add do not.
 */
#ifndef TAPEGRAD_PARAMS_H
#define TAPEGRAD_PARAMS_H

#include <stddef.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_params tg_params;

/* NULL only when out of memory. */
tg_params *tg_params_new(void);
void tg_params_free(tg_params *p);

/* A new zero-filled parameter (requires_grad, zero grad). NULL when the name
 * is taken, the shape is bad or memory runs out (tg_error() says which). */
tg_tensor *tg_params_add(tg_params *p, const char *name, int ndim, const int *shape);
tg_tensor *tg_params_get(const tg_params *p, const char *name);
/* Removes (and frees) every parameter after the first count: a failed layer
 * init takes back what it added (nn/check.h). */
void tg_params_truncate(tg_params *p, int count);

int tg_params_count(const tg_params *p);           /* number of tensors */
tg_tensor *tg_params_at(const tg_params *p, int i); /* in insertion order */
size_t tg_params_numel(const tg_params *p);         /* number of scalars */

/* The flat views: numel values each, parameters in insertion order. */
tg_real *tg_params_data(const tg_params *p);
tg_real *tg_params_grad(const tg_params *p);
void tg_params_zero_grad(tg_params *p);

#ifdef __cplusplus
}
#endif

#endif
