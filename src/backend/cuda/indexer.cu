/*
 * indexer.cu - the lightning indexer on the GPU (MODEL.md §3.6.2): scores of
 * every visible compressed key, then the top-k, written in ascending index
 * order with ties going to the lower index (as the CPU backend). Scores: in
 * reference numerics on the tensor cores (k_idx_score_tc: BF16 queries and
 * keys, the keys as the MMA's M, runs of up to 16 tiles of 64 keys per block,
 * keys staged by cp.async a tile ahead), otherwise a warp per candidate key, 32
 * keys per block (the grid spreads a token's keys over the GPU), queries and
 * keys in shared memory; top-k: a block per token, a select over power-of-two
 * buckets of the keys' range (linear in the candidates; the first version
 * ranked every candidate against every other in one block: quadratic,
 * milliseconds at 128k; kept as the benchmarks' baseline).
 */
#include <stdlib.h>
#include <string.h>

#include <cooperative_groups.h>

#include "backend/cuda/common.cuh"
#include "backend/cuda/rowdot.cuh"

namespace cg = cooperative_groups;

struct idx_args {
    int ratio, nh, hd, topk, max_n; /* per token: max_n scores, then max_n ranks */
    float scale;
    bool reference, fp4; /* fp4: the keys are E2M1 codes + UE8M0 scales (dsv4_kv.fp4_keys) */
    bool bf16;           /* (not fp4) the keys are BF16 (dsv4_kv.bf16_rows) */
    float *pages;
    size_t page_floats, pg_off;
    int page_tokens, max_pages;
};

/* Key c's row (FP32: its floats; BF16: its values two a float; fp4: its code bytes, and *sc its scale bytes). */
__device__ __forceinline__ const float *idx_row(const idx_args &A, const int32_t *page_table, int slot, int64_t c,
                                                const uint8_t **sc)
{
    if (!A.fp4)
        return cmp_row(A.pages, page_table, A.max_pages, A.page_tokens, A.page_floats, A.pg_off, slot, c, A.ratio,
                       dsv4_row_floats(A.hd, A.bf16));
    uint8_t *s8;
    const uint8_t *k = dsv4_idx_key_fp4(A.pages, page_table, A.max_pages, A.page_tokens, A.page_floats, A.pg_off, slot, c,
                                   A.ratio, A.hd, &s8);
    *sc = s8;
    return (const float *)k;
}

/* Scores: block (token, IX_KPB keys), a warp per key; lane l takes heads l,
 * l + 32, ... (each a serial dot product over the head dimension), then a
 * fixed butterfly. A key's score is the same whichever block computes it.
 * The token's queries (rows padded to hd + 1 floats: lane-distinct banks)
 * and the block's keys sit in shared memory; a warp scores two keys at a
 * time (each query value loaded once for both). */
#define IX_KPB 32 /* keys per block */

__device__ __forceinline__ float ix_head(const idx_args &A, const float *wt, int h, float dq, float acc)
{
    float wh = (A.reference ? dsv4_round_bf16(wt[h]) : wt[h]) * A.scale; /* reference: w as BF16 values */
    if (A.reference) {
        wh = dsv4_round_bf16(wh);
        return acc + dsv4_round_bf16(fmaxf(dsv4_round_bf16(dq), 0.0f) * wh);
    }
    return dq > 0 ? acc + wh * dq : acc;
}

__global__ void __launch_bounds__(256) k_idx_score(idx_args A, const dsv4_seg *segs, const int32_t *tok_seg,
                                                   const int64_t *pos, const int32_t *page_table, const float *q,
                                                   const float *w, float *scores)
{
    extern __shared__ float ix_sm[];
    const int t = blockIdx.x, hd = A.hd, qs = hd + 1;
    const int64_t N = (pos[t] + 1) / A.ratio, c0 = (int64_t)blockIdx.y * IX_KPB;
    if (c0 >= N || N <= A.topk) return; /* N <= topk: every candidate is chosen, the scores are not read */
    const int nk = N - c0 < IX_KPB ? (int)(N - c0) : IX_KPB;
    const dsv4_seg s = segs[tok_seg[t]];
    const float *qt = q + (size_t)t * A.nh * hd, *wt = w + (size_t)t * A.nh;
    float *qsm = ix_sm, *ksm = ix_sm + (size_t)A.nh * qs;
    __shared__ const float *kp[IX_KPB];
    __shared__ const uint8_t *kps[IX_KPB];
    if (threadIdx.x < nk) {
        const uint8_t *sc = NULL;
        kp[threadIdx.x] = idx_row(A, page_table, s.slot, c0 + threadIdx.x, &sc);
        kps[threadIdx.x] = sc;
    }
    for (int e = threadIdx.x; e < A.nh * hd; e += blockDim.x) qsm[(e / hd) * qs + e % hd] = qt[e];
    __syncthreads();
    for (int e = threadIdx.x; e < nk * hd; e += blockDim.x) {
        const int r = e / hd, i = e % hd;
        ksm[e] = A.fp4 ? dsv4_e2m1_to_f32((uint8_t)(((const uint8_t *)kp[r])[i >> 1] >> 4 * (i & 1))) *
                             dsv4_e8m0_to_f32(kps[r][i / 32])
                       : kv_el(kp[r], i, A.bf16);
    }
    __syncthreads();
    float *sc = scores + (size_t)t * 2 * A.max_n;
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    for (int k0 = 2 * wid; k0 < nk; k0 += 16) { /* keys k0 and k0 + 1 */
        const bool two = k0 + 1 < nk;
        const float *ka = ksm + (size_t)k0 * hd, *kb = ksm + (size_t)(two ? k0 + 1 : k0) * hd;
        float acc0 = 0, acc1 = 0;
        for (int h = lane; h < A.nh; h += 32) {
            const float *qh = qsm + (size_t)h * qs;
            float d0 = 0, d1 = 0;
#pragma unroll 8
            for (int i = 0; i < hd; i++) {
                const float x = qh[i];
                d0 += x * ka[i];
                d1 += x * kb[i];
            }
            acc0 = ix_head(A, wt, h, d0, acc0);
            acc1 = ix_head(A, wt, h, d1, acc1);
        }
        acc0 = warp_sum(acc0);
        acc1 = warp_sum(acc1);
        if (lane == 0) {
            const float v0 = A.reference ? dsv4_round_bf16(acc0) : acc0, v1 = A.reference ? dsv4_round_bf16(acc1) : acc1;
            sc[c0 + k0] = isnan(v0) ? -INFINITY : v0; /* NaN ranks last, as on the CPU: exactly k are kept */
            if (two) sc[c0 + k0 + 1] = isnan(v1) ? -INFINITY : v1;
        }
    }
}

/* Scores on the tensor cores (reference numerics, up to 64 heads, head_dim a
 * multiple of 32 up to 128): the queries and keys are BF16 values there
 * (Hadamard, BF16, FP4 round trip), so BF16 MMAs with FP32 accumulation
 * form each q . k exactly. Block (token, a run of tiles of 64 keys): the
 * token's query is converted to BF16 in shared memory once; each tile's keys
 * arrive by cp.async in one of two staging slots (dynamic shared memory), the
 * next tile's copy in flight under this tile's MMAs. Warp w = keys 16 w ..
 * 16 w + 15 of a tile (the MMA's M: its lanes decode their own rows' FP4 codes
 * into the A fragments), the heads the N (8 tiles of 8, the query's fragments
 * from shared memory); lane (g, tq) takes dimensions 8 tq .. 8 tq + 7 of each
 * 32 for both operands (the same permutation of K). The epilogue rounds each
 * head's dot product, ReLU, times its BF16 weight, rounds, and sums the heads
 * in a fixed order: within each group of 16 heads h and h + 8, then a tree
 * over the pairs, then the 4 groups in order. Before v61 the warps took 16
 * heads each as the M and every key as the N (the keys decoded once into
 * shared memory for all four, the query's fragments moved into place for
 * every MMA: 1,560 instructions a warp and tile at 16 x 128k under ncu,
 * 1,041 since); the same products, chains and order of sums, so the same
 * bits. */
#define IXT_KEYS 64
__host__ __device__ constexpr int ixt_stride(int hd) { return hd * 2 + (192 - (hd * 2) % 128) % 128; }

/* The rows of tile c0 (nk of them; the rest: row c0's, not copied) into kp: one thread per row. */
__device__ __forceinline__ void ixt_rows(const idx_args &A, const int32_t *page_table, int slot, int64_t c0, int nk,
                                         const float **kp, const uint8_t **kps)
{
    if (threadIdx.x < IXT_KEYS) {
        const uint8_t *sc = NULL;
        kp[threadIdx.x] = idx_row(A, page_table, slot, c0 + ((int)threadIdx.x < nk ? threadIdx.x : 0), &sc);
        kps[threadIdx.x] = sc;
    }
}

/* FP4 keys' scales go through the staging with the codes where a row's scale bytes are whole 4-byte words */
__device__ __forceinline__ bool ixt_sc_staged(int hd) { return hd % 128 == 0; }

/* The keys' first cb bytes (a multiple of 16) into k8 [64][cb]: 16-byte copies when the rows are so aligned
 * (al), else 4-byte ones; rows from nk on zeros. */
