/*
 * test_ops_cuda.c - every op of the CUDA backend against its CPU twin.
 *
 * Each op runs on both backends with the same input bits: fresh random inputs
 * per case (seed = base seed + case number, printed with every case), sizes
 * that are multiples of no tile or block (rows 1/3/7/13, dims 37/129/300 where
 * the op allows), the outputs poisoned with the NaN pattern 0x7fc00000 before
 * every run. Results are compared element by element within a tolerance
 * stated per op (table below), NaN and Inf must sit in exactly the same places
 * when a case plants them in its inputs, and finite inputs must give finite
 * outputs everywhere - which is also how an output left unwritten shows up.
 * Strided outputs must leave the bytes between rows untouched.
 *
 * The stateful ops (compress, indexer_topk, attn, kv_store) run six batch
 * steps of three sequences (segments of 1 to 37 tokens, listed out of slot
 * order, positions crossing compression windows and page boundaries, pages
 * handed out of order) over a paged state laid out as engine.c lays it out,
 * with sliding, CSA and HCA layers. Both backends get the same layout and
 * page table (host bookkeeping shared, memory from each backend's alloc).
 * After each op the slots and pages are compared, then the CPU's copy is
 * uploaded over the GPU's, so every op is checked on identical inputs and
 * differences never accumulate.
 *
 * Tolerances. "mag" is the sum of the absolute values of the terms an output
 * sums (for a dot product sum |x_i w_i|): two fixed but different summation
 * orders in FP32 differ by a few ulps of it, so 1e-5 of it is ~10x the
 * expected difference and far below what a wrong element, scale or index
 * gives (of the order of the output itself).
 *   embed, add, round_bf16, kv_sim, idx_sim, kv_store, compressor state:
 *       exact (copies, sums of two terms, and codecs whose every step is
 *       exact or correctly rounded in the shared quant.h code)
 *   linear, moe_experts (plain) ........... |d| <= 1e-5 (|ref| + mag)
 *   linear FP8 (E8M0) with act_quant ...... |d| <= 2^-11 (|ref| + mag) on the GPU: wg8.cu's wgmma keeps
 *       ~14 bits of each 32-column sum of exact products; 2^-9 through cuBLASLt (--prefill-gemm cublaslt,
 *       lt.cu), whose tensor-core chain runs over a 128-column block
 *   rmsnorm, swiglu, moe_route weights .... |d| <= 1e-5 |ref| (no cancellation)
 *   rope .................................. |d| <= 1e-5 (|ref| + |a| + |b|) of the rotated pair
 *   hc_pre / hc_head u, hc_post ........... |d| <= 1e-5 (|ref| + mag)
 *   hc_pre post, comb ..................... |d| <= 1e-5 (|ref| + 1): both are O(1) by construction
 *   compressed rows (plain) ............... |d| <= 1e-5 (|ref| + 1): rows are RMS-normalised
 *   attn (plain) .......................... |d| <= 1e-5 (|ref| + max|v|)
 *   moe_route / indexer_topk indices ...... exact; top-k inputs are drawn with clear gaps, and an
 *       indexer choice that differs must be a near-tie of the CPU's own scores: within 1e-5 of
 *       the scores' terms (sum_h |w_h| sum_i |q_i k_i|) plus 1e-5 relative, 2^-5 relative in
 *       reference numerics, where each term and the score are rounded to BF16
 * Reference numerics round to BF16 (and FP8/FP4 grids) inside the ops, after
 * sums the two backends order differently: a one-ulp FP32 difference then
 * flips a rounding now and then (probability ~1e-4 per rounding). Those ops
 * keep the tight bound above for all but a fraction of the elements and allow
 * the rest what one or two flipped roundings can move them (bound, fraction):
 *   rmsnorm_bf16 ........ exact, else 2^-6 |ref| (a flipped mean moves a row by 1-2 BF16 ulps), 1/3
 *   attn ................ 2^-7 (|ref| + max|v|): one BF16 weight off by an ulp, 1/4
 *   moe_experts ......... 2^-6 (|ref| + mag), with act_quant 2^-3 (an FP8 step of one term), 1/2
 *   compressed rows ..... FP8: 0.25 (|ref| + 1), FP4: 2 (|ref| + 1) (a grid step), 5 % of the pages
 * and their outputs must be BF16-exact where the op ends in BF16. An op that
 * ignored the reference flag would miss the tight bound almost everywhere.
 *
 * Skipped (77) without a CUDA build or GPU. DSV4_OPS_SELFTEST=1 runs the same
 * comparisons CPU (1 thread) against CPU (2 threads) - they must agree
 * exactly - so the harness is exercised where there is no GPU; the harness
 * test (always run) checks that the comparisons fail on deliberately wrong
 * results and on deliberately broken ops. DSV4_OPS_SEED=n moves the seeds.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "model/quant.h"

#define POISON 0x7fc00000u

/* side[0] is the CPU reference (its memory is host memory: host-side
 * recomputations read it directly); side[1] is the backend under test. */
static dsv4_backend *side[2];
static bool selftest;
static uint64_t base_seed = 20250611;

/* ==== accounting ========================================================== */

static int n_fail; /* failed checks in the current test */
static bool quiet; /* the harness test: count failures, print nothing */
static int case_no;
static uint64_t case_seed;
static char case_desc[160];
static int case_checks, case_fail0, case_ties, case_loose;
/* largest |d| / tight bound over the elements within it: the margin of FP32
 * ops; in reference numerics a difference is 0 or a flipped rounding, which
 * lands anywhere below the bound (or counts as a flip above it) */
static double case_worst;

static void say(const char *fmt, ...)
{
    if (quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

/* ==== random inputs ======================================================= */

static uint64_t rng_s;
static uint64_t rnd_u64(void)
{
    uint64_t z = (rng_s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int rnd_int(int n)
{
    return (int)(rnd_u64() % (uint64_t)n);
}
/* uniform in [-1, 1) */
static float rnd_uni(void)
{
    return (float)((double)(rnd_u64() >> 40) * 0x1p-24) * 2.0f - 1.0f;
}
static float rnd_norm(void) /* mean 0, variance 1, bounded */
{
    float s = 0;
    for (int i = 0; i < 4; i++) s += rnd_uni();
    return s * 0.8660254f;
}
static float *rnd_vec(size_t n, float scale)
{
    float *v = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) v[i] = rnd_norm() * scale;
    return v;
}

static void case_begin(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(case_desc, sizeof case_desc, fmt, ap);
    va_end(ap);
    case_no++;
    case_seed = base_seed + (uint64_t)case_no;
    rng_s = case_seed;
    case_checks = case_ties = case_loose = 0;
    case_fail0 = n_fail;
    case_worst = 0;
}

static void case_end(void)
{
    say("case %3d seed %llu  %-78s %3d checks, worst %.3f of tol", case_no, (unsigned long long)case_seed, case_desc,
        case_checks, case_worst);
    if (case_loose) say(", %d elements within a rounding flip", case_loose);
    if (case_ties) say(", %d near-tie choices", case_ties);
    say("%s\n", n_fail == case_fail0 ? "" : "  FAILED");
}

/* ==== comparisons ========================================================= */

typedef struct {
    double tol; /* |got - ref| <= tol * (|ref| + scale + mag[i]) */
    double scale;
    const double *mag; /* per-element magnitude, or NULL */
    double loose;      /* beyond tol but within loose * (...): allowed ... */
    double loose_frac; /* ... for at most this fraction of the finite elements */
    bool nonfinite;    /* inputs hold NaN/Inf: non-finite outputs allowed where both agree */
    bool bf16;         /* every finite element of got must be BF16-exact */
} tolspec;

static const tolspec EXACT = {0};

/* An op's output with its BF16 rounding folded in (DSV4_RND_OUT): BF16-exact,
 * and where the two sides' FP32 values straddle a rounding boundary they land
 * one BF16 step apart. */
static tolspec rounded(tolspec t, unsigned rnd)
{
    if (rnd & DSV4_RND_OUT) t.bf16 = true, t.loose = 0x1p-7, t.loose_frac = 0.02;
    return t;
}

static const char *rnd_name(unsigned rnd)
{
    static const char *nm[4] = {"", " rnd=in", " rnd=out", " rnd=in+out"};
    return nm[rnd & 3];
}
static const tolspec EXACT_NF = {.nonfinite = true};

static uint32_t bits(float f)
{
    return dsv4_f32_bits(f);
}

static void fail_line(const char *what, const char *fmt, ...)
{
    n_fail++;
    if (quiet) return;
    va_list ap;
    va_start(ap, fmt);
    printf("  FAIL case %d (seed %llu) %s: %s: ", case_no, (unsigned long long)case_seed, case_desc, what);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

/* Compare n floats of the backend under test (got) against the CPU (ref). */
static bool check_f32(const char *what, const float *ref, const float *got, size_t n, tolspec t)
{
    size_t bad = 0, n_loose = 0, n_fin = 0, n_nan = 0, first = (size_t)-1;
    double worst = 0, max_abs = 0, max_rel = 0;
    const char *why = "";
    case_checks++;
    for (size_t i = 0; i < n; i++) {
        const float r = ref[i], g = got[i];
        if (!isfinite(r) || !isfinite(g)) {
            bool same = (isnan(r) && isnan(g)) || (!isnan(r) && r == g);
            n_nan++;
            if (!same || !t.nonfinite) {
                if (!bad++) {
                    first = i;
                    why = !same ? "non-finite mismatch" : "non-finite output from finite inputs";
                }
            }
            continue;
        }
        n_fin++;
        const double d = fabs((double)g - (double)r);
        const double sc = fabs((double)r) + t.scale + (t.mag ? t.mag[i] : 0.0);
        /* non-exact specs: differences below the normal range do not count */
        const double bound = t.tol * sc + (t.tol > 0 ? 1e-37 : 0.0);
        if (d > max_abs) max_abs = d;
        if (d > 0) {
            double rel = d / (fabs((double)r) > 1e-30 ? fabs((double)r) : 1e-30);
            if (rel > max_rel) max_rel = rel;
        }
        if (d > bound) {
            if (t.loose > 0 && d <= t.loose * sc)
                n_loose++;
            else if (!bad++) {
                first = i;
                why = "difference over tolerance";
            }
        } else if (bound > 0 && d / bound > worst) {
            worst = d / bound;
        }
        if (t.bf16 && g != dsv4_round_bf16(g) && !bad++) {
            first = i;
            why = "not BF16-exact";
        }
    }
    if (worst > case_worst) case_worst = worst;
    case_loose += (int)n_loose;
    bool ok = bad == 0 && (double)n_loose <= t.loose_frac * (double)n_fin;
    if (!ok) {
        if (bad)
            fail_line(what,
                      "%zu of %zu elements bad (%s), first at %zu: cpu %.9g (0x%08x) vs %.9g (0x%08x); "
                      "max |d| %.3g, max rel %.3g, tol %.1e",
                      bad, n, why, first, (double)ref[first], bits(ref[first]), (double)got[first], bits(got[first]),
                      max_abs, max_rel, t.tol);
        else
            fail_line(what, "%zu of %zu finite elements only within the loose bound (allowed %.0f%%)", n_loose, n_fin,
                      100 * t.loose_frac);
    }
    (void)n_nan;
    return ok;
}

static bool check_i32(const char *what, const int32_t *ref, const int32_t *got, size_t n)
{
    case_checks++;
    for (size_t i = 0; i < n; i++)
        if (ref[i] != got[i]) {
            fail_line(what, "element %zu: cpu %d vs %d", i, ref[i], got[i]);
            return false;
        }
    return true;
}

/* The bytes between rows of a strided output must keep the poison. */
static void check_pad(const char *what, const float *buf, int rows, int cols, int ld)
{
    for (int r = 0; r < rows; r++)
        for (int j = cols; j < ld; j++)
            if (bits(buf[(size_t)r * ld + j]) != POISON) {
                fail_line(what, "row %d column %d (past the row's %d) was written: 0x%08x", r, j, cols,
                          bits(buf[(size_t)r * ld + j]));
                return;
            }
}

/* In-place ops: elements outside what the op owns keep their input bits. */
static void check_kept(const char *what, const float *got, const float *in, const bool *owned, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!owned[i] && bits(got[i]) != bits(in[i])) {
            fail_line(what, "element %zu, not the op's, changed from 0x%08x to 0x%08x", i, bits(in[i]), bits(got[i]));
            return;
        }
}

/* ==== backend memory ====================================================== */

static void *bnew(dsv4_backend *be, size_t bytes)
{
    void *p = be->alloc(be, bytes ? bytes : 4);
    if (!p) fail_msg("%s: out of memory allocating %zu bytes", be->name, bytes);
    return p;
}
static void *bdup(dsv4_backend *be, const void *h, size_t bytes)
{
    void *p = bnew(be, bytes);
    if (bytes) be->upload(be, p, h, bytes);
    return p;
}
static void fill_poison(void *p, size_t bytes)
{
    uint32_t v = POISON;
    for (size_t i = 0; i + 4 <= bytes; i += 4) memcpy((char *)p + i, &v, 4);
    for (size_t i = bytes & ~(size_t)3; i < bytes; i++) ((unsigned char *)p)[i] = 0xff;
}
static void *bpoison(dsv4_backend *be, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 4);
    fill_poison(h, bytes);
    void *p = bdup(be, h, bytes);
    free(h);
    return p;
}
static void *bhost(dsv4_backend *be, const void *d, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 4);
    if (bytes) be->download(be, h, d, bytes);
    return h;
}
static void bfree(dsv4_backend *be, void *p)
{
    if (p) be->free(be, p);
}

/* Ops that take the plan's tokens or positions (embed, rope, moe_route) read
 * them, on the GPU, from the copy step_begin made: each case begins a step. */
static int32_t dummy_page_table[1];
static dsv4_layer_state dummy_ls;
static dsv4_kv dummy_kv = {.max_seqs = 1,
                           .max_pages_per_seq = 1,
                           .page_tokens = 1,
                           .n_pages = 1,
                           .layer = &dummy_ls,
                           .page_table = dummy_page_table};

/* Page-table versions unique over the run: the CUDA backend re-uploads its
 * copy of a page table only when the version it is handed moves, and the test
 * hands it several dsv4_kv. */
static uint64_t pt_versions;

static void begin_step(int n, const int32_t *tok, const int64_t *pos)
{
    dummy_kv.pt_version = ++pt_versions;
    int32_t *tk = calloc((size_t)n, sizeof(int32_t)), *ts = calloc((size_t)n, sizeof(int32_t));
    int64_t *ps = calloc((size_t)n, sizeof(int64_t));
    for (int i = 0; i < n; i++) {
        tk[i] = tok ? tok[i] : 0;
        ps[i] = pos ? pos[i] : i;
    }
    dsv4_seg seg = {.slot = 0, .pos0 = 0, .n = n, .t0 = 0};
    dsv4_plan plan = {.n_tok = n, .n_seg = 1, .segs = &seg, .tokens = tk, .pos = ps, .tok_seg = ts};
    for (int s = 0; s < 2; s++) side[s]->step_begin(side[s], &plan, &dummy_kv);
    free(tk);
    free(ts);
    free(ps);
}

/* ==== weights ============================================================= */

typedef enum { WK_BF16, WK_F16, WK_F32, WK_FP8_E8M0, WK_FP8_F32, WK_MXFP4, WK_NVFP4 } wkind;
static const char *const wk_name[] = {"BF16", "F16", "F32", "FP8+E8M0", "FP8+F32", "MXFP4", "NVFP4"};

typedef struct {
    dsv4_w w; /* the host description (what weights.c binds) */
    void *el, *sc;
    dsv4_w on[2]; /* as each backend's weight_load left it */
} wmat;

static uint16_t rnd_f16(void)
{
    /* mostly normal values 2^-6 .. 2^2, one in 32 subnormal */
    int e = rnd_int(32) == 0 ? 0 : 9 + rnd_int(8);
    return (uint16_t)((rnd_u64() & 1 ? 0x8000 : 0) | e << 10 | (rnd_u64() & 0x3ff));
}
static uint8_t rnd_e4m3(void)
{
    uint8_t b;
    do b = (uint8_t)rnd_u64();
    while ((b & 0x7f) == 0x7f);
    return b;
}

/* A random [out, in] matrix in format k; FP8 blocks br x bc. plant: one NaN
 * element (a NaN/Inf group scale for the FP4 formats) in row out - 2. */
static void wmat_make(wmat *m, wkind k, int out, int in, int br, int bc, bool plant)
{
    memset(m, 0, sizeof *m);
    dsv4_w *w = &m->w;
    w->name = wk_name[k];
    w->ndim = 2;
    w->ne[0] = out;
    w->ne[1] = in;
    const size_t n = (size_t)out * in;
    const int pr = out - 2, pc = in > 3 ? 3 : 0;
    switch (k) {
    case WK_BF16: {
        uint16_t *e = malloc(n * 2);
        for (size_t i = 0; i < n; i++) e[i] = dsv4_f32_to_bf16(rnd_norm() * 0.5f);
        if (plant) e[(size_t)pr * in + pc] = 0x7fc0;
        w->dtype = DSV4_DT_BF16;
        m->el = e;
        break;
    }
    case WK_F16: {
        uint16_t *e = malloc(n * 2);
        for (size_t i = 0; i < n; i++) e[i] = rnd_f16();
        if (plant) e[(size_t)pr * in + pc] = 0x7e00;
        w->dtype = DSV4_DT_F16;
        m->el = e;
        break;
    }
    case WK_F32: {
        float *e = rnd_vec(n, 0.5f);
        if (plant) e[(size_t)pr * in + pc] = NAN;
        w->dtype = DSV4_DT_F32;
        m->el = e;
        break;
    }
    case WK_FP8_E8M0:
    case WK_FP8_F32: {
        uint8_t *e = malloc(n);
        for (size_t i = 0; i < n; i++) e[i] = rnd_e4m3();
        if (plant) e[(size_t)pr * in + pc] = 0x7f;
        const int sr = (out + br - 1) / br, scn = (in + bc - 1) / bc;
        if (k == WK_FP8_E8M0) {
            uint8_t *s = malloc((size_t)sr * scn);
            for (int i = 0; i < sr * scn; i++) s[i] = (uint8_t)(120 + rnd_int(11));
            m->sc = s;
            w->scale_dtype = DSV4_DT_F8_E8M0;
        } else {
            float *s = malloc((size_t)sr * scn * sizeof(float));
            for (int i = 0; i < sr * scn; i++) s[i] = ldexpf(1.0f + (float)rnd_int(64) / 64.0f, rnd_int(9) - 6);
            m->sc = s;
            w->scale_dtype = DSV4_DT_F32;
        }
        w->dtype = DSV4_DT_F8_E4M3;
        w->fmt = DSV4_WF_FP8;
        w->block_rows = br;
        w->block_cols = bc;
        w->scale_cols = scn;
        m->el = e;
        break;
    }
    case WK_MXFP4:
    case WK_NVFP4: {
        const int g = k == WK_MXFP4 ? 32 : 16;
        uint8_t *e = malloc(n / 2), *s = malloc((size_t)out * (in / g));
        for (size_t i = 0; i < n / 2; i++) e[i] = (uint8_t)rnd_u64();
        for (int i = 0; i < out * (in / g); i++)
            s[i] = k == WK_MXFP4 ? (uint8_t)(118 + rnd_int(16)) : rnd_e4m3() & 0x7f;
        if (plant)
            s[(size_t)pr * (in / g)] = k == WK_MXFP4 ? 0xff : 0x7f; /* E8M0 255 decodes to Inf, E4M3 0x7f is NaN */
        w->dtype = k == WK_MXFP4 ? DSV4_DT_I8 : DSV4_DT_U8;
        w->fmt = k == WK_MXFP4 ? DSV4_WF_MXFP4 : DSV4_WF_NVFP4;
        w->scale_dtype = k == WK_MXFP4 ? DSV4_DT_F8_E8M0 : DSV4_DT_F8_E4M3;
        w->scale_cols = in / g;
        w->scale2 = k == WK_MXFP4 ? 1.0f : 0.0123f;
        m->el = e;
        m->sc = s;
        break;
    }
    }
    w->host = m->el;
    w->scale = m->sc;
    char err[256];
    for (int s = 0; s < 2; s++) {
        m->on[s] = m->w;
        if (side[s]->weight_load(side[s], &m->on[s], err, sizeof err) != DSV4_OK) fail_msg("weight_load: %s", err);
    }
}

static void wmat_free(wmat *m)
{
    for (int s = 0; s < 2; s++) {
        bfree(side[s], m->on[s].dev);
        bfree(side[s], m->on[s].dev_scale);
    }
    free(m->el);
    free(m->sc);
}

/* Element (r, i) of a weight by the format's definition, r absolute. */
static float w_at_host(const dsv4_w *w, int64_t r, int64_t i)
{
    const int64_t n = w->ne[1];
    switch (w->fmt) {
    case DSV4_WF_FLOAT:
        if (w->dtype == DSV4_DT_BF16) return dsv4_bf16_to_f32(dsv4_ld_u16(w->host, r * n + i));
        if (w->dtype == DSV4_DT_F32) return dsv4_ld_f32(w->host, r * n + i);
        return dsv4_f16_to_f32(dsv4_ld_u16(w->host, r * n + i));
    case DSV4_WF_FP8: {
        const int64_t k = (r / w->block_rows) * w->scale_cols + i / w->block_cols;
        const float s =
            w->scale_dtype == DSV4_DT_F32 ? dsv4_ld_f32(w->scale, k) : dsv4_e8m0_to_f32(((const uint8_t *)w->scale)[k]);
        return dsv4_e4m3_to_f32(((const uint8_t *)w->host)[r * n + i]) * s;
    }
    default: {
        const uint8_t b = ((const uint8_t *)w->host)[r * (n / 2) + i / 2];
        const float v = dsv4_e2m1_to_f32((uint8_t)(i & 1 ? b >> 4 : b & 15));
        const uint8_t *sc = w->scale;
        if (w->fmt == DSV4_WF_MXFP4) return v * dsv4_e8m0_to_f32(sc[r * w->scale_cols + i / 32]);
        return v * dsv4_e4m3_to_f32(sc[r * w->scale_cols + i / 16]) * w->scale2;
    }
    }
}

static double fin(double v)
{
    return isfinite(v) ? v : 0.0;
}

/* The reference's act_quant (x read as BF16 values, FP8 per 128 along the
 * row, power-of-two scales), for the magnitudes only. */
static void act_quant_host(const float *x, int ldx, int n, int in, float *out)
{
    for (int t = 0; t < n; t++)
        for (int b0 = 0; b0 < in; b0 += 128) {
            const int b1 = b0 + 128 < in ? b0 + 128 : in;
            float amax = 1e-4f;
            for (int i = b0; i < b1; i++) amax = fmaxf(amax, fabsf(dsv4_round_bf16(x[(size_t)t * ldx + i])));
            const float sc = dsv4_pow2_ceil_scale(amax, 448.0f);
            for (int i = b0; i < b1; i++)
                out[(size_t)t * in + i] =
                    dsv4_e4m3_round(fminf(fmaxf(dsv4_round_bf16(x[(size_t)t * ldx + i]) / sc, -448.0f), 448.0f)) * sc;
        }
}

/* ==== embed =============================================================== */

static void embed_case(dsv4_dtype dt, int V, int D, int n, bool nonfinite)
{
    const char *dn = dt == DSV4_DT_BF16 ? "BF16" : dt == DSV4_DT_F16 ? "F16" : "F32";
    case_begin("embed %s V=%d D=%d n=%d%s", dn, V, D, n, nonfinite ? " NaN/Inf rows" : "");
    const size_t es = dt == DSV4_DT_F32 ? 4 : 2, ne = (size_t)V * D;
    uint8_t *tab = malloc(ne * es);
    for (size_t i = 0; i < ne; i++) {
        if (dt == DSV4_DT_F32) {
            float f = rnd_norm();
            memcpy(tab + 4 * i, &f, 4);
        } else {
            uint16_t h = dt == DSV4_DT_BF16 ? dsv4_f32_to_bf16(rnd_norm()) : rnd_f16();
            memcpy(tab + 2 * i, &h, 2);
        }
    }
    int32_t tok[64];
    for (int i = 0; i < n; i++) tok[i] = rnd_int(V);
    tok[0] = V - 1;
    if (n > 2) tok[n - 1] = 0, tok[1] = tok[n - 2]; /* both ends of the table, a repeat */
    if (nonfinite) {
        tok[2] = 3, tok[4] = 5;
        const uint16_t hn = dt == DSV4_DT_BF16 ? 0x7fc0 : 0x7e00, hi = dt == DSV4_DT_BF16 ? 0x7f80 : 0x7c00;
        const float fn = NAN, fi = -INFINITY;
        if (dt == DSV4_DT_F32) {
            memcpy(tab + 4 * ((size_t)3 * D + 5), &fn, 4);
            memcpy(tab + 4 * ((size_t)5 * D + 1), &fi, 4);
        } else {
            memcpy(tab + 2 * ((size_t)3 * D + 5), &hn, 2);
            memcpy(tab + 2 * ((size_t)5 * D + 1), &hi, 2);
        }
    }
    dsv4_w w = {.name = "embed", .dtype = dt, .fmt = DSV4_WF_FLOAT, .ndim = 2, .ne = {V, D}, .host = tab};
    begin_step(n, tok, NULL);
    float *res[2];
    for (int s = 0; s < 2; s++) {
        dsv4_w ws = w;
        char err[256];
        if (side[s]->weight_load(side[s], &ws, err, sizeof err) != DSV4_OK) fail_msg("%s", err);
        float *out = bpoison(side[s], (size_t)n * D * 4);
        side[s]->embed(side[s], &ws, tok, n, out);
        res[s] = bhost(side[s], out, (size_t)n * D * 4);
        bfree(side[s], out);
        bfree(side[s], ws.dev);
    }
    check_f32("embed", res[0], res[1], (size_t)n * D, nonfinite ? EXACT_NF : EXACT);
    /* embed_hc (embed, its BF16 rounding and the hyper-connections' copies in one op): X [n, 4, D] against
     * the CPU's embedding rounded (rnd) and copied four times */
    for (int r = 0; r < 2 && side[1]->embed_hc; r++) {
        const int hc = 4;
        const size_t nx = (size_t)n * hc * D;
        dsv4_w ws = w;
        char err[256];
        if (side[1]->weight_load(side[1], &ws, err, sizeof err) != DSV4_OK) fail_msg("%s", err);
        float *X = bpoison(side[1], nx * 4), *want = malloc(nx * 4);
        side[1]->embed_hc(side[1], &ws, tok, n, hc, r ? DSV4_RND_OUT : 0, X);
        float *got = bhost(side[1], X, nx * 4);
        for (int t = 0; t < n; t++)
            for (int c = 0; c < hc; c++)
                for (int i = 0; i < D; i++) {
                    const float v = res[0][(size_t)t * D + i];
                    want[((size_t)t * hc + c) * D + i] = r ? dsv4_round_bf16(v) : v;
                }
        check_f32(r ? "embed_hc rounded" : "embed_hc", want, got, nx, nonfinite ? EXACT_NF : EXACT);
        free(want);
        free(got);
        bfree(side[1], X);
        bfree(side[1], ws.dev);
    }
    free(res[0]);
    free(res[1]);
    free(tab);
    case_end();
}

/* copy_rows (the embedding's hc copies into X): rows row_bytes long from src
 * rows spitch apart to dst rows dpitch apart, the bytes between dst rows
 * untouched; on both backends against the host's own copy, byte for byte. */
static void copy_rows_case(size_t rows, size_t row_bytes, size_t spitch, size_t dpitch)
{
    case_begin("copy_rows rows=%zu bytes=%zu spitch=%zu dpitch=%zu", rows, row_bytes, spitch, dpitch);
    const size_t sb = rows ? (rows - 1) * spitch + row_bytes : 4, db = rows ? (rows - 1) * dpitch + row_bytes + 64 : 64;
    unsigned char *src = malloc(sb), *want = malloc(db);
    for (size_t i = 0; i < sb; i++) src[i] = (unsigned char)rnd_int(256);
    fill_poison(want, db);
    for (size_t r = 0; r < rows; r++) memcpy(want + r * dpitch, src + r * spitch, row_bytes);
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        void *ds = bdup(be, src, sb), *dd = bpoison(be, db);
        be->copy_rows(be, dd, dpitch, ds, spitch, row_bytes, rows);
        unsigned char *got = bhost(be, dd, db);
        case_checks++;
        if (memcmp(got, want, db)) fail_line("copy_rows", "%s: the copied bytes differ", s ? "backend under test" : "cpu");
        free(got);
        bfree(be, ds);
        bfree(be, dd);
    }
    free(src);
    free(want);
    case_end();
}

