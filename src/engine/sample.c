/*
 * sample.c - next-token sampling and stop strings (API and semantics in
 * include/dsv4.h, sampling section).
 *
 * The sampler works on one request's logits at a time, with scratch sized at
 * create, so the token loop allocates nothing. Truncation (top_k, top_p) needs
 * the most likely tokens in order, but never the whole vocabulary sorted: a
 * histogram of the probabilities over their float exponent and top mantissa
 * bits finds the few buckets that can hold the kept tokens, and only those are
 * sorted. min_p alone needs no order at all.
 *
 * Every choice is deterministic given the seed: ties go to the lower token id,
 * the draw scans tokens in a fixed order, and sums are accumulated in double.
 */
#define _GNU_SOURCE /* qsort_r, clock_gettime */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "engine/sample.h"


/* ---------------------------------------------------------------- PRNG -- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void dsv4_rng_seed(dsv4_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t dsv4_rng_next(dsv4_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double dsv4_rng_uniform(dsv4_rng *r) { return (double)(dsv4_rng_next(r) >> 11) * 0x1.0p-53; }

/* ------------------------------------------------------------- sampler -- */

/* Buckets over the bits of a float in (0, 1]: positive floats order like their
 * bit patterns, so (bits >> 18) is monotone in the value (8 exponent bits and 5
 * mantissa bits: about 3% wide). 1.0f lands in bucket 0x3F800000 >> 18. */
#define HIST_SHIFT 18
#define HIST_BUCKETS ((0x3F800000u >> HIST_SHIFT) + 1)

struct dsv4_sampler {
    dsv4_sampling_params p;
    int vocab;
    int pick_vocab;    /* ids below it can be picked (vocab_limit) */
    dsv4_rng rng;
    int32_t *bias_ids; /* [n_logit_bias] */
    float *bias;
    int32_t *stop_ids; /* [n_stop_ids] */
    int n_generated;
    /* repetition penalty: tokens of prompt + output */
    uint8_t *seen;     /* [vocab] or NULL */
    int32_t *seen_ids; /* [vocab]: the distinct ones, in first-seen order */
    int n_seen;
    /* presence / frequency: counts over the output */
    int32_t *count;    /* [vocab] or NULL */
    int32_t *gen_ids;  /* [vocab]: distinct generated tokens */
    int n_gen;
    /* scratch */
    float *prob;       /* [vocab] */
    int32_t *cand;     /* [vocab] */
    uint32_t *hist_n;  /* [HIST_BUCKETS] */
    double *hist_m;    /* [HIST_BUCKETS] */
};

void dsv4_sampling_params_default(dsv4_sampling_params *p)
{
    memset(p, 0, sizeof *p);
    p->temperature = 1.0f;
    p->top_p = 1.0f;
    p->repetition_penalty = 1.0f;
}

void dsv4_sampler_free(dsv4_sampler *s)
{
    if (!s)
        return;
    free(s->bias_ids);
    free(s->bias);
    free(s->stop_ids);
    free(s->seen);
    free(s->seen_ids);
    free(s->count);
    free(s->gen_ids);
    free(s->prob);
    free(s->cand);
    free(s->hist_n);
    free(s->hist_m);
    free(s);
}

static void mark_seen(dsv4_sampler *s, int32_t t)
{
    if (s->seen && !s->seen[t]) {
        s->seen[t] = 1;
        s->seen_ids[s->n_seen++] = t;
    }
}

/* A seed for requests that give none: different per sampler and per run. */
static uint64_t fresh_seed(const void *salt)
{
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)salt ^
                 (__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * 0x9E3779B97F4A7C15ull);
    return splitmix64(&x);
}

