/*
 * cuda_backend.cu - the CUDA backend's lifetime, memory, weights, per-step
 * plan upload, and the small elementwise and per-row ops (embedding, norms,
 * RoPE, rounding and the reference's quantisation simulations, SwiGLU).
 *
 * Every op is enqueued on one stream; the engine reads results back with
 * download(), which synchronises. Weights are copied to the device once at
 * load in their checkpoint format and decoded by the kernels that use them.
 */
#include "backend/cuda/common.cuh"

#include <string.h>

#include "backend/cuda/fill.cuh"
#include "backend/cuda/sim.cuh"

extern "C" dsv4_backend *dsv4_backend_cuda_create(int device, char *err, size_t errlen);
extern "C" int dsv4_cuda_device_count(void);

/* ==== memory ============================================================= */

static void *c_alloc(dsv4_backend *be, size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) return NULL;
    CK(cudaMemsetAsync(p, 0, bytes ? bytes : 1, impl_of(be)->stream));
    return p;
}

/* A buffer of c_alloc's, or a weight's (what weight_load made, freed by a test or by --ep's teardown of its
 * ranks' copies): its entry in the weights' list cleared first, so c_destroy does not free it again
 * (test_ops_cuda's 1,858 failed cudaFree calls at its end under memcheck, v63). Weights are freed in the order
 * they were loaded, so the search starts after the last one found. */
static void c_free(dsv4_backend *be, void *p)
{
    cuda_impl *im = impl_of(be);
    cuda_moe_forget(be, p); /* a layer's expert table keyed by this memory */
    for (int k = 0; p && k < im->n_wmem; k++) {
        const int i = (im->wmem_at + k) % im->n_wmem;
        if (im->wmem[i] == p) {
            im->wmem[i] = NULL, im->wmem_at = i + 1;
            break;
        }
    }
    CK(cudaFree(p));
}

cudaError_t cuda_weight_malloc(dsv4_backend *be, void **p, size_t bytes)
{
    cuda_impl *im = impl_of(be);
    *p = NULL;
    if (im->n_wmem == im->cap_wmem) {
        const int cap = im->cap_wmem ? 2 * im->cap_wmem : 1024;
        void **g = (void **)realloc(im->wmem, (size_t)cap * sizeof(void *));
        if (!g) return cudaErrorMemoryAllocation;
        im->wmem = g;
        im->cap_wmem = cap;
    }
    /* whole 4-byte words: a kernel may copy the aligned word that holds a byte (k_mma_fp8s, scale tables) */
    const cudaError_t e = cudaMalloc(p, bytes ? (bytes + 3) & ~(size_t)3 : 4);
    if (e != cudaSuccess) {
        *p = NULL;
        return e;
    }
    im->wmem[im->n_wmem++] = *p;
    return cudaSuccess;
}

static void c_bind(dsv4_backend *be) { CK(cudaSetDevice(impl_of(be)->device)); }

static int64_t c_mem_free(dsv4_backend *be)
{
    size_t fr = 0, total = 0;
    CK(cudaStreamSynchronize(impl_of(be)->stream));
    CK(cudaMemGetInfo(&fr, &total));
    return (int64_t)fr;
}

static void c_upload(dsv4_backend *be, void *dst, const void *src, size_t bytes)
{
    CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, impl_of(be)->stream));
    CK(cudaStreamSynchronize(impl_of(be)->stream)); /* src may be a stack buffer */
}

static void c_download(dsv4_backend *be, void *dst, const void *src, size_t bytes)
{
    cuda_lin_flush(be); /* a caller that broke linear_to_post's contract: y whole before it is read */
    CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, impl_of(be)->stream));
    CK(cudaStreamSynchronize(impl_of(be)->stream));
}

static void c_copy(dsv4_backend *be, void *dst, const void *src, size_t bytes)
{
    CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, impl_of(be)->stream));
}

static void c_copy_rows(dsv4_backend *be, void *dst, size_t dpitch, const void *src, size_t spitch, size_t row_bytes,
                        size_t rows)
{
    if (!rows || !row_bytes) return;
    CK(cudaMemcpy2DAsync(dst, dpitch, src, spitch, row_bytes, rows, cudaMemcpyDeviceToDevice, impl_of(be)->stream));
}

static const char *const knob_env[CUDA_KNOBS] = {"DSV4_MOE_WG", "DSV4_WGBF", "DSV4_WGF8",        "DSV4_WG8_N64",
                                                 "DSV4_MOE_BP", "DSV4_LT",   "DSV4_NORM_ROPE_W", "DSV4_MMA_TRIG"};
static int knob_val[CUDA_KNOBS] = {-2, -2, -2, -2, -2, -2, -2, -2}; /* -2: not read yet */

int cuda_knob(int k)
{
    if (knob_val[k] == -2) {
        const char *e = getenv(knob_env[k]);
        knob_val[k] = e && (e[0] == '0' || e[0] == '1') ? e[0] - '0' : -1;
    }
    return knob_val[k];
}

extern "C" int dsv4_cuda_prefill_knob(const char *name, int value)
{
    for (int k = 0; k < CUDA_KNOBS; k++)
        if (!strcmp(name, knob_env[k])) {
            const int old = cuda_knob(k);
            knob_val[k] = value < -1 || value > 1 ? -1 : value;
            return old;
        }
    return -2;
}

static unsigned long work_grows; /* dsv4_cuda_work_grows */
extern "C" unsigned long dsv4_cuda_work_grows(void)
{
    return work_grows;
}

/* Queue q's slot replaced by one of cap bytes (its contents not kept; graphs holding the old one go stale): false,
 * the slot empty, where the device has too little. */
static bool scratch_grow(cuda_impl *im, int q, int slot, size_t cap)
{
    im->gen++;
    if (im->scratch[q][slot]) {
        for (int i = 0; i < 2; i++) CK(cudaStreamSynchronize(im->queue[i]));
        CK(cudaFree(im->scratch[q][slot]));
    }
    im->scratch[q][slot] = NULL;
    im->scratch_cap[q][slot] = 0;
    if (cudaMalloc(&im->scratch[q][slot], cap) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: clear it */
        return false;
    }
    im->scratch_cap[q][slot] = cap;
    return true;
}

