/*
 * mma.cu - FP8 and BF16 linears on the tensor cores (mma.sync m16n8k16, FP32
 * accumulation), for every batch size. BF16 weights (the LM head, the
 * router) are MMA operands as stored and take their activations in three
 * BF16 parts (k_mma_pack_bf16, k_mma_bf16); the rest of this comment is the
 * FP8 kernel's.
 *
 * Weights: E4M3 codes go to F16 through the hardware's E4M3x2 -> F16x2
 * conversion (exact: every E4M3 is an F16); the E8M0 block scale is applied
 * to each 64-column group's FP32 sum.
 *
 * Activations are packed first (k_mma_pack), per token and 64-column group:
 *   plain numerics: scaled by the power of two at or above the group's
 *     largest finite magnitude, then split into two F16s, hi + lo: 22
 *     significant bits, i.e. about FP32's rounding of the largest term;
 *   reference numerics (act_quant): the reference's FP8 quantisation per
 *     128 columns, whose E4M3 codes are F16 exactly (no lo part).
 * A group's sum is then hi . w (+ lo . w) in one FP32 accumulator, times
 * (weight scale x activation scale), added to the row's total in column
 * order. Non-finite activations keep their value in hi (F16 holds Inf and
 * NaN), so Inf and NaN land where an FP32 dot product puts them.
 *
 * The K permutation: an MMA adds its 16 products in an order of its own, so
 * which physical column feeds which MMA slot is free as long as weights and
 * activations agree. Lane (g, t) loads 16 contiguous weight bytes of rows g
 * and g + 8 (columns 16t .. 16t + 15 of the group); its j-th MMA of the group
 * takes columns 16t + 4j .. + 3 as its k slots {2t, 2t+1, 2t+8, 2t+9}. The
 * pack stores each lane's four activations of each j contiguously, so every
 * fragment is one coalesced 8- or 16-byte load.
 *
 * Batch invariance: an MMA's output column depends on its own token's column
 * only, and the column groups, their order, the split along K (from the
 * weight's shape) and the epilogue are the same for every batch, so a token's
 * result is the same bits alone or in a batch of any size. The GEMV path
 * (linear.cu) gives different roundings, so the choice between them depends
 * on the weight only (cuda_mma_eligible), never on the batch.
 */
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <type_traits>

#include "backend/cuda/rowdot.cuh"

namespace cg = cooperative_groups;

#define MMA_WARPS 4
#define MMA_ROWS 32 /* rows per block (two m16 tiles); its warps take quarters of the part's K */
#define MMA_CHUNK 256             /* tokens per launch (bounds the scratch) */
#define MMA_MAXP 8 /* parts along K: the blocks of one cluster */

/* Pack: one warp per (group, token, 128 columns); lane l takes 4 columns of
 * 64-column group 2 * blk + l / 16. Writes the fragment words (hi, and lo in
 * plain numerics) and one scale per (token, 64-column group). Tokens in
 * [n, ntok) and columns past K are zeros. */
template <bool REF>
__global__ void k_mma_pack(const float *x, int ldx, size_t xg, int n, int ntok, int K, int nkg, uint32_t *xp,
                           float *xs)
{
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); /* the MMA kernel may start loading weights */
    asm volatile("griddepcontrol.wait;" ::: "memory"); /* x (launched with PDL: launch_pdl) */
    const int lane = threadIdx.x & 31;
    pack_at at;
    if (!pack_at_of(ntok, nkg, at)) return;
    const int grp = at.grp, tok = at.tok, kg = at.kg;
    float v[4];
    pack_load4(x, ldx, xg, grp, tok, n, at.c0, K, v);
    /* plain: the 16 lanes of a 64-column group; reference: all 32 (128 columns) */
    __half hi[4], lo[4];
    const float sc = f16_parts<REF, REF ? 32 : 16>(v, hi, lo);
    if (kg >= nkg) return;
    /* fragment slot: (group, kg, n-tile, j, lane g*4+t) */
    const int ntiles = ntok / 8, t = (lane & 15) >> 2, j = lane & 3;
    const size_t f = ((((size_t)grp * nkg + kg) * ntiles + tok / 8) * 4 + j) * 32 + (tok & 7) * 4 + t;
    if (REF) {
        ((uint2 *)xp)[f] = make_uint2(h2_bits(hi[0], hi[1]), h2_bits(hi[2], hi[3]));
    } else {
        ((uint4 *)xp)[f] = make_uint4(h2_bits(hi[0], hi[1]), h2_bits(hi[2], hi[3]), h2_bits(lo[0], lo[1]),
                                      h2_bits(lo[2], lo[3]));
    }
    if ((lane & 15) == 0) xs[((size_t)grp * ntok + tok) * nkg + kg] = sc;
}

/* The weight words of one 64-column group for a lane: rows g, g + 8 of both
 * m tiles (zeros past the rows or the row's end). */
struct wgrp {
    uint4 q[2][2];
};

__device__ __forceinline__ void load_group(const wdesc &w, int64_t rb, int kg, int g, int t, wgrp &o)
{
    const int64_t c = (int64_t)kg * 64 + 16 * t;
#pragma unroll
    for (int m = 0; m < 2; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t r = rb + 16 * m + 8 * h + g;
            o.q[m][h] = r < w.rows && c < w.row_bytes
                            ? __ldg((const uint4 *)((const char *)w.data + (w.row0 + r) * w.row_bytes + c))
                            : make_uint4(0, 0, 0, 0);
        }
}

/* Where a block and warp of the MMA kernels work: group grp and part p of
 * blockIdx.z, rows [rb, rb + 32) (rb = 32 tile), n tiles from nt0, and the
 * warp's quarter [kg0, kg1) of the part's 64-column groups. */
struct mma_place {
    int grp, p, nt0, ntiles, kg0, kg1;
    int64_t rb;
};

__device__ __forceinline__ mma_place mma_place_of(int nkg, int P, int ntok, int NTT, int64_t tile)
{
    mma_place a;
    a.grp = blockIdx.z / P, a.p = blockIdx.z % P;
    a.rb = tile * MMA_ROWS;
    a.nt0 = blockIdx.x * NTT, a.ntiles = ntok / 8;
    const int wid = threadIdx.x >> 5;
    const int pk0 = nkg * a.p / P, pk1 = nkg * (a.p + 1) / P; /* nkg * P < 2^31: columns < 2^24 */
    a.kg0 = pk0 + (pk1 - pk0) * wid / MMA_WARPS, a.kg1 = pk0 + (pk1 - pk0) * (wid + 1) / MMA_WARPS;
    return a;
}

/* The end of both MMA kernels: the warps' sums in warp order on warp 0; with
 * P parts (blockIdx.z % P, a cluster) each part then adds a P-th of the
 * block's outputs over the parts in part order, from the parts' shared
 * memory (P independent loads each), and stores them. A sum is
 * part 0 + part 1 + ... in that order whichever part adds it, so the bits
 * are those of part 0 adding every output. */
template <int NTT, bool DYN = false>
__device__ __forceinline__ void mma_finish(float (&acc)[2][NTT][4], int P, int p, int64_t rb, int nt0, int ntiles,
                                           int64_t rows, int n, float *out, int ldy, bool sa, float *dred = nullptr,
                                           int dstride = 0)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    constexpr int F = 2 * NTT * 4 * 32; /* a block's outputs, red[w] flattened as ((m NTT + i) 4 + e) 32 + lane */
    /* warp w's sums: a static array, or (DYN) dred + w dstride (the warp's own ring, free after its loop) */
    float *red0;
    int rs;
    if constexpr (DYN) {
        red0 = dred, rs = dstride;
    } else {
        __shared__ __align__(16) float red[MMA_WARPS][F];
        red0 = &red[0][0], rs = F;
    }
#pragma unroll
    for (int m = 0; m < 2; m++)
#pragma unroll
        for (int i = 0; i < NTT; i++)
#pragma unroll
            for (int e = 0; e < 4; e++) red0[wid * rs + ((m * NTT + i) * 4 + e) * 32 + lane] = acc[m][i][e];
    __syncthreads();
    if (wid == 0) {
        for (int q = 1; q < MMA_WARPS; q++)
#pragma unroll
            for (int f = 0; f < F; f += 32) red0[f + lane] += red0[q * rs + f + lane];
    }
    /* output f: row rb + 16m + g (+ 8 for e >= 2), token 8 (nt0 + i) + 2t + (e & 1) */
    auto store = [&](int f, float v) {
        const int ln = f & 31, e = (f >> 5) & 3, mi = f >> 7, m = mi / NTT, i = mi % NTT;
        const int64_t r = rb + 16 * m + (ln >> 2) + (e >= 2 ? 8 : 0);
        const int tk = (nt0 + i) * 8 + 2 * (ln & 3) + (e & 1);
        if (nt0 + i < ntiles && r < rows && tk < n) out[(size_t)tk * ldy + r] = v;
    };
    if (P == 1) {
        __syncthreads();
        for (int f = threadIdx.x; f < F; f += 32 * MMA_WARPS) store(f, red0[f]);
        return;
    }
    if (!sa) {
        cluster_sum_parts<MMA_MAXP, 32 * MMA_WARPS>(red0, F, p, P, store);
        return;
    }
    /* the parts' totals by st.async (cl_push_*; thread th sends red0[J th ..], J = F / 128, in 8- or 16-byte
     * sends), received in the other warps' sums (rows 1 on: P cl_push_mr floats, at most F + 4 P, read only by warp
     * 0 above, done by the block barrier in every block before the cluster's); the
     * mbarrier in the last 8 bytes of the last row (a static one would take k_mma_fp8<4, false>'s 16 KB of sums
     * and 32 KB of ring past the 48 KB a block may have without opting in) */
    __syncthreads(); /* (before the init: the mbarrier's bytes were warp 3's last sums, read by warp 0 above) */
    cl_push_parts<F, 32 * MMA_WARPS, MMA_MAXP, true>(
        (uint32_t)__cvta_generic_to_shared(red0 + MMA_WARPS * rs - 2), red0 + rs, p, P,
        [&](int j) { return red0[F / (32 * MMA_WARPS) * threadIdx.x + j]; }, store);
}

