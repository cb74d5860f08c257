/* tg_conv2d forward + backward against its GEMMs alone.
 *
 *   bench_conv [--reps 7] [--threads T] [--only lenet|resnet]
 *
 * Shapes: LeNet's first layer (N 64, 1 -> 6, 5x5 on 28x28) and a ResNet
 * block's (N 16, 64 -> 64, 3x3, padding 1 on 56x56). Rows per shape:
 *   conv_fwd, conv_fwd_bwd  tg_conv2d, and it with tg_backward (dx, dw, db)
 *   gemm_fwd, gemm_fwd_bwd  the same tg_gemm calls on ready columns (per
 *                           image: [O, K] @ [K, P]; backward [O, P] @ [K, P]^T
 *                           and [O, K]^T @ [O, P]): the ceiling im2col,
 *                           col2im and the bias leave out
 * GFLOP/s count 2 O K P per image for each of the three products.
 */
#include <stdio.h>
#include <string.h>

#include <tapegrad/tapegrad.h>
#include "../core/kernels/blas.h"
#include "bench_util.h"

typedef struct conv_bench {
    int N, C, H, W, O, k, pad;
    bool backward;
    tg_tape *t;
    tg_tensor *x, *w, *b;
    tg_real *seed;
    tg_real *col, *out, *dcol, *dw;  /* the GEMM rows' buffers */
    int K, P;
} conv_bench;

static int conv_step(void *p)
{
    conv_bench *c = p;
    tg_tape_reset(c->t);
    tg_conv_opts o = TG_CONV_OPTS_DEFAULT;
    o.padding[0] = o.padding[1] = c->pad;
    tg_tensor *y = tg_conv2d(c->t, c->x, c->w, c->b, &o);
    if (!y) return -1;
    return c->backward ? tg_backward_seed(c->t, y, c->seed) : 0;
}

static int gemm_step(void *p)
{
    conv_bench *c = p;
    for (int n = 0; n < c->N; n++) {
        tg_real *out = c->out + (size_t)n * c->O * c->P;
        tg_gemm(0, 0, c->O, c->P, c->K, 1, c->w->data, c->col, 0, out);
        if (!c->backward) continue;
        tg_gemm(0, 1, c->O, c->K, c->P, 1, out, c->col, 1, c->dw);
        tg_gemm(1, 0, c->K, c->P, c->O, 1, c->w->data, out, 0, c->dcol);
    }
    return 0;
}

static void fill(tg_real *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (tg_real)((double)(seed >> 8) / (1u << 24) - 0.5);
    }
}

static int run(const char *name, int N, int C, int H, int W, int O, int k, int pad, bu_plan plan)
{
    conv_bench c = {N, C, H, W, O, k, pad, false, tg_tape_new(), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0};
    int Ho = H + 2 * pad - k + 1, Wo = W + 2 * pad - k + 1;
    c.K = C * k * k;
    c.P = Ho * Wo;
    c.x = tg_tensor_alloc(4, (int[]){N, C, H, W});
    c.w = tg_tensor_alloc(4, (int[]){O, C, k, k});
    c.b = tg_tensor_alloc(1, (int[]){O});
    size_t n_out = (size_t)N * O * c.P;
    c.seed = tg_malloc(n_out * sizeof(tg_real));
    c.out = tg_malloc(n_out * sizeof(tg_real));
    c.col = tg_malloc((size_t)c.K * c.P * sizeof(tg_real));
    c.dcol = tg_malloc((size_t)c.K * c.P * sizeof(tg_real));
    c.dw = tg_malloc((size_t)O * c.K * sizeof(tg_real));
    if (!c.t || !c.x || !c.w || !c.b || !c.seed || !c.out || !c.col || !c.dcol || !c.dw) {
        fprintf(stderr, "bench_conv: out of memory for %s\n", name);
        return 1;
    }
    fill(c.x->data, c.x->size, 1), fill(c.w->data, c.w->size, 2), fill(c.b->data, c.b->size, 3);
    fill(c.seed, n_out, 4), fill(c.col, (size_t)c.K * c.P, 5);
    memset(c.dw, 0, (size_t)O * c.K * sizeof(tg_real));
    c.x->requires_grad = c.w->requires_grad = c.b->requires_grad = true;
    int rc = 0;
    double flop = 2.0 * N * O * (double)c.K * c.P;
    for (int bwd = 0; bwd < 2; bwd++) {
        c.backward = bwd;
        bu_result rc_conv = bu_measure(conv_step, &c, plan), rg = bu_measure(gemm_step, &c, plan);
        rc |= rc_conv.failed || rg.failed;
        double f = flop * (bwd ? 3 : 1);
        bu_row("bench=conv name=%s what=conv_%s N=%d C=%d HxW=%dx%d O=%d k=%d pad=%d threads=%d reps=%d ms=%.3f "
               "cpu_ms=%.3f gflops=%.2f", name, bwd ? "fwd_bwd" : "fwd", N, C, H, W, O, k, pad, tg_threads_get(),
               rc_conv.reps, rc_conv.median_ms, rc_conv.cpu_mean_ms, f / (rc_conv.median_ms * 1e-3) / 1e9);
        bu_row("bench=conv name=%s what=gemm_%s M=%d N=%d K=%d images=%d threads=%d reps=%d ms=%.3f cpu_ms=%.3f "
               "gflops=%.2f", name, bwd ? "fwd_bwd" : "fwd", O, c.P, c.K, N, tg_threads_get(), rg.reps, rg.median_ms,
               rg.cpu_mean_ms, f / (rg.median_ms * 1e-3) / 1e9);
    }
    tg_tape_free(c.t);
    tg_tensor_free(c.x), tg_tensor_free(c.w), tg_tensor_free(c.b);
    tg_free(c.seed), tg_free(c.out), tg_free(c.col), tg_free(c.dcol), tg_free(c.dw);
    return rc;
}

int main(int argc, char **argv)
{
    int reps = (int)bu_opt_long(argc, argv, "--reps", 7);
    int threads = (int)bu_opt_long(argc, argv, "--threads", 0);
    const char *only = bu_opt_str(argc, argv, "--only", "");
    if (reps <= 0) {
        fprintf(stderr, "usage: bench_conv [--reps R] [--threads T] [--only lenet|resnet]\n");
        return 2;
    }
    if (threads > 0) tg_threads_set(threads);
    bu_plan plan = {.warmup = 2, .reps = reps, .min_reps = 3, .budget_s = 30.0};
    int rc = 0;
    if (!*only || strcmp(only, "lenet") == 0) rc |= run("lenet", 64, 1, 28, 28, 6, 5, 0, plan);
    if (!*only || strcmp(only, "resnet") == 0) rc |= run("resnet", 16, 64, 56, 56, 64, 3, 1, plan);
    return rc;
}
