/*
 * engine.c - engine lifetime, the sequence state pool and the batch step.
 *
 * dsv4_engine_open loads config and checkpoint, binds the weights, creates the
 * backend and sizes every buffer once: the state slots, the page pool and the
 * activation scratch for the largest step. dsv4_step validates a batch,
 * reserves the pages it needs (all or nothing, before any state changes) and
 * runs the forward pass in sub-steps of at most max_batch_tokens tokens;
 * because prefill in chunks equals prefill in one piece, splitting is exact.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/cpu_ops.h"
#include "engine/engine.h"
#include "model/quant.h"
#include "model/synth.h"

void dsv4_engine_opts_default(dsv4_engine_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->backend = DSV4_BACKEND_AUTO;
    o->numerics = DSV4_NUMERICS_REFERENCE;
}

static const char *const moe_backend_names[] = {"auto", "w4a16", "w4a8", "w4a4"};

const char *dsv4_moe_backend_name(dsv4_moe_backend m)
{
    return (unsigned)m < 4 ? moe_backend_names[m] : "?";
}

int dsv4_moe_backend_parse(const char *s, dsv4_moe_backend *m)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, moe_backend_names[i])) {
            *m = (dsv4_moe_backend)i;
            return 0;
        }
    return -1;
}

int dsv4_prefill_gemm_parse(const char *s, dsv4_prefill_gemm *g)
{
    if (!strcmp(s, "ours"))
        *g = DSV4_PREFILL_OURS;
    else if (!strcmp(s, "cublaslt"))
        *g = DSV4_PREFILL_CUBLASLT;
    else
        return -1;
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int64_t lcm64(int64_t a, int64_t b)
{
    int64_t x = a, y = b;
    while (y) {
        int64_t t = x % y;
        x = y;
        y = t;
    }
    return a / x * b;
}

/* ---- state layout ------------------------------------------------------ */

/* Host memory the OS could give us now (MemAvailable). */
static int64_t host_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    long long kb = -1;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
        fclose(f);
    }
    return kb > 0 ? (int64_t)kb * 1024 : (int64_t)sysconf(_SC_AVPHYS_PAGES) * sysconf(_SC_PAGESIZE);
}

/* pool_tokens 0 with pool_bytes > 0: as many pages as pool_bytes holds after
 * the sequence slots, capped at every sequence at full context, at least one. */
static dsv4_status kv_init(dsv4_engine *e, int max_seqs, int max_snaps, int64_t max_ctx, int64_t pool_tokens,
                           int64_t pool_bytes, char *err, size_t errlen)
{
    const dsv4_config *c = &e->cfg;
    dsv4_kv *kv = &e->kv;
    int64_t P = 256;
    for (int l = 0; l < c->n_layers; l++)
        if (c->layer_ratio[l] > 0) P = lcm64(P, c->layer_ratio[l]);
    if (P > (1 << 20)) {
        snprintf(err, errlen, "compress ratios need a page of %lld tokens; refusing", (long long)P);
        return DSV4_ERR_UNSUPPORTED;
    }
    kv->max_seqs = max_seqs;
    kv->max_ctx = max_ctx;
    kv->page_tokens = (int)P;
    kv->max_pages_per_seq = (int)((max_ctx + P - 1) / P);
    kv->n_pages = (pool_tokens + P - 1) / P;
    kv->layer = calloc((size_t)c->n_layers, sizeof(dsv4_layer_state));
    if (!kv->layer) return DSV4_ERR_NOMEM;
    /* reference numerics caches BF16 values: stored as such where the backend reads them
     * (DSV4_KV_BF16=0: as FP32, for comparing the two) */
    const char *kb = getenv("DSV4_KV_BF16");
    kv->bf16_rows = e->numerics == DSV4_NUMERICS_REFERENCE && e->be->kv_bf16 && !(kb && !strcmp(kb, "0"));
    /* and its indexer keys are FP4 values: stored as codes and scales where the backend reads them
     * (DSV4_KV_FP4_KEYS=0: not, for comparing the two) */
    const char *fk = getenv("DSV4_KV_FP4_KEYS");
    kv->fp4_keys = e->numerics == DSV4_NUMERICS_REFERENCE && e->be->kv_fp4_keys && c->index_head_dim % 32 == 0 &&
                   dsv4_config_count_kind(c, DSV4_ATTN_CSA) > 0 && !(fk && !strcmp(fk, "0"));
    size_t so = 0, po = 0;
    const int hd = c->head_dim, dI = c->index_head_dim;
    const size_t rhd = dsv4_kv_row_floats(kv, hd);
    for (int l = 0; l < c->n_layers; l++) {
        dsv4_layer_state *ls = &kv->layer[l];
        int r = c->layer_ratio[l];
        ls->win = so;
        so += (size_t)e->win_rows * rhd;
        if (c->layer_kind[l] == DSV4_ATTN_CSA) {
            ls->cmp_rows = 2 * r;
            ls->cmp_kv = so;
            so += (size_t)2 * r * 2 * hd;
            ls->cmp_score = so;
            so += (size_t)2 * r * 2 * hd;
            ls->idx_kv = so;
            so += (size_t)2 * r * 2 * dI;
            ls->idx_score = so;
            so += (size_t)2 * r * 2 * dI;
            ls->pg_cmp = po;
            po += (size_t)(P / r) * rhd;
            ls->pg_idx = po;
            po += dsv4_kv_idx_floats(kv, (int)(P / r), dI);
        } else if (c->layer_kind[l] == DSV4_ATTN_HCA) {
            ls->cmp_rows = r;
            ls->cmp_kv = so;
            so += (size_t)r * hd;
            ls->cmp_score = so;
            so += (size_t)r * hd;
            ls->pg_cmp = po;
            po += (size_t)(P / r) * rhd;
        }
    }
    kv->slot_floats = so;
    kv->page_floats = po > 0 ? po : 1;
    if (pool_tokens <= 0) {
        const int64_t page_bytes = (int64_t)kv->page_floats * (int64_t)sizeof(float);
        const int64_t left = pool_bytes - (int64_t)(max_seqs + max_snaps) * (int64_t)so * (int64_t)sizeof(float);
        int64_t np = left > 0 ? left / page_bytes : 0;
        if (np > (int64_t)max_seqs * kv->max_pages_per_seq) np = (int64_t)max_seqs * kv->max_pages_per_seq;
        if (np < kv->max_pages_per_seq) np = kv->max_pages_per_seq;
        kv->n_pages = np;
    }
    kv->slots = e->be->alloc(e->be, (size_t)max_seqs * so * sizeof(float));
    kv->pages = e->be->alloc(e->be, (size_t)kv->n_pages * kv->page_floats * sizeof(float));
    kv->live = calloc((size_t)max_seqs, sizeof(bool));
    kv->len = calloc((size_t)max_seqs, sizeof(int64_t));
    kv->n_seq_pages = calloc((size_t)max_seqs, sizeof(int));
    kv->page_table = calloc((size_t)max_seqs * kv->max_pages_per_seq, sizeof(int32_t));
    kv->free_list = calloc((size_t)kv->n_pages, sizeof(int32_t));
    kv->page_ref = calloc((size_t)kv->n_pages, sizeof(int32_t));
    kv->page_owner = calloc((size_t)kv->n_pages, sizeof(int32_t));
    kv->page_sref = calloc((size_t)kv->n_pages, sizeof(int32_t));
    kv->max_snaps = max_snaps;
    if (max_snaps > 0) { /* snap_slots at the first snapshot: none is allocated where none is taken */
        kv->snap_live = calloc((size_t)max_snaps, sizeof(bool));
        kv->snap_len = calloc((size_t)max_snaps, sizeof(int64_t));
        kv->snap_pages = calloc((size_t)max_snaps * kv->max_pages_per_seq, sizeof(int32_t));
    }
    if (!kv->slots || !kv->pages || !kv->live || !kv->len || !kv->n_seq_pages || !kv->page_table || !kv->free_list ||
        !kv->page_ref || !kv->page_owner || !kv->page_sref ||
        (max_snaps > 0 && (!kv->snap_live || !kv->snap_len || !kv->snap_pages))) {
        snprintf(err, errlen,
                 "out of memory sizing the state pool (%d sequences, %d snapshots, %lld pages of %d "
                 "tokens)",
                 max_seqs, max_snaps, (long long)kv->n_pages, kv->page_tokens);
        return DSV4_ERR_NOMEM;
    }
    for (int64_t i = 0; i < kv->n_pages; i++) {
        kv->free_list[i] = (int32_t)(kv->n_pages - 1 - i);
        kv->page_owner[i] = -1;
    }
    kv->n_free = kv->n_pages;
    kv->pt_version = 1;
    return DSV4_OK;
}

static void kv_destroy(dsv4_engine *e)
{
    dsv4_kv *kv = &e->kv;
    if (e->be) {
        if (kv->slots) e->be->free(e->be, kv->slots);
        if (kv->pages) e->be->free(e->be, kv->pages);
        if (kv->snap_slots) e->be->free(e->be, kv->snap_slots);
    }
    free(kv->layer);
    free(kv->live);
    free(kv->len);
    free(kv->n_seq_pages);
    free(kv->page_table);
    free(kv->free_list);
    free(kv->page_ref);
    free(kv->page_owner);
    free(kv->page_sref);
    free(kv->snap_live);
    free(kv->snap_len);
    free(kv->snap_pages);
    memset(kv, 0, sizeof(*kv));
}