static void test_embed(void **state)
{
    copy_rows_case(37, 4096 * 4, 4096 * 4, 4 * 4096 * 4); /* Flash: one of X's 4 copies of 37 tokens */
    copy_rows_case(5, 12, 20, 16);
    copy_rows_case(1, 300, 300, 300);
    copy_rows_case(0, 16, 16, 64);
    embed_case(DSV4_DT_BF16, 41, 129, 7, false);
    embed_case(DSV4_DT_F16, 41, 300, 13, false);
    embed_case(DSV4_DT_F32, 41, 37, 3, false);
    embed_case(DSV4_DT_BF16, 41, 129, 7, true);
    embed_case(DSV4_DT_F16, 41, 37, 7, true);
    embed_case(DSV4_DT_F32, 41, 300, 7, true);
    embed_case(DSV4_DT_BF16, 41, 4500, 5, false); /* more columns than one pass of k_embed's threads takes */
    /* rows of whole 16-byte chunks (k_embed16): Flash's width, and a last block of columns partly used */
    embed_case(DSV4_DT_BF16, 41, 4096, 5, true);
    embed_case(DSV4_DT_BF16, 41, 2056, 7, false);
    embed_case(DSV4_DT_F16, 41, 4500, 3, true);
    assert_int_equal(n_fail, 0);
}

/* Switch one of the CUDA backend's prefill kernels (dsv4_cuda_prefill_knob: -1 auto, 0 never, 1 every call it
 * can take) for a few cases; returns the setting to put back (gpu_suite.sh forces some for a whole run). */
static int knob_set(const char *name, int v)
{
#ifdef DSV4_HAVE_CUDA
    return dsv4_cuda_prefill_knob(name, v);
#else
    (void)name, (void)v;
    return -1;
#endif
}

/* ==== linear ============================================================== */

typedef struct {
    wkind k;
    int n, out, in;
    int br, bc;     /* FP8 blocks */
    int xpad, ypad; /* ldx = in + xpad, ldy = rows + ypad */
    int v0, vn;     /* a view of rows [v0, v0+vn) when vn > 0 */
    bool aq, no_aq; /* be->act_quant; the weight marked no_act_quant */
    bool nonfinite;
} lin_spec;

/* The CUDA backend's FP8 linears in reference numerics (E8M0 scales in whole
 * 128-column blocks: wg8.cu) add each 128-column group's exact products on
 * the FP8 tensor cores, which keep about 14 bits of the sum: WG8_TOL of the
 * magnitude. */
#define WG8_TOL 0x1p-11
/* The cases run with DSV4_LT=1 (lt.cu: cuBLASLt's block-scaled FP8 GEMM at 128 tokens or more; lt_expect:
 * whether the case's shape takes it): not the bits of a token alone (no batch-invariance probe), LT_TOL. */
#define LT_TOL 0x1p-9
static bool lt_case, lt_expect;
static unsigned long lt_calls(void)
{
#ifdef DSV4_HAVE_CUDA
    return dsv4_cuda_lt_calls();
#else
    return 0;
#endif
}
static double fp8_aq_tol(wkind k, int bc, bool quantised)
{
    return quantised && !selftest && k == WK_FP8_E8M0 && bc % 128 == 0 ? (lt_case ? LT_TOL : WG8_TOL) : 1e-5;
}

/* A linear's outputs (rows of ldy floats, n tokens) from both backends:
 * within tol (1e-5, or fp8_aq_tol's) of (|ref| + mag), the bytes between rows untouched. */
static void check_linear_out(float *const res[2], int n, int rows, int ldy, const double *mag, bool nonfinite,
                             double tol)
{
    float *ga = calloc((size_t)n * rows, 4), *gb = calloc((size_t)n * rows, 4);
    for (int t = 0; t < n; t++) {
        memcpy(ga + (size_t)t * rows, res[0] + (size_t)t * ldy, (size_t)rows * 4);
        memcpy(gb + (size_t)t * rows, res[1] + (size_t)t * ldy, (size_t)rows * 4);
    }
    check_f32("y", ga, gb, (size_t)n * rows, (tolspec){.tol = tol, .mag = mag, .nonfinite = nonfinite});
    check_pad("y padding (cpu)", res[0], n, rows, ldy);
    check_pad("y padding", res[1], n, rows, ldy);
    free(ga);
    free(gb);
}

static void linear_case(const lin_spec *c)
{
    const bool view = c->vn > 0;
    const int rows = view ? c->vn : c->out, ldx = c->in + c->xpad, ldy = rows + c->ypad, n = c->n;
    char blk[32] = "";
    if (c->k == WK_FP8_E8M0 || c->k == WK_FP8_F32) snprintf(blk, sizeof blk, " %dx%d", c->br, c->bc);
    char vw[40] = "";
    if (view) snprintf(vw, sizeof vw, " rows[%d,%d)", c->v0, c->v0 + c->vn);
    case_begin("linear %s%s n=%d out=%d in=%d ldx=%d ldy=%d%s%s%s%s", wk_name[c->k], blk, n, c->out, c->in, ldx, ldy,
               vw, c->aq ? " act_quant" : "", c->no_aq ? " no_act_quant" : "", c->nonfinite ? " NaN/Inf" : "");
    wmat m;
    wmat_make(&m, c->k, c->out, c->in, c->br, c->bc, c->nonfinite);
    /* x: blocks of 128 at different scales (act_quant picks a scale per block);
     * the gap between rows is poison, which must never be read */
    float *x = malloc((size_t)n * ldx * sizeof(float));
    fill_poison(x, (size_t)n * ldx * sizeof(float));
    for (int t = 0; t < n; t++)
        for (int i = 0; i < c->in; i++) x[(size_t)t * ldx + i] = rnd_norm() * ldexpf(1.0f, (i / 128 + t) % 5 - 2);
    if (c->nonfinite && n >= 3) {
        x[(size_t)1 * ldx + 2] = NAN;
        x[(size_t)(n - 1) * ldx + c->in - 1] = INFINITY;
    }
    float *res[2];
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        dsv4_w w = view ? dsv4_w_rows(&m.on[s], c->v0, c->vn) : m.on[s];
        w.no_act_quant = c->no_aq;
        be->act_quant = c->aq;
        float *dx = bdup(be, x, (size_t)n * ldx * 4), *dy = bpoison(be, (size_t)n * ldy * 4);
        const unsigned long lt0 = lt_calls();
        be->linear(be, &w, dx, ldx, n, dy, ldy);
        res[s] = bhost(be, dy, (size_t)n * ldy * 4);
        if (s && lt_case && (lt_calls() > lt0) != lt_expect)
            fail_line("cuBLASLt", lt_expect ? "the case did not take lt.cu's GEMM" : "the case took lt.cu's GEMM");
        /* batch invariance: a token alone gives the bits it gives in the batch (not through cuBLASLt) */
        const int probe[2] = {0, n - 1}; /* the first and the last token */
        for (int k = 0; k < (lt_case ? 0 : n > 1 ? 2 : 1); k++) {
            const int t = probe[k];
            float *d1 = bpoison(be, (size_t)ldy * 4);
            be->linear(be, &w, dx + (size_t)t * ldx, ldx, 1, d1, ldy);
            float *h1 = bhost(be, d1, (size_t)rows * 4);
            if (memcmp(h1, res[s] + (size_t)t * ldy, (size_t)rows * 4))
                fail_line(s ? "batch invariance (backend under test)" : "batch invariance (cpu)",
                          "token %d alone differs from token %d in the batch", t, t);
            free(h1);
            bfree(be, d1);
        }
        be->act_quant = false;
        bfree(be, dx);
        bfree(be, dy);
    }
    /* magnitudes from the activations the op multiplies */
    const bool quantised = c->aq && !c->no_aq && m.w.fmt != DSV4_WF_FLOAT;
    float *xa = malloc((size_t)n * c->in * sizeof(float));
    if (quantised)
        act_quant_host(x, ldx, n, c->in, xa);
    else
        for (int t = 0; t < n; t++) memcpy(xa + (size_t)t * c->in, x + (size_t)t * ldx, (size_t)c->in * 4);
    double *mag = calloc((size_t)n * rows, sizeof(double));
    for (int r = 0; r < rows; r++) {
        const int64_t ra = (view ? c->v0 : 0) + r;
        for (int i = 0; i < c->in; i++) {
            const double wv = fin(fabs((double)w_at_host(&m.w, ra, i)));
            for (int t = 0; t < n; t++) mag[(size_t)t * rows + r] += wv * fin(fabs((double)xa[(size_t)t * c->in + i]));
        }
    }
    check_linear_out(res, n, rows, ldy, mag, c->nonfinite, fp8_aq_tol(c->k, c->bc, quantised));
    free(mag);
    free(xa);
    free(x);
    free(res[0]);
    free(res[1]);
    wmat_free(&m);
    case_end();
}

/* be->linear_groups against the CPU's linears: G groups of R rows of one FP8 matrix,
 * x [n][G * in] with group g's input at g * in, y [n][G * R + 3]. */
/* no_aq: the weight marked no_act_quant (wo_a), x BF16 values as the model gives it; y's rows G R + ypad apart */
static void groups_case_ex(int G, int n, int R, int in, bool aq, bool no_aq, int ypad)
{
    case_begin("linear_groups FP8 G=%d n=%d rows=%d in=%d ldy=%d%s%s", G, n, R, in, G * R + ypad,
               aq ? " act_quant" : "", no_aq ? " no_act_quant" : "");
    wmat m;
    wmat_make(&m, WK_FP8_E8M0, G * R, in, 128, 128, false);
    const int ldx = G * in, ldy = G * R + ypad;
    float *x = malloc((size_t)n * ldx * sizeof(float));
    for (int t = 0; t < n; t++)
        for (int i = 0; i < ldx; i++) {
            const float v = rnd_norm() * ldexpf(1.0f, (i / 128 + t) % 5 - 2);
            x[(size_t)t * ldx + i] = no_aq ? dsv4_round_bf16(v) : v;
        }
    float *res[2];
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        be->act_quant = aq;
        dsv4_w w = m.on[s];
        w.no_act_quant = no_aq;
        float *dx = bdup(be, x, (size_t)n * ldx * 4), *dy = bpoison(be, (size_t)n * ldy * 4);
        const unsigned long lt0 = lt_calls();
        if (be->linear_groups)
            be->linear_groups(be, &w, G, dx, ldx, (size_t)in, n, dy, ldy, (size_t)R);
        else /* as forward.c without the op */
            for (int g = 0; g < G; g++) {
                const dsv4_w wg = dsv4_w_rows(&w, (int64_t)g * R, R);
                be->linear(be, &wg, dx + (size_t)g * in, ldx, n, dy + (size_t)g * R, ldy);
            }
        res[s] = bhost(be, dy, (size_t)n * ldy * 4);
        if (s && lt_case && (lt_calls() > lt0) != lt_expect)
            fail_line("cuBLASLt", lt_expect ? "the case did not take lt.cu's GEMM" : "the case took lt.cu's GEMM");
        be->act_quant = false;
        bfree(be, dx);
        bfree(be, dy);
    }
    float *xa = malloc((size_t)n * ldx * sizeof(float));
    if (aq && !no_aq)
        for (int g = 0; g < G; g++) {
            float *q = malloc((size_t)n * in * sizeof(float));
            act_quant_host(x + (size_t)g * in, ldx, n, in, q);
            for (int t = 0; t < n; t++) memcpy(xa + (size_t)t * ldx + (size_t)g * in, q + (size_t)t * in, (size_t)in * 4);
            free(q);
        }
    else
        memcpy(xa, x, (size_t)n * ldx * sizeof(float));
    const int rows = G * R;
    double *mag = calloc((size_t)n * rows, sizeof(double));
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < in; i++) {
            const double wv = fin(fabs((double)w_at_host(&m.w, r, i)));
            for (int t = 0; t < n; t++)
                mag[(size_t)t * rows + r] += wv * fin(fabs((double)xa[(size_t)t * ldx + (size_t)(r / R) * in + i]));
        }
    check_linear_out(res, n, rows, ldy, mag, false, fp8_aq_tol(WK_FP8_E8M0, 128, aq && !no_aq));
    free(mag);
    free(xa);
    free(x);
    free(res[0]);
    free(res[1]);
    wmat_free(&m);
    case_end();
}
static void groups_case(int G, int n, int R, int in, bool aq)
{
    groups_case_ex(G, n, R, in, aq, false, 3);
}

/* be->linear_multi against separate linear calls on the same backend, bit
 * for bit: one input, FP8 matrices of several shapes (so several part
 * counts: several launches sharing one pack), one with no_act_quant, BF16
 * matrices (their own pack and launches; with act_quant, BF16(x) alone except
 * the one marked no_act_quant) and an MXFP4 one (its own linear). */
/* be->linear_to_post then hc_post against linear then hc_post on the same backend, bit for bit (the CUDA
 * backend leaves a small batch's FP8 output as parts that hc_post adds in the cluster's order), and the
 * output read before any hc_post (the parts summed then) against the linear's. */
static void lin_post_case(int n, int rows, int in)
{
    case_begin("linear_to_post n=%d rows=%d in=%d act_quant", n, rows, in);
    dsv4_backend *be = side[1];
    const int hc = 4;
    wmat m;
    wmat_make(&m, WK_FP8_E8M0, rows, in, 128, 128, false);
    float *x = malloc((size_t)n * in * sizeof(float)), *X = rnd_vec((size_t)n * hc * rows, 1.0f);
    float *post = malloc((size_t)n * hc * 4), *comb = malloc((size_t)n * hc * hc * 4);
    for (int t = 0; t < n; t++)
        for (int i = 0; i < in; i++) x[(size_t)t * in + i] = rnd_norm() * ldexpf(1.0f, (i / 128 + t) % 5 - 2);
    for (int i = 0; i < n * hc; i++) post[i] = rnd_uni() + 1.0f;
    for (int i = 0; i < n * hc * hc; i++) comb[i] = (rnd_uni() + 1.0f) / (float)hc;
    float *dx = bdup(be, x, (size_t)n * in * 4), *dp = bdup(be, post, (size_t)n * hc * 4);
    float *dc = bdup(be, comb, (size_t)n * hc * hc * 4);
    float *res[3];
    be->act_quant = true;
    for (int k = 0; k < 3; k++) { /* 0: linear_to_post + hc_post, 1: linear + hc_post, 2: linear_to_post, y read */
        float *dX = bdup(be, X, (size_t)n * hc * rows * 4), *dy = bpoison(be, (size_t)n * rows * 4);
        if (k != 1 && be->linear_to_post)
            be->linear_to_post(be, &m.on[1], dx, in, n, dy, rows);
        else
            be->linear(be, &m.on[1], dx, in, n, dy, rows);
        if (k < 2) {
            be->hc_post(be, hc, rows, dy, NULL, dp, dc, n, dX, DSV4_RND_IN | DSV4_RND_OUT);
            res[k] = bhost(be, dX, (size_t)n * hc * rows * 4);
        } else {
            res[k] = bhost(be, dy, (size_t)n * rows * 4);
        }
        bfree(be, dX), bfree(be, dy);
    }
    float *dy = bpoison(be, (size_t)n * rows * 4);
    be->linear(be, &m.on[1], dx, in, n, dy, rows);
    float *yl = bhost(be, dy, (size_t)n * rows * 4);
    be->act_quant = false;
    case_checks += 2;
    if (memcmp(res[0], res[1], (size_t)n * hc * rows * 4))
        fail_line("linear_to_post", "hc_post's streams differ from those after the linear");
    if (memcmp(res[2], yl, (size_t)n * rows * 4)) fail_line("linear_to_post", "y read back differs from the linear's");
    for (int k = 0; k < 3; k++) free(res[k]);
    free(yl);
    bfree(be, dy), bfree(be, dx), bfree(be, dp), bfree(be, dc);
    free(x), free(X), free(post), free(comb);
    wmat_free(&m);
    case_end();
}

static void multi_case(int n, int in, bool aq)
{
    case_begin("linear_multi n=%d in=%d%s", n, in, aq ? " act_quant" : "");
    dsv4_backend *be = side[1];
    const struct {
        wkind k;
        int rows, ypad;
        bool no_aq;
    } sp[] = {{WK_FP8_E8M0, 1024, 0, false}, {WK_FP8_E8M0, 512, 3, false}, {WK_FP8_E8M0, 64, 0, false},
              {WK_FP8_E8M0, 4096, 0, false}, {WK_FP8_E8M0, 100, 1, false}, {WK_BF16, 96, 0, false},
              {WK_MXFP4, 64, 2, false},      {WK_FP8_E8M0, 256, 0, true},  {WK_FP8_E8M0, 32, 0, false},
              {WK_BF16, 1024, 0, false},     {WK_BF16, 33, 2, true}};
    enum { M = sizeof sp / sizeof sp[0] };
    wmat wm[M];
    const dsv4_w *ws[M];
    float *ys[M], *yr[M];
    int ld[M];
    float *x = malloc((size_t)n * in * sizeof(float));
    for (int t = 0; t < n; t++)
        for (int i = 0; i < in; i++) x[(size_t)t * in + i] = rnd_norm() * ldexpf(1.0f, (i / 128 + t) % 5 - 2);
    float *dx = bdup(be, x, (size_t)n * in * 4);
    for (int i = 0; i < M; i++) {
        wmat_make(&wm[i], sp[i].k, sp[i].rows, in, 128, 128, false);
        wm[i].on[1].no_act_quant = sp[i].no_aq;
        ws[i] = &wm[i].on[1];
        ld[i] = sp[i].rows + sp[i].ypad;
        ys[i] = bpoison(be, (size_t)n * ld[i] * 4);
        yr[i] = bpoison(be, (size_t)n * ld[i] * 4);
    }
    be->act_quant = aq;
    if (be->linear_multi) be->linear_multi(be, M, ws, dx, in, n, ys, ld);
    else
        for (int i = 0; i < M; i++) be->linear(be, ws[i], dx, in, n, ys[i], ld[i]);
    for (int i = 0; i < M; i++) be->linear(be, ws[i], dx, in, n, yr[i], ld[i]);
    be->act_quant = false;
    for (int i = 0; i < M; i++) {
        float *a = bhost(be, ys[i], (size_t)n * ld[i] * 4), *b = bhost(be, yr[i], (size_t)n * ld[i] * 4);
        case_checks++;
        if (memcmp(a, b, (size_t)n * ld[i] * 4))
            fail_line("linear_multi", "weight %d (%s, %d rows) differs from its own linear call", i, wk_name[sp[i].k],
                      sp[i].rows);
        free(a);
        free(b);
        bfree(be, ys[i]);
        bfree(be, yr[i]);
        wmat_free(&wm[i]);
    }
    bfree(be, dx);
    free(x);
    case_end();
}