__device__ __forceinline__ void ixt_bytes(uint8_t *k8, const float *const *kp, int nk, int cb, bool al)
{
    if (al)
        for (int e = threadIdx.x; e < IXT_KEYS * (cb / 16); e += 128) {
            const int r = e / (cb / 16), j = e % (cb / 16);
            cp_async<16>(k8 + (size_t)r * cb + 16 * j, (const uint8_t *)kp[r] + 16 * j, r < nk);
        }
    else
        for (int e = threadIdx.x; e < IXT_KEYS * (cb / 4); e += 128) {
            const int r = e / (cb / 4), j = e % (cb / 4);
            cp_async<4>(k8 + (size_t)r * cb + 4 * j, (const uint8_t *)kp[r] + 4 * j, r < nk);
        }
}

/* A tile's keys from rows kp (nk of them; the rest of the 64 rows: zeros) into staging kf, 16-byte copies when
 * the pool's rows are 16-byte aligned (al), else 4-byte ones: FP32 [64][hd] floats; BF16 [64][hd] values; FP4
 * [64][hd / 2] code bytes, then (ixt_sc_staged) [64][hd / 32] scale bytes - other widths' scales are read where
 * they are converted. A cp.async group is committed. */
__device__ __forceinline__ void ixt_issue(const int hd, const float *const *kp, const uint8_t *const *kps, int nk,
                                          bool al, bool fp4, bool bf16, float *kf)
{
    if (bf16) { /* BF16 keys: their bytes (hd % 32 == 0) */
        ixt_bytes((uint8_t *)kf, kp, nk, hd * 2, al);
    } else if (fp4) {
        const int cb = hd / 2;
        uint8_t *k8 = (uint8_t *)kf;
        if (ixt_sc_staged(hd))
            for (int e = threadIdx.x; e < IXT_KEYS * (hd / 128); e += 128) {
                const int r = e / (hd / 128), j = e % (hd / 128);
                cp_async<4>(k8 + (size_t)IXT_KEYS * cb + (size_t)r * (hd / 32) + 4 * j, kps[r] + 4 * j, r < nk);
            }
        ixt_bytes(k8, kp, nk, cb, al);
    } else if (al) {
        const int q4 = hd / 4;
        for (int e = threadIdx.x; e < IXT_KEYS * q4; e += 128) {
            const int r = e / q4;
            cp_async<16>(kf + (size_t)r * hd + 4 * (e % q4), kp[r] + 4 * (e % q4), r < nk);
        }
    } else {
        for (int e = threadIdx.x; e < IXT_KEYS * hd; e += 128) {
            const int r = e / hd;
            cp_async<4>(kf + e, kp[r] + e % hd, r < nk);
        }
    }
    cp_async_commit();
}

/* A tile of IXT_KEYS keys within one page from row k0 on (the page's rows, and FP4's scales s0 on, contiguous)
 * into kf, the same layout: the bytes copied as they are, 16 at a time, rows past the token's keys too (their
 * slots exist; their scores are not stored, and a row's values reach only its own scores) */
__device__ __forceinline__ void ixt_issue_ct(const int hd, bool fp4, bool bf16, const float *k0, const uint8_t *s0,
                                             unsigned char *kf)
{
    const int rb = fp4 ? hd / 2 : dsv4_row_floats(hd, bf16) * 4; /* a row's bytes (FP4: its codes) */
    for (int e = threadIdx.x; e < IXT_KEYS * rb / 16; e += 128)
        cp_async<16>(kf + 16 * e, (const uint8_t *)k0 + 16 * e, true);
    if (fp4)
        for (int e = threadIdx.x; e < IXT_KEYS * (hd / 32) / 16; e += 128)
            cp_async<16>(kf + (size_t)IXT_KEYS * rb + 16 * e, s0 + 16 * e, true);
    cp_async_commit();
}

/* Two values rounded to BF16 at once (F2FP: round to nearest even, as dsv4_round_bf16 for every value but a
 * NaN, whose payload may differ - the epilogue below turns a NaN into 0 or its score into -inf either way). */
__device__ __forceinline__ float2 ixt_round2(float a, float b)
{
    const __nv_bfloat162 r = __floats2bfloat162_rn(a, b);
    return make_float2(__low2float(r), __high2float(r));
}

/* HDT: the key width fixed (Flash's 128: the loops' index arithmetic by shifts, not divisions), or 0 (A.hd);
 * KF: the keys' format (IXT_F32, IXT_BF16, IXT_FP4: A.fp4 / A.bf16 as template constants).
 * Block (token, y): the token's tiles of 64 keys split evenly over gridDim.y blocks (each a run of at most
 * IXT_TMAX; the grid is sized for the largest context a launch may see, so blocks past the token's tiles
 * leave at once). Tiles arrive by cp.async in two alternating staging slots of `stage` bytes, tile i + 1's
 * copy in flight under tile i's MMAs; one barrier a tile. */
