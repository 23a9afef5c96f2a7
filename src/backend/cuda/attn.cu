/*
 * attn.cu - sparse attention with sinks on the GPU (MODEL.md §3.6): a query
 * sees its window rows (ring for earlier steps, this step's rows otherwise)
 * and its compressed rows (the indexer's choice on CSA layers, all visible
 * rows on HCA layers).
 *
 * Every head of a token reads the same K = V rows, so every layout but the
 * first serves all heads per row it loads. Three layouts (backend.h,
 * DSV4_ATTN_LAYOUT_*):
 * - tensor cores (reference numerics, head_dim a multiple of 32 up to 512,
 *   up to 64 heads: the server's default): k_attn_qpack, k_attn_qk,
 *   k_attn_md16, k_attn_pv below, chained with programmatic dependent launch;
 * - FP32 heads together (plain numerics, and reference numerics of other
 *   shapes up to 64 heads of 512): k_attn_hs scores 8 heads per row it loads
 *   (block: token, 8 heads, part of the rows; the rows through shared
 *   memory), k_attn_md takes each (token, head)'s max and sum in a fixed
 *   order and turns the scores into weights, and k_attn_hpv sums the weighted
 *   rows for all heads at once (block: token, 64 dimensions, part; a cluster
 *   of the parts, added in part order);
 * - the first layout (one block per (token, head) walking every row: 64
 *   blocks at batch 1), k_attn: the benchmark baseline (DSV4_ATTN=naive) and
 *   the path for other shapes.
 * Every layout fills the GPU at batch 1, and a token's result depends on its
 * own rows only, through sums whose order is a function of its row count
 * (batch invariance). In reference numerics every layout weighs a part of
 * the rows against the part's own max and joins the parts after (dsv4_attn_join;
 * MODEL_NOTES, "Reference numerics' attention weights").
 */
#include <cooperative_groups.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/common.cuh"
#include "backend/cuda/rowdot.cuh"

namespace cg = cooperative_groups;

#define AT_PARTS 8 /* parts of a token's rows: a cluster in k_attn_hpv */

/* Reference numerics' parts of a token's rows (backend.h: DSV4_ATTN_PARTS, dsv4_attn_part_lo): each part's
 * weights exp(s - m_p) against its own max, the parts joined after (dsv4_attn_join); the tensor-core weighted
 * sums and k_attn_one split their work at the same rows. */
#define AM_PARTS DSV4_ATTN_PARTS
static_assert(AM_PARTS == AT_PARTS, "attn: k_attn_hpv's cluster holds the reference parts");

struct attn_args {
    int kind, ratio, H, hd, window, topk, max_rows;
    float scale;
    bool reference;
    const float *sinks;
    const float *slots;
    const float *pages;
    size_t slot_floats, page_floats, win_off, pg_off;
    int page_tokens, max_pages;
    /* cached rows as BF16 (dsv4_kv.bf16_rows), rf floats a row; kvb: then the step's rows (kv_new) as BF16
     * too, so every row a kernel reads is of one kind */
    bool bf16;
    int rf;
    const float *kvb;
    /* the output's de-rotation in the weighted sum's last pass (the tensor-core kernels; NULL: none):
     * the rope op's inverse RoPE of the last orope dims, rounding ornd */
    const float *ofreq;
    int orope;
    unsigned ornd;
};

/* The inverse rotation of columns c, c + 1 (c even) of a head's output at position pos, as k_rope
 * computes it (rope_cs); nothing before the rotated part. The caller checks A.ofreq. */
__device__ __forceinline__ void attn_derot_cs(const attn_args &A, int64_t pos, int c, float &cs, float &sn)
{
    const int nr = A.hd - A.orope;
    cs = sn = 0.0f;
    if (c >= nr) rope_cs(pos, A.ofreq[(c - nr) >> 1], true, cs, sn);
}

/* Columns c, c + 1 of a head's output de-rotated as k_rope does with (cs, sn) of attn_derot_cs (the same
 * rope_pair; the columns before the rotated part only rounded, and that only with DSV4_RND_IN). */
__device__ __forceinline__ void attn_derot2(const attn_args &A, int c, float cs, float sn, float &v0, float &v1)
{
    if (c < A.hd - A.orope) {
        if (A.ornd & DSV4_RND_IN) v0 = dsv4_round_bf16(v0), v1 = dsv4_round_bf16(v1);
        return;
    }
    float pr[2] = {v0, v1};
    rope_pair(pr, 0, cs, sn, A.ornd);
    v0 = pr[0], v1 = pr[1];
}

