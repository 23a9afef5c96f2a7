/*
 * lt.cu - reference numerics' FP8 linears through cuBLASLt's block-scaled FP8
 * GEMM (--prefill-gemm cublaslt): steps of at least lt_min tokens (prefill
 * chunks) take the vendor library's GEMM in place of wg8.cu's kernels.
 *
 * The operands are those of wg8.cu: the weight's E4M3 codes with one E8M0
 * scale per 128 x 128 block (CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F,
 * the view's scales widened to FP32 in scratch at every call: a cache keyed
 * by address served a freed tensor's scales to the next one allocated there,
 * v63), the tokens' act_quant codes
 * with one power-of-two scale per token and 128 columns (VEC128_32F; the
 * same codes as k_wg8_pack's: act_codes4), FP32 out. The library adds the
 * products in an order of its own, so the outputs are not wg8.cu's bits: a
 * token's logits then depend on whether it was in a step of lt_min tokens
 * or more (prefill against decode, a long prompt against the same prompt in
 * chunks), which is why it is an option and not the default (ARCHITECTURE's
 * batch invariance holds with it off). Measured against wg8.cu in
 * docs/PERFORMANCE.md.
 *
 * libcublasLt.so.13 is opened at run time (dlopen), as NCCL is: a build runs
 * where it is missing, and the option is refused there with the reason
 * (cuda_lt_check). One handle and 32 MB of workspace per GPU; the algorithm
 * the library's heuristic picks for a shape is kept for the next call of it
 * (these caches are the process's, used from the one thread that drives the
 * backends, as the engine does; the library is opened under a lock).
 *
 * v62's limits (one 128-row block wrong at every element, an Inf or NaN
 * making every output of the step wrong) were that cache's stale scales:
 * test_ops_cuda frees and allocates weights case after case (v63).
 */
#include <cublasLt.h>
#include <dlfcn.h>
#include <mutex>

#include "backend/cuda/rowdot.cuh"

#define LT_WS      (32u << 20) /* workspace bytes a GPU */
#define LT_MAXDEV  16
#define LT_PLANS   256    /* shapes whose algorithm is kept */
#define LT_VERSION 120900 /* VEC128_32F / BLK128x128_32F on Hopper: cuBLAS 12.9 */

/* The library's entry points this file calls. */
static struct {
    void *lib;
    size_t (*version)(void);
    cublasStatus_t (*create)(cublasLtHandle_t *);
    cublasStatus_t (*desc_create)(cublasLtMatmulDesc_t *, cublasComputeType_t, cudaDataType_t);
    cublasStatus_t (*desc_set)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void *, size_t);
    cublasStatus_t (*desc_destroy)(cublasLtMatmulDesc_t);
    cublasStatus_t (*layout_create)(cublasLtMatrixLayout_t *, cudaDataType, uint64_t, uint64_t, int64_t);
    cublasStatus_t (*layout_destroy)(cublasLtMatrixLayout_t);
    cublasStatus_t (*layout_set)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, const void *, size_t);
    cublasStatus_t (*pref_create)(cublasLtMatmulPreference_t *);
    cublasStatus_t (*pref_set)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t, const void *, size_t);
    cublasStatus_t (*pref_destroy)(cublasLtMatmulPreference_t);
    cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                                cublasLtMatmulHeuristicResult_t *, int *);
    cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *, cublasLtMatrixLayout_t,
                             const void *, cublasLtMatrixLayout_t, const void *, const void *, cublasLtMatrixLayout_t,
                             void *, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t,
                             cudaStream_t);
    char why[256]; /* empty: loaded */
    bool tried;
} lt;