#define IXT_TMAX 16 /* tiles a block at most (DSV4_IXT_TMAX: another bound, to measure) */
enum { IXT_F32, IXT_BF16, IXT_FP4 };
template <int HDT, int KF>
__global__ void __launch_bounds__(128, 4)
    k_idx_score_tc(idx_args A, const dsv4_seg *segs, const int32_t *tok_seg, const int64_t *pos,
                   const int32_t *page_table, const float *q, const float *w, float *scores, int stage)
{
    __shared__ __align__(16) unsigned char qs[64 * ixt_stride(128)];
    __shared__ const float *kp[3][IXT_KEYS];    /* the rows of tiles i, i + 1, i + 2 (by i mod 3) */
    __shared__ const uint8_t *kps[3][IXT_KEYS]; /* fp4: their scale bytes */
    __shared__ __align__(8) float wsm[64];
    extern __shared__ __align__(16) float ixt_kf[]; /* two staging slots of `stage` bytes */
    const int t = blockIdx.x, hd = HDT ? HDT : A.hd, st = ixt_stride(hd), tid = threadIdx.x, lane = tid & 31,
              w4 = tid >> 5;
    const int g = lane >> 2, tq = lane & 3, q4 = hd / 4;
    const int64_t N = (pos[t] + 1) / A.ratio, nt = (N + IXT_KEYS - 1) / IXT_KEYS,
                  per = (nt + gridDim.y - 1) / gridDim.y, tb = (int64_t)blockIdx.y * per;
    if (N <= A.topk) { /* every candidate is chosen: k_idx_topk does not read the scores. After the wait, so that
                        * this grid completes after the kernel before it (the kernels after wait on this one) */
        pdl_start();
        return;
    }
    if (tb >= nt) return;                                 /* past the token's tiles (others of the grid wait) */
    const int ntl = (int)(nt - tb < per ? nt - tb : per); /* this block's tiles */
    const int64_t cb = tb * IXT_KEYS;
    /* the rows' addresses (segment, page table: the step's constants) before griddepcontrol.wait, under the
     * kernel before's tail (launched with PDL); the query, its weights and this step's keys after it */
    const dsv4_seg s = segs[tok_seg[t]];
    const bool al = ((uintptr_t)A.pages & 15) == 0 && ((A.page_floats | A.pg_off) & 3) == 0;
    const auto nk_at = [&](int64_t c0) { return (int)(N - c0 < IXT_KEYS ? N - c0 : IXT_KEYS); };
    /* ct: a tile never crosses a page (a page's keys a multiple of 64), its rows 16-byte aligned and (FP4)
     * its scales staged: the tile's bytes copied whole from its first row's (Flash); else a row at a time */
    const bool ct = al && (A.page_tokens / A.ratio) % IXT_KEYS == 0 && (KF != IXT_FP4 || ixt_sc_staged(hd));
    const uint8_t *s0 = NULL;
    const float *k0 = NULL;
    if (ct)
        k0 = idx_row(A, page_table, s.slot, cb, &s0);
    else {
        ixt_rows(A, page_table, s.slot, cb, nk_at(cb), kp[0], kps[0]);
        if (ntl > 1) ixt_rows(A, page_table, s.slot, cb + IXT_KEYS, nk_at(cb + IXT_KEYS), kp[1], kps[1]);
    }
    /* tile ti (its keys from c0) into staging slot dst */
    const auto issue = [&](int ti, int64_t c0, unsigned char *dst) {
        if (ct) {
            const uint8_t *sc = s0;
            const float *kk = ti ? idx_row(A, page_table, s.slot, c0, &sc) : k0;
            ixt_issue_ct(hd, KF == IXT_FP4, KF == IXT_BF16, kk, sc, dst);
        } else
            ixt_issue(hd, kp[ti % 3], kps[ti % 3], nk_at(c0), al, KF == IXT_FP4, KF == IXT_BF16, (float *)dst);
    };
    pdl_start();
    const float *qt = q + (size_t)t * A.nh * hd, *wt = w + (size_t)t * A.nh;
    /* with the width fixed and at most 64 heads (Flash's 64 x 128: 16 a thread), the query's loads all at once,
     * in flight with the keys' copies; the loop below takes them 4 at a time, a round trip each (v49's ncu:
     * 8.5 us a call alone at a short context) */
    constexpr int QE = HDT ? 64 * (HDT / 4) / 128 : 1; /* float4s a thread */
    const bool q_early = HDT != 0;
    float4 qv[QE];
    if (q_early)
#pragma unroll
        for (int i = 0; i < QE; i++) {
            const int e = tid + 128 * i, h = e / q4, hc = h < A.nh ? h : A.nh - 1; /* clamped: every load issued */
            qv[i] = *(const float4 *)(qt + (size_t)hc * hd + 4 * (e % q4));
        }
    __syncthreads(); /* kp (the row-at-a-time path) */
    unsigned char *const slot0 = (unsigned char *)ixt_kf;
    issue(0, cb, slot0);
    if (q_early) {
#pragma unroll
        for (int i = 0; i < QE; i++) { /* heads past nh: zero */
            const int e = tid + 128 * i, h = e / q4;
            *(uint2 *)(qs + h * st + 8 * (e % q4)) = bf4_rn(h < A.nh ? qv[i] : make_float4(0, 0, 0, 0));
        }
    } else
        for (int e = tid; e < 64 * q4; e += 128) { /* heads past nh (to 64: every n tile's MMAs run): zero */
            const int h = e / q4;
            const float4 v = h < A.nh ? *(const float4 *)(qt + (size_t)h * hd + 4 * (e % q4)) : make_float4(0, 0, 0, 0);
            *(uint2 *)(qs + h * st + 8 * (e % q4)) = bf4_rn(v);
        }
    if (tid < 64) /* the heads' weights as BF16 values, times the scale, rounded */
        wsm[tid] = tid < A.nh ? dsv4_round_bf16(dsv4_round_bf16(wt[tid]) * A.scale) : 0.0f;
    const int r0 = 16 * w4 + g, r1 = r0 + 8; /* the warp's keys of a tile: 16 w4 .. + 15, the lane's rows g, g + 8 */
    for (int ti = 0; ti < ntl; ti++) {
        const int64_t c0 = cb + (int64_t)ti * IXT_KEYS;
        const int nk = nk_at(c0);
        cp_async_wait<0>();
        __syncthreads();  /* tile ti staged (and the query written); every warp is done with tile ti - 1 */
        if (ti + 1 < ntl) /* the next tile's keys into the other slot, in flight under these MMAs */
            issue(ti + 1, c0 + IXT_KEYS, slot0 + (size_t)((ti + 1) & 1) * stage);
        const unsigned char *sl = slot0 + (size_t)(ti & 1) * stage;
        /* keys as the MMA's M (rows r0, r1 of the lane), heads as the N, the head dimension the K: lane (g, tq)
         * takes dimensions 8 tq .. 8 tq + 7 of each 32 for both operands (the same permutation of K as before
         * v61, whose warps took heads as the M: the same products at the same K positions of the same chain) */
        float acc[8][4];
#pragma unroll
        for (int n = 0; n < 8; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
        for (int d = 0; d < hd / 32; d++) {
            uint32_t k0[4], k1[4]; /* a key's 8 values as BF16x2 words: dims 8 tq + {0,1}, {2,3}, {4,5}, {6,7} */
            const auto key = [&](int r, uint32_t *kk) {
                if constexpr (KF == IXT_FP4) {
                    const uint32_t cw = *(const uint32_t *)(sl + (size_t)r * (hd / 2) + 16 * d + 4 * tq);
                    const uint8_t sb = ixt_sc_staged(hd) ? sl[(size_t)IXT_KEYS * (hd / 2) + (size_t)r * (hd / 32) + d]
                                                         : kps[ti % 3][r][d];
                    const uint32_t s2 = bf16x2_of(dsv4_e8m0_to_f32(sb));
                    fp4x4_bf16<0>(cw, s2, kk[0], kk[1]);
                    fp4x4_bf16<1>(cw, s2, kk[2], kk[3]);
                } else if constexpr (KF == IXT_BF16) {
                    const uint4 v = *(const uint4 *)(sl + (size_t)r * hd * 2 + 64 * d + 16 * tq);
                    kk[0] = v.x, kk[1] = v.y, kk[2] = v.z, kk[3] = v.w;
                } else {
                    const float *f = (const float *)sl + (size_t)r * hd + 32 * d + 8 * tq;
                    const uint2 a = bf4_rn(*(const float4 *)f), b = bf4_rn(*(const float4 *)(f + 4));
                    kk[0] = a.x, kk[1] = a.y, kk[2] = b.x, kk[3] = b.y;
                }
            };
            key(r0, k0);
            key(r1, k1);
#pragma unroll
            for (int n = 0; n < 8; n++) { /* heads past nh: zero queries, left out below */
                const uint4 qf = *(const uint4 *)(qs + (8 * n + g) * st + 64 * d + 16 * tq);
                mma_bf16(acc[n], k0[0], k1[0], k0[1], k1[1], qf.x, qf.y);
                mma_bf16(acc[n], k0[2], k1[2], k0[3], k1[3], qf.z, qf.w);
            }
        }
        /* the epilogue, in the order the heads were summed before (v60's warps of 16 heads): each head's term
         * BF16(ReLU(BF16(dq)) x w); within a group of 16 heads (n tiles 2 j and 2 j + 1) head h and h + 8
         * (0 + one + the other), then those pairs' tree over h's low three bits (the lane's two columns, then
         * the lanes 1 and 2 apart); the four groups added in order */
        float sg[2][4];
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int rr = 0; rr < 2; rr++) {
                float v2[2];
                const float2 wa = *(const float2 *)(wsm + 16 * j + 2 * tq),
                             wb = *(const float2 *)(wsm + 16 * j + 8 + 2 * tq);
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const float2 dq = ixt_round2(acc[2 * j][2 * rr + e], acc[2 * j + 1][2 * rr + e]);
                    const float2 y =
                        ixt_round2(fmaxf(dq.x, 0.0f) * (e ? wa.y : wa.x), fmaxf(dq.y, 0.0f) * (e ? wb.y : wb.x));
                    /* (0 + one) + the other: a head past nh adds +0 (its query and weight are zero, so its term
                     * is BF16(ReLU(0 or NaN) x 0) = +0), which leaves 0 + one as it is (never -0) */
                    v2[e] = (0.0f + y.x) + y.y;
                }
                float u = v2[0] + v2[1];
                u += __shfl_xor_sync(0xffffffffu, u, 1);
                u += __shfl_xor_sync(0xffffffffu, u, 2);
                sg[rr][j] = u;
            }
        if (tq < 2) {
            const int r = tq ? r1 : r0; /* lane tq writes row tq's score (every lane of a row holds its sums) */
            const float v = dsv4_round_bf16(
                (((tq ? sg[1][0] : sg[0][0]) + (tq ? sg[1][1] : sg[0][1])) + (tq ? sg[1][2] : sg[0][2])) +
                (tq ? sg[1][3] : sg[0][3]));
            if (r < nk) scores[(size_t)t * 2 * A.max_n + c0 + r] = isnan(v) ? -INFINITY : v; /* NaN ranks last */
        }
        if (!ct && ti + 2 < ntl) /* the rows of the tile after next (their slot's last reader, tile ti - 1, is done) */
            ixt_rows(A, page_table, s.slot, c0 + 2 * IXT_KEYS, nk_at(c0 + 2 * IXT_KEYS), kp[(ti + 2) % 3],
                     kps[(ti + 2) % 3]);
    }
}

/* warp_scan_incl and the warp's total. */
__device__ __forceinline__ int ix_warp_scan(int v, int *total)
{
    v = warp_scan_incl(v);
    *total = __shfl_sync(0xffffffffu, v, 31);
    return v;
}

/* An inclusive scan over a block of 32 warps and its total with one barrier: the warps' totals to buf, then
 * each warp scans them itself. buf's next writer must come after a barrier that follows this call (the top-k's
 * output alternates two buffers). */
__device__ __forceinline__ int ix_block_scan(int v, int *buf, int *total)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    int tot;
    v = ix_warp_scan(v, &tot);
    if (lane == 0) buf[wid] = tot;
    __syncthreads();
    const int x = buf[lane];
    const int pre = ix_warp_scan(x, total);
    return v + __shfl_sync(0xffffffffu, pre - x, wid);
}

/* A score as an unsigned key in the scores' order (-0 as +0: they tie). */
__device__ __forceinline__ uint32_t ix_key(float v)
{
    /* negatives as the bits' complement plus one (2^31 - |v|'s bits): values whose low bits are zero (BF16
     * scores: 16) keep them zero whatever their sign, which k_idx_topk's buckets use */
    const uint32_t b = __float_as_uint(v + 0.0f);
    return (b & 0x80000000u ? ~b : b | 0x80000000u) + (b >> 31);
}

#define IX_BT 1024 /* threads of the top-k block */
/* -DIX_TRACE: k_idx_topk's thread 0 of token 0 stamps clock64 at each phase's end and prints the cycles between
 * them for calls 20 to 27 of each size class ("ixtrace N passes c0 .. c7": the wait, the keys' load and bounds, each
 * select pass, the output); a measurement build only */
#ifdef IX_TRACE
__device__ unsigned ix_trace_calls[3]; /* per N: <= 1,024, <= 8,192, more */
#define IX_T() (tid == 0 && t == 0 && ix_n < 16 ? (void)(ix_tr[ix_n++] = clock64()) : (void)0)
#else
#define IX_T() ((void)0)
#endif
#define IX_DIG 11   /* bits of a select pass: 2,048 buckets */
#define IX_SR  8    /* the top-k's small path: at most 8 keys a thread, IX_SR x IX_BT candidates (ix_topk_small_n) */
#define IX_CLS 3    /* the clustered top-k's sizes: 2, 4 and 8 blocks a token */
#define IX_CL_MIN 49152 /* candidates past which a token is the cluster's (fewer: block 0's; in shared memory) */
/* The first candidate of slice b of ncl <= 8 (N b / ncl): in 32 bits where N b fits (a 64-bit division is a
 * long call; the cluster computed 16 of them in its bounds phase) */
