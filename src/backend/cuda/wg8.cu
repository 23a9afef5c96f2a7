/*
 * wg8.cu - FP8 linears in reference numerics on the FP8 tensor cores
 * (wgmma), for every batch size; and, at the end of the file, the prefill
 * kernels of mma.cu's other linears on wgmma with mma.cu's bits (k_wgbf:
 * BF16 weights; k_wgf8: FP8 weights with unquantised activations).
 *
 * In reference numerics the activations are the reference's FP8 codes
 * (act_quant: a power-of-two scale per token and 128 columns), so an FP8
 * weight row and a token meet as two E4M3 operands. On sm_90 mma.sync takes
 * E4M3 only as F16 HMMA plus conversions in SASS (mma.cu: ~250 instructions
 * per 2 KB group, 16-45 % of the copy rate at batch 1); wgmma reads both
 * operands from shared memory as they land, with no conversion at all.
 *
 * Block: one warpgroup (128 threads), 64 weight rows (wgmma's M) by N tokens
 * (8, 16 or 32: wgmma's N; more tokens take several token tiles), the
 * 128-column groups of its parts along K through a ring of S stages (3 to
 * WG_SMAX: the launch sizes it so the blocks an SM holds share ~200 KB,
 * DSV4_WG8_SMEM_KB), S - 1 groups ahead. One thread feeds the ring: per
 * stage one TMA copy of the weights' 64 x 128-byte box (a tensor map per
 * weight, 128-byte swizzle; rows and columns past the end read as zeros) and
 * bulk copies of the tokens' codes (N x 128 bytes, which the pack wrote
 * already swizzled) and their N scales, all completing on the stage's
 * mbarrier; the block's E8M0 weight scales are read into shared memory once,
 * before the kernel before it finishes. Every thread's loop is then a wait,
 * four wgmma and a few FMAs, with no global load. (A first version that had
 * every thread copy 16-byte chunks with cp.async spent ~300 instructions a
 * warp per group on addresses: half the speed of mma.cu. One with W resident
 * blocks streaming runs of (tile, part) units, as mma.cu's decode kernel,
 * was 1.5-2x slower: fewer blocks, each bound by its loop's latency.)
 *
 * A group's sum: four wgmma m64nNk32, each into a fresh accumulator, added in
 * FP32 in k order, times (weight scale x activation scale) (powers of two:
 * exact), added to the part's FP32 sum in column order; the parts are added
 * in part order. Numerics: the products are exact (E4M3 x E4M3), but the
 * tensor core adds them with fewer bits than FP32 (measured: ~2^-13 of a
 * 32-column step's magnitude; chaining the four steps in one accumulator was
 * 3.5x worse), so the bits differ from mma.cu's F16 path and from the CPU's
 * FP32 sums by about 1e-4 of a linear's magnitude; test_ops_cuda bounds it.
 * Non-finite activations: a 128-column block holding +-Inf has scale 2^127
 * and every other code zero (act_quant); its Inf codes become +-448 and its
 * scale Inf, so the output is +-Inf (NaN where the weight is zero) where the
 * FP32 sum has it.
 *
 * Batch invariance: the parts P (from the weight's shape and the GPU's SM
 * count), each part's groups, their order and the epilogue are the same for
 * every batch; a wgmma output column depends on its own token only. How the
 * parts are spread over blocks (Q = 1 block per tile adding them itself, or
 * Q = P blocks as a cluster, when the tiles alone would leave the GPU short
 * of blocks) changes where the additions run, not what they are.
 * DSV4_WG8=0 sends reference numerics back to mma.cu's F16 path (the
 * baseline; bits of their own).
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cooperative_groups.h>
#include <cuda_fp8.h>

#include "backend/cuda/rowdot.cuh"

namespace cg = cooperative_groups;

static void cuda_wgmm_init(void); /* the prefill kernels' shared memory (k_wgbf, k_wgf8: the end of the file) */

#define WG_SMAX  12 /* ring stages at most */
#define WG_JOBS  8
#define WG_MAXP  8 /* parts along K: the blocks of a cluster (portable size) */

/* The weights of one launch: one linear (G row groups through blockIdx.z), or
 * several of one input and part count P, their 64-row tiles one after
 * another along blockIdx.y; each with its tensor map (rows of row_bytes
 * bytes from the view's first row, G groups of rows each). */
struct wg_jobs {
    CUtensorMap tm[WG_JOBS];
    wdesc w[WG_JOBS];
    int n;
    int tile0[WG_JOBS + 1];
    float *y[WG_JOBS];
    int ldy[WG_JOBS];
};

/* Pack: one warp per (row group, token, 128 columns); lane l takes columns
 * 4l .. 4l + 3. Writes the E4M3 codes [grp][kg][token][128 bytes], each
 * token's row with its 16-byte chunk c at c ^ (token % 8) (wgmma's 128-byte
 * swizzle, so a stage's N rows are one bulk copy), tokens in [n, ntok) and
 * columns past K zero; and the scales [grp][kg][token] (a stage's N: one bulk copy). */
__global__ void k_wg8_pack(const float *x, int ldx, size_t xg, int n, int ntok, int K, int nkg, uint8_t *xq, float *xs)
{
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); /* the MMA kernel may start loading weights */
    asm volatile("griddepcontrol.wait;" ::: "memory");              /* x */
    const int lane = threadIdx.x & 31;
    const int64_t wg = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int grp = blockIdx.y;
    if (wg >= (int64_t)ntok * nkg) return;
    const int tok = (int)(wg / nkg), kg = (int)(wg % nkg), c0 = kg * 128 + 4 * lane;
    float v[4];
    pack_load4(x, ldx, xg, grp, tok, n, c0, K, v);
    uint32_t codes;
    const float sc = act_codes4(v, &codes);
    uint8_t *row = xq + (((size_t)grp * nkg + kg) * ntok + tok) * 128;
    *(uint32_t *)(row + (((lane >> 2) ^ (tok & 7)) << 4) + 4 * (lane & 3)) = codes;
    if (lane == 0) xs[((size_t)grp * nkg + kg) * ntok + tok] = sc;
}

/* d = (acc ? d : 0) + A B over 32 columns: A 64 x 32 and B N x 32 E4M3 in shared memory (descriptors). */
template <int N> __device__ __forceinline__ void wg_mma(float *d, uint64_t ad, uint64_t bd, int acc);
template <> __device__ __forceinline__ void wg_mma<8>(float *d, uint64_t ad, uint64_t bd, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, %4, %5, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(ad), "l"(bd), "r"(acc));
}
template <> __device__ __forceinline__ void wg_mma<16>(float *d, uint64_t ad, uint64_t bd, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "l"(ad), "l"(bd), "r"(acc));
}
template <> __device__ __forceinline__ void wg_mma<32>(float *d, uint64_t ad, uint64_t bd, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "l"(ad), "l"(bd), "r"(acc));
}
template <> __device__ __forceinline__ void wg_mma<64>(float *d, uint64_t ad, uint64_t bd, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%"
                 "27,%28,%29,%30,%31}, %32, %33, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "l"(ad), "l"(bd), "r"(acc));
}
/* The tensor map's box at (byte column x, row y) into dst, completing on bar. */
__device__ __forceinline__ void tma_box(uint32_t dst, const CUtensorMap *tm, int x, int y, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                 "[%4];" ::"r"(dst),
                 "l"(tm), "r"(x), "r"(y), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void *src, unsigned bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}

/* The parts of a tile, a cluster of Q (block qb), added by st.async (cl_push_parts): v[j] is this part's value of
 * the thread's output j of the tile's 128 R, the slots are the blocks' rings red (free), store(th, j, sum) stores
 * thread th's output j where this block owns it (k_wg8, wg_store). Up to 16-token tiles (R <= 8) a thread's R sums
 * go 16 bytes a send (thread-major); wider tiles keep a float a send, so that the owners' stores of consecutive
 * outputs stay consecutive threads' (thread-major, a 64-token wo_b went 6 % slower, s75 v4/). The mbarrier is
 * initialised at the end (s74: at the kernel's start, with the slots after the weight scales, wo_b alone at 16
 * tokens was 25 % slower). */
template <int R, class Store>
__device__ __forceinline__ void wg_push(const float *v, float *red, int qb, int Q, Store store)
{
    __shared__ __align__(8) uint64_t pbar;
    constexpr bool TM = R <= 8;
    /* output f of the tile's 128 R, in the exchange's order: thread-major, or j-major (R > 8) */
    auto put = [&](int f, float s) {
        if constexpr (TM)
            store(f / R, f % R, s);
        else
            store(f & 127, f >> 7, s);
    };
    cl_push_parts<128 * R, 128, WG_MAXP, TM>((uint32_t)__cvta_generic_to_shared(&pbar), red, qb, Q,
                                             [&](int j) { return v[j]; }, put);
}

/* A tile's Q parts, one a block of a cluster (Q > 1), added in part order and the block's share stored
 * (store(th, j, sum): thread th's output j, the tile's 128 R): by st.async (wg_push), or with sa false
 * (DSV4_LIN_ASYNC=0) through red and the cluster's barriers (cluster_sum_parts). The same sums either way. red:
 * the block's ring, free (k_wg8, wg_store). */
