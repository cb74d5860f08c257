/* tapegrad: the safetensors dtypes tapegrad reads, and their conversion to
 * tg_real and int64 (see core/io/dtype.h). Bytes are little-endian whatever
 * the host. */
#include "dtype.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {[TG_F32] = {"F32", 4}, [TG_F64] = {"F64", 8}, [TG_F16] = {"F16", 2},
              [TG_BF16] = {"BF16", 2}, [TG_I32] = {"I32", 4}, [TG_I64] = {"I64", 8},
              [TG_U8] = {"U8", 1}, [TG_BOOL] = {"BOOL", 1}};
enum { N_DTYPES = sizeof dtypes / sizeof *dtypes };

const char *tg_dtype_name(tg_dtype dt)
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

/* IEEE binary16: sign, 5 exponent bits (bias 15), 10 mantissa bits */
static float half_to_float(uint16_t h)
{
    int exp = h >> 10 & 0x1f, man = h & 0x3ff;
    float f = exp == 0    ? ldexpf((float)man, -24)  /* zero, subnormal: man * 2^-24 */
              : exp == 31 ? (man ? NAN : INFINITY)
                          : ldexpf((float)(man | 0x400), exp - 25);  /* 1.man * 2^(exp-15) */
    return h & 0x8000 ? -f : f;
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
        } else if (dt == TG_F16) {
            dst[i] = (tg_real)half_to_float((uint16_t)u);
        } else if (dt == TG_BF16) {  /* the top half of a float32 */
            dst[i] = (tg_real)bits_to_float((uint32_t)u << 16);
        } else {
            dst[i] = (tg_real)to_int(u, dt);
        }
    }
}

void tg_st_decode_int(int64_t *dst, const uint8_t *src, size_t n, tg_dtype dt)
{
    size_t es = tg_st_dtype_size(dt);
    for (size_t i = 0; i < n; i++) dst[i] = to_int(le(src + i * es, es), dt);
}

/* v rounded to nearest-even in a binary float of man mantissa bits and exp
 * exponent bits (F16: 10, 5; BF16: 7, 8), from the double directly (no
 * double rounding through float). */
static uint16_t small_float(double v, int man, int exp)
{
    uint16_t sign = signbit(v) ? (uint16_t)(1u << (man + exp)) : 0, inf = (uint16_t)(((1u << exp) - 1) << man);
    int bias = (1 << (exp - 1)) - 1, emin = 1 - bias, e;
    double a = fabs(v);
    if (isnan(v)) return sign | inf | (uint16_t)(1u << (man - 1));
    if (a < ldexp(1, emin)) return sign | (uint16_t)nearbyint(ldexp(a, man - emin)); /* zero, subnormal */
    frexp(a, &e);  /* a in [2^(e-1), 2^e) */
    int E = e - 1;
    if (E > bias) return sign | inf;
    /* q in [2^man, 2^(man+1)]: q = 2^(man+1) (rounded up to the next power of
     * two) carries into the exponent field, up to infinity, by the addition */
    double q = nearbyint(ldexp(a, man - E));
    return sign | (uint16_t)(((unsigned)(E + bias) << man) + (unsigned)(q - ldexp(1, man)));
}

void tg_st_encode_real(uint8_t *dst, tg_real v, tg_dtype dt)
{
    uint64_t u = 0;
    if (dt == TG_F64) {
        double d = (double)v;
        memcpy(&u, &d, 8);
    } else if (dt == TG_F32) {
        float f = (float)v;
        uint32_t w;
        memcpy(&w, &f, 4);
        u = w;
    } else {
        u = dt == TG_F16 ? small_float((double)v, 10, 5) : small_float((double)v, 7, 8);
    }
    for (size_t i = 0; i < tg_st_dtype_size(dt); i++) dst[i] = (uint8_t)(u >> (8 * i));
}
