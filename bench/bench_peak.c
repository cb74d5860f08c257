/* The peak of this CPU's multiply-add instructions: loops of one instruction
 * on registers only, what a GEMM of that precision can hope to reach (the
 * bfloat16 one of core/kernels/gemm_half.c's kernels, as bench_sgemm's
 * ceiling is the float32 one's).
 *
 *   bench_peak [--seconds 0.2] [--reps 5]
 *
 * One ROW per instruction and thread count (1 and 2 threads, each running
 * the loop on its own registers): flops per instruction (flop=), the
 * independent accumulators that hide its latency (acc=), GFLOP/s of the
 * median repetition (gflops=) and of the fastest (best_gflops=: a peak,
 * which noise can only lower). The instructions:
 *   vfmadd231ps ymm  AVX2+FMA      8 lanes x 2                  16 flops
 *   vfmadd231ps zmm  AVX-512F     16 lanes x 2                  32 flops
 *   vdpbf16ps zmm    AVX512-BF16  16 lanes x 2 pairs x 2        64 flops
 *   tdpbf16ps        AMX-BF16     16 x 16 C x 32 pairs' terms x 2  16384 flops
 *                    (tiles of 16 rows x 64 bytes, four C tiles)
 * The vector loops are the library's (core/kernels/peak.h, which the
 * choice of bfloat16 kernel times too); TDPBF16PS's is here.
 * An instruction this CPU cannot run (or, for AMX, whose tile state the
 * operating system refused) gets a ROW status=unsupported missing=<what>
 * and a line saying so; the exit status is still 0. Always float.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_util.h"
#include "../core/kernels/gemm_half.h"
#include "../core/kernels/peak.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define PEAK_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define PEAK_X86 0
#endif

/* The vector instructions' loops are the library's (core/kernels/peak.h:
 * in assembly, each step ACC independent sums of 2^-10 times 2^-10); AMX's
 * is here, four C tiles fed by every fourth TDPBF16PS. */
#if PEAK_X86
/* LDTILECFG's 64 bytes: palette 1, then per tile its bytes per row (from
 * byte 16) and rows (from byte 48): tmm0-3 C, tmm4-5 A, tmm6-7 B, each 16
 * rows of 64 bytes (16 floats, or 32 bfloat16). */
static const struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

/* Each thread configures its own tiles; four C tiles, each fed by every
 * fourth TDPBF16PS. */
__attribute__((target("amx-tile,amx-bf16"))) static float loop_tdpbf16ps(long iters)
{
    _Alignas(64) uint16_t in[16 * 32];
    _Alignas(64) float out[16 * 16];
    for (int i = 0; i < 16 * 32; i++) in[i] = 0x3a80;
    __asm__ volatile("" ::: "memory"); /* tileloadd reads in through asm */
    _tile_loadconfig(&amx_config);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, in, 64);
    _tile_loadd(5, in, 64);
    _tile_loadd(6, in, 64);
    _tile_loadd(7, in, 64);
    for (long i = 0; i < iters; i++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, out, 64);
    _tile_release();
    __asm__ volatile("" ::: "memory"); /* tilestored wrote out */
    return out[0];
}
#endif

typedef struct peak {
    const char *name, *isa;
    int insn;     /* a tg_peak_insn, or -1: TDPBF16PS (loop_tdpbf16ps) */
    int acc;      /* independent accumulators, each fed once a loop step */
    double flop;  /* per instruction */
} peak;

/* What this CPU lacks to run p: NULL if nothing, else the ROW's token,
 * and in *why a sentence. */
static const char *peak_missing(const peak *p, const char **why)
{
    const char *isa = p->isa;
#if PEAK_X86
    if (p->insn >= 0 && !tg_peak_can_run((tg_peak_insn)p->insn)) {
        *why = strcmp(isa, "avx2") == 0      ? "no avx2 / fma in /proc/cpuinfo"
               : strcmp(isa, "avx512f") == 0 ? "no avx512f in /proc/cpuinfo"
                                             : "no avx512_bf16 in /proc/cpuinfo";
        return strcmp(isa, "avx2") == 0 ? "avx2_fma" : strcmp(isa, "avx512f") == 0 ? "avx512f" : "avx512_bf16";
    }
    if (p->insn >= 0) return NULL;
    /* GCC 12's __builtin_cpu_supports does not know AMX: CPUID leaf 7, EDX
     * bit 22 AMX-BF16, bit 24 AMX-TILE; then the tile state gemm_half.c asks for */
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 22 & 1) || !(d >> 24 & 1)) {
        *why = "no amx_bf16 / amx_tile in /proc/cpuinfo";
        return "amx_bf16_amx_tile";
    }
    if (tg_gemm_half_can_run(TG_GEMM_HALF_AMX)) return NULL;
    *why = "the operating system refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)";
    return "amx_tile_state";
