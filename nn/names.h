/* tapegrad: a layer's parameter names, PyTorch state_dict keys.
 *
 * Every layer init adds its parameters to a tg_params store under
 * "<prefix>.<suffix>" ("blocks.0.attn.in_proj_weight"), so a checkpoint's
 * keys are the ones PyTorch's module would have.
 */
#ifndef TAPEGRAD_NN_NAMES_H
#define TAPEGRAD_NN_NAMES_H

#include "../core/engine/params.h"
#include "../core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest parameter name / layer prefix nn accepts (bytes, with the NUL). */
#define TG_NN_NAME_MAX 128

/* dst (TG_NN_NAME_MAX bytes) = "<prefix>.<suffix>", or suffix alone when
 * prefix is NULL or "". -1 with a message in tg_error() when it does not fit. */
int tg_nn_name(char *dst, const char *prefix, const char *suffix);

/* Adds the zero-filled parameter "<prefix>.<suffix>" (just suffix when prefix
 * is NULL or ""). NULL with a message in tg_error() when the name is too long, taken
 * or the shape is bad. */
tg_tensor *tg_nn_param(tg_params *p, const char *prefix, const char *suffix, int ndim,
                       const int *shape);

#ifdef __cplusplus
}
#endif

#endif
