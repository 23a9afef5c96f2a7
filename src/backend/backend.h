/*
 * backend.h - the op interface the forward pass is written against.
 *
 * A backend owns memory (activations, decode state) and implements the ops
 * below; the CPU backend is the reference, other backends must agree with it.
 * Activation pointers are backend memory, row-major, FP32 unless stated.
 * Every op computes each output row from its own inputs only, in an order
 * that does not depend on the batch: a token's result never depends on what
 * else is in the step (batch invariance is a contract, not an accident).
 */
#ifndef DSV4_BACKEND_BACKEND_H
#define DSV4_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/sample.h"
#include "engine/state.h"
#include "engine/tune.h"
#include "model/config.h"
#include "model/weights.h"

typedef struct dsv4_backend dsv4_backend;

/* BF16 rounding folded into an op (reference numerics: the reference's BF16
 * activations): its input read as BF16 values, its output rounded to BF16.
 * The same values as a round_bf16 pass before or after the op. */
#define DSV4_RND_IN 1u
#define DSV4_RND_OUT 2u

/* Op families for --profile. */
typedef enum {
    DSV4_PROF_ATTN = 0,      /* sparse attention + window store */
    DSV4_PROF_INDEXER,       /* indexer projections, simulation, scores and top-k */
    DSV4_PROF_COMPRESS,      /* compressor projections and pooling */
    DSV4_PROF_ROUTED,        /* router + routed experts */
    DSV4_PROF_SHARED,        /* shared expert */
    DSV4_PROF_DENSE,         /* attention projections (wq_a, wq_b, wkv, wo_a, wo_b) */
    DSV4_PROF_HC,            /* hyper-connections (pre, post, head collapse) */
    DSV4_PROF_NORM,          /* RMSNorms, RoPE, BF16 rounding, KV simulation */
    DSV4_PROF_HEAD,          /* final norm + LM head + logits readback */
    DSV4_PROF_COMM,          /* collectives between ranks (expert parallelism) */
    DSV4_PROF_OTHER,         /* embedding, plan upload, the rest */
    DSV4_PROF_COUNT
} dsv4_prof_family;

/* Hyper-connection mixing parameters of one site (attention or FFN half). */
typedef struct {
    int hc;              /* streams */
    int dim;             /* D */
    int sinkhorn_iters;
    float hc_eps, norm_eps;
    const float *fn;     /* [(2+hc)*hc, hc*D] */
    const float *base;   /* [(2+hc)*hc] */
    const float *scale;  /* [3] */
    /* then_y non-NULL: then also then_y = RMSNorm(u) exactly as the rmsnorm op
     * computes it (weights then_w, then_eps, ld = dim, rounding then_rnd),
     * so a backend may do it in the same kernel; u is still written */
    const float *then_w;
    float then_eps;
    float *then_y;
    unsigned then_rnd;
} dsv4_hc_params;

/* One compressor (main or indexer) of one layer. */
typedef struct {
    int layer;
    bool indexer;        /* rows go to indexer keys */
    int ratio, coff, d;  /* coff = 2 for overlapping windows */
    int rope_dim;
    const float *ape;    /* [ratio, coff*d] */
    const float *norm;   /* [d] */
    const float *freqs;  /* [rope_dim/2] */
    float norm_eps;
    bool reference;      /* BF16 rounding + FP8 (main) or Hadamard+FP4 (indexer) simulation of rows */
} dsv4_compress_params;

typedef struct {
    int layer;
    int ratio;
    int n_heads, head_dim; /* indexer heads */
    int topk;
    float scale;          /* index_head_dim^-0.5 * n_heads^-0.5 */
    bool reference;       /* scores in BF16 as the reference computes them; the queries and keys are then
                           * BF16 values (Hadamard, BF16, FP4 round trip), which a backend may multiply as
                           * BF16 (the CUDA tensor-core scores do) */
} dsv4_indexer_params;

