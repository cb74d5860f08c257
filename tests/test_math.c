/* Elementwise math and activations (core/ops/pointwise/math.c, activation.c):
 * values and grads against formulas written here in double (each kind's
 * gradcheck: its op-case row, tests/op_cases_pointwise.c), tinygrad's
 * test_ops.py shapes ((45, 65), 0-d)
 * and extremes (softplus on [-400, -300]), size-0 dims, large magnitudes,
 * NaN propagation and misuse. PyTorch's own numbers: tests/test_fixtures.c
 * ("math" family). */
#include <float.h>

#include "ops_util.h"

TU_SUITE(math, 23);

enum { SIN, COS, EXP2, LOG2, LOG10, LOG1P, EXPM1, SIGN, RECIP, RSQRT, SQUARE, ERF, FLOOR, CEIL, TRUNC, ROUND, SILU, SOFTPLUS, SOFTPLUS3,
       LEAKY, ELU, SELU, CELU, MISH, HSWISH, HSIGMOID, HTANH, SOFTSIGN, GELU_TANH, N_KINDS };

typedef struct kind {
    const char *name;
    double lo, hi;         /* inputs drawn from here */
    double kinks[2];       /* points to stay 0.05 away from (NAN: none) */
} kind;

static const kind kinds[N_KINDS] = {
    [SIN] = {"sin", -4, 4, {NAN, NAN}},          [COS] = {"cos", -4, 4, {NAN, NAN}},
    [EXP2] = {"exp2", -3, 3, {NAN, NAN}},        [LOG2] = {"log2", 0.2, 4, {NAN, NAN}},
    [LOG10] = {"log10", 0.2, 4, {NAN, NAN}},     [LOG1P] = {"log1p", -0.8, 3, {NAN, NAN}},
    [EXPM1] = {"expm1", -3, 3, {NAN, NAN}},      [SIGN] = {"sign", -2, 2, {0, NAN}},
    [RECIP] = {"reciprocal", 0.3, 3, {NAN, NAN}}, [RSQRT] = {"rsqrt", 0.3, 3, {NAN, NAN}},
    [SQUARE] = {"square", -2, 2, {NAN, NAN}},    [ERF] = {"erf", -2.5, 2.5, {NAN, NAN}},
    [FLOOR] = {"floor", -1.9, -1.1, {NAN, NAN}}, [CEIL] = {"ceil", 1.1, 1.9, {NAN, NAN}},
    [TRUNC] = {"trunc", -1.9, -1.1, {NAN, NAN}}, [ROUND] = {"round", 2.1, 2.9, {2.5, NAN}},
    [SILU] = {"silu", -6, 6, {NAN, NAN}},        [SOFTPLUS] = {"softplus", -6, 6, {NAN, NAN}},
    [SOFTPLUS3] = {"softplus beta 3 threshold 4", -3, 3, {4.0 / 3, NAN}},
    [LEAKY] = {"leaky_relu 0.1", -2, 2, {0, NAN}}, [ELU] = {"elu 0.7", -3, 3, {0, NAN}},
    [SELU] = {"selu", -3, 3, {0, NAN}},          [CELU] = {"celu 1.5", -3, 3, {0, NAN}},
    [MISH] = {"mish", -5, 5, {NAN, NAN}},        [HSWISH] = {"hardswish", -5, 5, {-3, 3}},
    [HSIGMOID] = {"hardsigmoid", -5, 5, {-3, 3}}, [HTANH] = {"hardtanh -0.5 1.2", -2, 2, {-0.5, 1.2}},
    [SOFTSIGN] = {"softsign", -4, 4, {0, NAN}},  [GELU_TANH] = {"gelu_tanh", -4, 4, {NAN, NAN}},
};

