/*
 * sim.cuh - the cache formats' simulations (MODEL.md §3.10: FP8SIM of KV rows, the indexer's Hadamard + BF16 +
 * FP4SIM32, FP4SIM32's compact form) by a warp, with the values of quant.h's serial versions: a block's maximum
 * by shuffles (a maximum is order-free, and fmaxf drops NaN either way), each Hadamard butterfly the serial
 * transform's (a + b, a - b of the previous stage, stage by stage), the rest elementwise. Shared by the
 * simulation kernels (cuda_backend.cu) and the compressors' rows (compress.cu).
 */
#pragma once

#include "backend/cuda/common.cuh"

/* FP8SIM of one 64-wide block (len values) by a warp: two elements per lane (dsv4_fp8sim's values). */
__device__ __forceinline__ void kv_sim_block(float *v, int len, int lane)
{
    const bool in0 = lane < len, in1 = lane + 32 < len;
    const float a0 = in0 ? v[lane] : 0.0f, a1 = in1 ? v[lane + 32] : 0.0f;
    float amax = 1e-4f;
    if (in0) amax = fmaxf(amax, fabsf(a0));
    if (in1) amax = fmaxf(amax, fabsf(a1));
#pragma unroll
    for (int o = 16; o; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float sc = dsv4_pow2_ceil_scale(amax, 448.0f);
    if (in0) v[lane] = dsv4_round_bf16(dsv4_e4m3_code(a0, sc) * sc);
    if (in1) v[lane + 32] = dsv4_round_bf16(dsv4_e4m3_code(a1, sc) * sc);
}

/* The indexer's simulation of one row of dim = 32 E (a power of two) by a warp, in place: lane l holds elements
 * l E .. l E + E - 1 (row points at them). Each Hadamard stage is dsv4_hadamard's butterflies, in the lane or
 * with the lane l ^ (h / E); then the scale and BF16, and FP4 per 32 with the block maximum by shuffles: the
 * values of dsv4_hadamard, the BF16 rounding and dsv4_fp4sim(v, dim, 32). */
template <int E> __device__ __forceinline__ void idx_sim_warp(float *row, int lane)
{
    constexpr int dim = 32 * E;
    float v[E];
#pragma unroll
    for (int e = 0; e < E; e++) v[e] = row[e];
#pragma unroll
    for (int h = 1; h < dim; h <<= 1) {
        if (h < E) {
#pragma unroll
            for (int j = 0; j < E; j++)
                if (!(j & h)) {
                    const float a = v[j], b = v[j + h];
                    v[j] = a + b;
                    v[j + h] = a - b;
                }
        } else {
            const int m = h / E;
            const bool hi = lane & m;
#pragma unroll
            for (int e = 0; e < E; e++) {
                const float o = __shfl_xor_sync(0xffffffffu, v[e], m);
                v[e] = hi ? o - v[e] : v[e] + o;
            }
        }
    }
    const float s = 1.0f / sqrtf((float)dim);
#pragma unroll
    for (int e = 0; e < E; e++) v[e] = dsv4_round_bf16(v[e] * s);
    /* FP4 per 32: 32 / E lanes per block */
    float amax = 6.0f * 1.1754943508222875e-38f;
#pragma unroll
    for (int e = 0; e < E; e++) amax = fmaxf(amax, fabsf(v[e]));
#pragma unroll
    for (int o = 1; o < 32 / E; o <<= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float sc = dsv4_pow2_ceil_scale(amax, 6.0f), si = dsv4_pow2_recip(sc); /* v / sc exactly */
#pragma unroll
    for (int e = 0; e < E; e++) row[e] = dsv4_round_bf16(dsv4_e2m1_round(fminf(fmaxf(v[e] * si, -6.0f), 6.0f)) * sc);
}

/* idx_sim_warp for a row of dim values at row (lane's part: row + lane dim / 32) where dim is 32 to 512, a power
 * of two; false (nothing done) for another dim. */
__device__ __forceinline__ bool idx_sim_warp_dim(float *row, int dim, int lane)
{
    switch (dim) {
    case 32:
        idx_sim_warp<1>(row + lane, lane);
        return true;
    case 64:
        idx_sim_warp<2>(row + 2 * lane, lane);
        return true;
    case 128:
        idx_sim_warp<4>(row + 4 * lane, lane);
        return true;
    case 256:
        idx_sim_warp<8>(row + 8 * lane, lane);
        return true;
    case 512:
        idx_sim_warp<16>(row + 16 * lane, lane);
        return true;
    default:
        return false;
    }
}

/* dsv4_fp4_pack of one block of 32 FP4SIM values by a warp (lane l: value l): the same codes and scale, the same
 * answer (false: a value is not code x scale, nothing written). The maximum of the finite values by shuffles
 * (fmaxf from 0 drops a NaN as the serial loop's does), each lane its code, the bytes by a shuffle. */
__device__ __forceinline__ bool fp4_pack_warp(const float *v, uint8_t *codes, uint8_t *scale, int lane)
{
    const float x = v[lane];
    const bool xinf = isinf(x), inf = __any_sync(0xffffffffu, xinf);
    float m = xinf ? 0.0f : fmaxf(0.0f, fabsf(x));
#pragma unroll
    for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    int e0, e1;
    dsv4_fp4_pack_scales(m, inf, &e0, &e1);
    for (int e = e0; e <= e1; e++) {
        const float s = dsv4_e8m0_to_f32((uint8_t)e);
        const int k = xinf ? (x < 0 ? 15 : 7) : dsv4_e2m1_code(x / s);
        const bool ok = k >= 0 && (xinf || dsv4_e2m1_to_f32((uint8_t)k) * s == x);
        if (!__all_sync(0xffffffffu, ok)) continue;
        const int kn = __shfl_down_sync(0xffffffffu, k, 1);
        if (!(lane & 1)) codes[lane >> 1] = (uint8_t)(k | kn << 4);
        if (lane == 0) *scale = (uint8_t)e;
        return true;
    }
    return false;
}
