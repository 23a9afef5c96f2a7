/*
 * quant_config.c - reads the quantisation scheme a checkpoint declares
 * (config.json quantization_config / expert_dtype, hf_quant_config.json).
 */
#include "model/quant_config.h"
#include "core/file_util.h"

#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *dsv4_expert_format_name(dsv4_expert_format f)
{
    switch (f) {
    case DSV4_XF_FLOAT: return "BF16/F16/F32";
    case DSV4_XF_FP8: return "FP8";
    case DSV4_XF_MXFP4: return "MXFP4";
    case DSV4_XF_NVFP4: return "NVFP4";
    default: return "undeclared";
    }
}

/* Map an algorithm / dtype string to an expert format; -1 if unknown. */
static int algo_format(const char *s)
{
    static const struct {
        const char *name;
        dsv4_expert_format f;
    } tab[] = {{"NVFP4", DSV4_XF_NVFP4}, {"nvfp4", DSV4_XF_NVFP4}, {"MXFP4", DSV4_XF_MXFP4},
               {"mxfp4", DSV4_XF_MXFP4}, {"fp4", DSV4_XF_MXFP4},   {"FP8", DSV4_XF_FP8},
               {"fp8", DSV4_XF_FP8},     {"bf16", DSV4_XF_FLOAT},  {"BF16", DSV4_XF_FLOAT}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(s, tab[i].name)) return (int)tab[i].f;
    return -1;
}

static dsv4_status str_field(const json_t *obj, const char *key, const char *where, const char **out, char *err,
                             size_t errlen)
{
    *out = NULL;
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return DSV4_OK;
    if (!json_is_string(v)) {
        snprintf(err, errlen, "%s: %s: expected a string", where, key);
        return DSV4_ERR_FORMAT;
    }
    *out = json_string_value(v);
    return DSV4_OK;
}

static dsv4_status declare(dsv4_quant_scheme *q, dsv4_expert_format f, const char *by, char *err, size_t errlen)
{
    /* NVFP4 (ModelOpt) overrides the stock expert_dtype "fp4" it inherits,
     * whichever is read first. */
    if (f == DSV4_XF_MXFP4 && q->experts == DSV4_XF_NVFP4) return DSV4_OK;
    if (q->experts != DSV4_XF_UNDECLARED && q->experts != f &&
        !(q->experts == DSV4_XF_MXFP4 && f == DSV4_XF_NVFP4)) {
        snprintf(err, errlen, "%s declares %s experts but %s declared %s", by, dsv4_expert_format_name(f),
                 q->declared_by, dsv4_expert_format_name(q->experts));
        return DSV4_ERR_FORMAT;
    }
    q->experts = f;
    snprintf(q->declared_by, sizeof q->declared_by, "%s", by);
    return DSV4_OK;
}

static dsv4_status read_json(const char *path, json_t **out, bool optional, char *err, size_t errlen)
{
    *out = NULL;
    const char *why;
    FILE *f = dsv4_fopen_regular(path, &why);
    if (!f) {
        if (optional && errno == ENOENT) return DSV4_OK;
        snprintf(err, errlen, "%s: cannot open: %s", path, why);
        return DSV4_ERR_IO;
    }
    json_error_t je;
    *out = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!*out || !json_is_object(*out)) {
        snprintf(err, errlen, "%s: line %d column %d: %s", path, je.line, je.column,
                 *out ? "expected a JSON object" : je.text);
        json_decref(*out);
        *out = NULL;
        return DSV4_ERR_FORMAT;
    }
    return DSV4_OK;
}

static dsv4_status parse_algo(dsv4_quant_scheme *q, const json_t *obj, const char *key, const char *where,
                              char *err, size_t errlen)
{
    const char *s;
    dsv4_status st = str_field(obj, key, where, &s, err, errlen);
    if (st || !s) return st;
    if (!strcmp(key, "quant_algo") && (!strcmp(s, "MIXED_PRECISION") || !strcmp(s, "FP8"))) return DSV4_OK;
    int f = algo_format(s);
    if (f < 0) {
        snprintf(err, errlen, "%s: %s: \"%s\" is not a format dsv4 reads (NVFP4, MXFP4, FP8, BF16)", where, key, s);
        return DSV4_ERR_UNSUPPORTED;
    }
    char by[64];
    snprintf(by, sizeof by, "%s %s", where, key);
    return declare(q, (dsv4_expert_format)f, by, err, errlen);
}

