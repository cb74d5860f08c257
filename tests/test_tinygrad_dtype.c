/* tinygrad's dtype tests (tinygrad/tinygrad, test/test_dtype.py) for the
 * dtypes tapegrad has: float32, float64, bfloat16, float16, int32, int64 and
 * bool. Each test is named after the tinygrad test (or class) it ports.
 * tinygrad compares with numpy and torch; the expected values here are
 * PyTorch's, as C literals in tests/tinygrad_dtype_values.h (written by
 * bench/torch/make_tinygrad_dtype_values.py), compared exactly: a cast, a
 * promotion and a rounding are exact operations.
 *
 * Left out, and why:
 * - int8, int16, uint16, uint32, uint64 and the fp8 types (TestInt8DType,
 *   TestUint16DType, ..., TestFp8s, TestFp8sConversions, test_float_to_uint,
 *   test_uint64_load, test_uint_overflow): tapegrad has none of these dtypes
 *   (uint8 it has, but only to read files: TestUint8DType's overflow cast is
 *   int8's);
 * - bitcast (test_bitcast, TestBitCast): tapegrad has no bitcast;
 * - test_to_np, test_dtypes_fields, test_finfo, TestPtrDType: numpy
 *   conversion and tinygrad's own DType objects, no tapegrad counterpart;
 * - integer results of integer arithmetic (_test_ops with two integer
 *   operands, test_max_w_alu's int t * t, test_abs_diff on ints): tapegrad
 *   computes in float types and refuses int + int by name (docs/DESIGN.md
 *   "Dtypes"), which int_arithmetic_is_refused checks instead;
 * - _test_ops's matmul of two different dtypes: tapegrad's matmul takes one
 *   float type (no implicit promotion); the same-dtype matmul is ported;
 * - test_f16_to_bf16_randomized draws 1000 values with numpy's seed 42:
 *   64 values of torch's generator stand in (the check is the same).
 */
#include <math.h>

#include "test_util.h"
#include "tinygrad_dtype_values.h"

TU_SUITE(tinygrad_dtype, 7);

/* tgd_*'s dtype order */
static const tg_dtype DT[TGD_ND] = {TG_F32, TG_F64, TG_BF16, TG_F16, TG_I32, TG_I64, TG_BOOL};

/* A tensor of dtype dt [n] holding v (each stored as dt rounds or truncates it). */
static tg_tensor *of(tg_dtype dt, const double *v, int n)
{
    tg_tensor *x = tg_tensor_zeros_dtype(T, dt, 1, (int[]){n});
    cr_assert_not_null(x, "%s", tg_tape_error(T));
    for (int i = 0; i < n; i++) tg_dtype_store(dt, x->data, (size_t)i, v[i]);
    return x;
}

/* x is of dtype dt and holds want[0..n) exactly (NaN where want is NaN). */
static void expect_values(const tg_tensor *x, tg_dtype dt, const double *want, int n, const char *what)
{
    cr_assert_not_null(x, "%s: %s", what, tg_tape_error(T));
    cr_expect_eq(x->dtype, dt, "%s: dtype %s, want %s", what, tg_dtype_name(x->dtype), tg_dtype_name(dt));
    cr_assert_eq(x->size, (size_t)n, "%s", what);
    for (int i = 0; i < n; i++) {
        double g = tg_dtype_load(x->dtype, x->data, (size_t)i);
        cr_expect(isnan(want[i]) ? isnan(g) : g == want[i], "%s: element %d is %.17g, torch gives %.17g", what, i, g,
                  want[i]);
    }
}

/* TestDType.test_casts_to and test_casts_from for every DTYPE: a tensor made
 * with the data in dtype a (Tensor(DATA, dtype=a)) holds torch's values,
 * and a.cast(b) gives torch's for every b. */
Test(tinygrad_dtype, test_casts_to_and_from)
{
    for (int a = 0; a < TGD_ND; a++) {
        tg_tensor *x = of(DT[a], tgd_v, TGD_NV);
        char what[96];
        snprintf(what, sizeof what, "Tensor(DATA, dtype=%s)", tg_dtype_name(DT[a]));
        expect_values(x, DT[a], tgd_src[a], TGD_NV, what);
        for (int b = 0; b < TGD_ND; b++) {
            snprintf(what, sizeof what, "%s.cast(%s)", tg_dtype_name(DT[a]), tg_dtype_name(DT[b]));
            expect_values(tg_to(T, x, DT[b]), DT[b], tgd_cast[a][b], TGD_NV, what);
        }
    }
}