/* The weights go through shared memory in a ring of MMA_STAGES stages per
 * warp, MMA_STAGES - 1 groups ahead, with cp.async: no registers are held
 * while bytes are in flight, so a warp keeps three groups (6 KB) on the way
 * where a register double buffer kept one. A stage is the group's 32 rows of
 * 64 bytes (row r = block row rb + r), so a lane's 16-byte fragment reads of
 * rows g, g + 8 at byte 16t hit distinct banks. Changes where the bytes wait,
 * not the arithmetic: the same MMAs in the same order. */
#define MMA_STAGES 4
struct mma_stage {
    uint4 w[32 * 4];
};
/* k_mma_fp8 with hi + lo activations at one or two n tiles takes them through
 * its ring (XR): a stage is the group's rows, then NTT x 2 KB of fragments and
 * NTT x 8 scales; three stages a warp (three blocks an SM at two n tiles) */
#define MMA_XR_STAGES 3
__host__ __device__ constexpr bool mma_xr(int NTT, bool LO)
{
    return LO && NTT <= 2;
}
__host__ __device__ constexpr int mma_stage_bytes(int NTT, bool LO)
{
    return mma_xr(NTT, LO) ? 2048 + NTT * 2048 + NTT * 32 : 2048;
}
__host__ __device__ constexpr size_t mma_fp8_smem_of(int NTT, bool LO)
{
    return (size_t)MMA_WARPS * (mma_xr(NTT, LO) ? MMA_XR_STAGES : MMA_STAGES) * mma_stage_bytes(NTT, LO);
}

/* What a lane copies for every group: 16-byte chunks lane + 32i (stage row
 * (lane + 32i) / 4, unit (lane + 32i) % 4), zeros past the rows or a row's end. */
struct mma_src {
    const char *w[4];
    int kend[4]; /* the chunk is in its row for groups below kend (0 past the rows) */
};

__device__ __forceinline__ void mma_issue(mma_stage &st, const mma_src &src, int kg, int lane)
{
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const bool ok = kg < src.kend[i];
        cp_async<16>(&st.w[lane + 32 * i], src.w[i] + (ok ? kg * 64 : 0), ok);
    }
    cp_async_commit();
}

/* The E8M0 weight scales of a lane's four rows (rb + 16m + 8h + g) in scale column sb (group kg's: kg / kpb,
 * which the loop steps instead of dividing). */
__device__ __forceinline__ void mma_scales(const uint8_t *const (&srow)[2][2], int sb, float (&ws)[2][2])
{
#pragma unroll
    for (int m = 0; m < 2; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) ws[m][h] = srow[m][h] ? dsv4_e8m0_to_f32(__ldg(srow[m][h] + sb)) : 0.0f;
}

/* The weights of one FP8 launch: one linear (its G row groups through
 * blockIdx.z), or several of the same input and part count P (linear_multi),
 * their 32-row tiles one after the other along blockIdx.y. */
#define MMA_JOBS 8
struct mma_jobs {
    int n;
    int tile0[MMA_JOBS + 1]; /* job j: tiles [tile0[j], tile0[j + 1]) */
    wdesc w[MMA_JOBS];
    float *y[MMA_JOBS];
    int ldy[MMA_JOBS];
    int trig; /* k_mma_bf16: griddepcontrol.launch_dependents after its wait (the kernel after it may start) */
    int sa;   /* the parts' sums by st.async (mma_finish; the launches set it: cuda_lin_async) */
};

/* Block: 32 rows of its job's weight, NTT n tiles of 8 tokens, the
 * 64-column groups of part blockIdx.z % P, split among its warps; the warps'
 * sums add in warp order, then the parts' (a cluster) in part order
 * (mma_finish). A job's blocks are those of its linear launched alone: the
 * same bits. Launched after the pack with programmatic dependent launch: the
 * first weights load before griddepcontrol.wait. */
template <int NTT, bool LO>
__global__ void __launch_bounds__(32 * MMA_WARPS, NTT == 1 ? 4 : 3) k_mma_fp8(mma_jobs J, const uint32_t *xp,
                                                                              const float *xs, int ntok, int nkg,
                                                                              int P, int n, size_t yg)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, wid = threadIdx.x >> 5;
    int job = 0;
    while (job + 1 < J.n && (int)blockIdx.y >= J.tile0[job + 1]) job++;
    wdesc w = J.w[job];
    const mma_place at = mma_place_of(nkg, P, ntok, NTT, (int64_t)blockIdx.y - J.tile0[job]);
    const int grp = at.grp, p = at.p, nt0 = at.nt0, ntiles = at.ntiles, kg0 = at.kg0, kg1 = at.kg1;
    const int64_t rb = at.rb;
    w.row0 += (int64_t)grp * w.rows;
    float acc[2][NTT][4] = {};
    /* XR: hi + lo activations at up to two n tiles come through the ring with
     * the weights (their fragments and scales a stage each after the group's
     * rows), three stages a warp; loaded where used they cost an L2 round
     * trip a group (each use waits for every global load before it) */
    constexpr bool XR = mma_xr(NTT, LO);
    constexpr int ST = XR ? MMA_XR_STAGES : MMA_STAGES, SBY = mma_stage_bytes(NTT, LO);
    /* without XR the warps' sums are static (mma_finish): with the ring within the 48 KB a block has without
     * opting in (k_mma_fp8<4, ..> is at it: a launch past it fails) */
    static_assert(XR || MMA_WARPS * 2 * NTT * 4 * 32 * sizeof(float) + mma_fp8_smem_of(NTT, LO) <= 48 * 1024,
                  "k_mma_fp8's shared memory");
    extern __shared__ uint4 mma_dyn[];
    char *wring = (char *)mma_dyn + (size_t)wid * ST * SBY;
    auto stage = [&](int s) -> mma_stage & { return *(mma_stage *)(wring + s * SBY); };
    mma_src src;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int c = lane + 32 * i;
        const int64_t r = rb + (c >> 2);
        const int c0 = 16 * (c & 3);
        src.kend[i] = r < w.rows ? (int)((w.row_bytes - c0 + 63) / 64) : 0;
        src.w[i] = (const char *)w.data + (w.row0 + (r < w.rows ? r : 0)) * w.row_bytes + c0;
    }
    /* each of the lane's four rows' scale row, once (NULL past the rows) */
    const uint8_t *srow[2][2];
#pragma unroll
    for (int m = 0; m < 2; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t r = rb + 16 * m + 8 * h + g;
            srow[m][h] = r < w.rows ? (const uint8_t *)w.scale + (uint32_t)(w.row0 + r) / (uint32_t)w.br * w.scale_cols
                                    : nullptr;
        }
    const int kpb = w.bc / 64; /* 64-column groups per scale block */
    /* XR: group kg's activation fragments (NTT x 2 KB, lane l copying bytes 16 l + 512 c; the second n tile,
     * past ntiles, zero-filled) and its NTT x 8 tokens' scales (lane l < 8 NTT: token 8 nt0 + l) into stage s,
     * uncommitted; the sources from lane bases set once */
    const size_t xgs = (size_t)ntiles * 2048; /* bytes a group of the packed fragments */
    const char *xsrc = (const char *)xp + ((size_t)grp * nkg * ntiles + nt0) * 2048 + 16 * lane;
    const bool xt1 = nt0 + 1 < ntiles; /* the second n tile exists (the first always does) */
    const bool xsok = lane < 8 || (NTT == 2 && lane < 16 && xt1);
    const float *xssrc = xs + ((size_t)grp * ntok + (size_t)nt0 * 8 + (xsok ? lane : 0)) * nkg;
    auto issue_x = [&](int s, int kg) {
        char *d = wring + s * SBY + 2048 + 16 * lane;
        const char *f = xsrc + (size_t)kg * xgs;
#pragma unroll
        for (int c = 0; c < NTT * 4; c++) {
            if (c < 4)
                cp_async<16>(d + 512 * c, f + 512 * c, true);
            else
                cp_async<16>(d + 512 * c, xt1 ? f + 512 * c : f, xt1);
        }
        if (lane < NTT * 8) cp_async<4>(wring + s * SBY + 2048 + NTT * 2048 + 4 * lane, xssrc + kg, xsok);
    };
