/*
 * ep.c - expert parallelism over several backends of one process, with a
 * loopback communicator: the code path of multi-GPU serving, testable on
 * the CPU.
 *
 * The composite implements backend.h by running every op on every rank.
 * Each rank owns its copy of the activations and of the decode state: an
 * allocation is made on every rank, and the composite hands out rank 0's
 * address; an address inside any allocation (the forward pass does pointer
 * arithmetic) is translated to the same offset in rank r's. Addresses that
 * belong to no allocation (host arrays, mmapped weights) pass through.
 *
 * The routed experts are split by id: rank r computes experts
 * [r E / R, (r + 1) E / R) into a per-slot buffer [n k, D] that is zero for
 * the other ranks' slots; the communicator sums the ranks' buffers (each
 * element has one non-zero term, so the sum is exact) and gives every rank
 * the result; each rank then adds each token's slots in ascending expert id
 * (moe_sum). The logits are therefore bit for bit the single rank's.
 * Communication per MoE layer: n k D floats all-reduced.
 *
 * DSV4_EP_CHECK=1 compares every rank's copy on each download (the ranks
 * must stay identical) and aborts naming the first difference.
 *
 * Ranks are CPU backends, or CUDA backends on one GPU (the engine's
 * ep_choose): both can read rank 0's weights. The communicator goes through
 * host memory (download, add, upload), which also orders the ranks' streams.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

#define EP_MAX_RANKS 16

typedef struct {
    char *p0;      /* rank 0's address: what the forward pass holds */
    size_t bytes;
    char *p[EP_MAX_RANKS];
} ep_alloc;

typedef struct {
    int R;
    dsv4_backend *rank[EP_MAX_RANKS];
    ep_alloc *al;  /* sorted by p0 */
    int n_al, cap_al;
    /* per-slot expert outputs, on every rank, and the host buffers of the loopback all-reduce */
    float *slots[EP_MAX_RANKS];
    size_t slots_cap;
    float *host_sum, *host_tmp;
    size_t host_cap;
    int check;
} ep_impl;

static ep_impl *ep_of(dsv4_backend *be) { return (ep_impl *)be->impl; }

/* Rank r's address for p (p itself when it is no allocation of ours). */
static void *tr(ep_impl *m, const void *p, int r)
{
    if (!p || r == 0) return (void *)p;
    const char *c = p;
    int lo = 0, hi = m->n_al - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const ep_alloc *a = &m->al[mid];
        if (c < a->p0) hi = mid - 1;
        else if (c >= a->p0 + (a->bytes ? a->bytes : 1)) lo = mid + 1;
        else return a->p[r] + (c - a->p0);
    }
    return (void *)p;
}
#define T(p) ((__typeof__(p))tr(m, (p), r))

static void *ep_alloc_fn(dsv4_backend *be, size_t bytes)
{
    ep_impl *m = ep_of(be);
    ep_alloc a = {.bytes = bytes};
    for (int r = 0; r < m->R; r++) {
        a.p[r] = m->rank[r]->alloc(m->rank[r], bytes);
        if (!a.p[r]) {
            for (int q = 0; q < r; q++) m->rank[q]->free(m->rank[q], a.p[q]);
            return NULL;
        }
    }
    a.p0 = a.p[0];
    if (m->n_al == m->cap_al) {
        int cap = m->cap_al ? 2 * m->cap_al : 64;
        ep_alloc *n = realloc(m->al, (size_t)cap * sizeof *n);
        if (!n) {
            for (int r = 0; r < m->R; r++) m->rank[r]->free(m->rank[r], a.p[r]);
            return NULL;
        }
        m->al = n;
        m->cap_al = cap;
    }
    int i = m->n_al;
    while (i > 0 && m->al[i - 1].p0 > a.p0) {
        m->al[i] = m->al[i - 1];
        i--;
    }
    m->al[i] = a;
    m->n_al++;
    return a.p0;
}

