/*
 * metrics.h - the server's Prometheus metrics: counters, gauges and
 * fixed-bucket histograms, updated by the scheduler and the HTTP threads,
 * rendered in the Prometheus text format (version 0.0.4) for GET /metrics.
 */
#ifndef DSV4_SERVER_METRICS_H
#define DSV4_SERVER_METRICS_H

#include <stdint.h>

#include "text/chat.h"

typedef enum {
    SRV_OUTCOME_STOP = 0,
    SRV_OUTCOME_LENGTH,
    SRV_OUTCOME_TOOL_CALLS,
    SRV_OUTCOME_CANCELLED, /* the client went away */
    SRV_OUTCOME_TIMEOUT,   /* the request's deadline passed */
    SRV_OUTCOME_ERROR,
    SRV_OUTCOME_COUNT
} srv_outcome;

typedef enum {
    SRV_HIST_TTFT = 0,   /* arrival -> first generated token */
    SRV_HIST_ITL,        /* between consecutive tokens of one request */
    SRV_HIST_E2E,        /* arrival -> last token */
    SRV_HIST_QUEUE,      /* arrival -> admission */
    SRV_HIST_STEP,       /* one dsv4_step */
    SRV_HIST_COUNT
} srv_hist;

typedef struct srv_metrics srv_metrics;

srv_metrics *srv_metrics_create(void);
void srv_metrics_free(srv_metrics *m);

void srv_metrics_http(srv_metrics *m, int status);            /* one HTTP response sent */
void srv_metrics_finish(srv_metrics *m, srv_outcome o, int64_t prompt_tokens, int64_t gen_tokens);
void srv_metrics_observe(srv_metrics *m, srv_hist h, double seconds);
void srv_metrics_step(srv_metrics *m, double seconds, int n_tokens);
/* Gauges, set by the scheduler after each step. */
void srv_metrics_gauges(srv_metrics *m, int running, int waiting, int64_t pages_used, int64_t pages_free);
/* The prefix cache: a request's prompt tokens looked up (0: not looked up) and those it supplied; the pages
 * and entries it holds. */
void srv_metrics_prefix(srv_metrics *m, int64_t query_tokens, int64_t hit_tokens);
/* A request admitted to wait for a running prompt's state (the prefix cache's shared prefill): missed 0 at its
 * admission, 1 where the wait ended without that state (the request prefills the rest itself). */
void srv_metrics_prefix_wait(srv_metrics *m, int missed);
void srv_metrics_prefix_gauges(srv_metrics *m, int64_t pages_cached, int entries);

/* Appends the exposition text to out. Returns 0, or -1 when out of memory. */
int srv_metrics_render(srv_metrics *m, dsv4_strbuf *out);

#endif
