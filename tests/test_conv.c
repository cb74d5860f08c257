/* convolution, pooling, batch norm, channel dropout and resizing
 * (core/ops/nn/): PyTorch's outputs and grads (tests/fixtures/conv.safetensors,
 * bench/torch/make_conv_fixtures.py; max pooling's indices too), values by
 * hand, refusals, the nn.Conv2d, nn.Conv1d, nn.ConvTranspose2d and
 * nn.BatchNorm2d layers, and out of memory. Gradchecks, NaN,
 * NULL and the same bits on 1 and 2 threads: the op-case rows
 * (tests/op_cases_conv.c). */
#include <string.h>

#include "fixture_util.h"
#include "ops_util.h"

/* ---- the fixture cases ---------------------------------------------------- */

typedef struct conv_case {
    const tg_safetensors *s;
    char name[64];
} conv_case;

static const tg_tensor *case_get(const conv_case *c, const char *what)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", c->name, what);
    return tg_st_get(c->s, key);
}

static int case_int(const conv_case *c, const char *what, int dflt)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", c->name, what);
    const char *v = tg_st_meta(c->s, key);
    return v ? atoi(v) : dflt;
}

static double case_real(const conv_case *c, const char *what)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", c->name, what);
    const char *v = tg_st_meta(c->s, key);
    cr_assert_not_null(v, "%s: no '%s'", c->name, what);
    return strtod(v, NULL);
}

/* "h,w" (or "l") parameter into v[2]; v unchanged when absent */
static void case_pair(const conv_case *c, const char *what, int *v)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", c->name, what);
    const char *s = tg_st_meta(c->s, key);
    if (!s) return;
    char *end;
    v[0] = (int)strtol(s, &end, 10);
    if (*end == ',') v[1] = (int)strtol(end + 1, NULL, 10);
}

/* an input of the case on t, differentiable iff the fixture has its grad */
static tg_tensor *case_in(tg_tape *t, const conv_case *c, const char *what)
{
    const tg_tensor *x = case_get(c, what);
    if (!x) return NULL;
    tg_tensor *y = tg_tensor_from(t, x->data, x->ndim, x->shape);
    cr_assert_not_null(y);
    char g[64];
    snprintf(g, sizeof g, "grad.%s", what);
    y->requires_grad = case_get(c, g) != NULL;
    return y;
}

static tg_conv_opts case_conv_opts(const conv_case *c)
{
    tg_conv_opts o = TG_CONV_OPTS_DEFAULT;
    case_pair(c, "stride", o.stride);
    case_pair(c, "padding", o.padding);
    case_pair(c, "dilation", o.dilation);
    o.groups = case_int(c, "groups", 1);
    o.same = case_int(c, "same", 0) != 0;
    case_pair(c, "output_padding", o.output_padding);
    return o;
}

static tg_pool_opts case_pool_opts(const conv_case *c)
{
    tg_pool_opts o = TG_POOL_OPTS_DEFAULT(0, 0);
    case_pair(c, "kernel", o.kernel);
    case_pair(c, "stride", o.stride);
    case_pair(c, "padding", o.padding);
    case_pair(c, "dilation", o.dilation);
    o.ceil_mode = case_int(c, "ceil_mode", 0) != 0;
    o.count_include_pad = case_int(c, "count_include_pad", 1) != 0;
    o.divisor_override = case_int(c, "divisor_override", 0);
    return o;
}

/* ix (int64) holds PyTorch's indices of the case (kept as floats) */
static void assert_indices(const conv_case *c, const tg_tensor *ix)
{
    const tg_tensor *want = case_get(c, "indices");
    cr_assert(ix && want && ix->dtype == TG_I64 && ix->size == want->size, "%s: indices", c->name);
    const int64_t *v = tg_data(ix, TG_I64);
    for (size_t i = 0; i < ix->size; i++)
        cr_assert_eq(v[i], (int64_t)want->data[i], "%s: indices[%zu] = %lld, PyTorch %g", c->name, i, (long long)v[i],
                     (double)want->data[i]);
}

/* op: make_conv_fixtures.py's OPS index */
static tg_tensor *case_run(tg_tape *t, const conv_case *c, tg_tensor **in)
{
    tg_tensor *ix = NULL, *y;
    in[0] = case_in(t, c, "x");
    tg_conv_opts co = case_conv_opts(c);
    tg_pool_opts po = case_pool_opts(c);
    switch (case_int(c, "op", -1)) {
    case 0:
        in[1] = case_in(t, c, "weight"), in[2] = case_in(t, c, "bias");
        return tg_conv2d(t, in[0], in[1], in[2], &co);
    case 1: return tg_max_pool2d(t, in[0], &po);
    case 2:
        in[1] = case_in(t, c, "weight"), in[2] = case_in(t, c, "bias");
        return tg_conv1d(t, in[0], in[1], in[2], &co);
    case 3: return tg_max_pool1d(t, in[0], &po);
    case 4: return tg_avg_pool2d(t, in[0], &po);
    case 5: return tg_avg_pool1d(t, in[0], &po);
    case 6: {
        int size[2] = {0, 0};
        case_pair(c, "size", size);
        return tg_adaptive_avg_pool2d(t, in[0], size[0], size[1]);
    }
    case 7:
        in[1] = case_in(t, c, "weight"), in[2] = case_in(t, c, "bias");
        return tg_conv_transpose2d(t, in[0], in[1], in[2], &co);
    case 8: {
        tg_interp_opts io = {{0, 0}, {case_real(c, "scale_h"), case_real(c, "scale_w")},
                             case_int(c, "bilinear", 0) ? TG_INTERP_BILINEAR : TG_INTERP_NEAREST,
                             case_int(c, "align_corners", 0) != 0};
        case_pair(c, "size", io.size);
        return tg_interpolate(t, in[0], &io);
    }
    case 9: {
        in[1] = case_in(t, c, "weight"), in[2] = case_in(t, c, "bias");
        in[3] = case_in(t, c, "running_mean"), in[4] = case_in(t, c, "running_var");
        tg_bn_opts bo = {case_int(c, "training", -1) == 1, case_real(c, "momentum"), case_real(c, "eps")};
        return tg_batch_norm(t, in[0], in[3], in[4], in[1], in[2], &bo);
    }
    case 10:
    case 12:
        y = case_int(c, "op", -1) == 10 ? tg_max_pool2d_with_indices(t, in[0], &po, &ix)
                                         : tg_max_pool1d_with_indices(t, in[0], &po, &ix);
        if (y) assert_indices(c, ix);
        return y;
    case 11: {
        int size[2] = {0, 0};
        case_pair(c, "size", size);
        y = tg_max_pool2d_with_indices(t, in[0], &po, &ix);
        return tg_max_unpool2d(t, y, ix, &po, size[0] ? size : NULL);
    }
    default: cr_assert_fail("%s: unknown op %d", c->name, case_int(c, "op", -1)); return NULL;
    }
}

