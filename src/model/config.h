/*
 * config.h - the DeepSeek-V4 model configuration, parsed from config.json.
 *
 * Both spellings found in the wild are accepted: the official release keys
 * (compress_ratios, num_hash_layers, qk_rope_head_dim, rope_scaling) and the
 * keys transformers writes when it saves a DeepseekV4Config (layer_types,
 * compress_rates, mlp_layer_types, partial_rotary_factor, rope_parameters).
 * Everything the forward pass needs is resolved here into per-layer facts, so
 * no other module looks at JSON.
 */
#ifndef DSV4_MODEL_CONFIG_H
#define DSV4_MODEL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dsv4.h"

#define DSV4_MAX_LAYERS 256

/* Attention kind of one decoder layer. */
typedef enum {
    DSV4_ATTN_SLIDING = 0, /* window rows only (compress ratio 0) */
    DSV4_ATTN_CSA = 1,     /* window + overlapping compressor + lightning indexer top-k */
    DSV4_ATTN_HCA = 2,     /* window + all rows of a non-overlapping compressor */
} dsv4_attn_kind;

/* RoPE frequency set: one per attention kind family. */
typedef struct {
    double theta;       /* base */
    bool yarn;          /* YaRN frequency interpolation (no magnitude term) */
    double factor;      /* YaRN factor */
    double orig_max_pos; /* original_max_position_embeddings */
    double beta_fast, beta_slow;
} dsv4_rope_cfg;

typedef struct {
    /* sizes */
    int vocab_size;      /* V */
    int dim;             /* D, hidden_size */
    int n_layers;        /* decoder layers (MTP not counted) */
    int n_mtp_layers;    /* num_nextn_predict_layers */
    int n_heads;         /* H */
    int head_dim;        /* 512 in Flash */
    int rope_dim;        /* rotated tail of each head (qk_rope_head_dim) */
    int q_lora_rank;
    int o_groups;
    int o_lora_rank;
    int window;          /* sliding_window */
    /* indexer */
    int index_n_heads;
    int index_head_dim;
    int index_topk;
    /* MoE */
    int n_routed_experts;
    int n_shared_experts; /* 0 or 1 */
    int n_experts_per_tok;
    int moe_inter_dim;
    double routed_scaling_factor;
    double swiglu_limit; /* <= 0: no clamp */
    /* hyper-connections */
    int hc_mult;
    int hc_sinkhorn_iters;
    double hc_eps;
    double rms_norm_eps;
    /* rope */
    dsv4_rope_cfg rope_main;     /* sliding layers */
    dsv4_rope_cfg rope_compress; /* CSA / HCA layers */
    int64_t max_position_embeddings;
    int bos_token_id, eos_token_id;
    /* per layer */
    dsv4_attn_kind layer_kind[DSV4_MAX_LAYERS];
    int layer_ratio[DSV4_MAX_LAYERS];   /* compression ratio, 0 for sliding layers */
    bool layer_hash[DSV4_MAX_LAYERS];   /* MoE routed by tid2eid */
    /* quantisation as declared (issue 3 reads the details) */
    bool has_quant_config;
    char quant_method[32];
} dsv4_config;

/* Parse `text` (the contents of config.json). On error fills err with a sentence
 * naming the offending field and returns a negative status. */
dsv4_status dsv4_config_parse(const char *text, size_t len, dsv4_config *cfg, char *err, size_t errlen);

/* Read and parse DIR/config.json. */
dsv4_status dsv4_config_load(const char *dir, dsv4_config *cfg, char *err, size_t errlen);

/* Number of layers with a given kind. */
int dsv4_config_count_kind(const dsv4_config *cfg, dsv4_attn_kind kind);

#endif
