/*
 * moe_mma.cu - the routed experts on the tensor cores (mma.sync m16n8k16,
 * FP32 accumulation), for FP4 experts (MXFP4, NVFP4). Two paths: the F16
 * path (k_moe16, the default; described at its section
 * below) and the first, BF16 one described here (k_moe_gate_up /
 * k_moe_down: the fallback for scales the F16 path cannot load as words, and
 * DSV4_MOE_MMA=bf16). Both share the plan and the tiles.
 *
 * The step's (token, slot) pairs are grouped by expert on the GPU
 * (k_moe_plan): tiles of up to 8 pairs of one expert (16 at prefill, the
 * F16 path's two n tiles), so each expert's
 * weights are read once per tile instead of once per pair. Two MMA kernels
 * then run over (tile, block of rows): gate and up rows of the same index
 * together, so SwiGLU and the routing weight are the epilogue; then the
 * down projection, one output row per (pair, row) into the per-slot buffer
 * that moe_sum adds in expert order, as before. A block's four warps take
 * parts of K, added in warp order (warps_reduce): quarters here, every
 * fourth group in the F16 path (MOE_KST).
 *
 * Weights: E2M1 x its block scale (E8M0, or E4M3 for NVFP4) is exact in
 * BF16 (at most 6 significant bits, FP32's exponent range); NVFP4's global
 * scale multiplies the sum. Activations, packed per row first
 * (k_moe_pack): plain numerics as three BF16 parts (hi + mid + lo: 24
 * significant bits, FP32's precision); reference numerics as the
 * reference's FP8 quantisation per 128 columns, which BF16 holds exactly.
 * Each lane's K slots are contiguous columns (see mma.cu), so a fragment is
 * one 8-byte load per part.
 *
 * Batch invariance: a pair's output is its own MMA column - the same
 * products in the same order whatever else is in the tile or the step (the
 * order of pairs inside an expert's list, set by atomics, only moves a pair
 * between columns).
 */
#include <cuda_bf16.h>
#include <type_traits>

#include "backend/cuda/rowdot.cuh"

#define GM_WARPS 4
#define MAX_EP 1024

/* Two FP32 values that are BF16 exactly, as a BF16x2 word (a low). */
__device__ __forceinline__ uint32_t bf2(float a, float b)
{
    return (__float_as_uint(a) >> 16) | (__float_as_uint(b) & 0xffff0000u);
}

#ifdef MOE_TRACE
/* A block timeline of the routed experts' launches (a measurement: build with -DCMAKE_CUDA_FLAGS=-DMOE_TRACE, run
 * with DSV4_MOE_TRACE=N): the N-th call of cuda_moe_mma starts on an idle GPU and prints, per block, its kernel
 * (0 the plan, 1 gate / up, 2 down, 100000 + K a pack of K columns), its SM, and %globaltimer at its entry and
 * at its last store, in microseconds from the call's first entry: "moetrace KIND SM T0 T1" on stderr. */
struct moe_trace_rec {
    unsigned kind, sm;
    unsigned long long t0, t1;
};
#define MOE_TRACE_N 65536
__device__ moe_trace_rec moe_trace_buf[MOE_TRACE_N];
__device__ unsigned moe_trace_cnt;
__device__ __forceinline__ void moe_trace_add(unsigned kind, unsigned long long t0)
{
    const unsigned i = atomicAdd(&moe_trace_cnt, 1u);
    if (i < MOE_TRACE_N) moe_trace_buf[i] = {kind, dev_smid(), t0, dev_ns()};
}
#define MOE_TRACE_T0 const unsigned long long moe_tr0 = dev_ns()
#define MOE_TRACE_REC(kind)                                                                                            \
    do {                                                                                                               \
        if (threadIdx.x == 0) moe_trace_add((kind), moe_tr0);                                                          \
    } while (0)
#else
#define MOE_TRACE_T0        (void)0
#define MOE_TRACE_REC(kind) (void)0
#endif

/* Plan: pairs of experts in [lo, hi) (all when hi <= lo) listed by expert,
 * tiles (expert, first list entry, count <= ts) and their number. One block. */
__global__ void k_moe_plan(const int32_t *idx, int nk, int E, int lo, int hi, int *list, int4 *tiles, int *ntiles,
                           int ts)
{
    MOE_TRACE_T0;
    pdl_start();
    __shared__ int cnt[MAX_EP], off[MAX_EP], toff[MAX_EP + 1];
    for (int e = threadIdx.x; e < E; e += blockDim.x) cnt[e] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < nk; i += blockDim.x) {
        const int e = idx[i];
        if (e >= 0 && e < E && (hi <= lo || (e >= lo && e < hi))) atomicAdd(&cnt[e], 1);
    }
    __syncthreads();
    { /* offsets by two block scans (1,024 threads, E <= MAX_EP): one thread walking the experts was
       * a chain of E dependent steps */
        __shared__ int scan_sh[32];
        const int e = threadIdx.x, c = e < E ? cnt[e] : 0, tc = (c + ts - 1) / ts;
        int tot_c, tot_t;
        const int ic = block_scan_incl(c, scan_sh, &tot_c), it = block_scan_incl(tc, scan_sh, &tot_t);
        if (e < E) off[e] = ic - c, toff[e] = it - tc;
        if (e == 0) toff[E] = tot_t, *ntiles = tot_t;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
        for (int s = 0; s < cnt[e]; s += ts) tiles[toff[e] + s / ts] = make_int4(e, off[e] + s, min(ts, cnt[e] - s), 0);
        cnt[e] = 0; /* reused as the cursor */
    }
    __syncthreads();
    for (int i = threadIdx.x; i < nk; i += blockDim.x) {
        const int e = idx[i];
        if (e >= 0 && e < E && (hi <= lo || (e >= lo && e < hi))) list[off[e] + atomicAdd(&cnt[e], 1)] = i;
    }
    MOE_TRACE_REC(0);
}

/* Pack rows of src (nrows x K, ld) for the kernels below: one warp per (row,
 * 128 columns); lane l takes columns 4l .. 4l + 3, which are MMA step j = l % 8
 * of lane t = l / 8. NP planes of uint2 [row][kg][j][t]. REF: the reference's
 * FP8 quantisation per 128 (k_act_quant's values). */
template <bool REF>
__global__ void k_moe_pack(const float *src, int ld, int nrows, int K, uint2 *xp, size_t plane)
{
    const int lane = threadIdx.x & 31, nkg = K / 128;
    const int64_t wg = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (wg >= (int64_t)nrows * nkg) return;
    const int row = (int)(wg / nkg), kg = (int)(wg % nkg);
    const float4 q = *(const float4 *)(src + (size_t)row * ld + kg * 128 + 4 * lane);
    float v[4] = {q.x, q.y, q.z, q.w};
    const size_t f = (((size_t)row * nkg + kg) * 8 + (lane & 7)) * 4 + (lane >> 3);
    if (REF) {
        float amax = 1e-4f;
#pragma unroll
        for (int e = 0; e < 4; e++) v[e] = dsv4_round_bf16(v[e]); /* BF16 values first (k_act_quant's) */
#pragma unroll
        for (int e = 0; e < 4; e++) amax = fmaxf(amax, fabsf(v[e]));
#pragma unroll
        for (int o = 16; o; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
        const float sc = dsv4_pow2_ceil_scale(amax, 448.0f);
#pragma unroll
        for (int e = 0; e < 4; e++) v[e] = dsv4_e4m3_code(v[e], sc) * sc;
        xp[f] = make_uint2(bf2_rn(v[0], v[1]), bf2_rn(v[2], v[3])); /* exact, Inf kept */
    } else {
        float r[4];
        uint2 p[3];
#pragma unroll
        for (int s = 0; s < 3; s++) {
            float h[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float x = s == 0 ? v[e] : r[e];
                h[e] = __bfloat162float(__float2bfloat16_rn(x));
                /* non-finite values stay whole in the first part */
                r[e] = isfinite(x) ? x - h[e] : 0.0f;
                if (!isfinite(x) && s > 0) h[e] = 0.0f;
            }
            p[s] = make_uint2(bf2_rn(h[0], h[1]), bf2_rn(h[2], h[3]));
        }
#pragma unroll
        for (int s = 0; s < 3; s++) xp[s * plane + f] = p[s];
    }
}

/* The scale of the lane's 32 columns (unit t of group kg) of absolute row ra;
 * NVFP4: of its first (hf = 0) or second 16. */
template <int K> __device__ __forceinline__ float unit_scale(const wdesc &w, int64_t ra, int kg, int t, int hf)
{
    const uint8_t *s = (const uint8_t *)w.scale + ra * w.scale_cols;
    if (K == RK_MXFP4) return dsv4_e8m0_to_f32(__ldg(s + kg * 4 + t));
    return fp8_val(__ldg(s + kg * 8 + 2 * t + hf));
}

/* acc (16 rows x 8 pairs) += W[rows rb.., group kg] . B for one matrix;
 * q[h]: the lane's 16 bytes of rows g (h = 0) and g + 8. */
template <int K, int NP>
__device__ __forceinline__ void mma_group(const wdesc &w, int64_t ra0, int64_t ra1, int kg, int t, const uint4 *q,
                                          const uint2 (*b)[8], float *acc)
{
    uint32_t s0[2], s1[2];
    s0[0] = bf16x2_of(unit_scale<K>(w, ra0, kg, t, 0)), s1[0] = bf16x2_of(unit_scale<K>(w, ra1, kg, t, 0));
    s0[1] = K == RK_NVFP4 ? bf16x2_of(unit_scale<K>(w, ra0, kg, t, 1)) : s0[0];
    s1[1] = K == RK_NVFP4 ? bf16x2_of(unit_scale<K>(w, ra1, kg, t, 1)) : s1[0];
    const uint32_t u0[4] = {q[0].x, q[0].y, q[0].z, q[0].w}, u1[4] = {q[1].x, q[1].y, q[1].z, q[1].w};
#pragma unroll
    for (int j = 0; j < 8; j++) {
        uint32_t a0, a1, a2, a3;
        if (j & 1) {
            fp4x4_bf16<1>(u0[j >> 1], s0[j >> 2], a0, a2);
            fp4x4_bf16<1>(u1[j >> 1], s1[j >> 2], a1, a3);
        } else {
            fp4x4_bf16<0>(u0[j >> 1], s0[j >> 2], a0, a2);
            fp4x4_bf16<0>(u1[j >> 1], s1[j >> 2], a1, a3);
        }
#pragma unroll
        for (int p = 0; p < NP; p++) mma_bf16(acc, a0, a1, a2, a3, b[p][j].x, b[p][j].y);
    }
}

/* The B fragments of group kg for this lane: pair g's packed row (zeros past the tile's count). */
template <int NP>
__device__ __forceinline__ void load_b(const uint2 *xp, size_t plane, int row, int nkg, int kg, int t, uint2 (*b)[8])
{
#pragma unroll
    for (int p = 0; p < NP; p++)
#pragma unroll
        for (int j = 0; j < 8; j++)
            b[p][j] = row >= 0 ? __ldg(xp + p * plane + (((size_t)row * nkg + kg) * 8 + j) * 4 + t) : make_uint2(0, 0);
}

template <int NP> __device__ __forceinline__ void copy_b(const uint2 (*from)[8], uint2 (*to)[8])
{
#pragma unroll
    for (int q = 0; q < NP; q++)
#pragma unroll
        for (int j = 0; j < 8; j++) to[q][j] = from[q][j];
}

__device__ __forceinline__ uint4 ld16(const wdesc &w, int64_t ra, int64_t c, bool ok)
{
    return ok ? __ldg((const uint4 *)((const char *)w.data + ra * w.row_bytes + c)) : make_uint4(0, 0, 0, 0);
}

/* The block's warps (parts along K, in warp order) add their 8 accumulators
 * per lane and n tile on warp 0 through red; false for the other warps (done). */
template <int NTT> __device__ __forceinline__ bool warps_reduce_in(float (*acc)[8], float (*red)[NTT * 8][32])
{
    const int wid = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int j = 0; j < NTT; j++)
#pragma unroll
        for (int i = 0; i < 8; i++) red[wid][8 * j + i][lane] = acc[j][i];
    __syncthreads();
    if (wid != 0) return false;
    for (int q = 1; q < GM_WARPS; q++)
#pragma unroll
        for (int j = 0; j < NTT; j++)
#pragma unroll
            for (int i = 0; i < 8; i++) acc[j][i] += red[q][8 * j + i][lane];
    return true;
}
template <int NTT> __device__ __forceinline__ bool warps_reduce(float (*acc)[8])
{
    __shared__ float red[GM_WARPS][NTT * 8][32];
    return warps_reduce_in<NTT>(acc, red);
}
__device__ __forceinline__ bool warps_reduce(float *acc)
{
    return warps_reduce<1>((float(*)[8])acc);
}

/* Pair ts's row r of M from its gate and up sums ga, ua: times sa, sc, then
 * SwiGLU with the clamp, times the routing weight (every path's epilogue). */
__device__ __forceinline__ void swiglu_out(float ga, float ua, float sa, float sc, int64_t r, int ts, int I,
                                           const float *wts, float limit, bool reference, float *M)
{
    float gv = ga * sa, uv = ua * sc;
    if (reference) gv = dsv4_round_bf16(gv), uv = dsv4_round_bf16(uv);
    if (limit > 0) {
        gv = fminf(gv, limit);
        uv = fminf(fmaxf(uv, -limit), limit);
    }
    const float m = gv / (1.0f + expf(-gv)) * uv * wts[ts];
    M[(size_t)ts * I + r] = reference ? dsv4_round_bf16(m) : m;
}

/* The epilogues of both paths, on warp 0 after warps_reduce. Lane (g, t)
 * holds pairs 2t, 2t + 1 (e & 1) of rows g (e < 2) and g + 8 of a tile;
 * acc[4 * m + e] is m tile m's.
 * Gate and up: m tiles 0 (gate) and 1 (up) of rows rb..; sums times sa, sc,
 * then SwiGLU with the clamp, times the routing weight, into M[pair]. */
__device__ __forceinline__ void gate_up_out(const float *acc, float sa, float sc, int4 tl, int64_t rb, int g, int t,
                                            const int *list, int I, const float *wts, float limit, bool reference,
                                            float *M)
{
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const int p = 2 * t + (e & 1);
        const int64_t r = rb + g + (e >= 2 ? 8 : 0);
        if (p >= tl.z || r >= I) continue;
        swiglu_out(acc[e], acc[4 + e], sa, sc, r, list[tl.y + p], I, wts, limit, reference, M);
    }
}

/* Pair ts's row r of Y from its sum a: times s2 (every path's down epilogue). */
__device__ __forceinline__ void down_store(float a, float s2, int64_t r, int ts, int D, bool reference, float *Y)
{
    const float y = a * s2;
    Y[(size_t)ts * D + r] = reference ? dsv4_round_bf16(y) : y;
}

/* Down: m tiles 0 and 1 are rows rb.. and rb + 16..; sums times s2 into Y[pair]. */
__device__ __forceinline__ void down_out(const float *acc, float s2, int4 tl, int64_t rb, int g, int t,
                                         const int *list, int D, bool reference, float *Y)
{
#pragma unroll
    for (int e = 0; e < 8; e++) {
        const int p = 2 * t + (e & 1);
        const int64_t r = rb + 16 * (e >> 2) + g + ((e & 2) ? 8 : 0);
        if (p >= tl.z || r >= D) continue;
        down_store(acc[e], s2, r, list[tl.y + p], D, reference, Y);
    }
}

/* Gate and up: block (tile, 16 rows of w1 and the same 16 of w3); its warps
 * take quarters of K, added in warp order. Epilogue: SwiGLU with the clamp,
 * times the routing weight, into M[pair]. */
