/* tapegrad's own sgemm (core/kernels/gemm.c) against OpenBLAS's cblas_sgemm, at the
 * shapes a tapegrad training step really runs.
 *
 *   bench_gemm [--reps 15] [--budget 3] [--only NAME] [--dtype f32|bf16]
 *   (NAME: a shape or a prefix, e.g. gpt_)
 *
 * One ROW per shape: GFLOP/s of tg_sgemm with 1 and 2 threads and of
 * cblas_sgemm with 1 and 2 threads, each the median over the timed
 * repetitions (best_* = the fastest repetition; a shared machine is noisy).
 * Tiny shapes repeat the call inside one timed step (calls=) so a step lasts
 * ~1 ms. tg_sgemm is timed first for each shape, after a pause: OpenBLAS's
 * threads spin after their last call and would take its second core. The OpenBLAS core in use is printed (Debian's 0.3.21 picks the SSE3
 * "Prescott" kernel on CPUs newer than its tables, AVX-512 ones included; run again with
 * OPENBLAS_CORETYPE=Cooperlake for its AVX-512 kernel). Always float.
 *
 * --dtype bf16: the rows are bench=gemm_bf16 and time tg_gemm_half
 * (core/kernels/gemm_half.h) on bfloat16 operands, tg_gemm_rounded on the
 * float32 ones they were rounded from (what autocast runs: rounded as
 * packed), then tg_sgemm on those, each with 1 and 2 threads (half_t1,
 * half_t2; rounded_t1, rounded_t2; tg_t1, tg_t2), naming the kernel that
 * ran (half_kernel=; TAPEGRAD_GEMM_HALF forces one). No OpenBLAS.
 *
 * Shapes: the toy model step (B*T = 64*26 = 1664 rows, D = 64, d_ff = 256,
 * vocab 20: forward x W^T, backward dX = dY W and dW = dY^T x), attention per
 * (batch, head) (T = 26, d_head = 16; toy MHA L = 16; large MHA L = 128,
 * d_head = 64), the large MHA projections (2048 rows, D = 512, 3E = 1536),
 * the GPT-2-style step's products (D = 256, d_ff 1024, B*T = 1024 rows:
 * forward, dX and dW, and attention per (batch, head), T = d_head = 64; and
 * the weight grads at 2048 rows) and the square 2048^3.
 */
#include <cblas.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/engine/error.h>
#include <tapegrad/core/kernels/threads.h>
#include "bench_util.h"
#include "../core/kernels/gemm.h"
#include "../core/kernels/gemm_half.h"
#include "../core/kernels/half.h"

typedef struct shape {
    const char *name;
    int M, N, K, ta, tb;
} shape;

