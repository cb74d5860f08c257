/* Tensors carry their dtype: the traits, conversions by element, ops that
 * refuse a dtype they cannot take, the other float type's copy of an op
 * reached from this program, and gradcheck in float64 catching a backward
 * that float32 cannot tell from a right one. Built and run in both default
 * dtypes (tg_real float and double). */
#include <math.h>
#include <string.h>

#include "test_util.h"

/* The float type this program's tg_real is not. */
#define OTHER_FLOAT (TG_REAL_DTYPE == TG_F32 ? TG_F64 : TG_F32)

Test(dtype, traits)
{
    const struct {
        tg_dtype dt;
        const char *name;
        size_t size;
        bool is_float;
    } want[] = {{TG_F32, "float32", 4, true},  {TG_F64, "float64", 8, true}, {TG_F16, "float16", 2, true},
                {TG_BF16, "bfloat16", 2, true}, {TG_I32, "int32", 4, false}, {TG_I64, "int64", 8, false},
                {TG_U8, "uint8", 1, false},     {TG_BOOL, "bool", 1, false}};
    cr_assert_eq(sizeof want / sizeof *want, TG_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        cr_expect_str_eq(tg_dtype_name(want[i].dt), want[i].name);
        cr_expect_eq(tg_dtype_size(want[i].dt), want[i].size, "%s", want[i].name);
        cr_expect_eq(tg_dtype_is_float(want[i].dt), want[i].is_float, "%s", want[i].name);
    }
    cr_expect_str_eq(tg_dtype_name(TG_DTYPE_COUNT), "?");
    cr_expect_eq(tg_dtype_size((tg_dtype)-1), 0);
}

/* Stores round to nearest even (half types), truncate toward zero and
 * saturate (integers), and NaN is 0 as an integer. */
