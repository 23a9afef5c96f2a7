/*
 * forward.c - the DeepSeek-V4 forward pass, written once against backend.h.
 *
 * Reads top to bottom like MODEL.md §3: embedding, then for every layer the
 * attention half (hc_pre, Q and KV paths, compressors and indexer, sparse
 * attention, grouped output projection, hc_post) and the FFN half (hc_pre,
 * router, routed + shared experts, hc_post), then the HC head and LM head.
 * A step carries several sequences at once (plan); every op is per token or
 * per sequence, so a token's result never depends on its neighbours.
 *
 * With --numerics reference the activations are rounded to BF16 where the
 * reference implementation keeps them in BF16 (MODEL.md §3.0) and cached
 * vectors go through the FP8 / FP4 simulations; with plain everything stays
 * FP32.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

typedef struct {
    dsv4_engine *e;
    dsv4_backend *be;
    const dsv4_config *c;
    const dsv4_plan *plan;
    dsv4_scratch *s;
    int T;
    bool ref;
    bool head_next; /* the HC head reads X as the last hc_post leaves it (every row read out, none gathered) */
} fwd;

/* --profile: attribute what follows to op family fam. */
static inline void mark(fwd *f, int fam)
{
    if (f->e->profile) f->be->prof_mark(f->be, fam);
}

/* Work beside the main chain (the backend's second queue, where it has one): side(f, true) ... side(f,
 * false) is issued first and runs beside what is issued after it until join(f). Not under --profile,
 * whose spans time one queue. */
static bool forks(const fwd *f) { return f->be->side && f->be->join && !f->e->profile; }
static void side(fwd *f, bool on)
{
    if (forks(f)) f->be->side(f->be, on);
}
static void join(fwd *f)
{
    if (forks(f)) f->be->join(f->be);
}

/* A switch that is on unless the environment sets it to 0 (a baseline). */
static int knob_on(const char *name)
{
    const char *e = getenv(name);
    return !(e && e[0] == '0');
}

/* The compressors' and the indexer's projections of h on the second queue, off the main chain
 * (DSV4_PROJ_SIDE=0: with wq_a and wkv, a baseline; the same results either way, each output is its own
 * linear's). */
static bool proj_side(const fwd *f)
{
    static int v = -1;
    if (v < 0) v = knob_on("DSV4_PROJ_SIDE");
    return v && forks(f);
}

/* With proj_side: the compressors' and the indexer's projections of h, and the compressors, forked before
 * wq_a and wkv instead of after them, so their bytes stream beside wq_a's rather than wq_b's (the KV head's
 * norm and RoPE, which read wkv's output, forked after it as before). DSV4_PROJ_EARLY=0: after (a baseline;
 * the same results, each output its own op's). */
#define PROJ_EARLY_MAX_T 16 /* tokens a step: the batches measured (prefill forks them after wkv, as before) */
static bool proj_early(const fwd *f)
{
    static int v = -1;
    if (v < 0) v = knob_on("DSV4_PROJ_EARLY");
    return v && proj_side(f);
}

/* Round to BF16 in reference numerics: the reference's BF16 activations. */
static void bf16_point(fwd *f, float *x, size_t n)
{
    if (f->ref) f->be->round_bf16(f->be, x, n);
}

/* The same rounding folded into an op: its input read as BF16 values and/or
 * its output rounded (where the op is the input's only reader). */
static unsigned rnd(const fwd *f, unsigned flags) { return f->ref ? flags : 0; }

#define RIO (DSV4_RND_IN | DSV4_RND_OUT)

static dsv4_hc_params hc_params(const dsv4_config *c, const dsv4_w *fn, const dsv4_w *base, const dsv4_w *scale)
{
    return (dsv4_hc_params){.hc = c->hc_mult,
                            .dim = c->dim,
                            .sinkhorn_iters = c->hc_sinkhorn_iters,
                            .hc_eps = (float)c->hc_eps,
                            .norm_eps = (float)c->rms_norm_eps,
                            .fn = fn->vec,
                            .base = base->vec,
                            .scale = scale->vec};
}

/* hc_pre / hc_head followed by the RMSNorm of u into y (the backend's op does both). */
static void then_norm(dsv4_hc_params *hp, const float *w, float eps, float *y, unsigned rnd)
{
    hp->then_w = w;
    hp->then_eps = eps;
    hp->then_y = y;
    hp->then_rnd = rnd;
}