template <int K, int NP>
__global__ void __launch_bounds__(32 * GM_WARPS) k_moe_gate_up(const wdesc *w1t, const wdesc *w3t, const uint2 *xp,
                                                               size_t plane, int D, const int4 *tiles,
                                                               const int *ntiles, const int *list, int kk, int I,
                                                               const float *wts, float limit, bool reference, float *M)
{
    if ((int)blockIdx.x >= *ntiles) return;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int4 tl = tiles[blockIdx.x];
    const wdesc a = w1t[tl.x], c = w3t[tl.x];
    const int64_t rb = (int64_t)blockIdx.y * 16;
    const int nkg = D / 128;
    const int prow = g < tl.z ? list[tl.y + g] / kk : -1; /* the token row of pair g */
    const bool ok0 = rb + g < I, ok1 = rb + g + 8 < I;
    const int64_t ra0 = a.row0 + rb + g, ra1 = ra0 + 8, rc0 = c.row0 + rb + g, rc1 = rc0 + 8;
    const int wid = threadIdx.x >> 5, kg0 = nkg * wid / GM_WARPS, kg1 = nkg * (wid + 1) / GM_WARPS;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, *ag = acc, *au = acc + 4;
    uint4 cur[4], nxt[4];
    const int64_t c0 = (int64_t)kg0 * 64 + 16 * t;
    cur[0] = ld16(a, ra0, c0, ok0), cur[1] = ld16(a, ra1, c0, ok1);
    cur[2] = ld16(c, rc0, c0, ok0), cur[3] = ld16(c, rc1, c0, ok1);
    /* the activations' fragments one group ahead too when they are one part
     * (reference numerics); three parts' registers would cost occupancy (measured slower) */
    constexpr bool PF = NP == 1;
    uint2 b[NP][8], bn[NP][8];
    if (PF && kg0 < kg1) load_b<NP>(xp, plane, prow, nkg, kg0, t, b);
    for (int kg = kg0; kg < kg1; kg++) {
        if (kg + 1 < kg1) {
            const int64_t o = (int64_t)(kg + 1) * 64 + 16 * t;
            nxt[0] = ld16(a, ra0, o, ok0), nxt[1] = ld16(a, ra1, o, ok1);
            nxt[2] = ld16(c, rc0, o, ok0), nxt[3] = ld16(c, rc1, o, ok1);
            if (PF) load_b<NP>(xp, plane, prow, nkg, kg + 1, t, bn);
        }
        if (!PF) load_b<NP>(xp, plane, prow, nkg, kg, t, b);
        mma_group<K, NP>(a, ok0 ? ra0 : a.row0, ok1 ? ra1 : a.row0, kg, t, cur, b, ag);
        mma_group<K, NP>(c, ok0 ? rc0 : c.row0, ok1 ? rc1 : c.row0, kg, t, cur + 2, b, au);
#pragma unroll
        for (int i = 0; i < 4; i++) cur[i] = nxt[i];
        if (PF) copy_b<NP>(bn, b);
    }
    if (!warps_reduce(acc)) return;
    gate_up_out(acc, K == RK_NVFP4 ? a.scale2 : 1.0f, K == RK_NVFP4 ? c.scale2 : 1.0f, tl, rb, g, t, list, I, wts,
                limit, reference, M);
}

/* Down: block (tile, 32 rows of w2: two m tiles); its warps take quarters of K. */
template <int K, int NP>
__global__ void __launch_bounds__(32 * GM_WARPS) k_moe_down(const wdesc *w2t, const uint2 *mp, size_t plane, int I,
                                                            const int4 *tiles, const int *ntiles, const int *list,
                                                            int D, bool reference, float *Y)
{
    if ((int)blockIdx.x >= *ntiles) return;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int4 tl = tiles[blockIdx.x];
    const wdesc w = w2t[tl.x];
    const int64_t rb = (int64_t)blockIdx.y * 32;
    const int nkg = I / 128;
    const int prow = g < tl.z ? list[tl.y + g] : -1; /* pair g's row of M */
    bool ok[4];
    int64_t ra[4];
#pragma unroll
    for (int h = 0; h < 4; h++) { /* rows rb + g + 8h: m tile h / 2, half h % 2 */
        ok[h] = rb + g + 8 * h < D;
        ra[h] = w.row0 + (ok[h] ? rb + g + 8 * h : 0);
    }
    const int wid = threadIdx.x >> 5, kg0 = nkg * wid / GM_WARPS, kg1 = nkg * (wid + 1) / GM_WARPS;
    float acc[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    uint4 cur[4], nxt[4];
#pragma unroll
    for (int h = 0; h < 4; h++) cur[h] = ld16(w, ra[h], (int64_t)kg0 * 64 + 16 * t, ok[h]);
    /* the activations' fragments one group ahead too when they are one part
     * (reference numerics); three parts' registers would cost occupancy (measured slower) */
    constexpr bool PF = NP == 1;
    uint2 b[NP][8], bn[NP][8];
    if (PF && kg0 < kg1) load_b<NP>(mp, plane, prow, nkg, kg0, t, b);
    for (int kg = kg0; kg < kg1; kg++) {
        if (kg + 1 < kg1) {
#pragma unroll
            for (int h = 0; h < 4; h++) nxt[h] = ld16(w, ra[h], (int64_t)(kg + 1) * 64 + 16 * t, ok[h]);
            if (PF) load_b<NP>(mp, plane, prow, nkg, kg + 1, t, bn);
        }
        if (!PF) load_b<NP>(mp, plane, prow, nkg, kg, t, b);
        mma_group<K, NP>(w, ra[0], ra[1], kg, t, cur, b, acc[0]);
        mma_group<K, NP>(w, ra[2], ra[3], kg, t, cur + 2, b, acc[1]);
#pragma unroll
        for (int h = 0; h < 4; h++) cur[h] = nxt[h];
        if (PF) copy_b<NP>(bn, b);
    }
    if (!warps_reduce(&acc[0][0])) return;
    down_out(&acc[0][0], K == RK_NVFP4 ? w.scale2 : 1.0f, tl, rb, g, t, list, D, reference, Y);
}

/* ==== The F16 path (the default): weights through E4M3 and the hardware's
 * E4M3x2 -> F16x2 conversion, activations as mma.cu's F16 parts ============
 *
 * An E2M1 code is an E4M3 code times 2^6 exactly: s e1 e0 m -> s 0 0 e1 e0 m 0 0
 * (e = 0: the E4M3 subnormal m / 2 * 2^-6). So a word of 8 codes becomes two
 * words of E4M3 bytes in a few logic operations (e2m1_e4m3; four with the
 * words repacked in GPU memory once, fp4_pack_word / fp4_eo), then four F16x2
 * in four conversions: about 1 instruction per weight against 3.5 for the
 * BF16 path's table decode, whose instruction count (not the bytes) set its
 * speed.
 *
 * The block scale: an MMA's 16 K slots come from the four lanes t of a row
 * group, so each k-step is made of one scale unit's columns: lane t takes the
 * 4-byte word 4t of each 16-byte unit (32 columns, one MXFP4 scale) and the
 * unit's two k-steps take its even and odd codes. MXFP4: each unit's two
 * k-steps go to a fresh accumulator, added to the group's sum times the E8M0
 * scale (exact: a power of two). NVFP4: the lane's 8 columns share one E4M3
 * scale (16 columns), which multiplies the F16 weights exactly (at most 6
 * significant bits, within F16's range). The activations' power-of-two scale
 * multiplies each 128-column group's sum; 2^6 and NVFP4's global scale the
 * total.
 *
 * Activations (k_moe_pack16): per row and 128 columns, f16_parts with the
 * group's power of two: plain numerics two F16 parts (hi, lo), reference
 * numerics the reference's FP8 codes. Lane t's four words of unit u are its
 * columns 8t + {0,2 | 4,6 | 1,3 | 5,7}: the B fragments of the unit's even and
 * odd k-steps, one 16-byte load per part. */

/* The odd codes (1, 3, 5, 7) of an E2M1 word as E4M3 bytes (value * 2^-6);
 * the even codes are those of q << 4. */
__host__ __device__ __forceinline__ uint32_t e2m1_e4m3(uint32_t q)
{
    return ((q >> 2) & 0x1c1c1c1cu) | (q & 0x80808080u);
}

/* The F16 path's layout of an E2M1 word in GPU memory (made once, in place, when a layer's expert table is
 * built: cuda_moe_fp4_layout). Decoding a checkpoint word q is 7-8 logic operations (two shifts and four
 * masks for the odd and even words of E4M3 bytes); a word w laid out so that
 *
 *     O = w & M,  E = ((w << 2) ^ (w >> 2)) & M,  M = 0x9c9c9c9c (bits 2, 3, 4, 7 of each byte: an E4M3 byte's
 *                                                   sign and its two low exponent bits and top mantissa bit)
 *
 * are e2m1_e4m3(q) and e2m1_e4m3(q << 4) takes four (an AND; two shifts and one LOP3). w holds O's 16 bits in
 * place; bits 0, 1, 5, 6 of each byte hold E's, each XORed with the bit the other shift brings to its place
 * (bit 0 with bit 4, 1 with 5, 6 with 2; bit 5 with bit 1 of the byte above, zero above the top byte), so the
 * packing walks the bytes from the top. No single shift and mask can place both words (M and a shift of M
 * do not tile a byte); the XOR of two shifts under one mask can. A bijection on words (tested over every
 * 16-bit half and random words: k_decode_check). */
#define FP4_M 0x9c9c9c9cu
__host__ __device__ __forceinline__ uint32_t fp4_pack_word(uint32_t q)
{
    const uint32_t o = e2m1_e4m3(q), e = e2m1_e4m3(q << 4);
    uint32_t w = o, up1 = 0; /* bit 1 of the byte above */
#pragma unroll
    for (int b = 3; b >= 0; b--) {
        const int s = 8 * b;
        const uint32_t b5 = ((e >> (s + 7)) & 1u) ^ up1, b1 = ((e >> (s + 3)) & 1u) ^ b5;
        const uint32_t b0 = ((e >> (s + 2)) ^ (o >> (s + 4))) & 1u, b6 = ((e >> (s + 4)) ^ (o >> (s + 2))) & 1u;
        w |= b0 << s | b1 << (s + 1) | b5 << (s + 5) | b6 << (s + 6);
        up1 = b1;
    }
    return w;
}

/* A packed word's E4M3 words: even codes (e2m1_e4m3(q << 4)) and odd (e2m1_e4m3(q)). */
__device__ __forceinline__ void fp4_eo(uint32_t w, uint32_t &e, uint32_t &o)
{
    o = w & FP4_M;
    e = ((w << 2) ^ (w >> 2)) & FP4_M;
}

/* Tensor blockIdx.y of a layer's expert table (w1 | w3 | w2, E each) into the layout, its experts in
 * [lo, hi) only (expert parallelism: the others are not this rank's). Each word through fp4_pack_word, and each
 * row's 128-column groups (64 bytes: 16-byte units u = 0..3 of four words t) with their words transposed: word t of
 * unit u at bytes 16t + 4u, so that a lane (g, t) of the MMA kernels reads its four words of a row (one of each
 * unit) as one 16-byte load (cuda_moe_mma_eligible: rows of whole 128-column groups, 16-byte aligned). */
__global__ void k_fp4_pack(const wdesc *tab, int E, int lo, int hi)
{
    const int i = blockIdx.y, e = i % E;
    if (e < lo || e >= hi) return;
    const wdesc d = tab[i];
    uint4 *w = (uint4 *)((char *)d.data + d.row0 * d.row_bytes);
    const size_t n = (size_t)d.rows * (size_t)d.row_bytes / 64; /* the groups */
    for (size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (size_t)gridDim.x * blockDim.x) {
        const uint4 a = w[4 * j], b = w[4 * j + 1], c = w[4 * j + 2], f = w[4 * j + 3]; /* units 0..3 */
        w[4 * j] = make_uint4(fp4_pack_word(a.x), fp4_pack_word(b.x), fp4_pack_word(c.x), fp4_pack_word(f.x));
        w[4 * j + 1] = make_uint4(fp4_pack_word(a.y), fp4_pack_word(b.y), fp4_pack_word(c.y), fp4_pack_word(f.y));
        w[4 * j + 2] = make_uint4(fp4_pack_word(a.z), fp4_pack_word(b.z), fp4_pack_word(c.z), fp4_pack_word(f.z));
        w[4 * j + 3] = make_uint4(fp4_pack_word(a.w), fp4_pack_word(b.w), fp4_pack_word(c.w), fp4_pack_word(f.w));
    }
}

/* The layer's FP4 experts (this rank's) into the F16 path's layout (fp4_pack_word), in place on the current
 * queue, one launch over tab (the layer's device table): once, when the table is built (the F16 path's
 * kernels are then the only readers of these bytes). */
void cuda_moe_fp4_layout(dsv4_backend *be, const dsv4_moe_params *p, const wdesc *tab)
{
    const bool part = p->expert_hi > p->expert_lo;
    const int E = p->n_experts;
    k_fp4_pack<<<dim3(64, (unsigned)(3 * E)), 256, 0, impl_of(be)->stream>>>(tab, E, part ? p->expert_lo : 0,
                                                                             part ? p->expert_hi : E);
    CK_LAUNCH();
}

/* Element u (a constant) of a float4. */
__device__ __forceinline__ float f4_at(const float4 &v, int u)
{
    return u == 0 ? v.x : u == 1 ? v.y : u == 2 ? v.z : v.w;
}

/* E8M0 byte u of word s as an FP32 (2^(b - 127); b = 0: 2^-127, b = 255: Inf,
 * as dsv4_e8m0_to_f32): the byte to the exponent's place. */
__device__ __forceinline__ float e8m0_byte(uint32_t s, int u)
{
    return fmaxf(__uint_as_float(__byte_perm(s, 0, 0x0444u | ((uint32_t)u << 12)) >> 1), 0x1p-127f);
}

/* Pack rows of src (nrows x K, ld) for k_moe_f16: one warp per (row, 128
 * columns); lane l takes columns 4l .. 4l + 3 = columns 8t + 4h .. of unit u
 * (u = l / 8, t = l / 2 % 4, h = l % 2). NP planes of uint32 words [row][kg][u][t][4]
 * and the scales xs [row][kg]. */
template <bool REF, bool A8, bool WGL = false>
__global__ void k_moe_pack16(const float *src, int ld, int nrows, int K, uint32_t *xp, size_t plane, float *xs)
{
    MOE_TRACE_T0;
    pdl_start(); /* waits first: the MMA kernel after it reads the plan before its own wait */
    const int lane = threadIdx.x & 31, nkg = K / 128;
    const int64_t wg = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (wg >= (int64_t)nrows * nkg) return;
    const int row = (int)(wg / nkg), kg = (int)(wg % nkg);
    const float4 q = *(const float4 *)(src + (size_t)row * ld + kg * 128 + 4 * lane);
    const float v[4] = {q.x, q.y, q.z, q.w};
    __half hi[4], lo[4];
    const float sc = f16_parts<REF, 32>(v, hi, lo);
    const int u = lane >> 3, t = (lane >> 1) & 3, h = lane & 1;
    if (A8) { /* the E4M3 codes (exact; NOSAT: a non-finite part becomes NaN): [row][kg][u][E | O][t][4 bytes] */
        uint8_t *o = (uint8_t *)xp + (((size_t)row * nkg + kg) * 4 + u) * 32 + 4 * t + 2 * h;
        const __half2_raw e = {__half_as_ushort(hi[0]), __half_as_ushort(hi[2])};
        const __half2_raw d = {__half_as_ushort(hi[1]), __half_as_ushort(hi[3])};
        *(uint16_t *)o = __nv_cvt_halfraw2_to_fp8x2(e, __NV_NOSAT, __NV_E4M3); /* even columns: E bytes 2h, 2h + 1 */
        *(uint16_t *)(o + 16) = __nv_cvt_halfraw2_to_fp8x2(d, __NV_NOSAT, __NV_E4M3);
        if (lane == 0) xs[(size_t)row * nkg + kg] = sc;
        return;
    }
    /* WGL (k_moe_wg's rows): per 128 columns the eight k16 steps (unit u's even, odd) of 32 bytes each, the
     * lane's word at k slots 2t, 2t + 1 (h = 0) or 2t + 8, 2t + 9 (h = 1) of its step */
    const size_t f =
        WGL ? ((size_t)row * nkg + kg) * 64 + u * 16 + 4 * h + t : ((((size_t)row * nkg + kg) * 4 + u) * 4 + t) * 4 + h;
    const int fo = WGL ? 8 : 2;
    xp[f] = h2_bits(hi[0], hi[2]); /* even columns: word h */
    xp[f + fo] = h2_bits(hi[1], hi[3]); /* odd: word 2 + h */
    if (!REF) {
        xp[plane + f] = h2_bits(lo[0], lo[2]);
        xp[plane + f + fo] = h2_bits(lo[1], lo[3]);
    }
    if (lane == 0) xs[(size_t)row * nkg + kg] = sc;
    MOE_TRACE_REC(100000u + (unsigned)K);
}

/* One row pair's weights of a 128-column group: rows g and g + 8 of an m tile,
 * 4 words each (unit u's word t: bytes 16t + 4u in the layout, k_fp4_pack), and their scale words (MXFP4: the
 * group's 4 E8M0 bytes; NVFP4: its 8 E4M3 bytes), as read from a ring stage. */
struct wq16 {
    uint32_t q[2][4];
    uint32_t s[2][2];
};

/* Unit u's A fragments (F16) of the rows g, g + 8 of an m tile: the even
 * and odd k-steps' a0 a2 (row g), a1 a3 (row g + 8); E2M1 -> E4M3 (x 2^-6)
 * -> F16, NVFP4 times the lane's 16-column block scale (E4M3). */
template <int K> __device__ __forceinline__ void unit16(const wq16 &w, int u, int t, uint32_t *ae, uint32_t *ao)
{
    uint32_t e0, o0, e1, o1;
    fp4_eo(w.q[0][u], e0, o0);
    fp4_eo(w.q[1][u], e1, o1);
    fp8x4_f16(e0, ae[0], ae[2]);
    fp8x4_f16(e1, ae[1], ae[3]);
    fp8x4_f16(o0, ao[0], ao[2]);
    fp8x4_f16(o1, ao[1], ao[3]);
    if (K == RK_NVFP4) { /* the lane's 16-column block: byte 2u + t / 2 */
        const uint32_t sel = (uint32_t)(2 * (u & 1) + (t >> 1)) * 0x1111u;
        uint32_t s0, s1, x0, x1;
        fp8x4_f16(__byte_perm(w.s[0][u >> 1], 0, sel), s0, x0);
        fp8x4_f16(__byte_perm(w.s[1][u >> 1], 0, sel), s1, x1);
        (void)x0, (void)x1;
        const __half2 h0 = *(const __half2 *)&s0, h1 = *(const __half2 *)&s1;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const __half2 hs = (i & 1) ? h1 : h0;
            __half2 e = __hmul2(*(const __half2 *)&ae[i], hs), o = __hmul2(*(const __half2 *)&ao[i], hs);
            ae[i] = *(const uint32_t *)&e, ao[i] = *(const uint32_t *)&o;
        }
    }
}

