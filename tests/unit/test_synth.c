/*
 * test_synth.c - sparse synthetic checkpoints (mkmodel --sparse) and
 * --fill-random (model/synth.h, the generator of model/synth_gen.h).
 *
 *   - the E4M3 encoder of the generator is exact (every finite code round-
 *     trips, every float lands on dsv4_e4m3_round's value) and never makes a
 *     NaN code;
 *   - generated BF16 normals, E4M3 codes and E2M1 bytes have the conditioning
 *     mkmodel's fill() has (mean 0, the asked std, E2M1 rms 2.93, uniform
 *     nibbles), only finite values, and bounded tails;
 *   - the host fill of any byte range equals the same range of a whole fill;
 *   - for every expert format, a sparse tiny checkpoint has byte-identical
 *     headers, index and non-hole tensors to a normal one, zeros where the
 *     side file lists holes; engines refuse it without fill_random (naming
 *     --fill-random), refuse fill_random on a normal checkpoint, and serve it
 *     with fill_random on the CPU with finite O(1) logits; a side file that is
 *     missing, or that leaves a hole unlisted, is refused;
 *   - with a GPU: the CUDA backend's fill kernel writes exactly the host
 *     fill's bytes (every kind, odd sizes, scales), and a CUDA engine with
 *     fill_random agrees with a CPU one (skipped without a GPU).
 */
#define _GNU_SOURCE /* mkdtemp */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "backend/backend.h"
#include "dsv4.h"
#include "model/mkmodel.h"
#include "model/safetensors.h"
#include "model/synth.h"
#include "model/synth_gen.h"

/* ---- helpers --------------------------------------------------------------- */

static char tmp_root[256];

static void make_tmp_root(void)
{
    if (tmp_root[0]) return;
    snprintf(tmp_root, sizeof tmp_root, "/tmp/dsv4-test-synth-XXXXXX");
    assert_non_null(mkdtemp(tmp_root));
}

static void remove_tmp_root(void)
{
    if (!tmp_root[0]) return;
    char cmd[320];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    if (system(cmd) != 0) fprintf(stderr, "test_synth: could not remove %s\n", tmp_root);
}

static void *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc((size_t)sz + 1);
    if (buf && fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = (size_t)sz;
    return buf;
}

static dsv4_synth gen(dsv4_synth_kind kind, const char *name, double std, uint64_t bytes)
{
    dsv4_synth s = {.kind = kind,
                    .key = dsv4_synth_key(7, name),
                    .mul = dsv4_synth_mul(std),
                    .scale_byte = -1,
                    .elem_bytes = bytes};
    return s;
}

/* ---- the generator ------------------------------------------------------------ */

static void test_e4m3_code(void **state)
{
    (void)state;
    for (int b = 0; b < 256; b++) {
        if ((b & 0x7f) == 0x7f) continue;
        assert_int_equal(dsv4_synth_e4m3_code(dsv4_e4m3_to_f32((uint8_t)b)), b == 0x80 ? 0 : b); /* -0 -> +0 */
    }
    for (double x = -600; x <= 600; x += 0.00731) {
        uint8_t c = dsv4_synth_e4m3_code((float)x);
        assert_true((c & 0x7f) != 0x7f);
        assert_true(dsv4_e4m3_to_f32(c) == dsv4_e4m3_round((float)x));
    }
    for (int e = -30; e < 0; e++) /* the subnormal range and below */
        for (int m = 0; m < 64; m++) {
            float x = ldexpf(1.0f + m / 64.0f, e);
            for (int s = 0; s < 2; s++) {
                float v = s ? -x : x;
                uint8_t c = dsv4_synth_e4m3_code(v);
                assert_true((c & 0x7f) != 0x7f);
                assert_true(dsv4_e4m3_to_f32(c) == dsv4_e4m3_round(v));
            }
        }
}