void *cuda_scratch(dsv4_backend *be, int slot, size_t bytes)
{
    cuda_impl *im = impl_of(be);
    const int q = im->q;
    if (im->scratch_cap[q][slot] < bytes) {
        if (im->graph_state == 1) {
            /* the step before a capture sizes everything (the pieces' gaps too): a broken invariant */
            fprintf(stderr, "dsv4: CUDA scratch %d grew inside a graph capture (%zu > %zu bytes)\n", slot, bytes,
                    im->scratch_cap[q][slot]);
            abort();
        }
        if (slot == CS_ROWS || slot == CS_SCORES) work_grows++;
        const size_t cap = bytes + bytes / 4 + 256;
        if (!scratch_grow(im, q, slot, cap)) {
            fprintf(stderr, "dsv4: CUDA scratch %d: cannot allocate %zu bytes\n", slot, cap);
            abort();
        }
    }
    return im->scratch[q][slot];
}

/* The indexer and the attention run on the first queue (forward.c: after a join). */
static dsv4_status c_work_reserve(dsv4_backend *be, const dsv4_attn_params *ap, const dsv4_indexer_params *ip,
                                  int n_tok, int64_t max_ctx)
{
    cuda_impl *im = impl_of(be);
    const size_t need[2] = {cuda_attn_work_bytes(ap, n_tok, max_ctx),
                            ip ? cuda_indexer_work_bytes(ip, n_tok, max_ctx) : 0};
    const int slot[2] = {CS_ROWS, CS_SCORES};
    for (int i = 0; i < 2; i++) /* exactly, without a step's headroom */
        if (im->scratch_cap[0][slot[i]] < need[i] && !scratch_grow(im, 0, slot[i], need[i])) return DSV4_ERR_NOMEM;
    return DSV4_OK;
}

/* Ops issued between side(be, true) and side(be, false) run on the second
 * queue: it starts once everything issued before is done, and runs beside
 * what is issued on the first queue after side(be, false) until join(be).
 * In a graph capture the two queues become a fork and a join of the graph.
 * Each queue has its own scratch; the forward pass forks only work that
 * shares no other buffer with what runs beside it. */
static void c_side(dsv4_backend *be, bool on)
{
    cuda_impl *im = impl_of(be);
    if (on == (im->q == 1)) return;
    if (on) {
        CK(cudaEventRecord(im->fork_ev, im->queue[0]));
        CK(cudaStreamWaitEvent(im->queue[1], im->fork_ev, 0));
    } else {
        CK(cudaEventRecord(im->join_ev, im->queue[1]));
        im->side_open = true;
    }
    im->q = on ? 1 : 0;
    im->stream = im->queue[im->q];
}

/* (only when the second queue has had work since the last join: a graph capture may not wait on an event
 * recorded before it began) */
static void c_join(dsv4_backend *be)
{
    cuda_impl *im = impl_of(be);
    c_side(be, false);
    if (im->side_open) CK(cudaStreamWaitEvent(im->queue[0], im->join_ev, 0));
    im->side_open = false;
    im->hc_comb_open = false;
}

/* Large host-to-device copies go through two pinned 64 MiB buffers in turn:
 * while the GPU pulls one, the CPU fills the other from the mmap (page faults
 * included), so the transfer runs at DMA speed instead of pageable speed. */
#define PIN_BYTES ((size_t)64 << 20)

static void upload_staged(cuda_impl *im, void *dst, const void *src, size_t n)
{
    if (n < ((size_t)1 << 20)) {
        CK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, im->stream));
        CK(cudaStreamSynchronize(im->stream)); /* src is pageable: done before returning */
        return;
    }
    if (!im->pin[0])
        for (int i = 0; i < 2; i++) {
            CK(cudaHostAlloc(&im->pin[i], PIN_BYTES, cudaHostAllocDefault));
            CK(cudaEventCreateWithFlags(&im->pin_ev[i], cudaEventDisableTiming));
            CK(cudaEventRecord(im->pin_ev[i], im->stream));
        }
    for (size_t off = 0; off < n; off += PIN_BYTES) {
        const size_t k = n - off < PIN_BYTES ? n - off : PIN_BYTES;
        const int b = im->pin_next;
        im->pin_next ^= 1;
        CK(cudaEventSynchronize(im->pin_ev[b])); /* the GPU is done with this buffer */
        memcpy(im->pin[b], (const char *)src + off, k);
        CK(cudaMemcpyAsync((char *)dst + off, im->pin[b], k, cudaMemcpyHostToDevice, im->stream));
        CK(cudaEventRecord(im->pin_ev[b], im->stream));
    }
}

static dsv4_status c_weight_load(dsv4_backend *be, dsv4_w *w, char *err, size_t errlen)
{
    cuda_impl *im = impl_of(be);
    if (w->f32) {
        size_t bytes = (size_t)w->ne[0] * w->ne[1] * sizeof(float);
        void *d = NULL;
        if (cuda_weight_malloc(be, &d, bytes) != cudaSuccess) goto oom;
        upload_staged(im, d, w->f32, bytes);
        w->vec = (const float *)d;
        w->dev = d;
        return DSV4_OK;
    }
    if (w->synth.kind != DSV4_SYNTH_NONE) return cuda_weight_fill(be, w, err, errlen); /* --fill-random */
    {
        size_t eb = (size_t)dsv4_w_elem_bytes(w), sb = (size_t)dsv4_w_scale_bytes(w);
        if (cuda_weight_malloc(be, &w->dev, eb) != cudaSuccess) goto oom;
        upload_staged(im, w->dev, w->host, eb);
        if (sb) {
            if (cuda_weight_malloc(be, &w->dev_scale, sb) != cudaSuccess) goto oom;
            upload_staged(im, w->dev_scale, w->scale, sb);
        }
        return DSV4_OK;
    }
oom:
    snprintf(err, errlen, "%s: out of GPU memory loading the weights", w->name);
    return DSV4_ERR_NOMEM;
}