__device__ __forceinline__ int ix_slice(int N, int b, int ncl)
{
    return N < (1 << 27) ? (int)((unsigned)N * (unsigned)b / (unsigned)ncl) : (int)((int64_t)N * b / ncl);
}

/* A barrier of the top-k's first W warps alone (the others have left) */
template <int W> __device__ __forceinline__ void ix_bar_small(void)
{
    asm volatile("bar.sync 1, %0;" ::"n"(32 * W) : "memory");
}

/* Top-k of a token's N scores: the k highest, ties to the lower index, in
 * ascending index order - the same set as ranking every candidate against
 * every other (the CPU's rule).
 *
 * One pass reads the scores as order-preserving keys (into shared memory when
 * they fit, N <= cap: the later passes read them there) and finds their range:
 * the largest key and a lower bound of the k-th - the smallest of the
 * threads' largest keys (when the block has at least k threads with keys, each
 * the largest of its own, so k distinct keys are at least that high; else the
 * smallest key). Then a select on the keys between the bounds: 2,048 buckets
 * of a power-of-two width over the range, counted in shared memory; the
 * warps' bucket sums find the warp, and its scan the bucket, holding the k-th
 * highest, which becomes the range, until a bucket holds one key value or
 * its keys are all taken (at most three passes, three barriers each). Buckets
 * are no narrower than the low bits every key leaves zero (BF16 scores: 16),
 * so such scores end in one or two passes. Buckets over the range, not the
 * keys' top bits: scores
 * cluster in a few binades and fixed digits put most of them in one bin, a
 * queue of atomics on one address. Last, 32 x IX_BT candidates at a time, each
 * warp ballots 1,024 consecutive ones into 32 words (lane i keeps the i-th:
 * thread order is index order), and two scans of the words' bit counts
 * give each thread its ties' rank and its place in the output (a last chunk
 * of at most 1,024 candidates: warp 0 alone, warp scans). Loads are
 * unconditional at clamped indices, issued before their use (a block-uniform
 * guard around each made them one round trip after another: N = 32,768 took
 * ~7,000 cycles longer). Decode's top-512 of 1,024 took ~19,000 cycles after
 * the wait before the one-warp chunk, the barrier cuts and the zero bits,
 * ~13,000 since (bench/results/2026-12-02-s38/). Up to 8,192 candidates take
 * a path of their own (`small` below: the keys in registers, as few warps as
 * hold them four a thread, the output one scan): ~7,000 cycles at 1,024,
 * ~9,300 at 4,096 (bench/results/2026-12-02-s39/small2/).
 *
 * CL > 1: a cluster of CL blocks a token (grid z), for few tokens with many
 * candidates (one block walked a 1M-token context's 262,144 in ~120 us). A
 * token of more than cl_min candidates (past the small path) is the whole
 * cluster's; one of fewer block 0's alone, as CL = 1 (at 32,768 candidates
 * the cluster is even with one block at 1 token and slower at 16: 16 x 8
 * blocks on the SMs against 16, bench/results/2026-12-03-s48/bound/). Each
 * block takes a contiguous slice of the candidates (block b: N b / CL ..), in
 * shared memory when it fits cap; the range's bounds and each pass's buckets
 * are the cluster's - each block counts its slice; block b adds stripe b of
 * the buckets over every block's counts, and every block reads all the
 * stripes (16-byte loads through distributed shared memory, two cluster
 * barriers a pass) - so every block makes the same choices; last, each
 * block's keys above hi and in [lo, hi], added over the blocks before it,
 * start its output. The same set in the same order as one block's (the
 * contract fixes it). The small path stays block 0's. */
template <int CL>
__global__ void __launch_bounds__(IX_BT) k_idx_topk(idx_args A, const int64_t *pos, const float *scores, int32_t *idx,
                                                    int32_t *cnt, int cap, int small_n, int cl_min)
{
    extern __shared__ uint32_t ix_keys[]; /* cap keys */
    /* CL > 1: hist2[1] the cluster's sums of every bucket, s_str this block's stripe of them (buckets cb S ..) */
    __shared__ __align__(16) int hist2[CL > 1 ? 2 : 1][1 << IX_DIG], sh[32], s_sa[32], s_sb[32];
    __shared__ __align__(16) int s_str[CL > 1 ? (1 << IX_DIG) / CL : 4];
    __shared__ uint32_t s_red[4][IX_BT / 32], s_lo, s_hi;
    __shared__ int s_need, s_all;
    __shared__ uint32_t s_cb[4]; /* CL > 1: the block's bounds (r0 .. r3 below) */
    __shared__ int s_cc[2];      /* CL > 1: its keys above hi and in [lo, hi] */
    int *hist = hist2[0];
    const int t = blockIdx.x, cb = CL > 1 ? (int)blockIdx.z : 0, tid = threadIdx.x, lane = tid & 31, wid = tid >> 5;
    const int N = (int)((pos[t] + 1) / A.ratio); /* at most max_n */
    const float *sc = scores + (size_t)t * 2 * A.max_n;
    const int k = N < A.topk ? N : A.topk;
    int32_t *out = idx + (size_t)t * A.topk;
#ifdef IX_TRACE
    long long ix_tr[16] = {0};
    const unsigned long long ix_gt = dev_ns();
    int ix_n = 0, ix_passes = 0;
#endif
    IX_T();
    pdl_start();
    IX_T();
    if (cb > 0 && (N <= A.topk || N <= small_n)) return; /* block 0's alone */
    if (tid == 0) cnt[t] = k;
    if (N <= A.topk) {
        for (int c = tid; c < N; c += IX_BT) out[c] = c;
        return;
    }
#ifdef IX_TRACE
#define IX_TRACE_PRINT()                                                                                               \
    do {                                                                                                               \
        if (tid == 0 && t == 0) {                                                                                      \
            const unsigned call = atomicAdd(&ix_trace_calls[N <= 1024 ? 0 : N <= 8192 ? 1 : 2], 1u);                   \
            if (call >= 20 && call < 28) {                                                                             \
                long long d[15];                                                                                       \
                for (int i = 0; i < 15; i++) d[i] = i + 1 < ix_n ? ix_tr[i + 1] - ix_tr[i] : 0ll;                      \
                printf("ixtrace N %d cb %d gt %llu passes %d %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld "  \
                       "%lld %lld %lld %lld\n",                                                                        \
                       N, (int)blockIdx.z, ix_gt % 100000000ull, ix_passes, d[0], d[1], d[2], d[3], d[4], d[5], d[6],  \
                       d[7], d[8], d[9], d[10], d[11], d[12], d[13], d[14]);                                           \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)
#else
#define IX_TRACE_PRINT() ((void)0)
#endif
    /* Up to small_n candidates (decode's contexts to 32k tokens): the first W warps alone - as few as hold the
     * candidates four a thread (8 to 1,024 candidates, 16 to 2,048, all 32 to 4,096; then eight a thread) -
     * each thread's R keys (candidates R tid ..: index order is thread order) 16-byte loads into registers kept
     * to the output.
     * A pass as below on W warps' barriers (bar 1): the block-wide steps every warp repeats cost W / 32 of the
     * issue slots; and the output is one scan: a candidate's place is the keys above hi before it plus
     * min(need, the keys in [lo, hi] before it), both counts one packed scan of the threads' counts (no second
     * read of the keys, no ballots a word). The same picks as the general path (DSV4_IX_SMALL=0: it alone). */
    auto small = [&](auto wc, auto rc) {
        constexpr int W = decltype(wc)::value, R = decltype(rc)::value;
        static_assert(R % 4 == 0 && R <= IX_SR, "k_idx_topk: a thread's keys are whole float4s");
        if (wid >= W) return;
        const int c0 = tid * R;
        uint32_t u[R];
        if ((((uintptr_t)sc) & 15) == 0 && c0 + R <= N) {
            float4 f[R / 4];
#pragma unroll
            for (int i = 0; i < R / 4; i++) f[i] = *(const float4 *)(sc + c0 + 4 * i);
#pragma unroll
            for (int i = 0; i < R / 4; i++)
                u[4 * i] = ix_key(f[i].x), u[4 * i + 1] = ix_key(f[i].y), u[4 * i + 2] = ix_key(f[i].z),
                      u[4 * i + 3] = ix_key(f[i].w);
        } else
#pragma unroll
            for (int j = 0; j < R; j++) u[j] = c0 + j < N ? ix_key(sc[c0 + j]) : 0u; /* (past N: never read) */
        uint32_t tmax = 0, tmin = 0xffffffffu, tor = 0;
#pragma unroll
        for (int j = 0; j < R; j++) {
            const bool in = c0 + j < N;
            tmax = in ? max(tmax, u[j]) : tmax;
            tmin = in ? min(tmin, u[j]) : tmin;
            tor |= in ? u[j] : 0u;
        }
        for (int o = 16; o; o >>= 1) {
            tmin = min(tmin, __shfl_xor_sync(0xffffffffu, tmin, o));
            tmax = max(tmax, __shfl_xor_sync(0xffffffffu, tmax, o));
            tor |= __shfl_xor_sync(0xffffffffu, tor, o);
        }
        if (lane == 0) s_red[1][wid] = tmin, s_red[2][wid] = tmax, s_red[3][wid] = tor;
        for (int b = tid; b < (1 << IX_DIG); b += 32 * W) hist[b] = 0;
        ix_bar_small<W>();
        uint32_t lo = lane < W ? s_red[1][lane] : 0xffffffffu, hi = lane < W ? s_red[2][lane] : 0u,
                 orv = lane < W ? s_red[3][lane] : 0u;
        for (int o = 16; o; o >>= 1) {
            lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, o));
            hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, o));
            orv |= __shfl_xor_sync(0xffffffffu, orv, o);
        }
        const int tz = orv ? __ffs((int)orv) - 1 : 31;
        int need = k;
        IX_T();
        constexpr int BT = (1 << IX_DIG) / (32 * W); /* buckets a thread reads: nb - 1 - BT tid - i */
        for (;;) {
            const uint32_t span = hi - lo;
            const int bits = 32 - __clz(span), sh_w = bits - IX_DIG > tz ? bits - IX_DIG : tz;
            const int nb = (int)(span >> sh_w) + 1;
#pragma unroll
            for (int j = 0; j < R; j++)
                if (c0 + j < N && u[j] >= lo && u[j] <= hi) atomicAdd(&hist[(u[j] - lo) >> sh_w], 1);
            ix_bar_small<W>();
            int hb[BT], ts = 0;
#pragma unroll
            for (int i = 0; i < BT; i++) {
                const int b = nb - 1 - BT * tid - i;
                hb[i] = b >= 0 ? hist[b > 0 ? b : 0] : 0;
                if (b >= 0) hist[b] = 0; /* zero for the next pass: every bucket is one thread's */
                ts += hb[i];
            }
            int wt;
            const int wi = ix_warp_scan(ts, &wt);
            if (lane == 0) sh[wid] = wt;
            ix_bar_small<W>();
            { /* the warp holding the need-th highest, then its thread, then the bucket */
                const int x = lane < W ? sh[lane] : 0, pre = warp_scan_incl(x);
                const int tw = __ffs(__ballot_sync(0xffffffffu, pre >= need)) - 1;
                const int before = __shfl_sync(0xffffffffu, pre - x, tw);
                const int incl = before + wi, excl = incl - ts;
                if (wid == tw && excl < need && incl >= need) {
                    int acc = excl;
#pragma unroll
                    for (int i = 0; i < BT; i++) {
                        if (acc + hb[i] >= need) {
                            const uint64_t b0 = (uint64_t)lo + ((uint64_t)(nb - 1 - BT * tid - i) << sh_w),
                                           b1 = b0 + ((uint64_t)1 << sh_w) - 1;
                            s_lo = (uint32_t)b0;
                            s_hi = b1 < hi ? (uint32_t)b1 : hi;
                            s_need = need - acc;
                            s_all = hb[i] == need - acc;
                            break;
                        }
                        acc += hb[i];
                    }
                }
            }
            ix_bar_small<W>();
            lo = s_lo;
            hi = s_hi;
            need = s_need;
            IX_T();
#ifdef IX_TRACE
            ix_passes++;
#endif
            if (s_all || sh_w <= tz) break;
        }
        /* the places: above hi before this thread (high half) and in [lo, hi] before it (low half), one scan */
        uint32_t gtm = 0, eqm = 0;
