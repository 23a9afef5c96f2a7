/*
 * http.c - routes, authentication, body limits and response plumbing.
 *
 * libmicrohttpd runs one thread per connection, so a handler may block: a
 * non-streaming request waits on its srv_req's condition variable, and a
 * stream's content callback waits for the next token. Both wake at least
 * every WAIT_MS to look at the socket: a client that has hung up is noticed
 * within that time even while nothing is written to it, its request is
 * cancelled and its sequence freed at the scheduler's next step.
 *
 * A request's life on this side: accumulate the body (bounded; 413 beyond
 * --max-body-bytes, at once when Content-Length says so), parse and validate
 * it (openai.c), render the chat and tokenise it, check it against the
 * context, submit it (429 when the queue is full), then answer.
 *
 * CORS (--allowed-origins) lives here too: every response goes out through
 * respond(), which adds Access-Control-Allow-Origin for an allowed Origin,
 * and OPTIONS on a route is a browser's preflight, answered before any
 * authentication. OPTIONS * (the server as a whole) is answered the same way,
 * with or without CORS.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include "server/http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "server/openai.h"
#include "text/chat.h"

#define WAIT_MS 50

struct srv_http {
    srv_http_opts o;
    struct MHD_Daemon *d;
    srv_metrics *m;
    int port;
    /* set once by srv_http_ready (then read-only) */
    atomic_int ready;
    atomic_int draining;
    atomic_int answering; /* generation requests submitted whose answer is not yet all written */
    char model[256];
    const dsv4_tokenizer *tok;
    srv_sched *sched;
    dsv4_model_info info;
    long long created;
    /* CORS (--allowed-origins), set at start: off, any origin, or these (in origins_buf) */
    int cors, cors_any;
    char *origins_buf;
    const char **origins;
    int n_origins;
};

enum {
    ROUTE_NONE = 0,
    ROUTE_HEALTH,
    ROUTE_MODELS,
    ROUTE_MODEL,
    ROUTE_METRICS,
    ROUTE_CHAT,
    ROUTE_COMPLETIONS,
    ROUTE_SERVER, /* the asterisk-form target "*" (RFC 9112 3.2.4): OPTIONS about the server as a whole */
};

/* Per-connection-request state (MHD's con_cls). */
typedef struct {
    int route;
    dsv4_strbuf body;
    int too_big;
    int preflight;                  /* an OPTIONS request to answer once it is all in */
    srv_req *reqs[SRV_MAX_CHOICES]; /* a non-streaming request's choices being waited for */
    int n_req;
    int answering;       /* counted in srv_http.answering until the connection completes the request */
} conn_ctx;

/* A stream's state; owned by the response, freed by its free callback. */
typedef struct {
    srv_http *h;
    srv_req *reqs[SRV_MAX_CHOICES]; /* its choices (prompts x n) */
    int n;
    int chat, logprobs, include_usage;
    srv_stream_pos pos[SRV_MAX_CHOICES];
    int done[SRV_MAX_CHOICES]; /* the choice's finish is out */
    dsv4_strbuf pending;
    size_t sent;         /* bytes of pending already handed to MHD */
    int complete;        /* every choice done and the stream's end out, or memory ran out (oom) */
    int oom;             /* the stream ends with srv_stream_oom, of which oom_sent bytes are out */
    size_t oom_sent;
    int fd;
    char id[48];
    srv_resp_meta meta;
} stream_ctx;

/* ---- CORS ------------------------------------------------------------------------ */

/* Whether s[0..n) is an origin as a browser's Origin header has it: scheme "://" host [":" port], no path. */
static int origin_ok(const char *s, size_t n)
{
    static const char host_chars[] = "-._~%[]:";
    size_t i = 0;
    if (!n || !isalpha((unsigned char)s[0])) return 0;
    while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.')) i++;
    if (n - i < 4 || memcmp(s + i, "://", 3)) return 0;
    for (i += 3; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !memchr(host_chars, s[i], sizeof host_chars - 1)) return 0;
    return 1;
}

/* --allowed-origins: comma-separated origins, "*" for any; empty (or NULL) turns CORS off. */
static dsv4_status cors_parse(srv_http *h, const char *list, char *err, size_t errlen)
{
    if (!list || !*list) return DSV4_OK;
    size_t n = 1;
    for (const char *q = list; *q; q++) n += *q == ',';
    h->origins_buf = strdup(list);
    h->origins = calloc(n, sizeof *h->origins);
    if (!h->origins_buf || !h->origins) {
        snprintf(err, errlen, "out of memory");
        return DSV4_ERR_NOMEM;
    }
    h->cors = 1;
    for (char *item = h->origins_buf, *next; item; item = next) {
        next = strchr(item, ',');
        if (next) *next++ = 0;
        while (*item == ' ' || *item == '\t') item++;
        size_t len = strlen(item);
        while (len && (item[len - 1] == ' ' || item[len - 1] == '\t')) len--;
        if (len > 1 && item[len - 1] == '/' && item[len - 2] != '/')
            len--; /* "http://host/": the origin is without it */
        item[len] = 0;
        if (!len) {
            snprintf(err, errlen, "--allowed-origins: an empty entry in '%s' (an empty value alone turns CORS off)",
                     list);
            return DSV4_ERR_INVALID;
        }
        if (!strcmp(item, "*")) {
            h->cors_any = 1;
            continue;
        }
        if (!origin_ok(item, len)) {
            snprintf(err, errlen,
                     "--allowed-origins: '%s' is not an origin (scheme://host[:port] as a browser sends it, e.g. "
                     "http://localhost:3000, or *)",
                     item);
            return DSV4_ERR_INVALID;
        }
        h->origins[h->n_origins++] = item;
    }
    return DSV4_OK;
}

