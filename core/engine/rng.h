/* tapegrad: a seeded random number generator that gives the same stream on
 * every machine (PCG32, O'Neill 2014), uniforms in [0,1) and normals by
 * Box-Muller. The state is two uint64 words so a checkpoint can save it. */
#ifndef TAPEGRAD_RNG_H
#define TAPEGRAD_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_rng {
    uint64_t state;
    uint64_t inc;
} tg_rng;

void tg_rng_seed(tg_rng *r, uint64_t seed);
uint32_t tg_rng_u32(tg_rng *r);
/* Uniform integer in [0, n), unbiased. n > 0. */
uint32_t tg_rng_below(tg_rng *r, uint32_t n);
/* Uniform double in [0, 1) with 53 random bits. */
double tg_rng_uniform(tg_rng *r);
/* Standard normal (Box-Muller, one value per call). */
double tg_rng_normal(tg_rng *r);

#ifdef __cplusplus
}
#endif

#endif