#pragma unroll
    for (int i = 0; i < ST - 1; i++) {
        if (kg0 + i < kg1)
            mma_issue(stage(i), src, kg0 + i, lane);
        else cp_async_commit();
    }
    float ws[2][2], wsn[2][2];
    int scol = kg0 / kpb, srem = kg0 - scol * kpb; /* group kg + 1's scale column and its place in it */
    if (++srem == kpb) srem = 0, scol++;
    if (kg0 < kg1) mma_scales(srow, kg0 / kpb, ws);
    /* the weights and scales above do not depend on the kernel before (the
     * pack, launched ahead of this one: programmatic dependent launch); its
     * output does */
    asm volatile("griddepcontrol.wait;" ::: "memory");
    /* XR: the first stages' activations, a group each after the weights' (the
     * loop's waits, for all but the ST - 2 newest groups, see a group's
     * weights and activations landed) */
    if constexpr (XR) {
#pragma unroll
        for (int i = 0; i < ST - 1; i++) {
            if (kg0 + i < kg1) issue_x(i, kg0 + i);
            cp_async_commit();
        }
    }
    /* up to two n tiles (decode up to 16 tokens) the activations' fragments
     * and the weight scales are loaded a group ahead, in registers; with hi +
     * lo activations (LO) only the scales: at two n tiles the fragments held
     * ahead took k_mma_fp8<2, true> to 168 registers with a spill (three
     * blocks an SM), loaded where used it has 128 and four (plain decode at
     * 16 tokens 1.7 % faster, reference unchanged; the same sums) */
    constexpr bool PF = NTT <= 2 && !LO;
    uint4 bq[NTT][4], bqn[NTT][4];
    auto load_bq = [&](int kg, uint4(*d)[4]) {
#pragma unroll
        for (int i = 0; i < NTT; i++) {
            if (nt0 + i >= ntiles) break;
            const size_t fb = ((((size_t)grp * nkg + kg) * ntiles + nt0 + i) * 4) * 32 + lane;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                if (LO)
                    d[i][j] = __ldg((const uint4 *)xp + fb + j * 32);
                else {
                    const uint2 v = __ldg((const uint2 *)xp + fb + j * 32);
                    d[i][j] = make_uint4(v.x, v.y, 0, 0);
                }
            }
        }
    };
    if (PF && kg0 < kg1) load_bq(kg0, bq);
    /* the lane's activation scales (tokens 2t, 2t + 1 of each n tile: x row, x row + nkg) and B fragments
     * (group kg's at + kg * bstep) from bases set once */
    const float *xsr[NTT];
    size_t fb0[NTT];
    const size_t bstep = (size_t)ntiles * 128;
#pragma unroll
    for (int i = 0; i < NTT; i++) {
        xsr[i] = xs + ((size_t)grp * ntok + (nt0 + i) * 8 + 2 * t) * nkg;
        fb0[i] = (((size_t)grp * nkg * ntiles + nt0 + i) * 4) * 32 + lane;
    }
    int cur = 0;
    for (int kg = kg0; kg < kg1; kg++) {
        cp_async_wait<ST - 2>(); /* group kg has landed (this lane's copies) */
        __syncwarp();            /* every lane's, and the stage read last is free */
        const int nx = kg + ST - 1, ns = cur == 0 ? ST - 1 : cur - 1;
        if (nx < kg1) {
            if (XR) issue_x(ns, nx);
            mma_issue(stage(ns), src, nx, lane);
        } else
            cp_async_commit();
        if (kg + 1 < kg1) mma_scales(srow, scol, wsn);
        if (++srem == kpb) srem = 0, scol++;
        if (PF && kg + 1 < kg1) load_bq(kg + 1, bqn);
        /* rows g, g + 8 of both m tiles: stage rows 16m + 8h + g, unit t */
        uint4 q[2][2];
#pragma unroll
        for (int m = 0; m < 2; m++)
#pragma unroll
            for (int h = 0; h < 2; h++) q[m][h] = stage(cur).w[(16 * m + 8 * h + g) * 4 + t];
        const char *sx = wring + cur * SBY + 2048; /* XR: this group's fragments, then its scales */
#pragma unroll
        for (int i = 0; i < NTT; i++) {
            const int nt = nt0 + i;
            if (nt >= ntiles) break;
            float tmp[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
            const size_t fb = fb0[i] + (size_t)kg * bstep;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                uint32_t b[4];
                if (PF) {
                    b[0] = bq[i][j].x, b[1] = bq[i][j].y, b[2] = bq[i][j].z, b[3] = bq[i][j].w;
                } else if (XR) {
                    const uint4 v = ((const uint4 *)sx)[(i * 4 + j) * 32 + lane];
                    b[0] = v.x, b[1] = v.y, b[2] = v.z, b[3] = v.w;
                } else if (LO) {
                    const uint4 v = __ldg((const uint4 *)xp + fb + j * 32);
                    b[0] = v.x, b[1] = v.y, b[2] = v.z, b[3] = v.w;
                } else {
                    const uint2 v = __ldg((const uint2 *)xp + fb + j * 32);
                    b[0] = v.x, b[1] = v.y;
                }
#pragma unroll
                for (int m = 0; m < 2; m++) {
                    const uint32_t u0 = j == 0 ? q[m][0].x : j == 1 ? q[m][0].y : j == 2 ? q[m][0].z : q[m][0].w;
                    const uint32_t u1 = j == 0 ? q[m][1].x : j == 1 ? q[m][1].y : j == 2 ? q[m][1].z : q[m][1].w;
                    uint32_t a0, a2, a1, a3;
                    fp8x4_f16(u0, a0, a2); /* row g: slots 2t,2t+1 | 2t+8,2t+9 */
                    fp8x4_f16(u1, a1, a3); /* row g + 8 */
                    mma_f16(tmp[m], a0, a1, a2, a3, b[0], b[1]);
                    if (LO) mma_f16(tmp[m], a0, a1, a2, a3, b[2], b[3]);
                }
            }
            /* epilogue of the group: c0,c1 = row g, tokens 2t, 2t+1; c2,c3 = row g+8 */
            float x0, x1;
            if (XR) {
                const float *sxs = (const float *)(sx + NTT * 2048) + i * 8 + 2 * t;
                x0 = sxs[0], x1 = sxs[1];
            } else
                x0 = __ldg(xsr[i] + kg), x1 = __ldg(xsr[i] + nkg + kg);
#pragma unroll
            for (int m = 0; m < 2; m++) {
                acc[m][i][0] = grp_fma(tmp[m][0], __fmul_rn(ws[m][0], x0), acc[m][i][0]);
                acc[m][i][1] = grp_fma(tmp[m][1], __fmul_rn(ws[m][0], x1), acc[m][i][1]);
                acc[m][i][2] = grp_fma(tmp[m][2], __fmul_rn(ws[m][1], x0), acc[m][i][2]);
                acc[m][i][3] = grp_fma(tmp[m][3], __fmul_rn(ws[m][1], x1), acc[m][i][3]);
            }
        }
#pragma unroll
        for (int m = 0; m < 2; m++) ws[m][0] = wsn[m][0], ws[m][1] = wsn[m][1];
        if (PF)
#pragma unroll
            for (int i = 0; i < NTT; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) bq[i][j] = bqn[i][j];
        cur = cur == ST - 1 ? 0 : cur + 1;
    }
    cp_async_wait<0>();
    __syncwarp(); /* XR: every lane's copies landed before the ring holds the warp's sums */
    if constexpr (XR)
        mma_finish<NTT, true>(acc, P, p, rb, nt0, ntiles, w.rows, n, J.y[job] + grp * yg, J.ldy[job], J.sa,
                              (float *)mma_dyn, ST * SBY / 4);
    else
        mma_finish<NTT>(acc, P, p, rb, nt0, ntiles, w.rows, n, J.y[job] + grp * yg, J.ldy[job], J.sa);
}

/* ---- Decode (n <= 8 tokens): the same sums, streamed by fewer, longer-lived warps.
 *
 * k_mma_fp8 splits a 32-row tile's 64-column groups into P parts (a cluster)
 * and each part into four warp quarters (mma_place_of); the tile's outputs are
 * ((q0 + q1) + q2) + q3 per part, the parts added in part order (mma_finish).
 * At one token tile a block does a few groups per warp and then syncs,
 * reduces and leaves: about two DRAM round trips for 8-32 KB, in two waves
 * (ncu: 10-35 % of DRAM bandwidth at batch 1).
 *
 * Here a block is one warp, which takes a contiguous run of (tile, part)
 * units - one contiguous run of (tile, group) steps - and streams it through
 * its own cp.async ring that does not drain between parts or tiles: a stage
 * is two consecutive steps (a row's 128 bytes when they are one tile's
 * groups) with their rows' scale words and the steps' activations, a few
 * stages ahead; the warps (DSV4_MMA_GPW groups each, 8 by default) never
 * outnumber what stays resident, so there are no waves. The quarters of a
 * part add in registers in the order above. A tile whose parts are all the warp's is
 * summed and stored; a tile shared with other warps gets its part sums
 * written to scratch, and the warp that completes its count (one counter per
 * tile, left at zero) adds them in part order. Every sum is k_mma_fp8's, so
 * the bits are its bits: which kernel runs may depend on the batch (batch
 * invariance holds). */
/* Stages (pairs of groups) in a warp's ring: three pairs ahead (seven, with
 * fewer warps resident, was slower); two where three would leave fewer than
 * eight warps an SM (more than five tokens' activations) */
#define MS_STAGES 4
/* A half (one step) of a stage: the 32 rows' 16-byte units (row r, unit u at
 * r * 4 + u), their scale words (the aligned 4 bytes holding each row's E8M0
 * scale of the group), the step's activation scales of tokens 0..n-1, and
 * the activation fragments of those tokens: 16-byte chunks in the packed x's
 * order, row j (of 4) holding lanes 0..4n-1 (LO: 16 bytes a lane, else 8).
 * The activations come through the ring with the weights. Loaded into
 * registers a step ahead instead, each use waited for every load issued
 * before it (ptxas gives the loads one scoreboard, and waited at the loop's
 * head): an L2 round trip a step (b1: wo_a 21.8 us against 19.3 this way). */
#define MS_W  0
#define MS_SC 2048
#define MS_XS 2176
#define MS_XB 2208
__host__ __device__ constexpr int ms_xb_bytes(bool LO, int n)
{
    return 16 * n * (LO ? 16 : 8);
}
__host__ __device__ constexpr int ms_half_bytes(bool LO, int n)
{
    return MS_XB + ms_xb_bytes(LO, n);
}
__host__ __device__ constexpr int ms_smem_of(bool LO, int n, int S)
{
    return S * 2 * ms_half_bytes(LO, n);
}
static_assert(ms_smem_of(true, 8, MS_STAGES) <= 48 * 1024,
              "k_mma_fp8s: within the default dynamic shared memory (no attribute set)");