/* The Access-Control-Allow-Origin a request gets: "*", its own Origin when that is in the list, or NULL (CORS off,
 * no Origin, one not in the list: the browser keeps the answer from the page; the request is served all the same).
 * *vary: the answer depends on the Origin header (a list, not "*"). */
static const char *cors_origin(const srv_http *h, struct MHD_Connection *c, int *vary)
{
    *vary = 0;
    if (!h->cors) return NULL;
    if (h->cors_any) return "*";
    *vary = 1;
    const char *o = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (!o) return NULL;
    for (int i = 0; i < h->n_origins; i++)
        if (!strcasecmp(o, h->origins[i])) return o;
    return NULL;
}

/* Whether s is a list of header names (an Access-Control-Request-Headers worth echoing). */
static int header_list_ok(const char *s)
{
    static const char tchar[] = "!#$%&'*+-.^_`|~, \t";
    size_t n = strlen(s);
    if (!n || n > 1024) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !memchr(tchar, s[i], sizeof tchar - 1)) return 0;
    return 1;
}

/* ---- responses ---------------------------------------------------------------- */

/* Queues r with the CORS headers the request gets (every response: errors and streams too), counts it, drops the
 * caller's reference. */
static enum MHD_Result respond(srv_http *h, struct MHD_Connection *c, int status, struct MHD_Response *r)
{
    int vary;
    const char *o = cors_origin(h, c, &vary);
    if (o) MHD_add_response_header(r, "Access-Control-Allow-Origin", o);
    if (vary) MHD_add_response_header(r, "Vary", "Origin");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    srv_metrics_http(h->m, status);
    return ok;
}

static enum MHD_Result send_body(srv_http *h, struct MHD_Connection *c, int status, const char *ctype, const char *body,
                                 size_t n)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    return respond(h, c, status, r);
}

static enum MHD_Result send_json(srv_http *h, struct MHD_Connection *c, int status, char *json /* freed */)
{
    if (!json) {
        static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,"
                                  "\"code\":null}}";
        return send_body(h, c, 500, "application/json", oom, sizeof oom - 1);
    }
    enum MHD_Result r = send_body(h, c, status, "application/json", json, strlen(json));
    free(json);
    return r;
}

static enum MHD_Result send_error(srv_http *h, struct MHD_Connection *c, const srv_error *e)
{
    return send_json(h, c, e->status, srv_error_json(e));
}

static enum MHD_Result fail(srv_http *h, struct MHD_Connection *c, int status, const char *type, const char *param,
                            const char *msg)
{
    srv_error e;
    srv_error_set(&e, status, type, param, "%s", msg);
    return send_error(h, c, &e);
}

/* ---- connection liveness --------------------------------------------------------- */

/* Whether the peer has closed or reset the connection (without consuming input). */
static int peer_gone(int fd)
{
    if (fd < 0) return 0;
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return 0;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

static int conn_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? (int)ci->connect_fd : -1;
}

/* Waits up to WAIT_MS for r to change (r->mu held). */
static void wait_a_little(srv_req *r)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += WAIT_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&r->cv, &r->mu, &ts);
}

