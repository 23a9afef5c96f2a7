/*
 * metrics.c - counters, gauges and histograms behind GET /metrics.
 *
 * One mutex guards everything: updates are a handful per token and per
 * response, far below anything a lock could slow down, and a render sees one
 * consistent snapshot. Histogram buckets are fixed at compile time (seconds,
 * spanning a fast CPU decode step to a long generation), so nothing is
 * allocated after start-up.
 */
#include "server/metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_BUCKETS 16
static const double bucket_le[N_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                            0.25,   0.5,   1,      2.5,   5,    10,   30,    60};

typedef struct {
    uint64_t counts[N_BUCKETS + 1]; /* last: +Inf */
    double sum;
    uint64_t n;
} hist;

static const int http_codes[] = {200, 204, 400, 401, 404, 405, 408, 413, 429, 500, 503, 504};
#define N_CODES (int)(sizeof http_codes / sizeof http_codes[0])

struct srv_metrics {
    pthread_mutex_t mu;
    uint64_t http[N_CODES + 1]; /* last: any other code */
    uint64_t outcomes[SRV_OUTCOME_COUNT];
    uint64_t prompt_tokens, gen_tokens, steps, step_tokens;
    hist h[SRV_HIST_COUNT];
    int running, waiting;
    int64_t pages_used, pages_free;
    uint64_t prefix_query, prefix_hit, prefix_waits, prefix_waits_missed;
    int64_t pages_cached;
    int prefix_entries;
};

static const char *const outcome_name[SRV_OUTCOME_COUNT] = {"stop", "length", "tool_calls", "cancelled", "timeout",
                                                            "error"};

static const struct {
    const char *name, *help;
} hist_info[SRV_HIST_COUNT] = {
    {"dsv4_time_to_first_token_seconds", "Time from a request's arrival to its first generated token."},
    {"dsv4_inter_token_latency_seconds", "Time between consecutive generated tokens of one request."},
    {"dsv4_e2e_request_latency_seconds", "Time from a request's arrival to its last generated token."},
    {"dsv4_queue_time_seconds", "Time a request waited before it was admitted to the running batch."},
    {"dsv4_step_duration_seconds", "Duration of one engine batch step (decode tokens and prefill chunks)."},
};

srv_metrics *srv_metrics_create(void)
{
    srv_metrics *m = calloc(1, sizeof *m);
    if (m) pthread_mutex_init(&m->mu, NULL);
    return m;
}

