/* tapegrad: PCG32 (XSH RR 64/32), the same stream on every machine. */
#include "rng.h"

#include <math.h>

#include "error.h"

void tg_rng_seed(tg_rng *r, uint64_t seed)
{
    TG_REFUSE_NULL(r, "the rng", );
    r->state = 0;
    r->inc = (seed << 1u) | 1u;
    tg_rng_u32(r);
    r->state += 0x853c49e6748fea9bULL ^ seed;
    tg_rng_u32(r);
}

uint32_t tg_rng_u32(tg_rng *r)
{
    TG_REFUSE_NULL(r, "the rng", 0);
    uint64_t old = r->state;
    r->state = old * 6364136223846793005ULL + r->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
}

uint32_t tg_rng_below(tg_rng *r, uint32_t n)
{
    TG_REFUSE_NULL(r, "the rng", 0);
    if (n == 0) {
        tg_error_set("tg_rng_below: n is 0");
        return 0;
    }
    /* Lemire's rejection keeps the result unbiased. */
    uint32_t threshold = (uint32_t)(-n) % n;
    for (;;) {
        uint32_t x = tg_rng_u32(r);
        if (x >= threshold) return x % n;
    }
}

/* NULL rng: NaN, which no caller can take for a draw */
double tg_rng_uniform(tg_rng *r)
{
    TG_REFUSE_NULL(r, "the rng", NAN);
    uint64_t hi = tg_rng_u32(r) >> 5, lo = tg_rng_u32(r) >> 6;  /* 27 + 26 bits */
    return (double)(hi * 67108864.0 + lo) / 9007199254740992.0;
}

double tg_rng_normal(tg_rng *r)
{
    TG_REFUSE_NULL(r, "the rng", NAN);
    double u1 = 1.0 - tg_rng_uniform(r);  /* (0, 1]: log stays finite */
    double u2 = tg_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