/* The library, opened once: false with lt.why set where it cannot be. */
static bool lt_load(void)
{
    static std::mutex mu;
    std::lock_guard<std::mutex> lk(mu);
    if (lt.tried) return !lt.why[0];
    lt.tried = true;
    const char *env = getenv("DSV4_CUBLASLT"), *names[] = {env, "libcublasLt.so.13", "libcublasLt.so.12"};
    for (const char *n : names)
        if (n && (lt.lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lt.lib) {
        snprintf(lt.why, sizeof lt.why, "libcublasLt.so.13 could not be loaded (%s)", dlerror());
        return false;
    }
#define SYM(field, name)                                                                                               \
    do {                                                                                                               \
        *(void **)&lt.field = dlsym(lt.lib, name);                                                                     \
        if (!lt.field) {                                                                                               \
            snprintf(lt.why, sizeof lt.why, "libcublasLt has no %s", name);                                            \
            return false;                                                                                              \
        }                                                                                                              \
    } while (0)
    SYM(version, "cublasLtGetVersion");
    SYM(create, "cublasLtCreate");
    SYM(desc_create, "cublasLtMatmulDescCreate");
    SYM(desc_set, "cublasLtMatmulDescSetAttribute");
    SYM(desc_destroy, "cublasLtMatmulDescDestroy");
    SYM(layout_create, "cublasLtMatrixLayoutCreate");
    SYM(layout_destroy, "cublasLtMatrixLayoutDestroy");
    SYM(layout_set, "cublasLtMatrixLayoutSetAttribute");
    SYM(pref_create, "cublasLtMatmulPreferenceCreate");
    SYM(pref_set, "cublasLtMatmulPreferenceSetAttribute");
    SYM(pref_destroy, "cublasLtMatmulPreferenceDestroy");
    SYM(heuristic, "cublasLtMatmulAlgoGetHeuristic");
    SYM(matmul, "cublasLtMatmul");
#undef SYM
    const size_t v = lt.version();
    if (v < LT_VERSION) {
        snprintf(lt.why, sizeof lt.why, "cuBLASLt %zu has no block-scaled FP8 GEMM (it needs %d or later)", v,
                 LT_VERSION);
        return false;
    }
    return true;
}

/* A GPU's handle and workspace, made at its first use. */
static struct {
    cublasLtHandle_t h;
    void *ws;
} lt_dev[LT_MAXDEV];

/* A shape's descriptors and algorithm: N weight rows, K columns, M tokens, the weight's row stride, y's; bf: the
 * BF16 GEMM of G groups (cuda_linear_lt_bf: y's groups yg floats apart), else the block-scaled FP8 one (G 1). */
struct lt_plan {
    int dev;
    bool bf;
    int64_t N, K, M, lda, ldy, G, yg;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
    bool ok; /* the heuristic had an algorithm */
};
static lt_plan lt_plans[LT_PLANS];
static int lt_nplans, lt_next;
static unsigned long lt_count; /* GEMMs launched (dsv4_cuda_lt_calls) */

/* The heuristic's first algorithm for p's descriptors (p->ok where there is one). */
static void lt_algo(lt_plan *p)
{
    const int dev = p->dev;
    cublasLtMatmulPreference_t pref;
    const uint64_t wsb = LT_WS;
    cublasLtMatmulHeuristicResult_t r = {};
    int got = 0;
    if (lt.pref_create(&pref) == CUBLAS_STATUS_SUCCESS) {
        /* the pointers are 16-byte aligned (lt_gemm checks; the library assumes 256 unless told) */
        const uint32_t al = 16;
        bool pok =
            lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb) == CUBLAS_STATUS_SUCCESS;
        for (auto at : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
            pok = pok && lt.pref_set(pref, at, &al, sizeof al) == CUBLAS_STATUS_SUCCESS;
        if (pok &&
            lt.heuristic(lt_dev[dev].h, p->desc, p->a, p->b, p->d, p->d, pref, 1, &r, &got) == CUBLAS_STATUS_SUCCESS &&
            got > 0 && r.state == CUBLAS_STATUS_SUCCESS)
            p->algo = r.algo, p->ok = true;
        lt.pref_destroy(pref);
    }
}

/* The plan of a shape (made, and its algorithm asked for, at its first call); NULL without an algorithm. */
static const lt_plan *lt_plan_make(lt_plan *p);
static const lt_plan *lt_plan_get(const lt_plan &key)
{
    for (int i = 0; i < lt_nplans; i++) {
        const lt_plan &p = lt_plans[i];
        if (p.dev == key.dev && p.bf == key.bf && p.N == key.N && p.K == key.K && p.M == key.M && p.lda == key.lda &&
            p.ldy == key.ldy && p.G == key.G && p.yg == key.yg)
            return p.ok ? &p : NULL;
    }
    lt_plan *p;
    if (lt_nplans < LT_PLANS)
        p = &lt_plans[lt_nplans++];
    else { /* the oldest gives way */
        p = &lt_plans[lt_next];
        lt_next = (lt_next + 1) % LT_PLANS;
        if (p->desc) lt.desc_destroy(p->desc);
        for (cublasLtMatrixLayout_t l : {p->a, p->b, p->d})
            if (l) lt.layout_destroy(l);
    }
    *p = key;
    p->desc = NULL, p->a = p->b = p->d = NULL, p->ok = false;
    return lt_plan_make(p);
}
static const lt_plan *lt_plan_of(int dev, int64_t N, int64_t K, int64_t M, int64_t lda, int64_t ldy)
{
    lt_plan key = {};
    key.dev = dev, key.N = N, key.K = K, key.M = M, key.lda = lda, key.ldy = ldy, key.G = 1;
    return lt_plan_get(key);
}
static const lt_plan *lt_plan_bf(int dev, int64_t N, int64_t K, int64_t M, int64_t lda, int G, int64_t ldy, int64_t yg)
{
    lt_plan key = {};
    key.dev = dev, key.bf = true, key.N = N, key.K = K, key.M = M, key.lda = lda, key.ldy = ldy, key.G = G;
    key.yg = G > 1 ? yg : 0;
    return lt_plan_get(key);
}

/* p's descriptors, layouts and algorithm. */
static const lt_plan *lt_plan_make(lt_plan *p)
{
    const int dev = p->dev;
    const int64_t N = p->N, K = p->K, M = p->M, lda = p->lda, ldy = p->ldy;
    /* D [N x M] (column-major: y's rows of ldy floats, one a token) = A^T B, A the weight [K x N] (its rows are
     * the columns here), B the tokens' codes [K x M] (BF16: the tokens' values, G groups K apart in rows of G K,
     * the weight's groups N K apart, y's yg) */
    const int32_t tra = CUBLAS_OP_T, trb = CUBLAS_OP_N;
    const cudaDataType ty = p->bf ? CUDA_R_16BF : CUDA_R_8F_E4M3;
    bool ok = lt.desc_create(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS;
    ok = ok && lt.desc_set(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &tra, sizeof tra) == CUBLAS_STATUS_SUCCESS;
    ok = ok && lt.desc_set(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &trb, sizeof trb) == CUBLAS_STATUS_SUCCESS;
    if (!p->bf) { /* the FP8 GEMM's block scales */
        const int32_t sa = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, sb = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
        ok = ok && lt.desc_set(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &sa, sizeof sa) == CUBLAS_STATUS_SUCCESS;
        ok = ok && lt.desc_set(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &sb, sizeof sb) == CUBLAS_STATUS_SUCCESS;
        /* the heuristic offers no algorithm for block scales without their pointers: the workspace's stands in
         * (lt_gemm sets the call's) */
        const void *sp = lt_dev[dev].ws;
        ok = ok && lt.desc_set(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sp, sizeof sp) == CUBLAS_STATUS_SUCCESS;
        ok = ok && lt.desc_set(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sp, sizeof sp) == CUBLAS_STATUS_SUCCESS;
    }
    ok = ok && lt.layout_create(&p->a, ty, (uint64_t)K, (uint64_t)N, lda) == CUBLAS_STATUS_SUCCESS;
    ok = ok && lt.layout_create(&p->b, ty, (uint64_t)K, (uint64_t)M, p->G * K) == CUBLAS_STATUS_SUCCESS;
    ok = ok && lt.layout_create(&p->d, CUDA_R_32F, (uint64_t)N, (uint64_t)M, ldy) == CUBLAS_STATUS_SUCCESS;
    if (p->G > 1) { /* the BF16 GEMM's groups, one batch each */
        const int32_t bc = (int32_t)p->G;
        const int64_t so[3] = {N * lda, K, p->yg};
        const cublasLtMatrixLayout_t l[3] = {p->a, p->b, p->d};
        for (int i = 0; i < 3 && ok; i++)
            ok = lt.layout_set(l[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc) == CUBLAS_STATUS_SUCCESS &&
                 lt.layout_set(l[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &so[i], sizeof so[i]) ==
                     CUBLAS_STATUS_SUCCESS;
    }
    if (ok) lt_algo(p);
    return p->ok ? p : NULL;
}

/* The GPU's handle and workspace (false where they cannot be made: the library, or its handle). */
static bool lt_ready(dsv4_backend *be)
{
    const int dev = impl_of(be)->device;
    if (dev < 0 || dev >= LT_MAXDEV || !lt_load()) return false;
    if (!lt_dev[dev].h) {
        if (lt.create(&lt_dev[dev].h) != CUBLAS_STATUS_SUCCESS) {
            snprintf(lt.why, sizeof lt.why, "cublasLtCreate failed on GPU %d", dev);
            lt_dev[dev].h = NULL;
            return false;
        }
        CK(cudaMalloc(&lt_dev[dev].ws, LT_WS));
    }
    return true;
}

/* Whether --prefill-gemm cublaslt can run on this backend's GPU: the library loads and has an algorithm for
 * a block-scaled FP8 GEMM (256 x 128 x 128); else false with the reason in err. */
bool cuda_lt_check(dsv4_backend *be, char *err, size_t errlen)
{
    if (!lt_ready(be)) {
        snprintf(err, errlen, "%s", lt.why);
        return false;
    }
    if (!lt_plan_of(impl_of(be)->device, 256, 128, 128, 128, 256)) {
        snprintf(err, errlen, "cuBLASLt %zu has no block-scaled FP8 GEMM for %s", lt.version(), be->device);
        return false;
    }
    return true;
}

/* The tokens' act_quant codes, rows of K bytes [n][K] (cuBLASLt's B, column-major K x n), and their scales
 * [K / 128][n] (VEC128_32F: a token's scales n apart): one warp per (token, 128 columns), k_wg8_pack's codes. */
__global__ void k_lt_pack(const float *x, int ldx, int n, int K, uint8_t *xq, float *xs)
{
    pdl_start();
    const int lane = threadIdx.x & 31, nkg = K / 128;
    const int64_t wg = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (wg >= (int64_t)n * nkg) return;
    const int tok = (int)(wg / nkg), kg = (int)(wg % nkg), c0 = kg * 128 + 4 * lane;
    float v[4];
    pack_load4(x, ldx, 0, 0, tok, n, c0, K, v);
    uint32_t codes;
    const float sc = act_codes4(v, &codes);
    *(uint32_t *)(xq + (size_t)tok * K + c0) = codes;
    if (lane == 0) xs[(size_t)kg * n + tok] = sc;
}

/* n of a weight's E8M0 block scales widened to FP32, [block rows][block columns] as stored (the BLK128x128
 * tensor of A, column-major K x N: a block column's K / 128 scales together). */
__global__ void k_lt_wscale(const uint8_t *s, int64_t n, float *f)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) f[i] = dsv4_e8m0_to_f32(s[i]);
}

/* The FP32 scales of w's view: its block rows from row0 / 128 (row0 on a block row: cuda_lt_takes). */
static int64_t lt_wscale_count(const wdesc &w)
{
    return (w.rows + 127) / 128 * w.scale_cols;
}

/* Steps of at least this many tokens take cuBLASLt (DSV4_LT_MIN, default 128). */
static int lt_min(void)
{
    static int v = 0;
    if (!v) v = cuda_env_int("DSV4_LT_MIN", 128);
    return v;
}

/* Tokens a pack and GEMM take at once (bounds the scratch: a byte a value). */
#define LT_CHUNK 4096

/* The token counts of n's GEMMs in chunks of ch: the first's (c) and the last's (last). */
static void lt_chunks(int n, int ch, int *c, int *last)
{
    *c = n < ch ? n : ch;
    *last = n - (n - 1) / ch * ch;
}

/* p's GEMM on the stream, y = A^T B (scale pointers, where the plan has them, set by the caller); a plan lost
 * between the check and the call, or the library failing, aborts with the shape (what: the GEMM's kind). */
static void lt_run(cuda_impl *im, const lt_plan *p, const void *a, const void *b, float *y, const char *what,
                   int64_t rows, int64_t K, int m)
{
    cublasStatus_t s = CUBLAS_STATUS_NOT_INITIALIZED;
    const float one = 1.0f, zero = 0.0f;
    if (p)
        s = lt.matmul(lt_dev[im->device].h, p->desc, &one, a, p->a, b, p->b, &zero, y, p->d, y, p->d, &p->algo,
                      lt_dev[im->device].ws, LT_WS, im->stream);
    if (s != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "dsv4: lt.cu's %s GEMM of a %lld x %lld weight at %d tokens %s (%d)\n", what, (long long)rows,
                (long long)K, m, p ? "failed" : "lost its plan", (int)s);
        abort();
    }
    lt_count++;
}

/* The tokens of n that cuBLASLt takes: a multiple of 8 (the tokens' scale rows, [K / 128][M] floats, must stay
 * 16-byte aligned: the library has no algorithm for 130 or 150 tokens, v62), the rest (< 8) left to wg8.cu. */
int cuda_lt_tokens(int n)
{
    return n & ~7;
}

/* Whether w (cuda_wg8_eligible) takes cuBLASLt for n tokens into y (rows of ldy floats): the option on
 * (be->lt_prefill, or DSV4_LT=1; DSV4_LT=0 never), at least lt_min tokens, a shape the library takes as it is
 * (128 x 128 scale blocks whole along K, the view on a block row, 16-byte aligned operands: the plans promise
 * the library that much), and the library's algorithm for it. A function of
 * the weight, n and y's layout only, so a weight of linear_multi decides as its own call would. It takes the
 * first cuda_lt_tokens(n) tokens; the caller the rest. */
bool cuda_lt_takes(dsv4_backend *be, const wdesc &w, int n, const float *y, int ldy)
{
    const int k = cuda_knob(CUDA_KNOB_LT);
    n = cuda_lt_tokens(n);
    if (k == 0 || (k != 1 && !be->lt_prefill) || n < lt_min()) return false;
    if (w.br != 128 || w.bc != 128 || w.cols % 128 || w.row0 % 128 || w.row_bytes != w.cols ||
        ((uintptr_t)w.data & 15) || w.scale_cols != w.cols / 128 || (w.scale_cols * 4) % 16 || ((uintptr_t)y & 15) ||
        ldy % 4)
        return false;
    if (!lt_ready(be)) return false;
    const int dev = impl_of(be)->device;
    int c, last;
    lt_chunks(n, LT_CHUNK, &c, &last);
    return lt_plan_of(dev, w.rows, w.cols, c, w.row_bytes, ldy) &&
           lt_plan_of(dev, w.rows, w.cols, last, w.row_bytes, ldy);
}

/* One weight's GEMM over the packed tokens (cuda_lt_takes made its plan; as its view's FP32 scales): y [m
 * tokens][ldy] = W x. */
static void lt_gemm(dsv4_backend *be, const wdesc &w, const float *as, const uint8_t *xq, const float *xs, int m,
                    float *y, int ldy)
{
    cuda_impl *im = impl_of(be);
    const lt_plan *p = lt_plan_of(im->device, w.rows, w.cols, m, w.row_bytes, ldy);
    if (p && (lt.desc_set(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &as, sizeof as) != CUBLAS_STATUS_SUCCESS ||
              lt.desc_set(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &xs, sizeof xs) != CUBLAS_STATUS_SUCCESS)) {
        fprintf(stderr, "dsv4: lt.cu could not set the scales of a %lld x %lld weight's GEMM\n", (long long)w.rows,
                (long long)w.cols);
        abort();
    }
    lt_run(im, p, (const uint8_t *)w.data + w.row0 * w.row_bytes, xq, y, "FP8", w.rows, w.cols, m);
}

/* y[i] = W[i] x through cuBLASLt for m weights of one input x [n][ldx] (every one cuda_lt_takes, the same K; n
 * a multiple of 8: cuda_lt_tokens; m <= 64, as the callers keep it): each chunk of tokens packed once, then a GEMM
 * a weight. */
void cuda_linear_lt(dsv4_backend *be, int m, const wdesc *w, const float *x, int ldx, int n, float *const *y,
                    const int *ldy)
{
    cuda_impl *im = impl_of(be);
    const int K = (int)w[0].cols, nkg = K / 128, ch = n < LT_CHUNK ? n : LT_CHUNK;
    uint8_t *xq = (uint8_t *)cuda_scratch(be, CS_MMA_X, (size_t)ch * K);
    float *xs = (float *)cuda_scratch(be, CS_MMA_S, (size_t)ch * nkg * sizeof(float));
    int64_t nws = 0; /* the weights' views' scales, widened once for every chunk */
    for (int i = 0; i < m; i++) nws += lt_wscale_count(w[i]);
    float *ws = (float *)cuda_scratch(be, CS_LT_WS, (size_t)nws * sizeof(float));
    const float *as[64];
    for (int i = 0; i < m; i++) {
        const int64_t c = lt_wscale_count(w[i]);
        as[i] = ws;
        k_lt_wscale<<<(unsigned)((c + 255) / 256), 256, 0, im->stream>>>(
            (const uint8_t *)w[i].scale + w[i].row0 / 128 * w[i].scale_cols, c, ws);
        CK_LAUNCH();
        ws += c;
    }
    for (int t0 = 0; t0 < n; t0 += LT_CHUNK) {
        const int c = n - t0 < LT_CHUNK ? n - t0 : LT_CHUNK;
        const int64_t warps = (int64_t)c * nkg;
        launch_pdl(k_lt_pack, dim3((unsigned)((warps + 7) / 8)), dim3(256), 0, im->stream, x + (size_t)t0 * ldx, ldx, c,
                   K, xq, xs);
        CK_LAUNCH();
        for (int i = 0; i < m; i++) lt_gemm(be, w[i], as[i], xq, xs, c, y[i] + (size_t)t0 * ldy[i], ldy[i]);
    }
}

/* wo_a (reference numerics: FP8 weights the reference dequantises to BF16, BF16 activations: no_act_quant) as
 * one BF16 GEMM batched over its G groups: the view's weights dequantised into scratch at every call (exact: an
 * E4M3 code times a power of two, within BF16's range), the tokens' values as BF16 (exact: the model rounds them
 * first), FP32 out. Chunks of LT_BF_CHUNK tokens bound the activations' scratch (64 MB at wo_a's 32,768 columns). */
#define LT_BF_CHUNK 1024

/* rows x K weights from row r0 of w (w_at's values, exact in BF16 for FP8 codes times powers of two; K % 8 == 0)
 * to BF16 [rows][K]: 8 a thread. */
__global__ void k_lt_wbf16(wdesc w, int64_t r0, int64_t rows, uint4 *out)
{
    const int64_t K = w.cols, i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (i >= rows * K) return;
    const int64_t r = r0 + i / K, c = i % K;
    float v[8];
    for (int e = 0; e < 8; e++) v[e] = w_at(w, r, c + e);
    out[i / 8] = make_uint4(bf2_rn(v[0], v[1]), bf2_rn(v[2], v[3]), bf2_rn(v[4], v[5]), bf2_rn(v[6], v[7]));
}

/* n tokens' G groups of K values (group g of token t at x + t ldx + g xg) as BF16 rows of G K: 4 a thread. */
__global__ void k_lt_xbf16(const float *x, int ldx, size_t xg, int G, int K, int n, uint2 *out)
{
    const int64_t GK = (int64_t)G * K, i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i >= (int64_t)n * GK) return;
    const int64_t t = i / GK, j = i % GK;
    const float *p = x + t * ldx + (j / K) * xg + j % K;
    out[i / 4] = make_uint2(bf2_rn(p[0], p[1]), bf2_rn(p[2], p[3]));
}

