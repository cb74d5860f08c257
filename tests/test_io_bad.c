/* Safetensors I/O with malformed files: a table of crafted bad files (each
 * rejected with a message naming the file and the problem), valid edge
 * cases, deep nesting, truncation at every length and flipped header bits,
 * and the fuzz corpora (tests/fuzz/corpus/). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_util.h"

TestSuite(io, .init = make_tmpdir, .fini = remove_tmpdir);

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
    {"empty file", "", 0, -8, 0, "not a safetensors file: too small for a safetensors header (0 bytes"},
    {"7 bytes", "", 0, -1, 0, "not a safetensors file: too small"},
    {"huge header length", VALID, 24, 0, UINT64_MAX, "exceeds the limit of 100000000 bytes"},
    {"header length just over 100 MB", VALID, 24, 0, 100000001, "header length of 100000001, which exceeds"},
    {"header length past the end", "{}", 0, 0, 1000, "header length of 1000, which runs past the end of the file"},
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
    {"unsupported dtype", "{" E("a", "I16", "[2]", "0", "4") "}", 4, 0, 0, "dtype I16 is not supported"},
    {"F16 offsets of F32 size", "{" E("a", "F16", "[3]", "0", "12") "}", 12, 0, 0,
     "data_offsets [0, 12] do not match dtype F16 and shape [3] (6 bytes)"},
    {"BOOL offsets of F32 size", "{" E("a", "BOOL", "[2]", "0", "8") "}", 8, 0, 0,
     "do not match dtype BOOL and shape [2] (2 bytes)"},
    {"missing shape", "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, 0, 0, "missing 'shape'"},
    {"shape not an array", "{\"a\":{\"dtype\":\"F32\",\"shape\":3,\"data_offsets\":[0,12]}}", 12, 0, 0,
     "'shape' is a number"},
    {"nine dims", "{" E("a", "F32", "[1,1,1,1,1,1,1,1,1]", "0", "4") "}", 4, 0, 0, "shape has 9 dims"},
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
        int rc = tg_st_parse(b, len, "model.safetensors", &s);
        cr_assert_eq(rc, -1, "%s: accepted", c->what);
        cr_assert_null(s, "%s: *out not NULL", c->what);
        cr_assert(strncmp(tg_error(), "model.safetensors: ", 19) == 0, "%s: message does not name the file: %s",
                  c->what, tg_error());
        cr_assert(strstr(tg_error(), c->expect), "%s: message '%s' lacks '%s'", c->what, tg_error(), c->expect);
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
    cr_assert_eq(tg_st_load(p, &s), -1);
    cr_assert(strncmp(tg_error(), p, strlen(p)) == 0 && strstr(tg_error(), "do not match dtype F32"), "%s", tg_error());
    cr_assert_eq(tg_st_load(tmp_path("absent.safetensors"), &s), -1);
    cr_assert(strstr(tg_error(), "absent.safetensors: cannot open: No such file"), "%s", tg_error());
    cr_assert_eq(tg_st_load(tmpdir, &s), -1);
    cr_assert(strstr(tg_error(), "not a regular file"), "%s", tg_error());
}

/* Files of another kind say so first, then why (the 8-byte header length
 * their first bytes give). */
Test(io, other_kinds_of_files_are_not_safetensors)
{
    static const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
    const struct {
        const char *name;
        const void *bytes;
        size_t len;
        const char *why;
    } files[] = {
        {"empty.safetensors", "", 0, "too small for a safetensors header (0 bytes"},
        {"short.txt", "hello\n", 6, "too small for a safetensors header (6 bytes"},
        {"notes.txt", "step,loss\n1,2.5\n", 16, "exceeds the limit of 100000000 bytes"},
        {"image.png", png, sizeof png, "header length of 727905341920923785, which exceeds the limit"},
        {"tiny.bin", "\x40\0\0\0\0\0\0\0{}", 10, "header length of 64, which runs past the end of "
                                                   "the file (10 bytes)"},
    };
    char want[600];
    tg_safetensors *s;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const char *p = tmp_path(files[i].name);
        FILE *f = fopen(p, "wb");
        cr_assert(f && fwrite(files[i].bytes, 1, files[i].len, f) == files[i].len);
        fclose(f);
        cr_assert_eq(tg_st_load(p, &s), -1, "%s: accepted", files[i].name);
        snprintf(want, sizeof want, "%s: not a safetensors file: ", p);
        cr_expect(strncmp(tg_error(), want, strlen(want)) == 0, "%s: '%s' does not start with '%s'", files[i].name,
                  tg_error(), want);
        cr_expect(strstr(tg_error(), files[i].why), "%s: '%s' lacks '%s'", files[i].name, tg_error(), files[i].why);
    }
    if (access("/etc/passwd", R_OK) == 0) {
        cr_assert_eq(tg_st_load("/etc/passwd", &s), -1);
        const char *start = "/etc/passwd: not a safetensors file: its first 8 bytes give a header length of ";
        cr_expect(strncmp(tg_error(), start, strlen(start)) == 0, "%s", tg_error());
    }
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
        cr_assert_eq(tg_st_parse(b, len, "good", &s), 0, "case %zu: %s", i, tg_error());
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
    cr_assert_eq(tg_st_parse(b, len, "deep", &s), -1);
    cr_assert(strstr(tg_error(), "not valid JSON"), "%s", tg_error());
    free(b);
    free(json);
}

