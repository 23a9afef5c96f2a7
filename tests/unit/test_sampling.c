/*
 * test_sampling.c - the sampler and the stop-string matcher.
 *
 * Seeded and deterministic: temperature -> 0, top_k = 1 and a tiny top_p all
 * equal greedy; on a real-size vocabulary every truncation setting draws
 * exactly the token that a plain full-sort implementation draws with the same
 * random number; min_p, top_k and top_p keep what they should; penalties and
 * logit_bias move the choice as their definitions say; seeds reproduce; stop
 * tokens and max_tokens finish; logprobs are the raw model's; stop strings
 * split across pieces at every position are found, and exactly the text before
 * them comes out.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsv4.h"
#include "engine/sample.h"

static dsv4_sampler *make(const dsv4_sampling_params *p, int vocab, const int32_t *prompt, int n_prompt)
{
    dsv4_sampler *s;
    char err[256];
    if (dsv4_sampler_create(p, vocab, prompt, n_prompt, &s, err, sizeof err))
        fail_msg("%s", err);
    return s;
}

static int32_t draw(dsv4_sampler *s, const float *logits)
{
    dsv4_sample out;
    assert_int_equal(dsv4_sampler_sample(s, logits, &out), DSV4_OK);
    return out.token;
}

static void random_logits(dsv4_rng *r, float *l, int v, float scale)
{
    for (int i = 0; i < v; i++) /* roughly normal: sum of uniforms */
        l[i] = scale * (float)(dsv4_rng_uniform(r) + dsv4_rng_uniform(r) + dsv4_rng_uniform(r) - 1.5);
}

static int argmax(const float *l, int v)
{
    int b = 0;
    for (int i = 1; i < v; i++)
        if (l[i] > l[b])
            b = i;
    return b;
}

/* ----------------------------------------------------------- greedy-like -- */

static void test_greedy_equivalents(void **state)
{
    (void)state;
    enum { V = 5000 };
    static float l[V];
    dsv4_rng r;
    dsv4_rng_seed(&r, 1);
    dsv4_sampling_params g, cold, tiny_p, k1;
    dsv4_sampling_params_default(&g);
    g.temperature = 0;
    cold = g;
    cold.temperature = 1e-3f;
    cold.has_seed = 1;
    tiny_p = g;
    tiny_p.temperature = 1;
    tiny_p.top_p = 1e-6f;
    tiny_p.has_seed = 1;
    k1 = g;
    k1.temperature = 1.5f;
    k1.top_k = 1;
    for (int trial = 0; trial < 50; trial++) {
        random_logits(&r, l, V, 4);
        int b = argmax(l, V);
        l[b] += 0.05f; /* a clear winner: at T = 1e-3 the runner-up weighs e^-50 */
        cold.seed = tiny_p.seed = (uint64_t)trial;
        dsv4_sampler *sg = make(&g, V, NULL, 0), *sc = make(&cold, V, NULL, 0), *sp = make(&tiny_p, V, NULL, 0),
                     *sk = make(&k1, V, NULL, 0);
        assert_int_equal(draw(sg, l), b);
        assert_int_equal(draw(sc, l), b);
        assert_int_equal(draw(sp, l), b);
        assert_int_equal(draw(sk, l), b);
        dsv4_sampler_free(sg), dsv4_sampler_free(sc), dsv4_sampler_free(sp), dsv4_sampler_free(sk);
    }
    /* ties: the lowest id */
    float t[4] = {1, 3, 3, 2};
    dsv4_sampler *s = make(&g, 4, NULL, 0);
    assert_int_equal(draw(s, t), 1);
    dsv4_sampler_free(s);
}

/* ------------------------------------------------ reference (full sort) -- */

static const float *ref_prob;
static int ref_cmp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (ref_prob[x] != ref_prob[y])
        return ref_prob[x] > ref_prob[y] ? -1 : 1;
    return x < y ? -1 : (x > y);
}