static void test_linear(void **state)
{
    const wkind fl[] = {WK_BF16, WK_F16, WK_F32};
    for (int i = 0; i < 3; i++) {
        const lin_spec cs[] = {
            {fl[i], 1, 37, 129, .xpad = 0},
            {fl[i], 3, 129, 300, .xpad = 7, .ypad = 5},
            {fl[i], 13, 300, 37, .ypad = 3},
            {fl[i], 7, 37, 300, .xpad = 1, .ypad = 2, .v0 = 5, .vn = 27},
            {fl[i], 7, 129, 37, .aq = true}, /* act_quant leaves float weights alone */
            {fl[i], 7, 37, 129, .xpad = 3, .nonfinite = true},
        };
        for (size_t j = 0; j < sizeof cs / sizeof cs[0]; j++) linear_case(&cs[j]);
    }
    /* BF16 shapes of the tensor-core path (rows of whole 16-byte chunks): a partial last
     * 64-column group, parts along K, several token tiles, two 256-token chunks, a view,
     * unaligned activations, NaN/Inf */
    const lin_spec bf[] = {
        {WK_BF16, 1, 150, 256, .xpad = 0},
        {WK_BF16, 13, 37, 136, .xpad = 4, .ypad = 1},
        {WK_BF16, 40, 129, 1024, .xpad = 0},
        {WK_BF16, 300, 40, 192, .xpad = 1},
        {WK_BF16, 7, 300, 256, .ypad = 2, .v0 = 21, .vn = 250},
        {WK_BF16, 7, 37, 512, .aq = true},
        {WK_BF16, 9, 37, 264, .xpad = 4, .nonfinite = true},
        /* prefill shapes of the wgmma path (k_wgbf: >= 64 tokens, >= 32 blocks), each token alone (k_mma_bf16)
         * bit for bit: a partial last group and row tile, 4 parts along K, a view, NaN/Inf */
        {WK_BF16, 200, 2100, 296, .xpad = 4, .ypad = 3},
        {WK_BF16, 130, 1024, 2048, .xpad = 0},
        {WK_BF16, 160, 3000, 256, .ypad = 1, .v0 = 37, .vn = 2500},
        {WK_BF16, 150, 2048, 264, .xpad = 4, .nonfinite = true},
        /* reference numerics (act_quant): BF16(x) alone, one MMA a step (k_mma_bf16<.., 1>, k_wgbf np = 1), the
         * CPU rounding x too: decode's one and two n tiles, prefill against each token alone, NaN/Inf */
        {WK_BF16, 12, 300, 256, .xpad = 1, .aq = true, .nonfinite = true},
        {WK_BF16, 3, 70, 1024, .ypad = 2, .aq = true},
        {WK_BF16, 150, 2048, 264, .xpad = 4, .aq = true, .nonfinite = true},
        {WK_BF16, 130, 1024, 2048, .aq = true},
        /* decode's Flash-like shapes, a batch's two n tiles against each token's one bit for bit: three
         * activation parts with NaN/Inf, 4 parts along K; and BF16(x) alone with a partial last row tile and
         * 64-column group */
        {WK_BF16, 12, 4096, 1024, .xpad = 1, .nonfinite = true},
        {WK_BF16, 9, 4100, 1032, .ypad = 2, .aq = true},
        /* 512 to 1,023 rows of 4,096 columns (an HCA layer's compressor projections: at most 4 parts along K, not
         * 8): decode's one and two n tiles, a partial last row tile, NaN/Inf; and a prefill against each token */
        {WK_BF16, 12, 600, 4096, .xpad = 4, .aq = true, .nonfinite = true},
        {WK_BF16, 1, 512, 4096, .ypad = 1, .aq = true},
        {WK_BF16, 150, 1000, 4096, .aq = true},
    };
    for (size_t j = 0; j < sizeof bf / sizeof bf[0]; j++) linear_case(&bf[j]);
    /* k_wgbf for every call, small shapes too (DSV4_WGBF=1): a token tile, a row tile, a group */
    const lin_spec bf1[] = {
        {WK_BF16, 13, 37, 136, .xpad = 4, .ypad = 1},
        {WK_BF16, 7, 300, 256, .ypad = 2, .v0 = 21, .vn = 250},
        {WK_BF16, 70, 129, 1024, .xpad = 0},
        {WK_BF16, 13, 37, 136, .xpad = 4, .ypad = 1, .aq = true, .nonfinite = true},
    };
    const int kb = knob_set("DSV4_WGBF", 1);
    for (size_t j = 0; j < sizeof bf1 / sizeof bf1[0]; j++) linear_case(&bf1[j]);
    knob_set("DSV4_WGBF", kb);
    const wkind f8[] = {WK_FP8_E8M0, WK_FP8_F32};
    for (int i = 0; i < 2; i++) {
        const lin_spec cs[] = {
            /* partial last blocks along both dimensions */
            {f8[i], 7, 150, 300, 128, 128, .xpad = 7, .ypad = 5},
            {f8[i], 13, 37, 129, 128, 128, .xpad = 0},
            {f8[i], 1, 300, 37, 128, 128, .xpad = 0},
            /* a view crossing a block row; odd block shapes */
            {f8[i], 3, 150, 300, 128, 128, .ypad = 1, .v0 = 121, .vn = 20},
            {f8[i], 3, 101, 203, 48, 80, .xpad = 2, .v0 = 13, .vn = 61},
            {f8[i], 7, 150, 300, 128, 128, .xpad = 4, .aq = true},
            {f8[i], 13, 129, 129, 128, 128, .aq = true, .no_aq = true},
            {f8[i], 7, 37, 300, 128, 128, .aq = true, .nonfinite = true},
            {f8[i], 7, 37, 129, 128, 128, .nonfinite = true},
            /* shapes of the tensor-core path (E8M0, rows of whole 16-byte chunks, 64-column
             * groups inside a scale block): a partial last group, parts along K (P = 2, 4),
             * several token tiles, two 256-token chunks, unaligned activations */
            {f8[i], 1, 150, 256, 128, 128, .xpad = 0},
            {f8[i], 13, 37, 144, 128, 128, .xpad = 4, .ypad = 1},
            {f8[i], 7, 300, 640, 128, 64, .ypad = 3},
            {f8[i], 40, 129, 1024, 64, 128, .xpad = 0},
            {f8[i], 300, 40, 192, 128, 192, .xpad = 1},
            {f8[i], 3, 150, 256, 128, 128, .v0 = 121, .vn = 20},
            {f8[i], 7, 150, 640, 128, 128, .aq = true},
            {f8[i], 33, 37, 272, 128, 128, .xpad = 4, .aq = true, .nonfinite = true},
            {f8[i], 13, 37, 256, 128, 128, .nonfinite = true},
            {f8[i], 9, 37, 512, 128, 128, .aq = true, .no_aq = true},
            /* reference numerics' FP8 path (wg8.cu): parts along K as a cluster (P = 8, 4), several token
             * tiles, 256-token chunks, a partial last tile; and a batch whose blocks add their parts
             * themselves while each token alone takes the cluster (the same bits: batch invariance) */
            {f8[i], 5, 150, 4096, 128, 128, .xpad = 4, .aq = true},
            {f8[i], 40, 100, 2048, 128, 128, .aq = true},
            {f8[i], 300, 70, 1024, 128, 128, .ypad = 2, .aq = true},
            {f8[i], 170, 4096, 1024, 128, 128, .aq = true},
            /* decode's shapes (up to 8 tokens, parts as a cluster): NaN/Inf among a few tokens, a batch of
             * 12 against its tokens alone, 8 tokens over 64 groups, unaligned rows */
            {f8[i], 3, 70, 512, 128, 128, .xpad = 4, .aq = true, .nonfinite = true},
            {f8[i], 12, 70, 512, 128, 128, .xpad = 4, .aq = true, .nonfinite = true},
            {f8[i], 8, 300, 8192, 128, 128, .ypad = 1, .aq = true},
            {f8[i], 2, 100, 1024, 128, 128, .xpad = 1, .aq = true},
            /* hi + lo activations at 6 and 8 tokens: the streamed kernel's ring of three stages */
            {f8[i], 8, 300, 1024, 128, 128, .xpad = 3},
            {f8[i], 6, 70, 2048, 128, 128, .ypad = 1},
            /* prefill with unquantised activations on wgmma (k_wgf8: >= 64 tokens; FP8 E8M0 only), each token
             * alone (k_mma_fp8) bit for bit: a partial last group and row tile, 4 parts along K as a cluster, a
             * view with 64-column scale blocks, wo_a's no_act_quant, NaN/Inf */
            {f8[i], 200, 2100, 296, 128, 128, .xpad = 4, .ypad = 3},
            {f8[i], 130, 1024, 2048, 128, 128, .xpad = 0},
            {f8[i], 160, 3000, 256, 128, 64, .ypad = 1, .v0 = 37, .vn = 2500},
            {f8[i], 140, 1000, 512, 128, 128, .aq = true, .no_aq = true},
            {f8[i], 150, 2048, 264, 128, 128, .xpad = 4, .nonfinite = true},
        };
        for (size_t j = 0; j < sizeof cs / sizeof cs[0]; j++) linear_case(&cs[j]);
    }
#ifdef DSV4_HAVE_CUDA
    /* --prefill-gemm cublaslt (lt.cu, DSV4_LT=1) where the library loads: reference numerics' FP8 linears of
     * 128 tokens or more through cuBLASLt's block-scaled FP8 GEMM - a partial last block row, 128-column blocks of
     * different scales (weights and tokens), a view from a block row, n % 8 tokens left to wg8.cu; the shapes it
     * leaves to wg8.cu (y's rows not 16-byte multiples, a view off a block row, 127 tokens); one 128-row block;
     * NaN/Inf planted; linear_multi with both kinds of weights, each as its own call. Case after case, weights are
     * freed and new ones allocated at the same addresses (v62's cache of widened scales keyed by address failed
     * here: v63) */
    char why[256] = "DSV4_WG8=0 or DSV4_CUDA_MMA=0: no wgmma linears for it to replace";
    const char *wg = getenv("DSV4_WG8"), *mm = getenv("DSV4_CUDA_MMA");
    const bool wg_on = !(wg && wg[0] == '0') && !(mm && mm[0] == '0');
    if (!selftest && wg_on && side[1]->lt_check && side[1]->lt_check(side[1], why, sizeof why)) {
        const int kl = knob_set("DSV4_LT", 1);
        const struct {
            lin_spec c;
            bool takes;
        } lc[] = {
            {{WK_FP8_E8M0, 200, 256, 1024, 128, 128, .aq = true}, true},
            {{WK_FP8_E8M0, 130, 300, 512, 128, 128, .xpad = 3, .aq = true}, true},
            {{WK_FP8_E8M0, 200, 256, 1024, 128, 128, .ypad = 4, .aq = true}, true},
            {{WK_FP8_E8M0, 144, 512, 2048, 128, 128, .aq = true}, true},
            {{WK_FP8_E8M0, 160, 640, 1024, 128, 128, .v0 = 128, .vn = 256, .aq = true}, true},
            {{WK_FP8_E8M0, 140, 256, 1024, 128, 128, .ypad = 3, .aq = true}, false},
            {{WK_FP8_E8M0, 140, 300, 1024, 128, 128, .v0 = 20, .vn = 200, .aq = true}, false},
            {{WK_FP8_E8M0, 127, 256, 1024, 128, 128, .aq = true}, false},
            {{WK_FP8_E8M0, 150, 128, 2048, 128, 128, .aq = true}, true}, /* one 128-row block */
            {{WK_FP8_E8M0, 152, 256, 2048, 128, 128, .xpad = 4, .aq = true, .nonfinite = true}, true},
            {{WK_FP8_E8M0, 150, 128, 1024, 128, 128, .ypad = 4, .aq = true, .nonfinite = true}, true},
            /* BF16 weights: BF16(x) through lt.cu's BF16 GEMM (a view from row 128, NaN/Inf); three activation
             * parts (no_act_quant), y's rows not 16-byte multiples and rows not whole 16-byte chunks left to
             * k_wgbf */
            {{WK_BF16, 200, 256, 1024, 0, 0, .aq = true}, true},
            {{WK_BF16, 136, 300, 512, 0, 0, .ypad = 4, .aq = true}, true},
            {{WK_BF16, 160, 640, 512, 0, 0, .v0 = 128, .vn = 256, .aq = true}, true},
            {{WK_BF16, 144, 256, 1024, 0, 0, .xpad = 4, .aq = true, .nonfinite = true}, true},
            {{WK_BF16, 140, 256, 1024, 0, 0, .ypad = 3, .aq = true}, false},
            {{WK_BF16, 150, 256, 1024, 0, 0, .aq = true, .no_aq = true}, false},
            {{WK_BF16, 130, 64, 1004, 0, 0, .aq = true}, false},
        };
        lt_case = true;
        for (size_t j = 0; j < sizeof lc / sizeof lc[0]; j++) {
            lt_expect = lc[j].takes;
            linear_case(&lc[j].c);
        }
        /* wo_a's configuration (reference numerics, no_act_quant, BF16 values): lt.cu's BF16 GEMM of the groups,
         * within 1e-5 of the magnitude (FP32 sums in another order); two chunks of tokens; G 1; y's rows not
         * 16-byte multiples and 127 tokens left to k_wgf8 */
        const struct {
            int G, n, R, in, ypad;
            bool takes;
        } gc[] = {
            {8, 160, 128, 512, 4, true},  {4, 1030, 64, 256, 0, true},  {1, 136, 384, 768, 0, true},
            {8, 130, 128, 512, 3, false}, {8, 127, 128, 512, 0, false},
        };
        for (size_t j = 0; j < sizeof gc / sizeof gc[0]; j++) {
            lt_expect = gc[j].takes;
            groups_case_ex(gc[j].G, gc[j].n, gc[j].R, gc[j].in, true, true, gc[j].ypad);
        }
        lt_case = false;
        const unsigned long lt0 = lt_calls();
        multi_case(140, 1024, true);
        if (lt_calls() == lt0) fail_line("cuBLASLt", "linear_multi at 140 tokens took no lt.cu GEMM");
        knob_set("DSV4_LT", kl);
    } else
        printf("  (cuBLASLt cases skipped: %s)\n", side[1]->lt_check ? why : "no lt_check on this backend");
#endif
    /* k_wgf8 for every call (DSV4_WGF8=1): a token tile, a row tile, a group */
    const lin_spec f81[] = {
        {WK_FP8_E8M0, 13, 37, 144, 128, 128, .xpad = 4, .ypad = 1},
        {WK_FP8_E8M0, 7, 300, 640, 128, 64, .ypad = 3},
        {WK_FP8_E8M0, 70, 129, 1024, 64, 128, .xpad = 0},
        {WK_FP8_E8M0, 9, 37, 512, 128, 128, .aq = true, .no_aq = true},
    };
    const int kf = knob_set("DSV4_WGF8", 1);
    for (size_t j = 0; j < sizeof f81 / sizeof f81[0]; j++) linear_case(&f81[j]);
    knob_set("DSV4_WGF8", kf);
    /* linear_groups (wo_a's output groups): G row groups, each with its own slice of x and y */
    groups_case(8, 1, 40, 256, false);
    groups_case(8, 13, 40, 256, true);
    groups_case(8, 3, 64, 1024, true); /* decode: parts as a cluster */
    groups_case(8, 8, 64, 1024, false); /* wo_a's shape, smaller, at 8 tokens with hi + lo */
    groups_case(8, 5, 40, 512, false);
    groups_case(3, 7, 37, 144, false);
    groups_case(2, 5, 20, 129, false); /* the GEMV path */
    groups_case(8, 150, 64, 512, false); /* prefill: k_wgf8 with 8 row groups */
    groups_case_ex(8, 150, 64, 512, true, true, 4); /* wo_a's configuration: reference numerics, no_act_quant */
    groups_case_ex(8, 5, 40, 256, true, true, 3);
    /* linear_multi (the projections of one input in fewer launches): the same bits as separate calls */
    multi_case(1, 2048, false);
    multi_case(1, 2048, true);
    multi_case(13, 1024, true);
    multi_case(40, 4096, false);
    multi_case(300, 512, true); /* two 256-token chunks */
    multi_case(300, 4096, true); /* two chunks, several part counts on wgmma: a pack per launch and chunk */
    multi_case(300, 1024, false); /* prefill, unquantised: k_wgf8 and k_wgbf beside the mma.cu kernels */
    /* wo_b's shape at small batches (8 parts along K, one a block) and a narrower one; one with 40 tokens */
    lin_post_case(1, 4096, 8192);
    lin_post_case(3, 512, 8192);
    lin_post_case(13, 512, 2048);
    lin_post_case(40, 256, 4096);
    const lin_spec fp4[] = {
        {WK_MXFP4, 7, 37, 160, .xpad = 3, .ypad = 2},
        {WK_MXFP4, 13, 129, 96, .xpad = 0},
        {WK_MXFP4, 1, 300, 32, .xpad = 0},
        {WK_MXFP4, 3, 129, 160, .v0 = 7, .vn = 51},
        {WK_MXFP4, 7, 37, 288, .aq = true},
        {WK_MXFP4, 7, 37, 160, .aq = true, .no_aq = true},
        {WK_MXFP4, 7, 37, 96, .nonfinite = true},
        {WK_NVFP4, 7, 37, 144, .xpad = 3, .ypad = 2},
        {WK_NVFP4, 13, 129, 48, .xpad = 0},
        {WK_NVFP4, 1, 300, 16, .xpad = 0},
        {WK_NVFP4, 3, 129, 144, .v0 = 7, .vn = 51},
        {WK_NVFP4, 7, 37, 272, .aq = true},
        {WK_NVFP4, 7, 37, 144, .aq = true, .no_aq = true},
        {WK_NVFP4, 7, 37, 48, .nonfinite = true},
    };
    for (size_t j = 0; j < sizeof fp4 / sizeof fp4[0]; j++) linear_case(&fp4[j]);
    assert_int_equal(n_fail, 0);
}

/* ==== norms and RoPE ====================================================== */

static void rmsnorm_case(int rows, int dim, int pad, bool weighted, bool inplace, bool nonfinite, unsigned rnd)
{
    const int ld = dim + pad;
    case_begin("rmsnorm rows=%d dim=%d ld=%d%s%s%s%s", rows, dim, ld, weighted ? " weighted" : "",
               inplace ? " in place" : "", nonfinite ? " NaN/Inf" : "", rnd_name(rnd));
    const size_t n = (size_t)rows * ld;
    float *x = malloc(n * 4), *w = rnd_vec((size_t)dim, 0.3f);
    fill_poison(x, n * 4);
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < dim; i++) x[(size_t)r * ld + i] = rnd_norm() * (float)(r + 1);
    for (int i = 0; i < dim; i++) w[i] += 1.0f;
    if (nonfinite) {
        x[(size_t)(rows / 2) * ld + dim / 2] = NAN;
        x[(size_t)(rows - 1) * ld] = -INFINITY;
    }
    float *res[2];
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        float *dx = bdup(be, x, n * 4), *dw = weighted ? bdup(be, w, (size_t)dim * 4) : NULL;
        float *dy = inplace ? dx : bpoison(be, n * 4);
        be->rmsnorm(be, dx, dw, rows, dim, ld, 1e-6f, dy, rnd);
        res[s] = bhost(be, dy, n * 4);
        bfree(be, dx);
        bfree(be, dw);
        if (!inplace) bfree(be, dy);
    }
    float *ga = malloc((size_t)rows * dim * 4), *gb = malloc((size_t)rows * dim * 4);
    for (int r = 0; r < rows; r++) {
        memcpy(ga + (size_t)r * dim, res[0] + (size_t)r * ld, (size_t)dim * 4);
        memcpy(gb + (size_t)r * dim, res[1] + (size_t)r * ld, (size_t)dim * 4);
    }
    check_f32("y", ga, gb, (size_t)rows * dim, rounded((tolspec){.tol = 1e-5, .nonfinite = nonfinite}, rnd));
    check_pad("y padding", res[1], rows, dim, ld);
    free(ga);
    free(gb);
    free(res[0]);
    free(res[1]);
    free(x);
    free(w);
    case_end();
}

static void rmsnorm_bf16_case(int rows, int dim, bool nonfinite)
{
    case_begin("rmsnorm_bf16 rows=%d dim=%d%s", rows, dim, nonfinite ? " NaN/Inf" : "");
    const size_t n = (size_t)rows * dim;
    float *x = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = rnd_norm() * 2.0f; /* read as BF16 values (the reference's BF16 q) */
    if (nonfinite) {
        x[dim + 3] = NAN;
        x[n - 1] = INFINITY;
    }
    float *res[2];
    for (int s = 0; s < 2; s++) {
        float *dx = bdup(side[s], x, n * 4);
        side[s]->rmsnorm_bf16(side[s], dx, rows, dim);
        res[s] = bhost(side[s], dx, n * 4);
        bfree(side[s], dx);
    }
    check_f32("x", res[0], res[1], n,
              (tolspec){.loose = 0x1p-6, .loose_frac = 0.34, .bf16 = true, .nonfinite = nonfinite});
    free(res[0]);
    free(res[1]);
    free(x);
    case_end();
}

/* norm_rope (a backend's optional fusion of the per-head norm, RoPE and FP8SIM) against the three ops on the same
 * backend, bit for bit (the CPU has no such op: it runs the three) */
static void norm_rope_case(int n_tok, int H, int hd, int rd, bool weighted, unsigned nrnd, bool bf16, unsigned rrnd,
                           int sim_nope, bool nonfinite)
{
    case_begin("norm_rope n_tok=%d heads=%d head_dim=%d rope_dim=%d%s%s%s sim_nope=%d%s", n_tok, H, hd, rd,
               bf16 ? " bf16 norm" : weighted ? " weighted" : "", rnd_name(nrnd), rnd_name(rrnd), sim_nope,
               nonfinite ? " NaN/Inf" : "");
    const size_t n = (size_t)n_tok * H * hd;
    float *x = rnd_vec(n, 1.0f), *w = rnd_vec((size_t)hd, 1.0f), freqs[256];
    int64_t pos[64];
    for (int t = 0; t < n_tok; t++) pos[t] = t == 0 ? 0 : rnd_int(70000);
    dsv4_rope_freqs(10000.0, rd, false, 16.0, 65536.0, 32.0, 1.0, freqs);
    if (nonfinite) x[3] = NAN, x[n - 1] = INFINITY;
    begin_step(n_tok, NULL, pos);
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        if (!be->norm_rope) continue;
        float *dx = bdup(be, x, n * 4), *dx2 = bdup(be, x, n * 4), *dw = bdup(be, w, (size_t)hd * 4);
        float *df = bdup(be, freqs, (size_t)(rd / 2) * 4);
        const float *wv = weighted ? dw : NULL;
        be->norm_rope(be, dx, n_tok, H, hd, wv, 1e-6f, nrnd, bf16, rd, pos, df, rrnd, sim_nope);
        if (bf16) be->rmsnorm_bf16(be, dx2, n_tok * H, hd);
        else be->rmsnorm(be, dx2, wv, n_tok * H, hd, hd, 1e-6f, dx2, nrnd);
        be->rope(be, dx2, n_tok, H, H * hd, hd, rd, pos, df, false, rrnd);
        if (sim_nope > 0) be->kv_sim(be, dx2, n_tok * H, hd, sim_nope);
        float *a = bhost(be, dx, n * 4), *b = bhost(be, dx2, n * 4);
        if (memcmp(a, b, n * 4)) {
            size_t i = 0;
            while (i < n && !memcmp(a + i, b + i, 4)) i++;
            fail_line(s ? "cuda" : "cpu", "norm_rope differs from the three ops at %zu: %g vs %g", i, (double)a[i],
                      (double)b[i]);
        }
        free(a), free(b);
        bfree(be, dx), bfree(be, dx2), bfree(be, dw), bfree(be, df);
    }
    free(x);
    free(w);
    case_end();
}

