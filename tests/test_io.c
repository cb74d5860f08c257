/* Safetensors I/O: round trips, the exact byte layout, conversion between
 * F32 and F64, a table of crafted bad files (each rejected with a message
 * naming the file and the problem), truncation at every length, loading into
 * a parameter store, atomic writes, allocation failures, and the fuzz
 * corpora (tests/fuzz/corpus/). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/io.h"
#include "tapegrad.h"

/* ---- helpers ------------------------------------------------------------ */

static char tmpdir[256];

static void make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/tg_test_io.XXXXXX", base && *base ? base : "/tmp");
    cr_assert(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    if (!d) return;
    char p[600];
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
        remove(p);
    }
    closedir(d);
    rmdir(tmpdir);
}

static const char *tmp_path(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    return p;
}

static int count_dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

/* The whole file (malloc'ed) and its length; NULL when it cannot be read. */
static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

/* 8-byte little-endian length, the header text, then data_len zero bytes. */
static uint8_t *craft(const char *json, size_t data_len, size_t *len)
{
    size_t n = strlen(json);
    uint8_t *b = calloc(1, 8 + n + data_len + 1);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(b + 8, json, n);
    *len = 8 + n + data_len;
    return b;
}

/* Tensors of every rank, an empty one and metadata. */
static tg_safetensors *sample_set(void)
{
    tg_safetensors *s = tg_st_new();
    char err[256];
    static const int shapes[][4] = {{0}, {5}, {2, 3}, {2, 1, 3}, {2, 2, 1, 3}, {2, 0, 3}};
    static const int ndims[] = {0, 1, 2, 3, 4, 3};
    for (int k = 0; k < 6; k++) {
        char name[32];
        snprintf(name, sizeof name, "t%d.weight", k);
        tg_tensor *x = tg_st_add_zeros(s, name, ndims[k], shapes[k], err, sizeof err);
        cr_assert(x, "%s", err);
        for (size_t i = 0; i < x->size; i++) x->data[i] = (tg_real)(0.1 * (double)(i + 1) * (k + 1) - 1.3);
    }
    cr_assert_eq(tg_st_set_meta(s, "format", "pt", err, sizeof err), 0);
    cr_assert_eq(tg_st_set_meta(s, "note", "h\xc3\xa9llo, \"w\"\n", err, sizeof err), 0);
    return s;
}

/* b equals a exactly after a round trip through dtype. */
static void assert_same(const tg_safetensors *a, const tg_safetensors *b, tg_dtype dtype)
{
    cr_assert_eq(tg_st_count(a), tg_st_count(b));
    for (int i = 0; i < tg_st_count(a); i++) {
        const tg_tensor *x = tg_st_at(a, i), *y = tg_st_at(b, i);
        cr_assert_str_eq(x->name, y->name);
        cr_assert(tg_shape_equal(x, y), "%s: shape differs", x->name);
        cr_assert_eq(x->size, y->size);
        for (size_t j = 0; j < x->size; j++) {
            tg_real want = dtype == TG_F32 ? (tg_real)(float)x->data[j] : x->data[j];
            cr_assert(y->data[j] == want, "%s[%zu] = %.17g, want %.17g", x->name, j, (double)y->data[j],
                      (double)want);
        }
    }
    cr_assert_eq(tg_st_meta_count(a), tg_st_meta_count(b));
    for (int i = 0; i < tg_st_meta_count(a); i++) {
        const char *k = tg_st_meta_key(a, i);
        cr_assert_str_eq(tg_st_meta_key(b, i), k);
        cr_assert_str_eq(tg_st_meta(b, k), tg_st_meta(a, k));
    }
}

TestSuite(io, .init = make_tmpdir, .fini = remove_tmpdir);

/* ---- round trips ---------------------------------------------------------- */

Test(io, round_trip_files_f32_and_f64)
{
    tg_safetensors *s = sample_set(), *back;
    char err[512];
    for (int d = 0; d < 2; d++) {
        tg_dtype dt = d ? TG_F64 : TG_F32;
        const char *p = tmp_path(d ? "f64.safetensors" : "f32.safetensors");
        cr_assert_eq(tg_st_save(s, p, dt, err, sizeof err), 0, "%s", err);
        cr_assert_eq(tg_st_load(p, &back, err, sizeof err), 0, "%s", err);
        assert_same(s, back, dt);
        cr_assert_eq(tg_st_at(back, 0)->ndim, 0);
        cr_assert_eq(tg_st_at(back, 5)->size, 0);
        tg_st_free(back);
    }
    cr_assert_eq(count_dir_entries(tmpdir), 2, "a temporary file was left behind");
    tg_st_free(s);
}