/* The documented algorithm, written the obvious way: sort everything. */
typedef struct {
    float *z;     /* unnormalised probabilities */
    int32_t *idx; /* all ids, most likely first */
    int n;        /* kept: idx[0..n), or (no truncation) every id with z >= min_p */
    double total;
    int sorted;
} ref_plan;

static void ref_prepare(ref_plan *r, const dsv4_sampling_params *p, const float *logits, int v)
{
    r->z = malloc((size_t)v * sizeof *r->z);
    r->idx = malloc((size_t)v * sizeof *r->idx);
    int b = argmax(logits, v);
    r->total = 0;
    for (int i = 0; i < v; i++) {
        r->z[i] = expf((logits[i] - logits[b]) * (1.0f / p->temperature));
        r->total += r->z[i];
        r->idx[i] = i;
    }
    r->sorted = p->top_k > 0 || p->top_p < 1;
    r->n = v;
    if (!r->sorted)
        return;
    ref_prob = r->z;
    qsort(r->idx, (size_t)v, sizeof *r->idx, ref_cmp);
    int n = p->top_k > 0 && p->top_k < v ? p->top_k : v;
    double kept = 0; /* the mass top_p takes its share of: the top k, or everything */
    if (p->top_k > 0)
        for (int i = 0; i < n; i++)
            kept += r->z[r->idx[i]];
    else
        kept = r->total;
    if (p->top_p < 1) {
        int i = 0;
        double c = 0;
        while (i < n && (c += r->z[r->idx[i]]) < p->top_p * kept)
            i++;
        if (i < n)
            n = i + 1;
    }
    while (n > 1 && r->z[r->idx[n - 1]] < p->min_p)
        n--;
    r->n = n;
}

static int32_t ref_draw(const ref_plan *r, const dsv4_sampling_params *p, int v, dsv4_rng *rng)
{
    double u = dsv4_rng_uniform(rng), acc = 0, mass = 0;
    if (!r->sorted) {
        for (int i = 0; i < v; i++)
            mass += r->z[i] >= p->min_p ? r->z[i] : 0;
        u *= mass;
        for (int i = 0; i < v; i++)
            if (r->z[i] >= p->min_p && (acc += r->z[i]) > u)
                return i;
        return -1;
    }
    for (int i = 0; i < r->n; i++)
        mass += r->z[r->idx[i]];
    u *= mass;
    for (int i = 0; i < r->n; i++)
        if ((acc += r->z[r->idx[i]]) > u)
            return r->idx[i];
    return -1;
}

static void test_matches_full_sort_reference(void **state)
{
    (void)state;
    enum { V = 129280 };
    float *l = malloc(V * sizeof *l);
    struct {
        float t, top_p, min_p;
        int top_k;
    } settings[] = {
        {1.0f, 1.0f, 0, 50},     {1.0f, 0.9f, 0, 0},      {0.7f, 0.5f, 0.05f, 40}, {1.0f, 1.0f, 0.1f, 0},
        {1.0f, 1.0f, 0, 0},      {1.3f, 0.95f, 0, 1000},  {0.6f, 0.99f, 0, 0},     {2.0f, 0.3f, 0.2f, 0},
        {1.0f, 1.0f, 0.0f, 129279},
    };
    dsv4_rng gen;
    dsv4_rng_seed(&gen, 42);
    for (size_t si = 0; si < sizeof settings / sizeof settings[0]; si++) {
        for (int trial = 0; trial < 4; trial++) {
            /* peaked (scale 12) and flat (scale 2) distributions */
            random_logits(&gen, l, V, trial % 2 ? 2.0f : 12.0f);
            dsv4_sampling_params p;
            dsv4_sampling_params_default(&p);
            p.temperature = settings[si].t;
            p.top_p = settings[si].top_p;
            p.min_p = settings[si].min_p;
            p.top_k = settings[si].top_k;
            p.has_seed = 1;
            p.seed = 1000 + (uint64_t)trial;
            dsv4_sampler *s = make(&p, V, NULL, 0);
            dsv4_rng ref;
            dsv4_rng_seed(&ref, p.seed);
            ref_plan plan;
            ref_prepare(&plan, &p, l, V);
            for (int k = 0; k < 8; k++) {
                int32_t want = ref_draw(&plan, &p, V, &ref), got = draw(s, l);
                if (want != got)
                    fail_msg("setting %zu trial %d draw %d: sampler %d, reference %d", si, trial, k, got, want);
            }
            free(plan.z);
            free(plan.idx);
            dsv4_sampler_free(s);
        }
    }
    free(l);
}