/* ---- what a sequence can reach ------------------------------------------ */

/* The window and the indexer's top-k as far as max_ctx positions reach them. A query at p sees the window rows
 * max(0, p - W + 1) .. p and, on a CSA layer of ratio r, picks the top k of its (p + 1) / r compressed rows, all
 * of them when k >= (p + 1) / r (transformers: topk(min(index_topk, n))). With p < max_ctx a window of max_ctx
 * rows sees every row a longer one would, and a top-k of max_ctx / r picks every row a larger one would: the
 * same rows in the same order, so the same results, from buffers sized by what can be used. */
static void engine_reach(dsv4_engine *e, int64_t max_ctx)
{
    const dsv4_config *c = &e->cfg;
    e->win_rows = c->window < max_ctx ? c->window : (int)max_ctx;
    int64_t rows = 0; /* the most compressed rows of any CSA layer */
    for (int l = 0; l < c->n_layers; l++)
        if (c->layer_kind[l] == DSV4_ATTN_CSA && max_ctx / c->layer_ratio[l] > rows) rows = max_ctx / c->layer_ratio[l];
    e->topk = c->index_topk < rows ? c->index_topk : (int)rows;
    if (e->topk < 1) e->topk = 1;
}

/* ---- scratch ------------------------------------------------------------ */

static dsv4_status scratch_init(dsv4_engine *e, int T)
{
    const dsv4_config *c = &e->cfg;
    dsv4_backend *be = e->be;
    dsv4_scratch *s = &e->s;
    const size_t D = (size_t)c->dim, hc = (size_t)c->hc_mult, H = (size_t)c->n_heads, hd = (size_t)c->head_dim;
    /* the indexer's buffers only where a CSA layer uses them: without one, no weight bounds their sizes */
    const bool csa = dsv4_config_count_kind(c, DSV4_ATTN_CSA) > 0;
    const size_t nI = csa ? (size_t)c->index_n_heads : 1, dI = csa ? (size_t)c->index_head_dim : 1;
    s->max_tok = T;
    s->logit_rows = (int)((64u << 20) / ((size_t)c->vocab_size * sizeof(float)));
    if (s->logit_rows < 1) s->logit_rows = 1;
    if (s->logit_rows > T) s->logit_rows = T;
#define A(ptr, n) ((ptr) = be->alloc(be, (size_t)(n) * sizeof(*(ptr))), (ptr) != NULL)
    bool ok = A(s->X, T * hc * D) && A(s->u, T * D) && A(s->h, T * D) && A(s->post, T * hc) &&
              A(s->comb, T * hc * hc) && A(s->qa, T * (size_t)c->q_lora_rank) && A(s->q, T * H * hd) &&
              A(s->o, T * H * hd) && A(s->kv, T * hd) && A(s->ca, T * 2 * hd) && A(s->cg, T * 2 * hd) &&
              A(s->ica, T * 2 * dI) && A(s->icg, T * 2 * dI) && A(s->qi, T * nI * dI) && A(s->wi, T * nI) &&
              A(s->idx, T * (size_t)e->topk) && A(s->cnt, T) && A(s->z, T * (size_t)c->o_groups * c->o_lora_rank) &&
              A(s->y, T * D) && A(s->y2, T * D) && A(s->rl, T * (size_t)c->n_routed_experts) &&
              A(s->eidx, T * (size_t)c->n_experts_per_tok) && A(s->ewts, T * (size_t)c->n_experts_per_tok) &&
              A(s->sg, T * (size_t)c->moe_inter_dim) && A(s->su, T * (size_t)c->moe_inter_dim) &&
              A(s->logits, (size_t)s->logit_rows * c->vocab_size);
#undef A
    s->tokens = calloc((size_t)T, sizeof(int32_t));
    s->pos = calloc((size_t)T, sizeof(int64_t));
    s->tok_seg = calloc((size_t)T, sizeof(int32_t));
    s->out_ptr = calloc((size_t)T, sizeof(void *));
    s->req = calloc((size_t)T, sizeof(*s->req));
    s->pick = calloc((size_t)T, sizeof(int32_t));
    s->rows = calloc((size_t)T, sizeof(int));
    s->gtok = calloc((size_t)T, sizeof(int));
    s->row_req = calloc((size_t)T, sizeof(dsv4_sample_req));
    s->row_tok = calloc((size_t)T, sizeof(int32_t));
    return ok && s->tokens && s->pos && s->tok_seg && s->out_ptr && s->req && s->pick && s->rows && s->gtok && s->row_req &&
                   s->row_tok
               ? DSV4_OK
               : DSV4_ERR_NOMEM;
}

static void scratch_destroy(dsv4_engine *e)
{
    dsv4_scratch *s = &e->s;
    if (e->be) {
        void *bufs[] = {s->X,  s->u,  s->h,   s->post, s->comb, s->qa, s->q,   s->o,     s->kv,
                        s->ca, s->cg, s->ica, s->icg,  s->qi,   s->wi, s->idx, s->cnt,   s->z,
                        s->y,  s->y2, s->rl,  s->eidx, s->ewts, s->sg, s->su,  s->logits};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            if (bufs[i]) e->be->free(e->be, bufs[i]);
    }
    free(s->tokens);
    free(s->pos);
    free(s->tok_seg);
    free(s->out_ptr);
    free(s->req);
    free(s->pick);
    free(s->rows);
    free(s->gtok);
    free(s->row_req);
    free(s->row_tok);
    memset(s, 0, sizeof(*s));
}

/* ---- open / close ------------------------------------------------------- */

/* --moe-backend: an explicit choice is honoured or refused, never replaced.
 * w4a16 (FP4 decoded in registers, activations at the numerics' precision)
 * runs everywhere; w4a8 (the FP4 codes as FP8 on FP8 tensor cores, the
 * activations' FP8 codes) on the CUDA backend for MXFP4 experts in reference
 * numerics, whose activations are FP8 codes already; w4a4 needs FP4 tensor
 * cores (Blackwell) and is not built yet. `auto` is w4a16. Sets be->moe_a8. */
static dsv4_status moe_backend_check(dsv4_moe_backend m, dsv4_backend *be, const dsv4_config *c, const dsv4_weights *w,
                                     dsv4_numerics numerics, char *err, size_t errlen)
{
    be->moe_a8 = false;
    if (m == DSV4_MOE_AUTO) return DSV4_OK;
    if (be->sm == 0) {
        snprintf(err, errlen, "--moe-backend %s: the CPU backend has one MoE path; use --moe-backend auto",
                 dsv4_moe_backend_name(m));
        return DSV4_ERR_UNSUPPORTED;
    }
    if (m == DSV4_MOE_W4A4 && be->sm < 100) {
        snprintf(err, errlen, "--moe-backend w4a4: %s has no FP4 tensor cores (they need sm_100a or sm_120a); "
                              "use --moe-backend auto or w4a16", be->device);
        return DSV4_ERR_UNSUPPORTED;
    }
    if (m == DSV4_MOE_W4A4) {
        snprintf(err, errlen,
                 "--moe-backend w4a4: this build has no w4a4 kernels yet for %s; use --moe-backend auto "
                 "or w4a16",
                 be->device);
        return DSV4_ERR_UNSUPPORTED;
    }
    if (m == DSV4_MOE_W4A8) {
        if (numerics != DSV4_NUMERICS_REFERENCE) {
            snprintf(err, errlen,
                     "--moe-backend w4a8: needs --numerics reference (its activations are the FP8 codes "
                     "reference numerics computes; plain numerics keeps them at FP32 precision)");
            return DSV4_ERR_UNSUPPORTED;
        }
        for (int i = 0; i < w->n_layers; i++) {
            const dsv4_w *e1 = w->layers[i].exp_w1;
            if (e1 && e1[0].fmt != DSV4_WF_MXFP4) {
                snprintf(err, errlen,
                         "--moe-backend w4a8: layer %d's experts are %s; the w4a8 kernels take MXFP4 "
                         "experts (use --moe-backend auto or w4a16)",
                         i, e1[0].fmt == DSV4_WF_NVFP4 ? "NVFP4" : "not FP4");
                return DSV4_ERR_UNSUPPORTED;
            }
        }
        const int kmax = be->moe_a8_kmax;
        if (c->dim % 128 || c->moe_inter_dim % 128 || c->dim > kmax || c->moe_inter_dim > kmax) {
            snprintf(err, errlen,
                     "--moe-backend w4a8: hidden size %d and expert width %d: the w4a8 kernels of %s take "
                     "multiples of 128 up to %d (a tile's activations stay in shared memory)",
                     c->dim, c->moe_inter_dim, be->device, kmax);
            return DSV4_ERR_UNSUPPORTED;
        }
        be->moe_a8 = true;
    }
    return DSV4_OK;
}

/* --prefill-gemm: cublaslt (reference numerics' FP8 linears in steps of many tokens through cuBLASLt) is
 * honoured or refused, never replaced: it needs reference numerics (it takes act_quant's FP8 codes) and a
 * backend whose lt_check accepts it (the CUDA one with libcublasLt 12.9 or later). Sets be->lt_prefill. */
