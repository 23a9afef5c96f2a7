/*
 * cpu.c - the CPU backend: the reference implementation of every op in
 * backend.h, threaded over a pool and written so the compiler vectorises the
 * inner loops (16 independent FP32 lanes per dot product).
 *
 * Determinism: each output element is produced by exactly one call with a
 * fixed summation order, so results are identical for any thread count and
 * any batch composition. Working memory comes from per-thread buffers that
 * only grow, so a warmed-up token loop does not allocate.
 */
#ifdef __AVX512F__
#include <immintrin.h>
#endif
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/hc_math.h"
#include "core/pool.h"
#include "model/quant.h"
#include "model/synth.h"

typedef struct {
    dsv4_pool *pool;
    int prof_family;  /* -1: no span open */
    double prof_t0;
    double prof_ms[DSV4_PROF_COUNT];
    void **owned;     /* --fill-random: generated weights, freed at destroy */
    size_t n_owned, cap_owned;
} cpu_impl;

static dsv4_pool *pool_of(dsv4_backend *be) { return ((cpu_impl *)be->impl)->pool; }

/* ---- scratch ----------------------------------------------------------------
 * Data-dependent working memory (row lists, top-k pairs, expert batches) comes
 * from per-thread buffers that only ever grow: after the first steps of a
 * given shape the token loop allocates nothing. Each use has its own slot so
 * nested uses never share a buffer; worker threads free theirs on exit. */
/* Sizes from the config (heads, streams, experts) take these buffers too, not the stack: a worker's stack is a
 * few MiB, and the weights bound those sizes only loosely. */
enum {
    S_ACTQ,
    S_WBUF,
    S_RMS,
    S_TOPK,
    S_SCORE,
    S_ROWS,
    S_NROWS,
    S_ROWBF,
    S_MOE_LIST,
    S_MOE_XS,
    S_MOE_G,
    S_MOE_U,
    S_MOE_Y,
    S_MOE_YBUF,
    S_HC,
    S_IDX,
    S_ROUTE,
    S_COUNT
};

typedef struct {
    void *p[S_COUNT];
    size_t cap[S_COUNT];
} scratch_set;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *v)
{
    scratch_set *s = v;
    for (int i = 0; i < S_COUNT; i++) free(s->p[i]);
    free(s);
}

static void scratch_key_init(void) { pthread_key_create(&scratch_key, scratch_free); }

static void *scratch(int slot, size_t bytes)
{
    pthread_once(&scratch_once, scratch_key_init);
    scratch_set *s = pthread_getspecific(scratch_key);
    if (!s) {
        s = calloc(1, sizeof(*s));
        if (!s) abort();
        pthread_setspecific(scratch_key, s);
    }
    if (s->cap[slot] < bytes) {
        free(s->p[slot]);
        s->cap[slot] = bytes + bytes / 4 + 64;
        s->p[slot] = malloc(s->cap[slot]);
        if (!s->p[slot]) abort(); /* scratch is small next to weights and state */
    }
    return s->p[slot];
}

/* Waking the pool costs about as much as ~100k multiply-adds; smaller loops
 * run on the calling thread. `work` estimates the loop's multiply-adds. */
static void par_for(dsv4_backend *be, int64_t n, double work, dsv4_pool_fn fn, void *ctx)
{
    if (work < 1e5) {
        for (int64_t i = 0; i < n; i++) fn(ctx, i);
        return;
    }
    dsv4_pool_for(pool_of(be), n, fn, ctx);
}

#define LANES 16

/* ==== dot products ===================================================== */

/* Every dot product in the backend is the same computation: 16 FP32 lanes
 * accumulated in order over the length (lane l takes elements i = l mod 16),
 * then the lanes summed pairwise in a fixed tree. The register-blocked tile
 * below computes up to 4 x 4 such dot products at once with exactly that
 * per-lane sequence, so a token's result is the same whatever its batch. */
typedef float v16f __attribute__((vector_size(64)));
typedef uint32_t v16u __attribute__((vector_size(64)));
typedef uint16_t v16h __attribute__((vector_size(32)));

static inline v16f load_f32(const float *p)
{
    v16f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline v16f load_bf16(const uint16_t *p)
{
    v16h h;
    memcpy(&h, p, sizeof h);
    return (v16f)(__builtin_convertvector(h, v16u) << 16);
}

static inline v16f load_f16(const uint16_t *p)
{
    float f[16];
    for (int l = 0; l < 16; l++) f[l] = dsv4_f16_to_f32(dsv4_ld_u16(p, l));
    return load_f32(f);
}

/* Decode tables, filled once by dsv4_backend_cpu_create. */
static float lut_e4m3[256], lut_e2m1[16];

static void luts_init(void)
{
    for (int b = 0; b < 256; b++) lut_e4m3[b] = dsv4_e4m3_to_f32((uint8_t)b);
    for (int c = 0; c < 16; c++) lut_e2m1[c] = dsv4_e2m1_to_f32((uint8_t)c);
}

/* Where a tile's weight rows live, in whatever format. Rows are tile-relative;
 * `r_abs` is the absolute row of tile row 0 (block scales index by it). */
typedef struct {
    const uint8_t *data;  /* element bytes of tile row 0 */
    int64_t row_bytes;
    const uint8_t *scale;
    dsv4_dtype sdt;
    int64_t scale_cols;
    int br, bc;
    float scale2;
    int64_t r_abs;
} wsrc;

enum { K_BF16, K_F32, K_F16, K_FP8, K_MXFP4, K_NVFP4 }; /* element kinds; the last three are decoded rows */

/* 16 E4M3 codes times a scale, exactly (the value times sc, rounded once). */
static inline __attribute__((always_inline)) v16f dec16_fp8(const uint8_t *p, float sc)
{
#ifdef __AVX512F__
    /* E4M3 -> FP32 without a table: exponent and mantissa bits at FP32's
     * mantissa top give the value times 2^-120 (subnormals land on FP32
     * subnormals); scale back by 2^120. S.1111.111 is NaN (the table's value),
     * not 480. */
    const __m512i u = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
    const __m512i m7 = _mm512_and_si512(u, _mm512_set1_epi32(0x7f));
    const __m512i bits = _mm512_or_si512(_mm512_slli_epi32(m7, 20),
                                         _mm512_slli_epi32(_mm512_and_si512(u, _mm512_set1_epi32(0x80)), 24));
    const __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_castsi512_ps(bits), _mm512_set1_ps(0x1p120f)),
                                   _mm512_set1_ps(sc));
    const __mmask16 nan = _mm512_cmpeq_epi32_mask(m7, _mm512_set1_epi32(0x7f));
    return (v16f)_mm512_mask_mov_ps(v, nan, _mm512_set1_ps(NAN));
#else
    v16f v;
    for (int l = 0; l < 16; l++) v[l] = lut_e4m3[p[l]] * sc;
    return v;
#endif
}

/* 16 E2M1 codes (8 bytes, low nibble first) times a scale, exactly. */
static inline __attribute__((always_inline)) v16f dec16_fp4(const uint8_t *p, float sc)
{
#ifdef __AVX512F__
    const __m512i sh = _mm512_set_epi32(4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0);
    const __m128i b = _mm_loadl_epi64((const __m128i *)p);
    const __m512i u = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(b, b));
    const __m512i idx = _mm512_and_si512(_mm512_srlv_epi32(u, sh), _mm512_set1_epi32(15));
    return (v16f)_mm512_mul_ps(_mm512_permutexvar_ps(idx, _mm512_loadu_ps(lut_e2m1)), _mm512_set1_ps(sc));
#else
    v16f v;
    for (int l = 0; l < 16; l++) v[l] = lut_e2m1[l & 1 ? p[l / 2] >> 4 : p[l / 2] & 15] * sc;
    return v;
#endif
}

/* The scale of element i of tile row r of a quantized matrix. */
static inline float q_scale(int K, const wsrc *s, int r, int i)
{
    const int64_t ra = s->r_abs + r;
    if (K == K_FP8) {
        const size_t k = (size_t)(ra / s->br) * s->scale_cols + (size_t)(i / s->bc);
        if (s->sdt == DSV4_DT_F32) {
            float sc;
            memcpy(&sc, s->scale + 4 * k, 4);
            return sc;
        }
        return dsv4_e8m0_to_f32(s->scale[k]);
    }
    const uint8_t sb = s->scale[(size_t)ra * s->scale_cols + (size_t)(i / (K == K_MXFP4 ? 32 : 16))];
    return K == K_MXFP4 ? dsv4_e8m0_to_f32(sb) : lut_e4m3[sb] * s->scale2;
}

