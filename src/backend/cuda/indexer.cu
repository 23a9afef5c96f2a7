/*
 * indexer.cu - the lightning indexer on the GPU (MODEL.md §3.6.2): scores of
 * every visible compressed key, then the top-k, written in ascending index
 * order with ties going to the lower index (as the CPU backend). One block per
 * token, a warp per candidate key. The selection ranks every candidate against every other (O(N^2) per
 * token): simple and exact; a radix select replaces it when it is timed.
 */
#include "backend/cuda/common.cuh"

struct idx_args {
    int ratio, nh, hd, topk, max_n; /* per token: max_n scores, then max_n ranks */
    float scale;
    bool reference;
    float *pages;
    size_t page_floats, pg_off;
    int page_tokens, max_pages;
};

__global__ void k_indexer(idx_args A, const dsv4_seg *segs, const int32_t *tok_seg, const int64_t *pos,
                          const int32_t *page_table, const float *q, const float *w, float *scores, int32_t *idx,
                          int32_t *cnt)
{
    const int t = blockIdx.x;
    const dsv4_seg s = segs[tok_seg[t]];
    const int64_t N = (pos[t] + 1) / A.ratio;
    const float *qt = q + (size_t)t * A.nh * A.hd, *wt = w + (size_t)t * A.nh;
    float *sc = scores + (size_t)t * 2 * A.max_n;
    /* one warp per candidate key; lane l takes heads l, l + 32, ... (each a
     * serial dot product over the head dimension), then a fixed butterfly */
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int64_t c = wid; c < N; c += nw) {
        const float *key =
            cmp_row(A.pages, page_table, A.max_pages, A.page_tokens, A.page_floats, A.pg_off, s.slot, c, A.ratio, A.hd);
        float acc = 0;
        for (int h = lane; h < A.nh; h += 32) {
            float dq = 0;
            for (int i = 0; i < A.hd; i++) dq += qt[(size_t)h * A.hd + i] * key[i];
            float wh = wt[h] * A.scale;
            if (A.reference) {
                wh = dsv4_round_bf16(wh);
                acc += dsv4_round_bf16(fmaxf(dsv4_round_bf16(dq), 0.0f) * wh);
            } else if (dq > 0) {
                acc += wh * dq;
            }
        }
        acc = warp_sum(acc);
        if (lane == 0) {
            const float v = A.reference ? dsv4_round_bf16(acc) : acc;
            sc[c] = isnan(v) ? -INFINITY : v; /* NaN ranks last, as on the CPU: exactly k are kept */
        }
    }
    __syncthreads();
    const int k = N < A.topk ? (int)N : A.topk;
    int32_t *out = idx + (size_t)t * A.topk;
    if (N <= A.topk) {
        for (int64_t c = threadIdx.x; c < N; c += blockDim.x) out[c] = (int32_t)c;
    } else {
        /* rank: how many candidates beat c (higher score, or equal and lower index) */
        int32_t *rank = (int32_t *)(sc + A.max_n); /* the second half of the token's scratch */
        for (int64_t c = threadIdx.x; c < N; c += blockDim.x) {
            const float v = sc[c];
            int32_t rk = 0;
            for (int64_t o = 0; o < N; o++) {
                const float u = sc[o];
                rk += (u > v) || (u == v && o < c);
            }
            rank[c] = rk;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            int m = 0;
            for (int64_t c = 0; c < N; c++)
                if (rank[c] < k) out[m++] = (int32_t)c;
        }
    }
    if (threadIdx.x == 0) cnt[t] = k;
}

void cuda_indexer_topk(dsv4_backend *be, const dsv4_indexer_params *p, const dsv4_plan *plan, const dsv4_kv *kv,
                       const float *q, const float *w, int32_t *idx, int32_t *cnt)
{
    cuda_impl *im = impl_of(be);
    int64_t max_n = 1;
    if (im->graph_mode) max_n = kv->max_ctx / p->ratio > 1 ? kv->max_ctx / p->ratio : 1; /* any step of a graph */
    else
        for (int t = 0; t < plan->n_tok; t++) {
            int64_t n = (plan->pos[t] + 1) / p->ratio;
            if (n > max_n) max_n = n;
        }
    idx_args A;
    A.ratio = p->ratio;
    A.nh = p->n_heads;
    A.hd = p->head_dim;
    A.topk = p->topk;
    A.max_n = (int)max_n;
    A.scale = p->scale;
    A.reference = p->reference;
    A.pages = kv->pages;
    A.page_floats = kv->page_floats;
    A.pg_off = kv->layer[p->layer].pg_idx;
    A.page_tokens = kv->page_tokens;
    A.max_pages = kv->max_pages_per_seq;
    float *scores = (float *)cuda_scratch(be, CS_SCORES, (size_t)plan->n_tok * 2 * max_n * sizeof(float));
    k_indexer<<<plan->n_tok, 256, 0, im->stream>>>(A, im->d_segs, im->d_tok_seg, im->d_pos, im->d_page_table, q, w,
                                                   scores, idx, cnt);
    CK_LAUNCH();
}