static void ep_free_fn(dsv4_backend *be, void *p)
{
    ep_impl *m = ep_of(be);
    for (int i = 0; i < m->n_al; i++)
        if (m->al[i].p0 == p) {
            for (int r = 0; r < m->R; r++) m->rank[r]->free(m->rank[r], m->al[i].p[r]);
            memmove(&m->al[i], &m->al[i + 1], (size_t)(m->n_al - i - 1) * sizeof *m->al);
            m->n_al--;
            return;
        }
}

static void ep_upload(dsv4_backend *be, void *dst, const void *src, size_t bytes)
{
    ep_impl *m = ep_of(be);
    for (int r = 0; r < m->R; r++) m->rank[r]->upload(m->rank[r], T(dst), src, bytes);
}

static void ep_download(dsv4_backend *be, void *dst, const void *src, size_t bytes)
{
    ep_impl *m = ep_of(be);
    m->rank[0]->download(m->rank[0], dst, src, bytes);
    if (!m->check) return;
    char *other = malloc(bytes);
    if (!other) return;
    for (int r = 1; r < m->R; r++) {
        m->rank[r]->download(m->rank[r], other, T(src), bytes);
        if (memcmp(dst, other, bytes)) {
            size_t i = 0;
            while (((char *)dst)[i] == other[i]) i++;
            fprintf(stderr, "dsv4: expert-parallel ranks 0 and %d differ at byte %zu of a %zu-byte read\n", r, i,
                    bytes);
            abort();
        }
    }
    free(other);
}

static void ep_copy(dsv4_backend *be, void *dst, const void *src, size_t bytes)
{
    ep_impl *m = ep_of(be);
    for (int r = 0; r < m->R; r++) m->rank[r]->copy(m->rank[r], T(dst), T(src), bytes);
}

/* Weights: every rank reads rank 0's - the host's on the CPU (weight_load
 * only makes FP32 copies of small vectors), GPU 0's memory when the ranks
 * are CUDA backends on that one GPU. Ranks on different GPUs would need a
 * copy each. */
static dsv4_status ep_weight_load(dsv4_backend *be, dsv4_w *w, char *err, size_t errlen)
{
    return ep_of(be)->rank[0]->weight_load(ep_of(be)->rank[0], w, err, errlen);
}

/* The state as rank r addresses it. */
static dsv4_kv kv_of(ep_impl *m, const dsv4_kv *kv, int r)
{
    dsv4_kv k = *kv;
    k.slots = T(kv->slots);
    k.pages = T(kv->pages);
    return k;
}

static void ep_step_begin(dsv4_backend *be, const dsv4_plan *plan, const dsv4_kv *kv)
{
    ep_impl *m = ep_of(be);
    for (int r = 0; r < m->R; r++) {
        m->rank[r]->act_quant = be->act_quant; /* the engine sets it on the composite */
        dsv4_kv k = kv_of(m, kv, r);
        m->rank[r]->step_begin(m->rank[r], plan, &k);
    }
}

static void ep_prof_mark(dsv4_backend *be, int family)
{
    ep_impl *m = ep_of(be);
    if (m->rank[0]->prof_mark) m->rank[0]->prof_mark(m->rank[0], family);
}

static void ep_prof_collect(dsv4_backend *be, double *ms)
{
    ep_impl *m = ep_of(be);
    if (m->rank[0]->prof_collect) m->rank[0]->prof_collect(m->rank[0], ms);
}

/* ---- replicated ops: every rank, its own addresses ---------------------- */

#define EACH for (int r = 0; r < m->R; r++)
#define RB m->rank[r]

static void ep_embed(dsv4_backend *be, const dsv4_w *emb, const int32_t *tok, int n, float *out)
{
    ep_impl *m = ep_of(be);
    EACH RB->embed(RB, emb, tok, n, T(out));
}

static void ep_linear(dsv4_backend *be, const dsv4_w *w, const float *x, int ldx, int n, float *y, int ldy)
{
    ep_impl *m = ep_of(be);
    EACH RB->linear(RB, w, T(x), ldx, n, T(y), ldy);
}