static void check_case(const conv_case *c)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *in[5] = {0};
    tg_tensor *out = case_run(t, c, in);
    cr_assert_not_null(out, "%s: %s", c->name, tg_tape_error(t));
    const tg_tensor *want = case_get(c, "out");
    char s1[TG_SHAPE_STR], s2[TG_SHAPE_STR], what[96];
    cr_assert(tg_shape_equal(out, want), "%s: output %s, PyTorch %s", c->name, tg_shape_str(out, s1),
              tg_shape_str(want, s2));
    snprintf(what, sizeof what, "%s.out", c->name);
    assert_matches(out->data, out->size, want, what);
    cr_assert_eq(tg_backward_seed(t, out, case_get(c, "w")->data), 0, "%s: %s", c->name, tg_tape_error(t));
    static const char *names[] = {"x", "weight", "bias"};
    for (int i = 0; i < 3; i++) {
        char g[32];
        snprintf(g, sizeof g, "grad.%s", names[i]);
        const tg_tensor *gw = case_get(c, g);
        if (!gw) continue;
        cr_assert(in[i] && in[i]->grad, "%s: no %s", c->name, g);
        snprintf(what, sizeof what, "%s.%s", c->name, g);
        assert_matches(in[i]->grad, in[i]->size, gw, what);
    }
    static const char *after[] = {"running_mean_after", "running_var_after"};
    for (int i = 0; i < 2; i++) {  /* batch_norm's running statistics, moved in place */
        const tg_tensor *want_after = case_get(c, after[i]);
        if (!want_after) continue;
        snprintf(what, sizeof what, "%s.%s", c->name, after[i]);
        assert_matches(in[3 + i]->data, in[3 + i]->size, want_after, what);
    }
    tg_tape_free(t);
}

/* every case of the file whose name starts with prefix; how many */
static int check_cases(const char *prefix)
{
    tg_safetensors *s = load_fixture("conv.safetensors");
    const char *cases = tg_st_meta(s, "cases");
    cr_assert_not_null(cases);
    char *list = strdup(cases);
    int n = 0;
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        if (strncmp(name, prefix, strlen(prefix)) != 0 || name[strlen(prefix)] != '_') continue;
        conv_case c = {s, ""};
        snprintf(c.name, sizeof c.name, "%s", name);
        check_case(&c);
        n++;
    }
    free(list);
    tg_st_free(s);
    return n;
}

Test(conv, conv2d_matches_pytorch) { cr_assert_geq(check_cases("conv2d"), 15); }
Test(conv, max_pool2d_matches_pytorch) { cr_assert_geq(check_cases("max_pool2d"), 7); }
Test(conv, conv1d_matches_pytorch) { cr_assert_geq(check_cases("conv1d"), 6); }
Test(conv, conv_transpose2d_matches_pytorch) { cr_assert_geq(check_cases("conv_transpose2d"), 6); }
Test(conv, max_pool1d_matches_pytorch) { cr_assert_geq(check_cases("max_pool1d"), 3); }
Test(conv, avg_pool2d_matches_pytorch) { cr_assert_geq(check_cases("avg_pool2d"), 5); }
Test(conv, avg_pool1d_matches_pytorch) { cr_assert_geq(check_cases("avg_pool1d"), 3); }
Test(conv, adaptive_avg_pool2d_matches_pytorch) { cr_assert_geq(check_cases("adaptive_avg_pool2d"), 4); }
Test(conv, interpolate_matches_pytorch) { cr_assert_geq(check_cases("interpolate"), 8); }
Test(conv, batch_norm_matches_pytorch) { cr_assert_geq(check_cases("batch_norm"), 5); }
Test(conv, avg_pool2d_divisor_override_matches_pytorch) { cr_assert_geq(check_cases("avg_pool2d_div"), 3); }
Test(conv, adaptive_avg_pool2d_none_matches_pytorch) { cr_assert_geq(check_cases("adaptive_avg_pool2d_none"), 3); }
Test(conv, max_pool2d_indices_match_pytorch) { cr_assert_geq(check_cases("max_pool2d_indices"), 3); }
Test(conv, max_pool1d_indices_match_pytorch) { cr_assert_geq(check_cases("max_pool1d_indices"), 2); }
Test(conv, max_unpool2d_matches_pytorch) { cr_assert_geq(check_cases("max_unpool2d"), 4); }

/* ---- values by hand ------------------------------------------------------ */

