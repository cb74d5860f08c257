/* The checksums every safetensors file written by tapegrad carries
 * (metadata "tapegrad.crc32", core/io/json.h): a flipped data byte is
 * refused naming the tensor, an edited metadata value or shape naming the
 * metadata; a table with an entry missing or extra is refused; one flipped
 * byte anywhere in the header (the table's own key included) together with
 * a flipped data byte never loads; a file without checksums loads only when
 * nothing in it says tapegrad wrote it (PyTorch's), or when the caller asks
 * (TG_ST_VERIFY_REQUIRED refuses it, TG_ST_VERIFY_OFF loads anything).
 * The exact bytes of the table are checked against zlib in test_io.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_util.h"

TestSuite(io_checksum, .init = make_tmpdir, .fini = remove_tmpdir);

/* sample_set with an "lr" metadata entry, as bytes. */
static uint8_t *written(tg_dtype dt, size_t *len)
{
    tg_safetensors *s = sample_set();
    cr_assert_eq(tg_st_set_meta(s, "lr", "0.001"), 0);
    uint8_t *b;
    cr_assert_eq(tg_st_to_bytes(s, dt, &b, len), 0, "%s", tg_error());
    tg_st_free(s);
    return b;
}

static uint64_t header_len(const uint8_t *b)
{
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | b[i];
    return n;
}

#define expect_refused_as(b, len, verify, needle)                                                      \
    do {                                                                                               \
        tg_safetensors *s_ = NULL;                                                                     \
        cr_assert_eq(tg_st_parse_verify((b), (len), "f.safetensors", (verify), &s_), -1,                \
                     "accepted, want \"%s\"", (needle));                                               \
        cr_assert_null(s_);                                                                            \
        cr_assert(strstr(tg_error(), (needle)), "got \"%s\", want \"%s\"", tg_error(), (needle));     \
    } while (0)
#define expect_refused(b, len, needle) expect_refused_as(b, len, TG_ST_VERIFY_AUTO, needle)

Test(io_checksum, every_flipped_data_byte_is_refused_naming_its_tensor)
{
    for (int d = 0; d < 2; d++) {
        tg_dtype dt = d ? TG_F64 : TG_F32;
        size_t len;
        uint8_t *b = written(dt, &len);
        tg_safetensors *s = sample_set(), *ok;
        cr_assert_eq(tg_st_parse(b, len, NULL, &ok), 0, "%s", tg_error());
        size_t data = 8 + header_len(b), es = d ? 8 : 4;
        /* loaded sets list tensors in file-offset order */
        for (size_t i = data, t = 0, end = data; i < len; i++) {
            while (i >= end) end += tg_st_at(ok, (int)t++)->size * es;
            const char *name = tg_st_at(ok, (int)t - 1)->name;
            char want[128];
            snprintf(want, sizeof want, "f.safetensors: tensor '%s': its data does not match its checksum", name);
            b[i] ^= 0x10;
            expect_refused(b, len, want);
            b[i] ^= 0x10;
        }
        tg_st_free(ok);
        tg_st_free(s);
        free(b);
    }
}

/* Replaces the first `from` in the header with `to` (the same length). */
static void edit_header(uint8_t *b, const char *from, const char *to)
{
    size_t n = header_len(b), k = strlen(from);
    cr_assert_eq(strlen(to), k);
    for (size_t i = 8; i + k <= 8 + n; i++)
        if (memcmp(b + i, from, k) == 0) {
            memcpy(b + i, to, k);
            return;
        }
    cr_assert_fail("'%s' is not in the header", from);
}