static void test_generator_stats(void **state)
{
    (void)state;
    const uint64_t n = 1 << 21;
    uint8_t *buf = malloc(n);
    assert_non_null(buf);

    /* BF16 normals, std 0.25 */
    dsv4_synth s = gen(DSV4_SYNTH_NORMAL_BF16, "layers.0.attn.compressor.wkv.weight", 0.25, n);
    dsv4_synth_fill_host(&s, buf, 0, n);
    double sum = 0, sq = 0, amax = 0;
    for (uint64_t i = 0; i < n / 2; i++) {
        float v = dsv4_bf16_to_f32(dsv4_ld_u16(buf, (int64_t)i));
        assert_true(isfinite(v));
        sum += v;
        sq += (double)v * v;
        amax = fmax(amax, fabs(v));
    }
    double mean = sum / (n / 2), sd = sqrt(sq / (n / 2) - mean * mean);
    printf("normal bf16: mean %.5f std %.5f (want 0.25) max %.3f\n", mean, sd, amax);
    assert_true(fabs(mean) < 2e-3);
    assert_true(fabs(sd / 0.25 - 1) < 0.01);
    assert_true(amax <= 3.47 * 0.25 && amax > 2.5 * 0.25);

    /* E4M3 codes, std 16 */
    s = gen(DSV4_SYNTH_E4M3, "layers.0.attn.wq_a.weight", 16, n);
    dsv4_synth_fill_host(&s, buf, 0, n);
    sum = sq = amax = 0;
    for (uint64_t i = 0; i < n; i++) {
        assert_true((buf[i] & 0x7f) != 0x7f);
        float v = dsv4_e4m3_to_f32(buf[i]);
        sum += v;
        sq += (double)v * v;
        amax = fmax(amax, fabs(v));
    }
    mean = sum / n;
    sd = sqrt(sq / n - mean * mean);
    printf("e4m3 codes: mean %.4f std %.4f (want 16) max %.1f\n", mean, sd, amax);
    assert_true(fabs(mean) < 0.1);
    assert_true(fabs(sd / 16 - 1) < 0.02);
    assert_true(amax <= 56);

    /* E2M1 pairs: uniform nibbles, rms 2.926 */
    s = gen(DSV4_SYNTH_E2M1, "layers.0.ffn.experts.0.w1.weight", 0, n);
    dsv4_synth_fill_host(&s, buf, 0, n);
    uint64_t hist[16] = {0};
    sq = 0;
    for (uint64_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            uint8_t nib = k ? buf[i] >> 4 : buf[i] & 15;
            hist[nib]++;
            float v = dsv4_e2m1_to_f32(nib);
            sq += (double)v * v;
        }
    printf("e2m1: rms %.4f (want 2.9261)\n", sqrt(sq / (2 * n)));
    assert_true(fabs(sqrt(sq / (2 * n)) / 2.9261 - 1) < 0.01);
    for (int k = 0; k < 16; k++) assert_true(fabs(hist[k] / (2.0 * n) * 16 - 1) < 0.02);

    /* every word passes the device's self-check */
    for (int kind = DSV4_SYNTH_NORMAL_BF16; kind <= DSV4_SYNTH_E2M1; kind++) {
        s = gen((dsv4_synth_kind)kind, "x", 1.0, 0);
        for (uint64_t w = 0; w < 100000; w++) assert_true(dsv4_synth_word_ok(s.kind, dsv4_synth_word(&s, w)));
    }
    free(buf);
}

static void test_fill_ranges(void **state)
{
    (void)state;
    const uint64_t n = 70001; /* odd: a partial last word */
    uint8_t *whole = malloc(n), *parts = malloc(n);
    assert_non_null(whole);
    assert_non_null(parts);
    for (int kind = DSV4_SYNTH_NORMAL_BF16; kind <= DSV4_SYNTH_E2M1; kind++) {
        dsv4_synth s = gen((dsv4_synth_kind)kind, "layers.3.attn.wo_b.weight", 0.5, n);
        dsv4_synth_fill_host(&s, whole, 0, n);
        const uint64_t cuts[] = {0, 1, 7, 8, 13, 4093, 4096, 33333, 69999, n};
        memset(parts, 0xaa, n);
        for (size_t i = 0; i + 1 < sizeof cuts / sizeof cuts[0]; i++)
            dsv4_synth_fill_host(&s, parts + cuts[i], cuts[i], cuts[i + 1] - cuts[i]);
        assert_memory_equal(whole, parts, n);
        /* another name, another seed: other bytes */
        dsv4_synth o = s;
        o.key = dsv4_synth_key(7, "layers.3.attn.wo_a.weight");
        dsv4_synth_fill_host(&o, parts, 0, n);
        assert_memory_not_equal(whole, parts, n);
        o.key = dsv4_synth_key(8, "layers.3.attn.wo_b.weight");
        dsv4_synth_fill_host(&o, parts, 0, n);
        assert_memory_not_equal(whole, parts, n);
    }
    free(whole);
    free(parts);
}