Test(conv, dropout2d_drops_whole_channels)
{
    tg_rng rng;
    tg_rng_seed(&rng, 19);
    tg_tensor *x = tu_rand(&rng, 0.5, 1.5, 4, (int[]){20, 10, 3, 4});
    tg_tape *t = tg_tape_new();
    tg_tensor *y = tg_dropout2d(t, x, 0.3, &rng);
    cr_assert_not_null(y, "%s", tg_tape_error(t));
    int dropped = 0;
    for (int c = 0; c < 200; c++) {
        bool zero = y->data[c * 12] == 0;
        dropped += zero;
        for (int i = 0; i < 12; i++) {
            tg_real want = zero ? 0 : x->data[c * 12 + i] * (tg_real)(1 / 0.7);
            cr_assert(y->data[c * 12 + i] == want, "channel %d: %g, want %g", c, (double)y->data[c * 12 + i], (double)want);
        }
    }
    cr_assert(dropped > 40 && dropped < 80, "%d of 200 channels dropped at p = 0.3", dropped);
    tg_tensor *ones = tg_tensor_zeros(t, 4, (int[]){20, 10, 3, 4});
    for (size_t i = 0; i < ones->size; i++) ones->data[i] = 1;
    cr_assert_eq(tg_backward_seed(t, y, ones->data), 0);
    for (size_t i = 0; i < x->size; i++)
        cr_assert(x->grad[i] == (y->data[i / 12 * 12] == 0 ? 0 : (tg_real)(1 / 0.7)), "grad[%zu]", i);
    tg_tape_set_training(t, false);
    cr_assert(tg_dropout2d(t, x, 0.3, NULL) == x, "evaluation: x itself");
    tg_tape_set_training(t, true);
    cr_assert(tg_dropout2d(t, x, 0, NULL) == x, "p = 0: x itself");
    assert_fails(t, tg_dropout2d(t, x, 1, &rng), "tg_dropout2d", "p must be in [0, 1)");
    assert_fails(t, tg_dropout2d(t, x, 0.5, NULL), "tg_dropout2d", "rng is NULL");
    assert_fails(t, tg_dropout2d(t, tg_tensor_zeros(t, 3, (int[]){2, 3, 4}), 0.5, &rng), "tg_dropout2d",
                 "[2,3,4]", "[N, C, H, W]");
    tg_tape_free(t);
    tg_tensor_free(x);
}

Test(conv, max_pool2d_ties_and_nan_route_as_pytorch)
{
    tg_tape *t = tg_tape_new();
    /* one 2x2 window per row pair: [1 3; 3 2] -> the first 3; [NaN 5; 1 NaN] -> NaN */
    tg_tensor *x = mk(t, 4, (int[]){1, 1, 2, 4}, (tg_real[]){1, 3, NAN, 5, 3, 2, 1, NAN});
    x->requires_grad = true;
    tg_pool_opts o = TG_POOL_OPTS_DEFAULT(2, 2);
    tg_tensor *y = tg_max_pool2d(t, x, &o);
    cr_assert_not_null(y, "%s", tg_tape_error(t));
    cr_assert(y->data[0] == 3 && isnan(y->data[1]));
    cr_assert_eq(tg_backward_seed(t, y, (tg_real[]){10, 20}), 0);
    tg_real want[8] = {0, 10, 0, 0, 0, 0, 0, 20};  /* PyTorch: a later NaN takes over */
    for (int i = 0; i < 8; i++) cr_assert(x->grad[i] == want[i], "grad[%d] = %g, want %g", i, (double)x->grad[i], (double)want[i]);
    tg_tape_free(t);
}

/* ---- refusals -------------------------------------------------------------- */

Test(conv, conv2d_rejects_bad_arguments)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 4, (int[]){2, 4, 5, 5}), *w = tg_tensor_zeros(t, 4, (int[]){6, 2, 3, 3});
    tg_tensor *b6 = tg_tensor_zeros(t, 1, (int[]){6}), *b5 = tg_tensor_zeros(t, 1, (int[]){5});
    tg_tensor *x2 = tg_tensor_zeros(t, 2, (int[]){4, 5}), *w3 = tg_tensor_zeros(t, 3, (int[]){6, 2, 3});
    tg_conv_opts o = TG_CONV_OPTS_DEFAULT;
    assert_fails(t, tg_conv2d(t, x, w, b6, &o), "tg_conv2d", "[2,4,5,5]", "[6,2,3,3]", "groups 1");
    o.groups = 2;
    cr_assert_not_null(tg_conv2d(t, x, w, b6, &o), "%s", tg_tape_error(t));
    assert_fails(t, tg_conv2d(t, x, w, b5, &o), "tg_conv2d", "bias [5]", "[6]");
    assert_fails(t, tg_conv2d(t, x2, w, NULL, &o), "tg_conv2d", "input [4,5]", "[N, C, H, W]");
    assert_fails(t, tg_conv2d(t, x, w3, NULL, &o), "tg_conv2d", "weight [6,2,3]");
    o.groups = 4;
    assert_fails(t, tg_conv2d(t, x, w, NULL, &o), "tg_conv2d", "groups 4");
    o.groups = 0;
    assert_fails(t, tg_conv2d(t, x, w, NULL, &o), "tg_conv2d", "groups 0");
    o = (tg_conv_opts)TG_CONV_OPTS_DEFAULT;
    o.groups = 2, o.stride[1] = 0;
    assert_fails(t, tg_conv2d(t, x, w, NULL, &o), "tg_conv2d", "stride [1,0]");
    o.stride[1] = 1, o.padding[0] = -1;
    assert_fails(t, tg_conv2d(t, x, w, NULL, &o), "tg_conv2d", "padding [-1,0]");
    o.padding[0] = 0, o.dilation[0] = 3;
    assert_fails(t, tg_conv2d(t, x, w, NULL, &o), "tg_conv2d", "give no output", "larger than the padded input");
    o.dilation[0] = 1, o.stride[0] = 2, o.same = true;
    assert_fails(t, tg_conv2d(t, x, w, NULL, &o), "tg_conv2d", "'same'", "stride 1");
    assert_fails(t, tg_conv2d(t, x, NULL, NULL, NULL), "tg_conv2d", "NULL");
    tg_tape_free(t);
}

Test(conv, max_pool2d_rejects_bad_arguments)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 4, (int[]){2, 4, 5, 5}), *x2 = tg_tensor_zeros(t, 2, (int[]){5, 5});
    tg_pool_opts o = TG_POOL_OPTS_DEFAULT(2, 2);
    cr_assert_not_null(tg_max_pool2d(t, x, &o));
    assert_fails(t, tg_max_pool2d(t, x, NULL), "tg_max_pool2d", "opts is NULL");
    assert_fails(t, tg_max_pool2d(t, x2, &o), "tg_max_pool2d", "input [5,5]");
    o.kernel[1] = 0;
    assert_fails(t, tg_max_pool2d(t, x, &o), "tg_max_pool2d", "kernel 0");
    o.kernel[1] = 2, o.padding[0] = 2;
    assert_fails(t, tg_max_pool2d(t, x, &o), "tg_max_pool2d", "padding 2", "half the kernel 2");
    o.padding[0] = 0, o.kernel[0] = 6;
    assert_fails(t, tg_max_pool2d(t, x, &o), "tg_max_pool2d", "too small", "kernel 6");
    o.kernel[0] = 2, o.dilation[1] = -1;
    assert_fails(t, tg_max_pool2d(t, x, &o), "tg_max_pool2d", "dilation -1");
    tg_tape_free(t);
}