constexpr int ms_stages_of(bool LO, int n)
{
    return ms_smem_of(LO, n, MS_STAGES) <= 28 * 1024 ? MS_STAGES : MS_STAGES - 1;
}
#define MS_BLOCKS(LO) ((LO) ? 8 : 12) /* one-warp blocks per SM (registers) */

/* Where tile tf (group-major over the jobs' tiles) lies. */
struct ms_tile {
    wdesc w;
    int64_t rb;
    int job, grp;
};

__device__ __forceinline__ void ms_tile_of(const mma_jobs &J, int T, int tf, ms_tile &o)
{
    o.grp = tf / T;
    const int ty = tf - o.grp * T;
    int job = 0;
    while (job + 1 < J.n && ty >= J.tile0[job + 1]) job++;
    o.job = job;
    o.w = J.w[job];
    o.w.row0 += (int64_t)o.grp * o.w.rows;
    o.rb = (int64_t)(ty - J.tile0[job]) * MMA_ROWS;
}

template <bool LO, int S>
__global__ void __launch_bounds__(32, MS_BLOCKS(LO))
    k_mma_fp8s(mma_jobs J, const uint32_t *xp, const float *xs, int nkg, int P, int n, size_t yg, int U, int W,
               float *part, unsigned *cnt)
{
    const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    const int wi = blockIdx.x; /* a block is one warp */
    if (wi >= W) return;
    const int u0 = (int)((int64_t)wi * U / W), u1 = (int)((int64_t)(wi + 1) * U / W);
    if (u0 >= u1) return;
    const int T = J.tile0[J.n], ntok = 8;
    const int hb = ms_half_bytes(LO, n); /* a half's bytes */
    extern __shared__ uint4 mma_dyn[];
    char *ring = (char *)mma_dyn; /* stage s, half h at (2 s + h) * hb */
    /* the warp's steps: tile u0 / P from group nkg p0 / P to tile (u1 - 1) / P up to group nkg p1 / P */
    const int tl = (u1 - 1) / P, kl = (int)((int64_t)nkg * ((u1 - 1) % P + 1) / P);
    const int tf0 = u0 / P, kf0 = (int)((int64_t)nkg * (u0 % P) / P);
    const int nsteps = (tl - tf0) * nkg + kl - kf0;
    /* Issue side. A stage is two consecutive steps; lane (r4 = lane / 8, h = lane / 4 % 2, u = lane % 4)
     * copies unit u of step 2i + h for rows r4 + 4k (k < 8): each instruction moves four whole 128-byte
     * lines when the two steps are one row's consecutive groups. A lane walks its own steps h, h + 2, ...
     * with pointers that move by 128 bytes (and a scale column) per pair. The half's 16 lanes (hl) copy
     * its activation chunks and token hl's scale. */
    const int ih = (lane >> 2) & 1, un = lane & 3, r4 = lane >> 3, sr = r4 * 4 + un; /* sr, sr + 16: scale rows */
    const int hl = sr;                                                               /* the lane's index in its half */
    const size_t xstep = LO ? 4 * 32 * 4 : 4 * 32 * 2; /* 32-bit words per (group, step) of the packed x */
    const int cpj = n * (LO ? 4 : 2);                  /* 16-byte activation chunks per fragment row */
    int istep = ih, itf = tf0, ikg = kf0 + ih;
    const char *ip = nullptr;                    /* row r4, unit un, group ikg */
    const char *isafe = (const char *)J.w[0].data; /* a valid address for the zero-fill copies */
    int64_t istride = 0;                         /* four rows */
    unsigned ivalid = 0;                         /* bit k: row r4 + 4k is in the weight */
    int ikend = 0, ikpb = 1, irem = 0;
    const char *isc[2] = {isafe, isafe}; /* rows sr, sr + 16: their scale byte of group ikg */
    bool isv[2] = {false, false};
    const char *ixb = nullptr;  /* group ikg's activation fragments */
    const float *ixs = nullptr; /* group ikg's scale of token hl */
    auto isetup = [&]() {
        ms_tile it;
        ms_tile_of(J, T, itf, it);
        ikpb = it.w.bc / 64;
        irem = ikg % ikpb;
        const int irows = (int)(it.w.rows - it.rb < MMA_ROWS ? it.w.rows - it.rb : MMA_ROWS);
        ikend = (int)((it.w.row_bytes - 16 * un + 63) / 64);
        istride = 4 * it.w.row_bytes;
        ip = (const char *)it.w.data + (it.w.row0 + it.rb + r4) * it.w.row_bytes + 16 * un + (int64_t)ikg * 64;
        isafe = (const char *)it.w.data + it.w.row0 * it.w.row_bytes;
        ivalid = 0;
#pragma unroll
        for (int k = 0; k < 8; k++) ivalid |= (r4 + 4 * k < irows ? 1u : 0u) << k;
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const int r = sr + 16 * k;
            isv[k] = r < irows;
            isc[k] = (const char *)it.w.scale +
                     (uint32_t)(it.w.row0 + it.rb + (isv[k] ? r : 0)) / (uint32_t)it.w.br * it.w.scale_cols + ikg / ikpb;
        }
        ixb = (const char *)(xp + ((size_t)it.grp * nkg + ikg) * xstep);
        ixs = xs + ((size_t)it.grp * ntok + (hl < n ? hl : 0)) * nkg + ikg;
    };
    if (ikg >= nkg) itf += ikg / nkg, ikg %= nkg;
    if (istep < nsteps) isetup();
    /* the activations of a half (x: the pack's output, after griddepcontrol.wait) */
    auto issue_x = [&](char *d, const char *xb, const float *xsp) {
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int k = 0; k < 2; k++) {
                const int c = hl + 16 * k;
                if (c < cpj) cp_async<16>(d + MS_XB + (j * cpj + c) * 16, xb + j * 32 * (LO ? 16 : 8) + c * 16, true);
            }
        if (hl < n) cp_async<4>(d + MS_XS + 4 * hl, xsp, true);
    };
    const char *pxb[S - 1];
    const float *pxs[S - 1];
    auto issue = [&](int slot, bool withx) {
        if (istep < nsteps) {
            char *d = ring + (2 * slot + ih) * hb;
            const unsigned v = ikg < ikend ? ivalid : 0u;
#pragma unroll
            for (int k = 0; k < 8; k++) {
                const bool ok = (v >> k) & 1u;
                cp_async<16>(d + MS_W + ((r4 + 4 * k) * 4 + un) * 16, ok ? ip + k * istride : isafe, ok);
            }
#pragma unroll
            for (int k = 0; k < 2; k++)
                cp_async<4>(d + MS_SC + 4 * (sr + 16 * k), (const void *)((uintptr_t)isc[k] & ~(uintptr_t)3), isv[k]);
            if (withx)
                issue_x(d, ixb, ixs);
            else
                pxb[slot] = ixb, pxs[slot] = ixs;
            istep += 2, ikg += 2, ip += 128, irem += 2;
            ixb += 2 * xstep * 4, ixs += 2;
            while (irem >= ikpb) irem -= ikpb, isc[0]++, isc[1]++;
            if (ikg >= nkg && istep < nsteps) {
                itf += ikg / nkg, ikg %= nkg;
                isetup();
            }
        } else if (!withx)
            pxb[slot] = nullptr;
        cp_async_commit();
    };
#pragma unroll
    for (int i = 0; i < S - 1; i++) issue(i, false);
    /* the weights do not depend on the kernel before (the pack); x does: the
     * first stages' activations, a group each after the weights' groups (the
     * loop's waits, for all but the S - 2 newest groups, see a pair's weights
     * and activations landed) */
    asm volatile("griddepcontrol.wait;" ::: "memory");
