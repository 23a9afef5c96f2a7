/*
 * chat_parse.c - splits streamed model output into reasoning, content and tool
 * calls, the inverse of the V4 chat encoding.
 *
 * The model writes `{reasoning}</think>{content}` (thinking mode; just
 * `{content}` in chat mode), optionally followed by a DSML block
 *
 *   \n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="N">\n
 *   <｜DSML｜parameter name="K" string="true|false">V</｜DSML｜parameter>\n ... </｜DSML｜invoke>\n
 *   </｜DSML｜tool_calls>
 *
 * and EOS. Well-formed output gives exactly what the official
 * `parse_message_from_completion_text` gives (tests/text/chat/parse_cases.json);
 * the tool-call block is read with the official parser's steps (read up to the
 * earliest of some stop strings, check what lies between), so arguments come
 * out as its JSON text: `{"K": "V", "K2": V2}`, string values JSON-quoted and
 * the others inserted as written.
 *
 * Streaming rule: text is emitted as soon as no marker can still start inside
 * it; only a suffix that is a prefix of a marker (with up to two newlines in
 * front of "<｜DSML｜tool_calls", which the official format strips) is held
 * back. Every decision depends on the text alone, never on how it was split,
 * so any split of the same output gives the same events.
 *
 * Unlike the official parser this one never fails: output that is not well
 * formed (a tool-call block that does not parse, or that is cut off) is passed
 * on as content from the point where it stops making sense, and
 * dsv4_chat_parser_malformed() says so. Text after a tool-call block is content
 * again; EOS ends the output.
 */
#include <stdlib.h>
#include <string.h>

#include "text/chat.h"

enum { ST_REASONING, ST_CONTENT, ST_TOOLS, ST_RAW, ST_DONE };
/* steps inside a tool-call block, named for what they read up to */
enum { T_INVOKE_OR_END, T_NAME, T_PARAM, T_AFTER_PARAM };

#define TC_START "<" DSV4_TOK_DSML "tool_calls"
#define TC_END "</" DSV4_TOK_DSML "tool_calls>"
#define INVOKE "<" DSV4_TOK_DSML "invoke"
#define INVOKE_END "</" DSV4_TOK_DSML "invoke"
#define PARAM "<" DSV4_TOK_DSML "parameter"
#define PARAM_END "/" DSV4_TOK_DSML "parameter"

struct dsv4_chat_parser {
    dsv4_chat_event_fn fn;
    void *user;
    int state, step;
    dsv4_strbuf buf;  /* text not yet emitted; in ST_TOOLS, the whole block so far */
    size_t cur;       /* ST_TOOLS: parse position in buf */
    size_t raw_from;  /* ST_TOOLS: where the text to pass on as content starts if the block fails */
    int n_calls;      /* tool calls begun */
    dsv4_strbuf name; /* current call's name, NUL-terminated */
    dsv4_strbuf args; /* current call's arguments JSON */
    dsv4_strbuf keys; /* current call's parameter names, each NUL-terminated, to refuse repeats */
    int n_params;
    int in_invoke;    /* an invoke's name was read and its end not yet */
    const char *malformed;
};

static void emit_text(dsv4_chat_parser *p, int kind, const char *s, size_t n)
{
    if (!n)
        return;
    dsv4_chat_event ev = {.kind = (dsv4_chat_event_kind)kind, .text = s, .len = n, .index = -1};
    p->fn(p->user, &ev);
}

dsv4_status dsv4_chat_parser_create(int thinking, dsv4_chat_event_fn fn, void *user, dsv4_chat_parser **out)
{
    *out = NULL;
    if (!fn)
        return DSV4_ERR_INVALID;
    dsv4_chat_parser *p = calloc(1, sizeof *p);
    if (!p)
        return DSV4_ERR_NOMEM;
    p->fn = fn;
    p->user = user;
    p->state = thinking ? ST_REASONING : ST_CONTENT;
    *out = p;
    return DSV4_OK;
}

void dsv4_chat_parser_free(dsv4_chat_parser *p)
{
    if (!p)
        return;
    dsv4_strbuf_free(&p->buf);
    dsv4_strbuf_free(&p->name);
    dsv4_strbuf_free(&p->args);
    dsv4_strbuf_free(&p->keys);
    free(p);
}

int dsv4_chat_parser_malformed(const dsv4_chat_parser *p, const char **msg)
{
    if (msg)
        *msg = p->malformed;
    return p->malformed != NULL;
}