Test(io, written_bytes_parse_back)
{
    tg_safetensors *s = sample_set(), *back;
    char err[512];
    uint8_t *buf;
    size_t len;
    for (int d = 0; d < 2; d++) {
        cr_assert_eq(tg_st_to_bytes(s, d ? TG_F64 : TG_F32, &buf, &len, err, sizeof err), 0, "%s", err);
        cr_assert_eq(tg_st_parse(buf, len, "bytes", &back, err, sizeof err), 0, "%s", err);
        assert_same(s, back, d ? TG_F64 : TG_F32);
        tg_st_free(back);
        tg_free(buf);
    }
    tg_st_free(s);
}

Test(io, header_padding_for_every_name_length)
{
    char err[256], name[40];
    for (int n = 1; n < 20; n++) {
        tg_safetensors *s = tg_st_new(), *back;
        memset(name, 'a', (size_t)n);
        name[n] = '\0';
        int shape[1] = {3};
        cr_assert(tg_st_add_zeros(s, name, 1, shape, err, sizeof err));
        uint8_t *buf;
        size_t len;
        cr_assert_eq(tg_st_to_bytes(s, TG_F32, &buf, &len, err, sizeof err), 0);
        uint64_t hl = 0;
        for (int b = 7; b >= 0; b--) hl = hl << 8 | buf[b];
        cr_assert_eq(hl % 8, 0, "header length %llu", (unsigned long long)hl);
        cr_assert_eq(len, 8 + hl + 12);
        cr_assert_eq(tg_st_parse(buf, len, "pad", &back, err, sizeof err), 0, "%s", err);
        tg_st_free(back);
        tg_free(buf);
        tg_st_free(s);
    }
}

/* The exact layout: length, compact JSON (metadata first), space padding,
 * little-endian data in insertion order. */
Test(io, exact_byte_layout)
{
    tg_safetensors *s = tg_st_new();
    char err[256];
    int shape[1] = {2};
    const tg_real w[2] = {1, -2}, sc = 0.5;
    cr_assert_eq(tg_st_add_data(s, "w", w, 1, shape, err, sizeof err), 0);
    cr_assert_eq(tg_st_add_data(s, "s", &sc, 0, NULL, err, sizeof err), 0);
    cr_assert_eq(tg_st_set_meta(s, "format", "pt", err, sizeof err), 0);
    static const char json[] = "{\"__metadata__\":{\"format\":\"pt\"},"
                               "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                               "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[8,12]}}";
    static const uint8_t data[12] = {0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0, 0, 0, 0x3f};
    const size_t jl = sizeof json - 1, hl = (jl + 7) / 8 * 8;
    cr_assert_eq(tg_st_save(s, tmp_path("layout.safetensors"), TG_F32, err, sizeof err), 0, "%s", err);
    size_t len;
    uint8_t *b = slurp(tmp_path("layout.safetensors"), &len);
    cr_assert(b);
    cr_assert_eq(len, 8 + hl + 12);
    for (int i = 0; i < 8; i++) cr_assert_eq(b[i], (uint8_t)(hl >> (8 * i)), "length byte %d", i);
    cr_assert(memcmp(b + 8, json, jl) == 0, "header: %.*s", (int)jl, (const char *)b + 8);
    for (size_t i = 8 + jl; i < 8 + hl; i++) cr_assert_eq(b[i], ' ', "padding byte %zu", i);
    for (int i = 0; i < 12; i++) cr_assert_eq(b[8 + hl + i], data[i], "data byte %d", i);
    free(b);
    /* F64: 1.0 = 0x3ff0000000000000, -2.0 = 0xc000000000000000 */
    uint8_t *m;
    cr_assert_eq(tg_st_to_bytes(s, TG_F64, &m, &len, err, sizeof err), 0);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | m[i];
    cr_assert_eq(len, 8 + n + 24);
    cr_assert(m[8 + n + 6] == 0xf0 && m[8 + n + 7] == 0x3f && m[8 + n + 15] == 0xc0 && m[8 + n + 23] == 0x3f);
    tg_free(m);
    tg_st_free(s);
}

/* Hand-made F32 and F64 files load in either build (F32 -> double exact,
 * F64 -> float rounded to nearest). */