/* 16 consecutive elements of row r starting at column i (a multiple of 16).
 * Quantized rows read here (the fused path) need their 16 elements under
 * one scale: FP8 blocks a multiple of 16 wide (linear_task checks). */
static inline __attribute__((always_inline)) v16f load_w(int K, const wsrc *s, int r, int i)
{
    const uint8_t *row = s->data + (size_t)r * s->row_bytes;
    switch (K) {
    case K_BF16: return load_bf16((const uint16_t *)row + i);
    case K_F32: return load_f32((const float *)row + i);
    case K_F16: return load_f16((const uint16_t *)row + i);
    case K_FP8: return dec16_fp8(row + i, q_scale(K, s, r, i));
    default: return dec16_fp4(row + i / 2, q_scale(K, s, r, i));
    }
}

/* One element, for the tails of rows whose length is not a multiple of 16
 * (FP4 rows are whole groups of 16 or 32: never a tail). */
static inline float load_w1(int K, const wsrc *s, int r, int i)
{
    const uint8_t *row = s->data + (size_t)r * s->row_bytes;
    switch (K) {
    case K_BF16: return dsv4_bf16_to_f32(dsv4_ld_u16(row, i));
    case K_F32: return dsv4_ld_f32(row, i);
    case K_FP8: return lut_e4m3[row[i]] * q_scale(K, s, r, i);
    default: return dsv4_f16_to_f32(dsv4_ld_u16(row, i));
    }
}

/* Decode row r of a quantized matrix to FP32, exactly, fetching each scale
 * once per block. Quantized rows are decoded once per task and multiplied as
 * FP32, so a prefill pays for decoding once per weight, not once per token;
 * the decoded values are exact, so results do not depend on the path. */
static void decode_row(int K, const wsrc *s, int r, int n, float *dst)
{
    const uint8_t *row = s->data + (size_t)r * s->row_bytes;
    if (K == K_FP8) {
        for (int b0 = 0; b0 < n; b0 += s->bc) {
            const float sc = q_scale(K, s, r, b0);
            const int b1 = b0 + s->bc < n ? b0 + s->bc : n;
            int i = b0;
            for (; i + 16 <= b1; i += 16) {
                const v16f v = dec16_fp8(row + i, sc);
                memcpy(dst + i, &v, sizeof v);
            }
            for (; i < b1; i++) dst[i] = lut_e4m3[row[i]] * sc;
        }
        return;
    }
    const int g = K == K_MXFP4 ? 32 : 16;
    for (int g0 = 0; g0 < n; g0 += g) {
        const float sc = q_scale(K, s, r, g0);
        for (int i = g0; i < g0 + g; i += 16) {
            const v16f v = dec16_fp4(row + i / 2, sc);
            memcpy(dst + i, &v, sizeof v);
        }
    }
}

static inline float reduce_lanes(v16f a)
{
    float s8[8], s4[4];
    for (int l = 0; l < 8; l++) s8[l] = a[l] + a[l + 8];
    for (int l = 0; l < 4; l++) s4[l] = s8[l] + s8[l + 4];
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

/* y[t*ldy + r] = dot(x[t], w[r]) for t < NT, r < NR over n elements. NT, NR
 * and K are compile-time constants at each call. */
static inline __attribute__((always_inline)) void tile(int K, int NT, int NR, const float *x, int64_t ldx,
                                                       const wsrc *ws, int n, float *y, int64_t ldy)
{
    v16f acc[4][4];
    for (int t = 0; t < NT; t++)
        for (int r = 0; r < NR; r++) acc[t][r] = (v16f){0};
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        v16f wv[4];
        for (int r = 0; r < NR; r++) wv[r] = load_w(K, ws, r, i);
        for (int t = 0; t < NT; t++) {
            v16f xv = load_f32(x + t * ldx + i);
            for (int r = 0; r < NR; r++) acc[t][r] += xv * wv[r];
        }
    }
    for (int l = 0; i < n; i++, l++)
        for (int r = 0; r < NR; r++) {
            float wv = load_w1(K, ws, r, i);
            for (int t = 0; t < NT; t++) acc[t][r][l] += x[t * ldx + i] * wv;
        }
    for (int t = 0; t < NT; t++)
        for (int r = 0; r < NR; r++) y[t * ldy + r] = reduce_lanes(acc[t][r]);
}

float dsv4_cpu_dot_f32(const float *x, const float *w, int n)
{
    float y;
    wsrc ws = {.data = (const uint8_t *)w};
    tile(K_F32, 1, 1, x, 0, &ws, n, &y, 0);
    return y;
}

/* All (t, r) dot products of nt tokens x nr weight rows, in 4 x 4 tiles. */
#define TILE_CASES(K)                                                                                          \
    static void tiles_##K(const float *x, int64_t ldx, int nt, const wsrc *w0, int nr, int n, float *y,       \
                          int64_t ldy)                                                                         \
    {                                                                                                          \
        for (int r = 0; r < nr; r += 4) {                                                                      \
            wsrc ws = *w0;                                                                                     \
            ws.data += (size_t)r * ws.row_bytes;                                                               \
            ws.r_abs += r;                                                                                     \
            int rr = nr - r < 4 ? nr - r : 4;                                                                  \
            int t = 0;                                                                                         \
            for (; t + 4 <= nt; t += 4) {                                                                      \
                const float *xt = x + t * ldx;                                                                 \
                float *yt = y + t * ldy + r;                                                                   \
                switch (rr) {                                                                                  \
                case 4: tile(K, 4, 4, xt, ldx, &ws, n, yt, ldy); break;                                        \
                case 3: tile(K, 4, 3, xt, ldx, &ws, n, yt, ldy); break;                                        \
                case 2: tile(K, 4, 2, xt, ldx, &ws, n, yt, ldy); break;                                        \
                default: tile(K, 4, 1, xt, ldx, &ws, n, yt, ldy); break;                                       \
                }                                                                                              \
            }                                                                                                  \
            for (; t < nt; t++) {                                                                              \
                const float *xt = x + t * ldx;                                                                 \
                float *yt = y + t * ldy + r;                                                                   \
                switch (rr) {                                                                                  \
                case 4: tile(K, 1, 4, xt, ldx, &ws, n, yt, ldy); break;                                        \
                case 3: tile(K, 1, 3, xt, ldx, &ws, n, yt, ldy); break;                                        \
                case 2: tile(K, 1, 2, xt, ldx, &ws, n, yt, ldy); break;                                        \
                default: tile(K, 1, 1, xt, ldx, &ws, n, yt, ldy); break;                                       \
                }                                                                                              \
            }                                                                                                  \
        }                                                                                                      \
    }
TILE_CASES(K_BF16)
TILE_CASES(K_F32)
TILE_CASES(K_F16)
TILE_CASES(K_FP8)
TILE_CASES(K_MXFP4)
TILE_CASES(K_NVFP4)

/* ==== memory =========================================================== */

/* Memory of the backend's own, freed at destroy; NULL when out of memory. */
static void *cpu_keep(cpu_impl *im, size_t bytes)
{
    if (im->n_owned == im->cap_owned) {
        size_t cap = im->cap_owned ? 2 * im->cap_owned : 256;
        void **p = realloc(im->owned, cap * sizeof(void *));
        if (!p) return NULL;
        im->owned = p;
        im->cap_owned = cap;
    }
    void *m = malloc(bytes ? bytes : 1);
    if (m) im->owned[im->n_owned++] = m;
    return m;
}

