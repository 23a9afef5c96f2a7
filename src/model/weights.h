/*
 * weights.h - the model's weights bound by name into typed per-layer structs.
 *
 * Binding happens once at load: every tensor the configuration implies is
 * looked up under its official name (MODEL.md §2), its shape checked against
 * the config and its dtype against the formats dsv4 reads, and the result is a
 * plain struct the forward pass reads by field. Nothing looks a weight up by
 * string after load. Shapes below are [out, in] as in the checkpoint.
 */
#ifndef DSV4_MODEL_WEIGHTS_H
#define DSV4_MODEL_WEIGHTS_H

#include <stdbool.h>
#include <stdint.h>

#include "model/config.h"
#include "model/quant_config.h"
#include "model/safetensors.h"

/* Storage format of a matrix (MODEL.md §2.5, §2.8). */
typedef enum {
    DSV4_WF_FLOAT = 0, /* BF16 / F16 / F32 elements */
    DSV4_WF_FP8,       /* E4M3 elements, one scale per block_rows x block_cols block (E8M0 or F32) */
    DSV4_WF_MXFP4,     /* E2M1 pairs (low nibble = even element), one E8M0 scale per 32 along in */
    DSV4_WF_NVFP4,     /* E2M1 pairs, one E4M3 scale per 16 along in, times a global F32 scale */
} dsv4_wfmt;

/* --fill-random: how a hole of a sparse synthetic checkpoint is generated at
 * load (model/synth.h; the values in model/synth_gen.h). */
typedef enum {
    DSV4_SYNTH_NONE = 0,    /* read from the checkpoint */
    DSV4_SYNTH_NORMAL_BF16, /* BF16 elements, std * N(0,1) */
    DSV4_SYNTH_E4M3,        /* FP8 E4M3 codes of std * N(0,1) (never NaN) */
    DSV4_SYNTH_E2M1,        /* uniformly random bytes: two E2M1 codes each (all finite) */
} dsv4_synth_kind;

typedef struct {
    dsv4_synth_kind kind;
    uint64_t key;           /* dsv4_synth_key(seed, tensor name) */
    float mul;              /* NORMAL_BF16, E4M3: value = centred Irwin-Hall integer * mul (= std * sqrt(3) / 65536) */
    int scale_byte;         /* quantized: every byte of the scales; -1: the scales are read from the checkpoint */
    uint64_t elem_bytes;    /* bytes of the elements, as in the checkpoint */
    uint64_t scale_bytes;   /* bytes of the scales (when scale_byte >= 0) */
} dsv4_synth;

/* One weight tensor. `host` points into the checkpoint mmap (never written),
 * or, for a generated tensor on the CPU, into memory the backend owns;
 * `f32` is an FP32 copy made at load for small vectors only (norms, biases,
 * HC parameters), NULL otherwise; `dev` belongs to the backend. A view of
 * some rows (dsv4_w_rows) keeps the base pointers and sets row0. */
typedef struct {
    const char *name;     /* official name, for messages; NULL = absent */
    dsv4_dtype dtype;     /* element dtype as stored (FP8: F8_E4M3; FP4: I8 or U8) */
    dsv4_wfmt fmt;
    int ndim;
    int64_t ne[2];        /* logical [rows(out), cols(in)]; vectors: ne[0] = length, ne[1] = 1 */
    int64_t row0;         /* first row of a view */
    const void *host;
    /* quantized formats */
    const void *scale;    /* FP8: [ceil(out/br), ceil(in/bc)]; MXFP4: [out, in/32]; NVFP4: [out, in/16] */
    dsv4_dtype scale_dtype; /* F8_E8M0 or F32 (FP8); F8_E8M0 (MXFP4); F8_E4M3 (NVFP4) */
    int64_t scale_cols;   /* row stride of `scale` in elements */
    int block_rows, block_cols; /* FP8 scale blocks */
    float scale2;         /* NVFP4 global scale (weight_scale_2) */
    float input_scale;    /* NVFP4 activation scale (unused on CPU and Hopper) */
    uint32_t aux_bytes;   /* NVFP4: the bytes its per-tensor scales take in the checkpoint (weight_scale_2, and
                             input_scale where present) */
    bool no_act_quant;    /* reference numerics: keep BF16 activations (wo_a) */
    float *f32;           /* host FP32 copy of a small vector; owned */
    /* set by the backend's weight_load: what its ops read */
    const float *vec;     /* small vectors: FP32 in backend memory (the CPU: f32 itself) */
    void *dev;            /* matrices: elements in backend memory (NULL on the CPU: host is used) */
    void *dev_scale;      /* matrices: scales in backend memory */
    dsv4_synth synth;     /* --fill-random: generate instead of reading (kind NONE: read) */
} dsv4_w;

