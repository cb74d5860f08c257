/* tinygrad's test_ops.py cases for convolution, pooling and resizing
 * (tinygrad/tinygrad, test/test_ops.py; each test here is named after the
 * tinygrad test it ports, with its shapes, options and loops). tinygrad
 * compares with torch; here the forward is checked against direct loops in
 * double written below, with tinygrad's tolerances (atol, rtol) in the
 * float build and 1e-12 in the double build, and the grads by a gradcheck
 * (the double build at PyTorch's tolerances). The forward's inputs are
 * uniform in [-2, 2), as tinygrad's (max pooling's: a shuffled grid 0.01
 * apart, so that no window holds a near-tie for the gradcheck to trip on).
 * A gradcheck runs two forwards per input element, so it takes the batch's
 * first image (the geometry is per image); where that is still slow the
 * case says which dims it cuts and why. What the ops refuse (conv3d,
 * pool3d, trilinear, nearest-exact, negative padding) is a test at the
 * end; tinygrad's integer inputs have no tapegrad API to refuse.
 * return_indices and max_unpool2d (forward-only in tinygrad) are checked
 * against the same loops' first maxima, exactly. PyTorch's own numbers:
 * tests/test_conv.c. */
#include "ops_util.h"

TU_SUITE(tinygrad_conv, 61);

enum kind { CONV2D, CONV1D, CONVT2D, MAXPOOL, AVGPOOL, INTERP };

typedef struct spec {
    const char *from;       /* tinygrad's test (and its loop values) */
    enum kind kind;
    int nd;                 /* x's dims: 4, or 3 for conv1d */
    int x[4], w[4];         /* w[0] == 0: no weight */
    bool bias;
    tg_conv_opts co;
    tg_pool_opts po;
    tg_interp_opts io;
    int pad[4];             /* F.pad(x, pad) before the op (last dim first), value pad_value; negative crops */
    double pad_value;
    bool nhwc;              /* x [N, H, W, C] and w [kh, kw, C, O], permuted to PyTorch's (test_simple_conv2d_nhwc) */
    int chain;              /* 1: conv(relu(conv(x, w, b)), w, b); 2: conv(relu(conv(x, w)), w2) */
    double atol, rtol;      /* tinygrad's forward tolerances; 0: its defaults 1e-6, 1e-3 */
    int gx[4], gw[4];       /* the gradcheck's shapes when not x's first image and w (cut: see the case) */
} spec;

#define CO(sh, sw, ph, pw, dh, dw, g) {{(sh), (sw)}, {(ph), (pw)}, {(dh), (dw)}, (g), false, {0, 0}}
#define COT(sh, sw, ph, pw, dh, dw, g, oh, ow) {{(sh), (sw)}, {(ph), (pw)}, {(dh), (dw)}, (g), false, {(oh), (ow)}}
#define PO(kh, kw, sh, sw, ph, pw, dh, dw, ceil, cip) {{(kh), (kw)}, {(sh), (sw)}, {(ph), (pw)}, {(dh), (dw)}, (ceil), (cip), 0}

/* ---- the naive references, in double ------------------------------------- */

/* An [N, C, H, W] array (a 3-D [N, C, L] is [N, C, 1, L]). */
typedef struct arr {
    int n, c, h, w;
    double *v;
} arr;

static arr arr_new(int n, int c, int h, int w, double fill)
{
    arr a = {n, c, h, w, malloc(sizeof(double) * (size_t)n * c * h * w + 1)};
    cr_assert_not_null(a.v);
    for (size_t i = 0; i < (size_t)n * c * h * w; i++) a.v[i] = fill;
    return a;
}

#define AT(a, i, j, k, l) ((a).v[(((size_t)(i) * (a).c + (j)) * (a).h + (k)) * (a).w + (l)])

static arr arr_of(const tg_tensor *t, int nd)
{
    arr a = nd == 4 ? arr_new(t->shape[0], t->shape[1], t->shape[2], t->shape[3], 0)
                    : arr_new(t->shape[0], t->shape[1], 1, t->shape[2], 0);
    for (size_t i = 0; i < t->size; i++) a.v[i] = t->data[i];
    return a;
}

/* a [d0, d1, d2, d3] read as b = a.permute(p) */
static arr arr_permute(arr a, const int *p)
{
    int d[4] = {a.n, a.c, a.h, a.w}, s[4];
    arr b = arr_new(d[p[0]], d[p[1]], d[p[2]], d[p[3]], 0);
    for (s[0] = 0; s[0] < a.n; s[0]++)
        for (s[1] = 0; s[1] < a.c; s[1]++)
            for (s[2] = 0; s[2] < a.h; s[2]++)
                for (s[3] = 0; s[3] < a.w; s[3]++) AT(b, s[p[0]], s[p[1]], s[p[2]], s[p[3]]) = AT(a, s[0], s[1], s[2], s[3]);
    free(a.v);
    return b;
}

/* F.pad(a, {left, right, top, bottom}, value) */
static arr arr_pad(arr a, const int *p, double value)
{
    arr b = arr_new(a.n, a.c, a.h + p[2] + p[3], a.w + p[0] + p[1], value);
    for (int i = 0; i < b.n; i++)
        for (int j = 0; j < b.c; j++)
            for (int k = 0; k < b.h; k++)
                for (int l = 0; l < b.w; l++) {
                    int sk = k - p[2], sl = l - p[0];
                    if (sk >= 0 && sk < a.h && sl >= 0 && sl < a.w) AT(b, i, j, k, l) = AT(a, i, j, sk, sl);
                }
    free(a.v);
    return b;
}

/* F.conv2d: x [N, C, H, W], w [O, C/g, kh, kw], b [O] or NULL */
static arr conv_ref(arr x, arr w, const double *b, const tg_conv_opts *o)
{
    int G = o->groups, Cg = x.c / G, Og = w.n / G;
    int Ho = (x.h + 2 * o->padding[0] - o->dilation[0] * (w.h - 1) - 1) / o->stride[0] + 1;
    int Wo = (x.w + 2 * o->padding[1] - o->dilation[1] * (w.w - 1) - 1) / o->stride[1] + 1;
    arr y = arr_new(x.n, w.n, Ho, Wo, 0);
    for (int n = 0; n < x.n; n++)
        for (int oc = 0; oc < w.n; oc++)
            for (int i = 0; i < Ho; i++)
                for (int j = 0; j < Wo; j++) {
                    double s = b ? b[oc] : 0;
                    for (int c = 0; c < Cg; c++)
                        for (int a = 0; a < w.h; a++)
                            for (int e = 0; e < w.w; e++) {
                                int h = i * o->stride[0] - o->padding[0] + a * o->dilation[0];
                                int v = j * o->stride[1] - o->padding[1] + e * o->dilation[1];
                                if (h >= 0 && h < x.h && v >= 0 && v < x.w)
                                    s += AT(x, n, oc / Og * Cg + c, h, v) * AT(w, oc, c, a, e);
                            }
                    AT(y, n, oc, i, j) = s;
                }
    return y;
}

/* F.conv_transpose2d: x [N, C, H, W], w [C, O/g, kh, kw]: every input tap
 * scattered to where the forward convolution read it from */
