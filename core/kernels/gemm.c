/* tapegrad: single-precision GEMM, BLIS-style (see core/kernels/gemm.h).
 *
 * C[M,N] += op(A)[M,K] op(B)[K,N] is cut into MR x NR tiles computed by a
 * micro-kernel that keeps the whole tile in registers: per k it loads NR/16
 * vectors of a B row and broadcasts MR values of an A column into them (one
 * FMA per accumulator). Around it, blocking loops keep each operand in the
 * cache level that can feed the kernel:
 *
 *   for ic in M step MC           A block [MC x KC] packed as MR-row panels
 *    for pc in K step KC          (beta applies on the first K block only)
 *     pack A block
 *     for jc in N step NC         B block [KC x NC] packed as NR-column panels:
 *      pack B block               it stays in L2 (KC * NC * 4 B = 1 MiB of 2 MiB)
 *      for ir in MC step MR       one A panel (MR * KC * 4 B = 18 KiB) stays in
 *       for jr in NC step NR      L1 (48 KiB) while the B panels stream from L2
 *        micro-kernel
 *
 * Choices (for a core with 32 zmm registers, 2 FMA ports, L1d >= 48 KiB, L2 >= 1 MiB):
 *   - AVX-512 MR x NR = 12 x 32: 24 zmm accumulators, 2 for B, broadcasts
 *     folded into the FMAs; 24 independent FMAs per k hide the 4-cycle FMA
 *     latency on 2 ports (8 would do). AVX2: 6 x 16, 12 ymm accumulators.
 *   - Narrow N (16, 20, 64 + 16...) would waste half of a 32-wide tile: the
 *     last panel of a B block is 16 wide (8 for AVX2) when it fits, and a
 *     12 x 16 kernel runs it.
 *   - KC = 384 amortises loading and storing the C tile (24 vectors per
 *     384 x 24 FMAs) and keeps the A panel in L1. NC = 672 (21 x 32): the B
 *     block is 1 MiB. MC = 1536: the A block only needs L3, and a large MC
 *     means B is packed again only once per MC rows.
 *   - Packing is copying, never a scalar transpose: A panels keep A's rows
 *     ([MR x KC], stride KC, which does not alias in L1 as lda = 1024 does) or,
 *     for A^T, its contiguous columns ([KC x MR]); B^T is transposed by 16 x 16
 *     register blocks.
 *   - Small products skip packing: an A panel met by few B panels (N <= 128),
 *     an A of at most 8 rows, and a B panel met by few A panels (M <= 96, B
 *     not transposed) are read in place by "direct" kernels (any strides,
 *     masked B loads), which also come with 8 and 4 rows for the last rows
 *     of A (26 = 12 + 12 + 2) and for short products.
 *   - Edges: packed panels are zero-padded; the kernel computes the whole tile
 *     and stores only the valid m x n part with masked stores, so an edge tile
 *     does the same arithmetic as a full one and touches nothing outside C.
 *   - Threads split C along M (in MR rows) or N (in NR columns), never K, and
 *     every element gets the same FMAs in the same order whatever its tile,
 *     kernel or thread: the result is bit-identical for any thread count. Each
 *     thread packs into buffers of its own, kept for the process; the operand
 *     every thread needs (B's block when they split M, A's when they split
 *     N) is packed once, by all of them, into the calling thread's buffer.
 */
#include "gemm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openblas.h"
#include "threads.h"

/* The micro-kernels are x86-64 only (chosen at run time from the CPU);
 * elsewhere every product goes to cblas_sgemm. */
#if defined(__x86_64__) && defined(__GNUC__)
#define TG_GEMM_X86 1
#include <immintrin.h>
#else
#define TG_GEMM_X86 0
#endif

#define KC 384
#define NC 672
#define MC 1536
_Static_assert(TG_GEMM_PACK_A == sizeof(float) * MC * KC && TG_GEMM_PACK_B == sizeof(float) * KC * NC,
               "gemm.h's pack buffer sizes are this file's blocks");
/* When packing pays, in panels of the other operand (see gemm_block). */
#define PACK_A_MIN_PANELS 4
#define PACK_B_MIN_PANELS 8
/* One-thread time of a multiply-add at the small shapes where the split
 * is decided (bench/bench_threads: [64..1024, 64] x [64, 64], 0.02 ns) */
#define GEMM_NS_PER_MAC 0.02
/* One-thread time of packing a float (a shared block) */
#define PACK_NS 0.2

/* One tile for a micro-kernel: C[m,n] = alpha * A B + beta * C (beta == 0:
 * C not read), A [m x kc] with element (i, k) at a[i*rsa + k*csa], B [kc x n]
 * with row k at b + k*rsb; m <= MR, n <= the panel width. With bias (only
 * where beta == 0), C[i,j] = alpha * (A B)[i,j] + bias[j]. */
