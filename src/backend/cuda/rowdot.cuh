/*
 * rowdot.cuh - one warp's dot products of a weight row with up to NT token
 * rows, a 4-byte word of weights per lane at a time.
 *
 * A row is cut into 128-byte strips of 32 words (4 FP8, 8 FP4, 2 BF16/F16 or
 * 1 F32 element each); lane l takes word l of every strip of its part,
 * decodes it in registers with the same values as w_at (branch-free decoders
 * below) and accumulates the word's elements in order into each token's sum;
 * the warp reduces with the fixed butterfly, the caller adds the parts in
 * order. Every token's sum is the same sequence of operations whatever the
 * other tokens are (batch invariance). FP8 and unquantized rows of whole
 * 16-byte chunks take the chunk path instead (a lane decodes 16 bytes at a
 * time: more bytes in flight, measured faster for them); rows that are not
 * whole words (or misaligned) take the scalar path through w_at. The path
 * depends on the weight alone, never on the batch.
 */
#ifndef DSV4_BACKEND_CUDA_ROWDOT_CUH
#define DSV4_BACKEND_CUDA_ROWDOT_CUH

#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "backend/cuda/common.cuh"

/* A cluster's last barrier: no block exits (its shared memory going away) before every block has done its
 * reads of the others' shared memory. Nothing is published through it, so the arrive is relaxed (cooperative
 * groups' cluster.sync() releases, which ptxas makes a MEMBAR.ALL.GPU that waits for the block's global
 * stores) - but a relaxed arrive does not wait for the thread's loads: a read of another block's memory still
 * in flight at the arrive can land after that block has exited (an intermittent "unspecified launch failure",
 * s33: a thread whose sum was not stored - a padding token's, a row past the end). So before it every value a
 * thread read from the others must be the operand of a store (a store waits for its operand, and no memory
 * operation moves past this asm): the callers store each sum to the output, or to an element of their own
 * shared memory that only they read. */
__device__ __forceinline__ void cluster_reads_done(void)
{
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}

/* The K parts of a tile, one a block of a cluster, added in part order (the bits of part 0 adding them all):
 * every block's F partial sums are in its shared memory at red[0 .. F); block part of P adds the outputs
 * [F part / P, F (part + 1) / P) over the P blocks (MAXP at most), NT threads a block, and stores each with
 * store(f, sum). The cluster's barriers before (every red written) and after (every red read). */
template <int MAXP, int NT, class Store>
__device__ __forceinline__ void cluster_sum_parts(float *red, int F, int part, int P, Store store)
{
    cooperative_groups::cluster_group cl = cooperative_groups::this_cluster();
    cl.sync();
    const int f0 = F * part / P, f1 = F * (part + 1) / P;
    for (int f = f0 + (int)threadIdx.x; f < f1; f += NT) {
        float v[MAXP];
#pragma unroll
        for (int q = 0; q < MAXP; q++)
            if (q < P) v[q] = *cl.map_shared_rank(red + f, q);
        float sum = v[0];
#pragma unroll
        for (int q = 1; q < MAXP; q++)
            if (q < P) sum += v[q];
        store(f, sum);
        red[f] = sum; /* (cluster_reads_done: red[f] of this block is read by this thread alone, above) */
    }
    cluster_reads_done(); /* every block's shared memory stays until the others have read it */
}

/* E4M3 by bit placement: exponent and mantissa at FP32's top mantissa bits
 * give the value times 2^-120 (subnormals land on FP32 subnormals); S.1111.111
 * is NaN. Exact, equal to dsv4_e4m3_to_f32. For single codes (scales). */
__device__ __forceinline__ float fp8_val(uint32_t b)
{
    const float v = __uint_as_float(((b & 0x7fu) << 20) | ((b & 0x80u) << 24)) * 0x1p120f;
    return (b & 0x7fu) == 0x7fu ? __int_as_float(0x7fc00000) : v;
}

/* Two E4M3 codes (bits 0-7 and 8-15 of b) through the hardware's E4M3x2 ->
 * F16x2 conversion (one instruction on sm_89+), then F16 -> F32: every E4M3
 * value, subnormals and NaN included, is an F16 exactly, so the values are
 * fp8_val's, at a fraction of the instructions. */
__device__ __forceinline__ float2 fp8x2_val(uint32_t b)
{
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(b & 0xffffu), __NV_E4M3);
    return __half22float2(__half2(h));
}

/* The E4M3 codes of one 4-byte word as two F16x2 registers (codes 0,1 and 2,3). The halves by
 * PTX's mov.b32 {l, h}: the conversion (F2FP) reads a register's upper half itself (R.H1), where the
 * intrinsic on u >> 16 costs a shift per word (the experts' decoders are instruction-bound). */
