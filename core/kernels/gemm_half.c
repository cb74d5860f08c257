/* tapegrad: GEMMs of half-precision operands (see core/kernels/gemm_half.h).
 *
 * The widening kernel, for every CPU and every float16 product: A and B are
 * widened to float32 (exact; float32 operands of tg_gemm_rounded are
 * rounded to half values and widened back in the same pass) and tg_sgemm
 * runs, so the result is float32's product of the half values, with
 * tg_sgemm's blocking, order and bits for any thread count.
 *
 * The bfloat16 kernel, for CPUs with AVX512-BF16 (VDPBF16PS: per float32
 * lane, two bfloat16 products added to the accumulator, Intel SDM vol. 2)
 * where that instruction outruns the float32 FMA (below, choose_kernel):
 *   - Pair layout: a k-pair (k = 2p, 2p+1) of bfloat16 is one dword (the even
 *     k in the low word), which is what VDPBF16PS multiplies lane by lane. A
 *     panels hold, per pair p, the MR rows' dwords (broadcast from memory);
 *     B panels, per pair p, the NR columns' dwords (NR/16 vectors). An odd
 *     K ends with a pair whose odd half is zero; rows past M and columns past
 *     N are zero, and the tile stores only the valid part with masked stores,
 *     so an edge tile does the same arithmetic as a full one.
 *   - MR x NR = 12 x 32 as gemm.c's AVX-512 kernel: 24 zmm accumulators, 2
 *     for B, 1 for the broadcast A dword (GCC 12 emits vpbroadcastd, a load,
 *     rather than folding it into the instruction); 24 independent
 *     accumulations per pair hide the instruction's latency. One instruction
 *     does two k, so a pair costs what one k costs tg_sgemm's kernel.
 *   - KC = 768 k (384 pairs: the A panel, 12 x 384 x 4 B = 18 KiB, stays in
 *     L1, as gemm.c's), NC = 672 (the B block, 384 x 672 x 4 B = 1 MiB, in
 *     L2), MC = 1536. KC is even, so a pair never straddles two K blocks.
 *   - Everything is packed (the pair layout is not any stored layout), into
 *     the pack buffers tg_sgemm keeps per thread (a block's dwords fit in
 *     its floats): no allocation per call. Packing reads each operand in
 *     its stored order, and float32 operands (tg_gemm_rounded, every
 *     autocast product) are rounded as they are packed, so no rounded copy
 *     is made.
 *   - Block by block (K outer), B's block is packed once, by all threads,
 *     into the calling thread's buffer; then threads split the block's C
 *     along M (in MR rows, each packing its A rows) or, for a short M, along
 *     N (in NR columns, A packed once like B). Never along K: an element
 *     gets the same instructions in the same order whatever its tile or
 *     thread, bit-identical for any thread count.
 * It is written once (gemm_half_tile.inc) over a few vector operations that
 * have two implementations: the intrinsics, and a scalar emulation of them
 * (bf16_emu.h, the SDM's VDPBF16PS in scalar code), which runs on every CPU as the
 * kernel TG_GEMM_HALF_AVX512BF16_EMULATED, so that the packing, blocking and
 * tiles are tested on machines without the instruction.
 *
 * The AMX kernel, for Linux on CPUs with AMX-BF16 (TDPBF16PS: a 16 x 16
 * float32 tile += a 16-row x 16-pair tile times a 16-pair x 16-column one),
 * is the same blocking, packing and thread split with another tile: a 32 x
 * 32 block of C in four tiles, each operand tile packed as 1 KiB of
 * contiguous memory (core/kernels/bf16_pack.h: an A tile's row is a row's 16 pairs, a B
 * tile's row a pair's 16 columns), K blocks padded with zero pairs to a
 * multiple of 16 (zero products leave the sums' bits alone). Its bits are TDPBF16PS's
 * (emulated in bf16_emu.h), not VDPBF16PS's. Written once (gemm_half_amx.inc) over
 * the tile operations, with the intrinsics and with an emulation
 * (TG_GEMM_HALF_AMX_EMULATED, every CPU). The tile configuration is loaded
 * once per thread per product, and a full 32 x 32 block with alpha 1 and
 * beta 0 is stored from the tiles straight into C. */
#define _DEFAULT_SOURCE /* syscall (AMX's permission) */
#include "gemm_half.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/alloc.h"
#include "../engine/error.h"
#include "bf16_emu.h"
#include "bf16_pack.h"
#include "gemm.h"
#include "half.h"
#include "peak.h"
#include "threads.h"
#include "vmath.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define TG_BF16_X86 1
#include <immintrin.h>
#else
#define TG_BF16_X86 0
#endif
#if TG_BF16_X86 && defined(__linux__)
#define TG_AMX 1
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#define TG_AMX 0
#endif

#define BF_MR 12
#define BF_NR 32
#define BF_KC 768 /* even: pairs stay inside a K block */
#define BF_NC 672
#define BF_MC 1536
/* One-thread time of a multiply-add, for the thread split, measured at the
 * GPT-2-style step's shapes (bench_gemm --dtype bf16) on an Intel Xeon with
 * AMX: the VDPBF16PS kernel about 60 GFLOP/s (that core runs VDPBF16PS at
 * half its FMA's flop rate: bench_peak), AMX about 300 (the operands
 * packed and rounded included); and the emulation's: scalar code rounding
 * and flushing each step by hand, about 9 ns on a core without the
 * instruction. */
