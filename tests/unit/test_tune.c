/*
 * test_tune.c - `dsv4 tune` files (engine/tune.h): a table written is read
 * back the same; the built-in table and the shipped H200 file are valid;
 * files that cannot be used (unreadable, not JSON, another version, another
 * GPU, rows out of order, unknown choices, wrong types) are refused with
 * the reason, never half-applied (the caller keeps its table).
 */
#define _GNU_SOURCE /* mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "engine/tune.h"

static char dir[64], path[128];
static const char *dev = "NVIDIA H200 (sm_90)";

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/dsv4-tune-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    snprintf(path, sizeof path, "%s/t.json", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    rmdir(dir);
    return 0;
}

static void write_text(const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Loading text must fail with status want and a reason containing needle;
 * the table passed in stays as it was. */
static void refused(const char *text, dsv4_status want, const char *needle)
{
    write_text(text);
    dsv4_tune t, before;
    dsv4_tune_default(&t);
    before = t;
    char err[512] = "";
    const dsv4_status st = dsv4_tune_load(path, dev, &t, err, sizeof err);
    if (st != want || !strstr(err, needle)) fail_msg("'%s': status %d, want %d; reason '%s', want '%s'", text, st, want, err, needle);
    assert_memory_equal(&t, &before, sizeof t);
}

static void test_round_trip(void **state)
{
    (void)state;
    const dsv4_tune t = {.n = 3, .row = {{1, 16, DSV4_SUM_PARTS16}, {32, 64, DSV4_SUM_PARTS64}, {0, 64, DSV4_SUM_WALK32}}};
    char err[256];
    json_t *measured = json_pack("{s:[i,i]}", "x", 1, 2);
    assert_int_equal(dsv4_tune_save(path, dev, &t, measured, err, sizeof err), DSV4_OK);
    json_decref(measured);
    dsv4_tune r;
    dsv4_tune_default(&r);
    assert_int_equal(dsv4_tune_load(path, dev, &r, err, sizeof err), DSV4_OK);
    assert_int_equal(r.n, t.n);
    for (int i = 0; i < t.n; i++) {
        assert_int_equal(r.row[i].max_tokens, t.row[i].max_tokens);
        assert_int_equal(r.row[i].score_rows, t.row[i].score_rows);
        assert_int_equal(r.row[i].sum, t.row[i].sum);
    }
    /* the row a call takes */
    assert_int_equal(dsv4_tune_pick(&r, 1)->sum, DSV4_SUM_PARTS16);
    assert_int_equal(dsv4_tune_pick(&r, 2)->sum, DSV4_SUM_PARTS64);
    assert_int_equal(dsv4_tune_pick(&r, 32)->sum, DSV4_SUM_PARTS64);
    assert_int_equal(dsv4_tune_pick(&r, 33)->sum, DSV4_SUM_WALK32);
    assert_int_equal(dsv4_tune_pick(&r, 100000)->sum, DSV4_SUM_WALK32);
    /* every choice by its name (a row each) */
    dsv4_tune all = {.n = DSV4_SUM_COUNT};
    for (int k = 0; k < DSV4_SUM_COUNT; k++) all.row[k] = (dsv4_attn_choice){k + 1, 16, k};
    all.row[DSV4_SUM_COUNT - 1].max_tokens = 0;
    assert_int_equal(dsv4_tune_save(path, dev, &all, NULL, err, sizeof err), DSV4_OK);
    assert_int_equal(dsv4_tune_load(path, dev, &r, err, sizeof err), DSV4_OK);
    assert_int_equal(r.n, DSV4_SUM_COUNT);
    for (int k = 0; k < DSV4_SUM_COUNT; k++) assert_int_equal(r.row[k].sum, k);
    assert_string_equal(dsv4_tune_sum_name(DSV4_SUM_ONE), "one");
    assert_string_equal(dsv4_tune_sum_name(DSV4_SUM_ONE8), "one8");
    /* an invalid table is not written */
    dsv4_tune bad = t;
    bad.row[2].max_tokens = 7;
    assert_int_equal(dsv4_tune_save(path, dev, &bad, NULL, err, sizeof err), DSV4_ERR_INVALID);
}

static void test_defaults_and_shipped(void **state)
{
    (void)state;
    dsv4_tune t;
    dsv4_tune_default(&t);
    char err[512];
    assert_int_equal(dsv4_tune_check(&t, err, sizeof err), DSV4_OK);
    /* the file dsv4 tune wrote on the H200 ships and reads back as the built-in table */
    const char *src = getenv("DSV4_SRC");
    char p[512];
    snprintf(p, sizeof p, "%s/share/tune/h200.json", src ? src : ".");
    FILE *f = fopen(p, "r");
    if (!f) fail_msg("%s: missing", p);
    fclose(f);
    dsv4_tune h;
    if (dsv4_tune_load(p, NULL, &h, err, sizeof err) != DSV4_OK) fail_msg("%s", err);
    assert_int_equal(h.n, t.n);
    for (int i = 0; i < t.n; i++) {
        assert_int_equal(h.row[i].max_tokens, t.row[i].max_tokens);
        assert_int_equal(h.row[i].score_rows, t.row[i].score_rows);
        assert_int_equal(h.row[i].sum, t.row[i].sum);
    }
}

static void test_refused(void **state)
{
    (void)state;
    char err[256];
    dsv4_tune t;
    assert_int_equal(dsv4_tune_load("/nonexistent/dsv4-tune.json", dev, &t, err, sizeof err), DSV4_ERR_IO);
    assert_non_null(strstr(err, "cannot read"));
    const char *ok_rows = "[{\"max_tokens\": 0, \"score_rows\": 64, \"sum\": \"walk32\"}]";
    char buf[512];
    refused("", DSV4_ERR_FORMAT, "not JSON");
    refused("{\"dsv4_tune\": 1, ", DSV4_ERR_FORMAT, "not JSON");
    refused("[1, 2]", DSV4_ERR_FORMAT, "not an object");
    refused("{\"device\": \"NVIDIA H200 (sm_90)\"}", DSV4_ERR_FORMAT, "dsv4_tune");
    snprintf(buf, sizeof buf, "{\"dsv4_tune\": 2, \"device\": \"NVIDIA H200 (sm_90)\", \"attention\": %s}", ok_rows);
    refused(buf, DSV4_ERR_UNSUPPORTED, "version 2");
    snprintf(buf, sizeof buf, "{\"dsv4_tune\": 1, \"device\": \"NVIDIA B200 (sm_100)\", \"attention\": %s}", ok_rows);
    refused(buf, DSV4_ERR_UNSUPPORTED, "made on NVIDIA B200");
    refused("{\"dsv4_tune\": 1, \"device\": 5, \"attention\": []}", DSV4_ERR_FORMAT, "device");
    refused("{\"dsv4_tune\": 1, \"device\": \"NVIDIA H200 (sm_90)\", \"attention\": []}", DSV4_ERR_FORMAT,
            "1 to 12 rows");
    refused("{\"dsv4_tune\": 1, \"device\": \"NVIDIA H200 (sm_90)\", \"attention\": {}}", DSV4_ERR_FORMAT, "array");
    refused("{\"dsv4_tune\": 1, \"device\": \"NVIDIA H200 (sm_90)\", \"attention\": [{\"max_tokens\": \"4\", "
            "\"score_rows\": 16, \"sum\": \"parts16\"}, {\"max_tokens\": 0, \"score_rows\": 64, \"sum\": \"walk32\"}]}",
            DSV4_ERR_FORMAT, "row 0");
    refused("{\"dsv4_tune\": 1, \"device\": \"NVIDIA H200 (sm_90)\", \"attention\": [{\"max_tokens\": 0, "
            "\"score_rows\": 32, \"sum\": \"walk32\"}]}",
            DSV4_ERR_FORMAT, "score_rows 32");
    refused("{\"dsv4_tune\": 1, \"device\": \"NVIDIA H200 (sm_90)\", \"attention\": [{\"max_tokens\": 0, "
            "\"score_rows\": 64, \"sum\": \"parts128\"}]}",
            DSV4_ERR_FORMAT, "parts128");
    refused("{\"dsv4_tune\": 1, \"device\": \"NVIDIA H200 (sm_90)\", \"attention\": [{\"max_tokens\": 0, "
            "\"score_rows\": 64, \"sum\": \"parts128\"}]}",
            DSV4_ERR_FORMAT, "is not one of parts16, parts32, parts64, walk32, walk64, walk128, one, wg64, wg128");
    /* rows out of order; the last must serve any number (0) */
    refused("{\"dsv4_tune\": 1, \"device\": \"NVIDIA H200 (sm_90)\", \"attention\": [{\"max_tokens\": 8, \"score_rows\": "
            "16, \"sum\": \"parts16\"}, {\"max_tokens\": 4, \"score_rows\": 16, \"sum\": \"parts32\"}, {\"max_tokens\": 0, "
            "\"score_rows\": 64, \"sum\": \"walk32\"}]}",
            DSV4_ERR_FORMAT, "increasing");
    refused("{\"dsv4_tune\": 1, \"device\": \"NVIDIA H200 (sm_90)\", \"attention\": [{\"max_tokens\": 8, \"score_rows\": "
            "16, \"sum\": \"parts16\"}]}",
            DSV4_ERR_FORMAT, "the last 0");
    refused("{\"dsv4_tune\": 1, \"device\": \"NVIDIA H200 (sm_90)\", \"attention\": [{\"max_tokens\": -3, "
            "\"score_rows\": 64, \"sum\": \"walk32\"}]}",
            DSV4_ERR_FORMAT, "out of range");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test(test_defaults_and_shipped),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
