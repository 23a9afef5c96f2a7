/*
 * test_alloc_fail_output.c - a request's way OUT survives every allocation
 * failing: the scheduler running a chat request on the embedded model
 * (models/tiny) and collecting its text, its tool call and its logprobs, then
 * openai.c building its answer, whole and as a stream. As in test_alloc_fail.c
 * the library's malloc, calloc, realloc, strdup and strndup are wrapped at link
 * time, and here jansson's allocations go through the same counter
 * (json_set_alloc_funcs); each is made to fail in turn, one per run. Each run
 * must end either with the clean out-of-memory error (the request's outcome
 * an error saying "out of memory"; a NULL answer, which the server sends as a
 * 500 server_error; a stream of whole events cut before the failure, which
 * the server ends with srv_stream_oom) or with exactly the output a run
 * without failures gives.
 *
 * The model never writes a tool call itself: the call is forced text at the end
 * of the prompt, fed to the output parser before the model's own output (as in
 * test_tool_call_ids.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "dsv4.h"
#include "server/openai.h"
#include "test_forced_call.h"
#include "test_util.h"

/* ---- the allocation wrappers ---------------------------------------------------------------------------- */

#include "test_alloc_wrap.h"

static void *json_malloc(size_t n)
{
    return failing() ? NULL : __real_malloc(n);
}

/* ---- the fixture: the embedded model, its scheduler, a chat prompt with a forced tool call ---------------- */

typedef struct {
    tfc_sched t;  /* the embedded model's scheduler and the forced-call prompt */
    srv_req *ref; /* the run without failures */
    char *ref_json, *ref_stream;
    long runs_ok, runs_oom;
} fixture;

static fixture F;

static int setup(void **state)
{
    (void)state;
    fixture *f = &F;
    json_set_alloc_funcs(json_malloc, free);
    /* one compute thread: the CPU backend grows each thread's scratch on first use (and aborts if it cannot); the
     * reference run sizes it, so that no failure lands there (the engine's compute memory is not the way out) */
    tfc_open(&f->t, 1, 2, 4);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fixture *f = &F;
    if (f->ref) srv_req_release(f->t.s, f->ref);
    tfc_close(&f->t);
    free(f->ref_json);
    free(f->ref_stream);
    return 0;
}

/* A chat request as the HTTP side makes one (outside the failing window): greedy, 12 tokens at most (EOS does not
 * stop it: the text is long enough to grow its buffers), logprobs with 3 alternatives, the call forced. */
static srv_req *chat_request(fixture *f)
{
    srv_req *r = tfc_request(&f->t, 12);
    r->sp.logprobs = 1;
    r->sp.top_logprobs = 3;
    return r;
}

/* ---- the scheduler ------------------------------------------------------------------------------------------ */

static void sched_run(void *ctx)
{
    fixture *f = ctx;
    const long k = atomic_load(&fail_at);
    atomic_store(&fail_at, 0);
    srv_req *r = chat_request(f);
    char err[512];
    atomic_store(&fail_at, k);
    dsv4_status st = srv_sched_submit(f->t.s, r, err, sizeof err);
    if (st == DSV4_OK) {
        pthread_mutex_lock(&r->mu);
        while (!r->done) pthread_cond_wait(&r->cv, &r->mu);
        pthread_mutex_unlock(&r->mu);
    }
    atomic_store(&fail_at, 0);
    if (st != DSV4_OK) {
        /* the queue's own allocation: refused at the door, as 429 (no memory for one more) */
        if (st != DSV4_ERR_NOMEM) fail_msg("submit: %d %s", (int)st, err);
        f->runs_oom++;
    } else if (!f->ref) {
        f->ref = r;
        return;
    } else if (r->outcome == SRV_OUTCOME_ERROR) {
        if (!strstr(r->error, "out of memory")) fail_msg("allocation %ld: error \"%s\"", k, r->error);
        f->runs_oom++;
    } else {
        const srv_req *q = f->ref;
        if (r->outcome != q->outcome || r->n_gen != q->n_gen || r->content.len != q->content.len ||
            (q->content.len && memcmp(r->content.p, q->content.p, q->content.len)) || r->n_tools != q->n_tools ||
            r->n_toks != q->n_toks || memcmp(r->toks, q->toks, (size_t)q->n_toks * sizeof *q->toks))
            fail_msg("allocation %ld failed, the request ended without an error but its output differs", k);
        for (int i = 0; i < q->n_tools; i++)
            if (strcmp(r->tools[i].name, q->tools[i].name) || strcmp(r->tools[i].arguments, q->tools[i].arguments))
                fail_msg("allocation %ld failed: tool call %d differs", k, i);
        f->runs_ok++;
    }
    srv_req_release(f->t.s, r);
}