#pragma unroll
        for (int j = 0; j < R; j++) {
            const bool in = c0 + j < N;
            gtm |= (uint32_t)(in && u[j] > hi) << j;
            eqm |= (uint32_t)(in && u[j] >= lo && u[j] <= hi) << j;
        }
        const int cnt2 = (__popc(gtm) << 16) | __popc(eqm);
        int wt;
        const int wi = ix_warp_scan(cnt2, &wt);
        if (lane == 0) s_sa[wid] = wt;
        ix_bar_small<W>();
        const int x = lane < W ? s_sa[lane] : 0, pre = warp_scan_incl(x);
        const int ex = __shfl_sync(0xffffffffu, pre - x, wid) + wi - cnt2;
        int gb = ex >> 16, eb = ex & 0xffff;
#pragma unroll
        for (int j = 0; j < R; j++) {
            if (gtm >> j & 1)
                out[gb++ + (eb < need ? eb : need)] = c0 + j;
            else if (eqm >> j & 1) {
                if (eb < need) out[gb + eb] = c0 + j;
                eb++;
            }
        }
        IX_T();
        IX_TRACE_PRINT();
    };
    if (N <= small_n) {
        using std::integral_constant;
        if (N <= 4 * 32 * 8)
            small(integral_constant<int, 8>(), integral_constant<int, 4>());
        else if (N <= 4 * 32 * 16)
            small(integral_constant<int, 16>(), integral_constant<int, 4>());
        else if (N <= 4 * IX_BT)
            small(integral_constant<int, 32>(), integral_constant<int, 4>());
        else
            small(integral_constant<int, 32>(), integral_constant<int, 8>());
        return;
    }
    /* the blocks that take the token (uniform in a cluster: N is the token's) and this block's slice:
     * candidates c0b .. c0b + NB - 1 (one block: all) */
    const int ncl = CL > 1 && N > cl_min ? CL : 1;
    const bool clx = CL > 1 && ncl > 1;
    if (cb >= ncl) return;
    const int c0b = ix_slice(N, cb, ncl), NB = ix_slice(N, cb + 1, ncl) - c0b;
    const int NL = NB > 0 ? NB - 1 : 0; /* the index the clamped loads read (a slice may be empty: N < CL) */
    sc += c0b;
    const bool smem = NB <= cap;
    uint32_t tmax = 0, tmin = 0xffffffffu, tor = 0;
    for (int base = 0; base < NB; base += 8 * IX_BT) {
        float v[8];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int c = base + j * IX_BT + tid;
            v[j] = sc[c < NB ? c : NL];
        }
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (base + j * IX_BT + tid < NB) { /* the thread's own keys only: distinct from every other's */
                const uint32_t u = ix_key(v[j]);
                if (smem) ix_keys[base + j * IX_BT + tid] = u;
                tmax = max(tmax, u);
                tmin = min(tmin, u);
                tor |= u;
            }
    }
    IX_T();
    /* A lower bound of the k-th: groups of G consecutive threads, G the largest power of two up to 32 whose
     * groups with keys, over the blocks taking the token, are at least k - each group's largest key is a
     * distinct candidate, so k of them are at least the smallest of those; G = 0, none: the smallest key. (A
     * thread's own largest, G = 1, was the bound before: in a cluster of 8 at 32,768 candidates, four keys a
     * thread, it left twice the passes one block's 32 keys a thread did; bench/results/2026-12-03-s48/.) */
    int G = 32;
    if (N / ncl >= IX_BT) /* every block's threads all have keys (a cluster's tokens, one block past 1,024) */
        while (G > 0 && ncl * (IX_BT / G) < k) G >>= 1;
    else
        for (; G > 0; G >>= 1) {
            int ng = 0;
            for (int b = 0; b < ncl; b++) {
                const int nb = ix_slice(N, b + 1, ncl) - ix_slice(N, b, ncl);
                ng += ((nb < IX_BT ? nb : IX_BT) + G - 1) / G;
            }
            if (ng >= k) break;
        }
    uint32_t gm = tmax; /* a thread without keys: 0, below every group's keys */
    for (int o = 1; o < G; o <<= 1) gm = max(gm, __shfl_xor_sync(0xffffffffu, gm, o));
    const bool mine = G > 0 && (tid & -G) < NB; /* the thread's group read keys of its own */
    uint32_t r0 = mine ? gm : 0xffffffffu, r1 = tmin, r2 = tmax, r3 = tor;
    for (int o = 16; o; o >>= 1) {
        r0 = min(r0, __shfl_xor_sync(0xffffffffu, r0, o));
        r1 = min(r1, __shfl_xor_sync(0xffffffffu, r1, o));
        r2 = max(r2, __shfl_xor_sync(0xffffffffu, r2, o));
        r3 |= __shfl_xor_sync(0xffffffffu, r3, o);
    }
    if (lane == 0) s_red[0][wid] = r0, s_red[1][wid] = r1, s_red[2][wid] = r2, s_red[3][wid] = r3;
    for (int b = tid; b < (1 << IX_DIG); b += IX_BT) hist[b] = 0; /* every pass's buckets start at zero */
    __syncthreads();
    IX_T();
    { /* the warps' bounds, by every warp (no second barrier) */
        r0 = s_red[0][lane], r1 = s_red[1][lane], r2 = s_red[2][lane], r3 = s_red[3][lane];
        for (int o = 16; o; o >>= 1) {
            r0 = min(r0, __shfl_xor_sync(0xffffffffu, r0, o));
            r1 = min(r1, __shfl_xor_sync(0xffffffffu, r1, o));
            r2 = max(r2, __shfl_xor_sync(0xffffffffu, r2, o));
            r3 |= __shfl_xor_sync(0xffffffffu, r3, o);
        }
    }
    cg::cluster_group cl = cg::this_cluster();
    if (clx) { /* the cluster's bounds: every block's, by every warp */
        if (tid == 0) s_cb[0] = r0, s_cb[1] = r1, s_cb[2] = r2, s_cb[3] = r3;
        cl.sync();
        IX_T();
        r0 = r1 = 0xffffffffu, r2 = r3 = 0u;
        if (lane < CL) {
            const uint32_t *x = cl.map_shared_rank(s_cb, lane);
            r0 = x[0], r1 = x[1], r2 = x[2], r3 = x[3];
        }
        for (int o = 16; o; o >>= 1) {
            r0 = min(r0, __shfl_xor_sync(0xffffffffu, r0, o));
            r1 = min(r1, __shfl_xor_sync(0xffffffffu, r1, o));
            r2 = max(r2, __shfl_xor_sync(0xffffffffu, r2, o));
            r3 |= __shfl_xor_sync(0xffffffffu, r3, o);
        }
    }
    /* the low bits zero in every key (BF16 scores: at least 16): buckets no narrower than 2^tz, and one that
     * narrow holds one key value - the select's end (BF16 scores end in one or two passes instead of three) */
    const int tz = r3 ? __ffs((int)r3) - 1 : 31;
    IX_T();
    uint32_t lo = G == 0 ? r1 : r0, hi = r2;
    int need = k; /* keys above hi are taken, and the first `need` in [lo, hi] */
    /* A pass: the keys' atomics, a barrier (a cluster: its sums, below); each thread reads its two buckets (and
     * zeroes them for the next pass: every bucket below nb is one thread's), the warps' sums to shared memory, a
     * barrier; every warp finds the warp holding the need-th highest from those sums, that warp scans its own
     * buckets and writes the next range, a barrier. Three barriers a pass (block_scan_incl's four and the
     * zeroing's two before). */
    for (;;) {
        const uint32_t span = hi - lo;
        const int bits = 32 - __clz(span), sh_w = bits - IX_DIG > tz ? bits - IX_DIG : tz; /* bucket width 2^sh_w */
        const int nb = (int)(span >> sh_w) + 1;
        for (int base = 0; base < NB; base += 4 * IX_BT) {
            uint32_t u[4];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int c = base + j * IX_BT + tid, cc = c < NB ? c : NL;
                u[j] = smem ? ix_keys[cc] : ix_key(sc[cc]);
            }
#pragma unroll
            for (int j = 0; j < 4; j++)
                if (base + j * IX_BT + tid < NB && u[j] >= lo && u[j] <= hi) atomicAdd(&hist[(u[j] - lo) >> sh_w], 1);
        }
        /* the bucket holding the need-th highest: thread i holds buckets nb-1-2i and nb-2-2i */
        const int bh = nb - 1 - 2 * tid, bl = bh - 1;
        int hh = 0, hl = 0;
        if (clx) {
            /* the cluster's sums: block cb adds its stripe of the buckets (S = 2,048 / CL of them, from cb S) over
             * every block's counts, then every block reads every stripe, by 16-byte loads - (S / 4) CL + 512 a
             * block a pass (each thread's two buckets from each block, 2 CL scalar loads a thread, were 16,384
             * a block at CL = 8: ~10,000 cycles a pass, bench/results/2026-12-03-s48/cltrace/) */
            constexpr int S = (1 << IX_DIG) / CL;
            cl.sync(); /* every block's counts */
            IX_T();
            if (tid < S / 4) {
                int4 x[CL];
#pragma unroll
                for (int b = 0; b < CL; b++) x[b] = ((const int4 *)cl.map_shared_rank(hist, b))[cb * (S / 4) + tid];
                int4 a = x[0];
#pragma unroll
                for (int b = 1; b < CL; b++) a.x += x[b].x, a.y += x[b].y, a.z += x[b].z, a.w += x[b].w;
                ((int4 *)s_str)[tid] = a;
            }
            cl.sync(); /* every stripe (and every block done reading the counts) */
            IX_T();
            int *gh = hist2[CL > 1 ? 1 : 0];
            for (int i = tid; i < (1 << IX_DIG) / 4; i += IX_BT)
                ((int4 *)gh)[i] = ((const int4 *)cl.map_shared_rank(s_str, i / (S / 4)))[i % (S / 4)];
            for (int b = tid; b < (1 << IX_DIG); b += IX_BT) hist[b] = 0; /* for the next pass */
            __syncthreads();
            hh = gh[bh > 0 ? bh : 0] & -(bh >= 0), hl = gh[bl > 0 ? bl : 0] & -(bl >= 0);
        } else {
            __syncthreads();
            hh = hist[bh > 0 ? bh : 0] & -(bh >= 0), hl = hist[bl > 0 ? bl : 0] & -(bl >= 0);
            if (bh >= 0) hist[bh] = 0;
            if (bl >= 0) hist[bl] = 0;
        }
        int ws = hh + hl;