typedef struct {
    int layer;
    dsv4_attn_kind kind;
    int ratio;
    int n_heads, head_dim;
    int window;
    int topk;             /* CSA: stride of the idx array */
    float scale;          /* head_dim^-0.5 */
    const float *sinks;   /* [n_heads] */
    bool reference;       /* the weights exp(s - m) rounded to BF16 before the product with V, m the max
                           * of the row's part (DSV4_ATTN_PARTS; the parts' sums then joined as
                           * dsv4_attn_join says); q and every row are then BF16 values
                           * (forward.c rounds them), which a backend may multiply as BF16 (the CUDA
                           * tensor-core layout does) */
    /* With out_freqs: the output is then de-rotated, exactly as the rope op with inverse = true on it
     * (rope_dim out_rope, the token's position, rnd out_rnd); a backend may do it in the attention's
     * last pass (the CUDA tensor-core layout does) */
    const float *out_freqs;
    int out_rope;
    unsigned out_rnd;
} dsv4_attn_params;

/* Reference numerics' attention parts: a (token, head)'s nr visible rows (window rows, then compressed ones)
 * split into DSV4_ATTN_PARTS parts at multiples of 16 rows, a function of nr only; part p holds rows
 * dsv4_attn_part_lo(nr, p) .. dsv4_attn_part_lo(nr, p + 1) - 1 (some empty when nr is small). Each part's
 * weights are taken against its own max, so a kernel can weigh a part's rows as soon as it has scored them. */
#define DSV4_ATTN_PARTS 8
DSV4_HD int dsv4_attn_part_lo(int nr, int p)
{
    return p >= DSV4_ATTN_PARTS ? nr : (int)(((int64_t)nr * p / DSV4_ATTN_PARTS) & ~15);
}

/* The parts joined, on every backend: m[p] the part's max (an empty part's -inf), l[p] its sum of the unrounded
 * exp(s - m[p]); M the largest m[p], c[p] = exp(m[p] - M) (an empty part's 0); returns the denominator, fmaf(c[p],
 * l[p], .) from 0 in part order plus the sink's mass exp(sink - M). The output is the weighted sums O_p joined
 * alike - fmaf(c[p], O_p, .) from 0 in part order (an empty part's fmaf(0, 0, x) = x: it may be left out) -
 * divided by the denominator. */
DSV4_HD float dsv4_attn_join(const float *m, const float *l, float sink, float *c)
{
    float M = -INFINITY, d = 0.0f;
    for (int p = 0; p < DSV4_ATTN_PARTS; p++) M = fmaxf(M, m[p]);
    for (int p = 0; p < DSV4_ATTN_PARTS; p++) {
        c[p] = expf(m[p] - M);
        d = fmaf(c[p], l[p], d);
    }
    return d + expf(sink - M);
}

typedef struct {
    int n_experts, k, dim, inter;
    float swiglu_limit;   /* <= 0: no clamp */
    const dsv4_w *w1, *w3, *w2; /* [n_experts] */
    bool reference;       /* BF16 GEMM outputs and bf16(weight * activation) before the down projection */
    /* Expert parallelism: compute only experts in [expert_lo, expert_hi) (both 0: all), and with slot_out
     * write each (token, slot)'s output to slot_out [n*k, D] (zeros for the slots of other experts)
     * instead of summing into out: moe_sum does that once the ranks' slots are combined. */
    int expert_lo, expert_hi;
    float *slot_out;
    /* out is read only by the next hc_post call, as its o1 (and nothing else reads or writes it before): a
     * backend may leave the sum over the slots to that call (the CUDA one folds it into its kernel, the
     * same additions in the same order); ignored with slot_out */
    bool sum_in_hc_post;
} dsv4_moe_params;

