/*
 * common.cuh - shared by the CUDA backend's op families: the backend's state,
 * error checking, weight descriptors and the device-side decoding of every
 * weight format (through the codecs of model/quant.h, shared with the CPU).
 *
 * This is the first, correctness-first CUDA backend: every op computes each
 * output with a fixed reduction order independent of the batch (the same
 * contract as the CPU backend), with simple kernels. Speed comes next, op
 * family by op family, each measured against the roofline.
 */
#ifndef DSV4_BACKEND_CUDA_COMMON_CUH
#define DSV4_BACKEND_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "backend/backend.h"
}
#include "model/quant.h"

/* A CUDA failure inside an op is a broken invariant (bad launch, device lost):
 * say where and stop. Failures that a user can cause are caught at load. */
#define CK(x) cuda_check((x), #x, __FILE__, __LINE__)
static inline void cuda_check(cudaError_t e, const char *what, const char *file, int line)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "dsv4: CUDA error %s at %s:%d (%s)\n", cudaGetErrorString(e), file, line, what);
        abort();
    }
}
#define CK_LAUNCH() CK(cudaGetLastError())

enum {
    CS_ACTQ,
    CS_SCORES,
    CS_MOE_G,
    CS_MOE_U,
    CS_MOE_Y,
    CS_MOE_XQ,
    CS_ROWS,
    CS_SAMPLE,
    CS_HC,
    CS_MMA_X, /* mma.cu: packed activations and their scales */
    CS_MMA_S,
    CS_MOE_PLAN, /* moe_mma.cu: pair lists and tiles, packed inputs of the two MMA passes */
    CS_MOE_XP,
    CS_MOE_MP,
    CS_MMA_PART, /* mma.cu, decode's streamed kernel: shared tiles' segment sums, and a counter per tile */
    CS_MMA_CNT,
    CS_LIN_PARTS, /* wg8.cu: a linear's parts for the next hc_post (cuda_impl.lin_pend) */
    CS_LT_WS,     /* lt.cu: the FP8 weights' block scales as FP32, or (the BF16 GEMM) their values as BF16 */
    CS_COUNT
};

/* Weight descriptor as kernels see it. */
struct wdesc {
    const void *data;  /* element bytes of row 0 of the tensor (not of a view) */
    const void *scale;
    int fmt;           /* dsv4_wfmt */
    int dtype;         /* dsv4_dtype of the elements */
    int sdtype;        /* dsv4_dtype of the scales */
    int64_t rows, cols, row0;
    int br, bc;
    int64_t scale_cols;
    float scale2;
    int64_t row_bytes; /* bytes of one row of elements */
    int vec;           /* 1 + RK_*: rows are whole 4-byte words (rowdot.cuh); 0: element by element */
    int chunk16;       /* FP8 / unquantized rows of whole 16-byte chunks: rowdot.cuh's chunk path */
};

/* Element kinds of rowdot.cuh's chunked path. */
enum { RK_F32, RK_BF16, RK_F16, RK_FP8, RK_MXFP4, RK_NVFP4 };

#define MAX_MOE_TABLES 1024
#define MAX_PROF_EVENTS 8192
#define MAX_GRAPH_KEY 512
/* A decode step's graph: one piece, or several where a caller cut the capture (graph_piece: expert parallelism's
 * all-reduce runs between two pieces, outside any graph). */
struct cuda_graph {
    cudaGraphExec_t *piece;
    int n_piece, cap_piece;
    unsigned gen;
    bool seen;
};
/* The routed experts' slots a token's sum adds, in ascending expert id (insertion sort: equal ids keep their
 * slot order): k_expert_sum's order, which k_hc_post's folded sum repeats. */
#define MAX_K 16
__device__ __forceinline__ void expert_slot_order(const int32_t *idx_t, int k, int *order)
{
    for (int i = 0; i < k; i++) order[i] = i;
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && idx_t[order[j]] < idx_t[order[j - 1]]; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
}

/* The plan of the routed experts' tensor-core path that k_route makes where one block routes every token
 * (moe.cu): list, tiles and ntiles as k_moe_plan writes them for the n k pairs (experts in [lo, hi), all when
 * hi <= lo), tiles of ts pairs; list NULL: none. */
struct route_plan {
    int *list;
    int4 *tiles;
    int *ntiles;
    int ts, lo, hi;
};
/* The kernels cuda_moe_mma takes for n tokens (moe_mma.cu's moe_choose), its plan's pairs a tile (ts), the most
 * tiles (maxt) and the plan's scratch. */
struct moe_choice {
    bool a8, bp2;
    int NP, wgn, ntt, ts, maxt;
    int4 *tiles;
    int *ntiles, *list;
};