/* ---- sparse checkpoints ----------------------------------------------------- */

static void mk(const char *dir, dsv4_expert_format xf, int sparse)
{
    char err[512] = "";
    dsv4_mkmodel_opts o = {
        .preset = DSV4_PRESET_TINY, .n_layers = 5, .experts = xf, .seed = 7, .out_dir = dir, .sparse = sparse};
    dsv4_status st = dsv4_mkmodel(&o, err, sizeof err);
    if (st != DSV4_OK) fprintf(stderr, "mkmodel: %s\n", err);
    assert_int_equal(st, DSV4_OK);
}

static dsv4_status open_engine(const char *dir, dsv4_backend_kind be, int fill, dsv4_engine **e, char *err,
                               size_t errlen)
{
    dsv4_engine_opts o;
    dsv4_engine_opts_default(&o);
    o.model_dir = dir;
    o.backend = be;
    o.numerics = DSV4_NUMERICS_PLAIN;
    o.n_threads = 2;
    o.max_seqs = 1;
    o.max_ctx = 64;
    o.fill_random = fill;
    return dsv4_engine_open(&o, e, err, errlen);
}

/* logits [12][V] of one prompt */
static float *run_logits(dsv4_engine *e, int *V)
{
    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    *V = info.vocab_size;
    int32_t ids[12];
    for (int i = 0; i < 12; i++) ids[i] = (i * 37 + 5) % info.vocab_size;
    float *lg = malloc((size_t)12 * info.vocab_size * sizeof(float));
    char err[512];
    int seq;
    assert_int_equal(dsv4_seq_create(e, &seq, err, sizeof err), DSV4_OK);
    dsv4_batch_entry be = {.seq = seq, .n_tokens = 12, .tokens = ids, .all_logits = 1, .logits = lg};
    assert_int_equal(dsv4_step(e, &be, 1, err, sizeof err), DSV4_OK);
    dsv4_seq_free(e, seq);
    return lg;
}

/* Headers, index and real tensors as a normal run's; holes read as zeros. */
static void compare_checkpoints(const char *full, const char *sparse)
{
    char p1[512], p2[512], err[512];
    size_t n1, n2;
    snprintf(p1, sizeof p1, "%s/model.safetensors.index.json", full);
    snprintf(p2, sizeof p2, "%s/model.safetensors.index.json", sparse);
    char *a = read_file(p1, &n1), *b = read_file(p2, &n2);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1);
    free(a);
    free(b);
    for (int k = 1; k <= 7; k++) {
        snprintf(p1, sizeof p1, "%s/model-%05d-of-00007.safetensors", full, k);
        snprintf(p2, sizeof p2, "%s/model-%05d-of-00007.safetensors", sparse, k);
        uint8_t *x = read_file(p1, &n1), *y = read_file(p2, &n2);
        assert_non_null(x);
        assert_non_null(y);
        assert_int_equal(n1, n2);
        uint64_t hl = 0;
        memcpy(&hl, x, 8);
        assert_memory_equal(x, y, 8 + hl); /* the same header */
        free(x);
        free(y);
    }
    snprintf(p2, sizeof p2, "%s/%s", sparse, DSV4_SYNTH_FILE);
    json_t *side = json_load_file(p2, 0, NULL), *holes = json_object_get(side, "holes");
    assert_non_null(holes);
    assert_true(json_object_size(holes) > 100);
    dsv4_st *s1, *s2;
    assert_int_equal(dsv4_st_open(full, &s1, err, sizeof err), DSV4_OK);
    assert_int_equal(dsv4_st_open(sparse, &s2, err, sizeof err), DSV4_OK);
    json_t *hole_set = json_object(); /* holes and their scales */
    const char *name;
    json_t *h;
    json_object_foreach(holes, name, h)
    {
        json_object_set_new(hole_set, name, json_true());
        const char *sc = json_string_value(json_object_get(h, "scale"));
        if (sc) json_object_set_new(hole_set, sc, json_true());
    }
    size_t n_real = 0, n_hole = 0;
    for (size_t i = 0; i < dsv4_st_count(s2); i++) {
        const dsv4_st_tensor *t = dsv4_st_at(s2, i), *u = dsv4_st_find(s1, t->name);
        assert_non_null(u);
        assert_int_equal(t->nbytes, u->nbytes);
        if (json_object_get(hole_set, t->name)) {
            for (size_t j = 0; j < t->nbytes; j++) assert_int_equal(((const uint8_t *)t->data)[j], 0);
            n_hole++;
        } else {
            assert_memory_equal(t->data, u->data, t->nbytes);
            n_real++;
        }
    }
    printf("%s: %zu holes, %zu real tensors\n", sparse, n_hole, n_real);
    assert_true(n_real > 50);
    json_decref(hole_set);
    json_decref(side);
    dsv4_st_close(s1);
    dsv4_st_close(s2);
}

