/*
 * test_chat_parse.c - the streaming output parser against DeepSeek's official
 * parse_message_from_completion_text.
 *
 * tests/text/chat/parse_cases.json holds model outputs and what the official
 * parser reads from them (tools/make_chat_fixtures.py). Each output, with and
 * without its final EOS, is fed split at every byte position, one byte at a
 * time, and in random pieces; every way must give exactly the official
 * reasoning, content and tool calls. Then: text is emitted as early as the
 * markers allow, and output that is not well formed is passed on as content.
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

typedef struct {
    dsv4_strbuf reasoning, content, calls; /* calls: "name\x01args\x02" per call */
    int n_begin, n_end, order_ok;
} collected;

static void on_event(void *user, const dsv4_chat_event *ev)
{
    collected *c = user;
    switch (ev->kind) {
    case DSV4_CHAT_EV_REASONING:
        dsv4_strbuf_put(&c->reasoning, ev->text, ev->len);
        break;
    case DSV4_CHAT_EV_CONTENT:
        dsv4_strbuf_put(&c->content, ev->text, ev->len);
        break;
    case DSV4_CHAT_EV_TOOL_BEGIN:
        if (ev->index != c->n_begin || c->n_begin != c->n_end)
            c->order_ok = 0;
        c->n_begin++;
        break;
    case DSV4_CHAT_EV_TOOL_END:
        if (ev->index != c->n_end || c->n_begin != c->n_end + 1)
            c->order_ok = 0;
        c->n_end++;
        dsv4_strbuf_put(&c->calls, ev->name, strlen(ev->name));
        dsv4_strbuf_put(&c->calls, "\x01", 1);
        dsv4_strbuf_put(&c->calls, ev->text, ev->len);
        dsv4_strbuf_put(&c->calls, "\x02", 1);
        break;
    }
}

static void collected_free(collected *c)
{
    dsv4_strbuf_free(&c->reasoning);
    dsv4_strbuf_free(&c->content);
    dsv4_strbuf_free(&c->calls);
}

static const char *str(const dsv4_strbuf *b) { return b->p ? b->p : ""; }

/* Feeds text cut at the given positions (ascending, within (0, n)). */
static void run_split(int thinking, const char *text, size_t n, const size_t *cuts, int n_cuts, collected *c,
                      int *malformed)
{
    memset(c, 0, sizeof *c);
    c->order_ok = 1;
    dsv4_chat_parser *p;
    assert_int_equal(dsv4_chat_parser_create(thinking, on_event, c, &p), DSV4_OK);
    size_t at = 0;
    for (int i = 0; i <= n_cuts; i++) {
        size_t to = i < n_cuts ? cuts[i] : n;
        assert_int_equal(dsv4_chat_parser_feed(p, text + at, to - at), DSV4_OK);
        at = to;
    }
    assert_int_equal(dsv4_chat_parser_finish(p), DSV4_OK);
    if (malformed)
        *malformed = dsv4_chat_parser_malformed(p, NULL);
    dsv4_chat_parser_free(p);
}


