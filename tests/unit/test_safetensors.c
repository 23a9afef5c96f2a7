/*
 * test_safetensors.c - the safetensors store on good and corrupt checkpoints.
 *
 * Every checkpoint is written by the test itself into a fresh mkdtemp folder:
 * a good single file, a good sharded set with an index, and one corrupt case
 * per validation rule. A corrupt case must be refused with a non-zero status
 * and a message naming the file and (where there is one) the tensor. A last
 * test truncates and flips bytes of a good file at every position and only
 * asks that nothing crashes (run it under valgrind or ASan).
 */
#define _GNU_SOURCE /* nftw, mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/safetensors.h"

/* ------------------------------------------------------------------------ */
/* helpers                                                                  */
/* ------------------------------------------------------------------------ */

static char *make_dir(void)
{
    char tmpl[] = "/tmp/dsv4_st_XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_dir(char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

static void write_file(const char *dir, const char *name, const void *bytes, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n) assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

/* A safetensors file: 8-byte length (hlen_override if non-zero), header JSON,
 * data. */
static void write_st_raw(const char *dir, const char *name, const char *header, const void *data, size_t data_len,
                         uint64_t hlen_override)
{
    size_t hl = strlen(header);
    size_t n = 8 + hl + data_len;
    uint8_t *buf = malloc(n ? n : 1);
    assert_non_null(buf);
    uint64_t h = hlen_override ? hlen_override : hl;
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(h >> (8 * i));
    memcpy(buf + 8, header, hl);
    if (data_len) memcpy(buf + 8 + hl, data, data_len);
    write_file(dir, name, buf, n);
    free(buf);
}

static void write_st(const char *dir, const char *name, const char *header, size_t data_len)
{
    uint8_t *data = malloc(data_len ? data_len : 1);
    assert_non_null(data);
    for (size_t i = 0; i < data_len; i++) data[i] = (uint8_t)(i * 7 + 3);
    write_st_raw(dir, name, header, data, data_len, 0);
    free(data);
}

/* Open dir, expect failure, and check the message names every string given. */
static void expect_refused(const char *dir, ...)
{
    char err[512] = "";
    dsv4_st *st = NULL;
    dsv4_status s = dsv4_st_open(dir, &st, err, sizeof err);
    if (s == DSV4_OK) fail_msg("dsv4_st_open accepted a corrupt checkpoint");
    assert_null(st);
    if (getenv("DSV4_TEST_VERBOSE")) print_message("refused (%d): %s\n", s, err);
    va_list ap;
    va_start(ap, dir);
    const char *want;
    while ((want = va_arg(ap, const char *)) != NULL) {
        if (!strstr(err, want)) fail_msg("message \"%s\" does not mention \"%s\"", err, want);
    }
    va_end(ap);
}

static dsv4_st *expect_open(const char *dir)
{
    char err[512] = "";
    dsv4_st *st = NULL;
    dsv4_status s = dsv4_st_open(dir, &st, err, sizeof err);
    if (s != DSV4_OK) fail_msg("dsv4_st_open failed (%d): %s", s, err);
    assert_non_null(st);
    return st;
}

/* Two tensors a (F32 [2, 3], bytes 0..24) and b (BF16 [4], bytes 24..32). */
#define GOOD_HEADER                                                                                                    \
    "{\"__metadata__\": {\"format\": \"pt\"}, "                                                                        \
    "\"layers.0.a.weight\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 24]}, "                      \
    "\"layers.0.b.bias\": {\"dtype\": \"BF16\", \"shape\": [4], \"data_offsets\": [24, 32]}}"

/* ------------------------------------------------------------------------ */
/* good checkpoints                                                         */
/* ------------------------------------------------------------------------ */

static void test_dtypes(void **state)
{
    (void)state;
    assert_int_equal(dsv4_dtype_size(DSV4_DT_F32), 4);
    assert_int_equal(dsv4_dtype_size(DSV4_DT_BF16), 2);
    assert_int_equal(dsv4_dtype_size(DSV4_DT_I64), 8);
    assert_int_equal(dsv4_dtype_size(DSV4_DT_F8_E8M0), 1);
    assert_int_equal(dsv4_dtype_size(DSV4_DT_INVALID), 0);
    assert_int_equal(dsv4_dtype_size((dsv4_dtype)99), 0);
    for (int i = DSV4_DT_INVALID + 1; i < DSV4_DT_COUNT; i++)
        assert_int_equal(dsv4_dtype_from_name(dsv4_dtype_name((dsv4_dtype)i)), i);
    assert_int_equal(dsv4_dtype_from_name("F8_E8M0FNU"), DSV4_DT_INVALID);
    assert_int_equal(dsv4_dtype_from_name("bf16"), DSV4_DT_INVALID);
    assert_int_equal(dsv4_dtype_from_name(NULL), DSV4_DT_INVALID);
}

static void test_single_file(void **state)
{
    (void)state;
    char *dir = make_dir();
    float a[6] = {0, 1, 2, 3, 4, 5};
    uint16_t b[4] = {0x3f80, 0x4000, 0x4040, 0x4080}; /* 1, 2, 3, 4 in BF16 */
    uint8_t data[32];
    memcpy(data, a, 24);
    memcpy(data + 24, b, 8);
    write_st_raw(dir, "model.safetensors", GOOD_HEADER, data, sizeof data, 0);
    /* a stray second file must be ignored: model.safetensors wins over the glob */
    write_st(dir, "other.safetensors", "{\"x\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", 1);

    dsv4_st *st = expect_open(dir);
    assert_int_equal(dsv4_st_count(st), 2);
    assert_int_equal(dsv4_st_total_bytes(st), 32);
    assert_string_equal(dsv4_st_file_name(st, 0), "model.safetensors");
    assert_null(dsv4_st_file_name(st, 1));
    assert_null(dsv4_st_file_name(st, -1));

    const dsv4_st_tensor *t = dsv4_st_find(st, "layers.0.a.weight");
    assert_non_null(t);
    assert_int_equal(t->dtype, DSV4_DT_F32);
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0], 2);
    assert_int_equal(t->shape[1], 3);
    assert_int_equal(t->nbytes, 24);
    assert_int_equal(t->file, 0);
    assert_memory_equal(t->data, a, 24);

    t = dsv4_st_find(st, "layers.0.b.bias");
    assert_non_null(t);
    assert_int_equal(t->dtype, DSV4_DT_BF16);
    assert_int_equal(t->ndim, 1);
    assert_int_equal(t->shape[0], 4);
    assert_memory_equal(t->data, b, 8);

    assert_null(dsv4_st_find(st, "x"));
    assert_null(dsv4_st_find(st, "__metadata__"));
    assert_null(dsv4_st_find(st, "layers.0.a"));
    assert_string_equal(dsv4_st_at(st, 0)->name, "layers.0.a.weight");
    assert_string_equal(dsv4_st_at(st, 1)->name, "layers.0.b.bias");
    assert_null(dsv4_st_at(st, 2));
    dsv4_st_close(st);
    dsv4_st_close(NULL);
    remove_dir(dir);
}