/* The parameters of one compressor (main or indexer) of layer l. */
static dsv4_compress_params compress_params(const fwd *f, int l, const dsv4_compressor_w *cw, bool indexer)
{
    const dsv4_config *c = f->c;
    return (dsv4_compress_params){.layer = l,
                                  .indexer = indexer,
                                  .ratio = cw->ratio,
                                  .coff = cw->coff,
                                  .d = cw->d,
                                  .rope_dim = c->rope_dim,
                                  .ape = cw->ape.vec,
                                  .norm = cw->norm.vec,
                                  .freqs = f->e->freqs_compress,
                                  .norm_eps = (float)c->rms_norm_eps,
                                  .reference = f->ref};
}

/* The linears of one input x [T, in] as one linear_multi call where the
 * backend has it (the same results as the separate calls, fewer launches). */
typedef struct {
    int m;
    const dsv4_w *w[8];
    float *y[8];
    int ld[8];
} lin_set;

static void lin_add(lin_set *ls, const dsv4_w *w, float *y, int ld)
{
    if (ls->m == (int)(sizeof ls->w / sizeof ls->w[0])) abort(); /* the forward pass adds at most 7 */
    ls->w[ls->m] = w, ls->y[ls->m] = y, ls->ld[ls->m] = ld;
    ls->m++;
}

static void lin_run(fwd *f, const lin_set *ls, const float *x, int in)
{
    dsv4_backend *be = f->be;
    if (be->linear_multi) be->linear_multi(be, ls->m, ls->w, x, in, f->T, ls->y, ls->ld);
    else
        for (int i = 0; i < ls->m; i++) be->linear(be, ls->w[i], x, in, f->T, ls->y[i], ls->ld[i]);
}

/* The layer's compressors over the step's tokens (the indexer's, then the attention's; one compress_pair where
 * the backend has it): their projections of h are in ica, icg and ca, cg. */
static void run_compressors(fwd *f, int l)
{
    const dsv4_layer_w *L = &f->e->w.layers[l];
    dsv4_backend *be = f->be;
    dsv4_scratch *s = f->s;
    if (L->kind == DSV4_ATTN_SLIDING) return;
    mark(f, DSV4_PROF_COMPRESS);
    const dsv4_compress_params pm = compress_params(f, l, &L->cmp, false);
    if (L->kind == DSV4_ATTN_CSA) {
        const dsv4_compress_params pi = compress_params(f, l, &L->idx_cmp, true);
        if (be->compress_pair) {
            be->compress_pair(be, &pi, s->ica, s->icg, &pm, s->ca, s->cg, f->plan, &f->e->kv);
            return;
        }
        be->compress(be, &pi, f->plan, &f->e->kv, s->ica, s->icg);
    }
    be->compress(be, &pm, f->plan, &f->e->kv, s->ca, s->cg);
}

/* Layer l's RoPE frequencies: the main ones on sliding-window layers, the compressed rows' on the others. */
static const float *layer_freqs(const dsv4_engine *e, int l)
{
    return e->w.layers[l].kind == DSV4_ATTN_SLIDING ? e->freqs_main : e->freqs_compress;
}

/* Layer l's indexer and attention as the backend's ops take them (the attention's output de-rotated with the
 * layer's RoPE, rounded in and out in reference numerics). */
static dsv4_indexer_params indexer_params(const dsv4_engine *e, int l, bool ref)
{
    const dsv4_config *c = &e->cfg;
    const int nI = c->index_n_heads, dI = c->index_head_dim;
    return (dsv4_indexer_params){.layer = l,
                                 .ratio = e->w.layers[l].ratio,
                                 .n_heads = nI,
                                 .head_dim = dI,
                                 .topk = e->topk,
                                 .scale = 1.0f / sqrtf((float)dI) / sqrtf((float)nI),
                                 .reference = ref};
}

static dsv4_attn_params attn_params(const dsv4_engine *e, int l, bool ref)
{
    const dsv4_config *c = &e->cfg;
    const dsv4_layer_w *L = &e->w.layers[l];
    return (dsv4_attn_params){.layer = l,
                              .kind = L->kind,
                              .ratio = L->ratio,
                              .n_heads = c->n_heads,
                              .head_dim = c->head_dim,
                              .window = e->win_rows,
                              .topk = e->topk,
                              .scale = 1.0f / sqrtf((float)c->head_dim),
                              .sinks = L->attn_sink.vec,
                              .reference = ref,
                              .out_freqs = layer_freqs(e, l),
                              .out_rope = c->rope_dim,
                              .out_rnd = ref ? RIO : 0u};
}

