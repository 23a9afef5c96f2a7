/*
 * attn.cu - sparse attention with sinks on the GPU (MODEL.md §3.6): a query
 * sees its window rows (ring for earlier steps, this step's rows otherwise)
 * and its compressed rows (the indexer's choice on CSA layers, all visible
 * rows on HCA layers).
 *
 * Every head of a token reads the same K = V rows. Heads together
 * (head_dim <= 512, heads <= 64): k_attn_hs scores 8 heads per row it loads
 * (block: token, 8 heads, part of the rows; the rows through shared memory),
 * k_attn_md takes each (token, head)'s max and sum in a fixed order and turns
 * the scores into weights, and k_attn_hpv sums the weighted rows for all
 * heads at once (block: token, 64 dimensions, part; a cluster of the parts,
 * added in part order). The grid fills the GPU at batch 1 and a token's
 * result depends on its own rows only (batch invariance). The first layout
 * (one block per (token, head) walking every row: 64 blocks at batch 1)
 * stays as k_attn: the benchmark baseline (DSV4_ATTN_NAIVE=1,
 * dsv4_cuda_attn_naive) and the path for other shapes.
 */
#include <cooperative_groups.h>

#include "backend/cuda/common.cuh"

namespace cg = cooperative_groups;

#define AT_PARTS 8 /* parts of a token's rows: a cluster in k_attn_hpv */

struct attn_args {
    int kind, ratio, H, hd, window, topk, max_rows;
    float scale;
    bool reference;
    const float *sinks;
    const float *slots;
    const float *pages;
    size_t slot_floats, page_floats, win_off, pg_off;
    int page_tokens, max_pages;
};

__device__ static const float *row_ptr(const attn_args &A, const dsv4_seg &s, int64_t pos, int t, int j, int nwin,
                                       int64_t lo, const float *kv_new, const int32_t *idx, const int32_t *page_table)
{
    if (j < nwin) {
        const int64_t q = lo + j;
        if (q >= s.pos0) return kv_new + (size_t)(s.t0 + (q - s.pos0)) * A.hd;
        return A.slots + (size_t)s.slot * A.slot_floats + A.win_off + (size_t)(q % A.window) * A.hd;
    }
    const int64_t c = A.kind == DSV4_ATTN_CSA ? idx[(size_t)t * A.topk + (j - nwin)] : (int64_t)(j - nwin);
    return cmp_row((float *)A.pages, page_table, A.max_pages, A.page_tokens, A.page_floats, A.pg_off, s.slot, c,
                   A.ratio, A.hd);
}

/* The rows a (token, head) sees: nwin window rows, then ncmp compressed. */
__device__ static int attn_rows(const attn_args &A, int64_t pos, int t, const int32_t *cnt, int64_t &lo, int &nwin)
{
    lo = pos - A.window + 1 > 0 ? pos - A.window + 1 : 0;
    nwin = (int)(pos - lo + 1);
    int ncmp = 0;
    if (A.kind == DSV4_ATTN_CSA) ncmp = cnt[t];
    else if (A.kind == DSV4_ATTN_HCA) ncmp = (int)((pos + 1) / A.ratio);
    return nwin + ncmp;
}

/* Max and sum of the nr scores of one (token, head) in a fixed order (the
 * block's threads, block_max / block_sum); the scores become the weights
 * exp(s - max) (BF16 in reference numerics) in place. Returns the sum plus
 * the sink's mass (it adds to the denominator, no value). */
__device__ static float attn_weights(const attn_args &A, float *sc, int nr, int h, float *sh)
{
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < nr; j += blockDim.x) mx = fmaxf(mx, sc[j]);
    mx = block_max(mx, sh);
    float den = 0;
    for (int j = threadIdx.x; j < nr; j += blockDim.x) {
        const float e = expf(sc[j] - mx);
        sc[j] = A.reference ? dsv4_round_bf16(e) : e;
        den += e;
    }
    return block_sum(den, sh) + expf(A.sinks[h] - mx);
}

