/*
 * test_detok.c - streaming detokenisation: ids pushed one at a time give back
 * whole UTF-8 characters only, never lose one, and their concatenation is the
 * full decode (HF's decode: invalid UTF-8 -> U+FFFD per maximal ill-formed
 * subsequence, as Python's bytes.decode("utf-8", "replace")).
 *
 * Uses DeepSeek-V3's tokenizer (../shared/data/deepseek-v3-tokenizer) and the
 * committed corpus with its HF ids (tests/text/expected/v3).
 */
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dsv4.h"
#include "text/detok.h"
#include "text/tokenizer.h"

static dsv4_tokenizer *g_tok;

static const char *src_dir(void)
{
    const char *s = getenv("DSV4_SRC");
    return s ? s : ".";
}

static int setup(void **state)
{
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/../shared/data/deepseek-v3-tokenizer/tokenizer.json", src_dir());
    if (dsv4_tokenizer_open(path, &g_tok, err, sizeof err) != DSV4_OK) {
        fprintf(stderr, "cannot open the V3 tokenizer: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    dsv4_tokenizer_close(g_tok);
    return 0;
}

/* The id of the single-byte token for byte b (the GPT-2 byte-level character). */
static int32_t byte_token(uint8_t b)
{
    int n = 0, cp = -1;
    for (int x = 0; x < 256; x++) {
        int printable = (x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF);
        int c = printable ? x : 256 + n++;
        if (x == b) cp = c;
    }
    char s[4];
    if (cp < 0x80) {
        s[0] = (char)cp;
        s[1] = 0;
    } else {
        s[0] = (char)(0xC0 | cp >> 6);
        s[1] = (char)(0x80 | (cp & 0x3F));
        s[2] = 0;
    }
    int32_t id = dsv4_token_id(g_tok, s);
    assert_true(id >= 0);
    return id;
}

typedef struct {
    char buf[1 << 16];
    size_t len;
    int n_nonempty;
} stream_out;

/* Push ids one at a time; every piece must be whole valid UTF-8. */
static void stream(const int32_t *ids, size_t n, stream_out *o)
{
    char err[256];
    dsv4_detok *d;
    assert_int_equal(dsv4_detok_create(g_tok, &d, err, sizeof err), DSV4_OK);
    o->len = 0;
    o->n_nonempty = 0;
    for (size_t i = 0; i <= n; i++) {
        const char *p;
        size_t l;
        if (i < n) assert_int_equal(dsv4_detok_push(d, ids[i], &p, &l, err, sizeof err), DSV4_OK);
        else dsv4_detok_flush(d, &p, &l);
        assert_true(dsv4_utf8_valid(p, l, NULL));
        assert_true(o->len + l <= sizeof o->buf);
        memcpy(o->buf + o->len, p, l);
        o->len += l;
        o->n_nonempty += l > 0;
    }
    dsv4_detok_free(d);
}

static void tokenize(const char *s, int32_t **ids, size_t *n)
{
    char err[256];
    assert_int_equal(dsv4_tokenize(g_tok, s, strlen(s), true, ids, n, err, sizeof err), DSV4_OK);
}

/* A character split over several byte tokens comes out whole, once. */
static void test_multibyte_split(void **state)
{
    const char *cases[] = {"😀", "𝄞", "a𪚥b", "é", "漢字", "\xEF\xBF\xBD"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int32_t *ids;
        size_t n;
        tokenize(cases[c], &ids, &n);
        stream_out o;
        stream(ids, n, &o);
        assert_int_equal(o.len, strlen(cases[c]));
        assert_memory_equal(o.buf, cases[c], o.len);
        free(ids);
    }
    /* 😀 is four bytes: byte tokens give nothing until the fourth */
    int32_t ids[4] = {byte_token(0xF0), byte_token(0x9F), byte_token(0x98), byte_token(0x80)};
    char err[256];
    dsv4_detok *d;
    assert_int_equal(dsv4_detok_create(g_tok, &d, err, sizeof err), DSV4_OK);
    for (int i = 0; i < 4; i++) {
        const char *p;
        size_t l;
        assert_int_equal(dsv4_detok_push(d, ids[i], &p, &l, err, sizeof err), DSV4_OK);
        if (i < 3) {
            assert_int_equal(l, 0);
        } else {
            assert_int_equal(l, 4);
            assert_memory_equal(p, "😀", 4);
        }
    }
    dsv4_detok_free(d);
}

/* ZWJ sequences: each code point is emitted once it is complete. */
static void test_zwj(void **state)
{
    const char *s = "👨‍👩‍👧‍👦 👩🏽‍⚕️ 🏳️‍🌈 🇯🇵 1️⃣";
    int32_t *ids;
    size_t n;
    tokenize(s, &ids, &n);
    assert_true(n > 10);
    stream_out o;
    stream(ids, n, &o);
    assert_int_equal(o.len, strlen(s));
    assert_memory_equal(o.buf, s, o.len);
    assert_true(o.n_nonempty > 5); /* text flows before the end */
    free(ids);
}

/* Invalid byte sequences: U+FFFD per maximal ill-formed subsequence, the same
 * streamed as whole, and the same as dsv4_detokenize. */
static void test_invalid_bytes(void **state)
{
    static const struct {
        const char *hex, *want;
    } cases[] = {
        {"e4b8", "\xEF\xBF\xBD"},
        {"e4b841", "\xEF\xBF\xBD" "A"},
        {"c080", "\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"eda080", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"f4908080", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"f09f98", "\xEF\xBF\xBD"},
        {"80", "\xEF\xBF\xBD"},
        {"e080", "\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"e0a0", "\xEF\xBF\xBD"},
        {"41c3", "A\xEF\xBF\xBD"},
        {"ff41", "\xEF\xBF\xBD" "A"},
        {"f888808080", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"e4b8e4b8a5", "\xEF\xBF\xBD\xE4\xB8\xA5"},
        {"f09f9880", "😀"},
    };
    char err[256];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int32_t ids[16];
        size_t n = strlen(cases[c].hex) / 2;
        for (size_t i = 0; i < n; i++) {
            unsigned b;
            sscanf(cases[c].hex + 2 * i, "%2x", &b);
            ids[i] = byte_token((uint8_t)b);
        }
        char *text;
        size_t len;
        assert_int_equal(dsv4_detokenize(g_tok, ids, n, &text, &len, err, sizeof err), DSV4_OK);
        assert_int_equal(len, strlen(cases[c].want));
        assert_memory_equal(text, cases[c].want, len);
        stream_out o;
        stream(ids, n, &o);
        assert_int_equal(o.len, len);
        assert_memory_equal(o.buf, text, len);
        free(text);
    }
    /* a partial character before an added token is repaired there */
    int32_t ids[3] = {byte_token(0xE4), dsv4_token_id(g_tok, "<｜User｜>"), byte_token('x')};
    const char *want = "\xEF\xBF\xBD<｜User｜>x";
    stream_out o;
    stream(ids, 3, &o);
    assert_int_equal(o.len, strlen(want));
    assert_memory_equal(o.buf, want, o.len);
}

/* Every corpus document, from HF's ids, fed one id at a time. */
static void test_corpus_streamed(void **state)
{
    static const char *docs[] = {"prose_en", "code_c", "code_python", "cjk", "cyrillic", "numbers", "emoji",
                                 "combining", "whitespace", "crlf", "special_tokens", "long_words", "mixed",
                                 "empty"};
    char path[4096], err[256];
    for (size_t k = 0; k < sizeof docs / sizeof docs[0]; k++) {
        snprintf(path, sizeof path, "%s/tests/text/corpus/%s.txt", src_dir(), docs[k]);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        static char text[1 << 16];
        size_t tl = fread(text, 1, sizeof text, f);
        fclose(f);
        snprintf(path, sizeof path, "%s/tests/text/expected/v3/%s.ids", src_dir(), docs[k]);
        f = fopen(path, "rb");
        assert_non_null(f);
        static int32_t ids[1 << 15];
        size_t n = 0;
        int v;
        while (n < sizeof ids / sizeof ids[0] && fscanf(f, "%d,", &v) == 1) ids[n++] = v;
        fclose(f);
        stream_out o;
        stream(ids, n, &o);
        if (o.len != tl || memcmp(o.buf, text, tl)) fail_msg("%s: streamed text differs from the document", docs[k]);
        char *whole;
        size_t wl;
        assert_int_equal(dsv4_detokenize(g_tok, ids, n, &whole, &wl, err, sizeof err), DSV4_OK);
        assert_int_equal(wl, tl);
        assert_memory_equal(whole, text, tl);
        free(whole);
    }
}

static void test_errors_and_reset(void **state)
{
    char err[256];
    dsv4_detok *d;
    assert_int_equal(dsv4_detok_create(g_tok, &d, err, sizeof err), DSV4_OK);
    const char *p;
    size_t l;
    assert_int_equal(dsv4_detok_push(d, dsv4_tokenizer_vocab_size(g_tok), &p, &l, err, sizeof err),
                     DSV4_ERR_INVALID);
    assert_non_null(strstr(err, "not in the vocabulary"));
    assert_int_equal(dsv4_detok_push(d, -1, &p, &l, err, sizeof err), DSV4_ERR_INVALID);
    /* a pending partial character is dropped by reset, not emitted */
    assert_int_equal(dsv4_detok_push(d, byte_token(0xE4), &p, &l, err, sizeof err), DSV4_OK);
    assert_int_equal(l, 0);
    dsv4_detok_reset(d);
    assert_int_equal(dsv4_detok_push(d, byte_token('a'), &p, &l, err, sizeof err), DSV4_OK);
    assert_int_equal(l, 1);
    assert_int_equal(p[0], 'a');
    dsv4_detok_flush(d, &p, &l);
    assert_int_equal(l, 0);
    dsv4_detok_free(d);

    int32_t bad[2] = {5, 1 << 30};
    char *text;
    size_t len;
    assert_int_equal(dsv4_detokenize(g_tok, bad, 2, &text, &len, err, sizeof err), DSV4_ERR_INVALID);
    assert_non_null(strstr(err, "position 1"));
    assert_int_equal(dsv4_detokenize(g_tok, bad, 0, &text, &len, err, sizeof err), DSV4_OK);
    assert_int_equal(len, 0);
    assert_string_equal(text, "");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multibyte_split), cmocka_unit_test(test_zwj),
        cmocka_unit_test(test_invalid_bytes),   cmocka_unit_test(test_corpus_streamed),
        cmocka_unit_test(test_errors_and_reset),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
