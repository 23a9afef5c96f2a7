/*
 * test_ep.c - expert parallelism (--ep N) on the CPU through the loopback
 * communicator gives bit for bit the single rank's logits.
 *
 * For every fixture and models/tiny, plain and reference numerics, 2 and 3
 * ranks and 16 (more ranks than some fixtures have experts: ranks with no
 * experts): a prompt prefilled in two chunks then decoded token by token,
 * and three sequences of different lengths stepped together with a chunked
 * prefill beside decodes. DSV4_EP_CHECK=1 makes every read compare the
 * ranks' copies, so ranks that drift apart fail even when rank 0 is right.
 * DSV4_TEST_BACKEND=cuda runs the same with CUDA ranks, rank r on GPU r mod
 * (GPUs present), each loading its own weights and only its own experts:
 * on one GPU the ranks share it (host loopback); on two or more, --ep 2
 * puts one rank on each GPU and joins them with NCCL. Also: --ep beyond 16 ranks, and
 * --backend cuda --ep without a GPU, are refused; --profile gives the
 * collectives a row of their own.
 */
#include <dirent.h>
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
#include "engine/engine.h"
#include "test_util.h"

/* DSV4_TEST_BACKEND=cuda: the ranks are CUDA backends on the GPUs present (exit 77 without one) */
static dsv4_backend_kind test_backend = DSV4_BACKEND_CPU;

static dsv4_engine *open_engine(const char *dir, int ep, dsv4_numerics num)
{
    dsv4_engine_opts o;
    tu_engine_opts(&o, dir, test_backend, num);
    o.ep = ep;
    char err[512];
    dsv4_engine *e = NULL;
    if (dsv4_engine_open(&o, &e, err, sizeof err) != DSV4_OK) fail_msg("open %s --ep %d: %s", dir, ep, err);
    return e;
}

/* The logits of a fixed workload, concatenated: [rows][V]; *rows set. */
static float *workload(dsv4_engine *e, int *rows)
{
    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    const int V = info.vocab_size;
    char err[512];
    int32_t ids[300];
    uint64_t x = 12345;
    for (int i = 0; i < 300; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((x >> 33) % (uint64_t)V);
    }
    const int cap = 200;
    float *out = malloc((size_t)cap * V * sizeof(float));
    int n = 0;
    int s0, s1, s2;
    assert_int_equal(dsv4_seq_create(e, &s0, err, sizeof err), DSV4_OK);
    /* one sequence: two prefill chunks (all logits), then 12 decode steps */
    dsv4_batch_entry b = {.seq = s0, .n_tokens = 9, .tokens = ids, .all_logits = 1, .logits = out};
    assert_int_equal(dsv4_step(e, &b, 1, err, sizeof err), DSV4_OK);
    n += 9;
    b = (dsv4_batch_entry){.seq = s0, .n_tokens = 14, .tokens = ids + 9, .all_logits = 1, .logits = out + (size_t)n * V};
    assert_int_equal(dsv4_step(e, &b, 1, err, sizeof err), DSV4_OK);
    n += 14;
    for (int t = 0; t < 12; t++) {
        b = (dsv4_batch_entry){.seq = s0, .n_tokens = 1, .tokens = ids + 23 + t, .logits = out + (size_t)n * V};
        assert_int_equal(dsv4_step(e, &b, 1, err, sizeof err), DSV4_OK);
        n++;
    }
    /* three sequences: decodes of s0 beside a chunked prefill of s1 and decodes of s2 */
    assert_int_equal(dsv4_seq_create(e, &s1, err, sizeof err), DSV4_OK);
    assert_int_equal(dsv4_seq_create(e, &s2, err, sizeof err), DSV4_OK);
    dsv4_batch_entry bb[3] = {
        {.seq = s2, .n_tokens = 5, .tokens = ids + 100, .logits = out + (size_t)n * V},
        {.seq = s1, .n_tokens = 40, .tokens = ids + 150, .all_logits = 1, .logits = out + (size_t)(n + 1) * V},
    };
    assert_int_equal(dsv4_step(e, bb, 2, err, sizeof err), DSV4_OK);
    n += 41;
    for (int t = 0; t < 20; t++) {
        bb[0] = (dsv4_batch_entry){.seq = s0, .n_tokens = 1, .tokens = ids + 40 + t, .logits = out + (size_t)n * V};
        bb[1] = (dsv4_batch_entry){.seq = s1, .n_tokens = 3, .tokens = ids + 200 + 3 * t,
                                   .logits = out + (size_t)(n + 1) * V};
        bb[2] = (dsv4_batch_entry){.seq = s2, .n_tokens = 1, .tokens = ids + 110 + t,
                                   .logits = out + (size_t)(n + 2) * V};
        assert_true(n + 3 <= cap);
        assert_int_equal(dsv4_step(e, bb, 3, err, sizeof err), DSV4_OK);
        n += 3;
    }
    *rows = n;
    return out;
}