#define SMP_SLOTS 3
struct cuda_impl {
    int device;
    size_t smem_optin; /* the most shared memory a block may have (cudaDevAttrMaxSharedMemoryPerBlockOptin) */
    int n_sm;          /* streaming multiprocessors */
    size_t ix_smem_max, ix_topk_smem_max; /* the most dynamic shared memory k_idx_score, k_idx_topk may take */
    /* the queue ops go to: queue[0], or queue[1] between side(be, true) and side(be, false) (c_side) */
    cudaStream_t stream;
    cudaStream_t queue[2];
    int q;                         /* stream == queue[q] */
    cudaEvent_t fork_ev, join_ev; /* queue 1 starts after fork_ev (queue 0); queue 0 waits for join_ev */
    cudaEvent_t lin_ev;           /* cuda_lin_flush on another queue than the current: the current waits for it */
    bool side_open;               /* queue 1 has had work since queue 0 last waited for it */
    bool hc_comb_open;            /* an hc_pre's post and comb run on queue 1, queue 0 has not waited for them */
    /* hc_post_next's announcement for the next hc_post (fn NULL: none), and the mixing logits' parts that
     * hc_post then left in CS_HC for the hc_pre / hc_head of those weights on X (fn NULL: none; hc.cu) */
    struct {
        const float *fn;
        bool head;
    } hc_next;
    struct {
        const float *fn, *X;
        int n, n_mix, q;
    } mix_pend;
    /* the routed experts announced for the next moe_route (cuda_moe_next; p NULL: none), and the plan of their
     * tensor-core path that the router made (cuda_moe_plan_pend: its ids, tiles' scratch, pairs, tile size,
     * experts [lo, hi) and queue; idx NULL: none) */
    struct {
        const dsv4_moe_params *p;
        int q;
    } moe_next;
    struct {
        const dsv4_moe_params *p; /* the key: these experts, n tokens' ids idx, activation quantisation aq, on
                                   * queue q */
        const int32_t *idx;
        int n, q;
        bool aq;
        moe_choice c;
    } plan_pend;
    /* the current step's plan and page table, on the device: pointers into d_plan (c_step_begin's layout) */
    int32_t *d_tokens, *d_tok_seg, *d_page_table;
    int64_t *d_pos;
    dsv4_seg *d_segs;
    char *d_plan;
    size_t cap_plan, plan_pt; /* bytes; the page table's bytes it was laid out for */
    /* grow-only scratch, one set per queue (work on the two queues runs at the same time) */
    void *scratch[2][CS_COUNT];
    size_t scratch_cap[2][CS_COUNT];
    /* expert descriptor tables, keyed by their first gate weight's device memory (expert_key; NULL: a free slot) */
    const void *moe_key[MAX_MOE_TABLES];
    wdesc *moe_tab[MAX_MOE_TABLES];
    int moe_mma[MAX_MOE_TABLES]; /* the layer's experts' tensor-core path, MOE_* (cuda_moe_mma_eligible) */
    int n_moe;
    /* routed experts whose sum over the slots the next hc_post folds in (dsv4_moe_params.sum_in_hc_post):
     * their out (NULL: none pending), slot outputs Y [n k, D], idx, and the queue they ran on */
    struct {
        float *out;
        const float *Y;
        const int32_t *idx;
        int n, k, D, q;
    } moe_pend;
    /* a linear's output y [n, D] left as P parts [P][n][D] for the next hc_post, which adds them in part order
     * (cuda_linear_to_post; y NULL: none pending), and the queue it ran on */
    struct {
        float *y;
        const float *parts;
        int P, n, D, ldy, q;
    } lin_pend;
    bool prof_lost_said; /* --profile: the message about untimed spans was printed */
    /* the weights' device buffers (cuda_weight_malloc), freed with the backend */
    void **wmem;
    int n_wmem, cap_wmem, wmem_at; /* wmem_at: where c_free looks first (entries it freed are NULL) */
    /* weight upload: two pinned staging buffers, each with the event of its last copy */
    void *pin[2];
    cudaEvent_t pin_ev[2];
    int pin_next;
    /* the plan's way up: one pinned buffer, the event of its last copy; the
     * page table goes up when its version moves */
    char *plan_pin;
    size_t plan_pin_cap;
    cudaEvent_t plan_ev;
    uint64_t pt_version;
    /* decode graphs (graph.cu), by batch size. Device buffers that move
     * (scratch growth) bump gen; graphs of an older gen are captured again. */
    bool graph_mode, capturing;
    int graph_state; /* what graph_begin answered */
    int graph_key, graph_next; /* the step's key; in a replay, the pieces launched so far */
    unsigned gen;
    struct cuda_graph *graphs; /* [MAX_GRAPH_KEY + 1] */
    /* sampling: requests up and picks down through pinned buffers, one a slot (SMP_SLOTS: sample_launch's two,
     * which the engine alternates, and sample's own) */
    void *smp_pin[SMP_SLOTS], *d_smp[SMP_SLOTS]; /* requests and picks: mapped pinned memory, its device address */
    int smp_cap[SMP_SLOTS];
    cudaEvent_t smp_ev[SMP_SLOTS]; /* the slot's last launch */
    void *d_smp_parts;             /* k_sample's argmax parts and a counter a row (any slot's launch) */
    int smp_parts_cap;
    void *d_smp_coop; /* k_sample<true>'s exchange, for smp_coop_cap blocks */
    int smp_coop_cap;
    /* --profile: one event per mark, the family each span belongs to */
    cudaEvent_t *prof_ev;
    int *prof_fam;
    int n_prof;
};

