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

#include <stdbool.h>
#include <stddef.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_params tg_params;

/* A store of parameters of dtype dt (float32 or float64); tg_params_new: of
 * the program's default dtype. NULL when out of memory or dt is another dtype
 * (a bfloat16 model keeps float32 weights and converts them with tg_to). */
tg_params *tg_params_new_dtype(tg_dtype dt);
static inline tg_params *tg_params_new(void) { return tg_params_new_dtype(TG_REAL_DTYPE); }
tg_dtype tg_params_dtype(const tg_params *p);
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

/* The flat views: numel elements each, parameters in insertion order. The
 * data (grad when grad is true) when the store holds dtype dt, else NULL and
 * tg_error() naming both. tg_params_data / _grad: as the program's tg_real. */
void *tg_params_flat(const tg_params *p, tg_dtype dt, bool grad);
static inline tg_real *tg_params_data(const tg_params *p) { return (tg_real *)tg_params_flat(p, TG_REAL_DTYPE, false); }
static inline tg_real *tg_params_grad(const tg_params *p) { return (tg_real *)tg_params_flat(p, TG_REAL_DTYPE, true); }
void tg_params_zero_grad(tg_params *p);

#ifdef __cplusplus
}
#endif

#endif
