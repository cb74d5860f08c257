/* safetensors dtypes beyond F32/F64: tests/fixtures/dtypes.safetensors,
 * written by PyTorch (bench/torch/make_dtype_fixtures.py), holds a tensor of
 * each of F16, BF16, I32, I64, U8, BOOL and PyTorch's conversion of each to
 * float64 ("<name>.f64") and, for integers, to int64 ("<name>.i64"). Loading
 * must agree with PyTorch's conversions, keep integers exact (tg_st_ints),
 * and load a half-precision BatchNorm state_dict into float parameters. */
#include <criterion/criterion.h>
#include <math.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
static tg_real value(const tg_tensor *x, size_t i) { return (tg_real)tg_dtype_load(x->dtype, x->data, i); }

static void assert_matches_f64(const tg_safetensors *s, const char *name)
{
    char ref_name[128];
    snprintf(ref_name, sizeof ref_name, "%s.f64", name);
    tg_tensor *x = get(s, name), *ref = get(s, ref_name);
    cr_assert_eq(x->ndim, ref->ndim, "%s", name);
    for (int d = 0; d < x->ndim; d++) cr_assert_eq(x->shape[d], ref->shape[d], "%s dim %d", name, d);
    for (size_t i = 0; i < x->size; i++)
        cr_assert(value(x, i) == ref->data[i] || (value(x, i) != value(x, i) && ref->data[i] != ref->data[i]),
                  "%s[%zu] = %.9g, PyTorch's float64 %.9g", name, i, (double)value(x, i), (double)ref->data[i]);
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

Test(io_dtype, integer_dtypes_load_as_themselves)
{
    tg_safetensors *s = load_fixture();
    const char *names[] = {"i32", "i64", "u8", "bool", "ids"};
    const tg_dtype dts[] = {TG_I32, TG_I64, TG_U8, TG_BOOL, TG_I64};
    for (int i = 0; i < 5; i++) {
        char ref_name[64];
        snprintf(ref_name, sizeof ref_name, "%s.i64", names[i]);
        assert_dtype(s, names[i], dts[i]);
        tg_tensor *x = get(s, names[i]);
        cr_assert_eq(x->dtype, dts[i], "%s loads as %s", names[i], tg_dtype_name(x->dtype));
        const int64_t *v = tg_st_ints(s, names[i]), *ref = tg_st_ints(s, ref_name);
        cr_assert(v && ref, "%s", tg_error());
        for (size_t j = 0; j < x->size; j++) {
            cr_assert_eq(v[j], ref[j], "%s[%zu] = %lld, PyTorch's int64 %lld", names[i], j, (long long)v[j],
                         (long long)ref[j]);
            if (dts[i] == TG_I64)
                cr_assert_eq(((int64_t *)tg_data(x, TG_I64))[j], ref[j], "%s[%zu] in the tensor", names[i], j);
            else
                cr_assert_eq(tg_dtype_load(x->dtype, x->data, j), (double)ref[j], "%s[%zu] in the tensor", names[i], j);
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
    tg_tensor *nbt = tg_params_add(p, "bn.num_batches_tracked", 0, NULL);
    cr_assert(nbt, "%s", tg_error());
    nbt->requires_grad = false; /* a buffer, as nn/batchnorm.c makes it */
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
    /* float tensors are written as F32, F64, F16 or BF16, or each as itself */
    uint8_t *buf = NULL;
    size_t len = 0;
    cr_assert_eq(tg_st_to_bytes(s, TG_I64, &buf, &len), -1);
    cr_assert(strstr(tg_error(), "cannot be written as dtype I64"), "%s", tg_error());
    cr_assert_eq(tg_st_to_bytes(s, (tg_dtype)99, &buf, &len), -1);
    cr_assert_str_eq(tg_st_dtype_name((tg_dtype)99), "?");
    /* a tensor added in memory has tg_real's dtype and no integers */
    cr_assert_eq(tg_st_add_data(s, "mine", NULL, 1, (int[]){2}), 0, "%s", tg_error());
    assert_dtype(s, "mine", sizeof(tg_real) == 8 ? TG_F64 : TG_F32);
    cr_assert_null(tg_st_ints(s, "mine"));
    tg_st_free(s);
}

/* Written with float tensors as F64 and read back, an integer tensor is
 * still itself, and the float ones are F64. */
Test(io_dtype, round_trip_of_loaded_integers_keeps_them)
{
    tg_safetensors *s = load_fixture(), *back = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    cr_assert_eq(tg_st_to_bytes(s, TG_F64, &buf, &len), 0, "%s", tg_error());
    cr_assert_eq(tg_st_parse(buf, len, NULL, &back), 0, "%s", tg_error());
    tg_tensor *a = get(s, "ids"), *b = get(back, "ids");
    cr_assert_eq(b->dtype, TG_I64);
    cr_assert_eq(memcmp(a->data, b->data, a->size * sizeof(int64_t)), 0);
    assert_dtype(back, "ids", TG_I64);
    assert_dtype(back, "f16", TG_F64);
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

/* ---- every dtype as itself (tests/fixtures/dtypes_all.safetensors, written by
 * bench/torch/make_dtypes_all_fixture.py with the values below) ---------------- */

/* A tensor of dtype dt holding n values, each rounded by tg_dtype_store. */
static tg_tensor *of_dtype(tg_dtype dt, const double *v, int n)
{
    tg_tensor *x = tg_tensor_alloc_dtype(dt, 1, (int[]){n});
    cr_assert(x, "%s", tg_error());
    for (int i = 0; i < n; i++) tg_dtype_store(dt, x->data, (size_t)i, v[i]);
    return x;
}

static const tg_dtype all_dts[] = {TG_F32, TG_F64, TG_F16, TG_BF16, TG_I32, TG_I64, TG_U8, TG_BOOL};
static const char *all_names[] = {"f32", "f64", "f16", "bf16", "i32", "i64", "u8", "bool"};

/* y, as loaded, holds x's values: an integer or bool tensor byte for byte in
 * its own dtype, a float one as tg_real. */
static void assert_loaded_as(const tg_tensor *y, const tg_tensor *x, const char *name)
{
    cr_assert_eq(y->size, x->size, "%s", name);
    if (!tg_dtype_is_float(x->dtype)) {
        cr_assert_eq(y->dtype, x->dtype, "%s loads as %s", name, tg_dtype_name(y->dtype));
        cr_assert_eq(memcmp(y->data, x->data, x->size * tg_dtype_size(x->dtype)), 0, "%s: values differ", name);
        return;
    }
    cr_assert_eq(y->dtype, TG_REAL_DTYPE, "%s", name);
    for (size_t j = 0; j < x->size; j++)
        cr_assert_eq(y->data[j], value(x, j), "%s[%zu] = %.17g, want %.17g", name, j, (double)y->data[j],
                     (double)value(x, j));
}

Test(io_dtype, every_dtype_round_trips_as_itself)
{
    const double v[] = {1.0 / 3, -2.5, 1e-3, 7, 0, 255, -1};
    tg_safetensors *s = tg_st_new(), *back = NULL;
    tg_tensor *x[8];
    for (int i = 0; i < 8; i++) {
        x[i] = of_dtype(all_dts[i], v, 7);
        cr_assert_eq(tg_st_add(s, all_names[i], x[i]), 0, "%s", tg_error());
        assert_dtype(s, all_names[i], all_dts[i]);
    }
    tg_tensor *big = of_dtype(TG_I64, v, 7);
    ((int64_t *)big->data)[6] = INT64_MAX; /* beyond a double's 2^53 */
    cr_assert_eq(tg_st_add(s, "big", big), 0, "%s", tg_error());
    cr_assert_eq(tg_st_ints(s, "big")[6], INT64_MAX);
    uint8_t *buf = NULL;
    size_t len = 0;
    cr_assert_eq(tg_st_to_bytes(s, TG_ST_OWN_DTYPE, &buf, &len), 0, "%s", tg_error());
    cr_assert_eq(tg_st_parse_verify(buf, len, NULL, TG_ST_VERIFY_REQUIRED, &back), 0, "%s", tg_error());
    for (int i = 0; i < 8; i++) {
        assert_dtype(back, all_names[i], all_dts[i]);
        assert_loaded_as(get(back, all_names[i]), x[i], all_names[i]);
    }
    assert_loaded_as(get(back, "big"), big, "big");
    cr_assert_eq(tg_st_ints(back, "big")[6], INT64_MAX);
    cr_assert_eq(tg_st_ints(back, "u8")[5], 255);
    cr_assert_eq(tg_st_ints(back, "bool")[1], 1);
    /* bf16 and f16 held 1/3 as tg_dtype_store rounded it, not as float32 */
    cr_assert_eq(get(back, "bf16")->data[0], (tg_real)0.333984375);
    tg_free(buf);
    tg_st_free(back);
    /* as F16: the float tensors round to it, the integer ones stay themselves */
    cr_assert_eq(tg_st_to_bytes(s, TG_F16, &buf, &len), 0, "%s", tg_error());
    cr_assert_eq(tg_st_parse_verify(buf, len, NULL, TG_ST_VERIFY_REQUIRED, &back), 0, "%s", tg_error());
    for (int i = 0; i < 8; i++) assert_dtype(back, all_names[i], tg_dtype_is_float(all_dts[i]) ? TG_F16 : all_dts[i]);
    assert_loaded_as(get(back, "i64"), x[5], "i64");
    cr_assert_eq(get(back, "f64")->data[0], (tg_real)tg_half_to_double(tg_half_from_double(1.0 / 3, TG_F16), TG_F16));
    tg_free(buf);
    tg_st_free(back);
    for (int i = 0; i < 8; i++) tg_tensor_free(x[i]);
    tg_tensor_free(big);
    tg_st_free(s);
}

Test(io_dtype, pytorch_file_of_every_dtype_loads_exactly)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/dtypes_all.safetensors", TG_SOURCE_DIR);
    tg_safetensors *s = NULL;
    cr_assert_eq(tg_st_load(path, &s), 0, "%s", tg_error());
    cr_assert_eq(tg_st_count(s), 8);
    const double want[8][4] = {{1.5, -2.25, 0x1p-20, (double)1e30f}, {0.1, -1.0 / 3, 0x1p-30},
                               {0.5, -65504, 0x1p-24}, {1, -0.0078125, 256, 1.5}, {-2147483648.0, 0, 7, 2147483647},
                               {0}, {0, 1, 200, 255}, {1, 0, 1}};
    const size_t sizes[8] = {4, 3, 3, 4, 4, 4, 4, 3};
    for (int i = 0; i < 8; i++) {
        assert_dtype(s, all_names[i], all_dts[i]);
        tg_tensor *x = get(s, all_names[i]);
        cr_assert_eq(x->size, sizes[i], "%s", all_names[i]);
        cr_assert_eq(x->dtype, tg_dtype_is_float(all_dts[i]) ? TG_REAL_DTYPE : all_dts[i], "%s", all_names[i]);
        for (size_t j = 0; i != 5 && j < x->size; j++)
            cr_assert_eq(value(x, j), (tg_real)want[i][j], "%s[%zu] = %.17g, want %.17g", all_names[i], j,
                         (double)value(x, j), want[i][j]);
    }
    cr_assert_eq(get(s, "f32")->ndim, 2);
    const int64_t *i64 = tg_data(get(s, "i64"), TG_I64), want64[] = {INT64_MIN, -1, ((int64_t)1 << 53) + 1, INT64_MAX};
    cr_assert(i64, "%s", tg_error());
    for (int j = 0; j < 4; j++) cr_assert_eq(i64[j], want64[j], "i64[%d] = %lld", j, (long long)i64[j]);
    const bool *b = tg_data(get(s, "bool"), TG_BOOL);
    cr_assert(b && b[0] && !b[1] && b[2], "%s", tg_error());
    cr_assert_eq(((uint8_t *)tg_data(get(s, "u8"), TG_U8))[2], 200);
    cr_assert_eq(((int32_t *)tg_data(get(s, "i32"), TG_I32))[0], INT32_MIN);
    tg_st_free(s);
}

/* A file tapegrad writes with an I64 and a BOOL tensor says so in its header,
 * as PyTorch's reader expects, with their little-endian bytes. */
Test(io_dtype, written_integer_dtypes_are_in_the_header)
{
    tg_safetensors *s = tg_st_new();
    tg_tensor *ids = of_dtype(TG_I64, (double[]){-2, 300}, 2), *mask = of_dtype(TG_BOOL, (double[]){1, 0, 1}, 3);
    tg_tensor *w = of_dtype(TG_REAL_DTYPE, (double[]){0.5}, 1);
    cr_assert(!tg_st_add(s, "ids", ids) && !tg_st_add(s, "mask", mask) && !tg_st_add(s, "w", w), "%s", tg_error());
    char path[] = "/tmp/tg_io_dtype_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(tg_st_save(s, path, TG_F32), 0, "%s", tg_error());
    FILE *f = fopen(path, "rb");
    uint8_t b[4096];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    unlink(path);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | b[i];
    cr_assert(n > 8 + hl && hl < sizeof b - 8);
    char hdr[4096];
    memcpy(hdr, b + 8, hl);
    hdr[hl] = '\0';
    cr_assert(strstr(hdr, "\"ids\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}"), "%s", hdr);
    cr_assert(strstr(hdr, "\"mask\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[16,19]}"), "%s", hdr);
    cr_assert(strstr(hdr, "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[19,23]}"), "%s", hdr);
    const uint8_t *d = b + 8 + hl, want[] = {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 44, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1};
    cr_assert_eq(n, 8 + hl + 23);
    cr_assert_eq(memcmp(d, want, sizeof want), 0, "the data bytes");
    tg_tensor_free(ids);
    tg_tensor_free(mask);
    tg_tensor_free(w);
    tg_st_free(s);
}

/* Loading parameters converts float entries to the store's dtype and refuses
 * an integer entry for a weight, naming the key and both dtypes. */
Test(io_dtype, load_params_converts_floats_and_refuses_integers_for_weights)
{
    tg_safetensors *s = tg_st_new();
    tg_tensor *ids = of_dtype(TG_I64, (double[]){3, 4}, 2), *h = of_dtype(TG_F16, (double[]){0.1, -2}, 2);
    cr_assert(!tg_st_add(s, "w", ids) && !tg_st_add(s, "h", h), "%s", tg_error());
    tg_params *p = tg_params_new_dtype(TG_F64);
    tg_tensor *w = tg_params_add(p, "w", 1, (int[]){2});
    cr_assert(w, "%s", tg_error());
    cr_assert_eq(tg_st_load_params(p, s, false, NULL), -1);
    cr_assert(strstr(tg_error(), "'w' is int64, but the parameter is float64"), "%s", tg_error());
    cr_assert_eq(((double *)tg_data(w, TG_F64))[0], 0, "nothing copied");
    w->requires_grad = false; /* a buffer takes the integer values */
    cr_assert_eq(tg_st_load_params(p, s, false, NULL), 0, "%s", tg_error());
    cr_assert_eq(((double *)tg_data(w, TG_F64))[1], 4);
    tg_params_free(p);
    p = tg_params_new_dtype(TG_F64);
    tg_tensor *hp = tg_params_add(p, "h", 1, (int[]){2});
    cr_assert_eq(tg_st_load_params(p, s, false, NULL), 0, "%s", tg_error());
    for (size_t j = 0; j < 2; j++) cr_assert_eq(((double *)tg_data(hp, TG_F64))[j], tg_dtype_load(TG_F16, h->data, j));
    tg_params_free(p);
    tg_tensor_free(ids);
    tg_tensor_free(h);
    tg_st_free(s);
}

/* Readers that copy tg_real rows refuse an integer tensor where they expect
 * weights, instead of reading its bytes as floats. */
Test(io_dtype, weight_readers_refuse_integer_tensors)
{
    tg_safetensors *s = tg_st_new();
    tg_tensor *w = of_dtype(TG_U8, (double[]){1, 2, 3, 4, 5, 6}, 6);
    cr_assert_eq(tg_st_add(s, "attn.in_proj_weight", w), 0, "%s", tg_error());
    cr_assert_null(tg_mha_convert(s, TG_MHA_PER_HEAD, 1, 0));
    cr_assert(strstr(tg_error(), "'attn.in_proj_weight' is uint8"), "%s", tg_error());
    tg_tensor_free(w);
    tg_st_free(s);
}

/* ---- every dtype kept as the file's (TG_ST_KEEP_DTYPE) --------------------------- */

/* Written as each tensor's own dtype and read back kept, every tensor has its
 * dtype and its bytes (NaN payloads, -0, subnormals and all); written with an
 * explicit float dtype, the half tensors convert to it exactly. */
Test(io_dtype, kept_dtypes_round_trip_bit_for_bit)
{
    const double v[] = {1.0 / 3, -2.5, 1e-3, 7, -0.0, 255, -1, 0x1p-24};
    tg_safetensors *s = tg_st_new(), *back = NULL;
    tg_tensor *x[8];
    for (int i = 0; i < 8; i++) {
        x[i] = of_dtype(all_dts[i], v, 8);
        cr_assert_eq(tg_st_add(s, all_names[i], x[i]), 0, "%s", tg_error());
    }
    ((uint16_t *)x[2]->data)[7] = 0x7e01; /* an F16 NaN with a payload, kept as is */
    ((uint16_t *)tg_st_get(s, "f16")->data)[7] = 0x7e01;
    uint8_t *buf = NULL;
    size_t len = 0;
    cr_assert_eq(tg_st_to_bytes(s, TG_ST_OWN_DTYPE, &buf, &len), 0, "%s", tg_error());
    cr_assert_eq(tg_st_parse_verify(buf, len, NULL, TG_ST_VERIFY_REQUIRED | TG_ST_KEEP_DTYPE, &back), 0, "%s",
                 tg_error());
    for (int i = 0; i < 8; i++) {
        tg_tensor *y = get(back, all_names[i]);
        assert_dtype(back, all_names[i], all_dts[i]);
        cr_assert_eq(y->dtype, all_dts[i], "%s loads as %s", all_names[i], tg_dtype_name(y->dtype));
        cr_assert_eq(y->size, x[i]->size);
        cr_assert_eq(memcmp(y->data, x[i]->data, x[i]->size * tg_dtype_size(all_dts[i])), 0, "%s: bytes differ",
                     all_names[i]);
        if (tg_dtype_is_float(all_dts[i])) cr_assert_null(tg_st_ints(back, all_names[i]));
    }
    cr_assert_eq(tg_st_ints(back, "u8")[5], 255);
    tg_free(buf);
    /* the kept set written again as itself is the same file */
    uint8_t *again = NULL;
    size_t len2 = 0;
    cr_assert_eq(tg_st_to_bytes(back, TG_ST_OWN_DTYPE, &again, &len2), 0, "%s", tg_error());
    cr_assert_eq(tg_st_to_bytes(s, TG_ST_OWN_DTYPE, &buf, &len), 0, "%s", tg_error());
    cr_assert(len2 == len && memcmp(again, buf, len) == 0, "a kept set writes the bytes it was read from");
    tg_free(again);
    tg_free(buf);
    /* written as F32, the half tensors convert (exactly) and the integers stay */
    tg_safetensors *f32 = NULL;
    cr_assert_eq(tg_st_to_bytes(back, TG_F32, &buf, &len), 0, "%s", tg_error());
    cr_assert_eq(tg_st_parse_verify(buf, len, NULL, TG_ST_VERIFY_REQUIRED | TG_ST_KEEP_DTYPE, &f32), 0, "%s",
                 tg_error());
    for (int i = 0; i < 8; i++) {
        tg_dtype want = tg_dtype_is_float(all_dts[i]) ? TG_F32 : all_dts[i];
        tg_tensor *y = get(f32, all_names[i]);
        assert_dtype(f32, all_names[i], want);
        cr_assert_eq(y->dtype, want, "%s", all_names[i]);
        for (size_t j = 0; all_dts[i] != TG_F64 && j < y->size; j++) {
            double a = tg_dtype_load(y->dtype, y->data, j), b = tg_dtype_load(all_dts[i], x[i]->data, j);
            cr_assert(a == b ? signbit(a) == signbit(b) : a != a && b != b, "%s[%zu] = %.17g, want %.17g",
                      all_names[i], j, a, b);
        }
    }
    cr_assert_eq(((float *)get(f32, "f64")->data)[0], (float)(1.0 / 3));
    tg_free(buf);
    tg_st_free(f32);
    tg_st_free(back);
    for (int i = 0; i < 8; i++) tg_tensor_free(x[i]);
    tg_st_free(s);
}

/* PyTorch's file of every dtype, read kept: each tensor is its file's dtype
 * (F64 stays float64 in the float32 program, F32 float32 in the float64 one)
 * with PyTorch's values; by default the floats are tg_real as before. */
Test(io_dtype, pytorch_file_of_every_dtype_keeps_dtypes)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/dtypes_all.safetensors", TG_SOURCE_DIR);
    tg_safetensors *s = NULL;
    cr_assert_eq(tg_st_load_verify(path, TG_ST_VERIFY_AUTO | TG_ST_KEEP_DTYPE, &s), 0, "%s", tg_error());
    cr_assert_eq(tg_st_count(s), 8);
    const double want[8][4] = {{1.5, -2.25, 0x1p-20, (double)1e30f}, {0.1, -1.0 / 3, 0x1p-30},
                               {0.5, -65504, 0x1p-24}, {1, -0.0078125, 256, 1.5}, {-2147483648.0, 0, 7, 2147483647},
                               {0}, {0, 1, 200, 255}, {1, 0, 1}};
    for (int i = 0; i < 8; i++) {
        tg_tensor *x = get(s, all_names[i]);
        cr_assert_eq(x->dtype, all_dts[i], "%s loads as %s", all_names[i], tg_dtype_name(x->dtype));
        for (size_t j = 0; i != 5 && j < x->size; j++)
            cr_assert_eq(tg_dtype_load(x->dtype, x->data, j), want[i][j], "%s[%zu] = %.17g, want %.17g",
                         all_names[i], j, tg_dtype_load(x->dtype, x->data, j), want[i][j]);
    }
    cr_assert_eq(((double *)tg_data(get(s, "f64"), TG_F64))[0], 0.1, "F64 is not rounded through float");
    const int64_t *i64 = tg_data(get(s, "i64"), TG_I64);
    cr_assert(i64 && i64[0] == INT64_MIN && i64[2] == ((int64_t)1 << 53) + 1 && i64[3] == INT64_MAX);
    /* the same file as PyTorch's bytes: half tensors hold the file's 16 bits */
    size_t len = 0;
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    uint8_t file[4096];
    len = fread(file, 1, sizeof file, f);
    fclose(f);
    uint64_t hl = 0;
    for (int b = 7; b >= 0; b--) hl = hl << 8 | file[b];
    const uint8_t *data = file + 8 + hl;
    cr_assert(len > 8 + hl);
    size_t off = 0;
    for (int i = 0; i < 8; i++) {  /* the fixture's data is in this order, little-endian like the host */
        const tg_tensor *x = tg_st_at(s, i);
        size_t n = x->size * tg_dtype_size(x->dtype);
        cr_assert_eq(memcmp(x->data, data + off, n), 0, "%s: bytes differ from the file's", x->name);
        off += n;
    }
    tg_st_free(s);
    /* the default is unchanged: floats as tg_real */
    cr_assert_eq(tg_st_load(path, &s), 0, "%s", tg_error());
    for (int i = 0; i < 8; i++)
        cr_assert_eq(get(s, all_names[i])->dtype, tg_dtype_is_float(all_dts[i]) ? TG_REAL_DTYPE : all_dts[i]);
    tg_st_free(s);
}

/* Parameters loaded from a kept set convert each float entry to the store's
 * dtype, and still refuse an integer entry for a weight. */
Test(io_dtype, load_params_from_kept_set_converts)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/dtypes_all.safetensors", TG_SOURCE_DIR);
    tg_safetensors *s = NULL;
    cr_assert_eq(tg_st_load_verify(path, TG_ST_VERIFY_OFF | TG_ST_KEEP_DTYPE, &s), 0, "%s", tg_error());
    const tg_dtype stores[] = {TG_F32, TG_F64};
    for (int k = 0; k < 2; k++) {
        tg_params *p = tg_params_new_dtype(stores[k]);
        const char *names[] = {"f64", "f16", "bf16"};
        const int sizes[] = {3, 3, 4};
        for (int i = 0; i < 3; i++) cr_assert(tg_params_add(p, names[i], 1, &sizes[i]), "%s", tg_error());
        cr_assert(tg_params_add(p, "f32", 2, (int[]){2, 2}), "%s", tg_error());
        cr_assert_eq(tg_st_load_params(p, s, true, "i"), -1, "u8 and bool are not parameters");
        cr_assert(strstr(tg_error(), "unexpected tensor 'u8'"), "%s", tg_error());
        cr_assert_eq(tg_st_load_params(p, s, false, NULL), 0, "%s", tg_error());
        for (int i = 0; i < 4; i++) {
            const tg_tensor *x = tg_params_get(p, i < 3 ? names[i] : "f32"), *y = get(s, i < 3 ? names[i] : "f32");
            cr_assert_eq(x->dtype, stores[k]);
            for (size_t j = 0; j < x->size; j++) {
                double want = stores[k] == TG_F32 ? (float)tg_dtype_load(y->dtype, y->data, j)
                                                  : tg_dtype_load(y->dtype, y->data, j);
                cr_assert_eq(tg_dtype_load(x->dtype, x->data, j), want, "%s[%zu] in a %s store", x->name, j,
                             tg_dtype_name(stores[k]));
            }
        }
        cr_assert(tg_params_add(p, "i32", 1, (int[]){4}), "%s", tg_error());
        cr_assert_eq(tg_st_load_params(p, s, false, NULL), -1);
        cr_assert(strstr(tg_error(), "'i32' is int32, but the parameter is"), "%s", tg_error());
        tg_params_free(p);
    }
    tg_st_free(s);
}

Test(io_dtype, keep_flag_misuse)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/dtypes_all.safetensors", TG_SOURCE_DIR);
    tg_safetensors *s = NULL;
    cr_assert_eq(tg_st_load_verify(path, (tg_st_verify)(7 | TG_ST_KEEP_DTYPE), &s), -1);
    cr_assert(strstr(tg_error(), "verify = 7 is not a tg_st_verify"), "%s", tg_error());
    cr_assert_null(s);
    /* keeping dtypes does not turn verification off: PyTorch's file has no checksums */
    cr_assert_eq(tg_st_load_verify(path, TG_ST_VERIFY_REQUIRED | TG_ST_KEEP_DTYPE, &s), -1);
    cr_assert_null(s);
}