static tg_tensor *apply(tg_tape *t, tg_tensor *x, int k)
{
    switch (k) {
    case SIN: return tg_sin(t, x);
    case COS: return tg_cos(t, x);
    case EXP2: return tg_exp2(t, x);
    case LOG2: return tg_log2(t, x);
    case LOG10: return tg_log10(t, x);
    case LOG1P: return tg_log1p(t, x);
    case EXPM1: return tg_expm1(t, x);
    case SIGN: return tg_sign(t, x);
    case RECIP: return tg_reciprocal(t, x);
    case RSQRT: return tg_rsqrt(t, x);
    case SQUARE: return tg_square(t, x);
    case ERF: return tg_erf(t, x);
    case FLOOR: return tg_floor(t, x);
    case CEIL: return tg_ceil(t, x);
    case TRUNC: return tg_trunc(t, x);
    case ROUND: return tg_round(t, x);
    case SILU: return tg_silu(t, x);
    case SOFTPLUS: return tg_softplus(t, x, 1, 20);
    case SOFTPLUS3: return tg_softplus(t, x, 3, 4);
    case LEAKY: return tg_leaky_relu(t, x, 0.1);
    case ELU: return tg_elu(t, x, 0.7);
    case SELU: return tg_selu(t, x);
    case CELU: return tg_celu(t, x, 1.5);
    case MISH: return tg_mish(t, x);
    case HSWISH: return tg_hardswish(t, x);
    case HSIGMOID: return tg_hardsigmoid(t, x);
    case HTANH: return tg_hardtanh(t, x, -0.5, 1.2);
    case SOFTSIGN: return tg_softsign(t, x);
    default: return tg_gelu_tanh(t, x);
    }
}

/* f(x) and f'(x), from the textbook formulas */
static double ref(int k, double x, double *d)
{
    const double sa = 1.6732632423543772848, ss = 1.0507009873554804934, c = sqrt(2 / 3.14159265358979323846);
    double s = 1 / (1 + exp(-x)), sp = log(1 + exp(x)), u, th;
    switch (k) {
    case SIN: *d = cos(x); return sin(x);
    case COS: *d = -sin(x); return cos(x);
    case EXP2: *d = pow(2, x) * log(2); return pow(2, x);
    case LOG2: *d = 1 / (x * log(2)); return log(x) / log(2);
    case LOG10: *d = 1 / (x * log(10)); return log(x) / log(10);
    case LOG1P: *d = 1 / (1 + x); return log(1 + x);
    case EXPM1: *d = exp(x); return exp(x) - 1;
    case SIGN: *d = 0; return x > 0 ? 1 : x < 0 ? -1 : 0;
    case RECIP: *d = -1 / (x * x); return 1 / x;
    case RSQRT: *d = -0.5 * pow(x, -1.5); return pow(x, -0.5);
    case SQUARE: *d = 2 * x; return x * x;
    case ERF: *d = 2 / sqrt(3.14159265358979323846) * exp(-x * x); return erf(x);
    case FLOOR: *d = 0; return floor(x);
    case CEIL: *d = 0; return ceil(x);
    case TRUNC: *d = 0; return trunc(x);
    case ROUND: *d = 0; return x < 2.5 ? 2 : 3;
    case SILU: *d = s + x * s * (1 - s); return x * s;
    case SOFTPLUS: *d = s; return sp;
    case SOFTPLUS3:
        if (3 * x > 4) return *d = 1, x;
        *d = 1 / (1 + exp(-3 * x));
        return log(1 + exp(3 * x)) / 3;
    case LEAKY: *d = x > 0 ? 1 : 0.1; return x > 0 ? x : 0.1 * x;
    case ELU: *d = x > 0 ? 1 : 0.7 * exp(x); return x > 0 ? x : 0.7 * (exp(x) - 1);
    case SELU: *d = ss * (x > 0 ? 1 : sa * exp(x)); return ss * (x > 0 ? x : sa * (exp(x) - 1));
    case CELU: *d = x > 0 ? 1 : exp(x / 1.5); return x > 0 ? x : 1.5 * (exp(x / 1.5) - 1);
    case MISH: th = tanh(sp); *d = th + x * s * (1 - th * th); return x * th;
    case HSWISH: *d = x < -3 ? 0 : x > 3 ? 1 : (2 * x + 3) / 6; return x * fmin(fmax(x + 3, 0), 6) / 6;
    case HSIGMOID: *d = x > -3 && x < 3 ? 1.0 / 6 : 0; return fmin(fmax(x + 3, 0), 6) / 6;
    case HTANH: *d = x > -0.5 && x < 1.2; return fmin(fmax(x, -0.5), 1.2);
    case SOFTSIGN: *d = 1 / ((1 + fabs(x)) * (1 + fabs(x))); return x / (1 + fabs(x));
    default:
        u = c * (x + 0.044715 * x * x * x), th = tanh(u);
        *d = 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * c * (1 + 3 * 0.044715 * x * x);
        return 0.5 * x * (1 + th);
    }
}

/* moves elements within 0.05 of a kink 0.1 away from it */
static void away_from_kinks(tg_tensor *x, int k)
{
    for (size_t e = 0; e < x->size; e++)
        for (int j = 0; j < 2; j++)
            if (!isnan(kinds[k].kinks[j]) && fabs((double)x->data[e] - kinds[k].kinks[j]) < 0.05)
                x->data[e] = (tg_real)(kinds[k].kinks[j] + 0.1);
}

