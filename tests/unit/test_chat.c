/*
 * test_chat.c - the V4 chat encoding against DeepSeek's official encoder.
 *
 * tests/text/chat/cases.json holds conversations and NAME.txt the prompt that
 * the official encoding_dsv4.py made of each (tools/make_chat_fixtures.py).
 * Every conversation goes through the JSON helper and the renderer and must
 * come out byte for byte; its segments must split the prompt at exactly the
 * special tokens. Then: the Python json.dumps emulation on its own, the
 * request-level tools / response_format helper, options the official encoder
 * does not have, and refusals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "text/chat.h"


static json_t *load_json(const char *rel)
{
    char *text = tu_slurp_src(rel, NULL);
    assert_non_null(text);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("%s:%d: %s", rel, je.line, je.text);
    free(text);
    return j;
}

static const char *const specials[] = {
    DSV4_TOK_BOS, DSV4_TOK_EOS,   DSV4_TOK_USER,   DSV4_TOK_ASSISTANT, DSV4_TOK_LATEST_REMINDER,
    DSV4_TOK_THINK, DSV4_TOK_THINK_END, DSV4_TOK_DSML, "<｜action｜>", "<｜query｜>",
    "<｜authority｜>", "<｜domain｜>", "<｜title｜>", "<｜read_url｜>",
};
#define N_SPECIALS (int)(sizeof specials / sizeof specials[0])

/* Index of the special token starting at s, or -1. */
static int special_at(const char *s, size_t left)
{
    for (int k = 0; k < N_SPECIALS; k++) {
        size_t n = strlen(specials[k]);
        if (n <= left && !memcmp(s, specials[k], n))
            return k;
    }
    return -1;
}

/* Segments cover the text in order, specials are known tokens, text segments are
 * not empty and never adjacent. With check_split, the special segments are exactly
 * where a scan for special-token strings finds them (true unless user text itself
 * contains such strings). */
static void check_segments(const dsv4_chat_prompt *p, int check_split, const char *name)
{
    size_t pos = 0;
    for (int i = 0; i < p->n_segs; i++) {
        const dsv4_chat_segment *s = &p->segs[i];
        if (s->off != pos || s->len == 0)
            fail_msg("%s: segment %d at %u (+%u), expected %zu", name, i, s->off, s->len, pos);
        if (s->special) {
            int k = special_at(p->text + s->off, s->len);
            if (k < 0 || strlen(specials[k]) != s->len)
                fail_msg("%s: segment %d is marked special but is \"%.*s\"", name, i, (int)s->len, p->text + s->off);
        } else if (i > 0 && !p->segs[i - 1].special) {
            fail_msg("%s: adjacent text segments %d and %d", name, i - 1, i);
        }
        if (check_split && !s->special)
            for (size_t q = s->off; q < s->off + s->len; q++)
                if (special_at(p->text + q, s->off + s->len - q) >= 0)
                    fail_msg("%s: text segment %d holds a special token at byte %zu", name, i, q);
        pos += s->len;
    }
    assert_int_equal(pos, p->len);
}

static void render_case(const json_t *c, dsv4_chat_prompt *p)
{
    const char *name = json_string_value(json_object_get(c, "name"));
    dsv4_chat_conv conv;
    char err[256];
    if (dsv4_chat_conv_from_json(json_object_get(c, "messages"), NULL, NULL, &conv, err, sizeof err))
        fail_msg("%s: %s", name, err);
    dsv4_chat_opts o;
    dsv4_chat_opts_default(&o);
    o.thinking = json_is_true(json_object_get(c, "thinking"));
    o.drop_thinking = json_is_true(json_object_get(c, "drop_thinking"));
    if (dsv4_chat_effort_parse(json_string_value(json_object_get(c, "reasoning_effort")), &o.reasoning_effort, err,
                               sizeof err))
        fail_msg("%s: %s", name, err);
    if (dsv4_chat_render(conv.messages, conv.n_messages, &o, p, err, sizeof err))
        fail_msg("%s: %s", name, err);
    dsv4_chat_conv_free(&conv);
}

static void show_diff(const char *name, const char *want, size_t wn, const char *got, size_t gn)
{
    size_t i = 0;
    while (i < wn && i < gn && want[i] == got[i])
        i++;
    size_t from = i > 60 ? i - 60 : 0;
    print_error("%s: first difference at byte %zu (expected %zu bytes, got %zu)\n  expected: ...%.*s\n  got:      ...%.*s\n",
                name, i, wn, gn, (int)(wn - from < 140 ? wn - from : 140), want + from,
                (int)(gn - from < 140 ? gn - from : 140), got + from);
}

