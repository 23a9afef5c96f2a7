/*
 * bench_kernels.c - the decode kernels of the CUDA backend on DeepSeek-V4-Flash
 * shapes, each beside the device-to-device copy bandwidth measured in the same
 * run (METHOD.md: bytes read plus bytes written over the time).
 *
 *   build/bench_kernels [--batch 1,8,16,64] [--reps N] [--json FILE] [--contexts 4096,32768,131072]
 *                       [--attn-only | --linear-only | --sample-only | --experts-only]
 *
 * Batches above 64 (prefill: --linear-only --batch 1024,4096) time the linears
 * only (not the LM head) and report their TFLOP/s as well; the decode tables
 * (attention, indexer, hyper-connections, sampling, routed experts) leave them out.
 *
 * For every weight shape of a Flash layer (FP8 projections, the BF16 LM head,
 * the F32 hyper-connection mixer) and every batch: the linear op on B token
 * rows, timed over N back-to-back launches on rotating weight copies (more
 * than the L2 cache, so the weights come from HBM); then the routed experts
 * (256 MXFP4 experts, top-6 random routing) on B tokens, whose bytes are the
 * experts the batch touches. Reports microseconds per call, GB/s of weight
 * bytes and that as a share of the copy bandwidth. Then sparse attention
 * decode (one layer, B sequences at context C: CSA = window 128 + the top 512
 * of C/4 compressed rows, HCA = window + C/128 rows, 64 heads of 512), the
 * split kernels beside the naive layout (one block per (token, head)) in the
 * same run; its bytes are the rows each sequence reads (--contexts: at those C, with no indexer table after
 * it). Last, the tensor cores'
 * rate (BF16 and FP8 mma.sync, no memory traffic). Exit 77 without a GPU.
 * DSV4_TUNE=FILE: the attention's kernel choices from a `dsv4 tune` file (as
 * dsv4 serve takes them) instead of the built-in ones.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "engine/sample.h"
#include "engine/state.h"
#include "engine/tune.h"

#ifdef DSV4_HAVE_CUDA

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

/* Random bytes for a format: FP8 codes never NaN, scales near 2^-7. */
static void fill_bytes(uint8_t *p, size_t n, int fp8)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = rnd();
        for (size_t k = 0; k < 8 && i + k < n; k++) {
            uint8_t b = (uint8_t)(r >> (8 * k));
            if (fp8 && (b & 0x7f) == 0x7f) b ^= 1;
            p[i + k] = b;
        }
    }
}

typedef struct {
    const char *name;
    dsv4_wfmt fmt;
    dsv4_dtype dtype;
    int64_t rows, cols;
} shape;

/* A weight of shape s in backend memory (host bytes random, shared). */
static int make_weight(dsv4_backend *be, const shape *s, dsv4_w *w, uint8_t *host, uint8_t *scales)
{
    memset(w, 0, sizeof *w);
    w->name = s->name;
    w->fmt = s->fmt;
    w->dtype = s->dtype;
    w->ndim = 2;
    w->ne[0] = s->rows;
    w->ne[1] = s->cols;
    w->host = host;
    if (s->fmt == DSV4_WF_FP8) {
        w->block_rows = w->block_cols = 128;
        w->scale_cols = (s->cols + 127) / 128;
        w->scale_dtype = DSV4_DT_F8_E8M0;
        w->scale = scales;
    } else if (s->fmt == DSV4_WF_MXFP4) {
        w->scale_cols = s->cols / 32;
        w->scale_dtype = DSV4_DT_F8_E8M0;
        w->scale = scales;
    }
    char err[256];
    if (be->weight_load(be, w, err, sizeof err) != DSV4_OK) {
        fprintf(stderr, "bench_kernels: %s: %s\n", s->name, err);
        return -1;
    }
    return 0;
}

static size_t weight_bytes(const shape *s)
{
    size_t n = (size_t)s->rows * s->cols;
    switch (s->fmt) {
    case DSV4_WF_FP8: return n + (size_t)((s->rows + 127) / 128) * ((s->cols + 127) / 128);
    case DSV4_WF_MXFP4: return n / 2 + (size_t)s->rows * (s->cols / 32);
    default: return n * dsv4_dtype_size(s->dtype);
    }
}

/* Copies of one shape's weight, enough to hold more than the 50 MB L2 between them (the timings rotate over
 * them: every call reads DRAM), from one set of random host bytes. */
typedef struct {
    dsv4_w w[16];
    int n;
    uint8_t *host, *sc;
} copies;

static void copies_free(dsv4_backend *be, copies *c)
{
    for (int i = 0; i < c->n; i++) {
        be->free(be, c->w[i].dev);
        if (c->w[i].dev_scale) be->free(be, c->w[i].dev_scale);
    }
    free(c->host), free(c->sc);
    c->n = 0, c->host = c->sc = NULL;
}