/* sum[j][4] += the group's products of one m tile with n tile j's B
 * fragments b[j][p][u], j < NTT (MXFP4: each unit's sum times its scale, sc[h][u] for row g + 8h;
 * NVFP4: scaled weights, one sum). The weights are decoded once for the NTT
 * n tiles; each n tile's MMAs, sums and their order are those of NTT = 1. */
template <int K, int NP, int NTT>
__device__ __forceinline__ void group16(const wq16 &w, const float4 *sc, const uint4 (*b)[NP][4], int t,
                                        float (*sum)[4])
{
    float c[NTT][4];
#pragma unroll
    for (int j = 0; j < NTT; j++) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.0f;
#pragma unroll
    for (int u = 0; u < 4; u++) {
        uint32_t ae[4], ao[4];
        unit16<K>(w, u, t, ae, ao);
#pragma unroll
        for (int j = 0; j < NTT; j++)
#pragma unroll
            for (int p = 0; p < NP; p++) {
                mma_f16(c[j], ae[0], ae[1], ae[2], ae[3], b[j][p][u].x, b[j][p][u].y);
                mma_f16(c[j], ao[0], ao[1], ao[2], ao[3], b[j][p][u].z, b[j][p][u].w);
            }
        if (K == RK_MXFP4) {
            const float s0 = f4_at(sc[0], u), s1 = f4_at(sc[1], u);
#pragma unroll
            for (int j = 0; j < NTT; j++) {
                sum[j][0] = __fmaf_rn(c[j][0], s0, sum[j][0]);
                sum[j][1] = __fmaf_rn(c[j][1], s0, sum[j][1]);
                sum[j][2] = __fmaf_rn(c[j][2], s1, sum[j][2]);
                sum[j][3] = __fmaf_rn(c[j][3], s1, sum[j][3]);
                c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.0f;
            }
        }
    }
    if (K == RK_NVFP4)
#pragma unroll
        for (int j = 0; j < NTT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) sum[j][e] += c[j][e];
}

/* The loads go through shared memory in a ring of MOE_STAGES stages per warp,
 * MOE_STAGES - 1 groups ahead, with cp.async (no registers held while bytes
 * are in flight, so more of them can be): a stage holds the group's 32
 * weight rows (two m tiles, rows g and g + 8: 64 bytes each, moe_wofs), their
 * scale words, and the B fragments [NP][4 units][32 lanes]. */
#define MOE_STAGES 3
/* K's four parts (a k_moe16 block's warps, added in part order; k_moe_wg's folds) interleave: part p holds
 * groups p, p + 4, p + 8, ... With a quarter of K each (contiguous), a block's warps read a row's 64-byte
 * pieces 512 bytes apart at a time; interleaved they read 256 contiguous bytes of it (and the copies ask L2
 * for the 256 around each: cp_async16_l2pf): DRAM serves the experts' bytes 10-15 % faster (batch 16). */
#define MOE_KST GM_WARPS

/* K's groups walked part by part (k_moe_wg): the group at position i. */
__device__ __forceinline__ int moe_part_group(int i, int nkg)
{
    int p = 0;
#pragma unroll
    for (int q = 0; q < MOE_KST - 1; q++) {
        const int cnt = (nkg - p + MOE_KST - 1) / MOE_KST; /* part p's groups */
        if (i < cnt) break;
        i -= cnt, p++;
    }
    return p + MOE_KST * i;
}
#define W_ROW 64 /* a stage's weight rows (k_moe16's, k_moe8w's, k_moe_wg's): 64 bytes, contiguous */
/* Chunk k of a stage's weight row r (the layout's words t = k of the row's four units, k_fp4_pack). A lane (g, t)
 * reads its 16 bytes of rows g and g + 8 (.. 24 + g) with one 16-byte load a row, eight lanes a phase: rows 2i and
 * 2i + 1 whole, 128 contiguous bytes, every bank once. (Up to s71 a lane read four 4-byte words a row, one of each
 * 16-byte unit: rows 80 bytes apart, or with B in the ring 64 with the units XOR-swizzled by row, so that the 32
 * lanes' words met 32 distinct banks - 16 loads a group where there are 4 now.) */
__device__ __forceinline__ int moe_wofs(int r, int k)
{
    return r * W_ROW + 16 * k;
}
/* B through the ring too with one activation part (reference numerics); with
 * two (plain) its 4 KB a stage would cost a block per SM, so the lanes load
 * B from global memory (L2) as they use it (measured: the same speed). So do
 * tiles of several n tiles (prefill): their stages hold weights only
 * (moe_stage<MOE_NOB>). */
#define MOE_BR(NP) ((NP) == 1)
#define MOE_NOB    (-1)

/* NP = MOE_A8: the W4A8 route (reference numerics, MXFP4; k_moe8w below):
 * the activations are one plane of E4M3 bytes. */
#define MOE_A8 0

/* BP: the pairs whose B fragments a stage holds (8: a whole n tile; 2: tiles of at most 2 pairs, lanes 0-7's
 * fragments: moe16_bp2). */
template <int NP, int BP = 8> struct moe_stage {
    uint8_t w[32 * W_ROW];
    uint32_t s[32][2];
    uint4 b[MOE_BR(NP) ? NP * 4 * 4 * BP : 1];
};
/* A ring's stages: MOE_STAGES, or 4 with stages of 2 pairs' B (2.8 KB instead of 4.25: four blocks an SM
 * still fit, each warp three groups ahead instead of two). */
template <int BP> constexpr int moe_ns(void)
{
    return BP < 8 ? 4 : MOE_STAGES;
}

/* What a lane copies, fixed for the whole K loop: weight chunks L + 32i (row
 * (L + 32i) / 4 of the stage, unit (L + 32i) % 4), the scale word of stage
 * row L, its own B fragments (packed row brow) and (moe16_part's XR) that
 * row's activation scales x. */
struct moe_src {
    const char *w[4];
    bool wok[4];
    const uint8_t *s;
    bool sok;
    const uint4 *b;
    const float *x;
    bool bok;
};

/* Stage row r: tile r / 16 (a, b), half (r / 8) % 2, row group r % 8. */
__device__ __forceinline__ int64_t stage_row(int r, int64_t ra, int64_t rb)
{
    return ((r >> 4) ? rb : ra) + (r & 7) + 8 * ((r >> 3) & 1);
}

/* The weight and scale sources of a lane for m tiles wa rows ra.. and wb rows
 * rb.. (rows from lim on: zeros); B is the caller's. */
__device__ __forceinline__ moe_src moe_src_of(const wdesc &wa, int64_t ra, const wdesc &wb, int64_t rb, int64_t lim,
                                              int lane)
{
    moe_src src;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int c = lane + 32 * i, r = c >> 2;
        const int64_t row = stage_row(r, ra, rb);
        const bool b = r >> 4; /* the fields, not a reference to one of the structs (that put them on the stack) */
        src.wok[i] = row < lim;
        src.w[i] = (const char *)(b ? wb.data : wa.data) +
                   ((b ? wb.row0 : wa.row0) + (src.wok[i] ? row : 0)) * (b ? wb.row_bytes : wa.row_bytes) +
                   16 * (c & 3);
    }
    const int64_t row = stage_row(lane, ra, rb);
    const bool b = lane >> 4;
    src.sok = row < lim;
    src.s = (const uint8_t *)(b ? wb.scale : wa.scale) +
            ((b ? wb.row0 : wa.row0) + (src.sok ? row : 0)) * (b ? wb.scale_cols : wa.scale_cols);
    return src;
}

/* A stage's weights and scale words (constants: issued before
 * griddepcontrol.wait too), then its B fragments (the pack's output). */
template <int NP, int BP = 8>
__device__ __forceinline__ void moe_issue_w(moe_stage<NP, BP> &st, const moe_src &src, int kg, int sbytes, int lane)
{
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int c = lane + 32 * i;
        cp_async16_l2pf(st.w + moe_wofs(c >> 2, c & 3), src.w[i] + kg * 64, src.wok[i]);
    }
    if (sbytes == 4) cp_async<4>(&st.s[lane][0], src.s + kg * 4, src.sok);
    else cp_async<8>(&st.s[lane][0], src.s + kg * 8, src.sok);
}

template <int NP, int BP = 8>
__device__ __forceinline__ void moe_issue_b(moe_stage<NP, BP> &st, const moe_src &src, size_t plane, int kg, int lane)
{
    if (MOE_BR(NP) && (BP == 8 || lane < 4 * BP))
#pragma unroll
        for (int p = 0; p < NP; p++)
#pragma unroll
            for (int u = 0; u < 4; u++)
                cp_async<16>(&st.b[(p * 4 + u) * 4 * BP + lane],
                             (const uint4 *)((const uint32_t *)src.b + p * plane) + kg * 16 + u * 4, src.bok);
}

/* Where lane (g, t) reads its four words (word t of each unit: the layout's 16-byte chunk t, k_fp4_pack) of a
 * stage's row g: moe_wofs(g, t); rows 16T + 8h + g add moe_wofs(16T + 8h, 0). Computed once, outside the loops. */
struct moe_lofs {
    int o;
};
__device__ __forceinline__ moe_lofs moe_lofs_of(int g, int t)
{
    return moe_lofs{moe_wofs(g, t)};
}

/* The lane's words of tile T from a stage (rows g, g + 8). */
template <int NP, int BP = 8>
__device__ __forceinline__ void stage_words(const moe_stage<NP, BP> &st, int T, int g, const moe_lofs &lo, wq16 &o)
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int r = 16 * T + 8 * h + g;
        const uint4 v = *(const uint4 *)(st.w + moe_wofs(16 * T + 8 * h, 0) + lo.o);
        o.q[h][0] = v.x, o.q[h][1] = v.y, o.q[h][2] = v.z, o.q[h][3] = v.w;
        o.s[h][0] = st.s[r][0], o.s[h][1] = st.s[r][1];
    }
}

/* acc += a group's sums of both m tiles (sa, sb) times the activation scales
 * of the lane's two columns. */
__device__ __forceinline__ void group_add(float *acc, const float *sa, const float *sb, float x0, float x1)
{
    acc[0] = __fmaf_rn(sa[0], x0, acc[0]), acc[1] = __fmaf_rn(sa[1], x1, acc[1]);
    acc[2] = __fmaf_rn(sa[2], x0, acc[2]), acc[3] = __fmaf_rn(sa[3], x1, acc[3]);
    acc[4] = __fmaf_rn(sb[0], x0, acc[4]), acc[5] = __fmaf_rn(sb[1], x1, acc[5]);
    acc[6] = __fmaf_rn(sb[2], x0, acc[6]), acc[7] = __fmaf_rn(sb[3], x1, acc[7]);
}

/* A warp's part of K (groups kg0, kg0 + MOE_KST, ... below kg1) for RB row blocks of two m tiles (row block
 * r: wa rows ra + r RS.., wb rows rb + r RS..: tile bases, RS = 32 for the down projection, whose m tiles are
 * rows rb.. and rb + 16.., else 16; rows from lim(r) on are zeros: lim = R, or for gate / up the row block's
 * end if R is past it) and NTT n tiles: acc[r NTT + j][0..3] tile a, [4..7] tile b of row block r and n tile
 * j, column pairs 2t, 2t + 1 (packed rows pc0[j], pc1[j]; scales xs); B rows brow[j] (the lane's pair g).
 * The row blocks' groups go through one ring (RB = 2 wants at least MOE_STAGES - 1 groups a warp: the
 * caller's): row block 1's first loads are in flight while row block 0's last groups are summed; each row's
 * sums are those of RB = 1. SP: the ring's stage type (NP, or MOE_NOB: B from global memory); BP: its pairs
 * (moe_stage; BP < 8: tiles of at most BP pairs; the lanes of pairs g >= BP read pair g % BP's fragments into
 * columns no pair owns, whose sums nobody stores). */