static void check_dir(const char *dir)
{
    for (int numi = 0; numi < 2; numi++) {
        const dsv4_numerics num = numi ? DSV4_NUMERICS_REFERENCE : DSV4_NUMERICS_PLAIN;
        dsv4_engine *e1 = open_engine(dir, 1, num);
        dsv4_model_info info;
        dsv4_engine_info(e1, &info);
        int rows1;
        float *want = workload(e1, &rows1);
        dsv4_engine_close(e1);
        const int eps[] = {2, 3, 16};
        for (int k = 0; k < 3; k++) {
            dsv4_engine *e = open_engine(dir, eps[k], num);
            int rows;
            float *got = workload(e, &rows);
            assert_int_equal(rows, rows1);
            if (memcmp(got, want, (size_t)rows * info.vocab_size * sizeof(float))) {
                size_t i = 0;
                while (got[i] == want[i]) i++;
                fail_msg("%s %s --ep %d: logit %zu (row %zu) is %g, one rank gives %g", dir,
                         numi ? "reference" : "plain", eps[k], i, i / (size_t)info.vocab_size, got[i], want[i]);
            }
            free(got);
            dsv4_engine_close(e);
        }
        printf("%s %s: --ep 2, 3, 16 give the single rank's logits bit for bit (%d rows)\n", dir,
               numi ? "reference" : "plain", rows1);
        free(want);
    }
}

static void test_fixtures(void **state)
{
    (void)state;
    const char *src = getenv("DSV4_SRC");
    char base[1200], dir[1500];
    snprintf(base, sizeof base, "%s/tests/fixtures", src ? src : ".");
    DIR *d = opendir(base);
    assert_non_null(d);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        snprintf(dir, sizeof dir, "%s/%s/config.json", base, de->d_name);
        FILE *f = fopen(dir, "r");
        if (!f) continue;
        fclose(f);
        snprintf(dir, sizeof dir, "%s/%s", base, de->d_name);
        check_dir(dir);
        n++;
    }
    closedir(d);
    snprintf(dir, sizeof dir, "%s/models/tiny", src ? src : ".");
    check_dir(dir);
    assert_true(n >= 5);
}

/* Options for tiny_a with `ep` ranks; dir holds the path. */
static dsv4_engine_opts tiny_a_opts(char *dir, size_t len, int ep)
{
    const char *src = getenv("DSV4_SRC");
    snprintf(dir, len, "%s/tests/fixtures/tiny_a", src ? src : ".");
    dsv4_engine_opts o;
    dsv4_engine_opts_default(&o);
    o.model_dir = dir;
    o.backend = DSV4_BACKEND_CPU;
    o.ep = ep;
    o.n_threads = 2;
    return o;
}

static void test_refusals(void **state)
{
    (void)state;
    char dir[1200];
    dsv4_engine_opts o = tiny_a_opts(dir, sizeof dir, 2);
    char err[512] = "";
    dsv4_engine *e = NULL;
    int gpus = 0;
#ifdef DSV4_HAVE_CUDA
    gpus = dsv4_cuda_device_count();
#endif
    if (!gpus) { /* --backend cuda --ep without a GPU: refused, pointing at the CPU */
        o.backend = DSV4_BACKEND_CUDA;
        assert_int_equal(dsv4_engine_open(&o, &e, err, sizeof err), DSV4_ERR_UNSUPPORTED);
        assert_non_null(strstr(err, "--backend cpu"));
    }
    o.backend = DSV4_BACKEND_CPU;
    o.ep = 17;
    assert_int_not_equal(dsv4_engine_open(&o, &e, err, sizeof err), DSV4_OK);
    assert_non_null(strstr(err, "16"));
}