static inline cuda_impl *impl_of(dsv4_backend *be) { return (cuda_impl *)be->impl; }

/* The trace builds' clocks (MOE_TRACE, IX_TRACE, ROUTE_TRACE): %globaltimer in ns, read once dep (a value the
 * stamp is to follow) is computed; and the SM the thread runs on. */
__device__ __forceinline__ unsigned long long dev_ns(float dep = 0.0f)
{
    unsigned long long v;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v) : "f"(dep));
    return v;
}
__device__ __forceinline__ unsigned dev_smid(void)
{
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    return sm;
}

/* Programmatic dependent launch of the small per-layer kernels (launch_pdl):
 * a kernel may be scheduled while the one before it in the stream finishes,
 * so its launch latency hides behind that kernel's tail. It begins with
 * pdl_start(): griddepcontrol.wait returns once the kernel before has
 * completed and its writes are visible (every access after it is ordered
 * as without PDL), then launch_dependents lets the next kernel be scheduled
 * in turn. Both are no-ops in a kernel launched without the attribute.
 * What reads only constants (weights, the step's positions: uploaded before
 * its first kernel) may come before it, under the kernel before's tail. */
__device__ __forceinline__ void pdl_start(void)
{
    asm volatile("griddepcontrol.wait;\n\tgriddepcontrol.launch_dependents;" ::: "memory");
}

/* A launch with a cluster of cluster_z blocks along z (0: no cluster) and/or
 * programmatic dependent launch. */
template <typename... KA, typename... A>
static inline void cuda_launch(void (*k)(KA...), dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                               unsigned cluster_z, bool pdl, A... args)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cudaLaunchAttribute at[2];
    unsigned na = 0;
    if (cluster_z) {
        at[na].id = cudaLaunchAttributeClusterDimension;
        at[na].val.clusterDim.x = 1;
        at[na].val.clusterDim.y = 1;
        at[na].val.clusterDim.z = cluster_z;
        na++;
    }
    if (pdl) {
        at[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[na].val.programmaticStreamSerializationAllowed = 1;
        na++;
    }
    cfg.attrs = at;
    cfg.numAttrs = na;
    CK(cudaLaunchKernelEx(&cfg, k, ((KA)args)...));
}

/* Whether a cluster of cluster_z blocks of kernel k (threads a block, smem bytes of dynamic shared memory each)
 * can be resident on this GPU. */
template <typename... KA>
static inline bool cuda_cluster_fits(void (*k)(KA...), unsigned threads, size_t smem, unsigned cluster_z)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(1, 1, cluster_z);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute at;
    at.id = cudaLaunchAttributeClusterDimension;
    at.val.clusterDim.x = 1;
    at.val.clusterDim.y = 1;
    at.val.clusterDim.z = cluster_z;
    cfg.attrs = &at;
    cfg.numAttrs = 1;
    int n = 0;
    const bool ok = cudaOccupancyMaxActiveClusters(&n, k, &cfg) == cudaSuccess && n > 0;
    (void)cudaGetLastError();
    return ok;
}

template <typename... KA, typename... A>
static inline void launch_pdl(void (*k)(KA...), dim3 grid, dim3 block, size_t smem, cudaStream_t st, A... args)
{
    cuda_launch(k, grid, block, smem, st, 0, true, args...);
}

void *cuda_scratch(dsv4_backend *be, int slot, size_t bytes);

/* linear_multi's next launch: from weight i on, the weights not yet done with i's part count P[i], at
 * most max of them; their indices into idx (marked done); how many. */
static inline int multi_next(const int *P, int m, int i, int max, bool *done, int *idx)
{
    int c = 0;
    for (int k = i; k < m && c < max; k++) {
        if (done[k] || P[k] != P[i]) continue;
        done[k] = true;
        idx[c++] = k;
    }
    return c;
}

/* The prefill kernels' switches (dsv4_cuda_prefill_knob): -1 auto, 0 never, 1 every call they can take; read
 * from the environment once. DSV4_WG8_N64: wg8.cu's 64-token tiles (auto: where a launch keeps its blocks);
 * DSV4_MOE_BP: the routed experts' tiles of 2 pairs (moe16_bp2). */
enum {
    CUDA_KNOB_MOE_WG,
    CUDA_KNOB_WGBF,
    CUDA_KNOB_WGF8,
    CUDA_KNOB_WG8_N64,
    CUDA_KNOB_MOE_BP,
    CUDA_KNOB_LT,
    CUDA_KNOB_NRW,  /* DSV4_NORM_ROPE_W: norm_rope's rows a warp each (1 every eligible call, 0 never) */
    CUDA_KNOB_TRIG, /* DSV4_MMA_TRIG: k_mma_bf16 triggers its dependents after its wait (0 never) */
    CUDA_KNOBS
};
int cuda_knob(int k);

/* A positive integer from the environment (a tuning knob), else dflt (0 reads as unset: a switch is cuda_env_on). */
static inline int cuda_env_int(const char *name, int dflt)
{
    const char *e = getenv(name);
    return e && atoi(e) > 0 ? atoi(e) : dflt;
}

