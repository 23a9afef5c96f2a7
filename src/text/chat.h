/*
 * chat.h - the DeepSeek-V4 chat encoding (MODEL.md §5.3) and its inverse.
 *
 * Rendering reproduces DeepSeek's official `encoding/encoding_dsv4.py`
 * (`encode_messages`) byte for byte: the prompt comes out as a list of
 * segments, each either plain text or one special token named by its content
 * string ("<｜User｜>", "</think>", "｜DSML｜", ...). The tokenizer turns text
 * segments into BPE ids and special segments into their single ids; the
 * concatenation of all segments is exactly the official prompt string.
 *
 * Inputs are native structs (JSON never reaches the engine). The only JSON
 * inside them is what the official format itself carries as JSON: OpenAI tool
 * schemas, a response_format object and tool-call arguments; they are re-dumped
 * the way Python's json.dumps(..., ensure_ascii=False) writes them.
 * dsv4_chat_conv_from_json builds the structs from OpenAI-style JSON.
 *
 * The inverse is a push parser (chat_parse.c): fed the model's output text
 * piece by piece, it emits reasoning, content and tool calls as early as it can
 * without ever emitting text that may still turn out to be part of a marker.
 */
#ifndef DSV4_TEXT_CHAT_H
#define DSV4_TEXT_CHAT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "dsv4.h"

/* Special-token strings used by the V4 encoding (MODEL.md §5.2). */
#define DSV4_TOK_BOS "<｜begin▁of▁sentence｜>"
#define DSV4_TOK_EOS "<｜end▁of▁sentence｜>"
#define DSV4_TOK_USER "<｜User｜>"
#define DSV4_TOK_ASSISTANT "<｜Assistant｜>"
#define DSV4_TOK_LATEST_REMINDER "<｜latest_reminder｜>"
#define DSV4_TOK_THINK "<think>"
#define DSV4_TOK_THINK_END "</think>"
#define DSV4_TOK_DSML "｜DSML｜"

/* ---------------------------------------------------------------- input -- */

typedef enum {
    DSV4_CHAT_SYSTEM = 0,
    DSV4_CHAT_USER,
    DSV4_CHAT_ASSISTANT,
    DSV4_CHAT_TOOL,
    DSV4_CHAT_DEVELOPER,       /* rendered as a user turn; DeepSeek's search-agent role */
    DSV4_CHAT_LATEST_REMINDER, /* "<｜latest_reminder｜>" + content (date, locale, ...) */
} dsv4_chat_role;

/* Quick-instruction tasks of the official encoder (internal classifiers). */
typedef enum {
    DSV4_CHAT_TASK_NONE = 0,
    DSV4_CHAT_TASK_ACTION,
    DSV4_CHAT_TASK_QUERY,
    DSV4_CHAT_TASK_AUTHORITY,
    DSV4_CHAT_TASK_DOMAIN,
    DSV4_CHAT_TASK_TITLE,
    DSV4_CHAT_TASK_READ_URL,
} dsv4_chat_task;

typedef struct {
    const char *id;        /* may be NULL; used to order tool results */
    const char *name;      /* required */
    const char *arguments; /* JSON text of an object; text that is not JSON is rendered, as the
                              official encoder does, as one string parameter named "arguments" */
} dsv4_chat_tool_call;

typedef struct {
    dsv4_chat_role role;
    const char *content;           /* may be NULL (rendered as "") */
    const char *reasoning_content; /* assistant; may be NULL */
    const dsv4_chat_tool_call *tool_calls; /* assistant; [n_tool_calls] */
    int n_tool_calls;
    const char *tool_call_id;      /* tool; may be NULL */
    const char *name;              /* accepted, not rendered (the V4 format has no names) */
    const char *tools;             /* JSON array of OpenAI tools ({"type":"function","function":{...}}),
                                      rendered after a system or developer message; may be NULL */
    const char *response_format;   /* JSON object rendered after a system or developer message; may be NULL */
    dsv4_chat_task task;
    int wo_eos;                    /* assistant: leave off the EOS (continue a partial answer) */
} dsv4_chat_message;