Test(dtype, load_store)
{
    unsigned char buf[8];
    const struct {
        tg_dtype dt;
        double v, back;
    } cases[] = {
        {TG_F32, 1.0 + 0x1p-30, 1.0},               /* below float32's half ulp */
        {TG_F64, 1.0 + 0x1p-30, 1.0 + 0x1p-30},
        {TG_BF16, 1.0 + 0x1p-8, 1.0},                /* a tie: to the even 1.0 */
        {TG_BF16, 1.0 + 3 * 0x1p-8, 1.0 + 0x1p-6},   /* a tie: to the even 1 + 2^-6 */
        {TG_BF16, 1.0 + 0x1p-8 + 0x1p-12, 1.0 + 0x1p-7},
        {TG_F16, 65520, INFINITY},                   /* past the largest float16 (65504) and its half ulp */
        {TG_F16, 0x1p-25, 0},                        /* half the smallest subnormal: a tie to 0 */
        {TG_I32, -2.75, -2},
        {TG_I32, 1e12, 2147483647},
        {TG_I64, NAN, 0},
        {TG_U8, 300, 255},
        {TG_U8, -3, 0},
        {TG_BOOL, 0.5, 1},
        {TG_BOOL, -0.0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        memset(buf, 0xa5, sizeof buf);
        tg_dtype_store(cases[i].dt, buf, 0, cases[i].v);
        double got = tg_dtype_load(cases[i].dt, buf, 0);
        cr_expect(got == cases[i].back || (isnan(got) && isnan(cases[i].back)), "%s %.17g: got %.17g, want %.17g",
                  tg_dtype_name(cases[i].dt), cases[i].v, got, cases[i].back);
    }
    tg_dtype_store(TG_BF16, buf, 0, NAN);
    cr_expect(isnan(tg_dtype_load(TG_BF16, buf, 0)));
}

Test(dtype, integer_tensors)
{
    tg_tensor *ids = tg_tensor_alloc_dtype(TG_I64, 2, (int[]){2, 3});
    cr_assert_not_null(ids);
    cr_expect_eq(ids->dtype, TG_I64);
    int64_t *v = tg_data(ids, TG_I64);
    cr_assert_not_null(v);
    for (int i = 0; i < 6; i++) cr_expect_eq(v[i], 0, "zero-filled");
    v[5] = (int64_t)1 << 60;  /* beyond float64's 2^53: stored exactly */
    cr_expect_eq(((int64_t *)ids->data)[5], (int64_t)1 << 60);
    tg_error_clear();
    cr_expect_null(tg_data(ids, TG_F32));
    tu_assert_has(tg_error(), "tg_data: the tensor is int64, not float32");
    tg_tensor_fill(ids, 7.9);
    cr_expect_eq(v[0], 7, "fill converts as a store does");
    tg_tensor_free(ids);

    tg_error_clear();
    cr_expect_null(tg_tensor_alloc_dtype(TG_DTYPE_COUNT, 1, (int[]){1}));
    tu_assert_has(tg_error(), "is not a dtype");

    tg_tape *t = tg_tape_new();
    tg_tensor *m = tg_tensor_zeros_dtype(t, TG_BOOL, 1, (int[]){4});
    cr_assert(m && m->dtype == TG_BOOL && m->size == 4);
    tg_tensor *x = tg_tensor_from_dtype(t, TG_I32, (int32_t[]){1, -2, 3}, 1, (int[]){3});
    cr_assert(x && x->dtype == TG_I32 && ((int32_t *)x->data)[1] == -2);
    tg_tape_free(t);
}

/* An op given a tensor it cannot take says which input, its dtype and the
 * op's. Elementwise ops promote float32 with float64 to float64 (PyTorch's
 * rule); the others take one float type. */
Test(dtype, ops_refuse)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *ids = tg_tensor_zeros_dtype(t, TG_I64, 1, (int[]){3});
    tu_expect_error(t, tg_exp(t, ids), "tg_exp: input 0 is int64", "it takes float tensors; convert with tg_to");

    tg_tensor *a = tg_tensor_zeros(t, 2, (int[]){3, 3});
    tg_tensor *b = tg_tensor_zeros_dtype(t, OTHER_FLOAT, 2, (int[]){3, 3});
    tu_expect_error(t, tg_matmul(t, a, b, NULL, 0), "tg_matmul: input 1 is", "no implicit promotion");
    tg_tensor *h = tg_tensor_zeros_dtype(t, TG_BF16, 1, (int[]){3});
    tu_expect_error(t, tg_add_inplace(t, h, h), "tg_add_inplace: input 0 is bfloat16", "convert with tg_to");
    tg_tensor *f = tg_tensor_zeros(t, 2, (int[]){3, 3}), *hm = tg_tensor_zeros_dtype(t, TG_BF16, 2, (int[]){3, 3});
    tu_expect_error(t, tg_matmul(t, f, hm, NULL, 0), "tg_matmul: input 1 is bfloat16", "no implicit promotion");
    tg_tape_free(t);
    cr_expect_null(tg_params_new_dtype(TG_BF16));
    cr_expect(strstr(tg_error(), "tg_params_new: parameters are float32 or float64 tensors, not bfloat16"), "%s", tg_error());
}

/* A bfloat16 forward over float32 weights (the weights converted with tg_to,
 * as a mixed-precision step does): every op computes in float32 and rounds
 * its output, so the loss and the weights' grads are the float32 model's to
 * within bfloat16's rounding of each op's output. */
static double mlp_loss(tg_dtype act, const tg_tensor *const *w, float *grads)
{
    tg_tape *t = tg_tape_new();
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    tg_tensor *x = tg_to(t, tg_randn(t, 2, (int[]){8, 16}, &rng), act);
    tg_tensor *w1 = tg_to(t, (tg_tensor *)w[0], act), *w2 = tg_to(t, (tg_tensor *)w[1], act);
    tg_tensor *hdn = tg_gelu(t, tg_layernorm(t, tg_matmul(t, x, w1, NULL, TG_TRANS_B), NULL, NULL, 1e-5));
    tg_tensor *y = tg_matmul(t, hdn, w2, NULL, TG_TRANS_B);
    tg_tensor *loss = tg_mean(t, tg_mul(t, y, y));
    cr_assert(loss, "%s", tg_tape_error(t));
    cr_assert_eq(loss->dtype, act, "the loss is %s", tg_dtype_name(loss->dtype));
    double l = tg_dtype_load(act, loss->data, 0);
    uint16_t one = tg_half_from_double(1, TG_BF16);
    float onef = 1;
    cr_assert_eq(tg_backward_seed(t, loss, act == TG_BF16 ? (const void *)&one : (const void *)&onef), 0, "%s",
                 tg_tape_error(t));
    size_t at = 0;
    for (int k = 0; k < 2; k++) {
        memcpy(grads + at, w[k]->grad, w[k]->size * sizeof(float));
        memset(w[k]->grad, 0, w[k]->size * sizeof(float));
        at += w[k]->size;
    }
    tg_tape_free(t);
    return l;
}