static void check_same(const char *what, size_t split, const collected *want, const collected *got)
{
    if (strcmp(str(&want->reasoning), str(&got->reasoning)) || strcmp(str(&want->content), str(&got->content)) ||
        strcmp(str(&want->calls), str(&got->calls)) || !got->order_ok || got->n_begin != want->n_begin)
        fail_msg("%s (split %zu): got reasoning [%s] content [%s] calls [%s], expected [%s] [%s] [%s]", what, split,
                 str(&got->reasoning), str(&got->content), str(&got->calls), str(&want->reasoning),
                 str(&want->content), str(&want->calls));
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Every split of text must give want; returns nothing, fails on the first difference. */
static void check_all_splits(const char *name, int thinking, const char *text, size_t n, const collected *want,
                             int want_malformed)
{
    collected got;
    int mal;
    for (size_t s = 0; s <= n; s++) {
        size_t cut[1] = {s};
        run_split(thinking, text, n, cut, s > 0 && s < n, &got, &mal);
        check_same(name, s, want, &got);
        if (mal != want_malformed)
            fail_msg("%s (split %zu): malformed = %d", name, s, mal);
        collected_free(&got);
    }
    size_t *cuts = malloc((n + 1) * sizeof *cuts);
    for (size_t i = 1; i < n; i++)
        cuts[i - 1] = i;
    run_split(thinking, text, n, cuts, n > 1 ? (int)n - 1 : 0, &got, &mal);
    check_same(name, (size_t)-1, want, &got);
    collected_free(&got);
    for (int trial = 0; trial < 200; trial++) {
        int k = 0;
        for (size_t i = 1; i < n; i++)
            if (rnd() % 7 == 0)
                cuts[k++] = i;
        run_split(thinking, text, n, cuts, k, &got, &mal);
        check_same(name, (size_t)trial, want, &got);
        collected_free(&got);
    }
    free(cuts);
}

static void test_official_outputs_every_split(void **state)
{
    (void)state;
    char *text = tu_slurp_src("tests/text/chat/parse_cases.json", NULL);
    assert_non_null(text);
    json_error_t je;
    json_t *cases = json_loads(text, 0, &je);
    free(text);
    assert_non_null(cases);
    assert_true(json_array_size(cases) >= 10);
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        int thinking = json_is_true(json_object_get(c, "thinking"));
        const char *out = json_string_value(json_object_get(c, "text"));
        collected want;
        memset(&want, 0, sizeof want);
        dsv4_strbuf_put(&want.reasoning, "", 0);
        dsv4_strbuf_put(&want.reasoning, json_string_value(json_object_get(c, "reasoning_content")),
                        strlen(json_string_value(json_object_get(c, "reasoning_content"))));
        dsv4_strbuf_put(&want.content, json_string_value(json_object_get(c, "content")),
                        strlen(json_string_value(json_object_get(c, "content"))));
        size_t k;
        json_t *tc;
        json_array_foreach(json_object_get(c, "tool_calls"), k, tc) {
            const char *tn = json_string_value(json_object_get(tc, "name"));
            const char *ta = json_string_value(json_object_get(tc, "arguments"));
            dsv4_strbuf_put(&want.calls, tn, strlen(tn));
            dsv4_strbuf_put(&want.calls, "\x01", 1);
            dsv4_strbuf_put(&want.calls, ta, strlen(ta));
            dsv4_strbuf_put(&want.calls, "\x02", 1);
            want.n_begin++;
        }
        size_t n = strlen(out);
        check_all_splits(name, thinking, out, n, &want, 0);
        /* A detokenizer that skips special tokens never shows the EOS. */
        size_t eos = strlen(DSV4_TOK_EOS);
        assert_true(n >= eos && !strcmp(out + n - eos, DSV4_TOK_EOS));
        check_all_splits(name, thinking, out, n - eos, &want, 0);
        collected_free(&want);
    }
    json_decref(cases);
}

/* Feeds pieces one after another; after each, the text emitted so far must be exactly expect[i]. */
static void check_progress(int thinking, const char *const *pieces, const char *const *expect, int n)
{
    collected c;
    memset(&c, 0, sizeof c);
    dsv4_chat_parser *p;
    assert_int_equal(dsv4_chat_parser_create(thinking, on_event, &c, &p), DSV4_OK);
    for (int i = 0; i < n; i++) {
        assert_int_equal(dsv4_chat_parser_feed(p, pieces[i], strlen(pieces[i])), DSV4_OK);
        const char *got = thinking ? str(&c.reasoning) : str(&c.content);
        if (strcmp(got, expect[i]))
            fail_msg("after piece %d (\"%s\"): emitted \"%s\", expected \"%s\"", i, pieces[i], got, expect[i]);
    }
    dsv4_chat_parser_free(p);
    collected_free(&c);
}

static void test_emits_early(void **state)
{
    (void)state;
    {
        const char *pieces[] = {"Hello wor", "ld <", "b> and <", "｜", "DSML", " no", "\n", "\n", "x", "\n\n<｜DS"};
        const char *expect[] = {"Hello wor", "Hello world ", "Hello world <b> and ", "Hello world <b> and ",
                                "Hello world <b> and ", "Hello world <b> and <｜DSML no",
                                "Hello world <b> and <｜DSML no", "Hello world <b> and <｜DSML no",
                                "Hello world <b> and <｜DSML no\n\nx", "Hello world <b> and <｜DSML no\n\nx"};
        check_progress(0, pieces, expect, 10);
    }
    {
        /* three newlines: the first cannot be part of "\n\n<｜DSML｜tool_calls" */
        const char *pieces[] = {"a\n", "\n", "\n", "b"};
        const char *expect[] = {"a", "a", "a\n", "a\n\n\nb"};
        check_progress(0, pieces, expect, 4);
    }
    {
        const char *pieces[] = {"think", "ing </th", "ink", "x", "</", "think>"};
        const char *expect[] = {"think", "thinking ", "thinking ", "thinking </thinkx", "thinking </thinkx",
                                "thinking </thinkx"};
        check_progress(1, pieces, expect, 6);
    }
    {
        /* an EOS prefix is held back, a broken one released */
        const char *pieces[] = {"done<｜end", "less"};
        const char *expect[] = {"done", "done<｜endless"};
        check_progress(0, pieces, expect, 2);
    }
}