/* A switch that is on unless the environment sets it to 0 (a baseline: DSV4_WG8=0, DSV4_HC_SIDE=0, ...). */
static inline bool cuda_env_on(const char *name)
{
    const char *e = getenv(name);
    return !(e && e[0] == '0');
}

/* The K-split linears' parts added by st.async onto an mbarrier a block (rowdot.cuh's cl_push_*: k_wg8,
 * k_mma_fp8, k_mma_bf16, k_wgbf, k_wgf8) unless DSV4_LIN_ASYNC=0: then through a cluster barrier (its release a
 * MEMBAR.ALL.GPU). The same sums, the same bits. */
static inline bool cuda_lin_async(void)
{
    static int on = -1;
    if (on < 0) on = cuda_env_on("DSV4_LIN_ASYNC");
    return on != 0;
}

/* BF16 rounding folded into an op's load (DSV4_RND_IN) or store (DSV4_RND_OUT). */
__device__ __forceinline__ float rnd_in(unsigned rnd, float v) { return rnd & DSV4_RND_IN ? dsv4_round_bf16(v) : v; }
__device__ __forceinline__ float rnd_out(unsigned rnd, float v) { return rnd & DSV4_RND_OUT ? dsv4_round_bf16(v) : v; }

/* The angle's cosine and sine (double precision of the FP32 angle, as the CPU backend; inverse: -angle). */
__device__ __forceinline__ void rope_cs(int64_t pos, float freq, bool inverse, float &cs, float &sn)
{
    const float ang = (float)pos * freq;
    cs = (float)cos((double)ang), sn = (float)sin((double)ang);
    if (inverse) sn = -sn;
}

/* Pair i of a head's rotated part v rotated by (cs, sn). */
__device__ __forceinline__ void rope_pair(float *v, int i, float cs, float sn, unsigned rnd)
{
    const float a = rnd_in(rnd, v[2 * i]), b = rnd_in(rnd, v[2 * i + 1]);
    v[2 * i] = rnd_out(rnd, a * cs - b * sn);
    v[2 * i + 1] = rnd_out(rnd, a * sn + b * cs);
}

/* cudaMalloc for a weight, in whole 4-byte words: the buffer is kept in the
 * backend's list and freed when the backend is destroyed (engine close).
 * cudaSuccess or the error. */
cudaError_t cuda_weight_malloc(dsv4_backend *be, void **p, size_t bytes);

/* bench_state.cu: the decode state of the kernel timings (batch sequences,
 * one token each at position ctx - 1, pseudo-random rows on pages of 256 tokens), and
 * the time of one call in microseconds over reps calls after a warm-up. */
struct bench_step {
    dsv4_layer_state ls;
    dsv4_kv kv;
    dsv4_seg *segs;
    int32_t *tokens, *tok_seg;
    int64_t *pos;
    dsv4_plan plan;
};
/* fp4_keys: the pages hold FP4 indexer keys of row_floats values (dsv4_kv.fp4_keys: the fill's bytes as
 * codes, scales 2^-3 .. 2^0 as dsv4_seq_skip gives them); bf16_rows: rows of row_floats values as BF16
 * (dsv4_kv.bf16_rows; the fill's words are BF16 pairs). slot_floats: the caller's, for the rows it keeps there. */
bool bench_step_init(bench_step *b, dsv4_backend *be, int batch, int64_t ctx, int ratio, int row_floats,
                     size_t slot_floats, bool fp4_keys = false, bool bf16_rows = false);
void bench_step_free(bench_step *b, dsv4_backend *be);
double bench_time_calls(dsv4_backend *be, void (*call)(void *), void *ctx, int reps);

/* mma.cu: tensor-core FP8 linears (for the weights cuda_mma_eligible accepts) */
bool cuda_mma_on(void);
bool cuda_mma_eligible(const wdesc &w);
void cuda_linear_mma(dsv4_backend *be, const wdesc &w, int G, const float *x, int ldx, size_t xg, int n, float *y,
                     int ldy, size_t yg, bool ref);
/* m (<= 64) FP8 linears of one input, the same K and ref, as m calls of cuda_linear_mma (linear_multi). BF16
 * weights with ref (reference numerics): BF16(x) alone, one MMA a step instead of x's three BF16 parts */
void cuda_linear_mma_multi(dsv4_backend *be, int m, const wdesc *w, const float *x, int ldx, int n, float *const *y,
                           const int *ldy, bool ref);
/* wg8.cu: FP8 linears in reference numerics on wgmma (linear.cu sends them there) */
bool cuda_wg8_eligible(const wdesc &w);
void cuda_linear_to_post(dsv4_backend *be, const dsv4_w *w, const float *x, int ldx, int n, float *y, int ldy);
void cuda_lin_flush(dsv4_backend *be);
/* Token t's value c of a linear_to_post's P parts [P][n][D]: the parts added in part order, as k_wg8's
 * cluster adds them (cluster_sum_parts). */
