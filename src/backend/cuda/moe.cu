/*
 * moe.cu - the router and the routed experts on the GPU (MODEL.md §3.7).
 *
 * The router runs one thread per token (sqrt-softplus scores, hash or
 * bias-corrected top-k, renormalisation, scaling). The experts run as three
 * passes over (token, slot) pairs - gate and up projections, SwiGLU times
 * the routing weight, down projection - into a per-slot buffer, then each
 * token sums its slots in ascending expert id, the CPU's fixed order. Expert
 * descriptors are uploaded once per layer and kept.
 */
#include "backend/cuda/rowdot.cuh"

#include <limits.h>
#include <string.h>

#define MOE_WARPS 8
#define MAX_E 1024

__device__ static float sqrt_softplus(float x) { return sqrtf(x > 20.0f ? x : log1pf(expf(x))); }

#ifdef ROUTE_TRACE
/* k_route's phases (a measurement: build with -DCMAKE_CUDA_FLAGS=-DROUTE_TRACE): for each of the first
 * ROUTE_TRACE_N tokens of the last launch, its warp's %globaltimer at entry, after griddepcontrol.wait, after the
 * scores (the loads consumed), after the rounds and at the end, and its SM; printed when the backend is
 * destroyed (cuda_route_trace_print), in us from token 0's entry. */
#define ROUTE_TRACE_N 64
struct route_trace_rec {
    unsigned long long t[5];
    unsigned sm;
};
__device__ route_trace_rec route_trace_buf[ROUTE_TRACE_N];
#define ROUTE_T(i, dep)                                                                                                \
    do {                                                                                                               \
        if (lane == 0 && t < ROUTE_TRACE_N) route_trace_buf[t].t[i] = dev_ns(dep);                                     \
    } while (0)
#else
#define ROUTE_T(i, dep) (void)0
#endif
void cuda_route_trace_print(void)
{
#ifdef ROUTE_TRACE
    static route_trace_rec h[ROUTE_TRACE_N];
    if (cudaMemcpyFromSymbol(h, route_trace_buf, sizeof h) != cudaSuccess) return;
    /* token 0's warp runs in every launch: records entered before it are an earlier launch's (a prefill's
     * tokens past the last launch's n), and so is a stamp before its own record's entry */
    const unsigned long long t0 = h[0].t[0];
    for (int i = 0; i < ROUTE_TRACE_N; i++) {
        if (!h[i].t[0] || h[i].t[0] < t0) continue;
        fprintf(stderr, "kroutetrace %d sm %u", i, h[i].sm);
        for (int j = 0; j < 5; j++) /* -1: not reached (a hash layer has no scores or rounds; a warp past n) */
            fprintf(stderr, " %.3f", h[i].t[j] >= h[i].t[0] ? (double)(h[i].t[j] - t0) / 1e3 : -1.0);
        fprintf(stderr, "\n");
    }
#endif
}

#define ROUTE_PLAN_NK 32 /* pairs one warp plans (a lane each) */

/* k_moe_plan's plan of nk <= 32 pairs by one warp (lane i: pair i's expert e): tiles by expert ascending, each
 * expert's pairs in pair order (k_moe_plan's order within an expert is its atomics'; every pair is its own
 * column of the experts' kernels, so the values do not depend on it). Ranks by shuffles that are all in flight
 * at once, no shared memory, no barrier. */
__device__ static void route_plan_warp(const route_plan &P, int nk, int E, int e)
{
    const int lane = threadIdx.x & 31;
    const bool ok = lane < nk && e >= 0 && e < E && (P.hi <= P.lo || (e >= P.lo && e < P.hi));
    const unsigned same = __match_any_sync(0xffffffffu, ok ? e : -1 - lane);
    const int cnt = __popc(same), before = __popc(same & ((1u << lane) - 1u));
    const bool lead = ok && before == 0;
    const int nt = lead ? (cnt + P.ts - 1) / P.ts : 0; /* the expert's tiles, at its first pair */
    int off = 0, toff = 0;                             /* pairs and tiles of lower experts */
#pragma unroll 8
    for (int j = 0; j < ROUTE_PLAN_NK; j++) {
        const int ej = __shfl_sync(0xffffffffu, ok ? e : INT_MAX, j), tj = __shfl_sync(0xffffffffu, nt, j);
        if (ej < e) off++, toff += tj;
    }
    if (ok) P.list[off + before] = lane;
    if (lead)
        for (int s = 0; s < cnt; s += P.ts) P.tiles[toff + s / P.ts] = make_int4(e, off + s, min(P.ts, cnt - s), 0);
    const int tot = __reduce_add_sync(0xffffffffu, (unsigned)nt);
    if (lane == 0) *P.ntiles = tot;
}

