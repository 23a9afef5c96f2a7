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
#include "test_forced_call.h"
#include "test_util.h"

#define N_ALONE   24
#define N_CHOICES 3

typedef struct {
    tfc_sched t; /* the embedded model's scheduler and the forced-call prompt */
    char *ids[N_ALONE + N_CHOICES];
    int n_ids;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    tfc_open(&f->t, 0, 4, 8);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    tfc_close(&f->t);
    for (int i = 0; i < f->n_ids; i++) free(f->ids[i]);
    free(f);
    return 0;
}

/* A chat request as the HTTP side makes one: greedy, at most 8 tokens, ends at EOS, the call forced. */
static srv_req *chat_request(fixture *f)
{
    srv_req *r = tfc_request(&f->t, 8);
    r->stop_ids[0] = f->t.info.eos_id;
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
        if (srv_sched_submit(f->t.s, r, err, sizeof err)) fail_msg("submit: %s", err);
        collect(f, r);
        srv_req_release(f->t.s, r);
    }
    /* n choices of one request, in the batch together */
    srv_req *rs[N_CHOICES];
    rs[0] = chat_request(f);
    for (int k = 1; k < N_CHOICES; k++) assert_non_null(rs[k] = srv_req_clone(rs[0], k));
    for (int k = 0; k < N_CHOICES; k++)
        if (srv_sched_submit(f->t.s, rs[k], err, sizeof err)) fail_msg("submit: %s", err);
    for (int k = 0; k < N_CHOICES; k++) {
        collect(f, rs[k]);
        srv_req_release(f->t.s, rs[k]);
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
