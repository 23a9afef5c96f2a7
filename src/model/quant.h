/*
 * quant.h - number-format codecs shared by host and device code.
 *
 * BF16 and F16 conversion, FP8 E4M3 and E2M1 (FP4) encode/decode with
 * round-to-nearest-even, E8M0 power-of-two scales, and the quantisation
 * simulations the reference model applies to cached vectors (MODEL.md §3.10):
 * FP8SIM64 on KV rows and Hadamard + FP4SIM32 on indexer queries and keys.
 * Everything is static inline and free of libc calls beyond <math.h> so the
 * same code compiles for the CPU and (with DSV4_HD) for CUDA.
 */
#ifndef DSV4_MODEL_QUANT_H
#define DSV4_MODEL_QUANT_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define DSV4_HD __host__ __device__ __forceinline__
#else
#define DSV4_HD static inline
#endif

DSV4_HD uint32_t dsv4_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
DSV4_HD float dsv4_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* ---- unaligned element loads -------------------------------------------
 * safetensors does not promise that a tensor starts at a multiple of its
 * element size, so host code reads checkpoint bytes through memcpy. */
DSV4_HD uint16_t dsv4_ld_u16(const void *p, int64_t i)
{
    uint16_t v;
    memcpy(&v, (const char *)p + 2 * i, 2);
    return v;
}
DSV4_HD int32_t dsv4_ld_i32(const void *p, int64_t i)
{
    int32_t v;
    memcpy(&v, (const char *)p + 4 * i, 4);
    return v;
}
DSV4_HD int64_t dsv4_ld_i64(const void *p, int64_t i)
{
    int64_t v;
    memcpy(&v, (const char *)p + 8 * i, 8);
    return v;
}
DSV4_HD float dsv4_ld_f32(const void *p, int64_t i)
{
    float v;
    memcpy(&v, (const char *)p + 4 * i, 4);
    return v;
}

/* ---- BF16 / F16 ------------------------------------------------------- */

DSV4_HD float dsv4_bf16_to_f32(uint16_t h) { return dsv4_bits_f32((uint32_t)h << 16); }