typedef struct tile {
    const float *a, *b;
    ptrdiff_t rsa, csa, rsb;
    const float *bias;
    float *c;
    int ldc, m, n, kc;
    float alpha, beta;
} tile;

typedef void (*ukernel)(const tile *t);

/* Packs columns [j0, j0+n) of op(B) = B^T (B is [N, K], tb) over rows
 * [k0, k0+kc) into a panel [kc x w], columns past n zero. */
typedef void (*pack_bt_fn)(const float *B, int ldb, int k0, int kc, int j0, int n, int w, float *dst);

typedef struct kernel_desc {
    tg_gemm_kernel id;
    int mr, nr, nr_narrow;  /* the last panel of a block is nr_narrow wide if it fits */
    /* [0]: nr wide, [1]: nr_narrow wide; B packed for kmajor and rows */
    ukernel kmajor[2];  /* A packed k-major: rsa = 1, csa = MR */
    ukernel rows[2];    /* A packed by rows: rsa = KC, csa = 1 */
    ukernel direct[2];  /* any strides, B loads masked */
    int short_rows[2];  /* the direct kernels for m <= short_rows[s] rows */
    ukernel direct_short[2][2];
    pack_bt_fn pack_bt;
} kernel_desc;

#if TG_GEMM_X86
#define TG_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,fma")))
#define TG_AVX2 __attribute__((target("avx2,fma")))
#define TG_INLINE static inline __attribute__((always_inline))

/* Any CPU: read each row of B once, write with stride w. */
static void pack_bt_scalar(const float *B, int ldb, int k0, int kc, int j0, int n, int w, float *dst)
{
    for (int j = 0; j < n; j++) {
        const float *src = B + (size_t)(j0 + j) * ldb + k0;
        for (int k = 0; k < kc; k++) dst[(size_t)k * w + j] = src[k];
    }
    for (int j = n; j < w; j++)
        for (int k = 0; k < kc; k++) dst[(size_t)k * w + j] = 0;
}

/* ---- AVX-512 micro-kernels -------------------------------------------------- */

/* Mask of the valid lanes of vector v (16 lanes) when n columns are valid. */
TG_AVX512 static inline __mmask16 lanes512(int n, int v)
{
    int left = n - 16 * v;
    return left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
}

/* How a kernel finds A: the constant strides of the two packed layouts (the
 * compiler folds them into the addresses), or the tile's own. */
typedef enum a_layout { A_KMAJOR, A_ROWS, A_ANY } a_layout;

/* Offsets of the MR rows of A. Packed panels are zero-padded to MR rows; in
 * place (A_ANY), rows past m read row m-1 instead of outside A. Lanes of rows
 * past m are computed and never stored. */
#define ROW_OFFSETS(MR, L, t, off)                                                              \
    for (int i = 0; i < (MR); i++)                                                            \
        off[i] = (L) == A_KMAJOR ? i : (L) == A_ROWS ? (ptrdiff_t)i * KC                        \
                                     : (ptrdiff_t)(i < (t)->m ? i : (t)->m - 1) * (t)->rsa

/* R x (16 * NV), R = 12 (MR) or, for the last rows of a small product read
 * in place, 8 or 4; fully unrolled: the accumulators live in registers. B is
 * packed (rsb = 16 NV, zero-padded) unless A is A_ANY; then B rows are loaded
 * with the column mask (never outside B). */
TG_AVX512 TG_INLINE void kern512(int R, int NV, a_layout L, const tile *t)
{
    const bool packed = L != A_ANY;
    const float *a = t->a, *b = t->b;
    const ptrdiff_t csa = L == A_KMAJOR ? 12 : L == A_ROWS ? 1 : t->csa;
    const ptrdiff_t rsb = packed ? 16 * NV : t->rsb;
    const int m = t->m, n = t->n;
    ptrdiff_t off[12];
#pragma GCC unroll 12
    ROW_OFFSETS(R, L, t, off);
    const __mmask16 mk0 = lanes512(n, 0), mk1 = lanes512(n, 1);
    __m512 acc[12][2];
#pragma GCC unroll 12
    for (int i = 0; i < R; i++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) acc[i][v] = _mm512_setzero_ps();
    for (int k = 0; k < t->kc; k++) {
        __m512 b0 = packed ? _mm512_load_ps(b) : _mm512_maskz_loadu_ps(mk0, b);
        __m512 b1 = NV == 1 ? b0 : packed ? _mm512_load_ps(b + 16) : _mm512_maskz_loadu_ps(mk1, b + 16);
#pragma GCC unroll 12
        for (int i = 0; i < R; i++) {
            __m512 ai = _mm512_set1_ps(a[off[i]]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            if (NV > 1) acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += csa;
        b += rsb;
    }
    __m512 va = _mm512_set1_ps(t->alpha), vb = _mm512_set1_ps(t->beta);
#pragma GCC unroll 12
    for (int i = 0; i < R; i++) {
        if (i >= m) break;
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            __mmask16 mk = v == 0 ? mk0 : mk1;
            float *cv = t->c + (size_t)i * t->ldc + 16 * v;
            __m512 r = _mm512_mul_ps(acc[i][v], va);
            if (t->beta != 0) r = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mk, cv), r);
            else if (t->bias) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mk, t->bias + 16 * v));
            _mm512_mask_storeu_ps(cv, mk, r);
        }
    }
}