/* ---------------------------------------------------------- truncation -- */

/* probabilities 0.5, 0.3, 0.15, 0.05 */
static const float quad[4] = {-0.693147f, -1.203973f, -1.897120f, -2.995732f};

static unsigned kept_set(const dsv4_sampling_params *base, int draws)
{
    dsv4_sampling_params p = *base;
    p.has_seed = 1;
    p.seed = 7;
    dsv4_sampler *s = make(&p, 4, NULL, 0);
    unsigned mask = 0;
    for (int i = 0; i < draws; i++)
        mask |= 1u << draw(s, quad);
    dsv4_sampler_free(s);
    return mask;
}

static void test_truncation_keeps_what_it_should(void **state)
{
    (void)state;
    dsv4_sampling_params p;
    dsv4_sampling_params_default(&p);
    assert_int_equal(kept_set(&p, 2000), 0xF);
    p.min_p = 0.2f; /* threshold 0.1: drops 0.05 */
    assert_int_equal(kept_set(&p, 2000), 0x7);
    p.min_p = 0.7f; /* threshold 0.35: only 0.5 */
    assert_int_equal(kept_set(&p, 500), 0x1);
    p.min_p = 0.5f; /* threshold 0.25 keeps 0.3 */
    assert_int_equal(kept_set(&p, 2000), 0x3);
    p.min_p = 0;
    p.top_k = 2;
    assert_int_equal(kept_set(&p, 2000), 0x3);
    p.top_k = 0;
    p.top_p = 0.79f;
    assert_int_equal(kept_set(&p, 2000), 0x3);
    p.top_p = 0.81f;
    assert_int_equal(kept_set(&p, 2000), 0x7);
    p.top_k = 3;
    p.top_p = 0.6f; /* of the top 3 (0.95): 0.5 / 0.95 < 0.6 <= 0.8 / 0.95 */
    assert_int_equal(kept_set(&p, 2000), 0x3);

    /* the draw follows the distribution: 20000 draws at T = 1 */
    dsv4_sampling_params_default(&p);
    p.has_seed = 1;
    p.seed = 99;
    dsv4_sampler *s = make(&p, 4, NULL, 0);
    int hits[4] = {0};
    for (int i = 0; i < 20000; i++)
        hits[draw(s, quad)]++;
    dsv4_sampler_free(s);
    const double want[4] = {0.5, 0.3, 0.15, 0.05};
    for (int i = 0; i < 4; i++)
        if (fabs(hits[i] / 20000.0 - want[i]) > 0.015)
            fail_msg("token %d drawn %d times of 20000, expected about %.0f", i, hits[i], want[i] * 20000);
}

/* ------------------------------------------------------------ penalties -- */

