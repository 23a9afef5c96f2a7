/*
 * hc.cu - manifold-constrained hyper-connections on the GPU: hc_pre (mixing
 * coefficients with Sinkhorn, collapse), hc_post (expand + mix) and the final
 * HC head. The mixing logits are a few dot products of the whole stream
 * (hc x dim columns) per token: k_hc_mix splits the columns into parts of
 * HC_KCOLS over the GPU (the split and the order of every sum depend on the
 * shape only), and the
 * token's split kernel adds the parts in a fixed order; its Sinkhorn does
 * dsv4_hc_split's arithmetic (the CPU's) on one warp, each row and column sum
 * added in the CPU's order, and the collapse follows in the same kernel.
 */
#include "backend/cuda/common.cuh"
#include "backend/cuda/rowdot.cuh"
#include "backend/hc_math.h"

#define HC_MAX 16
#define HC_KCOLS 256 /* columns of a mixing part */
#define HC_TT    16  /* tokens of a mixing block */

/* Partial mixing logits: block (part p of HC_KCOLS columns, HC_TT tokens);
 * part[(p * n + t) * n_mix + r] = sum over the part's columns c of
 * fn[r, c] X[t, c]. The part's columns and the tokens' rows go to shared
 * memory (16-byte loads, all issued before their stores), then a thread
 * takes 3 rows x 2 tokens of one HC_CC-column chunk and walks its columns in
 * order (one FMA chain per output, 5 shared loads per 24 FMAs, no shuffles);
 * the four chunks' sums are added in chunk order. Rows in passes of HC_RC.
 * The order depends on F only (batch invariance). */
#define HC_RC 24             /* rows of a pass: 8 row groups x 3 */
#define HC_CC 64             /* columns of a thread's chunk */
#define HC_LD (HC_KCOLS + 4) /* floats per shared row: 8 rows' 16-byte reads meet 32 banks */

/* ROWS rows of a part's nc columns (row r at src + r ld) into dst, 16-byte loads (v4) all issued before their
 * stores; rows from nr on and columns from nc on zeros. */
template <int ROWS>
__device__ __forceinline__ void hc_stage(float (*dst)[HC_LD], const float *src, size_t ld, int nr, int nc, bool v4)
{
    constexpr int Q = HC_KCOLS / 4, L = ROWS * Q / 256;
    const int tid = threadIdx.x;
    float4 v[L];
#pragma unroll
    for (int k = 0; k < L; k++) {
        const int e = tid + 256 * k, r = e / Q, c = 4 * (e % Q);
        const float *s = src + (size_t)(r < nr ? r : 0) * ld + c;
        if (r >= nr)
            v[k] = make_float4(0, 0, 0, 0);
        else if (v4 && c + 3 < nc)
            v[k] = __ldg((const float4 *)s);
        else
            v[k] = make_float4(c < nc ? s[0] : 0.0f, c + 1 < nc ? s[1] : 0.0f, c + 2 < nc ? s[2] : 0.0f,
                               c + 3 < nc ? s[3] : 0.0f);
    }
#pragma unroll
    for (int k = 0; k < L; k++) {
        const int e = tid + 256 * k;
        *(float4 *)&dst[e / Q][4 * (e % Q)] = v[k];
    }
}

