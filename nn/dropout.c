/* tapegrad: nn.Dropout2d (see nn/dropout.h). */
#include "dropout.h"

#include <stdio.h>
#include <string.h>

#include "check.h"

int tg_dropout2d_init(tg_dropout2d_layer *l, const char *name, double p)
{
    if (tg_nn_check_init("tg_dropout2d_init", l, (const tg_params *)l, l)) return -1;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name ? name : "");
    if (!(p >= 0 && p < 1)) {
        tg_error_set("tg_dropout2d '%s': p %g must be in [0, 1)", l->name, p);
        return tg_nn_init_undo(l, sizeof *l, l->name, NULL, 0);
    }
    l->p = p;
    l->ready = true;
    return 0;
}

tg_tensor *tg_dropout2d_forward(tg_tape *t, const tg_dropout2d_layer *l, tg_tensor *x, tg_rng *rng)
{
    if (tg_nn_check_forward("tg_dropout2d_forward", t, l, l && l->ready)) return NULL;
    if (!x) return tg_fail_null(t, "tg_dropout2d");
    if (x->ndim != 4) {
        char s[TG_SHAPE_STR];
        return tg_fail(t, "tg_dropout2d '%s': input %s must be [N, C, H, W] (PyTorch reads a 3-D input as [N, C, L])",
                       l->name, tg_shape_str(x, s));
    }
    return tg_dropout2d(t, x, l->p, rng);
}