#pragma unroll
        for (int o = 16; o; o >>= 1) ws += __shfl_xor_sync(0xffffffffu, ws, o);
        if (lane == 0) sh[wid] = ws;
        __syncthreads();
        { /* the warp whose buckets hold the need-th: the first whose inclusive sum reaches need (the sums
           * reach k >= need: the need-th highest is in [lo, hi]) */
            const int x = sh[lane], pre = warp_scan_incl(x);
            const int tw = __ffs(__ballot_sync(0xffffffffu, pre >= need)) - 1;
            const int before = __shfl_sync(0xffffffffu, pre - x, tw);
            if (wid == tw) {
                int tot;
                const int incl = before + ix_warp_scan(hh + hl, &tot), excl = incl - hh - hl;
                if (excl < need && incl >= need) {
                    const bool top = excl + hh >= need;
                    const uint64_t b0 = (uint64_t)lo + ((uint64_t)(top ? bh : bl) << sh_w),
                                   b1 = b0 + ((uint64_t)1 << sh_w) - 1;
                    s_lo = (uint32_t)b0;
                    s_hi = b1 < hi ? (uint32_t)b1 : hi;
                    s_need = need - excl - (top ? 0 : hh);
                    s_all = (top ? hh : hl) == s_need;
                }
            }
        }
        __syncthreads();
        /* s_*, sh and the buckets are next written after two barriers of the next pass, which every thread
         * reaches only after reading them here */
        lo = s_lo;
        hi = s_hi;
        need = s_need;
        IX_T();
#ifdef IX_TRACE
        ix_passes++;
#endif
        if (s_all || sh_w <= tz) break; /* the bucket's keys are all taken, or it holds one key value */
    }
    int eq_seen = 0, at = 0; /* over the chunks before: keys in [lo, hi], indices written */
    if (clx) {               /* the blocks before this one: their keys above hi and in [lo, hi] */
        int gc = 0, ec = 0;
        for (int c = tid; c < NB; c += IX_BT) {
            const uint32_t u = smem ? ix_keys[c] : ix_key(sc[c]);
            gc += u > hi;
            ec += u >= lo && u <= hi;
        }
        ix_block_scan(gc, s_sa, &gc); /* the block's totals */
        ix_block_scan(ec, s_sb, &ec);
        if (tid == 0) s_cc[0] = gc, s_cc[1] = ec;
        cl.sync(); /* (also the barrier after the scans before s_sa and s_sb are written again) */
        gc = ec = 0;
        if (lane < cb) {
            const int *x = cl.map_shared_rank(s_cc, lane);
            gc = x[0], ec = x[1];
        }
        for (int o = 16; o; o >>= 1)
            gc += __shfl_xor_sync(0xffffffffu, gc, o), ec += __shfl_xor_sync(0xffffffffu, ec, o);
        eq_seen = ec;
        at = gc + (ec < need ? ec : need);
        IX_T();
    }
    for (int base = 0; base < NB && at < k; base += 32 * IX_BT) {
        const int c0 = base + wid * 1024 + lane; /* the warp's candidates, 32 apart */
        uint32_t gt = 0, eq = 0;
        /* a chunk of at most 1,024 candidates (the last; decode's short contexts: all of them) is warp 0's
         * alone: the others leave, and its ranks are warp scans - no barriers, and no idle warps issuing
         * loads and ballots of clamped candidates beside it (at N = 1,024 the phase took ~8,400 cycles with
         * every warp in it, ~4,600 so) */
        const bool one = NB - base <= 1024;
        if (one && wid > 0) break;
        if (base + wid * 1024 < NB) { /* a warp wholly past NB has no candidates (gt = eq = 0) */
#pragma unroll
            for (int h = 0; h < 32; h += 16) { /* 16 loads at a time */
                uint32_t v[16];
#pragma unroll
                for (int i = 0; i < 16; i++) {
                    const int c = c0 + 32 * (h + i) < NB ? c0 + 32 * (h + i) : NL;
                    v[i] = smem ? ix_keys[c] : ix_key(sc[c]);
                }
#pragma unroll
                for (int i = 0; i < 16; i++) {
                    const bool in = c0 + 32 * (h + i) < NB;
                    const unsigned g = __ballot_sync(0xffffffffu, in && v[i] > hi);
                    const unsigned e = __ballot_sync(0xffffffffu, in && v[i] >= lo && v[i] <= hi);
                    if (lane == h + i) gt = g, eq = e;
                }
            }
        }
        int tot;
        const int ne = __popc(eq), eb = (one ? ix_warp_scan(ne, &tot) : ix_block_scan(ne, s_sa, &tot)) - ne + eq_seen;
        eq_seen += tot;
        uint32_t keep = 0; /* those of rank below need: the lowest (need - eb) set bits of eq */
        if (eb + ne <= need) keep = eq;
        else
            for (int r = need - eb; r > 0; r--) keep |= eq & (0u - eq), eq &= eq - 1;
        const uint32_t take = gt | keep;
        const int nt = __popc(take);
        int o = (one ? ix_warp_scan(nt, &tot) : ix_block_scan(nt, s_sb, &tot)) - nt + at;
        at += tot;
        const int w0 = c0b + base + wid * 1024 + 32 * lane; /* this thread's word */
        for (uint32_t x = take; x; x &= x - 1) out[o++] = w0 + __ffs(x) - 1;
    }
    if (clx) cluster_reads_done(); /* every block's shared memory stays until the others have read it */
