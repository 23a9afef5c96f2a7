/*
 * test_config.c - config.json parsing: the official Flash config, the same
 * model as transformers saves it, and inconsistent configs that must be
 * refused with the offending field named.
 *
 * Variants are made by editing the Flash JSON with jansson and handing the
 * re-serialised text to dsv4_config_parse, so each case changes one thing.
 */
#define _GNU_SOURCE /* mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/config.h"

/* config.json of deepseek-ai/DeepSeek-V4-Flash (MODEL.md §1.1). */
static const char flash_config[] =
    "{\n"
    "  \"architectures\": [\"DeepseekV4ForCausalLM\"],\n"
    "  \"model_type\": \"deepseek_v4\",\n"
    "  \"vocab_size\": 129280,\n"
    "  \"hidden_size\": 4096,\n"
    "  \"num_hidden_layers\": 43,\n"
    "  \"num_nextn_predict_layers\": 1,\n"
    "  \"num_attention_heads\": 64,\n"
    "  \"num_key_value_heads\": 1,\n"
    "  \"head_dim\": 512,\n"
    "  \"qk_rope_head_dim\": 64,\n"
    "  \"q_lora_rank\": 1024,\n"
    "  \"o_groups\": 8,\n"
    "  \"o_lora_rank\": 1024,\n"
    "  \"sliding_window\": 128,\n"
    "  \"compress_ratios\": [0, 0, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4,\n"
    "                      128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4,\n"
    "                      128, 4, 0],\n"
    "  \"compress_rope_theta\": 160000,\n"
    "  \"rope_theta\": 10000,\n"
    "  \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 16, \"original_max_position_embeddings\": 65536,\n"
    "                   \"beta_fast\": 32, \"beta_slow\": 1},\n"
    "  \"max_position_embeddings\": 1048576,\n"
    "  \"index_n_heads\": 64,\n"
    "  \"index_head_dim\": 128,\n"
    "  \"index_topk\": 512,\n"
    "  \"n_routed_experts\": 256,\n"
    "  \"n_shared_experts\": 1,\n"
    "  \"num_experts_per_tok\": 6,\n"
    "  \"moe_intermediate_size\": 2048,\n"
    "  \"scoring_func\": \"sqrtsoftplus\",\n"
    "  \"topk_method\": \"noaux_tc\",\n"
    "  \"norm_topk_prob\": true,\n"
    "  \"routed_scaling_factor\": 1.5,\n"
    "  \"num_hash_layers\": 3,\n"
    "  \"swiglu_limit\": 10.0,\n"
    "  \"hc_mult\": 4,\n"
    "  \"hc_sinkhorn_iters\": 20,\n"
    "  \"hc_eps\": 1e-06,\n"
    "  \"rms_norm_eps\": 1e-06,\n"
    "  \"hidden_act\": \"silu\",\n"
    "  \"attention_bias\": false,\n"
    "  \"attention_dropout\": 0.0,\n"
    "  \"tie_word_embeddings\": false,\n"
    "  \"bos_token_id\": 0,\n"
    "  \"eos_token_id\": 1,\n"
    "  \"initializer_range\": 0.02,\n"
    "  \"torch_dtype\": \"bfloat16\",\n"
    "  \"quantization_config\": {\"quant_method\": \"fp8\", \"fmt\": \"e4m3\", \"scale_fmt\": \"ue8m0\",\n"
    "                          \"activation_scheme\": \"dynamic\", \"weight_block_size\": [128, 128]},\n"
    "  \"transformers_version\": \"4.57.1\",\n"
    "  \"use_cache\": true\n"
    "}\n";

/* ------------------------------------------------------------------------ */
/* helpers                                                                  */
/* ------------------------------------------------------------------------ */

static json_t *flash_json(void)
{
    json_error_t e;
    json_t *j = json_loads(flash_config, 0, &e);
    if (!j) fail_msg("test JSON does not parse: line %d: %s", e.line, e.text);
    return j;
}

static dsv4_status parse_json(const json_t *j, dsv4_config *cfg, char *err, size_t errlen)
{
    char *text = json_dumps(j, JSON_COMPACT);
    assert_non_null(text);
    dsv4_status s = dsv4_config_parse(text, strlen(text), cfg, err, errlen);
    free(text);
    return s;
}

