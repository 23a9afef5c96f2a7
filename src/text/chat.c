/*
 * chat.c - renders a conversation with the DeepSeek-V4 chat encoding.
 *
 * Follows DeepSeek's `encoding_dsv4.encode_messages` step by step, because the
 * model was trained on exactly its output (tests/text/chat/ holds prompts made
 * by the official file itself; tools/make_chat_fixtures.py says how):
 *
 *   1. merge: every tool message becomes a tool_result block of a user message,
 *      and a user message that follows a user message is merged into it as a
 *      text block (blocks are joined by a blank line);
 *   2. tool results inside one user message are re-ordered by the call order of
 *      the latest assistant message that made tool calls;
 *   3. drop_thinking (forced off when any message carries tools): in thinking
 *      mode, developer messages before the last user message are dropped;
 *   4. each message renders itself, and a user or developer message followed by
 *      an assistant (or a latest_reminder, or nothing) opens the assistant turn.
 *
 * The output is a list of segments, so that structure tokens never go through
 * BPE (MODEL.md §5.2): see chat.h for the policy on text segments.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "text/chat.h"


/* ------------------------------------------------------------ templates -- */

/* Placed at the very start of the prompt in thinking mode with effort "max". */
static const char effort_max_prefix[] =
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the root "
    "cause, rigorously stress-testing your logic against all potential paths, edge cases, and adversarial "
    "scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate step, considered "
    "alternative, and rejected hypothesis to ensure absolutely no assumption is left unchecked.\n\n";

/* TOOLS_TEMPLATE up to and after {tool_schemas}; the special-token strings in
 * it are split out as special segments by emit_template. */
static const char tools_head[] =
    "## Tools\n\n"
    "You have access to a set of tools to help answer the user's question. You can invoke tools by writing a "
    "\"<" DSV4_TOK_DSML "tool_calls>\" block like the following:\n\n"
    "<" DSV4_TOK_DSML "tool_calls>\n"
    "<" DSV4_TOK_DSML "invoke name=\"$TOOL_NAME\">\n"
    "<" DSV4_TOK_DSML "parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</" DSV4_TOK_DSML
    "parameter>\n"
    "...\n"
    "</" DSV4_TOK_DSML "invoke>\n"
    "<" DSV4_TOK_DSML "invoke name=\"$TOOL_NAME2\">\n"
    "...\n"
    "</" DSV4_TOK_DSML "invoke>\n"
    "</" DSV4_TOK_DSML "tool_calls>\n\n"
    "String parameters should be specified as is and set `string=\"true\"`. For all other types (numbers, "
    "booleans, arrays, objects), pass the value in JSON format and set `string=\"false\"`.\n\n"
    "If thinking_mode is enabled (triggered by " DSV4_TOK_THINK "), you MUST output your complete reasoning inside "
    DSV4_TOK_THINK "..." DSV4_TOK_THINK_END " BEFORE any tool calls or final response.\n\n"
    "Otherwise, output directly after " DSV4_TOK_THINK_END " with tool calls or final response.\n\n"
    "### Available Tool Schemas\n\n";
static const char tools_tail[] =
    "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n";

static const char response_format_head[] =
    "## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n";

static const char *const task_tokens[] = {
    NULL, "<｜action｜>", "<｜query｜>", "<｜authority｜>", "<｜domain｜>", "<｜title｜>", "<｜read_url｜>",
};

void dsv4_chat_opts_default(dsv4_chat_opts *o)
{
    memset(o, 0, sizeof *o);
    o->drop_thinking = 1;
    o->add_generation_prompt = 1;
    o->add_bos = 1;
}

/* --------------------------------------------------------------- output -- */

