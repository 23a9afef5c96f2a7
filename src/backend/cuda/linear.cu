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
#define LIN_TOK 8 /* tokens per warp at most: each weight element is decoded once for all of them */

/* S warps per (output row, group of up to NT tokens), S in {1, 2, 4, 8}
 * chosen from the weight's shape alone: a matrix of few rows is split along
 * its columns so the grid fills the GPU. Each warp reduces its lanes with
 * the fixed butterfly, then the first warp of the row adds the parts in
 * order. NT (1, 2, 4 or 8: the step's token count rounded up) only sets how
 * many tokens share a weight decode and how many accumulators a lane holds
 * (registers, hence occupancy): each token's products, their order and the
 * reductions are the same for every NT, so every token's output is the same
 * computation whatever the batch (batch invariance). */
template <int NT>
__global__ void __launch_bounds__(32 * LIN_WARPS) k_linear(wdesc w, const float *x, int ldx, int n, float *y,
                                                            int ldy, int S, size_t xg, size_t yg)
{
    __shared__ float part_sum[LIN_WARPS][NT];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    /* group blockIdx.z (linear_groups): its w.rows rows, its slice of x and of y */
    w.row0 += (int64_t)blockIdx.z * w.rows;
    x += blockIdx.z * xg;
    y += blockIdx.z * yg;
    const int64_t r = (int64_t)blockIdx.x * (LIN_WARPS / S) + wid / S;
    const int part = wid % S;
    const int t0 = blockIdx.y * NT;
    const int nt = n - t0 < NT ? n - t0 : NT;
    float acc[NT];
#pragma unroll
    for (int k = 0; k < NT; k++) acc[k] = 0;
    if (r < w.rows) row_dot<NT>(w, w.row0 + r, x + (size_t)t0 * ldx, ldx, nt, acc, part, S);
#pragma unroll
    for (int k = 0; k < NT; k++) {
        const float v = warp_sum(acc[k]);
        if (lane == 0) part_sum[wid][k] = v;
    }
    if (S > 1) __syncthreads();
    else __syncwarp(); /* lane 0's sums are read by the other lanes */
    if (r >= w.rows || part != 0 || lane >= nt) return;
    float v = part_sum[wid][lane];
    for (int p = 1; p < S; p++) v += part_sum[wid + p][lane];
    y[(size_t)(t0 + lane) * ldy + r] = v;
}

/* Reference numerics' activation quantisation: each 128-wide block of a
 * row scaled by a power of two from its absolute maximum and rounded to
 * E4M3. One warp per (row, block), each lane four elements 32 apart (loads
 * coalesced), the maximum by shuffles: a maximum does not depend on its
 * order, and every element's arithmetic is elementwise, so the values are
 * the same as one thread per block walking it. In place (out == x) is safe:
 * a lane writes only what it read. */
#define AQ_WARPS 8
__global__ void k_act_quant(const float *x, int ldx, int in, int n, float *out)
{
    const int lane = threadIdx.x & 31;
    const int nb = (in + 127) / 128;
    const int64_t wg = (int64_t)blockIdx.x * AQ_WARPS + (threadIdx.x >> 5);
    if (wg >= (int64_t)n * nb) return;
    const int t = (int)(wg / nb), b0 = (int)(wg % nb) * 128;
    const float *xr = x + (size_t)t * ldx;
    float *o = out + (size_t)t * in;
    float v[4];
    float amax = 1e-4f;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int i = b0 + lane + 32 * j;
        v[j] = i < in && i < b0 + 128 ? dsv4_round_bf16(xr[i]) : 0.0f; /* BF16 values first, as the CPU */
        amax = fmaxf(amax, fabsf(v[j]));
    }
#pragma unroll
    for (int off = 16; off; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
    const float sc = dsv4_pow2_ceil_scale(amax, 448.0f);
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int i = b0 + lane + 32 * j;
        if (i < in && i < b0 + 128) o[i] = dsv4_e4m3_code(v[j], sc) * sc;
    }
}

