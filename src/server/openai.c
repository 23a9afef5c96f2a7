/*
 * openai.c - OpenAI request parsing and response rendering.
 *
 * Parsing is strict where a mistake would silently change the answer (types,
 * ranges, unknown values of enums, best_of, suffix) and lenient where clients
 * differ harmlessly (unknown fields are ignored, null means "not given").
 * Every refusal names the field in both the message and `param`, so a 400
 * says what to fix. Rendering builds jansson objects and dumps them compactly
 * (UTF-8 unescaped, as OpenAI does).
 */
#include "server/openai.h"
#include "core/json_util.h"
#include "text/tokenizer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STOP_BYTES 1024

void srv_error_set(srv_error *e, int status, const char *type, const char *param, const char *fmt, ...)
{
    e->status = status;
    e->type = type;
    e->code = NULL;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

/* json_dumps' own buffer may come back malformed when one of its allocations fails (jansson 2.14 goes on after an
 * object key it could not append), so the text is gathered here, and one failed append fails it all. */
typedef struct {
    dsv4_strbuf b;
    int bad;
} dump_buf;

static int dump_put(const char *buf, size_t n, void *data)
{
    dump_buf *d = data;
    d->bad = d->bad || dsv4_strbuf_put(&d->b, buf, n);
    return d->bad ? -1 : 0;
}

char *srv_json_dumps(const json_t *j)
{
    dump_buf d = {0};
    if (!j || json_dump_callback(j, dump_put, &d, JSON_COMPACT) || d.bad || !d.b.p) {
        dsv4_strbuf_free(&d.b);
        return NULL;
    }
    return d.b.p;
}

char *srv_error_json(const srv_error *e)
{
    json_t *inner = json_object();
    /* the message is ours, but may quote request bytes cut mid-character: keep it valid UTF-8 */
    json_t *msg = json_string(e->message);
    if (!msg && !dsv4_utf8_valid(e->message, strlen(e->message), NULL))
        msg = json_string("invalid request (the error message could not be encoded)");
    json_t *root = json_object();
    /* a field that could not be added (out of memory) leaves no error at all: the caller's fallback is whole */
    if (json_object_set_new(inner, "message", msg) ||
        json_object_set_new(inner, "type", json_string(e->type ? e->type : "invalid_request_error")) ||
        json_object_set_new(inner, "param", e->param[0] ? json_string(e->param) : json_null()) ||
        json_object_set_new(inner, "code", e->code ? json_string(e->code) : json_null())) {
        json_decref(inner);
        inner = NULL;
    }
    if (json_object_set_new(root, "error", inner)) {
        json_decref(root);
        return NULL;
    }
    char *s = srv_json_dumps(root);
    json_decref(root);
    return s;
}

/* ======================================================================= */
/* Parsing                                                                 */

/* The field, or NULL when absent or null. */
static json_t *field(json_t *root, const char *key)
{
    json_t *v = json_object_get(root, key);
    return v && !json_is_null(v) ? v : NULL;
}

/* A 400 naming the field; returns -1 so that callers can `return BAD(...)`. */
static int BAD(srv_error *e, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int BAD(srv_error *e, const char *key, const char *fmt, ...)
{
    char msg[sizeof e->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    srv_error_set(e, 400, "invalid_request_error", key, "%s", msg);
    return -1;
}

int srv_error_nomem(srv_error *e)
{
    srv_error_set(e, 500, "server_error", "", "out of memory");
    return -1;
}

static int get_number(json_t *root, const char *key, double lo, double hi, float *out, srv_error *e)
{
    json_t *v = field(root, key);
    if (!v) return 0;
    if (!json_is_number(v)) return BAD(e, key, "%s: expected a number, got %s", key, dsv4_json_type_name(v));
    double d = json_number_value(v);
    if (!(d >= lo && d <= hi)) return BAD(e, key, "%s: %g is outside [%g, %g]", key, d, lo, hi);
    *out = (float)d;
    return 0;
}

static int get_int(json_t *root, const char *key, long long lo, long long hi, long long *out, int *given,
                   srv_error *e)
{
    json_t *v = field(root, key);
    if (given) *given = v != NULL;
    if (!v) return 0;
    if (!json_is_integer(v)) return BAD(e, key, "%s: expected an integer, got %s", key, dsv4_json_type_name(v));
    long long x = json_integer_value(v);
    if (x < lo || x > hi) return BAD(e, key, "%s: %lld is outside [%lld, %lld]", key, x, lo, hi);
    *out = x;
    return 0;
}

static int get_bool(json_t *root, const char *key, int *out, srv_error *e)
{
    json_t *v = field(root, key);
    if (!v) return 0;
    if (!json_is_boolean(v)) return BAD(e, key, "%s: expected a boolean, got %s", key, dsv4_json_type_name(v));
    *out = json_is_true(v);
    return 0;
}

/* A function name as OpenAI takes it: ^[a-zA-Z0-9_-]{1,64}$. Names are rendered into the prompt's DSML markup
 * (`<｜DSML｜invoke name="...">`, and a named tool_choice's forced start, tokenised with its special tokens), so
 * a quote or a DSML marker in one would close that markup and write the model's tool call for it. */
static int check_function_name(const json_t *v, const char *param, srv_error *e)
{
    if (!json_is_string(v)) return BAD(e, param, "%s: expected a string, got %s", param, dsv4_json_type_name(v));
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    static const char rule[] = "a function name is 1 to 64 characters of a-z, A-Z, 0-9, '_' and '-'";
    if (n == 0) return BAD(e, param, "%s: must not be empty (%s)", param, rule);
    if (n > 64) return BAD(e, param, "%s: %zu bytes long (%s)", param, n, rule);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')
            continue;
        if (c > 0x20 && c < 0x7f) return BAD(e, param, "%s: '%c' at offset %zu is not allowed (%s)", param, c, i, rule);
        return BAD(e, param, "%s: byte 0x%02x at offset %zu is not allowed (%s)", param, c, i, rule);
    }
    return 0;
}

/* The function names of the conversation (checked once its shape is known to be right): the assistant
 * messages' tool_calls[].function.name and a message's own tools[].function.name, rendered as the request's
 * tools are. */
static int check_history_names(json_t *msgs, srv_error *e)
{
    size_t i, j;
    json_t *m, *x;
    char param[128]; /* what fits of it is the error's param (64 bytes: indices below 10^9 fit) */
    json_array_foreach(msgs, i, m)
    {
        json_array_foreach(json_object_get(m, "tool_calls"), j, x)
        {
            snprintf(param, sizeof param, "messages[%zu].tool_calls[%zu].function.name", i, j);
            if (check_function_name(json_object_get(json_object_get(x, "function"), "name"), param, e)) return -1;
        }
        json_array_foreach(json_object_get(m, "tools"), j, x)
        {
            json_t *nm = json_object_get(json_object_get(x, "function"), "name");
            snprintf(param, sizeof param, "messages[%zu].tools[%zu].function.name", i, j);
            if (nm && check_function_name(nm, param, e)) return -1;
        }
    }
    return 0;
}

static json_t *load_body(const char *body, size_t n, srv_error *e)
{
    json_error_t je;
    json_t *root = json_loadb(body, n, JSON_REJECT_DUPLICATES, &je);
    if (!root && json_error_code(&je) == json_error_null_character) {
        /* valid JSON, but the prompt and message texts are C strings here: refused rather than cut at the NUL */
        BAD(e, "", "a string holds U+0000 (line %d, column %d), which dsv4 does not accept in a request", je.line,
            je.column);
        return NULL;
    }
    if (!root && json_error_code(&je) == json_error_out_of_memory) {
        srv_error_nomem(e);
        return NULL;
    }
    if (!root) {
        BAD(e, "", "the body is not valid JSON (line %d, column %d): %s", je.line, je.column, je.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        BAD(e, "", "the body must be a JSON object, got %s", dsv4_json_type_name(root));
        json_decref(root);
        return NULL;
    }
    return root;
}

/* Fields shared by both endpoints: model, stream, sampling, stop, logit_bias. */
static int parse_common(json_t *root, const srv_parse_limits *lim, srv_params *p, srv_error *e)
{
    json_t *v;
    if ((v = field(root, "model"))) {
        if (!json_is_string(v)) return BAD(e, "model", "model: expected a string, got %s", dsv4_json_type_name(v));
        if (!(p->model = strdup(json_string_value(v)))) return srv_error_nomem(e);
    }
    if (get_bool(root, "stream", &p->stream, e)) return -1;
    if ((v = field(root, "stream_options"))) {
        if (!json_is_object(v))
            return BAD(e, "stream_options", "stream_options: expected an object, got %s", dsv4_json_type_name(v));
        json_t *iu = field(v, "include_usage");
        if (iu && !json_is_boolean(iu))
            return BAD(e, "stream_options.include_usage", "stream_options.include_usage: expected a boolean, got %s",
                       dsv4_json_type_name(iu));
        p->include_usage = iu && json_is_true(iu);
    }
    dsv4_sampling_params *sp = &p->sp;
    dsv4_sampling_params_default(sp);
    if (get_number(root, "temperature", 0, 2, &sp->temperature, e) ||
        get_number(root, "top_p", 0, 1, &sp->top_p, e) || get_number(root, "min_p", 0, 1, &sp->min_p, e) ||
        get_number(root, "presence_penalty", -2, 2, &sp->presence_penalty, e) ||
        get_number(root, "frequency_penalty", -2, 2, &sp->frequency_penalty, e) ||
        get_number(root, "repetition_penalty", 0.01, 10, &sp->repetition_penalty, e))
        return -1;
    if (field(root, "top_p") && sp->top_p <= 0) return BAD(e, "top_p", "top_p: must be greater than 0");
    long long x = 0;
    int given = 0;
    if (get_int(root, "top_k", -1, 1 << 30, &x, &given, e)) return -1;
    if (given) sp->top_k = x < 0 ? 0 : (int)x;
    if (get_int(root, "seed", INT64_MIN, INT64_MAX, &x, &given, e)) return -1;
    if (given) {
        sp->seed = (uint64_t)x;
        sp->has_seed = 1;
    }
    if (get_int(root, "n", 1, SRV_MAX_N, &x, &given, e)) return -1;
    p->n = given ? (int)x : 1;
    if (get_bool(root, "ignore_eos", &p->ignore_eos, e)) return -1;
    /* stop: a string or up to SRV_MAX_STOPS strings */
    if ((v = field(root, "stop"))) {
        if (json_is_string(v)) {
            if (json_string_length(v) == 0) return BAD(e, "stop", "stop: must not be empty");
            if (json_string_length(v) > MAX_STOP_BYTES)
                return BAD(e, "stop", "stop: longer than %d bytes", MAX_STOP_BYTES);
            if (!(p->stops[p->n_stops] = strdup(json_string_value(v)))) return srv_error_nomem(e);
            p->n_stops++;
        } else if (json_is_array(v)) {
            if (json_array_size(v) > (size_t)lim->max_stops)
                return BAD(e, "stop", "stop: at most %d strings", lim->max_stops);
            size_t i;
            json_t *s;
            json_array_foreach(v, i, s) {
                if (!json_is_string(s)) return BAD(e, "stop", "stop[%zu]: expected a string, got %s", i, dsv4_json_type_name(s));
                if (json_string_length(s) == 0) return BAD(e, "stop", "stop[%zu]: must not be empty", i);
                if (json_string_length(s) > MAX_STOP_BYTES)
                    return BAD(e, "stop", "stop[%zu]: longer than %d bytes", i, MAX_STOP_BYTES);
                if (!(p->stops[p->n_stops] = strdup(json_string_value(s)))) return srv_error_nomem(e);
                p->n_stops++;
            }
        } else {
            return BAD(e, "stop", "stop: expected a string or an array of strings, got %s", dsv4_json_type_name(v));
        }
    }
    /* logit_bias: {"token id": bias in [-100, 100]} */
    if ((v = field(root, "logit_bias"))) {
        if (!json_is_object(v)) return BAD(e, "logit_bias", "logit_bias: expected an object, got %s", dsv4_json_type_name(v));
        size_t n = json_object_size(v);
        if (n > 4096) return BAD(e, "logit_bias", "logit_bias: at most 4096 entries");
        p->bias_ids = malloc((n ? n : 1) * sizeof(int32_t));
        p->bias = malloc((n ? n : 1) * sizeof(float));
        if (!p->bias_ids || !p->bias) return srv_error_nomem(e);
        const char *key;
        json_t *b;
        json_object_foreach(v, key, b) {
            char *end;
            long id = strtol(key, &end, 10);
            if (!*key || *end || id < 0 || id >= lim->vocab_size)
                return BAD(e, "logit_bias", "logit_bias: key '%.40s' is not a token id in [0, %d)", key,
                           lim->vocab_size);
            if (!json_is_number(b))
                return BAD(e, "logit_bias", "logit_bias['%s']: expected a number, got %s", key, dsv4_json_type_name(b));
            double d = json_number_value(b);
            if (!(d >= -100 && d <= 100))
                return BAD(e, "logit_bias", "logit_bias['%s']: %g is outside [-100, 100]", key, d);
            p->bias_ids[p->n_bias] = (int32_t)id;
            p->bias[p->n_bias++] = (float)d;
        }
    }
    return 0;
}

static int parse_max_tokens(json_t *root, const char *key, srv_params *p, srv_error *e)
{
    long long x = 0;
    int given = 0;
    if (get_int(root, key, p->chat ? 1 : 0, 1 << 30, &x, &given, e)) return -1;
    if (given) p->max_tokens = (int)x;
    if (given && x == 0) p->no_gen = 1; /* completions only, and only with echo (checked there) */
    return 0;
}

int srv_parse_chat(const char *body, size_t n, const srv_parse_limits *lim, srv_params *p, srv_error *e)
{
    memset(p, 0, sizeof *p);
    p->chat = 1;
    json_t *root = load_body(body, n, e);
    if (!root) return -1;
    int rc = -1;
    json_t *v;
    if (parse_common(root, lim, p, e)) goto done;
    if (parse_max_tokens(root, "max_tokens", p, e) || parse_max_tokens(root, "max_completion_tokens", p, e))
        goto done;
    if (get_bool(root, "logprobs", &p->logprobs, e)) goto done;
    long long x = 0;
    int given = 0;
    if (get_int(root, "top_logprobs", 0, DSV4_MAX_TOP_LOGPROBS, &x, &given, e)) goto done;
    if (given) {
        if (!p->logprobs && x > 0) {
            BAD(e, "top_logprobs", "top_logprobs: needs logprobs = true");
            goto done;
        }
        p->top_logprobs = (int)x;
    }
    /* thinking: chat_template_kwargs.thinking (or enable_thinking) first, else reasoning_effort */
    dsv4_chat_opts_default(&p->copts);
    p->copts.thinking = 0;
    int thinking = -1;
    if ((v = field(root, "chat_template_kwargs"))) {
        if (!json_is_object(v)) {
            BAD(e, "chat_template_kwargs", "chat_template_kwargs: expected an object, got %s", dsv4_json_type_name(v));
            goto done;
        }
        const char *names[] = {"thinking", "enable_thinking"};
        for (int i = 0; i < 2; i++) {
            json_t *t = field(v, names[i]);
            if (!t) continue;
            if (!json_is_boolean(t)) {
                BAD(e, "chat_template_kwargs", "chat_template_kwargs.%s: expected a boolean, got %s", names[i],
                    dsv4_json_type_name(t));
                goto done;
            }
            thinking = json_is_true(t);
        }
    }
    if ((v = field(root, "reasoning_effort"))) {
        if (!json_is_string(v)) {
            BAD(e, "reasoning_effort", "reasoning_effort: expected a string, got %s", dsv4_json_type_name(v));
            goto done;
        }
        char err[256];
        if (dsv4_chat_effort_parse(json_string_value(v), &p->copts.reasoning_effort, err, sizeof err)) {
            BAD(e, "reasoning_effort", "reasoning_effort: %s", err);
            goto done;
        }
        if (thinking < 0) thinking = strcmp(json_string_value(v), "none") != 0;
    }
    p->copts.thinking = thinking > 0;
    /* tools and tool_choice */
    json_t *tools = field(root, "tools");
    if (tools) {
        if (!json_is_array(tools)) {
            BAD(e, "tools", "tools: expected an array, got %s", dsv4_json_type_name(tools));
            goto done;
        }
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) {
            json_t *fn = json_is_object(t) ? json_object_get(t, "function") : NULL;
            json_t *ty = json_is_object(t) ? json_object_get(t, "type") : NULL;
            if (!json_is_object(t) || !json_is_string(ty) || strcmp(json_string_value(ty), "function") ||
                !json_is_object(fn) || !json_is_string(json_object_get(fn, "name"))) {
                BAD(e, "tools", "tools[%zu]: expected {\"type\": \"function\", \"function\": {\"name\": ...}}", i);
                goto done;
            }
            char param[64];
            snprintf(param, sizeof param, "tools[%zu].function.name", i);
            if (check_function_name(json_object_get(fn, "name"), param, e)) goto done;
        }
        p->has_tools = json_array_size(tools) > 0;
    }
    if ((v = field(root, "tool_choice"))) {
        if (json_is_string(v)) {
            const char *s = json_string_value(v);
            if (!strcmp(s, "auto")) p->tool_choice = SRV_TOOL_CHOICE_AUTO;
            else if (!strcmp(s, "none")) p->tool_choice = SRV_TOOL_CHOICE_NONE;
            else if (!strcmp(s, "required")) p->tool_choice = SRV_TOOL_CHOICE_REQUIRED;
            else {
                BAD(e, "tool_choice", "tool_choice: '%.40s' is not one of auto, none, required", s);
                goto done;
            }
        } else if (json_is_object(v)) {
            json_t *fn = json_object_get(v, "function");
            json_t *nm = json_is_object(fn) ? json_object_get(fn, "name") : NULL;
            if (!json_is_string(nm)) {
                BAD(e, "tool_choice", "tool_choice: expected {\"type\": \"function\", \"function\": {\"name\": ...}}");
                goto done;
            }
            if (check_function_name(nm, "tool_choice.function.name", e)) goto done;
            p->tool_choice = SRV_TOOL_CHOICE_NAMED;
            if (!(p->tool_name = strdup(json_string_value(nm)))) {
                srv_error_nomem(e);
                goto done;
            }
        } else {
            BAD(e, "tool_choice", "tool_choice: expected a string or an object, got %s", dsv4_json_type_name(v));
            goto done;
        }
        if (p->tool_choice >= SRV_TOOL_CHOICE_REQUIRED && !p->has_tools) {
            BAD(e, "tool_choice", "tool_choice: '%s' needs tools", p->tool_name ? p->tool_name : "required");
            goto done;
        }
        if (p->tool_choice == SRV_TOOL_CHOICE_NAMED) {
            int found = 0;
            size_t i;
            json_t *t;
            json_array_foreach(tools, i, t) {
                const char *nm = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
                if (nm && !strcmp(nm, p->tool_name)) found = 1;
            }
            if (!found) {
                BAD(e, "tool_choice", "tool_choice: no tool named '%.60s' in tools", p->tool_name);
                goto done;
            }
        }
    }
    if (p->tool_choice == SRV_TOOL_CHOICE_NONE) {
        tools = NULL; /* not offered to the model at all */
        p->has_tools = 0;
    }
    /* response_format: text and json_object render nothing; json_schema goes into the prompt */
    json_t *rf = NULL;
    if ((v = field(root, "response_format"))) {
        json_t *ty = json_is_object(v) ? json_object_get(v, "type") : NULL;
        if (!json_is_string(ty)) {
            BAD(e, "response_format", "response_format: expected an object with a string 'type'");
            goto done;
        }
        const char *t = json_string_value(ty);
        if (!strcmp(t, "json_schema")) rf = v;
        else if (strcmp(t, "text") && strcmp(t, "json_object")) {
            BAD(e, "response_format", "response_format.type: '%.40s' is not one of text, json_object, json_schema", t);
            goto done;
        }
    }
    json_t *msgs = json_object_get(root, "messages");
    if (!msgs) {
        BAD(e, "messages", "messages: required");
        goto done;
    }
    if (!json_is_array(msgs)) {
        BAD(e, "messages", "messages: expected an array, got %s", dsv4_json_type_name(msgs));
        goto done;
    }
    if (json_array_size(msgs) == 0) {
        BAD(e, "messages", "messages: must not be empty");
        goto done;
    }
    char err[512];
    dsv4_status st = dsv4_chat_conv_from_json(msgs, tools, rf, &p->conv, err, sizeof err);
    if (st == DSV4_ERR_NOMEM) {
        srv_error_nomem(e);
        goto done;
    }
    if (st != DSV4_OK) {
        /* the conversion names the element ("messages[1].role: ..."): its prefix is the param */
        char param[64];
        size_t k = strcspn(err, ":");
        snprintf(param, sizeof param, "%.*s", (int)(k < sizeof param ? k : sizeof param - 1), err);
        if (k == strlen(err)) snprintf(param, sizeof param, "messages");
        BAD(e, param, "%s", err);
        goto done;
    }
    p->has_conv = 1;
    if (check_history_names(msgs, e)) goto done;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

/* One prompt of a completions request: a string or an array of token ids (element i of a batch: errors name
 * prompt[i]). */
static int parse_prompt(json_t *v, int batch, size_t i, const srv_parse_limits *lim, srv_prompt *pr, srv_error *e)
{
    char nm[32];
    if (batch)
        snprintf(nm, sizeof nm, "prompt[%zu]", i);
    else
        snprintf(nm, sizeof nm, "prompt");
    if (json_is_string(v)) {
        if (json_string_length(v) == 0) return BAD(e, "prompt", "%s: must not be empty", nm);
        pr->len = json_string_length(v);
        pr->text = malloc(pr->len + 1);
        if (!pr->text) return srv_error_nomem(e);
        memcpy(pr->text, json_string_value(v), pr->len + 1);
        return 0;
    }
    if (json_is_array(v)) {
        size_t m = json_array_size(v);
        if (m == 0) return BAD(e, "prompt", "%s: must not be empty", nm);
        pr->ids = malloc(m * sizeof(int32_t));
        if (!pr->ids) return srv_error_nomem(e);
        for (size_t k = 0; k < m; k++) {
            json_t *t = json_array_get(v, k);
            if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) >= lim->vocab_size)
                return BAD(e, "prompt", "%s[%zu]: expected a token id in [0, %d)", nm, k, lim->vocab_size);
            pr->ids[k] = (int32_t)json_integer_value(t);
        }
        pr->n_ids = (int)m;
        return 0;
    }
    if (batch)
        return BAD(e, "prompt", "%s: expected a string or an array of token ids like the batch's first, got %s", nm,
                   dsv4_json_type_name(v));
    return BAD(e, "prompt", "prompt: expected a string, an array of token ids or an array of prompts, got %s",
               dsv4_json_type_name(v));
}

int srv_parse_completion(const char *body, size_t n, const srv_parse_limits *lim, srv_params *p, srv_error *e)
{
    memset(p, 0, sizeof *p);
    json_t *root = load_body(body, n, e);
    if (!root) return -1;
    int rc = -1;
    json_t *v;
    if (parse_common(root, lim, p, e)) goto done;
    if (parse_max_tokens(root, "max_tokens", p, e)) goto done;
    if (!field(root, "max_tokens")) p->max_tokens = 16; /* OpenAI's default for completions */
    long long x = 0;
    int given = 0;
    if (get_int(root, "logprobs", 0, DSV4_MAX_TOP_LOGPROBS, &x, &given, e)) goto done;
    if (given) {
        p->logprobs = 1;
        p->top_logprobs = (int)x;
    }
    if (get_bool(root, "echo", &p->echo, e)) goto done;
    if (p->no_gen && !p->echo) {
        BAD(e, "max_tokens", "max_tokens: 0 asks for nothing (it is allowed with echo: the prompt and its logprobs)");
        goto done;
    }
    if (get_int(root, "best_of", 1, 1, &x, NULL, e)) {
        BAD(e, "best_of", "best_of: only 1 is supported");
        goto done;
    }
    if ((v = field(root, "suffix"))) {
        BAD(e, "suffix", "suffix: not supported");
        goto done;
    }
    v = json_object_get(root, "prompt");
    if (!v || json_is_null(v)) {
        BAD(e, "prompt", "prompt: required");
        goto done;
    }
    /* a batch: an array of strings or of token-id arrays (one element: the same as that prompt alone) */
    size_t np = 1;
    const int batch = json_is_array(v) && json_array_size(v) > 0 &&
                      (json_is_string(json_array_get(v, 0)) || json_is_array(json_array_get(v, 0)));
    if (batch) np = json_array_size(v);
    if (np > SRV_MAX_PROMPTS) {
        BAD(e, "prompt", "prompt: %zu prompts in one request; at most %d", np, SRV_MAX_PROMPTS);
        goto done;
    }
    if (np * (size_t)p->n > SRV_MAX_CHOICES) {
        BAD(e, "n", "n: %zu prompts x n %d choices is %zu sequences; at most %d in one request", np, p->n,
            np * (size_t)p->n, SRV_MAX_CHOICES);
        goto done;
    }
    p->prompts = calloc(np, sizeof *p->prompts);
    if (!p->prompts) {
        srv_error_nomem(e);
        goto done;
    }
    p->n_prompts = (int)np;
    for (size_t i = 0; i < np; i++)
        if (parse_prompt(batch ? json_array_get(v, i) : v, batch, i, lim, &p->prompts[i], e)) goto done;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

void srv_params_free(srv_params *p)
{
    free(p->model);
    free(p->bias_ids);
    free(p->bias);
    for (int i = 0; i < p->n_stops; i++) free(p->stops[i]);
    if (p->has_conv) dsv4_chat_conv_free(&p->conv);
    free(p->tool_name);
    for (int i = 0; i < p->n_prompts; i++) {
        free(p->prompts[i].text);
        free(p->prompts[i].ids);
    }
    free(p->prompts);
    memset(p, 0, sizeof *p);
}

/* ======================================================================= */
/* Responses                                                               */

const char *srv_finish_reason(const srv_req *r)
{
    switch (r->outcome) {
    case SRV_OUTCOME_STOP: return "stop";
    case SRV_OUTCOME_LENGTH: return "length";
    case SRV_OUTCOME_TOOL_CALLS: return "tool_calls";
    case SRV_OUTCOME_CANCELLED: return "abort";
    case SRV_OUTCOME_TIMEOUT: return "timeout";
    default: return "error";
    }
}

static char *dump(json_t *j)
{
    char *s = srv_json_dumps(j);
    json_decref(j);
    return s;
}

/* The builders below return NULL when memory runs out (in jansson or here), and so does each response: a reply is
 * whole or not sent. jansson's json_array_append_new, json_object_set_new and json_pack with "o" take the
 * reference they are given even when they fail (a NULL one included), so a builder adds and checks, and frees
 * nothing twice. */

static double finite_lp(float lp) { return isfinite(lp) ? lp : -9999.0; }

/* A token as text (U+FFFD for a partial character) and, when bytes is set, its bytes; NULL when out of memory. */
static json_t *token_text(const dsv4_tokenizer *tok, int32_t id, json_t **bytes)
{
    char *text = NULL;
    size_t len = 0;
    char err[64];
    dsv4_status st = dsv4_detokenize(tok, &id, 1, &text, &len, err, sizeof err);
    if (st == DSV4_ERR_NOMEM) return NULL;
    if (st) {
        text = NULL;
        len = 0;
    }
    json_t *s = json_stringn(text ? text : "", len);
    if (!s && text && !dsv4_utf8_valid(text, len, NULL)) s = json_string("\xef\xbf\xbd");
    if (s && bytes) {
        /* the token's own bytes, not its printed text: a character split over tokens prints as U+FFFD in each,
         * and its bytes are what lets a client join them back (OpenAI's reason for the field) */
        size_t nb = 0;
        const uint8_t *raw = dsv4_tok_bytes(tok, id, &nb);
        json_t *a = *bytes = json_array();
        if (!raw) raw = (const uint8_t *)text, nb = len;
        for (size_t i = 0; a && i < nb; i++)
            if (json_array_append_new(a, json_integer(raw[i]))) json_decref(a), a = *bytes = NULL;
        if (!a) json_decref(s), s = NULL;
    }
    free(text);
    return s;
}

/* Each prompt once (its choice 0's), every choice's tokens; of the prompt tokens, those the prefix cache
 * supplied (choice 0's) */
static json_t *usage_json(srv_req *const *rs, int n)
{
    int gen = 0, prompt = 0, cached = 0;
    for (int k = 0; k < n; k++) {
        gen += rs[k]->n_gen;
        if (rs[k]->choice == 0) prompt += rs[k]->n_prompt, cached += rs[k]->n_cached;
    }
    return json_pack("{s:i, s:i, s:i, s:{s:i}}", "prompt_tokens", prompt, "completion_tokens", gen, "total_tokens",
                     prompt + gen, "prompt_tokens_details", "cached_tokens", cached);
}

/* chat: {"content": [{token, logprob, bytes, top_logprobs}]} for toks [a, b) */
static json_t *chat_logprobs(const srv_resp_meta *m, const srv_req *r, int a, int b)
{
    json_t *content = json_array();
    for (int i = a; content && i < b; i++) {
        const srv_tok *t = &r->toks[i];
        json_t *bytes = NULL, *top = json_array();
        json_t *tok = token_text(m->tok, t->token, &bytes);
        for (int k = 0; top && k < t->n_top; k++) {
            json_t *tb = NULL;
            json_t *tt = token_text(m->tok, t->top_ids[k], &tb);
            if (json_array_append_new(
                    top, json_pack("{s:o, s:f, s:o}", "token", tt, "logprob", finite_lp(t->top_lp[k]), "bytes", tb)))
                json_decref(top), top = NULL;
        }
        if (json_array_append_new(content, json_pack("{s:o, s:f, s:o, s:o}", "token", tok, "logprob",
                                                     finite_lp(t->logprob), "bytes", bytes, "top_logprobs", top)))
            json_decref(content), content = NULL;
    }
    return json_pack("{s:o}", "content", content);
}

/* Characters (code points) of a UTF-8 string: text_offset counts characters, as OpenAI's (Python's len) do. */
static size_t utf8_chars(const char *p, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)p[i] & 0xC0) != 0x80;
    return c;
}