__global__ void __launch_bounds__(256) k_hc_mix(const float *__restrict__ fn, const float *__restrict__ X, int n,
                                                int n_mix, int F, float *__restrict__ part)
{
    static_assert(HC_KCOLS == 4 * HC_CC && HC_TT == 16 && HC_RC == 24, "k_hc_mix: 256 threads = 4 chunks x 8 x 8");
    __shared__ __align__(16) float xs[HC_TT][HC_LD];
    __shared__ __align__(16) float fs[HC_RC][HC_LD];
    __shared__ float red[4][HC_RC][HC_TT];
    const int p = blockIdx.x, t0 = blockIdx.y * HC_TT, c0 = p * HC_KCOLS, tid = threadIdx.x;
    const int nc = F - c0 < HC_KCOLS ? F - c0 : HC_KCOLS, nt = n - t0 < HC_TT ? n - t0 : HC_TT;
    const bool v4 = (F & 3) == 0 && ((uintptr_t)X & 15) == 0 && ((uintptr_t)fn & 15) == 0;
    /* the weights (Flash's 24 rows are one pass) before griddepcontrol.wait: X is the kernel before's */
    hc_stage<HC_RC>(fs, fn + c0, F, n_mix < HC_RC ? n_mix : HC_RC, nc, v4);
    pdl_start();
    hc_stage<HC_TT>(xs, X + (size_t)t0 * F + c0, F, nt, nc, v4);
    /* thread: row group rg (rows rg, rg + 8, rg + 16 of the pass), tokens 2 tp, 2 tp + 1, chunk ch */
    const int rg = tid & 7, tp = (tid >> 3) & 7, ch = tid >> 6, cb = ch * HC_CC;
    for (int r0 = 0; r0 < n_mix; r0 += HC_RC) {
        if (r0 > 0) {
            __syncthreads(); /* the pass before is done with fs and red */
            hc_stage<HC_RC>(fs, fn + (size_t)r0 * F + c0, F, n_mix - r0 < HC_RC ? n_mix - r0 : HC_RC, nc, v4);
        }
        __syncthreads();
        float a[3][2] = {{0, 0}, {0, 0}, {0, 0}};
#pragma unroll 4
        for (int c = cb; c < cb + HC_CC; c += 4) {
            const float4 x0 = *(const float4 *)&xs[2 * tp][c], x1 = *(const float4 *)&xs[2 * tp + 1][c];
#pragma unroll
            for (int j = 0; j < 3; j++) {
                const float4 f = *(const float4 *)&fs[rg + 8 * j][c];
                a[j][0] = __fmaf_rn(f.x, x0.x, a[j][0]), a[j][1] = __fmaf_rn(f.x, x1.x, a[j][1]);
                a[j][0] = __fmaf_rn(f.y, x0.y, a[j][0]), a[j][1] = __fmaf_rn(f.y, x1.y, a[j][1]);
                a[j][0] = __fmaf_rn(f.z, x0.z, a[j][0]), a[j][1] = __fmaf_rn(f.z, x1.z, a[j][1]);
                a[j][0] = __fmaf_rn(f.w, x0.w, a[j][0]), a[j][1] = __fmaf_rn(f.w, x1.w, a[j][1]);
            }
        }
#pragma unroll
        for (int j = 0; j < 3; j++) red[ch][rg + 8 * j][2 * tp] = a[j][0], red[ch][rg + 8 * j][2 * tp + 1] = a[j][1];
        __syncthreads();
        const int nr = n_mix - r0 < HC_RC ? n_mix - r0 : HC_RC;
        for (int e = tid; e < nr * nt; e += 256) { /* the chunks in order */
            const int r = e / nt, t = e % nt;
            const float v = ((red[0][r][t] + red[1][r][t]) + red[2][r][t]) + red[3][r][t];
            part[((size_t)p * n + t0 + t) * n_mix + r0 + r] = v;
        }
    }
}

/* The Sinkhorn of dsv4_hc_split on one warp (hc * hc <= 32): lane i holds
 * comb[i / hc][i % hc]; a row or column sum gathers its hc values by
 * shuffles and adds them in the CPU's order, so every value is the CPU's
 * arithmetic (no barriers, which the block version pays 4 of per iteration). */
template <int HCT> __device__ static void hc_sinkhorn_warp(const dsv4_hc_params &p, const float *m, float *comb)
{
    const int hc = HCT ? HCT : p.hc, lane = threadIdx.x & 31, j = lane / hc, k = lane % hc;
    const bool in = lane < hc * hc;
    const float eps = p.hc_eps;
    float v = in ? m[2 * hc + lane] * p.scale[2] + p.base[2 * hc + lane] : 0.0f;
    float mx = -INFINITY;
    for (int q = 0; q < hc; q++) mx = fmaxf(mx, __shfl_sync(0xffffffffu, v, (in ? j * hc : 0) + q));
    v = in ? expf(v - mx) : 0.0f;
    float sm = 0;
    for (int q = 0; q < hc; q++) sm += __shfl_sync(0xffffffffu, v, (in ? j * hc : 0) + q);
    v = v / sm + eps;
    for (int it = 0; it < p.sinkhorn_iters; it++) {
        if (it > 0) { /* rows */
            float s = 0;
            for (int q = 0; q < hc; q++) s += __shfl_sync(0xffffffffu, v, (in ? j * hc : 0) + q);
            v /= s + eps;
        }
        float s = 0; /* columns */
        for (int q = 0; q < hc; q++) s += __shfl_sync(0xffffffffu, v, q * hc + (in ? k : 0));
        v /= s + eps;
    }
    if (in) comb[lane] = v;
}