static const shape SHAPES[] = {
    {"toy_qkv_fwd", 1664, 192, 64, 0, 1},   {"toy_out_fwd", 1664, 64, 64, 0, 1},
    {"toy_fc1_fwd", 1664, 256, 64, 0, 1},   {"toy_fc2_fwd", 1664, 64, 256, 0, 1},
    {"toy_head_fwd", 1664, 20, 64, 0, 1},   {"toy_qkv_dx", 1664, 64, 192, 0, 0},
    {"toy_out_dx", 1664, 64, 64, 0, 0},     {"toy_fc1_dx", 1664, 64, 256, 0, 0},
    {"toy_fc2_dx", 1664, 256, 64, 0, 0},    {"toy_head_dx", 1664, 64, 20, 0, 0},
    {"toy_qkv_dw", 192, 64, 1664, 1, 0},    {"toy_out_dw", 64, 64, 1664, 1, 0},
    {"toy_fc1_dw", 256, 64, 1664, 1, 0},    {"toy_fc2_dw", 64, 256, 1664, 1, 0},
    {"toy_head_dw", 20, 64, 1664, 1, 0},    {"att_qk", 26, 26, 16, 0, 1},
    {"att_av", 26, 16, 26, 0, 0},           {"att_dv", 26, 16, 26, 1, 0},
    {"att_dk", 26, 16, 26, 1, 0},           {"mha_toy_qk", 16, 16, 16, 0, 1},
    {"mha_toy_av", 16, 16, 16, 0, 0},       {"mha_large_qk", 128, 128, 64, 0, 1},
    {"mha_large_av", 128, 64, 128, 0, 0},   {"mha_large_dv", 128, 64, 128, 1, 0},
    {"proj_qkv_fwd", 2048, 1536, 512, 0, 1}, {"proj_out_fwd", 2048, 512, 512, 0, 1},
    {"proj_qkv_dx", 2048, 512, 1536, 0, 0}, {"proj_qkv_dw", 1536, 512, 2048, 1, 0},
    {"gpt_qkv_fwd", 1024, 768, 256, 0, 1},  {"gpt_out_fwd", 1024, 256, 256, 0, 1},
    {"gpt_fc1_fwd", 1024, 1024, 256, 0, 1}, {"gpt_fc2_fwd", 1024, 256, 1024, 0, 1},
    {"gpt_qkv_dx", 1024, 256, 768, 0, 0},   {"gpt_fc1_dx", 1024, 256, 1024, 0, 0},
    {"gpt_fc2_dx", 1024, 1024, 256, 0, 0},  {"gpt_att_qk", 64, 64, 64, 0, 1},
    {"gpt_att_av", 64, 64, 64, 0, 0},       {"gpt_att_dv", 64, 64, 64, 1, 0},
    {"gpt_qkv_dw", 768, 256, 1024, 1, 0},   {"gpt_out_dw", 256, 256, 1024, 1, 0},
    {"gpt_fc1_dw", 1024, 256, 1024, 1, 0},  {"gpt_fc2_dw", 256, 1024, 1024, 1, 0},
    {"gpt_qkv_dw2k", 768, 256, 2048, 1, 0}, {"gpt_out_dw2k", 256, 256, 2048, 1, 0},
    {"gpt_fc2_dw2k", 256, 1024, 2048, 1, 0},
    {"square", 2048, 2048, 2048, 0, 0},
};

typedef enum { RUN_TG, RUN_BLAS, RUN_HALF, RUN_ROUNDED } gemm_impl;

typedef struct gemm_ctx {
    const shape *s;
    int calls;     /* GEMMs per timed step */
    gemm_impl impl;
    float *a, *b, *c;
    uint16_t *ha, *hb; /* a and b rounded to bfloat16 (RUN_HALF) */
} gemm_ctx;

static int gemm_step(void *p)
{
    const gemm_ctx *g = p;
    const shape *s = g->s;
    int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    for (int i = 0; i < g->calls; i++) {
        if (g->impl == RUN_TG)
            tg_sgemm(s->ta, s->tb, s->M, s->N, s->K, 1.0f, g->a, lda, g->b, ldb, 0.0f, g->c, s->N);
        else if (g->impl == RUN_HALF) {
            if (!tg_gemm_half(TG_BF16, s->ta, s->tb, s->M, s->N, s->K, 1.0f, g->ha, lda, g->hb, ldb, 0.0f, g->c, s->N))
                return 1;
        } else if (g->impl == RUN_ROUNDED) {
            if (!tg_gemm_rounded(TG_BF16, s->ta, s->tb, s->M, s->N, s->K, 1.0f, g->a, lda, g->b, ldb, 0.0f, g->c,
                                 s->N))
                return 1;
        } else
            cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans,
                        s->M, s->N, s->K, 1.0f, g->a, lda, g->b, ldb, 0.0f, g->c, s->N);
    }
    return 0;
}

static void fill(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
    }
}