static void test_penalties(void **state)
{
    (void)state;
    dsv4_sampling_params p;
    dsv4_sampling_params_default(&p);
    p.temperature = 0;
    /* presence: one use of token 2 costs it 1.0 and hands the argmax to token 1 */
    float l[4] = {0.0f, 1.5f, 2.0f, 0.5f};
    p.presence_penalty = 1.0f;
    dsv4_sampler *s = make(&p, 4, NULL, 0);
    assert_int_equal(draw(s, l), 2);
    assert_int_equal(dsv4_sampler_accept(s, 2), DSV4_FINISH_NONE);
    assert_int_equal(draw(s, l), 1);
    dsv4_sampler_accept(s, 2); /* presence does not grow with the count */
    assert_int_equal(draw(s, l), 1);
    dsv4_sampler_free(s);
    /* frequency: 0.3 per use; token 2 leads by 0.5, so it wins twice and loses on the third */
    p.presence_penalty = 0;
    p.frequency_penalty = 0.3f;
    s = make(&p, 4, NULL, 0);
    int seq[4];
    for (int i = 0; i < 4; i++) {
        seq[i] = draw(s, l);
        dsv4_sampler_accept(s, seq[i]);
    }
    /* 2 (2.0), 2 (1.7 vs 1.5), then 2 is at 1.4 < 1.5: 1, then 1 at 1.2 < 1.4: 2 */
    assert_int_equal(seq[0], 2);
    assert_int_equal(seq[1], 2);
    assert_int_equal(seq[2], 1);
    assert_int_equal(seq[3], 2);
    dsv4_sampler_free(s);
    /* presence and frequency ignore the prompt */
    int32_t prompt[3] = {2, 2, 2};
    p.frequency_penalty = 2;
    p.presence_penalty = 2;
    s = make(&p, 4, prompt, 3);
    assert_int_equal(draw(s, l), 2);
    dsv4_sampler_free(s);
    /* repetition (HF): over the prompt, divides a positive logit, multiplies a negative one */
    dsv4_sampling_params_default(&p);
    p.temperature = 0;
    p.repetition_penalty = 1.5f;
    float pos[3] = {2.0f, 1.5f, -3.0f}; /* 2.0 / 1.5 = 1.33 < 1.5 */
    int32_t has0[1] = {0};
    s = make(&p, 3, has0, 1);
    assert_int_equal(draw(s, pos), 1);
    dsv4_sampler_free(s);
    s = make(&p, 3, NULL, 0);
    assert_int_equal(draw(s, pos), 0);
    dsv4_sampler_accept(s, 0); /* and over the output */
    assert_int_equal(draw(s, pos), 1);
    dsv4_sampler_free(s);
    float neg[3] = {-1.0f, -1.2f, -5.0f}; /* -1.0 * 1.5 = -1.5 < -1.2 */
    s = make(&p, 3, has0, 1);
    assert_int_equal(draw(s, neg), 1);
    dsv4_sampler_free(s);
    p.repetition_penalty = 0.5f; /* below 1 favours repeats */
    s = make(&p, 3, (int32_t[]){1}, 1);
    assert_int_equal(draw(s, pos), 1); /* 1.5 / 0.5 = 3.0 */
    dsv4_sampler_free(s);
}

static void test_logit_bias(void **state)
{
    (void)state;
    enum { V = 1000 };
    static float l[V];
    dsv4_rng r;
    dsv4_rng_seed(&r, 5);
    random_logits(&r, l, V, 3);
    int b = argmax(l, V), low = b == 0 ? 1 : 0;
    dsv4_sampling_params p;
    dsv4_sampling_params_default(&p);
    p.has_seed = 1;
    int32_t id = low;
    float plus = 100;
    p.logit_bias_ids = &id;
    p.logit_bias = &plus;
    p.n_logit_bias = 1;
    dsv4_sampler *s = make(&p, V, NULL, 0);
    for (int i = 0; i < 200; i++)
        assert_int_equal(draw(s, l), low);
    dsv4_sampler_free(s);
    /* -100 forbids the argmax: greedy moves to the runner-up, sampling never picks it */
    float minus = -100;
    id = b;
    p.logit_bias = &minus;
    p.temperature = 0;
    s = make(&p, V, NULL, 0);
    float saved = l[b];
    l[b] = -INFINITY;
    int second = argmax(l, V);
    l[b] = saved;
    assert_int_equal(draw(s, l), second);
    dsv4_sampler_free(s);
    p.temperature = 1;
    s = make(&p, V, NULL, 0);
    for (int i = 0; i < 2000; i++)
        assert_int_not_equal(draw(s, l), b);
    dsv4_sampler_free(s);
}

