/*
 * test_server_render.c - the server's OpenAI responses and event streams
 * (src/server/openai.c) from hand-made request outputs: tool calls, reasoning,
 * the stream's framing and its increments, errors. The server's black-box
 * tests (tests/server) cannot make the random test model call a tool; this
 * pins the shape a client sees when a model does.
 *
 * openai.c is included whole so the test links against dsv4core alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "server/openai.c"

static srv_resp_meta meta = {.id = "chatcmpl-abc", .model = "tiny", .created = 1700000000, .tok = NULL};

static json_t *load(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j) fail_msg("not JSON (%s): %s", e.text, s);
    return j;
}

static void put(dsv4_strbuf *b, const char *s) { dsv4_strbuf_put(b, s, strlen(s)); }

static srv_tool_call calls[2] = {{.id = "call_1", .name = "get_weather", .arguments = "{\"city\": \"Paris\"}"},
                                 {.id = "call_2", .name = "get_time", .arguments = "{}"}};

/* A response's usage: the prompt's and the completions' tokens, their sum, and the prompt tokens the prefix
 * cache supplied. */
static void expect_usage_cached(json_t *j, int prompt, int completion, int cached)
{
    json_t *u = json_object_get(j, "usage");
    assert_int_equal(json_integer_value(json_object_get(u, "prompt_tokens")), prompt);
    assert_int_equal(json_integer_value(json_object_get(u, "completion_tokens")), completion);
    assert_int_equal(json_integer_value(json_object_get(u, "total_tokens")), prompt + completion);
    json_t *d = json_object_get(u, "prompt_tokens_details");
    assert_true(json_is_object(d));
    assert_int_equal(json_integer_value(json_object_get(d, "cached_tokens")), cached);
}

static void expect_usage(json_t *j, int prompt, int completion)
{
    expect_usage_cached(j, prompt, completion, 0);
}

static void test_chat_tool_calls(void **state)
{
    (void)state;
    srv_req r = {0};
    r.n_prompt = 12;
    r.n_cached = 5;
    r.n_gen = 30;
    r.tools = calls;
    r.n_tools = 2;
    r.done = 1;
    r.outcome = SRV_OUTCOME_TOOL_CALLS;
    srv_req *rs[] = {&r};
    char *s = srv_chat_response(&meta, rs, 1, 0);
    json_t *j = load(s);
    assert_string_equal(json_string_value(json_object_get(j, "object")), "chat.completion");
    json_t *c = json_array_get(json_object_get(j, "choices"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "finish_reason")), "tool_calls");
    json_t *m = json_object_get(c, "message");
    assert_true(json_is_null(json_object_get(m, "content"))); /* no text: null, as OpenAI */
    assert_null(json_object_get(m, "reasoning_content"));     /* chat mode */
    json_t *tc = json_object_get(m, "tool_calls");
    assert_int_equal(json_array_size(tc), 2);
    json_t *t0 = json_array_get(tc, 0);
    assert_string_equal(json_string_value(json_object_get(t0, "id")), "call_1");
    assert_string_equal(json_string_value(json_object_get(t0, "type")), "function");
    assert_string_equal(json_string_value(json_object_get(json_object_get(t0, "function"), "name")), "get_weather");
    assert_string_equal(json_string_value(json_object_get(json_object_get(t0, "function"), "arguments")),
                        "{\"city\": \"Paris\"}");
    assert_null(json_object_get(t0, "index")); /* index only in stream deltas */
    expect_usage_cached(j, 12, 30, 5);
    json_decref(j);
    free(s);
}

