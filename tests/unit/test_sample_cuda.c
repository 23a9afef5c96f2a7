/*
 * test_sample_cuda.c - sampling on the GPU and decode graphs.
 *
 * The device sampler against an independent host model of its contract
 * (engine/sample.h): greedy is the argmax with NaN ignored and the lowest id
 * on ties, a row with no finite maximum gives -1; otherwise the kept set is
 * the host sampler's (top_k, top_p of the top_k mass, min_p; ties to the lower
 * id) and the draw walks the kept tokens in id order with 2^-40 fixed-point
 * masses. Draws are placed at the middle of a token's interval, so the pick
 * is exact whatever the last bits of exp; odd vocabulary sizes; the output is
 * poisoned before every call.
 *
 * Then the engine on a fixture: a step with a sampler (greedy) picks the
 * argmax of the logits the same step returns, and 40 decode steps of 3
 * sequences through the replayed CUDA graphs give bit for bit the logits of
 * an engine that runs every op directly (--profile turns graphs off).
 *
 * Exit 77 (skipped) without the CUDA backend or a GPU.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "dsv4.h"
#include "test_util.h"

#ifdef DSV4_HAVE_CUDA

static uint64_t rs = 0x1234567;
static double urand(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (double)(rs >> 11) * 0x1.0p-53;
}
static float nrand(void)
{
    double a = urand() + 1e-12, b = urand();
    return (float)(sqrt(-2 * log(a)) * cos(6.283185307179586 * b));
}

static uint64_t fix_of(float z) { return (uint64_t)((double)z * 1099511627776.0); }

static const float *g_z;
static int by_z_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (g_z[x] != g_z[y]) return g_z[x] > g_z[y] ? -1 : 1;
    return x < y ? -1 : (x > y);
}

/* The contract's kept set over ids [0, V): keep[i] = 1. Returns the argmax
 * or -1 when there is no finite maximum. */
static int model_kept(const float *l, int V, const dsv4_sample_req *r, float *z, uint8_t *keep)
{
    int best = -1;
    for (int i = 0; i < V; i++) {
        float v = isnan(l[i]) ? -INFINITY : l[i];
        if (best < 0 || v > (isnan(l[best]) ? -INFINITY : l[best])) best = i;
    }
    float mx = isnan(l[best]) ? -INFINITY : l[best];
    if (!isfinite(mx)) return -1;
    float inv_t = 1.0f / r->temperature;
    for (int i = 0; i < V; i++) z[i] = isnan(l[i]) ? 0.0f : expf((l[i] - mx) * inv_t);
    int *ord = malloc((size_t)V * sizeof(int));
    for (int i = 0; i < V; i++) ord[i] = i;
    g_z = z;
    qsort(ord, (size_t)V, sizeof(int), by_z_desc);
    int n = V;
    uint64_t total = 0;
    for (int i = 0; i < V; i++) total += fix_of(z[i]);
    uint64_t kept = total;
    if (r->top_k > 0 && r->top_k < V) {
        n = r->top_k;
        kept = 0;
        for (int i = 0; i < n; i++) kept += fix_of(z[ord[i]]);
    }
    if (r->top_p < 1) {
        uint64_t target = (uint64_t)ceil((double)r->top_p * (double)kept), acc = 0;
        if (target < 1) target = 1;
        int i = 0;
        while (i < n && (acc += fix_of(z[ord[i]])) < target) i++;
        if (i < n) n = i + 1;
    }
    memset(keep, 0, (size_t)V);
    for (int i = 0; i < n; i++) keep[ord[i]] = z[ord[i]] >= r->min_p;
    free(ord);
    return best;
}

typedef struct {
    dsv4_backend *be;
    float *d_logits;
    int ld, rows;
} dev;

static void check_rows(dev *d, const float *l, const dsv4_sample_req *base, int vocab, int n_draws)
{
    const int ld = d->ld;
    float *z = malloc((size_t)ld * sizeof(float));
    uint8_t *keep = malloc((size_t)ld);
    d->be->upload(d->be, d->d_logits, l, (size_t)d->rows * ld * sizeof(float));
    for (int row = 0; row < d->rows; row++) {
        const float *lr = l + (size_t)row * ld;
        dsv4_sample_req r = *base;
        r.vocab = vocab;
        int best = model_kept(lr, vocab, &r, z, keep);
        /* draws at the middle of kept tokens' intervals, walking ids in order */
        int rows[64];
        dsv4_sample_req reqs[64];
        int32_t want[64], got[64];
        int n = 0;
        if (best < 0 || r.temperature <= 0 || r.top_k == 1) {
            rows[0] = row;
            reqs[0] = r;
            want[0] = best;
            n = 1;
        } else {
            uint64_t mass = 0;
            for (int i = 0; i < vocab; i++)
                if (keep[i]) mass += fix_of(z[i]);
            uint64_t acc = 0;
            int seen = 0, n_kept = 0;
            for (int i = 0; i < vocab; i++) n_kept += keep[i];
            int stride = n_kept / n_draws + 1;
            for (int i = 0; i < vocab && n < 64; i++) {
                if (!keep[i]) continue;
                uint64_t q = fix_of(z[i]);
                if (seen++ % stride == 0 && q > mass / 1000000) {
                    rows[n] = row;
                    reqs[n] = r;
                    reqs[n].u = ((double)acc + (double)q / 2) / (double)mass;
                    want[n++] = i;
                }
                acc += q;
            }
        }
        for (int j = 0; j < n; j++) got[j] = -7;
        d->be->sample(d->be, d->d_logits, ld, n, rows, reqs, got);
        for (int j = 0; j < n; j++)
            if (got[j] != want[j])
                fail_msg("row %d T=%g top_k=%d top_p=%g min_p=%g vocab=%d u=%.9f: device %d, contract %d", row,
                         r.temperature, r.top_k, r.top_p, r.min_p, vocab, reqs[j].u, got[j], want[j]);
    }
    free(z);
    free(keep);
}