static dsv4_status prefill_gemm_check(dsv4_prefill_gemm g, dsv4_backend *be, dsv4_numerics numerics, char *err,
                                      size_t errlen)
{
    be->lt_prefill = false;
    if (g == DSV4_PREFILL_OURS) return DSV4_OK;
    char why[256] = "";
    if (numerics != DSV4_NUMERICS_REFERENCE)
        snprintf(err, errlen,
                 "--prefill-gemm cublaslt: needs --numerics reference (its GEMM takes the FP8 codes "
                 "reference numerics computes)");
    else if (!be->lt_check)
        snprintf(err, errlen, "--prefill-gemm cublaslt: the %s backend has no cuBLASLt path (use --backend cuda)",
                 be->name);
    else if (!be->lt_check(be, why, sizeof why))
        snprintf(err, errlen, "--prefill-gemm cublaslt: %s", why);
    else {
        be->lt_prefill = true;
        return DSV4_OK;
    }
    return DSV4_ERR_UNSUPPORTED;
}

/* The kernel choices of the CUDA backends on GPU `device` (engine/tune.h):
 * --tune, else $DSV4_TUNE, else the built-in ones. Every choice gives the
 * same bits, so a file that cannot be used costs speed only: a warning. */
static void tune_apply(const dsv4_engine_opts *o, const char *device)
{
#ifdef DSV4_HAVE_CUDA
    const char *path = o->tune_file ? o->tune_file : getenv("DSV4_TUNE");
    dsv4_tune t;
    dsv4_tune_default(&t);
    if (path && *path) {
        char why[512];
        if (dsv4_tune_load(path, device, &t, why, sizeof why) != DSV4_OK) {
            fprintf(stderr, "dsv4: tuning file not used (%s); the built-in kernel choices apply\n", why);
            dsv4_tune_default(&t);
        } else if (o->verbose) {
            fprintf(stderr, "dsv4: kernel choices from %s\n", path);
        }
    }
    dsv4_cuda_tune_set(&t);
#else
    (void)o, (void)device;
#endif
}

/* --backend: cpu always works; cuda needs a build with the CUDA backend and a
 * supported GPU; auto takes the GPU when there is one and says so in one line. */
/* Expert parallelism over o->ep ranks of one device kind: CPU backends
 * sharing the cores, joined by the loopback; or CUDA backends, rank r on
 * GPU r mod (GPUs present), each with its own copy of the weights and its
 * own experts, joined by NCCL when every rank has a GPU of its own (else,
 * or without libnccl.so.2, by the loopback through host memory). */
static dsv4_status ep_choose(const dsv4_engine_opts *o, const dsv4_config *c, const dsv4_weights *w,
                             dsv4_backend **out, char *err, size_t errlen)
{
    if (o->ep > 16) {
        snprintf(err, errlen, "--ep %d: at most 16 ranks", o->ep);
        return DSV4_ERR_INVALID;
    }
    bool gpu = false;
    int n_gpu = 0;
#ifdef DSV4_HAVE_CUDA
    n_gpu = dsv4_cuda_device_count();
    gpu = o->backend != DSV4_BACKEND_CPU && n_gpu > 0 && c->hc_mult <= 16 && c->n_experts_per_tok <= 16 &&
          c->n_routed_experts <= 1024;
#else
    (void)c;
    (void)n_gpu;
#endif
    if (o->backend == DSV4_BACKEND_CUDA && !gpu) {
        snprintf(err, errlen, "--backend cuda --ep %d: no usable CUDA device in this build or machine; use "
                 "--backend cpu", o->ep);
        return DSV4_ERR_UNSUPPORTED;
    }
    dsv4_backend *ranks[16];
    const int th = o->n_threads > 0 ? o->n_threads / o->ep : 0;
    for (int r = 0; r < o->ep; r++) {
        char why[256] = "out of memory creating the CPU backend";
#ifdef DSV4_HAVE_CUDA
        ranks[r] = gpu ? dsv4_backend_cuda_create(r % n_gpu, why, sizeof why)
                       : dsv4_backend_cpu_create(th > 0 ? th : 1);
#else
        ranks[r] = dsv4_backend_cpu_create(th > 0 ? th : 1);
#endif
        if (!ranks[r]) {
            for (int q = 0; q < r; q++) ranks[q]->destroy(ranks[q]);
            snprintf(err, errlen, "expert-parallel rank %d: %s", r, why);
            return DSV4_ERR_NOMEM;
        }
    }
    dsv4_comm *comm = NULL;
    char why_comm[256] = "";
#ifdef DSV4_HAVE_CUDA
    const char *want = getenv("DSV4_EP_COMM"); /* "loopback": the host all-reduce even where NCCL would do */
    if (gpu && o->ep <= n_gpu && !(want && !strcmp(want, "loopback")))
        comm = dsv4_nccl_create(ranks, o->ep, why_comm, sizeof why_comm);
#endif
    if (!(*out = dsv4_backend_ep_create(ranks, o->ep, comm, w, err, errlen))) {
        if (comm) comm->destroy(comm);
        for (int r = 0; r < o->ep; r++) ranks[r]->destroy(ranks[r]);
        return DSV4_ERR_UNSUPPORTED;
    }
    if (gpu) tune_apply(o, ranks[0]->device);
    else if (o->tune_file) fprintf(stderr, "dsv4: --tune: the CPU backend has no tuned kernels; not used\n");
    if (why_comm[0]) /* ranks on GPUs of their own, but no NCCL: say why the collectives go through the host */
        fprintf(stderr, "dsv4: expert parallelism without NCCL (%s): the all-reduce goes through host memory\n",
                why_comm);
    if (o->verbose || o->backend == DSV4_BACKEND_AUTO) fprintf(stderr, "dsv4: %s\n", (*out)->device);
    return DSV4_OK;
}

/* How many GPUs the weights need when --ep is not given: 1 when all of them fit GPU 0's free memory less a reserve
 * for the activations and the KV pool (4 GiB, or 1/32 of the free memory if more), else the fewest ranks n (2 ..
 * n_gpus, at most 16) whose largest share fits - a rank holds every weight but the routed experts, and ceil(E / n)
 * experts of each layer (ep.c's split) - else 1 when the weights alone fit (the pool may still find room, as before
 * this rule), else 0: no split of the GPUs present holds them. */
int dsv4_ep_ranks_needed(uint64_t total, uint64_t experts, int n_experts, int64_t free_bytes, int n_gpus)
{
    const int64_t reserve = free_bytes / 32 > (4LL << 30) ? free_bytes / 32 : (4LL << 30);
    if ((int64_t)total + reserve <= free_bytes) return 1;
    for (int n = 2; n <= n_gpus && n <= 16 && n <= n_experts; n++) {
        const uint64_t share = experts / (uint64_t)n_experts * (uint64_t)((n_experts + n - 1) / n);
        if ((int64_t)(total - experts + share) + reserve <= free_bytes) return n;
    }
    return (int64_t)total <= free_bytes ? 1 : 0;
}

static dsv4_status backend_choose(const dsv4_engine_opts *o, const dsv4_config *c, const dsv4_weights *w,
                                  dsv4_backend **out, char *err, size_t errlen)
{
    *out = NULL;
    if (o->ep > 1) return ep_choose(o, c, w, out, err, errlen);
    if (o->backend == DSV4_BACKEND_CUDA || o->backend == DSV4_BACKEND_AUTO) {
#ifdef DSV4_HAVE_CUDA
        char why[256] = "";
        if (dsv4_cuda_device_count() > 0) {
            if (c->hc_mult > 16 || c->n_experts_per_tok > 16 || c->n_routed_experts > 1024)
                snprintf(why, sizeof why, "hc_mult, num_experts_per_tok or n_routed_experts exceed the CUDA "
                                          "backend's limits (16, 16, 1024)");
            else if ((*out = dsv4_backend_cuda_create(0, why, sizeof why)) != NULL) {
                /* weights larger than one GPU (the full Flash: ~145 GiB) and --ep not given: expert parallelism
                 * over as few GPUs as hold them, said on stderr; or a clear refusal now, not an out-of-memory
                 * error after most of the weights were read */
                const int64_t fr = o->ep == 0 && (*out)->mem_free ? (*out)->mem_free(*out) : 0;
                const int n_gpu = dsv4_cuda_device_count();
                const uint64_t ex = fr > 0 ? dsv4_weights_expert_bytes(w) : 0;
                const uint64_t wb = dsv4_weights_run_bytes(w); /* the MTP block stays in the checkpoint */
                const int need = fr > 0 ? dsv4_ep_ranks_needed(wb, ex, w->n_experts, fr, n_gpu) : 1;
                if (need != 1) {
                    (*out)->destroy(*out);
                    *out = NULL;
                    const double gib = 1073741824.0;
                    if (need == 0) {
                        snprintf(
                            err, errlen,
                            "the weights (%.1f GiB, %.1f of them routed experts) do not fit GPU 0 (%.1f GiB free), "
                            "nor split by expert parallelism over the %d GPU%s present (--ep N: each GPU holds "
                            "every weight but the routed experts, and 1/N of those)",
                            (double)wb / gib, (double)ex / gib, (double)fr / gib, n_gpu, n_gpu > 1 ? "s" : "");
                        return DSV4_ERR_NOMEM;
                    }
                    fprintf(stderr,
                            "dsv4: the weights (%.1f GiB) do not fit GPU 0 (%.1f GiB free): expert parallelism over "
                            "%d GPUs (--ep %d)\n",
                            (double)wb / gib, (double)fr / gib, need, need);
                    dsv4_engine_opts oe = *o;
                    oe.ep = need;
                    return ep_choose(&oe, c, w, out, err, errlen);
                }
                if (o->verbose || o->backend == DSV4_BACKEND_AUTO)
                    fprintf(stderr, "dsv4: backend cuda (GPU 0)\n");
                tune_apply(o, (*out)->device);
                return DSV4_OK;
            }
        } else {
            snprintf(why, sizeof why, "no CUDA device is available");
        }
        if (o->backend == DSV4_BACKEND_CUDA) {
            snprintf(err, errlen, "--backend cuda: %s; use --backend cpu", why);
            return DSV4_ERR_UNSUPPORTED;
        }
        if (o->verbose) fprintf(stderr, "dsv4: backend cpu (%s)\n", why);
#else
        if (o->backend == DSV4_BACKEND_CUDA) {
            snprintf(err, errlen, "--backend cuda: this build has no CUDA backend (no CUDA compiler at build "
                                  "time); use --backend cpu");
            return DSV4_ERR_UNSUPPORTED;
        }
#endif
    }
    *out = dsv4_backend_cpu_create(o->n_threads);
    if (!*out) {
        snprintf(err, errlen, "out of memory creating the CPU backend");
        return DSV4_ERR_NOMEM;
    }
    if (o->tune_file) fprintf(stderr, "dsv4: --tune: the CPU backend has no tuned kernels; not used\n");
    return DSV4_OK;
}