struct dsv4_backend {
    const char *name;
    char device[128];     /* "NVIDIA H200 (sm_90)", the CPU's model, ... for messages */
    int sm;               /* CUDA compute capability x10 (90 = Hopper); 0 for the CPU */
    int ordinal;          /* which device of its kind (the GPU's number); 0 for the CPU */
    void *impl;
    /* Fake-quantise activations to FP8 (per 128, power-of-two scales) in front
     * of FP8/FP4 linears not marked no_act_quant, x read as BF16 values first
     * (the reference quantises a BF16 tensor), and round them to BF16 in
     * front of BF16 ones (the reference's BF16 activations; dsv4_bf16_input):
     * reference numerics. The model rounds those inputs already (RIO) except
     * where the linear's own rounding stands for it (dsv4_reads_bf16). */
    bool act_quant;
    /* The routed experts' W4A8 kernels (--moe-backend w4a8; with act_quant and
     * MXFP4 experts): FP4 weights and the FP8 activations on FP8 tensor cores.
     * moe_a8_kmax, set by the backend at creation: the largest hidden size and
     * expert width they take (multiples of 128), 0 without such kernels. */
    bool moe_a8;
    int moe_a8_kmax;
    /* Reference numerics' FP8 linears in steps of many tokens (prefill) through the vendor's block-scaled FP8
     * GEMM (--prefill-gemm cublaslt; the CUDA backend's lt.cu), not the bits of the one-token kernels. Set by
     * the engine after lt_check accepted it. */
    bool lt_prefill;
    /* Whether lt_prefill can run here (NULL: never); false with the reason in err. */
    bool (*lt_check)(dsv4_backend *be, char *err, size_t errlen);
    /* The state's cached rows may be BF16 (dsv4_kv.bf16_rows, reference
     * numerics): compress, indexer_topk, attn and kv_store read and write them
     * so. Set by the backend at creation. */
    bool kv_bf16;
    /* The state's indexer keys may be E2M1 codes + UE8M0 scales
     * (dsv4_kv.fp4_keys, reference numerics): compress writes them so and
     * indexer_topk reads them so. Set by the backend at creation. */
    bool kv_fp4_keys;
    void (*destroy)(dsv4_backend *be);
    /* Make this backend's device current on the calling thread before other
     * calls (NULL: nothing to do). One thread driving backends on several
     * GPUs calls it before each one's work. */
    void (*bind)(dsv4_backend *be);

    /* Make a bound weight usable by the ops: set w->vec for small vectors and
     * (device backends) copy matrices to backend memory, setting dev/dev_scale. */
    dsv4_status (*weight_load)(dsv4_backend *be, dsv4_w *w, char *err, size_t errlen);
    /* Called at the start of every forward step with the plan and state the
     * ops will be given (device backends copy the plan and page table). */
    void (*step_begin)(dsv4_backend *be, const dsv4_plan *plan, const dsv4_kv *kv);
    /* Optional (NULL: one queue, ops run in the order issued): the ops issued between side(be, true) and
     * side(be, false) may run beside the ops issued after them, and start once everything issued before
     * them is done; join(be) makes the ops issued next wait for them too. The caller forks only work that
     * shares no buffer with what runs beside it (the backend keeps its own scratch apart). */
    void (*side)(dsv4_backend *be, bool on);
    void (*join)(dsv4_backend *be);

    /* --profile: prof_mark(f) starts attributing time to family f (ending the
     * previous family's span); prof_collect waits for the device and adds the
     * step's spans into ms[DSV4_PROF_COUNT]. Both NULL when not supported. */
    void (*prof_mark)(dsv4_backend *be, int family);
    void (*prof_collect)(dsv4_backend *be, double *ms);

    /* Decode graphs (both NULL when unsupported). The forward pass brackets
     * the ops of a step it may replay - every segment one token, every token's
     * logits wanted - with graph_begin(key) ... graph_end(key), key = n_tok.
     * graph_begin returns 0: run the ops (the first step of this shape: it
     * sizes the scratch), 1: run the ops, they are being captured, 2: do not
     * run them, a graph holds them. graph_end launches what was captured or
     * held. Between the two, ops size their scratch for any step of the shape
     * (bounds from kv->max_ctx), never from this step's positions. */
    int (*graph_begin)(dsv4_backend *be, int key);
    void (*graph_end)(dsv4_backend *be, int key);
    /* Optional (NULL where unsupported), for a backend that drives others (expert parallelism): graph_peek(key)
     * answers what graph_begin(key) would, changing nothing; graph_drop(key) forgets key's graph (the next
     * graph_begin captures it again). graph_piece cuts a step's graph, between graph_begin and graph_end:
     * graph_piece(be, 0) closes the piece under way (captured, it is launched; replayed, the next piece is),
     * graph_piece(be, 1) opens the next; what is issued between the two runs outside the graph, every step. A
     * replay (graph_begin answered 2, no ops issued) calls graph_piece(be, 0) as often as the capture did, in
     * order, before graph_end; nothing happens at either in a step that sizes the scratch (answer 0). */
    int (*graph_peek)(dsv4_backend *be, int key);
    /* Set by a backend that drives several with graph_piece: their captures are open side by side on one thread
     * (each piece is instantiated and launched while the others' captures run), so a backend must not let the
     * others' calls invalidate its capture (CUDA: cudaStreamCaptureModeRelaxed instead of ThreadLocal; what a
     * capture must not contain, such as a buffer growing, the backend refuses itself). */
    bool graph_shared;
    void (*graph_drop)(dsv4_backend *be, int key);
    void (*graph_piece)(dsv4_backend *be, int begin);