static void test_scheduler(void **state)
{
    (void)state;
    fixture *f = &F;
    sched_run(f); /* the reference */
    assert_non_null(f->ref);
    assert_int_equal(f->ref->outcome, SRV_OUTCOME_LENGTH);
    assert_int_equal(f->ref->n_tools, 1);
    assert_int_equal(f->ref->n_toks, 12);
    assert_true(f->ref->content.len > 0);
    long runs = each_failure(sched_run, f);
    printf("scheduler: %ld allocations, each failed in turn (%ld out of memory, %ld absorbed)\n", runs, f->runs_oom,
           f->runs_ok);
    assert_true(f->runs_oom > 0);
    /* the server carries on: a request after them all gives the reference again */
    f->runs_ok = 0;
    sched_run(f);
    assert_int_equal(f->runs_ok, 1);
}

/* ---- the answer: whole, and as a stream -------------------------------------------------------------------- */

static const srv_resp_meta *meta(fixture *f)
{
    static srv_resp_meta m;
    m = (srv_resp_meta){.id = "chatcmpl-test", .model = "tiny", .created = 1700000000, .tok = f->t.tok};
    return &m;
}

static void response_run(void *ctx)
{
    fixture *f = ctx;
    char *json = srv_chat_response(meta(f), &f->ref, 1, 1);
    const long k = atomic_load(&fail_at);
    atomic_store(&fail_at, 0);
    if (!f->ref_json) {
        f->ref_json = json;
        return;
    }
    if (json && strcmp(json, f->ref_json)) fail_msg("allocation %ld failed: the answer differs:\n%s", k, json);
    json ? f->runs_ok++ : f->runs_oom++;
    free(json);
}

/* The events of a stream: each "data: <JSON>\n\n" or "data: [DONE]\n\n", the JSON well formed. */
static void check_events(const char *s, size_t n, long k)
{
    size_t i = 0;
    while (i < n) {
        if (strncmp(s + i, "data: ", 6)) fail_msg("allocation %ld: no event at byte %zu", k, i);
        const char *end = strstr(s + i, "\n\n");
        if (!end) fail_msg("allocation %ld: an event cut at byte %zu", k, i);
        const size_t len = (size_t)(end - (s + i)) - 6;
        if (strncmp(s + i + 6, "[DONE]", len)) {
            json_error_t je;
            json_t *j = json_loadb(s + i + 6, len, 0, &je);
            if (!j) fail_msg("allocation %ld: malformed event at byte %zu: %s", k, i, je.text);
            json_decref(j);
        }
        i = (size_t)(end - s) + 2;
    }
}

static void stream_run(void *ctx)
{
    fixture *f = ctx;
    srv_stream_pos pos = {0};
    dsv4_strbuf out = {0};
    int rc = srv_chat_stream(meta(f), f->ref, 0, 1, &pos, &out);
    if (rc == 1)
        rc = srv_stream_end(meta(f), &f->ref, 1, 1, 1, &out);
    else if (rc == 0)
        fail_msg("a done request's stream is not done");
    const long k = atomic_load(&fail_at);
    atomic_store(&fail_at, 0);
    if (!f->ref_stream) {
        assert_int_equal(rc, 0);
        f->ref_stream = out.p;
        return;
    }
    check_events(out.p ? out.p : "", out.len, k);
    if (rc < 0) {
        /* whole events, those of the reference up to the failure, then the server's error event */
        if (out.len && strncmp(out.p, f->ref_stream, out.len)) fail_msg("allocation %ld: the events differ", k);
        check_events(srv_stream_oom, strlen(srv_stream_oom), k);
        f->runs_oom++;
    } else {
        if (strcmp(out.p, f->ref_stream)) fail_msg("allocation %ld failed: the stream differs:\n%s", k, out.p);
        f->runs_ok++;
    }
    dsv4_strbuf_free(&out);
}

static void test_answers(void **state)
{
    (void)state;
    fixture *f = &F;
    assert_non_null(f->ref);
    response_run(f);
    assert_non_null(f->ref_json);
    assert_non_null(strstr(f->ref_json, "\"tool_calls\""));
    assert_non_null(strstr(f->ref_json, "\"top_logprobs\""));
    f->runs_ok = f->runs_oom = 0;
    long runs = each_failure(response_run, f);
    printf("whole answer: %ld allocations, each failed in turn (%ld out of memory)\n", runs, f->runs_oom);
    assert_true(runs > 50);
    stream_run(f);
    assert_non_null(f->ref_stream);
    f->runs_ok = f->runs_oom = 0;
    runs = each_failure(stream_run, f);
    printf("stream: %ld allocations, each failed in turn (%ld out of memory)\n", runs, f->runs_oom);
    assert_true(runs > 50);
    assert_int_equal(f->runs_oom, runs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scheduler),
        cmocka_unit_test(test_answers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