/* The plan and the page table go up in one copy a step, out of one pinned
 * buffer laid out as the device's: [page table (fixed: every sequence's
 * pages)] [pos: n_tok int64] [tokens: n_tok int32] [tok_seg: n_tok int32]
 * [segs: n_seg] - from the positions on, or from the start when the page
 * table changed. A copy costs the host ~3 us to issue, and the next step's
 * graph launches only after the last (four copies were ~10 us a step). The
 * copy is ordered before the step's kernels: no wait on the previous step,
 * only on the copy out of the same pinned buffer. Growing the device buffer
 * moves it, so graphs captured before are stale (gen). */
static void c_step_begin(dsv4_backend *be, const dsv4_plan *plan, const dsv4_kv *kv)
{
    cuda_impl *im = impl_of(be);
    cuda_hc_join(im); /* a caller that left a step unjoined: here, before any capture of this one */
    cuda_lin_flush(be); /* and a linear's parts no hc_post took */
    im->hc_next.fn = im->mix_pend.fn = NULL; /* and mixing parts no hc_pre took */
    im->moe_next.p = NULL, im->plan_pend.idx = NULL; /* and experts no router took, a plan no experts took */
    const size_t nt = (size_t)plan->n_tok, ns = (size_t)plan->n_seg;
    const size_t pt = (size_t)kv->max_seqs * kv->max_pages_per_seq * sizeof(int32_t);
    const size_t o_pos = (pt + 15) & ~(size_t)15, o_tok = o_pos + nt * sizeof(int64_t),
                 o_ts = o_tok + nt * sizeof(int32_t), o_seg = (o_ts + nt * sizeof(int32_t) + 15) & ~(size_t)15,
                 o_feed = (o_seg + ns * sizeof(dsv4_seg) + 15) & ~(size_t)15,
                 need = plan->feed ? o_feed + nt * sizeof(int32_t) : o_seg + ns * sizeof(dsv4_seg);
    bool moved = false;
    if (im->cap_plan < need || im->plan_pt != pt) {
        CK(cudaStreamSynchronize(im->stream)); /* earlier steps may still read it */
        if (im->d_plan) CK(cudaFree(im->d_plan));
        im->cap_plan = need + need / 2 + 4096;
        CK(cudaMalloc((void **)&im->d_plan, im->cap_plan));
        im->plan_pt = pt;
        im->gen++;
        moved = true;
    }
    im->d_page_table = (int32_t *)im->d_plan;
    im->d_pos = (int64_t *)(im->d_plan + o_pos);
    im->d_tokens = (int32_t *)(im->d_plan + o_tok);
    im->d_tok_seg = (int32_t *)(im->d_plan + o_ts);
    im->d_segs = (dsv4_seg *)(im->d_plan + o_seg);
    const bool pt_up = moved || kv->pt_version != im->pt_version;

    if (im->plan_pin) CK(cudaEventSynchronize(im->plan_ev)); /* the last copy out of it is done */
    if (im->plan_pin_cap < need) {
        if (im->plan_pin) CK(cudaFreeHost(im->plan_pin));
        im->plan_pin_cap = need + need / 2 + 4096;
        CK(cudaHostAlloc((void **)&im->plan_pin, im->plan_pin_cap, cudaHostAllocDefault));
        if (!im->plan_ev) CK(cudaEventCreateWithFlags(&im->plan_ev, cudaEventDisableTiming));
    }
    char *h = im->plan_pin;
    if (pt_up) memcpy(h, kv->page_table, pt);
    memcpy(h + o_pos, plan->pos, nt * sizeof(int64_t));
    memcpy(h + o_tok, plan->tokens, nt * sizeof(int32_t));
    memcpy(h + o_ts, plan->tok_seg, nt * sizeof(int32_t));
    memcpy(h + o_seg, plan->segs, ns * sizeof(dsv4_seg));
    if (plan->feed) memcpy(h + o_feed, plan->feed, nt * sizeof(int32_t));
    const size_t from = pt_up ? 0 : o_pos;
    CK(cudaMemcpyAsync(im->d_plan + from, h + from, need - from, cudaMemcpyHostToDevice, im->stream));
    im->pt_version = kv->pt_version;
    CK(cudaEventRecord(im->plan_ev, im->stream));
    /* tokens the previous step picked (still on the device, or on their way to the host): from its slot */
    if (plan->feed)
        cuda_feed_tokens(im, im->d_tokens, (const int32_t *)(im->d_plan + o_feed), (int)nt, plan->feed_slot);
}

/* ==== profiling ========================================================== */

/* An event per mark on the stream; spans are read when the step is over, so
 * profiling adds no synchronisation inside the step. */
static void c_prof_mark(dsv4_backend *be, int family)
{
    cuda_impl *im = impl_of(be);
    if (!im->prof_ev) {
        im->prof_ev = (cudaEvent_t *)calloc(MAX_PROF_EVENTS, sizeof(cudaEvent_t));
        im->prof_fam = (int *)calloc(MAX_PROF_EVENTS, sizeof(int));
        for (int i = 0; i < MAX_PROF_EVENTS; i++) CK(cudaEventCreate(&im->prof_ev[i]));
    }
    if (im->n_prof == MAX_PROF_EVENTS) return; /* a huge step: the tail goes uncounted */
    CK(cudaEventRecord(im->prof_ev[im->n_prof], im->stream));
    im->prof_fam[im->n_prof++] = family;
}

static void c_prof_collect(dsv4_backend *be, double *ms)
{
    cuda_impl *im = impl_of(be);
    if (!im->n_prof) return;
    c_prof_mark(be, -1);
    CK(cudaEventSynchronize(im->prof_ev[im->n_prof - 1]));
    int lost = 0;
    cudaError_t why = cudaSuccess;
    for (int i = 0; i + 1 < im->n_prof; i++) {
        float t = 0;
        /* a span that cannot be timed is dropped and counted, never fatal: the profile is a diagnostic */
        const cudaError_t e = cudaEventElapsedTime(&t, im->prof_ev[i], im->prof_ev[i + 1]);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            if (!lost++) why = e;
            continue;
        }
        if (im->prof_fam[i] >= 0) ms[im->prof_fam[i]] += t;
    }
    if (lost && !im->prof_lost_said) {
        im->prof_lost_said = true;
        fprintf(stderr, "dsv4: --profile: %d of %d spans of a step could not be timed (%s; left out)\n", lost,
                im->n_prof - 1, cudaGetErrorString(why));
    }
    im->n_prof = 0;
}

