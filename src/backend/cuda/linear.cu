/*
 * linear.cu - y = W x for every weight format, on the GPU.
 *
 * One warp per (output row, group of up to 8 tokens): the row is read 16
 * bytes per lane at a time and decoded once for the whole group
 * (rowdot.cuh), with a fixed butterfly reduction per token: each output is
 * the same computation whatever the batch. Weights are decoded in registers from their
 * checkpoint format (BF16/F16/F32, FP8 block-scaled, MXFP4, NVFP4). In
 * reference numerics the activations in front of FP8/FP4 weights are first
 * quantised to FP8 per 128 (the reference's act_quant).
 */
#include "backend/cuda/rowdot.cuh"

#define LIN_WARPS 8
#define LIN_TOK 8 /* tokens per warp: each weight element is decoded once for all of them */

/* S warps per (output row, group of up to LIN_TOK tokens), S in {1, 2, 4,
 * 8} chosen from the weight's shape alone: a matrix of few rows is split
 * along its columns so the grid fills the GPU. Each warp reduces its lanes
 * with the fixed butterfly, then the first warp of the row adds the parts in
 * order: every token's output is the same computation whatever the batch
 * (batch invariance). */
__global__ void k_linear(wdesc w, const float *x, int ldx, int n, float *y, int ldy, int S)
{
    __shared__ float part_sum[LIN_WARPS][LIN_TOK];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const int64_t r = (int64_t)blockIdx.x * (LIN_WARPS / S) + wid / S;
    const int part = wid % S;
    const int t0 = blockIdx.y * LIN_TOK;
    const int nt = n - t0 < LIN_TOK ? n - t0 : LIN_TOK;
    float acc[LIN_TOK];
#pragma unroll
    for (int k = 0; k < LIN_TOK; k++) acc[k] = 0;
    if (r < w.rows) row_dot<LIN_TOK>(w, w.row0 + r, x + (size_t)t0 * ldx, ldx, nt, acc, part, S);
#pragma unroll
    for (int k = 0; k < LIN_TOK; k++) {
        const float v = warp_sum(acc[k]);
        if (lane == 0) part_sum[wid][k] = v;
    }
    if (S > 1) __syncthreads();
    if (r >= w.rows || part != 0 || lane >= nt) return;
    float v = part_sum[wid][lane];
    for (int p = 1; p < S; p++) v += part_sum[wid + p][lane];
    y[(size_t)(t0 + lane) * ldy + r] = v;
}

__global__ void k_act_quant(const float *x, int ldx, int in, float *out)
{
    const int t = blockIdx.x;
    const float *xr = x + (size_t)t * ldx;
    float *o = out + (size_t)t * in;
    for (int b0 = threadIdx.x * 128; b0 < in; b0 += blockDim.x * 128) {
        const int b1 = b0 + 128 < in ? b0 + 128 : in;
        float amax = 1e-4f;
        for (int i = b0; i < b1; i++) amax = fmaxf(amax, fabsf(xr[i]));
        const float sc = dsv4_pow2_ceil_scale(amax, 448.0f);
        for (int i = b0; i < b1; i++) o[i] = dsv4_e4m3_round(fminf(fmaxf(xr[i] / sc, -448.0f), 448.0f)) * sc;
    }
}

void cuda_act_quant(dsv4_backend *be, const float *x, int ldx, int n, int in, float *out)
{
    k_act_quant<<<n, 32, 0, impl_of(be)->stream>>>(x, ldx, in, out);
    CK_LAUNCH();
}

/* Warps per row: enough rows x parts to fill the GPU (about 4,096 warps),
 * at most 8, and each part at least two strips of 32 chunks. Shape only. */
static int linear_split(const wdesc &w)
{
    const int64_t strips = !w.vec ? (w.cols + 31) / 32 : (w.row_bytes / (w.chunk16 ? 16 : 4) + 31) / 32;
    int S = 1;
    while (S < LIN_WARPS && w.rows * S < 4096 && strips >= 4 * S) S *= 2;
    return S;
}

void cuda_linear_desc(dsv4_backend *be, const wdesc &w, const float *x, int ldx, int n, float *y, int ldy)
{
    const int S = linear_split(w), rows_per_block = LIN_WARPS / S;
    dim3 grid((unsigned)((w.rows + rows_per_block - 1) / rows_per_block), (unsigned)((n + LIN_TOK - 1) / LIN_TOK));
    k_linear<<<grid, 32 * LIN_WARPS, 0, impl_of(be)->stream>>>(w, x, ldx, n, y, ldy, S);
    CK_LAUNCH();
}

void cuda_linear(dsv4_backend *be, const dsv4_w *w, const float *x, int ldx, int n, float *y, int ldy)
{
    if (n <= 0 || w->ne[0] <= 0) return;
    cuda_impl *im = impl_of(be);
    if (be->act_quant && w->fmt != DSV4_WF_FLOAT && !w->no_act_quant) {
        float *xq = (float *)cuda_scratch(be, CS_ACTQ, (size_t)n * w->ne[1] * sizeof(float));
        cuda_act_quant(be, x, ldx, n, (int)w->ne[1], xq);
        x = xq;
        ldx = (int)w->ne[1];
    }
    cuda_linear_desc(be, wdesc_of(w), x, ldx, n, y, ldy);
}
