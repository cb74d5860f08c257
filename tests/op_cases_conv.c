/* Rows of the convolutional network ops: convolution, pooling, batch norm,
 * channel dropout, resizing (tests/op_cases.h). Element 1 of the first input
 * is the NaN; the patterns are PyTorch's (the windows that hold it). */
#include "op_cases.h"

static const tg_conv_opts pad1 = {{1, 1}, {1, 1}, {1, 1}, 1, false, {0, 0}};
static const tg_conv_opts grouped = {{2, 2}, {0, 0}, {2, 1}, 2, false, {0, 0}};
static const tg_conv_opts stride2 = {{2, 2}, {0, 0}, {1, 1}, 1, false, {0, 0}};
static const tg_pool_opts k2 = TG_POOL_OPTS_DEFAULT(2, 2), k3s2p1 = {{3, 0}, {2, 0}, {1, 0}, {1, 1}, false, true, 0};
static const tg_pool_opts k3p1 = {{3, 3}, {1, 1}, {1, 1}, {1, 1}, false, false, 0};
/* the option combinations tests/test_conv.c gradchecked before it had rows */
static const tg_conv_opts mixed = {{2, 1}, {1, 2}, {2, 1}, 2, false, {0, 0}};
static const tg_conv_opts same = {{1, 1}, {0, 0}, {2, 1}, 2, true, {0, 0}};
static const tg_conv_opts mixed1d = {{2, 1}, {1, 0}, {2, 1}, 2, false, {0, 0}};
static const tg_conv_opts same1d = {{1, 1}, {0, 0}, {1, 1}, 2, true, {0, 0}};
static const tg_conv_opts out_pad = {{2, 1}, {1, 0}, {1, 1}, 1, false, {1, 0}};
static const tg_conv_opts out_pad_grouped = {{2, 3}, {1, 1}, {2, 1}, 2, false, {1, 2}};
static const tg_pool_opts max_ceil = {{3, 2}, {2, 1}, {1, 1}, {1, 2}, true, true, 0};
static const tg_pool_opts avg_ceil = {{3, 2}, {2, 1}, {1, 1}, {1, 1}, true, false, 0};
static const tg_pool_opts avg_ceil_pad = {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true, 0};
static const tg_pool_opts avg1_ceil = {{3, 0}, {2, 0}, {1, 0}, {1, 1}, true, false, 0};
static const tg_pool_opts avg1_ceil_pad = {{4, 0}, {3, 0}, {2, 0}, {1, 1}, true, true, 0};
static const tg_pool_opts max1_dilated = {{3, 0}, {2, 0}, {1, 0}, {2, 1}, true, true, 0};
static const tg_pool_opts avg_div = {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false, 5};
static const tg_pool_opts max_pad = {{2, 2}, {0, 0}, {1, 1}, {1, 1}, false, true, 0};
static const tg_interp_opts scaled = {{0, 0}, {1.5, 0.5}, TG_INTERP_BILINEAR, false};
static const tg_bn_opts train = {true, 0.1, 1e-5}, eval = TG_BN_OPTS_DEFAULT;
static const tg_interp_opts nearest = {{4, 5}, {0, 0}, TG_INTERP_NEAREST, false};
static const tg_interp_opts bilinear = {{5, 4}, {0, 0}, TG_INTERP_BILINEAR, true};

OC_BUILD(b_conv2d, tg_conv2d(t, x[0], x[1], x[2], &pad1))
OC_BUILD(b_conv2d_grouped, tg_conv2d(t, x[0], x[1], NULL, &grouped))
OC_BUILD(b_conv1d, tg_conv1d(t, x[0], x[1], x[2], &pad1))
OC_BUILD(b_conv_transpose2d, tg_conv_transpose2d(t, x[0], x[1], x[2], &stride2))
OC_BUILD(b_max_pool2d, tg_max_pool2d(t, x[0], OC_PTR(c, 0, &k2)))
OC_BUILD(b_max_pool1d, tg_max_pool1d(t, x[0], OC_PTR(c, 0, &k3s2p1)))
OC_BUILD(b_avg_pool2d, tg_avg_pool2d(t, x[0], OC_PTR(c, 0, &k3p1)))
OC_BUILD(b_avg_pool1d, tg_avg_pool1d(t, x[0], OC_PTR(c, 0, &k2)))
OC_BUILD(b_adaptive, tg_adaptive_avg_pool2d(t, x[0], 3, 3))
OC_BUILD(b_batch_norm_train, tg_batch_norm(t, x[0], NULL, NULL, x[1], x[2], &train))
OC_BUILD(b_batch_norm_eval, tg_batch_norm(t, x[0], x[1], x[2], NULL, NULL, &eval))
OC_BUILD(b_dropout2d, tg_dropout2d(t, x[0], 0.5, OC_PTR(c, 0, c->rng)))
OC_BUILD(b_nearest, tg_interpolate(t, x[0], OC_PTR(c, 0, &nearest)))
OC_BUILD(b_bilinear, tg_interpolate(t, x[0], OC_PTR(c, 0, &bilinear)))

