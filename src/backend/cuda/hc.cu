/*
 * hc.cu - manifold-constrained hyper-connections on the GPU: hc_pre (mixing
 * coefficients with Sinkhorn, collapse), hc_post (expand + mix) and the final
 * HC head. The mixing logits are one linear over the step's tokens; a
 * token's Sinkhorn iterations do dsv4_hc_split's arithmetic (the CPU's) with
 * each row and column sum in one thread and the divisions side by side; the
 * collapse is elementwise.
 */
#include "backend/cuda/common.cuh"
#include "backend/hc_math.h"

#define HC_MAX 16

/* Per token: rho = 1 / RMS of the streams, the mixing logits m (raw dot
 * products, from the linear) times rho, then Sinkhorn (or the head's
 * sigmoid) into pre (scratch), post and comb. */
__global__ void k_hc_split(dsv4_hc_params p, const float *X, const float *mraw, float *pre_out, float *post,
                           float *comb, bool head)
{
    __shared__ float sh[32];
    __shared__ float m[(2 + HC_MAX) * HC_MAX];
    const int t = blockIdx.x, hc = p.hc, F = hc * p.dim;
    const int n_mix = head ? hc : (2 + hc) * hc;
    const float *x = X + (size_t)t * F;
    const float s = block_sum(sumsq_strided<16>(x, F), sh);
    const float rho = 1.0f / sqrtf(s / (float)F + p.norm_eps);
    for (int r = threadIdx.x; r < n_mix; r += blockDim.x) m[r] = mraw[(size_t)t * n_mix + r] * rho;
    __syncthreads();
    /* dsv4_hc_split's arithmetic, spread over threads: every sum is still one
     * thread adding in the CPU's order, the divisions run side by side */
    __shared__ float s_pre[HC_MAX], s_post[HC_MAX], s_comb[HC_MAX * HC_MAX], s_sum[HC_MAX];
    const int tid = threadIdx.x;
    const float eps = p.hc_eps;
    if (tid < hc) {
        s_pre[tid] = dsv4_sigmoid(m[tid] * p.scale[0] + p.base[tid]) + eps;
        if (!head) {
            s_post[tid] = 2.0f * dsv4_sigmoid(m[hc + tid] * p.scale[1] + p.base[hc + tid]);
            float *row = s_comb + tid * hc, mx = -INFINITY, sm = 0;
            for (int k = 0; k < hc; k++) {
                row[k] = m[2 * hc + tid * hc + k] * p.scale[2] + p.base[2 * hc + tid * hc + k];
                mx = fmaxf(mx, row[k]);
            }
            for (int k = 0; k < hc; k++) sm += (row[k] = expf(row[k] - mx));
            for (int k = 0; k < hc; k++) row[k] = row[k] / sm + eps;
        }
    }
    __syncthreads();
    if (!head)
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
    for (int i = threadIdx.x; i < hc; i += blockDim.x) {
        pre_out[(size_t)t * hc + i] = s_pre[i];
        if (!head) post[(size_t)t * hc + i] = s_post[i];
    }
    if (!head)
        for (int i = threadIdx.x; i < hc * hc; i += blockDim.x) comb[(size_t)t * hc * hc + i] = s_comb[i];
}

/* u[t, d] = sum_i pre[t, i] X[t, i, d] */
__global__ void k_hc_collapse(int hc, int D, int n, const float *X, const float *pre, float *u)
{
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (int64_t)n * D) return;
    const int t = (int)(id / D), d = (int)(id % D);
    const float *x = X + (size_t)t * hc * D, *pt = pre + (size_t)t * hc;
    float a = 0;
    for (int i = 0; i < hc; i++) a += pt[i] * x[(size_t)i * D + d];
    u[id] = a;
}

/* The mixing logits as one linear over all tokens (fn read once per group of
 * tokens, spread over the GPU), the per-token split, then the collapse. */
static void hc_pre_run(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u, float *post,
                       float *comb, bool head)
{
    if (n <= 0) return;
    if (p->hc > HC_MAX) abort(); /* refused at config load */
    cuda_impl *im = impl_of(be);
    const int hc = p->hc, F = hc * p->dim, n_mix = head ? hc : (2 + hc) * hc;
    float *mraw = (float *)cuda_scratch(be, CS_HC, (size_t)n * (n_mix + hc) * sizeof(float));
    float *pre = mraw + (size_t)n * n_mix;
    dsv4_w fn = {.name = "hc fn", .dtype = DSV4_DT_F32, .fmt = DSV4_WF_FLOAT, .ndim = 2, .ne = {n_mix, F},
                 .dev = (void *)p->fn}; /* the FP32 matrix as a weight, so wdesc_of picks its path */
    const wdesc w = wdesc_of(&fn);
    cuda_linear_desc(be, w, X, F, n, mraw, n_mix);
    k_hc_split<<<n, 256, 0, im->stream>>>(*p, X, mraw, pre, post, comb, head);
    CK_LAUNCH();
    const int64_t total = (int64_t)n * p->dim;
    k_hc_collapse<<<(unsigned)((total + 255) / 256), 256, 0, im->stream>>>(hc, p->dim, n, X, pre, u);
    CK_LAUNCH();
}

void cuda_hc_pre(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u, float *post, float *comb)
{
    hc_pre_run(be, p, X, n, u, post, comb, false);
}

void cuda_hc_head(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u)
{
    hc_pre_run(be, p, X, n, u, NULL, NULL, true);
}

__global__ void k_hc_post(int hc, int dim, const float *o, const float *post, const float *comb, int n, float *X)
{
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (int64_t)n * dim) return;
    const int t = (int)(id / dim), d = (int)(id % dim);
    float *x = X + (size_t)t * hc * dim;
    const float *pt = post + (size_t)t * hc, *ct = comb + (size_t)t * hc * hc;
    float old[HC_MAX];
    for (int j = 0; j < hc; j++) old[j] = x[(size_t)j * dim + d];
    const float ov = o[(size_t)t * dim + d];
    for (int k = 0; k < hc; k++) {
        float s = pt[k] * ov;
        for (int j = 0; j < hc; j++) s += ct[j * hc + k] * old[j];
        x[(size_t)k * dim + d] = s;
    }
}

void cuda_hc_post(dsv4_backend *be, int hc, int dim, const float *o, const float *post, const float *comb, int n,
                  float *X)
{
    const int64_t total = (int64_t)n * dim;
    if (total <= 0) return;
    k_hc_post<<<(unsigned)((total + 255) / 256), 256, 0, impl_of(be)->stream>>>(hc, dim, o, post, comb, n, X);
    CK_LAUNCH();
}