__device__ static const float *row_ptr(const attn_args &A, const dsv4_seg &s, int64_t pos, int t, int j, int nwin,
                                       int64_t lo, const float *kv_new, const int32_t *idx, const int32_t *page_table)
{
    if (j < nwin) {
        const int64_t q = lo + j;
        if (q >= s.pos0) return (A.bf16 ? A.kvb : kv_new) + (size_t)(s.t0 + (q - s.pos0)) * A.rf;
        return A.slots + (size_t)s.slot * A.slot_floats + A.win_off + (size_t)(q % A.window) * A.rf;
    }
    const int64_t c = A.kind == DSV4_ATTN_CSA ? idx[(size_t)t * A.topk + (j - nwin)] : (int64_t)(j - nwin);
    return cmp_row((float *)A.pages, page_table, A.max_pages, A.page_tokens, A.page_floats, A.pg_off, s.slot, c,
                   A.ratio, A.rf);
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
 * exp(s - max) in place. Returns the sum plus the sink's mass (it adds to the
 * denominator, no value). Reference numerics: per part (dsv4_attn_part_lo), each
 * part's weights BF16(exp(s - m_p)) against its own max, the parts joined by
 * dsv4_attn_join (cf: the parts' factors c_p); plain: one max, cf all 1. */
__device__ static float attn_weights(const attn_args &A, float *sc, int nr, int h, float *sh, float *cf)
{
    if (!A.reference) {
        float mx = -INFINITY;
        for (int j = threadIdx.x; j < nr; j += blockDim.x) mx = fmaxf(mx, sc[j]);
        mx = block_max(mx, sh);
        float den = 0;
        for (int j = threadIdx.x; j < nr; j += blockDim.x) {
            const float e = expf(sc[j] - mx);
            sc[j] = e;
            den += e;
        }
        if (threadIdx.x < AM_PARTS) cf[threadIdx.x] = 1.0f;
        return block_sum(den, sh) + expf(A.sinks[h] - mx);
    }
    float m[AM_PARTS], l[AM_PARTS], c[AM_PARTS];
#pragma unroll
    for (int p = 0; p < AM_PARTS; p++) {
        const int lo = dsv4_attn_part_lo(nr, p), hi = dsv4_attn_part_lo(nr, p + 1);
        float mx = -INFINITY;
        for (int j = lo + (int)threadIdx.x; j < hi; j += blockDim.x) mx = fmaxf(mx, sc[j]);
        m[p] = mx = block_max(mx, sh);
        float den = 0;
        for (int j = lo + (int)threadIdx.x; j < hi; j += blockDim.x) {
            const float e = expf(sc[j] - mx);
            sc[j] = dsv4_round_bf16(e);
            den += e;
        }
        l[p] = block_sum(den, sh);
    }
    const float d = dsv4_attn_join(m, l, A.sinks[h], c);
    if (threadIdx.x < AM_PARTS)
#pragma unroll
        for (int p = 0; p < AM_PARTS; p++)
            if (p == (int)threadIdx.x) cf[p] = c[p];
    return d;
}

__global__ void k_attn(attn_args A, const dsv4_seg *segs, const int32_t *tok_seg, const int64_t *posv,
                       const int32_t *page_table, const float *q, const float *kv_new, const int32_t *idx,
                       const int32_t *cnt, float *scores, const float **rows, float *out)
{
    __shared__ float sh[32], cf[AM_PARTS];
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
        for (int i = lane; i < A.hd; i += 32) d += qh[i] * kv_el(r, i, A.bf16);
        d = warp_sum(d) * A.scale;
        if (lane == 0) {
            sc[j] = d;
            rp[j] = r;
        }
    }
    __syncthreads();
    const float den = attn_weights(A, sc, nr, h, sh, cf);
    __syncthreads(); /* cf */
    float *o = out + ((size_t)t * A.H + h) * A.hd;
    for (int i = threadIdx.x; i < A.hd; i += blockDim.x) {
        float acc = 0;
        if (!A.reference)
            for (int j = 0; j < nr; j++) acc += sc[j] * kv_el(rp[j], i, A.bf16);
        else /* each part's sum, joined in part order (dsv4_attn_join) */
            for (int p = 0; p < AM_PARTS; p++) {
                const int j1 = dsv4_attn_part_lo(nr, p + 1);
                float ap = 0;
                for (int j = dsv4_attn_part_lo(nr, p); j < j1; j++) ap += sc[j] * kv_el(rp[j], i, A.bf16);
                acc = __fmaf_rn(cf[p], ap, acc);
            }
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
        if ((A.hd & 3) == 0) { /* rows of whole 4-value chunks */
            const int q4 = A.hd / 4;
            for (int e = threadIdx.x; e < nt * q4; e += blockDim.x) {
                const int j = e / q4, c = e % q4;
                ((float4 *)rs[j])[c] = kv_ld4(rps[j], 4 * c, A.bf16);
            }
        } else {
            for (int e = threadIdx.x; e < nt * A.hd; e += blockDim.x)
                rs[e / A.hd][e % A.hd] = kv_el(rps[e / A.hd], e % A.hd, A.bf16);
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
 * the denominator, cf the parts' factors (AM_PARTS a head). */
__global__ void k_attn_md(attn_args A, const int64_t *posv, const int32_t *cnt, float *scores, float *den, float *cf)
{
    __shared__ float sh[32];
    const int t = blockIdx.x / A.H, h = blockIdx.x % A.H;
    int64_t lo;
    int nwin;
    const int nr = attn_rows(A, posv[t], t, cnt, lo, nwin);
    const float dn =
        attn_weights(A, scores + (size_t)blockIdx.x * A.max_rows, nr, h, sh, cf + (size_t)blockIdx.x * AM_PARTS);
    if (threadIdx.x == 0) den[blockIdx.x] = dn;
}

/* Where k_attn_pv's warp finds weight (h, j) of token t: BF16 MMA A
 * fragments, 512 bytes per (token, 16 heads, 16 rows), a lane's 16 bytes
 * contiguous (registers a0..a3: heads +0 / +8, rows +0 / +8). */
__device__ __forceinline__ size_t am_frag(int t, int HG, int KS, int h, int j)
{
    const int hr = h & 15, jr = j & 15;
    const int lane = (hr & 7) * 4 + ((jr & 7) >> 1), reg = (hr >> 3) + 2 * (jr >> 3);
    return (((size_t)t * HG + (h >> 4)) * KS + (j >> 4)) * 256 + lane * 8 + reg * 2 + (jr & 1);
}

/* Reference numerics' fixed order for a part's sum l_p (dsv4_attn_join): lane l of a warp adds exp(s - m_p) of the
 * part's row pairs lo + 2 l + 64 k (lo: the part's first row; the pair's first row, then its second) in k
 * order, then the butterfly (warp_sum). k_attn_md16 and k_attn_one both sum so.
 *
 * A part on a warp, rows lo .. hi - 1 (lo a multiple of 16): its max (exact in any order). pair(j): the scores
 * j, j + 1 for an even j below hi rounded up to 16 (whatever they hold past hi). */
template <int NB = 1, class P> __device__ __forceinline__ float am_part_max(int lo, int hi, P pair)
{
    const int lane = threadIdx.x & 31;
    float mx = -INFINITY;
    if constexpr (NB == 1) {
        for (int j = lo + 2 * lane; j < hi; j += 64) {
            const float2 v = pair(j);
            mx = fmaxf(mx, j + 1 < hi ? fmaxf(v.x, v.y) : v.x);
        }
    } else { /* NB pairs a lane loaded at once (from global memory: one round trip for NB); exact in any order */
        for (int j0 = lo + 2 * lane; j0 < hi; j0 += 64 * NB) {
            float2 v[NB];
#pragma unroll
            for (int k = 0; k < NB; k++) v[k] = pair(j0 + 64 * k < hi ? j0 + 64 * k : j0);
#pragma unroll
            for (int k = 0; k < NB; k++) {
                const int j = j0 + 64 * k;
                if (j < hi) mx = fmaxf(mx, j + 1 < hi ? fmaxf(v[k].x, v[k].y) : v[k].x);
            }
        }
    }
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    return mx;
}

/* Its sum l_p in the fixed order above, and put(j, e0, e1): the pair's terms (zeros past hi) for the weights,
 * for every pair below hi rounded up to 16. NB pairs a lane are loaded at once (indices past that bound read
 * the lane's first pair again and add nothing), so a round trip and an exp serve NB pairs rather than one. */
template <int NB = 4, class P, class W>
__device__ __forceinline__ float am_part_sum(int lo, int hi, float mx, P pair, W put)
{
    const int lane = threadIdx.x & 31, h16 = (hi + 15) & ~15;
    float sum = 0;
    for (int j0 = lo + 2 * lane; j0 < h16; j0 += 64 * NB) {
        float2 v[NB];
#pragma unroll
        for (int k = 0; k < NB; k++) v[k] = pair(j0 + 64 * k < h16 ? j0 + 64 * k : j0);
#pragma unroll
        for (int k = 0; k < NB; k++) {
            const int j = j0 + 64 * k; /* past hi: exp(-inf) = +0, with no branch around the exp */
            if (j < h16) {
                const float e0 = expf(j < hi ? v[k].x - mx : -INFINITY);
                const float e1 = expf(j + 1 < hi ? v[k].y - mx : -INFINITY);
                sum += e0;
                sum += e1;
                put(j, e0, e1);
            }
        }
    }
    return warp_sum(sum);
}

/* The parts' maxima, sums and weights for the tensor cores: a warp per (token, head), a lane's pairs 2 l (+ 64 k)
 * of all the rows, MD_NV at a time in registers (one round trip; CSA's 640 rows, HCA's to an ~82k context:
 * once): the parts' maxima, then their sums - each lane's pairs in row order into its part's sum, then a
 * butterfly a part - and the weights exp(s - m_p) rounded to BF16 (reference numerics, the only ones that take
 * the tensor cores), written as k_attn_pv's A fragments, a pair per 4-byte store; rows from nr to the next
 * multiple of 16 get weight 0. den: the denominator, cf: the parts' factors c_p (AM_PARTS a head), both
 * dsv4_attn_join's. n = tokens x heads.
 * A pair's part is its 16-row block's (dsv4_attn_part_lo's parts start at multiples of 16; an empty part's
 * rows are its successor's, rows past nr the last part's): each lane finds two blocks' parts once a round
 * (into shared memory: a shuffle in the pairs' loop got a convergence check and a collective fallback each) and a pair
 * reads its block's. A lane's pairs of one part are consecutive (the parts are), so the lane keeps one running max and
 * one running sum, restarted where its part changes and stored at [part][lane] in shared memory after each pair (the
 * last store of a part holds the lane's value; a part without pairs keeps -inf and 0): the same max, and the same sum -
 * 0 + e0 + e1 + ... in row order - as one per part in registers (bench/results/2026-12-04-s60/mdr/md16_order.py
 * emulates both). The butterflies then take the 32 lanes' values of each part, as before. The same sums as
 * am_part_sum's, whose lane l takes a part's pairs lo + 2 l + 64 k: here lane l takes the pairs j = 2 l (mod 64), the
 * same pairs in the same order on the lane lo / 2 (mod 32) further on - a rotation of the lanes by a multiple of 8 (lo
 * is a multiple of 16), which maps the xor butterfly's tree onto itself (each node a commutative add of the same two
 * children): the same bits (checked in numpy on 22,937 parts; s59). The whole attention at 64 tokens, CSA: 64.5 us (s60
 * mdr/); with a lane's 8 parts in registers, each pair's part by 7 comparisons and its max / sum by 8 selects (95
 * registers, 2,344 SASS instructions against 72 and 1,936), 67.1; with a block per (token, head) and a warp a part (s59
 * pp4/), 72.5. */
#define MD_NV 12 /* k_attn_md16: row pairs a lane holds in registers (64 MD_NV rows a round) */
__global__ void __launch_bounds__(128) k_attn_md16(attn_args A, const int64_t *posv, const int32_t *cnt,
                                                   const float *scores, uint16_t *pb, float *den, float *cf, int n)
{
    __shared__ float md_m[4][AM_PARTS][32], md_l[4][AM_PARTS][32], md_mx[4][AM_PARTS];
    __shared__ int md_q[4][64];
    const int wb = threadIdx.x >> 5, gw = blockIdx.x * 4 + wb, lane = threadIdx.x & 31;
    if (gw >= n) return;
    const int t = gw / A.H, h = gw % A.H, HG = (A.H + 15) >> 4, KS = A.max_rows >> 4;
    int64_t lo;
    int nwin;
    const int nr = attn_rows(A, posv[t], t, cnt, lo, nwin), n16 = (nr + 15) & ~15;
    int plo[AM_PARTS]; /* the parts' first rows */
#pragma unroll
    for (int p = 0; p < AM_PARTS; p++) plo[p] = dsv4_attn_part_lo(nr, p);
    const float sink = A.sinks[h];
    float(*const sm)[32] = md_m[wb], (*const sl)[32] = md_l[wb];
#pragma unroll
    for (int p = 0; p < AM_PARTS; p++) sm[p][lane] = -INFINITY, sl[p][lane] = 0.0f;
    asm volatile("griddepcontrol.wait;" ::: "memory"); /* the scores (launched with PDL) */
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    /* 8-byte aligned: max_rows is a multiple of 16 (and so holds every pair read) */
    const float *sc = scores + (size_t)gw * A.max_rows;
    /* the part of the 16-row block from row j (the last p whose first row is at most j) */
    const auto part = [&](int j) {
        int q = 0;
#pragma unroll
        for (int p = 1; p < AM_PARTS; p++) q += j >= plo[p];
        return q;
    };
    /* a round's blocks' parts: lane b finds blocks b and b + 32's (MD_NV <= 16: a round has at most 64 blocks);
     * pair slot k of lane l is in block 4 k + l / 8 */
    static_assert(MD_NV <= 16, "k_attn_md16: a round's blocks in two per lane");
    int *const tq = md_q[wb];
    const auto parts = [&](int r0) {
        __syncwarp(); /* the round before has read them */
        tq[lane] = part(r0 + 16 * lane), tq[lane + 32] = part(r0 + 16 * (lane + 32));
        __syncwarp();
    };
    const auto qof = [&](int k) { return tq[4 * k + (lane >> 3)]; };
    float2 v[MD_NV];
    const auto load = [&](int r0) {
#pragma unroll
        for (int k = 0; k < MD_NV; k++) {
            const int j = r0 + 2 * lane + 64 * k;
            v[k] = j < n16 ? *(const float2 *)(sc + j) : make_float2(0.0f, 0.0f);
        }
    };
    /* the lane's running value and its part; its [part][lane] slots at smv / slv + 32 part */
    float run = -INFINITY, *const smv = &sm[0][lane], *const slv = &sl[0][lane];
    int qp = -1;
    for (int r0 = 0; r0 < n16; r0 += 64 * MD_NV) {
        load(r0);
        parts(r0);
#pragma unroll
        for (int k = 0; k < MD_NV; k++) {
            const int j = r0 + 2 * lane + 64 * k;
            if (j >= nr) break;
            const int q = qof(k);
            const float x = j + 1 < nr ? fmaxf(v[k].x, v[k].y) : v[k].x;
            run = q != qp ? x : fmaxf(run, x);
            qp = q;
            smv[32 * q] = run;
        }
    }
    __syncwarp();
    float m[AM_PARTS], l[AM_PARTS], c[AM_PARTS];
#pragma unroll
    for (int p = 0; p < AM_PARTS; p++) { /* the max over the lanes, exact in any order: as ordered integers */
        const int b = __float_as_int(sm[p][lane]), key = __reduce_max_sync(0xffffffffu, b >= 0 ? b : b ^ 0x7fffffff);
        m[p] = __int_as_float(key >= 0 ? key : key ^ 0x7fffffff);
    }
    if (lane < AM_PARTS) md_mx[wb][lane] = m[lane];
    __syncwarp();
    run = 0.0f, qp = -1;
    for (int r0 = 0; r0 < n16; r0 += 64 * MD_NV) {
        if (n16 > 64 * MD_NV) load(r0), parts(r0); /* else the registers hold them still */
        /* pair slot k's fragment: slot 0's plus 64 k rows, 4 k fragment steps of 256 values (am_frag) */
        uint16_t *const pk = pb + am_frag(t, HG, KS, h, r0 + 2 * lane);
#pragma unroll
        for (int k = 0; k < MD_NV; k++) {
            const int j = r0 + 2 * lane + 64 * k;
            if (j >= n16) break;
            const int q = qof(k);
            const float mq = md_mx[wb][q];
            /* past nr: exp(-inf) = +0, with no branch around the exp */
            const float e0 = expf(j < nr ? v[k].x - mq : -INFINITY), e1 = expf(j + 1 < nr ? v[k].y - mq : -INFINITY);
            run = q != qp ? 0.0f : run;
            qp = q;
            run += e0;
            run += e1;
            slv[32 * q] = run;
            *(uint32_t *)(pk + 1024 * k) = bf2_rn(e0, e1);
        }
    }
    __syncwarp();
#pragma unroll
    for (int p = 0; p < AM_PARTS; p++) l[p] = warp_sum(sl[p][lane]);
    const float d = dsv4_attn_join(m, l, sink, c);
#pragma unroll
    for (int p = 0; p < AM_PARTS; p++)
        if (lane == p) cf[(size_t)gw * AM_PARTS + p] = c[p];
    if (lane == 0) den[gw] = d;
}

/* k_attn_md16's outputs with a block per (token, head) and a warp a part (am_part_max, am_part_sum: the reference
 * order itself, which k_attn_md16 reproduces by a rotation of its lanes; the same bits), eight pairs a lane in
 * flight: for few tokens with many rows (k_attn_md16's one warp a (token, head) walks all of them twice: ~21 us at
 * one token on HCA's 8,320 rows at a 1M context, s67 m1/), where its 8 x the warps pay. A part's max and sum go
 * through shared memory to thread 0, which joins them (dsv4_attn_join). n = tokens x heads. */
#define MDP_NB 8
__global__ void __launch_bounds__(32 * AM_PARTS)
    k_attn_mdp(attn_args A, const int64_t *posv, const int32_t *cnt, const float *scores, uint16_t *pb, float *den,
               float *cf, int n)
{
    __shared__ float pm[AM_PARTS], pl[AM_PARTS];
    const int gw = (int)blockIdx.x, p = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    if (gw >= n) return;
    const int t = gw / A.H, h = gw % A.H, HG = (A.H + 15) >> 4, KS = A.max_rows >> 4;
    int64_t lo;
    int nwin;
    const int nr = attn_rows(A, posv[t], t, cnt, lo, nwin);
    const int r0 = dsv4_attn_part_lo(nr, p), r1 = dsv4_attn_part_lo(nr, p + 1);
    const float sink = A.sinks[h];
    asm volatile("griddepcontrol.wait;" ::: "memory"); /* the scores (launched with PDL) */
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    const float *sc = scores + (size_t)gw * A.max_rows; /* 8-byte aligned; max_rows holds every pair read */
    const auto pair = [&](int j) { return *(const float2 *)(sc + j); };
    const float mx = am_part_max<MDP_NB>(r0, r1, pair);
    const float l = am_part_sum<MDP_NB>(r0, r1, mx, pair, [&](int j, float e0, float e1) {
        *(uint32_t *)(pb + am_frag(t, HG, KS, h, j)) = bf2_rn(e0, e1);
    });
    if (lane == 0) pm[p] = mx, pl[p] = l;
    __syncthreads();
    if (threadIdx.x == 0) {
        float m[AM_PARTS], ls[AM_PARTS], c[AM_PARTS];
#pragma unroll
        for (int q = 0; q < AM_PARTS; q++) m[q] = pm[q], ls[q] = pl[q];
        den[gw] = dsv4_attn_join(m, ls, sink, c);
#pragma unroll
        for (int q = 0; q < AM_PARTS; q++) cf[(size_t)gw * AM_PARTS + q] = c[q];
    }
}

/* Weighted sum: block (token, SL dimensions, part), a cluster along the
 * AT_PARTS parts; thread = (head tid / 4, SL / 4 dimensions); the part's rows
 * (their SL dimensions) and weights go through shared memory a tile at a
 * time, added in row order; part 0 adds the parts in order (reference
 * numerics: dsv4_attn_join's, the parts being the reference parts) and divides. A
 * dimension's sum is the same whatever SL is (narrower slices: more blocks
 * for small batches). */
template <int SL>
__global__ void __launch_bounds__(256)
    k_attn_hpv(attn_args A, const int64_t *posv, const int32_t *cnt, const float *scores, const float **rows,
               const float *den, const float *cf, float *out)
{
    constexpr int DPT = SL / 4; /* dimensions per thread */
    __shared__ __align__(16) float rs[HS_PT][SL];
    __shared__ float es[HS_HEADS][HS_PT + 1];
    __shared__ float red[DPT][256];
    const int t = blockIdx.x, part = blockIdx.z, h = threadIdx.x >> 2, d0 = blockIdx.y * SL + DPT * (threadIdx.x & 3);
    int64_t lo;
    int nwin;
    const int nr = attn_rows(A, posv[t], t, cnt, lo, nwin);
    /* reference numerics: the reference parts (each weighted against its own max; k_attn_md) */
    const int j0 = A.reference ? dsv4_attn_part_lo(nr, part) : (int)((int64_t)nr * part / AT_PARTS),
              j1 = A.reference ? dsv4_attn_part_lo(nr, part + 1) : (int)((int64_t)nr * (part + 1) / AT_PARTS);
    const float **rp = rows + (size_t)t * A.max_rows;
    float acc[DPT];
#pragma unroll
    for (int k = 0; k < DPT; k++) acc[k] = 0.0f;
    for (int jt = j0; jt < j1; jt += HS_PT) {
        const int nt = j1 - jt < HS_PT ? j1 - jt : HS_PT;
        __syncthreads();
        if ((A.hd & 3) == 0) /* 4-value chunks of the slice */
            for (int e = threadIdx.x; e < nt * SL / 4; e += blockDim.x) {
                const int j = e / (SL / 4), c = e % (SL / 4), i = blockIdx.y * SL + 4 * c;
                ((float4 *)rs[j])[c] = i >= A.hd ? make_float4(0, 0, 0, 0) : kv_ld4(rp[jt + j], i, A.bf16);
            }
        else
            for (int e = threadIdx.x; e < nt * SL; e += blockDim.x) {
                const int j = e / SL, i = blockIdx.y * SL + e % SL;
                rs[j][e % SL] = i < A.hd ? kv_el(rp[jt + j], i, A.bf16) : 0.0f;
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
        const float *c = cf + ((size_t)t * A.H + h) * AM_PARTS; /* reference numerics: dsv4_attn_join's order */
        if (A.reference)
#pragma unroll
            for (int k = 0; k < DPT; k++) acc[k] = __fmaf_rn(c[0], acc[k], 0.0f);
        for (int p = 1; p < AT_PARTS; p++) {
            const float *o = cl.map_shared_rank(&red[0][0], p);
            const float cp = c[p];
#pragma unroll
            for (int k = 0; k < DPT; k++)
                acc[k] =
                    A.reference ? __fmaf_rn(cp, o[k * 256 + threadIdx.x], acc[k]) : acc[k] + o[k * 256 + threadIdx.x];
        }
        const float dn = den[t * A.H + h];
        float *ot = out + ((size_t)t * A.H + h) * A.hd;
#pragma unroll
        for (int k = 0; k < DPT; k++) {
            if (d0 + k < A.hd) ot[d0 + k] = acc[k] / dn;
            red[k][threadIdx.x] = acc[k]; /* (cluster_reads_done: part 0's red is read by no other block) */
        }
    }
    cluster_reads_done(); /* the other parts' shared memory stays until part 0 has read it */
}

/* ---- tensor cores (reference numerics): the 64 heads of a token are the
 * MMA's M dimension, its rows the N (scores) or K (weighted sum) dimension.
 * In reference numerics q, every row and every weight exp(s - m_p) are BF16
 * values (forward.c rounds q and the rows, k_attn_md16 the weights), so BF16
 * MMAs with FP32 accumulation form every product exactly: only the order of
 * the sums differs from the CPU. Other inputs would be rounded to BF16.
 * For head_dim a multiple of 32 up to 512 and up to 64 heads.
 *
 * k_attn_qk: block (token, part of RT = 16 NT rows), 8 warps: heads 16 w ..
 * 16 w + 15 (w = warp % 4) of the part's first or second half of the rows.
 * The token's q goes to shared memory once as BF16; the part's
 * rows go through shared memory CH dimensions at a time (the next chunk's
 * loads in flight during this chunk's MMAs). A score is one MMA chain over
 * the dimensions in order, whatever RT is: the part count is free.
 * k_attn_md16: each (token, head)'s parts' maxima, sums and weights (a warp a
 * part), the weights written as k_attn_pv's A fragments (BF16: exact), the
 * parts' factors and the denominator (dsv4_attn_join). k_attn_pv:
 * block (token, 8 NT
 * dimensions, part), a cluster of the AM_PARTS parts (split at multiples of
 * 16 rows, a function of the token's row count only); tiles of values
 * through shared memory as BF16, B operands through ldmatrix.trans, the
 * weights' fragments straight from memory; each part joins an eighth of the
 * outputs over the parts, in part order (dsv4_attn_join), and divides. With many tokens
 * (WALK) one block per (token, 32, 64 or 128 dimensions) walks the parts itself, the
 * part sums joined in the same order: the same bits with no cluster and no
 * per-part start-up (the tests compare the two). Which scores block and
 * which weighted-sum layout serve a call of n tokens is dsv4 tune's choice
 * (engine/tune.h; built in: the H200's): every choice gives the same bits. */
#define AM_TILE 64 /* rows per tile of k_attn_pv */

/* Bytes per row of a BF16 tile in shared memory whose 16-byte fragment reads
 * (8 lanes: 2 rows x 4 chunks) meet 8 distinct bank groups: stride = 64 mod 128. */
__host__ __device__ constexpr int am_stride(int elems) { return elems * 2 + (192 - (elems * 2) % 128) % 128; }

/* k_attn_qk<NT>: dimensions per chunk of its 16 NT rows (8,192 floats a chunk) and its dynamic shared
 * memory: the token's q, a chunk of the rows, the rows' addresses. */
__host__ __device__ constexpr int am_qk_chunk(int NT) { return 8192 / (16 * NT); }

static size_t am_qk_smem(int NT, int hd, bool bf)
{
    return (size_t)64 * am_stride(hd) + (size_t)16 * NT * (am_stride(am_qk_chunk(NT)) * (bf ? 2 : 1) + sizeof(float *));
}

/* 16 bytes of a BF16 row (8 values) by cp.async: one 16-byte copy where the source is so aligned, else four
 * 4-byte ones (a BF16 row starts on a float); ok false: zeros. */
__device__ __forceinline__ void cp_async16_any(unsigned char *dp, const uint16_t *src, bool ok)
{
    if (((uintptr_t)src & 15) == 0)
        cp_async<16>(dp, src, ok);
    else
#pragma unroll
        for (int k = 0; k < 4; k++) cp_async<4>(dp + 4 * k, src + 2 * k, ok);
}

/* Values d .. d + 3 of an FP32 cached row (d % 4 == 0) rounded to BF16 (exact: reference numerics cache BF16
 * values; BF16 rows go to shared memory by cp.async as they are). */
__device__ __forceinline__ uint2 kv_bf4(const float *r, int d)
{
    return bf4_rn(kv_ld4(r, d, false));
}

/* The step's rows as BF16 (attn_args.kvb: cached rows are BF16), n rows of hd values at rf floats a row. */
__device__ __forceinline__ void kv_pack(const float *kv_new, int hd, int rf, size_t i, uint16_t *kvb)
{
    const size_t t = i / hd, d = i % hd;
    kvb[t * 2 * rf + d] = dsv4_f32_to_bf16(kv_new[i]); /* as k_kv_store caches it */
}
/* Values 0 .. 7 of src (16-byte aligned) as kv_pack rounds them, as one 16-byte piece of a BF16 row. */
__device__ __forceinline__ uint4 kv_pack8(const float *src)
{
    const float4 a = *(const float4 *)src, b = *(const float4 *)(src + 4);
    return make_uint4(dsv4_f32_to_bf16(a.x) | (uint32_t)dsv4_f32_to_bf16(a.y) << 16,
                      dsv4_f32_to_bf16(a.z) | (uint32_t)dsv4_f32_to_bf16(a.w) << 16,
                      dsv4_f32_to_bf16(b.x) | (uint32_t)dsv4_f32_to_bf16(b.y) << 16,
                      dsv4_f32_to_bf16(b.z) | (uint32_t)dsv4_f32_to_bf16(b.w) << 16);
}

__global__ void k_attn_kvpack(const float *kv_new, size_t n, int hd, int rf, uint16_t *kvb)
{
    pdl_start();
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) kv_pack(kv_new, hd, rf, i, kvb);
}

/* q as BF16, once per step (every score block of a token copies it whole); with BF16 cached rows the
 * step's rows too (nk of their values: the threads past q's). */
__global__ void k_attn_qpack(const float4 *q, size_t n8, uint4 *qb, const float *kv_new, size_t nk, int hd, int rf,
                             uint16_t *kvb)
{
    /* launched with PDL (launch_pdl): q and everything before are complete
     * past the wait; then k_attn_qk may find its rows (its prologue reads
     * what kernels before this one wrote) */
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n8) {
        if (i - n8 < nk) kv_pack(kv_new, hd, rf, i - n8, kvb);
        return;
    }
    const float4 a = q[2 * i], b = q[2 * i + 1];
    const uint2 x = bf4_rn(a), y = bf4_rn(b);
    qb[i] = make_uint4(x.x, x.y, y.x, y.y);
}

template <int NT, bool BF>
__global__ void __launch_bounds__(256)
    k_attn_qk(attn_args A, const dsv4_seg *segs, const int32_t *tok_seg, const int64_t *posv, const int32_t *page_table,
              const uint16_t *qb, const float *kv_new, const int32_t *idx, const int32_t *cnt, float *scores,
              const float **rows)
{
    constexpr int RT = 16 * NT, CH = am_qk_chunk(NT), C4 = CH / 4, LD = RT * C4 / 256; /* float4 per thread */
    extern __shared__ __align__(16) unsigned char am_sm[];
    const int hd = A.hd, qst = am_stride(hd), kst = am_stride(CH);
    unsigned char *qs = am_sm, *ks = am_sm + 64 * qst;
    const float **rps = (const float **)(ks + RT * kst);
    const int t = blockIdx.x, tid = threadIdx.x, lane = tid & 31, g = lane >> 2, tq = lane & 3;
    const int w = (tid >> 5) & 3, rh = tid >> 7; /* warp: heads 16 w .., rows 8 NT rh .. */
    const dsv4_seg s = segs[tok_seg[t]];
    const int64_t pos = posv[t];
    int64_t lo;
    int nwin;
    const int nr = attn_rows(A, pos, t, cnt, lo, nwin);
    const int j0 = blockIdx.y * RT;
    if (j0 >= nr) return; /* the whole block */
    const int nt = nr - j0 < RT ? nr - j0 : RT;
    if (tid < RT) {
        const float *r = tid < nt ? row_ptr(A, s, pos, t, j0 + tid, nwin, lo, kv_new, idx, page_table) : NULL;
        rps[tid] = r;
        if (tid < nt) rows[(size_t)t * A.max_rows + j0 + tid] = r;
    }
    __syncthreads();
    /* BF: BF16 rows, each chunk by cp.async straight into its tile (two tiles: the next chunk lands during this
     * chunk's MMAs); else FP32 rows, a chunk ahead in registers, rounded to BF16 on the way */
    uint2 kr[BF ? 1 : LD];
    /* the two tiles chosen by a select, not indexed in an array: an array of pointers lives in local memory and
     * its loads lose the shared space - the tile's fragment loads were generic LD.E.128 behind an LDL (v65's ncu) */
    unsigned char *const kt0 = ks, *const kt1 = BF ? (unsigned char *)(rps + RT) : ks;
    auto load_chunk = [&](int c) {
#pragma unroll
        for (int i = 0; i < LD; i++) {
            const int e = i * 256 + tid, r = e / C4, d = c + 4 * (e % C4);
            kr[BF ? 0 : i] = r < nt && d < hd ? kv_bf4(rps[r], d) : make_uint2(0, 0);
        }
    };
    /* 16-byte pieces (4-byte ones from a row not so aligned) */
    /* which: 0 every row, 1 the cached rows (complete before k_attn_qpack), 2 the step's own (k_attn_qpack
     * packs them: after the wait) */
    auto issue_chunk = [&](int c, unsigned char *dst, int which) {
        constexpr int C8 = CH / 8;
        for (int e = tid; e < RT * C8; e += 256) {
            const int r = e / C8, d = c + 8 * (e % C8);
            const bool ok = r < nt && d < hd; /* hd % 32 == 0: the piece is whole */
            if (which && (ok && j0 + r < nwin && lo + j0 + r >= s.pos0) != (which == 2)) continue;
            const uint16_t *src = (const uint16_t *)rps[ok ? r : 0] + (ok ? d : 0);
            unsigned char *dp = dst + r * kst + 16 * (e % C8);
            /* cp_async16_any, written out: the call schedules this kernel's loop otherwise (the same work) */
            if (((uintptr_t)src & 15) == 0)
                cp_async<16>(dp, src, ok);
            else
#pragma unroll
                for (int k = 0; k < 4; k++) cp_async<4>(dp + 4 * k, src + 2 * k, ok);
        }
        cp_async_commit();
    };
    if (BF)
        issue_chunk(0, kt0, 1);
    else
        load_chunk(0);
    asm volatile("griddepcontrol.wait;" ::: "memory"); /* k_attn_qpack's q and BF16 rows (launched with PDL) */
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (BF) issue_chunk(0, kt0, 2);
    /* the token's BF16 q (heads past H zero) without registers */
    const int H16 = (A.H + 15) & ~15, q16 = hd / 8;
    for (int e = tid; e < H16 * q16; e += 256) {
        const int h = e / q16;
        cp_async<16>(qs + h * qst + 16 * (e % q16), qb + ((size_t)t * A.H + (h < A.H ? h : 0)) * hd + 8 * (e % q16),
                     h < A.H);
    }
    cp_async_commit();
    float acc[NT][4];
#pragma unroll
    for (int n = 0; n < NT; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
    const bool active = 16 * w < A.H;
    for (int c = 0, ci = 0; c < hd; c += CH, ci++) {
        const unsigned char *kc = ci & 1 ? kt1 : kt0;
        if (BF) {
            cp_async_wait<0>(); /* this chunk (and q) */
            __syncthreads();    /* ... for every thread; the MMAs of the chunk before are done with the other tile */
            if (c + CH < hd) issue_chunk(c + CH, ci & 1 ? kt0 : kt1, 0);
        } else {
            if (c == 0) cp_async_wait<0>();
            __syncthreads(); /* the previous chunk's MMAs are done with ks; q has landed */
#pragma unroll
            for (int i = 0; i < LD; i++) {
                const int e = i * 256 + tid;
                *(uint2 *)(ks + (e / C4) * kst + 8 * (e % C4)) = kr[BF ? 0 : i];
            }
            if (c + CH < hd) load_chunk(c + CH);
            __syncthreads();
        }
        if (!active) continue;
        const int cw = hd - c < CH ? hd - c : CH;
        /* lane (g, tq) takes dimensions 8 tq .. 8 tq + 7 of each 32: the same
         * permutation of K for q and the rows, so each MMA adds the same
         * products (its order of them is its own) */
        for (int d0 = 0; d0 < cw; d0 += 32) {
            const uint4 a = *(const uint4 *)(qs + (16 * w + g) * qst + 2 * (c + d0) + 16 * tq);
            const uint4 b8 = *(const uint4 *)(qs + (16 * w + g + 8) * qst + 2 * (c + d0) + 16 * tq);
#pragma unroll
            for (int n = 0; n < NT; n++) {
                const uint4 k = *(const uint4 *)(kc + (8 * (NT * rh + n) + g) * kst + 2 * d0 + 16 * tq);
                mma_bf16(acc[n], a.x, b8.x, a.y, b8.y, k.x, k.y);
                mma_bf16(acc[n], a.z, b8.z, a.w, b8.w, k.z, k.w);
            }
        }
    }
    if (!active) return;
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int h = 16 * w + g + 8 * (e >> 1), j = 8 * (NT * rh + n) + 2 * tq + (e & 1);
            if (h < A.H && j < nt) scores[((size_t)t * A.H + h) * A.max_rows + j0 + j] = acc[n][e] * A.scale;
        }
}

/* The parts' factors c_p (dsv4_attn_join's, from cf: AM_PARTS a (token, head)) of an MMA accumulator's two heads, hb
 * and hb + 8, as cw[p][0 / 1] (heads past H: 0; their sums are 0). */
__device__ __forceinline__ void am_factors(const attn_args &A, const float *cf, int t, int hb, float (*cw)[2])
{
#pragma unroll
    for (int q = 0; q < AM_PARTS; q++)
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const int h = hb + 8 * i;
            cw[q][i] = h < A.H ? cf[((size_t)t * A.H + h) * AM_PARTS + q] : 0.0f;
        }
}

/* Part p's pair of am_factors' cw (NP parts: a select over them, so that cw stays in registers). */
template <int NP> __device__ __forceinline__ void am_factor_of(const float (*cw)[2], int p, float &c0, float &c1)
{
    c0 = cw[0][0], c1 = cw[0][1];
#pragma unroll
    for (int q = 1; q < NP; q++)
        if (q == p) c0 = cw[q][0], c1 = cw[q][1];
}

/* A walking block's quad of outputs (an MMA accumulator's: q[0], q[1] head hb, q[2], q[3] head hb + 8, columns c,
 * c + 1) divided by the heads' denominators, de-rotated (cs, sn: attn_derot_cs's at c) and stored; heads past
 * H are not. k_attn_pv's walk and k_attn_pvw end in it: the same operations. */
__device__ __forceinline__ void attn_store_quad(const attn_args &A, int t, int hb, int c, const float *q, float d0,
                                                float d1, float cs, float sn, float *out)
{
#pragma unroll
    for (int e = 0; e < 4; e += 2) {
        const int h = hb + 8 * (e >> 1);
        float v0 = q[e] / (e >> 1 ? d1 : d0), v1 = q[e + 1] / (e >> 1 ? d1 : d0);
        if (A.ofreq) attn_derot2(A, c, cs, sn, v0, v1);
        if (h < A.H) {
            out[((size_t)t * A.H + h) * A.hd + c] = v0;
            out[((size_t)t * A.H + h) * A.hd + c + 1] = v1;
        }
    }
}

__device__ __forceinline__ void ldsm_x2_trans(uint32_t &b0, uint32_t &b1, const void *p)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(b0), "=r"(b1) : "r"(a));
}