static void test_sparse_checkpoint(void **state)
{
    (void)state;
    make_tmp_root();
    const dsv4_expert_format xfs[] = {DSV4_XF_MXFP4, DSV4_XF_NVFP4, DSV4_XF_FLOAT};
    const char *xn[] = {"mxfp4", "nvfp4", "bf16"};
    char err[1024];
    for (int x = 0; x < 3; x++) {
        char full[400], sparse[400];
        snprintf(full, sizeof full, "%s/full-%s", tmp_root, xn[x]);
        snprintf(sparse, sizeof sparse, "%s/sparse-%s", tmp_root, xn[x]);
        mk(full, xfs[x], 0);
        mk(sparse, xfs[x], 1);
        compare_checkpoints(full, sparse);
        assert_true(dsv4_synth_is_sparse(sparse));
        assert_false(dsv4_synth_is_sparse(full));

        dsv4_engine *e = NULL;
        err[0] = 0;
        assert_int_equal(open_engine(sparse, DSV4_BACKEND_CPU, 0, &e, err, sizeof err), DSV4_ERR_UNSUPPORTED);
        assert_non_null(strstr(err, "--fill-random"));
        assert_int_equal(open_engine(full, DSV4_BACKEND_CPU, 1, &e, err, sizeof err), DSV4_ERR_INVALID);
        assert_non_null(strstr(err, "--fill-random"));
        dsv4_status st = open_engine(sparse, DSV4_BACKEND_CPU, 1, &e, err, sizeof err);
        if (st) fprintf(stderr, "%s\n", err);
        assert_int_equal(st, DSV4_OK);
        int V;
        float *lg = run_logits(e, &V);
        double sq = 0;
        for (int i = 0; i < 12 * V; i++) {
            assert_true(isfinite(lg[i]));
            assert_true(fabsf(lg[i]) < 100);
            sq += (double)lg[i] * lg[i];
        }
        printf("%s: logits rms %.3f with --fill-random on the CPU\n", xn[x], sqrt(sq / (12 * V)));
        assert_true(sqrt(sq / (12 * V)) > 0.1); /* not the zeros of the holes */
        free(lg);
        dsv4_engine_close(e);
    }

    /* a side file that leaves a hole out, or none at all */
    char sparse[400], side[480], err2[1024];
    snprintf(sparse, sizeof sparse, "%s/sparse-mxfp4", tmp_root);
    snprintf(side, sizeof side, "%s/%s", sparse, DSV4_SYNTH_FILE);
    json_t *j = json_load_file(side, 0, NULL);
    assert_non_null(j);
    const char *victim = "layers.2.attn.wq_b.weight";
    dsv4_st *st;
    assert_int_equal(dsv4_st_open(sparse, &st, err, sizeof err), DSV4_OK);
    const bool fs_has_holes = dsv4_st_in_hole(st, dsv4_st_find(st, victim));
    dsv4_st_close(st);
    json_t *k = json_deep_copy(j);
    json_object_del(json_object_get(k, "holes"), victim);
    assert_int_equal(json_dump_file(k, side, 0), 0);
    json_decref(k);
    dsv4_engine *e = NULL;
    if (fs_has_holes) {
        assert_int_equal(open_engine(sparse, DSV4_BACKEND_CPU, 1, &e, err2, sizeof err2), DSV4_ERR_FORMAT);
        assert_non_null(strstr(err2, victim));
        printf("unlisted hole refused: %s\n", err2);
    } else {
        printf("this filesystem reports no holes: the unlisted-hole check is not exercised\n");
    }
    assert_int_equal(unlink(side), 0);
    assert_int_equal(open_engine(sparse, DSV4_BACKEND_CPU, 1, &e, err2, sizeof err2), DSV4_ERR_FORMAT);
    assert_non_null(strstr(err2, DSV4_SYNTH_FILE));
    assert_int_equal(open_engine(sparse, DSV4_BACKEND_CPU, 0, &e, err2, sizeof err2), DSV4_ERR_UNSUPPORTED);
    assert_int_equal(json_dump_file(j, side, 0), 0);
    json_decref(j);
}

