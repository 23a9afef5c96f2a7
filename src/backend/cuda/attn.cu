/*
 * attn.cu - sparse attention with sinks on the GPU (MODEL.md §3.6): a query
 * sees its window rows (ring for earlier steps, this step's rows otherwise)
 * and its compressed rows (the indexer's choice on CSA layers, all visible
 * rows on HCA layers).
 *
 * Split along the rows: k_attn_scores scores them with AT_PARTS blocks per
 * (token, head) (a warp per row, its address kept); k_attn_pv runs a cluster
 * of AT_PARTS blocks per (token, head): each takes the fixed-order max and
 * sum over all the rows (the same values in every block), the weighted sum
 * over its share of the rows, and the shares are added in part order - so
 * the grid fills the GPU at batch 1 and a token's result depends on its own
 * rows only. The first layout (one block per (token, head) walking every
 * row: 64 blocks at batch 1) stays as k_attn, the benchmark baseline
 * (DSV4_ATTN_NAIVE=1, dsv4_cuda_attn_naive).
 */
#include <cooperative_groups.h>

#include "backend/cuda/common.cuh"

namespace cg = cooperative_groups;

#define AT_PARTS 8  /* blocks per (token, head): one cluster in k_attn_pv */
#define AT_THREADS 128
#define AT_TILE 256 /* rows whose weights k_attn_pv keeps in shared memory at a time */
#define AT_MAXD 8   /* head dimensions per thread: head_dim <= AT_THREADS * AT_MAXD */

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

__global__ void k_attn(attn_args A, const dsv4_seg *segs, const int32_t *tok_seg, const int64_t *posv,
                       const int32_t *page_table, const float *q, const float *kv_new, const int32_t *idx,
                       const int32_t *cnt, float *scores, const float **rows, float *out)
{
    __shared__ float sh[32];
    const int t = blockIdx.x / A.H, h = blockIdx.x % A.H;
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const dsv4_seg s = segs[tok_seg[t]];
    const int64_t pos = posv[t];
    const int64_t lo = pos - A.window + 1 > 0 ? pos - A.window + 1 : 0;
    const int nwin = (int)(pos - lo + 1);
    int ncmp = 0;
    if (A.kind == DSV4_ATTN_CSA) ncmp = cnt[t];
    else if (A.kind == DSV4_ATTN_HCA) ncmp = (int)((pos + 1) / A.ratio);
    const int nr = nwin + ncmp;
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
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < nr; j += blockDim.x) mx = fmaxf(mx, sc[j]);
    mx = block_max(mx, sh);
    float den = 0;
    for (int j = threadIdx.x; j < nr; j += blockDim.x) {
        const float e = expf(sc[j] - mx);
        sc[j] = A.reference ? dsv4_round_bf16(e) : e;
        den += e;
    }
    den = block_sum(den, sh) + expf(A.sinks[h] - mx); /* the sink adds mass, no value */
    float *o = out + ((size_t)t * A.H + h) * A.hd;
    for (int i = threadIdx.x; i < A.hd; i += blockDim.x) {
        float acc = 0;
        for (int j = 0; j < nr; j++) acc += sc[j] * rp[j][i];
        o[i] = acc / den;
    }
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

/* Scores: block (token x head, part); warp w of part p takes rows
 * (p * AT_WARPS + w) + k * AT_PARTS * AT_WARPS, each scored as k_attn does. */
__global__ void k_attn_scores(attn_args A, const dsv4_seg *segs, const int32_t *tok_seg, const int64_t *posv,
                              const int32_t *page_table, const float *q, const float *kv_new, const int32_t *idx,
                              const int32_t *cnt, float *scores, const float **rows)
{
    const int t = blockIdx.x / A.H, h = blockIdx.x % A.H;
    const int lane = threadIdx.x & 31, nw = AT_THREADS / 32;
    const dsv4_seg s = segs[tok_seg[t]];
    const int64_t pos = posv[t];
    int64_t lo;
    int nwin;
    const int nr = attn_rows(A, pos, t, cnt, lo, nwin);
    const float *qh = q + ((size_t)t * A.H + h) * A.hd;
    float *sc = scores + (size_t)blockIdx.x * A.max_rows;
    const float **rp = rows + (size_t)blockIdx.x * A.max_rows;
    for (int j = blockIdx.y * nw + (threadIdx.x >> 5); j < nr; j += AT_PARTS * nw) {
        const float *r = row_ptr(A, s, pos, t, j, nwin, lo, kv_new, idx, page_table);
        float d = 0;
        for (int i = lane; i < A.hd; i += 32) d += qh[i] * r[i];
        d = warp_sum(d) * A.scale;
        if (lane == 0) {
            sc[j] = d;
            rp[j] = r;
        }
    }
}

