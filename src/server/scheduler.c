/*
 * scheduler.c - continuous batching: the one thread that owns the engine.
 *
 * Every iteration of the worker (1) drops queued requests whose client left
 * or whose deadline passed, (2) admits queued requests in arrival order while
 * a running slot is free and the KV pool can hold their whole future (prompt
 * plus max_tokens, capped by the context: a running request never waits for
 * pages, so nothing is ever preempted), (3) builds one batch from a decode
 * token for every running sequence that has finished its prompt plus prefill
 * chunks of the others, oldest first, under the --chunked-prefill-size token
 * budget, (4) submits it as a step, which also picks each sampling sequence's
 * next token with its own sampler (on the GPU when the backend has one: only
 * the token ids come back), and (5) finishes the step before it and
 * detokenises its picks, matches stop strings, parses the chat output and
 * appends to the request under its lock. Arrivals join at the next iteration.
 *
 * Overlap (srv_sched_opts.overlap): the batch of step k + 1 is built and
 * submitted while step k runs, its decode entries following step k's picks
 * on the device (dsv4_step_submit's follow entries), and step k is finished
 * and its picks handled while step k + 1 runs: the host's turn hides behind
 * the device's. Where a pick cannot be followed blind - a sampler with
 * penalties, logit_bias or logprobs (the host reads its logits), or a pick
 * that is its request's last by max_tokens or the context - step k is
 * finished before step k + 1 is built (one step at a time, as without
 * overlap). A request that ends on a stop token or string learns it a step
 * late: the step it is already in runs for nothing (its pick is dropped) and
 * its sequence is freed once no step in flight holds it.
 *
 * Batch invariance: the engine computes each sequence's logits independently
 * of its batch-mates and each request owns its sampler (PRNG included), so a
 * greedy request gives the same tokens alone or in any company.
 *
 * Nothing in the token loop allocates except the per-request output buffers
 * (text, logprobs), which grow geometrically and are bounded by max_tokens.
 */
#include "server/scheduler.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/prefix.h"

typedef struct srv_sched_slot {
    srv_req *r;
    int seq;
    int prefilled;         /* prompt tokens already in the sequence */
    int32_t last;          /* the token to decode next */
    int64_t pages;         /* pages reserved for its whole future (less the whole pages its prefix hit shares) */
    int64_t kept;          /* prefix cache: the length of its state kept last, or of the prefix it started from */
    int save_at;           /* prefix cache: the prompt length at which its state is kept */
    int branch_at;         /* prefix cache: where its prompt parts from a kept one's tokens (its state kept there) */
    int wait_lead;         /* prefix cache: its prefill waits for a running prompt's state (the lead: lead_slot,
                              whose request is lead_group / lead_choice) kept at wait_at, a point in the run of
                              tokens both prompts start with, to start from it (lead_pick, followers_update) */
    int lead_slot, lead_choice;
    uint64_t lead_group;
    int repick; /* prefix cache: its lead ended short of the point; it may wait for another (followers_repick) */
    int64_t wait_at;
    int hold_save, hold_branch; /* prefix cache: a page in its reservation for the copy that keeping its state at
                                   save_at / branch_at takes (a point inside a page, which a request waits for) */
    int64_t from_step;     /* prefix cache: the newest step submitted when it started from a kept state (0: none) */
    int32_t *gen;          /* prefix cache: the tokens it picked, in order (an entry at its end holds them) */
    int n_gen_ids, cap_gen;
    int no_keep;     /* prefix cache: its state is not kept at its end (a pick not recorded, a failed step) */
    int chunk_entry; /* prefix cache: the entry kept at its last chunk's end (-1: none) and that entry's stamp */
    uint64_t chunk_stamp;
    srv_outcome outcome; /* how it ended (finish_slot) */
    int oom;             /* an allocation for its output failed: it ends with "out of memory" (slot_sample) */
    dsv4_sampler *smp;
    dsv4_detok *dt;
    dsv4_stop_matcher *sm;
    dsv4_chat_parser *ps;
    int in_batch;       /* its entry index in the step being built, or -1 */
    int sample;         /* the step being built picks its next token */
    dsv4_sample picked; /* what a step picked (written when the step is finished) */
    int inflight;       /* submitted steps not yet finished that hold it */
    int ending;         /* its request is over; the slot is cleared once no step holds it */
    int64_t pick_step;  /* the step in which it picks last (srv_step.id), 0 none */
    /* echo with logprobs: the prompt's logits, PLP_ROWS rows a step, read when that step is finished */
    float *plogits;       /* [PLP_ROWS][V] */
    int plp_at, plp_take; /* the chunk in flight: its first position and rows */
    int plp_inflight;     /* a chunk's logits are being computed: no further chunk until it is read */
} srv_slot;

/* Prompt rows whose logits a step keeps for an echo with logprobs (a chunk of the prompt at most this long) */
#define PLP_ROWS 32

/* A submitted step's members, read when it is finished (a slot is not reused while a step holds it). */
typedef struct {
    int slot;
    int sample; /* it picks there */
} srv_member;
typedef struct {
    int64_t id;
    int n, n_tok;
    srv_member *m; /* [max_running] */
} srv_step;

struct srv_sched {
    dsv4_engine *e;
    const dsv4_tokenizer *tok;
    srv_sched_opts o;
    srv_metrics *m;
    int V, tok_vocab;
    int64_t max_ctx;
    int page_tokens;
    pthread_t th;
    int started;

    pthread_mutex_t mu;     /* guards everything below up to the worker-private part */
    pthread_cond_t cv;
    srv_req *q_head, *q_tail;
    int n_waiting, n_running;
    int n_ending; /* running requests already answered whose slots steps in flight still hold */
    int draining, stopping;
    int abort_all;          /* srv_sched_cancel_all: cancel everything at the next iteration */

    /* worker-private */
    srv_slot *slots;        /* [max_running] */
    int64_t reserved;       /* pages reserved by running requests */
    dsv4_batch_entry *entries;
    srv_step steps[2]; /* submitted, not finished: steps[0] the oldest */
    int n_steps;
    int64_t n_submitted;
    int64_t fault_step; /* DSV4_SERVE_FAULT_STEP: the step of this id is reported failed (tests of that path) */
    double t_step; /* when the step being timed began (srv_metrics_step) */
    srv_prefix *pc;     /* the prefix cache; NULL when off */
    int64_t keep_gap;   /* prefix cache: a prompt's state is kept at a chunk's end this many tokens past the last */
    int64_t branch_gap; /* prefix cache: ... and where it parts from a kept state's tokens, this many past its hit */
};

double srv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

srv_req *srv_req_create(const int32_t *prompt, int n_prompt)
{
    static uint64_t groups;
    srv_req *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->group = __atomic_add_fetch(&groups, 1, __ATOMIC_RELAXED);
    r->prompt = malloc((size_t)(n_prompt > 0 ? n_prompt : 1) * sizeof(int32_t));
    if (!r->prompt) {
        free(r);
        return NULL;
    }
    if (n_prompt > 0) memcpy(r->prompt, prompt, (size_t)n_prompt * sizeof(int32_t));
    r->n_prompt = n_prompt;
    dsv4_sampling_params_default(&r->sp);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->refs = 1;
    r->t_arrive = srv_now();
    return r;
}