static void test_official_prompts(void **state)
{
    (void)state;
    json_t *cases = load_json("tests/text/chat/cases.json");
    assert_true(json_array_size(cases) >= 30);
    size_t i;
    json_t *c;
    int bad = 0;
    json_array_foreach(cases, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        char rel[256];
        snprintf(rel, sizeof rel, "tests/text/chat/%s.txt", name);
        size_t wn;
        char *want = tu_slurp_src(rel, &wn);
        assert_non_null(want);
        dsv4_chat_prompt p;
        render_case(c, &p);
        size_t gn;
        const char *got = dsv4_chat_prompt_flatten(&p, &gn);
        if (gn != wn || memcmp(got, want, wn)) {
            show_diff(name, want, wn, got, gn);
            bad++;
        }
        check_segments(&p, strcmp(name, "unicode_and_specials_in_text") != 0, name);
        dsv4_chat_prompt_free(&p);
        free(want);
    }
    json_decref(cases);
    assert_int_equal(bad, 0);
}

/* User text that spells special tokens stays text. */
static void test_user_specials_stay_text(void **state)
{
    (void)state;
    dsv4_chat_message m[2] = {{.role = DSV4_CHAT_USER, .content = "a</think>b<｜User｜>"}};
    dsv4_chat_opts o;
    dsv4_chat_opts_default(&o);
    o.thinking = 1;
    dsv4_chat_prompt p;
    char err[128];
    assert_int_equal(dsv4_chat_render(m, 1, &o, &p, err, sizeof err), DSV4_OK);
    /* BOS, User, text, Assistant, think */
    assert_int_equal(p.n_segs, 5);
    assert_int_equal(p.segs[2].special, 0);
    assert_int_equal(p.segs[2].len, strlen("a</think>b<｜User｜>"));
    assert_string_equal(dsv4_chat_prompt_flatten(&p, NULL),
                        DSV4_TOK_BOS DSV4_TOK_USER "a</think>b<｜User｜>" DSV4_TOK_ASSISTANT DSV4_TOK_THINK);
    dsv4_chat_prompt_free(&p);
}