static dsv4_status cpu_weight_load(dsv4_backend *be, dsv4_w *w, char *err, size_t errlen)
{
    w->vec = w->f32; /* matrices are read from the mmap where they are */
    if (w->synth.kind == DSV4_SYNTH_NONE) return DSV4_OK;
    /* --fill-random: the tensor is a hole of the checkpoint; generate it here
     * (the same bytes the GPU's fill kernel makes) and read that instead */
    cpu_impl *im = be->impl;
    void *d = cpu_keep(im, w->synth.elem_bytes);
    void *sc = w->synth.scale_byte >= 0 ? cpu_keep(im, w->synth.scale_bytes) : NULL;
    if (!d || (w->synth.scale_byte >= 0 && !sc)) {
        snprintf(err, errlen, "%s: out of memory generating the weights (--fill-random)", w->name);
        return DSV4_ERR_NOMEM;
    }
    dsv4_synth_fill_host(&w->synth, d, 0, w->synth.elem_bytes);
    w->host = d;
    if (sc) {
        memset(sc, w->synth.scale_byte, w->synth.scale_bytes);
        w->scale = sc;
    }
    return DSV4_OK;
}

static void cpu_step_begin(dsv4_backend *be, const dsv4_plan *plan, const dsv4_kv *kv) {}

static double cpu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* CPU ops are synchronous: a span is the host time between two marks. */
static void cpu_prof_mark(dsv4_backend *be, int family)
{
    cpu_impl *im = be->impl;
    double t = cpu_now_ms();
    if (im->prof_family >= 0) im->prof_ms[im->prof_family] += t - im->prof_t0;
    im->prof_family = family;
    im->prof_t0 = t;
}

static void cpu_prof_collect(dsv4_backend *be, double *ms)
{
    cpu_impl *im = be->impl;
    cpu_prof_mark(be, -1);
    for (int i = 0; i < DSV4_PROF_COUNT; i++) {
        ms[i] += im->prof_ms[i];
        im->prof_ms[i] = 0;
    }
}

static void *cpu_alloc(dsv4_backend *be, size_t bytes) { return calloc(1, bytes ? bytes : 1); }
static void cpu_free(dsv4_backend *be, void *p) { free(p); }
static void cpu_copy(dsv4_backend *be, void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }

static void cpu_copy_rows(dsv4_backend *be, void *dst, size_t dpitch, const void *src, size_t spitch, size_t row_bytes,
                          size_t rows)
{
    (void)be;
    for (size_t i = 0; i < rows; i++) memcpy((char *)dst + i * dpitch, (const char *)src + i * spitch, row_bytes);
}

/* ==== embedding, linear, norms ========================================== */

static void cpu_embed(dsv4_backend *be, const dsv4_w *emb, const int32_t *tok, int n, float *out)
{
    int64_t D = emb->ne[1];
    for (int t = 0; t < n; t++) {
        float *o = out + (size_t)t * D;
        const char *row = (const char *)emb->host + (size_t)tok[t] * D * dsv4_dtype_size(emb->dtype);
        for (int64_t i = 0; i < D; i++) {
            switch (emb->dtype) {
            case DSV4_DT_F32: memcpy(&o[i], row + 4 * i, 4); break;
            case DSV4_DT_BF16: o[i] = dsv4_bf16_to_f32(dsv4_ld_u16(row, i)); break;
            default: o[i] = dsv4_f16_to_f32(dsv4_ld_u16(row, i)); break;
            }
        }
    }
}

typedef struct {
    const dsv4_w *w;
    const float *x;
    int ldx, n, ldy;
    float *y;
    int rows_per_task;
} linear_ctx;

/* One task: a block of output rows for every token, so the block of weight
 * rows is read from memory once and reused from cache across tokens. */
static void linear_task(void *vctx, int64_t task)
{
    linear_ctx *c = vctx;
    const dsv4_w *w = c->w;
    int64_t r0 = task * c->rows_per_task, r1 = r0 + c->rows_per_task;
    if (r1 > w->ne[0]) r1 = w->ne[0];
    int64_t rb = dsv4_w_row_bytes(w), r_abs = w->row0 + r0;
    wsrc ws = {.data = (const uint8_t *)w->host + (size_t)(r_abs * rb), .row_bytes = rb, .scale = w->scale,
               .sdt = w->scale_dtype, .scale_cols = w->scale_cols, .br = w->block_rows, .bc = w->block_cols,
               .scale2 = w->scale2, .r_abs = r_abs};
    int nr = (int)(r1 - r0), in = (int)w->ne[1];
    float *y = c->y + r0;
    if (w->fmt != DSV4_WF_FLOAT) {
        const int K = w->fmt == DSV4_WF_FP8 ? K_FP8 : w->fmt == DSV4_WF_MXFP4 ? K_MXFP4 : K_NVFP4;
        /* Up to 4 tokens (one tile's worth: each weight chunk is decoded once either way) the chunks are
         * decoded inside the dot product; more tokens decode each row once into FP32 and reuse it. The
         * values and the order of the products are the same on both paths. */
        if (c->n <= 4 && (K != K_FP8 || ws.bc % 16 == 0)) {
            switch (K) {
            case K_FP8: tiles_K_FP8(c->x, c->ldx, c->n, &ws, nr, in, y, c->ldy); break;
            case K_MXFP4: tiles_K_MXFP4(c->x, c->ldx, c->n, &ws, nr, in, y, c->ldy); break;
            default: tiles_K_NVFP4(c->x, c->ldx, c->n, &ws, nr, in, y, c->ldy); break;
            }
            return;
        }
        float *wbuf = scratch(S_WBUF, (size_t)4 * in * sizeof(float));
        for (int r = 0; r < nr; r += 4) {
            int rr = nr - r < 4 ? nr - r : 4;
            for (int k = 0; k < rr; k++) decode_row(K, &ws, r + k, in, wbuf + (size_t)k * in);
            wsrc fs = {.data = (const uint8_t *)wbuf, .row_bytes = (int64_t)in * 4};
            tiles_K_F32(c->x, c->ldx, c->n, &fs, rr, in, y + r, c->ldy);
        }
        return;
    }
    switch (w->dtype) {
    case DSV4_DT_BF16: tiles_K_BF16(c->x, c->ldx, c->n, &ws, nr, in, y, c->ldy); break;
    case DSV4_DT_F32: tiles_K_F32(c->x, c->ldx, c->n, &ws, nr, in, y, c->ldy); break;
    case DSV4_DT_F16: tiles_K_F16(c->x, c->ldx, c->n, &ws, nr, in, y, c->ldy); break;
    default: abort(); /* weights.c admits only these */
    }
}

/* The reference's act_quant: x read as BF16 values (the reference quantises a BF16 tensor; the model's inputs
 * are BF16 values already except where a linear stands for the rounding, dsv4_reads_bf16), then per contiguous
 * block of 128 along K a power-of-two scale s = 2^ceil(log2(amax/448)) and x <- e4m3(x/s) * s. */
static void act_quant_fp8(const float *x, int ldx, int n, int in, float *out)
{
    for (int t = 0; t < n; t++) {
        const float *xr = x + (size_t)t * ldx;
        float *o = out + (size_t)t * in;
        for (int b0 = 0; b0 < in; b0 += 128) {
            int b1 = b0 + 128 < in ? b0 + 128 : in;
            float amax = 1e-4f;
            for (int i = b0; i < b1; i++) {
                o[i] = dsv4_round_bf16(xr[i]);
                amax = fmaxf(amax, fabsf(o[i]));
            }
            float sc = dsv4_pow2_ceil_scale(amax, 448.0f);
            for (int i = b0; i < b1; i++) o[i] = dsv4_e4m3_code(o[i], sc) * sc;
        }
    }
}

static void cpu_linear(dsv4_backend *be, const dsv4_w *w, const float *x, int ldx, int n, float *y, int ldy)
{
    if (n <= 0) return;
    float *xq = NULL;
    if (be->act_quant && w->fmt != DSV4_WF_FLOAT && !w->no_act_quant) {
        xq = scratch(S_ACTQ, (size_t)n * w->ne[1] * sizeof(float));
        act_quant_fp8(x, ldx, n, (int)w->ne[1], xq);
        x = xq;
        ldx = (int)w->ne[1];
    } else if (dsv4_bf16_input(be, w)) {
        /* reference numerics: a BF16 weight multiplies BF16 activations (the reference's); the model's inputs
         * to these linears are BF16 already (RIO), so this rounds nothing there */
        const int in = (int)w->ne[1];
        xq = scratch(S_ACTQ, (size_t)n * in * sizeof(float));
        for (int t = 0; t < n; t++)
            for (int i = 0; i < in; i++) xq[(size_t)t * in + i] = dsv4_round_bf16(x[(size_t)t * ldx + i]);
        x = xq;
        ldx = in;
    }
    linear_ctx c = {.w = w, .x = x, .ldx = ldx, .n = n, .y = y, .ldy = ldy};
    /* ~32 KiB of weights per task keeps a block in L1/L2 while tokens stream;
     * a multiple of the 4-row tile. */
    int64_t row_bytes = dsv4_w_row_bytes(w);
    int64_t rpt = row_bytes > 0 ? 32768 / row_bytes : 64;
    rpt = (rpt + 3) / 4 * 4;
    if (rpt < 4) rpt = 4;
    if (rpt > 64) rpt = 64;
    c.rows_per_task = (int)rpt;
    par_for(be, (w->ne[0] + rpt - 1) / rpt, (double)w->ne[0] * w->ne[1] * n, linear_task, &c);
}