static void rope_case(int n_tok, int H, int hd, int rd, int pad, bool inverse, bool yarn, bool nonfinite, unsigned rnd)
{
    const int ld = H * hd + pad;
    case_begin("rope n_tok=%d heads=%d head_dim=%d rope_dim=%d ld_tok=%d%s%s%s%s", n_tok, H, hd, rd, ld,
               inverse ? " inverse" : "", yarn ? " yarn" : "", nonfinite ? " NaN/Inf" : "", rnd_name(rnd));
    const size_t n = (size_t)n_tok * ld;
    float *x = malloc(n * 4), freqs[256];
    int64_t pos[64];
    fill_poison(x, n * 4);
    for (int t = 0; t < n_tok; t++)
        for (int i = 0; i < H * hd; i++) x[(size_t)t * ld + i] = rnd_norm();
    for (int t = 0; t < n_tok; t++) pos[t] = t == 0 ? 0 : t == 1 ? 1048573 : rnd_int(70000);
    dsv4_rope_freqs(yarn ? 160000.0 : 10000.0, rd, yarn, 16.0, 65536.0, 32.0, 1.0, freqs);
    if (nonfinite) {
        x[hd - rd + 1] = NAN;                            /* token 0, head 0, rotated pair 0 */
        x[(size_t)(n_tok - 1) * ld + hd - 1] = INFINITY; /* the last token's head 0, last pair */
    }
    bool *owned = calloc(n, sizeof(bool));
    double *mag = calloc(n, sizeof(double));
    for (int t = 0; t < n_tok; t++)
        for (int h = 0; h < H; h++)
            for (int i = hd - rd; i < hd; i++) {
                const size_t e = (size_t)t * ld + (size_t)h * hd + i, p = e - ((i - (hd - rd)) & 1);
                owned[e] = true;
                mag[e] = fin(fabs((double)x[p])) + fin(fabs((double)x[p + 1]));
            }
    begin_step(n_tok, NULL, pos);
    float *res[2];
    for (int s = 0; s < 2; s++) {
        float *dx = bdup(side[s], x, n * 4), *df = bdup(side[s], freqs, (size_t)(rd / 2) * 4);
        side[s]->rope(side[s], dx, n_tok, H, ld, hd, rd, pos, df, inverse, rnd);
        res[s] = bhost(side[s], dx, n * 4);
        bfree(side[s], dx);
        bfree(side[s], df);
    }
    /* compare the rotated elements; every other element keeps its bits */
    size_t m = 0;
    float *ga = malloc(n * 4), *gb = malloc(n * 4);
    double *mg = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        if (owned[i]) ga[m] = res[0][i], gb[m] = res[1][i], mg[m++] = mag[i];
    check_f32("x", ga, gb, m, rounded((tolspec){.tol = 1e-5, .mag = mg, .nonfinite = nonfinite}, rnd));
    /* DSV4_RND_IN: the heads' other values are rounded in place; the padding keeps its bits */
    if (rnd & DSV4_RND_IN)
        for (int t = 0; t < n_tok; t++)
            for (int i = 0; i < H * hd; i++) x[(size_t)t * ld + i] = dsv4_round_bf16(x[(size_t)t * ld + i]);
    check_kept("x outside the rotated dims", res[1], x, owned, n);
    free(ga);
    free(gb);
    free(mg);
    free(owned);
    free(mag);
    free(res[0]);
    free(res[1]);
    free(x);
    case_end();
}

static void test_norms_rope(void **state)
{
    rmsnorm_case(3, 37, 0, true, false, false, 0);
    rmsnorm_case(7, 129, 5, true, false, false, 0);
    rmsnorm_case(13, 300, 3, false, false, false, 0);
    rmsnorm_case(7, 300, 0, true, true, false, 0);
    rmsnorm_case(13, 37, 7, false, true, false, 0);
    rmsnorm_case(7, 129, 2, true, false, true, 0);
    /* BF16 rounding folded in; rows the GPU holds in registers at 256 and 512 threads, and longer */
    rmsnorm_case(7, 129, 5, true, false, false, DSV4_RND_IN | DSV4_RND_OUT);
    rmsnorm_case(5, 300, 0, true, true, false, DSV4_RND_IN);
    rmsnorm_case(3, 4096, 0, true, true, false, DSV4_RND_IN | DSV4_RND_OUT);
    rmsnorm_case(3, 5000, 3, true, false, false, DSV4_RND_IN | DSV4_RND_OUT);
    rmsnorm_case(3, 5000, 3, false, false, false, 0);
    rmsnorm_case(2, 9000, 1, true, false, false, DSV4_RND_IN | DSV4_RND_OUT);
    rmsnorm_bf16_case(3, 37, false);
    rmsnorm_bf16_case(7, 129, false);
    rmsnorm_bf16_case(13, 300, false);
    rmsnorm_bf16_case(7, 129, true);
    rope_case(7, 3, 90, 16, 5, false, true, false, 0);
    rope_case(13, 1, 90, 16, 0, false, true, false, 0);
    rope_case(7, 3, 38, 38, 3, true, false, false, 0);
    rope_case(3, 2, 300, 64, 0, true, true, false, 0);
    rope_case(13, 3, 90, 16, 1, true, true, false, 0);
    rope_case(7, 3, 90, 16, 2, false, true, true, 0);
    rope_case(7, 3, 90, 16, 5, false, true, false, DSV4_RND_IN | DSV4_RND_OUT);
    rope_case(3, 2, 300, 64, 0, true, true, false, DSV4_RND_IN | DSV4_RND_OUT);
    rope_case(5, 4, 90, 16, 3, false, true, false, DSV4_RND_OUT);
    /* the fused per-head norm + RoPE (+ FP8SIM): Flash's query heads (BF16 norm / plain) and K=V row, odd sizes */
    norm_rope_case(3, 4, 512, 64, false, 0, true, DSV4_RND_OUT, 0, false);
    norm_rope_case(3, 4, 512, 64, false, 0, false, DSV4_RND_OUT, 0, false);
    norm_rope_case(5, 1, 512, 64, true, DSV4_RND_IN | DSV4_RND_OUT, false, DSV4_RND_OUT, 448, false);
    norm_rope_case(5, 1, 512, 64, true, DSV4_RND_IN | DSV4_RND_OUT, false, DSV4_RND_OUT, 448, true);
    norm_rope_case(7, 3, 90, 16, true, DSV4_RND_OUT, false, DSV4_RND_IN | DSV4_RND_OUT, 74, false);
    norm_rope_case(2, 2, 300, 64, false, 0, true, 0, 0, true);
    norm_rope_case(2, 1, 5000, 64, true, DSV4_RND_IN, false, DSV4_RND_OUT, 4936, false); /* wide: the three kernels */
    /* rows a warp each (k_norm_rope_w: no FP8SIM, head_dim a multiple of 32 up to 512; by default above 2,048
     * rows, forced for the rest): a prefill's q heads, narrower heads (fewer elements a lane: some of the block's
     * threads without any), a partial last block */
    norm_rope_case(37, 64, 512, 64, false, 0, true, DSV4_RND_OUT, 0, false);
    const int kn = knob_set("DSV4_NORM_ROPE_W", 1);
    norm_rope_case(13, 64, 512, 64, false, DSV4_RND_IN | DSV4_RND_OUT, false, DSV4_RND_IN | DSV4_RND_OUT, 0, true);
    norm_rope_case(9, 5, 128, 32, true, DSV4_RND_OUT, false, DSV4_RND_OUT, 0, false);
    norm_rope_case(11, 3, 96, 64, false, 0, true, DSV4_RND_IN, 0, true);
    norm_rope_case(6, 7, 320, 16, true, 0, false, 0, 0, false);
    knob_set("DSV4_NORM_ROPE_W", kn);
    assert_int_equal(n_fail, 0);
}

/* ==== elementwise ops and the cache simulations =========================== */

static void round_bf16_case(size_t n)
{
    case_begin("round_bf16 n=%zu (ties, subnormals, overflow, NaN, Inf)", n);
    float *x = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)rnd_u64();
        switch (i % 8) {
        case 0:
            u = (u & 0xffff0000u) | 0x8000u;
            break; /* exact ties */
        case 1:
            u = (u & 0xffff0000u) | 0x7fffu;
            break;
        case 2:
            u = (u & 0x807fffffu);
            break; /* subnormals */
        case 3:
            u = (u & 0x80000000u) | 0x7f7f8000u | (u & 0x7fffu);
            break; /* round up to Inf */
        default:
            u = (u & 0x80000000u) | ((u & 0x3fffffffu) + 0x20000000u);
            break;
        }
        memcpy(&x[i], &u, 4);
    }
    x[5] = NAN;
    x[6] = -INFINITY;
    x[9] = INFINITY;
    float *res[2];
    for (int s = 0; s < 2; s++) {
        float *d = bdup(side[s], x, n * 4);
        side[s]->round_bf16(side[s], d, n);
        res[s] = bhost(side[s], d, n * 4);
        bfree(side[s], d);
    }
    check_f32("x", res[0], res[1], n, (tolspec){.nonfinite = true, .bf16 = true});
    free(res[0]);
    free(res[1]);
    free(x);
    case_end();
}

/* Benchmark contents (dsv4_seq_skip): the same words on both sides, each two
 * BF16 values in [-1, 1] (so finite as FP32 too). */
static void fill_case(size_t n, uint64_t seed)
{
    case_begin("fill n=%zu seed=%llu", n, (unsigned long long)seed);
    float *res[2];
    for (int s = 0; s < 2; s++) {
        float *dx = bpoison(side[s], n * 4);
        side[s]->fill(side[s], dx, n, seed);
        res[s] = bhost(side[s], dx, n * 4);
        bfree(side[s], dx);
    }
    check_f32("x", res[0], res[1], n, EXACT);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &res[0][i], 4);
        const float hi = dsv4_bf16_to_f32((uint16_t)(u >> 16)), lo = dsv4_bf16_to_f32((uint16_t)u);
        bad += !(fabsf(hi) <= 1.0f && fabsf(lo) <= 1.0f && isfinite(res[0][i]));
    }
    if (bad) fail_line("x", "%zu of %zu words outside two BF16 values in [-1, 1]", bad, n);
    free(res[0]);
    free(res[1]);
    case_end();
}

static void swiglu_case(size_t n, float limit, bool inplace, bool nonfinite, unsigned rnd)
{
    case_begin("swiglu n=%zu limit=%g%s%s%s", n, (double)limit, inplace ? " in place" : "", nonfinite ? " NaN/Inf" : "",
               rnd_name(rnd));
    float *g = rnd_vec(n, 4.0f), *u = rnd_vec(n, 4.0f);
    g[0] = -120.0f, g[1] = 95.0f, u[2] = 1e30f, g[3] = 0.0f; /* exp over- and underflow, clamp */
    if (nonfinite) g[4] = NAN, u[5] = NAN, g[6] = INFINITY, g[7] = -INFINITY, u[8] = -INFINITY;
    float *res[2];
    for (int s = 0; s < 2; s++) {
        float *dg = bdup(side[s], g, n * 4), *du = bdup(side[s], u, n * 4),
              *dm = inplace ? dg : bpoison(side[s], n * 4);
        side[s]->swiglu(side[s], dg, du, n, limit, dm, rnd);
        res[s] = bhost(side[s], dm, n * 4);
        bfree(side[s], dg);
        bfree(side[s], du);
        if (!inplace) bfree(side[s], dm);
    }
    /* without a clamp 1e30 * 95 overflows: that Inf is legitimate */
    check_f32("m", res[0], res[1], n, rounded((tolspec){.tol = 1e-5, .nonfinite = nonfinite || limit <= 0}, rnd));
    free(res[0]);
    free(res[1]);
    free(g);
    free(u);
    case_end();
}

static void kv_sim_case(int rows, int nope, int ld, bool nonfinite)
{
    case_begin("kv_sim rows=%d nope=%d ld=%d%s", rows, nope, ld, nonfinite ? " NaN/Inf" : "");
    const size_t n = (size_t)rows * ld;
    float *x = malloc(n * 4);
    bool *owned = calloc(n, sizeof(bool));
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < ld; i++) {
            /* blocks of 64 at scales 1e-6 (under the 1e-4 amax floor) .. 1e3 */
            const float sc = powf(10.0f, (float)((i / 64 + r) % 4) * 3.0f - 6.0f);
            x[(size_t)r * ld + i] = dsv4_round_bf16(rnd_norm() * sc);
            owned[(size_t)r * ld + i] = i < nope;
        }
    if (nonfinite) x[ld + 2] = NAN, x[(size_t)(rows - 1) * ld + nope - 1] = INFINITY;
    float *res[2];
    for (int s = 0; s < 2; s++) {
        float *d = bdup(side[s], x, n * 4);
        side[s]->kv_sim(side[s], d, rows, ld, nope);
        res[s] = bhost(side[s], d, n * 4);
        bfree(side[s], d);
    }
    check_f32("x", res[0], res[1], n, (tolspec){.nonfinite = nonfinite, .bf16 = true});
    check_kept("x past nope", res[1], x, owned, n);
    free(owned);
    free(res[0]);
    free(res[1]);
    free(x);
    case_end();
}

static void idx_sim_case(int rows, int dim, bool nonfinite)
{
    case_begin("idx_sim rows=%d dim=%d%s", rows, dim, nonfinite ? " NaN/Inf" : "");
    const size_t n = (size_t)rows * dim;
    float *x = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = dsv4_round_bf16(rnd_norm() * (float)(1 + (i / (size_t)dim) % 3));
    if (nonfinite) x[dim + 1] = NAN, x[n - 2] = INFINITY;
    float *res[2];
    for (int s = 0; s < 2; s++) {
        float *d = bdup(side[s], x, n * 4);
        side[s]->idx_sim(side[s], d, rows, dim);
        res[s] = bhost(side[s], d, n * 4);
        bfree(side[s], d);
    }
    check_f32("x", res[0], res[1], n, (tolspec){.nonfinite = nonfinite, .bf16 = true});
    free(res[0]);
    free(res[1]);
    free(x);
    case_end();
}

static void test_elementwise(void **state)
{
    round_bf16_case(1037);
    fill_case(1, 7);
    fill_case(300007, 0x5eed0003ull);
    swiglu_case(1003, 0.0f, false, false, 0);
    swiglu_case(1003, 7.0f, true, false, 0);
    swiglu_case(300, 7.0f, false, true, 0);
    swiglu_case(129, 0.0f, true, true, 0);
    swiglu_case(1003, 7.0f, true, false, DSV4_RND_IN | DSV4_RND_OUT);
    swiglu_case(300, 0.0f, false, false, DSV4_RND_IN);
    kv_sim_case(3, 74, 90, false);
    kv_sim_case(7, 128, 144, false);
    kv_sim_case(13, 37, 53, false);
    kv_sim_case(7, 284, 300, true);
    idx_sim_case(7, 32, false);
    idx_sim_case(13, 64, false);
    idx_sim_case(3, 128, false);
    idx_sim_case(7, 64, true);
    assert_int_equal(n_fail, 0);
}

/* ==== hyper-connections =================================================== */

/* The hyper-connection parameters the cases share (20 Sinkhorn iterations, eps 1e-6) with device buffers. */
static dsv4_hc_params hc_test_params(int hc, int D, const float *fn, const float *base, const float *scale)
{
    return (dsv4_hc_params){.hc = hc,
                            .dim = D,
                            .sinkhorn_iters = 20,
                            .hc_eps = 1e-6f,
                            .norm_eps = 1e-6f,
                            .fn = fn,
                            .base = base,
                            .scale = scale};
}

/* norm: 0, or then RMSNorm(u) in the same op (1; 2: with BF16 rounding in and out), which must give the bits
 * of the rmsnorm op run on the op's own u, on each backend */
static void hc_case(int hc, int D, int n, bool head, bool nonfinite, int norm)
{
    case_begin("%s hc=%d D=%d n=%d%s%s", head ? "hc_head" : "hc_pre", hc, D, n, nonfinite ? " NaN/Inf" : "",
               norm == 1 ? " then rmsnorm" : norm == 2 ? " then rmsnorm (BF16 in/out)" : "");
    float *nw = rnd_vec((size_t)D, 1.0f);
    const int F = hc * D, mix = head ? hc : (2 + hc) * hc;
    float *X = rnd_vec((size_t)n * F, 1.0f), *fn = rnd_vec((size_t)mix * F, 2.0f / sqrtf((float)F));
    float *base = rnd_vec((size_t)mix, 0.5f), scale[3];
    for (int i = 0; i < 3; i++) scale[i] = 0.3f + 0.7f * (rnd_uni() + 1) / 2;
    if (nonfinite && n >= 3) X[(size_t)1 * F + 7] = NAN, X[(size_t)(n - 1) * F + F - 1] = -INFINITY;
    float *ru[2], *rp[2], *rc[2];
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        float *dX = bdup(be, X, (size_t)n * F * 4), *dfn = bdup(be, fn, (size_t)mix * F * 4);
        float *db = bdup(be, base, (size_t)mix * 4), *dsc = bdup(be, scale, sizeof scale);
        float *du = bpoison(be, (size_t)n * D * 4);
        float *dp = head ? NULL : bpoison(be, (size_t)n * hc * 4),
              *dc = head ? NULL : bpoison(be, (size_t)n * hc * hc * 4);
        dsv4_hc_params p = hc_test_params(hc, D, dfn, db, dsc);
        float *dw = bdup(be, nw, (size_t)D * 4), *dy = bpoison(be, (size_t)n * D * 4);
        const unsigned rnd = norm == 2 ? DSV4_RND_IN | DSV4_RND_OUT : 0;
        if (norm) p.then_w = dw, p.then_eps = 1e-6f, p.then_y = dy, p.then_rnd = rnd;
        if (head)
            be->hc_head(be, &p, dX, n, du);
        else
            be->hc_pre(be, &p, dX, n, du, dp, dc);
        ru[s] = bhost(be, du, (size_t)n * D * 4);
        if (norm) { /* the fused norm against the op on this backend's u */
            float *dy2 = bpoison(be, (size_t)n * D * 4);
            be->rmsnorm(be, du, dw, n, D, D, 1e-6f, dy2, rnd);
            float *y = bhost(be, dy, (size_t)n * D * 4), *y2 = bhost(be, dy2, (size_t)n * D * 4);
            if (memcmp(y, y2, (size_t)n * D * 4)) {
                size_t i = 0;
                while (i < (size_t)n * D && !memcmp(y + i, y2 + i, 4)) i++;
                fail_line(s ? "cuda then_y" : "cpu then_y", "differs from rmsnorm(u) at %zu: %g vs %g", i,
                          (double)y[i], (double)y2[i]);
            }
            free(y), free(y2);
            bfree(be, dy2);
        }
        bfree(be, dw), bfree(be, dy);
        rp[s] = head ? NULL : bhost(be, dp, (size_t)n * hc * 4);
        rc[s] = head ? NULL : bhost(be, dc, (size_t)n * hc * hc * 4);
        bfree(be, dX), bfree(be, dfn), bfree(be, db), bfree(be, dsc), bfree(be, du), bfree(be, dp), bfree(be, dc);
    }
    /* u = sum_i pre_i X_i with pre_i in (0, 1 + eps] */
    double *mag = calloc((size_t)n * D, sizeof(double));
    for (int t = 0; t < n; t++)
        for (int i = 0; i < hc; i++)
            for (int d = 0; d < D; d++)
                mag[(size_t)t * D + d] += fin(fabs((double)X[(size_t)t * F + (size_t)i * D + d]));
    check_f32("u", ru[0], ru[1], (size_t)n * D, (tolspec){.tol = 1e-5, .mag = mag, .nonfinite = nonfinite});
    if (!head) {
        check_f32("post", rp[0], rp[1], (size_t)n * hc, (tolspec){.tol = 1e-5, .scale = 1, .nonfinite = nonfinite});
        check_f32("comb", rc[0], rc[1], (size_t)n * hc * hc,
                  (tolspec){.tol = 1e-5, .scale = 1, .nonfinite = nonfinite});
    }
    for (int s = 0; s < 2; s++) free(ru[s]), free(rp[s]), free(rc[s]);
    free(mag);
    free(X);
    free(fn);
    free(base);
    free(nw);
    case_end();
}

static void hc_post_case(int hc, int D, int n, bool nonfinite, unsigned rnd, bool two)
{
    case_begin("hc_post hc=%d D=%d n=%d%s%s%s", hc, D, n, nonfinite ? " NaN/Inf" : "", rnd_name(rnd),
               two ? " o1 + o2" : "");
    const size_t nx = (size_t)n * hc * D;
    float *X = rnd_vec(nx, 1.0f), *o = rnd_vec((size_t)n * D, 1.0f), *post = malloc((size_t)n * hc * 4);
    float *o2 = two ? rnd_vec((size_t)n * D, 1.0f) : NULL;
    float *comb = malloc((size_t)n * hc * hc * 4);
    for (int i = 0; i < n * hc; i++) post[i] = rnd_uni() + 1.0f;
    for (int i = 0; i < n * hc * hc; i++) comb[i] = (rnd_uni() + 1.0f) / (float)hc;
    if (nonfinite && n >= 3) o[D + 2] = NAN, X[nx - 1] = INFINITY, comb[0] = NAN;
    float *res[2];
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        float *dX = bdup(be, X, nx * 4), *dO = bdup(be, o, (size_t)n * D * 4);
        float *dO2 = two ? bdup(be, o2, (size_t)n * D * 4) : NULL;
        float *dp = bdup(be, post, (size_t)n * hc * 4), *dc = bdup(be, comb, (size_t)n * hc * hc * 4);
        be->hc_post(be, hc, D, dO, dO2, dp, dc, n, dX, rnd);
        res[s] = bhost(be, dX, nx * 4);
        bfree(be, dX), bfree(be, dO), bfree(be, dO2), bfree(be, dp), bfree(be, dc);
    }
    double *mag = calloc(nx, sizeof(double));
    for (int t = 0; t < n; t++)
        for (int k = 0; k < hc; k++)
            for (int d = 0; d < D; d++) {
                double ov = fabs((double)o[(size_t)t * D + d]) + (two ? fabs((double)o2[(size_t)t * D + d]) : 0.0);
                double m = fin(fabs((double)post[t * hc + k]) * ov);
                for (int j = 0; j < hc; j++)
                    m += fin(fabs((double)comb[((size_t)t * hc + j) * hc + k] * X[((size_t)t * hc + j) * D + d]));
                mag[((size_t)t * hc + k) * D + d] = m;
            }
    check_f32("X", res[0], res[1], nx, rounded((tolspec){.tol = 1e-5, .mag = mag, .nonfinite = nonfinite}, rnd));
    free(mag);
    free(res[0]);
    free(res[1]);
    free(X);
    free(o);
    free(o2);
    free(post);
    free(comb);
    case_end();
}

/* hc_post_next: hc_post then the next hc_pre / hc_head on its X, announced (the GPU makes the mixing logits in
 * hc_post) against not announced, bit for bit on the same backend - X, u, post, comb and the norm's y; and an
 * announcement of other weights than the op then reads (the mixing made again: the same bits too). */
static void hc_next_case(int D, int n, bool head, bool two, unsigned rnd)
{
    case_begin("hc_post_next then %s D=%d n=%d%s%s", head ? "hc_head" : "hc_pre", D, n, two ? " o1 + o2" : "",
               rnd_name(rnd));
    dsv4_backend *be = side[1];
    const int hc = 4, F = hc * D, mix = head ? hc : (2 + hc) * hc;
    const size_t nx = (size_t)n * F;
    float *X = rnd_vec(nx, 1.0f), *o = rnd_vec((size_t)n * D, 1.0f), *o2 = rnd_vec((size_t)n * D, 1.0f);
    float *fn = rnd_vec((size_t)mix * F, 2.0f / sqrtf((float)F)), *base = rnd_vec((size_t)mix, 0.5f);
    float *nw = rnd_vec((size_t)D, 1.0f), *post = malloc((size_t)n * hc * 4), *comb = malloc((size_t)n * hc * hc * 4);
    float scale[3];
    for (int i = 0; i < 3; i++) scale[i] = 0.3f + 0.7f * (rnd_uni() + 1) / 2;
    for (int i = 0; i < n * hc; i++) post[i] = rnd_uni() + 1.0f;
    for (int i = 0; i < n * hc * hc; i++) comb[i] = (rnd_uni() + 1.0f) / (float)hc;
    float *fn2 = rnd_vec((size_t)mix * F, 2.0f / sqrtf((float)F)); /* other weights: used, they would show */
    float *dfn = bdup(be, fn, (size_t)mix * F * 4), *dfn2 = bdup(be, fn2, (size_t)mix * F * 4);
    float *db = bdup(be, base, (size_t)mix * 4), *dsc = bdup(be, scale, sizeof scale),
          *dw = bdup(be, nw, (size_t)D * 4);
    float *dO = bdup(be, o, (size_t)n * D * 4), *dO2 = two ? bdup(be, o2, (size_t)n * D * 4) : NULL;
    float *dpi = bdup(be, post, (size_t)n * hc * 4), *dci = bdup(be, comb, (size_t)n * hc * hc * 4);
    const size_t sz[5] = {nx, (size_t)n * D, (size_t)n * hc, (size_t)n * hc * hc, (size_t)n * D};
    const char *what[5] = {"X", "u", "post", "comb", "y"};
    float *res[3][5] = {{0}};
    for (int k = 0; k < 3; k++) { /* 0: not announced, 1: announced, 2: another fn announced */
        float *dX = bdup(be, X, nx * 4), *du = bpoison(be, sz[1] * 4), *dy = bpoison(be, sz[4] * 4);
        float *dp = head ? NULL : bpoison(be, sz[2] * 4), *dc = head ? NULL : bpoison(be, sz[3] * 4);
        if (k && be->hc_post_next) be->hc_post_next(be, k == 1 ? dfn : dfn2, head);
        be->hc_post(be, hc, D, dO, dO2, dpi, dci, n, dX, rnd);
        dsv4_hc_params p = hc_test_params(hc, D, dfn, db, dsc);
        p.then_w = dw, p.then_eps = 1e-6f, p.then_y = dy, p.then_rnd = rnd;
        if (head)
            be->hc_head(be, &p, dX, n, du);
        else
            be->hc_pre(be, &p, dX, n, du, dp, dc);
        const float *dv[5] = {dX, du, dp, dc, dy};
        for (int i = 0; i < 5; i++) res[k][i] = dv[i] ? bhost(be, dv[i], sz[i] * 4) : NULL;
        bfree(be, dX), bfree(be, du), bfree(be, dy), bfree(be, dp), bfree(be, dc);
    }
    for (int k = 1; k < 3; k++)
        for (int i = 0; i < 5; i++) {
            if (!res[0][i]) continue;
            case_checks++;
            if (memcmp(res[0][i], res[k][i], sz[i] * 4)) {
                size_t j = 0;
                while (j < sz[i] && !memcmp(res[0][i] + j, res[k][i] + j, 4)) j++;
                fail_line(k == 1 ? "announced" : "another fn announced", "%s differs at %zu: %g vs %g", what[i], j,
                          (double)res[0][i][j], (double)res[k][i][j]);
            }
        }
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 5; i++) free(res[k][i]);
    bfree(be, dfn), bfree(be, dfn2), bfree(be, db), bfree(be, dsc), bfree(be, dw), bfree(be, dO), bfree(be, dO2);
    bfree(be, dpi), bfree(be, dci);
    free(X), free(o), free(o2), free(fn), free(fn2), free(base), free(nw), free(post), free(comb);
    case_end();
}