static void req_destroy(srv_req *r);

srv_req *srv_req_clone(const srv_req *r, int k)
{
    return srv_req_clone_prompt(r, r->prompt, r->n_prompt, k);
}

srv_req *srv_req_clone_prompt(const srv_req *r, const int32_t *prompt, int n_prompt, int k)
{
    const int same = prompt == r->prompt;
    srv_req *c = srv_req_create(prompt, n_prompt);
    if (!c) return NULL;
    c->choice = k;
    if (same) c->group = r->group;
    c->sp = r->sp;
    memcpy(c->stop_ids, r->stop_ids, sizeof c->stop_ids);
    if (r->sp.stop_ids == r->stop_ids) c->sp.stop_ids = c->stop_ids;
    const int nb = r->sp.n_logit_bias;
    int bad = 0;
    if (r->bias_ids) {
        c->bias_ids = malloc((size_t)(nb > 0 ? nb : 1) * sizeof *c->bias_ids);
        c->bias = malloc((size_t)(nb > 0 ? nb : 1) * sizeof *c->bias);
        bad |= !c->bias_ids || !c->bias;
        if (!bad && nb > 0) {
            memcpy(c->bias_ids, r->bias_ids, (size_t)nb * sizeof *c->bias_ids);
            memcpy(c->bias, r->bias, (size_t)nb * sizeof *c->bias);
        }
    }
    c->sp.logit_bias_ids = c->bias_ids;
    c->sp.logit_bias = c->bias;
    for (int i = 0; i < r->n_stops; i++) bad |= !(c->stops[c->n_stops++] = strdup(r->stops[i]));
    c->chat = r->chat;
    c->thinking = r->thinking;
    if (r->forced_text) bad |= !(c->forced_text = strdup(r->forced_text));
    if (r->echo_text && same) {
        bad |= !(c->echo_text = malloc(r->echo_len + 1));
        if (c->echo_text) memcpy(c->echo_text, r->echo_text, r->echo_len + 1);
        c->echo_len = r->echo_len;
    }
    c->no_gen = r->no_gen;
    if (r->ptoks) bad |= !(c->ptoks = calloc((size_t)n_prompt, sizeof *c->ptoks));
    c->t_arrive = r->t_arrive;
    c->deadline = r->deadline;
    if (r->sp.has_seed) c->sp.seed = r->sp.seed + (uint64_t)k;
    if (bad) {
        req_destroy(c);
        return NULL;
    }
    return c;
}