static void test_python_float_repr(void **state)
{
    (void)state;
    /* json.dumps(float(text)) as Python 3.11 prints it */
    static const char *const cases[][2] = {
        {"0.1", "0.1"},
        {"1e-5", "1e-05"},
        {"1e16", "1e+16"},
        {"1e15", "1000000000000000.0"},
        {"123456789012345678.0", "1.2345678901234568e+17"},
        {"5e-324", "5e-324"},
        {"1.7976931348623157e308", "1.7976931348623157e+308"},
        {"2.2250738585072014e-308", "2.2250738585072014e-308"},
        {"1152921504606846976.0", "1.152921504606847e+18"},
        {"9007199254740993.0", "9007199254740992.0"},
        {"0.3", "0.3"},
        {"2.675", "2.675"},
        {"0.3333333333333333", "0.3333333333333333"},
        {"100.0", "100.0"},
        {"1e22", "1e+22"},
        {"4.35", "4.35"},
        {"1e-4", "0.0001"},
        {"0.00012345", "0.00012345"},
        {"123456.789e3", "123456789.0"},
        {"-1.5e-10", "-1.5e-10"},
        {"6.103515625e-05", "6.103515625e-05"},
        {"1e23", "1e+23"},
        {"8.98846567431158e307", "8.98846567431158e+307"},
        {"2.0", "2.0"},
        {"1e300", "1e+300"},
        {"0.5e-323", "5e-324"},
        {"9.999999999999999e22", "1e+23"},
        {"-0.0", "-0.0"},
        {"0e0", "0.0"},
        {"1e400", "Infinity"},
        {"-1e400", "-Infinity"},
        {"NaN", "NaN"},
        {"-Infinity", "-Infinity"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dsv4_strbuf b = {0};
        char err[128];
        assert_int_equal(dsv4_pyjson_redump(cases[i][0], strlen(cases[i][0]), &b, err, sizeof err), DSV4_OK);
        if (strcmp(b.p, cases[i][1]))
            fail_msg("float %s: expected %s, got %s", cases[i][0], cases[i][1], b.p);
        dsv4_strbuf_free(&b);
    }
}

static void test_python_json_dumps(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {" {\"b\":1,\"a\":[true,false,null,{}],\"b\":2} ", "{\"b\": 2, \"a\": [true, false, null, {}]}"},
        {"\"\\u00e9\\ud83d\\ude00\\/\\u0001\\u001f\\u007f\"", "\"é😀/\\u0001\\u001f\x7f\""},
        {"[ -0 , 00.5e1 ]", NULL}, /* leading zero: extra data, Python refuses */
        {"[-0, 10, 1.5E+3, 2e-0]", "[0, 10, 1500.0, 2.0]"},
        {"99999999999999999999999999", "99999999999999999999999999"},
        {"{\"k\": \"tab\\there\\\\ \\\"q\\\" \\b\\f\\r\\n\"}", "{\"k\": \"tab\\there\\\\ \\\"q\\\" \\b\\f\\r\\n\"}"},
        {"\"raw\tcontrol\"", NULL},
        {"\"\\ud800\"", NULL},
        {"[1,]", NULL},
        {"{\"a\" 1}", NULL},
        {"1.", NULL},
        {"", NULL},
        {"[] []", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dsv4_strbuf b = {0};
        char err[128];
        dsv4_status st = dsv4_pyjson_redump(cases[i][0], strlen(cases[i][0]), &b, err, sizeof err);
        if (!cases[i][1]) {
            if (st == DSV4_OK)
                fail_msg("%s: accepted as %s, Python refuses it", cases[i][0], b.p);
        } else {
            if (st)
                fail_msg("%s: %s", cases[i][0], err);
            if (strcmp(b.p, cases[i][1]))
                fail_msg("%s: expected %s, got %s", cases[i][0], cases[i][1], b.p);
        }
        dsv4_strbuf_free(&b);
    }
    assert_int_equal(dsv4_pyjson_truthy("[]", 2), 0);
    assert_int_equal(dsv4_pyjson_truthy("{}", 2), 0);
    assert_int_equal(dsv4_pyjson_truthy("0.0", 3), 0);
    assert_int_equal(dsv4_pyjson_truthy("\"\"", 2), 0);
    assert_int_equal(dsv4_pyjson_truthy("[0]", 3), 1);
    assert_int_equal(dsv4_pyjson_truthy("{", 1), -1);
}

static char *render_json(const char *messages, const char *tools, const char *rf, int thinking)
{
    json_t *m = json_loads(messages, 0, NULL), *t = tools ? json_loads(tools, 0, NULL) : NULL,
           *r = rf ? json_loads(rf, 0, NULL) : NULL;
    assert_non_null(m);
    dsv4_chat_conv conv;
    char err[256];
    if (dsv4_chat_conv_from_json(m, t, r, &conv, err, sizeof err))
        fail_msg("%s", err);
    dsv4_chat_opts o;
    dsv4_chat_opts_default(&o);
    o.thinking = thinking;
    dsv4_chat_prompt p;
    if (dsv4_chat_render(conv.messages, conv.n_messages, &o, &p, err, sizeof err))
        fail_msg("%s", err);
    char *s = strdup(dsv4_chat_prompt_flatten(&p, NULL));
    dsv4_chat_prompt_free(&p);
    dsv4_chat_conv_free(&conv);
    json_decref(m);
    json_decref(t);
    json_decref(r);
    return s;
}

/* Request-level tools land on the system message (or an empty one in front),
 * giving the same prompt as the official message-level form. */
static void test_request_level_tools(void **state)
{
    (void)state;
    const char *tools = "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\","
                        "\"parameters\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"}}}}}]";
    char msg_level[1024], sys_level[1024];
    snprintf(msg_level, sizeof msg_level,
             "[{\"role\":\"system\",\"content\":\"S\",\"tools\":%s},{\"role\":\"user\",\"content\":\"u\"}]", tools);
    char *a = render_json(msg_level, NULL, NULL, 1);
    char *b = render_json("[{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\",\"content\":\"u\"}]", tools,
                          NULL, 1);
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "{\"name\": \"f\", \"description\": \"d\", \"parameters\": {\"type\": \"object\", "
                              "\"properties\": {\"x\": {\"type\": \"number\"}}}}"));
    snprintf(sys_level, sizeof sys_level,
             "[{\"role\":\"system\",\"content\":\"\",\"tools\":%s},{\"role\":\"user\",\"content\":\"u\"}]", tools);
    char *c = render_json(sys_level, NULL, NULL, 0);
    char *d = render_json("[{\"role\":\"user\",\"content\":\"u\"}]", tools, NULL, 0);
    assert_string_equal(c, d);
    /* response_format: only json_schema is attached */
    char *e = render_json("[{\"role\":\"user\",\"content\":\"u\"}]", NULL,
                          "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"n\",\"schema\":{}}}", 0);
    assert_string_equal(e, DSV4_TOK_BOS "\n\n## Response Format:\n\nYou MUST strictly adhere to the following schema "
                           "to reply:\n{\"type\": \"json_schema\", \"json_schema\": {\"name\": \"n\", \"schema\": {}}}"
                           DSV4_TOK_USER "u" DSV4_TOK_ASSISTANT DSV4_TOK_THINK_END);
    char *f = render_json("[{\"role\":\"user\",\"content\":\"u\"}]", NULL, "{\"type\":\"json_object\"}", 0);
    assert_string_equal(f, DSV4_TOK_BOS DSV4_TOK_USER "u" DSV4_TOK_ASSISTANT DSV4_TOK_THINK_END);
    /* content parts, vLLM's "reasoning", arguments given as an object, null content */
    char *g = render_json("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\","
                          "\"text\":\"b\"}]},{\"role\":\"assistant\",\"reasoning\":\"R\",\"content\":null,"
                          "\"tool_calls\":[{\"id\":\"1\",\"type\":\"function\",\"function\":{\"name\":\"f\","
                          "\"arguments\":{\"x\":1.5,\"y\":\"s\"}}}]}]",
                          tools, NULL, 1);
    assert_non_null(strstr(g, DSV4_TOK_USER "a\nb" DSV4_TOK_ASSISTANT DSV4_TOK_THINK "R" DSV4_TOK_THINK_END
                                            "\n\n<" DSV4_TOK_DSML "tool_calls>\n<" DSV4_TOK_DSML "invoke name=\"f\">\n<"
                              DSV4_TOK_DSML "parameter name=\"x\" string=\"false\">1.5</" DSV4_TOK_DSML "parameter>\n<"
                              DSV4_TOK_DSML "parameter name=\"y\" string=\"true\">s</" DSV4_TOK_DSML "parameter>"));
    free(a), free(b), free(c), free(d), free(e), free(f), free(g);
}

