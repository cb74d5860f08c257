/* Safetensors I/O with valid files: round trips, the exact byte layout,
 * conversion between F32 and F64, the committed fixtures, the set's own
 * checks, loading into a parameter store, atomic writes and allocation
 * failures. Malformed files and the fuzz corpora: test_io_bad.c. */
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

#include "io_util.h"

TestSuite(io, .init = make_tmpdir, .fini = remove_tmpdir);

/* ---- round trips ---------------------------------------------------------- */

Test(io, round_trip_files_f32_and_f64)
{
    tg_safetensors *s = sample_set(), *back;
    for (int d = 0; d < 2; d++) {
        tg_dtype dt = d ? TG_F64 : TG_F32;
        const char *p = tmp_path(d ? "f64.safetensors" : "f32.safetensors");
        cr_assert_eq(tg_st_save(s, p, dt), 0, "%s", tg_error());
        cr_assert_eq(tg_st_load(p, &back), 0, "%s", tg_error());
        assert_same(s, back, dt);
        cr_assert_eq(tg_st_at(back, 0)->ndim, 0);
        cr_assert_eq(tg_st_at(back, 5)->size, 0);
        tg_st_free(back);
    }
    cr_assert_eq(tu_dir_entries(tmpdir), 2, "a temporary file was left behind");
    tg_st_free(s);
}

Test(io, written_bytes_parse_back)
{
    tg_safetensors *s = sample_set(), *back;
    uint8_t *buf;
    size_t len;
    for (int d = 0; d < 2; d++) {
        cr_assert_eq(tg_st_to_bytes(s, d ? TG_F64 : TG_F32, &buf, &len), 0, "%s", tg_error());
        cr_assert_eq(tg_st_parse(buf, len, "bytes", &back), 0, "%s", tg_error());
        assert_same(s, back, d ? TG_F64 : TG_F32);
        tg_st_free(back);
        tg_free(buf);
    }
    tg_st_free(s);
}

Test(io, header_padding_for_every_name_length)
{
    char name[40];
    for (int n = 1; n < 20; n++) {
        tg_safetensors *s = tg_st_new(), *back;
        memset(name, 'a', (size_t)n);
        name[n] = '\0';
        int shape[1] = {3};
        cr_assert(tg_st_add_zeros(s, name, 1, shape));
        uint8_t *buf;
        size_t len;
        cr_assert_eq(tg_st_to_bytes(s, TG_F32, &buf, &len), 0);
        uint64_t hl = 0;
        for (int b = 7; b >= 0; b--) hl = hl << 8 | buf[b];
        cr_assert_eq(hl % 8, 0, "header length %llu", (unsigned long long)hl);
        cr_assert_eq(len, 8 + hl + 12);
        cr_assert_eq(tg_st_parse(buf, len, "pad", &back), 0, "%s", tg_error());
        tg_st_free(back);
        tg_free(buf);
        tg_st_free(s);
    }
}

/* The exact layout: length, compact JSON (metadata first, the checksums
 * last in it), space padding, little-endian data in insertion order. */
Test(io, exact_byte_layout)
{
    tg_safetensors *s = tg_st_new();
    int shape[1] = {2};
    const tg_real w[2] = {1, -2}, sc = 0.5;
    cr_assert_eq(tg_st_add_data(s, "w", w, 1, shape), 0);
    cr_assert_eq(tg_st_add_data(s, "s", &sc, 0, NULL), 0);
    cr_assert_eq(tg_st_set_meta(s, "format", "pt"), 0);
    /* the checksums: zlib.crc32 of "format\0pt\0s\0F32\0\0w\0F32\0" "2\0" and of each tensor's bytes */
    static const char json[] = "{\"__metadata__\":{\"format\":\"pt\",\"tapegrad.crc32\":\"{\\\"__metadata__\\\":"
                               "\\\"7d6f819e\\\",\\\"w\\\":\\\"c3872656\\\",\\\"s\\\":\\\"9722f221\\\"}\"},"
                               "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                               "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[8,12]}}";
    static const uint8_t data[12] = {0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0, 0, 0, 0x3f};
    const size_t jl = sizeof json - 1, hl = (jl + 7) / 8 * 8;
    cr_assert_eq(tg_st_save(s, tmp_path("layout.safetensors"), TG_F32), 0, "%s", tg_error());
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
    cr_assert_eq(tg_st_to_bytes(s, TG_F64, &m, &len), 0);
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
    size_t len;
    uint8_t *b = craft("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, &len);
    for (int i = 0; i < 4; i++) b[len - 4 + i] = (uint8_t)(uf >> (8 * i));
    tg_safetensors *s;
    cr_assert_eq(tg_st_parse(b, len, "f32", &s), 0, "%s", tg_error());
    cr_assert(tg_st_get(s, "x")->data[0] == (tg_real)f);
    tg_st_free(s);
    free(b);
    b = craft("{\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, &len);
    for (int i = 0; i < 8; i++) b[len - 8 + i] = (uint8_t)(ud >> (8 * i));
    cr_assert_eq(tg_st_parse(b, len, "f64", &s), 0, "%s", tg_error());
    cr_assert(tg_st_get(s, "x")->data[0] == (tg_real)d);
    tg_st_free(s);
    free(b);
}

Test(io, fixture_script_file_loads)
{
    tg_safetensors *s;
    cr_assert_eq(tg_st_load(TG_SOURCE_DIR "/tests/fixtures/matmul.safetensors", &s), 0, "%s",
                 tg_error());
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
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        tg_safetensors *s;
        cr_expect_eq(tg_st_load(p, &s), 0, "%s", tg_error());
        tg_st_free(s);
        n++;
    }
    closedir(d);
    cr_assert_geq(n, 9);
}