static arr convt_ref(arr x, arr w, const double *b, const tg_conv_opts *o)
{
    int G = o->groups, Cg = x.c / G, Og = w.c, O = Og * G;
    int Ho = (x.h - 1) * o->stride[0] - 2 * o->padding[0] + o->dilation[0] * (w.h - 1) + o->output_padding[0] + 1;
    int Wo = (x.w - 1) * o->stride[1] - 2 * o->padding[1] + o->dilation[1] * (w.w - 1) + o->output_padding[1] + 1;
    arr y = arr_new(x.n, O, Ho, Wo, 0);
    for (int n = 0; n < x.n; n++)
        for (int oc = 0; oc < O; oc++)
            for (int i = 0; i < Ho; i++)
                for (int j = 0; j < Wo; j++) AT(y, n, oc, i, j) = b ? b[oc] : 0;
    for (int n = 0; n < x.n; n++)
        for (int c = 0; c < x.c; c++)
            for (int h = 0; h < x.h; h++)
                for (int v = 0; v < x.w; v++)
                    for (int q = 0; q < Og; q++)
                        for (int a = 0; a < w.h; a++)
                            for (int e = 0; e < w.w; e++) {
                                int i = h * o->stride[0] - o->padding[0] + a * o->dilation[0];
                                int j = v * o->stride[1] - o->padding[1] + e * o->dilation[1];
                                if (i >= 0 && i < Ho && j >= 0 && j < Wo)
                                    AT(y, n, c / Cg * Og + q, i, j) += AT(x, n, c, h, v) * AT(w, c, q, a, e);
                            }
    return y;
}

/* PyTorch's pooling output size */
static int pool_size(int in, int k, int s, int p, int d, bool ceil_mode)
{
    int num = in + 2 * p - d * (k - 1) - 1;
    int n = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
    if (ceil_mode && (n - 1) * s >= in + p) n--;
    return n;
}

/* F.max_pool2d / F.avg_pool2d (PyTorch's avg_pool2d divisor rule) */
static arr pool_ref(arr x, const tg_pool_opts *o, bool max)
{
    int k[2] = {o->kernel[0], o->kernel[1]}, s[2], p[2] = {o->padding[0], o->padding[1]};
    int d[2] = {o->dilation[0], o->dilation[1]}, in[2] = {x.h, x.w}, out[2];
    for (int i = 0; i < 2; i++) {
        s[i] = o->stride[i] ? o->stride[i] : k[i];
        out[i] = pool_size(in[i], k[i], s[i], p[i], d[i], o->ceil_mode);
    }
    arr y = arr_new(x.n, x.c, out[0], out[1], 0);
    for (int n = 0; n < x.n; n++)
        for (int c = 0; c < x.c; c++)
            for (int i = 0; i < out[0]; i++)
                for (int j = 0; j < out[1]; j++) {
                    int h0 = i * s[0] - p[0], w0 = j * s[1] - p[1];
                    double m = -INFINITY, sum = 0;
                    for (int a = 0; a < k[0]; a++)
                        for (int e = 0; e < k[1]; e++) {
                            int h = h0 + a * d[0], v = w0 + e * d[1];
                            if (h < 0 || h >= x.h || v < 0 || v >= x.w) continue;
                            m = fmax(m, AT(x, n, c, h, v));
                            sum += AT(x, n, c, h, v);
                        }
                    if (max) {
                        AT(y, n, c, i, j) = m;
                        continue;
                    }
                    int h1 = h0 + k[0] < x.h + p[0] ? h0 + k[0] : x.h + p[0];
                    int w1 = w0 + k[1] < x.w + p[1] ? w0 + k[1] : x.w + p[1];
                    int padded = (h1 - h0) * (w1 - w0);
                    h0 = h0 > 0 ? h0 : 0, w0 = w0 > 0 ? w0 : 0;
                    h1 = h1 < x.h ? h1 : x.h, w1 = w1 < x.w ? w1 : x.w;
                    AT(y, n, c, i, j) = sum / (o->count_include_pad ? padded : (h1 - h0) * (w1 - w0));
                }
    return y;
}

/* one output index's source along a dim of in -> out: the taps i0, i1 and i1's weight */
static void interp_src(const tg_interp_opts *o, int in, int out, int dst, int *i0, int *i1, double *l1)
{
    if (o->mode == TG_INTERP_NEAREST) {
        int s = (int)floor(dst * ((double)in / out));
        *i0 = *i1 = s < in - 1 ? s : in - 1;
        *l1 = 0;
        return;
    }
    double src = o->align_corners ? (out > 1 ? dst * (double)(in - 1) / (out - 1) : 0)
                                  : fmax((dst + 0.5) * in / out - 0.5, 0);
    *i0 = (int)src;
    *i1 = *i0 < in - 1 ? *i0 + 1 : *i0;
    *l1 = src - *i0;
}

/* F.interpolate to size, nearest or bilinear */
static arr interp_ref(arr x, const tg_interp_opts *o)
{
    arr y = arr_new(x.n, x.c, o->size[0], o->size[1], 0);
    for (int n = 0; n < x.n; n++)
        for (int c = 0; c < x.c; c++)
            for (int i = 0; i < y.h; i++)
                for (int j = 0; j < y.w; j++) {
                    int a0, a1, b0, b1;
                    double la, lb;
                    interp_src(o, x.h, y.h, i, &a0, &a1, &la);
                    interp_src(o, x.w, y.w, j, &b0, &b1, &lb);
                    AT(y, n, c, i, j) = (1 - la) * ((1 - lb) * AT(x, n, c, a0, b0) + lb * AT(x, n, c, a0, b1)) +
                                        la * ((1 - lb) * AT(x, n, c, a1, b0) + lb * AT(x, n, c, a1, b1));
                }
    return y;
}

/* the spec's whole computation on double arrays */
static arr spec_ref(const spec *s, const tg_tensor *const *in)
{
    arr x = arr_of(in[0], s->nd), w = {0};
    if (s->w[0]) w = arr_of(in[1], s->nd);
    if (s->nhwc) x = arr_permute(x, (int[]){0, 3, 1, 2}), w = arr_permute(w, (int[]){3, 2, 0, 1});
    if (s->pad[0] || s->pad[1] || s->pad[2] || s->pad[3]) x = arr_pad(x, s->pad, s->pad_value);
    double *b = NULL;
    if (s->bias) {
        b = malloc(sizeof(double) * in[2]->size);
        for (size_t i = 0; i < in[2]->size; i++) b[i] = in[2]->data[i];
    }
    tg_conv_opts co = s->co;
    if (s->kind == CONV1D) /* [N, C, 1, L]: the 1-D options are index [0], the height's are trivial */
        co = (tg_conv_opts)CO(1, s->co.stride[0], 0, s->co.padding[0], 1, s->co.dilation[0], s->co.groups);
    arr y;
    switch (s->kind) {
    case CONV2D:
    case CONV1D: y = conv_ref(x, w, b, &co); break;
    case CONVT2D: y = convt_ref(x, w, b, &co); break;
    case MAXPOOL: y = pool_ref(x, &s->po, true); break;
    case AVGPOOL: y = pool_ref(x, &s->po, false); break;
    default: y = interp_ref(x, &s->io); break;
    }
    if (s->chain) {
        for (size_t i = 0; i < (size_t)y.n * y.c * y.h * y.w; i++) y.v[i] = fmax(y.v[i], 0);
        arr w2 = s->chain == 2 ? arr_of(in[2], 4) : w, z = conv_ref(y, w2, s->chain == 2 ? NULL : b, &co);
        if (s->chain == 2) free(w2.v);
        free(y.v);
        y = z;
    }
    free(x.v), free(w.v), free(b);
    return y;
}