static void test_seeds(void **state)
{
    (void)state;
    enum { V = 300 };
    static float l[V];
    dsv4_rng r;
    dsv4_rng_seed(&r, 11);
    random_logits(&r, l, V, 1.0f); /* flat: many tokens likely */
    dsv4_sampling_params p;
    dsv4_sampling_params_default(&p);
    p.has_seed = 1;
    p.top_p = 0.95f;
    int32_t a[200], b[200], c[200];
    p.seed = 1234;
    dsv4_sampler *s1 = make(&p, V, NULL, 0), *s2 = make(&p, V, NULL, 0);
    p.seed = 1235;
    dsv4_sampler *s3 = make(&p, V, NULL, 0);
    int differ = 0;
    for (int i = 0; i < 200; i++) {
        a[i] = draw(s1, l), b[i] = draw(s2, l), c[i] = draw(s3, l);
        dsv4_sampler_accept(s1, a[i]), dsv4_sampler_accept(s2, b[i]), dsv4_sampler_accept(s3, c[i]);
        assert_int_equal(a[i], b[i]);
        differ += a[i] != c[i];
    }
    assert_true(differ > 150);
    dsv4_sampler_free(s1), dsv4_sampler_free(s2), dsv4_sampler_free(s3);
    /* no seed: two samplers disagree */
    p.has_seed = 0;
    s1 = make(&p, V, NULL, 0), s2 = make(&p, V, NULL, 0);
    differ = 0;
    for (int i = 0; i < 50; i++)
        differ += draw(s1, l) != draw(s2, l);
    assert_true(differ > 20);
    dsv4_sampler_free(s1), dsv4_sampler_free(s2);
}

static void test_finish_and_logprobs(void **state)
{
    (void)state;
    dsv4_sampling_params p;
    dsv4_sampling_params_default(&p);
    int32_t stops[2] = {1, 7};
    p.stop_ids = stops;
    p.n_stop_ids = 2;
    p.max_tokens = 3;
    dsv4_sampler *s = make(&p, 10, NULL, 0);
    assert_int_equal(dsv4_sampler_accept(s, 5), DSV4_FINISH_NONE);
    assert_int_equal(dsv4_sampler_accept(s, 7), DSV4_FINISH_STOP);
    assert_int_equal(dsv4_sampler_accept(s, 4), DSV4_FINISH_LENGTH);
    dsv4_sampler_free(s);

    /* logprobs: raw log-softmax, whatever the temperature and bias */
    float l[5] = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
    double lse = 0;
    for (int i = 0; i < 5; i++)
        lse += exp(l[i]);
    lse = log(lse);
    dsv4_sampling_params_default(&p);
    p.temperature = 0.3f;
    int32_t id = 4;
    float bias = 100;
    p.logit_bias_ids = &id, p.logit_bias = &bias, p.n_logit_bias = 1;
    p.logprobs = 1;
    p.top_logprobs = 3;
    p.has_seed = 1;
    s = make(&p, 5, NULL, 0);
    dsv4_sample out;
    assert_int_equal(dsv4_sampler_sample(s, l, &out), DSV4_OK);
    assert_int_equal(out.token, 4);
    assert_float_equal(out.logprob, -1.0 - lse, 1e-5);
    assert_int_equal(out.n_top, 3);
    assert_int_equal(out.top_ids[0], 1); /* tie with 3: lower id first */
    assert_int_equal(out.top_ids[1], 3);
    assert_int_equal(out.top_ids[2], 2);
    assert_float_equal(out.top_logprobs[0], 3.0 - lse, 1e-5);
    assert_float_equal(out.top_logprobs[2], 2.0 - lse, 1e-5);
    dsv4_sampler_free(s);
}