Test(conv, other_ops_reject_bad_arguments)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 4, (int[]){2, 4, 5, 5}), *w = tg_tensor_zeros(t, 4, (int[]){4, 3, 3, 3});
    tg_tensor *x1 = tg_tensor_zeros(t, 3, (int[]){2, 4, 9}), *w1 = tg_tensor_zeros(t, 3, (int[]){3, 4, 3});
    tg_conv_opts o = TG_CONV_OPTS_DEFAULT;
    o.output_padding[1] = 1;
    assert_fails(t, tg_conv2d(t, x, tg_tensor_zeros(t, 4, (int[]){3, 4, 3, 3}), NULL, &o), "tg_conv2d",
                 "output_padding [0,1]", "transposed");
    cr_assert_not_null(tg_conv_transpose2d(t, x, w, NULL, &(tg_conv_opts){{2, 2}, {0, 0}, {1, 1}, 1, false, {1, 1}}),
                       "%s", tg_tape_error(t));
    assert_fails(t, tg_conv_transpose2d(t, x, w, NULL, &o), "tg_conv_transpose2d", "output_padding [0,1]",
                 "smaller than stride or dilation");
    o.output_padding[1] = 0, o.same = true;
    assert_fails(t, tg_conv_transpose2d(t, x, w, NULL, &o), "tg_conv_transpose2d", "'same'");
    assert_fails(t, tg_conv_transpose2d(t, x, tg_tensor_zeros(t, 4, (int[]){3, 3, 3, 3}), NULL, NULL),
                 "tg_conv_transpose2d", "[2,4,5,5]", "[3,3,3,3]", "weight's dim 0");
    cr_assert_not_null(tg_conv1d(t, x1, w1, NULL, NULL), "%s", tg_tape_error(t));
    assert_fails(t, tg_conv1d(t, x, w1, NULL, NULL), "tg_conv1d", "input [2,4,5,5]", "[N, C, L]");
    assert_fails(t, tg_conv1d(t, x1, w, NULL, NULL), "tg_conv1d", "weight [4,3,3,3]", "[C_out, C_in/groups, k]");
    tg_pool_opts po = TG_POOL_OPTS_DEFAULT(2, 2);
    po.dilation[0] = 2;
    assert_fails(t, tg_avg_pool2d(t, x, &po), "tg_avg_pool2d", "dilation 2");
    assert_fails(t, tg_avg_pool1d(t, x, &po), "tg_avg_pool1d", "input [2,4,5,5]");
    assert_fails(t, tg_max_pool1d(t, x, &po), "tg_max_pool1d", "input [2,4,5,5]");
    assert_fails(t, tg_adaptive_avg_pool2d(t, x, 0, 3), "tg_adaptive_avg_pool2d", "output size 0x3");
    assert_fails(t, tg_adaptive_avg_pool2d(t, tg_tensor_zeros(t, 2, (int[]){4, 9}), 2, 3), "tg_adaptive_avg_pool2d", "input [4,9]");
    tg_tape_free(t);
}

Test(conv, pool_options_and_unpool_reject_bad_arguments)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 4, (int[]){2, 4, 6, 6}), *x1 = tg_tensor_zeros(t, 3, (int[]){2, 4, 9}), *ix;
    tg_pool_opts po = TG_POOL_OPTS_DEFAULT(2, 2);
    po.divisor_override = -1;
    assert_fails(t, tg_avg_pool2d(t, x, &po), "tg_avg_pool2d", "divisor_override -1", ">= 0");
    po.divisor_override = 3;
    cr_assert_not_null(tg_avg_pool2d(t, x, &po), "%s", tg_tape_error(t));
    assert_fails(t, tg_avg_pool1d(t, x1, &po), "tg_avg_pool1d", "divisor_override 3", "only avg_pool2d");
    assert_fails(t, tg_max_pool2d(t, x, &po), "tg_max_pool2d", "divisor_override 3");
    assert_fails(t, tg_max_pool2d_with_indices(t, x, &po, &ix), "tg_max_pool2d_with_indices", "divisor_override 3");
    po.divisor_override = 0;
    assert_fails(t, tg_max_pool2d_with_indices(t, x, &po, NULL), "tg_max_pool2d_with_indices", "indices is NULL");
    assert_fails(t, tg_max_pool1d_with_indices(t, x1, &po, NULL), "tg_max_pool1d_with_indices", "indices is NULL");
    assert_fails(t, tg_max_pool1d_with_indices(t, x, &po, &ix), "tg_max_pool1d_with_indices", "input [2,4,6,6]");
    assert_fails(t, tg_adaptive_avg_pool2d(t, x, -2, 3), "tg_adaptive_avg_pool2d", "output size -2x3", "TG_SIZE_NONE");

    tg_tensor *y = tg_max_pool2d_with_indices(t, x, &po, &ix);  /* [2, 4, 3, 3] */
    cr_assert(y && ix && ix->dtype == TG_I64 && tg_shape_equal(y, ix), "%s", tg_tape_error(t));
    cr_assert_not_null(tg_max_unpool2d(t, y, ix, &po, NULL), "%s", tg_tape_error(t));
    assert_fails(t, tg_max_unpool2d(t, y, ix, NULL, NULL), "tg_max_unpool2d", "opts is NULL");
    assert_fails(t, tg_max_unpool2d(t, y, NULL, &po, NULL), "tg_max_unpool2d", "indices is NULL");
    assert_fails(t, tg_max_unpool2d(t, y, y, &po, NULL), "tg_max_unpool2d", "float", "int64 or int32");
    assert_fails(t, tg_max_unpool2d(t, y, tg_tensor_zeros_dtype(t, TG_I64, 4, (int[]){2, 4, 3, 2}), &po, NULL),
                 "tg_max_unpool2d", "indices [2,4,3,2]", "input's shape [2,4,3,3]");
    assert_fails(t, tg_max_unpool2d(t, tg_tensor_zeros(t, 2, (int[]){4, 9}),
                                    tg_tensor_zeros_dtype(t, TG_I64, 2, (int[]){4, 9}), &po, NULL),
                 "tg_max_unpool2d", "input [4,9]", "[N, C, H, W] or [C, H, W]");
    assert_fails(t, tg_max_unpool2d(t, y, ix, &po, (int[]){8, 6}), "tg_max_unpool2d", "output_size 8 (dim 0)",
                 "strictly between 4 and 8");
    cr_assert_not_null(tg_max_unpool2d(t, y, ix, &po, (int[]){7, 5}), "%s", tg_tape_error(t));
    tg_tensor *bad = tg_tensor_zeros_dtype(t, TG_I64, 4, (int[]){2, 4, 3, 3});
    ((int64_t *)bad->data)[5] = 36;
    assert_fails(t, tg_max_unpool2d(t, y, bad, &po, NULL), "tg_max_unpool2d", "indices[5] = 36", "6 x 6");
    ((int64_t *)bad->data)[5] = -1;
    assert_fails(t, tg_max_unpool2d(t, y, bad, &po, NULL), "tg_max_unpool2d", "indices[5] = -1");
    po.kernel[1] = 0;
    assert_fails(t, tg_max_unpool2d(t, y, ix, &po, NULL), "tg_max_unpool2d", "kernel 0");
    tg_tape_free(t);
}