/* ---- streaming --------------------------------------------------------------------- */

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream_ctx *s = cls;
    while (s->sent == s->pending.len) {
        if (s->complete && s->oom && s->oom_sent < strlen(srv_stream_oom)) {
            size_t n = strlen(srv_stream_oom) - s->oom_sent;
            if (n > max) n = max;
            memcpy(buf, srv_stream_oom + s->oom_sent, n);
            s->oom_sent += n;
            return (ssize_t)n;
        }
        if (s->complete) return MHD_CONTENT_READER_END_OF_STREAM;
        s->pending.len = 0;
        s->sent = 0;
        for (;;) {
            /* what every choice has made since; a choice's chunks carry its index */
            int open = -1;
            for (int k = 0; k < s->n && !s->oom; k++) {
                if (s->done[k]) continue;
                srv_req *r = s->reqs[k];
                pthread_mutex_lock(&r->mu);
                const int rc = (s->chat ? srv_chat_stream : srv_completion_stream)(&s->meta, r, k, s->logprobs,
                                                                                   &s->pos[k], &s->pending);
                pthread_mutex_unlock(&r->mu);
                s->oom = rc < 0;
                s->done[k] = rc > 0;
                if (!s->done[k] && open < 0) open = k;
            }
            if (!s->oom && open < 0) /* every choice done: the usage chunk and [DONE] */
                s->oom = srv_stream_end(&s->meta, s->reqs, s->n, s->chat, s->include_usage, &s->pending) < 0;
            if (s->oom) {
                /* the events already whole go out, then the error event; the choices stop generating */
                for (int k = 0; k < s->n; k++) srv_req_cancel(s->h->sched, s->reqs[k]);
                s->complete = 1;
                break;
            }
            if (open < 0) {
                s->complete = 1;
                break;
            }
            if (s->pending.len) break;
            srv_req *r = s->reqs[open];
            pthread_mutex_lock(&r->mu);
            if (!r->done) wait_a_little(r);
            pthread_mutex_unlock(&r->mu);
            if (peer_gone(s->fd)) break;
        }
        if (s->pending.len == 0 && !s->complete) {
            /* the client hung up: stop generating for it, and end the response */
            for (int k = 0; k < s->n; k++) srv_req_cancel(s->h->sched, s->reqs[k]);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    size_t n = s->pending.len - s->sent;
    if (n > max) n = max;
    memcpy(buf, s->pending.p + s->sent, n);
    s->sent += n;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    stream_ctx *s = cls;
    for (int k = 0; k < s->n; k++) {
        if (!s->complete) srv_req_cancel(s->h->sched, s->reqs[k]); /* the connection ended before the stream did */
        srv_req_release(s->h->sched, s->reqs[k]);
    }
    dsv4_strbuf_free(&s->pending);
    free(s);
}

/* ---- generation requests ------------------------------------------------------------ */

/* Prompt ids of a chat request (plus the forced start of a tool call for tool_choice required / named). */
static int chat_prompt(srv_http *h, srv_params *p, srv_req **out, srv_error *e)
{
    dsv4_chat_prompt prompt = {0};
    int32_t *ids = NULL, *forced = NULL;
    size_t n_ids = 0, n_forced = 0;
    char err[512];
    int rc = -1;
    char *forced_text = NULL;
    dsv4_status st = dsv4_chat_render(p->conv.messages, p->conv.n_messages, &p->copts, &prompt, err, sizeof err);
    if (st == DSV4_OK) st = dsv4_chat_prompt_ids(h->tok, &prompt, &ids, &n_ids, err, sizeof err);
    if (st == DSV4_ERR_NOMEM) {
        srv_error_nomem(e);
        goto done;
    }
    if (st != DSV4_OK) {
        srv_error_set(e, 400, "invalid_request_error", "messages", "messages: %s", err);
        goto done;
    }
    /* tool_choice required / named: the answer starts as a tool-call block (chat mode; in thinking mode the
     * reasoning comes first and the choice is left to the model). */
    if (!p->copts.thinking && (p->tool_choice == SRV_TOOL_CHOICE_REQUIRED || p->tool_choice == SRV_TOOL_CHOICE_NAMED)) {
        static const char calls[] = "\n\n<" DSV4_TOK_DSML "tool_calls>\n",
                          invoke[] = "<" DSV4_TOK_DSML "invoke name=\"";
        dsv4_strbuf b = {0};
        int bad = dsv4_strbuf_put(&b, calls, sizeof calls - 1);
        if (p->tool_choice == SRV_TOOL_CHOICE_NAMED)
            bad = bad || dsv4_strbuf_put(&b, invoke, sizeof invoke - 1) ||
                  dsv4_strbuf_put(&b, p->tool_name, strlen(p->tool_name)) || dsv4_strbuf_put(&b, "\">\n", 3);
        forced_text = b.p; /* freed at done, whole or not */
        if (!bad) st = dsv4_tokenize(h->tok, forced_text, b.len, true, &forced, &n_forced, err, sizeof err);
        if (bad || st == DSV4_ERR_NOMEM) {
            srv_error_nomem(e);
            goto done;
        }
        if (st != DSV4_OK) {
            srv_error_set(e, 400, "invalid_request_error", "tool_choice", "tool_choice: %s", err);
            goto done;
        }
        int32_t *all = realloc(ids, (n_ids + n_forced) * sizeof(int32_t));
        if (!all) {
            srv_error_nomem(e);
            goto done;
        }
        ids = all;
        memcpy(ids + n_ids, forced, n_forced * sizeof(int32_t));
        n_ids += n_forced;
    }
    srv_req *r = srv_req_create(ids, (int)n_ids);
    if (!r) {
        srv_error_nomem(e);
        goto done;
    }
    r->chat = 1;
    r->thinking = p->copts.thinking;
    r->forced_text = forced_text;
    forced_text = NULL;
    *out = r;
    rc = 0;
done:
    free(forced_text);
    free(forced);
    free(ids);
    dsv4_chat_prompt_free(&prompt);
    return rc;
}

static int completion_prompt(srv_http *h, const srv_prompt *pr, const char *pn, srv_req **out, srv_error *e)
{
    int32_t *ids = pr->ids;
    size_t n = (size_t)pr->n_ids;
    char err[512];
    if (pr->text) {
        /* a raw prompt: special-token strings in it are the client's to use */
        const dsv4_status st = dsv4_tokenize(h->tok, pr->text, pr->len, true, &ids, &n, err, sizeof err);
        if (st == DSV4_ERR_NOMEM) {
            srv_error_nomem(e);
            return -1;
        }
        if (st != DSV4_OK) {
            srv_error_set(e, 400, "invalid_request_error", "prompt", "%s: %s", pn, err);
            return -1;
        }
        if (n == 0) {
            free(ids);
            srv_error_set(e, 400, "invalid_request_error", "prompt", "%s: tokenizes to nothing", pn);
            return -1;
        }
    }
    *out = srv_req_create(ids, (int)n);
    if (ids != pr->ids) free(ids);
    if (!*out) {
        srv_error_nomem(e);
        return -1;
    }
    return 0;
}

static enum MHD_Result generate(srv_http *h, struct MHD_Connection *c, conn_ctx *cc)
{
    srv_error e = {0};
    srv_params p;
    srv_parse_limits lim = {.vocab_size = h->info.vocab_size, .max_stops = SRV_MAX_STOPS};
    int chat = cc->route == ROUTE_CHAT;
    if (cc->body.len == 0)
        return fail(h, c, 400, "invalid_request_error", "", "the request has no body (expected a JSON object)");
    if ((chat ? srv_parse_chat : srv_parse_completion)(cc->body.p, cc->body.len, &lim, &p, &e)) {
        srv_params_free(&p);
        return send_error(h, c, &e);
    }
    dsv4_strbuf_free(&cc->body);
    if (p.model && strcmp(p.model, h->model)) {
        srv_error_set(&e, 404, "invalid_request_error", "model", "The model '%.100s' does not exist (this server "
                      "serves '%s')", p.model, h->model);
        e.code = "model_not_found";
        srv_params_free(&p);
        return send_error(h, c, &e);
    }
    /* a completions batch: P prompts, n choices each (choice index = prompt index x n + choice) */
    const int P = chat ? 1 : p.n_prompts, n_per = p.n, n_choices = P * n_per;
    if (n_choices > srv_sched_capacity(h->sched)) {
        if (P == 1)
            srv_error_set(&e, 400, "invalid_request_error", "n",
                          "n: %d choices can never be held at once by this server (--max-running-requests plus "
                          "--max-queue: %d)",
                          p.n, srv_sched_capacity(h->sched));
        else
            srv_error_set(&e, 400, "invalid_request_error", "prompt",
                          "prompt: %d prompts x n %d choices can never be held at once by this server "
                          "(--max-running-requests plus --max-queue: %d)",
                          P, p.n, srv_sched_capacity(h->sched));
        srv_params_free(&p);
        return send_error(h, c, &e);
    }
    const char *pname = chat ? "messages" : "prompt";
    const int64_t ctx = h->info.max_ctx;
    srv_req *rs[SRV_MAX_CHOICES] = {0};
    for (int i = 0; i < P; i++) {
        char pn[32]; /* the prompt named in errors: prompt[i] in a batch */
        if (P > 1)
            snprintf(pn, sizeof pn, "prompt[%d]", i);
        else
            snprintf(pn, sizeof pn, "%s", pname);
        srv_req *r = NULL;
        if (chat ? chat_prompt(h, &p, &r, &e) : completion_prompt(h, &p.prompts[i], pn, &r, &e)) goto refuse;
        if (i > 0) { /* the first prompt's settings, this prompt */
            srv_req *o = r;
            r = srv_req_clone_prompt(rs[0], o->prompt, o->n_prompt, 0);
            srv_req_release(h->sched, o);
            if (!r) {
                srv_error_set(&e, 500, "server_error", "", "out of memory");
                goto refuse;
            }
        }
        rs[i * n_per] = r;
        /* a text prompt whose tokenizer ids the model does not have (a tokenizer larger than the vocabulary):
           the request's input, refused as such before it is queued */
        for (int j = 0; j < r->n_prompt; j++)
            if (r->prompt[j] < 0 || r->prompt[j] >= h->info.vocab_size) {
                srv_error_set(&e, 400, "invalid_request_error", pname,
                              "%s: the tokenizer gives token %d (at position %d), outside this model's vocabulary "
                              "of %d ids",
                              pn, (int)r->prompt[j], j, (int)h->info.vocab_size);
                goto refuse;
            }
        /* context: the prompt must leave room for at least one token; max_tokens, when given, must fit too */
        if (r->n_prompt >= ctx || (p.max_tokens > 0 && r->n_prompt + (int64_t)p.max_tokens > ctx)) {
            if (p.max_tokens > 0 && r->n_prompt < ctx)
                srv_error_set(&e, 400, "invalid_request_error", "max_tokens",
                              "This model's maximum context length is %lld tokens. However, you requested %lld "
                              "tokens (%d in the %s, %d for the completion). Please reduce the length of the %s or "
                              "max_tokens.",
                              (long long)ctx, (long long)r->n_prompt + p.max_tokens, r->n_prompt, pn, p.max_tokens, pn);
            else
                srv_error_set(&e, 400, "invalid_request_error", pname,
                              "This model's maximum context length is %lld tokens. However, your %s is %d tokens. "
                              "Please reduce the length of the %s.",
                              (long long)ctx, pn, r->n_prompt, pn);
            e.code = "context_length_exceeded";
            goto refuse;
        }
        if (i == 0) { /* the request's settings (the other prompts' requests copy them) */
            r->sp = p.sp;
            r->sp.logprobs = p.logprobs;
            r->sp.top_logprobs = p.top_logprobs;
            if (!p.ignore_eos) {
                r->stop_ids[0] = h->info.eos_id;
                r->sp.stop_ids = r->stop_ids;
                r->sp.n_stop_ids = 1;
            }
            r->bias_ids = p.bias_ids;
            r->bias = p.bias;
            r->sp.logit_bias_ids = p.bias_ids;
            r->sp.logit_bias = p.bias;
            r->sp.n_logit_bias = p.n_bias;
            p.bias_ids = NULL;
            p.bias = NULL;
            for (int k = 0; k < p.n_stops; k++) r->stops[k] = p.stops[k];
            r->n_stops = p.n_stops;
            p.n_stops = 0;
            if (h->o.request_timeout > 0) r->deadline = r->t_arrive + h->o.request_timeout;
        }
        r->sp.max_tokens = p.max_tokens > 0 ? p.max_tokens : (int)(ctx - r->n_prompt);
        if (p.echo) { /* the prompt as text, and with logprobs each prompt token's */
            const srv_prompt *pr = chat ? NULL : &p.prompts[i];
            size_t tl = 0;
            char derr[256];
            if ((!pr || !pr->text) &&
                dsv4_detokenize(h->tok, r->prompt, (size_t)r->n_prompt, &r->echo_text, &tl, derr, sizeof derr)) {
                /* an id the model has but the tokenizer cannot print: no text to echo */
                srv_error_set(&e, 400, "invalid_request_error", "prompt", "%s: echo: %s", pn, derr);
                goto refuse;
            }
            if (pr && pr->text) r->echo_text = strndup(pr->text, tl = pr->len);
            r->echo_len = tl;
            if (p.logprobs && !r->ptoks) r->ptoks = calloc((size_t)r->n_prompt, sizeof *r->ptoks);
            if (!r->echo_text || (p.logprobs && !r->ptoks)) {
                srv_error_set(&e, 500, "server_error", "", "out of memory");
                goto refuse;
            }
        }
        if (p.no_gen) {
            r->no_gen = 1;
            r->sp.max_tokens = 1; /* what its pages are reserved for; it never samples */
        }
    }
    int stream = p.stream, include_usage = p.include_usage, logprobs = p.logprobs;
    srv_params_free(&p);

    /* n choices of each prompt: n requests of the same prompt and settings (each a sequence of the batch; seeds
     * s, s + 1, ...) */
    int n = n_choices;
    char err[512];
    dsv4_status st = DSV4_OK;
    for (int i = 0; i < P && st == DSV4_OK; i++)
        for (int k = 1; k < n_per; k++)
            if (!(rs[i * n_per + k] = srv_req_clone(rs[i * n_per], k))) {
                st = DSV4_ERR_NOMEM, snprintf(err, sizeof err, "out of memory");
                break;
            }
    if (st != DSV4_OK) {
        for (int k = 0; k < n; k++)
            if (rs[k]) srv_req_release(h->sched, rs[k]);
        return fail(h, c, 500, "server_error", "", err);
    }
    int submitted = 0;
    while (st == DSV4_OK && submitted < n &&
           (st = srv_sched_submit(h->sched, rs[submitted], err, sizeof err)) == DSV4_OK)
        submitted++;
    if (st != DSV4_OK) {
        for (int k = 0; k < n; k++) {
            if (k < submitted) srv_req_cancel(h->sched, rs[k]);
            srv_req_release(h->sched, rs[k]);
        }
        if (st == DSV4_ERR_NOMEM) return fail(h, c, 429, "rate_limit_error", "", err);
        if (st == DSV4_ERR_STATE) return fail(h, c, 503, "service_unavailable", "", err);
        return fail(h, c, 400, "invalid_request_error", "max_tokens", err);
    }
    /* from here the scheduler may finish the request before its last bytes are written: shutdown waits for those */
    cc->answering = 1;
    /* a non-streamed answer blocks this thread, and a stream's reader may wait long for its next token (a queue, a
     * long prefill): MHD would take either for an idle connection and drop it as its answer is written; the idle
     * timeout is back once the request completes (a keep-alive connection waiting for its next request) */
    if (h->o.idle_timeout) MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    atomic_fetch_add(&h->answering, 1);

    char id[48];
    srv_make_id(chat ? "chatcmpl" : "cmpl", '-', id, sizeof id);
    if (stream) {
        stream_ctx *s = calloc(1, sizeof *s);
        if (!s) {
            for (int k = 0; k < n; k++) {
                srv_req_cancel(h->sched, rs[k]);
                srv_req_release(h->sched, rs[k]);
            }
            return fail(h, c, 500, "server_error", "", "out of memory");
        }
        s->h = h;
        memcpy(s->reqs, rs, (size_t)n * sizeof rs[0]);
        s->n = n;
        s->chat = chat;
        s->logprobs = logprobs;
        s->include_usage = include_usage;
        s->fd = conn_fd(c);
        snprintf(s->id, sizeof s->id, "%s", id);
        s->meta = (srv_resp_meta){.id = s->id, .model = h->model, .created = (long long)time(NULL), .tok = h->tok};
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, s,
                                                                      stream_free);
        if (!resp) {
            stream_free(s);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        MHD_add_response_header(resp, "X-Accel-Buffering", "no");
        return respond(h, c, 200, resp);
    }

    /* not streamed: wait for the end of every choice, watching the client */
    memcpy(cc->reqs, rs, (size_t)n * sizeof rs[0]);
    cc->n_req = n;
    int fd = conn_fd(c), gone = 0;
    for (int k = 0; k < n && !gone; k++) {
        srv_req *q = rs[k];
        pthread_mutex_lock(&q->mu);
        while (!q->done) {
            wait_a_little(q);
            if (!q->done && peer_gone(fd)) {
                gone = 1;
                break;
            }
        }
        pthread_mutex_unlock(&q->mu);
    }
    if (gone) {
        for (int k = 0; k < n; k++) srv_req_cancel(h->sched, rs[k]);
        return MHD_NO; /* closes the connection */
    }
    srv_resp_meta meta = {.id = id, .model = h->model, .created = (long long)time(NULL), .tok = h->tok};
    for (int k = 0; k < n; k++) {
        const srv_req *q = rs[k];
        if (q->outcome == SRV_OUTCOME_ERROR)
            return fail(h, c, 500, "server_error", "", q->error[0] ? q->error : "internal error");
        if (q->outcome == SRV_OUTCOME_TIMEOUT)
            return fail(h, c, 504, "timeout_error", "", "the request's deadline passed (--request-timeout)");
        if (q->outcome == SRV_OUTCOME_CANCELLED)
            return fail(h, c, 503, "service_unavailable", "",
                        "the request was cancelled (the server is shutting down)");
    }
    char *json = chat ? srv_chat_response(&meta, rs, n, logprobs) : srv_completion_response(&meta, rs, n, logprobs);
    return send_json(h, c, 200, json);
refuse: /* a prompt refused before anything was submitted */
    for (int k = 0; k < SRV_MAX_CHOICES; k++)
        if (rs[k]) srv_req_release(h->sched, rs[k]);
    srv_params_free(&p);
    return send_error(h, c, &e);
}

/* ---- routing ------------------------------------------------------------------------- */

/* The path a request target names. RFC 9112 3.2.2: a server must accept the absolute-form,
 * "http://host:port/v1/chat/completions", which a client sends through a proxy (MHD hands it over as it came, less
 * the query): routes are matched on its path ("/" when it has none); the origin-form is the path already. */
static const char *target_path(const char *url)
{
    size_t k = !strncasecmp(url, "http://", 7) ? 7 : !strncasecmp(url, "https://", 8) ? 8 : 0;
    if (!k) return url;
    const char *p = strchr(url + k, '/');
    return p ? p : "/";
}

static int route_of(const char *url)
{
    if (!strcmp(url, "*")) return ROUTE_SERVER;
    if (!strcmp(url, "/health")) return ROUTE_HEALTH;
    if (!strcmp(url, "/v1/models")) return ROUTE_MODELS;
    if (!strncmp(url, "/v1/models/", 11) && url[11]) return ROUTE_MODEL;
    if (!strcmp(url, "/metrics")) return ROUTE_METRICS;
    if (!strcmp(url, "/v1/chat/completions")) return ROUTE_CHAT;
    if (!strcmp(url, "/v1/completions")) return ROUTE_COMPLETIONS;
    return ROUTE_NONE;
}

static int authorized(srv_http *h, struct MHD_Connection *c)
{
    if (!h->o.api_key) return 1;
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!a || strncasecmp(a, "Bearer ", 7)) return 0;
    a += 7;
    size_t la = strlen(a), lk = strlen(h->o.api_key);
    /* compare in time independent of where the first difference is */
    unsigned diff = (unsigned)(la ^ lk);
    for (size_t i = 0; i < la; i++) diff |= (unsigned char)a[i] ^ (unsigned char)h->o.api_key[i % (lk ? lk : 1)];
    return diff == 0;
}