/* Parse j (consumed) and expect it refused with status `want_st` (0 = any
 * failure) and a message containing every string given. */
static void expect_refused(json_t *j, dsv4_status want_st, ...)
{
    dsv4_config *cfg = calloc(1, sizeof *cfg);
    char err[512] = "";
    dsv4_status s = parse_json(j, cfg, err, sizeof err);
    json_decref(j);
    free(cfg);
    if (s == DSV4_OK) fail_msg("an inconsistent config was accepted");
    if (want_st && s != want_st) fail_msg("status %d, expected %d (%s)", s, want_st, err);
    if (getenv("DSV4_TEST_VERBOSE")) print_message("refused (%d): %s\n", s, err);
    va_list ap;
    va_start(ap, want_st);
    const char *want;
    while ((want = va_arg(ap, const char *)) != NULL)
        if (!strstr(err, want)) fail_msg("message \"%s\" does not mention \"%s\"", err, want);
    va_end(ap);
}

static void expect_flash(const dsv4_config *c)
{
    assert_int_equal(c->vocab_size, 129280);
    assert_int_equal(c->dim, 4096);
    assert_int_equal(c->n_layers, 43);
    assert_int_equal(c->n_mtp_layers, 1);
    assert_int_equal(c->n_heads, 64);
    assert_int_equal(c->head_dim, 512);
    assert_int_equal(c->rope_dim, 64);
    assert_int_equal(c->q_lora_rank, 1024);
    assert_int_equal(c->o_groups, 8);
    assert_int_equal(c->o_lora_rank, 1024);
    assert_int_equal(c->window, 128);
    assert_int_equal(c->index_n_heads, 64);
    assert_int_equal(c->index_head_dim, 128);
    assert_int_equal(c->index_topk, 512);
    assert_int_equal(c->n_routed_experts, 256);
    assert_int_equal(c->n_shared_experts, 1);
    assert_int_equal(c->n_experts_per_tok, 6);
    assert_int_equal(c->moe_inter_dim, 2048);
    assert_true(c->routed_scaling_factor == 1.5);
    assert_true(c->swiglu_limit == 10.0);
    assert_int_equal(c->hc_mult, 4);
    assert_int_equal(c->hc_sinkhorn_iters, 20);
    assert_true(c->hc_eps == 1e-6);
    assert_true(c->rms_norm_eps == 1e-6);
    assert_int_equal(c->max_position_embeddings, 1048576);
    assert_int_equal(c->bos_token_id, 0);
    assert_int_equal(c->eos_token_id, 1);

    assert_true(c->rope_main.theta == 10000.0);
    assert_false(c->rope_main.yarn);
    assert_true(c->rope_compress.theta == 160000.0);
    assert_true(c->rope_compress.yarn);
    assert_true(c->rope_compress.factor == 16.0);
    assert_true(c->rope_compress.orig_max_pos == 65536.0);
    assert_true(c->rope_compress.beta_fast == 32.0);
    assert_true(c->rope_compress.beta_slow == 1.0);

    for (int l = 0; l < 43; l++) {
        dsv4_attn_kind want = l < 2 ? DSV4_ATTN_SLIDING : l % 2 == 0 ? DSV4_ATTN_CSA : DSV4_ATTN_HCA;
        int ratio = l < 2 ? 0 : l % 2 == 0 ? 4 : 128;
        if (c->layer_kind[l] != want || c->layer_ratio[l] != ratio)
            fail_msg("layer %d: kind %d ratio %d, expected kind %d ratio %d", l, c->layer_kind[l], c->layer_ratio[l],
                     want, ratio);
        assert_int_equal(c->layer_hash[l], l < 3);
    }
    assert_int_equal(dsv4_config_count_kind(c, DSV4_ATTN_SLIDING), 2);
    assert_int_equal(dsv4_config_count_kind(c, DSV4_ATTN_CSA), 21);
    assert_int_equal(dsv4_config_count_kind(c, DSV4_ATTN_HCA), 20);
}

/* ------------------------------------------------------------------------ */
/* good configs                                                             */
/* ------------------------------------------------------------------------ */

