/*
 * run.c - `dsv4 run`: chat with a model from the terminal, streaming.
 *
 *   dsv4 run [-m DIR] [-p PROMPT] [--system TEXT] [--think] [--reasoning-effort high|max]
 *            [--temperature T] [--top-p P] [--top-k K] [--min-p P] [--seed S] [--max-tokens N]
 *            [--stop STR]... [--context N] [--numerics reference|plain] [--backend auto|cpu|cuda] [--threads N]
 *
 * With -p it answers one prompt and exits; otherwise every line read from
 * stdin is a user turn of one conversation ("/reset" starts a new one). The
 * answer's content goes to stdout as it is generated; in thinking mode the
 * reasoning goes to stderr, so stdout holds only the answer. Each turn renders
 * the whole conversation in the V4 chat format and prefills it afresh.
 * Decoding is greedy unless --temperature says otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "server/prefix.h"
#include "text/chat.h"

typedef struct {
    dsv4_strbuf content, reasoning;
    int tty_err;
    int in_reasoning;
} run_out;

static void on_event(void *user, const dsv4_chat_event *ev)
{
    run_out *o = user;
    switch (ev->kind) {
    case DSV4_CHAT_EV_REASONING:
        if (o->tty_err && !o->in_reasoning) fputs("\033[2m", stderr);
        o->in_reasoning = 1;
        fwrite(ev->text, 1, ev->len, stderr);
        fflush(stderr);
        dsv4_strbuf_put(&o->reasoning, ev->text, ev->len);
        break;
    case DSV4_CHAT_EV_CONTENT:
        if (o->in_reasoning) {
            fputs(o->tty_err ? "\033[0m\n" : "\n", stderr);
            o->in_reasoning = 0;
        }
        fwrite(ev->text, 1, ev->len, stdout);
        fflush(stdout);
        dsv4_strbuf_put(&o->content, ev->text, ev->len);
        break;
    case DSV4_CHAT_EV_TOOL_BEGIN: break;
    case DSV4_CHAT_EV_TOOL_END:
        printf("\n[tool call %s %.*s]\n", ev->name, (int)ev->len, ev->text);
        break;
    }
}

typedef struct {
    dsv4_engine *e;
    dsv4_tokenizer *tok;
    dsv4_model_info info;
    dsv4_sampling_params sp;
    dsv4_chat_opts chat;
    const char **stops;
    int n_stops;
    srv_prefix *pc; /* the conversation's kept states (NULL: --prefix-cache off) */
} runner;

/* Pages that positions [0, n) take. */
static int64_t pages_of(const runner *r, int64_t n)
{
    const int pt = dsv4_page_tokens(r->e);
    return (n + pt - 1) / pt;
}