/* Per token, two blocks side by side (one for the head): both take
 * rho = 1 / RMS of the streams and the mixing logits they need (raw dot
 * products: k_hc_mix's kp parts, a warp per logit adding them in a fixed
 * order, times rho); block 0 makes pre and the collapse u = sum_i pre_i X_i
 * (the CPU's order), block 1 post and the Sinkhorn's comb. Split so, the
 * Sinkhorn's chain runs beside the collapse instead of before it. With
 * NPT > 0 (HCT streams of D = NPT x 256 columns, Flash's 4 x 4096) each
 * thread loads its NPT columns of every stream at once and keeps them: one
 * round trip for the RMS and the collapse, whose sums run in the order of
 * the generic path (ascending flat index per thread). The parameters
 * (weights) go to shared memory before griddepcontrol.wait. bx0: the role of
 * blockIdx.x 0 (a launch of one role: 0, the collapse; 1, post and comb). */
template <int HCT, int NPT>
__global__ void __launch_bounds__(256)
    k_hc_split(dsv4_hc_params p, const float *__restrict__ X, const float *__restrict__ mraw, int kp, int n,
               float *__restrict__ u, float *__restrict__ post, float *__restrict__ comb, bool head, int bx0)
{
    __shared__ float sh[32];
    __shared__ float m[(2 + HC_MAX) * HC_MAX];
    __shared__ float s_pre[HC_MAX], s_comb[HC_MAX * HC_MAX], s_sum[HC_MAX];
    __shared__ float s_base[(2 + HC_MAX) * HC_MAX], s_scale[3];
    const int t = blockIdx.y, hc = HCT ? HCT : p.hc, F = hc * p.dim, D = p.dim;
    const bool mix = blockIdx.x + bx0 == 1; /* post and comb; block 0: pre and the collapse */
    const int n_all = head ? hc : (2 + hc) * hc, n_mix = mix ? n_all : hc;
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, nw = blockDim.x >> 5;
    for (int i = tid; i < n_mix; i += blockDim.x) s_base[i] = p.base[i]; /* weights: before the wait */
    if (tid < (head ? 1 : 3)) s_scale[tid] = p.scale[tid];
    /* with NPT, the norm after the collapse takes u from registers: its weights here, before the wait */
    float wv[NPT ? NPT : 1];
    if constexpr (NPT > 0)
        if (!mix && p.then_y)
#pragma unroll
            for (int j = 0; j < NPT; j++) wv[j] = p.then_w ? p.then_w[tid + 256 * j] : 1.0f;
    pdl_start();
    const float *x = X + (size_t)t * F;
    float v[NPT ? HCT : 1][NPT ? NPT : 1];
    if constexpr (NPT > 0) {
#pragma unroll
        for (int i = 0; i < HCT; i++)
#pragma unroll
            for (int j = 0; j < NPT; j++) v[i][j] = x[(size_t)i * D + tid + 256 * j];
    }
    if (kp <= 64 && n_mix <= 3 * nw) { /* Flash's 64 parts, 24 logits: every part loaded at once
                                         * (indices clamped), then added in the loop's order */
        float pv[3][2];
#pragma unroll
        for (int ri = 0; ri < 3; ri++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r = min(w + nw * ri, n_mix - 1), q = min(lane + 32 * h, kp - 1);
                pv[ri][h] = mraw[((size_t)q * n + t) * n_all + r];
            }
        float a[3]; /* all three sums, rows past n_mix too (clamped; not stored): no branch to sink the loads under */
#pragma unroll
        for (int ri = 0; ri < 3; ri++) {
            a[ri] = 0.0f;
            if (lane < kp) a[ri] += pv[ri][0];
            if (lane + 32 < kp) a[ri] += pv[ri][1];
        }
#pragma unroll
        for (int ri = 0; ri < 3; ri++) a[ri] = warp_sum(a[ri]);
#pragma unroll
        for (int ri = 0; ri < 3; ri++)
            if (lane == 0 && w + nw * ri < n_mix) m[w + nw * ri] = a[ri];
    } else
#pragma unroll 3
        for (int r = w; r < n_mix; r += nw) {
            float a = 0.0f;
#pragma unroll 4
            for (int q = lane; q < kp; q += 32) a += mraw[((size_t)q * n + t) * n_all + r];
            a = warp_sum(a);
            if (lane == 0) m[r] = a;
        }
    float ss = 0;
    if constexpr (NPT > 0) {
#pragma unroll
        for (int i = 0; i < HCT; i++)
#pragma unroll
            for (int j = 0; j < NPT; j++) ss += v[i][j] * v[i][j];
    } else {
        ss = sumsq_strided<16>(x, F);
    }
    const float rho = 1.0f / sqrtf(block_sum(ss, sh) / (float)F + p.norm_eps); /* block_sum: m visible */
    p.base = s_base; /* the same values, from shared memory */
    p.scale = s_scale;
    const float eps = p.hc_eps;
    if (!mix) {
        if (tid < hc) s_pre[tid] = dsv4_sigmoid(m[tid] * rho * p.scale[0] + p.base[tid]) + eps;
        __syncthreads();
        if constexpr (NPT > 0) {
            float xv[NPT];
#pragma unroll
            for (int j = 0; j < NPT; j++) { /* the collapse, as the CPU adds */
                float a = 0;
#pragma unroll
                for (int i = 0; i < HCT; i++) a += s_pre[i] * v[i][j];
                u[(size_t)t * D + tid + 256 * j] = a;
                xv[j] = a;
            }
            /* then RMSNorm(u) from the registers: rmsnorm_row's held path on the elements this thread wrote
             * (tid + 256 j, j ascending), the same operations in the same order, without reading u back */
            if (p.then_y) {
#pragma unroll
                for (int j = 0; j < NPT; j++) xv[j] = rnd_in(p.then_rnd, xv[j]);
                float s = 0;
#pragma unroll
                for (int j = 0; j < NPT; j++) s += xv[j] * xv[j];
                s = block_sum(s, sh);
                const float k = 1.0f / sqrtf(s / (float)D + p.then_eps);
                float *yr = p.then_y + (size_t)t * D;
#pragma unroll
                for (int j = 0; j < NPT; j++)
                    yr[tid + 256 * j] = rnd_out(p.then_rnd, p.then_w ? wv[j] * (xv[j] * k) : xv[j] * k);
            }
            return;
        } else {
#pragma unroll 4
            for (int d = tid; d < D; d += blockDim.x) {
                float a = 0;
                for (int i = 0; i < hc; i++) a += s_pre[i] * x[(size_t)i * D + d];
                u[(size_t)t * D + d] = a;
            }
        }
        /* then RMSNorm(u) (p.then_y: hc_pre_run passes it when k_rmsnorm would run 256 threads too): the
         * rmsnorm op's code, each thread reading back the elements it wrote */
        if (p.then_y) rmsnorm_row<false>(u + (size_t)t * D, p.then_w, D, p.then_eps, p.then_y + (size_t)t * D, p.then_rnd);
        return;
    }
    for (int r = tid; r < n_mix; r += blockDim.x) m[r] *= rho;
    __syncthreads();
    if (tid < hc) post[(size_t)t * hc + tid] = 2.0f * dsv4_sigmoid(m[hc + tid] * p.scale[1] + p.base[hc + tid]);
    if (hc * hc <= 32) {
        if (w == 0) hc_sinkhorn_warp<HCT>(p, m, s_comb);
    } else { /* more streams: the block version, each sum in one thread */
        if (tid < hc) {
            float *row = s_comb + tid * hc, mx = -INFINITY, sm = 0;
            for (int k = 0; k < hc; k++) {
                row[k] = m[2 * hc + tid * hc + k] * p.scale[2] + p.base[2 * hc + tid * hc + k];
                mx = fmaxf(mx, row[k]);
            }
            for (int k = 0; k < hc; k++) sm += (row[k] = expf(row[k] - mx));
            for (int k = 0; k < hc; k++) row[k] = row[k] / sm + eps;
        }
        __syncthreads();
        for (int it = 0; it < p.sinkhorn_iters; it++) {
            if (it > 0) { /* rows */
                if (tid < hc) {
                    float sm = 0;
                    for (int k = 0; k < hc; k++) sm += s_comb[tid * hc + k];
                    s_sum[tid] = sm;
                }
                __syncthreads();
                if (tid < hc * hc) s_comb[tid] /= s_sum[tid / hc] + eps;
                __syncthreads();
            }
            if (tid < hc) { /* columns */
                float sm = 0;
                for (int j = 0; j < hc; j++) sm += s_comb[j * hc + tid];
                s_sum[tid] = sm;
            }
            __syncthreads();
            if (tid < hc * hc) s_comb[tid] /= s_sum[tid % hc] + eps;
            __syncthreads();
        }
    }
    __syncthreads();
    for (int i = tid; i < hc * hc; i += blockDim.x) comb[(size_t)t * hc * hc + i] = s_comb[i];
}

