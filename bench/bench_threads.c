/* Where splitting an op across the pool pays: each loop the pool runs, timed
 * on 1 and on 2 threads over a range of sizes. The size rule
 * (tg_parallel_pays, core/kernels/parallel.c) and the per-element costs the
 * call sites give it (core/kernels/gemm.c, core/ops/pointwise/binary.c, norm.c,
 * reduce.c, attention.c) rest on these numbers (docs/PERF.md, "Threads").
 * To see where splitting pays rather than what the rule does, build with the
 * rule off (PAR_MIN_NS and PAR_MIN_NS_ASLEEP 0 in core/kernels/parallel.c).
 *
 *   bench_threads [--rounds 15] [--only SITE] [--gap US]
 *
 * One ROW per site and size: the best and the median over the rounds of one
 * call's time on 1 thread and on 2, the two thread counts alternating round
 * by round so that a busy moment of the shared machine hits both alike, and
 * t1_over_t2 = best on 1 / best on 2 (> 1: two threads pay). Each timed
 * round repeats the call for ~0.2 ms; with --gap, the calls are US
 * microseconds apart, so the pool's worker has fallen asleep before each
 * (at most 20 calls a round). Forward only: the backward loops are cut by the
 * same rule and do at least as much work per element.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <tapegrad/core/engine/tape.h>
#include <tapegrad/core/kernels/threads.h>
#include <tapegrad/core/ops/ops.h>
#include "bench_util.h"
#include "../core/kernels/gemm.h"

typedef struct site_ctx {
    const char *site;
    int n;           /* the size swept: elements, rows or batches */
    tg_tape *t;
    tg_tensor *x, *y, *w, *b, *q, *k, *v;
    float *ga, *gb, *gc;
} site_ctx;

enum { C = 64 };  /* the row width: the toy model's d_model */

/* One call of the site's loop at size n. */
static void site_call(site_ctx *s)
{
    const char *n = s->site;
    if (!strcmp(n, "gemm_xwt"))  /* [n, 64] x [64, 64]^T: a projection's forward */
        tg_sgemm(false, true, s->n, C, C, 1.0f, s->ga, C, s->gb, C, 0.0f, s->gc, C);
    else if (!strcmp(n, "gemm_dw"))  /* [n, 64]^T x [n, 64]: a projection's weight grad */
        tg_sgemm(true, false, C, C, s->n, 1.0f, s->ga, C, s->gb, C, 0.0f, s->gc, C);
    else if (!strcmp(n, "relu")) tg_relu(s->t, s->x);
    else if (!strcmp(n, "gelu")) tg_gelu(s->t, s->x);
    else if (!strcmp(n, "add")) tg_add(s->t, s->x, s->y);
    else if (!strcmp(n, "layernorm")) tg_layernorm(s->t, s->x, s->w, s->b, 1e-5);
    else if (!strcmp(n, "sum_dim")) tg_sum_dim(s->t, s->x, 1, true);
    else if (!strcmp(n, "sdpa")) {
        tg_mask m = {.causal = true};
        tg_sdpa(s->t, s->q, s->k, s->v, &(tg_sdpa_opts){.mask = &m}, NULL);
    }
    if (s->t) tg_tape_reset(s->t);
}

/* Uniform in [-0.5, 0.5) from a small LCG: the same numbers in either precision. */
static double lcg_next(unsigned *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    return (double)(*seed >> 8) / (1u << 24) - 0.5;
}

static void fill(tg_real *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) x[i] = (tg_real)lcg_next(&seed);
}

/* The GEMM site times the float kernel in either build. */
static void fill_float(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)lcg_next(&seed);
}

static tg_tensor *rand_tensor(int ndim, const int *shape, unsigned seed)
{
    tg_tensor *x = tg_tensor_alloc(ndim, shape);
    if (x) fill(x->data, x->size, seed);
    return x;
}

static int g_gap_us;  /* > 0: the pool's worker asleep before every call */

static double time_calls(site_ctx *s, int calls)
{
    if (g_gap_us <= 0) {
        double t0 = bu_now();
        for (int i = 0; i < calls; i++) site_call(s);
        return (bu_now() - t0) / calls;
    }
    double sum = 0;
    for (int i = 0; i < calls; i++) {
        nanosleep(&(struct timespec){0, 1000L * g_gap_us}, NULL);
        double t0 = bu_now();
        site_call(s);
        sum += bu_now() - t0;
    }
    return sum / calls;
}