template <int NT, bool WALK, bool BF>
__global__ void __launch_bounds__(128)
    k_attn_pv(attn_args A, const int64_t *posv, const int32_t *cnt, const uint16_t *pb, const float **rows,
              const float *den, const float *cf, float *out)
{
    constexpr int SL = 8 * NT, VS = SL == 8 ? 16 : 2 * SL + 16; /* bytes per value row: an odd multiple of 16 */
    static_assert(WALK || 128 % SL == 0, "k_attn_pv: a thread's stores keep one column (the de-rotation's angle)");
    /* rows per tile (WALK: fewer as the slice widens, for the registers of a tile's values ahead) */
    constexpr int TILE = !WALK ? AM_TILE : NT <= 4 ? 2 * AM_TILE : NT <= 8 ? AM_TILE : AM_TILE / 2;
    constexpr int VL = TILE * SL / 4 / 128 > 0 ? TILE * SL / 4 / 128 : 1; /* value float4 per thread */
    /* BF: BF16 rows, each tile by cp.async straight into one of two tiles (the next lands during this one's
     * MMAs); else FP32 rows, a tile ahead in registers, rounded to BF16 on the way */
    __shared__ __align__(16) unsigned char vs[(BF ? 2 : 1) * TILE * VS];
    unsigned char *const vt0 = vs, *const vt1 = vs + (BF ? TILE * VS : 0); /* a select, not an array (k_attn_qk) */
    __shared__ __align__(16) float red[WALK ? 1 : 64 * SL];
    extern __shared__ const float *prs[]; /* WALK: the token's row addresses */
    const int t = blockIdx.x, tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    const int g = lane >> 2, tq = lane & 3, dbase = blockIdx.y * SL;
    /* the parts this block adds: all of them in order (WALK), or its own */
    const int p_lo = WALK ? 0 : (int)blockIdx.z, p_hi = WALK ? AM_PARTS : p_lo + 1;
    int64_t lo;
    int nwin;
    const int nr = attn_rows(A, posv[t], t, cnt, lo, nwin);
    const float **rp = rows + (size_t)t * A.max_rows;
    if (WALK) { /* k_attn_qk's list is complete: k_attn_md16 has passed its wait */
        for (int j = tid; j < nr; j += 128) prs[j] = rp[j];
        __syncthreads();
    }
    const bool active = 16 * w < A.H, m0 = 16 * w + g < A.H, m1 = 16 * w + g + 8 < A.H;
    const uint4 *pw = (const uint4 *)pb + ((size_t)t * ((A.H + 15) >> 4) + w) * (A.max_rows >> 4) * 32 + lane;
    uint2 vr[BF ? 1 : VL]; /* BF16 */
    uint4 pa[TILE / 16];
    /* the loads run a tile ahead: cursor (pn, jn), the tile's rows end at je */
    int pn = p_lo, jn = dsv4_attn_part_lo(nr, p_lo), je = dsv4_attn_part_lo(nr, p_lo + 1);
    auto skip = [&]() { /* past the end of a part: the next part's first rows */
        while (pn < p_hi && jn >= je) {
            pn++;
            jn = dsv4_attn_part_lo(nr, pn);
            je = dsv4_attn_part_lo(nr, pn + 1);
        }
    };
    auto load_values = [&]() {
        const int n = je - jn < TILE ? je - jn : TILE;
#pragma unroll
        for (int i = 0; i < VL; i++) {
            const int e = i * 128 + tid, r = e / (SL / 4), d = dbase + 4 * (e % (SL / 4));
            vr[BF ? 0 : i] = e < TILE * SL / 4 && r < n ? kv_bf4(WALK ? prs[jn + r] : rp[jn + r], d) : make_uint2(0, 0);
        }
    };
    /* 16-byte pieces (4-byte ones from a row not so aligned) */
    auto issue_values = [&](unsigned char *dst) {
        const int n = je - jn < TILE ? je - jn : TILE;
        constexpr int P = SL / 8 > 0 ? SL / 8 : 1;
        for (int e = tid; e < TILE * P; e += 128) {
            const int r = e / P, d = dbase + 8 * (e % P);
            const bool ok = r < n; /* rows past the tile's: zeros (their weights are 0, their values must be too) */
            const uint16_t *src = (const uint16_t *)(WALK ? prs[jn + (ok ? r : 0)] : rp[jn + (ok ? r : 0)]) + d;
            unsigned char *dp = dst + r * VS + 16 * (e % P);
            cp_async16_any(dp, src, ok);
        }
        cp_async_commit();
    };
    auto load_weights = [&]() { /* this warp's A fragments of the tile's k-steps */
#pragma unroll
        for (int k = 0; k < TILE / 16; k++)
            pa[k] = active && jn + 16 * k < je ? pw[((jn >> 4) + k) * 32] : make_uint4(0, 0, 0, 0);
    };
    skip();
    /* launched with PDL after k_attn_md16: the row list (k_attn_qk's) and the
     * values are there once k_attn_md16's blocks have passed their wait */
    if (pn < p_hi) {
        if (BF)
            issue_values(vt0);
        else
            load_values();
    }
    /* the de-rotation's angles (constants: the positions are up before the step's first kernel), under
     * the loads: the pairs this thread stores, (dbase + 8 nn + 2 tq) walking, (dbase + tid % SL) & ~1 */
    float dcs[WALK ? NT : 1], dsn[WALK ? NT : 1];
    if (A.ofreq) {
#pragma unroll
        for (int nn = 0; nn < (WALK ? NT : 1); nn++)
            attn_derot_cs(A, posv[t], WALK ? dbase + 8 * nn + 2 * tq : dbase + ((tid % SL) & ~1), dcs[nn], dsn[nn]);
    }
    asm volatile("griddepcontrol.wait;" ::: "memory"); /* the weights */
    if (pn < p_hi) load_weights();
    float acc[NT][4], tot[NT][4];
#pragma unroll
    for (int n = 0; n < NT; n++) tot[n][0] = tot[n][1] = tot[n][2] = tot[n][3] = 0.0f;
    int ti = 0; /* tiles so far */
    for (int p = p_lo; p < p_hi; p++) {
#pragma unroll
        for (int n = 0; n < NT; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
        /* WALK: part p's factors of the thread's heads 16 w + g, + 8 (dsv4_attn_join; past H 0: their sums are 0),
         * loaded here and used at the part's end (two registers: the 16 of every part's took the 128-dimension walk to
         * 255 registers) */
        const int hb = 16 * w + g;
        const float c0 = WALK && hb < A.H ? cf[((size_t)t * A.H + hb) * AM_PARTS + p] : 0.0f;
        const float c1 = WALK && hb + 8 < A.H ? cf[((size_t)t * A.H + hb + 8) * AM_PARTS + p] : 0.0f;
        const int j1 = dsv4_attn_part_lo(nr, p + 1);
        for (int jt = dsv4_attn_part_lo(nr, p); jt < j1; jt += TILE) { /* the cursor is at (p, jt) */
            const unsigned char *vc = ti & 1 ? vt1 : vt0;
            if (BF) {
                cp_async_wait<0>(); /* this tile */
                __syncthreads();    /* ... for every thread; the tile before's MMAs are done with the other tile */
            } else {
                __syncthreads(); /* the previous tile's MMAs are done with vs */
#pragma unroll
                for (int i = 0; i < VL; i++) {
                    const int e = i * 128 + tid;
                    if (e < TILE * SL / 4) *(uint2 *)(vs + (e / (SL / 4)) * VS + 8 * (e % (SL / 4))) = vr[BF ? 0 : i];
                }
            }
            uint4 pc[TILE / 16];
#pragma unroll
            for (int k = 0; k < TILE / 16; k++) pc[k] = pa[k];
            const int n = j1 - jt < TILE ? j1 - jt : TILE;
            jn += TILE;
            skip();
            if (pn < p_hi) {
                if (BF)
                    issue_values(ti & 1 ? vt0 : vt1);
                else
                    load_values();
                load_weights();
            }
            ti++;
            if (!BF) __syncthreads();
            if (!active) continue;
#pragma unroll
            for (int k = 0; k < TILE / 16; k++) {
                if (16 * k >= n) break;
                const uint32_t a0 = m0 ? pc[k].x : 0, a1 = m1 ? pc[k].y : 0, a2 = m0 ? pc[k].z : 0,
                               a3 = m1 ? pc[k].w : 0;
#pragma unroll
                for (int nn = 0; nn < NT; nn++) {
                    uint32_t b0, b1;
                    ldsm_x2_trans(b0, b1, vc + (16 * k + (lane & 15)) * VS + 16 * nn);
                    mma_bf16(acc[nn], a0, a1, a2, a3, b0, b1);
                }
            }
        }
        /* WALK: the parts' sums joined in part order (dsv4_attn_join; an empty part's fmaf(0, 0, x) = x); else the
         * block's own part */
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                tot[n][e] = WALK ? __fmaf_rn(e >> 1 ? c1 : c0, acc[n][e], tot[n][e]) : acc[n][e];
    }
    if (WALK) {
        if (!active) return;
        const float d0 = m0 ? den[t * A.H + 16 * w + g] : 1.0f, d1 = m1 ? den[t * A.H + 16 * w + g + 8] : 1.0f;
#pragma unroll
        for (int nn = 0; nn < NT; nn++)
            attn_store_quad(A, t, 16 * w + g, dbase + 8 * nn + 2 * tq, tot[nn], d0, d1, dcs[nn], dsn[nn], out);
        return;
    }
    if (active)
#pragma unroll
        for (int nn = 0; nn < NT; nn++)
#pragma unroll
            for (int e = 0; e < 4; e++) red[(16 * w + g + 8 * (e >> 1)) * SL + 8 * nn + 2 * tq + (e & 1)] = tot[nn][e];
    /* each part adds an eighth of the outputs over the parts in part order
     * (the eight loads in flight together) */
    const int part = (int)blockIdx.z;
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    for (int e = part * 8 * SL + tid; e < (part + 1) * 8 * SL; e += 128) { /* the same trip count in every lane */
        const int h = e / SL, d = e % SL;
        if (!A.ofreq && h >= A.H) break;
        float r[AM_PARTS], c[AM_PARTS];
        const size_t hh = (size_t)t * A.H + (h < A.H ? h : A.H - 1);
#pragma unroll
        for (int q = 0; q < AM_PARTS; q++) {
            r[q] = cl.map_shared_rank(red, q)[e]; /* (in bounds past A.H too) */
            c[q] = cf[hh * AM_PARTS + q];
        }
        float v = 0.0f; /* dsv4_attn_join's order */
#pragma unroll
        for (int q = 0; q < AM_PARTS; q++) v = __fmaf_rn(c[q], r[q], v);
        v = v / den[hh];
        if (A.ofreq) { /* the pair's other column is the next or previous lane's (SL even) */
            const float pv = __shfl_xor_sync(0xffffffffu, v, 1);
            const bool odd = d & 1;
            float v0 = odd ? pv : v, v1 = odd ? v : pv;
            attn_derot2(A, dbase + d - (odd ? 1 : 0), dcs[0], dsn[0], v0, v1); /* d = tid % SL: 128 % SL == 0 */
            v = odd ? v1 : v0;
        }
        if (h < A.H) out[((size_t)t * A.H + h) * A.hd + dbase + d] = v;
        red[e] = v; /* (cluster_reads_done: red[e] of this block is read by this thread alone, above) */
    }
    cluster_reads_done(); /* every part's shared memory stays until all have read it */
}

/* ---- the weighted sum on wgmma (reference numerics, BF16 cached rows): k_attn_pv's walking layout - a
 * block per (token, SL = 64 NA dimensions) adding the parts itself in part order, each part a chain of 16-row
 * steps in row order from zero - with the 64 heads as wgmma's M (warp w: heads 16 w .. 16 w + 15, the weights'
 * A fragments from registers in mma.sync's layout: wg_k16's bits are mma.sync's for the same chain) and the
 * value rows as its B, MN-major (each row's SL values stay contiguous: 128-byte swizzled rows, an 8-row atom
 * per 1,024 bytes, a 64-dimension column after another). The rows and the weights' fragments go through a
 * ring of S stages of KT rows by cp.async (the rows' addresses are k_attn_qk's list), S - 1 stages ahead,
 * a stage's wgmma in flight across the next one's wait; a 16-row step is NA wgmma m64n64k16 where k_attn_pv's
 * warps issue NT ldmatrix + MMA pairs each.
 * The same sums in the same order as k_attn_pv<NT, true, true> (test_ops_cuda compares every choice). */
/* A ring stage of KT rows: NA 64-dimension columns of the values (KT x 128 bytes each), then the weights'
 * fragments of its KT / 16 steps (a warpgroup's 2 KB each) */
__host__ __device__ constexpr int pw_stage(int NA, int KT)
{
    return NA * KT * 128 + 2048 * (KT / 16);
}
static size_t pw_smem(int NA, int KT, int S, int max_rows)
{
    return 1024 + (size_t)S * pw_stage(NA, KT) + (size_t)max_rows * sizeof(float *);
}
#define PW_SMEM_MAX (200 * 1024) /* k_attn_pvw's opt-in (cuda_attn_init) */

template <int NA, int KT, int S>
__global__ void __launch_bounds__(128)
    k_attn_pvw(attn_args A, const int64_t *posv, const int32_t *cnt, const uint16_t *pb, const float **rows,
               const float *den, const float *cf, float *out)
{
    static_assert(S >= 2 && S <= 8 && KT % 16 == 0, "k_attn_pvw: 2 to 8 stages of whole k16 steps");
    constexpr int SL = 64 * NA, SB = pw_stage(NA, KT), VB = NA * KT * 128, KS = KT / 16;
    extern __shared__ __align__(16) unsigned char pw_sm[];
    const uint32_t s0 = (uint32_t)__cvta_generic_to_shared(pw_sm), sb = (s0 + 1023u) & ~1023u; /* swizzle atoms */
    unsigned char *ring = pw_sm + (sb - s0);
    const float **prs = (const float **)(ring + S * SB); /* the token's row addresses */
    const int t = blockIdx.x, tid = threadIdx.x, lane = tid & 31, w = tid >> 5, g = lane >> 2, tq = lane & 3;
    const int dbase = blockIdx.y * SL;
    const int64_t pos = posv[t];
    int64_t lo;
    int nwin;
    const int nr = attn_rows(A, pos, t, cnt, lo, nwin), ns = (nr + 15) >> 4, nst = (nr + KT - 1) / KT;
    const float **rp = rows + (size_t)t * A.max_rows;
    for (int j = tid; j < nr; j += 128) prs[j] = rp[j]; /* k_attn_qk's list is complete: k_attn_md16 passed its wait */
    __syncthreads();
    const bool active = 16 * w < A.H, m0 = 16 * w + g < A.H, m1 = 16 * w + g + 8 < A.H;
    const uint4 *pw =
        (const uint4 *)pb + ((size_t)t * ((A.H + 15) >> 4) + (active ? w : 0)) * (A.max_rows >> 4) * 32 + lane;
    /* stage i: rows KT i .. (zeros past nr), chunk c of a row's 64-dimension column a at c ^ (row & 7) */
    auto issue_v = [&](int i) {
        unsigned char *st = ring + (i % S) * SB;
#pragma unroll
        for (int e0 = 0; e0 < KT * NA * 8; e0 += 128) {
            const int e = e0 + tid, r = e / (NA * 8), c16 = e % (NA * 8), a = c16 >> 3, c = c16 & 7, j = KT * i + r;
            const bool ok = j < nr;
            cp_async16_any(st + a * (KT * 128) + r * 128 + ((c ^ (r & 7)) << 4),
                           (const uint16_t *)prs[ok ? j : 0] + dbase + 8 * c16, ok);
        }
    };
    /* the weights' fragments of stage i: each thread its own */
    auto issue_a = [&](int i) {
        unsigned char *st = ring + (i % S) * SB + VB;
#pragma unroll
        for (int k = 0; k < KS; k++) {
            const int s = KS * i + k;
            cp_async<16>(st + (k * 128 + tid) * 16, pw + (size_t)(s < ns ? s : 0) * 32, active && s < ns);
        }
    };
    for (int i = 0; i < S - 1; i++) {
        if (i < nst) issue_v(i);
        cp_async_commit();
    }
    asm volatile("griddepcontrol.wait;" ::: "memory"); /* the weights and denominators (k_attn_md16's) */
    for (int i = 0; i < S - 1 && i < nst; i++) issue_a(i);
    cp_async_commit();
    float cw[AM_PARTS][2]; /* the parts' factors of the thread's heads */
    am_factors(A, cf, t, 16 * w + g, cw);
    float acc[NA][32], tot[NA][32];
#pragma unroll
    for (int a = 0; a < NA; a++)
#pragma unroll
        for (int j = 0; j < 32; j++) acc[a][j] = tot[a][j] = 0.0f;
    /* the parts: p the current step's (dsv4_attn_part_lo's split; an empty part adds nothing: dsv4_attn_join's fmaf(0,
     * 0, x) = x) */
    auto hi = [&](int q) { return dsv4_attn_part_lo(nr, q + 1); };
    int p = 0;
    while (p < AM_PARTS - 1 && hi(p) <= 0) p++;
    /* the wgmma in flight done, their accumulators read from here on */
    auto acc_ready = [&]() {
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
        for (int a = 0; a < NA; a++)
#pragma unroll
            for (int j = 0; j < 32; j++) asm volatile("" : "+f"(acc[a][j])::"memory");
    };
    for (int i = 0; i < nst; i++) {
        /* stage i landed (the first stages' weights are one group, after their values); stage i - 1's wgmma
         * done (its buffer is refilled below) */
        cp_async_wait_min<S - 2>(i);
        acc_ready();
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); /* cp.async's writes, for wgmma's reads */
        __syncthreads(); /* every thread's copies of stage i; every warp done with stage i - 1 */
        if (i + S - 1 < nst) {
            issue_v(i + S - 1);
            issue_a(i + S - 1);
        }
        cp_async_commit();
        const unsigned char *st = ring + (i % S) * SB;
        const uint32_t sst = sb + (uint32_t)((i % S) * SB);
        uint32_t af[KS][4]; /* the stage's weight fragments, all before its first wgmma */
#pragma unroll
        for (int k = 0; k < KS; k++) {
            const uint4 f = *(const uint4 *)(st + VB + (k * 128 + tid) * 16);
            af[k][0] = m0 ? f.x : 0u, af[k][1] = m1 ? f.y : 0u, af[k][2] = m0 ? f.z : 0u, af[k][3] = m1 ? f.w : 0u;
            /* each step's fragments in registers of their own before the fence: left to ptxas, every step's selects
             * went into one register quad, each written while the wgmma before still read it - a wait after every
             * wgmma of the stage (C7513; the SASS had WARPGROUP.DEPBAR after each HGMMA) */
            asm volatile("" : "+r"(af[k][0]), "+r"(af[k][1]), "+r"(af[k][2]), "+r"(af[k][3]));
        }
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int k = 0; k < KS; k++) {
            const int s = KS * i + k;
            if (s >= ns) break;
#pragma unroll
            for (int a = 0; a < NA; a++)
                wg_k16_bf_tb(acc[a], af[k], wg_desc(sst + (uint32_t)(a * (KT * 128) + k * 2048)));
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            if (16 * (s + 1) >= hi(p)) { /* part p's last step: into the total, in part order (dsv4_attn_join) */
                acc_ready();
                float c0, c1;
                am_factor_of<AM_PARTS>(cw, p, c0, c1);
#pragma unroll
                for (int a = 0; a < NA; a++)
#pragma unroll
                    for (int j = 0; j < 32; j++) {
                        tot[a][j] = __fmaf_rn((j >> 1) & 1 ? c1 : c0, acc[a][j], tot[a][j]);
                        acc[a][j] = 0.0f;
                    }
                p++;
                while (p < AM_PARTS - 1 && hi(p) <= 16 * (s + 1)) p++;
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); /* acc written since */
            }
        }
    }
    acc_ready();
    /* The epilogue through shared memory (the ring is free now): the sums as [head][SL] floats, then a loop of
     * column pairs a thread - the heads' denominators and the pairs' (cos, sin) once a block - divided,
     * de-rotated and stored as attn_store_quad does (the same operations on the same values: the same bits).
     * Written out per accumulator quad, with the division and the rotation's sincos inlined 8 NA times, the
     * epilogue was ~100 KB of code and 40 % of the kernel's warp samples, most of them instruction-cache
     * misses (v65's ncu: bench/results/2026-12-02-s46/attn-src/). */
    constexpr int EST = SL + 8; /* floats a head: a half warp's 8-byte stores on 32 distinct banks */
    static_assert(64 * EST * 4 + 64 * 4 + SL * 4 <= S * SB, "k_attn_pvw: the epilogue's staging fits the ring");
    float *ep = (float *)ring, *dsm = ep + 64 * EST;
    float2 *csn = (float2 *)(dsm + 64);
    cp_async_wait<0>();
    __syncthreads(); /* every warp done with the ring */