/* The linears one after the other: the op exists on the CPU so that the
 * forward pass's grouped path (forward.c) runs in the CPU tests too. */
static void cpu_linear_multi(dsv4_backend *be, int m, const dsv4_w *const *w, const float *x, int ldx, int n,
                             float *const *y, const int *ldy)
{
    for (int i = 0; i < m; i++) cpu_linear(be, w[i], x, ldx, n, y[i], ldy[i]);
}

static void cpu_rmsnorm(dsv4_backend *be, const float *x, const float *w, int rows, int dim, int ld, float eps,
                        float *y, unsigned rnd)
{
    float *xb = rnd & DSV4_RND_IN ? scratch(S_RMS, (size_t)dim * sizeof(float)) : NULL;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * ld;
        float *yr = y + (size_t)r * ld;
        if (xb) { /* the row as BF16 values */
            for (int i = 0; i < dim; i++) xb[i] = dsv4_round_bf16(xr[i]);
            xr = xb;
        }
        float ss = dsv4_cpu_dot_f32(xr, xr, dim);
        float k = 1.0f / sqrtf(ss / (float)dim + eps);
        if (w)
            for (int i = 0; i < dim; i++) yr[i] = w[i] * (xr[i] * k);
        else
            for (int i = 0; i < dim; i++) yr[i] = xr[i] * k;
        if (rnd & DSV4_RND_OUT)
            for (int i = 0; i < dim; i++) yr[i] = dsv4_round_bf16(yr[i]);
    }
}

static void cpu_rmsnorm_bf16(dsv4_backend *be, float *x, int rows, int dim)
{
    for (int r = 0; r < rows; r++) {
        float *v = x + (size_t)r * dim, ss = 0;
        for (int i = 0; i < dim; i++) v[i] = dsv4_round_bf16(v[i]); /* the BF16 tensor */
        for (int i = 0; i < dim; i++) ss += dsv4_round_bf16(v[i] * v[i]);
        float ms = dsv4_round_bf16(ss / (float)dim);
        float k = dsv4_round_bf16(1.0f / sqrtf(dsv4_round_bf16(ms + 1e-6f)));
        for (int i = 0; i < dim; i++) v[i] = dsv4_round_bf16(v[i] * k);
    }
}

static void cpu_rope(dsv4_backend *be, float *x, int n_tok, int n_heads, int ld_tok, int head_dim, int rope_dim,
                     const int64_t *pos, const float *freqs, bool inverse, unsigned rnd)
{
    int half = rope_dim / 2;
    float cs[half > 0 ? half : 1], sn[half > 0 ? half : 1];
    for (int t = 0; t < n_tok; t++) {
        for (int i = 0; i < half; i++) {
            /* The reference forms the angle as an FP32 product. */
            float ang = (float)pos[t] * freqs[i];
            cs[i] = (float)cos((double)ang);
            sn[i] = (float)sin((double)ang);
            if (inverse) sn[i] = -sn[i];
        }
        for (int h = 0; h < n_heads; h++) {
            float *hv = x + (size_t)t * ld_tok + (size_t)h * head_dim, *v = hv + (head_dim - rope_dim);
            if (rnd & DSV4_RND_IN)
                for (int i = 0; i < head_dim; i++) hv[i] = dsv4_round_bf16(hv[i]);
            for (int i = 0; i < half; i++) {
                float a = v[2 * i], b = v[2 * i + 1];
                v[2 * i] = a * cs[i] - b * sn[i];
                v[2 * i + 1] = a * sn[i] + b * cs[i];
            }
            /* a loop of its own: the rotation's code (and its FMA contraction) stays as without rounding */
            if (rnd & DSV4_RND_OUT)
                for (int i = 0; i < rope_dim; i++) v[i] = dsv4_round_bf16(v[i]);
        }
    }
}

static void cpu_round_bf16(dsv4_backend *be, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = dsv4_round_bf16(x[i]);
}

static void cpu_fill(dsv4_backend *be, float *x, size_t n, uint64_t seed)
{
    uint32_t *w = (uint32_t *)x;
    for (size_t i = 0; i < n; i++) w[i] = dsv4_fill_word(seed, i);
}

static void cpu_kv_sim(dsv4_backend *be, float *x, int rows, int ld, int nope)
{
    for (int r = 0; r < rows; r++) dsv4_fp8sim(x + (size_t)r * ld, nope, 64);
}

/* norm_rope: the three ops, one after the other. */
static void cpu_norm_rope(dsv4_backend *be, float *x, int n_tok, int n_heads, int head_dim, const float *w, float eps,
                          unsigned nrnd, bool bf16, int rope_dim, const int64_t *pos, const float *freqs, unsigned rrnd,
                          int sim_nope)
{
    const int rows = n_tok * n_heads;
    if (bf16) cpu_rmsnorm_bf16(be, x, rows, head_dim);
    else cpu_rmsnorm(be, x, w, rows, head_dim, head_dim, eps, x, nrnd);
    cpu_rope(be, x, n_tok, n_heads, n_heads * head_dim, head_dim, rope_dim, pos, freqs, false, rrnd);
    if (sim_nope > 0) cpu_kv_sim(be, x, rows, head_dim, sim_nope);
}

static void cpu_idx_sim(dsv4_backend *be, float *x, int rows, int dim)
{
    for (int r = 0; r < rows; r++) {
        float *v = x + (size_t)r * dim;
        dsv4_hadamard(v, dim);
        for (int i = 0; i < dim; i++) v[i] = dsv4_round_bf16(v[i]); /* the transform returns BF16 */
        dsv4_fp4sim(v, dim, 32);
    }
}

static void cpu_swiglu(dsv4_backend *be, const float *g, const float *u, size_t n, float limit, float *m,
                       unsigned rnd)
{
    for (size_t i = 0; i < n; i++) {
        float gi = g[i], ui = u[i];
        if (rnd & DSV4_RND_IN) gi = dsv4_round_bf16(gi), ui = dsv4_round_bf16(ui);
        if (limit > 0) {
            gi = fminf(gi, limit);
            ui = fminf(fmaxf(ui, -limit), limit);
        }
        const float r = gi / (1.0f + expf(-gi)) * ui;
        m[i] = rnd & DSV4_RND_OUT ? dsv4_round_bf16(r) : r;
    }
}

/* ==== hyper-connections ================================================= */

void dsv4_cpu_hc_split(const float *m, const float *scale, const float *base, int hc, int iters, float eps,
                       float *pre, float *post, float *comb)
{
    dsv4_hc_split(m, scale, base, hc, iters, eps, pre, post, comb);
}

typedef struct {
    const dsv4_hc_params *p;
    const float *X;
    float *u, *post, *comb;
    bool head;
} hc_ctx;

static void hc_task(void *vctx, int64_t t)
{
    hc_ctx *c = vctx;
    const dsv4_hc_params *p = c->p;
    int hc = p->hc, D = p->dim, n_mix = c->head ? hc : (2 + hc) * hc;
    const float *x = c->X + (size_t)t * hc * D;
    float ss = dsv4_cpu_dot_f32(x, x, hc * D);
    float rho = 1.0f / sqrtf(ss / (float)(hc * D) + p->norm_eps);
    float *m = scratch(S_HC, ((size_t)n_mix + (size_t)hc) * sizeof(float)), *pre = m + n_mix; /* [n_mix], [hc] */
    for (int i = 0; i < n_mix; i++) m[i] = dsv4_cpu_dot_f32(p->fn + (size_t)i * hc * D, x, hc * D) * rho;
    if (c->head) {
        for (int i = 0; i < hc; i++) pre[i] = dsv4_sigmoid(m[i] * p->scale[0] + p->base[i]) + p->hc_eps;
    } else {
        dsv4_cpu_hc_split(m, p->scale, p->base, hc, p->sinkhorn_iters, p->hc_eps, pre, c->post + (size_t)t * hc,
                          c->comb + (size_t)t * hc * hc);
    }
    float *u = c->u + (size_t)t * D;
    for (int d = 0; d < D; d++) {
        float s = 0;
        for (int i = 0; i < hc; i++) s += pre[i] * x[(size_t)i * D + d];
        u[d] = s;
    }
}

