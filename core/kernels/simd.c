/* tapegrad: the level the cloned hot loops run at (core/kernels/vmath.h). */
#include "vmath.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static _Atomic int g_level = -1; /* -1: not chosen yet */

static bool cpu_can(tg_simd level)
{
#if TG_SIMD_BUILT
    __builtin_cpu_init();
    return level == TG_SIMD_BASE || (level == TG_SIMD_AVX2 && __builtin_cpu_supports("x86-64-v3")) ||
           (level == TG_SIMD_AVX512 && __builtin_cpu_supports("x86-64-v4"));
#else
    return level == TG_SIMD_BASE;
#endif
}

const char *tg_simd_name(tg_simd level)
{
    static const char *const names[] = {"base", "avx2", "avx512"};
    return level >= TG_SIMD_BASE && level <= TG_SIMD_AVX512 ? names[level] : "?";
}

/* The best level, or TAPEGRAD_SIMD's when this CPU runs it. Two threads
 * choosing at once choose the same. */
static tg_simd choose(void)
{
    tg_simd best = cpu_can(TG_SIMD_AVX512) ? TG_SIMD_AVX512 : cpu_can(TG_SIMD_AVX2) ? TG_SIMD_AVX2 : TG_SIMD_BASE;
    const char *env = getenv("TAPEGRAD_SIMD");
    for (int l = TG_SIMD_BASE; env && l <= TG_SIMD_AVX512; l++)
        if (strcmp(env, tg_simd_name((tg_simd)l)) == 0 && cpu_can((tg_simd)l)) best = (tg_simd)l;
    return best;
}

tg_simd tg_simd_get(void)
{
    int l = atomic_load_explicit(&g_level, memory_order_relaxed);
    if (l < 0) {
        l = (int)choose();
        atomic_store_explicit(&g_level, l, memory_order_relaxed);
    }
    return (tg_simd)l;
}

bool tg_simd_set(tg_simd level)
{
    if (!cpu_can(level)) return false;
    atomic_store_explicit(&g_level, (int)level, memory_order_relaxed);
    return true;
}
