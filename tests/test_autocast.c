/* Autocast (core/engine/tape.h): tg_matmul's products with half operands in
 * both passes, against a double reference of the rounded operands; the scope's
 * rules; and float64, which autocast leaves alone.
 *
 * Bound: with the operands rounded, the GEMMs' only error is float32's sums,
 * (K + 2) 2u sum |a||b| (tests/test_gemm_half.c derives it), u = 2^-24. */
#include <math.h>
#include <string.h>

#include "test_util.h"
#include "../core/kernels/gemm_half.h"
#include "../core/kernels/half.h"

TU_SUITE(autocast, 5);

static double rnd(double v, tg_dtype half) { return half == TG_F32 ? v : tg_half_to_double(tg_half_from_double(v, half), half); }

static tg_tensor *leaf(int ndim, const int *shape)
{
    tg_tensor *x = tg_tensor_zeros(T, ndim, shape);
    cr_assert_not_null(x);
    for (size_t i = 0; i < x->size; i++) x->data[i] = (tg_real)(2 * tg_rng_uniform(&R) - 1);
    x->requires_grad = true;
    return x;
}

/* element (i, k) of plane p of op(x) for an [.., r, c] x stored transposed when tr */
static double el(const tg_tensor *x, int p, int i, int k, bool tr, tg_dtype half)
{
    int r = x->shape[x->ndim - 2], c = x->shape[x->ndim - 1];
    size_t at = (size_t)p * r * c + (tr ? (size_t)k * c + i : (size_t)i * c + k);
    return rnd(x->data[at], half);
}

static void near(double got, double want, double mag, int K, const char *what, int i)
{
    double tol = (K + 2) * 2 * 0x1p-24 * mag + 1e-30;
    if (TG_REAL_DTYPE == TG_F64) tol = (K + 2) * 2 * 0x1p-53 * mag + 1e-300;
    cr_assert(fabs(got - want) <= tol, "%s[%d] = %.9g, want %.9g (bound %.3g)", what, i, got, want, tol);
}

/* out = op(a) op(b) + bias and its grads under autocast(half), a [2, M, K]
 * (or [2, K, M]), b 2-D or batched; loss = sum(out * g) so dout = g. */
static void check_matmul(unsigned flags, bool b_batched, bool bias, tg_dtype half)
{
    tg_tape_reset(T);
    bool ta = flags & TG_TRANS_A, tb = flags & TG_TRANS_B;
    int M = 5, K = 37, N = 6, P = 2;
    tg_tensor *a = leaf(3, ta ? (int[]){P, K, M} : (int[]){P, M, K});
    tg_tensor *b = b_batched ? leaf(3, tb ? (int[]){P, N, K} : (int[]){P, K, N}) : leaf(2, tb ? (int[]){N, K} : (int[]){K, N});
    tg_tensor *c = bias ? leaf(1, (int[]){N}) : NULL, *g = leaf(3, (int[]){P, M, N});
    g->requires_grad = false;
    tg_dtype prev = tg_autocast_begin(T, half);
    cr_assert_eq(prev, TG_F32);
    tg_tensor *out = tg_matmul(T, a, b, c, flags);
    tg_autocast_end(T, prev);
    cr_assert_not_null(out, "%s", tg_tape_error(T));
    cr_assert_eq(tg_backward(T, tg_sum(T, tg_mul(T, out, g))), 0, "%s", tg_tape_error(T));
    /* autocast is for float32: the float64 copy computes as always */
    tg_dtype h = TG_REAL_DTYPE == TG_F32 ? half : TG_F32;
    int pb = b_batched;
    for (int p = 0; p < P; p++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = c ? c->data[j] : 0, mag = fabs(s);
                for (int k = 0; k < K; k++) {
                    double ab = el(a, p, i, k, ta, h) * el(b, p * pb, k, j, tb, h);
                    s += ab, mag += fabs(ab);
                }
                near(out->data[((size_t)p * M + i) * N + j], s, mag, K, "out", (p * M + i) * N + j);
            }
    /* d op(a)[i,k] = sum_j g[i,j] op(b)[k,j]; d op(b)[k,j] = sum_i op(a)[i,k] g[i,j] */
    for (int p = 0; p < P; p++)
        for (int i = 0; i < M; i++)
            for (int k = 0; k < K; k++) {
                double s = 0, mag = 0;
                for (int j = 0; j < N; j++) {
                    double v = el(g, p, i, j, false, h) * el(b, p * pb, k, j, tb, h);
                    s += v, mag += fabs(v);
                }
                size_t at = (size_t)p * M * K + (ta ? (size_t)k * M + i : (size_t)i * K + k);
                near(a->grad[at], s, mag, N, "da", (int)at);
            }
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) {
            double s = 0, mag = 0;
            for (int p = 0; p < P; p++) {
                if (b_batched) s = 0, mag = 0;
                for (int i = 0; i < M; i++) {
                    double v = el(a, p, i, k, ta, h) * el(g, p, i, j, false, h);
                    s += v, mag += fabs(v);
                }
                if (b_batched || p == P - 1) {
                    size_t at = (size_t)(b_batched ? p : 0) * K * N + (tb ? (size_t)j * K + k : (size_t)k * N + j);
                    near(b->grad[at], s, mag, M * P, "db", (int)at);
                }
            }
        }
}