__device__ __forceinline__ void fp8x4_f16(uint32_t u, uint32_t &lo, uint32_t &hi)
{
    asm("{\n .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.rn.f16x2.e4m3x2 %0, l;\n cvt.rn.f16x2.e4m3x2 %1, h;\n}"
        : "=r"(lo), "=r"(hi)
        : "r"(u));
}

/* A 64-column group's sum d into acc times its scale s = weight scale x activation scale: the
 * FP8 linears sum 64-column groups while an activation scale covers 128 columns, so when the
 * 128-column block holds an Inf (scale 2^127) its other group sums to exactly 0 and s overflows;
 * such a group adds nothing (0 x Inf would be NaN where the CPU's 128-column sum gives Inf).
 * Wherever s is finite this is the FMA's value (0 x s + acc = acc, signed zeros included). */
__device__ __forceinline__ float grp_fma(float d, float s, float acc) { return d == 0.0f ? acc : __fmaf_rn(d, s, acc); }

/* The tensor-core kernels' shared pieces (mma.cu, moe_mma.cu). */
__device__ __forceinline__ void mma_f16(float *c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                        uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_bf16(float *c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t h2_bits(__half a, __half b)
{
    return (uint32_t)__half_as_ushort(a) | ((uint32_t)__half_as_ushort(b) << 16);
}

/* A lane's four activations as F16 MMA operands, scaled by a power of two sc
 * (returned) shared by the LANES lanes of its column group (16: 64 columns,
 * 32: 128):
 *   plain numerics: sc at or above the group's largest finite magnitude,
 *     then hi + lo (22 significant bits: about FP32's rounding of the
 *     largest term); non-finite values whole in hi;
 *   reference numerics (REF): k_act_quant's FP8 quantisation per 128 columns
 *     of the values read as BF16; the E4M3 code q is an F16 exactly and the
 *     value is q * sc (lo zero); a value that overflows keeps its Inf so it
 *     propagates. */
template <bool REF, int LANES> __device__ __forceinline__ float f16_parts(const float *v_in, __half *hi, __half *lo)
{
    float v[4];
#pragma unroll
    for (int e = 0; e < 4; e++) v[e] = REF ? dsv4_round_bf16(v_in[e]) : v_in[e];
    float amax = REF ? 1e-4f : 0.0f; /* reference: k_act_quant's floor; NaN never wins fmaxf */
#pragma unroll
    for (int e = 0; e < 4; e++) amax = fmaxf(amax, REF || isfinite(v[e]) ? fabsf(v[e]) : 0.0f);
#pragma unroll
    for (int o = LANES / 2; o; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float sc = REF ? dsv4_pow2_ceil_scale(amax, 448.0f) : amax > 0 ? dsv4_pow2_ceil_scale(amax, 1.0f) : 1.0f;
#pragma unroll
    for (int e = 0; e < 4; e++) {
        if (REF) {
            const float q = dsv4_e4m3_code(v[e], sc);
            const float o = q * sc;
            hi[e] = __float2half_rn(isfinite(o) ? q : o);
            lo[e] = __float2half_rn(0.0f);
        } else if (isfinite(v[e])) {
            const float s = v[e] * dsv4_pow2_recip(sc); /* v / sc exactly: sc is a power of two */
            hi[e] = __float2half_rn(s);
            lo[e] = __float2half_rn(s - __half2float(hi[e]));
        } else {
            hi[e] = __float2half_rn(v[e]);
            lo[e] = __float2half_rn(0.0f);
        }
    }
    return sc;
}

/* act_quant's E4M3 codes of a lane's four columns (a warp: 128 columns of one token) as the FP8 tensor cores take
 * them, four bytes in column order, and the block's power-of-two scale (returned; f16_parts<true, 32>'s): a code
 * is non-finite only as +-Inf (an Inf activation: the scale 2^127, the block's other codes 0), which becomes
 * +-448 with the block's scale Inf, so the product is +-Inf (NaN where the weight is zero) where the FP32 sum has
 * it. Every lane of the warp calls it. */
__device__ __forceinline__ float act_codes4(const float *v, uint32_t *codes)
{
    __half hi[4], lo[4];
    float sc = f16_parts<true, 32>(v, hi, lo);
    bool inf = false;
#pragma unroll
    for (int e = 0; e < 4; e++)
        if (__hisinf(hi[e])) hi[e] = __float2half_rn(__hisinf(hi[e]) > 0 ? 448.0f : -448.0f), inf = true;
    if (__any_sync(0xffffffffu, inf)) sc = INFINITY;
    const __half2_raw a = {__half_as_ushort(hi[0]), __half_as_ushort(hi[1])};
    const __half2_raw b = {__half_as_ushort(hi[2]), __half_as_ushort(hi[3])};
    *codes = (uint32_t)__nv_cvt_halfraw2_to_fp8x2(a, __NV_SATFINITE, __NV_E4M3) |
             (uint32_t)__nv_cvt_halfraw2_to_fp8x2(b, __NV_SATFINITE, __NV_E4M3) << 16;
    return sc;
}

/* Where a warp of the activation packs works (k_mma_pack, k_mma_pack_bf16, k_wgbf_pack, k_wgf8_pack): one
 * warp per (group blockIdx.y, token, 128 columns); lane l takes columns c0 .. c0 + 3 of 64-column group kg,
 * q = l % 16. False past the last (token, 128 columns): the whole warp returns. A lane with kg >= nkg (an
 * odd count of groups) still has its place: each kernel returns it where its shuffles allow. */
struct pack_at {
    int grp, tok, kg, q, c0;
};
__device__ __forceinline__ bool pack_at_of(int ntok, int nkg, pack_at &a)
{
    const int lane = threadIdx.x & 31, nb = (nkg + 1) / 2;
    const int64_t wg = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (wg >= (int64_t)ntok * nb) return false;
    a.grp = blockIdx.y, a.tok = (int)(wg / nb);
    a.kg = 2 * (int)(wg % nb) + (lane >> 4), a.q = lane & 15, a.c0 = a.kg * 64 + 4 * a.q;
    return true;
}

/* Columns c0 .. c0 + 3 of token tok of group grp (zeros past K and for
 * tokens past n), one 16-byte load when aligned. */
__device__ __forceinline__ void pack_load4(const float *x, int ldx, size_t xg, int grp, int tok, int n, int c0, int K,
                                           float *v)
{
    v[0] = v[1] = v[2] = v[3] = 0.0f;
    if (tok >= n) return;
    const float *xr = x + grp * xg + (size_t)tok * ldx;
    if (c0 + 3 < K && ((uintptr_t)(xr + c0) & 15) == 0) {
        const float4 q = *(const float4 *)(xr + c0);
        v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    } else {
#pragma unroll
        for (int e = 0; e < 4; e++)
            if (c0 + e < K) v[e] = xr[c0 + e];
    }
}

/* cp.async: NB bytes global -> shared without holding registers (zeros when
 * !ok: src must still be a valid address), commit a group, wait until at
 * most N of this thread's groups are in flight. Other lanes' copies are
 * visible after the wait and a __syncwarp. */
template <int NB> __device__ __forceinline__ void cp_async(void *dst, const void *src, bool ok)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    if (NB == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 16 : 0) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src), "n"(NB), "r"(ok ? NB : 0)
                     : "memory");
}
/* cp_async<16> whose L2 miss fetches the aligned 256 bytes around it from DRAM (streams read by several
 * requests close together) */
