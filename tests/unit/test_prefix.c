/*
 * test_prefix.c - snapshots of a sequence's state (prefix reuse).
 *
 * On every fixture under tests/fixtures/ (a tiny random checkpoint and a
 * prompt of 200-300 tokens: past the window, with enough compressed rows for
 * the indexer to choose, most past a page of 256):
 *   - a sequence started from a snapshot taken after n tokens gives, for the
 *     rest of the prompt and decode steps after it, exactly the logits of the
 *     whole prompt run in one sequence (n at a page boundary, inside the first
 *     page, just past a boundary, one before the end), and the sequence the
 *     snapshot was taken from goes on unchanged;
 *   - two sequences started from one snapshot, with different tokens, stepped
 *     together, each give what it gives alone from the start (a shared page is
 *     never written; a partly filled one is copied);
 *   - dsv4_seq_to_snap (the sequence freed into the snapshot) gives the same;
 *   - the pages come back: free, shared and total add up at every step, and
 *     all are free once the sequences and snapshots are;
 *   - refusals: no such sequence or snapshot, an empty sequence, every
 *     snapshot slot taken, no free page for a partly filled page.
 * DSV4_TEST_BACKEND=cuda runs it on the GPU (skipped without one); expert
 * parallelism over two CPU ranks is checked on the first fixture.
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

#include "dsv4.h"
#include "test_util.h"

static dsv4_backend_kind test_backend = DSV4_BACKEND_CPU;

typedef struct {
    char dir[1400];
    int32_t ids[1024];
    int T;
} fixture;

static fixture fixtures[16];
static int n_fixtures;

static dsv4_engine *open_engine(const fixture *fx, dsv4_numerics num, int ep, int max_snaps, int64_t pool_tokens,
                                int *V)
{
    dsv4_engine_opts o;
    tu_engine_opts(&o, fx->dir, test_backend, num);
    o.max_seqs = 4;
    o.max_ctx = pool_tokens < 1024 ? pool_tokens : 1024; /* a pool holds one sequence at full context at least */
    o.max_batch_tokens = 512;
    o.pool_tokens = pool_tokens;
    o.max_snaps = max_snaps;
    o.ep = ep;
    dsv4_engine *e = NULL;
    char err[1024];
    if (dsv4_engine_open(&o, &e, err, sizeof err) != DSV4_OK) fail_msg("%s: %s", fx->dir, err);
    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    *V = info.vocab_size;
    assert_int_equal(info.max_snaps, max_snaps);
    assert_true(info.state_slot_bytes > 0);
    return e;
}

/* Pages add up: every page is free, held with an owner (counted by neither) or shared; those held by
 * snapshots alone have no owner. */
static void check_pages(dsv4_engine *e)
{
    assert_true(dsv4_pages_free(e) >= 0);
    assert_true(dsv4_pages_cached(e) >= 0);
    assert_true(dsv4_pages_cached(e) <= dsv4_pages_shared(e));
    assert_true(dsv4_pages_free(e) + dsv4_pages_shared(e) <= dsv4_pages_total(e));
}

static void expect_pages(dsv4_engine *e, int64_t free_, int64_t shared, int64_t cached)
{
    check_pages(e);
    assert_int_equal(dsv4_pages_free(e), free_);
    assert_int_equal(dsv4_pages_shared(e), shared);
    assert_int_equal(dsv4_pages_cached(e), cached);
}

/* Appends ids[a, b) to seq: chunks of C tokens (0: one), the last `dec` of them one a step; the logits of
 * every position into out + a * V. */
static void feed(dsv4_engine *e, int seq, const int32_t *ids, int a, int b, int C, int dec, int V, float *out)
{
    char err[512];
    for (int t = a; t < b;) {
        int n = t >= b - dec ? 1 : (C > 0 && C < b - dec - t ? C : b - dec - t);
        dsv4_batch_entry en = {
            .seq = seq, .n_tokens = n, .tokens = ids + t, .all_logits = 1, .logits = out + (size_t)t * V};
        if (dsv4_step(e, &en, 1, err, sizeof err) != DSV4_OK) fail_msg("step: %s", err);
        t += n;
        check_pages(e);
    }
}