    /* Sampling on the device (NULL when unsupported): for i < n, tok[i]
     * (host) = the pick of req[i] from row rows[i] of logits [.., V]; -1 when
     * the row has no finite maximum. Waits for the result. */
    void (*sample)(dsv4_backend *be, const float *logits, int V, int n, const int *rows, const dsv4_sample_req *req,
                   int32_t *tok);
    /* Optional (both NULL when unsupported): sample without waiting. sample_launch issues sample's picks into
     * buffer slot (0 or 1, whose earlier picks were collected) and returns; sample_wait(slot, n, tok) waits for
     * them. Until the next launch into the slot a plan's feed may name them (step_begin). */
    void (*sample_launch)(dsv4_backend *be, const float *logits, int V, int n, const int *rows,
                          const dsv4_sample_req *req, int slot);
    void (*sample_wait)(dsv4_backend *be, int slot, int n, int32_t *tok);

    /* Bytes of backend memory still free (NULL: host memory, the engine asks the OS). */
    int64_t (*mem_free)(dsv4_backend *be);
    /* Optional (NULL: nothing of theirs grows with the context): allocate now the working memory that
     * indexer_topk with ip (NULL: none in this layer) and attn with ap take for any step of up to n_tok tokens at
     * positions below max_ctx, so that it comes out of the device before the engine sizes a KV pool from what is
     * free, not in the middle of a step. DSV4_ERR_NOMEM, with nothing lost, where the device has too little. */
    dsv4_status (*work_reserve)(dsv4_backend *be, const dsv4_attn_params *ap, const dsv4_indexer_params *ip, int n_tok,
                                int64_t max_ctx);

    /* memory: zeroed on allocation */
    void *(*alloc)(dsv4_backend *be, size_t bytes);
    void (*free)(dsv4_backend *be, void *p);
    void (*upload)(dsv4_backend *be, void *dst, const void *src, size_t bytes);
    void (*download)(dsv4_backend *be, void *dst, const void *src, size_t bytes);
    /* backend memory to backend memory; the ranges do not overlap */
    void (*copy)(dsv4_backend *be, void *dst, const void *src, size_t bytes);
    /* rows copies of row_bytes bytes, spitch bytes apart at src, dpitch at dst, in one operation; the
     * ranges do not overlap */
    void (*copy_rows)(dsv4_backend *be, void *dst, size_t dpitch, const void *src, size_t spitch, size_t row_bytes,
                      size_t rows);

