/* tapegrad: RMSNorm over the last dim (nn.RMSNorm, LLaMA's norm).
 *
 *   y = x / sqrt(mean(x^2) + eps) * weight
 *
 * Parameter: "<prefix>.weight" [dim] = 1; no bias. eps is explicit (> 0):
 * PyTorch's nn.RMSNorm(eps=None) means the dtype's machine epsilon, LLaMA
 * uses 1e-5 or 1e-6; tg_block and tg_model use 1e-5 for either norm.
 * (The type is tg_rmsnorm_layer because tg_rmsnorm is the core op.)
 *
 * tg_norm_layer is either norm, as a block or a model picks it
 * (tg_norm_kind): the parameter names are the chosen layer's.
 */
#ifndef TAPEGRAD_NN_RMSNORM_H
#define TAPEGRAD_NN_RMSNORM_H

#include "layernorm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_rmsnorm_layer {
    tg_tensor *weight;          /* [dim] */
    int dim;
    double eps;
    char name[TG_NN_NAME_MAX];
} tg_rmsnorm_layer;

int tg_rmsnorm_init(tg_rmsnorm_layer *n, tg_params *p, const char *prefix, int dim, double eps);
/* x [..., dim] -> same shape. */
tg_tensor *tg_rmsnorm_forward(tg_tape *t, const tg_rmsnorm_layer *n, tg_tensor *x);

/* Which norm a block (ln1, ln2) and a model (ln_f) use. */
typedef enum tg_norm_kind { TG_NORM_LAYER = 0, TG_NORM_RMS = 1 } tg_norm_kind;

typedef struct tg_norm_layer {
    tg_norm_kind kind;
    tg_layernorm_layer ln;      /* TG_NORM_LAYER: "<prefix>.{weight,bias}" */
    tg_rmsnorm_layer rms;       /* TG_NORM_RMS: "<prefix>.weight" */
} tg_norm_layer;

/* 0, or -1 with a message in tg_error() (a bad kind, dim or eps). */
int tg_norm_init(tg_norm_layer *n, tg_params *p, const char *prefix, tg_norm_kind kind, int dim, double eps);
/* x [..., dim] -> same shape. */
tg_tensor *tg_norm_forward(tg_tape *t, const tg_norm_layer *n, tg_tensor *x);

#ifdef __cplusplus
}
#endif

#endif
