/*
 * config.c - parse and check config.json into a dsv4_config.
 *
 * This file is the only place that reads the model's JSON configuration. It
 * accepts the keys of the official release and the keys transformers writes
 * when it saves a DeepseekV4Config, resolves both into per-layer facts
 * (attention kind, compression ratio, hash routing, RoPE frequency set), and
 * refuses, with the field and the value in the message, anything the forward
 * pass would otherwise have to second-guess: inconsistent sizes, an unknown
 * compression ratio, a router or activation dsv4 does not implement.
 *
 * Absent optional fields take the DeepSeek-V4-Flash values (the defaults of
 * transformers' DeepseekV4Config are the same). JSON null counts as absent.
 * Where both spellings of one fact are present (compress_ratios and
 * layer_types, num_hash_layers and mlp_layer_types, qk_rope_head_dim and
 * partial_rotary_factor, rope_scaling and rope_parameters) they must agree.
 */
#include "model/config.h"
#include "core/file_util.h"
#include "core/json_util.h"

#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Any structural size at or above this is a corrupt config, not a model. */
#define CFG_SIZE_LIMIT 10000000

/* Sinkhorn iterations run on every hyper-connection of every token, two a layer: DeepSeek-V4 uses 20, which
 * leaves the columns exact and the rows within ~1e-2; fifty times that is room for experiments, and a step past
 * it would spend its time normalising a 4 x 4 matrix (9,999,999 made each decode step take seconds). */
#define CFG_SINKHORN_MAX 1000

typedef struct {
    const char *src; /* message prefix: "config.json" or DIR/config.json */
    char *err;
    size_t errlen;
} cfg_ctx;