static void attention(fwd *f, int l)
{
    const dsv4_config *c = f->c;
    const dsv4_layer_w *L = &f->e->w.layers[l];
    dsv4_backend *be = f->be;
    dsv4_scratch *s = f->s;
    const int T = f->T, D = c->dim, H = c->n_heads, hd = c->head_dim, rd = c->rope_dim;
    const float eps = (float)c->rms_norm_eps;
    const float *freqs = layer_freqs(f->e, l);

    /* h = RMSNorm(hc_pre(X)) (one op: a backend may fuse the norm) */
    dsv4_hc_params hp = hc_params(c, &L->hc_attn_fn, &L->hc_attn_base, &L->hc_attn_scale);
    then_norm(&hp, L->attn_norm.vec, eps, s->h, rnd(f, RIO));
    mark(f, DSV4_PROF_HC);
    be->hc_pre(be, &hp, s->X, T, s->u, s->post, s->comb);

    /* Every projection of h at once (one linear_multi where the backend has
     * it): wq_a, wkv, the compressors' and the indexer's weights; with a second queue (proj_side) the
     * compressors' and the indexer's go beside the Q path, before the KV path */
    const bool ps = proj_side(f);
    lin_set cs = {0};
    const bool early = L->kind != DSV4_ATTN_SLIDING && T <= PROJ_EARLY_MAX_T && proj_early(f);
    {
        lin_set ls = {0};
        lin_add(&ls, &L->wq_a, s->qa, c->q_lora_rank);
        lin_add(&ls, &L->wkv, s->kv, hd);
        lin_set *o = ps ? &cs : &ls;
        if (L->kind == DSV4_ATTN_CSA) {
            const int wi = L->idx_cmp.coff * L->idx_cmp.d;
            lin_add(o, &L->idx_cmp.wkv, s->ica, wi);
            lin_add(o, &L->idx_cmp.wgate, s->icg, wi);
            lin_add(o, &L->idx_weights_proj, s->wi, c->index_n_heads);
        }
        if (L->kind != DSV4_ATTN_SLIDING) {
            const int wm = L->cmp.coff * L->cmp.d;
            lin_add(o, &L->cmp.wkv, s->ca, wm);
            lin_add(o, &L->cmp.wgate, s->cg, wm);
        }
        if (early) { /* proj_early: the second queue's projections and compressors first */
            side(f, true);
            mark(f, DSV4_PROF_DENSE);
            lin_run(f, &cs, s->h, D);
            run_compressors(f, l);
            side(f, false);
        }
        mark(f, DSV4_PROF_DENSE);
        lin_run(f, &ls, s->h, D);
    }

    /* Beside the Q path: the KV path (one shared K=V head: norm, RoPE, the reference's FP8 simulation of the
     * non-rotated part) and the compressors (they read their projections of h and write the compressed rows) */
    side(f, true);
    if (cs.m && !early) {
        mark(f, DSV4_PROF_DENSE);
        lin_run(f, &cs, s->h, D);
    }
    mark(f, DSV4_PROF_NORM);
    be->norm_rope(be, s->kv, T, 1, hd, L->kv_norm.vec, eps, rnd(f, RIO), false, rd, f->plan->pos, freqs,
                  rnd(f, DSV4_RND_OUT), f->ref ? hd - rd : 0);
    if (!early) run_compressors(f, l);
    side(f, false);

    /* Q path: cq = RMSNorm(wq_a h); q = wq_b cq (with the indexer's queries); per-head RMS; RoPE */
    mark(f, DSV4_PROF_NORM);
    be->rmsnorm(be, s->qa, L->q_norm.vec, T, c->q_lora_rank, c->q_lora_rank, eps, s->qa, rnd(f, RIO));
    mark(f, DSV4_PROF_DENSE);
    {
        lin_set ls = {0};
        lin_add(&ls, &L->wq_b, s->q, H * hd);
        if (L->kind == DSV4_ATTN_CSA) lin_add(&ls, &L->idx_wq_b, s->qi, c->index_n_heads * c->index_head_dim);
        lin_run(f, &ls, s->qa, c->q_lora_rank);
    }
    /* per-head norm (reference: in place on the BF16 tensor, as the reference does), RoPE; beside the
     * indexer's queries where there are some (on the main queue after them instead: +0.3 % a batch-1 step,
     * bench/results/2026-12-04-s55/next/) */
    if (L->kind == DSV4_ATTN_CSA) side(f, true);
    mark(f, DSV4_PROF_NORM);
    be->norm_rope(be, s->q, T, H, hd, NULL, eps, 0, f->ref, rd, f->plan->pos, freqs, rnd(f, DSV4_RND_OUT), 0);
    side(f, false);

    /* The indexer's queries; once the compressed rows are in, its choice among them */
    if (L->kind == DSV4_ATTN_CSA) {
        mark(f, DSV4_PROF_INDEXER);
        be->rope(be, s->qi, T, c->index_n_heads, c->index_n_heads * c->index_head_dim, c->index_head_dim, rd,
                 f->plan->pos, freqs, false, rnd(f, RIO));
        if (f->ref) be->idx_sim(be, s->qi, T * c->index_n_heads, c->index_head_dim);
    }
    join(f);
    if (L->kind == DSV4_ATTN_CSA) {
        const dsv4_indexer_params ip = indexer_params(f->e, l, f->ref);
        be->indexer_topk(be, &ip, f->plan, &f->e->kv, s->qi, s->wi, s->idx, s->cnt);
    }

    /* Sparse attention with sinks; the RoPE on its output undone (in the same op) */
    const dsv4_attn_params ap = attn_params(f->e, l, f->ref);
    mark(f, DSV4_PROF_ATTN);
    be->attn(be, &ap, f->plan, &f->e->kv, s->q, s->kv, s->idx, s->cnt, s->o);
    /* the window's new rows: read by later steps only, beside the rest of the layer (kv is written again
     * by the next layer's projections, after the FFN's join) */
    side(f, true);
    be->kv_store(be, l, f->e->win_rows, hd, f->plan, &f->e->kv, s->kv);
    side(f, false);

    /* Grouped output projection: group g of heads -> o_lora dims, then wo_b */
    const int G = c->o_groups, R = c->o_lora_rank, gw = H * hd / G;
    mark(f, DSV4_PROF_DENSE);
    if (be->linear_groups)
        be->linear_groups(be, &L->wo_a, G, s->o, H * hd, (size_t)gw, T, s->z, G * R, (size_t)R);
    else
        for (int g = 0; g < G; g++) {
            dsv4_w wg = dsv4_w_rows(&L->wo_a, (int64_t)g * R, R);
            be->linear(be, &wg, s->o + (size_t)g * gw, H * hd, T, s->z + (size_t)g * R, G * R);
        }
    if (!dsv4_reads_bf16(be, &L->wo_b)) bf16_point(f, s->z, (size_t)T * G * R); /* else wo_b rounds as it reads */
    if (be->linear_to_post)
        be->linear_to_post(be, &L->wo_b, s->z, G * R, T, s->y, D); /* y: the hc_post's alone */
    else
        be->linear(be, &L->wo_b, s->z, G * R, T, s->y, D);

    mark(f, DSV4_PROF_HC);
    if (be->hc_post_next) be->hc_post_next(be, L->hc_ffn_fn.vec, false); /* the FFN's hc_pre reads X next */
    be->hc_post(be, c->hc_mult, D, s->y, NULL, s->post, s->comb, T, s->X, rnd(f, RIO));
}