Test(io_checksum, an_edited_header_is_refused)
{
    static const char *const edits[][2] = {
        {"\"lr\":\"0.001\"", "\"lr\":\"0.009\""},   /* a metadata value */
        {"\"lr\":", "\"LR\":"},                     /* a metadata key */
        {"\"shape\":[2,3]", "\"shape\":[3,2]"},     /* a shape, same byte size */
    };
    size_t len;
    uint8_t *b = written(TG_F32, &len);
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        uint8_t *c = malloc(len);
        memcpy(c, b, len);
        edit_header(c, edits[i][0], edits[i][1]);
        expect_refused(c, len, "f.safetensors: the metadata or the list of tensors (names, dtypes, shapes) does "
                               "not match its checksum");
        free(c);
    }
    free(b);
}

Test(io_checksum, a_broken_table_is_refused)
{
    size_t len;
    uint8_t *b = written(TG_F32, &len);
    edit_header(b, "{\\\"__metadata__\\\":", "[\\\"__metadata__\\\",");
    expect_refused(b, len, "cannot read metadata 'tapegrad.crc32'");
    free(b);
    b = written(TG_F32, &len);
    edit_header(b, "\\\"__metadata__\\\":\\\"", "\\\"__metadatA__\\\":\\\"");
    expect_refused(b, len, "metadata 'tapegrad.crc32' has no valid \"__metadata__\" checksum");
    free(b);
}

/* Hand-made headers: a table that is JSON but not an object, and one that
 * leaves out a tensor (its "__metadata__" CRC is zlib.crc32(b"a\0F32\0" b"1\0")). */
