/* tapegrad: nn.LayerNorm (see nn/layernorm.h). */
#include "layernorm.h"

#include <stdio.h>
#include <string.h>

/* the layer's name in its errors: "tg_layernorm_forward: ...", "tg_layernorm '<name>': ..." */
#define LAYER "tg_layernorm"

int tg_layernorm_init(tg_layernorm_layer *ln, tg_params *p, const char *prefix, int dim, double eps)
{
    if (tg_nn_check_init(LAYER "_init", ln, p, ln)) return -1;
    memset(ln, 0, sizeof *ln);
    snprintf(ln->name, sizeof ln->name, "%s", prefix ? prefix : "");
    int n0 = tg_params_count(p);
    if (dim <= 0 || !(eps > 0)) {
        tg_error_set(LAYER " '%s': dim %d and eps %g must be > 0", ln->name,
                     dim, eps);
        return tg_nn_init_undo(ln, sizeof *ln, ln->name, p, n0);
    }
    ln->dim = dim;
    ln->eps = eps;
    if (!(ln->weight = tg_nn_param(p, prefix, "weight", 1, (int[]){dim})) ||
        !(ln->bias = tg_nn_param(p, prefix, "bias", 1, (int[]){dim})))
        return tg_nn_init_undo(ln, sizeof *ln, ln->name, p, n0);
    tg_init_const(ln->weight, 1.0);
    return 0;
}

/* [..., dim] -> [..., dim] */
tg_tensor *tg_layernorm_forward(tg_tape *t, const tg_layernorm_layer *ln, tg_tensor *x)
{
    if (tg_nn_check_forward(LAYER "_forward", t, ln, ln && ln->weight)) return NULL;
    if (!x) return tg_fail_null(t, LAYER "_forward");
    if (x->ndim < 1 || tg_cols(x) != ln->dim) {
        char s[TG_SHAPE_STR];
        return tg_fail(t, LAYER " '%s': input %s must be [..., %d]", ln->name, tg_shape_str(x, s),
                       ln->dim);
    }
    return tg_layernorm(t, x, ln->weight, ln->bias, ln->eps);
}