#define BF_NS_PER_MAC 0.03
#define BF_NS_PER_MAC_EMULATED 9.0
/* The AMX kernel's C block, and its time per multiply-add (above). Its
 * emulation's is the other's. */
#define AMX_MR 32
#define AMX_NR 32
#define AMX_NS_PER_MAC 0.006

/* ---- kernel selection ------------------------------------------------------- */

static tg_gemm_half_kernel g_kernel;
static pthread_once_t g_kernel_once = PTHREAD_ONCE_INIT;

/* AMX: what the CPU says, then what the kernel grants, asked once per
 * process (Linux gives a process the tile state, 8 KiB per thread's
 * signal frame, only on request). GCC 12's __builtin_cpu_supports does not
 * know AMX: CPUID leaf 7 subleaf 0, EDX bit 22 AMX-BF16, bit 24 AMX-TILE. */
enum { AMX_NO_CPU, AMX_REFUSED, AMX_GRANTED };
static int g_amx = AMX_NO_CPU;
#if TG_AMX
static pthread_once_t g_amx_once = PTHREAD_ONCE_INIT;

static void amx_probe(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 22 & 1) || !(d >> 24 & 1)) return;
    /* ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA */
    g_amx = syscall(SYS_arch_prctl, 0x1023, 18) == 0 ? AMX_GRANTED : AMX_REFUSED;
}
#endif

bool tg_gemm_half_can_run(tg_gemm_half_kernel k)
{
    switch (k) {
    case TG_GEMM_HALF_WIDEN:
    case TG_GEMM_HALF_AVX512BF16_EMULATED:
    case TG_GEMM_HALF_AMX_EMULATED: return true;
#if TG_BF16_X86
    case TG_GEMM_HALF_AVX512BF16:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
#endif
#if TG_AMX
    case TG_GEMM_HALF_AMX: /* its finish is AVX-512 code (amx_finish), as on every AMX CPU */
        __builtin_cpu_init();
        if (!__builtin_cpu_supports("avx512f")) return false;
        pthread_once(&g_amx_once, amx_probe);
        return g_amx == AMX_GRANTED;
#endif
    default: return false;
    }
}