static enum MHD_Result models(srv_http *h, struct MHD_Connection *c, const char *one)
{
    json_t *m = json_pack("{s:s, s:s, s:I, s:s, s:I}", "id", h->model, "object", "model", "created",
                          (json_int_t)h->created, "owned_by", "dsv4", "max_model_len", (json_int_t)h->info.max_ctx);
    if (one) {
        if (strcmp(one, h->model)) {
            json_decref(m);
            srv_error e;
            srv_error_set(&e, 404, "invalid_request_error", "model", "The model '%.100s' does not exist", one);
            e.code = "model_not_found";
            return send_error(h, c, &e);
        }
        char *s = srv_json_dumps(m);
        json_decref(m);
        return send_json(h, c, 200, s);
    }
    json_t *list = json_pack("{s:s, s:[o]}", "object", "list", "data", m);
    char *s = srv_json_dumps(list);
    json_decref(list);
    return send_json(h, c, 200, s);
}

/* OPTIONS on a route with CORS on (a browser's preflight before a cross-origin request): 204 with the route's
 * methods, and for an allowed origin the CORS answer - those methods, the headers the browser asks for (when they
 * are a list of header names; else Authorization and Content-Type), and for how long it may keep the answer.
 * Answered before authentication (a preflight never carries the API key) and while loading or shutting down. */