/* ---- tests/fixtures/tapegrad_dtypes.safetensors: written by tapegrad, one
 * tensor of every dtype with the values below, which
 * bench/torch/check_tapegrad_written.py checks after loading it with PyTorch.
 * The test writes the set again and compares the bytes; to regenerate the
 * fixture: TG_WRITE_FIXTURES=1 build/release/test_io_dtype --filter '*tapegrad_written*' */

static tg_safetensors *tapegrad_written_set(void)
{
    static const double vals[8][4] = {{1.5, -0.0, 1e30, 0x1p-149}, {0.1, -1.0 / 3, 0x1p-1074},
                                      {0.5, -65504, 0x1p-24, -INFINITY}, {1, -0.0078125, 0x1p100, 3},
                                      {-2147483648.0, -1, 7, 2147483647}, {0}, {0, 1, 200, 255}, {1, 0, 1}};
    static const int sizes[8] = {4, 3, 4, 4, 4, 4, 4, 3};
    tg_safetensors *s = tg_st_new();
    cr_assert(s);
    for (int i = 0; i < 8; i++) {
        /* f32 is [2, 2], the others 1-d */
        tg_tensor *x = tg_tensor_alloc_dtype(all_dts[i], i ? 1 : 2, i ? &sizes[i] : (int[]){2, 2});
        cr_assert(x, "%s", tg_error());
        for (int j = 0; j < sizes[i]; j++) tg_dtype_store(all_dts[i], x->data, (size_t)j, vals[i][j]);
        if (all_dts[i] == TG_I64) {
            const int64_t v[] = {INT64_MIN, -1, ((int64_t)1 << 53) + 1, INT64_MAX};
            memcpy(x->data, v, sizeof v);
        }
        cr_assert_eq(tg_st_add(s, all_names[i], x), 0, "%s", tg_error());
        tg_tensor_free(x);
    }
    cr_assert_eq(tg_st_set_meta(s, "format", "pt"), 0);
    return s;
}