/* The kernel TAPEGRAD_GEMM_HALF names, or -1. */
static tg_gemm_half_kernel kernel_named(const char *name)
{
    static const char *const names[] = {[TG_GEMM_HALF_WIDEN] = "widen",
                                        [TG_GEMM_HALF_AVX512BF16] = "avx512bf16",
                                        [TG_GEMM_HALF_AVX512BF16_EMULATED] = "avx512bf16-emulated",
                                        [TG_GEMM_HALF_AMX] = "amx-bf16",
                                        [TG_GEMM_HALF_AMX_EMULATED] = "amx-bf16-emulated"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (names[k] && strcmp(name, names[k]) == 0) return (tg_gemm_half_kernel)k;
    return (tg_gemm_half_kernel)-1;
}

static bool kernel_checks_out(tg_gemm_half_kernel k);

/* VDPBF16PS against the float32 FMA. Without AMX the AVX512-BF16 kernel
 * pays only where its instruction outruns the FMA by more than widening
 * the operands costs the widening kernel. A core that issues a VDPBF16PS
 * as often as an FMA does two products per lane for the FMA's one; but the
 * Intel Xeon with AMX this was measured on issues one VDPBF16PS for four
 * FMAs (bench_peak), and there, with AMX refused, that kernel's training
 * step is slower than widening's and than float32's (docs/PERF.md). The
 * CPU's name does not say which it is, so the rates are measured, once
 * (core/kernels/peak.h). */
static double g_bf16_rate;
static pthread_once_t g_rate_once = PTHREAD_ONCE_INIT;

/* Each loop's best of 7, alternating, so that a slow spell of a shared
 * host, or the first loop's wait for the wide units, weighs on neither. */
static void rate_probe(void)
{
    enum { STEPS = 4096 }; /* 20-80 us a loop */
    if (!tg_peak_can_run(TG_PEAK_DPBF16_ZMM) || !tg_peak_can_run(TG_PEAK_FMA_ZMM)) return;
    double dp = 1e9, fm = 1e9;
    for (int r = 0; r < 7; r++) {
        double a = tg_peak_seconds(TG_PEAK_DPBF16_ZMM, STEPS), b = tg_peak_seconds(TG_PEAK_FMA_ZMM, STEPS);
        dp = a < dp ? a : dp;
        fm = b < fm ? b : fm;
    }
    /* as many instructions of each (16 a step) */
    if (dp > 0 && fm > 0) g_bf16_rate = tg_peak_flop(TG_PEAK_DPBF16_ZMM) * fm / (tg_peak_flop(TG_PEAK_FMA_ZMM) * dp);
}

double tg_gemm_half_bf16_rate(void)
{
    pthread_once(&g_rate_once, rate_probe);
    return g_bf16_rate;
}

/* A kernel the environment names and this CPU runs is taken without asking
 * for the others: the AMX tile state is requested only where AMX may run
 * (once granted, Linux refuses alternate signal stacks too small for it). */
static void choose_kernel(void)
{
    const char *env = getenv("TAPEGRAD_GEMM_HALF");
    bool named = env && *env;
    tg_gemm_half_kernel want = named ? kernel_named(env) : (tg_gemm_half_kernel)-1;
    bool runs = want != (tg_gemm_half_kernel)-1 && tg_gemm_half_can_run(want);
    if (runs && kernel_checks_out(want)) {
        g_kernel = want;
        return;
    }
    tg_gemm_half_kernel k = TG_GEMM_HALF_WIDEN;
    if (want != TG_GEMM_HALF_AMX && tg_gemm_half_can_run(TG_GEMM_HALF_AMX) && kernel_checks_out(TG_GEMM_HALF_AMX))
        k = TG_GEMM_HALF_AMX;
    else if (want != TG_GEMM_HALF_AVX512BF16 && tg_gemm_half_can_run(TG_GEMM_HALF_AVX512BF16) &&
             tg_gemm_half_bf16_rate() >= TG_GEMM_HALF_BF16_RATE_MIN && kernel_checks_out(TG_GEMM_HALF_AVX512BF16))
        k = TG_GEMM_HALF_AVX512BF16;
    /* a setting that cannot be followed is said, once, not ignored */
    if (named && want == (tg_gemm_half_kernel)-1)
        fprintf(stderr,
                "tapegrad: TAPEGRAD_GEMM_HALF=%s is not widen, avx512bf16, avx512bf16-emulated, amx-bf16 or "
                "amx-bf16-emulated; using %s\n",
                env, tg_gemm_half_kernel_name(k));
    else if (named)
        fprintf(stderr, "tapegrad: TAPEGRAD_GEMM_HALF=%s: %s; using %s\n", env,
                runs ? "its check product failed"
                : want == TG_GEMM_HALF_AMX && g_amx == AMX_REFUSED
                    ? "the operating system refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)"
                    : "this CPU cannot run it",
                tg_gemm_half_kernel_name(k));
    g_kernel = k;
}

tg_gemm_half_kernel tg_gemm_half_get_kernel(void)
{
    pthread_once(&g_kernel_once, choose_kernel);
    return g_kernel;
}

const char *tg_gemm_half_kernel_name(tg_gemm_half_kernel k)
{
    switch (k) {
    case TG_GEMM_HALF_WIDEN: return "widen-to-float32";
    case TG_GEMM_HALF_AVX512BF16: return "avx512bf16-12x32";
    case TG_GEMM_HALF_AVX512BF16_EMULATED: return "avx512bf16-emulated";
    case TG_GEMM_HALF_AMX: return "amx-bf16-32x32";
    case TG_GEMM_HALF_AMX_EMULATED: return "amx-bf16-emulated";
    default: return "?";
    }
}

bool tg_gemm_half_set_kernel(tg_gemm_half_kernel k)
{
    pthread_once(&g_kernel_once, choose_kernel);
    if (!tg_gemm_half_can_run(k)) return false;
    g_kernel = k;
    return true;
}

/* ---- scratch ---------------------------------------------------------------- */

/* Each thread's widened operands, grown to the largest product the thread
 * has run and kept until it exits, so that a training step after the first
 * allocates nothing, as in float32. */
typedef struct scratch_slot {
    void *p;
    size_t n;
} scratch_slot;
static _Thread_local scratch_slot t_scratch;
static pthread_key_t g_scratch_key;
static pthread_once_t g_scratch_once = PTHREAD_ONCE_INIT;

static void scratch_release(void *slot)
{
    scratch_slot *s = slot;
    tg_free(s->p);
    *s = (scratch_slot){0};
}
static void scratch_key_make(void) { pthread_key_create(&g_scratch_key, scratch_release); }

/* At least n bytes of this thread's scratch (its contents not kept); NULL
 * when they cannot be had. */
static void *scratch(size_t n)
{
    scratch_slot *s = &t_scratch;
    if (n < 64) n = 64; /* never 0 bytes, which malloc may answer with NULL */
    if (n <= s->n) return s->p;
    pthread_once(&g_scratch_once, scratch_key_make);
    tg_free(s->p);
    *s = (scratch_slot){tg_malloc(n), n};
    if (!s->p) return s->n = 0, NULL;
    /* the exiting thread's scratch is freed by the key's destructor */
    if (!pthread_getspecific(g_scratch_key)) pthread_setspecific(g_scratch_key, s);
    return s->p;
}

/* One-thread time of packing an element (read, rounded, stored), for the
 * thread split of packing and rounding. */
#define PACK_NS 0.3

/* ---- the widening kernel ---------------------------------------------------- */

/* dst [rows x cols] (contiguous) = src's rows, ld apart, widened. */
static void widen_rows(float *dst, const uint16_t *src, int rows, int cols, int ld, tg_dtype dt)
{
    for (int r = 0; r < rows; r++)
        tg_half_widen_n(dst + (size_t)r * cols, src + (size_t)r * ld, (size_t)cols, dt);
}

/* op(A) [M,K] and op(B) [K,N] as stored: A [ra x ca], B [rb x cb], na and
 * nb elements (the copies the widening and rounding paths make). */
typedef struct stored {
    int ra, ca, rb, cb;
    size_t na, nb;
} stored;

static stored stored_of(bool ta, bool tb, int M, int N, int K)
{
    stored d = {ta ? K : M, ta ? M : K, tb ? N : K, tb ? K : N, 0, 0};
    d.na = (size_t)d.ra * d.ca, d.nb = (size_t)d.rb * d.cb;
    return d;
}

static bool gemm_widen(tg_dtype dt, bool ta, bool tb, int M, int N, int K, float alpha, const uint16_t *A,
                       int lda, const uint16_t *B, int ldb, float beta, float *C, int ldc)
{
    stored d = stored_of(ta, tb, M, N, K);
    float *w = scratch((d.na + d.nb) * sizeof *w);
    if (!w) return tg_error_set("tg_gemm_half: out of memory widening [%d,%d] and [%d,%d] operands", d.ra, d.ca,
                                d.rb, d.cb) == 0;
    widen_rows(w, A, d.ra, d.ca, lda, dt);
    widen_rows(w + d.na, B, d.rb, d.cb, ldb, dt);
    tg_sgemm(ta, tb, M, N, K, alpha, w, d.ca > 0 ? d.ca : 1, w + d.na, d.cb > 0 ? d.cb : 1, beta, C, ldc);
    return true;
}

/* ---- the tiles: intrinsics and emulation ------------------------------------ */

/* bias (NULL: none): the tile's columns' bias, added as a beta-1 C holding
 * it would be (t + bias, one rounding), with beta 0 */
typedef void (*bf16_tile_fn)(const uint32_t *a, const uint32_t *b, int kp, float *c, int ldc, int m, int n,
                             float alpha, float beta, const float *bias);

typedef struct emu_f { float f[16]; } emu_f;
typedef struct emu_w { uint32_t w[16]; } emu_w;

static emu_f emu_zero(void) { return (emu_f){{0}}; }
static emu_w emu_load(const uint32_t *p)
{
    emu_w v;
    memcpy(v.w, p, sizeof v.w);
    return v;
}
static emu_w emu_bcast(uint32_t w)
{
    emu_w v;
    for (int l = 0; l < 16; l++) v.w[l] = w;
    return v;
}
static emu_f emu_dp(emu_f acc, emu_w x, emu_w y)
{
    for (int l = 0; l < 16; l++) acc.f[l] = tg_emu_dpbf16(acc.f[l], x.w[l], y.w[l]);
    return acc;
}
static uint32_t emu_lanes(int n) { return n >= 16 ? 0xFFFFu : n <= 0 ? 0 : (1u << n) - 1; }
static emu_f emu_scale(emu_f v, float s)
{
    for (int l = 0; l < 16; l++) v.f[l] *= s;
    return v;
}
static emu_f emu_fmadd(float s, emu_f c, emu_f t)
{
    for (int l = 0; l < 16; l++) t.f[l] = fmaf(s, c.f[l], t.f[l]);
    return t;
}
static emu_f emu_load_masked(uint32_t k, const float *p)
{
    emu_f v = emu_zero();
    for (int l = 0; l < 16; l++)
        if (k >> l & 1) v.f[l] = p[l];
    return v;
}
static void emu_store_masked(float *p, uint32_t k, emu_f v)
{
    for (int l = 0; l < 16; l++)
        if (k >> l & 1) p[l] = v.f[l];
}

#define TILE_NAME tile_emulated
#define TILE_ATTR static
#define VF emu_f
#define VW emu_w
#define MASK uint32_t
#define VF_ZERO emu_zero
#define VW_LOAD emu_load
#define VW_BCAST emu_bcast
#define VF_DPBF16 emu_dp
#define LANES emu_lanes
#define VF_SCALE emu_scale
#define VF_FMADD emu_fmadd
#define VF_LOAD_MASKED emu_load_masked
#define VF_STORE_MASKED emu_store_masked
#include "gemm_half_tile.inc"
#undef TILE_NAME
#undef TILE_ATTR
#undef VF
#undef VW
#undef MASK
#undef VF_ZERO
#undef VW_LOAD
#undef VW_BCAST
#undef VF_DPBF16
#undef LANES
#undef VF_SCALE
#undef VF_FMADD
#undef VF_LOAD_MASKED
#undef VF_STORE_MASKED

#if TG_BF16_X86
#define TILE_NAME tile_avx512bf16
#define TILE_ATTR static __attribute__((target("avx512f,avx512bf16")))
#define VF __m512
#define VW __m512bh
#define MASK __mmask16
#define VF_ZERO() _mm512_setzero_ps()
#define VW_LOAD(p) ((__m512bh)_mm512_loadu_si512(p))
#define VW_BCAST(w) ((__m512bh)_mm512_set1_epi32((int)(w)))
#define VF_DPBF16(acc, x, y) _mm512_dpbf16_ps(acc, x, y)
#define LANES(n) ((n) >= 16 ? (__mmask16)0xFFFF : (n) <= 0 ? (__mmask16)0 : (__mmask16)((1u << (n)) - 1))
#define VF_SCALE(v, s) _mm512_mul_ps(v, _mm512_set1_ps(s))
#define VF_FMADD(s, c, t) _mm512_fmadd_ps(_mm512_set1_ps(s), c, t)
#define VF_LOAD_MASKED(k, p) _mm512_maskz_loadu_ps(k, p)
#define VF_STORE_MASKED(p, k, v) _mm512_mask_storeu_ps(p, k, v)
#include "gemm_half_tile.inc"
#endif

/* ---- TDPBF16PS's tiles, emulated ------------------------------------------- */

static void emu_tile_load(tg_emu_tile *t, const void *p, long stride)
{
    for (int r = 0; r < 16; r++) memcpy(t->d[r], (const char *)p + r * stride, 64);
}

static void emu_tile_store(void *p, long stride, const tg_emu_tile *t)
{
    for (int r = 0; r < 16; r++) memcpy((char *)p + r * stride, t->d[r], 64);
}

/* ---- the AMX blocks: intrinsics and emulation ------------------------------- */

/* C's block from the tiles' sums acc [AMX_MR x AMX_NR]: alpha acc + beta C,
 * each element as the AVX512-BF16 tile does it (a rounded product, then one
 * fused multiply-add); shared by both versions, so their bits agree. Inlined,
 * so the AMX kernel's target (AVX-512 and FMA) makes it vector code rather
 * than a libm fmaf call per element. */
static inline __attribute__((always_inline)) void amx_finish(const float *acc, float *c, int ldc, int m, int n,
                                                              float alpha, float beta, const float *bias)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float *cij = c + (size_t)i * ldc + j, t = acc[i * AMX_NR + j] * alpha;
            *cij = bias ? fmaf(1.0f, bias[j], t) : beta != 0 ? fmaf(beta, *cij, t) : t;
        }
}