dsv4_status dsv4_quant_scheme_load(const char *dir, dsv4_quant_scheme *q, char *err, size_t errlen)
{
    memset(q, 0, sizeof(*q));
    q->block_rows = q->block_cols = 128;
    char path[4096];
    json_t *root = NULL, *hf = NULL;
    dsv4_status st;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if ((st = read_json(path, &root, false, err, errlen))) return st;

    const char *s;
    json_t *qc = json_object_get(root, "quantization_config");
    if (qc && json_is_object(qc)) {
        const char *W = "config.json quantization_config";
        if ((st = str_field(qc, "quant_method", W, &s, err, errlen))) goto done;
        if (s && strcmp(s, "fp8") && strcmp(s, "modelopt")) {
            snprintf(err, errlen, "%s: quant_method: \"%s\" is not supported (fp8, with MXFP4 or NVFP4 experts)", W,
                     s);
            st = DSV4_ERR_UNSUPPORTED;
            goto done;
        }
        q->fp8 = s && !strcmp(s, "fp8");
        if ((st = str_field(qc, "fmt", W, &s, err, errlen))) goto done;
        if (s && strcmp(s, "e4m3")) {
            snprintf(err, errlen, "%s: fmt: \"%s\" is not supported (e4m3)", W, s);
            st = DSV4_ERR_UNSUPPORTED;
            goto done;
        }
        json_t *bs = json_object_get(qc, "weight_block_size");
        if (bs && !json_is_null(bs)) {
            if (!json_is_array(bs) || json_array_size(bs) != 2 || !json_is_integer(json_array_get(bs, 0)) ||
                !json_is_integer(json_array_get(bs, 1)) || json_integer_value(json_array_get(bs, 0)) < 1 ||
                json_integer_value(json_array_get(bs, 1)) < 1 || json_integer_value(json_array_get(bs, 0)) > 4096 ||
                json_integer_value(json_array_get(bs, 1)) > 4096) {
                snprintf(err, errlen, "%s: weight_block_size: expected two positive integers", W);
                st = DSV4_ERR_FORMAT;
                goto done;
            }
            q->block_rows = (int)json_integer_value(json_array_get(bs, 0));
            q->block_cols = (int)json_integer_value(json_array_get(bs, 1));
        }
        if ((st = parse_algo(q, qc, "quant_algo", W, err, errlen))) goto done;
        if ((st = parse_algo(q, qc, "expert_dtype", W, err, errlen))) goto done;
        if ((st = parse_algo(q, qc, "moe_quant_algo", W, err, errlen))) goto done;
        json_t *gs = json_object_get(qc, "group_size");
        if (gs && json_is_integer(gs)) q->group_size = (int)json_integer_value(gs);
    }
    if ((st = parse_algo(q, root, "expert_dtype", "config.json", err, errlen))) goto done;

    snprintf(path, sizeof path, "%s/hf_quant_config.json", dir);
    if ((st = read_json(path, &hf, true, err, errlen))) goto done;
    if (hf) {
        const char *W = "hf_quant_config.json quantization";
        q->has_hf_quant_config = true;
        json_t *qq = json_object_get(hf, "quantization");
        if (!qq || !json_is_object(qq)) {
            snprintf(err, errlen, "hf_quant_config.json: no \"quantization\" object");
            st = DSV4_ERR_FORMAT;
            goto done;
        }
        if ((st = parse_algo(q, qq, "quant_algo", W, err, errlen))) goto done;
        if ((st = parse_algo(q, qq, "moe_quant_algo", W, err, errlen))) goto done;
        json_t *ql = json_object_get(qq, "quantized_layers");
        if (ql && json_is_object(ql)) {
            const char *key;
            json_t *v;
            json_object_foreach(ql, key, v)
            {
                char where[200];
                snprintf(where, sizeof where, "hf_quant_config.json quantized_layers[\"%.120s\"]", key);
                if (!json_is_object(v)) {
                    snprintf(err, errlen, "%s: expected an object", where);
                    st = DSV4_ERR_FORMAT;
                    goto done;
                }
                if ((st = str_field(v, "quant_algo", where, &s, err, errlen))) goto done;
                if (s && algo_format(s) < 0) {
                    snprintf(err, errlen, "%s: quant_algo: \"%s\" is not a format dsv4 reads (NVFP4, MXFP4, FP8)",
                             where, s);
                    st = DSV4_ERR_UNSUPPORTED;
                    goto done;
                }
                if (s && strstr(key, "experts") && (st = declare(q, (dsv4_expert_format)algo_format(s), "hf_quant_config.json quantized_layers", err, errlen)))
                    goto done;
                json_t *g = json_object_get(v, "group_size");
                if (g && json_is_integer(g)) q->group_size = (int)json_integer_value(g);
            }
        }
    }
    if (q->experts == DSV4_XF_NVFP4 && q->group_size && q->group_size != 16) {
        snprintf(err, errlen, "group_size: %d is not supported for NVFP4 experts (16)", q->group_size);
        st = DSV4_ERR_UNSUPPORTED;
    }
done:
    json_decref(root);
    json_decref(hf);
    return st;
}