typedef enum {
    DSV4_EFFORT_DEFAULT = 0, /* official None */
    DSV4_EFFORT_HIGH = 1,    /* adds nothing (April release) */
    DSV4_EFFORT_MAX = 2,     /* prepends the fixed "Reasoning Effort: Absolute maximum ..." text */
} dsv4_reasoning_effort;

typedef struct {
    int thinking;                          /* 1: thinking mode ("<think>"), 0: chat mode ("</think>") */
    dsv4_reasoning_effort reasoning_effort;
    int drop_thinking;                     /* official default 1; forced to 0 when any message has tools */
    int add_generation_prompt;             /* 1 (official): after a final user/developer message append
                                              "<｜Assistant｜>" + "<think>"/"</think>"; 0: leave it off */
    int add_bos;                           /* 1 (official): start with BOS */
} dsv4_chat_opts;

void dsv4_chat_opts_default(dsv4_chat_opts *o);

/* --------------------------------------------------------------- output -- */

typedef struct {
    uint32_t off, len; /* bytes of dsv4_chat_prompt.text */
    int special;       /* 1: the bytes are one special token's content string */
} dsv4_chat_segment;

typedef struct {
    char *text;              /* the flattened prompt, NUL-terminated */
    size_t len, cap;
    dsv4_chat_segment *segs; /* in order; adjacent text segments are merged */
    int n_segs, cap_segs;
} dsv4_chat_prompt;

/* Text segments carry user text verbatim: a user who types "</think>" gets the
 * characters, and whether the tokenizer matches special-token strings inside
 * text spans (HF does when it encodes the flattened string) is its policy.
 * The encoder's own template text is split at "<think>", "</think>" and
 * "｜DSML｜", which are always special segments. */
dsv4_status dsv4_chat_render(const dsv4_chat_message *msgs, int n_msgs, const dsv4_chat_opts *o,
                             dsv4_chat_prompt *out, char *err, size_t errlen);
/* The exact prompt string (owned by p). */
const char *dsv4_chat_prompt_flatten(const dsv4_chat_prompt *p, size_t *len);
void dsv4_chat_prompt_free(dsv4_chat_prompt *p);

/* The prompt as token ids: special segments by the tokenizer's own table,
 * text segments through BPE without special-token matching. *ids is
 * malloc'ed ([*n], free() it). */
dsv4_status dsv4_chat_prompt_ids(const dsv4_tokenizer *tok, const dsv4_chat_prompt *p, int32_t **ids, size_t *n,
                                 char *err, size_t errlen);

/* ------------------------------------------------ OpenAI JSON -> structs -- */

/* A conversation built from JSON; owns every string its messages point to. */
typedef struct {
    dsv4_chat_message *messages;
    int n_messages;
    void *storage_; /* private */
} dsv4_chat_conv;

/* Builds messages from an OpenAI-style `messages` array. Accepts per message:
 * role (system, user, assistant, tool, developer, latest_reminder), content (string, null,
 * or an array of text parts), reasoning_content (or vLLM's "reasoning"), tool_calls
 * (arguments a string, or an object which is serialised), tool_call_id, name, and the
 * official extensions tools, response_format, task, wo_eos. Request-level `tools`
 * (may be NULL) and a `response_format` of type json_schema (may be NULL) are attached
 * to the first message when it is a system message, otherwise to an empty system
 * message put in front (which renders as nothing). */
dsv4_status dsv4_chat_conv_from_json(const json_t *messages, const json_t *tools, const json_t *response_format,
                                     dsv4_chat_conv *out, char *err, size_t errlen);
void dsv4_chat_conv_free(dsv4_chat_conv *c);

/* "high", "max" (and the OpenAI names "low", "medium" -> high, "xhigh" -> max, "none" -> default). */
dsv4_status dsv4_chat_effort_parse(const char *s, dsv4_reasoning_effort *out, char *err, size_t errlen);

/* ------------------------------------- Python json.dumps emulation (shared) -- */