/* A valid file cut at every length, and with every header byte flipped. */
Test(io, truncated_or_corrupted_files_never_crash)
{
    tg_safetensors *s = sample_set(), *back;
    uint8_t *buf;
    size_t len;
    cr_assert_eq(tg_st_to_bytes(s, TG_F32, &buf, &len), 0);
    for (size_t cut = 0; cut < len; cut++) {
        tg_error_clear();
        cr_assert_eq(tg_st_parse(buf, cut, "cut", &back), -1, "accepted at %zu bytes", cut);
        cr_assert(strncmp(tg_error(), "cut: ", 5) == 0, "%s", tg_error());
    }
    uint64_t n = 0;
    for (int b = 7; b >= 0; b--) n = n << 8 | buf[b];
    uint8_t *copy = malloc(len);
    for (size_t i = 0; i < 8 + n; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(copy, buf, len);
            copy[i] ^= (uint8_t)(1u << bit);
            if (tg_st_parse(copy, len, "flip", &back) == 0) tg_st_free(back);
        }
    }
    free(copy);
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
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        size_t len = 0;
        uint8_t *b = slurp(p, &len);
        cr_assert(b, "%s", p);
        tg_safetensors *s;
        int rc = tg_st_parse(b, len, p, &s);
        if (seeds && strncmp(e->d_name, "ok_", 3) == 0) cr_expect_eq(rc, 0, "%s", tg_error());
        if (seeds && strncmp(e->d_name, "bad_", 4) == 0) cr_expect_eq(rc, -1, "%s: accepted", p);
        if (rc == 0) tg_st_free(s);
        /* keeping the file's dtypes accepts and refuses the same files */
        cr_expect_eq(tg_st_parse_verify(b, len, p, TG_ST_VERIFY_AUTO | TG_ST_KEEP_DTYPE, &s), rc, "%s kept", p);
        if (rc == 0 && s) tg_st_free(s);
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

Test(io, safetensors_null_arguments)
{
    tg_safetensors *s = tg_st_new();
    tg_params *p = tg_params_new();
    const tg_real v[2] = {1, 2};
    cr_assert_eq(tg_st_add_data(NULL, "x", v, 1, (int[]){2}), -1);
    cr_assert_str_eq(tg_error(), "tg_st_add: set is NULL");
    cr_assert_eq(tg_st_add_data(s, NULL, v, 1, (int[]){2}), -1);
    cr_assert_str_eq(tg_error(), "tg_st_add: name is NULL");
    cr_assert_eq(tg_st_set_meta(s, "k", NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_st_set_meta: NULL argument");
    tg_safetensors *out;
    cr_assert_eq(tg_st_parse((const uint8_t *)"x", 1, "mem", NULL), -1);
    cr_assert_str_eq(tg_error(), "mem: tg_st_parse: out is NULL");
    cr_assert_eq(tg_st_parse(NULL, 8, "mem", &out), -1);
    cr_assert_str_eq(tg_error(), "mem: tg_st_parse: buffer is NULL");
    cr_assert_null(out);
    cr_assert_eq(tg_st_load(NULL, &out), -1);
    cr_assert_str_eq(tg_error(), "tg_st_load: NULL argument");
    cr_assert_eq(tg_st_save(NULL, "x.safetensors", TG_F32), -1);
    cr_assert_str_eq(tg_error(), "tg_st_save: the set is NULL");
    cr_assert_eq(tg_st_save(s, "x.safetensors", (tg_dtype)99), -1);
    cr_assert_str_eq(tg_error(), "tg_st_save: float tensors cannot be written as dtype ? (F32, F64, F16, BF16, "
                     "or TG_ST_OWN_DTYPE for each tensor's own)");
    cr_assert_eq(tg_st_save(s, "x.safetensors", TG_U8), -1);
    cr_assert_str_eq(tg_error(), "tg_st_save: float tensors cannot be written as dtype U8 (F32, F64, F16, BF16, "
                     "or TG_ST_OWN_DTYPE for each tensor's own)");
    uint8_t *buf;
    size_t len;
    cr_assert_eq(tg_st_to_bytes(s, TG_F32, NULL, &len), -1);
    cr_assert_str_eq(tg_error(), "tg_st_to_bytes: the destination is NULL");
    cr_assert_eq(tg_st_to_bytes(s, TG_F32, &buf, NULL), -1);
    cr_assert_eq(tg_st_add_params(NULL, p), -1);
    cr_assert_str_eq(tg_error(), "tg_st_add_params: NULL argument");
    cr_assert_eq(tg_st_load_params(p, NULL, true, NULL), -1);
    cr_assert_str_eq(tg_error(), "tg_st_load_params: NULL argument");
    cr_assert_eq(access("x.safetensors", F_OK), -1);
    tg_params_free(p);
    tg_st_free(s);
}

/* A file whose size changes under the reader (procfs reports 0 bytes and
 * then delivers more) is refused, naming the file. */
Test(io, safetensors_file_changed_while_reading)
{
    tg_safetensors *out;
    cr_assert_eq(tg_st_load("/proc/self/status", &out), -1);
    cr_assert_str_eq(tg_error(), "/proc/self/status: read error or the file changed while reading: unexpected length");
    cr_assert_null(out);
}