/* Drops the first n bytes of buf. */
static void consume(dsv4_chat_parser *p, size_t n)
{
    if (!n)
        return;
    memmove(p->buf.p, p->buf.p + n, p->buf.len - n);
    p->buf.len -= n;
    if (p->buf.p)
        p->buf.p[p->buf.len] = 0;
}

static const char *find(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    if (k > n)
        return NULL;
    for (const char *q = s; (q = memchr(q, needle[0], (size_t)(s + n - q))) && (size_t)(s + n - q) >= k; q++)
        if (!memcmp(q, needle, k))
            return q;
    return NULL;
}

/* 1 if s[0..n) is a proper prefix of tok. */
static int proper_prefix(const char *s, size_t n, const char *tok)
{
    size_t k = strlen(tok);
    return n < k && !memcmp(s, tok, n);
}

/* ---------------------------------------------------- reasoning, content -- */

/* Length of the suffix of buf that might still become a marker. */
static size_t held_back(const dsv4_chat_parser *p)
{
    const char *s = p->buf.p;
    size_t n = p->buf.len, keep = 0;
    size_t lim = 40; /* longer than any marker plus two newlines */
    for (size_t k = n < lim ? n : lim; k > 0 && !keep; k--) {
        const char *t = s + n - k;
        if (proper_prefix(t, k, DSV4_TOK_EOS))
            keep = k;
        else if (p->state == ST_REASONING)
            keep = proper_prefix(t, k, DSV4_TOK_THINK_END) ? k : 0;
        else {
            size_t nl = 0;
            while (nl < 2 && nl < k && t[nl] == '\n')
                nl++;
            if (proper_prefix(t + nl, k - nl, TC_START))
                keep = k;
        }
    }
    return keep;
}

static void enter_tools(dsv4_chat_parser *p, size_t raw_from, size_t cur)
{
    p->state = ST_TOOLS;
    p->step = T_INVOKE_OR_END;
    p->raw_from = raw_from;
    p->cur = cur;
}

/* Reasoning and content: find the next marker, emit what is certainly text. */
static void scan_text(dsv4_chat_parser *p, int final)
{
    int kind = p->state == ST_REASONING ? DSV4_CHAT_EV_REASONING : DSV4_CHAT_EV_CONTENT;
    const char *s = p->buf.p;
    size_t n = p->buf.len;
    const char *eos = find(s, n, DSV4_TOK_EOS);
    const char *mark = find(s, eos ? (size_t)(eos - s) : n, p->state == ST_REASONING ? DSV4_TOK_THINK_END : TC_START);
    if (mark) {
        size_t at = (size_t)(mark - s), text_end = at;
        if (p->state == ST_REASONING) {
            emit_text(p, kind, s, at);
            consume(p, at + strlen(DSV4_TOK_THINK_END));
            p->state = ST_CONTENT;
        } else {
            /* the official format puts "\n\n" before the block; those are not content */
            for (int k = 0; k < 2 && text_end > 0 && s[text_end - 1] == '\n'; k++)
                text_end--;
            emit_text(p, kind, s, text_end);
            consume(p, text_end);
            enter_tools(p, 0, at - text_end + strlen(TC_START));
        }
        return;
    }
    if (eos) {
        emit_text(p, kind, s, (size_t)(eos - s));
        p->buf.len = 0;
        p->state = ST_DONE;
        return;
    }
    size_t out = final ? n : n - held_back(p);
    emit_text(p, kind, s, out);
    consume(p, out);
}

/* ------------------------------------------------------ tool-call block -- */

/* The official _read_until_stop on a growing text: finds the earliest stop at or
 * after from. Returns 1 with its position and index, 0 when more text is needed to
 * be sure (no stop yet, or a stop could still start before the one found), -1
 * when there is none and no more text will come. */