/* The indices are a copy: changing the tensor after the pooling leaves its
 * backward alone; the unpooling's grad gathers dout at the indices. */
Test(conv, max_pool_indices_and_unpool_by_hand)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_from(t, (tg_real[]){1, 5, 2, 0, 3, 4, 9, 8, 7, 6, 2, 1}, 3, (int[]){1, 3, 4}), *ix;
    x->requires_grad = true;
    tg_pool_opts po = TG_POOL_OPTS_DEFAULT(2, 0);  /* 1-D: kernel 2, stride 2 */
    tg_tensor *y = tg_max_pool1d_with_indices(t, x, &po, &ix);
    cr_assert(y && ix, "%s", tg_tape_error(t));
    /* planes 1 5 2 0 | 3 4 9 8 | 7 6 2 1, windows of 2: the maxima and their places in the plane */
    static const int64_t want[6] = {1, 2, 1, 2, 0, 2};
    static const tg_real vals[6] = {5, 2, 4, 9, 7, 2};
    const int64_t *v = tg_data(ix, TG_I64);
    for (int i = 0; i < 6; i++)
        cr_assert(v[i] == want[i] && y->data[i] == vals[i], "%d: %lld %g", i, (long long)v[i], (double)y->data[i]);
    ((int64_t *)ix->data)[0] = 0;
    cr_assert_eq(tg_backward(t, tg_sum(t, y)), 0, "%s", tg_tape_error(t));
    cr_assert(x->grad[1] == 1 && x->grad[0] == 0, "the backward kept its own indices");
    tg_tape_free(t);
}

Test(conv, batch_norm_and_interpolate_reject_bad_arguments)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 4, (int[]){2, 3, 4, 4}), *v3 = tg_tensor_zeros(t, 1, (int[]){3});
    tg_tensor *v4 = tg_tensor_zeros(t, 1, (int[]){4});
    tg_bn_opts o = TG_BN_OPTS_DEFAULT;
    assert_fails(t, tg_batch_norm(t, x, NULL, NULL, NULL, NULL, &o), "tg_batch_norm", "evaluation needs them");
    o.training = true;
    cr_assert_not_null(tg_batch_norm(t, x, NULL, NULL, v3, v3, &o), "%s", tg_tape_error(t));
    assert_fails(t, tg_batch_norm(t, x, NULL, NULL, v4, NULL, &o), "tg_batch_norm", "weight [4]", "[C] = [3]");
    assert_fails(t, tg_batch_norm(t, x, v3, v4, NULL, NULL, &o), "tg_batch_norm", "running_var [4]");
    assert_fails(t, tg_batch_norm(t, x, v3, NULL, NULL, NULL, &o), "tg_batch_norm", "running_var is NULL",
                 "give both running statistics or neither");
    assert_fails(t, tg_batch_norm(t, tg_tensor_zeros(t, 1, (int[]){3}), NULL, NULL, NULL, NULL, &o), "tg_batch_norm",
                 "input [3]", "[N, C, ...]");
    assert_fails(t, tg_batch_norm(t, tg_tensor_zeros(t, 4, (int[]){1, 3, 1, 1}), NULL, NULL, NULL, NULL, &o),
                 "tg_batch_norm", "more than 1 value per channel");
    o.eps = 0;
    assert_fails(t, tg_batch_norm(t, x, NULL, NULL, NULL, NULL, &o), "tg_batch_norm", "eps 0");
    o.eps = 1e-5, o.momentum = 2;
    assert_fails(t, tg_batch_norm(t, x, NULL, NULL, NULL, NULL, &o), "tg_batch_norm", "momentum 2");
    tg_interp_opts io = {{4, 0}, {0, 2}, TG_INTERP_NEAREST, false};
    cr_assert_not_null(tg_interpolate(t, x, &io), "%s", tg_tape_error(t));
    io.scale[0] = 2;
    assert_fails(t, tg_interpolate(t, x, &io), "tg_interpolate", "exactly one", "dim 0");
    io.size[0] = 0, io.scale[0] = 0.1;
    assert_fails(t, tg_interpolate(t, x, &io), "tg_interpolate", "output size 0");
    io.scale[0] = 1, io.align_corners = true;
    assert_fails(t, tg_interpolate(t, x, &io), "tg_interpolate", "align_corners", "bilinear only");
    io.align_corners = false, io.mode = (tg_interp_mode)7;
    assert_fails(t, tg_interpolate(t, x, &io), "tg_interpolate", "mode 7");
    io.mode = TG_INTERP_BILINEAR;
    assert_fails(t, tg_interpolate(t, tg_tensor_zeros(t, 3, (int[]){3, 4, 4}), &io), "tg_interpolate", "[3,4,4]",
                 "[N, C, L]");
    tg_tape_free(t);
}

