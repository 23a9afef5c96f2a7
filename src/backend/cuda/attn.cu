/*
 * attn.cu - sparse attention with sinks on the GPU (MODEL.md §3.6): a query
 * sees its window rows (ring for earlier steps, this step's rows otherwise)
 * and its compressed rows (the indexer's choice on CSA layers, all visible
 * rows on HCA layers). One block per (token, head): a warp per row scores
 * it (and keeps its address), then a fixed-order max / sum and a
 * per-dimension weighted sum over the kept addresses.
 */
#include "backend/cuda/common.cuh"

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
    k_attn<<<plan->n_tok * p->n_heads, 128, 0, im->stream>>>(A, im->d_segs, im->d_tok_seg, im->d_pos,
                                                             im->d_page_table, q, kv_new, idx, cnt, scores, rows, out);
    CK_LAUNCH();
}
