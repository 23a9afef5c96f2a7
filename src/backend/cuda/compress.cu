/*
 * compress.cu - the KV compressors on the GPU (MODEL.md §3.6.1, §4.2).
 *
 * Decode: one block per sequence of the step walks its tokens in order,
 * exactly as the CPU backend does: write the token's (kv, score + ape) into
 * the state, and when a window completes pool it (softmax per channel),
 * normalise, rotate and (reference numerics) simulate the cache format, then
 * write the row to its page (FP4 indexer keys: from shared memory as codes
 * and scales). Streaming is exact by construction. Prefill: that walk was
 * serial over thousands of tokens (41 % of a 4,096-token prefill); a block
 * per completed window computes the same rows in parallel from the step's
 * tokens and the state as the step found it, then one block per sequence
 * leaves the state as the walk would. The same values either way.
 */
#include "backend/cuda/sim.cuh"

struct cmp_args {
    int ratio, coff, d, rope_dim;
    bool indexer, reference, fp4; /* fp4: the row goes to the page as codes and scales (dsv4_kv.fp4_keys) */
    bool bf16;                    /* (not fp4) the row goes to the page as BF16 (dsv4_kv.bf16_rows) */
    const float *ape, *norm, *freqs;
    float eps;
    size_t st_kv, st_score, pg_off;
    float *slots, *pages;
    size_t slot_floats, page_floats;
    int page_tokens, max_pages;
};

/* A completed window's row c of sequence slot `slot`: pooled from its
 * entries (KV(k, q), SC(k, q): entry k of the 2r (coff 2: the window before,
 * then this one) or r entries, column q; scores with ape added), normalised,
 * rotated, (reference numerics) simulated in the cache format, written to its
 * page (FP4 indexer keys: through shared memory as codes and scales). The
 * same operations in the same order for the serial walk and the parallel
 * prefill kernel. */