template <int K, int NP, int NTT, int SP, int RB, bool DOWN, int BP = 8>
__device__ __forceinline__ void moe16_part(moe_stage<SP, BP> *ring, const wdesc &wa, int64_t ra, const wdesc &wb,
                                           int64_t rb, int64_t R, const uint32_t *xp, size_t plane, const float *xs,
                                           int nkg, const int *brow, const int *pc0, const int *pc1, int kg0, int kg1,
                                           float4 *stab, float *xring, float (*acc)[8])
{
    static_assert(RB == 1 || RB == 2, "moe16_part: one or two row blocks");
    static_assert(BP == 8 || (BP == 2 && RB == 1 && NTT == 1 && MOE_BR(SP)), "moe16_part: BP 2 on one tile's ring");
    constexpr int NS = moe_ns<BP>();
    /* XR: the activations' group scales through a ring of their own beside the stages (xring: a stage's n
     * tile's 8 pairs' scales, zeros for pairs it lacks - BP 2's other pairs' too, read into columns nobody
     * stores), copied with B and read where the group is summed - with two row blocks a block only: there it
     * takes the down projection from 130 registers to 128 (four blocks an SM instead of three: the experts
     * alone at 64 tokens 5 % faster, s56 xring2/); with one (s56 xring/), ptxas then interleaved the scale FMAs
     * with the MMAs they wait on, 6 % slower at 1-16 tokens, so there they stay loads a group ahead (XPF) */
    constexpr bool XR = MOE_BR(SP) && RB == 2;
    static_assert(!XR || NTT == 1, "moe16_part: the scales' ring holds one n tile's");
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    if (kg0 >= kg1) {
        pdl_start();
        return;
    }
    constexpr int SB = K == RK_MXFP4 ? 4 : 8; /* scale bytes per row and group */
    constexpr int64_t RS = DOWN ? 32 : 16;
    const uint4 *bsrc[NTT]; /* n tile j's B fragments of this lane (null: zeros) */
#pragma unroll
    for (int j = 0; j < NTT; j++) bsrc[j] = brow[j] >= 0 ? (const uint4 *)xp + (size_t)brow[j] * nkg * 16 + t : nullptr;
    auto src_of = [&](int r) { /* row block r's copies (the ring's B copies: zeros from a valid address) */
                               const int64_t a = ra + r * RS;
                               moe_src o = moe_src_of(wa, a, wb, rb + r * RS, DOWN || a + 16 > R ? R : a + 16, lane);
                               o.bok = bsrc[0] != nullptr;
                               o.b = o.bok ? bsrc[0] : (const uint4 *)xp + t;
                               if (XR) o.x = xs + (o.bok ? (size_t)brow[0] * nkg : 0);
                               return o;
    };
    moe_src src = src_of(0);
    auto issue_x = [&](int stage, int kg) { /* lane (g, 0) copies pair g's scale */
                                            if (XR && t == 0) cp_async<4>(xring + stage * 8 + g, src.x + kg, src.bok);
    };
    const int span = MOE_KST * ((kg1 - kg0 + MOE_KST - 1) / MOE_KST); /* a row block's groups, times MOE_KST */
    /* the first NS - 1 groups: their weights before griddepcontrol.wait
     * (the kernel launched before this one packs the activations; the one
     * before that, the plan, has completed), then their B fragments; the
     * first commit group holds every early weight (empty groups keep the
     * count uniform) */
#pragma unroll
    for (int i = 0; i < NS - 1; i++)
        if (kg0 + i * MOE_KST < kg1) moe_issue_w<SP, BP>(ring[i], src, kg0 + i * MOE_KST, SB, lane);
    pdl_start();
#pragma unroll
    for (int i = 0; i < NS - 1; i++) {
        if (kg0 + i * MOE_KST < kg1) {
            moe_issue_b<SP, BP>(ring[i], src, plane, kg0 + i * MOE_KST, lane);
            issue_x(i, kg0 + i * MOE_KST);
        }
        cp_async_commit();
    }
    /* B in the ring (reference numerics' decode): the activations' group scales a group ahead, in registers
     * (loaded where they were used, each group waited for an L2 round trip: ncu's largest stall at batch 16);
     * otherwise in place (the registers cost more than the wait) */
    constexpr bool XPF = MOE_BR(SP) && !XR;
    float xq[NTT][2], xqn[NTT][2];
    auto load_xs = [&](int kg, float(*d)[2]) {
#pragma unroll
        for (int j = 0; j < NTT; j++) {
            d[j][0] = pc0[j] >= 0 ? __ldg(xs + (size_t)pc0[j] * nkg + kg) : 0.0f;
            d[j][1] = pc1[j] >= 0 ? __ldg(xs + (size_t)pc1[j] * nkg + kg) : 0.0f;
        }
    };
    if (XPF) load_xs(kg0, xq);
    const moe_lofs lo = moe_lofs_of(g, t);
    int cur = 0;
    /* row block r's groups (r a constant: its sums into acc[r NTT + j] stay in registers) */
    auto rows = [&](auto rc) {
        constexpr int r = decltype(rc)::value;
        for (int kg = kg0; kg < kg1; kg += MOE_KST) {
            cp_async_wait<NS - 2>(); /* group kg has landed (this lane's copies) */
            __syncwarp();                    /* every lane's, and the stage read last is free */
            const int nx = kg + (NS - 1) * MOE_KST, ns = cur == 0 ? NS - 1 : cur - 1;
            if (nx < kg1) {
                moe_issue_w<SP, BP>(ring[ns], src, nx, SB, lane);
                moe_issue_b<SP, BP>(ring[ns], src, plane, nx, lane);
                issue_x(ns, nx);
            } else if (r + 1 < RB) { /* row block r + 1's first groups */
                if (nx - span == kg0) src = src_of(r + 1);
                moe_issue_w<SP, BP>(ring[ns], src, nx - span, SB, lane);
                moe_issue_b<SP, BP>(ring[ns], src, plane, nx - span, lane);
                issue_x(ns, nx - span);
            }
            cp_async_commit();
            /* the next group's activation scales: this row block's next, or the next row block's first */
            const bool more = kg + MOE_KST < kg1, pf = more || r + 1 < RB;
            if (XPF && pf) load_xs(more ? kg + MOE_KST : kg0, xqn);
            const moe_stage<SP, BP> &st = ring[cur];
            /* MXFP4's E8M0 scales, decoded once a row for the warp (the four lanes of a row each decoded its 16, 48
             * instructions a group): lane (g, t) decodes stage row g + 8t's word into the warp's table stab; then
             * each reads its rows g, g + 8 (tile a), 16 + g, 24 + g (tile b). The loop's __syncwarp above keeps the
             * next group's writes after these reads. Same values as e8m0_byte in place. */
            float4 sc[4];
            if (K == RK_MXFP4) {
                const uint32_t w = st.s[g + 8 * t][0];
                stab[g + 8 * t] = make_float4(e8m0_byte(w, 0), e8m0_byte(w, 1), e8m0_byte(w, 2), e8m0_byte(w, 3));
                __syncwarp();
#pragma unroll
                for (int r = 0; r < 4; r++) sc[r] = stab[8 * r + g];
            }
            wq16 wa_, wb_;
            stage_words<SP, BP>(st, 0, g, lo, wa_);
            stage_words<SP, BP>(st, 1, g, lo, wb_);
            uint4 b[NTT][NP][4];
#pragma unroll
            for (int j = 0; j < NTT; j++)
#pragma unroll
                for (int p = 0; p < NP; p++)
#pragma unroll
                    for (int u = 0; u < 4; u++)
                        b[j][p][u] =
                            MOE_BR(SP) ? st.b[(p * 4 + u) * 4 * BP + (lane & (4 * BP - 1))]
                            : bsrc[j]  ? __ldg((const uint4 *)((const uint32_t *)bsrc[j] + p * plane) + kg * 16 + u * 4)
                                       : make_uint4(0, 0, 0, 0);
            float sa[NTT][4], sb4[NTT][4];
#pragma unroll
            for (int j = 0; j < NTT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) sa[j][e] = sb4[j][e] = 0.0f;
            group16<K, NP, NTT>(wa_, sc, b, t, sa);
            group16<K, NP, NTT>(wb_, sc + 2, b, t, sb4);
            if constexpr (XR) {
                const float2 x2 = *(const float2 *)&xring[cur * 8 + 2 * t];
                xq[0][0] = x2.x, xq[0][1] = x2.y;
            } else if (!XPF)
                load_xs(kg, xq);
#pragma unroll
            for (int j = 0; j < NTT; j++) {
                group_add(acc[r * NTT + j], sa[j], sb4[j], xq[j][0], xq[j][1]);
                if (XPF && pf) xq[j][0] = xqn[j][0], xq[j][1] = xqn[j][1];
            }
            cur = cur == NS - 1 ? 0 : cur + 1;
        }
    };
    rows(std::integral_constant<int, 0>());
    if constexpr (RB == 2) rows(std::integral_constant<int, 1>());
    cp_async_wait<0>();
}

/* Dynamic shared memory of the F16 kernels: a ring per warp (stage type SP), then (MXFP4) a warp's table of
 * a group's decoded scales (32 rows x 4 units), then (B in the ring) a warp's ring of activation scales
 * (moe16_part's XR: 8 a stage). */
template <int SP, int BP = 8> constexpr size_t moe16_rings(void)
{
    return (size_t)GM_WARPS * moe_ns<BP>() * sizeof(moe_stage<SP, BP>);
}
template <int K> constexpr size_t moe16_stab(void)
{
    return K == RK_MXFP4 ? (size_t)GM_WARPS * 32 * sizeof(float4) : 0;
}
template <int K, int SP, int BP = 8> constexpr size_t moe16_smem(void)
{
    return moe16_rings<SP, BP>() + moe16_stab<K>() +
           (MOE_BR(SP) ? (size_t)GM_WARPS * moe_ns<BP>() * 8 * sizeof(float) : 0);
}

/* The stage type of k_moe16<K, NP, DOWN, NTT>: B in the ring for one n tile and one plane. */
#define MOE_SP(NP, NTT) ((NTT) == 1 ? (NP) : MOE_NOB)

/* The total's factor: 2^6 (the E4M3 route) and NVFP4's global scale. */
template <int K> __device__ __forceinline__ float total16(const wdesc &w)
{
    return K == RK_NVFP4 ? 64.0f * w.scale2 : 64.0f;
}

/* The F16 path's two MMA passes, as k_moe_gate_up and k_moe_down: gate and
 * up (block: tile, 16 rows of w1 (wt) and the same of w3 (wt + E); the
 * activations are token rows, list / kk) or, DOWN, the down projection
 * (block: tile, 32 rows of w2 (wt): two m tiles; the activations are M's
 * pair rows). R: the output's rows (I, or D), Kd: the K dimension. A tile
 * holds up to 8 NTT pairs: NTT n tiles of 8 (prefill: each weight decoded
 * once for them all); a pair's sums are the same for every NTT. RB: row blocks a block (moe16_rb; the same
 * sums). BP: the ring's pairs (moe16_bp2: 2, tiles of at most 2 pairs). The reference decode kernels (one
 * activation part, one n tile) run under launch bounds of four blocks an SM (128 registers): with the layout's
 * one 16-byte load a row and no minimum, ptxas gave the one-row-block ones 102-104 registers and issued the second
 * tile's loads after the first tile's MMAs (batch 1 3 % slower alone, s71 moew/), and the two-row-block ones
 * 132-134 (three blocks an SM); the others give no minimum. With the bounds: the experts alone even at 1 / 4
 * tokens, 2.3-2.6 % faster from 8, decode at batch 16 2.1 % faster (s72, bench/results/2026-12-06-s71/moew2/). */
template <int K, int NP, bool DOWN, int NTT, int RB = 1, int BP = 8>
__global__ void __launch_bounds__(32 * GM_WARPS, NP == 1 && NTT == 1 ? 4 : 0)
    k_moe16(const wdesc *wt, int E, const uint32_t *xp, size_t plane, const float *xs, int Kd, const int4 *tiles,
            const int *ntiles, int t0, const int *list, int kk, int R, const float *wts, float limit, bool reference,
            float *out)
{
    constexpr int SP = MOE_SP(NP, NTT);
    /* the grid: row blocks along x, tiles along y (from t0): blocks launched together read neighbouring
     * rows of one expert (2-4 % faster than one row block of many experts) */
    MOE_TRACE_T0;
    const int bt = t0 + (int)blockIdx.y, brb = (int)blockIdx.x;
    /* one row block: the tile read with the count, not after it - one round trip fewer before the first weight
     * copy (ncu put 6-10 % of the warps' samples in this prologue, s56 ncu/; -0.3 / -0.5 % a step at batch 1 / 4,
     * s57 prologue/). tiles holds maxt entries and bt < maxt (the grid), so the read is in bounds; the exit tests
     * both (a tile holds 1 pair or more) so that neither load waits for the other. Two row blocks keep the read
     * after the count: there ptxas spilt 4 bytes more for it and batch 16 / 64 were 0.3 / 0.4 % slower. */
    int4 tl;
    if (RB == 1) {
        tl = tiles[bt];
        if (bt >= *ntiles || tl.z <= 0) return;
    } else {
        if (bt >= *ntiles) return;
        tl = tiles[bt];
    }
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const wdesc a = wt[tl.x], c = DOWN ? a : wt[E + tl.x];
    const int64_t rb = (int64_t)brb * RB * (DOWN ? 32 : 16);
    const int nkg = Kd / 128;
    int brow[NTT], pc0[NTT], pc1[NTT]; /* n tile j: the activation rows of pairs g, 2t, 2t + 1 */
#pragma unroll
    for (int j = 0; j < NTT; j++) {
        const int f = tl.y + 8 * j, nj = tl.z - 8 * j;
        brow[j] = g < nj ? list[f + g] / kk : -1;
        pc0[j] = 2 * t < nj ? list[f + 2 * t] / kk : -1;
        pc1[j] = 2 * t + 1 < nj ? list[f + 2 * t + 1] / kk : -1;
    }
    static_assert(MOE_KST == GM_WARPS, "k_moe16: warp w walks K's part w");
    const int wid = threadIdx.x >> 5, kg0 = wid, kg1 = nkg; /* part wid of K (MOE_KST) */
    float acc[RB * NTT][8];
#pragma unroll
    for (int j = 0; j < RB * NTT; j++)
#pragma unroll
        for (int i = 0; i < 8; i++) acc[j][i] = 0.0f;
    extern __shared__ uint4 moe_dyn[];
    moe_stage<SP, BP> *ring = (moe_stage<SP, BP> *)moe_dyn + wid * moe_ns<BP>();
    float4 *stab = (float4 *)(moe_dyn + moe16_rings<SP, BP>() / sizeof(uint4)) + wid * 32;
    float *xring = (float *)((char *)moe_dyn + moe16_rings<SP, BP>() + moe16_stab<K>()) + wid * moe_ns<BP>() * 8;
    /* gate / up: rows past I are zeros; down: D is a multiple of 128, both m tiles whole */
    moe16_part<K, NP, NTT, SP, RB, DOWN, BP>(ring, a, rb, c, DOWN ? rb + 16 : rb, R, xp, plane, xs, nkg, brow, pc0, pc1,
                                             kg0, kg1, stab, xring, acc);
    /* the sums through the rings' shared memory, once every warp is done with its ring: 4 KB less a block
     * than a static buffer (with one, four blocks would need exactly the SM's 228 KB, the driver's 1 KB a
     * block included) */
    static_assert(GM_WARPS * RB * NTT * 8 * 32 * sizeof(float) <= moe16_rings<SP, BP>(),
                  "k_moe16: the sums fit the rings");
    __syncthreads();
    if (!warps_reduce_in<RB * NTT>(acc, (float(*)[RB * NTT * 8][32]) moe_dyn)) return;
#pragma unroll
    for (int r = 0; r < RB; r++)
#pragma unroll
        for (int j = 0; j < NTT; j++) {
            if (tl.z <= 8 * j) break;
            const int4 tj = make_int4(tl.x, tl.y + 8 * j, tl.z - 8 * j < 8 ? tl.z - 8 * j : 8, 0);
            const int64_t rr = rb + r * (DOWN ? 32 : 16);
            if (DOWN)
                down_out(acc[r * NTT + j], total16<K>(a), tj, rr, g, t, list, R, reference, out);
            else
                gate_up_out(acc[r * NTT + j], total16<K>(a), total16<K>(c), tj, rr, g, t, list, R, wts, limit,
                            reference, out);
        }
    MOE_TRACE_REC(DOWN ? 2u : 1u);
}

