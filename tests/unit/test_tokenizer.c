/*
 * test_tokenizer.c - the tokenizer against HF `tokenizers`, beyond the corpus:
 *   - DeepSeek-V3's special tokens and vocabulary size;
 *   - eleven variants of a small HF-trained BPE (tests/text/variants/, made by
 *     tools/make_tokenizer_fixtures.py): other Split behaviours, Digits,
 *     ByteLevel's own regex and prefix space, Oniguruma-only regex syntax,
 *     added tokens with lstrip/rstrip/single_word/normalized, ignore_merges,
 *     "a b" merges; every case must give HF's ids and HF's decode;
 *   - the regex layer: Oniguruma's Unicode classes (sizes from the generated
 *     tables), its find_iter on empty matches, its anchors and escapes;
 *   - refusals with a message naming the cause; invalid UTF-8; threads.
 */
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include <pthread.h>
#include <unistd.h>

#include "dsv4.h"
#include "text/regex.h"
#include "text/tokenizer.h"
#include "text/unicode_tables.h"

static const char *src_dir(void)
{
    const char *s = getenv("DSV4_SRC");
    return s ? s : ".";
}

static dsv4_tokenizer *open_v3(void)
{
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/../shared/data/deepseek-v3-tokenizer/tokenizer.json", src_dir());
    dsv4_tokenizer *t;
    if (dsv4_tokenizer_open(path, &t, err, sizeof err) != DSV4_OK) fail_msg("%s", err);
    return t;
}

static void test_v3_specials(void **state)
{
    dsv4_tokenizer *t = open_v3();
    assert_int_equal(dsv4_tokenizer_vocab_size(t), 128815);
    assert_int_equal(dsv4_token_id(t, "<｜begin▁of▁sentence｜>"), 0);
    assert_int_equal(dsv4_token_id(t, "<｜end▁of▁sentence｜>"), 1);
    assert_int_equal(dsv4_token_id(t, "<｜User｜>"), 128803);
    assert_int_equal(dsv4_token_id(t, "<｜Assistant｜>"), 128804);
    assert_int_equal(dsv4_token_id(t, "<think>"), -1); /* a V4 addition */
    assert_int_equal(dsv4_token_id(t, "Ġthe"), 270);   /* model vocabulary */
    assert_true(dsv4_token_is_special(t, 0));
    assert_false(dsv4_token_is_special(t, 128803)); /* V3 marks the chat tokens not special */
    assert_false(dsv4_token_is_special(t, 270));

    char err[256];
    int32_t *ids;
    size_t n;
    const char *s = "a<｜User｜>b";
    assert_int_equal(dsv4_tokenize(t, s, strlen(s), true, &ids, &n, err, sizeof err), DSV4_OK);
    assert_int_equal(n, 3);
    assert_int_equal(ids[1], 128803);
    free(ids);
    /* parse_special = false: the same characters as plain text */
    assert_int_equal(dsv4_tokenize(t, s, strlen(s), false, &ids, &n, err, sizeof err), DSV4_OK);
    assert_true(n > 3);
    for (size_t i = 0; i < n; i++) assert_true(ids[i] < 128000);
    char *text;
    size_t len;
    assert_int_equal(dsv4_detokenize(t, ids, n, &text, &len, err, sizeof err), DSV4_OK);
    assert_int_equal(len, strlen(s));
    assert_memory_equal(text, s, len);
    free(text);
    free(ids);
    /* empty text: no ids, non-NULL array */
    assert_int_equal(dsv4_tokenize(t, "", 0, true, &ids, &n, err, sizeof err), DSV4_OK);
    assert_int_equal(n, 0);
    assert_non_null(ids);
    free(ids);
    dsv4_tokenizer_close(t);
}

static void test_invalid_utf8(void **state)
{
    dsv4_tokenizer *t = open_v3();
    char err[256];
    int32_t *ids;
    size_t n;
    static const char *bad[] = {"ab\xC3", "\xC0\x80", "x\xED\xA0\x80", "\xF4\x90\x80\x80", "\xFF"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(dsv4_tokenize(t, bad[i], strlen(bad[i]), true, &ids, &n, err, sizeof err), DSV4_ERR_INVALID);
        assert_non_null(strstr(err, "not valid UTF-8"));
    }
    /* NUL is a character like any other */
    assert_int_equal(dsv4_tokenize(t, "a\0b", 3, true, &ids, &n, err, sizeof err), DSV4_OK);
    char *text;
    size_t len;
    assert_int_equal(dsv4_detokenize(t, ids, n, &text, &len, err, sizeof err), DSV4_OK);
    assert_int_equal(len, 3);
    assert_memory_equal(text, "a\0b", 3);
    free(text);
    free(ids);
    dsv4_tokenizer_close(t);
}