void cuda_act_quant(dsv4_backend *be, const float *x, int ldx, int n, int in, float *out)
{
    const int64_t warps = (int64_t)n * ((in + 127) / 128);
    if (warps <= 0) return;
    k_act_quant<<<(unsigned)((warps + AQ_WARPS - 1) / AQ_WARPS), 32 * AQ_WARPS, 0, impl_of(be)->stream>>>(x, ldx, in,
                                                                                                        n, out);
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

/* G groups of w.rows rows each (linear_groups; G = 1: one linear) in one launch. */
static void linear_launch(dsv4_backend *be, const wdesc &w, int G, const float *x, int ldx, size_t xg, int n,
                          float *y, int ldy, size_t yg)
{
    const int S = linear_split(w), rows_per_block = LIN_WARPS / S;
    const int NT = n >= LIN_TOK ? LIN_TOK : n > 2 ? 4 : n; /* the token count rounded up to 1, 2, 4, 8 */
    dim3 grid((unsigned)((w.rows + rows_per_block - 1) / rows_per_block), (unsigned)((n + NT - 1) / NT),
              (unsigned)G);
    cudaStream_t st = impl_of(be)->stream;
    switch (NT) {
    case 1: k_linear<1><<<grid, 32 * LIN_WARPS, 0, st>>>(w, x, ldx, n, y, ldy, S, xg, yg); break;
    case 2: k_linear<2><<<grid, 32 * LIN_WARPS, 0, st>>>(w, x, ldx, n, y, ldy, S, xg, yg); break;
    case 4: k_linear<4><<<grid, 32 * LIN_WARPS, 0, st>>>(w, x, ldx, n, y, ldy, S, xg, yg); break;
    default: k_linear<LIN_TOK><<<grid, 32 * LIN_WARPS, 0, st>>>(w, x, ldx, n, y, ldy, S, xg, yg); break;
    }
    CK_LAUNCH();
}

/* Reference numerics' BF16 activations in front of a BF16 weight (dsv4_backend.act_quant): x's rows rounded
 * to BF16 into out (n x in). */
__global__ void k_round_rows_bf16(const float *x, int ldx, int in, int n, float *out)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n * in) return;
    out[i] = dsv4_round_bf16(x[(size_t)(i / in) * ldx + i % in]);
}

void cuda_linear_desc(dsv4_backend *be, const wdesc &w, const float *x, int ldx, int n, float *y, int ldy)
{
    linear_launch(be, w, 1, x, ldx, 0, n, y, ldy, 0);
}

void cuda_linear(dsv4_backend *be, const dsv4_w *w, const float *x, int ldx, int n, float *y, int ldy)
{
    if (n <= 0 || w->ne[0] <= 0) return;
    const wdesc d = wdesc_of(w);
    const bool ref = be->act_quant && !w->no_act_quant;
    if (ref && cuda_wg8_eligible(d)) { /* reference numerics: the FP8 tensor cores (wg8.cu) */
        cuda_linear_wg8(be, d, 1, x, ldx, 0, n, y, ldy, 0);
        return;
    }
    if (cuda_mma_eligible(d)) {
        cuda_linear_mma(be, d, 1, x, ldx, 0, n, y, ldy, 0, ref);
        return;
    }
    if (be->act_quant && w->fmt != DSV4_WF_FLOAT && !w->no_act_quant) {
        float *xq = (float *)cuda_scratch(be, CS_ACTQ, (size_t)n * w->ne[1] * sizeof(float));
        cuda_act_quant(be, x, ldx, n, (int)w->ne[1], xq);
        x = xq;
        ldx = (int)w->ne[1];
    } else if (dsv4_bf16_input(be, w)) { /* as the tensor cores' BF16 path does in reference numerics */
        const int in = (int)w->ne[1];
        float *xr = (float *)cuda_scratch(be, CS_ACTQ, (size_t)n * in * sizeof(float));
        const int64_t tot = (int64_t)n * in;
        k_round_rows_bf16<<<(unsigned)((tot + 255) / 256), 256, 0, impl_of(be)->stream>>>(x, ldx, in, n, xr);
        CK_LAUNCH();
        x = xr;
        ldx = in;
    }
    cuda_linear_desc(be, d, x, ldx, n, y, ldy);
}

