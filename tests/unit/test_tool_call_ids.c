/*
 * test_tool_call_ids.c - the ids of the tool calls the server's scheduler
 * reads out of a chat's output never repeat within a process: across requests
 * run one after another (each freed before the next is made, so malloc hands
 * the next the same addresses: ids once made from a request's address
 * repeated there) and across the n choices of one request run together.
 *
 * The embedded model (models/tiny) never writes a tool call itself, and the
 * server refuses function names that could smuggle one into the prompt (the
 * way its black-box test used to get one), so each request here carries a
 * whole call as forced text: tokens at the end of its prompt that the
 * scheduler feeds to the output parser before the model's own output, as it
 * does with a named tool_choice's start of a call. The rest - the real
 * scheduler on the real engine, the V4 output parser, the ids it makes, the
 * finish reason - is what `dsv4 serve` runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dsv4.h"
#include "server/metrics.h"
#include "server/scheduler.h"
#include "test_forced_call.h"
#include "test_util.h"

#define N_ALONE   24
#define N_CHOICES 3

typedef struct {
    dsv4_engine *e;
    dsv4_tokenizer *tok;
    srv_metrics *m;
    srv_sched *s;
    dsv4_model_info info;
    int32_t *prompt; /* a rendered user question, then the forced call */
    int n_prompt;
    char *ids[N_ALONE + N_CHOICES];
    int n_ids;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    const char *src = getenv("DSV4_SRC");
    char dir[1024], path[1100], err[512];
    snprintf(dir, sizeof dir, "%s/models/tiny", src ? src : ".");
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    dsv4_engine_opts o;
    tu_engine_opts(&o, dir, DSV4_BACKEND_CPU, DSV4_NUMERICS_REFERENCE);
    if (dsv4_engine_open(&o, &f->e, err, sizeof err)) fail_msg("open %s: %s", dir, err);
    if (dsv4_tokenizer_open(path, &f->tok, err, sizeof err)) fail_msg("%s: %s", path, err);
    dsv4_engine_info(f->e, &f->info);

    /* the prompt a chat request with tools would have: the question, then the forced call */
    if (tfc_prompt(f->tok, &f->prompt, &f->n_prompt, err, sizeof err)) fail_msg("prompt: %s", err);

    f->m = srv_metrics_create();
    srv_sched_opts so = {.max_running = 4,
                         .max_queue = 8,
                         .chunked_prefill = 256,
                         .pages_total = dsv4_pages_total(f->e),
                         .overlap = 1,
                         .prefix_cache = 0};
    if (!f->m || srv_sched_start(f->e, f->tok, &so, f->m, &f->s, err, sizeof err)) fail_msg("scheduler: %s", err);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    srv_sched_drain(f->s);
    srv_sched_stop(f->s);
    srv_metrics_free(f->m);
    dsv4_engine_close(f->e);
    dsv4_tokenizer_close(f->tok);
    for (int i = 0; i < f->n_ids; i++) free(f->ids[i]);
    free(f->prompt);
    free(f);
    return 0;
}

/* A chat request as the HTTP side makes one: greedy, at most 8 tokens, ends at EOS, the call forced. */
static srv_req *chat_request(fixture *f)
{
    srv_req *r = srv_req_create(f->prompt, f->n_prompt);
    assert_non_null(r);
    r->chat = 1;
    r->forced_text = strdup(tfc_forced_call);
    assert_non_null(r->forced_text);
    r->sp.temperature = 0;
    r->sp.max_tokens = 8;
    r->stop_ids[0] = f->info.eos_id;
    r->sp.stop_ids = r->stop_ids;
    r->sp.n_stop_ids = 1;
    return r;
}

/* Waits for r to finish; its one tool call is the forced one; its id is kept. */
static void collect(fixture *f, srv_req *r)
{
    pthread_mutex_lock(&r->mu);
    while (!r->done) pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    assert_int_equal(r->outcome, SRV_OUTCOME_TOOL_CALLS);
    assert_int_equal(r->n_tools, 1);
    assert_string_equal(r->tools[0].name, "get_weather");
    assert_string_equal(r->tools[0].arguments, "{\"city\": \"Paris\"}");
    assert_int_equal(strncmp(r->tools[0].id, "call_", 5), 0);
    assert_true(strlen(r->tools[0].id) > 5);
    f->ids[f->n_ids++] = strdup(r->tools[0].id);
}

static void test_ids_unique(void **state)
{
    fixture *f = *state;
    char err[512];
    /* one request at a time, each freed before the next is made */
    for (int i = 0; i < N_ALONE; i++) {
        srv_req *r = chat_request(f);
        if (srv_sched_submit(f->s, r, err, sizeof err)) fail_msg("submit: %s", err);
        collect(f, r);
        srv_req_release(f->s, r);
    }
    /* n choices of one request, in the batch together */
    srv_req *rs[N_CHOICES];
    rs[0] = chat_request(f);
    for (int k = 1; k < N_CHOICES; k++) assert_non_null(rs[k] = srv_req_clone(rs[0], k));
    for (int k = 0; k < N_CHOICES; k++)
        if (srv_sched_submit(f->s, rs[k], err, sizeof err)) fail_msg("submit: %s", err);
    for (int k = 0; k < N_CHOICES; k++) {
        collect(f, rs[k]);
        srv_req_release(f->s, rs[k]);
    }
    assert_int_equal(f->n_ids, N_ALONE + N_CHOICES);
    for (int i = 0; i < f->n_ids; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(f->ids[i], f->ids[j]))
                fail_msg("tool-call id %s made twice (calls %d and %d)", f->ids[i], j, i);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ids_unique, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