/* ------------------------------------------------------------------------ */

static char *write_temp(const char *content, size_t len)
{
    char *path = strdup("/tmp/dsv4_test_tok_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, len), (ssize_t)len);
    close(fd);
    return path;
}

static void test_variants(void **state)
{
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/tests/text/variants/base.json", src_dir());
    json_error_t je;
    json_t *base = json_load_file(path, 0, &je);
    assert_non_null(base);
    snprintf(path, sizeof path, "%s/tests/text/variants/variants.json", src_dir());
    json_t *vars = json_load_file(path, 0, &je);
    if (!vars) fail_msg("variants.json: %s", je.text);
    size_t vi;
    json_t *v;
    int n_cases = 0;
    json_array_foreach(vars, vi, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        json_t *d = json_deep_copy(base);
        json_t *patch = json_object_get(v, "patch");
        const char *key;
        json_t *val;
        json_object_foreach(patch, key, val)
        {
            if (!strcmp(key, "model")) json_object_update(json_object_get(d, "model"), val);
            else json_object_set(d, key, val);
        }
        json_t *model = json_object_get(d, "model");
        json_t *merges = json_object_get(model, "merges");
        if (json_is_string(merges)) { /* "as strings": the pairs of base.json as "#version" + "a b" */
            json_t *pairs = json_object_get(json_object_get(base, "model"), "merges"), *strs = json_array();
            json_array_append_new(strs, json_string("#version: 0.2"));
            size_t i;
            json_t *p;
            json_array_foreach(pairs, i, p)
            {
                json_t *a = json_array_get(p, 0), *b = json_array_get(p, 1);
                size_t la = json_string_length(a), lb = json_string_length(b);
                char *buf = malloc(la + lb + 2);
                memcpy(buf, json_string_value(a), la);
                buf[la] = ' ';
                memcpy(buf + la + 1, json_string_value(b), lb + 1);
                json_array_append_new(strs, json_string(buf));
                free(buf);
            }
            json_object_set_new(model, "merges", strs);
        }
        char *text = json_dumps(d, 0);
        char *tmp = write_temp(text, strlen(text));
        free(text);
        json_decref(d);
        dsv4_tokenizer *t;
        if (dsv4_tokenizer_open(tmp, &t, err, sizeof err) != DSV4_OK) fail_msg("%s: %s", name, err);
        unlink(tmp);
        free(tmp);
        size_t ci;
        json_t *c;
        json_array_foreach(json_object_get(v, "cases"), ci, c)
        {
            json_t *jt = json_object_get(c, "text"), *jids = json_object_get(c, "ids");
            json_t *jdec = json_object_get(c, "decoded");
            int32_t *ids;
            size_t n;
            if (dsv4_tokenize(t, json_string_value(jt), json_string_length(jt), true, &ids, &n, err, sizeof err))
                fail_msg("%s case %zu: %s", name, ci, err);
            int same = n == json_array_size(jids);
            for (size_t i = 0; same && i < n; i++) same = ids[i] == json_integer_value(json_array_get(jids, i));
            if (!same) {
                char *want = json_dumps(jids, JSON_COMPACT);
                fprintf(stderr, "%s case %zu: %s\n  want %s\n  got ", name, ci, json_string_value(jt), want);
                for (size_t i = 0; i < n; i++) fprintf(stderr, "%d,", ids[i]);
                fprintf(stderr, "\n");
                free(want);
                fail_msg("%s case %zu: ids differ from HF", name, ci);
            }
            char *back;
            size_t bl;
            assert_int_equal(dsv4_detokenize(t, ids, n, &back, &bl, err, sizeof err), DSV4_OK);
            const json_t *want = jdec ? jdec : jt;
            if (bl != json_string_length(want) || memcmp(back, json_string_value(want), bl))
                fail_msg("%s case %zu: decode differs from HF", name, ci);
            free(back);
            free(ids);
            n_cases++;
        }
        dsv4_tokenizer_close(t);
    }
    assert_true(n_cases >= 11 * 40);
    json_decref(vars);
    json_decref(base);
}

/* ------------------------------------------------------------------------ */

static size_t utf8_put(uint32_t cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static long count_matches(const char *pattern, const char *subject, size_t len)
{
    char err[256];
    dsv4_re *re;
    if (dsv4_re_compile(pattern, strlen(pattern), 0, &re, err, sizeof err)) fail_msg("%s: %s", pattern, err);
    dsv4_re_scratch *s = dsv4_re_scratch_create();
    dsv4_re_span *sp = NULL;
    size_t cap = 0;
    long m = dsv4_re_find_all(re, s, subject, len, &sp, &cap, err, sizeof err);
    free(sp);
    dsv4_re_scratch_free(s);
    dsv4_re_free(re);
    return m;
}

/* Every Unicode class the tables rewrite matches exactly as many code points
 * as Oniguruma's (counted by HF when the tables were made). */
static void test_unicode_classes(void **state)
{
    char *all = malloc(4 * 0x110000);
    size_t len = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++)
        if (cp < 0xD800 || cp >= 0xE000) len += utf8_put(cp, all + len);
    for (size_t r = 0; r < sizeof TEXT_UPROPS / sizeof TEXT_UPROPS[0]; r++) {
        char pat[64];
        const char *name = TEXT_UPROPS[r].names;
        const char *bar = strchr(name, '|');
        snprintf(pat, sizeof pat, "\\p{%.*s}", (int)(bar ? (size_t)(bar - name) : strlen(name)), name);
        long m = count_matches(pat, all, len);
        if (m != TEXT_UPROPS[r].n_onig) fail_msg("%s: %ld code points, Oniguruma %d", pat, m, TEXT_UPROPS[r].n_onig);
    }
    assert_int_equal(count_matches("\\s", all, len), TEXT_N_SPACE);
    assert_int_equal(count_matches("\\d", all, len), TEXT_N_DIGIT);
    assert_int_equal(count_matches("\\w", all, len), TEXT_N_WORD);
    assert_int_equal(count_matches("[\\s]", all, len), TEXT_N_SPACE);
    assert_int_equal(count_matches("\\S", all, len), 0x110000 - 0x800 - TEXT_N_SPACE);
    assert_int_equal(count_matches("[^\\S]", all, len), TEXT_N_SPACE);
    assert_int_equal(count_matches("[a\\S]", all, len), 0x110000 - 0x800 - TEXT_N_SPACE);
    free(all);
}

typedef struct {
    size_t start, end;
} span;

static void expect_spans(const char *pattern, const char *subject, const span *want, int n_want)
{
    char err[256];
    dsv4_re *re;
    if (dsv4_re_compile(pattern, strlen(pattern), 0, &re, err, sizeof err)) fail_msg("%s: %s", pattern, err);
    dsv4_re_scratch *s = dsv4_re_scratch_create();
    dsv4_re_span *sp = NULL;
    size_t cap = 0;
    long m = dsv4_re_find_all(re, s, subject, strlen(subject), &sp, &cap, err, sizeof err);
    if (m != n_want) fail_msg("/%s/ on '%s': %ld matches, want %d (PCRE2: %s)", pattern, subject, m, n_want,
                              dsv4_re_rewritten(re));
    for (int i = 0; i < n_want; i++) {
        if (sp[i].start != want[i].start || sp[i].end != want[i].end)
            fail_msg("/%s/ on '%s': match %d is [%zu, %zu), want [%zu, %zu)", pattern, subject, i, sp[i].start,
                     sp[i].end, want[i].start, want[i].end);
    }
    free(sp);
    dsv4_re_scratch_free(s);
    dsv4_re_free(re);
}

/* Oniguruma semantics, each checked against HF when this test was written. */
static void test_regex_semantics(void **state)
{
    /* find_iter: an empty match right after a match is skipped */
    expect_spans("x*", "abxc", (span[]){{0, 0}, {1, 1}, {2, 3}, {4, 4}}, 4);
    /* \h is a hex digit */
    expect_spans("\\h+", "agF9 ", (span[]){{0, 1}, {2, 4}}, 2);
    /* $ and ^ are line anchors */
    expect_spans("\\s+$", "a  \nb  \n  ", (span[]){{1, 3}, {5, 10}}, 2);
    expect_spans("^a", "a\na\n", (span[]){{0, 1}, {2, 3}}, 2);
    /* (?m) is dot-all; . stops at \n only */
    expect_spans("(?m)a.b", "a\nb", (span[]){{0, 3}}, 1);
    expect_spans("a.b", "a\nb a\rb", (span[]){{4, 7}}, 1);
    /* \uHHHH, \p{^L}, long property names */
    expect_spans("\\u0041", "xAx", (span[]){{1, 2}}, 1);
    expect_spans("\\p{^L}+", "ab12cd", (span[]){{2, 4}}, 1);
    expect_spans("\\p{Letter}+", "ab12", (span[]){{0, 2}}, 1);
    /* U+180E is not \s for Oniguruma (it is for PCRE2) */
    expect_spans("\\s", "a\xE1\xA0\x8E b", (span[]){{4, 5}}, 1);
    /* a letter from Unicode 15 (CJK Ext. H) */
    expect_spans("\\p{L}+", "a\xF0\xB1\x8D\x90" "b", (span[]){{0, 6}}, 1);
    /* '-' after an expanded class escape stays literal */
    expect_spans("[\\d-]+", "a1-2b", (span[]){{1, 4}}, 1);

    char err[256];
    dsv4_re *re;
    assert_int_equal(dsv4_re_compile("[a[bc]]", 7, 0, &re, err, sizeof err), DSV4_ERR_UNSUPPORTED);
    assert_non_null(strstr(err, "nested"));
    assert_int_equal(dsv4_re_compile("[a-z&&[^c]]", 11, 0, &re, err, sizeof err), DSV4_ERR_UNSUPPORTED);
    assert_non_null(strstr(err, "intersection"));
    assert_int_equal(dsv4_re_compile("(a", 2, 0, &re, err, sizeof err), DSV4_ERR_FORMAT);
    /* literal patterns match their text, metacharacters included */
    assert_int_equal(dsv4_re_compile("a.b", 3, 1, &re, err, sizeof err), DSV4_OK);
    dsv4_re_scratch *s = dsv4_re_scratch_create();
    dsv4_re_span *sp = NULL;
    size_t cap = 0;
    assert_int_equal(dsv4_re_find_all(re, s, "axb a.b", 7, &sp, &cap, err, sizeof err), 1);
    assert_int_equal(sp[0].start, 4);
    free(sp);
    dsv4_re_scratch_free(s);
    dsv4_re_free(re);
}

/* ------------------------------------------------------------------------ */

static void expect_refused(const char *json, dsv4_status want, const char *needle)
{
    char *tmp = write_temp(json, strlen(json));
    char err[512];
    dsv4_tokenizer *t = NULL;
    dsv4_status st = dsv4_tokenizer_open(tmp, &t, err, sizeof err);
    unlink(tmp);
    if (st != want || !strstr(err, needle))
        fail_msg("want status %d and '%s', got %d: %s", want, needle, st, st ? err : "(opened)");
    assert_null(t);
    assert_non_null(strstr(err, tmp)); /* messages name the file */
    free(tmp);
}

#define BL "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true},"
#define DEC "\"decoder\":{\"type\":\"ByteLevel\"},"
#define MODEL "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]}"

static void test_refusals(void **state)
{
    char err[512];
    dsv4_tokenizer *t;
    assert_int_equal(dsv4_tokenizer_open("/nonexistent/tokenizer.json", &t, err, sizeof err), DSV4_ERR_IO);
    assert_non_null(strstr(err, "cannot open"));
    expect_refused("{\"model\": ", DSV4_ERR_FORMAT, "malformed JSON");
    expect_refused("[]", DSV4_ERR_FORMAT, "not a JSON object");
    expect_refused("{\"normalizer\":{\"type\":\"NFC\"}," BL DEC MODEL "}", DSV4_ERR_UNSUPPORTED, "normalizer 'NFC'");
    expect_refused("{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Lowercase\"}]}," BL DEC MODEL "}",
                   DSV4_ERR_UNSUPPORTED, "'Lowercase'");
    expect_refused("{\"pre_tokenizer\":{\"type\":\"Whitespace\"}," DEC MODEL "}", DSV4_ERR_UNSUPPORTED, "'Whitespace'");
    expect_refused("{\"pre_tokenizer\":null," DEC MODEL "}", DSV4_ERR_UNSUPPORTED, "ByteLevel");
    expect_refused("{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"ByteLevel\"},"
                   "{\"type\":\"Digits\"}]}," DEC MODEL "}",
                   DSV4_ERR_UNSUPPORTED, "ByteLevel must come last");
    expect_refused("{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Isolated\"},"
                   DEC MODEL "}",
                   DSV4_ERR_UNSUPPORTED, "no ByteLevel stage");
    expect_refused("{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":"
                   "{\"Regex\":\"(a\"},\"behavior\":\"Isolated\"},{\"type\":\"ByteLevel\"}]}," DEC MODEL "}",
                   DSV4_ERR_FORMAT, "regex /(a/");
    expect_refused("{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":"
                   "{\"Regex\":\"a\"},\"behavior\":\"Sideways\"},{\"type\":\"ByteLevel\"}]}," DEC MODEL "}",
                   DSV4_ERR_FORMAT, "behavior 'Sideways'");
    expect_refused("{" BL "\"decoder\":{\"type\":\"WordPiece\"}," MODEL "}", DSV4_ERR_UNSUPPORTED, "decoder 'WordPiece'");
    expect_refused("{" BL DEC "\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}", DSV4_ERR_UNSUPPORTED, "'WordPiece'");
    expect_refused("{" BL DEC "\"model\":{\"vocab\":{\"a\":0},\"merges\":[],\"byte_fallback\":true}}",
                   DSV4_ERR_UNSUPPORTED, "byte_fallback");
    expect_refused("{" BL DEC "\"model\":{\"vocab\":{\"a\":-3},\"merges\":[]}}", DSV4_ERR_FORMAT, "model.vocab['a']");
    expect_refused("{" BL DEC "\"model\":{\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"a c\"]}}", DSV4_ERR_FORMAT,
                   "merges[0]: 'c' is not in model.vocab");
    expect_refused("{" BL DEC "\"model\":{\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"a b\"]}}", DSV4_ERR_FORMAT,
                   "merged token 'ab'");
    expect_refused("{" BL DEC "\"model\":{\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"a b c\"]}}", DSV4_ERR_FORMAT,
                   "not two tokens");
    expect_refused("{" BL DEC "\"model\":{\"vocab\":{\"a\":0},\"merges\":[7]}}", DSV4_ERR_FORMAT, "merges[0]");
    expect_refused("{" BL DEC MODEL ",\"added_tokens\":[{\"id\":5}]}", DSV4_ERR_FORMAT, "added_tokens[0]");
}

/* ------------------------------------------------------------------------ */

typedef struct {
    dsv4_tokenizer *t;
    const char *text;
    int32_t *ids;
    size_t n;
    int ok;
} thread_job;

static void *tokenize_many(void *arg)
{
    thread_job *j = arg;
    char err[256];
    j->ok = 1;
    for (int r = 0; r < 50; r++) {
        int32_t *ids;
        size_t n;
        if (dsv4_tokenize(j->t, j->text, strlen(j->text), true, &ids, &n, err, sizeof err)) {
            j->ok = 0;
            return NULL;
        }
        if (r == 0) {
            j->ids = ids;
            j->n = n;
        } else {
            if (n != j->n || memcmp(ids, j->ids, n * sizeof *ids)) j->ok = 0;
            free(ids);
        }
    }
    return NULL;
}

/* Threads share one tokenizer (and its cache) and get the same ids. */
static void test_threads(void **state)
{
    dsv4_tokenizer *t = open_v3();
    const char *texts[4] = {"Hello world, 12345 漢字 <｜User｜>", "The quick brown fox jumps over the lazy dog.",
                            "def f(x):\n    return x ** 2\n", "Съешь же ещё этих мягких французских булок"};
    thread_job jobs[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        jobs[i] = (thread_job){t, texts[i % 4], NULL, 0, 0};
        pthread_create(&th[i], NULL, tokenize_many, &jobs[i]);
    }
    for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 8; i++) {
        assert_true(jobs[i].ok);
        if (i >= 4) {
            assert_int_equal(jobs[i].n, jobs[i - 4].n);
            assert_memory_equal(jobs[i].ids, jobs[i - 4].ids, jobs[i].n * sizeof(int32_t));
        }
    }
    for (int i = 0; i < 8; i++) free(jobs[i].ids);
    dsv4_tokenizer_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v3_specials),     cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_variants),        cmocka_unit_test(test_unicode_classes),
        cmocka_unit_test(test_regex_semantics), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