dsv4_status dsv4_sampler_create(const dsv4_sampling_params *p, int vocab_size, const int32_t *prompt, int n_prompt,
                                dsv4_sampler **out, char *err, size_t errlen)
{
    *out = NULL;
#define REFUSE(...)                                                                                                    \
    do {                                                                                                               \
        dsv4_errf(err, errlen, __VA_ARGS__);                                                                             \
        return DSV4_ERR_INVALID;                                                                                       \
    } while (0)
    if (vocab_size <= 0)
        REFUSE("vocab_size must be positive (got %d)", vocab_size);
    if (!(p->temperature >= 0 && p->temperature <= 100))
        REFUSE("temperature must be in [0, 100] (got %g)", p->temperature);
    if (!(p->top_p > 0 && p->top_p <= 1))
        REFUSE("top_p must be in (0, 1] (got %g)", p->top_p);
    if (p->top_k < 0)
        REFUSE("top_k must be >= 0 (got %d)", p->top_k);
    if (!(p->min_p >= 0 && p->min_p <= 1))
        REFUSE("min_p must be in [0, 1] (got %g)", p->min_p);
    if (!(p->presence_penalty >= -2 && p->presence_penalty <= 2))
        REFUSE("presence_penalty must be in [-2, 2] (got %g)", p->presence_penalty);
    if (!(p->frequency_penalty >= -2 && p->frequency_penalty <= 2))
        REFUSE("frequency_penalty must be in [-2, 2] (got %g)", p->frequency_penalty);
    if (!(p->repetition_penalty > 0 && p->repetition_penalty <= 100))
        REFUSE("repetition_penalty must be in (0, 100] (got %g)", p->repetition_penalty);
    if (p->max_tokens < 0)
        REFUSE("max_tokens must be >= 0 (got %d)", p->max_tokens);
    if (p->top_logprobs < 0 || p->top_logprobs > DSV4_MAX_TOP_LOGPROBS)
        REFUSE("top_logprobs must be in [0, %d] (got %d)", DSV4_MAX_TOP_LOGPROBS, p->top_logprobs);
    if (p->n_logit_bias < 0 || (p->n_logit_bias && (!p->logit_bias_ids || !p->logit_bias)))
        REFUSE("logit_bias: bad arrays");
    for (int i = 0; i < p->n_logit_bias; i++) {
        if (p->logit_bias_ids[i] < 0 || p->logit_bias_ids[i] >= vocab_size)
            REFUSE("logit_bias: token %d is outside the vocabulary (0..%d)", (int)p->logit_bias_ids[i],
                   vocab_size - 1);
        if (!(p->logit_bias[i] >= -100 && p->logit_bias[i] <= 100))
            REFUSE("logit_bias: the bias of token %d must be in [-100, 100] (got %g)", (int)p->logit_bias_ids[i],
                   p->logit_bias[i]);
    }
    if (p->n_stop_ids < 0 || (p->n_stop_ids && !p->stop_ids))
        REFUSE("stop_ids: bad array");
    for (int i = 0; i < p->n_stop_ids; i++)
        if (p->stop_ids[i] < 0 || p->stop_ids[i] >= vocab_size)
            REFUSE("stop token %d is outside the vocabulary (0..%d)", (int)p->stop_ids[i], vocab_size - 1);
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= vocab_size)
            REFUSE("prompt token %d at position %d is outside the vocabulary (0..%d)", (int)prompt[i], i,
                   vocab_size - 1);
#undef REFUSE

    dsv4_sampler *s = calloc(1, sizeof *s);
    if (!s)
        goto nomem;
    s->p = *p;
    s->vocab = vocab_size;
    s->pick_vocab = p->vocab_limit > 0 && p->vocab_limit < vocab_size ? p->vocab_limit : vocab_size;
    size_t v = (size_t)vocab_size;
    s->prob = malloc(v * sizeof *s->prob);
    s->cand = malloc(v * sizeof *s->cand);
    s->hist_n = malloc(HIST_BUCKETS * sizeof *s->hist_n);
    s->hist_m = malloc(HIST_BUCKETS * sizeof *s->hist_m);
    if (!s->prob || !s->cand || !s->hist_n || !s->hist_m)
        goto nomem;
    if (p->n_logit_bias) {
        s->bias_ids = malloc((size_t)p->n_logit_bias * sizeof *s->bias_ids);
        s->bias = malloc((size_t)p->n_logit_bias * sizeof *s->bias);
        if (!s->bias_ids || !s->bias)
            goto nomem;
        memcpy(s->bias_ids, p->logit_bias_ids, (size_t)p->n_logit_bias * sizeof *s->bias_ids);
        memcpy(s->bias, p->logit_bias, (size_t)p->n_logit_bias * sizeof *s->bias);
    }
    if (p->n_stop_ids) {
        if (!(s->stop_ids = malloc((size_t)p->n_stop_ids * sizeof *s->stop_ids)))
            goto nomem;
        memcpy(s->stop_ids, p->stop_ids, (size_t)p->n_stop_ids * sizeof *s->stop_ids);
    }
    s->p.logit_bias_ids = s->bias_ids;
    s->p.logit_bias = s->bias;
    s->p.stop_ids = s->stop_ids;
    if (p->repetition_penalty != 1.0f) {
        s->seen = calloc(v, 1);
        s->seen_ids = malloc(v * sizeof *s->seen_ids);
        if (!s->seen || !s->seen_ids)
            goto nomem;
        for (int i = 0; i < n_prompt; i++)
            mark_seen(s, prompt[i]);
    }
    if (p->presence_penalty != 0 || p->frequency_penalty != 0) {
        s->count = calloc(v, sizeof *s->count);
        s->gen_ids = malloc(v * sizeof *s->gen_ids);
        if (!s->count || !s->gen_ids)
            goto nomem;
    }
    dsv4_rng_seed(&s->rng, p->has_seed ? p->seed : fresh_seed(s));
    *out = s;
    return DSV4_OK;