static void ep_rmsnorm(dsv4_backend *be, const float *x, const float *w, int rows, int dim, int ld, float eps,
                       float *y)
{
    ep_impl *m = ep_of(be);
    EACH RB->rmsnorm(RB, T(x), T(w), rows, dim, ld, eps, T(y));
}

static void ep_rmsnorm_bf16(dsv4_backend *be, float *x, int rows, int dim)
{
    ep_impl *m = ep_of(be);
    EACH RB->rmsnorm_bf16(RB, T(x), rows, dim);
}

static void ep_rope(dsv4_backend *be, float *x, int n_tok, int n_heads, int ld_tok, int head_dim, int rope_dim,
                    const int64_t *pos, const float *freqs, bool inverse)
{
    ep_impl *m = ep_of(be);
    EACH RB->rope(RB, T(x), n_tok, n_heads, ld_tok, head_dim, rope_dim, pos, T(freqs), inverse);
}

static void ep_round_bf16(dsv4_backend *be, float *x, size_t n)
{
    ep_impl *m = ep_of(be);
    EACH RB->round_bf16(RB, T(x), n);
}

static void ep_kv_sim(dsv4_backend *be, float *x, int rows, int ld, int nope)
{
    ep_impl *m = ep_of(be);
    EACH RB->kv_sim(RB, T(x), rows, ld, nope);
}

static void ep_idx_sim(dsv4_backend *be, float *x, int rows, int dim)
{
    ep_impl *m = ep_of(be);
    EACH RB->idx_sim(RB, T(x), rows, dim);
}

static void ep_add(dsv4_backend *be, const float *a, const float *b, size_t n, float *y)
{
    ep_impl *m = ep_of(be);
    EACH RB->add(RB, T(a), T(b), n, T(y));
}

static dsv4_hc_params hc_of(ep_impl *m, const dsv4_hc_params *p, int r)
{
    dsv4_hc_params q = *p;
    q.fn = T(p->fn);
    q.base = T(p->base);
    q.scale = T(p->scale);
    return q;
}

static void ep_hc_pre(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u, float *post,
                      float *comb)
{
    ep_impl *m = ep_of(be);
    EACH {
        dsv4_hc_params q = hc_of(m, p, r);
        RB->hc_pre(RB, &q, T(X), n, T(u), T(post), T(comb));
    }
}

static void ep_hc_post(dsv4_backend *be, int hc, int dim, const float *o, const float *post, const float *comb, int n,
                       float *X)
{
    ep_impl *m = ep_of(be);
    EACH RB->hc_post(RB, hc, dim, T(o), T(post), T(comb), n, T(X));
}

static void ep_hc_head(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u)
{
    ep_impl *m = ep_of(be);
    EACH {
        dsv4_hc_params q = hc_of(m, p, r);
        RB->hc_head(RB, &q, T(X), n, T(u));
    }
}

static void ep_compress(dsv4_backend *be, const dsv4_compress_params *p, const dsv4_plan *plan, dsv4_kv *kv,
                        const float *a, const float *g)
{
    ep_impl *m = ep_of(be);
    EACH {
        dsv4_compress_params q = *p;
        q.ape = T(p->ape);
        q.norm = T(p->norm);
        q.freqs = T(p->freqs);
        dsv4_kv k = kv_of(m, kv, r);
        RB->compress(RB, &q, plan, &k, T(a), T(g));
    }
}

static void ep_indexer_topk(dsv4_backend *be, const dsv4_indexer_params *p, const dsv4_plan *plan,
                            const dsv4_kv *kv, const float *q, const float *w, int32_t *idx, int32_t *cnt)
{
    ep_impl *m = ep_of(be);
    EACH {
        dsv4_kv k = kv_of(m, kv, r);
        RB->indexer_topk(RB, p, plan, &k, T(q), T(w), T(idx), T(cnt));
    }
}

