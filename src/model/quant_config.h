/*
 * quant_config.h - the quantisation scheme a checkpoint declares.
 *
 * DeepSeek's release declares FP8 in config.json's quantization_config
 * (E4M3 weights, UE8M0 128x128 block scales) with MXFP4 routed experts
 * (expert_dtype "fp4"); NVIDIA's ModelOpt re-quantisation keeps that and adds
 * moe_quant_algo "NVFP4" (group 16), repeated in hf_quant_config.json. The
 * declaration is read here and checked against the tensors by weights.c:
 * the tensors are the truth for each weight, the declaration must agree.
 */
#ifndef DSV4_MODEL_QUANT_CONFIG_H
#define DSV4_MODEL_QUANT_CONFIG_H

#include <stdbool.h>

#include "dsv4.h"

typedef enum {
    DSV4_XF_UNDECLARED = 0, /* nothing said: take what the tensors hold */
    DSV4_XF_FLOAT,          /* BF16 / F16 / F32 */
    DSV4_XF_FP8,            /* block-scaled E4M3 (the -Base release) */
    DSV4_XF_MXFP4,          /* E2M1 pairs + E8M0 per 32 */
    DSV4_XF_NVFP4,          /* E2M1 pairs + E4M3 per 16 + F32 global */
} dsv4_expert_format;

const char *dsv4_expert_format_name(dsv4_expert_format f);

typedef struct {
    bool fp8;                      /* quant_method "fp8" declared */
    int block_rows, block_cols;    /* weight_block_size, default 128 x 128 */
    dsv4_expert_format experts;    /* declared format of the routed experts of layers 0..n-1 */
    int group_size;                /* NVFP4 group (16) */
    bool has_hf_quant_config;      /* hf_quant_config.json present */
    char declared_by[64];          /* where the expert format was declared, for messages */
} dsv4_quant_scheme;

/* Read DIR/config.json's quantisation fields and DIR/hf_quant_config.json (if
 * present). Unknown methods or algorithms are refused naming the key. */
dsv4_status dsv4_quant_scheme_load(const char *dir, dsv4_quant_scheme *q, char *err, size_t errlen);

#endif