Test(dtype, bfloat16_forward_over_float32_weights)
{
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_tensor *w[2] = {tg_tensor_alloc_dtype(TG_F32, 2, (int[]){32, 16}), tg_tensor_alloc_dtype(TG_F32, 2, (int[]){4, 32})};
    float g32[32 * 16 + 4 * 32], g16[32 * 16 + 4 * 32];
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < w[k]->size; i++) ((float *)w[k]->data)[i] = (float)(tg_rng_normal(&rng) * 0.25);
        w[k]->requires_grad = true;
    }
    double l32 = mlp_loss(TG_F32, (const tg_tensor *const *)w, g32);
    double l16 = mlp_loss(TG_BF16, (const tg_tensor *const *)w, g16);
    cr_expect(fabs(l16 - l32) <= 0.05 * fabs(l32), "loss %g in bfloat16, %g in float32", l16, l32);
    /* bfloat16 keeps 8 bits: a few roundings of 2^-9 each through the five ops */
    double num = 0, den = 0;
    for (size_t i = 0; i < sizeof g32 / sizeof *g32; i++) num += (g16[i] - g32[i]) * (g16[i] - g32[i]), den += g32[i] * g32[i];
    cr_expect(den > 0 && sqrt(num / den) < 0.05, "the weights' grads differ by %.3g (relative L2)", sqrt(num / den));
    cr_expect(sqrt(num / den) > 0, "bfloat16 rounds: the grads cannot be float32's exactly");
    tg_tensor_free(w[0]);
    tg_tensor_free(w[1]);
}

Test(dtype, promotion)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = tg_tensor_alloc_dtype(TG_F32, 1, (int[]){2}), *b = tg_tensor_alloc_dtype(TG_F64, 1, (int[]){2});
    ((float *)a->data)[0] = 1, ((float *)a->data)[1] = 2;
    ((double *)b->data)[0] = 1e-9, ((double *)b->data)[1] = 3;
    a->requires_grad = b->requires_grad = true;
    for (int order = 0; order < 2; order++) {
        tg_tensor *y = order ? tg_mul(t, b, a) : tg_mul(t, a, b);
        cr_assert(y && y->dtype == TG_F64, "%s", tg_tape_error(t));
        cr_expect_eq(((double *)y->data)[0], 1e-9, "computed in float64");
        cr_assert_eq(tg_backward(t, tg_sum(t, y)), 0, "%s", tg_tape_error(t));
        cr_expect(((float *)a->grad)[0] == (float)1e-9 && ((float *)a->grad)[1] == 3, "a's grad rounded to float32");
        cr_expect(((double *)b->grad)[0] == 1 && ((double *)b->grad)[1] == 2);
        memset(a->grad, 0, 2 * sizeof(float)), memset(b->grad, 0, 2 * sizeof(double));
        tg_tape_reset(t);
    }
    tg_tensor_free(a);
    tg_tensor_free(b);
    tg_tape_free(t);
}

/* The other float type's copy of an op runs from this program: its results
 * have that type's precision, and its grads flow. */
static double x_plus_big_minus_big(tg_dtype dt)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_new_dtype(t, dt, 1, (int[]){2}), *big = tg_tensor_new_dtype(t, dt, 1, (int[]){2});
    tg_dtype_store(dt, x->data, 0, 1), tg_dtype_store(dt, x->data, 1, 1);
    tg_dtype_store(dt, big->data, 0, 1e8), tg_dtype_store(dt, big->data, 1, 1e8);
    tg_tensor *y = tg_sum(t, tg_sub(t, tg_add(t, x, big), big));
    cr_assert(y && y->dtype == dt, "%s", tg_tape_error(t));
    double v = tg_dtype_load(dt, y->data, 0);
    tg_tape_free(t);
    return v;
}