typedef struct {
    dsv4_backend *be;
    char *err;
    size_t errlen;
    uint64_t done, total; /* bytes */
    int bar;              /* draw a progress bar on stderr */
    int shown;            /* percent last drawn */
} load_ctx;

/* The backend's one-time work for each layer's routed experts (be->moe_prepare), with the parameters the
 * forward pass will pass (dsv4_layer_moe). */
static void moe_prepare_all(dsv4_engine *e)
{
    if (!e->be->moe_prepare) return;
    for (int l = 0; l < e->w.n_layers; l++) {
        const dsv4_layer_w *L = &e->w.layers[l];
        if (!L->exp_w1) continue;
        const dsv4_moe_params mp = dsv4_layer_moe(&e->cfg, L, e->numerics == DSV4_NUMERICS_REFERENCE);
        e->be->moe_prepare(e->be, &mp);
    }
}

static dsv4_status weight_load_one(void *vctx, dsv4_w *w)
{
    load_ctx *c = vctx;
    dsv4_status st = c->be->weight_load(c->be, w, c->err, c->errlen);
    c->done += dsv4_w_bytes(w);
    if (c->bar && c->total) {
        int pct = (int)(100 * c->done / c->total);
        if (pct != c->shown) {
            c->shown = pct;
            fprintf(stderr, "\rdsv4: loading weights [%-40.*s] %3d%% %.2f GiB", pct * 40 / 100,
                    "########################################", pct, c->done / 1073741824.0);
            if (pct == 100) fputc('\n', stderr);
        }
    }
    return st;
}

dsv4_status dsv4_engine_open(const dsv4_engine_opts *o, dsv4_engine **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!o || !o->model_dir) {
        snprintf(err, errlen, "no model directory given");
        return DSV4_ERR_INVALID;
    }
    dsv4_engine *e = calloc(1, sizeof(*e));
    if (!e) return DSV4_ERR_NOMEM;
    dsv4_status st;
    double t0 = now_s(), t1;
    e->numerics = o->numerics;
    if ((st = dsv4_config_load(o->model_dir, &e->cfg, err, errlen)) != DSV4_OK) goto fail;
    if (o->numerics == DSV4_NUMERICS_REFERENCE) {
        int dI = e->cfg.index_head_dim;
        if (dsv4_config_count_kind(&e->cfg, DSV4_ATTN_CSA) > 0 && (dI & (dI - 1)) != 0) {
            snprintf(err, errlen, "index_head_dim = %d: reference numerics need a power of two for the Hadamard "
                     "transform (use --numerics plain)", dI);
            st = DSV4_ERR_UNSUPPORTED;
            goto fail;
        }
    }
    if ((st = dsv4_st_open(o->model_dir, &e->st, err, errlen)) != DSV4_OK) goto fail;
    if ((st = dsv4_quant_scheme_load(o->model_dir, &e->quant, err, errlen)) != DSV4_OK) goto fail;
    if ((st = dsv4_weights_bind(&e->cfg, &e->quant, e->st, &e->w, err, errlen)) != DSV4_OK) goto fail;
    if (e->w.mtp_ignored[0])
        fprintf(stderr,
                "dsv4: warning: the checkpoint's MTP block is incomplete and is ignored (dsv4 does not run "
                "it): %s\n",
                e->w.mtp_ignored);
    /* mkmodel --sparse: refused without fill_random, else its holes are generated by the backend's weight_load */
    if ((st = dsv4_synth_attach(o->model_dir, e->st, o->fill_random != 0, &e->w, o->verbose, err, errlen)) != DSV4_OK)
        goto fail;
    t1 = now_s();
    if (o->verbose)
        fprintf(stderr, "dsv4: checkpoint %s: %d layers, %.1f MiB of weights bound in %.3f s\n", o->model_dir,
                e->cfg.n_layers, (double)e->w.bytes / (1 << 20), t1 - t0);

    if ((st = backend_choose(o, &e->cfg, &e->w, &e->be, err, errlen)) != DSV4_OK) goto fail;
    if ((st = moe_backend_check(o->moe_backend, e->be, &e->cfg, &e->w, e->numerics, err, errlen)) != DSV4_OK) goto fail;
    if ((st = prefill_gemm_check(o->prefill_gemm, e->be, e->numerics, err, errlen)) != DSV4_OK) goto fail;
    /* Reference numerics quantise activations to FP8 per 128 in front of
     * FP8 and FP4 linears, as the reference's act_quant does. */
    e->be->act_quant = e->numerics == DSV4_NUMERICS_REFERENCE;
    e->profile = o->profile && e->be->prof_mark && e->be->prof_collect;
    e->graphs = !o->no_graphs && e->be->graph_begin && e->be->graph_end; /* not while profiling */
    /* the backend's copy of the weights (device backends upload them here) */
    double tl = now_s();
    load_ctx lc = {.be = e->be,
                   .err = err,
                   .errlen = errlen,
                   .total = dsv4_weights_run_bytes(&e->w),
                   .shown = -1,
                   .bar = o->verbose && isatty(2) && e->be->sm > 0};
    /* not the MTP block: bound and checked above, but dsv4 does not run it */
    if ((st = dsv4_weights_foreach_run(&e->w, weight_load_one, &lc)) != DSV4_OK) goto fail;
    if (o->verbose && e->be->sm > 0) {
        double dt = now_s() - tl;
        fprintf(stderr, "dsv4: %.2f GiB of weights to %s in %.2f s (%.1f GB/s)\n", lc.done / 1073741824.0,
                e->be->device, dt, dt > 0 ? lc.done / dt / 1e9 : 0.0);
    }
    moe_prepare_all(e); /* after the figure above: the copies alone */

    const dsv4_config *c = &e->cfg;
    int half = c->rope_dim / 2;
    e->freqs_main = e->be->alloc(e->be, (size_t)half * sizeof(float));
    e->freqs_compress = e->be->alloc(e->be, (size_t)half * sizeof(float));
    float *tmp = malloc((size_t)half * sizeof(float));
    if (!e->freqs_main || !e->freqs_compress || !tmp) {
        free(tmp);
        st = DSV4_ERR_NOMEM;
        goto fail;
    }
    const dsv4_rope_cfg *rm = &c->rope_main, *rc = &c->rope_compress;
    dsv4_rope_freqs(rm->theta, c->rope_dim, rm->yarn, rm->factor, rm->orig_max_pos, rm->beta_fast, rm->beta_slow, tmp);
    e->be->upload(e->be, e->freqs_main, tmp, (size_t)half * sizeof(float));
    dsv4_rope_freqs(rc->theta, c->rope_dim, rc->yarn, rc->factor, rc->orig_max_pos, rc->beta_fast, rc->beta_slow, tmp);
    e->be->upload(e->be, e->freqs_compress, tmp, (size_t)half * sizeof(float));
    free(tmp);

    int max_seqs = o->max_seqs > 0 ? o->max_seqs : 16;
    int64_t max_ctx = o->max_ctx > 0 ? o->max_ctx : 4096;
    if (max_ctx > c->max_position_embeddings) max_ctx = c->max_position_embeddings;
    e->max_batch_tokens = o->max_batch_tokens > 0 ? o->max_batch_tokens : 2048;
    engine_reach(e, max_ctx);
    /* activations first: a pool sized from free memory comes out of what they leave */
    if ((st = scratch_init(e, (int)e->max_batch_tokens)) != DSV4_OK) {
        snprintf(err, errlen, "out of memory allocating activations for %lld tokens per step",
                 (long long)e->max_batch_tokens);
        goto fail;
    }
    /* and the working memory the attention and the indexer grow with the context, at its largest */
    const int64_t free0 = o->verbose && e->be->mem_free && e->be->work_reserve ? e->be->mem_free(e->be) : -1;
    if ((st = dsv4_forward_reserve(e, (int)e->max_batch_tokens, max_ctx)) != DSV4_OK) {
        snprintf(err, errlen,
                 "out of memory reserving the attention's working memory for %lld tokens a step at a context of %lld "
                 "(a smaller context or fewer tokens a step need less)",
                 (long long)e->max_batch_tokens, (long long)max_ctx);
        goto fail;
    }
    if (free0 >= 0)
        fprintf(stderr,
                "dsv4: %.2f GiB of working memory for the attention and the indexer (%lld tokens a step to a "
                "context of %lld)\n",
                (double)(free0 - e->be->mem_free(e->be)) / 1073741824.0, (long long)e->max_batch_tokens,
                (long long)max_ctx);
    int64_t pool_tokens = o->pool_tokens, pool_bytes = 0;
    if (pool_tokens <= 0 && o->pool_fraction > 0) {
        int64_t fr =
            e->be->mem_free ? e->be->mem_free(e->be) : host_mem_available() - (int64_t)dsv4_weights_run_bytes(&e->w);
        pool_bytes = (int64_t)((double)(fr > 0 ? fr : 0) * o->pool_fraction);
        if (o->ep > 1 && !e->be->mem_free) pool_bytes /= o->ep; /* CPU ranks share host memory, each holds the state */
        if (o->verbose)
            fprintf(stderr, "dsv4: KV pool from %.2f of %.2f GiB free (%s)\n", o->pool_fraction,
                    (double)fr / 1073741824.0, e->be->mem_free ? e->be->device : "host memory less the checkpoint");
    } else {
        if (pool_tokens <= 0) pool_tokens = max_ctx * max_seqs / 2;
        if (pool_tokens < max_ctx) pool_tokens = max_ctx;
    }
    const int max_snaps = o->max_snaps > 0 ? o->max_snaps : 0;
    if ((st = kv_init(e, max_seqs, max_snaps, max_ctx, pool_tokens, pool_bytes, err, errlen)) != DSV4_OK) goto fail;
    e->pick_step = calloc((size_t)max_seqs, sizeof(int64_t));
    e->pick_tok = calloc((size_t)max_seqs, sizeof(int32_t));
    e->pick_row = calloc((size_t)max_seqs, sizeof(int));
    bool pend_ok = e->pick_step && e->pick_tok && e->pick_row;
    for (int k = 0; k < 2; k++) {
        dsv4_pending *p = &e->pend[k];
        p->seq = calloc((size_t)max_seqs, sizeof(int));
        p->out = calloc((size_t)max_seqs, sizeof(*p->out));
        p->val = calloc((size_t)max_seqs, sizeof(*p->val));
        pend_ok = pend_ok && p->seq && p->out && p->val;
    }
    if (!pend_ok) {
        snprintf(err, errlen, "out of memory for the bookkeeping of %d sequences", max_seqs);
        st = DSV4_ERR_NOMEM;
        goto fail;
    }
    if (o->verbose)
        fprintf(stderr, "dsv4: backend %s, numerics %s, %d sequences x %lld tokens, %lld pages of %d tokens "
                "(%.1f KiB, cached rows %s%s), ready in %.3f s\n", e->be->name,
                e->numerics == DSV4_NUMERICS_PLAIN ? "plain" : "reference", max_seqs, (long long)max_ctx,
                (long long)e->kv.n_pages, e->kv.page_tokens, (double)e->kv.page_floats * sizeof(float) / 1024.0,
                e->kv.bf16_rows ? "BF16" : "FP32", e->kv.fp4_keys ? ", indexer keys FP4" : "", now_s() - t0);
    *out = e;
    return DSV4_OK;