/* GFLOP/s of the median and of the best repetition; nonzero when a call failed. */
static int measure(gemm_ctx *g, bu_plan plan, double *median, double *best)
{
    bu_result r = bu_measure(gemm_step, g, plan);
    if (r.failed) return fprintf(stderr, "bench_gemm: %s: %s\n", g->s->name, tg_error()), 1;
    double flop = 2.0 * g->s->M * g->s->N * g->s->K * g->calls;
    *median = flop / (r.median_ms * 1e-3) / 1e9;
    *best = flop / (r.min_ms * 1e-3) / 1e9;
    return 0;
}

static uint16_t *rounded(const float *x, size_t n)
{
    uint16_t *h = tg_malloc(sizeof *h * n);
    for (size_t i = 0; h && i < n; i++) h[i] = tg_bf16_from_float(x[i]);
    return h;
}

/* The bfloat16 row of shape s: tg_gemm_half against tg_sgemm, 1 and 2 threads. */
static int run_bf16(gemm_ctx *g, bu_plan plan)
{
    const shape *s = g->s;
    g->ha = rounded(g->a, (size_t)s->M * s->K);
    g->hb = rounded(g->b, (size_t)s->K * s->N);
    if (!g->ha || !g->hb) {
        fprintf(stderr, "bench_gemm: out of memory for %s\n", s->name);
        tg_free(g->ha), tg_free(g->hb);
        return 1;
    }
    double half[2][2], rnd[2][2], tg[2][2]; /* [threads - 1][median, best] */
    int rc = 0;
    for (int t = 1; t <= 2 && !rc; t++) {
        tg_threads_set(t);
        g->impl = RUN_HALF;
        rc = measure(g, plan, &half[t - 1][0], &half[t - 1][1]);
        g->impl = RUN_ROUNDED;
        rc = rc || measure(g, plan, &rnd[t - 1][0], &rnd[t - 1][1]);
        g->impl = RUN_TG;
        rc = rc || measure(g, plan, &tg[t - 1][0], &tg[t - 1][1]);
    }
    if (rc) {
        tg_free(g->ha), tg_free(g->hb);
        return 1;
    }
    bu_row("bench=gemm_bf16 name=%s M=%d N=%d K=%d ta=%d tb=%d calls=%d half_kernel=%s kernel=%s "
           "half_t1=%.2f half_t2=%.2f rounded_t1=%.2f rounded_t2=%.2f tg_t1=%.2f tg_t2=%.2f best_half_t1=%.2f "
           "best_half_t2=%.2f best_rounded_t1=%.2f best_rounded_t2=%.2f best_tg_t1=%.2f best_tg_t2=%.2f",
           s->name, s->M, s->N, s->K, s->ta, s->tb, g->calls, tg_gemm_half_kernel_name(tg_gemm_half_get_kernel()),
           tg_gemm_kernel_name(tg_gemm_get_kernel()), half[0][0], half[1][0], rnd[0][0], rnd[1][0], tg[0][0],
           tg[1][0], half[0][1], half[1][1], rnd[0][1], rnd[1][1], tg[0][1], tg[1][1]);
    tg_free(g->ha), tg_free(g->hb);
    return 0;
}