static void test_sampler_kernel(void **state)
{
    (void)state;
    char err[256];
    dsv4_backend *be = dsv4_backend_cuda_create(0, err, sizeof err);
    assert_non_null(be);
    /* DSV4_SAMPLE_QUICK (under compute-sanitizer): one odd size; =2: also a
     * few settings and no engine test (racecheck walks every shared access);
     * =3: those few settings at Flash's 129,280 ids (the rows' blocks drawing
     * together: the cooperative kernel) */
    const char *qv = getenv("DSV4_SAMPLE_QUICK");
    const int sizes[] = {37, 4099, 129280}, quick = qv ? atoi(qv) : 0;
    for (int si = quick == 3 ? 2 : quick ? 1 : 0; si < (quick && quick != 3 ? 2 : 3); si++) {
        dev d = {.be = be, .ld = sizes[si], .rows = 6};
        d.d_logits = be->alloc(be, (size_t)d.rows * d.ld * sizeof(float));
        float *l = malloc((size_t)d.rows * d.ld * sizeof(float));
        for (int i = 0; i < d.rows * d.ld; i++) l[i] = 2.0f * nrand();
        float *r1 = l + d.ld, *r2 = l + 2 * (size_t)d.ld, *r3 = l + 3 * (size_t)d.ld, *r4 = l + 4 * (size_t)d.ld,
              *r5 = l + 5 * (size_t)d.ld;
        /* row 1: a tie at the top (lowest id wins) and NaNs; row 2: a flat
         * plateau (ties at every boundary); row 3: all NaN; row 4: +inf;
         * row 5: -inf except a few */
        r1[d.ld / 2] = r1[d.ld / 3] = 20.0f;
        r1[1] = NAN;
        r1[d.ld - 1] = NAN;
        for (int i = 0; i < d.ld; i++) r2[i] = (float)(i % 7 == 0 ? 1.0 : (i % 3) * 0.25);
        for (int i = 0; i < d.ld; i++) r3[i] = NAN;
        r4[d.ld / 5] = INFINITY;
        for (int i = 0; i < d.ld; i++) r5[i] = i % 11 == 3 ? nrand() : -INFINITY;
        const float temps[] = {0.0f, 0.6f, 1.0f, 1.7f};
        const int topks[] = {0, 1, 5, 50};
        const float topps[] = {1.0f, 0.9f, 0.3f};
        const float minps[] = {0.0f, 0.05f};
        int cases = 0;
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                for (int c = 0; c < 3; c++)
                    for (int m = 0; m < 2; m++) {
                        if (temps[a] == 0 && (b || c || m)) continue;
                        if (quick >= 2 && (a != 2 || m || (b && c))) continue; /* T=1: plain, top_k, top_p */
                        dsv4_sample_req r = {.temperature = temps[a], .top_k = topks[b], .top_p = topps[c],
                                             .min_p = minps[m]};
                        check_rows(&d, l, &r, d.ld, 8);
                        cases++;
                    }
        /* a sampler that sees only a prefix of the ids */
        dsv4_sample_req r = {.temperature = 1.0f, .top_p = 0.95f};
        check_rows(&d, l, &r, d.ld - d.ld / 4, 8);
        dsv4_sample_req g = {.temperature = 0.0f, .top_p = 1.0f};
        check_rows(&d, l, &g, d.ld / 2 + 1, 1);
        printf("vocabulary %d: %d settings x %d rows agree with the contract\n", d.ld, cases + 2, d.rows);
        be->free(be, d.d_logits);
        free(l);
    }
    be->destroy(be);
}


static dsv4_engine *open_engine(const char *dir, int profile)
{
    dsv4_engine_opts o;
    dsv4_engine_opts_default(&o);
    o.model_dir = dir;
    o.backend = DSV4_BACKEND_CUDA;
    o.numerics = DSV4_NUMERICS_PLAIN;
    o.max_seqs = 4;
    o.max_ctx = 256;
    o.pool_tokens = 4 * 256;
    o.profile = profile;
    char err[512];
    dsv4_engine *e = NULL;
    if (dsv4_engine_open(&o, &e, err, sizeof err) != DSV4_OK) fail_msg("open %s: %s", dir, err);
    return e;
}