/* _test_ops (test_same_size_ops, test_upcast_ops, test_upcast_to_ops): a + b,
 * a * b and a + ones(4, 4) give torch.result_type(a, b) and tinygrad's
 * values for every pair with a float operand; (a.cast(b) + a.cast(b)).cast(a)
 * is a's [2]; a @ eye(2) of one float dtype gives a. */
Test(tinygrad_dtype, test_ops_promote)
{
    const double v[4] = {1, 2, 3, 4}, sum[4] = {2, 4, 6, 8}, prod[4] = {1, 4, 9, 16}, one[1] = {1}, two[1] = {2};
    double twos[16];
    for (int i = 0; i < 16; i++) twos[i] = 2;
    for (int a = 0; a < TGD_ND; a++)
        for (int b = 0; b < TGD_ND; b++) {
            if (!tg_dtype_is_float(DT[a]) && !tg_dtype_is_float(DT[b])) continue;  /* int_arithmetic_is_refused */
            if (DT[a] == TG_BOOL || DT[b] == TG_BOOL) continue;                    /* tinygrad skips bools here */
            tg_dtype want = DT[tgd_promoted[a][b]];
            tg_tensor *x = of(DT[a], v, 4), *y = of(DT[b], v, 4);
            char what[96];
            snprintf(what, sizeof what, "%s + %s", tg_dtype_name(DT[a]), tg_dtype_name(DT[b]));
            expect_values(tg_add(T, x, y), want, sum, 4, what);
            snprintf(what, sizeof what, "%s * %s", tg_dtype_name(DT[a]), tg_dtype_name(DT[b]));
            expect_values(tg_mul(T, x, y), want, prod, 4, what);
            snprintf(what, sizeof what, "%s [4] + ones(4, 4) of %s", tg_dtype_name(DT[a]), tg_dtype_name(DT[b]));
            tg_tensor *ones = tg_ones_dtype(T, DT[b], 2, (int[]){4, 4}), *s = tg_add(T, of(DT[a], one, 1), ones);
            expect_values(s ? tg_reshape(T, s, 1, (int[]){16}) : NULL, want, twos, 16, what);
            if (!tg_dtype_is_float(DT[b])) continue;
            tg_tensor *c = tg_to(T, of(DT[a], one, 1), DT[b]);
            snprintf(what, sizeof what, "(%s.cast(%s) * 2).cast back", tg_dtype_name(DT[a]), tg_dtype_name(DT[b]));
            expect_values(tg_to(T, tg_add(T, c, c), DT[a]), DT[a], two, 1, what);
            tg_tape_reset(T);
        }
    for (int a = 0; a < 4; a++) {  /* the float types */
        tg_tensor *m = tg_reshape(T, of(DT[a], v, 4), 2, (int[]){2, 2});
        tg_tensor *y = tg_matmul(T, m, tg_eye_dtype(T, DT[a], 2, 2), NULL, 0);
        expect_values(y ? tg_reshape(T, y, 1, (int[]){4}) : NULL, DT[a], v, 4, tg_dtype_name(DT[a]));
    }
}

/* _test_ops's integer pairs and test_max_w_alu: tapegrad does not offer
 * integer arithmetic; it refuses it naming the op and the dtype, and an
 * integer beside a float computes in the float type, as PyTorch. */
Test(tinygrad_dtype, int_arithmetic_is_refused)
{
    const double v[4] = {1, 2, 3, 4}, half[4] = {0.5, 0.5, 0.5, 0.5}, w[4] = {1, 2, 3, 300}, h[4] = {1.5, 1.5, 1.5, 1.5};
    tu_expect_error(T, tg_add(T, of(TG_I32, v, 4), of(TG_I32, v, 4)), "tg_add: input 0 is int32",
                    "it takes float tensors");
    tu_expect_error(T, tg_mul(T, of(TG_I64, v, 4), of(TG_I64, v, 4)), "tg_mul: input 0 is int64",
                    "it takes float tensors");
    expect_values(tg_add(T, of(TG_I32, v, 4), of(TG_F32, half, 4)), TG_F32, tgd_int_add, 4, "int32 + float32");
    expect_values(tg_mul(T, of(TG_I64, w, 4), of(TG_BF16, h, 4)), TG_BF16, tgd_int_mul_bf16, 4, "int64 * bfloat16");
}