/* ==== elementwise and per-row ops ======================================== */

/* o[i] = at(i) for a row of n_col elements, the block's threads strided, ROW_U elements a thread in flight:
 * loaded together, then stored (a load then a store per element waited out a round trip each: 10 us for
 * k_embed's 4,096-wide BF16 row, alone under ncu). */
#define ROW_U 16
template <typename F>
__device__ __forceinline__ void row_in_flight(int64_t n_col, float *o, F at, int copies = 1, int64_t cstride = 0,
                                              unsigned rnd = 0)
{
    const int64_t step = blockDim.x;
    for (int64_t i0 = threadIdx.x; i0 < n_col; i0 += ROW_U * step) {
        float v[ROW_U];
#pragma unroll
        for (int u = 0; u < ROW_U; u++) v[u] = i0 + u * step < n_col ? rnd_out(rnd, at(i0 + u * step)) : 0.0f;
        for (int c = 0; c < copies; c++)
#pragma unroll
            for (int u = 0; u < ROW_U; u++)
                if (i0 + u * step < n_col) o[c * cstride + i0 + u * step] = v[u];
    }
}

/* X [n, hc, n_col]: hc copies of each token's row (rnd: rounded first), any format through w_at (the
 * checkpoints' BF16 tables take k_embed16 below) */
__global__ void k_embed(wdesc w, const int32_t *tok, int hc, unsigned rnd, float *X)
{
    const int64_t r = tok[blockIdx.x];
    row_in_flight(
        w.cols, X + (size_t)blockIdx.x * hc * w.cols, [&](int64_t i) { return w_at(w, r, i); }, hc, w.cols, rnd);
}

/* k_embed for a BF16 table of rows of whole 16-byte chunks (the checkpoints'): a thread's 8 columns in one
 * 16-byte load, a row over blockIdx.y's blocks of EMB_COLS columns, each copy's 8 floats as two 16-byte
 * stores. k_embed's loads, each converted as it came, waited out a round trip apiece: 7.6 us for Flash's
 * 4,096-wide row at batch 1 (bench/results/2026-12-02-s36/bf16s/'s node table). The same values. */
#define EMB_COLS 2048
__global__ void __launch_bounds__(EMB_COLS / 8)
    k_embed16(const uint4 *tab, int64_t n_col, const int32_t *tok, int hc, unsigned rnd, float *X)
{
    const int64_t c8 = (int64_t)blockIdx.y * (EMB_COLS / 8) + threadIdx.x; /* the thread's 8 columns */
    if (8 * c8 >= n_col) return;
    const uint4 q = tab[(int64_t)tok[blockIdx.x] * (n_col / 8) + c8];
    const uint32_t wd[4] = {q.x, q.y, q.z, q.w};
    float v[8];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        v[2 * k] = rnd_out(rnd, dsv4_bf16_to_f32((uint16_t)(wd[k] & 0xffffu)));
        v[2 * k + 1] = rnd_out(rnd, dsv4_bf16_to_f32((uint16_t)(wd[k] >> 16)));
    }
    float4 *o = (float4 *)(X + (size_t)blockIdx.x * hc * n_col + 8 * c8);
    for (int c = 0; c < hc; c++) {
        o[c * (n_col / 4)] = make_float4(v[0], v[1], v[2], v[3]);
        o[c * (n_col / 4) + 1] = make_float4(v[4], v[5], v[6], v[7]);
    }
}

/* The step's first op: embed, its BF16 rounding (reference numerics) and the hyper-connections' copies were
 * three operations in a row (~9 us of a decode step's latency between them: k_round_bf16 and four copies) */
void cuda_embed_hc(dsv4_backend *be, const dsv4_w *emb, const int32_t *tok, int n, int hc, unsigned rnd, float *X)
{
    (void)tok; /* the plan's host array: the device copy holds the same ids */
    if (n <= 0) return;
    cuda_impl *im = impl_of(be);
    const wdesc w = wdesc_of(emb);
    if (w.fmt == DSV4_WF_FLOAT && w.dtype == DSV4_DT_BF16 && w.cols % 8 == 0 && ((uintptr_t)w.data & 15) == 0 &&
        ((uintptr_t)X & 15) == 0)
        k_embed16<<<dim3((unsigned)n, (unsigned)((w.cols + EMB_COLS - 1) / EMB_COLS)), EMB_COLS / 8, 0, im->stream>>>(
            (const uint4 *)w.data, w.cols, im->d_tokens, hc, rnd, X);
    else
        k_embed<<<n, 256, 0, im->stream>>>(w, im->d_tokens, hc, rnd, X);
    CK_LAUNCH();
}

void cuda_embed(dsv4_backend *be, const dsv4_w *emb, const int32_t *tok, int n, float *out)
{
    cuda_embed_hc(be, emb, tok, n, 1, 0, out);
}

__global__ void k_rmsnorm(const float *x, const float *w, int dim, int ld, float eps, float *y, unsigned rnd)
{
    rmsnorm_row<true>(x + (size_t)blockIdx.x * ld, w, dim, eps, y + (size_t)blockIdx.x * ld, rnd);
}

void cuda_rmsnorm(dsv4_backend *be, const float *x, const float *w, int rows, int dim, int ld, float eps, float *y,
                  unsigned rnd)
{
    if (rows <= 0) return;
    /* rows held in registers up to 16 x 512 (Pro's 7,168 too); the sum's order is the shape's */
    launch_pdl(k_rmsnorm, dim3(rows), dim3(rmsnorm_threads(dim)), 0, impl_of(be)->stream, x, w, dim, ld, eps, y,
               rnd);
    CK_LAUNCH();
}

/* The reference's BF16 RMS normalisation of one row by the whole block, in place. */
__device__ __forceinline__ void rmsnorm_bf16_row(float *v, int dim)
{
    __shared__ float sh[32];
    float s = 0;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        const float b = dsv4_round_bf16(v[i]); /* the BF16 tensor */
        s += dsv4_round_bf16(b * b);
    }
    s = block_sum(s, sh);
    const float ms = dsv4_round_bf16(s / (float)dim);
    const float k = dsv4_round_bf16(1.0f / sqrtf(dsv4_round_bf16(ms + 1e-6f)));
    for (int i = threadIdx.x; i < dim; i += blockDim.x) v[i] = dsv4_round_bf16(dsv4_round_bf16(v[i]) * k);
}