static void ffn(fwd *f, int l)
{
    const dsv4_config *c = f->c;
    const dsv4_layer_w *L = &f->e->w.layers[l];
    dsv4_backend *be = f->be;
    dsv4_scratch *s = f->s;
    const int T = f->T, D = c->dim, E = c->n_routed_experts, K = c->n_experts_per_tok, I = c->moe_inter_dim;

    dsv4_hc_params hp = hc_params(c, &L->hc_ffn_fn, &L->hc_ffn_base, &L->hc_ffn_scale);
    then_norm(&hp, L->ffn_norm.vec, (float)c->rms_norm_eps, s->h, rnd(f, RIO));
    mark(f, DSV4_PROF_HC);
    be->hc_pre(be, &hp, s->X, T, s->u, s->post, s->comb);

    /* the shared expert beside the router and the routed experts */
    const bool shared = dsv4_w_present(&L->sh_w1);
    if (shared) {
        side(f, true);
        mark(f, DSV4_PROF_SHARED);
        lin_set ls = {0};
        lin_add(&ls, &L->sh_w1, s->sg, I);
        lin_add(&ls, &L->sh_w3, s->su, I);
        lin_run(f, &ls, s->h, D);
        be->swiglu(be, s->sg, s->su, (size_t)T * I, (float)c->swiglu_limit, s->sg, rnd(f, RIO));
        be->linear(be, &L->sh_w2, s->sg, I, T, s->y2, D);
        side(f, false);
    }

    /* Router: sqrt(softplus) scores; bias (top-k layers) only for selection; the selected weights always
       renormalised (config.c: norm_topk_prob is not followed, as in the references) */
    mark(f, DSV4_PROF_ROUTED);
    be->linear(be, &L->gate, s->h, D, T, s->rl, E);
    dsv4_moe_params mp = dsv4_layer_moe(c, L, f->ref);
    mp.sum_in_hc_post = true; /* y: the hc_post below reads it, nothing else */
    if (be->moe_next) be->moe_next(be, &mp); /* the router's ids go to these experts next */
    be->moe_route(be, s->rl, T, E, K, L->hash ? NULL : L->gate_bias.vec, L->hash ? &L->tid2eid : NULL, f->plan->tokens,
                  true, (float)c->routed_scaling_factor, s->eidx, s->ewts);
    be->moe_experts(be, &mp, s->h, T, s->eidx, s->ewts, s->y);
    join(f);

    /* the routed and shared experts' sum (y2 rounded, then the sum, as they are read) joins the streams */
    mark(f, DSV4_PROF_HC);
    if (be->hc_post_next) { /* the next layer's hc_pre or the HC head reads X next */
        if (l + 1 < c->n_layers)
            be->hc_post_next(be, f->e->w.layers[l + 1].hc_attn_fn.vec, false);
        else if (f->head_next)
            be->hc_post_next(be, f->e->w.hc_head_fn.vec, true);
    }
    be->hc_post(be, c->hc_mult, D, s->y, shared ? s->y2 : NULL, s->post, s->comb, T, s->X, rnd(f, RIO));
}

