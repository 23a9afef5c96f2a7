/*
 * sample.cu - next-token sampling on the GPU (the request is a
 * dsv4_sample_req, engine/sample.h): only the picked token ids come back.
 *
 * A row's argmax runs over up to SMP_NB blocks (the blocks resident at once
 * shared among the rows); then a row that draws is sampled by the last of
 * them to finish, or, launched cooperatively (k_sample<true>), by all of
 * them, each over its part, their integer sums exchanged at grid syncs.
 * Greedy is an argmax (NaN ignored, lowest id on ties).
 * Otherwise z_i = exp((l_i - max) / T) as the host computes it, each
 * token's mass is z_i in 2^-40 fixed point (integer sums: the same in any
 * order, so the pick is deterministic), and the kept set is the host
 * sampler's: the top_k tokens, then the smallest prefix holding top_p of
 * their mass, then z >= min_p, in (z descending, id ascending) order. The
 * boundary of that prefix is found by radix selection on z's bits (three
 * 10-bit levels of count and mass histograms), ties at the boundary value
 * going to the lower ids. The draw walks the kept tokens in id order.
 * A sampler made for fewer ids than the model has (the server's, sized to
 * the tokenizer) sees only that prefix of the row.
 *
 * Every pass over the row loads SMP_U of a thread's values (clamped indices,
 * no branch around the loads) before it uses the first of them, then uses
 * them in the order the pass has always taken: one load waited for per
 * element made the greedy pick 55 us at Flash's vocabulary.
 */
#include <cooperative_groups.h>

#include "backend/cuda/common.cuh"

#define SMP_THREADS 1024
#define SMP_BINS 1024
#define FIX_ONE 1099511627776.0 /* 2^40 */
#define SMP_U 8                   /* loads in flight per thread and pass */
static_assert(SMP_THREADS == SMP_BINS, "select_prefix: a thread per bin");

/* f(i, x[i]) for i = i0, i0 + step, ... while i < n, in that order, the values loaded SMP_U at a time
 * (indices past n - 1 clamped to it: no branch around the loads), until f returns true (stop). */
template <typename F> __device__ __forceinline__ void smp_walk(const float *x, int i0, int step, int n, F f)
{
    for (; i0 < n; i0 += SMP_U * step) {
        float v[SMP_U];
#pragma unroll
        for (int u = 0; u < SMP_U; u++) {
            const int i = i0 + u * step;
            v[u] = x[i < n ? i : n - 1];
        }
#pragma unroll
        for (int u = 0; u < SMP_U; u++)
            if (i0 + u * step < n && f(i0 + u * step, v[u])) return;
    }
}

struct smp_req {
    float temperature, top_p, min_p;
    int top_k, vocab;
    double u;
    int row;
};

__device__ __forceinline__ uint64_t fix_of(float z) { return (uint64_t)((double)z * FIX_ONE); }

__device__ __forceinline__ uint32_t bits_of(float z) { return __float_as_uint(z); }

/* The boundary of a kept prefix: tokens with bits > v, and the first `ties`
 * (by id) of those with bits == v. all: every token. */
struct boundary {
    bool all;
    uint32_t v;
    uint64_t ties;
    uint64_t mass; /* of the prefix */
};

/* The shortest prefix (z descending, id ascending) whose count reaches
 * `count` (by_mass false) or whose mass reaches `mass` (by_mass true). */
/* The histogram of level `level` over the values whose bits above `hi` are prefix's, added into hc / hm (zero on
 * entry) by the block's threads over ids [i0, i1), strided. */
__device__ __forceinline__ void smp_hist(const float *z, int i0, int i1, uint32_t prefix, int hi, int level,
                                         uint32_t *hc, uint64_t *hm)
{
    smp_walk(z, i0 + (int)threadIdx.x, blockDim.x, i1, [&](int, float q) {
        const uint32_t b = bits_of(q);
        if (hi < 32 && (b >> hi) != (prefix >> hi)) return false;
        const int bin = (int)((b >> level) & (SMP_BINS - 1));
        atomicAdd(&hc[bin], 1u);
        atomicAdd((unsigned long long *)&hm[bin], (unsigned long long)fix_of(q));
        return false;
    });
}