/* Re-dumps JSON text as Python's json.dumps(json.loads(text), ensure_ascii=False) would:
 * separators ", " and ": ", key order kept (a repeated key keeps its first position and
 * its last value), floats as Python's repr, non-ASCII characters unescaped. Appends to
 * *buf (malloc'ed, grown as needed). Returns DSV4_ERR_FORMAT for text Python's
 * json.loads would refuse. */
typedef struct {
    char *p;
    size_t len, cap;
} dsv4_strbuf;
dsv4_status dsv4_pyjson_redump(const char *json, size_t n, dsv4_strbuf *out, char *err, size_t errlen);
/* json.dumps of one string (s, n raw UTF-8 bytes). Returns 0, or -1 when out of memory. */
int dsv4_pyjson_dump_string(const char *s, size_t n, dsv4_strbuf *out);
/* Python truthiness of json.loads(text): 0 for null, false, 0, 0.0, "", [] and {}; 1 otherwise;
 * -1 when the text does not parse, -2 when memory ran out. */
int dsv4_pyjson_truthy(const char *json, size_t n);
/* The schema lines of TOOLS_TEMPLATE: json.dumps(tool["function"]) for each tool of a JSON
 * array of OpenAI tools, joined by "\n". */
dsv4_status dsv4_pyjson_tool_schemas(const char *tools_json, dsv4_strbuf *out, char *err, size_t errlen);
/* Tool-call arguments as the official encoder sees them: json.loads(arguments).items(), or,
 * when the text is not JSON, the one item ("arguments", text). fn gets each key (raw), and
 * the value raw if it is a string (is_string = 1), else as json.dumps writes it. */
typedef int (*dsv4_pyjson_item_fn)(void *user, const char *key, size_t klen, const char *val, size_t vlen,
                                   int is_string);
dsv4_status dsv4_pyjson_argument_items(const char *arguments, dsv4_pyjson_item_fn fn, void *user, char *err,
                                       size_t errlen);
int dsv4_strbuf_put(dsv4_strbuf *b, const char *s, size_t n);
void dsv4_strbuf_free(dsv4_strbuf *b);

/* ------------------------------------------------- streaming output parser -- */

typedef enum {
    DSV4_CHAT_EV_REASONING = 0, /* text: a reasoning_content delta */
    DSV4_CHAT_EV_CONTENT,       /* text: a content delta */
    DSV4_CHAT_EV_TOOL_BEGIN,    /* index, name: a tool call has started; its TOOL_END follows, unless the
                                   block turns out malformed, in which case the begun call is void */
    DSV4_CHAT_EV_TOOL_END,      /* index, name, text = arguments JSON: the tool call is complete */
} dsv4_chat_event_kind;

typedef struct {
    dsv4_chat_event_kind kind;
    const char *text; /* not NUL-terminated; valid during the callback */
    size_t len;
    int index;        /* tool calls: 0, 1, ... in order of appearance */
    const char *name; /* tool calls: NUL-terminated */
} dsv4_chat_event;

typedef void (*dsv4_chat_event_fn)(void *user, const dsv4_chat_event *ev);

typedef struct dsv4_chat_parser dsv4_chat_parser;

/* thinking: the prompt ended in "<think>", so output starts with reasoning. */
dsv4_status dsv4_chat_parser_create(int thinking, dsv4_chat_event_fn fn, void *user, dsv4_chat_parser **out);
void dsv4_chat_parser_free(dsv4_chat_parser *p);
/* Feed any piece of output text (pieces may split characters and markers anywhere). */
dsv4_status dsv4_chat_parser_feed(dsv4_chat_parser *p, const char *text, size_t n);
/* End of output: flushes what was held back. */
dsv4_status dsv4_chat_parser_finish(dsv4_chat_parser *p);
/* After finish: 1 if the output was not well formed (a tool-call block that did not parse,
 * or that was cut off; its text was emitted as content). msg says what was wrong. */
int dsv4_chat_parser_malformed(const dsv4_chat_parser *p, const char **msg);

#endif