Test(io_dtype, tapegrad_written_fixture_is_current)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/tapegrad_dtypes.safetensors", TG_SOURCE_DIR);
    tg_safetensors *s = tapegrad_written_set(), *back = NULL;
    if (getenv("TG_WRITE_FIXTURES")) cr_assert_eq(tg_st_save(s, path, TG_ST_OWN_DTYPE), 0, "%s", tg_error());
    uint8_t *buf = NULL;
    size_t len = 0, flen = 0;
    cr_assert_eq(tg_st_to_bytes(s, TG_ST_OWN_DTYPE, &buf, &len), 0, "%s", tg_error());
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s: %s", path, strerror(errno));
    uint8_t file[4096];
    flen = fread(file, 1, sizeof file, f);
    fclose(f);
    cr_assert(flen == len && memcmp(file, buf, len) == 0,
              "%s is not what tapegrad writes today (%zu bytes, %zu written)", path, flen, len);
    cr_assert_eq(tg_st_load_verify(path, TG_ST_VERIFY_REQUIRED | TG_ST_KEEP_DTYPE, &back), 0, "%s", tg_error());
    for (int i = 0; i < 8; i++) {
        const tg_tensor *x = tg_st_at(s, i), *y = get(back, x->name);
        cr_assert(y->dtype == x->dtype && memcmp(y->data, x->data, x->size * tg_dtype_size(x->dtype)) == 0, "%s",
                  x->name);
    }
    tg_free(buf);
    tg_st_free(back);
    tg_st_free(s);
}