/* ---- the set's own checks ----------------------------------------------------- */

Test(io, add_and_metadata_errors)
{
    tg_safetensors *s = tg_st_new();
    int shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    cr_assert(tg_st_add_zeros(s, "a", 1, shape));
    cr_assert_null(tg_st_add_zeros(s, "a", 1, shape));
    cr_assert(strstr(tg_error(), "'a' is already taken"), "%s", tg_error());
    cr_assert_null(tg_st_add_zeros(s, "__metadata__", 1, shape));
    cr_assert(strstr(tg_error(), "reserved"), "%s", tg_error());
    cr_assert_null(tg_st_add_zeros(s, "b\xff", 1, shape));
    cr_assert(strstr(tg_error(), "not valid UTF-8"), "%s", tg_error());
    cr_assert_null(tg_st_add_zeros(s, "c", 9, shape));
    cr_assert(strstr(tg_error(), "invalid shape"), "%s", tg_error());
    cr_assert_eq(tg_st_add(s, "d", NULL), -1);
    cr_assert_eq(tg_st_count(s), 1);
    cr_assert_eq(tg_st_set_meta(s, "k", "v1"), 0);
    cr_assert_eq(tg_st_set_meta(s, "k", "v2"), 0);
    cr_assert_eq(tg_st_meta_count(s), 1);
    cr_assert_str_eq(tg_st_meta(s, "k"), "v2");
    cr_assert_null(tg_st_meta(s, "absent"));
    cr_assert_eq(tg_st_set_meta(s, "k", "\xc3"), -1);
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
    for (int i = 0; i < n; i++) {
        tg_tensor *x = tg_st_add_zeros(s, names[i], ndims[i], shapes[i]);
        cr_assert(x, "%s", tg_error());
        tg_tensor_fill(x, -1);
    }
    return s;
}

Test(io, load_params_checks_names_and_shapes)
{
    fixture_params f;
    params_setup(&f);
    static const int ab[][2] = {{2, 3}, {4}}, bad_b[][2] = {{2, 3}, {5}}, extra[][2] = {{2, 3}, {4}, {1}};
    static const int nd[] = {2, 1, 1};
    static const char *const names[] = {"a", "b", "c"}, *const opt_names[] = {"a", "b", "optim.m.a"};

    tg_safetensors *s = set_of(1, names, nd, ab); /* b missing */
    cr_assert_eq(tg_st_load_params(f.p, s, true, NULL), -1);
    cr_assert(strstr(tg_error(), "missing tensor 'b' (the model expects shape [4])"), "%s", tg_error());
    params_unchanged(&f);
    tg_st_free(s);

    s = set_of(2, names, nd, bad_b);
    cr_assert_eq(tg_st_load_params(f.p, s, false, NULL), -1);
    cr_assert(strstr(tg_error(), "tensor 'b' has shape [5], the model expects [4]"), "%s", tg_error());
    params_unchanged(&f);
    tg_st_free(s);

    s = set_of(3, names, nd, extra);
    cr_assert_eq(tg_st_load_params(f.p, s, true, "optim."), -1);
    cr_assert(strstr(tg_error(), "unexpected tensor 'c'"), "%s", tg_error());
    params_unchanged(&f);
    cr_assert_eq(tg_st_load_params(f.p, s, false, NULL), 0, "%s", tg_error()); /* not strict */
    for (int i = 0; i < 10; i++) cr_assert_eq(tg_params_data(f.p)[i], -1);
    tg_st_free(s);

    s = set_of(3, opt_names, nd, extra);
    cr_assert_eq(tg_st_load_params(f.p, s, true, NULL), -1);
    cr_assert(strstr(tg_error(), "unexpected tensor 'optim.m.a'"), "%s", tg_error());
    cr_assert_eq(tg_st_load_params(f.p, s, true, "optim."), 0, "%s", tg_error());
    tg_st_free(s);
    tg_params_free(f.p);
}