__device__ __forceinline__ float lin_parts_sum(const float *parts, int P, int n, int D, int t, int c)
{
    float s = parts[(size_t)t * D + c];
    for (int p = 1; p < P; p++) s += parts[((size_t)p * n + t) * D + c];
    return s;
}
bool cuda_wgbf_eligible(const wdesc &w);
bool cuda_wgbf_use(const wdesc &w, int n);
bool cuda_wgf8_eligible(const wdesc &w);
bool cuda_wgf8_use(const wdesc &w, int n);
void cuda_linear_wgf8(dsv4_backend *be, int m, const wdesc *w, const int *P, int G, const float *x, int ldx, size_t xg,
                      int n, float *const *y, const int *ldy, size_t yg);
/* one: BF16(x) alone (reference numerics: the reference's BF16 activations), else x's three BF16 parts */
void cuda_linear_wgbf(dsv4_backend *be, int m, const wdesc *w, const int *P, int G, const float *x, int ldx, size_t xg,
                      int n, float *const *y, const int *ldy, size_t yg, bool one);
/* parts (linear_to_post: G 1, one chunk, the launch one part a block): each block's part to parts [P][n][rows]
 * without the cluster, y left to the next hc_post */
void cuda_linear_wg8(dsv4_backend *be, const wdesc &w, int G, const float *x, int ldx, size_t xg, int n, float *y,
                     int ldy, size_t yg, float *parts = nullptr);
void cuda_linear_wg8_multi(dsv4_backend *be, int m, const wdesc *w, const float *x, int ldx, int n, float *const *y,
                           const int *ldy);
void cuda_wg8_init(void);
/* lt.cu: reference numerics' FP8 linears through cuBLASLt (--prefill-gemm cublaslt; be->lt_prefill) */
bool cuda_lt_takes(dsv4_backend *be, const wdesc &w, int n, const float *y, int ldy);
int cuda_lt_tokens(int n);
void cuda_linear_lt(dsv4_backend *be, int m, const wdesc *w, const float *x, int ldx, int n, float *const *y,
                    const int *ldy);
bool cuda_lt_check(dsv4_backend *be, char *err, size_t errlen);
bool cuda_lt_bf_takes(dsv4_backend *be, const wdesc &w, int G, int n, const float *y, int ldy, size_t yg);
void cuda_linear_lt_bf(dsv4_backend *be, int m, const wdesc *w, int G, const float *x, int ldx, size_t xg, int n,
                       float *const *y, const int *ldy, size_t yg);
void cuda_mma_init(void); /* mma.cu: the FP8 MMA kernels' shared memory, on every device */
/* moe_mma.cu: tensor-core FP4 experts */
enum { MOE_NONE, MOE_BF16, MOE_F16 };
int cuda_moe_mma_eligible(const dsv4_moe_params *p);
void cuda_moe_fp4_layout(dsv4_backend *be, const dsv4_moe_params *p, const wdesc *tab);
void cuda_moe_prepare(dsv4_backend *be, const dsv4_moe_params *p);
void cuda_moe_forget(dsv4_backend *be, const void *p);
/* Kernel attributes set once per backend, at its creation: more than 48 KB
 * of dynamic shared memory for the kernels that take it. */
void cuda_attn_init(size_t smem_optin);
void cuda_indexer_init(cuda_impl *im);
void cuda_moe_mma_init(void);
/* The largest K (hidden size, expert width) of the W4A8 expert kernels (dsv4_backend.moe_a8_kmax). */
int cuda_moe_a8_kmax(void);
/* The router's plan (moe.cu's k_route, for n tokens where cuda_route_plans) of p's experts: the scratch
 * cuda_moe_mma reads and its tile size, recorded with the kernels' choice in plan_pend; P->list NULL where they are
 * not on the tensor cores. */
void cuda_moe_plan_pend(dsv4_backend *be, const dsv4_moe_params *p, int n, const int32_t *idx, route_plan *P);
int cuda_moe_mode(dsv4_backend *be, const dsv4_moe_params *p);
/* Reference numerics' FP8 activations in front of p's quantized experts, as the CPU's linear does (the experts'
 * kernels and the router's plan of them both take this). */
static inline bool cuda_moe_aq(const dsv4_backend *be, const dsv4_moe_params *p)
{
    return be->act_quant && p->w1[0].fmt != DSV4_WF_FLOAT;
}
bool cuda_route_plans(int n, int k);
void cuda_moe_mma(dsv4_backend *be, const dsv4_moe_params *p, const wdesc *tab, int mode, const float *x, int n,
                  const int32_t *idx, const float *wts, bool aq, float *M, float *Y);

static inline wdesc wdesc_of(const dsv4_w *w)
{
    wdesc d;
    d.data = w->dev;
    d.scale = w->dev_scale;
    d.fmt = w->fmt;
    d.dtype = w->dtype;
    d.sdtype = w->scale_dtype;
    d.rows = w->ne[0];
    d.cols = w->ne[1];
    d.row0 = w->row0;
    d.br = w->block_rows > 0 ? w->block_rows : 128;
    d.bc = w->block_cols > 0 ? w->block_cols : 128;
    d.scale_cols = w->scale_cols;
    d.scale2 = w->scale2;
    int k;
    switch (w->fmt) {
    case DSV4_WF_FP8: d.row_bytes = d.cols, k = RK_FP8; break;
    case DSV4_WF_MXFP4: d.row_bytes = d.cols / 2, k = RK_MXFP4; break;
    case DSV4_WF_NVFP4: d.row_bytes = d.cols / 2, k = RK_NVFP4; break;
    default:
        d.row_bytes = d.cols * dsv4_dtype_size(w->dtype);
        k = w->dtype == DSV4_DT_F32 ? RK_F32 : w->dtype == DSV4_DT_BF16 ? RK_BF16 : RK_F16;
    }
    /* rowdot.cuh's word path: whole 4-byte words per row, an FP8 scale block of whole words */
    d.vec = k >= 0 && d.row_bytes % 4 == 0 && (uintptr_t)w->dev % 4 == 0 && (k != RK_FP8 || d.bc % 4 == 0) ? 1 + k : 0;
    d.chunk16 = d.vec && k <= RK_FP8 && d.row_bytes % 16 == 0 && (uintptr_t)w->dev % 16 == 0 &&
                (k != RK_FP8 || d.bc % 16 == 0);
    return d;
}

