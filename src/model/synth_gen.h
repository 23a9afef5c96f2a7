/*
 * synth_gen.h - the --fill-random generator, shared by host and device code.
 *
 * A generated tensor is a sequence of 64-bit little-endian words; word w
 * depends only on (the tensor's key, w), so any thread layout on any backend
 * produces the same bytes (the CPU backend and the CUDA kernel of
 * backend/cuda/fill.cu are compared byte for byte by test_synth).
 *
 * Random numbers: SplitMix64's output function applied to key + (i+1)*gamma,
 * a counter-based generator (each index hashed on its own). Normals: the sum
 * of four 16-bit uniforms (Irwin-Hall), centred, an exact integer in
 * [-131070, 131070] with standard deviation 65536/sqrt(3); one float multiply
 * by mul = std*sqrt(3)/65536 (computed once on the host) scales it, so no
 * transcendental function, FMA contraction or rounding mode can make two
 * backends differ. Its tails stop at 3.46 std: lighter than a normal's, which
 * only helps keep activations finite through many layers.
 *
 * Conditioning (as mkmodel's generator): BF16 matrices std 1/sqrt(in), the
 * embedding std 1; FP8 codes std 16, scaled to 1/sqrt(in) by their E8M0 block
 * scales; packed E2M1 bytes uniform (rms 2.93), scaled by their scales. E4M3
 * codes saturate at 448 (0x7e) and are never 0x7f/0xff (NaN); every E2M1 code
 * is finite; scales are constants checked at attach.
 */
#ifndef DSV4_MODEL_SYNTH_GEN_H
#define DSV4_MODEL_SYNTH_GEN_H

#include <stdint.h>

#include "model/quant.h"
#include "model/weights.h"

DSV4_HD uint64_t dsv4_synth_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The i-th random 64-bit number of the stream `key`. */
DSV4_HD uint64_t dsv4_synth_hash(uint64_t key, uint64_t i)
{
    return dsv4_synth_mix(key + (i + 1) * 0x9e3779b97f4a7c15ull);
}

/* Sum of the four 16-bit parts of h, centred: an integer in [-131070, 131070]. */
DSV4_HD int32_t dsv4_synth_irwin_hall(uint64_t h)
{
    return (int32_t)(h & 0xffff) + (int32_t)((h >> 16) & 0xffff) + (int32_t)((h >> 32) & 0xffff) + (int32_t)(h >> 48) -
           131070;
}

/* The E4M3 code of x rounded to nearest even, saturating at +-448: never a NaN code. */
DSV4_HD uint8_t dsv4_synth_e4m3_code(float x)
{
    const float r = dsv4_e4m3_round(x); /* on the grid, |r| <= 448 */
    const uint8_t sign = (uint8_t)((dsv4_f32_bits(r) >> 24) & 0x80);
    const float a = fabsf(r);
    if (!(a >= 0.015625f)) return (uint8_t)(sign | (uint8_t)(a * 512.0f)); /* subnormal m * 2^-9, m <= 7 */
    const uint32_t u = dsv4_f32_bits(a);
    const int e = (int)((u >> 23) & 0xff) - 127; /* -6 .. 8 */
    return (uint8_t)(sign | (uint8_t)((e + 7) << 3) | (uint8_t)((u >> 20) & 7));
}

/* Word w (bytes 8w .. 8w+7) of a generated tensor's elements. */
DSV4_HD uint64_t dsv4_synth_word(const dsv4_synth *s, uint64_t w)
{
    uint64_t out = 0;
    switch (s->kind) {
    case DSV4_SYNTH_E2M1:
        out = dsv4_synth_hash(s->key, w);
        break;
    case DSV4_SYNTH_E4M3:
        for (int j = 0; j < 8; j++) {
            const float v = (float)dsv4_synth_irwin_hall(dsv4_synth_hash(s->key, 8 * w + j)) * s->mul;
            out |= (uint64_t)dsv4_synth_e4m3_code(v) << (8 * j);
        }
        break;
    case DSV4_SYNTH_NORMAL_BF16:
        for (int j = 0; j < 4; j++) {
            const float v = (float)dsv4_synth_irwin_hall(dsv4_synth_hash(s->key, 4 * w + j)) * s->mul;
            out |= (uint64_t)dsv4_f32_to_bf16(v) << (16 * j);
        }
        break;
    default:
        break;
    }
    return out;
}

/* Whether a generated word holds only finite values (the self-check after a fill). */
DSV4_HD bool dsv4_synth_word_ok(dsv4_synth_kind kind, uint64_t v)
{
    if (kind == DSV4_SYNTH_E4M3) {
        for (int j = 0; j < 8; j++)
            if (((v >> (8 * j)) & 0x7f) == 0x7f) return false;
    } else if (kind == DSV4_SYNTH_NORMAL_BF16) {
        for (int j = 0; j < 4; j++)
            if (((v >> (16 * j)) & 0x7f80) == 0x7f80) return false;
    }
    return true;
}

#endif
