/* tapegrad: nn.Linear (see nn/linear.h). */
#include "linear.h"

#include <stdio.h>
#include <string.h>

/* the layer's name in its errors: "tg_linear_forward: ...", "tg_linear '<name>': ..." */
#define LAYER "tg_linear"

int tg_linear_init(tg_linear *l, tg_params *p, const char *prefix, const tg_linear_config *cfg, tg_rng *rng)
{
    if (tg_nn_check_init(LAYER "_init", l, p, cfg)) return -1;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", prefix ? prefix : "");
    int in = cfg->in, out = cfg->out, n0 = tg_params_count(p);
    if (in <= 0 || out <= 0) {
        tg_error_set(LAYER " '%s': in_features %d and out_features %d must be > 0", l->name, in, out);
        return tg_nn_init_undo(l, sizeof *l, l->name, p, n0);
    }
    l->in = in;
    l->out = out;
    if (!(l->weight = tg_nn_param(p, prefix, "weight", 2, (int[]){out, in})) ||
        (cfg->bias && !(l->bias = tg_nn_param(p, prefix, "bias", 1, (int[]){out}))))
        return tg_nn_init_undo(l, sizeof *l, l->name, p, n0);
    if (rng) tg_init_linear(l->weight, l->bias, rng);
    return 0;
}

/* [..., in] @ [out, in]^T + [out] -> [..., out] */
tg_tensor *tg_linear_forward(tg_tape *t, const tg_linear *l, tg_tensor *x)
{
    if (tg_nn_check_forward(LAYER "_forward", t, l, l && l->weight)) return NULL;
    if (!x) return tg_fail_null(t, LAYER "_forward");
    if (x->ndim < 2 || x->shape[x->ndim - 1] != l->in) {
        char s[TG_SHAPE_STR];
        return tg_fail(t, LAYER " '%s': input %s must be [..., %d] (2-D to 8-D)", l->name,
                       tg_shape_str(x, s), l->in);
    }
    return tg_matmul(t, x, l->weight, l->bias, TG_TRANS_B);
}