#ifdef TAPEGRAD_DOUBLE
#define TOL 1e-13
#else
#define TOL (4 * FLT_EPSILON)
#endif

/* y = f(x) and the grad of sum(w y) against ref at each element of a heap x */
static void check_against_ref(int k, tg_tensor *x)
{
    tg_tensor *y = apply(T, x, k);
    cr_assert_not_null(y, "%s: %s", kinds[k].name, tg_tape_error(T));
    cr_assert(tg_shape_equal(x, y));
    tg_real *w = tg_arena_alloc(T, (x->size + 1) * sizeof *w, "test");
    for (size_t e = 0; e < x->size; e++) w[e] = (tg_real)((double)(e % 21) - 10) / 4;
    if (x->size) cr_assert_eq(tg_backward_seed(T, y, w), 0, "%s", tg_tape_error(T));
    for (size_t e = 0; e < x->size; e++) {
        double d, xv = (double)x->data[e], v = ref(k, xv, &d), g = (double)w[e] * d;
        cr_assert(fabs((double)y->data[e] - v) <= TOL * (1 + fabs(v)), "%s: f(%.9g) = %.9g, want %.9g",
                  kinds[k].name, xv, (double)y->data[e], v);
        cr_assert(fabs((double)x->grad[e] - g) <= 8 * TOL * (1 + fabs(g)), "%s: grad at %.9g = %.9g, want %.9g",
                  kinds[k].name, xv, (double)x->grad[e], g);
    }
    tg_tape_reset(T);
}

/* tinygrad's helper_test_op([(45,65)]) and [()] for each */
Test(math, values_and_grads_against_formulas_tinygrad_shapes)
{
    for (int k = 0; k < N_KINDS; k++) {
        int shapes[2][2] = {{45, 65}, {0, 0}};
        for (int s = 0; s < 2; s++) {
            tg_tensor *x = tu_rand(&R, kinds[k].lo, kinds[k].hi, s ? 0 : 2, shapes[s]);
            away_from_kinks(x, k);
            check_against_ref(k, x);
            tg_tensor_free(x);
        }
    }
}

/* OpInfo's empty samples: a size-0 dim gives a size-0 output of the same shape */
Test(math, size_zero_dims_give_empty_outputs)
{
    int shapes[3][3] = {{0}, {3, 0}, {2, 0, 4}};
    for (int k = 0; k < N_KINDS; k++)
        for (int s = 0; s < 3; s++) {
            tg_tensor *x = tg_tensor_zeros(T, s + 1, shapes[s]);
            x->requires_grad = true;
            tg_tensor *y = apply(T, x, k);
            cr_assert(y && y->size == 0 && tg_shape_equal(x, y), "%s: %s", kinds[k].name,
                      y ? "wrong shape" : tg_tape_error(T));
            tg_tape_reset(T);
        }
}

/* NaN in gives NaN out (sign: 0, as PyTorch), and NaN grad where the slope reads x */
Test(math, nan_propagates)
{
    for (int k = 0; k < N_KINDS; k++) {
        tg_tensor *x = mk(T, 1, (int[]){1}, (tg_real[]){NAN});
        tg_tensor *y = apply(T, x, k);
        cr_assert_not_null(y);
        if (k == SIGN)
            cr_assert_eq(y->data[0], 0);
        else
            cr_assert(isnan(y->data[0]), "%s(NaN) = %g", kinds[k].name, (double)y->data[0]);
        tg_tape_reset(T);
    }
}

/* torch.round halves to even; floor, ceil, trunc of halves and negatives */
Test(math, rounding_at_halves)
{
    tg_tensor *x = mk(T, 1, (int[]){5}, (tg_real[]){0.5, 1.5, 2.5, -0.5, -2.5});
    tg_tensor *r = tg_round(T, x), *f = tg_floor(T, x), *c = tg_ceil(T, x), *tr = tg_trunc(T, x);
    const tg_real want_r[5] = {0, 2, 2, 0, -2}, want_f[5] = {0, 1, 2, -1, -3}, want_c[5] = {1, 2, 3, 0, -2},
                  want_t[5] = {0, 1, 2, 0, -2};
    for (int i = 0; i < 5; i++)
        cr_assert(r->data[i] == want_r[i] && f->data[i] == want_f[i] && c->data[i] == want_c[i] &&
                      tr->data[i] == want_t[i], "at %g", (double)x->data[i]);
}

