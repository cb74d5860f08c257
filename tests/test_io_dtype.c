/* safetensors dtypes beyond F32/F64: tests/fixtures/dtypes.safetensors,
 * written by PyTorch (bench/torch/make_dtype_fixtures.py), holds a tensor of
 * each of F16, BF16, I32, I64, U8, BOOL and PyTorch's conversion of each to
 * float64 ("<name>.f64") and, for integers, to int64 ("<name>.i64"). Loading
 * must agree with PyTorch's conversions, keep integers exact (tg_st_ints),
 * and load a half-precision BatchNorm state_dict into float parameters. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <tapegrad/tapegrad.h>

static tg_safetensors *load_fixture(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/dtypes.safetensors", TG_SOURCE_DIR);
    tg_safetensors *s = NULL;
    cr_assert_eq(tg_st_load(path, &s), 0, "%s", tg_error());
    return s;
}

static tg_tensor *get(const tg_safetensors *s, const char *name)
{
    tg_tensor *x = tg_st_get(s, name);
    cr_assert(x, "no tensor '%s' in the fixture", name);
    return x;
}

static void assert_dtype(const tg_safetensors *s, const char *name, tg_dtype want)
{
    tg_dtype dt;
    cr_assert_eq(tg_st_dtype(s, name, &dt), 0, "%s", tg_error());
    cr_assert_eq(dt, want, "%s: dtype %s, want %s", name, tg_st_dtype_name(dt), tg_st_dtype_name(want));
}

/* x (loaded from its dtype) equals PyTorch's float64 of it rounded to tg_real,
 * with the same shape. F16 and BF16 are exact in float, so this is bit for bit. */
static void assert_matches_f64(const tg_safetensors *s, const char *name)
{
    char ref_name[128];
    snprintf(ref_name, sizeof ref_name, "%s.f64", name);
    tg_tensor *x = get(s, name), *ref = get(s, ref_name);
    cr_assert_eq(x->ndim, ref->ndim, "%s", name);
    for (int d = 0; d < x->ndim; d++) cr_assert_eq(x->shape[d], ref->shape[d], "%s dim %d", name, d);
    for (size_t i = 0; i < x->size; i++)
        cr_assert(x->data[i] == ref->data[i] || (x->data[i] != x->data[i] && ref->data[i] != ref->data[i]),
                  "%s[%zu] = %.9g, PyTorch's float64 %.9g", name, i, (double)x->data[i], (double)ref->data[i]);
}

Test(io_dtype, float_dtypes_load_as_pytorch_converts_them)
{
    tg_safetensors *s = load_fixture();
    const char *names[] = {"f16", "bf16", "f16_rand", "bf16_rand"};
    const tg_dtype dts[] = {TG_F16, TG_BF16, TG_F16, TG_BF16};
    for (int i = 0; i < 4; i++) {
        assert_dtype(s, names[i], dts[i]);
        assert_matches_f64(s, names[i]);
        cr_assert_null(tg_st_ints(s, names[i]), "%s is not an integer tensor", names[i]);
        cr_assert(strstr(tg_error(), "not an integer dtype"), "%s", tg_error());
    }
    /* the edges the fixture holds: -0, the largest half, its smallest subnormal, infinities */
    tg_tensor *h = get(s, "f16");
    cr_assert(h->data[1] == 0 && 1 / h->data[1] < 0, "-0.0 keeps its sign");
    cr_assert_eq(h->data[5], (tg_real)65504);
    cr_assert_eq(h->data[6], (tg_real)5.9604644775390625e-08); /* 2^-24 */
    cr_assert(h->data[9] > 0 && h->data[9] * 0 != 0, "inf");
    tg_st_free(s);
}

Test(io_dtype, integer_dtypes_keep_exact_values_and_convert_to_real)
{
    tg_safetensors *s = load_fixture();
    const char *names[] = {"i32", "i64", "u8", "bool", "ids"};
    const tg_dtype dts[] = {TG_I32, TG_I64, TG_U8, TG_BOOL, TG_I64};
    for (int i = 0; i < 5; i++) {
        char ref_name[64];
        snprintf(ref_name, sizeof ref_name, "%s.i64", names[i]);
        assert_dtype(s, names[i], dts[i]);
        tg_tensor *x = get(s, names[i]);
        const int64_t *v = tg_st_ints(s, names[i]), *ref = tg_st_ints(s, ref_name);
        cr_assert(v && ref, "%s", tg_error());
        for (size_t j = 0; j < x->size; j++) {
            cr_assert_eq(v[j], ref[j], "%s[%zu] = %lld, PyTorch's int64 %lld", names[i], j, (long long)v[j],
                         (long long)ref[j]);
            cr_assert_eq(x->data[j], (tg_real)ref[j], "%s[%zu] as tg_real", names[i], j);
        }
        if (strcmp(names[i], "i64") != 0) assert_matches_f64(s, names[i]); /* all exact in float64 */
    }
    /* I64's extremes, as the script wrote them */
    const int64_t *i64 = tg_st_ints(s, "i64");
    cr_assert_eq(i64[0], INT64_MIN);
    cr_assert_eq(i64[3], ((int64_t)1 << 53) + 1);
    cr_assert_eq(i64[4], INT64_MAX);
    const int64_t *b = tg_st_ints(s, "bool");
    cr_assert(b[0] == 1 && b[1] == 0 && b[2] == 0 && b[3] == 1);
    tg_st_free(s);
}