Test(io, dtype_conversion_on_load)
{
    const float f = 0.1f;
    const double d = 0.1;
    uint32_t uf;
    uint64_t ud;
    memcpy(&uf, &f, 4);
    memcpy(&ud, &d, 8);
    char err[256];
    size_t len;
    uint8_t *b = craft("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, &len);
    for (int i = 0; i < 4; i++) b[len - 4 + i] = (uint8_t)(uf >> (8 * i));
    tg_safetensors *s;
    cr_assert_eq(tg_st_parse(b, len, "f32", &s, err, sizeof err), 0, "%s", err);
    cr_assert(tg_st_get(s, "x")->data[0] == (tg_real)f);
    tg_st_free(s);
    free(b);
    b = craft("{\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, &len);
    for (int i = 0; i < 8; i++) b[len - 8 + i] = (uint8_t)(ud >> (8 * i));
    cr_assert_eq(tg_st_parse(b, len, "f64", &s, err, sizeof err), 0, "%s", err);
    cr_assert(tg_st_get(s, "x")->data[0] == (tg_real)d);
    tg_st_free(s);
    free(b);
}

Test(io, fixture_script_file_loads)
{
    tg_safetensors *s;
    char err[512];
    cr_assert_eq(tg_st_load(TG_SOURCE_DIR "/tests/fixtures/matmul.safetensors", &s, err, sizeof err), 0, "%s",
                 err);
    cr_assert_str_eq(tg_st_meta(s, "generator"), "bench/torch/make_fixtures.py");
    tg_tensor *a = tg_st_get(s, "nn.a");
    cr_assert(a && a->ndim == 2 && a->shape[0] == 3 && a->shape[1] == 4);
    tg_st_free(s);
}

/* Every committed fixture (whoever wrote it) passes the validator. */
Test(io, every_fixture_file_is_valid)
{
    const char *dir = TG_SOURCE_DIR "/tests/fixtures";
    DIR *d = opendir(dir);
    cr_assert(d, "%s: %s", dir, strerror(errno));
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const char *dot = strrchr(e->d_name, '.');
        if (!dot || strcmp(dot, ".safetensors") != 0) continue;
        char p[600], err[512];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        tg_safetensors *s;
        cr_expect_eq(tg_st_load(p, &s, err, sizeof err), 0, "%s", err);
        tg_st_free(s);
        n++;
    }
    closedir(d);
    cr_assert_geq(n, 9);
}

/* ---- crafted bad files ------------------------------------------------------ */

/* One tensor entry of a header. */
#define E(name, dt, shape, b, e)                                                                             \
    "\"" name "\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" b "," e "]}"
#define VALID "{" E("a", "F32", "[2,3]", "0", "24") "}"

typedef struct bad_case {
    const char *what, *json;
    size_t data;        /* zero bytes of data after the header */
    long cut;           /* > 0: keep that many bytes; < 0: drop that many from the end */
    uint64_t n;         /* non-zero: the header length field instead of strlen(json) */
    const char *expect; /* a substring of the message */
} bad_case;

static const bad_case bad_cases[] = {
    {"empty file", "", 0, -8, 0, "file too small for a safetensors header (0 bytes"},
    {"7 bytes", "", 0, -1, 0, "file too small"},
    {"huge header length", VALID, 24, 0, UINT64_MAX, "exceeds the limit of 100000000 bytes"},
    {"header length just over 100 MB", VALID, 24, 0, 100000001, "header length 100000001 exceeds"},
    {"header length past the end", "{}", 0, 0, 1000, "header length 1000 runs past the end of the file"},
    {"truncated in the header", VALID, 24, 20, 0, "runs past the end of the file (20 bytes)"},
    {"truncated in the data", VALID, 24, -4, 0,
     "data_offsets [0, 24] run past the end of the data (20 bytes"},
    {"truncated after the header", VALID, 24, -24, 0, "run past the end of the data (0 bytes"},
    {"not JSON", "hello", 0, 0, 0, "header is not valid JSON"},
    {"empty header", "", 0, 0, 0, "header is not valid JSON"},
    {"garbage after the object", "{} x", 0, 0, 0, "header is not valid JSON"},
    {"two objects", "{}{}", 0, 0, 0, "header is not valid JSON"},
    {"plus sign", "{" E("a", "F32", "[+1]", "0", "4") "}", 4, 0, 0, "header is not valid JSON"},
    {"lone surrogate escape", "{\"\\ud800\":{}}", 0, 0, 0, "header is not valid JSON"},
    {"header is an array", "[1,2]", 0, 0, 0, "header is an array, not a JSON object"},
    {"header is a string", "\"x\"", 0, 0, 0, "not a JSON object"},
    {"non-UTF-8 byte", "{\"a\xff\":{}}", 0, 0, 0, "header is not valid UTF-8 (byte 3 of the header)"},
    {"overlong UTF-8", "{\"\xc0\xaf\":{}}", 0, 0, 0, "not valid UTF-8"},
    {"UTF-8 surrogate", "{\"\xed\xa0\x80\":{}}", 0, 0, 0, "not valid UTF-8"},
    {"raw control character", "{\"a\x01\":{}}", 0, 0, 0, "raw control character 0x01 in a string"},
    {"\\u0000 in a name", "{\"a\\u0000b\":{}}", 0, 0, 0, "\\u0000 escape"},
    {"leading zero", "{" E("a", "F32", "[02]", "0", "8") "}", 8, 0, 0, "malformed number"},
    {"entry not an object", "{\"a\":5}", 0, 0, 0, "tensor 'a': entry is a number, not an object"},
    {"missing dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, 0, 0,
     "tensor 'a': missing 'dtype'"},
    {"dtype not a string", "{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, 0, 0,
     "'dtype' is a number"},
    {"unknown dtype", "{" E("a", "Q7", "[1]", "0", "4") "}", 4, 0, 0, "tensor 'a': unknown dtype 'Q7'"},
    {"unsupported dtype", "{" E("a", "BF16", "[2]", "0", "4") "}", 4, 0, 0, "dtype BF16 is not supported"},
    {"missing shape", "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, 0, 0, "missing 'shape'"},
    {"shape not an array", "{\"a\":{\"dtype\":\"F32\",\"shape\":3,\"data_offsets\":[0,12]}}", 12, 0, 0,
     "'shape' is a number"},
    {"five dims", "{" E("a", "F32", "[1,1,1,1,1]", "0", "4") "}", 4, 0, 0, "shape has 5 dims"},
    {"negative dim", "{" E("a", "F32", "[-1,2]", "0", "4") "}", 4, 0, 0,
     "shape dim 0 is -1, dims must be integers in [0, 2147483647]"},
    {"fractional dim", "{" E("a", "F32", "[2,1.5]", "0", "12") "}", 12, 0, 0, "shape dim 1 is 1.5"},
    {"overflowing shape", "{" E("a", "F64", "[2147483647,2147483647,2147483647,2147483647]", "0", "8") "}", 8,
     0, 0, "shape [2147483647,2147483647,2147483647,2147483647] overflows"},
    {"offsets do not match the shape", "{" E("head.weight", "F32", "[3,4]", "0", "40") "}", 40, 0, 0,
     "model.safetensors: tensor 'head.weight': data_offsets [0, 40] do not match dtype F32 and shape [3,4] "
     "(48 bytes)"},
    {"missing data_offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, 0, 0, "missing 'data_offsets'"},
    {"three offsets", "{" E("a", "F32", "[1]", "0", "4,8") "}", 8, 0, 0, "two non-negative integers"},
    {"negative offset", "{" E("a", "F32", "[1]", "-4", "0") "}", 0, 0, 0, "two non-negative integers"},
    {"offsets beyond 2^53", "{" E("a", "F32", "[1]", "9007199254740996", "9007199254741000") "}", 0, 0, 0,
     "two non-negative integers"},
    {"offsets reversed", "{" E("a", "F32", "[0]", "8", "4") "}", 8, 0, 0, "[8, 4] end before they begin"},
    {"overlap", "{" E("a", "F32", "[2]", "0", "8") "," E("b", "F32", "[2]", "4", "12") "}", 12, 0, 0,
     "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]"},
    {"empty tensor inside another", "{" E("a", "F32", "[2]", "0", "8") "," E("b", "F32", "[0]", "4", "4") "}",
     8, 0, 0, "overlap"},
    {"gap", "{" E("a", "F32", "[2]", "0", "8") "," E("b", "F32", "[2]", "12", "20") "}", 20, 0, 0,
     "gap in the data: bytes [8, 12) before tensor 'b'"},
    {"not starting at 0", "{" E("a", "F32", "[2]", "4", "12") "}", 12, 0, 0, "gap in the data: bytes [0, 4)"},
    {"trailing bytes", VALID, 28, 0, 0, "the tensors cover 24 bytes of data but the data section has 28"},
    {"data but no tensors", "{}", 8, 0, 0, "cover 0 bytes of data but the data section has 8"},
    {"name twice", "{" E("a", "F32", "[1]", "0", "4") "," E("a", "F32", "[1]", "4", "8") "}", 8, 0, 0,
     "tensor name 'a' appears twice"},
    {"field twice", "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     0, 0, "field 'dtype' appears twice"},
    {"metadata not an object", "{\"__metadata__\":\"x\"}", 0, 0, 0, "'__metadata__' is a string"},
    {"metadata value not a string", "{\"__metadata__\":{\"k\":1}}", 0, 0, 0,
     "must map strings to strings, but 'k' is a number"},
    {"metadata twice", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, 0, 0, "'__metadata__' appears twice"},
    {"metadata key twice", "{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, 0, 0,
     "'__metadata__' key 'k' appears twice"},
};

static const bad_case *find_case(const char *what)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++)
        if (strcmp(bad_cases[i].what, what) == 0) return &bad_cases[i];
    cr_assert_fail("no bad case '%s'", what);
    return NULL;
}

static uint8_t *make_case(const bad_case *c, size_t *len)
{
    uint8_t *b = craft(c->json, c->data, len);
    for (int i = 0; c->n && i < 8; i++) b[i] = (uint8_t)(c->n >> (8 * i));
    if (c->cut > 0) *len = (size_t)c->cut;
    if (c->cut < 0) *len -= (size_t)-c->cut;
    return b;
}

Test(io, bad_files_are_rejected_with_a_message)
{
    cr_assert_geq(sizeof bad_cases / sizeof *bad_cases, 20);
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        const bad_case *c = &bad_cases[i];
        size_t len;
        uint8_t *b = make_case(c, &len);
        tg_safetensors *s = (tg_safetensors *)b; /* must be reset to NULL */
        char err[512] = "";
        int rc = tg_st_parse(b, len, "model.safetensors", &s, err, sizeof err);
        cr_assert_eq(rc, -1, "%s: accepted", c->what);
        cr_assert_null(s, "%s: *out not NULL", c->what);
        cr_assert(strncmp(err, "model.safetensors: ", 19) == 0, "%s: message does not name the file: %s",
                  c->what, err);
        cr_assert(strstr(err, c->expect), "%s: message '%s' lacks '%s'", c->what, err, c->expect);
        free(b);
    }
}

/* Also written to disk and read with tg_st_load, naming the path. */
Test(io, bad_file_on_disk_names_the_path)
{
    size_t len;
    uint8_t *b = make_case(find_case("offsets do not match the shape"), &len);
    const char *p = tmp_path("bad.safetensors");
    FILE *f = fopen(p, "wb");
    cr_assert(f && fwrite(b, 1, len, f) == len);
    fclose(f);
    free(b);
    tg_safetensors *s;
    char err[512];
    cr_assert_eq(tg_st_load(p, &s, err, sizeof err), -1);
    cr_assert(strncmp(err, p, strlen(p)) == 0 && strstr(err, "do not match dtype F32"), "%s", err);
    cr_assert_eq(tg_st_load(tmp_path("absent.safetensors"), &s, err, sizeof err), -1);
    cr_assert(strstr(err, "absent.safetensors: cannot open: No such file"), "%s", err);
    cr_assert_eq(tg_st_load(tmpdir, &s, err, sizeof err), -1);
    cr_assert(strstr(err, "not a regular file"), "%s", err);
}

static const char *const good_headers[] = {
    "{}",
    "{\"__metadata__\":null}",
    "{\"__metadata__\":{}," E("s", "F32", "[]", "0", "4") "}",
    "{" E("a", "F32", "[0]", "0", "0") "," E("b", "F64", "[2,0,3]", "0", "0") "," E("c", "F32", "[1]", "0",
                                                                                    "4") "}",
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":[1,{\"x\":null}]}}",
    " \n{ \"a\" : { \"dtype\" : \"F32\" , \"shape\" : [ 1 ] , \"data_offsets\" : [ 0 , 4 ] } }\t\r\n  ",
    "{\"a\\\"b\\u00e9\\n\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
    "{" E("a", "F32", "[1]", "8", "12") "," E("b", "F64", "[1]", "0", "8") "}",
};

Test(io, valid_edge_cases_load)
{
    static const size_t data[] = {0, 0, 4, 4, 4, 4, 4, 12};
    for (size_t i = 0; i < sizeof good_headers / sizeof *good_headers; i++) {
        size_t len;
        uint8_t *b = craft(good_headers[i], data[i], &len);
        tg_safetensors *s;
        char err[512];
        cr_assert_eq(tg_st_parse(b, len, "good", &s, err, sizeof err), 0, "case %zu: %s", i, err);
        if (i == 6) cr_assert(tg_st_get(s, "a\"b\xc3\xa9\n"), "escaped name");
        if (i == 7) cr_assert_str_eq(tg_st_at(s, 0)->name, "b", "loaded in file-offset order");
        tg_st_free(s);
        free(b);
    }
}

Test(io, deep_nesting_is_rejected_without_crashing)
{
    size_t depth = 5000, len;
    char *json = malloc(2 * depth + 16);
    size_t k = (size_t)sprintf(json, "{\"a\":");
    for (size_t i = 0; i < depth; i++) json[k++] = '[';
    for (size_t i = 0; i < depth; i++) json[k++] = ']';
    strcpy(json + k, "}");
    uint8_t *b = craft(json, 0, &len);
    tg_safetensors *s;
    char err[256];
    cr_assert_eq(tg_st_parse(b, len, "deep", &s, err, sizeof err), -1);
    cr_assert(strstr(err, "not valid JSON"), "%s", err);
    free(b);
    free(json);
}

/* A valid file cut at every length, and with every header byte flipped. */
Test(io, truncated_or_corrupted_files_never_crash)
{
    tg_safetensors *s = sample_set(), *back;
    uint8_t *buf;
    size_t len;
    char err[512];
    cr_assert_eq(tg_st_to_bytes(s, TG_F32, &buf, &len, err, sizeof err), 0);
    for (size_t cut = 0; cut < len; cut++) {
        err[0] = '\0';
        cr_assert_eq(tg_st_parse(buf, cut, "cut", &back, err, sizeof err), -1, "accepted at %zu bytes", cut);
        cr_assert(strncmp(err, "cut: ", 5) == 0, "%s", err);
    }
    uint64_t n = 0;
    for (int b = 7; b >= 0; b--) n = n << 8 | buf[b];
    uint8_t *copy = malloc(len);
    for (size_t i = 0; i < 8 + n; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(copy, buf, len);
            copy[i] ^= (uint8_t)(1u << bit);
            if (tg_st_parse(copy, len, "flip", &back, err, sizeof err) == 0) tg_st_free(back);
        }
    }
    free(copy);
    tg_free(buf);
    tg_st_free(s);
}