/* Under every half kernel this CPU can run, and the emulated AVX512-BF16 and
 * AMX ones. */
Test(autocast, matmul_rounds_its_operands_in_forward_and_backward)
{
    static const tg_gemm_half_kernel kernels[] = {TG_GEMM_HALF_WIDEN, TG_GEMM_HALF_AVX512BF16,
                                                  TG_GEMM_HALF_AVX512BF16_EMULATED, TG_GEMM_HALF_AMX,
                                                  TG_GEMM_HALF_AMX_EMULATED};
    for (int k = 0; k < 5; k++) {
        if (!tg_gemm_half_set_kernel(kernels[k])) {
            printf("autocast: kernel %s skipped: this CPU cannot run it\n", tg_gemm_half_kernel_name(kernels[k]));
            continue;
        }
        printf("autocast: kernel %s ran\n", tg_gemm_half_kernel_name(kernels[k]));
        for (int d = 0; d < 2; d++)
            for (unsigned flags = 0; flags < 4; flags++)
                for (int v = 0; v < 4; v++) check_matmul(flags, v & 1, v & 2, d ? TG_F16 : TG_BF16);
    }
}

/* The rounding is not lost in the bound: in float32 the product under
 * autocast differs from the plain one by far more than float32's sums can. */
Test(autocast, the_rounding_shows_in_float32)
{
    tg_tensor *a = leaf(2, (int[]){8, 64}), *b = leaf(2, (int[]){64, 8});
    tg_tensor *plain = tg_matmul(T, a, b, NULL, 0);
    tg_dtype prev = tg_autocast_begin(T, TG_BF16);
    tg_tensor *cast = tg_matmul(T, a, b, NULL, 0);
    tg_autocast_end(T, prev);
    cr_assert(plain && cast);
    double worst = 0;
    /* (not fmax: GCC 12's aarch64 vectoriser fails on that reduction at -O3) */
    for (int i = 0; i < 64; i++) {
        double d = fabs((double)plain->data[i] - (double)cast->data[i]);
        if (d > worst) worst = d;
    }
    if (TG_REAL_DTYPE == TG_F32)
        cr_assert_gt(worst, 1e-3, "autocast changed the product by only %.3g", worst);
    else
        cr_assert_eq(worst, 0, "autocast changed a float64 product by %.3g", worst);
}

Test(autocast, scopes_nest_and_refuse_other_dtypes)
{
    cr_assert_eq(tg_tape_autocast(T), TG_F32);
    tg_dtype p1 = tg_autocast_begin(T, TG_BF16);
    tg_dtype p2 = tg_autocast_begin(T, TG_F16);
    cr_assert(p1 == TG_F32 && p2 == TG_BF16 && tg_tape_autocast(T) == TG_F16);
    tg_autocast_end(T, p2);
    cr_assert_eq(tg_tape_autocast(T), TG_BF16);
    tg_autocast_end(T, p1);
    cr_assert_eq(tg_tape_autocast(T), TG_F32);
    cr_assert_eq(tg_autocast_begin(T, TG_I64), TG_F32);
    cr_assert_eq(tg_tape_autocast(T), TG_F32);
    cr_assert_str_eq(tg_tape_error(T), "tg_autocast_begin: int64 is not bfloat16, float16 or float32 (off)");
    cr_assert_eq(tg_autocast_begin(NULL, TG_BF16), TG_F32);
    cr_assert_str_eq(tg_error(), "tg_autocast_begin: the tape is NULL");
}

/* One key: the weights are exactly 1, so under autocast out = v rounded and
 * dv = the sum of dout's rounded rows (float32 keeps v and dout whole). */