/* completions: {tokens, token_logprobs, top_logprobs, text_offset} for ts [a, b); with the prompt's (an echo):
 * its tokens first, the first one's logprob and alternatives null. Returns 0, or -1 when out of memory. */
static int completion_logprobs_of(const srv_resp_meta *m, const srv_tok *ts, int a, int b, int first_null, json_t *lp,
                                  size_t *offset)
{
    json_t *tokens = json_object_get(lp, "tokens"), *lps = json_object_get(lp, "token_logprobs"),
           *tops = json_object_get(lp, "top_logprobs"), *offs = json_object_get(lp, "text_offset");
    for (int i = a; i < b; i++) {
        const srv_tok *t = &ts[i];
        json_t *tok = token_text(m->tok, t->token, NULL);
        if (!tok || json_array_append_new(offs, json_integer((json_int_t)*offset))) {
            json_decref(tok);
            return -1;
        }
        *offset += utf8_chars(json_string_value(tok), json_string_length(tok));
        if (json_array_append_new(tokens, tok)) return -1;
        if (first_null && i == 0) {
            if (json_array_append_new(lps, json_null()) || json_array_append_new(tops, json_null())) return -1;
            continue;
        }
        if (json_array_append_new(lps, json_real(finite_lp(t->logprob)))) return -1;
        json_t *top = json_object();
        for (int k = 0; top && k < t->n_top; k++) {
            json_t *tt = token_text(m->tok, t->top_ids[k], NULL);
            if (!tt || json_object_set_new(top, json_string_value(tt), json_real(finite_lp(t->top_lp[k]))))
                json_decref(top), top = NULL;
            json_decref(tt);
        }
        if (json_array_append_new(tops, top)) return -1;
    }
    return 0;
}