static void cpu_hc_pre(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u, float *post,
                       float *comb)
{
    hc_ctx c = {.p = p, .X = X, .u = u, .post = post, .comb = comb, .head = false};
    par_for(be, n, (double)n * (2 + p->hc) * p->hc * p->hc * p->dim, hc_task, &c);
    if (p->then_y) cpu_rmsnorm(be, u, p->then_w, n, p->dim, p->dim, p->then_eps, p->then_y, p->then_rnd);
}

static void cpu_hc_head(dsv4_backend *be, const dsv4_hc_params *p, const float *X, int n, float *u)
{
    hc_ctx c = {.p = p, .X = X, .u = u, .head = true};
    par_for(be, n, (double)n * p->hc * p->hc * p->dim, hc_task, &c);
    if (p->then_y) cpu_rmsnorm(be, u, p->then_w, n, p->dim, p->dim, p->then_eps, p->then_y, p->then_rnd);
}

static void cpu_hc_post(dsv4_backend *be, int hc, int dim, const float *o, const float *o2, const float *post,
                        const float *comb, int n, float *X, unsigned rnd)
{
    for (int t = 0; t < n; t++) {
        float *x = X + (size_t)t * hc * dim;
        const float *pt = post + (size_t)t * hc, *ct = comb + (size_t)t * hc * hc, *ot = o + (size_t)t * dim;
        float old[hc];
        for (int d = 0; d < dim; d++) {
            for (int j = 0; j < hc; j++) old[j] = x[(size_t)j * dim + d];
            float od = ot[d];
            if (o2) od += rnd & DSV4_RND_IN ? dsv4_round_bf16(o2[(size_t)t * dim + d]) : o2[(size_t)t * dim + d];
            if (rnd & DSV4_RND_IN) od = dsv4_round_bf16(od);
            for (int k = 0; k < hc; k++) {
                float s = pt[k] * od;
                for (int j = 0; j < hc; j++) s += ct[j * hc + k] * old[j];
                x[(size_t)k * dim + d] = rnd & DSV4_RND_OUT ? dsv4_round_bf16(s) : s;
            }
        }
    }
}

/* ==== compressor ======================================================== */

/* Pool one window into out[d] from the state rows; MODEL.md §3.6.1. */
static void compress_pool(const dsv4_compress_params *p, const float *kvs, const float *scs, float *out)
{
    int r = p->ratio, d = p->d, w = p->coff * d;
    for (int i = 0; i < d; i++) {
        float mx = -INFINITY;
        if (p->coff == 2) {
            /* previous window through channels [0, d), current through [d, 2d) */
            for (int j = 0; j < r; j++) mx = fmaxf(mx, scs[(size_t)j * w + i]);
            for (int j = 0; j < r; j++) mx = fmaxf(mx, scs[(size_t)(r + j) * w + d + i]);
            float den = 0, num = 0;
            for (int j = 0; j < r; j++) {
                float s = scs[(size_t)j * w + i];
                if (s == -INFINITY) continue;
                float e = expf(s - mx);
                den += e;
                num += e * kvs[(size_t)j * w + i];
            }
            for (int j = 0; j < r; j++) {
                float e = expf(scs[(size_t)(r + j) * w + d + i] - mx);
                den += e;
                num += e * kvs[(size_t)(r + j) * w + d + i];
            }
            out[i] = num / den;
        } else {
            for (int j = 0; j < r; j++) mx = fmaxf(mx, scs[(size_t)j * w + i]);
            float den = 0, num = 0;
            for (int j = 0; j < r; j++) {
                float e = expf(scs[(size_t)j * w + i] - mx);
                den += e;
                num += e * kvs[(size_t)j * w + i];
            }
            out[i] = num / den;
        }
    }
}

/* Norm, RoPE at the window's first position, simulation; writes the row. */
static void compress_finish(const dsv4_compress_params *p, float *row, int64_t c)
{
    int d = p->d;
    if (p->reference)
        for (int i = 0; i < d; i++) row[i] = dsv4_round_bf16(row[i]);
    float ss = dsv4_cpu_dot_f32(row, row, d);
    float k = 1.0f / sqrtf(ss / (float)d + p->norm_eps);
    for (int i = 0; i < d; i++) row[i] = p->norm[i] * (row[i] * k);
    if (p->reference)
        for (int i = 0; i < d; i++) row[i] = dsv4_round_bf16(row[i]);
    int64_t pos = c * p->ratio;
    float *v = row + d - p->rope_dim;
    for (int i = 0; i < p->rope_dim / 2; i++) {
        float ang = (float)pos * p->freqs[i];
        float cs = (float)cos((double)ang), sn = (float)sin((double)ang);
        float a = v[2 * i], b = v[2 * i + 1];
        v[2 * i] = a * cs - b * sn;
        v[2 * i + 1] = a * sn + b * cs;
    }
    if (p->reference) {
        for (int i = 0; i < d; i++) row[i] = dsv4_round_bf16(row[i]);
        if (p->indexer) {
            dsv4_hadamard(row, d);
            for (int i = 0; i < d; i++) row[i] = dsv4_round_bf16(row[i]);
            dsv4_fp4sim(row, d, 32);
        } else {
            dsv4_fp8sim(row, d - p->rope_dim, 64);
        }
    }
}

/* A cached row (dsv4_kv.bf16_rows: BF16 values, two to a float slot) from
 * and to FP32: the same values, reference numerics caching BF16 values. */
static void kv_row_put(float *dst, const float *src, int n, bool bf16)
{
    if (!bf16) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    uint16_t *d = (uint16_t *)dst;
    for (int i = 0; i < n; i++) d[i] = dsv4_f32_to_bf16(src[i]);
}

/* An indexer key as codes and scales (dsv4_kv.fp4_keys): the row is FP4SIM32
 * output (compress_finish, reference numerics), so it packs exactly. */
static void kv_key_put(const dsv4_kv *kv, const dsv4_compress_params *p, int slot, int64_t c, const float *row)
{
    uint8_t *sc, *codes = dsv4_kv_idx_key(kv, p->layer, slot, c, p->ratio, p->d, &sc);
    for (int b = 0; b < p->d; b += 32)
        if (!dsv4_fp4_pack(row + b, 32, codes + b / 2, sc + b / 32)) {
            fprintf(stderr, "dsv4: an indexer key is not FP4SIM32 output (layer %d); cannot pack it\n", p->layer);
            abort();
        }
}

/* q . row for a cached row: the BF16 row through the same tile as an FP32
 * one (the order of the sum does not depend on the element kind), so the
 * value is that of the row's FP32 copy. */
static float kv_row_dot(const float *q, const float *row, int n, bool bf16)
{
    if (!bf16) return dsv4_cpu_dot_f32(q, row, n);
    float y;
    wsrc ws = {.data = (const uint8_t *)row};
    tile(K_BF16, 1, 1, q, 0, &ws, n, &y, 0);
    return y;
}

typedef struct {
    const dsv4_compress_params *p;
    const dsv4_plan *plan;
    dsv4_kv *kv;
    const float *a, *g;
} compress_ctx;