static dsv4_status cfg_fail(const cfg_ctx *c, dsv4_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static dsv4_status cfg_fail(const cfg_ctx *c, dsv4_status st, const char *fmt, ...)
{
    if (c->err && c->errlen) {
        int k = snprintf(c->err, c->errlen, "%s: ", c->src);
        if (k >= 0 && (size_t)k < c->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return st;
}

/* ------------------------------------------------------------------------ */
/* typed field readers; `path` is the field's name in messages              */
/* ------------------------------------------------------------------------ */

/* The value of key in obj, NULL when absent or null. */
static json_t *field(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

static dsv4_status read_int(const cfg_ctx *c, const json_t *v, const char *path, int64_t *out)
{
    *out = 0;
    if (!json_is_integer(v))
        return cfg_fail(c, DSV4_ERR_FORMAT, "%s: expected an integer, found %s", path, dsv4_json_type_name(v));
    *out = json_integer_value(v);
    return DSV4_OK;
}

/* Integer field in [lo, hi]; `def` when absent unless `required`. */
static dsv4_status get_int(const cfg_ctx *c, const json_t *obj, const char *key, bool required, int64_t def, int64_t lo,
                           int64_t hi, int64_t *out)
{
    *out = def;
    json_t *v = field(obj, key);
    if (!v) {
        if (required) return cfg_fail(c, DSV4_ERR_FORMAT, "%s: missing; this field is required", key);
        *out = def;
        return DSV4_OK;
    }
    dsv4_status s = read_int(c, v, key, out);
    if (s) return s;
    if (*out < lo || *out > hi)
        return cfg_fail(c, DSV4_ERR_FORMAT, "%s: %lld is out of range (expected %lld to %lld)", key, (long long)*out,
                        (long long)lo, (long long)hi);
    return DSV4_OK;
}

/* A size field (int in [lo, CFG_SIZE_LIMIT)). */
static dsv4_status get_size(const cfg_ctx *c, const json_t *obj, const char *key, bool required, int def, int lo,
                            int *out)
{
    int64_t v;
    dsv4_status s = get_int(c, obj, key, required, def, lo, CFG_SIZE_LIMIT - 1, &v);
    if (!s) *out = (int)v;
    return s;
}

static dsv4_status read_num(const cfg_ctx *c, const json_t *v, const char *path, double *out)
{
    *out = 0;
    if (!json_is_number(v))
        return cfg_fail(c, DSV4_ERR_FORMAT, "%s: expected a number, found %s", path, dsv4_json_type_name(v));
    *out = json_number_value(v);
    return DSV4_OK;
}

/* Number field; `positive` refuses values <= 0. */
static dsv4_status get_num_at(const cfg_ctx *c, const json_t *obj, const char *key, const char *path, double def,
                              bool positive, double *out)
{
    *out = def;
    json_t *v = field(obj, key);
    if (!v) {
        *out = def;
        return DSV4_OK;
    }
    dsv4_status s = read_num(c, v, path, out);
    if (s) return s;
    /* the engine computes in FP32: a value past FLT_MAX would become Inf there and NaN the logits */
    if (!isfinite(*out) || fabs(*out) > FLT_MAX || (positive && !(*out > 0)))
        return cfg_fail(c, DSV4_ERR_FORMAT, "%s: %g is out of range (expected a %snumber within FP32's range)", path,
                        *out, positive ? "positive " : "finite ");
    return DSV4_OK;
}

static dsv4_status get_num(const cfg_ctx *c, const json_t *obj, const char *key, double def, bool positive, double *out)
{
    return get_num_at(c, obj, key, key, def, positive, out);
}

static dsv4_status get_bool(const cfg_ctx *c, const json_t *obj, const char *key, bool def, bool *out)
{
    *out = def;
    json_t *v = field(obj, key);
    if (!v) {
        *out = def;
        return DSV4_OK;
    }
    if (!json_is_boolean(v))
        return cfg_fail(c, DSV4_ERR_FORMAT, "%s: expected true or false, found %s", key, dsv4_json_type_name(v));
    *out = json_is_true(v);
    return DSV4_OK;
}

/* String field; *out = NULL when absent. */
static dsv4_status get_str_at(const cfg_ctx *c, const json_t *obj, const char *key, const char *path, const char **out)
{
    json_t *v = field(obj, key);
    *out = NULL;
    if (!v) return DSV4_OK;
    if (!json_is_string(v))
        return cfg_fail(c, DSV4_ERR_FORMAT, "%s: expected a string, found %s", path, dsv4_json_type_name(v));
    *out = json_string_value(v);
    return DSV4_OK;
}

static dsv4_status get_str(const cfg_ctx *c, const json_t *obj, const char *key, const char **out)
{
    return get_str_at(c, obj, key, key, out);
}

/* An object field (NULL when absent). */
static dsv4_status get_obj(const cfg_ctx *c, const json_t *obj, const char *key, json_t **out)
{
    json_t *v = field(obj, key);
    *out = NULL;
    if (!v) return DSV4_OK;
    if (!json_is_object(v))
        return cfg_fail(c, DSV4_ERR_FORMAT, "%s: expected an object, found %s", key, dsv4_json_type_name(v));
    *out = v;
    return DSV4_OK;
}

static dsv4_status get_array(const cfg_ctx *c, const json_t *obj, const char *key, json_t **out)
{
    json_t *v = field(obj, key);
    *out = NULL;
    if (!v) return DSV4_OK;
    if (!json_is_array(v))
        return cfg_fail(c, DSV4_ERR_FORMAT, "%s: expected an array, found %s", key, dsv4_json_type_name(v));
    *out = v;
    return DSV4_OK;
}

#define TRY(expr)                                                                                                      \
    do {                                                                                                               \
        dsv4_status s_ = (expr);                                                                                       \
        if (s_) return s_;                                                                                             \
    } while (0)

/* ------------------------------------------------------------------------ */
/* RoPE                                                                     */
/* ------------------------------------------------------------------------ */

/* Read a rope dict: rope_scaling (official), a rope_parameters sub-dict or a
 * flat rope_parameters (transformers). `read_theta`: take rope_theta from the
 * dict when present (nested rope_parameters only). */
static dsv4_status parse_rope_dict(const cfg_ctx *c, const json_t *o, const char *path, bool read_theta,
                                   bool type_required, dsv4_rope_cfg *r)
{
    /* Only transformers' nested rope_parameters.{main,compress} leave a missing attention_factor to
     * transformers' YaRN default (DeepseekV4Config pins 1.0 for rope_scaling and the flat spelling). */
    const bool af_inferred = read_theta;
    char p[96];
    const char *type = NULL;
    snprintf(p, sizeof p, "%s.rope_type", path);
    TRY(get_str_at(c, o, "rope_type", p, &type));
    if (!type) {
        snprintf(p, sizeof p, "%s.type", path);
        TRY(get_str_at(c, o, "type", p, &type));
    }
    if (!type && type_required) return cfg_fail(c, DSV4_ERR_FORMAT, "%s: has neither \"type\" nor \"rope_type\"", path);
    if (read_theta) {
        snprintf(p, sizeof p, "%s.rope_theta", path);
        TRY(get_num_at(c, o, "rope_theta", p, r->theta, true, &r->theta));
    }
    r->yarn = false;
    r->factor = 1.0;
    r->orig_max_pos = 0;
    r->beta_fast = 32;
    r->beta_slow = 1;
    if (!type || strcmp(type, "default") == 0) return DSV4_OK;
    if (strcmp(type, "yarn") != 0)
        return cfg_fail(c, DSV4_ERR_UNSUPPORTED,
                        "%s: rope type \"%s\" is not supported (dsv4 implements \"yarn\" and \"default\")", path, type);
    r->yarn = true;
    if (!field(o, "factor")) return cfg_fail(c, DSV4_ERR_FORMAT, "%s.factor: missing; yarn needs it", path);
    if (!field(o, "original_max_position_embeddings"))
        return cfg_fail(c, DSV4_ERR_FORMAT, "%s.original_max_position_embeddings: missing; yarn needs it", path);
    snprintf(p, sizeof p, "%s.factor", path);
    TRY(get_num_at(c, o, "factor", p, 1.0, true, &r->factor));
    snprintf(p, sizeof p, "%s.original_max_position_embeddings", path);
    TRY(get_num_at(c, o, "original_max_position_embeddings", p, 0, true, &r->orig_max_pos));
    snprintf(p, sizeof p, "%s.beta_fast", path);
    TRY(get_num_at(c, o, "beta_fast", p, 32, true, &r->beta_fast));
    snprintf(p, sizeof p, "%s.beta_slow", path);
    TRY(get_num_at(c, o, "beta_slow", p, 1, true, &r->beta_slow));
    /* The reference applies no YaRN magnitude term; transformers pins
     * attention_factor to 1.0 for the same reason. Any other value would make
     * the oracle and dsv4 compute different models. */
    double af;
    snprintf(p, sizeof p, "%s.attention_factor", path);
    TRY(get_num_at(c, o, "attention_factor", p, 1.0, true, &af));
    if (af_inferred && !field(o, "attention_factor")) {
        /* transformers' _compute_yarn_parameters: mscale(factor, m) = 0.1 m ln(factor) + 1 (1 for factor <= 1),
         * mscale(factor, mscale) / mscale(factor, mscale_all_dim) when both are given and non-zero,
         * mscale(factor, 1) otherwise; it multiplies cos and sin by it. */
        double ms = 0, msa = 0;
        char q[96];
        snprintf(q, sizeof q, "%s.mscale", path);
        TRY(get_num_at(c, o, "mscale", q, 0, false, &ms));
        snprintf(q, sizeof q, "%s.mscale_all_dim", path);
        TRY(get_num_at(c, o, "mscale_all_dim", q, 0, false, &msa));
        double f = r->factor;
#define YARN_MSCALE(m) (f <= 1 ? 1.0 : 0.1 * (m)*log(f) + 1.0)
        double inferred = ms != 0 && msa != 0 ? YARN_MSCALE(ms) / YARN_MSCALE(msa) : YARN_MSCALE(1.0);
#undef YARN_MSCALE
        if (fabs(inferred - 1.0) > 1e-12)
            return cfg_fail(c, DSV4_ERR_UNSUPPORTED,
                            "%s: missing, so transformers infers %g from factor %g (a YaRN magnitude term dsv4 does "
                            "not implement; DeepSeek-V4 uses 1.0: set \"attention_factor\": 1.0)",
                            p, inferred, f);
    }
    if (af != 1.0)
        return cfg_fail(c, DSV4_ERR_UNSUPPORTED,
                        "%s: %g is not supported (dsv4 implements YaRN without a magnitude term, i.e. 1.0)", p, af);
    return DSV4_OK;
}

static bool rope_equal(const dsv4_rope_cfg *a, const dsv4_rope_cfg *b)
{
    if (a->theta != b->theta || a->yarn != b->yarn) return false;
    return !a->yarn || (a->factor == b->factor && a->orig_max_pos == b->orig_max_pos && a->beta_fast == b->beta_fast &&
                        a->beta_slow == b->beta_slow);
}

static dsv4_status parse_rope(const cfg_ctx *c, const json_t *root, dsv4_config *cfg)
{
    double theta_main, theta_comp;
    TRY(get_num(c, root, "rope_theta", 10000.0, true, &theta_main));
    TRY(get_num(c, root, "compress_rope_theta", 160000.0, true, &theta_comp));

    json_t *rs, *rp;
    TRY(get_obj(c, root, "rope_scaling", &rs));
    TRY(get_obj(c, root, "rope_parameters", &rp));

    /* Official spelling: main = plain rope_theta; compressed layers =
     * compress_rope_theta with rope_scaling's YaRN. */
    dsv4_rope_cfg main = {.theta = theta_main, .factor = 1.0, .beta_fast = 32, .beta_slow = 1};
    dsv4_rope_cfg comp = main;
    comp.theta = theta_comp;
    if (rs) TRY(parse_rope_dict(c, rs, "rope_scaling", false, true, &comp));
    if (!rp) {
        cfg->rope_main = main;
        cfg->rope_compress = comp;
        return DSV4_OK;
    }

    /* transformers: {"main": {...}, "compress": {...}} when both are objects,
     * otherwise a flat dict of YaRN settings for the compressed layers. */
    dsv4_rope_cfg pm = main, pc = main;
    pc.theta = theta_comp;
    json_t *m = json_object_get(rp, "main"), *k = json_object_get(rp, "compress");
    if (json_is_object(m) && json_is_object(k)) {
        /* transformers' standardize_rope_params fills a nested entry's missing rope_theta from rope_theta,
         * the compressed layers' too (compress_rope_theta is not read there) */
        pc.theta = theta_main;
        TRY(parse_rope_dict(c, m, "rope_parameters.main", true, false, &pm));
        TRY(parse_rope_dict(c, k, "rope_parameters.compress", true, false, &pc));
        /* transformers sizes each layer type's RoPE by its own partial_rotary_factor (it rotates the last
         * head_dim x factor dims); dsv4 rotates qk_rope_head_dim dims in every layer */
        const json_t *sub[2] = {m, k};
        const char *name[2] = {"rope_parameters.main", "rope_parameters.compress"};
        for (int i = 0; i < 2; i++) {
            char p[96];
            double prf;
            snprintf(p, sizeof p, "%s.partial_rotary_factor", name[i]);
            if (!field(sub[i], "partial_rotary_factor")) continue;
            TRY(get_num_at(c, sub[i], "partial_rotary_factor", p, 0, true, &prf));
            if (fabs(cfg->head_dim * prf - cfg->rope_dim) > 1e-6 * (1 + cfg->rope_dim))
                return cfg_fail(c, DSV4_ERR_UNSUPPORTED,
                                "%s: %g x head_dim %d = %g rotated dims disagrees with qk_rope_head_dim %d (dsv4 "
                                "rotates the same dims in every layer)",
                                p, prf, cfg->head_dim, cfg->head_dim * prf, cfg->rope_dim);
        }
    } else {
        TRY(parse_rope_dict(c, rp, "rope_parameters", false, false, &pc));
    }
    if (rs && !rope_equal(&comp, &pc))
        return cfg_fail(c, DSV4_ERR_FORMAT,
                        "rope_scaling and rope_parameters disagree on the compressed layers' RoPE "
                        "(theta %g vs %g, yarn %s vs %s, factor %g vs %g, original_max_position_embeddings %g "
                        "vs %g, beta_fast %g vs %g, beta_slow %g vs %g)",
                        comp.theta, pc.theta, comp.yarn ? "on" : "off", pc.yarn ? "on" : "off", comp.factor, pc.factor,
                        comp.orig_max_pos, pc.orig_max_pos, comp.beta_fast, pc.beta_fast, comp.beta_slow, pc.beta_slow);
    cfg->rope_main = pm;
    cfg->rope_compress = pc;
    return DSV4_OK;
}

/* YaRN's correction range divides by log(theta): theta 1 makes every frequency NaN (the reference divides
 * by zero there), a theta under 1 turns the range around. */
static dsv4_status check_yarn_theta(const cfg_ctx *c, const dsv4_config *cfg)
{
    const struct {
        const dsv4_rope_cfg *r;
        const char *name;
    } rs[] = {{&cfg->rope_main, "rope_theta"}, {&cfg->rope_compress, "compress_rope_theta"}};
    for (size_t i = 0; i < 2; i++)
        if (rs[i].r->yarn && !(rs[i].r->theta > 1))
            return cfg_fail(c, DSV4_ERR_FORMAT, "%s: %g is out of range for YaRN (expected a number above 1)",
                            rs[i].name, rs[i].r->theta);
    return DSV4_OK;
}

/* ------------------------------------------------------------------------ */
/* per-layer kinds                                                          */
/* ------------------------------------------------------------------------ */

static const char *kind_name(dsv4_attn_kind k)
{
    switch (k) {
    case DSV4_ATTN_SLIDING:
        return "sliding_attention";
    case DSV4_ATTN_CSA:
        return "compressed_sparse_attention";
    case DSV4_ATTN_HCA:
        return "heavily_compressed_attention";
    }
    return "?";
}

/* An array of per-layer entries may carry the MTP layers after the decoder
 * layers (the official compress_ratios has 44 entries for 43 + 1). */
static dsv4_status check_layer_array_len(const cfg_ctx *c, const char *key, size_t len, const dsv4_config *cfg)
{
    size_t n = (size_t)cfg->n_layers, nm = (size_t)cfg->n_layers + (size_t)cfg->n_mtp_layers;
    /* Extra entries belong to MTP layers (transformers truncates the same way). */
    if (len >= n) return DSV4_OK;
    (void)nm;
    if (n == nm)
        return cfg_fail(c, DSV4_ERR_FORMAT, "%s: has %zu entries, expected num_hidden_layers = %zu", key, len, n);
    return cfg_fail(c, DSV4_ERR_FORMAT,
                    "%s: has %zu entries, expected num_hidden_layers = %zu or num_hidden_layers + "
                    "num_nextn_predict_layers = %zu",
                    key, len, n, nm);
}

/* The compression rates of CSA and HCA layers: 4 and 128, or compress_rates {compressed_sparse_attention,
 * heavily_compressed_attention}, or the scalars compress_rate_csa / compress_rate_hca over those (transformers
 * folds them in so). The layer kinds come from layer_types or compress_ratios; the rates from here. */
static dsv4_status parse_rates(const cfg_ctx *c, const json_t *root, int *csa, int *hca)
{
    json_t *rates;
    TRY(get_obj(c, root, "compress_rates", &rates));
    const struct {
        const json_t *obj;
        const char *key, *name;
        int *out;
    } src[] = {
        {rates, "compressed_sparse_attention", "compress_rates.compressed_sparse_attention", csa},
        {rates, "heavily_compressed_attention", "compress_rates.heavily_compressed_attention", hca},
        {root, "compress_rate_csa", "compress_rate_csa", csa},
        {root, "compress_rate_hca", "compress_rate_hca", hca},
    };
    *csa = 4, *hca = 128;
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++) {
        json_t *v = src[i].obj ? field(src[i].obj, src[i].key) : NULL;
        int64_t r;
        if (!v) continue;
        TRY(read_int(c, v, src[i].name, &r));
        if (r < 1 || r >= CFG_SIZE_LIMIT)
            return cfg_fail(c, DSV4_ERR_FORMAT, "%s: %lld is out of range (expected >= 1)", src[i].name, (long long)r);
        *src[i].out = (int)r;
    }
    return DSV4_OK;
}

/* compress_ratios (the official key): 0, 4 and 128 name the kinds (sliding, CSA, HCA), as in transformers,
 * whose rates then apply. */
static dsv4_status parse_compress_ratios(const cfg_ctx *c, const json_t *arr, int rate_csa, int rate_hca,
                                         dsv4_attn_kind *kind, int *ratio, const dsv4_config *cfg)
{
    TRY(check_layer_array_len(c, "compress_ratios", json_array_size(arr), cfg));
    char p[48];
    for (size_t i = 0; i < json_array_size(arr); i++) {
        int64_t r;
        snprintf(p, sizeof p, "compress_ratios[%zu]", i);
        TRY(read_int(c, json_array_get(arr, i), p, &r));
        if (i >= (size_t)cfg->n_layers) {
            if (r != 0)
                return cfg_fail(c, DSV4_ERR_FORMAT,
                                "%s: %lld, but entries past num_hidden_layers (%d) belong to the MTP layers, which "
                                "use sliding attention only (0)",
                                p, (long long)r, cfg->n_layers);
            continue;
        }
        if (r == 0)
            kind[i] = DSV4_ATTN_SLIDING, ratio[i] = 0;
        else if (r == 4)
            kind[i] = DSV4_ATTN_CSA, ratio[i] = rate_csa;
        else if (r == 128)
            kind[i] = DSV4_ATTN_HCA, ratio[i] = rate_hca;
        else
            return cfg_fail(c, DSV4_ERR_FORMAT, "%s: %lld is not a DeepSeek-V4 ratio (0 sliding, 4 CSA, 128 HCA)", p,
                            (long long)r);
    }
    return DSV4_OK;
}

static dsv4_status parse_layer_types(const cfg_ctx *c, const json_t *arr, int rate_csa, int rate_hca,
                                     dsv4_attn_kind *kind, int *ratio, const dsv4_config *cfg)
{
    TRY(check_layer_array_len(c, "layer_types", json_array_size(arr), cfg));
    char p[48];
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *v = json_array_get(arr, i);
        snprintf(p, sizeof p, "layer_types[%zu]", i);
        if (!json_is_string(v))
            return cfg_fail(c, DSV4_ERR_FORMAT, "%s: expected a string, found %s", p, dsv4_json_type_name(v));
        const char *s = json_string_value(v);
        dsv4_attn_kind k;
        int r;
        if (strcmp(s, "sliding_attention") == 0)
            k = DSV4_ATTN_SLIDING, r = 0;
        else if (strcmp(s, "compressed_sparse_attention") == 0)
            k = DSV4_ATTN_CSA, r = rate_csa;
        else if (strcmp(s, "heavily_compressed_attention") == 0)
            k = DSV4_ATTN_HCA, r = rate_hca;
        else
            return cfg_fail(c, DSV4_ERR_FORMAT,
                            "%s: \"%s\" is not a DeepSeek-V4 layer type (sliding_attention, "
                            "compressed_sparse_attention, heavily_compressed_attention)",
                            p, s);
        if (i >= (size_t)cfg->n_layers) {
            if (k != DSV4_ATTN_SLIDING)
                return cfg_fail(c, DSV4_ERR_FORMAT,
                                "%s: \"%s\", but entries past num_hidden_layers (%d) belong to the MTP layers, "
                                "which use sliding attention only",
                                p, s, cfg->n_layers);
            continue;
        }
        kind[i] = k;
        ratio[i] = r;
    }
    return DSV4_OK;
}

static dsv4_status parse_layers(const cfg_ctx *c, const json_t *root, dsv4_config *cfg)
{
    json_t *cr, *lt, *mlt;
    TRY(get_array(c, root, "compress_ratios", &cr));
    TRY(get_array(c, root, "layer_types", &lt));
    TRY(get_array(c, root, "mlp_layer_types", &mlt));
    int n = cfg->n_layers;

    if (!cr && !lt)
        return cfg_fail(c, DSV4_ERR_FORMAT,
                        "compress_ratios: missing (and no layer_types either); the per-layer attention kinds "
                        "are required");
    int rate_csa = 4, rate_hca = 128;
    TRY(parse_rates(c, root, &rate_csa, &rate_hca));
    if (lt) TRY(parse_layer_types(c, lt, rate_csa, rate_hca, cfg->layer_kind, cfg->layer_ratio, cfg));
    if (cr) {
        dsv4_attn_kind kind[DSV4_MAX_LAYERS];
        int ratio[DSV4_MAX_LAYERS];
        TRY(parse_compress_ratios(c, cr, rate_csa, rate_hca, kind, ratio, cfg));
        if (!lt) {
            memcpy(cfg->layer_kind, kind, sizeof kind);
            memcpy(cfg->layer_ratio, ratio, sizeof ratio);
        } else {
            for (int i = 0; i < n; i++)
                if (kind[i] != cfg->layer_kind[i])
                    return cfg_fail(c, DSV4_ERR_FORMAT, "layer_types[%d] (%s) disagrees with compress_ratios[%d] (%s)",
                                    i, kind_name(cfg->layer_kind[i]), i, kind_name(kind[i]));
        }
    }

    /* Hash routing: num_hash_layers (first N layers) or mlp_layer_types. */
    bool have_nhash = field(root, "num_hash_layers") != NULL;
    int64_t nhash;
    TRY(get_int(c, root, "num_hash_layers", false, 3, 0, CFG_SIZE_LIMIT - 1, &nhash));
    if (nhash > n) nhash = n; /* as transformers does: min(n_layers, num_hash_layers) */
    for (int i = 0; i < n; i++) cfg->layer_hash[i] = i < nhash;
    if (mlt) {
        TRY(check_layer_array_len(c, "mlp_layer_types", json_array_size(mlt), cfg));
        char p[48];
        for (size_t i = 0; i < json_array_size(mlt); i++) {
            json_t *v = json_array_get(mlt, i);
            snprintf(p, sizeof p, "mlp_layer_types[%zu]", i);
            if (!json_is_string(v))
                return cfg_fail(c, DSV4_ERR_FORMAT, "%s: expected a string, found %s", p, dsv4_json_type_name(v));
            const char *s = json_string_value(v);
            bool hash;
            if (strcmp(s, "hash_moe") == 0)
                hash = true;
            else if (strcmp(s, "moe") == 0)
                hash = false;
            else
                return cfg_fail(c, DSV4_ERR_FORMAT, "%s: \"%s\" is not a DeepSeek-V4 MLP type (hash_moe, moe)", p, s);
            if (i >= (size_t)n) continue; /* MTP layers: not described by dsv4_config */
            if (have_nhash && hash != cfg->layer_hash[i])
                return cfg_fail(c, DSV4_ERR_FORMAT, "mlp_layer_types[%zu] (%s) disagrees with num_hash_layers (%lld)",
                                i, s, (long long)nhash);
            cfg->layer_hash[i] = hash;
        }
    }
    return DSV4_OK;
}

/* ------------------------------------------------------------------------ */
/* top level                                                                */
/* ------------------------------------------------------------------------ */

/* A string field that, when present, must equal `want`. */
static dsv4_status require_str(const cfg_ctx *c, const json_t *root, const char *key, const char *want, const char *why)
{
    const char *v;
    TRY(get_str(c, root, key, &v));
    if (v && strcmp(v, want) != 0)
        return cfg_fail(c, DSV4_ERR_UNSUPPORTED, "%s: \"%s\" is not supported (%s)", key, v, why);
    return DSV4_OK;
}

static dsv4_status require_false(const cfg_ctx *c, const json_t *root, const char *key, const char *why)
{
    bool b = false;
    TRY(get_bool(c, root, key, false, &b));
    if (b) return cfg_fail(c, DSV4_ERR_UNSUPPORTED, "%s: true is not supported (%s)", key, why);
    return DSV4_OK;
}

static dsv4_status parse_token_ids(const cfg_ctx *c, const json_t *root, dsv4_config *cfg)
{
    int64_t v;
    TRY(get_int(c, root, "bos_token_id", false, 0, 0, cfg->vocab_size - 1, &v));
    cfg->bos_token_id = (int)v;
    json_t *e = field(root, "eos_token_id");
    if (json_is_array(e)) {
        /* transformers allows a list of stop ids; the first is the model's EOS. */
        if (json_array_size(e) == 0) return cfg_fail(c, DSV4_ERR_FORMAT, "eos_token_id: the list is empty");
        TRY(read_int(c, json_array_get(e, 0), "eos_token_id[0]", &v));
    } else if (e) {
        TRY(read_int(c, e, "eos_token_id", &v));
    } else {
        v = 1;
    }
    if (v < 0 || v >= cfg->vocab_size)
        return cfg_fail(c, DSV4_ERR_FORMAT, "eos_token_id: %lld is outside the vocabulary (vocab_size %d)",
                        (long long)v, cfg->vocab_size);
    cfg->eos_token_id = (int)v;
    return DSV4_OK;
}

static dsv4_status parse_rope_dim(const cfg_ctx *c, const json_t *root, dsv4_config *cfg)
{
    bool have_qk = field(root, "qk_rope_head_dim") != NULL;
    int qk = 0;
    TRY(get_size(c, root, "qk_rope_head_dim", false, 0, 0, &qk));
    double prf;
    bool have_prf = field(root, "partial_rotary_factor") != NULL;
    TRY(get_num(c, root, "partial_rotary_factor", 0.125, true, &prf));
    if (have_prf) {
        double d = cfg->head_dim * prf;
        double r = nearbyint(d);
        if (fabs(d - r) > 1e-6 * (1 + fabs(d)))
            return cfg_fail(c, DSV4_ERR_FORMAT,
                            "partial_rotary_factor: %g x head_dim %d = %g is not a whole number of dims", prf,
                            cfg->head_dim, d);
        cfg->rope_dim = (int)r;
        if (have_qk && qk != cfg->rope_dim)
            return cfg_fail(c, DSV4_ERR_FORMAT,
                            "qk_rope_head_dim (%d) disagrees with partial_rotary_factor %g x head_dim %d = %d", qk, prf,
                            cfg->head_dim, cfg->rope_dim);
    } else if (have_qk) {
        cfg->rope_dim = qk;
    } else {
        cfg->rope_dim = cfg->head_dim / 8; /* transformers' default factor 64/512 */
    }
    if (cfg->rope_dim <= 0 || cfg->rope_dim > cfg->head_dim || cfg->rope_dim % 2)
        return cfg_fail(c, DSV4_ERR_FORMAT,
                        "qk_rope_head_dim: %d is invalid (expected an even number in 2..head_dim = %d)", cfg->rope_dim,
                        cfg->head_dim);
    return DSV4_OK;
}

static dsv4_status parse_root(const cfg_ctx *c, const json_t *root, dsv4_config *cfg)
{
    if (!json_is_object(root))
        return cfg_fail(c, DSV4_ERR_FORMAT, "the top level is %s, expected an object", dsv4_json_type_name(root));

    TRY(require_str(c, root, "model_type", "deepseek_v4", "dsv4 serves deepseek_v4 models"));

    /* sizes */
    TRY(get_size(c, root, "vocab_size", true, 0, 1, &cfg->vocab_size));
    TRY(get_size(c, root, "hidden_size", true, 0, 1, &cfg->dim));
    int64_t v;
    TRY(get_int(c, root, "num_hidden_layers", true, 0, 1, DSV4_MAX_LAYERS, &v));
    cfg->n_layers = (int)v;
    TRY(get_int(c, root, "num_nextn_predict_layers", false, 1, 0, DSV4_MAX_LAYERS, &v));
    cfg->n_mtp_layers = (int)v;
    TRY(get_size(c, root, "num_attention_heads", true, 0, 1, &cfg->n_heads));
    int kv_heads;
    TRY(get_size(c, root, "num_key_value_heads", false, 1, 1, &kv_heads));
    if (kv_heads != 1)
        return cfg_fail(c, DSV4_ERR_UNSUPPORTED,
                        "num_key_value_heads: %d is not supported (DeepSeek-V4 attention has one shared K=V head)",
                        kv_heads);
    TRY(get_size(c, root, "head_dim", true, 0, 1, &cfg->head_dim));
    TRY(parse_rope_dim(c, root, cfg));
    TRY(get_size(c, root, "q_lora_rank", true, 0, 1, &cfg->q_lora_rank));
    TRY(get_size(c, root, "o_groups", false, 8, 1, &cfg->o_groups));
    TRY(get_size(c, root, "o_lora_rank", true, 0, 1, &cfg->o_lora_rank));
    TRY(get_size(c, root, "sliding_window", false, 128, 1, &cfg->window));
    if (cfg->n_heads % cfg->o_groups)
        return cfg_fail(c, DSV4_ERR_FORMAT, "o_groups: %d does not divide num_attention_heads (%d)", cfg->o_groups,
                        cfg->n_heads);

    TRY(get_size(c, root, "index_n_heads", false, 64, 1, &cfg->index_n_heads));
    TRY(get_size(c, root, "index_head_dim", false, 128, 1, &cfg->index_head_dim));
    TRY(get_size(c, root, "index_topk", false, 512, 1, &cfg->index_topk));

    /* MoE */
    TRY(get_size(c, root, "n_routed_experts", true, 0, 1, &cfg->n_routed_experts));
    TRY(get_size(c, root, "num_experts_per_tok", true, 0, 1, &cfg->n_experts_per_tok));
    TRY(get_size(c, root, "n_shared_experts", false, 1, 0, &cfg->n_shared_experts));
    TRY(get_size(c, root, "moe_intermediate_size", true, 0, 1, &cfg->moe_inter_dim));
    if (cfg->n_shared_experts > 1)
        return cfg_fail(c, DSV4_ERR_UNSUPPORTED, "n_shared_experts: %d is not supported (0 or 1)",
                        cfg->n_shared_experts);
    if (cfg->n_experts_per_tok > cfg->n_routed_experts)
        return cfg_fail(c, DSV4_ERR_FORMAT, "num_experts_per_tok: %d is more than n_routed_experts (%d)",
                        cfg->n_experts_per_tok, cfg->n_routed_experts);
    TRY(require_str(c, root, "scoring_func", "sqrtsoftplus", "dsv4 implements the sqrtsoftplus router"));
    TRY(require_str(c, root, "topk_method", "noaux_tc", "dsv4 implements bias-corrected top-k, noaux_tc"));
    /* Read (a wrong type is still an error) but not followed: DeepSeek's reference and transformers'
       DeepseekV4ForCausalLM renormalise the selected sqrtsoftplus weights whatever it says, and the release
       says true. A tiny model saved with false is run as transformers runs it. */
    bool norm_topk_prob;
    TRY(get_bool(c, root, "norm_topk_prob", true, &norm_topk_prob));
    (void)norm_topk_prob;
    TRY(get_num(c, root, "routed_scaling_factor", 1.5, true, &cfg->routed_scaling_factor));
    TRY(get_num(c, root, "swiglu_limit", 10.0, false, &cfg->swiglu_limit));
    TRY(require_str(c, root, "hidden_act", "silu", "dsv4 implements SwiGLU with silu"));
    TRY(require_false(c, root, "attention_bias", "DeepSeek-V4 attention has no biases"));
    TRY(require_false(c, root, "tie_word_embeddings", "dsv4 reads separate embed and head weights"));

    /* hyper-connections and norms */
    TRY(get_size(c, root, "hc_mult", false, 4, 1, &cfg->hc_mult));
    TRY(get_size(c, root, "hc_sinkhorn_iters", false, 20, 1, &cfg->hc_sinkhorn_iters));
    if (cfg->hc_sinkhorn_iters > CFG_SINKHORN_MAX)
        return cfg_fail(c, DSV4_ERR_FORMAT,
                        "hc_sinkhorn_iters: %d is out of range (expected 1 to %d; every hyper-connection of every "
                        "token runs them, and DeepSeek-V4 uses 20)",
                        cfg->hc_sinkhorn_iters, CFG_SINKHORN_MAX);
    TRY(get_num(c, root, "hc_eps", 1e-6, true, &cfg->hc_eps));
    TRY(get_num(c, root, "rms_norm_eps", 1e-6, true, &cfg->rms_norm_eps));

    /* positions */
    TRY(parse_rope(c, root, cfg));
    TRY(check_yarn_theta(c, cfg));
    TRY(get_int(c, root, "max_position_embeddings", false, 1048576, 1, (int64_t)1 << 40,
                &cfg->max_position_embeddings));
    TRY(parse_token_ids(c, root, cfg));

    /* layers */
    TRY(parse_layers(c, root, cfg));
    if (dsv4_config_count_kind(cfg, DSV4_ATTN_CSA) > 0 &&
        (cfg->index_head_dim % 2 || cfg->index_head_dim < cfg->rope_dim))
        return cfg_fail(c, DSV4_ERR_FORMAT,
                        "index_head_dim: %d is invalid for the CSA layers' indexer (expected an even number >= "
                        "qk_rope_head_dim = %d)",
                        cfg->index_head_dim, cfg->rope_dim);

    /* quantisation, as declared */
    json_t *q;
    TRY(get_obj(c, root, "quantization_config", &q));
    if (q) {
        const char *m;
        TRY(get_str_at(c, q, "quant_method", "quantization_config.quant_method", &m));
        cfg->has_quant_config = true;
        if (m && strlen(m) >= sizeof cfg->quant_method)
            return cfg_fail(c, DSV4_ERR_FORMAT, "quantization_config.quant_method: \"%.40s...\" is too long", m);
        snprintf(cfg->quant_method, sizeof cfg->quant_method, "%s", m ? m : "");
    }
    return DSV4_OK;
}

static dsv4_status config_parse_named(const char *src, const char *text, size_t len, dsv4_config *out, char *err,
                                      size_t errlen)
{
    cfg_ctx c = {.src = src, .err = err, .errlen = errlen};
    if (err && errlen) err[0] = '\0';
    if (!text || !out) return cfg_fail(&c, DSV4_ERR_INVALID, "dsv4_config_parse: NULL argument");
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return cfg_fail(&c, DSV4_ERR_FORMAT, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
    /* Parse into a scratch copy so that a refused config leaves *out as it was. */
    dsv4_config *cfg = calloc(1, sizeof *cfg);
    dsv4_status s;
    if (!cfg) {
        s = cfg_fail(&c, DSV4_ERR_NOMEM, "out of memory");
    } else {
        s = parse_root(&c, root, cfg);
        if (!s) *out = *cfg;
    }
    free(cfg);
    json_decref(root);
    return s;
}

dsv4_status dsv4_config_parse(const char *text, size_t len, dsv4_config *cfg, char *err, size_t errlen)
{
    return config_parse_named("config.json", text, len, cfg, err, errlen);
}

dsv4_status dsv4_config_load(const char *dir, dsv4_config *cfg, char *err, size_t errlen)
{
    cfg_ctx c = {.src = "config.json", .err = err, .errlen = errlen};
    if (!dir || !cfg) return cfg_fail(&c, DSV4_ERR_INVALID, "dsv4_config_load: NULL argument");
    size_t dl = strlen(dir);
    char *path = malloc(dl + sizeof "/config.json");
    if (!path) return cfg_fail(&c, DSV4_ERR_NOMEM, "out of memory");
    snprintf(path, dl + sizeof "/config.json", "%s%sconfig.json", dir, dl && dir[dl - 1] == '/' ? "" : "/");

    dsv4_status s = DSV4_OK;
    char *buf = NULL;
    size_t n = 0;
    const char *why;
    FILE *fp = dsv4_fopen_regular(path, &why);
    if (!fp) {
        c.src = path;
        s = cfg_fail(&c, DSV4_ERR_IO, "%s", why);
        goto done;
    }
    /* config.json is a few KB; 16 MB means something else sits there. */
    const size_t limit = 16u << 20;
    const dsv4_status rs = dsv4_read_all(fp, limit, &buf, &n);
    c.src = path;
    if (rs == DSV4_ERR_NOMEM)
        s = cfg_fail(&c, DSV4_ERR_NOMEM, "out of memory");
    else if (rs == DSV4_ERR_IO)
        s = cfg_fail(&c, DSV4_ERR_IO, "read error: %s", strerror(errno));
    else if (rs)
        s = cfg_fail(&c, DSV4_ERR_FORMAT, "larger than %zu bytes; not a config.json", limit);
    else
        s = config_parse_named(path, buf, n, cfg, err, errlen);
    fclose(fp);
done:
    free(buf);
    free(path);
    return s;
}

int dsv4_config_count_kind(const dsv4_config *cfg, dsv4_attn_kind kind)
{
    if (!cfg) return 0;
    int n = 0;
    for (int i = 0; i < cfg->n_layers && i < DSV4_MAX_LAYERS; i++) n += cfg->layer_kind[i] == kind;
    return n;
}