/* ---- the op under test, and the check -------------------------------------- */

static int n_inputs(const spec *s) { return 1 + (s->w[0] != 0) + (s->bias || s->chain == 2); }

static tg_tensor *spec_run(tg_tape *t, tg_tensor **in, void *ctx)
{
    const spec *s = ctx;
    tg_tensor *x = in[0], *w = s->w[0] ? in[1] : NULL, *b = s->bias ? in[2] : NULL;
    if (s->nhwc) x = tg_permute(t, x, (int[]){0, 3, 1, 2}, 4), w = tg_permute(t, w, (int[]){3, 2, 0, 1}, 4);
    if (s->pad[0] || s->pad[1] || s->pad[2] || s->pad[3]) x = tg_pad(t, x, s->pad, s->nd == 4 ? 4 : 2, s->pad_value);
    tg_tensor *y;
    switch (s->kind) {
    case CONV2D: y = tg_conv2d(t, x, w, b, &s->co); break;
    case CONV1D: y = tg_conv1d(t, x, w, b, &s->co); break;
    case CONVT2D: y = tg_conv_transpose2d(t, x, w, b, &s->co); break;
    case MAXPOOL: y = tg_max_pool2d(t, x, &s->po); break;
    case AVGPOOL: y = tg_avg_pool2d(t, x, &s->po); break;
    default: y = tg_interpolate(t, x, &s->io); break;
    }
    if (s->chain) y = tg_conv2d(t, tg_relu(t, y), s->chain == 2 ? in[2] : w, s->chain == 2 ? NULL : b, &s->co);
    return y;
}

/* the inputs at shape x (the weights at w), uniform in [-2, 2); max pooling's
 * x a permutation of a grid 0.01 apart, so that its gradcheck meets no near-ties */
static void inputs_make(const spec *s, const int *x, const int *w, double amp, tg_tensor **in)
{
    in[0] = tu_rand(&R, -amp, amp, s->nd, x);
    if (s->kind == MAXPOOL)
        for (size_t i = 0; i < in[0]->size; i++)
            in[0]->data[i] = (tg_real)(0.01 * (double)((i * 7919) % in[0]->size) - 2);
    if (s->w[0]) in[1] = tu_rand(&R, -amp, amp, s->nd, w);
    if (s->bias) {
        int o = s->kind == CONVT2D ? w[1] * s->co.groups : s->nhwc ? w[3] : w[0];
        in[2] = tu_rand(&R, -amp, amp, 1, &o);
    }
    if (s->chain == 2) in[2] = tu_rand(&R, -amp, amp, 4, w);
}

/* the gradchecks' inputs are in [-0.5, 0.5): the float build's estimate
 * (eps 1e-3) differences float outputs, and at tinygrad's [-2, 2) a
 * weight's derivative, a sum over hundreds of outputs of up to 16 times the
 * magnitude, gathers more rounding than its 1e-3 tolerance */
#define GC_AMP 0.5

static void check(const spec *s)
{
    tg_tensor *in[3] = {NULL};
    inputs_make(s, s->x, s->w, 2, in);
    tg_tape_reset(T);
    tg_tensor *y = spec_run(T, in, (void *)s);
    cr_assert_not_null(y, "%s: %s", s->from, tg_tape_error(T));
    arr want = spec_ref(s, (const tg_tensor *const *)in);
    int ws[4] = {want.n, want.c, want.h, want.w};
    if (s->nd == 3) ws[2] = want.w;
    cr_assert_eq(y->ndim, s->nd, "%s", s->from);
    for (int i = 0; i < s->nd; i++) cr_assert_eq(y->shape[i], ws[i], "%s: dim %d is %d, want %d", s->from, i, y->shape[i], ws[i]);
#ifdef TAPEGRAD_DOUBLE
    double atol = 1e-12, rtol = 1e-12;
#else
    double atol = s->atol ? s->atol : 1e-6, rtol = s->rtol ? s->rtol : 1e-3;
#endif
    for (size_t i = 0; i < y->size; i++)
        cr_assert(fabs(y->data[i] - want.v[i]) <= atol + rtol * fabs(want.v[i]), "%s: out[%zu] = %.9g, want %.9g",
                  s->from, i, (double)y->data[i], want.v[i]);
    free(want.v);
    tu_free_all(in, n_inputs(s));

    int gx[4], gw[4];
    memcpy(gx, s->gx[0] ? s->gx : s->x, sizeof gx);
    memcpy(gw, s->gw[0] ? s->gw : s->w, sizeof gw);
    if (!s->gx[0]) gx[0] = 1;
    tg_tensor *g[3] = {NULL};
    inputs_make(s, gx, gw, GC_AMP, g);
    tg_gradcheck_result r = tg_gradcheck(spec_run, (void *)s, g, n_inputs(s), NULL);
    cr_assert(r.ok, "%s: %s", s->from, tg_error());
    tu_free_all(g, n_inputs(s));
}

/* ---- convolution ----------------------------------------------------------- */

Test(tinygrad_conv, test_biased_conv2d)
{
    check(&(spec){"test_biased_conv2d", CONV2D, 4, {1, 8, 5, 5}, {8, 8, 1, 1}, .bias = true, .co = CO(1, 1, 0, 0, 1, 1, 1), .chain = 1});
}

Test(tinygrad_conv, test_simple_conv2d)
{
    check(&(spec){"test_simple_conv2d", CONV2D, 4, {1, 4, 9, 9}, {4, 4, 3, 3}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, 1)});
    check(&(spec){"test_simple_conv2d_bias", CONV2D, 4, {1, 4, 9, 9}, {4, 4, 3, 3}, .bias = true, .co = CO(1, 1, 0, 0, 1, 1, 1)});
    check(&(spec){"test_simple_conv2d_batched", CONV2D, 4, {2, 4, 9, 9}, {4, 4, 3, 3}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, 1)});
    check(&(spec){"test_simple_conv2d_1x1", CONV2D, 4, {1, 4, 9, 9}, {4, 4, 1, 1}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, 1)});
    /* gradcheck on 5x5 images: 16 channels of 9x9 take 3600 inputs times 113k products */
    check(&(spec){"test_simple_conv2d_m4", CONV2D, 4, {1, 16, 9, 9}, {16, 16, 3, 3}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, 1),
                  .atol = 1e-5, .gx = {1, 16, 5, 5}});
    /* gradcheck on 8x8 images (32x32: 16k inputs times 262k products) */
    check(&(spec){"test_simple_conv2d_1x1_m4", CONV2D, 4, {1, 16, 32, 32}, {16, 16, 1, 1}, .bias = false,
                  .co = CO(1, 1, 0, 0, 1, 1, 1), .gx = {1, 16, 8, 8}});
}

Test(tinygrad_conv, test_nested_conv2d)
{
    /* gradcheck with 8 channels: 32 make 21k inputs times 680k products */
    check(&(spec){"test_nested_conv2d", CONV2D, 4, {1, 32, 9, 9}, {32, 32, 3, 3}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, 1),
                  .chain = 2, .gx = {1, 8, 9, 9}, .gw = {8, 8, 3, 3}});
}

