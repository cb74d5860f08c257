/* tapegrad: nn.Conv2d (see nn/conv.h). */
#include "conv.h"

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "init.h"

int tg_conv2d_init(tg_conv2d_layer *l, tg_params *p, const char *prefix, const tg_conv2d_config *cfg, tg_rng *rng)
{
    if (tg_nn_check_init("tg_conv2d_init", l, p, cfg)) return -1;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", prefix ? prefix : "");
    const tg_conv_opts *o = &cfg->opts;
    int in = cfg->in, out = cfg->out, kh = cfg->kernel[0], kw = cfg->kernel[1], G = o->groups, n0 = tg_params_count(p);
    if (in <= 0 || out <= 0 || kh <= 0 || kw <= 0 || G <= 0 || in % G || out % G) {
        tg_error_set("tg_conv2d '%s': in_channels %d, out_channels %d and kernel %dx%d must be > 0, the channels "
                     "divisible by groups %d", l->name, in, out, kh, kw, G);
        return tg_nn_init_undo(l, sizeof *l, l->name, p, n0);
    }
    for (int i = 0; i < 2; i++)
        if (o->stride[i] <= 0 || o->dilation[i] <= 0 || o->padding[i] < 0 || (o->same && o->stride[i] != 1)) {
            tg_error_set("tg_conv2d '%s': stride [%d,%d] and dilation [%d,%d] must be > 0, padding [%d,%d] >= 0, "
                         "and padding 'same' needs stride 1", l->name, o->stride[0], o->stride[1], o->dilation[0],
                         o->dilation[1], o->padding[0], o->padding[1]);
            return tg_nn_init_undo(l, sizeof *l, l->name, p, n0);
        }
    l->in = in;
    l->out = out;
    l->opts = *o;
    if (!(l->weight = tg_nn_param(p, prefix, "weight", 4, (int[]){out, in / G, kh, kw})) ||
        (cfg->bias && !(l->bias = tg_nn_param(p, prefix, "bias", 1, (int[]){out}))))
        return tg_nn_init_undo(l, sizeof *l, l->name, p, n0);
    if (rng) {
        double bound = tg_linear_init_bound(in / G * kh * kw);
        tg_init_uniform(l->weight, -bound, bound, rng);
        if (l->bias) tg_init_uniform(l->bias, -bound, bound, rng);
    }
    return 0;
}

tg_tensor *tg_conv2d_forward(tg_tape *t, const tg_conv2d_layer *l, tg_tensor *x)
{
    if (tg_nn_check_forward("tg_conv2d_forward", t, l, l && l->weight)) return NULL;
    if (!x) return tg_fail_null(t, "tg_conv2d");
    if ((x->ndim != 4 && x->ndim != 3) || x->shape[x->ndim - 3] != l->in) {
        char s[TG_SHAPE_STR];
        return tg_fail(t, "tg_conv2d '%s': input %s must be [N, %d, H, W] or [%d, H, W]", l->name, tg_shape_str(x, s),
                       l->in, l->in);
    }
    return tg_conv2d(t, x, l->weight, l->bias, &l->opts);
}
