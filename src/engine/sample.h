/*
 * sample.h - internals of the sampler (include/dsv4.h has the API): the
 * per-request PRNG, exposed so that tests and tools can reproduce a draw.
 */
#ifndef DSV4_ENGINE_SAMPLE_H
#define DSV4_ENGINE_SAMPLE_H

#include <stdint.h>

#include "dsv4.h"

/* xoshiro256** (Blackman & Vigna), seeded through splitmix64 so that any
 * 64-bit seed, 0 included, gives a well-mixed state. */
typedef struct {
    uint64_t s[4];
} dsv4_rng;

void dsv4_rng_seed(dsv4_rng *r, uint64_t seed);
uint64_t dsv4_rng_next(dsv4_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double dsv4_rng_uniform(dsv4_rng *r);

#endif