Test(tinygrad_conv, test_simple_conv2d_nhwc)
{
    /* gradcheck on 5x5 images (2600 inputs times 88k products at 9x9) */
    check(&(spec){"test_simple_conv2d_nhwc", CONV2D, 4, {2, 9, 9, 10}, {3, 3, 10, 20}, .bias = false,
                  .co = CO(1, 1, 0, 0, 1, 1, 1), .nhwc = true, .atol = 1e-5, .gx = {1, 5, 5, 10}});
}

/* tinygrad's _test_conv2d: x [bs, cin, 5, 7], w [cout, cin/groups, H, W] */
static void conv2d_sweep(int bs, int cin, int cout)
{
    for (int H = 2; H <= 3; H++)
        for (int W = 1; W <= 5; W += 2)
            for (int g = 1; g <= 3; g += 2) {
                if (g == 3 && !(cin == 3 && cout == 6 && H == 3 && W == 3)) continue;
                char from[96];
                snprintf(from, sizeof from, "_test_conv2d bs %d cin %d cout %d H %d W %d groups %d", bs, cin, cout, H,
                         W, g);
                check(&(spec){from, CONV2D, 4, {bs, cin, 5, 7}, {cout, cin / g, H, W}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, g)});
            }
}

Test(tinygrad_conv, test_conv2d) { conv2d_sweep(1, 3, 6); }
Test(tinygrad_conv, test_conv2d_bs_4_cin_3) { conv2d_sweep(4, 3, 2); }
Test(tinygrad_conv, test_conv2d_bs_1_cin_1) { conv2d_sweep(1, 1, 6); }
Test(tinygrad_conv, test_conv2d_bs_4_cin_1) { conv2d_sweep(4, 1, 6); }

Test(tinygrad_conv, test_large_input_conv2d)
{
    /* gradcheck on 8x8 images: 64x64 takes 66k inputs times 3.6M products */
    check(&(spec){"test_large_input_conv2d", CONV2D, 4, {4, 16, 64, 64}, {6, 16, 5, 2}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, 1),
                  .atol = 1e-4, .gx = {1, 16, 8, 8}});
}

Test(tinygrad_conv, test_grouped_conv2d)
{
    check(&(spec){"test_simple_grouped_conv2d", CONV2D, 4, {1, 4, 1, 1}, {2, 2, 1, 1}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, 2)});
    check(&(spec){"test_medium_grouped_conv2d", CONV2D, 4, {1, 4, 1, 1}, {4, 2, 1, 1}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, 2)});
    /* gradcheck on 4x4 images (32 channels of 32x32: 33k inputs times 33k products) */
    check(&(spec){"test_depthwise_conv2d", CONV2D, 4, {1, 32, 32, 32}, {32, 1, 1, 1}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, 32),
                  .gx = {1, 32, 4, 4}});
    check(&(spec){"test_grouped_conv2d", CONV2D, 4, {4, 15, 5, 5}, {35, 3, 3, 3}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, 5)});
    check(&(spec){"test_fancy_conv2d", CONV2D, 4, {2, 3, 11, 28}, {3, 1, 3, 3}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, 3)});
}

Test(tinygrad_conv, test_strided_conv2d)
{
    check(&(spec){"test_strided_conv2d_simple", CONV2D, 4, {2, 1, 5, 1}, {1, 1, 3, 1}, .bias = false, .co = CO(2, 2, 0, 0, 1, 1, 1)});
    check(&(spec){"test_strided_conv2d stride 2", CONV2D, 4, {4, 3, 11, 28}, {4, 3, 3, 3}, .bias = false,
                  .co = CO(2, 2, 0, 0, 1, 1, 1)});
    check(&(spec){"test_strided_conv2d stride (2,1)", CONV2D, 4, {4, 3, 11, 28}, {4, 3, 3, 3}, .bias = false,
                  .co = CO(2, 1, 0, 0, 1, 1, 1)});
}

/* tinygrad's padding=-1 is a crop: x[:, :, 1:-1, 1:-1] (tg_pad's negative pads) */
Test(tinygrad_conv, test_negative_padding_conv2d)
{
    check(&(spec){"test_negative_padding_conv2d -1", CONV2D, 4, {1, 1, 10, 10}, {1, 1, 3, 3}, .bias = false,
                  .co = CO(1, 1, 0, 0, 1, 1, 1), .pad = {-1, -1, -1, -1}});
    check(&(spec){"test_negative_padding_conv2d (-1,0,-1,0)", CONV2D, 4, {1, 1, 10, 10}, {1, 1, 3, 3}, .bias = false,
                  .co = CO(1, 1, 0, 0, 1, 1, 1), .pad = {-1, 0, -1, 0}});
}

Test(tinygrad_conv, test_simple_padding_conv2d)
{
    /* tinygrad's vals: x [[[[2, 3]]]], w [[[[1]]]], padding (1,1,1,1) */
    tg_tensor *x = mk(T, 4, (int[]){1, 1, 1, 2}, (tg_real[]){2, 3}), *w = mk(T, 4, (int[]){1, 1, 1, 1}, (tg_real[]){1});
    x->requires_grad = w->requires_grad = true;
    tg_tensor *y = tg_conv2d(T, x, w, NULL, &(tg_conv_opts)CO(1, 1, 1, 1, 1, 1, 1));
    cr_assert(y && y->shape[2] == 3 && y->shape[3] == 4, "%s", tg_tape_error(T));
    static const tg_real want[12] = {0, 0, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0};
    for (int i = 0; i < 12; i++) cr_assert(y->data[i] == want[i], "out[%d] = %g", i, (double)y->data[i]);
    cr_assert_eq(tg_backward(T, tg_sum(T, y)), 0);
    cr_assert(x->grad[0] == 1 && x->grad[1] == 1 && w->grad[0] == 5);  /* the grads of sum: w, and x's sum */
    check(&(spec){"test_simple_padding_conv2d", CONV2D, 4, {1, 1, 1, 2}, {1, 1, 1, 1}, .bias = false, .co = CO(1, 1, 1, 1, 1, 1, 1)});
}

/* tinygrad's asymmetric padding (left, right, top, bottom) is F.pad then conv2d on the torch side */
Test(tinygrad_conv, test_asymmetric_padding_conv2d)
{
    static const int ps[3][4] = {{0, 1, 0, 1}, {2, 1, 2, 1}, {2, 0, 2, 1}};
    for (int k = 0; k < 3; k++)
        for (int n = 3; n <= 4; n++) {
            char from[64];
            snprintf(from, sizeof from, "test_asymmetric_padding_conv2d p %d n %d", k, n);
            spec s = {from, CONV2D, 4, {1, 1, n, n}, {1, 1, 2, 2}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, 1)};
            memcpy(s.pad, ps[k], sizeof s.pad);
            check(&s);
        }
}

Test(tinygrad_conv, test_padded_conv2d)
{
    check(&(spec){"test_padded_conv2d_p21", CONV2D, 4, {4, 3, 11, 28}, {4, 3, 3, 3}, .bias = false, .co = CO(1, 1, 2, 1, 1, 1, 1)});
    check(&(spec){"test_padded_conv2d_p22", CONV2D, 4, {4, 3, 11, 28}, {4, 3, 3, 3}, .bias = false, .co = CO(1, 1, 2, 2, 1, 1, 1)});
    check(&(spec){"test_padded_conv2d_1x1", CONV2D, 4, {4, 3, 11, 28}, {4, 3, 1, 1}, .bias = false, .co = CO(1, 1, 2, 2, 1, 1, 1)});
    check(&(spec){"test_padded_conv2d_bs1", CONV2D, 4, {1, 3, 11, 28}, {4, 3, 3, 3}, .bias = false, .co = CO(1, 1, 1, 1, 1, 1, 1)});
}