static int argmax(const float *x, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static void test_engine_graphs(void **state)
{
    (void)state;
    const char *qv = getenv("DSV4_SAMPLE_QUICK");
    if (qv && atoi(qv) >= 2) skip();
    const char *src = getenv("DSV4_SRC");
    const char *fx[] = {"tests/fixtures/tiny_a", "tests/fixtures/q_stock", "tests/fixtures/tiny_c"};
    for (int fi = 0; fi < 3; fi++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", src ? src : ".", fx[fi]);
        int32_t ids[512];
        int n_ids = tu_read_ids(dir, ids, 512);
        assert_true(n_ids >= 8);
        /* g: decode graphs, the side queue's work as graph branches; d: --profile, every op in issue order on
         * one queue, no graphs */
        dsv4_engine *g = open_engine(dir, 0), *d = open_engine(dir, 1);
        dsv4_model_info info;
        dsv4_engine_info(g, &info);
        const int V = info.vocab_size, S = 3, steps = 40;
        float *lg = malloc((size_t)S * V * sizeof(float)), *ld = malloc((size_t)S * V * sizeof(float));
        int sg[3], sd[3];
        char err[512];
        dsv4_sampling_params sp;
        dsv4_sampling_params_default(&sp);
        sp.temperature = 0;
        dsv4_sampler *smp[3];
        dsv4_sample picks[3];
        int32_t last[3];
        for (int s = 0; s < S; s++) {
            assert_int_equal(dsv4_seq_create(g, &sg[s], err, sizeof err), DSV4_OK);
            assert_int_equal(dsv4_seq_create(d, &sd[s], err, sizeof err), DSV4_OK);
            assert_int_equal(dsv4_sampler_create(&sp, V, NULL, 0, &smp[s], err, sizeof err), DSV4_OK);
        }
        /* prompts of different lengths */
        dsv4_batch_entry bg[3], bd[3];
        for (int s = 0; s < S; s++) {
            int n = 3 + 2 * s;
            bg[s] = (dsv4_batch_entry){.seq = sg[s], .n_tokens = n, .tokens = ids + s, .logits = lg + (size_t)s * V,
                                       .sampler = smp[s], .sample = &picks[s]};
            bd[s] = (dsv4_batch_entry){.seq = sd[s], .n_tokens = n, .tokens = ids + s, .logits = ld + (size_t)s * V};
        }
        int mism = 0;
        for (int step = 0; step <= steps; step++) {
            if (dsv4_step(g, bg, S, err, sizeof err) != DSV4_OK) fail_msg("graph engine: %s", err);
            if (dsv4_step(d, bd, S, err, sizeof err) != DSV4_OK) fail_msg("direct engine: %s", err);
            for (int s = 0; s < S; s++) {
                if (memcmp(lg + (size_t)s * V, ld + (size_t)s * V, (size_t)V * sizeof(float)))
                    fail_msg("%s step %d seq %d: graph replay logits differ from direct ops", fx[fi], step, s);
                int am = argmax(lg + (size_t)s * V, V);
                if (picks[s].token != am) mism++;
                last[s] = am;
                bg[s] = (dsv4_batch_entry){.seq = sg[s], .n_tokens = 1, .tokens = &last[s],
                                           .logits = lg + (size_t)s * V, .sampler = smp[s], .sample = &picks[s]};
                bd[s] = (dsv4_batch_entry){.seq = sd[s], .n_tokens = 1, .tokens = &last[s],
                                           .logits = ld + (size_t)s * V};
            }
        }
        if (mism) fail_msg("%s: %d greedy device picks differ from the argmax of the logits", fx[fi], mism);
        /* a sampler alone (no logits asked): the device pick, graph replayed */
        int32_t t0 = last[0];
        dsv4_batch_entry one = {.seq = sg[0], .n_tokens = 1, .tokens = &t0, .sampler = smp[0], .sample = &picks[0]};
        dsv4_batch_entry oned = {.seq = sd[0], .n_tokens = 1, .tokens = &t0, .logits = ld};
        for (int k = 0; k < 4; k++) {
            assert_int_equal(dsv4_step(g, &one, 1, err, sizeof err), DSV4_OK);
            assert_int_equal(dsv4_step(d, &oned, 1, err, sizeof err), DSV4_OK);
            assert_int_equal(picks[0].token, argmax(ld, V));
            t0 = picks[0].token;
        }
        printf("%s: %d decode steps x %d sequences, graph replay (two queues) = direct ops (one) bit for bit, greedy "
               "picks = argmax\n",
               fx[fi], steps, S);
        for (int s = 0; s < S; s++) dsv4_sampler_free(smp[s]);
        free(lg);
        free(ld);
        dsv4_engine_close(g);
        dsv4_engine_close(d);
    }
}

int main(void)
{
    if (dsv4_cuda_device_count() <= 0) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampler_kernel),
        cmocka_unit_test(test_engine_graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

int main(void)
{
    printf("built without the CUDA backend: skipped\n");
    return 77;
}

#endif
