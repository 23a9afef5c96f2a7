/*
 * compress.cu - the KV compressors on the GPU (MODEL.md §3.6.1, §4.2).
 *
 * One block per sequence of the step walks its tokens in order, exactly as
 * the CPU backend does: write the token's (kv, score + ape) into the state,
 * and when a window completes pool it (softmax per channel), normalise,
 * rotate and (reference numerics) simulate the cache format, then write the
 * row to its page (FP4 indexer keys: from shared memory as codes and scales).
 * Streaming is exact by construction.
 */
#include "backend/cuda/common.cuh"

struct cmp_args {
    int ratio, coff, d, rope_dim;
    bool indexer, reference, fp4; /* fp4: the row goes to the page as codes and scales (dsv4_kv.fp4_keys) */
    const float *ape, *norm, *freqs;
    float eps;
    size_t st_kv, st_score, pg_off;
    float *slots, *pages;
    size_t slot_floats, page_floats;
    int page_tokens, max_pages;
};

__global__ void k_compress(cmp_args A, const dsv4_seg *segs, const int32_t *page_table, const float *a,
                           const float *g)
{
    pdl_start();
    __shared__ float sh[32];
    extern __shared__ float cmp_rowbuf[]; /* fp4: the row, d floats, before it is packed */
    const dsv4_seg s = segs[blockIdx.x];
    const int r = A.ratio, d = A.d, w = A.coff * d;
    float *slot = A.slots + (size_t)s.slot * A.slot_floats;
    float *kvs = slot + A.st_kv, *scs = slot + A.st_score;
    const int base = A.coff == 2 ? r : 0;
    for (int i = 0; i < s.n; i++) {
        const int64_t pos = s.pos0 + i;
        const int j = (int)(pos % r);
        const float *ai = a + (size_t)(s.t0 + i) * w, *gi = g + (size_t)(s.t0 + i) * w;
        for (int q = threadIdx.x; q < w; q += blockDim.x) {
            kvs[(size_t)(base + j) * w + q] = ai[q];
            scs[(size_t)(base + j) * w + q] = gi[q] + A.ape[(size_t)j * w + q];
        }
        __syncthreads();
        if (j != r - 1) continue;
        const int64_t c = pos / r;
        float *row = A.fp4 ? cmp_rowbuf
                           : cmp_row(A.pages, page_table, A.max_pages, A.page_tokens, A.page_floats, A.pg_off, s.slot, c,
                                     r, d);
        for (int ch = threadIdx.x; ch < d; ch += blockDim.x) {
            float mx = -INFINITY, den = 0, num = 0;
            if (A.coff == 2) {
                for (int k = 0; k < r; k++) mx = fmaxf(mx, scs[(size_t)k * w + ch]);
                for (int k = 0; k < r; k++) mx = fmaxf(mx, scs[(size_t)(r + k) * w + d + ch]);
                for (int k = 0; k < r; k++) {
                    const float sc = scs[(size_t)k * w + ch];
                    if (sc == -INFINITY) continue;
                    const float e = expf(sc - mx);
                    den += e;
                    num += e * kvs[(size_t)k * w + ch];
                }
                for (int k = 0; k < r; k++) {
                    const float e = expf(scs[(size_t)(r + k) * w + d + ch] - mx);
                    den += e;
                    num += e * kvs[(size_t)(r + k) * w + d + ch];
                }
            } else {
                for (int k = 0; k < r; k++) mx = fmaxf(mx, scs[(size_t)k * w + ch]);
                for (int k = 0; k < r; k++) {
                    const float e = expf(scs[(size_t)k * w + ch] - mx);
                    den += e;
                    num += e * kvs[(size_t)k * w + ch];
                }
            }
            float v = num / den;
            if (A.reference) v = dsv4_round_bf16(v);
            row[ch] = v;
        }
        __syncthreads();
        float ss = 0;
        for (int ch = threadIdx.x; ch < d; ch += blockDim.x) ss += row[ch] * row[ch];
        ss = block_sum(ss, sh);
        const float k = 1.0f / sqrtf(ss / (float)d + A.eps);
        for (int ch = threadIdx.x; ch < d; ch += blockDim.x) {
            float v = A.norm[ch] * (row[ch] * k);
            row[ch] = A.reference ? dsv4_round_bf16(v) : v;
        }
        __syncthreads();
        const int64_t rp = c * r;
        for (int q = threadIdx.x; q < A.rope_dim / 2; q += blockDim.x) {
            const float ang = (float)rp * A.freqs[q];
            const float cs = (float)cos((double)ang), sn = (float)sin((double)ang);
            float *v = row + d - A.rope_dim;
            const float x0 = v[2 * q], x1 = v[2 * q + 1];
            v[2 * q] = x0 * cs - x1 * sn;
            v[2 * q + 1] = x0 * sn + x1 * cs;
        }
        __syncthreads();
        if (A.reference) {
            for (int ch = threadIdx.x; ch < d; ch += blockDim.x) row[ch] = dsv4_round_bf16(row[ch]);
            __syncthreads();
            if (A.indexer) {
                if (threadIdx.x == 0) {
                    dsv4_hadamard(row, d);
                    for (int ch = 0; ch < d; ch++) row[ch] = dsv4_round_bf16(row[ch]);
                    dsv4_fp4sim(row, d, 32);
                }
            } else {
                const int nope = d - A.rope_dim, nb = (nope + 63) / 64;
                for (int b = threadIdx.x; b < nb; b += blockDim.x) {
                    const int len = nope - b * 64 < 64 ? nope - b * 64 : 64;
                    dsv4_fp8sim(row + b * 64, len, 64);
                }
            }
            __syncthreads();
        }
        if (A.fp4) { /* FP4SIM32 output: codes and a scale per 32, the same values (dsv4_fp4_pack) */
            uint8_t *scl, *codes = dsv4_idx_key_fp4(A.pages, page_table, A.max_pages, A.page_tokens, A.page_floats, A.pg_off,
                                               s.slot, c, r, d, &scl);
            for (int b = threadIdx.x; b < d / 32; b += blockDim.x)
                if (!dsv4_fp4_pack(row + 32 * b, 32, codes + 16 * b, scl + b)) __trap(); /* not FP4SIM output: a bug */
            __syncthreads();
        }
        if (A.coff == 2) {
            for (int q = threadIdx.x; q < w; q += blockDim.x)
                for (int k2 = 0; k2 < r; k2++) {
                    kvs[(size_t)k2 * w + q] = kvs[(size_t)(r + k2) * w + q];
                    scs[(size_t)k2 * w + q] = scs[(size_t)(r + k2) * w + q];
                }
            __syncthreads();
        }
    }
}