static void req_destroy(srv_req *r)
{
    free(r->prompt);
    free(r->bias_ids);
    free(r->bias);
    for (int i = 0; i < r->n_stops; i++) free(r->stops[i]);
    free(r->forced_text);
    free(r->echo_text);
    free(r->ptoks);
    dsv4_strbuf_free(&r->content);
    dsv4_strbuf_free(&r->reasoning);
    for (int i = 0; i < r->n_tools; i++) {
        free(r->tools[i].id);
        free(r->tools[i].name);
        free(r->tools[i].arguments);
    }
    free(r->tools);
    free(r->toks);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

void srv_req_release(srv_sched *s, srv_req *r)
{
    if (!r) return;
    pthread_mutex_lock(&s->mu);
    int last = --r->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (last) req_destroy(r);
}

void srv_req_cancel(srv_sched *s, srv_req *r)
{
    r->cancelled = 1;
    pthread_mutex_lock(&s->mu);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static int64_t pages_for(const srv_sched *s, const srv_req *r)
{
    int64_t end = (int64_t)r->n_prompt + (r->sp.max_tokens > 0 ? r->sp.max_tokens : s->max_ctx);
    if (end > s->max_ctx) end = s->max_ctx;
    return (end + s->page_tokens - 1) / s->page_tokens;
}

dsv4_status srv_sched_submit(srv_sched *s, srv_req *r, char *err, size_t errlen)
{
    int64_t need = pages_for(s, r);
    if (need > s->o.pages_total) {
        snprintf(err, errlen, "the request needs %lld KV pages (%d prompt tokens + max_tokens %d), the pool has %lld",
                 (long long)need, r->n_prompt, r->sp.max_tokens, (long long)s->o.pages_total);
        return DSV4_ERR_INVALID;
    }
    pthread_mutex_lock(&s->mu);
    if (s->draining || s->stopping) {
        pthread_mutex_unlock(&s->mu);
        snprintf(err, errlen, "the server is shutting down");
        return DSV4_ERR_STATE;
    }
    /* an answered request's slot is free to the client that sent it: a client that sends its next request on
     * the answer must not find the server busy with the last one (its slot is released after the steps in
     * flight, and by the worker, not before the reader wakes); admit_locked still waits for the slot */
    if (s->n_running - s->n_ending + s->n_waiting >= s->o.max_running + s->o.max_queue) {
        pthread_mutex_unlock(&s->mu);
        snprintf(err, errlen, "the server is busy: %d requests running and %d waiting (--max-queue %d)",
                 s->n_running, s->n_waiting, s->o.max_queue);
        return DSV4_ERR_NOMEM;
    }
    r->refs++;
    r->next_ = NULL;
    if (s->q_tail) s->q_tail->next_ = r;
    else s->q_head = r;
    s->q_tail = r;
    s->n_waiting++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return DSV4_OK;
}

void srv_sched_counts(srv_sched *s, int *running, int *waiting)
{
    pthread_mutex_lock(&s->mu);
    *running = s->n_running;
    *waiting = s->n_waiting;
    pthread_mutex_unlock(&s->mu);
}

int srv_sched_capacity(const srv_sched *s)
{
    return s->o.max_running + s->o.max_queue;
}

void srv_sched_drain(srv_sched *s)
{
    pthread_mutex_lock(&s->mu);
    s->draining = 1;
    pthread_mutex_unlock(&s->mu);
}

void srv_sched_cancel_all(srv_sched *s)
{
    pthread_mutex_lock(&s->mu);
    s->abort_all = 1; /* the slots are the worker's: it cancels them itself */
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* ---- finishing ----------------------------------------------------------- */

/* Marks r done with outcome o (r->mu held by the caller), records metrics and
 * wakes its reader. */
static void req_done_locked(srv_sched *s, srv_req *r, srv_outcome o)
{
    if (o == SRV_OUTCOME_STOP && r->n_tools > 0) o = SRV_OUTCOME_TOOL_CALLS;
    r->outcome = o;
    r->done = 1;
    double now = srv_now();
    if (r->n_gen > 0 && o != SRV_OUTCOME_CANCELLED) srv_metrics_observe(s->m, SRV_HIST_E2E, now - r->t_arrive);
    srv_metrics_finish(s->m, o, r->n_prompt, r->n_gen);
    pthread_cond_broadcast(&r->cv);
}

/* A queued request that never ran. */
static void finish_queued(srv_sched *s, srv_req *r, srv_outcome o)
{
    pthread_mutex_lock(&r->mu);
    if (o == SRV_OUTCOME_ERROR && !r->error[0]) snprintf(r->error, sizeof r->error, "internal error");
    req_done_locked(s, r, o);
    pthread_mutex_unlock(&r->mu);
    srv_req_release(s, r);
}

static void slot_clear(srv_sched *s, srv_slot *sl)
{
    if (sl->seq >= 0) dsv4_seq_free(s->e, sl->seq);
    dsv4_sampler_free(sl->smp);
    dsv4_detok_free(sl->dt);
    dsv4_stop_free(sl->sm);
    dsv4_chat_parser_free(sl->ps);
    free(sl->plogits);
    free(sl->gen);
    s->reserved -= sl->pages;
    memset(sl, 0, sizeof *sl);
    sl->seq = -1;
}

/* Prefix cache: the state of a request that ended by itself - its prompt and what it wrote - kept for a next
 * turn that repeats them (its sequence freed into an entry, no copy). */
static void keep_end(srv_sched *s, srv_slot *sl)
{
    if (!s->pc || sl->seq < 0 || sl->no_keep || sl->outcome > SRV_OUTCOME_TOOL_CALLS) return;
    if (srv_prefix_keep_end(s->pc, sl->seq, sl->r->prompt, sl->r->n_prompt, sl->gen, sl->n_gen_ids, sl->kept) >= 0)
        sl->seq = -1;
}

/* The pages no running request counts on (their reservations) and nobody holds (the cache's entries and the hits
 * shared with them): a copy of a partly filled page may take one. */
static int64_t spare_pages(const srv_sched *s)
{
    return s->o.pages_total - s->reserved - dsv4_pages_shared(s->e);
}

/* Prefix cache: the state of a prompt being prefilled, kept where its prefill reached the point the request
 * keeps (sl->save_at) or, in a long prompt, at a chunk's end at least keep_gap tokens past the last one kept. */
static void keep_prompt(srv_sched *s, srv_slot *sl)
{
    const int64_t at = sl->prefilled;
    /* the page held for a point's copy (lead_pick) is given back once the point is reached: the copy takes it */
    int held = 0;
    if (sl->hold_save && at >= sl->save_at) sl->hold_save = 0, held++;
    if (sl->hold_branch && at >= sl->branch_at) sl->hold_branch = 0, held++;
    sl->pages -= held;
    s->reserved -= held;
    if (!s->pc || sl->ending || at <= sl->kept || dsv4_seq_len(s->e, sl->seq) != at) return;
    const bool chunk_end = at != sl->save_at && at != sl->branch_at;
    if (chunk_end && !(at < sl->r->n_prompt && at - sl->kept >= s->keep_gap)) return;
    const int i = srv_prefix_save(s->pc, sl->seq, sl->r->prompt, 0, spare_pages(s));
    if (i < 0) return;
    sl->kept = at;
    if (!chunk_end) return;
    /* a long prompt keeps one state at a chunk's end at a time: the one before goes unless somebody used it */
    if (sl->chunk_entry >= 0 && srv_prefix_stamp(s->pc, sl->chunk_entry) == sl->chunk_stamp)
        srv_prefix_drop(s->pc, sl->chunk_entry);
    sl->chunk_entry = i;
    sl->chunk_stamp = srv_prefix_stamp(s->pc, i);
}

/* The slot of an ended request that no step in flight holds: its sequence freed (or kept by the prefix
 * cache), the request handed back. */
static void slot_release(srv_sched *s, srv_slot *sl)
{
    srv_req *r = sl->r;
    keep_end(s, sl);
    slot_clear(s, sl);
    pthread_mutex_lock(&s->mu);
    s->n_running--;
    s->n_ending--;
    pthread_mutex_unlock(&s->mu);
    srv_req_release(s, r);
}

/* Ends a running request: its reader hears at once; its sequence is freed now, or once the steps in flight
 * that hold it are finished. */
static void finish_slot(srv_sched *s, srv_slot *sl, srv_outcome o, const char *error)
{
    srv_req *r = sl->r;
    if (sl->ending) return;
    pthread_mutex_lock(&s->mu); /* before its reader wakes (srv_sched_submit) */
    s->n_ending++;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&r->mu);
    if (error) snprintf(r->error, sizeof r->error, "%s", error);
    req_done_locked(s, r, o);
    pthread_mutex_unlock(&r->mu);
    sl->ending = 1;
    sl->outcome = o;
    if (!sl->inflight) slot_release(s, sl);
}

/* ---- output ---------------------------------------------------------------- */

static int grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap) return 0;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) return -1;
    *p = q;
    *cap = nc;
    return 0;
}

/* ids: a process-wide counter spread by an odd multiplier, salted with the time of the first id (so that they
 * are unlikely to repeat across runs either) */
static atomic_ullong id_next;
static uint64_t id_salt;
static pthread_once_t id_once = PTHREAD_ONCE_INIT;
static void id_salt_init(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    id_salt = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec;
}

void srv_make_id(const char *prefix, char sep, char *out, size_t n)
{
    pthread_once(&id_once, id_salt_init);
    const unsigned long long k = atomic_fetch_add(&id_next, 1);
    snprintf(out, n, "%s%c%016llx", prefix, sep, (unsigned long long)(id_salt ^ (k * 0x9E3779B97F4A7C15ull)));
}

/* The parser's events into the request's output. An allocation that fails marks the slot (sl->oom): the parser's
 * callback cannot refuse an event, and the request then ends with an error rather than with text or a tool call
 * silently missing. */
static void on_chat_event(void *user, const dsv4_chat_event *ev)
{
    srv_slot *sl = user;
    srv_req *r = sl->r; /* r->mu is held by the caller of the parser */
    switch (ev->kind) {
    case DSV4_CHAT_EV_REASONING:
        sl->oom |= dsv4_strbuf_put(&r->reasoning, ev->text, ev->len) != 0;
        break;
    case DSV4_CHAT_EV_CONTENT:
        sl->oom |= dsv4_strbuf_put(&r->content, ev->text, ev->len) != 0;
        break;
    case DSV4_CHAT_EV_TOOL_BEGIN: break;
    case DSV4_CHAT_EV_TOOL_END: {
        if (grow((void **)&r->tools, &r->cap_tools, r->n_tools + 1, sizeof(srv_tool_call))) {
            sl->oom = 1;
            break;
        }
        srv_tool_call *tc = &r->tools[r->n_tools];
        char id[32];
        /* unique per server run (a request's address, reused by malloc once the request is freed, gave the calls
         * of a chat's successive turns the same ids) */
        srv_make_id("call", '_', id, sizeof id);
        tc->id = strdup(id);
        tc->name = strdup(ev->name ? ev->name : "");
        tc->arguments = malloc(ev->len + 1);
        if (!tc->id || !tc->name || !tc->arguments) {
            free(tc->id);
            free(tc->name);
            free(tc->arguments);
            sl->oom = 1;
            break;
        }
        memcpy(tc->arguments, ev->text, ev->len);
        tc->arguments[ev->len] = 0;
        r->n_tools++;
        break;
    }
    }
}