/* build(prefix, hi, level, active) leaves the row's histogram of the level in hc / hm, the block synced: one
 * block walking the row, or (COOP) the row's blocks each its part, exchanged through global memory - a grid
 * sync each call, so with COOP every level runs in every block (use false or nothing found: no work). */
template <bool COOP, typename H>
__device__ static boundary select_prefix(bool use, bool by_mass, uint64_t target, uint32_t *hc, uint64_t *hm,
                                         uint64_t *sh3, H build)
{
    __shared__ uint32_t s_prefix;
    __shared__ uint64_t s_bc, s_bm;
    __shared__ int s_found, s_hit;
    if (threadIdx.x == 0) {
        s_prefix = 0;
        s_bc = 0;
        s_bm = 0;
        s_found = use;
    }
    __syncthreads();
    for (int level = 20; level >= 0; level -= 10) {
        const bool active = s_found;
        if (!COOP && !active) break;
        for (int b = threadIdx.x; b < SMP_BINS; b += blockDim.x) {
            hc[b] = 0;
            hm[b] = 0;
        }
        __syncthreads();
        build(s_prefix, level + 10, level, active);
        if (!active) {
            __syncthreads();
            continue;
        }
        /* the first bin from the top whose running count (mass) reaches the target: thread j holds bin
         * SMP_BINS - 1 - j and the sums of the bins above it by block scans (integers: the serial walk's
         * sums exactly) */
        const int bin = SMP_BINS - 1 - (int)threadIdx.x;
        const uint64_t c0 = s_bc, m0 = s_bm, own_c = hc[bin], own_m = hm[bin];
        uint64_t tc, tm;
        const uint64_t ic = block_scan_incl<uint64_t>(own_c, sh3 + 4, &tc), im = block_scan_incl<uint64_t>(own_m, sh3 + 4, &tm);
        const uint64_t c = c0 + ic - own_c, m = m0 + im - own_m;
        const bool reach = by_mass ? m + own_m >= target : c + own_c >= target;
        const bool before = by_mass ? m >= target : c >= target; /* reached above this bin already */
        if (threadIdx.x == 0) s_hit = 0;
        __syncthreads();
        if (reach && !before) {
            s_hit = 1;
            s_prefix |= (uint32_t)bin << level;
            s_bc = c;
            s_bm = m;
            if (level == 0) {
                /* the boundary value itself: how many of its ties are needed */
                const uint64_t q = own_c ? own_m / own_c : 0;
                uint64_t ties;
                if (by_mass) ties = q ? (target - m + q - 1) / q : own_c;
                else ties = target - c;
                if (ties > own_c) ties = own_c;
                sh3[0] = ties;
                sh3[1] = m + ties * q;
            }
        }
        __syncthreads();
        if (!s_hit) s_found = 0;
        __syncthreads();
    }
    boundary B;
    B.all = !s_found;
    B.v = s_prefix;
    B.ties = B.all ? 0 : sh3[0];
    B.mass = B.all ? 0 : sh3[1];
    __syncthreads();
    return B;
}

/* Whether a token of unnormalised probability q is kept; *tie_rank counts
 * the boundary ties met so far in id order. */
__device__ __forceinline__ bool kept(float q, float floor_z, const boundary &B, uint64_t *tie_rank)
{
    if (B.all) return q >= floor_z;
    const uint32_t b = bits_of(q);
    const bool in = b > B.v || (b == B.v && *tie_rank < B.ties);
    *tie_rank += b == B.v;
    return in && q >= floor_z;
}

/* The warp's largest (v, i) into every lane: the larger value, ties to the lower id; i < 0 is none. */
__device__ __forceinline__ void warp_argmax(float &v, int &i)
{
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, v, o);
        const int oi = __shfl_xor_sync(0xffffffffu, i, o);
        if (oi >= 0 && (i < 0 || ov > v || (ov == v && oi < i))) {
            v = ov;
            i = oi;
        }
    }
}

/* The argmax's parts: a row's greedy pass split over gridDim.x blocks (SMP_NB at most), each a contiguous
 * run of quads; the last block to finish (a counter a row, left at zero) reduces the parts and samples. */
#define SMP_NB 32
struct __align__(8) smp_part {
    float v;
    int i;
};