void cuda_compress(dsv4_backend *be, const dsv4_compress_params *p, const dsv4_plan *plan, dsv4_kv *kv,
                   const float *a, const float *g)
{
    cuda_impl *im = impl_of(be);
    const dsv4_layer_state *ls = &kv->layer[p->layer];
    cmp_args A;
    A.ratio = p->ratio;
    A.coff = p->coff;
    A.d = p->d;
    A.rope_dim = p->rope_dim;
    A.indexer = p->indexer;
    A.reference = p->reference;
    A.fp4 = p->indexer && p->reference && kv->fp4_keys;
    A.ape = p->ape;
    A.norm = p->norm;
    A.freqs = p->freqs;
    A.eps = p->norm_eps;
    A.st_kv = p->indexer ? ls->idx_kv : ls->cmp_kv;
    A.st_score = p->indexer ? ls->idx_score : ls->cmp_score;
    A.pg_off = p->indexer ? ls->pg_idx : ls->pg_cmp;
    A.slots = kv->slots;
    A.pages = kv->pages;
    A.slot_floats = kv->slot_floats;
    A.page_floats = kv->page_floats;
    A.page_tokens = kv->page_tokens;
    A.max_pages = kv->max_pages_per_seq;
    launch_pdl(k_compress, dim3(plan->n_seg), dim3(256), A.fp4 ? (size_t)p->d * sizeof(float) : 0, im->stream, A,
               (const dsv4_seg *)im->d_segs,
               (const int32_t *)im->d_page_table, a, g);
    CK_LAUNCH();
}