static json_t *completion_logprobs(const srv_resp_meta *m, const srv_req *r, int a, int b, int with_prompt,
                                   size_t *offset)
{
    json_t *lp = json_pack("{s:[], s:[], s:[], s:[]}", "tokens", "token_logprobs", "top_logprobs", "text_offset");
    if (!lp || (with_prompt && r->ptoks && completion_logprobs_of(m, r->ptoks, 0, r->n_prompt, 1, lp, offset)) ||
        completion_logprobs_of(m, r->toks, a, b, 0, lp, offset)) {
        json_decref(lp);
        return NULL;
    }
    return lp;
}

static json_t *tool_call_json(const srv_tool_call *tc, int index, int with_index)
{
    json_t *j = json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", tc->id, "type", "function", "function", "name", tc->name,
                          "arguments", tc->arguments);
    if (j && with_index && json_object_set_new(j, "index", json_integer(index))) json_decref(j), j = NULL;
    return j;
}

/* b's text from byte `from`; NULL when out of memory (the detokeniser emits whole characters: the text is valid
 * UTF-8, and U+FFFD stands in should it not be) */
static json_t *strn(const dsv4_strbuf *b, size_t from)
{
    const char *p = b->p ? b->p + from : "";
    json_t *s = json_stringn(p, b->len - from);
    if (!s && !dsv4_utf8_valid(p, b->len - from, NULL)) s = json_string("\xef\xbf\xbd");
    return s;
}