/* A half-precision BatchNorm1d state_dict (F16 weights, I64 num_batches_tracked)
 * loads into float parameters by name. */
Test(io_dtype, half_state_dict_loads_into_params)
{
    tg_safetensors *s = load_fixture();
    tg_params *p = tg_params_new();
    const char *names[] = {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"};
    for (int i = 0; i < 4; i++) cr_assert(tg_params_add(p, names[i], 1, (int[]){3}), "%s", tg_error());
    cr_assert(tg_params_add(p, "bn.num_batches_tracked", 0, NULL), "%s", tg_error());
    cr_assert_eq(tg_st_load_params(p, s, false, NULL), 0, "%s", tg_error());
    for (int i = 0; i < 5; i++) {
        const char *name = i < 4 ? names[i] : "bn.num_batches_tracked";
        char ref_name[64];
        snprintf(ref_name, sizeof ref_name, "%s.f64", name);
        tg_tensor *x = tg_params_get(p, name), *ref = get(s, ref_name);
        for (size_t j = 0; j < x->size; j++)
            cr_assert_eq(x->data[j], ref->data[j], "%s[%zu]", name, j);
    }
    assert_dtype(s, "bn.weight", TG_F16);
    assert_dtype(s, "bn.num_batches_tracked", TG_I64);
    cr_assert_eq(tg_st_ints(s, "bn.num_batches_tracked")[0], 1);
    tg_params_free(p);
    tg_st_free(s);
}

Test(io_dtype, misuse)
{
    tg_safetensors *s = load_fixture();
    tg_dtype dt;
    cr_assert_eq(tg_st_dtype(s, "nope", &dt), -1);
    cr_assert(strstr(tg_error(), "no tensor 'nope'"), "%s", tg_error());
    cr_assert_eq(tg_st_dtype(s, NULL, &dt), -1);
    cr_assert_eq(tg_st_dtype(NULL, "f16", &dt), -1);
    cr_assert_eq(tg_st_dtype(s, "f16", NULL), -1);
    cr_assert_null(tg_st_ints(s, "nope"));
    cr_assert_null(tg_st_ints(NULL, "i32"));
    /* tapegrad writes F32, F64, F16 and BF16 */
    uint8_t *buf = NULL;
    size_t len = 0;
    cr_assert_eq(tg_st_to_bytes(s, TG_I64, &buf, &len), -1);
    cr_assert(strstr(tg_error(), "dtype I64 cannot be written"), "%s", tg_error());
    cr_assert_str_eq(tg_st_dtype_name((tg_dtype)99), "?");
    /* a tensor added in memory has tg_real's dtype and no integers */
    cr_assert_eq(tg_st_add_data(s, "mine", NULL, 1, (int[]){2}), 0, "%s", tg_error());
    assert_dtype(s, "mine", sizeof(tg_real) == 8 ? TG_F64 : TG_F32);
    cr_assert_null(tg_st_ints(s, "mine"));
    tg_st_free(s);
}

/* Written as F32 and read back, an integer tensor is its tg_real values. */
Test(io_dtype, round_trip_of_loaded_integers_is_their_real_values)
{
    tg_safetensors *s = load_fixture(), *back = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    cr_assert_eq(tg_st_to_bytes(s, TG_F64, &buf, &len), 0, "%s", tg_error());
    cr_assert_eq(tg_st_parse(buf, len, NULL, &back), 0, "%s", tg_error());
    tg_tensor *a = get(s, "ids"), *b = get(back, "ids");
    for (size_t j = 0; j < a->size; j++) cr_assert_eq(a->data[j], b->data[j]);
    assert_dtype(back, "ids", TG_F64);
    tg_free(buf);
    tg_st_free(back);
    tg_st_free(s);
}

/* Written as F16 or BF16, float32 values round as PyTorch rounds them (to
 * nearest, ties to even, overflow to infinity, subnormals), bit for bit. */
Test(io_dtype, write_f16_bf16_rounds_as_pytorch)
{
    tg_safetensors *s = load_fixture();
    tg_tensor *src = get(s, "w_src");
    const tg_dtype dts[] = {TG_F16, TG_BF16};
    const char *refs[] = {"w_src.f16", "w_src.bf16"};
    for (int k = 0; k < 2; k++) {
        tg_safetensors *out = tg_st_new(), *back = NULL;
        cr_assert_eq(tg_st_add(out, "w", src), 0, "%s", tg_error());
        uint8_t *buf = NULL;
        size_t len = 0;
        cr_assert_eq(tg_st_to_bytes(out, dts[k], &buf, &len), 0, "%s", tg_error());
        cr_assert_eq(tg_st_parse(buf, len, NULL, &back), 0, "%s", tg_error());
        assert_dtype(back, "w", dts[k]);
        tg_tensor *w = get(back, "w"), *ref = get(s, refs[k]);
        cr_assert_eq(w->size, ref->size);
        for (size_t i = 0; i < w->size; i++)
            cr_assert(w->data[i] == ref->data[i] && signbit(w->data[i]) == signbit(ref->data[i]),
                      "%s[%zu]: %.9g written as %.9g, PyTorch rounds to %.9g", tg_st_dtype_name(dts[k]), i,
                      (double)src->data[i], (double)w->data[i], (double)ref->data[i]);
        tg_free(buf);
        tg_st_free(back);
        tg_st_free(out);
    }
    tg_st_free(s);
}