Test(io_checksum, a_table_that_is_not_an_object_or_misses_a_tensor_is_refused)
{
    size_t len;
    uint8_t *b = craft("{\"__metadata__\":{\"tapegrad.crc32\":\"[1]\"},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, &len);
    expect_refused(b, len, "f.safetensors: metadata 'tapegrad.crc32' is not a checksum table");
    free(b);
    b = craft("{\"__metadata__\":{\"tapegrad.crc32\":\"{\\\"__metadata__\\\":\\\"da9c63f3\\\"}\"},"
              "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, &len);
    expect_refused(b, len, "f.safetensors: tensor 'a' has no checksum in 'tapegrad.crc32'");
    free(b);
}

Test(io_checksum, the_table_is_not_part_of_the_loaded_metadata_and_a_resave_is_identical)
{
    size_t len, len2;
    uint8_t *b = written(TG_F64, &len), *b2;
    tg_safetensors *s;
    cr_assert_eq(tg_st_parse(b, len, NULL, &s), 0, "%s", tg_error());
    cr_assert_eq(tg_st_meta_count(s), 3);  /* format, note, lr */
    cr_assert_null(tg_st_meta(s, "tapegrad.crc32"));
    /* a caller's own entry of that name is replaced by the real table */
    cr_assert_eq(tg_st_set_meta(s, "tapegrad.crc32", "{}"), 0);
    cr_assert_eq(tg_st_to_bytes(s, TG_F64, &b2, &len2), 0);
    cr_assert(len == len2 && memcmp(b, b2, len) == 0);
    tg_free(b2);
    tg_st_free(s);
    free(b);
}

/* tests/fixtures are written by PyTorch (bench/torch/st_writer.py): no
 * checksums, and they load. */
Test(io_checksum, a_file_without_checksums_loads)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/init_model.safetensors", TG_SOURCE_DIR);
    size_t len;
    uint8_t *b = slurp(path, &len);
    cr_assert_not_null(b);
    for (size_t i = 8; i + 14 <= 8 + header_len(b); i++)
        cr_assert(memcmp(b + i, "tapegrad.crc32", 14) != 0, "the fixture has checksums");
    tg_safetensors *s;
    cr_assert_eq(tg_st_load(path, &s), 0, "%s", tg_error());
    cr_assert_gt(tg_st_count(s), 0);
    tg_st_free(s);
    free(b);
}

/* Where `text` first occurs in the header of b. */
static size_t find(const uint8_t *b, const char *text)
{
    size_t n = header_len(b), k = strlen(text);
    for (size_t i = 8; i + k <= 8 + n; i++)
        if (memcmp(b + i, text, k) == 0) return i;
    cr_assert_fail("'%s' is not in the header", text);
    return 0;
}

/* The bytes of b parsed as `verify` asks: the set, or NULL with the message. */
static tg_safetensors *parsed(const uint8_t *b, size_t len, tg_st_verify verify)
{
    tg_safetensors *s = NULL;
    tg_error_clear();
    int rc = tg_st_parse_verify(b, len, "f.safetensors", verify, &s);
    cr_assert(rc == 0 ? s != NULL : s == NULL);
    return s;
}

/* The table's key with a letter's case changed and a data byte flipped
 * loaded unchecked: the key now says tapegrad wrote the file, so the file
 * is refused for lacking its table, naming the key and how to load it
 * anyway; so is every other one-bit change of any byte of the key. */
Test(io_checksum, a_damaged_table_key_does_not_turn_the_check_off)
{
    size_t len;
    uint8_t *b = written(TG_F32, &len);
    size_t at = find(b, "\"tapegrad.crc32\"") + 1, data = 8 + header_len(b);
    b[data + 1] ^= 0x01;
    b[at + 9] ^= 0x20; /* tapegrad.crc32 -> tapegrad.Crc32 */
    expect_refused(b, len, "f.safetensors: metadata 'tapegrad.Crc32' says tapegrad wrote the file, but it has no "
                           "checksum table 'tapegrad.crc32': it is damaged or was edited; refused");
    cr_assert(strstr(tg_error(), "turn verification off: TG_ST_VERIFY_OFF"), "%s", tg_error());
    tg_safetensors *s = parsed(b, len, TG_ST_VERIFY_OFF);
    cr_assert_not_null(s, "%s", tg_error());
    cr_assert_not(tg_st_verified(s));
    cr_assert_not_null(tg_st_meta(s, "tapegrad.Crc32"));
    tg_st_free(s);
    b[at + 9] ^= 0x20;
    for (size_t i = 0; i < strlen("tapegrad.crc32"); i++)
        for (int bit = 0; bit < 8; bit++) {
            b[at + i] ^= (uint8_t)(1u << bit);
            s = parsed(b, len, TG_ST_VERIFY_AUTO);
            cr_assert_null(s, "byte %zu of the key with bit %d flipped: loaded", i, bit);
            b[at + i] ^= (uint8_t)(1u << bit);
        }
    free(b);
}

/* Every byte of the header (its length included), one bit at a time, with
 * a data byte flipped too: none loads, and none crashes. */
Test(io_checksum, no_flipped_header_bit_with_a_flipped_data_byte_loads)
{
    for (int d = 0; d < 2; d++) {
        size_t len;
        uint8_t *b = written(d ? TG_F64 : TG_F32, &len);
        size_t data = 8 + header_len(b);
        b[data + 2] ^= 0x40;
        for (size_t i = 0; i < data; i++)
            for (int bit = 0; bit < 8; bit++) {
                b[i] ^= (uint8_t)(1u << bit);
                tg_safetensors *s = parsed(b, len, TG_ST_VERIFY_AUTO);
                cr_assert_null(s, "header byte %zu ('%c') with bit %d flipped: loaded", i, b[i] ^ (1u << bit), bit);
                cr_assert(strncmp(tg_error(), "f.safetensors: ", 15) == 0, "%s", tg_error());
                b[i] ^= (uint8_t)(1u << bit);
            }
        free(b);
    }
}

/* The table's entry in the header of b replaced by spaces: still valid
 * JSON, the same length. */
static void blank_table(uint8_t *b)
{
    size_t at = find(b, ",\"tapegrad.crc32\":\""), end = at + strlen(",\"tapegrad.crc32\":\"");
    while (b[end] != '"') end += b[end] == '\\' ? 2 : 1;
    memset(b + at, ' ', end + 1 - at);
}

/* The table's entry removed (blanked to spaces: still valid JSON, same
 * length). Nothing else says tapegrad wrote this file (its "format" is
 * PyTorch's "pt"), so by default it loads unchecked like PyTorch's;
 * TG_ST_VERIFY_REQUIRED, for files a program wrote itself, refuses it. */
Test(io_checksum, a_file_without_its_table_loads_only_as_asked)
{
    size_t len;
    uint8_t *b = written(TG_F32, &len);
    tg_safetensors *s = parsed(b, len, TG_ST_VERIFY_REQUIRED);
    cr_assert(s && tg_st_verified(s), "%s", tg_error());
    tg_st_free(s);
    blank_table(b);
    expect_refused_as(b, len, TG_ST_VERIFY_REQUIRED,
                      "f.safetensors: the file has no checksum table 'tapegrad.crc32', which every file tapegrad "
                      "writes has; refused (to load it unchecked, turn verification off: TG_ST_VERIFY_OFF)");
    for (int v = 0; v < 2; v++) {
        s = parsed(b, len, v ? TG_ST_VERIFY_OFF : TG_ST_VERIFY_AUTO);
        cr_assert_not_null(s, "%s", tg_error());
        cr_assert_not(tg_st_verified(s));
        cr_assert_eq(tg_st_count(s), 6);
        tg_st_free(s);
    }
    free(b);
    /* a key of tapegrad's namespace left behind says who wrote it */
    tg_safetensors *t = sample_set();
    cr_assert_eq(tg_st_set_meta(t, "Tapegrad.version", "1"), 0);
    cr_assert_eq(tg_st_to_bytes(t, TG_F32, &b, &len), 0);
    tg_st_free(t);
    blank_table(b);
    expect_refused(b, len, "metadata 'Tapegrad.version' says tapegrad wrote the file");
    tg_free(b);
}

/* Hand-made: a table for tensor "a" that also lists "b", and one listing
 * "a" twice ("__metadata__" CRC zlib.crc32(b"a\0F32\0" b"1\0"), the data
 * CRC of 4 zero bytes 2144df1c); a table missing an entry is refused above. */
Test(io_checksum, a_table_with_an_extra_entry_is_refused)
{
    size_t len;
    uint8_t *b = craft("{\"__metadata__\":{\"tapegrad.crc32\":\"{\\\"__metadata__\\\":\\\"da9c63f3\\\","
                       "\\\"a\\\":\\\"2144df1c\\\",\\\"b\\\":\\\"2144df1c\\\"}\"},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, &len);
    expect_refused(b, len, "f.safetensors: 'tapegrad.crc32' lists tensor 'b', which the file does not have");
    free(b);
    b = craft("{\"__metadata__\":{\"tapegrad.crc32\":\"{\\\"__metadata__\\\":\\\"da9c63f3\\\","
              "\\\"a\\\":\\\"2144df1c\\\",\\\"a\\\":\\\"2144df1c\\\"}\"},"
              "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, &len);
    expect_refused(b, len, "f.safetensors: 'tapegrad.crc32' has 3 entries for the metadata and 1 tensors");
    free(b);
    /* the same file with its table right loads */
    b = craft("{\"__metadata__\":{\"tapegrad.crc32\":\"{\\\"__metadata__\\\":\\\"da9c63f3\\\","
              "\\\"a\\\":\\\"2144df1c\\\"}\"},"
              "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, &len);
    tg_safetensors *s = parsed(b, len, TG_ST_VERIFY_REQUIRED);
    cr_assert(s && tg_st_verified(s), "%s", tg_error());
    tg_st_free(s);
    free(b);
}

Test(io_checksum, a_bad_verify_value_is_refused)
{
    size_t len;
    uint8_t *b = written(TG_F32, &len);
    expect_refused_as(b, len, (tg_st_verify)7, "f.safetensors: tg_st_parse: verify = 7 is not a tg_st_verify");
    free(b);
}