/* tinygrad's extremes and the log/exp stability points */
Test(math, large_magnitudes_stay_finite_and_accurate)
{
    tg_tensor *x = tu_rand(&R, -400, -300, 2, (int[]){45, 65});  /* test_softplus low=-400 high=-300 */
    tg_tensor *y = tg_sum(T, tg_softplus(T, x, 1, 20));
    cr_assert_eq(tg_backward(T, y), 0, "%s", tg_tape_error(T));
    for (size_t e = 0; e < x->size; e++) cr_assert(x->grad[e] >= 0 && x->grad[e] < 1e-120 + FLT_MIN);
    cr_assert(y->data[0] >= 0 && y->data[0] < 1e-100 + FLT_MIN);
    tg_tensor_free(x);
    tg_tape_reset(T);

    tg_real big[] = {1000, -1000, 1e-10, -1e-10, 88, -88};
    tg_tensor *b = mk(T, 1, (int[]){6}, big);
    tg_tensor *sp = tg_softplus(T, b, 1, 20), *si = tg_silu(T, b), *mi = tg_mish(T, b), *l1 = tg_log1p(T, b),
              *em = tg_expm1(T, b), *gt = tg_gelu_tanh(T, b), *ss = tg_softsign(T, b);
    cr_assert_eq(sp->data[0], 1000);
    cr_assert_eq(sp->data[1], 0);
    cr_assert_eq(si->data[0], 1000);
    cr_assert(si->data[1] == 0 && mi->data[1] == 0 && gt->data[1] == 0);
    cr_assert_eq(mi->data[0], 1000);
    cr_assert_eq(gt->data[0], 1000);
    tu_close(ss->data[0], 1000.0 / 1001, TU_TOL);
    tu_close(l1->data[2], 1e-10 - 5e-21, 1e-6);  /* log(1 + x) would round to 0 */
    tu_close(em->data[3], -1e-10 + 5e-21, 1e-6);
    cr_assert(isinf(em->data[0]) && em->data[1] == -1);
    tu_close(si->data[4], 88.0, TU_TOL);
    tg_tape_reset(T);

    tg_tensor *z = mk(T, 1, (int[]){3}, (tg_real[]){0, -1, INFINITY});
    tg_tensor *lg = tg_log2(T, z), *rs = tg_rsqrt(T, z), *rc = tg_reciprocal(T, z), *e2 = tg_exp2(T, z);
    cr_assert(isinf(lg->data[0]) && lg->data[0] < 0 && isnan(lg->data[1]) && isinf(lg->data[2]));
    cr_assert(isinf(rs->data[0]) && isnan(rs->data[1]) && rs->data[2] == 0);
    cr_assert(isinf(rc->data[0]) && rc->data[1] == -1 && rc->data[2] == 0);
    cr_assert(e2->data[0] == 1 && e2->data[1] == 0.5 && isinf(e2->data[2]));
}

/* ---- two and three operands --------------------------------------------- */

static tg_tensor *f_logaddexp(tg_tape *t, tg_tensor **in, void *ctx) { (void)ctx; return tg_logaddexp(t, in[0], in[1]); }
static tg_tensor *f_pow(tg_tape *t, tg_tensor **in, void *ctx) { (void)ctx; return tg_pow_tensor(t, in[0], in[1]); }
static tg_tensor *f_lerp(tg_tape *t, tg_tensor **in, void *ctx) { (void)ctx; return tg_lerp(t, in[0], in[1], in[2]); }

/* tinygrad: test_logaddexp [(45,65),(45,65)]; broadcasting with a stretched
 * dim separated by a kept one ([4,1,5] with [3,1]) */
Test(math, binary_gradchecks_broadcasting)
{
    int shapes[][2][3] = {{{2, 3, 4}, {2, 3, 4}}, {{4, 1, 5}, {1, 3, 1}}, {{1, 3, 1}, {2, 1, 4}}};
    for (int s = 0; s < 3; s++) {
        tg_tensor *in[3] = {tu_rand(&R, -3, 3, 3, shapes[s][0]), tu_rand(&R, -3, 3, 3, shapes[s][1])};
        tu_gradcheck(f_logaddexp, NULL, in, 2);
        tu_free_all(in, 2);
        in[0] = tu_rand(&R, 0.3, 3, 3, shapes[s][0]);
        in[1] = tu_rand(&R, -2, 2, 3, shapes[s][1]);
        tu_gradcheck(f_pow, NULL, in, 2);
        tu_free_all(in, 2);
        in[0] = tu_rand(&R, -3, 3, 3, shapes[s][0]);
        in[1] = tu_rand(&R, -3, 3, 3, shapes[s][1]);
        in[2] = tu_rand(&R, -0.5, 1.5, 1, (int[]){1});
        tu_gradcheck(f_lerp, NULL, in, 3);
        tu_free_all(in, 3);
    }
}