#pragma unroll
    for (int a = 0; a < NA; a++)
#pragma unroll
        for (int i = 0; i < 8; i++) { /* tot[a][4 i ..]: wgmma's D quad, mma.sync's accumulator layout */
            const int c = 64 * a + 8 * i + 2 * tq, h = 16 * w + g;
            *(float2 *)(ep + h * EST + c) = make_float2(tot[a][4 * i], tot[a][4 * i + 1]);
            *(float2 *)(ep + (h + 8) * EST + c) = make_float2(tot[a][4 * i + 2], tot[a][4 * i + 3]);
        }
    if (tid < 64) dsm[tid] = tid < A.H ? den[t * A.H + tid] : 1.0f;
    if (A.ofreq && tid < SL / 2) {
        float cs = 0.0f, sn = 0.0f;
        attn_derot_cs(A, pos, dbase + 2 * tid, cs, sn);
        csn[tid] = make_float2(cs, sn);
    }
    __syncthreads();
#pragma unroll 1
    for (int e = tid; e < A.H * (SL / 2); e += 128) {
        const int h = e / (SL / 2), pr = e % (SL / 2), c = dbase + 2 * pr;
        const float2 v = *(const float2 *)(ep + h * EST + 2 * pr);
        const float d = dsm[h];
        float v0 = v.x / d, v1 = v.y / d;
        if (A.ofreq) attn_derot2(A, c, csn[pr].x, csn[pr].y, v0, v1);
        *(float2 *)(out + ((size_t)t * A.H + h) * A.hd + c) = make_float2(v0, v1);
    }
}

