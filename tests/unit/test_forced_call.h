/*
 * test_forced_call.h - the embedded model's scheduler and a chat request's prompt whose answer is forced to be a
 * tool call (the way a named tool_choice starts one): the fixture test_tool_call_ids and test_alloc_fail_output
 * share. Header only, as test_util.h; include it after cmocka.h.
 */
#ifndef DSV4_TESTS_TEST_FORCED_CALL_H
#define DSV4_TESTS_TEST_FORCED_CALL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dsv4.h"
#include "server/metrics.h"
#include "server/scheduler.h"
#include "test_util.h"
#include "text/chat.h"

/* A call as the model writes it after a chat's content (the V4 DSML format). */
static const char tfc_forced_call[] =
    "\n\n<" DSV4_TOK_DSML "tool_calls>\n<" DSV4_TOK_DSML "invoke name=\"get_weather\">\n<" DSV4_TOK_DSML
    "parameter name=\"city\" string=\"true\">Paris</" DSV4_TOK_DSML "parameter>\n</" DSV4_TOK_DSML
    "invoke>\n</" DSV4_TOK_DSML "tool_calls>";

/* The ids of one user message ("Weather in Paris?") rendered as a chat prompt, then tfc_forced_call's: malloc'ed
 * into *ids (*n of them). 0, or -1 with err set. */
static inline int tfc_prompt(const dsv4_tokenizer *tok, int32_t **ids, int *n, char *err, size_t errlen)
{
    dsv4_chat_message msg = {.role = DSV4_CHAT_USER, .content = "Weather in Paris?"};
    dsv4_chat_opts co;
    dsv4_chat_opts_default(&co);
    dsv4_chat_prompt cp;
    int32_t *q = NULL, *c = NULL;
    size_t nq = 0, nc = 0;
    if (dsv4_chat_render(&msg, 1, &co, &cp, err, errlen)) return -1;
    const int bad = dsv4_chat_prompt_ids(tok, &cp, &q, &nq, err, errlen) ||
                    dsv4_tokenize(tok, tfc_forced_call, strlen(tfc_forced_call), true, &c, &nc, err, errlen);
    dsv4_chat_prompt_free(&cp);
    *ids = bad ? NULL : malloc((nq + nc) * sizeof **ids);
    if (!bad && *ids) {
        memcpy(*ids, q, nq * sizeof *q);
        memcpy(*ids + nq, c, nc * sizeof *c);
        *n = (int)(nq + nc);
    } else if (!bad)
        snprintf(err, errlen, "out of memory");
    free(q);
    free(c);
    return *ids ? 0 : -1;
}

/* models/tiny (under DSV4_SRC) on the CPU in reference numerics, its tokenizer, the prompt above and a scheduler */
typedef struct {
    dsv4_engine *e;
    dsv4_tokenizer *tok;
    srv_metrics *m;
    srv_sched *s;
    dsv4_model_info info;
    int32_t *prompt; /* a rendered user question, then the forced call */
    int n_prompt;
} tfc_sched;

/* Opens t with n_threads compute threads (0: tu_engine_opts' 2) and a scheduler of max_running requests and
 * max_queue waiting; fails the test on an error. */
static inline void tfc_open(tfc_sched *t, int n_threads, int max_running, int max_queue)
{
    const char *src = getenv("DSV4_SRC");
    char dir[1024], path[1100], err[512];
    snprintf(dir, sizeof dir, "%s/models/tiny", src ? src : ".");
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    dsv4_engine_opts o;
    tu_engine_opts(&o, dir, DSV4_BACKEND_CPU, DSV4_NUMERICS_REFERENCE);
    if (n_threads > 0) o.n_threads = n_threads;
    if (dsv4_engine_open(&o, &t->e, err, sizeof err)) fail_msg("open %s: %s", dir, err);
    if (dsv4_tokenizer_open(path, &t->tok, err, sizeof err)) fail_msg("%s: %s", path, err);
    dsv4_engine_info(t->e, &t->info);
    if (tfc_prompt(t->tok, &t->prompt, &t->n_prompt, err, sizeof err)) fail_msg("prompt: %s", err);
    t->m = srv_metrics_create();
    srv_sched_opts so = {.max_running = max_running,
                         .max_queue = max_queue,
                         .chunked_prefill = 256,
                         .pages_total = dsv4_pages_total(t->e),
                         .overlap = 1,
                         .prefix_cache = 0};
    if (!t->m || srv_sched_start(t->e, t->tok, &so, t->m, &t->s, err, sizeof err)) fail_msg("scheduler: %s", err);
}

/* A chat request on t's prompt as the HTTP side makes one: greedy, at most max_tokens, the call forced (the
 * caller adds what else it wants: stop ids, logprobs). */
static inline srv_req *tfc_request(const tfc_sched *t, int max_tokens)
{
    srv_req *r = srv_req_create(t->prompt, t->n_prompt);
    assert_non_null(r);
    r->chat = 1;
    r->forced_text = strdup(tfc_forced_call);
    assert_non_null(r->forced_text);
    r->sp.temperature = 0;
    r->sp.max_tokens = max_tokens;
    return r;
}

/* The scheduler drained and stopped, everything tfc_open made freed. */
static inline void tfc_close(tfc_sched *t)
{
    srv_sched_drain(t->s);
    srv_sched_stop(t->s);
    srv_metrics_free(t->m);
    dsv4_engine_close(t->e);
    dsv4_tokenizer_close(t->tok);
    free(t->prompt);
}

#endif
