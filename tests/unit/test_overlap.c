/*
 * test_overlap.c - overlapped steps (dsv4_step_submit / dsv4_step_finish with
 * follow entries) against one step at a time (dsv4_step).
 *
 * The contract's refusals (nothing to finish, a third step in flight, a
 * follow entry without a pick before it, dsv4_step while a step is in
 * flight), then one engine run overlapped beside another run a step at a
 * time over the same schedule - sequences of different prompt lengths
 * sampling at temperature 0.8 with their own seeds, one leaving early (the
 * overlapped engine learns it a step late and frees it after the step it ran
 * needlessly), one joining with a prefill in the same step as the others'
 * follow entries, and now and then a step that reads logits back (it runs
 * whole: the picks it follows are read first) - every pick the same, the
 * logits read back and the final logits of every live sequence bit for bit.
 * DSV4_TEST_BACKEND=cuda runs it on the GPU (exit 77 without one), where the
 * steps really run ahead of the host; on the CPU every step runs whole inside
 * submit and only the bookkeeping is tested.
 */
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

static dsv4_engine *open_engine(const char *fixture)
{
    const char *src = getenv("DSV4_SRC");
    static char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", src ? src : ".", fixture);
    dsv4_engine_opts o;
    tu_engine_opts(&o, dir, test_backend, DSV4_NUMERICS_REFERENCE);
    char err[512];
    dsv4_engine *e = NULL;
    if (dsv4_engine_open(&o, &e, err, sizeof err) != DSV4_OK) fail_msg("open %s: %s", dir, err);
    return e;
}

static dsv4_sampler *sampler(int V, uint64_t seed)
{
    dsv4_sampling_params sp;
    dsv4_sampling_params_default(&sp);
    sp.temperature = 0.8f;
    sp.top_p = 0.95f;
    sp.seed = seed;
    sp.has_seed = 1;
    char err[256];
    dsv4_sampler *s = NULL;
    if (dsv4_sampler_create(&sp, V, NULL, 0, &s, err, sizeof err) != DSV4_OK) fail_msg("sampler: %s", err);
    return s;
}