static void expect_equal(const float *want, const float *got, int a, int b, int V, const char *what, int P)
{
    const size_t off = (size_t)a * V, n = (size_t)(b - a) * V;
    if (memcmp(want + off, got + off, n * sizeof(float))) {
        for (int t = a; t < b; t++)
            if (memcmp(want + (size_t)t * V, got + (size_t)t * V, (size_t)V * sizeof(float)))
                fail_msg("%s (snapshot at %d): position %d's logits differ", what, P, t);
    }
}

/* The whole prompt in one sequence, then the snapshots at points ns: the rest of the prompt from each. */
static void resume_case(const fixture *fx, dsv4_numerics num, int ep, const int *ns, int n_ns)
{
    int V;
    dsv4_engine *e = open_engine(fx, num, ep, 4, 4 * 1024, &V);
    const int T = fx->T, dec = 6; /* the last tokens as decode steps */
    const int64_t total = dsv4_pages_total(e);
    float *whole = malloc((size_t)T * V * sizeof(float)), *got = malloc((size_t)T * V * sizeof(float));
    char err[512];
    int s;
    assert_int_equal(dsv4_seq_create(e, &s, err, sizeof err), DSV4_OK);
    feed(e, s, fx->ids, 0, T, 0, dec, V, whole);
    dsv4_seq_free(e, s);
    assert_int_equal(dsv4_pages_free(e), total);
    for (int i = 0; i < n_ns; i++) {
        const int P = ns[i];
        int a, b, snap;
        assert_int_equal(dsv4_seq_create(e, &a, err, sizeof err), DSV4_OK);
        feed(e, a, fx->ids, 0, P, 0, 0, V, got);
        assert_int_equal(dsv4_snap_save(e, a, &snap, err, sizeof err), DSV4_OK);
        assert_int_equal(dsv4_snap_len(e, snap), P);
        check_pages(e);
        /* one from the snapshot while the sequence it came from lives, stepped together with it */
        assert_int_equal(dsv4_seq_from_snap(e, snap, &b, err, sizeof err), DSV4_OK);
        assert_int_equal(dsv4_seq_len(e, b), P);
        float *got_b = calloc((size_t)T * V, sizeof(float));
        for (int t = P; t < T;) {
            int n = t >= T - dec ? 1 : (T - dec - t < 23 ? T - dec - t : 23);
            dsv4_batch_entry en[2] = {
                {.seq = a, .n_tokens = n, .tokens = fx->ids + t, .all_logits = 1, .logits = got + (size_t)t * V},
                {.seq = b, .n_tokens = n, .tokens = fx->ids + t, .all_logits = 1, .logits = got_b + (size_t)t * V}};
            if (dsv4_step(e, en, 2, err, sizeof err) != DSV4_OK) fail_msg("step: %s", err);
            t += n;
            check_pages(e);
        }
        expect_equal(whole, got, P, T, V, "the sequence a snapshot was taken from", P);
        expect_equal(whole, got_b, P, T, V, "a sequence from a snapshot, beside its source", P);
        dsv4_seq_free(e, a);
        dsv4_seq_free(e, b);
        check_pages(e);
        /* and one from it after both are gone: the pages it shares have no owner left */
        memset(got_b, 0, (size_t)T * V * sizeof(float));
        assert_int_equal(dsv4_seq_from_snap(e, snap, &b, err, sizeof err), DSV4_OK);
        feed(e, b, fx->ids, P, T, 41, dec, V, got_b);
        expect_equal(whole, got_b, P, T, V, "a sequence from a snapshot whose source is freed", P);
        dsv4_seq_free(e, b);
        dsv4_snap_free(e, snap);
        assert_int_equal(dsv4_snap_len(e, snap), -1);
        expect_pages(e, total, 0, 0);
        free(got_b);
    }
    printf("  %-40s %s%s: resumed at", fx->dir, num == DSV4_NUMERICS_PLAIN ? "plain" : "reference",
           ep > 1 ? ", 2 ranks" : "");
    for (int i = 0; i < n_ns; i++) printf(" %d", ns[i]);
    printf(" of %d == whole\n", T);
    free(whole);
    free(got);
    dsv4_engine_close(e);
}