#define AMX_NAME amx_emulated
#define AMX_ATTR static
#define AMX_BEGIN() tg_emu_tile tmm[8]
#define AMX_ZERO(t) memset(&tmm[t], 0, sizeof tmm[t])
#define AMX_LOAD(t, p, s) emu_tile_load(&tmm[t], p, s)
#define AMX_STORE(t, p, s) emu_tile_store(p, s, &tmm[t])
#define AMX_DP(c, a, b) tg_emu_tdpbf16(&tmm[c], &tmm[a], &tmm[b])
#include "gemm_half_amx.inc"
#undef AMX_NAME
#undef AMX_ATTR
#undef AMX_BEGIN
#undef AMX_ZERO
#undef AMX_LOAD
#undef AMX_STORE
#undef AMX_DP

#if TG_AMX
/* LDTILECFG's 64 bytes: palette 1, then per tile its bytes per row (16-bit,
 * from byte 16) and rows (from byte 48); tiles 0-7 all 16 x 64 bytes. */
static const struct amx_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};
_Static_assert(sizeof amx_config == 64, "LDTILECFG reads 64 bytes");

#define AMX_NAME amx_tiles
#define AMX_ATTR static __attribute__((target("amx-tile,amx-bf16,avx512f,fma")))
/* (the compiler barrier: tileloadd's asm reads the packed panels through a
 * pointer without saying so; tilestored's says it writes memory) */