/* Queue 0 waits for an hc_pre's post-and-comb blocks on queue 1 (hc_comb_open) before what reads their
 * outputs or overwrites their inputs (hc_post; the next hc_pre's k_hc_mix writing mraw): the forward pass
 * joins the queues before both, so this does nothing there; it keeps the op correct for any caller. */
void cuda_hc_join(cuda_impl *im)
{
    if (!im->hc_comb_open || im->q != 0) return;
    CK(cudaEventRecord(im->join_ev, im->queue[1]));
    CK(cudaStreamWaitEvent(im->queue[0], im->join_ev, 0));
    im->side_open = im->hc_comb_open = false;
}

/* DSV4_HC_SIDE=0: post and comb in the collapse's launch in decode graphs too (a baseline; the same bits). */
static bool hc_side_comb(void)
{
    static int v = -1;
    if (v < 0) v = cuda_env_on("DSV4_HC_SIDE"); /* (s20 read it with cuda_env_int, which ignored its 0) */
    return v;
}

/* The mixing logits' parts (fn read once per HC_TT tokens, spread over the
 * GPU), then the per-token split and collapse. */
static void hc_pre_run(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u, float *post,
                       float *comb, bool head)
{
    if (n <= 0) return;
    if (p->hc > HC_MAX) abort(); /* refused at config load */
    cuda_impl *im = impl_of(be);
    const int hc = p->hc, F = hc * p->dim, n_mix = head ? hc : (2 + hc) * hc;
    const int kp = (F + HC_KCOLS - 1) / HC_KCOLS;
    float *mraw = (float *)cuda_scratch(be, CS_HC, (size_t)n * kp * n_mix * sizeof(float));
    cuda_hc_join(im);
    /* the parts made by the hc_post before (hc_post_next), or k_hc_mix */
    const bool made = im->mix_pend.fn == p->fn && im->mix_pend.X == X && im->mix_pend.n == n &&
                      im->mix_pend.n_mix == n_mix && im->mix_pend.q == im->q;
    im->mix_pend.fn = NULL;
    if (!made) {
        launch_pdl(k_hc_mix, dim3((unsigned)kp, (unsigned)((n + HC_TT - 1) / HC_TT)), dim3(256), 0, im->stream, p->fn,
                   X, n, n_mix, F, mraw);
        CK_LAUNCH();
    }
    /* the norm after in the same kernel when the rmsnorm op would run 256 threads a row too (the same sums) */
    dsv4_hc_params q = *p;
    const bool fuse = rmsnorm_threads(p->dim) == 256;
    if (!fuse) q.then_y = NULL;
    auto *ks = hc == 4 && p->dim == 16 * 256 ? k_hc_split<4, 16> : hc == 4 ? k_hc_split<4, 0> : k_hc_split<0, 0>;
    /* In a decode graph the blocks of post and comb (the Sinkhorn's chain; read only by the hc_post that ends
     * the sublayer, after forward.c's join) run on the second queue: the next kernel on this one waits for
     * the collapse alone. The same kernel, each block its role: the same bits. mraw and X stay untouched
     * until that join (the next writers of both, k_hc_mix and hc_post, come after it). */
    if (!head && im->capturing && be->side && im->q == 0 && hc_side_comb()) {
        CK(cudaEventRecord(im->fork_ev, im->queue[0]));
        CK(cudaStreamWaitEvent(im->queue[1], im->fork_ev, 0));
        launch_pdl(ks, dim3(1, (unsigned)n), dim3(256), 0, im->stream, q, X, (const float *)mraw, kp, n, u, post, comb,
                   head, 0);
        CK_LAUNCH();
        ks<<<dim3(1, (unsigned)n), 256, 0, im->queue[1]>>>(q, X, (const float *)mraw, kp, n, u, post, comb, head, 1);
        CK_LAUNCH();
        CK(cudaEventRecord(im->join_ev, im->queue[1]));
        im->side_open = im->hc_comb_open = true;
    } else {
        launch_pdl(ks, dim3(head ? 1 : 2, (unsigned)n), dim3(256), 0, im->stream, q, X, (const float *)mraw, kp, n, u,
                   post, comb, head, 0);
        CK_LAUNCH();
    }
    if (p->then_y && !fuse) cuda_rmsnorm(be, u, p->then_w, n, p->dim, p->dim, p->then_eps, p->then_y, p->then_rnd);
}