#else
    (void)isa;
    *why = "not an x86-64 CPU";
    return "x86_64";
#endif
}

typedef struct run_ctx {
    const peak *p;
    int threads;
    long iters;
} run_ctx;

static volatile float g_sink;

static void *peak_thread(void *ctx)
{
    const run_ctx *r = ctx;
#if PEAK_X86
    if (r->p->insn < 0) g_sink = loop_tdpbf16ps(r->iters);
    else
#endif
        tg_peak_seconds((tg_peak_insn)r->p->insn, r->iters);
    return NULL;
}

/* The loop on r->threads threads at once (the caller is one of them). */
static int peak_step(void *ctx)
{
    const run_ctx *r = ctx;
    pthread_t t[1];
    bool spawned = r->threads > 1 && pthread_create(&t[0], NULL, peak_thread, ctx) == 0;
    if (r->threads > 1 && !spawned) return fprintf(stderr, "bench_peak: cannot start a thread\n"), 1;
    peak_thread(ctx);
    if (spawned) pthread_join(t[0], NULL);
    return 0;
}

static int run(const peak *p, int threads, double seconds, int reps)
{
    run_ctx r = {p, threads, 1024};
    /* iterations for about seconds: doubled until a run lasts 20 ms, timed
     * once more (the first runs meet a clock still rising), then scaled */
    double dt = 0;
    for (; r.iters < (1L << 40); r.iters *= 2) {
        double t0 = bu_now();
        if (peak_step(&r)) return 1;
        if ((dt = bu_now() - t0) >= 0.02) break;
    }
    double t0 = bu_now();
    if (peak_step(&r)) return 1;
    if (bu_now() - t0 < dt) dt = bu_now() - t0;
    r.iters = (long)((double)r.iters * seconds / dt) + 1;
    bu_plan plan = {.warmup = 1, .reps = reps, .min_reps = reps, .budget_s = 1e9};
    bu_result m = bu_measure(peak_step, &r, plan);
    if (m.failed) return 1;
    double flop = p->flop * p->acc * (double)r.iters * threads;
    bu_row("bench=peak name=%s isa=%s threads=%d acc=%d flop=%.0f iters=%ld reps=%d ms=%.3f min_ms=%.3f gflops=%.2f "
           "best_gflops=%.2f",
           p->name, p->isa, threads, p->acc, p->flop, r.iters, m.reps, m.median_ms, m.min_ms,
           flop / (m.median_ms * 1e-3) / 1e9, flop / (m.min_ms * 1e-3) / 1e9);
    return 0;
}

int main(int argc, char **argv)
{
    double seconds = bu_opt_double(argc, argv, "--seconds", 0.2);
    int reps = (int)bu_opt_long(argc, argv, "--reps", 5);
    if (seconds <= 0 || reps <= 0) {
        fprintf(stderr, "usage: bench_peak [--seconds S] [--reps R]\n");
        return 2;
    }
    const peak PEAKS[] = {
        {"vfmadd231ps_ymm", "avx2", TG_PEAK_FMA_YMM, tg_peak_acc(TG_PEAK_FMA_YMM), tg_peak_flop(TG_PEAK_FMA_YMM)},
        {"vfmadd231ps_zmm", "avx512f", TG_PEAK_FMA_ZMM, tg_peak_acc(TG_PEAK_FMA_ZMM), tg_peak_flop(TG_PEAK_FMA_ZMM)},
        {"vdpbf16ps_zmm", "avx512bf16", TG_PEAK_DPBF16_ZMM, tg_peak_acc(TG_PEAK_DPBF16_ZMM),
         tg_peak_flop(TG_PEAK_DPBF16_ZMM)},
        {"tdpbf16ps", "amx-bf16", -1, 4, 16 * 16 * 32 * 2},
    };
    printf("# register-only loops of one multiply-add instruction; GFLOP/s, median and best of %d repetitions of "
           "%.2f s\n",
           reps, seconds);
    int rc = 0;
    for (size_t i = 0; i < sizeof PEAKS / sizeof PEAKS[0]; i++) {
        const peak *p = &PEAKS[i];
        const char *why, *missing = peak_missing(p, &why);
        if (missing) {
            printf("# %s: unsupported: %s\n", p->name, why);
            bu_row("bench=peak name=%s isa=%s status=unsupported missing=%s", p->name, p->isa, missing);
            continue;
        }
        for (int t = 1; t <= 2; t++) rc |= run(p, t, seconds, reps);
    }
    return rc;
}