__device__ __forceinline__ void cp_async16_l2pf(void *dst, const void *src, bool ok)
{
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait(void)
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
/* cp_async_wait of min(n, N) groups, n known at run time only */
template <int N> __device__ __forceinline__ void cp_async_wait_min(int n)
{
    if constexpr (N <= 0)
        cp_async_wait<0>();
    else if (n >= N)
        cp_async_wait<N>();
    else
        cp_async_wait_min<N - 1>(n);
}

/* Two floats rounded to BF16 (nearest even), as a BF16x2 word (a low). */
__device__ __forceinline__ uint32_t bf2_rn(float a, float b)
{
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(a)) |
           ((uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(b)) << 16);
}
/* Four floats rounded to BF16, as two BF16x2 words. */
__device__ __forceinline__ uint2 bf4_rn(float4 v)
{
    return make_uint2(bf2_rn(v.x, v.y), bf2_rn(v.z, v.w));
}

/* The first NPT of the three BF16 parts of each of v's four values (hi, mid, lo: 24 significant bits, FP32's
 * precision; a non-finite value whole in hi; hi alone is BF16(v)), as BF16x2 words: w[s] = {parts s of v0 v1,
 * of v2 v3} (the BF16 linears' activation packs). */
template <int NPT> __device__ __forceinline__ void bf16_parts(const float *v_in, uint2 *w)
{
    float v[4] = {v_in[0], v_in[1], v_in[2], v_in[3]};
#pragma unroll
    for (int s = 0; s < NPT; s++) {
        float h[4];
#pragma unroll
        for (int e = 0; e < 4; e++) {
            h[e] = __bfloat162float(__float2bfloat16_rn(v[e]));
            v[e] = isfinite(v[e]) ? v[e] - h[e] : 0.0f; /* exact */
        }
        w[s] = make_uint2(bf2_rn(h[0], h[1]), bf2_rn(h[2], h[3]));
    }
}

