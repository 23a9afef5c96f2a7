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
 * Weights: CPU ranks all read the host's (weight_load only makes FP32
 * copies of small vectors). Device ranks (sm > 0) each load their own copy
 * of every weight but the routed experts, and of the experts only their
 * own: rank 0's copy is the bound weight itself, rank r's copies are
 * registered beside it like allocations, so the same translation finds
 * them, and each expert array has one per-rank twin.
 *
 * The all-reduce is the dsv4_comm given at creation (NCCL across GPUs), or
 * the loopback through host memory (download, add, upload), which also
 * orders the ranks' streams. One thread drives every rank: each rank's
 * calls are preceded by its bind (its GPU made current) and are
 * asynchronous, so ranks on different GPUs run side by side.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

#define EP_MAX_RANKS 16

typedef struct {
    char *p0;      /* rank 0's address: what the forward pass holds */
    size_t bytes;
    char *p[EP_MAX_RANKS];
    bool weight;   /* a weight's device copies: rank 0's belongs to the weight, ranks 1.. to us */
} ep_alloc;

/* One expert array of a layer (w1, w3 or w2) and each rank's twin. */
typedef struct {
    const dsv4_w *a0; /* the bound array: rank 0's */
    dsv4_w *a[EP_MAX_RANKS];
} ep_experts;

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
    dsv4_comm *comm; /* NULL: the loopback */
    bool own;        /* device ranks: each has its own weights */
    int E;           /* routed experts per layer */
    ep_experts *ex;
    int n_ex;
    bool profiling;  /* a profile mark was made since the last collect: the collective gets its own span */
    /* decode graphs (every rank a device backend with graph pieces): each rank's graph of a step is cut at each
     * all-reduce, which runs between two pieces at every step, outside any graph */
    float *zeros[EP_MAX_RANKS]; /* slots_cap zeros on ranks with no experts (copied in, capturable) */
    unsigned gen;               /* bumped when the slot buffers move: graphs captured before are stale */
    int gstate, gkey;           /* what ep_graph_begin answered, for which key */
    struct ep_graph {
        unsigned gen;
        int n_cut, cap_cut;
        size_t *need; /* each cut's all-reduce, in order */
    } * g;
    int n_g;
} ep_impl;

static ep_impl *ep_of(dsv4_backend *be) { return (ep_impl *)be->impl; }

/* Make rank r's device current before its calls. */
static void bind(ep_impl *m, int r)
{
    if (m->rank[r]->bind) m->rank[r]->bind(m->rank[r]);
}

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

/* Keep al sorted by p0. */
static bool al_insert(ep_impl *m, const ep_alloc *a)
{
    if (m->n_al == m->cap_al) {
        int cap = m->cap_al ? 2 * m->cap_al : 64;
        ep_alloc *n = realloc(m->al, (size_t)cap * sizeof *n);
        if (!n) return false;
        m->al = n;
        m->cap_al = cap;
    }
    int i = m->n_al;
    while (i > 0 && m->al[i - 1].p0 > a->p0) {
        m->al[i] = m->al[i - 1];
        i--;
    }
    m->al[i] = *a;
    m->n_al++;
    return true;
}

static void *ep_alloc_fn(dsv4_backend *be, size_t bytes)
{
    ep_impl *m = ep_of(be);
    ep_alloc a = {.bytes = bytes};
    for (int r = 0; r < m->R; r++) {
        bind(m, r);
        a.p[r] = m->rank[r]->alloc(m->rank[r], bytes);
        if (!a.p[r]) {
            for (int q = 0; q < r; q++) {
                bind(m, q);
                m->rank[q]->free(m->rank[q], a.p[q]);
            }
            return NULL;
        }
    }
    a.p0 = a.p[0];
    if (!al_insert(m, &a)) {
        for (int r = 0; r < m->R; r++) {
            bind(m, r);
            m->rank[r]->free(m->rank[r], a.p[r]);
        }
        return NULL;
    }
    return a.p0;
}