#define AMX_BEGIN() __asm__ volatile("" ::: "memory")
#define AMX_ZERO(t) _tile_zero(t)
#define AMX_LOAD(t, p, s) _tile_loadd(t, p, s)
#define AMX_STORE(t, p, s) _tile_stored(t, p, s)
#define AMX_DP(c, a, b) _tile_dpbf16ps(c, a, b)
#include "gemm_half_amx.inc"

/* The tile configuration, loaded once for a thread's share of a product
 * (LDTILECFG costs as much as a small tile's products) and released after. */
static __attribute__((target("amx-tile"))) void amx_begin(void) { _tile_loadconfig(&amx_config); }
static __attribute__((target("amx-tile"))) void amx_end(void) { _tile_release(); }
#endif

/* ---- packing and blocking --------------------------------------------------- */

/* A bfloat16 kernel's tile and its shapes. */
typedef struct bf16_kernel {
    bf16_tile_fn tile;
    int mr, nr; /* the rows and columns of C a tile call computes */
    int kq;     /* pairs per step: a K block's pairs are zero-padded to a multiple */
    bool a_by_row; /* A panels hold each row's pairs together (AMX's A tiles),
                      not each pair's rows (the broadcasts of VDPBF16PS) */
    double ns_per_mac;
    void (*begin)(void), (*end)(void); /* around a thread's tile calls, or NULL */
} bf16_kernel;

static const bf16_kernel BF16_EMULATED = {tile_emulated, BF_MR, BF_NR, 1, false, BF_NS_PER_MAC_EMULATED, NULL, NULL};
static const bf16_kernel AMX_EMULATED = {amx_emulated, AMX_MR, AMX_NR, 16, true, BF_NS_PER_MAC_EMULATED, NULL, NULL};
#if TG_BF16_X86
static const bf16_kernel BF16_AVX512 = {tile_avx512bf16, BF_MR, BF_NR, 1, false, BF_NS_PER_MAC, NULL, NULL};
#endif
#if TG_AMX
static const bf16_kernel AMX_TILES = {amx_tiles, AMX_MR, AMX_NR, 16, true, AMX_NS_PER_MAC, amx_begin, amx_end};
#endif