/* One warp per token, every value in registers: each lane scores its NJ
 * experts once and keeps the best it has left (ties to the lower id, NaN
 * last, as the CPU's top-k); k rounds of a warp argmax over those hand round
 * i's id and unbiased score to lane i, and only the round's winner rescans
 * its experts. The ids go to ascending order by rank (distinct ids), and the
 * weights are summed in that order, as the CPU adds them. Hash layers take
 * the table's ids in its order. NJ: experts per lane (E <= 32 NJ). A
 * round's argmax by two warp reductions (redux.sync: the largest score as an
 * order-preserving key, then the least id holding it). The bias (a weight) is loaded
 * before griddepcontrol.wait. P.list: one block routes all n tokens and its
 * warp 0 then writes the experts' plan (route_plan_warp). */
template <int NJ>
__global__ void k_route(const float *logits, int n, int E, int k, const float *bias, const void *tid2eid, int tid_i64,
                        const int32_t *tokens, bool renorm, float route_scale, int32_t *idx, float *wts, route_plan P)
{
    const int lane = threadIdx.x & 31;
    const int t = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
#ifdef ROUTE_TRACE
    /* stamps an earlier launch left (a hash layer has no scores or rounds) are older than this entry: printed -1 */
    if (lane == 0 && t < ROUTE_TRACE_N) route_trace_buf[t].sm = dev_smid();
#endif
    ROUTE_T(0, 0.0f);
    float bj[NJ]; /* the bias: a weight, before the wait */
    if (!tid2eid && bias)
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            const int e = lane + 32 * j;
            bj[j] = bias[e < E ? e : E - 1];
        }
    pdl_start();
    ROUTE_T(1, 0.0f);
    const float *lg = logits + (size_t)(t < n ? t : 0) * E;
    int my_id = 0;
    float my_w = 0.0f;
    if (t < n && tid2eid) {
        if (lane < k) {
            const size_t o = (size_t)tokens[t] * k + lane;
            my_id = tid_i64 ? (int32_t)((const int64_t *)tid2eid)[o] : ((const int32_t *)tid2eid)[o];
            my_w = sqrt_softplus(lg[my_id]);
        }
    } else if (t < n) {       /* (a warp past n skips to the plan's barrier) */
        float sc[NJ], sp[NJ]; /* biased score (NaN ranks last), unbiased */
        uint32_t live = 0;    /* bit j: expert lane + 32 j exists and is not taken */
#pragma unroll
        for (int j = 0; j < NJ; j++) { /* every load at once (indices clamped; a guarded load and its
                                        * use had become a branch and a round trip each) */
            const int e = lane + 32 * j, ec = e < E ? e : E - 1;
            sp[j] = lg[ec];
        }
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            const int e = lane + 32 * j;
            if (e < E) live |= 1u << j;
            sp[j] = e < E ? sqrt_softplus(sp[j]) : 0.0f;
            const float v = e < E ? sp[j] + (bias ? bj[j] : 0.0f) : -INFINITY;
            sc[j] = isnan(v) ? -INFINITY : v;
        }
        ROUTE_T(2, sc[NJ - 1]); /* the scores computed (their loads in) */
        int lb = -1; /* the lane's best expert left, its scores */
        float lv = -INFINITY, ls = 0.0f;
        auto rescan = [&]() {
            lb = -1, lv = -INFINITY, ls = 0.0f;
#pragma unroll
            for (int j = 0; j < NJ; j++)
                if ((live >> j & 1u) && (lb < 0 || sc[j] > lv)) lb = lane + 32 * j, lv = sc[j], ls = sp[j];
        };
        rescan();
        for (int i = 0; i < k; i++) {
            /* the key orders scores as floats do (-0 as +0: they tie there); 0 for a lane with none left */
            const uint32_t f = __float_as_uint(lv == 0.0f ? 0.0f : lv);
            const uint32_t key = lb < 0 ? 0u : (f >> 31) ? ~f : f | 0x80000000u;
            const uint32_t m = __reduce_max_sync(0xffffffffu, key);
            const uint32_t id = __reduce_min_sync(0xffffffffu, key == m && lb >= 0 ? (uint32_t)lb : 0xffffffffu);
            const int best = m ? (int)id : -1;
            const float bs = __shfl_sync(0xffffffffu, ls, (int)(id & 31u));
            if (lane == i) {
                my_id = best;
                my_w = bs;
            }
            if (best >= 0 && (best & 31) == lane) {
                live &= ~(1u << (best >> 5));
                rescan();
            }
        }
        ROUTE_T(3, __int_as_float(my_id)); /* the rounds done */
        /* ascending ids, as the CPU's top-k returns them: lane r takes the pick of rank r */
        int rank = 0;
        for (int q = 0; q < k; q++) rank += __shfl_sync(0xffffffffu, my_id, q) < my_id;
        int s_id = my_id;
        float s_w = my_w;
        for (int q = 0; q < k; q++) {
            const int rq = __shfl_sync(0xffffffffu, rank, q), iq = __shfl_sync(0xffffffffu, my_id, q);
            const float wq = __shfl_sync(0xffffffffu, my_w, q);
            if (rq == lane) {
                s_id = iq;
                s_w = wq;
            }
        }
        my_id = s_id;
        my_w = s_w;
    }
    float sum = 0;
    for (int i = 0; i < k; i++) sum += __shfl_sync(0xffffffffu, my_w, i);
    if (t < n && lane < k) {
        float w = my_w;
        if (renorm) w /= sum + 1e-20f;
        idx[(size_t)t * k + lane] = my_id;
        wts[(size_t)t * k + lane] = w * route_scale;
    }
    ROUTE_T(4, my_w);
    if (P.list) { /* one block, every token's warp: the pairs' experts to warp 0 */
        __shared__ int ids[ROUTE_PLAN_NK];
        if (t < n && lane < k) ids[t * k + lane] = my_id;
        __syncthreads();
        if (threadIdx.x < 32) route_plan_warp(P, n * k, E, lane < n * k ? ids[lane] : -1);
    }
}

