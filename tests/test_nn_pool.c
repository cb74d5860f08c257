/* The layers without parameters over the pooling, resizing and channel
 * dropout ops (nn/pool.h, nn/upsample.h, nn/dropout.h): each forward gives its op's bits, a gradcheck
 * through the layer (the precision's tolerances), the training / evaluation
 * switch of Dropout2d, and refusals naming the layer. The ops themselves:
 * tests/test_conv.c and their op-case rows. */
#include <string.h>

#include <tapegrad/nn/nn.h>
#include "ops_util.h"

TU_SUITE(nn_pool, 41);

static const tg_pool_opts MAX_OPTS = {{3, 2}, {2, 0}, {1, 1}, {2, 1}, true, true, 0};
static const tg_pool_opts AVG_OPTS = {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false, 0};

/* layer.forward(x) and the op on the same x: the same bits */
static void assert_same_bits(const tg_tensor *a, const tg_tensor *b)
{
    cr_assert(a && b && tg_shape_equal(a, b), "%s", tg_tape_error(T));
    cr_assert(memcmp(a->data, b->data, a->size * sizeof(tg_real)) == 0, "the layer and its op differ");
}

static tg_tensor *max_fn(tg_tape *t, tg_tensor **in, void *l) { return tg_max_pool2d_forward(t, l, in[0]); }
static tg_tensor *avg_fn(tg_tape *t, tg_tensor **in, void *l) { return tg_avg_pool2d_forward(t, l, in[0]); }
static tg_tensor *adaptive_fn(tg_tape *t, tg_tensor **in, void *l)
{
    return tg_adaptive_avg_pool2d_forward(t, l, in[0]);
}

/* values a permutation of a grid 0.01 apart: no near-ties for max pooling's gradcheck */
static tg_tensor *spread(int ndim, const int *shape)
{
    tg_tensor *x = tu_rand(&R, 0, 1, ndim, shape);
    for (size_t i = 0; i < x->size; i++) x->data[i] = (tg_real)(0.01 * (double)((i * 37) % x->size) - 0.3);
    return x;
}

Test(nn_pool, max_pool2d_layer_is_its_op)
{
    tg_max_pool2d_layer l;
    cr_assert_eq(tg_max_pool2d_init(&l, "features.2", &MAX_OPTS), 0, "%s", tg_error());
    tg_tensor *x = spread(4, (int[]){2, 3, 7, 6});
    assert_same_bits(tg_max_pool2d_forward(T, &l, x), tg_max_pool2d(T, x, &MAX_OPTS));
    tg_tensor *x3 = spread(3, (int[]){3, 7, 6});  /* unbatched */
    assert_same_bits(tg_max_pool2d_forward(T, &l, x3), tg_max_pool2d(T, x3, &MAX_OPTS));
    tu_gradcheck(max_fn, &l, &x, 1);
    tu_gradcheck(max_fn, &l, &x3, 1);
    tg_tensor_free(x), tg_tensor_free(x3);
}

Test(nn_pool, avg_pool2d_layer_is_its_op)
{
    tg_avg_pool2d_layer l;
    cr_assert_eq(tg_avg_pool2d_init(&l, "pool", &AVG_OPTS), 0, "%s", tg_error());
    tg_tensor *x = tu_rand(&R, -1, 1, 4, (int[]){2, 3, 7, 6});
    assert_same_bits(tg_avg_pool2d_forward(T, &l, x), tg_avg_pool2d(T, x, &AVG_OPTS));
    tu_gradcheck(avg_fn, &l, &x, 1);
    /* PyTorch's defaults: stride = kernel, count_include_pad */
    cr_assert_eq(tg_avg_pool2d_init(&l, "pool", &(tg_pool_opts)TG_POOL_OPTS_DEFAULT(2, 3)), 0, "%s", tg_error());
    tg_tensor *y = tg_avg_pool2d_forward(T, &l, x);
    cr_assert(y && y->shape[2] == 3 && y->shape[3] == 2, "%s", tg_tape_error(T));
    tu_close(y->data[0], (x->data[0] + x->data[1] + x->data[2] + x->data[6] + x->data[7] + x->data[8]) / 6, TU_TOL);
    tu_gradcheck(avg_fn, &l, &x, 1);
    tg_tensor_free(x);
}

