/* tapegrad: nn.BatchNorm2d (see nn/batchnorm.h). */
#include "batchnorm.h"

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "init.h"

int tg_batchnorm2d_init(tg_batchnorm2d *l, tg_params *p, tg_params *buffers, const char *prefix,
                        const tg_batchnorm2d_config *cfg)
{
    if (tg_nn_check_init("tg_batchnorm2d_init", l, p, cfg)) return -1;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", prefix ? prefix : "");
    int C = cfg->features, n0 = tg_params_count(p);
    if (C <= 0 || !(cfg->eps > 0) || !(cfg->momentum >= 0 && cfg->momentum <= 1)) {
        tg_error_set("tg_batchnorm2d '%s': num_features %d must be > 0, eps %g > 0 and momentum %g in [0, 1]",
                     l->name, C, cfg->eps, cfg->momentum);
        return tg_nn_init_undo(l, sizeof *l, l->name, p, n0);
    }
    if (cfg->track_running_stats && (!buffers || buffers == p)) {
        tg_error_set("tg_batchnorm2d '%s': track_running_stats needs a buffer store of its own (%s)", l->name,
                     buffers ? "it is the parameter store, whose values an optimizer updates" : "buffers is NULL");
        return tg_nn_init_undo(l, sizeof *l, l->name, p, n0);
    }
    int b0 = buffers ? tg_params_count(buffers) : 0;
    l->features = C;
    l->eps = cfg->eps;
    l->momentum = cfg->momentum;
    if ((cfg->affine && (!(l->weight = tg_nn_param(p, prefix, "weight", 1, (int[]){C})) ||
                         !(l->bias = tg_nn_param(p, prefix, "bias", 1, (int[]){C})))) ||
        (cfg->track_running_stats &&
         (!(l->running_mean = tg_nn_param(buffers, prefix, "running_mean", 1, (int[]){C})) ||
          !(l->running_var = tg_nn_param(buffers, prefix, "running_var", 1, (int[]){C})) ||
          !(l->num_batches_tracked = tg_nn_param(buffers, prefix, "num_batches_tracked", 0, NULL))))) {
        if (buffers) tg_params_truncate(buffers, b0);
        return tg_nn_init_undo(l, sizeof *l, l->name, p, n0);
    }
    if (l->weight) tg_init_const(l->weight, 1);
    if (l->running_var) {
        tg_init_const(l->running_var, 1);
        l->running_mean->requires_grad = l->running_var->requires_grad = false;
        l->num_batches_tracked->requires_grad = false;
    }
    return 0;
}

tg_tensor *tg_batchnorm2d_forward(tg_tape *t, const tg_batchnorm2d *l, tg_tensor *x)
{
    if (tg_nn_check_forward("tg_batchnorm2d_forward", t, l, l && l->features > 0)) return NULL;
    if (!x) return tg_fail_null(t, "tg_batchnorm2d");
    if (x->ndim != 4 || x->shape[1] != l->features) {
        char s[TG_SHAPE_STR];
        return tg_fail(t, "tg_batchnorm2d '%s': input %s must be [N, %d, H, W]", l->name, tg_shape_str(x, s),
                       l->features);
    }
    bool training = tg_tape_training(t) || !l->running_mean;
    tg_bn_opts o = {training, l->momentum, l->eps};
    tg_tensor *y = tg_batch_norm(t, x, l->running_mean, l->running_var, l->weight, l->bias, &o);
    if (y && training && l->num_batches_tracked) l->num_batches_tracked->data[0] += 1;
    return y;
}