Test(dtype, other_float_copy)
{
    /* 1 + 1e8 - 1e8: 0 in float32 (1e8's ulp is 8), 1 in float64 */
    cr_expect_eq(x_plus_big_minus_big(TG_F32), 0);
    cr_expect_eq(x_plus_big_minus_big(TG_F64), 2);

    tg_tape *t = tg_tape_new();
    tg_tensor *a = tg_tensor_alloc_dtype(OTHER_FLOAT, 2, (int[]){2, 3});
    for (size_t i = 0; i < a->size; i++) tg_dtype_store(a->dtype, a->data, i, 0.25 * (double)i - 0.5);
    a->requires_grad = true;
    tg_tensor *y = tg_sum(t, tg_mul(t, tg_softmax(t, a), a));
    cr_assert(y && y->dtype == OTHER_FLOAT, "%s", tg_tape_error(t));
    cr_assert_eq(tg_backward(t, y), 0, "%s", tg_tape_error(t));
    cr_assert_not_null(a->grad);
    /* row 0 of softmax(a) * a summed, by hand: d/da_j = s_j (1 + a_j - sum_k s_k a_k) */
    double s[3], z = 0, m = 0;
    for (int j = 0; j < 3; j++) z += s[j] = exp(0.25 * j - 0.5);
    for (int j = 0; j < 3; j++) m += (s[j] /= z) * (0.25 * j - 0.5);
    for (int j = 0; j < 3; j++) {
        double want = s[j] * (1 + (0.25 * j - 0.5) - m);
        cr_expect(fabs(tg_dtype_load(a->dtype, a->grad, (size_t)j) - want) < (OTHER_FLOAT == TG_F64 ? 1e-15 : 1e-6),
                  "grad %d: %.17g vs %.17g", j, tg_dtype_load(a->dtype, a->grad, (size_t)j), want);
    }
    tg_tensor_free(a);
    tg_tape_free(t);
}

/* ---- a backward 1% off ------------------------------------------------------------------- */

/* y = x^2 elementwise, written for any float dtype (as a user's op may be):
 * its backward says 2.02 x instead of 2 x. */
TG_BACKWARD(square_wrong_backward, int)
{
    (void)ctx;
    tg_tensor *x = in[0];
    void *g = tg_grad_as(t, x, x->dtype);
    if (!g) return;
    for (size_t i = 0; i < x->size; i++) {
        double d = tg_dtype_load(x->dtype, out->grad, i) * 2.02 * tg_dtype_load(x->dtype, x->data, i);
        tg_dtype_store(x->dtype, g, i, tg_dtype_load(x->dtype, g, i) + d);
    }
}
TG_OP(square_wrong_op, "square_wrong", square_wrong_backward, int);

static tg_tensor *square_wrong(tg_tape *t, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *x = in[0];
    if (!tg_inputs_check_dtype(t, &square_wrong_op, x->dtype, &x, 1, 1)) return NULL;
    tg_tensor *y = tg_new_op(t, &square_wrong_op, x->dtype, x->ndim, x->shape);
    if (!y) return NULL;
    for (size_t i = 0; i < x->size; i++) {
        double v = tg_dtype_load(x->dtype, x->data, i);
        tg_dtype_store(x->dtype, y->data, i, v * v);
    }
    int unused = 0;
    if (!tg_op_record(t, &square_wrong_op, y, &x, 1, &unused)) return NULL;
    return tg_sum(t, tg_op_done(t, &square_wrong_op, y));
}

/* The default gradcheck (float64) fails it by far; the same check in float32
 * at float32's tolerances cannot tell it from a right one. */