/* the echo's prompt text then the completion's */
static json_t *echo_and(const srv_req *r, const dsv4_strbuf *b, size_t from)
{
    if (!r->echo_text) return strn(b, from);
    dsv4_strbuf t = {0};
    json_t *s = NULL;
    if (!dsv4_strbuf_put(&t, r->echo_text, r->echo_len) &&
        !(b->len > from && dsv4_strbuf_put(&t, b->p + from, b->len - from)))
        s = strn(&t, 0);
    dsv4_strbuf_free(&t);
    return s;
}

static json_t *chat_choice(const srv_resp_meta *m, const srv_req *r, int index, int logprobs)
{
    json_t *msg = json_object();
    if (json_object_set_new(msg, "role", json_string("assistant")) ||
        json_object_set_new(msg, "content", r->n_tools && !r->content.len ? json_null() : strn(&r->content, 0)) ||
        ((r->thinking || r->reasoning.len) && json_object_set_new(msg, "reasoning_content", strn(&r->reasoning, 0))))
        json_decref(msg), msg = NULL;
    if (msg && r->n_tools) {
        json_t *tcs = json_array();
        for (int i = 0; tcs && i < r->n_tools; i++)
            if (json_array_append_new(tcs, tool_call_json(&r->tools[i], i, 0))) json_decref(tcs), tcs = NULL;
        if (json_object_set_new(msg, "tool_calls", tcs)) json_decref(msg), msg = NULL;
    }
    return json_pack("{s:i, s:o, s:o, s:s}", "index", index, "message", msg, "logprobs",
                     logprobs ? chat_logprobs(m, r, 0, r->n_toks) : json_null(), "finish_reason", srv_finish_reason(r));
}