static void test_flash_official(void **state)
{
    (void)state;
    dsv4_config *c = calloc(1, sizeof *c);
    char err[256] = "";
    dsv4_status s = dsv4_config_parse(flash_config, strlen(flash_config), c, err, sizeof err);
    if (s) fail_msg("Flash config refused: %s", err);
    expect_flash(c);
    assert_true(c->has_quant_config);
    assert_string_equal(c->quant_method, "fp8");
    assert_int_equal(dsv4_config_count_kind(NULL, DSV4_ATTN_CSA), 0);
    free(c);
}

/* The Flash config as transformers' DeepseekV4Config.save_pretrained writes
 * it: no compress_ratios / num_hash_layers / qk_rope_head_dim / rope_scaling. */
static json_t *flash_transformers_json(void)
{
    json_t *j = flash_json();
    json_object_del(j, "compress_ratios");
    json_object_del(j, "num_hash_layers");
    json_object_del(j, "qk_rope_head_dim");
    json_object_del(j, "rope_scaling");
    json_t *lt = json_array(), *mlt = json_array();
    for (int l = 0; l < 43; l++) {
        const char *k = l < 2        ? "sliding_attention"
                        : l % 2 == 0 ? "compressed_sparse_attention"
                                     : "heavily_compressed_attention";
        json_array_append_new(lt, json_string(k));
        json_array_append_new(mlt, json_string(l < 3 ? "hash_moe" : "moe"));
    }
    json_object_set_new(j, "layer_types", lt);
    json_object_set_new(j, "mlp_layer_types", mlt);
    json_object_set_new(j, "compress_rates",
                        json_pack("{s:i, s:i}", "compressed_sparse_attention", 4, "heavily_compressed_attention", 128));
    json_object_set_new(j, "partial_rotary_factor", json_real(0.125));
    json_object_set_new(j, "rope_parameters",
                        json_pack("{s:{s:s, s:f, s:f}, s:{s:s, s:f, s:i, s:f, s:f, s:f, s:f, s:f}}", "main",
                                  "rope_type", "default", "rope_theta", 10000.0, "partial_rotary_factor", 0.125,
                                  "compress", "rope_type", "yarn", "factor", 16.0, "original_max_position_embeddings",
                                  65536, "beta_fast", 32.0, "beta_slow", 1.0, "rope_theta", 160000.0,
                                  "partial_rotary_factor", 0.125, "attention_factor", 1.0));
    json_object_set_new(j, "eos_token_id", json_pack("[i]", 1));
    return j;
}

static void test_flash_transformers(void **state)
{
    (void)state;
    json_t *j = flash_transformers_json();
    dsv4_config *c = calloc(1, sizeof *c);
    char err[256] = "";
    if (parse_json(j, c, err, sizeof err)) fail_msg("transformers-style config refused: %s", err);
    expect_flash(c);
    json_decref(j);
    free(c);
}