/* r[i] = row i of a 16 x 16 block -> r[j] = its column j. */
TG_AVX512 static inline void transpose16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {  /* pairs of rows interleaved by 32 bits */
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4)  /* by 64 bits: 4 x 4 blocks in each 128-bit lane */
        for (int h = 0; h < 2; h++) {
            __m512d x = _mm512_castps_pd(t[i + h]), y = _mm512_castps_pd(t[i + h + 2]);
            r[i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(x, y));
            r[i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x, y));
        }
    for (int i = 0; i < 16; i += 8)  /* then the 128-bit lanes, twice */
        for (int j = 0; j < 4; j++) {
            t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
            t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
        }
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
        r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
    }
}

/* pack_bt_scalar by 16 x 16 blocks: 16 rows of B in, 16 panel rows out
 * (the forward x W^T and q k^T pack their B this way). */
TG_AVX512 static void pack_bt_512(const float *B, int ldb, int k0, int kc, int j0, int n, int w,
                                  float *dst)
{
    for (int jb = 0; jb < w; jb += 16)
        for (int kb = 0; kb < kc; kb += 16) {
            int kn = kc - kb < 16 ? kc - kb : 16;
            __mmask16 km = (__mmask16)((1u << kn) - 1);
            __m512 r[16];
            for (int j = 0; j < 16; j++)
                r[j] = jb + j < n ? _mm512_maskz_loadu_ps(km, B + (size_t)(j0 + jb + j) * ldb + k0 + kb)
                                  : _mm512_setzero_ps();
            transpose16(r);
            for (int k = 0; k < kn; k++) _mm512_store_ps(dst + (size_t)(kb + k) * w + jb, r[k]);
        }
}

/* The instances, in pairs: nr wide and nr_narrow wide. */
#define KERNEL_PAIR(ISA, body, R, L)                                                            \
    ISA static void body##_##L##_##R##_wide(const tile *t) { body(R, 2, L, t); }                 \
    ISA static void body##_##L##_##R##_narrow(const tile *t) { body(R, 1, L, t); }
KERNEL_PAIR(TG_AVX512, kern512, 12, A_KMAJOR)
KERNEL_PAIR(TG_AVX512, kern512, 12, A_ROWS)
KERNEL_PAIR(TG_AVX512, kern512, 12, A_ANY)
KERNEL_PAIR(TG_AVX512, kern512, 8, A_ANY)
KERNEL_PAIR(TG_AVX512, kern512, 4, A_ANY)

/* ---- AVX2 micro-kernels ----------------------------------------------------- */

/* Lane mask (all bits set = valid) of vector v (8 lanes) when n columns are valid. */
TG_AVX2 static inline __m256i lanes256(int n, int v)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8 * v), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* 6 x (8 * NV), as kern512: its twin in AVX2 types and intrinsics (one kernel
 * per instruction set; a macro over both would hide what each register holds). */
TG_AVX2 TG_INLINE void kern256(int R, int NV, a_layout L, const tile *t)
{
    const bool packed = L != A_ANY;
    const float *a = t->a, *b = t->b;
    const ptrdiff_t csa = L == A_KMAJOR ? 6 : L == A_ROWS ? 1 : t->csa;
    const ptrdiff_t rsb = packed ? 8 * NV : t->rsb;
    const int m = t->m, n = t->n;
    ptrdiff_t off[6];
#pragma GCC unroll 6
    ROW_OFFSETS(R, L, t, off);
    const __m256i mk0 = lanes256(n, 0), mk1 = lanes256(n, 1);
    __m256 acc[6][2];
#pragma GCC unroll 6
    for (int i = 0; i < R; i++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) acc[i][v] = _mm256_setzero_ps();
    for (int k = 0; k < t->kc; k++) {
        __m256 b0 = packed ? _mm256_load_ps(b) : _mm256_maskload_ps(b, mk0);
        __m256 b1 = NV == 1 ? b0 : packed ? _mm256_load_ps(b + 8) : _mm256_maskload_ps(b + 8, mk1);
#pragma GCC unroll 6
        for (int i = 0; i < R; i++) {
            __m256 ai = _mm256_broadcast_ss(a + off[i]);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            if (NV > 1) acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += csa;
        b += rsb;
    }
    __m256 va = _mm256_set1_ps(t->alpha), vb = _mm256_set1_ps(t->beta);
#pragma GCC unroll 6
    for (int i = 0; i < R; i++) {
        if (i >= m) break;
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            __m256i mk = v == 0 ? mk0 : mk1;
            float *cv = t->c + (size_t)i * t->ldc + 8 * v;
            __m256 r = _mm256_mul_ps(acc[i][v], va);
            if (t->beta != 0) r = _mm256_fmadd_ps(vb, _mm256_maskload_ps(cv, mk), r);
            else if (t->bias) r = _mm256_add_ps(r, _mm256_maskload_ps(t->bias + 8 * v, mk));
            _mm256_maskstore_ps(cv, mk, r);
        }
    }
}