static void test_hc(void **state)
{
    hc_case(4, 129, 7, false, false, 0);
    hc_case(3, 300, 13, false, false, 0);
    hc_case(4, 37, 1, false, false, 0);
    hc_case(4, 129, 7, false, true, 0);
    hc_case(4, 129, 7, true, false, 0);
    hc_case(3, 300, 13, true, false, 0);
    hc_case(4, 37, 7, true, true, 0);
    /* Flash's shape: the GPU's register-held path (4 streams of 16 x 256 columns) */
    hc_case(4, 4096, 3, false, false, 0);
    hc_case(4, 4096, 3, false, true, 0);
    hc_case(4, 4096, 2, true, false, 0);
    hc_case(4, 5000, 2, false, false, 0); /* more than 64 mixing parts: the GPU's generic part loop */
    hc_case(4, 4096, 40, false, true, 0); /* several token tiles of the GPU's mixing kernel */
    hc_case(6, 200, 19, false, false, 0); /* 48 mixing rows: two row passes, a part of 200 columns */
    /* then RMSNorm(u) in the same op (the GPU fuses it up to 4,096 columns, 256 threads as the rmsnorm op) */
    hc_case(4, 4096, 3, false, false, 1);
    hc_case(4, 4096, 3, false, true, 2);
    hc_case(4, 4096, 2, true, false, 2);
    hc_case(4, 129, 7, false, false, 2);
    hc_case(3, 300, 5, true, true, 1);
    hc_case(2, 4352, 2, false, false, 2); /* wider than 4,096: the GPU's separate rmsnorm (512 threads) */
    hc_post_case(4, 129, 7, false, 0, false);
    hc_post_case(3, 300, 13, false, 0, false);
    hc_post_case(4, 37, 1, false, 0, false);
    hc_post_case(4, 129, 7, true, 0, false);
    hc_post_case(4, 129, 7, false, DSV4_RND_IN | DSV4_RND_OUT, false);
    hc_post_case(3, 300, 5, false, DSV4_RND_IN, false);
    hc_post_case(4, 129, 7, false, 0, true);
    hc_post_case(4, 129, 7, true, DSV4_RND_IN | DSV4_RND_OUT, true);
    /* the mixing made in hc_post (the GPU: 4 streams, 256-column multiples, up to 16 tokens), and where it is not */
    hc_next_case(4096, 1, false, false, DSV4_RND_IN | DSV4_RND_OUT);
    hc_next_case(4096, 3, false, true, DSV4_RND_IN | DSV4_RND_OUT);
    hc_next_case(4096, 8, false, true, 0);
    hc_next_case(4096, 1, true, false, DSV4_RND_IN | DSV4_RND_OUT);
    hc_next_case(512, 5, true, true, 0);
    hc_next_case(4096, 16, false, false, 0);
    hc_next_case(4096, 17, false, false, 0); /* past 16 tokens: k_hc_mix */
    hc_next_case(300, 2, false, false, 0);  /* not a multiple of 256 columns: k_hc_mix */
    assert_int_equal(n_fail, 0);
}

/* ==== MoE ================================================================= */

static double sqrt_softplus_d(double x)
{
    return sqrt(x > 20 ? x : log1p(exp(x)));
}

static void moe_route_case(int n, int E, int k, bool bias, int hash /* 0, 64 (I64), 32 (I32) */, bool renorm,
                           float route_scale)
{
    case_begin("moe_route n=%d E=%d k=%d%s%s%s scale=%g", n, E, k, bias ? " bias" : "",
               hash == 64   ? " hash I64"
               : hash == 32 ? " hash I32"
                            : "",
               renorm ? " renorm" : "", (double)route_scale);
    const int V = 50;
    float *lg = malloc((size_t)n * E * 4), *b = rnd_vec((size_t)E, 0.3f);
    int32_t tok[64];
    for (int t = 0; t < n; t++) tok[t] = rnd_int(V);
    /* top-k routing: redraw a token's logits until its k-th and (k+1)-th
     * choices are 1e-4 apart, so FP32 rounding cannot decide the set */
    for (int t = 0; t < n; t++) {
        for (;;) {
            double v[1024];
            for (int e = 0; e < E; e++) {
                lg[(size_t)t * E + e] = rnd_norm() * 2.0f;
                v[e] = sqrt_softplus_d(lg[(size_t)t * E + e]) + (bias ? b[e] : 0.0);
            }
            double kth = -INFINITY, next = -INFINITY;
            for (int j = 0; j <= k; j++) { /* k+1 largest, by selection */
                double best = -INFINITY;
                int bi = -1;
                for (int e = 0; e < E; e++)
                    if (v[e] > best) best = v[e], bi = e;
                if (j == k - 1) kth = best;
                if (j == k) next = best;
                v[bi] = -INFINITY;
            }
            if (hash || kth - next > 1e-4 * (1 + fabs(kth))) break;
        }
    }
    /* tid2eid [V, k] */
    int64_t *t64 = malloc((size_t)V * k * 8);
    int32_t *t32 = malloc((size_t)V * k * 4);
    for (int i = 0; i < V * k; i++) t64[i] = t32[i] = rnd_int(E);
    dsv4_w tw = {.name = hash ? "tid2eid" : NULL,
                 .dtype = hash == 32 ? DSV4_DT_I32 : DSV4_DT_I64,
                 .ndim = 2,
                 .ne = {V, k},
                 .host = hash == 32 ? (const void *)t32 : (const void *)t64};
    begin_step(n, tok, NULL);
    int32_t *ri[2];
    float *rw[2];
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        dsv4_w ws = tw;
        char err[256];
        if (hash && be->weight_load(be, &ws, err, sizeof err) != DSV4_OK) fail_msg("%s", err);
        float *dl = bdup(be, lg, (size_t)n * E * 4), *db = bias ? bdup(be, b, (size_t)E * 4) : NULL;
        int32_t *di = bpoison(be, (size_t)n * k * 4);
        float *dw = bpoison(be, (size_t)n * k * 4);
        be->moe_route(be, dl, n, E, k, db, hash ? &ws : NULL, tok, renorm, route_scale, di, dw);
        ri[s] = bhost(be, di, (size_t)n * k * 4);
        rw[s] = bhost(be, dw, (size_t)n * k * 4);
        bfree(be, dl), bfree(be, db), bfree(be, di), bfree(be, dw), bfree(be, ws.dev);
    }
    check_i32("idx", ri[0], ri[1], (size_t)n * k);
    check_f32("weights", rw[0], rw[1], (size_t)n * k, (tolspec){.tol = 1e-5});
    for (int s = 0; s < 2; s++) free(ri[s]), free(rw[s]);
    free(lg);
    free(b);
    free(t64);
    free(t32);
    case_end();
}

typedef struct {
    wkind k;
    int n, D, I, E, K;
    float limit;
    bool ref, aq, nonfinite;
    bool a8; /* be->moe_a8: the W4A8 kernels (--moe-backend w4a8; MXFP4 with act_quant) */
    bool wg; /* the prefill kernels (wgmma) forced, then bit for bit against the F16 path's and tokens alone */
} moe_spec;

/* out (n x D, backend memory) against the experts on the same input with the prefill kernels off
 * (DSV4_MOE_WG 0: k_moe16) and against the first tokens alone (decode's kernels), bit for bit. */
static void moe_wg_bits(dsv4_backend *be, const dsv4_moe_params *p, const float *dx, int n, const int32_t *di,
                        const float *dw, const float *got)
{
    const int D = p->dim, K = p->k;
    float *d2 = bpoison(be, (size_t)n * D * 4);
    const int kn = knob_set("DSV4_MOE_WG", 0);
    be->moe_experts(be, p, dx, n, di, dw, d2);
    float *r2 = bhost(be, d2, (size_t)n * D * 4);
    if (memcmp(r2, got, (size_t)n * D * 4)) {
        size_t i = 0;
        while (i < (size_t)n * D && !memcmp(r2 + i, got + i, 4)) i++;
        fail_line("moe wgmma", "differs from the F16 path at %zu: %a vs %a", i, (double)got[i], (double)r2[i]);
    }
    free(r2);
    for (int t = 0; t < n && t < 3; t++) {
        be->moe_experts(be, p, dx + (size_t)t * D, 1, di + (size_t)t * K, dw + (size_t)t * K, d2);
        float *r1 = bhost(be, d2, (size_t)D * 4);
        if (memcmp(r1, got + (size_t)t * D, (size_t)D * 4)) {
            int i = 0;
            while (i < D && !memcmp(r1 + i, got + (size_t)t * D + i, 4)) i++;
            fail_line("moe wgmma", "token %d alone differs at %d: %a vs %a", t, i, (double)got[(size_t)t * D + i],
                      (double)r1[i]);
        }
        free(r1);
    }
    knob_set("DSV4_MOE_WG", kn);
    bfree(be, d2);
}

/* out (n x D, backend memory) against the experts on the same input with the tensor-core path's tiles of at
 * most 2 pairs and of 8 (DSV4_MOE_BP 1, 0: by default 2 in reference numerics at 4-12 tokens), bit for bit. */
static void moe_bp_bits(dsv4_backend *be, const dsv4_moe_params *p, const float *dx, int n, const int32_t *di,
                        const float *dw, const float *got)
{
    const size_t nd = (size_t)n * p->dim;
    float *d2 = bpoison(be, nd * 4);
    for (int v = 0; v < 2; v++) {
        const int kn = knob_set("DSV4_MOE_BP", v);
        be->moe_experts(be, p, dx, n, di, dw, d2);
        knob_set("DSV4_MOE_BP", kn);
        float *r = bhost(be, d2, nd * 4);
        if (memcmp(r, got, nd * 4)) {
            size_t i = 0;
            while (i < nd && !memcmp(r + i, got + i, 4)) i++;
            fail_line("moe bp", "DSV4_MOE_BP=%d differs at %zu: %a vs %a", v, i, (double)got[i], (double)r[i]);
        }
        free(r);
    }
    bfree(be, d2);
}

/* The router then the experts on its ids, with the experts announced first (be->moe_next: the CUDA backend's
 * router makes their plan where one block routes every token - up to 4 tokens, 32 pairs - and no k_moe_plan
 * runs) against the same ops without it: the same ids and outputs, bit for bit; and the announced path taken
 * where it should be (dsv4_cuda_route_planned). Logits drawn so that tokens share experts (a tile of several
 * pairs). */
static void moe_route_plan_bits(dsv4_backend *be, const dsv4_moe_params *p, const float *dx, int n)
{
    if (!be->moe_next) return;
    const int E = p->n_experts, K = p->k, D = p->dim;
    float *lg = malloc((size_t)n * E * 4), *b = rnd_vec((size_t)E, 0.3f);
    for (int t = 0; t < n; t++)
        for (int e = 0; e < E; e++) lg[(size_t)t * E + e] = rnd_norm() + (e % 3 == 0 ? 1.5f : 0.0f);
    int32_t tok[64] = {0};
    begin_step(n, tok, NULL);
    float *dl = bdup(be, lg, (size_t)n * E * 4), *db = bdup(be, b, (size_t)E * 4);
    int32_t *ri[2];
    float *ro[2];
    for (int v = 0; v < 2; v++) {
        int32_t *di = bpoison(be, (size_t)n * K * 4);
        float *dw = bpoison(be, (size_t)n * K * 4), *dout = bpoison(be, (size_t)n * D * 4);
#ifdef DSV4_HAVE_CUDA
        const unsigned long pl0 = dsv4_cuda_route_planned();
#endif
        if (v == 1) be->moe_next(be, p);
        be->moe_route(be, dl, n, E, K, db, NULL, tok, true, 2.5f, di, dw);
        be->moe_experts(be, p, dx, n, di, dw, dout);
        ri[v] = bhost(be, di, (size_t)n * K * 4);
        ro[v] = bhost(be, dout, (size_t)n * D * 4);
#ifdef DSV4_HAVE_CUDA
        /* taken where the experts are on the tensor cores (the backend says) and one block routes every token,
         * unless DSV4_ROUTE_PLAN=0 */
        const char *rp = getenv("DSV4_ROUTE_PLAN");
        const bool tc = dsv4_cuda_moe_tc(be, p) && !(rp && rp[0] == '0');
        const bool want = v == 1 && tc && n <= 4 && n * K <= 32, got = dsv4_cuda_route_planned() != pl0;
        case_checks++;
        if (want != got)
            fail_line("moe route plan", "%s n=%d k=%d: the router's plan %s", v ? "announced" : "not announced", n, K,
                      got ? "taken" : "not taken");
#endif
        bfree(be, di), bfree(be, dw), bfree(be, dout);
    }
    case_checks++;
    if (memcmp(ri[0], ri[1], (size_t)n * K * 4))
        fail_line("moe route plan", "the ids differ");
    else if (memcmp(ro[0], ro[1], (size_t)n * D * 4)) {
        size_t i = 0;
        while (i < (size_t)n * D && !memcmp(ro[0] + i, ro[1] + i, 4)) i++;
        fail_line("moe route plan", "n=%d: the experts' outputs differ at %zu: %a vs %a", n, i, (double)ro[0][i],
                  (double)ro[1][i]);
    }
    free(ri[0]), free(ri[1]), free(ro[0]), free(ro[1]);
    bfree(be, dl), bfree(be, db);
    free(lg), free(b);
}

/* The routed experts' sum left to the next hc_post (sum_in_hc_post: the CUDA backend's moe_pend, the slots
 * added in k_hc_post in ascending expert order, ties in slot order) against the experts' own sum then the same
 * hc_post, bit for bit. */
static void moe_post_bits(dsv4_backend *be, const dsv4_moe_params *p, const float *dx, int n, const int32_t *di,
                          const float *dw)
{
    const int hc = 4, D = p->dim;
    float *X = rnd_vec((size_t)n * hc * D, 1.0f), *post = malloc((size_t)n * hc * 4);
    float *comb = malloc((size_t)n * hc * hc * 4);
    for (int i = 0; i < n * hc; i++) post[i] = rnd_uni() + 1.0f;
    for (int i = 0; i < n * hc * hc; i++) comb[i] = (rnd_uni() + 1.0f) / (float)hc;
    float *dp = bdup(be, post, (size_t)n * hc * 4), *dc = bdup(be, comb, (size_t)n * hc * hc * 4);
    float *res[2];
    for (int v = 0; v < 2; v++) {
        dsv4_moe_params q = *p;
        q.sum_in_hc_post = v == 0;
        float *dX = bdup(be, X, (size_t)n * hc * D * 4), *dy = bpoison(be, (size_t)n * D * 4);
        be->moe_experts(be, &q, dx, n, di, dw, dy);
        be->hc_post(be, hc, D, dy, NULL, dp, dc, n, dX, DSV4_RND_IN | DSV4_RND_OUT);
        res[v] = bhost(be, dX, (size_t)n * hc * D * 4);
        bfree(be, dX), bfree(be, dy);
    }
    case_checks++;
    if (memcmp(res[0], res[1], (size_t)n * hc * D * 4))
        fail_line("moe sum in hc_post", "hc_post's streams differ from those after the experts' own sum");
    free(res[0]), free(res[1]);
    bfree(be, dp), bfree(be, dc);
    free(X), free(post), free(comb);
}

static void moe_experts_case(const moe_spec *c)
{
    const int n = c->n, D = c->D, I = c->I, E = c->E, K = c->K;
    case_begin("moe_experts %s n=%d D=%d inter=%d E=%d k=%d limit=%g%s%s%s%s%s", wk_name[c->k], n, D, I, E, K,
               (double)c->limit, c->ref ? " reference" : "", c->aq ? " act_quant" : "", c->nonfinite ? " NaN/Inf" : "",
               c->a8 ? " w4a8" : "", c->wg ? " wgmma" : "");
    wmat *w1 = calloc((size_t)E, sizeof(wmat)), *w3 = calloc((size_t)E, sizeof(wmat)),
         *w2 = calloc((size_t)E, sizeof(wmat));
    for (int e = 0; e < E; e++) {
        wmat_make(&w1[e], c->k, I, D, 128, 128, false);
        wmat_make(&w3[e], c->k, I, D, 128, 128, false);
        wmat_make(&w2[e], c->k, D, I, 128, 128, false);
    }
    float *x = rnd_vec((size_t)n * D, 1.0f), *wts = malloc((size_t)n * K * 4);
    int32_t *idx = malloc((size_t)n * K * 4);
    for (int t = 0; t < n; t++)
        for (int j = 0; j < K; j++) {
            int e, dup;
            do {
                e = rnd_int(E), dup = 0;
                for (int q = 0; q < j; q++) dup |= idx[t * K + q] == e;
            } while (dup);
            idx[t * K + j] = e; /* distinct, in no particular order */
            wts[t * K + j] = 0.1f + (rnd_uni() + 1.0f);
        }
    if (c->nonfinite && n >= 5) x[(size_t)1 * D + 3] = NAN, x[(size_t)3 * D + 5] = INFINITY;
    float *res[2];
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        /* freed after the case, as the weights are: the CUDA backend keys its tables by the weights' device
         * memory and drops a table when that memory is freed, so the next cases' arrays and weights, often at
         * the same addresses, get tables of their own (keyed by the host arrays, a stale table described the
         * freed weights and their FP4 words were not laid out) */
        dsv4_w *a1 = malloc((size_t)E * sizeof(dsv4_w)), *a3 = malloc((size_t)E * sizeof(dsv4_w));
        dsv4_w *a2 = malloc((size_t)E * sizeof(dsv4_w));
        for (int e = 0; e < E; e++) a1[e] = w1[e].on[s], a3[e] = w3[e].on[s], a2[e] = w2[e].on[s];
        dsv4_moe_params p = {.n_experts = E,
                             .k = K,
                             .dim = D,
                             .inter = I,
                             .swiglu_limit = c->limit,
                             .w1 = a1,
                             .w3 = a3,
                             .w2 = a2,
                             .reference = c->ref};
        be->act_quant = c->aq;
        be->moe_a8 = c->a8;
        float *dx = bdup(be, x, (size_t)n * D * 4), *dw = bdup(be, wts, (size_t)n * K * 4);
        int32_t *di = bdup(be, idx, (size_t)n * K * 4);
        float *dout = bpoison(be, (size_t)n * D * 4);
        const bool force = s == 1 && c->wg;
        const int kn = force ? knob_set("DSV4_MOE_WG", 1) : 0;
        be->moe_experts(be, &p, dx, n, di, dw, dout);
        if (force) knob_set("DSV4_MOE_WG", kn);
        res[s] = bhost(be, dout, (size_t)n * D * 4);
        if (s == 1 && c->wg) moe_wg_bits(be, &p, dx, n, di, dw, res[s]);
        if (s == 1 && !c->wg) moe_bp_bits(be, &p, dx, n, di, dw, res[s]);
        if (s == 1) moe_post_bits(be, &p, dx, n, di, dw);
        if (s == 1 && (w1[0].w.fmt == DSV4_WF_MXFP4 || w1[0].w.fmt == DSV4_WF_NVFP4))
            for (int m = 1; m <= n && m <= 5; m++) moe_route_plan_bits(be, &p, dx, m);
        be->act_quant = false;
        be->moe_a8 = false;
        bfree(be, dx), bfree(be, dw), bfree(be, di), bfree(be, dout);
        free(a1), free(a3), free(a2);
    }
    /* magnitudes: a double-precision pass over the same computation, summing
     * absolute values (and the sensitivity of silu(g) u to g and u) */
    const bool q = c->aq && w1[0].w.fmt != DSV4_WF_FLOAT;
    float *xa = malloc((size_t)n * D * 4);
    if (q)
        act_quant_host(x, D, n, D, xa);
    else
        memcpy(xa, x, (size_t)n * D * 4);
    double *mag = calloc((size_t)n * D, sizeof(double)), *mm = malloc((size_t)I * sizeof(double));
    for (int t = 0; t < n; t++)
        for (int j = 0; j < K; j++) {
            const int e = idx[t * K + j];
            const double wt = wts[t * K + j];
            for (int r = 0; r < I; r++) {
                double g = 0, u = 0, mg = 0, mu = 0;
                for (int i = 0; i < D; i++) {
                    const double xi = fin(xa[(size_t)t * D + i]), a = w_at_host(&w1[e].w, r, i),
                                 b = w_at_host(&w3[e].w, r, i);
                    g += xi * a, u += xi * b, mg += fabs(xi * a), mu += fabs(xi * b);
                }
                const double sg = g / (1 + exp(-g));
                mm[r] = wt * (fabs(sg * u) + 1.2 * fabs(u) * mg + fabs(sg) * mu + 1e-30);
                if (q) mm[r] *= 1.07; /* FP8 activations: 2^-4 relative */
            }
            for (int d = 0; d < D; d++) {
                double y = 0;
                for (int r = 0; r < I; r++) y += fabs((double)w_at_host(&w2[e].w, d, r)) * mm[r];
                mag[(size_t)t * D + d] += y;
            }
        }
    tolspec t = {.tol = 1e-5, .mag = mag, .nonfinite = c->nonfinite};
    if (c->ref) t.loose = c->aq ? 0x1p-3 : 0x1p-6, t.loose_frac = 0.5;
    check_f32("out", res[0], res[1], (size_t)n * D, t);
    free(mag);
    free(mm);
    free(xa);
    free(res[0]);
    free(res[1]);
    for (int e = 0; e < E; e++) wmat_free(&w1[e]), wmat_free(&w3[e]), wmat_free(&w2[e]);
    free(w1);
    free(w3);
    free(w2);
    free(x);
    free(wts);
    free(idx);
    case_end();
}