/* Element (r, i) of a weight, r an absolute row. Exact in FP32. */
__device__ __forceinline__ float w_at(const wdesc &w, int64_t r, int64_t i)
{
    const int64_t n = w.cols;
    switch (w.fmt) {
    case DSV4_WF_FLOAT:
        if (w.dtype == DSV4_DT_BF16) return dsv4_bf16_to_f32(((const uint16_t *)w.data)[r * n + i]);
        if (w.dtype == DSV4_DT_F32) return ((const float *)w.data)[r * n + i];
        return dsv4_f16_to_f32(((const uint16_t *)w.data)[r * n + i]);
    case DSV4_WF_FP8: {
        float s;
        const int64_t k = (r / w.br) * w.scale_cols + i / w.bc;
        if (w.sdtype == DSV4_DT_F32) s = ((const float *)w.scale)[k];
        else s = dsv4_e8m0_to_f32(((const uint8_t *)w.scale)[k]);
        return dsv4_e4m3_to_f32(((const uint8_t *)w.data)[r * n + i]) * s;
    }
    default: {
        const uint8_t b = ((const uint8_t *)w.data)[r * (n / 2) + i / 2];
        const float v = dsv4_e2m1_to_f32((i & 1) ? (b >> 4) : (b & 15));
        if (w.fmt == DSV4_WF_MXFP4) return v * dsv4_e8m0_to_f32(((const uint8_t *)w.scale)[r * w.scale_cols + i / 32]);
        return v * dsv4_e4m3_to_f32(((const uint8_t *)w.scale)[r * w.scale_cols + i / 16]) * w.scale2;
    }
    }
}

/* Warp-level sum in a fixed butterfly order. */
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Block-level sum in a fixed order (blockDim.x a multiple of 32, <= 1024). */
/* sum of x[i]^2 over this thread's i = threadIdx.x + k blockDim.x < n, in
 * increasing k, as the plain loop adds them - but with U loads in flight
 * before their products are added (a block per row at batch 1 otherwise
 * waits out one memory latency per element it reads). */
template <int U> __device__ __forceinline__ float sumsq_strided(const float *x, int n)
{
    float s = 0;
    const int st = blockDim.x;
    int i = threadIdx.x;
    for (; i + (U - 1) * st < n; i += U * st) {
        float v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = x[i + u * st];
#pragma unroll
        for (int u = 0; u < U; u++) s += v[u] * v[u];
    }
    for (; i < n; i += st) s += x[i] * x[i];
    return s;
}

__device__ __forceinline__ float block_sum(float v, float *sh /* [32] */)
{
    v = warp_sum(v);
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    float t = 0;
    if (wid == 0) {
        t = lane < nw ? sh[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0) sh[0] = t;
    }
    __syncthreads();
    return sh[0];
}

/* The block size of the rmsnorm op's rows (the sums' order depends on it). */
static inline int rmsnorm_threads(int dim) { return dim > 16 * 256 ? 512 : 256; }

/* y = RMSNorm(x) of one row by the whole block (k_rmsnorm; k_hc_split's
 * fused norm, which must give the same bits: same block size, same order).
 * WAIT: griddepcontrol.wait after the weights' loads (x is the kernel
 * before's); without it the caller has waited and x is its own. */