#pragma unroll
    for (int i = 0; i < S - 1; i++) {
        if (pxb[i]) issue_x(ring + (2 * i + ih) * hb, pxb[i], pxs[i]);
        cp_async_commit();
    }
    int cur = 0, rel = 0; /* the pair's slot, the step's index in the run */
    ms_tile ct;
    int cb[2][2] = {{0, 0}, {0, 0}}; /* this lane's four rows' scale byte offsets at column 0 */
    bool cuni = true;                /* the tile's 32 rows share one scale row */
    float acc[2][4], ps[2][4], tot[2][4];
    bool whole = false;
    int mine = 0, ckpb = 1;
    for (int u = u0; u < u1; u++) {
        const int tf = u / P, p = u - tf * P;
        if (u == u0 || p == 0) {
            ms_tile_of(J, T, tf, ct);
            ckpb = ct.w.bc / 64;
            const uint32_t rb0 = (uint32_t)(ct.w.row0 + ct.rb);
#pragma unroll
            for (int m = 0; m < 2; m++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int64_t r = ct.rb + 16 * m + 8 * h + g;
                    cb[m][h] = (int)(((uintptr_t)ct.w.scale +
                                      (uint32_t)(ct.w.row0 + (r < ct.w.rows ? r : 0)) / (uint32_t)ct.w.br *
                                          ct.w.scale_cols) &
                                     3);
                }
            cuni = rb0 / (uint32_t)ct.w.br == (rb0 + MMA_ROWS - 1) / (uint32_t)ct.w.br;
            whole = u - p >= u0 && u - p + P <= u1;
            mine = 0;
        }
        const int pk0 = (int)((int64_t)nkg * p / P), pk1 = (int)((int64_t)nkg * (p + 1) / P);
        for (int qq = 0; qq < MMA_WARPS; qq++) {
            const int kg0 = pk0 + (pk1 - pk0) * qq / MMA_WARPS, kg1 = pk0 + (pk1 - pk0) * (qq + 1) / MMA_WARPS;
#pragma unroll
            for (int m = 0; m < 2; m++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[m][e] = 0.0f;
            int scol = kg0 / ckpb, srem = kg0 - scol * ckpb;
            /* the sums of NH steps (NH = 1, or 2: both halves of a stage, stg and stg + hb, at scale columns sc[0],
             * sc[1]): tmp[h] (step h's MMA chains, fresh) and the factors f[h][m][e] (weight scale x activation
             * scale) that acc's FMAs take. With two, the steps' chains interleave: one warp's instruction latency
             * bounds this loop, and the two steps are independent until acc. */
            auto steps_of = [&](auto nh, const char *stg, const int *sc, float(*tmp)[2][4], float(*f)[2][4]) {
                constexpr int NH = decltype(nh)::value;
                uint4 q[NH][2][2], bq[NH][4];
#pragma unroll
                for (int h2 = 0; h2 < NH; h2++) {
                    const char *sg = stg + h2 * hb;
                    const uint32_t *ssc = (const uint32_t *)(sg + MS_SC);
                    float ws[2][2];
                    if (cuni) {
                        const float v = dsv4_e8m0_to_f32((ssc[g] >> (8 * ((cb[0][0] + sc[h2]) & 3))) & 0xffu);
                        ws[0][0] = ws[0][1] = ws[1][0] = ws[1][1] = v;
                    } else {
#pragma unroll
                        for (int m = 0; m < 2; m++)
#pragma unroll
                            for (int h = 0; h < 2; h++)
                                ws[m][h] = dsv4_e8m0_to_f32(
                                    (ssc[16 * m + 8 * h + g] >> (8 * ((cb[m][h] + sc[h2]) & 3))) & 0xffu);
                    }
                    const uint4 *sw = (const uint4 *)(sg + MS_W);
#pragma unroll
                    for (int m = 0; m < 2; m++)
#pragma unroll
                        for (int h = 0; h < 2; h++) q[h2][m][h] = sw[(16 * m + 8 * h + g) * 4 + t];
#pragma unroll
                    for (int j = 0; j < 4; j++) { /* lane (g, t): token g's fragments (a token past n: zeros) */
                        if (g >= n)
                            bq[h2][j] = make_uint4(0, 0, 0, 0);
                        else if (LO)
                            bq[h2][j] = ((const uint4 *)(sg + MS_XB))[j * cpj + lane];
                        else {
                            const uint2 v = ((const uint2 *)(sg + MS_XB))[j * 2 * cpj + lane];
                            bq[h2][j] = make_uint4(v.x, v.y, 0, 0);
                        }
                    }
                    /* tokens 2t, 2t + 1's scales (a token past n: zero, its products not stored) */
                    const float *sxs = (const float *)(sg + MS_XS);
                    const float x0 = 2 * t < n ? sxs[2 * t] : 0.0f, x1 = 2 * t + 1 < n ? sxs[2 * t + 1] : 0.0f;
#pragma unroll
                    for (int m = 0; m < 2; m++) {
#pragma unroll
                        for (int e = 0; e < 4; e++) tmp[h2][m][e] = 0.0f;
                        f[h2][m][0] = __fmul_rn(ws[m][0], x0), f[h2][m][1] = __fmul_rn(ws[m][0], x1);
                        f[h2][m][2] = __fmul_rn(ws[m][1], x0), f[h2][m][3] = __fmul_rn(ws[m][1], x1);
                    }
                }
#pragma unroll
                for (int j = 0; j < 4; j++)
#pragma unroll
                    for (int h2 = 0; h2 < NH; h2++)
#pragma unroll
                        for (int m = 0; m < 2; m++) {
                            const uint4 &w0 = q[h2][m][0], &w1 = q[h2][m][1];
                            const uint32_t u0w = j == 0 ? w0.x : j == 1 ? w0.y : j == 2 ? w0.z : w0.w;
                            const uint32_t u1w = j == 0 ? w1.x : j == 1 ? w1.y : j == 2 ? w1.z : w1.w;
                            uint32_t a0, a2, a1, a3;
                            fp8x4_f16(u0w, a0, a2);
                            fp8x4_f16(u1w, a1, a3);
                            mma_f16(tmp[h2][m], a0, a1, a2, a3, bq[h2][j].x, bq[h2][j].y);
                            if (LO) mma_f16(tmp[h2][m], a0, a1, a2, a3, bq[h2][j].z, bq[h2][j].w);
                        }
            };
            auto add_step = [&](const float(*tmp)[4], const float(*f)[4]) {
#pragma unroll
                for (int m = 0; m < 2; m++)
#pragma unroll
                    for (int e = 0; e < 4; e++) acc[m][e] = grp_fma(tmp[m][e], f[m][e], acc[m][e]);
            };
            for (int kg = kg0; kg < kg1;) {
                if (!(rel & 1)) {
                    cp_async_wait<S - 2>(); /* this pair has landed (this lane's copies) */
                    __syncwarp();           /* every lane's, and the pair read last is free */
                    issue(cur == 0 ? S - 1 : cur - 1, true);
                }
                const char *stg = ring + (2 * cur + (rel & 1)) * hb;
                if (LO && !(rel & 1) && kg + 1 < kg1) {
                    /* both steps of the pair; their sums go into acc in step order, as one at a time (LO: the
                     * reference's path; !LO's twelve warps an SM leave no registers for it) */
                    const int sc[2] = {scol, srem + 1 == ckpb ? scol + 1 : scol};
                    float tmp[2][2][4], f[2][2][4];
                    steps_of(std::integral_constant<int, 2>(), stg, sc, tmp, f);
                    add_step(tmp[0], f[0]);
                    add_step(tmp[1], f[1]);
                    cur = cur == S - 1 ? 0 : cur + 1;
                    rel += 2, kg += 2;
                    scol = sc[1];
                    if (++srem == ckpb) srem = 0;
                    if (++srem == ckpb) srem = 0, scol++;
                    continue;
                }
                float tmp[1][2][4], f[1][2][4];
                steps_of(std::integral_constant<int, 1>(), stg, &scol, tmp, f);
                add_step(tmp[0], f[0]);
                if (rel & 1) cur = cur == S - 1 ? 0 : cur + 1;
                rel++, kg++;
                if (++srem == ckpb) srem = 0, scol++;
            }
            /* the quarters in order (mma_finish's warp sums) */
#pragma unroll
            for (int m = 0; m < 2; m++)
#pragma unroll
                for (int e = 0; e < 4; e++) ps[m][e] = qq == 0 ? acc[m][e] : ps[m][e] + acc[m][e];
        }
        /* the part: into the tile's total (parts in order), or to scratch */
        if (whole) {
#pragma unroll
            for (int m = 0; m < 2; m++)
#pragma unroll
                for (int e = 0; e < 4; e++) tot[m][e] = p == 0 ? ps[m][e] : tot[m][e] + ps[m][e];
        } else {
#pragma unroll
            for (int m = 0; m < 2; m++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int r = 16 * m + g + (e >= 2 ? 8 : 0), tk = 2 * t + (e & 1);
                    if (tk < n) part[((size_t)tf * P + p) * 256 + tk * 32 + r] = ps[m][e];
                }
        }
        mine++;
        if (p != P - 1 && u != u1 - 1) continue;
        /* the tile's end, or this warp's: store, or count in */
        float *out = J.y[ct.job] + ct.grp * yg;
        const int ldy = J.ldy[ct.job];
        if (!whole) {
            __syncwarp(); /* every lane's part sums, then (lane 0) the fence and the count */
            unsigned old = 0;
            if (lane == 0) {
                __threadfence();
                old = atomicAdd(cnt + tf, (unsigned)mine);
            }
            old = __shfl_sync(0xffffffffu, old, 0);
            if (old + (unsigned)mine != (unsigned)P) continue;
            __threadfence(); /* the other warps' sums, after their counts */
#pragma unroll
            for (int m = 0; m < 2; m++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int r = 16 * m + g + (e >= 2 ? 8 : 0), tk = 2 * t + (e & 1);
                    float v[MMA_MAXP];
#pragma unroll
                    for (int k = 0; k < MMA_MAXP; k++)
                        v[k] = k < P && tk < n ? __ldcg(part + ((size_t)tf * P + k) * 256 + tk * 32 + r) : 0.0f;
                    float s = v[0];
#pragma unroll
                    for (int k = 1; k < MMA_MAXP; k++)
                        if (k < P) s += v[k];
                    tot[m][e] = s;
                }
            if (lane == 0) cnt[tf] = 0; /* for the next launch */
        }
#pragma unroll
        for (int m = 0; m < 2; m++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int64_t r = ct.rb + 16 * m + g + (e >= 2 ? 8 : 0);
                const int tk = 2 * t + (e & 1);
                if (r < ct.w.rows && tk < n) out[(size_t)tk * ldy + r] = tot[m][e];
            }
    }
    cp_async_wait<0>();
}

/* BF16 weights. Pack: three BF16 parts of each activation (hi + mid + lo: 24
 * significant bits, FP32's precision, no scale: BF16 has FP32's range; a
 * non-finite value stays whole in hi), NP planes of uint2 in the fragment
 * layout of k_mma_pack. */
template <int NPT>
__global__ void k_mma_pack_bf16(const float *x, int ldx, size_t xg, int n, int ntok, int K, int nkg, uint2 *xp,
                                size_t plane)
{
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory"); /* x (launch_pdl) */
    const int lane = threadIdx.x & 31;
    pack_at at;
    if (!pack_at_of(ntok, nkg, at)) return;
    const int grp = at.grp, tok = at.tok, kg = at.kg;
    if (kg >= nkg) return;
    float v[4];
    pack_load4(x, ldx, xg, grp, tok, n, at.c0, K, v);
    /* k_mma_bf16's lane t holds columns 8t .. 8t + 7 and 32 + 8t .. + 7 of the
     * group (two 16-byte loads), step j = 2 * half + quarter */
    const int q = lane & 15, t = (q >> 1) & 3, j = 2 * (q >> 3) + (q & 1), ntiles = ntok / 8;
    const size_t f = ((((size_t)grp * nkg + kg) * ntiles + tok / 8) * 4 + j) * 32 + (tok & 7) * 4 + t;
    uint2 w[NPT];
    bf16_parts<NPT>(v, w);
#pragma unroll
    for (int s = 0; s < NPT; s++) xp[s * plane + f] = w[s];
}