/* sdpa at n batches: H = 4, L = 16 or 64, d = 16 (the toy MHA's and the
 * L sweep's heads). */
static int run_site(const char *site, int n, int L, int rounds)
{
    site_ctx s = {site, n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    bool gemm = !strncmp(site, "gemm", 4);
    if (gemm) {
        s.ga = tg_malloc(sizeof(float) * (size_t)n * C), s.gb = tg_malloc(sizeof(float) * (size_t)n * C);
        s.gc = tg_malloc(sizeof(float) * (size_t)(n > C ? n : C) * C);
        if (!s.ga || !s.gb || !s.gc) return 1;
        fill_float(s.ga, (size_t)n * C, 1), fill_float(s.gb, (size_t)n * C, 2);
    } else {
        s.t = tg_tape_new();
        tg_tape_set_training(s.t, false);
        if (!strcmp(site, "sdpa")) {
            int sh[4] = {n, 4, L, 16};
            s.q = rand_tensor(4, sh, 1), s.k = rand_tensor(4, sh, 2), s.v = rand_tensor(4, sh, 3);
        } else {
            bool rows = !strcmp(site, "layernorm") || !strcmp(site, "sum_dim");
            int sh[2] = {rows ? n : n / C, C};
            s.x = rand_tensor(2, sh, 1), s.y = rand_tensor(2, sh, 2);
            s.w = rand_tensor(1, (int[]){C}, 3), s.b = rand_tensor(1, (int[]){C}, 4);
        }
    }
    /* calls per round: ~0.2 ms on one thread */
    tg_threads_set(1);
    double one = time_calls(&s, 3);
    int calls = one > 2e-4 ? 1 : (int)(2e-4 / (one > 1e-8 ? one : 1e-8)) + 1;
    if (g_gap_us > 0 && calls > 20) calls = 20;
    double t[2][64];
    if (rounds > 64) rounds = 64;
    for (int r = 0; r < rounds; r++)
        for (int T = 1; T <= 2; T++) {
            tg_threads_set(T);
            time_calls(&s, 1);
            t[T - 1][r] = time_calls(&s, calls) * 1e6;
        }
    double best1 = t[0][0], best2 = t[1][0];
    for (int r = 1; r < rounds; r++) {
        if (t[0][r] < best1) best1 = t[0][r];
        if (t[1][r] < best2) best2 = t[1][r];
    }
    double med1 = bu_median(t[0], rounds), med2 = bu_median(t[1], rounds);
    bu_row("bench=threads site=%s n=%d L=%d calls=%d best_t1_us=%.2f best_t2_us=%.2f median_t1_us=%.2f "
           "median_t2_us=%.2f t1_over_t2=%.2f",
           site, n, L, calls, best1, best2, med1, med2, best1 / best2);
    tg_tape_free(s.t);
    tg_tensor *all[] = {s.x, s.y, s.w, s.b, s.q, s.k, s.v};
    for (int i = 0; i < 7; i++) tg_tensor_free(all[i]);
    tg_free(s.ga), tg_free(s.gb), tg_free(s.gc);
    tg_threads_set(0);
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = 15;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--gap") && i + 1 < argc) g_gap_us = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_threads [--rounds 15] [--only SITE] [--gap US]\n");
            return 2;
        }
    }
    /* the pool's worker, created and moved off this CPU before timing */
    tg_threads_set(2);
    for (double t0 = bu_now(); bu_now() - t0 < 0.3;) {
        site_ctx s = {"gemm_xwt", 256, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
        float buf[256 * C] = {0};
        s.ga = s.gb = s.gc = buf;
        site_call(&s);
    }
    const char *sites[] = {"gemm_xwt", "gemm_dw", "relu", "gelu", "add", "layernorm", "sum_dim"};
    for (int i = 0; i < 7; i++) {
        if (only && strcmp(only, sites[i])) continue;
        bool rows = !strcmp(sites[i], "layernorm") || !strcmp(sites[i], "sum_dim") || !strncmp(sites[i], "gemm", 4);
        for (int n = rows ? 16 : 1024; n <= (rows ? 8192 : 524288); n *= 2)
            if (run_site(sites[i], n, 0, rounds)) return 1;
    }
    if (!only || !strcmp(only, "sdpa"))
        for (int L = 16; L <= 64; L *= 4)
            for (int n = 1; n <= 32; n *= 2)
                if (run_site("sdpa", n, L, rounds)) return 1;
    return 0;
}