/* HC collapse and final norm of the m gathered rows of X. */
static void head_norm(fwd *f, int m)
{
    const dsv4_config *c = f->c;
    dsv4_backend *be = f->be;
    dsv4_scratch *s = f->s;
    dsv4_hc_params hp = hc_params(c, &f->e->w.hc_head_fn, &f->e->w.hc_head_base, &f->e->w.hc_head_scale);
    then_norm(&hp, f->e->w.norm.vec, (float)c->rms_norm_eps, s->h, rnd(f, RIO));
    be->hc_head(be, &hp, s->X, m, s->u);
}

/* LM head of gathered rows [r0, r0 + nr) into the logits scratch. */
static void head_logits(fwd *f, int r0, int nr)
{
    const int D = f->c->dim;
    f->be->linear(f->be, &f->e->w.head, f->s->h + (size_t)r0 * D, D, nr, f->s->logits, f->c->vocab_size);
}

/* Read out gathered rows [r0, r0 + nr): logits to the host where asked
 * (dst), device picks where asked (req; into pick[token]). */
static void head_readout(fwd *f, int r0, int nr, float *const *dst, const dsv4_sample_req *const *req, int32_t *pick,
                         int slot)
{
    dsv4_backend *be = f->be;
    dsv4_scratch *s = f->s;
    const int V = f->c->vocab_size;
    int ns = 0;
    for (int i = 0; i < nr; i++) {
        const int t = s->gtok[r0 + i];
        if (dst[r0 + i]) be->download(be, dst[r0 + i], s->logits + (size_t)i * V, (size_t)V * sizeof(float));
        if (req[t]) {
            s->rows[ns] = i;
            s->row_req[ns++] = *req[t];
        }
    }
    if (!ns) return;
    if (slot >= 0) {
        be->sample_launch(be, s->logits, V, ns, s->rows, s->row_req, slot);
        return;
    }
    be->sample(be, s->logits, V, ns, s->rows, s->row_req, s->row_tok);
    for (int j = 0; j < ns; j++) pick[s->gtok[r0 + s->rows[j]]] = s->row_tok[j];
}