/* 0, or -1 with nothing held (a weight that failed to load said why) */
static int copies_make(dsv4_backend *be, const shape *s, copies *c)
{
    const size_t wb = weight_bytes(s), hb = (size_t)s->rows * s->cols * 4,
                 nsc = (size_t)s->rows * (s->cols / 32 + 1) + 64;
    int nc = (int)(200e6 / (double)wb) + 1;
    if (nc > 16) nc = 16;
    c->n = 0, c->host = malloc(hb), c->sc = malloc(nsc);
    if (!c->host || !c->sc) {
        copies_free(be, c);
        return -1;
    }
    fill_bytes(c->host, hb, s->fmt == DSV4_WF_FP8);
    for (size_t i = 0; i < nsc; i++) c->sc[i] = (uint8_t)(120 + rnd() % 4);
    if (s->fmt == DSV4_WF_FLOAT) /* finite floats: small values */
        for (size_t i = 0; i < hb; i += dsv4_dtype_size(s->dtype)) {
            if (s->dtype == DSV4_DT_F32) {
                float v = (float)((int)(rnd() % 2001) - 1000) * 1e-5f;
                memcpy(c->host + i, &v, 4);
            } else {
                c->host[i] = 0;
                c->host[i + 1] = (uint8_t)(0x3a + (rnd() & 1)) | (rnd() & 0x80);
            }
        }
    for (; c->n < nc; c->n++)
        if (make_weight(be, s, &c->w[c->n], c->host, c->sc)) { /* copies 0 .. n - 1 loaded */
            copies_free(be, c);
            return -1;
        }
    return 0;
}

static void sync(dsv4_backend *be, void *dev)
{
    float x;
    be->download(be, &x, dev, sizeof x);
}

/* Microseconds per call of the linear op on B token rows: one call on each of the nc weight copies, then reps
 * back to back rotating over them (more bytes than L2 holds). */
/* max |a - b| / max |b| over n values (infinite where a is not finite) */
static double max_rel_diff(const float *a, const float *b, size_t n)
{
    double dm = 0, ym = 0;
    for (size_t i = 0; i < n; i++) {
        dm = fmax(dm, fabs((double)a[i] - b[i])), ym = fmax(ym, fabs((double)b[i]));
        if (!isfinite(a[i])) dm = INFINITY;
    }
    return ym > 0 ? dm / ym : dm;
}

static double linear_us(dsv4_backend *be, const shape *s, const dsv4_w *w, int nc, const float *x, int B, float *y,
                        int reps)
{
    for (int c = 0; c < nc; c++) be->linear(be, &w[c], x, (int)s->cols, B, y, (int)s->rows);
    sync(be, y);
    const double t = now_s();
    for (int r = 0; r < reps; r++) be->linear(be, &w[r % nc], x, (int)s->cols, B, y, (int)s->rows);
    sync(be, y);
    return (now_s() - t) / reps * 1e6;
}

/* linear_us for a launch of G row groups (linear_groups, as the model runs wo_a): x's group g at column g xg
 * (leading dimension ldx), y's at g yg (ldy) */
static double groups_us(dsv4_backend *be, const dsv4_w *w, int nc, int G, const float *x, int ldx, size_t xg, int B,
                        float *y, int ldy, size_t yg, int reps)
{
    for (int c = 0; c < nc; c++) be->linear_groups(be, &w[c], G, x, ldx, xg, B, y, ldy, yg);
    sync(be, y);
    const double t = now_s();
    for (int r = 0; r < reps; r++) be->linear_groups(be, &w[r % nc], G, x, ldx, xg, B, y, ldy, yg);
    sync(be, y);
    return (now_s() - t) / reps * 1e6;
}

#define DECODE_MAXB 64 /* the decode tables' largest batch (larger ones: the linears only) */

/* Sparse attention decode at contexts 4k / 32k / 128k: the default layout in
 * reference numerics (tensor cores) on BF16 cached rows (what the engine
 * caches there) and on FP32 ones (the baseline), the FP32 heads-together
 * kernels (plain numerics) and the naive layout, same state, same run; the
 * speedup is the naive layout's time over the default's, the bytes and the
 * bandwidth those of the BF16 rows. The rows are the backend's fill; CSA picks
 * 512 distinct compressed rows spread over the context. */
