/* The sgemm ceiling: OpenBLAS single-precision GEMM GFLOP/s on the machine it runs on.
 *
 *   bench_sgemm [--n 2048] [--reps 7] [--threads T]
 *
 * Rows: the square n^3 product (the figure the large MHA step is compared
 * with), the same on one thread (name=square_t1; a shared machine often has
 * one core to spare, not two), and the shapes of the large MHA layer's GEMMs
 * (B*L = 2048 rows, D = 512, 3E = 1536), which are what an MHA step can hope
 * to reach.
 * Always float (sgemm), whatever TAPEGRAD_DOUBLE says: it is the ceiling.
 */
#include <cblas.h>
#include <stdio.h>

#include <tapegrad/core/engine/alloc.h>
#include "bench_util.h"

typedef struct gemm_ctx {
    int M, N, K;
    int ta, tb;
    float *a, *b, *c;
} gemm_ctx;

static int gemm_step(void *p)
{
    gemm_ctx *g = p;
    cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans, g->tb ? CblasTrans : CblasNoTrans,
                g->M, g->N, g->K, 1.0f, g->a, g->ta ? g->M : g->K, g->b, g->tb ? g->K : g->N, 0.0f,
                g->c, g->N);
    return 0;
}

static void fill(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
    }
}

/* Times one C[M,N] = op(A) op(B) and prints its row. */
static int run(const char *name, int M, int N, int K, int ta, int tb, bu_plan plan)
{
    gemm_ctx g = {M, N, K, ta, tb, NULL, NULL, NULL};
    g.a = tg_malloc(sizeof(float) * (size_t)M * K);
    g.b = tg_malloc(sizeof(float) * (size_t)K * N);
    g.c = tg_malloc(sizeof(float) * (size_t)M * N);
    if (!g.a || !g.b || !g.c) {
        fprintf(stderr, "bench_sgemm: out of memory for %dx%dx%d\n", M, N, K);
        tg_free(g.a), tg_free(g.b), tg_free(g.c);
        return 1;
    }
    fill(g.a, (size_t)M * K, 1);
    fill(g.b, (size_t)K * N, 2);
    bu_result r = bu_measure(gemm_step, &g, plan);
    double gflops = 2.0 * M * N * K / (r.median_ms * 1e-3) / 1e9;
    bu_row("bench=sgemm name=%s M=%d N=%d K=%d threads=%d reps=%d ms=%.4f min_ms=%.4f gflops=%.2f", name,
           M, N, K, openblas_get_num_threads(), r.reps, r.median_ms, r.min_ms, gflops);
    tg_free(g.a), tg_free(g.b), tg_free(g.c);
    return 0;
}

int main(int argc, char **argv)
{
    int n = (int)bu_opt_long(argc, argv, "--n", 2048);
    int reps = (int)bu_opt_long(argc, argv, "--reps", 7);
    int threads = (int)bu_opt_long(argc, argv, "--threads", 0);
    if (n <= 0 || reps <= 0) {
        fprintf(stderr, "usage: bench_sgemm [--n N] [--reps R] [--threads T]\n");
        return 2;
    }
    if (threads > 0) openblas_set_num_threads(threads);
    printf("# OpenBLAS %s, %d threads\n", openblas_get_corename(), openblas_get_num_threads());
    bu_plan plan = {.warmup = 2, .reps = reps, .min_reps = 3, .budget_s = 20.0};
    int rc = run("square", n, n, n, 0, 0, plan);
    int nt = openblas_get_num_threads();
    openblas_set_num_threads(1);
    rc |= run("square_t1", n, n, n, 0, 0, plan);
    openblas_set_num_threads(nt);
    /* The large MHA shape (B=16, L=128: 2048 rows, D=512, E=512). */
    plan.reps = reps * 3;
    rc |= run("qkv_fwd", 2048, 1536, 512, 0, 1, plan);       /* x W^T */
    rc |= run("qkv_dW", 1536, 512, 2048, 1, 0, plan);        /* dY^T x */
    rc |= run("out_proj_fwd", 2048, 512, 512, 0, 1, plan);
    rc |= run("attn_qk", 128, 128, 64, 0, 1, plan);          /* one head: Q K^T */
    return rc;
}