/* Bytes of one row of a matrix's elements as stored. */
static inline int64_t dsv4_w_row_bytes(const dsv4_w *w)
{
    if (w->fmt == DSV4_WF_MXFP4 || w->fmt == DSV4_WF_NVFP4) return w->ne[1] / 2;
    return w->ne[1] * (int64_t)dsv4_dtype_size(w->dtype);
}

static inline bool dsv4_w_present(const dsv4_w *w) { return w->name != NULL; }

/* Compressor of one layer (main: d = head_dim; indexer: d = index_head_dim). */
typedef struct {
    int d;          /* output row width */
    int coff;       /* 2 = overlapping windows (CSA), 1 = not (HCA) */
    int ratio;
    dsv4_w ape;     /* [ratio, coff*d] F32 */
    dsv4_w wkv;     /* [coff*d, D] */
    dsv4_w wgate;   /* [coff*d, D] */
    dsv4_w norm;    /* [d] */
} dsv4_compressor_w;

typedef struct {
    dsv4_attn_kind kind;
    int ratio;
    bool hash;
    /* hyper-connections: mix = (2 + hc) * hc */
    dsv4_w hc_attn_fn, hc_attn_base, hc_attn_scale; /* [mix, hc*D] F32, [mix], [3] */
    dsv4_w hc_ffn_fn, hc_ffn_base, hc_ffn_scale;
    dsv4_w attn_norm, ffn_norm;                     /* [D] */
    /* attention */
    dsv4_w wq_a;       /* [q_lora, D] */
    dsv4_w q_norm;     /* [q_lora] */
    dsv4_w wq_b;       /* [H*head_dim, q_lora] */
    dsv4_w wkv;        /* [head_dim, D] */
    dsv4_w kv_norm;    /* [head_dim] */
    dsv4_w attn_sink;  /* [H] F32 */
    dsv4_w wo_a;       /* [o_groups*o_lora, H*head_dim/o_groups] */
    dsv4_w wo_b;       /* [D, o_groups*o_lora] */
    dsv4_compressor_w cmp;      /* CSA and HCA layers */
    dsv4_compressor_w idx_cmp;  /* CSA layers: the indexer's key compressor */
    dsv4_w idx_wq_b;            /* [nI*dI, q_lora] */
    dsv4_w idx_weights_proj;    /* [nI, D] */
    /* MoE */
    dsv4_w gate;       /* [E, D] */
    dsv4_w gate_bias;  /* [E] F32, top-k layers only */
    dsv4_w tid2eid;    /* [V, k] I64 (or I32), hash layers only */
    dsv4_w sh_w1, sh_w3, sh_w2; /* [inter, D], [inter, D], [D, inter]; absent without a shared expert */
    dsv4_w *exp_w1, *exp_w3, *exp_w2; /* [E] each: [inter, D], [inter, D], [D, inter] */
} dsv4_layer_w;

typedef struct {
    bool present;
    dsv4_layer_w block;          /* a sliding, non-hash layer */
    dsv4_w e_proj, h_proj;       /* [D, D] */
    dsv4_w enorm, hnorm, norm;   /* [D] */
    dsv4_w hc_head_fn, hc_head_base, hc_head_scale;
} dsv4_mtp_w;

