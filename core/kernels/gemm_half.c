/* tapegrad: GEMMs of half-precision operands (see core/kernels/gemm_half.h).
 *
 * The widening kernel, for every CPU: A and B are widened to float32 (exact)
 * and tg_sgemm runs, so the result is float32's product of the half values,
 * with tg_sgemm's blocking, order and bits for any thread count. */
#include "gemm_half.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/error.h"
#include "gemm.h"
#include "half.h"

static tg_gemm_half_kernel g_kernel;
static pthread_once_t g_kernel_once = PTHREAD_ONCE_INIT;

static bool cpu_can(tg_gemm_half_kernel k) { return k == TG_GEMM_HALF_WIDEN; }

static void choose_kernel(void)
{
    const char *env = getenv("TAPEGRAD_GEMM_HALF");
    tg_gemm_half_kernel k = TG_GEMM_HALF_WIDEN;
    if (env && *env) {
        /* a setting that cannot be followed is said, once, not ignored */
        if (strcmp(env, "widen") != 0)
            fprintf(stderr, "tapegrad: TAPEGRAD_GEMM_HALF=%s is not widen; using %s\n", env,
                    tg_gemm_half_kernel_name(k));
    }
    g_kernel = k;
}

tg_gemm_half_kernel tg_gemm_half_get_kernel(void)
{
    pthread_once(&g_kernel_once, choose_kernel);
    return g_kernel;
}

const char *tg_gemm_half_kernel_name(tg_gemm_half_kernel k)
{
    return k == TG_GEMM_HALF_WIDEN ? "widen-to-float32" : "?";
}

bool tg_gemm_half_set_kernel(tg_gemm_half_kernel k)
{
    pthread_once(&g_kernel_once, choose_kernel);
    if (!cpu_can(k)) return false;
    g_kernel = k;
    return true;
}

/* dst [rows x cols] (contiguous) = src's rows, ld apart, widened. */
static void widen_rows(float *dst, const uint16_t *src, int rows, int cols, int ld, tg_dtype dt)
{
    for (int r = 0; r < rows; r++)
        tg_half_widen_n(dst + (size_t)r * cols, src + (size_t)r * ld, (size_t)cols, dt);
}

static bool gemm_widen(tg_dtype dt, bool ta, bool tb, int M, int N, int K, float alpha, const uint16_t *A,
                       int lda, const uint16_t *B, int ldb, float beta, float *C, int ldc)
{
    /* A as stored is [ra x ca], B [rb x cb] */
    int ra = ta ? K : M, ca = ta ? M : K, rb = tb ? N : K, cb = tb ? K : N;
    size_t na = (size_t)ra * ca, nb = (size_t)rb * cb;
    float *w = malloc((na + nb) * sizeof *w + 1);
    if (!w) return tg_error_set("tg_gemm_half: out of memory widening [%d,%d] and [%d,%d] operands", ra, ca, rb,
                                cb) == 0;
    widen_rows(w, A, ra, ca, lda, dt);
    widen_rows(w + na, B, rb, cb, ldb, dt);
    tg_sgemm(ta, tb, M, N, K, alpha, w, ca > 0 ? ca : 1, w + na, cb > 0 ? cb : 1, beta, C, ldc);
    free(w);
    return true;
}

bool tg_gemm_half(tg_dtype dt, bool ta, bool tb, int M, int N, int K, float alpha, const uint16_t *A, int lda,
                  const uint16_t *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return true;
    if (!tg_dtype_is_half(dt)) return tg_error_set("tg_gemm_half: operands are %s, not bfloat16 or float16",
                                                   tg_dtype_name(dt)) == 0;
    /* K == 0 or alpha == 0: C = beta C without reading A or B */
    if (K <= 0 || alpha == 0) ta = tb = false, K = 0;
    switch (tg_gemm_half_get_kernel()) {
    case TG_GEMM_HALF_WIDEN:
    default: return gemm_widen(dt, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
}

/* x's [rows x cols] block (rows ld apart) rounded to dt, contiguous. */
static uint16_t *round_rows(const float *x, int rows, int cols, int ld, tg_dtype dt)
{
    uint16_t *h = malloc((size_t)rows * cols * sizeof *h + 1);
    for (int r = 0; h && r < rows; r++) tg_half_round_n(h + (size_t)r * cols, x + (size_t)r * ld, (size_t)cols, dt);
    return h;
}

bool tg_gemm_rounded(tg_dtype dt, bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return true;
    if (K <= 0 || alpha == 0) return tg_gemm_half(dt, false, false, M, N, 0, alpha, NULL, 1, NULL, 1, beta, C, ldc);
    int ca = ta ? M : K, cb = tb ? K : N;
    uint16_t *ah = round_rows(A, ta ? K : M, ca, lda, dt), *bh = round_rows(B, tb ? N : K, cb, ldb, dt);
    bool ok = ah && bh ? tg_gemm_half(dt, ta, tb, M, N, K, alpha, ah, ca, bh, cb, beta, C, ldc)
                       : tg_error_set("tg_gemm_rounded: out of memory rounding [%d,%d] @ [%d,%d] operands", M, K, K,
                                      N) == 0;
    free(ah), free(bh);
    return ok;
}
