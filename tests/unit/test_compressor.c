/*
 * test_compressor.c - the CPU backend's compressor op (MODEL.md §3.6.1, §4.2):
 * feeding tokens one at a time, in odd-sized chunks, or all at once produces
 * exactly the same compressed rows, and those rows equal the batch formula
 * (softmax pooling over whole windows, computed directly here) for both the
 * overlapping ratio-4 compressor and the non-overlapping one.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"

enum { D_ = 16, ROPE = 4, NTOK = 70, PAGE = 32 };

static uint64_t rng = 12345;
static float nrand(void)
{
    float s = 0;
    for (int i = 0; i < 3; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        s += (float)((rng >> 40) * (1.0 / (1 << 24))) - 0.5f;
    }
    return 2 * s;
}

typedef struct {
    dsv4_kv kv;
    dsv4_layer_state ls;
    float *slot, *pages;
    int32_t table[8];
} one_layer;

static void kv_make(one_layer *o, int ratio, int coff)
{
    memset(o, 0, sizeof(*o));
    int w = coff * D_, rows = coff == 2 ? 2 * ratio : ratio;
    o->ls.cmp_kv = 0;
    o->ls.cmp_score = (size_t)rows * w;
    o->ls.cmp_rows = rows;
    o->ls.pg_cmp = 0;
    o->kv.layer = &o->ls;
    o->kv.max_seqs = 1;
    o->kv.page_tokens = PAGE;
    o->kv.max_pages_per_seq = 8;
    o->kv.n_pages = 8;
    o->kv.slot_floats = (size_t)2 * rows * w;
    o->kv.page_floats = (size_t)(PAGE / ratio) * D_;
    o->slot = calloc(o->kv.slot_floats, sizeof(float));
    o->pages = calloc(o->kv.n_pages * o->kv.page_floats, sizeof(float));
    for (size_t i = 0; i < (size_t)rows * w; i++) o->slot[o->ls.cmp_score + i] = -INFINITY;
    for (int i = 0; i < 8; i++) o->table[i] = 7 - i; /* pages out of order on purpose */
    o->kv.slots = o->slot;
    o->kv.pages = o->pages;
    o->kv.page_table = o->table;
}

static void feed(dsv4_backend *be, const dsv4_compress_params *p, one_layer *o, const float *a, const float *g,
                 int chunk)
{
    int w = p->coff * p->d;
    for (int t0 = 0; t0 < NTOK; t0 += chunk) {
        int n = NTOK - t0 < chunk ? NTOK - t0 : chunk;
        int64_t pos[NTOK];
        int32_t seg[NTOK], tok[NTOK];
        for (int i = 0; i < n; i++) {
            pos[i] = t0 + i;
            seg[i] = 0;
            tok[i] = 0;
        }
        dsv4_seg s = {.slot = 0, .pos0 = t0, .n = n, .t0 = 0};
        dsv4_plan plan = {.n_tok = n, .n_seg = 1, .segs = &s, .tokens = tok, .pos = pos, .tok_seg = seg};
        be->compress(be, p, &plan, &o->kv, a + (size_t)t0 * w, g + (size_t)t0 * w);
    }
}