Test(tinygrad_conv, test_dilated_conv2d)
{
    check(&(spec){"test_dilated_conv2d 2", CONV2D, 4, {4, 3, 11, 28}, {4, 3, 3, 3}, .bias = false, .co = CO(1, 1, 0, 0, 2, 2, 1)});
    check(&(spec){"test_dilated_conv2d (2,1)", CONV2D, 4, {4, 3, 11, 28}, {4, 3, 3, 3}, .bias = false, .co = CO(1, 1, 0, 0, 2, 1, 1)});
}

Test(tinygrad_conv, test_conv1d)
{
    for (int bs = 1; bs <= 8; bs += 7)
        for (int cin = 1; cin <= 3; cin += 2)
            for (int H = 1; H <= 5; H += H == 2 ? 3 : 1)
                for (int g = 1; g <= 3; g += 2) {
                    if (g == 3 && !(cin == 3 && H == 5)) continue;
                    char from[64];
                    snprintf(from, sizeof from, "test_conv1d bs %d cin %d H %d groups %d", bs, cin, H, g);
                    check(&(spec){from, CONV1D, 3, {bs, cin, 11}, {6, cin / g, H}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, g)});
                }
}

Test(tinygrad_conv, test_padding_conv1d)
{
    /* tinygrad pads (1,1) with F.pad on the torch side: conv1d's own padding 1 */
    check(&(spec){"test_simple_padding_conv1d", CONV1D, 3, {6, 2, 11}, {6, 2, 5}, .bias = false, .co = CO(1, 1, 1, 1, 1, 1, 1)});
    check(&(spec){"test_strided_conv1d_simple", CONV1D, 3, {2, 1, 5}, {1, 1, 3}, .bias = false, .co = CO(2, 2, 0, 0, 1, 1, 1)});
    static const int ps[3][2] = {{0, 1}, {2, 1}, {2, 0}};
    for (int k = 0; k < 3; k++)
        for (int n = 3; n <= 4; n++) {
            char from[64];
            snprintf(from, sizeof from, "test_asymmetric_padding_conv1d p %d n %d", k, n);
            check(&(spec){from, CONV1D, 3, {1, 1, n}, {1, 1, 2}, .bias = false, .co = CO(1, 1, 0, 0, 1, 1, 1), .pad = {ps[k][0], ps[k][1]}});
        }
}

/* ---- transposed convolution ---------------------------------------------- */

Test(tinygrad_conv, test_conv_transpose2d)
{
    check(&(spec){"test_simple_conv_transpose2d", CONVT2D, 4, {2, 4, 9, 9}, {4, 4, 3, 3}, .bias = false,
                  .co = COT(1, 1, 0, 0, 1, 1, 1, 0, 0)});
    check(&(spec){"test_bias_conv_transpose2d", CONVT2D, 4, {2, 4, 9, 9}, {4, 4, 3, 3}, .bias = true,
                  .co = COT(1, 1, 0, 0, 1, 1, 1, 0, 0)});
    check(&(spec){"test_grouped_conv_transpose2d", CONVT2D, 4, {2, 4, 9, 9}, {4, 4, 3, 3}, .bias = false,
                  .co = COT(1, 1, 0, 0, 1, 1, 2, 0, 0)});
    static const int pads[5][2] = {{1, 2}, {2, 1}, {2, 2}, {1, 1}, {0, 0}};
    for (int k = 0; k < 5; k++)
        check(&(spec){"test_padded_conv_transpose2d", CONVT2D, 4, {2, 4, 9, 9}, {4, 4, 3, 3}, .bias = false,
                      .co = COT(1, 1, pads[k][0], pads[k][1], 1, 1, 1, 0, 0)});
    static const int dils[4][2] = {{1, 2}, {2, 1}, {2, 2}, {1, 1}};
    for (int k = 0; k < 4; k++)
        check(&(spec){"test_dilated_conv_transpose2d", CONVT2D, 4, {2, 4, 9, 9}, {4, 4, 3, 3}, .bias = false,
                      .co = COT(1, 1, 0, 0, dils[k][0], dils[k][1], 1, 0, 0)});
    static const int strides[3][2] = {{2, 1}, {1, 2}, {1, 1}};
    for (int k = 0; k < 3; k++)
        check(&(spec){"test_strided_conv_transpose2d", CONVT2D, 4, {2, 4, 4, 5}, {4, 4, 3, 3}, .bias = false,
                      .co = COT(strides[k][0], strides[k][1], 0, 0, 1, 1, 1, 0, 0), .atol = 1e-5});
    check(&(spec){"test_output_padded_conv_transpose2d op (1,1) stride (2,3)", CONVT2D, 4, {2, 4, 6, 5}, {4, 4, 3, 3},
                  .bias = true, .co = COT(2, 3, 0, 0, 1, 1, 1, 1, 1)});
    check(&(spec){"test_output_padded_conv_transpose2d op (2,1) stride (3,2)", CONVT2D, 4, {2, 4, 6, 5}, {4, 4, 3, 3},
                  .bias = true, .co = COT(3, 2, 0, 0, 1, 1, 1, 2, 1)});
}

/* ---- max pooling ------------------------------------------------------------ */

/* tinygrad's kernel sizes: an int k is (k, k) */
static const int KSZ[7][2] = {{2, 2}, {3, 3}, {2, 2}, {3, 3}, {3, 2}, {5, 5}, {5, 1}};
static const int PADS[3][2] = {{1, 1}, {1, 0}, {0, 1}};

Test(tinygrad_conv, test_max_pool2d)
{
    check(&(spec){"test_max_pool2d_simple", MAXPOOL, 4, {1, 1, 2, 3}, .po = PO(2, 2, 0, 0, 0, 0, 1, 1, false, true)});
    for (int k = 0; k < 7; k++)
        check(&(spec){"test_max_pool2d", MAXPOOL, 4, {32, 2, 11, 28},
                      .po = PO(KSZ[k][0], KSZ[k][1], 0, 0, 0, 0, 1, 1, false, true)});
}

Test(tinygrad_conv, test_max_pool2d_padding)
{
    for (int k = 0; k < 5; k++)
        for (int p = 0; p < 3; p++)
            check(&(spec){"test_max_pool2d_padding", MAXPOOL, 4, {4, 2, 11, 28},
                          .po = PO(KSZ[k][0], KSZ[k][1], 0, 0, PADS[p][0], PADS[p][1], 1, 1, false, true)});
}

/* torch's side: F.pad(x, p, value=-inf), then max_pool2d 5x5 */
Test(tinygrad_conv, test_max_pool2d_asymmetric_padding)
{
    static const int ps[3][4] = {{0, 1, 0, 1}, {2, 1, 2, 1}, {2, 0, 2, 1}};
    for (int k = 0; k < 3; k++) {
        /* gradcheck on 21 rows: 111 make 6216 inputs, each a pad and a pool of the image */
        spec s = {"test_max_pool2d_asymmetric_padding", MAXPOOL, 4, {4, 2, 111, 28},
                  .po = PO(5, 5, 0, 0, 0, 0, 1, 1, false, true), .pad_value = -INFINITY, .gx = {1, 2, 21, 28}};
        memcpy(s.pad, ps[k], sizeof s.pad);
        check(&s);
    }
}

