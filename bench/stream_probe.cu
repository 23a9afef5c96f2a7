/*
 * stream_probe.cu - how fast the routed experts' gate / up pass at one token can stream its weights, with the
 * arithmetic taken out (a measurement for k_moe16: is its batch-1 rate set by the bytes' pattern and the
 * grid's waves, or by the loop's instructions?). Standalone (from the repository root: rowdot.cuh's F16 conversion
 * and MMA):
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude bench/stream_probe.cu -o stream_probe
 *   ./stream_probe
 *
 * The data: Flash's six experts at one token, w1 and w3 of each (2,048 rows of 2,048 bytes of E2M1 codes, a
 * scale row of 128 bytes: 53.5 MB), read from HBM (a 512 MB buffer read between repeats). The kernel has
 * k_moe16's shape: a block of four warps takes one row block (16 rows of w1 and the same 16 of w3), warp w K's
 * 128-column groups w, w + 4, ...; each warp's ring of NS stages (3 or 5: a group's 32 rows x 64 bytes and 32
 * scale words), NS - 1 groups ahead through cp.async (.L2::256B), as moe_issue_w. Then per group, in place of
 * the decode and the MMAs: the lane's 16 words read from the stage and C rounds of 16 FMAs on four chains (16 C
 * instructions, printed as FMA; 0: none) - or (the mode column, s58) k_moe16's decode of those words: dec, each
 * word's E4M3 words by its packed layout's four logic operations (moe_mma.cu's fp4_eo) and their F16 pairs by
 * F2FP (fp8x4_f16), the results folded by XOR; mma, the same decode feeding k_moe16's 16 MMAs a group (two a
 * unit and tile, fresh sums, each unit's sums times a scale by FMA, as group16). Variants:
 *   moe     the rows as k_moe16 reads them (a group: 64 bytes of each of 32 rows, the block's four warps 256
 *           contiguous bytes of a row);
 *   contig  the same bytes laid out so that a warp's group is 2,048 contiguous bytes (the block's 64 KB one run);
 *   ldg     no ring: a grid-stride float4 read of the first 37, 53 or 69 MiB, 8 loads a thread in flight (the
 *           read ceiling).
 * Grids: RBK row blocks an expert (128: the real pass, 768 blocks, 1.45 waves at four an SM; 88: one wave of
 * 528; 176: two waves), four or eight blocks an SM (set by padding the dynamic shared memory). Printed: the
 * median of the repeats' times (events; an empty kernel's time between them first) and GB/s on the bytes the
 * grid reads. The flush reads: writing it (s54's first call) left L2 full of dirty lines, written back while
 * the probe read.
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backend/cuda/rowdot.cuh"
#include "probe.cuh"

#define NE    6    /* experts */
#define NR    2816 /* rows of w1 (and of w3) allocated: 2,048 real, room for 176 row blocks */
#define ROWB  2048 /* bytes a row: 4,096 E2M1 codes */
#define SROWB 128  /* scale bytes a row */
#define NKG   32   /* 128-column groups */

struct stage {
    uint8_t w[32 * 64];
    uint32_t s[32];
};

__device__ __forceinline__ void cp16(void *dst, const void *src)
{
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp4(void *dst, const void *src)
{
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wait_g()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* k_moe16's decode of the lane's 16 words of a stage (dec, MODE 1: its results folded into xacc by XOR) and, MODE
 * 2 (mma), its 16 MMAs a group: two a unit and tile into fresh sums, each unit's sums times a scale into sum (as
 * group16). The words' E4M3 words by fp4_eo's logic (moe_mma.cu), their F16 pairs by fp8x4_f16. */
template <int MODE>
__device__ __forceinline__ void probe_decode(const stage &st, int lane, uint32_t bq, float (*sum)[4], uint32_t &xacc)
{
    uint32_t q[16];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const uint4 v = *(const uint4 *)(st.w + 16 * (lane + 32 * k));
        q[4 * k] = v.x, q[4 * k + 1] = v.y, q[4 * k + 2] = v.z, q[4 * k + 3] = v.w;
    }
    const float sc = __uint_as_float((st.s[lane] & 0x3f7fffffu) | 0x3f000000u);
#pragma unroll
    for (int T = 0; T < 2; T++)
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const uint32_t q0 = q[8 * T + u], q1 = q[8 * T + 4 + u], M = 0x9c9c9c9cu; /* fp4_eo */
            const uint32_t o0 = q0 & M, e0 = ((q0 << 2) ^ (q0 >> 2)) & M;
            const uint32_t o1 = q1 & M, e1 = ((q1 << 2) ^ (q1 >> 2)) & M;
            uint32_t ae[4], ao[4];
            fp8x4_f16(e0, ae[0], ae[2]);
            fp8x4_f16(e1, ae[1], ae[3]);
            fp8x4_f16(o0, ao[0], ao[2]);
            fp8x4_f16(o1, ao[1], ao[3]);
            if (MODE == 2) {
                float c[4] = {0, 0, 0, 0};
                mma_f16(c, ae[0], ae[1], ae[2], ae[3], bq, bq ^ 1u);
                mma_f16(c, ao[0], ao[1], ao[2], ao[3], bq ^ 2u, bq ^ 3u);
#pragma unroll
                for (int i = 0; i < 4; i++) sum[T][i] = __fmaf_rn(c[i], sc, sum[T][i]);
            } else {
                xacc ^= ae[0] ^ ae[1] ^ ae[2] ^ ae[3] ^ ao[0] ^ ao[1] ^ ao[2] ^ ao[3];
            }
        }
}