/* The BF16 kernel: as k_mma_fp8 with rows of 128 bytes per 64-column group
 * (a lane: bytes 16t .. + 15 of each half of rows g and g + 8, already MMA
 * operands), no scales, NPT MMAs per step: the activation's three parts, hi
 * first, or (NPT = 1, reference numerics: the reference's BF16 activations)
 * hi alone - BF16(x), one MMA instead of three. */
template <int NTT, bool MULTI, int NPT>
__global__ void __launch_bounds__(32 * MMA_WARPS, 2)
    k_mma_bf16(mma_jobs J, const uint2 *xp, size_t plane, int ntok, int nkg, int P, int n, size_t yg)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    /* one job (MULTI false): its descriptor stays kernel-parameter operands
     * (a job picked at run time takes registers: measured 8 % slower on the
     * LM head) */
    int job = 0;
    if (MULTI)
        while (job + 1 < J.n && (int)blockIdx.y >= J.tile0[job + 1]) job++;
    wdesc w = J.w[MULTI ? job : 0];
    const mma_place at = mma_place_of(nkg, P, ntok, NTT, (int64_t)blockIdx.y - J.tile0[job]);
    const int grp = at.grp, p = at.p, nt0 = at.nt0, ntiles = at.ntiles, kg0 = at.kg0, kg1 = at.kg1;
    const int64_t rb = at.rb;
    w.row0 += (int64_t)grp * w.rows;
    float acc[2][NTT][4] = {};
    wgrp cur[2], nxt[2]; /* the group's two 16-byte halves */
    if (kg0 < kg1) load_group(w, rb, 2 * kg0, g, t, cur[0]), load_group(w, rb, 2 * kg0 + 1, g, t, cur[1]);
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (J.trig) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    /* two n tiles (9 to 16 tokens): the activations' fragments too are loaded a group ahead */
    constexpr bool PF = NTT == 2;
    uint2 bq[PF ? NTT : 1][4][NPT], bqn[PF ? NTT : 1][4][NPT];
    auto load_b = [&](int kg, int i, int j, uint2 *d) {
        const size_t fb = ((((size_t)grp * nkg + kg) * ntiles + nt0 + i) * 4) * 32 + lane;
#pragma unroll
        for (int s = 0; s < NPT; s++) d[s] = __ldg(xp + s * plane + fb + j * 32);
    };
    auto load_bq = [&](int kg, uint2(*d)[4][NPT]) {
#pragma unroll
        for (int i = 0; i < NTT; i++) {
            if (nt0 + i >= ntiles) break;
#pragma unroll
            for (int j = 0; j < 4; j++) load_b(kg, i, j, d[i][j]);
        }
    };
    if (PF && kg0 < kg1) load_bq(kg0, bq);
    for (int kg = kg0; kg < kg1; kg++) {
        if (kg + 1 < kg1) load_group(w, rb, 2 * kg + 2, g, t, nxt[0]), load_group(w, rb, 2 * kg + 3, g, t, nxt[1]);
        if (PF && kg + 1 < kg1) load_bq(kg + 1, bqn);
#pragma unroll
        for (int i = 0; i < NTT; i++) {
            const int nt = nt0 + i;
            if (nt >= ntiles) break;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                uint2 b[NPT];
                if (PF)
#pragma unroll
                    for (int s = 0; s < NPT; s++) b[s] = bq[i][j][s];
                else
                    load_b(kg, i, j, b);
#pragma unroll
                for (int m = 0; m < 2; m++) {
                    /* columns 16t + 4j .. + 3: words 2j, 2j + 1 of the lane's 32 bytes */
                    const uint4 &q0 = cur[j >> 1].q[m][0], &q1 = cur[j >> 1].q[m][1];
                    const uint32_t a0 = (j & 1) ? q0.z : q0.x, a2 = (j & 1) ? q0.w : q0.y;
                    const uint32_t a1 = (j & 1) ? q1.z : q1.x, a3 = (j & 1) ? q1.w : q1.y;
#pragma unroll
                    for (int s = 0; s < NPT; s++) mma_bf16(acc[m][i], a0, a1, a2, a3, b[s].x, b[s].y);
                }
            }
        }
        cur[0] = nxt[0], cur[1] = nxt[1];
        if (PF)
#pragma unroll
            for (int i = 0; i < NTT; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
#pragma unroll
                    for (int s = 0; s < NPT; s++) bq[i][j][s] = bqn[i][j][s];
    }
    mma_finish<NTT>(acc, P, p, rb, nt0, ntiles, w.rows, n, J.y[job] + grp * yg, J.ldy[job], J.sa);
}

/* The tensor-core paths (linears here, experts in moe_mma.cu) unless
 * DSV4_CUDA_MMA=0 (the CUDA-core baseline). */
bool cuda_mma_on(void)
{
    static int on = -1;
    if (on < 0) on = cuda_env_on("DSV4_CUDA_MMA");
    return on;
}

/* Shape and format only: FP8 with E8M0 scales, rows of whole aligned 16-byte
 * chunks, 64-column groups inside one scale block; or BF16 rows of whole
 * aligned 16-byte chunks. DSV4_CUDA_MMA=0 turns the path off (the GEMV
 * baseline). */
bool cuda_mma_eligible(const wdesc &w)
{
    if (!cuda_mma_on() || !w.chunk16 || w.rows <= 0) return false;
    if (w.fmt == DSV4_WF_FP8) return w.sdtype == DSV4_DT_F8_E8M0 && w.cols % 16 == 0 && w.bc % 64 == 0;
    return w.fmt == DSV4_WF_FLOAT && w.dtype == DSV4_DT_BF16;
}

/* BF16 weights of 512 to 1,023 rows (16 to 31 row tiles: an HCA layer's compressor projections in Flash, two in
 * one launch on the second queue, beside wq_a and wq_b's chain) take at most 4 parts along K instead of 8: 128
 * blocks of four 64-column groups a warp instead of 256 of two. At 8, the q-norm's one-block kernel on the main
 * queue beside them took 10.8 us instead of 2.9 in a batch-1 step's trace (s55 exp2/). Decode, 8 Flash-shaped
 * layers (bench/results/2026-12-04-s55/exp5/): batch 1 -0.9 %, 1 x 4k -0.9 %, 16 +0.1 %, 64 +0.2 %. The cap on a
 * CSA layer's (1,024 rows, 32 tiles) too gained nothing at batch 1 and cost 0.2-0.5 % at 64 (exp3/, exp5/); 4 on
 * the router's gate and the indexer's compressor (8 tiles) was slower at every batch, 2 on these too (exp2/,
 * exp3/). The part count is the sum's order: a shape rule, the same for every batch. DSV4_BF16_PCAP=0: off (a
 * measurement's knob). */
#define MMA_BF16_CAP_LO 16
#define MMA_BF16_CAP_HI 32
#define MMA_BF16_CAP_P  4

/* Parts along K: enough blocks to fill the GPU (about four per SM), each
 * warp of a part at least one 64-column group (MMA_BF16_CAP_*: fewer for some BF16 shapes). Shape and the GPU's
 * nsm SMs only. */
static int mma_parts(int nsm, const wdesc &w, int G)
{
    const int64_t tiles = (w.rows + MMA_ROWS - 1) / MMA_ROWS * G, nkg = (w.cols + 63) / 64;
    int P = 1;
    while (P < MMA_MAXP && tiles * P < 4 * nsm && nkg >= 2 * MMA_WARPS * P) P *= 2;
    /* at most MMA_BF16_CAP_P parts for BF16 weights of MMA_BF16_CAP_LO to MMA_BF16_CAP_HI - 1 row tiles */
    static int cap = -1;
    if (cap < 0) cap = cuda_env_on("DSV4_BF16_PCAP");
    if (cap && w.fmt == DSV4_WF_FLOAT && tiles >= MMA_BF16_CAP_LO && tiles < MMA_BF16_CAP_HI && P > MMA_BF16_CAP_P)
        P = MMA_BF16_CAP_P;
    return P;
}

/* The MMA kernels' grid: (token tiles, 32-row tiles, P x G); the parts of a
 * (group, tile) are one cluster (cuda_launch's cluster_z = P), and the
 * launch is programmatic dependent (the packing kernel lets them start
 * their weight loads). */
static dim3 mma_grid(int64_t tiles, int ntok, int NTT, int P, int G)
{
    return dim3((unsigned)((ntok / 8 + NTT - 1) / NTT), (unsigned)tiles, (unsigned)(P * G));
}

static int64_t mma_tiles(const wdesc &w) { return (w.rows + MMA_ROWS - 1) / MMA_ROWS; }

template <int NTT, bool LO>
static void mma_launch_t(cudaStream_t st, const mma_jobs &J, const uint32_t *xp, const float *xs, int ntok, int nkg,
                         int P, int G, int n, size_t yg)
{
    constexpr size_t smem = mma_fp8_smem_of(NTT, LO); /* above 48 KB: cuda_mma_init */
    mma_jobs Js = J;
    Js.sa = cuda_lin_async();
    cuda_launch(k_mma_fp8<NTT, LO>, mma_grid(J.tile0[J.n], ntok, NTT, P, G), dim3(32 * MMA_WARPS), smem, st,
                P > 1 ? (unsigned)P : 0u, true, Js, xp, xs, ntok, nkg, P, n, yg);
}