    /* out[n, D] = emb[tok[i]] */
    void (*embed)(dsv4_backend *be, const dsv4_w *emb, const int32_t *tok, int n, float *out);
    /* X[n, hc, D]: hc copies of emb[tok[i]], rounded to BF16 first when rnd has DSV4_RND_OUT - embed,
     * round_bf16 and hc copy_rows in one op (NULL: the forward pass runs those) */
    void (*embed_hc)(dsv4_backend *be, const dsv4_w *emb, const int32_t *tok, int n, int hc, unsigned rnd, float *X);
    /* y[i, :out] = W[out, in] . x[i, :in] for i < n; x rows ldx apart, y rows ldy apart.
     * W in any dsv4_wfmt; quantized weights are decoded on the fly, exactly. */
    void (*linear)(dsv4_backend *be, const dsv4_w *w, const float *x, int ldx, int n, float *y, int ldy);
    /* G linears in one: rows [g R, (g+1) R) of W (R = out / G) times x + g xg into y + g yg, for g < G;
     * the same results as G calls of linear on those row views (NULL: the forward pass makes them). */
    void (*linear_groups)(dsv4_backend *be, const dsv4_w *w, int G, const float *x, int ldx, size_t xg, int n,
                          float *y, int ldy, size_t yg);
    /* linear whose y is read by the next hc_post on the same queue and by nothing before it (o there): a
     * backend may leave y as parts that hc_post adds (the same values). NULL: the forward pass calls
     * linear. */
    void (*linear_to_post)(dsv4_backend *be, const dsv4_w *w, const float *x, int ldx, int n, float *y, int ldy);
    /* m linears of one input: y[i] = W[i] . x for i < m (every W[i] in = x's width; the y[i] apart
     * from x and from each other); the same results as m calls of linear, in fewer launches (NULL:
     * the forward pass makes the calls). */
    void (*linear_multi)(dsv4_backend *be, int m, const dsv4_w *const *w, const float *x, int ldx, int n,
                         float *const *y, const int *ldy);
    /* y[r] = x[r] * rsqrt(mean(x[r]^2) + eps) (* w if w); rows `ld` floats apart; y may equal x.
     * rnd (DSV4_RND_*): x read as BF16 values, y rounded to BF16 */
    void (*rmsnorm)(dsv4_backend *be, const float *x, const float *w, int rows, int dim, int ld, float eps,
                    float *y, unsigned rnd);
    /* Unweighted RMS normalisation of each dim-wide row computed entirely in
     * BF16 (x read as BF16 values; squares, mean, eps, rsqrt and product each
     * rounded), in place: the reference's per-head query normalisation. */
    void (*rmsnorm_bf16)(dsv4_backend *be, float *x, int rows, int dim);
    /* interleaved RoPE on the last rope_dim dims of each head; angle pos[t]*freqs[i]; inverse rotates by -angle.
     * rnd: DSV4_RND_IN rounds every value of each head to BF16 first (in place), DSV4_RND_OUT the rotated ones */
    void (*rope)(dsv4_backend *be, float *x, int n_tok, int n_heads, int ld_tok, int head_dim, int rope_dim,
                 const int64_t *pos, const float *freqs, bool inverse, unsigned rnd);
    void (*round_bf16)(dsv4_backend *be, float *x, size_t n);
    /* x[i] = the bits of dsv4_fill_word(seed, i) for i < n: benchmark contents for cached rows
     * (dsv4_seq_skip) */
    void (*fill)(dsv4_backend *be, float *x, size_t n, uint64_t seed);
    /* FP8SIM64 on x[r][0, nope) for each row r (rows ld apart) */
    void (*kv_sim)(dsv4_backend *be, float *x, int rows, int ld, int nope);
    /* Hadamard + FP4SIM32 on each dim-wide row */
    void (*idx_sim)(dsv4_backend *be, float *x, int rows, int dim);
    /* On each head row of x (n_tok x n_heads rows of head_dim, contiguous), in place, exactly rmsnorm(w, eps,
     * nrnd) (rmsnorm_bf16 when bf16), then rope (rope_dim, pos, freqs, not inverse, rrnd), then kv_sim of the
     * first sim_nope values (0: none): the three ops, in one where a backend can fuse them. */
    void (*norm_rope)(dsv4_backend *be, float *x, int n_tok, int n_heads, int head_dim, const float *w, float eps,
                      unsigned nrnd, bool bf16, int rope_dim, const int64_t *pos, const float *freqs, unsigned rrnd,
                      int sim_nope);

    /* hc_pre: X [n, hc, D] -> u [n, D], post [n, hc], comb [n, hc, hc] */
    void (*hc_pre)(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u, float *post,
                   float *comb);
    /* X[t, k] = post[t, k] * o[t] + sum_j comb[t, j, k] * X[t, j], o = o1 + o2 (o2: a second addend, the
     * shared expert's beside the routed experts', or NULL); rnd: o2 read as BF16 values and o rounded
     * (DSV4_RND_IN), X rounded (DSV4_RND_OUT) */
    void (*hc_post)(dsv4_backend *be, int hc, int dim, const float *o1, const float *o2, const float *post,
                    const float *comb, int n, float *X, unsigned rnd);
    /* final collapse: u[t] = sum_i (sigmoid(m_i * scale + base_i) + eps) X[t, i] */
    void (*hc_head)(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u);
    /* Called right before an hc_post: the next op to read its X is the hc_pre (head false) or hc_head (head
     * true) whose mixing weights are fn, on the same queue and rows, and nothing writes X between them; a
     * backend may compute that op's mixing logits in the hc_post (the same values). NULL: not called. */
    void (*hc_post_next)(dsv4_backend *be, const float *fn, bool head);