/* k_attn_pvw's ring a width (rows a stage, stages), from four of each measured alone at 16 / 64 tokens
 * (bench/results/2026-12-01-s33/pvw/ call 3): 64 dimensions (32, 4) / (32, 8) / (64, 4) / (64, 6), 128
 * dimensions (32, 4) / (32, 6) / (64, 3) / (64, 4) - 128 blocks at 16 tokens take the deepest ring, 256 at
 * 64 the one with the fewest registers (the (64, x) ones spill). (32, 4) at 64 dimensions in decode steps
 * (call 5): even within the rounds' spread. */
#define PW1_KT 64
#define PW1_S  6
#define PW2_KT 32
#define PW2_S  4

/* ---- one pass over the rows (reference numerics, BF16 cached rows): k_attn_one does in one block per
 * (token, HB heads, row part) what k_attn_qk, k_attn_md16 and k_attn_pv do in three kernels, with the same
 * bits. HB is 16 ("one") or 8 ("one8": the MMA's rows 8-15 zeros; twice the blocks, each part owning one
 * head instead of two, so half the parts' sums read into each SM). A cluster of the AM_PARTS parts of a
 * token's HB heads (the parts' rows split as k_attn_pv's: dsv4_attn_part_lo): block p puts the HB heads' q and its
 * part's rows in shared memory once (the cached rows by cp.async, a warp a row; q and the step's own rows
 * from FP32, rounded to BF16 as k_attn_qpack does: no launch before it), takes the part's scores (k_attn_qk's MMA chain
 * over the dimensions in order, its permutation of K), each head's part max and sum and the part's weights exp(s -
 * m_p) as BF16 A fragments (k_attn_md16's order: am_part_max, am_part_sum, a warp a head), and the part's weighted
 * sum from the same rows (k_attn_pv's MMA chain: 16-row steps in order) - with no exchange between the parts until
 * then. After one cluster barrier the owner of each head (HO = HB / 8 heads a part) joins the parts' maxima and sums
 * (dsv4_attn_join) and their weighted sums in part order, divides and de-rotates as k_attn_pv does. Rows and q
 * go through shared memory at a stride of a multiple of 128 bytes with their 16-byte chunks swizzled within each 128
 * (chunk c of row r at c ^ f(r)): the scores' fragment loads (two rows x four chunks a quarter warp) and the
 * weighted sum's ldmatrix.trans (eight rows x one chunk) both meet eight distinct bank groups. */
#define AF_WARPS    8
/* -DAF_TRACE: k_attn_one's thread 0 stamps clock64 at each phase's end and token 0's first head group prints
 * the cycles between them (the printing makes the calls slow: only the differences mean anything) */
#ifdef AF_TRACE
#define AF_T() (tid == 0 && af_n < 24 ? (void)(af_tr[af_n++] = clock64()) : (void)0)
#else
#define AF_T() ((void)0)
#endif
/* The most rows of a part (padded) k_attn_one takes: its shared memory, ~214 KB at 176 rows of 512 dimensions.
 * CSA's 640 rows (96 a part), HCA's to a ~146k context. Up to s66 it took 96 (HCA to ~66k; past that the four
 * kernels); at 176 HCA at one token measured 11.4-11.8 against 15.5-16.2 us at 96k, 13.2 against 15.5-15.8 at
 * 128k, two tokens -21 to -23 %, CSA and four tokens even (bench/results/2026-12-05-s67/one/, an H100).
 * DSV4_ATTN_ONE_ROWS=N: parts of at most N rows (a measurement's knob) */
#define AF_MAX_ROWS 176
#define AF_PT_MAX                                                                                                      \
    512 /* a slot's page-table entries k_attn_one keeps in shared memory (CSA: to 128k tokens at                       \
           256-token pages; past that it reads them from global memory) */

__host__ __device__ constexpr int af_stride(int hd)
{
    return (hd * 2 + 127) & ~127;
}
__device__ __forceinline__ int af_chunk(int r, int c)
{
    return (c & ~7) | ((c ^ (((r & 1) << 2) | ((r >> 1) & 3))) & 7);
}

/* The rows of a part, padded to 16, for a row bound of max_rows (dsv4_attn_part_lo: at most nr / 8 + 16 a part). */
static int af_part_rows(int max_rows)
{
    return ((max_rows + AM_PARTS - 1) / AM_PARTS + 16 + 15) & ~15;
}

struct af_lay {
    size_t qs, ks, ob, sc, pf, rp, mx, pt, mb, rx, total;
};

/* Shared memory of k_attn_one (16 heads a block): q and the rows (the parts' sums over them after the
 * weighted sum), the scores (16 x (RP + 8) floats), the weights' fragments, the rows' addresses, the part's
 * maxima and sums and the owned heads' factors and denominators, CSA's page table; with rxh owned heads (PUSH)
 * the mbarrier the parts' sums arrive on and every part's weighted sums of those heads. */
__host__ __device__ inline af_lay af_layout(int hd, int RP, int rxh = 0)
{
    af_lay L;
    const size_t st = (size_t)af_stride(hd), qk = (size_t)(16 + RP) * st, ob = (size_t)16 * (hd + 8) * 4;
    L.qs = 0;
    L.ks = (size_t)16 * st;
    L.ob = 0;
    L.sc = qk > ob ? qk : ob;
    L.pf = L.sc + (size_t)16 * (RP + 8) * 4;
    L.rp = L.pf + (size_t)(RP / 16) * 512;
    L.mx = L.rp + (size_t)RP * sizeof(float *);
    L.pt = L.mx + 3 * 64 * sizeof(float);
    L.mb = L.pt + (size_t)AF_PT_MAX * sizeof(int32_t); /* CSA: the slot's page table */
    L.rx = L.mb + 16;
    L.total = rxh ? L.rx + (size_t)AM_PARTS * rxh * hd * sizeof(float) : L.mb;
    return L;
}