/* Code E (0..7) of an 8-code word by bit placement: the magnitude's three
 * bits e1 e0 m go to FP32's exponent bits 1-0 and top mantissa bit, the sign
 * to the sign, which gives the value times 2^-126 exactly (e = 0: an FP32
 * subnormal, m / 2 * 2^-126); the product with 2^126 is exact. Equal to
 * dsv4_e2m1_to_f32 in three logic operations and a multiply. */
template <int E> __device__ __forceinline__ float e2m1_word_val(uint32_t u)
{
    constexpr int sm = 22 - 4 * E, ss = 28 - 4 * E; /* magnitude to bits 22-24, sign to bit 31 */
    const uint32_t mag = sm >= 0 ? (u << (sm >= 0 ? sm : 0)) : (u >> (sm < 0 ? -sm : 0));
    return __uint_as_float((mag & 0x01c00000u) | ((u << ss) & 0x80000000u)) * 0x1p126f;
}

/* The 8 codes of a word, value * scale (and * scale2 for NVFP4, in that order as w_at). */
__device__ __forceinline__ void e2m1_word(uint32_t u, float s, float *wv)
{
    wv[0] = e2m1_word_val<0>(u) * s;
    wv[1] = e2m1_word_val<1>(u) * s;
    wv[2] = e2m1_word_val<2>(u) * s;
    wv[3] = e2m1_word_val<3>(u) * s;
    wv[4] = e2m1_word_val<4>(u) * s;
    wv[5] = e2m1_word_val<5>(u) * s;
    wv[6] = e2m1_word_val<6>(u) * s;
    wv[7] = e2m1_word_val<7>(u) * s;
}

/* E2M1 codes 4H .. 4H + 3 of word u times s (a BF16x2 of the scale), as two
 * BF16x2 words (exact: at most 6 significant bits). The magnitude's three
 * bits pick the BF16's two bytes from 8-entry tables (byte_perm), the sign
 * bits move to the high bytes' top bits, then one BF16x2 multiply per pair:
 * about 3.5 instructions per element (dsv4_cuda_decode_check tests every code). */
#define E2M1_HI0 0x3f3f3f00u /* BF16 high bytes of 0, 0.5, 1, 1.5 */
#define E2M1_HI1 0x40404040u /* of 2, 3, 4, 6 */
#define E2M1_LO0 0xc0800000u
#define E2M1_LO1 0xc0804000u
template <int H> __device__ __forceinline__ void fp4x4_bf16(uint32_t u, uint32_t s2, uint32_t &a, uint32_t &b)
{
    const uint32_t c = u >> (16 * H); /* codes in the low 16 bits */
    const uint32_t mag = c & 0x7777u;
    const uint32_t lo = __byte_perm(E2M1_LO0, E2M1_LO1, mag);
    /* signs: codes 0, 2 at bits 3 and 11 -> bit 7 of bytes 0, 2; codes 1, 3 at
     * bits 7 and 15 -> bit 7 of bytes 1, 3 (each byte i of d is byte i / 2 of c) */
    const uint32_t d = __byte_perm(c & 0x8888u, 0, 0x1100);
    const uint32_t hi = __byte_perm(E2M1_HI0, E2M1_HI1, mag) | ((d << 4) & 0x00800080u) | (d & 0x80008000u);
    const uint32_t p0 = __byte_perm(lo, hi, 0x5140), p1 = __byte_perm(lo, hi, 0x7362);
    const __nv_bfloat162 sc = *(const __nv_bfloat162 *)&s2;
    const __nv_bfloat162 r0 = __hmul2(*(const __nv_bfloat162 *)&p0, sc), r1 = __hmul2(*(const __nv_bfloat162 *)&p1, sc);
    a = *(const uint32_t *)&r0;
    b = *(const uint32_t *)&r1;
}

/* A scale (exactly a BF16: a power of two, or an E4M3 value) as BF16x2. */
__device__ __forceinline__ uint32_t bf16x2_of(float s)
{
    const uint32_t h = __float_as_uint(s) >> 16;
    return h | (h << 16);
}

/* Elements per 4-byte word of each element kind (RK_*, common.cuh). */
template <int K> struct rk_elems {
    static constexpr int n = K == RK_F32 ? 1 : K <= RK_F16 ? 2 : K == RK_FP8 ? 4 : 8;
};