/* k_mma_fp8s's launch: where its scratch is and how many warps it may use. */
struct ms_ctx {
    float *part;
    unsigned *cnt;
    int nsm;
};

/* Decode's streamed kernel unless DSV4_MMA_STREAM=0 (2: for every shape, the
 * tests' setting); DSV4_MMA_GPW: the 64-column groups per warp it aims at
 * (default 8; never more warps than stay resident). */
static int ms_on(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("DSV4_MMA_STREAM");
        on = e && e[0] == '0' ? 0 : e && e[0] == '2' ? 2 : 1;
    }
    return on;
}

static int ms_gpw(void)
{
    static int v = 0;
    if (!v) v = cuda_env_int("DSV4_MMA_GPW", 8);
    return v;
}

/* The streamed kernel's scratch for a launch of J (G groups, P parts): sums of
 * shared tiles' parts (32 rows x 8 tokens each) and a counter per tile
 * (zeroed when allocated; each launch leaves them zero). Null when the
 * streamed kernel does not apply: off, or a scale table not 4-byte aligned. */
static bool ms_ctx_for(dsv4_backend *be, const mma_jobs &J, int G, int P, ms_ctx &c)
{
    if (!ms_on()) return false;
    /* fewer (tile, part) units than about three per SM: k_mma_fp8's four warps per unit have more in flight */
    if ((int64_t)J.tile0[J.n] * G * P < 3 * (int64_t)impl_of(be)->n_sm && ms_on() < 2) return false;
    for (int i = 0; i < J.n; i++)
        if ((uintptr_t)J.w[i].scale & 3) return false;
    cuda_impl *im = impl_of(be);
    const size_t tiles = (size_t)J.tile0[J.n] * G;
    c.part = (float *)cuda_scratch(be, CS_MMA_PART, tiles * P * 256 * sizeof(float));
    const size_t had = im->scratch_cap[im->q][CS_MMA_CNT];
    c.cnt = (unsigned *)cuda_scratch(be, CS_MMA_CNT, tiles * sizeof(unsigned));
    if (im->scratch_cap[im->q][CS_MMA_CNT] != had) CK(cudaMemsetAsync(c.cnt, 0, im->scratch_cap[im->q][CS_MMA_CNT], im->stream));
    c.nsm = im->n_sm;
    return true;
}

template <bool LO, int S>
static void ms_launch_s(cudaStream_t st, const ms_ctx &c, const mma_jobs &J, const uint32_t *xp, const float *xs,
                        int nkg, int P, int G, int n, size_t yg)
{
    static int per_sm_of[9]; /* one-warp blocks resident per SM, by n (the ring's size) */
    const size_t smem = (size_t)ms_smem_of(LO, n, S);
    int &per_sm = per_sm_of[n];
    if (!per_sm) {
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_mma_fp8s<LO, S>, 32, smem));
        if (per_sm < 1) per_sm = 1;
    }
    const int64_t U = (int64_t)J.tile0[J.n] * G * P, steps = (int64_t)J.tile0[J.n] * G * nkg;
    int64_t W = (steps + ms_gpw() - 1) / ms_gpw();
    if (W > (int64_t)c.nsm * per_sm) W = (int64_t)c.nsm * per_sm;
    if (W > U) W = U;
    if (W < 1) W = 1;
    cuda_launch(k_mma_fp8s<LO, S>, dim3((unsigned)W), dim3(32), smem, st, 0u, true, J, xp, xs, nkg, P, n, yg, (int)U,
                (int)W, c.part, c.cnt);
}

template <bool LO>
static void ms_launch(cudaStream_t st, const ms_ctx &c, const mma_jobs &J, const uint32_t *xp, const float *xs, int nkg,
                      int P, int G, int n, size_t yg)
{
    if (ms_stages_of(LO, n) == MS_STAGES)
        ms_launch_s<LO, MS_STAGES>(st, c, J, xp, xs, nkg, P, G, n, yg);
    else
        ms_launch_s<LO, MS_STAGES - 1>(st, c, J, xp, xs, nkg, P, G, n, yg);
}

template <bool LO>
static void mma_launch(cudaStream_t st, const mma_jobs &J, const uint32_t *xp, const float *xs, int ntok, int nkg,
                       int P, int G, int n, size_t yg, const ms_ctx *ms = nullptr)
{
    const int ntiles = ntok / 8;
    if (ntiles == 1 && ms) {
        ms_launch<LO>(st, *ms, J, xp, xs, nkg, P, G, n, yg);
        return;
    }
    if (ntiles >= 4) mma_launch_t<4, LO>(st, J, xp, xs, ntok, nkg, P, G, n, yg);
    else if (ntiles == 2) mma_launch_t<2, LO>(st, J, xp, xs, ntok, nkg, P, G, n, yg);
    else mma_launch_t<1, LO>(st, J, xp, xs, ntok, nkg, P, G, n, yg);
}

template <int NTT, int NPT>
static void bf16_launch_t(cudaStream_t st, const mma_jobs &J, const uint2 *xp, size_t plane, int ntok, int nkg, int P,
                          int G, int n, size_t yg)
{
    mma_jobs Js = J;
    Js.sa = cuda_lin_async();
    cuda_launch(J.n > 1 ? k_mma_bf16<NTT, true, NPT> : k_mma_bf16<NTT, false, NPT>,
                mma_grid(J.tile0[J.n], ntok, NTT, P, G), dim3(32 * MMA_WARPS), 0, st, P > 1 ? (unsigned)P : 0u, true,
                Js, xp, plane, ntok, nkg, P, n, yg);
}

/* one: BF16(x) alone (reference numerics), else its three parts */
template <int NPT>
static void bf16_launch_p(cudaStream_t st, const mma_jobs &J, const uint2 *xp, size_t plane, int ntok, int nkg, int P,
                          int G, int n, size_t yg)
{
    const int ntiles = ntok / 8;
    if (ntiles >= 4)
        bf16_launch_t<4, NPT>(st, J, xp, plane, ntok, nkg, P, G, n, yg);
    else if (ntiles == 2)
        bf16_launch_t<2, NPT>(st, J, xp, plane, ntok, nkg, P, G, n, yg);
    else
        bf16_launch_t<1, NPT>(st, J, xp, plane, ntok, nkg, P, G, n, yg);
}
static void bf16_launch(cudaStream_t st, const mma_jobs &J, const uint2 *xp, size_t plane, int ntok, int nkg, int P,
                        int G, int n, size_t yg, bool one)
{
    if (one)
        bf16_launch_p<1>(st, J, xp, plane, ntok, nkg, P, G, n, yg);
    else
        bf16_launch_p<3>(st, J, xp, plane, ntok, nkg, P, G, n, yg);
}

/* The BF16 activation pack of tokens [t0, t0 + nc): three BF16 parts per value, or (one: reference numerics,
 * k_mma_bf16<.., 1> reads the first plane only) BF16(x) alone. */
static void bf16_pack(cudaStream_t st, const float *x, int ldx, size_t xg, int G, int nc, int ntok, int K, int nkg,
                      uint2 *xp, size_t plane, bool one)
{
    const int64_t warps = (int64_t)ntok * ((nkg + 1) / 2);
    launch_pdl(one ? k_mma_pack_bf16<1> : k_mma_pack_bf16<3>, dim3((unsigned)((warps + 7) / 8), (unsigned)G), dim3(256),
               0, st, x, ldx, xg, nc, ntok, K, nkg, xp, plane);
}

/* The FP8 activation pack of tokens [t0, t0 + nc) of x (G groups xg apart):
 * its scratch, then the kernel. */
static void fp8_pack(cudaStream_t st, const float *x, int ldx, size_t xg, int G, int nc, int ntok, int K, int nkg,
                     bool ref, uint32_t *xp, float *xs)
{
    const int64_t warps = (int64_t)ntok * ((nkg + 1) / 2);
    dim3 pg((unsigned)((warps + 7) / 8), (unsigned)G);
    if (ref) launch_pdl(k_mma_pack<true>, pg, dim3(256), 0, st, x, ldx, xg, nc, ntok, K, nkg, xp, xs);
    else launch_pdl(k_mma_pack<false>, pg, dim3(256), 0, st, x, ldx, xg, nc, ntok, K, nkg, xp, xs);
}

/* mma_jobs.trig: k_mma_bf16 lets the kernel after it start once past its wait, unless DSV4_MMA_TRIG=0 (a
 * measurement's knob; the FP8 kernels do not read it) */
static int mma_trig(void)
{
    return cuda_knob(CUDA_KNOB_TRIG) != 0;
}

/* y = W x for G row groups of w.rows rows (x and y of group g at g * xg,
 * g * yg), n tokens; ref: the reference's FP8 activation quantisation. */
/* The jobs table of one linear. */
static mma_jobs mma_job1(const wdesc &w, float *y, int ldy)
{
    mma_jobs J = {};
    J.n = 1;
    J.tile0[1] = (int)mma_tiles(w);
    J.w[0] = w;
    J.y[0] = y;
    J.ldy[0] = ldy;
    J.trig = mma_trig();
    return J;
}