static void run_case(int ratio, int coff, bool reference)
{
    dsv4_backend *be = dsv4_backend_cpu_create(2);
    const int w = coff * D_;
    float *a = malloc((size_t)NTOK * w * sizeof(float)), *g = malloc((size_t)NTOK * w * sizeof(float));
    float ape[ratio * w], norm[D_], freqs[ROPE / 2];
    for (int i = 0; i < NTOK * w; i++) {
        a[i] = nrand();
        g[i] = 2 * nrand();
    }
    for (int i = 0; i < ratio * w; i++) ape[i] = nrand();
    for (int i = 0; i < D_; i++) norm[i] = 1 + 0.1f * nrand();
    dsv4_rope_freqs(160000.0, ROPE, 0, 0, 0, 0, 0, freqs);
    dsv4_compress_params p = {.layer = 0, .indexer = false, .ratio = ratio, .coff = coff, .d = D_,
                              .rope_dim = ROPE, .ape = ape, .norm = norm, .freqs = freqs, .norm_eps = 1e-6f,
                              .reference = reference};
    const int nrows = NTOK / ratio;
    one_layer ref;
    kv_make(&ref, ratio, coff);
    feed(be, &p, &ref, a, g, NTOK);
    const int chunks[] = {1, 3, 7, 29};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        one_layer o;
        kv_make(&o, ratio, coff);
        feed(be, &p, &o, a, g, chunks[c]);
        for (int r = 0; r < nrows; r++)
            assert_memory_equal(dsv4_kv_cmp_row(&ref.kv, 0, 0, r, ratio, false, D_),
                                dsv4_kv_cmp_row(&o.kv, 0, 0, r, ratio, false, D_), D_ * sizeof(float));
        /* the partial window left in the state is the same too */
        assert_memory_equal(ref.slot, o.slot, ref.kv.slot_floats * sizeof(float));
        free(o.slot);
        free(o.pages);
    }
    if (!reference) {
        /* the batch formula, directly (double precision) */
        for (int c = 0; c < nrows; c++) {
            double pooled[D_];
            for (int j = 0; j < D_; j++) {
                double mx = -INFINITY, den = 0, num = 0;
                double sc[2 * ratio], kv[2 * ratio];
                int m = 0;
                if (coff == 2 && c > 0)
                    for (int t = 0; t < ratio; t++) {
                        int tok = (c - 1) * ratio + t;
                        sc[m] = (double)g[(size_t)tok * w + j] + ape[t * w + j];
                        kv[m++] = a[(size_t)tok * w + j];
                    }
                for (int t = 0; t < ratio; t++) {
                    int tok = c * ratio + t, ch = coff == 2 ? D_ + j : j;
                    sc[m] = (double)g[(size_t)tok * w + ch] + ape[t * w + ch];
                    kv[m++] = a[(size_t)tok * w + ch];
                }
                for (int i = 0; i < m; i++) mx = fmax(mx, sc[i]);
                for (int i = 0; i < m; i++) {
                    den += exp(sc[i] - mx);
                    num += exp(sc[i] - mx) * kv[i];
                }
                pooled[j] = num / den;
            }
            double ss = 0;
            for (int j = 0; j < D_; j++) ss += pooled[j] * pooled[j];
            double k = 1 / sqrt(ss / D_ + 1e-6);
            for (int j = 0; j < D_; j++) pooled[j] *= k * norm[j];
            double pos = (double)c * ratio;
            for (int i = 0; i < ROPE / 2; i++) {
                double ang = pos * freqs[i], x0 = pooled[D_ - ROPE + 2 * i], x1 = pooled[D_ - ROPE + 2 * i + 1];
                pooled[D_ - ROPE + 2 * i] = x0 * cos(ang) - x1 * sin(ang);
                pooled[D_ - ROPE + 2 * i + 1] = x0 * sin(ang) + x1 * cos(ang);
            }
            const float *row = dsv4_kv_cmp_row(&ref.kv, 0, 0, c, ratio, false, D_);
            for (int j = 0; j < D_; j++) assert_true(fabs(row[j] - pooled[j]) < 2e-5);
        }
    }
    free(ref.slot);
    free(ref.pages);
    free(a);
    free(g);
    be->destroy(be);
}

static void test_overlapping_ratio4(void **state) { run_case(4, 2, false); }
static void test_plain_ratio8(void **state) { run_case(8, 1, false); }
static void test_reference_numerics(void **state)
{
    run_case(4, 2, true);
    run_case(16, 1, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overlapping_ratio4),
        cmocka_unit_test(test_plain_ratio8),
        cmocka_unit_test(test_reference_numerics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