/* Text that is certain to be output (after stop-string matching). r->mu held. Returns 0, or -1 when memory ran
 * out (the text, or some of it, is lost: the request must end with an error). */
static int emit_text(srv_slot *sl, const char *text, size_t n)
{
    if (n &&
        (sl->ps ? dsv4_chat_parser_feed(sl->ps, text, n) != DSV4_OK : dsv4_strbuf_put(&sl->r->content, text, n) != 0))
        sl->oom = 1;
    return sl->oom ? -1 : 0;
}

/* End of output without a stop string: flush detokeniser, matcher and parser. r->mu held. Memory that runs out
 * sets sl->oom. */
static void flush_output(srv_slot *sl, int stopped_by_string)
{
    const char *t;
    size_t n;
    if (!stopped_by_string) {
        dsv4_detok_flush(sl->dt, &t, &n);
        if (sl->sm) {
            const int st = dsv4_stop_feed(sl->sm, t, n, &t, &n);
            if (st < 0) {
                sl->oom = 1;
            } else if (st) {
                emit_text(sl, t, n);
                stopped_by_string = 1;
            } else {
                emit_text(sl, t, n);
                dsv4_stop_flush(sl->sm, &t, &n);
                emit_text(sl, t, n);
            }
        } else {
            emit_text(sl, t, n);
        }
    }
    if (sl->ps) {
        if (dsv4_chat_parser_finish(sl->ps) != DSV4_OK) sl->oom = 1;
        const char *msg;
        sl->r->malformed_tools = dsv4_chat_parser_malformed(sl->ps, &msg);
    }
}

/* Takes the token the step picked for sl; returns 1 if the request finished. */
static int slot_sample(srv_sched *s, srv_slot *sl)
{
    srv_req *r = sl->r;
    const dsv4_sample smp = sl->picked;
    if (smp.token < 0) {
        finish_slot(s, sl, SRV_OUTCOME_ERROR, "sampling failed: no finite logit");
        return 1;
    }
    dsv4_finish fin = dsv4_sampler_accept(sl->smp, smp.token);
    double now = srv_now();
    pthread_mutex_lock(&r->mu);
    if (r->n_gen == 0) {
        r->t_first = now;
        srv_metrics_observe(s->m, SRV_HIST_TTFT, now - r->t_arrive);
    } else {
        srv_metrics_observe(s->m, SRV_HIST_ITL, now - r->t_last);
    }
    r->t_last = now;
    r->n_gen++;
    if (r->sp.logprobs && grow((void **)&r->toks, &r->cap_toks, r->n_toks + 1, sizeof(srv_tok)))
        sl->oom = 1;
    else if (r->sp.logprobs) {
        srv_tok *t = &r->toks[r->n_toks++];
        t->token = smp.token;
        t->logprob = smp.logprob;
        t->n_top = smp.n_top;
        memcpy(t->top_ids, smp.top_ids, sizeof t->top_ids);
        memcpy(t->top_lp, smp.top_logprobs, sizeof t->top_lp);
    }
    int stopped = 0;
    if (fin != DSV4_FINISH_STOP && !sl->oom) {
        const char *t;
        size_t n;
        char err[256];
        if (dsv4_detok_push(sl->dt, smp.token, &t, &n, err, sizeof err)) {
            pthread_mutex_unlock(&r->mu);
            finish_slot(s, sl, SRV_OUTCOME_ERROR, err);
            return 1;
        }
        if (sl->sm && (stopped = dsv4_stop_feed(sl->sm, t, n, &t, &n)) < 0)
            sl->oom = 1;
        else
            emit_text(sl, t, n);
    }
    int64_t len = sl->prefilled + (int64_t)r->n_gen; /* tokens the sequence will hold once this one is fed */
    srv_outcome o = SRV_OUTCOME_COUNT;
    if (fin == DSV4_FINISH_STOP || stopped) o = SRV_OUTCOME_STOP;
    else if (fin == DSV4_FINISH_LENGTH || len >= s->max_ctx) o = SRV_OUTCOME_LENGTH;
    if (o != SRV_OUTCOME_COUNT && !sl->oom) flush_output(sl, stopped);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (sl->oom) {
        /* text, a tool call or a logprob entry could not be kept: the output would be wrong, so it ends here */
        sl->no_keep = 1;
        finish_slot(s, sl, SRV_OUTCOME_ERROR, "out of memory");
        return 1;
    }
    if (o != SRV_OUTCOME_COUNT) {
        finish_slot(s, sl, o, NULL);
        return 1;
    }
    sl->last = smp.token;
    return 0;
}

/* ---- admission --------------------------------------------------------------- */

/* Where a prompt's state is kept (from: the tokens it starts with). One token before its end, where a prompt that
 * repeats it all can start (its last token is always run: its logits pick the first token), when what is kept is
 * worth the step that the last token then takes alone (at least keep_gap tokens); else at its end, which costs
 * nothing, for prompts that go on from it (a chat's next turn goes on from the state kept at the answer's end).
 * A chat prompt in thinking mode ends in "<think>", and the next turn renders the answer without its reasoning,
 * after "</think>": only the state before that last token serves it, so it is kept there whatever the length
 * (a step against the reasoning's many). */
static int save_point(const srv_sched *s, const srv_req *r, int64_t from)
{
    const bool think = r->chat && r->thinking;
    if (r->n_prompt - 1 - from >= s->keep_gap || (think && r->n_prompt - 1 > from)) return r->n_prompt - 1;
    return think ? 0 : r->n_prompt;
}

/* Where lead l keeps a state that serves a prompt sharing its first c tokens (c > l->prefilled), and what that
 * takes: *mode 0 nothing (a point it keeps anyway, at most branch_gap short of c), 1 its save_at moved to c (the
 * same prompt but for the last token: the n choices of one prompt), 2 its branch_at set to c (none pending).
 * 0: none. */
static int64_t lead_point(const srv_sched *s, const srv_slot *l, int64_t c, int *mode)
{
    int64_t p = 0; /* the farthest point it keeps anyway at or before c */
    if (l->save_at > l->prefilled && l->save_at <= c) p = l->save_at;
    if (l->branch_at > l->prefilled && l->branch_at <= c && l->branch_at > p) p = l->branch_at;
    *mode = 0;
    if (p && c - p < s->branch_gap) return p;
    if (c == l->r->n_prompt - 1) {
        *mode = 1;
        return c;
    }
    if (l->branch_at <= l->prefilled) {
        *mode = 2;
        return c;
    }
    return p;
}

/* Prefix cache: requests that run together with one long start (a system prompt; the n choices of one prompt)
 * prefill it once. sl (just admitted, hit_len of its prompt found kept) waits for the running prompt, still
 * being prefilled, whose state would spare it the most prefill - at least branch_gap tokens past its hit, or any
 * for another choice of its prompt - and starts from that state once kept (followers_update). */
