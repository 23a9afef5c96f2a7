/*
 * scheduler.h - requests and the worker thread that owns the engine.
 *
 * An HTTP thread builds a srv_req (prompt ids, sampling settings, how to read
 * the output), submits it and then only reads its output under req->mu: the
 * scheduler appends text, tool calls and per-token logprobs and broadcasts
 * req->cv after every token. A request is reference counted (the submitter and
 * the scheduler each hold one reference); srv_req_cancel marks it abandoned
 * and the scheduler frees its sequence at its next step.
 */
#ifndef DSV4_SERVER_SCHEDULER_H
#define DSV4_SERVER_SCHEDULER_H

#include <pthread.h>
#include <stdint.h>

#include "dsv4.h"
#include "server/metrics.h"
#include "text/chat.h"

#define SRV_MAX_STOPS 16

/* One generated token with its logprobs (kept only when asked for). */
typedef struct {
    int32_t token;
    float logprob;
    int n_top;
    int32_t top_ids[DSV4_MAX_TOP_LOGPROBS];
    float top_lp[DSV4_MAX_TOP_LOGPROBS];
} srv_tok;

typedef struct {
    char *id;        /* "call_..." */
    char *name;
    char *arguments; /* JSON text */
} srv_tool_call;

typedef struct srv_req {
    /* ---- set by the submitter, read-only afterwards ---- */
    int32_t *prompt;           /* [n_prompt] token ids (owned) */
    int n_prompt;
    dsv4_sampling_params sp;   /* its arrays point into the fields below */
    int32_t stop_ids[2];
    int32_t *bias_ids;         /* [sp.n_logit_bias] (owned) */
    float *bias;
    char *stops[SRV_MAX_STOPS]; /* stop strings (owned) */
    int n_stops;
    int chat;                  /* 1: run the V4 output parser (reasoning, content, tool calls) */
    int thinking;              /* the prompt ends in "<think>" */
    char *forced_text;         /* chat: text of forced tokens at the end of the prompt, fed to the parser first */
    char *echo_text;           /* completions' echo: the prompt as text (owned); NULL without echo */
    size_t echo_len;           /* its bytes (an id prompt's text may hold a NUL byte) */
    int no_gen;                /* generate nothing: the request ends once its prompt is in (echo, max_tokens 0) */
    int choice;                /* k of the choices of one prompt (srv_req_clone's k): the usage counts choice 0's
                                  prompt only */
    uint64_t group;            /* the same for the choices of one prompt (srv_req_clone), unique otherwise */
    double t_arrive;           /* srv_now() at arrival */
    double deadline;           /* srv_now() after which the request is abandoned; 0 = none */

    /* ---- written by the scheduler under mu ---- */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    dsv4_strbuf content;       /* chat content, or the completion's text */
    dsv4_strbuf reasoning;     /* chat reasoning_content */
    srv_tool_call *tools;      /* completed tool calls */
    int n_tools, cap_tools;
    srv_tok *toks;             /* generated tokens (with logprobs when sp.logprobs) */
    int n_toks, cap_toks;
    srv_tok *ptoks;            /* echo with logprobs: [n_prompt] the prompt tokens' logprobs, each given those before
                                  (allocated by the submitter; ptoks[0] has none) */
    int n_ptoks;               /* the prompt tokens done: n_prompt once the prompt is in */
    int n_gen;                 /* tokens generated (EOS included) */
    int n_cached;              /* prompt tokens the prefix cache supplied (usage.prompt_tokens_details) */
    int done;                  /* 1: finished; nothing more will be appended */
    srv_outcome outcome;
    char error[256];           /* outcome ERROR: what went wrong */
    double t_first, t_last;    /* first and last token */
    int malformed_tools;       /* the parser met a malformed tool-call block */

    /* ---- shared ---- */
    volatile int cancelled;    /* set by the submitter (client gone); read by the scheduler */
    int refs;                  /* under the scheduler lock */
    struct srv_sched_slot *slot_; /* private to the scheduler */
    struct srv_req *next_;     /* private: queue link */
} srv_req;

double srv_now(void);

/* A request with prompt ids copied in (sampling defaults, one reference). */
srv_req *srv_req_create(const int32_t *prompt, int n_prompt);
/* Another choice of r (not yet submitted): its prompt and settings copied, the seed (when r has one) plus k,
 * one reference. NULL when out of memory. */
srv_req *srv_req_clone(const srv_req *r, int k);
/* The same for another prompt (a completions batch): r's settings, prompt [n_prompt] instead of r's, choice k;
 * an echo's text is not copied (it is the prompt's), its logprobs sized for this prompt. */
srv_req *srv_req_clone_prompt(const srv_req *r, const int32_t *prompt, int n_prompt, int k);

typedef struct {
    int max_running;         /* sequences in the running batch */
    int max_queue;           /* requests waiting beyond those */
    int chunked_prefill;     /* prefill tokens per step */
    int64_t pages_total;     /* for the reservation arithmetic */
    int overlap;             /* submit each step before the previous one's picks are read (scheduler.c) */
    int prefix_cache;        /* reuse kept states of earlier prompts (server/prefix.h; needs engine snapshots) */
} srv_sched_opts;

typedef struct srv_sched srv_sched;

/* "<prefix><sep><16 hex digits>", unique in this process (response ids, tool-call ids). */
void srv_make_id(const char *prefix, char sep, char *out, size_t n);

dsv4_status srv_sched_start(dsv4_engine *e, const dsv4_tokenizer *tok, const srv_sched_opts *o, srv_metrics *m,
                            srv_sched **out, char *err, size_t errlen);
/* Enqueue; takes a second reference. Returns DSV4_OK, DSV4_ERR_NOMEM when the
 * queue is full (429), DSV4_ERR_STATE when shutting down (503), or
 * DSV4_ERR_INVALID when the request can never fit the KV pool. */
dsv4_status srv_sched_submit(srv_sched *s, srv_req *r, char *err, size_t errlen);
/* The client is gone or no longer wants the output: stop and free at the next step. */
void srv_req_cancel(srv_sched *s, srv_req *r);
/* Drop the caller's reference. */
void srv_req_release(srv_sched *s, srv_req *r);
/* Counts for /metrics and shutdown. */
void srv_sched_counts(srv_sched *s, int *running, int *waiting);
/* The most requests it holds at once: running plus queued (a request of n choices needs n of them). */
int srv_sched_capacity(const srv_sched *s);
/* Refuse new requests from now on; requests already in go on. */
void srv_sched_drain(srv_sched *s);
/* Cancel everything still running or waiting. */
void srv_sched_cancel_all(srv_sched *s);
/* Stops the worker (after srv_sched_drain and, typically, waiting for zero counts). */
void srv_sched_stop(srv_sched *s);

#endif