/* dsv4_sampler_blind: a sampler whose draws need neither its accepted tokens nor host logits (no penalties,
 * logit_bias or logprobs) - the ones a step may draw for before the last pick is accepted. */
static void test_blind(void **state)
{
    (void)state;
    int32_t id = 3;
    float bias = 1;
    for (int k = 0; k < 7; k++) {
        dsv4_sampling_params p;
        dsv4_sampling_params_default(&p);
        p.temperature = 0.7f, p.top_p = 0.9f, p.top_k = 20, p.min_p = 0.01f, p.has_seed = 1, p.max_tokens = 5;
        if (k == 1) p.repetition_penalty = 1.1f;
        if (k == 2) p.frequency_penalty = 0.5f;
        if (k == 3) p.presence_penalty = -0.5f;
        if (k == 4) p.logit_bias_ids = &id, p.logit_bias = &bias, p.n_logit_bias = 1;
        if (k == 5) p.logprobs = 1;
        if (k == 6) p.logprobs = 1, p.top_logprobs = 2;
        dsv4_sampler *s = make(&p, 50, NULL, 0);
        assert_int_equal(dsv4_sampler_blind(s), k == 0);
        dsv4_sampler_free(s);
    }
}

static void test_refusals(void **state)
{
    (void)state;
    dsv4_sampling_params p;
    dsv4_sampler *s;
    char err[256];
#define BAD(stmt, needle)                                                                                              \
    do {                                                                                                               \
        dsv4_sampling_params_default(&p);                                                                             \
        stmt;                                                                                                          \
        assert_int_equal(dsv4_sampler_create(&p, 100, NULL, 0, &s, err, sizeof err), DSV4_ERR_INVALID);               \
        if (!strstr(err, needle))                                                                                      \
            fail_msg("\"%s\" does not name %s", err, needle);                                                          \
    } while (0)
    BAD(p.temperature = -1, "temperature");
    BAD(p.temperature = NAN, "temperature");
    BAD(p.top_p = 0, "top_p");
    BAD(p.top_p = 1.5f, "top_p");
    BAD(p.top_k = -2, "top_k");
    BAD(p.min_p = 2, "min_p");
    BAD(p.presence_penalty = 3, "presence_penalty");
    BAD(p.frequency_penalty = -2.5f, "frequency_penalty");
    BAD(p.repetition_penalty = 0, "repetition_penalty");
    BAD(p.max_tokens = -1, "max_tokens");
    BAD(p.top_logprobs = 21, "top_logprobs");
    int32_t id = 100;
    float b = 1;
    BAD((p.logit_bias_ids = &id, p.logit_bias = &b, p.n_logit_bias = 1), "logit_bias");
    BAD((id = 3, b = 101, p.logit_bias_ids = &id, p.logit_bias = &b, p.n_logit_bias = 1), "logit_bias");
    BAD((id = -1, p.stop_ids = &id, p.n_stop_ids = 1), "stop token");
    dsv4_sampling_params_default(&p);
    int32_t prompt[1] = {100};
    assert_int_equal(dsv4_sampler_create(&p, 100, prompt, 1, &s, err, sizeof err), DSV4_ERR_INVALID);
    const char *empty[1] = {""};
    dsv4_stop_matcher *m;
    assert_int_equal(dsv4_stop_create(empty, 1, &m, err, sizeof err), DSV4_ERR_INVALID);
}

/* ---------------------------------------------------------- stop strings -- */

/* Feeds text cut at cuts; returns what came out, and checks that after each
 * piece everything is out except a suffix that may begin a stop string. */