typedef struct bf16_args {
    bool ta, tb;
    int M, N, K;
    float alpha, beta;
    tg_bf16_src A, B;
    int lda, ldb, ldc;
    float *C;
    const bf16_kernel *kern;
    const float *bias; /* [N] added to every row of C (beta 0), or NULL */
    uint32_t *b;      /* the shared B block */
    int pc, kc, kp, jc, nc;
    bool split_m;     /* threads take rows of C, each packing its A rows; else
                         columns of the block, A packed once into own_a */
    /* the calling thread's A buffer, lent to a worker that cannot get its
       own (out of memory): the product always completes */
    void *own_a;
    pthread_mutex_t own_lock;
} bf16_args;

/* The blocks are packed into tg_sgemm's per-thread buffers: an A block is
 * at most BF_MC rows (a multiple of every MR) of BF_KC / 2 pairs (a multiple
 * of every kq), a B block at least BF_NC columns (a multiple of every NR;
 * more when K is shorter). */
_Static_assert(BF_MC % BF_MR == 0 && BF_MC % AMX_MR == 0 && BF_NC % BF_NR == 0 && BF_NC % AMX_NR == 0 &&
                   BF_KC / 2 % 16 == 0,
               "the blocks are whole tiles and steps");
_Static_assert(sizeof(uint32_t) * BF_MC * (BF_KC / 2) <= TG_GEMM_PACK_A &&
                   sizeof(uint32_t) * BF_NC * (BF_KC / 2) <= TG_GEMM_PACK_B,
               "a packed block fits tg_sgemm's pack buffer");

/* The pairs of a K block of kc, padded to the kernel's step. */
static int block_pairs(const bf16_kernel *kern, int kc) { return ((kc + 1) / 2 + kern->kq - 1) / kern->kq * kern->kq; }

/* B panels [begin, end) of the block into the shared buffer. */
static void bf16_pack_b(void *ctx, int begin, int end)
{
    const bf16_args *g = ctx;
    int nr = g->kern->nr, j0 = begin * nr, j1 = end * nr < g->nc ? end * nr : g->nc;
    tg_bf16_pack(g->B, g->ldb, !g->tb, g->jc + j0, j1 - j0, g->pc, g->kc, g->kp, nr, g->kern->kq, false,
               g->b + (size_t)j0 * g->kp);
}

/* A panels [begin, end) of the K block into the shared A buffer (!split_m). */
static void bf16_pack_a(void *ctx, int begin, int end)
{
    const bf16_args *g = ctx;
    int mr = g->kern->mr, i0 = begin * mr, i1 = end * mr < g->M ? end * mr : g->M;
    tg_bf16_pack(g->A, g->lda, g->ta, i0, i1 - i0, g->pc, g->kc, g->kp, mr, g->kern->kq, g->kern->a_by_row,
               (uint32_t *)g->own_a + (size_t)i0 * g->kp);
}

/* C[i0:i1, jc+j0 : jc+j1] of the block, A's rows packed into a (or, with
 * !pack, already there from row 0). */
static void bf16_tiles(const bf16_args *g, uint32_t *a, bool pack, int i0, int i1, int j0, int j1)
{
    const bf16_kernel *kern = g->kern;
    int mr = kern->mr, nr = kern->nr, kp = g->kp;
    float beta = g->pc == 0 ? g->beta : 1.0f;
    for (int ic = i0; ic < i1; ic += BF_MC) {
        int mc = i1 - ic < BF_MC ? i1 - ic : BF_MC;
        if (pack) tg_bf16_pack(g->A, g->lda, g->ta, ic, mc, g->pc, g->kc, kp, mr, kern->kq, kern->a_by_row, a);
        else a = (uint32_t *)g->own_a + (size_t)ic * kp;
        for (int ir = 0; ir < mc; ir += mr)
            for (int jr = j0; jr < j1; jr += nr) {
                float *c = g->C + (size_t)(ic + ir) * g->ldc + g->jc + jr;
                int m = mc - ir < mr ? mc - ir : mr, n = j1 - jr < nr ? j1 - jr : nr;
                kern->tile(a + (size_t)ir * kp, g->b + (size_t)jr * kp, kp, c, g->ldc, m, n, g->alpha, beta,
                           g->bias && g->pc == 0 ? g->bias + g->jc + jr : NULL);
            }
    }
}

/* A thread's share of the block: tiles [begin, end) along M (split_m, mr
 * rows each) or along the block's columns (nr each). */
static void bf16_chunk(void *ctx, int begin, int end)
{
    bf16_args *g = ctx;
    int i0 = 0, i1 = g->M, j0 = 0, j1 = g->nc, mr = g->kern->mr, nr = g->kern->nr;
    if (!g->split_m) {
        j0 = begin * nr, j1 = end * nr < g->nc ? end * nr : g->nc;
        if (g->kern->begin) g->kern->begin();
        bf16_tiles(g, NULL, false, i0, i1, j0, j1);
        if (g->kern->end) g->kern->end();
        return;
    }
    i0 = begin * mr, i1 = end * mr < g->M ? end * mr : g->M;
    void *a, *b;
    bool own = tg_gemm_pack_buffers(&a, &b) && a != g->own_a;
    if (!own) pthread_mutex_lock(&g->own_lock);
    if (g->kern->begin) g->kern->begin();
    bf16_tiles(g, own ? a : g->own_a, true, i0, i1, j0, j1);
    if (g->kern->end) g->kern->end();
    if (!own) pthread_mutex_unlock(&g->own_lock);
}

