/* tapegrad: the shape checks and output sizes of the convolutions (conv_geom.h). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "conv_geom.h"
#include "../../engine/tape.h"
#include "../../kernels/blas.h"
#include "../../kernels/gemm_half.h"
#include "../internal.h"

/* "[a,b]" of the first nd entries of v, into s [32] */
static const char *pair_str(const int *v, int nd, char *s)
{
    if (nd == 1) snprintf(s, 32, "%d", v[0]);
    else snprintf(s, 32, "[%d,%d]", v[0], v[1]);
    return s;
}

bool tg_conv_geom_make(tg_tape *t, const char *op, int nd, bool transposed, const tg_tensor *x,
                       const tg_tensor *w, const tg_tensor *b, const tg_conv_opts *opts, tg_conv_geom *g)
{
    TG_DISPATCH_OTHER(tg_conv_geom_make, x, (t, op, nd, transposed, x, w, b, opts, g));
    static const tg_conv_opts dflt = TG_CONV_OPTS_DEFAULT;
    const tg_conv_opts *o = opts ? opts : &dflt;
    char sx[TG_SHAPE_STR], sw[TG_SHAPE_STR], sb[TG_SHAPE_STR], s1[32], s2[32];
    const char *layout = nd == 2 ? "[N, C, H, W] or [C, H, W]" : "[N, C, L] or [C, L]";
    if (x->ndim != nd + 2 && x->ndim != nd + 1) {
        tg_fail(t, "%s: input %s must be %s", op, tg_shape_str(x, sx), layout);
        return false;
    }
    if (w->ndim != nd + 2) {
        tg_fail(t, "%s: weight %s must be %s", op, tg_shape_str(w, sw),
                transposed ? (nd == 2 ? "[C_in, C_out/groups, kh, kw]" : "[C_in, C_out/groups, k]")
                           : (nd == 2 ? "[C_out, C_in/groups, kh, kw]" : "[C_out, C_in/groups, k]"));
        return false;
    }
    const int *output_padding = o->output_padding;
    for (int i = 0; i < nd; i++) {
        if (o->stride[i] <= 0 || o->dilation[i] <= 0 || o->padding[i] < 0) {
            tg_fail(t, "%s: stride %s and dilation %s must be > 0, padding %s >= 0", op,
                    pair_str(o->stride, nd, s1), pair_str(o->dilation, nd, sb), pair_str(o->padding, nd, s2));
            return false;
        }
        if (transposed ? output_padding[i] < 0 || (output_padding[i] >= o->stride[i] &&
                                                   output_padding[i] >= o->dilation[i])
                       : output_padding[i] != 0) {
            tg_fail(t, "%s: output_padding %s must be %s (stride %s, dilation %s)", op,
                    pair_str(output_padding, nd, s1),
                    transposed ? ">= 0 and smaller than stride or dilation" : "0: it is for transposed convolutions",
                    pair_str(o->stride, nd, s2), pair_str(o->dilation, nd, sb));
            return false;
        }
    }
    int G = o->groups;
    if (G <= 0) {
        tg_fail(t, "%s: groups %d must be > 0", op, G);
        return false;
    }
    bool batched = x->ndim == nd + 2;
    int cx = x->shape[batched ? 1 : 0];
    /* conv: x has C = w[1] * G channels, out O = w[0]; transposed: x has
     * w[0] channels and out w[1] * G */
    int c_in = transposed ? w->shape[0] : w->shape[1] * G, c_out = transposed ? w->shape[1] * G : w->shape[0];
    if (cx != c_in || w->shape[0] % G != 0) {
        tg_fail(t, "%s: input %s and weight %s do not match with groups %d (%s)", op, tg_shape_str(x, sx),
                tg_shape_str(w, sw), G,
                w->shape[0] % G ? "weight's dim 0 must divide by groups"
                                : transposed ? "the input needs weight's dim 0 channels"
                                             : "the input needs groups * weight's dim 1 channels");
        return false;
    }
    if (b && (b->ndim != 1 || b->shape[0] != c_out)) {
        tg_fail(t, "%s: bias %s must be [%d] (the output's channels; weight %s)", op, tg_shape_str(b, sb), c_out,
                tg_shape_str(w, sw));
        return false;
    }
    if (cx == 0 || c_out == 0 || w->shape[2] == 0 || w->shape[nd + 1] == 0) {
        tg_fail(t, "%s: input %s and weight %s need channels and a kernel (no dim of 0 but the batch)", op,
                tg_shape_str(x, sx), tg_shape_str(w, sw));
        return false;
    }
    if (o->same && (transposed || o->stride[0] != 1 || (nd == 2 && o->stride[1] != 1))) {
        tg_fail(t, "%s: padding 'same' needs stride 1%s (stride %s)", op, transposed ? " and a forward convolution" : "",
                pair_str(o->stride, nd, s1));
        return false;
    }
    /* spatial dims: [0] height (1 for 1-D), [1] width */
    int in[2], k[2], s[2], p[2], d[2], out[2], op_[2] = {0, 0};
    int sd = x->ndim - nd;  /* the first spatial dim of x */
    for (int i = 0; i < 2; i++) {
        int j = nd == 2 ? i : i - 1;  /* opts' index; -1: the 1-D op's missing height */
        in[i] = j < 0 ? 1 : x->shape[sd + j];
        k[i] = j < 0 ? 1 : w->shape[2 + j];
        s[i] = j < 0 ? 1 : o->stride[j];
        d[i] = j < 0 ? 1 : o->dilation[j];
        p[i] = j < 0 ? 0 : o->same ? d[i] * (k[i] - 1) / 2 : o->padding[j];
        if (j >= 0 && transposed) op_[i] = output_padding[j];
        long span = (long)d[i] * (k[i] - 1) + 1;
        long n = transposed ? ((long)in[i] - 1) * s[i] - 2L * p[i] + span + op_[i]
                 : o->same ? in[i]
                           : ((long)in[i] + 2L * p[i] - span) / s[i] + 1;
        if (in[i] == 0 || n <= 0 || n > (1L << 30) || (!transposed && !o->same && in[i] + 2L * p[i] < span)) {
            tg_fail(t, "%s: input %s, weight %s, stride %s, padding %s, dilation %s give no output (a %s)", op,
                    tg_shape_str(x, sx), tg_shape_str(w, sw), pair_str(o->stride, nd, s1),
                    pair_str(o->padding, nd, s2), pair_str(o->dilation, nd, sb),
                    in[i] == 0 ? "spatial dim of 0" : "kernel larger than the padded input");
            return false;
        }
        out[i] = (int)n;
    }
    long big = (long)(transposed ? out[0] : in[0]) * (transposed ? out[1] : in[1]);
    long small = (long)(transposed ? in[0] : out[0]) * (transposed ? in[1] : out[1]);
    if (big > INT_MAX || small > INT_MAX || (long)(transposed ? c_out : c_in) / G * k[0] * k[1] > INT_MAX) {
        tg_fail(t, "%s: input %s and weight %s make a product too large for the GEMM's int sizes", op,
                tg_shape_str(x, sx), tg_shape_str(w, sw));
        return false;
    }
    /* the conv's view: C, H, W the big side (a transposed conv's output) */
    *g = (tg_conv_geom){.N = batched ? x->shape[0] : 1, .C = transposed ? c_out : c_in,
                        .H = transposed ? out[0] : in[0], .W = transposed ? out[1] : in[1],
                        .O = transposed ? c_in : c_out, .kh = k[0], .kw = k[1],
                        .Ho = transposed ? in[0] : out[0], .Wo = transposed ? in[1] : out[1],
                        .sh = s[0], .sw = s[1], .ph = p[0], .pw = p[1], .dh = d[0], .dw = d[1], .groups = G,
                        .half = TG_REAL_DTYPE == TG_F32 ? tg_tape_autocast(t) : TG_F32};
    return true;
}

void tg_conv_gemm(const tg_conv_geom *g, bool ta, bool tb, int M, int N, int K, const tg_real *A, const tg_real *B,
                  tg_real beta, tg_real *C)
{
#ifndef TAPEGRAD_DOUBLE
    if (g->half != TG_F32 && M > 0 && N > 0 &&
        tg_gemm_rounded(g->half, ta, tb, M, N, K, 1, A, ta ? M : K, B, tb ? K : N, beta, C, N))
        return;
#else
    (void)g;
#endif
    tg_gemm(ta, tb, M, N, K, 1, A, B, beta, C);
}