__global__ void k_rmsnorm_bf16(float *x, int dim)
{
    pdl_start();
    rmsnorm_bf16_row(x + (size_t)blockIdx.x * dim, dim);
}

void cuda_rmsnorm_bf16(dsv4_backend *be, float *x, int rows, int dim)
{
    if (rows <= 0) return;
    launch_pdl(k_rmsnorm_bf16, dim3(rows), dim3(256), 0, impl_of(be)->stream, x, dim);
    CK_LAUNCH();
}

/* A thread per (token, head, item): items [0, nr) round the head's
 * unrotated values (nr = head_dim - rope_dim with DSV4_RND_IN, else 0), the
 * rest rotate one pair each. */
__global__ void k_rope(float *x, int n_tok, int n_heads, int ld_tok, int head_dim, int rope_dim, const int64_t *pos,
                       const float *freqs, bool inverse, unsigned rnd)
{
    const int half = rope_dim / 2, nr = rnd & DSV4_RND_IN ? head_dim - rope_dim : 0, per = nr + half;
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (int64_t)n_tok * n_heads * per) return;
    const int j = (int)(id % per), h = (int)((id / per) % n_heads), t = (int)(id / per / n_heads);
    float *hv = x + (size_t)t * ld_tok + (size_t)h * head_dim;
    float cs = 0.0f, sn = 0.0f;
    if (j >= nr) rope_cs(pos[t], freqs[j - nr], inverse, cs, sn); /* constants: before the wait */
    pdl_start();
    if (j < nr) {
        hv[j] = dsv4_round_bf16(hv[j]);
        return;
    }
    rope_pair(hv + (head_dim - rope_dim), j - nr, cs, sn, rnd);
}

void cuda_rope(dsv4_backend *be, float *x, int n_tok, int n_heads, int ld_tok, int head_dim, int rope_dim,
               const int64_t *pos, const float *freqs, bool inverse, unsigned rnd)
{
    const int per = (rnd & DSV4_RND_IN ? head_dim - rope_dim : 0) + rope_dim / 2;
    const int64_t n = (int64_t)n_tok * n_heads * per;
    if (n <= 0) return;
    /* pos is the plan's host array: use the device copy */
    launch_pdl(k_rope, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, impl_of(be)->stream, x, n_tok, n_heads, ld_tok,
               head_dim, rope_dim, (const int64_t *)impl_of(be)->d_pos, freqs, inverse, rnd);
    CK_LAUNCH();
}

__global__ void k_round_bf16(float *x, size_t n)
{
    pdl_start();
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = dsv4_round_bf16(x[i]);
}

void cuda_round_bf16(dsv4_backend *be, float *x, size_t n)
{
    if (!n) return;
    launch_pdl(k_round_bf16, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, impl_of(be)->stream, x, n);
    CK_LAUNCH();
}

__global__ void k_fill(uint32_t *x, size_t n, uint64_t seed)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = dsv4_fill_word(seed, i);
}

static void c_fill(dsv4_backend *be, float *x, size_t n, uint64_t seed)
{
    if (!n) return;
    const size_t blocks = (n + 255) / 256;
    k_fill<<<(unsigned)(blocks < 65536 ? blocks : 65536), 256, 0, impl_of(be)->stream>>>((uint32_t *)x, n, seed);
    CK_LAUNCH();
}

/* FP8SIM of KV rows: one warp per (row, 64-wide block). */
__global__ void k_kv_sim(float *x, int rows, int ld, int nope)
{
    pdl_start();
    const int nb = (nope + 63) / 64, lane = threadIdx.x & 31;
    const int64_t wg = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (wg >= (int64_t)rows * nb) return;
    const int r = (int)(wg / nb), b0 = (int)(wg % nb) * 64;
    kv_sim_block(x + (size_t)r * ld + b0, nope - b0 < 64 ? nope - b0 : 64, lane);
}

void cuda_kv_sim(dsv4_backend *be, float *x, int rows, int ld, int nope)
{
    const int64_t n = (int64_t)rows * ((nope + 63) / 64);
    if (n <= 0) return;
    launch_pdl(k_kv_sim, dim3((unsigned)((n + 7) / 8)), dim3(256), 0, impl_of(be)->stream, x, rows, ld, nope);
    CK_LAUNCH();
}

/* norm_rope: a block per head row (token t = row / n_heads): the norm (rmsnorm_row, or the reference's BF16
 * one), then RoPE on the last rope_dim values, then FP8SIM of the first sim_nope: the code of k_rmsnorm /
 * k_rmsnorm_bf16, k_rope and k_kv_sim on the same elements in the same order, so the same bits; the block's
 * barriers order the three (a rotated pair, a 64-wide block: other threads' values). The row stays in shared
 * memory between them (head_dim floats of dynamic shared memory) and goes out once: read back from global
 * memory, another thread's values were an L2 round trip at each of the two steps. */
__global__ void __launch_bounds__(256) k_norm_rope(float *x, int n_heads, int head_dim, const float *w, float eps,
                                                   unsigned nrnd, bool bf16, int rope_dim, const int64_t *pos,
                                                   const float *freqs, unsigned rrnd, int sim_nope)
{
    extern __shared__ float nr_row[];
    const int row = blockIdx.x, t = row / n_heads, half = rope_dim / 2;
    float *out = x + (size_t)row * head_dim, *v = nr_row;
    float cs = 0.0f, sn = 0.0f; /* the thread's pair's angle (at most one: half <= blockDim.x), before the wait */
    if ((int)threadIdx.x < half) rope_cs(pos[t], freqs[threadIdx.x], false, cs, sn);
    if (bf16) {
        pdl_start();
        /* each thread's elements of rmsnorm_bf16_row's strided loops, loaded at once (it reads and writes only
         * its own before its block sum's barrier) */
        row_in_flight(head_dim, v, [&](int64_t i) { return out[i]; });
        rmsnorm_bf16_row(v, head_dim);
    } else
        rmsnorm_row<true>(out, w, head_dim, eps, v, nrnd);
    __syncthreads();
    if (rrnd & DSV4_RND_IN)
        for (int j = threadIdx.x; j < head_dim - rope_dim; j += blockDim.x) v[j] = dsv4_round_bf16(v[j]);
    if ((int)threadIdx.x < half) rope_pair(v + (head_dim - rope_dim), threadIdx.x, cs, sn, rrnd);
    if (sim_nope > 0) {
        __syncthreads();
        const int lane = threadIdx.x & 31;
        for (int b0 = 64 * (threadIdx.x >> 5); b0 < sim_nope; b0 += 64 * (blockDim.x >> 5))
            kv_sim_block(v + b0, sim_nope - b0 < 64 ? sim_nope - b0 : 64, lane);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < head_dim; i += blockDim.x) out[i] = v[i];
}

