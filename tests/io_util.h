/* Helpers shared by the safetensors suites (test_io.c, test_io_bad.c): a
 * per-test temporary directory, reading a whole file, hand-crafted files, a
 * sample set of tensors and an exact comparison of two sets. */
#ifndef TAPEGRAD_TESTS_IO_UTIL_H
#define TAPEGRAD_TESTS_IO_UTIL_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tapegrad/core/io/io.h>
#include <tapegrad/tapegrad.h>
#include "test_util.h"

/* The suite's temporary directory: made by .init, emptied and removed by .fini. */
static char tmpdir[256];

static inline void make_tmpdir(void) { tu_tmpdir(tmpdir, sizeof tmpdir, "tg_test_io"); }
static inline void remove_tmpdir(void) { tu_tmpdir_remove(tmpdir); }

static inline const char *tmp_path(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    return p;
}

/* The whole file (malloc'ed) and its length; NULL when it cannot be read. */
static inline uint8_t *slurp(const char *path, size_t *len)
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
static inline uint8_t *craft(const char *json, size_t data_len, size_t *len)
{
    size_t n = strlen(json);
    uint8_t *b = calloc(1, 8 + n + data_len + 1);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(b + 8, json, n);
    *len = 8 + n + data_len;
    return b;
}

/* Tensors of every rank, an empty one and metadata. */
static inline tg_safetensors *sample_set(void)
{
    tg_safetensors *s = tg_st_new();
    static const int shapes[][4] = {{0}, {5}, {2, 3}, {2, 1, 3}, {2, 2, 1, 3}, {2, 0, 3}};
    static const int ndims[] = {0, 1, 2, 3, 4, 3};
    for (int k = 0; k < 6; k++) {
        char name[32];
        snprintf(name, sizeof name, "t%d.weight", k);
        tg_tensor *x = tg_st_add_zeros(s, name, ndims[k], shapes[k]);
        cr_assert(x, "%s", tg_error());
        for (size_t i = 0; i < x->size; i++) x->data[i] = (tg_real)(0.1 * (double)(i + 1) * (k + 1) - 1.3);
    }
    cr_assert_eq(tg_st_set_meta(s, "format", "pt"), 0);
    cr_assert_eq(tg_st_set_meta(s, "note", "h\xc3\xa9llo, \"w\"\n"), 0);
    return s;
}

/* b equals a exactly after a round trip through dtype. */
static inline void assert_same(const tg_safetensors *a, const tg_safetensors *b, tg_dtype dtype)
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

#endif