__global__ void k_attn(attn_args A, const dsv4_seg *segs, const int32_t *tok_seg, const int64_t *posv,
                       const int32_t *page_table, const float *q, const float *kv_new, const int32_t *idx,
                       const int32_t *cnt, float *scores, const float **rows, float *out)
{
    __shared__ float sh[32];
    const int t = blockIdx.x / A.H, h = blockIdx.x % A.H;
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const dsv4_seg s = segs[tok_seg[t]];
    const int64_t pos = posv[t];
    int64_t lo;
    int nwin;
    const int nr = attn_rows(A, pos, t, cnt, lo, nwin);
    const float *qh = q + ((size_t)t * A.H + h) * A.hd;
    float *sc = scores + (size_t)blockIdx.x * A.max_rows;
    const float **rp = rows + (size_t)blockIdx.x * A.max_rows;
    /* one warp per row: lanes stride the head dimension, a fixed butterfly */
    for (int j = wid; j < nr; j += nw) {
        const float *r = row_ptr(A, s, pos, t, j, nwin, lo, kv_new, idx, page_table);
        float d = 0;
        for (int i = lane; i < A.hd; i += 32) d += qh[i] * r[i];
        d = warp_sum(d) * A.scale;
        if (lane == 0) {
            sc[j] = d;
            rp[j] = r;
        }
    }
    __syncthreads();
    const float den = attn_weights(A, sc, nr, h, sh);
    float *o = out + ((size_t)t * A.H + h) * A.hd;
    for (int i = threadIdx.x; i < A.hd; i += blockDim.x) {
        float acc = 0;
        for (int j = 0; j < nr; j++) acc += sc[j] * rp[j][i];
        o[i] = acc / den;
    }
}

/* ---- heads together: every head of a token reads the same K = V rows, so a
 * block serves 8 heads (scores) or all heads (weighted sum) per row it
 * loads, instead of one. For head_dim <= HS_MAXD and n_heads <= HS_HEADS. */
#define HS_MAXD 512   /* head_dim: 16 q values per lane */
#define HS_HEADS 64   /* heads of a weighted-sum block: one per 4 threads */
#define HS_RT 16      /* rows per tile of the scores kernel */
#define HS_PT 32      /* rows per tile of the weighted-sum kernel */

/* Scores: block (token, group of 8 heads, part); warp w = head 8 g + w, its q
 * in registers; the part's rows go through shared memory a tile at a time,
 * each scored exactly as k_attn scores it. Row addresses per token. */