template <int R, class Store>
__device__ __forceinline__ void wg_sum_parts(const float *v, float *red, int qb, int Q, bool sa, Store store)
{
    if (sa) {
        wg_push<R>(v, red, qb, Q, store);
        return;
    }
#pragma unroll
    for (int j = 0; j < R; j++) red[j * 128 + threadIdx.x] = v[j];
    cluster_sum_parts<WG_MAXP, 128>(red, 128 * R, qb, Q, [&](int f, float s) { store(f & 127, f >> 7, s); });
}

/* One block: 64 rows (tile blockIdx.y of the jobs), N tokens (tile blockIdx.x),
 * row group blockIdx.z / Q and parts [P q / Q, P (q + 1) / Q) of it
 * (q = blockIdx.z % Q). Q = 1: the block adds its parts and stores; Q = P:
 * one part a block, the P blocks of a tile a cluster that adds the parts in
 * part order. */
template <int N>
__global__ void __launch_bounds__(128)
    k_wg8(const __grid_constant__ wg_jobs J, const uint8_t *xq, const float *xs, int ntok, int nkg, int P, int Q, int n,
          size_t yg, int S, float *parts, bool push)
{
    constexpr int SB = 8192 + N * 128, R = N / 2; /* stage bytes (multiples of 1,024); accumulators a thread */
    const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5, g = lane >> 2, t = lane & 3;
    int job = 0;
    while (job + 1 < J.n && (int)blockIdx.y >= J.tile0[job + 1]) job++;
    const int grp = (int)blockIdx.z / Q, qb = (int)blockIdx.z % Q;
    const wdesc &w = J.w[job];
    const int64_t rows = w.rows, rb = (int64_t)((int)blockIdx.y - J.tile0[job]) * 64;
    const int p0 = P * qb / Q, p1 = P * (qb + 1) / Q;
    const int kg0 = nkg * p0 / P, kg1 = nkg * p1 / P, ng = kg1 - kg0;
    extern __shared__ uint8_t wg_dyn[];
    __shared__ __align__(8) uint64_t full[WG_SMAX];
    const uint32_t sbase = ((uint32_t)__cvta_generic_to_shared(wg_dyn) + 1023u) & ~1023u; /* swizzle atoms */
    const uint32_t bar0 = (uint32_t)__cvta_generic_to_shared(full);
    const CUtensorMap *tm = &J.tm[job];
    const int ty = (int)(grp * rows + rb); /* the box's first row in the map */
    const uint8_t *bsrc = xq + ((size_t)grp * nkg * ntok + (size_t)blockIdx.x * N) * 128;
    /* after the ring: each stage's N activation scales (bulk-copied with it), then the block's E8M0
     * weight scales, [64 rows][ng groups] bytes (read once, before the kernel before finishes) */
    const uint32_t xsb = sbase + S * SB;
    const float *xsm = (const float *)(wg_dyn + (xsb - (uint32_t)__cvta_generic_to_shared(wg_dyn)));
    uint8_t *wsm = (uint8_t *)(xsm + S * N);
    const float *xsrc = xs + ((size_t)grp * nkg * ntok + (size_t)blockIdx.x * N);
    constexpr unsigned TX = SB + N * 4; /* a stage's bytes */
    if (tid == 0) {
        for (int s = 0; s < S; s++) mbar_init(bar0 + 8 * s, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        /* the weights do not depend on the kernel before (the pack) */
        for (int s = 0; s < S - 1 && s < ng; s++) {
            mbar_expect(bar0 + 8 * s, TX);
            tma_box(sbase + s * SB, tm, (kg0 + s) * 128, ty, bar0 + 8 * s);
        }
    }
    {
        const int kpb = w.bc / 128; /* 128-column groups per scale block */
        const int64_t r0 = w.row0 + grp * rows;
        const uint8_t *scale = (const uint8_t *)w.scale;
        /* eight loads in flight a thread, then their stores; the rows' scale rows from one 64-bit division
         * (each element's own was a subroutine call, which ptxas does not move loads across, and each load was
         * stored at once: one DRAM round trip an element, ng / 2 before the first group, PDL's overlap
         * permitting) */
        const int64_t base = r0 + rb, q0 = base / w.br;
        const uint32_t m0 = (uint32_t)(base - q0 * w.br), ubr = (uint32_t)w.br;
        for (int e0 = 0; e0 < 64 * ng; e0 += 128 * 8) {
            uint8_t v[8];
#pragma unroll
            for (int k = 0; k < 8; k++) {
                const int e = e0 + tid + 128 * k, r = e / ng, i = e - r * ng;
                v[k] = e < 64 * ng && rb + r < rows
                           ? __ldg(scale + (q0 + (m0 + (uint32_t)r) / ubr) * w.scale_cols + (kg0 + i) / kpb)
                           : (uint8_t)0;
            }
#pragma unroll
            for (int k = 0; k < 8; k++)
                if (e0 + tid + 128 * k < 64 * ng) wsm[e0 + tid + 128 * k] = v[k];
        }
    }
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (tid == 0)
        for (int s = 0; s < S - 1 && s < ng; s++) {
            bulk_copy(sbase + s * SB + 8192, bsrc + (size_t)(kg0 + s) * ntok * 128, N * 128, bar0 + 8 * s);
            bulk_copy(xsb + s * N * 4, xsrc + (size_t)(kg0 + s) * ntok, N * 4, bar0 + 8 * s);
        }
    __syncthreads(); /* the barriers' init and the weight scales, for every thread */
    const uint8_t *wsr0 = wsm + (16 * wid + g) * ng, *wsr1 = wsr0 + 8 * ng; /* the thread's rows g, g + 8 */
    float tot[R], acc[R];
#pragma unroll
    for (int j = 0; j < R; j++) tot[j] = acc[j] = 0.0f;
    int p = p0, pend = nkg * (p0 + 1) / P;
    int cur = 0;
    unsigned phase = 0;
    for (int i = 0; i < ng; i++) {
        const int kg = kg0 + i;
        mbar_wait(bar0 + 8 * cur, phase); /* group kg has landed */
        __syncthreads();                  /* every thread is past group kg - 1's wgmma: its stage may be refilled */
        if (tid == 0 && i + S - 1 < ng) {
            const int ns = cur == 0 ? S - 1 : cur - 1, nk = kg + S - 1;
            mbar_expect(bar0 + 8 * ns, TX);
            tma_box(sbase + ns * SB, tm, nk * 128, ty, bar0 + 8 * ns);
            bulk_copy(sbase + ns * SB + 8192, bsrc + (size_t)nk * ntok * 128, N * 128, bar0 + 8 * ns);
            bulk_copy(xsb + ns * N * 4, xsrc + (size_t)nk * ntok, N * 4, bar0 + 8 * ns);
        }
        /* the scales: the rows' E8M0 (ws[h]: row g + 8 h), the tokens' (xv[2 c + e]: token 8 c + 2 t + e) */
        const float ws[2] = {dsv4_e8m0_to_f32(wsr0[i]), dsv4_e8m0_to_f32(wsr1[i])};
        float xv[N / 4];
#pragma unroll
        for (int c = 0; c < N / 8; c++)
#pragma unroll
            for (int e = 0; e < 2; e++) xv[2 * c + e] = xsm[cur * N + 8 * c + 2 * t + e];
        /* a fresh accumulator per k32 step (256 bytes on in the swizzled rows: +32 bytes), added in k order */
        const uint32_t sa = sbase + (uint32_t)cur * SB;
        const uint64_t ad = wg_desc(sa), bd = wg_desc(sa + 8192);
        float d4[4][R];
#pragma unroll
        for (int s = 0; s < 4; s++)
#pragma unroll
            for (int j = 0; j < R; j++) d4[s][j] = 0.0f;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int s = 0; s < 4; s++) wg_mma<N>(d4[s], ad + 2 * s, bd + 2 * s, 0);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        /* the results exist after the wait */
#pragma unroll
        for (int s = 0; s < 4; s++)
#pragma unroll
            for (int j = 0; j < R; j++) asm volatile("" : "+f"(d4[s][j])::"memory");
#pragma unroll
        for (int j = 0; j < R; j++) { /* d4[.][4 c + e]: row g (+ 8 for e >= 2), token 8 c + 2 t + (e & 1) */
            const float d = ((d4[0][j] + d4[1][j]) + d4[2][j]) + d4[3][j];
            const float sw = ws[(j >> 1) & 1], sx = xv[2 * (j >> 2) + (j & 1)];
            acc[j] = __fmaf_rn(d, __fmul_rn(sw, sx), acc[j]);
        }
        if (kg + 1 == pend) { /* the part's end: into the total, in part order */
#pragma unroll
            for (int j = 0; j < R; j++) tot[j] = p == p0 ? acc[j] : tot[j] + acc[j], acc[j] = 0.0f;
            p++;
            pend = nkg * (p + 1) / P;
        }
        if (++cur == S) cur = 0, phase ^= 1u;
    }
    /* output j: row rb + 16 wid + g (+ 8), token blockIdx.x N + 8 (j / 4) + 2 t + (j & 1) */
    float *out = J.y[job] + (size_t)grp * yg;
    const int ldy = J.ldy[job];
    /* thread th's output j */
    auto store = [&](int th, int j, float v) {
        const int l = th & 31;
        const int64_t r = rb + 16 * (th >> 5) + (l >> 2) + ((j & 2) ? 8 : 0);
        const int tk = (int)blockIdx.x * N + 8 * (j >> 2) + 2 * (l & 3) + (j & 1);
        if (r < rows && tk < n) out[(size_t)tk * ldy + r] = v;
    };
    if (Q == 1) {
#pragma unroll
        for (int j = 0; j < R; j++) store(tid, j, tot[j]);
        return;
    }
    if (parts) { /* one part a block, no cluster: the part to parts [P][n][rows], for hc_post to add (lin_pend) */
#pragma unroll
        for (int j = 0; j < R; j++) {
            const int64_t r = rb + 16 * wid + g + ((j & 2) ? 8 : 0);
            const int tk = (int)blockIdx.x * N + 8 * (j >> 2) + 2 * t + (j & 1);
            if (r < rows && tk < n) parts[((size_t)qb * n + tk) * rows + r] = tot[j];
        }
        return;
    }
    /* one part a block, the P parts a cluster: each block's sums to its shared memory (the ring's, free now:
     * every copy was waited for), then each block adds a P-th of the tile's outputs over the parts in part
     * order, from the blocks' shared memory, and stores them (the bits of part 0 adding everything) */
    wg_sum_parts<R>(tot, (float *)(wg_dyn + (sbase - (uint32_t)__cvta_generic_to_shared(wg_dyn))), qb, Q, push, store);
}