/* The weights' BF16 rows as cuBLASLt reads them: FP8 dequantised into scratch (K apart), BF16 where they are. */
static int64_t lt_bf_lda(const wdesc &w)
{
    return w.fmt == DSV4_WF_FP8 ? w.cols : w.row_bytes / 2;
}

/* Whether w (group 0's view; G groups of w.rows rows, w.rows apart) with BF16 activations takes the BF16 GEMM for
 * n tokens into y (groups yg floats apart): the option on (as cuda_lt_takes), at least lt_min tokens; FP8 rows of
 * K codes (w_at's layout; DSV4_LT_WOA=0: never), or BF16 rows in whole 16-byte chunks from a 16-byte aligned
 * view (DSV4_LT_BF16=0: never); K a multiple of 8, y 16-byte aligned in rows and groups, and an algorithm for
 * the shape. The caller knows the activations are BF16 values (reference numerics: wo_a's no_act_quant input,
 * or BF16(x) in front of a BF16 weight). */
bool cuda_lt_bf_takes(dsv4_backend *be, const wdesc &w, int G, int n, const float *y, int ldy, size_t yg)
{
    static const bool on8 = cuda_env_on("DSV4_LT_WOA"), on16 = cuda_env_on("DSV4_LT_BF16");
    const int k = cuda_knob(CUDA_KNOB_LT);
    if (k == 0 || (k != 1 && !be->lt_prefill) || n < lt_min()) return false;
    const bool f8 = on8 && w.fmt == DSV4_WF_FP8 && w.dtype == DSV4_DT_F8_E4M3 && w.br > 0 && w.row_bytes == w.cols;
    const bool b16 = on16 && w.fmt == DSV4_WF_FLOAT && w.dtype == DSV4_DT_BF16 && w.row_bytes % 16 == 0 &&
                     ((uintptr_t)((const uint8_t *)w.data + w.row0 * w.row_bytes) & 15) == 0;
    if ((!f8 && !b16) || w.cols % 8 || ((uintptr_t)y & 15) || ldy % 4 || (G > 1 && yg % 4)) return false;
    if (!lt_ready(be)) return false;
    const int dev = impl_of(be)->device;
    int c, last;
    lt_chunks(n, LT_BF_CHUNK, &c, &last);
    return lt_plan_bf(dev, w.rows, w.cols, c, lt_bf_lda(w), G, ldy, (int64_t)yg) &&
           lt_plan_bf(dev, w.rows, w.cols, last, lt_bf_lda(w), G, ldy, (int64_t)yg);
}