/* ---- the layer ------------------------------------------------------------- */

Test(conv, conv2d_layer_names_init_and_forward)
{
    tg_params *p = tg_params_new();
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_conv2d_layer l;
    tg_conv2d_config cfg = TG_CONV2D_CONFIG(4, 6, 3, 2);
    cfg.opts.groups = 2;
    cfg.opts.padding[0] = 1;
    cr_assert_eq(tg_conv2d_init(&l, p, "conv1", &cfg, &rng), 0, "%s", tg_error());
    cr_assert_eq(tg_params_count(p), 2);
    cr_assert_str_eq(tg_params_at(p, 0)->name, "conv1.weight");
    cr_assert_str_eq(tg_params_at(p, 1)->name, "conv1.bias");
    int want[4] = {6, 2, 3, 2};
    for (int i = 0; i < 4; i++) cr_assert_eq(l.weight->shape[i], want[i]);
    double bound = 1 / sqrt(2.0 * 3 * 2), lo = 1, hi = -1;  /* fan_in = in/groups * kh * kw */
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < tg_params_at(p, k)->size; i++) {
            double v = tg_params_at(p, k)->data[i];
            lo = v < lo ? v : lo, hi = v > hi ? v : hi;
        }
    cr_assert(lo >= -bound && hi <= bound && lo < -0.8 * bound && hi > 0.8 * bound, "[%g, %g] vs %g", lo, hi, bound);
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tu_rand(&rng, -1, 1, 4, (int[]){2, 4, 5, 5});
    tg_tensor *y = tg_conv2d_forward(t, &l, x);
    cr_assert_not_null(y, "%s", tg_tape_error(t));
    int ys[4] = {2, 6, 5, 4};
    for (int i = 0; i < 4; i++) cr_assert_eq(y->shape[i], ys[i]);
    tg_tensor *y2 = tg_conv2d(t, x, l.weight, l.bias, &cfg.opts);
    cr_assert(memcmp(y->data, y2->data, y->size * sizeof(tg_real)) == 0);
    tg_tensor *x3 = tg_tensor_zeros(t, 4, (int[]){2, 3, 5, 5});
    assert_fails(t, tg_conv2d_forward(t, &l, x3), "tg_conv2d 'conv1'", "[2,3,5,5]", "[N, 4, H, W]");
    tg_conv2d_layer bad;
    cfg.out = 5;
    cr_assert_eq(tg_conv2d_init(&bad, p, "conv2", &cfg, &rng), -1);
    tu_assert_has(tg_error(), "conv2");
    tu_assert_has(tg_error(), "groups 2");
    cr_assert_eq(tg_params_count(p), 2, "a failed init leaves nothing");
    cfg.out = 6, cfg.opts.stride[0] = 0;
    cr_assert_eq(tg_conv2d_init(&bad, p, "conv2", &cfg, &rng), -1);
    tu_assert_has(tg_error(), "stride [0,1]");
    cr_assert_null(tg_conv2d_forward(t, &bad, x));
    tu_assert_has(tg_tape_error(t), "not initialised");
    tg_tensor_free(x);
    tg_tape_free(t);
    tg_params_free(p);
}

/* the layer with in[1], in[2] as its weight and bias: a gradcheck through its forward */
static tg_tensor *conv1d_layer_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    tg_conv1d_layer l = *(const tg_conv1d_layer *)ctx;
    l.weight = in[1], l.bias = in[2];
    return tg_conv1d_forward(t, &l, in[0]);
}

static tg_tensor *convt_layer_fn(tg_tape *t, tg_tensor **in, void *ctx)
{
    tg_conv_transpose2d_layer l = *(const tg_conv_transpose2d_layer *)ctx;
    l.weight = in[1], l.bias = in[2];
    return tg_conv_transpose2d_forward(t, &l, in[0]);
}

/* every value of p's first n parameters within bound, and reaching 0.8 of it both ways (PyTorch's U(-b, b)) */
static void assert_uniform_bound(const tg_params *p, int n, double bound)
{
    double lo = 1, hi = -1;
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < tg_params_at(p, k)->size; i++) {
            double v = tg_params_at(p, k)->data[i];
            lo = v < lo ? v : lo, hi = v > hi ? v : hi;
        }
    cr_assert(lo >= -bound && hi <= bound && lo < -0.8 * bound && hi > 0.8 * bound, "[%g, %g] vs %g", lo, hi, bound);
}