static void test_chat_reasoning_and_content(void **state)
{
    (void)state;
    srv_req r = {0};
    put(&r.reasoning, "17*23: 17*20 + 17*3");
    put(&r.content, "391");
    r.thinking = 1;
    r.done = 1;
    r.outcome = SRV_OUTCOME_STOP;
    srv_req *rs[] = {&r};
    char *s = srv_chat_response(&meta, rs, 1, 0);
    json_t *j = load(s);
    json_t *m = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "message");
    assert_string_equal(json_string_value(json_object_get(m, "content")), "391");
    assert_string_equal(json_string_value(json_object_get(m, "reasoning_content")), "17*23: 17*20 + 17*3");
    assert_null(json_object_get(m, "tool_calls"));
    json_decref(j);
    free(s);
    dsv4_strbuf_free(&r.reasoning);
    dsv4_strbuf_free(&r.content);
}

/* Splits "data: ...\n\n" events; returns their count. */
static int events(const char *s, char ev[][4096], int max)
{
    int n = 0;
    while (*s) {
        assert_true(!strncmp(s, "data: ", 6));
        const char *e = strstr(s, "\n\n");
        assert_non_null(e);
        assert_true(n < max);
        snprintf(ev[n++], 4096, "%.*s", (int)(e - s - 6), s + 6);
        s = e + 2;
    }
    return n;
}

static void test_chat_stream_increments(void **state)
{
    (void)state;
    static char ev[32][4096];
    srv_req r = {0};
    r.thinking = 1;
    r.n_prompt = 5;
    srv_stream_pos pos = {0};
    dsv4_strbuf out = {0};
    /* nothing yet: only the role chunk */
    assert_int_equal(srv_chat_stream(&meta, &r, 0, 0, &pos, &out), 0);
    assert_int_equal(events(out.p, ev, 32), 1);
    json_t *j = load(ev[0]);
    json_t *d = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "delta");
    assert_string_equal(json_string_value(json_object_get(d, "role")), "assistant");
    json_decref(j);
    /* reasoning, then more reasoning and content: only what is new */
    out.len = 0;
    put(&r.reasoning, "let me");
    srv_chat_stream(&meta, &r, 0, 0, &pos, &out);
    put(&r.reasoning, " think");
    put(&r.content, "391");
    out.len = 0;
    srv_chat_stream(&meta, &r, 0, 0, &pos, &out);
    assert_int_equal(events(out.p, ev, 32), 2);
    j = load(ev[0]);
    d = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "delta");
    assert_string_equal(json_string_value(json_object_get(d, "reasoning_content")), " think");
    json_decref(j);
    j = load(ev[1]);
    d = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "delta");
    assert_string_equal(json_string_value(json_object_get(d, "content")), "391");
    json_decref(j);
    /* the end: two tool calls, the finish chunk, usage, [DONE] */
    r.tools = calls;
    r.n_tools = 2;
    r.n_gen = 9;
    r.done = 1;
    r.outcome = SRV_OUTCOME_TOOL_CALLS;
    out.len = 0;
    assert_int_equal(srv_chat_stream(&meta, &r, 0, 0, &pos, &out), 1);
    srv_req *rs[] = {&r};
    srv_stream_end(&meta, rs, 1, 1, 1, &out);
    int n = events(out.p, ev, 32);
    assert_int_equal(n, 5);
    for (int i = 0; i < 2; i++) {
        j = load(ev[i]);
        assert_string_equal(json_string_value(json_object_get(j, "id")), "chatcmpl-abc");
        assert_string_equal(json_string_value(json_object_get(j, "object")), "chat.completion.chunk");
        json_t *tc = json_array_get(json_object_get(json_object_get(json_array_get(json_object_get(j, "choices"), 0),
                                                                    "delta"), "tool_calls"), 0);
        assert_int_equal(json_integer_value(json_object_get(tc, "index")), i);
        assert_string_equal(json_string_value(json_object_get(tc, "id")), calls[i].id);
        assert_string_equal(json_string_value(json_object_get(json_object_get(tc, "function"), "name")), calls[i].name);
        assert_string_equal(json_string_value(json_object_get(json_object_get(tc, "function"), "arguments")),
                            calls[i].arguments);
        json_decref(j);
    }
    j = load(ev[2]);
    json_t *c = json_array_get(json_object_get(j, "choices"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "finish_reason")), "tool_calls");
    assert_int_equal(json_object_size(json_object_get(c, "delta")), 0);
    json_decref(j);
    j = load(ev[3]);
    assert_int_equal(json_array_size(json_object_get(j, "choices")), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "usage"), "total_tokens")), 14);
    json_decref(j);
    assert_string_equal(ev[4], "[DONE]");
    /* finished: nothing more */
    out.len = 0;
    assert_int_equal(srv_chat_stream(&meta, &r, 0, 0, &pos, &out), 1);
    assert_int_equal(out.len, 0);
    dsv4_strbuf_free(&out);
    dsv4_strbuf_free(&r.reasoning);
    dsv4_strbuf_free(&r.content);
}