/* Decode word wi (4 bytes, u) of absolute row ra into wv[rk_elems<K>::n]. */
template <int K> __device__ __forceinline__ void word_decode(const wdesc &w, int64_t ra, int64_t wi, uint32_t u, float *wv)
{
    if constexpr (K == RK_F32) {
        wv[0] = __uint_as_float(u);
    } else if constexpr (K == RK_BF16) {
        wv[0] = __uint_as_float(u << 16);
        wv[1] = __uint_as_float(u & 0xffff0000u);
    } else if constexpr (K == RK_F16) {
        wv[0] = dsv4_f16_to_f32((uint16_t)u);
        wv[1] = dsv4_f16_to_f32((uint16_t)(u >> 16));
    } else if constexpr (K == RK_FP8) {
        const int64_t k = (ra / w.br) * w.scale_cols + (wi * 4) / w.bc;
        const float s = w.sdtype == DSV4_DT_F32 ? __ldg((const float *)w.scale + k)
                                                : dsv4_e8m0_to_f32(__ldg((const uint8_t *)w.scale + k));
        const float2 a = fp8x2_val(u), b = fp8x2_val(u >> 16);
        wv[0] = a.x * s;
        wv[1] = a.y * s;
        wv[2] = b.x * s;
        wv[3] = b.y * s;
    } else if constexpr (K == RK_MXFP4) {
        const float s = dsv4_e8m0_to_f32(__ldg((const uint8_t *)w.scale + ra * w.scale_cols + wi / 4));
        e2m1_word(u, s, wv);
    } else { /* NVFP4: a group of 16 is two words; value * e4m3 scale * global scale as w_at */
        const float s = fp8_val(__ldg((const uint8_t *)w.scale + ra * w.scale_cols + wi / 2));
        e2m1_word(u, s, wv);
#pragma unroll
        for (int e = 0; e < 8; e++) wv[e] *= w.scale2;
    }
}

/* acc[t] += x[t, e] * wv[e] for e < NE in order, for each token t < nt (x
 * rows ldx apart): the same products in the same order whether the
 * activations are read four floats at a time (xal: 16-byte aligned rows) or
 * one by one. */
template <int NT, int NE>
__device__ __forceinline__ void accumulate(const float *x, int ldx, int nt, bool xal, const float *wv, float *acc)
{
#pragma unroll
    for (int t = 0; t < NT; t++) {
        if (t >= nt) break;
        const float *xt = x + (size_t)t * ldx;
        float a = acc[t];
        if (NE >= 4 && xal) {
#pragma unroll
            for (int e = 0; e < NE; e += 4) {
                const float4 v = __ldg((const float4 *)(xt + e));
                a = fmaf(v.x, wv[e], a);
                a = fmaf(v.y, wv[e + 1], a);
                a = fmaf(v.z, wv[e + 2], a);
                a = fmaf(v.w, wv[e + 3], a);
            }
        } else {
#pragma unroll
            for (int e = 0; e < NE; e++) a = fmaf(__ldg(xt + e), wv[e], a);
        }
        acc[t] = a;
    }
}

/* The 16-byte chunk path, for FP8 and unquantized rows (measured faster
 * there than words: more bytes in flight per lane). */

/* Decode 16-byte chunk c of absolute row ra into wv[4 * rk_elems<K>::n]. */
template <int K> __device__ __forceinline__ void chunk_decode(const wdesc &w, int64_t ra, int64_t c, uint4 q, float *wv)
{
    static_assert(K <= RK_FP8, "FP4 rows take the word path");
    const uint32_t u[4] = {q.x, q.y, q.z, q.w};
    if constexpr (K == RK_F32) {
#pragma unroll
        for (int e = 0; e < 4; e++) wv[e] = __uint_as_float(u[e]);
    } else if constexpr (K == RK_BF16 || K == RK_F16) {
#pragma unroll
        for (int e = 0; e < 8; e++) {
            const uint16_t h = (uint16_t)(u[e >> 1] >> (16 * (e & 1)));
            wv[e] = K == RK_BF16 ? __uint_as_float((uint32_t)h << 16) : dsv4_f16_to_f32(h);
        }
    } else { /* FP8 */
        const int64_t k = (ra / w.br) * w.scale_cols + (c * 16) / w.bc;
        const float s = w.sdtype == DSV4_DT_F32 ? ((const float *)w.scale)[k]
                                                : dsv4_e8m0_to_f32(((const uint8_t *)w.scale)[k]);
#pragma unroll
        for (int e = 0; e < 8; e++) {
            const float2 v = fp8x2_val(u[e >> 1] >> (16 * (e & 1)));
            wv[2 * e] = v.x * s;
            wv[2 * e + 1] = v.y * s;
        }
    }
}

/* The row loop of both paths: the row is a sequence of units (4-byte words,
 * or 16-byte chunks); lane l takes unit l of each 32-unit strip, so a warp's
 * weight loads are contiguous; strips are dealt round robin to the parts,
 * UNROLL strips' loads are in flight before any is used, and they are
 * accumulated in strip order. */