static int emit(dsv4_chat_prompt *p, const char *s, size_t n, int special)
{
    if (!n)
        return 0;
    if (p->len + n + 1 > p->cap) {
        size_t cap = p->cap ? p->cap : 1024;
        while (cap < p->len + n + 1)
            cap *= 2;
        char *t = realloc(p->text, cap);
        if (!t)
            return -1;
        p->text = t;
        p->cap = cap;
    }
    if (!special && p->n_segs > 0 && !p->segs[p->n_segs - 1].special) {
        p->segs[p->n_segs - 1].len += (uint32_t)n;
    } else {
        if (p->n_segs == p->cap_segs) {
            int cap = p->cap_segs ? p->cap_segs * 2 : 64;
            dsv4_chat_segment *q = realloc(p->segs, (size_t)cap * sizeof *q);
            if (!q)
                return -1;
            p->segs = q;
            p->cap_segs = cap;
        }
        p->segs[p->n_segs++] = (dsv4_chat_segment){(uint32_t)p->len, (uint32_t)n, special};
    }
    memcpy(p->text + p->len, s, n);
    p->len += n;
    p->text[p->len] = 0;
    return 0;
}

static int emit_text(dsv4_chat_prompt *p, const char *s) { return s ? emit(p, s, strlen(s), 0) : 0; }
static int emit_special(dsv4_chat_prompt *p, const char *tok) { return emit(p, tok, strlen(tok), 1); }

/* The encoder's own text: its "<think>", "</think>" and "｜DSML｜" are tokens. */
static int emit_template(dsv4_chat_prompt *p, const char *s)
{
    static const char *const specials[] = {DSV4_TOK_DSML, DSV4_TOK_THINK, DSV4_TOK_THINK_END};
    while (*s) {
        const char *best = NULL;
        size_t best_n = 0;
        for (int k = 0; k < 3; k++) {
            const char *q = strstr(s, specials[k]);
            if (q && (!best || q < best)) {
                best = q;
                best_n = strlen(specials[k]);
            }
        }
        if (!best)
            return emit(p, s, strlen(s), 0);
        if (emit(p, s, (size_t)(best - s), 0) || emit(p, best, best_n, 1))
            return -1;
        s = best + best_n;
    }
    return 0;
}

const char *dsv4_chat_prompt_flatten(const dsv4_chat_prompt *p, size_t *len)
{
    if (len)
        *len = p->len;
    return p->text ? p->text : "";
}

void dsv4_chat_prompt_free(dsv4_chat_prompt *p)
{
    free(p->text);
    free(p->segs);
    memset(p, 0, sizeof *p);
}

/* ----------------------------------------------------------- preprocess -- */

typedef struct {
    int is_tool_result;
    const char *text;   /* text, or the tool result */
    const char *use_id; /* tool results: the tool_call_id ("" when none) */
} block;

/* A message after merge_tool_messages. */
typedef struct {
    const dsv4_chat_message *m; /* the input message (for a merged user message: its first one, or NULL) */
    int orig;                   /* index of m in the input, for messages */
    dsv4_chat_role role;
    int first_block, n_blocks;  /* user messages: their blocks */
    dsv4_chat_task task;
    int wo_eos;
    int tools_truthy;
} wmsg;

/* Sort key of a tool result: its call's position in the latest assistant
 * message with tool calls (the last call with that id, as a Python dict keeps
 * it), and 0 when the id is unknown, as the official `.get(id, 0)`. */
static int call_order(const dsv4_chat_message *asst, const char *id)
{
    int order = 0;
    if (!asst || !id || !*id)
        return 0;
    for (int c = 0; c < asst->n_tool_calls; c++) {
        const char *cid = asst->tool_calls[c].id;
        if (cid && *cid && !strcmp(cid, id))
            order = c;
    }
    return order;
}

/* Stable sort of the tool results of one merged user message by call order;
 * text blocks keep their places (sort_tool_results_by_call_order). */