/* n = 2: a choice each (index 0, 1), the usage of the prompt once and of both choices' tokens; a stream's
 * chunks carry their choice's index, its end (usage, [DONE]) comes once */
static void test_two_choices(void **state)
{
    (void)state;
    static char ev[16][4096];
    srv_req a = {0}, b = {0};
    a.n_prompt = b.n_prompt = 7;
    b.choice = 1; /* the prompt's second choice: its prompt counted once, and its cached tokens */
    a.n_cached = 4, b.n_cached = 6;
    put(&a.content, "one");
    put(&b.content, "two");
    a.n_gen = 3, b.n_gen = 5;
    a.done = b.done = 1;
    a.outcome = SRV_OUTCOME_STOP, b.outcome = SRV_OUTCOME_LENGTH;
    srv_req *rs[] = {&a, &b};
    char *s = srv_completion_response(&meta, rs, 2, 0);
    json_t *j = load(s);
    json_t *ch = json_object_get(j, "choices");
    assert_int_equal(json_array_size(ch), 2);
    for (int k = 0; k < 2; k++) {
        json_t *c = json_array_get(ch, k);
        assert_int_equal(json_integer_value(json_object_get(c, "index")), k);
        assert_string_equal(json_string_value(json_object_get(c, "text")), k ? "two" : "one");
        assert_string_equal(json_string_value(json_object_get(c, "finish_reason")), k ? "length" : "stop");
    }
    expect_usage_cached(j, 7, 8, 4);
    json_decref(j);
    free(s);
    srv_stream_pos pos[2] = {{0}};
    dsv4_strbuf out = {0};
    for (int k = 0; k < 2; k++) assert_int_equal(srv_chat_stream(&meta, rs[k], k, 0, &pos[k], &out), 1);
    srv_stream_end(&meta, rs, 2, 1, 1, &out);
    int n = events(out.p, ev, 16);
    assert_int_equal(n, 8); /* role, content, finish a choice; usage; [DONE] */
    for (int i = 0; i < 6; i++) {
        j = load(ev[i]);
        json_t *c = json_array_get(json_object_get(j, "choices"), 0);
        assert_int_equal(json_integer_value(json_object_get(c, "index")), i / 3);
        json_decref(j);
    }
    j = load(ev[6]);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "usage"), "completion_tokens")), 8);
    json_decref(j);
    assert_string_equal(ev[7], "[DONE]");
    dsv4_strbuf_free(&out);
    dsv4_strbuf_free(&a.content);
    dsv4_strbuf_free(&b.content);
}