KERNEL_PAIR(TG_AVX2, kern256, 6, A_KMAJOR)
KERNEL_PAIR(TG_AVX2, kern256, 6, A_ROWS)
KERNEL_PAIR(TG_AVX2, kern256, 6, A_ANY)
KERNEL_PAIR(TG_AVX2, kern256, 4, A_ANY)
KERNEL_PAIR(TG_AVX2, kern256, 2, A_ANY)

#define KERNELS(body, R, L) {body##_##L##_##R##_wide, body##_##L##_##R##_narrow}
static const kernel_desc k_avx512 = {
    TG_GEMM_AVX512, 12, 32, 16, KERNELS(kern512, 12, A_KMAJOR), KERNELS(kern512, 12, A_ROWS),
    KERNELS(kern512, 12, A_ANY), {4, 8}, {KERNELS(kern512, 4, A_ANY), KERNELS(kern512, 8, A_ANY)},
    pack_bt_512};
static const kernel_desc k_avx2 = {
    TG_GEMM_AVX2, 6, 16, 8, KERNELS(kern256, 6, A_KMAJOR), KERNELS(kern256, 6, A_ROWS),
    KERNELS(kern256, 6, A_ANY), {2, 4}, {KERNELS(kern256, 2, A_ANY), KERNELS(kern256, 4, A_ANY)},
    pack_bt_scalar};
#endif

/* ---- kernel selection ------------------------------------------------------- */

static const kernel_desc *g_kernel;  /* NULL: cblas_sgemm */
static pthread_once_t g_kernel_once = PTHREAD_ONCE_INIT;

#if TG_GEMM_X86
static bool cpu_can(tg_gemm_kernel k)
{
    __builtin_cpu_init();
    switch (k) {
    case TG_GEMM_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
    case TG_GEMM_AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    default: return true;
    }
}

static const kernel_desc *desc_of(tg_gemm_kernel k)
{
    return k == TG_GEMM_AVX512 ? &k_avx512 : k == TG_GEMM_AVX2 ? &k_avx2 : NULL;
}
#else
static bool cpu_can(tg_gemm_kernel k) { return k == TG_GEMM_BLAS; }
static const kernel_desc *desc_of(tg_gemm_kernel k) { (void)k; return NULL; }
#endif

static void choose_kernel(void)
{
    const char *env = getenv("TAPEGRAD_GEMM");
    tg_gemm_kernel k = cpu_can(TG_GEMM_AVX512) ? TG_GEMM_AVX512
                       : cpu_can(TG_GEMM_AVX2) ? TG_GEMM_AVX2
                                               : TG_GEMM_BLAS;
    if (env && *env) {
        /* a setting that cannot be followed is said, once, not ignored */
        tg_gemm_kernel want = strcmp(env, "blas") == 0 ? TG_GEMM_BLAS
                              : strcmp(env, "avx2") == 0 ? TG_GEMM_AVX2
                              : strcmp(env, "avx512") == 0 ? TG_GEMM_AVX512
                                                           : (tg_gemm_kernel)-1;
        if (want == (tg_gemm_kernel)-1)
            fprintf(stderr, "tapegrad: TAPEGRAD_GEMM=%s is not blas, avx2 or avx512; using %s\n", env,
                    tg_gemm_kernel_name(k));
        else if (!cpu_can(want))
            fprintf(stderr, "tapegrad: TAPEGRAD_GEMM=%s: this CPU cannot run it; using %s\n", env,
                    tg_gemm_kernel_name(k));
        else k = want;
    }
    g_kernel = desc_of(k);
}

tg_gemm_kernel tg_gemm_get_kernel(void)
{
    pthread_once(&g_kernel_once, choose_kernel);
    return g_kernel ? g_kernel->id : TG_GEMM_BLAS;
}