static void test_scalar_and_empty_tensors(void **state)
{
    (void)state;
    char *dir = make_dir();
    /* a scalar (shape []), an empty tensor sitting at the same offset as a
     * real one, and one of every dtype */
    write_st(dir, "model.safetensors",
             "{\"s\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [0, 4]},"
             " \"e\": {\"dtype\": \"F16\", \"shape\": [0, 5], \"data_offsets\": [4, 4]},"
             " \"i64\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [4, 12]},"
             " \"i32\": {\"dtype\": \"I32\", \"shape\": [1], \"data_offsets\": [12, 16]},"
             " \"i8\": {\"dtype\": \"I8\", \"shape\": [2], \"data_offsets\": [16, 18]},"
             " \"f8\": {\"dtype\": \"F8_E4M3\", \"shape\": [1, 1, 1, 1, 1, 1, 1, 2], \"data_offsets\": [18, 20]}}",
             20);
    dsv4_st *st = expect_open(dir);
    assert_int_equal(dsv4_st_count(st), 6);
    const dsv4_st_tensor *t = dsv4_st_find(st, "s");
    assert_non_null(t);
    assert_int_equal(t->ndim, 0);
    assert_int_equal(t->nbytes, 4);
    t = dsv4_st_find(st, "e");
    assert_non_null(t);
    assert_int_equal(t->nbytes, 0);
    t = dsv4_st_find(st, "f8");
    assert_non_null(t);
    assert_int_equal(t->ndim, 8);
    assert_int_equal(t->dtype, DSV4_DT_F8_E4M3);
    dsv4_st_close(st);
    remove_dir(dir);
}