void srv_metrics_free(srv_metrics *m)
{
    if (!m) return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void srv_metrics_http(srv_metrics *m, int status)
{
    int i = 0;
    while (i < N_CODES && http_codes[i] != status) i++;
    pthread_mutex_lock(&m->mu);
    m->http[i]++;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_finish(srv_metrics *m, srv_outcome o, int64_t prompt_tokens, int64_t gen_tokens)
{
    pthread_mutex_lock(&m->mu);
    m->outcomes[o]++;
    m->prompt_tokens += (uint64_t)prompt_tokens;
    m->gen_tokens += (uint64_t)gen_tokens;
    pthread_mutex_unlock(&m->mu);
}

static void hist_add(hist *h, double v)
{
    int b = 0;
    while (b < N_BUCKETS && v > bucket_le[b]) b++;
    h->counts[b]++;
    h->sum += v;
    h->n++;
}

void srv_metrics_observe(srv_metrics *m, srv_hist h, double seconds)
{
    pthread_mutex_lock(&m->mu);
    hist_add(&m->h[h], seconds);
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_step(srv_metrics *m, double seconds, int n_tokens)
{
    pthread_mutex_lock(&m->mu);
    hist_add(&m->h[SRV_HIST_STEP], seconds);
    m->steps++;
    m->step_tokens += (uint64_t)n_tokens;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_gauges(srv_metrics *m, int running, int waiting, int64_t pages_used, int64_t pages_free)
{
    pthread_mutex_lock(&m->mu);
    m->running = running;
    m->waiting = waiting;
    m->pages_used = pages_used;
    m->pages_free = pages_free;
    pthread_mutex_unlock(&m->mu);
}

static int put(dsv4_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int put(dsv4_strbuf *b, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    return dsv4_strbuf_put(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

void srv_metrics_prefix(srv_metrics *m, int64_t query_tokens, int64_t hit_tokens)
{
    pthread_mutex_lock(&m->mu);
    m->prefix_query += (uint64_t)query_tokens;
    m->prefix_hit += (uint64_t)hit_tokens;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_prefix_wait(srv_metrics *m, int missed)
{
    pthread_mutex_lock(&m->mu);
    if (missed)
        m->prefix_waits_missed++;
    else
        m->prefix_waits++;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_prefix_gauges(srv_metrics *m, int64_t pages_cached, int entries)
{
    pthread_mutex_lock(&m->mu);
    m->pages_cached = pages_cached;
    m->prefix_entries = entries;
    pthread_mutex_unlock(&m->mu);
}

int srv_metrics_render(srv_metrics *m, dsv4_strbuf *b)
{
    pthread_mutex_lock(&m->mu);
    srv_metrics s = *m; /* a consistent snapshot; render without the lock */
    pthread_mutex_unlock(&m->mu);
    int r = 0;
    r |= put(b, "# HELP dsv4_requests_total Generation requests finished, by outcome.\n"
                "# TYPE dsv4_requests_total counter\n");
    for (int i = 0; i < SRV_OUTCOME_COUNT; i++)
        r |= put(b, "dsv4_requests_total{outcome=\"%s\"} %llu\n", outcome_name[i], (unsigned long long)s.outcomes[i]);
    r |= put(b, "# HELP dsv4_http_responses_total HTTP responses sent, by status code.\n"
                "# TYPE dsv4_http_responses_total counter\n");
    for (int i = 0; i <= N_CODES; i++) {
        if (i < N_CODES)
            r |= put(b, "dsv4_http_responses_total{code=\"%d\"} %llu\n", http_codes[i], (unsigned long long)s.http[i]);
        else
            r |= put(b, "dsv4_http_responses_total{code=\"other\"} %llu\n", (unsigned long long)s.http[i]);
    }
    r |= put(b, "# HELP dsv4_prompt_tokens_total Prompt tokens of finished requests.\n"
                "# TYPE dsv4_prompt_tokens_total counter\ndsv4_prompt_tokens_total %llu\n",
             (unsigned long long)s.prompt_tokens);
    r |= put(b, "# HELP dsv4_generation_tokens_total Tokens generated for finished requests.\n"
                "# TYPE dsv4_generation_tokens_total counter\ndsv4_generation_tokens_total %llu\n",
             (unsigned long long)s.gen_tokens);
    r |= put(b, "# HELP dsv4_steps_total Engine batch steps run.\n"
                "# TYPE dsv4_steps_total counter\ndsv4_steps_total %llu\n", (unsigned long long)s.steps);
    r |= put(b, "# HELP dsv4_step_tokens_total Tokens processed by engine steps (decode and prefill).\n"
                "# TYPE dsv4_step_tokens_total counter\ndsv4_step_tokens_total %llu\n",
             (unsigned long long)s.step_tokens);
    r |= put(b, "# HELP dsv4_requests_running Requests in the running batch.\n"
                "# TYPE dsv4_requests_running gauge\ndsv4_requests_running %d\n", s.running);
    r |= put(b, "# HELP dsv4_requests_waiting Requests queued for admission.\n"
                "# TYPE dsv4_requests_waiting gauge\ndsv4_requests_waiting %d\n", s.waiting);
    r |= put(b,
             "# HELP dsv4_kv_pages_used KV state pages held by running sequences.\n"
             "# TYPE dsv4_kv_pages_used gauge\ndsv4_kv_pages_used %lld\n",
             (long long)s.pages_used);
    r |= put(b, "# HELP dsv4_kv_pages_free KV state pages free in the pool.\n"
                "# TYPE dsv4_kv_pages_free gauge\ndsv4_kv_pages_free %lld\n", (long long)s.pages_free);
    r |= put(b,
             "# HELP dsv4_kv_pages_cached KV state pages held by the prefix cache alone (freed on demand).\n"
             "# TYPE dsv4_kv_pages_cached gauge\ndsv4_kv_pages_cached %lld\n",
             (long long)s.pages_cached);
    r |= put(b,
             "# HELP dsv4_prefix_cache_entries Kept prompt states of the prefix cache.\n"
             "# TYPE dsv4_prefix_cache_entries gauge\ndsv4_prefix_cache_entries %d\n",
             s.prefix_entries);
    r |= put(b,
             "# HELP dsv4_prefix_cache_query_tokens_total Prompt tokens of requests looked up in the prefix "
             "cache.\n# TYPE dsv4_prefix_cache_query_tokens_total counter\n"
             "dsv4_prefix_cache_query_tokens_total %llu\n",
             (unsigned long long)s.prefix_query);
    r |= put(b,
             "# HELP dsv4_prefix_cache_hit_tokens_total Prompt tokens the prefix cache supplied (not prefilled).\n"
             "# TYPE dsv4_prefix_cache_hit_tokens_total counter\ndsv4_prefix_cache_hit_tokens_total %llu\n",
             (unsigned long long)s.prefix_hit);
    r |= put(b,
             "# HELP dsv4_prefix_cache_waits_total Waits of requests for the state of a prompt still being prefilled, "
             "to start from it (at admission, and again where the prompt waited for ended short of it).\n# TYPE "
             "dsv4_prefix_cache_waits_total counter\n"
             "dsv4_prefix_cache_waits_total %llu\n",
             (unsigned long long)s.prefix_waits);
    r |= put(
        b,
        "# HELP dsv4_prefix_cache_waits_missed_total Waits that ended without the prompt's state (that prompt ended "
        "first, or its state could not be kept): the request prefilled the rest, or waited again.\n"
        "# TYPE dsv4_prefix_cache_waits_missed_total counter\ndsv4_prefix_cache_waits_missed_total %llu\n",
        (unsigned long long)s.prefix_waits_missed);
    for (int h = 0; h < SRV_HIST_COUNT; h++) {
        const char *nm = hist_info[h].name;
        r |= put(b, "# HELP %s %s\n# TYPE %s histogram\n", nm, hist_info[h].help, nm);
        uint64_t cum = 0;
        for (int i = 0; i < N_BUCKETS; i++) {
            cum += s.h[h].counts[i];
            r |= put(b, "%s_bucket{le=\"%g\"} %llu\n", nm, bucket_le[i], (unsigned long long)cum);
        }
        cum += s.h[h].counts[N_BUCKETS];
        r |= put(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", nm, (unsigned long long)cum, nm,
                 s.h[h].sum, nm, (unsigned long long)s.h[h].n);
    }
    return r ? -1 : 0;
}
