/* libFuzzer target for the safetensors reader (see README).
 *
 * tg_st_parse on arbitrary bytes must return either an error message naming
 * the input or a set, and never crash, leak, hang or read out of bounds
 * (AddressSanitizer + UndefinedBehaviorSanitizer). An accepted input must
 * also round-trip through the writer: parse -> tg_st_to_bytes(F64) -> parse
 * gives the same names, shapes, values (F64 is exact for tg_real in both
 * builds) and metadata; anything else aborts, which libFuzzer reports. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/io/io.h>

static void check(int ok)
{
    if (!ok) abort();
}

static int same_value(tg_real a, tg_real b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static void round_trip(const tg_safetensors *s)
{
    uint8_t *buf;
    size_t len;
    tg_safetensors *back;
    check(tg_st_to_bytes(s, TG_F64, &buf, &len) == 0);
    check(tg_st_parse(buf, len, "round trip", &back) == 0);
    check(tg_st_count(back) == tg_st_count(s) && tg_st_meta_count(back) == tg_st_meta_count(s));
    for (int i = 0; i < tg_st_count(s); i++) {
        const tg_tensor *x = tg_st_at(s, i), *y = tg_st_get(back, x->name);
        check(y && tg_shape_equal(x, y) && x->size == y->size && x->dtype == y->dtype);
        if (x->dtype != TG_REAL_DTYPE) check(memcmp(x->data, y->data, x->size * tg_dtype_size(x->dtype)) == 0);
        for (size_t j = 0; x->dtype == TG_REAL_DTYPE && j < x->size; j++) check(same_value(x->data[j], y->data[j]));
    }
    for (int i = 0; i < tg_st_meta_count(s); i++) {
        const char *k = tg_st_meta_key(s, i), *v = tg_st_meta(back, k);
        check(v && strcmp(v, tg_st_meta(s, k)) == 0);
    }
    tg_st_free(back);
    tg_free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_safetensors *s = (tg_safetensors *)1;
    if (tg_st_parse(data, size, "fuzz", &s) != 0) {
        check(s == NULL && strncmp(tg_error(), "fuzz: ", 6) == 0);
        return 0;
    }
    check(s != NULL);
    round_trip(s);
    tg_st_free(s);
    return 0;
}