/* ---- the set's own checks ----------------------------------------------------- */

Test(io, add_and_metadata_errors)
{
    tg_safetensors *s = tg_st_new();
    char err[256];
    int shape[5] = {1, 1, 1, 1, 1};
    cr_assert(tg_st_add_zeros(s, "a", 1, shape, err, sizeof err));
    cr_assert_null(tg_st_add_zeros(s, "a", 1, shape, err, sizeof err));
    cr_assert(strstr(err, "'a' is already taken"), "%s", err);
    cr_assert_null(tg_st_add_zeros(s, "__metadata__", 1, shape, err, sizeof err));
    cr_assert(strstr(err, "reserved"), "%s", err);
    cr_assert_null(tg_st_add_zeros(s, "b\xff", 1, shape, err, sizeof err));
    cr_assert(strstr(err, "not valid UTF-8"), "%s", err);
    cr_assert_null(tg_st_add_zeros(s, "c", 5, shape, err, sizeof err));
    cr_assert(strstr(err, "invalid shape"), "%s", err);
    cr_assert_eq(tg_st_add(s, "d", NULL, err, sizeof err), -1);
    cr_assert_eq(tg_st_count(s), 1);
    cr_assert_eq(tg_st_set_meta(s, "k", "v1", err, sizeof err), 0);
    cr_assert_eq(tg_st_set_meta(s, "k", "v2", err, sizeof err), 0);
    cr_assert_eq(tg_st_meta_count(s), 1);
    cr_assert_str_eq(tg_st_meta(s, "k"), "v2");
    cr_assert_null(tg_st_meta(s, "absent"));
    cr_assert_eq(tg_st_set_meta(s, "k", "\xc3", err, sizeof err), -1);
    tg_st_free(s);
}