static void write_good_shards(const char *dir)
{
    write_st(dir, "model-00001-of-00002.safetensors",
             "{\"embed.weight\": {\"dtype\": \"BF16\", \"shape\": [4, 2], \"data_offsets\": [0, 16]}}", 16);
    write_st(dir, "model-00002-of-00002.safetensors",
             "{\"layers.0.ffn.gate.tid2eid\": {\"dtype\": \"I32\", \"shape\": [4, 2], \"data_offsets\": [0, 32]},"
             " \"head.weight\": {\"dtype\": \"F8_E4M3\", \"shape\": [4, 2], \"data_offsets\": [32, 40]},"
             " \"head.scale\": {\"dtype\": \"F8_E8M0\", \"shape\": [1, 1], \"data_offsets\": [40, 41]}}",
             41);
}

#define GOOD_INDEX                                                                                                     \
    "{\"metadata\": {\"total_size\": 57}, \"weight_map\": {"                                                           \
    "\"embed.weight\": \"model-00001-of-00002.safetensors\", "                                                         \
    "\"layers.0.ffn.gate.tid2eid\": \"model-00002-of-00002.safetensors\", "                                            \
    "\"head.weight\": \"model-00002-of-00002.safetensors\", "                                                          \
    "\"head.scale\": \"model-00002-of-00002.safetensors\"}}"

static void test_sharded(void **state)
{
    (void)state;
    char *dir = make_dir();
    write_good_shards(dir);
    write_file(dir, "model.safetensors.index.json", GOOD_INDEX, strlen(GOOD_INDEX));
    dsv4_st *st = expect_open(dir);
    assert_int_equal(dsv4_st_count(st), 4);
    assert_int_equal(dsv4_st_total_bytes(st), 57);
    const dsv4_st_tensor *t = dsv4_st_find(st, "head.weight");
    assert_non_null(t);
    assert_int_equal(t->dtype, DSV4_DT_F8_E4M3);
    assert_string_equal(dsv4_st_file_name(st, t->file), "model-00002-of-00002.safetensors");
    /* write_st fills byte i of the data section with i*7+3 */
    assert_int_equal(((const uint8_t *)t->data)[0], (uint8_t)(32 * 7 + 3));
    t = dsv4_st_find(st, "embed.weight");
    assert_non_null(t);
    assert_string_equal(dsv4_st_file_name(st, t->file), "model-00001-of-00002.safetensors");
    assert_int_equal(t->shape[0], 4);
    assert_int_equal(t->shape[1], 2);
    t = dsv4_st_find(st, "layers.0.ffn.gate.tid2eid");
    assert_non_null(t);
    assert_int_equal(t->dtype, DSV4_DT_I32);
    dsv4_st_close(st);
    remove_dir(dir);
}

static void test_glob_fallback(void **state)
{
    (void)state;
    char *dir = make_dir();
    write_good_shards(dir);
    write_file(dir, "notes.txt", "x", 1);
    dsv4_st *st = expect_open(dir);
    assert_int_equal(dsv4_st_count(st), 4);
    assert_string_equal(dsv4_st_file_name(st, 0), "model-00001-of-00002.safetensors");
    assert_string_equal(dsv4_st_file_name(st, 1), "model-00002-of-00002.safetensors");
    dsv4_st_close(st);
    remove_dir(dir);
}

/* ------------------------------------------------------------------------ */
/* corrupt checkpoints                                                      */
/* ------------------------------------------------------------------------ */

static void test_no_files(void **state)
{
    (void)state;
    char *dir = make_dir();
    expect_refused(dir, dir, NULL);
    char err[256];
    dsv4_st *st = NULL;
    assert_int_equal(dsv4_st_open(dir, &st, err, sizeof err), DSV4_ERR_IO);
    assert_int_equal(dsv4_st_open("/nonexistent/dsv4/dir", &st, err, sizeof err), DSV4_ERR_IO);
    assert_non_null(strstr(err, "/nonexistent/dsv4/dir"));
    assert_int_equal(dsv4_st_open(NULL, &st, err, sizeof err), DSV4_ERR_INVALID);
    assert_int_equal(dsv4_st_open(dir, NULL, err, sizeof err), DSV4_ERR_INVALID);
    assert_int_equal(dsv4_st_open(dir, &st, NULL, 0), DSV4_ERR_IO); /* no err buffer is fine */
    remove_dir(dir);
}