Test(io, params_round_trip_through_a_file)
{
    fixture_params f;
    params_setup(&f);
    tg_safetensors *s = tg_st_new(), *back;
    cr_assert_eq(tg_st_add_params(s, f.p), 0, "%s", tg_error());
    cr_assert_eq(tg_st_save(s, tmp_path("p.safetensors"), TG_F64), 0, "%s", tg_error());
    tg_params_zero_grad(f.p);
    memset(tg_params_data(f.p), 0, 10 * sizeof(tg_real));
    cr_assert_eq(tg_st_load(tmp_path("p.safetensors"), &back), 0, "%s", tg_error());
    cr_assert_eq(tg_st_load_params(f.p, back, true, NULL), 0, "%s", tg_error());
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
    cr_assert_eq(tg_st_save(s, path, TG_F32), 0, "%s", tg_error());
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
    int shape[1] = {100000};
    cr_assert(tg_st_add_zeros(s, "big", 1, shape));
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
    int rc = tg_st_save(s, p, TG_F32);
    setrlimit(RLIMIT_FSIZE, &saved);
    cr_assert_eq(rc, -1, "the save succeeded despite the size limit");
    cr_assert(strncmp(tg_error(), p, strlen(p)) == 0 && strstr(tg_error(), strerror(EFBIG)), "%s", tg_error());
    assert_file_is(p, old, len);
    cr_assert_eq(tu_dir_entries(tmpdir), 1, "the temporary file was left behind");
    free(old);
    tg_st_free(s);
}

/* An unwritable directory (meaningless for root, who may write anyway). */
Test(io, unwritable_directory_leaves_the_old_file_untouched)
{
    if (geteuid() == 0) {
        remove_tmpdir(); /* a skipped test's .fini does not run */
        cr_skip_test("root ignores directory permissions");
    }
    const char *p = tmp_path("ckpt.safetensors");
    size_t len;
    uint8_t *old = write_old(p, &len);
    tg_safetensors *s = big_set();
    cr_assert_eq(chmod(tmpdir, 0555), 0);
    int rc = tg_st_save(s, p, TG_F32);
    chmod(tmpdir, 0755);
    cr_assert_eq(rc, -1);
    cr_assert(strstr(tg_error(), p) && strstr(tg_error(), strerror(EACCES)), "%s", tg_error());
    assert_file_is(p, old, len);
    free(old);
    tg_st_free(s);
}

Test(io, save_into_a_missing_directory_names_it)
{
    tg_safetensors *s = sample_set();
    char p[600];
    snprintf(p, sizeof p, "%s/no_such_dir/model.safetensors", tmpdir);
    cr_assert_eq(tg_st_save(s, p, TG_F32), -1);
    cr_assert(strncmp(tg_error(), p, strlen(p)) == 0 && strstr(tg_error(), "No such file or directory"), "%s", tg_error());
    cr_assert_eq(tg_st_save(s, tmpdir, TG_F32), -1); /* a directory: rename fails */
    cr_assert(strstr(tg_error(), strerror(EISDIR)), "%s", tg_error());
    cr_assert_eq(tu_dir_entries(tmpdir), 0, "a temporary file was left behind");
    tg_st_free(s);
}

Test(io, file_modes)
{
    tg_safetensors *s = sample_set();
    const char *p = tmp_path("m.safetensors");
    mode_t old = umask(022);
    cr_assert_eq(tg_st_save(s, p, TG_F32), 0, "%s", tg_error());
    umask(old);
    struct stat st;
    cr_assert_eq(stat(p, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0644, "new file mode %o", (unsigned)(st.st_mode & 0777));
    chmod(p, 0600);
    cr_assert_eq(tg_st_save(s, p, TG_F64), 0, "%s", tg_error());
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
    int k = 1, rc = -1;
    for (; k < 200 && rc; k++) {
        tg_alloc_fail_at((uint64_t)k);
        rc = tg_st_save(s, p, TG_F64);
        tg_alloc_fail_at(0);
        if (rc) {
            cr_assert(strncmp(tg_error(), p, strlen(p)) == 0, "allocation %d: %s", k, tg_error());
            assert_file_is(p, old, len);
        }
    }
    cr_assert_eq(rc, 0, "still failing after %d allocations", k);
    cr_assert_eq(tu_dir_entries(tmpdir), 1);
    free(old);
    tg_st_free(s);
}

Test(io, allocation_failures_while_parsing)
{
    tg_safetensors *s = sample_set(), *back = NULL;
    uint8_t *buf;
    size_t len;
    cr_assert_eq(tg_st_to_bytes(s, TG_F32, &buf, &len), 0);
    int k = 1, rc = -1;
    for (; k < 500 && rc; k++) {
        tg_alloc_fail_at((uint64_t)k);
        rc = tg_st_parse(buf, len, "oom", &back);
        tg_alloc_fail_at(0);
        if (rc) {
            cr_assert_null(back);
            cr_assert(strncmp(tg_error(), "oom: ", 5) == 0, "allocation %d: %s", k, tg_error());
        }
    }
    cr_assert_eq(rc, 0, "still failing after %d allocations", k);
    assert_same(s, back, TG_F32);
    for (k = 1; k < 100; k++) { /* tg_st_to_bytes too */
        uint8_t *b2;
        size_t l2;
        tg_alloc_fail_at((uint64_t)k);
        rc = tg_st_to_bytes(s, TG_F32, &b2, &l2);
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