Test(autocast, sdpa_rounds_the_weights_and_values)
{
    tg_tensor *q = leaf(4, (int[]){2, 2, 3, 8}), *k = leaf(4, (int[]){2, 2, 1, 8}), *v = leaf(4, (int[]){2, 2, 1, 8});
    tg_tensor *g = leaf(4, (int[]){2, 2, 3, 8});
    g->requires_grad = false;
    tg_dtype prev = tg_autocast_begin(T, TG_BF16);
    tg_tensor *o = tg_sdpa(T, q, k, v, NULL, NULL);
    tg_autocast_end(T, prev);
    cr_assert_not_null(o, "%s", tg_tape_error(T));
    cr_assert_eq(tg_backward(T, tg_sum(T, tg_mul(T, o, g))), 0, "%s", tg_tape_error(T));
    tg_dtype h = TG_REAL_DTYPE == TG_F32 ? TG_BF16 : TG_F32;
    for (int bh = 0; bh < 4; bh++)
        for (int c = 0; c < 8; c++) {
            double dv = 0;
            for (int i = 0; i < 3; i++) {
                cr_assert_eq(o->data[(bh * 3 + i) * 8 + c], rnd(v->data[bh * 8 + c], h), "out[%d,%d,%d]", bh, i, c);
                dv += rnd(g->data[(bh * 3 + i) * 8 + c], h);
            }
            near(v->grad[bh * 8 + c], dv, 3, 3, "dv", bh * 8 + c);
        }
}

/* Many keys under a causal mask: out moves from float32's by no more than
 * rounding q, k, the weights and v can move it. With q, k rounded each score
 * moves by at most dS = (2e + e^2) scale sum |q||k| (e = 2^-8), a weight by
 * a factor within exp(+-2 max dS), and rounding the weight and v adds
 * (1 + e)^2: |out - out32| <= ((1 + e)^2 exp(2 max dS) - 1 + slack) sum_j A_j |v_j|. */
Test(autocast, sdpa_stays_within_the_rounding_bound)
{
    int L = 20, D = 16;
    tg_tensor *q = leaf(4, (int[]){1, 2, L, D}), *k = leaf(4, (int[]){1, 2, L, D}), *v = leaf(4, (int[]){1, 2, L, D});
    tg_sdpa_opts o = {.mask = &(tg_mask){.causal = true}};
    tg_tensor *w32 = NULL;
    tg_tensor *o32 = tg_sdpa(T, q, k, v, &o, &w32);
    tg_dtype prev = tg_autocast_begin(T, TG_BF16);
    tg_tensor *o16 = tg_sdpa(T, q, k, v, &o, NULL);
    tg_autocast_end(T, prev);
    cr_assert(o32 && o16, "%s", tg_tape_error(T));
    double e = 0x1p-8, scale = 1 / sqrt(D), worst = 0;
    for (int hd = 0; hd < 2; hd++)
        for (int i = 0; i < L; i++) {
            double ds = 0;
            for (int j = 0; j <= i; j++) {
                double m = 0;
                for (int c = 0; c < D; c++) m += fabs(q->data[(hd * L + i) * D + c] * k->data[(hd * L + j) * D + c]);
                double dij = (2 * e + e * e) * scale * m;
                if (dij > ds) ds = dij; /* (not fmax: see the_rounding_shows_in_float32) */
            }
            for (int c = 0; c < D; c++) {
                double mag = 0;
                for (int j = 0; j <= i; j++) mag += w32->data[(hd * L + i) * L + j] * fabs(v->data[(hd * L + j) * D + c]);
                double tol = ((1 + e) * (1 + e) * exp(2 * ds) - 1 + 1e-5) * mag, d = fabs(o16->data[(hd * L + i) * D + c] - o32->data[(hd * L + i) * D + c]);
                cr_assert(d <= tol, "out[%d,%d,%d] moved %.3g, bound %.3g", hd, i, c, d, tol);
                if (d > worst) worst = d;
            }
        }
    if (TG_REAL_DTYPE == TG_F32) cr_assert_gt(worst, 1e-4, "autocast moved attention by only %.3g", worst);
    else cr_assert_eq(worst, 0);
}

/* A heap tensor of uniform values in [-1, 1) rounded to bfloat16 values
 * (float32: autocast's rounding then changes nothing), grad required. */
static tg_tensor *heap_bf16(int ndim, const int *shape)
{
    tg_tensor *x = tg_tensor_alloc(ndim, shape);
    cr_assert_not_null(x);
    for (size_t i = 0; i < x->size; i++)
        x->data[i] = (tg_real)rnd(2 * tg_rng_uniform(&R) - 1, TG_REAL_DTYPE == TG_F32 ? TG_BF16 : TG_F32);
    x->requires_grad = true;
    return x;
}