/* n_begin: tool calls begun; a begun call without an end is void (the output was malformed). */
static void check_malformed(int thinking, const char *text, const char *want_content, const char *want_calls,
                            int n_begin)
{
    collected want;
    memset(&want, 0, sizeof want);
    want.n_begin = n_begin;
    dsv4_strbuf_put(&want.content, want_content, strlen(want_content));
    dsv4_strbuf_put(&want.calls, want_calls, strlen(want_calls));
    dsv4_strbuf_put(&want.reasoning, "", 0);
    check_all_splits("malformed", thinking, text, strlen(text), &want, 1);
    collected_free(&want);
}

static void test_malformed_becomes_content(void **state)
{
    (void)state;
    /* bad parameter tag: the whole block is passed on as content */
    check_malformed(0,
                    "Sure.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter nme=\"x\">1</"
                    "｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
                    "Sure.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter nme=\"x\">1</"
                    "｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
                    "", 1);
    /* cut off after one complete call: that call stands, the rest is content */
    check_malformed(0,
                    "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"x\" "
                    "string=\"false\">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"g\">\n<｜DSML｜par",
                    ">\n<｜DSML｜invoke name=\"g\">\n<｜DSML｜par", "f\x01{\"x\": 1}\x02", 1);
    /* a repeated parameter name */
    check_malformed(0,
                    "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"x\" "
                    "string=\"true\">a</｜DSML｜parameter>\n<｜DSML｜parameter name=\"x\" string=\"true\">b</｜DSML｜"
                    "parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
                    "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"x\" "
                    "string=\"true\">a</｜DSML｜parameter>\n<｜DSML｜parameter name=\"x\" string=\"true\">b</｜DSML｜"
                    "parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
                    "", 1);
}

static void test_lenient_forms(void **state)
{
    (void)state;
    /* thinking output that never closes its reasoning: all of it is reasoning */
    collected c;
    int mal;
    const char *t = "still thinking<｜end▁of▁sentence｜>ignored";
    run_split(1, t, strlen(t), NULL, 0, &c, &mal);
    assert_string_equal(str(&c.reasoning), "still thinking");
    assert_string_equal(str(&c.content), "");
    collected_free(&c);
    /* text after a tool-call block is content again; a second block is read too */
    const char *u = "A\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>B"
                    "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"g\">\n<｜DSML｜parameter name=\"k\" string=\"true\">v"
                    "\"q</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
    collected want;
    memset(&want, 0, sizeof want);
    dsv4_strbuf_put(&want.reasoning, "", 0);
    dsv4_strbuf_put(&want.content, "AB", 2);
    const char *calls = "f\x01{}\x02g\x01{\"k\": \"v\\\"q\"}\x02";
    dsv4_strbuf_put(&want.calls, calls, strlen(calls));
    want.n_begin = 2;
    check_all_splits("two blocks", 0, u, strlen(u), &want, 0);
    collected_free(&want);
}

/* Random strings of marker fragments, well formed or not: every split gives what
 * feeding the whole string at once gives (events, malformed flag, begun calls). */
static void test_random_fragments_split_invariant(void **state)
{
    (void)state;
    static const char *const frag[] = {
        "a", "xy ", "\n", "\n\n", "<", ">", "/", "\"", "｜", "｜DSML｜", "tool_calls", "invoke", "parameter",
        " name=\"", " string=\"true\">", " string=\"false\">", DSV4_TOK_THINK_END, DSV4_TOK_EOS, "<｜end",
        "\n\n<｜DSML｜tool_calls>\n", "<｜DSML｜invoke name=\"f\">\n", "<｜DSML｜parameter name=\"k\" string=\"true\">",
        "<｜DSML｜parameter name=\"n\" string=\"false\">", "</｜DSML｜parameter>\n", "</｜DSML｜invoke>\n",
        "</｜DSML｜tool_calls>", "1", "北",
    };
    const int n_frag = (int)(sizeof frag / sizeof frag[0]);
    char text[2048];
    for (int trial = 0; trial < 300; trial++) {
        size_t n = 0;
        int len = 3 + (int)(rnd() % 24);
        for (int i = 0; i < len; i++) {
            const char *f = frag[rnd() % (uint64_t)n_frag];
            memcpy(text + n, f, strlen(f));
            n += strlen(f);
        }
        text[n] = 0;
        for (int thinking = 0; thinking < 2; thinking++) {
            collected want;
            int want_mal;
            run_split(thinking, text, n, NULL, 0, &want, &want_mal);
            check_all_splits("random", thinking, text, n, &want, want_mal);
            collected_free(&want);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_official_outputs_every_split),
        cmocka_unit_test(test_emits_early),
        cmocka_unit_test(test_malformed_becomes_content),
        cmocka_unit_test(test_lenient_forms),
        cmocka_unit_test(test_random_fragments_split_invariant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