fail:
    dsv4_engine_close(e);
    return st;
}

void dsv4_engine_close(dsv4_engine *e)
{
    if (!e) return;
    free(e->host_logits);
    free(e->pick_step);
    free(e->pick_tok);
    free(e->pick_row);
    for (int k = 0; k < 2; k++) {
        free(e->pend[k].seq);
        free(e->pend[k].out);
        free(e->pend[k].val);
    }
    scratch_destroy(e);
    kv_destroy(e);
    if (e->be) {
        if (e->freqs_main) e->be->free(e->be, e->freqs_main);
        if (e->freqs_compress) e->be->free(e->be, e->freqs_compress);
        e->be->destroy(e->be);
    }
    dsv4_weights_free(&e->w);
    dsv4_st_close(e->st);
    free(e);
}

void dsv4_engine_info(const dsv4_engine *e, dsv4_model_info *info)
{
    info->vocab_size = e->cfg.vocab_size;
    info->n_layers = e->cfg.n_layers;
    info->hidden = e->cfg.dim;
    info->max_ctx = e->kv.max_ctx;
    info->max_seqs = e->kv.max_seqs;
    info->bos_id = e->cfg.bos_token_id;
    info->eos_id = e->cfg.eos_token_id;
    info->backend = e->be->name;
    info->kv_page_bytes = (int64_t)e->kv.page_floats * (int64_t)sizeof(float);
    info->kv_bf16_rows = e->kv.bf16_rows;
    info->kv_fp4_keys = e->kv.fp4_keys;
    info->state_slot_bytes = (int64_t)e->kv.slot_floats * (int64_t)sizeof(float);
    info->max_snaps = e->kv.max_snaps;
}

/* ---- sequences ---------------------------------------------------------- */

static int seq_reset_state(dsv4_engine *e, int slot)
{
    /* kv rows 0 and scores -inf: an empty previous window weighs nothing. */
    const dsv4_config *c = &e->cfg;
    dsv4_kv *kv = &e->kv;
    float *base = kv->slots + (size_t)slot * kv->slot_floats;
    float *tmp = calloc(kv->slot_floats, sizeof(float));
    if (!tmp) return -1;
    for (int l = 0; l < c->n_layers; l++) {
        const dsv4_layer_state *ls = &kv->layer[l];
        size_t w = c->layer_kind[l] == DSV4_ATTN_CSA ? 2 * (size_t)c->head_dim : (size_t)c->head_dim;
        if (c->layer_kind[l] == DSV4_ATTN_SLIDING) continue;
        for (size_t i = 0; i < (size_t)ls->cmp_rows * w; i++) tmp[ls->cmp_score + i] = -INFINITY;
        if (c->layer_kind[l] == DSV4_ATTN_CSA)
            for (size_t i = 0; i < (size_t)ls->cmp_rows * 2 * c->index_head_dim; i++) tmp[ls->idx_score + i] = -INFINITY;
    }
    e->be->upload(e->be, base, tmp, kv->slot_floats * sizeof(float));
    free(tmp);
    return 0;
}

/* A free sequence slot, its state reset unless the caller overwrites it. */
static dsv4_status seq_claim(dsv4_engine *e, bool reset, int *seq, char *err, size_t errlen)
{
    for (int s = 0; s < e->kv.max_seqs; s++)
        if (!e->kv.live[s]) {
            if (reset && seq_reset_state(e, s)) {
                snprintf(err, errlen, "out of memory");
                return DSV4_ERR_NOMEM;
            }
            e->kv.live[s] = true;
            e->kv.len[s] = 0;
            e->pick_step[s] = 0;
            e->kv.n_seq_pages[s] = 0;
            *seq = s;
            return DSV4_OK;
        }
    snprintf(err, errlen, "all %d sequence slots are in use", e->kv.max_seqs);
    return DSV4_ERR_NOMEM;
}

dsv4_status dsv4_seq_create(dsv4_engine *e, int *seq, char *err, size_t errlen)
{
    return seq_claim(e, true, seq, err, errlen);
}

/* A page from the free list for owner (a sequence, or -1: a snapshot's own copy). */
static int32_t page_take(dsv4_kv *kv, int owner)
{
    const int32_t pg = kv->free_list[--kv->n_free];
    kv->page_ref[pg] = 1;
    kv->page_sref[pg] = owner >= 0;
    kv->page_owner[pg] = owner;
    if (owner < 0) kv->n_shared++, kv->n_cached++;
    return pg;
}

/* One more table holds page pg: a sequence's (by_seq) or a snapshot's. */
static void page_hold(dsv4_kv *kv, int32_t pg, bool by_seq)
{
    kv->page_ref[pg]++;
    if (by_seq && kv->page_sref[pg]++ == 0) kv->n_cached--;
}

/* A table's reference to page pg dropped; holder is the sequence whose table it was (-1: a snapshot's). */
static void page_drop(dsv4_kv *kv, int32_t pg, int holder)
{
    const bool owned = holder >= 0 && kv->page_owner[pg] == holder;
    if (owned) kv->page_owner[pg] = -1;
    if (holder >= 0) kv->page_sref[pg]--;
    if (--kv->page_ref[pg] == 0) {
        if (!owned) kv->n_shared--;
        if (holder < 0) kv->n_cached--;
        kv->free_list[kv->n_free++] = pg;
    } else {
        if (owned) kv->n_shared++; /* others still hold it; nobody owns it now */
        if (holder >= 0 && kv->page_sref[pg] == 0) kv->n_cached++;
    }
}