static char *run_stops(const char *const *stops, int n_stops, const char *text, size_t n, const size_t *cuts,
                       int n_cuts, int *stopped)
{
    dsv4_stop_matcher *m;
    char err[128];
    assert_int_equal(dsv4_stop_create(stops, n_stops, &m, err, sizeof err), DSV4_OK);
    char *got = calloc(n + 1, 1);
    size_t got_n = 0, at = 0;
    *stopped = 0;
    for (int i = 0; i <= n_cuts && !*stopped; i++) {
        size_t to = i < n_cuts ? cuts[i] : n;
        const char *o;
        size_t on;
        *stopped = dsv4_stop_feed(m, text + at, to - at, &o, &on);
        memcpy(got + got_n, o, on);
        got_n += on;
        at = to;
        if (!*stopped) {
            /* held back: text[got_n..to) must be a proper prefix of some stop string */
            size_t held = to - got_n;
            int ok = held == 0;
            for (int k = 0; k < n_stops && !ok; k++)
                ok = held < strlen(stops[k]) && !memcmp(text + got_n, stops[k], held);
            if (!ok)
                fail_msg("after %zu bytes, %zu held back that cannot begin a stop string", to, held);
        }
    }
    if (!*stopped) {
        const char *o;
        size_t on;
        dsv4_stop_flush(m, &o, &on);
        memcpy(got + got_n, o, on);
        got_n += on;
    }
    got[got_n] = 0;
    dsv4_stop_free(m);
    return got;
}

static void check_stop_case(const char *const *stops, int n_stops, const char *text, const char *want, int want_stop)
{
    size_t n = strlen(text);
    int stopped;
    for (size_t a = 0; a <= n; a++) {
        for (size_t b = a; b <= n; b++) { /* every pair of cut points */
            size_t cuts[2] = {a, b};
            char *got = run_stops(stops, n_stops, text, n, cuts, 2, &stopped);
            if (strcmp(got, want) || stopped != want_stop)
                fail_msg("\"%s\" cut at %zu, %zu: got \"%s\" (stopped %d), expected \"%s\"", text, a, b, got, stopped,
                         want);
            free(got);
        }
    }
    size_t *cuts = malloc((n + 1) * sizeof *cuts);
    for (size_t i = 0; i < n; i++)
        cuts[i] = i + 1;
    char *got = run_stops(stops, n_stops, text, n, cuts, (int)n, &stopped);
    assert_string_equal(got, want);
    assert_int_equal(stopped, want_stop);
    free(got);
    free(cuts);
}

static void test_stop_strings(void **state)
{
    (void)state;
    const char *s1[] = {"END", "\n\nUser:"};
    check_stop_case(s1, 2, "Hello, world. EN ENE END and more", "Hello, world. EN ENE ", 1);
    check_stop_case(s1, 2, "line\n\nUse\n\nUser: hi", "line\n\nUse", 1);
    check_stop_case(s1, 2, "no stop here, EN", "no stop here, EN", 0);
    const char *s2[] = {"aab", "ab", "b"};
    check_stop_case(s2, 3, "xaaab", "xa", 1);
    const char *s3[] = {"北京", "😀"};
    check_stop_case(s3, 2, "天气北方北京好", "天气北方", 1);
    check_stop_case(s3, 2, "smile 😀!", "smile ", 1);
    /* after a stop, nothing more comes out */
    dsv4_stop_matcher *m;
    char err[64];
    const char *one[] = {"x"};
    assert_int_equal(dsv4_stop_create(one, 1, &m, err, sizeof err), DSV4_OK);
    const char *o;
    size_t on;
    assert_int_equal(dsv4_stop_feed(m, "abxcd", 5, &o, &on), 1);
    assert_int_equal(on, 2);
    assert_memory_equal(o, "ab", 2);
    assert_int_equal(dsv4_stop_feed(m, "more", 4, &o, &on), 1);
    assert_int_equal(on, 0);
    dsv4_stop_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_equivalents),
        cmocka_unit_test(test_matches_full_sort_reference),
        cmocka_unit_test(test_truncation_keeps_what_it_should),
        cmocka_unit_test(test_penalties),
        cmocka_unit_test(test_logit_bias),
        cmocka_unit_test(test_seeds),
        cmocka_unit_test(test_finish_and_logprobs),
        cmocka_unit_test(test_blind),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_stop_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