const char *tg_gemm_kernel_name(tg_gemm_kernel k)
{
    return k == TG_GEMM_AVX512 ? "avx512-12x32" : k == TG_GEMM_AVX2 ? "avx2-6x16" : "cblas";
}

bool tg_gemm_set_kernel(tg_gemm_kernel k)
{
    pthread_once(&g_kernel_once, choose_kernel);
    if (!cpu_can(k)) return false;
    g_kernel = desc_of(k);
    return true;
}

/* ---- per-thread pack buffers ------------------------------------------------ */

/* Every buffer ever made is on one list (reachable for LeakSanitizer, also in
 * a forked child whose other threads are gone); a thread takes a free one or
 * makes one, and gives it back when it exits. */
typedef struct pack_buf {
    struct pack_buf *next;
    atomic_bool in_use;
    float *a;  /* [MC x KC] */
    float *b;  /* [KC x NC] */
} pack_buf;

static _Atomic(pack_buf *) g_bufs;
static _Thread_local pack_buf *tl_buf;
static pthread_key_t g_buf_key;
static pthread_once_t g_buf_key_once = PTHREAD_ONCE_INIT;

static void release_buf(void *p) { atomic_store(&((pack_buf *)p)->in_use, false); }
static void make_buf_key(void) { pthread_key_create(&g_buf_key, release_buf); }

static pack_buf *new_buf(void)
{
    pack_buf *p = NULL;
    void *a = NULL, *b = NULL;
    if (posix_memalign((void **)&p, 64, sizeof *p) != 0) return NULL;
    if (posix_memalign(&a, 64, sizeof(float) * MC * KC) != 0 ||
        posix_memalign(&b, 64, sizeof(float) * KC * NC) != 0) {
        free(a);
        free(p);
        return NULL;
    }
    p->a = a, p->b = b;
    atomic_init(&p->in_use, true);
    p->next = atomic_load(&g_bufs);
    while (!atomic_compare_exchange_weak(&g_bufs, &p->next, p)) {}
    return p;
}

/* This thread's buffers, or NULL when they cannot be allocated. */
static pack_buf *thread_buf(void)
{
    if (tl_buf) return tl_buf;
    pthread_once(&g_buf_key_once, make_buf_key);
    pack_buf *p;
    for (p = atomic_load(&g_bufs); p; p = p->next) {
        bool expect = false;
        if (atomic_compare_exchange_strong(&p->in_use, &expect, true)) break;
    }
    if (!p) p = new_buf();
    if (p) pthread_setspecific(g_buf_key, p);
    return tl_buf = p;
}

bool tg_gemm_pack_buffers(void **a, void **b)
{
    pack_buf *p = thread_buf();
    if (p) *a = p->a, *b = p->b;
    return p != NULL;
}

/* ---- packing ---------------------------------------------------------------- */

/* Operand views: element (i, k) of op(A) and (k, j) of op(B). */
typedef struct gemm_args {
    bool ta, tb;
    int M, N, K;
    float alpha, beta;
    const float *A, *B;
    const float *bias;  /* [N] added to every row of C (beta == 0), or NULL */
    int lda, ldb, ldc;
    float *C;
    const kernel_desc *kd;
} gemm_args;

/* n floats of a panel row. The AVX-512 kernel's full rows (12 of A^T, 32 of
 * B) are copies of a size the compiler knows, inlined as vector moves: a
 * libc memcpy call per row was most of the packing's cost (the GPT-2-style
 * step's weight grads; the step on 1 thread 1-2.5% faster). */
static inline void copy_row(float *dst, const float *src, int n)
{
    if (n == 12) memcpy(dst, src, sizeof(float) * 12);
    else if (n == 32) memcpy(dst, src, sizeof(float) * 32);
    else memcpy(dst, src, sizeof(float) * (size_t)n);
}

/* Rows [i0, i0+mc) x cols [k0, k0+kc) of op(A) -> MR-row panels, panel p
 * at dst + p*MR*KC, both layouts plain copies (no transposing):
 *   ta: A is [K, M], a panel is k-major [kc x MR] (element (i, k) at k*MR + i),
 *       rows past mc zero;
 *   else: A is [M, K], a panel is its MR rows [MR x KC] (element (i, k) at
 *       i*KC + k, a stride that does not alias in L1 as lda = 1024 does),
 *       rows past mc zero. */
static void pack_a(const gemm_args *g, int i0, int mc, int k0, int kc, float *dst)
{
    const int MR = g->kd->mr;
    for (int p = 0; p < mc; p += MR, dst += (size_t)MR * KC) {
        int m = mc - p < MR ? mc - p : MR;
        if (g->ta) {
            for (int k = 0; k < kc; k++) {
                copy_row(dst + (size_t)k * MR, g->A + (size_t)(k0 + k) * g->lda + i0 + p, m);
                for (int i = m; i < MR; i++) dst[k * MR + i] = 0;
            }
        } else {
            for (int i = 0; i < m; i++)
                memcpy(dst + (size_t)i * KC, g->A + (size_t)(i0 + p + i) * g->lda + k0, sizeof(float) * (size_t)kc);
            for (int i = m; i < MR; i++) memset(dst + (size_t)i * KC, 0, sizeof(float) * (size_t)kc);
        }
    }
}