static json_t *completion_choice(const srv_resp_meta *m, const srv_req *r, int index, int logprobs)
{
    size_t off = 0;
    return json_pack("{s:i, s:o, s:o, s:s}", "index", index, "text", echo_and(r, &r->content, 0), "logprobs",
                     logprobs ? completion_logprobs(m, r, 0, r->n_toks, 1, &off) : json_null(), "finish_reason",
                     srv_finish_reason(r));
}

static char *response(const srv_resp_meta *m, srv_req *const *rs, int n, int logprobs, int chat)
{
    json_t *choices = json_array();
    for (int k = 0; choices && k < n; k++)
        if (json_array_append_new(choices, (chat ? chat_choice : completion_choice)(m, rs[k], k, logprobs)))
            json_decref(choices), choices = NULL;
    return dump(json_pack("{s:s, s:s, s:I, s:s, s:o, s:o}", "id", m->id, "object",
                          chat ? "chat.completion" : "text_completion", "created", (json_int_t)m->created, "model",
                          m->model, "choices", choices, "usage", usage_json(rs, n)));
}

char *srv_chat_response(const srv_resp_meta *m, srv_req *const *rs, int n, int logprobs)
{
    return response(m, rs, n, logprobs, 1);
}

char *srv_completion_response(const srv_resp_meta *m, srv_req *const *rs, int n, int logprobs)
{
    return response(m, rs, n, logprobs, 0);
}

