/* tapegrad internal: how fast this CPU issues its multiply-add instructions.
 * Loops of one instruction on registers only, in assembly, so that no
 * build's optimisation level changes what is timed: the choice of the
 * bfloat16 kernel compares two of them (core/kernels/gemm_half.c), and
 * bench/bench_peak.c reports them as the ceilings of the GEMMs. */
#ifndef TAPEGRAD_PEAK_H
#define TAPEGRAD_PEAK_H

#include <stdbool.h>

typedef enum tg_peak_insn {
    TG_PEAK_FMA_YMM,    /* VFMADD231PS ymm (AVX2 and FMA): 8 lanes x 2, 16 flops */
    TG_PEAK_FMA_ZMM,    /* VFMADD231PS zmm (AVX-512F): 32 flops */
    TG_PEAK_DPBF16_ZMM, /* VDPBF16PS zmm (AVX512-BF16): 16 lanes x 2 pairs x 2, 64 flops */
} tg_peak_insn;

/* Whether this CPU runs insn (never off x86-64). */
bool tg_peak_can_run(tg_peak_insn insn);
/* The flops of one insn. */
int tg_peak_flop(tg_peak_insn insn);
/* Its instructions per loop step, each its own sum: more than latency times
 * issue rate on the CPUs measured (10 of the 16 ymm registers; 16 zmm). */
int tg_peak_acc(tg_peak_insn insn);
/* The seconds that iters loop steps of insn take on the calling thread,
 * every instruction multiplying 2^-10 by itself (as a float, or the
 * bfloat16 pair) into its sum, so that the sums grow slowly and stay
 * normal; 0 where this CPU cannot run insn. */
double tg_peak_seconds(tg_peak_insn insn, long iters);

#endif