/* Width of the B panel starting `left` columns before the block's end. */
static int panel_width(const kernel_desc *kd, int left)
{
    return left <= kd->nr_narrow ? kd->nr_narrow : kd->nr;
}

/* Rows [k0, k0+kc) x cols [j0, j0+nc) of op(B) -> panels [kc x w] (element
 * (k, j) at k*w + j), w = nr, or nr_narrow for a last panel that fits. */
static void pack_b(const gemm_args *g, int k0, int kc, int j0, int nc, float *dst)
{
    for (int q = 0; q < nc;) {
        int w = panel_width(g->kd, nc - q), n = nc - q < w ? nc - q : w;
        if (g->tb) {
            g->kd->pack_bt(g->B, g->ldb, k0, kc, j0 + q, n, w, dst);
        } else {
            for (int k = 0; k < kc; k++) {
                const float *src = g->B + (size_t)(k0 + k) * g->ldb + j0 + q;
                copy_row(dst + (size_t)k * w, src, n);
                for (int j = n; j < w; j++) dst[k * w + j] = 0;
            }
        }
        dst += (size_t)w * kc;
        q += w;
    }
}

/* ---- the blocked product ---------------------------------------------------- */

/* The direct kernels with the fewest rows that cover m. */
static const ukernel *direct_for(const kernel_desc *kd, int m)
{
    return m <= kd->short_rows[0] ? kd->direct_short[0] : m <= kd->short_rows[1] ? kd->direct_short[1] : kd->direct;
}

/* Rows [ic, ic+mc) x cols [jc, jc+nc) of C over the K block [pc, pc+kc),
 * from A's rows packed at a (or read in place: NULL) and B's block packed
 * at b (or in place: NULL). */
static void run_tiles(const gemm_args *g, const float *a, const float *b, int ic, int mc, int pc, int kc, int jc,
                      int nc)
{
    const kernel_desc *kd = g->kd;
    tile t = {.ldc = g->ldc, .alpha = g->alpha, .kc = kc, .beta = pc == 0 ? g->beta : 1.0f};
    const float *bias = pc == 0 ? g->bias : NULL; /* the first K block stores AB + bias */
    for (int ir = 0; ir < mc; ir += kd->mr) {
        t.m = mc - ir < kd->mr ? mc - ir : kd->mr;
        if (a) {
            t.a = a + (size_t)ir * KC;
            t.rsa = g->ta ? 1 : KC, t.csa = g->ta ? kd->mr : 1;
        } else if (g->ta) { /* A is [K, M] */
            t.a = g->A + (size_t)pc * g->lda + ic + ir, t.rsa = 1, t.csa = g->lda;
        } else {
            t.a = g->A + (size_t)(ic + ir) * g->lda + pc, t.rsa = g->lda, t.csa = 1;
        }
        const float *bp = b;
        for (int jr = 0; jr < nc;) {
            int w = panel_width(kd, nc - jr);
            t.n = nc - jr < w ? nc - jr : w;
            if (b) t.b = bp, t.rsb = w;
            else t.b = g->B + (size_t)pc * g->ldb + jc + jr, t.rsb = g->ldb;
            t.c = g->C + (size_t)(ic + ir) * g->ldc + jc + jr;
            t.bias = bias ? bias + jc + jr : NULL;
            const ukernel *k = !a || !b ? direct_for(kd, t.m) : g->ta ? kd->kmajor : kd->rows;
            k[w == kd->nr ? 0 : 1](&t);
            if (b) bp += (size_t)w * kc;
            jr += w;
        }
    }
}

/* Packing A pays when each A panel meets many B panels (N > PACK_A_MIN_PANELS
 * panels) and A has more rows than the short direct kernels take (a packed
 * panel costs MR rows of FMAs however few are real: a decoding step's
 * 1-row attention scores ran 12 rows), packing B when each B panel meets
 * more than PACK_B_MIN_PANELS A panels, or always when B is transposed (its
 * rows are not vectors). */
static bool packs_a(const gemm_args *g, int rows, int cols)
{
    return cols > PACK_A_MIN_PANELS * g->kd->nr && rows > g->kd->short_rows[1];
}
static bool packs_b(const gemm_args *g, int rows) { return g->tb || rows > PACK_B_MIN_PANELS * g->kd->mr; }