static void lead_pick(srv_sched *s, srv_slot *sl, int64_t hit_len, int64_t need)
{
    const srv_req *r = sl->r;
    const int64_t lim = (int64_t)r->n_prompt - 1; /* a prompt's last token is always run */
    /* A state inside a page copies that page when kept (srv_prefix_save), out of the pages no running request
     * counts on. Where one is free after this request's reservation (need: its pages not yet reserved), or the
     * cache can give one back, the lead's reservation takes it until it keeps that state (a request admitted
     * meanwhile cannot take it); where none is, the lead could not keep such a state: wait for one at a page's
     * end instead. */
    const bool whole = spare_pages(s) - need + dsv4_pages_cached(s->e) < 1;
    int best = -1, best_mode = 0;
    int64_t best_at = 0;
    for (int k = 0; k < s->o.max_running; k++) {
        const srv_slot *l = &s->slots[k];
        if (l == sl || !l->r || l->ending || l->wait_lead || l->prefilled >= l->r->n_prompt) continue;
        const bool choice = r->choice > 0 && l->r->group == r->group;
        const int64_t m = l->r->n_prompt < lim ? l->r->n_prompt : lim;
        int64_t c = 0;
        while (c < m && l->r->prompt[c] == r->prompt[c]) c++;
        if (whole) c -= c % s->page_tokens;
        if (c <= l->prefilled) continue;
        int mode;
        const int64_t at = lead_point(s, l, c, &mode);
        if (at - hit_len < (choice ? 1 : s->branch_gap) || at <= best_at || (whole && at % s->page_tokens)) continue;
        best = k;
        best_at = at;
        best_mode = mode;
    }
    if (best < 0) return;
    srv_slot *l = &s->slots[best];
    /* the point is its save_at (mode 1, or 0 at save_at) or its branch_at */
    int *hold = best_mode == 1 || (best_mode == 0 && best_at == l->save_at) ? &l->hold_save : &l->hold_branch;
    if (best_at % s->page_tokens && !*hold) {
        if (srv_prefix_spare_page(s->pc, spare_pages(s) - need)) return; /* (none after all: no wait) */
        *hold = 1;
        l->pages++;
        s->reserved++;
    }
    if (best_mode == 1) l->save_at = (int)best_at;
    if (best_mode == 2) l->branch_at = (int)best_at;
    sl->wait_lead = 1;
    sl->lead_slot = best;
    sl->lead_group = l->r->group;
    sl->lead_choice = l->r->choice;
    sl->wait_at = best_at;
    srv_metrics_prefix_wait(s->m, 0);
}

/* Follower f starts from prefix cache entry i (len tokens, more than it has): its empty sequence replaced, the pages
 * it shares no longer reserved. Nonzero: it failed and has ended. */
static int follower_start(srv_sched *s, srv_slot *f, int i, int64_t len)
{
    char err[256];
    dsv4_seq_free(s->e, f->seq); /* nothing ran in it: it holds f's hit at most */
    f->seq = -1;
    if (srv_prefix_start(s->pc, i, &f->seq, err, sizeof err)) {
        finish_slot(s, f, SRV_OUTCOME_ERROR, err);
        return -1;
    }
    f->from_step = s->n_submitted;
    const int64_t credit = len / s->page_tokens - f->prefilled / s->page_tokens;
    f->pages -= credit;
    s->reserved -= credit;
    srv_metrics_prefix(s->m, 0, len - f->prefilled);
    f->prefilled = (int)len;
    f->kept = len;
    f->save_at = save_point(s, f->r, len);
    pthread_mutex_lock(&f->r->mu);
    f->r->n_cached = (int)len;
    pthread_mutex_unlock(&f->r->mu);
    return 0;
}

/* Requests waiting for a lead's state (lead_pick): once the lead has passed the point (or ended, or stopped
 * prefilling), each starts from the longest state kept that its prompt starts with (follower_start) - or, where
 * none was kept, prefills the prompt itself. One whose lead ended short of the point is marked to wait again
 * (followers_repick). */
static void followers_update(srv_sched *s)
{
    for (int k = 0; k < s->o.max_running; k++) {
        srv_slot *f = &s->slots[k];
        if (!f->r || !f->wait_lead) continue;
        const srv_slot *l = &s->slots[f->lead_slot];
        const bool lead = !f->ending && l->r && !l->ending && l->r->group == f->lead_group &&
                          l->r->choice == f->lead_choice && l->prefilled < l->r->n_prompt;
        if (lead && l->prefilled < f->wait_at) continue;
        f->wait_lead = 0;
        int64_t len;
        const int i = f->ending ? -1 : srv_prefix_match(s->pc, f->r->prompt, (int64_t)f->r->n_prompt - 1, &len, NULL);
        const bool missed = i < 0 || len < f->wait_at;
        if (!f->ending && missed) srv_metrics_prefix_wait(s->m, 1);
        if (f->ending || f->inflight) continue;
        if (i >= 0 && len > f->prefilled && follower_start(s, f, i, len)) continue;
        f->repick = missed && f->prefilled < (int64_t)f->r->n_prompt - 1;
    }
}

/* Requests whose lead ended short of the point (followers_update) wait again where another prompt being prefilled
 * would still spare them enough of the run - one of those that waited with them, released before them here: when
 * a lead is cancelled, the first of its followers prefills what they share once, not each of them. Run once every
 * follower released has started (not inside step_submit's pass: the prompts after a keep there have not counted
 * their chunk yet, and a page taken for a hold could evict a state kept for a follower later in the pass). */
static void followers_repick(srv_sched *s)
{
    for (int k = 0; k < s->o.max_running; k++) {
        srv_slot *f = &s->slots[k];
        if (!f->r || !f->repick) continue;
        f->repick = 0;
        if (!f->ending && !f->wait_lead) lead_pick(s, f, f->prefilled, 0); /* its pages already reserved */
    }
}

/* hit: a prefix cache entry whose hit_len tokens start r's prompt (-1: none); common: the most tokens r's prompt
 * shares with the start of an entry. */
