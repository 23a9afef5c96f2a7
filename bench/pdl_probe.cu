/*
 * pdl_probe.cu - how early a kernel two programmatic (PDL) launches behind another starts: s75's lead that wo_a's
 * k_mma_fp8s starts only when k_attn_one ends, 6 us after its own pack (k_mma_pack, launched under PDL during the
 * attention) starts, where every k_wg8 starts under its pack even while the pack's predecessor still runs.
 * Standalone (from the repository root):
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a bench/pdl_probe.cu -o pdl_probe
 *   ./pdl_probe
 *
 * The chain, on one stream, each launch with programmatic stream serialization:
 *   A  the attention's stand-in: 64 blocks of 512 threads, 96 KB of shared memory each, in clusters of CL (1: no
 *      cluster), busy for 10 us after triggering its dependents at its start (k_attn_one triggers early); or one
 *      such block (k_rmsnorm's and k_route's one-block shape: wq_b's k_wg8 starts under k_rmsnorm, the experts'
 *      k_moe16 not under k_route);
 *   B  the pack's stand-in: 256 blocks of 256 threads; triggers at its start, then griddepcontrol.wait;
 *   C  the linear's stand-in: 1,024 one-warp blocks with 34 KB of shared memory each (k_mma_fp8s's shape); its
 *      first block's start is recorded, then griddepcontrol.wait.
 * Variants: A's cluster (none, 2, 8); Z: a busy kernel before A, so that A too is launched early and waits (the
 * router's case) or none; FORK: after A an event recorded on the stream and waited on by a second
 * stream that runs a small kernel under PDL, as forward.c's kv_store fork (joined at the end), or none; the three
 * launches issued on streams, or captured once into a CUDA graph and replayed (decode's form).
 * Printed per variant, medians of 50 repeats from %globaltimer: B's first start after A's first start, C's first
 * start against A's last end (negative: C began while A ran) and against B's first start. If C starts with B only
 * where A has no cluster, or only without the fork, that is the cause s75 is after.
 * Result (s76, an H100, bench/results/2026-12-06-s75/pdl/pdl.txt): C started 0.2-1.0 us after A's end in every
 * variant - PDL starts a kernel early only behind the kernel launched just before it.
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe.cuh"

/* [0] A's first start, [1] A's last end, [2] B's first start, [3] C's first start (ns) */
__device__ unsigned long long t_rec[4];