static void sort_tool_results(block *b, int n, const dsv4_chat_message *asst)
{
    int n_tool = 0;
    for (int i = 0; i < n; i++)
        n_tool += b[i].is_tool_result;
    if (n_tool < 2 || !asst)
        return;
    int any_id = 0;
    for (int c = 0; c < asst->n_tool_calls; c++)
        any_id |= asst->tool_calls[c].id && *asst->tool_calls[c].id;
    if (!any_id) /* an empty order table: the official code leaves the blocks alone */
        return;
    /* insertion sort over the tool-result positions only (n is small) */
    for (int i = 0; i < n; i++) {
        if (!b[i].is_tool_result)
            continue;
        for (int j = i; j > 0;) {
            int k = j - 1;
            while (k >= 0 && !b[k].is_tool_result)
                k--;
            if (k < 0 || call_order(asst, b[k].use_id) <= call_order(asst, b[j].use_id))
                break;
            block t = b[k];
            b[k] = b[j];
            b[j] = t;
            j = k;
        }
    }
}

static int last_user_index(const wmsg *w, int n)
{
    for (int i = n - 1; i >= 0; i--)
        if (w[i].role == DSV4_CHAT_USER || w[i].role == DSV4_CHAT_DEVELOPER)
            return i;
    return -1;
}

/* ------------------------------------------------------------ rendering -- */

typedef struct {
    dsv4_chat_prompt *out;
    const dsv4_chat_opts *o;
    int drop_thinking; /* effective */
    const wmsg *w;
    int n;
    const block *blocks;
    dsv4_strbuf scratch;
    int n_params; /* parameters written so far in the current invoke */
    char *err;
    size_t errlen;
} render_ctx;

#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        if (x)                                                                                                         \
            goto nomem;                                                                                                \
    } while (0)

/* tools (if truthy) and response_format (if truthy) after a system or developer message. */
static dsv4_status render_extras(render_ctx *c, const wmsg *w)
{
    const dsv4_chat_message *m = w->m;
    if (w->tools_truthy) {
        c->scratch.len = 0;
        dsv4_status st = dsv4_pyjson_tool_schemas(m->tools, &c->scratch, c->err, c->errlen);
        if (st)
            return st;
        TRY(emit_text(c->out, "\n\n") || emit_template(c->out, tools_head) ||
            emit(c->out, c->scratch.p ? c->scratch.p : "", c->scratch.len, 0) || emit_text(c->out, tools_tail));
    }
    if (m->response_format) {
        int t = dsv4_pyjson_truthy(m->response_format, strlen(m->response_format));
        if (t == -2) goto nomem;
        if (t < 0) {
            dsv4_errf(c->err, c->errlen, "messages[%d].response_format: not valid JSON", w->orig);
            return DSV4_ERR_INVALID;
        }
        if (t) {
            c->scratch.len = 0;
            dsv4_status st = dsv4_pyjson_redump(m->response_format, strlen(m->response_format), &c->scratch, c->err,
                                                c->errlen);
            if (st)
                return st;
            TRY(emit_text(c->out, "\n\n") || emit_text(c->out, response_format_head) ||
                emit(c->out, c->scratch.p, c->scratch.len, 0));
        }
    }
    return DSV4_OK;
nomem:
    return DSV4_ERR_NOMEM;
}

static int emit_param(void *user, const char *key, size_t klen, const char *val, size_t vlen, int is_string)
{
    render_ctx *c = user;
    dsv4_chat_prompt *p = c->out;
    if (c->n_params++ > 0 && emit(p, "\n", 1, 0))
        return -1;
    return emit(p, "<", 1, 0) || emit_special(p, DSV4_TOK_DSML) || emit_text(p, "parameter name=\"") ||
           emit(p, key, klen, 0) || emit_text(p, is_string ? "\" string=\"true\">" : "\" string=\"false\">") ||
           emit(p, val, vlen, 0) || emit(p, "</", 2, 0) || emit_special(p, DSV4_TOK_DSML) ||
           emit_text(p, "parameter>");
}

