/*
 * test_alloc_fail.c - a request's way from JSON to prompt ids survives every
 * allocation failing: each allocation the library makes on that way (its
 * malloc, calloc, realloc, strdup and strndup calls, wrapped at link time with
 * --wrap, see tests/CMakeLists.txt) is made to fail in turn, one per run, and
 * each run must either end with an out-of-memory error through the function's
 * error path (a 500 "out of memory" from the request parser, DSV4_ERR_NOMEM or
 * an "out of memory" message from the text functions) or, where the failure
 * was absorbed (a cache entry skipped), give exactly what a run without
 * failures gives. An unchecked allocation crashes here, or turns up as a
 * success with a field missing or a prompt that differs.
 *
 * Only code linked statically (dsv4core, dsv4server) is wrapped: jansson and
 * PCRE2 allocate through their own shared libraries and never fail here.
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
#include "server/openai.h"
#include "text/chat.h"
#include "text/tokenizer_impl.h" /* the tokenizer's lock: a cold encode */

/* ---- the allocation wrappers ---------------------------------------------------------------------------- */

#include "test_alloc_wrap.h"

static dsv4_tokenizer *tok;

static int setup(void **state)
{
    (void)state;
    const char *src = getenv("DSV4_SRC");
    char path[1100], err[512];
    /* the small test tokenizer: V4's special tokens, few merges (long texts take many ids) */
    snprintf(path, sizeof path, "%s/tests/server/tokenizer.json", src ? src : ".");
    if (dsv4_tokenizer_open(path, &tok, err, sizeof err)) fail_msg("%s: %s", path, err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dsv4_tokenizer_close(tok);
    return 0;
}

/* ---- a chat request: parsed, rendered, tokenized ------------------------------------------------------ */

/* A request with every field that allocates: model, stops, logit_bias, tools (request-level and a message's own),
 * a named tool_choice, a history with a tool call and its result, response_format, and messages long enough
 * that the prompt's ids outgrow their first buffer. */
static const char chat_body[] =
    "{\"model\": \"tiny\", \"stop\": [\"END\", \"STOP\"], \"logit_bias\": {\"5\": 1.5, \"7\": -2},"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather\","
    " \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"},"
    " \"days\": {\"type\": \"integer\", \"maximum\": 1.5e3}}}}}],"
    " \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}},"
    " \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"name\": \"w\", \"schema\": {\"type\":"
    " \"object\"}}},"
    " \"messages\": ["
    "  {\"role\": \"system\", \"content\": \"You answer about the weather. Be brief, be exact, and say which city"
    " and which day each answer is for; if a city is unknown say so.\"},"
    "  {\"role\": \"developer\", \"content\": \"Tools below.\", \"tools\": [{\"type\": \"function\", \"function\":"
    " {\"name\": \"get_time\", \"parameters\": {\"type\": \"object\", \"properties\": {}}}}]},"
    "  {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"What is the weather in Paris and in"
    " Lyon over the next three days?\"}, {\"type\": \"text\", \"text\": \"And in Nice.\"}]},"
    "  {\"role\": \"assistant\", \"content\": \"\", \"reasoning_content\": \"The user wants three cities.\","
    " \"tool_calls\": [{\"id\": \"call_1\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\","
    " \"arguments\": \"{\\\"city\\\": \\\"Paris\\\", \\\"days\\\": 3, \\\"x\\\": [1.25, true, null]}\"}},"
    " {\"id\": \"call_2\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\":"
    " {\"city\": \"Lyon\"}}}]},"
    "  {\"role\": \"tool\", \"tool_call_id\": \"call_2\", \"content\": \"Lyon: rain, 14 C.\"},"
    "  {\"role\": \"tool\", \"tool_call_id\": \"call_1\", \"content\": \"Paris: sun, 21 C; sun, 23 C; clouds\"},"
    "  {\"role\": \"user\", \"content\": \"Thanks. Now the same for Marseille, Toulouse, Bordeaux and Lille,"
    " please, with the wind too.\"}]}";

typedef struct {
    int32_t *ids; /* the reference prompt */
    size_t n;
    const char *model, *tool_name;
    int n_stops, n_bias;
} chat_ref;

static int is_oom_message(const char *s) { return strstr(s, "out of memory") != NULL; }