typedef struct {
    dsv4_w embed;                /* [V, D] */
    dsv4_w head;                 /* [V, D] */
    dsv4_w norm;                 /* [D] */
    dsv4_w hc_head_fn;           /* [hc, hc*D] F32 */
    dsv4_w hc_head_base;         /* [hc] */
    dsv4_w hc_head_scale;        /* [1] */
    int n_layers;
    int n_experts;               /* routed experts per layer */
    dsv4_layer_w *layers;        /* [n_layers] */
    dsv4_mtp_w mtp;
    char mtp_ignored[320];       /* why an incomplete MTP block was ignored ("" when none was) */
    uint64_t bytes;              /* payload bytes of the bound tensors (with scales), the MTP block's included */
    uint64_t mtp_bytes;          /* those of the MTP block (0 without one): bound and checked, never loaded */
    int n_fp8, n_mxfp4, n_nvfp4; /* matrices per format, for reports */
} dsv4_weights;

/* Bind every tensor of `cfg` from `st`; `q` is the declared quantisation
 * scheme (NULL: none declared). On failure, `err` names the tensor, what was
 * expected and what was found, and the file. */
dsv4_status dsv4_weights_bind(const dsv4_config *cfg, const dsv4_quant_scheme *q, const dsv4_st *st,
                              dsv4_weights *w, char *err, size_t errlen);
void dsv4_weights_free(dsv4_weights *w);

/* Call fn on every bound tensor (layers, experts, MTP, globals). */
dsv4_status dsv4_weights_foreach(dsv4_weights *w, dsv4_status (*fn)(void *ctx, dsv4_w *t), void *ctx);
/* The same but for the MTP block: the tensors the forward pass runs, which a backend loads (dsv4 does not run
 * MTP, so its block - a whole layer of routed experts, ~3.3 GB in Flash - stays in the checkpoint). */
dsv4_status dsv4_weights_foreach_run(dsv4_weights *w, dsv4_status (*fn)(void *ctx, dsv4_w *t), void *ctx);
/* Payload bytes of the tensors the forward pass runs (bytes less mtp_bytes). */
static inline uint64_t dsv4_weights_run_bytes(const dsv4_weights *w)
{
    return w->bytes - w->mtp_bytes;
}

/* Bytes a weight occupies in the checkpoint: elements plus scales. */
uint64_t dsv4_w_bytes(const dsv4_w *w);
/* Bytes of a layer's E routed experts (w1, w3, w2), and of every decoder layer's (not the MTP block's: never
 * loaded). */
uint64_t dsv4_layer_expert_bytes(const dsv4_layer_w *L, int E);
uint64_t dsv4_weights_expert_bytes(const dsv4_weights *w);
/* Bytes of its elements as stored (what `host` / `dev` hold), and of its
 * scales (`scale` / `dev_scale`; 0 for unquantized weights). Inline: the
 * CUDA library uses them too. */
static inline uint64_t dsv4_w_elem_bytes(const dsv4_w *w)
{
    const uint64_t n = (uint64_t)w->ne[0] * (uint64_t)w->ne[1];
    switch (w->fmt) {
    case DSV4_WF_FP8: return n;
    case DSV4_WF_MXFP4:
    case DSV4_WF_NVFP4: return n / 2;
    default: return n * dsv4_dtype_size(w->dtype);
    }
}

static inline uint64_t dsv4_w_scale_bytes(const dsv4_w *w)
{
    switch (w->fmt) {
    case DSV4_WF_FP8:
        return (uint64_t)((w->ne[0] + w->block_rows - 1) / w->block_rows) * (uint64_t)w->scale_cols *
               dsv4_dtype_size(w->scale_dtype);
    case DSV4_WF_MXFP4:
    case DSV4_WF_NVFP4: return (uint64_t)w->ne[0] * (uint64_t)w->scale_cols;
    default: return 0;
    }
}

/* "BF16", "FP8 (E8M0 128x128)", "MXFP4", "NVFP4", ... for reports. */
const char *dsv4_w_format_str(const dsv4_w *w, char *buf, size_t n);

/* A view of rows [r0, r0+n) of a 2-D weight (inline: the CUDA library uses it too). */
static inline dsv4_w dsv4_w_rows(const dsv4_w *w, int64_t r0, int64_t n)
{
    dsv4_w v = *w;
    v.ne[0] = n;
    v.row0 = w->row0 + r0;
    v.f32 = NULL;
    v.vec = NULL;
    return v;
}

#endif