/* ---- loading into a parameter store ------------------------------------------------ */

typedef struct fixture_params {
    tg_params *p;
    tg_real before[10];
} fixture_params;

/* A store with a [2,3] and b [4] (values 100..109). */
static void params_setup(fixture_params *f)
{
    f->p = tg_params_new();
    int sa[2] = {2, 3}, sb[1] = {4};
    cr_assert(tg_params_add(f->p, "a", 2, sa) && tg_params_add(f->p, "b", 1, sb));
    for (int i = 0; i < 10; i++) f->before[i] = tg_params_data(f->p)[i] = (tg_real)(100 + i);
}

static void params_unchanged(const fixture_params *f)
{
    for (int i = 0; i < 10; i++)
        cr_assert_eq(tg_params_data(f->p)[i], f->before[i], "param value %d changed", i);
}

/* A set with the given tensors (name, ndim, d0), values -1 each. */
static tg_safetensors *set_of(int n, const char *const *names, const int *ndims, const int (*shapes)[2])
{
    tg_safetensors *s = tg_st_new();
    char err[256];
    for (int i = 0; i < n; i++) {
        tg_tensor *x = tg_st_add_zeros(s, names[i], ndims[i], shapes[i], err, sizeof err);
        cr_assert(x, "%s", err);
        tg_tensor_fill(x, -1);
    }
    return s;
}