Test(nn_pool, adaptive_avg_pool2d_layer_is_its_op)
{
    tg_adaptive_avg_pool2d_layer l;
    cr_assert_eq(tg_adaptive_avg_pool2d_init(&l, "avgpool", 3, 2), 0, "%s", tg_error());
    tg_tensor *x = tu_rand(&R, -1, 1, 4, (int[]){2, 3, 7, 5});
    assert_same_bits(tg_adaptive_avg_pool2d_forward(T, &l, x), tg_adaptive_avg_pool2d(T, x, 3, 2));
    tu_gradcheck(adaptive_fn, &l, &x, 1);
    tg_tensor_free(x);
}

static tg_tensor *max1_fn(tg_tape *t, tg_tensor **in, void *l) { return tg_max_pool1d_forward(t, l, in[0]); }
static tg_tensor *avg1_fn(tg_tape *t, tg_tensor **in, void *l) { return tg_avg_pool1d_forward(t, l, in[0]); }
static tg_tensor *upsample_fn(tg_tape *t, tg_tensor **in, void *l) { return tg_upsample_forward(t, l, in[0]); }

Test(nn_pool, avg_pool2d_layer_divisor_override)
{
    tg_avg_pool2d_layer l;
    tg_pool_opts o = AVG_OPTS;
    o.divisor_override = 4;
    cr_assert_eq(tg_avg_pool2d_init(&l, "pool", &o), 0, "%s", tg_error());
    tg_tensor *x = tu_rand(&R, -1, 1, 4, (int[]){1, 2, 5, 6});
    tg_tensor *y = tg_avg_pool2d_forward(T, &l, x);
    assert_same_bits(y, tg_avg_pool2d(T, x, &o));
    tu_close(y->data[0], (x->data[0] + x->data[1] + x->data[6] + x->data[7]) / 4, TU_TOL);  /* a corner: 4 taps of 9 */
    tu_gradcheck(avg_fn, &l, &x, 1);
    tg_tensor_free(x);
}

Test(nn_pool, adaptive_avg_pool2d_layer_keeps_a_none_dim)
{
    tg_adaptive_avg_pool2d_layer l;
    cr_assert_eq(tg_adaptive_avg_pool2d_init(&l, "avgpool", TG_SIZE_NONE, 2), 0, "%s", tg_error());
    tg_tensor *x = tu_rand(&R, -1, 1, 3, (int[]){3, 7, 5});
    tg_tensor *y = tg_adaptive_avg_pool2d_forward(T, &l, x);
    cr_assert(y && y->shape[1] == 7 && y->shape[2] == 2, "%s", tg_tape_error(T));
    assert_same_bits(y, tg_adaptive_avg_pool2d(T, x, 7, 2));
    tu_gradcheck(adaptive_fn, &l, &x, 1);
    tg_tensor_free(x);
}

Test(nn_pool, pool1d_layers_are_their_ops)
{
    tg_pool_opts mo = {{3, 0}, {2, 0}, {1, 0}, {2, 0}, true, true, 0}, ao = {{4, 0}, {3, 0}, {2, 0}, {1, 0}, true, false, 0};
    tg_max_pool1d_layer m;
    tg_avg_pool1d_layer a;
    cr_assert_eq(tg_max_pool1d_init(&m, "pool1", &mo), 0, "%s", tg_error());
    cr_assert_eq(tg_avg_pool1d_init(&a, "pool2", &ao), 0, "%s", tg_error());
    tg_tensor *x = spread(3, (int[]){2, 3, 11}), *x2 = spread(2, (int[]){3, 11});  /* batched and not */
    assert_same_bits(tg_max_pool1d_forward(T, &m, x), tg_max_pool1d(T, x, &mo));
    assert_same_bits(tg_max_pool1d_forward(T, &m, x2), tg_max_pool1d(T, x2, &mo));
    assert_same_bits(tg_avg_pool1d_forward(T, &a, x), tg_avg_pool1d(T, x, &ao));
    tu_gradcheck(max1_fn, &m, &x, 1);
    tu_gradcheck(avg1_fn, &a, &x2, 1);
    tg_tensor_free(x), tg_tensor_free(x2);
}