/* "\n\n<｜DSML｜tool_calls>\n" + invokes joined by "\n" + "\n</｜DSML｜tool_calls>" */
static dsv4_status render_tool_calls(render_ctx *c, const wmsg *w)
{
    const dsv4_chat_message *m = w->m;
    dsv4_chat_prompt *p = c->out;
    TRY(emit_text(p, "\n\n<") || emit_special(p, DSV4_TOK_DSML) || emit_text(p, "tool_calls>\n"));
    for (int k = 0; k < m->n_tool_calls; k++) {
        const dsv4_chat_tool_call *tc = &m->tool_calls[k];
        if (!tc->name) {
            dsv4_errf(c->err, c->errlen, "messages[%d].tool_calls[%d]: the function has no name", w->orig, k);
            return DSV4_ERR_INVALID;
        }
        if (k > 0)
            TRY(emit_text(p, "\n"));
        TRY(emit_text(p, "<") || emit_special(p, DSV4_TOK_DSML) || emit_text(p, "invoke name=\"") ||
            emit_text(p, tc->name) || emit_text(p, "\">\n"));
        c->n_params = 0;
        char e2[160];
        dsv4_status st = dsv4_pyjson_argument_items(tc->arguments ? tc->arguments : "{}", emit_param, c, e2, sizeof e2);
        if (st) {
            dsv4_errf(c->err, c->errlen, "messages[%d].tool_calls[%d]: %s", w->orig, k, e2);
            return st;
        }
        TRY(emit_text(p, "\n</") || emit_special(p, DSV4_TOK_DSML) || emit_text(p, "invoke>"));
    }
    TRY(emit_text(p, "\n</") || emit_special(p, DSV4_TOK_DSML) || emit_text(p, "tool_calls>"));
    return DSV4_OK;
nomem:
    return DSV4_ERR_NOMEM;
}

static dsv4_status render_message(render_ctx *c, int i, int last_user)
{
    const wmsg *w = &c->w[i];
    const dsv4_chat_message *m = w->m;
    dsv4_chat_prompt *p = c->out;
    int thinking = c->o->thinking;
    dsv4_status st;

    if (i == 0 && thinking && c->o->reasoning_effort == DSV4_EFFORT_MAX)
        TRY(emit_text(p, effort_max_prefix));

    switch (w->role) {
    case DSV4_CHAT_SYSTEM:
        TRY(emit_text(p, m->content));
        if ((st = render_extras(c, w)))
            return st;
        break;
    case DSV4_CHAT_DEVELOPER:
        if (!m->content || !*m->content) {
            dsv4_errf(c->err, c->errlen, "messages[%d]: a developer message needs content", w->orig);
            return DSV4_ERR_INVALID;
        }
        TRY(emit_special(p, DSV4_TOK_USER) || emit_text(p, m->content));
        if ((st = render_extras(c, w)))
            return st;
        break;
    case DSV4_CHAT_USER:
        TRY(emit_special(p, DSV4_TOK_USER));
        for (int b = 0; b < w->n_blocks; b++) {
            const block *bl = &c->blocks[w->first_block + b];
            if (b > 0)
                TRY(emit_text(p, "\n\n"));
            if (bl->is_tool_result)
                TRY(emit_text(p, "<tool_result>") || emit_text(p, bl->text) || emit_text(p, "</tool_result>"));
            else
                TRY(emit_text(p, bl->text));
        }
        break;
    case DSV4_CHAT_LATEST_REMINDER:
        TRY(emit_special(p, DSV4_TOK_LATEST_REMINDER) || emit_text(p, m->content));
        break;
    case DSV4_CHAT_ASSISTANT: {
        int prev_has_task = i > 0 && c->w[i - 1].task != DSV4_CHAT_TASK_NONE;
        if (thinking && !prev_has_task && (!c->drop_thinking || i > last_user))
            TRY(emit_text(p, m->reasoning_content) || emit_special(p, DSV4_TOK_THINK_END));
        TRY(emit_text(p, m->content));
        if (m->n_tool_calls > 0 && (st = render_tool_calls(c, w)))
            return st;
        if (!w->wo_eos)
            TRY(emit_special(p, DSV4_TOK_EOS));
        break;
    }
    default:
        dsv4_errf(c->err, c->errlen, "messages[%d]: unexpected role", w->orig);
        return DSV4_ERR_INVALID;
    }

    /* Transition: only before an assistant or latest_reminder message, or at the end. */
    if (i + 1 < c->n && c->w[i + 1].role != DSV4_CHAT_ASSISTANT && c->w[i + 1].role != DSV4_CHAT_LATEST_REMINDER)
        return DSV4_OK;
    if (i + 1 == c->n && !c->o->add_generation_prompt)
        return DSV4_OK;
    if (w->task != DSV4_CHAT_TASK_NONE) {
        if (w->task != DSV4_CHAT_TASK_ACTION) {
            TRY(emit_special(p, task_tokens[w->task]));
        } else {
            TRY(emit_special(p, DSV4_TOK_ASSISTANT) || emit_special(p, thinking ? DSV4_TOK_THINK : DSV4_TOK_THINK_END) ||
                emit_special(p, task_tokens[w->task]));
        }
    } else if (w->role == DSV4_CHAT_USER || w->role == DSV4_CHAT_DEVELOPER) {
        int open = thinking && (!c->drop_thinking || i >= last_user);
        TRY(emit_special(p, DSV4_TOK_ASSISTANT) || emit_special(p, open ? DSV4_TOK_THINK : DSV4_TOK_THINK_END));
    }
    return DSV4_OK;
nomem:
    return DSV4_ERR_NOMEM;
}