/* Weighted sum: a cluster of AT_PARTS blocks per (token, head). Every block
 * computes k_attn's max and denominator (same thread mapping, same order);
 * part p sums rows [nr p / P, nr (p + 1) / P) in order; part 0 adds the
 * parts in order and divides. */
__global__ void __launch_bounds__(AT_THREADS) k_attn_pv(attn_args A, const int32_t *tok_seg, const int64_t *posv,
                                                        const int32_t *cnt, const float *scores, const float **rows,
                                                        float *out)
{
    __shared__ float sh[32];
    __shared__ float ev[AT_TILE];
    __shared__ float red[AT_MAXD][AT_THREADS];
    const int t = blockIdx.x / A.H, h = blockIdx.x % A.H, part = blockIdx.y;
    (void)tok_seg;
    int64_t lo;
    int nwin;
    const int nr = attn_rows(A, posv[t], t, cnt, lo, nwin);
    const float *sc = scores + (size_t)blockIdx.x * A.max_rows;
    const float **rp = rows + (size_t)blockIdx.x * A.max_rows;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < nr; j += blockDim.x) mx = fmaxf(mx, sc[j]);
    mx = block_max(mx, sh);
    float den = 0;
    for (int j = threadIdx.x; j < nr; j += blockDim.x) den += expf(sc[j] - mx);
    den = block_sum(den, sh) + expf(A.sinks[h] - mx); /* the sink adds mass, no value */
    const int j0 = (int)((int64_t)nr * part / AT_PARTS), j1 = (int)((int64_t)nr * (part + 1) / AT_PARTS);
    float acc[AT_MAXD];
#pragma unroll
    for (int k = 0; k < AT_MAXD; k++) acc[k] = 0.0f;
    for (int jt = j0; jt < j1; jt += AT_TILE) {
        const int nt = j1 - jt < AT_TILE ? j1 - jt : AT_TILE;
        __syncthreads();
        for (int j = threadIdx.x; j < nt; j += blockDim.x) {
            const float e = expf(sc[jt + j] - mx);
            ev[j] = A.reference ? dsv4_round_bf16(e) : e;
        }
        __syncthreads();
        for (int j = 0; j < nt; j++) {
            const float *r = rp[jt + j];
            const float e = ev[j];
#pragma unroll
            for (int k = 0; k < AT_MAXD; k++) {
                const int i = threadIdx.x + k * AT_THREADS;
                if (i < A.hd) acc[k] += e * r[i];
            }
        }
    }
#pragma unroll
    for (int k = 0; k < AT_MAXD; k++) red[k][threadIdx.x] = acc[k];
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    if (part == 0) {
        for (int q = 1; q < AT_PARTS; q++) {
            const float *o = cl.map_shared_rank(&red[0][0], q);
#pragma unroll
            for (int k = 0; k < AT_MAXD; k++) acc[k] += o[k * AT_THREADS + threadIdx.x];
        }
        float *ot = out + ((size_t)t * A.H + h) * A.hd;
#pragma unroll
        for (int k = 0; k < AT_MAXD; k++) {
            const int i = threadIdx.x + k * AT_THREADS;
            if (i < A.hd) ot[i] = acc[k] / den;
        }
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
    const size_t nrows = (size_t)plan->n_tok * p->n_heads * max_rows;
    char *scr = (char *)cuda_scratch(be, CS_ROWS, nrows * (sizeof(float) + sizeof(float *)));
    const float **rows = (const float **)scr; /* pointers first: 8-byte aligned */
    float *scores = (float *)(scr + nrows * sizeof(float *));
    if (attn_naive < 0) {
        const char *e = getenv("DSV4_ATTN_NAIVE");
        attn_naive = e && e[0] == '1';
    }
    if (attn_naive || p->head_dim > AT_THREADS * AT_MAXD) {
        k_attn<<<plan->n_tok * p->n_heads, 128, 0, im->stream>>>(A, im->d_segs, im->d_tok_seg, im->d_pos,
                                                                 im->d_page_table, q, kv_new, idx, cnt, scores, rows,
                                                                 out);
        CK_LAUNCH();
        return;
    }
    const dim3 grid((unsigned)(plan->n_tok * p->n_heads), AT_PARTS);
    k_attn_scores<<<grid, AT_THREADS, 0, im->stream>>>(A, im->d_segs, im->d_tok_seg, im->d_pos, im->d_page_table, q,
                                                       kv_new, idx, cnt, scores, rows);
    CK_LAUNCH();
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(AT_THREADS);
    cfg.stream = im->stream;
    cudaLaunchAttribute at;
    at.id = cudaLaunchAttributeClusterDimension;
    at.val.clusterDim.x = 1;
    at.val.clusterDim.y = AT_PARTS;
    at.val.clusterDim.z = 1;
    cfg.attrs = &at;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, k_attn_pv, A, (const int32_t *)im->d_tok_seg, (const int64_t *)im->d_pos, cnt,
                          (const float *)scores, rows, out));
}