    /* Stream a[n, coff*d], g[n, coff*d] (before ape) through the compressor
     * state of every segment, writing each completed row to the pages. */
    void (*compress)(dsv4_backend *be, const dsv4_compress_params *p, const dsv4_plan *plan, dsv4_kv *kv,
                     const float *a, const float *g);
    /* Optional (NULL: compress(p1) then compress(p2)): a layer's two compressors, with those calls' results; they
     * read and write disjoint state and pages, so a backend may run them side by side. */
    void (*compress_pair)(dsv4_backend *be, const dsv4_compress_params *p1, const float *a1, const float *g1,
                          const dsv4_compress_params *p2, const float *a2, const float *g2, const dsv4_plan *plan,
                          dsv4_kv *kv);
    /* q [n, nI, dI] (roped, simulated), w [n, nI] -> idx [n, topk] ascending, cnt [n]; reference
     * numerics read w as BF16 values */
    void (*indexer_topk)(dsv4_backend *be, const dsv4_indexer_params *p, const dsv4_plan *plan, const dsv4_kv *kv,
                         const float *q, const float *w, int32_t *idx, int32_t *cnt);
    /* Sparse attention with sinks over window rows (ring + this step's kv [n, hd])
     * and compressed rows (CSA: idx/cnt; HCA: all visible). out [n, H, hd]. */
    void (*attn)(dsv4_backend *be, const dsv4_attn_params *p, const dsv4_plan *plan, const dsv4_kv *kv,
                 const float *q, const float *kv_new, const int32_t *idx, const int32_t *cnt, float *out);
    /* Write this step's kv rows into the window rings (after attention). */
    void (*kv_store)(dsv4_backend *be, int layer, int window, int head_dim, const dsv4_plan *plan, dsv4_kv *kv,
                     const float *kv_new);

    /* Router: logits [n, E] -> idx [n, k], weights [n, k] (renormalised, scaled). */
    void (*moe_route)(dsv4_backend *be, const float *logits, int n, int n_experts, int k, const float *bias,
                      const dsv4_w *tid2eid, const int32_t *tokens, bool renorm, float route_scale, int32_t *idx,
                      float *wts);
    /* Routed experts: out[t] = sum over the token's experts (ascending id) of
     * w2_e . (wts * swiglu(w1_e x, w3_e x)) */
    void (*moe_experts)(dsv4_backend *be, const dsv4_moe_params *p, const float *x, int n, const int32_t *idx,
                        const float *wts, float *out);
    /* Optional (NULL: nothing to make): what moe_experts on p's experts needs made once, made now, at load
     * (the CUDA backend: the layer's expert table and its tensor-core layout of the FP4 weights) rather than
     * in the first step. p's shape and weights as moe_experts will get them; no tokens. */
    void (*moe_prepare)(dsv4_backend *be, const dsv4_moe_params *p);
    /* Optional (NULL: not called): called right before a moe_route whose idx the moe_experts on p's experts
     * (on the same queue, p unchanged until then) reads next; a backend may do part of their work in the
     * router (the CUDA backend: the plan of their tensor-core path). The same values. */
    void (*moe_next)(dsv4_backend *be, const dsv4_moe_params *p);
    /* out[t] = sum of Y[t, slot] over the token's slots in ascending expert id (NULL: no expert parallelism) */
    void (*moe_sum)(dsv4_backend *be, const float *Y, const int32_t *idx, int n, int k, int dim, float *out);
    /* m[i] = silu(min(g, lim)) * clamp(u, -lim, lim); rnd: g and u read as BF16 values, m rounded */
    void (*swiglu)(dsv4_backend *be, const float *g, const float *u, size_t n, float limit, float *m,
                   unsigned rnd);
};

/* Reference numerics (act_quant): whether a linear's input is rounded to BF16 first - a BF16 weight not marked
 * no_act_quant (the reference's BF16 activations). Every backend applies it. */
static inline bool dsv4_bf16_input(const dsv4_backend *be, const dsv4_w *w)
{
    return be->act_quant && !w->no_act_quant && w->fmt == DSV4_WF_FLOAT && w->dtype == DSV4_DT_BF16;
}

/* Reference numerics: whether a linear reads its input as BF16 values (the act_quant of an FP8 / FP4 weight, or a
 * BF16 weight's dsv4_bf16_input), so a rounding of x to BF16 in front of it changes nothing (forward.c leaves
 * out the one in front of wo_b: a launch less a layer on the GPU). */
static inline bool dsv4_reads_bf16(const dsv4_backend *be, const dsv4_w *w)
{
    return be->act_quant && !w->no_act_quant && (w->fmt != DSV4_WF_FLOAT || w->dtype == DSV4_DT_BF16);
}

/* The CPU backend; n_threads <= 0 uses every core. */
dsv4_backend *dsv4_backend_cpu_create(int n_threads);