static void test_both_spellings_agree(void **state)
{
    (void)state;
    /* official + transformers keys together, consistent: accepted */
    json_t *j = flash_transformers_json(), *f = flash_json();
    json_object_set(j, "compress_ratios", json_object_get(f, "compress_ratios"));
    json_object_set(j, "num_hash_layers", json_object_get(f, "num_hash_layers"));
    json_object_set(j, "qk_rope_head_dim", json_object_get(f, "qk_rope_head_dim"));
    json_object_set(j, "rope_scaling", json_object_get(f, "rope_scaling"));
    dsv4_config *c = calloc(1, sizeof *c);
    char err[256] = "";
    if (parse_json(j, c, err, sizeof err)) fail_msg("consistent mixed config refused: %s", err);
    expect_flash(c);

    /* nested rope_parameters without rope_theta: transformers fills both from rope_theta */
    {
        json_t *t = json_deep_copy(j);
        json_t *rp = json_object_get(t, "rope_parameters");
        assert_true(json_is_object(json_object_get(rp, "compress")));
        json_object_del(json_object_get(rp, "main"), "rope_theta");
        json_object_del(json_object_get(rp, "compress"), "rope_theta");
        json_object_set_new(t, "rope_theta", json_real(20000.0));
        json_object_set_new(t, "compress_rope_theta", json_real(80000.0));
        json_object_del(t, "rope_scaling");
        if (parse_json(t, c, err, sizeof err)) fail_msg("nested rope_parameters without rope_theta: %s", err);
        assert_true(c->rope_main.theta == 20000.0);
        assert_true(c->rope_compress.theta == 20000.0);
        assert_true(c->rope_compress.yarn);
        json_decref(t);
    }
    json_object_del(j, "rope_scaling");
    json_object_set_new(
        j, "rope_parameters",
        json_pack("{s:s, s:f, s:i}", "rope_type", "yarn", "factor", 16.0, "original_max_position_embeddings", 65536));
    if (parse_json(j, c, err, sizeof err)) fail_msg("flat rope_parameters refused: %s", err);
    expect_flash(c);

    /* ... that disagrees with compress_ratios */
    json_array_set_new(json_object_get(j, "layer_types"), 5, json_string("sliding_attention"));
    expect_refused(json_deep_copy(j), DSV4_ERR_FORMAT, "layer_types[5]", "compress_ratios[5]", NULL);
    json_array_set_new(json_object_get(j, "layer_types"), 5, json_string("heavily_compressed_attention"));

    /* ... mlp_layer_types disagreeing with num_hash_layers */
    json_array_set_new(json_object_get(j, "mlp_layer_types"), 3, json_string("hash_moe"));
    expect_refused(json_deep_copy(j), DSV4_ERR_FORMAT, "mlp_layer_types[3]", "num_hash_layers", NULL);
    json_array_set_new(json_object_get(j, "mlp_layer_types"), 3, json_string("moe"));

    /* ... partial_rotary_factor disagreeing with qk_rope_head_dim */
    json_object_set_new(j, "partial_rotary_factor", json_real(0.25));
    expect_refused(json_deep_copy(j), DSV4_ERR_FORMAT, "qk_rope_head_dim", "partial_rotary_factor", NULL);
    json_object_set_new(j, "partial_rotary_factor", json_real(0.125));

    /* ... rope_scaling disagreeing with rope_parameters */
    json_object_set_new(
        j, "rope_scaling",
        json_pack("{s:s, s:f, s:i}", "type", "yarn", "factor", 8.0, "original_max_position_embeddings", 65536));
    expect_refused(json_deep_copy(j), DSV4_ERR_FORMAT, "rope_scaling", "rope_parameters", NULL);

    json_decref(j);
    json_decref(f);
    free(c);
}