/* k_norm_rope's rows (without FP8SIM) a warp each, NRW_ROWS a block: the block kernel's rows were short-lived
 * blocks waiting in barriers (a 4,096-token prefill's q, 262,144 blocks of one 512-wide row: 1.5 ms a layer
 * for 1.07 GB of traffic, v63). The same bits: lane l holds the row's elements l + 32 m (m < head_dim / 32 <= 16),
 * and the 256-thread block's sum is rebuilt as block_sum forms it - thread 32 v + l's partial (its elements
 * 32 v + l + 256 k in increasing k, from 0) for each of the 8 warps v, each warp's xor tree over its lanes, then
 * warp 0's tree over the 8 sums and 24 zeros; RoPE's pairs (at most 32: a lane each) through shared memory. */
#define NRW_ROWS     8
#define NRW_MIN_ROWS 2048 /* more rows than this take it by default (batch 16's 1,024 were even) */
template <bool BF>
__global__ void __launch_bounds__(32 * NRW_ROWS)
    k_norm_rope_w(float *x, int rows, int n_heads, int head_dim, const float *w, float eps, unsigned nrnd, int rope_dim,
                  const int64_t *pos, const float *freqs, unsigned rrnd)
{
    __shared__ float rb[NRW_ROWS][512];
    const int lane = threadIdx.x & 31, wr = threadIdx.x >> 5, row = blockIdx.x * NRW_ROWS + wr;
    const int half = rope_dim / 2, M = head_dim / 32;
    const bool live = row < rows;
    float cs = 0.0f, sn = 0.0f, wv[16];
    if (live && lane < half) rope_cs(pos[row / n_heads], freqs[lane], false, cs, sn);
#pragma unroll
    for (int m = 0; m < 16; m++) wv[m] = !BF && w && m < M ? w[lane + 32 * m] : 1.0f;
    pdl_start();
    if (!live) return;
    float *out = x + (size_t)row * head_dim, v[16];
#pragma unroll
    for (int m = 0; m < 16; m++) v[m] = m < M ? out[lane + 32 * m] : 0.0f;
    float part[8]; /* thread 32 q + lane's partial sum, warp q of the block kernel */
#pragma unroll
    for (int q = 0; q < 8; q++) {
        float a = 0.0f;
#pragma unroll
        for (int m = q; m < 16; m += 8)
            if (m < M) {
                if (BF) {
                    const float b = dsv4_round_bf16(v[m]);
                    a += dsv4_round_bf16(b * b);
                } else {
                    const float b = rnd_in(nrnd, v[m]);
                    a += b * b;
                }
            }
        part[q] = warp_sum(a);
    }
    float t = 0.0f;
#pragma unroll
    for (int q = 0; q < 8; q++)
        if (lane == q) t = part[q];
    const float tot = warp_sum(t);
    float k;
    if (BF) {
        const float ms = dsv4_round_bf16(tot / (float)head_dim);
        k = dsv4_round_bf16(1.0f / sqrtf(dsv4_round_bf16(ms + 1e-6f)));
    } else
        k = 1.0f / sqrtf(tot / (float)head_dim + eps);
    float *r = rb[wr];
    const int nope = head_dim - rope_dim;
#pragma unroll
    for (int m = 0; m < 16; m++)
        if (m < M) {
            const int j = lane + 32 * m;
            float y;
            if (BF)
                y = dsv4_round_bf16(dsv4_round_bf16(v[m]) * k);
            else {
                const float b = rnd_in(nrnd, v[m]);
                y = rnd_out(nrnd, w ? wv[m] * (b * k) : b * k);
            }
            r[j] = j < nope && (rrnd & DSV4_RND_IN) ? dsv4_round_bf16(y) : y;
        }
    __syncwarp();
    if (lane < half) rope_pair(r + nope, lane, cs, sn, rrnd);
    __syncwarp();
#pragma unroll
    for (int m = 0; m < 16; m++)
        if (m < M) out[lane + 32 * m] = r[lane + 32 * m];
}

void cuda_norm_rope(dsv4_backend *be, float *x, int n_tok, int n_heads, int head_dim, const float *w, float eps,
                    unsigned nrnd, bool bf16, int rope_dim, const int64_t *pos, const float *freqs, unsigned rrnd,
                    int sim_nope)
{
    const int rows = n_tok * n_heads;
    if (rows <= 0) return;
    /* the fused kernel where the three ops' kernels run 256 threads a row (k_rmsnorm up to 4,096 columns) and a
     * thread rotates at most one pair; else the three */
    if (rmsnorm_threads(head_dim) != 256 || rope_dim / 2 > 256) {
        if (bf16) cuda_rmsnorm_bf16(be, x, rows, head_dim);
        else cuda_rmsnorm(be, x, w, rows, head_dim, head_dim, eps, x, nrnd);
        cuda_rope(be, x, n_tok, n_heads, n_heads * head_dim, head_dim, rope_dim, pos, freqs, false, rrnd);
        if (sim_nope > 0) cuda_kv_sim(be, x, rows, head_dim, sim_nope);
        return;
    }
    (void)pos; /* the plan's host array: the device copy holds the same positions */
    /* rows a warp each where there are many (prefill: a 4,096-token q 1.5 -> ~0.45 ms a layer); at decode's 64 rows
     * a token the block kernel is faster (batch 1 1.463 against 1.483 ms a step with the warp kernel, v63);
     * DSV4_NORM_ROPE_W=1 every eligible call, 0 never */
    const int wk = cuda_knob(CUDA_KNOB_NRW);
    if ((wk == 1 || (wk < 0 && rows > NRW_MIN_ROWS)) && sim_nope <= 0 && head_dim % 32 == 0 && head_dim <= 512 &&
        rope_dim % 2 == 0 && rope_dim <= head_dim && rope_dim <= 64) {
        const dim3 g((unsigned)((rows + NRW_ROWS - 1) / NRW_ROWS));
        const int64_t *dp = (const int64_t *)impl_of(be)->d_pos;
        if (bf16)
            launch_pdl(k_norm_rope_w<true>, g, dim3(32 * NRW_ROWS), 0, impl_of(be)->stream, x, rows, n_heads, head_dim,
                       w, eps, nrnd, rope_dim, dp, freqs, rrnd);
        else
            launch_pdl(k_norm_rope_w<false>, g, dim3(32 * NRW_ROWS), 0, impl_of(be)->stream, x, rows, n_heads, head_dim,
                       w, eps, nrnd, rope_dim, dp, freqs, rrnd);
        CK_LAUNCH();
        return;
    }
    launch_pdl(k_norm_rope, dim3((unsigned)rows), dim3(256), (size_t)head_dim * sizeof(float), impl_of(be)->stream, x,
               n_heads, head_dim, w, eps, nrnd, bf16, rope_dim, (const int64_t *)impl_of(be)->d_pos, freqs, rrnd,
               sim_nope);
    CK_LAUNCH();
}