/* The cooperative launch's exchange (k_sample<true>): per block (row r's block c is r * nb + c) each level's
 * histogram, two buffers alternating, and its mass, tie count and kept mass; whether some row selects by count
 * (topk) or by mass (topp): every block runs those levels, a grid sync each. */
struct smp_coop {
    uint32_t *hc;
    uint64_t *hm;
    uint64_t *vm, *vt, *vk;
    int topk, topp;
};

/* A value exchanged among a row's blocks: this block's (*all on entry) to v[blk], a grid sync, then row r's
 * blocks' values v[r * nb + k] read back - their sum before block c returned, all of them in *all. */
__device__ __forceinline__ uint64_t coop_exchange(uint64_t *v, int blk, int row0, int nb, int c, uint64_t *all)
{
    if (threadIdx.x == 0) v[blk] = *all;
    cooperative_groups::this_grid().sync();
    uint64_t before = 0, sum = 0;
    for (int k = 0; k < nb; k++) {
        const uint64_t x = __ldcg(v + row0 + k);
        if (k < c) before += x;
        sum += x;
    }
    *all = sum;
    return before;
}

/* COOP: launched cooperatively (every block resident), the row's blocks share the sampling after the argmax as
 * they share the argmax: each walks its part of the row, the parts' integer sums exchanged through global memory
 * at a grid sync (the same sums as one block's: the same picks); without, the row's last block does it alone
 * (one SM walking the row five to nine times: 86 us at temperature 1, 330 with top_p, s37). */