void cuda_linear_mma(dsv4_backend *be, const wdesc &w, int G, const float *x, int ldx, size_t xg, int n, float *y,
                     int ldy, size_t yg, bool ref)
{
    cudaStream_t st = impl_of(be)->stream;
    const int nkg = (int)((w.cols + 63) / 64), P = mma_parts(impl_of(be)->n_sm, w, G);
    const int chunk = n < MMA_CHUNK ? n : MMA_CHUNK;
    const int ntok_max = (chunk + 7) / 8 * 8;
    if (w.fmt == DSV4_WF_FLOAT) { /* BF16 */
        if (cuda_wgbf_use(w, n)) { /* prefill: wgmma, the same bits */
            float *yy = y;
            cuda_linear_wgbf(be, 1, &w, &P, G, x, ldx, xg, n, &yy, &ldy, yg, ref);
            return;
        }
        const size_t plane = (size_t)G * nkg * ntok_max * 16; /* uint2 per 4 columns */
        uint2 *xp = (uint2 *)cuda_scratch(be, CS_MMA_X, (ref ? 1 : 3) * plane * sizeof(uint2)); /* bf16_pack's */
        for (int t0 = 0; t0 < n; t0 += MMA_CHUNK) {
            const int nc = n - t0 < MMA_CHUNK ? n - t0 : MMA_CHUNK, ntok = (nc + 7) / 8 * 8;
            bf16_pack(st, x + (size_t)t0 * ldx, ldx, xg, G, nc, ntok, (int)w.cols, nkg, xp, plane, ref);
            bf16_launch(st, mma_job1(w, y + (size_t)t0 * ldy, ldy), xp, plane, ntok, nkg, P, G, nc, yg, ref);
        }
        return;
    }
    if (!ref && cuda_wgf8_use(w, n)) { /* prefill, unquantised activations: wgmma, the same bits */
        float *yy = y;
        cuda_linear_wgf8(be, 1, &w, &P, G, x, ldx, xg, n, &yy, &ldy, yg);
        return;
    }
    uint32_t *xp = (uint32_t *)cuda_scratch(be, CS_MMA_X, (size_t)G * nkg * ntok_max * 64 * (ref ? 2 : 4));
    float *xs = (float *)cuda_scratch(be, CS_MMA_S, (size_t)G * nkg * ntok_max * sizeof(float));
    for (int t0 = 0; t0 < n; t0 += MMA_CHUNK) {
        const int nc = n - t0 < MMA_CHUNK ? n - t0 : MMA_CHUNK, ntok = (nc + 7) / 8 * 8;
        const mma_jobs J = mma_job1(w, y + (size_t)t0 * ldy, ldy);
        ms_ctx msc;
        const ms_ctx *ms = ntok == 8 && ms_ctx_for(be, J, G, P, msc) ? &msc : nullptr;
        fp8_pack(st, x + (size_t)t0 * ldx, ldx, xg, G, nc, ntok, (int)w.cols, nkg, ref, xp, xs);
        if (ref)
            mma_launch<false>(st, J, xp, xs, ntok, nkg, P, G, nc, yg, ms);
        else
            mma_launch<true>(st, J, xp, xs, ntok, nkg, P, G, nc, yg, ms);
    }
}

/* m linears of one input x [n, K] that the tensor cores take (cuda_mma_eligible),
 * all FP8 with the same activation quantisation ref or all BF16, the same K:
 * one pack of x, then one launch per part count P for up to MMA_JOBS of
 * them - every weight's blocks as in its own launch, so the results are
 * those of m calls of cuda_linear_mma. */
void cuda_linear_mma_multi(dsv4_backend *be, int m, const wdesc *w, const float *x, int ldx, int n, float *const *y,
                           const int *ldy, bool ref)
{
    if (m <= 0 || n <= 0) return;
    cudaStream_t st = impl_of(be)->stream;
    const bool bf = w[0].fmt == DSV4_WF_FLOAT;
    const int nkg = (int)((w[0].cols + 63) / 64);
    const int chunk = n < MMA_CHUNK ? n : MMA_CHUNK, ntok_max = (chunk + 7) / 8 * 8;
    const size_t plane = (size_t)nkg * ntok_max * 16; /* BF16: uint2 per 4 columns */
    int P[64];
    for (int i = 0; i < m && i < 64; i++) P[i] = mma_parts(impl_of(be)->n_sm, w[i], 1);
    bool wgbf[64] = {};
    if (bf || !ref) { /* prefill: the weights k_wgbf / k_wgf8 take, after one pack of their own; the same bits */
        wdesc wv[64];
        int pv[64], lv[64], k = 0;
        float *yv[64];
        for (int i = 0; i < m && i < 64; i++)
            if (bf ? cuda_wgbf_use(w[i], n) : cuda_wgf8_use(w[i], n))
                wgbf[i] = true, wv[k] = w[i], pv[k] = P[i], yv[k] = y[i], lv[k++] = ldy[i];
        if (bf)
            cuda_linear_wgbf(be, k, wv, pv, 1, x, ldx, 0, n, yv, lv, 0, ref);
        else
            cuda_linear_wgf8(be, k, wv, pv, 1, x, ldx, 0, n, yv, lv, 0);
        if (k == m) return;
    }
    /* the scratch after the prefill kernels took theirs (a slot that grows is a new buffer) */
    uint32_t *xp = (uint32_t *)cuda_scratch(
        be, CS_MMA_X, bf ? (ref ? 1 : 3) * plane * sizeof(uint2) : (size_t)nkg * ntok_max * 64 * (ref ? 2 : 4));
    float *xs = bf ? nullptr : (float *)cuda_scratch(be, CS_MMA_S, (size_t)nkg * ntok_max * sizeof(float));
    for (int t0 = 0; t0 < n; t0 += MMA_CHUNK) {
        const int nc = n - t0 < MMA_CHUNK ? n - t0 : MMA_CHUNK, ntok = (nc + 7) / 8 * 8;
        if (bf)
            bf16_pack(st, x + (size_t)t0 * ldx, ldx, 0, 1, nc, ntok, (int)w[0].cols, nkg, (uint2 *)xp, plane, ref);
        else fp8_pack(st, x + (size_t)t0 * ldx, ldx, 0, 1, nc, ntok, (int)w[0].cols, nkg, ref, xp, xs);
        bool done[64];
        for (int i = 0; i < 64; i++) done[i] = i < m && wgbf[i];
        for (int i = 0; i < m; i++) {
            if (done[i]) continue;
            mma_jobs J = {};
            J.trig = mma_trig();
            int idx[MMA_JOBS];
            const int c = multi_next(P, m, i, MMA_JOBS, done, idx);
            for (int q = 0; q < c; q++) {
                const int k = idx[q];
                J.w[J.n] = w[k];
                J.y[J.n] = y[k] + (size_t)t0 * ldy[k];
                J.ldy[J.n] = ldy[k];
                J.tile0[J.n + 1] = J.tile0[J.n] + (int)mma_tiles(w[k]);
                J.n++;
            }
            ms_ctx msc;
            const ms_ctx *ms = !bf && ntok == 8 && ms_ctx_for(be, J, 1, P[i], msc) ? &msc : nullptr;
            if (bf)
                bf16_launch(st, J, (const uint2 *)xp, plane, ntok, nkg, P[i], 1, nc, 0, ref);
            else if (ref) mma_launch<false>(st, J, xp, xs, ntok, nkg, P[i], 1, nc, 0, ms);
            else mma_launch<true>(st, J, xp, xs, ntok, nkg, P[i], 1, nc, 0, ms);
        }
    }
}

/* ---- the tensor cores' rate, for the benchmarks: mma.sync m16n8k16 BF16
 * (fp8 = 0) or m16n8k32 E4M3 (fp8 = 1), FP32 accumulation, eight independent
 * accumulators per warp, no memory traffic, every SM busy. */
__global__ void k_mma_rate(int iters, int fp8, float *sink)
{
    float c[8][4];
#pragma unroll
    for (int k = 0; k < 8; k++) c[k][0] = c[k][1] = c[k][2] = c[k][3] = 0.0f;
    /* small operands: BF16 2^-7 pairs, E4M3 1.0 quads; the sums stay finite */
    const uint32_t a = fp8 ? 0x38383838u : 0x3c003c00u, b = a ^ (threadIdx.x & 1u);
    for (int i = 0; i < iters; i++)
#pragma unroll
        for (int k = 0; k < 8; k++) {
            if (fp8)
                asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                             "{%8,%9}, {%0,%1,%2,%3};\n"
                             : "+f"(c[k][0]), "+f"(c[k][1]), "+f"(c[k][2]), "+f"(c[k][3])
                             : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b));
            else
                mma_bf16(c[k], a, a, a, a, b, b);
        }
    float s = 0;
#pragma unroll
    for (int k = 0; k < 8; k++) s += c[k][0] + c[k][1] + c[k][2] + c[k][3];
    if (s == -1.0f) sink[threadIdx.x] = s; /* never true: keeps the work */
}

extern "C" double dsv4_cuda_mma_rate(int fp8)
{
    int dev = 0, nsm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return -1;
    float *sink = nullptr;
    if (cudaMalloc(&sink, 1024 * sizeof(float)) != cudaSuccess) return -1;
    const int blocks = 4 * nsm, threads = 256, iters = 4096;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    k_mma_rate<<<blocks, threads>>>(64, fp8, sink); /* warm-up */
    cudaEventRecord(e0);
    k_mma_rate<<<blocks, threads>>>(iters, fp8, sink);
    cudaEventRecord(e1);
    float ms = 0;
    const bool ok = cudaEventSynchronize(e1) == cudaSuccess && cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess;
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(sink);
    if (!ok || ms <= 0) return -1;
    /* per warp and step 8 MMAs of 16 x 8 x K multiply-adds, K = 16 (BF16) or 32 (E4M3) */
    const double flops = 2.0 * blocks * (threads / 32) * (double)iters * 8 * 16 * 8 * (fp8 ? 32 : 16);
    return flops / (ms * 1e-3) / 1e12;
}

/* The rings above 48 KB of dynamic shared memory (XR at two n tiles: 74.5 KB),
 * on every device the backend opens. */
void cuda_mma_init(void)
{
    CK(cudaFuncSetAttribute(k_mma_fp8<1, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)mma_fp8_smem_of(1, true)));
    CK(cudaFuncSetAttribute(k_mma_fp8<2, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)mma_fp8_smem_of(2, true)));
}