/* Whether k_route plans the experts for n tokens of k experts (one block of 4 warps, a lane a pair). */
bool cuda_route_plans(int n, int k)
{
    return n >= 1 && n <= 4 && n * k <= ROUTE_PLAN_NK;
}

void cuda_moe_route(dsv4_backend *be, const float *logits, int n, int n_experts, int k, const float *bias,
                    const dsv4_w *tid2eid, const int32_t *tokens, bool renorm, float route_scale, int32_t *idx,
                    float *wts)
{
    if (k > MAX_K || n_experts > MAX_E) abort(); /* refused at load for this backend */
    cuda_impl *im = impl_of(be);
    const bool hash = tid2eid && tid2eid->name;
    /* the experts announced for this idx (cuda_moe_next): their plan here, where one block routes every token;
     * any plan an earlier router made and no experts took is dropped (idx is one buffer for every layer) */
    route_plan P = {};
    im->plan_pend.idx = NULL;
    if (im->moe_next.p && im->moe_next.q == im->q && cuda_route_plans(n, k))
        cuda_moe_plan_pend(be, im->moe_next.p, n, idx, &P);
    im->moe_next.p = NULL;
    launch_pdl(n_experts <= 256 ? k_route<8> : k_route<MAX_E / 32>, dim3((n + 3) / 4), dim3(128), 0, im->stream, logits,
               n, n_experts, k, bias, (const void *)(hash ? tid2eid->dev : NULL), hash && tid2eid->dtype == DSV4_DT_I64,
               (const int *)im->d_tokens, renorm, route_scale, idx, wts, P);
    CK_LAUNCH();
}

/* be->moe_next: the routed experts that the next moe_route's ids feed (the forward pass announces them), so
 * that the router may make their plan (cuda_moe_plan_pend). */