static void test_refusals(void **state)
{
    (void)state;
    dsv4_engine *e = open_engine("tests/fixtures/tiny_a");
    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    char err[512];
    int a, b;
    assert_int_equal(dsv4_seq_create(e, &a, err, sizeof err), DSV4_OK);
    assert_int_equal(dsv4_seq_create(e, &b, err, sizeof err), DSV4_OK);
    dsv4_sampler *sa = sampler(info.vocab_size, 1), *sb = sampler(info.vocab_size, 2);
    dsv4_sample pa, pb;
    const int32_t prompt[5] = {1, 2, 3, 4, 5};

    assert_int_equal(dsv4_step_finish(e, err, sizeof err), DSV4_ERR_INVALID); /* nothing in flight */
    assert_non_null(strstr(err, "no step in flight"));
    /* a follow entry with no pick before it */
    dsv4_batch_entry f = {.seq = a, .n_tokens = 1, .follow = 1, .sampler = sa, .sample = &pa};
    assert_int_equal(dsv4_step_submit(e, &f, 1, err, sizeof err), DSV4_ERR_INVALID);
    assert_non_null(strstr(err, "no pick"));
    assert_int_equal(dsv4_steps_in_flight(e), 0);
    assert_int_equal(dsv4_seq_len(e, a), 0); /* a refused step takes nothing */

    dsv4_batch_entry s0[2] = {{.seq = a, .n_tokens = 5, .tokens = prompt, .sampler = sa, .sample = &pa},
                              {.seq = b, .n_tokens = 3, .tokens = prompt}};
    assert_int_equal(dsv4_step_submit(e, s0, 2, err, sizeof err), DSV4_OK);
    assert_int_equal(dsv4_steps_in_flight(e), 1);
    assert_int_equal(dsv4_step(e, s0, 2, err, sizeof err), DSV4_ERR_INVALID); /* dsv4_step while in flight */
    assert_non_null(strstr(err, "not finished"));
    /* b sampled nothing: nothing to follow; a follow of two tokens */
    dsv4_batch_entry fb = {.seq = b, .n_tokens = 1, .follow = 1, .sampler = sb, .sample = &pb};
    assert_int_equal(dsv4_step_submit(e, &fb, 1, err, sizeof err), DSV4_ERR_INVALID);
    dsv4_batch_entry f2 = {.seq = a, .n_tokens = 2, .follow = 1, .sampler = sa, .sample = &pa};
    assert_int_equal(dsv4_step_submit(e, &f2, 1, err, sizeof err), DSV4_ERR_INVALID);
    assert_non_null(strstr(err, "one token"));
    assert_int_equal(dsv4_steps_in_flight(e), 1);

    dsv4_sample pa1;
    dsv4_batch_entry s1[2] = {{.seq = a, .n_tokens = 1, .follow = 1, .sampler = sa, .sample = &pa1},
                              {.seq = b, .n_tokens = 1, .tokens = prompt, .sampler = sb, .sample = &pb}};
    pa.token = pa1.token = pb.token = -7; /* samples are written when their step is finished, not before */
    assert_int_equal(dsv4_step_submit(e, s1, 2, err, sizeof err), DSV4_OK);
    assert_int_equal(pa.token, -7);
    assert_int_equal(pa1.token, -7);
    assert_int_equal(pb.token, -7);
    assert_int_equal(dsv4_steps_in_flight(e), 2);
    assert_int_equal(dsv4_seq_len(e, a), 6);
    assert_int_equal(dsv4_seq_len(e, b), 4);
    assert_int_equal(dsv4_step_submit(e, s1, 2, err, sizeof err), DSV4_ERR_INVALID); /* a third */
    assert_non_null(strstr(err, "two steps"));
    assert_int_equal(dsv4_step_finish(e, err, sizeof err), DSV4_OK);
    assert_in_range(pa.token, 0, info.vocab_size - 1);
    assert_int_equal(pa1.token, -7);
    assert_int_equal(dsv4_steps_in_flight(e), 1);
    assert_int_equal(dsv4_step_finish(e, err, sizeof err), DSV4_OK);
    assert_in_range(pa1.token, 0, info.vocab_size - 1);
    assert_in_range(pb.token, 0, info.vocab_size - 1);
    assert_int_equal(dsv4_step_finish(e, err, sizeof err), DSV4_ERR_INVALID);
    /* following skips no step: a's pick is from the step before the last, b's from the last */
    dsv4_batch_entry s2 = {.seq = b, .n_tokens = 1, .follow = 1, .sampler = sb, .sample = &pb};
    assert_int_equal(dsv4_step(e, &s2, 1, err, sizeof err), DSV4_OK);
    assert_int_equal(dsv4_step(e, &f, 1, err, sizeof err), DSV4_ERR_INVALID);
    assert_non_null(strstr(err, "no pick"));
    /* a freed and re-created sequence has nothing to follow */
    dsv4_seq_free(e, b);
    assert_int_equal(dsv4_seq_create(e, &b, err, sizeof err), DSV4_OK);
    assert_int_equal(dsv4_step(e, &s2, 1, err, sizeof err), DSV4_ERR_INVALID);
    dsv4_sampler_free(sa);
    dsv4_sampler_free(sb);
    dsv4_engine_close(e);
}

#define NS 4     /* sequences */
#define STEPS 24 /* decode steps */

typedef struct {
    int seq[NS];
    dsv4_sampler *smp[NS];
    int32_t picks[NS][STEPS + 1]; /* per sequence, per step: its pick (-2: not in that step) */
} run;

/* The schedule: sequences 0-2 prefill at step 0 (3, 6 and 9 tokens), 3 joins with an 11-token prefill at step
 * 9; sequence 1's pick at step 6 is its last (then it leaves); steps 5 and 13 read sequence 0's logits back. */
static bool in_step(int s, int k)
{
    if (s == 3) return k >= 9;
    if (s == 1) return k <= 6;
    return true;
}
static bool prefill_at(int s, int k)
{
    return s == 3 ? k == 9 : k == 0;
}