Test(tinygrad_conv, test_max_pool2d_strides)
{
    static const int big[4][2] = {{2, 3}, {3, 2}, {2, 2}, {3, 3}};
    for (int k = 0; k < 4; k++)
        check(&(spec){"test_max_pool2d_bigger_stride", MAXPOOL, 4, {4, 2, 11, 28},
                      .po = PO(2, 2, big[k][0], big[k][1], 0, 0, 1, 1, false, true)});
    static const int st[5][2] = {{2, 3}, {3, 2}, {2, 2}, {3, 3}, {4, 4}}, dil[5][2] = {{3, 2}, {2, 3}, {2, 2}, {3, 3}, {6, 6}};
    for (int k = 0; k < 5; k++)
        check(&(spec){"test_max_pool2d_bigger_stride_dilation", MAXPOOL, 4, {4, 2, 11, 28},
                      .po = PO(2, 2, st[k][0], st[k][1], 0, 0, dil[k][0], dil[k][1], false, true)});
    check(&(spec){"test_max_pool2d_unit_stride", MAXPOOL, 4, {3, 2, 17, 14}, .po = PO(5, 5, 1, 1, 0, 0, 1, 1, false, true)});
    for (int k = 0; k < 4; k++)
        check(&(spec){"test_max_pool2d_smaller_stride", MAXPOOL, 4, {3, 2, 17, 14},
                      .po = PO(5, 5, big[k][0], big[k][1], 0, 0, 1, 1, false, true)});
    for (int k = 0; k < 4; k++)  /* dilation (2,3), (3,2), 2, 3 */
        check(&(spec){"test_max_pool2d_dilation", MAXPOOL, 4, {3, 2, 17, 14},
                      .po = PO(5, 5, 0, 0, 0, 0, big[k][0], big[k][1], false, true)});
}

/* kernel (3,3), 3, (3,2), 4 with padding 1, stride 3, ceil_mode */
static const int CEIL_KSZ[4][2] = {{3, 3}, {3, 3}, {3, 2}, {4, 4}};

Test(tinygrad_conv, test_max_pool2d_ceil_mode)
{
    for (int k = 0; k < 4; k++)
        check(&(spec){"test_max_pool2d_ceil_mode", MAXPOOL, 4, {1, 1, 6, 6},
                      .po = PO(CEIL_KSZ[k][0], CEIL_KSZ[k][1], 3, 3, 1, 1, 1, 1, true, true)});
    check(&(spec){"test_max_pool2d_ceil_mode_output_size_reduce_by_one", MAXPOOL, 4, {1, 1, 5, 5},
                  .po = PO(3, 3, 3, 3, 1, 1, 1, 1, true, true)});
}

/* ---- return_indices and max_unpool2d ---------------------------------------- */

/* F.max_pool2d's return_indices: each window's first maximum (a NaN wins) as
 * h * W + w of its plane, in [N, C, Ho, Wo] order */
static int64_t *pool_index_ref(const tg_tensor *x, const tg_pool_opts *o, size_t *n)
{
    int H = x->shape[2], W = x->shape[3], s[2], out[2];
    for (int i = 0; i < 2; i++) {
        s[i] = o->stride[i] ? o->stride[i] : o->kernel[i];
        out[i] = pool_size(x->shape[2 + i], o->kernel[i], s[i], o->padding[i], o->dilation[i], o->ceil_mode);
    }
    size_t planes = (size_t)x->shape[0] * x->shape[1];
    *n = planes * out[0] * out[1];
    int64_t *ix = malloc(*n * sizeof *ix + 1), *p = ix;
    cr_assert_not_null(ix);
    for (size_t pl = 0; pl < planes; pl++)
        for (int i = 0; i < out[0]; i++)
            for (int j = 0; j < out[1]; j++) {
                double m = -INFINITY;
                int64_t at = -1;
                for (int a = 0; a < o->kernel[0]; a++)
                    for (int e = 0; e < o->kernel[1]; e++) {
                        int h = i * s[0] - o->padding[0] + a * o->dilation[0];
                        int v = j * s[1] - o->padding[1] + e * o->dilation[1];
                        if (h < 0 || h >= H || v < 0 || v >= W) continue;
                        double xv = x->data[pl * H * W + (size_t)h * W + v];
                        if (at < 0 || xv > m || isnan(xv)) m = xv, at = (int64_t)h * W + v;
                    }
                *p++ = at;
            }
    return ix;
}

/* the indices of max_pool2d_with_indices(x, o): the reference's, exactly */
static tg_tensor *check_indices(const char *from, tg_tensor *x, const tg_pool_opts *o)
{
    tg_tensor *ix, *y = tg_max_pool2d_with_indices(T, x, o, &ix);
    cr_assert(y && ix, "%s: %s", from, tg_tape_error(T));
    size_t n;
    int64_t *want = pool_index_ref(x, o, &n);
    cr_assert_eq(ix->size, n, "%s", from);
    const int64_t *got = tg_data(ix, TG_I64);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s: indices[%zu] = %lld, want %lld", from, i, (long long)got[i], (long long)want[i]);
    free(want);
    return ix;
}

Test(tinygrad_conv, test_max_pool2d_return_indices)
{
    static const struct {
        const char *from;
        int x[4];
        tg_pool_opts o;
    } cases[] = {
        {"batch and multi-channel", {2, 3, 6, 6}, PO(2, 2, 0, 0, 0, 0, 1, 1, false, true)},
        {"dilation", {1, 1, 10, 10}, PO(3, 2, 0, 0, 0, 0, 2, 3, false, true)},
        {"padding", {1, 1, 5, 5}, PO(3, 3, 0, 0, 1, 1, 1, 1, false, true)},
        {"ceil mode padding", {1, 1, 7, 7}, PO(2, 2, 2, 2, 0, 0, 1, 1, true, true)},
        {"global maxpool", {1, 1, 12, 13}, PO(12, 13, 0, 0, 0, 0, 1, 1, false, true)},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tg_tensor *x = tu_rand(&R, -2, 2, 4, cases[k].x);
        check_indices(cases[k].from, x, &cases[k].o);
        tg_tensor_free(x);
    }
    /* multiple identical values in same window and overlapping windows: Tensor.ones(1,1,6,6) */
    tg_tensor *ones = tg_tensor_alloc(4, (int[]){1, 1, 6, 6});
    tg_tensor_fill(ones, 1);
    check_indices("identical values", ones, &(tg_pool_opts)PO(3, 3, 1, 1, 0, 0, 1, 1, false, true));
    /* overlapping max indices: [1, 2, 1, 2, 1, 2] in each row */
    for (size_t i = 0; i < ones->size; i++) ones->data[i] = (tg_real)(1 + i % 2);
    tg_tensor *ix = check_indices("overlapping max indices", ones, &(tg_pool_opts)PO(2, 2, 1, 1, 0, 0, 1, 1, false, true));
    cr_assert_eq(((const int64_t *)tg_data(ix, TG_I64))[0], 1, "the first 2 of the window [1 2; 1 2]");
    tg_tensor_free(ones);
}

/* max_unpool2d(*max_pool2d(x, return_indices=True)): each window's maximum
 * back at its place, zeros elsewhere */
