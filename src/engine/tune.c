/*
 * tune.c - `dsv4 tune` files: check, read, write (tune.h).
 */
#include "engine/tune.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/json_util.h"

static const char *const sum_names[DSV4_SUM_COUNT] = {"parts16", "parts32", "parts64", "walk32", "walk64",
                                                      "walk128", "one",     "wg64",    "wg128",  "one8"};

const char *dsv4_tune_sum_name(int sum) { return sum >= 0 && sum < DSV4_SUM_COUNT ? sum_names[sum] : "?"; }

dsv4_status dsv4_tune_check(const dsv4_tune *t, char *err, size_t errlen)
{
    if (t->n < 1 || t->n > DSV4_TUNE_ROWS) {
        snprintf(err, errlen, "attention: %d rows (1 to %d)", t->n, DSV4_TUNE_ROWS);
        return DSV4_ERR_INVALID;
    }
    for (int i = 0; i < t->n; i++) {
        const dsv4_attn_choice *c = &t->row[i];
        const bool last = i == t->n - 1;
        if (last ? c->max_tokens != 0 : c->max_tokens < 1 || (i > 0 && c->max_tokens <= t->row[i - 1].max_tokens)) {
            snprintf(err, errlen,
                     "attention row %d: max_tokens %d (rows in increasing max_tokens from 1, the last 0: any number)",
                     i, c->max_tokens);
            return DSV4_ERR_INVALID;
        }
        if (c->score_rows != 16 && c->score_rows != 64) {
            snprintf(err, errlen, "attention row %d: score_rows %d (16 or 64)", i, c->score_rows);
            return DSV4_ERR_INVALID;
        }
        if (c->sum < 0 || c->sum >= DSV4_SUM_COUNT) {
            snprintf(err, errlen, "attention row %d: sum %d", i, c->sum);
            return DSV4_ERR_INVALID;
        }
    }
    return DSV4_OK;
}

dsv4_status dsv4_tune_load(const char *path, const char *device, dsv4_tune *t, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        FILE *f = fopen(path, "rb");
        if (!f) {
            snprintf(err, errlen, "%s: cannot read", path);
            return DSV4_ERR_IO;
        }
        fclose(f);
        snprintf(err, errlen, "%s: not JSON (line %d: %s)", path, je.line, je.text);
        return DSV4_ERR_FORMAT;
    }
    dsv4_status st = DSV4_ERR_FORMAT;
    dsv4_tune r = {0};
    const json_t *ver = json_object_get(root, "dsv4_tune"), *dev = json_object_get(root, "device"),
                 *att = json_object_get(root, "attention");
    if (!json_is_object(root)) {
        snprintf(err, errlen, "%s: %s, not an object", path, dsv4_json_type_name(root));
        goto out;
    }
    if (!json_is_integer(ver)) {
        snprintf(err, errlen, "%s: no integer \"dsv4_tune\" (the file's version)", path);
        goto out;
    }
    if (json_integer_value(ver) != DSV4_TUNE_VERSION) {
        snprintf(err, errlen, "%s: version %lld, this build reads %d: run dsv4 tune again", path,
                 (long long)json_integer_value(ver), DSV4_TUNE_VERSION);
        st = DSV4_ERR_UNSUPPORTED;
        goto out;
    }
    if (!json_is_string(dev)) {
        snprintf(err, errlen, "%s: no string \"device\"", path);
        goto out;
    }
    if (device && strcmp(json_string_value(dev), device)) {
        snprintf(err, errlen, "%s: made on %s, this is %s: run dsv4 tune here", path, json_string_value(dev), device);
        st = DSV4_ERR_UNSUPPORTED;
        goto out;
    }
    if (!json_is_array(att) || json_array_size(att) < 1 || json_array_size(att) > DSV4_TUNE_ROWS) {
        snprintf(err, errlen, "%s: \"attention\" must be an array of 1 to %d rows", path, DSV4_TUNE_ROWS);
        goto out;
    }
    r.n = (int)json_array_size(att);
    for (int i = 0; i < r.n; i++) {
        const json_t *row = json_array_get(att, (size_t)i), *mt = json_object_get(row, "max_tokens"),
                     *sr = json_object_get(row, "score_rows"), *sm = json_object_get(row, "sum");
        if (!json_is_object(row) || !json_is_integer(mt) || !json_is_integer(sr) || !json_is_string(sm)) {
            snprintf(err, errlen,
                     "%s: attention row %d: want {\"max_tokens\": integer, \"score_rows\": integer, \"sum\": string}",
                     path, i);
            goto out;
        }
        if (json_integer_value(mt) < 0 || json_integer_value(mt) > 1 << 30 || json_integer_value(sr) < 0 ||
            json_integer_value(sr) > 1 << 30) {
            snprintf(err, errlen, "%s: attention row %d: max_tokens or score_rows out of range", path, i);
            goto out;
        }
        r.row[i].max_tokens = (int)json_integer_value(mt);
        r.row[i].score_rows = (int)json_integer_value(sr);
        r.row[i].sum = -1;
        for (int k = 0; k < DSV4_SUM_COUNT; k++)
            if (!strcmp(json_string_value(sm), sum_names[k])) r.row[i].sum = k;
        if (r.row[i].sum < 0) {
            char names[128] = "";
            for (int k = 0; k < DSV4_SUM_COUNT; k++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", sum_names[k]);
            snprintf(err, errlen, "%s: attention row %d: sum \"%s\" is not one of %s", path, i, json_string_value(sm),
                     names);
            goto out;
        }
    }
    char why[200];
    if (dsv4_tune_check(&r, why, sizeof why) != DSV4_OK) {
        snprintf(err, errlen, "%s: %s", path, why);
        goto out;
    }
    *t = r;
    st = DSV4_OK;
out:
    json_decref(root);
    return st;
}

dsv4_status dsv4_tune_save(const char *path, const char *device, const dsv4_tune *t, json_t *measured, char *err,
                           size_t errlen)
{
    if (dsv4_tune_check(t, err, errlen) != DSV4_OK) return DSV4_ERR_INVALID;
    json_t *root = json_object(), *att = json_array();
    json_object_set_new(root, "dsv4_tune", json_integer(DSV4_TUNE_VERSION));
    json_object_set_new(root, "device", json_string(device));
    for (int i = 0; i < t->n; i++)
        json_array_append_new(att, json_pack("{s:i, s:i, s:s}", "max_tokens", t->row[i].max_tokens, "score_rows",
                                             t->row[i].score_rows, "sum", sum_names[t->row[i].sum]));
    json_object_set_new(root, "attention", att);
    if (measured) json_object_set(root, "measured", measured);
    const int rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (rc) {
        snprintf(err, errlen, "%s: cannot write", path);
        return DSV4_ERR_IO;
    }
    return DSV4_OK;
}
