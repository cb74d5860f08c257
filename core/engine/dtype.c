/* tapegrad: element types (dtype.h). */
#include "dtype.h"

#include "error.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} traits[TG_DTYPE_COUNT] = {[TG_F32] = {"float32", 4}, [TG_F64] = {"float64", 8}, [TG_F16] = {"float16", 2},
                            [TG_BF16] = {"bfloat16", 2}, [TG_I32] = {"int32", 4}, [TG_I64] = {"int64", 8},
                            [TG_U8] = {"uint8", 1}, [TG_BOOL] = {"bool", 1}};

const char *tg_dtype_name(tg_dtype dt) { return (unsigned)dt < TG_DTYPE_COUNT ? traits[dt].name : "?"; }
size_t tg_dtype_size(tg_dtype dt) { return (unsigned)dt < TG_DTYPE_COUNT ? traits[dt].size : 0; }
bool tg_dtype_is_float(tg_dtype dt) { return dt == TG_F32 || dt == TG_F64 || tg_dtype_is_half(dt); }
bool tg_dtype_is_half(tg_dtype dt) { return dt == TG_F16 || dt == TG_BF16; }

/* IEEE binary16 (F16: sign, 5 exponent bits, 10 mantissa bits) and bfloat16
 * (the top half of a float32) as a double. */
double tg_half_to_double(uint16_t h, tg_dtype dt)
{
    if (dt == TG_BF16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    int exp = h >> 10 & 0x1f, man = h & 0x3ff;
    double f = exp == 0    ? ldexp(man, -24)  /* zero, subnormal: man * 2^-24 */
               : exp == 31 ? (man ? NAN : INFINITY)
                           : ldexp(man | 0x400, exp - 25);  /* 1.man * 2^(exp-15) */
    return h & 0x8000 ? -f : f;
}

/* v rounded to nearest-even in a binary float of man mantissa bits and exp
 * exponent bits (F16: 10, 5; BF16: 7, 8), from the double directly (no
 * double rounding through float). */
uint16_t tg_half_from_double(double v, tg_dtype dt)
{
    int man = dt == TG_BF16 ? 7 : 10, exp = dt == TG_BF16 ? 8 : 5;
    uint16_t sign = signbit(v) ? (uint16_t)(1u << (man + exp)) : 0, inf = (uint16_t)(((1u << exp) - 1) << man);
    int bias = (1 << (exp - 1)) - 1, emin = 1 - bias, e;
    double a = fabs(v);
    if (isnan(v)) return sign | inf | (uint16_t)(1u << (man - 1));
    if (isinf(v)) return sign | inf; /* frexp leaves e unspecified */
    if (a < ldexp(1, emin)) return sign | (uint16_t)nearbyint(ldexp(a, man - emin)); /* zero, subnormal */
    frexp(a, &e);  /* a in [2^(e-1), 2^e) */
    int E = e - 1;
    if (E > bias) return sign | inf;
    /* q in [2^man, 2^(man+1)]: q = 2^(man+1) (rounded up to the next power of
     * two) carries into the exponent field, up to infinity, by the addition */
    double q = nearbyint(ldexp(a, man - E));
    return sign | (uint16_t)(((unsigned)(E + bias) << man) + (unsigned)(q - ldexp(1, man)));
}

double tg_dtype_load(tg_dtype dt, const void *p, size_t i)
{
    TG_REFUSE_NULL(p, "the data", NAN);
    switch (dt) {
    case TG_F32: return ((const float *)p)[i];
    case TG_F64: return ((const double *)p)[i];
    case TG_F16:
    case TG_BF16: return tg_half_to_double(((const uint16_t *)p)[i], dt);
    case TG_I32: return ((const int32_t *)p)[i];
    case TG_I64: return (double)((const int64_t *)p)[i];
    case TG_U8: return ((const uint8_t *)p)[i];
    case TG_BOOL: return ((const bool *)p)[i];
    default: return NAN;
    }
}

/* v truncated toward zero into [lo, hi] (NaN: 0), as C's cast would be
 * without its undefined behaviour out of range. */
static double to_int(double v, double lo, double hi)
{
    if (isnan(v)) return 0;
    v = trunc(v);
    return v < lo ? lo : v > hi ? hi : v;
}

void tg_dtype_store(tg_dtype dt, void *p, size_t i, double v)
{
    TG_REFUSE_NULL(p, "the data", );
    switch (dt) {
    case TG_F32: ((float *)p)[i] = (float)v; break;
    case TG_F64: ((double *)p)[i] = v; break;
    case TG_F16:
    case TG_BF16: ((uint16_t *)p)[i] = tg_half_from_double(v, dt); break;
    case TG_I32: ((int32_t *)p)[i] = (int32_t)to_int(v, INT32_MIN, INT32_MAX); break;
    case TG_I64: ((int64_t *)p)[i] = v >= 0x1p63 ? INT64_MAX : (int64_t)to_int(v, -0x1p63, 0x1p63); break;
    case TG_U8: ((uint8_t *)p)[i] = (uint8_t)to_int(v, 0, 255); break;
    case TG_BOOL: ((bool *)p)[i] = v != 0; break;
    default: break;
    }
}