static void test_resume(void **state)
{
    (void)state;
    for (int i = 0; i < n_fixtures; i++) {
        const fixture *fx = &fixtures[i];
        const int T = fx->T;
        const int all[] = {1, 37, 255, 256, 257, T - 1};
        int ns[6], n = 0;
        for (int k = 0; k < 6; k++)
            if (all[k] < T && (k == 5 || all[k] < T - 1)) ns[n++] = all[k];
        resume_case(fx, DSV4_NUMERICS_REFERENCE, 1, ns, n);
        if (i == 0) {
            resume_case(fx, DSV4_NUMERICS_PLAIN, 1, ns, n);
            const int ns_ep[] = {100, 256};
            resume_case(fx, DSV4_NUMERICS_REFERENCE, 2, ns_ep, 2);
        }
    }
}

/* Two sequences from one snapshot, each with its own tokens after it, stepped together, and one from a
 * sequence freed into a snapshot: each gives what it gives alone from the start. */
static void test_branches(void **state)
{
    (void)state;
    for (int i = 0; i < n_fixtures; i++) {
        const fixture *fx = &fixtures[i];
        int V;
        dsv4_engine *e = open_engine(fx, DSV4_NUMERICS_REFERENCE, 1, 4, 4 * 1024, &V);
        const int T = fx->T, P = 150 < T - 10 ? 150 : T / 2;
        const int64_t total = dsv4_pages_total(e);
        int32_t *other = malloc((size_t)T * sizeof(int32_t)); /* the prompt's start, then it backwards */
        memcpy(other, fx->ids, (size_t)P * sizeof(int32_t));
        for (int t = P; t < T; t++) other[t] = fx->ids[T - 1 - (t - P)];
        const int32_t *src[2] = {fx->ids, other};
        float *alone[2], *tog[2];
        char err[512];
        for (int k = 0; k < 2; k++) {
            alone[k] = malloc((size_t)T * V * sizeof(float));
            tog[k] = malloc((size_t)T * V * sizeof(float));
            int s;
            assert_int_equal(dsv4_seq_create(e, &s, err, sizeof err), DSV4_OK);
            feed(e, s, src[k], 0, T, 64, 4, V, alone[k]);
            dsv4_seq_free(e, s);
        }
        /* the snapshot by dsv4_seq_to_snap: the sequence's pages move to it, none copied */
        int a, snap, b[2];
        assert_int_equal(dsv4_seq_create(e, &a, err, sizeof err), DSV4_OK);
        feed(e, a, fx->ids, 0, P, 0, 0, V, tog[0]);
        const int64_t free_before = dsv4_pages_free(e);
        assert_int_equal(dsv4_seq_to_snap(e, a, &snap, err, sizeof err), DSV4_OK);
        const int64_t np = (P + dsv4_page_tokens(e) - 1) / dsv4_page_tokens(e);
        expect_pages(e, free_before, np, np);
        assert_int_equal(dsv4_seq_len(e, a), -1);
        for (int k = 0; k < 2; k++) assert_int_equal(dsv4_seq_from_snap(e, snap, &b[k], err, sizeof err), DSV4_OK);
        for (int t = P; t < T;) {
            const int n = t >= T - 4 ? 1 : (T - 4 - t < 17 ? T - 4 - t : 17);
            dsv4_batch_entry en[2];
            for (int k = 0; k < 2; k++)
                en[k] = (dsv4_batch_entry){.seq = b[k],
                                           .n_tokens = n,
                                           .tokens = src[k] + t,
                                           .all_logits = 1,
                                           .logits = tog[k] + (size_t)t * V};
            if (dsv4_step(e, en, 2, err, sizeof err) != DSV4_OK) fail_msg("step: %s", err);
            t += n;
            check_pages(e);
        }
        for (int k = 0; k < 2; k++) {
            expect_equal(alone[k], tog[k], P, T, V, k ? "the second branch" : "the first branch", P);
            dsv4_seq_free(e, b[k]);
        }
        expect_pages(e, total - np, np, np); /* the branches gone, the snapshot holds its pages alone */
        dsv4_snap_free(e, snap);
        expect_pages(e, total, 0, 0);
        printf("  %-40s two branches from a snapshot at %d == each alone\n", fx->dir, P);
        for (int k = 0; k < 2; k++) free(alone[k]), free(tog[k]);
        free(other);
        dsv4_engine_close(e);
    }
}