#ifdef IX_TRACE
    __syncthreads();
    IX_T();
#endif
    IX_TRACE_PRINT();
}

/* The first version, one block per token: a warp per key, then every
 * candidate ranked against every other (quadratic). The benchmarks'
 * baseline (dsv4_cuda_indexer_naive); the same indices. */
__global__ void k_indexer_naive(idx_args A, const dsv4_seg *segs, const int32_t *tok_seg, const int64_t *pos,
                          const int32_t *page_table, const float *q, const float *w, float *scores, int32_t *idx,
                          int32_t *cnt)
{
    const int t = blockIdx.x;
    const dsv4_seg s = segs[tok_seg[t]];
    const int64_t N = (pos[t] + 1) / A.ratio;
    const float *qt = q + (size_t)t * A.nh * A.hd, *wt = w + (size_t)t * A.nh;
    float *sc = scores + (size_t)t * 2 * A.max_n;
    /* one warp per candidate key; lane l takes heads l, l + 32, ... (each a
     * serial dot product over the head dimension), then a fixed butterfly */
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int64_t c = wid; c < N; c += nw) {
        const float *key = cmp_row(A.pages, page_table, A.max_pages, A.page_tokens, A.page_floats, A.pg_off, s.slot, c,
                                   A.ratio, dsv4_row_floats(A.hd, A.bf16));
        float acc = 0;
        for (int h = lane; h < A.nh; h += 32) {
            float dq = 0;
            for (int i = 0; i < A.hd; i++) dq += qt[(size_t)h * A.hd + i] * kv_el(key, i, A.bf16);
            float wh = (A.reference ? dsv4_round_bf16(wt[h]) : wt[h]) * A.scale;
            if (A.reference) {
                wh = dsv4_round_bf16(wh);
                acc += dsv4_round_bf16(fmaxf(dsv4_round_bf16(dq), 0.0f) * wh);
            } else if (dq > 0) {
                acc += wh * dq;
            }
        }
        acc = warp_sum(acc);
        if (lane == 0) {
            const float v = A.reference ? dsv4_round_bf16(acc) : acc;
            sc[c] = isnan(v) ? -INFINITY : v; /* NaN ranks last, as on the CPU: exactly k are kept */
        }
    }
    __syncthreads();
    const int k = N < A.topk ? (int)N : A.topk;
    int32_t *out = idx + (size_t)t * A.topk;
    if (N <= A.topk) {
        for (int64_t c = threadIdx.x; c < N; c += blockDim.x) out[c] = (int32_t)c;
    } else {
        /* rank: how many candidates beat c (higher score, or equal and lower index) */
        int32_t *rank = (int32_t *)(sc + A.max_n); /* the second half of the token's scratch */
        for (int64_t c = threadIdx.x; c < N; c += blockDim.x) {
            const float v = sc[c];
            int32_t rk = 0;
            for (int64_t o = 0; o < N; o++) {
                const float u = sc[o];
                rk += (u > v) || (u == v && o < c);
            }
            rank[c] = rk;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            int m = 0;
            for (int64_t c = 0; c < N; c++)
                if (rank[c] < k) out[m++] = (int32_t)c;
        }
    }
    if (threadIdx.x == 0) cnt[t] = k;
}

static int ix_naive;
extern "C" void dsv4_cuda_indexer_naive(int on) { ix_naive = on; }
static int ix_scores_only;
extern "C" void dsv4_cuda_indexer_scores_only(int on)
{
    ix_scores_only = on;
}
static int64_t ix_topk_cap = -1;
/* the top-k's clusters (k_idx_topk<2 << i>): their dynamic shared memory, whether they fit, the setting of
 * dsv4_cuda_indexer_topk_cluster (-1: none, the environment's DSV4_IX_CL) */
typedef void (*ix_topk_fn)(idx_args, const int64_t *, const float *, int32_t *, int32_t *, int, int, int);
static const ix_topk_fn ix_cl_kernels[IX_CLS] = {k_idx_topk<2>, k_idx_topk<4>, k_idx_topk<8>};
static size_t ix_cl_smem_max[IX_CLS];
static bool ix_cl_fits[IX_CLS];
static int ix_cl = -1;
static int64_t ix_cl_min = -1; /* dsv4_cuda_indexer_topk_cluster_min's (-1: IX_CL_MIN, or 0 for a forced size) */
extern "C" void dsv4_cuda_indexer_topk_cluster_min(int64_t n)
{
    ix_cl_min = n;
}
extern "C" void dsv4_cuda_indexer_topk_cluster(int on)
{
    ix_cl = on;
}
extern "C" void dsv4_cuda_indexer_topk_cap(int64_t cap) { ix_topk_cap = cap; }
/* dsv4_cuda_indexer_topk_small's setting (-1: none, the environment's DSV4_IX_SMALL) */
static int ix_small = -1;
extern "C" void dsv4_cuda_indexer_topk_small(int on)
{
    ix_small = on;
}
/* Candidates k_idx_topk's small path takes at most (0: none, every count on the general path) */
static int ix_topk_small_n(void)
{
    static int env = -1;
    if (env < 0) env = cuda_env_on("DSV4_IX_SMALL") ? 1 : 0;
    return (ix_small >= 0 ? ix_small : env) ? IX_SR * IX_BT : 0;
}

/* The CUDA-core scores and the top-k may take all of the GPU's shared memory
 * that their static arrays leave (the scores' size follows the indexer's
 * shape; the top-k keeps the keys there when they fit): allowed once, at the
 * backend's creation, which keeps the two limits. */
static size_t smem_allow(const void *f, size_t smem_optin)
{
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, f));
    const size_t dyn = smem_optin > fa.sharedSizeBytes ? smem_optin - fa.sharedSizeBytes : 0;
    CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
    return dyn;
}

/* k_idx_score_tc's instances: [head_dim 128][the keys' format] */
typedef void (*ixt_fn)(idx_args, const dsv4_seg *, const int32_t *, const int64_t *, const int32_t *, const float *,
                       const float *, float *, int);
static const ixt_fn ixt_kernels[2][3] = {
    {k_idx_score_tc<0, IXT_F32>, k_idx_score_tc<0, IXT_BF16>, k_idx_score_tc<0, IXT_FP4>},
    {k_idx_score_tc<128, IXT_F32>, k_idx_score_tc<128, IXT_BF16>, k_idx_score_tc<128, IXT_FP4>}};

/* Blocks of kernel f resident an SM with smem bytes of dynamic shared memory (a process sees a format or two:
 * the first few asked are kept) */
static int ixt_per_sm(ixt_fn f, size_t smem)
{
    static ixt_fn key_f[8];
    static size_t key_s[8];
    static int val[8];
    for (int i = 0; i < 8; i++)
        if (key_f[i] == f && key_s[i] == smem) return val[i];
    int v = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, f, 128, smem));
    if (v < 1) v = 1;
    for (int i = 0; i < 8; i++)
        if (!key_f[i]) {
            val[i] = v, key_s[i] = smem, key_f[i] = f;
            break;
        }
    return v;
}

void cuda_indexer_init(cuda_impl *im)
{
    im->ix_smem_max = smem_allow((const void *)k_idx_score, im->smem_optin);
    im->ix_topk_smem_max = smem_allow((const void *)k_idx_topk<1>, im->smem_optin);
    for (int i = 0; i < IX_CLS; i++) {
        ix_cl_smem_max[i] = smem_allow((const void *)ix_cl_kernels[i], im->smem_optin);
        ix_cl_fits[i] = cuda_cluster_fits(ix_cl_kernels[i], IX_BT, ix_cl_smem_max[i], 2u << i);
    }
    for (int h = 0; h < 2; h++) /* their staging: two slots of 64 keys of up to 128 floats */
        for (int f = 0; f < 3; f++) smem_allow((const void *)ixt_kernels[h][f], im->smem_optin);
}

/* CS_SCORES for nt tokens of up to max_n compressed rows: a token's scores, then its ranks. */
static size_t ix_scores_bytes(size_t nt, int64_t max_n)
{
    return nt * 2 * (size_t)max_n * sizeof(float);
}

/* The compressed rows of any position below max_ctx (at least 1): a graph's bound, and the reservation's. */
static int64_t ix_rows_bound(int ratio, int64_t max_ctx)
{
    return ratio > 0 && max_ctx / ratio > 1 ? max_ctx / ratio : 1;
}

size_t cuda_indexer_work_bytes(const dsv4_indexer_params *p, int n_tok, int64_t max_ctx)
{
    return ix_scores_bytes((size_t)n_tok, ix_rows_bound(p->ratio, max_ctx));
}