/* ---- the GPU's fill against the host's ------------------------------------------- */

static void test_cuda_fill(void **state)
{
    (void)state;
#ifdef DSV4_HAVE_CUDA
    if (dsv4_cuda_device_count() <= 0) {
        printf("no CUDA device: the GPU fill is not compared\n");
        skip();
    }
    char err[1024];
    dsv4_backend *be = dsv4_backend_cuda_create(0, err, sizeof err);
    if (!be) {
        printf("%s: the GPU fill is not compared\n", err);
        skip();
    }
    const uint64_t sizes[] = {1, 7, 8, 9, 4099, (1u << 20) + 5, (uint64_t)5 << 20};
    const dsv4_wfmt fmts[] = {DSV4_WF_FLOAT, DSV4_WF_FP8, DSV4_WF_MXFP4};
    for (int kind = DSV4_SYNTH_NORMAL_BF16; kind <= DSV4_SYNTH_E2M1; kind++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            uint64_t n = sizes[i];
            if (kind == DSV4_SYNTH_NORMAL_BF16) n &= ~(uint64_t)1;
            if (!n) continue;
            dsv4_w w;
            memset(&w, 0, sizeof w);
            w.name = "test.weight";
            w.fmt = fmts[kind - 1];
            w.dtype = kind == DSV4_SYNTH_NORMAL_BF16 ? DSV4_DT_BF16
                      : kind == DSV4_SYNTH_E4M3      ? DSV4_DT_F8_E4M3
                                                     : DSV4_DT_I8;
            w.synth = gen((dsv4_synth_kind)kind, "test.weight", kind == DSV4_SYNTH_E4M3 ? 16 : 0.03, n);
            if (kind != DSV4_SYNTH_NORMAL_BF16) {
                w.synth.scale_byte = 118;
                w.synth.scale_bytes = n / 7 + 3;
            }
            assert_int_equal(be->weight_load(be, &w, err, sizeof err), DSV4_OK);
            uint8_t *want = malloc(n), *got = malloc(n);
            dsv4_synth_fill_host(&w.synth, want, 0, n);
            be->download(be, got, w.dev, n);
            assert_memory_equal(want, got, n);
            if (w.synth.scale_byte >= 0) {
                uint8_t *sc = malloc(w.synth.scale_bytes);
                be->download(be, sc, w.dev_scale, w.synth.scale_bytes);
                for (uint64_t b = 0; b < w.synth.scale_bytes; b++) assert_int_equal(sc[b], 118);
                free(sc);
                be->free(be, w.dev_scale);
            }
            be->free(be, w.dev);
            free(want);
            free(got);
        }
    be->destroy(be);
    printf("the GPU's fill equals the host's, every kind and size\n");

    /* the same sparse checkpoint on both backends */
    make_tmp_root();
    char dir[400];
    snprintf(dir, sizeof dir, "%s/cuda-sparse", tmp_root);
    mk(dir, DSV4_XF_MXFP4, 1);
    dsv4_engine *ec, *eg;
    assert_int_equal(open_engine(dir, DSV4_BACKEND_CPU, 1, &ec, err, sizeof err), DSV4_OK);
    dsv4_status st = open_engine(dir, DSV4_BACKEND_CUDA, 1, &eg, err, sizeof err);
    if (st) fprintf(stderr, "%s\n", err);
    assert_int_equal(st, DSV4_OK);
    int V;
    float *a = run_logits(ec, &V), *b = run_logits(eg, &V);
    double dmax = 0;
    for (int i = 0; i < 12 * V; i++) dmax = fmax(dmax, fabs((double)a[i] - b[i]));
    printf("sparse tiny, --fill-random: max |cuda - cpu| = %.3g over %d logits\n", dmax, 12 * V);
    assert_true(dmax <= 2e-3);
    free(a);
    free(b);
    dsv4_engine_close(ec);
    dsv4_engine_close(eg);
#else
    printf("this build has no CUDA backend: the GPU fill is not compared\n");
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e4m3_code),   cmocka_unit_test(test_generator_stats),
        cmocka_unit_test(test_fill_ranges), cmocka_unit_test(test_sparse_checkpoint),
        cmocka_unit_test(test_cuda_fill),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    remove_tmp_root();
    return rc;
}