/* Generate one assistant turn for msgs; the streamed answer is left in out. */
static int generate(runner *r, const dsv4_chat_message *msgs, int n_msgs, run_out *out, char *err, size_t errlen)
{
    dsv4_chat_prompt prompt = {0};
    int32_t *ids = NULL;
    size_t n_ids = 0;
    dsv4_sampler *smp = NULL;
    dsv4_detok *dt = NULL;
    dsv4_chat_parser *ps = NULL;
    dsv4_stop_matcher *sm = NULL;
    int seq = -1, rc = -1;
    if (dsv4_chat_render(msgs, n_msgs, &r->chat, &prompt, err, errlen) ||
        dsv4_chat_prompt_ids(r->tok, &prompt, &ids, &n_ids, err, errlen))
        goto done;
    if ((int64_t)n_ids >= r->info.max_ctx) {
        snprintf(err, errlen, "the conversation is %zu tokens, over the context of %lld (use --context)", n_ids,
                 (long long)r->info.max_ctx);
        goto done;
    }
    if (dsv4_sampler_create(&r->sp, r->info.vocab_size, ids, (int)n_ids, &smp, err, errlen) ||
        dsv4_detok_create(r->tok, &dt, err, errlen) ||
        dsv4_chat_parser_create(r->chat.thinking, on_event, out, &ps) != DSV4_OK ||
        (r->n_stops && dsv4_stop_create(r->stops, r->n_stops, &sm, err, errlen)))
        goto done;
    /* The conversation so far, from the state kept at the last turn's prompt or answer where this prompt
     * repeats it (the same bits as prefilling it all). The turn may run to the context: the pages for that
     * come first, entries dropped for them where needed. */
    int64_t hit = 0;
    int hi = srv_prefix_match(r->pc, ids, (int64_t)n_ids - 1, &hit, NULL);
    const int64_t turn_pages = pages_of(r, r->info.max_ctx);
    while (dsv4_pages_free(r->e) < turn_pages - (hi >= 0 ? hit / dsv4_page_tokens(r->e) : 0) &&
           srv_prefix_evict(r->pc, hi)) {
    }
    if (hi >= 0 && dsv4_pages_free(r->e) < turn_pages - hit / dsv4_page_tokens(r->e)) hi = -1, hit = 0;
    if (hi >= 0 ? srv_prefix_start(r->pc, hi, &seq, err, errlen) : dsv4_seq_create(r->e, &seq, err, errlen)) goto done;
    if (hi < 0) hit = 0;
    dsv4_sample s;
    dsv4_batch_entry b;
    if ((int64_t)n_ids - 1 > hit) { /* the prompt but its last token, kept: the next turn repeats it (in thinking
                                     * mode not the last, "<think>") */
        b = (dsv4_batch_entry){.seq = seq, .n_tokens = (int)(n_ids - 1 - hit), .tokens = ids + hit};
        if (dsv4_step(r->e, &b, 1, err, errlen)) goto done;
        srv_prefix_save(r->pc, seq, ids, 0, dsv4_pages_free(r->e) - (turn_pages - pages_of(r, (int64_t)n_ids - 1)));
    }
    b = (dsv4_batch_entry){.seq = seq, .n_tokens = 1, .tokens = ids + n_ids - 1, .sampler = smp, .sample = &s};
    if (dsv4_step(r->e, &b, 1, err, errlen)) goto done;
    int64_t len = (int64_t)n_ids;
    int32_t *fed = NULL; /* the tokens absorbed after the prompt: the state at the turn's end holds them */
    size_t n_fed = 0, cap_fed = 0;
    int lost = 0; /* one could not be recorded: this turn's end is not kept */
    for (;;) {
        dsv4_finish fin = dsv4_sampler_accept(smp, s.token);
        if (fin == DSV4_FINISH_STOP) break; /* a stop id (EOS) is not part of the answer */
        const char *text;
        size_t tl;
        if (dsv4_detok_push(dt, s.token, &text, &tl, err, errlen)) goto done;
        const int stopped = sm ? dsv4_stop_feed(sm, text, tl, &text, &tl) : 0;
        if (stopped < 0 || (tl && dsv4_chat_parser_feed(ps, text, tl) != DSV4_OK)) {
            snprintf(err, errlen, "out of memory");
            free(fed);
            goto done;
        }
        if (stopped || fin == DSV4_FINISH_LENGTH || len + 1 >= r->info.max_ctx) break;
        int32_t t = s.token;
        b = (dsv4_batch_entry){.seq = seq, .n_tokens = 1, .tokens = &t, .sampler = smp, .sample = &s};
        if (dsv4_step(r->e, &b, 1, err, errlen)) {
            free(fed);
            goto done;
        }
        len++;
        if (r->pc && !lost && n_fed == cap_fed) {
            int32_t *g = realloc(fed, (cap_fed ? 2 * cap_fed : 64) * sizeof(int32_t));
            if (g)
                fed = g, cap_fed = cap_fed ? 2 * cap_fed : 64;
            else
                lost = 1;
        }
        if (r->pc && !lost) fed[n_fed++] = t;
    }
    /* the state at the turn's end (the prompt and what was absorbed of the answer), the sequence moved into it:
     * the next turn repeats it (outside thinking mode) */
    if (r->pc && !lost && srv_prefix_keep_end(r->pc, seq, ids, (int64_t)n_ids, fed, (int64_t)n_fed, 0) >= 0) seq = -1;
    free(fed);
    {
        const char *text;
        size_t tl;
        dsv4_detok_flush(dt, &text, &tl);
        int bad = 0;
        if (sm && tl) {
            const int st = dsv4_stop_feed(sm, text, tl, &text, &tl);
            bad = st < 0;
            if (!st) {
                bad = tl && dsv4_chat_parser_feed(ps, text, tl) != DSV4_OK;
                dsv4_stop_flush(sm, &text, &tl);
            }
        }
        if (bad || (tl && dsv4_chat_parser_feed(ps, text, tl) != DSV4_OK) || dsv4_chat_parser_finish(ps) != DSV4_OK) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
    }
    rc = 0;
done:
    if (seq >= 0) dsv4_seq_free(r->e, seq);
    dsv4_stop_free(sm);
    dsv4_chat_parser_free(ps);
    dsv4_detok_free(dt);
    dsv4_sampler_free(smp);
    free(ids);
    dsv4_chat_prompt_free(&prompt);
    return rc;
}