/* The indexer's simulation of a row (Hadamard, BF16, FP4 per 32): one thread
 * per row, for dimensions the warp version does not take. */
__global__ void k_idx_sim(float *x, int rows, int dim)
{
    pdl_start();
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float *v = x + (size_t)r * dim;
    dsv4_hadamard(v, dim);
    for (int i = 0; i < dim; i++) v[i] = dsv4_round_bf16(v[i]);
    dsv4_fp4sim(v, dim, 32);
}

/* One warp per row of dim = 32 E (a power of two): sim.cuh's idx_sim_warp, the values of the serial version. */
template <int E> __global__ void k_idx_sim_w(float *x, int rows)
{
    pdl_start();
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (r >= rows) return;
    idx_sim_warp<E>(x + (size_t)r * 32 * E + lane * E, lane);
}

void cuda_idx_sim(dsv4_backend *be, float *x, int rows, int dim)
{
    if (rows <= 0) return;
    cudaStream_t st = impl_of(be)->stream;
    const unsigned g = (unsigned)((rows + 7) / 8);
    switch (dim) {
    case 32: launch_pdl(k_idx_sim_w<1>, dim3(g), dim3(256), 0, st, x, rows); break;
    case 64: launch_pdl(k_idx_sim_w<2>, dim3(g), dim3(256), 0, st, x, rows); break;
    case 128: launch_pdl(k_idx_sim_w<4>, dim3(g), dim3(256), 0, st, x, rows); break;
    case 256: launch_pdl(k_idx_sim_w<8>, dim3(g), dim3(256), 0, st, x, rows); break;
    case 512: launch_pdl(k_idx_sim_w<16>, dim3(g), dim3(256), 0, st, x, rows); break;
    default: launch_pdl(k_idx_sim, dim3((rows + 63) / 64), dim3(64), 0, st, x, rows, dim); break;
    }
    CK_LAUNCH();
}

__global__ void k_swiglu(const float *g, const float *u, size_t n, float limit, float *m, unsigned rnd)
{
    pdl_start();
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = rnd_in(rnd, g[i]), ui = rnd_in(rnd, u[i]);
    if (limit > 0) {
        gi = fminf(gi, limit);
        ui = fminf(fmaxf(ui, -limit), limit);
    }
    m[i] = rnd_out(rnd, gi / (1.0f + expf(-gi)) * ui);
}

void cuda_swiglu(dsv4_backend *be, const float *g, const float *u, size_t n, float limit, float *m, unsigned rnd)
{
    if (!n) return;
    launch_pdl(k_swiglu, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, impl_of(be)->stream, g, u, n, limit, m,
               rnd);
    CK_LAUNCH();
}

/* The step's rows into the window ring, FP32 or (dsv4_kv.bf16_rows) BF16, as the CPU's kv_row_put. */
__global__ void k_kv_store(int window, int head_dim, const dsv4_seg *segs, int n_seg, float *slots, size_t slot_floats,
                           size_t win_off, const float *kv_new, bool bf16)
{
    pdl_start();
    const dsv4_seg s = segs[blockIdx.x];
    const int first = s.n > window ? s.n - window : 0, rf = dsv4_row_floats(head_dim, bf16);
    float *ring = slots + (size_t)s.slot * slot_floats + win_off;
    for (int i = first; i < s.n; i++) {
        float *dst = ring + (size_t)((s.pos0 + i) % window) * rf;
        const float *src = kv_new + (size_t)(s.t0 + i) * head_dim;
        for (int d = threadIdx.x; d < head_dim; d += blockDim.x)
            if (bf16)
                ((uint16_t *)dst)[d] = dsv4_f32_to_bf16(src[d]);
            else
                dst[d] = src[d];
    }
}

void cuda_kv_store(dsv4_backend *be, int layer, int window, int head_dim, const dsv4_plan *plan, dsv4_kv *kv,
                   const float *kv_new)
{
    cuda_impl *im = impl_of(be);
    launch_pdl(k_kv_store, dim3(plan->n_seg), dim3(128), 0, im->stream, window, head_dim, (const dsv4_seg *)im->d_segs,
               plan->n_seg, kv->slots, kv->slot_floats, kv->layer[layer].win, kv_new, kv->bf16_rows);
    CK_LAUNCH();
}

/* ==== construction ======================================================= */