/* Convolutions under autocast: with operands that are bfloat16 values
 * already and an upstream grad of bfloat16 values, rounding changes nothing,
 * so the widening kernel gives the float32 run's bits in the output and every
 * grad; a kernel of its own is held to its bound by test_gemm_half. */
Test(autocast, convolutions_take_rounded_operands)
{
    if (tg_gemm_half_get_kernel() != TG_GEMM_HALF_WIDEN)
        cr_skip_test("bit-equality holds for the widening kernel; %s is bounded in test_gemm_half",
                     tg_gemm_half_kernel_name(tg_gemm_half_get_kernel()));
    for (int kind = 0; kind < 2; kind++) {
        tg_tensor *in[3] = {heap_bf16(4, (int[]){2, 3, 7, 6}), heap_bf16(4, kind ? (int[]){3, 4, 3, 2} : (int[]){4, 3, 3, 2}),
                            heap_bf16(1, (int[]){4})};
        tg_conv_opts o = TG_CONV_OPTS_DEFAULT;
        o.padding[0] = 1, o.stride[1] = 2;
        tg_real *saved[2][4];
        size_t n[4];
        for (int cast = 0; cast < 2; cast++) {
            tg_tape_reset(T);
            for (int k = 0; k < 3; k++)
                if (in[k]->grad) memset(in[k]->grad, 0, in[k]->size * sizeof(tg_real));
            tg_dtype prev = tg_autocast_begin(T, cast ? TG_BF16 : TG_F32);
            tg_tensor *y = kind ? tg_conv_transpose2d(T, in[0], in[1], in[2], &o) : tg_conv2d(T, in[0], in[1], in[2], &o);
            tg_autocast_end(T, prev);
            cr_assert_not_null(y, "%s", tg_tape_error(T));
            tg_tensor *g = tg_tensor_zeros(T, y->ndim, y->shape);
            for (size_t i = 0; i < g->size; i++) g->data[i] = (tg_real)((int)(i % 7) - 3) / 8;
            const tg_real *src[4] = {y->data, NULL, NULL, NULL};
            n[0] = y->size;
            cr_assert_eq(tg_backward(T, tg_sum(T, tg_mul(T, y, g))), 0, "%s", tg_tape_error(T));
            for (int k = 0; k < 3; k++) src[k + 1] = in[k]->grad, n[k + 1] = in[k]->size;
            for (int k = 0; k < 4; k++) {
                saved[cast][k] = malloc(n[k] * sizeof(tg_real));
                cr_assert_not_null(saved[cast][k]);
                memcpy(saved[cast][k], src[k], n[k] * sizeof(tg_real));
            }
        }
        /* x moved by less than half a bfloat16 ulp: autocast rounds it back
         * and gives the same output; float32 sees the change */
        if (TG_REAL_DTYPE == TG_F32) {
            for (size_t i = 0; i < in[0]->size; i++) in[0]->data[i] *= (tg_real)(1 + 0x1p-10);
            tg_tape_reset(T);
            tg_dtype prev = tg_autocast_begin(T, TG_BF16);
            tg_tensor *y = kind ? tg_conv_transpose2d(T, in[0], in[1], in[2], &o) : tg_conv2d(T, in[0], in[1], in[2], &o);
            tg_autocast_end(T, prev);
            tg_tensor *y32 = kind ? tg_conv_transpose2d(T, in[0], in[1], in[2], &o) : tg_conv2d(T, in[0], in[1], in[2], &o);
            cr_assert(y && y32, "%s", tg_tape_error(T));
            cr_assert(memcmp(y->data, saved[1][0], n[0] * sizeof(tg_real)) == 0, "autocast did not round x");
            cr_assert(memcmp(y32->data, saved[0][0], n[0] * sizeof(tg_real)) != 0, "x did not move");
        }
        static const char *what[4] = {"out", "dx", "dw", "db"};
        for (int k = 0; k < 4; k++) {
            cr_assert(memcmp(saved[0][k], saved[1][k], n[k] * sizeof(tg_real)) == 0, "%s %s differs under autocast",
                      kind ? "conv_transpose2d" : "conv2d", what[k]);
            free(saved[0][k]), free(saved[1][k]);
        }
        for (int k = 0; k < 3; k++) tg_tensor_free(in[k]);
    }
}
