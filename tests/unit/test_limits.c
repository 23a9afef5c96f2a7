/*
 * test_limits.c - config values past what the engine can reach.
 *
 * A sliding window or an indexer top-k longer than the context the engine
 * holds can never be filled: the engine sizes its buffers by what a sequence
 * can reach and must give exactly the logits it gives with the longest
 * window / top-k that context allows (transformers: a window longer than the
 * sequence is full attention, topk(min(index_topk, n)) selects every row).
 * Indexer sizes in a model without CSA layers are bound by no weight and
 * must cost nothing. Per-token buffers sized by what only the weights bound
 * (routed experts) must not land on the stack.
 *
 * Each case is a copy of tests/fixtures/tiny_a with one config.json field
 * changed (the weights linked). The address space is capped at 4 GiB (not
 * under AddressSanitizer, which reserves terabytes), so a buffer sized by
 * the config's value instead of the reachable one fails to allocate here on
 * every machine rather than succeed lazily on a large one.
 */
#define _GNU_SOURCE /* mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "backend/backend.h"
#include "dsv4.h"
#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define TL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TL_ASAN 1
#endif
#endif

#define FIXTURE "tests/fixtures/tiny_a"

typedef struct {
    char dir[64];
} tmp_model;

/* A copy of the fixture in a fresh temporary directory: config.json with `key` set to `val` (consumed; NULL:
 * unchanged) and compress_ratios replaced by `ratios` when not NULL (consumed), model.safetensors linked. */
static void model_with(tmp_model *m, const char *key, json_t *val, json_t *ratios)
{
    const char *src = getenv("DSV4_SRC") ? getenv("DSV4_SRC") : ".";
    snprintf(m->dir, sizeof m->dir, "/tmp/dsv4_limits_XXXXXX");
    assert_non_null(mkdtemp(m->dir));
    char p[4200], q[4200];
    snprintf(p, sizeof p, "%s/%s/config.json", src, FIXTURE);
    json_error_t je;
    json_t *j = json_load_file(p, 0, &je);
    if (!j) fail_msg("%s: %s", p, je.text);
    if (key) json_object_set_new(j, key, val);
    if (ratios) json_object_set_new(j, "compress_ratios", ratios);
    snprintf(q, sizeof q, "%s/config.json", m->dir);
    assert_int_equal(json_dump_file(j, q, JSON_INDENT(2)), 0);
    json_decref(j);
    snprintf(p, sizeof p, "%s/%s/model.safetensors", src, FIXTURE);
    if (p[0] != '/') { /* a relative DSV4_SRC: the link must hold from the temporary directory */
        char cwd[2048];
        assert_non_null(getcwd(cwd, sizeof cwd));
        snprintf(p, sizeof p, "%s/%s/%s/model.safetensors", cwd, src, FIXTURE);
    }
    snprintf(q, sizeof q, "%s/model.safetensors", m->dir);
    assert_int_equal(symlink(p, q), 0);
}

static void model_remove(tmp_model *m)
{
    char p[128];
    snprintf(p, sizeof p, "%s/config.json", m->dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/model.safetensors", m->dir);
    unlink(p);
    rmdir(m->dir);
}

static int32_t ids[1024];
static int T;

/* The logits [T, V] of the fixture's prompt through model m with max_ctx positions: half the prompt as one
 * prefill, the rest one decode step each (both the ring and the step's own rows are read). */
static float *run(tmp_model *m, int64_t max_ctx, int *V, dsv4_model_info *info)
{
    dsv4_engine_opts o;
    tu_engine_opts(&o, m->dir, DSV4_BACKEND_CPU, DSV4_NUMERICS_PLAIN);
    o.max_seqs = 2;
    o.max_ctx = max_ctx;
    o.max_batch_tokens = 512;
    o.pool_tokens = 2 * (max_ctx + 512);
    dsv4_engine *e = NULL;
    char err[1024];
    if (dsv4_engine_open(&o, &e, err, sizeof err) != DSV4_OK) fail_msg("%s: %s", m->dir, err);
    dsv4_engine_info(e, info);
    *V = info->vocab_size;
    float *out = malloc((size_t)T * *V * sizeof(float));
    assert_non_null(out);
    int seq;
    assert_int_equal(dsv4_seq_create(e, &seq, err, sizeof err), DSV4_OK);
    for (int t = 0, P = T / 2; t < T;) {
        const int n = t < P ? P : 1;
        dsv4_batch_entry b = {
            .seq = seq, .n_tokens = n, .tokens = ids + t, .all_logits = 1, .logits = out + (size_t)t * *V};
        if (dsv4_step(e, &b, 1, err, sizeof err) != DSV4_OK) fail_msg("step: %s", err);
        t += n;
    }
    dsv4_seq_free(e, seq);
    dsv4_engine_close(e);
    return out;
}

static void expect_same(const float *a, const float *b, int V, const char *what)
{
    for (size_t i = 0; i < (size_t)T * V; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)))
            fail_msg("%s: logit [%zu][%zu] %.9g != %.9g", what, i / V, i % V, a[i], b[i]);
}

/* sliding_window 9,999,999: the window ring holds max_ctx rows, and the logits are those of a window as long
 * as the prompt (every earlier row visible) run with a larger context, whose ring is not capped. */