template <bool COOP>
__global__ void __launch_bounds__(SMP_THREADS) k_sample(const float *logits, int ld, const smp_req *reqs, float *zbuf,
                                                        int32_t *tok, smp_part *parts, unsigned *cnt, smp_coop co)
{
    __shared__ uint32_t hc[SMP_BINS];
    __shared__ uint64_t hm[SMP_BINS];
    __shared__ uint64_t sh[32];
    __shared__ uint64_t sh3[4 + 32]; /* select_prefix's results, then its block scans' scratch */
    __shared__ float s_bv;
    __shared__ int s_bi;
    const int row = blockIdx.y, nb = gridDim.x, c = blockIdx.x;
    /* the request (mapped host memory) in one read across the bus: five lanes an 8-byte word each, not
     * every thread of every block the struct's fields apart */
    __shared__ smp_req s_req;
    static_assert(sizeof(smp_req) % 8 == 0 && sizeof(smp_req) / 8 <= 32, "smp_req: 8-byte words, one warp");
    if (threadIdx.x < sizeof(smp_req) / 8)
        reinterpret_cast<long long *>(&s_req)[threadIdx.x] =
            reinterpret_cast<const long long *>(reqs + row)[threadIdx.x];
    __syncthreads();
    const smp_req R = s_req;
    const int V = R.vocab; /* the sampler's ids: a prefix of the row */
    const float *l = logits + (size_t)R.row * ld;
    float *z = zbuf + (size_t)row * ld;

    /* argmax, NaN ignored, lowest id on ties (each thread meets its ids in ascending order, so any split
     * of the row gives the same pick) */
    float bv = -INFINITY;
    int bi = -1;
    const auto arg = [&](int i, float x) {
        const float v = isnan(x) ? -INFINITY : x;
        if (bi < 0 || v > bv) {
            bv = v;
            bi = i;
        }
        return false;
    };
    if ((ld & 3) == 0 && ((uintptr_t)logits & 15) == 0) {
        /* 16-byte loads, block c a contiguous run of quads (8 floats a thread in one block: 17.6 us for
         * Flash's 129,280 ids; 8 quads in one block: 11.8 - one block's loads are not all that bounds it,
         * so the run is split over blocks) */
        const float4 *l4 = (const float4 *)l;
        const int V4 = V >> 2, q = (V4 + nb - 1) / nb, j0 = c * q, j1 = j0 + q < V4 ? j0 + q : V4;
        for (int i0 = j0 + (int)threadIdx.x; i0 < j1; i0 += SMP_U * blockDim.x) {
            float4 v[SMP_U];
#pragma unroll
            for (int u = 0; u < SMP_U; u++) {
                const int j = i0 + u * (int)blockDim.x;
                v[u] = l4[j < j1 ? j : j1 - 1];
            }
#pragma unroll
            for (int u = 0; u < SMP_U; u++) {
                const int j = i0 + u * (int)blockDim.x;
                if (j < j1) {
                    arg(4 * j, v[u].x);
                    arg(4 * j + 1, v[u].y);
                    arg(4 * j + 2, v[u].z);
                    arg(4 * j + 3, v[u].w);
                }
            }
        }
        const int i = 4 * V4 + (int)threadIdx.x; /* the last V % 4 ids: above every quad's, the last block's */
        if (c == nb - 1 && i < V) arg(i, l[i]);
    } else if (c == 0) {
        smp_walk(l, threadIdx.x, blockDim.x, V, arg); /* (launched with one block a row) */
    }
    warp_argmax(bv, bi);
    __shared__ float wv[32];
    __shared__ int wi[32];
    if ((threadIdx.x & 31) == 0) {
        wv[threadIdx.x >> 5] = bv;
        wi[threadIdx.x >> 5] = bi;
    }
    __syncthreads();
    __shared__ int s_last;
    if (threadIdx.x == 0) {
        float v = wv[0];
        int id = wi[0];
        for (int w = 1; w < SMP_THREADS / 32; w++)
            if (wi[w] >= 0 && (id < 0 || wv[w] > v || (wv[w] == v && wi[w] < id))) {
                v = wv[w];
                id = wi[w];
            }
        s_bv = v;
        s_bi = id;
        s_last = 1;
        if (nb > 1) {
            parts[row * SMP_NB + c] = smp_part{v, id};
            if (!COOP) {
                __threadfence(); /* the part before the count: the last block reads every part */
                s_last = atomicAdd(&cnt[row], 1u) == (unsigned)nb - 1;
            }
        }
    }
    __syncthreads();
    if (COOP) cooperative_groups::this_grid().sync(); /* every block reads every part of its row */
    if (!s_last) return;
    if (nb > 1) {
        /* the last block: every part (in block order; ties to the lower id), the counter back to zero */
        if (threadIdx.x < 32) {
            __threadfence();
            const int w = threadIdx.x;
            float v = -INFINITY;
            int id = -1;
            if (w < nb) {
                /* through L2 (ld.cg): other blocks' stores, not this SM's L1 */
                const long long raw = __ldcg(reinterpret_cast<const long long *>(parts + row * SMP_NB + w));
                smp_part p;
                memcpy(&p, &raw, sizeof p);
                v = p.v, id = p.i;
            }
            warp_argmax(v, id);
            if (w == 0) {
                s_bv = v;
                s_bi = id;
                if (!COOP) cnt[row] = 0;
            }
        }
        __syncthreads();
    }
    const float zmax = s_bv;
    const bool samp = isfinite(zmax) && !(R.temperature <= 0 || R.top_k == 1);
    if (!samp) {
        if (threadIdx.x == 0 && (!COOP || c == 0)) tok[row] = isfinite(zmax) ? s_bi : -1;
        if (!COOP) return; /* (COOP: every block to every grid sync) */
    }
    /* the ids this block walks: the row (one block), or its part of the argmax's split (COOP: quads, the last
     * block the last V % 4 ids too) */
    const int nblk = (int)(gridDim.x * gridDim.y), blk = row * nb + c, row0 = row * nb;
    int ca = 0, ce = V;
    if (COOP) {
        const int V4 = V >> 2, qq = (V4 + nb - 1) / nb;
        ca = 4 * min(c * qq, V4);
        ce = c == nb - 1 ? V : 4 * min(c * qq + qq, V4);
    }
    /* unnormalised probabilities: the top token has exactly 1 */
    const float inv_t = samp ? 1.0f / R.temperature : 1.0f;
    uint64_t qs = 0;
    if (samp)
        smp_walk(l, ca + (int)threadIdx.x, blockDim.x, ce, [&](int i, float x) {
            const float q = isnan(x) ? 0.0f : expf((x - zmax) * inv_t);
            z[i] = q;
            qs += fix_of(q);
            return false;
        });
    uint64_t total;
    block_scan_incl<uint64_t>(qs, sh, &total);
    if (COOP) coop_exchange(co.vm, blk, row0, nb, c, &total);

    int lvl = 0;
    const auto build = [&](uint32_t prefix, int hi, int level, bool active) {
        if (active) smp_hist(z, ca, ce, prefix, hi, level, hc, hm);
        __syncthreads();
        if (COOP) {
            const size_t base = (size_t)(lvl++ & 1) * nblk;
            co.hc[(base + blk) * SMP_BINS + threadIdx.x] = hc[threadIdx.x];
            co.hm[(base + blk) * SMP_BINS + threadIdx.x] = hm[threadIdx.x];
            cooperative_groups::this_grid().sync();
            uint32_t cc = 0;
            uint64_t mm = 0;
            for (int k = 0; k < nb; k++) {
                cc += __ldcg(co.hc + (base + row0 + k) * SMP_BINS + threadIdx.x);
                mm += __ldcg(co.hm + (base + row0 + k) * SMP_BINS + threadIdx.x);
            }
            hc[threadIdx.x] = cc;
            hm[threadIdx.x] = mm;
            __syncthreads();
        }
    };
    boundary B;
    B.all = true;
    if (COOP ? co.topk : R.top_k > 0)
        B = select_prefix<COOP>(samp && R.top_k > 0, false, (uint64_t)R.top_k, hc, hm, sh3, build);
    if (COOP ? co.topp : R.top_p < 1.0f) {
        const uint64_t kept = R.top_k > 0 && !B.all ? B.mass : total;
        uint64_t target = (uint64_t)ceil((double)R.top_p * (double)kept);
        if (target < 1) target = 1;
        const boundary P = select_prefix<COOP>(samp && R.top_p < 1.0f, true, target, hc, hm, sh3, build);
        if (!P.all && (B.all || P.v > B.v || (P.v == B.v && P.ties < B.ties))) B = P;
    }
    const float floor_z = R.min_p > 0 ? R.min_p : 0.0f;

    /* each thread walks a contiguous run of ids: ties at the boundary are
     * ranked by id through a scan of their counts (COOP: and the blocks' before it) */
    const int C = (ce - ca + SMP_THREADS - 1) / SMP_THREADS;
    const int i0 = ca + (int)threadIdx.x * C, i1 = i0 + C < ce ? i0 + C : ce;
    uint64_t nt = 0;
    if (samp && !B.all)
        smp_walk(z, i0, 1, i1, [&](int, float q) {
            nt += bits_of(q) == B.v;
            return false;
        });
    uint64_t tot_ties;
    uint64_t tie0 = block_scan_incl<uint64_t>(nt, sh, &tot_ties) - nt;
    if (COOP) tie0 += coop_exchange(co.vt, blk, row0, nb, c, &tot_ties);
    uint64_t km = 0;
    if (samp) {
        uint64_t tr = tie0;
        smp_walk(z, i0, 1, i1, [&](int, float q) {
            if (kept(q, floor_z, B, &tr)) km += fix_of(q);
            return false;
        });
    }
    uint64_t mass;
    uint64_t m0 = block_scan_incl<uint64_t>(km, sh, &mass) - km;
    if (COOP) {
        m0 += coop_exchange(co.vk, blk, row0, nb, c, &mass);
        if (!samp) return;
    }
    const double u = R.u < 0 ? 0 : R.u;
    uint64_t target = (uint64_t)(u * (double)mass);
    if (target >= mass) target = mass - 1;
    /* fallback: the top token (no kept mass); else the one thread whose run holds the target picks */
    if (!COOP || mass == 0) {
        if (threadIdx.x == 0 && (!COOP || c == 0)) tok[row] = s_bi;
        __syncthreads();
    }
    if (km && target >= m0 && target < m0 + km) {
        uint64_t acc = m0, tr = tie0;
        int pick = -1;
        smp_walk(z, i0, 1, i1, [&](int i, float q) {
            if (kept(q, floor_z, B, &tr) && (acc += fix_of(q)) > target) pick = i;
            return pick >= 0;
        });
        if (pick >= 0) tok[row] = pick;
    }
}