static void run_sync(dsv4_engine *e, const int32_t *ids, run *r, float *logits_back)
{
    char err[512];
    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    dsv4_sample smp[NS];
    int32_t last[NS];
    for (int k = 0; k <= STEPS; k++) {
        dsv4_batch_entry en[NS];
        int n = 0, who[NS];
        for (int s = 0; s < NS; s++) {
            r->picks[s][k] = -2;
            if (!in_step(s, k)) continue;
            if (k == 9 && s == 3) assert_int_equal(dsv4_seq_create(e, &r->seq[s], err, sizeof err), DSV4_OK);
            const int np = 3 + 3 * s - (s == 3 ? 1 : 0);
            en[n] = prefill_at(s, k) ? (dsv4_batch_entry){.seq = r->seq[s], .n_tokens = np, .tokens = ids + s}
                                     : (dsv4_batch_entry){.seq = r->seq[s], .n_tokens = 1, .tokens = &last[s]};
            en[n].sampler = r->smp[s];
            en[n].sample = &smp[s];
            if (s == 0 && (k == 5 || k == 13)) en[n].logits = logits_back + (size_t)(k == 13) * info.vocab_size;
            who[n++] = s;
        }
        if (dsv4_step(e, en, n, err, sizeof err) != DSV4_OK) fail_msg("step %d: %s", k, err);
        for (int i = 0; i < n; i++) {
            r->picks[who[i]][k] = last[who[i]] = smp[who[i]].token;
            dsv4_sampler_accept(r->smp[who[i]], smp[who[i]].token);
        }
        if (k == 6) dsv4_seq_free(e, r->seq[1]);
    }
}

/* The same schedule overlapped: step k is submitted before step k - 1 is finished. Sequence 1's leaving is
 * learnt when step 6 finishes, after step 7 (with it) was submitted: it is left out from step 8 and freed once
 * step 7 is finished. */
static void run_overlap(dsv4_engine *e, const int32_t *ids, run *r, float *logits_back)
{
    char err[512];
    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    static dsv4_sample smp[2][NS]; /* a step's samples stay in place until it is finished */
    int who[2][NS], nw[2] = {0, 0};
    bool left1 = false;
    for (int k = 0; k <= STEPS + 1; k++) {
        if (k <= STEPS) {
            dsv4_batch_entry en[NS];
            int n = 0;
            for (int s = 0; s < NS; s++) {
                if (!in_step(s, k) && !(s == 1 && !left1 && k == 7)) continue;
                if (k == 9 && s == 3) assert_int_equal(dsv4_seq_create(e, &r->seq[s], err, sizeof err), DSV4_OK);
                const int np = 3 + 3 * s - (s == 3 ? 1 : 0);
                en[n] = prefill_at(s, k) ? (dsv4_batch_entry){.seq = r->seq[s], .n_tokens = np, .tokens = ids + s}
                                         : (dsv4_batch_entry){.seq = r->seq[s], .n_tokens = 1, .follow = 1};
                en[n].sampler = r->smp[s];
                en[n].sample = &smp[k & 1][s];
                if (s == 0 && (k == 5 || k == 13)) en[n].logits = logits_back + (size_t)(k == 13) * info.vocab_size;
                who[k & 1][n++] = s;
            }
            nw[k & 1] = n;
            if (dsv4_step_submit(e, en, n, err, sizeof err) != DSV4_OK) fail_msg("submit %d: %s", k, err);
        }
        if (k == 0) continue;
        const int j = k - 1; /* finish step j */
        if (dsv4_step_finish(e, err, sizeof err) != DSV4_OK) fail_msg("finish %d: %s", j, err);
        for (int i = 0; i < nw[j & 1]; i++) {
            const int s = who[j & 1][i];
            if (s == 1 && j == 7) continue; /* the step it did not need: its pick is dropped */
            r->picks[s][j] = smp[j & 1][s].token;
            dsv4_sampler_accept(r->smp[s], smp[j & 1][s].token);
        }
        if (j == 6) left1 = true;
        if (j == 7) dsv4_seq_free(e, r->seq[1]);
    }
    assert_int_equal(dsv4_steps_in_flight(e), 0);
}