template <int HB, int NW = AF_WARPS, bool SP = false, bool PUSH = false>
__global__ void __launch_bounds__(32 * NW)
    k_attn_one(attn_args A, const dsv4_seg *segs, const int32_t *tok_seg, const int64_t *posv,
               const int32_t *page_table, const float *q, const float *kv_new, const int32_t *idx, const int32_t *cnt,
               int RP, float *out)
{
    extern __shared__ __align__(128) unsigned char af_sm[];
    const int hd = A.hd, st = af_stride(hd), SR = RP + 8, KSP = RP >> 4, C16 = hd / 8, NT8 = hd / 8;
    const af_lay L = af_layout(hd, RP, PUSH ? HB / AM_PARTS : 0);
    unsigned char *qs = af_sm + L.qs, *ks = af_sm + L.ks;
    float *ob = (float *)(af_sm + L.ob), *sc = (float *)(af_sm + L.sc);
    uint16_t *pf = (uint16_t *)(af_sm + L.pf);
    const float **rps = (const float **)(af_sm + L.rp);
    /* every part's maxima and sums of the owned heads (HO a part, stored here by each part before the cluster
     * barrier), the owned heads' denominators and factors (dsv4_attn_join) */
    float *omx = (float *)(af_sm + L.mx), *osm = omx + 16, *dn = omx + 32, *cfo = omx + 48;
    static_assert(3 * 16 + 2 * AM_PARTS <= 3 * 64, "k_attn_one: the owned heads' values fit");
    const int t = blockIdx.x, h0 = HB * blockIdx.y, p = blockIdx.z, tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    const int g = lane >> 2, tq = lane & 3, nh = A.H - h0 < HB ? A.H - h0 : HB; /* this block's heads */
    constexpr int HO = HB / AM_PARTS; /* the heads a part owns (HO p ..): their denominators and the parts' sums */
    static_assert(HB == AM_PARTS || HB == 2 * AM_PARTS, "k_attn_one: one or two heads a part");
    /* PUSH: each part sends the maxima, sums and weighted sums of every head to the head's owner by st.async onto
     * the owner's mbarrier (AM_PARTS parts x its valid owned heads x (2 + hd) floats arrive there), and the owners
     * combine from their own shared memory: no cluster barrier between the parts' sums and the join, whose release
     * at cluster scope is a MEMBAR.ALL.GPU (~1,200 cycles at CSA 1 x 4k, s73). The barrier that publishes the
     * mbarrier's init is arrived at here and waited for before the first st.async. */
    const uint32_t mb = (uint32_t)__cvta_generic_to_shared(af_sm + L.mb);
    float *const rx = (float *)(af_sm + L.rx);
    if (PUSH) {
        if (tid == 0) {
            int nvo = 0;
            for (int hs = 0; hs < HO; hs++) nvo += HO * p + hs < nh;
            mbar_open_cluster(mb, (unsigned)(AM_PARTS * nvo * (2 + hd) * (int)sizeof(float)));
        }
        asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    }
#ifdef AF_TRACE
    long long af_tr[24] = {0};
    int af_n = 0;
#endif
    AF_T();
    const dsv4_seg s = segs[tok_seg[t]];
    const int64_t pos = posv[t];
    /* launched right after the kernel that makes q (no k_attn_qpack): before griddepcontrol.wait only what
     * earlier steps wrote - the window's cached rows, where the row count does not need this step's cnt
     * (CSA's comes from its indexer) - then, after it, the step's own rows and q (FP32, rounded to BF16 here
     * as k_attn_qpack does) and the compressed rows (the step's compressors and indexer wrote them) */
    const bool early = A.kind != DSV4_ATTN_CSA;
    int32_t *spt = (int32_t *)(af_sm + L.pt); /* CSA: the slot's page table, before the wait */
    int64_t lo = 0;
    int nwin = 0, nr = 0, r0 = 0, np = 0, np16 = 0;
    /* the part's rows and their addresses (the block's threads in parallel) */
    auto rows_of = [&]() {
        nr = attn_rows(A, pos, t, cnt, lo, nwin);
        r0 = dsv4_attn_part_lo(nr, p), np = dsv4_attn_part_lo(nr, p + 1) - r0, np16 = (np + 15) & ~15;
        for (int r = tid; r < np; r += blockDim.x)
            rps[r] = row_ptr(A, s, pos, t, r0 + r, nwin, lo, kv_new, idx, page_table);
        __syncthreads();
    };
    /* the rows, a warp a row (which 0: the cached window rows, 1: every other row; rows np .. np16 zeros:
     * their weights are 0, their values must be too); the step's own rows rounded from kv_new as k_kv_store
     * caches them */
    auto issue_rows = [&](int which) {
        for (int r = w; r < np16; r += NW) {
            const bool ok = r < np, win = ok && r0 + r < nwin, mine = win && lo + r0 + r >= s.pos0;
            if ((which == 0) != (win && !mine)) continue;
            unsigned char *dst = ks + (size_t)r * st;
            if (mine) {
                const float *src = kv_new + (size_t)(s.t0 + (lo + r0 + r - s.pos0)) * hd;
                for (int c = lane; c < C16; c += 32) *(uint4 *)(dst + 16 * af_chunk(r, c)) = kv_pack8(src + 8 * c);
                continue;
            }
            const uint16_t *src = ok ? (const uint16_t *)rps[r] : (const uint16_t *)kv_new;
            for (int c = lane; c < C16; c += 32) cp_async16_any(dst + 16 * af_chunk(r, c), src + (ok ? 8 * c : 0), ok);
        }
        cp_async_commit();
    };
    /* CSA: the indexer writes cnt[t] = min((pos + 1) / ratio, top-k) (k_idx_topk); with that count predicted,
     * the part's split and its window rows' addresses are known before the wait, and its cached window rows
     * go out then, with the slot's page table into shared memory. After the wait the compressed rows need only
     * idx (their page from shared memory): cnt and idx loaded together, and a count that differs from the
     * prediction (the op's contract takes cnt as given) redoes the part as the generic path does. */
    int pred = -1;
    bool spt_ok = false;
    if (early) {
        rows_of();
        issue_rows(0);
    } else {
        const int64_t ncmp = (pos + 1) / A.ratio, npg = pos / A.page_tokens + 1;
        pred = (int)(ncmp < A.topk ? ncmp : A.topk);
        spt_ok = npg <= AF_PT_MAX;
        if (spt_ok)
            for (int i = tid; i < (int)npg; i += blockDim.x) spt[i] = page_table[(size_t)s.slot * A.max_pages + i];
        lo = pos - A.window + 1 > 0 ? pos - A.window + 1 : 0;
        nwin = (int)(pos - lo + 1);
        nr = nwin + pred;
        r0 = dsv4_attn_part_lo(nr, p), np = dsv4_attn_part_lo(nr, p + 1) - r0, np16 = (np + 15) & ~15;
        for (int r = tid; r < np; r += blockDim.x)
            if (r0 + r < nwin) rps[r] = row_ptr(A, s, pos, t, r0 + r, nwin, lo, kv_new, idx, page_table);
        __syncthreads();
        issue_rows(0);
    }
    /* the de-rotation's angles of the first column pair this thread stores (a thread keeps its pair where
     * the block's threads are a multiple of the pairs a head has) */
    int dc = 2 * (tid % (hd >> 1));
    float dcs = 0.0f, dsn = 0.0f;
    if (A.ofreq) attn_derot_cs(A, pos, dc, dcs, dsn);
    /* the sink of the owned head this thread joins (tid < HO) */
    const float sink = tid < HO && HO * p + tid < nh ? A.sinks[h0 + HO * p + tid] : 0.0f;
    AF_T();
    asm volatile("griddepcontrol.wait;" ::: "memory"); /* q, the step's rows, the indexer's choice */
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    AF_T();
    /* this block's 16 heads of q (FP32; heads past H read head h0's, stored as zeros) into registers now,
     * beside the indexer's loads below, so that their round trips overlap (each a warp's heads w, w + 8,
     * chunks of 8 dimensions lane, lane + 32; hd <= 512, the launch's condition) */
    constexpr int QH = 16 / NW, QC = 512 / 8 / 32;
    float4 qv[QH][QC][2];
#pragma unroll
    for (int a = 0; a < QH; a++)
#pragma unroll
        for (int b = 0; b < QC; b++) {
            const int h = w + NW * a, c = lane + 32 * b;
            const bool ok = h < nh && c < C16;
            const float4 *src = (const float4 *)(q + ((size_t)t * A.H + h0 + (ok ? h : 0)) * hd + (ok ? 8 * c : 0));
            qv[a][b][0] = src[0];
            qv[a][b][1] = src[1];
        }
    if (!early) {
        const int c = cnt[t];
        int32_t ci[(AF_MAX_ROWS + 32 * NW - 1) / (32 * NW)];
#pragma unroll
        for (int k = 0; k < (AF_MAX_ROWS + 32 * NW - 1) / (32 * NW); k++) { /* every idx load with cnt's */
            const int r = tid + 32 * NW * k, j = r0 + r - nwin;
            ci[k] = r < np && j >= 0 ? idx[(size_t)t * A.topk + j] : 0;
        }
        if (c == pred) {
#pragma unroll
            for (int k = 0; k < (AF_MAX_ROWS + 32 * NW - 1) / (32 * NW); k++) {
                const int r = tid + 32 * NW * k;
                if (r < np && r0 + r >= nwin)
                    rps[r] = spt_ok ? cmp_row((float *)A.pages, spt, 0, A.page_tokens, A.page_floats, A.pg_off, 0,
                                              ci[k], A.ratio, A.rf)
                                    : cmp_row((float *)A.pages, page_table, A.max_pages, A.page_tokens, A.page_floats,
                                              A.pg_off, s.slot, ci[k], A.ratio, A.rf);
            }
            __syncthreads();
        } else { /* the split with the real count: the rows issued under the prediction land first */
            cp_async_wait<0>();
            __syncthreads();
            rows_of();
            issue_rows(0);
        }
    }
    AF_T();
    issue_rows(1);
    AF_T();
#pragma unroll
    for (int a = 0; a < QH; a++) /* q as BF16 (past H: zeros) */
#pragma unroll
        for (int b = 0; b < QC; b++) {
            const int h = w + NW * a, c = lane + 32 * b;
            if (c >= C16) continue;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (h < nh) {
                const uint2 x = bf4_rn(qv[a][b][0]), y = bf4_rn(qv[a][b][1]);
                v = make_uint4(x.x, x.y, y.x, y.y);
            }
            *(uint4 *)(qs + (size_t)h * st + 16 * af_chunk(h, c)) = v;
        }
    AF_T();
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    AF_T();
    cg::cluster_group cl = cg::this_cluster();
    /* the scores (k_attn_qk's MMA chain and permutation of K): warp w the 8-row tiles w, w + 8, ..., two at
     * a time (a tile past the part's: zeros, never stored) */
    /* SP: the tiles in pairs (i, i + P), P = half the tiles (np16 is a multiple of 16: T8 is even), a warp a pair,
     * so that each warp's q fragments serve two tiles (without it the warps past the pairs load them for one tile
     * and read its rows twice: 32 16-byte loads a step where 8 warps take CSA's 10 tiles, 20 with it) */
    const int T8 = np16 >> 3, P2 = T8 >> 1, off = SP ? P2 : NW;
    for (int i0 = w; SP ? i0 < P2 : 8 * i0 < np16; i0 += SP ? NW : 2 * NW) {
        float acc[2][4];
#pragma unroll
        for (int n = 0; n < 2; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
        const bool v1 = SP ? i0 + P2 < T8 : 8 * (i0 + NW) < np16;
        const int ra = 8 * i0 + g, rb = v1 ? 8 * (i0 + off) + g : ra;
#pragma unroll 4
        for (int d0 = 0; d0 < hd; d0 += 32) {
            const int c = d0 / 8 + tq;
            const uint4 a = *(const uint4 *)(qs + g * st + 16 * af_chunk(g, c));
            const uint4 b8 = *(const uint4 *)(qs + (g + 8) * st + 16 * af_chunk(g + 8, c));
            const uint4 k0 = *(const uint4 *)(ks + ra * st + 16 * af_chunk(ra, c));
            const uint4 k1 = *(const uint4 *)(ks + rb * st + 16 * af_chunk(rb, c));
            mma_bf16(acc[0], a.x, b8.x, a.y, b8.y, k0.x, k0.y);
            mma_bf16(acc[0], a.z, b8.z, a.w, b8.w, k0.z, k0.w);
            mma_bf16(acc[1], a.x, b8.x, a.y, b8.y, k1.x, k1.y);
            mma_bf16(acc[1], a.z, b8.z, a.w, b8.w, k1.z, k1.w);
        }
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int h = g + 8 * (e >> 1), j = 8 * (i0 + n * off) + 2 * tq + (e & 1);
                if (j < np && (n == 0 || v1)) sc[h * SR + j] = acc[n][e] * A.scale;
            }
    }
    __syncthreads();
    AF_T();
    /* each head's part max and sum and the part's weights as A fragments (k_attn_md16's order: a warp a head;
     * rows past np and heads past the block's zeros), the scores read unconditionally (SR > np16); the max and
     * sum to the head's owner (part h / HO), whose join reads them after the cluster barrier (PUSH: its mbarrier) */
    if (PUSH) asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); /* every block's mbarrier initialised */
    for (int h = w; h < 16; h += NW) {
        float mx = -INFINITY, l = 0.0f; /* an empty part's: dsv4_attn_join's c = 0 */
        if (h < nh && np > 0) {
            const float *sh = sc + h * SR;
            const auto pair = [&](int j) { return *(const float2 *)(sh + j); };
            const auto put = [&](int j, float e0, float e1) {
                *(uint32_t *)(pf + am_frag(0, 1, KSP, h, j)) = bf2_rn(e0, e1);
            };
            mx = am_part_max(0, np, pair);
            l = am_part_sum(0, np, mx, pair, put);
        } else {
            for (int j = 2 * lane; j < np16; j += 64) *(uint32_t *)(pf + am_frag(0, 1, KSP, h, j)) = 0u;
        }
        if (lane == 0 && h < nh) {
            const int ho = h / HO, hs = h % HO;
            if (PUSH) {
                const uint32_t rb = cl_mapa(mb, (uint32_t)ho);
                st_async_f32(cl_mapa((uint32_t)__cvta_generic_to_shared(omx + p * HO + hs), (uint32_t)ho), mx, rb);
                st_async_f32(cl_mapa((uint32_t)__cvta_generic_to_shared(osm + p * HO + hs), (uint32_t)ho), l, rb);
            } else {
                cl.map_shared_rank(omx, ho)[p * HO + hs] = mx;
                cl.map_shared_rank(osm, ho)[p * HO + hs] = l;
            }
        }
    }
    __syncthreads();
    AF_T();
    /* the part's weighted sum (k_attn_pv's chain: 16-row steps in order): warp w the 8-dimension tiles
     * w, w + 8, ... (a tile past the head's reads tile 0 and is never stored) */
    constexpr int PU = 512 / 8 / NW; /* the 8-dimension tiles a warp takes (hd <= 512) */
    float acc[PU][4];
#pragma unroll
    for (int u = 0; u < PU; u++) acc[u][0] = acc[u][1] = acc[u][2] = acc[u][3] = 0.0f;
    for (int k = 0; k < np16 >> 4; k++) {
        const uint4 a = ((const uint4 *)pf)[k * 32 + lane];
        const int r = 16 * k + (lane & 15);
        uint32_t b[PU][2];
#pragma unroll
        for (int u = 0; u < PU; u++) {
            const int n = w + NW * u;
            ldsm_x2_trans(b[u][0], b[u][1], ks + r * st + 16 * af_chunk(r, n < NT8 ? n : 0));
        }
#pragma unroll
        for (int u = 0; u < PU; u++) mma_bf16(acc[u], a.x, a.y, a.z, a.w, b[u][0], b[u][1]);
    }
    if (!PUSH) __syncthreads(); /* every warp is done with q and the rows: the sums go over them (ob) */
    AF_T();
    /* each fragment's pair (head g or g + 8, columns 8 n + 2 tq ..): into ob, or (PUSH) to the head's owner - rx there,
     * part p's sums of the owned head hs at p * HO + hs - after which every part's pairs of the owned heads (and
     * their maxima and sums) have landed here once the mbarrier's phase completes */