static int slot_setup(srv_sched *s, srv_slot *sl, srv_req *r, int hit, int64_t hit_len, int64_t common, char *err,
                      size_t errlen)
{
    memset(sl, 0, sizeof *sl);
    sl->seq = -1;
    sl->chunk_entry = -1;
    sl->r = r;
    if (r->n_stops) {
        const char *stops[SRV_MAX_STOPS];
        for (int i = 0; i < r->n_stops; i++) stops[i] = r->stops[i];
        if (dsv4_stop_create(stops, r->n_stops, &sl->sm, err, errlen)) return -1;
    }
    r->sp.vocab_limit = s->tok_vocab; /* ids the tokenizer cannot print are never picked */
    if (dsv4_sampler_create(&r->sp, s->V, r->prompt, r->n_prompt, &sl->smp, err, errlen) ||
        dsv4_detok_create(s->tok, &sl->dt, err, errlen))
        return -1;
    if (r->chat) {
        if (dsv4_chat_parser_create(r->thinking, on_chat_event, sl, &sl->ps)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (r->forced_text) {
            pthread_mutex_lock(&r->mu);
            const int bad = emit_text(sl, r->forced_text, strlen(r->forced_text));
            pthread_mutex_unlock(&r->mu);
            if (bad) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
        }
    }
    if (r->ptoks && !(sl->plogits = malloc((size_t)PLP_ROWS * s->V * sizeof(float)))) {
        snprintf(err, errlen, "out of memory for the prompt's logits");
        return -1;
    }
    if (hit >= 0 ? srv_prefix_start(s->pc, hit, &sl->seq, err, errlen) : dsv4_seq_create(s->e, &sl->seq, err, errlen))
        return -1;
    if (hit < 0) hit_len = 0;
    if (hit >= 0) sl->from_step = s->n_submitted;
    sl->prefilled = (int)hit_len;
    sl->kept = hit_len;
    sl->save_at = save_point(s, r, hit_len);
    /* A prompt that shares a long run with a kept state's tokens but parts from them before its end (the same
     * system prompt, another question): the state where they part serves both and those to come, so it is
     * kept there - a split of this prefill once, against the run's prefill for every later one. */
    sl->branch_at = common - hit_len >= s->branch_gap ? (int)common : 0;
    sl->pages = pages_for(s, r) - hit_len / s->page_tokens;
    if (s->pc && !r->ptoks && hit_len < r->n_prompt - 1) lead_pick(s, sl, hit_len, sl->pages);
    s->reserved += sl->pages;
    if (s->pc) {
        pthread_mutex_lock(&r->mu);
        r->n_cached = (int)hit_len;
        pthread_mutex_unlock(&r->mu);
        srv_metrics_prefix(s->m, r->ptoks ? 0 : r->n_prompt, hit_len);
    }
    return 0;
}

/* Whether r fits the pool, evicting prefix cache entries where that makes it fit: the pages the running
 * requests may still take must stay free, so the pages held with no owner (the cache's, and those its hits
 * share) may be at most those no running request reserves. *hit: the entry r starts from (-1: none; it may
 * be given up for the pages it holds), *hit_len its tokens. */
static int fits_locked(srv_sched *s, srv_req *r, int *hit, int64_t *hit_len, int64_t *common)
{
    *hit = -1;
    *hit_len = *common = 0;
    /* a prompt's last token is always run (its logits pick the first token); an echo with logprobs runs them all */
    if (s->pc && !r->ptoks) *hit = srv_prefix_match(s->pc, r->prompt, (int64_t)r->n_prompt - 1, hit_len, common);
    for (;;) {
        const int64_t need = pages_for(s, r) - *hit_len / s->page_tokens, total = s->o.pages_total;
        if (s->reserved + need > total) return 0; /* the running requests' futures first */
        const int64_t shared = s->pc ? dsv4_pages_shared(s->e) : 0;
        if (shared <= total - s->reserved - need) return 1;
        /* evicting entries frees at most the pages they alone hold: where that cannot do, wait (keep them) */
        if (shared - dsv4_pages_cached(s->e) > total - s->reserved - need) return 0;
        if (srv_prefix_evict(s->pc, *hit)) continue;
        if (*hit < 0) return 0;
        *hit = -1; /* the entry's pages are worth more as free ones */
        *hit_len = 0;
    }
}

/* Admits queued requests in arrival order. Called with s->mu held. */
static void admit_locked(srv_sched *s)
{
    for (;;) {
        srv_req *r = s->q_head;
        if (!r || s->n_running >= s->o.max_running) return;
        int hit;
        int64_t hit_len, common;
        if (!fits_locked(s, r, &hit, &hit_len, &common)) return;
        int k = 0;
        while (k < s->o.max_running && s->slots[k].r) k++;
        if (k == s->o.max_running) return;
        s->q_head = r->next_;
        if (!s->q_head) s->q_tail = NULL;
        r->next_ = NULL;
        s->n_waiting--;
        s->n_running++;
        srv_slot *sl = &s->slots[k];
        char err[256];
        pthread_mutex_unlock(&s->mu);
        srv_metrics_observe(s->m, SRV_HIST_QUEUE, srv_now() - r->t_arrive);
        if (slot_setup(s, sl, r, hit, hit_len, common, err, sizeof err)) {
            sl->r = r;
            finish_slot(s, sl, SRV_OUTCOME_ERROR, err);
        }
        pthread_mutex_lock(&s->mu);
    }
}

/* ---- the worker --------------------------------------------------------------- */

static void publish_gauges(srv_sched *s)
{
    int running, waiting;
    srv_sched_counts(s, &running, &waiting);
    const int64_t fr = dsv4_pages_free(s->e), cached = dsv4_pages_cached(s->e);
    srv_metrics_gauges(s->m, running, waiting, dsv4_pages_total(s->e) - fr - cached, fr);
    srv_metrics_prefix_gauges(s->m, cached, srv_prefix_count(s->pc));
}

/* Step k + 1 may be submitted before step k's picks are read: every pick in flight can be fed on the device
 * (its sampler needs no host: no penalties, logit_bias or logprobs) and none is its request's last for
 * certain (max_tokens, the context). */
static int overlap_ok(const srv_sched *s)
{
    const int64_t id = s->steps[0].id;
    for (int k = 0; k < s->o.max_running; k++) {
        const srv_slot *sl = &s->slots[k];
        if (!sl->r || sl->ending || sl->pick_step != id) continue;
        const int gen = sl->r->n_gen + 1; /* with the pick in flight */
        const int max = sl->r->sp.max_tokens;
        if (!dsv4_sampler_blind(sl->smp) || (max > 0 && gen >= max) || sl->prefilled + (int64_t)gen >= s->max_ctx)
            return 0;
    }
    return 1;
}

static void step_finish(srv_sched *s);

/* Submits the batch in s->entries[0, n) (the slots' in_batch / sample say whose) as the newest step. */
static void step_submit(srv_sched *s, int n, int n_tok)
{
    char err[256];
    if (!s->n_steps) s->t_step = srv_now();
    dsv4_status st = dsv4_step_submit(s->e, s->entries, n, err, sizeof err);
    if (st != DSV4_OK) {
        /* nothing of it ran: the step in flight is finished first (its picks are its requests'), then every
         * request of this one ends with the error */
        while (s->n_steps) step_finish(s);
        fprintf(stderr, "dsv4 serve: step failed: %s\n", err);
        for (int k = 0; k < s->o.max_running; k++) {
            srv_slot *sl = &s->slots[k];
            if (sl->r && sl->in_batch >= 0 && !sl->ending) finish_slot(s, sl, SRV_OUTCOME_ERROR, err);
        }
        return;
    }
    srv_step *t = &s->steps[s->n_steps++];
    t->id = ++s->n_submitted;
    t->n = 0;
    t->n_tok = n_tok;
    for (int k = 0; k < s->o.max_running; k++) {
        srv_slot *sl = &s->slots[k];
        if (!sl->r || sl->in_batch < 0) continue;
        if (sl->prefilled < sl->r->n_prompt) {
            sl->prefilled += s->entries[sl->in_batch].n_tokens;
            keep_prompt(s, sl); /* a copy after the step that brought it there, before the next one */
            /* requests waiting for a state just kept start from it now: a later keep of this step, or an
             * admission, could evict it */
            if (s->pc) followers_update(s);
        }
        if (sl->sample) sl->pick_step = t->id;
        sl->inflight++;
        t->m[t->n++] = (srv_member){.slot = k, .sample = sl->sample};
    }
    if (s->pc) followers_repick(s);
}

/* An echo's prompt logprobs from the rows of the chunk just computed: row i gives the distribution of the
 * token after position plp_at + i, the prompt's own next token (the last prompt row's is the first pick's). */
static void prompt_logprobs(srv_sched *s, srv_slot *sl)
{
    srv_req *r = sl->r;
    dsv4_sampling_params sp;
    dsv4_sampling_params_default(&sp);
    sp.logprobs = 1;
    sp.top_logprobs = r->sp.top_logprobs;
    sp.vocab_limit = s->tok_vocab;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < sl->plp_take; i++) {
        const int p = sl->plp_at + i + 1; /* the prompt token this row predicts */
        if (p >= r->n_prompt) break;
        dsv4_sample d;
        dsv4_logprobs_of(&sp, s->V, sl->plogits + (size_t)i * s->V, r->prompt[p], &d);
        srv_tok *t = &r->ptoks[p];
        t->token = r->prompt[p];
        t->logprob = d.logprob;
        t->n_top = d.n_top;
        memcpy(t->top_ids, d.top_ids, sizeof t->top_ids);
        memcpy(t->top_lp, d.top_logprobs, sizeof t->top_lp);
    }
    r->ptoks[0].token = r->prompt[0];
    r->n_ptoks = sl->plp_at + sl->plp_take;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    sl->plp_inflight = 0;
}