OC_BUILD(b_conv2d_mixed, tg_conv2d(t, x[0], x[1], x[2], &mixed))
OC_BUILD(b_conv2d_same, tg_conv2d(t, x[0], x[1], NULL, &same))
OC_BUILD(b_conv2d_1x1, tg_conv2d(t, x[0], x[1], x[2], NULL))
OC_BUILD(b_conv1d_mixed, tg_conv1d(t, x[0], x[1], x[2], &mixed1d))
OC_BUILD(b_conv1d_same, tg_conv1d(t, x[0], x[1], NULL, &same1d))
OC_BUILD(b_conv_transpose2d_out_pad, tg_conv_transpose2d(t, x[0], x[1], x[2], &out_pad))
OC_BUILD(b_conv_transpose2d_grouped, tg_conv_transpose2d(t, x[0], x[1], x[2], &out_pad_grouped))
OC_BUILD(b_max_pool2d_ceil, tg_max_pool2d(t, x[0], OC_PTR(c, 0, &max_ceil)))
OC_BUILD(b_avg_pool2d_ceil, tg_avg_pool2d(t, x[0], OC_PTR(c, 0, &avg_ceil)))
OC_BUILD(b_avg_pool2d_ceil_pad, tg_avg_pool2d(t, x[0], OC_PTR(c, 0, &avg_ceil_pad)))
OC_BUILD(b_avg_pool1d_ceil, tg_avg_pool1d(t, x[0], OC_PTR(c, 0, &avg1_ceil)))
OC_BUILD(b_avg_pool1d_ceil_pad, tg_avg_pool1d(t, x[0], OC_PTR(c, 0, &avg1_ceil_pad)))
OC_BUILD(b_max_pool1d_dilated, tg_max_pool1d(t, x[0], OC_PTR(c, 0, &max1_dilated)))
OC_BUILD(b_adaptive_up, tg_adaptive_avg_pool2d(t, x[0], 9, 6))
OC_BUILD(b_batch_norm_running, tg_batch_norm(t, x[0], x[1], x[2], NULL, NULL, &train))
OC_BUILD(b_batch_norm_eval_affine, tg_batch_norm(t, x[0], x[1], x[2], x[3], NULL, &eval))
OC_BUILD(b_bilinear_scaled, tg_interpolate(t, x[0], OC_PTR(c, 0, &scaled)))
OC_BUILD(b_avg_pool2d_divisor, tg_avg_pool2d(t, x[0], OC_PTR(c, 0, &avg_div)))
OC_BUILD(b_adaptive_none, tg_adaptive_avg_pool2d(t, x[0], TG_SIZE_NONE, 3))

/* the values; the indices: tests/test_conv.c */
static tg_tensor *b_max_pool2d_indices(const oc_call *c)
{
    tg_tensor *ix;
    return tg_max_pool2d_with_indices(c->t, c->in[0], OC_PTR(c, 0, &max_pad), OC_PTR(c, 1, &ix));
}

static tg_tensor *b_max_pool1d_indices(const oc_call *c)
{
    tg_tensor *ix;
    return tg_max_pool1d_with_indices(c->t, c->in[0], OC_PTR(c, 0, &k3s2p1), OC_PTR(c, 1, &ix));
}

OC_BUILD(b_max_unpool2d, tg_max_unpool2d(t, x[0], x[1], OC_PTR(c, 0, &k2), NULL))