static void ep_free_fn(dsv4_backend *be, void *p)
{
    ep_impl *m = ep_of(be);
    for (int i = 0; i < m->n_al; i++)
        if (m->al[i].p0 == p && !m->al[i].weight) {
            for (int r = 0; r < m->R; r++) {
                bind(m, r);
                m->rank[r]->free(m->rank[r], m->al[i].p[r]);
            }
            memmove(&m->al[i], &m->al[i + 1], (size_t)(m->n_al - i - 1) * sizeof *m->al);
            m->n_al--;
            return;
        }
}

static void ep_upload(dsv4_backend *be, void *dst, const void *src, size_t bytes)
{
    ep_impl *m = ep_of(be);
    for (int r = 0; r < m->R; r++) {
        bind(m, r);
        m->rank[r]->upload(m->rank[r], T(dst), src, bytes);
    }
}

static void ep_download(dsv4_backend *be, void *dst, const void *src, size_t bytes)
{
    ep_impl *m = ep_of(be);
    bind(m, 0);
    m->rank[0]->download(m->rank[0], dst, src, bytes);
    if (!m->check) return;
    char *other = malloc(bytes);
    if (!other) return;
    for (int r = 1; r < m->R; r++) {
        bind(m, r);
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
    for (int r = 0; r < m->R; r++) {
        bind(m, r);
        m->rank[r]->copy(m->rank[r], T(dst), T(src), bytes);
    }
}

static void ep_copy_rows(dsv4_backend *be, void *dst, size_t dpitch, const void *src, size_t spitch, size_t row_bytes,
                         size_t rows)
{
    ep_impl *m = ep_of(be);
    for (int r = 0; r < m->R; r++) {
        bind(m, r);
        m->rank[r]->copy_rows(m->rank[r], T(dst), dpitch, T(src), spitch, row_bytes, rows);
    }
}

/* ---- weights ------------------------------------------------------------ */

/* The rank whose id range holds expert e. */
static int owner(const ep_impl *m, int e)
{
    for (int r = 0; r < m->R; r++)
        if (e < (int)((int64_t)(r + 1) * m->E / m->R)) return r;
    return m->R - 1;
}

/* The expert array w points into (and its index), or NULL. */
static ep_experts *expert_of(ep_impl *m, const dsv4_w *w, int *e)
{
    for (int i = 0; i < m->n_ex; i++)
        if (w >= m->ex[i].a0 && w < m->ex[i].a0 + m->E) {
            *e = (int)(w - m->ex[i].a0);
            return &m->ex[i];
        }
    return NULL;
}

/* Rank r's copy of an expert array. */
static const dsv4_w *experts_tr(ep_impl *m, const dsv4_w *a0, int r)
{
    if (r == 0 || !m->own) return a0;
    for (int i = 0; i < m->n_ex; i++)
        if (m->ex[i].a0 == a0) return m->ex[i].a[r];
    fprintf(stderr, "dsv4: expert parallelism: an expert array that was not bound at creation\n");
    abort();
}

/* Bytes of what weight_load put at w->dev: an FP32 copy for small vectors, else the stored elements. */
static size_t dev_bytes(const dsv4_w *w)
{
    return w->f32 ? (size_t)w->ne[0] * (size_t)w->ne[1] * sizeof(float) : (size_t)dsv4_w_elem_bytes(w);
}

/* Register rank 0's buffer p0 and the ranks' copies cp[r] of it. */
static dsv4_status reg_copy(ep_impl *m, const void *p0, void *const *cp, size_t bytes)
{
    if (!p0) return DSV4_OK;
    ep_alloc a = {.p0 = (char *)p0, .bytes = bytes, .weight = true};
    a.p[0] = (char *)p0;
    for (int r = 1; r < m->R; r++) a.p[r] = cp[r];
    return al_insert(m, &a) ? DSV4_OK : DSV4_ERR_NOMEM;
}

static dsv4_status ep_weight_load(dsv4_backend *be, dsv4_w *w, char *err, size_t errlen)
{
    ep_impl *m = ep_of(be);
    if (!m->own) { /* CPU ranks: the host's weights serve every rank */
        bind(m, 0);
        return m->rank[0]->weight_load(m->rank[0], w, err, errlen);
    }
    int e;
    ep_experts *x = expert_of(m, w, &e);
    if (x) { /* only its owner loads an expert */
        const int o = owner(m, e);
        bind(m, o);
        return m->rank[o]->weight_load(m->rank[o], o ? &x->a[o][e] : w, err, errlen);
    }
    bind(m, 0);
    dsv4_status st = m->rank[0]->weight_load(m->rank[0], w, err, errlen);
    if (st != DSV4_OK) return st;
    void *dev[EP_MAX_RANKS] = {0}, *sc[EP_MAX_RANKS] = {0}, *vec[EP_MAX_RANKS] = {0};
    for (int r = 1; r < m->R; r++) {
        dsv4_w c = *w;
        c.dev = c.dev_scale = NULL;
        c.vec = NULL;
        bind(m, r);
        if ((st = m->rank[r]->weight_load(m->rank[r], &c, err, errlen)) != DSV4_OK) return st;
        dev[r] = c.dev;
        sc[r] = c.dev_scale;
        vec[r] = (void *)c.vec;
    }
    if (reg_copy(m, w->dev, dev, dev_bytes(w)) != DSV4_OK ||
        reg_copy(m, w->dev_scale, sc, (size_t)dsv4_w_scale_bytes(w)) != DSV4_OK ||
        (w->vec != w->dev && reg_copy(m, w->vec, vec, (size_t)w->ne[0] * (size_t)w->ne[1] * sizeof(float)))) {
        snprintf(err, errlen, "%s: out of memory registering the ranks' copies", w->name);
        return DSV4_ERR_NOMEM;
    }
    return DSV4_OK;
}

/* w as rank r reads it: its own copies of the buffers (a view keeps its rows). */
static const dsv4_w *tw(ep_impl *m, const dsv4_w *w, int r, dsv4_w *tmp)
{
    if (!w || r == 0 || !m->own) return w;
    *tmp = *w;
    tmp->dev = tr(m, w->dev, r);
    tmp->dev_scale = tr(m, w->dev_scale, r);
    tmp->vec = tr(m, w->vec, r);
    return tmp;
}
#define TW(w) tw(m, (w), r, &wtmp)

/* The state as rank r addresses it. */
static dsv4_kv kv_of(ep_impl *m, const dsv4_kv *kv, int r)
{
    dsv4_kv k = *kv;
    k.slots = T(kv->slots);
    k.pages = T(kv->pages);
    return k;
}

/* lt_check: every rank's (each runs the replicated linears) */
static bool ep_lt_check(dsv4_backend *be, char *err, size_t errlen)
{
    ep_impl *m = ep_of(be);
    for (int r = 0; r < m->R; r++) {
        if (!m->rank[r]->lt_check) {
            snprintf(err, errlen, "rank %d's %s backend has no cuBLASLt path", r, m->rank[r]->name);
            return false;
        }
        bind(m, r);
        if (!m->rank[r]->lt_check(m->rank[r], err, errlen)) return false;
    }
    return true;
}

static void ep_step_begin(dsv4_backend *be, const dsv4_plan *plan, const dsv4_kv *kv)
{
    ep_impl *m = ep_of(be);
    for (int r = 0; r < m->R; r++) {
        bind(m, r);
        m->rank[r]->act_quant = be->act_quant; /* the engine sets these on the composite */
        m->rank[r]->moe_a8 = be->moe_a8;
        m->rank[r]->lt_prefill = be->lt_prefill;
        dsv4_kv k = kv_of(m, kv, r);
        m->rank[r]->step_begin(m->rank[r], plan, &k);
    }
}

static void ep_prof_mark(dsv4_backend *be, int family)
{
    ep_impl *m = ep_of(be);
    bind(m, 0);
    m->profiling = true;
    if (m->rank[0]->prof_mark) m->rank[0]->prof_mark(m->rank[0], family);
}

static void ep_prof_collect(dsv4_backend *be, double *ms)
{
    ep_impl *m = ep_of(be);
    bind(m, 0);
    m->profiling = false;
    if (m->rank[0]->prof_collect) m->rank[0]->prof_collect(m->rank[0], ms);
}

/* ---- replicated ops: every rank, its own addresses ---------------------- */

#define EACH for (int r = 0; r < m->R && (bind(m, r), 1); r++)
#define RB m->rank[r]

static void ep_embed(dsv4_backend *be, const dsv4_w *emb, const int32_t *tok, int n, float *out)
{
    ep_impl *m = ep_of(be);
    dsv4_w wtmp;
    EACH RB->embed(RB, TW(emb), tok, n, T(out));
}

static void ep_linear(dsv4_backend *be, const dsv4_w *w, const float *x, int ldx, int n, float *y, int ldy)
{
    ep_impl *m = ep_of(be);
    dsv4_w wtmp;
    EACH RB->linear(RB, TW(w), T(x), ldx, n, T(y), ldy);
}

static void ep_linear_groups(dsv4_backend *be, const dsv4_w *w, int G, const float *x, int ldx, size_t xg, int n,
                             float *y, int ldy, size_t yg)
{
    ep_impl *m = ep_of(be);
    dsv4_w wtmp;
    EACH RB->linear_groups(RB, TW(w), G, T(x), ldx, xg, n, T(y), ldy, yg);
}

#define EP_MULTI 16
static void ep_linear_multi(dsv4_backend *be, int mw, const dsv4_w *const *w, const float *x, int ldx, int n,
                            float *const *y, const int *ldy)
{
    ep_impl *m = ep_of(be);
    if (mw > EP_MULTI) { /* more than one call holds: the first EP_MULTI, then the rest */
        ep_linear_multi(be, EP_MULTI, w, x, ldx, n, y, ldy);
        ep_linear_multi(be, mw - EP_MULTI, w + EP_MULTI, x, ldx, n, y + EP_MULTI, ldy + EP_MULTI);
        return;
    }
    dsv4_w tmp[EP_MULTI];
    const dsv4_w *rw[EP_MULTI];
    float *ry[EP_MULTI];
    EACH {
        for (int i = 0; i < mw; i++) {
            rw[i] = tw(m, w[i], r, &tmp[i]);
            ry[i] = T(y[i]);
        }
        RB->linear_multi(RB, mw, rw, T(x), ldx, n, ry, ldy);
    }
}

static void ep_rmsnorm(dsv4_backend *be, const float *x, const float *w, int rows, int dim, int ld, float eps,
                       float *y, unsigned rnd)
{
    ep_impl *m = ep_of(be);
    EACH RB->rmsnorm(RB, T(x), T(w), rows, dim, ld, eps, T(y), rnd);
}

static void ep_rmsnorm_bf16(dsv4_backend *be, float *x, int rows, int dim)
{
    ep_impl *m = ep_of(be);
    EACH RB->rmsnorm_bf16(RB, T(x), rows, dim);
}

static void ep_rope(dsv4_backend *be, float *x, int n_tok, int n_heads, int ld_tok, int head_dim, int rope_dim,
                    const int64_t *pos, const float *freqs, bool inverse, unsigned rnd)
{
    ep_impl *m = ep_of(be);
    EACH RB->rope(RB, T(x), n_tok, n_heads, ld_tok, head_dim, rope_dim, pos, T(freqs), inverse, rnd);
}

static void ep_fill(dsv4_backend *be, float *x, size_t n, uint64_t seed)
{
    ep_impl *m = ep_of(be);
    EACH RB->fill(RB, T(x), n, seed);
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

static void ep_norm_rope(dsv4_backend *be, float *x, int n_tok, int n_heads, int head_dim, const float *w, float eps,
                         unsigned nrnd, bool bf16, int rope_dim, const int64_t *pos, const float *freqs, unsigned rrnd,
                         int sim_nope)
{
    ep_impl *m = ep_of(be);
    EACH RB->norm_rope(RB, T(x), n_tok, n_heads, head_dim, T(w), eps, nrnd, bf16, rope_dim, pos, T(freqs), rrnd,
                       sim_nope);
}

static void ep_idx_sim(dsv4_backend *be, float *x, int rows, int dim)
{
    ep_impl *m = ep_of(be);
    EACH RB->idx_sim(RB, T(x), rows, dim);
}

static dsv4_hc_params hc_of(ep_impl *m, const dsv4_hc_params *p, int r)
{
    dsv4_hc_params q = *p;
    q.fn = T(p->fn);
    q.base = T(p->base);
    q.scale = T(p->scale);
    q.then_w = T(p->then_w);
    q.then_y = T(p->then_y);
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

static void ep_hc_post(dsv4_backend *be, int hc, int dim, const float *o, const float *o2, const float *post,
                       const float *comb, int n, float *X, unsigned rnd)
{
    ep_impl *m = ep_of(be);
    EACH RB->hc_post(RB, hc, dim, T(o), T(o2), T(post), T(comb), n, T(X), rnd);
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
        a.out_freqs = T(p->out_freqs);
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
    dsv4_w wtmp;
    EACH RB->moe_route(RB, T(logits), n, n_experts, k, T(bias), TW(tid2eid), tokens, renorm, route_scale, T(idx),
                       T(wts));
}

static void ep_swiglu(dsv4_backend *be, const float *g, const float *u, size_t n, float limit, float *mm,
                      unsigned rnd)
{
    ep_impl *m = ep_of(be);
    EACH RB->swiglu(RB, T(g), T(u), n, limit, T(mm), rnd);
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
    bind(m, 0);
    m->rank[0]->download(m->rank[0], m->host_sum, buf[0], n * sizeof(float));
    for (int r = 1; r < m->R; r++) {
        bind(m, r);
        m->rank[r]->download(m->rank[r], m->host_tmp, buf[r], n * sizeof(float));
        for (size_t i = 0; i < n; i++) m->host_sum[i] += m->host_tmp[i];
    }
    EACH RB->upload(RB, buf[r], m->host_sum, n * sizeof(float));
}

/* The ranks' slot buffers [n] summed (each element has one non-zero term: exact), every rank given the sum. */
static void allreduce(ep_impl *m, size_t n)
{
    if (m->comm)
        m->comm->allreduce(m->comm, m->slots, n);
    else
        loopback_allreduce(m, m->slots, n);
}

/* p as rank r runs it: its share of the experts, its copies of their weights. */
static dsv4_moe_params rank_moe(ep_impl *m, const dsv4_moe_params *p, int r)
{
    dsv4_moe_params q = *p;
    q.expert_lo = (int)((int64_t)r * p->n_experts / m->R);
    q.expert_hi = (int)((int64_t)(r + 1) * p->n_experts / m->R);
    q.w1 = experts_tr(m, p->w1, r);
    q.w3 = experts_tr(m, p->w3, r);
    q.w2 = experts_tr(m, p->w2, r);
    return q;
}

static void ep_moe_experts(dsv4_backend *be, const dsv4_moe_params *p, const float *x, int n, const int32_t *idx,
                           const float *wts, float *out)
{
    ep_impl *m = ep_of(be);
    const size_t need = (size_t)n * p->k * p->dim;
    if (m->slots_cap < need) {
        if (m->gstate == 1) { /* the step before a capture sized them */
            fprintf(stderr, "dsv4: the expert-parallel slot buffers grew inside a graph capture\n");
            abort();
        }
        m->gen++;
        EACH {
            if (m->slots[r]) m->rank[r]->free(m->rank[r], m->slots[r]);
            if (m->zeros[r]) m->rank[r]->free(m->rank[r], m->zeros[r]);
            m->zeros[r] = NULL;
            m->slots[r] = m->rank[r]->alloc(m->rank[r], need * sizeof(float));
            if (!m->slots[r]) {
                fprintf(stderr, "dsv4: out of memory for the expert-parallel slot buffers\n");
                abort();
            }
            const dsv4_moe_params q = rank_moe(m, p, r);
            if (q.expert_hi == q.expert_lo) { /* more ranks than experts: this one contributes zeros */
                if (!(m->zeros[r] = m->rank[r]->alloc(m->rank[r], need * sizeof(float)))) {
                    fprintf(stderr, "dsv4: out of memory for the expert-parallel slot buffers\n");
                    abort();
                }
                host_bufs(m, need);
                memset(m->host_tmp, 0, need * sizeof(float));
                RB->upload(RB, m->zeros[r], m->host_tmp, need * sizeof(float));
            }
        }
        m->slots_cap = need;
    }
    EACH {
        dsv4_moe_params q = rank_moe(m, p, r);
        q.slot_out = m->slots[r];
        if (q.expert_hi > q.expert_lo) RB->moe_experts(RB, &q, T(x), n, T(idx), T(wts), T(out));
        else
            RB->copy(RB, m->slots[r], m->zeros[r], need * sizeof(float));
    }
    const bool prof = m->profiling; /* only inside a profiled step (never in a capture) */
    if (prof) be->prof_mark(be, DSV4_PROF_COMM);
    if (m->gstate == 1) { /* captured: the piece so far closes (and runs), the all-reduce runs outside it */
        struct ep_graph *g = &m->g[m->gkey];
        if (g->n_cut == g->cap_cut) {
            const int cap = g->cap_cut ? 2 * g->cap_cut : 64;
            size_t *nn = realloc(g->need, (size_t)cap * sizeof *nn);
            if (!nn) {
                fprintf(stderr, "dsv4: out of memory in an expert-parallel decode graph\n");
                abort();
            }
            g->need = nn;
            g->cap_cut = cap;
        }
        g->need[g->n_cut++] = need;
        EACH RB->graph_piece(RB, 0);
    }
    allreduce(m, need);
    if (m->gstate == 1) EACH RB->graph_piece(RB, 1);
    if (prof) be->prof_mark(be, DSV4_PROF_ROUTED);
    EACH RB->moe_sum(RB, m->slots[r], T(idx), n, p->k, p->dim, T(out));
}

/* Each rank's table for its experts, as ep_moe_experts will pass them. */
static void ep_moe_prepare(dsv4_backend *be, const dsv4_moe_params *p)
{
    ep_impl *m = ep_of(be);
    EACH {
        const dsv4_moe_params q = rank_moe(m, p, r);
        if (q.expert_hi > q.expert_lo && RB->moe_prepare) RB->moe_prepare(RB, &q);
    }
}

/* ---- decode graphs -------------------------------------------------------- */

/* Every rank answers the same: a key that any rank would capture again (its scratch moved), or whose slot
 * buffers moved (gen), is captured again on every rank. Whether a key was seen is the same on every rank (the
 * forward pass begins every key on all of them). */
static int ep_graph_begin(dsv4_backend *be, int key)
{
    ep_impl *m = ep_of(be);
    m->gstate = 0;
    m->gkey = key;
    int st[EP_MAX_RANKS];
    bool replay = key >= 1 && key < m->n_g && m->g[key].gen == m->gen;
    EACH
    {
        st[r] = RB->graph_peek(RB, key);
        replay = replay && st[r] == 2;
    }
    if (!replay) EACH if (st[r] == 2) RB->graph_drop(RB, key);
    int ans = -1;
    EACH
    {
        const int a = RB->graph_begin(RB, key);
        if (ans >= 0 && a != ans) {
            fprintf(stderr, "dsv4: expert-parallel ranks disagree on a decode graph (%d against %d)\n", a, ans);
            abort();
        }
        ans = a;
    }
    if (ans == 1) {
        if (key >= m->n_g) {
            const int n = key + 1;
            struct ep_graph *g = realloc(m->g, (size_t)n * sizeof *g);
            if (!g) {
                fprintf(stderr, "dsv4: out of memory in an expert-parallel decode graph\n");
                abort();
            }
            memset(g + m->n_g, 0, (size_t)(n - m->n_g) * sizeof *g);
            m->g = g;
            m->n_g = n;
        }
        m->g[key].n_cut = 0;
        m->g[key].gen = m->gen;
    }
    return m->gstate = ans;
}

/* A replay runs each rank's pieces with the all-reduces between them, as the capture cut them. */
static void ep_graph_end(dsv4_backend *be, int key)
{
    ep_impl *m = ep_of(be);
    if (m->gstate == 2 && key == m->gkey) {
        const struct ep_graph *g = &m->g[key];
        for (int i = 0; i < g->n_cut; i++) {
            EACH RB->graph_piece(RB, 0);
            allreduce(m, g->need[i]);
        }
    }
    EACH RB->graph_end(RB, key);
    m->gstate = 0;
}

/* ---- sampling ----------------------------------------------------------- */

/* The logits are rank 0's (every rank holds the same). */
static void ep_sample(dsv4_backend *be, const float *logits, int V, int n, const int *rows, const dsv4_sample_req *req,
                      int32_t *tok)
{
    ep_impl *m = ep_of(be);
    bind(m, 0);
    m->rank[0]->sample(m->rank[0], logits, V, n, rows, req, tok);
}

/* ---- lifetime ------------------------------------------------------------ */

static void ep_destroy(dsv4_backend *be)
{
    if (!be) return;
    ep_impl *m = ep_of(be);
    if (m->comm) m->comm->destroy(m->comm);
    for (int r = 0; r < m->R; r++) {
        bind(m, r);
        dsv4_backend *b = m->rank[r];
        if (m->slots[r]) b->free(b, m->slots[r]);
        if (m->zeros[r]) b->free(b, m->zeros[r]);
        /* activations on every rank; of the weights' copies only ranks 1.. are ours */
        for (int i = 0; i < m->n_al; i++)
            if (!m->al[i].weight || r > 0) b->free(b, m->al[i].p[r]);
        for (int i = 0; r > 0 && i < m->n_ex; i++) {
            for (int e = 0; m->ex[i].a[r] && e < m->E; e++) {
                if (m->ex[i].a[r][e].dev) b->free(b, m->ex[i].a[r][e].dev);
                if (m->ex[i].a[r][e].dev_scale) b->free(b, m->ex[i].a[r][e].dev_scale);
            }
            free(m->ex[i].a[r]);
        }
        b->destroy(b);
    }
    for (int k = 0; k < m->n_g; k++) free(m->g[k].need);
    free(m->g);
    free(m->ex);
    free(m->al);
    free(m->host_sum);
    free(m->host_tmp);
    free(m);
    free(be);
}

/* Device backends: the free memory of the rank with the least, each GPU's
 * shared among the ranks on it (every rank holds the whole state). */
static int64_t ep_mem_free(dsv4_backend *be)
{
    ep_impl *m = ep_of(be);
    int64_t best = INT64_MAX;
    EACH {
        int share = 0;
        for (int q = 0; q < m->R; q++) share += m->rank[q]->ordinal == RB->ordinal;
        const int64_t f = RB->mem_free(RB) / share;
        if (f < best) best = f;
    }
    return best;
}

static dsv4_status ep_work_reserve(dsv4_backend *be, const dsv4_attn_params *ap, const dsv4_indexer_params *ip,
                                   int n_tok, int64_t max_ctx)
{
    ep_impl *m = ep_of(be);
    EACH
    {
        const dsv4_status st = RB->work_reserve(RB, ap, ip, n_tok, max_ctx);
        if (st != DSV4_OK) return st;
    }
    return DSV4_OK;
}

/* Each rank's twin of every expert array of w (device ranks only). */
static bool bind_experts(ep_impl *m, const dsv4_weights *w)
{
    const int nl = w->n_layers; /* not the MTP block's: never loaded (dsv4_weights_foreach_run) */
    m->ex = calloc((size_t)3 * (nl ? nl : 1), sizeof *m->ex);
    if (!m->ex) return false;
    for (int l = 0; l < nl; l++) {
        const dsv4_layer_w *L = &w->layers[l];
        const dsv4_w *arr[3] = {L->exp_w1, L->exp_w3, L->exp_w2};
        for (int j = 0; j < 3; j++) {
            if (!arr[j]) continue;
            ep_experts *x = &m->ex[m->n_ex++];
            x->a0 = arr[j];
            for (int r = 1; r < m->R; r++) {
                if (!(x->a[r] = malloc((size_t)m->E * sizeof(dsv4_w)))) return false;
                memcpy(x->a[r], arr[j], (size_t)m->E * sizeof(dsv4_w));
                for (int e = 0; e < m->E; e++) {
                    x->a[r][e].dev = x->a[r][e].dev_scale = NULL;
                    x->a[r][e].vec = NULL;
                }
            }
        }
    }
    return true;
}

dsv4_backend *dsv4_backend_ep_create(dsv4_backend **ranks, int n_ranks, dsv4_comm *comm, const dsv4_weights *w,
                                     char *err, size_t errlen)
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
    be->kv_bf16 = be->kv_fp4_keys = true;
    be->moe_a8_kmax = ranks[0]->moe_a8_kmax;
    be->lt_check = ep_lt_check;
    for (int r = 0; r < n_ranks; r++) {
        m->rank[r] = ranks[r];
        be->kv_bf16 = be->kv_bf16 && ranks[r]->kv_bf16;
        be->kv_fp4_keys = be->kv_fp4_keys && ranks[r]->kv_fp4_keys;
        if (ranks[r]->moe_a8_kmax < be->moe_a8_kmax) be->moe_a8_kmax = ranks[r]->moe_a8_kmax;
    }
    m->E = w->n_experts;
    m->own = ranks[0]->sm > 0;
    if (m->own && !bind_experts(m, w)) {
        for (int i = 0; i < m->n_ex; i++)
            for (int r = 1; r < n_ranks; r++) free(m->ex[i].a[r]);
        free(m->ex);
        free(m);
        free(be);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    m->comm = comm;
    const char *chk = getenv("DSV4_EP_CHECK");
    m->check = chk && chk[0] == '1';
    be->name = ranks[0]->name;
    int gpus = 0; /* distinct devices */
    for (int r = 0; r < n_ranks; r++) {
        int seen = 0;
        for (int q = 0; q < r; q++) seen |= ranks[q]->ordinal == ranks[r]->ordinal;
        gpus += !seen;
    }
    if (m->own)
        snprintf(be->device, sizeof be->device, "%d x %.40s on %d GPU%s (expert parallel, %.24s)", n_ranks,
                 ranks[0]->device, gpus, gpus > 1 ? "s" : "", comm ? comm->name : "loopback");
    else
        snprintf(be->device, sizeof be->device, "%d x %.60s (expert parallel, %.24s)", n_ranks, ranks[0]->device,
                 comm ? comm->name : "loopback");
    be->sm = ranks[0]->sm;
    be->ordinal = ranks[0]->ordinal;
    be->impl = m;
    be->mem_free = ranks[0]->mem_free ? ep_mem_free : NULL;
    be->work_reserve = ranks[0]->work_reserve ? ep_work_reserve : NULL;
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
    be->copy_rows = ep_copy_rows;
    be->embed = ep_embed;
    be->linear = ep_linear;
    be->linear_groups = ranks[0]->linear_groups ? ep_linear_groups : NULL;
    be->linear_multi = ranks[0]->linear_multi ? ep_linear_multi : NULL;
    be->rmsnorm = ep_rmsnorm;
    be->rmsnorm_bf16 = ep_rmsnorm_bf16;
    be->rope = ep_rope;
    be->round_bf16 = ep_round_bf16;
    be->fill = ep_fill;
    be->kv_sim = ep_kv_sim;
    be->norm_rope = ep_norm_rope;
    be->idx_sim = ep_idx_sim;
    be->hc_pre = ep_hc_pre;
    be->hc_post = ep_hc_post;
    be->hc_head = ep_hc_head;
    be->compress = ep_compress;
    be->indexer_topk = ep_indexer_topk;
    be->attn = ep_attn;
    be->kv_store = ep_kv_store;
    be->moe_route = ep_moe_route;
    be->moe_experts = ep_moe_experts;
    be->moe_prepare = ep_moe_prepare;
    be->swiglu = ep_swiglu;
    /* Decode graphs where every rank can cut its graph into pieces: the all-reduces run between the pieces,
     * outside any graph (each rank capturing its own graph with the NCCL call inside hung on two H200s: one host
     * thread, two concurrent captures; docs/PARALLEL.md). DSV4_EP_GRAPHS=0: op by op (a baseline). */
    bool graphs = !(getenv("DSV4_EP_GRAPHS") && !strcmp(getenv("DSV4_EP_GRAPHS"), "0"));
    for (int r = 0; r < n_ranks; r++)
        graphs = graphs && ranks[r]->graph_begin && ranks[r]->graph_end && ranks[r]->graph_peek &&
                 ranks[r]->graph_drop && ranks[r]->graph_piece;
    if (graphs) {
        for (int r = 0; r < n_ranks; r++) ranks[r]->graph_shared = true;
        be->graph_begin = ep_graph_begin;
        be->graph_end = ep_graph_end;
    }
    bool sample = true;
    for (int r = 0; r < n_ranks; r++) sample = sample && ranks[r]->sample;
    if (sample) be->sample = ep_sample;
    return be;
}