Test(io, load_params_checks_names_and_shapes)
{
    fixture_params f;
    params_setup(&f);
    char err[256];
    static const int ab[][2] = {{2, 3}, {4}}, bad_b[][2] = {{2, 3}, {5}}, extra[][2] = {{2, 3}, {4}, {1}};
    static const int nd[] = {2, 1, 1};
    static const char *const names[] = {"a", "b", "c"}, *const opt_names[] = {"a", "b", "optim.m.a"};

    tg_safetensors *s = set_of(1, names, nd, ab); /* b missing */
    cr_assert_eq(tg_st_load_params(f.p, s, true, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "missing tensor 'b' (the model expects shape [4])"), "%s", err);
    params_unchanged(&f);
    tg_st_free(s);

    s = set_of(2, names, nd, bad_b);
    cr_assert_eq(tg_st_load_params(f.p, s, false, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "tensor 'b' has shape [5], the model expects [4]"), "%s", err);
    params_unchanged(&f);
    tg_st_free(s);

    s = set_of(3, names, nd, extra);
    cr_assert_eq(tg_st_load_params(f.p, s, true, "optim.", err, sizeof err), -1);
    cr_assert(strstr(err, "unexpected tensor 'c'"), "%s", err);
    params_unchanged(&f);
    cr_assert_eq(tg_st_load_params(f.p, s, false, NULL, err, sizeof err), 0, "%s", err); /* not strict */
    for (int i = 0; i < 10; i++) cr_assert_eq(tg_params_data(f.p)[i], -1);
    tg_st_free(s);

    s = set_of(3, opt_names, nd, extra);
    cr_assert_eq(tg_st_load_params(f.p, s, true, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "unexpected tensor 'optim.m.a'"), "%s", err);
    cr_assert_eq(tg_st_load_params(f.p, s, true, "optim.", err, sizeof err), 0, "%s", err);
    tg_st_free(s);
    tg_params_free(f.p);
}

