/* tapegrad: the transformer feed-forward block.
 *
 *   TG_FFN_GELU, TG_FFN_SILU:      ffn(x) = dropout(fc2(act(fc1(x))))
 *   TG_FFN_SWIGLU, TG_FFN_GEGLU:   ffn(x) = dropout(down_proj(act(gate_proj(x)) * up_proj(x)))
 *                                  x [..., D] -> [..., D]
 *
 * fc1, gate_proj, up_proj = Linear(D, d_ff); fc2, down_proj = Linear(d_ff, D);
 * with biases unless no_bias. act: GELU in its erf form (PyTorch's default)
 * for GELU and GEGLU, SiLU for SILU and SWIGLU (LLaMA's MLP). Dropout (p,
 * when the tape is training) is on the output, as GPT-2's MLP. Parameters
 * "<prefix>.fc1.{weight,bias}", "<prefix>.fc2.{weight,bias}"; gated:
 * "<prefix>.gate_proj.*", "<prefix>.up_proj.*", "<prefix>.down_proj.*"
 * (Hugging Face's LLaMA names), in that order.
 */
#ifndef TAPEGRAD_NN_FFN_H
#define TAPEGRAD_NN_FFN_H

#include "linear.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The activation; the gated kinds multiply it by a second projection. */
typedef enum tg_ffn_act { TG_FFN_GELU = 0, TG_FFN_SILU = 1, TG_FFN_SWIGLU = 2, TG_FFN_GEGLU = 3 } tg_ffn_act;

typedef struct tg_ffn_config {
    int d_model;                /* D */
    int d_ff;                   /* the hidden width */
    double dropout;             /* on the output while training, in [0, 1) */
    tg_ffn_act act;             /* 0: GELU */
    bool no_bias;               /* Linear layers without bias */
} tg_ffn_config;

typedef struct tg_ffn {
    tg_linear fc1;              /* [d_ff, D]: fc1, or gate_proj when gated */
    tg_linear up;               /* [d_ff, D]: up_proj when gated, else unused */
    tg_linear fc2;              /* [D, d_ff]: fc2, or down_proj when gated */
    tg_ffn_act act;
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