/* Embedding and every layer over the step's tokens. */
static void body(fwd *f)
{
    dsv4_backend *be = f->be;
    dsv4_scratch *s = f->s;
    const dsv4_plan *plan = f->plan;
    const int T = f->T, D = f->c->dim, hc = f->c->hc_mult;
    /* X = hc copies of the embedding: copy i of every token in one operation (a copy per token and
     * copy was T x hc launches: 16,384 at a 4,096-token prefill, 11 % of it) */
    if (be->embed_hc) {
        be->embed_hc(be, &f->e->w.embed, plan->tokens, T, hc, rnd(f, DSV4_RND_OUT), s->X);
    } else {
        be->embed(be, &f->e->w.embed, plan->tokens, T, s->u);
        bf16_point(f, s->u, (size_t)T * D);
        const size_t rb = (size_t)D * sizeof(float);
        for (int i = 0; i < hc; i++) be->copy_rows(be, s->X + (size_t)i * D, hc * rb, s->u, rb, rb, (size_t)T);
    }
    for (int l = 0; l < f->c->n_layers; l++) {
        attention(f, l);
        ffn(f, l);
    }
}

void dsv4_forward(dsv4_engine *e, const dsv4_plan *plan, float *const *out, const dsv4_sample_req *const *req,
                  int32_t *pick, int slot)
{
    const dsv4_config *c = &e->cfg;
    dsv4_backend *be = e->be;
    dsv4_scratch *s = &e->s;
    fwd f = {.e = e, .be = be, .c = c, .plan = plan, .s = s, .T = plan->n_tok,
             .ref = e->numerics == DSV4_NUMERICS_REFERENCE};
    const int T = plan->n_tok, D = c->dim, hc = c->hc_mult;
    mark(&f, DSV4_PROF_OTHER);
    be->step_begin(be, plan, &e->kv);

    /* The head runs for the tokens whose logits or picks were asked for
     * (gathered to the front of X), in groups that fit the logits scratch. */
    int m = 0;
    float **dst = (float **)s->out_ptr;
    for (int t = 0; t < T; t++)
        if (out[t] || req[t]) {
            dst[m] = out[t];
            s->gtok[m++] = t;
        }
    f.head_next = m == T; /* no row gathered before the head */

    /* A decode step (one token per sequence, every token read out) is the
     * same work every time for its batch size: a graph replays it. */
    int g = 0;
    if (e->graphs && !e->profile && plan->n_seg == T && m == T && T <= s->logit_rows)
        g = be->graph_begin(be, T);
    if (g != 2) {
        body(&f);
        join(&f);
        mark(&f, DSV4_PROF_HEAD);
        for (int i = 0; i < m; i++)
            if (s->gtok[i] != i)
                be->copy(be, s->X + (size_t)i * hc * D, s->X + (size_t)s->gtok[i] * hc * D,
                         (size_t)hc * D * sizeof(float));
        if (m) head_norm(&f, m);
        if (g) head_logits(&f, 0, m);
    }
    if (g) {
        be->graph_end(be, T);
        head_readout(&f, 0, m, dst, req, pick, slot);
    } else {
        for (int r0 = 0; r0 < m; r0 += s->logit_rows) {
            int nr = m - r0 < s->logit_rows ? m - r0 : s->logit_rows;
            head_logits(&f, r0, nr);
            head_readout(&f, r0, nr, dst, req, pick, slot);
        }
    }
    if (e->profile) {
        /* a step with any multi-token segment counts as prefill */
        int k = 0;
        for (int i = 0; i < plan->n_seg; i++) k |= plan->segs[i].n > 1;
        be->prof_collect(be, e->prof_ms[k]);
        e->prof_steps[k]++;
        e->prof_tokens[k] += T;
    }
}

dsv4_status dsv4_forward_reserve(dsv4_engine *e, int n_tok, int64_t max_ctx)
{
    dsv4_backend *be = e->be;
    if (!be->work_reserve) return DSV4_OK;
    const bool ref = e->numerics == DSV4_NUMERICS_REFERENCE;
    for (int l = 0; l < e->cfg.n_layers; l++) {
        const dsv4_layer_w *L = &e->w.layers[l];
        const dsv4_attn_params ap = attn_params(e, l, ref);
        const dsv4_indexer_params ip = indexer_params(e, l, ref);
        const dsv4_status st = be->work_reserve(be, &ap, L->kind == DSV4_ATTN_CSA ? &ip : NULL, n_tok, max_ctx);
        if (st != DSV4_OK) return st;
    }
    return DSV4_OK;
}