void cuda_moe_next(dsv4_backend *be, const dsv4_moe_params *p)
{
    cuda_impl *im = impl_of(be);
    static int on = -1; /* DSV4_ROUTE_PLAN=0: never (a measurement's knob; the same values) */
    if (on < 0) on = cuda_env_on("DSV4_ROUTE_PLAN");
    im->moe_next.p = on && p && p->n_experts > 0 && p->w1 ? p : NULL;
    im->moe_next.q = im->q;
}

/* One warp per (row of w1 or of w3, token-slot): a dot product of the slot's
 * expert e's row with its token, into G (rows [0, I): w1) or U (rows
 * [I, 2I): w3). One row per warp keeps a warp's chain of dependent loads
 * (slot, descriptor, weights) short; every output is the same row_dot as
 * before, so the values do not change. */
__global__ void k_expert_gate_up(const wdesc *w1, const wdesc *w3, const float *x, int D, int k, const int32_t *idx,
                                 int I, bool reference, float *G, float *U, int ts0, int lo, int hi)
{
    const int lane = threadIdx.x & 31;
    const int r2 = blockIdx.x * MOE_WARPS + (threadIdx.x >> 5);
    const int ts = ts0 + blockIdx.y; /* token * k + slot */
    if (r2 >= 2 * I) return;
    const int e = idx[ts];
    if (hi > lo && (e < lo || e >= hi)) return; /* another rank's expert */
    const bool up = r2 >= I;
    const int r = up ? r2 - I : r2;
    const float *xt = x + (size_t)(ts / k) * D;
    const wdesc a = up ? w3[e] : w1[e];
    float g = 0;
    row_dot<1>(a, a.row0 + r, xt, D, 1, &g);
    g = warp_sum(g);
    if (lane == 0) (up ? U : G)[(size_t)ts * I + r] = reference ? dsv4_round_bf16(g) : g;
}

__global__ void k_expert_act(float *G, const float *U, int I, size_t total, float limit, const float *wts,
                             bool reference)
{
    const size_t id = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= total) return;
    float g = G[id], u = U[id];
    if (limit > 0) {
        g = fminf(g, limit);
        u = fminf(fmaxf(u, -limit), limit);
    }
    float m = g / (1.0f + expf(-g)) * u * wts[id / I];
    G[id] = reference ? dsv4_round_bf16(m) : m;
}

__global__ void k_expert_down(const wdesc *w2, const float *M, int I, int k, const int32_t *idx, int D,
                              bool reference, float *Y, int ts0, int lo, int hi)
{
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * MOE_WARPS + (threadIdx.x >> 5);
    const int ts = ts0 + blockIdx.y;
    if (r >= D) return;
    if (hi > lo && (idx[ts] < lo || idx[ts] >= hi)) { /* another rank's expert: its slot is zero here */
        if (lane == 0) Y[(size_t)ts * D + r] = 0.0f;
        return;
    }
    const wdesc w = w2[idx[ts]];
    const float *m = M + (size_t)ts * I;
    float y = 0;
    row_dot<1>(w, w.row0 + r, m, I, 1, &y);
    y = warp_sum(y);
    if (lane == 0) Y[(size_t)ts * D + r] = reference ? dsv4_round_bf16(y) : y;
}

__global__ void k_expert_sum(const float *Y, const int32_t *idx, int k, int D, int n, float *out)
{
    pdl_start();
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (int64_t)n * D) return;
    const int t = (int)(id / D), d = (int)(id % D);
    int order[MAX_K];
    expert_slot_order(idx + t * k, k, order);
    float s = 0;
    for (int i = 0; i < k; i++) s += Y[((size_t)t * k + order[i]) * D + d];
    out[(size_t)t * D + d] = s;
}

