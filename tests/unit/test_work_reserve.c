/*
 * test_work_reserve.c - the GPU's working memory that grows with the context, taken at engine open.
 *
 * The CUDA attention's rows scratch and the indexer's scores grow with the context a step meets. The engine
 * reserves them for its largest step (max_batch_tokens tokens at positions up to max_ctx - 1) before it sizes a
 * KV pool from the memory still free, so that a long context's first step neither allocates nor, with the pool
 * holding the rest of the GPU, aborts. Here:
 *  - steps that walk a sequence to the end of the context, prefill chunks of the largest size at its end and
 *    decode steps (graphs) beside it, grow neither buffer after the open, in plain and reference numerics
 *    (their attention layouts differ), on one backend and on two expert-parallel ranks;
 *  - an engine whose reservation cannot fit on the GPU fails to open with a clear error, and an engine opened
 *    after it works.
 * GPU only: exit 77 without one (the CPU backend allocates nothing in a step).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "dsv4.h"
#include "test_util.h"

#define FIXTURE "tests/fixtures/tiny_a" /* CSA and HCA layers, HCA at ratio 128, 1M positions */

#ifdef DSV4_HAVE_CUDA
static char model_dir[4096];

static dsv4_engine *open_cuda(dsv4_numerics num, int ep, int64_t max_ctx, int64_t batch_tokens, char *err,
                              size_t errlen, dsv4_status *st)
{
    dsv4_engine_opts o;
    tu_engine_opts(&o, model_dir, DSV4_BACKEND_CUDA, num);
    o.ep = ep;
    o.max_seqs = 3;
    o.max_ctx = max_ctx;
    o.pool_tokens = 3 * max_ctx;
    o.max_batch_tokens = batch_tokens;
    dsv4_engine *e = NULL;
    *st = dsv4_engine_open(&o, &e, err, errlen);
    return e;
}

/* Token ids of a sequence: a fixed pseudo-random walk over the vocabulary. */
static void fill_ids(int32_t *ids, int n, unsigned seed, int vocab)
{
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        ids[i] = (int32_t)((seed >> 8) % (unsigned)vocab);
    }
}

static void walk_to_the_end(dsv4_numerics num, int ep)
{
    const int64_t ctx = 1536, chunk = 256;
    char err[1024];
    dsv4_status st;
    dsv4_engine *e = open_cuda(num, ep, ctx, chunk, err, sizeof err, &st);
    if (st != DSV4_OK) fail_msg("open (ep %d): %s", ep, err);
    const unsigned long g0 = dsv4_cuda_work_grows();

    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    int32_t *ids = malloc((size_t)ctx * sizeof *ids);
    float *logits = malloc((size_t)info.vocab_size * sizeof *logits);
    assert_non_null(ids);
    assert_non_null(logits);
    fill_ids(ids, (int)ctx, 7u + (unsigned)num, info.vocab_size);

    /* sequence a: a prefill to ctx - 1 - chunk tokens, then one chunk of the largest size, the context's last
     * positions but one; b and c: a short prompt, then decode steps beside a's chunks and after them */
    int a = -1, b = -1, c = -1;
    assert_int_equal(dsv4_seq_create(e, &a, err, sizeof err), DSV4_OK);
    assert_int_equal(dsv4_seq_create(e, &b, err, sizeof err), DSV4_OK);
    assert_int_equal(dsv4_seq_create(e, &c, err, sizeof err), DSV4_OK);
    dsv4_batch_entry pa = {.seq = a, .n_tokens = (int)(ctx - 1 - chunk), .tokens = ids, .logits = logits};
    st = dsv4_step(e, &pa, 1, err, sizeof err);
    if (st != DSV4_OK) fail_msg("prefill: %s", err);
    dsv4_batch_entry pb[2] = {{.seq = b, .n_tokens = 40, .tokens = ids + 3, .logits = logits},
                              {.seq = c, .n_tokens = 40, .tokens = ids + 5, .logits = logits}};
    st = dsv4_step(e, pb, 2, err, sizeof err);
    if (st != DSV4_OK) fail_msg("prompts: %s", err);
    /* a's last chunk with b's decode step: max_batch_tokens is chunk, so the engine cuts it */
    dsv4_batch_entry mix[2] = {{.seq = a, .n_tokens = (int)chunk, .tokens = ids + ctx - 1 - chunk, .logits = logits},
                               {.seq = b, .n_tokens = 1, .tokens = ids + 50, .logits = logits}};
    st = dsv4_step(e, mix, 2, err, sizeof err);
    if (st != DSV4_OK) fail_msg("the last chunk: %s", err);
    /* decode at the context's end: a's last position, with b and c (batch 3, then 2, a graph each) */
    dsv4_batch_entry d3[3] = {{.seq = a, .n_tokens = 1, .tokens = ids + 1, .logits = logits},
                              {.seq = b, .n_tokens = 1, .tokens = ids + 2, .logits = logits},
                              {.seq = c, .n_tokens = 1, .tokens = ids + 4, .logits = logits}};
    st = dsv4_step(e, d3, 3, err, sizeof err);
    if (st != DSV4_OK) fail_msg("decode at the end: %s", err);
    for (int i = 0; i < 4; i++) {
        st = dsv4_step(e, d3 + 1, 2, err, sizeof err);
        if (st != DSV4_OK) fail_msg("decode: %s", err);
    }
    /* every token went in: a is at the end */
    assert_int_equal(dsv4_seq_len(e, a), ctx);
    const unsigned long grew = dsv4_cuda_work_grows() - g0;
    printf("numerics %d, ep %d: %lu growths of the attention's or the indexer's working memory after the open\n",
           (int)num, ep, grew);
    assert_int_equal(grew, 0);
    free(ids);
    free(logits);
    dsv4_engine_close(e);
}