__global__ void __launch_bounds__(256) k_attn_hs(attn_args A, const dsv4_seg *segs, const int32_t *tok_seg,
                                                 const int64_t *posv, const int32_t *page_table, const float *q,
                                                 const float *kv_new, const int32_t *idx, const int32_t *cnt,
                                                 float *scores, const float **rows)
{
    __shared__ __align__(16) float rs[HS_RT][HS_MAXD];
    __shared__ const float *rps[HS_RT];
    const int t = blockIdx.x, part = blockIdx.z, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int h = blockIdx.y * 8 + w;
    const dsv4_seg s = segs[tok_seg[t]];
    const int64_t pos = posv[t];
    int64_t lo;
    int nwin;
    const int nr = attn_rows(A, pos, t, cnt, lo, nwin);
    const int np = gridDim.z; /* parts: any number gives the same scores */
    const int j0 = (int)((int64_t)nr * part / np), j1 = (int)((int64_t)nr * (part + 1) / np);
    float qv[HS_MAXD / 32];
#pragma unroll
    for (int k = 0; k < HS_MAXD / 32; k++) {
        const int i = lane + 32 * k;
        qv[k] = h < A.H && i < A.hd ? q[((size_t)t * A.H + h) * A.hd + i] : 0.0f;
    }
    float *sc = scores + ((size_t)t * A.H + h) * A.max_rows;
    for (int jt = j0; jt < j1; jt += HS_RT) {
        const int nt = j1 - jt < HS_RT ? j1 - jt : HS_RT;
        __syncthreads();
        if (threadIdx.x < nt) {
            const float *r = row_ptr(A, s, pos, t, jt + threadIdx.x, nwin, lo, kv_new, idx, page_table);
            rps[threadIdx.x] = r;
            if (blockIdx.y == 0) rows[(size_t)t * A.max_rows + jt + threadIdx.x] = r;
        }
        __syncthreads();
        if ((A.hd & 3) == 0) { /* rows of whole 16-byte chunks (aligned ones copied as such) */
            const int q4 = A.hd / 4;
            for (int e = threadIdx.x; e < nt * q4; e += blockDim.x) {
                const int j = e / q4, c = e % q4;
                const float *src = rps[j] + 4 * c;
                if (((uintptr_t)src & 15) == 0) ((float4 *)rs[j])[c] = *(const float4 *)src;
                else
                    for (int k = 0; k < 4; k++) rs[j][4 * c + k] = src[k];
            }
        } else {
            for (int e = threadIdx.x; e < nt * A.hd; e += blockDim.x) rs[e / A.hd][e % A.hd] = rps[e / A.hd][e % A.hd];
        }
        __syncthreads();
        if (h >= A.H) continue;
        for (int j = 0; j < nt; j++) {
            float d = 0;
#pragma unroll
            for (int k = 0; k < HS_MAXD / 32; k++)
                if (lane + 32 * k < A.hd) d += qv[k] * rs[j][lane + 32 * k];
            d = warp_sum(d) * A.scale;
            if (lane == 0) sc[jt + j] = d;
        }
    }
}

/* A block per (token, head): attn_weights, as k_attn takes them; den gets
 * the denominator. */
__global__ void k_attn_md(attn_args A, const int64_t *posv, const int32_t *cnt, float *scores, float *den)
{
    __shared__ float sh[32];
    const int t = blockIdx.x / A.H, h = blockIdx.x % A.H;
    int64_t lo;
    int nwin;
    const int nr = attn_rows(A, posv[t], t, cnt, lo, nwin);
    const float dn = attn_weights(A, scores + (size_t)blockIdx.x * A.max_rows, nr, h, sh);
    if (threadIdx.x == 0) den[blockIdx.x] = dn;
}

/* Weighted sum: block (token, SL dimensions, part), a cluster along the
 * AT_PARTS parts; thread = (head tid / 4, SL / 4 dimensions); the part's rows
 * (their SL dimensions) and weights go through shared memory a tile at a
 * time, added in row order; part 0 adds the parts in order and divides. A
 * dimension's sum is the same whatever SL is (narrower slices: more blocks
 * for small batches). */