nomem:
    dsv4_sampler_free(s);
    dsv4_errf(err, errlen, "out of memory for a sampler over %d tokens", vocab_size);
    return DSV4_ERR_NOMEM;
}

dsv4_finish dsv4_sampler_accept(dsv4_sampler *s, int32_t token)
{
    if (token >= 0 && token < s->vocab) {
        mark_seen(s, token);
        if (s->count && s->count[token]++ == 0)
            s->gen_ids[s->n_gen++] = token;
    }
    s->n_generated++;
    for (int i = 0; i < s->p.n_stop_ids; i++)
        if (s->stop_ids[i] == token)
            return DSV4_FINISH_STOP;
    if (s->p.max_tokens > 0 && s->n_generated >= s->p.max_tokens)
        return DSV4_FINISH_LENGTH;
    return DSV4_FINISH_NONE;
}

/* logprob of the raw distribution for every requested entry: one pass for the
 * log-sum-exp, one for the top alternatives. */
static void logprobs_over(int v, int k, const float *logits, dsv4_sample *out)
{
    float m = -INFINITY;
    for (int i = 0; i < v; i++)
        if (logits[i] > m)
            m = logits[i];
    double sum = 0;
    for (int i = 0; i < v; i++)
        sum += exp((double)logits[i] - m);
    double lse = m + log(sum);
    out->logprob = (float)(logits[out->token] - lse);
    out->n_top = 0;
    for (int i = 0; i < v && k > 0; i++) {
        float x = logits[i];
        int n = out->n_top;
        if (isnan(x))
            continue;
        if (n == k && !(x > logits[out->top_ids[n - 1]]))
            continue;
        int j = n < k ? n++ : k - 1; /* slot to fill, then bubble up; equal values keep the lower id first */
        while (j > 0 && x > logits[out->top_ids[j - 1]]) {
            out->top_ids[j] = out->top_ids[j - 1];
            j--;
        }
        out->top_ids[j] = i;
        out->n_top = n;
    }
    for (int j = 0; j < out->n_top; j++)
        out->top_logprobs[j] = (float)(logits[out->top_ids[j]] - lse);
}

static void fill_logprobs(const dsv4_sampler *s, const float *logits, dsv4_sample *out)
{
    logprobs_over(s->pick_vocab, s->p.top_logprobs, logits, out);
}

void dsv4_logprobs_of(const dsv4_sampling_params *p, int vocab_size, const float *logits, int32_t token,
                      dsv4_sample *out)
{
    const int v = p->vocab_limit > 0 && p->vocab_limit < vocab_size ? p->vocab_limit : vocab_size;
    memset(out, 0, sizeof *out);
    out->token = token;
    logprobs_over(v, p->top_logprobs, logits, out);
}

static int by_prob_desc(const void *a, const void *b, void *ctx)
{
    const float *p = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (p[x] != p[y])
        return p[x] > p[y] ? -1 : 1;
    return x < y ? -1 : (x > y);
}

static uint32_t bucket_of(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b >> HIST_SHIFT;
}