static void test_defaults_and_variants(void **state)
{
    (void)state;
    /* a tiny config with only the required fields: Flash defaults elsewhere */
    const char *tiny = "{\"vocab_size\": 300, \"hidden_size\": 64, \"num_hidden_layers\": 5, "
                       "\"num_attention_heads\": 8, \"head_dim\": 32, \"q_lora_rank\": 16, \"o_lora_rank\": 16, "
                       "\"moe_intermediate_size\": 32, \"n_routed_experts\": 8, \"num_experts_per_tok\": 2, "
                       "\"o_groups\": 2, \"index_head_dim\": 16, "
                       "\"compress_ratios\": [0, 4, 128, 4, 128], \"eos_token_id\": [7, 1]}";
    dsv4_config *c = calloc(1, sizeof *c);
    char err[256] = "";
    if (dsv4_config_parse(tiny, strlen(tiny), c, err, sizeof err)) fail_msg("tiny config refused: %s", err);
    assert_int_equal(c->rope_dim, 4); /* head_dim / 8, transformers' default factor */
    assert_int_equal(c->window, 128);
    assert_int_equal(c->hc_mult, 4);
    assert_int_equal(c->hc_sinkhorn_iters, 20);
    assert_int_equal(c->n_shared_experts, 1);
    assert_int_equal(c->n_mtp_layers, 1);
    assert_int_equal(c->eos_token_id, 7);
    assert_false(c->rope_compress.yarn); /* no rope_scaling: plain RoPE everywhere */
    assert_true(c->rope_compress.theta == 160000.0);
    assert_false(c->has_quant_config);
    for (int l = 0; l < 5; l++) assert_int_equal(c->layer_hash[l], l < 3);
    assert_int_equal(c->layer_kind[1], DSV4_ATTN_CSA);
    assert_int_equal(c->layer_kind[2], DSV4_ATTN_HCA);

    /* num_hash_layers larger than the model is clamped */
    json_error_t je;
    json_t *j = json_loads(tiny, 0, &je);
    assert_non_null(j);
    json_object_set_new(j, "num_hash_layers", json_integer(10));
    json_object_set_new(j, "num_hidden_layers", json_integer(2));
    json_object_set_new(j, "compress_ratios", json_pack("[i,i]", 0, 4));
    if (parse_json(j, c, err, sizeof err)) fail_msg("clamped num_hash_layers refused: %s", err);
    assert_true(c->layer_hash[0] && c->layer_hash[1]);
    assert_int_equal(c->n_layers, 2);

    /* transformers' compress_rates with other ratios */
    json_object_del(j, "compress_ratios");
    json_object_set_new(j, "layer_types",
                        json_pack("[s,s]", "heavily_compressed_attention", "compressed_sparse_attention"));
    json_object_set_new(j, "compress_rates", json_pack("{s:i}", "heavily_compressed_attention", 16));
    if (parse_json(j, c, err, sizeof err)) fail_msg("compress_rates refused: %s", err);
    assert_int_equal(c->layer_ratio[0], 16);
    assert_int_equal(c->layer_ratio[1], 4);
    json_object_set_new(j, "compress_rates", json_pack("{s:i}", "compressed_sparse_attention", 0));
    expect_refused(json_deep_copy(j), DSV4_ERR_FORMAT, "compress_rates.compressed_sparse_attention", NULL);
    /* the official compress_ratios name the kinds; the rates come from compress_rates and the scalars
       compress_rate_csa / compress_rate_hca over them, as transformers reads them */
    json_object_del(j, "layer_types");
    json_object_set_new(j, "compress_ratios", json_pack("[i,i]", 128, 4));
    json_object_set_new(j, "compress_rates", json_pack("{s:i}", "heavily_compressed_attention", 16));
    if (parse_json(j, c, err, sizeof err)) fail_msg("compress_ratios with compress_rates refused: %s", err);
    assert_int_equal(c->layer_kind[0], DSV4_ATTN_HCA);
    assert_int_equal(c->layer_ratio[0], 16);
    assert_int_equal(c->layer_ratio[1], 4);
    json_object_set_new(j, "compress_rate_hca", json_integer(32));
    json_object_set_new(j, "compress_rate_csa", json_integer(8));
    if (parse_json(j, c, err, sizeof err)) fail_msg("compress_rate_hca refused: %s", err);
    assert_int_equal(c->layer_ratio[0], 32);
    assert_int_equal(c->layer_ratio[1], 8);
    json_object_set_new(j, "compress_rate_csa", json_integer(0));
    expect_refused(json_deep_copy(j), DSV4_ERR_FORMAT, "compress_rate_csa", NULL);
    json_object_del(j, "compress_rate_csa");
    json_object_del(j, "compress_rate_hca");
    json_object_set_new(j, "compress_ratios", json_pack("[i,i]", 64, 4));
    expect_refused(json_deep_copy(j), DSV4_ERR_FORMAT, "compress_ratios[0]", NULL);
    json_object_del(j, "compress_ratios");
    json_object_set_new(j, "layer_types",
                        json_pack("[s,s]", "heavily_compressed_attention", "compressed_sparse_attention"));

    /* the most Sinkhorn iterations accepted */
    json_object_set_new(j, "hc_sinkhorn_iters", json_integer(1000));
    if (parse_json(j, c, err, sizeof err)) fail_msg("hc_sinkhorn_iters 1000 refused: %s", err);
    assert_int_equal(c->hc_sinkhorn_iters, 1000);
    json_object_del(j, "hc_sinkhorn_iters");

    /* null counts as absent */
    json_object_set_new(j, "compress_rates", json_null());
    json_object_set_new(j, "sliding_window", json_null());
    json_object_set_new(j, "rope_scaling", json_null());
    if (parse_json(j, c, err, sizeof err)) fail_msg("nulls refused: %s", err);
    assert_int_equal(c->window, 128);
    json_decref(j);
    free(c);
}