void cuda_hc_pre(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u, float *post, float *comb)
{
    hc_pre_run(be, p, X, n, u, post, comb, false);
}

void cuda_hc_head(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u)
{
    hc_pre_run(be, p, X, n, u, NULL, NULL, true);
}

/* SUM: o is the routed experts' sum, added here from their slot outputs Y [n k, dim] as k_expert_sum adds it
 * (moe_pend; the same additions in the same order), instead of read from o; PARTS: o is a linear's output left
 * as k parts Y [k][n][dim] (lin_pend), added here in part order as k_wg8's cluster adds them. */
enum { POST_O, POST_SUM, POST_PARTS };
#define HC_POST_AT_ONCE 8 /* parts or slots whose loads k_hc_post issues at once (Flash: 8 parts, 6 slots) */
/* MIX (hc_post_next): k_hc_post also makes the next hc_pre's / hc_head's mixing logits' parts, as
 * k_hc_mix would from the X written here (HCT 4, dim a multiple of HC_KCOLS, at most HC_RC logits): a
 * block's 256 columns of one token are one HC_KCOLS part of each stream, whose weights (n_mix rows x 4
 * parts) it stages into shared memory before griddepcontrol.wait. Each sum in k_hc_mix's order - an FMA
 * chain over a HC_CC-column chunk ascending, the four chunks added in order - so the parts, and all that
 * follows, are the same bits; one launch fewer on the chain between two sublayers. */
