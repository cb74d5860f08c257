/* tapegrad: the transformer feed-forward block.
 *
 *   ffn(x) = dropout(fc2(gelu(fc1(x))))      x [..., D] -> [..., D]
 *
 * fc1 = Linear(D, d_ff), fc2 = Linear(d_ff, D), both with bias; GELU in its
 * erf form (PyTorch's default). Dropout (p, when the tape is training) is on
 * the output, as GPT-2's MLP. Parameters "<prefix>.fc1.{weight,bias}",
 * "<prefix>.fc2.{weight,bias}".
 */
#ifndef TAPEGRAD_NN_FFN_H
#define TAPEGRAD_NN_FFN_H

#include "linear.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_ffn_config {
    int d_model;                /* D */
    int d_ff;                   /* the hidden width */
    double dropout;             /* on the output while training, in [0, 1) */
} tg_ffn_config;

typedef struct tg_ffn {
    tg_linear fc1;              /* [d_ff, D] */
    tg_linear fc2;              /* [D, d_ff] */
    double dropout;
    char name[TG_NN_NAME_MAX];
} tg_ffn;

int tg_ffn_init(tg_ffn *f, tg_params *p, const char *prefix, const tg_ffn_config *cfg, tg_rng *rng);
/* x [..., D] -> [..., D]; rng is needed only for dropout while training. */
tg_tensor *tg_ffn_forward(tg_tape *t, const tg_ffn *f, tg_tensor *x, tg_rng *rng);

#ifdef __cplusplus
}
#endif

#endif