static void test_same_as_one_at_a_time(void **state)
{
    (void)state;
    const char *fx[] = {"tests/fixtures/tiny_a", "tests/fixtures/q_stock"};
    for (int fi = 0; fi < 2; fi++) {
        char dir[1024];
        const char *src = getenv("DSV4_SRC");
        snprintf(dir, sizeof dir, "%s/%s", src ? src : ".", fx[fi]);
        int32_t ids[512];
        assert_true(tu_read_ids(dir, ids, 512) >= 16);
        dsv4_engine *ea = open_engine(fx[fi]), *eb = open_engine(fx[fi]);
        dsv4_model_info info;
        dsv4_engine_info(ea, &info);
        const int V = info.vocab_size;
        float *la = calloc(2 * (size_t)V, sizeof(float)), *lb = calloc(2 * (size_t)V, sizeof(float));
        run ra, rb;
        memset(&ra, 0, sizeof ra);
        memset(&rb, 0, sizeof rb);
        char err[512];
        for (int s = 0; s < NS; s++) {
            ra.smp[s] = sampler(V, 100 + (uint64_t)s);
            rb.smp[s] = sampler(V, 100 + (uint64_t)s);
            if (s < 3) {
                assert_int_equal(dsv4_seq_create(ea, &ra.seq[s], err, sizeof err), DSV4_OK);
                assert_int_equal(dsv4_seq_create(eb, &rb.seq[s], err, sizeof err), DSV4_OK);
            }
        }
        for (int s = 0; s < NS; s++)
            for (int k = 0; k <= STEPS; k++) rb.picks[s][k] = -2;
        run_sync(ea, ids, &ra, la);
        run_overlap(eb, ids, &rb, lb);
        int distinct = 0;
        for (int s = 0; s < NS; s++)
            for (int k = 0; k <= STEPS; k++) {
                if (ra.picks[s][k] != rb.picks[s][k])
                    fail_msg("%s: sequence %d step %d: picked %d one step at a time, %d overlapped", fx[fi], s, k,
                             ra.picks[s][k], rb.picks[s][k]);
                distinct += k > 0 && ra.picks[s][k] >= 0 && ra.picks[s][k] != ra.picks[s][k - 1];
            }
        assert_true(distinct > 10); /* sampled, not one token over and over */
        if (memcmp(la, lb, 2 * (size_t)V * sizeof(float))) fail_msg("%s: logits read back differ", fx[fi]);
        /* every live sequence's next logits, one step at a time on both: the states are the same */
        for (int s = 0; s < NS; s++) {
            if (s == 1) continue;
            const int32_t t = ra.picks[s][STEPS];
            dsv4_batch_entry a = {.seq = ra.seq[s], .n_tokens = 1, .tokens = &t, .logits = la};
            dsv4_batch_entry b = {.seq = rb.seq[s], .n_tokens = 1, .tokens = &t, .logits = lb};
            assert_int_equal(dsv4_step(ea, &a, 1, err, sizeof err), DSV4_OK);
            assert_int_equal(dsv4_step(eb, &b, 1, err, sizeof err), DSV4_OK);
            if (memcmp(la, lb, (size_t)V * sizeof(float))) fail_msg("%s: sequence %d's state differs", fx[fi], s);
            assert_int_equal(dsv4_seq_len(ea, ra.seq[s]), dsv4_seq_len(eb, rb.seq[s]));
        }
        printf("%s: %d steps, %d sequences (one leaving, one joining): overlapped = one at a time (picks, logits)\n",
               fx[fi], STEPS + 1, NS);
        for (int s = 0; s < NS; s++) {
            dsv4_sampler_free(ra.smp[s]);
            dsv4_sampler_free(rb.smp[s]);
        }
        free(la);
        free(lb);
        dsv4_engine_close(ea);
        dsv4_engine_close(eb);
    }
}

int main(void)
{
    const int rc = tu_test_backend(&test_backend);
    if (rc) return rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_same_as_one_at_a_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