/* One launch for the G row groups (wo_a's output groups): each group is
 * exactly the linear of its row view - same split (from the group's shape),
 * same order - so the results equal G separate calls. Activation
 * quantisation (reference numerics) works per row of x, so it keeps the
 * separate calls. */
void cuda_linear_groups(dsv4_backend *be, const dsv4_w *w, int G, const float *x, int ldx, size_t xg, int n, float *y,
                        int ldy, size_t yg)
{
    if (n <= 0 || w->ne[0] <= 0 || G <= 0) return;
    const int64_t R = w->ne[0] / G;
    const dsv4_w w0 = dsv4_w_rows(w, 0, R); /* group 0's view: the kernels step row0 by R per group */
    const wdesc d0 = wdesc_of(&w0);
    const bool ref = be->act_quant && !w->no_act_quant;
    if (ref && cuda_wg8_eligible(d0)) {
        cuda_linear_wg8(be, d0, G, x, ldx, xg, n, y, ldy, yg);
        return;
    }
    /* --prefill-gemm cublaslt: wo_a's BF16 activations (reference numerics rounds them) through a BF16 GEMM */
    if (be->act_quant && w->no_act_quant && cuda_lt_bf_takes(be, d0, G, n, y, ldy, yg)) {
        cuda_linear_lt_bf(be, 1, &d0, G, x, ldx, xg, n, &y, &ldy, yg);
        return;
    }
    if (cuda_mma_eligible(d0)) {
        cuda_linear_mma(be, d0, G, x, ldx, xg, n, y, ldy, yg, ref);
        return;
    }
    if (dsv4_reads_bf16(be, w)) { /* cuda_linear's act_quant or BF16(x), group by group */
        for (int g = 0; g < G; g++) {
            const dsv4_w wg = dsv4_w_rows(w, (int64_t)g * R, R);
            cuda_linear(be, &wg, x + g * xg, ldx, n, y + g * yg, ldy);
        }
        return;
    }
    linear_launch(be, wdesc_of(&w0), G, x, ldx, xg, n, y, ldy, yg);
}

/* linear_multi: the weights the tensor cores take go in one pack of x per
 * kind - reference numerics' FP8 on wgmma (cuda_linear_wg8_multi), the
 * other FP8 split by whether their activations are quantised, BF16 (each
 * cuda_linear_mma_multi) - and one launch per part count; every other weight
 * is its own cuda_linear. Each output is computed exactly as by cuda_linear,
 * so the results are those of m calls. */
void cuda_linear_multi(dsv4_backend *be, int m, const dsv4_w *const *w, const float *x, int ldx, int n, float *const *y,
                       const int *ldy)
{
    if (n <= 0) return;
    wdesc d[64];
    float *yy[64];
    int ll[64];
    bool multi[64] = {};
    for (int pass = 0; pass < 5; pass++) { /* FP8 on wgmma, FP8, FP8 with act_quant, BF16, BF16 with BF16(x) */
        int k = 0;
        for (int i = 0; i < m && i < 64; i++) {
            if (multi[i] || w[i]->ne[0] <= 0 || w[i]->fmt != (pass >= 3 ? DSV4_WF_FLOAT : DSV4_WF_FP8)) continue;
            const wdesc di = wdesc_of(w[i]);
            const bool ref = be->act_quant && !w[i]->no_act_quant;
            if (pass == 0 ? !ref || !cuda_wg8_eligible(di) : !cuda_mma_eligible(di) || ref != (pass == 2 || pass == 4))
                continue;
            multi[i] = true;
            d[k] = di, yy[k] = y[i], ll[k] = ldy[i];
            k++;
        }
        if (pass == 0)
            cuda_linear_wg8_multi(be, k, d, x, ldx, n, yy, ll);
        else
            cuda_linear_mma_multi(be, k, d, x, ldx, n, yy, ll, pass == 2 || pass == 4);
    }
    for (int i = 0; i < m; i++)
        if (i >= 64 || !multi[i]) cuda_linear(be, w[i], x, ldx, n, y[i], ldy[i]);
}
