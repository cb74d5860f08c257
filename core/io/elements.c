/* tapegrad: the safetensors dtypes tapegrad reads, and their conversion to
 * tg_real and int64 (see core/io/elements.h). Bytes are little-endian whatever
 * the host. */
#include "elements.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {[TG_F32] = {"F32", 4}, [TG_F64] = {"F64", 8}, [TG_F16] = {"F16", 2},
              [TG_BF16] = {"BF16", 2}, [TG_I32] = {"I32", 4}, [TG_I64] = {"I64", 8},
              [TG_U8] = {"U8", 1}, [TG_BOOL] = {"BOOL", 1}};
enum { N_DTYPES = sizeof dtypes / sizeof *dtypes };

const char *tg_st_dtype_name(tg_dtype dt)
{
    return (unsigned)dt < N_DTYPES ? dtypes[dt].name : "?";
}

bool tg_st_dtype_parse(const char *name, tg_dtype *out)
{
    for (int i = 0; i < N_DTYPES; i++)
        if (strcmp(name, dtypes[i].name) == 0) return *out = (tg_dtype)i, true;
    return false;
}

size_t tg_st_dtype_size(tg_dtype dt) { return (unsigned)dt < N_DTYPES ? dtypes[dt].size : 0; }

bool tg_st_dtype_is_int(tg_dtype dt) { return dt == TG_I32 || dt == TG_I64 || dt == TG_U8 || dt == TG_BOOL; }

static uint64_t le(const uint8_t *p, size_t size)
{
    uint64_t u = 0;
    for (size_t b = size; b-- > 0;) u = u << 8 | p[b];
    return u;
}

static float bits_to_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int64_t to_int(uint64_t u, tg_dtype dt)
{
    switch (dt) {
    case TG_I32: return (int32_t)(uint32_t)u;
    case TG_I64: return (int64_t)u;
    case TG_BOOL: return u != 0;
    default: return (int64_t)u;  /* U8 */
    }
}

void tg_st_decode_real(tg_real *dst, const uint8_t *src, size_t n, tg_dtype dt)
{
    size_t es = tg_st_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        uint64_t u = le(src + i * es, es);
        if (dt == TG_F64) {
            double d;
            memcpy(&d, &u, 8);
            dst[i] = (tg_real)d;
        } else if (dt == TG_F32) {
            dst[i] = (tg_real)bits_to_float((uint32_t)u);
        } else if (dt == TG_F16 || dt == TG_BF16) {
            dst[i] = (tg_real)tg_half_to_double((uint16_t)u, dt);
        } else {
            dst[i] = (tg_real)to_int(u, dt);
        }
    }
}

void tg_st_decode_bits(void *dst, const uint8_t *src, size_t n, tg_dtype dt)
{
    size_t es = tg_st_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        uint64_t u = le(src + i * es, es);
        switch (es) {
        case 1: ((uint8_t *)dst)[i] = (uint8_t)u; break;
        case 2: ((uint16_t *)dst)[i] = (uint16_t)u; break;
        case 4: ((uint32_t *)dst)[i] = (uint32_t)u; break;
        default: ((uint64_t *)dst)[i] = u; break;
        }
    }
}

void tg_st_decode_int(int64_t *dst, const uint8_t *src, size_t n, tg_dtype dt)
{
    size_t es = tg_st_dtype_size(dt);
    for (size_t i = 0; i < n; i++) dst[i] = to_int(le(src + i * es, es), dt);
}

void tg_st_encode_real(uint8_t *dst, double v, tg_dtype dt)
{
    uint64_t u = 0;
    if (dt == TG_F64) {
        memcpy(&u, &v, 8);
    } else if (dt == TG_F32) {
        float f = (float)v;
        uint32_t w;
        memcpy(&w, &f, 4);
        u = w;
    } else {
        u = tg_half_from_double(v, dt);
    }
    for (size_t i = 0; i < tg_st_dtype_size(dt); i++) dst[i] = (uint8_t)(u >> (8 * i));
}