/* out = the sum over the slots now, or (sum_in_hc_post) left to the next hc_post (moe_pend). */
static void moe_sum_or_defer(dsv4_backend *be, const dsv4_moe_params *p, const float *Y, const int32_t *idx, int n,
                             int k, int D, float *out)
{
    cuda_impl *im = impl_of(be);
    cuda_moe_flush(be); /* one left by a caller that broke the contract: summed, not lost */
    if (!p->sum_in_hc_post) {
        cuda_moe_sum(be, Y, idx, n, k, D, out);
        return;
    }
    im->moe_pend.out = out, im->moe_pend.Y = Y, im->moe_pend.idx = idx;
    im->moe_pend.n = n, im->moe_pend.k = k, im->moe_pend.D = D, im->moe_pend.q = im->q;
}

void cuda_moe_flush(dsv4_backend *be)
{
    cuda_impl *im = impl_of(be);
    if (!im->moe_pend.out) return;
    const int q = im->q;
    im->q = im->moe_pend.q, im->stream = im->queue[im->q];
    cuda_moe_sum(be, im->moe_pend.Y, im->moe_pend.idx, im->moe_pend.n, im->moe_pend.k, im->moe_pend.D,
                 im->moe_pend.out);
    im->q = q, im->stream = im->queue[q];
    im->moe_pend.out = NULL;
}

/* The key of a layer's table: the device memory of its first gate weight (expert parallelism: of this rank's
 * experts). The weights' own address, not the host array's: a table describes device memory, and the F16 path
 * rewrites that memory's FP4 words in place once, so two arrays of the same weights share one table, and
 * weights freed (c_free drops the table: cuda_moe_forget) and others loaded at the same addresses get a new one. */
static const void *expert_key(const dsv4_moe_params *p)
{
    const bool part = p->expert_hi > p->expert_lo;
    for (int e = part ? p->expert_lo : 0; e < (part ? p->expert_hi : p->n_experts); e++)
        if (p->w1[e].dev) return p->w1[e].dev;
    return p->w1;
}

/* The device descriptor table of a layer's experts (w1 | w3 | w2), made
 * once with whether they take the tensor-core path: its index. */
static int expert_table(dsv4_backend *be, const dsv4_moe_params *p)
{
    cuda_impl *im = impl_of(be);
    const void *key = expert_key(p);
    int slot = -1; /* a slot dropped by cuda_moe_forget, else a new one */
    for (int i = 0; i < im->n_moe; i++) {
        if (im->moe_key[i] == key) return i;
        if (!im->moe_key[i] && slot < 0) slot = i;
    }
    if (slot < 0) {
        if (im->n_moe == MAX_MOE_TABLES) abort();
        slot = im->n_moe++;
    }
    const int E = p->n_experts;
    wdesc *h = (wdesc *)malloc((size_t)3 * E * sizeof(wdesc));
    for (int e = 0; e < E; e++) {
        h[e] = wdesc_of(&p->w1[e]);
        h[E + e] = wdesc_of(&p->w3[e]);
        h[2 * E + e] = wdesc_of(&p->w2[e]);
    }
    wdesc *d;
    CK(cudaMalloc((void **)&d, (size_t)3 * E * sizeof(wdesc)));
    CK(cudaMemcpy(d, h, (size_t)3 * E * sizeof(wdesc), cudaMemcpyHostToDevice));
    free(h);
    im->moe_key[slot] = key;
    im->moe_tab[slot] = d;
    im->moe_mma[slot] = cuda_moe_mma_eligible(p);
    /* the F16 path reads its FP4 words in its own layout: made here, once per layer's weights */
    if (im->moe_mma[slot] == MOE_F16) cuda_moe_fp4_layout(be, p, d);
    return slot;
}

/* Device memory p is being freed: the table keyed by it (expert_key) goes with it. */
void cuda_moe_forget(dsv4_backend *be, const void *p)
{
    cuda_impl *im = impl_of(be);
    for (int i = 0; p && i < im->n_moe; i++)
        if (im->moe_key[i] == p) {
            CK(cudaFree(im->moe_tab[i]));
            im->moe_key[i] = NULL, im->moe_tab[i] = NULL, im->moe_mma[i] = 0;
        }
}

/* The tensor-core path of p's experts (cuda_impl.moe_mma: MOE_*, 0 none). */
int cuda_moe_mode(dsv4_backend *be, const dsv4_moe_params *p)
{
    return impl_of(be)->moe_mma[expert_table(be, p)];
}