Test(conv, conv1d_layer_names_init_and_forward)
{
    tg_params *p = tg_params_new();
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    tg_conv1d_layer l;
    tg_conv1d_config cfg = TG_CONV1D_CONFIG(4, 6, 3);
    cfg.opts.groups = 2, cfg.opts.padding[0] = 1, cfg.opts.stride[0] = 2;
    cr_assert_eq(tg_conv1d_init(&l, p, "conv1", &cfg, &rng), 0, "%s", tg_error());
    cr_assert_eq(tg_params_count(p), 2);
    cr_assert_str_eq(tg_params_at(p, 0)->name, "conv1.weight");
    cr_assert_str_eq(tg_params_at(p, 1)->name, "conv1.bias");
    cr_assert(l.weight->ndim == 3 && l.weight->shape[0] == 6 && l.weight->shape[1] == 2 && l.weight->shape[2] == 3);
    assert_uniform_bound(p, 2, 1 / sqrt(2.0 * 3));  /* fan_in = in/groups * k */
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tu_rand(&rng, -1, 1, 3, (int[]){2, 4, 9});
    tg_tensor *y = tg_conv1d_forward(t, &l, x), *y2 = tg_conv1d(t, x, l.weight, l.bias, &cfg.opts);
    cr_assert(y && y->shape[0] == 2 && y->shape[1] == 6 && y->shape[2] == 5, "%s", tg_tape_error(t));
    cr_assert(memcmp(y->data, y2->data, y->size * sizeof(tg_real)) == 0);
    tg_tensor *in[3] = {tu_rand(&rng, -1, 1, 2, (int[]){4, 7}), l.weight, l.bias};  /* unbatched */
    tu_gradcheck(conv1d_layer_fn, &l, in, 3);
    assert_fails(t, tg_conv1d_forward(t, &l, tg_tensor_zeros(t, 4, (int[]){2, 4, 5, 5})), "tg_conv1d 'conv1'",
                 "[2,4,5,5]", "[N, 4, L]");
    assert_fails(t, tg_conv1d_forward(t, &l, tg_tensor_zeros(t, 3, (int[]){2, 3, 9})), "tg_conv1d 'conv1'", "[2,3,9]");
    tg_conv1d_layer bad;
    cfg.kernel = 0;
    cr_assert_eq(tg_conv1d_init(&bad, p, "conv2", &cfg, &rng), -1);
    tu_assert_has(tg_error(), "tg_conv1d 'conv2'");
    tu_assert_has(tg_error(), "kernel 0");
    cfg.kernel = 3, cfg.opts.dilation[0] = 0;
    cr_assert_eq(tg_conv1d_init(&bad, p, "conv2", &cfg, &rng), -1);
    tu_assert_has(tg_error(), "dilation 0");
    cr_assert_eq(tg_params_count(p), 2, "a failed init leaves nothing");
    assert_fails(t, tg_conv1d_forward(t, &bad, x), "tg_conv1d_forward", "not initialised");
    cfg.opts.dilation[0] = 1, cfg.bias = false;
    cr_assert_eq(tg_conv1d_init(&bad, p, "conv2", &cfg, NULL), 0);
    cr_assert(bad.bias == NULL && tg_params_count(p) == 3 && bad.weight->data[0] == 0, "bias=False; rng NULL: zeros");
    tg_tensor_free(x), tg_tensor_free(in[0]);
    tg_tape_free(t);
    tg_params_free(p);
}

Test(conv, conv_transpose2d_layer_names_init_and_forward)
{
    tg_params *p = tg_params_new();
    tg_rng rng;
    tg_rng_seed(&rng, 6);
    tg_conv_transpose2d_layer l;
    tg_conv_transpose2d_config cfg = TG_CONV_TRANSPOSE2D_CONFIG(4, 6, 3, 2);
    cfg.opts.groups = 2, cfg.opts.stride[0] = 2, cfg.opts.output_padding[0] = 1, cfg.opts.padding[1] = 1;
    cr_assert_eq(tg_conv_transpose2d_init(&l, p, "up1", &cfg, &rng), 0, "%s", tg_error());
    cr_assert_str_eq(tg_params_at(p, 0)->name, "up1.weight");
    cr_assert_str_eq(tg_params_at(p, 1)->name, "up1.bias");
    int want[4] = {4, 3, 3, 2};  /* [in, out/groups, kh, kw] */
    for (int i = 0; i < 4; i++) cr_assert_eq(l.weight->shape[i], want[i]);
    cr_assert_eq(l.bias->shape[0], 6);
    assert_uniform_bound(p, 2, 1 / sqrt(3.0 * 3 * 2));  /* fan_in = out/groups * kh * kw (W's dim 1) */
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tu_rand(&rng, -1, 1, 4, (int[]){2, 4, 3, 4});
    tg_tensor *y = tg_conv_transpose2d_forward(t, &l, x), *y2 = tg_conv_transpose2d(t, x, l.weight, l.bias, &cfg.opts);
    cr_assert(y && y->shape[1] == 6 && y->shape[2] == 8 && y->shape[3] == 3, "%s", tg_tape_error(t));
    cr_assert(memcmp(y->data, y2->data, y->size * sizeof(tg_real)) == 0);
    tg_tensor *in[3] = {tu_rand(&rng, -1, 1, 3, (int[]){4, 2, 3}), l.weight, l.bias};  /* unbatched */
    tu_gradcheck(convt_layer_fn, &l, in, 3);
    assert_fails(t, tg_conv_transpose2d_forward(t, &l, tg_tensor_zeros(t, 4, (int[]){2, 6, 3, 3})),
                 "tg_conv_transpose2d 'up1'", "[2,6,3,3]", "[N, 4, H, W]");
    tg_conv_transpose2d_layer bad;
    cfg.opts.output_padding[0] = 2;
    cr_assert_eq(tg_conv_transpose2d_init(&bad, p, "up2", &cfg, &rng), -1);
    tu_assert_has(tg_error(), "tg_conv_transpose2d 'up2'");
    tu_assert_has(tg_error(), "output_padding [2,0]");
    cfg.opts.output_padding[0] = 0, cfg.opts.same = true, cfg.opts.stride[0] = 1;
    cr_assert_eq(tg_conv_transpose2d_init(&bad, p, "up2", &cfg, &rng), -1);
    tu_assert_has(tg_error(), "'same'");
    cfg.opts.same = false, cfg.out = 5;
    cr_assert_eq(tg_conv_transpose2d_init(&bad, p, "up2", &cfg, &rng), -1);
    tu_assert_has(tg_error(), "groups 2");
    cr_assert_eq(tg_params_count(p), 2, "a failed init leaves nothing");
    assert_fails(t, tg_conv_transpose2d_forward(t, &bad, x), "tg_conv_transpose2d_forward", "not initialised");
    tg_tensor_free(x), tg_tensor_free(in[0]);
    tg_tape_free(t);
    tg_params_free(p);
}