template <int NT, int K, typename U, int UNROLL>
__device__ __forceinline__ void row_dot_units(const wdesc &w, int64_t ra, const float *x, int ldx, int nt,
                                              float *acc, int part, int nparts)
{
    constexpr bool chunks = sizeof(U) == 16;
    constexpr int NE = (int)(sizeof(U) / 4) * rk_elems<K>::n; /* a chunk is four words */
    const int lane = threadIdx.x & 31;
    const bool xal = ((uintptr_t)x % 16 == 0) && ldx % 4 == 0;
    const U *row = (const U *)((const char *)w.data + ra * w.row_bytes);
    const int64_t nu = w.row_bytes / (int64_t)sizeof(U), step = (int64_t)nparts * 32;
    for (int64_t u0 = part * 32 + lane; u0 - lane < nu; u0 += UNROLL * step) {
        U q[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (u0 + u * step < nu) q[u] = __ldg(row + u0 + u * step);
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const int64_t ui = u0 + u * step;
            if (ui >= nu) break;
            float wv[NE];
            if constexpr (chunks) chunk_decode<K>(w, ra, ui, q[u], wv);
            else word_decode<K>(w, ra, ui, q[u], wv);
            accumulate<NT, NE>(x + ui * NE, ldx, nt, xal, wv, acc);
        }
    }
}

/* acc[t] (t < nt) += W[ra, :] . x[t, :] over this lane's share of part
 * `part` of `nparts` (the row's 32-chunk strips dealt round robin to the
 * parts); the caller reduces the lanes, then the parts in order. */
template <int NT>
__device__ __forceinline__ void row_dot(const wdesc &w, int64_t ra, const float *x, int ldx, int nt, float *acc,
                                        int part = 0, int nparts = 1)
{
    if (w.chunk16) switch (w.vec) {
        case 1 + RK_F32: row_dot_units<NT, RK_F32, uint4, 4>(w, ra, x, ldx, nt, acc, part, nparts); return;
        case 1 + RK_BF16: row_dot_units<NT, RK_BF16, uint4, 4>(w, ra, x, ldx, nt, acc, part, nparts); return;
        case 1 + RK_F16: row_dot_units<NT, RK_F16, uint4, 4>(w, ra, x, ldx, nt, acc, part, nparts); return;
        case 1 + RK_FP8: row_dot_units<NT, RK_FP8, uint4, 4>(w, ra, x, ldx, nt, acc, part, nparts); return;
        default: break;
        }
    switch (w.vec) {
    case 1 + RK_F32: row_dot_units<NT, RK_F32, uint32_t, 8>(w, ra, x, ldx, nt, acc, part, nparts); return;
    case 1 + RK_BF16: row_dot_units<NT, RK_BF16, uint32_t, 8>(w, ra, x, ldx, nt, acc, part, nparts); return;
    case 1 + RK_F16: row_dot_units<NT, RK_F16, uint32_t, 8>(w, ra, x, ldx, nt, acc, part, nparts); return;
    case 1 + RK_FP8: row_dot_units<NT, RK_FP8, uint32_t, 8>(w, ra, x, ldx, nt, acc, part, nparts); return;
    case 1 + RK_MXFP4: row_dot_units<NT, RK_MXFP4, uint32_t, 8>(w, ra, x, ldx, nt, acc, part, nparts); return;
    case 1 + RK_NVFP4: row_dot_units<NT, RK_NVFP4, uint32_t, 8>(w, ra, x, ldx, nt, acc, part, nparts); return;
    default: break;
    }
    const int lane = threadIdx.x & 31;
    for (int64_t i = part * 32 + lane; i < w.cols; i += nparts * 32) {
        const float wv = w_at(w, ra, i);
#pragma unroll
        for (int t = 0; t < NT; t++)
            if (t < nt) acc[t] = fmaf(x[(size_t)t * ldx + i], wv, acc[t]);
    }
}

/* wgmma (sm_90a), shared by wg8.cu and moe_mma.cu. A shared-memory matrix descriptor, K-major with the
 * 128-byte swizzle: start >> 4, 8-row atoms 1,024 bytes apart (the leading offset is unused in this mode). */
__device__ __forceinline__ uint64_t wg_desc(uint32_t saddr)
{
    return (uint64_t)((saddr >> 4) & 0x3fffu) | (uint64_t)1 << 16 | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}

/* d (+)= A B over 16 columns, FP32 accumulators: A (64 x 16, F16 or BF16) from registers a0..a3 in mma.sync's
 * m16n8k16 fragment layout per warp (which gives mma.sync's bits for the same chain of steps), B (N x 16) in
 * shared memory by descriptor; acc 0: d = A B. */