/* k_sample's blocks resident at once on this GPU (0: no limit, DSV4_SMP_WAVE=0: the split of v56, 32 blocks a
 * row whatever the rows) */
static int smp_wave_blocks(void)
{
    static int v = -1;
    if (v < 0) {
        const char *env = getenv("DSV4_SMP_WAVE");
        int dev = 0, sms = 0, per = 0;
        v = 0;
        if (!(env && !strcmp(env, "0")) && cudaGetDevice(&dev) == cudaSuccess &&
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess &&
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k_sample<true>, SMP_THREADS, 0) == cudaSuccess)
            v = sms * (per > 0 ? per : 1);
        (void)cudaGetLastError();
    }
    return v;
}

/* The slot's picks: after its requests in the slot's buffer */
static int32_t *smp_picks(void *base, int cap)
{
    return (int32_t *)((smp_req *)base + cap);
}

void cuda_sample_launch(dsv4_backend *be, const float *logits, int V, int n, const int *rows,
                        const dsv4_sample_req *req, int slot)
{
    cuda_impl *im = impl_of(be);
    if (n <= 0) return;
    /* The requests and the picks in mapped pinned memory: k_sample reads the one and writes the other
     * across the bus, with no copy before or after it (each copy was an operation of its own on the
     * stream, ~2-4 us of a step's latency apiece). A slot's buffer is only replaced once its picks were
     * collected (the caller's contract); the stream may still read the other slots'. */
    if (im->smp_cap[slot] < n) {
        CK(cudaStreamSynchronize(im->stream));
        cudaFreeHost(im->smp_pin[slot]);
        im->smp_cap[slot] = n + 16;
        const size_t bytes = (size_t)im->smp_cap[slot] * (sizeof(smp_req) + sizeof(int32_t));
        CK(cudaHostAlloc(&im->smp_pin[slot], bytes, cudaHostAllocMapped));
        CK(cudaHostGetDevicePointer(&im->d_smp[slot], im->smp_pin[slot], 0));
        if (!im->smp_ev[slot]) CK(cudaEventCreateWithFlags(&im->smp_ev[slot], cudaEventDisableTiming));
    }
    if (im->smp_parts_cap < n) { /* the argmax's parts and a counter a row (zero; each launch leaves them zero) */
        CK(cudaStreamSynchronize(im->stream));
        cudaFree(im->d_smp_parts);
        im->smp_parts_cap = n + 16;
        const size_t pb = (size_t)im->smp_parts_cap * (SMP_NB * sizeof(smp_part) + sizeof(unsigned));
        CK(cudaMalloc(&im->d_smp_parts, pb));
        CK(cudaMemset(im->d_smp_parts, 0, pb));
    }
    smp_req *hr = (smp_req *)im->smp_pin[slot];
    for (int i = 0; i < n; i++) {
        hr[i].temperature = req[i].temperature;
        hr[i].top_p = req[i].top_p;
        hr[i].min_p = req[i].min_p;
        hr[i].top_k = req[i].top_k;
        hr[i].vocab = req[i].vocab > 0 && req[i].vocab < V ? req[i].vocab : V;
        hr[i].u = req[i].u;
        hr[i].row = rows[i];
    }
    smp_req *dr = (smp_req *)im->d_smp[slot];
    int32_t *dt = smp_picks(im->d_smp[slot], im->smp_cap[slot]);
    float *zbuf = (float *)cuda_scratch(be, CS_SAMPLE, (size_t)n * V * sizeof(float));
    /* the greedy pass over blocks of a quad a thread (16-byte loads only: else one block a row), in one wave:
     * the blocks that fit the GPU at once shared among the rows (k_sample's 1,024 threads of 64 registers hold
     * an SM each: 32 blocks a row for 16 rows were 4 waves, 37 us) - any split of a row picks the same id */
    const int q4 = (V / 4 + SMP_THREADS - 1) / SMP_THREADS, wave = smp_wave_blocks();
    int nb = (V & 3) == 0 && ((uintptr_t)logits & 15) == 0 ? (q4 < 1 ? 1 : q4 > SMP_NB ? SMP_NB : q4) : 1;
    if (wave > 0 && nb > 1 && (int64_t)nb * n > wave) nb = wave / n > 1 ? wave / n : 1;
    smp_part *parts = (smp_part *)im->d_smp_parts;
    unsigned *cnt = (unsigned *)(parts + (size_t)im->smp_parts_cap * SMP_NB);
    /* rows that draw (a temperature, not top_k 1): the row's blocks share the draw too, launched cooperatively
     * (their blocks are resident at once: one wave; DSV4_SMP_COOP=0: the row's last block alone) */
    smp_coop co = {};
    bool draw = false;
    for (int i = 0; i < n; i++) {
        const bool d = hr[i].temperature > 0 && hr[i].top_k != 1;
        draw |= d;
        co.topk |= d && hr[i].top_k > 0;
        co.topp |= d && hr[i].top_p < 1.0f;
    }
    static int coop_on = -1;
    if (coop_on < 0) {
        const char *env = getenv("DSV4_SMP_COOP");
        int dev = 0, ok = 0;
        coop_on = !(env && !strcmp(env, "0")) && cudaGetDevice(&dev) == cudaSuccess &&
                  cudaDeviceGetAttribute(&ok, cudaDevAttrCooperativeLaunch, dev) == cudaSuccess && ok;
    }
    if (draw && coop_on && nb > 1 && wave > 0 && (int64_t)nb * n <= wave) {
        if (im->smp_coop_cap < wave) {
            CK(cudaStreamSynchronize(im->stream));
            cudaFree(im->d_smp_coop);
            im->smp_coop_cap = wave;
            CK(cudaMalloc(&im->d_smp_coop, (size_t)wave * (2 * SMP_BINS * (sizeof(uint32_t) + sizeof(uint64_t)) +
                                                           3 * sizeof(uint64_t))));
        }
        co.hc = (uint32_t *)im->d_smp_coop;
        co.hm = (uint64_t *)(co.hc + (size_t)2 * wave * SMP_BINS);
        co.vm = co.hm + (size_t)2 * wave * SMP_BINS;
        co.vt = co.vm + wave;
        co.vk = co.vt + wave;
        const float *lg = logits;
        int ldv = V;
        void *args[] = {(void *)&lg, &ldv, &dr, &zbuf, &dt, &parts, &cnt, &co};
        CK(cudaLaunchCooperativeKernel((const void *)k_sample<true>, dim3((unsigned)nb, (unsigned)n), dim3(SMP_THREADS),
                                       args, 0, im->stream));
    } else {
        k_sample<false>
            <<<dim3((unsigned)nb, (unsigned)n), SMP_THREADS, 0, im->stream>>>(logits, V, dr, zbuf, dt, parts, cnt, co);
        CK_LAUNCH();
    }
    CK(cudaEventRecord(im->smp_ev[slot], im->stream));
}

