/*
 * openai.h - the OpenAI API at the edge: request JSON -> native structs, with
 * every field validated and refused by name, and native results -> response
 * JSON (whole responses, stream chunks, errors). Nothing here touches the
 * engine; the HTTP layer turns a srv_params into a srv_req.
 */
#ifndef DSV4_SERVER_OPENAI_H
#define DSV4_SERVER_OPENAI_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "dsv4.h"
#include "server/scheduler.h"
#include "text/chat.h"

/* An error as OpenAI reports it: {"error": {"message", "type", "param", "code"}}. */
typedef struct {
    int status;        /* HTTP status */
    const char *type;  /* "invalid_request_error", "authentication_error", ... */
    const char *code;  /* may be NULL */
    char param[64];    /* the offending field ("" when none) */
    char message[768];
} srv_error;

void srv_error_set(srv_error *e, int status, const char *type, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* A 500 for an allocation that failed (the request is not at fault): "out of memory"; returns -1. */
int srv_error_nomem(srv_error *e);
/* j as compact JSON text (malloc'ed); NULL when j is NULL or memory ran out, never text cut or malformed. */
char *srv_json_dumps(const json_t *j);
/* Malloc'ed JSON text of the error (never NULL unless out of memory). */
char *srv_error_json(const srv_error *e);

typedef enum {
    SRV_TOOL_CHOICE_AUTO = 0,
    SRV_TOOL_CHOICE_NONE,
    SRV_TOOL_CHOICE_REQUIRED,
    SRV_TOOL_CHOICE_NAMED,
} srv_tool_choice;

/* Limits the parser enforces (set by the server from the model). */
/* The most choices a request may ask for (n): each is a sequence of its own in the running batch. */
#define SRV_MAX_N 16
/* The most prompts of a completions batch (prompt as an array of prompts), and the most sequences one request
 * makes (prompts x n). */
#define SRV_MAX_PROMPTS 64
#define SRV_MAX_CHOICES 64

typedef struct {
    int vocab_size;   /* logit_bias and token-id prompts must be below it */
    int max_stops;    /* at most SRV_MAX_STOPS */
} srv_parse_limits;

/* A completions prompt: text (NUL-terminated) or token ids. */
typedef struct {
    char *text; /* or NULL when ids */
    size_t len;
    int32_t *ids;
    int n_ids;
} srv_prompt;

/* A validated request. */
typedef struct {
    int chat;                    /* 1: chat.completions; 0: completions */
    char *model;                 /* as given; NULL when absent */
    int stream, include_usage;
    dsv4_sampling_params sp;     /* sampling settings (its arrays are not set: see bias/stops) */
    int32_t *bias_ids;           /* [n_bias] */
    float *bias;                 /* [n_bias] */
    int n_bias;
    char *stops[SRV_MAX_STOPS];
    int n_stops;
    int max_tokens;              /* 0: not given */
    int n;                       /* choices: 1..SRV_MAX_N */
    int echo;                    /* completions: the prompt comes back before the completion (with logprobs: its
                                    tokens' logprobs too, the first one's null) */
    int no_gen;                  /* completions: max_tokens 0 (with echo): the prompt alone, nothing generated */
    int logprobs, top_logprobs;
    int ignore_eos;
    /* chat */
    json_t *root;                /* the parsed body (conv points into nothing of it; kept for tools) */
    dsv4_chat_conv conv;
    int has_conv;
    dsv4_chat_opts copts;
    srv_tool_choice tool_choice;
    char *tool_name;             /* SRV_TOOL_CHOICE_NAMED */
    int has_tools;
    /* completions: n_prompts prompts (a batch: choice index = prompt index x n + choice) */
    srv_prompt *prompts;
    int n_prompts;
} srv_params;

/* Parse and validate a request body. Return 0, or -1 with e filled (status 400 and the field; 500 when memory ran
 * out). */
int srv_parse_chat(const char *body, size_t n, const srv_parse_limits *lim, srv_params *out, srv_error *e);
int srv_parse_completion(const char *body, size_t n, const srv_parse_limits *lim, srv_params *out, srv_error *e);
void srv_params_free(srv_params *p);

/* ---- responses ---- */

/* What a response needs besides the request's output. */
typedef struct {
    const char *id;              /* "chatcmpl-..." / "cmpl-..." */
    const char *model;
    long long created;           /* unix seconds */
    const dsv4_tokenizer *tok;   /* token strings for logprobs */
} srv_resp_meta;

const char *srv_finish_reason(const srv_req *r);

/* The whole response of finished requests, one choice each (index k: rs[k]; every rs[k] done). The usage counts
 * the prompt once and every choice's tokens. Malloc'ed JSON; NULL when out of memory (never a part of it). */
char *srv_chat_response(const srv_resp_meta *m, srv_req *const *rs, int n, int logprobs);
char *srv_completion_response(const srv_resp_meta *m, srv_req *const *rs, int n, int logprobs);

/* Streaming: the reader's position in a request's output. */
typedef struct {
    size_t content, reasoning;  /* bytes sent */
    int tools;                  /* tool calls sent */
    int toks;                   /* logprob entries sent */
    int role_sent, finish_sent;
    int echo_sent; /* completions' echo: the prompt's chunk is out */
    size_t offset; /* completions' text_offset of the next token: the characters of the tokens before it */
} srv_stream_pos;

/* Appends SSE events ("data: {...}\n\n") for what r, choice `index`, produced since pos (r->mu held) to out,
 * and moves pos. When r is done it adds the choice's finish chunk (none for an error or a timeout) and returns
 * 1; else 0. -1 when memory ran out: out holds whole events only (those appended before), and the stream must
 * end with srv_stream_oom. */
int srv_chat_stream(const srv_resp_meta *m, const srv_req *r, int index, int logprobs, srv_stream_pos *pos,
                    dsv4_strbuf *out);
int srv_completion_stream(const srv_resp_meta *m, const srv_req *r, int index, int logprobs, srv_stream_pos *pos,
                          dsv4_strbuf *out);
/* The end of a stream once every choice is done: an error event when one failed or timed out, the usage chunk
 * (include_usage; the prompt once, every choice's tokens) and "data: [DONE]". Returns 0, or -1 when memory ran
 * out (out as it was: end with srv_stream_oom instead). */
int srv_stream_end(const srv_resp_meta *m, srv_req *const *rs, int n, int chat, int include_usage, dsv4_strbuf *out);

/* The end of a stream whose output could not be built (out of memory): the server's error event, a 500
 * server_error "out of memory", then "data: [DONE]". Static: sending it needs no memory. */
extern const char srv_stream_oom[];

#endif