dsv4_status dsv4_chat_render(const dsv4_chat_message *msgs, int n_msgs, const dsv4_chat_opts *o,
                             dsv4_chat_prompt *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (n_msgs < 0 || (n_msgs > 0 && !msgs)) {
        dsv4_errf(err, errlen, "no messages");
        return DSV4_ERR_INVALID;
    }
    if ((unsigned)o->reasoning_effort > DSV4_EFFORT_MAX) {
        dsv4_errf(err, errlen, "reasoning_effort: unknown value %d", (int)o->reasoning_effort);
        return DSV4_ERR_INVALID;
    }
    wmsg *w = calloc((size_t)n_msgs + 1, sizeof *w);
    block *blocks = calloc((size_t)n_msgs + 1, sizeof *blocks);
    render_ctx c = {.out = out, .o = o, .blocks = blocks, .err = err, .errlen = errlen};
    dsv4_status st = DSV4_OK;
    if (!w || !blocks)
        goto nomem;

    /* 1. merge_tool_messages */
    int n = 0, nb = 0;
    for (int i = 0; i < n_msgs; i++) {
        const dsv4_chat_message *m = &msgs[i];
        if ((unsigned)m->role > DSV4_CHAT_LATEST_REMINDER || (unsigned)m->task > DSV4_CHAT_TASK_READ_URL) {
            dsv4_errf(err, errlen, "messages[%d]: unknown role or task", i);
            st = DSV4_ERR_INVALID;
            goto done;
        }
        if (m->n_tool_calls < 0 || (m->n_tool_calls > 0 && !m->tool_calls)) {
            dsv4_errf(err, errlen, "messages[%d]: bad tool_calls", i);
            st = DSV4_ERR_INVALID;
            goto done;
        }
        wmsg *prev = n > 0 ? &w[n - 1] : NULL;
        if (m->role == DSV4_CHAT_TOOL || m->role == DSV4_CHAT_USER) {
            int is_tool = m->role == DSV4_CHAT_TOOL;
            blocks[nb] = (block){is_tool, m->content ? m->content : "", m->tool_call_id ? m->tool_call_id : ""};
            /* A tool result joins any preceding user message; a user message joins one
             * without a task. A message that starts a new user turn keeps only its task
             * and wo_eos (the official merge copies nothing else). */
            if (prev && prev->role == DSV4_CHAT_USER && (is_tool || prev->task == DSV4_CHAT_TASK_NONE)) {
                prev->n_blocks++;
            } else {
                w[n] = (wmsg){.m = is_tool ? NULL : m, .orig = i, .role = DSV4_CHAT_USER, .first_block = nb,
                              .n_blocks = 1, .task = is_tool ? DSV4_CHAT_TASK_NONE : m->task,
                              .wo_eos = is_tool ? 0 : m->wo_eos};
                n++;
            }
            nb++;
        } else {
            w[n] = (wmsg){.m = m, .orig = i, .role = m->role, .task = m->task, .wo_eos = m->wo_eos};
            if (m->tools) {
                int t = dsv4_pyjson_truthy(m->tools, strlen(m->tools));
                if (t == -2) goto nomem;
                if (t < 0) {
                    dsv4_errf(err, errlen, "messages[%d].tools: not valid JSON", i);
                    st = DSV4_ERR_INVALID;
                    goto done;
                }
                if (t) { /* the official code converts tools on any message, so check them all */
                    c.scratch.len = 0;
                    char e2[200];
                    if ((st = dsv4_pyjson_tool_schemas(m->tools, &c.scratch, e2, sizeof e2))) {
                        if (st == DSV4_ERR_NOMEM) goto nomem;
                        dsv4_errf(err, errlen, "messages[%d].%s", i, e2);
                        goto done;
                    }
                }
                w[n].tools_truthy = t;
            }
            n++;
        }
    }

    /* 2. sort_tool_results_by_call_order */
    const dsv4_chat_message *last_calls = NULL;
    for (int i = 0; i < n; i++) {
        if (w[i].role == DSV4_CHAT_ASSISTANT && w[i].m->n_tool_calls > 0)
            last_calls = w[i].m;
        else if (w[i].role == DSV4_CHAT_USER)
            sort_tool_results(&blocks[w[i].first_block], w[i].n_blocks, last_calls);
    }

    /* 3. drop_thinking: forced off by tools anywhere; in thinking mode it drops the
     * developer messages before the last user message. (It also clears the older
     * assistants' reasoning, which rendering leaves out anyway.) */
    c.drop_thinking = o->drop_thinking != 0;
    for (int i = 0; i < n; i++)
        if (w[i].tools_truthy)
            c.drop_thinking = 0;
    if (o->thinking && c.drop_thinking) {
        int lu = last_user_index(w, n), k = 0;
        for (int i = 0; i < n; i++)
            if (!(w[i].role == DSV4_CHAT_DEVELOPER && i < lu))
                w[k++] = w[i];
        n = k;
    }
    c.w = w;
    c.n = n;

    /* 4. render */
    if (o->add_bos && emit_special(out, DSV4_TOK_BOS))
        goto nomem;
    int lu = last_user_index(w, n);
    for (int i = 0; i < n; i++) {
        /* A tool-result-only user message points at no input message; user rendering
         * reads only blocks, so give it a harmless one. */
        static const dsv4_chat_message empty_user = {.role = DSV4_CHAT_USER};
        if (!w[i].m)
            w[i].m = &empty_user;
        if ((st = render_message(&c, i, lu))) {
            if (st == DSV4_ERR_NOMEM)
                goto nomem;
            goto done;
        }
    }
    if (emit(out, "", 0, 0) || (!out->text && !(out->text = calloc(1, 1))))
        goto nomem;
    goto done;
nomem:
    dsv4_errf(err, errlen, "out of memory");
    st = DSV4_ERR_NOMEM;
done:
    dsv4_strbuf_free(&c.scratch);
    free(w);
    free(blocks);
    if (st)
        dsv4_chat_prompt_free(out);
    return st;
}