Test(dtype, gradcheck_catches_one_percent)
{
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    tg_tensor *x = tg_tensor_alloc_dtype(TG_F32, 1, (int[]){6});
    for (size_t i = 0; i < x->size; i++) ((float *)x->data)[i] = (float)(0.5 + tg_rng_uniform(&rng));
    x->requires_grad = true;
    float before[6];
    memcpy(before, x->data, sizeof before);

    tg_gradcheck_result f32 = tg_gradcheck(square_wrong, NULL, &x, 1, &(tg_gradcheck_opts){.same_dtype = true});
    cr_expect(f32.ok && f32.worst_ratio > 0.5, "float32 at its tolerances: ratio %g", f32.worst_ratio);
    tg_gradcheck_result f64 = tg_gradcheck(square_wrong, NULL, &x, 1, NULL);
    cr_expect(!f64.ok && f64.worst_ratio > 5, "float64: ratio %g", f64.worst_ratio);
    tu_assert_has(tg_error(), "gradcheck FAILED");

    cr_expect_eq(x->dtype, TG_F32, "the input is float32 again");
    cr_expect(memcmp(before, x->data, sizeof before) == 0, "and holds its values");
    /* its grad is the (wrong) analytic one, rounded back to float32 */
    for (size_t i = 0; i < x->size; i++)
        cr_expect(fabsf(((float *)x->grad)[i] - 2.02f * before[i]) < 1e-5f, "grad %zu", i);
    tg_tensor_free(x);
}

/* tg_to converts by the store rules and, between float types, carries the
 * grad back; from or to an integer type nothing flows. */
Test(dtype, to)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_alloc_dtype(TG_F64, 1, (int[]){4});
    const double v[4] = {1 + 0x1p-30, -2.75, 300.5, NAN};
    memcpy(x->data, v, sizeof v);
    x->requires_grad = true;
    tg_tensor *f = tg_to(t, x, TG_F32), *i = tg_to(t, x, TG_I32), *b = tg_to(t, x, TG_BOOL);
    cr_assert(f && i && b, "%s", tg_tape_error(t));
    cr_expect(f->requires_grad && !i->requires_grad && !b->requires_grad);
    const float wf[4] = {1, -2.75f, 300.5f, NAN};
    const int32_t wi[4] = {1, -2, 300, 0};
    const bool wb[4] = {true, true, true, true};
    for (int k = 0; k < 3; k++) cr_expect_eq(((float *)f->data)[k], wf[k]);
    cr_expect(isnan(((float *)f->data)[3]));
    cr_expect(memcmp(i->data, wi, sizeof wi) == 0);
    cr_expect(memcmp(b->data, wb, sizeof wb) == 0);
    tg_tensor *w = tg_tensor_from_dtype(t, TG_F32, (float[]){1, 2, 3, 4}, 1, (int[]){4});
    cr_assert_eq(tg_backward(t, tg_sum(t, tg_mul(t, f, w))), 0, "%s", tg_tape_error(t));
    for (int k = 0; k < 4; k++) cr_expect_eq(((double *)x->grad)[k], k + 1.0);
    tg_tape_reset(t);
    tu_expect_error(t, tg_to(t, x, TG_DTYPE_COUNT), "tg_to: ", "is not a dtype");
    tg_tensor_free(x);
    tg_tape_free(t);
}

/* A float mask of the program's tg_real reaches the other float copy's op
 * converted to that copy's type. */
Test(dtype, additive_mask_crosses_copies)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *a = tg_tensor_alloc_dtype(OTHER_FLOAT, 2, (int[]){2, 3});
    for (size_t i = 0; i < a->size; i++) tg_dtype_store(a->dtype, a->data, i, 0.5 * (double)i);
    const tg_real add[6] = {0, -1, -INFINITY, 2, 0, -0.5};
    tg_mask m = {.attn = tg_tensor_from(t, add, 2, (int[]){2, 3})};
    tg_tensor *y = tg_softmax_masked(t, a, &m, 1.0);
    cr_assert(y && y->dtype == OTHER_FLOAT, "%s", tg_tape_error(t));
    for (int r = 0; r < 2; r++) {
        double z = 0, e[3];
        for (int j = 0; j < 3; j++) z += e[j] = exp(0.5 * (3 * r + j) + (double)add[3 * r + j]);
        for (int j = 0; j < 3; j++)
            cr_expect(fabs(tg_dtype_load(y->dtype, y->data, (size_t)(3 * r + j)) - e[j] / z) < 1e-6, "row %d key %d", r, j);
    }
    tg_tensor_free(a);
    tg_tape_free(t);
}