static enum MHD_Result preflight(srv_http *h, struct MHD_Connection *c, int post)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    const char *methods = post ? "POST, OPTIONS" : "GET, HEAD, OPTIONS";
    MHD_add_response_header(r, "Allow", methods);
    int vary;
    if (cors_origin(h, c, &vary)) {
        const char *asked = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Access-Control-Request-Headers");
        const int echo = asked && header_list_ok(asked);
        MHD_add_response_header(r, "Access-Control-Allow-Methods", methods);
        MHD_add_response_header(r, "Access-Control-Allow-Headers", echo ? asked : "Authorization, Content-Type");
        MHD_add_response_header(r, "Access-Control-Max-Age", "600");
        if (echo) MHD_add_response_header(r, "Vary", "Access-Control-Request-Headers");
    }
    return respond(h, c, 204, r);
}

/* OPTIONS * (RFC 9110 9.3.7: about the server, not one resource): 200 with no content and an Allow naming the
 * methods the server takes on some route (OPTIONS at least here). Answered as a preflight is: before
 * authentication, while loading or shutting down, on a connection kept open. */
static enum MHD_Result server_options(srv_http *h, struct MHD_Connection *c)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Allow", "GET, HEAD, POST, OPTIONS");
    return respond(h, c, 200, r);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    (void)version;
    srv_http *h = cls;
    conn_ctx *cc = *con_cls;
    url = target_path(url);
    if (!cc) {
        /* first call: the headers are in; refuse early what can be refused early */
        cc = calloc(1, sizeof *cc);
        if (!cc) return MHD_NO;
        *con_cls = cc;
        cc->route = route_of(url);
        int post = cc->route == ROUTE_CHAT || cc->route == ROUTE_COMPLETIONS;
        if (cc->route == ROUTE_NONE) {
            char msg[300];
            snprintf(msg, sizeof msg, "no route %s %.200s", method, url);
            return fail(h, c, 404, "invalid_request_error", "", msg);
        }
        if (cc->route == ROUTE_SERVER && strcmp(method, "OPTIONS")) {
            char msg[200];
            snprintf(msg, sizeof msg, "%.20s *: the request target * is for OPTIONS alone (RFC 9112 3.2.4)", method);
            return fail(h, c, 400, "invalid_request_error", "", msg);
        }
        if (cc->route == ROUTE_SERVER || (h->cors && !strcmp(method, "OPTIONS"))) {
            /* answered once the request is all in: a response queued before that closes the connection, and the
             * browser's request follows on it */
            cc->preflight = 1;
            return MHD_YES;
        }
        if (post ? strcmp(method, "POST") : strcmp(method, "GET") && strcmp(method, "HEAD")) {
            srv_error e;
            srv_error_set(&e, 405, "invalid_request_error", "", "%s is not allowed on %.200s (use %s)", method, url,
                          post ? "POST" : "GET");
            char *json = srv_error_json(&e);
            if (!json) return send_json(h, c, 500, NULL); /* the out-of-memory answer every other path gives */
            struct MHD_Response *r = MHD_create_response_from_buffer(strlen(json), json, MHD_RESPMEM_MUST_COPY);
            free(json);
            if (!r) return MHD_NO;
            MHD_add_response_header(r, "Content-Type", "application/json");
            MHD_add_response_header(r, "Allow",
                                    post ? (h->cors ? "POST, OPTIONS" : "POST")
                                         : (h->cors ? "GET, HEAD, OPTIONS" : "GET, HEAD"));
            return respond(h, c, 405, r);
        }
        if (!strncmp(url, "/v1/", 4) && !authorized(h, c)) {
            srv_error e;
            srv_error_set(&e, 401, "authentication_error", "", "missing or wrong API key (Authorization: Bearer ...)");
            e.code = "invalid_api_key";
            return send_error(h, c, &e);
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > h->o.max_body) {
            char msg[200];
            snprintf(msg, sizeof msg, "the body is %s bytes, over the limit of %zu (--max-body-bytes)", cl,
                     h->o.max_body);
            srv_error e;
            srv_error_set(&e, 413, "invalid_request_error", "", "%s", msg);
            return send_error(h, c, &e);
        }
        return MHD_YES;
    }
    if (*upload_data_size && cc->preflight) { /* a body on OPTIONS means nothing: dropped */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (cc->preflight && cc->route == ROUTE_SERVER) return server_options(h, c);
    if (cc->preflight) return preflight(h, c, cc->route == ROUTE_CHAT || cc->route == ROUTE_COMPLETIONS);
    if (*upload_data_size) {
        /* the body, in pieces; past the limit it is read and dropped (chunked uploads have no length) */
        if (!cc->too_big && cc->body.len + *upload_data_size > h->o.max_body) {
            cc->too_big = 1;
            dsv4_strbuf_free(&cc->body);
        }
        if (!cc->too_big && dsv4_strbuf_put(&cc->body, upload_data, *upload_data_size)) cc->too_big = 1;
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (cc->too_big) {
        char msg[200];
        snprintf(msg, sizeof msg, "the body is over the limit of %zu bytes (--max-body-bytes)", h->o.max_body);
        return fail(h, c, 413, "invalid_request_error", "", msg);
    }
    int ready = atomic_load(&h->ready), draining = atomic_load(&h->draining);
    switch (cc->route) {
    case ROUTE_HEALTH:
        if (!ready) return fail(h, c, 503, "service_unavailable", "", "loading the model");
        if (draining) return fail(h, c, 503, "service_unavailable", "", "shutting down");
        return send_json(h, c, 200, strdup("{\"status\":\"ok\"}"));
    case ROUTE_METRICS: {
        dsv4_strbuf b = {0};
        if (srv_metrics_render(h->m, &b) || !b.p) {
            dsv4_strbuf_free(&b);
            return fail(h, c, 500, "server_error", "", "out of memory");
        }
        enum MHD_Result ok = send_body(h, c, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len);
        dsv4_strbuf_free(&b);
        return ok;
    }
    default: break;
    }
    if (!ready) return fail(h, c, 503, "service_unavailable", "", "the model is still loading");
    if (cc->route == ROUTE_MODELS) return models(h, c, NULL);
    if (cc->route == ROUTE_MODEL) return models(h, c, url + 11);
    if (draining) return fail(h, c, 503, "service_unavailable", "", "the server is shutting down");
    return generate(h, c, cc);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    srv_http *h = cls;
    conn_ctx *cc = *con_cls;
    if (!cc) return;
    if (cc->answering) {
        atomic_fetch_sub(&h->answering, 1);
        /* the connection may stay open for the next request: idle again from now (MHD restarts the clock when a
         * timeout is set on a connection that had none) */
        if (h->o.idle_timeout && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
            MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, h->o.idle_timeout);
    }
    for (int k = 0; k < cc->n_req; k++) {
        if (!cc->reqs[k]->done) srv_req_cancel(h->sched, cc->reqs[k]);
        srv_req_release(h->sched, cc->reqs[k]);
    }
    dsv4_strbuf_free(&cc->body);
    free(cc);
    *con_cls = NULL;
}

/* ---- lifetime ---------------------------------------------------------------------------- */

static void http_free(srv_http *h)
{
    free(h->origins_buf);
    free(h->origins);
    free(h);
}

dsv4_status srv_http_start(const srv_http_opts *o, srv_metrics *m, srv_http **out, char *err, size_t errlen)
{
    srv_http *h = calloc(1, sizeof *h);
    if (!h) return DSV4_ERR_NOMEM;
    h->o = *o;
    h->m = m;
    h->created = (long long)time(NULL);
    dsv4_status st = cors_parse(h, o->allowed_origins, err, errlen);
    if (st) {
        http_free(h);
        return st;
    }

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST},
                    *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", o->port);
    if (getaddrinfo(o->host, port, &hints, &ai) || !ai) {
        snprintf(err, errlen, "--host %s: not a numeric IPv4 or IPv6 address", o->host);
        http_free(h);
        return DSV4_ERR_INVALID;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    h->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, /* restart over TIME_WAIT */
                            MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)(o->max_connections > 0 ? o->max_connections : 256),
                            MHD_OPTION_CONNECTION_TIMEOUT, o->idle_timeout, /* silent connections: closed */
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024, MHD_OPTION_THREAD_STACK_SIZE,
                            (size_t)1 << 20, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!h->d) {
        snprintf(err, errlen, "cannot listen on %s port %d (in use, or not an address of this machine)", o->host,
                 o->port);
        http_free(h);
        return DSV4_ERR_IO;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : o->port;
    *out = h;
    return DSV4_OK;
}

int srv_http_port(const srv_http *h) { return h->port; }

void srv_http_ready(srv_http *h, const char *model_name, const dsv4_tokenizer *tok, srv_sched *sched,
                    const dsv4_model_info *info)
{
    snprintf(h->model, sizeof h->model, "%s", model_name);
    h->tok = tok;
    h->sched = sched;
    h->info = *info;
    atomic_store(&h->ready, 1);
}

void srv_http_draining(srv_http *h) { atomic_store(&h->draining, 1); }

int srv_http_answering(srv_http *h)
{
    return atomic_load(&h->answering);
}

void srv_http_stop(srv_http *h)
{
    if (!h) return;
    MHD_stop_daemon(h->d);
    http_free(h);
}