static void ep_attn(dsv4_backend *be, const dsv4_attn_params *p, const dsv4_plan *plan, const dsv4_kv *kv,
                    const float *q, const float *kv_new, const int32_t *idx, const int32_t *cnt, float *out)
{
    ep_impl *m = ep_of(be);
    EACH {
        dsv4_attn_params a = *p;
        a.sinks = T(p->sinks);
        dsv4_kv k = kv_of(m, kv, r);
        RB->attn(RB, &a, plan, &k, T(q), T(kv_new), T(idx), T(cnt), T(out));
    }
}

static void ep_kv_store(dsv4_backend *be, int layer, int window, int head_dim, const dsv4_plan *plan, dsv4_kv *kv,
                        const float *kv_new)
{
    ep_impl *m = ep_of(be);
    EACH {
        dsv4_kv k = kv_of(m, kv, r);
        RB->kv_store(RB, layer, window, head_dim, plan, &k, T(kv_new));
    }
}

static void ep_moe_route(dsv4_backend *be, const float *logits, int n, int n_experts, int k, const float *bias,
                         const dsv4_w *tid2eid, const int32_t *tokens, bool renorm, float route_scale, int32_t *idx,
                         float *wts)
{
    ep_impl *m = ep_of(be);
    EACH RB->moe_route(RB, T(logits), n, n_experts, k, T(bias), tid2eid, tokens, renorm, route_scale, T(idx), T(wts));
}

static void ep_swiglu(dsv4_backend *be, const float *g, const float *u, size_t n, float limit, float *mm)
{
    ep_impl *m = ep_of(be);
    EACH RB->swiglu(RB, T(g), T(u), n, limit, T(mm));
}

/* ---- the split op ------------------------------------------------------- */

/* The host buffers of the loopback, grown to n floats (never shrunk). */
static void host_bufs(ep_impl *m, size_t n)
{
    if (m->host_cap >= n) return;
    free(m->host_sum);
    free(m->host_tmp);
    m->host_sum = malloc(n * sizeof(float));
    m->host_tmp = malloc(n * sizeof(float));
    if (!m->host_sum || !m->host_tmp) {
        fprintf(stderr, "dsv4: out of memory in the expert-parallel all-reduce\n");
        abort();
    }
    m->host_cap = n;
}

/* The loopback all-reduce: every rank's buf [n] becomes the sum over ranks,
 * added in rank order. */
static void loopback_allreduce(ep_impl *m, float **buf, size_t n)
{
    host_bufs(m, n);
    m->rank[0]->download(m->rank[0], m->host_sum, buf[0], n * sizeof(float));
    for (int r = 1; r < m->R; r++) {
        m->rank[r]->download(m->rank[r], m->host_tmp, buf[r], n * sizeof(float));
        for (size_t i = 0; i < n; i++) m->host_sum[i] += m->host_tmp[i];
    }
    for (int r = 0; r < m->R; r++) m->rank[r]->upload(m->rank[r], buf[r], m->host_sum, n * sizeof(float));
}

static void ep_moe_experts(dsv4_backend *be, const dsv4_moe_params *p, const float *x, int n, const int32_t *idx,
                           const float *wts, float *out)
{
    ep_impl *m = ep_of(be);
    const size_t need = (size_t)n * p->k * p->dim;
    if (m->slots_cap < need) {
        for (int r = 0; r < m->R; r++) {
            if (m->slots[r]) m->rank[r]->free(m->rank[r], m->slots[r]);
            m->slots[r] = m->rank[r]->alloc(m->rank[r], need * sizeof(float));
            if (!m->slots[r]) {
                fprintf(stderr, "dsv4: out of memory for the expert-parallel slot buffers\n");
                abort();
            }
        }
        m->slots_cap = need;
    }
    EACH {
        dsv4_moe_params q = *p;
        q.expert_lo = (int)((int64_t)r * p->n_experts / m->R);
        q.expert_hi = (int)((int64_t)(r + 1) * p->n_experts / m->R);
        q.slot_out = m->slots[r];
        if (q.expert_hi > q.expert_lo) RB->moe_experts(RB, &q, T(x), n, T(idx), T(wts), T(out));
        else { /* more ranks than experts: this one contributes zeros */
            host_bufs(m, need);
            memset(m->host_tmp, 0, need * sizeof(float));
            RB->upload(RB, m->slots[r], m->host_tmp, need * sizeof(float));
        }
    }
    if (be->prof_mark) be->prof_mark(be, DSV4_PROF_COMM);
    loopback_allreduce(m, m->slots, need);
    if (be->prof_mark) be->prof_mark(be, DSV4_PROF_ROUTED);
    EACH RB->moe_sum(RB, m->slots[r], T(idx), n, p->k, p->dim, T(out));
}