/* ==== Prefill: the F16 path's sums on wgmma (k_moe_wg) ====================
 *
 * At prefill k_moe16 decodes each FP4 weight once per 8 or 16 pairs and
 * feeds mma.sync m16n8k16 (~85 TFLOP/s at a 4,096-token prompt). wgmma takes
 * its A operand from registers in mma.sync's fragment layout and gives the
 * same bits for the same chain of k16 steps (measured on H200: F16 operands,
 * E2M1 and wide-range values, chains of 1, 2 and 8 steps, ~6.5 M outputs,
 * none differs), so a block here makes each pair's output exactly as
 * k_moe16 does - the same units, the same fresh accumulator per unit
 * (MXFP4; NVFP4: one per group), the same FMAs with the same scales in the
 * same order, K in the same four parts added in part order - with the
 * decoded weights feeding N pairs at once.
 *
 * Block: WGS warpgroups (moe_wgs), 64 weight rows each (gate / up: warp w's
 * fragment rows g and g + 8 are w1's and w3's row 8w + g of the warpgroup's
 * 32, so SwiGLU stays in the thread; down: 64 rows of w2) by a tile of N
 * pairs; all of K, through a ring of stages filled by cp.async (every
 * thread: the weight rows as k_moe16's ring has them, the pairs' packed rows
 * into wgmma's 128-byte swizzle, the pairs' scales). The activations are
 * packed per row in the k16 steps' order (k_moe_pack16<.., WGL>). A group
 * takes ~440 instructions a warp (160 of them the units' FMAs, which the
 * bits require) against 8 wgmma: issue and latency bound together (ncu: 44-52 %
 * issue slots busy, two warps a scheduler), 4,096-token prefill experts
 * 121 -> ~70 ms (8 Flash layers; bench/results/2026-11-30-prefill-moe-wg/). */
template <int NP, int N, int WGS> struct mw_layout {
    static constexpr int B = NP * 2 * N * 128; /* [plane][half][N pairs][128 bytes] */
    static constexpr int W = 64 * WGS * W_ROW; /* 64 weight rows a warpgroup */
    static constexpr int S = 64 * WGS * 8;     /* their scale words */
    static constexpr int X = N * 4;            /* the pairs' activation scales */
    static constexpr int STAGE = (B + W + S + X + 1023) / 1024 * 1024;
    /* one warpgroup: two blocks an SM */
    static constexpr int STAGES = WGS == 2 ? (NP == 1 ? 6 : 4) : (NP == 1 ? 4 : 3);
    static constexpr size_t SMEM = (size_t)STAGES * STAGE + 1024;
};

/* Gate and up (DOWN false: block (tile, 64 rows of w1 and of w3), into M) or
 * down (block (tile, 128 rows of w2), into Y); arguments as k_moe16's. */
template <int K, int NP, bool DOWN, int N, int WGS>
__global__ void __launch_bounds__(128 * WGS, WGS == 1 && NP == 1 ? 2 : 1)
    k_moe_wg(const wdesc *wt, int E, const uint32_t *xp, size_t plane, const float *xs, int Kd, const int4 *tiles,
             const int *ntiles, const int *list, int kk, int R, const float *wts, float limit, bool reference,
             float *out)
{
    using L = mw_layout<NP, N, WGS>;
    constexpr int NT = 128 * WGS;             /* threads */
    constexpr int S = L::STAGES, R2 = N / 2;  /* accumulators a thread */
    constexpr int SB = K == RK_MXFP4 ? 4 : 8; /* scale bytes per row and group */
    constexpr int BC = NP * N * 16 / NT;      /* B chunks a thread and stage */
    if ((int)blockIdx.x >= *ntiles) return;
    const int tid = threadIdx.x, lane = tid & 31, wid = (tid >> 5) & 3, q = tid >> 7, g = lane >> 2, t = lane & 3;
    const int4 tl = tiles[blockIdx.x];
    const wdesc a = wt[tl.x], c = DOWN ? a : wt[E + tl.x];
    const int nkg = Kd / 128;
    extern __shared__ uint8_t mw_dyn[];
    /* the ring from the first 1,024-byte boundary (indexing mw_dyn keeps the pointers in shared space) */
    uint8_t *sm = mw_dyn + ((1024u - (unsigned)((uintptr_t)mw_dyn & 1023u)) & 1023u);
    /* this thread's copies, fixed for the loop: weight row sr (bytes 32 (tid & 1) .. + 31 of each group) */
    const int sr = tid >> 1, sq = sr >> 6, sw = (sr >> 4) & 3, sf = sr & 15;
    const int64_t wrow = DOWN ? (int64_t)blockIdx.y * (64 * WGS) + 64 * sq + 16 * sw + sf
                              : (int64_t)blockIdx.y * (32 * WGS) + 32 * sq + 8 * sw + (sf & 7);
    const wdesc &wm = !DOWN && (sf >> 3) ? c : a;
    const bool wok = wrow < R;
    const char *wsrc = (const char *)wm.data + (wm.row0 + (wok ? wrow : 0)) * wm.row_bytes + 32 * (tid & 1);
    /* the scale words of row tid (threads 0..127), as the same mapping gives it */
    const int64_t srow = DOWN ? (int64_t)blockIdx.y * (64 * WGS) + 64 * (tid >> 6) + 16 * ((tid >> 4) & 3) + (tid & 15)
                              : (int64_t)blockIdx.y * (32 * WGS) + 32 * (tid >> 6) + 8 * ((tid >> 4) & 3) + (tid & 7);
    const wdesc &smx = !DOWN && ((tid >> 3) & 1) ? c : a;
    const bool sok = tid < 64 * WGS && srow < R;
    const uint8_t *ssrc = (const uint8_t *)smx.scale + (smx.row0 + (sok ? srow : 0)) * smx.scale_cols;
    /* B: chunk i of BC: plane, pair p, 16-byte chunk c16 of the pair's 256 bytes per group: its source row
     * (group 0) and its place in a stage */
    const uint32_t *bsrc[BC];
    int bdst[BC];
    unsigned bok = 0;
#pragma unroll
    for (int i = 0; i < BC; i++) {
        const int ci = tid + NT * i, pl = ci / (N * 16), p = (ci >> 4) % N, c16 = ci & 15;
        const int brow = p < tl.z ? list[tl.y + p] / kk : -1;
        bok |= (brow >= 0 ? 1u : 0u) << i;
        bsrc[i] = xp + pl * plane + (size_t)(brow >= 0 ? brow : 0) * (Kd / 2) + c16 * 4;
        bdst[i] = ((pl * 2 + (c16 >> 3)) * N + p) * 128 + (((c16 & 7) ^ (p & 7)) << 4);
    }
    const int xrow = tid < N && tid < tl.z ? list[tl.y + tid] / kk : -1;
    auto stage = [&](int s) { return sm + (size_t)s * L::STAGE; };
    auto issue_w = [&](int s, int kg) {
        uint8_t *W = stage(s) + L::B;
        cp_async<16>(W + sr * W_ROW + 32 * (tid & 1), wsrc + (size_t)kg * 64, wok);
        cp_async<16>(W + sr * W_ROW + 32 * (tid & 1) + 16, wsrc + (size_t)kg * 64 + 16, wok);
        if (tid < 64 * WGS) {
            uint8_t *Sd = stage(s) + L::B + L::W + tid * 8;
            if (SB == 4)
                cp_async<4>(Sd, ssrc + (size_t)kg * 4, sok);
            else
                cp_async<8>(Sd, ssrc + (size_t)kg * 8, sok);
        }
    };
    auto issue_b = [&](int s, int kg) {
        uint8_t *Bs = stage(s);
#pragma unroll
        for (int i = 0; i < BC; i++) cp_async<16>(Bs + bdst[i], bsrc[i] + (size_t)kg * 64, (bok >> i) & 1u);
        if (tid < N)
            cp_async<4>(Bs + L::B + L::W + L::S + 4 * tid, xs + (size_t)(xrow >= 0 ? xrow : 0) * nkg + kg, xrow >= 0);
    };
    /* the groups in k_moe16's parts (MOE_KST), part by part: position i holds group moe_part_group(i) */
#pragma unroll
    for (int i = 0; i < S - 1; i++)
        if (i < nkg) issue_w(i, moe_part_group(i, nkg));
    pdl_start();
#pragma unroll
    for (int i = 0; i < S - 1; i++) {
        if (i < nkg) issue_b(i, moe_part_group(i, nkg));
        cp_async_commit();
    }
    float tot[R2], acc[R2];
#pragma unroll
    for (int j = 0; j < R2; j++) tot[j] = acc[j] = 0.0f;
    /* K's four parts (k_moe16's warps), added in part order: tot = part 0, then + each (empty ones add 0);
     * pend: the position where the part ends */
    int part = 0, pend = (nkg + MOE_KST - 1) / MOE_KST;
    auto fold = [&]() {
#pragma unroll
        for (int j = 0; j < R2; j++) tot[j] = part == 0 ? acc[j] : tot[j] + acc[j], acc[j] = 0.0f;
        part++;
        pend += (nkg - part + MOE_KST - 1) / MOE_KST;
    };
    while (part < MOE_KST && pend == 0) fold();
    const int r0 = 64 * q + 16 * wid + g; /* the thread's fragment rows in a stage: r0, r0 + 8 */
    int cur = 0, nxt = S - 1;             /* the ring's stages of groups kg and kg + S - 1 */
    for (int kg = 0; kg < nkg; kg++) {    /* kg: the position */
        cp_async_wait<S - 2>();
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); /* the copies, for wgmma's reads */
        __syncthreads(); /* every thread's copies of position kg; every warpgroup past kg - 1 */
        if (kg + S - 1 < nkg) {
            const int ng = moe_part_group(kg + S - 1, nkg);
            issue_w(nxt, ng);
            issue_b(nxt, ng);
        }
        cp_async_commit();
        const uint8_t *st = stage(cur);
        wq16 w;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const uint8_t *rw = st + L::B + (r0 + 8 * h) * W_ROW;
            const uint4 v = *(const uint4 *)(rw + 16 * t); /* word t of each unit (k_fp4_pack) */
            w.q[h][0] = v.x, w.q[h][1] = v.y, w.q[h][2] = v.z, w.q[h][3] = v.w;
            const uint32_t *sw2 = (const uint32_t *)(st + L::B + L::W + (r0 + 8 * h) * 8);
            w.s[h][0] = sw2[0], w.s[h][1] = sw2[1];
        }
        const uint32_t sb = (uint32_t)__cvta_generic_to_shared(st);
        const float *xsc = (const float *)(st + L::B + L::W + L::S);
        /* MXFP4: units in two halves of two (two accumulators in flight: four spilled registers), each unit's
         * sum times its scale into sum in unit order; NVFP4: one accumulator for the group's chain */
        float sum[R2];
        constexpr int NH = K == RK_MXFP4 ? 2 : 1, UH = 4 / NH, ND = K == RK_MXFP4 ? 2 : 1;
#pragma unroll
        for (int hh = 0; hh < NH; hh++) {
            float d[ND][R2];
#pragma unroll
            for (int uu = 0; uu < UH; uu++) {
                const int u = UH * hh + uu;
                uint32_t ae[4], ao[4];
                unit16<K>(w, u, t, ae, ao);
                const int du = K == RK_MXFP4 ? uu : 0;
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                for (int pl = 0; pl < NP; pl++) {
                    /* step 2u (even) and 2u + 1 (odd): half u / 2, 32-byte steps */
                    const uint64_t bd = wg_desc(sb + (uint32_t)((pl * 2 + (u >> 1)) * N * 128)) + 4 * (u & 1);
                    const int first = pl == 0 && (K == RK_MXFP4 || u == 0);
                    wg_k16<N, false>(d[du], ae, bd, !first);
                    wg_k16<N, false>(d[du], ao, bd + 2, 1);
                }
            }
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
            for (int i = 0; i < ND; i++)
#pragma unroll
                for (int j = 0; j < R2; j++) asm volatile("" : "+f"(d[i][j])::"memory");
#pragma unroll
            for (int j = 0; j < R2; j++) { /* d[.][4 c + e]: row g (+ 8 for e >= 2), pair 8 c + 2 t + (e & 1) */
                if (K == RK_MXFP4) {
                    if (hh == 0) sum[j] = 0.0f;
#pragma unroll
                    for (int uu = 0; uu < UH; uu++) {
                        const int u = UH * hh + uu;
                        sum[j] = __fmaf_rn(d[uu][j], e8m0_byte(w.s[(j & 2) ? 1 : 0][0], u), sum[j]);
                    }
                } else {
                    sum[j] = 0.0f;
                    sum[j] += d[0][j];
                }
            }
        }
#pragma unroll
        for (int j = 0; j < R2; j++) acc[j] = __fmaf_rn(sum[j], xsc[8 * (j >> 2) + 2 * t + (j & 1)], acc[j]);
        while (part < MOE_KST && kg + 1 == pend) fold();
        cur = cur == S - 1 ? 0 : cur + 1;
        nxt = nxt == S - 1 ? 0 : nxt + 1;
    }
    cp_async_wait<0>();
    /* tot[4 c + e]: pair 8 c + 2 t + (e & 1); row g (e < 2) and g + 8 of the warp's 16 */
#pragma unroll
    for (int cc = 0; cc < N / 8; cc++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int p = 8 * cc + 2 * t + (e & 1);
            if (p >= tl.z) continue;
            if (DOWN) {
                const int64_t r = (int64_t)blockIdx.y * (64 * WGS) + 64 * q + 16 * wid + g + ((e & 2) ? 8 : 0);
                if (r < R) down_store(tot[4 * cc + e], total16<K>(a), r, list[tl.y + p], R, reference, out);
            } else if (e < 2) {
                const int64_t r = (int64_t)blockIdx.y * (32 * WGS) + 32 * q + 8 * wid + g;
                if (r < R)
                    swiglu_out(tot[4 * cc + e], tot[4 * cc + e + 2], total16<K>(a), total16<K>(c), r, list[tl.y + p], R,
                               wts, limit, reference, out);
            }
        }
}