static int read_until(const dsv4_chat_parser *p, const char *const *stops, int n_stops, int final, size_t *at,
                      int *which)
{
    const char *s = p->buf.p;
    size_t n = p->buf.len, best = (size_t)-1;
    for (int k = 0; k < n_stops; k++) {
        const char *q = find(s + p->cur, n - p->cur, stops[k]);
        if (q && (size_t)(q - s) < best) {
            best = (size_t)(q - s);
            *which = k;
        }
    }
    if (best == (size_t)-1)
        return final ? -1 : 0;
    if (!final)
        for (size_t q = p->cur; q < best; q++)
            for (int k = 0; k < n_stops; k++)
                if (proper_prefix(s + q, n - q, stops[k]))
                    return 0;
    *at = best;
    return 1;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

static int ends_with(const char *s, size_t n, const char *suf, size_t *cut)
{
    size_t k = strlen(suf);
    if (n >= k && !memcmp(s + n - k, suf, k)) {
        *cut = n - k;
        return 1;
    }
    return 0;
}

/* `^\s*name="(.*?)">\n$` (DOTALL; `$` also matches before a final "\n"). */
static int parse_name(const char *s, size_t n, const char **name, size_t *len)
{
    while (n && is_space(*s))
        s++, n--;
    if (n < 6 || memcmp(s, "name=\"", 6))
        return -1;
    s += 6, n -= 6;
    size_t cut;
    if (!ends_with(s, n, "\">\n", &cut) && !ends_with(s, n, "\">\n\n", &cut))
        return -1;
    *name = s;
    *len = cut;
    return 0;
}

/* `^ name="(.*?)" string="(true|false)">(.*?)<$` (DOTALL). */
static int parse_param(const char *s, size_t n, const char **key, size_t *klen, int *is_string, const char **val,
                       size_t *vlen)
{
    if (n < 7 || memcmp(s, " name=\"", 7))
        return -1;
    s += 7, n -= 7;
    size_t vend;
    if (!ends_with(s, n, "<", &vend) && !ends_with(s, n, "<\n", &vend))
        return -1;
    static const char *const tags[2] = {"\" string=\"false\">", "\" string=\"true\">"};
    const char *best = NULL;
    int best_k = 0;
    for (int k = 0; k < 2; k++) {
        const char *q = find(s, vend, tags[k]);
        if (q && (!best || q < best)) {
            best = q;
            best_k = k;
        }
    }
    if (!best)
        return -1;
    *key = s;
    *klen = (size_t)(best - s);
    *is_string = best_k;
    *val = best + strlen(tags[best_k]);
    *vlen = (size_t)(s + vend - *val);
    return 0;
}

static int add_param(dsv4_chat_parser *p, const char *key, size_t klen, int is_string, const char *val, size_t vlen)
{
    for (size_t off = 0; off < p->keys.len; off += strlen(p->keys.p + off) + 1)
        if (strlen(p->keys.p + off) == klen && !memcmp(p->keys.p + off, key, klen))
            return 1; /* repeated parameter name */
    if (dsv4_strbuf_put(&p->keys, key, klen) || dsv4_strbuf_put(&p->keys, "", 1))
        return -1;
    if ((p->n_params++ > 0 && dsv4_strbuf_put(&p->args, ", ", 2)) || dsv4_pyjson_dump_string(key, klen, &p->args) ||
        dsv4_strbuf_put(&p->args, ": ", 2))
        return -1;
    return is_string ? dsv4_pyjson_dump_string(val, vlen, &p->args) : dsv4_strbuf_put(&p->args, val, vlen);
}

/* The block did not parse: pass its unread text on as content, and the rest too. */
static void tools_fail(dsv4_chat_parser *p, const char *why)
{
    if (!p->malformed)
        p->malformed = why;
    consume(p, p->raw_from);
    p->state = ST_RAW;
}

/* Returns 1 after progress, 0 when more text is needed, -1 on an out-of-memory. */
static int tools_step(dsv4_chat_parser *p, int final)
{
    static const char *const invoke_or_end[] = {INVOKE, TC_END};
    static const char *const param_or_end[] = {PARAM, INVOKE_END};
    static const char *const param_end[] = {PARAM_END};
    size_t at;
    int which = 0, r = 0;
    const char *s = p->buf.p;
    switch (p->step) {
    case T_INVOKE_OR_END:
        r = read_until(p, invoke_or_end, 2, final, &at, &which);
        if (r <= 0)
            break;
        if (at - p->cur != 2 || memcmp(s + p->cur, ">\n", 2)) {
            tools_fail(p, "tool calls: expected '>\\n' after a tag");
            return 1;
        }
        if (which == 1) { /* end of block */
            consume(p, at + strlen(TC_END));
            p->state = ST_CONTENT;
            return 1;
        }
        p->cur = at + strlen(INVOKE);
        p->step = T_NAME;
        return 1;
    case T_NAME: {
        r = read_until(p, param_or_end, 2, final, &at, &which);
        if (r <= 0)
            break;
        const char *name;
        size_t len;
        if (parse_name(s + p->cur, at - p->cur, &name, &len)) {
            tools_fail(p, "tool calls: bad invoke name");
            return 1;
        }
        p->name.len = p->args.len = p->keys.len = 0;
        p->n_params = 0;
        p->in_invoke = 1;
        if (dsv4_strbuf_put(&p->name, name, len) || dsv4_strbuf_put(&p->name, "", 0) ||
            dsv4_strbuf_put(&p->args, "{", 1))
            return -1;
        dsv4_chat_event ev = {.kind = DSV4_CHAT_EV_TOOL_BEGIN, .index = p->n_calls, .name = p->name.p};
        p->fn(p->user, &ev);
        p->cur = at + strlen(param_or_end[which]);
        p->step = which == 0 ? T_PARAM : T_INVOKE_OR_END;
        break;
    }
    case T_PARAM: {
        r = read_until(p, param_end, 1, final, &at, &which);
        if (r <= 0)
            break;
        const char *key, *val;
        size_t klen, vlen;
        int is_string;
        if (parse_param(s + p->cur, at - p->cur, &key, &klen, &is_string, &val, &vlen)) {
            tools_fail(p, "tool calls: bad parameter");
            return 1;
        }
        int rc = add_param(p, key, klen, is_string, val, vlen);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            tools_fail(p, "tool calls: repeated parameter name");
            return 1;
        }
        p->cur = at + strlen(PARAM_END);
        p->step = T_AFTER_PARAM;
        return 1;
    }
    case T_AFTER_PARAM:
        r = read_until(p, param_or_end, 2, final, &at, &which);
        if (r <= 0)
            break;
        if (at - p->cur != 2 || memcmp(s + p->cur, ">\n", 2)) {
            tools_fail(p, "tool calls: expected '>\\n' after a parameter");
            return 1;
        }
        p->cur = at + strlen(param_or_end[which]);
        if (which == 0) {
            p->step = T_PARAM;
            return 1;
        }
        p->step = T_INVOKE_OR_END;
        break;
    }
    if (p->step == T_INVOKE_OR_END && p->in_invoke && r > 0) {
        /* an invoke just closed */
        if (dsv4_strbuf_put(&p->args, "}", 1))
            return -1;
        dsv4_chat_event ev = {.kind = DSV4_CHAT_EV_TOOL_END, .text = p->args.p, .len = p->args.len,
                              .index = p->n_calls++, .name = p->name.p};
        p->fn(p->user, &ev);
        p->in_invoke = 0;
        p->raw_from = p->cur; /* from here on, a failure passes on only the unread part */
        return 1;
    }
    if (r > 0)
        return 1;
    if (r < 0) {
        tools_fail(p, "tool calls: the block was cut off");
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ API -- */

static dsv4_status run(dsv4_chat_parser *p, int final)
{
    for (;;) {
        switch (p->state) {
        case ST_REASONING:
        case ST_CONTENT: {
            int before = p->state;
            size_t len = p->buf.len;
            scan_text(p, final);
            if (p->state == before && p->buf.len == len)
                return DSV4_OK;
            if (p->state == before && !final)
                return DSV4_OK; /* emitted what it could; the rest is held back */
            break;
        }
        case ST_TOOLS: {
            int r = tools_step(p, final);
            if (r < 0)
                return DSV4_ERR_NOMEM;
            if (r == 0)
                return DSV4_OK;
            break;
        }
        case ST_RAW: {
            const char *eos = find(p->buf.p, p->buf.len, DSV4_TOK_EOS);
            size_t n = eos ? (size_t)(eos - p->buf.p) : p->buf.len;
            if (!eos && !final) /* hold back a possible EOS prefix */
                for (size_t k = n < 40 ? n : 40; k > 0; k--)
                    if (proper_prefix(p->buf.p + n - k, k, DSV4_TOK_EOS)) {
                        n -= k;
                        break;
                    }
            emit_text(p, DSV4_CHAT_EV_CONTENT, p->buf.p, n);
            consume(p, eos ? p->buf.len : n);
            if (eos)
                p->state = ST_DONE;
            return DSV4_OK;
        }
        default:
            p->buf.len = 0;
            return DSV4_OK;
        }
    }
}

dsv4_status dsv4_chat_parser_feed(dsv4_chat_parser *p, const char *text, size_t n)
{
    if (p->state == ST_DONE)
        return DSV4_OK;
    if (dsv4_strbuf_put(&p->buf, text, n))
        return DSV4_ERR_NOMEM;
    return run(p, 0);
}

dsv4_status dsv4_chat_parser_finish(dsv4_chat_parser *p)
{
    dsv4_status st = run(p, 1);
    if (st == DSV4_OK && p->state != ST_DONE)
        st = run(p, 1); /* a state change at the end (e.g. tools -> raw) flushes too */
    return st;
}