/* Infinities written as F16 or BF16 are infinities (PyTorch's 0x7c00 / 0x7f80,
 * signed), not whatever frexp leaves for them. */
Test(io_dtype, infinities_write_as_half_infinities)
{
    tg_safetensors *s = tg_st_new(), *back = NULL;
    tg_tensor *x = of_dtype(TG_F32, (double[]){INFINITY, -INFINITY}, 2);
    cr_assert_eq(tg_st_add(s, "x", x), 0, "%s", tg_error());
    const tg_dtype dts[] = {TG_F16, TG_BF16};
    const uint16_t want[2][2] = {{0x7c00, 0xfc00}, {0x7f80, 0xff80}};
    for (int k = 0; k < 2; k++) {
        uint8_t *buf = NULL;
        size_t len = 0;
        cr_assert_eq(tg_st_to_bytes(s, dts[k], &buf, &len), 0, "%s", tg_error());
        cr_assert_eq(tg_st_parse_verify(buf, len, NULL, TG_ST_VERIFY_REQUIRED | TG_ST_KEEP_DTYPE, &back), 0, "%s",
                     tg_error());
        const uint16_t *h = tg_data(get(back, "x"), dts[k]);
        cr_assert(h, "%s", tg_error());
        cr_assert(h[0] == want[k][0] && h[1] == want[k][1], "%s: %#x %#x", tg_st_dtype_name(dts[k]), h[0], h[1]);
        tg_free(buf);
        tg_st_free(back);
    }
    tg_tensor_free(x);
    tg_st_free(s);
}