/* TestDType.test_resulting_and_init_dtypes_match: [1, 2, 0, 0.5, -1.5, 5.25]
 * made as each dtype holds torch's (numpy's astype) values. */
Test(tinygrad_dtype, test_resulting_and_init_dtypes_match)
{
    tg_tensor *x = of(TG_F64, tgd_init, 6);
    for (int a = 0; a < TGD_ND; a++) {
        expect_values(tg_to(T, x, DT[a]), DT[a], tgd_init_as[a], 6, tg_dtype_name(DT[a]));
        expect_values(of(DT[a], tgd_init, 6), DT[a], tgd_init_as[a], 6, tg_dtype_name(DT[a]));
    }
}

/* TestBFloat16: test_bf16_creation_numpy, test_bf16_ones, test_bf16_eye. */
Test(tinygrad_dtype, test_bf16_creation)
{
    const double v[3] = {-1, 1, 2};
    expect_values(of(TG_BF16, v, 3), TG_BF16, v, 3, "Tensor([-1, 1, 2], dtype=bfloat16)");
    double ones[15], eye[9];
    for (int i = 0; i < 15; i++) ones[i] = 1;
    for (int i = 0; i < 9; i++) eye[i] = i % 4 == 0;
    tg_tensor *o = tg_ones_dtype(T, TG_BF16, 2, (int[]){3, 5}), *e = tg_eye_dtype(T, TG_BF16, 3, 3);
    expect_values(o ? tg_reshape(T, o, 1, (int[]){15}) : NULL, TG_BF16, ones, 15, "ones(3, 5)");
    expect_values(e ? tg_reshape(T, e, 1, (int[]){9}) : NULL, TG_BF16, eye, 9, "eye(3)");
    /* the other creation ops' dtypes */
    tg_tensor *z = tg_zeros_dtype(T, TG_I64, 1, (int[]){2}), *f = tg_full_dtype(T, TG_BOOL, 1, (int[]){2}, 3);
    tg_tensor *r = tg_arange_dtype(T, TG_I32, 0, 3, 1);
    expect_values(z, TG_I64, (const double[]){0, 0}, 2, "zeros(2, dtype=int64)");
    expect_values(f, TG_BOOL, (const double[]){1, 1}, 2, "full(2, 3, dtype=bool)");
    expect_values(r, TG_I32, (const double[]){0, 1, 2}, 3, "arange(3, dtype=int32)");
}

/* TestBFloat16DType (test_bf16_to_float, test_float_to_bf16, test_bf16) and
 * TestOpsBFloat16.test_cast: float32 -> bfloat16 -> float32 rounds as torch. */
Test(tinygrad_dtype, test_bf16_round_trip)
{
    expect_values(tg_to(T, tg_to(T, of(TG_F32, tgd_bf16_in, 5), TG_BF16), TG_F32), TG_F32, tgd_bf16_out, 5,
                  "[10000, -1, -1000, -10000, 20] through bfloat16");
    expect_values(tg_to(T, tg_to(T, of(TG_F32, tgd_bf16_big_in, 4), TG_BF16), TG_F32), TG_F32, tgd_bf16_big_out, 4,
                  "[60000, 70000, 80000, 100000] through bfloat16");
}

/* TestOpsBFloat16.test_no_approximation: sqrt in bfloat16 (computed in
 * float32, rounded once) gives torch's bfloat16 sqrt. */
Test(tinygrad_dtype, test_no_approximation)
{
    expect_values(tg_sqrt(T, of(TG_BF16, tgd_bf16_sqrt_in, 3)), TG_BF16, tgd_bf16_sqrt_out, 3, "bfloat16 sqrt");
}

/* TestBFloat16DTypeCast: float16 -> bfloat16 -> float32 (test_f16_to_bf16_conversion,
 * _edge_cases, _range_precision, _randomized) as torch. */
Test(tinygrad_dtype, test_f16_to_bf16)
{
    tg_tensor *e = of(TG_F16, tgd_f16_edge, 7);
    expect_values(tg_to(T, e, TG_F32), TG_F32, tgd_f16_edge_f16, 7, "float16 edge values");
    expect_values(tg_to(T, tg_to(T, e, TG_BF16), TG_F32), TG_F32, tgd_f16_edge_bf16, 7, "float16 -> bfloat16");
    cr_expect(signbit(tg_dtype_load(TG_BF16, tg_to(T, e, TG_BF16)->data, 1)), "-0.0 keeps its sign");
    int n = (int)(sizeof tgd_f16_rand / sizeof *tgd_f16_rand);
    expect_values(tg_to(T, tg_to(T, of(TG_F16, tgd_f16_rand, n), TG_BF16), TG_F64), TG_F64, tgd_f16_rand_bf16, n,
                  "random float16 -> bfloat16");
}