/* One run: the request parsed, rendered and tokenized as the server does (http.c's chat_prompt). */
static void chat_run(void *ctx)
{
    chat_ref *ref = ctx;
    srv_parse_limits lim = {.vocab_size = 512, .max_stops = SRV_MAX_STOPS};
    srv_params p;
    srv_error e = {0};
    if (srv_parse_chat(chat_body, sizeof chat_body - 1, &lim, &p, &e)) {
        srv_params_free(&p);
        if (e.status != 500 || !is_oom_message(e.message)) fail_msg("parse: %d %s", e.status, e.message);
        return;
    }
    if (!p.model || strcmp(p.model, ref->model) || !p.tool_name || strcmp(p.tool_name, ref->tool_name) ||
        p.n_stops != ref->n_stops || p.n_bias != ref->n_bias)
        fail_msg("parsed without an error but with a field missing (allocation %ld failed)", atomic_load(&fail_at));
    for (int i = 0; i < p.n_stops; i++)
        if (!p.stops[i]) fail_msg("stop[%d] missing (allocation %ld failed)", i, atomic_load(&fail_at));
    char err[512] = "";
    dsv4_chat_prompt prompt = {0};
    dsv4_status st = dsv4_chat_render(p.conv.messages, p.conv.n_messages, &p.copts, &prompt, err, sizeof err);
    if (st) {
        srv_params_free(&p);
        if (st != DSV4_ERR_NOMEM || !is_oom_message(err)) fail_msg("render: %d %s", (int)st, err);
        return;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    st = dsv4_chat_prompt_ids(tok, &prompt, &ids, &n, err, sizeof err);
    dsv4_chat_prompt_free(&prompt);
    srv_params_free(&p);
    if (st) {
        if (st != DSV4_ERR_NOMEM || !is_oom_message(err)) fail_msg("ids: %d %s", (int)st, err);
        assert_null(ids);
        return;
    }
    if (!ref->ids) {
        ref->ids = ids;
        ref->n = n;
        return;
    }
    assert_int_equal(n, ref->n);
    assert_memory_equal(ids, ref->ids, n * sizeof *ids);
    free(ids);
}

static void test_chat_request(void **state)
{
    (void)state;
    chat_ref ref = {.model = "tiny", .tool_name = "get_weather", .n_stops = 2, .n_bias = 2};
    chat_run(&ref); /* the reference, no failure */
    assert_non_null(ref.ids);
    assert_true(ref.n > 64); /* past the first buffer of ids */
    long runs = each_failure(chat_run, &ref);
    printf("chat request: %ld allocations, each failed in turn\n", runs);
    assert_true(runs > 50);
    free(ref.ids);
}

/* ---- a completions request: a batch of prompts --------------------------------------------------------- */

static const char completion_body[] =
    "{\"model\": \"tiny\", \"prompt\": [\"Once upon a time\", [5, 6, 7, 8], \"<\\uff5cUser\\uff5c>Hi\"],"
    " \"stop\": \"\\n\\n\", \"max_tokens\": 4, \"echo\": true, \"logprobs\": 2}";

static void completion_run(void *ctx)
{
    (void)ctx;
    srv_parse_limits lim = {.vocab_size = 512, .max_stops = SRV_MAX_STOPS};
    srv_params p;
    srv_error e = {0};
    if (srv_parse_completion(completion_body, sizeof completion_body - 1, &lim, &p, &e)) {
        srv_params_free(&p);
        if (e.status != 500 || !is_oom_message(e.message)) fail_msg("parse: %d %s", e.status, e.message);
        return;
    }
    if (!p.model || strcmp(p.model, "tiny") || p.n_stops != 1 || !p.stops[0] || strcmp(p.stops[0], "\n\n") ||
        p.n_prompts != 3 || !p.prompts[0].text || p.prompts[1].n_ids != 4 || !p.prompts[2].text)
        fail_msg("parsed without an error but with a field missing (allocation %ld failed)", atomic_load(&fail_at));
    for (int i = 0; i < p.n_prompts; i++) {
        if (!p.prompts[i].text) continue;
        int32_t *ids = NULL;
        size_t n = 0;
        char err[512] = "";
        const dsv4_status st = dsv4_tokenize(tok, p.prompts[i].text, p.prompts[i].len, true, &ids, &n, err, sizeof err);
        if (st) {
            if (st != DSV4_ERR_NOMEM || !is_oom_message(err)) fail_msg("prompt[%d]: %d %s", i, (int)st, err);
        } else {
            assert_true(n > 0);
        }
        free(ids);
    }
    srv_params_free(&p);
}

static void test_completion_request(void **state)
{
    (void)state;
    completion_run(NULL);
    long runs = each_failure(completion_run, NULL);
    printf("completions request: %ld allocations, each failed in turn\n", runs);
    assert_true(runs > 5);
}

/* ---- an encode from cold buffers ----------------------------------------------------------------------- */

/* With the tokenizer's lock held, dsv4_tokenize encodes in a fresh context: every buffer of the encode (the ids,
 * the regex's spans, the pieces, the BPE's symbols and heap, the piece cache) is allocated in the run. */
static const char cold_text[] =
    "Once upon a time, in 1987, a tokenizer met 12345 unusual pieces: 'don't', \u00e9t\u00e9, \xe2\x82\xac"
    "42 and "
    "<\xef\xbd\x9cUser\xef\xbd\x9c> markers; it merged them   all \t twice.";

static void cold_run(void *ctx)
{
    int32_t **ref = ctx;
    int32_t *ids = NULL;
    size_t n = 0;
    char err[512] = "";
    pthread_mutex_lock(&tok->lock);
    const dsv4_status st = dsv4_tokenize(tok, cold_text, strlen(cold_text), true, &ids, &n, err, sizeof err);
    pthread_mutex_unlock(&tok->lock);
    if (st) { /* an allocation failure of the encode is out of memory, not a bad input */
        if (st != DSV4_ERR_NOMEM || !is_oom_message(err)) fail_msg("tokenize: %d %s", (int)st, err);
        assert_null(ids);
        return;
    }
    if (!ref[0]) {
        ref[0] = ids;
        ref[1] = (int32_t *)(uintptr_t)n;
        return;
    }
    assert_int_equal(n, (size_t)(uintptr_t)ref[1]);
    assert_memory_equal(ids, ref[0], n * sizeof *ids);
    free(ids);
}

static void test_cold_encode(void **state)
{
    (void)state;
    int32_t *ref[2] = {NULL, NULL};
    cold_run(ref);
    assert_non_null(ref[0]);
    long runs = each_failure(cold_run, ref);
    printf("cold encode: %ld allocations, each failed in turn\n", runs);
    assert_true(runs > 5);
    free(ref[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_request),
        cmocka_unit_test(test_completion_request),
        cmocka_unit_test(test_cold_encode),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