__device__ __forceinline__ unsigned long long gtime(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void k_init(void)
{
    t_rec[0] = t_rec[2] = t_rec[3] = ~0ull;
    t_rec[1] = 0;
}

__global__ void k_a(unsigned busy_ns)
{
    extern __shared__ unsigned char a_smem[];
    const unsigned long long t0 = gtime();
    if (threadIdx.x == 0) atomicMin(&t_rec[0], t0);
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
    volatile unsigned char *v = a_smem;
    unsigned x = 0;
    const unsigned long long t1 = gtime(); /* busy from the wait on (with Z, A waits for it first) */
    while (gtime() - t1 < busy_ns) x += v[threadIdx.x];
    if (x == 0xffffffffu) v[0] = 1; /* (keeps the loop) */
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(&t_rec[1], gtime());
}

/* Z: a kernel before A (A then launched early too, waiting on Z: k_route's case, launched under the gate) */
__global__ void k_z(unsigned busy_ns)
{
    const unsigned long long t0 = gtime();
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
    while (gtime() - t0 < busy_ns) {
    }
}

__global__ void k_b(void)
{
    if (threadIdx.x == 0) atomicMin(&t_rec[2], gtime());
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
}

__global__ void k_c(void)
{
    extern __shared__ unsigned char c_smem[];
    if (threadIdx.x == 0) atomicMin(&t_rec[3], gtime());
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (threadIdx.x == 0) c_smem[0] = 1;
}

__global__ void k_side(void)
{
    asm volatile("griddepcontrol.wait;" ::: "memory");
}

template <class... Args>
static void launch(void (*k)(Args...), int grid, int block, size_t smem, cudaStream_t st, int cluster, Args... args)
{
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[2];
    int na = 0;
    at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[na++].val.programmaticStreamSerializationAllowed = 1;
    if (cluster > 1) {
        at[na].id = cudaLaunchAttributeClusterDimension;
        at[na].val.clusterDim.x = (unsigned)cluster;
        at[na].val.clusterDim.y = at[na].val.clusterDim.z = 1;
        na++;
    }
    cfg.gridDim = dim3((unsigned)grid);
    cfg.blockDim = dim3((unsigned)block);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cfg.attrs = at;
    cfg.numAttrs = (unsigned)na;
    CKE(cudaLaunchKernelEx(&cfg, k, args...));
}

static const size_t A_SMEM = 96 << 10, C_SMEM = 34 << 10;

/* the chain A -> [fork] -> B -> C on s0 (the fork's kernel on s1, joined back after C) */
static void chain(cudaStream_t s0, cudaStream_t s1, cudaEvent_t fork, cudaEvent_t join, int ga, int cl, bool fk, bool z)
{
    if (z) launch(k_z, 64, 256, 0, s0, 1, 8000u);
    launch(k_a, ga, 512, A_SMEM, s0, cl, 10000u);
    if (fk) {
        CKE(cudaEventRecord(fork, s0));
        CKE(cudaStreamWaitEvent(s1, fork, 0));
        launch(k_side, 8, 128, 0, s1, 1);
    }
    launch(k_b, 256, 256, 0, s0, 1);
    launch(k_c, 1024, 32, C_SMEM, s0, 1);
    if (fk) {
        CKE(cudaEventRecord(join, s1));
        CKE(cudaStreamWaitEvent(s0, join, 0));
    }
}

static double med(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(void)
{
    CKE(cudaFuncSetAttribute(k_a, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)A_SMEM));
    CKE(cudaFuncSetAttribute(k_c, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C_SMEM));
    cudaDeviceProp p;
    CKE(cudaGetDeviceProperties(&p, 0));
    printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
    cudaStream_t s0, s1;
    CKE(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    CKE(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    cudaEvent_t fork, join;
    CKE(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CKE(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    printf("%-6s %-12s %-5s %-6s %14s %16s %16s\n", "mode", "A (blocks)", "fork", "Z", "B - A start", "C - A end",
           "C - B start");
    for (int graph = 0; graph < 2; graph++)
        for (int ai = 0; ai < 4; ai++)
            for (int fz = 0; fz < 4; fz++) {
                const bool fk = fz & 1, z = fz >> 1;
                static const int acfg[4][2] = {{1, 1}, {64, 1}, {64, 2}, {64, 8}}; /* A's blocks, cluster */
                const int ga = acfg[ai][0], cl = acfg[ai][1];
                cudaGraphExec_t ge = nullptr;
                if (graph) {
                    cudaGraph_t g;
                    CKE(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
                    chain(s0, s1, fork, join, ga, cl, fk, z);
                    CKE(cudaStreamEndCapture(s0, &g));
                    CKE(cudaGraphInstantiate(&ge, g, 0));
                    CKE(cudaGraphDestroy(g));
                }
                std::vector<double> ba, ca, cb;
                for (int r = 0; r < 55; r++) {
                    k_init<<<1, 1, 0, s0>>>();
                    CKE(cudaStreamSynchronize(s0));
                    if (graph)
                        CKE(cudaGraphLaunch(ge, s0));
                    else
                        chain(s0, s1, fork, join, ga, cl, fk, z);
                    CKE(cudaStreamSynchronize(s0));
                    unsigned long long t[4];
                    CKE(cudaMemcpyFromSymbol(t, t_rec, sizeof t));
                    if (r < 5) continue; /* warm-up */
                    ba.push_back((double)(long long)(t[2] - t[0]) / 1e3);
                    ca.push_back((double)((long long)t[3] - (long long)t[1]) / 1e3);
                    cb.push_back((double)((long long)t[3] - (long long)t[2]) / 1e3);
                }
                if (ge) CKE(cudaGraphExecDestroy(ge));
                char an[24];
                if (cl > 1)
                    snprintf(an, sizeof an, "%d, cl %d", ga, cl);
                else
                    snprintf(an, sizeof an, "%d, no cl", ga);
                printf("%-6s %-12s %-5s %-6s %11.2f us %13.2f us %13.2f us\n", graph ? "graph" : "stream", an,
                       fk ? "yes" : "no", z ? "before" : "none", med(ba), med(ca), med(cb));
            }
    return 0;
}
