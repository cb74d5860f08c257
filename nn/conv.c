/* tapegrad: nn.Conv2d, nn.Conv1d, nn.ConvTranspose2d (see nn/conv.h). */
#include "conv.h"

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "init.h"

/* What the three layers' inits differ in. */
typedef struct conv_kind {
    const char *op;             /* "tg_conv2d": the messages' prefix */
    int nd;                     /* kernel dims: 1 or 2 */
    const int *kernel;          /* [nd] */
    bool transposed;            /* weight [in, out/groups, k..], fan_in from out */
} conv_kind;

/* "[a,b]" of v[0..2), or "a" for a 1-D layer */
static const char *pair_str(char *buf, size_t n, const int *v, int nd, bool brackets)
{
    if (nd == 1) snprintf(buf, n, "%d", v[0]);
    else snprintf(buf, n, brackets ? "[%d,%d]" : "%dx%d", v[0], v[1]);
    return buf;
}

/* The checks, the parameters "weight" and "bias" and their init every conv
 * layer shares; l (size bytes) is undone on failure. 0 or -1 naming the layer. */
static int conv_layer_init(void *l, size_t size, tg_tensor **weight, tg_tensor **bias, char *name, tg_params *p,
                           const char *prefix, const conv_kind *k, int in, int out, const tg_conv_opts *o,
                           bool has_bias, tg_rng *rng)
{
    int G = o->groups, n0 = tg_params_count(p), kprod = 1;
    char a[32], b[32], c[32], d[32];
    bool kernel_ok = true;
    for (int i = 0; i < k->nd; i++) kernel_ok &= k->kernel[i] > 0, kprod *= k->kernel[i];
    if (in <= 0 || out <= 0 || !kernel_ok || G <= 0 || in % G || out % G) {
        tg_error_set("%s '%s': in_channels %d, out_channels %d and kernel %s must be > 0, the channels "
                     "divisible by groups %d", k->op, name, in, out, pair_str(a, sizeof a, k->kernel, k->nd, false), G);
        return tg_nn_init_undo(l, size, name, p, n0);
    }
    for (int i = 0; i < k->nd; i++) {
        if (o->stride[i] <= 0 || o->dilation[i] <= 0 || o->padding[i] < 0 || (o->same && o->stride[i] != 1)) {
            tg_error_set("%s '%s': stride %s and dilation %s must be > 0, padding %s >= 0, and padding 'same' needs "
                         "stride 1", k->op, name, pair_str(a, sizeof a, o->stride, k->nd, true),
                         pair_str(b, sizeof b, o->dilation, k->nd, true), pair_str(c, sizeof c, o->padding, k->nd, true));
            return tg_nn_init_undo(l, size, name, p, n0);
        }
        int op = o->output_padding[i];
        if (k->transposed && (o->same || op < 0 || (op >= o->stride[i] && op >= o->dilation[i]))) {
            tg_error_set("%s '%s': output_padding %s must be >= 0 and smaller than stride %s or dilation %s, and "
                         "padding 'same' is refused (PyTorch's)", k->op, name,
                         pair_str(a, sizeof a, o->output_padding, k->nd, true),
                         pair_str(b, sizeof b, o->stride, k->nd, true), pair_str(d, sizeof d, o->dilation, k->nd, true));
            return tg_nn_init_undo(l, size, name, p, n0);
        }
    }
    int shape[4] = {k->transposed ? in : out, k->transposed ? out / G : in / G, k->kernel[0], k->nd == 2 ? k->kernel[1] : 0};
    if (!(*weight = tg_nn_param(p, prefix, "weight", 2 + k->nd, shape)) ||
        (has_bias && !(*bias = tg_nn_param(p, prefix, "bias", 1, (int[]){out}))))
        return tg_nn_init_undo(l, size, name, p, n0);
    if (rng) {
        double bound = tg_linear_init_bound(shape[1] * kprod);  /* fan_in: W's dim 1 times the kernel */
        tg_init_uniform(*weight, -bound, bound, rng);
        if (*bias) tg_init_uniform(*bias, -bound, bound, rng);
    }
    return 0;
}

