/*
 * hc.cu - manifold-constrained hyper-connections on the GPU: hc_pre (mixing
 * coefficients with Sinkhorn, collapse), hc_post (expand + mix) and the final
 * HC head. One block per token; the Sinkhorn iterations of a token run in one
 * thread (hc x hc is tiny) through the same dsv4_hc_split as the CPU backend.
 */
#include "backend/cuda/common.cuh"
#include "backend/hc_math.h"

#define HC_MAX 16

__global__ void k_hc_pre(dsv4_hc_params p, const float *X, float *u, float *post, float *comb, bool head)
{
    __shared__ float sh[32];
    __shared__ float m[(2 + HC_MAX) * HC_MAX];
    __shared__ float pre[HC_MAX];
    const int t = blockIdx.x, hc = p.hc, D = p.dim, F = hc * D;
    const int n_mix = head ? hc : (2 + hc) * hc;
    const float *x = X + (size_t)t * F;
    float s = 0;
    for (int i = threadIdx.x; i < F; i += blockDim.x) s += x[i] * x[i];
    s = block_sum(s, sh);
    const float rho = 1.0f / sqrtf(s / (float)F + p.norm_eps);
    /* one warp per mixing row */
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int r = wid; r < n_mix; r += nw) {
        float a = 0;
        for (int i = lane; i < F; i += 32) a += p.fn[(size_t)r * F + i] * x[i];
        a = warp_sum(a);
        if (lane == 0) m[r] = a * rho;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        if (head) {
            for (int i = 0; i < hc; i++) pre[i] = dsv4_sigmoid(m[i] * p.scale[0] + p.base[i]) + p.hc_eps;
        } else {
            dsv4_hc_split(m, p.scale, p.base, hc, p.sinkhorn_iters, p.hc_eps, pre, post + (size_t)t * hc,
                     comb + (size_t)t * hc * hc);
        }
    }
    __syncthreads();
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float a = 0;
        for (int i = 0; i < hc; i++) a += pre[i] * x[(size_t)i * D + d];
        u[(size_t)t * D + d] = a;
    }
}

void cuda_hc_pre(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u, float *post, float *comb)
{
    if (n <= 0) return;
    if (p->hc > HC_MAX) abort(); /* refused at config load */
    k_hc_pre<<<n, 256, 0, impl_of(be)->stream>>>(*p, X, u, post, comb, false);
    CK_LAUNCH();
}

void cuda_hc_head(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u)
{
    if (n <= 0) return;
    if (p->hc > HC_MAX) abort();
    k_hc_pre<<<n, 256, 0, impl_of(be)->stream>>>(*p, X, u, NULL, NULL, true);
    CK_LAUNCH();
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