static void test_load(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/dsv4_cfg_XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    dsv4_config *c = calloc(1, sizeof *c);
    char err[512] = "", path[300], want[400];
    snprintf(path, sizeof path, "%s/config.json", dir);

    assert_int_equal(dsv4_config_load(dir, c, err, sizeof err), DSV4_ERR_IO);
    snprintf(want, sizeof want, "%s: No such file or directory", path);
    assert_string_equal(err, want);

    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(flash_config, f);
    fclose(f);
    if (dsv4_config_load(dir, c, err, sizeof err)) fail_msg("load failed: %s", err);
    expect_flash(c);

    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\n  \"vocab_size\": 12,\n  \"hidden_size\": ,\n}\n", f);
    fclose(f);
    assert_int_equal(dsv4_config_load(dir, c, err, sizeof err), DSV4_ERR_FORMAT);
    if (!strstr(err, "config.json: line 3 column")) fail_msg("bad JSON message: %s", err);

    unlink(path);
    rmdir(dir);
    free(c);
}

/* ------------------------------------------------------------------------ */
/* refused configs                                                          */
/* ------------------------------------------------------------------------ */

static json_t *with(const char *key, json_t *value)
{
    json_t *j = flash_json();
    json_object_set_new(j, key, value);
    return j;
}

static json_t *without(const char *key)
{
    json_t *j = flash_json();
    json_object_del(j, key);
    return j;
}