template <typename KVF, typename SCF>
__device__ void cmp_finish(const cmp_args &A, const int32_t *page_table, int slot, int64_t c, KVF KV, SCF SC,
                           float *sh, float *rowbuf)
{
    const int r = A.ratio, d = A.d;
    float *row = A.fp4 || A.bf16
                     ? rowbuf
                     : cmp_row(A.pages, page_table, A.max_pages, A.page_tokens, A.page_floats, A.pg_off, slot, c, r, d);
    constexpr int CR = 8; /* coff 2 with r up to CR (CSA's 4): every entry of a column loaded at once */
    for (int ch = threadIdx.x; ch < d; ch += blockDim.x) {
        float mx = -INFINITY, den = 0, num = 0;
        if (A.coff == 2 && r <= CR) { /* the loops below, their loads first (four loops of round trips before) */
            float s0[CR], s1[CR], k0[CR], k1[CR];
#pragma unroll
            for (int k = 0; k < CR; k++)
                if (k < r) s0[k] = SC(k, ch), s1[k] = SC(r + k, d + ch), k0[k] = KV(k, ch), k1[k] = KV(r + k, d + ch);
#pragma unroll
            for (int k = 0; k < CR; k++)
                if (k < r) mx = fmaxf(mx, s0[k]);
#pragma unroll
            for (int k = 0; k < CR; k++)
                if (k < r) mx = fmaxf(mx, s1[k]);
#pragma unroll
            for (int k = 0; k < CR; k++)
                if (k < r && s0[k] != -INFINITY) {
                    const float e = expf(s0[k] - mx);
                    den += e;
                    num += e * k0[k];
                }
#pragma unroll
            for (int k = 0; k < CR; k++)
                if (k < r) {
                    const float e = expf(s1[k] - mx);
                    den += e;
                    num += e * k1[k];
                }
        } else if (A.coff == 2) {
            for (int k = 0; k < r; k++) mx = fmaxf(mx, SC(k, ch));
            for (int k = 0; k < r; k++) mx = fmaxf(mx, SC(r + k, d + ch));
            for (int k = 0; k < r; k++) {
                const float sc = SC(k, ch);
                if (sc == -INFINITY) continue;
                const float e = expf(sc - mx);
                den += e;
                num += e * KV(k, ch);
            }
            for (int k = 0; k < r; k++) {
                const float e = expf(SC(r + k, d + ch) - mx);
                den += e;
                num += e * KV(r + k, d + ch);
            }
        } else {
            for (int k = 0; k < r; k++) mx = fmaxf(mx, SC(k, ch));
            for (int k = 0; k < r; k++) {
                const float e = expf(SC(k, ch) - mx);
                den += e;
                num += e * KV(k, ch);
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
    /* the simulations by warps (sim.cuh: the serial versions' values; one thread walking a row was most of an
     * emitting step's ~60-80 us here) */
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (A.reference) {
        for (int ch = threadIdx.x; ch < d; ch += blockDim.x) row[ch] = dsv4_round_bf16(row[ch]);
        __syncthreads();
        if (A.indexer) {
            if (wid == 0 && !idx_sim_warp_dim(row, d, lane) && lane == 0) { /* another width: one thread */
                dsv4_hadamard(row, d);
                for (int ch = 0; ch < d; ch++) row[ch] = dsv4_round_bf16(row[ch]);
                dsv4_fp4sim(row, d, 32);
            }
        } else {
            const int nope = d - A.rope_dim, nb = (nope + 63) / 64;
            for (int b = wid; b < nb; b += nw)
                kv_sim_block(row + b * 64, nope - b * 64 < 64 ? nope - b * 64 : 64, lane);
        }
        __syncthreads();
    }
    if (A.fp4) { /* FP4SIM32 output: codes and a scale per 32, the same values (dsv4_fp4_pack) */
        uint8_t *scl, *codes = dsv4_idx_key_fp4(A.pages, page_table, A.max_pages, A.page_tokens, A.page_floats, A.pg_off,
                                           slot, c, r, d, &scl);
        for (int b = wid; b < d / 32; b += nw) /* d: a multiple of 32 (the FP4 key format's) */
            if (!fp4_pack_warp(row + 32 * b, codes + 16 * b, scl + b, lane)) __trap(); /* not FP4SIM output: a bug */
        __syncthreads();
    } else if (A.bf16) { /* BF16 values in reference numerics: the same values (the CPU's kv_row_put) */
        uint16_t *dst = (uint16_t *)cmp_row(A.pages, page_table, A.max_pages, A.page_tokens, A.page_floats, A.pg_off,
                                            slot, c, r, dsv4_row_floats(d, true));
        for (int ch = threadIdx.x; ch < d; ch += blockDim.x) dst[ch] = dsv4_f32_to_bf16(row[ch]);
        __syncthreads();
    }
}

/* The state's copies by the block, every thread's loads of a batch issued before its stores (a load then its
 * store a round trip each: the state may alias the token's rows, so the compiler kept them in order): d1[i] =
 * s1[i] and d2[i] = s2[i] (ADD: s2[i] + a2[i]) for i < n, the destinations not overlapping the sources. */
template <bool ADD>
__device__ __forceinline__ void cmp_copy(float *d1, const float *s1, float *d2, const float *s2, const float *a2, int n)
{
    constexpr int U = 4;
    for (int i0 = threadIdx.x; i0 < n; i0 += U * blockDim.x) {
        float v1[U], v2[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = i0 + u * blockDim.x < n ? i0 + u * blockDim.x : n - 1;
            v1[u] = s1[i];
            v2[u] = ADD ? s2[i] + a2[i] : s2[i];
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = i0 + u * blockDim.x;
            if (i < n) d1[i] = v1[u], d2[i] = v2[u];
        }
    }
}

/* The serial walk (decode: a token or a few per sequence): one block per
 * sequence of the step walks its tokens in order, as the CPU backend does:
 * the token's (kv, score + ape) into the state, and when a window completes
 * its row (cmp_finish) and, coff 2, the window moved to the state's first r
 * entries. blockIdx.y: which of the launch's compressors (a layer's two run
 * side by side: disjoint state and pages). */
struct cmp_walk {
    cmp_args A[2];
    const float *a[2], *g[2];
};
__global__ void k_compress(const __grid_constant__ cmp_walk W, const dsv4_seg *segs, const int32_t *page_table)
{
    pdl_start();
    __shared__ float sh[32];
    extern __shared__ float cmp_rowbuf[]; /* fp4: the row, d floats, before it is packed */
    const cmp_args &A = W.A[blockIdx.y];
    const float *a = W.a[blockIdx.y], *g = W.g[blockIdx.y];
    const dsv4_seg s = segs[blockIdx.x];
    const int r = A.ratio, w = A.coff * A.d;
    float *slot = A.slots + (size_t)s.slot * A.slot_floats;
    float *kvs = slot + A.st_kv, *scs = slot + A.st_score;
    const int base = A.coff == 2 ? r : 0;
    for (int i = 0; i < s.n; i++) {
        const int64_t pos = s.pos0 + i;
        const int j = (int)(pos % r);
        const float *ai = a + (size_t)(s.t0 + i) * w, *gi = g + (size_t)(s.t0 + i) * w;
        cmp_copy<true>(kvs + (size_t)(base + j) * w, ai, scs + (size_t)(base + j) * w, gi, A.ape + (size_t)j * w, w);
        __syncthreads();
        if (j != r - 1) continue;
        cmp_finish(
            A, page_table, s.slot, pos / r, [&](int k, int q) { return kvs[(size_t)k * w + q]; },
            [&](int k, int q) { return scs[(size_t)k * w + q]; }, sh, cmp_rowbuf);
        if (A.coff == 2) { /* the window moved to the state's first r entries (entry k2 <- r + k2, column by column) */
            cmp_copy<false>(kvs, kvs + (size_t)r * w, scs, scs + (size_t)r * w, nullptr, r * w);
            __syncthreads();
        }
    }
}

/* Where entry k of window c's pooling (cmp_finish's KV / SC) is for a step
 * of sequence s: its position p = (c - coff + 1) r + k; p >= pos0: this
 * step's token (a, g + ape); before, the state as the step found it - the
 * window being filled (pos0 / r) at entries base + p % r, the one before it
 * (coff 2: complete, moved) at entries p % r. Sets *t (the step's token, or
 * -1: the state) and *e (the state entry). */
__device__ __forceinline__ void cmp_entry(const cmp_args &A, const dsv4_seg &s, int64_t c, int k, int *t, int *e)
{
    const int r = A.ratio;
    const int wi = A.coff == 2 && k < r ? -1 : 0, jj = A.coff == 2 && k >= r ? k - r : k; /* window c + wi, entry jj */
    const int64_t p = (c + wi) * r + jj;
    *t = p >= s.pos0 ? s.t0 + (int)(p - s.pos0) : -1;
    *e = p >= 0 && p / r == s.pos0 / r ? (A.coff == 2 ? r : 0) + jj : jj;
}

/* The step's segment and window of block b: windows completing in the step, sequence by sequence
 * (segment s completes windows pos0 / r .. (pos0 + n) / r - 1). False past the last. */
__device__ __forceinline__ bool cmp_window(const dsv4_seg *segs, int n_seg, int r, int b, dsv4_seg *s, int64_t *c)
{
    for (int i = 0; i < n_seg; i++) {
        const dsv4_seg si = segs[i];
        const int64_t c0 = si.pos0 / r, nw = (si.pos0 + si.n) / r - c0;
        if (b < nw) {
            *s = si;
            *c = c0 + b;
            return true;
        }
        b -= (int)nw;
    }
    return false;
}

/* Prefill: a block per window completing in the step (the serial walk's rows,
 * in parallel: each window's entries are this step's tokens or the state as
 * the step found it, which k_compress_state updates after). */
__global__ void k_compress_rows(cmp_args A, const dsv4_seg *segs, int n_seg, const int32_t *page_table,
                                const float *a, const float *g)
{
    pdl_start();
    __shared__ float sh[32];
    extern __shared__ float cmp_rowbuf[];
    dsv4_seg s;
    int64_t c;
    if (!cmp_window(segs, n_seg, A.ratio, blockIdx.x, &s, &c)) return;
    const int r = A.ratio, w = A.coff * A.d;
    const float *slot = A.slots + (size_t)s.slot * A.slot_floats;
    const float *kvs = slot + A.st_kv, *scs = slot + A.st_score;
    auto kv = [&](int k, int q) {
        int t, e;
        cmp_entry(A, s, c, k, &t, &e);
        return t >= 0 ? a[(size_t)t * w + q] : kvs[(size_t)e * w + q];
    };
    auto sc = [&](int k, int q) {
        int t, e;
        cmp_entry(A, s, c, k, &t, &e);
        const int j = A.coff == 2 && k >= r ? k - r : k;
        return t >= 0 ? g[(size_t)t * w + q] + A.ape[(size_t)j * w + q] : scs[(size_t)e * w + q];
    };
    cmp_finish(A, page_table, s.slot, c, kv, sc, sh, cmp_rowbuf);
}

/* Prefill, after k_compress_rows: the state as the serial walk leaves it. A
 * block per sequence; per entry j and column q (one thread: it reads the old
 * values before it writes): entry base + j holds the step's last token at
 * j (mod r), if any; coff 2, entry j the last window completed in the step,
 * if any (its tokens from the step, or from the entries base + j as the step
 * found them). */
__global__ void k_compress_state(cmp_args A, const dsv4_seg *segs, const float *a, const float *g)
{
    pdl_start();
    const dsv4_seg s = segs[blockIdx.x];
    if (s.n <= 0) return;
    const int r = A.ratio, w = A.coff * A.d, base = A.coff == 2 ? r : 0;
    float *slot = A.slots + (size_t)s.slot * A.slot_floats;
    float *kvs = slot + A.st_kv, *scs = slot + A.st_score;
    const int64_t pos1 = s.pos0 + s.n, clast = pos1 / r - 1;
    const bool moved = A.coff == 2 && pos1 / r > s.pos0 / r; /* a window completed */
    for (int e = threadIdx.x; e < r * w; e += blockDim.x) {
        const int j = e / w, q = e - j * w;
        const float *ap = A.ape + (size_t)j * w + q;
        if (moved) {
            const int64_t p = clast * r + j;
            float kv, sc;
            if (p >= s.pos0) {
                const size_t t = (size_t)(s.t0 + (p - s.pos0)) * w + q;
                kv = a[t], sc = g[t] + *ap;
            } else {
                kv = kvs[(size_t)(base + j) * w + q], sc = scs[(size_t)(base + j) * w + q];
            }
            kvs[(size_t)j * w + q] = kv, scs[(size_t)j * w + q] = sc;
        }
        const int64_t pl = pos1 - 1 - ((pos1 - 1 - j) % r + r) % r; /* the step's last token at j (mod r) */
        if (pl >= s.pos0) {
            const size_t t = (size_t)(s.t0 + (pl - s.pos0)) * w + q;
            kvs[(size_t)(base + j) * w + q] = a[t], scs[(size_t)(base + j) * w + q] = g[t] + *ap;
        }
    }
}

/* DSV4_CMP_PAIR=0: a layer's two compressors in two launches, one after the other (a baseline; the same
 * values). */
static bool cmp_pair_on(void)
{
    static int v = -1;
    if (v < 0) v = cuda_env_on("DSV4_CMP_PAIR");
    return v;
}

/* Steps whose sequences have at most this many tokens each take the serial
 * walk (DSV4_CMP_SERIAL_MAX; default 4: decode), longer ones the parallel
 * rows and the state after them - the same values either way. */
static int cmp_serial_max(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("DSV4_CMP_SERIAL_MAX");
        v = e ? atoi(e) : 4;
    }
    return v;
}

/* The kernels' arguments for p's compressor. */
static cmp_args cmp_args_of(const dsv4_compress_params *p, const dsv4_kv *kv)
{
    const dsv4_layer_state *ls = &kv->layer[p->layer];
    cmp_args A;
    A.ratio = p->ratio;
    A.coff = p->coff;
    A.d = p->d;
    A.rope_dim = p->rope_dim;
    A.indexer = p->indexer;
    A.reference = p->reference;
    A.fp4 = p->indexer && p->reference && kv->fp4_keys;
    A.bf16 = kv->bf16_rows && !A.fp4;
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
    return A;
}

/* The dynamic shared memory of A's kernels (fp4 / bf16: the row before it is packed). */
static size_t cmp_smem(const cmp_args &A)
{
    return A.fp4 || A.bf16 ? (size_t)A.d * sizeof(float) : 0;
}

/* Whether the step takes the serial walk: its sequences have at most cmp_serial_max tokens each. */
static bool cmp_walks(const dsv4_plan *plan)
{
    int most = 0;
    for (int i = 0; i < plan->n_seg; i++) most = plan->segs[i].n > most ? plan->segs[i].n : most;
    return most <= cmp_serial_max();
}

void cuda_compress(dsv4_backend *be, const dsv4_compress_params *p, const dsv4_plan *plan, dsv4_kv *kv, const float *a,
                   const float *g)
{
    cuda_impl *im = impl_of(be);
    const cmp_args A = cmp_args_of(p, kv);
    const size_t smem = cmp_smem(A);
    const dsv4_seg *segs = (const dsv4_seg *)im->d_segs;
    const int32_t *pt = (const int32_t *)im->d_page_table;
    if (cmp_walks(plan)) { /* decode: the serial walk, one launch */
        const cmp_walk W = {{A, A}, {a, a}, {g, g}};
        launch_pdl(k_compress, dim3(plan->n_seg), dim3(256), smem, im->stream, W, segs, pt);
        CK_LAUNCH();
        return;
    }
    int64_t nwin = 0; /* windows completing in the step */
    for (int i = 0; i < plan->n_seg; i++) {
        const dsv4_seg *sg = &plan->segs[i];
        nwin += (sg->pos0 + sg->n) / p->ratio - sg->pos0 / p->ratio;
    }
    if (nwin > 0)
        launch_pdl(k_compress_rows, dim3((unsigned)nwin), dim3(256), smem, im->stream, A, segs, plan->n_seg, pt, a, g);
    launch_pdl(k_compress_state, dim3(plan->n_seg), dim3(256), 0, im->stream, A, segs, a, g);
    CK_LAUNCH();
}

/* be->compress_pair: in decode's serial walk one launch, a block per (sequence, compressor) - the indexer keys'
 * walk beside the KV rows' instead of before it (an emitting CSA layer at batch 1: 15 + 26 us one after the
 * other, s54's cmp/); else the two calls. The same values either way. */
void cuda_compress_pair(dsv4_backend *be, const dsv4_compress_params *p1, const float *a1, const float *g1,
                        const dsv4_compress_params *p2, const float *a2, const float *g2, const dsv4_plan *plan,
                        dsv4_kv *kv)
{
    if (!cmp_walks(plan) || !cmp_pair_on()) {
        cuda_compress(be, p1, plan, kv, a1, g1);
        cuda_compress(be, p2, plan, kv, a2, g2);
        return;
    }
    cuda_impl *im = impl_of(be);
    const cmp_walk W = {{cmp_args_of(p1, kv), cmp_args_of(p2, kv)}, {a1, a2}, {g1, g2}};
    const size_t s1 = cmp_smem(W.A[0]), s2 = cmp_smem(W.A[1]);
    launch_pdl(k_compress, dim3(plan->n_seg, 2), dim3(256), s1 > s2 ? s1 : s2, im->stream, W,
               (const dsv4_seg *)im->d_segs, (const int32_t *)im->d_page_table);
    CK_LAUNCH();
}