/* Block by block (K outer, so that each element of C gets its K blocks in
 * order, whatever the cut): B's block packed once by all threads, then its
 * tiles computed by all threads. */
static bool gemm_bf16(const bf16_kernel *kern, bool ta, bool tb, int M, int N, int K, float alpha, tg_bf16_src A,
                      int lda, tg_bf16_src B, int ldb, float beta, const float *bias, float *C, int ldc)
{
    bf16_args g = {.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .alpha = alpha, .beta = beta, .A = A, .B = B,
                   .lda = lda, .ldb = ldb, .ldc = ldc, .C = C, .kern = kern, .bias = bias,
                   .own_lock = PTHREAD_MUTEX_INITIALIZER};
    void *b;
    if (!tg_gemm_pack_buffers(&g.own_a, &b))
        return tg_error_set("tg_gemm_half: out of memory for the pack buffers of [%d,%d] x [%d,%d]", M, K, K, N) == 0;
    g.b = b;
    int mr = kern->mr, nr = kern->nr, kc0 = K < BF_KC ? K : BF_KC;
    /* as many columns as the B buffer holds at this K */
    int ncmax = (int)(TG_GEMM_PACK_B / (sizeof(uint32_t) * (size_t)block_pairs(kern, kc0))) / nr * nr;
    for (g.pc = 0; g.pc < K; g.pc += BF_KC) {
        g.kc = K - g.pc < BF_KC ? K - g.pc : BF_KC, g.kp = block_pairs(kern, g.kc);
        for (g.jc = 0; g.jc < N; g.jc += ncmax) {
            g.nc = N - g.jc < ncmax ? N - g.jc : ncmax;
            int panels = (g.nc + nr - 1) / nr, rows = (M + mr - 1) / mr;
            if (panels > 1 && tg_parallel_pays((double)g.nc * g.kc * PACK_NS)) tg_parallel_for(panels, bf16_pack_b, &g);
            else bf16_pack_b(&g, 0, panels);
            /* Threads take rows where there are more of them than columns; else
               A's block (at most BF_MC rows: it fits the buffer) is packed once too */
            g.split_m = M >= g.nc || M > BF_MC;
            if (!g.split_m) {
                if (rows > 1 && tg_parallel_pays((double)M * g.kc * PACK_NS)) tg_parallel_for(rows, bf16_pack_a, &g);
                else bf16_pack_a(&g, 0, rows);
            }
            int tiles = g.split_m ? rows : panels;
            if (tiles > 1 && tg_parallel_pays((double)M * g.nc * g.kc * kern->ns_per_mac))
                tg_parallel_for(tiles, bf16_chunk, &g);
            else bf16_chunk(&g, 0, tiles);
        }
    }
    pthread_mutex_destroy(&g.own_lock);
    return true;
}

/* The bfloat16 kernel k names, NULL for widen. */
static const bf16_kernel *kernel_desc(tg_gemm_half_kernel k)
{
    switch (k) {
    case TG_GEMM_HALF_AVX512BF16_EMULATED: return &BF16_EMULATED;
    case TG_GEMM_HALF_AMX_EMULATED: return &AMX_EMULATED;
#if TG_BF16_X86
    case TG_GEMM_HALF_AVX512BF16: return &BF16_AVX512;
#endif
#if TG_AMX
    case TG_GEMM_HALF_AMX: return &AMX_TILES;
#endif
    default: return NULL;
    }
}

/* The bfloat16 kernel that runs a dt product, NULL when it is widened. */
static const bf16_kernel *kernel_for(tg_dtype dt)
{
    return dt == TG_BF16 ? kernel_desc(tg_gemm_half_get_kernel()) : NULL;
}

/* A kernel's check before it is chosen, so that no wrong product leaves a
 * kernel the tests have not seen run on this CPU: one product with an edge
 * tile in every dimension, an odd K and beta != 0, against a double
 * reference of the same bfloat16 operands. Float32 sums of exact products
 * stay within (K + 4) 2^-23 (|alpha| sum |a b| + |beta c|); wrong tiles or
 * packing are off by the size of the terms. */
static float check_uniform(uint32_t *x) /* [-1, 1), an LCG's top 24 bits */
{
    *x = *x * 1664525u + 1013904223u;
    return (float)(*x >> 8) * 0x1p-23f - 1.0f;
}