template <int N, bool BF> __device__ __forceinline__ void wg_k16(float *d, const uint32_t *a, uint64_t bd, int acc);
#define WG_K16_64(TY)                                                                                                  \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                                          \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " "                                           \
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%"    \
                 "26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"                                   \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),     \
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),            \
                   "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),          \
                   "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),          \
                   "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                                                               \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd), "r"(acc))
template <> __device__ __forceinline__ void wg_k16<64, false>(float *d, const uint32_t *a, uint64_t bd, int acc)
{
    WG_K16_64("f16");
}
template <> __device__ __forceinline__ void wg_k16<64, true>(float *d, const uint32_t *a, uint64_t bd, int acc)
{
    WG_K16_64("bf16");
}
/* The same with B (16 x 64: K rows of 64 N-contiguous BF16 values, 128 bytes each, as wg_desc's 8-row atoms
 * with the 128-byte swizzle) MN-major: wgmma's transposed B (attn.cu's weighted sum, B = the value rows). */
__device__ __forceinline__ void wg_k16_bf_tb(float *d, const uint32_t *a, uint64_t bd)
{
    asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%"
                 "26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd));
}
#undef WG_K16_64

/* mbarriers (shared::cta addresses): init with an arrival count; an arrival that expects bytes of
 * transactions (st.async, bulk copies) on the current phase; a wait for the phase of the given parity. */
__device__ __forceinline__ void mbar_init(uint32_t bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint32_t bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, unsigned parity)
{
    uint32_t ok = 0;
    while (!ok)
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                     : "=r"(ok)
                     : "r"(bar), "r"(parity)
                     : "memory");
}

/* Distributed shared memory without a release (a release at cluster scope - cluster.sync(), a remote
 * mbarrier.arrive.release - is a MEMBAR.ALL.GPU in SASS, ~1,200 cycles where k_attn_one's parts met, s73): a
 * shared::cta address as the cluster's address of the same bytes in block rank; st.async writes there and
 * completes that many bytes of the transaction on the mbarrier at the same offset in the rank (its address from
 * mapa too); a wait for the phase with acquire at cluster scope, after which the bytes st.async wrote are
 * visible. The mbarrier must be initialised (fence.mbarrier_init, a cluster barrier) before any st.async to it. */
__device__ __forceinline__ uint32_t cl_mapa(uint32_t addr, uint32_t rank)
{
    uint32_t d;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(d) : "r"(addr), "r"(rank));
    return d;
}
__device__ __forceinline__ void st_async_f32(uint32_t addr, float v, uint32_t bar)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];" ::"r"(addr), "f"(v),
                 "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void st_async_f2(uint32_t addr, float v0, float v1, uint32_t bar)
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(addr),
                 "f"(v0), "f"(v1), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, unsigned parity)
{
    uint32_t ok = 0;
    while (!ok)
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\nselp.u32 "
            "%0, 1, 0, p;\n}"
            : "=r"(ok)
            : "r"(bar), "r"(parity)
            : "memory");
}

__device__ __forceinline__ void st_async_f4(uint32_t addr, float v0, float v1, float v2, float v3, uint32_t bar)
{
    asm volatile(
        "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(addr),
        "f"(v0), "f"(v1), "f"(v2), "f"(v3), "r"(bar)
        : "memory");
}

/* A K-split tile's parts added without a release at cluster scope (cluster_sum_parts' cl.sync() is a
 * MEMBAR.ALL.GPU): the P parts of a cluster (rank = part) each send every one of the tile's F outputs to the
 * output's owner by st.async, V floats a send (cl_push_v: 16 bytes where the thread's run allows; a 4-byte
 * st.async is one DSMEM transaction, and s75's k_attn_pv with 4,096 of them a block went 30 % slower), into the
 * owner's slots, completing the bytes on the owner's mbarrier bar. The outputs are owned in whole units of V:
 * part o adds units [FU o / P, FU (o + 1) / P) (FU = F / V), part q's values of them at rx[q mr + f - f0]
 * (cl_push_mr floats a part: P mr at most F + P V, at the same offset in every block; V-aligned, so a send is).
 * Order (cl_push_parts): thread 0 runs cl_push_init (the bytes its block receives) before a cluster barrier
 * (relaxed: the init's fence publishes it), every block's slots free by that barrier; then the sends, then
 * cl_push_sum (the wait, then the parts in part order: cluster_sum_parts' sums, the same bits whoever owns an
 * output). A block leaves only after its own wait, so nothing is sent to a block that has left. */