/* tokens up to which hc_post takes the mixing (16 blocks each at Flash's 4,096; two blocks an SM): at 12 and
 * 16 faster than k_hc_mix too (3.668 against 3.696 ms a step, 4.296 against 4.304; s51's tok16/).
 * DSV4_HC_POST_MIX_TOK=N: N (a measurement's knob) */
#define HC_POST_MIX_TOK  16
#define HC_POST_MIX_SMEM (((4 * HC_RC + 4) * HC_LD + 16 * HC_RC) * sizeof(float))

/* HCT: the stream count fixed (Flash's 4: old[] in registers, not a 64-byte stack), or 0 (hc at run time).
 * The new streams' products fused in a pinned order (s = post_k o, then s += comb_jk old_j as FMAs, j
 * ascending): left to the compiler, which product of the first sum it fuses changes with the unrolling. */
template <int MODE, int HCT, bool MIX>
__global__ void k_hc_post(int hc_rt, int dim, const float *o, const float *o2, const float *post, const float *comb,
                          int n, float *X, unsigned rnd, const float *Y, const int32_t *idx, int k, const float *fn,
                          int n_mix, float *mpart)
{
    static_assert(!MIX || HCT == 4, "k_hc_post: the mixing with 4 streams");
    extern __shared__ __align__(16) float hc_dyn[];
    float(*fs)[HC_LD] = reinterpret_cast<float(*)[HC_LD]>(hc_dyn); /* [stream x HC_RC + row][column] */
    float(*xs)[HC_LD] = fs + 4 * HC_RC;                            /* [stream][column]: X as written */
    float *red = hc_dyn + (4 * HC_RC + 4) * HC_LD;                 /* [stream][chunk][row] */
    const int c0 = MIX ? (int)(((int64_t)blockIdx.x * blockDim.x) % dim) : 0;
    if constexpr (MIX) { /* the weights before the wait (fn is no kernel's output), all in flight at once */
        const int F = 4 * dim, Q = HC_KCOLS / 4;
        for (int e = threadIdx.x; e < 4 * n_mix * Q; e += blockDim.x) {
            const int c = 4 * (e % Q), rq = e / Q, q = rq / n_mix, r = rq % n_mix;
            cp_async<16>(&fs[q * HC_RC + r][c], fn + (size_t)r * F + (size_t)q * dim + c0 + c, true);
        }
        cp_async_commit();
    }
    pdl_start();
    const int hc = HCT ? HCT : hc_rt;
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (int64_t)n * dim) return;
    const int t = (int)(id / dim), d = (int)(id % dim);
    float *x = X + (size_t)t * hc * dim;
    const float *pt = post + (size_t)t * hc, *ct = comb + (size_t)t * hc * hc;
    float old[HCT ? HCT : HC_MAX];
    for (int j = 0; j < hc; j++) old[j] = x[(size_t)j * dim + d];
    /* HCT: every load of the thread issued before the first use (a load consumed next to it waited out its round
     * trip: the parts' and the slots' sums were 6-8 dependent round trips, ~5 us a call alone at batch 1,
     * bench/results/2026-12-01-s29/r3/): the mixing weights and o2 here, the parts or slots below, all with
     * their indices clamped; the sums in the same order */
    float pv[HCT ? HCT : 1], cv[HCT ? HCT * HCT : 1];
    float o2v = 0.0f;
    if constexpr (HCT > 0) {
#pragma unroll
        for (int j = 0; j < HCT; j++) pv[j] = pt[j];
#pragma unroll
        for (int j = 0; j < HCT * HCT; j++) cv[j] = ct[j];
        if (o2) o2v = o2[(size_t)t * dim + d];
    }
    float ov;
    if (MODE == POST_SUM) {
        if (HCT > 0 && k <= HC_POST_AT_ONCE) {
            /* the slots' values and experts at once, then added in ascending expert order, ties in slot order
             * (expert_slot_order's stable sort): slot i's rank is the count of slots before it in that order */
            float v[HC_POST_AT_ONCE];
            int e[HC_POST_AT_ONCE];
#pragma unroll
            for (int i = 0; i < HC_POST_AT_ONCE; i++) {
                const int ic = i < k ? i : k - 1;
                e[i] = idx[(size_t)t * k + ic];
                v[i] = Y[((size_t)t * k + ic) * dim + d];
            }
            int rank[HC_POST_AT_ONCE];
#pragma unroll
            for (int i = 0; i < HC_POST_AT_ONCE; i++) {
                rank[i] = 0;
#pragma unroll
                for (int j = 0; j < HC_POST_AT_ONCE; j++) rank[i] += j < k && (e[j] < e[i] || (e[j] == e[i] && j < i));
            }
            float sum = 0;
#pragma unroll
            for (int r = 0; r < HC_POST_AT_ONCE; r++) {
                if (r >= k) break;
                float vr = 0.0f;
#pragma unroll
                for (int i = 0; i < HC_POST_AT_ONCE; i++)
                    if (i < k && rank[i] == r) vr = v[i];
                sum += vr;
            }
            ov = sum;
        } else {
            int order[MAX_K];
            expert_slot_order(idx + t * k, k, order);
            float sum = 0;
            for (int i = 0; i < k; i++) sum += Y[((size_t)t * k + order[i]) * dim + d];
            ov = sum;
        }
    } else if (MODE == POST_PARTS) {
        if (HCT > 0 && k <= HC_POST_AT_ONCE) {
            float v[HC_POST_AT_ONCE];
#pragma unroll
            for (int p = 0; p < HC_POST_AT_ONCE; p++) v[p] = Y[((size_t)(p < k ? p : k - 1) * n + t) * dim + d];
            float sum = v[0];
#pragma unroll
            for (int p = 1; p < HC_POST_AT_ONCE; p++)
                if (p < k) sum += v[p];
            ov = sum;
        } else
            ov = lin_parts_sum(Y, k, n, dim, t, d);
    } else
        ov = o[(size_t)t * dim + d];
    if (o2) ov += rnd_in(rnd, HCT > 0 ? o2v : o2[(size_t)t * dim + d]);
    ov = rnd_in(rnd, ov);
    for (int q = 0; q < hc; q++) {
        float sq = __fmul_rn(HCT > 0 ? pv[q] : pt[q], ov);
        for (int j = 0; j < hc; j++) sq = __fmaf_rn(HCT > 0 ? cv[j * HCT + q] : ct[j * hc + q], old[j], sq);
        sq = rnd_out(rnd, sq);
        x[(size_t)q * dim + d] = sq;
        if constexpr (MIX) xs[q][threadIdx.x] = sq;
    }
    if constexpr (MIX) { /* every thread is here: dim is a multiple of the block */
        cp_async_wait<0>();
        __syncthreads();
        for (int c = threadIdx.x; c < 16 * n_mix; c += blockDim.x) { /* (stream, chunk, row) chains */
            const int r = c % n_mix, qc = c / n_mix, q = qc >> 2, cb = (qc & 3) * HC_CC;
            const float *fr = fs[q * HC_RC + r] + cb, *xr = xs[q] + cb;
            float a = 0.0f;
#pragma unroll 4
            for (int j = 0; j < HC_CC; j += 4) {
                const float4 f = *(const float4 *)(fr + j), xv = *(const float4 *)(xr + j);
                a = __fmaf_rn(f.x, xv.x, a);
                a = __fmaf_rn(f.y, xv.y, a);
                a = __fmaf_rn(f.z, xv.z, a);
                a = __fmaf_rn(f.w, xv.w, a);
            }
            red[qc * HC_RC + r] = a;
        }
        __syncthreads();
        for (int e = threadIdx.x; e < 4 * n_mix; e += blockDim.x) { /* the chunks in order */
            const int q = e / n_mix, r = e % n_mix;
            const float *rr = red + 4 * q * HC_RC + r;
            const float v = ((rr[0] + rr[HC_RC]) + rr[2 * HC_RC]) + rr[3 * HC_RC];
            const int p = q * (dim / HC_KCOLS) + c0 / HC_KCOLS;
            mpart[((size_t)p * n + t) * n_mix + r] = v;
        }
    }
}