/* ==== The W4A8 route (--moe-backend w4a8: reference numerics, MXFP4) =====
 *
 * k_moe16's loop is bound by its instruction count, not by bytes in flight:
 * 427 SASS instructions per warp and 2 KB group (64 of them E4M3 -> F16
 * conversions, 16 HMMA) at 57 % issue utilisation gave 50 % of DRAM
 * bandwidth at batch 16 (ncu); more warps or contiguous weight rows moved it
 * by 2-4 %. The E4M3 bytes of e2m1_e4m3 (x 2^-6, exact) are FP8 tensor-core
 * operands as they are - but on sm_90 mma.sync E4M3 is lowered to F16 HMMA
 * plus the same conversions; only wgmma reaches the FP8 tensor cores.
 *
 * So a block is a warpgroup (four warps, or KS = 2 warpgroups taking halves
 * of K, added half 0 + half 1): each warp keeps k_moe16's rows (two m tiles
 * of 16: gate and up rows of one index, or 32 down rows) and its own ring of
 * weight stages; one wgmma m64n8k32 per unit (32 columns, one E8M0 scale)
 * and tile takes the four warps' A fragments from registers (the E4M3 words,
 * as mma.sync's m16n8k32 layout: even codes k slots 4t.., odd codes 16 + 4t..)
 * and B, the tile's activations, from shared memory, loaded once for all of
 * K: per unit two 8 x 16-byte core matrices (E, O columns), no swizzle. Each
 * unit's sum is a fresh accumulator (scale-d 0) added times its E8M0 scale in
 * FP32, as group16 does. The bits differ from k_moe16 (the tensor core adds
 * a unit's 32 exact products its own way): an explicit backend choice.
 *
 * Measured (H200, bench_kernels, Flash experts): the same speed as k_moe16 at
 * batch 8-16, 3 % faster at 64, 16 % slower at 1 (a warp takes all of its K
 * half: fewer warps in flight); 4k-token prefill 3-8 % faster. The loop is
 * still ~354 instructions a group: E2M1 -> E4M3 logic (80), E8M0 decode and
 * the scale FMAs (88), moves into the QGMMA operand registers. One warpgroup
 * a block (KS = 1) measured 10 % slower; two commit groups a K group (FMAs of
 * units 0-1 under units 2-3's MMAs) changed nothing. */
#define W8_KMAX 4096 /* the largest K (D or I) whose B fits the block's shared memory */

__device__ __forceinline__ uint64_t w8_desc(const void *smem)
{
    /* start >> 4; both byte offsets 128 (the K neighbour core matrix; N = 8 has one along N) */
    const uint64_t a = (uint64_t)(__cvta_generic_to_shared(smem) >> 4) & 0x3fffu;
    return a | (uint64_t)(128 >> 4) << 16 | (uint64_t)(128 >> 4) << 32;
}

__device__ __forceinline__ void w8_mma(float *d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint64_t bd)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1;\n}\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(bd));
}

template <int KS, bool DOWN>
__global__ void __launch_bounds__(128 * KS, 4 / KS)
    k_moe8w(const wdesc *wt, int E, const uint8_t *xp, const float *xs, int Kd, const int4 *tiles, const int *ntiles,
            const int *list, int kk, int R, const float *wts, float limit, bool reference, float *out)
{
    if ((int)blockIdx.x >= *ntiles) return;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int wg = threadIdx.x >> 7, wid = (threadIdx.x >> 5) & 3; /* warpgroup (K half), warp in it */
    const int4 tl = tiles[blockIdx.x];
    const wdesc a = wt[tl.x], c = DOWN ? a : wt[E + tl.x];
    /* the warp's rows: gate / up rows ra.. of both (64 a block), or down rows ra.., ra + 16.. (128 a block) */
    const int64_t ra = DOWN ? (int64_t)blockIdx.y * 128 + 32 * wid : (int64_t)blockIdx.y * 64 + 16 * wid;
    const int64_t rb = DOWN ? ra + 16 : ra, lim = DOWN ? R : (ra + 16 <= R ? ra + 16 : R);
    const int nkg = Kd / 128, kg0 = nkg * wg / KS, kg1 = nkg * (wg + 1) / KS;
    const int pc0 = 2 * t < tl.z ? list[tl.y + 2 * t] / kk : -1,
              pc1 = 2 * t + 1 < tl.z ? list[tl.y + 2 * t + 1] / kk : -1;
    extern __shared__ uint4 moe_dyn[];
    uint8_t *bs = (uint8_t *)moe_dyn; /* B: [kg][unit][E | O][n 8][16 bytes] */
    moe_stage<MOE_A8> *ring = (moe_stage<MOE_A8> *)(bs + (size_t)nkg * 1024) + (wg * 4 + wid) * MOE_STAGES;
    const moe_src src = moe_src_of(a, ra, c, rb, lim, lane);
    /* the first groups' weights (constants) before griddepcontrol.wait, then B: thread x copies pair n = x % 8's
     * 16-byte chunks x / 8, x / 8 + 16 KS, ... (a chunk: its kg, unit and E | O) */
#pragma unroll
    for (int i = 0; i < MOE_STAGES - 1; i++)
        if (kg0 + i < kg1) moe_issue_w<MOE_A8>(ring[i], src, kg0 + i, 4, lane);
    pdl_start();
    {
        const int n = threadIdx.x & 7, brow = n < tl.z ? list[tl.y + n] / kk : -1;
        const uint8_t *from = xp + (size_t)(brow >= 0 ? brow : 0) * Kd;
        for (int ch = threadIdx.x >> 3; ch < nkg * 8; ch += 16 * KS)
            cp_async<16>(bs + (size_t)ch * 128 + n * 16, from + (size_t)ch * 16, brow >= 0);
    }
    cp_async_commit();
#pragma unroll
    for (int i = 1; i < MOE_STAGES - 1; i++) cp_async_commit();
    /* B (with the first weights) landed, every thread's, visible to the tensor cores (the async proxy);
     * outside the loop: a warpgroup may have no groups (K of one 128-column group) */
    cp_async_wait<MOE_STAGES - 2>();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const moe_lofs lo = moe_lofs_of(g, t);
    int cur = 0;
    for (int kg = kg0; kg < kg1; kg++) {
        cp_async_wait<MOE_STAGES - 2>(); /* group kg has landed (this lane's copies) */
        __syncwarp();
        const int nx = kg + MOE_STAGES - 1, ns = cur == 0 ? MOE_STAGES - 1 : cur - 1;
        if (nx < kg1) moe_issue_w<MOE_A8>(ring[ns], src, nx, 4, lane);
        cp_async_commit();
        wq16 wa_, wb_;
        stage_words<MOE_A8>(ring[cur], 0, g, lo, wa_);
        stage_words<MOE_A8>(ring[cur], 1, g, lo, wb_);
        float da[4][4], db[4][4];
        uint32_t fa[4][4], fb[4][4]; /* the A fragments, all before the fence */
#pragma unroll
        for (int u = 0; u < 4; u++) {
            fp4_eo(wa_.q[0][u], fa[u][0], fa[u][2]), fp4_eo(wa_.q[1][u], fa[u][1], fa[u][3]);
            fp4_eo(wb_.q[0][u], fb[u][0], fb[u][2]), fp4_eo(wb_.q[1][u], fb[u][1], fb[u][3]);
        }
        const uint64_t bd0 = w8_desc(bs + (size_t)kg * 1024);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int u = 0; u < 4; u++) {
            w8_mma(da[u], fa[u][0], fa[u][1], fa[u][2], fa[u][3], bd0 + u * (256 >> 4));
            w8_mma(db[u], fb[u][0], fb[u][1], fb[u][2], fb[u][3], bd0 + u * (256 >> 4));
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
        for (int u = 0; u < 4; u++) /* the results exist only after the wait */
#pragma unroll
            for (int e = 0; e < 4; e++) asm volatile("" : "+f"(da[u][e]), "+f"(db[u][e])::"memory");
        const float x0 = pc0 >= 0 ? __ldg(xs + (size_t)pc0 * nkg + kg) : 0.0f;
        const float x1 = pc1 >= 0 ? __ldg(xs + (size_t)pc1 * nkg + kg) : 0.0f;
        float sa[4] = {0, 0, 0, 0}, sb4[4] = {0, 0, 0, 0};
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const float s0 = e8m0_byte(wa_.s[0][0], u), s1 = e8m0_byte(wa_.s[1][0], u);
            const float t0 = e8m0_byte(wb_.s[0][0], u), t1 = e8m0_byte(wb_.s[1][0], u);
            sa[0] = __fmaf_rn(da[u][0], s0, sa[0]), sa[1] = __fmaf_rn(da[u][1], s0, sa[1]);
            sa[2] = __fmaf_rn(da[u][2], s1, sa[2]), sa[3] = __fmaf_rn(da[u][3], s1, sa[3]);
            sb4[0] = __fmaf_rn(db[u][0], t0, sb4[0]), sb4[1] = __fmaf_rn(db[u][1], t0, sb4[1]);
            sb4[2] = __fmaf_rn(db[u][2], t1, sb4[2]), sb4[3] = __fmaf_rn(db[u][3], t1, sb4[3]);
        }
        group_add(acc, sa, sb4, x0, x1);
        cur = cur == MOE_STAGES - 1 ? 0 : cur + 1;
    }
    cp_async_wait<0>();
    if (KS == 2) { /* half 1's sums to half 0 through shared memory (B's, no longer read): half 0 + half 1 */
        __syncthreads();
        float *red = (float *)moe_dyn + (size_t)(wid * 32 + lane) * 8;
        if (wg == 1)
#pragma unroll
            for (int e = 0; e < 8; e++) red[e] = acc[e];
        __syncthreads();
        if (wg == 1) return;
#pragma unroll
        for (int e = 0; e < 8; e++) acc[e] += red[e];
    }
    if (DOWN)
        down_out(acc, 64.0f, tl, ra, g, t, list, R, reference, out);
    else
        gate_up_out(acc, 64.0f, 64.0f, tl, ra, g, t, list, R, wts, limit, reference, out);
}

int cuda_moe_a8_kmax(void)
{
    return W8_KMAX;
}

template <int KS> constexpr size_t moe8w_smem(int K)
{
    return (size_t)K / 128 * 1024 + (size_t)KS * 4 * MOE_STAGES * sizeof(moe_stage<MOE_A8>);
}
#define W8_KS 2 /* warpgroups a block (halves of K): one warpgroup measured 10 % slower at batch 8-64 */

/* FP4 experts whose rows are whole aligned 16-byte chunks and whose K
 * dimensions are whole 128-column groups (the weights' format and shape
 * only): MOE_F16 when their scales are aligned for k_moe_f16's word loads
 * too, else MOE_BF16; MOE_NONE for the CUDA-core kernels. DSV4_CUDA_MMA=0
 * turns the tensor cores off, DSV4_MOE_MMA=bf16 picks the BF16 path (the
 * benchmarks' baseline). */
int cuda_moe_mma_eligible(const dsv4_moe_params *p)
{
    if (!cuda_mma_on() || p->n_experts > MAX_EP) return MOE_NONE;
    const dsv4_w *w1 = &p->w1[p->expert_hi > p->expert_lo ? p->expert_lo : 0];
    if (w1->fmt != DSV4_WF_MXFP4 && w1->fmt != DSV4_WF_NVFP4) return MOE_NONE;
    if (p->dim % 128 || p->inter % 128) return MOE_NONE;
    const char *env = getenv("DSV4_MOE_MMA");
    bool f16 = !(env && !strcmp(env, "bf16"));
    const size_t sal = w1->fmt == DSV4_WF_MXFP4 ? 4 : 8; /* the scale words of a 128-column group */
    const bool part = p->expert_hi > p->expert_lo; /* expert parallelism: this rank's experts only */
    for (int e = part ? p->expert_lo : 0; e < (part ? p->expert_hi : p->n_experts); e++) {
        const dsv4_w *ws[3] = {&p->w1[e], &p->w3[e], &p->w2[e]};
        for (int i = 0; i < 3; i++) {
            if (ws[i]->fmt != w1->fmt || (uintptr_t)ws[i]->dev % 16 || !ws[i]->dev_scale) return MOE_NONE;
            const wdesc d = wdesc_of(ws[i]);
            if ((uintptr_t)ws[i]->dev_scale % sal || d.scale_cols % (int64_t)sal) f16 = false;
        }
    }
    return f16 ? MOE_F16 : MOE_BF16;
}

template <int K, int NP>
static void moe_mma_run(cudaStream_t st, const wdesc *tab, int E, const uint2 *xp, size_t xplane, uint2 *mp,
                        size_t mplane, const int4 *tiles, const int *ntiles, const int *list, int maxt, int kk, int D,
                        int I, int nk, const float *wts, float limit, bool reference, float *M, float *Y)
{
    k_moe_gate_up<K, NP><<<dim3((unsigned)maxt, (unsigned)((I + 15) / 16)), 32 * GM_WARPS, 0, st>>>(
        tab, tab + E, xp, xplane, D, tiles, ntiles, list, kk, I, wts, limit, reference, M);
    CK_LAUNCH();
    const int64_t w2 = (int64_t)nk * (I / 128);
    if (NP == 1) k_moe_pack<true><<<(unsigned)((w2 + 7) / 8), 256, 0, st>>>(M, I, nk, I, mp, mplane);
    else k_moe_pack<false><<<(unsigned)((w2 + 7) / 8), 256, 0, st>>>(M, I, nk, I, mp, mplane);
    CK_LAUNCH();
    k_moe_down<K, NP><<<dim3((unsigned)maxt, (unsigned)((D + 31) / 32)), 32 * GM_WARPS, 0, st>>>(
        tab + 2 * E, mp, mplane, I, tiles, ntiles, list, D, reference, Y);
    CK_LAUNCH();
}

/* The F16 path: x packed (n rows, NP planes + scales), gate/up, M packed, down. */
/* k_moe16's launches: tiles along the grid's y, at most the grid's 65,535 a launch (DSV4_MOE_TILES_Y: fewer,
 * so the tests reach the later launches' tile offset t0 with a few tiles) */
static int moe_tiles_per_launch(void)
{
    static int v = 0;
    if (!v) {
        v = cuda_env_int("DSV4_MOE_TILES_Y", 65535);
        v = v < 1 ? 1 : v > 65535 ? 65535 : v;
    }
    return v;
}
static int moe_tiles_y(int maxt, int t0)
{
    return maxt - t0 < moe_tiles_per_launch() ? maxt - t0 : moe_tiles_per_launch();
}

/* Row blocks a k_moe16 block (its template's RB): 2 for reference numerics' experts where that still
 * leaves MOE_RB_WAVES waves of blocks or more (of maxt tiles: Flash's batch 5, 5.5 waves; 8, 8.7; 64, 37), else 1.
 * Each warp's ring then runs on into the second row block instead of starting over. s24 measured the experts
 * alone at batch 64 0.5-3 % faster, decode there 0.1-1.3 % (bench/results/2026-12-01-s24/), but at batch 8 /
 * 16 0.3 / 0.5 % slower and at batch 1 4 % (moe-rb/) - with the down projection's RB 2 kernel at 130
 * registers, three blocks an SM. Since its activation scales come through the ring (moe16_part's XR: 128
 * registers, four blocks) decode is 2.1 % faster at batch 16 with RB 2 and 0.6 % at 8 (s56 xring2/), 3.9 % at
 * 64. With two activation planes (plain numerics) the second row block's copies cost registers (170: three
 * blocks an SM) and the experts ran 20-25 % slower. NVFP4's (121-122 registers) measured the same way since s56
 * (nvfp4/: decode 2.2 / 3.7 / 3.4 % faster at 8 / 16 / 64 with two). One n tile only, and K of 8 groups
 * or more (every warp's part at least the ring's MOE_STAGES - 1 groups ahead). The same sums either way.
 * The down projection's from MOE_RB_WAVES_DN: its K is half gate / up's (with one row block each warp walks 4
 * groups, its ring's prologue then a third of them). At batch 4 (4.4 waves) two row blocks for the down alone
 * made decode 1.2 % faster, every round (s57 rbsplit/, dn4/), two for gate / up 1.2 % slower; at 1 / 2 tokens
 * (under 2.5 waves) the down's two were even or slower; NVFP4's at batch 4 even (dn4/).
 * DSV4_MOE_RB=1|2 sets it wherever RB = 2 is allowed (the suite forces 2 everywhere). */