static void compress_seg(void *vctx, int64_t si)
{
    compress_ctx *c = vctx;
    const dsv4_compress_params *p = c->p;
    const dsv4_seg *s = &c->plan->segs[si];
    const dsv4_layer_state *ls = &c->kv->layer[p->layer];
    int r = p->ratio, w = p->coff * p->d;
    float *slot = c->kv->slots + (size_t)s->slot * c->kv->slot_floats;
    float *kvs = slot + (p->indexer ? ls->idx_kv : ls->cmp_kv);
    float *scs = slot + (p->indexer ? ls->idx_score : ls->cmp_score);
    int base = p->coff == 2 ? r : 0; /* rows of the current window */
    for (int i = 0; i < s->n; i++) {
        int64_t pos = s->pos0 + i;
        int j = (int)(pos % r);
        const float *a = c->a + (size_t)(s->t0 + i) * w, *g = c->g + (size_t)(s->t0 + i) * w;
        float *kr = kvs + (size_t)(base + j) * w, *sr = scs + (size_t)(base + j) * w;
        for (int q = 0; q < w; q++) {
            kr[q] = a[q];
            sr[q] = g[q] + p->ape[(size_t)j * w + q];
        }
        if (j != r - 1) continue;
        int64_t crow = pos / r;
        const bool fp4 = p->indexer && c->kv->fp4_keys, conv = fp4 || c->kv->bf16_rows;
        float *dst = fp4 ? NULL : dsv4_kv_cmp_row(c->kv, p->layer, s->slot, crow, r, p->indexer, p->d);
        float tmp[conv ? p->d : 1], *row = conv ? tmp : dst;
        compress_pool(p, kvs, scs, row);
        compress_finish(p, row, crow);
        if (fp4) kv_key_put(c->kv, p, s->slot, crow, row);
        else if (c->kv->bf16_rows) kv_row_put(dst, row, p->d, true);
        if (p->coff == 2) {
            /* the current window becomes the previous one */
            memcpy(kvs, kvs + (size_t)r * w, (size_t)r * w * sizeof(float));
            memcpy(scs, scs + (size_t)r * w, (size_t)r * w * sizeof(float));
        }
    }
}

static void cpu_compress(dsv4_backend *be, const dsv4_compress_params *p, const dsv4_plan *plan, dsv4_kv *kv,
                         const float *a, const float *g)
{
    compress_ctx c = {.p = p, .plan = plan, .kv = kv, .a = a, .g = g};
    par_for(be, plan->n_seg, (double)plan->n_tok * p->coff * p->d * 8, compress_seg, &c);
}

/* ==== indexer =========================================================== */

static int topk_cmp_desc(const void *a, const void *b)
{
    const float *x = a, *y = b; /* pairs (score, index) stored as floats: index exact below 2^24 */
    if (x[0] != y[0]) return x[0] > y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : (x[1] > y[1]);
}