/* A collective over the ranks of expert parallelism. allreduce: every
 * rank's buf[r] [n] (its backend memory) becomes the sum over the ranks,
 * ordered on each rank's stream like its other ops. */
typedef struct dsv4_comm dsv4_comm;
struct dsv4_comm {
    char name[96];        /* "NCCL 2.28.9", for messages */
    void (*allreduce)(dsv4_comm *c, float **buf, size_t n);
    void (*destroy)(dsv4_comm *c);
};

/* Expert parallelism over `ranks` backends (taken over: destroyed with it)
 * in one process: every op runs on every rank on its own copy of the
 * activations and state, the routed experts of `w` (bound, not yet loaded)
 * are split by id range, and the per-slot outputs are combined by `comm`
 * (taken over; NULL: the loopback through host memory). Device ranks
 * (sm > 0) each load their own copy of the weights, only their own experts;
 * CPU ranks share the host's. NULL with a reason in err. */
dsv4_backend *dsv4_backend_ep_create(dsv4_backend **ranks, int n_ranks, dsv4_comm *comm, const dsv4_weights *w,
                                     char *err, size_t errlen);

/* The CUDA backend's sparse attention layouts (dsv4_cuda_attn_layout; also
 * DSV4_ATTN=naive|fp32 at start-up, DSV4_ATTN_NAIVE=1 meaning naive): AUTO
 * takes the tensor cores in reference numerics where the shape allows and the
 * FP32 heads-together kernels otherwise; FP32 always the latter; NAIVE the
 * first layout (one block per (token, head) walking every row), the baseline;
 * PARTS is AUTO with the weighted sum always as a cluster of row parts (never
 * one block walking the parts: the tests compare the two bit for bit). */
enum { DSV4_ATTN_LAYOUT_AUTO, DSV4_ATTN_LAYOUT_FP32, DSV4_ATTN_LAYOUT_NAIVE, DSV4_ATTN_LAYOUT_PARTS };

#ifdef DSV4_HAVE_CUDA
/* The CUDA backend on GPU `device`; NULL with a reason in err when unusable. */
dsv4_backend *dsv4_backend_cuda_create(int device, char *err, size_t errlen);
int dsv4_cuda_device_count(void);
/* The tensor-core kernels' weight decoders against quant.h's, every code, on
 * GPU 0: the number of mismatches (-1: a CUDA error). For the tests. */
int dsv4_cuda_decode_check(void);
/* The fewest blocks an SM of reference numerics' decode kernels of the routed experts (k_moe16, MXFP4, gate /
 * up and down, tiles of 8 and of 2 pairs) on the current GPU, 4 by design; -1 where an SM has less than
 * sm_90's 228 KB of shared memory (their rings are sized for it). After a CUDA backend exists. For the tests. */
int dsv4_cuda_moe16_blocks_per_sm(void);
/* The routed experts' calls whose plan the router made (be->moe_next, k_route), since the process began. For
 * the tests. */
unsigned long dsv4_cuda_route_planned(void);
/* Whether the routed experts p run on the CUDA backend be's tensor cores (the path the router plans for). For the
 * tests. */
bool dsv4_cuda_moe_tc(dsv4_backend *be, const dsv4_moe_params *p);
/* The sparse attention layout (DSV4_ATTN_LAYOUT_*), for benchmarks and tests. */
void dsv4_cuda_attn_layout(int layout);
/* The tuned kernel choices (engine/tune.h) every CUDA backend of the process
 * uses from the next call on; NULL: the built-in ones. get: the current. */
void dsv4_cuda_tune_set(const dsv4_tune *t);
void dsv4_cuda_tune_get(dsv4_tune *t);
/* One layer's sparse attention on Flash's shape (64 heads of 512, window
 * 128, 256-token pages) for `batch` sequences at context ctx, CSA (the top
 * 512 of ctx / 4 compressed rows) or HCA (every ctx / 128 row), on
 * pseudo-random rows (the backend's fill): microseconds per call over reps calls after a warm-up, with the
 * current layout and choices; -1 when the state does not fit. For dsv4
 * tune and bench_kernels. */
double dsv4_cuda_attn_time(dsv4_backend *be, bool csa, int batch, int64_t ctx, bool reference, int reps);
/* dsv4_cuda_attn_time's cached rows: in reference numerics BF16 (dsv4_kv.bf16_rows, as the engine caches them),
 * or with on FP32 as in plain numerics (the baseline of the BF16 rows). */
