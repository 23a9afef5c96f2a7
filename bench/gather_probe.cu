/*
 * gather_probe.cu - how fast one block gathers scattered 1 KB rows into its shared memory (a measurement
 * for k_attn_one, whose blocks copy their part's cached KV rows - 80 rows of 512 BF16 at CSA's 640 - before
 * anything else can start). Standalone: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a
 * bench/gather_probe.cu -o gather_probe && ./gather_probe
 *
 * Each block copies R rows (random rows of a 1 GiB buffer, so from HBM after a 256 MB flush; "warm": the
 * same rows again without the flush, from L2) by one of:
 *   cp16   cp.async.cg 16 bytes a lane, a warp a row (k_attn_one's issue_rows);
 *   cpz    the same in the zero-filling form (a source size operand) k_attn_one issues;
 *   bulk1  cp.async.bulk, a row a copy (1 KB), issued by warp 0's lanes, completing on one mbarrier;
 *   bulkT  the same, a row a thread over the block's threads;
 *   bulk2  cp.async.bulk, two 512-byte copies a row;
 *   ldg    ld.global.nc 16 bytes a lane into registers, all of a thread's loads issued before its stores.
 * Printed: the median over the repeats of the slowest block's cycles (clock64, from its first issue to every
 * byte in shared memory, after a __syncthreads) and the mean block's, for G blocks at once, dup of them reading
 * the same rows; for cp16 / cpz also the mean block's cycles to issue its copies.
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe.cuh"

enum { CP16, CPZ, BULK1, BULKT, BULK2, LDG, NMODE };
static const char *mode_name[NMODE] = {"cp16", "cpz", "bulk1", "bulkT", "bulk2", "ldg"};
#define ROWB 1024
#define MAXR 96

__device__ __forceinline__ void mb_init(uint32_t mb, unsigned n)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(mb), "r"(n) : "memory");
}
__device__ __forceinline__ void mb_expect(uint32_t mb, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(mb), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mb_wait(uint32_t mb, unsigned ph)
{
    asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W;\n}\n" ::"r"(
                     mb),
                 "r"(ph)
                 : "memory");
}
__device__ __forceinline__ void bulk(uint32_t dst, const void *src, unsigned bytes, uint32_t mb)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(mb)
                 : "memory");
}

template <int MODE> __global__ void __launch_bounds__(256) k_gather(const unsigned char *buf, const int *rows, int R,
                                                                     int dup, long long *cyc, int *sink)
{
    extern __shared__ __align__(128) unsigned char sm[];
    __shared__ __align__(8) unsigned long long mbar;
    __shared__ int ri[MAXR];
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    for (int r = tid; r < R; r += blockDim.x) ri[r] = rows[(blockIdx.x % (gridDim.x / dup)) * R + r];
    const uint32_t mb = (uint32_t)__cvta_generic_to_shared(&mbar), s0 = (uint32_t)__cvta_generic_to_shared(sm);
    if (tid == 0) {
        mb_init(mb, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const long long t0 = clock64();
    long long ti = 0;
    if (MODE == CP16 || MODE == CPZ) {
        for (int r = w; r < R; r += 8) {
            const unsigned char *src = buf + (size_t)ri[r] * ROWB;
            for (int c = lane; c < ROWB / 16; c += 32)
                if (MODE == CP16)
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s0 + r * ROWB + 16 * c),
                                 "l"(src + 16 * c)
                                 : "memory");
                else /* the zero-filling form k_attn_one issues (cp_async16_any) */
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s0 + r * ROWB + 16 * c),
                                 "l"(src + 16 * c), "r"(16)
                                 : "memory");
        }
        ti = clock64();
        asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
        __syncthreads();
    } else if (MODE == LDG) {
        constexpr int PER = MAXR * ROWB / 16 / 256;
        uint4 v[PER];
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int k = tid + 256 * i, r = k / (ROWB / 16), c = k % (ROWB / 16);
            if (r < R) v[i] = __ldg((const uint4 *)(buf + (size_t)ri[r] * ROWB) + c);
        }
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int k = tid + 256 * i, r = k / (ROWB / 16), c = k % (ROWB / 16);
            if (r < R) *(uint4 *)(sm + r * ROWB + 16 * c) = v[i];
        }
        __syncthreads();
    } else {
        if (tid == 0) mb_expect(mb, (unsigned)(R * ROWB));
        __syncthreads(); /* the expectation before any completion */
        if (MODE == BULK1 && w == 0)
            for (int r = lane; r < R; r += 32) bulk(s0 + r * ROWB, buf + (size_t)ri[r] * ROWB, ROWB, mb);
        if (MODE == BULKT)
            for (int r = tid; r < R; r += blockDim.x) bulk(s0 + r * ROWB, buf + (size_t)ri[r] * ROWB, ROWB, mb);
        if (MODE == BULK2 && w == 0)
            for (int k = lane; k < 2 * R; k += 32)
                bulk(s0 + k * (ROWB / 2), buf + (size_t)ri[k >> 1] * ROWB + (k & 1) * (ROWB / 2), ROWB / 2, mb);
        mb_wait(mb, 0);
        __syncthreads();
    }
    const long long t1 = clock64();
    if (tid == 0) cyc[blockIdx.x] = t1 - t0, cyc[256 + blockIdx.x] = ti ? ti - t0 : 0;
    int x = 0;
    for (int i = tid; i < R * ROWB / 4; i += blockDim.x) x ^= ((const int *)sm)[i];
    if (x == 0x7fffffff) *sink = x; /* keep the copies */
}