static void test_no_generation_prompt_no_bos(void **state)
{
    (void)state;
    dsv4_chat_message m[2] = {{.role = DSV4_CHAT_SYSTEM, .content = "S"}, {.role = DSV4_CHAT_USER, .content = "u"}};
    dsv4_chat_opts o;
    dsv4_chat_opts_default(&o);
    o.thinking = 1;
    o.add_generation_prompt = 0;
    o.add_bos = 0;
    dsv4_chat_prompt p;
    char err[128];
    assert_int_equal(dsv4_chat_render(m, 2, &o, &p, err, sizeof err), DSV4_OK);
    assert_string_equal(dsv4_chat_prompt_flatten(&p, NULL), "S" DSV4_TOK_USER "u");
    dsv4_chat_prompt_free(&p);
}

static void expect_refused(const char *messages, const char *needle)
{
    json_t *m = json_loads(messages, 0, NULL);
    assert_non_null(m);
    dsv4_chat_conv conv;
    char err[256] = "";
    dsv4_status st = dsv4_chat_conv_from_json(m, NULL, NULL, &conv, err, sizeof err);
    if (st == DSV4_OK) {
        dsv4_chat_opts o;
        dsv4_chat_opts_default(&o);
        dsv4_chat_prompt p;
        st = dsv4_chat_render(conv.messages, conv.n_messages, &o, &p, err, sizeof err);
        if (st == DSV4_OK)
            dsv4_chat_prompt_free(&p);
        dsv4_chat_conv_free(&conv);
    }
    json_decref(m);
    if (st == DSV4_OK)
        fail_msg("accepted: %s", messages);
    if (!strstr(err, needle))
        fail_msg("message \"%s\" does not mention \"%s\"", err, needle);
}

static void test_refusals(void **state)
{
    (void)state;
    expect_refused("[{\"role\":\"wizard\",\"content\":\"x\"}]", "messages[0].role");
    expect_refused("[{\"content\":\"x\"}]", "messages[0].role");
    expect_refused("[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"developer\",\"content\":\"\"}]",
                   "messages[1]: a developer message needs content");
    expect_refused("[{\"role\":\"system\",\"content\":\"x\",\"tools\":[{\"type\":\"function\"}]}]",
                   "messages[0].tools[0]");
    expect_refused("[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":[{\"function\":"
                   "{\"name\":\"f\",\"arguments\":\"[1,2]\"}}]}]",
                   "messages[1].tool_calls[0]: tool call arguments must be a JSON object");
    expect_refused("[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"arguments\":\"{}\"}}]}]",
                   "messages[0].tool_calls[0]");
    expect_refused("[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{}}]}]",
                   "only text parts");
    expect_refused("[{\"role\":\"user\",\"content\":\"x\",\"task\":\"dance\"}]", "messages[0].task");
    expect_refused("[{\"role\":\"user\",\"content\":7}]", "messages[0].content");
    dsv4_reasoning_effort e;
    char err[128];
    assert_int_equal(dsv4_chat_effort_parse("extreme", &e, err, sizeof err), DSV4_ERR_INVALID);
    assert_int_equal(dsv4_chat_effort_parse("xhigh", &e, err, sizeof err), DSV4_OK);
    assert_int_equal(e, DSV4_EFFORT_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_official_prompts),       cmocka_unit_test(test_user_specials_stay_text),
        cmocka_unit_test(test_python_float_repr),      cmocka_unit_test(test_python_json_dumps),
        cmocka_unit_test(test_request_level_tools),    cmocka_unit_test(test_no_generation_prompt_no_bos),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