static void check_unpool(const char *from, const tg_tensor *x, const tg_pool_opts *o, const int *size)
{
    tg_tensor *ix = check_indices(from, (tg_tensor *)x, o), *y = tg_max_pool2d(T, (tg_tensor *)x, o);
    tg_tensor *u = tg_max_unpool2d(T, y, ix, o, size);
    cr_assert_not_null(u, "%s: %s", from, tg_tape_error(T));
    int Ho = size ? size[0] : (y->shape[2] - 1) * (o->stride[0] ? o->stride[0] : o->kernel[0]) - 2 * o->padding[0] + o->kernel[0];
    int Wo = size ? size[1] : (y->shape[3] - 1) * (o->stride[1] ? o->stride[1] : o->kernel[1]) - 2 * o->padding[1] + o->kernel[1];
    cr_assert(u->shape[0] == x->shape[0] && u->shape[1] == x->shape[1] && u->shape[2] == Ho && u->shape[3] == Wo,
              "%s: output [%d,%d,%d,%d]", from, u->shape[0], u->shape[1], u->shape[2], u->shape[3]);
    size_t P = (size_t)Ho * Wo, Q = (size_t)y->shape[2] * y->shape[3];
    double *want = calloc(u->size + 1, sizeof *want);
    cr_assert_not_null(want);
    const int64_t *iv = tg_data(ix, TG_I64);
    for (size_t i = 0; i < y->size; i++) want[i / Q * P + (size_t)iv[i]] = y->data[i];
    for (size_t i = 0; i < u->size; i++)
        cr_assert(u->data[i] == want[i] || (isnan(u->data[i]) && isnan(want[i])), "%s: out[%zu] = %g, want %g", from,
                  i, (double)u->data[i], want[i]);
    free(want);
}

static tg_tensor *unpool_chain(tg_tape *t, tg_tensor **in, void *ctx)
{
    const tg_pool_opts *o = ctx;
    tg_tensor *ix, *y = tg_max_pool2d_with_indices(t, in[0], o, &ix);
    return tg_max_unpool2d(t, y, ix, o, (int[]){7, 6});
}

Test(tinygrad_conv, test_max_unpool2d)
{
    tg_pool_opts o = PO(5, 5, 6, 5, 0, 0, 1, 1, false, true);
    tg_tensor *x = tu_rand(&R, -2, 2, 4, (int[]){8, 3, 50, 50});
    check_unpool("test_max_unpool2d k5 s(6,5)", x, &o, NULL);
    tg_tensor_free(x);
    o = (tg_pool_opts)PO(3, 3, 6, 7, 1, 1, 1, 1, false, true);
    x = tu_rand(&R, -2, 2, 4, (int[]){8, 3, 30, 30});
    check_unpool("test_max_unpool2d k3 s(6,7) p1 output_size (30,30)", x, &o, (int[]){30, 30});
    tg_tensor_free(x);
    /* tinygrad's output_size=(99,99,7,6): the batch and channel sizes are ignored, tapegrad takes (Ho, Wo) */
    o = (tg_pool_opts)PO(2, 2, 0, 0, 0, 0, 1, 1, false, true);
    x = tu_rand(&R, -2, 2, 4, (int[]){1, 3, 7, 6});
    for (size_t i = 0; i < x->size; i++)  /* a grid 0.01 apart: no near-ties for the gradcheck */
        x->data[i] = (tg_real)(0.01 * (double)((i * 37) % x->size) - 0.5);
    check_unpool("test_max_unpool2d output_size (7,6)", x, &o, (int[]){7, 6});
    tg_gradcheck_result r = tg_gradcheck(unpool_chain, &o, &x, 1, NULL);
    cr_assert(r.ok, "test_max_unpool2d: %s", tg_error());
    tg_tensor_free(x);
}

Test(tinygrad_conv, test_max_unpool2d_inf)
{
    tg_tensor *x = tg_tensor_from(T, (tg_real[]){INFINITY, -INFINITY, NAN, 1, 2, 3}, 4, (int[]){1, 1, 2, 3});
    tg_pool_opts o = PO(2, 2, 0, 0, 0, 0, 1, 1, false, true);
    check_unpool("test_max_unpool2d_inf", x, &o, NULL);
    tg_tensor *ix, *y = tg_max_pool2d_with_indices(T, x, &o, &ix), *u = tg_max_unpool2d(T, y, ix, &o, NULL);
    cr_assert(u && u->size == 4 && isinf(u->data[0]) && u->data[0] > 0 && u->data[1] == 0 && u->data[3] == 0,
              "[inf, 0; 0, 0]: %s", tg_tape_error(T));
}

/* ---- average pooling -------------------------------------------------------- */

Test(tinygrad_conv, test_avg_pool2d)
{
    static const int ksz[5][2] = {{2, 2}, {3, 3}, {3, 2}, {5, 5}, {5, 1}};
    for (int k = 0; k < 5; k++)
        check(&(spec){"test_avg_pool2d", AVGPOOL, 4, {32, 2, 11, 28},
                      .po = PO(ksz[k][0], ksz[k][1], 0, 0, 0, 0, 1, 1, false, true), .rtol = 1e-5});
    check(&(spec){"test_avg_pool2d (pull 7581)", AVGPOOL, 4, {1, 1, 8, 8}, .po = PO(1, 2, 5, 1, 0, 1, 1, 1, false, true),
                  .rtol = 1e-5});
    check(&(spec){"test_global_avg_pool2d", AVGPOOL, 4, {32, 2, 11, 28}, .po = PO(11, 28, 0, 0, 0, 0, 1, 1, false, true),
                  .rtol = 1e-5});
}

Test(tinygrad_conv, test_avg_pool2d_padding)
{
    for (int k = 0; k < 5; k++) {
        for (int p = 0; p < 3; p++)
            check(&(spec){"test_avg_pool2d_padding", AVGPOOL, 4, {32, 2, 11, 28},
                          .po = PO(KSZ[k][0], KSZ[k][1], 0, 0, PADS[p][0], PADS[p][1], 1, 1, false, true), .rtol = 1e-5});
        check(&(spec){"test_avg_pool2d_padding_not_counted", AVGPOOL, 4, {32, 2, 11, 28},
                      .po = PO(KSZ[k][0], KSZ[k][1], 0, 0, 1, 1, 1, 1, false, false), .rtol = 1e-5});
    }
    /* tinygrad's test_avg_pool2d_asymmetric_padding loops over paddings but pools with padding=1 each time */
    check(&(spec){"test_avg_pool2d_asymmetric_padding", AVGPOOL, 4, {32, 2, 11, 28},
                  .po = PO(5, 5, 0, 0, 1, 1, 1, 1, false, true), .rtol = 1e-5});
}

Test(tinygrad_conv, test_avg_pool2d_ceil_mode)
{
    for (int cip = 1; cip >= 0; cip--)
        for (int k = 0; k < 4; k++)
            check(&(spec){cip ? "test_avg_pool2d_ceil_mode" : "test_avg_pool2d_ceil_mode_padding_not_counted", AVGPOOL,
                          4, {1, 1, 6, 6}, .po = PO(CEIL_KSZ[k][0], CEIL_KSZ[k][1], 3, 3, 1, 1, 1, 1, true, cip),
                          .rtol = 1e-5});
    check(&(spec){"test_avg_pool2d_ceil_mode_output_size_reduce_by_one", AVGPOOL, 4, {1, 1, 5, 5},
                  .po = PO(3, 3, 3, 3, 1, 1, 1, 1, true, false)});
    check(&(spec){"test_avg_pool2d_ceil_mode_include_pad_output_size_reduce_by_one", AVGPOOL, 4, {1, 1, 5, 5},
                  .po = PO(3, 3, 3, 3, 1, 1, 1, 1, true, true)});
}