/* --profile with ranks: the collectives have their own row, with time in it */
static void test_profile_comm(void **state)
{
    (void)state;
    char dir[1200], err[512];
    dsv4_engine_opts o = tiny_a_opts(dir, sizeof dir, 2);
    o.profile = 1;
    dsv4_engine *e = NULL;
    assert_int_equal(dsv4_engine_open(&o, &e, err, sizeof err), DSV4_OK);
    int s;
    assert_int_equal(dsv4_seq_create(e, &s, err, sizeof err), DSV4_OK);
    int32_t ids[6] = {5, 9, 2, 7, 1, 3};
    dsv4_batch_entry b = {.seq = s, .n_tokens = 6, .tokens = ids};
    assert_int_equal(dsv4_step(e, &b, 1, err, sizeof err), DSV4_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    dsv4_profile_print(e, f, 1);
    fclose(f);
    const char *c = strstr(buf, "\"prefill\"");
    assert_non_null(c);
    c = strstr(c, "\"communication\": ");
    assert_non_null(c);
    assert_true(atof(c + strlen("\"communication\": ")) > 0);
    free(buf);
    dsv4_engine_close(e);
}

/* Without --ep, the GPUs the weights need (engine.c's dsv4_ep_ranks_needed): the full Flash checkpoint (145.3 GiB,
 * 137.1 of them its 256 routed experts, `dsv4 inspect` of mkmodel --preset flash --layers 43) on H200s with
 * ~139 GiB free needs two; a model that fits takes one GPU; one that no split holds is refused. */
static void test_ep_ranks_needed(void **state)
{
    (void)state;
    const double G = 1073741824.0;
    const uint64_t total = (uint64_t)(145.301 * G), ex = (uint64_t)(137.062 * G);
    const int64_t h200 = (int64_t)(139.0 * G);
    assert_int_equal(dsv4_ep_ranks_needed(total, ex, 256, h200, 1), 0);
    assert_int_equal(dsv4_ep_ranks_needed(total, ex, 256, h200, 2), 2);
    assert_int_equal(dsv4_ep_ranks_needed(total, ex, 256, h200, 8), 2);
    /* 80 GiB GPUs: 8.2 GiB dense + ceil(256 / n) of 256 experts' 137.1 + 4 GiB of reserve is 80.8 at n = 2, 58.3
     * at 3; 48 GiB ones: 46.5 at 4 */
    assert_int_equal(dsv4_ep_ranks_needed(total, ex, 256, (int64_t)(80.0 * G), 8), 3);
    assert_int_equal(dsv4_ep_ranks_needed(total, ex, 256, (int64_t)(48.0 * G), 8), 4);
    assert_int_equal(dsv4_ep_ranks_needed(total, ex, 256, (int64_t)(48.0 * G), 3), 0);
    /* fits one GPU: one, whatever the GPUs present; the reserve counts (4 GiB, or 1/32 of the free memory) */
    assert_int_equal(dsv4_ep_ranks_needed((uint64_t)(20 * G), (uint64_t)(15 * G), 256, h200, 4), 1);
    assert_int_equal(dsv4_ep_ranks_needed((uint64_t)(135.5 * G), (uint64_t)(120 * G), 256, h200, 2), 2);
    /* no split helps but the weights alone fit (the reserve not): one GPU, as before the rule */
    assert_int_equal(dsv4_ep_ranks_needed((uint64_t)(136 * G), (uint64_t)(120 * G), 256, h200, 1), 1);
    /* the dense part alone too large: no split helps */
    assert_int_equal(dsv4_ep_ranks_needed((uint64_t)(200 * G), (uint64_t)(50 * G), 256, h200, 16), 0);
    /* uneven shares: 3 ranks of 8 experts hold 3, 3 and 2 - the largest share counts */
    assert_int_equal(dsv4_ep_ranks_needed((uint64_t)(100 * G), (uint64_t)(96 * G), 8, (int64_t)(44.5 * G), 4), 3);
    assert_int_equal(dsv4_ep_ranks_needed((uint64_t)(100 * G), (uint64_t)(96 * G), 8, (int64_t)(43.5 * G), 4), 4);
}

int main(void)
{
    const int rc = tu_test_backend(&test_backend);
    if (rc) return rc;
    setenv("DSV4_EP_CHECK", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_profile_comm),
        cmocka_unit_test(test_ep_ranks_needed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