/* y[i]'s G groups = W[i]_g x_g through the BF16 GEMM for m weights of one input (each cuda_lt_bf_takes, the same
 * K; m <= 64, as the callers keep it): FP8 weights dequantised into scratch once, each chunk of tokens as BF16
 * once, then a GEMM a weight. */
void cuda_linear_lt_bf(dsv4_backend *be, int m, const wdesc *w, int G, const float *x, int ldx, size_t xg, int n,
                       float *const *y, const int *ldy, size_t yg)
{
    cuda_impl *im = impl_of(be);
    const int64_t K = w[0].cols, ch = n < LT_BF_CHUNK ? n : LT_BF_CHUNK;
    int64_t nw = 0; /* the FP8 weights' values */
    for (int i = 0; i < m; i++)
        if (w[i].fmt == DSV4_WF_FP8) nw += (int64_t)G * w[i].rows * K;
    uint4 *d = nw ? (uint4 *)cuda_scratch(be, CS_LT_WS, (size_t)nw * 2) : NULL;
    const void *wb[64];
    for (int i = 0; i < m; i++) {
        wb[i] = (const uint8_t *)w[i].data + w[i].row0 * w[i].row_bytes;
        if (w[i].fmt != DSV4_WF_FP8) continue;
        const int64_t c = (int64_t)G * w[i].rows * K;
        k_lt_wbf16<<<(unsigned)((c / 8 + 255) / 256), 256, 0, im->stream>>>(w[i], w[i].row0, (int64_t)G * w[i].rows, d);
        CK_LAUNCH();
        wb[i] = d;
        d += c / 8;
    }
    uint2 *xb = (uint2 *)cuda_scratch(be, CS_MMA_X, (size_t)ch * G * K * 2);
    for (int t0 = 0; t0 < n; t0 += LT_BF_CHUNK) {
        const int c = n - t0 < LT_BF_CHUNK ? n - t0 : LT_BF_CHUNK;
        const int64_t nx = (int64_t)c * G * K;
        k_lt_xbf16<<<(unsigned)((nx / 4 + 255) / 256), 256, 0, im->stream>>>(x + (size_t)t0 * ldx, ldx, xg, G, (int)K,
                                                                             c, xb);
        CK_LAUNCH();
        for (int i = 0; i < m; i++)
            lt_run(im, lt_plan_bf(im->device, w[i].rows, K, c, lt_bf_lda(w[i]), G, ldy[i], (int64_t)yg), wb[i], xb,
                   y[i] + (size_t)t0 * ldy[i], "BF16", G * w[i].rows, K, c);
    }
}

/* The GEMMs lt.cu has launched (the tests check that a case took it). */
extern "C" unsigned long dsv4_cuda_lt_calls(void)
{
    return lt_count;
}