/* Snapshots taken with the step that brought the sequence there still in flight (dsv4_step_submit, then the
 * snapshot, then dsv4_step_finish: what overlapped serving does; on the GPU the copies are ordered after the
 * step), and a chain: a sequence from a snapshot, freed into a snapshot of its own, a sequence from that. */
static void test_in_flight_and_chains(void **state)
{
    (void)state;
    for (int f = 0; f < n_fixtures; f++) {
        const fixture *fx = &fixtures[f];
        int V;
        dsv4_engine *e = open_engine(fx, DSV4_NUMERICS_REFERENCE, 1, 4, 4 * 1024, &V);
        const int T = fx->T, P1 = T / 3, P2 = 2 * T / 3, dec = 3;
        const int64_t total = dsv4_pages_total(e);
        float *whole = malloc((size_t)T * V * sizeof(float)), *got = calloc((size_t)T * V, sizeof(float));
        char err[512];
        int a, b, c, d, s1, s2, s3;
        assert_int_equal(dsv4_seq_create(e, &a, err, sizeof err), DSV4_OK);
        feed(e, a, fx->ids, 0, T, 0, dec, V, whole);
        dsv4_seq_free(e, a);
        /* a's two chunks, each snapshot taken before its step is finished; the steps pick a token (greedy) and
         * read no logits, so on the GPU they run ahead of the host */
        dsv4_sampling_params sp;
        dsv4_sampling_params_default(&sp);
        sp.temperature = 0;
        dsv4_sampler *smp;
        assert_int_equal(dsv4_sampler_create(&sp, V, NULL, 0, &smp, err, sizeof err), DSV4_OK);
        dsv4_sample pick;
        assert_int_equal(dsv4_seq_create(e, &a, err, sizeof err), DSV4_OK);
        const int cut[3] = {0, P1, P2};
        int snaps[2];
        for (int k = 0; k < 2; k++) {
            dsv4_batch_entry en = {
                .seq = a, .n_tokens = cut[k + 1] - cut[k], .tokens = fx->ids + cut[k], .sampler = smp, .sample = &pick};
            assert_int_equal(dsv4_step_submit(e, &en, 1, err, sizeof err), DSV4_OK);
            assert_int_equal(dsv4_snap_save(e, a, &snaps[k], err, sizeof err), DSV4_OK);
            assert_int_equal(dsv4_step_finish(e, err, sizeof err), DSV4_OK);
        }
        dsv4_sampler_free(smp);
        s1 = snaps[0], s2 = snaps[1];
        assert_int_equal(dsv4_snap_len(e, s1), P1);
        assert_int_equal(dsv4_snap_len(e, s2), P2);
        dsv4_seq_free(e, a);
        assert_int_equal(dsv4_seq_from_snap(e, s2, &b, err, sizeof err), DSV4_OK);
        feed(e, b, fx->ids, P2, T, 0, dec, V, got);
        expect_equal(whole, got, P2, T, V, "from a snapshot taken with its step in flight", P2);
        dsv4_seq_free(e, b);
        /* the chain: c from s1 to P2, freed into s3; d from s3 */
        memset(got, 0, (size_t)T * V * sizeof(float));
        assert_int_equal(dsv4_seq_from_snap(e, s1, &c, err, sizeof err), DSV4_OK);
        feed(e, c, fx->ids, P1, P2, 17, 0, V, got);
        expect_equal(whole, got, P1, P2, V, "a sequence from a snapshot taken with its step in flight", P1);
        assert_int_equal(dsv4_seq_to_snap(e, c, &s3, err, sizeof err), DSV4_OK);
        dsv4_snap_free(e, s1);
        dsv4_snap_free(e, s2);
        assert_int_equal(dsv4_seq_from_snap(e, s3, &d, err, sizeof err), DSV4_OK);
        feed(e, d, fx->ids, P2, T, 0, dec, V, got);
        expect_equal(whole, got, P2, T, V, "the end of a chain of snapshots", P2);
        dsv4_seq_free(e, d);
        dsv4_snap_free(e, s3);
        expect_pages(e, total, 0, 0);
        printf("  %-40s snapshots with their steps in flight, and a chain of them, == whole\n", fx->dir);
        free(whole);
        free(got);
        dsv4_engine_close(e);
    }
}