Test(io, params_round_trip_through_a_file)
{
    fixture_params f;
    params_setup(&f);
    tg_safetensors *s = tg_st_new(), *back;
    char err[256];
    cr_assert_eq(tg_st_add_params(s, f.p, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tg_st_save(s, tmp_path("p.safetensors"), TG_F64, err, sizeof err), 0, "%s", err);
    tg_params_zero_grad(f.p);
    memset(tg_params_data(f.p), 0, 10 * sizeof(tg_real));
    cr_assert_eq(tg_st_load(tmp_path("p.safetensors"), &back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tg_st_load_params(f.p, back, true, NULL, err, sizeof err), 0, "%s", err);
    params_unchanged(&f);
    tg_st_free(back);
    tg_st_free(s);
    tg_params_free(f.p);
}

/* ---- atomic writes ------------------------------------------------------------------- */

/* Writes a small "old" file at path and returns its bytes. */
static uint8_t *write_old(const char *path, size_t *len)
{
    tg_safetensors *s = sample_set();
    char err[256];
    cr_assert_eq(tg_st_save(s, path, TG_F32, err, sizeof err), 0, "%s", err);
    tg_st_free(s);
    uint8_t *b = slurp(path, len);
    cr_assert(b);
    return b;
}

static void assert_file_is(const char *path, const uint8_t *want, size_t len)
{
    size_t n;
    uint8_t *b = slurp(path, &n);
    cr_assert(b, "%s is gone", path);
    cr_assert(n == len && memcmp(b, want, len) == 0, "%s was modified", path);
    free(b);
}

/* 100000 floats: 400 KB, over the file size limit set below. */
static tg_safetensors *big_set(void)
{
    tg_safetensors *s = tg_st_new();
    char err[256];
    int shape[1] = {100000};
    cr_assert(tg_st_add_zeros(s, "big", 1, shape, err, sizeof err));
    return s;
}

/* The write itself fails (EFBIG from RLIMIT_FSIZE: works for root too). */
Test(io, failed_write_leaves_the_old_file_untouched)
{
    const char *p = tmp_path("ckpt.safetensors");
    size_t len;
    uint8_t *old = write_old(p, &len);
    tg_safetensors *s = big_set();
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit saved, rl;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
    rl = saved;
    rl.rlim_cur = 65536;
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    char err[512];
    int rc = tg_st_save(s, p, TG_F32, err, sizeof err);
    setrlimit(RLIMIT_FSIZE, &saved);
    cr_assert_eq(rc, -1, "the save succeeded despite the size limit");
    cr_assert(strncmp(err, p, strlen(p)) == 0 && strstr(err, strerror(EFBIG)), "%s", err);
    assert_file_is(p, old, len);
    cr_assert_eq(count_dir_entries(tmpdir), 1, "the temporary file was left behind");
    free(old);
    tg_st_free(s);
}

/* An unwritable directory (meaningless for root, who may write anyway). */
Test(io, unwritable_directory_leaves_the_old_file_untouched)
{
    if (geteuid() == 0) cr_skip_test("root ignores directory permissions");
    const char *p = tmp_path("ckpt.safetensors");
    size_t len;
    uint8_t *old = write_old(p, &len);
    tg_safetensors *s = big_set();
    cr_assert_eq(chmod(tmpdir, 0555), 0);
    char err[512];
    int rc = tg_st_save(s, p, TG_F32, err, sizeof err);
    chmod(tmpdir, 0755);
    cr_assert_eq(rc, -1);
    cr_assert(strstr(err, p) && strstr(err, strerror(EACCES)), "%s", err);
    assert_file_is(p, old, len);
    free(old);
    tg_st_free(s);
}

Test(io, save_into_a_missing_directory_names_it)
{
    tg_safetensors *s = sample_set();
    char err[512], p[600];
    snprintf(p, sizeof p, "%s/no_such_dir/model.safetensors", tmpdir);
    cr_assert_eq(tg_st_save(s, p, TG_F32, err, sizeof err), -1);
    cr_assert(strncmp(err, p, strlen(p)) == 0 && strstr(err, "No such file or directory"), "%s", err);
    cr_assert_eq(tg_st_save(s, tmpdir, TG_F32, err, sizeof err), -1); /* a directory: rename fails */
    cr_assert(strstr(err, strerror(EISDIR)), "%s", err);
    cr_assert_eq(count_dir_entries(tmpdir), 0, "a temporary file was left behind");
    tg_st_free(s);
}

Test(io, file_modes)
{
    tg_safetensors *s = sample_set();
    char err[256];
    const char *p = tmp_path("m.safetensors");
    mode_t old = umask(022);
    cr_assert_eq(tg_st_save(s, p, TG_F32, err, sizeof err), 0, "%s", err);
    umask(old);
    struct stat st;
    cr_assert_eq(stat(p, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0644, "new file mode %o", (unsigned)(st.st_mode & 0777));
    chmod(p, 0600);
    cr_assert_eq(tg_st_save(s, p, TG_F64, err, sizeof err), 0, "%s", err);
    cr_assert_eq(stat(p, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "replaced file mode %o", (unsigned)(st.st_mode & 0777));
    tg_st_free(s);
}

/* ---- allocation failures: every one reported, nothing leaked ----------------------------- */

Test(io, allocation_failures_while_saving)
{
    const char *p = tmp_path("ckpt.safetensors");
    size_t len;
    uint8_t *old = write_old(p, &len);
    tg_safetensors *s = sample_set();
    char err[512];
    int k = 1, rc = -1;
    for (; k < 200 && rc; k++) {
        tg_alloc_fail_at((uint64_t)k);
        rc = tg_st_save(s, p, TG_F64, err, sizeof err);
        tg_alloc_fail_at(0);
        if (rc) {
            cr_assert(strncmp(err, p, strlen(p)) == 0, "allocation %d: %s", k, err);
            assert_file_is(p, old, len);
        }
    }
    cr_assert_eq(rc, 0, "still failing after %d allocations", k);
    cr_assert_eq(count_dir_entries(tmpdir), 1);
    free(old);
    tg_st_free(s);
}

Test(io, allocation_failures_while_parsing)
{
    tg_safetensors *s = sample_set(), *back = NULL;
    uint8_t *buf;
    size_t len;
    char err[512];
    cr_assert_eq(tg_st_to_bytes(s, TG_F32, &buf, &len, err, sizeof err), 0);
    int k = 1, rc = -1;
    for (; k < 500 && rc; k++) {
        tg_alloc_fail_at((uint64_t)k);
        rc = tg_st_parse(buf, len, "oom", &back, err, sizeof err);
        tg_alloc_fail_at(0);
        if (rc) {
            cr_assert_null(back);
            cr_assert(strncmp(err, "oom: ", 5) == 0, "allocation %d: %s", k, err);
        }
    }
    cr_assert_eq(rc, 0, "still failing after %d allocations", k);
    assert_same(s, back, TG_F32);
    for (k = 1; k < 100; k++) { /* tg_st_to_bytes too */
        uint8_t *b2;
        size_t l2;
        tg_alloc_fail_at((uint64_t)k);
        rc = tg_st_to_bytes(s, TG_F32, &b2, &l2, err, sizeof err);
        tg_alloc_fail_at(0);
        if (rc == 0) {
            cr_assert(l2 == len && memcmp(b2, buf, len) == 0);
            tg_free(b2);
            break;
        }
    }
    tg_st_free(back);
    tg_free(buf);
    tg_st_free(s);
}

/* ---- fuzz corpora ------------------------------------------------------------------------ */

/* Parses every file of dir; returns how many. In the seed corpus, ok_* files
 * must load and bad_* files must be rejected; in regress/ (inputs that once
 * crashed the fuzzer) either outcome is fine, only crashing is not. */
static int replay(const char *dir, bool seeds)
{
    DIR *d = opendir(dir);
    cr_assert(d, "%s: %s", dir, strerror(errno));
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README") == 0) continue;
        char p[600], err[512];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        size_t len;
        uint8_t *b = slurp(p, &len);
        cr_assert(b, "%s", p);
        tg_safetensors *s;
        int rc = tg_st_parse(b, len, p, &s, err, sizeof err);
        if (seeds && strncmp(e->d_name, "ok_", 3) == 0) cr_expect_eq(rc, 0, "%s", err);
        if (seeds && strncmp(e->d_name, "bad_", 4) == 0) cr_expect_eq(rc, -1, "%s: accepted", p);
        if (rc == 0) tg_st_free(s);
        free(b);
        n++;
    }
    closedir(d);
    return n;
}

Test(io, fuzz_corpora_replay)
{
    cr_assert_geq(replay(TG_SOURCE_DIR "/tests/fuzz/corpus/safetensors", true), 6);
    replay(TG_SOURCE_DIR "/tests/fuzz/corpus/regress", false);
}