#pragma unroll
    for (int u = 0; u < PU; u++) {
        const int n = w + NW * u;
        if (n < NT8)
#pragma unroll
            for (int e = 0; e < 4; e += 2) {
                const int h = g + 8 * (e >> 1);
                if (!PUSH) {
                    *(float2 *)(ob + h * (hd + 8) + 8 * n + 2 * tq) = make_float2(acc[u][e], acc[u][e + 1]);
                } else if (h < nh) {
                    const uint32_t o = (uint32_t)(h / HO), hs = (uint32_t)(h % HO);
                    const float *dst = rx + (size_t)(p * HO + hs) * hd + 8 * n + 2 * tq;
                    st_async_f2(cl_mapa((uint32_t)__cvta_generic_to_shared(dst), o), acc[u][e], acc[u][e + 1],
                                cl_mapa(mb, o));
                }
            }
    }
    if (PUSH)
        mbar_wait_cluster(mb, 0);
    else
        cl.sync(); /* every part's sums, maxima and weighted sums */
    AF_T();
    if (tid < HO && HO * p + tid < nh) { /* the owned heads' join (dsv4_attn_join) */
        float m[AM_PARTS], l[AM_PARTS], c[AM_PARTS];
#pragma unroll
        for (int q = 0; q < AM_PARTS; q++) m[q] = omx[q * HO + tid], l[q] = osm[q * HO + tid];
        dn[tid] = dsv4_attn_join(m, l, sink, c);
#pragma unroll
        for (int q = 0; q < AM_PARTS; q++) cfo[tid * AM_PARTS + q] = c[q];
    }
    __syncthreads();
    AF_T();
    /* this part's HO heads: the parts' sums joined in part order, divided, de-rotated (column pairs); two pairs'
     * loads in flight together */
    const int npair = HO * (hd >> 1);
    for (int e0 = tid; e0 < npair; e0 += 2 * blockDim.x) {
        float2 r[2][AM_PARTS];
#pragma unroll
        for (int u = 0; u < 2; u++) {
            const int e = e0 + u * blockDim.x, hi = e / (hd >> 1), hl = HO * p + hi, c = 2 * (e % (hd >> 1));
            if (e < npair && hl < nh)
#pragma unroll
                for (int q = 0; q < AM_PARTS; q++)
                    r[u][q] = PUSH ? *(const float2 *)(rx + (size_t)(q * HO + hi) * hd + c)
                                   : *(const float2 *)(cl.map_shared_rank(ob, q) + hl * (hd + 8) + c);
        }
#pragma unroll
        for (int u = 0; u < 2; u++) {
            const int e = e0 + u * blockDim.x, hi = e / (hd >> 1), hl = HO * p + hi, c = 2 * (e % (hd >> 1));
            if (e >= npair || hl >= nh) continue;
            float2 v = make_float2(0.0f, 0.0f); /* dsv4_attn_join's order */
#pragma unroll
            for (int q = 0; q < AM_PARTS; q++) {
                const float cq = cfo[hi * AM_PARTS + q];
                v.x = __fmaf_rn(cq, r[u][q].x, v.x);
                v.y = __fmaf_rn(cq, r[u][q].y, v.y);
            }
            const float d = dn[hi];
            float v0 = v.x / d, v1 = v.y / d;
            if (A.ofreq) {
                if (c != dc) dc = c, attn_derot_cs(A, pos, c, dcs, dsn);
                attn_derot2(A, c, dcs, dsn, v0, v1);
            }
            *(float2 *)(out + ((size_t)t * A.H + h0 + hl) * hd + c) = make_float2(v0, v1);
        }
    }
    AF_T();
    cluster_reads_done(); /* every part's shared memory stays until all have read it (each read value stored) */
#ifdef AF_TRACE
    AF_T();
    if (tid == 0 && t == 0 && blockIdx.y == 0) {
        long long d[16];
        for (int i = 0; i < 16; i++) d[i] = i + 1 < af_n ? af_tr[i + 1] - af_tr[i] : 0ll;
        printf("aftrace kind %d nr %d p %d np %d cyc %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld "
               "%lld %lld %lld\n",
               A.kind, nr, p, np, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12],
               d[13], d[14], d[15]);
    }
#endif
}

static int attn_layout = -1; /* DSV4_ATTN_*; -1: from the environment at the first call */
extern "C" void dsv4_cuda_attn_layout(int layout) { attn_layout = layout; }

/* The tuned choices (engine/tune.h): only ones that give the same bits. */
static dsv4_tune attn_tune;
static bool attn_tune_set;
extern "C" void dsv4_cuda_tune_set(const dsv4_tune *t)
{
    if (t) attn_tune = *t;
    else dsv4_tune_default(&attn_tune);
    attn_tune_set = true;
}
extern "C" void dsv4_cuda_tune_get(dsv4_tune *t)
{
    if (!attn_tune_set) dsv4_cuda_tune_set(NULL);
    *t = attn_tune;
}

/* A launch with a cluster of grid.z blocks along z (cluster) and/or
 * programmatic dependent launch (the kernel waits with griddepcontrol.wait
 * for its predecessor's results): cuda_launch with the arguments as typed. */
template <typename... P>
static void launch_attn(void (*kern)(P...), dim3 grid, int threads, size_t smem, cudaStream_t st, bool cluster,
                        bool pdl, P... args)
{
    cuda_launch(kern, grid, dim3((unsigned)threads), smem, st, cluster ? grid.z : 0u, pdl, args...);
}

/* k_attn_one's dynamic shared memory at most, and whether its clusters fit on this GPU with that much
 * (cuda_attn_init) */
static size_t af_smem_max;
static bool af_fits, af16_fits; /* with AF_WARPS warps a block, and with 16 */
/* k_attn_one's instances, [4 * SP + 2 * (16 warps) + (8 heads a block)], then with SP the parts' sums sent
 * by st.async (PUSH), [8 + 2 * (16 warps) + (8 heads a block)] */
static void (*const af_kern[])(attn_args, const dsv4_seg *, const int32_t *, const int64_t *, const int32_t *,
                               const float *, const float *, const int32_t *, const int32_t *, int, float *) = {
    k_attn_one<16>,          k_attn_one<8>,          k_attn_one<16, 16>,       k_attn_one<8, 16>,
    k_attn_one<16, 8, 1>,    k_attn_one<8, 8, 1>,    k_attn_one<16, 16, 1>,    k_attn_one<8, 16, 1>,
    k_attn_one<16, 8, 1, 1>, k_attn_one<8, 8, 1, 1>, k_attn_one<16, 16, 1, 1>, k_attn_one<8, 16, 1, 1>};

/* More than 48 KB of dynamic shared memory for the tensor-core scores and k_attn_one (cuda_kernels_init). */
void cuda_attn_init(size_t smem_optin)
{
    {
        size_t st = 0;
        for (auto k : af_kern) {
            cudaFuncAttributes fa;
            CK(cudaFuncGetAttributes(&fa, k));
            if (fa.sharedSizeBytes > st) st = fa.sharedSizeBytes;
        }
        af_smem_max = smem_optin > st ? smem_optin - st : 0;
        for (auto k : af_kern)
            CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)af_smem_max));
        af_fits = cuda_cluster_fits(k_attn_one<16>, 32 * AF_WARPS, af_smem_max, AM_PARTS);
        af16_fits = cuda_cluster_fits(k_attn_one<16, 16>, 32 * 16, af_smem_max, AM_PARTS);
    }
    CK(cudaFuncSetAttribute(k_attn_pvw<1, PW1_KT, PW1_S>, cudaFuncAttributeMaxDynamicSharedMemorySize, PW_SMEM_MAX));
    CK(cudaFuncSetAttribute(k_attn_pvw<2, PW2_KT, PW2_S>, cudaFuncAttributeMaxDynamicSharedMemorySize, PW_SMEM_MAX));
    CK(cudaFuncSetAttribute(k_attn_qk<1, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)am_qk_smem(1, HS_MAXD, false)));
    CK(cudaFuncSetAttribute(k_attn_qk<4, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)am_qk_smem(4, HS_MAXD, false)));
    CK(cudaFuncSetAttribute(k_attn_qk<1, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)am_qk_smem(1, HS_MAXD, true)));
    CK(cudaFuncSetAttribute(k_attn_qk<4, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)am_qk_smem(4, HS_MAXD, true)));
}

/* The step's n rows as BF16 (attn_args.kvb) for the layouts other than the tensor cores' (whose q pack does it). */
static void attn_kvpack(dsv4_backend *be, const float *kv_new, size_t n, int hd, int rf, uint16_t *kvb)
{
    const size_t nk = n * (size_t)hd;
    if (!nk) return;
    launch_pdl(k_attn_kvpack, dim3((unsigned)((nk + 255) / 256)), dim3(256), 0, impl_of(be)->stream, kv_new, nk, hd, rf,
               kvb);
    CK_LAUNCH();
}

/* The layout: DSV4_ATTN_* from the environment at the first call, or as dsv4_cuda_attn_layout set it. */
static int attn_layout_now(void)
{
    if (attn_layout < 0) {
        const char *e = getenv("DSV4_ATTN"), *n = getenv("DSV4_ATTN_NAIVE");
        attn_layout = (n && n[0] == '1') || (e && !strcmp(e, "naive")) ? DSV4_ATTN_LAYOUT_NAIVE
                      : e && !strcmp(e, "fp32")                        ? DSV4_ATTN_LAYOUT_FP32
                                                                       : DSV4_ATTN_LAYOUT_AUTO;
    }
    return attn_layout;
}

/* CS_ROWS for nt tokens of up to max_rows rows each. The heads together: the rows' addresses, scores,
 * denominators, the parts' factors (reference numerics: dsv4_attn_join's), then with mma q's pack (from qb) and
 * the weights' (from pb), all 16-byte multiples; a head at a time: addresses and scores. Then (kb) the step's rows
 * as BF16 where the cached rows are (rf floats a token). */
struct rows_layout {
    size_t qb, pb, kb, total;
};
static rows_layout rows_layout_of(bool heads, size_t nt, int H, int hd, int max_rows, bool mma, bool bf16, int rf)
{
    rows_layout r = {0, 0, 0, 0};
    if (heads) {
        r.qb =
            (nt * max_rows * sizeof(float *) + nt * H * (max_rows + 1 + AM_PARTS) * sizeof(float) + 15) & ~(size_t)15;
        r.pb = r.qb + (mma ? nt * H * hd * sizeof(uint16_t) : 0);
        r.kb = r.pb + (mma ? nt * (size_t)((H + 15) & ~15) * max_rows * sizeof(uint16_t) : 0);
    } else
        r.kb = nt * H * max_rows * (sizeof(float) + sizeof(float *));
    r.total = r.kb + (bf16 ? nt * rf * sizeof(float) : 0);
    return r;
}

static bool heads_together(int layout, int H, int hd)
{
    return layout != DSV4_ATTN_LAYOUT_NAIVE && hd <= HS_MAXD && H <= HS_HEADS;
}

/* What attn_run takes from CS_ROWS at most for n_tok tokens at positions below max_ctx (a graph's bound): the
 * tensor cores' packs and BF16 rows counted whether or not they come. */
size_t cuda_attn_work_bytes(const dsv4_attn_params *p, int n_tok, int64_t max_ctx)
{
    int64_t rows = p->window;
    if (p->kind == DSV4_ATTN_CSA) rows += p->topk;
    if (p->kind == DSV4_ATTN_HCA && p->ratio > 0) rows += max_ctx / p->ratio;
    const bool heads = heads_together(attn_layout_now(), p->n_heads, p->head_dim);
    if (heads) rows = (rows + 15) & ~(int64_t)15;
    return rows_layout_of(heads, (size_t)n_tok, p->n_heads, p->head_dim, (int)rows, true, true,
                          dsv4_row_floats(p->head_dim, true))
        .total;
}