#define MOE_RB_WAVES    5
#define MOE_RB_WAVES_DN 4
template <int K, int NP, bool DOWN, int NTT> static int moe16_rb(int rowblocks, int maxt, int nkg, int nsm)
{
    static_assert(NTT == 1, "moe16_rb: one n tile (moe16_pass_rb asks for no other)");
    static int env = -1, per_sm = 0;
    if (env < 0) {
        const int v = cuda_env_int("DSV4_MOE_RB", 0);
        env = v == 1 || v == 2 ? v : 0;
    }
    if (nkg < 8) return 1;
    if (env) return env;
    if (NP != 1) return 1;
    if (!per_sm)
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_moe16<K, NP, DOWN, NTT, 1>, 32 * GM_WARPS,
                                                         moe16_smem<K, MOE_SP(NP, NTT)>()));
    const int64_t slots = (int64_t)(per_sm > 0 ? per_sm : 1) * nsm;
    return (int64_t)(rowblocks + 1) / 2 * maxt >= (DOWN ? MOE_RB_WAVES_DN : MOE_RB_WAVES) * slots ? 2 : 1;
}

/* Tiles of at most 2 pairs with their B in 2.8 KB ring stages, four a warp (moe_ns: three groups ahead, 50 %
 * more bytes in flight than three stages of a whole n tile's B at the same four blocks an SM) for one
 * activation plane (reference numerics) at MOE_BP2_MIN to MOE_BP2_MAX tokens a step, where an expert rarely
 * gets more than 2 pairs (one with more takes several tiles, each reading its weights). Measured alone
 * (bench/results/2026-12-01-s28/bp2/): 5.5 / 4.2 / 2.7 / 4.6 % faster than the three-stage ring at 4 / 6 / 8
 * / 12 tokens, 1.4 % slower at 16 and 2.5 % at 1 (bp/); decode at batch 4 / 12 1.6 / 0.7 % (bp2/). Since
 * two row blocks a block run from batch 5 (s56, s57) the smaller tiles only pay at 4: against 8-pair tiles
 * decode was 1.1 % faster at batch 4 but 1.1 % slower at 6, even at 8 and 0.6 % slower at 12, every round (s57
 * bp/; the tile size also moves moe16_rb's wave count). NVFP4's experts likewise (s58 nvbp/, forced against
 * 8-pair tiles: batch 4 1.2 % faster every round; 2 / 3 1.6-1.8 % slower, 5 even, 6 -0.3 %).
 * DSV4_MOE_BP=0|1 (a knob: the tests set it) sets it wherever it is allowed (one plane and one n tile). The
 * same sums either way. */
#define MOE_BP2_MIN 4
#define MOE_BP2_MAX 4
static bool moe16_bp2(int ntok)
{
    const int v = cuda_knob(CUDA_KNOB_MOE_BP);
    return v == 1 || (v < 0 && ntok >= MOE_BP2_MIN && ntok <= MOE_BP2_MAX);
}

/* k_moe16's launches of one pass (gate / up, or DOWN) over rowblocks blocks of rows, RB a block: the tiles
 * along the grid's y, at most the grid's 65,535 a launch; bp2: moe16_bp2's tiles */
template <int K, int NP, bool DOWN, int NTT, int RB>
static void moe16_pass(cudaStream_t st, const wdesc *tab, int E, const uint32_t *xp, size_t plane, const float *xs,
                       int Kd, const int4 *tiles, const int *ntiles, int maxt, const int *list, int kk, int R,
                       int rowblocks, const float *wts, float limit, bool reference, float *out, bool bp2)
{
    auto kern = k_moe16<K, NP, DOWN, NTT, RB>;
    size_t smem = moe16_smem<K, MOE_SP(NP, NTT)>();
    if constexpr (NP == 1 && NTT == 1 && RB == 1)
        if (bp2) kern = k_moe16<K, NP, DOWN, NTT, RB, 2>, smem = moe16_smem<K, NP, 2>();
    for (int t0 = 0; t0 < maxt; t0 += moe_tiles_per_launch()) {
        launch_pdl(kern, dim3((unsigned)((rowblocks + RB - 1) / RB), (unsigned)moe_tiles_y(maxt, t0)),
                   dim3(32 * GM_WARPS), smem, st, tab, E, xp, plane, xs, Kd, tiles, ntiles, t0, list, kk, R, wts, limit,
                   reference, out);
        CK_LAUNCH();
    }
}
template <int K, int NP, bool DOWN, int NTT>
static void moe16_pass_rb(cudaStream_t st, const wdesc *tab, int E, const uint32_t *xp, size_t plane, const float *xs,
                          int Kd, const int4 *tiles, const int *ntiles, int maxt, const int *list, int kk, int R,
                          int rowblocks, const float *wts, float limit, bool reference, float *out, int nsm, bool bp2)
{
    if constexpr (NTT == 1)
        if (moe16_rb<K, NP, DOWN, NTT>(rowblocks, maxt, Kd / 128, nsm) == 2) { /* bp2's tiles too, on its ring */
            moe16_pass<K, NP, DOWN, NTT, 2>(st, tab, E, xp, plane, xs, Kd, tiles, ntiles, maxt, list, kk, R, rowblocks,
                                            wts, limit, reference, out, false);
            return;
        }
    moe16_pass<K, NP, DOWN, NTT, 1>(st, tab, E, xp, plane, xs, Kd, tiles, ntiles, maxt, list, kk, R, rowblocks, wts,
                                    limit, reference, out, bp2);
}

template <int K, int NP, int NTT = 1>
static void moe16_run(cudaStream_t st, const wdesc *tab, int E, const float *x, int n, uint32_t *xp, uint32_t *mp,
                      const int4 *tiles, const int *ntiles, const int *list, int maxt, int kk, int D, int I, int nk,
                      const float *wts, float limit, bool reference, float *M, float *Y, int nsm, bool bp2)
{
    /* a plane: an F16x2 word per 2 columns (A8: a word of E4M3 bytes per 4) */
    constexpr int PL = NP == MOE_A8 ? 1 : NP, CW = NP == MOE_A8 ? 4 : 2;
    const size_t xpl = (size_t)n * D / CW, mpl = (size_t)nk * I / CW;
    float *xs = (float *)(xp + PL * xpl), *ms = (float *)(mp + PL * mpl);
    const int64_t w1 = (int64_t)n * (D / 128), w2 = (int64_t)nk * (I / 128);
    launch_pdl(k_moe_pack16<NP != 2, NP == MOE_A8>, dim3((unsigned)((w1 + 7) / 8)), dim3(256), 0, st, x, D, n, D, xp,
               xpl, xs);
    CK_LAUNCH();
    if constexpr (NP == MOE_A8)
        launch_pdl(k_moe8w<W8_KS, false>, dim3((unsigned)maxt, (unsigned)((I + 63) / 64)), dim3(128 * W8_KS),
                   moe8w_smem<W8_KS>(D), st, tab, E, (const uint8_t *)xp, (const float *)xs, D, tiles, ntiles, list, kk,
                   I, wts, limit, reference, M);
    else
        moe16_pass_rb<K, NP, false, NTT>(st, tab, E, (const uint32_t *)xp, xpl, (const float *)xs, D, tiles, ntiles,
                                         maxt, list, kk, I, I / 16, wts, limit, reference, M, nsm, bp2);
    launch_pdl(k_moe_pack16<NP != 2, NP == MOE_A8>, dim3((unsigned)((w2 + 7) / 8)), dim3(256), 0, st, (const float *)M,
               I, nk, I, mp, mpl, ms);
    CK_LAUNCH();
    if constexpr (NP == MOE_A8)
        launch_pdl(k_moe8w<W8_KS, true>, dim3((unsigned)maxt, (unsigned)(D / 128)), dim3(128 * W8_KS),
                   moe8w_smem<W8_KS>(I), st, (const wdesc *)(tab + 2 * E), E, (const uint8_t *)mp, (const float *)ms, I,
                   tiles, ntiles, list, 1, D, wts, limit, reference, Y);
    else
        moe16_pass_rb<K, NP, true, NTT>(st, (const wdesc *)(tab + 2 * E), E, (const uint32_t *)mp, mpl,
                                        (const float *)ms, I, tiles, ntiles, maxt, list, 1, D, D / 32, wts, limit,
                                        reference, Y, nsm, bp2);
}

/* The wgmma path (k_moe_wg, tiles of N pairs): x packed in the k16 steps' order, gate/up, M packed, down. */
template <int K, int NP, int N, int WGS>
static void moe_wg_run(cudaStream_t st, const wdesc *tab, int E, const float *x, int n, uint32_t *xp, uint32_t *mp,
                       const int4 *tiles, const int *ntiles, const int *list, int maxt, int kk, int D, int I, int nk,
                       const float *wts, float limit, bool reference, float *M, float *Y)
{
    const size_t xpl = (size_t)n * D / 2, mpl = (size_t)nk * I / 2;
    float *xs = (float *)(xp + NP * xpl), *ms = (float *)(mp + NP * mpl);
    const int64_t w1 = (int64_t)n * (D / 128), w2 = (int64_t)nk * (I / 128);
    const size_t sm = mw_layout<NP, N, WGS>::SMEM;
    launch_pdl(k_moe_pack16<NP == 1, false, true>, dim3((unsigned)((w1 + 7) / 8)), dim3(256), 0, st, x, D, n, D, xp,
               xpl, xs);
    CK_LAUNCH();
    launch_pdl(k_moe_wg<K, NP, false, N, WGS>, dim3((unsigned)maxt, (unsigned)((I + 32 * WGS - 1) / (32 * WGS))),
               dim3(128 * WGS), sm, st, tab, E, (const uint32_t *)xp, xpl, (const float *)xs, D, tiles, ntiles, list,
               kk, I, wts, limit, reference, M);
    CK_LAUNCH();
    launch_pdl(k_moe_pack16<NP == 1, false, true>, dim3((unsigned)((w2 + 7) / 8)), dim3(256), 0, st, (const float *)M,
               I, nk, I, mp, mpl, ms);
    CK_LAUNCH();
    launch_pdl(k_moe_wg<K, NP, true, N, WGS>, dim3((unsigned)maxt, (unsigned)((D + 64 * WGS - 1) / (64 * WGS))),
               dim3(128 * WGS), sm, st, (const wdesc *)(tab + 2 * E), E, (const uint32_t *)mp, mpl, (const float *)ms,
               I, tiles, ntiles, list, 1, D, wts, limit, reference, Y);
    CK_LAUNCH();
}

template <int K, int NP, int N> static void moe_wg_attr(void)
{
    const int s1 = (int)mw_layout<NP, N, 1>::SMEM, s2 = (int)mw_layout<NP, N, 2>::SMEM;
    CK(cudaFuncSetAttribute(k_moe_wg<K, NP, false, N, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, s1));
    CK(cudaFuncSetAttribute(k_moe_wg<K, NP, true, N, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, s1));
    CK(cudaFuncSetAttribute(k_moe_wg<K, NP, false, N, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, s2));
    CK(cudaFuncSetAttribute(k_moe_wg<K, NP, true, N, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, s2));
}

/* Warpgroups a block of k_moe_wg (DSV4_MOE_WGS=1|2): two share each stage's pairs, one lets two blocks share an
 * SM - 3 % faster at a 4,096-token prefill (17,896-17,905 against 17,397-17,422 tok/s), so one with one
 * activation plane; two with two (plain numerics: one warpgroup a block spills registers there). */
static int moe_wgs(int np)
{
    static int v = -1;
    if (v < 0) v = cuda_env_int("DSV4_MOE_WGS", 0);
    return v == 1 || v == 2 ? v : np == 1 ? 1 : 2;
}

/* Pairs a tile of the wgmma path (k_moe_wg): 64 where a step gives the experts 32 pairs or more on average
 * (prefill), else 0 (k_moe16). The same sums either way. DSV4_MOE_WG=0 turns it off, =1 takes it for every
 * step (cuda_knob). */
static int moe_wg_n(int nk, int E)
{
    const int k = cuda_knob(CUDA_KNOB_MOE_WG);
    if (k >= 0) return k ? 64 : 0;
    return nk / (E > 0 ? E : 1) >= 32 ? 64 : 0;
}