static void c_destroy(dsv4_backend *be)
{
    if (!be) return;
    cuda_impl *im = impl_of(be);
    if (im) {
        cudaSetDevice(im->device);
        for (int q = 0; q < 2; q++) cudaStreamSynchronize(im->queue[q]);
        cuda_route_trace_print(); /* -DROUTE_TRACE builds */
        for (int q = 0; q < 2; q++)
            for (int i = 0; i < CS_COUNT; i++) cudaFree(im->scratch[q][i]);
        cudaFree(im->d_plan);
        cuda_graphs_destroy(im);
        if (im->plan_pin) cudaFreeHost(im->plan_pin);
        if (im->plan_ev) cudaEventDestroy(im->plan_ev);
        for (int k = 0; k < SMP_SLOTS; k++) {
            if (im->smp_pin[k]) cudaFreeHost(im->smp_pin[k]); /* (d_smp: its device address) */
            if (im->smp_ev[k]) cudaEventDestroy(im->smp_ev[k]);
        }
        cudaFree(im->d_smp_parts);
        cudaFree(im->d_smp_coop);
        for (int i = 0; i < im->n_moe; i++) cudaFree(im->moe_tab[i]);
        for (int i = 0; i < im->n_wmem; i++) cudaFree(im->wmem[i]); /* the weights */
        free(im->wmem);
        if (im->prof_ev)
            for (int i = 0; i < MAX_PROF_EVENTS; i++) cudaEventDestroy(im->prof_ev[i]);
        free(im->prof_ev);
        free(im->prof_fam);
        for (int i = 0; i < 2; i++)
            if (im->pin[i]) {
                cudaFreeHost(im->pin[i]);
                cudaEventDestroy(im->pin_ev[i]);
            }
        for (int q = 0; q < 2; q++) cudaStreamDestroy(im->queue[q]);
        cudaEventDestroy(im->fork_ev);
        cudaEventDestroy(im->join_ev);
        cudaEventDestroy(im->lin_ev);
        free(im);
    }
    free(be);
}

extern "C" int dsv4_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
    return n;
}

extern "C" dsv4_backend *dsv4_backend_cuda_create(int device, char *err, size_t errlen)
{
    int n = dsv4_cuda_device_count();
    if (n <= 0) {
        snprintf(err, errlen, "no CUDA device is available");
        return NULL;
    }
    if (device < 0 || device >= n) {
        snprintf(err, errlen, "CUDA device %d does not exist (%d present)", device, n);
        return NULL;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, device));
    if (prop.major < 9) {
        snprintf(err, errlen, "%s (sm_%d%d): this build's CUDA kernels need sm_90 (Hopper) or newer", prop.name,
                 prop.major, prop.minor);
        return NULL;
    }
    CK(cudaSetDevice(device));
    dsv4_backend *be = (dsv4_backend *)calloc(1, sizeof(*be));
    cuda_impl *im = (cuda_impl *)calloc(1, sizeof(*im));
    im->device = device;
    im->smem_optin = prop.sharedMemPerBlockOptin;
    im->n_sm = prop.multiProcessorCount;
    for (int q = 0; q < 2; q++) CK(cudaStreamCreateWithFlags(&im->queue[q], cudaStreamNonBlocking));
    im->stream = im->queue[0];
    CK(cudaEventCreateWithFlags(&im->fork_ev, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&im->join_ev, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&im->lin_ev, cudaEventDisableTiming));
    cuda_attn_init(im->smem_optin);
    cuda_hc_init();
    cuda_indexer_init(im);
    cuda_moe_mma_init();
    cuda_wg8_init();
    cuda_mma_init();
    be->name = "cuda";
    be->kv_bf16 = true;     /* compress, kv_store, attention and the indexer read and write BF16 cached rows */
    be->kv_fp4_keys = true; /* compress packs the indexer keys, the indexer's scores read them (not its first kernel) */
    be->moe_a8_kmax = cuda_moe_a8_kmax();
    be->lt_check = cuda_lt_check;
    be->sm = prop.major * 10 + prop.minor;
    be->ordinal = device;
    snprintf(be->device, sizeof be->device, "%s (sm_%d%d)", prop.name, prop.major, prop.minor);
    be->impl = im;
    be->destroy = c_destroy;
    be->bind = c_bind;
    be->weight_load = c_weight_load;
    be->step_begin = c_step_begin;
    be->prof_mark = c_prof_mark;
    be->prof_collect = c_prof_collect;
    be->alloc = c_alloc;
    be->mem_free = c_mem_free;
    be->work_reserve = c_work_reserve;
    be->free = c_free;
    be->upload = c_upload;
    be->download = c_download;
    be->copy = c_copy;
    be->copy_rows = c_copy_rows;
    be->embed = cuda_embed;
    be->embed_hc = cuda_embed_hc;
    be->linear = cuda_linear;
    be->linear_groups = cuda_linear_groups;
    be->linear_multi = cuda_linear_multi;
    be->linear_to_post = cuda_linear_to_post;
    be->rmsnorm = cuda_rmsnorm;
    be->rmsnorm_bf16 = cuda_rmsnorm_bf16;
    be->rope = cuda_rope;
    be->round_bf16 = cuda_round_bf16;
    be->fill = c_fill;
    be->kv_sim = cuda_kv_sim;
    be->norm_rope = cuda_norm_rope;
    /* DSV4_CUDA_QUEUES=1: one queue (everything in issue order; the same bits either way) */
    const char *nq = getenv("DSV4_CUDA_QUEUES");
    if (!nq || strcmp(nq, "1")) {
        be->side = c_side;
        be->join = c_join;
    }
    be->idx_sim = cuda_idx_sim;
    be->hc_pre = cuda_hc_pre;
    be->hc_post = cuda_hc_post;
    be->hc_head = cuda_hc_head;
    be->hc_post_next = cuda_hc_post_next;
    be->compress = cuda_compress;
    be->compress_pair = cuda_compress_pair;
    be->indexer_topk = cuda_indexer_topk;
    be->attn = cuda_attn;
    be->kv_store = cuda_kv_store;
    be->moe_route = cuda_moe_route;
    be->moe_next = cuda_moe_next;
    be->moe_experts = cuda_moe_experts;
    be->moe_prepare = cuda_moe_prepare;
    be->moe_sum = cuda_moe_sum;
    be->swiglu = cuda_swiglu;
    be->graph_begin = cuda_graph_begin;
    be->graph_end = cuda_graph_end;
    be->graph_peek = cuda_graph_peek;
    be->graph_drop = cuda_graph_drop;
    be->graph_piece = cuda_graph_piece;
    be->sample = cuda_sample;
    be->sample_launch = cuda_sample_launch;
    be->sample_wait = cuda_sample_wait;
    return be;
}