Test(nn_pool, upsample_layer_is_interpolate)
{
    tg_interp_opts modes[3] = {{{0, 0}, {2, 1.5}, TG_INTERP_NEAREST, false},
                               {{7, 0}, {0, 0.5}, TG_INTERP_BILINEAR, false},
                               {{5, 9}, {0, 0}, TG_INTERP_BILINEAR, true}};
    tg_tensor *x = tu_rand(&R, -1, 1, 4, (int[]){2, 3, 4, 6});
    for (int k = 0; k < 3; k++) {
        tg_upsample_layer l;
        cr_assert_eq(tg_upsample_init(&l, "up", &modes[k]), 0, "%s", tg_error());
        assert_same_bits(tg_upsample_forward(T, &l, x), tg_interpolate(T, x, &modes[k]));
        tu_gradcheck(upsample_fn, &l, &x, 1);
    }
    tg_tensor_free(x);
}

typedef struct drop_ctx {
    const tg_dropout2d_layer *l;
    uint64_t seed;
} drop_ctx;

static tg_tensor *dropout_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    const drop_ctx *c = ctx;
    tg_rng rng;  /* the same mask on every call */
    tg_rng_seed(&rng, c->seed);
    return tg_dropout2d_forward(t, c->l, in[0], &rng);
}

Test(nn_pool, dropout2d_layer_trains_and_evaluates)
{
    tg_dropout2d_layer l;
    cr_assert_eq(tg_dropout2d_init(&l, "drop", 0.4), 0, "%s", tg_error());
    tg_tensor *x = tu_rand(&R, 0.5, 1.5, 4, (int[]){4, 5, 2, 3});
    tg_rng a, b;
    tg_rng_seed(&a, 7), tg_rng_seed(&b, 7);
    assert_same_bits(tg_dropout2d_forward(T, &l, x, &a), tg_dropout2d(T, x, 0.4, &b));
    tg_rng_seed(&a, 8);
    tg_tensor *y = tg_dropout2d_forward(T, &l, x, &a);
    cr_assert_not_null(y, "%s", tg_tape_error(T));
    int dropped = 0;
    for (int nc = 0; nc < 20; nc++) {  /* each channel zeroed whole or kept times 1 / 0.6 */
        bool zero = y->data[nc * 6] == 0;
        dropped += zero;
        for (int i = 0; i < 6; i++)
            if (zero) cr_assert(y->data[nc * 6 + i] == 0);
            else tu_close(y->data[nc * 6 + i], x->data[nc * 6 + i] / 0.6, TU_TOL);
    }
    cr_assert(dropped > 0 && dropped < 20, "%d of 20 channels dropped", dropped);
    tu_gradcheck(dropout_fn, (&(drop_ctx){&l, 9}), &x, 1);
    tg_tape_set_training(T, false);  /* evaluation: x itself, no rng needed */
    cr_assert_eq(tg_dropout2d_forward(T, &l, x, NULL), x);
    tg_tape_set_training(T, true);
    cr_assert_eq(tg_dropout2d_init(&l, "drop", 0), 0);
    cr_assert_eq(tg_dropout2d_forward(T, &l, x, NULL), x, "p = 0 needs no rng");
    tg_tensor_free(x);
}