static void test_refused(void **state)
{
    (void)state;
    expect_refused(with("num_key_value_heads", json_integer(2)), DSV4_ERR_UNSUPPORTED, "num_key_value_heads", NULL);
    json_t *j = flash_json();
    json_array_set_new(json_object_get(j, "compress_ratios"), 5, json_integer(7));
    expect_refused(j, DSV4_ERR_FORMAT, "compress_ratios[5]", "7", NULL);
    expect_refused(with("o_groups", json_integer(7)), DSV4_ERR_FORMAT, "o_groups", "64", NULL);
    expect_refused(with("qk_rope_head_dim", json_integer(63)), DSV4_ERR_FORMAT, "qk_rope_head_dim", NULL);
    expect_refused(with("qk_rope_head_dim", json_integer(1024)), DSV4_ERR_FORMAT, "qk_rope_head_dim", NULL);
    expect_refused(without("hidden_size"), DSV4_ERR_FORMAT, "hidden_size", "missing", NULL);
    expect_refused(with("hidden_size", json_string("4096")), DSV4_ERR_FORMAT,
                   "hidden_size: expected an integer, found a string", NULL);
    expect_refused(with("scoring_func", json_string("softmax")), DSV4_ERR_UNSUPPORTED, "scoring_func", "softmax", NULL);

    expect_refused(with("num_hidden_layers", json_integer(300)), DSV4_ERR_FORMAT, "num_hidden_layers", NULL);
    expect_refused(with("vocab_size", json_integer(0)), DSV4_ERR_FORMAT, "vocab_size", NULL);
    expect_refused(with("vocab_size", json_integer(100000000)), DSV4_ERR_FORMAT, "vocab_size", NULL);
    expect_refused(with("hidden_size", json_real(4096.0)), DSV4_ERR_FORMAT, "hidden_size", NULL);
    expect_refused(with("compress_ratios", json_pack("[i,i,i]", 0, 4, 128)), DSV4_ERR_FORMAT, "compress_ratios",
                   "3 entries", NULL);
    j = flash_json();
    json_array_set_new(json_object_get(j, "compress_ratios"), 43, json_integer(4));
    expect_refused(j, DSV4_ERR_FORMAT, "compress_ratios[43]", NULL);
    expect_refused(without("compress_ratios"), DSV4_ERR_FORMAT, "compress_ratios", NULL);
    expect_refused(with("num_experts_per_tok", json_integer(300)), DSV4_ERR_FORMAT, "num_experts_per_tok", NULL);
    expect_refused(with("n_shared_experts", json_integer(2)), DSV4_ERR_UNSUPPORTED, "n_shared_experts", NULL);
    expect_refused(with("index_head_dim", json_integer(63)), DSV4_ERR_FORMAT, "index_head_dim", NULL);
    expect_refused(with("index_head_dim", json_integer(32)), DSV4_ERR_FORMAT, "index_head_dim", NULL);
    expect_refused(with("sliding_window", json_integer(0)), DSV4_ERR_FORMAT, "sliding_window", NULL);
    expect_refused(with("hc_mult", json_integer(0)), DSV4_ERR_FORMAT, "hc_mult", NULL);
    expect_refused(with("hc_sinkhorn_iters", json_integer(0)), DSV4_ERR_FORMAT, "hc_sinkhorn_iters", NULL);
    /* every token runs them in every hyper-connection: 9,999,999 took seconds a decode step */
    expect_refused(with("hc_sinkhorn_iters", json_integer(9999999)), DSV4_ERR_FORMAT, "hc_sinkhorn_iters", "9999999",
                   "1 to 1000", NULL);
    expect_refused(with("hc_sinkhorn_iters", json_integer(1001)), DSV4_ERR_FORMAT, "hc_sinkhorn_iters", NULL);
    expect_refused(with("hc_eps", json_real(0.0)), DSV4_ERR_FORMAT, "hc_eps", NULL);
    expect_refused(with("rms_norm_eps", json_real(-1e-6)), DSV4_ERR_FORMAT, "rms_norm_eps", NULL);
    expect_refused(with("rms_norm_eps", json_string("1e-6")), DSV4_ERR_FORMAT, "rms_norm_eps", NULL);
    /* finite as a double but Inf in FP32, where the engine computes: NaN or zero logits */
    expect_refused(with("routed_scaling_factor", json_real(1e308)), DSV4_ERR_FORMAT, "routed_scaling_factor", NULL);
    expect_refused(with("hc_eps", json_real(1e300)), DSV4_ERR_FORMAT, "hc_eps", NULL);
    /* YaRN divides by log(theta): theta 1 gives NaN frequencies */
    expect_refused(with("compress_rope_theta", json_real(1.0)), DSV4_ERR_FORMAT, "compress_rope_theta", NULL);
    expect_refused(with("rms_norm_eps", json_real(1e300)), DSV4_ERR_FORMAT, "rms_norm_eps", NULL);
    expect_refused(with("hidden_act", json_string("gelu")), DSV4_ERR_UNSUPPORTED, "hidden_act", NULL);
    expect_refused(with("attention_bias", json_true()), DSV4_ERR_UNSUPPORTED, "attention_bias", NULL);
    expect_refused(with("attention_bias", json_integer(0)), DSV4_ERR_FORMAT, "attention_bias", NULL);
    expect_refused(with("tie_word_embeddings", json_true()), DSV4_ERR_UNSUPPORTED, "tie_word_embeddings", NULL);
    expect_refused(with("model_type", json_string("deepseek_v3")), DSV4_ERR_UNSUPPORTED, "model_type", NULL);
    expect_refused(with("topk_method", json_string("greedy")), DSV4_ERR_UNSUPPORTED, "topk_method", NULL);
    expect_refused(with("eos_token_id", json_integer(129280)), DSV4_ERR_FORMAT, "eos_token_id", NULL);
    expect_refused(with("eos_token_id", json_array()), DSV4_ERR_FORMAT, "eos_token_id", NULL);
    expect_refused(with("bos_token_id", json_string("0")), DSV4_ERR_FORMAT, "bos_token_id", NULL);
    expect_refused(with("rope_scaling", json_pack("{s:s, s:f}", "type", "linear", "factor", 2.0)), DSV4_ERR_UNSUPPORTED,
                   "rope_scaling", "linear", NULL);
    expect_refused(with("rope_scaling", json_pack("{s:s, s:f}", "type", "yarn", "factor", 16.0)), DSV4_ERR_FORMAT,
                   "rope_scaling.original_max_position_embeddings", NULL);
    expect_refused(
        with("rope_scaling", json_pack("{s:s, s:f, s:i, s:f}", "type", "yarn", "factor", 16.0,
                                       "original_max_position_embeddings", 65536, "attention_factor", 1.277)),
        DSV4_ERR_UNSUPPORTED, "attention_factor", NULL);
    expect_refused(with("rope_scaling", json_string("yarn")), DSV4_ERR_FORMAT, "rope_scaling", NULL);
    expect_refused(with("quantization_config", json_integer(1)), DSV4_ERR_FORMAT, "quantization_config", NULL);
    expect_refused(with("compress_ratios", json_string("0,0,4")), DSV4_ERR_FORMAT, "compress_ratios", NULL);
    expect_refused(with("partial_rotary_factor", json_real(0.3)), DSV4_ERR_FORMAT, "partial_rotary_factor", NULL);
    /* a layer type's own partial_rotary_factor: transformers rotates head_dim x it dims in those layers */
    j = flash_transformers_json();
    json_object_set_new(json_object_get(json_object_get(j, "rope_parameters"), "compress"), "partial_rotary_factor",
                        json_real(0.25));
    expect_refused(j, DSV4_ERR_UNSUPPORTED, "rope_parameters.compress.partial_rotary_factor", "qk_rope_head_dim", NULL);

    j = flash_transformers_json();
    json_array_set_new(json_object_get(j, "layer_types"), 9, json_string("full_attention"));
    expect_refused(j, DSV4_ERR_FORMAT, "layer_types[9]", "full_attention", NULL);
    /* nested rope_parameters: transformers pins no attention_factor there and infers YaRN's magnitude
       0.1 ln(factor) + 1 = 1.277 when it is missing (mscale / mscale_all_dim equal: 1.0, accepted) */
    j = flash_transformers_json();
    json_object_del(json_object_get(json_object_get(j, "rope_parameters"), "compress"), "attention_factor");
    expect_refused(json_deep_copy(j), DSV4_ERR_UNSUPPORTED, "rope_parameters.compress.attention_factor", "1.277", NULL);
    json_object_set_new(json_object_get(json_object_get(j, "rope_parameters"), "compress"), "mscale", json_real(1.0));
    expect_refused(json_deep_copy(j), DSV4_ERR_UNSUPPORTED, "rope_parameters.compress.attention_factor", NULL);
    json_object_set_new(json_object_get(json_object_get(j, "rope_parameters"), "compress"), "mscale_all_dim",
                        json_real(1.0));
    {
        dsv4_config *c2 = calloc(1, sizeof *c2);
        char e2[256] = "";
        if (parse_json(j, c2, e2, sizeof e2)) fail_msg("mscale = mscale_all_dim refused: %s", e2);
        free(c2);
    }
    json_decref(j);
    j = flash_transformers_json();
    json_array_remove(json_object_get(j, "mlp_layer_types"), 0);
    expect_refused(j, DSV4_ERR_FORMAT, "mlp_layer_types", NULL);
    j = flash_transformers_json();
    json_array_set_new(json_object_get(j, "mlp_layer_types"), 0, json_integer(1));
    expect_refused(j, DSV4_ERR_FORMAT, "mlp_layer_types[0]", NULL);
    j = flash_transformers_json();
    json_object_set_new(json_object_get(json_object_get(j, "rope_parameters"), "compress"), "rope_type",
                        json_string("llama3"));
    expect_refused(j, DSV4_ERR_UNSUPPORTED, "rope_parameters.compress", "llama3", NULL);

    /* not JSON, not an object */
    dsv4_config *c = calloc(1, sizeof *c);
    char err[256];
    assert_int_equal(dsv4_config_parse("{\"a\": 1,", 8, c, err, sizeof err), DSV4_ERR_FORMAT);
    assert_non_null(strstr(err, "config.json: line 1 column"));
    assert_int_equal(dsv4_config_parse("[1, 2]", 6, c, err, sizeof err), DSV4_ERR_FORMAT);
    assert_int_equal(dsv4_config_parse("", 0, c, err, sizeof err), DSV4_ERR_FORMAT);
    assert_int_equal(dsv4_config_parse(NULL, 0, c, err, sizeof err), DSV4_ERR_INVALID);
    /* a refused config leaves the caller's struct untouched */
    c->dim = 1234;
    assert_int_not_equal(dsv4_config_parse("{\"vocab_size\": 5}", 17, c, NULL, 0), DSV4_OK);
    assert_int_equal(c->dim, 1234);
    free(c);
}

/* Every prefix of the Flash config must be refused cleanly (no crash). */
static void test_prefixes(void **state)
{
    (void)state;
    dsv4_config *c = calloc(1, sizeof *c);
    char err[256];
    size_t n = strlen(flash_config);
    for (size_t len = 0; len + 2 < n; len++)
        assert_int_not_equal(dsv4_config_parse(flash_config, len, c, err, sizeof err), DSV4_OK);
    free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flash_official),
        cmocka_unit_test(test_flash_transformers),
        cmocka_unit_test(test_both_spellings_agree),
        cmocka_unit_test(test_defaults_and_variants),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_prefixes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