static void test_plain(void **state)
{
    (void)state;
    walk_to_the_end(DSV4_NUMERICS_PLAIN, 0);
}

static void test_reference(void **state)
{
    (void)state;
    walk_to_the_end(DSV4_NUMERICS_REFERENCE, 0);
}

static void test_ep_ranks(void **state)
{
    (void)state;
    walk_to_the_end(DSV4_NUMERICS_REFERENCE, 2);
}

/* 131,072 tokens a step at a 1M context: the attention's rows would take ~78 GB and the indexer's scores ~275 GB
 * (2 x 262,144 floats a token), more than any one GPU has (the activations, ~2 GB, fit) */
static void test_too_large(void **state)
{
    (void)state;
    char err[1024] = "";
    dsv4_status st;
    dsv4_engine *e = open_cuda(DSV4_NUMERICS_REFERENCE, 0, 1 << 20, 131072, err, sizeof err, &st);
    printf("open at 131,072 tokens a step, 1M context: %s\n", err);
    assert_null(e);
    assert_int_equal(st, DSV4_ERR_NOMEM);
    assert_non_null(strstr(err, "attention's working memory"));
    /* nothing lost: the next engine opens and steps */
    e = open_cuda(DSV4_NUMERICS_REFERENCE, 0, 512, 64, err, sizeof err, &st);
    if (st != DSV4_OK) fail_msg("open after: %s", err);
    int s = -1;
    assert_int_equal(dsv4_seq_create(e, &s, err, sizeof err), DSV4_OK);
    int32_t ids[16];
    fill_ids(ids, 16, 3u, 100);
    dsv4_batch_entry en = {.seq = s, .n_tokens = 16, .tokens = ids};
    assert_int_equal(dsv4_step(e, &en, 1, err, sizeof err), DSV4_OK);
    dsv4_engine_close(e);
}
#endif

int main(void)
{
#ifdef DSV4_HAVE_CUDA
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (dsv4_cuda_device_count() <= 0) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    const char *src = getenv("DSV4_SRC");
    snprintf(model_dir, sizeof model_dir, "%s/%s", src ? src : ".", FIXTURE);
    { /* a GPU this build's kernels cannot use (pre-Hopper) is a skip too */
        char err[1024];
        dsv4_status st;
        dsv4_engine *e = open_cuda(DSV4_NUMERICS_PLAIN, 0, 512, 64, err, sizeof err, &st);
        dsv4_engine_close(e);
        if (st == DSV4_ERR_UNSUPPORTED) {
            printf("%s: skipped\n", err);
            return 77;
        }
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_ep_ranks),
        cmocka_unit_test(test_too_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
#else
    printf("built without the CUDA backend: skipped\n");
    return 77;
#endif
}