/* Whether p's experts run on the tensor cores (cuda_moe_mode), for the tests. */
extern "C" bool dsv4_cuda_moe_tc(dsv4_backend *be, const dsv4_moe_params *p)
{
    return p->n_experts > 0 && p->w1 && cuda_moe_mode(be, p) != 0;
}

/* be->moe_prepare: the table (and the F16 path's layout) at load, not in the first step. */
void cuda_moe_prepare(dsv4_backend *be, const dsv4_moe_params *p)
{
    if (p->n_experts > 0) (void)expert_table(be, p);
}

void cuda_moe_experts(dsv4_backend *be, const dsv4_moe_params *p, const float *x, int n, const int32_t *idx,
                      const float *wts, float *out)
{
    if (n <= 0) return;
    cuda_impl *im = impl_of(be);
    const int k = p->k, D = p->dim, I = p->inter, E = p->n_experts;
    const int ti = expert_table(be, p);
    wdesc *tab = im->moe_tab[ti];
    const size_t nk = (size_t)n * k;
    float *G = (float *)cuda_scratch(be, CS_MOE_G, nk * I * sizeof(float));
    float *U = (float *)cuda_scratch(be, CS_MOE_U, nk * I * sizeof(float));
    /* expert parallelism: the per-slot outputs go to the caller's buffer, the sum is moe_sum's */
    float *Y = p->slot_out ? p->slot_out : (float *)cuda_scratch(be, CS_MOE_Y, nk * D * sizeof(float));
    const bool aq = cuda_moe_aq(be, p);
    if (im->moe_mma[ti]) { /* FP4 experts on the tensor cores (moe_mma.cu) */
        cuda_moe_mma(be, p, tab, im->moe_mma[ti], x, n, idx, wts, aq, G, Y);
        if (!p->slot_out) moe_sum_or_defer(be, p, Y, idx, n, k, D, out);
        return;
    }
    if (aq) {
        float *xq = (float *)cuda_scratch(be, CS_MOE_XQ, (size_t)n * D * sizeof(float));
        cuda_act_quant(be, x, D, n, D, xq);
        x = xq;
    }
    /* (token, slot) pairs along grid y, at most 65,535 per launch */
    for (size_t ts0 = 0; ts0 < nk; ts0 += 65535) {
        dim3 g1((unsigned)((2 * I + MOE_WARPS - 1) / MOE_WARPS), (unsigned)(nk - ts0 < 65535 ? nk - ts0 : 65535));
        k_expert_gate_up<<<g1, 32 * MOE_WARPS, 0, im->stream>>>(tab, tab + E, x, D, k, idx, I, p->reference, G, U,
                                                                (int)ts0, p->expert_lo, p->expert_hi);
        CK_LAUNCH();
    }
    const size_t tot = nk * I;
    k_expert_act<<<(unsigned)((tot + 255) / 256), 256, 0, im->stream>>>(G, U, I, tot, p->swiglu_limit, wts,
                                                                       p->reference);
    CK_LAUNCH();
    if (aq) cuda_act_quant(be, G, I, (int)nk, I, G); /* in place: each block reads then writes its own 128 */
    for (size_t ts0 = 0; ts0 < nk; ts0 += 65535) {
        dim3 g2((unsigned)((D + MOE_WARPS - 1) / MOE_WARPS), (unsigned)(nk - ts0 < 65535 ? nk - ts0 : 65535));
        k_expert_down<<<g2, 32 * MOE_WARPS, 0, im->stream>>>(tab + 2 * E, G, I, k, idx, D, p->reference, Y,
                                                             (int)ts0, p->expert_lo, p->expert_hi);
        CK_LAUNCH();
    }
    if (!p->slot_out) moe_sum_or_defer(be, p, Y, idx, n, k, D, out);
}

void cuda_moe_sum(dsv4_backend *be, const float *Y, const int32_t *idx, int n, int k, int D, float *out)
{
    const int64_t tot2 = (int64_t)n * D;
    if (tot2 <= 0) return;
    launch_pdl(k_expert_sum, dim3((unsigned)((tot2 + 255) / 256)), dim3(256), 0, impl_of(be)->stream, Y, idx, k, D, n,
               out);
    CK_LAUNCH();
}