static void test_truncated_shard(void **state)
{
    (void)state;
    char *dir = make_dir();
    write_good_shards(dir);
    write_file(dir, "model.safetensors.index.json", GOOD_INDEX, strlen(GOOD_INDEX));
    /* cut shard 2 inside head.weight's bytes */
    char path[512];
    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_int_equal(truncate(path, size - 5), 0);
    expect_refused(dir, "model-00002-of-00002.safetensors", "head.weight", "truncated", NULL);
    char err[512];
    dsv4_st *st;
    assert_int_equal(dsv4_st_open(dir, &st, err, sizeof err), DSV4_ERR_FORMAT);
    remove_dir(dir);
}

static void test_header_longer_than_file(void **state)
{
    (void)state;
    char *dir = make_dir();
    write_st_raw(dir, "model.safetensors", GOOD_HEADER, "0123456789abcdef0123456789abcdef", 32, 100000);
    expect_refused(dir, "model.safetensors", "header length 100000", NULL);
    remove_dir(dir);

    dir = make_dir();
    write_st_raw(dir, "model.safetensors", GOOD_HEADER, NULL, 0, 0xffffffffffffffffull);
    expect_refused(dir, "model.safetensors", "header length", NULL);
    remove_dir(dir);

    dir = make_dir();
    write_file(dir, "model.safetensors", "\x05\0\0", 3);
    expect_refused(dir, "model.safetensors", "too short", NULL);
    remove_dir(dir);

    dir = make_dir();
    write_file(dir, "model.safetensors", "", 0);
    expect_refused(dir, "model.safetensors", NULL);
    remove_dir(dir);
}

static void test_offsets_out_of_range(void **state)
{
    (void)state;
    char *dir = make_dir();
    write_st(dir, "model.safetensors",
             "{\"ok\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]},"
             " \"far\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [100, 116]}}",
             8);
    expect_refused(dir, "model.safetensors", "tensor far", "[100, 116]", NULL);
    remove_dir(dir);

    dir = make_dir();
    write_st(dir, "model.safetensors", "{\"rev\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [8, 4]}}", 8);
    expect_refused(dir, "model.safetensors", "tensor rev", NULL);
    remove_dir(dir);

    dir = make_dir();
    write_st(dir, "model.safetensors", "{\"neg\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [-4, 0]}}", 8);
    expect_refused(dir, "model.safetensors", "tensor neg", "data_offsets", NULL);
    remove_dir(dir);
}

static void test_overlap(void **state)
{
    (void)state;
    char *dir = make_dir();
    write_st(dir, "model.safetensors",
             "{\"first\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]},"
             " \"second\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [8, 24]}}",
             24);
    expect_refused(dir, "model.safetensors", "second", "first", "overlap", NULL);
    remove_dir(dir);

    /* a long tensor covering two later ones: caught even though its direct
     * neighbour does not overlap the third */
    dir = make_dir();
    write_st(dir, "model.safetensors",
             "{\"big\": {\"dtype\": \"U8\", \"shape\": [40], \"data_offsets\": [0, 40]},"
             " \"x\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [40, 44]},"
             " \"inner\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [10, 14]}}",
             44);
    expect_refused(dir, "model.safetensors", "inner", "big", NULL);
    remove_dir(dir);
}