static void test_moe(void **state)
{
#ifdef DSV4_HAVE_CUDA
    if (!selftest) { /* registers or rings grown past four blocks an SM (s27's launch bounds took one, unseen) */
        const int occ = dsv4_cuda_moe16_blocks_per_sm();
        printf("  the experts' reference decode kernels: %d blocks an SM\n", occ);
        if (occ >= 0 && occ < 4)
            fail_line("moe occupancy",
                      "k_moe16's reference decode kernels fit %d blocks an SM, not 4 (registers: "
                      "cuobjdump --dump-resource-usage; rings: moe16_smem)",
                      occ);
    }
#endif
    moe_route_case(13, 37, 3, true, 0, true, 2.5f);
    moe_route_case(7, 37, 6, false, 0, false, 1.0f);
    moe_route_case(13, 16, 6, true, 0, true, 1.5f);
    moe_route_case(1, 129, 8, true, 0, true, 2.5f);
    moe_route_case(5, 300, 6, true, 0, true, 1.0f); /* more than 256 experts: the GPU's wider lanes */
    moe_route_case(13, 37, 3, false, 64, true, 2.5f);
    moe_route_case(7, 16, 6, false, 32, false, 1.0f);
    const moe_spec cs[] = {
        {WK_BF16, 7, 129, 37, 7, 3, 7.0f, .ref = false},
        {WK_BF16, 1, 300, 37, 5, 3, 0.0f, .ref = false},
        {WK_F32, 13, 37, 129, 7, 2, 10.0f, .ref = false},
        {WK_FP8_E8M0, 7, 129, 37, 7, 3, 7.0f, .ref = false},
        {WK_FP8_F32, 13, 300, 129, 5, 3, 7.0f, .ref = false},
        {WK_MXFP4, 7, 160, 96, 7, 3, 7.0f, .ref = false},
        {WK_NVFP4, 13, 144, 48, 7, 4, 7.0f, .ref = false},
        {WK_BF16, 7, 129, 37, 7, 3, 7.0f, .ref = true},
        {WK_FP8_E8M0, 7, 129, 37, 7, 3, 7.0f, .ref = true, .aq = true},
        {WK_MXFP4, 13, 160, 96, 7, 3, 7.0f, .ref = true, .aq = true},
        {WK_NVFP4, 7, 144, 48, 7, 3, 7.0f, .ref = true, .aq = true},
        {WK_MXFP4, 7, 160, 96, 7, 3, 7.0f, .aq = true},
        {WK_BF16, 7, 129, 37, 7, 3, 7.0f, .nonfinite = true},
        {WK_FP8_F32, 7, 129, 37, 7, 3, 0.0f, .nonfinite = true},
        {WK_MXFP4, 7, 160, 96, 7, 3, 7.0f, .ref = true, .aq = true, .nonfinite = true},
        /* shapes of the tensor-core experts (FP4, K dimensions of whole 128-column groups): several
         * tiles of one expert (40 tokens over 3 experts), rows past a block, one token */
        {WK_MXFP4, 40, 256, 128, 3, 2, 7.0f, .ref = false},
        {WK_MXFP4, 1, 128, 384, 9, 6, 7.0f, .ref = false},
        {WK_NVFP4, 13, 256, 128, 7, 4, 7.0f, .ref = false},
        /* one token in reference numerics, both formats; 40 tokens over 3 experts (once moe_bp_bits forces
         * tiles of 2 pairs, many tiles an expert) */
        {WK_MXFP4, 1, 256, 384, 9, 6, 7.0f, .ref = true, .aq = true},
        {WK_NVFP4, 1, 384, 256, 7, 3, 7.0f, .ref = true, .aq = true},
        /* the router's plan (moe_route_plan_bits) at 1-4 tokens of 6 experts out of 64 (up to 24 pairs), both
         * formats, tiles of 2 pairs (reference numerics) and of 8 */
        {WK_MXFP4, 4, 256, 128, 64, 6, 7.0f, .ref = true, .aq = true},
        {WK_NVFP4, 4, 128, 256, 64, 6, 7.0f, .ref = false},
        {WK_MXFP4, 40, 256, 128, 3, 2, 7.0f, .ref = true, .aq = true},
        {WK_MXFP4, 13, 256, 128, 7, 3, 7.0f, .ref = true, .aq = true},
        {WK_NVFP4, 17, 128, 256, 5, 3, 7.0f, .ref = true, .aq = true},
        {WK_MXFP4, 7, 128, 128, 7, 3, 0.0f, .aq = true},
        {WK_MXFP4, 7, 256, 128, 7, 3, 7.0f, .nonfinite = true},
        {WK_NVFP4, 7, 128, 256, 7, 3, 7.0f, .ref = true, .aq = true, .nonfinite = true},
        /* parts along K summed across a cluster (gate/up 4 parts, down 2; down 4 parts) */
        {WK_MXFP4, 9, 1024, 512, 5, 3, 7.0f, .ref = false},
        {WK_NVFP4, 5, 512, 1024, 4, 2, 7.0f, .ref = true, .aq = true},
        /* the W4A8 kernels (wgmma): several tiles of one expert, one token over 9 experts with a gate/up K of
         * one group (a K half without groups), 3 row blocks of down, K halves of 4 groups, NaN/Inf */
        {WK_MXFP4, 13, 256, 128, 7, 3, 7.0f, .ref = true, .aq = true, .a8 = true},
        {WK_MXFP4, 40, 256, 128, 3, 2, 7.0f, .ref = true, .aq = true, .a8 = true},
        {WK_MXFP4, 1, 128, 384, 9, 6, 7.0f, .ref = true, .aq = true, .a8 = true},
        {WK_MXFP4, 9, 384, 1024, 5, 3, 0.0f, .ref = true, .aq = true, .a8 = true},
        {WK_MXFP4, 7, 256, 128, 7, 3, 7.0f, .ref = true, .aq = true, .nonfinite = true, .a8 = true},
        /* the prefill kernels (wgmma, tiles of 64 pairs), bit for bit against k_moe16 and tokens alone: tiles
         * past 64 pairs of one expert, rows past a block (gate/up 64, down 128), K of 1 to 8 groups (empty
         * parts), both formats and numerics, NaN/Inf */
        {WK_MXFP4, 100, 256, 128, 3, 2, 7.0f, .ref = true, .aq = true, .wg = true},
        {WK_MXFP4, 70, 384, 256, 4, 3, 7.0f, .ref = false, .wg = true},
        {WK_NVFP4, 50, 256, 128, 5, 3, 7.0f, .ref = true, .aq = true, .wg = true},
        {WK_NVFP4, 40, 128, 256, 3, 2, 0.0f, .ref = false, .wg = true},
        {WK_MXFP4, 9, 1024, 512, 5, 3, 7.0f, .ref = true, .aq = true, .wg = true},
        {WK_MXFP4, 1, 128, 384, 9, 6, 7.0f, .ref = true, .aq = true, .wg = true},
        {WK_MXFP4, 30, 256, 128, 2, 2, 7.0f, .ref = true, .aq = true, .nonfinite = true, .wg = true},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) moe_experts_case(&cs[i]);
    /* the experts' first tensor-core kernels (BF16 weights: the fallback for
     * misaligned scales and the benchmarks' baseline), picked when a layer's
     * expert table is built */
    const moe_spec bf[] = {
        {WK_MXFP4, 40, 256, 128, 3, 2, 7.0f, .ref = false},
        {WK_NVFP4, 13, 256, 128, 7, 4, 7.0f, .ref = false},
        {WK_MXFP4, 13, 256, 128, 7, 3, 7.0f, .ref = true, .aq = true},
        {WK_NVFP4, 7, 128, 256, 7, 3, 7.0f, .ref = true, .aq = true, .nonfinite = true},
    };
    printf("  the experts on the BF16 kernels (DSV4_MOE_MMA=bf16):\n");
    setenv("DSV4_MOE_MMA", "bf16", 1);
    for (size_t i = 0; i < sizeof bf / sizeof bf[0]; i++) moe_experts_case(&bf[i]);
    unsetenv("DSV4_MOE_MMA");
    assert_int_equal(n_fail, 0);
}

/* ==== the decode state: compress, indexer_topk, attn, kv_store ============= */

enum { L_SLIDE, L_CSA, L_HCA, NL };
enum { C_IDX, C_CSA, C_HCA, NC }; /* the compressors: CSA indexer keys, CSA rows, HCA rows */
#define MAXSEQ 3

typedef struct {
    const char *name;
    int hd, H, rope, window, P, rc, rh, topk, nI, dI, max_ctx;
} scen_cfg;

typedef struct {
    const scen_cfg *c;
    bool ref, nonfinite, bf16; /* bf16: cached rows as BF16 (dsv4_kv.bf16_rows) on both backends */
    dsv4_layer_state ls[NL];
    dsv4_kv kv[2];
    bool live[MAXSEQ];
    int64_t len[MAXSEQ];
    int n_seq_pages[MAXSEQ];
    int32_t *page_table, *free_list;
    int64_t n_free;
    float *ape[2][NC], *norm[2][NC], *freqs[2], *sinks[2][NL];
    size_t slot_bytes, page_bytes;
} scen;

typedef struct {
    int layer;
    bool indexer;
    int ratio, coff, d;
} cmp_desc;

static cmp_desc cmp_of(const scen *S, int which)
{
    const scen_cfg *c = S->c;
    if (which == C_IDX) return (cmp_desc){L_CSA, true, c->rc, 2, c->dI};
    if (which == C_CSA) return (cmp_desc){L_CSA, false, c->rc, 2, c->hd};
    return (cmp_desc){L_HCA, false, c->rh, 1, c->hd};
}

/* Element i of a cached row in host memory, BF16 (dsv4_kv.bf16_rows) or FP32. */
static float row_el(bool bf16, const float *row, int i)
{
    return bf16 ? dsv4_bf16_to_f32(((const uint16_t *)row)[i]) : row[i];
}

/* The layout of engine.c's kv_init, the reset of its seq_reset_state (with
 * the window ring and the pages poisoned: nothing may read them unwritten). */
static void scen_init(scen *S, const scen_cfg *c, bool ref, bool nonfinite, bool bf16)
{
    memset(S, 0, sizeof *S);
    S->c = c;
    S->ref = ref;
    S->nonfinite = nonfinite;
    S->bf16 = bf16;
    size_t so = 0, po = 0;
    const int hd = c->hd, dI = c->dI;
    const size_t rf = (size_t)dsv4_row_floats(hd, bf16), rfI = (size_t)dsv4_row_floats(dI, bf16);
    for (int l = 0; l < NL; l++) {
        dsv4_layer_state *ls = &S->ls[l];
        ls->win = so;
        so += (size_t)c->window * rf;
        if (l == L_CSA) {
            ls->cmp_rows = 2 * c->rc;
            ls->cmp_kv = so, so += (size_t)2 * c->rc * 2 * hd;
            ls->cmp_score = so, so += (size_t)2 * c->rc * 2 * hd;
            ls->idx_kv = so, so += (size_t)2 * c->rc * 2 * dI;
            ls->idx_score = so, so += (size_t)2 * c->rc * 2 * dI;
            ls->pg_cmp = po, po += (size_t)(c->P / c->rc) * rf;
            ls->pg_idx = po, po += (size_t)(c->P / c->rc) * rfI;
        } else if (l == L_HCA) {
            ls->cmp_rows = c->rh;
            ls->cmp_kv = so, so += (size_t)c->rh * hd;
            ls->cmp_score = so, so += (size_t)c->rh * hd;
            ls->pg_cmp = po, po += (size_t)(c->P / c->rh) * rf;
        }
    }
    const int mpps = (c->max_ctx + c->P - 1) / c->P;
    const int64_t n_pages = (int64_t)MAXSEQ * mpps + 2;
    S->page_table = calloc((size_t)MAXSEQ * mpps, sizeof(int32_t));
    S->free_list = calloc((size_t)n_pages, sizeof(int32_t));
    for (int64_t i = 0; i < n_pages; i++) S->free_list[i] = (int32_t)i;
    for (int64_t i = n_pages - 1; i > 0; i--) { /* pages handed out in no order */
        int j = rnd_int((int)i + 1);
        int32_t tmp = S->free_list[i];
        S->free_list[i] = S->free_list[j], S->free_list[j] = tmp;
    }
    S->n_free = n_pages;
    S->slot_bytes = (size_t)MAXSEQ * so * sizeof(float);
    S->page_bytes = (size_t)n_pages * po * sizeof(float);
    float *slots = malloc(S->slot_bytes), *pages = malloc(S->page_bytes);
    fill_poison(pages, S->page_bytes);
    for (int s = 0; s < MAXSEQ; s++) {
        float *b = slots + (size_t)s * so;
        for (size_t i = 0; i < so; i++) b[i] = 0.0f;
        for (int l = 0; l < NL; l++) {
            const dsv4_layer_state *ls = &S->ls[l];
            fill_poison(b + ls->win, (size_t)c->window * rf * sizeof(float));
            if (l == L_SLIDE) continue;
            const size_t w = l == L_CSA ? 2 * (size_t)hd : (size_t)hd;
            for (size_t i = 0; i < (size_t)ls->cmp_rows * w; i++) b[ls->cmp_score + i] = -INFINITY;
            if (l == L_CSA)
                for (size_t i = 0; i < (size_t)ls->cmp_rows * 2 * dI; i++) b[ls->idx_score + i] = -INFINITY;
        }
    }
    /* per-compressor ape and norm, RoPE frequencies (YaRN), sinks */
    float *ape[NC], *norm[NC], freqs[128], *sinks[NL];
    for (int k = 0; k < NC; k++) {
        cmp_desc cd = cmp_of(S, k);
        ape[k] = rnd_vec((size_t)cd.ratio * cd.coff * cd.d, 1.0f);
        norm[k] = rnd_vec((size_t)cd.d, 0.1f);
        for (int i = 0; i < cd.d; i++) norm[k][i] += 1.0f;
    }
    dsv4_rope_freqs(160000.0, c->rope, 1, 16.0, 65536.0, 32.0, 1.0, freqs);
    for (int l = 0; l < NL; l++) sinks[l] = rnd_vec((size_t)c->H, 1.0f);
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        dsv4_kv *kv = &S->kv[s];
        kv->max_seqs = MAXSEQ;
        kv->max_ctx = c->max_ctx;
        kv->page_tokens = c->P;
        kv->max_pages_per_seq = mpps;
        kv->n_pages = n_pages;
        kv->slot_floats = so;
        kv->page_floats = po;
        kv->bf16_rows = bf16;
        kv->layer = S->ls;
        kv->slots = bdup(be, slots, S->slot_bytes);
        kv->pages = bdup(be, pages, S->page_bytes);
        kv->live = S->live;
        kv->len = S->len;
        kv->page_table = S->page_table;
        kv->n_seq_pages = S->n_seq_pages;
        kv->free_list = S->free_list;
        kv->n_free = n_pages;
        for (int k = 0; k < NC; k++) {
            cmp_desc cd = cmp_of(S, k);
            S->ape[s][k] = bdup(be, ape[k], (size_t)cd.ratio * cd.coff * cd.d * 4);
            S->norm[s][k] = bdup(be, norm[k], (size_t)cd.d * 4);
        }
        S->freqs[s] = bdup(be, freqs, (size_t)(c->rope / 2) * 4);
        for (int l = 0; l < NL; l++) S->sinks[s][l] = bdup(be, sinks[l], (size_t)c->H * 4);
    }
    for (int k = 0; k < NC; k++) free(ape[k]), free(norm[k]);
    for (int l = 0; l < NL; l++) free(sinks[l]);
    for (int s = 0; s < MAXSEQ; s++) S->live[s] = true;
    free(slots);
    free(pages);
}

static void scen_free(scen *S)
{
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        bfree(be, S->kv[s].slots);
        bfree(be, S->kv[s].pages);
        for (int k = 0; k < NC; k++) bfree(be, S->ape[s][k]), bfree(be, S->norm[s][k]);
        bfree(be, S->freqs[s]);
        for (int l = 0; l < NL; l++) bfree(be, S->sinks[s][l]);
    }
    free(S->page_table);
    free(S->free_list);
}

/* Compare both states, then give the backend under test the CPU's. */
static void state_check_sync(scen *S, const char *what, tolspec pages_tol)
{
    char w[96];
    float *sa = bhost(side[0], S->kv[0].slots, S->slot_bytes), *sb = bhost(side[1], S->kv[1].slots, S->slot_bytes);
    float *pa = bhost(side[0], S->kv[0].pages, S->page_bytes), *pb = bhost(side[1], S->kv[1].pages, S->page_bytes);
    snprintf(w, sizeof w, "%s: slots", what);
    check_f32(w, sa, sb, S->slot_bytes / 4, EXACT_NF); /* ring poison and -inf scores are legitimate */
    snprintf(w, sizeof w, "%s: pages", what);
    pages_tol.nonfinite = true; /* pages not written yet hold the poison */
    if (S->bf16) {              /* the pages hold nothing but BF16 rows: their values */
        const size_t n = S->page_bytes / 2;
        float *va = malloc(n * sizeof(float)), *vb = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++)
            va[i] = dsv4_bf16_to_f32(((const uint16_t *)pa)[i]), vb[i] = dsv4_bf16_to_f32(((const uint16_t *)pb)[i]);
        check_f32(w, va, vb, n, pages_tol);
        free(va), free(vb);
    } else {
        check_f32(w, pa, pb, S->page_bytes / 4, pages_tol);
    }
    side[1]->upload(side[1], S->kv[1].slots, sa, S->slot_bytes);
    side[1]->upload(side[1], S->kv[1].pages, pa, S->page_bytes);
    free(sa), free(sb), free(pa), free(pb);
}

/* Every compressed row the sequences of this step have completed is finite
 * on both backends (finite inputs). */
static void rows_check(scen *S, const dsv4_plan *plan, cmp_desc cd, const char *what)
{
    float *pg[2];
    for (int s = 0; s < 2; s++) pg[s] = bhost(side[s], S->kv[s].pages, S->page_bytes);
    for (int si = 0; si < plan->n_seg; si++) {
        const dsv4_seg *sg = &plan->segs[si];
        const int64_t rows = (sg->pos0 + sg->n) / cd.ratio;
        for (int s = 0; s < 2; s++) {
            dsv4_kv kv = S->kv[s];
            kv.pages = pg[s];
            for (int64_t r = 0; r < rows; r++) {
                const float *row = dsv4_kv_cmp_row(&kv, cd.layer, sg->slot, r, cd.ratio, cd.indexer, cd.d);
                for (int i = 0; i < cd.d; i++)
                    if (!isfinite(row_el(S->bf16, row, i))) {
                        fail_line(what, "%s: slot %d compressed row %lld element %d is %g (0x%08x)",
                                  s ? "backend under test" : "cpu", sg->slot, (long long)r, i,
                                  (double)row_el(S->bf16, row, i), bits(row_el(S->bf16, row, i)));
                        r = rows;
                        break;
                    }
            }
        }
    }
    free(pg[0]), free(pg[1]);
}

/* The compressors which[0 .. m - 1] over the step, in that order (pair: a CUDA-side compress_pair where there is
 * one, for two), each against the CPU's. */
static void run_compress_n(scen *S, const dsv4_plan *plan, const int *which, int m, bool plant, bool pair)
{
    const int T = plan->n_tok;
    float *a[2], *g[2];
    cmp_desc cd[2];
    for (int i = 0; i < m; i++) {
        cd[i] = cmp_of(S, which[i]);
        const int w = cd[i].coff * cd[i].d;
        a[i] = rnd_vec((size_t)T * w, 1.0f), g[i] = rnd_vec((size_t)T * w, 2.0f);
        if (plant) a[i][(size_t)(plan->segs[0].t0 + plan->segs[0].n / 2) * w + 3] = NAN;
    }
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        float *da[2], *dg[2];
        dsv4_compress_params p[2];
        for (int i = 0; i < m; i++) {
            const int w = cd[i].coff * cd[i].d;
            da[i] = bdup(be, a[i], (size_t)T * w * 4), dg[i] = bdup(be, g[i], (size_t)T * w * 4);
            p[i] = (dsv4_compress_params){.layer = cd[i].layer,
                                          .indexer = cd[i].indexer,
                                          .ratio = cd[i].ratio,
                                          .coff = cd[i].coff,
                                          .d = cd[i].d,
                                          .rope_dim = S->c->rope,
                                          .ape = S->ape[s][which[i]],
                                          .norm = S->norm[s][which[i]],
                                          .freqs = S->freqs[s],
                                          .norm_eps = 1e-6f,
                                          .reference = S->ref};
        }
        if (m == 2 && pair && be->compress_pair)
            be->compress_pair(be, &p[0], da[0], dg[0], &p[1], da[1], dg[1], plan, &S->kv[s]);
        else
            for (int i = 0; i < m; i++) be->compress(be, &p[i], plan, &S->kv[s], da[i], dg[i]);
        for (int i = 0; i < m; i++) bfree(be, da[i]), bfree(be, dg[i]);
    }
    /* every compressor's rows finite, then one comparison of the state (exact) and the pages (at the loosest of
     * their tolerances: the indexer keys' grid step where they are among them) before the CPU's state is synced */
    static const char *const names[NC] = {"compress (CSA indexer keys)", "compress (CSA rows)", "compress (HCA rows)"};
    tolspec t = {.tol = 1e-5, .scale = 1};
    for (int i = 0; i < m; i++) {
        if (S->ref) {
            const double loose = which[i] == C_IDX ? 2.0 : 0.25;
            t.bf16 = true;
            t.loose = loose > t.loose ? loose : t.loose;
            t.loose_frac = 0.05;
        }
        if (!S->nonfinite) rows_check(S, plan, cd[i], names[which[i]]);
        free(a[i]), free(g[i]);
    }
    state_check_sync(S, m == 2 ? "compress (CSA indexer keys and rows)" : names[which[0]], t);
}

static void run_compress(scen *S, const dsv4_plan *plan, int which, bool plant)
{
    run_compress_n(S, plan, &which, 1, plant, false);
}

/* The CPU's indexer score of compressed row c for token t (host copy of its
 * formula); *mag = sum over heads of |w_h scale| sum_i |q_hi key_i|. */
static float cpu_index_score(const dsv4_kv *kv, const dsv4_indexer_params *p, const dsv4_plan *plan, const float *q,
                             const float *w, int t, int64_t c, double *mag)
{
    const dsv4_seg *sg = &plan->segs[plan->tok_seg[t]];
    const float *krow = dsv4_kv_cmp_row(kv, p->layer, sg->slot, c, p->ratio, true, p->head_dim);
    float key[512];
    for (int i = 0; i < p->head_dim; i++) key[i] = row_el(kv->bf16_rows, krow, i);
    float sc = 0;
    *mag = 0;
    for (int h = 0; h < p->n_heads; h++) {
        const float *qh = q + ((size_t)t * p->n_heads + h) * p->head_dim;
        const float dq = dsv4_cpu_dot_f32(qh, key, p->head_dim);
        const float wh = p->reference ? dsv4_round_bf16(w[(size_t)t * p->n_heads + h] * p->scale)
                                      : w[(size_t)t * p->n_heads + h] * p->scale;
        if (p->reference)
            sc += dsv4_round_bf16(fmaxf(dsv4_round_bf16(dq), 0.0f) * wh);
        else if (dq > 0)
            sc += wh * dq;
        double m = 0;
        for (int i = 0; i < p->head_dim; i++) m += fin(fabs((double)qh[i] * key[i]));
        *mag += fabs((double)wh) * m;
    }
    return p->reference ? dsv4_round_bf16(sc) : sc;
}