dsv4_status dsv4_sampler_sample(dsv4_sampler *s, const float *logits, dsv4_sample *out)
{
    const dsv4_sampling_params *p = &s->p;
    int v = s->pick_vocab;
    float *z = s->prob; /* processed logits, then probabilities, in place */
    memcpy(z, logits, (size_t)v * sizeof *z);
    for (int i = 0; i < s->n_seen; i++) {
        int32_t t = s->seen_ids[i];
        z[t] = z[t] > 0 ? z[t] / p->repetition_penalty : z[t] * p->repetition_penalty;
    }
    for (int i = 0; i < s->n_gen; i++) {
        int32_t t = s->gen_ids[i];
        z[t] -= p->frequency_penalty * (float)s->count[t] + p->presence_penalty;
    }
    for (int i = 0; i < p->n_logit_bias; i++)
        z[s->bias_ids[i]] += s->bias[i];

    int best = 0;
    for (int i = 1; i < v; i++)
        if (z[i] > z[best] || (isnan(z[best]) && !isnan(z[i])))
            best = i;
    if (!isfinite(z[best])) {
        /* all NaN or -inf (or +inf, which no softmax can weigh): nothing sensible to draw */
        return DSV4_ERR_STATE;
    }
    int token = best;
    if (p->temperature > 0 && p->top_k != 1) {
        /* unnormalised probabilities: the top token has exactly 1 */
        float zmax = z[best], inv_t = 1.0f / p->temperature;
        double total = 0;
        for (int i = 0; i < v; i++) {
            float q = isnan(z[i]) ? 0.0f : expf((z[i] - zmax) * inv_t);
            z[i] = q;
            total += q;
        }
        int n_keep;
        const int32_t *keep = NULL; /* NULL: every token with z >= floor, in id order */
        float floor = p->min_p > 0 ? p->min_p : 0; /* min_p x top probability, and the top is 1 */
        if (p->top_k > 0 || p->top_p < 1) {
            /* Find the buckets that hold the kept tokens: the top ones until top_k tokens
             * or top_p of the mass are covered, then sort just those. */
            memset(s->hist_n, 0, HIST_BUCKETS * sizeof *s->hist_n);
            memset(s->hist_m, 0, HIST_BUCKETS * sizeof *s->hist_m);
            for (int i = 0; i < v; i++) {
                uint32_t b = bucket_of(z[i]);
                s->hist_n[b]++;
                s->hist_m[b] += z[i];
            }
            uint32_t lo = HIST_BUCKETS;
            uint64_t cnt = 0;
            double mass = 0;
            while (lo > 0) {
                lo--;
                cnt += s->hist_n[lo];
                mass += s->hist_m[lo];
                /* top_p is a share of the top_k mass: with top_k, all of the top k are needed */
                if (p->top_k > 0 ? cnt >= (uint64_t)p->top_k : mass >= p->top_p * total)
                    break;
            }
            int n = 0;
            for (int i = 0; i < v; i++)
                if (bucket_of(z[i]) >= lo)
                    s->cand[n++] = i;
            qsort_r(s->cand, (size_t)n, sizeof *s->cand, by_prob_desc, z);
            if (p->top_k > 0 && n > p->top_k)
                n = p->top_k;
            if (p->top_p < 1) {
                double kept = 0, acc = 0;
                if (p->top_k > 0)
                    for (int i = 0; i < n; i++)
                        kept += z[s->cand[i]];
                else
                    kept = total;
                int i = 0;
                while (i < n && (acc += z[s->cand[i]]) < p->top_p * kept)
                    i++;
                if (i < n)
                    n = i + 1;
            }
            while (n > 1 && z[s->cand[n - 1]] < floor)
                n--;
            keep = s->cand;
            n_keep = n;
        } else {
            n_keep = v;
        }
        double mass = 0;
        if (keep)
            for (int i = 0; i < n_keep; i++)
                mass += z[keep[i]];
        else
            for (int i = 0; i < v; i++)
                mass += z[i] >= floor ? z[i] : 0;
        double u = dsv4_rng_uniform(&s->rng) * mass, acc = 0;
        token = keep ? keep[0] : best;
        if (keep) {
            for (int i = 0; i < n_keep; i++)
                if ((acc += z[keep[i]]) > u) {
                    token = keep[i];
                    break;
                }
        } else {
            for (int i = 0; i < v; i++)
                if (z[i] >= floor && (acc += z[i]) > u) {
                    token = i;
                    break;
                }
        }
    }
    memset(out, 0, sizeof *out);
    out->token = token;
    if (p->logprobs || p->top_logprobs)
        fill_logprobs(s, logits, out);
    return DSV4_OK;
}

int dsv4_sampler_blind(const dsv4_sampler *s)
{
    const dsv4_sampling_params *p = &s->p;
    return p->repetition_penalty == 1.0f && p->frequency_penalty == 0 && p->presence_penalty == 0 &&
           p->n_logit_bias == 0 && !p->logprobs && !p->top_logprobs;
}

bool dsv4_sampler_device_req(dsv4_sampler *s, dsv4_sample_req *req)
{
    const dsv4_sampling_params *p = &s->p;
    if ((p->repetition_penalty != 1.0f && s->n_seen > 0) ||
        ((p->frequency_penalty != 0 || p->presence_penalty != 0) && s->n_gen > 0) || p->n_logit_bias > 0 ||
        p->logprobs || p->top_logprobs)
        return false;
    req->temperature = p->temperature;
    req->top_p = p->top_p;
    req->min_p = p->min_p;
    req->top_k = p->top_k;
    req->vocab = s->pick_vocab;
    req->u = p->temperature > 0 && p->top_k != 1 ? dsv4_rng_uniform(&s->rng) : 0.0;
    return true;
}