/* The page counts through a snapshot's life, and the refusals. */
static void test_pages_and_refusals(void **state)
{
    (void)state;
    const fixture *fx = &fixtures[0];
    int V;
    /* a pool of three pages, two snapshot slots */
    dsv4_engine *e = open_engine(fx, DSV4_NUMERICS_REFERENCE, 1, 2, 3 * 256, &V);
    const int pt = dsv4_page_tokens(e);
    assert_int_equal(pt, 256); /* the fixtures' ratios divide 256 */
    assert_int_equal(dsv4_pages_total(e), 3);
    assert_int_equal(dsv4_snap_max(e), 2);
    float *lg = malloc((size_t)fx->T * V * sizeof(float));
    char err[512];
    int a, b, s0, s1, s2;
    assert_int_equal(dsv4_seq_create(e, &a, err, sizeof err), DSV4_OK);
    /* empty: nothing to keep */
    assert_int_equal(dsv4_snap_save(e, a, &s0, err, sizeof err), DSV4_ERR_INVALID);
    assert_int_equal(dsv4_snap_save(e, 3, &s0, err, sizeof err), DSV4_ERR_INVALID);
    assert_int_equal(dsv4_seq_from_snap(e, 0, &b, err, sizeof err), DSV4_ERR_INVALID);
    assert_int_equal(dsv4_seq_from_snap(e, -1, &b, err, sizeof err), DSV4_ERR_INVALID);
    /* 270 tokens: a whole page (a's) and a partly filled one (a's) */
    feed(e, a, fx->ids, 0, 270 < fx->T ? 270 : fx->T, 0, 0, V, lg);
    const int n = 270 < fx->T ? 270 : fx->T;
    expect_pages(e, 1, 0, 0);
    /* the snapshot copies the partly filled page (its own: shared, held by it alone) and holds a's whole page */
    assert_int_equal(dsv4_snap_save(e, a, &s0, err, sizeof err), DSV4_OK);
    expect_pages(e, 0, 1, 1);
    /* no free page for another copy, nor for a sequence from the snapshot */
    assert_int_equal(dsv4_snap_save(e, a, &s1, err, sizeof err), DSV4_ERR_NOMEM);
    assert_true(strstr(err, "page") != NULL);
    assert_int_equal(dsv4_seq_from_snap(e, s0, &b, err, sizeof err), DSV4_ERR_NOMEM);
    /* a freed: its whole page stays (the snapshot holds it, nobody owns it), its partly filled one is free */
    dsv4_seq_free(e, a);
    expect_pages(e, 1, 2, 2);
    /* a sequence from the snapshot takes the free page for its copy of the partly filled one */
    assert_int_equal(dsv4_seq_from_snap(e, s0, &b, err, sizeof err), DSV4_OK);
    assert_int_equal(dsv4_seq_len(e, b), n);
    expect_pages(e, 0, 2, 1); /* the whole page is b's too now */
    /* a page-aligned snapshot of a sequence needs no page: every snapshot slot is then taken */
    int c;
    dsv4_seq_free(e, b);
    expect_pages(e, 1, 2, 2);
    assert_int_equal(dsv4_seq_create(e, &c, err, sizeof err), DSV4_OK);
    feed(e, c, fx->ids, 0, pt, 0, 0, V, lg); /* takes the free page */
    assert_int_equal(dsv4_pages_free(e), 0);
    assert_int_equal(dsv4_snap_save(e, c, &s1, err, sizeof err), DSV4_OK);
    assert_int_equal(dsv4_snap_len(e, s1), pt);
    assert_int_equal(dsv4_snap_save(e, c, &s2, err, sizeof err), DSV4_ERR_NOMEM);
    assert_true(strstr(err, "snapshot slots") != NULL);
    assert_int_equal(dsv4_seq_to_snap(e, c, &s2, err, sizeof err), DSV4_ERR_NOMEM);
    assert_int_equal(dsv4_seq_len(e, c), pt); /* refused: c is untouched */
    /* a sequence from a page-aligned snapshot needs no page either */
    dsv4_snap_free(e, s0);
    expect_pages(e, 2, 0, 0); /* c owns its page, s1 holds it too */
    assert_int_equal(dsv4_seq_from_snap(e, s1, &b, err, sizeof err), DSV4_OK);
    expect_pages(e, 2, 0, 0);
    dsv4_seq_free(e, c);
    expect_pages(e, 2, 1, 0); /* b and s1 hold c's page, nobody owns it */
    dsv4_seq_free(e, b);
    expect_pages(e, 2, 1, 1);
    dsv4_snap_free(e, s1);
    expect_pages(e, 3, 0, 0);
    dsv4_snap_free(e, s1); /* twice: nothing */
    expect_pages(e, 3, 0, 0);
    free(lg);
    dsv4_engine_close(e);
    /* no snapshot slots at all */
    e = open_engine(fx, DSV4_NUMERICS_REFERENCE, 1, 0, 1024, &V);
    lg = malloc((size_t)fx->T * V * sizeof(float));
    assert_int_equal(dsv4_seq_create(e, &a, err, sizeof err), DSV4_OK);
    feed(e, a, fx->ids, 0, 10, 0, 0, V, lg);
    assert_int_equal(dsv4_snap_save(e, a, &s0, err, sizeof err), DSV4_ERR_NOMEM);
    assert_int_equal(dsv4_snap_max(e), 0);
    free(lg);
    dsv4_engine_close(e);
}

static int setup(void **state)
{
    (void)state;
    const char *src = getenv("DSV4_SRC");
    char root[1024];
    snprintf(root, sizeof root, "%s/tests/fixtures", src ? src : ".");
    char names[16][256];
    const int n = tu_sorted_entries(root, names, 16);
    if (n < 0) return -1;
    for (int i = 0; i < n; i++) {
        fixture *fx = &fixtures[n_fixtures];
        snprintf(fx->dir, sizeof fx->dir, "%s/%.255s", root, names[i]);
        fx->T = tu_read_ids(fx->dir, fx->ids, 1024);
        if (fx->T >= 64) n_fixtures++; /* the golden fixtures: 200-300 tokens, most past a page */
    }
    return n_fixtures > 0 ? 0 : -1;
}

int main(void)
{
    const int skip = tu_test_backend(&test_backend);
    if (skip) return skip;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume),
        cmocka_unit_test(test_branches),
        cmocka_unit_test(test_in_flight_and_chains),
        cmocka_unit_test(test_pages_and_refusals),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