/* Appends "data: <j>\n\n" (j's reference taken; NULL: memory ran out building it). Returns 0, or -1 with out as
 * it was: an event goes out whole or not at all. */
static int sse(dsv4_strbuf *out, json_t *j)
{
    char *s = dump(j);
    if (!s) return -1;
    const size_t len = out->len;
    int bad =
        dsv4_strbuf_put(out, "data: ", 6) || dsv4_strbuf_put(out, s, strlen(s)) || dsv4_strbuf_put(out, "\n\n", 2);
    free(s);
    if (bad && out->p) out->p[out->len = len] = 0;
    return bad ? -1 : 0;
}

static json_t *chunk(const srv_resp_meta *m, const char *object, json_t *choice)
{
    return json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", m->id, "object", object, "created", (json_int_t)m->created,
                     "model", m->model, "choices", choice);
}

const char srv_stream_oom[] =
    "data: {\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,"
    "\"code\":null}}\n\ndata: [DONE]\n\n";

int srv_stream_end(const srv_resp_meta *m, srv_req *const *rs, int n, int chat, int include_usage, dsv4_strbuf *out)
{
    const size_t len = out->len;
    const srv_req *r = rs[0]; /* the first choice that failed, if one did */
    for (int k = 0; k < n; k++)
        if (rs[k]->outcome == SRV_OUTCOME_ERROR || rs[k]->outcome == SRV_OUTCOME_TIMEOUT) {
            r = rs[k];
            break;
        }
    int bad = 0;
    if (r->outcome == SRV_OUTCOME_ERROR || r->outcome == SRV_OUTCOME_TIMEOUT) {
        srv_error e;
        if (r->outcome == SRV_OUTCOME_TIMEOUT)
            srv_error_set(&e, 504, "timeout_error", "", "the request's deadline passed (--request-timeout)");
        else
            srv_error_set(&e, 500, "server_error", "", "%s", r->error[0] ? r->error : "internal error");
        char *s = srv_error_json(&e);
        bad = !s || dsv4_strbuf_put(out, "data: ", 6) || dsv4_strbuf_put(out, s, strlen(s)) ||
              dsv4_strbuf_put(out, "\n\n", 2);
        free(s);
    }
    if (!bad && include_usage) {
        json_t *u = json_pack("{s:s, s:s, s:I, s:s, s:[], s:o}", "id", m->id, "object",
                              chat ? "chat.completion.chunk" : "text_completion", "created", (json_int_t)m->created,
                              "model", m->model, "choices", "usage", usage_json(rs, n));
        bad = sse(out, u);
    }
    bad = bad || dsv4_strbuf_put(out, "data: [DONE]\n\n", 14);
    if (bad && out->p) out->p[out->len = len] = 0;
    return bad ? -1 : 0;
}