void dsv4_seq_free(dsv4_engine *e, int seq)
{
    dsv4_kv *kv = &e->kv;
    if (seq < 0 || seq >= kv->max_seqs || !kv->live[seq]) return;
    for (int i = 0; i < kv->n_seq_pages[seq]; i++)
        page_drop(kv, kv->page_table[(size_t)seq * kv->max_pages_per_seq + i], seq);
    kv->n_seq_pages[seq] = 0;
    kv->live[seq] = false;
}

int64_t dsv4_seq_len(const dsv4_engine *e, int seq)
{
    if (seq < 0 || seq >= e->kv.max_seqs || !e->kv.live[seq]) return -1;
    return e->kv.len[seq];
}

/* Pages sequence seq needs to hold `end` positions, beyond those it has. */
static int64_t seq_pages_short(const dsv4_kv *kv, int seq, int64_t end)
{
    return (end + kv->page_tokens - 1) / kv->page_tokens - kv->n_seq_pages[seq];
}

/* Give sequence seq the pages for `end` positions (seq_pages_short of them are free). */
static void seq_take_pages(dsv4_kv *kv, int seq, int64_t end)
{
    int64_t k = seq_pages_short(kv, seq, end);
    if (k > 0) kv->pt_version++;
    for (; k > 0; k--)
        kv->page_table[(size_t)seq * kv->max_pages_per_seq + kv->n_seq_pages[seq]++] = page_take(kv, seq);
}

dsv4_status dsv4_seq_skip(dsv4_engine *e, int seq, int64_t n, char *err, size_t errlen)
{
    dsv4_kv *kv = &e->kv;
    if (seq < 0 || seq >= kv->max_seqs || !kv->live[seq] || n < 0) {
        snprintf(err, errlen, "seq_skip: no sequence %d, or a negative count", seq);
        return DSV4_ERR_INVALID;
    }
    const int64_t end = kv->len[seq] + n;
    if (end > kv->max_ctx) {
        snprintf(err, errlen, "seq_skip: sequence %d would reach %lld tokens, over the context limit of %lld", seq,
                 (long long)end, (long long)kv->max_ctx);
        return DSV4_ERR_INVALID;
    }
    if (seq_pages_short(kv, seq, end) > kv->n_free) {
        snprintf(err, errlen, "seq_skip: the state pool is full: %lld more pages needed, %lld free",
                 (long long)seq_pages_short(kv, seq, end), (long long)kv->n_free);
        return DSV4_ERR_NOMEM;
    }
    const dsv4_config *c = &e->cfg;
    uint8_t *sc = NULL; /* FP4 indexer keys: the fill's bytes are fine codes, but their scales get 2^-3 .. 2^0 */
    size_t n_sc = 0;
    if (kv->fp4_keys)
        for (int l = 0; l < c->n_layers; l++)
            if (c->layer_kind[l] == DSV4_ATTN_CSA) {
                const size_t nl = (size_t)(kv->page_tokens / c->layer_ratio[l]) * (size_t)(c->index_head_dim / 32);
                n_sc = nl > n_sc ? nl : n_sc;
            }
    if (n_sc && !(sc = malloc(n_sc))) {
        snprintf(err, errlen, "seq_skip: out of memory");
        return DSV4_ERR_NOMEM;
    }
    const int64_t p0 = kv->n_seq_pages[seq];
    seq_take_pages(kv, seq, end);
    /* the pages taken get benchmark contents, seeded by their place in the sequence (not by which
     * pages they are): a page that already held earlier positions keeps its rows */
    for (int64_t p = p0; p < kv->n_seq_pages[seq]; p++) {
        const int32_t pg = kv->page_table[(size_t)seq * kv->max_pages_per_seq + p];
        float *page = kv->pages + (size_t)pg * kv->page_floats;
        e->be->fill(e->be, page, kv->page_floats, 0x5eed0000ull + (uint64_t)p);
        for (size_t i = 0; i < n_sc; i++) sc[i] = dsv4_fill_e8m0(0x5eed0000ull + (uint64_t)p, i);
        for (int l = 0; sc && l < c->n_layers; l++) { /* the page's scales, the same bytes for every CSA layer */
            if (c->layer_kind[l] != DSV4_ATTN_CSA) continue;
            const size_t rows = (size_t)(kv->page_tokens / c->layer_ratio[l]), ns = rows * (size_t)(c->index_head_dim / 32);
            e->be->upload(e->be, (uint8_t *)(page + kv->layer[l].pg_idx) + rows * (size_t)(c->index_head_dim / 2), sc, ns);
        }
    }
    free(sc);
    kv->len[seq] = end;
    return DSV4_OK;
}

int64_t dsv4_pages_free(const dsv4_engine *e) { return e->kv.n_free; }
int64_t dsv4_pages_total(const dsv4_engine *e) { return e->kv.n_pages; }
int dsv4_page_tokens(const dsv4_engine *e) { return e->kv.page_tokens; }
int64_t dsv4_pages_shared(const dsv4_engine *e)
{
    return e->kv.n_shared;
}
int64_t dsv4_pages_cached(const dsv4_engine *e)
{
    return e->kv.n_cached;
}

/* ---- snapshots ---------------------------------------------------------- */

int dsv4_snap_max(const dsv4_engine *e)
{
    return e->kv.max_snaps;
}

int64_t dsv4_snap_len(const dsv4_engine *e, int snap)
{
    if (snap < 0 || snap >= e->kv.max_snaps || !e->kv.snap_live[snap]) return -1;
    return e->kv.snap_len[snap];
}

/* Pages holding positions [0, len). */
static int64_t pages_of(const dsv4_kv *kv, int64_t len)
{
    return (len + kv->page_tokens - 1) / kv->page_tokens;
}

static float *slot_at(dsv4_kv *kv, float *base, int k)
{
    return base + (size_t)k * kv->slot_floats;
}
static float *page_at(dsv4_kv *kv, int32_t pg)
{
    return kv->pages + (size_t)pg * kv->page_floats;
}

/* Table dst takes the pages of table src that hold positions [0, len): the whole ones by reference, a last,
 * partly filled one as a copy of its own (its holder writes on in it, or the original's does) - for holder, a
 * sequence, or -1 for a snapshot. */
static void pages_refer(dsv4_engine *e, const int32_t *src, int32_t *dst, int64_t len, int holder)
{
    dsv4_kv *kv = &e->kv;
    const int64_t np = pages_of(kv, len);
    for (int64_t i = 0; i < np; i++) {
        int32_t pg = src[i];
        if (i == np - 1 && len % kv->page_tokens) {
            const int32_t q = page_take(kv, holder);
            e->be->copy(e->be, page_at(kv, q), page_at(kv, pg), kv->page_floats * sizeof(float));
            pg = q;
        } else {
            page_hold(kv, pg, holder >= 0);
        }
        dst[i] = pg;
    }
}

/* A free snapshot slot (*k) for sequence seq's state, the sequence's fixed state copied into it. */
static dsv4_status snap_begin(dsv4_engine *e, int seq, bool need_page, int *k, char *err, size_t errlen)
{
    dsv4_kv *kv = &e->kv;
    if (seq < 0 || seq >= kv->max_seqs || !kv->live[seq] || kv->len[seq] <= 0) {
        snprintf(err, errlen, "snapshot: no sequence %d, or it is empty", seq);
        return DSV4_ERR_INVALID;
    }
    *k = 0;
    while (*k < kv->max_snaps && kv->snap_live[*k]) ++*k;
    if (*k == kv->max_snaps) {
        snprintf(err, errlen, "snapshot: all %d snapshot slots are in use", kv->max_snaps);
        return DSV4_ERR_NOMEM;
    }
    if (need_page && kv->len[seq] % kv->page_tokens && kv->n_free == 0) {
        snprintf(err, errlen, "snapshot: the state pool has no free page for the last, partly filled one");
        return DSV4_ERR_NOMEM;
    }
    if (!kv->snap_slots &&
        !(kv->snap_slots = e->be->alloc(e->be, (size_t)kv->max_snaps * kv->slot_floats * sizeof(float)))) {
        snprintf(err, errlen, "snapshot: out of memory for %d snapshots of %.1f MiB", kv->max_snaps,
                 (double)kv->slot_floats * sizeof(float) / 1048576.0);
        return DSV4_ERR_NOMEM;
    }
    e->be->copy(e->be, slot_at(kv, kv->snap_slots, *k), slot_at(kv, kv->slots, seq), kv->slot_floats * sizeof(float));
    return DSV4_OK;
}

dsv4_status dsv4_snap_save(dsv4_engine *e, int seq, int *snap, char *err, size_t errlen)
{
    dsv4_kv *kv = &e->kv;
    int k;
    const dsv4_status st = snap_begin(e, seq, true, &k, err, errlen);
    if (st != DSV4_OK) return st;
    const int64_t len = kv->len[seq];
    pages_refer(e, kv->page_table + (size_t)seq * kv->max_pages_per_seq,
                kv->snap_pages + (size_t)k * kv->max_pages_per_seq, len, -1);
    kv->snap_live[k] = true;
    kv->snap_len[k] = len;
    *snap = k;
    return DSV4_OK;
}