/* The attention; true when the output was de-rotated too (p->out_freqs, in the tensor-core kernels). */
static bool attn_run(dsv4_backend *be, const dsv4_attn_params *p, const dsv4_plan *plan, const dsv4_kv *kv,
                     const float *q, const float *kv_new, const int32_t *idx, const int32_t *cnt, float *out)
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
    A.bf16 = kv->bf16_rows;
    A.rf = dsv4_row_floats(p->head_dim, A.bf16);
    A.kvb = NULL;
    A.ofreq = NULL;
    A.orope = p->out_rope;
    A.ornd = p->out_rnd;
    const int H = p->n_heads, hd = p->head_dim;
    if (heads_together(attn_layout_now(), H, hd)) {
        const bool mma = (attn_layout == DSV4_ATTN_LAYOUT_AUTO || attn_layout == DSV4_ATTN_LAYOUT_PARTS) &&
                         p->reference && hd % 32 == 0 &&
                         ((uintptr_t)q & 15) == 0;
        if (mma) A.max_rows = max_rows = (max_rows + 15) & ~15; /* k_attn_pv loads weights 16-byte aligned */
        /* the de-rotation in k_attn_pv's stores: a rotated pair is two adjacent columns there
         * (DSV4_ATTN_DEROT=0: the rope kernel after it, the same bits) */
        static int derot = -1;
        if (derot < 0) derot = cuda_env_on("DSV4_ATTN_DEROT");
        if (mma && derot && p->out_freqs && p->out_rope > 0 && p->out_rope <= hd && (hd - p->out_rope) % 2 == 0)
            A.ofreq = p->out_freqs;
        const size_t nt = (size_t)plan->n_tok;
        const rows_layout rl = rows_layout_of(true, nt, H, hd, max_rows, mma, A.bf16, A.rf);
        char *sp = (char *)cuda_scratch(be, CS_ROWS, rl.total);
        uint16_t *kvb = A.bf16 ? (uint16_t *)(sp + rl.kb) : NULL;
        A.kvb = (const float *)kvb;
        const float **hrows = (const float **)sp;
        float *hsc = (float *)(sp + nt * max_rows * sizeof(float *));
        float *hden = hsc + nt * H * max_rows, *hcf = hden + nt * H;
        const int64_t *dpos = im->d_pos;
        const float *csc = hsc, *cden = hden, *ccf = hcf;
        if (mma) {
            if (!attn_tune_set) dsv4_cuda_tune_set(NULL);
            const dsv4_attn_choice *ch = dsv4_tune_pick(&attn_tune, (int)nt);
            const bool small = ch->score_rows == 16;
            const size_t smem = am_qk_smem(small ? 1 : 4, hd, A.bf16);
            const int rt = small ? 16 : 64;
            /* one pass over the rows where a part has at most AF_MAX_ROWS of them (v46 measured HCA 128k's 160
             * slower than the four kernels; s67, with v47-v69's kernel, faster: AF_MAX_ROWS); it rounds q and the
             * step's rows to BF16 itself (no k_attn_qpack; heads of up to 512 dimensions) */
            const int RP = af_part_rows(max_rows);
            const size_t osm = af_layout(hd, RP).total;
            const bool one = ch->sum == DSV4_SUM_ONE || ch->sum == DSV4_SUM_ONE8;
            static int one_rows = -1;
            if (one_rows < 0) {
                one_rows = cuda_env_int("DSV4_ATTN_ONE_ROWS", AF_MAX_ROWS);
                if (one_rows > AF_MAX_ROWS) one_rows = AF_MAX_ROWS;
            }
            if (one && A.bf16 && af_fits && hd <= 512 && RP <= one_rows && osm <= af_smem_max &&
                ((uintptr_t)kv_new & 15) == 0) {
                /* one8: 8 heads a block (a part owns one head) - HCA at 4k 6.85 against 7.54 us alone, 32k 8.25
                 * against 8.95 (bench/results/2026-12-03-s49/one8/). CSA's 96-row parts (4k on) measured slower
                 * alone (12.31 against 11.30: back-to-back calls overlapping themselves) but faster in decode
                 * steps (1 x 4k 1.458 against 1.464 ms, 128k 1.523 against 1.529; bench/results/2026-12-04-s51/
                 * next/), so every part size. DSV4_ATTN_ONE8_ROWS=N: 16 heads past N rows (a measurement's knob) */
                static int one8_rows = -1;
                if (one8_rows < 0) one8_rows = cuda_env_int("DSV4_ATTN_ONE8_ROWS", AF_MAX_ROWS);
                const int hb = ch->sum == DSV4_SUM_ONE8 && RP <= one8_rows ? 8 : 16;
                /* 16 warps a block (the same sums, in the same order, over more warps) from 2 tokens, or where a
                 * part may hold 96 rows (CSA; HCA past ~50k): at one token CSA 1 x 4k 10.28-10.32 against
                 * 10.45-10.47 us with 8, HCA 128k 12.0-12.2 against 13.1-13.2, but HCA 4k 7.28-7.32 against
                 * 6.86-6.90; from 2 tokens 2-13 % faster (bench/results/2026-12-06-s70/one/, an H100).
                 * DSV4_ATTN_ONE_WARPS=8 / 16 takes one everywhere (measurement knobs) */
                static int one_warps = -1;
                if (one_warps < 0) {
                    one_warps = cuda_env_int("DSV4_ATTN_ONE_WARPS", 0);
                    if (one_warps != 8 && one_warps != 16) one_warps = 0;
                }
                const int nw = af16_fits && (one_warps ? one_warps == 16 : nt >= 2 || RP >= 96) ? 16 : AF_WARPS;
                /* the score tiles paired as (i, i + half) (k_attn_one's SP): 0-3 % faster with 8 warps at every shape
                 * one/ timed, part of the gain with 16; DSV4_ATTN_ONE_SP=0 the tiles as they come (a knob) */
                static int one_sp = -1;
                if (one_sp < 0) one_sp = cuda_env_on("DSV4_ATTN_ONE_SP");
                /* at one token, where a part may hold 96 rows (CSA; HCA from ~64k), with the paired tiles: the parts'
                 * sums to their heads' owners by st.async (the same values, no cluster barrier and its MEMBAR.ALL.GPU
                 * between them): CSA 1 x 4k 9.71-9.80 against 10.34-10.36 us, HCA 128k 11.40-11.46 against
                 * 12.18-12.39, but 2-3 tokens +1.5-4.9 % and HCA 4k +2.9 % (bench/results/2026-12-06-s73/ps/, an
                 * H100); where its shared memory fits (every part's sums of the owned heads, 16-32 KB more).
                 * DSV4_ATTN_ONE_ASYNC=0: never, =2: wherever it fits (measurement knobs) */
                static int one_async = -1;
                if (one_async < 0) {
                    const char *e = getenv("DSV4_ATTN_ONE_ASYNC");
                    one_async = e ? atoi(e) : 1;
                }
                const size_t psm = af_layout(hd, RP, hb / AM_PARTS).total;
                const bool push =
                    one_sp && psm <= af_smem_max && (one_async == 2 || (one_async == 1 && nt == 1 && RP >= 96));
                launch_attn(af_kern[(push ? 8 : 4 * one_sp) + 2 * (nw == 16) + (hb == 8)],
                            dim3((unsigned)nt, (unsigned)((H + hb - 1) / hb), AM_PARTS), 32 * nw, push ? psm : osm,
                            im->stream, true, true, A, (const dsv4_seg *)im->d_segs, (const int32_t *)im->d_tok_seg,
                            dpos, (const int32_t *)im->d_page_table, q, kv_new, idx, cnt, RP, out);
                return A.ofreq != NULL;
            }
            uint16_t *qb = (uint16_t *)(sp + rl.qb);
            const size_t n8 = nt * H * hd / 8, nk = A.bf16 ? nt * hd : 0;
            launch_pdl(k_attn_qpack, dim3((unsigned)((n8 + nk + 255) / 256)), dim3(256), 0, im->stream,
                       (const float4 *)q, n8, (uint4 *)qb, kv_new, nk, hd, A.rf, kvb);
            /* the chain qpack -> qk -> md -> pv with programmatic dependent launch:
             * each kernel's prologue (row counts, row addresses, the first rows)
             * overlaps its predecessor; qpack waits for everything before */
            launch_attn(small ? (A.bf16 ? k_attn_qk<1, true> : k_attn_qk<1, false>)
                              : (A.bf16 ? k_attn_qk<4, true> : k_attn_qk<4, false>),
                        dim3((unsigned)nt, (unsigned)((max_rows + rt - 1) / rt)), 256, smem, im->stream, false, true, A,
                        (const dsv4_seg *)im->d_segs, (const int32_t *)im->d_tok_seg, dpos,
                        (const int32_t *)im->d_page_table, (const uint16_t *)qb, kv_new, idx, cnt, hsc, hrows);
            uint16_t *pb = (uint16_t *)(sp + rl.pb);
            /* a warp a part (k_attn_mdp) where few tokens have many rows: to 4 tokens, past the 64 MD_NV rows
             * k_attn_md16 holds in registers at once (DSV4_ATTN_MDP=0: never; the same bits) */
            static int mdp = -1;
            if (mdp < 0) mdp = cuda_env_on("DSV4_ATTN_MDP");
            if (mdp && nt <= 4 && max_rows > 64 * MD_NV)
                launch_attn(k_attn_mdp, dim3((unsigned)(nt * H)), 32 * AM_PARTS, 0, im->stream, false, true, A, dpos,
                            cnt, csc, pb, hden, hcf, (int)(nt * H));
            else
                launch_attn(k_attn_md16, dim3((unsigned)((nt * H + 3) / 4)), 128, 0, im->stream, false, true, A, dpos,
                            cnt, csc, pb, hden, hcf, (int)(nt * H));
            /* the tuned layout of the weighted sum (same bits whichever): a cluster of
             * the parts per (token, slice), or with many tokens a block per (token, 32, 64
             * or 128 dimensions) walking the parts itself (the same sums in the same order);
             * its row list in dynamic shared memory beside its static ~11 KB (BF16 rows: ~21, two
             * value tiles) within the 48 KB a block gets without opting in (longer lists, HCA past
             * ~600k tokens of context, ~400k on BF16 rows: the cluster) */
            /* on wgmma (BF16 rows, up to 64 heads: wgmma's M), else the walking block of the same width */
            const int wgs = ch->sum == DSV4_SUM_WG64 ? 64 : ch->sum == DSV4_SUM_WG128 ? 128 : 0;
            const size_t pws = wgs == 64 ? pw_smem(1, PW1_KT, PW1_S, max_rows) : pw_smem(2, PW2_KT, PW2_S, max_rows);
            if (wgs && A.bf16 && H <= 64 && hd % wgs == 0 && attn_layout == DSV4_ATTN_LAYOUT_AUTO &&
                pws <= PW_SMEM_MAX) {
                launch_attn(wgs == 64 ? k_attn_pvw<1, PW1_KT, PW1_S> : k_attn_pvw<2, PW2_KT, PW2_S>,
                            dim3((unsigned)nt, (unsigned)(hd / wgs), 1), 128, pws, im->stream, false, true, A, dpos,
                            cnt, (const uint16_t *)pb, (const float **)hrows, cden, ccf, out);
                return A.ofreq != NULL;
            }
            const int wsl = ch->sum == DSV4_SUM_WALK32                                 ? 32
                            : ch->sum == DSV4_SUM_WALK64 || ch->sum == DSV4_SUM_WG64   ? 64
                            : ch->sum == DSV4_SUM_WALK128 || ch->sum == DSV4_SUM_WG128 ? 128
                                                                                       : 0;
            const bool walk =
                wsl && hd % wsl == 0 && attn_layout == DSV4_ATTN_LAYOUT_AUTO &&
                max_rows * sizeof(float *) <= (A.bf16 ? 26 : 36) * 1024; /* BF16 rows: two value tiles, ~21 KB */
            if (walk) {
                void (*wk)(attn_args, const int64_t *, const int32_t *, const uint16_t *, const float **, const float *,
                           const float *, float *) =
                    wsl == 32   ? (A.bf16 ? k_attn_pv<4, true, true> : k_attn_pv<4, true, false>)
                    : wsl == 64 ? (A.bf16 ? k_attn_pv<8, true, true> : k_attn_pv<8, true, false>)
                                : (A.bf16 ? k_attn_pv<16, true, true> : k_attn_pv<16, true, false>);
                launch_attn(wk, dim3((unsigned)nt, (unsigned)(hd / wsl), 1), 128, max_rows * sizeof(float *),
                            im->stream, false, true, A, dpos, cnt, (const uint16_t *)pb, (const float **)hrows, cden,
                            ccf, out);
                return A.ofreq != NULL;
            }
            const int sl = ch->sum == DSV4_SUM_PARTS16 ? 16 : ch->sum == DSV4_SUM_PARTS64 && hd % 64 == 0 ? 64 : 32;
            void (*pv)(attn_args, const int64_t *, const int32_t *, const uint16_t *, const float **, const float *,
                       const float *, float *) =
                sl == 16   ? (A.bf16 ? k_attn_pv<2, false, true> : k_attn_pv<2, false, false>)
                : sl == 32 ? (A.bf16 ? k_attn_pv<4, false, true> : k_attn_pv<4, false, false>)
                           : (A.bf16 ? k_attn_pv<8, false, true> : k_attn_pv<8, false, false>);
            launch_attn(pv, dim3((unsigned)nt, (unsigned)(hd / sl), AM_PARTS), 128, 0, im->stream, true, true, A, dpos,
                        cnt, (const uint16_t *)pb, (const float **)hrows, cden, ccf, out);
            return A.ofreq != NULL;
        }
        /* small batches: more blocks (a score is the same for any part count,
         * a dimension's weighted sum for any slice width) */
        const int hs_parts = nt <= 2 ? 32 : nt <= 4 ? 16 : AT_PARTS, sl = nt <= 2 ? 16 : nt <= 8 ? 32 : 64;
        if (A.bf16) attn_kvpack(be, kv_new, (size_t)nt, hd, A.rf, kvb);
        k_attn_hs<<<dim3((unsigned)nt, (unsigned)((H + 7) / 8), hs_parts), 256, 0, im->stream>>>(
            A, im->d_segs, im->d_tok_seg, dpos, im->d_page_table, q, kv_new, idx, cnt, hsc, hrows);
        CK_LAUNCH();
        k_attn_md<<<(unsigned)(nt * H), 128, 0, im->stream>>>(A, dpos, cnt, hsc, hden, hcf);
        CK_LAUNCH();
        void (*hpv)(attn_args, const int64_t *, const int32_t *, const float *, const float **, const float *,
                    const float *, float *) = sl == 16   ? k_attn_hpv<16>
                                              : sl == 32 ? k_attn_hpv<32>
                                                         : k_attn_hpv<64>;
        launch_attn(hpv, dim3((unsigned)nt, (unsigned)((hd + sl - 1) / sl), AT_PARTS), 256, 0, im->stream, true, false,
                    A, dpos, cnt, csc, (const float **)hrows, cden, ccf, out);
        return false;
    }
    const size_t nrows = (size_t)plan->n_tok * p->n_heads * max_rows;
    const rows_layout rl = rows_layout_of(false, (size_t)plan->n_tok, p->n_heads, hd, max_rows, false, A.bf16, A.rf);
    char *scr = (char *)cuda_scratch(be, CS_ROWS, rl.total);
    const float **rows = (const float **)scr; /* pointers first: 8-byte aligned */
    float *scores = (float *)(scr + nrows * sizeof(float *));
    if (A.bf16) {
        A.kvb = (const float *)(scr + rl.kb);
        attn_kvpack(be, kv_new, (size_t)plan->n_tok, hd, A.rf, (uint16_t *)(scr + rl.kb));
    }
    k_attn<<<plan->n_tok * p->n_heads, 128, 0, im->stream>>>(A, im->d_segs, im->d_tok_seg, im->d_pos,
                                                             im->d_page_table, q, kv_new, idx, cnt, scores, rows, out);
    CK_LAUNCH();
    return false;
}

void cuda_attn(dsv4_backend *be, const dsv4_attn_params *p, const dsv4_plan *plan, const dsv4_kv *kv, const float *q,
               const float *kv_new, const int32_t *idx, const int32_t *cnt, float *out)
{
    if (!attn_run(be, p, plan, kv, q, kv_new, idx, cnt, out) && p->out_freqs)
        cuda_rope(be, out, plan->n_tok, p->n_heads, p->n_heads * p->head_dim, p->head_dim, p->out_rope, plan->pos,
                  p->out_freqs, true, p->out_rnd);
}

/* ---- dsv4_cuda_attn_time (backend.h), on bench_state.cu's state. */
struct attn_call {
    dsv4_backend *be;
    dsv4_attn_params p;
    bench_step *b;
    const float *q, *kvn;
    const int32_t *idx, *cnt;
    float *out;
};
static void attn_call_run(void *c)
{
    attn_call *a = (attn_call *)c;
    a->be->attn(a->be, &a->p, &a->b->plan, &a->b->kv, a->q, a->kvn, a->idx, a->cnt, a->out);
}

static int attn_bench_fp32_rows;
extern "C" void dsv4_cuda_attn_bench_fp32_rows(int on)
{
    attn_bench_fp32_rows = on;
}

extern "C" double dsv4_cuda_attn_time(dsv4_backend *be, bool csa, int batch, int64_t ctx, bool reference, int reps)
{
    const int H = 64, hd = 512, window = 128, topk = 512, ratio = csa ? 4 : 128;
    const bool bf16 = reference && !attn_bench_fp32_rows; /* the rows the engine caches in these numerics */
    bench_step b;
    if (reps < 1 ||
        !bench_step_init(&b, be, batch, ctx, ratio, hd, (size_t)window * dsv4_row_floats(hd, bf16), false, bf16))
        return -1;
    int32_t *hidx = (int32_t *)calloc((size_t)batch * topk, 4), *hcnt = (int32_t *)calloc((size_t)batch, 4);
    int32_t *didx = (int32_t *)be->alloc(be, (size_t)batch * topk * 4), *dcnt = (int32_t *)be->alloc(be, (size_t)batch * 4);
    float *q = (float *)be->alloc(be, (size_t)batch * H * hd * sizeof(float)),
          *kvn = (float *)be->alloc(be, (size_t)batch * hd * sizeof(float)),
          *out = (float *)be->alloc(be, (size_t)batch * H * hd * sizeof(float)),
          *sinks = (float *)be->alloc(be, H * sizeof(float));
    double us = -1;
    if (hidx && hcnt && didx && dcnt && q && kvn && out && sinks) {
        const int64_t ncmp = ctx / ratio;
        for (int t = 0; t < batch; t++) { /* CSA: distinct rows spread over the context */
            hcnt[t] = (int32_t)(ncmp < topk ? ncmp : topk);
            for (int k = 0; k < topk; k++) hidx[(size_t)t * topk + k] = (int32_t)((int64_t)k * ncmp / topk);
        }
        be->upload(be, didx, hidx, (size_t)batch * topk * 4);
        be->upload(be, dcnt, hcnt, (size_t)batch * 4);
        attn_call a = {be, {.layer = 0, .kind = csa ? DSV4_ATTN_CSA : DSV4_ATTN_HCA, .ratio = ratio, .n_heads = H,
                            .head_dim = hd, .window = window, .topk = topk, .scale = 0.044f, .sinks = sinks,
                            .reference = reference},
                       &b, q, kvn, didx, dcnt, out};
        us = bench_time_calls(be, attn_call_run, &a, reps);
    }
    be->free(be, q), be->free(be, kvn), be->free(be, out), be->free(be, sinks), be->free(be, didx), be->free(be, dcnt);
    free(hidx), free(hcnt);
    bench_step_free(&b, be);
    return us;
}