Test(conv, batchnorm2d_layer_keys_running_stats_and_modes)
{
    tg_params *p = tg_params_new(), *bufs = tg_params_new();
    tg_batchnorm2d l;
    tg_batchnorm2d_config cfg = TG_BATCHNORM2D_CONFIG(3);
    cr_assert_eq(tg_batchnorm2d_init(&l, p, bufs, "bn1", &cfg), 0, "%s", tg_error());
    cr_assert_eq(tg_params_count(p), 2);
    cr_assert_str_eq(tg_params_at(p, 0)->name, "bn1.weight");
    cr_assert_str_eq(tg_params_at(p, 1)->name, "bn1.bias");
    static const char *keys[] = {"bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked"};
    cr_assert_eq(tg_params_count(bufs), 3);
    for (int i = 0; i < 3; i++) cr_assert_str_eq(tg_params_at(bufs, i)->name, keys[i]);
    cr_assert_eq(l.num_batches_tracked->ndim, 0);
    for (int c = 0; c < 3; c++)
        cr_assert(l.weight->data[c] == 1 && l.bias->data[c] == 0 && l.running_mean->data[c] == 0 &&
                  l.running_var->data[c] == 1);
    tg_rng rng;
    tg_rng_seed(&rng, 20);
    tg_tensor *x = tu_rand(&rng, -1, 3, 4, (int[]){4, 3, 2, 5});
    tg_tape *t = tg_tape_new();
    tg_tensor *y = tg_batchnorm2d_forward(t, &l, x);  /* training: batch statistics */
    cr_assert_not_null(y, "%s", tg_tape_error(t));
    cr_assert(l.num_batches_tracked->data[0] == 1);
    for (int c = 0; c < 3; c++) {
        double s = 0, v = 0;
        for (int n = 0; n < 4; n++)
            for (int i = 0; i < 10; i++) s += x->data[(n * 3 + c) * 10 + i];
        for (int n = 0; n < 4; n++)
            for (int i = 0; i < 10; i++) v += pow(x->data[(n * 3 + c) * 10 + i] - s / 40, 2);
        tu_close(l.running_mean->data[c], 0.1 * s / 40, TU_TOL);
        tu_close(l.running_var->data[c], 0.9 + 0.1 * v / 39, TU_TOL);  /* unbiased */
    }
    tg_tape_set_training(t, false);  /* evaluation: the running statistics, no count */
    y = tg_batchnorm2d_forward(t, &l, x);
    cr_assert_not_null(y);
    cr_assert(l.num_batches_tracked->data[0] == 1);
    tu_close(y->data[0], (x->data[0] - l.running_mean->data[0]) / sqrt(l.running_var->data[0] + 1e-5), TU_TOL);
    assert_fails(t, tg_batchnorm2d_forward(t, &l, tg_tensor_zeros(t, 4, (int[]){4, 2, 2, 5})), "tg_batchnorm2d",
                 "bn1", "[N, 3, H, W]");
    tg_batchnorm2d bad;
    cr_assert_eq(tg_batchnorm2d_init(&bad, p, p, "bn2", &cfg), -1);
    tu_assert_has(tg_error(), "a buffer store of its own");
    cr_assert_eq(tg_batchnorm2d_init(&bad, p, NULL, "bn2", &cfg), -1);
    cfg.features = 0;
    cr_assert_eq(tg_batchnorm2d_init(&bad, p, bufs, "bn2", &cfg), -1);
    tu_assert_has(tg_error(), "num_features 0");
    cr_assert_eq(tg_params_count(p), 2, "failed inits leave nothing");
    cr_assert_eq(tg_params_count(bufs), 3);
    cr_assert_eq(tg_batchnorm2d_init(&bad, p, bufs, "bn1", &(tg_batchnorm2d_config)TG_BATCHNORM2D_CONFIG(3)), -1);
    cr_assert_eq(tg_params_count(bufs), 3, "a name taken: the buffers added are taken back");
    cr_assert_null(tg_batchnorm2d_forward(t, &bad, x));
    tu_assert_has(tg_tape_error(t), "not initialised");
    /* without running statistics: batch statistics in evaluation too */
    tg_batchnorm2d nb;
    cfg = (tg_batchnorm2d_config){3, 1e-5, 0.1, false, false};
    cr_assert_eq(tg_batchnorm2d_init(&nb, p, NULL, "bn3", &cfg), 0, "%s", tg_error());
    tg_tape_reset(t);
    cr_assert_not_null(y = tg_batchnorm2d_forward(t, &nb, x), "%s", tg_tape_error(t));
    tg_tensor_free(x);
    tg_tape_free(t);
    tg_params_free(p);
    tg_params_free(bufs);
}

/* ---- out of memory ---------------------------------------------------------- */

/* every op of this file in one chain on x [1, 2, 5, 5], w [2, 2, 3, 3], wt [2, 1, 2, 2] */
static tg_tensor *oom_chain(tg_tape *t, void *ctx)
{
    tg_tensor **in = ctx;
    tg_conv_opts co = TG_CONV_OPTS_DEFAULT;
    co.padding[0] = co.padding[1] = 1;
    tg_pool_opts po = TG_POOL_OPTS_DEFAULT(2, 2);
    tg_bn_opts bo = {true, 0.1, 1e-5};
    tg_interp_opts io = {{3, 3}, {0, 0}, TG_INTERP_BILINEAR, false};
    tg_tensor *y = tg_conv2d(t, in[0], in[1], NULL, &co);            /* [1, 2, 5, 5] */
    y = tg_batch_norm(t, tg_max_pool2d(t, y, &po), NULL, NULL, NULL, NULL, &bo);  /* [1, 2, 2, 2] */
    y = tg_conv_transpose2d(t, tg_interpolate(t, y, &io), in[2], NULL, NULL);     /* [1, 1, 4, 4] */
    y = tg_avg_pool2d(t, tg_adaptive_avg_pool2d(t, y, 3, 3), &(tg_pool_opts)TG_POOL_OPTS_DEFAULT(2, 2));
    return tg_conv1d(t, tg_reshape(t, y, 3, (int[]){1, 1, 1}), tg_reshape(t, in[3], 3, (int[]){1, 1, 1}), NULL,
                     NULL);
}

Test(conv, out_of_memory_anywhere_is_an_error)
{
    tg_rng rng;
    tg_rng_seed(&rng, 22);
    tg_tensor *in[4] = {tu_rand(&rng, -1, 1, 4, (int[]){1, 2, 5, 5}), tu_rand(&rng, -1, 1, 4, (int[]){2, 2, 3, 3}),
                        tu_rand(&rng, -1, 1, 4, (int[]){2, 1, 2, 2}), tu_rand(&rng, -1, 1, 1, (int[]){1})};
    walk_out_of_memory(oom_chain, in, in, 4);
    tu_free_all(in, 4);
}