/* More than 48 KB of dynamic shared memory for each k_moe16 (cuda_kernels_init). */
template <int K, int NP, int NTT> static void moe16_attr1(void)
{
    const int sm = (int)moe16_smem<K, MOE_SP(NP, NTT)>();
    CK(cudaFuncSetAttribute(k_moe16<K, NP, false, NTT>, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
    CK(cudaFuncSetAttribute(k_moe16<K, NP, true, NTT>, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
    if constexpr (NTT == 1) {
        CK(cudaFuncSetAttribute(k_moe16<K, NP, false, NTT, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
        CK(cudaFuncSetAttribute(k_moe16<K, NP, true, NTT, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
        if constexpr (NP == 1) {
            const int s2 = (int)moe16_smem<K, NP, 2>();
            CK(cudaFuncSetAttribute(k_moe16<K, NP, false, NTT, 1, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, s2));
            CK(cudaFuncSetAttribute(k_moe16<K, NP, true, NTT, 1, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, s2));
        }
    }
}
template <int K, int NP> static void moe16_attr(void)
{
    moe16_attr1<K, NP, 1>();
    moe16_attr1<K, NP, 2>();
}

/* n tiles of 8 pairs a tile of the F16 path: 1 (decode), or 2 where the step
 * gives the experts 16 pairs or more on average (prefill: each weight decoded
 * once per 16 pairs instead of per 8; a 4,096-token prefill +10 %; 4 n
 * tiles spilled registers and measured slower than 2). The same sums for
 * every choice. DSV4_MOE_NTT=1|2 sets it. */
static int moe_ntt(int nk, int E)
{
    static int env = -1;
    if (env < 0) {
        const int v = cuda_env_int("DSV4_MOE_NTT", 0);
        env = v == 1 || v == 2 ? v : 0;
    }
    if (env) return env;
    return nk / (E > 0 ? E : 1) >= 16 ? 2 : 1;
}

void cuda_moe_mma_init(void)
{
    moe16_attr<RK_MXFP4, 1>();
    CK(cudaFuncSetAttribute(k_moe8w<W8_KS, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)moe8w_smem<W8_KS>(W8_KMAX)));
    CK(cudaFuncSetAttribute(k_moe8w<W8_KS, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)moe8w_smem<W8_KS>(W8_KMAX)));
    moe16_attr<RK_MXFP4, 2>();
    moe16_attr<RK_NVFP4, 1>();
    moe16_attr<RK_NVFP4, 2>();
    moe_wg_attr<RK_MXFP4, 1, 64>();
    moe_wg_attr<RK_MXFP4, 2, 64>();
    moe_wg_attr<RK_NVFP4, 1, 64>();
    moe_wg_attr<RK_NVFP4, 2, 64>();
}

#ifdef MOE_TRACE
/* The N-th call (DSV4_MOE_TRACE=N) from an idle GPU, its blocks' records printed at its end (moe_trace_rec). */
struct moe_trace_call {
    bool on;
    moe_trace_call()
    {
        static int calls = 0;
        static const int at = cuda_env_int("DSV4_MOE_TRACE", 0);
        on = at > 0 && ++calls == at;
        if (!on) return;
        CK(cudaDeviceSynchronize());
        const unsigned z = 0;
        CK(cudaMemcpyToSymbol(moe_trace_cnt, &z, sizeof z));
    }
    ~moe_trace_call()
    {
        if (!on) return;
        CK(cudaDeviceSynchronize());
        unsigned n = 0;
        CK(cudaMemcpyFromSymbol(&n, moe_trace_cnt, sizeof n));
        n = n < MOE_TRACE_N ? n : MOE_TRACE_N;
        moe_trace_rec *h = (moe_trace_rec *)malloc((size_t)n * sizeof *h);
        if (!h) return;
        CK(cudaMemcpyFromSymbol(h, moe_trace_buf, (size_t)n * sizeof *h));
        unsigned long long t = ~0ull;
        for (unsigned i = 0; i < n; i++) t = h[i].t0 < t ? h[i].t0 : t;
        for (unsigned i = 0; i < n; i++)
            fprintf(stderr, "moetrace %u %u %.3f %.3f\n", h[i].kind, h[i].sm, (double)(h[i].t0 - t) / 1e3,
                    (double)(h[i].t1 - t) / 1e3);
        free(h);
    }
};
#endif

static unsigned long route_planned; /* cuda_moe_mma calls whose plan the router made */
extern "C" unsigned long dsv4_cuda_route_planned(void)
{
    return route_planned;
}

/* The kernels cuda_moe_mma takes for n tokens, its plan's pairs a tile (ts) and the plan's scratch. */
static moe_choice moe_choose(dsv4_backend *be, const dsv4_moe_params *p, int mode, int n, bool aq)
{
    moe_choice c;
    const int nk = n * p->k, E = p->n_experts;
    c.NP = aq ? 1 : mode == MOE_F16 ? 2 : 3;
    c.a8 = aq && be->moe_a8 && p->w1[0].fmt != DSV4_WF_NVFP4;
    c.wgn = mode == MOE_F16 && !c.a8 ? moe_wg_n(nk, E) : 0; /* the wgmma path's tile */
    c.ntt = mode == MOE_F16 && !c.a8 ? moe_ntt(nk, E) : 1;
    c.bp2 = mode == MOE_F16 && !c.a8 && !c.wgn && c.ntt == 1 && c.NP == 1 && moe16_bp2(n);
    c.ts = c.wgn ? c.wgn : c.bp2 ? 2 : 8 * c.ntt; /* pairs a tile */
    c.maxt = nk / c.ts + (E < nk ? E : nk);       /* tiles: sum over experts of ceil(count / ts) */
    char *pl = (char *)cuda_scratch(be, CS_MOE_PLAN, (size_t)nk * 4 + (size_t)c.maxt * 16 + 16);
    c.tiles = (int4 *)pl;
    c.ntiles = (int *)(pl + (size_t)c.maxt * 16), c.list = c.ntiles + 4;
    return c;
}

/* Where the router (k_route) writes the plan of the experts p on the tensor-core path for n tokens' ids idx, and
 * that it does (cuda_impl.plan_pend, with the choice: cuda_moe_mma then launches no k_moe_plan and chooses nothing
 * again); P->list NULL where p's experts do not take that path. The plan's first reader is two launches after the
 * router (the pack between), as it is after k_moe_plan: k_moe16 reads it before its griddepcontrol.wait. */
void cuda_moe_plan_pend(dsv4_backend *be, const dsv4_moe_params *p, int n, const int32_t *idx, route_plan *P)
{
    cuda_impl *im = impl_of(be);
    P->list = NULL;
    const int mode = cuda_moe_mode(be, p);
    if (!mode) return;
    const bool aq = cuda_moe_aq(be, p);
    const moe_choice c = moe_choose(be, p, mode, n, aq);
    P->list = c.list, P->tiles = c.tiles, P->ntiles = c.ntiles, P->ts = c.ts, P->lo = p->expert_lo,
    P->hi = p->expert_hi;
    im->plan_pend.p = p, im->plan_pend.idx = idx, im->plan_pend.n = n, im->plan_pend.q = im->q, im->plan_pend.aq = aq;
    im->plan_pend.c = c;
}

/* The per-slot outputs Y [n * k][D] of the routed experts (slots of other
 * ranks' experts: zeros); mode: cuda_moe_mma_eligible's. The plan unless the
 * router made it (cuda_impl.plan_pend: these experts, ids and queue). */
void cuda_moe_mma(dsv4_backend *be, const dsv4_moe_params *p, const wdesc *tab, int mode, const float *x, int n,
                  const int32_t *idx, const float *wts, bool aq, float *M, float *Y)
{
    cuda_impl *im = impl_of(be);
    cudaStream_t st = im->stream;
#ifdef MOE_TRACE
    moe_trace_call trace_call;
#endif
    const int k = p->k, D = p->dim, I = p->inter, E = p->n_experts;
    const int nk = n * k;
    /* the router's choice where it planned these experts for these ids (cuda_moe_plan_pend: the same p, n,
     * activation quantisation and queue, so the same choice and scratch), else this call's */
    const bool made = im->plan_pend.idx == idx && im->plan_pend.p == p && im->plan_pend.n == n &&
                      im->plan_pend.aq == aq && im->plan_pend.q == im->q;
    const moe_choice c = made ? im->plan_pend.c : moe_choose(be, p, mode, n, aq);
    im->plan_pend.idx = NULL;
    const bool a8 = c.a8, bp2 = c.bp2;
    const int NP = c.NP, wgn = c.wgn, ntt = c.ntt, maxt = c.maxt;
    int4 *tiles = c.tiles;
    int *ntiles = c.ntiles, *list = c.list;
    if (made) {
        route_planned++;
    } else {
        launch_pdl(k_moe_plan, dim3(1), dim3(1024), 0, st, idx, nk, E, p->expert_lo, p->expert_hi, list, tiles, ntiles,
                   c.ts);
        CK_LAUNCH();
    }
    if (p->expert_hi > p->expert_lo) CK(cudaMemsetAsync(Y, 0, (size_t)nk * D * sizeof(float), st));
    const bool nv = p->w1[0].fmt == DSV4_WF_NVFP4;
    const float lim = p->swiglu_limit;
    if (mode == MOE_F16) {
        /* NP planes of F16 words (2 columns each) and a scale per 128 columns */
        uint32_t *xp = (uint32_t *)cuda_scratch(be, CS_MOE_XP, ((size_t)NP * n * D / 2 + (size_t)n * D / 128) * 4);
        uint32_t *mp = (uint32_t *)cuda_scratch(be, CS_MOE_MP, ((size_t)NP * nk * I / 2 + (size_t)nk * I / 128) * 4);
        if (wgn) {
#define MOE_WG(KK, NPP, W)                                                                                             \
    moe_wg_run<KK, NPP, 64, W>(st, tab, E, x, n, xp, mp, tiles, ntiles, list, maxt, k, D, I, nk, wts, lim,             \
                               p->reference, M, Y)
#define MOE_WG2(KK, NPP)                                                                                               \
    do {                                                                                                               \
        if (moe_wgs(NPP) == 1)                                                                                         \
            MOE_WG(KK, NPP, 1);                                                                                        \
        else                                                                                                           \
            MOE_WG(KK, NPP, 2);                                                                                        \
    } while (0)
            if (nv && aq)
                MOE_WG2(RK_NVFP4, 1);
            else if (nv)
                MOE_WG2(RK_NVFP4, 2);
            else if (aq)
                MOE_WG2(RK_MXFP4, 1);
            else
                MOE_WG2(RK_MXFP4, 2);
#undef MOE_WG2
#undef MOE_WG
            return;
        }
#define MOE16(KK, NPP, NT)                                                                                             \
    moe16_run<KK, NPP, NT>(st, tab, E, x, n, xp, mp, tiles, ntiles, list, maxt, k, D, I, nk, wts, lim, p->reference,   \
                           M, Y, impl_of(be)->n_sm, bp2)
#define MOE16_NTT(KK, NPP)                                                                                             \
    do {                                                                                                               \
        if (ntt == 2)                                                                                                  \
            MOE16(KK, NPP, 2);                                                                                         \
        else                                                                                                           \
            MOE16(KK, NPP, 1);                                                                                         \
    } while (0)
        if (nv && aq)
            MOE16_NTT(RK_NVFP4, 1);
        else if (nv)
            MOE16_NTT(RK_NVFP4, 2);
        else if (a8)
            MOE16(RK_MXFP4, MOE_A8, 1);
        else if (aq)
            MOE16_NTT(RK_MXFP4, 1);
        else
            MOE16_NTT(RK_MXFP4, 2);
#undef MOE16_NTT
#undef MOE16
        return;
    }
    const size_t xpl = (size_t)n * D / 4, mpl = (size_t)nk * I / 4; /* a plane: a uint2 per 4 columns */
    uint2 *xp = (uint2 *)cuda_scratch(be, CS_MOE_XP, (size_t)NP * xpl * sizeof(uint2));
    uint2 *mp = (uint2 *)cuda_scratch(be, CS_MOE_MP, (size_t)NP * mpl * sizeof(uint2));
    const int64_t w1 = (int64_t)n * (D / 128);
    if (aq) k_moe_pack<true><<<(unsigned)((w1 + 7) / 8), 256, 0, st>>>(x, D, n, D, xp, xpl);
    else k_moe_pack<false><<<(unsigned)((w1 + 7) / 8), 256, 0, st>>>(x, D, n, D, xp, xpl);
    CK_LAUNCH();
    if (nv && aq)
        moe_mma_run<RK_NVFP4, 1>(st, tab, E, xp, xpl, mp, mpl, tiles, ntiles, list, maxt, k, D, I, nk, wts, lim,
                                 p->reference, M, Y);
    else if (nv)
        moe_mma_run<RK_NVFP4, 3>(st, tab, E, xp, xpl, mp, mpl, tiles, ntiles, list, maxt, k, D, I, nk, wts, lim,
                                 p->reference, M, Y);
    else if (aq)
        moe_mma_run<RK_MXFP4, 1>(st, tab, E, xp, xpl, mp, mpl, tiles, ntiles, list, maxt, k, D, I, nk, wts, lim,
                                 p->reference, M, Y);
    else
        moe_mma_run<RK_MXFP4, 3>(st, tab, E, xp, xpl, mp, mpl, tiles, ntiles, list, maxt, k, D, I, nk, wts, lim,
                                 p->reference, M, Y);
}

/* The decoders of the MMA kernels against quant.h's, for every code: E2M1
 * (both halves of a word, 16-bit patterns) times a few scales, and E4M3
 * pairs (mma.cu's F16 conversion). Returns the number of mismatches (-1:
 * a CUDA error); the first ones go to stderr. */
__global__ void k_decode_check(int *bad)
{
    const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; /* 0 .. 65535 */
    const float scales[4] = {1.0f, 0x1p-7f, 0x1p20f, 0.375f};
    for (int si = 0; si < 4; si++) {
        const uint32_t s2 = (__float_as_uint(scales[si]) >> 16) * 0x10001u;
        uint32_t v[4];
        fp4x4_bf16<0>(c, s2, v[0], v[1]);
        fp4x4_bf16<1>(c << 16, s2, v[2], v[3]);
        for (int i = 0; i < 8; i++) {
            const uint32_t h = (v[(i & 3) >> 1 | (i >= 4 ? 2 : 0)] >> (16 * (i & 1))) & 0xffffu;
            const float got = __uint_as_float(h << 16);
            const float want = dsv4_e2m1_to_f32((c >> (4 * (i & 3))) & 15u) * scales[si];
            if (__float_as_uint(got) != __float_as_uint(want) && atomicAdd(bad, 1) < 4)
                printf("fp4 decode: code %04x element %d scale %g: %g, want %g\n", c, i, (double)scales[si],
                       (double)got, (double)want);
        }
    }
    { /* the F16 path: E2M1 -> E4M3 (x 2^-6) -> F16, codes 0 .. 3 of c: even ones from c << 4 */
        uint32_t e0, e1, o0, o1;
        fp8x4_f16(e2m1_e4m3(c << 4), e0, e1);
        fp8x4_f16(e2m1_e4m3(c), o0, o1);
        const uint32_t h[4] = {e0 & 0xffffu, o0 & 0xffffu, e0 >> 16, o0 >> 16};
        for (int i = 0; i < 4; i++) {
            const float got = __half2float(__ushort_as_half((unsigned short)h[i])) * 64.0f;
            const float want = dsv4_e2m1_to_f32((c >> (4 * i)) & 15u);
            if (__float_as_uint(got) != __float_as_uint(want) && atomicAdd(bad, 1) < 4)
                printf("fp4 -> e4m3 decode: code %04x element %d: %g, want %g\n", c, i, (double)got, (double)want);
        }
        (void)e1, (void)o1;
        /* the F16 path's layout (fp4_pack_word): its decode gives those words, for this 16-bit pattern in each
         * half of a word and for scattered 32-bit words (the packing's bit chain crosses the bytes) */
        const uint32_t ws[3] = {c, c << 16, c * 0x9e3779b1u ^ (c << 13 | c >> 3)};
        for (int i = 0; i < 3; i++) {
            uint32_t pe, po;
            fp4_eo(fp4_pack_word(ws[i]), pe, po);
            if ((pe != e2m1_e4m3(ws[i] << 4) || po != e2m1_e4m3(ws[i])) && atomicAdd(bad, 1) < 4)
                printf("fp4 layout: word %08x: %08x %08x, want %08x %08x\n", ws[i], pe, po, e2m1_e4m3(ws[i] << 4),
                       e2m1_e4m3(ws[i]));
        }
        if (c < 256) /* E8M0 scales by byte placement, each byte position */
            for (int u = 0; u < 4; u++) {
                const float got = e8m0_byte(c << (8 * u) | (0xa5c3e1f0u & ~(0xffu << (8 * u))), u), want = dsv4_e8m0_to_f32((uint8_t)c);
                if (__float_as_uint(got) != __float_as_uint(want) && atomicAdd(bad, 1) < 4)
                    printf("e8m0 scale: byte %02x at %d: %g, want %g\n", c, u, (double)got, (double)want);
            }
    }
    if (c < 65536) {
        uint32_t lo, hi;
        fp8x4_f16(c, lo, hi);
        const float g0 = __half2float(__ushort_as_half((unsigned short)(lo & 0xffff)));
        const float g1 = __half2float(__ushort_as_half((unsigned short)(lo >> 16)));
        const float w0 = dsv4_e4m3_to_f32(c & 0xff), w1 = dsv4_e4m3_to_f32(c >> 8);
        const bool ok0 = __float_as_uint(g0) == __float_as_uint(w0) || (isnan(g0) && isnan(w0));
        const bool ok1 = __float_as_uint(g1) == __float_as_uint(w1) || (isnan(g1) && isnan(w1));
        if ((!ok0 || !ok1) && atomicAdd(bad, 1) < 4)
            printf("fp8 decode: codes %04x: %g %g, want %g %g\n", c, (double)g0, (double)g1, (double)w0, (double)w1);
        (void)hi;
    }
}

extern "C" int dsv4_cuda_moe16_blocks_per_sm(void)
{
    int dev = 0, smem = 0, lo = 1 << 30, v = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
    if (smem < 228 * 1024) return -1;
    auto occ = [&](auto kern, size_t sm) {
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, kern, 32 * GM_WARPS, sm));
        lo = v < lo ? v : lo;
    };
    occ(k_moe16<RK_MXFP4, 1, false, 1, 1, 8>, moe16_smem<RK_MXFP4, 1, 8>());
    occ(k_moe16<RK_MXFP4, 1, true, 1, 1, 8>, moe16_smem<RK_MXFP4, 1, 8>());
    occ(k_moe16<RK_MXFP4, 1, false, 1, 1, 2>, moe16_smem<RK_MXFP4, 1, 2>());
    occ(k_moe16<RK_MXFP4, 1, true, 1, 1, 2>, moe16_smem<RK_MXFP4, 1, 2>());
    return lo;
}

extern "C" int dsv4_cuda_decode_check(void)
{
    int *d = nullptr, h = -1;
    if (cudaMalloc(&d, sizeof(int)) != cudaSuccess) return -1;
    cudaMemset(d, 0, sizeof(int));
    k_decode_check<<<256, 256>>>(d);
    if (cudaDeviceSynchronize() != cudaSuccess || cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
        h = -1;
    cudaFree(d);
    return h;
}