template <bool WAIT>
__device__ __forceinline__ void rmsnorm_row(const float *xr, const float *w, int dim, float eps, float *yr,
                                            unsigned rnd)
{
    __shared__ float sh[32];
    /* rows of up to 16 elements per thread (4,096 at 256 threads, 8,192 at 512) are held
     * in registers: the weights fetched before the wait, the row at once after
     * it (a loop fetching one per step would wait a round trip each), the
     * squares added in the order of sumsq_strided, the row written in one pass */
    constexpr int U = 16;
    const bool held = dim <= U * (int)blockDim.x;
    float wv[U], xv[U];
    float s = 0;
    if (held) {
        /* every load unconditional (indices clamped into the row), so all are
         * in flight at once: a guarded load with its use next to it became a
         * branch per element, each waiting for its round trip */
#pragma unroll
        for (int u = 0; u < U; u++) { /* the weights before griddepcontrol.wait: x is the kernel before's */
            const int i = threadIdx.x + u * blockDim.x, ic = i < dim ? i : dim - 1;
            wv[u] = w ? w[ic] : 1.0f;
        }
        if (WAIT) pdl_start();
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = threadIdx.x + u * blockDim.x, ic = i < dim ? i : dim - 1;
            xv[u] = xr[ic];
        }
#pragma unroll
        for (int u = 0; u < U; u++) xv[u] = rnd_in(rnd, xv[u]); /* after every load is issued */
#pragma unroll
        for (int u = 0; u < U; u++)
            if (threadIdx.x + u * blockDim.x < dim) s += xv[u] * xv[u];
    } else {
        if (WAIT) pdl_start();
        for (int i = threadIdx.x; i < dim; i += blockDim.x) {
            const float v = rnd_in(rnd, xr[i]);
            s += v * v;
        }
    }
    s = block_sum(s, sh);
    const float k = 1.0f / sqrtf(s / (float)dim + eps);
    if (held) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = threadIdx.x + u * blockDim.x;
            if (i < dim) yr[i] = rnd_out(rnd, w ? wv[u] * (xv[u] * k) : xv[u] * k);
        }
    } else
        for (int i = threadIdx.x; i < dim; i += blockDim.x) {
            const float v = rnd_in(rnd, xr[i]);
            yr[i] = rnd_out(rnd, w ? w[i] * (v * k) : v * k);
        }
}

__device__ __forceinline__ float block_max(float v, float *sh)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    if (wid == 0) {
        float t = lane < nw ? sh[lane] : -INFINITY;
        for (int o = 16; o > 0; o >>= 1) t = fmaxf(t, __shfl_xor_sync(0xffffffffu, t, o));
        if (lane == 0) sh[0] = t;
    }
    __syncthreads();
    return sh[0];
}

/* An inclusive scan over a warp's lanes: lane i gets the sum of lanes 0 .. i. */
template <typename T> __device__ __forceinline__ T warp_scan_incl(T v)
{
    const int lane = threadIdx.x & 31;
    for (int o = 1; o < 32; o <<= 1) {
        T n = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += n;
    }
    return v;
}

/* Inclusive scan over a block of 1024 threads in thread order; sh holds 32;
 * *total gets the block's sum. */
template <typename T> __device__ T block_scan_incl(T v, T *sh, T *total)
{
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    v = warp_scan_incl(v);
    __syncthreads();
    if (lane == 31) sh[wid] = v;
    __syncthreads();
    if (wid == 0) sh[lane] = warp_scan_incl(sh[lane]);
    __syncthreads();
    if (wid > 0) v += sh[wid - 1];
    *total = sh[31];
    __syncthreads();
    return v;
}

/* Compressed row c of a layer of slot `slot` (main rows or indexer keys). */
__device__ __forceinline__ float *cmp_row(float *pages, const int32_t *page_table, int max_pages, int page_tokens,
                                          size_t page_floats, size_t off, int slot, int64_t c, int ratio, int width)
{
    const int64_t tok = c * ratio;
    const int32_t page = page_table[(size_t)slot * max_pages + tok / page_tokens];
    const int64_t row = (tok % page_tokens) / ratio;
    return pages + (size_t)page * page_floats + off + (size_t)row * width;
}

/* Element i of a cached row, FP32 or BF16 (dsv4_kv.bf16_rows; dsv4_row_floats floats a row). */
__device__ __forceinline__ float kv_el(const float *r, int i, bool bf16)
{
    return bf16 ? dsv4_bf16_to_f32(((const uint16_t *)r)[i]) : r[i];
}

/* Elements i .. i + 3 of a cached row (i % 4 == 0), FP32 or BF16, whatever the row's alignment. */
__device__ __forceinline__ float4 kv_ld4(const float *r, int i, bool bf16)
{
    if (bf16) {
        const uint16_t *p = (const uint16_t *)r + i;
        if (((uintptr_t)p & 7) == 0) {
            const uint2 u = *(const uint2 *)p;
            return make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u),
                               __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xffff0000u));
        }
        return make_float4(kv_el(r, i, true), kv_el(r, i + 1, true), kv_el(r, i + 2, true), kv_el(r, i + 3, true));
    }
    const float *p = r + i;
    if (((uintptr_t)p & 15) == 0) return *(const float4 *)p;
    return make_float4(p[0], p[1], p[2], p[3]);
}

/* The reference's act_quant: FP8 per 128 along the row, power-of-two scales. */
void cuda_act_quant(dsv4_backend *be, const float *x, int ldx, int n, int in, float *out);

/* op family entry points (each .cu file), installed by cuda_backend.cu */
void cuda_linear(dsv4_backend *be, const dsv4_w *w, const float *x, int ldx, int n, float *y, int ldy);
void cuda_linear_groups(dsv4_backend *be, const dsv4_w *w, int G, const float *x, int ldx, size_t xg, int n, float *y,
                        int ldy, size_t yg);
void cuda_linear_multi(dsv4_backend *be, int m, const dsv4_w *const *w, const float *x, int ldx, int n, float *const *y,
                       const int *ldy);