/* The path on unless DSV4_WG8=0 (mma.cu's F16 kernels then take reference
 * numerics too: the baseline). */
static int wg_on = -1;
static bool wg8_on(void)
{
    if (wg_on < 0) wg_on = cuda_env_on("DSV4_WG8");
    return wg_on;
}
extern "C" void dsv4_cuda_wg8_set(int on)
{
    wg_on = on;
}

/* cuTensorMapEncodeTiled, from the driver through the runtime (no link to libcuda). */
static PFN_cuTensorMapEncodeTiled_v12000 wg_encode(void)
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    static bool tried = false;
    if (!tried) {
        tried = true;
        void *f = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (PFN_cuTensorMapEncodeTiled_v12000)f;
        else
            (void)cudaGetLastError();
    }
    return fn;
}

/* FP8 E4M3 with E8M0 scales, rows of whole aligned 16-byte chunks, scale
 * blocks of whole 128-column groups: the weight's format and shape only (and
 * the driver's tensor maps, present or not for the process). */
/* The wgmma paths on (DSV4_WG8, DSV4_CUDA_MMA) and w within the tensor maps' documented limits: rows of whole
 * aligned 16-byte chunks, K <= 65,536, the driver's maps present for the process. */
static bool wg_mappable(const wdesc &w)
{
    return wg8_on() && cuda_mma_on() && w.chunk16 && w.rows > 0 && w.row_bytes % 16 == 0 &&
           ((uintptr_t)w.data & 15) == 0 && w.cols <= 65536 && wg_encode();
}

bool cuda_wg8_eligible(const wdesc &w)
{
    return w.fmt == DSV4_WF_FP8 && w.dtype == DSV4_DT_F8_E4M3 && w.sdtype == DSV4_DT_F8_E8M0 && w.bc % 128 == 0 &&
           w.br > 0 && wg_mappable(w);
}

static int64_t wg_tiles(const wdesc &w)
{
    return (w.rows + 63) / 64;
}

/* Parts along K: up to about four blocks per SM at decode, each part at
 * least eight 128-column groups (with two, a small weight's blocks were
 * mostly prologue; at batch 1, reference numerics, H200: wkv 8.9 -> 7.6 us
 * with 4 parts instead of 8, wq_a 9.1 -> 8.0 (within the bench's +-1 us:
 * 7.2 at 8 parts in another call), the shared expert's w1 12.0 ->
 * 9.3, its w2 11.6 -> 9.1 with 2 instead of 4, the indexer's wq_b 10.8 ->
 * 8.1 with 1 instead of 4 - one launch with wq_b; wo_b keeps 8, its fastest:
 * bench/results/2026-12-01-s22/wg8-maxp/, wg8-parts8/). Shape and the GPU's
 * nsm SMs only: the sums do not depend on the batch. */
static int wg_parts(int nsm, int64_t tiles, int nkg)
{
    int P = 1;
    while (2 * P <= WG_MAXP && 16 * P <= nkg && tiles * 2 * P <= 4 * (int64_t)nsm) P *= 2;
    return P;
}

/* A stage: 64 x 128 bytes of weights, N x 128 of codes; plus 1,024 to align the ring to the swizzle atoms. */
static size_t wg_smem(int N, int S, int ng)
{
    return (size_t)S * (8192 + N * 128 + N * 4) + 64 * (size_t)ng + 1024;
}