/* Round to nearest even; NaN stays NaN. */
DSV4_HD uint16_t dsv4_f32_to_bf16(float f)
{
    uint32_t u = dsv4_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

DSV4_HD float dsv4_round_bf16(float f) { return dsv4_bf16_to_f32(dsv4_f32_to_bf16(f)); }

/* Word i of a benchmark fill (dsv4_seq_skip's rows): two BF16 values in
 * [-1, 1] from a hash of (seed, i), high half and low half, so the word reads
 * as a finite FP32 value near the first or as two BF16 values. */
DSV4_HD uint32_t dsv4_fill_word(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull; /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const float a = (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
    const float b = (float)(z & 0xffffff) * (2.0f / 16777216.0f) - 1.0f;
    return (uint32_t)dsv4_f32_to_bf16(a) << 16 | dsv4_f32_to_bf16(b);
}

/* Byte i of a benchmark fill's FP4 indexer key scales (dsv4_seq_skip on FP4 keys): an E8M0 scale
 * 2^-3 .. 2^0 from word i of the fill, so the fill's bytes, read as E2M1 codes, stay finite values. */
DSV4_HD uint8_t dsv4_fill_e8m0(uint64_t seed, uint64_t i) { return (uint8_t)(124 + (dsv4_fill_word(seed, i) & 3)); }

DSV4_HD float dsv4_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0) {
        float v = (float)man * (1.0f / 16777216.0f); /* 2^-24 */
        return sign ? -v : v;
    }
    if (exp == 31) return dsv4_bits_f32(sign | 0x7f800000u | (man << 13));
    return dsv4_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

/* ---- E8M0 scales ------------------------------------------------------ */

/* 2^(e-127); e == 0 maps to 2^-127 (as a subnormal float). */
DSV4_HD float dsv4_e8m0_to_f32(uint8_t e)
{
    if (e == 0) return dsv4_bits_f32(0x00400000u);
    return dsv4_bits_f32((uint32_t)e << 23);
}

/* Smallest power of two s with amax / s <= qmax: s = 2^ceil(log2(amax/qmax)),
 * computed exactly from the float's bits (the reference's fast_log2_ceil). */
DSV4_HD float dsv4_pow2_ceil_scale(float amax, float qmax)
{
    float r = amax / qmax;
    uint32_t u = dsv4_f32_bits(r);
    int e = (int)((u >> 23) & 0xff) - 127;
    if ((u & 0x7fffffu) != 0) e += 1;
    if (e < -126) e = -126;
    if (e > 127) e = 127;
    return dsv4_bits_f32((uint32_t)(e + 127) << 23);
}

/* 1 / s for a power of two s in [2^-126, 2^127] (dsv4_pow2_ceil_scale's range), exactly: x * dsv4_pow2_recip(s)
 * is x / s bit for bit (both are the correctly rounded x 2^-k), without a division's instruction sequence. */
DSV4_HD float dsv4_pow2_recip(float s)
{
    const int k = (int)((dsv4_f32_bits(s) >> 23) & 0xff) - 127;
    return k < 127 ? dsv4_bits_f32((uint32_t)(127 - k) << 23) : dsv4_bits_f32(0x00400000u); /* 2^-127 */
}

/* ---- FP8 E4M3 (fn) ---------------------------------------------------- */

DSV4_HD float dsv4_e4m3_to_f32(uint8_t b)
{
    uint32_t sign = b >> 7, exp = (b >> 3) & 0xf, man = b & 7;
    float v;
    if (exp == 0xf && man == 7) return NAN;
    if (exp == 0) v = (float)man * 0.001953125f; /* m * 2^-9 */
    else v = dsv4_bits_f32(((exp + 120) << 23) | (man << 20));
    return sign ? -v : v;
}

/* Round-to-nearest-even onto the E4M3 grid, saturating at 448. Returns the value. */
DSV4_HD float dsv4_e4m3_round(float x)
{
    float a = fabsf(x);
    if (!(a == a)) return x;
    if (a >= 448.0f) return x < 0 ? -448.0f : 448.0f;
    /* quantum: 2^(e-3) for normal values (e >= -6), 2^-9 below */
    int e;
    if (a < 0.015625f) e = -6;
    else e = (int)((dsv4_f32_bits(a) >> 23) & 0xff) - 127;
    float q = dsv4_bits_f32((uint32_t)(e - 3 + 127) << 23), qi = dsv4_bits_f32((uint32_t)(3 - e + 127) << 23);
    float r = rintf(a * qi) * q; /* a * qi is a / q exactly (powers of two); rintf rounds half to even */
    return x < 0 ? -r : r;
}

/* The E4M3 code of v at a power-of-two scale sc in [2^-126, 2^127] (dsv4_pow2_ceil_scale's; v / sc clamped to
 * +-448, then rounded): the step every FP8 quantisation here shares (FP8SIM, the reference's act_quant); the value
 * is the code times sc. The division as a multiplication by the exact reciprocal: the same bits (test_codecs),
 * one instruction instead of a division's sequence on the GPU's critical path (the activation packs). */
DSV4_HD float dsv4_e4m3_code(float v, float sc)
{
    return dsv4_e4m3_round(fminf(fmaxf(v * dsv4_pow2_recip(sc), -448.0f), 448.0f));
}

/* ---- FP4 E2M1 --------------------------------------------------------- */

/* Built from the code's bits (no table: on the GPU a table is a stack array):
 * e = bits 2-1, m = bit 0; e > 0: 2^(e-1) (1 + m/2), e = 0: m/2; bit 3 the sign. */
DSV4_HD float dsv4_e2m1_to_f32(uint8_t nib)
{
    const uint32_t e = (nib >> 1) & 3u, m = nib & 1u;
    const uint32_t mag = e ? (e + 126u) << 23 | m << 22 : (m ? 0x3f000000u : 0u);
    return dsv4_bits_f32(mag | (uint32_t)(nib & 8u) << 28);
}

/* Round-to-nearest onto {0,.5,1,1.5,2,3,4,6}, ties to the even code, saturating. */
DSV4_HD float dsv4_e2m1_round(float x)
{
    float a = fabsf(x), r;
    if (a >= 6.0f) r = 6.0f;
    else if (a > 5.0f) r = 6.0f;
    else if (a >= 3.5f) r = 4.0f;     /* 3.5 ties to 4 (even code 6) */
    else if (a > 2.5f) r = 3.0f;
    else if (a >= 1.75f) r = 2.0f;    /* 1.75 ties to 2 (code 4) */
    else if (a > 1.25f) r = 1.5f;
    else if (a >= 0.75f) r = 1.0f;    /* 0.75 ties to 1 (code 2) */
    else if (a > 0.25f) r = 0.5f;
    else r = 0.0f;                    /* 0.25 ties to 0 (code 0) */
    return x < 0 ? -r : r;
}

/* ---- Simulations (MODEL.md §3.10) -------------------------------------- */

/* FP8SIM over blocks of `block` elements (64 for KV rows); the last block may be short. */
DSV4_HD void dsv4_fp8sim(float *v, int n, int block)
{
    for (int b0 = 0; b0 < n; b0 += block) {
        int b1 = b0 + block < n ? b0 + block : n;
        float amax = 1e-4f;
        for (int i = b0; i < b1; i++) amax = fmaxf(amax, fabsf(v[i]));
        float s = dsv4_pow2_ceil_scale(amax, 448.0f);
        for (int i = b0; i < b1; i++) v[i] = dsv4_round_bf16(dsv4_e4m3_code(v[i], s) * s);
    }
}

/* FP4SIM over blocks of `block` elements (32 for indexer vectors). */
DSV4_HD void dsv4_fp4sim(float *v, int n, int block)
{
    const float tiny = 6.0f * 1.1754943508222875e-38f; /* 6 * 2^-126 */
    for (int b0 = 0; b0 < n; b0 += block) {
        int b1 = b0 + block < n ? b0 + block : n;
        float amax = tiny;
        for (int i = b0; i < b1; i++) amax = fmaxf(amax, fabsf(v[i]));
        float s = dsv4_pow2_ceil_scale(amax, 6.0f), si = dsv4_pow2_recip(s); /* v / s exactly */
        for (int i = b0; i < b1; i++) {
            float q = fminf(fmaxf(v[i] * si, -6.0f), 6.0f);
            v[i] = dsv4_round_bf16(dsv4_e2m1_round(q) * s);
        }
    }
}

/* ---- the compact form of FP4SIM32's output ----------------------------
 * A block of n <= 32 values that dsv4_fp4sim wrote (each e2m1 code x a power
 * of two, BF16-exact) as n E2M1 codes (two a byte, low nibble = even element)
 * and one UE8M0 scale 2^(e-127): dsv4_fp4_unpack gives back the same floats,
 * bit for bit (signed zeros and the infinities of a 2^127 scale included).
 * The scale is the smallest power of two >= max|v| / 6, which puts every value
 * of the block on the grid (FP4SIM's own scale, or half of it when the block
 * tops out at 3; smaller when its scale was clamped at 2^-126). Returns false
 * when a value is not code x scale (not FP4SIM output: nothing is written). */
DSV4_HD int dsv4_e2m1_code(float c) /* the code of a grid value, -1 when off the grid */
{
    const float a = fabsf(c);
    int k = a == 0.0f ? 0 : a == 0.5f ? 1 : a == 1.0f ? 2 : a == 1.5f ? 3 : a == 2.0f ? 4 : a == 3.0f ? 5
          : a == 4.0f ? 6 : a == 6.0f ? 7 : -1;
    return k < 0 ? -1 : k | (dsv4_f32_bits(c) >> 31 ? 8 : 0);
}

/* The scales dsv4_fp4_pack tries, [*e0, *e1], for a block whose finite values' largest magnitude is m (0 when
 * none) and which holds an infinity or not. */
DSV4_HD void dsv4_fp4_pack_scales(float m, bool inf, int *e0, int *e1)
{
    *e0 = *e1 = 127; /* all zeros: any */
    if (inf) {
        *e0 = 253, *e1 = 254; /* 6 x 2^126 and up overflow: FP4SIM's two largest scales */
    } else if (m > 0.0f) {
        const uint32_t u = dsv4_f32_bits(m / 6.0f); /* exact unless it underflows, which rounds up below */
        int x = (int)((u >> 23) & 0xff);
        if (x == 0) x = 1; /* a subnormal: at most 2^-126 */
        else if (u & 0x7fffffu) x += 1;
        *e0 = *e1 = x > 254 ? 254 : x;
    }
}

DSV4_HD bool dsv4_fp4_pack(const float *v, int n, uint8_t *codes, uint8_t *scale)
{
    float m = 0.0f;
    bool inf = false;
    for (int i = 0; i < n; i++) {
        if (isinf(v[i]))
            inf = true;
        else
            m = fmaxf(m, fabsf(v[i]));
    }
    int e0, e1;
    dsv4_fp4_pack_scales(m, inf, &e0, &e1);
    for (int e = e0; e <= e1; e++) {
        const float s = dsv4_e8m0_to_f32((uint8_t)e);
        uint8_t b[16];
        bool ok = true;
        for (int i = 0; i < n && ok; i++) {
            const int k = isinf(v[i]) ? (v[i] < 0 ? 15 : 7) : dsv4_e2m1_code(v[i] / s);
            ok = k >= 0 && (isinf(v[i]) || dsv4_e2m1_to_f32((uint8_t)k) * s == v[i]);
            if (i & 1) b[i >> 1] = (uint8_t)(b[i >> 1] | k << 4);
            else b[i >> 1] = (uint8_t)k;
        }
        if (!ok) continue;
        for (int i = 0; i < (n + 1) / 2; i++) codes[i] = b[i];
        *scale = (uint8_t)e;
        return true;
    }
    return false;
}

DSV4_HD void dsv4_fp4_unpack(const uint8_t *codes, uint8_t scale, int n, float *v)
{
    const float s = dsv4_e8m0_to_f32(scale); /* 255: infinity, and NaN codes */
    for (int i = 0; i < n; i++) v[i] = dsv4_e2m1_to_f32((uint8_t)(codes[i >> 1] >> (4 * (i & 1)))) * s;
}

/* In-place normalised Walsh-Hadamard transform (Sylvester order) of length n
 * (a power of two): x <- H x / sqrt(n). */
DSV4_HD void dsv4_hadamard(float *x, int n)
{
    for (int h = 1; h < n; h <<= 1)
        for (int i = 0; i < n; i += h << 1)
            for (int j = i; j < i + h; j++) {
                float a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
    float s = 1.0f / sqrtf((float)n);
    for (int i = 0; i < n; i++) x[i] *= s;
}

#endif