static void bench_attn(dsv4_backend *be, const int *batches, int nb, int reps, double copy_gbs, FILE *jf,
                       const int64_t *ctxs, int nc)
{
    const int hd = 512, window = 128, topk = 512;
    printf("\n%-20s %6s %8s %10s %10s %8s %8s %12s %10s %10s %8s\n", "attention", "batch", "context", "MB", "us/call",
           "GB/s", "of copy", "f32 rows us", "fp32 us", "naive us", "speedup");
    for (int kind = 0; kind < 2; kind++) {
        const int ratio = kind == 0 ? 4 : 128;
        for (int ci = 0; ci < nc; ci++)
            for (int bi = 0; bi < nb; bi++) {
                if (batches[bi] > DECODE_MAXB) continue;
                const int B = batches[bi];
                const int64_t C = ctxs[ci];
                /* the default layout in reference numerics (the server's: tensor cores), the
                 * FP32 heads-together kernels (plain numerics' layout) and the first layout */
                static const int layouts[4] = {DSV4_ATTN_LAYOUT_AUTO, DSV4_ATTN_LAYOUT_AUTO, DSV4_ATTN_LAYOUT_FP32,
                                               DSV4_ATTN_LAYOUT_NAIVE};
                double us[4];
                for (int li = 0; li < 4; li++) {
                    dsv4_cuda_attn_layout(layouts[li]);
                    dsv4_cuda_attn_bench_fp32_rows(li == 1);
                    us[li] = dsv4_cuda_attn_time(be, kind == 0, B, C, li <= 1,
                                                 li == 3 ? (reps / 5 > 2 ? reps / 5 : 2) : reps);
                }
                dsv4_cuda_attn_bench_fp32_rows(0);
                dsv4_cuda_attn_layout(DSV4_ATTN_LAYOUT_AUTO);
                if (us[0] < 0 || us[1] < 0 || us[2] < 0 || us[3] < 0) {
                    printf("attention: no memory for batch %d at %lld\n", B, (long long)C);
                    break;
                }
                const int64_t ncmp = C / ratio, rows = window + (kind == 0 ? (ncmp < topk ? ncmp : topk) : ncmp);
                const size_t bytes = (size_t)B * rows * hd * 2; /* BF16 rows */
                const double gbs = (double)bytes / (us[0] * 1e-6) / 1e9;
                char name[32];
                snprintf(name, sizeof name, "%s (%lld rows)", kind == 0 ? "CSA" : "HCA", (long long)rows);
                printf("%-20s %6d %8lld %10.2f %10.2f %8.0f %7.0f%% %12.2f %10.2f %10.2f %7.1fx\n", name, B,
                       (long long)C, bytes / 1e6, us[0], gbs, 100 * gbs / copy_gbs, us[1], us[2], us[3], us[3] / us[0]);
                if (jf)
                    fprintf(jf,
                            ",\n  {\"kind\": \"attention\", \"attn\": \"%s\", \"batch\": %d, \"context\": %lld, "
                            "\"rows\": %lld, \"row_bytes\": %d, \"bytes\": %zu, \"us\": %.3f, \"gb_s\": %.1f, "
                            "\"of_copy\": %.3f, \"f32_rows_us\": %.3f, \"fp32_us\": %.3f, \"naive_us\": %.3f}",
                            kind == 0 ? "CSA" : "HCA", B, (long long)C, (long long)rows, hd * 2, bytes, us[0], gbs,
                            gbs / copy_gbs, us[1], us[2], us[3]);
            }
    }
}

/* hc_pre of a Flash layer (4 streams of 4096, 20 Sinkhorn iterations): the
 * mixing logits (a 24 x 16384 FP32 matrix), the split and the collapse. */
static void bench_hc(dsv4_backend *be, const int *batches, int nb, int reps, double copy_gbs, FILE *jf)
{
    const int hc = 4, D = 4096, F = hc * D, n_mix = (2 + hc) * hc, maxn = 64;
    float *hfn = malloc((size_t)n_mix * F * 4), *hx = malloc((size_t)maxn * F * 4), hb[24], hs[3] = {0.5f, 0.5f, 0.5f};
    for (size_t i = 0; i < (size_t)n_mix * F; i++) hfn[i] = (float)((int)(rnd() % 2001) - 1000) * 1e-5f;
    for (size_t i = 0; i < (size_t)maxn * F; i++) hx[i] = (float)((int)(rnd() % 2001) - 1000) * 1e-3f;
    for (int i = 0; i < n_mix; i++) hb[i] = (float)((int)(rnd() % 201) - 100) * 1e-2f;
    float *fn = be->alloc(be, (size_t)n_mix * F * 4), *x = be->alloc(be, (size_t)maxn * F * 4);
    float *base = be->alloc(be, sizeof hb), *scale = be->alloc(be, sizeof hs);
    float *u = be->alloc(be, (size_t)maxn * D * 4), *post = be->alloc(be, (size_t)maxn * hc * 4);
    float *comb = be->alloc(be, (size_t)maxn * hc * hc * 4);
    be->upload(be, fn, hfn, (size_t)n_mix * F * 4);
    be->upload(be, x, hx, (size_t)maxn * F * 4);
    be->upload(be, base, hb, sizeof hb);
    be->upload(be, scale, hs, sizeof hs);
    const dsv4_hc_params p = {.hc = hc, .dim = D, .sinkhorn_iters = 20, .hc_eps = 1e-6f, .norm_eps = 1e-6f,
                              .fn = fn, .base = base, .scale = scale};
    printf("\n%-20s %6s %10s %10s %8s %8s\n", "hyper-connections", "batch", "MB", "us/call", "GB/s", "of copy");
    for (int bi = 0; bi < nb; bi++) {
        if (batches[bi] > maxn) continue;
        const int B = batches[bi];
        be->hc_pre(be, &p, x, B, u, post, comb);
        sync(be, u);
        const double t0 = now_s();
        for (int r = 0; r < reps; r++) be->hc_pre(be, &p, x, B, u, post, comb);
        sync(be, u);
        const double us = (now_s() - t0) / reps * 1e6, mb = ((double)n_mix * F + 2.0 * B * F) * 4 / 1e6;
        const double gbs = mb * 1e3 / us;
        printf("%-20s %6d %10.2f %10.2f %8.0f %7.0f%%\n", "hc_pre", B, mb, us, gbs, 100 * gbs / copy_gbs);
        if (jf)
            fprintf(jf, ",\n  {\"kind\": \"hc_pre\", \"batch\": %d, \"mb\": %.3f, \"us\": %.3f, \"gb_s\": %.1f}", B, mb,
                    us, gbs);
    }
    be->free(be, fn), be->free(be, x), be->free(be, base), be->free(be, scale);
    be->free(be, u), be->free(be, post), be->free(be, comb);
    free(hfn), free(hx);
}

/* Sampling on the GPU (the engine's decode pick: only ids come back), per call of the sample op over n
 * rows of a 129,280-token vocabulary (Flash's): greedy, temperature 1, temperature 0.7 with top-p 0.9, and
 * top-k 50. The logits are spread like a model's (a few standing out); MB: the logits read once. */
