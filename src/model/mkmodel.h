/*
 * mkmodel.h - synthetic DeepSeek-V4 checkpoints with the real layout.
 *
 * Writes config.json, model.safetensors.index.json and one shard per layer
 * (as the release does: embed first, one decoder layer per shard, then head,
 * norm and HC head), with random, well-conditioned weights in the stock
 * format (FP8 E4M3 attention and shared experts with UE8M0 128x128 scales)
 * and routed experts in MXFP4, NVFP4 (plus hf_quant_config.json) or BF16.
 * Bytes are generated from a fast PRNG and streamed, so a Flash-sized
 * checkpoint is written at disk speed. With `sparse`, the matrices are holes
 * (no disk blocks) that only an engine opened with fill_random will serve,
 * generating them at load: a Flash-shaped model of as many layers as fit the
 * GPU takes a few hundred MB of disk.
 */
#ifndef DSV4_MODEL_MKMODEL_H
#define DSV4_MODEL_MKMODEL_H

#include <stdint.h>

#include "dsv4.h"
#include "model/quant_config.h"

typedef enum {
    DSV4_PRESET_FLASH = 0, /* DeepSeek-V4-Flash shapes */
    DSV4_PRESET_TINY = 1,  /* a few MB, every layer kind, for tests */
} dsv4_preset;

typedef struct {
    dsv4_preset preset;
    int n_layers;                 /* <= 0: the preset's (43 for Flash, 4 for tiny) */
    int vocab;                    /* <= 0: the preset's (129280 for Flash, 512 for tiny) */
    dsv4_expert_format experts;   /* DSV4_XF_MXFP4 (default), DSV4_XF_NVFP4 or DSV4_XF_FLOAT (BF16) */
    uint64_t seed;
    const char *out_dir;          /* created if missing; must not already hold a checkpoint */
    int verbose;                  /* progress on stderr */
    int sparse;                   /* leave every matrix (and its scales) as a hole: see synth.h */
} dsv4_mkmodel_opts;

dsv4_status dsv4_mkmodel(const dsv4_mkmodel_opts *o, char *err, size_t errlen);

#endif