/* C[i0:i1, j0:j1] of the whole product, on this thread with its buffers. */
static void gemm_block(const gemm_args *g, pack_buf *buf, int i0, int i1, int j0, int j1)
{
    bool pa = packs_a(g, i1 - i0, j1 - j0), pb = packs_b(g, i1 - i0);
    for (int ic = i0; ic < i1; ic += MC) {
        int mc = i1 - ic < MC ? i1 - ic : MC;
        for (int pc = 0; pc < g->K; pc += KC) {
            int kc = g->K - pc < KC ? g->K - pc : KC;
            if (pa) pack_a(g, ic, mc, pc, kc, buf->a);
            for (int jc = j0; jc < j1; jc += NC) {
                int nc = j1 - jc < NC ? j1 - jc : NC;
                if (pb) pack_b(g, pc, kc, jc, nc, buf->b);
                run_tiles(g, pa ? buf->a : NULL, pb ? buf->b : NULL, ic, mc, pc, kc, jc, nc);
            }
        }
    }
}

/* C[i0:i1, j0:j1] through cblas_sgemm: the CPU has no kernel of ours, or this
 * thread could not get pack buffers. */
static void cblas_block(const gemm_args *g, int i0, int i1, int j0, int j1)
{
    const float *a = g->A + (g->ta ? (size_t)i0 : (size_t)i0 * g->lda);
    const float *b = g->B + (g->tb ? (size_t)j0 * g->ldb : (size_t)j0);
    if (g->bias)
        for (int i = i0; i < i1; i++) memcpy(g->C + (size_t)i * g->ldc + j0, g->bias + j0, sizeof(float) * (size_t)(j1 - j0));
    tg_openblas_sgemm(g->ta, g->tb, i1 - i0, j1 - j0, g->K, g->alpha, a, g->lda, b, g->ldb, g->bias ? 1.0f : g->beta,
                      g->C + (size_t)i0 * g->ldc + j0, g->ldc);
}

/* A thread's share: tiles [begin, end) along M (split_m, MR rows each) or N
 * (NR columns each). */
typedef struct par_job {
    const gemm_args *g;
    bool split_m;
} par_job;

static void par_chunk(void *ctx, int begin, int end)
{
    const par_job *job = ctx;
    const gemm_args *g = job->g;
    int i0 = 0, i1 = g->M, j0 = 0, j1 = g->N;
    if (job->split_m) {
        i0 = begin * g->kd->mr;
        i1 = end * g->kd->mr < g->M ? end * g->kd->mr : g->M;
    } else {
        j0 = begin * g->kd->nr;
        j1 = end * g->kd->nr < g->N ? end * g->kd->nr : g->N;
    }
    pack_buf *buf = thread_buf();
    if (buf) gemm_block(g, buf, i0, i1, j0, j1);
    else cblas_block(g, i0, i1, j0, j1);
}

/* Threads that split M each packed all of B, and the pool cuts a loop into
 * 4 chunks per thread: on 2 threads B was packed 8 times (a tenth of a
 * float32 GPT-2-style step); split along N, each packed all of A, or read
 * it in place when its columns were too few to pay. Instead, block by
 * block, the operand every chunk needs (B's block along M, A's along N) is
 * packed once, by all threads, into the calling thread's buffer; then the
 * threads take rows (columns) of C, each packing its own A rows (B
 * columns). A worker without buffers of its own borrows the caller's other
 * buffer under a lock: the product completes. */
typedef struct shared_job {
    const gemm_args *g;
    bool split_m;
    float *shared, *lent;           /* the shared block; the caller's other buffer */
    int pc, kc, ic, mc, jc, nc;     /* the block: K [pc, +kc), and M [ic, +mc) or N [jc, +nc) */
    bool packs;                     /* the chunks pack their own operand, else read it in place */
    pthread_mutex_t lent_lock;
} shared_job;

/* Panels [begin, end) of the shared block: all but the last MR rows or NR
 * columns wide. */
static void shared_pack(void *ctx, int begin, int end)
{
    const shared_job *s = ctx;
    if (s->split_m) {
        int nr = s->g->kd->nr, q0 = begin * nr, q1 = end * nr < s->nc ? end * nr : s->nc;
        pack_b(s->g, s->pc, s->kc, s->jc + q0, q1 - q0, s->shared + (size_t)q0 * s->kc);
    } else {
        int mr = s->g->kd->mr, q0 = begin * mr, q1 = end * mr < s->mc ? end * mr : s->mc;
        pack_a(s->g, s->ic + q0, q1 - q0, s->pc, s->kc, s->shared + (size_t)q0 * KC);
    }
}