/* ---- interpolate ------------------------------------------------------------ */

/* tinygrad's 1-D mode="linear" on [2, 3, L]: bilinear on [2, 3, 1, L] (a height of 1 maps to itself) */
Test(tinygrad_conv, test_interpolate_linear)
{
    static const int sz[2][2] = {{52, 29}, {29, 52}};
    for (int ac = 0; ac <= 1; ac++)
        for (int k = 0; k < 2; k++)
            check(&(spec){ac ? "test_interpolate_linear_corners_aligned" : "test_interpolate_linear", INTERP, 4,
                          {2, 3, 1, sz[k][0]}, .io = {{1, sz[k][1]}, {0, 0}, TG_INTERP_BILINEAR, ac}});
}

Test(tinygrad_conv, test_interpolate_nearest)
{
    static const int sz1[2][2] = {{13, 9}, {9, 13}};
    for (int k = 0; k < 2; k++)  /* 1-D, as [2, 3, 1, L] */
        check(&(spec){"test_interpolate_nearest 1-D", INTERP, 4, {2, 3, 1, sz1[k][0]},
                      .io = {{1, sz1[k][1]}, {0, 0}, TG_INTERP_NEAREST, false}});
    static const int sz2[3][4] = {{13, 10, 9, 11}, {13, 9, 11, 10}, {9, 11, 10, 13}};
    for (int k = 0; k < 3; k++)
        check(&(spec){"test_interpolate_nearest", INTERP, 4, {2, 3, sz2[k][0], sz2[k][1]},
                      .io = {{sz2[k][2], sz2[k][3]}, {0, 0}, TG_INTERP_NEAREST, false}});
}

Test(tinygrad_conv, test_interpolate_bilinear)
{
    static const int sz[3][4] = {{12, 20, 9, 31}, {12, 9, 31, 20}, {9, 31, 20, 12}};
    for (int ac = 0; ac <= 1; ac++)
        for (int k = 0; k < 3; k++)
            check(&(spec){ac ? "test_interpolate_bilinear_corners_aligned" : "test_interpolate_bilinear", INTERP, 4,
                          {2, 3, sz[k][0], sz[k][1]}, .io = {{sz[k][2], sz[k][3]}, {0, 0}, TG_INTERP_BILINEAR, ac},
                          .atol = 1e-4});
}

/* ---- what tapegrad refuses ------------------------------------------------- */

Test(tinygrad_conv, test_conv2d_errors)
{
    tg_tensor *x = tg_tensor_zeros(T, 4, (int[]){1, 1, 6, 7}), *w = tg_tensor_zeros(T, 4, (int[]){6, 1, 3, 3});
    /* kernel size cannot be larger than input size: dilation 3 spans 7 rows of 6 */
    assert_fails(T, tg_conv2d(T, x, w, NULL, &(tg_conv_opts)CO(1, 1, 0, 0, 3, 3, 1)), "tg_conv2d", "give no output");
    tg_tensor *x2 = tg_tensor_zeros(T, 4, (int[]){2, 16, 2, 2}), *w2 = tg_tensor_zeros(T, 4, (int[]){32, 16, 3, 3});
    assert_fails(T, tg_conv2d(T, x2, w2, NULL, NULL), "tg_conv2d", "[2,16,2,2]", "give no output");
    /* tinygrad's padding=-1 (a crop; test_negative_padding_conv2d ports it through tg_pad) */
    assert_fails(T, tg_conv2d(T, tg_tensor_zeros(T, 4, (int[]){1, 1, 10, 10}), tg_tensor_zeros(T, 4, (int[]){1, 1, 3, 3}),
                              NULL, &(tg_conv_opts)CO(1, 1, -1, -1, 1, 1, 1)),
                 "tg_conv2d", "padding [-1,-1] >= 0");
    /* conv3d and conv_transpose3d (test_simple_conv3d, test_padded_conv3d, test_simple_conv_transpose3d):
     * no 3-D convolution, a 5-D input is refused */
    tg_tensor *x5 = tg_tensor_zeros(T, 5, (int[]){1, 4, 5, 5, 5}), *w5 = tg_tensor_zeros(T, 5, (int[]){4, 4, 3, 3, 3});
    assert_fails(T, tg_conv2d(T, x5, w5, NULL, NULL), "tg_conv2d", "input [1,4,5,5,5]");
    assert_fails(T, tg_conv_transpose2d(T, x5, w5, NULL, NULL), "tg_conv_transpose2d", "input [1,4,5,5,5]");
    /* tinygrad's padding=(1,1,1) (three numbers) has no C form: the pairs are fixed in tg_conv_opts */
}

Test(tinygrad_conv, test_pool_refusals)
{
    /* test_avg_pool3d: no 3-D pooling */
    tg_tensor *x5 = tg_tensor_zeros(T, 5, (int[]){1, 1, 16, 16, 16});
    tg_pool_opts o = PO(8, 8, 5, 5, 1, 1, 1, 1, false, false);
    assert_fails(T, tg_avg_pool2d(T, x5, &o), "tg_avg_pool2d", "input [1,1,16,16,16]");
    assert_fails(T, tg_max_pool2d(T, x5, &o), "tg_max_pool2d", "input [1,1,16,16,16]");
    /* padding beyond half the kernel (PyTorch's rule, which tinygrad's (1,1,1) case also trips) */
    tg_tensor *x = tg_tensor_zeros(T, 4, (int[]){4, 2, 11, 28});
    o = (tg_pool_opts)PO(2, 2, 0, 0, 2, 1, 1, 1, false, true);
    assert_fails(T, tg_max_pool2d(T, x, &o), "tg_max_pool2d", "padding 2 must be at most half the kernel 2");
    assert_fails(T, tg_avg_pool2d(T, x, &o), "tg_avg_pool2d", "padding 2 must be at most half the kernel 2");
}

Test(tinygrad_conv, test_interpolate_refusals)
{
    /* a 3-D input: PyTorch's [N, C, L], ported above as [N, C, 1, L] */
    tg_interp_opts o = {{1, 29}, {0, 0}, TG_INTERP_BILINEAR, false};
    assert_fails(T, tg_interpolate(T, tg_tensor_zeros(T, 3, (int[]){2, 3, 52}), &o), "tg_interpolate", "[2,3,52]",
                 "[N, C, L]");
    /* test_interpolate_trilinear(_corners_aligned), test_interpolate_nearest's 3-D case: a 5-D input */
    assert_fails(T, tg_interpolate(T, tg_tensor_zeros(T, 5, (int[]){2, 3, 5, 2, 8}), &o), "tg_interpolate",
                 "[2,3,5,2,8]");
    /* test_interpolate_nearest_exact: no such mode */
    o.mode = (tg_interp_mode)2;
    assert_fails(T, tg_interpolate(T, tg_tensor_zeros(T, 4, (int[]){2, 3, 13, 10}), &o), "tg_interpolate", "mode 2");
}