void cuda_hc_init(void)
{
    CK(cudaFuncSetAttribute(k_hc_post<POST_O, 4, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)HC_POST_MIX_SMEM));
    CK(cudaFuncSetAttribute(k_hc_post<POST_SUM, 4, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)HC_POST_MIX_SMEM));
    CK(cudaFuncSetAttribute(k_hc_post<POST_PARTS, 4, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)HC_POST_MIX_SMEM));
}

void cuda_hc_post_next(dsv4_backend *be, const float *fn, bool head)
{
    cuda_impl *im = impl_of(be);
    im->hc_next.fn = fn;
    im->hc_next.head = head;
}

/* DSV4_HC_POST_MIX=0: hc_post never takes the next mixing (a baseline; the same bits). Measured on 8 Flash
 * layers (bench/results/2026-12-04-s51/): batch 8 1-2 % faster in three calls, batches 1 and 2 even (-0.5 % to
 * +0.4 %: behind wo_b's wg8 blocks k_hc_post cannot start early and its 96 KB of weights a block come after
 * them, 5.3 us against 1.8 + k_hc_mix's 2.6; after the experts it starts ~4 us early and gains). Only after the
 * experts measured even at batches 1 to 8 (final/). */
static bool hc_post_mix_on(void)
{
    static int v = -1;
    if (v < 0) v = cuda_env_on("DSV4_HC_POST_MIX");
    return v;
}
static int hc_post_mix_tok(void)
{
    static int v = -1;
    if (v < 0) v = cuda_env_int("DSV4_HC_POST_MIX_TOK", HC_POST_MIX_TOK);
    return v;
}