/* TestDoubleDType.test_float64_to_float32_cast_inf */
Test(tinygrad_dtype, test_float64_to_float32_cast_inf)
{
    expect_values(tg_to(T, of(TG_F64, tgd_f64_big, 4), TG_F32), TG_F32, tgd_f64_big_f32, 4, "[3.4e40, 3.4e38, 1, 0]");
}

/* TestDoubleDType.test_float64_increased_precision (tan left out: tapegrad
 * has none): float64 functions within 1e-12 of torch's. */
Test(tinygrad_dtype, test_float64_increased_precision)
{
    tg_tensor *(*const fn[])(tg_tape *, tg_tensor *) = {tg_exp, tg_exp2, tg_log, tg_log2, tg_sqrt,
                                                        tg_rsqrt, tg_sin, tg_cos, tg_sigmoid};
    const char *names[] = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "sigmoid"};
    tg_tensor *x = of(TG_F64, (const double[]){2, 3, 4}, 3);
    for (int k = 0; k < 9; k++) {
        tg_tensor *y = fn[k](T, x);
        cr_assert(y && y->dtype == TG_F64, "%s: %s", names[k], tg_tape_error(T));
        for (int i = 0; i < 3; i++) {
            double g = ((double *)y->data)[i], w = tgd_f64_fn[k][i];
            cr_expect(fabs(g - w) <= 1e-12 + 1e-12 * fabs(w), "%s(%d) = %.17g, torch %.17g", names[k], i + 2, g, w);
        }
    }
}

/* TestImplicitFunctionTypeChange.test_functions: f([4, 3]).max() == f([4, 3])
 * holds somewhere (its sum is nonzero): max computes in f's dtype. */
Test(tinygrad_dtype, test_implicit_function_type_change)
{
    tg_tensor *(*const fn[])(tg_tape *, tg_tensor *) = {tg_exp, tg_exp2, tg_log, tg_log2, tg_sqrt, tg_sin};
    for (int k = 0; k < 6; k++) {
        tg_tensor *y = fn[k](T, of(TG_REAL_DTYPE, (const double[]){4, 3}, 2));
        tg_tensor *eq = tg_eq(T, tg_max(T, y), y);
        cr_assert(eq && eq->dtype == TG_BOOL, "%s", tg_tape_error(T));
        cr_expect(((bool *)eq->data)[0] || ((bool *)eq->data)[1], "function %d: max is neither f(4) nor f(3)", k);
    }
}

/* TestTensorMethod.test_abs_diff on the float dtypes: (a - b).abs() = 1 in a's dtype. */
Test(tinygrad_dtype, test_abs_diff)
{
    for (int a = 0; a < 4; a++) {
        tg_tensor *x = of(DT[a], (const double[]){2}, 1), *y = of(DT[a], (const double[]){1}, 1);
        expect_values(tg_abs(T, tg_sub(T, x, y)), DT[a], (const double[]){1}, 1, tg_dtype_name(DT[a]));
    }
}

/* TestBoolDType: bool tensors through the logical ops and a comparison, and
 * a bool operand promoted beside a float one, as torch. */
Test(tinygrad_dtype, bool_ops)
{
    tg_tensor *p = of(TG_BOOL, (const double[]){0, 0, 1, 1}, 4), *q = of(TG_BOOL, (const double[]){0, 1, 0, 1}, 4);
    expect_values(tg_logical_and(T, p, q), TG_BOOL, tgd_and, 4, "logical_and");
    expect_values(tg_logical_or(T, p, q), TG_BOOL, tgd_or, 4, "logical_or");
    expect_values(tg_logical_xor(T, p, q), TG_BOOL, tgd_xor, 4, "logical_xor");
    expect_values(tg_logical_not(T, p), TG_BOOL, tgd_not, 4, "logical_not");
    expect_values(tg_eq(T, p, q), TG_BOOL, tgd_eq, 4, "p == q");
    expect_values(tg_mul(T, p, of(TG_F32, (const double[]){1.5, 1.5, 1.5, 1.5}, 4)), TG_F32, tgd_bool_mul, 4,
                  "p * 1.5");
    tu_expect_error(T, tg_add(T, p, q), "tg_add: input 0 is bool", "it takes float tensors");
}