/* Finishes the oldest step in flight: its picks go to their requests (those still running it). */
static void step_finish(srv_sched *s)
{
    char err[256];
    srv_step *t = &s->steps[0];
    /* DSV4_ERR_STATE: the step ran, a sampler found no finite logit (token -1) */
    dsv4_status st = dsv4_step_finish(s->e, err, sizeof err);
    if (st == DSV4_OK && t->id == s->fault_step) {
        st = DSV4_ERR_IO; /* as a device failure would be reported */
        snprintf(err, sizeof err, "step %lld failed (DSV4_SERVE_FAULT_STEP)", (long long)t->id);
    }
    /* a failed step may have left any state it touched wrong: those kept since it was submitted, and its
     * sequences' own (ending ones are released below) */
    if (st != DSV4_OK && st != DSV4_ERR_STATE) {
        while (srv_prefix_evict(s->pc, -1)) {
        }
        for (int i = 0; i < t->n; i++) s->slots[t->m[i].slot].no_keep = 1;
        /* and requests that started from a state kept since it was submitted (those states may be wrong too) */
        for (int k = 0; k < s->o.max_running; k++) {
            srv_slot *sl = &s->slots[k];
            if (!sl->r || sl->ending || !sl->from_step || sl->from_step < t->id) continue;
            sl->no_keep = 1;
            fprintf(stderr, "dsv4 serve: step failed: %s\n", err);
            finish_slot(s, sl, SRV_OUTCOME_ERROR, err);
        }
    }
    const double now = srv_now();
    srv_metrics_step(s->m, now - s->t_step, t->n_tok);
    s->t_step = now;
    for (int i = 0; i < t->n; i++) {
        srv_slot *sl = &s->slots[t->m[i].slot];
        sl->inflight--;
        /* the prefix cache keeps the tokens the sequence absorbs: its picks, including those of steps in flight
         * when it ended (keep_end takes as many as the sequence holds) */
        if (s->pc && t->m[i].sample) {
            if (!grow((void **)&sl->gen, &sl->cap_gen, sl->n_gen_ids + 1, sizeof(int32_t)))
                sl->gen[sl->n_gen_ids++] = sl->picked.token;
            else
                sl->no_keep = 1; /* a gap: the tokens would not be the state's */
        }
        if (sl->ending) {
            if (!sl->inflight) slot_release(s, sl);
            continue;
        }
        if (st != DSV4_OK && st != DSV4_ERR_STATE) {
            fprintf(stderr, "dsv4 serve: step failed: %s\n", err);
            finish_slot(s, sl, SRV_OUTCOME_ERROR, err);
            continue;
        }
        if (sl->plp_inflight) prompt_logprobs(s, sl);
        if (t->m[i].sample) {
            if (sl->pick_step == t->id) sl->pick_step = 0;
            slot_sample(s, sl);
        } else if (sl->r->no_gen && sl->prefilled == sl->r->n_prompt && !sl->inflight) {
            finish_slot(s, sl, SRV_OUTCOME_LENGTH, NULL); /* the prompt is in, nothing to generate */
        }
    }
    /* the step after it moves to the front, its arrays with it */
    const srv_step first = s->steps[0];
    s->steps[0] = s->steps[1];
    s->steps[1] = first;
    s->n_steps--;
}

