/* tapegrad: register-only loops of one multiply-add instruction (see
 * core/kernels/peak.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "peak.h"

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define PEAK_X86 1
#else
#define PEAK_X86 0
#endif

int tg_peak_flop(tg_peak_insn insn) { return insn == TG_PEAK_FMA_YMM ? 16 : insn == TG_PEAK_FMA_ZMM ? 32 : 64; }
int tg_peak_acc(tg_peak_insn insn) { return insn == TG_PEAK_FMA_YMM ? 10 : 16; }

bool tg_peak_can_run(tg_peak_insn insn)
{
#if PEAK_X86
    __builtin_cpu_init();
    switch (insn) {
    case TG_PEAK_FMA_YMM: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case TG_PEAK_FMA_ZMM: return __builtin_cpu_supports("avx512f");
    case TG_PEAK_DPBF16_ZMM: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
    }
#endif
    (void)insn;
    return false;
}

#if PEAK_X86
static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* f(args..., r) for the accumulator registers r: 0-9, or 0-15 */
#define REGS10(f, ...) f(__VA_ARGS__ 0) f(__VA_ARGS__ 1) f(__VA_ARGS__ 2) f(__VA_ARGS__ 3) f(__VA_ARGS__ 4) \
    f(__VA_ARGS__ 5) f(__VA_ARGS__ 6) f(__VA_ARGS__ 7) f(__VA_ARGS__ 8) f(__VA_ARGS__ 9)
#define REGS16(f, ...) REGS10(f, __VA_ARGS__) f(__VA_ARGS__ 10) f(__VA_ARGS__ 11) f(__VA_ARGS__ 12) \
    f(__VA_ARGS__ 13) f(__VA_ARGS__ 14) f(__VA_ARGS__ 15)
#define ZERO(xor, v, i) xor " %%" v #i ", %%" v #i ", %%" v #i "\n\t"
#define STEP(insn, v, x, i) insn " %%" x ", %%" x ", %%" v #i "\n\t"
#define CLOBBER_10 "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9"
#define CLOBBER_16 CLOBBER_10, "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

/* iters steps of the REGS accumulations insn acc, x, x into v0... (zeroed
 * by xor first); x the dword bits broadcast into register x (from memory:
 * no constant the compiler could fold). vzeroupper after, as compiled AVX
 * code does, so that the caller's SSE code pays no transition. */
#define LOOP(name, isa, REGS, insn, xor, v, x, bits, ...)                                                     \
    __attribute__((target(isa))) static double name(long iters)                                          \
    {                                                                                                     \
        static const uint32_t x_bits = bits;                                                              \
        double t = seconds();                                                                             \
        __asm__ volatile("vpbroadcastd %1, %%" x "\n\t" REGS(ZERO, xor, v, ) "1:\n\t" REGS(STEP, insn, v, x, ) \
                         "dec %0\n\tjnz 1b\n\tvzeroupper"                                               \
                         : "+r"(iters)                                                                    \
                         : "m"(x_bits)                                                                    \
                         : __VA_ARGS__, "cc");                                                            \
        return seconds() - t;                                                                             \
    }
LOOP(fma_ymm, "avx2,fma", REGS10, "vfmadd231ps", "vpxor", "ymm", "ymm10", 0x3a800000u, CLOBBER_10, "xmm10")
LOOP(fma_zmm, "avx512f", REGS16, "vfmadd231ps", "vpxord", "zmm", "zmm16", 0x3a800000u, CLOBBER_16, "xmm16")
LOOP(dpbf16_zmm, "avx512f,avx512bf16", REGS16, "vdpbf16ps", "vpxord", "zmm", "zmm16", 0x3a803a80u, CLOBBER_16, "xmm16")
#endif

double tg_peak_seconds(tg_peak_insn insn, long iters)
{
    if (iters < 1 || !tg_peak_can_run(insn)) return 0;
#if PEAK_X86
    switch (insn) {
    case TG_PEAK_FMA_YMM: return fma_ymm(iters);
    case TG_PEAK_FMA_ZMM: return fma_zmm(iters);
    case TG_PEAK_DPBF16_ZMM: return dpbf16_zmm(iters);
    }
#endif
    return 0;
}