__global__ void k_flush(int4 *p, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = make_int4((int)i, 1, 2, 3);
}

int main(void)
{
    const size_t nrows = (size_t)1 << 20, fl = (size_t)256 << 20;
    unsigned char *buf;
    int4 *flush;
    int *rows_d, *sink;
    long long *cyc_d;
    CKE(cudaMalloc(&buf, nrows * ROWB));
    CKE(cudaMemset(buf, 1, nrows * ROWB));
    CKE(cudaMalloc(&flush, fl));
    CKE(cudaMalloc(&rows_d, 256 * MAXR * sizeof(int)));
    CKE(cudaMalloc(&cyc_d, 512 * sizeof(long long)));
    CKE(cudaMalloc(&sink, sizeof(int)));
    void (*kern[NMODE])(const unsigned char *, const int *, int, int, long long *, int *) = {
        k_gather<CP16>, k_gather<CPZ>, k_gather<BULK1>, k_gather<BULKT>, k_gather<BULK2>, k_gather<LDG>};
    for (int m = 0; m < NMODE; m++) CKE(cudaFuncSetAttribute(kern[m], cudaFuncAttributeMaxDynamicSharedMemorySize, MAXR * ROWB));
    cudaDeviceProp pr;
    CKE(cudaGetDeviceProperties(&pr, 0));
    int khz = 0;
    CKE(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    printf("# %s, %d SMs, clock %d kHz; cycles from a block's first issue to its rows in shared memory\n", pr.name,
           pr.multiProcessorCount, khz);
    printf("%-6s %5s %4s %3s %-5s %10s %10s %9s %10s\n", "mode", "blocks", "rows", "dup", "L2", "max_cyc", "mean_cyc",
           "B/clk/blk", "issue_cyc");
    srand(1);
    /* blocks, rows a block, blocks reading the same rows (k_attn_one: its four head groups' blocks of a part) */
    const int cfg[][3] = {{1, 80, 1}, {32, 80, 1}, {32, 80, 4}, {64, 40, 1}, {64, 40, 4}, {32, 40, 1}, {128, 80, 1}};
    for (auto &c : cfg) {
        const int G = c[0], R = c[1], dup = c[2];
        for (int warm = 0; warm < 2; warm++)
            for (int m = 0; m < NMODE; m++) {
                std::vector<double> mx, mean, iss;
                for (int rep = 0; rep < 21; rep++) {
                    std::vector<int> rows((size_t)G * R);
                    for (auto &x : rows) x = (int)(((unsigned)rand() * 2654435761u) % nrows);
                    CKE(cudaMemcpy(rows_d, rows.data(), rows.size() * sizeof(int), cudaMemcpyHostToDevice));
                    k_flush<<<528, 256>>>(flush, fl / sizeof(int4));
                    if (warm) kern[m]<<<G, 256, R * ROWB>>>(buf, rows_d, R, dup, cyc_d, sink);
                    kern[m]<<<G, 256, R * ROWB>>>(buf, rows_d, R, dup, cyc_d, sink);
                    CKE(cudaGetLastError());
                    std::vector<long long> cy(512);
                    CKE(cudaMemcpy(cy.data(), cyc_d, 512 * sizeof(long long), cudaMemcpyDeviceToHost));
                    double s = 0, x = 0, si = 0;
                    for (int i = 0; i < G; i++) s += (double)cy[i], x = std::max(x, (double)cy[i]), si += (double)cy[256 + i];
                    mx.push_back(x), mean.push_back(s / G), iss.push_back(si / G);
                }
                std::sort(mx.begin(), mx.end()), std::sort(mean.begin(), mean.end()), std::sort(iss.begin(), iss.end());
                printf("%-6s %5d %4d %3d %-5s %10.0f %10.0f %9.1f %10.0f\n", mode_name[m], G, R, dup, warm ? "warm" : "cold",
                       mx[mx.size() / 2], mean[mean.size() / 2], R * ROWB / mean[mean.size() / 2], iss[iss.size() / 2]);
            }
    }
    return 0;
}