static void *worker(void *arg)
{
    srv_sched *s = arg;
    const int R = s->o.max_running;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        /* queued requests that were abandoned or timed out never run */
        double now = srv_now();
        for (srv_req **pp = &s->q_head; *pp;) {
            srv_req *r = *pp;
            int timeout = r->deadline > 0 && now > r->deadline;
            if (r->cancelled || timeout || s->stopping || s->abort_all) {
                *pp = r->next_;
                if (s->q_tail == r) {
                    s->q_tail = NULL;
                    for (srv_req *t = s->q_head; t; t = t->next_) s->q_tail = t;
                }
                s->n_waiting--;
                pthread_mutex_unlock(&s->mu);
                finish_queued(s, r, timeout && !r->cancelled ? SRV_OUTCOME_TIMEOUT : SRV_OUTCOME_CANCELLED);
                pthread_mutex_lock(&s->mu);
                continue;
            }
            pp = &r->next_;
        }
        if (!s->stopping) admit_locked(s);
        int active = s->n_running;
        if (active == 0) {
            if (s->stopping) break;
            pthread_mutex_unlock(&s->mu);
            publish_gauges(s);
            pthread_mutex_lock(&s->mu);
            if (!s->q_head && !s->stopping) {
                /* idle; wake up now and then for deadlines of nothing in particular */
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += 1;
                pthread_cond_timedwait(&s->cv, &s->mu, &ts);
            }
            continue;
        }
        int stopping = s->stopping || s->abort_all;
        pthread_mutex_unlock(&s->mu);

        /* running requests that were abandoned or timed out: ended at once */
        now = srv_now();
        for (int k = 0; k < R; k++) {
            srv_slot *sl = &s->slots[k];
            if (!sl->r || sl->ending) continue;
            if (sl->r->cancelled || stopping) finish_slot(s, sl, SRV_OUTCOME_CANCELLED, NULL);
            else if (sl->r->deadline > 0 && now > sl->r->deadline) finish_slot(s, sl, SRV_OUTCOME_TIMEOUT, NULL);
        }

        /* the step in flight first where the next one cannot run ahead of its picks */
        if (s->n_steps && !(s->o.overlap && overlap_ok(s))) step_finish(s);

        if (s->pc) followers_update(s), followers_repick(s);
        /* the batch: decode tokens first, then prefill chunks oldest first */
        int n = 0, budget = s->o.chunked_prefill, n_tok = 0;
        const int64_t follow_id = s->n_steps ? s->steps[0].id : -1; /* picks still in flight */
        for (int k = 0; k < R; k++) {
            srv_slot *sl = &s->slots[k];
            sl->in_batch = -1;
            if (!sl->r || sl->ending || sl->prefilled < sl->r->n_prompt || sl->r->no_gen) continue;
            s->entries[n] = (dsv4_batch_entry){.seq = sl->seq,
                                               .n_tokens = 1,
                                               .tokens = &sl->last,
                                               .follow = sl->pick_step == follow_id,
                                               .sampler = sl->smp,
                                               .sample = &sl->picked};
            sl->in_batch = n++;
            sl->sample = 1;
            n_tok++;
        }
        /* prefills in admission order: lowest request arrival first */
        for (;;) {
            int best = -1;
            for (int k = 0; k < R; k++) {
                srv_slot *sl = &s->slots[k];
                if (!sl->r || sl->ending || sl->in_batch >= 0 || sl->prefilled >= sl->r->n_prompt) continue;
                if (sl->wait_lead) continue;    /* it starts from its lead's state */
                if (sl->plp_inflight) continue; /* its last chunk's logits are not read yet */
                if (best < 0 || sl->r->t_arrive < s->slots[best].r->t_arrive) best = k;
            }
            if (best < 0 || budget <= 0) break;
            srv_slot *sl = &s->slots[best];
            int take = sl->r->n_prompt - sl->prefilled;
            if (take > budget) take = budget;
            /* its state is kept at these points (keep_prompt) */
            if (s->pc && sl->branch_at > sl->prefilled && sl->prefilled + take > sl->branch_at)
                take = sl->branch_at - sl->prefilled;
            if (s->pc && sl->save_at > sl->prefilled && sl->prefilled + take > sl->save_at)
                take = sl->save_at - sl->prefilled;
            if (sl->plogits && take > PLP_ROWS) take = PLP_ROWS;
            sl->sample = sl->prefilled + take == sl->r->n_prompt && !sl->r->no_gen;
            s->entries[n] = (dsv4_batch_entry){.seq = sl->seq,
                                               .n_tokens = take,
                                               .tokens = sl->r->prompt + sl->prefilled,
                                               .all_logits = sl->plogits != NULL,
                                               .logits = sl->plogits,
                                               .sampler = sl->sample ? sl->smp : NULL,
                                               .sample = sl->sample ? &sl->picked : NULL};
            if (sl->plogits) sl->plp_at = sl->prefilled, sl->plp_take = take, sl->plp_inflight = 1;
            sl->in_batch = n++;
            budget -= take;
            n_tok += take;
        }
        if (n > 0) step_submit(s, n, n_tok);
        /* the step before, while this one runs */
        if (s->n_steps > 1 || (s->n_steps && n == 0)) step_finish(s);
        publish_gauges(s);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    publish_gauges(s);
    return NULL;
}

dsv4_status srv_sched_start(dsv4_engine *e, const dsv4_tokenizer *tok, const srv_sched_opts *o, srv_metrics *m,
                            srv_sched **out, char *err, size_t errlen)
{
    srv_sched *s = calloc(1, sizeof *s);
    if (!s) return DSV4_ERR_NOMEM;
    dsv4_model_info info;
    dsv4_engine_info(e, &info);
    s->e = e;
    s->tok = tok;
    s->o = *o;
    s->m = m;
    s->V = info.vocab_size;
    s->tok_vocab = dsv4_tokenizer_vocab_size(tok);
    if (s->tok_vocab > s->V) s->tok_vocab = s->V;
    s->max_ctx = info.max_ctx;
    s->page_tokens = dsv4_page_tokens(e);
    if (s->o.max_running > info.max_seqs) s->o.max_running = info.max_seqs;
    if (s->o.pages_total <= 0 || s->o.pages_total > dsv4_pages_total(e)) s->o.pages_total = dsv4_pages_total(e);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->slots = calloc((size_t)s->o.max_running, sizeof(srv_slot));
    s->entries = calloc((size_t)s->o.max_running, sizeof(dsv4_batch_entry));
    for (int j = 0; j < 2; j++) s->steps[j].m = calloc((size_t)s->o.max_running, sizeof(srv_member));
    if (!s->slots || !s->entries || !s->steps[0].m || !s->steps[1].m) {
        snprintf(err, errlen, "out of memory for %d running requests", s->o.max_running);
        goto fail;
    }
    for (int k = 0; k < s->o.max_running; k++) s->slots[k].seq = -1;
    if (s->o.prefix_cache && dsv4_snap_max(e) > 0 && !(s->pc = srv_prefix_create(e))) {
        snprintf(err, errlen, "out of memory for the prefix cache");
        goto fail;
    }
    /* a state is worth keeping (and a step of its own for a prompt's last token) from a prefill chunk's
     * worth of tokens, or four pages (1,024 tokens with Flash's pages) */
    s->keep_gap = 4 * (int64_t)s->page_tokens;
    if (s->keep_gap > s->o.chunked_prefill) s->keep_gap = s->o.chunked_prefill;
    /* where a prompt parts from a kept state's tokens, from a page's worth (a run seen twice will likely be
     * seen again) */
    s->branch_gap = s->page_tokens < s->keep_gap ? s->page_tokens : s->keep_gap;
    /* a fault injected for the tests of a failed step's path: the step of this id (from 1, the scheduler's own
     * count) finishes as if the backend had failed it */
    const char *fs = getenv("DSV4_SERVE_FAULT_STEP");
    s->fault_step = fs ? strtoll(fs, NULL, 10) : 0;
    if (pthread_create(&s->th, NULL, worker, s)) {
        snprintf(err, errlen, "cannot start the scheduler thread");
        goto fail;
    }
    s->started = 1;
    *out = s;
    return DSV4_OK;
fail:
    srv_prefix_destroy(s->pc);
    free(s->steps[0].m);
    free(s->steps[1].m);
    free(s->slots);
    free(s->entries);
    free(s);
    return DSV4_ERR_NOMEM;
}

void srv_sched_stop(srv_sched *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    s->draining = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->started) pthread_join(s->th, NULL);
    srv_prefix_destroy(s->pc);
    free(s->steps[0].m);
    free(s->steps[1].m);
    free(s->slots);
    free(s->entries);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}