Test(math, binary_values_and_edges)
{
    tg_real a[] = {1000, -1000, -INFINITY, INFINITY, NAN, 0, 2};
    tg_real b[] = {1000, -1000, -INFINITY, INFINITY, 1, 0, -1};
    tg_tensor *x = mk(T, 1, (int[]){7}, a), *y = mk(T, 1, (int[]){7}, b);
    tg_tensor *l = tg_logaddexp(T, x, y);
    tu_close(l->data[0], 1000 + log(2.0), TU_TOL);
    tu_close(l->data[1], -1000 + log(2.0), TU_TOL);
    cr_assert(isinf(l->data[2]) && l->data[2] < 0 && isinf(l->data[3]) && l->data[3] > 0 && isnan(l->data[4]));
    tu_close(l->data[5], log(2.0), TU_TOL);
    tg_tape_reset(T);

    /* PyTorch: d/da a^b is 0 where b = 0; d/db is 0 where a = 0 and b >= 0 */
    tg_tensor *pa = mk(T, 1, (int[]){4}, (tg_real[]){0, 0, 2, NAN});
    tg_tensor *pb = mk(T, 1, (int[]){4}, (tg_real[]){0, 3, -1, 0});
    pa->requires_grad = pb->requires_grad = true;
    tg_tensor *p = tg_pow_tensor(T, pa, pb);
    cr_assert(p->data[0] == 1 && p->data[1] == 0 && p->data[2] == 0.5 && p->data[3] == 1);  /* NaN^0 = 1 */
    cr_assert_eq(tg_backward_seed(T, p, (tg_real[]){1, 1, 1, 1}), 0, "%s", tg_tape_error(T));
    cr_assert(pa->grad[0] == 0 && pa->grad[1] == 0 && pa->grad[3] == 0);
    tu_close(pa->grad[2], -0.25, TU_TOL);
    cr_assert(pb->grad[0] == 0 && pb->grad[1] == 0);
    tu_close(pb->grad[2], 0.5 * log(2.0), TU_TOL);
    tg_tape_reset(T);

    /* lerp is exact at both ends, and 0-d weights broadcast */
    tg_tensor *la = mk(T, 1, (int[]){2}, (tg_real[]){1e8, -3}), *lb = mk(T, 1, (int[]){2}, (tg_real[]){1, 5});
    tg_tensor *w0 = mk(T, 0, NULL, (tg_real[]){0}), *w1 = mk(T, 0, NULL, (tg_real[]){1});
    tg_tensor *l0 = tg_lerp(T, la, lb, w0), *l1 = tg_lerp(T, la, lb, w1);
    cr_assert(l0->data[0] == 1e8 && l0->data[1] == -3 && l1->data[0] == 1 && l1->data[1] == 5);
}

Test(math, misuse_is_an_error_naming_the_op)
{
    tg_tensor *x = mk(T, 2, (int[]){2, 3}, (tg_real[]){1, 2, 3, 4, 5, 6});
    assert_fails(T, tg_softplus(T, x, 0, 20), "tg_softplus", "beta");
    assert_fails(T, tg_celu(T, x, 0), "tg_celu", "alpha");
    assert_fails(T, tg_hardtanh(T, x, 1, -1), "tg_hardtanh", "min_val 1");
    assert_fails(T, tg_leaky_relu(T, x, NAN), "tg_leaky_relu", "NaN");
    assert_fails(T, tg_elu(T, x, NAN), "tg_elu", "NaN");
    tg_tensor *y = mk(T, 1, (int[]){2}, (tg_real[]){1, 2});
    assert_fails(T, tg_logaddexp(T, x, y), "tg_logaddexp", "[2,3], [2]");
    assert_fails(T, tg_lerp(T, x, x, y), "tg_lerp", "[2,3], [2,3], [2]");
    assert_fails(T, tg_pow_tensor(T, x, y), "tg_pow_tensor", "do not broadcast");
    assert_fails(T, tg_silu(T, NULL), "tg_silu", "NULL");
    tg_tape_reset(T);
    tg_tensor *old = mk(T, 1, (int[]){2}, (tg_real[]){1, 2});
    tg_tape_reset(T);
    assert_fails(T, tg_erf(T, old), "tg_erf", "before tg_tape_reset");
}