void cuda_wg8_init(void)
{
    int dev = 0, optin = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    optin -= 1024; /* the kernel's static shared memory (the barriers) comes out of the same budget */
    CK(cudaFuncSetAttribute(k_wg8<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    CK(cudaFuncSetAttribute(k_wg8<16>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    CK(cudaFuncSetAttribute(k_wg8<32>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    CK(cudaFuncSetAttribute(k_wg8<64>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    cuda_wgmm_init();
}

/* Job J.n of J: weight w (G row groups), output y. The tensor map: the
 * view's G x rows rows of row_bytes bytes, boxes of 64 rows x 128 bytes with
 * the 128-byte swizzle; past the last row or byte the box reads zeros.
 * cuda_wg8_eligible keeps the encoding inside its documented limits (a
 * 16-byte aligned base and stride, K <= 65,536), so a failure is an
 * internal error, as a failed CUDA call is (CK). */
/* The tensor map of w's G x rows rows of row_bytes bytes: boxes of 64 rows x bw bytes (128: the 128-byte
 * swizzle; 64: none). */
static void wg_map(CUtensorMap *tm, const wdesc &w, int G, int bw = 128)
{
    const cuuint64_t dim[2] = {(cuuint64_t)w.row_bytes, (cuuint64_t)(w.rows * G)};
    const cuuint64_t stride[1] = {(cuuint64_t)w.row_bytes};
    const cuuint32_t box[2] = {(cuuint32_t)bw, 64}, estr[2] = {1, 1};
    void *base = (void *)((const char *)w.data + w.row0 * w.row_bytes);
    const CUresult r =
        wg_encode()(tm, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, base, dim, stride, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                    bw == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "dsv4: cuTensorMapEncodeTiled failed (%d) for a %lld x %lld weight\n", (int)r,
                (long long)w.rows, (long long)w.cols);
        abort();
    }
}

static void wg_job_add(wg_jobs &J, const wdesc &w, int G, float *y, int ldy)
{
    const int j = J.n;
    wg_map(&J.tm[j], w, G);
    J.w[j] = w;
    J.y[j] = y;
    J.ldy[j] = ldy;
    J.tile0[j + 1] = J.tile0[j] + (int)wg_tiles(w);
    J.n++;
}

/* KB of ring per SM the launch aims at (DSV4_WG8_SMEM_KB, default 200: 64 and 96 measured the same). A
 * launch of token tiles up to 16 on the second queue (side: in decode the shared expert, beside the routed
 * experts) takes DSV4_WG8_SIDE_KB, default 32, instead. There its blocks share the SMs with k_moe16's (51 KB
 * each): at one to 16 tokens the shared expert's launches (128-256 blocks, 8 groups each) took 84-112 KB a
 * block from the 200 (more stages than groups), so an SM of theirs held one routed-expert block or none until
 * they ended; with 32 KB their rings are the 3-stage minimum (~28 KB), and three k_moe16 blocks fit beside two
 * of theirs. Decode at batch 1 / 4 / 8 / 16: 1.419 / 2.050 / 2.818 / 4.266 ms a step against 1.427 / 2.054 /
 * 2.828 / 4.296; at 32 (tiles of 32 tokens) it was 0.4 % slower, 6.760 against 6.734, so those keep the 200;
 * 64 even (bench/results/2026-12-04-s54/side2/). Prefill's launches are at the 3-stage minimum either way. */
static int wg_budget_kb(bool side)
{
    static int kb = 0, skb = 0;
    if (!kb) kb = cuda_env_int("DSV4_WG8_SMEM_KB", 200);
    if (!skb) skb = cuda_env_int("DSV4_WG8_SIDE_KB", 32);
    return side ? skb : kb;
}

/* Tokens per launch (DSV4_WG8_CHUNK, a multiple of 32; default 1,024): bounds the pack's scratch (a byte
 * per value: 8 MB at K = 8,192) and sets how many blocks a launch has - the narrow matrices (wkv: 8 row
 * tiles) filled a fraction of the GPU with 256 (a 4,096-token prefill +4 % with 1,024; 4,096 the same).
 * The same bits for every chunk. */
static int wg_chunk(void)
{
    static int v = 0;
    if (!v) v = (cuda_env_int("DSV4_WG8_CHUNK", 1024) + 31) / 32 * 32;
    return v;
}

/* The token tile: 8, 16 or 32 tokens (ntok rounded up to it; more tokens: several tiles, the weights'
 * tile read once per token tile, mostly from L2); above 64 tokens 64 where the launch still has three
 * blocks an SM (the big matrices: each weight tile serves twice the tokens; wq_b, wo_b 8-10 % faster
 * at a 4k prefill, while wq_a's 16 tiles lost 70 % with half the blocks) - DSV4_WG8_N64=0: never. A
 * column's sums do not depend on N (each output column is its own token's). */
#define WG_NMAX 64
static int wg_ntok(int nc) /* the pack's tokens (a multiple of every tile a launch of nc may take) */
{
    return nc <= 8 ? 8 : nc <= 16 ? 16 : nc <= 64 ? (nc + 31) / 32 * 32 : (nc + 63) / 64 * 64;
}
static int wg_n(int nc, int64_t tiles, int nsm)
{
    if (nc > 64 && cuda_knob(CUDA_KNOB_WG8_N64) != 0 && tiles * (wg_ntok(nc) / 64) >= 3 * (int64_t)nsm) return 64;
    return nc <= 8 ? 8 : nc <= 16 ? 16 : 32;
}

/* Blocks a (tile, row group, token tile) takes: one part a block (P, the parts a cluster, or their sums left
 * to hc_post) when the tiles alone leave the GPU short of blocks, else 1 (a block adds its parts). */
static int wg_q(int64_t T, int G, int ntt, int nsm, int P)
{
    return T * G * ntt < 2 * (int64_t)nsm ? P : 1;
}

/* One launch of J (T tiles, G row groups, P parts) over ntok tokens (nc real). */
static void wg_launch(dsv4_backend *be, const wg_jobs &J, const uint8_t *xq, const float *xs, int ntok, int N, int nkg,
                      int P, int G, int nc, size_t yg, float *parts = nullptr)
{
    cuda_impl *im = impl_of(be);
    const int T = J.tile0[J.n], ntt = ntok / N;
    const int Q = wg_q(T, G, ntt, im->n_sm, P);
    const dim3 grid((unsigned)ntt, (unsigned)T, (unsigned)(G * Q));
    const unsigned cz = Q > 1 && !parts ? (unsigned)Q : 0u; /* parts: the caller checked Q > 1 */
    /* the parts' sums by st.async (k_wg8's sa; DSV4_LIN_ASYNC=0: through the cluster barrier, the same bits) */
    const bool sa = cz && cuda_lin_async();
    /* stages: the blocks an SM holds at once share about 200 KB of ring (more groups in flight where
     * fewer blocks stream longer runs); at least 3 */
    const int64_t per_sm = ((int64_t)ntt * T * G * Q + im->n_sm - 1) / im->n_sm;
    const int ng = Q == 1 ? nkg : (nkg + P - 1) / P; /* the most groups a block takes */
    int S = (int)((((int64_t)wg_budget_kb(im->q != 0 && N <= 16) << 10) / per_sm - 64 * ng) / (8192 + N * 132));
    S = S < 3 ? 3 : S > WG_SMAX ? WG_SMAX : S;
#define WG_L(NN)                                                                                                       \
    cuda_launch(k_wg8<NN>, grid, dim3(128), wg_smem(NN, S, ng), im->stream, cz, true, J, xq, xs, ntok, nkg, P, Q, nc,  \
                yg, S, parts, sa)
    switch (N) {
    case 8:
        WG_L(8);
        break;
    case 16:
        WG_L(16);
        break;
    case 32:
        WG_L(32);
        break;
    default:
        WG_L(64);
        break;
    }
#undef WG_L
}

static void wg_pack(cudaStream_t st, const float *x, int ldx, size_t xg, int G, int nc, int ntok, int K, int nkg,
                    uint8_t *xq, float *xs)
{
    const int64_t warps = (int64_t)ntok * nkg;
    launch_pdl(k_wg8_pack, dim3((unsigned)((warps + 7) / 8), (unsigned)G), dim3(256), 0, st, x, ldx, xg, nc, ntok, K,
               nkg, xq, xs);
}

/* y = W x in reference numerics for G row groups of w.rows rows (x and y of
 * group g at g * xg, g * yg), n tokens (cuda_wg8_eligible(w)). */
void cuda_linear_wg8(dsv4_backend *be, const wdesc &w, int G, const float *x, int ldx, size_t xg, int n, float *y,
                     int ldy, size_t yg, float *parts)
{
    if (!parts && G == 1 && cuda_lt_takes(be, w, n, y, ldy)) { /* --prefill-gemm cublaslt: all but the last n % 8 */
        const int nl = cuda_lt_tokens(n);
        cuda_linear_lt(be, 1, &w, x, ldx, nl, &y, &ldy);
        if (nl == n) return;
        x += (size_t)nl * ldx, y += (size_t)nl * ldy, n -= nl;
    }
    cuda_impl *im = impl_of(be);
    const int CH = wg_chunk();
    const int nkg = (int)((w.cols + 127) / 128), P = wg_parts(im->n_sm, wg_tiles(w) * G, nkg);
    const int chunk = n < CH ? n : CH, ntok_max = (chunk + WG_NMAX - 1) / WG_NMAX * WG_NMAX; /* whole tiles */
    uint8_t *xq = (uint8_t *)cuda_scratch(be, CS_MMA_X, (size_t)G * ntok_max * nkg * 128);
    float *xs = (float *)cuda_scratch(be, CS_MMA_S, (size_t)G * ntok_max * nkg * sizeof(float));
    wg_jobs J = {};
    wg_job_add(J, w, G, y, ldy);
    for (int t0 = 0; t0 < n; t0 += CH) {
        const int nc = n - t0 < CH ? n - t0 : CH, N = wg_n(nc, wg_tiles(w) * G, im->n_sm), ntok = wg_ntok(nc);
        J.y[0] = y + (size_t)t0 * ldy;
        wg_pack(im->stream, x + (size_t)t0 * ldx, ldx, xg, G, nc, ntok, (int)w.cols, nkg, xq, xs);
        wg_launch(be, J, xq, xs, ntok, N, nkg, P, G, nc, yg, parts);
    }
}

/* Whether y's parts may go to the next hc_post (DSV4_LIN_POST=0: never, a baseline with the same bits). */
static bool lin_post_on(void)
{
    static int v = -1;
    if (v < 0) v = cuda_env_on("DSV4_LIN_POST");
    return v;
}

/* The linear of backend.h's linear_to_post: where k_wg8 takes one part a block, the P blocks of a tile a
 * cluster that adds the parts (small batches; wo_b at batch 1-8: the cluster costs ~6.5 us of its ~20, measured
 * against the same blocks without it), the blocks write their parts to scratch without a cluster and the next
 * hc_post adds them in part order, as the cluster does (lin_pend; the same bits); else the linear. */
void cuda_linear_to_post(dsv4_backend *be, const dsv4_w *w, const float *x, int ldx, int n, float *y, int ldy)
{
    if (n <= 0 || w->ne[0] <= 0) return;
    cuda_impl *im = impl_of(be);
    const wdesc d = wdesc_of(w);
    cuda_lin_flush(be); /* one left by a caller that broke the contract: summed, not lost */
    const bool ref = be->act_quant && !w->no_act_quant;
    const int nkg = (int)((d.cols + 127) / 128);
    const int64_t T = wg_tiles(d);
    const int P = ref && cuda_wg8_eligible(d) ? wg_parts(im->n_sm, T, nkg) : 1;
    const int ntok = wg_ntok(n), N = wg_n(n, T, im->n_sm);
    if (!lin_post_on() || n > wg_chunk() || wg_q(T, 1, ntok / N, im->n_sm, P) < 2) { /* wg_launch's cluster */
        cuda_linear(be, w, x, ldx, n, y, ldy);
        return;
    }
    float *parts = (float *)cuda_scratch(be, CS_LIN_PARTS, (size_t)P * n * d.rows * sizeof(float));
    cuda_linear_wg8(be, d, 1, x, ldx, 0, n, y, ldy, 0, parts); /* one chunk, its launch without the cluster */
    im->lin_pend.y = y, im->lin_pend.parts = parts, im->lin_pend.P = P;
    im->lin_pend.n = n, im->lin_pend.D = (int)d.rows, im->lin_pend.ldy = ldy, im->lin_pend.q = im->q;
}

/* y = the parts' sum in part order (the cluster's, hc_post's order), one thread an output. */
__global__ void k_lin_parts_sum(const float *parts, int P, int n, int D, float *y, int ldy)
{
    pdl_start();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n * D) return;
    const int t = (int)(i / D), r = (int)(i % D);
    y[(size_t)t * ldy + r] = lin_parts_sum(parts, P, n, D, t, r);
}

/* The pending parts (lin_pend), if any, summed into y now on their queue's stream (the current stream waits
 * for that: what comes after the flush, a download included, sees y whole); then none pending. */
void cuda_lin_flush(dsv4_backend *be)
{
    cuda_impl *im = impl_of(be);
    auto &lp = im->lin_pend;
    if (!lp.y) return;
    const int64_t tot = (int64_t)lp.n * lp.D;
    launch_pdl(k_lin_parts_sum, dim3((unsigned)((tot + 255) / 256)), dim3(256), 0, im->queue[lp.q], lp.parts, lp.P,
               lp.n, lp.D, lp.y, lp.ldy);
    CK_LAUNCH();
    if (im->queue[lp.q] != im->stream) {
        CK(cudaEventRecord(im->lin_ev, im->queue[lp.q]));
        CK(cudaStreamWaitEvent(im->stream, im->lin_ev, 0));
    }
    lp.y = nullptr;
}

/* m weights of one input x [n, K] (all cuda_wg8_eligible, the same K): a
 * launch per part count for up to WG_JOBS of them (their jobs built once),
 * after one pack of each chunk of tokens (for several launches and chunks,
 * a pack per launch and chunk: the scratch holds one); each weight's blocks
 * as in its own launch, so the results are those of m calls. */
void cuda_linear_wg8_multi(dsv4_backend *be, int m, const wdesc *w, const float *x, int ldx, int n, float *const *y,
                           const int *ldy)
{
    if (m <= 0 || n <= 0) return;
    { /* --prefill-gemm cublaslt: the weights it takes (each as its own call would), the rest below */
        wdesc lw[64], rw[64];
        float *ly[64], *ry[64];
        int lld[64], rld[64], nl = 0, nr = 0;
        for (int i = 0; i < m && i < 64; i++)
            if (cuda_lt_takes(be, w[i], n, y[i], ldy[i]))
                lw[nl] = w[i], ly[nl] = y[i], lld[nl++] = ldy[i];
            else
                rw[nr] = w[i], ry[nr] = y[i], rld[nr++] = ldy[i];
        if (nl && m <= 64) {
            const int nt = cuda_lt_tokens(n); /* the last n % 8 tokens of its weights here, as their own calls do */
            cuda_linear_lt(be, nl, lw, x, ldx, nt, ly, lld);
            if (nt < n) {
                for (int i = 0; i < nl; i++) ly[i] += (size_t)nt * lld[i];
                cuda_linear_wg8_multi(be, nl, lw, x + (size_t)nt * ldx, ldx, n - nt, ly, lld);
            }
            if (nr) cuda_linear_wg8_multi(be, nr, rw, x, ldx, n, ry, rld);
            return;
        }
    }
    cuda_impl *im = impl_of(be);
    const int CH = wg_chunk();
    const int nkg = (int)((w[0].cols + 127) / 128);
    const int chunk = n < CH ? n : CH, ntok_max = (chunk + WG_NMAX - 1) / WG_NMAX * WG_NMAX;
    const bool one_chunk = n <= CH;
    uint8_t *xq = (uint8_t *)cuda_scratch(be, CS_MMA_X, (size_t)ntok_max * nkg * 128);
    float *xs = (float *)cuda_scratch(be, CS_MMA_S, (size_t)ntok_max * nkg * sizeof(float));
    /* the pack of tokens [t0, t0 + nc) */
    auto pack = [&](int t0) {
        const int nc = n - t0 < CH ? n - t0 : CH;
        wg_pack(im->stream, x + (size_t)t0 * ldx, ldx, 0, 1, nc, wg_ntok(nc), (int)w[0].cols, nkg, xq, xs);
    };
    if (one_chunk) pack(0);
    int P[64];
    bool done[64] = {};
    for (int i = 0; i < m && i < 64; i++) P[i] = wg_parts(im->n_sm, wg_tiles(w[i]), nkg);
    for (int i = 0; i < m; i++) {
        if (done[i]) continue;
        wg_jobs J = {};
        int idx[WG_JOBS];
        const int c = multi_next(P, m, i, WG_JOBS, done, idx);
        for (int q = 0; q < c; q++) wg_job_add(J, w[idx[q]], 1, y[idx[q]], ldy[idx[q]]);
        for (int t0 = 0; t0 < n; t0 += CH) {
            const int nc = n - t0 < CH ? n - t0 : CH, N = wg_n(nc, J.tile0[J.n], im->n_sm), ntok = wg_ntok(nc);
            if (!one_chunk) pack(t0);
            for (int q = 0; q < c; q++) J.y[q] = y[idx[q]] + (size_t)t0 * ldy[idx[q]];
            wg_launch(be, J, xq, xs, ntok, N, nkg, P[i], 1, nc, 0);
        }
    }
}

/* ==== BF16 linears at prefill on wgmma (k_wgbf) ===========================
 *
 * mma.cu's k_mma_bf16 takes BF16 weights with activations in three BF16 parts
 * (hi + mid + lo): per output, a chain of mma.sync m16n8k16 over each K
 * quarter of each part (step j of a 64-column group: its three parts in
 * order), the quarters added in order, then the parts - ~23 TFLOP/s at a
 * 4,096-token prefill (the compressors' and the indexer's projections, the
 * router). wgmma with A from registers in mma.sync's fragment layout gives
 * the same bits for the same chain (measured for F16; these BF16 chains are
 * checked bit for bit against k_mma_bf16 by test_ops_cuda), so here a
 * warpgroup takes 64 rows x 64 tokens and runs the same chains: the weights
 * by TMA (128-byte swizzle) read into the same registers k_mma_bf16 loads
 * (lane t: columns 8t.. and 32 + 8t.. of rows g, g + 8), the activation parts
 * packed as wgmma's K-major rows in k_mma_bf16's column order (k_wgbf_pack),
 * 12 wgmma m64n64k16 a group into one accumulator; at a quarter's end the
 * quarter is added as mma_finish adds them. Used where the launch fills the
 * GPU (prefill); the same bits as k_mma_bf16 for every batch. */
#define WB_N     64 /* tokens a tile */
#define WB_SMAX  4  /* ring stages at most (DSV4_WGBF_S: 3 by default, two blocks an SM) */
#define WB_STAGE (8192 + 3 * WB_N * 128)

/* The first NPT BF16 parts of x (three, or BF16(x) alone for k_wgbf<1>) per token and 64-column group as
 * 128-byte K-major rows, [part][grp][kg][token],
 * step j's 16 k slots at bytes 32 j.. holding k_mma_bf16's columns for step j (slots 2t, 2t + 1: columns
 * 4q, 4q + 1; 2t + 8, 2t + 9: 4q + 2, 4q + 3; q = 8 (j / 2) + 2t + j % 2), 16-byte chunk c at c ^ (token % 8). */
template <int NPT>
__global__ void k_wgbf_pack(const float *x, int ldx, size_t xg, int n, int ntok, int K, int nkg, int G, uint8_t *xb)
{
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory"); /* x */
    pack_at at;
    if (!pack_at_of(ntok, nkg, at)) return;
    const int grp = at.grp, tok = at.tok, kg = at.kg, q = at.q;
    if (kg >= nkg) return;
    float v[4];
    pack_load4(x, ldx, xg, grp, tok, n, at.c0, K, v);
    const int t = (q >> 1) & 3, j = 2 * (q >> 3) + (q & 1);
    const int b0 = 32 * j + 4 * t, b1 = b0 + 16; /* the two words' bytes in the row */
    uint2 w[NPT];
    bf16_parts<NPT>(v, w);
#pragma unroll
    for (int s = 0; s < NPT; s++) {
        uint8_t *row = xb + ((((size_t)s * G + grp) * nkg + kg) * ntok + tok) * 128;
        *(uint32_t *)(row + ((((b0 >> 4) ^ (tok & 7)) << 4) | (b0 & 15))) = w[s].x;
        *(uint32_t *)(row + ((((b1 >> 4) ^ (tok & 7)) << 4) | (b1 & 15))) = w[s].y;
    }
}

/* The chains a block of k_wgbf / k_wgf8 walks: mma.cu's P parts x 4 warp quarters of the nkg groups, those
 * of parts [p0, p1); chain c (part c / 4, quarter c % 4) ends at group end(c). At a chain's end its sum goes
 * into the quarters' (mma_finish's warp order: q0 + q1 + q2 + q3) and at a part's end that into the parts'
 * (part order); empty chains add their zeros as the warps' do. */
struct wg_chains {
    int nkg, P, p0, p1, ch;
    __device__ int end(int c) const
    {
        const int p = c >> 2, w = c & 3, pk0 = nkg * p / P, pk1 = nkg * (p + 1) / P;
        return pk0 + (pk1 - pk0) * (w + 1) / 4;
    }
    /* every chain ending at group kg (the chain's sum in s, zeroed) */
    template <int R> __device__ __forceinline__ void fold_to(int kg, float *s, float *qs, float *ps)
    {
        while (ch < 4 * p1 && end(ch) == kg) {
            const int w = ch & 3;
#pragma unroll
            for (int j = 0; j < R; j++) {
                qs[j] = w == 0 ? s[j] : qs[j] + s[j];
                if (w == 3) ps[j] = ch == 4 * p0 + 3 ? qs[j] : ps[j] + qs[j];
                s[j] = 0.0f;
            }
            ch++;
        }
    }
};

/* The ring of k_wgbf / k_wgf8 (S stages, barrier s at bar0 + 8 s; ia(s, kg) / ib(s, kg) issue stage s's weight
 * and activation copies of group kg). Start: the barriers and the first S groups' weights (constants) - then
 * the caller's own work before the kernel before completes - and wg_ring_b: the wait for it, the first
 * groups' activations, a barrier for every thread. */
template <class IA>
__device__ __forceinline__ void wg_ring_a(int tid, uint32_t bar0, int S, int ng, int kg0, const IA &ia)
{
    if (tid == 0) {
        for (int s = 0; s < S; s++) mbar_init(bar0 + 8 * s, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        for (int s = 0; s < S && s < ng; s++) ia(s, kg0 + s); /* the weights: constants */
    }
}
template <class IB> __device__ __forceinline__ void wg_ring_b(int tid, int S, int ng, int kg0, const IB &ib)
{
    asm volatile("griddepcontrol.wait;" ::: "memory"); /* the pack */
    if (tid == 0)
        for (int s = 0; s < S && s < ng; s++) ib(s, kg0 + s);
    __syncthreads();
}
/* The group's wgmma (issued since the fence) committed and waited for; the R accumulators exist after it. */
template <int R> __device__ __forceinline__ void wg_commit_wait(float *d)
{
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int j = 0; j < R; j++) asm volatile("" : "+f"(d[j])::"memory");
}
/* The end of group i (kg): every warp is done with stage cur, refilled with group kg + S; the next stage. */
template <class IA, class IB>
__device__ __forceinline__ void wg_ring_next(int tid, int i, int ng, int S, int kg, int &cur, unsigned &phase,
                                             const IA &ia, const IB &ib)
{
    __syncthreads();
    if (tid == 0 && i + S < ng) {
        ia(cur, kg + S);
        ib(cur, kg + S);
    }
    if (++cur == S) cur = 0, phase ^= 1u;
}

/* The outputs of a block of k_wgbf / k_wgf8 (64 rows from rb, 64 tokens from t0; ps[4 c + e] of thread th:
 * row (th / 32) 16 + (th % 32) / 4 (+ 8 for e >= 2), token t0 + 8 c + 2 (th % 4) + (e & 1)): stored, or with Q
 * parts a cluster (block qb of Q) added in part order through the blocks' shared memory red (the ring, free:
 * 16 KB, and the slots of sa's st.async, cl_push_*). */
template <int R>
__device__ __forceinline__ void wg_store(const float *ps, int Q, int qb, int64_t rb, int64_t rows, int t0, int n,
                                         float *out, int ldy, float *red, bool sa)
{
    const int tid = threadIdx.x;
    auto store = [&](int th, int j, float v) {
        const int64_t r = rb + 16 * (th >> 5) + ((th & 31) >> 2) + ((j & 2) ? 8 : 0);
        const int tk = t0 + 8 * (j >> 2) + 2 * (th & 3) + (j & 1);
        if (r < rows && tk < n) out[(size_t)tk * ldy + r] = v;
    };
    if (Q == 1) {
#pragma unroll
        for (int j = 0; j < R; j++) store(tid, j, ps[j]);
        return;
    }
    wg_sum_parts<R>(ps, red, qb, Q, sa, store);
}

/* Block: 64 rows (tile blockIdx.y) of row group blockIdx.z / Q, 64 tokens (tile blockIdx.x), the chains of
 * k_mma_bf16's P parts x 4 quarters in order (chain c: part c / 4, quarter c % 4) of its parts: all of them
 * (Q = 1), or part blockIdx.z % Q (Q = P: the parts a cluster, added in part order as mma_finish adds them,
 * where the tiles alone would leave the GPU short of blocks). */
template <int NPT>
__global__ void __launch_bounds__(128)
    k_wgbf(const __grid_constant__ CUtensorMap tm, int64_t rows, const uint8_t *xb, int ntok, int nkg, int G, int P,
           int Q, int n, float *y, int ldy, size_t yg, int S, bool sa)
{
    /* NPT: the activation parts (3, or 1 - hi alone, k_mma_bf16<.., 1>'s: reference numerics) */
    constexpr int R = WB_N / 2;
    const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5, g = lane >> 2, t = lane & 3;
    const int grp = (int)blockIdx.z / Q, qb = (int)blockIdx.z % Q;
    const int p0 = P * qb / Q, p1 = P * (qb + 1) / Q, kgA = nkg * p0 / P, ng = nkg * p1 / P - kgA;
    const int64_t rb = (int64_t)blockIdx.y * 64;
    extern __shared__ uint8_t wb_dyn[];
    __shared__ __align__(8) uint64_t full[WB_SMAX];
    const uint32_t sbase = ((uint32_t)__cvta_generic_to_shared(wb_dyn) + 1023u) & ~1023u;
    const uint8_t *sgen = wb_dyn + (sbase - (uint32_t)__cvta_generic_to_shared(wb_dyn));
    const uint32_t bar0 = (uint32_t)__cvta_generic_to_shared(full);
    const int ty = (int)(grp * rows + rb);
    const size_t plane = (size_t)G * nkg * ntok * 128; /* a part's bytes */
    const uint8_t *bsrc = xb + ((size_t)grp * nkg * ntok + (size_t)blockIdx.x * WB_N) * 128;
    auto issue_a = [&](int s, int kg) {
        mbar_expect(bar0 + 8 * s, 8192 + NPT * WB_N * 128);
        tma_box(sbase + s * WB_STAGE, &tm, kg * 128, ty, bar0 + 8 * s);
    };
    auto issue_b = [&](int s, int kg) {
#pragma unroll
        for (int p = 0; p < NPT; p++)
            bulk_copy(sbase + s * WB_STAGE + 8192 + p * WB_N * 128, bsrc + p * plane + (size_t)kg * ntok * 128,
                      WB_N * 128, bar0 + 8 * s);
    };
    wg_ring_a(tid, bar0, S, ng, kgA, issue_a);
    wg_ring_b(tid, S, ng, kgA, issue_b);
    float d[R], qs[R], ps[R];
#pragma unroll
    for (int j = 0; j < R; j++) d[j] = qs[j] = ps[j] = 0.0f;
    /* the chains of the block's parts, folded as each ends (wg_chains) */
    wg_chains cs = {nkg, P, p0, p1, 4 * p0};
    cs.fold_to<R>(kgA, d, qs, ps);
    const int r0 = 16 * wid + g; /* the thread's rows r0, r0 + 8 of the stage's 64 */
    int cur = 0;
    unsigned phase = 0;
    for (int i = 0; i < ng; i++) {
        const int kg = kgA + i;
        mbar_wait(bar0 + 8 * cur, phase);
        const uint8_t *A = sgen + cur * WB_STAGE;
        uint4 qa[2][2]; /* rows r0, r0 + 8; halves 0, 1 (columns 32h + 8t ..): k_mma_bf16's words */
#pragma unroll
        for (int r = 0; r < 2; r++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = r0 + 8 * r;
                qa[r][h] = *(const uint4 *)(A + row * 128 + ((((4 * h + t) ^ (row & 7))) << 4));
            }
        const uint32_t sb = sbase + cur * WB_STAGE + 8192;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint4 &x0 = qa[0][j >> 1], &x1 = qa[1][j >> 1];
            const uint32_t a0 = (j & 1) ? x0.z : x0.x, a2 = (j & 1) ? x0.w : x0.y;
            const uint32_t a1 = (j & 1) ? x1.z : x1.x, a3 = (j & 1) ? x1.w : x1.y;
            const uint32_t a[4] = {a0, a1, a2, a3};
#pragma unroll
            for (int p = 0; p < NPT; p++) wg_k16<64, true>(d, a, wg_desc(sb + p * WB_N * 128) + 2 * j, 1);
        }
        wg_commit_wait<R>(d);
        cs.fold_to<R>(kg + 1, d, qs, ps);
        wg_ring_next(tid, i, ng, S, kg, cur, phase, issue_a, issue_b);
    }
    wg_store<R>(ps, Q, qb, rb, rows, (int)blockIdx.x * WB_N, n, y + (size_t)grp * yg, ldy,
                (float *)(wb_dyn + (sbase - (uint32_t)__cvta_generic_to_shared(wb_dyn))), sa);
}

/* BF16 weights within the tensor maps' limits (wg_mappable). */
bool cuda_wgbf_eligible(const wdesc &w)
{
    return w.fmt == DSV4_WF_FLOAT && w.dtype == DSV4_DT_BF16 && wg_mappable(w);
}

/* ==== FP8 linears with unquantised activations at prefill on wgmma (k_wgf8) ====
 *
 * mma.cu's k_mma_fp8<.., LO> (plain numerics, and wo_a in reference numerics: the reference dequantises
 * it, so its activations are not quantised) splits each activation's 64-column group into F16 hi + lo
 * under a power-of-two scale and runs per group a fresh chain of mma.sync over the four k16 steps (hi,
 * then lo, each step), times (weight scale x activation scale) into the quarter's FP32 sum; quarters and
 * parts as k_mma_bf16 - ~37 TFLOP/s at a 4,096-token prefill, wo_a's eight groups most of a prefill's
 * dense time. Here the same chains on wgmma (A, the E4M3 -> F16 words k_mma_fp8 converts, from
 * registers): a warpgroup takes 64 rows x 64 tokens, the weights by TMA (64-byte rows: the lanes' reads
 * meet no bank twice), the activations' hi and lo packed as K-major rows in k_mma_fp8's column order
 * (k_wgf8_pack), 8 wgmma m64n64k16 a group, then the group's FMAs. */
/* ring stages at most (DSV4_WGF8_S: 3 by default, three blocks an SM; measured at a 4,096-token prefill, S = 2 / 3
 * / 4: wq_b 2,181 / 2,172 / 2,814 us, wo_a's group 476 / 474 / 438; BF16 (DSV4_WGBF_S) cmp wkv 405 / 337 / 565,
 * gate 178 / 212 / 285; the prefill 20,552 / 20,501 / 19,772 tok/s) */
#define WF_SMAX  4
#define WF_STAGE (2 * WB_N * 128 + 4096 + 1024) /* hi, lo, the weights' 64 x 64 bytes, the tokens' scales */

/* hi and lo of x per token and 64-column group (f16_parts<false, 16>: k_mma_pack's) as 128-byte K-major rows
 * [part][grp][kg][token], step j's k slots 2t, 2t + 1 holding columns 16t + 4j, + 1 and 2t + 8, 2t + 9
 * columns 16t + 4j + 2, + 3, 16-byte chunk c at c ^ (token % 8); the scales [grp][kg][token]. */
__global__ void k_wgf8_pack(const float *x, int ldx, size_t xg, int n, int ntok, int K, int nkg, int G, uint8_t *xb,
                            float *xs)
{
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory"); /* x */
    pack_at at;
    if (!pack_at_of(ntok, nkg, at)) return;
    const int grp = at.grp, tok = at.tok, kg = at.kg, q = at.q;
    float v[4];
    pack_load4(x, ldx, xg, grp, tok, n, at.c0, K, v);
    __half hi[4], lo[4];
    const float sc = f16_parts<false, 16>(v, hi, lo);
    if (kg >= nkg) return;
    const int t = q >> 2, j = q & 3, b0 = 32 * j + 4 * t, b1 = b0 + 16;
    const size_t plane = (size_t)G * nkg * ntok * 128;
    uint8_t *row = xb + (((size_t)grp * nkg + kg) * ntok + tok) * 128;
    const int o0 = (((b0 >> 4) ^ (tok & 7)) << 4) | (b0 & 15), o1 = (((b1 >> 4) ^ (tok & 7)) << 4) | (b1 & 15);
    *(uint32_t *)(row + o0) = h2_bits(hi[0], hi[1]);
    *(uint32_t *)(row + o1) = h2_bits(hi[2], hi[3]);
    *(uint32_t *)(row + plane + o0) = h2_bits(lo[0], lo[1]);
    *(uint32_t *)(row + plane + o1) = h2_bits(lo[2], lo[3]);
    if (q == 0) xs[((size_t)grp * nkg + kg) * ntok + tok] = sc;
}

/* Block: as k_wgbf (64 rows, 64 tokens, the chains of k_mma_fp8's parts and quarters; Q = P: a part a block,
 * a cluster). w: the weight's view (its E8M0 scales). */
__global__ void __launch_bounds__(128)
    k_wgf8(const __grid_constant__ CUtensorMap tm, const wdesc w, const uint8_t *xb, const float *xs, int ntok, int nkg,
           int G, int P, int Q, int n, float *y, int ldy, size_t yg, int S, bool sa)
{
    constexpr int R = WB_N / 2;
    const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5, g = lane >> 2, t = lane & 3;
    const int grp = (int)blockIdx.z / Q, qb = (int)blockIdx.z % Q;
    const int p0 = P * qb / Q, p1 = P * (qb + 1) / Q, kgA = nkg * p0 / P, ng = nkg * p1 / P - kgA;
    const int64_t rows = w.rows, rb = (int64_t)blockIdx.y * 64;
    extern __shared__ uint8_t wb_dyn[];
    __shared__ __align__(8) uint64_t full[WF_SMAX];
    const uint32_t sbase = ((uint32_t)__cvta_generic_to_shared(wb_dyn) + 1023u) & ~1023u;
    const uint8_t *sgen = wb_dyn + (sbase - (uint32_t)__cvta_generic_to_shared(wb_dyn));
    const uint32_t bar0 = (uint32_t)__cvta_generic_to_shared(full);
    const int ty = (int)(grp * rows + rb);
    const size_t plane = (size_t)G * nkg * ntok * 128;
    const uint8_t *bsrc = xb + ((size_t)grp * nkg * ntok + (size_t)blockIdx.x * WB_N) * 128;
    const float *xsrc = xs + (size_t)grp * nkg * ntok + (size_t)blockIdx.x * WB_N;
    constexpr unsigned TX = 2 * WB_N * 128 + 4096 + WB_N * 4;
    auto issue_a = [&](int s, int kg) {
        mbar_expect(bar0 + 8 * s, TX);
        tma_box(sbase + s * WF_STAGE + 2 * WB_N * 128, &tm, kg * 64, ty, bar0 + 8 * s);
    };
    auto issue_b = [&](int s, int kg) {
        const uint32_t st = sbase + s * WF_STAGE;
        bulk_copy(st, bsrc + (size_t)kg * ntok * 128, WB_N * 128, bar0 + 8 * s);
        bulk_copy(st + WB_N * 128, bsrc + plane + (size_t)kg * ntok * 128, WB_N * 128, bar0 + 8 * s);
        bulk_copy(st + 2 * WB_N * 128 + 4096, xsrc + (size_t)kg * ntok, WB_N * 4, bar0 + 8 * s);
    };
    wg_ring_a(tid, bar0, S, ng, kgA, issue_a);
    /* the thread's rows' E8M0 scale rows (null past the rows) */
    const int r0 = 16 * wid + g;
    const uint8_t *srow[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int64_t r = rb + r0 + 8 * h;
        srow[h] = r < rows
                      ? (const uint8_t *)w.scale + (uint32_t)(w.row0 + grp * rows + r) / (uint32_t)w.br * w.scale_cols
                      : nullptr;
    }
    const int kpb = w.bc / 64;
    auto wscale = [&](int h, int kg) { return srow[h] ? dsv4_e8m0_to_f32(__ldg(srow[h] + kg / kpb)) : 0.0f; };
    float ws[2] = {0.0f, 0.0f};
    if (ng > 0) ws[0] = wscale(0, kgA), ws[1] = wscale(1, kgA);
    wg_ring_b(tid, S, ng, kgA, issue_b);
    float d[R], acc[R], qs[R], ps[R];
#pragma unroll
    for (int j = 0; j < R; j++) d[j] = acc[j] = qs[j] = ps[j] = 0.0f;
    wg_chains cs = {nkg, P, p0, p1, 4 * p0};
    cs.fold_to<R>(kgA, acc, qs, ps);
    int cur = 0;
    unsigned phase = 0;
    for (int i = 0; i < ng; i++) {
        const int kg = kgA + i;
        float wsn[2] = {0.0f, 0.0f};
        if (i + 1 < ng) wsn[0] = wscale(0, kg + 1), wsn[1] = wscale(1, kg + 1);
        mbar_wait(bar0 + 8 * cur, phase);
        const uint8_t *st = sgen + cur * WF_STAGE;
        const uint4 u0 = *(const uint4 *)(st + 2 * WB_N * 128 + r0 * 64 + 16 * t);
        const uint4 u1 = *(const uint4 *)(st + 2 * WB_N * 128 + (r0 + 8) * 64 + 16 * t);
        const uint32_t sb = sbase + cur * WF_STAGE;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t w0 = j == 0 ? u0.x : j == 1 ? u0.y : j == 2 ? u0.z : u0.w;
            const uint32_t w1 = j == 0 ? u1.x : j == 1 ? u1.y : j == 2 ? u1.z : u1.w;
            uint32_t a0, a1, a2, a3;
            fp8x4_f16(w0, a0, a2); /* row g: slots 2t, 2t + 1 | 2t + 8, 2t + 9 */
            fp8x4_f16(w1, a1, a3); /* row g + 8 */
            const uint32_t a[4] = {a0, a1, a2, a3};
            wg_k16<64, false>(d, a, wg_desc(sb) + 2 * j, j > 0);
            wg_k16<64, false>(d, a, wg_desc(sb + WB_N * 128) + 2 * j, 1);
        }
        wg_commit_wait<R>(d);
        const float *xsm = (const float *)(st + 2 * WB_N * 128 + 4096);
#pragma unroll
        for (int j = 0; j < R; j++) { /* d[4 c + e]: row r0 (+ 8 for e >= 2), token 8 c + 2 t + (e & 1) */
            const float sx = xsm[8 * (j >> 2) + 2 * t + (j & 1)];
            acc[j] = grp_fma(d[j], __fmul_rn(ws[(j >> 1) & 1], sx), acc[j]);
        }
        ws[0] = wsn[0], ws[1] = wsn[1];
        cs.fold_to<R>(kg + 1, acc, qs, ps);
        wg_ring_next(tid, i, ng, S, kg, cur, phase, issue_a, issue_b);
    }
    wg_store<R>(ps, Q, qb, rb, rows, (int)blockIdx.x * WB_N, n, y + (size_t)grp * yg, ldy,
                (float *)(wb_dyn + (sbase - (uint32_t)__cvta_generic_to_shared(wb_dyn))), sa);
}

/* FP8 E4M3 with E8M0 scales in 64-column groups of whole scale blocks (cuda_mma_eligible's), rows of whole
 * aligned 16-byte chunks, within the tensor maps' limits. */
bool cuda_wgf8_eligible(const wdesc &w)
{
    return w.fmt == DSV4_WF_FP8 && w.dtype == DSV4_DT_F8_E4M3 && w.sdtype == DSV4_DT_F8_E8M0 && w.bc % 64 == 0 &&
           w.br > 0 && wg_mappable(w);
}

/* Whether a prefill kernel takes n tokens of a weight it is eligible for: at least 64, else mma.cu's kernels
 * (the same bits either way; forced at decode, 8 Flash layers: batch 16 5.99 -> 6.26-6.59 ms a step, batch 64
 * 14.07-14.27 -> 13.27, bench/results/2026-11-30-hc-walk/decode-forced/); its switch (cuda_knob: DSV4_WGBF,
 * DSV4_WGF8) 0: never, 1: every eligible call. */
static bool wgmm_use(int knob, bool eligible, int n)
{
    const int k = cuda_knob(knob);
    return eligible && (k >= 0 ? k == 1 : n >= 64);
}
bool cuda_wgbf_use(const wdesc &w, int n)
{
    return wgmm_use(CUDA_KNOB_WGBF, cuda_wgbf_eligible(w), n);
}
bool cuda_wgf8_use(const wdesc &w, int n)
{
    return wgmm_use(CUDA_KNOB_WGF8, cuda_wgf8_eligible(w), n);
}

/* m weights of one input x (G row groups each, the same K; P[i]: mma.cu's parts of weight i), n tokens, on
 * k_wgbf (BF16: three activation parts) or k_wgf8 (F8: FP8 weights, hi + lo and a scale per 64 columns): per
 * chunk of 1,024 tokens one pack, then a launch per weight, one part a block (a cluster of P) where the tiles
 * alone would leave the GPU short of blocks. Ring stages DSV4_WGBF_S / DSV4_WGF8_S (default 3; the
 * attribute, set on every device by cuda_wg8_init, allows the most). */
static void wgmm_run(dsv4_backend *be, bool F8, int m, const wdesc *w, const int *P, int G, const float *x, int ldx,
                     size_t xg, int n, float *const *y, const int *ldy, size_t yg, bool one = false)
{
    if (m <= 0 || n <= 0) return;
    cuda_impl *im = impl_of(be);
    static int sb = 0, sf = 0;
    if (!sb) sb = cuda_env_int("DSV4_WGBF_S", 3) > WB_SMAX ? WB_SMAX : cuda_env_int("DSV4_WGBF_S", 3);
    if (!sf) sf = cuda_env_int("DSV4_WGF8_S", 3) > WF_SMAX ? WF_SMAX : cuda_env_int("DSV4_WGF8_S", 3);
    const int S = F8 ? sf : sb;
    const size_t smem = (size_t)S * (F8 ? WF_STAGE : WB_STAGE) + 1024;
    const int CH = 1024, nkg = (int)((w[0].cols + 63) / 64);
    const int chunk = n < CH ? n : CH, ntok_max = (chunk + WB_N - 1) / WB_N * WB_N;
    /* the pack's planes: F8 hi + lo; BF16 three parts, or BF16(x) alone (one) */
    uint8_t *xb = (uint8_t *)cuda_scratch(be, CS_MMA_X, (size_t)(F8 ? 2 : one ? 1 : 3) * G * nkg * ntok_max * 128);
    float *xs = F8 ? (float *)cuda_scratch(be, CS_MMA_S, (size_t)G * nkg * ntok_max * sizeof(float)) : nullptr;
    for (int t0 = 0; t0 < n; t0 += CH) {
        const int nc = n - t0 < CH ? n - t0 : CH, ntok = (nc + WB_N - 1) / WB_N * WB_N;
        const dim3 pg((unsigned)(((int64_t)ntok * ((nkg + 1) / 2) + 7) / 8), (unsigned)G);
        const float *xc = x + (size_t)t0 * ldx;
        if (F8)
            launch_pdl(k_wgf8_pack, pg, dim3(256), 0, im->stream, xc, ldx, xg, nc, ntok, (int)w[0].cols, nkg, G, xb,
                       xs);
        else
            launch_pdl(one ? k_wgbf_pack<1> : k_wgbf_pack<3>, pg, dim3(256), 0, im->stream, xc, ldx, xg, nc, ntok,
                       (int)w[0].cols, nkg, G, xb);
        for (int i = 0; i < m; i++) {
            CUtensorMap tm; /* a host call of ~1 us: per launch */
            wg_map(&tm, w[i], G, F8 ? 64 : 128);
            const int64_t tiles = (w[i].rows + 63) / 64 * G * (ntok / WB_N);
            const int Q = tiles < (int64_t)im->n_sm ? P[i] : 1;
            const dim3 grid((unsigned)(ntok / WB_N), (unsigned)((w[i].rows + 63) / 64), (unsigned)(G * Q));
            const unsigned cz = Q > 1 ? (unsigned)Q : 0u;
            const bool sa = cz && cuda_lin_async(); /* the parts' sums by st.async (wg_store) */
            float *yi = y[i] + (size_t)t0 * ldy[i];
            if (F8)
                cuda_launch(k_wgf8, grid, dim3(128), smem, im->stream, cz, true, tm, w[i], (const uint8_t *)xb,
                            (const float *)xs, ntok, nkg, G, P[i], Q, nc, yi, ldy[i], yg, S, sa);
            else
                cuda_launch(one ? k_wgbf<1> : k_wgbf<3>, grid, dim3(128), smem, im->stream, cz, true, tm, w[i].rows,
                            (const uint8_t *)xb, ntok, nkg, G, P[i], Q, nc, yi, ldy[i], yg, S, sa);
        }
    }
}
void cuda_linear_wgbf(dsv4_backend *be, int m, const wdesc *w, const int *P, int G, const float *x, int ldx, size_t xg,
                      int n, float *const *y, const int *ldy, size_t yg, bool one)
{
    if (one && m <= 64) { /* --prefill-gemm cublaslt: BF16(x) once times the weights it takes (each decided as its
                           * own call would be), the rest here */
        wdesc lw[64], rw[64];
        int rp[64], ll[64], rl[64], nl = 0, nr = 0;
        float *ly[64], *ry[64];
        for (int i = 0; i < m; i++)
            if (cuda_lt_bf_takes(be, w[i], G, n, y[i], ldy[i], yg))
                lw[nl] = w[i], ly[nl] = y[i], ll[nl++] = ldy[i];
            else
                rw[nr] = w[i], rp[nr] = P[i], ry[nr] = y[i], rl[nr++] = ldy[i];
        if (nl) {
            cuda_linear_lt_bf(be, nl, lw, G, x, ldx, xg, n, ly, ll, yg);
            wgmm_run(be, false, nr, rw, rp, G, x, ldx, xg, n, ry, rl, yg, one);
            return;
        }
    }
    wgmm_run(be, false, m, w, P, G, x, ldx, xg, n, y, ldy, yg, one);
}
void cuda_linear_wgf8(dsv4_backend *be, int m, const wdesc *w, const int *P, int G, const float *x, int ldx, size_t xg,
                      int n, float *const *y, const int *ldy, size_t yg)
{
    wgmm_run(be, true, m, w, P, G, x, ldx, xg, n, y, ldy, yg);
}

/* More than 48 KB of dynamic shared memory for k_wgbf and k_wgf8 (their deepest rings), on the current device. */
static void cuda_wgmm_init(void)
{
    CK(cudaFuncSetAttribute(k_wgbf<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, WB_SMAX * WB_STAGE + 1024));
    CK(cudaFuncSetAttribute(k_wgbf<3>, cudaFuncAttributeMaxDynamicSharedMemorySize, WB_SMAX * WB_STAGE + 1024));
    CK(cudaFuncSetAttribute(k_wgf8, cudaFuncAttributeMaxDynamicSharedMemorySize, WF_SMAX * WF_STAGE + 1024));
}
