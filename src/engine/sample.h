/*
 * sample.h - internals of the sampler (include/dsv4.h has the API): the
 * per-request PRNG, exposed so that tests and tools can reproduce a draw.
 */
#ifndef DSV4_ENGINE_SAMPLE_H
#define DSV4_ENGINE_SAMPLE_H

#include <stdbool.h>
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

/* A sampler's pick as a device computes it: the settings of a sampler with
 * no penalties, logit bias or logprobs, and the uniform draw the host
 * sampler would make (u is used when temperature > 0 and top_k != 1). The
 * kept set is the host's (top_k, then the top_p share of the top_k mass, then
 * min_p, ties to the lower id); the draw walks the kept tokens in id order
 * with masses in 2^-40 fixed point, so a pick is deterministic given the seed
 * but may differ from the host's for the same seed. */
typedef struct {
    float temperature, top_p, min_p;
    int top_k;
    int vocab;   /* the sampler's vocabulary: ids at or above it are never picked */
    double u;
} dsv4_sample_req;

/* Whether s can be sampled on a device; if so fills req, drawing u from the
 * sampler's PRNG exactly as dsv4_sampler_sample would. */
bool dsv4_sampler_device_req(dsv4_sampler *s, dsv4_sample_req *req);

#endif