/* w: [expert][matrix 0 / 1][row][ROWB]; s: [expert][matrix][row][SROWB] (moe). contig: the block's rows as one run
 * of [group][warp... ] stages: block b's 64 KB at b * 64 KB, its scales at b * 4 KB. */
/* MODE: 0 C rounds of FMAs, 1 dec, 2 mma (the comment at the top) */
template <int NS, bool CONTIG, int MODE>
__global__ void __launch_bounds__(128) k_probe(const uint8_t *w, const uint8_t *s, int rbk, int C, float *out)
{
    extern __shared__ uint4 dyn[];
    stage *ring = (stage *)dyn + (threadIdx.x >> 5) * NS;
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, e = blockIdx.y, rb = blockIdx.x;
    const int64_t blk = (int64_t)e * rbk + rb;
    const uint8_t *src[4];
    const uint8_t *ssrc;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int c = lane + 32 * i, r = c >> 2, m = r >> 4, row = rb * 16 + (r & 7) + 8 * ((r >> 3) & 1);
        src[i] = CONTIG ? w + blk * 65536 + 16 * c : w + (((int64_t)e * 2 + m) * NR + row) * ROWB + 16 * (c & 3);
    }
    {
        const int m = lane >> 4, row = rb * 16 + (lane & 7) + 8 * ((lane >> 3) & 1);
        ssrc = CONTIG ? s + blk * 4096 + 4 * lane : s + (((int64_t)e * 2 + m) * NR + row) * SROWB;
    }
    auto issue = [&](stage &st, int kg) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int c = lane + 32 * i;
            cp16(st.w + c * 16, src[i] + (CONTIG ? (int64_t)kg * 2048 : kg * 64));
        }
        cp4(&st.s[lane], ssrc + (CONTIG ? kg * 128 : kg * 4));
    };
#pragma unroll
    for (int i = 0; i < NS - 1; i++) {
        if (wid + 4 * i < NKG) issue(ring[i], wid + 4 * i);
        commit();
    }
    float a[4] = {0, 0, 0, 0};
    float sum[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    uint32_t xacc = 0;
    const uint32_t bq = 0x3c003c00u ^ (uint32_t)lane; /* B's registers: F16 pairs near 1 */
    int cur = 0;
    for (int kg = wid; kg < NKG; kg += 4) {
        wait_g<NS - 2>();
        __syncwarp();
        const int nx = kg + 4 * (NS - 1), ns = cur == 0 ? NS - 1 : cur - 1;
        if (nx < NKG) issue(ring[ns], nx);
        commit();
        const stage &st = ring[cur];
        if (MODE > 0) {
            probe_decode<MODE>(st, lane, bq, sum, xacc);
        } else {
            float fw[16];
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const uint4 v = *(const uint4 *)(st.w + 16 * (lane + 32 * q));
                fw[4 * q] = __uint_as_float((v.x & 0x3f7fffffu) | 0x3f000000u);
                fw[4 * q + 1] = __uint_as_float((v.y & 0x3f7fffffu) | 0x3f000000u);
                fw[4 * q + 2] = __uint_as_float((v.z & 0x3f7fffffu) | 0x3f000000u);
                fw[4 * q + 3] = __uint_as_float((v.w & 0x3f7fffffu) | 0x3f000000u);
            }
            a[0] += __uint_as_float(st.s[lane] & 0x3f7fffffu);
            for (int i = 0; i < C; i++)
#pragma unroll
                for (int k = 0; k < 16; k++) a[k & 3] = fmaf(a[k & 3], fw[k], 1e-7f);
#pragma unroll
            for (int k = 0; k < 16; k++) a[k & 3] += fw[k];
        }
        cur = cur == NS - 1 ? 0 : cur + 1;
    }
    wait_g<0>();
    float f = (a[0] + a[1]) + (a[2] + a[3]) + __uint_as_float(xacc & 0x3f7fffffu);
#pragma unroll
    for (int i = 0; i < 4; i++) f += sum[0][i] + sum[1][i];
    out[(blk * 4 + wid) * 32 + lane] = f;
}

__global__ void k_ldg(const int4 *p, size_t n, float *out)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    int acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += 8 * stride) {
        int4 v[8];
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = i + k * stride < n ? __ldcg(p + i + k * stride) : make_int4(0, 0, 0, 0);
#pragma unroll
        for (int k = 0; k < 8; k++) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = (float)acc;
}

/* The flush: reads (a write would leave L2 full of dirty lines, written back while the probe reads) */
__global__ void k_flush(const int4 *p, size_t n, float *out)
{
    int acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const int4 v = __ldcg(p + i);
        acc ^= v.x ^ v.w;
    }
    if (acc == 0x12345678) out[0] = 1.0f;
}