static int idx_cmp_asc(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int dsv4_cpu_topk(const float *score, int n, int k, int32_t *idx)
{
    if (k > n) k = n;
    if (k <= 0) return 0;
    if (k == n) {
        for (int i = 0; i < n; i++) idx[i] = i;
        return n;
    }
    float *pairs = scratch(S_TOPK, (size_t)n * 2 * sizeof(float));
    for (int i = 0; i < n; i++) {
        pairs[2 * i] = isnan(score[i]) ? -INFINITY : score[i]; /* NaN ranks last: a total order */
        pairs[2 * i + 1] = (float)i;
    }
    qsort(pairs, (size_t)n, 2 * sizeof(float), topk_cmp_desc);
    for (int i = 0; i < k; i++) idx[i] = (int32_t)pairs[2 * i + 1];
    qsort(idx, (size_t)k, sizeof(int32_t), idx_cmp_asc);
    return k;
}

typedef struct {
    const dsv4_indexer_params *p;
    const dsv4_plan *plan;
    const dsv4_kv *kv;
    const float *q, *w;
    int32_t *idx, *cnt;
} indexer_ctx;

static void indexer_tok(void *vctx, int64_t t)
{
    indexer_ctx *c = vctx;
    const dsv4_indexer_params *p = c->p;
    const dsv4_seg *s = &c->plan->segs[c->plan->tok_seg[t]];
    int64_t N = (c->plan->pos[t] + 1) / p->ratio;
    int nh = p->n_heads, hd = p->head_dim;
    float *score = scratch(S_SCORE, (size_t)(N > 0 ? N : 1) * sizeof(float));
    const float *q = c->q + (size_t)t * nh * hd, *w = c->w + (size_t)t * nh;
    const bool fp4 = c->kv->fp4_keys;
    float *ws = scratch(S_IDX, ((size_t)nh + (fp4 ? (size_t)hd : 0)) * sizeof(float)), *kf = ws + nh; /* [nh], [hd] */
    /* reference numerics: w read as BF16 values (the reference's BF16 projection) */
    for (int h = 0; h < nh; h++)
        ws[h] = p->reference ? dsv4_round_bf16(dsv4_round_bf16(w[h]) * p->scale) : w[h] * p->scale;
    for (int64_t r = 0; r < N; r++) {
        const float *key = kf;
        if (fp4) { /* the key's values back from codes and scales: the same floats */
            uint8_t *ks, *kc = dsv4_kv_idx_key(c->kv, p->layer, s->slot, r, p->ratio, hd, &ks);
            for (int b = 0; b < hd; b += 32) dsv4_fp4_unpack(kc + b / 2, ks[b / 32], 32, kf + b);
        } else {
            key = dsv4_kv_cmp_row(c->kv, p->layer, s->slot, r, p->ratio, true, hd);
        }
        float sc = 0;
        for (int h = 0; h < nh; h++) {
            float dq = kv_row_dot(q + (size_t)h * hd, key, hd, !fp4 && c->kv->bf16_rows);
            /* the reference scores in BF16: each product and the sum rounded */
            if (p->reference) sc += dsv4_round_bf16(fmaxf(dsv4_round_bf16(dq), 0.0f) * ws[h]);
            else if (dq > 0) sc += ws[h] * dq;
        }
        score[r] = p->reference ? dsv4_round_bf16(sc) : sc;
    }
    c->cnt[t] = dsv4_cpu_topk(score, (int)N, p->topk, c->idx + (size_t)t * p->topk);
}

static void cpu_indexer_topk(dsv4_backend *be, const dsv4_indexer_params *p, const dsv4_plan *plan,
                             const dsv4_kv *kv, const float *q, const float *w, int32_t *idx, int32_t *cnt)
{
    indexer_ctx c = {.p = p, .plan = plan, .kv = kv, .q = q, .w = w, .idx = idx, .cnt = cnt};
    double rows = 0;
    for (int t = 0; t < plan->n_tok; t++) rows += (double)(plan->pos[t] + 1) / p->ratio;
    par_for(be, plan->n_tok, rows * p->n_heads * p->head_dim, indexer_tok, &c);
}

/* ==== sparse attention ================================================== */

typedef struct {
    const dsv4_attn_params *p;
    const dsv4_plan *plan;
    const float *q;
    float *out;
    const float **rows; /* [n_tok][max_rows] */
    uint8_t *bf;        /* [n_tok][max_rows]: the row is a BF16 cached row (dsv4_kv.bf16_rows) */
    int *n_rows;        /* [n_tok] */
    int max_rows;
} attn_ctx;

/* Visible rows of token t in canonical order: window positions ascending,
 * then compressed rows ascending. */
static int attn_rows(const dsv4_attn_params *p, const dsv4_plan *plan, const dsv4_kv *kv, const float *kv_new,
                     const int32_t *idx, const int32_t *cnt, int t, const float **rows, uint8_t *bf)
{
    const dsv4_seg *s = &plan->segs[plan->tok_seg[t]];
    int64_t pos = plan->pos[t];
    int hd = p->head_dim, n = 0;
    int64_t lo = pos - p->window + 1 > 0 ? pos - p->window + 1 : 0;
    for (int64_t q = lo; q <= pos; q++) {
        if (q >= s->pos0) bf[n] = 0, rows[n++] = kv_new + (size_t)(s->t0 + (q - s->pos0)) * hd;
        else bf[n] = kv->bf16_rows, rows[n++] = dsv4_kv_win_row(kv, p->layer, s->slot, q, p->window, hd);
    }
    if (p->kind == DSV4_ATTN_CSA) {
        for (int i = 0; i < cnt[t]; i++)
            bf[n] = kv->bf16_rows,
            rows[n++] = dsv4_kv_cmp_row(kv, p->layer, s->slot, idx[(size_t)t * p->topk + i], p->ratio, false, hd);
    } else if (p->kind == DSV4_ATTN_HCA) {
        int64_t N = (pos + 1) / p->ratio;
        for (int64_t c = 0; c < N; c++)
            bf[n] = kv->bf16_rows, rows[n++] = dsv4_kv_cmp_row(kv, p->layer, s->slot, c, p->ratio, false, hd);
    }
    return n;
}

/* o += e x a cached row (BF16 when bf, else FP32), hd values. */
static void row_add(float *o, float e, const float *row, bool bf, int hd)
{
    if (bf) {
        const uint16_t *r = (const uint16_t *)row;
        for (int i = 0; i < hd; i++) o[i] += e * dsv4_bf16_to_f32(r[i]);
    } else {
        for (int i = 0; i < hd; i++) o[i] += e * row[i];
    }
}

/* Reference numerics' attention of one (token, head) over its nr scores sc (backend.h, dsv4_attn_params.reference):
 * per part p (dsv4_attn_part_lo) its max m_p, its weights BF16(exp(s - m_p)), l_p the sum of the unrounded
 * exp(s - m_p) (here in row order) and O_p the weighted sum of its rows, joined by dsv4_attn_join. op: hd floats
 * of room. */
static void attn_parts(float *sc, int nr, int hd, const float **rows, const uint8_t *bf, float sink, float *o,
                       float *op)
{
    float mp[DSV4_ATTN_PARTS], lp[DSV4_ATTN_PARTS], c[DSV4_ATTN_PARTS];
    for (int p = 0; p < DSV4_ATTN_PARTS; p++) {
        const int lo = dsv4_attn_part_lo(nr, p), hi = dsv4_attn_part_lo(nr, p + 1);
        mp[p] = -INFINITY, lp[p] = 0;
        for (int j = lo; j < hi; j++) mp[p] = fmaxf(mp[p], sc[j]);
        for (int j = lo; j < hi; j++) lp[p] += (sc[j] = expf(sc[j] - mp[p]));
    }
    const float den = dsv4_attn_join(mp, lp, sink, c);
    for (int i = 0; i < hd; i++) o[i] = 0;
    for (int p = 0; p < DSV4_ATTN_PARTS; p++) {
        const int lo = dsv4_attn_part_lo(nr, p), hi = dsv4_attn_part_lo(nr, p + 1);
        if (hi <= lo) continue; /* an empty part adds nothing (dsv4_attn_join) */
        for (int i = 0; i < hd; i++) op[i] = 0;
        for (int j = lo; j < hi; j++) row_add(op, dsv4_round_bf16(sc[j]), rows[j], bf[j], hd);
        for (int i = 0; i < hd; i++) o[i] = fmaf(c[p], op[i], o[i]);
    }
    for (int i = 0; i < hd; i++) o[i] /= den;
}

static void attn_task(void *vctx, int64_t task)
{
    attn_ctx *c = vctx;
    const dsv4_attn_params *p = c->p;
    int H = p->n_heads, hd = p->head_dim;
    int t = (int)(task / H), h = (int)(task % H);
    int nr = c->n_rows[t];
    const float **rows = c->rows + (size_t)t * c->max_rows;
    const uint8_t *bf = c->bf + (size_t)t * c->max_rows;
    const float *q = c->q + ((size_t)t * H + h) * hd;
    float *o = c->out + ((size_t)t * H + h) * hd;
    /* reference numerics: the part sums' room after the scores */
    float *sc = scratch(S_SCORE, ((size_t)nr + (size_t)hd) * sizeof(float));
    float sink = p->sinks[h], mx = -INFINITY;
    for (int j = 0; j < nr; j++) {
        sc[j] = kv_row_dot(q, rows[j], hd, bf[j]) * p->scale;
        mx = fmaxf(mx, sc[j]);
    }
    if (p->reference) {
        attn_parts(sc, nr, hd, rows, bf, sink, o, sc + nr);
        return;
    }
    /* The sink adds mass to the denominator only. The max runs over the real
     * scores; every visible set holds at least the token's own row. */
    float den = 0;
    for (int j = 0; j < nr; j++) den += (sc[j] = expf(sc[j] - mx));
    den += expf(sink - mx);
    for (int i = 0; i < hd; i++) o[i] = 0;
    for (int j = 0; j < nr; j++) row_add(o, sc[j], rows[j], bf[j], hd);
    for (int i = 0; i < hd; i++) o[i] /= den;
}

static void cpu_attn(dsv4_backend *be, const dsv4_attn_params *p, const dsv4_plan *plan, const dsv4_kv *kv,
                     const float *q, const float *kv_new, const int32_t *idx, const int32_t *cnt, float *out)
{
    int max_rows = p->window;
    if (p->kind == DSV4_ATTN_CSA) max_rows += p->topk;
    if (p->kind == DSV4_ATTN_HCA) {
        int64_t mx = 0;
        for (int t = 0; t < plan->n_tok; t++) mx = plan->pos[t] > mx ? plan->pos[t] : mx;
        max_rows += (int)((mx + 1) / p->ratio);
    }
    attn_ctx c = {.p = p, .plan = plan, .q = q, .out = out, .max_rows = max_rows};
    c.rows = scratch(S_ROWS, (size_t)plan->n_tok * max_rows * sizeof(*c.rows));
    c.bf = scratch(S_ROWBF, (size_t)plan->n_tok * max_rows);
    c.n_rows = scratch(S_NROWS, (size_t)plan->n_tok * sizeof(int));
    for (int t = 0; t < plan->n_tok; t++)
        c.n_rows[t] = attn_rows(p, plan, kv, kv_new, idx, cnt, t, c.rows + (size_t)t * max_rows,
                                c.bf + (size_t)t * max_rows);
    double rows = 0;
    for (int t = 0; t < plan->n_tok; t++) rows += c.n_rows[t];
    par_for(be, (int64_t)plan->n_tok * p->n_heads, 2.0 * rows * p->n_heads * p->head_dim, attn_task, &c);
    if (p->out_freqs)
        cpu_rope(be, out, plan->n_tok, p->n_heads, p->n_heads * p->head_dim, p->head_dim, p->out_rope, plan->pos,
                 p->out_freqs, true, p->out_rnd);
}

static void cpu_kv_store(dsv4_backend *be, int layer, int window, int head_dim, const dsv4_plan *plan, dsv4_kv *kv,
                         const float *kv_new)
{
    for (int si = 0; si < plan->n_seg; si++) {
        const dsv4_seg *s = &plan->segs[si];
        int first = s->n > window ? s->n - window : 0;
        for (int i = first; i < s->n; i++)
            kv_row_put(dsv4_kv_win_row(kv, layer, s->slot, s->pos0 + i, window, head_dim),
                       kv_new + (size_t)(s->t0 + i) * head_dim, head_dim, kv->bf16_rows);
    }
}

/* ==== MoE =============================================================== */

static inline float sqrt_softplus(float x)
{
    /* torch's softplus switches to the identity above 20 */
    float sp = x > 20.0f ? x : log1pf(expf(x));
    return sqrtf(sp);
}

static void cpu_moe_route(dsv4_backend *be, const float *logits, int n, int n_experts, int k, const float *bias,
                          const dsv4_w *tid2eid, const int32_t *tokens, bool renorm, float route_scale,
                          int32_t *idx, float *wts)
{
    float *s = scratch(S_ROUTE, 2 * (size_t)n_experts * sizeof(float)), *sel = s + n_experts; /* [E], [E] */
    for (int t = 0; t < n; t++) {
        const float *lg = logits + (size_t)t * n_experts;
        int32_t *it = idx + (size_t)t * k;
        float *wt = wts + (size_t)t * k;
        for (int e = 0; e < n_experts; e++) s[e] = sqrt_softplus(lg[e]);
        if (tid2eid && tid2eid->name) {
            for (int i = 0; i < k; i++) {
                size_t o = (size_t)tokens[t] * k + i;
                it[i] = tid2eid->dtype == DSV4_DT_I64 ? (int32_t)dsv4_ld_i64(tid2eid->host, (int64_t)o)
                                                       : dsv4_ld_i32(tid2eid->host, (int64_t)o);
            }
        } else {
            for (int e = 0; e < n_experts; e++) sel[e] = s[e] + (bias ? bias[e] : 0.0f);
            dsv4_cpu_topk(sel, n_experts, k, it);
        }
        float sum = 0;
        for (int i = 0; i < k; i++) sum += (wt[i] = s[it[i]]);
        for (int i = 0; i < k; i++) {
            if (renorm) wt[i] /= sum + 1e-20f;
            wt[i] *= route_scale;
        }
    }
}

typedef struct {
    const dsv4_moe_params *p;
    const float *x;
    const int32_t *idx;
    const float *wts;
    int n;
    float *ybuf; /* [n*k, D] */
} moe_ctx;

static void moe_experts_run(dsv4_backend *be, moe_ctx *c)
{
    const dsv4_moe_params *p = c->p;
    int k = p->k, D = p->dim, I = p->inter, n = c->n;
    int *list = scratch(S_MOE_LIST, (size_t)n * k * sizeof(int));
    float *xs = scratch(S_MOE_XS, (size_t)n * k * D * sizeof(float));
    float *g = scratch(S_MOE_G, (size_t)n * k * I * sizeof(float));
    float *u = scratch(S_MOE_U, (size_t)n * k * I * sizeof(float));
    float *y = scratch(S_MOE_Y, (size_t)n * k * D * sizeof(float));
    const int e_lo = p->expert_hi > p->expert_lo ? p->expert_lo : 0;
    const int e_hi = p->expert_hi > p->expert_lo ? p->expert_hi : p->n_experts;
    for (int e = e_lo; e < e_hi; e++) {
        int m = 0;
        for (int a = 0; a < n * k; a++)
            if (c->idx[a] == e) list[m++] = a;
        if (!m) continue;
        for (int i = 0; i < m; i++) memcpy(xs + (size_t)i * D, c->x + (size_t)(list[i] / k) * D, D * sizeof(float));
        cpu_linear(be, &p->w1[e], xs, D, m, g, I);
        cpu_linear(be, &p->w3[e], xs, D, m, u, I);
        /* reference numerics: the expert GEMMs return BF16 */
        cpu_swiglu(be, g, u, (size_t)m * I, p->swiglu_limit, g, p->reference ? DSV4_RND_IN : 0);
        for (int i = 0; i < m; i++) {
            float wv = c->wts[list[i]];
            float *gi = g + (size_t)i * I;
            for (int q = 0; q < I; q++) {
                gi[q] *= wv;
                if (p->reference) gi[q] = dsv4_round_bf16(gi[q]);
            }
        }
        cpu_linear(be, &p->w2[e], g, I, m, y, D);
        if (p->reference) cpu_round_bf16(be, y, (size_t)m * D);
        for (int i = 0; i < m; i++) memcpy(c->ybuf + (size_t)list[i] * D, y + (size_t)i * D, D * sizeof(float));
    }
}

static void cpu_moe_sum(dsv4_backend *be, const float *Y, const int32_t *idx, int n, int k, int D, float *out);

static void cpu_moe_experts(dsv4_backend *be, const dsv4_moe_params *p, const float *x, int n, const int32_t *idx,
                            const float *wts, float *out)
{
    int k = p->k, D = p->dim;
    moe_ctx c = {.p = p, .x = x, .idx = idx, .wts = wts, .n = n};
    c.ybuf = p->slot_out ? p->slot_out : scratch(S_MOE_YBUF, (size_t)n * k * D * sizeof(float));
    if (p->expert_hi > p->expert_lo) /* other ranks' slots stay zero */
        memset(c.ybuf, 0, (size_t)n * k * D * sizeof(float));
    moe_experts_run(be, &c);
    if (!p->slot_out) cpu_moe_sum(be, c.ybuf, idx, n, k, D, out);
}

/* Sum each token's expert outputs in ascending expert id: a fixed order. */
static void cpu_moe_sum(dsv4_backend *be, const float *Y, const int32_t *idx, int n, int k, int D, float *out)
{
    (void)be;
    for (int t = 0; t < n; t++) {
        int order[k];
        for (int i = 0; i < k; i++) order[i] = i;
        for (int i = 1; i < k; i++)
            for (int j = i; j > 0 && idx[t * k + order[j]] < idx[t * k + order[j - 1]]; j--) {
                int tmp = order[j];
                order[j] = order[j - 1];
                order[j - 1] = tmp;
            }
        float *o = out + (size_t)t * D;
        for (int d = 0; d < D; d++) o[d] = 0;
        for (int i = 0; i < k; i++) {
            const float *yi = Y + ((size_t)t * k + order[i]) * D;
            for (int d = 0; d < D; d++) o[d] += yi[d];
        }
    }
}

/* ==== RoPE tables ======================================================= */

void dsv4_rope_freqs(double theta, int rope_dim, int yarn, double factor, double orig_max_pos, double beta_fast,
                     double beta_slow, float *freqs)
{
    int half = rope_dim / 2;
    double low = 0, high = 0;
    if (yarn) {
        double lo = rope_dim * log(orig_max_pos / (beta_fast * 2 * M_PI)) / (2 * log(theta));
        double hi = rope_dim * log(orig_max_pos / (beta_slow * 2 * M_PI)) / (2 * log(theta));
        low = floor(lo) > 0 ? floor(lo) : 0;
        high = ceil(hi) < rope_dim - 1 ? ceil(hi) : rope_dim - 1;
        if (low == high) high += 0.001;
    }
    for (int i = 0; i < half; i++) {
        /* FP32 as the reference: base ** (2i/dim) in float, then its inverse */
        float pf = powf((float)theta, (float)(2 * i) / (float)rope_dim);
        float f = 1.0f / pf;
        if (yarn) {
            float ramp = (float)((i - low) / (high - low));
            ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
            float interp = 1.0f / ((float)factor * pf);
            float extra = 1.0f - ramp; /* extrapolation weight */
            f = interp * (1.0f - extra) + f * extra;
        }
        freqs[i] = f;
    }
}

/* ==== construction ====================================================== */

static void cpu_destroy(dsv4_backend *be)
{
    if (!be) return;
    cpu_impl *im = be->impl;
    if (im) {
        dsv4_pool_destroy(im->pool);
        for (size_t i = 0; i < im->n_owned; i++) free(im->owned[i]);
        free(im->owned);
    }
    free(im);
    free(be);
}

dsv4_backend *dsv4_backend_cpu_create(int n_threads)
{
    dsv4_backend *be = calloc(1, sizeof(*be));
    cpu_impl *im = calloc(1, sizeof(*im));
    if (!be || !im) {
        free(be);
        free(im);
        return NULL;
    }
    im->pool = dsv4_pool_create(n_threads);
    im->prof_family = -1;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, luts_init);
    be->name = "cpu";
    be->kv_bf16 = true; /* compress, indexer, attention and window store read and write BF16 cached rows */
    be->kv_fp4_keys = true; /* compress and indexer write and read packed FP4 indexer keys */
    snprintf(be->device, sizeof be->device, "the CPU");
    be->impl = im;
    be->destroy = cpu_destroy;
    be->weight_load = cpu_weight_load;
    be->step_begin = cpu_step_begin;
    be->prof_mark = cpu_prof_mark;
    be->prof_collect = cpu_prof_collect;
    be->alloc = cpu_alloc;
    be->free = cpu_free;
    be->upload = cpu_copy;
    be->download = cpu_copy;
    be->copy = cpu_copy;
    be->copy_rows = cpu_copy_rows;
    be->embed = cpu_embed;
    be->linear = cpu_linear;
    be->linear_multi = cpu_linear_multi;
    be->rmsnorm = cpu_rmsnorm;
    be->rmsnorm_bf16 = cpu_rmsnorm_bf16;
    be->rope = cpu_rope;
    be->round_bf16 = cpu_round_bf16;
    be->fill = cpu_fill;
    be->kv_sim = cpu_kv_sim;
    be->norm_rope = cpu_norm_rope;
    be->idx_sim = cpu_idx_sim;
    be->hc_pre = cpu_hc_pre;
    be->hc_post = cpu_hc_post;
    be->hc_head = cpu_hc_head;
    be->compress = cpu_compress;
    be->indexer_topk = cpu_indexer_topk;
    be->attn = cpu_attn;
    be->kv_store = cpu_kv_store;
    be->moe_route = cpu_moe_route;
    be->moe_experts = cpu_moe_experts;
    be->moe_sum = cpu_moe_sum;
    be->swiglu = cpu_swiglu;
    return be;
}