static void test_window_past_context(void **state)
{
    (void)state;
    tmp_model huge, full;
    dsv4_model_info ih, iu, ic;
    int V;
    model_with(&huge, "sliding_window", json_integer(9999999), NULL);
    model_with(&full, "sliding_window", json_integer(T), NULL);
    float *h = run(&huge, T, &V, &ih);       /* capped at T rows */
    float *u = run(&full, T + 300, &V, &iu); /* T rows, not capped: the window itself */
    float *c = run(&huge, T + 300, &V, &ic); /* capped at T + 300 rows: another ring size */
    expect_same(h, u, V, "window 9999999 at context T against window T");
    expect_same(c, u, V, "window 9999999 at context T + 300 against window T");
    /* the ring: max_ctx rows a layer, as a window of max_ctx would take */
    assert_int_equal(ih.state_slot_bytes, iu.state_slot_bytes);
    assert_true(ic.state_slot_bytes > ih.state_slot_bytes);
    free(h);
    free(u);
    free(c);
    model_remove(&huge);
    model_remove(&full);
}

/* index_topk 9,999,999: every compressed row is selected, as with a top-k of the most rows the context holds
 * (max_ctx / 4 on tiny_a's ratio-4 layers) */
static void test_topk_past_context(void **state)
{
    (void)state;
    tmp_model huge, all;
    dsv4_model_info ih, ia;
    int V;
    model_with(&huge, "index_topk", json_integer(9999999), NULL);
    model_with(&all, "index_topk", json_integer(T / 4), NULL);
    float *h = run(&huge, T, &V, &ih);
    float *a = run(&all, T + 300, &V, &ia);  /* top-k T / 4 < (T + 300) / 4: not capped */
    float *c = run(&huge, T + 300, &V, &ih); /* capped at (T + 300) / 4 */
    expect_same(h, a, V, "index_topk 9999999 at context T against index_topk T / 4");
    expect_same(c, a, V, "index_topk 9999999 at context T + 300 against index_topk T / 4");
    free(c);
    free(h);
    free(a);
    model_remove(&huge);
    model_remove(&all);
}

/* No CSA layer: index_n_heads and index_head_dim size nothing (they are bound by no weight). The same logits
 * as with the fixture's own values. */
static void test_indexer_without_csa(void **state)
{
    (void)state;
    tmp_model huge, plain;
    dsv4_model_info ih, ip;
    int V;
    /* tiny_a's layers 2 and 4 (CSA) as sliding layers; their compressor and indexer tensors stay unused */
    json_t *r = json_pack("[i,i,i,i,i,i,i]", 0, 0, 0, 128, 0, 128, 0);
    model_with(&huge, "index_n_heads", json_integer(9999999), json_deep_copy(r));
    model_with(&plain, NULL, NULL, r);
    char p[128];
    snprintf(p, sizeof p, "%s/config.json", huge.dir);
    json_error_t je;
    json_t *j = json_load_file(p, 0, &je);
    assert_non_null(j);
    json_object_set_new(j, "index_head_dim", json_integer(9999998));
    assert_int_equal(json_dump_file(j, p, JSON_INDENT(2)), 0);
    json_decref(j);
    float *h = run(&huge, T, &V, &ih);
    float *a = run(&plain, T, &V, &ip);
    expect_same(h, a, V, "index sizes 9999999 x 9999998 without CSA layers against the fixture's");
    free(h);
    free(a);
    model_remove(&huge);
    model_remove(&plain);
}

/* The CPU router with a million and a half experts (a size only the weights bound): its per-expert buffers
 * are not on the stack, which a worker has a few MiB of. */
static void test_route_many_experts(void **state)
{
    (void)state;
    const int E = 1500000, k = 6;
    dsv4_backend *be = dsv4_backend_cpu_create(1);
    assert_non_null(be);
    float *logits = malloc((size_t)E * sizeof(float)), *bias = calloc((size_t)E, sizeof(float)), wts[6];
    int32_t idx[6], tok = 0;
    assert_true(logits && bias);
    for (int e = 0; e < E; e++) logits[e] = (float)(((int64_t)e * 7919) % 1000) / 1000.0f - 1.0f; /* in [-1, 0) */
    const int top[6] = {17, 4242, 99999, 123456, 777777, 1499999};
    for (int i = 0; i < k; i++) logits[top[i]] = 5.0f + (float)i;
    be->moe_route(be, logits, 1, E, k, bias, NULL, &tok, true, 1.0f, idx, wts);
    float sum = 0;
    for (int i = 0; i < k; i++) {
        assert_int_equal(idx[i], top[i]); /* ascending id */
        sum += wts[i];
    }
    assert_true(fabsf(sum - 1.0f) < 1e-5f);
    free(logits);
    free(bias);
    be->destroy(be);
}

int main(void)
{
#ifndef TL_ASAN
    /* 4 GiB of address space: every buffer these tiny engines need, and none sized by a 9,999,999 */
    struct rlimit rl = {.rlim_cur = 4ull << 30, .rlim_max = 4ull << 30};
    if (setrlimit(RLIMIT_AS, &rl) != 0) perror("setrlimit");
#endif
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/%s", getenv("DSV4_SRC") ? getenv("DSV4_SRC") : ".", FIXTURE);
    T = tu_read_ids(dir, ids, (int)(sizeof ids / sizeof ids[0]));
    if (T < 64) {
        fprintf(stderr, "%s/ids.txt: no prompt\n", dir);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_past_context),
        cmocka_unit_test(test_topk_past_context),
        cmocka_unit_test(test_indexer_without_csa),
        cmocka_unit_test(test_route_many_experts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