__global__ void k_empty(float *out)
{
    if (threadIdx.x == 1000) out[0] = 0.0f;
}

template <int NS, bool CONTIG, int MODE = 0> static void set_attr(void)
{
    CKE(cudaFuncSetAttribute(k_probe<NS, CONTIG, MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
}

int main(int argc, char **argv)
{
    const int reps = argc > 1 ? atoi(argv[1]) : 9;
    int nsm = 0;
    CKE(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
    const size_t wbytes = (size_t)NE * 2 * NR * ROWB, sbytes = (size_t)NE * 2 * NR * SROWB, fl = (size_t)512 << 20;
    uint8_t *w, *s;
    int4 *flush;
    float *out;
    CKE(cudaMalloc(&w, wbytes));
    CKE(cudaMalloc(&s, sbytes));
    CKE(cudaMalloc(&flush, fl));
    CKE(cudaMalloc(&out, (size_t)64 << 20));
    CKE(cudaMemset(w, 0x3c, wbytes));
    CKE(cudaMemset(s, 0x7f, sbytes));
    CKE(cudaMemset(flush, 1, fl));
    set_attr<3, false>(), set_attr<3, true>(), set_attr<5, false>(), set_attr<5, true>();
    set_attr<3, false, 1>(), set_attr<3, false, 2>(); /* dec, mma: one ring, k_moe16's rows */
    cudaEvent_t e0, e1;
    CKE(cudaEventCreate(&e0));
    CKE(cudaEventCreate(&e1));
    auto timeit = [&](auto launch) {
        std::vector<float> t;
        for (int r = 0; r < reps + 1; r++) {
            k_flush<<<4 * nsm, 512>>>(flush, fl / sizeof(int4), out);
            CKE(cudaEventRecord(e0));
            launch();
            CKE(cudaEventRecord(e1));
            CKE(cudaEventSynchronize(e1));
            float ms;
            CKE(cudaEventElapsedTime(&ms, e0, e1));
            if (r) t.push_back(ms * 1000.0f);
        }
        CKE(cudaGetLastError());
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    };
    printf("SMs %d, %d repeats, the median us\n", nsm, reps);
    printf("empty kernel between the events: %.2f us\n", timeit([&] { k_empty<<<1, 32>>>(out); }));
    for (size_t mb : {(size_t)37, (size_t)53, (size_t)69}) {
        const size_t b = std::min(wbytes, mb << 20);
        const float us = timeit([&] { k_ldg<<<8 * nsm, 256>>>((const int4 *)w, b / 16, out); });
        printf("ldg     %.1f MB: %.2f us, %.0f GB/s\n", b / 1e6, us, b / us / 1e3);
    }
    printf("%-7s %4s %3s %4s %4s %6s %5s %8s %8s %7s\n", "pattern", "mode", "NS", "FMA", "RBK", "blocks", "b/SM", "MB",
           "us", "GB/s");
    /* one configuration: its blocks an SM, its median time, a line of the table */
    auto run = [&](void (*kern)(const uint8_t *, const uint8_t *, int, int, float *), size_t smem, const char *pattern,
                   const char *mode, int ns, int c, int rbk) {
        int occ = 0;
        CKE(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, 128, smem));
        const dim3 grid(rbk, NE);
        const float us = timeit([&] { kern<<<grid, 128, smem>>>(w, s, rbk, c, out); });
        const double mb = (double)rbk * NE * (65536 + 4096) / 1e6;
        printf("%-7s %4s %3d %4d %4d %6d %5d %8.1f %8.2f %7.0f\n", pattern, mode, ns, 16 * c, rbk, rbk * NE, occ, mb,
               us, mb / us * 1e3);
    };
    const int rbks[] = {128, 88, 176};
    const int cs[] = {0, 8, 16, 24};
    for (int contig = 0; contig < 2; contig++)
        for (int ns : {3, 5})
            for (int bps : {4, 8})
                for (int c : cs)
                    for (int rbk : rbks) {
                        const size_t ring = (size_t)4 * ns * sizeof(stage);
                        size_t smem = (size_t)(227 * 1024) / bps - 1024;
                        if (ring > smem) continue;
                        smem = std::max(ring, smem - 4096);
                        run(contig ? (ns == 3 ? k_probe<3, true, 0> : k_probe<5, true, 0>)
                                   : (ns == 3 ? k_probe<3, false, 0> : k_probe<5, false, 0>),
                            smem, contig ? "contig" : "moe", "fma", ns, c, rbk);
                    }
    /* k_moe16's decode (dec) and its MMAs (mma) in place of the FMAs: its rows, three stages, four blocks an SM
     * (the real pass's grid: RBK 128; one wave: 88) */
    for (int rbk : {128, 88}) {
        const size_t smem = (size_t)(227 * 1024) / 4 - 1024 - 4096;
        run(k_probe<3, false, 1>, smem, "moe", "dec", 3, 0, rbk);
        run(k_probe<3, false, 2>, smem, "moe", "mma", 3, 0, rbk);
    }
    return 0;
}
