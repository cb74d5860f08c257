/* tapegrad: nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d, nn.MaxPool1d,
 * nn.AvgPool1d (see nn/pool.h). */
#include "pool.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

/* The options of a pooling layer called kind (max: with dilation) over nd
 * spatial dims (1: index [0]); 0 or -1 with a message naming the layer. */
static int pool_opts_check(const char *kind, const char *name, const tg_pool_opts *o, bool max, int nd)
{
    if (o->divisor_override < 0 || (o->divisor_override && (max || nd == 1)))
        return tg_error_set("%s '%s': divisor_override %d must be >= 0 (0: None), and only AvgPool2d has one", kind,
                            name, o->divisor_override);
    for (int i = 0; i < nd; i++) {
        int k = o->kernel[i], s = o->stride[i], p = o->padding[i], d = o->dilation[i];
        if (k <= 0 || s < 0 || p < 0 || p > k / 2 || d <= 0 || (!max && d != 1))
            return tg_error_set("%s '%s': kernel [%d,%d] must be > 0, stride [%d,%d] >= 0 (0: the kernel), padding "
                                "[%d,%d] >= 0 and at most half the kernel, dilation [%d,%d] %s",
                                kind, name, o->kernel[0], o->kernel[1], o->stride[0], o->stride[1], o->padding[0],
                                o->padding[1], o->dilation[0], o->dilation[1], max ? "> 0" : "1 (average pooling has none)");
    }
    return 0;
}

/* x is [N, C, H, W] or [C, H, W] (nd = 1: [N, C, L] or [C, L]); else false
 * with a message on t naming the layer */
static bool pool_input_ok(tg_tape *t, const char *kind, const char *name, const tg_tensor *x, int nd)
{
    char s[TG_SHAPE_STR];
    if (!x) tg_fail_null(t, kind);
    else if (x->ndim != nd + 2 && x->ndim != nd + 1)
        tg_fail(t, "%s '%s': input %s must be %s", kind, name, tg_shape_str(x, s),
                nd == 2 ? "[N, C, H, W] or [C, H, W]" : "[N, C, L] or [C, L]");
    return x && (x->ndim == nd + 2 || x->ndim == nd + 1);
}

/* The rest of a windowed pooling layer's init, after tg_nn_check_init:
 * the name, the options' checks (kind, max, nd as pool_opts_check) and the
 * options kept; 0 or -1 with the layer (size bytes) undone. */
static int pool_layer_init(const char *kind, void *l, size_t size, tg_pool_opts *opts, char *name,
                           const char *lname, const tg_pool_opts *cfg, bool max, int nd)
{
    memset(l, 0, size);
    snprintf(name, TG_NN_NAME_MAX, "%s", lname ? lname : "");
    if (pool_opts_check(kind, name, cfg, max, nd)) return tg_nn_init_undo(l, size, name, NULL, 0);
    *opts = *cfg;
    return 0;
}

int tg_max_pool2d_init(tg_max_pool2d_layer *l, const char *name, const tg_pool_opts *cfg)
{
    if (tg_nn_check_init("tg_max_pool2d_init", l, (const tg_params *)l, cfg)) return -1;
    return pool_layer_init("tg_max_pool2d", l, sizeof *l, &l->opts, l->name, name, cfg, true, 2);
}

int tg_avg_pool2d_init(tg_avg_pool2d_layer *l, const char *name, const tg_pool_opts *cfg)
{
    if (tg_nn_check_init("tg_avg_pool2d_init", l, (const tg_params *)l, cfg)) return -1;
    return pool_layer_init("tg_avg_pool2d", l, sizeof *l, &l->opts, l->name, name, cfg, false, 2);
}

int tg_adaptive_avg_pool2d_init(tg_adaptive_avg_pool2d_layer *l, const char *name, int oh, int ow)
{
    if (tg_nn_check_init("tg_adaptive_avg_pool2d_init", l, (const tg_params *)l, l)) return -1;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name ? name : "");
    if ((oh <= 0 && oh != TG_SIZE_NONE) || (ow <= 0 && ow != TG_SIZE_NONE)) {
        tg_error_set("tg_adaptive_avg_pool2d '%s': output_size %dx%d must be > 0 or TG_SIZE_NONE (-1: the input's)",
                     l->name, oh, ow);
        return tg_nn_init_undo(l, sizeof *l, l->name, NULL, 0);
    }
    l->size[0] = oh, l->size[1] = ow;
    return 0;
}

tg_tensor *tg_max_pool2d_forward(tg_tape *t, const tg_max_pool2d_layer *l, tg_tensor *x)
{
    if (tg_nn_check_forward("tg_max_pool2d_forward", t, l, l && l->opts.kernel[0] > 0) ||
        !pool_input_ok(t, "tg_max_pool2d", l->name, x, 2))
        return NULL;
    return tg_max_pool2d(t, x, &l->opts);
}

tg_tensor *tg_avg_pool2d_forward(tg_tape *t, const tg_avg_pool2d_layer *l, tg_tensor *x)
{
    if (tg_nn_check_forward("tg_avg_pool2d_forward", t, l, l && l->opts.kernel[0] > 0) ||
        !pool_input_ok(t, "tg_avg_pool2d", l->name, x, 2))
        return NULL;
    return tg_avg_pool2d(t, x, &l->opts);
}

tg_tensor *tg_adaptive_avg_pool2d_forward(tg_tape *t, const tg_adaptive_avg_pool2d_layer *l, tg_tensor *x)
{
    if (tg_nn_check_forward("tg_adaptive_avg_pool2d_forward", t, l, l && l->size[0] != 0) ||
        !pool_input_ok(t, "tg_adaptive_avg_pool2d", l->name, x, 2))
        return NULL;
    return tg_adaptive_avg_pool2d(t, x, l->size[0], l->size[1]);
}

int tg_max_pool1d_init(tg_max_pool1d_layer *l, const char *name, const tg_pool_opts *cfg)
{
    if (tg_nn_check_init("tg_max_pool1d_init", l, (const tg_params *)l, cfg)) return -1;
    return pool_layer_init("tg_max_pool1d", l, sizeof *l, &l->opts, l->name, name, cfg, true, 1);
}

int tg_avg_pool1d_init(tg_avg_pool1d_layer *l, const char *name, const tg_pool_opts *cfg)
{
    if (tg_nn_check_init("tg_avg_pool1d_init", l, (const tg_params *)l, cfg)) return -1;
    return pool_layer_init("tg_avg_pool1d", l, sizeof *l, &l->opts, l->name, name, cfg, false, 1);
}

tg_tensor *tg_max_pool1d_forward(tg_tape *t, const tg_max_pool1d_layer *l, tg_tensor *x)
{
    if (tg_nn_check_forward("tg_max_pool1d_forward", t, l, l && l->opts.kernel[0] > 0) ||
        !pool_input_ok(t, "tg_max_pool1d", l->name, x, 1))
        return NULL;
    return tg_max_pool1d(t, x, &l->opts);
}

tg_tensor *tg_avg_pool1d_forward(tg_tape *t, const tg_avg_pool1d_layer *l, tg_tensor *x)
{
    if (tg_nn_check_forward("tg_avg_pool1d_forward", t, l, l && l->opts.kernel[0] > 0) ||
        !pool_input_ok(t, "tg_avg_pool1d", l->name, x, 1))
        return NULL;
    return tg_avg_pool1d(t, x, &l->opts);
}