static void test_size_mismatch(void **state)
{
    (void)state;
    char *dir = make_dir();
    write_st(dir, "model.safetensors", "{\"w\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 8);
    expect_refused(dir, "model.safetensors", "tensor w", "F32 [3]", "12 bytes", NULL);
    remove_dir(dir);

    /* element count overflows 64 bits */
    dir = make_dir();
    write_st(dir, "model.safetensors",
             "{\"huge\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [0, 8]}}", 8);
    expect_refused(dir, "model.safetensors", "tensor huge", NULL);
    remove_dir(dir);
}

static void test_unknown_dtype(void **state)
{
    (void)state;
    char *dir = make_dir();
    write_st(dir, "model.safetensors", "{\"w\": {\"dtype\": \"F7\", \"shape\": [2], \"data_offsets\": [0, 2]}}", 2);
    expect_refused(dir, "model.safetensors", "tensor w", "F7", NULL);
    char err[256];
    dsv4_st *st;
    assert_int_equal(dsv4_st_open(dir, &st, err, sizeof err), DSV4_ERR_FORMAT);
    remove_dir(dir);

    dir = make_dir();
    write_st(dir, "model.safetensors", "{\"w\": {\"dtype\": \"F64\", \"shape\": [2], \"data_offsets\": [0, 16]}}", 16);
    expect_refused(dir, "model.safetensors", "tensor w", "F64", NULL);
    assert_int_equal(dsv4_st_open(dir, &st, err, sizeof err), DSV4_ERR_UNSUPPORTED);
    remove_dir(dir);
}

static void test_wrong_types(void **state)
{
    (void)state;
    static const char *const headers[] = {
        "{\"w\": 5}",
        "{\"w\": {\"shape\": [2], \"data_offsets\": [0, 2]}}",
        "{\"w\": {\"dtype\": 3, \"shape\": [2], \"data_offsets\": [0, 2]}}",
        "{\"w\": {\"dtype\": \"U8\", \"shape\": \"2\", \"data_offsets\": [0, 2]}}",
        "{\"w\": {\"dtype\": \"U8\", \"shape\": [2.0], \"data_offsets\": [0, 2]}}",
        "{\"w\": {\"dtype\": \"U8\", \"shape\": [-2], \"data_offsets\": [0, 2]}}",
        "{\"w\": {\"dtype\": \"U8\", \"shape\": [1,1,1,1,1,1,1,1,2], \"data_offsets\": [0, 2]}}",
        "{\"w\": {\"dtype\": \"U8\", \"shape\": [2]}}",
        "{\"w\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [0]}}",
        "{\"w\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [0, 2, 4]}}",
        "{\"w\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": {\"a\": 1}}}",
        "{\"w\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [0, \"2\"]}}",
    };
    for (size_t i = 0; i < sizeof headers / sizeof *headers; i++) {
        char *dir = make_dir();
        write_st(dir, "model.safetensors", headers[i], 2);
        expect_refused(dir, "model.safetensors", "tensor w", NULL);
        remove_dir(dir);
    }
}

static void test_garbage_json(void **state)
{
    (void)state;
    static const char *const headers[] = {
        "{not json at all",
        "[1, 2, 3]",
        "\"a string\"",
        "",
        "{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}} trailing",
        "{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]},"
        " \"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [1, 2]}}",
    };
    for (size_t i = 0; i < sizeof headers / sizeof *headers; i++) {
        char *dir = make_dir();
        write_st(dir, "model.safetensors", headers[i], 2);
        expect_refused(dir, "model.safetensors", NULL);
        char err[256];
        dsv4_st *st;
        assert_int_equal(dsv4_st_open(dir, &st, err, sizeof err), DSV4_ERR_FORMAT);
        remove_dir(dir);
    }
}

static void test_index_missing_file(void **state)
{
    (void)state;
    char *dir = make_dir();
    write_good_shards(dir);
    const char *idx = "{\"weight_map\": {"
                      "\"embed.weight\": \"model-00001-of-00002.safetensors\", "
                      "\"head.weight\": \"model-00002-of-00002.safetensors\", "
                      "\"mtp.0.norm.weight\": \"model-00003-of-00003.safetensors\"}}";
    write_file(dir, "model.safetensors.index.json", idx, strlen(idx));
    expect_refused(dir, "model-00003-of-00003.safetensors", "mtp.0.norm.weight", NULL);
    char err[512];
    dsv4_st *st;
    assert_int_equal(dsv4_st_open(dir, &st, err, sizeof err), DSV4_ERR_IO);
    remove_dir(dir);
}

static void test_index_tensor_missing(void **state)
{
    (void)state;
    char *dir = make_dir();
    write_good_shards(dir);
    const char *idx = "{\"weight_map\": {"
                      "\"embed.weight\": \"model-00001-of-00002.safetensors\", "
                      "\"layers.1.attn.wkv.weight\": \"model-00002-of-00002.safetensors\"}}";
    write_file(dir, "model.safetensors.index.json", idx, strlen(idx));
    expect_refused(dir, "model-00002-of-00002.safetensors", "layers.1.attn.wkv.weight", NULL);
    remove_dir(dir);

    /* the index puts a tensor in the wrong shard */
    dir = make_dir();
    write_good_shards(dir);
    idx = "{\"weight_map\": {"
          "\"embed.weight\": \"model-00002-of-00002.safetensors\", "
          "\"head.weight\": \"model-00001-of-00002.safetensors\"}}";
    write_file(dir, "model.safetensors.index.json", idx, strlen(idx));
    expect_refused(dir, "model.safetensors.index.json", "head.weight", NULL);
    remove_dir(dir);
}

static void test_index_malformed(void **state)
{
    (void)state;
    static const char *const idx[] = {
        "{\"weight_map\": ",
        "{\"metadata\": {}}",
        "{\"weight_map\": []}",
        "{\"weight_map\": {}}",
        "{\"weight_map\": {\"embed.weight\": 3}}",
        "{\"weight_map\": {\"embed.weight\": \"../model-00001-of-00002.safetensors\"}}",
        "[]",
    };
    for (size_t i = 0; i < sizeof idx / sizeof *idx; i++) {
        char *dir = make_dir();
        write_good_shards(dir);
        write_file(dir, "model.safetensors.index.json", idx[i], strlen(idx[i]));
        expect_refused(dir, "model.safetensors.index.json", NULL);
        remove_dir(dir);
    }
}

static void test_tensor_in_two_files(void **state)
{
    (void)state;
    char *dir = make_dir();
    write_good_shards(dir);
    write_st(dir, "model-00003-of-00003.safetensors",
             "{\"head.weight\": {\"dtype\": \"F8_E4M3\", \"shape\": [4, 2], \"data_offsets\": [0, 8]}}", 8);
    expect_refused(dir, "head.weight", "model-00002-of-00002.safetensors", "model-00003-of-00003.safetensors", NULL);
    /* with an index listing both shards the duplicate is refused too */
    const char *idx = "{\"weight_map\": {"
                      "\"embed.weight\": \"model-00001-of-00002.safetensors\", "
                      "\"head.weight\": \"model-00002-of-00002.safetensors\", "
                      "\"x\": \"model-00003-of-00003.safetensors\"}}";
    write_file(dir, "model.safetensors.index.json", idx, strlen(idx));
    expect_refused(dir, "model-00003-of-00003.safetensors", NULL);
    remove_dir(dir);
}

/* Truncate a good file at every length and flip every header byte: nothing
 * may crash, and whatever opens must still be self-consistent. */
static void test_fuzz_no_crash(void **state)
{
    (void)state;
    const char *header = GOOD_HEADER;
    size_t hl = strlen(header), n = 8 + hl + 32;
    uint8_t *good = malloc(n), *buf = malloc(n);
    assert_non_null(good);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++) good[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(good + 8, header, hl);
    memset(good + 8 + hl, 0x11, 32);
    char *dir = make_dir();
    int opened = 0;
    for (size_t pass = 0; pass < 2; pass++) {
        for (size_t pos = 0; pos < (pass ? 8 + hl : n); pos++) {
            size_t len = n;
            memcpy(buf, good, n);
            if (pass == 0)
                len = pos; /* truncation */
            else
                buf[pos] ^= (uint8_t)(1u << (pos % 8)); /* one bit flipped in the header */
            write_file(dir, "model.safetensors", buf, len);
            char err[256];
            dsv4_st *st = NULL;
            if (dsv4_st_open(dir, &st, err, sizeof err) == DSV4_OK) {
                opened++;
                for (size_t i = 0; i < dsv4_st_count(st); i++) {
                    const dsv4_st_tensor *t = dsv4_st_at(st, i);
                    const uint8_t *d = t->data;
                    volatile uint8_t sink = 0;
                    for (size_t k = 0; k < t->nbytes; k++) sink ^= d[k]; /* every byte handed out must be readable */
                    (void)sink;
                }
                dsv4_st_close(st);
            } else {
                assert_non_null(strstr(err, "model.safetensors"));
            }
        }
    }
    assert_true(opened > 0); /* the untouched length, some harmless flips */
    remove_dir(dir);
    free(good);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_single_file),
        cmocka_unit_test(test_scalar_and_empty_tensors),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_glob_fallback),
        cmocka_unit_test(test_no_files),
        cmocka_unit_test(test_truncated_shard),
        cmocka_unit_test(test_header_longer_than_file),
        cmocka_unit_test(test_offsets_out_of_range),
        cmocka_unit_test(test_overlap),
        cmocka_unit_test(test_size_mismatch),
        cmocka_unit_test(test_unknown_dtype),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_garbage_json),
        cmocka_unit_test(test_index_missing_file),
        cmocka_unit_test(test_index_tensor_missing),
        cmocka_unit_test(test_index_malformed),
        cmocka_unit_test(test_tensor_in_two_files),
        cmocka_unit_test(test_fuzz_no_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
