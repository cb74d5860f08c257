/* tapegrad benchmarks: timing, medians, peak RSS and allocation counting.
 *
 * Header-only (each bench program is its own executable). Times come from
 * CLOCK_MONOTONIC; a measurement is the median of several repetitions after
 * warm-up, because a machine shared with other work is noisy. Peak RSS is getrusage's
 * ru_maxrss (KiB on Linux) for the whole process, so a benchmark whose
 * memory matters runs one configuration per process. Allocations are the
 * library's own (tg_alloc_count, core/engine/alloc.h), not OpenBLAS's.
 *
 * Every result is printed as one machine-readable line:
 *   ROW key=value key=value ...
 * which scripts/bench.sh parses (keys never contain spaces or '=').
 */
#ifndef TAPEGRAD_BENCH_UTIL_H
#define TAPEGRAD_BENCH_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <cblas.h>
#include <stdbool.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/kernels/threads.h>
#include "../core/kernels/gemm.h"

static inline double bu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bu_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n-1] (sorts v in place). */
static inline double bu_median(double *v, int n)
{
    if (n <= 0) return 0.0;
    qsort(v, (size_t)n, sizeof *v, bu_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* CPU time of the whole process so far (user + system, every thread), s. */
static inline double bu_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0.0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Peak resident set size of this process so far, MiB. */
static inline double bu_peak_rss_mib(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0.0;
    return (double)ru.ru_maxrss / 1024.0;
}

/* Current resident set size, MiB (from /proc/self/statm; 0 if unreadable). */
static inline double bu_rss_mib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0.0;
    long pages_total = 0, pages_res = 0;
    int ok = fscanf(f, "%ld %ld", &pages_total, &pages_res) == 2;
    fclose(f);
    return ok ? (double)pages_res * 4096.0 / (1024.0 * 1024.0) : 0.0;
}

/* How a repeated measurement runs: warm-up calls, then up to reps timed calls,
 * stopping early (after at least min_reps) once budget_s seconds are spent. */
typedef struct bu_plan {
    int warmup, reps, min_reps;
    double budget_s;
} bu_plan;

typedef struct bu_result {
    double median_ms, min_ms, max_ms;
    /* CPU time of the process (every thread, user + system) and wall time per
     * step, both the mean over the timed calls: the kernel adds a running
     * thread's time to the process's only at ticks and switches, so one
     * step's CPU time is not reliable on its own */
    double cpu_mean_ms, wall_mean_ms;
    int reps;
    int failed;               /* the step function returned nonzero */
    unsigned long long allocs_per_step_max;  /* tg allocations in any timed call */
} bu_result;

#define BU_MAX_REPS 1000

/* The first measurement of a process on more than one thread warms up for at
 * least this long: for the first tens of milliseconds the scheduler keeps the
 * pool's new worker on the caller's CPU, where it cannot help (it yields,
 * core/kernels/threads.c), and a training run lives far longer than that. */
#define BU_POOL_WARM_S 0.2

/* Times step(ctx) under plan. step returns 0 on success. */
static inline bu_result bu_measure(int (*step)(void *), void *ctx, bu_plan plan)
{
    static bool pool_warm;
    bu_result r = {0};
    double times[BU_MAX_REPS];
    if (plan.reps > BU_MAX_REPS) plan.reps = BU_MAX_REPS;
    if (plan.min_reps < 1) plan.min_reps = 1;
    double w0 = bu_now();
    bool warm_pool = !pool_warm && tg_threads_get() > 1;
    for (int i = 0; i < plan.warmup || (warm_pool && bu_now() - w0 < BU_POOL_WARM_S); i++)
        if (step(ctx)) { r.failed = 1; return r; }
    pool_warm = pool_warm || warm_pool;
    double t_start = bu_now(), cpu_start = bu_cpu_s();
    int n = 0;
    while (n < plan.reps) {
        unsigned long long a0 = tg_alloc_count();
        double t0 = bu_now();
        if (step(ctx)) { r.failed = 1; break; }
        double t1 = bu_now();
        unsigned long long da = tg_alloc_count() - a0;
        if (da > r.allocs_per_step_max) r.allocs_per_step_max = da;
        times[n++] = (t1 - t0) * 1e3;
        if (n >= plan.min_reps && t1 - t_start > plan.budget_s) break;
    }
    r.reps = n;
    if (n > 0) {
        r.cpu_mean_ms = (bu_cpu_s() - cpu_start) * 1e3 / n;
        r.wall_mean_ms = (bu_now() - t_start) * 1e3 / n;
        r.median_ms = bu_median(times, n);
        r.min_ms = times[0];
        r.max_ms = times[n - 1];
    }
    return r;
}

/* Integer option "--name value" from argv, or def. */
static inline long bu_opt_long(int argc, char **argv, const char *name, long def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return strtol(argv[i + 1], NULL, 10);
    return def;
}

static inline double bu_opt_double(int argc, char **argv, const char *name, double def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return strtod(argv[i + 1], NULL);
    return def;
}

static inline const char *bu_opt_str(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    return def;
}

static inline int bu_flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0) return 1;
    return 0;
}

/* "ROW " + the formatted fields + newline, flushed at once. */
static inline void bu_row(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void bu_row(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ROW ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
}

/* Runs GEMMs big enough to touch OpenBLAS's work buffers and the float GEMM's
 * per-thread pack buffers, so an RSS baseline taken after it holds them (they
 * are the BLAS's, not the model's). */
static inline void bu_warm_blas(void)
{
    int n = 512;
    float *a = tg_calloc((size_t)n * n, sizeof *a), *b = tg_calloc((size_t)n * n, sizeof *b),
          *c = tg_calloc((size_t)n * n, sizeof *c);
    if (a && b && c) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        tg_sgemm(false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    }
    tg_free(a), tg_free(b), tg_free(c);
}

#endif