dsv4_status dsv4_seq_to_snap(dsv4_engine *e, int seq, int *snap, char *err, size_t errlen)
{
    dsv4_kv *kv = &e->kv;
    int k;
    const dsv4_status st = snap_begin(e, seq, false, &k, err, errlen);
    if (st != DSV4_OK) return st;
    const int64_t len = kv->len[seq], np = pages_of(kv, len);
    for (int64_t i = 0; i < kv->n_seq_pages[seq]; i++) {
        const int32_t pg = kv->page_table[(size_t)seq * kv->max_pages_per_seq + i];
        if (i >= np) { /* none is taken beyond the positions absorbed; dropped if one were */
            page_drop(kv, pg, seq);
            continue;
        }
        if (kv->page_owner[pg] == seq) { /* the sequence's reference becomes the snapshot's */
            kv->page_owner[pg] = -1;
            kv->n_shared++;
        }
        if (--kv->page_sref[pg] == 0) kv->n_cached++;
        kv->snap_pages[(size_t)k * kv->max_pages_per_seq + i] = pg;
    }
    kv->n_seq_pages[seq] = 0;
    kv->live[seq] = false;
    kv->snap_live[k] = true;
    kv->snap_len[k] = len;
    *snap = k;
    return DSV4_OK;
}

dsv4_status dsv4_seq_from_snap(dsv4_engine *e, int snap, int *seq, char *err, size_t errlen)
{
    dsv4_kv *kv = &e->kv;
    if (snap < 0 || snap >= kv->max_snaps || !kv->snap_live[snap]) {
        snprintf(err, errlen, "no snapshot %d", snap);
        return DSV4_ERR_INVALID;
    }
    const int64_t len = kv->snap_len[snap], np = pages_of(kv, len);
    const bool partial = len % kv->page_tokens != 0;
    if (partial && kv->n_free == 0) {
        snprintf(err, errlen, "the state pool has no free page for the snapshot's last, partly filled one");
        return DSV4_ERR_NOMEM;
    }
    int s;
    dsv4_status st = seq_claim(e, false, &s, err, errlen);
    if (st != DSV4_OK) return st;
    e->be->copy(e->be, slot_at(kv, kv->slots, s), slot_at(kv, kv->snap_slots, snap), kv->slot_floats * sizeof(float));
    pages_refer(e, kv->snap_pages + (size_t)snap * kv->max_pages_per_seq,
                kv->page_table + (size_t)s * kv->max_pages_per_seq, len, s);
    kv->n_seq_pages[s] = (int)np;
    kv->len[s] = len;
    kv->pt_version++;
    *seq = s;
    return DSV4_OK;
}

void dsv4_snap_free(dsv4_engine *e, int snap)
{
    dsv4_kv *kv = &e->kv;
    if (snap < 0 || snap >= kv->max_snaps || !kv->snap_live[snap]) return;
    const int64_t np = pages_of(kv, kv->snap_len[snap]);
    for (int64_t i = 0; i < np; i++) page_drop(kv, kv->snap_pages[(size_t)snap * kv->max_pages_per_seq + i], -1);
    kv->snap_live[snap] = false;
}

/* ---- the batch step ----------------------------------------------------- */

/* ---- steps ---------------------------------------------------------------- */

/* A submitted step's picks on the host: waited for if they are still on the device (into p->val, each
 * sequence's pick recorded for what follows it); a failed pick makes the step's result DSV4_ERR_STATE. */
static void pend_collect(dsv4_engine *e, dsv4_pending *p)
{
    if (!p->wait) return;
    int32_t tok[p->n > 0 ? p->n : 1];
    e->be->sample_wait(e->be, p->slot, p->n, tok);
    p->wait = false;
    for (int i = 0; i < p->n; i++) {
        const int32_t t = tok[i];
        memset(&p->val[i], 0, sizeof p->val[i]);
        p->val[i].token = t;
        if (e->pick_step[p->seq[i]] == p->id) e->pick_tok[p->seq[i]] = t;
        if (t < 0 && p->st == DSV4_OK) {
            snprintf(p->err, sizeof p->err, "sequence %d: no finite logit to sample from", p->seq[i]);
            p->st = DSV4_ERR_STATE;
        }
    }
}

/* Every submitted step's picks on the host (the steps stay listed for dsv4_step_finish). */
static void pend_settle(dsv4_engine *e)
{
    for (int k = 0; k < e->n_pend; k++) pend_collect(e, &e->pend[k]);
}

int dsv4_steps_in_flight(const dsv4_engine *e)
{
    return e->n_pend;
}

dsv4_status dsv4_step_finish(dsv4_engine *e, char *err, size_t errlen)
{
    if (!e->n_pend) {
        snprintf(err, errlen, "no step in flight to finish");
        return DSV4_ERR_INVALID;
    }
    dsv4_pending *p = &e->pend[0];
    pend_collect(e, p);
    for (int i = 0; i < p->n; i++) *p->out[i] = p->val[i]; /* the samples are the caller's only now */
    const dsv4_status st = p->st;
    if (st != DSV4_OK) snprintf(err, errlen, "%s", p->err);
    /* the second record moves to the front (its arrays with it) */
    const dsv4_pending t = e->pend[0];
    e->pend[0] = e->pend[1];
    e->pend[1] = t;
    e->n_pend--;
    return st;
}

dsv4_status dsv4_step(dsv4_engine *e, dsv4_batch_entry *en, int n_en, char *err, size_t errlen)
{
    if (e->n_pend) {
        snprintf(err, errlen, "%d submitted step(s) not finished: dsv4_step_finish first", e->n_pend);
        return DSV4_ERR_INVALID;
    }
    const dsv4_status st = dsv4_step_submit(e, en, n_en, err, errlen);
    return st != DSV4_OK ? st : dsv4_step_finish(e, err, errlen);
}