void cuda_sample_wait(dsv4_backend *be, int slot, int n, int32_t *tok)
{
    cuda_impl *im = impl_of(be);
    if (n <= 0) return;
    CK(cudaEventSynchronize(im->smp_ev[slot])); /* the kernel's writes to host memory: done and visible */
    memcpy(tok, smp_picks(im->smp_pin[slot], im->smp_cap[slot]), (size_t)n * sizeof(int32_t));
}

void cuda_sample(dsv4_backend *be, const float *logits, int V, int n, const int *rows, const dsv4_sample_req *req,
                 int32_t *tok)
{
    cuda_sample_launch(be, logits, V, n, rows, req, SMP_SLOTS - 1);
    cuda_sample_wait(be, SMP_SLOTS - 1, n, tok);
}

__global__ void k_tok_feed(int32_t *tokens, const int32_t *feed, const int32_t *picks, int n)
{
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < n; t += gridDim.x * blockDim.x) {
        const int f = feed[t];
        if (f >= 0) {
            const int32_t v = picks[f];
            tokens[t] = v >= 0 ? v : 0; /* a failed pick: finish reports it; the step is only kept in bounds */
        }
    }
}

void cuda_feed_tokens(cuda_impl *im, int32_t *tokens, const int32_t *feed, int n, int slot)
{
    const int32_t *picks = smp_picks(im->d_smp[slot], im->smp_cap[slot]);
    k_tok_feed<<<(unsigned)((n + 255) / 256), 256, 0, im->stream>>>(tokens, feed, picks, n);
    CK_LAUNCH();
}