/* A chunk's rows (split_m) or columns of the block. */
static void shared_chunk(void *ctx, int begin, int end)
{
    shared_job *s = ctx;
    const gemm_args *g = s->g;
    int w = s->split_m ? g->kd->mr : g->kd->nr, lim = s->split_m ? g->M : g->N;
    int q0 = begin * w, q1 = end * w < lim ? end * w : lim;
    pack_buf *buf = s->packs ? thread_buf() : NULL;
    float *mine = buf ? (s->split_m ? buf->a : buf->b) : NULL;
    bool own = mine && mine != s->lent;
    if (s->packs && !own) pthread_mutex_lock(&s->lent_lock), mine = s->lent;
    if (s->split_m)
        for (int ic = q0; ic < q1; ic += MC) {
            int mc = q1 - ic < MC ? q1 - ic : MC;
            if (s->packs) pack_a(g, ic, mc, s->pc, s->kc, mine);
            run_tiles(g, s->packs ? mine : NULL, s->shared, ic, mc, s->pc, s->kc, s->jc, s->nc);
        }
    else
        for (int jc = q0; jc < q1; jc += NC) {
            int nc = q1 - jc < NC ? q1 - jc : NC;
            if (s->packs) pack_b(g, s->pc, s->kc, jc, nc, mine);
            run_tiles(g, s->shared, s->packs ? mine : NULL, s->ic, s->mc, s->pc, s->kc, jc, nc);
        }
    if (s->packs && !own) pthread_mutex_unlock(&s->lent_lock);
}

static void gemm_shared(const gemm_args *g, bool split_m, pack_buf *own, int tiles)
{
    shared_job s = {.g = g, .split_m = split_m, .shared = split_m ? own->b : own->a, .lent = split_m ? own->a : own->b,
                    .packs = split_m ? packs_a(g, g->M, g->N) : packs_b(g, g->M),
                    .lent_lock = PTHREAD_MUTEX_INITIALIZER};
    int outer = split_m ? g->N : g->M, step = split_m ? NC : MC, w = split_m ? g->kd->nr : g->kd->mr;
    for (s.pc = 0; s.pc < g->K; s.pc += KC) {
        s.kc = g->K - s.pc < KC ? g->K - s.pc : KC;
        for (int o = 0; o < outer; o += step) {
            int n = outer - o < step ? outer - o : step, panels = (n + w - 1) / w;
            if (split_m) s.jc = o, s.nc = n;
            else s.ic = o, s.mc = n;
            if (panels > 1 && tg_parallel_pays((double)n * s.kc * PACK_NS)) tg_parallel_for(panels, shared_pack, &s);
            else shared_pack(&s, 0, panels);
            tg_parallel_for(tiles, shared_chunk, &s);
        }
    }
    pthread_mutex_destroy(&s.lent_lock);
}

/* C = beta C, or every row = bias (alpha == 0 or K == 0): A and B are not
 * read, beta == 0 never reads C. */
static void scale_c(int M, int N, float beta, const float *bias, float *C, int ldc)
{
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc;
        if (bias) memcpy(c, bias, sizeof(float) * (size_t)N);
        else if (beta == 0) memset(c, 0, sizeof(float) * (size_t)N);
        else if (beta != 1) for (int j = 0; j < N; j++) c[j] *= beta;
    }
}

static void sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, const float *bias, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0) {
        scale_c(M, N, beta, bias, C, ldc);
        return;
    }
    pthread_once(&g_kernel_once, choose_kernel);
    gemm_args g = {ta, tb, M, N, K, alpha, beta, A, B, bias, lda, ldb, ldc, C, g_kernel};
    if (!g.kd) {
        cblas_block(&g, 0, M, 0, N);
        return;
    }
    /* Split the larger of M and N: the other operand's packing is what every
     * thread repeats. */
    bool split_m = M >= N;
    int tiles = split_m ? (M + g.kd->mr - 1) / g.kd->mr : (N + g.kd->nr - 1) / g.kd->nr;
    par_job job = {&g, split_m};
    pack_buf *own;
    if (tiles > 1 && tg_parallel_pays((double)M * N * K * GEMM_NS_PER_MAC)) {
        /* the other operand shared where the whole product, on one thread, would pack it:
           a chunk's rows alone are too few to pay for packing B (a weight grad, [768, 256]
           by K 1024, read B in place on 2 threads, at two thirds of the 1-thread rate) */
        bool share = split_m ? packs_b(&g, M) : packs_a(&g, M, N);
        if (share && (own = thread_buf()))
            gemm_shared(&g, split_m, own, tiles);
        else
            tg_parallel_for(tiles, par_chunk, &job);
    } else
        par_chunk(&job, 0, tiles);
}

void tg_sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc)
{
    sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, NULL, C, ldc);
}

void tg_sgemm_bias(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                   const float *B, int ldb, const float *bias, float *C, int ldc)
{
    sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, 0.0f, bias, C, ldc);
}