/* --------------------------------------------------------- stop strings -- */

struct dsv4_stop_matcher {
    char **stops;
    size_t *lens;
    int n;
    int stopped;
    char *buf;       /* held-back text, then the current piece appended */
    size_t len, cap;
    char *out;       /* what the last call returned */
    size_t out_cap;
};

void dsv4_stop_free(dsv4_stop_matcher *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n; i++)
        free(m->stops[i]);
    free(m->stops);
    free(m->lens);
    free(m->buf);
    free(m->out);
    free(m);
}

dsv4_status dsv4_stop_create(const char *const *stops, int n_stops, dsv4_stop_matcher **out, char *err,
                             size_t errlen)
{
    *out = NULL;
    if (n_stops < 0 || (n_stops && !stops)) {
        dsv4_errf(err, errlen, "stop: bad array");
        return DSV4_ERR_INVALID;
    }
    for (int i = 0; i < n_stops; i++)
        if (!stops[i] || !*stops[i]) {
            dsv4_errf(err, errlen, "stop[%d]: a stop string must not be empty", i);
            return DSV4_ERR_INVALID;
        }
    dsv4_stop_matcher *m = calloc(1, sizeof *m);
    if (!m || !(m->stops = calloc((size_t)n_stops + 1, sizeof *m->stops)) ||
        !(m->lens = calloc((size_t)n_stops + 1, sizeof *m->lens)))
        goto nomem;
    for (int i = 0; i < n_stops; i++) {
        if (!(m->stops[i] = strdup(stops[i])))
            goto nomem;
        m->lens[i] = strlen(stops[i]);
        m->n++;
    }
    *out = m;
    return DSV4_OK;
nomem:
    dsv4_stop_free(m);
    dsv4_errf(err, errlen, "out of memory");
    return DSV4_ERR_NOMEM;
}

/* The buffer's first n bytes become the output; the rest stays held. */
static int stop_emit(dsv4_stop_matcher *m, size_t n, const char **out, size_t *out_len)
{
    if (n + 1 > m->out_cap) {
        size_t cap = m->out_cap ? m->out_cap : 64;
        while (cap < n + 1)
            cap *= 2;
        char *q = realloc(m->out, cap);
        if (!q)
            return -1;
        m->out = q;
        m->out_cap = cap;
    }
    if (n)
        memcpy(m->out, m->buf, n);
    m->out[n] = 0;
    if (m->len > n)
        memmove(m->buf, m->buf + n, m->len - n);
    m->len -= n;
    *out = m->out;
    *out_len = n;
    return 0;
}

int dsv4_stop_feed(dsv4_stop_matcher *m, const char *text, size_t n, const char **out, size_t *out_len)
{
    *out = "";
    *out_len = 0;
    if (m->stopped)
        return 1;
    if (m->len + n > m->cap) {
        size_t cap = m->cap ? m->cap : 64;
        while (cap < m->len + n)
            cap *= 2;
        char *q = realloc(m->buf, cap);
        if (!q) return -1; /* out of memory: nothing is output (the caller ends the stream) */
        m->buf = q;
        m->cap = cap;
    }
    if (n)
        memcpy(m->buf + m->len, text, n);
    m->len += n;
    const char *s = m->buf;
    size_t len = m->len, first = len;
    for (int k = 0; k < m->n; k++) {
        for (size_t i = 0; i + m->lens[k] <= len && i < first; i++)
            if (s[i] == m->stops[k][0] && !memcmp(s + i, m->stops[k], m->lens[k])) {
                first = i;
                break;
            }
    }
    if (first < len) {
        m->stopped = 1;
        stop_emit(m, first, out, out_len);
        m->len = 0;
        return 1;
    }
    /* hold back the longest suffix that is a proper prefix of some stop string */
    size_t hold = 0;
    for (int k = 0; k < m->n; k++)
        for (size_t h = (m->lens[k] - 1 < len ? m->lens[k] - 1 : len); h > hold; h--)
            if (!memcmp(s + len - h, m->stops[k], h)) {
                hold = h;
                break;
            }
    stop_emit(m, len - hold, out, out_len);
    return 0;
}

void dsv4_stop_flush(dsv4_stop_matcher *m, const char **out, size_t *out_len)
{
    *out = "";
    *out_len = 0;
    if (!m->stopped && m->len)
        stop_emit(m, m->len, out, out_len);
}