int srv_chat_stream(const srv_resp_meta *m, const srv_req *r, int index, int logprobs, srv_stream_pos *pos,
                    dsv4_strbuf *out)
{
    const char *obj = "chat.completion.chunk";
    if (!pos->role_sent) {
        if (sse(out, chunk(m, obj,
                           json_pack("{s:i, s:{s:s, s:s}, s:n, s:n}", "index", index, "delta", "role", "assistant",
                                     "content", "", "logprobs", "finish_reason"))))
            return -1;
        pos->role_sent = 1;
    }
    int new_toks = logprobs && r->n_toks > pos->toks;
    if (r->reasoning.len > pos->reasoning) {
        json_t *d = json_pack("{s:o}", "reasoning_content", strn(&r->reasoning, pos->reasoning));
        json_t *lp = json_null();
        const int with_lp = new_toks && r->content.len == pos->content;
        if (with_lp) {
            json_decref(lp);
            lp = chat_logprobs(m, r, pos->toks, r->n_toks);
        }
        if (sse(out,
                chunk(m, obj,
                      json_pack("{s:i, s:o, s:o, s:n}", "index", index, "delta", d, "logprobs", lp, "finish_reason"))))
            return -1;
        pos->reasoning = r->reasoning.len;
        if (with_lp) {
            pos->toks = r->n_toks;
            new_toks = 0;
        }
    }
    if (r->content.len > pos->content || new_toks) {
        json_t *d = json_pack("{s:o}", "content", strn(&r->content, pos->content));
        json_t *lp = new_toks ? chat_logprobs(m, r, pos->toks, r->n_toks) : json_null();
        if (sse(out,
                chunk(m, obj,
                      json_pack("{s:i, s:o, s:o, s:n}", "index", index, "delta", d, "logprobs", lp, "finish_reason"))))
            return -1;
        pos->content = r->content.len;
        pos->toks = r->n_toks;
    }
    while (pos->tools < r->n_tools) {
        json_t *d = json_pack("{s:[o]}", "tool_calls", tool_call_json(&r->tools[pos->tools], pos->tools, 1));
        if (sse(out, chunk(m, obj,
                           json_pack("{s:i, s:o, s:n, s:n}", "index", index, "delta", d, "logprobs", "finish_reason"))))
            return -1;
        pos->tools++;
    }
    if (!r->done) return 0;
    if (!pos->finish_sent) {
        if (r->outcome != SRV_OUTCOME_ERROR && r->outcome != SRV_OUTCOME_TIMEOUT &&
            sse(out, chunk(m, obj,
                           json_pack("{s:i, s:{}, s:n, s:s}", "index", index, "delta", "logprobs", "finish_reason",
                                     srv_finish_reason(r)))))
            return -1;
        pos->finish_sent = 1;
    }
    return 1;
}