/* y = W x for a weight given as a descriptor (no act_quant). */
void cuda_linear_desc(dsv4_backend *be, const wdesc &w, const float *x, int ldx, int n, float *y, int ldy);
void cuda_embed(dsv4_backend *be, const dsv4_w *emb, const int32_t *tok, int n, float *out);
void cuda_embed_hc(dsv4_backend *be, const dsv4_w *emb, const int32_t *tok, int n, int hc, unsigned rnd, float *X);
void cuda_rmsnorm(dsv4_backend *be, const float *x, const float *w, int rows, int dim, int ld, float eps, float *y,
                  unsigned rnd);
void cuda_rmsnorm_bf16(dsv4_backend *be, float *x, int rows, int dim);
void cuda_rope(dsv4_backend *be, float *x, int n_tok, int n_heads, int ld_tok, int head_dim, int rope_dim,
               const int64_t *pos, const float *freqs, bool inverse, unsigned rnd);
void cuda_round_bf16(dsv4_backend *be, float *x, size_t n);
void cuda_kv_sim(dsv4_backend *be, float *x, int rows, int ld, int nope);
void cuda_idx_sim(dsv4_backend *be, float *x, int rows, int dim);
void cuda_swiglu(dsv4_backend *be, const float *g, const float *u, size_t n, float limit, float *m, unsigned rnd);
void cuda_hc_pre(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u, float *post, float *comb);
void cuda_hc_post(dsv4_backend *be, int hc, int dim, const float *o, const float *o2, const float *post,
                  const float *comb, int n, float *X, unsigned rnd);
void cuda_hc_head(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u);
void cuda_hc_post_next(dsv4_backend *be, const float *fn, bool head);
void cuda_hc_init(void);
/* Queue 0 waits for an hc_pre's post and comb left on queue 1 (hc_comb_open), if any. */
void cuda_hc_join(cuda_impl *im);
void cuda_compress(dsv4_backend *be, const dsv4_compress_params *p, const dsv4_plan *plan, dsv4_kv *kv,
                   const float *a, const float *g);
void cuda_compress_pair(dsv4_backend *be, const dsv4_compress_params *p1, const float *a1, const float *g1,
                        const dsv4_compress_params *p2, const float *a2, const float *g2, const dsv4_plan *plan,
                        dsv4_kv *kv);
/* What cuda_indexer_topk / cuda_attn take from CS_SCORES / CS_ROWS at most for a step of n_tok tokens at positions
 * below max_ctx (cuda_backend.cu's work_reserve). */
size_t cuda_indexer_work_bytes(const dsv4_indexer_params *p, int n_tok, int64_t max_ctx);
size_t cuda_attn_work_bytes(const dsv4_attn_params *p, int n_tok, int64_t max_ctx);
void cuda_indexer_topk(dsv4_backend *be, const dsv4_indexer_params *p, const dsv4_plan *plan, const dsv4_kv *kv,
                       const float *q, const float *w, int32_t *idx, int32_t *cnt);
void cuda_attn(dsv4_backend *be, const dsv4_attn_params *p, const dsv4_plan *plan, const dsv4_kv *kv, const float *q,
               const float *kv_new, const int32_t *idx, const int32_t *cnt, float *out);
void cuda_kv_store(dsv4_backend *be, int layer, int window, int head_dim, const dsv4_plan *plan, dsv4_kv *kv,
                   const float *kv_new);
void cuda_moe_route(dsv4_backend *be, const float *logits, int n, int n_experts, int k, const float *bias,
                    const dsv4_w *tid2eid, const int32_t *tokens, bool renorm, float route_scale, int32_t *idx,
                    float *wts);
void cuda_route_trace_print(void); /* moe.cu: k_route's phases (-DROUTE_TRACE builds; else nothing) */
void cuda_moe_next(dsv4_backend *be, const dsv4_moe_params *p);
void cuda_moe_experts(dsv4_backend *be, const dsv4_moe_params *p, const float *x, int n, const int32_t *idx,
                      const float *wts, float *out);
void cuda_moe_sum(dsv4_backend *be, const float *Y, const int32_t *idx, int n, int k, int D, float *out);
/* The pending routed-experts sum (moe_pend), if any, launched now on its queue's stream; then none pending. */
void cuda_moe_flush(dsv4_backend *be);
void cuda_sample(dsv4_backend *be, const float *logits, int V, int n, const int *rows, const dsv4_sample_req *req,
                 int32_t *tok);
void cuda_sample_launch(dsv4_backend *be, const float *logits, int V, int n, const int *rows,
                        const dsv4_sample_req *req, int slot);
void cuda_sample_wait(dsv4_backend *be, int slot, int n, int32_t *tok);
/* tokens[t] = the pick feed[t] of the slot's last launch where feed[t] >= 0 (a failed pick, -1, as token 0) */
void cuda_feed_tokens(cuda_impl *im, int32_t *tokens, const int32_t *feed, int n, int slot);
int cuda_graph_begin(dsv4_backend *be, int key);
void cuda_graph_end(dsv4_backend *be, int key);
int cuda_graph_peek(dsv4_backend *be, int key);
void cuda_graph_drop(dsv4_backend *be, int key);
void cuda_graph_piece(dsv4_backend *be, int begin);
void cuda_graphs_destroy(cuda_impl *im);

#endif