template <int SL>
__global__ void __launch_bounds__(256) k_attn_hpv(attn_args A, const int64_t *posv, const int32_t *cnt,
                                                  const float *scores, const float **rows, const float *den,
                                                  float *out)
{
    constexpr int DPT = SL / 4; /* dimensions per thread */
    __shared__ __align__(16) float rs[HS_PT][SL];
    __shared__ float es[HS_HEADS][HS_PT + 1];
    __shared__ float red[DPT][256];
    const int t = blockIdx.x, part = blockIdx.z, h = threadIdx.x >> 2, d0 = blockIdx.y * SL + DPT * (threadIdx.x & 3);
    int64_t lo;
    int nwin;
    const int nr = attn_rows(A, posv[t], t, cnt, lo, nwin);
    const int j0 = (int)((int64_t)nr * part / AT_PARTS), j1 = (int)((int64_t)nr * (part + 1) / AT_PARTS);
    const float **rp = rows + (size_t)t * A.max_rows;
    float acc[DPT];
#pragma unroll
    for (int k = 0; k < DPT; k++) acc[k] = 0.0f;
    for (int jt = j0; jt < j1; jt += HS_PT) {
        const int nt = j1 - jt < HS_PT ? j1 - jt : HS_PT;
        __syncthreads();
        if ((A.hd & 3) == 0) /* 16-byte chunks of the slice */
            for (int e = threadIdx.x; e < nt * SL / 4; e += blockDim.x) {
                const int j = e / (SL / 4), c = e % (SL / 4), i = blockIdx.y * SL + 4 * c;
                const float *src = rp[jt + j] + i;
                if (i >= A.hd) ((float4 *)rs[j])[c] = make_float4(0, 0, 0, 0);
                else if (((uintptr_t)src & 15) == 0) ((float4 *)rs[j])[c] = *(const float4 *)src;
                else
                    for (int k = 0; k < 4; k++) rs[j][4 * c + k] = src[k];
            }
        else
            for (int e = threadIdx.x; e < nt * SL; e += blockDim.x) {
                const int j = e / SL, i = blockIdx.y * SL + e % SL;
                rs[j][e % SL] = i < A.hd ? rp[jt + j][i] : 0.0f;
            }
        for (int e = threadIdx.x; e < HS_HEADS * nt; e += blockDim.x) {
            const int hh = e / nt, j = e % nt;
            es[hh][j] = hh < A.H ? scores[((size_t)t * A.H + hh) * A.max_rows + jt + j] : 0.0f;
        }
        __syncthreads();
        for (int j = 0; j < nt; j++) {
            const float wgt = es[h][j];
            const float4 *r4 = (const float4 *)&rs[j][DPT * (threadIdx.x & 3)];
#pragma unroll
            for (int k = 0; k < DPT / 4; k++) {
                const float4 v = r4[k];
                acc[4 * k] += wgt * v.x;
                acc[4 * k + 1] += wgt * v.y;
                acc[4 * k + 2] += wgt * v.z;
                acc[4 * k + 3] += wgt * v.w;
            }
        }
    }
#pragma unroll
    for (int k = 0; k < DPT; k++) red[k][threadIdx.x] = acc[k];
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    if (part == 0 && h < A.H) {
        for (int p = 1; p < AT_PARTS; p++) {
            const float *o = cl.map_shared_rank(&red[0][0], p);
#pragma unroll
            for (int k = 0; k < DPT; k++) acc[k] += o[k * 256 + threadIdx.x];
        }
        const float dn = den[t * A.H + h];
        float *ot = out + ((size_t)t * A.H + h) * A.hd;
#pragma unroll
        for (int k = 0; k < DPT; k++)
            if (d0 + k < A.hd) ot[d0 + k] = acc[k] / dn;
    }
    cl.sync(); /* the other parts' shared memory stays until part 0 has read it */
}

static int attn_naive = -1;
extern "C" void dsv4_cuda_attn_naive(int on) { attn_naive = on; }