/* A completions batch of two prompts (choice 0 of each): the usage counts both prompts, the indexes run on */
static void test_two_prompts(void **state)
{
    (void)state;
    srv_req a = {0}, b = {0}, c = {0};
    a.n_prompt = 7, b.n_prompt = 7, c.n_prompt = 4;
    b.choice = 1; /* prompt 0's second choice; c: prompt 1's first */
    put(&a.content, "one");
    put(&b.content, "two");
    put(&c.content, "three");
    a.n_gen = 3, b.n_gen = 5, c.n_gen = 2;
    a.done = b.done = c.done = 1;
    a.outcome = b.outcome = c.outcome = SRV_OUTCOME_STOP;
    srv_req *rs[] = {&a, &b, &c};
    char *s = srv_completion_response(&meta, rs, 3, 0);
    json_t *j = load(s);
    json_t *ch = json_object_get(j, "choices");
    assert_int_equal(json_array_size(ch), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(ch, 2), "index")), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ch, 2), "text")), "three");
    expect_usage(j, 11, 10);
    json_decref(j);
    free(s);
    dsv4_strbuf_free(&a.content);
    dsv4_strbuf_free(&b.content);
    dsv4_strbuf_free(&c.content);
}

static void test_stream_error_event(void **state)
{
    (void)state;
    static char ev[8][4096];
    srv_req r = {0};
    r.done = 1;
    r.outcome = SRV_OUTCOME_ERROR;
    snprintf(r.error, sizeof r.error, "the state pool is full");
    srv_stream_pos pos = {0};
    dsv4_strbuf out = {0};
    assert_int_equal(srv_completion_stream(&meta, &r, 0, 0, &pos, &out), 1);
    srv_req *rs[] = {&r};
    srv_stream_end(&meta, rs, 1, 0, 0, &out);
    int n = events(out.p, ev, 8);
    assert_int_equal(n, 2); /* no finish chunk: the error, then [DONE] */
    json_t *j = load(ev[0]);
    json_t *e = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(e, "message")), "the state pool is full");
    assert_string_equal(json_string_value(json_object_get(e, "type")), "server_error");
    json_decref(j);
    assert_string_equal(ev[1], "[DONE]");
    dsv4_strbuf_free(&out);
}

static void test_parse_refusals_name_the_field(void **state)
{
    (void)state;
    srv_parse_limits lim = {.vocab_size = 512, .max_stops = SRV_MAX_STOPS};
    static const struct {
        const char *body, *param;
    } cases[] = {
        {"{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"temperature\": \"hot\"}", "temperature"},
        {"{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"tool_choice\": \"required\"}", "tool_choice"},
        {"{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"logit_bias\": {\"512\": 1}}", "logit_bias"},
        {"{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"n\": 17}", "n"},
        {"{\"messages\": 7}", "messages"},
        {"{}", "messages"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        srv_params p;
        srv_error e;
        assert_int_equal(srv_parse_chat(cases[i].body, strlen(cases[i].body), &lim, &p, &e), -1);
        assert_int_equal(e.status, 400);
        assert_string_equal(e.param, cases[i].param);
        assert_non_null(strstr(e.message, cases[i].param));
        srv_params_free(&p);
    }
    const char *ok = "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"tools\": [{\"type\": \"function\", "
                     "\"function\": {\"name\": \"f\"}}], \"tool_choice\": {\"type\": \"function\", \"function\": "
                     "{\"name\": \"f\"}}, \"reasoning_effort\": \"max\", \"stop\": [\"a\", \"b\"], \"seed\": 5}";
    srv_params p;
    srv_error e;
    assert_int_equal(srv_parse_chat(ok, strlen(ok), &lim, &p, &e), 0);
    assert_int_equal(p.tool_choice, SRV_TOOL_CHOICE_NAMED);
    assert_string_equal(p.tool_name, "f");
    assert_int_equal(p.copts.thinking, 1);
    assert_int_equal(p.copts.reasoning_effort, DSV4_EFFORT_MAX);
    assert_int_equal(p.n_stops, 2);
    assert_int_equal(p.sp.has_seed, 1);
    srv_params_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_tool_calls),        cmocka_unit_test(test_chat_reasoning_and_content),
        cmocka_unit_test(test_chat_stream_increments), cmocka_unit_test(test_two_choices),
        cmocka_unit_test(test_two_prompts),
        cmocka_unit_test(test_stream_error_event),     cmocka_unit_test(test_parse_refusals_name_the_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