/* x [N, in, spatial..] or [in, spatial..] with nd spatial dims; else a
 * failure on t naming the layer */
static bool conv_input_ok(tg_tape *t, const char *op, const char *name, int in, int nd, const tg_tensor *x)
{
    if (!x) return tg_fail_null(t, op), false;
    if ((x->ndim == nd + 2 || x->ndim == nd + 1) && x->shape[x->ndim - nd - 1] == in) return true;
    char s[TG_SHAPE_STR];
    tg_fail(t, "%s '%s': input %s must be [N, %d, %s] or [%d, %s]", op, name, tg_shape_str(x, s), in,
            nd == 2 ? "H, W" : "L", in, nd == 2 ? "H, W" : "L");
    return false;
}

int tg_conv2d_init(tg_conv2d_layer *l, tg_params *p, const char *prefix, const tg_conv2d_config *cfg, tg_rng *rng)
{
    if (tg_nn_check_init("tg_conv2d_init", l, p, cfg)) return -1;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", prefix ? prefix : "");
    conv_kind k = {"tg_conv2d", 2, cfg->kernel, false};
    if (conv_layer_init(l, sizeof *l, &l->weight, &l->bias, l->name, p, prefix, &k, cfg->in, cfg->out, &cfg->opts,
                        cfg->bias, rng))
        return -1;
    l->in = cfg->in, l->out = cfg->out, l->opts = cfg->opts;
    return 0;
}

tg_tensor *tg_conv2d_forward(tg_tape *t, const tg_conv2d_layer *l, tg_tensor *x)
{
    if (tg_nn_check_forward("tg_conv2d_forward", t, l, l && l->weight) ||
        !conv_input_ok(t, "tg_conv2d", l->name, l->in, 2, x))
        return NULL;
    return tg_conv2d(t, x, l->weight, l->bias, &l->opts);
}

int tg_conv1d_init(tg_conv1d_layer *l, tg_params *p, const char *prefix, const tg_conv1d_config *cfg, tg_rng *rng)
{
    if (tg_nn_check_init("tg_conv1d_init", l, p, cfg)) return -1;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", prefix ? prefix : "");
    conv_kind k = {"tg_conv1d", 1, &cfg->kernel, false};
    if (conv_layer_init(l, sizeof *l, &l->weight, &l->bias, l->name, p, prefix, &k, cfg->in, cfg->out, &cfg->opts,
                        cfg->bias, rng))
        return -1;
    l->in = cfg->in, l->out = cfg->out, l->opts = cfg->opts;
    return 0;
}

tg_tensor *tg_conv1d_forward(tg_tape *t, const tg_conv1d_layer *l, tg_tensor *x)
{
    if (tg_nn_check_forward("tg_conv1d_forward", t, l, l && l->weight) ||
        !conv_input_ok(t, "tg_conv1d", l->name, l->in, 1, x))
        return NULL;
    return tg_conv1d(t, x, l->weight, l->bias, &l->opts);
}

int tg_conv_transpose2d_init(tg_conv_transpose2d_layer *l, tg_params *p, const char *prefix,
                             const tg_conv_transpose2d_config *cfg, tg_rng *rng)
{
    if (tg_nn_check_init("tg_conv_transpose2d_init", l, p, cfg)) return -1;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", prefix ? prefix : "");
    conv_kind k = {"tg_conv_transpose2d", 2, cfg->kernel, true};
    if (conv_layer_init(l, sizeof *l, &l->weight, &l->bias, l->name, p, prefix, &k, cfg->in, cfg->out, &cfg->opts,
                        cfg->bias, rng))
        return -1;
    l->in = cfg->in, l->out = cfg->out, l->opts = cfg->opts;
    return 0;
}

tg_tensor *tg_conv_transpose2d_forward(tg_tape *t, const tg_conv_transpose2d_layer *l, tg_tensor *x)
{
    if (tg_nn_check_forward("tg_conv_transpose2d_forward", t, l, l && l->weight) ||
        !conv_input_ok(t, "tg_conv_transpose2d", l->name, l->in, 2, x))
        return NULL;
    return tg_conv_transpose2d(t, x, l->weight, l->bias, &l->opts);
}