void cuda_attn(dsv4_backend *be, const dsv4_attn_params *p, const dsv4_plan *plan, const dsv4_kv *kv, const float *q,
               const float *kv_new, const int32_t *idx, const int32_t *cnt, float *out)
{
    cuda_impl *im = impl_of(be);
    int max_rows = p->window;
    if (p->kind == DSV4_ATTN_CSA) max_rows += p->topk;
    if (p->kind == DSV4_ATTN_HCA) {
        /* a graph serves every step of its size: bound by the context limit */
        int64_t mx = im->graph_mode ? kv->max_ctx - 1 : 0;
        if (!im->graph_mode)
            for (int t = 0; t < plan->n_tok; t++) mx = plan->pos[t] > mx ? plan->pos[t] : mx;
        max_rows += (int)((mx + 1) / p->ratio);
    }
    attn_args A;
    A.kind = p->kind;
    A.ratio = p->ratio;
    A.H = p->n_heads;
    A.hd = p->head_dim;
    A.window = p->window;
    A.topk = p->topk;
    A.max_rows = max_rows;
    A.scale = p->scale;
    A.reference = p->reference;
    A.sinks = p->sinks;
    A.slots = kv->slots;
    A.pages = kv->pages;
    A.slot_floats = kv->slot_floats;
    A.page_floats = kv->page_floats;
    A.win_off = kv->layer[p->layer].win;
    A.pg_off = kv->layer[p->layer].pg_cmp;
    A.page_tokens = kv->page_tokens;
    A.max_pages = kv->max_pages_per_seq;
    if (attn_naive < 0) {
        const char *e = getenv("DSV4_ATTN_NAIVE");
        attn_naive = e && e[0] == '1';
    }
    if (!attn_naive && p->head_dim <= HS_MAXD && p->n_heads <= HS_HEADS) { /* heads together */
        const size_t nt = (size_t)plan->n_tok;
        char *sp = (char *)cuda_scratch(be, CS_ROWS, nt * max_rows * sizeof(float *) +
                                                         nt * p->n_heads * (max_rows + 1) * sizeof(float));
        const float **hrows = (const float **)sp;
        float *hsc = (float *)(sp + nt * max_rows * sizeof(float *));
        float *hden = hsc + nt * p->n_heads * max_rows;
        /* small batches: more blocks (the scores are the same for any part count,
         * a dimension's weighted sum for any slice width) */
        const int hs_parts = nt <= 2 ? 32 : nt <= 4 ? 16 : AT_PARTS, sl = nt <= 2 ? 16 : nt <= 8 ? 32 : 64;
        k_attn_hs<<<dim3((unsigned)nt, (unsigned)((p->n_heads + 7) / 8), hs_parts), 256, 0, im->stream>>>(
            A, im->d_segs, im->d_tok_seg, im->d_pos, im->d_page_table, q, kv_new, idx, cnt, hsc, hrows);
        CK_LAUNCH();
        k_attn_md<<<(unsigned)(nt * p->n_heads), 128, 0, im->stream>>>(A, im->d_pos, cnt, hsc, hden);
        CK_LAUNCH();
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3((unsigned)nt, (unsigned)((p->head_dim + sl - 1) / sl), AT_PARTS);
        cfg.blockDim = dim3(256);
        cfg.stream = im->stream;
        cudaLaunchAttribute at;
        at.id = cudaLaunchAttributeClusterDimension;
        at.val.clusterDim.x = 1;
        at.val.clusterDim.y = 1;
        at.val.clusterDim.z = AT_PARTS;
        cfg.attrs = &at;
        cfg.numAttrs = 1;
        if (sl == 16)
            CK(cudaLaunchKernelEx(&cfg, k_attn_hpv<16>, A, (const int64_t *)im->d_pos, cnt, (const float *)hsc, hrows,
                                  (const float *)hden, out));
        else if (sl == 32)
            CK(cudaLaunchKernelEx(&cfg, k_attn_hpv<32>, A, (const int64_t *)im->d_pos, cnt, (const float *)hsc, hrows,
                                  (const float *)hden, out));
        else
            CK(cudaLaunchKernelEx(&cfg, k_attn_hpv<64>, A, (const int64_t *)im->d_pos, cnt, (const float *)hsc, hrows,
                                  (const float *)hden, out));
        return;
    }
    const size_t nrows = (size_t)plan->n_tok * p->n_heads * max_rows;
    char *scr = (char *)cuda_scratch(be, CS_ROWS, nrows * (sizeof(float) + sizeof(float *)));
    const float **rows = (const float **)scr; /* pointers first: 8-byte aligned */
    float *scores = (float *)(scr + nrows * sizeof(float *));
    k_attn<<<plan->n_tok * p->n_heads, 128, 0, im->stream>>>(A, im->d_segs, im->d_tok_seg, im->d_pos,
                                                             im->d_page_table, q, kv_new, idx, cnt, scores, rows, out);
    CK_LAUNCH();
}