int srv_completion_stream(const srv_resp_meta *m, const srv_req *r, int index, int logprobs, srv_stream_pos *pos,
                          dsv4_strbuf *out)
{
    const char *obj = "text_completion";
    /* an echo: the prompt (and its logprobs, once all are in) in the first chunk */
    if (r->echo_text && !pos->echo_sent) {
        if (r->ptoks && r->n_ptoks < r->n_prompt && !r->done) return 0;
        size_t off = 0;
        json_t *lp = logprobs ? completion_logprobs(m, r, 0, 0, 1, &off) : json_null();
        if (sse(out, chunk(m, obj,
                           json_pack("{s:i, s:s%, s:o, s:n}", "index", index, "text", r->echo_text, r->echo_len,
                                     "logprobs", lp, "finish_reason"))))
            return -1;
        pos->offset = off;
        pos->echo_sent = 1;
    }
    int new_toks = logprobs && r->n_toks > pos->toks;
    if (r->content.len > pos->content || new_toks) {
        /* text offsets continue from the tokens sent so far, as in the whole response */
        size_t off = pos->offset;
        json_t *lp = new_toks ? completion_logprobs(m, r, pos->toks, r->n_toks, 0, &off) : json_null();
        json_t *c = json_pack("{s:i, s:o, s:o, s:n}", "index", index, "text", strn(&r->content, pos->content),
                              "logprobs", lp, "finish_reason");
        if (sse(out, chunk(m, obj, c))) return -1;
        pos->offset = off;
        pos->content = r->content.len;
        pos->toks = r->n_toks;
    }
    if (!r->done) return 0;
    if (!pos->finish_sent) {
        if (r->outcome != SRV_OUTCOME_ERROR && r->outcome != SRV_OUTCOME_TIMEOUT &&
            sse(out, chunk(m, obj,
                           json_pack("{s:i, s:s, s:n, s:s}", "index", index, "text", "", "logprobs", "finish_reason",
                                     srv_finish_reason(r)))))
            return -1;
        pos->finish_sent = 1;
    }
    return 1;
}