static void bench_sample(dsv4_backend *be, const int *batches, int nb, int reps, double copy_gbs, FILE *jf)
{
    const int V = 129280, maxn = 64;
    float *hl = malloc((size_t)maxn * V * 4);
    for (size_t i = 0; i < (size_t)maxn * V; i++) {
        const double g = ((double)(rnd() >> 11) / 9007199254740992.0 + (double)(rnd() >> 11) / 9007199254740992.0 +
                          (double)(rnd() >> 11) / 9007199254740992.0 - 1.5) * 4.0;
        hl[i] = (float)(rnd() % 1000 == 0 ? g + 12.0 : g);
    }
    float *dl = be->alloc(be, (size_t)maxn * V * 4);
    be->upload(be, dl, hl, (size_t)maxn * V * 4);
    int rows[64];
    int32_t tok[64];
    for (int i = 0; i < maxn; i++) rows[i] = i;
    static const struct {
        const char *name;
        float t, p;
        int k;
    } kinds[] = {{"greedy", 0, 1, 0}, {"temperature 1", 1, 1, 0}, {"t 0.7, top-p 0.9", 0.7f, 0.9f, 0},
                 {"top-k 50", 1, 1, 50}};
    dsv4_sample_req req[64];
    printf("\n%-20s %6s %10s %10s %8s %8s\n", "sampling", "rows", "MB", "us/call", "GB/s", "of copy");
    for (int ki = 0; ki < 4; ki++)
        for (int bi = 0; bi < nb; bi++) {
            if (batches[bi] > maxn) continue;
            const int n = batches[bi];
            for (int i = 0; i < n; i++)
                req[i] = (dsv4_sample_req){.temperature = kinds[ki].t, .top_p = kinds[ki].p, .min_p = 0,
                                           .top_k = kinds[ki].k, .vocab = V, .u = (double)(i + 1) / (n + 2)};
            be->sample(be, dl, V, n, rows, req, tok);
            const double t0 = now_s();
            for (int r = 0; r < reps; r++) be->sample(be, dl, V, n, rows, req, tok);
            const double us = (now_s() - t0) / reps * 1e6, mb = (double)n * V * 4 / 1e6, gbs = mb * 1e3 / us;
            printf("%-20s %6d %10.2f %10.2f %8.0f %7.0f%%\n", kinds[ki].name, n, mb, us, gbs, 100 * gbs / copy_gbs);
            if (jf)
                fprintf(jf, ",\n  {\"kind\": \"sample\", \"mode\": \"%s\", \"rows\": %d, \"mb\": %.3f, \"us\": %.3f}",
                        kinds[ki].name, n, mb, us);
        }
    be->free(be, dl);
    free(hl);
}

/* The lightning indexer (scores of every visible compressed key, then the
 * top 512) at contexts 4k / 16k / 32k / 128k / 1M (1M: batches to 16), reference numerics, beside its first
 * version (not at 1M) (one block per token ranking every candidate against every other),
 * same state, same run; then the same on FP4 keys (what the engine stores in
 * reference numerics; the first version does not read them; the scores
 * kernel alone beside it). MB: the keys read (FP32: 512 bytes a key; FP4:
 * 68). */
static void bench_indexer(dsv4_backend *be, const int *batches, int nb, int reps, double copy_gbs, FILE *jf)
{
    /* 1M tokens (Flash's longest) at up to 16 tokens, without the first version (quadratic: seconds a call) */
    const int64_t ctxs[5] = {4096, 16384, 32768, 131072, 1048576};
    for (int fp4 = 0; fp4 < 2; fp4++) { /* FP32 keys beside the first version, then FP4 keys */
        printf("\n%-20s %6s %8s %10s %10s %8s %8s%s\n", fp4 ? "indexer, FP4 keys" : "indexer", "batch", "context", "MB",
               "us/call", "GB/s", "of copy", fp4 ? "  scores us" : "   first us  speedup");
        dsv4_cuda_indexer_bench_fp4(fp4);
        const size_t key_bytes = fp4 ? 68 : 128 * sizeof(float);
        for (int ci = 0; ci < 5; ci++)
            for (int bi = 0; bi < nb; bi++) {
                if (batches[bi] > DECODE_MAXB || (ctxs[ci] > 131072 && batches[bi] > 16)) continue;
                const int B = batches[bi];
                const int64_t C = ctxs[ci], N = C / 4;
                double us[2] = {0, 0};
                for (int naive = 0; naive < (fp4 || C > 131072 ? 1 : 2); naive++) {
                    dsv4_cuda_indexer_naive(naive);
                    us[naive] = dsv4_cuda_indexer_time(be, B, C, true, naive ? 2 : reps);
                }
                dsv4_cuda_indexer_naive(0);
                if (fp4) { /* the scores kernel alone (no top-k launched) */
                    dsv4_cuda_indexer_scores_only(1);
                    us[1] = dsv4_cuda_indexer_time(be, B, C, true, reps);
                    dsv4_cuda_indexer_scores_only(0);
                }
                if (us[0] < 0 || us[1] < 0) {
                    printf("indexer: no memory for batch %d at %lld\n", B, (long long)C);
                    break;
                }
                const size_t bytes = (size_t)B * N * key_bytes;
                const double gbs = (double)bytes / (us[0] * 1e-6) / 1e9;
                char name[32], first[48] = "";
                snprintf(name, sizeof name, "top-512 of %lld", (long long)N);
                if (!fp4 && C > 131072)
                    snprintf(first, sizeof first, " %10s %8s", "-", "-");
                else if (!fp4)
                    snprintf(first, sizeof first, " %10.2f %7.1fx", us[1], us[1] / us[0]);
                else
                    snprintf(first, sizeof first, " %10.2f", us[1]);
                printf("%-20s %6d %8lld %10.2f %10.2f %8.0f %7.0f%%%s\n", name, B, (long long)C, bytes / 1e6, us[0],
                       gbs, 100 * gbs / copy_gbs, first);
                if (jf) {
                    fprintf(jf,
                            ",\n  {\"kind\": \"%s\", \"batch\": %d, \"context\": %lld, \"keys\": %lld, \"bytes\": %zu, "
                            "\"us\": %.3f, \"gb_s\": %.1f, \"of_copy\": %.3f",
                            fp4 ? "indexer_fp4" : "indexer", B, (long long)C, (long long)N, bytes, us[0], gbs,
                            gbs / copy_gbs);
                    if (!fp4 && C > 131072)
                        fprintf(jf, ", \"first_us\": null");
                    else
                        fprintf(jf, fp4 ? ", \"scores_us\": %.3f" : ", \"first_us\": %.3f", us[1]);
                    fprintf(jf, "}");
                }
            }
    }
    dsv4_cuda_indexer_bench_fp4(0);
}

