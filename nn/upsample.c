/* tapegrad: nn.Upsample (see nn/upsample.h). */
#include "upsample.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

int tg_upsample_init(tg_upsample_layer *l, const char *name, const tg_interp_opts *cfg)
{
    if (tg_nn_check_init("tg_upsample_init", l, (const tg_params *)l, cfg)) return -1;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name ? name : "");
    bool ok = cfg->mode == TG_INTERP_NEAREST || cfg->mode == TG_INTERP_BILINEAR;
    if (!ok || (cfg->align_corners && cfg->mode != TG_INTERP_BILINEAR)) {
        tg_error_set("tg_upsample '%s': mode %d must be TG_INTERP_NEAREST or TG_INTERP_BILINEAR, align_corners "
                     "bilinear's only", l->name, (int)cfg->mode);
        return tg_nn_init_undo(l, sizeof *l, l->name, NULL, 0);
    }
    for (int i = 0; i < 2; i++) {
        double sf = cfg->scale[i];
        bool by_size = cfg->size[i] != 0, by_scale = sf != 0;
        if (by_size == by_scale || cfg->size[i] < 0 || (by_scale && !(sf > 0 && isfinite(sf)))) {
            tg_error_set("tg_upsample '%s': dim %d needs a size > 0 or a finite scale_factor > 0, exactly one (size "
                         "%d, scale %g)", l->name, i, cfg->size[i], sf);
            return tg_nn_init_undo(l, sizeof *l, l->name, NULL, 0);
        }
    }
    l->opts = *cfg;
    return 0;
}

tg_tensor *tg_upsample_forward(tg_tape *t, const tg_upsample_layer *l, tg_tensor *x)
{
    bool ready = l && (l->opts.size[0] || l->opts.scale[0] != 0);
    if (tg_nn_check_forward("tg_upsample_forward", t, l, ready)) return NULL;
    if (!x) return tg_fail_null(t, "tg_upsample");
    if (x->ndim != 4) {
        char s[TG_SHAPE_STR];
        return tg_fail(t, "tg_upsample '%s': input %s must be [N, C, H, W]", l->name, tg_shape_str(x, s));
    }
    return tg_interpolate(t, x, &l->opts);
}