static bool kernel_checks_out(tg_gemm_half_kernel k)
{
    enum { M = 37, N = 45, K = 67 };
    const bf16_kernel *kern = kernel_desc(k);
    if (!kern) return true;
    uint16_t a[M * K], b[N * K]; /* a [M,K], b [N,K]: op(B) = b^T */
    float c[M * N], c0[M * N], alpha = 0.75f, beta = 0.5f;
    uint32_t x = 12345;
    for (int i = 0; i < M * K; i++) a[i] = tg_bf16_from_float(check_uniform(&x));
    for (int i = 0; i < N * K; i++) b[i] = tg_bf16_from_float(check_uniform(&x));
    for (int i = 0; i < M * N; i++) c[i] = c0[i] = check_uniform(&x);
    if (!gemm_bf16(kern, false, true, M, N, K, alpha, (tg_bf16_src){a, false}, K, (tg_bf16_src){b, false}, K, beta,
                   NULL, c, N)) {
        /* a kernel not checked is not used, and the choice is made once: said */
        fprintf(stderr, "tapegrad: the %s kernel's check product could not run (%s); not used\n",
                tg_gemm_half_kernel_name(k), tg_error());
        return false;
    }
    bool ok = true;
    for (int i = 0; ok && i < M; i++)
        for (int j = 0; ok && j < N; j++) {
            double sum = 0, mag = 0;
            for (int p = 0; p < K; p++) {
                double t = (double)tg_bf16_to_float(a[i * K + p]) * tg_bf16_to_float(b[j * K + p]);
                sum += t, mag += fabs(t);
            }
            double want = alpha * sum + beta * (double)c0[i * N + j];
            double bound = (K + 4) * 0x1p-23 * (alpha * mag + beta * fabs(c0[i * N + j]));
            if (!(fabs(c[i * N + j] - want) <= bound)) {
                fprintf(stderr, "tapegrad: the %s kernel's check product is wrong (C[%d,%d] = %.9g, not %.9g); "
                        "not used\n", tg_gemm_half_kernel_name(k), i, j, c[i * N + j], want);
                ok = false;
            }
        }
    return ok;
}

bool tg_gemm_half(tg_dtype dt, bool ta, bool tb, int M, int N, int K, float alpha, const uint16_t *A, int lda,
                  const uint16_t *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return true;
    if (!tg_dtype_is_half(dt)) return tg_error_set("tg_gemm_half: operands are %s, not bfloat16 or float16",
                                                   tg_dtype_name(dt)) == 0;
    /* K == 0 or alpha == 0: C = beta C without reading A or B */
    if (K <= 0 || alpha == 0) ta = tb = false, K = 0;
    const bf16_kernel *kern = kernel_for(dt);
    if (K > 0 && kern)
        return gemm_bf16(kern, ta, tb, M, N, K, alpha, (tg_bf16_src){A, false}, lda, (tg_bf16_src){B, false}, ldb, beta,
                         NULL, C, ldc);
    return gemm_widen(dt, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* rows x cols float32 (rows ld apart) rounded to dt and widened back into
 * dst, contiguous: an operand of the widening kernel. */
typedef struct quantize_job {
    float *dst;
    const float *src;
    int cols, ld;
    tg_dtype dt;
} quantize_job;

static void quantize_rows(void *ctx, size_t begin, size_t end)
{
    const quantize_job *j = ctx;
    for (size_t r = begin; r < end; r++)
        tg_half_quantize_n(j->dst + r * (size_t)j->cols, j->src + r * (size_t)j->ld, (size_t)j->cols, j->dt);
}

static void quantize(float *dst, const float *src, int rows, int cols, int ld, tg_dtype dt)
{
    quantize_job j = {dst, src, cols, ld, dt};
    tg_parallel_range((size_t)rows, cols * PACK_NS, quantize_rows, &j);
}

bool tg_gemm_rounded(tg_dtype dt, bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return true;
    if (!tg_dtype_is_half(dt)) return tg_error_set("tg_gemm_rounded: operands are rounded to %s, not bfloat16 or "
                                                   "float16", tg_dtype_name(dt)) == 0;
    if (K <= 0 || alpha == 0) return tg_gemm_half(dt, false, false, M, N, 0, alpha, NULL, 1, NULL, 1, beta, C, ldc);
    const bf16_kernel *kern = kernel_for(dt);
    if (kern) /* rounded as packed */
        return gemm_bf16(kern, ta, tb, M, N, K, alpha, (tg_bf16_src){A, true}, lda, (tg_bf16_src){B, true}, ldb, beta,
                         NULL, C, ldc);
    /* widened: the values the widening kernel would widen, made in one pass
       of each operand across the threads, into float32's kernel */
    stored d = stored_of(ta, tb, M, N, K);
    float *w = scratch((d.na + d.nb) * sizeof *w);
    if (!w) return tg_error_set("tg_gemm_rounded: out of memory rounding [%d,%d] @ [%d,%d] operands", M, K, K, N) == 0;
    quantize(w, A, d.ra, d.ca, lda, dt);
    quantize(w + d.na, B, d.rb, d.cb, ldb, dt);
    tg_sgemm(ta, tb, M, N, K, alpha, w, d.ca, w + d.na, d.cb, beta, C, ldc);
    return true;
}

bool tg_gemm_rounded_bias(tg_dtype dt, bool tb, int M, int N, int K, const float *A, const float *B,
                          const float *bias, float *C)
{
    const bf16_kernel *kern = M > 0 && N > 0 && K > 0 ? kernel_for(dt) : NULL;
    if (kern)
        return gemm_bf16(kern, false, tb, M, N, K, 1, (tg_bf16_src){A, true}, K, (tg_bf16_src){B, true}, tb ? K : N, 0,
                         bias, C, N);
    for (int i = 0; i < M; i++) memcpy(C + (size_t)i * N, bias, sizeof *C * (size_t)N);
    return tg_gemm_rounded(dt, false, tb, M, N, K, 1, A, K, B, tb ? K : N, 1, C, N);
}