static void run_usage(FILE *f)
{
    fprintf(f, "usage: dsv4 run [-m DIR] [--tokenizer FILE] [-p PROMPT] [--system TEXT] [--think]\n"
               "                [--reasoning-effort high|max]\n"
               "                [--temperature T] [--top-p P] [--top-k K] [--min-p P] [--seed S] [--max-tokens N]\n"
               "                [--stop STR]... [--context N] [--numerics reference|plain]\n"
               "                [--backend auto|cpu|cuda] [--threads N] [--cuda-graphs on|off] [--ep N] [--tune FILE]\n"
               "                [--prefill-gemm ours|cublaslt] [--prefix-cache on|off]\n"
               "A conversation on stdin starts each turn from the state kept at the turn before (--prefix-cache off:\n"
               "prefills it all again; the same output either way).\n");
}

static int parse_float(const char *C, const char *opt, const char *v, double lo, double hi, float *out)
{
    double d;
    if (cli_parse_double(C, opt, v, lo, hi, &d)) return 1;
    *out = (float)d;
    return 0;
}

static int parse_int(const char *C, const char *opt, const char *v, long long lo, long long hi, int *out)
{
    long long x;
    if (cli_parse_int(C, opt, v, lo, hi, &x)) return 1;
    *out = (int)x;
    return 0;
}