static void run_indexer(scen *S, const dsv4_plan *plan, int32_t *idx_out, int32_t *cnt_out, bool plant)
{
    const scen_cfg *c = S->c;
    const int T = plan->n_tok, K = c->topk;
    float *q = rnd_vec((size_t)T * c->nI * c->dI, 1.0f), *w = rnd_vec((size_t)T * c->nI, 1.0f);
    if (S->ref) /* forward.c's simulated queries are BF16 values (the keys come so from compress) */
        for (size_t i = 0; i < (size_t)T * c->nI * c->dI; i++) q[i] = dsv4_round_bf16(q[i]);
    if (plant) q[(size_t)(plan->segs[0].t0) * c->nI * c->dI + c->dI + 2] = NAN; /* its head 1 drops out */
    dsv4_indexer_params p = {.layer = L_CSA,
                             .ratio = c->rc,
                             .n_heads = c->nI,
                             .head_dim = c->dI,
                             .topk = K,
                             .scale = 1.0f / sqrtf((float)c->dI) / sqrtf((float)c->nI),
                             .reference = S->ref};
    int32_t *ri[2], *rc[2];
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        float *dq = bdup(be, q, (size_t)T * c->nI * c->dI * 4), *dw = bdup(be, w, (size_t)T * c->nI * 4);
        int32_t *di = bpoison(be, (size_t)T * K * 4), *dc = bpoison(be, (size_t)T * 4);
        be->indexer_topk(be, &p, plan, &S->kv[s], dq, dw, di, dc);
        ri[s] = bhost(be, di, (size_t)T * K * 4);
        rc[s] = bhost(be, dc, (size_t)T * 4);
        bfree(be, dq), bfree(be, dw), bfree(be, di), bfree(be, dc);
    }
    /* counts exactly; choices exactly, or swapped only between near-tied
     * candidates of the CPU's own scores */
    check_i32("indexer_topk: cnt", rc[0], rc[1], (size_t)T);
    case_checks++;
    const double eps = S->ref ? 0x1p-5 : 1e-5;
    for (int t = 0; t < T; t++) {
        const int64_t N = (plan->pos[t] + 1) / c->rc;
        const int want = N < K ? (int)N : K;
        if (rc[0][t] != want) fail_line("indexer_topk: cnt (cpu)", "token %d: %d, expected %d", t, rc[0][t], want);
        if (rc[0][t] != rc[1][t] || rc[0][t] != want) continue;
        const int32_t *a = ri[0] + (size_t)t * K, *b = ri[1] + (size_t)t * K;
        if (!memcmp(a, b, (size_t)want * 4)) continue;
        bool ok = true;
        for (int i = 0; i < want && ok; i++) {
            bool in_b = false;
            for (int j = 0; j < want; j++) in_b |= a[i] == b[j];
            if (in_b) continue;
            for (int j = 0; j < want && ok; j++) {
                bool in_a = false;
                for (int k = 0; k < want; k++) in_a |= b[j] == a[k];
                if (in_a) continue;
                if (b[j] < 0 || b[j] >= N) {
                    ok = false;
                    break;
                }
                double mx, my;
                const double x = cpu_index_score(&S->kv[0], &p, plan, q, w, t, a[i], &mx),
                             y = cpu_index_score(&S->kv[0], &p, plan, q, w, t, b[j], &my);
                if (!(fabs(x - y) <= eps * fmax(fabs(x), fabs(y)) + 1e-5 * fmax(mx, my))) ok = false;
            }
        }
        if (ok)
            case_ties++;
        else
            fail_line("indexer_topk: idx", "token %d (pos %lld): the choices differ beyond near-ties", t,
                      (long long)plan->pos[t]);
    }
    memcpy(idx_out, ri[0], (size_t)T * K * 4);
    memcpy(cnt_out, rc[0], (size_t)T * 4);
    for (int s = 0; s < 2; s++) free(ri[s]), free(rc[s]);
    free(q), free(w);
}

static int attn_planted_nan; /* the nonfinite scenario must reach some output */
static int attn_layout_now;  /* the GPU side's attention layout (attn_layout below) */

static void run_attn(scen *S, const dsv4_plan *plan, int layer, const int32_t *idx, const int32_t *cnt, bool plant)
{
    static const char *const names[NL] = {"attn (sliding)", "attn (CSA)", "attn (HCA)"};
    static const char *const store[NL] = {"kv_store (sliding)", "kv_store (CSA)", "kv_store (HCA)"};
    const scen_cfg *c = S->c;
    const int T = plan->n_tok, H = c->H, hd = c->hd, K = c->topk;
    float *q = rnd_vec((size_t)T * H * hd, 1.0f), *kv = rnd_vec((size_t)T * hd, 1.0f);
    if (S->ref) { /* forward.c's BF16 q and rows (the compressed rows come BF16 from compress) */
        for (size_t i = 0; i < (size_t)T * H * hd; i++) q[i] = dsv4_round_bf16(q[i]);
        for (size_t i = 0; i < (size_t)T * hd; i++) kv[i] = dsv4_round_bf16(kv[i]);
    }
    if (plant) {
        q[((size_t)plan->segs[0].t0 * H + 1) * hd + 5] = NAN;
        kv[(size_t)(plan->segs[plan->n_seg - 1].t0) * hd + 7] = INFINITY;
    }
    /* the values a query can see: this step's rows, the rings, the pages */
    double vmax = 0;
    for (size_t i = 0; i < (size_t)T * hd; i++) vmax = fmax(vmax, fin(fabs((double)kv[i])));
    const float *pa = S->kv[0].pages; /* the CPU's memory: nothing but rows */
    for (size_t i = 0; i < (S->bf16 ? S->page_bytes / 2 : S->page_bytes / 4); i++)
        vmax = fmax(vmax, fin(fabs((double)row_el(S->bf16, pa, (int)i))));
    const float *sl = S->kv[0].slots;
    for (int s = 0; s < MAXSEQ; s++)
        for (int i = 0; i < c->window * hd; i++) /* the ring: window rows of hd values, whole rows */
            vmax = fmax(vmax, fin(fabs((double)row_el(S->bf16, sl + (size_t)s * S->kv[0].slot_floats + S->ls[layer].win,
                                                      S->bf16 ? i / hd * 2 * dsv4_row_floats(hd, true) + i % hd : i))));
    const int ratio = layer == L_CSA ? c->rc : layer == L_HCA ? c->rh : 0;
    const dsv4_attn_kind kind = layer == L_CSA ? DSV4_ATTN_CSA : layer == L_HCA ? DSV4_ATTN_HCA : DSV4_ATTN_SLIDING;
    /* the output de-rotated in the same op (forward.c's use), as the rope op after it does */
    const int rd = hd >= 64 ? 64 : 16;
    float freqs[32];
    dsv4_rope_freqs(10000.0, rd, false, 16.0, 65536.0, 32.0, 1.0, freqs);
    float *ro[2];
    for (int s = 0; s < 2; s++) {
        dsv4_backend *be = side[s];
        float *dq = bdup(be, q, (size_t)T * H * hd * 4), *dkv = bdup(be, kv, (size_t)T * hd * 4);
        int32_t *di = bdup(be, idx, (size_t)T * K * 4), *dc = bdup(be, cnt, (size_t)T * 4);
        float *dout = bpoison(be, (size_t)T * H * hd * 4), *df = bdup(be, freqs, (size_t)(rd / 2) * 4);
        dsv4_attn_params p = {.layer = layer,
                              .kind = kind,
                              .ratio = ratio,
                              .n_heads = H,
                              .head_dim = hd,
                              .window = c->window,
                              .topk = K,
                              .scale = 1.0f / sqrtf((float)hd),
                              .sinks = S->sinks[s][layer],
                              .reference = S->ref,
                              .out_freqs = df,
                              .out_rope = rd,
                              .out_rnd = S->ref ? DSV4_RND_IN | DSV4_RND_OUT : 0};
        be->attn(be, &p, plan, &S->kv[s], dq, dkv, di, dc, dout);
        ro[s] = bhost(be, dout, (size_t)T * H * hd * 4);
        { /* the same backend's attention, then its rope op: the same bits */
            dsv4_attn_params p0 = p;
            p0.out_freqs = NULL;
            be->attn(be, &p0, plan, &S->kv[s], dq, dkv, di, dc, dout);
            be->rope(be, dout, T, H, H * hd, hd, rd, plan->pos, df, true, p.out_rnd);
            float *r0 = bhost(be, dout, (size_t)T * H * hd * 4);
            if (memcmp(r0, ro[s], (size_t)T * H * hd * 4)) {
                size_t i = 0;
                while (i < (size_t)T * H * hd && !memcmp(r0 + i, ro[s] + i, 4)) i++;
                fail_line(names[layer], "%s: the de-rotation in the op differs from the rope op after it at %zu: %g vs %g",
                          s ? "cuda" : "cpu", i, (double)ro[s][i], (double)r0[i]);
            }
            free(r0);
        }
#ifdef DSV4_HAVE_CUDA
        if (s == 1 && !selftest && S->ref && attn_layout_now == DSV4_ATTN_LAYOUT_AUTO) {
            /* the weighted sum as a cluster of parts gives the same bits as one
             * block walking the parts (what many tokens take) */
            dsv4_cuda_attn_layout(DSV4_ATTN_LAYOUT_PARTS);
            be->attn(be, &p, plan, &S->kv[s], dq, dkv, di, dc, dout);
            dsv4_cuda_attn_layout(DSV4_ATTN_LAYOUT_AUTO);
            float *rp = bhost(be, dout, (size_t)T * H * hd * 4);
            if (memcmp(rp, ro[s], (size_t)T * H * hd * 4))
                fail_line(names[layer], "the cluster of parts and the walking block differ");
            free(rp);
            /* every tuned choice (dsv4 tune) gives the same bits */
            static const dsv4_tune alt[] = {
                {1, {{0, 16, DSV4_SUM_PARTS16}}}, {1, {{0, 64, DSV4_SUM_PARTS64}}},
                {1, {{0, 16, DSV4_SUM_WALK32}}},  {1, {{0, 64, DSV4_SUM_WALK64}}},
                {1, {{0, 16, DSV4_SUM_WALK128}}}, {2, {{2, 64, DSV4_SUM_WALK32}, {0, 16, DSV4_SUM_PARTS32}}},
                {1, {{0, 16, DSV4_SUM_ONE}}},     {2, {{2, 16, DSV4_SUM_ONE}, {0, 64, DSV4_SUM_WALK64}}},
                {1, {{0, 64, DSV4_SUM_WG64}}},    {1, {{0, 16, DSV4_SUM_WG128}}},
                {1, {{0, 16, DSV4_SUM_ONE8}}},    {2, {{2, 16, DSV4_SUM_ONE8}, {0, 64, DSV4_SUM_WALK64}}}};
            dsv4_tune keep;
            dsv4_cuda_tune_get(&keep);
            for (int a = 0; a < (int)(sizeof alt / sizeof alt[0]); a++) {
                dsv4_cuda_tune_set(&alt[a]);
                be->attn(be, &p, plan, &S->kv[s], dq, dkv, di, dc, dout);
                rp = bhost(be, dout, (size_t)T * H * hd * 4);
                if (memcmp(rp, ro[s], (size_t)T * H * hd * 4))
                    fail_line(names[layer], "tuned choice %d gives other bits than the built-in ones", a);
                free(rp);
            }
            dsv4_cuda_tune_set(&keep);
            if (layer == L_CSA) { /* a count other than the indexer's min((pos + 1) / ratio, top-k) (the op takes
                                   * cnt as given): k_attn_one's predicted split falls back, and gives the four
                                   * kernels' bits */
                int32_t *c2 = malloc((size_t)T * 4);
                for (int t = 0; t < T; t++) c2[t] = cnt[t] > 0 ? cnt[t] - 1 : 0;
                int32_t *dc2 = bdup(be, c2, (size_t)T * 4);
                be->attn(be, &p, plan, &S->kv[s], dq, dkv, di, dc2, dout);
                float *ra = bhost(be, dout, (size_t)T * H * hd * 4);
                dsv4_cuda_tune_set(&alt[0]);
                be->attn(be, &p, plan, &S->kv[s], dq, dkv, di, dc2, dout);
                dsv4_cuda_tune_set(&keep);
                float *rb = bhost(be, dout, (size_t)T * H * hd * 4);
                if (memcmp(ra, rb, (size_t)T * H * hd * 4))
                    fail_line(names[layer],
                              "a count under the indexer's: the built-in choice and the four kernels differ");
                free(ra), free(rb), free(c2);
                bfree(be, dc2);
            }
        }
#endif
        be->kv_store(be, layer, c->window, hd, plan, &S->kv[s], dkv);
        bfree(be, dq), bfree(be, dkv), bfree(be, di), bfree(be, dc), bfree(be, dout), bfree(be, df);
    }
    tolspec t = {.tol = 1e-5, .scale = vmax, .nonfinite = S->nonfinite};
    if (S->ref) t.loose = 0x1p-7, t.loose_frac = 0.25;
    check_f32(names[layer], ro[0], ro[1], (size_t)T * H * hd, t);
    if (plant)
        for (size_t i = 0; i < (size_t)T * H * hd; i++) attn_planted_nan += !isfinite(ro[0][i]);
    state_check_sync(S, store[layer], EXACT);
    free(ro[0]), free(ro[1]);
    free(q), free(kv);
}

typedef struct {
    int slot, n;
} segdef;

/* Six steps of three sequences: prefills of 7..37 tokens next to decodes,
 * segments out of slot order, one sequence sitting a step out. */
static const segdef steps[][4] = {
    {{1, 13}, {0, 7}, {2, 1}, {-1, 0}}, {{0, 1}, {2, 30}, {1, 4}, {-1, 0}}, {{2, 1}, {0, 19}, {1, 11}, {-1, 0}},
    {{1, 1}, {0, 1}, {2, 1}, {-1, 0}},  {{0, 33}, {2, 2}, {-1, 0}},         {{1, 37}, {0, 3}, {2, 5}, {-1, 0}},
};

/* Sequences of ~600 tokens: the attention's decode kernels at 21-36 tokens a step over ~550-610 rows a query (a
 * 512-token window and the indexer's 96), as Flash's CSA layers see from a 4k context on (its 640 rows: 80 a part,
 * padded to 96; the scenarios above reach ~100 rows); last, one token alone (the one-pass attention's parts then
 * send their sums to the heads' owners by st.async: attn_run's PUSH). */
static const segdef steps_long[][4] = {
    {{0, 290}, {1, 250}, {-1, 0}},      {{0, 280}, {1, 300}, {2, 3}, {-1, 0}},
    {{0, 16}, {1, 9}, {2, 1}, {-1, 0}}, {{0, 1}, {1, 33}, {2, 2}, {-1, 0}},
    {{0, 20}, {1, 1}, {-1, 0}},         {{1, 1}, {-1, 0}},
};

/* Sequences of ~1,300 tokens over a 1,152-token window: ~1,230-1,250 rows a query (CSA: the window and the
 * indexer's 96; HCA: the window and ~80 compressed rows), parts of ~155 rows (padded to 176), as Flash's HCA layers
 * see from a ~130k context: what k_attn_one takes up to its shared memory's bound (AF_MAX_ROWS), one token a
 * sequence and two. */
static const segdef steps_longer[][4] = {
    {{0, 700}, {1, 640}, {-1, 0}},
    {{0, 600}, {1, 650}, {2, 2}, {-1, 0}},
    {{0, 1}, {1, 1}, {-1, 0}},
    {{0, 2}, {1, 1}, {2, 1}, {-1, 0}},
    {{1, 1}, {-1, 0}},
};

static void scenario_steps(const scen_cfg *c, bool ref, bool nonfinite, bool bf16, const segdef (*sdef)[4], int n_steps)
{
    case_begin("state %s (head_dim %d, %d heads, window %d, page %d, CSA 1/%d top-%d, HCA 1/%d)%s%s%s", c->name, c->hd,
               c->H, c->window, c->P, c->rc, c->topk, c->rh, ref ? " reference" : "", nonfinite ? " NaN/Inf" : "",
               bf16 ? ", BF16 rows" : "");
    scen S;
    scen_init(&S, c, ref, nonfinite, bf16);
    attn_planted_nan = 0;
    for (int st = 0; st < n_steps; st++) {
        dsv4_seg segs[4];
        int n_seg = 0, T = 0;
        for (int i = 0; i < 4 && sdef[st][i].slot >= 0; i++) {
            const int sl = sdef[st][i].slot, n = sdef[st][i].n;
            segs[n_seg++] = (dsv4_seg){.slot = sl, .pos0 = S.len[sl], .n = n, .t0 = T};
            T += n;
            /* the pages the step needs, as dsv4_step reserves them */
            const int64_t want = (S.len[sl] + n + c->P - 1) / c->P;
            while (S.n_seq_pages[sl] < want) {
                if (S.n_free == 0) fail_msg("test bug: page pool too small");
                S.page_table[(size_t)sl * S.kv[0].max_pages_per_seq + S.n_seq_pages[sl]++] = S.free_list[--S.n_free];
            }
        }
        int32_t *tok = malloc((size_t)T * 4), *tseg = malloc((size_t)T * 4);
        int64_t *pos = malloc((size_t)T * 8);
        for (int si = 0; si < n_seg; si++)
            for (int i = 0; i < segs[si].n; i++) {
                tok[segs[si].t0 + i] = rnd_int(50);
                pos[segs[si].t0 + i] = segs[si].pos0 + i;
                tseg[segs[si].t0 + i] = si;
            }
        dsv4_plan plan = {.n_tok = T, .n_seg = n_seg, .segs = segs, .tokens = tok, .pos = pos, .tok_seg = tseg};
        S.kv[0].pt_version = S.kv[1].pt_version = ++pt_versions; /* pages were reserved (and the kv is new) */
        for (int s = 0; s < 2; s++) side[s]->step_begin(side[s], &plan, &S.kv[s]);
        const bool plant = nonfinite && st == 2;
        int32_t *idx = calloc((size_t)T * c->topk, 4), *cnt = calloc((size_t)T, 4);
        for (int l = 0; l < NL; l++) {
            /* forward.c's order: indexer keys, rows, top-k, attention, ring */
            if (l == L_CSA) { /* odd steps: both in one compress_pair where the GPU has it */
                static const int both[2] = {C_IDX, C_CSA};
                run_compress_n(&S, &plan, both, 2, false, st & 1);
                run_indexer(&S, &plan, idx, cnt, plant);
            } else if (l == L_HCA) {
                run_compress(&S, &plan, C_HCA, plant);
            }
            run_attn(&S, &plan, l, idx, cnt, plant);
        }
        for (int si = 0; si < n_seg; si++) S.len[segs[si].slot] += segs[si].n;
        free(idx), free(cnt), free(tok), free(tseg), free(pos);
    }
    if (nonfinite && !attn_planted_nan) fail_line("harness", "the planted NaN/Inf reached no attention output");
    scen_free(&S);
    case_end();
}

static void scenario_rows(const scen_cfg *c, bool ref, bool nonfinite, bool bf16)
{
    scenario_steps(c, ref, nonfinite, bf16, steps, (int)(sizeof steps / sizeof steps[0]));
}

static void scenario(const scen_cfg *c, bool ref, bool nonfinite)
{
    scenario_rows(c, ref, nonfinite, false);
}

static const scen_cfg cfg_small = {"small", .hd = 90, .H = 3,    .rope = 16, .window = 5, .P = 24,
                                   .rc = 4, .rh = 8,  .topk = 5, .nI = 3,    .dI = 64,    .max_ctx = 96};
static const scen_cfg cfg_wide = {"wide",  .hd = 300, .H = 2,    .rope = 64, .window = 7, .P = 32,
                                  .rc = 4, .rh = 16,  .topk = 3, .nI = 5,    .dI = 128,   .max_ctx = 96};

/* Heads in partial groups of 16 and a head_dim of whole 32s but not 64s;
 * Flash's attention shape (64 heads of 512). In reference numerics both take
 * the tensor cores on the GPU (k_attn_qk / k_attn_pv), in plain numerics the
 * FP32 heads-together kernels; the steps' 1 to 45 tokens cross both kernels'
 * small-batch shapes (16-row score tiles and 16-dimension slices up to 4
 * tokens). */
static const scen_cfg cfg_heads = {"heads", .hd = 96, .H = 20,   .rope = 32, .window = 9, .P = 32,
                                   .rc = 4, .rh = 8,  .topk = 6, .nI = 3,    .dI = 64,    .max_ctx = 96};
static const scen_cfg cfg_flash = {"flash", .hd = 512, .H = 64,   .rope = 64, .window = 16, .P = 32,
                                   .rc = 4, .rh = 16,  .topk = 8, .nI = 4,    .dI = 128,   .max_ctx = 96};
/* Heads in partial groups of 16 with a head_dim of whole 128s and up to ~90 rows a query: the weighted sum on
 * wgmma (wg64 / wg128) with heads past H in its M (zero weights), over several stages of its ring */
static const scen_cfg cfg_heads128 = {"heads128", .hd = 128, .H = 20,    .rope = 32, .window = 70, .P = 32,
                                      .rc = 4,    .rh = 8,   .topk = 24, .nI = 3,    .dI = 64,     .max_ctx = 96};
/* steps_long's: ~600 rows a query (CSA: 512 window rows and the indexer's 96) */
static const scen_cfg cfg_long = {"long",  .hd = 128, .H = 20,    .rope = 32, .window = 512, .P = 64,
                                  .rc = 4, .rh = 16,  .topk = 96, .nI = 3,    .dI = 64,      .max_ctx = 640};
/* steps_longer's */
static const scen_cfg cfg_longer = {"longer", .hd = 128, .H = 20,    .rope = 32, .window = 1152, .P = 64,
                                    .rc = 4,  .rh = 16,  .topk = 96, .nI = 3,    .dI = 64,       .max_ctx = 1408};

/* The GPU side's attention layout (backend.h): the first layout (one block
 * per (token, head): the benchmark baseline and the path for shapes beyond 64
 * heads of 512), the FP32 heads-together kernels, or the default. */
static void attn_layout(int layout)
{
    attn_layout_now = layout;
#ifdef DSV4_HAVE_CUDA
    if (!selftest) dsv4_cuda_attn_layout(layout);
#else
    (void)layout;
#endif
}

static void test_state_plain(void **state)
{
    scenario(&cfg_small, false, false);
    scenario(&cfg_wide, false, false);
    scenario(&cfg_heads, false, false);
    attn_layout(DSV4_ATTN_LAYOUT_NAIVE);
    scenario(&cfg_small, false, false);
    attn_layout(DSV4_ATTN_LAYOUT_AUTO);
    assert_int_equal(n_fail, 0);
}

static void test_state_reference(void **state)
{
    scenario(&cfg_small, true, false);
    scenario(&cfg_wide, true, false);
    scenario(&cfg_heads, true, false);
    scenario(&cfg_flash, true, false);
    attn_layout(DSV4_ATTN_LAYOUT_FP32);
    scenario(&cfg_heads, true, false);
    attn_layout(DSV4_ATTN_LAYOUT_NAIVE);
    scenario(&cfg_wide, true, false);
    attn_layout(DSV4_ATTN_LAYOUT_AUTO);
    assert_int_equal(n_fail, 0);
}

/* Reference numerics' cached rows as BF16 (dsv4_kv.bf16_rows: window ring, compressed rows, indexer keys) on
 * both backends: odd widths (rows not 8-byte aligned), every attention layout, the tensor-core indexer's and
 * the CUDA-core one's keys (64 and 128 wide), NaN/Inf. */
static void test_state_bf16_rows(void **state)
{
    scenario_rows(&cfg_small, true, false, true);
    scenario_rows(&cfg_wide, true, false, true);
    scenario_rows(&cfg_heads, true, false, true);
    scenario_rows(&cfg_flash, true, false, true);
    scenario_rows(&cfg_heads128, true, false, true);
    scenario_steps(&cfg_long, true, false, true, steps_long, (int)(sizeof steps_long / sizeof steps_long[0]));
    scenario_steps(&cfg_longer, true, false, true, steps_longer, (int)(sizeof steps_longer / sizeof steps_longer[0]));
    scenario_rows(&cfg_heads, true, true, true);
    attn_layout(DSV4_ATTN_LAYOUT_FP32);
    scenario_rows(&cfg_heads, true, false, true);
    scenario_rows(&cfg_small, true, false, true);
    attn_layout(DSV4_ATTN_LAYOUT_NAIVE);
    scenario_rows(&cfg_wide, true, false, true);
    attn_layout(DSV4_ATTN_LAYOUT_AUTO);
    assert_int_equal(n_fail, 0);
}

static void test_state_nonfinite(void **state)
{
    scenario(&cfg_small, false, true);
    scenario(&cfg_heads, true, true);
    assert_int_equal(n_fail, 0);
}

/* The indexer's top-k over thousands of candidates (the scenarios above have
 * a few dozen): small-integer queries, keys and weights with a power-of-two
 * scale, so every score is exact in any summation order and both backends
 * must pick exactly the same indices - with many exact ties (ties go to the
 * lower index) and equal keys repeated across the context. Sequences at
 * positions 139,995 (34,999 candidates: more than the 32,768 the GPU's
 * top-k orders at a time; odd, so every other token's scores start off 16
 * bytes), 132,999 (33,250: a last chunk of at most 1,024, which one warp
 * orders), 19,999 (5,000), 2,999 (750), 99 (25: fewer than top-k), and
 * 1,024 / 1,500 / 2,048 / 3,001 / 4,096 / 4,097 / 8,192 / 8,193 candidates
 * (the top-k's small path on 8, 16 and 32 warps with four keys a thread,
 * then eight - 4,097 to 8,192 - its keys by 16-byte loads or one by one, and
 * just past it), pages handed out in scrambled order. */