/* One k_hc_post launch of mode MODE, with the mixing where mp (its parts' buffer) is given. */
template <int MODE>
static void hc_post_launch(cuda_impl *im, int hc, int dim, const float *o, const float *o2, const float *post,
                           const float *comb, int n, float *X, unsigned rnd, const float *Y, const int32_t *idx, int k,
                           const float *fn, int n_mix, float *mp)
{
    const dim3 grid((unsigned)(((int64_t)n * dim + 255) / 256));
    if (mp)
        launch_pdl(k_hc_post<MODE, 4, true>, grid, dim3(256), HC_POST_MIX_SMEM, im->stream, hc, dim, o, o2, post, comb,
                   n, X, rnd, Y, idx, k, fn, n_mix, mp);
    else
        launch_pdl(hc == 4 ? k_hc_post<MODE, 4, false> : k_hc_post<MODE, 0, false>, grid, dim3(256), 0, im->stream, hc,
                   dim, o, o2, post, comb, n, X, rnd, Y, idx, k, (const float *)nullptr, 0, (float *)nullptr);
}

void cuda_hc_post(dsv4_backend *be, int hc, int dim, const float *o, const float *o2, const float *post,
                  const float *comb, int n, float *X, unsigned rnd)
{
    cuda_impl *im = impl_of(be);
    const float *nfn = im->hc_next.fn; /* hc_post_next's announcement holds for this call only */
    const bool nhead = im->hc_next.head;
    im->hc_next.fn = NULL;
    im->mix_pend.fn = NULL;
    if ((int64_t)n * dim <= 0) return;
    cuda_hc_join(im); /* post and comb written; the last hc_pre's side blocks done with its mixing parts */
    const int n_mix = nhead ? hc : (2 + hc) * hc, kp = hc * dim / HC_KCOLS;
    const bool moe = im->moe_pend.out && im->moe_pend.out == o && im->moe_pend.n == n && im->moe_pend.D == dim &&
                     im->moe_pend.q == im->q;
    float *mp = NULL;
    if (nfn && ((uintptr_t)nfn & 15) == 0 && hc == 4 && dim % HC_KCOLS == 0 && n_mix <= HC_RC &&
        n <= hc_post_mix_tok() && hc_post_mix_on()) {
        mp = (float *)cuda_scratch(be, CS_HC, (size_t)n * kp * n_mix * sizeof(float));
        im->mix_pend.fn = nfn, im->mix_pend.X = X, im->mix_pend.n = n, im->mix_pend.n_mix = n_mix;
        im->mix_pend.q = im->q;
    }
    /* the routed experts' pending sum (moe_pend) when o is theirs: folded in here */
    if (moe) {
        cuda_lin_flush(be);
        hc_post_launch<POST_SUM>(im, hc, dim, o, o2, post, comb, n, X, rnd, im->moe_pend.Y, im->moe_pend.idx,
                                 im->moe_pend.k, nfn, n_mix, mp);
        im->moe_pend.out = NULL;
    } else if (im->lin_pend.y && im->lin_pend.y == o && im->lin_pend.n == n && im->lin_pend.D == dim &&
               im->lin_pend.ldy == dim && im->lin_pend.q == im->q) { /* a linear's parts (lin_pend): added here */
        cuda_moe_flush(be);
        hc_post_launch<POST_PARTS>(im, hc, dim, o, o2, post, comb, n, X, rnd, im->lin_pend.parts, nullptr,
                                   im->lin_pend.P, nfn, n_mix, mp);
        im->lin_pend.y = NULL;
    } else {
        cuda_moe_flush(be);
        cuda_lin_flush(be);
        hc_post_launch<POST_O>(im, hc, dim, o, o2, post, comb, n, X, rnd, nullptr, nullptr, 0, nfn, n_mix, mp);
    }
    CK_LAUNCH();
}