int main(int argc, char **argv)
{
    int batches[8] = {1, 8, 16, 64}, nb = 4, reps = 50, n_ctx = 3;
    int64_t ctxs[8] = {4096, 32768, 131072}; /* the attention's contexts */
    bool ctx_given = false;                  /* --contexts: the attention's only (no indexer table) */
    const char *json = NULL;
    bool attn_only = false, linear_only = false, sample_only = false, experts_only = false;
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--attn-only") || !strcmp(argv[i], "--linear-only") || !strcmp(argv[i], "--sample-only") ||
            !strcmp(argv[i], "--experts-only")) {
            attn_only = attn_only || argv[i][2] == 'a';
            linear_only = linear_only || argv[i][2] == 'l';
            sample_only = sample_only || argv[i][2] == 's';
            experts_only = experts_only || argv[i][2] == 'e';
            i--;
        } else if (i + 1 >= argc) {
            fprintf(stderr, "bench_kernels: %s needs a value\n", argv[i]);
            return 2;
        } else if (!strcmp(argv[i], "--batch")) {
            nb = 0;
            for (char *t = strtok(argv[i + 1], ","); t && nb < 8; t = strtok(NULL, ",")) batches[nb++] = atoi(t);
        } else if (!strcmp(argv[i], "--contexts")) {
            n_ctx = 0, ctx_given = true;
            for (char *t = strtok(argv[i + 1], ","); t && n_ctx < 8; t = strtok(NULL, ",")) ctxs[n_ctx++] = atoll(t);
        } else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--json")) json = argv[i + 1];
        else {
            fprintf(stderr, "usage: bench_kernels [--batch 1,8,16,64] [--reps N] [--json FILE] [--contexts "
                            "4096,32768,131072: the attention's, no indexer table] [--attn-only: attention and indexer "
                            "| --linear-only | "
                            "--sample-only | --experts-only: the routed experts]\n");
            return 2;
        }
    }
    bool big = false;
    for (int bi = 0; bi < nb; bi++) {
        if (batches[bi] < 1) {
            fprintf(stderr, "bench_kernels: --batch takes positive token counts\n");
            return 2;
        }
        big = big || batches[bi] > DECODE_MAXB;
    }
    for (int ci = 0; ci < n_ctx; ci++)
        if (ctxs[ci] < 256 || ctxs[ci] > ((int64_t)1 << 20)) {
            fprintf(stderr, "bench_kernels: --contexts takes token counts from 256 to 1048576\n");
            return 2;
        }
    if (big && !linear_only)
        fprintf(stderr, "bench_kernels: batches above %d time the linears only (the decode tables leave them out)\n",
                DECODE_MAXB);
    if (dsv4_cuda_device_count() <= 0) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    char err[256];
    dsv4_backend *be = dsv4_backend_cuda_create(0, err, sizeof err);
    if (!be) {
        fprintf(stderr, "bench_kernels: %s\n", err);
        return 1;
    }
    const char *tune = getenv("DSV4_TUNE");
    if (tune && *tune) {
        dsv4_tune t;
        if (dsv4_tune_load(tune, be->device, &t, err, sizeof err) != DSV4_OK) {
            fprintf(stderr, "bench_kernels: %s\n", err);
            return 1;
        }
        dsv4_cuda_tune_set(&t);
        printf("attention's kernel choices from %s\n", tune);
    }
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (jf) fprintf(jf, "{\"device\": \"%s\", \"results\": [\n", be->device);

    /* the copy ceiling: 1 GiB device to device, bytes read + written */
    const size_t cb = (size_t)1 << 30;
    void *ca = be->alloc(be, cb), *cbuf = be->alloc(be, cb);
    be->copy(be, cbuf, ca, cb);
    sync(be, cbuf);
    double t0 = now_s();
    for (int i = 0; i < 10; i++) be->copy(be, cbuf, ca, cb);
    sync(be, cbuf);
    const double copy_gbs = 2.0 * cb * 10 / (now_s() - t0) / 1e9;
    be->free(be, ca);
    be->free(be, cbuf);
    printf("%s: device-to-device copy %.0f GB/s (read + write)\n\n", be->device, copy_gbs);
    if (jf) fprintf(jf, "  {\"kind\": \"copy\", \"gb_s\": %.1f}", copy_gbs);

    const shape shapes[] = {
        {"wq_a (FP8)", DSV4_WF_FP8, DSV4_DT_F8_E4M3, 1024, 4096},
        {"wq_b (FP8)", DSV4_WF_FP8, DSV4_DT_F8_E4M3, 32768, 1024},
        {"wkv (FP8)", DSV4_WF_FP8, DSV4_DT_F8_E4M3, 512, 4096},
        {"wo_a group (FP8)", DSV4_WF_FP8, DSV4_DT_F8_E4M3, 1024, 4096},
        {"wo_b (FP8)", DSV4_WF_FP8, DSV4_DT_F8_E4M3, 4096, 8192},
        {"shared w1 (FP8)", DSV4_WF_FP8, DSV4_DT_F8_E4M3, 2048, 4096},
        {"shared w2 (FP8)", DSV4_WF_FP8, DSV4_DT_F8_E4M3, 4096, 2048},
        {"idx wq_b (FP8)", DSV4_WF_FP8, DSV4_DT_F8_E4M3, 8192, 1024},
        {"gate (BF16)", DSV4_WF_FLOAT, DSV4_DT_BF16, 256, 4096},
        {"cmp wkv (BF16)", DSV4_WF_FLOAT, DSV4_DT_BF16, 1024, 4096},
        {"idx cmp wkv (BF16)", DSV4_WF_FLOAT, DSV4_DT_BF16, 256, 4096},
        {"lm head (BF16)", DSV4_WF_FLOAT, DSV4_DT_BF16, 129280, 4096},
        {"expert w1 (MXFP4)", DSV4_WF_MXFP4, DSV4_DT_U8, 2048, 4096},
    };
    const int ns = attn_only || sample_only || experts_only ? 0 : (int)(sizeof shapes / sizeof shapes[0]);
    int maxb = 64; /* batches above 64: the linears but the LM head (prefill GEMMs) */
    for (int bi = 0; bi < nb; bi++) maxb = batches[bi] > maxb ? batches[bi] : maxb;
    const size_t max_x = (size_t)maxb * 16384,
                 max_y = (size_t)64 * 129280 > (size_t)maxb * 32768 ? (size_t)64 * 129280 : (size_t)maxb * 32768;
    float *hx = malloc(max_x * sizeof(float));
    for (size_t i = 0; i < max_x; i++) hx[i] = (float)((int64_t)(rnd() % 2001) - 1000) / 1000.0f;
    float *x = be->alloc(be, max_x * sizeof(float)), *y = be->alloc(be, max_y * sizeof(float));
    be->upload(be, x, hx, max_x * sizeof(float));
    printf("%-20s %6s %10s %10s %8s %8s %10s %8s\n", "linear", "batch", "MB", "us/call", "GB/s", "of copy", "ref us",
           "of copy");
    for (int si = 0; si < ns; si++) {
        const shape *s = &shapes[si];
        const size_t wb = weight_bytes(s);
        copies cw;
        if (copies_make(be, s, &cw)) return 1;
        const dsv4_w *w = cw.w;
        const int nc = cw.n;
        for (int bi = 0; bi < nb; bi++) {
            const int B = batches[bi];
            if (B > 64 && s->rows > 32768) continue;
            const double us = linear_us(be, s, w, nc, x, B, y, reps), gbs = (double)wb / (us * 1e-6) / 1e9;
            /* the same in reference numerics (the server's default): FP8 activations in front of FP8 weights */
            be->act_quant = true;
            const double ref_us = linear_us(be, s, w, nc, x, B, y, reps);
            const double ref_gbs = (double)wb / (ref_us * 1e-6) / 1e9;
            /* reference numerics' FP8 path (wgmma, wg8.cu) against mma.cu's F16 one in the same run: its time
             * and max |difference| / max |y| */
            double wg_err = -1, f16_us = -1, lt_us = -1, lt_err = -1;
            if (s->fmt == DSV4_WF_FP8) {
                const size_t ny = (size_t)B * s->rows;
                float *ya = malloc(ny * 4), *yb = malloc(ny * 4);
                be->linear(be, &w[0], x, (int)s->cols, B, y, (int)s->rows);
                be->download(be, ya, y, ny * 4);
                dsv4_cuda_wg8_set(0);
                be->linear(be, &w[0], x, (int)s->cols, B, y, (int)s->rows);
                be->download(be, yb, y, ny * 4);
                f16_us = linear_us(be, s, w, nc, x, B, y, reps);
                dsv4_cuda_wg8_set(1);
                wg_err = max_rel_diff(ya, yb, ny);
                /* the vendor's block-scaled FP8 GEMM on the same codes (--prefill-gemm cublaslt, prefill batches),
                 * against wg8.cu's outputs */
                char why[256];
                if (B >= 128 && be->lt_check && be->lt_check(be, why, sizeof why)) {
                    be->lt_prefill = true;
                    be->linear(be, &w[0], x, (int)s->cols, B, y, (int)s->rows);
                    be->download(be, yb, y, ny * 4);
                    lt_err = max_rel_diff(yb, ya, ny);
                    lt_us = linear_us(be, s, w, nc, x, B, y, reps);
                    be->lt_prefill = false;
                }
                free(ya), free(yb);
            }
            be->act_quant = false;
            printf("%-20s %6d %10.2f %10.2f %8.0f %7.0f%% %10.2f %7.0f%%", s->name, B, wb / 1e6, us, gbs,
                   100 * gbs / copy_gbs, ref_us, 100 * ref_gbs / copy_gbs);
            if (wg_err >= 0) printf("  (F16 path %.2f us, wg8 max err %.2e)", f16_us, wg_err);
            const double flop = 2.0 * (double)s->rows * (double)s->cols * B;
            if (B > 64) printf("  TFLOP/s %.0f, reference %.0f", flop / us * 1e-6, flop / ref_us * 1e-6);
            if (lt_us > 0)
                printf("  (cuBLASLt %.2f us, TFLOP/s %.0f, max err vs wg8 %.2e)", lt_us, flop / lt_us * 1e-6, lt_err);
            printf("\n");
            if (jf)
                fprintf(jf,
                        ",\n  {\"kind\": \"linear\", \"name\": \"%s\", \"batch\": %d, \"bytes\": %zu, \"us\": %.3f, "
                        "\"gb_s\": %.1f, \"of_copy\": %.3f, \"ref_us\": %.3f, \"ref_of_copy\": %.3f, \"f16_us\": %.3f, "
                        "\"wg8_err\": %.3g, \"ref_tflops\": %.1f, \"cublaslt_us\": %.3f, \"cublaslt_err\": %.3g}",
                        s->name, B, wb, us, gbs, gbs / copy_gbs, ref_us, ref_gbs / copy_gbs, f16_us, wg_err,
                        flop / ref_us * 1e-6, lt_us, lt_err);
        }
        copies_free(be, &cw);
    }

    /* wo_a as the model runs it: its 8 output groups in one launch (linear_groups) on unquantised activations
     * (no_act_quant) in reference numerics, cold (copies rotated past the 50 MB L2, as the rows above) and warm (one
     * copy again and again: most of its 33.5 MB stays in L2). Whether its kernel waits on DRAM or on itself. */
    if (ns && be->linear_groups) {
        const int G = 8, R = 1024, C = 4096, H = 64 * 512;
        const shape s = {"wo_a (8 groups)", DSV4_WF_FP8, DSV4_DT_F8_E4M3, G * R, C};
        const size_t wb = weight_bytes(&s);
        float *hxo = malloc((size_t)64 * H * sizeof(float));
        float *xo = be->alloc(be, (size_t)64 * H * sizeof(float));
        copies cw;
        if (hxo && xo && !copies_make(be, &s, &cw)) {
            for (size_t i = 0; i < (size_t)64 * H; i++) hxo[i] = (float)((int64_t)(rnd() % 2001) - 1000) / 1000.0f;
            be->upload(be, xo, hxo, (size_t)64 * H * sizeof(float));
            for (int c = 0; c < cw.n; c++) cw.w[c].no_act_quant = true; /* wo_a's: BF16 activations */
            printf("\n%-20s %6s %10s %10s %8s %8s %10s %8s\n", "wo_a, all groups", "batch", "MB", "cold us", "GB/s",
                   "of copy", "warm us", "GB/s");
            be->act_quant = true;
            for (int bi = 0; bi < nb; bi++) {
                const int B = batches[bi];
                if (B > 64) continue;
                /* the copies in turn (cold), then the first again and again (warm) */
                const double cold = groups_us(be, cw.w, cw.n, G, xo, H, (size_t)C, B, y, G * R, (size_t)R, reps),
                             warm = groups_us(be, cw.w, 1, G, xo, H, (size_t)C, B, y, G * R, (size_t)R, reps);
                const double cg = (double)wb / (cold * 1e-6) / 1e9, wg = (double)wb / (warm * 1e-6) / 1e9;
                printf("%-20s %6d %10.2f %10.2f %8.0f %7.0f%% %10.2f %8.0f\n", s.name, B, wb / 1e6, cold, cg,
                       100 * cg / copy_gbs, warm, wg);
                if (jf)
                    fprintf(jf,
                            ",\n  {\"kind\": \"linear_groups\", \"name\": \"%s\", \"batch\": %d, \"bytes\": %zu, "
                            "\"cold_us\": %.3f, \"cold_of_copy\": %.3f, \"warm_us\": %.3f}",
                            s.name, B, wb, cold, cg / copy_gbs, warm);
            }
            be->act_quant = false;
            copies_free(be, &cw);
        }
        if (xo) be->free(be, xo);
        free(hxo);
    }

    if (linear_only) goto done;
    if (attn_only) goto attention;
    if (sample_only) {
        bench_sample(be, batches, nb, reps, copy_gbs, jf);
        goto done;
    }
    /* routed experts: 256 MXFP4 experts of w1/w3 [2048, 4096] and w2 [4096, 2048], top-6 */
    const int E = 256, K = 6, D = 4096, I = 2048;
    const shape s13 = {"expert", DSV4_WF_MXFP4, DSV4_DT_U8, I, D}, s2 = {"expert", DSV4_WF_MXFP4, DSV4_DT_U8, D, I};
    uint8_t *host = malloc((size_t)I * D / 2), *sc = malloc((size_t)D * 128);
    fill_bytes(host, (size_t)I * D / 2, 0);
    for (int i = 0; i < D * 128; i++) sc[i] = (uint8_t)(120 + rnd() % 4);
    dsv4_w *w1 = calloc(E, sizeof *w1), *w3 = calloc(E, sizeof *w3), *w2 = calloc(E, sizeof *w2);
    for (int e = 0; e < E; e++)
        if (make_weight(be, &s13, &w1[e], host, sc) || make_weight(be, &s13, &w3[e], host, sc) ||
            make_weight(be, &s2, &w2[e], host, sc))
            return 1;
    const size_t expert_bytes = 2 * weight_bytes(&s13) + weight_bytes(&s2);
    dsv4_moe_params mp = {.n_experts = E, .k = K, .dim = D, .inter = I, .swiglu_limit = 10, .w1 = w1, .w3 = w3,
                          .w2 = w2, .reference = false};
    int32_t *hidx = malloc((size_t)DECODE_MAXB * K * sizeof(int32_t));
    float *hw = malloc((size_t)DECODE_MAXB * K * sizeof(float));
    int32_t *didx = be->alloc(be, (size_t)DECODE_MAXB * K * sizeof(int32_t));
    float *dw = be->alloc(be, (size_t)DECODE_MAXB * K * sizeof(float)),
          *out = be->alloc(be, (size_t)DECODE_MAXB * D * sizeof(float));
    printf("\n%-20s %6s %10s %10s %8s %8s\n", "routed experts", "batch", "MB", "us/call", "GB/s", "of copy");
    for (int bi = 0; bi < nb; bi++) {
        if (batches[bi] > DECODE_MAXB) continue;
        const int B = batches[bi];
        char used[256] = {0};
        int n_used = 0;
        for (int t = 0; t < B; t++)
            for (int k = 0; k < K; k++) {
                int e;
                int dup;
                do {
                    e = (int)(rnd() % E);
                    dup = 0;
                    for (int j = 0; j < k; j++) dup |= hidx[t * K + j] == e;
                } while (dup);
                hidx[t * K + k] = e;
                hw[t * K + k] = 1.0f / K;
                if (!used[e]) used[e] = 1, n_used++;
            }
        be->upload(be, didx, hidx, (size_t)B * K * sizeof(int32_t));
        be->upload(be, dw, hw, (size_t)B * K * sizeof(float));
        /* plain numerics, then reference numerics (FP8 activations: the server's default), then reference
         * numerics with the W4A8 kernels (--moe-backend w4a8) */
        for (int v = 0; v < 3; v++) {
            const bool ref = v > 0;
            mp.reference = ref;
            be->act_quant = ref;
            be->moe_a8 = v == 2;
            be->moe_experts(be, &mp, x, B, didx, dw, out);
            sync(be, out);
            double t = now_s();
            for (int r = 0; r < reps; r++) be->moe_experts(be, &mp, x, B, didx, dw, out);
            sync(be, out);
            const size_t bytes = (size_t)n_used * expert_bytes;
            const double us = (now_s() - t) / reps * 1e6, gbs = (double)bytes / (us * 1e-6) / 1e9;
            printf("%-20s %6d %10.2f %10.2f %8.0f %7.0f%%   (%d experts)\n",
                   v == 2 ? "experts (ref. w4a8)"
                   : ref  ? "experts (ref.)"
                          : "experts (MXFP4)",
                   B, bytes / 1e6, us, gbs, 100 * gbs / copy_gbs, n_used);
            if (jf)
                fprintf(jf,
                        ",\n  {\"kind\": \"experts\", \"numerics\": \"%s\", \"moe_backend\": \"%s\", \"batch\": %d, "
                        "\"experts\": %d, \"bytes\": %zu, \"us\": %.3f, \"gb_s\": %.1f, \"of_copy\": %.3f}",
                        ref ? "reference" : "plain", v == 2 ? "w4a8" : "w4a16", B, n_used, bytes, us, gbs,
                        gbs / copy_gbs);
        }
        mp.reference = false;
        be->act_quant = false;
        be->moe_a8 = false;
    }
    if (experts_only) goto done;
    bench_hc(be, batches, nb, reps, copy_gbs, jf);
    bench_sample(be, batches, nb, reps, copy_gbs, jf);
attention:
    bench_attn(be, batches, nb, reps, copy_gbs, jf, ctxs, n_ctx);
    if (!ctx_given) bench_indexer(be, batches, nb, reps, copy_gbs, jf);
    if (attn_only) goto done;
    /* the tensor cores' rate (the prefill roofline) */
    const double r16 = dsv4_cuda_mma_rate(0), r8 = dsv4_cuda_mma_rate(1);
    printf("\ntensor cores (mma.sync, FP32 accumulation, no memory traffic): BF16 %.0f TFLOP/s, FP8 E4M3 %.0f "
           "TFLOP/s\n", r16, r8);
    if (jf) fprintf(jf, ",\n  {\"kind\": \"mma_rate\", \"bf16_tflops\": %.1f, \"fp8_tflops\": %.1f}", r16, r8);
done:
    if (jf) {
        fprintf(jf, "\n]}\n");
        fclose(jf);
    }
    printf("\n(us/call: host clock over %d back-to-back launches after a warm-up; the expert timing reuses one\n"
           "routing, so its weights may partly stay in L2 at batch 1)\n", reps);
    be->destroy(be);
    return 0;
}

#else

int main(void)
{
    printf("built without the CUDA backend: skipped\n");
    return 77;
}

#endif