/* ---- lifetime ------------------------------------------------------------ */

static void ep_destroy(dsv4_backend *be)
{
    if (!be) return;
    ep_impl *m = ep_of(be);
    for (int r = 0; r < m->R; r++) {
        if (m->slots[r]) m->rank[r]->free(m->rank[r], m->slots[r]);
        for (int i = 0; i < m->n_al; i++) m->rank[r]->free(m->rank[r], m->al[i].p[r]);
        m->rank[r]->destroy(m->rank[r]);
    }
    free(m->al);
    free(m->host_sum);
    free(m->host_tmp);
    free(m);
    free(be);
}

dsv4_backend *dsv4_backend_ep_create(dsv4_backend **ranks, int n_ranks, char *err, size_t errlen)
{
    if (n_ranks < 1 || n_ranks > EP_MAX_RANKS) {
        snprintf(err, errlen, "expert parallelism over %d ranks: 1 to %d are supported", n_ranks, EP_MAX_RANKS);
        return NULL;
    }
    for (int r = 0; r < n_ranks; r++)
        if (!ranks[r]->moe_sum) {
            snprintf(err, errlen, "expert parallelism: the %s backend cannot split its experts (no moe_sum)",
                     ranks[r]->name);
            return NULL;
        }
    dsv4_backend *be = calloc(1, sizeof *be);
    ep_impl *m = calloc(1, sizeof *m);
    if (!be || !m) {
        free(be);
        free(m);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    m->R = n_ranks;
    for (int r = 0; r < n_ranks; r++) m->rank[r] = ranks[r];
    const char *chk = getenv("DSV4_EP_CHECK");
    m->check = chk && chk[0] == '1';
    be->name = ranks[0]->name;
    snprintf(be->device, sizeof be->device, "%d x %.80s (expert parallel, loopback)", n_ranks, ranks[0]->device);
    be->sm = ranks[0]->sm;
    be->impl = m;
    be->destroy = ep_destroy;
    be->weight_load = ep_weight_load;
    be->step_begin = ep_step_begin;
    be->prof_mark = ranks[0]->prof_mark ? ep_prof_mark : NULL;
    be->prof_collect = ranks[0]->prof_collect ? ep_prof_collect : NULL;
    be->alloc = ep_alloc_fn;
    be->free = ep_free_fn;
    be->upload = ep_upload;
    be->download = ep_download;
    be->copy = ep_copy;
    be->embed = ep_embed;
    be->linear = ep_linear;
    be->rmsnorm = ep_rmsnorm;
    be->rmsnorm_bf16 = ep_rmsnorm_bf16;
    be->rope = ep_rope;
    be->round_bf16 = ep_round_bf16;
    be->kv_sim = ep_kv_sim;
    be->idx_sim = ep_idx_sim;
    be->add = ep_add;
    be->hc_pre = ep_hc_pre;
    be->hc_post = ep_hc_post;
    be->hc_head = ep_hc_head;
    be->compress = ep_compress;
    be->indexer_topk = ep_indexer_topk;
    be->attn = ep_attn;
    be->kv_store = ep_kv_store;
    be->moe_route = ep_moe_route;
    be->moe_experts = ep_moe_experts;
    be->swiglu = ep_swiglu;
    return be;
}