dsv4_status dsv4_step_submit(dsv4_engine *e, dsv4_batch_entry *en, int n_en, char *err, size_t errlen)
{
    dsv4_kv *kv = &e->kv;
    const int V = e->cfg.vocab_size;
    if (e->n_pend == 2) {
        snprintf(err, errlen, "two steps are in flight: dsv4_step_finish one first");
        return DSV4_ERR_INVALID;
    }
    int64_t need_pages = 0;
    bool feed_dev = false; /* an entry follows a pick still on the device */
    for (int i = 0; i < n_en; i++) {
        int s = en[i].seq;
        if (s < 0 || s >= kv->max_seqs || !kv->live[s]) {
            snprintf(err, errlen, "batch entry %d: sequence %d does not exist", i, s);
            return DSV4_ERR_INVALID;
        }
        for (int j = 0; j < i; j++)
            if (en[j].seq == s) {
                snprintf(err, errlen, "batch entry %d: sequence %d appears twice in one step", i, s);
                return DSV4_ERR_INVALID;
            }
        if (en[i].follow) {
            if (en[i].n_tokens != 1) {
                snprintf(err, errlen, "batch entry %d: a follow entry appends one token, not %d", i, en[i].n_tokens);
                return DSV4_ERR_INVALID;
            }
            if (e->pick_step[s] == 0 || e->pick_step[s] != e->n_submitted) {
                snprintf(err, errlen, "batch entry %d: sequence %d has no pick from the step before to follow", i, s);
                return DSV4_ERR_INVALID;
            }
            bool known = true;
            for (int k = 0; k < e->n_pend; k++) known &= !(e->pend[k].wait && e->pend[k].id == e->pick_step[s]);
            if (known && e->pick_tok[s] < 0) {
                snprintf(err, errlen, "batch entry %d: sequence %d's last sample failed; nothing to follow", i, s);
                return DSV4_ERR_INVALID;
            }
            feed_dev |= !known;
        } else {
            if (en[i].n_tokens < 1 || !en[i].tokens) {
                snprintf(err, errlen, "batch entry %d: no tokens", i);
                return DSV4_ERR_INVALID;
            }
            for (int t = 0; t < en[i].n_tokens; t++)
                if (en[i].tokens[t] < 0 || en[i].tokens[t] >= V) {
                    snprintf(err, errlen, "batch entry %d: token %d = %d is outside the vocabulary (0..%d)", i, t,
                             en[i].tokens[t], V - 1);
                    return DSV4_ERR_INVALID;
                }
        }
        int64_t end = kv->len[s] + en[i].n_tokens;
        if (end > kv->max_ctx) {
            snprintf(err, errlen, "sequence %d would reach %lld tokens, over the context limit of %lld", s,
                     (long long)end, (long long)kv->max_ctx);
            return DSV4_ERR_INVALID;
        }
        need_pages += seq_pages_short(kv, s, end);
    }
    if (need_pages > kv->n_free) {
        snprintf(err, errlen, "the state pool is full: the step needs %lld more pages, %lld are free",
                 (long long)need_pages, (long long)kv->n_free);
        return DSV4_ERR_NOMEM;
    }
    /* Samplers the device cannot serve read logits on the host */
    int n_host = 0, n_tok = 0, n_smp = 0;
    bool logits_back = false;
    for (int i = 0; i < n_en; i++) {
        n_tok += en[i].n_tokens;
        logits_back |= en[i].logits != NULL;
        if (en[i].sampler) {
            if (!en[i].sample) {
                snprintf(err, errlen, "batch entry %d: a sampler without a place for its sample", i);
                return DSV4_ERR_INVALID;
            }
            n_host += !en[i].logits;
            n_smp++;
        }
    }
    if (n_host && !e->host_logits && !(e->host_logits = malloc((size_t)kv->max_seqs * V * sizeof(float)))) {
        snprintf(err, errlen, "out of memory for the logits of %d sequences", kv->max_seqs);
        return DSV4_ERR_NOMEM;
    }
    /* per entry: on the device (req), or from host logits (dst) */
    dsv4_sample_req reqs[n_en > 0 ? n_en : 1];
    float *host_dst[n_en > 0 ? n_en : 1];
    bool on_dev[n_en > 0 ? n_en : 1];
    int32_t picks[n_en > 0 ? n_en : 1];
    bool all_dev = true;
    for (int i = 0, h = 0; i < n_en; i++) {
        on_dev[i] = false;
        host_dst[i] = NULL;
        picks[i] = -1;
        if (!en[i].sampler) continue;
        if (e->be->sample && dsv4_sampler_device_req(en[i].sampler, &reqs[i])) on_dev[i] = true;
        else host_dst[i] = en[i].logits ? en[i].logits + (en[i].all_logits ? (size_t)(en[i].n_tokens - 1) * V : 0)
                                        : e->host_logits + (size_t)h++ * V;
        all_dev &= on_dev[i];
    }
    dsv4_scratch *sc = &e->s;
    /* Ahead of the host: one sub-step whose only outputs are device picks, in one launch */
    const bool ahead = e->be->sample_launch && !e->profile && all_dev && !logits_back && n_tok <= sc->max_tok &&
                       n_smp <= sc->logit_rows;
    /* a step that runs whole reads the picks it follows on the host; one ahead reads them on the device, from
     * the slot the step before launched into (the slots alternate: this one launches into the other) */
    if (!ahead && feed_dev) pend_settle(e);
    int feed_slot = -1;
    for (int k = 0; k < e->n_pend; k++)
        if (e->pend[k].wait && e->pend[k].id == e->n_submitted) feed_slot = e->pend[k].slot;
    const int slot = ahead ? (int)(e->smp_launch & 1u) : -1;

    for (int i = 0; i < n_en; i++) seq_take_pages(kv, en[i].seq, kv->len[en[i].seq] + en[i].n_tokens);
    const int64_t id = ++e->n_submitted;
    dsv4_pending *p = &e->pend[e->n_pend];
    p->wait = false;
    p->slot = slot;
    p->n = 0;
    p->id = id;
    p->st = DSV4_OK;
    p->err[0] = 0;

    /* Sub-steps of at most max_batch_tokens tokens; each entry contributes a
     * contiguous run of its remaining tokens. */
    dsv4_seg segs[n_en > 0 ? n_en : 1];
    int done[n_en > 0 ? n_en : 1];
    memset(done, 0, sizeof done);
    int32_t feed[ahead && feed_slot >= 0 ? sc->max_tok : 1];
    for (;;) {
        int T = 0, n_seg = 0;
        bool fed = false;
        float **outp = (float **)sc->out_ptr;
        for (int i = 0; i < n_en && T < sc->max_tok; i++) {
            int rem = en[i].n_tokens - done[i];
            if (rem <= 0) continue;
            int take = rem < sc->max_tok - T ? rem : sc->max_tok - T;
            dsv4_seg *sg = &segs[n_seg];
            sg->slot = en[i].seq;
            sg->pos0 = kv->len[en[i].seq];
            sg->n = take;
            sg->t0 = T;
            for (int k = 0; k < take; k++) {
                int ti = done[i] + k;
                const bool last = ti == en[i].n_tokens - 1;
                int32_t tk = 0;
                if (!en[i].follow)
                    tk = en[i].tokens[ti];
                else if (feed_slot < 0)
                    tk = e->pick_tok[en[i].seq];
                if (ahead && feed_slot >= 0) {
                    feed[T + k] = en[i].follow ? e->pick_row[en[i].seq] : -1;
                    fed |= en[i].follow;
                }
                sc->tokens[T + k] = tk;
                sc->pos[T + k] = sg->pos0 + k;
                sc->tok_seg[T + k] = n_seg;
                float *dst = NULL;
                if (en[i].logits) {
                    if (en[i].all_logits) dst = en[i].logits + (size_t)ti * V;
                    else if (last) dst = en[i].logits;
                }
                if (last && host_dst[i]) dst = host_dst[i];
                outp[T + k] = dst;
                sc->req[T + k] = last && on_dev[i] ? &reqs[i] : NULL;
                sc->pick[T + k] = -1;
            }
            T += take;
            n_seg++;
        }
        if (T == 0) break;
        dsv4_plan plan = {.n_tok = T,
                          .n_seg = n_seg,
                          .segs = segs,
                          .tokens = sc->tokens,
                          .pos = sc->pos,
                          .tok_seg = sc->tok_seg,
                          .feed = fed ? feed : NULL,
                          .feed_slot = feed_slot};
        dsv4_forward(e, &plan, (float *const *)outp, sc->req, sc->pick, slot);
        for (int si = 0, i = 0; si < n_seg; si++) {
            while (en[i].seq != segs[si].slot) i++;
            kv->len[segs[si].slot] += segs[si].n;
            done[i] += segs[si].n;
            if (done[i] == en[i].n_tokens && on_dev[i]) picks[i] = sc->pick[segs[si].t0 + segs[si].n - 1];
        }
    }
    /* what each sequence picked, or will: the rows of the launch are the sampled entries in order */
    for (int i = 0; i < n_en; i++) {
        const int s = en[i].seq;
        e->pick_step[s] = 0;
        if (!en[i].sampler) continue;
        e->pick_step[s] = id;
        e->pick_tok[s] = -1;
        if (ahead) {
            e->pick_row[s] = p->n;
            p->seq[p->n] = s;
            p->out[p->n++] = en[i].sample;
        }
    }
    if (ahead) {
        p->wait = p->n > 0;
        if (p->wait) e->smp_launch++;
        e->n_pend++;
        return DSV4_OK;
    }
    for (int i = 0; i < n_en; i++) { /* run whole: the samples are kept for dsv4_step_finish */
        if (!en[i].sampler) continue;
        dsv4_sample *v = &p->val[p->n];
        if (on_dev[i]) {
            memset(v, 0, sizeof *v);
            v->token = picks[i];
        }
        if (on_dev[i] ? picks[i] < 0 : dsv4_sampler_sample(en[i].sampler, host_dst[i], v) != DSV4_OK) {
            v->token = -1;
            if (p->st == DSV4_OK)
                snprintf(p->err, sizeof p->err, "sequence %d: no finite logit to sample from", en[i].seq);
            p->st = DSV4_ERR_STATE;
        }
        e->pick_tok[en[i].seq] = v->token;
        p->seq[p->n] = en[i].seq;
        p->out[p->n++] = en[i].sample;
    }
    e->n_pend++;
    return DSV4_OK;
}

/* ---- profile ------------------------------------------------------------ */

static const char *const prof_names[DSV4_PROF_COUNT] = {
    "attention", "indexer + top-k", "compressors", "routed experts", "shared expert",
    "dense projections", "hyper-connections", "norms / RoPE", "head", "communication", "other"};

int dsv4_profile_enable(dsv4_engine *e, int on)
{
    e->profile = on && e->be->prof_mark && e->be->prof_collect;
    return e->profile;
}

void dsv4_profile_print(const dsv4_engine *e, FILE *out, int json)
{
    static const char *const kind[2] = {"decode", "prefill"};
    if (json) fprintf(out, "{\"backend\": \"%s\"", e->be->name);
    for (int k = 0; k < 2; k++) {
        double total = 0;
        for (int i = 0; i < DSV4_PROF_COUNT; i++) total += e->prof_ms[k][i];
        const int64_t steps = e->prof_steps[k], toks = e->prof_tokens[k];
        if (json) {
            fprintf(out, ", \"%s\": {\"steps\": %lld, \"tokens\": %lld, \"ms_total\": %.4f, \"families\": {", kind[k],
                    (long long)steps, (long long)toks, total);
            for (int i = 0; i < DSV4_PROF_COUNT; i++)
                fprintf(out, "%s\"%s\": %.4f", i ? ", " : "", prof_names[i], e->prof_ms[k][i]);
            fprintf(out, "}}");
            continue;
        }
        if (!steps) continue;
        fprintf(out, "%s: %lld steps, %lld tokens, %.3f ms per step (%s)\n", kind[k], (long long)steps,
                (long long)toks, total / steps, e->be->name);
        fprintf(out, "  %-20s %12s %8s\n", "op family", "ms/step", "share");
        for (int i = 0; i < DSV4_PROF_COUNT; i++) {
            if (i == DSV4_PROF_COMM && e->prof_ms[k][i] <= 0) continue; /* a row only with several ranks */
            fprintf(out, "  %-20s %12.4f %7.1f%%\n", prof_names[i], e->prof_ms[k][i] / steps,
                    total > 0 ? 100.0 * e->prof_ms[k][i] / total : 0.0);
        }
    }
    if (json) fprintf(out, "}\n");
}