void dsv4_cuda_attn_bench_fp32_rows(int on);
/* The same for the lightning indexer's scores and top-k (64 heads of 128,
 * the top 512 of ctx / 4 keys; keys, queries and weights pseudo-random). */
double dsv4_cuda_indexer_time(dsv4_backend *be, int batch, int64_t ctx, bool reference, int reps);
/* The indexer's first version (one block per token ranking every candidate
 * against every other): the benchmark baseline. Same indices. */
void dsv4_cuda_indexer_naive(int on);
/* At most how many of a token's indexer scores the top-k keeps in shared
 * memory (more: its passes read them from global memory); -1: as many as the
 * GPU's shared memory holds (the default). For tests of both paths. */
void dsv4_cuda_indexer_topk_cap(int64_t cap);
/* The top-k's path for up to 8,192 candidates (four or eight keys a thread loaded once into registers, 8 / 16 / 32
 * warps): on (1, the default) or off (0: the general path for every count; DSV4_IX_SMALL=0 too); -1: back to the
 * environment's. Same indices. */
void dsv4_cuda_indexer_topk_small(int on);
/* The top-k as a cluster of blocks a token (the most of 8, 4 or 2 whose blocks the SMs hold at once, for the
 * tokens of more than 49,152 candidates - a context past ~196k tokens - where a call may have such): 1 (the
 * default) that choice, 0 one block a token, 2 / 4 / 8 that cluster size for every call and every token past
 * the small path (as DSV4_IX_CL=N); -1: back to the environment's. Same indices. */
void dsv4_cuda_indexer_topk_cluster(int on);
/* The candidates past which a token is the top-k cluster's, fewer its first block's alone (-1: 49,152, or none
 * for a forced cluster size). For tests of both. */
void dsv4_cuda_indexer_topk_cluster_min(int64_t n);
/* dsv4_cuda_indexer_time on FP4 indexer keys (dsv4_kv.fp4_keys, reference numerics) instead of FP32 ones. */
void dsv4_cuda_indexer_bench_fp4(int on);
/* The indexer op launching its scores and not its top-k (on: 1; the benchmark's scores-alone column): idx and
 * cnt are then left as they were. For measurements only. */
void dsv4_cuda_indexer_scores_only(int on);
/* The tensor cores' rate in TFLOP/s (mma.sync, FP32 accumulation, no
 * memory traffic): BF16 m16n8k16 (fp8 = 0) or E4M3 m16n8k32; -1 on error.
 * For the benchmarks' rooflines. */
double dsv4_cuda_mma_rate(int fp8);
/* Reference numerics' FP8 linears on wgmma (wg8.cu, on = 1) or on mma.cu's F16
 * path (0). For the benchmarks. */
void dsv4_cuda_wg8_set(int on);
/* A prefill kernel's switch - "DSV4_MOE_WG" (the routed experts on wgmma), "DSV4_WGBF" (BF16 linears),
 * "DSV4_WGF8" (FP8 linears with unquantised activations), "DSV4_WG8_N64" (wg8.cu's 64-token tiles; 1 is
 * auto: they need enough blocks): -1 auto, 0 never, 1 every call it can take (the same bits either way);
 * "DSV4_LT" (lt.cu's cuBLASLt GEMM for steps of DSV4_LT_MIN tokens or more, other bits: -1 as be->lt_prefill
 * says, 0 never, 1 always). Starts from the environment variable of that name; returns the setting before (-2:
 * no such switch). For the tests. */
int dsv4_cuda_prefill_knob(const char *name, int value);
/* The GEMMs lt.cu (--prefill-gemm cublaslt) has launched in this process. For the tests. */
unsigned long dsv4_cuda_lt_calls(void);
/* Times a step grew the attention's or the indexer's working memory (CS_ROWS, CS_SCORES) in this process:
 * after an engine's work_reserve, none for steps within its limits (test_work_reserve). */
unsigned long dsv4_cuda_work_grows(void);
/* NCCL across CUDA backends on distinct GPUs, libnccl.so.2 loaded at run
 * time; NULL with a reason in err when it is missing or fails. */
dsv4_comm *dsv4_nccl_create(dsv4_backend **ranks, int n_ranks, char *err, size_t errlen);
#endif

#endif