static int run(const shape *s, bu_plan plan, bool bf16)
{
    gemm_ctx g = {s, 1, RUN_TG, NULL, NULL, NULL, NULL, NULL};
    double work = 2.0 * s->M * s->N * s->K;
    if (work < 2e6) g.calls = (int)(2e6 / work);
    g.a = tg_malloc(sizeof(float) * (size_t)s->M * s->K);
    g.b = tg_malloc(sizeof(float) * (size_t)s->K * s->N);
    g.c = tg_malloc(sizeof(float) * (size_t)s->M * s->N);
    if (!g.a || !g.b || !g.c) {
        fprintf(stderr, "bench_gemm: out of memory for %s\n", s->name);
        tg_free(g.a), tg_free(g.b), tg_free(g.c);
        return 1;
    }
    fill(g.a, (size_t)s->M * s->K, 1);
    fill(g.b, (size_t)s->K * s->N, 2);
    if (bf16) {
        int rc = run_bf16(&g, plan);
        tg_free(g.a), tg_free(g.b), tg_free(g.c);
        return rc;
    }
    double tg[2][2], blas[2][2];  /* [threads - 1][median, best] */
    /* OpenBLAS's idle threads keep spinning for a while after a call: let
     * them sleep before timing tg_sgemm, or they take its second core. */
    nanosleep(&(struct timespec){0, 300000000}, NULL);
    for (int t = 1; t <= 2; t++) {
        tg_threads_set(t);  /* also OpenBLAS's */
        g.impl = RUN_TG;
        measure(&g, plan, &tg[t - 1][0], &tg[t - 1][1]);
    }
    for (int t = 1; t <= 2; t++) {
        tg_threads_set(t);
        g.impl = RUN_BLAS;
        measure(&g, plan, &blas[t - 1][0], &blas[t - 1][1]);
    }
    bu_row("bench=gemm name=%s M=%d N=%d K=%d ta=%d tb=%d calls=%d kernel=%s blas_core=%s "
           "tg_t1=%.2f tg_t2=%.2f blas_t1=%.2f blas_t2=%.2f best_tg_t1=%.2f best_tg_t2=%.2f "
           "best_blas_t1=%.2f best_blas_t2=%.2f",
           s->name, s->M, s->N, s->K, s->ta, s->tb, g.calls, tg_gemm_kernel_name(tg_gemm_get_kernel()),
           openblas_get_corename(), tg[0][0], tg[1][0], blas[0][0], blas[1][0], tg[0][1], tg[1][1],
           blas[0][1], blas[1][1]);
    tg_free(g.a), tg_free(g.b), tg_free(g.c);
    return 0;
}

/* ~0.3 s of 2-thread products first: the scheduler takes tens of ms to move
 * a new worker off the caller's CPU, and a training run lives far longer. */
static void warm_pool(void)
{
    int n = 384;
    float *a = tg_calloc((size_t)n * n, sizeof *a), *b = tg_calloc((size_t)n * n, sizeof *b),
          *c = tg_calloc((size_t)n * n, sizeof *c);
    tg_threads_set(2);
    for (double t0 = bu_now(); a && b && c && bu_now() - t0 < 0.3;)
        tg_sgemm(false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    tg_free(a), tg_free(b), tg_free(c);
}

int main(int argc, char **argv)
{
    int reps = (int)bu_opt_long(argc, argv, "--reps", 15);
    double budget = bu_opt_double(argc, argv, "--budget", 3.0);
    const char *only = bu_opt_str(argc, argv, "--only", NULL);
    const char *dtype = bu_opt_str(argc, argv, "--dtype", "f32");
    bool bf16 = strcmp(dtype, "bf16") == 0;
    if (reps <= 0 || budget <= 0 || (!bf16 && strcmp(dtype, "f32") != 0)) {
        fprintf(stderr, "usage: bench_gemm [--reps R] [--budget S] [--only NAME] [--dtype f32|bf16]\n");
        return 2;
    }
    if (bf16)
        printf("# bfloat16: tg_gemm_half kernel %s against tg_sgemm kernel %s; GFLOP/s, median of up to %d "
               "repetitions\n",
               tg_gemm_half_kernel_name(tg_gemm_half_get_kernel()), tg_gemm_kernel_name(tg_gemm_get_kernel()), reps);
    else
        printf("# tg_sgemm kernel %s; OpenBLAS core %s; GFLOP/s, median of up to %d repetitions\n",
               tg_gemm_kernel_name(tg_gemm_get_kernel()), openblas_get_corename(), reps);
    bu_plan plan = {.warmup = 2, .reps = reps, .min_reps = 3, .budget_s = budget};
    warm_pool();
    int rc = 0;
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++)
        if (!only || strncmp(only, SHAPES[i].name, strlen(only)) == 0) rc |= run(&SHAPES[i], plan, bf16);
    return rc;
}