/* (one thread) an mbarrier for bytes of st.async from the cluster: initialised, expecting them, its init fenced for
 * the cluster (a relaxed cluster barrier after this publishes it) */
__device__ __forceinline__ void mbar_open_cluster(uint32_t bar, unsigned bytes)
{
    mbar_init(bar, 1);
    mbar_expect(bar, bytes);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
/* floats a send: 4, 2 or 1, as a thread's J consecutive outputs divide */
__host__ __device__ constexpr int cl_push_v(int J)
{
    return J % 4 == 0 ? 4 : J % 2 == 0 ? 2 : 1;
}
/* part o's first output (o = P: F) and a part's slot row, in floats */
template <int F, int V> __device__ __forceinline__ int cl_push_f0(int o, int P)
{
    return V * (F / V * o / P);
}
template <int F, int V> __device__ __forceinline__ int cl_push_mr(int P)
{
    return V * ((F / V + P - 1) / P);
}
template <int F, int V> __device__ __forceinline__ void cl_push_init(uint32_t bar, int part, int P)
{
    mbar_open_cluster(bar, (unsigned)((cl_push_f0<F, V>(part + 1, P) - cl_push_f0<F, V>(part, P)) * P * 4));
}
/* part's values v[0 .. V) of outputs f .. f + V - 1 (f a multiple of V) to their owner o */
template <int F, int V>
__device__ __forceinline__ void cl_push_send(uint32_t rx, uint32_t bar, int part, int P, int f, const float *v)
{
    constexpr int FU = F / V;
    const int u = f / V, o = (u * P + P - 1) / FU; /* the largest o with FU o / P <= u */
    const uint32_t d = cl_mapa(rx + 4u * (uint32_t)(part * cl_push_mr<F, V>(P) + f - cl_push_f0<F, V>(o, P)),
                               (uint32_t)o),
                   b = cl_mapa(bar, (uint32_t)o);
    if constexpr (V == 4)
        st_async_f4(d, v[0], v[1], v[2], v[3], b);
    else if constexpr (V == 2)
        st_async_f2(d, v[0], v[1], b);
    else
        st_async_f32(d, v[0], b);
}
/* the owned outputs over the parts in part order, each stored with store(f, sum) (NT threads a block) */
template <int F, int V, int MAXP, int NT, class Store>
__device__ __forceinline__ void cl_push_sum(const float *rx, uint32_t bar, int part, int P, Store store)
{
    mbar_wait_cluster(bar, 0);
    const int f0 = cl_push_f0<F, V>(part, P), f1 = cl_push_f0<F, V>(part + 1, P), mr = cl_push_mr<F, V>(P);
    for (int f = f0 + (int)threadIdx.x; f < f1; f += NT) {
        float sum = rx[f - f0];
#pragma unroll
        for (int q = 1; q < MAXP; q++)
            if (q < P) sum += rx[q * mr + f - f0];
        store(f, sum);
    }
}
/* The whole exchange for F outputs, J = F / NT a thread, val(j) this part's value of the thread's j-th: bar
 * initialised, the cluster barrier (relaxed: cluster_reads_done's) that publishes it and frees every block's slots,
 * the sends, the owned outputs' sums stored (cl_push_sum). TM (thread-major): thread th's outputs are f = J th + j,
 * sent cl_push_v(J) floats a st.async; else f = th + NT j, a float a send (where the caller's stores of consecutive
 * f must stay consecutive in memory: k_wg8's 32 / 64-token tiles' outputs, thread-major, went uncoalesced, s75).
 * The caller's own writes are done and its reads of the slots' memory too (a block barrier before this where other
 * threads read it). slots: 16-byte aligned, cl_push_mr floats a part. */
template <int F, int NT, int MAXP, bool TM, class Val, class Store>
__device__ __forceinline__ void cl_push_parts(uint32_t bar, float *slots, int part, int P, Val val, Store store)
{
    constexpr int J = F / NT, V = TM ? cl_push_v(J) : 1;
    static_assert(F % NT == 0, "cl_push_parts: whole rounds of the block's threads");
    if (threadIdx.x == 0) cl_push_init<F, V>(bar, part, P);
    cluster_reads_done();
    const uint32_t rx = (uint32_t)__cvta_generic_to_shared(slots);
#pragma unroll
    for (int j = 0; j < J; j += V) {
        float v[V];
#pragma unroll
        for (int k = 0; k < V; k++) v[k] = val(j + k);
        cl_push_send<F, V>(rx, bar, part, P, TM ? J * (int)threadIdx.x + j : (int)threadIdx.x + NT * j, v);
    }
    cl_push_sum<F, V, MAXP, NT>(slots, bar, part, P, store);
}
#endif