static void indexer_large(bool ref, bool fp4, int dI)
{
    case_begin("indexer_topk, 34,999 / 33,250 / 5,000 / 750 / 25 / 1,024-8,193 candidates, top-512, exact ties%s%s, "
               "keys of %d",
               ref ? ", reference" : "", fp4 ? ", FP4 keys" : "", dI);
    enum { T = 13 };
    const int nI = 4, ratio = 4, K = 512, P = 256;
    int64_t posv[T] = {139995, 132999, 19999, 2999, 99, 4095, 5999, 8191, 12003, 16383, 16387, 32767, 32771};
    dsv4_layer_state ls;
    memset(&ls, 0, sizeof ls);
    dsv4_kv kv[2];
    memset(kv, 0, sizeof kv);
    const int maxp = (int)(posv[0] / P + 2);
    int32_t *pt = malloc((size_t)T * maxp * 4);
    for (int i = 0; i < T * maxp; i++) pt[i] = (int32_t)((i * 37 + 11) % (T * maxp)); /* a permutation */
    size_t page_floats = (size_t)(P / ratio) * dI, nf = (size_t)T * maxp * page_floats;
    float *keys = malloc(nf * 4);
    for (size_t i = 0; i < nf; i++) keys[i] = (float)(rnd_int(7) - 3);
    for (size_t r = 300; r < nf / dI; r += 3) /* every third key a copy of an earlier one: exact ties */
        memcpy(keys + r * dI, keys + (r - 300 + (r % 7)) * dI, (size_t)dI * 4);
    if (fp4) { /* the keys as codes and scales (dsv4_kv.fp4_keys; small integers are FP4SIM32's fixed points) */
        dsv4_kv lay = {.fp4_keys = true};
        const int rows = P / ratio;
        const size_t pf = dsv4_kv_idx_floats(&lay, rows, dI), np = (size_t)T * maxp;
        float *packed = calloc(np * pf, 4);
        for (size_t pg = 0; pg < np; pg++)
            for (int r = 0; r < rows; r++) {
                float *k = keys + (pg * rows + r) * dI;
                uint8_t *base = (uint8_t *)(packed + pg * pf);
                for (int b = 0; b < dI; b += 32) {
                    float v[32];
                    memcpy(v, k + b, sizeof v);
                    dsv4_fp4sim(v, 32, 32);
                    assert_memory_equal(v, k + b, sizeof v);
                    assert_true(dsv4_fp4_pack(v, 32, base + (size_t)r * (dI / 2) + b / 2,
                                              base + (size_t)rows * (dI / 2) + (size_t)r * (dI / 32) + b / 32));
                }
            }
        free(keys);
        keys = packed, page_floats = pf, nf = np * pf;
    }
    float *q = malloc((size_t)T * nI * dI * 4), *w = malloc((size_t)T * nI * 4);
    for (int i = 0; i < T * nI * dI; i++) q[i] = (float)(rnd_int(7) - 3);
    for (int i = 0; i < T * nI; i++) w[i] = (float)(rnd_int(5) - 2);
    dsv4_seg segs[T];
    int32_t tok[T] = {0}, tseg[T];
    for (int t = 0; t < T; t++) tseg[t] = t;
    for (int t = 0; t < T; t++) segs[t] = (dsv4_seg){.slot = t, .pos0 = posv[t], .n = 1, .t0 = t};
    dsv4_plan plan = {.n_tok = T, .n_seg = T, .segs = segs, .tokens = tok, .pos = posv, .tok_seg = tseg};
    dsv4_indexer_params p = {.layer = 0,
                             .ratio = ratio,
                             .n_heads = nI,
                             .head_dim = dI,
                             .topk = K,
                             .scale = dI == 64 ? 1.0f / 16.0f : 1.0f / 32.0f, /* powers of two: exact */
                             .reference = ref};
    int32_t *ri[2], *rc[2];
    for (int sd = 0; sd < 2; sd++) {
        dsv4_backend *be = side[sd];
        kv[sd] = (dsv4_kv){.max_seqs = T,
                           .max_ctx = posv[0] + 1,
                           .page_tokens = P,
                           .max_pages_per_seq = maxp,
                           .n_pages = (int64_t)T * maxp,
                           .page_floats = page_floats,
                           .fp4_keys = fp4,
                           .layer = &ls,
                           .page_table = pt,
                           .pt_version = ++pt_versions};
        kv[sd].pages = bdup(be, keys, nf * 4);
        be->step_begin(be, &plan, &kv[sd]);
        float *dq = bdup(be, q, (size_t)T * nI * dI * 4), *dw = bdup(be, w, (size_t)T * nI * 4);
        int32_t *di = bpoison(be, (size_t)T * K * 4), *dc = bpoison(be, (size_t)T * 4);
        be->indexer_topk(be, &p, &plan, &kv[sd], dq, dw, di, dc);
        ri[sd] = bhost(be, di, (size_t)T * K * 4);
        rc[sd] = bhost(be, dc, (size_t)T * 4);
#ifdef DSV4_HAVE_CUDA
        if (sd == 1 && !selftest) { /* the top-k reading the scores from global memory: for every token, then for
                                     * some; then the general path for every count (no small path), one block a
                                     * token (the default below 49,152 candidates), and every token past the small
                                     * path as a cluster of 8 (slices of 4,375 candidates at most), 4 or 2 blocks:
                                     * with 3,000 keys a block in shared memory (some slices) or none */
            static const struct {
                int64_t cap;    /* dsv4_cuda_indexer_topk_cap */
                int small;      /* dsv4_cuda_indexer_topk_small */
                int cl;         /* dsv4_cuda_indexer_topk_cluster */
                int64_t cl_min; /* dsv4_cuda_indexer_topk_cluster_min */
                const char *what;
            } vs[] = {
                {0, -1, -1, -1, "with no keys in shared memory"},
                {6000, -1, -1, -1, "with 6,000 keys in shared memory"},
                {-1, 0, -1, -1, "without its small path"},
                {-1, -1, 0, -1, "in one block a token"},
                {-1, 0, 0, -1, "in one block a token without its small path"},
                {3000, -1, 8, -1, "as clusters of 8 with 3,000 keys a block in shared memory"},
                {-1, -1, 2, -1, "as clusters of 2"},
                {-1, 0, 4, -1, "as clusters of 4 without its small path"},
                {0, -1, 2, -1, "as clusters of 2 with no keys in shared memory"},
                {-1, -1, 8, -1, "as clusters of 8"},
                {-1, -1, 1, 34000, "as clusters of 8 past 34,000 candidates, their first block's below"},
            };
            const int nv = (int)(sizeof vs / sizeof vs[0]);
            for (int vi = 0; vi < nv; vi++) {
                dsv4_cuda_indexer_topk_cap(vs[vi].cap);
                dsv4_cuda_indexer_topk_small(vs[vi].small);
                dsv4_cuda_indexer_topk_cluster(vs[vi].cl);
                dsv4_cuda_indexer_topk_cluster_min(vs[vi].cl_min);
                be->indexer_topk(be, &p, &plan, &kv[sd], dq, dw, di, dc);
                dsv4_cuda_indexer_topk_cap(-1);
                dsv4_cuda_indexer_topk_small(-1);
                dsv4_cuda_indexer_topk_cluster(-1);
                dsv4_cuda_indexer_topk_cluster_min(-1);
                int32_t *rg = bhost(be, di, (size_t)T * K * 4);
                if (memcmp(rg, ri[sd], (size_t)T * K * 4))
                    fail_line("indexer_topk (large): idx", "the top-k %s differs", vs[vi].what);
                free(rg);
            }
            case_checks += nv;
            if (ref) { /* queries off 16-byte alignment: the CUDA-core scores instead of the tensor cores */
                float *dq1 = bnew(be, ((size_t)T * nI * dI + 1) * 4);
                be->upload(be, dq1 + 1, q, (size_t)T * nI * dI * 4);
                be->indexer_topk(be, &p, &plan, &kv[sd], dq1 + 1, dw, di, dc);
                int32_t *rg = bhost(be, di, (size_t)T * K * 4);
                if (memcmp(rg, ri[sd], (size_t)T * K * 4))
                    fail_line("indexer_topk (large): idx", "the CUDA-core scores choose otherwise than the tensor cores");
                free(rg);
                bfree(be, dq1);
                case_checks++;
            }
        }
#endif
        bfree(be, dq), bfree(be, dw), bfree(be, di), bfree(be, dc), bfree(be, kv[sd].pages);
    }
    check_i32("indexer_topk (large): cnt", rc[0], rc[1], (size_t)T);
    for (int t = 0; t < T; t++) {
        const int64_t N = (posv[t] + 1) / ratio;
        const int want = N < K ? (int)N : K;
        if (rc[0][t] != want) fail_line("indexer_topk (large): cnt (cpu)", "token %d: %d, expected %d", t, rc[0][t], want);
        check_i32("indexer_topk (large): idx", ri[0] + (size_t)t * K, ri[1] + (size_t)t * K, (size_t)want);
    }
    case_checks += 1 + T;
    free(ri[0]), free(ri[1]), free(rc[0]), free(rc[1]), free(pt), free(keys), free(q), free(w);
    case_end();
}

static void test_indexer_large(void **state)
{
    indexer_large(false, false, 64);
    indexer_large(true, false, 64);
    indexer_large(true, true, 64);
    indexer_large(true, true, 128); /* the scales staged with the codes (a multiple of 128 wide) */
    assert_int_equal(n_fail, 0);
}

/* ==== the harness itself ================================================== */

/* Broken ops: each must be caught. They wrap a second CPU backend. */
static dsv4_backend *real;
static void bad_linear(dsv4_backend *be, const dsv4_w *w, const float *x, int ldx, int n, float *y, int ldy)
{
    real->linear(be, w, x, ldx, n > 1 ? n - 1 : n, y, ldy); /* leaves the last token unwritten */
}
static void bad_linear_value(dsv4_backend *be, const dsv4_w *w, const float *x, int ldx, int n, float *y, int ldy)
{
    real->linear(be, w, x, ldx, n, y, ldy);
    y[0] += 0.01f; /* CPU memory */
}
static void bad_swiglu(dsv4_backend *be, const float *g, const float *u, size_t n, float limit, float *m,
                       unsigned rnd)
{
    real->swiglu(be, g, u, n, 0.0f, m, rnd); /* ignores the clamp */
}
static void bad_rope(dsv4_backend *be, float *x, int n_tok, int n_heads, int ld_tok, int head_dim, int rope_dim,
                     const int64_t *pos, const float *freqs, bool inverse, unsigned rnd)
{
    real->rope(be, x, n_tok, n_heads, ld_tok, head_dim, rope_dim, pos, freqs, !inverse, rnd);
}
static void bad_kv_store(dsv4_backend *be, int layer, int window, int head_dim, const dsv4_plan *plan, dsv4_kv *kv,
                         const float *kv_new)
{
}
static void bad_attn(dsv4_backend *be, const dsv4_attn_params *p, const dsv4_plan *plan, const dsv4_kv *kv,
                     const float *q, const float *kv_new, const int32_t *idx, const int32_t *cnt, float *out)
{
    dsv4_attn_params p2 = *p;
    p2.reference = !p->reference;
    real->attn(be, &p2, plan, kv, q, kv_new, idx, cnt, out);
}
static void bad_indexer(dsv4_backend *be, const dsv4_indexer_params *p, const dsv4_plan *plan, const dsv4_kv *kv,
                        const float *q, const float *w, int32_t *idx, int32_t *cnt)
{
    dsv4_indexer_params p2 = *p;
    p2.topk = p->topk > 1 ? p->topk - 1 : 1;
    real->indexer_topk(be, &p2, plan, kv, q, w, idx, cnt);
}
/* Not broken: the CPU's scores, exact ties going to the higher index. The
 * choices differ from the CPU's only between equal scores: accepted. */
static int ties_reversed;
static void ties_indexer(dsv4_backend *be, const dsv4_indexer_params *p, const dsv4_plan *plan, const dsv4_kv *kv,
                         const float *q, const float *w, int32_t *idx, int32_t *cnt)
{
    for (int t = 0; t < plan->n_tok; t++) {
        const int N = (int)((plan->pos[t] + 1) / p->ratio), k = N < p->topk ? N : p->topk;
        float *sc = malloc((size_t)(N > 0 ? N : 1) * sizeof(float));
        bool *taken = calloc((size_t)(N > 0 ? N : 1), sizeof(bool));
        double mag;
        for (int c = 0; c < N; c++) sc[c] = cpu_index_score(kv, p, plan, q, w, t, c, &mag);
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int c = N - 1; c >= 0; c--)
                if (!taken[c] && (best < 0 || sc[c] > sc[best])) best = c;
            for (int c = 0; c < best; c++) ties_reversed += !taken[c] && sc[c] == sc[best];
            taken[best] = true;
        }
        for (int c = 0, m = 0; c < N; c++)
            if (taken[c]) idx[(size_t)t * p->topk + m++] = c;
        cnt[t] = k;
        free(sc);
        free(taken);
    }
}
static void bad_compress(dsv4_backend *be, const dsv4_compress_params *p, const dsv4_plan *plan, dsv4_kv *kv,
                         const float *a, const float *g)
{
    dsv4_compress_params p2 = *p;
    p2.norm_eps = 1e-2f;
    real->compress(be, &p2, plan, kv, a, g);
}
static void bad_moe(dsv4_backend *be, const dsv4_moe_params *p, const float *x, int n, const int32_t *idx,
                    const float *wts, float *out)
{
    dsv4_moe_params p2 = *p;
    p2.reference = !p->reference;
    real->moe_experts(be, &p2, x, n, idx, wts, out);
}

/* Run fn against a backend with one op replaced; it must record failures. */
static void expect_caught(const char *what, dsv4_backend *broken, void (*fn)(void))
{
    dsv4_backend *saved = side[1];
    side[1] = broken;
    const int before = n_fail, cases = case_no;
    quiet = true;
    fn();
    quiet = false;
    const int caught = n_fail - before;
    n_fail = before;
    case_no = cases;
    side[1] = saved;
    printf("harness: %-58s %s (%d failed checks)\n", what, caught ? "caught" : "NOT CAUGHT", caught);
    if (!caught) n_fail++;
}

static void run_lin(void)
{
    const lin_spec c = {WK_FP8_E8M0, 7, 150, 300, 128, 128, .ypad = 3};
    linear_case(&c);
}
static void run_swiglu(void)
{
    swiglu_case(300, 7.0f, false, false, 0);
}
static void run_rope(void)
{
    rope_case(7, 3, 90, 16, 5, false, true, false, 0);
}
static void run_state(void)
{
    scenario(&cfg_small, false, false);
}
static void run_state_ref(void)
{
    scenario(&cfg_small, true, false);
}
static void run_state_ref_ties(void)
{
    ties_reversed = 0;
    scenario(&cfg_small, true, false);
    printf("harness: %-58s %d ties went the other way, %d accepted as near-ties\n",
           "indexer_topk breaking ties the other way", ties_reversed, case_ties);
    if (!ties_reversed || !case_ties) fail_line("harness", "the tie-breaking case was not exercised");
}
static void run_moe_ref(void)
{
    const moe_spec c = {WK_BF16, 7, 129, 37, 7, 3, 7.0f, .ref = true};
    moe_experts_case(&c);
}

static void test_harness(void **state)
{
    /* the comparison on hand-made results */
    case_begin("harness: comparisons on hand-made results");
    quiet = true;
    float r[100], g[100];
    for (int i = 0; i < 100; i++) r[i] = g[i] = dsv4_round_bf16((float)(i - 50) * 0.37f);
    const tolspec t5 = {.tol = 1e-5};
    struct {
        const char *what;
        int idx;
        float val;
        tolspec t;
        bool pass;
    } cs[] = {
        {"identical", -1, 0, t5, true},
        {"within tolerance", 10, 0, t5, true},
        {"over tolerance", 10, 0, t5, false},
        {"NaN where the CPU is finite", 20, NAN, t5, false},
        {"the poison (unwritten) where the CPU is finite", 21, 0, t5, false},
        {"Inf where the CPU is finite, non-finite allowed", 22, INFINITY, {.tol = 1e-5, .nonfinite = true}, false},
        {"not BF16-exact", 23, 0, {.tol = 1e-2, .bf16 = true}, false},
        {"one loose element of 100 allowed 5%", 10, 0, {.tol = 1e-6, .loose = 1e-3, .loose_frac = 0.05}, true},
        {"beyond the loose bound", 10, 0, {.tol = 1e-6, .loose = 1e-5, .loose_frac = 0.05}, false},
    };
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        memcpy(g, r, sizeof g);
        if (cs[k].idx >= 0) g[cs[k].idx] = cs[k].val;
        if (k == 1) g[10] = r[10] * (1 + 5e-6f);
        if (k == 2 || k == 8) g[10] = r[10] * (1 + 3e-5f);
        if (k == 4) memcpy(&g[21], &(uint32_t){POISON}, 4);
        if (k == 6) g[23] = r[23] * (1 + 1e-5f);
        if (k == 7) g[10] = r[10] * (1 + 1e-4f);
        const int before = n_fail;
        check_f32(cs[k].what, r, g, 100, cs[k].t);
        const bool passed = n_fail == before;
        n_fail = before;
        if (passed != cs[k].pass) {
            quiet = false;
            fail_line(cs[k].what, "the comparison %s", passed ? "passed" : "failed");
            quiet = true;
        }
    }
    /* NaN / Inf placement with non-finite inputs */
    float a[4] = {NAN, INFINITY, 1.0f, -INFINITY}, b[4] = {NAN, INFINITY, 1.0f, -INFINITY};
    int before = n_fail;
    check_f32("same NaN/Inf places", a, b, 4, EXACT_NF);
    bool ok1 = n_fail == before;
    b[3] = INFINITY;
    check_f32("Inf of the other sign", a, b, 4, EXACT_NF);
    bool ok2 = n_fail == before + 1;
    b[3] = -INFINITY, b[2] = NAN;
    check_f32("NaN where the CPU has a number", a, b, 4, EXACT_NF);
    bool ok3 = n_fail == before + 2;
    b[2] = 1.0f, b[0] = 2.0f;
    check_f32("a number where the CPU has NaN", a, b, 4, EXACT_NF);
    bool ok4 = n_fail == before + 3;
    float pad[6];
    fill_poison(pad, sizeof pad);
    pad[5] = 0;
    check_pad("a written gap", pad, 2, 2, 3);
    bool ok5 = n_fail == before + 4;
    n_fail = before;
    quiet = false;
    if (!ok1 || !ok2 || !ok3 || !ok4 || !ok5) fail_line("non-finite placement", "%d%d%d%d%d", ok1, ok2, ok3, ok4, ok5);
    case_end();

    /* broken ops against a second CPU backend */
    real = dsv4_backend_cpu_create(2);
    dsv4_backend broken = *real;
    broken.linear = bad_linear;
    expect_caught("linear that skips its last token", &broken, run_lin);
    broken = *real, broken.linear = bad_linear_value;
    expect_caught("linear with one output off by 0.01", &broken, run_lin);
    broken = *real, broken.swiglu = bad_swiglu;
    expect_caught("swiglu without its clamp", &broken, run_swiglu);
    broken = *real, broken.rope = bad_rope;
    expect_caught("rope rotating the wrong way", &broken, run_rope);
    broken = *real, broken.kv_store = bad_kv_store;
    expect_caught("kv_store that stores nothing", &broken, run_state);
    broken = *real, broken.compress = bad_compress;
    expect_caught("compress with the wrong norm eps", &broken, run_state);
    broken = *real, broken.indexer_topk = bad_indexer;
    expect_caught("indexer_topk keeping one too few", &broken, run_state);
    broken = *real, broken.indexer_topk = ties_indexer;
    {
        dsv4_backend *saved = side[1];
        const int cases = case_no, fails0 = n_fail;
        side[1] = &broken;
        quiet = true;
        run_state_ref_ties();
        quiet = false;
        side[1] = saved;
        case_no = cases;
        if (n_fail != fails0)
            printf("harness: the tie-breaking indexer was REJECTED (%d failed checks)\n", n_fail - fails0);
    }
    broken = *real, broken.attn = bad_attn;
    expect_caught("attn ignoring reference numerics", &broken, run_state_ref);
    broken = *real, broken.moe_experts = bad_moe;
    expect_caught("moe_experts ignoring reference numerics", &broken, run_moe_ref);
    real->destroy(real);
    real = NULL;
    assert_int_equal(n_fail, 0);
}

static int reset_failures(void **state)
{
    n_fail = 0;
    return 0;
}

/* The tensor-core kernels' weight decoders (E2M1 -> BF16 through byte
 * tables, E2M1 -> E4M3 -> F16 and the E8M0 scales by byte placement of the
 * experts' F16 path, E4M3 -> F16) against quant.h's, on the GPU, for every code;
 * and the F16 path's FP4 layout (fp4_pack_word) decoded back to the same E4M3
 * words, for every 16-bit half and scattered whole words. */
static void test_decoders(void **state)
{
    (void)state;
#ifdef DSV4_HAVE_CUDA
    if (!selftest) {
        const int bad = dsv4_cuda_decode_check();
        printf("decoders: %d mismatches over every E2M1 code (BF16 at 4 scales, F16, the F16 path's layout), E8M0 byte "
               "and E4M3 pair\n",
               bad);
        assert_int_equal(bad, 0);
    }
#endif
}

int main(void)
{
    const char *st = getenv("DSV4_OPS_SELFTEST");
    selftest = st && *st && strcmp(st, "0") != 0;
    const char *sd = getenv("DSV4_OPS_SEED");
    if (sd && *sd) base_seed = strtoull(sd, NULL, 0);
    if (!selftest) {
#ifndef DSV4_HAVE_CUDA
        printf("test_ops_cuda: this build has no CUDA backend: skipped (DSV4_OPS_SELFTEST=1 checks the harness, "
               "CPU against CPU)\n");
        return 77;
#else
        if (dsv4_cuda_device_count() <= 0) {
            printf("test_ops_cuda: no CUDA device: skipped (DSV4_OPS_SELFTEST=1 checks the harness, CPU against "
                   "CPU)\n");
            return 77;
        }
#endif
    }
    side[0] = dsv4_backend_cpu_create(1);
    if (selftest) {
        side[1] = dsv4_backend_cpu_create(2);
    } else {
#ifdef DSV4_HAVE_CUDA
        char err[256];
        side[1] = dsv4_backend_cuda_create(0, err, sizeof err);
        if (!side[1]) {
            printf("test_ops_cuda: %s: skipped\n", err);
            side[0]->destroy(side[0]);
            return 77;
        }
#endif
    }
    if (!side[0] || !side[1]) {
        printf("test_ops_cuda: cannot create the backends\n");
        return 1;
    }
    printf("test_ops_cuda: %s (%s) against the CPU reference (%s); base seed %llu (DSV4_OPS_SEED), case seed = base "
           "+ case number\n",
           selftest ? "a second CPU backend, DSV4_OPS_SELFTEST" : side[1]->name, side[1]->device, side[0]->device,
           (unsigned long long)base_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_harness, reset_failures),
        cmocka_unit_test(test_decoders),
        cmocka_unit_test_setup(test_embed, reset_failures),
        cmocka_unit_test_setup(test_linear, reset_failures),
        cmocka_unit_test_setup(test_norms_rope, reset_failures),
        cmocka_unit_test_setup(test_elementwise, reset_failures),
        cmocka_unit_test_setup(test_hc, reset_failures),
        cmocka_unit_test_setup(test_moe, reset_failures),
        cmocka_unit_test_setup(test_state_plain, reset_failures),
        cmocka_unit_test_setup(test_state_reference, reset_failures),
        cmocka_unit_test_setup(test_state_bf16_rows, reset_failures),
        cmocka_unit_test_setup(test_state_nonfinite, reset_failures),
        cmocka_unit_test_setup(test_indexer_large, reset_failures),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    side[1]->destroy(side[1]);
    side[0]->destroy(side[0]);
    return rc;
}