void cuda_indexer_topk(dsv4_backend *be, const dsv4_indexer_params *p, const dsv4_plan *plan, const dsv4_kv *kv,
                       const float *q, const float *w, int32_t *idx, int32_t *cnt)
{
    cuda_impl *im = impl_of(be);
    int64_t max_n = 1;
    if (im->graph_mode)
        max_n = ix_rows_bound(p->ratio, kv->max_ctx); /* any step of a graph */
    else
        for (int t = 0; t < plan->n_tok; t++) {
            int64_t n = (plan->pos[t] + 1) / p->ratio;
            if (n > max_n) max_n = n;
        }
    idx_args A;
    A.ratio = p->ratio;
    A.nh = p->n_heads;
    A.hd = p->head_dim;
    A.topk = p->topk;
    A.max_n = (int)max_n;
    A.scale = p->scale;
    A.reference = p->reference;
    A.pages = kv->pages;
    A.page_floats = kv->page_floats;
    A.pg_off = kv->layer[p->layer].pg_idx;
    A.page_tokens = kv->page_tokens;
    A.max_pages = kv->max_pages_per_seq;
    A.fp4 = kv->fp4_keys;
    A.bf16 = kv->bf16_rows && !A.fp4;
    float *scores = (float *)cuda_scratch(be, CS_SCORES, ix_scores_bytes((size_t)plan->n_tok, max_n));
    const bool tc =
        p->reference && p->n_heads <= 64 && p->head_dim % 32 == 0 && p->head_dim <= 128 && ((uintptr_t)q & 15) == 0;
    const size_t smem = ((size_t)p->n_heads * (p->head_dim + 1) + (size_t)IX_KPB * p->head_dim) * sizeof(float);
    if (ix_naive || (!tc && smem > im->ix_smem_max)) { /* the baseline, or beyond this GPU's shared memory */
        if (A.fp4) {
            fprintf(stderr, "dsv4: the indexer's first kernel does not read FP4 keys (%d heads of %d)\n", p->n_heads,
                    p->head_dim);
            abort();
        }
        k_indexer_naive<<<plan->n_tok, 256, 0, im->stream>>>(A, im->d_segs, im->d_tok_seg, im->d_pos, im->d_page_table,
                                                             q, w, scores, idx, cnt);
        CK_LAUNCH();
        return;
    }
    if (tc) {
        /* the staging a tile's keys take, two slots of it: a page's layout of IXT_KEYS keys (FP4: codes then
         * scales, 4.3 KB at Flash's 128 dimensions; FP32 32 KB) */
        const size_t stage = dsv4_kv_idx_floats(kv, IXT_KEYS, p->head_dim) * sizeof(float);
        const ixt_fn kern = ixt_kernels[p->head_dim == 128][A.fp4 ? IXT_FP4 : A.bf16 ? IXT_BF16 : IXT_F32];
        /* blocks a token: the GPU's resident blocks shared among the tokens, at least enough that none takes more
         * than IXT_TMAX tiles, at most a tile each (of max_n: the blocks split the token's own tiles evenly) */
        const int64_t nt = (max_n + IXT_KEYS - 1) / IXT_KEYS, slots = (int64_t)im->n_sm * ixt_per_sm(kern, 2 * stage);
        static int tmax = 0; /* DSV4_IXT_TMAX: the most tiles a block takes (a measurement knob; default 16) */
        if (!tmax) tmax = cuda_env_int("DSV4_IXT_TMAX", IXT_TMAX);
        int64_t gy = slots / plan->n_tok;
        if (gy < (nt + tmax - 1) / tmax) gy = (nt + tmax - 1) / tmax;
        if (gy > nt) gy = nt;
        if (gy < 1) gy = 1;
        launch_pdl(kern, dim3((unsigned)plan->n_tok, (unsigned)gy), dim3(128), 2 * stage, im->stream, A,
                   (const dsv4_seg *)im->d_segs, (const int32_t *)im->d_tok_seg, (const int64_t *)im->d_pos,
                   (const int32_t *)im->d_page_table, q, w, scores, (int)stage);
    } else {
        k_idx_score<<<dim3((unsigned)plan->n_tok, (unsigned)((max_n + IX_KPB - 1) / IX_KPB)), 256, smem,
                      im->stream>>>(A, im->d_segs, im->d_tok_seg, im->d_pos, im->d_page_table, q, w, scores);
    }
    CK_LAUNCH();
    if (ix_scores_only) return; /* a measurement of the scores alone */
    /* keys a top-k block keeps in shared memory: want, at most what smem_max bytes hold (and the tests' cap) */
    auto keys_cap = [](size_t smem_max, int64_t want) {
        int64_t cap = (int64_t)(smem_max / 4);
        if (ix_topk_cap >= 0 && ix_topk_cap < cap) cap = ix_topk_cap;
        return want < cap ? want : cap;
    };
    const int small_n = ix_topk_small_n();
    /* a cluster of 8, 4 or 2 blocks a token - the most whose blocks the SMs hold at once - where some token may
     * have more than IX_CL_MIN candidates (the same choices; dsv4_cuda_indexer_topk_cluster, DSV4_IX_CL: 0 one
     * block a token, 1 this choice, 2 / 4 / 8 that size for every token past the small path) */
    static int cl_env = -1;
    if (cl_env < 0) {
        const char *e = getenv("DSV4_IX_CL");
        cl_env = e && *e ? atoi(e) : 1;
    }
    const int clm = ix_cl >= 0 ? ix_cl : cl_env;
    int ci = -1, cl_min = IX_CL_MIN; /* a forced size takes every token past the small path */
    if (clm > 1) ci = clm >= 8 ? 2 : clm >= 4 ? 1 : 0, cl_min = 0;
    if (ix_cl_min >= 0) cl_min = (int)(ix_cl_min < INT32_MAX ? ix_cl_min : INT32_MAX);
    if (clm == 1 && max_n > cl_min && max_n > small_n)
        for (int i = IX_CLS - 1; i >= 0 && ci < 0; i--)
            if ((int64_t)plan->n_tok * (2 << i) <= im->n_sm) ci = i;
    if (ci >= 0 && ix_cl_fits[ci]) {
        /* keys a block keeps: its slice, or block 0's whole token below cl_min */
        const int CL = 2 << ci;
        const int64_t sl = (max_n + CL - 1) / CL, one = max_n < cl_min ? max_n : cl_min;
        const int64_t ccap = keys_cap(ix_cl_smem_max[ci], sl > one ? sl : one);
        cuda_launch(ix_cl_kernels[ci], dim3((unsigned)plan->n_tok, 1, (unsigned)CL), dim3(IX_BT), (size_t)ccap * 4,
                    im->stream, (unsigned)CL, true, A, (const int64_t *)im->d_pos, (const float *)scores, idx, cnt,
                    (int)ccap, small_n, cl_min);
        CK_LAUNCH();
        return;
    }
    const int64_t cap = keys_cap(im->ix_topk_smem_max, max_n);
    launch_pdl(k_idx_topk<1>, dim3((unsigned)plan->n_tok), dim3(IX_BT), (size_t)cap * 4, im->stream, A,
               (const int64_t *)im->d_pos, (const float *)scores, idx, cnt, (int)cap, small_n, 0);
    CK_LAUNCH();
}

/* ---- dsv4_cuda_indexer_time (backend.h), on bench_state.cu's state: keys,
 * queries and weights pseudo-random (the backend's fill), so the scores are
 * distinct and spread as a real context's do. */
struct idx_call {
    dsv4_backend *be;
    dsv4_indexer_params p;
    bench_step *b;
    const float *q, *w;
    int32_t *idx, *cnt;
};
static void idx_call_run(void *c)
{
    idx_call *a = (idx_call *)c;
    a->be->indexer_topk(a->be, &a->p, &a->b->plan, &a->b->kv, a->q, a->w, a->idx, a->cnt);
}

static int ix_bench_fp4;
extern "C" void dsv4_cuda_indexer_bench_fp4(int on) { ix_bench_fp4 = on; }

extern "C" double dsv4_cuda_indexer_time(dsv4_backend *be, int batch, int64_t ctx, bool reference, int reps)
{
    const int nI = 64, dI = 128, ratio = 4, topk = 512;
    bench_step b;
    if (reps < 1 || !bench_step_init(&b, be, batch, ctx, ratio, dI, 0, reference && ix_bench_fp4 != 0)) return -1;
    float *q = (float *)be->alloc(be, (size_t)batch * nI * dI * sizeof(float)),
          *w = (float *)be->alloc(be, (size_t)batch * nI * sizeof(float));
    int32_t *idx = (int32_t *)be->alloc(be, (size_t)batch * topk * 4), *cnt = (int32_t *)be->alloc(be, (size_t)batch * 4);
    double us = -1;
    if (q && w && idx && cnt) {
        be->fill(be, q, (size_t)batch * nI * dI, 0x5eedbe02u);
        be->fill(be, w, (size_t)batch * nI, 0x5eedbe03u);
        idx_call a = {be, {.layer = 0, .ratio = ratio, .n_heads = nI, .head_dim = dI, .topk = topk, .scale = 0.011f,
                           .reference = reference},
                      &b, q, w, idx, cnt};
        us = bench_time_calls(be, idx_call_run, &a, reps);
    }
    be->free(be, q), be->free(be, w), be->free(be, idx), be->free(be, cnt);
    bench_step_free(&b, be);
    return us;
}