Test(nn_pool, refusals_name_the_layer)
{
    tg_max_pool2d_layer mp;
    tg_pool_opts o = TG_POOL_OPTS_DEFAULT(3, 3);
    o.padding[1] = 2;
    cr_assert_eq(tg_max_pool2d_init(&mp, "pool1", &o), -1);
    tu_assert_has(tg_error(), "tg_max_pool2d 'pool1'");
    tu_assert_has(tg_error(), "padding [0,2]");
    tg_tensor *x = tg_tensor_zeros(T, 4, (int[]){1, 2, 6, 6});
    assert_fails(T, tg_max_pool2d_forward(T, &mp, x), "tg_max_pool2d_forward", "not initialised");
    o = (tg_pool_opts)TG_POOL_OPTS_DEFAULT(0, 2);
    cr_assert_eq(tg_max_pool2d_init(&mp, "pool1", &o), -1);
    tu_assert_has(tg_error(), "kernel [0,2]");
    o = (tg_pool_opts)TG_POOL_OPTS_DEFAULT(2, 2);
    o.stride[0] = -1;
    cr_assert_eq(tg_max_pool2d_init(&mp, "pool1", &o), -1);
    tu_assert_has(tg_error(), "stride [-1,0]");
    o = (tg_pool_opts)TG_POOL_OPTS_DEFAULT(2, 2);
    o.dilation[1] = 0;
    cr_assert_eq(tg_max_pool2d_init(&mp, "pool1", &o), -1);
    tu_assert_has(tg_error(), "dilation [1,0]");
    cr_assert_eq(tg_max_pool2d_init(&mp, "pool1", &(tg_pool_opts)TG_POOL_OPTS_DEFAULT(2, 2)), 0);
    assert_fails(T, tg_max_pool2d_forward(T, &mp, tg_tensor_zeros(T, 2, (int[]){6, 6})), "tg_max_pool2d 'pool1'",
                 "input [6,6]", "[N, C, H, W] or [C, H, W]");
    assert_fails(T, tg_max_pool2d_forward(T, &mp, tg_tensor_zeros(T, 4, (int[]){1, 1, 1, 1})), "tg_max_pool2d",
                 "too small");

    tg_avg_pool2d_layer ap;
    o = (tg_pool_opts)TG_POOL_OPTS_DEFAULT(2, 2);
    o.dilation[0] = 2;
    cr_assert_eq(tg_avg_pool2d_init(&ap, "pool2", &o), -1);
    tu_assert_has(tg_error(), "tg_avg_pool2d 'pool2'");
    tu_assert_has(tg_error(), "average pooling has none");
    assert_fails(T, tg_avg_pool2d_forward(T, &ap, x), "tg_avg_pool2d_forward", "not initialised");
    cr_assert_eq(tg_avg_pool2d_init(&ap, "pool2", &(tg_pool_opts)TG_POOL_OPTS_DEFAULT(2, 2)), 0);
    assert_fails(T, tg_avg_pool2d_forward(T, &ap, tg_tensor_zeros(T, 5, (int[]){1, 1, 2, 2, 2})),
                 "tg_avg_pool2d 'pool2'", "input [1,1,2,2,2]");

    tg_adaptive_avg_pool2d_layer aa;
    cr_assert_eq(tg_adaptive_avg_pool2d_init(&aa, "gap", 0, 1), -1);
    tu_assert_has(tg_error(), "tg_adaptive_avg_pool2d 'gap': output_size 0x1");
    assert_fails(T, tg_adaptive_avg_pool2d_forward(T, &aa, x), "tg_adaptive_avg_pool2d_forward", "not initialised");
    cr_assert_eq(tg_adaptive_avg_pool2d_init(&aa, "gap", 1, 1), 0);
    assert_fails(T, tg_adaptive_avg_pool2d_forward(T, &aa, tg_tensor_zeros(T, 1, (int[]){4})),
                 "tg_adaptive_avg_pool2d 'gap'", "input [4]");

    o = (tg_pool_opts)TG_POOL_OPTS_DEFAULT(2, 2);
    o.divisor_override = -3;
    cr_assert_eq(tg_avg_pool2d_init(&ap, "pool2", &o), -1);
    tu_assert_has(tg_error(), "divisor_override -3");
    o.divisor_override = 3;
    cr_assert_eq(tg_max_pool2d_init(&mp, "pool1", &o), -1);
    tu_assert_has(tg_error(), "tg_max_pool2d 'pool1': divisor_override 3");
    cr_assert_eq(tg_adaptive_avg_pool2d_init(&aa, "gap", 2, -2), -1);
    tu_assert_has(tg_error(), "output_size 2x-2");

    tg_max_pool1d_layer m1;
    tg_avg_pool1d_layer a1;
    o = (tg_pool_opts)TG_POOL_OPTS_DEFAULT(3, 0);  /* 1-D: index [1] unread */
    o.padding[0] = 2;
    cr_assert_eq(tg_max_pool1d_init(&m1, "p1", &o), -1);
    tu_assert_has(tg_error(), "tg_max_pool1d 'p1'");
    assert_fails(T, tg_max_pool1d_forward(T, &m1, x), "tg_max_pool1d_forward", "not initialised");
    o.padding[0] = 1, o.divisor_override = 2;
    cr_assert_eq(tg_avg_pool1d_init(&a1, "p2", &o), -1);
    tu_assert_has(tg_error(), "tg_avg_pool1d 'p2': divisor_override 2");
    assert_fails(T, tg_avg_pool1d_forward(T, &a1, x), "tg_avg_pool1d_forward", "not initialised");
    o.divisor_override = 0;
    cr_assert_eq(tg_avg_pool1d_init(&a1, "p2", &o), 0, "%s", tg_error());
    assert_fails(T, tg_avg_pool1d_forward(T, &a1, x), "tg_avg_pool1d 'p2'", "input [1,2,6,6]", "[N, C, L] or [C, L]");

    tg_upsample_layer up;
    tg_interp_opts io = {{4, 0}, {0, 2}, TG_INTERP_NEAREST, true};
    cr_assert_eq(tg_upsample_init(&up, "up1", &io), -1);
    tu_assert_has(tg_error(), "tg_upsample 'up1'");
    tu_assert_has(tg_error(), "align_corners");
    io.align_corners = false, io.scale[0] = 2;
    cr_assert_eq(tg_upsample_init(&up, "up1", &io), -1);
    tu_assert_has(tg_error(), "dim 0 needs a size > 0 or a finite scale_factor > 0, exactly one");
    io.size[0] = 0, io.scale[1] = -1;
    cr_assert_eq(tg_upsample_init(&up, "up1", &io), -1);
    tu_assert_has(tg_error(), "scale -1");
    io.scale[1] = INFINITY;
    cr_assert_eq(tg_upsample_init(&up, "up1", &io), -1);
    io.scale[1] = 2, io.mode = (tg_interp_mode)5;
    cr_assert_eq(tg_upsample_init(&up, "up1", &io), -1);
    tu_assert_has(tg_error(), "mode 5");
    assert_fails(T, tg_upsample_forward(T, &up, x), "tg_upsample_forward", "not initialised");
    io.mode = TG_INTERP_BILINEAR;
    cr_assert_eq(tg_upsample_init(&up, "up1", &io), 0, "%s", tg_error());
    assert_fails(T, tg_upsample_forward(T, &up, tg_tensor_zeros(T, 3, (int[]){2, 6, 6})), "tg_upsample 'up1'",
                 "input [2,6,6]", "[N, C, H, W]");

    tg_dropout2d_layer d;
    cr_assert_eq(tg_dropout2d_init(&d, "drop", 1), -1);
    tu_assert_has(tg_error(), "tg_dropout2d 'drop': p 1 must be in [0, 1)");
    cr_assert_eq(tg_dropout2d_init(&d, "drop", NAN), -1);
    assert_fails(T, tg_dropout2d_forward(T, &d, x, &R), "tg_dropout2d_forward", "not initialised");
    cr_assert_eq(tg_dropout2d_init(&d, "drop", 0.5), 0);
    assert_fails(T, tg_dropout2d_forward(T, &d, tg_tensor_zeros(T, 3, (int[]){2, 6, 6}), &R), "tg_dropout2d 'drop'",
                 "[2,6,6]", "[N, C, L]");
    assert_fails(T, tg_dropout2d_forward(T, &d, x, NULL), "tg_dropout2d", "rng is NULL");
}