int cmd_run(int argc, char **argv)
{
    const char *C = "run";
    dsv4_engine_opts eo;
    dsv4_engine_opts_default(&eo);
    eo.model_dir = DSV4_DEFAULT_MODEL;
    eo.max_seqs = 1;
    eo.max_ctx = 4096;
    runner r = {0};
    dsv4_sampling_params_default(&r.sp);
    r.sp.temperature = 0;
    dsv4_chat_opts_default(&r.chat);
    r.chat.thinking = 0;
    const char *prompt = NULL, *system = NULL, *tokenizer = NULL;
    const char *stops[16];
    int prefix = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            run_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--think")) {
            r.chat.thinking = 1;
            continue;
        }
        if (!v) return cli_fail(C, "%s needs a value", a);
        i++;
        int bad = 0;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) eo.model_dir = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) prompt = v;
        else if (!strcmp(a, "--system")) system = v;
        else if (!strcmp(a, "--tokenizer"))
            tokenizer = v;
        else if (!strcmp(a, "--reasoning-effort")) {
            char err[256];
            if (dsv4_chat_effort_parse(v, &r.chat.reasoning_effort, err, sizeof err)) return cli_fail(C, "%s", err);
        } else if (!strcmp(a, "--temperature")) bad = parse_float(C, a, v, 0, 100, &r.sp.temperature);
        else if (!strcmp(a, "--top-p")) bad = parse_float(C, a, v, 1e-9f, 1, &r.sp.top_p);
        else if (!strcmp(a, "--min-p")) bad = parse_float(C, a, v, 0, 1, &r.sp.min_p);
        else if (!strcmp(a, "--top-k")) bad = parse_int(C, a, v, 0, 1 << 24, &r.sp.top_k);
        else if (!strcmp(a, "--seed")) {
            if (cli_parse_seed(C, a, v, &r.sp.seed)) return 1;
            r.sp.has_seed = 1;
        } else if (!strcmp(a, "--max-tokens")) bad = parse_int(C, a, v, 0, 1 << 24, &r.sp.max_tokens);
        else if (!strcmp(a, "--stop")) {
            if (r.n_stops == 16) return cli_fail(C, "at most 16 --stop strings");
            stops[r.n_stops++] = v;
        } else if (!strcmp(a, "--prefix-cache")) {
            if (strcmp(v, "on") && strcmp(v, "off")) return cli_fail(C, "--prefix-cache: on or off, not '%s'", v);
            prefix = !strcmp(v, "on");
        } else if (!strcmp(a, "--context")) {
            long long x = 0;
            bad = cli_parse_int(C, a, v, 16, 1 << 24, &x);
            eo.max_ctx = x;
        } else if ((bad = cli_engine_option(C, a, v, &eo)) >= 0) {
        } else {
            run_usage(stderr);
            return cli_fail(C, "unknown option %s", a);
        }
        if (bad) return 1;
    }
    r.stops = stops;
    /* the conversation's kept states: a prompt's (before its last token) and a turn's end, two turns' worth; the
     * pool room for one turn at full context beside them */
    eo.max_snaps = prefix ? 4 : 0;
    eo.pool_tokens = (prefix ? 2 : 1) * eo.max_ctx;
    char err[1024], path[4096];
    if (cli_open_tokenizer(C, eo.model_dir, tokenizer, &r.tok, path, sizeof path)) return 1;
    if (dsv4_engine_open(&eo, &r.e, err, sizeof err)) {
        dsv4_tokenizer_close(r.tok);
        return cli_fail(C, "%s", err);
    }
    dsv4_engine_info(r.e, &r.info);
    r.pc = prefix ? srv_prefix_create(r.e) : NULL;
    int32_t eos = r.info.eos_id;
    r.sp.stop_ids = &eos;
    r.sp.n_stop_ids = 1;
    int rc = 0, tty_in = isatty(0);
    /* the conversation: system, then alternating user / assistant */
    int cap = 64, n = 0;
    dsv4_chat_message *msgs = calloc((size_t)cap, sizeof(*msgs));
    char **owned = calloc((size_t)cap, sizeof(char *));
    if (system) msgs[n++] = (dsv4_chat_message){.role = DSV4_CHAT_SYSTEM, .content = system};
    const int n_sys = n;
    char *line = NULL;
    size_t line_cap = 0;
    for (;;) {
        const char *user = prompt;
        if (!prompt) {
            if (tty_in) {
                fputs("> ", stdout);
                fflush(stdout);
            }
            ssize_t got = getline(&line, &line_cap, stdin);
            if (got < 0) break;
            while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
            if (!got) continue;
            if (!strcmp(line, "/reset")) {
                for (int i = n_sys; i < n; i++) free(owned[i]);
                n = n_sys;
                continue;
            }
            user = line;
        }
        if (n + 2 > cap) {
            cap *= 2;
            msgs = realloc(msgs, (size_t)cap * sizeof(*msgs));
            owned = realloc(owned, (size_t)cap * sizeof(char *));
        }
        owned[n] = strdup(user);
        msgs[n] = (dsv4_chat_message){.role = DSV4_CHAT_USER, .content = owned[n]};
        n++;
        run_out out = {.tty_err = isatty(2)};
        if (generate(&r, msgs, n, &out, err, sizeof err)) {
            rc = cli_fail(C, "%s", err);
            dsv4_strbuf_free(&out.content);
            dsv4_strbuf_free(&out.reasoning);
            break;
        }
        if (out.in_reasoning) fputs(out.tty_err ? "\033[0m\n" : "\n", stderr);
        fputc('\n', stdout);
        fflush(stdout);
        owned[n] = out.content.p ? out.content.p : strdup("");
        msgs[n] = (dsv4_chat_message){.role = DSV4_CHAT_ASSISTANT, .content = owned[n]};
        n++;
        dsv4_strbuf_free(&out.reasoning);
        if (prompt) break;
    }
    for (int i = n_sys; i < n; i++) free(owned[i]);
    free(owned);
    free(msgs);
    free(line);
    srv_prefix_destroy(r.pc);
    dsv4_engine_close(r.e);
    dsv4_tokenizer_close(r.tok);
    return rc;
}
