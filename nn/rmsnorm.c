/* tapegrad: nn.RMSNorm and the block's choice of norm (see nn/rmsnorm.h). */
#include "rmsnorm.h"

#include <stdio.h>
#include <string.h>

/* the layer's name in its errors: "tg_rmsnorm_forward: ...", "tg_rmsnorm '<name>': ..." */
#define LAYER "tg_rmsnorm"

int tg_rmsnorm_init(tg_rmsnorm_layer *n, tg_params *p, const char *prefix, int dim, double eps)
{
    if (tg_nn_check_init(LAYER "_init", n, p, n)) return -1;
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", prefix ? prefix : "");
    int n0 = tg_params_count(p);
    if (dim <= 0 || !(eps > 0)) {
        tg_error_set(LAYER " '%s': dim %d and eps %g must be > 0", n->name, dim, eps);
        return tg_nn_init_undo(n, sizeof *n, n->name, p, n0);
    }
    n->dim = dim;
    n->eps = eps;
    if (!(n->weight = tg_nn_param(p, prefix, "weight", 1, (int[]){dim})))
        return tg_nn_init_undo(n, sizeof *n, n->name, p, n0);
    tg_init_const(n->weight, 1.0);
    return 0;
}

/* [..., dim] -> [..., dim] */
tg_tensor *tg_rmsnorm_forward(tg_tape *t, const tg_rmsnorm_layer *n, tg_tensor *x)
{
    if (tg_nn_check_forward(LAYER "_forward", t, n, n && n->weight)) return NULL;
    if (!x) return tg_fail_null(t, LAYER "_forward");
    if (x->ndim < 1 || tg_cols(x) != n->dim) {
        char s[TG_SHAPE_STR];
        return tg_fail(t, LAYER " '%s': input %s must be [..., %d]", n->name, tg_shape_str(x, s), n->dim);
    }
    return tg_rmsnorm(t, x, n->weight, n->eps);
}

int tg_norm_init(tg_norm_layer *n, tg_params *p, const char *prefix, tg_norm_kind kind, int dim, double eps)
{
    if (tg_nn_check_init("tg_norm_init", n, p, n)) return -1;
    memset(n, 0, sizeof *n);
    n->kind = kind;
    if (kind == TG_NORM_LAYER) return tg_layernorm_init(&n->ln, p, prefix, dim, eps);
    if (kind == TG_NORM_RMS) return tg_rmsnorm_init(&n->rms, p, prefix, dim, eps);
    return tg_error_set("tg_norm '%s': kind %d is not a tg_norm_kind", prefix ? prefix : "", (int)kind);
}

/* [..., dim] -> [..., dim] */
tg_tensor *tg_norm_forward(tg_tape *t, const tg_norm_layer *n, tg_tensor *x)
{
    if (tg_nn_check_forward("tg_norm_forward", t, n, n && (n->ln.weight || n->rms.weight))) return NULL;
    return n->kind == TG_NORM_RMS ? tg_rmsnorm_forward(t, &n->rms, x) : tg_layernorm_forward(t, &n->ln, x);
}