static const op_case rows[] = {
    {"tg_conv2d", b_conv2d, 3, 2, 0, {OC_IN(-1, 1, 1, 2, 3, 3), OC_IN(-1, 1, 2, 2, 2, 2), OC_IN(-1, 1, 2)}, OC_GROWS,
     ".nn..nn..........nn..nn.........", NULL},
    {"tg_conv2d", b_conv2d_grouped, 2, 2, 0, {OC_IN(-1, 1, 1, 4, 5, 5), OC_IN(-1, 1, 2, 2, 2, 2)}, OC_GROWS, "n.......",
     NULL},
    {"tg_conv1d", b_conv1d, 3, 2, 0, {OC_IN(-1, 1, 1, 2, 5), OC_IN(-1, 1, 3, 2, 3), OC_IN(-1, 1, 3)}, OC_GROWS,
     "nnn..nnn..nnn..", NULL},
    {"tg_conv_transpose2d", b_conv_transpose2d, 3, 2, 0,
     {OC_IN(-1, 1, 1, 2, 2, 3), OC_IN(-1, 1, 2, 2, 2, 2), OC_IN(-1, 1, 2)}, OC_GROWS,
     "..nn....nn................nn....nn..............", NULL},
    {"tg_max_pool2d", b_max_pool2d, 1, 1, 1, {OC_IN(-1, 1, 1, 2, 4, 4)}, OC_GROWS, "n.......", NULL},
    {"tg_max_pool1d", b_max_pool1d, 1, 1, 1, {OC_IN(-1, 1, 1, 2, 6)}, OC_GROWS, "nn....", NULL},
    {"tg_avg_pool2d", b_avg_pool2d, 1, 1, 1, {OC_IN(-1, 1, 1, 2, 4, 4)}, OC_GROWS, "nnn.nnn.........................",
     NULL},
    {"tg_avg_pool1d", b_avg_pool1d, 1, 1, 1, {OC_IN(-1, 1, 1, 2, 6)}, OC_GROWS, "n.....", NULL},
    {"tg_adaptive_avg_pool2d", b_adaptive, 1, 1, 0, {OC_IN(-1, 1, 1, 2, 5, 4)}, OC_GROWS, "nn................",
     NULL},
    {"tg_batch_norm", b_batch_norm_train, 3, 1, 0, {OC_IN(-1, 2, 4, 3), OC_IN(0.5, 1.5, 3), OC_IN(-1, 1, 3)}, 0,
     ".n..n..n..n.", NULL},
    /* evaluation: the running statistics, no grad */
    {"tg_batch_norm", b_batch_norm_eval, 3, 3, 0,
     {OC_IN(-1, 2, 2, 3, 2), OC_INK(OC_FIXED, -0.5, 0.5, 3), OC_INK(OC_FIXED, 0.5, 1.5, 3)}, OC_GROWS, OC_NAN_SAME,
     NULL},
    {"tg_dropout2d", b_dropout2d, 1, 1, 1, {OC_IN(-1, 1, 2, 3, 2, 2)}, OC_GROWS, OC_NAN_SAME, NULL},
    {"tg_interpolate", b_nearest, 1, 1, 1, {OC_IN(-1, 1, 1, 1, 3, 3)}, OC_GROWS, "..nn...nn...........", NULL},
    {"tg_interpolate", b_bilinear, 1, 1, 1, {OC_IN(-1, 1, 1, 2, 3, 3)}, OC_GROWS,
     "nnn.nnn.................................", NULL},
    /* stride, padding, dilation and groups together; no tap reads element 1 */
    {"tg_conv2d", b_conv2d_mixed, 3, 2, 0, {OC_IN(-1, 1, 1, 4, 7, 6), OC_IN(-1, 1, 2, 2, 3, 3), OC_IN(-1, 1, 2)},
     OC_GROWS, "................................................", NULL},
    {"tg_conv2d", b_conv2d_same, 2, 2, 0, {OC_IN(-1, 1, 1, 2, 5, 5), OC_IN(-1, 1, 2, 1, 2, 3)}, OC_GROWS,
     ".....nnn..........................................", NULL},
    /* a 1x1 kernel, stride 1, no padding: x is its own columns */
    {"tg_conv2d", b_conv2d_1x1, 3, 2, 0, {OC_IN(-1, 1, 1, 3, 2, 3), OC_IN(-1, 1, 4, 3, 1, 1), OC_IN(-1, 1, 4)},
     OC_GROWS, ".n.....n.....n.....n....", NULL},
    {"tg_conv1d", b_conv1d_mixed, 3, 2, 0, {OC_IN(-1, 1, 2, 4, 9), OC_IN(-1, 1, 6, 2, 3), OC_IN(-1, 1, 6)}, OC_GROWS,
     "nn..nn..nn......................................", NULL},
    {"tg_conv1d", b_conv1d_same, 2, 2, 0, {OC_IN(-1, 1, 1, 4, 6), OC_IN(-1, 1, 6, 2, 3)}, OC_GROWS,
     "nnn...nnn...nnn.....................", NULL},
    {"tg_conv_transpose2d", b_conv_transpose2d_out_pad, 3, 2, 0,
     {OC_IN(-1, 1, 1, 3, 4, 3), OC_IN(-1, 1, 3, 2, 3, 2), OC_IN(-1, 1, 2)}, OC_GROWS,
     ".nn..nn..........................nn..nn.........................", NULL},
    {"tg_conv_transpose2d", b_conv_transpose2d_grouped, 3, 2, 0,
     {OC_IN(-1, 1, 1, 4, 3, 4), OC_IN(-1, 1, 4, 1, 2, 3), OC_IN(-1, 1, 2)}, OC_GROWS,
     "..............nnn..................................................................................."
     "............................................",
     NULL},
    {"tg_max_pool2d", b_max_pool2d_ceil, 1, 1, 1, {OC_IN(-1, 1, 1, 2, 6, 7)}, OC_GROWS,
     "n.n.....................................................", NULL},
    {"tg_avg_pool2d", b_avg_pool2d_ceil, 1, 1, 1, {OC_IN(-1, 1, 1, 2, 6, 7)}, OC_GROWS,
     ".nn.............................................................", NULL},
    {"tg_avg_pool2d", b_avg_pool2d_ceil_pad, 1, 1, 1, {OC_IN(-1, 1, 1, 2, 6, 7)}, OC_GROWS,
     "nn..............................", NULL},
    {"tg_avg_pool1d", b_avg_pool1d_ceil, 1, 1, 1, {OC_IN(-1, 1, 2, 3, 10)}, OC_GROWS,
     "nn..................................", NULL},
    {"tg_avg_pool1d", b_avg_pool1d_ceil_pad, 1, 1, 1, {OC_IN(-1, 1, 2, 3, 10)}, OC_GROWS, "nn......................",
     NULL},
    {"tg_max_pool1d", b_max_pool1d_dilated, 1, 1, 1, {OC_IN(-1, 1, 2, 3, 10)}, OC_GROWS,
     "nn............................", NULL},
    /* larger than the input: overlapping windows */
    {"tg_adaptive_avg_pool2d", b_adaptive_up, 1, 1, 0, {OC_IN(-1, 1, 1, 2, 7, 5)}, OC_GROWS,
     ".nn....nn...................................................................................................",
     NULL},
    /* training with running statistics (moved in place; the output does not read them) */
    {"tg_batch_norm", b_batch_norm_running, 3, 3, 0,
     {OC_IN(-1, 2, 4, 3), OC_INK(OC_FIXED, -0.5, 0.5, 3), OC_INK(OC_FIXED, 0.5, 1.5, 3)}, 0, ".n..n..n..n.", NULL},
    {"tg_batch_norm", b_batch_norm_eval_affine, 4, 3, 0,
     {OC_IN(-1, 2, 2, 3, 2), OC_INK(OC_FIXED, -0.5, 0.5, 3), OC_INK(OC_FIXED, 0.5, 1.5, 3), OC_IN(0.5, 1.5, 3)},
     OC_GROWS, OC_NAN_SAME, NULL},
    {"tg_interpolate", b_bilinear_scaled, 1, 1, 1, {OC_IN(-1, 1, 1, 2, 4, 5)}, OC_GROWS, "n.n.....................",
     NULL},
    {"tg_avg_pool2d", b_avg_pool2d_divisor, 1, 1, 1, {OC_IN(-1, 1, 1, 2, 6, 7)}, OC_GROWS,
     "nn..............................", NULL},
    /* output_size (None, 3): H kept */
    {"tg_adaptive_avg_pool2d", b_adaptive_none, 1, 1, 0, {OC_IN(-1, 1, 1, 2, 5, 4)}, OC_GROWS,
     "nn............................", NULL},
    {"tg_max_pool2d_with_indices", b_max_pool2d_indices, 1, 1, 2, {OC_IN(-1, 1, 1, 2, 4, 5)}, OC_GROWS,
     ".n................", NULL},
    {"tg_max_pool1d_with_indices", b_max_pool1d_indices, 1, 1, 2, {OC_IN(-1, 1, 1, 2, 7)}, OC_GROWS, "nn......", NULL},
    /* indices 0, 1, ... in each 4 x 4 output plane: distinct, so every input lands */
    {"tg_max_unpool2d", b_max_unpool2d, 2, 2, 1, {OC_IN(-1, 1, 1, 2, 2, 2), OC_INK(OC_CLASS, 0, 16, 1, 2, 2, 2)},
     OC_GROWS, ".n..............................", NULL},
};

const oc_family oc_conv = {"conv", rows, sizeof rows / sizeof rows[0]};
