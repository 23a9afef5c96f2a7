/*
 * engine.h - the engine's internals shared by engine.c and forward.c.
 */
#ifndef DSV4_ENGINE_ENGINE_H
#define DSV4_ENGINE_ENGINE_H

#include "backend/backend.h"
#include "dsv4.h"
#include "engine/state.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/weights.h"

/* Activation scratch for one step of up to max_tok tokens (backend memory). */
typedef struct {
    int max_tok;
    float *X;       /* [T, hc, D] residual streams */
    float *u;       /* [T, D] collapsed input */
    float *h;       /* [T, D] normed input */
    float *post;    /* [T, hc] */
    float *comb;    /* [T, hc, hc] */
    float *qa;      /* [T, q_lora] */
    float *q;       /* [T, H*hd] queries, then attention output */
    float *o;       /* [T, H*hd] */
    float *kv;      /* [T, hd] */
    float *ca, *cg;   /* [T, 2*hd] the compressor's inputs (its projections of h) */
    float *ica, *icg; /* [T, 2*dI] the indexer compressor's */
    float *qi;      /* [T, nI*dI] */
    float *wi;      /* [T, nI] */
    int32_t *idx;   /* [T, topk] */
    int32_t *cnt;   /* [T] */
    float *z;       /* [T, G*o_lora] */
    float *y;       /* [T, D] block output */
    float *y2;      /* [T, D] */
    float *rl;      /* [T, E] router logits */
    int32_t *eidx;  /* [T, k] */
    float *ewts;    /* [T, k] */
    float *sg, *su; /* [T, inter] shared expert */
    float *logits;  /* [logit_rows, V] */
    int logit_rows;
    void **out_ptr; /* [T] host */
    int32_t *tokens; int64_t *pos; int32_t *tok_seg; /* plan arrays [T] */
    const dsv4_sample_req **req; /* [T] host: sample token t's logits on the device */
    int32_t *pick;               /* [T] host: what was picked */
    int *rows;                   /* [T] host: head rows to sample */
    int *gtok;                   /* [T] host: the token of each gathered head row */
    dsv4_sample_req *row_req;    /* [T] host */
    int32_t *row_tok;            /* [T] host */
} dsv4_scratch;

/* A submitted step not yet finished (dsv4_step_submit / dsv4_step_finish). */
typedef struct {
    bool wait; /* its picks are still on the device: sample_wait(slot, n), entry j's from row j */
    int slot;
    int n;                    /* entries whose picks it writes at finish */
    int *seq;                 /* [max_seqs] their sequences */
    struct dsv4_sample **out; /* [max_seqs] where their picks go, at finish */
    struct dsv4_sample *val;  /* [max_seqs] their picks until then */
    int64_t id;               /* its number (e->n_submitted when it was submitted) */
    dsv4_status st;           /* a step run whole at submit: its result */
    char err[256];
} dsv4_pending;

struct dsv4_engine {
    dsv4_config cfg;
    dsv4_quant_scheme quant;
    dsv4_numerics numerics;
    dsv4_st *st;
    dsv4_weights w;
    dsv4_backend *be;
    dsv4_kv kv;
    dsv4_scratch s;
    float *freqs_main;      /* [rope_dim/2] */
    float *freqs_compress;  /* [rope_dim/2] */
    int64_t max_batch_tokens;
    /* The config's sizes as far as a sequence can reach them (engine_reach): a longer window or top-k could
     * never be filled within max_ctx positions, and gives the same results capped. */
    int win_rows;           /* min(sliding_window, max_ctx): rows of each layer's window ring */
    int topk;               /* min(index_topk, the most compressed rows a CSA layer holds within max_ctx), at least 1 */
    float *host_logits;     /* [max_seqs, V] for host sampling without caller logits; lazily */
    /* --profile: milliseconds per op family, [0] decode steps, [1] prefill steps */
    bool profile;
    bool graphs;            /* decode steps replay graphs (CUDA) */
    /* submitted steps not yet finished, oldest first; per sequence its latest pick: the step that made it
     * (pick_step, 0: none), its value once known (pick_tok; -1 failed or not read yet), its row in that
     * step's launch while it is on the device (pick_row) */
    dsv4_pending pend[2];
    int n_pend;
    int64_t n_submitted;
    unsigned smp_launch; /* sample_launch's slot alternates */
    int64_t *pick_step;
    int32_t *pick_tok;
    int *pick_row;
    double prof_ms[2][DSV4_PROF_COUNT];
    int64_t prof_steps[2], prof_tokens[2];
};

/* A layer's routed experts as the backend's moe ops take them: the forward pass's and, at load, moe_prepare's
 * (the same weight arrays: the backend finds what it prepared by them). */
static inline dsv4_moe_params dsv4_layer_moe(const dsv4_config *c, const dsv4_layer_w *L, bool reference)
{
    return (dsv4_moe_params){.n_experts = c->n_routed_experts,
                             .k = c->n_experts_per_tok,
                             .dim = c->dim,
                             .inter = c->moe_inter_dim,
                             .swiglu_limit = (float)c->swiglu_limit,
                             .w1 = L->exp_w1,
                             .w3 = L->exp_w3,
                             .w2 = L->exp_w2,
                             .reference = reference};
}

/* GPUs the weights need without --ep (engine.c): 1, the fewest expert-parallel ranks whose share of total bytes
 * (experts of them routed experts, n_experts a layer) fits free_bytes less a reserve, 1 again when none does but
 * the weights alone fit, or 0. */
int dsv4_ep_ranks_needed(uint64_t total, uint64_t experts, int n_experts, int64_t free_bytes, int n_gpus);

/* Run the forward pass over `plan`; the logits of token t are written to the
 * host buffer out[t] ([V] floats) when out[t] is not NULL, and when req[t] is
 * not NULL the device samples token t's logits with it into pick[t] - or,
 * with slot >= 0, launches those picks into sample slot `slot` (rows in token
 * order, one launch: every read-out row fits the logits scratch) and returns
 * without them. */
void dsv4_forward(dsv4_engine *e, const dsv4_plan *plan, float *const *out, const dsv4_sample_req *const *req,
                  int32_t *pick, int slot);

/* The backend's work_reserve for every layer: what its indexer and attention allocate for a step of n_tok tokens at
 * positions below max_ctx, taken now (DSV4_OK where the backend has no such op). */
dsv4_status dsv4_forward_reserve(dsv4_engine *e, int n_tok, int64_t max_ctx);

#endif
